/*
 * cdt.h - the coherence directory table (docs/design.md section 5).
 *
 * An rte_hash (RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF) keyed by the 64-bit
 * keyhash maps to a struct cdt_entry. What an entry says about a key's copies
 * (completed version, replica set) lives in an immutable struct cdt_state that
 * the entry points to:
 *
 *   readers (worker lcores, the control thread, telemetry) load entry->state
 *           with acquire ordering and use that snapshot: it can never be torn.
 *   writers (workers applying replies and RC_ACKs, the control thread applying
 *           management calls) build the next state from the current one with a
 *           pure transition function (cdt_state_on_*), then publish it with a
 *           compare-and-swap with release ordering. Losing the race means
 *           another writer published first: recompute from the new state.
 *   old states are retired through QSBR (rte_rcu_qsbr): each worker keeps a
 *           private limbo list and returns a state to the pool once every
 *           reader has passed a quiescent point since it was replaced.
 *
 * Only the control thread adds or deletes hash keys (one writer for the hash),
 * and it frees an entry's slot only after a grace period (rte_rcu_qsbr_synchronize).
 *
 * In front of the hash, a counting filter says which keyhashes may be in it
 * (cdt_may_hold()): the directory holds the hot keys, a small part of the
 * traffic's, and the fast path looks up in rte_hash only the datagrams whose
 * filter count is not 0. The control thread keeps it (the hash's one writer):
 * a key counts from before it is added to the hash until after it is
 * deleted, so a worker that reads 0 for a key being added looked up just
 * before the add, which it may do anyway, and never misses an installed key.
 *
 * A request carries the key bytes; an entry keeps them when they are 16 or
 * fewer (two words, compared exactly) and a fingerprint of longer ones (a
 * second, independent hash), so that another key colliding on keyhash is
 * routed to its own home, never to this key's replicas.
 */
#ifndef SKL_SW_CDT_H
#define SKL_SW_CDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rte_hash.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>

#include "cdt_state.h"
#include "wire.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define CDT_FP_SEED 0x736b65776c657373ull /* "skewless": any seed other than keyhash's 0 */
#define CDT_LIMBO   4096		  /* retired states a worker may hold (power of 2) */

/* Per-entry counters, one copy per worker (each written by its worker only). */
struct cdt_entry_counters {
	uint64_t reads;
	uint64_t replica_reads; /* reads sent to a non-home replica */
	uint64_t writes;
	uint64_t completions; /* write replies that advanced `completed` */
	uint64_t acks_added;
};

struct cdt_entry {
	uint64_t keyhash;      /* immutable while installed, as are the key's fields */
	uint64_t fingerprint;  /* cdt_fingerprint() of the key bytes */
	uint64_t key_words[2]; /* cdt_key_words() of a key of up to 16 bytes */
	uint16_t key_len;
	uint16_t home;	/* ring home (immutable while installed) */
	uint16_t index; /* slot in entries[] and the counter arrays */
	uint8_t pinned; /* control thread: manual pin, never retired automatically */
	uint8_t want_replicas;
	/*
	 * Peer switches (ownership.c writes, relaxed; workers read, relaxed):
	 * owner 0 = this switch owns the key; else the id of the peer switch
	 * requests for it are sent to. spread = this switch may send reads of
	 * it to replicas (every peer confirmed routing it here). Both unused
	 * (0) without peers.
	 */
	uint16_t owner;
	uint8_t spread;
	/*
	 * replicas.c (control thread writes, workers read; relaxed): the node a
	 * trim last took out of the set. It drops its copy, so its confirmations
	 * of a write pushed before that (a write-through reply's holders, an
	 * RC_ACK) join no set until a REPLICATE names it again. 0: none.
	 */
	uint16_t trimmed;
	struct cdt_state *state; /* RCU: acquire load, CAS with release */
	/* ownership.c (control thread): the owned-list version this key joined this
	 * switch's owned list at; 0 = not yet (or not owned). */
	uint64_t owned_since;
};

/* Per-worker retire list: states replaced by this worker, waiting for a grace period. */
struct cdt_limbo {
	uint32_t head, tail;
	struct {
		struct cdt_state *state;
		uint64_t token;
	} slot[CDT_LIMBO];
};

struct cdt {
	struct rte_hash *hash;
	/* The filter: keys installed per slot (cdt_filter_slot()); control thread
	 * writes (relaxed, see above), workers read. A count that reaches 255
	 * stays there: a permanent false positive, never a false negative. */
	uint8_t *filter;
	uint32_t filter_mask;
	struct rte_mempool *states;	  /* states of up to CDT_SMALL_REPLICAS replicas */
	struct rte_mempool *states_large; /* larger ones (room for cap); NULL when cap is small */
	unsigned cap;			  /* replicas a set may hold (cdt_state_cap()) */
	struct rte_rcu_qsbr *qsbr;
	uint32_t max_entries;
	uint16_t nworkers;
	uint16_t ctl_thread; /* QSBR thread id of the control thread */
	struct cdt_entry *entries;
	struct cdt_entry_counters *counters; /* [worker * max_entries + index] */
	/* Control thread only. */
	uint16_t *key_len;
	uint8_t (*keys)[WIRE_MAX_KEY];
	uint32_t *free_idx;
	uint32_t nfree;
	uint32_t nentries;
};

/*
 * The hash table's signature of a keyhash. The keyhash is already a uniform
 * 64-bit hash: fold it instead of hashing it again. The fast path computes
 * it inline and looks up with rte_hash_lookup_with_hash_bulk_data().
 */
static inline uint32_t cdt_sig(uint64_t keyhash)
{
	return (uint32_t)(keyhash ^ (keyhash >> 29));
}

/* The filter slot of a keyhash (its bits 40 and up). */
static inline uint32_t cdt_filter_slot(const struct cdt *c, uint64_t keyhash)
{
	return (uint32_t)(keyhash >> 40) & c->filter_mask;
}

/* Whether keyhash may be in the directory: false only when it is not (a relaxed load). */
static inline bool cdt_may_hold(const struct cdt *c, uint64_t keyhash)
{
	return __atomic_load_n(&c->filter[cdt_filter_slot(c, keyhash)], __ATOMIC_RELAXED) != 0;
}

/* Fingerprint of the key bytes, independent of the keyhash. Inline XXH3:
 * the fast path checks it on every directory hit. */
static inline uint64_t cdt_fingerprint(const void *key, size_t len)
{
	return XXH_INLINE_XXH3_64bits_withSeed(key, len, CDT_FP_SEED);
}

/*
 * A key of 1 to 16 bytes as two words that hold every one of its bytes,
 * read without going past them: the first and the last 8 bytes (they
 * overlap below 16), 4 and 4 below 8, the first, middle and last byte below 4.
 */
static inline void cdt_key_words(const uint8_t *key, size_t len, uint64_t words[2])
{
	uint32_t a, b;

	if (len >= 8) {
		memcpy(&words[0], key, 8);
		memcpy(&words[1], key + len - 8, 8);
	} else if (len >= 4) {
		memcpy(&a, key, 4);
		memcpy(&b, key + len - 4, 4);
		words[0] = a;
		words[1] = b;
	} else {
		words[0] =
		    len ? key[0] | (uint32_t)key[len / 2] << 8 | (uint32_t)key[len - 1] << 16 : 0;
		words[1] = 0;
	}
}

/*
 * Whether installed entry e is this key's, not another key's with the same
 * keyhash: the bytes themselves up to 16 (two compares, the fast path checks
 * every directory hit), the fingerprint beyond.
 */
static inline bool cdt_entry_is(const struct cdt_entry *e, const void *key, size_t len)
{
	uint64_t words[2];

	if (len != e->key_len)
		return false;
	if (len > sizeof(words))
		return e->fingerprint == cdt_fingerprint(key, len);
	cdt_key_words((const uint8_t *)key, len, words);
	return words[0] == e->key_words[0] && words[1] == e->key_words[1];
}

/*
 * Create a directory of max_entries keys for nworkers workers, sharing qsbr
 * (threads 0..nworkers-1 are the workers, ctl_thread the control thread),
 * whose sets hold up to cdt_state_cap(max_replicas) replicas (max_replicas
 * 1..CDT_MAX_REPLICAS: directory.max_replicas). name makes the DPDK object
 * names unique. Returns NULL with errno set.
 */
struct cdt *cdt_create(const char *name, uint32_t max_entries, uint16_t nworkers,
		       unsigned max_replicas, struct rte_rcu_qsbr *qsbr, uint16_t ctl_thread);
void cdt_free(struct cdt *c);

/* Acquire-load of an entry's current state; valid until the caller's next quiescent point. */
static inline const struct cdt_state *cdt_entry_state(const struct cdt_entry *e)
{
	return __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
}

enum cdt_event { CDT_EV_REPLY, CDT_EV_RC_ACK, CDT_EV_DROP };

/*
 * Apply an event to e from worker `worker` (0..nworkers-1) or from the control
 * thread (worker == nworkers): copy-on-write + CAS, retrying on a lost race.
 * CDT_EV_DROP: `node` leaves the set (cdt_state_without(); version unused):
 * the control thread's trim, or a worker's copy that answered MOVED.
 * Returns 1 when the state changed, 0 when the event changed nothing, or
 * -ENOMEM when no state could be allocated or retired (the entry is then left
 * as it was, and the caller counts the failure).
 * *retries counts lost CAS races.
 */
int cdt_apply(struct cdt *c, uint16_t worker, struct cdt_entry *e, enum cdt_event ev,
	      uint64_t version, uint16_t node, unsigned *retries);

/* Worker: free retired states whose grace period is over. Cheap when nothing is due. */
void cdt_reclaim(struct cdt *c, uint16_t worker);

/* --- Control thread only: the management API. ------------------------------------- */

/*
 * Install key (keyhash, key bytes) with home `home` and replica set
 * replicas[0..n) (1 <= n <= c->cap; the home should be among them) at version
 * `completed` (0: unknown). An existing entry for keyhash gets the new state.
 * Returns the entry or NULL with errno (ENOSPC full, EINVAL bad args,
 * EEXIST another key with the same keyhash is installed).
 */
struct cdt_entry *cdt_install(struct cdt *c, uint64_t keyhash, const void *key, size_t key_len,
			      uint16_t home, const uint16_t *replicas, unsigned n,
			      uint64_t completed);

/* Replace the replica set (and version) of an installed entry. Returns 0 or -errno. */
int cdt_set_replicas(struct cdt *c, struct cdt_entry *e, const uint16_t *replicas, unsigned n,
		     uint64_t completed);

/* Remove keyhash's entry; waits for a grace period before reusing it. 0 or -ENOENT. */
int cdt_remove(struct cdt *c, uint64_t keyhash);

/* The entry of keyhash or NULL (errno ENOENT). Any reader thread. */
struct cdt_entry *cdt_find(const struct cdt *c, uint64_t keyhash);

/* Iterate installed entries: *it starts at 0; returns NULL at the end. */
struct cdt_entry *cdt_next(const struct cdt *c, uint32_t *it);

/* Key bytes of an installed entry (control thread); *len 0 when unknown. */
const uint8_t *cdt_entry_key(const struct cdt *c, const struct cdt_entry *e, uint16_t *len);

/* Sum of an entry's per-worker counters. */
void cdt_entry_counters(const struct cdt *c, const struct cdt_entry *e,
			struct cdt_entry_counters *sum);

/* Worker `worker`'s counters of every entry, indexed by cdt_entry.index (a worker keeps it). */
static inline struct cdt_entry_counters *cdt_worker_row(const struct cdt *c, uint16_t worker)
{
	return &c->counters[(size_t)worker * c->max_entries];
}

static inline struct cdt_entry_counters *cdt_worker_counters(const struct cdt *c, uint16_t worker,
							     const struct cdt_entry *e)
{
	return &cdt_worker_row(c, worker)[e->index];
}

#endif
