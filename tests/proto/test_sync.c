/*
 * test_sync.c - the SYNC payload codec (proto/sync.c): round trips of every
 * kind, every truncation and trailing byte, every bad field, the encoder's
 * capacity.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"

static size_t sample_datagram(uint8_t *buf, uint8_t kind)
{
	struct sync_msg h = {.kind = kind,
			     .sender = 2,
			     .incarnation = 7,
			     .seq = 9,
			     .echo_incarnation = 5,
			     .ts_us = 123456789,
			     .echo_ts_us = 1111,
			     .confirmed = 3,
			     .ring_epoch = 2ull << 20 | 5,
			     .ring_ready = 2ull << 20 | 9,
			     .ring_prev = 1,
			     .window_id = 42,
			     .samples = 1000,
			     .owned_version = 4,
			     .owned_total = 3,
			     .owned_first = 1};
	struct sync_enc e;
	struct sync_score s = {.node = 3, .health = 77, .alive = 1, .age_ms = 250};

	ck_assert_int_eq(sync_enc_begin(&e, buf, 2048, &h), 0);
	if (kind == SYNC_K_SCORES) {
		ck_assert_int_eq(sync_enc_score(&e, &s), 0);
		s.node = 4, s.alive = 0, s.health = 0, s.age_ms = SYNC_AGE_NEVER;
		ck_assert_int_eq(sync_enc_score(&e, &s), 0);
	} else {
		ck_assert_int_eq(
		    sync_enc_cand(&e, 0x1122334455667788ull, 17, (const uint8_t *)"key:1", 5), 0);
		ck_assert_int_eq(sync_enc_cand(&e, 0x99, 3, (const uint8_t *)"k2", 2), 0);
	}
	return sync_enc_end(&e);
}

START_TEST(codec_round_trips_every_kind)
{
	uint8_t buf[2048];
	struct sync_msg m;
	struct sync_score s;
	struct sync_cand c;
	size_t off = 0, len;

	len = sample_datagram(buf, SYNC_K_SCORES);
	ck_assert_uint_eq(len, SYNC_HDR_LEN + 2 * SYNC_SCORE_LEN);
	ck_assert_int_eq(sync_decode(buf, len, &m), SYNC_OK);
	ck_assert_uint_eq(m.sender, 2);
	ck_assert_uint_eq(m.incarnation, 7);
	ck_assert_uint_eq(m.seq, 9);
	ck_assert_uint_eq(m.echo_incarnation, 5);
	ck_assert_uint_eq(m.ts_us, 123456789);
	ck_assert_uint_eq(m.echo_ts_us, 1111);
	ck_assert_uint_eq(m.ring_epoch, 2ull << 20 | 5);
	ck_assert_uint_eq(m.ring_ready, 2ull << 20 | 9);
	ck_assert_uint_eq(m.ring_prev, 1);
	ck_assert_uint_eq(m.confirmed, 3);
	ck_assert_uint_eq(m.count, 2);
	sync_msg_score(&m, 0, &s);
	ck_assert(s.node == 3 && s.health == 77 && s.alive && s.age_ms == 250);
	sync_msg_score(&m, 1, &s);
	ck_assert(s.node == 4 && s.health == 0 && !s.alive && s.age_ms == SYNC_AGE_NEVER);

	len = sample_datagram(buf, SYNC_K_CANDS);
	ck_assert_int_eq(sync_decode(buf, len, &m), SYNC_OK);
	ck_assert_uint_eq(m.window_id, 42);
	ck_assert_uint_eq(m.samples, 1000);
	sync_msg_cand(&m, &off, &c);
	ck_assert(c.keyhash == 0x1122334455667788ull && c.count == 17 && c.key_len == 5);
	ck_assert(!memcmp(c.key, "key:1", 5));
	sync_msg_cand(&m, &off, &c);
	ck_assert(c.keyhash == 0x99 && c.count == 3 && c.key_len == 2 && !memcmp(c.key, "k2", 2));
	ck_assert_uint_eq(off, m.items_len);

	len = sample_datagram(buf, SYNC_K_OWNED);
	ck_assert_int_eq(sync_decode(buf, len, &m), SYNC_OK);
	ck_assert(m.owned_version == 4 && m.owned_total == 3 && m.owned_first == 1);
	off = 0;
	sync_msg_cand(&m, &off, &c);
	ck_assert(c.keyhash == 0x1122334455667788ull && c.count == 0 && c.key_len == 5);
}
END_TEST

START_TEST(codec_rejects_every_truncation_and_trailing_bytes)
{
	for (uint8_t kind = 0; kind < SYNC_K_COUNT; kind++) {
		uint8_t buf[2048];
		struct sync_msg m;
		size_t len = sample_datagram(buf, kind);

		for (size_t cut = 0; cut < len; cut++) {
			enum sync_error e = sync_decode(buf, cut, &m);

			ck_assert_msg(e == SYNC_ERR_SHORT || e == SYNC_ERR_TRUNCATED ||
					  (cut == 0 && e == SYNC_ERR_SHORT),
				      "kind %u cut at %zu: %s", kind, cut, sync_error_name(e));
		}
		buf[len] = 0;
		ck_assert_int_eq(sync_decode(buf, len + 1, &m), SYNC_ERR_TRAILING);
	}
}
END_TEST

START_TEST(codec_rejects_bad_fields)
{
	uint8_t buf[2048], bad[2048];
	struct sync_msg m;
	size_t len = sample_datagram(buf, SYNC_K_SCORES), clen, olen;
	uint8_t cbuf[2048], obuf[2048];

#define BAD(base, blen, off, val, err)                                                             \
	do {                                                                                       \
		memcpy(bad, base, blen);                                                           \
		bad[off] = (uint8_t)(val);                                                         \
		ck_assert_int_eq(sync_decode(bad, blen, &m), err);                                 \
	} while (0)
	BAD(buf, len, 0, 3, SYNC_ERR_LAYOUT);
	BAD(buf, len, 0, 1, SYNC_ERR_LAYOUT); /* the layout before the ring fields */
	BAD(buf, len, 1, 3, SYNC_ERR_KIND);
	/* A ring ready for less than it routes by. */
	BAD(buf, len, 44 + 7, 10, SYNC_ERR_RING);
	memcpy(bad, buf, len);
	memset(bad + 2, 0, 2);
	ck_assert_int_eq(sync_decode(bad, len, &m), SYNC_ERR_SENDER);
	memcpy(bad, buf, len);
	memset(bad + 4, 0, 4);
	ck_assert_int_eq(sync_decode(bad, len, &m), SYNC_ERR_INCARNATION);
	memcpy(bad, buf, len);
	memset(bad + 8, 0, 4);
	ck_assert_int_eq(sync_decode(bad, len, &m), SYNC_ERR_SEQ);
	BAD(buf, len, 43, 1, SYNC_ERR_RESERVED);
	/* scores: node 0 and > 255, health 101, unknown flag bits */
	memcpy(bad, buf, len);
	memset(bad + SYNC_HDR_LEN, 0, 2);
	ck_assert_int_eq(sync_decode(bad, len, &m), SYNC_ERR_NODE);
	BAD(buf, len, SYNC_HDR_LEN, 1, SYNC_ERR_NODE);
	BAD(buf, len, SYNC_HDR_LEN + 2, 101, SYNC_ERR_HEALTH);
	BAD(buf, len, SYNC_HDR_LEN + 3, 2, SYNC_ERR_FLAGS);
	/* candidates: window 0, key length 0 and > 256 */
	clen = sample_datagram(cbuf, SYNC_K_CANDS);
	memcpy(bad, cbuf, clen);
	memset(bad + SYNC_HDR_LEN, 0, 8);
	ck_assert_int_eq(sync_decode(bad, clen, &m), SYNC_ERR_RANGE);
	memcpy(bad, cbuf, clen);
	memset(bad + SYNC_HDR_LEN + SYNC_CAND_HDR_LEN + 12, 0, 2);
	ck_assert_int_eq(sync_decode(bad, clen, &m), SYNC_ERR_KEY_LEN);
	BAD(cbuf, clen, SYNC_HDR_LEN + SYNC_CAND_HDR_LEN + 12, 2, SYNC_ERR_KEY_LEN);
	/* owned: version 0, items beyond total */
	olen = sample_datagram(obuf, SYNC_K_OWNED);
	memcpy(bad, obuf, olen);
	memset(bad + SYNC_HDR_LEN, 0, 8);
	ck_assert_int_eq(sync_decode(bad, olen, &m), SYNC_ERR_RANGE);
	BAD(obuf, olen, SYNC_HDR_LEN + 9, 2, SYNC_ERR_RANGE); /* total 2 < first 1 + 2 items */
#undef BAD
}
END_TEST

START_TEST(encoder_stops_at_capacity)
{
	uint8_t buf[SYNC_HDR_LEN + 2 * SYNC_SCORE_LEN + 3];
	struct sync_msg h = {.kind = SYNC_K_SCORES, .sender = 1, .incarnation = 1, .seq = 1};
	struct sync_score s = {.node = 1, .health = 5};
	struct sync_enc e;

	ck_assert_int_eq(sync_enc_begin(&e, buf, sizeof(buf), &h), 0);
	ck_assert_int_eq(sync_enc_score(&e, &s), 0);
	ck_assert_int_eq(sync_enc_score(&e, &s), 0);
	ck_assert_int_eq(sync_enc_score(&e, &s), -EMSGSIZE);
	ck_assert_int_eq(sync_decode(buf, sync_enc_end(&e), &(struct sync_msg){0}), SYNC_OK);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sync");
	TCase *t = tcase_create("codec");
	SRunner *sr;
	int failed;

	tcase_add_test(t, codec_round_trips_every_kind);
	tcase_add_test(t, codec_rejects_every_truncation_and_trailing_bytes);
	tcase_add_test(t, codec_rejects_bad_fields);
	tcase_add_test(t, encoder_stops_at_capacity);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
