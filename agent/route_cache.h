/*
 * route_cache.h - the agent's route cache: keyhash -> node, with a TTL,
 * bounded size, LRU eviction and TinyLFU admission.
 *
 * Entries come in two kinds. RC_ROUTE holds a HINT answer or the node that
 * served a read; the agent uses those only in relaxed mode. RC_MOVED holds the
 * owner a node named in a MOVED reply; it is kept in both modes. Admission
 * (TinyLFU, Einziger et al.): every access of a key is counted in a small
 * count-min sketch of 4-bit counters, halved every 10 x capacity accesses so
 * that old popularity fades; when the cache is full, a new key is admitted
 * only if its estimated frequency beats the LRU victim's. So a scan of one-off
 * reads never flushes the hot keys. MOVED entries bypass admission: they are
 * rare and each saves a round trip on every later request for the key.
 */
#ifndef SKL_ROUTE_CACHE_H
#define SKL_ROUTE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

enum rc_kind { RC_ROUTE = 1, RC_MOVED = 2 };

struct rc_entry {
	uint64_t keyhash;
	uint64_t expires_ns;
	uint32_t lru_prev, lru_next; /* RC_NIL-terminated, most recent first */
	uint32_t hnext;		     /* bucket chain */
	uint16_t node;
	uint8_t kind; /* 0: free */
};

struct route_cache {
	uint32_t capacity, count;
	uint64_t ttl_ns;
	struct rc_entry *entries;
	uint32_t *buckets; /* nbuckets heads, RC_NIL when empty */
	uint32_t bucket_mask;
	uint32_t lru_head, lru_tail, free_head;
	/* TinyLFU sketch: 4 rows of 4-bit counters (one per byte, for clarity). */
	uint8_t *sketch;
	uint32_t sketch_mask; /* width - 1 */
	uint32_t accesses, sample_size;
	uint64_t admitted, rejected;
};

/* capacity 0 makes a cache that stores nothing. Returns 0 or -ENOMEM. */
int rc_init(struct route_cache *rc, uint32_t capacity, uint64_t ttl_ns);
void rc_free(struct route_cache *rc);

/* Count one access of keyhash in the admission sketch. */
void rc_record(struct route_cache *rc, uint64_t keyhash);
/* Estimated recent access count (0..15). */
uint32_t rc_frequency(const struct route_cache *rc, uint64_t keyhash);

/*
 * The live entry of keyhash whose kind is in kinds (a mask of enum rc_kind),
 * or NULL. Expired entries are dropped here. A hit moves the entry to the
 * front of the LRU.
 */
const struct rc_entry *rc_lookup(struct route_cache *rc, uint64_t keyhash, unsigned kinds,
				 uint64_t now_ns);

/* Insert or refresh keyhash -> node. Returns true if the cache now holds it. */
bool rc_insert(struct route_cache *rc, uint64_t keyhash, uint16_t node, enum rc_kind kind,
	       uint64_t now_ns);
void rc_remove(struct route_cache *rc, uint64_t keyhash);
/* Drop every entry of this kind (the ring changed: MOVED answers are stale). */
void rc_clear_kind(struct route_cache *rc, enum rc_kind kind);

#endif
