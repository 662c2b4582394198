/*
 * test_hist.c - the log-linear histogram: percentiles against sorted samples,
 * an empty histogram, bucket edges.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "hist.h"
#include "rng.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The exact percentile: the sample at rank ceil(p/100 * n). */
static uint64_t exact(const uint64_t *sorted, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)n);

	return sorted[(rank ? rank : 1) - 1];
}

static void check_against_sorted(uint64_t *v, size_t n)
{
	static const double ps[] = {1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
	struct hist *h = malloc(sizeof(*h));

	hist_reset(h);
	for (size_t i = 0; i < n; i++)
		hist_record(h, v[i]);
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		uint64_t want = exact(v, n, ps[i]), got = hist_percentile(h, ps[i]);

		/* Never below the true value, and within one bucket (1/64) above it. */
		ck_assert_msg(got >= want && got - want <= want / 64 + 1,
			      "p%g: histogram %lu, sorted samples %lu", ps[i], (unsigned long)got,
			      (unsigned long)want);
	}
	ck_assert_uint_eq(h->count, n);
	ck_assert_uint_eq(h->min, v[0]);
	ck_assert_uint_eq(h->max, v[n - 1]);
	free(h);
}

START_TEST(percentiles_lognormal)
{
	size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));
	struct rng r;

	rng_seed(&r, 42);
	/* Latency-like: log-normal around 100 us with a heavy tail. */
	for (size_t i = 0; i < n; i++) {
		double u1 = rng_double(&r) + 1e-12, u2 = rng_double(&r);
		double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);

		v[i] = (uint64_t)exp(log(100000) + 1.2 * z);
	}
	check_against_sorted(v, n);
	free(v);
}
END_TEST

START_TEST(percentiles_uniform_and_small)
{
	size_t n = 100000;
	uint64_t *v = malloc(n * sizeof(*v));
	struct rng r;

	rng_seed(&r, 7);
	for (size_t i = 0; i < n; i++)
		v[i] = rng_below(&r, 1000000000);
	check_against_sorted(v, n);
	/* Small values are exact. */
	for (size_t i = 0; i < 1000; i++)
		v[i] = rng_below(&r, HIST_SUB);
	check_against_sorted(v, 1000);
	free(v);
}
END_TEST

/* Empty (a bench with no writes, say): every percentile is 0. */
START_TEST(percentiles_of_nothing)
{
	struct hist *h = malloc(sizeof(*h));

	hist_reset(h);
	ck_assert_uint_eq(hist_percentile(h, 50), 0);
	ck_assert_uint_eq(hist_percentile(h, 100), 0);
	hist_record(h, 5);
	ck_assert_uint_eq(hist_percentile(h, 100), 5);
	free(h);
}
END_TEST

START_TEST(bucket_edges)
{
	/* Every bucket's high edge maps to that bucket, the next value to the next. */
	for (uint32_t i = 0; i + 1 < HIST_BUCKETS; i++) {
		uint64_t hi = hist_bucket_high(i);

		ck_assert_uint_eq(hist_index(hi), i);
		ck_assert_uint_eq(hist_index(hi + 1), i + 1);
	}
	ck_assert_uint_eq(hist_index(UINT64_MAX), HIST_BUCKETS - 1);
	ck_assert_uint_eq(hist_bucket_high(HIST_BUCKETS - 1), UINT64_MAX);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent_hist");
	TCase *tc = tcase_create("hist");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, percentiles_lognormal);
	tcase_add_test(tc, percentiles_uniform_and_small);
	tcase_add_test(tc, percentiles_of_nothing);
	tcase_add_test(tc, bucket_edges);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
