/*
 * ring.c - ketama continuum construction and lookup, twemproxy-compatible.
 */
#include "ring.h"

#include <errno.h>
#include <math.h>
#include <md5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyhash.h"

static int point_cmp(const void *a, const void *b)
{
	const struct ring_point *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	/* Ties are astronomically rare; order them by node for a deterministic ring. */
	return (int)x->node_id - (int)y->node_id;
}

/* Points of one node, with twemproxy's float arithmetic and rounding. */
static uint32_t points_for(uint32_t weight, uint32_t total_weight, uint32_t nnodes)
{
	float pct = (float)weight / (float)total_weight;

	return (uint32_t)(floorf((float)(pct * RING_POINTS_PER_SERVER / 4 * (float)nnodes +
					 0.0000000001)) *
			  4);
}

static void build_table(struct ring *r)
{
	uint32_t next = 0; /* first point >= the current bucket's start */

	for (uint32_t b = 0; b < (1u << RING_TABLE_BITS); b++) {
		uint32_t start = b << (32 - RING_TABLE_BITS);
		uint32_t end = start + ((1u << (32 - RING_TABLE_BITS)) - 1);

		while (next < r->npoints && r->points[next].value < start)
			next++;
		r->bucket_first[b] = next;
		if (next < r->npoints && r->points[next].value <= end)
			r->bucket_node[b] = RING_NO_NODE;
		else
			r->bucket_node[b] = r->points[next < r->npoints ? next : 0].node_id;
	}
}

/* An empty ring with room for npoints points and the lookup table; 0 or -ENOMEM. */
static int ring_alloc(struct ring *r, uint32_t npoints)
{
	memset(r, 0, sizeof(*r));
	r->points = calloc(npoints, sizeof(*r->points));
	r->bucket_node = calloc(1u << RING_TABLE_BITS, sizeof(*r->bucket_node));
	r->bucket_first = calloc(1u << RING_TABLE_BITS, sizeof(*r->bucket_first));
	if (!r->points || !r->bucket_node || !r->bucket_first) {
		ring_free(r);
		return -ENOMEM;
	}
	return 0;
}

int ring_build(struct ring *r, const struct ring_node *nodes, size_t n, uint64_t version)
{
	uint32_t total_weight = 0, npoints = 0;

	if (n == 0 || n > RING_MAX_NODES)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (nodes[i].weight == 0 || strnlen(nodes[i].name, RING_MAX_NAME) == RING_MAX_NAME)
			return -EINVAL;
		total_weight += nodes[i].weight;
	}
	for (size_t i = 0; i < n; i++)
		npoints += points_for(nodes[i].weight, total_weight, (uint32_t)n);
	if (npoints == 0)
		return -EINVAL;

	if (ring_alloc(r, npoints) != 0)
		return -ENOMEM;

	uint32_t at = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t count = points_for(nodes[i].weight, total_weight, (uint32_t)n);

		for (uint32_t d = 0; d < count / 4; d++) {
			char host[RING_MAX_NAME + 16];
			uint8_t digest[MD5_DIGEST_LENGTH];
			int len = snprintf(host, sizeof(host), "%s-%u", nodes[i].name, d);

			MD5_CTX ctx;
			MD5Init(&ctx);
			MD5Update(&ctx, (const uint8_t *)host, (size_t)len);
			MD5Final(digest, &ctx);
			for (int k = 0; k < 4; k++) {
				const uint8_t *w = digest + 4 * k;

				r->points[at].value = (uint32_t)w[0] | ((uint32_t)w[1] << 8) |
						      ((uint32_t)w[2] << 16) | ((uint32_t)w[3] << 24);
				r->points[at].node_id = nodes[i].id;
				at++;
			}
		}
	}
	r->npoints = npoints;
	qsort(r->points, npoints, sizeof(*r->points), point_cmp);
	memcpy(r->nodes, nodes, n * sizeof(*nodes));
	r->nnodes = (uint16_t)n;
	r->version = version;
	build_table(r);
	return 0;
}

int ring_build_points(struct ring *r, const struct ring_point *points, uint32_t npoints,
		      const struct ring_node *nodes, size_t n, uint64_t version)
{
	if (npoints == 0 || n > RING_MAX_NODES)
		return -EINVAL;
	if (ring_alloc(r, npoints) != 0)
		return -ENOMEM;
	memcpy(r->points, points, npoints * sizeof(*points));
	r->npoints = npoints;
	qsort(r->points, npoints, sizeof(*r->points), point_cmp);
	if (n)
		memcpy(r->nodes, nodes, n * sizeof(*nodes));
	r->nnodes = (uint16_t)n;
	r->version = version;
	build_table(r);
	return 0;
}

void ring_free(struct ring *r)
{
	free(r->points);
	free(r->bucket_node);
	free(r->bucket_first);
	r->points = NULL;
	r->bucket_node = NULL;
	r->bucket_first = NULL;
	r->npoints = 0;
}

/* Index of the first point >= point in [lo, npoints), wrapping to 0. */
static uint32_t search_from(const struct ring *r, uint32_t lo, uint32_t point)
{
	uint32_t hi = r->npoints;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->points[mid].value < point)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == r->npoints ? 0 : lo;
}

uint16_t ring_lookup(const struct ring *r, uint32_t point)
{
	return r->points[search_from(r, 0, point)].node_id;
}
