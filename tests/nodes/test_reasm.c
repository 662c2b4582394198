/*
 * test_reasm.c - the node's reassembly table (nodes/reasm.c): an op gathered
 * in any order comes out as one datagram; duplicates and chunks unlike the
 * op's first are refused; the cap refuses new ops and counts every byte
 * until it is released; unfinished ops expire; and whatever happens, the
 * bytes in use return to 0 (no leak, also under ASan).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyhash.h"
#include "reasm.h"

#define MTU 1500
#define MS  1000000ull

static uint8_t value[65536];
static uint8_t dgrams[64][MTU];
static int lens[64];

/* Encode the count chunks of a PUT of len bytes (key "k<id>", req_id id) into dgrams[]. */
static uint16_t chunks_of(uint32_t id, uint32_t len)
{
	char key[16];
	int klen = snprintf(key, sizeof(key), "k%u", id);
	struct wire_msg m = {.op = WIRE_OP_PUT,
			     .req_id = id,
			     .keyhash = keyhash(key, (size_t)klen),
			     .key = (const uint8_t *)key,
			     .key_len = (uint16_t)klen,
			     .value = value,
			     .val_len = len};
	uint16_t count;

	ck_assert(wire_chunk_needed(&m, MTU, &count));
	ck_assert_uint_le(count, 64);
	for (uint16_t i = 0; i < count; i++) {
		lens[i] = wire_chunk_encode(&m, i, count, dgrams[i], MTU);
		ck_assert_int_gt(lens[i], 0);
	}
	return count;
}

/* Add chunk i of dgrams[] for op id. */
static enum reasm_result add(struct reasm *r, uint32_t id, int i, uint64_t now, uint8_t **done,
			     size_t *done_len, size_t *charged)
{
	struct wire_msg m;
	struct wire_chunk c;
	struct reasm_key k;

	ck_assert_int_eq(wire_decode(dgrams[i], (size_t)lens[i], &m), WIRE_OK);
	ck_assert_int_eq(wire_chunk_decode(&m, &c), WIRE_CHUNK_OK);
	k = (struct reasm_key){.client_ip = 0x0a000001,
			       .client_port = 4000,
			       .op = m.op,
			       .req_id = id,
			       .keyhash = m.keyhash};
	return reasm_add(r, &k, &m, &c, now, done, done_len, charged);
}

START_TEST(gathers_in_any_order)
{
	struct reasm r;
	uint8_t *done = NULL;
	size_t done_len = 0, charged = 0;
	struct wire_msg whole;
	uint16_t count;

	for (size_t i = 0; i < sizeof(value); i++)
		value[i] = (uint8_t)(i ^ (i >> 7));
	ck_assert_int_eq(reasm_init(&r, 64u << 20, 500 * MS), 0);
	count = chunks_of(1, 50000);
	/* Last first, then the rest backwards: order does not matter. */
	for (int i = count - 1; i > 0; i--)
		ck_assert_int_eq(add(&r, 1, i, 0, &done, &done_len, &charged), REASM_PARTIAL);
	ck_assert_int_eq(add(&r, 1, count - 1, 0, &done, &done_len, &charged), REASM_DUPLICATE);
	ck_assert_uint_gt(reasm_used(&r), 50000);
	ck_assert_int_eq(add(&r, 1, 0, 0, &done, &done_len, &charged), REASM_COMPLETE);
	ck_assert_uint_eq(r.live, 0);
	ck_assert_int_eq(wire_decode(done, done_len, &whole), WIRE_OK);
	ck_assert_int_eq(whole.op, WIRE_OP_PUT);
	ck_assert(!(whole.flags & WIRE_F_CHUNK));
	ck_assert_uint_eq(whole.val_len, 50000);
	ck_assert_int_eq(whole.key_len, 2);
	ck_assert_int_eq(memcmp(whole.key, "k1", 2), 0);
	ck_assert_int_eq(memcmp(whole.value, value, 50000), 0);
	/* Still charged until the worker releases it. */
	ck_assert_uint_eq(reasm_used(&r), charged);
	free(done);
	reasm_release(&r, charged);
	ck_assert_uint_eq(reasm_used(&r), 0);
	reasm_free(&r);
}
END_TEST

START_TEST(refuses_chunks_unlike_the_first)
{
	struct reasm r;
	uint8_t *done = NULL, saved[MTU];
	size_t done_len, charged;
	int saved_len;

	ck_assert_int_eq(reasm_init(&r, 64u << 20, 500 * MS), 0);
	chunks_of(2, 5000); /* 4 chunks */
	ck_assert_int_eq(add(&r, 2, 0, 0, &done, &done_len, &charged), REASM_PARTIAL);
	memcpy(saved, dgrams[1], MTU);
	saved_len = lens[1];
	/* The same op (req_id 2, k2's hash) with another total: refused. */
	chunks_of(2, 6000);
	ck_assert_int_eq(add(&r, 2, 1, 0, &done, &done_len, &charged), REASM_MISMATCH);
	memcpy(dgrams[1], saved, MTU);
	lens[1] = saved_len;
	/* Other key bytes with the same keyhash (forged): refused. */
	dgrams[1][WIRE_HDR_LEN + 1] = '9';
	ck_assert_int_eq(add(&r, 2, 1, 0, &done, &done_len, &charged), REASM_MISMATCH);
	ck_assert_uint_eq(r.live, 1);
	reasm_free(&r);
}
END_TEST

START_TEST(cap_refuses_new_ops_and_counts_until_release)
{
	struct reasm r;
	uint8_t *done = NULL;
	size_t done_len, charged = 0;
	uint32_t started = 0;

	/* Room for about three 20 KB ops. */
	ck_assert_int_eq(reasm_init(&r, 64000, 500 * MS), 0);
	for (uint32_t id = 10; id < 20; id++) {
		chunks_of(id, 20000);
		if (add(&r, id, 0, 0, &done, &done_len, &charged) == REASM_FULL)
			break;
		started++;
	}
	ck_assert_uint_eq(started, 3);
	ck_assert_uint_le(reasm_used(&r), 64000);
	/* An op already started still takes its chunks past nothing new. */
	chunks_of(10, 20000);
	ck_assert_int_eq(add(&r, 10, 1, 0, &done, &done_len, &charged), REASM_PARTIAL);
	reasm_free(&r);
}
END_TEST

START_TEST(unfinished_ops_expire)
{
	struct reasm r;
	uint8_t *done = NULL;
	size_t done_len, charged;

	ck_assert_int_eq(reasm_init(&r, 64u << 20, 500 * MS), 0);
	chunks_of(30, 5000);
	ck_assert_int_eq(add(&r, 30, 0, 1000 * MS, &done, &done_len, &charged), REASM_PARTIAL);
	chunks_of(31, 5000);
	ck_assert_int_eq(add(&r, 31, 2, 1200 * MS, &done, &done_len, &charged), REASM_PARTIAL);
	ck_assert_uint_eq(reasm_expire(&r, 1500 * MS), 0); /* exactly the timeout: kept */
	ck_assert_uint_eq(reasm_expire(&r, 1501 * MS), 1);
	ck_assert_uint_eq(r.live, 1);
	ck_assert_uint_eq(reasm_expire(&r, 1701 * MS), 1);
	ck_assert_uint_eq(r.live, 0);
	ck_assert_uint_eq(reasm_used(&r), 0);
	/* A chunk of an expired op starts it afresh. */
	ck_assert_int_eq(add(&r, 31, 1, 1800 * MS, &done, &done_len, &charged), REASM_PARTIAL);
	reasm_free(&r);
}
END_TEST

/* Random chunks of many ops, duplicates and losses: nothing leaks, every whole op is right. */
START_TEST(random_storm_leaks_nothing)
{
	struct reasm r;
	uint32_t seed = 7, whole = 0;

	ck_assert_int_eq(reasm_init(&r, 1u << 20, 50 * MS), 0);
	for (uint32_t id = 100; id < 400; id++) {
		uint16_t count = chunks_of(id, 1500 + id * 37 % 30000);
		uint64_t now = id * MS;

		for (int k = 0; k < count * 2; k++) {
			uint8_t *done = NULL;
			size_t done_len, charged;

			seed = seed * 1103515245 + 12345;
			if (add(&r, id, (int)((seed >> 8) % count), now, &done, &done_len,
				&charged) == REASM_COMPLETE) {
				struct wire_msg m;

				ck_assert_int_eq(wire_decode(done, done_len, &m), WIRE_OK);
				ck_assert_int_eq(memcmp(m.value, value, m.val_len), 0);
				free(done);
				reasm_release(&r, charged);
				whole++;
			}
		}
		reasm_expire(&r, now);
	}
	ck_assert_uint_gt(whole, 0);
	ck_assert_uint_lt(whole, 300);
	reasm_expire(&r, 1000 * MS);
	ck_assert_uint_eq(r.live, 0);
	ck_assert_uint_eq(reasm_used(&r), 0);
	reasm_free(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reasm");
	TCase *tc = tcase_create("table");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, gathers_in_any_order);
	tcase_add_test(tc, refuses_chunks_unlike_the_first);
	tcase_add_test(tc, cap_refuses_new_ops_and_counts_until_release);
	tcase_add_test(tc, unfinished_ops_expire);
	tcase_add_test(tc, random_storm_leaks_nothing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
