/*
 * test_hotkeys.c - hot-key detection over rte_member's sketch: a skewed stream
 * reports its top keys hottest first with replicas by share, a uniform stream
 * reports nothing, cold keys retire after retire_epochs epochs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_log.h>

#include "../common/eal_cleanup.h"
#include "config.h"
#include "hot.h"
#include "keyhash.h"

static struct cfg *cfg;

static void load_cfg(void)
{
	char err[CFG_ERR_LEN];
	const char *json = "{\"service\":{\"vip\":\"127.0.0.1\"},\"nodes\":["
			   "{\"id\":1,\"name\":\"n1\",\"ip\":\"127.0.0.1\",\"port\":1},"
			   "{\"id\":2,\"name\":\"n2\",\"ip\":\"127.0.0.1\",\"port\":2},"
			   "{\"id\":3,\"name\":\"n3\",\"ip\":\"127.0.0.1\",\"port\":3},"
			   "{\"id\":4,\"name\":\"n4\",\"ip\":\"127.0.0.1\",\"port\":4},"
			   "{\"id\":5,\"name\":\"n5\",\"ip\":\"127.0.0.1\",\"port\":5},"
			   "{\"id\":6,\"name\":\"n6\",\"ip\":\"127.0.0.1\",\"port\":6},"
			   "{\"id\":7,\"name\":\"n7\",\"ip\":\"127.0.0.1\",\"port\":7},"
			   "{\"id\":8,\"name\":\"n8\",\"ip\":\"127.0.0.1\",\"port\":8}],"
			   "\"directory\":{\"retire_epochs\":3}}";

	cfg = calloc(1, sizeof(*cfg));
	if (!cfg || cfg_load_string(json, "test", cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "test_hotkeys: %s\n", err);
		exit(EXIT_FAILURE);
	}
}

static void observe(struct hot_detector *h, const char *key)
{
	hot_observe(h, keyhash(key, strlen(key)), (const uint8_t *)key, (uint16_t)strlen(key), false);
}

START_TEST(skewed_stream_reports_top_keys_hottest_first)
{
	struct hot_detector *h = hot_create(cfg, 0);
	struct hot_report *r = calloc(1, sizeof(*r));
	char key[32];

	ck_assert_ptr_nonnull(h);
	/* key:i appears 2000/i times (i = 1..50), over a background of 20k cold keys. */
	for (int round = 0; round < 2000; round++) {
		for (int i = 1; i <= 50; i++) {
			if (round % i)
				continue;
			snprintf(key, sizeof(key), "key:%d", i);
			observe(h, key);
		}
		for (int j = 0; j < 10; j++) {
			snprintf(key, sizeof(key), "cold:%d", round * 10 + j);
			observe(h, key);
		}
	}
	hot_epoch(h, r);
	ck_assert_uint_eq(r->epoch, 1);
	ck_assert_uint_ge(r->nhot, 10);
	ck_assert_uint_le(r->nhot, cfg_directory_top_k(cfg));
	ck_assert_int_eq(r->hot[0].key_len, 5);
	ck_assert_mem_eq(r->hot[0].key, "key:1", 5);
	ck_assert_mem_eq(r->hot[1].key, "key:2", 5);
	ck_assert_uint_eq(r->hot[0].keyhash, keyhash("key:1", 5));
	for (uint32_t i = 0; i < r->nhot; i++) {
		ck_assert_msg(memcmp(r->hot[i].key, "cold", 4) != 0, "a cold key was reported");
		if (i)
			ck_assert_uint_ge(r->hot[i - 1].count, r->hot[i].count);
	}
	/* The hottest key (about 1/6 of the samples) gets more replicas than the 10th. */
	ck_assert_uint_gt(r->hot[0].replicas, r->hot[9].replicas);
	ck_assert_uint_ge(r->hot[0].replicas, 3);
	ck_assert_uint_eq(r->nretired, 0);
	hot_free(h);
	free(r);
}
END_TEST

START_TEST(uniform_stream_reports_nothing)
{
	struct hot_detector *h = hot_create(cfg, 0);
	struct hot_report *r = calloc(1, sizeof(*r));
	char key[32];

	for (int i = 0; i < 100000; i++) {
		snprintf(key, sizeof(key), "u:%d", i % 50000);
		observe(h, key);
	}
	hot_epoch(h, r);
	ck_assert_uint_eq(r->nhot, 0);
	hot_free(h);
	free(r);
}
END_TEST

START_TEST(cold_keys_retire_after_m_epochs)
{
	struct hot_detector *h = hot_create(cfg, 0);
	struct hot_report *r = calloc(1, sizeof(*r));

	for (int i = 0; i < 100; i++)
		observe(h, "hot:a");
	hot_epoch(h, r);
	ck_assert_uint_eq(r->nhot, 1);
	/* Epochs with other traffic only: retired on the 3rd cold epoch, once. */
	for (int e = 1; e <= 4; e++) {
		for (int i = 0; i < 100; i++)
			observe(h, "hot:b");
		hot_epoch(h, r);
		ck_assert_uint_eq(r->nhot, 1);
		ck_assert_mem_eq(r->hot[0].key, "hot:b", 5);
		ck_assert_uint_eq(r->nretired, e == 3 ? 1 : 0);
		if (e == 3)
			ck_assert_uint_eq(r->retired[0], keyhash("hot:a", 5));
	}
	hot_free(h);
	free(r);
}
END_TEST

START_TEST(long_keys_are_never_installed)
{
	struct hot_detector *h = hot_create(cfg, 0);
	struct hot_report *r = calloc(1, sizeof(*r));
	uint8_t key[HOT_MAX_KEY + 1];

	memset(key, 'x', sizeof(key));
	for (int i = 0; i < 100; i++)
		hot_observe(h, keyhash(key, sizeof(key)), key, sizeof(key), false);
	hot_epoch(h, r);
	ck_assert_uint_eq(r->nhot, 0);
	hot_free(h);
	free(r);
}
END_TEST

START_TEST(replicas_grow_with_share)
{
	ck_assert_uint_eq(hot_replicas_for_share(0.0, 8, 8, 2), 1);
	ck_assert_uint_eq(hot_replicas_for_share(0.003, 8, 8, 2), 2);
	ck_assert_uint_eq(hot_replicas_for_share(0.07, 8, 8, 2), 3);
	ck_assert_uint_eq(hot_replicas_for_share(0.07, 8, 8, 4), 4);
	ck_assert_uint_eq(hot_replicas_for_share(0.5, 8, 8, 2), 8);
	ck_assert_uint_eq(hot_replicas_for_share(0.5, 8, 3, 2), 3);
	ck_assert_uint_eq(hot_replicas_for_share(0.5, 2, 8, 2), 2);
	ck_assert_uint_eq(hot_replicas_for_share(0.5, 8, 8, 0), 1); /* factor 0: home only */
	/* Sets past 16 at hundreds of nodes: key:0 of zipf 0.99 at 1024 nodes wants 135. */
	ck_assert_uint_eq(hot_replicas_for_share(0.065, 1024, 128, 2), 128);
	ck_assert_uint_eq(hot_replicas_for_share(0.065, 255, 128, 2), 35);
}
END_TEST

/* Copies only where they pay: the home's part of a copied key against the key alone. */
START_TEST(copies_only_where_writes_let_them_pay)
{
	/* Reads only, or a few writes: every copy the share asked for. */
	ck_assert_uint_eq(hot_replicas_for_writes(8, 0.0, 1.0), 8);
	ck_assert_uint_eq(hot_replicas_for_writes(3, 0.05, 1.0), 3);
	/* 20% writes over 3 copies: the home carries 0.4 + 0.8 / 3 = 0.67 of the key. */
	ck_assert_uint_eq(hot_replicas_for_writes(3, 0.2, 1.0), 3);
	/* Half writes: 1.0 + 0.5 / 8 > 1, worse than the home alone. */
	ck_assert_uint_eq(hot_replicas_for_writes(8, 0.5, 1.0), 1);
	ck_assert_uint_eq(hot_replicas_for_writes(8, 1.0, 1.0), 1);
	/* The line: 8 copies pay up to 36% writes at a push cost of 1. */
	ck_assert_uint_eq(hot_replicas_for_writes(8, 0.35, 1.0), 8);
	ck_assert_uint_eq(hot_replicas_for_writes(8, 0.37, 1.0), 1);
	/* A free push: half writes over 8 copies leave the home 0.56 of the key. */
	ck_assert_uint_eq(hot_replicas_for_writes(8, 0.5, 0.0), 8);
	/* One replica stays one. */
	ck_assert_uint_eq(hot_replicas_for_writes(1, 0.0, 1.0), 1);
}
END_TEST

/* The detector weighs each hot key's writes: half writes keep a key home, 5% do not. */
START_TEST(write_heavy_hot_key_reported_home_only)
{
	struct hot_detector *h = hot_create(cfg, 0);
	struct hot_report *r = calloc(1, sizeof(*r));
	const char *reads = "key:reads", *writes = "key:writes";

	ck_assert_ptr_nonnull(h);
	for (int i = 0; i < 4000; i++) {
		hot_observe(h, keyhash(reads, strlen(reads)), (const uint8_t *)reads,
			    (uint16_t)strlen(reads), i % 20 == 0);
		hot_observe(h, keyhash(writes, strlen(writes)), (const uint8_t *)writes,
			    (uint16_t)strlen(writes), i % 2 == 0);
	}
	hot_epoch(h, r);
	ck_assert_uint_eq(r->nhot, 2);
	for (uint32_t i = 0; i < r->nhot; i++) {
		bool write_heavy = r->hot[i].key_len == strlen(writes) &&
				   memcmp(r->hot[i].key, writes, strlen(writes)) == 0;

		ck_assert_double_eq_tol(r->hot[i].write_share, write_heavy ? 0.5 : 0.05, 0.01);
		/* Half of the samples each: the share alone asks for 1 + ceil(2 * 0.5 * 8) = 8. */
		ck_assert_uint_eq(r->hot[i].replicas, write_heavy ? 1 : 8);
	}
	/* The next epoch measures its own writes: the same key, now read only, is copied. */
	for (int i = 0; i < 4000; i++)
		hot_observe(h, keyhash(writes, strlen(writes)), (const uint8_t *)writes,
			    (uint16_t)strlen(writes), false);
	hot_epoch(h, r);
	ck_assert_uint_eq(r->nhot, 1);
	ck_assert_uint_eq(r->hot[0].replicas, 8);
	hot_free(h);
	free(r);
}
END_TEST

/* A want of replicas read back as the share the rule gave it (a pin's, a peer's key's). */
START_TEST(share_implied_by_replicas)
{
	ck_assert_double_eq(hot_share_for_replicas(1, 8, 2), 0);
	ck_assert_double_eq(hot_share_for_replicas(0, 8, 2), 0);
	ck_assert_double_eq_tol(hot_share_for_replicas(3, 8, 2), 0.125, 1e-12);
	ck_assert_double_eq(hot_share_for_replicas(3, 8, 0), 0);
	ck_assert_double_eq(hot_share_for_replicas(3, 0, 2), 0);
	for (unsigned r = 2; r <= 8; r++) { /* within one replica of the rule's inverse */
		uint16_t back = hot_replicas_for_share(hot_share_for_replicas(r, 8, 2), 8, 8, 2);

		ck_assert_uint_ge(back, r);
		ck_assert_uint_le(back, r + 1);
	}
}
END_TEST

int main(int argc, char **argv)
{
	char *eal[] = {argv[0], "--no-huge", "-m", "64", "--no-pci", "--no-shconf", "--no-telemetry",
		       "--file-prefix=skl-test-hotkeys", "--log-level=lib.member:crit", "-l", "0",
		       NULL};
	Suite *s = suite_create("hotkeys");
	TCase *tc = tcase_create("detector");
	SRunner *sr;
	int failed;

	(void)argc;
	if (rte_eal_init(11, eal) < 0) {
		fprintf(stderr, "test_hotkeys: EAL init failed\n");
		return EXIT_FAILURE;
	}
	load_cfg();
	tcase_add_test(tc, skewed_stream_reports_top_keys_hottest_first);
	tcase_add_test(tc, uniform_stream_reports_nothing);
	tcase_add_test(tc, cold_keys_retire_after_m_epochs);
	tcase_add_test(tc, long_keys_are_never_installed);
	tcase_add_test(tc, replicas_grow_with_share);
	tcase_add_test(tc, copies_only_where_writes_let_them_pay);
	tcase_add_test(tc, write_heavy_hot_key_reported_home_only);
	tcase_add_test(tc, share_implied_by_replicas);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* EAL state lives in this process: no fork per test. */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	test_eal_cleanup();
	free(cfg);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
