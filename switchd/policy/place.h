/*
 * place.h - where a directory key's new replicas go (docs/design.md section 5).
 *
 * A replica of a key that carries share s of the requests, in a set of R,
 * takes about s/R of all requests. The control thread keeps, per node, the
 * load the directory's sets are expected to put on it, rebuilt every control
 * round from the sets and the latest shares (place_clear(),
 * place_charge_set()) and charged as targets are chosen (place_pick()); and
 * the copies each node holds (members that are not the key's home). New
 * replicas go to the nodes with the least expected load, and among equals
 * (keys of unknown share: pins, a peer's) to the least expected delay
 * (sel_cost(): the in-flight count, as reads are weighed) times one plus the
 * copies the node holds: the delay is of the moment, the copies say where
 * reads of hot keys will keep going.
 *
 * Why not the delay alone: every key installed in one epoch then lands on the
 * same nodes (the in-flight counts do not move between two choices of one
 * round), and a set without writes never moves again. At 1024 nodes that left
 * 119 of the nodes saturated by the hot keys' replicas while the rest idled
 * (docs/benchmarks.md, "Simulator").
 *
 * Pure: no DPDK, no daemon state; the switch (reconcile.c) and sim/ use it.
 * Control thread only.
 */
#ifndef SKL_SW_PLACE_H
#define SKL_SW_PLACE_H

#include <stdint.h>

#include "cdt_state.h"
#include "ring.h"

/* Expected load in fixed point: PLACE_ONE is all of the requests. */
#define PLACE_ONE (1ull << 32)

struct place {
	uint32_t nslots;  /* node ids 0..nslots-1 */
	uint64_t *load;	  /* [nslots] expected share of all requests, in PLACE_ONE units */
	uint32_t *copies; /* [nslots] copies held for the directory's keys, homes not counted */
	uint64_t *arc;	  /* [nslots] the node's share of the ring's points, in PLACE_ONE units */
	const struct ring *arc_ring; /* the ring arc[] was measured on, and its version */
	uint64_t arc_version;
};

/* A node a new replica may go to: its id and sel_cost() (0: down, never chosen). */
struct place_cand {
	uint16_t id;
	uint64_t cost;
};

/* For node ids up to max_node. 0, or -ENOMEM. */
int place_init(struct place *p, uint32_t max_node);
void place_free(struct place *p);

/* Forget every charge and copy (a round starts: the sets are charged again). */
void place_clear(struct place *p);

/*
 * The keys outside the directory, share s (0..1) of the requests, follow the
 * ring: each node is charged s times its arcs' share of the ring (the uniform
 * ring's own unevenness). Arcs are measured
 * again only when the ring changes.
 */
void place_charge_ring(struct place *p, const struct ring *r, double share);

/* The members of set st serve a key of share s (0..1): s / nreplicas to each;
 * each member but home holds one more copy. */
void place_charge_set(struct place *p, const struct cdt_state *st, uint16_t home, double share);

/*
 * Up to want nodes of cand[0..ncand) for a key of share s whose set is st
 * (home: the key's home, never chosen, nor a member of st): alive, least
 * expected load first, then least cost times one plus the node's copies, then
 * the order of cand. Each chosen node is charged s / total, total being the
 * set's size once they join, and one copy.
 * Returns how many, in out.
 */
unsigned place_pick(struct place *p, const struct place_cand *cand, unsigned ncand,
		    const struct cdt_state *st, uint16_t home, double share, unsigned want,
		    uint16_t *out);

#endif
