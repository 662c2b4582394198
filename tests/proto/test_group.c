/*
 * test_group.c - replica group placement (a key's home and the next distinct
 * nodes clockwise), the primary a view gives, and the VIEW codec.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"
#include "keyhash.h"

static void build(struct ring *r, int n)
{
	struct ring_node nodes[64];

	for (int i = 0; i < n; i++) {
		nodes[i] = (struct ring_node){.id = (uint16_t)(i + 1), .weight = 1};
		snprintf(nodes[i].name, sizeof(nodes[i].name), "n%d", i + 1);
	}
	ck_assert_int_eq(ring_build(r, nodes, (size_t)n, 1), 0);
}

static uint32_t point_of(uint32_t i)
{
	char key[32];
	int len = snprintf(key, sizeof(key), "key:%u", i);

	return keyhash_point(keyhash(key, (size_t)len));
}

/* The group is the home, then the owners of the next points clockwise, each once. */
START_TEST(group_is_home_then_next_distinct)
{
	struct ring r = {0};
	uint16_t ids[GROUP_MAX];

	build(&r, 8);
	for (uint32_t k = 0; k < 10000; k++) {
		uint32_t p = point_of(k);
		unsigned n = ring_group(&r, p, 3, ids);
		uint32_t at = 0;

		ck_assert_uint_eq(n, 3);
		ck_assert_uint_eq(ids[0], ring_lookup(&r, p));
		ck_assert(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
		/* ids[1] owns the first point clockwise that ids[0] does not. */
		while (at < r.npoints && r.points[at].value < p)
			at++;
		for (uint32_t s = 0; s < r.npoints; s++) {
			uint16_t id = r.points[(at + s) % r.npoints].node_id;

			if (id != ids[0]) {
				ck_assert_uint_eq(id, ids[1]);
				break;
			}
		}
	}
	ring_free(&r);
}
END_TEST

/* A ring of fewer nodes than R gives every node once; R = 1 is the home. */
START_TEST(group_bounded_by_ring)
{
	struct ring r = {0};
	uint16_t ids[GROUP_MAX];

	build(&r, 2);
	ck_assert_uint_eq(ring_group(&r, point_of(7), 5, ids), 2);
	ck_assert_uint_eq(ring_group(&r, point_of(7), 1, ids), 1);
	ck_assert_uint_eq(ids[0], ring_lookup(&r, point_of(7)));
	ring_free(&r);
}
END_TEST

/* Each node is a member of about R / n of the keys: groups spread like homes. */
START_TEST(members_spread)
{
	struct ring r = {0};
	uint16_t ids[GROUP_MAX];
	unsigned count[9] = {0};

	build(&r, 8);
	for (uint32_t k = 0; k < 80000; k++) {
		unsigned n = ring_group(&r, point_of(k), 2, ids);

		for (unsigned i = 0; i < n; i++)
			count[ids[i]]++;
	}
	for (int id = 1; id <= 8; id++)
		ck_assert_msg(count[id] > 14000 && count[id] < 26000, "n%d is in %u groups", id,
			      count[id]);
	ring_free(&r);
}
END_TEST

START_TEST(primary_skips_down_and_catching)
{
	struct ring r = {0};
	struct wire_view v = {.number = 9};
	uint16_t ids[GROUP_MAX];
	uint32_t p = point_of(3);

	build(&r, 8);
	ck_assert_uint_eq(view_group(&r, &v, p, 3, ids), 3);
	ck_assert_uint_eq(group_primary(&r, &v, p, 3, ids, 3), ids[0]);
	group_set_bit(v.down, ids[0]);
	ck_assert_uint_eq(group_primary(&r, &v, p, 3, ids, 3), ids[1]);
	group_set_bit(v.catching, ids[1]);
	ck_assert_uint_eq(group_primary(&r, &v, p, 3, ids, 3), ids[2]);
	group_set_bit(v.down, ids[2]);
	ck_assert_uint_eq(group_primary(&r, &v, p, 3, ids, 3), 0);
	ring_free(&r);
}
END_TEST

/*
 * Repair: a node left out is in no group, and each of its groups gains the
 * next node clockwise. Marked joining, that node is new to those groups only:
 * it serves the ones it was in, and is neither primary nor reader of the
 * others until its join ends (was_out = out).
 */
START_TEST(out_node_is_replaced_by_the_next)
{
	struct ring r = {0};
	struct wire_view v = {.number = 9};
	uint16_t ids[GROUP_MAX], before[GROUP_MAX];
	unsigned gained = 0, kept = 0;

	build(&r, 8);
	group_set_bit(v.out, 3);
	group_set_bit(v.down, 3);
	for (uint32_t k = 0; k < 20000; k++) {
		uint32_t p = point_of(k);
		unsigned n = view_group(&r, &v, p, 2, ids);
		bool had3 = false;

		ck_assert_uint_eq(ring_group(&r, p, 2, before), 2);
		ck_assert_uint_eq(n, 2);
		ck_assert(ids[0] != 3 && ids[1] != 3);
		had3 = before[0] == 3 || before[1] == 3;
		if (!had3) {
			/* Groups without it do not change. */
			ck_assert(ids[0] == before[0] && ids[1] == before[1]);
			continue;
		}
		/* The survivor stays; the new member is the next node clockwise. */
		uint16_t survivor = before[0] == 3 ? before[1] : before[0];
		uint16_t three[3];

		ck_assert_uint_eq(ring_group(&r, p, 3, three), 3);
		ck_assert(ids[0] == survivor || ids[1] == survivor);
		ck_assert_uint_eq(ids[1], three[2]);
		gained++;
		/* Joining, with the old out set: the new member serves nothing of it yet. */
		group_set_bit(v.joining, ids[1]);
		ck_assert(group_is_new(&r, &v, p, 2, ids[1]));
		ck_assert(!group_serves(&r, &v, p, 2, ids[1]));
		ck_assert(!group_is_new(&r, &v, p, 2, ids[0]));
		ck_assert_uint_eq(group_primary(&r, &v, p, 2, ids, n), ids[0]);
		group_set_bit(v.down, ids[0]);
		ck_assert_uint_eq(group_primary(&r, &v, p, 2, ids, n), 0);
		v.down[ids[0] / 8] = 0;
		group_set_bit(v.down, 3);
		/* The join done: was_out = out, and it serves. */
		memcpy(v.was_out, v.out, GROUP_BITMAP);
		ck_assert(group_serves(&r, &v, p, 2, ids[1]));
		memset(v.was_out, 0, GROUP_BITMAP);
		memset(v.joining, 0, GROUP_BITMAP);
	}
	/* A joining node still serves its old groups. */
	for (uint32_t k = 0; k < 20000 && !kept; k++) {
		uint32_t p = point_of(k);

		view_group(&r, &v, p, 2, ids);
		ring_group(&r, p, 2, before);
		if (before[0] != 3 && before[1] != 3) {
			group_set_bit(v.joining, ids[0]);
			ck_assert(group_serves(&r, &v, p, 2, ids[0]));
			ck_assert_uint_eq(group_primary(&r, &v, p, 2, ids, 2), ids[0]);
			kept++;
		}
	}
	ck_assert(gained > 20000 * 2 / 8 / 2 && kept == 1);
	ring_free(&r);
}
END_TEST

START_TEST(view_codec)
{
	struct wire_view v = {.number = 1234567}, back;
	struct wire_view_reply r = {.state = WIRE_VIEW_CAUGHT_UP,
				    .sources_left = 3,
				    .records = 99,
				    .config_nodes = 9},
			       rb;

	group_set_bit(r.view.down, 7);
	group_set_bit(r.view.catching, 200);
	uint8_t buf[WIRE_VIEW_LEN], rbuf[WIRE_VIEW_REPLY_LEN];
	struct wire_msg m = {.op = WIRE_OP_VIEW, .version = v.number, .value = buf,
			     .val_len = WIRE_VIEW_LEN};

	group_set_bit(v.down, 255);
	group_set_bit(v.catching, 1);
	group_set_bit(v.out, 2);
	group_set_bit(v.joining, 4);
	group_set_bit(v.was_out, 5);
	v.lease = 0x1122334455667788ull;
	ck_assert_int_eq(wire_view_encode(&v, buf, sizeof(buf)), WIRE_VIEW_LEN);
	ck_assert_int_eq(wire_view_decode(&m, &back), 0);
	ck_assert(memcmp(&v, &back, sizeof(v)) == 0);
	m.version = 0; /* a query */
	ck_assert_int_eq(wire_view_decode(&m, &back), 0);
	ck_assert_uint_eq(back.number, 0);
	m.val_len--;
	ck_assert_int_eq(wire_view_decode(&m, &back), -EBADMSG);

	ck_assert_int_eq(wire_view_reply_encode(&r, rbuf, sizeof(rbuf)), WIRE_VIEW_REPLY_LEN);
	m = (struct wire_msg){.op = WIRE_OP_VIEW | WIRE_REPLY, .version = 55, .value = rbuf,
			      .val_len = WIRE_VIEW_REPLY_LEN};
	ck_assert_int_eq(wire_view_reply_decode(&m, &rb), 0);
	ck_assert_uint_eq(rb.state, r.state);
	ck_assert_uint_eq(rb.sources_left, 3);
	ck_assert_uint_eq(rb.records, 99);
	ck_assert_uint_eq(rb.config_nodes, 9);
	ck_assert_uint_eq(rb.view.number, 55);
	ck_assert(group_bit(rb.view.down, 7) && !group_bit(rb.view.down, 200));
	ck_assert(group_bit(rb.view.catching, 200) && !group_bit(rb.view.catching, 7));
	rbuf[0] = WIRE_VIEW_JOINED + 1;
	ck_assert_int_eq(wire_view_reply_decode(&m, &rb), -EBADMSG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("group");
	TCase *tc = tcase_create("group");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, group_is_home_then_next_distinct);
	tcase_add_test(tc, group_bounded_by_ring);
	tcase_add_test(tc, members_spread);
	tcase_add_test(tc, primary_skips_down_and_catching);
	tcase_add_test(tc, out_node_is_replaced_by_the_next);
	tcase_add_test(tc, view_codec);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
