/*
 * test_emit.c - the adaptive digest interval: base, fast after a trigger for
 * exactly fast_count digests, slow after stable_count stable digests, and the
 * way back; all on a simulated clock.
 */
#include "common.h"
#include "emit.h"

#define MS 1000ull

/* A digest as the meter would produce it: queue, p95, own health. */
static struct dig_digest sampled(uint32_t queue, uint32_t p95_us, uint8_t health)
{
	struct dig_digest d = digest_at(1, 0);

	d.queue_len = queue;
	d.p95_us = p95_us;
	d.health = health;
	d.interval_ms = 0;
	d.flags = 0;
	return d;
}

/* Send one digest at now: returns the interval chosen after it. */
static uint32_t send(struct dig_emitter *e, uint64_t now, uint32_t queue, uint32_t p95,
		     uint8_t health, uint8_t *flags)
{
	struct dig_digest d = sampled(queue, p95, health);
	uint32_t iv = dig_emitter_on_sample(e, &d, now);

	ck_assert_uint_eq(d.interval_ms, iv);
	ck_assert_uint_eq(dig_emitter_next_deadline(e), now + iv * MS);
	if (flags)
		*flags = d.flags;
	return iv;
}

START_TEST(base_interval_and_first_digest_at_once)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_emitter e;

	ck_assert_int_eq(dig_emitter_init(&e, &cfg, 5 * MS), 0);
	ck_assert_uint_eq(dig_emitter_next_deadline(&e), 5 * MS);
	ck_assert(dig_emitter_due(&e, 0, 0, 5 * MS));
	/* Busy but steady (health 50): base interval, never stretched. */
	for (unsigned i = 0; i < 10; i++)
		ck_assert_uint_eq(send(&e, (5 + 100 * i) * MS, 40, 1000, 50, NULL), 100);
	ck_assert(!dig_emitter_due(&e, 40, 1000, 904 * MS));
	ck_assert(dig_emitter_due(&e, 40, 1000, 1005 * MS));
}
END_TEST

START_TEST(stable_digests_stretch_then_fall_back)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_emitter e;
	uint64_t now = 0;

	dig_emitter_init(&e, &cfg, 0);
	/* Four stable digests: still 100 ms. The fifth stretches to 200 ms. */
	for (unsigned i = 0; i < 4; i++, now += 100 * MS)
		ck_assert_uint_eq(send(&e, now, 1, 100, 95, NULL), 100);
	ck_assert_uint_eq(send(&e, now, 1, 100, 95, NULL), 200);
	ck_assert_int_eq(e.mode, DIG_EMIT_SLOW);
	now += 200 * MS;
	ck_assert_uint_eq(send(&e, now, 1, 100, 90, NULL), 200);
	/* Health 85 is not above 85: back to base, and the run starts again. */
	now += 200 * MS;
	ck_assert_uint_eq(send(&e, now, 1, 100, 85, NULL), 100);
	for (unsigned i = 0; i < 4; i++) {
		now += 100 * MS;
		ck_assert_uint_eq(send(&e, now, 1, 100, 95, NULL), 100);
	}
	now += 100 * MS;
	ck_assert_uint_eq(send(&e, now, 1, 100, 95, NULL), 200);
}
END_TEST

START_TEST(queue_jump_sends_at_once_then_three_fast)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_emitter e;
	uint8_t flags;
	uint64_t now = 0;

	dig_emitter_init(&e, &cfg, 0);
	ck_assert_uint_eq(send(&e, now, 10, 100, 80, &flags), 100);
	ck_assert_uint_eq(flags, 0);
	/* +50% exactly is not a jump; +60% is, long before the deadline. */
	ck_assert(!dig_emitter_triggered(&e, 15, 100));
	ck_assert(!dig_emitter_due(&e, 15, 100, 30 * MS));
	ck_assert(dig_emitter_triggered(&e, 16, 100));
	ck_assert(dig_emitter_due(&e, 16, 100, 30 * MS));
	now = 30 * MS;
	ck_assert_uint_eq(send(&e, now, 16, 100, 80, &flags), 20);
	ck_assert_uint_eq(flags, DIG_F_TRIGGERED);
	/* The next three digests go 20 ms apart; the one after the third returns to 100. */
	now += 20 * MS;
	ck_assert_uint_eq(send(&e, now, 16, 100, 80, &flags), 20);
	ck_assert_uint_eq(flags, 0);
	now += 20 * MS;
	ck_assert_uint_eq(send(&e, now, 16, 100, 80, NULL), 20);
	now += 20 * MS;
	ck_assert_uint_eq(send(&e, now, 16, 100, 80, NULL), 100);
	ck_assert_int_eq(e.mode, DIG_EMIT_BASE);
}
END_TEST

START_TEST(small_queue_growth_is_no_jump)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_emitter e;

	dig_emitter_init(&e, &cfg, 0);
	send(&e, 0, 0, 0, 100, NULL);
	ck_assert(!dig_emitter_triggered(&e, DIG_QUEUE_JUMP_MIN - 1, 0));
	ck_assert(dig_emitter_triggered(&e, DIG_QUEUE_JUMP_MIN, 0));
}
END_TEST

START_TEST(p95_over_threshold_triggers_and_keeps_fast)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_emitter e;
	uint64_t now = 0;
	uint32_t over = cfg.p95_threshold_us + 1;

	dig_emitter_init(&e, &cfg, 0);
	send(&e, now, 5, 1000, 80, NULL);
	ck_assert(!dig_emitter_triggered(&e, 5, cfg.p95_threshold_us));
	ck_assert(dig_emitter_due(&e, 5, over, 1 * MS));
	now = 1 * MS;
	ck_assert_uint_eq(send(&e, now, 5, over, 60, NULL), 20);
	/* Still over: no new trigger between digests, but the interval stays fast. */
	ck_assert(!dig_emitter_triggered(&e, 5, over));
	for (unsigned i = 0; i < 6; i++) {
		now += 20 * MS;
		ck_assert_uint_eq(send(&e, now, 5, over, 60, NULL), 20);
	}
	/* Below again: three more fast digests, then base. */
	unsigned fast = 0;
	uint32_t iv;
	do {
		now += 20 * MS;
		iv = send(&e, now, 5, 1000, 80, NULL);
		fast += iv == 20;
	} while (iv == 20 && fast < 10);
	ck_assert_uint_eq(fast, 2); /* the last over-threshold digest armed 3; one is spent */
	ck_assert_uint_eq(iv, 100);
}
END_TEST

START_TEST(simulated_node_timeline)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_emitter e;
	unsigned sent_before_spike = 0, sent_in_spike = 0;

	/* Node idles 2 s (stretches to 200 ms), its queue spikes at t = 2 s for 100 ms. */
	dig_emitter_init(&e, &cfg, 0);
	for (uint64_t now = 0; now < 2200 * MS; now += 1 * MS) {
		uint32_t queue = now >= 2000 * MS && now < 2100 * MS ? 100 : 0;

		if (!dig_emitter_due(&e, queue, 0, now))
			continue;
		send(&e, now, queue, 0, queue ? 70 : 100, NULL);
		if (now < 2000 * MS)
			sent_before_spike++;
		else if (now < 2100 * MS)
			sent_in_spike++;
		if (now == 2000 * MS)
			ck_assert_uint_eq(e.interval_ms, 20); /* sent the very millisecond it jumped */
	}
	/* 0..400 at base (5), the fifth stable one stretches: 600..1800 every 200 ms (7). */
	ck_assert_uint_eq(sent_before_spike, 12);
	/* Spike at 2000, then 2020, 2040, 2060, then base 2160 (outside). */
	ck_assert_uint_eq(sent_in_spike, 4);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("digest_emit");
	TCase *tc = tcase_create("emit");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, base_interval_and_first_digest_at_once);
	tcase_add_test(tc, stable_digests_stretch_then_fall_back);
	tcase_add_test(tc, queue_jump_sends_at_once_then_three_fast);
	tcase_add_test(tc, small_queue_growth_is_no_jump);
	tcase_add_test(tc, p95_over_threshold_triggers_and_keeps_fast);
	tcase_add_test(tc, simulated_node_timeline);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
