/*
 * workload.h - what the load generator asks for: which key, which operation.
 *
 * Keys are "key:<index>" for index 0..n-1 (plus inserted ones, YCSB D/E).
 * A distribution draws a popularity rank; the rank maps to a key index through
 * an offset and, after a random hot-set change, a permutation, so that hot
 * keys can move without changing the shape of the distribution.
 */
#ifndef SKL_WORKLOAD_H
#define SKL_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "rng.h"
#include "zipf.h"

enum wl_dist { WL_UNIFORM, WL_ZIPF, WL_SCRAMBLED_ZIPF, WL_HOTSPOT, WL_LATEST };
enum wl_op { WL_READ, WL_UPDATE, WL_INSERT, WL_RMW };
enum wl_dynamic { WL_STATIC, WL_HOT_IN, WL_RANDOM };

struct workload {
	uint64_t nkeys;	   /* keys preloaded / initially present */
	uint64_t inserted; /* keys inserted since (YCSB D/E) */
	enum wl_dist dist;
	double zipf_s;
	double hot_data, hot_ops;	  /* hotspot: fraction of keys, fraction of ops */
	double read, update, insert, rmw; /* op mix, summing to 1 */
	enum wl_dynamic dynamic;
	double dynamic_period_s;
	uint64_t hot_keys; /* keys moved per hot-set change */
	uint64_t offset;   /* rank -> index rotation (hot-in) */
	uint32_t *perm;	   /* index permutation after random changes, or NULL */
	struct zipf zipf;
	char name[32]; /* "ycsb-a", "custom" */
};

/* Parse --dist ("uniform", "zipf:0.99", "scrambled-zipf:1.2", "hotspot:0.01:0.9"). */
int wl_parse_dist(struct workload *w, const char *s);
/* Set the op mix from a YCSB letter A..F (and its default distribution if the
 * distribution was not set: dist_set false). */
int wl_parse_ycsb(struct workload *w, const char *s, bool dist_set);
/* Parse --dynamic "hot-in:T" or "random:T". */
int wl_parse_dynamic(struct workload *w, const char *s);
/* After the fields are set: prepare samplers. Returns 0 or -EINVAL/-ENOMEM. */
int wl_init(struct workload *w);
void wl_free(struct workload *w);

/* Draw the next key index. */
uint64_t wl_next_key(struct workload *w, struct rng *r);
/* The index the next insert creates. */
uint64_t wl_insert_key(struct workload *w);
enum wl_op wl_next_op(const struct workload *w, struct rng *r);
/* Move the hot set (hot-in: the coldest hot_keys become the hottest; random:
 * the hottest hot_keys ranks go to random keys). After wl_init(). */
void wl_shift(struct workload *w, struct rng *r);

#endif
