/*
 * test_auth.c - the MAC of control datagrams (proto/auth.c): which ops carry
 * one, HMAC-SHA256 against RFC 4231's vectors, and the trailer check
 * (missing, wrong, wrong key, any byte changed, odd lengths).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "keyhash.h"
#include "wire.h"

static struct wire_key test_key(uint8_t seed)
{
	struct wire_key k = {.len = WIRE_KEY_MIN_LEN};

	for (int i = 0; i < WIRE_KEY_MIN_LEN; i++)
		k.bytes[i] = (uint8_t)(seed + i * 7);
	return k;
}

/* A REPLICATE datagram into buf; returns its length without a MAC. */
static size_t replicate(uint8_t *buf, size_t cap)
{
	static const uint8_t payload[] = {0, 1, 0, 2, 0, 3};
	struct wire_msg m = {.op = WIRE_OP_REPLICATE,
			     .flags = WIRE_F_VIA_SWITCH,
			     .keyhash = keyhash("hot", 3),
			     .version = 42,
			     .node = 2,
			     .key = (const uint8_t *)"hot",
			     .key_len = 3,
			     .value = payload,
			     .val_len = sizeof(payload)};
	int n = wire_encode(&m, buf, cap);

	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

START_TEST(control_ops_are_those_no_agent_sends)
{
	static const uint8_t control[] = {WIRE_OP_RC_REQ,      WIRE_OP_RC_ACK, WIRE_OP_REPLICATE,
					  WIRE_OP_UNREPLICATE, WIRE_OP_DIGEST, WIRE_OP_SYNC};
	static const uint8_t data[] = {WIRE_OP_GET, WIRE_OP_PUT, WIRE_OP_DEL, WIRE_OP_PROBE,
				       WIRE_OP_HINT};

	for (size_t i = 0; i < sizeof(control); i++) {
		ck_assert(wire_op_authenticated(control[i]));
		ck_assert(wire_op_authenticated((uint8_t)(control[i] | WIRE_REPLY)));
	}
	for (size_t i = 0; i < sizeof(data); i++) {
		ck_assert(!wire_op_authenticated(data[i]));
		ck_assert(!wire_op_authenticated((uint8_t)(data[i] | WIRE_REPLY)));
	}
	for (unsigned op = 0; op < 64; op++)
		ck_assert_int_eq(wire_op_authenticated((uint8_t)op),
				 wire_op_valid((uint8_t)op) &&
				     !(wire_op_senders((uint8_t)op) & WIRE_BY_AGENT));
	ck_assert(!wire_op_authenticated(0x7f));
}
END_TEST

/* RFC 4231 test cases 1 and 2: the library's HMAC-SHA256, not a look-alike. */
START_TEST(hmac_sha256_matches_rfc4231)
{
	struct wire_key k = {.len = 20};
	uint8_t mac[WIRE_MAC_LEN];
	static const uint8_t want1[WIRE_MAC_LEN] = {0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53,
						    0x5c, 0xa8, 0xaf, 0xce, 0xaf, 0x0b, 0xf1, 0x2b,
						    0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83, 0x3d, 0xa7,
						    0x26, 0xe9, 0x37, 0x6c, 0x2e, 0x32, 0xcf, 0xf7};
	static const uint8_t want2[WIRE_MAC_LEN] = {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e,
						    0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
						    0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83,
						    0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};

	memset(k.bytes, 0x0b, 20);
	ck_assert_int_eq(wire_mac(&k, "Hi There", 8, mac), 0);
	ck_assert_int_eq(memcmp(mac, want1, sizeof(mac)), 0);
	k.len = 4;
	memcpy(k.bytes, "Jefe", 4);
	ck_assert_int_eq(wire_mac(&k, "what do ya want for nothing?", 28, mac), 0);
	ck_assert_int_eq(memcmp(mac, want2, sizeof(mac)), 0);
}
END_TEST

START_TEST(sealed_datagram_checks_and_strips)
{
	struct wire_key k = test_key(1), other = test_key(2);
	uint8_t buf[256];
	size_t len = replicate(buf, sizeof(buf)), body = 0;
	struct wire_msg m;

	/* Without a trailer: missing; the codec alone takes it as it always did. */
	ck_assert_int_eq(wire_auth_check(&k, buf, len, &body), WIRE_AUTH_MISSING);
	ck_assert_int_eq(wire_decode(buf, len, &m), WIRE_OK);

	ck_assert_int_eq(wire_seal(&k, buf, len), (int)(len + WIRE_MAC_LEN));
	ck_assert_int_eq(wire_auth_check(&k, buf, len + WIRE_MAC_LEN, &body), WIRE_AUTH_OK);
	ck_assert_uint_eq(body, len);
	ck_assert_int_eq(wire_decode(buf, body, &m), WIRE_OK);
	ck_assert_uint_eq(m.version, 42);
	/* A receiver without a key sees trailing bytes, never a different message. */
	ck_assert_int_eq(wire_decode(buf, len + WIRE_MAC_LEN, &m), WIRE_ERR_TRAILING);

	/* Another key, or any byte changed (header, key, value or MAC): bad. */
	ck_assert_int_eq(wire_auth_check(&other, buf, len + WIRE_MAC_LEN, &body), WIRE_AUTH_BAD);
	for (size_t i = 0; i < len + WIRE_MAC_LEN; i++) {
		/* The length fields decide where the MAC is: changing them is a length error. */
		if (i >= WIRE_OFF_KEY_LEN && i < WIRE_HDR_LEN)
			continue;
		buf[i] ^= 0x20;
		ck_assert_int_eq(wire_auth_check(&k, buf, len + WIRE_MAC_LEN, &body),
				 WIRE_AUTH_BAD);
		buf[i] ^= 0x20;
	}
	ck_assert_int_eq(wire_auth_check(&k, buf, len + WIRE_MAC_LEN, &body), WIRE_AUTH_OK);

	/* Lengths that are neither form are left to the decoder. */
	ck_assert_int_eq(wire_auth_check(&k, buf, len + WIRE_MAC_LEN - 1, &body), WIRE_AUTH_LENGTH);
	ck_assert_int_eq(wire_auth_check(&k, buf, len + WIRE_MAC_LEN + 1, &body), WIRE_AUTH_LENGTH);
	ck_assert_int_eq(wire_auth_check(&k, buf, len - 1, &body), WIRE_AUTH_LENGTH);
	ck_assert_int_eq(wire_auth_check(&k, buf, 20, &body), WIRE_AUTH_LENGTH);
	wire_put32(buf + WIRE_OFF_VAL_LEN, 0xffffffffu);
	ck_assert_int_eq(wire_auth_check(&k, buf, len + WIRE_MAC_LEN, &body), WIRE_AUTH_LENGTH);
	ck_assert_str_eq(wire_auth_name(WIRE_AUTH_BAD), "auth_bad");
	ck_assert_str_eq(wire_auth_name(WIRE_AUTH_MISSING), "auth_missing");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("mac");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, control_ops_are_those_no_agent_sends);
	tcase_add_test(tc, hmac_sha256_matches_rfc4231);
	tcase_add_test(tc, sealed_datagram_checks_and_strips);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
