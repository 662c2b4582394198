/*
 * zipf.h - Zipf(s) over ranks 1..n, P(k) = k^-s / H(n, s), for any s >= 0.
 *
 * Sampled by rejection-inversion (Hörmann & Derflinger, "Rejection-inversion
 * to generate variates from monotone discrete distributions", 1996), the
 * method of Apache Commons' RejectionInversionZipfSampler: O(1) setup and
 * O(1) expected time per sample, no table, exact for every exponent. (A CDF
 * table with a binary search is exact too, but it costs O(n) memory and is
 * where the reference off-by-one lived; tests/agent/test_zipf.c checks the
 * empirical distribution against the analytic one.) s = 0 is uniform.
 */
#ifndef SKL_ZIPF_H
#define SKL_ZIPF_H

#include <stdint.h>

#include "rng.h"

struct zipf {
	uint64_t n;
	double s;
	double h_x1;	     /* H(1.5) - 1 */
	double h_n;	     /* H(n + 0.5) */
	double accept_width; /* the "s" of the paper: squeeze for quick acceptance */
};

/* n >= 1, s >= 0. Returns 0 or -EINVAL. */
int zipf_init(struct zipf *z, uint64_t n, double s);
/* A rank in 1..n; rank 1 is the most popular. */
uint64_t zipf_sample(const struct zipf *z, struct rng *r);
/* The analytic P(rank k) (O(n) per call: for tests and reports). */
double zipf_pmf(uint64_t n, double s, uint64_t k);

#endif
