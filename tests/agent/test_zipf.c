/*
 * test_zipf.c - the Zipf sampler against the analytic distribution (top ranks
 * within 5 sigma, chi-square over all ranks), and the workload's key choice
 * (hotspot shares, hot-in and random hot-set changes, YCSB mixes).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "../common/check_quiet.h"
#include "workload.h"
#include "zipf.h"

/*
 * Chi-square of n samples of Zipf(nkeys, s) against the pmf. Ranks whose
 * expected count is under 5 are pooled into one tail bin, as the test needs.
 * Returns chi2 and sets *df.
 */
static double chi_square(uint64_t nkeys, double s, uint64_t n, uint64_t seed, int *df,
			 double *top_err_sigmas)
{
	uint64_t *count = calloc(nkeys + 1, sizeof(*count));
	double *p = malloc((nkeys + 1) * sizeof(*p)), norm = 0, chi2 = 0, tail_e = 0;
	uint64_t tail_o = 0;
	struct zipf z;
	struct rng r;
	int bins = 0;

	ck_assert_int_eq(zipf_init(&z, nkeys, s), 0);
	rng_seed(&r, seed);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t k = zipf_sample(&z, &r);

		ck_assert(k >= 1 && k <= nkeys);
		count[k]++;
	}
	for (uint64_t k = nkeys; k >= 1; k--)
		norm += pow((double)k, -s);
	*top_err_sigmas = 0;
	for (uint64_t k = 1; k <= nkeys; k++) {
		double e;

		p[k] = pow((double)k, -s) / norm;
		e = p[k] * (double)n;
		if (k <= 10) {
			double sigma = sqrt(e * (1 - p[k]));
			double dev = fabs((double)count[k] - e) / sigma;

			if (dev > *top_err_sigmas)
				*top_err_sigmas = dev;
		}
		if (e >= 5) {
			chi2 += ((double)count[k] - e) * ((double)count[k] - e) / e;
			bins++;
		} else {
			tail_e += e;
			tail_o += count[k];
		}
	}
	if (tail_e > 0) {
		chi2 += ((double)tail_o - tail_e) * ((double)tail_o - tail_e) / tail_e;
		bins++;
	}
	*df = bins - 1;
	free(count);
	free(p);
	return chi2;
}

/* Upper critical value of chi-square(df) at about z = 4.5 (p ~ 3e-6), by
 * Wilson-Hilferty; a sampler off by one rank fails by orders of magnitude. */
static double chi2_critical(int df)
{
	double k = df, z = 4.5, t = 1 - 2 / (9 * k) + z * sqrt(2 / (9 * k));

	return k * t * t * t;
}

static void check_zipf(uint64_t nkeys, double s, uint64_t seed)
{
	int df;
	double top, chi2 = chi_square(nkeys, s, 1000000, seed, &df, &top);

	ck_assert_msg(top < 5, "zipf(%lu, %g): a top-10 rank is %.1f sigma off",
		      (unsigned long)nkeys, s, top);
	ck_assert_msg(chi2 < chi2_critical(df), "zipf(%lu, %g): chi2 %.1f with %d df (crit %.1f)",
		      (unsigned long)nkeys, s, chi2, df, chi2_critical(df));
}

START_TEST(zipf_099)
{
	check_zipf(1000, 0.99, 1);
}
END_TEST

START_TEST(zipf_exponents)
{
	check_zipf(1000, 0.5, 2);
	check_zipf(1000, 1.0, 3); /* the log special case */
	check_zipf(500, 1.2, 4);
	check_zipf(100, 2.5, 5);
	check_zipf(10, 0.0, 6); /* uniform */
}
END_TEST

START_TEST(zipf_large_keyspace)
{
	/* 1M keys: the tail is pooled; the head must still match. */
	check_zipf(1000000, 0.99, 8);
}
END_TEST

START_TEST(zipf_detects_off_by_one)
{
	/* The test itself must catch the classic bug: every rank shifted by one. */
	uint64_t nkeys = 1000, n = 1000000, *count = calloc(nkeys + 2, sizeof(*count));
	double norm = 0, chi2 = 0;
	struct zipf z;
	struct rng r;

	zipf_init(&z, nkeys, 0.99);
	rng_seed(&r, 9);
	for (uint64_t i = 0; i < n; i++)
		count[zipf_sample(&z, &r) + 1]++; /* the bug */
	for (uint64_t k = 1; k <= nkeys; k++)
		norm += pow((double)k, -0.99);
	for (uint64_t k = 1; k <= 100; k++) {
		double e = pow((double)k, -0.99) / norm * (double)n;

		chi2 += ((double)count[k] - e) * ((double)count[k] - e) / e;
	}
	ck_assert(chi2 > 100 * chi2_critical(99));
	free(count);
}
END_TEST

START_TEST(zipf_pmf_sums_to_one)
{
	double sum = 0;

	for (uint64_t k = 1; k <= 200; k++)
		sum += zipf_pmf(200, 1.1, k);
	ck_assert(fabs(sum - 1) < 1e-9);
	ck_assert(zipf_pmf(200, 1.1, 0) == 0 && zipf_pmf(200, 1.1, 201) == 0);
}
END_TEST

START_TEST(hotspot_shares)
{
	struct workload w = {.nkeys = 10000, .read = 1};
	struct rng r;
	uint64_t hot = 0, n = 200000;

	ck_assert_int_eq(wl_parse_dist(&w, "hotspot:0.01:0.9"), 0);
	ck_assert_int_eq(wl_init(&w), 0);
	rng_seed(&r, 11);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t k = wl_next_key(&w, &r);

		ck_assert(k < w.nkeys);
		hot += k < 100;
	}
	/* 90% of ops on the hot 1%, within 5 sigma. */
	ck_assert(fabs((double)hot / n - 0.9) < 5 * sqrt(0.9 * 0.1 / n));
	wl_free(&w);
}
END_TEST

START_TEST(dynamic_hot_in)
{
	struct workload w = {.nkeys = 1000, .read = 1, .hot_keys = 10};
	struct rng r;

	ck_assert_int_eq(wl_parse_dist(&w, "zipf:1.2"), 0);
	ck_assert_int_eq(wl_parse_dynamic(&w, "hot-in:2"), 0);
	ck_assert_int_eq(wl_init(&w), 0);
	rng_seed(&r, 12);
	/* Before: rank 1 is key 0. After hot-in: the 10 coldest (990..999) lead. */
	wl_shift(&w, &r);
	{
		uint64_t counts[1000] = {0}, best = 0;

		for (int i = 0; i < 100000; i++)
			counts[wl_next_key(&w, &r)]++;
		for (int k = 0; k < 1000; k++)
			if (counts[k] > counts[best])
				best = (uint64_t)k;
		ck_assert_uint_eq(best, 990);
	}
	wl_free(&w);
}
END_TEST

START_TEST(dynamic_random_is_permutation)
{
	struct workload w = {.nkeys = 500, .read = 1, .hot_keys = 50};
	struct rng r;
	char seen[500] = {0};

	ck_assert_int_eq(wl_parse_dist(&w, "zipf:0.99"), 0);
	ck_assert_int_eq(wl_parse_dynamic(&w, "random:1"), 0);
	ck_assert_int_eq(wl_init(&w), 0);
	rng_seed(&r, 13);
	for (int i = 0; i < 5; i++)
		wl_shift(&w, &r);
	for (int i = 0; i < 500; i++) {
		ck_assert(w.perm[i] < 500 && !seen[w.perm[i]]);
		seen[w.perm[i]] = 1;
	}
	wl_free(&w);
}
END_TEST

START_TEST(ycsb_mixes_and_parsing)
{
	struct workload w = {.nkeys = 100};
	struct rng r;
	int ops[4] = {0};

	ck_assert_int_eq(wl_parse_ycsb(&w, "F", false), 0);
	ck_assert_int_eq(w.dist, WL_SCRAMBLED_ZIPF);
	ck_assert_int_eq(wl_init(&w), 0);
	rng_seed(&r, 14);
	for (int i = 0; i < 100000; i++)
		ops[wl_next_op(&w, &r)]++;
	ck_assert(abs(ops[WL_READ] - 50000) < 1000 && abs(ops[WL_RMW] - 50000) < 1000);
	ck_assert_int_eq(wl_parse_ycsb(&w, "d", false), 0);
	ck_assert_int_eq(w.dist, WL_LATEST);
	ck_assert_int_ne(wl_parse_ycsb(&w, "G", false), 0);
	ck_assert_int_ne(wl_parse_dist(&w, "zipf:"), 0);
	ck_assert_int_ne(wl_parse_dist(&w, "hotspot:0.1"), 0);
	ck_assert_int_ne(wl_parse_dynamic(&w, "hot-in"), 0);
	ck_assert_int_ne(wl_parse_dynamic(&w, "sideways:3"), 0);
	wl_free(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent_zipf");
	TCase *tc = tcase_create("zipf");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, zipf_099);
	tcase_add_test(tc, zipf_exponents);
	tcase_add_test(tc, zipf_large_keyspace);
	tcase_add_test(tc, zipf_detects_off_by_one);
	tcase_add_test(tc, zipf_pmf_sums_to_one);
	tcase_add_test(tc, hotspot_shares);
	tcase_add_test(tc, dynamic_hot_in);
	tcase_add_test(tc, dynamic_random_is_permutation);
	tcase_add_test(tc, ycsb_mixes_and_parsing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
