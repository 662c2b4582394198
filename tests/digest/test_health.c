/*
 * test_health.c - the switch's health table: window math and the ring of N,
 * outlier damping, failure detection on a simulated clock, stale and
 * duplicate digests, loss-rate accounting.
 */
#include <errno.h>
#include <math.h>

#include "common.h"
#include "health.h"

#define MS 1000ull

static struct dig_table *table(void)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_table *t = calloc(1, sizeof(*t));

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(dig_table_init(t, &cfg), 0);
	ck_assert_int_eq(dig_table_track(t, 1, 0), 0);
	ck_assert_int_eq(dig_table_track(t, 2, 0), 0);
	return t;
}

/* Health a digest at this load scores (all five weights sum to 1). */
static double score_at(uint8_t load)
{
	return 100.0 - load;
}

START_TEST(window_weighted_average)
{
	struct dig_table *t = table();
	uint8_t loads[] = {10, 20, 30, 40, 50};

	/* Partial window: newest gets weight 5, the one before 4. */
	struct dig_digest d = digest_at(1, loads[0]);
	ck_assert_int_eq(dig_table_receive(t, 1, &d, 1 * MS), 0);
	ck_assert_uint_eq(dig_health(t, 1), 90);
	d = digest_at(2, loads[1]);
	ck_assert_int_eq(dig_table_receive(t, 1, &d, 2 * MS), 0);
	/* (4*90 + 5*80) / 9 = 84.44 */
	ck_assert(fabs(dig_window_health(&t->win[1], &t->cfg) - 760.0 / 9) < 1e-4);
	ck_assert_uint_eq(dig_health(t, 1), 84);

	for (unsigned i = 2; i < 5; i++) {
		d = digest_at(i + 1, loads[i]);
		ck_assert_int_eq(dig_table_receive(t, 1, &d, (i + 1) * MS), 0);
	}
	/* (1*90 + 2*80 + 3*70 + 4*60 + 5*50) / 15 = 63.33 */
	ck_assert(fabs(dig_window_health(&t->win[1], &t->cfg) - 950.0 / 15) < 1e-4);
	ck_assert_uint_eq(dig_health(t, 1), 63);
	/* Node 2 is untouched. */
	ck_assert_uint_eq(dig_health(t, 2), 100);
	free(t);
}
END_TEST

START_TEST(window_is_a_ring_of_five)
{
	struct dig_table *t = table();
	struct dig_digest d;

	/* Five saturated digests, then five idle ones push every one of them out. */
	for (uint32_t seq = 1; seq <= 5; seq++) {
		d = digest_at(seq, 100);
		ck_assert_int_eq(dig_table_receive(t, 1, &d, seq * MS), 0);
	}
	ck_assert_uint_eq(dig_health(t, 1), 0);
	for (uint32_t seq = 6; seq <= 9; seq++) {
		d = digest_at(seq, 0);
		ck_assert_int_eq(dig_table_receive(t, 1, &d, seq * MS), 0);
		ck_assert_uint_lt(dig_health(t, 1), 100); /* the oldest is still in */
	}
	ck_assert_uint_eq(t->win[1].count, 5);
	/* One saturated (weight 1) and four idle: (0 + 100*(2+3+4+5)) / 15 = 93.3 */
	ck_assert_uint_eq(dig_health(t, 1), 93);
	d = digest_at(10, 0);
	ck_assert_int_eq(dig_table_receive(t, 1, &d, 10 * MS), 0);
	ck_assert_uint_eq(dig_health(t, 1), 100);
	ck_assert_uint_eq(t->win[1].count, 5);
	free(t);
}
END_TEST

START_TEST(configured_window_weights_apply)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_table *t = calloc(1, sizeof(*t));
	struct dig_digest d;

	cfg.window = 3;
	cfg.window_weights[0] = 0;
	cfg.window_weights[1] = 0;
	cfg.window_weights[2] = 1; /* latest only */
	ck_assert_int_eq(dig_table_init(t, &cfg), 0);
	ck_assert_int_eq(dig_table_track(t, 1, 0), 0);
	d = digest_at(1, 0);
	dig_table_receive(t, 1, &d, 0);
	d = digest_at(2, 70);
	dig_table_receive(t, 1, &d, 0);
	ck_assert_uint_eq(dig_health(t, 1), 30);
	cfg.window = 0;
	ck_assert_int_eq(dig_table_init(t, &cfg), -EINVAL);
	free(t);
}
END_TEST

START_TEST(outlier_moves_score_less_than_latest_only)
{
	struct dig_table *t = table();
	struct dig_digest d;
	double windowed, latest_only;

	for (uint32_t seq = 1; seq <= 4; seq++) {
		d = digest_at(seq, 10);
		dig_table_receive(t, 1, &d, seq * MS);
	}
	ck_assert_uint_eq(dig_health(t, 1), 90);
	d = digest_at(5, 100); /* one spike */
	ck_assert_int_eq(dig_table_receive(t, 1, &d, 5 * MS), 0);
	windowed = dig_health(t, 1);
	latest_only = dig_score(&t->cfg, &d.m);
	ck_assert(latest_only == score_at(100));
	/* (90*(1+2+3+4) + 0*5) / 15 = 60: moved 30, latest-only moved 90. */
	ck_assert_uint_eq(dig_health(t, 1), 60);
	ck_assert(fabs(windowed - 90) < fabs(latest_only - 90));
	free(t);
}
END_TEST

START_TEST(silent_node_marked_down_within_three_intervals)
{
	struct dig_table *t = table();
	struct dig_digest d = digest_at(1, 10);
	uint64_t now;

	ck_assert_int_eq(dig_table_receive(t, 1, &d, 1000 * MS), 0);
	ck_assert_int_eq(dig_table_receive(t, 2, &d, 1000 * MS), 0);
	/* Node 2 keeps talking every 100 ms; node 1 falls silent. Tick every 10 ms. */
	for (now = 1000 * MS; now < 1300 * MS; now += 10 * MS) {
		if (now % (100 * MS) == 0 && now > 1000 * MS) {
			d = digest_at((uint32_t)(now / (100 * MS)), 10);
			ck_assert_int_eq(dig_table_receive(t, 2, &d, now), 0);
		}
		ck_assert_uint_eq(dig_table_tick(t, now), 0);
		ck_assert(dig_alive(t, 1));
	}
	ck_assert_uint_eq(dig_table_tick(t, 1300 * MS - 1), 0);
	ck_assert(dig_alive(t, 1));
	ck_assert_uint_eq(dig_table_tick(t, 1300 * MS), 1);
	ck_assert(!dig_alive(t, 1));
	ck_assert_uint_eq(dig_health(t, 1), 0);
	ck_assert(dig_alive(t, 2));
	ck_assert_uint_eq(dig_table_tick(t, 1310 * MS), 0); /* counted once */
	ck_assert_uint_eq(t->counters[DIG_CNT_DOWN], 1);

	/* Its next digest brings it back, with a fresh window. */
	d = digest_at(2, 20);
	ck_assert_int_eq(dig_table_receive(t, 1, &d, 2000 * MS), 0);
	ck_assert(dig_alive(t, 1));
	ck_assert_uint_eq(dig_health(t, 1), 80);
	ck_assert_uint_eq(t->counters[DIG_CNT_UP], 1);
	free(t);
}
END_TEST

/* A node whose digests are lost but whose replies come is not marked down. */
START_TEST(replies_keep_a_node_up)
{
	struct dig_table *t = table();
	struct dig_digest d = digest_at(1, 10);

	ck_assert_int_eq(dig_table_receive(t, 1, &d, 1000 * MS), 0);
	dig_table_heard(t, 1, 1250 * MS);
	dig_table_tick(t, 1400 * MS);
	ck_assert(dig_alive(t, 1));
	dig_table_heard(t, 1, 1200 * MS); /* older: changes nothing */
	dig_table_tick(t, 1550 * MS - 1);
	ck_assert(dig_alive(t, 1));
	/* Silent in both: down 3 intervals after its last reply. */
	dig_table_tick(t, 1550 * MS);
	ck_assert(!dig_alive(t, 1));
	/* A reply does not bring it back; its next digest does. */
	dig_table_heard(t, 1, 1600 * MS);
	dig_table_tick(t, 1610 * MS);
	ck_assert(!dig_alive(t, 1));
	free(t);
}
END_TEST

START_TEST(down_uses_the_nodes_current_interval)
{
	struct dig_table *t = table();
	struct dig_digest d = digest_at(1, 10);
	struct dig_node_view v;

	/* Fast mode (20 ms) is floored at the base interval: 3 x 100 ms, not 60 ms. */
	d.interval_ms = 20;
	ck_assert_int_eq(dig_table_receive(t, 1, &d, 0), 0);
	ck_assert_int_eq(dig_table_node(t, 1, &v), 0);
	ck_assert_uint_eq(v.interval_ms, 20);
	struct dig_digest steady = digest_at(1, 10); /* node 2: 100 ms interval */
	ck_assert_int_eq(dig_table_receive(t, 2, &steady, 0), 0);
	dig_table_tick(t, 60 * MS);
	ck_assert(dig_alive(t, 1));
	dig_table_tick(t, 299 * MS);
	ck_assert(dig_alive(t, 1));
	dig_table_tick(t, 300 * MS);
	ck_assert(!dig_alive(t, 1));
	ck_assert(!dig_alive(t, 2));
	d = digest_at(2, 10);
	d.interval_ms = 200; /* slow mode: 3 x 200 ms */
	ck_assert_int_eq(dig_table_receive(t, 1, &d, 100 * MS), 0);
	dig_table_tick(t, 699 * MS);
	ck_assert(dig_alive(t, 1));
	dig_table_tick(t, 700 * MS);
	ck_assert(!dig_alive(t, 1));
	free(t);
}
END_TEST

START_TEST(never_heard_node_goes_down)
{
	struct dig_table *t = table();

	ck_assert(dig_alive(t, 1));
	ck_assert_uint_eq(dig_health(t, 1), 100);
	/* A fresh switch waits 3 slow intervals (200 ms): the node may be on it. */
	ck_assert_uint_eq(dig_table_tick(t, 599 * MS), 0);
	ck_assert_uint_eq(dig_table_tick(t, 600 * MS), 2); /* nodes 1 and 2 */
	ck_assert(!dig_alive(t, 3)); /* untracked ids are never alive */
	free(t);
}
END_TEST

START_TEST(stale_and_duplicate_ignored)
{
	struct dig_table *t = table();
	struct dig_digest d = digest_at(5, 10);
	struct dig_node_view v;

	ck_assert_int_eq(dig_table_receive(t, 1, &d, 1 * MS), 0);
	d = digest_at(5, 90); /* duplicate seq */
	ck_assert_int_eq(dig_table_receive(t, 1, &d, 2 * MS), -EALREADY);
	d = digest_at(4, 90); /* older */
	ck_assert_int_eq(dig_table_receive(t, 1, &d, 3 * MS), -EALREADY);
	ck_assert_uint_eq(dig_health(t, 1), 90);
	ck_assert_int_eq(dig_table_node(t, 1, &v), 0);
	ck_assert_uint_eq(v.last_seq, 5);
	ck_assert_uint_eq(v.last_digest_us, 1 * MS); /* a stale digest is no sign of life */
	ck_assert_uint_eq(v.stale, 2);
	ck_assert_uint_eq(v.received, 1);
	ck_assert_uint_eq(t->counters[DIG_CNT_STALE], 2);
	/* Untracked and invalid ids. */
	ck_assert_int_eq(dig_table_receive(t, 7, &d, 0), -ENOENT);
	ck_assert_int_eq(dig_table_receive(t, 0, &d, 0), -EINVAL);
	ck_assert_int_eq(dig_table_receive(t, DIG_NODES, &d, 0), -EINVAL);
	ck_assert_uint_eq(t->counters[DIG_CNT_UNTRACKED], 1);
	free(t);
}
END_TEST

START_TEST(loss_rate_from_seq_gaps)
{
	struct dig_table *t = table();
	uint32_t seqs[] = {1, 2, 5, 6, 4, 10}; /* 3,4 and 7,8,9 missing; the late 4 is stale */
	struct dig_node_view v;
	struct dig_digest d;

	for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		d = digest_at(seqs[i], 10);
		dig_table_receive(t, 1, &d, i * MS);
	}
	ck_assert_int_eq(dig_table_node(t, 1, &v), 0);
	ck_assert_uint_eq(v.received, 5);
	ck_assert_uint_eq(v.lost, 5);
	ck_assert_uint_eq(v.stale, 1);
	ck_assert(fabs(v.loss_rate - 0.5) < 1e-9);
	ck_assert_uint_eq(v.last_seq, 10);
	ck_assert_uint_eq(t->counters[DIG_CNT_LOST], 5);

	/* A restart (new boot id) starts seq again without counting loss or staleness. */
	d = digest_at(1, 10);
	d.boot_id = 43;
	ck_assert_int_eq(dig_table_receive(t, 1, &d, 20 * MS), 0);
	ck_assert_int_eq(dig_table_node(t, 1, &v), 0);
	ck_assert_uint_eq(v.last_seq, 1);
	ck_assert_uint_eq(v.lost, 5);
	ck_assert_uint_eq(t->counters[DIG_CNT_RESTARTS], 1);

	/* seq wraps past 2^32 - 1 to 1 (0 is never sent): no loss. */
	d = digest_at(0xffffffffu, 10);
	d.boot_id = 43;
	dig_table_receive(t, 2, &d, 0);
	d.seq = 1;
	ck_assert_int_eq(dig_table_receive(t, 2, &d, 1 * MS), 0);
	ck_assert_int_eq(dig_table_node(t, 2, &v), 0);
	ck_assert_uint_eq(v.lost, 0);
	ck_assert(v.loss_rate == 0);
	free(t);
}
END_TEST

START_TEST(datagrams_counted)
{
	struct dig_table *t = table();
	struct dig_digest d = digest_at(1, 30);
	uint8_t buf[128];
	int n = dig_datagram_build(2, &d, buf, sizeof(buf));

	ck_assert_int_eq(n, DIG_DATAGRAM_LEN);
	ck_assert_int_eq(dig_table_receive_datagram(t, buf, (size_t)n, 5 * MS), 0);
	ck_assert_uint_eq(dig_health(t, 2), 70);
	ck_assert_int_eq(dig_table_receive_datagram(t, buf, (size_t)n - 1, 5 * MS), -EBADMSG);
	ck_assert_uint_eq(t->decode_errors[DIG_ERR_WIRE], 1);
	ck_assert_uint_eq(t->counters[DIG_CNT_MALFORMED], 1);
	ck_assert_str_eq(dig_counter_name(DIG_CNT_LOST), "digests_lost");
	free(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("digest_health");
	TCase *tc = tcase_create("health");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, replies_keep_a_node_up);
	tcase_add_test(tc, window_weighted_average);
	tcase_add_test(tc, window_is_a_ring_of_five);
	tcase_add_test(tc, configured_window_weights_apply);
	tcase_add_test(tc, outlier_moves_score_less_than_latest_only);
	tcase_add_test(tc, silent_node_marked_down_within_three_intervals);
	tcase_add_test(tc, down_uses_the_nodes_current_interval);
	tcase_add_test(tc, never_heard_node_goes_down);
	tcase_add_test(tc, stale_and_duplicate_ignored);
	tcase_add_test(tc, loss_rate_from_seq_gaps);
	tcase_add_test(tc, datagrams_counted);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
