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
