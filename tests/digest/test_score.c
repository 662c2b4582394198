/*
 * test_score.c - the health score and the normalisation of raw metrics.
 */
#include <math.h>

#include "common.h"

START_TEST(score_and_normalise)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_metrics idle = {0}, full = {100, 100, 100, 100, 100, 100};
	struct dig_metrics queue_only = {.queue = 100};

	ck_assert(dig_score(&cfg, &idle) == 100.0);
	ck_assert(dig_score(&cfg, &full) < 1e-9);
	ck_assert(fabs(dig_score(&cfg, &queue_only) - 65.0) < 1e-9); /* w_queue 0.35 */
	/* Memory is reported, not scored. */
	ck_assert(dig_score(&cfg, &(struct dig_metrics){.mem = 100}) == 100.0);
	ck_assert_uint_eq(dig_normalise(0, 256), 0);
	ck_assert_uint_eq(dig_normalise(128, 256), 50);
	ck_assert_uint_eq(dig_normalise(256, 256), 100);
	ck_assert_uint_eq(dig_normalise(1000000, 256), 100);
	ck_assert_uint_eq(dig_normalise(UINT64_MAX - 1, UINT64_MAX), 100);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("digest_score");
	TCase *tc = tcase_create("score");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, score_and_normalise);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
