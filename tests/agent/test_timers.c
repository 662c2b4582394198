/*
 * test_timers.c - the timer wheel (never early, fires once, cancel, jumps past
 * a whole turn, re-arm from the callback) and the route cache (TTL, capacity,
 * LRU, TinyLFU admission, MOVED entries).
 */
#include <check.h>
#include <stdlib.h>

#include "../common/check_quiet.h"
#include "rng.h"
#include "route_cache.h"
#include "timerwheel.h"

#define MS 1000000ull

struct tt {
	struct tw_timer t; /* first */
	uint64_t deadline;
	int fired;
	uint64_t fired_at;
};

static uint64_t g_now;

static void fire(struct tw_timer *t, void *arg)
{
	struct tt *x = (struct tt *)t;

	(void)arg;
	x->fired++;
	x->fired_at = g_now;
}

START_TEST(wheel_fires_once_never_early)
{
	struct timerwheel tw;
	enum { N = 5000 };
	struct tt *ts = calloc(N, sizeof(*ts));
	struct rng r;
	uint64_t start = 1000 * MS;

	ck_assert_int_eq(tw_init(&tw, MS, 64, start), 0);
	rng_seed(&r, 1);
	for (int i = 0; i < N; i++) {
		/* Deadlines up to 5 turns of the wheel ahead. */
		ts[i].deadline = start + rng_below(&r, 320 * MS) + 1;
		tw_add(&tw, &ts[i].t, ts[i].deadline);
	}
	ck_assert_uint_eq(tw.armed, N);
	for (g_now = start; g_now <= start + 330 * MS; g_now += rng_below(&r, 3 * MS) + 1) {
		uint64_t next = tw_next_ns(&tw);

		tw_advance(&tw, g_now, fire, NULL);
		for (int i = 0; i < N; i++) {
			if (ts[i].deadline <= g_now - g_now % MS)
				ck_assert_int_eq(ts[i].fired, 1);
			if (ts[i].fired)
				ck_assert(ts[i].fired_at >= ts[i].deadline);
		}
		ck_assert(next != 0);
	}
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(ts[i].fired, 1);
	ck_assert_uint_eq(tw.armed, 0);
	ck_assert_uint_eq(tw_next_ns(&tw), UINT64_MAX);
	tw_free(&tw);
	free(ts);
}
END_TEST

START_TEST(wheel_cancel_and_jump)
{
	struct timerwheel tw;
	struct tt a = {0}, b = {0}, c = {0};

	ck_assert_int_eq(tw_init(&tw, MS, 16, 0), 0);
	tw_add(&tw, &a.t, 5 * MS);
	tw_add(&tw, &b.t, 6 * MS);
	tw_add(&tw, &c.t, 100 * MS); /* several turns ahead */
	ck_assert_uint_eq(tw_next_ns(&tw), 5 * MS);
	tw_cancel(&tw, &a.t);
	tw_cancel(&tw, &a.t); /* harmless twice */
	ck_assert(!tw_armed(&a.t));
	ck_assert_uint_eq(tw_next_ns(&tw), 6 * MS);
	g_now = 50 * MS; /* a jump of more than a turn */
	ck_assert_uint_eq(tw_advance(&tw, g_now, fire, NULL), 1);
	ck_assert_int_eq(a.fired, 0);
	ck_assert_int_eq(b.fired, 1);
	ck_assert_int_eq(c.fired, 0);
	ck_assert_uint_eq(tw_next_ns(&tw), 100 * MS);
	/* A deadline in the past fires on the next tick. */
	tw_add(&tw, &a.t, 1 * MS);
	g_now = 51 * MS;
	tw_advance(&tw, g_now, fire, NULL);
	ck_assert_int_eq(a.fired, 1);
	g_now = 1000 * MS;
	tw_advance(&tw, g_now, fire, NULL);
	ck_assert_int_eq(c.fired, 1);
	tw_free(&tw);
}
END_TEST

static struct timerwheel *g_tw;

static void rearm(struct tw_timer *t, void *arg)
{
	struct tt *x = (struct tt *)t;

	(void)arg;
	if (++x->fired < 3)
		tw_add(g_tw, t, g_now + 10 * MS); /* a retry re-arms its own timer */
}

START_TEST(wheel_rearm_from_callback)
{
	struct timerwheel tw;
	struct tt a = {0};

	g_tw = &tw;
	ck_assert_int_eq(tw_init(&tw, MS, 8, 0), 0);
	tw_add(&tw, &a.t, 10 * MS);
	for (g_now = 0; g_now <= 100 * MS; g_now += MS)
		tw_advance(&tw, g_now, rearm, NULL);
	ck_assert_int_eq(a.fired, 3);
	tw_free(&tw);
}
END_TEST

START_TEST(cache_ttl_and_kinds)
{
	struct route_cache rc;

	ck_assert_int_eq(rc_init(&rc, 10, 5000 * MS), 0);
	ck_assert(rc_insert(&rc, 1, 3, RC_ROUTE, 0));
	ck_assert(rc_insert(&rc, 2, 4, RC_MOVED, 0));
	ck_assert_ptr_nonnull(rc_lookup(&rc, 1, RC_ROUTE, 10 * MS));
	/* A linearizable lookup asks for MOVED only and must not see routes. */
	ck_assert_ptr_null(rc_lookup(&rc, 1, RC_MOVED, 10 * MS));
	ck_assert_uint_eq(rc_lookup(&rc, 2, RC_MOVED, 10 * MS)->node, 4);
	/* A route answer does not overwrite a live MOVED redirect. */
	rc_insert(&rc, 2, 7, RC_ROUTE, 20 * MS);
	ck_assert_uint_eq(rc_lookup(&rc, 2, RC_MOVED | RC_ROUTE, 20 * MS)->node, 4);
	/* TTL. */
	ck_assert_ptr_null(rc_lookup(&rc, 1, RC_ROUTE, 5000 * MS));
	ck_assert_uint_eq(rc.count, 1);
	rc_clear_kind(&rc, RC_MOVED);
	ck_assert_uint_eq(rc.count, 0);
	rc_free(&rc);
	/* Capacity 0: stores nothing, never crashes. */
	ck_assert_int_eq(rc_init(&rc, 0, MS), 0);
	ck_assert(!rc_insert(&rc, 1, 1, RC_ROUTE, 0));
	ck_assert_ptr_null(rc_lookup(&rc, 1, RC_ROUTE, 0));
	rc_free(&rc);
}
END_TEST

START_TEST(cache_bounded_lru)
{
	struct route_cache rc;

	ck_assert_int_eq(rc_init(&rc, 100, 1000000 * MS), 0);
	/* Equal (zero) frequencies: admission keeps the incumbents. Give every
	 * newcomer one access so that it beats a never-seen victim... */
	for (uint64_t k = 1; k <= 100; k++)
		ck_assert(rc_insert(&rc, k, 1, RC_ROUTE, 0));
	ck_assert_uint_eq(rc.count, 100);
	ck_assert(!rc_insert(&rc, 1000, 1, RC_ROUTE, 0)); /* no history: rejected */
	rc_record(&rc, 1000);
	ck_assert(rc_insert(&rc, 1000, 1, RC_ROUTE, 0)); /* seen once > never: admitted */
	ck_assert_uint_eq(rc.count, 100);
	ck_assert_ptr_null(rc_lookup(&rc, 1, RC_ROUTE, 0)); /* the LRU went */
	ck_assert_ptr_nonnull(rc_lookup(&rc, 2, RC_ROUTE, 0));
	rc_free(&rc);
}
END_TEST

START_TEST(cache_tinylfu_protects_hot_keys)
{
	struct route_cache rc;
	int hot_kept = 0;

	ck_assert_int_eq(rc_init(&rc, 50, 1000000 * MS), 0);
	/* 50 hot keys, each read 10 times. */
	for (int round = 0; round < 10; round++)
		for (uint64_t k = 1; k <= 50; k++) {
			rc_record(&rc, k);
			if (!rc_lookup(&rc, k, RC_ROUTE, 0))
				rc_insert(&rc, k, 1, RC_ROUTE, 0);
		}
	/* A scan of 5000 one-off keys, while the hot keys keep being read. */
	for (uint64_t k = 100000; k < 105000; k++) {
		uint64_t hot = 1 + k % 50;

		rc_record(&rc, k);
		if (!rc_lookup(&rc, k, RC_ROUTE, 0))
			rc_insert(&rc, k, 2, RC_ROUTE, 0);
		rc_record(&rc, hot);
		if (!rc_lookup(&rc, hot, RC_ROUTE, 0))
			rc_insert(&rc, hot, 1, RC_ROUTE, 0);
	}
	for (uint64_t k = 1; k <= 50; k++)
		hot_kept += rc_lookup(&rc, k, RC_ROUTE, 0) != NULL;
	ck_assert_int_ge(hot_kept, 45);
	ck_assert_uint_gt(rc.rejected, 4000);
	/* MOVED bypasses admission. */
	ck_assert(rc_insert(&rc, 999999, 3, RC_MOVED, 0));
	rc_free(&rc);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent_timers");
	TCase *tc = tcase_create("timers");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, wheel_fires_once_never_early);
	tcase_add_test(tc, wheel_cancel_and_jump);
	tcase_add_test(tc, wheel_rearm_from_callback);
	tcase_add_test(tc, cache_ttl_and_kinds);
	tcase_add_test(tc, cache_bounded_lru);
	tcase_add_test(tc, cache_tinylfu_protects_hot_keys);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
