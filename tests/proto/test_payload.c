/*
 * test_payload.c - the REPLICATE, RC_REQ, RC_ACK and HINT codecs
 * (proto/payload.c): round trips through whole datagrams, the documented
 * bytes, and rejection of every bad length and field.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keyhash.h"
#include "payload.h"

static uint8_t dgram[WIRE_HDR_LEN + WIRE_MAX_KEY + 256];

/* Encode a datagram of op with value val[0..len) and decode it again. */
static struct wire_msg through_wire(uint8_t op, uint64_t version, const uint8_t *val, uint32_t len)
{
	struct wire_msg in = {.op = op,
			      .version = version,
			      .node = 2,
			      .keyhash = keyhash("k", 1),
			      .key = (const uint8_t *)"k",
			      .key_len = 1,
			      .value = val,
			      .val_len = len},
			out;
	int n = wire_encode(&in, dgram, sizeof(dgram));

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(wire_decode(dgram, (size_t)n, &out), WIRE_OK);
	return out;
}

START_TEST(replicate_round_trips_and_bytes)
{
	struct wire_replicate in = {.owner = 0x0102, .ntargets = 3, .targets = {4, 5, 0x0607}}, out;
	static const uint8_t want[] = {0x01, 0x02, 0, 4, 0, 5, 0x06, 0x07};
	uint8_t buf[WIRE_REPLICATE_MAX_LEN];
	int len = wire_replicate_encode(&in, buf, sizeof(buf));
	struct wire_msg m;

	ck_assert_int_eq(len, 8);
	ck_assert_mem_eq(buf, want, sizeof(want));
	m = through_wire(WIRE_OP_REPLICATE, 9, buf, (uint32_t)len);
	ck_assert_int_eq(wire_replicate_decode(&m, &out), 0);
	ck_assert_uint_eq(out.owner, 0x0102);
	ck_assert_uint_eq(out.ntargets, 3);
	ck_assert_mem_eq(out.targets, in.targets, 3 * sizeof(uint16_t));
	/* Every target count 1..16 round-trips. */
	for (uint8_t n = 1; n <= WIRE_REPL_MAX_TARGETS; n++) {
		in.ntargets = n;
		for (uint8_t i = 0; i < n; i++)
			in.targets[i] = (uint16_t)(i + 1);
		len = wire_replicate_encode(&in, buf, sizeof(buf));
		ck_assert_int_eq(len, 2 + 2 * n);
		m = through_wire(WIRE_OP_REPLICATE, 0, buf, (uint32_t)len);
		ck_assert_int_eq(wire_replicate_decode(&m, &out), 0);
		ck_assert_uint_eq(out.ntargets, n);
		ck_assert_uint_eq(out.targets[n - 1], n);
	}
}
END_TEST

START_TEST(replicate_rejects_bad_input)
{
	struct wire_replicate in = {.owner = 1, .ntargets = 0}, out;
	uint8_t buf[64] = {0};
	struct wire_msg m;

	ck_assert_int_eq(wire_replicate_encode(&in, buf, sizeof(buf)), -EINVAL);
	in.ntargets = WIRE_REPL_MAX_TARGETS + 1;
	ck_assert_int_eq(wire_replicate_encode(&in, buf, sizeof(buf)), -EINVAL);
	in.ntargets = 2;
	ck_assert_int_eq(wire_replicate_encode(&in, buf, 5), -EMSGSIZE);
	/* Lengths: under one target, odd, over 16 targets. */
	for (uint32_t len = 0; len <= sizeof(buf); len++) {
		int ok = len >= 4 && len % 2 == 0 && len <= WIRE_REPLICATE_MAX_LEN;

		m = through_wire(WIRE_OP_REPLICATE, 0, len ? buf : NULL, len);
		ck_assert_int_eq(wire_replicate_decode(&m, &out), ok ? 0 : -EBADMSG);
	}
	/* Another op, or a reply, is not a REPLICATE. */
	m = through_wire(WIRE_OP_RC_REQ, 1, buf, 4);
	ck_assert_int_eq(wire_replicate_decode(&m, &out), -EBADMSG);
	m = through_wire(WIRE_OP_REPLICATE | WIRE_REPLY, 1, buf, 4);
	ck_assert_int_eq(wire_replicate_decode(&m, &out), -EBADMSG);
}
END_TEST

START_TEST(rc_req_round_trips_and_bytes)
{
	struct wire_rc_req in = {.owner = 0x0a0b,
				 .kind = WIRE_COPY_VALUE,
				 .ttl_ms = 0x01020304,
				 .value_len = 5},
			   out;
	static const uint8_t want[] = {0x0a, 0x0b, 0, 0, 1, 2, 3, 4};
	uint8_t buf[WIRE_RC_PREFIX_LEN + 5];
	struct wire_msg m;

	ck_assert_int_eq(wire_rc_req_encode_prefix(&in, buf, sizeof(buf)), WIRE_RC_PREFIX_LEN);
	ck_assert_mem_eq(buf, want, sizeof(want));
	memcpy(buf + WIRE_RC_PREFIX_LEN, "value", 5);
	m = through_wire(WIRE_OP_RC_REQ, 7, buf, sizeof(buf));
	ck_assert_int_eq(wire_rc_req_decode(&m, &out), 0);
	ck_assert_uint_eq(out.owner, 0x0a0b);
	ck_assert_uint_eq(out.kind, WIRE_COPY_VALUE);
	ck_assert_uint_eq(out.ttl_ms, 0x01020304);
	ck_assert_uint_eq(out.value_len, 5);
	ck_assert_mem_eq(out.value, "value", 5);
	/* A tombstone: the prefix alone. */
	in = (struct wire_rc_req){.owner = 3, .kind = WIRE_COPY_TOMBSTONE};
	ck_assert_int_eq(wire_rc_req_encode_prefix(&in, buf, sizeof(buf)), WIRE_RC_PREFIX_LEN);
	m = through_wire(WIRE_OP_RC_REQ, 7, buf, WIRE_RC_PREFIX_LEN);
	ck_assert_int_eq(wire_rc_req_decode(&m, &out), 0);
	ck_assert_uint_eq(out.kind, WIRE_COPY_TOMBSTONE);
	ck_assert_uint_eq(out.value_len, 0);
	ck_assert_ptr_null(out.value);
}
END_TEST

START_TEST(cas_round_trips_and_bytes)
{
	struct wire_cas in = {.cond = WIRE_CAS_VERSION,
			      .action = WIRE_CAS_SET,
			      .ttl = WIRE_CAS_TTL_SET,
			      .ttl_ms = 0x0102030405060708ull},
			out;
	static const uint8_t want[] = {1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
	uint8_t buf[WIRE_CAS_PREFIX_LEN + 5];
	struct wire_msg m;

	ck_assert_int_eq(wire_cas_encode_prefix(&in, buf, sizeof(buf)), WIRE_CAS_PREFIX_LEN);
	ck_assert_mem_eq(buf, want, sizeof(want));
	memcpy(buf + WIRE_CAS_PREFIX_LEN, "value", 5);
	m = through_wire(WIRE_OP_CAS, 9, buf, sizeof(buf));
	ck_assert_int_eq(wire_cas_decode(&m, &out), 0);
	ck_assert_uint_eq(out.cond, WIRE_CAS_VERSION);
	ck_assert_uint_eq(out.action, WIRE_CAS_SET);
	ck_assert_uint_eq(out.ttl_ms, 0x0102030405060708ull);
	ck_assert_uint_eq(out.value_len, 5);
	ck_assert_mem_eq(out.value, "value", 5);
	/* A kept expiry, no value. */
	in = (struct wire_cas){
	    .cond = WIRE_CAS_LIVE, .action = WIRE_CAS_EXPIRE, .ttl = WIRE_CAS_TTL_KEEP};
	ck_assert_int_eq(wire_cas_encode_prefix(&in, buf, sizeof(buf)), WIRE_CAS_PREFIX_LEN);
	m = through_wire(WIRE_OP_CAS, 9, buf, WIRE_CAS_PREFIX_LEN);
	ck_assert_int_eq(wire_cas_decode(&m, &out), 0);
	ck_assert_uint_eq(out.ttl, WIRE_CAS_TTL_KEEP);
	ck_assert_ptr_null(out.value);
}
END_TEST

START_TEST(cas_rejects_bad_input)
{
	struct wire_cas in = {.cond = WIRE_CAS_ANY, .action = WIRE_CAS_DEL}, out;
	uint8_t buf[WIRE_CAS_PREFIX_LEN + 1];
	struct wire_msg m;

	ck_assert_int_eq(wire_cas_encode_prefix(&in, buf, WIRE_CAS_PREFIX_LEN - 1), -EMSGSIZE);
	in.cond = WIRE_CAS_LIVE + 1;
	ck_assert_int_eq(wire_cas_encode_prefix(&in, buf, sizeof(buf)), -EINVAL);
	in = (struct wire_cas){.action = WIRE_CAS_READ + 1};
	ck_assert_int_eq(wire_cas_encode_prefix(&in, buf, sizeof(buf)), -EINVAL);
	in = (struct wire_cas){.ttl = WIRE_CAS_TTL_KEEP, .ttl_ms = 5};
	ck_assert_int_eq(wire_cas_encode_prefix(&in, buf, sizeof(buf)), -EINVAL);

	in = (struct wire_cas){.action = WIRE_CAS_DEL};
	ck_assert_int_eq(wire_cas_encode_prefix(&in, buf, sizeof(buf)), WIRE_CAS_PREFIX_LEN);
	/* Short, a value on a DEL, another op, an unknown cond, a reserved byte set. */
	m = through_wire(WIRE_OP_CAS, 1, buf, WIRE_CAS_PREFIX_LEN - 1);
	ck_assert_int_eq(wire_cas_decode(&m, &out), -EBADMSG);
	m = through_wire(WIRE_OP_CAS, 1, buf, WIRE_CAS_PREFIX_LEN + 1);
	ck_assert_int_eq(wire_cas_decode(&m, &out), -EBADMSG);
	m = through_wire(WIRE_OP_PUT, 1, buf, WIRE_CAS_PREFIX_LEN);
	ck_assert_int_eq(wire_cas_decode(&m, &out), -EBADMSG);
	buf[0] = 3;
	m = through_wire(WIRE_OP_CAS, 1, buf, WIRE_CAS_PREFIX_LEN);
	ck_assert_int_eq(wire_cas_decode(&m, &out), -EBADMSG);
	buf[0] = 0;
	buf[3] = 1;
	m = through_wire(WIRE_OP_CAS, 1, buf, WIRE_CAS_PREFIX_LEN);
	ck_assert_int_eq(wire_cas_decode(&m, &out), -EBADMSG);
}
END_TEST

START_TEST(rc_req_rejects_bad_input)
{
	struct wire_rc_req in = {.owner = 1, .kind = WIRE_COPY_VALUE}, out;
	uint8_t buf[WIRE_RC_PREFIX_LEN + 4] = {0};
	struct wire_msg m;

	ck_assert_int_eq(wire_rc_req_encode_prefix(&in, buf, WIRE_RC_PREFIX_LEN - 1), -EMSGSIZE);
	in.kind = 2;
	ck_assert_int_eq(wire_rc_req_encode_prefix(&in, buf, sizeof(buf)), -EINVAL);
	in = (struct wire_rc_req){.kind = WIRE_COPY_TOMBSTONE, .value_len = 1};
	ck_assert_int_eq(wire_rc_req_encode_prefix(&in, buf, sizeof(buf)), -EINVAL);
	/* Every length under the prefix. */
	for (uint32_t len = 0; len < WIRE_RC_PREFIX_LEN; len++) {
		m = through_wire(WIRE_OP_RC_REQ, 1, len ? buf : NULL, len);
		ck_assert_int_eq(wire_rc_req_decode(&m, &out), -EBADMSG);
	}
	m = through_wire(WIRE_OP_RC_REQ, 1, buf, sizeof(buf));
	ck_assert_int_eq(wire_rc_req_decode(&m, &out), 0);
	m = through_wire(WIRE_OP_RC_REQ, 0, buf, sizeof(buf)); /* version 0 */
	ck_assert_int_eq(wire_rc_req_decode(&m, &out), -EBADMSG);
	buf[2] = 2; /* unknown kind */
	m = through_wire(WIRE_OP_RC_REQ, 1, buf, sizeof(buf));
	ck_assert_int_eq(wire_rc_req_decode(&m, &out), -EBADMSG);
	buf[2] = WIRE_COPY_TOMBSTONE; /* a tombstone with value bytes */
	m = through_wire(WIRE_OP_RC_REQ, 1, buf, sizeof(buf));
	ck_assert_int_eq(wire_rc_req_decode(&m, &out), -EBADMSG);
	buf[2] = WIRE_COPY_VALUE;
	buf[3] = 1; /* reserved */
	m = through_wire(WIRE_OP_RC_REQ, 1, buf, sizeof(buf));
	ck_assert_int_eq(wire_rc_req_decode(&m, &out), -EBADMSG);
	buf[3] = 0;
	m = through_wire(WIRE_OP_REPLICATE, 1, buf, sizeof(buf));
	ck_assert_int_eq(wire_rc_req_decode(&m, &out), -EBADMSG);
}
END_TEST

START_TEST(rc_ack_round_trips)
{
	struct wire_rc_ack in = {.version = 0x1122334455667788ull, .node = 255}, out;
	struct wire_msg m = {.keyhash = keyhash("k", 1), .key = (const uint8_t *)"k", .key_len = 1};
	int n;

	ck_assert_int_eq(wire_rc_ack_encode(&in, &m), 0);
	n = wire_encode(&m, dgram, sizeof(dgram));
	ck_assert_int_eq(n, WIRE_HDR_LEN + 1);
	ck_assert_uint_eq(dgram[WIRE_OFF_OP], WIRE_OP_RC_ACK);
	ck_assert_int_eq(wire_decode(dgram, (size_t)n, &m), WIRE_OK);
	ck_assert_int_eq(wire_rc_ack_decode(&m, &out), 0);
	ck_assert_uint_eq(out.version, in.version);
	ck_assert_uint_eq(out.node, 255);
	/* Node 0 or over 255, a value, another op. */
	in.node = 0;
	ck_assert_int_eq(wire_rc_ack_encode(&in, &m), -EINVAL);
	in.node = WIRE_MAX_NODE + 1;
	ck_assert_int_eq(wire_rc_ack_encode(&in, &m), -EINVAL);
	m = through_wire(WIRE_OP_RC_ACK, 1, NULL, 0);
	ck_assert_int_eq(wire_rc_ack_decode(&m, &out), 0);
	m.node = 0;
	ck_assert_int_eq(wire_rc_ack_decode(&m, &out), -EBADMSG);
	m = through_wire(WIRE_OP_RC_ACK, 1, (const uint8_t *)"x", 1);
	ck_assert_int_eq(wire_rc_ack_decode(&m, &out), -EBADMSG);
	m = through_wire(WIRE_OP_RC_REQ, 1, NULL, 0);
	ck_assert_int_eq(wire_rc_ack_decode(&m, &out), -EBADMSG);
}
END_TEST

START_TEST(hint_reply_round_trips)
{
	struct wire_hint in = {.node = 4, .version = 77, .in_directory = 1}, out;
	struct wire_msg m = {.flags = WIRE_F_VIA_SWITCH,
			     .keyhash = keyhash("k", 1),
			     .key = (const uint8_t *)"k",
			     .key_len = 1};
	int n;

	ck_assert_int_eq(wire_hint_reply_encode(&in, &m), 0);
	ck_assert_uint_eq(m.flags, WIRE_F_VIA_SWITCH | WIRE_F_REPLICATED);
	n = wire_encode(&m, dgram, sizeof(dgram));
	ck_assert_int_eq(wire_decode(dgram, (size_t)n, &m), WIRE_OK);
	ck_assert_int_eq(wire_hint_reply_decode(&m, &out), 0);
	ck_assert_uint_eq(out.node, 4);
	ck_assert_uint_eq(out.version, 77);
	ck_assert_uint_eq(out.in_directory, 1);
	in.in_directory = 0;
	ck_assert_int_eq(wire_hint_reply_encode(&in, &m), 0);
	ck_assert_uint_eq(m.flags, WIRE_F_VIA_SWITCH);
	ck_assert_int_eq(wire_hint_reply_decode(&m, &out), 0);
	ck_assert_uint_eq(out.in_directory, 0);
	/* A request, a reply with a value, another op. */
	m = through_wire(WIRE_OP_HINT, 0, NULL, 0);
	ck_assert_int_eq(wire_hint_reply_decode(&m, &out), -EBADMSG);
	m = through_wire(WIRE_OP_HINT | WIRE_REPLY, 0, (const uint8_t *)"x", 1);
	ck_assert_int_eq(wire_hint_reply_decode(&m, &out), -EBADMSG);
	m = through_wire(WIRE_OP_PROBE | WIRE_REPLY, 0, NULL, 0);
	ck_assert_int_eq(wire_hint_reply_decode(&m, &out), -EBADMSG);
	in.node = WIRE_MAX_NODE + 1;
	ck_assert_int_eq(wire_hint_reply_encode(&in, &m), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("payload");
	TCase *tc = tcase_create("codecs");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, replicate_round_trips_and_bytes);
	tcase_add_test(tc, replicate_rejects_bad_input);
	tcase_add_test(tc, rc_req_round_trips_and_bytes);
	tcase_add_test(tc, rc_req_rejects_bad_input);
	tcase_add_test(tc, cas_round_trips_and_bytes);
	tcase_add_test(tc, cas_rejects_bad_input);
	tcase_add_test(tc, rc_ack_round_trips);
	tcase_add_test(tc, hint_reply_round_trips);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
