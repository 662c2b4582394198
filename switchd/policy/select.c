/*
 * select.c - least-expected-delay choice among a key's replicas (select.h).
 */
#include "select.h"

uint16_t sel_pick_many(const struct scores *s, const uint16_t *cand, unsigned n, uint64_t *rng)
{
	uint16_t win[SEL_WINDOW], best = SEL_NONE;
	uint64_t best_cost = UINT64_MAX;

	if (n > SEL_WINDOW) {
		/* A random start in 0..n-1 by multiply and shift, not a division. */
		unsigned at = (unsigned)(((sel_rand(rng) >> 32) * n) >> 32);

		for (unsigned i = 0; i < SEL_WINDOW; i++, at = at + 1 == n ? 0 : at + 1)
			win[i] = cand[at];
		cand = win;
		n = SEL_WINDOW;
	}
	for (unsigned i = 0; i < n; i += SEL_FEW)
		best = sel_least(s, cand + i, n - i < SEL_FEW ? n - i : SEL_FEW, sel_rand(rng),
				 best, &best_cost);
	return best_cost < SEL_DOWN_COST ? best : SEL_NONE;
}

void sel_explain(const struct scores *s, const uint16_t *cand, unsigned n, struct sel_trace *trace)
{
	trace->n = 0;
	for (unsigned i = 0; i < n && trace->n < 16; i++, trace->n++) {
		trace->cand[i].node = cand[i];
		trace->cand[i].inflight = scores_inflight(s, cand[i]);
		trace->cand[i].health = scores_health(s, cand[i]);
		trace->cand[i].alive = scores_alive(s, cand[i]);
	}
}
