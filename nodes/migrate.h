/*
 * migrate.h - a node's side of a ring change (docs/design.md section 12).
 *
 * A node holds a view: the ring it routes by (R', the `next` ring) and,
 * while a change runs, the previous ring R and the moved arcs between them
 * (proto/rchange.h), plus the number of arcs active. From these it answers:
 * which node is a key's home now (mig_home), and from which node must it
 * read a key it has just become the home of (mig_prev_home). On top:
 *   - read-through (mig_ensure): before a new home serves a key of an active
 *     arc it does not hold, it fetches the record from the previous home and
 *     keeps its version (store_adopt);
 *   - hand-over (mig_serve_fetch, mig_lock): the previous home serves a FETCH
 *     under the key's hand-over lock, which every write holds from its
 *     ownership check to its store write;
 *   - warm-up (mig_warmup_step): once every arc is active, the previous home
 *     indexes its moved keys by arc (store.h's arc index), then pushes them
 *     arc by arc (mig_serve_push at the new home), deleting each one the new
 *     home acknowledged (store_handover); an arc is done once the push has
 *     passed it. A cursor is persisted as it goes, so a restart resumes the
 *     phase and the arc it was in.
 * The state ({version, active arcs, both rings' members}, the warm-up cursor)
 * is persisted in the store's meta family, so a restarted node resumes.
 *
 * Transport is the caller's (mig_transport): sockets in the node, direct
 * calls in the unit tests. Nothing here knows the config or the wire.
 *
 * Threads: workers and the receive thread call mig_home, mig_ensure,
 * mig_serve_*; one thread (the node's migration thread) calls
 * mig_warmup_step; changes of the view (mig_begin, mig_advance,
 * mig_complete) are serialised by the caller. The view is published with a
 * release store and read with acquire loads; views are kept until mig_fini
 * (one per change: a change is an operator's action, not a per-request
 * event), so a reader never holds a freed one.
 */
#ifndef SKL_NODE_MIGRATE_H
#define SKL_NODE_MIGRATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "dedup.h"
#include "rchange.h"
#include "ring.h"
#include "store.h"
#include "wire.h"

#define MIG_LOCKS	  1024 /* hand-over lock stripes, by keyhash */
#define MIG_CURSOR_EVERY  256  /* warm-up keys between two persisted cursors */
#define MIG_MAX_VIEWS	  64   /* changes one process lives through */
#define MIG_SCAN_PER_PUSH 16   /* warm-up: records visited per push allowed, at most */
#define MIG_MAX_WRITES	  8    /* at-most-once outcomes moved with a record (WIRE_MIG_MAX_WRITES) */

/*
 * A record as it moves between homes: ttl_ms is what remains of its TTL (0:
 * none); writes are the at-most-once outcomes the previous home remembers
 * for the key (dedup.h), highest version first, which the new home takes
 * over so that a write retried across the cut-over is not applied twice.
 */
struct mig_record {
	uint8_t kind; /* STORE_VALUE or STORE_TOMBSTONE */
	uint64_t version;
	uint32_t ttl_ms;
	const uint8_t *value;
	uint32_t value_len;
	uint8_t nwrites;
	struct dedup_write writes[MIG_MAX_WRITES];
};

struct mig_transport {
	/*
	 * FETCH key from node `from` at epoch: 1 with *rec (its value copied to
	 * buf[0..cap)), 0 when the node holds nothing (rec->version: its version
	 * floor), negative when it did not answer (-ETIMEDOUT) or refused (-EAGAIN).
	 */
	int (*fetch)(void *arg, uint16_t from, uint64_t epoch, uint64_t hash, const void *key,
		     size_t klen, struct mig_record *rec, void *buf, size_t cap);
	/* MIGRATE rec to node `to`: 0 once it acknowledged holding it (or newer), else negative. */
	int (*push)(void *arg, uint16_t to, uint64_t epoch, uint64_t hash, const void *key,
		    size_t klen, const struct mig_record *rec);
};

struct mig_view {
	uint64_t version;	 /* ring version of `next` */
	_Atomic uint32_t active; /* arcs active, or RCH_COMPLETE; only grows */
	bool changing;		 /* prev and change are valid */
	bool joining;		 /* a node started with --join: home of nothing until told */
	struct ring next;
	struct ring prev;
	struct rchange change;
};

/* The warm-up's phases: index the moved keys by arc, push them arc by arc, done. */
enum mig_warm_phase { MIG_WARM_INDEX = 0, MIG_WARM_PUSH = 1, MIG_WARM_DONE = 2 };

/* Counters of the migration, read by the node's counter dump. */
#define MIG_COUNTERS(X)                                                                            \
	X(read_through)	       /* records fetched from a previous home and stored */               \
	X(read_through_miss)   /* FETCHes the previous home answered with nothing */               \
	X(read_through_failed) /* FETCHes unanswered: the request got UNAVAILABLE */               \
	X(fetch_served)	       /* FETCHes this node answered as a previous home */                 \
	X(pushed)	       /* warm-up: records pushed and acknowledged */                      \
	X(push_failed)	       /* warm-up: pushes unacknowledged (retried later) */                \
	X(push_stored)	       /* MIGRATEs this node stored as a new home */                       \
	X(push_kept)	       /* MIGRATEs older than what this node held: ignored */              \
	X(handed_over)	       /* records deleted after the new home held them */                  \
	X(scanned)	       /* warm-up: owned records visited */                                \
	X(indexed)	       /* warm-up: moved keys put in the arc index */                      \
	X(arcs_done)	       /* warm-up: arcs whose keys this node has all pushed */

enum mig_counter {
#define X(name) MIG_CTR_##name,
	MIG_COUNTERS(X)
#undef X
	    MIG_CTR_COUNT
};

struct mig {
	struct store *st;
	struct dedup *dedup; /* the node's at-most-once table; NULL: none */
	uint16_t self;
	const struct mig_transport *tx;
	void *tx_arg;
	struct mig_view *_Atomic view;
	pthread_mutex_t locks[MIG_LOCKS];
	/* The warm-up thread's own: the phase, and where it is (an owned key while
	 * indexing, an arc index position while pushing), the arc it pushes. */
	uint8_t cursor[STORE_ARC_POS_MAX];
	uint16_t cursor_len;
	_Atomic uint8_t warm_phase;
	uint32_t since_cursor;
	uint32_t cursor_arc;
	/* This node's arcs as a previous home, and those done (stats, RING replies read them). */
	_Atomic uint32_t arcs_out, arcs_done;
	/* Views ever published, freed by mig_fini. */
	struct mig_view *views[MIG_MAX_VIEWS];
	uint32_t nviews;
	pthread_mutex_t change_lock; /* mig_begin / mig_advance / mig_complete / persist */
	_Atomic uint64_t ctr[MIG_CTR_COUNT];
};

const char *mig_counter_name(enum mig_counter c);

/*
 * Set up m over st for node `self`; no view yet. dedup (may be NULL) is the
 * node's at-most-once table: a key's outcomes leave with its record (FETCH
 * served, warm-up push) and arrive with it (read-through, MIGRATE). 0 or
 * -ENOMEM.
 */
int mig_init(struct mig *m, struct store *st, struct dedup *dedup, uint16_t self,
	     const struct mig_transport *tx, void *tx_arg);
void mig_fini(struct mig *m);

/*
 * At start-up: take the persisted state when it is for ring version
 * cfg_ring's version (a change in progress, or done); when the persisted
 * state is older, run the persisted ring until told of the change (RING);
 * with nothing persisted, run cfg_ring, or (join) be the home of nothing until
 * told. nodes_of_cfg are the config's members (names for persisted ids).
 * Returns 0, or a negative errno (-EIO, -EINVAL: a persisted member is not in
 * the config).
 */
int mig_restore(struct mig *m, const struct ring *cfg_ring, bool join);

/*
 * A change from ring prev to ring next (version next->version), with `active`
 * arcs active (the RING of a switch). Copies both rings (ketama rings: built
 * again from their members). The running ring must be prev's version (a
 * joining node runs none). A change to the version already running only
 * advances (mig_advance). 0, -ESTALE (next is not newer, or prev is not the
 * running ring), -EBUSY (another change is not complete), -ENOMEM, -EIO (not
 * persisted: nothing changed).
 */
int mig_begin(struct mig *m, const struct ring *prev, const struct ring *next, uint32_t active);
/* Advance to epoch (same version, more arcs, or complete). 1 advanced, 0 not newer, -ESTALE
 * (another version), -EIO. */
int mig_advance(struct mig *m, uint64_t epoch);

/* Whether this node joined and was not told its change yet. */
bool mig_joining(const struct mig *m);
/* The current epoch (version << 20 | active); 0 before any view. */
uint64_t mig_epoch(const struct mig *m);

/* Home of a key now; 0 while joining (nobody known: answer UNAVAILABLE). */
uint16_t mig_home(const struct mig *m, uint64_t hash);
/* The previous home to read a key through from, 0 when none (see rch_prev_home). */
uint16_t mig_prev_home(const struct mig *m, uint64_t hash);

/* The hand-over lock of a key: writes and FETCH serve hold it (see the top). */
void mig_lock(struct mig *m, uint64_t hash);
void mig_unlock(struct mig *m, uint64_t hash);

/*
 * Called by the home of a key, under the key's lock, before it serves a
 * request: when the key is in an active moved arc and not held here, fetch
 * it from the previous home and store it; when the previous home holds
 * nothing, take its version floor (it may have collected the key's
 * tombstone). 0 (held, or nothing to fetch), -EAGAIN (the previous home did
 * not answer: answer UNAVAILABLE), -EIO.
 */
int mig_ensure(struct mig *m, uint64_t hash, const void *key, size_t klen, uint64_t now_ms);

/*
 * The owned record of a key with its at-most-once outcomes, in the form it
 * travels in (an expired value as a tombstone of its version), read under
 * the key's lock: 1 (*rec, value in buf), 0 none (rec->version: this node's
 * version floor), -EMSGSIZE, -EIO. mig_adopt: store rec and take its
 * outcomes under the key's lock, unless that version or a newer one is
 * held: 1 stored, 0 kept the newer, -EIO. A ring change's FETCH and MIGRATE
 * are these with an epoch check; replica groups' MEMBER and CATCHUP
 * (nodes/group.c) use them as they are.
 */
int mig_read(struct mig *m, uint64_t hash, const void *key, size_t klen, struct mig_record *rec,
	     void *buf, size_t cap, uint64_t now_ms);
int mig_adopt(struct mig *m, uint64_t hash, const void *key, size_t klen,
	      const struct mig_record *rec, uint64_t now_ms);

/*
 * FETCH at this node (as a previous home), epoch the asker's: adopt it when
 * newer, then read the owned record under the key's lock. 1 (*rec, value in
 * buf), 0 none (rec->version: this node's version floor), -EAGAIN (the epoch
 * is of a version this node was not told: ask again later), -EMSGSIZE, -EIO.
 */
int mig_serve_fetch(struct mig *m, uint64_t epoch, uint64_t hash, const void *key, size_t klen,
		    struct mig_record *rec, void *buf, size_t cap, uint64_t now_ms);
/* MIGRATE at this node (as a new home): store unless newer is held. 0 (held), -EAGAIN, -EIO. */
int mig_serve_push(struct mig *m, uint64_t epoch, uint64_t hash, const void *key, size_t klen,
		   const struct mig_record *rec, uint64_t now_ms);

/*
 * One warm-up step of at most budget pushes (and MIG_SCAN_PER_PUSH times as
 * many records or index entries visited): while indexing, put the owned
 * records whose home moved in the arc index; then push them arc by arc and
 * delete those acknowledged. Returns the entries visited (0 when there is
 * nothing to do: no change, arcs not all active, or done), or a negative
 * errno (a push failed: the cursor stays before that key, the next step
 * retries it). *done is set when this node's warm-up has finished.
 */
int mig_warmup_step(struct mig *m, uint32_t budget, uint64_t now_ms, bool *done);
/*
 * The version floor (store.h): above every version this node gave a key it
 * no longer holds. A RING reply reports it; the switch hands the highest one
 * it heard to every node with each RING, which mig_take_floor() raises this
 * node's to before the epoch is taken: once a change is complete, a new home
 * writes a key its previous home had collected above the collected versions,
 * without a FETCH. 0 or -EIO.
 */
uint64_t mig_floor(const struct mig *m);
int mig_take_floor(struct mig *m, uint64_t floor);

/*
 * The warm-up's pace: pushes accrue at `rate` a second (ring.warmup_keys_per_s,
 * any rate from 1), in thousandths so that a slow rate's fraction carries
 * over to the next step, and a step takes at most 20 ms of them (at least
 * 1): in any time T at most rate x T + rate / 50 pass, full rate while steps
 * come at most 20 ms apart, and a stalled thread does not burst.
 * mig_pace_take() returns the pushes available at now_ms (monotonic) and
 * takes them; 0: none yet.
 */
struct mig_pace {
	uint64_t last_ms;
	uint64_t milli; /* accrued pushes x 1000 */
	bool started;
};
uint32_t mig_pace_take(struct mig_pace *p, uint32_t rate, uint64_t now_ms);

/* Whether this node's warm-up has finished for the running change. */
bool mig_warm_done(const struct mig *m);
/*
 * The warm-up's progress: its phase, this node's arcs as a previous home
 * (*arcs_out) and those whose keys it has all pushed (*arcs_done), in the
 * order of the arcs: the first *arcs_done of them. Any thread.
 */
enum mig_warm_phase mig_warm_progress(const struct mig *m, uint32_t *arcs_out, uint32_t *arcs_done);

#endif
