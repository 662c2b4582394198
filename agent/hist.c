/*
 * hist.c - log-linear histogram (see hist.h).
 *
 * Index layout: [0, HIST_SUB) for values below HIST_SUB; then for each shift
 * e >= 1, HIST_HALF buckets covering [HIST_HALF << e, HIST_SUB << e), the
 * bucket being (v >> e) - HIST_HALF.
 */
#include <math.h>
#include <string.h>

#include "hist.h"

void hist_reset(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

uint32_t hist_index(uint64_t v)
{
	int msb, shift;

	if (v < HIST_SUB)
		return (uint32_t)v;
	msb = 63 - __builtin_clzll(v);
	shift = msb - (HIST_SUB_BITS - 1);
	return HIST_SUB + (uint32_t)(shift - 1) * HIST_HALF + (uint32_t)((v >> shift) - HIST_HALF);
}

uint64_t hist_bucket_high(uint32_t i)
{
	uint32_t shift, sub;

	if (i < HIST_SUB)
		return i;
	shift = (i - HIST_SUB) / HIST_HALF + 1;
	sub = (i - HIST_SUB) % HIST_HALF + HIST_HALF;
	/* The last bucket's top is 2^64 - 1; compute without overflow. */
	return (((uint64_t)sub << shift) - 1) + ((uint64_t)1 << shift);
}

void hist_record(struct hist *h, uint64_t v)
{
	h->counts[hist_index(v)]++;
	h->count++;
	h->sum += (double)v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	uint64_t rank, seen = 0;

	if (!h->count)
		return 0;
	if (p <= 0)
		return h->min;
	rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen >= rank) {
			uint64_t v = hist_bucket_high(i);

			/* Never report past the largest value actually seen. */
			return v < h->max ? v : h->max;
		}
	}
	return h->max;
}

double hist_mean(const struct hist *h)
{
	return h->count ? h->sum / (double)h->count : 0;
}
