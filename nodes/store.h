/*
 * store.h - the node's RocksDB storage: records, versions, tombstones, TTL.
 *
 * One RocksDB database with four column families:
 *   "default"  owned data: keys whose ring home is this node;
 *   "replica"  replica copies pushed by a home node with RC_REQ;
 *   "timers"   an index of records that need a later visit: values with an
 *              expiry ('e') and tombstones waiting for GC ('t'), ordered by time;
 *   "meta"     node-wide state (the version floor) and, per key, where this
 *              node pushed copies of it (store_copies_*).
 *
 * A record is one RocksDB value: an 18-byte header (format, kind, version,
 * time) and the value bytes, so a value and its version are always written
 * together. Every read-modify-write takes the key's stripe lock (striped by
 * keyhash), so two writes of one key never race; reads take no lock.
 *
 * Versions: a new owned version is max(stored version, floor) + 1. The floor
 * is the highest version ever removed from the owned family (tombstone GC or
 * TTL expiry) and is persisted in the same write batch as the removal, so a
 * key re-created after its tombstone was collected still gets a higher
 * version, also after a restart.
 */
#ifndef SKL_NODE_STORE_H
#define SKL_NODE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum store_cf { STORE_OWNED = 0, STORE_REPLICA = 1 };
/*
 * STORE_DROPPED: replica family only, a copy its home had dropped
 * (store_replica_drop() with a floor): it serves nothing, and copies at or
 * below its version are refused. Collected like a tombstone.
 */
enum store_kind { STORE_VALUE = 0, STORE_TOMBSTONE = 1, STORE_DROPPED = 2 };

#define STORE_REC_FORMAT 1
#define STORE_REC_HDR	 18

struct store_record {
	uint8_t kind; /* enum store_kind */
	uint64_t version;
	uint64_t time_ms; /* value: expiry (unix ms, 0 = none); tombstone: time of deletion */
	const uint8_t *value;
	uint32_t value_len;
};

struct store_options {
	uint32_t block_cache_mb;
	uint32_t write_buffer_mb; /* memtable size per column family; 0: RocksDB's 64 MB */
	int sync;		  /* fsync the WAL before a write returns */
};

struct store;

/* Encode rec's 18-byte header into out. */
void store_record_header(const struct store_record *rec, uint8_t out[STORE_REC_HDR]);
/* Decode a stored record (value points into buf). Returns 0 or -EINVAL. */
int store_record_decode(const uint8_t *buf, size_t len, struct store_record *rec);
/* A value that has not expired at now_ms. */
int store_record_live(const struct store_record *rec, uint64_t now_ms);

/*
 * The RocksDB options every store (and the raw benchmark) uses: point-lookup
 * tuning (bloom filter, block cache of block_cache_mb), memtables of
 * write_buffer_mb (0: RocksDB's default), create if missing. The caller
 * destroys them.
 */
void *store_make_options(uint32_t block_cache_mb, uint32_t write_buffer_mb);

/* Open (creating if needed) the store in dir. Returns NULL with a message in err. */
struct store *store_open(const char *dir, const struct store_options *opt, char *err,
			 size_t errlen);
/* Flush the memtables and close. */
void store_close(struct store *st);

/*
 * Read key from cf. Returns 1 (found, *rec filled, value copied to valbuf when
 * valbuf is not NULL), 0 (absent), -EMSGSIZE (value larger than cap) or -EIO.
 */
int store_get(struct store *st, enum store_cf cf, const void *key, size_t klen,
	      struct store_record *rec, void *valbuf, size_t cap);

/*
 * Reads ahead: the records of count keys of cf read at once (RocksDB's
 * batched MultiGet: one look at the memtables and one pass over the files
 * for them all), each held (pinned, not copied) in out[i] until taken.
 * store_read_take() gives out[i] as store_get() would have at the time of
 * the read, and lets it go; store_read_done() lets go of one not taken.
 */
struct store_read {
	int rc; /* -EIO, 0 absent, 1 found */
	void *pin;
};
#define STORE_READ_MAX 32
void store_get_many(struct store *st, enum store_cf cf, unsigned count, const void *const *keys,
		    const size_t *klens, struct store_read *out);
int store_read_take(struct store_read *r, struct store_record *rec, void *valbuf, size_t cap);
void store_read_done(struct store_read *r);

/*
 * Write a new owned value (ttl_ms 0: no expiry). The new version, skip + 1
 * above the one before (skip: the versions of writes this one supersedes,
 * which were never stored), goes to *version. Returns 0 or -EIO.
 */
int store_put(struct store *st, uint64_t hash, const void *key, size_t klen, const void *val,
	      size_t vlen, uint64_t ttl_ms, uint64_t now_ms, unsigned skip, uint64_t *version);

/*
 * Delete an owned key by writing a tombstone. Returns 1 when a value (live or
 * expired) was replaced by a tombstone (*version = the tombstone's version),
 * 0 when there was nothing to delete (*version = the existing tombstone's
 * version or 0), or -EIO.
 */
int store_del(struct store *st, uint64_t hash, const void *key, size_t klen, uint64_t now_ms,
	      uint64_t *version);

/*
 * A conditional write of an owned key (the CAS op, proto/payload.h), the
 * check and the write under the key's lock. cond, action and ttl are
 * enum wire_cas_cond, wire_cas_action and wire_cas_ttl; expect is the
 * version cond WIRE_CAS_VERSION wants (0: no live value). Returns
 * STORE_CAS_OK (*version = the version written, or read for READ),
 * STORE_CAS_ABSENT (no live value where one is needed; *version 0),
 * STORE_CAS_CONFLICT (*version = the live version) or -EIO. *ttl_left is the
 * ms the live value has left afterwards (0: no expiry, or none live). A READ
 * of a live value copies it to c->out (when not NULL; -EMSGSIZE over
 * out_cap) and its length to c->out_len.
 */
enum store_cas_result { STORE_CAS_OK = 0, STORE_CAS_ABSENT = 1, STORE_CAS_CONFLICT = 2 };
struct store_cas {
	uint8_t cond, action, ttl;
	uint64_t expect;
	uint64_t ttl_ms;
	void *out; /* READ: the value read */
	size_t out_cap;
	uint32_t out_len;
};
int store_cas(struct store *st, uint64_t hash, const void *key, size_t klen, struct store_cas *c,
	      const void *val, size_t vlen, uint64_t now_ms, uint64_t *version, uint64_t *ttl_left);

/*
 * Store a replica copy if version >= the stored replica version (> a dropped
 * copy's). Returns 1 (stored or already held), 0 (stale: *held is the newer
 * stored version, 0 when it is a dropped copy's) or -EIO. expiry_ms is
 * absolute (0: none).
 */
int store_replica_put(struct store *st, uint64_t hash, const void *key, size_t klen,
		      uint64_t version, uint8_t kind, uint64_t expiry_ms, const void *val,
		      size_t vlen, uint64_t now_ms, uint64_t *held);

/*
 * Drop the replica copy of key. With floor 0 it is deleted; otherwise it is
 * replaced by a STORE_DROPPED record at floor, so a copy of a version at or
 * below the floor that arrives late is refused (a copy above the floor was
 * pushed after the drop was asked for, and is kept; so is a floor already
 * there, unless this one is higher). Returns 1 dropped, 0 none held (or
 * kept), -EIO.
 */
int store_replica_drop(struct store *st, uint64_t hash, const void *key, size_t klen,
		       uint64_t floor, uint64_t now_ms);

/*
 * TTL round: visit up to max of the earliest expiry entries; delete those
 * expired at now_ms. *visited and *removed report the sample.
 */
int store_expire_round(struct store *st, uint64_t now_ms, uint32_t max, uint32_t *visited,
		       uint32_t *removed);

/* Tombstone GC: remove up to max tombstones written at or before cutoff_ms. */
int store_gc_round(struct store *st, uint64_t cutoff_ms, uint32_t max, uint32_t *removed);

/*
 * Where this home pushed copies of a key (repl.c): the owner switch whose
 * REPLICATE asked for them and a bitmap of target node ids. Kept in the meta
 * column family, so it survives restarts and has no size limit.
 */
struct store_copies {
	uint16_t owner;
	uint8_t targets[32]; /* bit id set: node id may hold a copy */
};

/*
 * Writes against copies (repl.c): a home's PUT or DEL runs between
 * store_write_begin() and store_write_end() for its keyhash; a REPLICATE
 * takes store_write_gate() before it reads the version it will push, and
 * store_copies_add() refuses once a write of the key's stripe has begun
 * since. So every copy a REPLICATE sends is in the record the write reads
 * (the send itself may come later: the holder's floor refuses it), and no
 * REPLICATE records one while the write runs.
 */
void store_write_begin(struct store *st, uint64_t hash);
void store_write_end(struct store *st, uint64_t hash);
/* false while a write of hash's stripe is in progress; *gate for store_copies_add(). */
bool store_write_gate(struct store *st, uint64_t hash, uint64_t *gate);

/* 1 and *c filled when a record exists, 0 when none, -EIO. */
int store_copies_get(struct store *st, const void *key, size_t klen, struct store_copies *c);
/*
 * Record (merge into) the copies of key, unless a write of its stripe began
 * after store_write_gate() gave gate. 0, -EBUSY (a write began: send
 * nothing) or -EIO.
 */
int store_copies_add(struct store *st, const void *key, size_t klen, const struct store_copies *c,
		     uint64_t gate);
/* Forget them all (the switch retired the key). 0 or -EIO. */
int store_copies_clear(struct store *st, const void *key, size_t klen);

/* The version floor: the highest version ever removed from the owned family. */
uint64_t store_floor(struct store *st);

/*
 * Write pressure, from RocksDB's own numbers: whether writes are stopped or
 * being delayed, level-0 files (of the family with the most) against the
 * level0_stop_writes_trigger, and the compaction debt (likewise) against the
 * hard_pending_compaction_bytes_limit, at which RocksDB stops writes.
 */
struct store_pressure {
	bool stopped, delayed;
	uint64_t l0_files, l0_stop;
	uint64_t pending_bytes, pending_hard;
};
/*
 * 0..100: 100 while writes are stopped; otherwise the larger of the two
 * ratios, and at least 50 while writes are delayed.
 */
uint32_t store_pressure_pct(const struct store_pressure *p);
/* Read *p from the open database. 0 or -EIO (a property RocksDB did not give). */
int store_pressure_read(struct store *st, struct store_pressure *p);

/*
 * Ring changes (docs/design.md section 12, migrate.c).
 *
 * store_adopt: a new home stores a record migrated from the previous home
 * (read through, or pushed by its warm-up) in the owned family, unless it
 * holds that version or a newer one. A tombstone is kept as one written at
 * now_ms. 1 stored, 0 kept the newer one, -EINVAL (not a value or a
 * tombstone), -EIO.
 */
int store_adopt(struct store *st, uint64_t hash, const void *key, size_t klen,
		const struct store_record *rec, uint64_t now_ms);
/*
 * store_handover: the previous home deletes its owned record of a key the new
 * home acknowledged holding at version (or newer), raising the floor to the
 * record's version in the same batch. 1 deleted, 0 none (or a newer one:
 * kept), -EIO.
 */
int store_handover(struct store *st, uint64_t hash, const void *key, size_t klen, uint64_t version);
/*
 * store_raise_floor: raise the version floor to floor (persisted), when it is
 * higher: a new home takes the floor of a previous home that holds nothing
 * of a key, so that its versions of the key stay above every one the
 * previous home gave. 0 or -EIO.
 */
int store_raise_floor(struct store *st, uint64_t floor);
/*
 * Visit up to max owned records in key order, strictly after the key
 * after[0..alen) (from the first when alen is 0). fn returns 0 to go on, or
 * stops the scan with its value. Returns the number visited or fn's
 * negative value or -EIO; *end is true when the family has no more keys.
 */
typedef int (*store_scan_fn)(void *arg, const void *key, size_t klen,
			     const struct store_record *rec);
int store_scan_owned(struct store *st, const void *after, size_t alen, uint32_t max,
		     store_scan_fn fn, void *arg, bool *end);
/*
 * The warm-up's arc index (migrate.c): an entry per owned key whose home
 * moved, in the meta family under "w:" + be32 arc + key, so that a previous
 * home pushes its keys arc by arc (in the order of the arcs) while its owned
 * family is in key order.
 *
 * store_arc_index_add: one entry. store_arc_index_scan: visit up to max
 * entries strictly after the index position after[0..alen) (4 bytes of arc
 * and the key, as the callback's pos; from the first when alen is 0), fn
 * returning 0 to go on or stopping the scan with its value; returns the
 * number visited, fn's negative value or -EIO, *end true when no entry
 * follows. store_arc_index_clear: every entry gone.
 */
#define STORE_ARC_POS_MAX (4 + WIRE_MAX_KEY)
typedef int (*store_arc_fn)(void *arg, uint32_t arc, const void *key, size_t klen,
			    const uint8_t *pos, size_t plen);
int store_arc_index_add(struct store *st, uint32_t arc, const void *key, size_t klen);
int store_arc_index_scan(struct store *st, const void *after, size_t alen, uint32_t max,
			 store_arc_fn fn, void *arg, bool *end);
int store_arc_index_clear(struct store *st);
/* A node-wide record of the meta family by name: its length, 0 when absent, -EMSGSIZE, -EIO. */
int store_meta_get(struct store *st, const char *name, void *buf, size_t cap);
int store_meta_put(struct store *st, const char *name, const void *buf, size_t len);

/* Unix time in milliseconds. */
uint64_t store_now_ms(void);

#endif
