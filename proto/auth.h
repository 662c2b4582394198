/*
 * auth.h - the MAC of control datagrams (docs/protocol.md, "Authentication").
 *
 * With a cluster key configured, every control datagram (a request of an op
 * no agent sends, by the op table's `by` column, or the reply to one) carries
 * a 32-byte HMAC-SHA256 trailer after its value, computed over the header, the
 * key bytes and the value. Data ops (GET, PUT, DEL, PROBE, HINT and their
 * replies) never carry one: agents hold no key. The codec (wire.h) is
 * untouched: a receiver with a key checks and strips the trailer before it
 * decodes; one without a key never sees a trailer from a sender without one.
 * The MAC is OpenSSL's HMAC() with SHA-256; its check is constant-time
 * (CRYPTO_memcmp()).
 */
#ifndef SKL_AUTH_H
#define SKL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops.h"

#define WIRE_MAC_LEN	 32 /* HMAC-SHA256 */
#define WIRE_KEY_MIN_LEN 32 /* bytes: a key shorter than the hash's output is refused */
#define WIRE_KEY_MAX_LEN 64 /* bytes: SHA-256's block; HMAC would hash a longer key first */

/* The cluster's shared key. */
struct wire_key {
	uint8_t bytes[WIRE_KEY_MAX_LEN];
	uint8_t len; /* WIRE_KEY_MIN_LEN..WIRE_KEY_MAX_LEN */
};

/* Ops that are control messages: no agent sends them (the op table's `by` column). */
#define WIRE_OP_CONTROL_MSG_(name, value, str, by, attrs, sw, lane)                                \
	WIRE_OP_IF_(!((by)&WIRE_BY_AGENT), value)
#define WIRE_OPS_AUTHENTICATED (0ull WIRE_OPS(WIRE_OP_CONTROL_MSG_))

/* Whether a datagram of op (request or reply) is a control message, MAC'd under a key. */
static inline bool wire_op_authenticated(uint8_t op)
{
	op &= (uint8_t)~WIRE_REPLY;
	return op < 64 && ((WIRE_OPS_AUTHENTICATED >> op) & 1);
}

/* What wire_auth_check() found: X(enum name, log name). */
#define WIRE_AUTH_RESULTS(X)                                                                       \
	X(WIRE_AUTH_OK, "ok")		     /* the trailer is the MAC of what precedes it */      \
	X(WIRE_AUTH_MISSING, "auth_missing") /* exactly header + key + value: no trailer */        \
	X(WIRE_AUTH_BAD, "auth_bad")	     /* a trailer that is not the MAC */                   \
	X(WIRE_AUTH_LENGTH, "auth_length")   /* neither length: left to wire_decode() to name */

enum wire_auth {
#define X(name, str) name,
	WIRE_AUTH_RESULTS(X)
#undef X
};

const char *wire_auth_name(enum wire_auth r);

/*
 * The MAC of buf[0..len) under key into mac. 0, or -EIO when the library
 * fails (it does not for a valid key).
 */
int wire_mac(const struct wire_key *key, const void *buf, size_t len, uint8_t mac[WIRE_MAC_LEN]);

/*
 * Append the MAC of buf[0..len) at buf + len (the caller leaves WIRE_MAC_LEN
 * bytes of room). Returns the new length, len + WIRE_MAC_LEN, or -EIO.
 */
int wire_seal(const struct wire_key *key, uint8_t *buf, size_t len);

/*
 * Check the trailer of a datagram whose header wire_decode_header() read
 * (key_len, val_len): WIRE_AUTH_OK with *body_len = the datagram without
 * its trailer, to be decoded; WIRE_AUTH_MISSING, WIRE_AUTH_BAD; or
 * WIRE_AUTH_LENGTH when len is neither header + body nor that plus a trailer.
 */
enum wire_auth wire_auth_check(const struct wire_key *key, const void *buf, size_t len,
			       size_t *body_len);

#endif
