/*
 * workload.c - key and operation choice for `skewless bench` (see workload.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

/* FNV-1a over the rank's 8 bytes: YCSB's scrambled-zipfian spreads ranks so. */
static uint64_t fnv64(uint64_t v)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (int i = 0; i < 8; i++) {
		h ^= v & 0xff;
		h *= 0x100000001b3ull;
		v >>= 8;
	}
	return h;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || (*end && *end != ':') || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

int wl_parse_dist(struct workload *w, const char *s)
{
	if (!strcmp(s, "uniform")) {
		w->dist = WL_UNIFORM;
		return 0;
	}
	if (!strncmp(s, "zipf:", 5)) {
		w->dist = WL_ZIPF;
		return strchr(s + 5, ':') ? -EINVAL : parse_double(s + 5, 0, 100, &w->zipf_s);
	}
	if (!strncmp(s, "scrambled-zipf:", 15)) {
		w->dist = WL_SCRAMBLED_ZIPF;
		return strchr(s + 15, ':') ? -EINVAL : parse_double(s + 15, 0, 100, &w->zipf_s);
	}
	if (!strncmp(s, "hotspot:", 8)) {
		const char *second = strchr(s + 8, ':');

		w->dist = WL_HOTSPOT;
		if (!second || parse_double(s + 8, 0, 1, &w->hot_data) ||
		    parse_double(second + 1, 0, 1, &w->hot_ops) || strchr(second + 1, ':') ||
		    w->hot_data <= 0)
			return -EINVAL;
		return 0;
	}
	return -EINVAL;
}

int wl_parse_ycsb(struct workload *w, const char *s, bool dist_set)
{
	/* YCSB core workloads: read / update / insert / read-modify-write shares.
	 * E's scans are not supported: they are issued as reads of the start key. */
	static const struct {
		char letter;
		double read, update, insert, rmw;
	} mixes[] = {
	    {'A', 0.5, 0.5, 0, 0},   {'B', 0.95, 0.05, 0, 0}, {'C', 1, 0, 0, 0},
	    {'D', 0.95, 0, 0.05, 0}, {'E', 0.95, 0, 0.05, 0}, {'F', 0.5, 0, 0, 0.5},
	};
	char c = s[0] >= 'a' && s[0] <= 'z' ? (char)(s[0] - 32) : s[0];

	if (!s[0] || s[1])
		return -EINVAL;
	for (size_t i = 0; i < sizeof(mixes) / sizeof(mixes[0]); i++) {
		if (mixes[i].letter != c)
			continue;
		w->read = mixes[i].read;
		w->update = mixes[i].update;
		w->insert = mixes[i].insert;
		w->rmw = mixes[i].rmw;
		snprintf(w->name, sizeof(w->name), "ycsb-%c", c + 32);
		if (!dist_set) {
			/* YCSB's defaults: scrambled zipfian 0.99; D reads the latest. */
			w->dist = c == 'D' ? WL_LATEST : WL_SCRAMBLED_ZIPF;
			w->zipf_s = 0.99;
		}
		return 0;
	}
	return -EINVAL;
}

int wl_parse_dynamic(struct workload *w, const char *s)
{
	const char *colon = strchr(s, ':');
	size_t len = colon ? (size_t)(colon - s) : strlen(s);

	if (!colon)
		return -EINVAL;
	if (len == 6 && !strncmp(s, "hot-in", 6))
		w->dynamic = WL_HOT_IN;
	else if (len == 6 && !strncmp(s, "random", 6))
		w->dynamic = WL_RANDOM;
	else
		return -EINVAL;
	if (parse_double(colon + 1, 0.001, 1e6, &w->dynamic_period_s) || strchr(colon + 1, ':'))
		return -EINVAL;
	return 0;
}

int wl_init(struct workload *w)
{
	if (w->nkeys == 0 || w->nkeys > (1ull << 32))
		return -EINVAL;
	if (w->hot_keys == 0)
		w->hot_keys = w->nkeys < 128 ? w->nkeys : 128;
	if (w->dist == WL_HOTSPOT && w->dynamic != WL_STATIC) {
		/* Moving a hotspot moves its whole hot set. */
		uint64_t hot = (uint64_t)(w->hot_data * (double)w->nkeys);

		w->hot_keys = hot ? hot : 1;
	}
	if (w->dynamic == WL_RANDOM) {
		/* Made here, not at the first shift: never a stall (or a failure) mid-run. */
		w->perm = malloc(w->nkeys * sizeof(*w->perm));
		if (!w->perm)
			return -ENOMEM;
		for (uint64_t i = 0; i < w->nkeys; i++)
			w->perm[i] = (uint32_t)i;
	}
	if (w->dist == WL_ZIPF || w->dist == WL_SCRAMBLED_ZIPF || w->dist == WL_LATEST)
		return zipf_init(&w->zipf, w->nkeys, w->zipf_s);
	return 0;
}

void wl_free(struct workload *w)
{
	free(w->perm);
	w->perm = NULL;
}

static uint64_t rank_to_index(const struct workload *w, uint64_t rank)
{
	uint64_t i = (rank + w->offset) % w->nkeys;

	return w->perm ? w->perm[i] : i;
}

uint64_t wl_next_key(struct workload *w, struct rng *r)
{
	uint64_t rank, hot, total;

	switch (w->dist) {
	case WL_UNIFORM:
		return rank_to_index(w, rng_below(r, w->nkeys));
	case WL_ZIPF:
		return rank_to_index(w, zipf_sample(&w->zipf, r) - 1);
	case WL_SCRAMBLED_ZIPF:
		rank = zipf_sample(&w->zipf, r) - 1;
		return rank_to_index(w, fnv64(rank) % w->nkeys);
	case WL_HOTSPOT:
		hot = (uint64_t)(w->hot_data * (double)w->nkeys);
		if (hot == 0)
			hot = 1;
		if (hot >= w->nkeys || rng_double(r) < w->hot_ops)
			return rank_to_index(w, rng_below(r, hot));
		return rank_to_index(w, hot + rng_below(r, w->nkeys - hot));
	case WL_LATEST:
		/* Rank 1 is the newest key. */
		total = w->nkeys + w->inserted;
		rank = zipf_sample(&w->zipf, r) - 1;
		return rank < total ? total - 1 - rank : 0;
	}
	return 0;
}

uint64_t wl_insert_key(struct workload *w)
{
	return w->nkeys + w->inserted++;
}

enum wl_op wl_next_op(const struct workload *w, struct rng *r)
{
	double u = rng_double(r);

	if (u < w->read)
		return WL_READ;
	u -= w->read;
	if (u < w->update)
		return WL_UPDATE;
	u -= w->update;
	if (u < w->insert)
		return WL_INSERT;
	return w->rmw > 0 ? WL_RMW : WL_UPDATE;
}

void wl_shift(struct workload *w, struct rng *r)
{
	uint64_t k = w->hot_keys < w->nkeys ? w->hot_keys : w->nkeys;

	if (w->dynamic == WL_HOT_IN) {
		/* Ranks n-k..n-1 (the coldest) now land where ranks 0..k-1 did. */
		w->offset = (w->offset + w->nkeys - k) % w->nkeys;
		return;
	}
	if (w->dynamic != WL_RANDOM)
		return;
	for (uint64_t rank = 0; rank < k; rank++) {
		uint64_t i = (rank + w->offset) % w->nkeys, j = rng_below(r, w->nkeys);
		uint32_t t = w->perm[i];

		w->perm[i] = w->perm[j];
		w->perm[j] = t;
	}
}
