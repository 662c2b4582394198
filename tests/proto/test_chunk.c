/*
 * test_chunk.c - the chunk codec and chunk set (proto/chunk.c): every chunk
 * of a value encodes and decodes back to its slice, the stride rule, the
 * documented bytes, rejection of each bad header, a set that refuses
 * duplicates and chunks of another op, and the head-only encoder (a sender's
 * iovecs: head, then the slice from the value) giving the same bytes.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "keyhash.h"

#define MTU 1500

static uint8_t value[262144 + 8];
static uint8_t dgram[MTU];

static struct wire_msg put_of(uint32_t len)
{
	struct wire_msg m = {.op = WIRE_OP_PUT,
			     .req_id = 0x0000000100000002ull,
			     .keyhash = keyhash("key", 3),
			     .key = (const uint8_t *)"key",
			     .key_len = 3,
			     .value = value,
			     .val_len = len};

	return m;
}

static void fill(void)
{
	for (size_t i = 0; i < sizeof(value); i++)
		value[i] = (uint8_t)(i * 131 + (i >> 8));
}

START_TEST(every_chunk_round_trips)
{
	static const uint32_t sizes[] = {1422, 2826, 2827, 4096, 65536, 262143, 262144};

	fill();
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct wire_msg whole = put_of(sizes[s]), got;
		struct wire_chunk_set set;
		struct wire_chunk c;
		uint16_t count;

		ck_assert(wire_chunk_needed(&whole, MTU, &count));
		/* 1500 - 28 - 48 - 8 - 3 = 1413 bytes of value per chunk. */
		ck_assert_uint_eq(count, (sizes[s] + 1412) / 1413);
		for (uint16_t i = 0; i < count; i++) {
			int len = wire_chunk_encode(&whole, i, count, dgram, sizeof(dgram));

			ck_assert_int_gt(len, 0);
			ck_assert_int_le(len + WIRE_IP_UDP_LEN, MTU);
			ck_assert_int_eq(wire_decode(dgram, (size_t)len, &got), WIRE_OK);
			ck_assert(got.flags & WIRE_F_CHUNK);
			ck_assert_uint_eq(got.keyhash, whole.keyhash); /* routed like the first */
			ck_assert_int_eq(got.key_len, 3);
			ck_assert_int_eq(wire_chunk_decode(&got, &c), WIRE_CHUNK_OK);
			ck_assert_uint_eq(c.total, sizes[s]);
			ck_assert_uint_eq(c.index, i);
			ck_assert_uint_eq(c.count, count);
			ck_assert_int_eq(wire_chunk_is_later(&got), i != 0);
			if (i == 0)
				ck_assert_int_eq(wire_chunk_set_init(&set, &c, 7, 0), 0);
			ck_assert_int_eq(wire_chunk_set_add(&set, &c, 7), WIRE_CHUNK_OK);
			ck_assert_int_eq(wire_chunk_set_done(&set), i + 1 == count);
		}
		ck_assert_int_eq(memcmp(set.buf, value, sizes[s]), 0);
		wire_chunk_set_free(&set);
	}
}
END_TEST

START_TEST(head_and_slice_are_the_chunk)
{
	struct wire_msg whole = put_of(262144);
	uint8_t head[WIRE_HDR_LEN + 3 + WIRE_CHUNK_HDR_LEN];
	const uint8_t *slice;
	uint32_t slice_len;
	uint16_t count;

	fill();
	ck_assert(wire_chunk_needed(&whole, MTU, &count));
	ck_assert_uint_eq(wire_chunk_head_len(3), sizeof(head));
	for (uint16_t i = 0; i < count; i++) {
		int len = wire_chunk_encode(&whole, i, count, dgram, sizeof(dgram));
		int hlen = wire_chunk_encode_head(&whole, i, count, head, sizeof(head), &slice,
						  &slice_len);

		ck_assert_int_eq(hlen, (int)sizeof(head));
		ck_assert_int_eq(hlen + (int)slice_len, len);
		ck_assert_int_eq(memcmp(dgram, head, sizeof(head)), 0);
		/* The slice is the value's own bytes, not a copy. */
		ck_assert_ptr_eq(slice, value + (size_t)i * wire_chunk_stride(262144, count));
		ck_assert_int_eq(memcmp(dgram + hlen, slice, slice_len), 0);
	}
	/* A buffer one byte short of the head, and bad indexes, are refused. */
	ck_assert_int_eq(wire_chunk_encode_head(&whole, 0, count, head, sizeof(head) - 1, &slice,
						&slice_len),
			 -EMSGSIZE);
	ck_assert_int_eq(
	    wire_chunk_encode_head(&whole, count, count, head, sizeof(head), &slice, &slice_len),
	    -EINVAL);
}
END_TEST

START_TEST(small_values_are_not_chunked)
{
	struct wire_msg m = put_of(1500 - 28 - 48 - 3);
	uint16_t count = 9;

	ck_assert(!wire_chunk_needed(&m, MTU, &count)); /* exactly one datagram */
	ck_assert_uint_eq(count, 0);
	m.val_len++;
	ck_assert(wire_chunk_needed(&m, MTU, &count));
	ck_assert_uint_eq(count, 2);
	/* A key that leaves no room for a chunk: needed, but count 0. */
	ck_assert_uint_eq(wire_chunk_room(576, 1024), 0);
	ck_assert_uint_eq(wire_chunk_room(1500, 1024), 1500 - 28 - 48 - 8 - 1024);
}
END_TEST

START_TEST(documented_bytes)
{
	struct wire_msg m = put_of(10);
	int len;

	memcpy(value, "0123456789", 10);
	/* 10 bytes in 3 chunks: stride 4, slices 4, 4, 2. */
	len = wire_chunk_encode(&m, 2, 3, dgram, sizeof(dgram));
	ck_assert_int_eq(len, WIRE_HDR_LEN + 3 + 8 + 2);
	ck_assert_uint_eq(wire_get16(dgram + WIRE_OFF_FLAGS), WIRE_F_CHUNK);
	ck_assert_uint_eq(wire_get32(dgram + WIRE_OFF_VAL_LEN), 10);
	static const uint8_t want[] = {0, 0, 0, 10, 0, 2, 0, 3, '8', '9'};
	ck_assert_int_eq(memcmp(dgram + WIRE_HDR_LEN + 3, want, sizeof(want)), 0);
	ck_assert_int_eq(wire_chunk_encode(&m, 3, 3, dgram, sizeof(dgram)), -EINVAL);
	ck_assert_int_eq(wire_chunk_encode(&m, 0, 1, dgram, sizeof(dgram)), -EINVAL);
	ck_assert_int_eq(wire_chunk_encode(&m, 0, 11, dgram, sizeof(dgram)), -EINVAL);
	ck_assert_int_eq(wire_chunk_encode(&m, 0, 3, dgram, 40), -EMSGSIZE);
}
END_TEST

/* Decode a chunk whose header is {total, index, count} and whose slice is len bytes. */
static enum wire_chunk_error decode_hdr(uint32_t total, uint16_t index, uint16_t count,
					uint32_t len)
{
	static uint8_t v[64];
	struct wire_msg m = put_of(WIRE_CHUNK_HDR_LEN + len);
	struct wire_chunk c;

	wire_put32(v, total);
	wire_put16(v + 4, index);
	wire_put16(v + 6, count);
	m.value = v;
	return wire_chunk_decode(&m, &c);
}

START_TEST(bad_headers_are_refused)
{
	struct wire_msg m = put_of(7);
	struct wire_chunk c;

	ck_assert_int_eq(wire_chunk_decode(&m, &c), WIRE_CHUNK_ERR_SHORT);
	ck_assert_int_eq(decode_hdr(10, 0, 3, 4), WIRE_CHUNK_OK);
	ck_assert_int_eq(decode_hdr(10, 2, 3, 2), WIRE_CHUNK_OK);
	ck_assert_int_eq(decode_hdr(0, 0, 3, 4), WIRE_CHUNK_ERR_TOTAL);
	ck_assert_int_eq(decode_hdr(WIRE_CHUNK_MAX_TOTAL + 1, 0, 3, 4), WIRE_CHUNK_ERR_TOTAL);
	ck_assert_int_eq(decode_hdr(10, 0, 1, 10), WIRE_CHUNK_ERR_COUNT);
	ck_assert_int_eq(decode_hdr(10, 0, 11, 1), WIRE_CHUNK_ERR_COUNT);
	/* 10 bytes in 9 chunks: stride 2, and chunk 5 would start at byte 10. */
	ck_assert_int_eq(decode_hdr(10, 0, 9, 2), WIRE_CHUNK_ERR_COUNT);
	ck_assert_int_eq(decode_hdr(10, 3, 3, 4), WIRE_CHUNK_ERR_INDEX);
	ck_assert_int_eq(decode_hdr(10, 65535, 3, 4), WIRE_CHUNK_ERR_INDEX);
	ck_assert_int_eq(decode_hdr(10, 0, 3, 3), WIRE_CHUNK_ERR_LENGTH);
	ck_assert_int_eq(decode_hdr(10, 2, 3, 4), WIRE_CHUNK_ERR_LENGTH);
	ck_assert_str_eq(wire_chunk_error_name(WIRE_CHUNK_ERR_DUPLICATE), "chunk_duplicate");
	ck_assert_str_eq(wire_chunk_error_name((enum wire_chunk_error)99), "?");
}
END_TEST

START_TEST(set_refuses_duplicates_and_other_ops)
{
	struct wire_msg whole = put_of(3000), got;
	struct wire_chunk c, other;
	struct wire_chunk_set set;
	int len;

	fill();
	len = wire_chunk_encode(&whole, 1, 3, dgram, sizeof(dgram));
	ck_assert_int_eq(wire_decode(dgram, (size_t)len, &got), WIRE_OK);
	ck_assert_int_eq(wire_chunk_decode(&got, &c), WIRE_CHUNK_OK);
	ck_assert_int_eq(wire_chunk_set_init(&set, &c, 42, 16), 0);
	ck_assert_uint_eq(wire_chunk_set_bytes(&c, 16), 16 + 3000 + 8);
	ck_assert_int_eq(wire_chunk_set_add(&set, &c, 42), WIRE_CHUNK_OK);
	ck_assert_int_eq(wire_chunk_set_add(&set, &c, 42), WIRE_CHUNK_ERR_DUPLICATE);
	ck_assert_int_eq(wire_chunk_set_add(&set, &c, 43), WIRE_CHUNK_ERR_MISMATCH);
	other = c;
	other.count = 4;
	ck_assert_int_eq(wire_chunk_set_add(&set, &other, 42), WIRE_CHUNK_ERR_MISMATCH);
	other = c;
	other.total = 3001;
	ck_assert_int_eq(wire_chunk_set_add(&set, &other, 42), WIRE_CHUNK_ERR_MISMATCH);
	ck_assert_uint_eq(set.got, 1);
	ck_assert(!wire_chunk_set_done(&set));
	/* The value lands after the lead bytes. */
	ck_assert_int_eq(memcmp(set.buf + 16 + c.offset, value + 1000, 1000), 0);
	wire_chunk_set_free(&set);
	ck_assert_ptr_null(set.buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("chunk");
	TCase *tc = tcase_create("codec");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, every_chunk_round_trips);
	tcase_add_test(tc, head_and_slice_are_the_chunk);
	tcase_add_test(tc, small_values_are_not_chunked);
	tcase_add_test(tc, documented_bytes);
	tcase_add_test(tc, bad_headers_are_refused);
	tcase_add_test(tc, set_refuses_duplicates_and_other_ops);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
