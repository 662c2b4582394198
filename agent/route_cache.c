/*
 * route_cache.c - TTL + LRU + TinyLFU route cache (see route_cache.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "route_cache.h"

#define RC_NIL	       UINT32_MAX
#define RC_ROWS	       4
#define RC_COUNTER_MAX 15

/* Row r's column for keyhash: four independent multiplicative hashes. */
static uint32_t sketch_index(const struct route_cache *rc, uint64_t keyhash, int r)
{
	static const uint64_t seeds[RC_ROWS] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
						0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull};
	uint64_t h = (keyhash ^ (keyhash >> 29)) * seeds[r];

	return (uint32_t)(h >> 32) & rc->sketch_mask;
}

static uint32_t bucket_of(const struct route_cache *rc, uint64_t keyhash)
{
	return (uint32_t)((keyhash * 0x9e3779b97f4a7c15ull) >> 32) & rc->bucket_mask;
}

int rc_init(struct route_cache *rc, uint32_t capacity, uint64_t ttl_ns)
{
	uint32_t nb = 1, width = 16;

	memset(rc, 0, sizeof(*rc));
	rc->capacity = capacity;
	rc->ttl_ns = ttl_ns;
	rc->lru_head = rc->lru_tail = rc->free_head = RC_NIL;
	if (capacity == 0)
		return 0;
	while (nb < capacity)
		nb <<= 1;
	/* The sketch is 4x wider than the cache, as TinyLFU suggests, to keep
	 * count-min overestimates small. */
	while (width < 4 * capacity)
		width <<= 1;
	rc->entries = calloc(capacity, sizeof(*rc->entries));
	rc->buckets = malloc(nb * sizeof(*rc->buckets));
	rc->sketch = calloc((size_t)RC_ROWS * width, 1);
	if (!rc->entries || !rc->buckets || !rc->sketch) {
		rc_free(rc);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nb; i++)
		rc->buckets[i] = RC_NIL;
	for (uint32_t i = 0; i < capacity; i++)
		rc->entries[i].hnext = i + 1 < capacity ? i + 1 : RC_NIL;
	rc->free_head = 0;
	rc->bucket_mask = nb - 1;
	rc->sketch_mask = width - 1;
	rc->sample_size = 10 * capacity;
	return 0;
}

void rc_free(struct route_cache *rc)
{
	free(rc->entries);
	free(rc->buckets);
	free(rc->sketch);
	rc->entries = NULL;
	rc->buckets = NULL;
	rc->sketch = NULL;
	rc->capacity = rc->count = 0;
}

void rc_record(struct route_cache *rc, uint64_t keyhash)
{
	if (!rc->sketch)
		return;
	for (int r = 0; r < RC_ROWS; r++) {
		uint8_t *c =
		    &rc->sketch[(size_t)r * (rc->sketch_mask + 1) + sketch_index(rc, keyhash, r)];
		if (*c < RC_COUNTER_MAX)
			(*c)++;
	}
	/* Aging: halve every counter once per sample period. */
	if (++rc->accesses >= rc->sample_size) {
		size_t n = (size_t)RC_ROWS * (rc->sketch_mask + 1);

		for (size_t i = 0; i < n; i++)
			rc->sketch[i] >>= 1;
		rc->accesses /= 2;
	}
}

uint32_t rc_frequency(const struct route_cache *rc, uint64_t keyhash)
{
	uint32_t best = RC_COUNTER_MAX;

	if (!rc->sketch)
		return 0;
	for (int r = 0; r < RC_ROWS; r++) {
		uint8_t c =
		    rc->sketch[(size_t)r * (rc->sketch_mask + 1) + sketch_index(rc, keyhash, r)];
		if (c < best)
			best = c;
	}
	return best;
}

static void lru_unlink(struct route_cache *rc, uint32_t i)
{
	struct rc_entry *e = &rc->entries[i];

	if (e->lru_prev != RC_NIL)
		rc->entries[e->lru_prev].lru_next = e->lru_next;
	else
		rc->lru_head = e->lru_next;
	if (e->lru_next != RC_NIL)
		rc->entries[e->lru_next].lru_prev = e->lru_prev;
	else
		rc->lru_tail = e->lru_prev;
}

static void lru_push_front(struct route_cache *rc, uint32_t i)
{
	struct rc_entry *e = &rc->entries[i];

	e->lru_prev = RC_NIL;
	e->lru_next = rc->lru_head;
	if (rc->lru_head != RC_NIL)
		rc->entries[rc->lru_head].lru_prev = i;
	rc->lru_head = i;
	if (rc->lru_tail == RC_NIL)
		rc->lru_tail = i;
}

static uint32_t find(const struct route_cache *rc, uint64_t keyhash)
{
	uint32_t i;

	if (!rc->capacity)
		return RC_NIL;
	for (i = rc->buckets[bucket_of(rc, keyhash)]; i != RC_NIL; i = rc->entries[i].hnext)
		if (rc->entries[i].keyhash == keyhash)
			return i;
	return RC_NIL;
}

static void drop(struct route_cache *rc, uint32_t i)
{
	struct rc_entry *e = &rc->entries[i];
	uint32_t *link = &rc->buckets[bucket_of(rc, e->keyhash)];

	while (*link != i)
		link = &rc->entries[*link].hnext;
	*link = e->hnext;
	lru_unlink(rc, i);
	e->kind = 0;
	e->hnext = rc->free_head;
	rc->free_head = i;
	rc->count--;
}

const struct rc_entry *rc_lookup(struct route_cache *rc, uint64_t keyhash, unsigned kinds,
				 uint64_t now_ns)
{
	uint32_t i = find(rc, keyhash);
	struct rc_entry *e;

	if (i == RC_NIL)
		return NULL;
	e = &rc->entries[i];
	if (e->expires_ns <= now_ns) {
		drop(rc, i);
		return NULL;
	}
	if (!(e->kind & kinds))
		return NULL;
	lru_unlink(rc, i);
	lru_push_front(rc, i);
	return e;
}

bool rc_insert(struct route_cache *rc, uint64_t keyhash, uint16_t node, enum rc_kind kind,
	       uint64_t now_ns)
{
	uint32_t i = find(rc, keyhash), b;
	struct rc_entry *e;

	if (!rc->capacity)
		return false;
	if (i != RC_NIL) {
		e = &rc->entries[i];
		/* A route answer never overwrites a live MOVED redirect. */
		if (e->kind == RC_MOVED && kind == RC_ROUTE && e->expires_ns > now_ns)
			return true;
		lru_unlink(rc, i);
	} else {
		if (rc->count == rc->capacity) {
			uint32_t victim = rc->lru_tail;
			const struct rc_entry *v = &rc->entries[victim];

			if (kind != RC_MOVED && v->expires_ns > now_ns &&
			    rc_frequency(rc, keyhash) <= rc_frequency(rc, v->keyhash)) {
				rc->rejected++;
				return false;
			}
			drop(rc, victim);
		}
		i = rc->free_head;
		e = &rc->entries[i];
		rc->free_head = e->hnext;
		b = bucket_of(rc, keyhash);
		e->hnext = rc->buckets[b];
		rc->buckets[b] = i;
		e->keyhash = keyhash;
		rc->count++;
		rc->admitted++;
	}
	e->node = node;
	e->kind = (uint8_t)kind;
	e->expires_ns = now_ns + rc->ttl_ns;
	lru_push_front(rc, i);
	return true;
}

void rc_remove(struct route_cache *rc, uint64_t keyhash)
{
	uint32_t i = find(rc, keyhash);

	if (i != RC_NIL)
		drop(rc, i);
}

void rc_clear_kind(struct route_cache *rc, enum rc_kind kind)
{
	for (uint32_t i = 0; i < rc->capacity; i++)
		if (rc->entries[i].kind == kind)
			drop(rc, i);
}
