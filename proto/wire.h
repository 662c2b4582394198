/*
 * wire.h - the skewless v1 wire format (docs/design.md section 3).
 *
 * Every datagram is a fixed 48-byte big-endian header, then key bytes, then
 * value bytes. wire_decode() validates a datagram and yields a struct wire_msg
 * whose key and value point into the caller's buffer (no copy); wire_encode()
 * writes one. Both are pure functions used by the node, the agent and the
 * switch's fast path alike. Which ops exist and what they carry is the op
 * table (ops.h); the payloads of the control ops have their codecs beside
 * (payload.h, digest_codec.h, sync.h).
 */
#ifndef SKL_WIRE_H
#define SKL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

#define WIRE_MAGIC 0x5047u /* "PG" */
#define WIRE_VERSION 1
#define WIRE_HDR_LEN 48
#define WIRE_MAX_KEY 1024
#define WIRE_MAX_NODE 255 /* node ids are 1..255; 0 means "no node" */
/* Largest UDP payload of an IPv4 datagram; values are capped far lower by max_value. */
#define WIRE_MAX_DATAGRAM 65507u

/* Header field offsets, for code that patches a frame in place (the switch). */
enum wire_off {
	WIRE_OFF_MAGIC = 0,
	WIRE_OFF_VER = 2,
	WIRE_OFF_OP = 3,
	WIRE_OFF_FLAGS = 4,
	WIRE_OFF_STATUS = 6,
	WIRE_OFF_RIDERS = 7,
	WIRE_OFF_REQ_ID = 8,
	WIRE_OFF_KEYHASH = 16,
	WIRE_OFF_VERSION = 24,
	WIRE_OFF_NODE = 32,
	WIRE_OFF_LOAD = 34,
	WIRE_OFF_RET_IP = 36,
	WIRE_OFF_RET_PORT = 40,
	WIRE_OFF_KEY_LEN = 42,
	WIRE_OFF_VAL_LEN = 44,
};

/* Reply status codes: X(enum name, value, log name). */
#define WIRE_STATUSES(X)                                                                           \
	X(WIRE_ST_OK, 0, "OK")                                                                     \
	X(WIRE_ST_NOT_FOUND, 1, "NOT_FOUND")                                                       \
	X(WIRE_ST_MOVED, 2, "MOVED")                                                               \
	X(WIRE_ST_TOO_LARGE, 3, "TOO_LARGE")                                                       \
	X(WIRE_ST_BAD_REQUEST, 4, "BAD_REQUEST")                                                   \
	X(WIRE_ST_UNAVAILABLE, 5, "UNAVAILABLE")                                                   \
	X(WIRE_ST_OVERLOADED, 6, "OVERLOADED")                                                     \
	X(WIRE_ST_INTERNAL, 7, "INTERNAL")                                                         \
	X(WIRE_ST_CONFLICT, 8, "CONFLICT")

enum wire_status {
#define X(name, value, str) name = value,
	WIRE_STATUSES(X)
#undef X
	WIRE_ST_COUNT
};

/* Header flags: X(enum name, bit value, log name). */
#define WIRE_FLAGS(X)                                                                      \
	X(WIRE_F_REPLICA_READ, 0x1, "REPLICA_READ")                                        \
	X(WIRE_F_VIA_SWITCH, 0x2, "VIA_SWITCH")                                            \
	X(WIRE_F_DEBUG, 0x4, "DEBUG")                                                      \
	X(WIRE_F_REPLICATED, 0x8, "REPLICATED")                                            \
	X(WIRE_F_WRITE_THROUGH, 0x10, "WRITE_THROUGH")                                     \
	X(WIRE_F_CHUNK, 0x20, "CHUNK")

enum wire_flag {
#define X(name, value, str) name = value,
	WIRE_FLAGS(X)
#undef X
};
/* CHUNK: one chunk of an op whose value spans several datagrams (chunk.h). */
#define WIRE_F_ALL                                                                         \
	(WIRE_F_REPLICA_READ | WIRE_F_VIA_SWITCH | WIRE_F_DEBUG | WIRE_F_REPLICATED |       \
	 WIRE_F_WRITE_THROUGH | WIRE_F_CHUNK)

/* Why wire_decode() rejected a datagram: X(enum name, log name). */
#define WIRE_ERRORS(X)                                                                     \
	X(WIRE_OK, "ok")                                                                   \
	X(WIRE_ERR_SHORT, "short")                                                         \
	X(WIRE_ERR_MAGIC, "bad_magic")                                                     \
	X(WIRE_ERR_VERSION, "bad_version")                                                 \
	X(WIRE_ERR_OP, "bad_op")                                                           \
	X(WIRE_ERR_FLAGS, "bad_flags")                                                     \
	X(WIRE_ERR_STATUS, "bad_status")                                                   \
	X(WIRE_ERR_KEY_LEN, "bad_key_len")                                                 \
	X(WIRE_ERR_TRUNCATED, "truncated")                                                 \
	X(WIRE_ERR_TRAILING, "trailing_bytes")

enum wire_error {
#define X(name, str) name,
	WIRE_ERRORS(X)
#undef X
	WIRE_ERR_COUNT
};

/* A decoded datagram. key and value point into the decoded buffer. */
struct wire_msg {
	uint8_t op; /* including WIRE_REPLY for replies */
	uint16_t flags;
	uint8_t status;
	/* A PUT from a switch: the writes of the key it supersedes (group commit
	 * at the switch), whose req_ids follow the value (rider_ids, 8 bytes
	 * each, oldest first); its reply: how many of them the node gave versions. */
	uint8_t riders;
	uint64_t req_id;
	uint64_t keyhash;
	uint64_t version;
	uint16_t node;
	uint16_t load;
	uint32_t ret_ip; /* host byte order */
	uint16_t ret_port;
	uint16_t key_len;
	uint32_t val_len;
	const uint8_t *key;
	const uint8_t *value;
	const uint8_t *rider_ids; /* riders x 8 bytes after the value, in a PUT request */
};

/* Bytes of req_ids after the value: riders x 8 in a PUT request, none elsewhere. */
static inline size_t wire_rider_bytes(const struct wire_msg *msg)
{
	return msg->op == WIRE_OP_PUT ? (size_t)msg->riders * 8 : 0;
}

/* Bytes wire_encode() will write for msg. */
static inline size_t wire_len(const struct wire_msg *msg)
{
	return WIRE_HDR_LEN + (size_t)msg->key_len + msg->val_len + wire_rider_bytes(msg);
}

/*
 * Write msg (header, key, value) into buf of size cap. Returns the number of
 * bytes written, or -EMSGSIZE if it does not fit, or -EINVAL if msg itself is
 * not valid (key_len out of range, unknown op, NULL key or value with a length).
 */
int wire_encode(const struct wire_msg *msg, void *buf, size_t cap);

/* Log names; never NULL ("?" for unknown values). wire_op_name() is in ops.h. */
const char *wire_status_name(uint8_t status);
const char *wire_error_name(enum wire_error err);
/* Writes "REPLICA_READ|DEBUG" style names of flags into buf; returns buf. */
char *wire_flags_str(uint16_t flags, char *buf, size_t cap);

/* Parse a status log name ("NOT_FOUND"); returns -1 when unknown. */
int wire_status_parse(const char *name);

/* Big-endian field access, shared with code that patches frames in place. */
static inline uint16_t wire_get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t wire_get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t wire_get64(const uint8_t *p)
{
	return ((uint64_t)wire_get32(p) << 32) | wire_get32(p + 4);
}
static inline void wire_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void wire_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline void wire_put64(uint8_t *p, uint64_t v)
{
	wire_put32(p, (uint32_t)(v >> 32));
	wire_put32(p + 4, (uint32_t)v);
}

/*
 * Decoding is inline: the switch decodes every datagram it forwards, and a
 * call per field check costs it more than the checks do. It comes in parts:
 *   wire_decode_fixed()  the fixed checks (length, magic, version, op) and the
 *                        fields routing reads: op, flags, status, riders,
 *                        keyhash, key_len, val_len;
 *   wire_decode_rest()   the other header fields: req_id, version, node, load,
 *                        ret_ip, ret_port;
 *   wire_check_body()    flags, status, key length, body length; key, value.
 * wire_decode() is all three; wire_decode_header() the first two;
 * wire_decode_route() the first and the last, which is all the switch needs
 * to forward a client's request (it reads the rest only for other datagrams).
 */

static inline enum wire_error wire_decode_fixed(const uint8_t *p, size_t len, struct wire_msg *msg)
{
	if (len < WIRE_HDR_LEN)
		return WIRE_ERR_SHORT;
	if (wire_get16(p + WIRE_OFF_MAGIC) != WIRE_MAGIC)
		return WIRE_ERR_MAGIC;
	if (p[WIRE_OFF_VER] != WIRE_VERSION)
		return WIRE_ERR_VERSION;
	msg->op = p[WIRE_OFF_OP];
	if (!wire_op_valid(msg->op & (uint8_t)~WIRE_REPLY))
		return WIRE_ERR_OP;
	msg->flags = wire_get16(p + WIRE_OFF_FLAGS);
	msg->status = p[WIRE_OFF_STATUS];
	msg->riders = p[WIRE_OFF_RIDERS];
	msg->keyhash = wire_get64(p + WIRE_OFF_KEYHASH);
	msg->key_len = wire_get16(p + WIRE_OFF_KEY_LEN);
	msg->val_len = wire_get32(p + WIRE_OFF_VAL_LEN);
	return WIRE_OK;
}

/* The header fields wire_decode_fixed() leaves, from a header it accepted. */
static inline void wire_decode_rest(const void *buf, struct wire_msg *msg)
{
	const uint8_t *p = buf;

	msg->req_id = wire_get64(p + WIRE_OFF_REQ_ID);
	msg->version = wire_get64(p + WIRE_OFF_VERSION);
	msg->node = wire_get16(p + WIRE_OFF_NODE);
	msg->load = wire_get16(p + WIRE_OFF_LOAD);
	msg->ret_ip = wire_get32(p + WIRE_OFF_RET_IP);
	msg->ret_port = wire_get16(p + WIRE_OFF_RET_PORT);
}

/* Validate the body of buf[0..len), whose fixed header *msg holds; set key and value. */
static inline enum wire_error wire_check_body(const uint8_t *p, size_t len, struct wire_msg *msg)
{
	uint64_t body;

	if (msg->flags & ~WIRE_F_ALL)
		return WIRE_ERR_FLAGS;
	if ((msg->op & WIRE_REPLY) && msg->status >= WIRE_ST_COUNT)
		return WIRE_ERR_STATUS;
	/* One compare for a key of 1..WIRE_MAX_KEY bytes, the common case. */
	if ((unsigned)msg->key_len - 1 >= WIRE_MAX_KEY &&
	    (msg->key_len != 0 || !wire_op_is_keyless(msg->op)))
		return WIRE_ERR_KEY_LEN;
	/* 64-bit sums: key_len + val_len cannot wrap, whatever val_len says. */
	body = (uint64_t)msg->key_len + (uint64_t)msg->val_len + wire_rider_bytes(msg);
	if ((uint64_t)len - WIRE_HDR_LEN != body)
		return (uint64_t)len - WIRE_HDR_LEN < body ? WIRE_ERR_TRUNCATED : WIRE_ERR_TRAILING;
	msg->key = msg->key_len ? p + WIRE_HDR_LEN : NULL;
	msg->value = msg->val_len ? p + WIRE_HDR_LEN + msg->key_len : NULL;
	msg->rider_ids =
	    wire_rider_bytes(msg) ? p + WIRE_HDR_LEN + msg->key_len + msg->val_len : NULL;
	return WIRE_OK;
}

/*
 * Check only the fixed header (magic, version, op) of buf and fill every
 * header field (key and value NULL). A datagram whose header is readable but
 * whose body is bad can still be answered BAD_REQUEST.
 */
static inline enum wire_error wire_decode_header(const void *buf, size_t len, struct wire_msg *msg)
{
	enum wire_error err = wire_decode_fixed(buf, len, msg);

	if (err != WIRE_OK)
		return err;
	wire_decode_rest(buf, msg);
	msg->key = NULL;
	msg->value = NULL;
	msg->rider_ids = NULL;
	return WIRE_OK;
}

/* Validate buf[0..len) and fill *msg. Returns WIRE_OK or the reason it failed. */
static inline enum wire_error wire_decode(const void *buf, size_t len, struct wire_msg *msg)
{
	enum wire_error err = wire_decode_header(buf, len, msg);

	if (err != WIRE_OK)
		return err;
	return wire_check_body(buf, len, msg);
}

/*
 * wire_decode()'s checks, the same verdict, but only the fields of
 * wire_decode_fixed() and key and value: req_id, version, node, load,
 * ret_ip and ret_port are left as they were (wire_decode_rest() reads them).
 * On an error, key and value are left too.
 */
static inline enum wire_error wire_decode_route(const void *buf, size_t len, struct wire_msg *msg)
{
	enum wire_error err = wire_decode_fixed(buf, len, msg);

	if (err != WIRE_OK)
		return err;
	return wire_check_body(buf, len, msg);
}

#endif
