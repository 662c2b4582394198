/*
 * store.c - RocksDB-backed records with versions, tombstones and TTL (see store.h).
 */
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "clock.h"
#include "keyhash.h"
#include "payload.h"
#include "wire.h"

/* Power of two; 1024 stripes keep two workers and the TTL thread from colliding. */
#define STORE_STRIPES	1024
#define CF_TIMERS	2
#define CF_META		3
#define CF_COUNT	4
#define TIMER_EXPIRY	'e'
#define TIMER_TOMBSTONE 't'
/* Timer key: type (1), due time (8, big-endian so keys sort by time), cf (1), key. */
#define TIMER_HDR 10
/* 64K buckets (8 KB): at a few thousand keys with copies, few false hits. */
#define COPIES_FILTER_BITS (1u << 16)

static const char *const cf_names[CF_COUNT] = {"default", "replica", "timers", "meta"};
static const char floor_key[] = "version_floor";

struct store {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_column_family_handle_t *cf[CF_COUNT];
	rocksdb_readoptions_t *ropts;
	rocksdb_writeoptions_t *wopts;
	/*
	 * Raised (floor_raise_in(), under floor_lock, so that the value persisted
	 * last is the highest) by the TTL thread, the warm-up's hand-overs and a
	 * ring change's floor from elsewhere (store_raise_floor()); read by every
	 * writer.
	 */
	_Atomic uint64_t floor;
	pthread_mutex_t floor_lock;
	pthread_mutex_t stripes[STORE_STRIPES];
	/* Writes per stripe (store_write_begin(), under its lock; store_write_end()). */
	_Atomic uint64_t writes_begun[STORE_STRIPES];
	_Atomic uint64_t writes_ended[STORE_STRIPES];
	/*
	 * Keyhash buckets that may hold a copies record (store_copies_*): set by
	 * store_copies_add() under the key's stripe lock before the record is
	 * written, filled at open from the records there, never cleared. A key
	 * of a clear bucket has none, and store_copies_get() does not look:
	 * every home's PUT asks, and almost no key has copies.
	 */
	_Atomic uint64_t copies_filter[COPIES_FILTER_BITS / 64];
};

static int copies_filter_fill(struct store *st);

uint64_t store_now_ms(void)
{
	return clock_real_ms();
}

void store_record_header(const struct store_record *rec, uint8_t out[STORE_REC_HDR])
{
	out[0] = STORE_REC_FORMAT;
	out[1] = rec->kind;
	wire_put64(out + 2, rec->version);
	wire_put64(out + 10, rec->time_ms);
}

int store_record_decode(const uint8_t *buf, size_t len, struct store_record *rec)
{
	if (len < STORE_REC_HDR || buf[0] != STORE_REC_FORMAT || buf[1] > STORE_DROPPED)
		return -EINVAL;
	rec->kind = buf[1];
	rec->version = wire_get64(buf + 2);
	rec->time_ms = wire_get64(buf + 10);
	rec->value = buf + STORE_REC_HDR;
	rec->value_len = (uint32_t)(len - STORE_REC_HDR);
	if (rec->kind != STORE_VALUE && rec->value_len)
		return -EINVAL;
	return 0;
}

int store_record_live(const struct store_record *rec, uint64_t now_ms)
{
	return rec->kind == STORE_VALUE && (rec->time_ms == 0 || rec->time_ms > now_ms);
}

/* Whether rec has an entry in the timers family, and its due time. */
static int record_timer(const struct store_record *rec, uint8_t *type)
{
	if (rec->kind != STORE_VALUE) { /* tombstones and dropped copies: time of removal */
		*type = TIMER_TOMBSTONE;
		return 1;
	}
	if (rec->time_ms) {
		*type = TIMER_EXPIRY;
		return 1;
	}
	return 0;
}

static size_t timer_key(uint8_t *out, uint8_t type, uint64_t due, enum store_cf cf, const void *key,
			size_t klen)
{
	out[0] = type;
	wire_put64(out + 1, due);
	out[9] = (uint8_t)cf;
	memcpy(out + TIMER_HDR, key, klen);
	return TIMER_HDR + klen;
}

void *store_make_options(uint32_t block_cache_mb, uint32_t write_buffer_mb)
{
	rocksdb_options_t *o = rocksdb_options_create();

	rocksdb_options_set_create_if_missing(o, 1);
	rocksdb_options_set_create_missing_column_families(o, 1);
	/* Bloom filter (10 bits/key), hash index in data blocks, an LRU block cache. */
	rocksdb_options_optimize_for_point_lookup(o, block_cache_mb);
	/* Small memtables for scale models: 64 nodes on one machine. */
	if (write_buffer_mb)
		rocksdb_options_set_write_buffer_size(o, (size_t)write_buffer_mb << 20);
	/* Background flush and compaction threads: the machine has few cores. */
	rocksdb_options_increase_parallelism(o, 2);
	return o;
}

struct store *store_open(const char *dir, const struct store_options *opt, char *err, size_t errlen)
{
	struct store *st = calloc(1, sizeof(*st));
	const rocksdb_options_t *cf_opts[CF_COUNT];
	char *rerr = NULL;

	if (!st) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	st->opts = store_make_options(opt->block_cache_mb, opt->write_buffer_mb);
	for (int i = 0; i < CF_COUNT; i++)
		cf_opts[i] = st->opts;
	st->db =
	    rocksdb_open_column_families(st->opts, dir, CF_COUNT, cf_names, cf_opts, st->cf, &rerr);
	if (rerr) {
		snprintf(err, errlen, "%s: cannot open RocksDB: %s", dir, rerr);
		free(rerr);
		rocksdb_options_destroy(st->opts);
		free(st);
		return NULL;
	}
	st->ropts = rocksdb_readoptions_create();
	st->wopts = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(st->wopts, opt->sync ? 1 : 0);
	for (int i = 0; i < STORE_STRIPES; i++)
		pthread_mutex_init(&st->stripes[i], NULL);
	pthread_mutex_init(&st->floor_lock, NULL);

	size_t len = 0;
	char *v = rocksdb_get_cf(st->db, st->ropts, st->cf[CF_META], floor_key,
				 sizeof(floor_key) - 1, &len, &rerr);
	if (rerr) {
		snprintf(err, errlen, "%s: cannot read the version floor: %s", dir, rerr);
		free(rerr);
		store_close(st);
		return NULL;
	}
	atomic_store(&st->floor, v && len == 8 ? wire_get64((uint8_t *)v) : 0);
	free(v);
	if (copies_filter_fill(st) != 0) {
		snprintf(err, errlen, "%s: cannot read the copies records", dir);
		store_close(st);
		return NULL;
	}
	return st;
}

void store_close(struct store *st)
{
	rocksdb_flushoptions_t *fo;
	char *rerr = NULL;

	if (!st)
		return;
	fo = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(fo, 1);
	for (int i = 0; i < CF_COUNT; i++) {
		rocksdb_flush_cf(st->db, fo, st->cf[i], &rerr);
		if (rerr) {
			free(rerr);
			rerr = NULL;
		}
	}
	rocksdb_flushoptions_destroy(fo);
	for (int i = 0; i < CF_COUNT; i++)
		rocksdb_column_family_handle_destroy(st->cf[i]);
	rocksdb_close(st->db);
	rocksdb_readoptions_destroy(st->ropts);
	rocksdb_writeoptions_destroy(st->wopts);
	rocksdb_options_destroy(st->opts);
	for (int i = 0; i < STORE_STRIPES; i++)
		pthread_mutex_destroy(&st->stripes[i]);
	pthread_mutex_destroy(&st->floor_lock);
	free(st);
}

uint64_t store_floor(struct store *st)
{
	return atomic_load(&st->floor);
}

/*
 * Raise the floor to v in batch b when v is above it; the caller holds
 * floor_lock until b is written. The floor is published at once, before
 * the batch: whoever then finds a record gone, even without its lock (a
 * bypassing write choosing its drop floor, repl.c), sees the raised floor.
 * Raised too early it is only conservative: the versions after it are higher.
 */
static void floor_raise_in(struct store *st, rocksdb_writebatch_t *b, uint64_t v)
{
	uint8_t fb[8];

	if (v <= atomic_load(&st->floor))
		return;
	wire_put64(fb, v);
	rocksdb_writebatch_put_cf(b, st->cf[CF_META], floor_key, sizeof(floor_key) - 1, (char *)fb,
				  8);
	atomic_store(&st->floor, v);
}

static pthread_mutex_t *stripe(struct store *st, uint64_t hash)
{
	return &st->stripes[hash & (STORE_STRIPES - 1)];
}

/* A found record's slice, as store_get() gives it; ps is let go. */
static int pinned_record(rocksdb_pinnableslice_t *ps, struct store_record *rec, void *valbuf,
			 size_t cap)
{
	size_t len = 0;
	const char *data = rocksdb_pinnableslice_value(ps, &len);
	int rc = 1;

	if (store_record_decode((const uint8_t *)data, len, rec) != 0) {
		rc = -EIO;
	} else if (valbuf) {
		if (rec->value_len > cap) {
			rc = -EMSGSIZE;
		} else {
			memcpy(valbuf, rec->value, rec->value_len);
			rec->value = valbuf;
		}
	} else {
		rec->value = NULL;
	}
	rocksdb_pinnableslice_destroy(ps);
	return rc;
}

int store_get(struct store *st, enum store_cf cf, const void *key, size_t klen,
	      struct store_record *rec, void *valbuf, size_t cap)
{
	rocksdb_pinnableslice_t *ps;
	char *rerr = NULL;

	ps = rocksdb_get_pinned_cf(st->db, st->ropts, st->cf[cf], key, klen, &rerr);
	if (rerr) {
		free(rerr);
		return -EIO;
	}
	return ps ? pinned_record(ps, rec, valbuf, cap) : 0;
}

void store_get_many(struct store *st, enum store_cf cf, unsigned count, const void *const *keys,
		    const size_t *klens, struct store_read *out)
{
	rocksdb_pinnableslice_t *ps[STORE_READ_MAX];
	char *errs[STORE_READ_MAX];

	if (count > STORE_READ_MAX)
		count = STORE_READ_MAX;
	rocksdb_batched_multi_get_cf(st->db, st->ropts, st->cf[cf], count,
				     (const char *const *)keys, klens, ps, errs, false);
	for (unsigned i = 0; i < count; i++) {
		out[i].pin = NULL;
		if (errs[i]) {
			free(errs[i]);
			out[i].rc = -EIO;
			if (ps[i])
				rocksdb_pinnableslice_destroy(ps[i]);
			continue;
		}
		out[i].rc = ps[i] ? 1 : 0;
		out[i].pin = ps[i];
	}
}

int store_read_take(struct store_read *r, struct store_record *rec, void *valbuf, size_t cap)
{
	rocksdb_pinnableslice_t *ps = r->pin;

	r->pin = NULL;
	return ps ? pinned_record(ps, rec, valbuf, cap) : r->rc;
}

void store_read_done(struct store_read *r)
{
	if (r->pin)
		rocksdb_pinnableslice_destroy(r->pin);
	r->pin = NULL;
}

static int write_batch(struct store *st, rocksdb_writebatch_t *b)
{
	char *rerr = NULL;

	rocksdb_write(st->db, st->wopts, b, &rerr);
	rocksdb_writebatch_destroy(b);
	if (rerr) {
		free(rerr);
		return -EIO;
	}
	return 0;
}

/* Add to b: the record itself, removal of old's timer entry, and rec's timer entry. */
static void batch_record(rocksdb_writebatch_t *b, struct store *st, enum store_cf cf,
			 const void *key, size_t klen, const struct store_record *old,
			 const struct store_record *rec)
{
	uint8_t hdr[STORE_REC_HDR], tk[TIMER_HDR + WIRE_MAX_KEY], vbuf[8], type;
	const char *parts[2] = {(const char *)hdr, (const char *)rec->value};
	size_t sizes[2] = {STORE_REC_HDR, rec->value_len};
	const char *kp = key;
	size_t tlen;

	store_record_header(rec, hdr);
	rocksdb_writebatch_putv_cf(b, st->cf[cf], 1, &kp, &klen, rec->value_len ? 2 : 1, parts,
				   sizes);
	if (old && record_timer(old, &type)) {
		tlen = timer_key(tk, type, old->time_ms, cf, key, klen);
		rocksdb_writebatch_delete_cf(b, st->cf[CF_TIMERS], (char *)tk, tlen);
	}
	if (record_timer(rec, &type)) {
		tlen = timer_key(tk, type, rec->time_ms, cf, key, klen);
		wire_put64(vbuf, rec->version);
		rocksdb_writebatch_put_cf(b, st->cf[CF_TIMERS], (char *)tk, tlen, (char *)vbuf, 8);
	}
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

int store_put(struct store *st, uint64_t hash, const void *key, size_t klen, const void *val,
	      size_t vlen, uint64_t ttl_ms, uint64_t now_ms, unsigned skip, uint64_t *version)
{
	struct store_record old,
	    rec = {.kind = STORE_VALUE, .value = val, .value_len = (uint32_t)vlen};
	pthread_mutex_t *lock = stripe(st, hash);
	rocksdb_writebatch_t *b;
	int found, rc;

	pthread_mutex_lock(lock);
	found = store_get(st, STORE_OWNED, key, klen, &old, NULL, 0);
	if (found < 0) {
		pthread_mutex_unlock(lock);
		return -EIO;
	}
	rec.version = max_u64(found ? old.version : 0, atomic_load(&st->floor)) + 1 + skip;
	rec.time_ms = ttl_ms ? now_ms + ttl_ms : 0;
	b = rocksdb_writebatch_create();
	batch_record(b, st, STORE_OWNED, key, klen, found ? &old : NULL, &rec);
	rc = write_batch(st, b);
	pthread_mutex_unlock(lock);
	if (rc == 0)
		*version = rec.version;
	return rc;
}

int store_del(struct store *st, uint64_t hash, const void *key, size_t klen, uint64_t now_ms,
	      uint64_t *version)
{
	struct store_record old, rec = {.kind = STORE_TOMBSTONE, .time_ms = now_ms};
	pthread_mutex_t *lock = stripe(st, hash);
	rocksdb_writebatch_t *b;
	int found, rc;

	pthread_mutex_lock(lock);
	found = store_get(st, STORE_OWNED, key, klen, &old, NULL, 0);
	if (found <= 0 || old.kind == STORE_TOMBSTONE) {
		pthread_mutex_unlock(lock);
		if (found < 0)
			return -EIO;
		*version = found ? old.version : 0;
		return 0;
	}
	rec.version = max_u64(old.version, atomic_load(&st->floor)) + 1;
	b = rocksdb_writebatch_create();
	batch_record(b, st, STORE_OWNED, key, klen, &old, &rec);
	rc = write_batch(st, b);
	pthread_mutex_unlock(lock);
	if (rc)
		return rc;
	*version = rec.version;
	return 1;
}

/* The ms a live value at now_ms has left (0: no expiry). */
static uint64_t ttl_left_of(const struct store_record *rec, uint64_t now_ms)
{
	return rec->time_ms ? rec->time_ms - now_ms : 0;
}

int store_cas(struct store *st, uint64_t hash, const void *key, size_t klen, struct store_cas *c,
	      const void *val, size_t vlen, uint64_t now_ms, uint64_t *version, uint64_t *ttl_left)
{
	struct store_record old, rec = {0};
	pthread_mutex_t *lock = stripe(st, hash);
	rocksdb_writebatch_t *b;
	uint8_t *kept = NULL;
	bool live;
	int found, rc = STORE_CAS_OK;

	*version = *ttl_left = 0;
	pthread_mutex_lock(lock);
	found = store_get(st, STORE_OWNED, key, klen, &old, NULL, 0);
	if (found < 0) {
		rc = -EIO;
		goto out;
	}
	live = found && store_record_live(&old, now_ms);
	if (live) {
		*version = old.version;
		*ttl_left = ttl_left_of(&old, now_ms);
	}
	if ((c->cond == WIRE_CAS_VERSION && c->expect != (live ? old.version : 0)) ||
	    (c->cond == WIRE_CAS_LIVE && !live)) {
		rc = live ? STORE_CAS_CONFLICT : STORE_CAS_ABSENT;
		goto out;
	}
	if (c->action == WIRE_CAS_READ && live && c->out) {
		/* The value, read again under the lock: the first read kept no copy. */
		rc = store_get(st, STORE_OWNED, key, klen, &old, c->out, c->out_cap);
		if (rc < 0)
			goto out;
		c->out_len = old.value_len;
	}
	if (c->action == WIRE_CAS_READ ||
	    ((c->action == WIRE_CAS_DEL || c->action == WIRE_CAS_EXPIRE) && !live)) {
		rc = live ? STORE_CAS_OK : STORE_CAS_ABSENT;
		goto out;
	}
	rec.version = max_u64(found ? old.version : 0, atomic_load(&st->floor)) + 1;
	if (c->action == WIRE_CAS_DEL) {
		rec.kind = STORE_TOMBSTONE;
		rec.time_ms = now_ms;
	} else {
		rec.kind = STORE_VALUE;
		if (c->ttl == WIRE_CAS_TTL_KEEP)
			rec.time_ms = live ? old.time_ms : 0;
		else
			rec.time_ms = c->ttl_ms ? now_ms + c->ttl_ms : 0;
		rec.value = val;
		rec.value_len = (uint32_t)vlen;
	}
	if (c->action == WIRE_CAS_EXPIRE) {
		/* The same bytes under a new version: read them under the lock. */
		kept = malloc(old.value_len ? old.value_len : 1);
		if (!kept ||
		    store_get(st, STORE_OWNED, key, klen, &old, kept, old.value_len) != 1) {
			rc = -EIO;
			goto out;
		}
		rec.value = kept;
		rec.value_len = old.value_len;
	}
	b = rocksdb_writebatch_create();
	batch_record(b, st, STORE_OWNED, key, klen, found ? &old : NULL, &rec);
	if (write_batch(st, b) != 0) {
		rc = -EIO;
		goto out;
	}
	*version = rec.version;
	*ttl_left = rec.kind == STORE_VALUE ? ttl_left_of(&rec, now_ms) : 0;
out:
	pthread_mutex_unlock(lock);
	free(kept);
	return rc;
}

int store_replica_put(struct store *st, uint64_t hash, const void *key, size_t klen,
		      uint64_t version, uint8_t kind, uint64_t expiry_ms, const void *val,
		      size_t vlen, uint64_t now_ms, uint64_t *held)
{
	struct store_record old,
	    rec = {.kind = kind, .version = version, .value = val, .value_len = (uint32_t)vlen};
	pthread_mutex_t *lock = stripe(st, hash);
	rocksdb_writebatch_t *b;
	int found, rc;

	rec.time_ms = kind == STORE_TOMBSTONE ? now_ms : expiry_ms;
	if (kind == STORE_TOMBSTONE)
		rec.value_len = 0;
	pthread_mutex_lock(lock);
	found = store_get(st, STORE_REPLICA, key, klen, &old, NULL, 0);
	if (found < 0 || (found && old.version >= version)) {
		pthread_mutex_unlock(lock);
		if (found < 0)
			return -EIO;
		*held = old.kind == STORE_DROPPED ? 0 : old.version;
		return old.kind != STORE_DROPPED && old.version == version;
	}
	b = rocksdb_writebatch_create();
	batch_record(b, st, STORE_REPLICA, key, klen, found ? &old : NULL, &rec);
	rc = write_batch(st, b);
	pthread_mutex_unlock(lock);
	if (rc)
		return rc;
	*held = version;
	return 1;
}

int store_replica_drop(struct store *st, uint64_t hash, const void *key, size_t klen,
		       uint64_t floor, uint64_t now_ms)
{
	uint8_t tk[TIMER_HDR + WIRE_MAX_KEY], type;
	pthread_mutex_t *lock = stripe(st, hash);
	struct store_record old, dropped = {.kind = STORE_DROPPED, .time_ms = now_ms};
	rocksdb_writebatch_t *b;
	int found, held, rc;

	pthread_mutex_lock(lock);
	found = store_get(st, STORE_REPLICA, key, klen, &old, NULL, 0);
	held = found > 0 && old.kind != STORE_DROPPED;
	/* Nothing to do: nothing held; a floor as high kept already (a switch's
	 * drop, floor 0, keeps it too); or (a late retry of a home's drop) a copy
	 * newer than the floor, pushed after it. */
	if (found < 0 || (!floor && !found) ||
	    (found &&
	     (old.kind == STORE_DROPPED ? old.version >= floor : floor && old.version > floor))) {
		pthread_mutex_unlock(lock);
		return found < 0 ? -EIO : 0;
	}
	b = rocksdb_writebatch_create();
	if (floor) {
		dropped.version = floor;
		batch_record(b, st, STORE_REPLICA, key, klen, found ? &old : NULL, &dropped);
	} else {
		rocksdb_writebatch_delete_cf(b, st->cf[STORE_REPLICA], key, klen);
		if (record_timer(&old, &type))
			rocksdb_writebatch_delete_cf(
			    b, st->cf[CF_TIMERS], (char *)tk,
			    timer_key(tk, type, old.time_ms, STORE_REPLICA, key, klen));
	}
	rc = write_batch(st, b);
	pthread_mutex_unlock(lock);
	return rc ? rc : held;
}

/* One timers-family entry copied out of an iterator. */
struct timer_entry {
	uint64_t due;
	uint64_t version;
	uint8_t cf;
	uint16_t klen;
	uint8_t raw[TIMER_HDR + WIRE_MAX_KEY];
	size_t raw_len;
};

/* The end of a scan: the iterator's error (-EIO) or 0, and the iterator gone. */
static int iter_finish(rocksdb_iterator_t *it)
{
	char *rerr = NULL;

	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr) {
		free(rerr);
		return -EIO;
	}
	return 0;
}

/*
 * Copy up to max timer entries of type with due <= until into out (sorted by
 * due time). Returns how many, or -EIO.
 */
static int timers_scan(struct store *st, uint8_t type, uint64_t until, uint32_t max,
		       struct timer_entry *out)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(st->db, st->ropts, st->cf[CF_TIMERS]);
	uint32_t n = 0;

	rocksdb_iter_seek(it, (const char *)&type, 1);
	while (n < max && rocksdb_iter_valid(it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vlen);

		if (klen < TIMER_HDR + 1 || klen > TIMER_HDR + WIRE_MAX_KEY || k[0] != type)
			break;
		if (wire_get64(k + 1) > until)
			break;
		struct timer_entry *e = &out[n];

		e->due = wire_get64(k + 1);
		e->cf = k[9];
		e->klen = (uint16_t)(klen - TIMER_HDR);
		e->version = vlen == 8 ? wire_get64(v) : 0;
		memcpy(e->raw, k, klen);
		e->raw_len = klen;
		n++;
		rocksdb_iter_next(it);
	}
	if (iter_finish(it) != 0)
		return -EIO;
	return (int)n;
}

/*
 * Remove the record a timer entry points at, if it still is the record the
 * entry was written for and is due; always remove the entry. Raises the
 * floor when an owned record goes. Returns 1 removed, 0 not, -EIO.
 */
static int timer_fire(struct store *st, const struct timer_entry *e, uint8_t type)
{
	const uint8_t *key = e->raw + TIMER_HDR;
	pthread_mutex_t *lock = stripe(st, keyhash(key, e->klen));
	struct store_record rec;
	rocksdb_writebatch_t *b;
	int found, remove = 0, rc;

	if (e->cf > STORE_REPLICA)
		return 0;
	pthread_mutex_lock(lock);
	found = store_get(st, e->cf, key, e->klen, &rec, NULL, 0);
	if (found < 0) {
		pthread_mutex_unlock(lock);
		return -EIO;
	}
	if (found && rec.version == e->version && rec.time_ms == e->due &&
	    (rec.kind != STORE_VALUE) == (type == TIMER_TOMBSTONE))
		remove = 1;
	b = rocksdb_writebatch_create();
	rocksdb_writebatch_delete_cf(b, st->cf[CF_TIMERS], (const char *)e->raw, e->raw_len);
	if (remove)
		rocksdb_writebatch_delete_cf(b, st->cf[e->cf], (const char *)key, e->klen);
	if (remove && e->cf == STORE_OWNED) {
		/* An owned record goes: the floor rises to its version first. */
		pthread_mutex_lock(&st->floor_lock);
		floor_raise_in(st, b, rec.version);
		rc = write_batch(st, b);
		pthread_mutex_unlock(&st->floor_lock);
	} else {
		rc = write_batch(st, b);
	}
	pthread_mutex_unlock(lock);
	return rc ? rc : remove;
}

static int timers_round(struct store *st, uint8_t type, uint64_t until, uint32_t max,
			uint32_t *visited, uint32_t *removed)
{
	struct timer_entry *entries;
	int n, rc = 0;

	*removed = 0;
	*visited = 0;
	if (max > 4096)
		max = 4096;
	entries = malloc(sizeof(*entries) * max);
	if (!entries)
		return -ENOMEM;
	n = timers_scan(st, type, until, max, entries);
	if (n < 0) {
		free(entries);
		return n;
	}
	for (int i = 0; i < n; i++) {
		int r = timer_fire(st, &entries[i], type);

		if (r < 0) {
			rc = r;
			break;
		}
		*removed += (uint32_t)r;
	}
	*visited = (uint32_t)n;
	free(entries);
	return rc;
}

int store_expire_round(struct store *st, uint64_t now_ms, uint32_t max, uint32_t *visited,
		       uint32_t *removed)
{
	/*
	 * The sample is the max entries that expire first; the index is sorted by
	 * expiry, so the expired part of the sample is exactly the due entries.
	 */
	return timers_round(st, TIMER_EXPIRY, now_ms, max, visited, removed);
}

int store_gc_round(struct store *st, uint64_t cutoff_ms, uint32_t max, uint32_t *removed)
{
	uint32_t visited;

	return timers_round(st, TIMER_TOMBSTONE, cutoff_ms, max, &visited, removed);
}

/* ---- Copies pushed by this home (meta column family, key "c:" + key bytes). ---- */

static void copies_filter_set(struct store *st, uint64_t hash)
{
	unsigned b = (unsigned)(hash % COPIES_FILTER_BITS);

	atomic_fetch_or_explicit(&st->copies_filter[b / 64], 1ull << (b % 64),
				 memory_order_relaxed);
}

static bool copies_filter_has(struct store *st, uint64_t hash)
{
	unsigned b = (unsigned)(hash % COPIES_FILTER_BITS);

	return atomic_load_explicit(&st->copies_filter[b / 64], memory_order_relaxed) &
	       (1ull << (b % 64));
}

/* Set the filter's bucket of every key with a copies record. 0 or -EIO. */
static int copies_filter_fill(struct store *st)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(st->db, st->ropts, st->cf[CF_META]);

	for (rocksdb_iter_seek(it, "c:", 2); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen;
		const char *k = rocksdb_iter_key(it, &klen);

		if (klen < 2 || k[0] != 'c' || k[1] != ':')
			break;
		copies_filter_set(st, keyhash(k + 2, klen - 2));
	}
	return iter_finish(it);
}

static size_t copies_key(uint8_t *out, const void *key, size_t klen)
{
	out[0] = 'c';
	out[1] = ':';
	memcpy(out + 2, key, klen);
	return klen + 2;
}

int store_copies_get(struct store *st, const void *key, size_t klen, struct store_copies *c)
{
	uint8_t k[2 + WIRE_MAX_KEY];
	size_t kl = copies_key(k, key, klen), len = 0;
	char *rerr = NULL;
	char *v;

	if (!copies_filter_has(st, keyhash(key, klen)))
		return 0;
	v = rocksdb_get_cf(st->db, st->ropts, st->cf[CF_META], (const char *)k, kl, &len, &rerr);

	if (rerr) {
		free(rerr);
		return -EIO;
	}
	if (!v)
		return 0;
	if (len != 2 + sizeof(c->targets)) {
		free(v);
		return -EIO;
	}
	c->owner = wire_get16((const uint8_t *)v);
	memcpy(c->targets, v + 2, sizeof(c->targets));
	free(v);
	return 1;
}

void store_write_begin(struct store *st, uint64_t hash)
{
	pthread_mutex_t *lock = stripe(st, hash);

	/* Under the lock store_copies_add() checks under: it finished or sees this. */
	pthread_mutex_lock(lock);
	atomic_fetch_add(&st->writes_begun[hash & (STORE_STRIPES - 1)], 1);
	pthread_mutex_unlock(lock);
}

void store_write_end(struct store *st, uint64_t hash)
{
	atomic_fetch_add(&st->writes_ended[hash & (STORE_STRIPES - 1)], 1);
}

bool store_write_gate(struct store *st, uint64_t hash, uint64_t *gate)
{
	unsigned i = hash & (STORE_STRIPES - 1);

	*gate = atomic_load(&st->writes_begun[i]);
	return *gate == atomic_load(&st->writes_ended[i]);
}

int store_copies_add(struct store *st, const void *key, size_t klen, const struct store_copies *c,
		     uint64_t gate)
{
	uint8_t k[2 + WIRE_MAX_KEY], v[2 + sizeof(c->targets)];
	struct store_copies old;
	size_t kl = copies_key(k, key, klen);
	uint64_t h = keyhash(key, klen);
	pthread_mutex_t *lock = stripe(st, h);
	char *rerr = NULL;
	int rc;

	pthread_mutex_lock(lock);
	if (atomic_load(&st->writes_begun[h & (STORE_STRIPES - 1)]) != gate) {
		rc = -EBUSY;
		goto out;
	}
	rc = store_copies_get(st, key, klen, &old);
	if (rc < 0)
		goto out;
	wire_put16(v, c->owner);
	for (size_t i = 0; i < sizeof(c->targets); i++)
		v[2 + i] = (uint8_t)(c->targets[i] | (rc ? old.targets[i] : 0));
	/* A hot key is re-replicated to mostly the same nodes after every write. */
	if (rc == 1 && old.owner == c->owner && !memcmp(v + 2, old.targets, sizeof(old.targets))) {
		rc = 0;
		goto out;
	}
	copies_filter_set(st, h);
	rocksdb_put_cf(st->db, st->wopts, st->cf[CF_META], (const char *)k, kl, (const char *)v,
		       sizeof(v), &rerr);
	rc = 0;
	if (rerr) {
		free(rerr);
		rc = -EIO;
	}
out:
	pthread_mutex_unlock(lock);
	return rc;
}

int store_copies_clear(struct store *st, const void *key, size_t klen)
{
	uint8_t k[2 + WIRE_MAX_KEY];
	size_t kl = copies_key(k, key, klen);
	char *rerr = NULL;

	rocksdb_delete_cf(st->db, st->wopts, st->cf[CF_META], (const char *)k, kl, &rerr);
	if (rerr) {
		free(rerr);
		return -EIO;
	}
	return 0;
}

/* ---- Write pressure (the digest's io metric, nodes/report.c). ---- */

uint32_t store_pressure_pct(const struct store_pressure *p)
{
	uint64_t pct = 0;

	if (p->stopped)
		return 100;
	if (p->l0_stop)
		pct = p->l0_files >= p->l0_stop ? 100 : p->l0_files * 100 / p->l0_stop;
	if (p->pending_hard)
		pct = max_u64(pct, p->pending_bytes >= p->pending_hard
				       ? 100
				       : p->pending_bytes * 100 / p->pending_hard);
	if (p->delayed)
		pct = max_u64(pct, 50);
	return (uint32_t)pct;
}

int store_pressure_read(struct store *st, struct store_pressure *p)
{
	static const enum store_cf data_cfs[] = {STORE_OWNED, STORE_REPLICA};
	uint64_t stopped, rate;

	memset(p, 0, sizeof(*p));
	if (rocksdb_property_int(st->db, "rocksdb.is-write-stopped", &stopped) != 0 ||
	    rocksdb_property_int(st->db, "rocksdb.actual-delayed-write-rate", &rate) != 0)
		return -EIO;
	p->stopped = stopped != 0;
	p->delayed = rate != 0;
	p->l0_stop = (uint64_t)rocksdb_options_get_level0_stop_writes_trigger(st->opts);
	p->pending_hard = rocksdb_options_get_hard_pending_compaction_bytes_limit(st->opts);
	for (size_t i = 0; i < sizeof(data_cfs) / sizeof(data_cfs[0]); i++) {
		uint64_t l0, pending;

		/* The level-0 count is a string property; RocksDB has no integer form of it. */
		char *l0_text = rocksdb_property_value_cf(st->db, st->cf[data_cfs[i]],
							  "rocksdb.num-files-at-level0");

		if (!l0_text)
			return -EIO;
		l0 = strtoull(l0_text, NULL, 10);
		free(l0_text);
		if (rocksdb_property_int_cf(st->db, st->cf[data_cfs[i]],
					    "rocksdb.estimate-pending-compaction-bytes",
					    &pending) != 0)
			return -EIO;
		if (l0 > p->l0_files)
			p->l0_files = l0;
		if (pending > p->pending_bytes)
			p->pending_bytes = pending;
	}
	return 0;
}

/* ---- Ring changes (docs/design.md section 12; migrate.c). ---- */

int store_adopt(struct store *st, uint64_t hash, const void *key, size_t klen,
		const struct store_record *in, uint64_t now_ms)
{
	struct store_record old, rec = *in;
	pthread_mutex_t *lock = stripe(st, hash);
	rocksdb_writebatch_t *b;
	int found, rc;

	if (rec.kind != STORE_VALUE && rec.kind != STORE_TOMBSTONE)
		return -EINVAL;
	if (rec.kind == STORE_TOMBSTONE) {
		rec.time_ms = now_ms; /* collected like a tombstone written now */
		rec.value_len = 0;
	}
	pthread_mutex_lock(lock);
	found = store_get(st, STORE_OWNED, key, klen, &old, NULL, 0);
	if (found < 0 || (found && old.version >= rec.version)) {
		pthread_mutex_unlock(lock);
		return found < 0 ? -EIO : 0;
	}
	b = rocksdb_writebatch_create();
	batch_record(b, st, STORE_OWNED, key, klen, found ? &old : NULL, &rec);
	rc = write_batch(st, b);
	pthread_mutex_unlock(lock);
	return rc ? rc : 1;
}

int store_handover(struct store *st, uint64_t hash, const void *key, size_t klen, uint64_t version)
{
	uint8_t tk[TIMER_HDR + WIRE_MAX_KEY], type;
	pthread_mutex_t *lock = stripe(st, hash);
	struct store_record old;
	rocksdb_writebatch_t *b;
	int found, rc;

	pthread_mutex_lock(lock);
	found = store_get(st, STORE_OWNED, key, klen, &old, NULL, 0);
	if (found <= 0 || old.version > version) {
		pthread_mutex_unlock(lock);
		return found < 0 ? -EIO : 0;
	}
	b = rocksdb_writebatch_create();
	rocksdb_writebatch_delete_cf(b, st->cf[STORE_OWNED], key, klen);
	if (record_timer(&old, &type))
		rocksdb_writebatch_delete_cf(
		    b, st->cf[CF_TIMERS], (char *)tk,
		    timer_key(tk, type, old.time_ms, STORE_OWNED, key, klen));
	/* As the GC does (timer_fire): the floor is raised before the record goes. */
	pthread_mutex_lock(&st->floor_lock);
	floor_raise_in(st, b, old.version);
	rc = write_batch(st, b);
	pthread_mutex_unlock(&st->floor_lock);
	pthread_mutex_unlock(lock);
	return rc ? rc : 1;
}

int store_raise_floor(struct store *st, uint64_t floor)
{
	rocksdb_writebatch_t *b;
	int rc;

	if (floor <= atomic_load(&st->floor))
		return 0;
	b = rocksdb_writebatch_create();
	pthread_mutex_lock(&st->floor_lock);
	floor_raise_in(st, b, floor);
	rc = write_batch(st, b);
	pthread_mutex_unlock(&st->floor_lock);
	return rc;
}

int store_scan_owned(struct store *st, const void *after, size_t alen, uint32_t max,
		     store_scan_fn fn, void *arg, bool *end)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(st->db, st->ropts, st->cf[STORE_OWNED]);
	uint32_t n = 0;
	int rc = 0;

	*end = false;
	if (alen) {
		size_t klen;
		const char *k;

		rocksdb_iter_seek(it, after, alen);
		/* Strictly after the cursor: the key at it was visited. */
		if (rocksdb_iter_valid(it) && (k = rocksdb_iter_key(it, &klen)) && klen == alen &&
		    !memcmp(k, after, alen))
			rocksdb_iter_next(it);
	} else {
		rocksdb_iter_seek_to_first(it);
	}
	while (n < max && rocksdb_iter_valid(it)) {
		size_t klen, vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);
		struct store_record rec;

		if (klen <= WIRE_MAX_KEY &&
		    store_record_decode((const uint8_t *)v, vlen, &rec) == 0) {
			rc = fn(arg, k, klen, &rec);
			if (rc)
				break;
		}
		n++;
		rocksdb_iter_next(it);
	}
	if (!rc && n < max)
		*end = !rocksdb_iter_valid(it);
	if (iter_finish(it) != 0)
		return -EIO;
	return rc < 0 ? rc : (int)n;
}

/* ---- The warm-up's arc index: "w:" + be32 arc + key in the meta family. ---- */

#define ARC_INDEX_HDR 6 /* "w:" and the arc */

int store_arc_index_add(struct store *st, uint32_t arc, const void *key, size_t klen)
{
	uint8_t k[ARC_INDEX_HDR + WIRE_MAX_KEY];
	char *rerr = NULL;

	if (klen == 0 || klen > WIRE_MAX_KEY)
		return -EINVAL;
	k[0] = 'w';
	k[1] = ':';
	wire_put32(k + 2, arc);
	memcpy(k + ARC_INDEX_HDR, key, klen);
	rocksdb_put_cf(st->db, st->wopts, st->cf[CF_META], (const char *)k, ARC_INDEX_HDR + klen,
		       "", 0, &rerr);
	if (rerr) {
		free(rerr);
		return -EIO;
	}
	return 0;
}

int store_arc_index_scan(struct store *st, const void *after, size_t alen, uint32_t max,
			 store_arc_fn fn, void *arg, bool *end)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(st->db, st->ropts, st->cf[CF_META]);
	uint8_t from[2 + STORE_ARC_POS_MAX] = {'w', ':'};
	uint32_t n = 0;
	int rc = 0;
	bool more = false;

	*end = false;
	if (alen > STORE_ARC_POS_MAX)
		alen = STORE_ARC_POS_MAX;
	memcpy(from + 2, after, alen);
	rocksdb_iter_seek(it, (const char *)from, 2 + alen);
	if (alen) { /* strictly after the position: the entry at it was visited */
		size_t klen;
		const char *k;

		if (rocksdb_iter_valid(it) && (k = rocksdb_iter_key(it, &klen)) &&
		    klen == 2 + alen && !memcmp(k, from, klen))
			rocksdb_iter_next(it);
	}
	while (rocksdb_iter_valid(it)) {
		size_t klen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);

		if (klen < 2 || k[0] != 'w' || k[1] != ':')
			break; /* past the index */
		if (n == max) {
			more = true;
			break;
		}
		if (klen > ARC_INDEX_HDR && klen <= ARC_INDEX_HDR + WIRE_MAX_KEY) {
			rc = fn(arg, wire_get32(k + 2), k + ARC_INDEX_HDR, klen - ARC_INDEX_HDR,
				k + 2, klen - 2);
			if (rc) {
				more = true;
				break;
			}
		}
		n++;
		rocksdb_iter_next(it);
	}
	*end = !more;
	if (iter_finish(it) != 0)
		return -EIO;
	return rc < 0 ? rc : (int)n;
}

int store_arc_index_clear(struct store *st)
{
	static const char first[] = "w:", past[] = "w;"; /* ';' follows ':' */
	char *rerr = NULL;

	rocksdb_delete_range_cf(st->db, st->wopts, st->cf[CF_META], first, 2, past, 2, &rerr);
	if (rerr) {
		free(rerr);
		return -EIO;
	}
	return 0;
}

/* Node-wide records of the meta family under "m:" + name. */
static size_t meta_key(uint8_t *out, const char *name)
{
	size_t len = strlen(name);

	out[0] = 'm';
	out[1] = ':';
	memcpy(out + 2, name, len);
	return len + 2;
}

int store_meta_get(struct store *st, const char *name, void *buf, size_t cap)
{
	uint8_t k[64];
	size_t kl, len = 0;
	char *rerr = NULL, *v;

	if (strlen(name) > sizeof(k) - 2)
		return -EINVAL;
	kl = meta_key(k, name);
	v = rocksdb_get_cf(st->db, st->ropts, st->cf[CF_META], (const char *)k, kl, &len, &rerr);
	if (rerr) {
		free(rerr);
		return -EIO;
	}
	if (!v)
		return 0;
	if (len > cap) {
		free(v);
		return -EMSGSIZE;
	}
	memcpy(buf, v, len);
	free(v);
	return (int)len;
}

int store_meta_put(struct store *st, const char *name, const void *buf, size_t len)
{
	uint8_t k[64];
	size_t kl;
	char *rerr = NULL;

	if (strlen(name) > sizeof(k) - 2)
		return -EINVAL;
	kl = meta_key(k, name);
	rocksdb_put_cf(st->db, st->wopts, st->cf[CF_META], (const char *)k, kl, buf, len, &rerr);
	if (rerr) {
		free(rerr);
		return -EIO;
	}
	return 0;
}
