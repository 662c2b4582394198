/*
 * select.h - which replica serves a read: least expected delay.
 *
 * Expected delay of node n = (inflight(n) + 1) / (health(n) + 1): the requests
 * queued ahead of this one, slowed down by how unhealthy the node is. Nodes
 * that are down are never chosen; ties are broken at random so that equal
 * replicas share load instead of the first one taking every read.
 * Pure apart from the caller's RNG state: callable from any lcore.
 */
#ifndef SKL_SW_SELECT_H
#define SKL_SW_SELECT_H

#include <stdint.h>

#include "scores.h"

#define SEL_NONE 0 /* no node: every candidate is down */

/* What a choice saw, for decision logs (sel_explain()). */
struct sel_trace {
	uint8_t n;
	struct {
		uint16_t node;
		int32_t inflight;
		uint8_t health;
		uint8_t alive;
	} cand[16];
};

/* xorshift64*: per-lcore, cheap, good enough to break ties. *state must be non-zero. */
static inline uint64_t sel_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/*
 * Expected delay of node id in fixed point: (inflight + 1) * 2^20 / (health + 1),
 * below 2^51. Health 0 (alive but saturated) gives the largest delay for its
 * load. 0 for a node that is down: callers weigh alive nodes only.
 */
static inline uint64_t sel_cost(const struct scores *s, uint16_t id)
{
	return ((uint64_t)scores_inflight(s, id) + 1) * scores_delay_unit(s, id);
}

/*
 * Least expected delay among cand[0..n) that are alive; SEL_NONE when none is.
 * Every read of a directory key runs this, so it has no data-dependent
 * branch: each candidate's cost is its delay less 1, shifted up by 8 bits
 * and given 8 random low bits, so the minimum is taken with conditional
 * moves and equal costs are won at random (a tie of the random bits too goes
 * to the earlier candidate, at most 1/256 of ties). A node that is down
 * (delay 0) wraps to a cost of at least SEL_DOWN_COST, above every alive
 * one: it wins only when all are down, and then none is chosen.
 */
#define SEL_DOWN_COST (UINT64_MAX << 8)
/*
 * Candidates one random word gives a byte each. A byte reused would lose
 * every tie to its first user, so larger sets draw a word per 8.
 */
#define SEL_FEW 8
/*
 * Candidates one read weighs at most. A set larger than this (a key hotter
 * than 16 nodes can serve) is sampled: SEL_WINDOW candidates in a row from a
 * random place, wrapping, so every replica is weighed by the same share of
 * reads and a read costs what a read of a 16-replica key does. Least
 * expected delay among 16 random replicas balances as well as among all of
 * them (power of d choices, d = 16). A window of 16 replicas that are all
 * down gives SEL_NONE, and the read goes home, as for a small set.
 */
#define SEL_WINDOW 16

/*
 * Lower *best_cost to the least cost among cand[0..n) (n <= SEL_FEW), the
 * bytes of jitter breaking ties in turn; returns the candidate that has it,
 * or best when none is below *best_cost.
 */
static inline uint16_t sel_least(const struct scores *s, const uint16_t *cand, unsigned n,
				 uint64_t jitter, uint16_t best, uint64_t *best_cost)
{
	for (unsigned i = 0; i < n; i++, jitter >>= 8) {
		uint16_t id = cand[i];
		uint64_t cost = (sel_cost(s, id) - 1) << 8 | (jitter & 0xff);

		best = cost < *best_cost ? id : best;
		*best_cost = cost < *best_cost ? cost : *best_cost;
	}
	return best;
}

/* Sets of more than SEL_FEW (select.c): a word per 8, a window past SEL_WINDOW. */
uint16_t sel_pick_many(const struct scores *s, const uint16_t *cand, unsigned n, uint64_t *rng);

/* The read target among cand[0..n): least expected delay, see above. */
static inline uint16_t sel_pick(const struct scores *s, const uint16_t *cand, unsigned n,
				uint64_t *rng)
{
	uint64_t best_cost = UINT64_MAX;
	uint16_t best;

	if (__builtin_expect(n > SEL_FEW, 0))
		return sel_pick_many(s, cand, n, rng);
	best = sel_least(s, cand, n, sel_rand(rng), SEL_NONE, &best_cost);
	return best_cost < SEL_DOWN_COST ? best : SEL_NONE;
}

/* Record cand[0..n) (the first 16) with what sel_pick() weighs, for a decision log. */
void sel_explain(const struct scores *s, const uint16_t *cand, unsigned n, struct sel_trace *trace);

#endif
