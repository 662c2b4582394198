/*
 * rchange.h - a change of the ring, from a running ring R to a new ring R'
 * (docs/design.md section 12): its moved arcs, the ramp that activates them,
 * the ring epoch that orders every state of a change, and the effective ring
 * at a step.
 *
 * Pure functions of the two rings: every party (switch, nodes, tests)
 * computes the same arcs, ranks and homes from the same two rings, so the
 * only thing they exchange is the epoch.
 */
#ifndef SKL_RCHANGE_H
#define SKL_RCHANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"

/*
 * Ring epoch: version << 20 | active arcs. Active arcs are 0..RCH_MAX_ARCS;
 * RCH_COMPLETE means every arc is active and migrated, the previous ring
 * forgotten. Ketama rings hold 160 points per node, so with at most
 * RING_MAX_NODES nodes on each side a change has fewer than 2^17 arcs.
 */
#define RCH_ACTIVE_BITS 20
#define RCH_COMPLETE	((1u << RCH_ACTIVE_BITS) - 1)
#define RCH_MAX_ARCS	(RCH_COMPLETE - 1)

static inline uint64_t rch_epoch(uint64_t ring_version, uint32_t active)
{
	return ring_version << RCH_ACTIVE_BITS | active;
}
static inline uint64_t rch_epoch_version(uint64_t epoch)
{
	return epoch >> RCH_ACTIVE_BITS;
}
static inline uint32_t rch_epoch_active(uint64_t epoch)
{
	return (uint32_t)(epoch & RCH_COMPLETE);
}

/* Points first..last (inclusive) whose home moves from `from` to `to`. */
struct rch_arc {
	uint32_t first, last;
	uint16_t from, to;
	uint32_t rank; /* activation order: active once rank < active arcs */
};

struct rchange {
	const struct ring *prev, *next; /* borrowed: they outlive the change */
	uint32_t narcs;
	struct rch_arc *arcs; /* sorted by first point */
};

/*
 * The moved arcs from prev to next. Returns 0, -EINVAL (an empty ring, or
 * more than RCH_MAX_ARCS arcs) or -ENOMEM. c borrows both rings.
 */
int rch_build(struct rchange *c, const struct ring *prev, const struct ring *next);
void rch_free(struct rchange *c);

/* The moved arc holding point, or NULL when its home does not change. O(log arcs). */
const struct rch_arc *rch_arc_of(const struct rchange *c, uint32_t point);

/* Home of point with `active` arcs active (RCH_COMPLETE or >= narcs: next's home). */
uint16_t rch_home(const struct rchange *c, uint32_t active, uint32_t point);

/*
 * The previous home of point when its arc is active and the change is not
 * complete (a key that may still have to be read through from there); 0
 * otherwise.
 */
uint16_t rch_prev_home(const struct rchange *c, uint32_t active, uint32_t point);

/*
 * Arcs active elapsed_ms into a ramp of ramp_ms: linear from 0 to narcs,
 * every arc at once when ramp_ms is 0.
 */
uint32_t rch_active_at(uint32_t narcs, uint64_t elapsed_ms, uint64_t ramp_ms);

/*
 * The effective ring with `active` arcs active, as explicit points, version
 * `version` (usually the epoch): ring_lookup_fast() on it gives
 * rch_home(). out must be zeroed or freed. 0, or a negative errno.
 */
int rch_effective_ring(const struct rchange *c, uint32_t active, uint64_t version,
		       struct ring *out);

/* Per node id: the arcs moving away (out) and in (in), to report progress. */
void rch_count_by_node(const struct rchange *c, uint32_t *out_by_id, uint32_t *in_by_id);

/* Share of the 32-bit point space that moves, 0..1. */
double rch_moved_share(const struct rchange *c);

#endif
