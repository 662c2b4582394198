/*
 * test_rchange.c - ring changes: the moved arcs of adding and removing a
 * node, the ramp, the effective ring against the arc lookup, and ring epochs.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check_quiet.h"
#include "keyhash.h"
#include "rchange.h"
#include "ringmsg.h"
#include "ring.h"

static void make_ring(struct ring *r, int n, int skip, uint64_t version)
{
	struct ring_node nodes[16];
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (i + 1 == skip)
			continue;
		nodes[k].id = (uint16_t)(i + 1);
		nodes[k].weight = 1;
		snprintf(nodes[k].name, sizeof(nodes[k].name), "n%d", i + 1);
		k++;
	}
	ck_assert_int_eq(ring_build(r, nodes, (size_t)k, version), 0);
}

static uint32_t key_point(uint32_t i)
{
	char key[32];
	int len = snprintf(key, sizeof(key), "key:%u", i);

	return keyhash_point(keyhash(key, (size_t)len));
}

#define NKEYS 200000

START_TEST(add_a_ninth_node_moves_only_to_it)
{
	struct ring r8 = {0}, r9 = {0};
	struct rchange c;
	uint32_t moved = 0;

	make_ring(&r8, 8, 0, 1);
	make_ring(&r9, 9, 0, 2);
	ck_assert_int_eq(rch_build(&c, &r8, &r9), 0);
	ck_assert_uint_gt(c.narcs, 100);
	for (uint32_t i = 0; i < c.narcs; i++) {
		ck_assert_uint_eq(c.arcs[i].to, 9);
		ck_assert_uint_ne(c.arcs[i].from, 9);
		ck_assert_uint_le(c.arcs[i].first, c.arcs[i].last);
		if (i)
			ck_assert_uint_gt(c.arcs[i].first, c.arcs[i - 1].last);
	}
	/* About 1/9 of the keyspace moves, and exactly the keys whose home changed. */
	ck_assert(rch_moved_share(&c) > 0.07 && rch_moved_share(&c) < 0.16);
	for (uint32_t i = 0; i < NKEYS; i++) {
		uint32_t p = key_point(i);
		uint16_t h8 = ring_lookup(&r8, p), h9 = ring_lookup(&r9, p);
		const struct rch_arc *a = rch_arc_of(&c, p);

		ck_assert_int_eq(a != NULL, h8 != h9);
		ck_assert_uint_eq(rch_home(&c, 0, p), h8);
		ck_assert_uint_eq(rch_home(&c, c.narcs, p), h9);
		ck_assert_uint_eq(rch_home(&c, RCH_COMPLETE, p), h9);
		ck_assert_uint_eq(rch_prev_home(&c, c.narcs, p), h8 != h9 ? h8 : 0);
		ck_assert_uint_eq(rch_prev_home(&c, RCH_COMPLETE, p), 0);
		moved += h8 != h9;
	}
	ck_assert(moved > NKEYS / 14 && moved < NKEYS / 6);
	rch_free(&c);
	ring_free(&r8);
	ring_free(&r9);
}
END_TEST

START_TEST(remove_a_node_moves_only_its_arcs)
{
	struct ring r9 = {0}, r8 = {0};
	struct rchange c;
	uint32_t in[RING_MAX_NODES + 1] = {0}, out[RING_MAX_NODES + 1] = {0};

	make_ring(&r9, 9, 0, 2);
	make_ring(&r8, 9, 3, 3); /* n3 leaves */
	ck_assert_int_eq(rch_build(&c, &r9, &r8), 0);
	for (uint32_t i = 0; i < c.narcs; i++)
		ck_assert_uint_eq(c.arcs[i].from, 3);
	rch_count_by_node(&c, out, in);
	ck_assert_uint_eq(out[3], c.narcs);
	ck_assert_uint_eq(in[3], 0);
	for (int id = 1; id <= 9; id++)
		if (id != 3)
			ck_assert_uint_gt(in[id], 0); /* its arcs spread over every other node */
	for (uint32_t i = 0; i < NKEYS; i += 7)
		ck_assert_uint_ne(rch_home(&c, c.narcs, key_point(i)), 3);
	rch_free(&c);
	ring_free(&r9);
	ring_free(&r8);
}
END_TEST

/* The ramp: every key's home changes at most once, and the share grows with it. */
START_TEST(ramp_moves_each_key_once)
{
	struct ring r8 = {0}, r9 = {0};
	struct rchange c;
	static uint16_t home[NKEYS];
	static uint8_t changes[NKEYS];
	uint32_t last_at9 = 0;

	make_ring(&r8, 8, 0, 1);
	make_ring(&r9, 9, 0, 2);
	ck_assert_int_eq(rch_build(&c, &r8, &r9), 0);
	for (uint32_t i = 0; i < NKEYS; i++)
		home[i] = rch_home(&c, 0, key_point(i));
	memset(changes, 0, sizeof(changes));
	for (uint64_t t = 0; t <= 10000; t += 500) {
		uint32_t active = rch_active_at(c.narcs, t, 10000), at9 = 0;

		for (uint32_t i = 0; i < NKEYS; i++) {
			uint16_t h = rch_home(&c, active, key_point(i));

			if (h != home[i]) {
				ck_assert_uint_eq(h, 9);
				changes[i]++;
				home[i] = h;
			}
			at9 += h == 9;
		}
		ck_assert_uint_ge(at9, last_at9);
		last_at9 = at9;
	}
	ck_assert_uint_eq(rch_active_at(c.narcs, 10000, 10000), c.narcs);
	ck_assert_uint_eq(rch_active_at(c.narcs, 5000, 10000), c.narcs / 2);
	ck_assert_uint_eq(rch_active_at(c.narcs, 0, 0), c.narcs);
	for (uint32_t i = 0; i < NKEYS; i++)
		ck_assert_uint_le(changes[i], 1);
	/* Half way, about half of n9's final share (ranks are mixed, not by position). */
	ck_assert(last_at9 > NKEYS / 14);
	rch_free(&c);
	ring_free(&r8);
	ring_free(&r9);
}
END_TEST

START_TEST(effective_ring_agrees_with_arcs)
{
	struct ring r8 = {0}, r9 = {0};
	struct rchange c;

	make_ring(&r8, 8, 0, 1);
	make_ring(&r9, 9, 0, 2);
	ck_assert_int_eq(rch_build(&c, &r8, &r9), 0);
	uint32_t steps[] = {0, 1, c.narcs / 3, c.narcs - 1, c.narcs};

	for (unsigned s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		struct ring eff = {0};

		ck_assert_int_eq(rch_effective_ring(&c, steps[s], rch_epoch(2, steps[s]), &eff), 0);
		for (uint32_t i = 0; i < NKEYS; i += 3) {
			uint32_t p = key_point(i);

			ck_assert_uint_eq(ring_lookup_fast(&eff, p), rch_home(&c, steps[s], p));
			ck_assert_uint_eq(ring_lookup(&eff, p), rch_home(&c, steps[s], p));
		}
		/* The edges of the point space, and the edges of every arc. */
		ck_assert_uint_eq(ring_lookup_fast(&eff, 0), rch_home(&c, steps[s], 0));
		ck_assert_uint_eq(ring_lookup_fast(&eff, UINT32_MAX),
				  rch_home(&c, steps[s], UINT32_MAX));
		for (uint32_t a = 0; a < c.narcs; a++) {
			ck_assert_uint_eq(ring_lookup_fast(&eff, c.arcs[a].first),
					  rch_home(&c, steps[s], c.arcs[a].first));
			ck_assert_uint_eq(ring_lookup_fast(&eff, c.arcs[a].last),
					  rch_home(&c, steps[s], c.arcs[a].last));
		}
		ring_free(&eff);
	}
	rch_free(&c);
	ring_free(&r8);
	ring_free(&r9);
}
END_TEST

START_TEST(same_ring_moves_nothing)
{
	struct ring a = {0}, b = {0};
	struct rchange c;

	make_ring(&a, 8, 0, 1);
	make_ring(&b, 8, 0, 2);
	ck_assert_int_eq(rch_build(&c, &a, &b), 0);
	ck_assert_uint_eq(c.narcs, 0);
	ck_assert_ptr_null(rch_arc_of(&c, 12345));
	ck_assert(rch_moved_share(&c) == 0);
	rch_free(&c);
	ring_free(&a);
	ring_free(&b);
}
END_TEST

START_TEST(epochs_order_every_state)
{
	/* A later step, a later version, and complete after every step. */
	ck_assert_uint_lt(rch_epoch(2, 0), rch_epoch(2, 1));
	ck_assert_uint_lt(rch_epoch(2, RCH_MAX_ARCS), rch_epoch(2, RCH_COMPLETE));
	ck_assert_uint_lt(rch_epoch(2, RCH_COMPLETE), rch_epoch(3, 0));
	ck_assert_uint_eq(rch_epoch_version(rch_epoch(7, 99)), 7);
	ck_assert_uint_eq(rch_epoch_active(rch_epoch(7, 99)), 99);
	ck_assert_uint_eq(rch_epoch_version(rch_epoch(UINT32_MAX, RCH_COMPLETE)), UINT32_MAX);
}
END_TEST

START_TEST(ring_payloads_round_trip_and_reject)
{
	struct wire_ring r = {.prev_version = 7, .nmembers = 3, .floor = 1ull << 40}, back;
	uint8_t buf[64], pbuf[WIRE_MIG_PREFIX_MAX + 8];
	struct wire_msg m = {.op = WIRE_OP_RING, .value = buf};
	int len;

	for (int i = 0; i < 3; i++)
		r.members[i] = (struct wire_ring_member){.id = (uint16_t)(i + 1), .weight = 1};
	len = wire_ring_encode(&r, buf, sizeof(buf));
	ck_assert_int_eq(len, 18 + 12);
	m.val_len = (uint32_t)len;
	ck_assert_int_eq(wire_ring_decode(&m, &back), 0);
	ck_assert_uint_eq(back.prev_version, 7);
	ck_assert_uint_eq(back.nmembers, 3);
	ck_assert_uint_eq(back.members[2].id, 3);
	ck_assert_uint_eq(back.floor, 1ull << 40);
	m.val_len = (uint32_t)len - 8; /* the floor missing: a length that is not 18 + 4n */
	ck_assert_int_eq(wire_ring_decode(&m, &back), -EINVAL);
	m.val_len = (uint32_t)len - 1;
	ck_assert_int_eq(wire_ring_decode(&m, &back), -EINVAL);
	m.val_len = (uint32_t)len;
	buf[10 + 4 * 1 + 3] = 101; /* a weight above 100 */
	ck_assert_int_eq(wire_ring_decode(&m, &back), -EINVAL);
	ck_assert_int_eq(wire_ring_encode(&r, buf, 12), -EMSGSIZE);

	/* A node's answer: its warm-up, its arcs done, its version floor. */
	struct wire_ring_reply rr = {.flags = WIRE_RING_F_WARM_DONE,
				     .arcs_done = 70000,
				     .floor = 123456789012ull},
			       rb;
	struct wire_msg reply = {.op = WIRE_OP_RING | WIRE_REPLY, .value = buf};

	ck_assert_int_eq(wire_ring_reply_encode(&rr, buf, WIRE_RING_REPLY_LEN - 1), -EMSGSIZE);
	len = wire_ring_reply_encode(&rr, buf, sizeof(buf));
	ck_assert_int_eq(len, WIRE_RING_REPLY_LEN);
	reply.val_len = (uint32_t)len;
	ck_assert_int_eq(wire_ring_reply_decode(&reply, &rb), 0);
	ck_assert_uint_eq(rb.flags, WIRE_RING_F_WARM_DONE);
	ck_assert_uint_eq(rb.arcs_done, 70000);
	ck_assert_uint_eq(rb.floor, 123456789012ull);
	reply.val_len = 5; /* the earlier layout, without the floor */
	ck_assert_int_eq(wire_ring_reply_decode(&reply, &rb), -EINVAL);

	struct wire_mig_prefix p = {.kind = 0, .version_low = 2, .ttl_ms = 5000}, q;
	const uint8_t *val;
	uint32_t vlen;

	ck_assert_int_eq(wire_mig_prefix_encode(&p, pbuf, sizeof(pbuf)), WIRE_MIG_PREFIX_LEN);
	memcpy(pbuf + WIRE_MIG_PREFIX_LEN, "abc", 3);
	m = (struct wire_msg){
	    .op = WIRE_OP_MIGRATE, .value = pbuf, .val_len = WIRE_MIG_PREFIX_LEN + 3};
	ck_assert_int_eq(wire_mig_prefix_decode(&m, &q, &val, &vlen), 0);
	ck_assert_uint_eq(q.ttl_ms, 5000);
	ck_assert_uint_eq(q.version_low, 2);
	ck_assert_uint_eq(vlen, 3);
	ck_assert(!memcmp(val, "abc", 3));
	pbuf[0] = 1; /* a tombstone with bytes */
	ck_assert_int_eq(wire_mig_prefix_decode(&m, &q, &val, &vlen), -EINVAL);
	pbuf[0] = 2; /* no such kind */
	ck_assert_int_eq(wire_mig_prefix_decode(&m, &q, &val, &vlen), -EINVAL);
	m.val_len = 4;
	ck_assert_int_eq(wire_mig_prefix_decode(&m, &q, &val, &vlen), -EINVAL);

	/* With the key's at-most-once outcomes between the prefix and the value. */
	p.nwrites = 2;
	p.writes[0] = (struct wire_mig_write){.req_id = 7ull << 32 | 9, .version = 12, .status = 0};
	p.writes[1] = (struct wire_mig_write){.req_id = 8ull << 32 | 1, .version = 11, .status = 1};
	int plen = wire_mig_prefix_encode(&p, pbuf, sizeof(pbuf));
	ck_assert_int_eq(plen, WIRE_MIG_PREFIX_LEN + 2 * WIRE_MIG_WRITE_LEN);
	memcpy(pbuf + plen, "xy", 2);
	m.val_len = (uint32_t)plen + 2;
	ck_assert_int_eq(wire_mig_prefix_decode(&m, &q, &val, &vlen), 0);
	ck_assert_uint_eq(q.nwrites, 2);
	ck_assert_uint_eq(q.writes[0].req_id, 7ull << 32 | 9);
	ck_assert_uint_eq(q.writes[1].version, 11);
	ck_assert_uint_eq(q.writes[1].status, 1);
	ck_assert_uint_eq(vlen, 2);
	ck_assert(!memcmp(val, "xy", 2));
	m.val_len = WIRE_MIG_PREFIX_LEN + WIRE_MIG_WRITE_LEN; /* the second write cut off */
	ck_assert_int_eq(wire_mig_prefix_decode(&m, &q, &val, &vlen), -EINVAL);
	m.val_len = (uint32_t)plen + 2;
	pbuf[WIRE_MIG_PREFIX_LEN + 16] = 6; /* a status no write ends with */
	ck_assert_int_eq(wire_mig_prefix_decode(&m, &q, &val, &vlen), -EINVAL);
	pbuf[1] = WIRE_MIG_MAX_WRITES + 1;
	ck_assert_int_eq(wire_mig_prefix_decode(&m, &q, &val, &vlen), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rchange");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, add_a_ninth_node_moves_only_to_it);
	tcase_add_test(tc, remove_a_node_moves_only_its_arcs);
	tcase_add_test(tc, ramp_moves_each_key_once);
	tcase_add_test(tc, effective_ring_agrees_with_arcs);
	tcase_add_test(tc, same_ring_moves_nothing);
	tcase_add_test(tc, epochs_order_every_state);
	tcase_add_test(tc, ring_payloads_round_trip_and_reject);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
