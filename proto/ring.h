/*
 * ring.h - the ketama consistent-hash ring (docs/design.md section 4).
 *
 * Built exactly as twemproxy (nutcracker) builds its ketama continuum: each
 * node gets floor(weight/total * 40 * n) * 4 points (160 per node at equal
 * weights), from MD5 of "<name>-<i>", four little-endian 32-bit points per
 * digest. A 32-bit point maps to the first ring point at or above it, wrapping.
 *
 * ring_lookup() is the O(log n) binary search; ring_lookup_fast() answers from
 * a 64K-bucket table built with the ring, for the switch's fast path. A ring
 * is immutable once built: readers on any thread may share it, and a new
 * config builds a new ring with a higher version.
 */
#ifndef SKL_RING_H
#define SKL_RING_H

#include <stddef.h>
#include <stdint.h>

#include "keyhash.h"

#define RING_POINTS_PER_SERVER 160
/* The daemons' rings hold at most CFG_MAX_NODES (255, the wire's node ids);
 * the simulator (sim/) builds rings of up to 1024 nodes. */
#define RING_MAX_NODES 1024
#define RING_MAX_NAME 64
#define RING_TABLE_BITS 16
#define RING_NO_NODE 0xffffu

struct ring_node {
	uint16_t id;
	uint32_t weight;
	char name[RING_MAX_NAME];
};

struct ring_point {
	uint32_t value;
	uint16_t node_id;
};

struct ring {
	uint64_t version;
	uint32_t npoints;
	struct ring_point *points;
	/*
	 * The O(1) table. Bucket b covers points [b << 16, (b + 1) << 16). When no
	 * ring point falls inside it, every point in it maps to one node:
	 * bucket_node[b] is that node. Otherwise bucket_node[b] is RING_NO_NODE
	 * and the search starts at point bucket_first[b]. Two arrays, so that the
	 * one every lookup reads is 2 bytes per bucket (128 KiB, not 512).
	 */
	uint16_t *bucket_node;
	uint32_t *bucket_first;
	uint16_t nnodes;
	struct ring_node nodes[RING_MAX_NODES];
};

/*
 * Build r from nodes[0..n). Returns 0, -EINVAL (no nodes, n too large, a
 * zero weight, a name too long) or -ENOMEM. r must be zeroed or freed first.
 */
int ring_build(struct ring *r, const struct ring_node *nodes, size_t n, uint64_t version);
void ring_free(struct ring *r);

/*
 * Build r from explicit points (value, node id), any order: a point maps to
 * the first ring point at or above it, as in a ketama ring. An effective ring
 * in the middle of a change is built this way (rchange.h). nodes[0..n) are
 * copied as the ring's members. Returns 0, -EINVAL (no points, too many
 * nodes) or -ENOMEM.
 */
int ring_build_points(struct ring *r, const struct ring_point *points, uint32_t npoints,
		      const struct ring_node *nodes, size_t n, uint64_t version);

/* Node id owning point; O(log n). */
uint16_t ring_lookup(const struct ring *r, uint32_t point);
/* Same answer as ring_lookup(), O(1) in the common case. Inline: the switch routes every
 * request that is not in its directory through it. */
static inline uint16_t ring_lookup_fast(const struct ring *r, uint32_t point)
{
	uint32_t b = point >> (32 - RING_TABLE_BITS), i;

	if (r->bucket_node[b] != RING_NO_NODE)
		return r->bucket_node[b];
	/* A bucket with points in it holds a handful at most: scan them. */
	for (i = r->bucket_first[b]; i < r->npoints && r->points[i].value < point; i++)
		;
	return r->points[i == r->npoints ? 0 : i].node_id;
}

/*
 * Prefetch the O(1) table's entry ring_home() will read for keyhash: the
 * table is 128 KiB, out of L1, so a burst's lookups should not wait on it one
 * by one.
 */
static inline void ring_home_prefetch(const struct ring *r, uint64_t keyhash)
{
	__builtin_prefetch(&r->bucket_node[keyhash_point(keyhash) >> (32 - RING_TABLE_BITS)]);
}

/* Home node id of a key with this keyhash (upper 32 bits are its point). */
static inline uint16_t ring_home(const struct ring *r, uint64_t keyhash)
{
	return ring_lookup_fast(r, keyhash_point(keyhash));
}

#endif
