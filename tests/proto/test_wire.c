/*
 * test_wire.c - the v1 codec: every op round-trips, every malformed input is
 * rejected with the right reason.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keyhash.h"
#include "wire.h"

static const uint8_t all_ops[] = {
#define X(name, value, ...) value,
	WIRE_OPS(X)
#undef X
};

static struct wire_msg sample(uint8_t op)
{
	static const char key[] = "user:42";
	static const char value[] = "hello, world";
	struct wire_msg m = {
		.op = op,
		.flags = WIRE_F_VIA_SWITCH | WIRE_F_DEBUG,
		.status = 0,
		.req_id = (7ull << 32) | 99,
		.keyhash = keyhash(key, 7),
		.version = 0x0102030405060708ull,
		.node = 3,
		.load = 17,
		.ret_ip = 0x0a4d00c9,
		.ret_port = 40000,
		.key_len = 7,
		.val_len = 12,
		.key = (const uint8_t *)key,
		.value = (const uint8_t *)value,
	};
	return m;
}

START_TEST(every_op_round_trips)
{
	uint8_t buf[256];

	for (size_t i = 0; i < sizeof(all_ops); i++) {
		for (int reply = 0; reply < 2; reply++) {
			struct wire_msg in = sample(all_ops[i] | (reply ? WIRE_REPLY : 0)), out;
			int len;

			in.status = reply ? WIRE_ST_MOVED : 0;
			len = wire_encode(&in, buf, sizeof(buf));
			ck_assert_int_eq(len, WIRE_HDR_LEN + 7 + 12);
			ck_assert_int_eq(wire_decode(buf, (size_t)len, &out), WIRE_OK);
			ck_assert_uint_eq(out.op, in.op);
			ck_assert_uint_eq(out.flags, in.flags);
			ck_assert_uint_eq(out.status, in.status);
			ck_assert_uint_eq(out.req_id, in.req_id);
			ck_assert_uint_eq(out.keyhash, in.keyhash);
			ck_assert_uint_eq(out.version, in.version);
			ck_assert_uint_eq(out.node, in.node);
			ck_assert_uint_eq(out.load, in.load);
			ck_assert_uint_eq(out.ret_ip, in.ret_ip);
			ck_assert_uint_eq(out.ret_port, in.ret_port);
			ck_assert_uint_eq(out.key_len, 7);
			ck_assert_uint_eq(out.val_len, 12);
			/* Zero copy: key and value point into the buffer. */
			ck_assert_ptr_eq(out.key, buf + WIRE_HDR_LEN);
			ck_assert_ptr_eq(out.value, buf + WIRE_HDR_LEN + 7);
			ck_assert_mem_eq(out.value, "hello, world", 12);
		}
	}
}
END_TEST

/* A switch's PUT with riders: their req_ids follow the value; no other op carries them. */
START_TEST(put_riders_follow_the_value)
{
	uint8_t ids[16], buf[256];
	struct wire_msg in = sample(WIRE_OP_PUT), out;
	int len;

	wire_put64(ids, 11);
	wire_put64(ids + 8, 12);
	in.riders = 2;
	in.rider_ids = ids;
	len = wire_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(len, WIRE_HDR_LEN + 7 + 12 + 16);
	ck_assert_uint_eq(buf[WIRE_OFF_RIDERS], 2);
	ck_assert_int_eq(wire_decode(buf, (size_t)len, &out), WIRE_OK);
	ck_assert_uint_eq(out.riders, 2);
	ck_assert_ptr_eq(out.rider_ids, buf + WIRE_HDR_LEN + 7 + 12);
	ck_assert_uint_eq(wire_get64(out.rider_ids + 8), 12);
	/* Without the req_ids the datagram is short; riders is no length elsewhere. */
	ck_assert_int_eq(wire_decode(buf, (size_t)len - 8, &out), WIRE_ERR_TRUNCATED);
	in.rider_ids = NULL;
	ck_assert_int_eq(wire_encode(&in, buf, sizeof(buf)), -EINVAL);
	in = sample(WIRE_OP_PUT | WIRE_REPLY);
	in.riders = 2;
	len = wire_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(len, WIRE_HDR_LEN + 7 + 12);
	ck_assert_int_eq(wire_decode(buf, (size_t)len, &out), WIRE_OK);
	ck_assert_uint_eq(out.riders, 2);
	ck_assert_ptr_null(out.rider_ids);
}
END_TEST

START_TEST(header_is_big_endian_at_documented_offsets)
{
	struct wire_msg in = sample(WIRE_OP_GET);
	uint8_t buf[128];

	ck_assert_int_gt(wire_encode(&in, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(buf[0], 0x50);
	ck_assert_uint_eq(buf[1], 0x47);
	ck_assert_uint_eq(buf[2], 1);
	ck_assert_uint_eq(buf[3], WIRE_OP_GET);
	ck_assert_uint_eq(buf[WIRE_OFF_VERSION], 0x01);
	ck_assert_uint_eq(buf[WIRE_OFF_VERSION + 7], 0x08);
	ck_assert_uint_eq(wire_get16(buf + WIRE_OFF_NODE), 3);
	ck_assert_uint_eq(wire_get32(buf + WIRE_OFF_RET_IP), 0x0a4d00c9);
	ck_assert_uint_eq(wire_get16(buf + WIRE_OFF_KEY_LEN), 7);
	ck_assert_uint_eq(wire_get32(buf + WIRE_OFF_VAL_LEN), 12);
}
END_TEST

START_TEST(truncation_at_every_offset_is_rejected)
{
	struct wire_msg in = sample(WIRE_OP_PUT), out;
	uint8_t buf[128];
	int len = wire_encode(&in, buf, sizeof(buf));

	for (int cut = 0; cut < len; cut++) {
		enum wire_error err = wire_decode(buf, (size_t)cut, &out);

		ck_assert_int_eq(err, cut < WIRE_HDR_LEN ? WIRE_ERR_SHORT : WIRE_ERR_TRUNCATED);
	}
	ck_assert_int_eq(wire_decode(buf, (size_t)len, &out), WIRE_OK);
}
END_TEST

START_TEST(bad_magic_version_op_flags_status)
{
	struct wire_msg in = sample(WIRE_OP_GET), out;
	uint8_t buf[128], bad[128];
	int len = wire_encode(&in, buf, sizeof(buf));

	memcpy(bad, buf, (size_t)len);
	bad[0] = 0x47;
	ck_assert_int_eq(wire_decode(bad, (size_t)len, &out), WIRE_ERR_MAGIC);
	memcpy(bad, buf, (size_t)len);
	bad[WIRE_OFF_VER] = 2;
	ck_assert_int_eq(wire_decode(bad, (size_t)len, &out), WIRE_ERR_VERSION);
	memcpy(bad, buf, (size_t)len);
	bad[WIRE_OFF_OP] = 0x05;
	ck_assert_int_eq(wire_decode(bad, (size_t)len, &out), WIRE_ERR_OP);
	bad[WIRE_OFF_OP] = 0x7f | WIRE_REPLY;
	ck_assert_int_eq(wire_decode(bad, (size_t)len, &out), WIRE_ERR_OP);
	memcpy(bad, buf, (size_t)len);
	wire_put16(bad + WIRE_OFF_FLAGS, 0x100);
	ck_assert_int_eq(wire_decode(bad, (size_t)len, &out), WIRE_ERR_FLAGS);
	memcpy(bad, buf, (size_t)len);
	bad[WIRE_OFF_OP] |= WIRE_REPLY;
	bad[WIRE_OFF_STATUS] = WIRE_ST_COUNT;
	ck_assert_int_eq(wire_decode(bad, (size_t)len, &out), WIRE_ERR_STATUS);
	/* A readable header with a bad body still decodes as a header. */
	memcpy(bad, buf, (size_t)len);
	wire_put16(bad + WIRE_OFF_KEY_LEN, 0);
	ck_assert_int_eq(wire_decode(bad, (size_t)len, &out), WIRE_ERR_KEY_LEN);
	ck_assert_int_eq(wire_decode_header(bad, (size_t)len, &out), WIRE_OK);
	ck_assert_uint_eq(out.req_id, in.req_id);
}
END_TEST

START_TEST(key_len_bounds)
{
	uint8_t key[1025], buf[2048];
	struct wire_msg in = sample(WIRE_OP_GET), out;

	memset(key, 'k', sizeof(key));
	in.key = key;
	in.val_len = 0;
	in.value = NULL;
	in.key_len = 0;
	ck_assert_int_eq(wire_encode(&in, buf, sizeof(buf)), -EINVAL);
	in.key_len = 1025;
	ck_assert_int_eq(wire_encode(&in, buf, sizeof(buf)), -EINVAL);
	in.key_len = 1024;
	int len = wire_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(len, WIRE_HDR_LEN + 1024);
	ck_assert_int_eq(wire_decode(buf, (size_t)len, &out), WIRE_OK);
	in.key_len = 1;
	len = wire_encode(&in, buf, sizeof(buf));
	ck_assert_int_eq(wire_decode(buf, (size_t)len, &out), WIRE_OK);

	/* Hand-made datagrams with key_len 0 and 1025. */
	in.key_len = 1024;
	len = wire_encode(&in, buf, sizeof(buf));
	wire_put16(buf + WIRE_OFF_KEY_LEN, 1025);
	wire_put32(buf + WIRE_OFF_VAL_LEN, 0);
	ck_assert_int_eq(wire_decode(buf, WIRE_HDR_LEN + 1025, &out), WIRE_ERR_KEY_LEN);
	wire_put16(buf + WIRE_OFF_KEY_LEN, 0);
	ck_assert_int_eq(wire_decode(buf, WIRE_HDR_LEN, &out), WIRE_ERR_KEY_LEN);
}
END_TEST

START_TEST(lengths_that_overflow)
{
	struct wire_msg in = sample(WIRE_OP_PUT), out;
	uint8_t buf[128];
	int len = wire_encode(&in, buf, sizeof(buf));

	wire_put32(buf + WIRE_OFF_VAL_LEN, 0xffffffffu);
	ck_assert_int_eq(wire_decode(buf, (size_t)len, &out), WIRE_ERR_TRUNCATED);
	wire_put32(buf + WIRE_OFF_VAL_LEN, 0xffffffffu - 6);
	ck_assert_int_eq(wire_decode(buf, (size_t)len, &out), WIRE_ERR_TRUNCATED);
	wire_put32(buf + WIRE_OFF_VAL_LEN, 11);
	ck_assert_int_eq(wire_decode(buf, (size_t)len, &out), WIRE_ERR_TRAILING);
	ck_assert_int_eq(wire_encode(&in, buf, 50), -EMSGSIZE);
}
END_TEST

START_TEST(keyless_ops_and_names)
{
	struct wire_msg in = {.op = WIRE_OP_DIGEST, .val_len = 4, .value = (const uint8_t *)"abcd"};
	struct wire_msg out;
	uint8_t buf[64];
	char flags[64];
	int len = wire_encode(&in, buf, sizeof(buf));

	ck_assert_int_eq(len, WIRE_HDR_LEN + 4);
	ck_assert_int_eq(wire_decode(buf, (size_t)len, &out), WIRE_OK);
	ck_assert_ptr_null(out.key);
	ck_assert_str_eq(wire_op_name(WIRE_OP_RC_ACK), "RC_ACK");
	ck_assert_str_eq(wire_op_name(WIRE_OP_GET | WIRE_REPLY), "GET_REPLY");
	ck_assert_str_eq(wire_op_name(0x55), "?");
	ck_assert_str_eq(wire_status_name(WIRE_ST_OVERLOADED), "OVERLOADED");
	ck_assert_str_eq(wire_status_name(200), "?");
	ck_assert_int_eq(wire_status_parse("MOVED"), WIRE_ST_MOVED);
	ck_assert_int_eq(wire_status_parse("nope"), -1);
	ck_assert_str_eq(wire_error_name(WIRE_ERR_TRUNCATED), "truncated");
	ck_assert_str_eq(wire_flags_str(WIRE_F_REPLICA_READ | WIRE_F_REPLICATED, flags,
					sizeof(flags)),
			 "REPLICA_READ|REPLICATED");
}
END_TEST

/*
 * The switch's partial decode: the same verdict as wire_decode() on mutated
 * datagrams of every op, the same routing fields when accepted, and the
 * other header fields left as they were.
 */
START_TEST(route_decode_agrees_with_full_decode)
{
	uint8_t good[256], buf[256];
	unsigned seed = 2026;
	int ok = 0;

	for (int i = 0; i < 200000; i++) {
		uint8_t op = all_ops[(size_t)rand_r(&seed) % sizeof(all_ops)];
		struct wire_msg in = sample(op | (rand_r(&seed) & 1 ? WIRE_REPLY : 0)), full, route;
		int len;
		size_t cut;

		in.key_len = (uint16_t)(rand_r(&seed) % 8);
		in.val_len = (uint32_t)(rand_r(&seed) % 13);
		len = wire_encode(&in, good, sizeof(good));
		if (len < 0) /* a key length the op does not take */
			continue;
		memcpy(buf, good, sizeof(buf));
		/* Up to three random bytes in the header or body, and a random length. */
		for (int k = rand_r(&seed) % 4; k > 0; k--)
			buf[(size_t)rand_r(&seed) % (size_t)(len + 2)] = (uint8_t)rand_r(&seed);
		cut = (size_t)len + (size_t)(rand_r(&seed) % 5) - 2;
		memset(&route, 0xa5, sizeof(route));
		enum wire_error err = wire_decode(buf, cut, &full);

		ck_assert_int_eq(wire_decode_route(buf, cut, &route), err);
		if (err != WIRE_OK)
			continue;
		ok++;
		ck_assert_uint_eq(route.op, full.op);
		ck_assert_uint_eq(route.flags, full.flags);
		ck_assert_uint_eq(route.status, full.status);
		ck_assert_uint_eq(route.keyhash, full.keyhash);
		ck_assert_uint_eq(route.key_len, full.key_len);
		ck_assert_uint_eq(route.val_len, full.val_len);
		ck_assert_ptr_eq(route.key, full.key);
		ck_assert_ptr_eq(route.value, full.value);
		ck_assert_uint_eq(route.version, 0xa5a5a5a5a5a5a5a5ull); /* untouched */
		wire_decode_rest(buf, &route);
		ck_assert_uint_eq(route.req_id, full.req_id);
		ck_assert_uint_eq(route.version, full.version);
		ck_assert_uint_eq(route.node, full.node);
		ck_assert_uint_eq(route.load, full.load);
		ck_assert_uint_eq(route.ret_ip, full.ret_ip);
		ck_assert_uint_eq(route.ret_port, full.ret_port);
	}
	ck_assert_int_gt(ok, 10000); /* the mutations leave enough datagrams valid */
}
END_TEST

START_TEST(random_bytes_never_crash)
{
	uint8_t buf[512];
	struct wire_msg out;
	unsigned seed = 12345;

	for (int i = 0; i < 200000; i++) {
		size_t len = (size_t)(rand_r(&seed) % sizeof(buf));

		for (size_t j = 0; j < len; j++)
			buf[j] = (uint8_t)rand_r(&seed);
		if (len >= 4 && (i & 1)) { /* half of them with a valid preamble */
			wire_put16(buf, WIRE_MAGIC);
			buf[2] = 1;
			buf[3] = WIRE_OP_GET;
		}
		if (wire_decode(buf, len, &out) == WIRE_OK)
			ck_assert_uint_le(WIRE_HDR_LEN + out.key_len + out.val_len, len);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("codec");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, every_op_round_trips);
	tcase_add_test(tc, put_riders_follow_the_value);
	tcase_add_test(tc, header_is_big_endian_at_documented_offsets);
	tcase_add_test(tc, truncation_at_every_offset_is_rejected);
	tcase_add_test(tc, bad_magic_version_op_flags_status);
	tcase_add_test(tc, key_len_bounds);
	tcase_add_test(tc, lengths_that_overflow);
	tcase_add_test(tc, keyless_ops_and_names);
	tcase_add_test(tc, random_bytes_never_crash);
	tcase_add_test(tc, route_decode_agrees_with_full_decode);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
