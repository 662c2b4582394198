/*
 * test_digest_codec.c - DIGEST payload and datagram: round trips, the documented
 * byte layout, and rejection of every truncation and bad field.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/digest_sample.h"
#include "digest_codec.h"

/* Field-wise equality (struct padding is not part of a digest). */
static void assert_same_digest(const struct dig_digest *a, const struct dig_digest *b)
{
	ck_assert_uint_eq(a->flags, b->flags);
	ck_assert_uint_eq(a->interval_ms, b->interval_ms);
	ck_assert_uint_eq(a->seq, b->seq);
	ck_assert_uint_eq(a->boot_id, b->boot_id);
	ck_assert_uint_eq(a->ts_us, b->ts_us);
	ck_assert_uint_eq(a->queue_len, b->queue_len);
	ck_assert_uint_eq(a->p95_us, b->p95_us);
	ck_assert_uint_eq(a->rx_rate, b->rx_rate);
	ck_assert_mem_eq(&a->m, &b->m, sizeof(a->m)); /* six bytes, no padding */
	ck_assert_uint_eq(a->health, b->health);
}

static struct dig_digest sample(void)
{
	struct dig_digest d = digest_at(7, 10);

	d.flags = DIG_F_TRIGGERED;
	d.interval_ms = 20;
	d.seq = 0x01020304;
	d.boot_id = 0xa1b2c3d4;
	d.ts_us = 0x1122334455667788ull;
	d.queue_len = 17;
	d.p95_us = 4500;
	d.rx_rate = 12345;
	d.m = (struct dig_metrics){7, 23, 25, 40, 100, 3};
	d.health = 66;
	return d;
}

START_TEST(payload_round_trip)
{
	struct dig_digest d = sample(), out;
	uint8_t buf[DIG_PAYLOAD_LEN];

	ck_assert_int_eq(dig_payload_encode(&d, buf, sizeof(buf)), DIG_PAYLOAD_LEN);
	ck_assert_int_eq(dig_payload_decode(buf, sizeof(buf), &out), DIG_OK);
	assert_same_digest(&out, &d);
}
END_TEST

/* The byte layout docs/protocol.md promises. */
START_TEST(payload_layout_matches_docs)
{
	struct dig_digest d = sample();
	uint8_t buf[DIG_PAYLOAD_LEN];
	static const uint8_t want[DIG_PAYLOAD_LEN] = {
	    1,	  0x01, 0x00, 20,			    /* layout, flags, interval */
	    0x01, 0x02, 0x03, 0x04,			    /* seq */
	    0xa1, 0xb2, 0xc3, 0xd4,			    /* boot id */
	    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* ts_us */
	    0,	  0,	0,    17,			    /* queue_len */
	    0,	  0,	0x11, 0x94,			    /* p95_us 4500 */
	    0,	  0,	0x30, 0x39,			    /* rx_rate 12345 */
	    7,	  23,	25,   40,   100,  3,		    /* metrics */
	    66,	  0,					    /* health, reserved */
	};

	ck_assert_int_eq(dig_payload_encode(&d, buf, sizeof(buf)), DIG_PAYLOAD_LEN);
	ck_assert_mem_eq(buf, want, sizeof(want));
}
END_TEST

START_TEST(every_truncation_rejected)
{
	struct dig_digest d = sample(), out;
	uint8_t buf[DIG_PAYLOAD_LEN + 1];

	ck_assert_int_eq(dig_payload_encode(&d, buf, DIG_PAYLOAD_LEN), DIG_PAYLOAD_LEN);
	ck_assert_int_eq(dig_payload_decode(buf, 0, &out), DIG_ERR_SHORT);
	for (size_t len = 1; len < DIG_PAYLOAD_LEN; len++)
		ck_assert_int_eq(dig_payload_decode(buf, len, &out), DIG_ERR_SHORT);
	buf[DIG_PAYLOAD_LEN] = 0;
	ck_assert_int_eq(dig_payload_decode(buf, DIG_PAYLOAD_LEN + 1, &out), DIG_ERR_TRAILING);
	ck_assert_int_eq(dig_payload_decode(NULL, 0, &out), DIG_ERR_SHORT);
}
END_TEST

/* Corrupt one byte of a good payload; expect the given error. */
static void expect_bad(size_t off, uint8_t value, enum dig_error want)
{
	struct dig_digest d = sample(), out;
	uint8_t buf[DIG_PAYLOAD_LEN];

	ck_assert_int_eq(dig_payload_encode(&d, buf, sizeof(buf)), DIG_PAYLOAD_LEN);
	buf[off] = value;
	memset(&out, 0xee, sizeof(out));
	ck_assert_msg(dig_payload_decode(buf, sizeof(buf), &out) == want, "offset %zu value %u",
		      off, value);
	ck_assert_uint_eq(out.seq, 0xeeeeeeee); /* nothing written on failure */
}

START_TEST(bad_fields_rejected)
{
	expect_bad(0, 0, DIG_ERR_LAYOUT);
	expect_bad(0, 2, DIG_ERR_LAYOUT);
	expect_bad(1, 0x02, DIG_ERR_FLAGS);
	expect_bad(1, 0x80, DIG_ERR_FLAGS);
	expect_bad(3, 0, DIG_ERR_INTERVAL);    /* interval 20 = 0x0014 -> 0 */
	expect_bad(2, 0xff, DIG_ERR_INTERVAL); /* 0xff14 = 65300 > 60000 */
}
END_TEST

START_TEST(out_of_range_values_rejected)
{
	struct dig_digest d = sample(), out;
	uint8_t buf[DIG_PAYLOAD_LEN];

	/* Each normalised metric and the health, one at a time, at 101 and 255. */
	for (size_t off = 32; off <= 38; off++) {
		expect_bad(off, 101, DIG_ERR_METRIC);
		expect_bad(off, 255, DIG_ERR_METRIC);
	}
	expect_bad(39, 1, DIG_ERR_RESERVED);
	/* seq 0 */
	d.seq = 0;
	ck_assert_int_eq(dig_payload_encode(&d, buf, sizeof(buf)), -EINVAL);
	d = sample();
	ck_assert_int_eq(dig_payload_encode(&d, buf, sizeof(buf)), DIG_PAYLOAD_LEN);
	memset(buf + 4, 0, 4);
	ck_assert_int_eq(dig_payload_decode(buf, sizeof(buf), &out), DIG_ERR_SEQ);
	/* interval 60001 */
	d = sample();
	ck_assert_int_eq(dig_payload_encode(&d, buf, sizeof(buf)), DIG_PAYLOAD_LEN);
	wire_put16(buf + 2, DIG_INTERVAL_MAX_MS + 1);
	ck_assert_int_eq(dig_payload_decode(buf, sizeof(buf), &out), DIG_ERR_INTERVAL);
	wire_put16(buf + 2, DIG_INTERVAL_MAX_MS);
	ck_assert_int_eq(dig_payload_decode(buf, sizeof(buf), &out), DIG_OK);
	/* The encoder refuses what the decoder would reject. */
	d = sample();
	d.m.cpu = 101;
	ck_assert_int_eq(dig_payload_encode(&d, buf, sizeof(buf)), -EINVAL);
	d = sample();
	d.health = 101;
	ck_assert_int_eq(dig_payload_encode(&d, buf, sizeof(buf)), -EINVAL);
	d = sample();
	d.flags = 0x4;
	ck_assert_int_eq(dig_payload_encode(&d, buf, sizeof(buf)), -EINVAL);
	d = sample();
	ck_assert_int_eq(dig_payload_encode(&d, buf, DIG_PAYLOAD_LEN - 1), -EMSGSIZE);
}
END_TEST

START_TEST(datagram_round_trip)
{
	struct dig_digest d = sample(), out;
	uint8_t buf[256];
	struct wire_msg msg;
	uint16_t node = 0;

	ck_assert_int_eq(dig_datagram_build(9, &d, buf, sizeof(buf)), DIG_DATAGRAM_LEN);
	ck_assert_int_eq(wire_decode(buf, DIG_DATAGRAM_LEN, &msg), WIRE_OK);
	ck_assert_uint_eq(msg.op, WIRE_OP_DIGEST);
	ck_assert_uint_eq(msg.key_len, 0);
	ck_assert_uint_eq(msg.val_len, DIG_PAYLOAD_LEN);
	ck_assert_uint_eq(msg.node, 9);
	ck_assert_int_eq(dig_datagram_parse(buf, DIG_DATAGRAM_LEN, &node, &out), DIG_OK);
	ck_assert_uint_eq(node, 9);
	assert_same_digest(&out, &d);

	ck_assert_int_eq(dig_datagram_build(0, &d, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(dig_datagram_build(WIRE_MAX_NODE + 1, &d, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(dig_datagram_build(9, &d, buf, DIG_DATAGRAM_LEN - 1), -EMSGSIZE);
}
END_TEST

START_TEST(datagram_malformed_rejected)
{
	struct dig_digest d = sample(), out;
	uint8_t buf[256], other[256];
	struct wire_msg msg;
	uint8_t key = 'k';
	uint16_t node;

	ck_assert_int_eq(dig_datagram_build(9, &d, buf, sizeof(buf)), DIG_DATAGRAM_LEN);
	/* Every truncation of the datagram. */
	for (size_t len = 0; len < DIG_DATAGRAM_LEN; len++)
		ck_assert_int_ne(dig_datagram_parse(buf, len, &node, &out), DIG_OK);
	/* A reply op. */
	memcpy(other, buf, DIG_DATAGRAM_LEN);
	other[WIRE_OFF_OP] = WIRE_OP_DIGEST | WIRE_REPLY;
	ck_assert_int_eq(dig_datagram_parse(other, DIG_DATAGRAM_LEN, &node, &out), DIG_ERR_OP);
	/* Node 0. */
	memcpy(other, buf, DIG_DATAGRAM_LEN);
	wire_put16(other + WIRE_OFF_NODE, 0);
	ck_assert_int_eq(dig_datagram_parse(other, DIG_DATAGRAM_LEN, &node, &out), DIG_ERR_NODE);
	wire_put16(other + WIRE_OFF_NODE, WIRE_MAX_NODE + 1);
	ck_assert_int_eq(dig_datagram_parse(other, DIG_DATAGRAM_LEN, &node, &out), DIG_ERR_NODE);
	/* Some other op with a valid-looking payload. */
	memset(&msg, 0, sizeof(msg));
	msg.op = WIRE_OP_GET;
	msg.node = 9;
	msg.key_len = 1;
	msg.key = &key;
	msg.val_len = DIG_PAYLOAD_LEN;
	msg.value = buf + WIRE_HDR_LEN;
	ck_assert_int_gt(wire_encode(&msg, other, sizeof(other)), 0);
	ck_assert_int_eq(dig_datagram_parse(other, wire_len(&msg), &node, &out), DIG_ERR_OP);
	/* A DIGEST with a key. */
	msg.op = WIRE_OP_DIGEST;
	ck_assert_int_gt(wire_encode(&msg, other, sizeof(other)), 0);
	ck_assert_int_eq(dig_datagram_parse(other, wire_len(&msg), &node, &out), DIG_ERR_KEY);
	/* Bad payload inside a good header. */
	memcpy(other, buf, DIG_DATAGRAM_LEN);
	other[WIRE_HDR_LEN] = 9;
	ck_assert_int_eq(dig_datagram_parse(other, DIG_DATAGRAM_LEN, &node, &out), DIG_ERR_LAYOUT);
	ck_assert_str_eq(dig_error_name(DIG_ERR_LAYOUT), "bad_layout");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("digest_codec");
	TCase *tc = tcase_create("codec");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, payload_round_trip);
	tcase_add_test(tc, payload_layout_matches_docs);
	tcase_add_test(tc, every_truncation_rejected);
	tcase_add_test(tc, bad_fields_rejected);
	tcase_add_test(tc, out_of_range_values_rejected);
	tcase_add_test(tc, datagram_round_trip);
	tcase_add_test(tc, datagram_malformed_rejected);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
