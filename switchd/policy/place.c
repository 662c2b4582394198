/*
 * place.c - new replicas by expected load, then expected delay (place.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "place.h"

int place_init(struct place *p, uint32_t max_node)
{
	p->nslots = max_node + 1;
	p->load = calloc(p->nslots, sizeof(*p->load));
	p->copies = calloc(p->nslots, sizeof(*p->copies));
	p->arc = calloc(p->nslots, sizeof(*p->arc));
	p->arc_ring = NULL;
	if (!p->load || !p->copies || !p->arc) {
		place_free(p);
		return -ENOMEM;
	}
	return 0;
}

void place_free(struct place *p)
{
	free(p->load);
	free(p->copies);
	free(p->arc);
	p->load = NULL;
	p->copies = NULL;
	p->arc = NULL;
	p->nslots = 0;
}

void place_clear(struct place *p)
{
	memset(p->load, 0, p->nslots * sizeof(*p->load));
	memset(p->copies, 0, p->nslots * sizeof(*p->copies));
}

/* share s spread over n nodes, in PLACE_ONE units; shares outside 0..1 are clamped. */
static uint64_t part(double share, unsigned n)
{
	if (!(share > 0) || n == 0)
		return 0;
	if (share > 1)
		share = 1;
	return (uint64_t)(share * (double)PLACE_ONE) / n;
}

/* Each node's share of the 2^32 ring points: a point belongs to the first ring point at or after it. */
static void measure_arcs(struct place *p, const struct ring *r)
{
	memset(p->arc, 0, p->nslots * sizeof(*p->arc));
	for (uint32_t i = 0; i < r->npoints; i++) {
		uint32_t from = i ? r->points[i - 1].value : r->points[r->npoints - 1].value;
		uint16_t id = r->points[i].node_id;

		/* Unsigned wrap: the first point's arc starts at the last one. */
		if (id < p->nslots)
			p->arc[id] += r->npoints == 1 ? PLACE_ONE : (uint32_t)(r->points[i].value - from);
	}
	p->arc_ring = r;
	p->arc_version = r->version;
}

void place_charge_ring(struct place *p, const struct ring *r, double share)
{
	if (!r || r->npoints == 0 || !(share > 0))
		return;
	if (p->arc_ring != r || p->arc_version != r->version)
		measure_arcs(p, r);
	if (share > 1)
		share = 1;
	for (uint32_t id = 0; id < p->nslots; id++)
		p->load[id] += (uint64_t)((double)p->arc[id] * share);
}

void place_charge_set(struct place *p, const struct cdt_state *st, uint16_t home, double share)
{
	uint64_t each = part(share, st->nreplicas);

	for (unsigned i = 0; i < st->nreplicas; i++) {
		uint16_t id = st->replicas[i];

		if (id >= p->nslots)
			continue;
		p->load[id] += each;
		p->copies[id] += id != home;
	}
}

/*
 * The delay a node is weighed by: cost times one plus its copies (capped so
 * that the product stays below 2^64: sel_cost() is below 2^51).
 */
static uint64_t weighed(const struct place *p, uint16_t id, uint64_t cost)
{
	uint32_t copies = id < p->nslots ? p->copies[id] : 0;

	return cost * (1 + (copies < 4095 ? copies : 4095));
}

/* Whether a ranks before b: less load, then less cost (cand order breaks the rest). */
static int before(uint64_t load_a, uint64_t cost_a, uint64_t load_b, uint64_t cost_b)
{
	return load_a < load_b || (load_a == load_b && cost_a < cost_b);
}

unsigned place_pick(struct place *p, const struct place_cand *cand, unsigned ncand,
		    const struct cdt_state *st, uint16_t home, double share, unsigned want,
		    uint16_t *out)
{
	uint64_t load[CDT_MAX_REPLICAS], cost[CDT_MAX_REPLICAS];
	unsigned n = 0;

	if (want > CDT_MAX_REPLICAS)
		want = CDT_MAX_REPLICAS;
	/* One pass keeping the best `want` in order (insertion: want is small next to ncand). */
	for (unsigned i = 0; i < ncand && want; i++) {
		uint16_t id = cand[i].id;
		uint64_t c, l = id < p->nslots ? p->load[id] : 0;

		if (cand[i].cost == 0 || id == 0 || id == home)
			continue;
		c = weighed(p, id, cand[i].cost);
		if (n == want && !before(l, c, load[n - 1], cost[n - 1]))
			continue;
		if (cdt_state_has(st, id))
			continue;
		unsigned j = n < want ? n++ : n - 1;

		for (; j > 0 && before(l, c, load[j - 1], cost[j - 1]); j--) {
			load[j] = load[j - 1];
			cost[j] = cost[j - 1];
			out[j] = out[j - 1];
		}
		load[j] = l;
		cost[j] = c;
		out[j] = id;
	}
	uint64_t each = part(share, st->nreplicas + n);

	for (unsigned i = 0; i < n; i++) {
		if (out[i] >= p->nslots)
			continue;
		p->load[out[i]] += each;
		p->copies[out[i]]++;
	}
	return n;
}
