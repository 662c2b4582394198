/*
 * select.c - least-expected-delay choice among a key's replicas (select.h).
 */
#include "select.h"

#define R(h) (1048576u / ((h) + 1u))
#define R10(h)                                                                                     \
	R(h), R(h + 1), R(h + 2), R(h + 3), R(h + 4), R(h + 5), R(h + 6), R(h + 7), R(h + 8),      \
	    R(h + 9)
const uint32_t sel_recip[101] = {R10(0),  R10(10), R10(20), R10(30), R10(40), R10(50),
				 R10(60), R10(70), R10(80), R10(90), R(100)};

uint16_t sel_pick(const struct scores *s, const uint16_t *cand, unsigned n, uint64_t *rng,
		  struct sel_trace *trace)
{
	uint64_t best_cost = UINT64_MAX;
	uint16_t best = SEL_NONE;
	unsigned ties = 0;

	if (trace)
		trace->n = 0;
	for (unsigned i = 0; i < n; i++) {
		uint16_t id = cand[i];
		bool alive = scores_alive(s, id);
		uint64_t cost;

		if (trace && trace->n < 16) {
			trace->cand[trace->n].node = id;
			trace->cand[trace->n].inflight = scores_inflight(s, id);
			trace->cand[trace->n].health = scores_health(s, id);
			trace->cand[trace->n].alive = alive;
			trace->n++;
		}
		if (!alive)
			continue;
		cost = sel_cost(s, id);
		if (cost < best_cost) {
			best_cost = cost;
			best = id;
			ties = 1;
		} else if (cost == best_cost) {
			/* Reservoir sampling: each of the k tied nodes wins with 1/k. */
			ties++;
			if (sel_rand(rng) % ties == 0)
				best = id;
		}
	}
	return best;
}
