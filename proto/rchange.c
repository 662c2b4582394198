/*
 * rchange.c - the moved arcs of a ring change, their ramp and the effective
 * ring (rchange.h, docs/design.md section 12).
 */
#include "rchange.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* splitmix64's finaliser: consecutive first points get unrelated ranks. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct rank_key {
	uint64_t mix;
	uint32_t index;
};

static int rank_cmp(const void *a, const void *b)
{
	const struct rank_key *x = a, *y = b;

	if (x->mix != y->mix)
		return x->mix < y->mix ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Every boundary of either ring, sorted and unique, plus UINT32_MAX: the
 * segments (b[i-1], b[i]] (from 0 for the first) have one home in each ring.
 */
static uint32_t *boundaries(const struct ring *a, const struct ring *b, uint32_t *n)
{
	uint32_t total = a->npoints + b->npoints + 1, k = 0;
	uint32_t *v = malloc(total * sizeof(*v));

	if (!v)
		return NULL;
	for (uint32_t i = 0; i < a->npoints; i++)
		v[k++] = a->points[i].value;
	for (uint32_t i = 0; i < b->npoints; i++)
		v[k++] = b->points[i].value;
	v[k++] = UINT32_MAX;
	qsort(v, k, sizeof(*v), u32_cmp);
	*n = 0;
	for (uint32_t i = 0; i < k; i++)
		if (*n == 0 || v[*n - 1] != v[i])
			v[(*n)++] = v[i];
	return v;
}

int rch_build(struct rchange *c, const struct ring *prev, const struct ring *next)
{
	uint32_t nb, first = 0, cap;
	uint32_t *b;
	struct rank_key *keys;

	memset(c, 0, sizeof(*c));
	if (!prev->npoints || !next->npoints)
		return -EINVAL;
	b = boundaries(prev, next, &nb);
	if (!b)
		return -ENOMEM;
	cap = nb;
	c->arcs = calloc(cap, sizeof(*c->arcs));
	if (!c->arcs) {
		free(b);
		return -ENOMEM;
	}
	c->prev = prev;
	c->next = next;
	for (uint32_t i = 0; i < nb; i++) {
		uint16_t from = ring_lookup(prev, b[i]), to = ring_lookup(next, b[i]);
		struct rch_arc *last = c->narcs ? &c->arcs[c->narcs - 1] : NULL;

		if (from != to) {
			/* Merge with the arc just before when it is adjacent and the same move. */
			if (last && last->last + 1 == first && last->from == from && last->to == to)
				last->last = b[i];
			else
				c->arcs[c->narcs++] = (struct rch_arc){
				    .first = first, .last = b[i], .from = from, .to = to};
		}
		first = b[i] + 1; /* wraps to 0 after UINT32_MAX, the last boundary */
	}
	free(b);
	if (c->narcs > RCH_MAX_ARCS) {
		rch_free(c);
		return -EINVAL;
	}
	keys = calloc(c->narcs ? c->narcs : 1, sizeof(*keys));
	if (!keys) {
		rch_free(c);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->narcs; i++)
		keys[i] = (struct rank_key){.mix = mix64(c->arcs[i].first), .index = i};
	qsort(keys, c->narcs, sizeof(*keys), rank_cmp);
	for (uint32_t r = 0; r < c->narcs; r++)
		c->arcs[keys[r].index].rank = r;
	free(keys);
	return 0;
}

void rch_free(struct rchange *c)
{
	free(c->arcs);
	c->arcs = NULL;
	c->narcs = 0;
}

const struct rch_arc *rch_arc_of(const struct rchange *c, uint32_t point)
{
	uint32_t lo = 0, hi = c->narcs;

	/* The last arc whose first point is <= point. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->arcs[mid].first <= point)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	return point <= c->arcs[lo - 1].last ? &c->arcs[lo - 1] : NULL;
}

uint16_t rch_home(const struct rchange *c, uint32_t active, uint32_t point)
{
	const struct rch_arc *a = rch_arc_of(c, point);

	if (!a)
		return ring_lookup_fast(c->next, point);
	return a->rank < active ? a->to : a->from;
}

uint16_t rch_prev_home(const struct rchange *c, uint32_t active, uint32_t point)
{
	const struct rch_arc *a;

	if (active == RCH_COMPLETE)
		return 0;
	a = rch_arc_of(c, point);
	return a && a->rank < active ? a->from : 0;
}

uint32_t rch_active_at(uint32_t narcs, uint64_t elapsed_ms, uint64_t ramp_ms)
{
	if (ramp_ms == 0 || elapsed_ms >= ramp_ms)
		return narcs;
	return (uint32_t)((uint64_t)narcs * elapsed_ms / ramp_ms);
}

/*
 * One point per maximal run of the point space with one effective home, at
 * the run's last point; the final run ends at UINT32_MAX, so no lookup wraps.
 */
int rch_effective_ring(const struct rchange *c, uint32_t active, uint64_t version, struct ring *out)
{
	uint32_t nb, n = 0;
	uint32_t *b = boundaries(c->prev, c->next, &nb);
	struct ring_point *pts;
	int rc;

	if (!b)
		return -ENOMEM;
	pts = calloc(nb, sizeof(*pts));
	if (!pts) {
		free(b);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nb; i++) {
		uint16_t home = rch_home(c, active, b[i]);

		if (n && pts[n - 1].node_id == home)
			pts[n - 1].value = b[i];
		else
			pts[n++] = (struct ring_point){.value = b[i], .node_id = home};
	}
	free(b);
	rc = ring_build_points(out, pts, n, c->next->nodes, c->next->nnodes, version);
	free(pts);
	return rc;
}

void rch_count_by_node(const struct rchange *c, uint32_t *out_by_id, uint32_t *in_by_id)
{
	for (uint32_t i = 0; i < c->narcs; i++) {
		out_by_id[c->arcs[i].from]++;
		in_by_id[c->arcs[i].to]++;
	}
}

double rch_moved_share(const struct rchange *c)
{
	double moved = 0;

	for (uint32_t i = 0; i < c->narcs; i++)
		moved += (double)(c->arcs[i].last - c->arcs[i].first) + 1;
	return moved / 4294967296.0;
}
