/*
 * select.c - least-expected-delay choice among a key's replicas (select.h).
 */
#include "select.h"

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
