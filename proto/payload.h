/*
 * payload.h - codecs of the replication and hint ops (docs/protocol.md
 * "Control ops"): REPLICATE's and RC_REQ's values, and the header fields
 * RC_ACK and HINT carry in place of a value; and CAS's request prefix and
 * reply value (docs/protocol.md "Data ops"). DIGEST's payload is in
 * digest_codec.h, SYNC's in sync.h.
 *
 * Every decoder takes a datagram already passed through wire_decode() (so
 * the header and the lengths are sound), checks that it is the op it
 * decodes and that every payload field is in range, and returns 0 or
 * -EBADMSG; nothing past msg->value + msg->val_len is read. Encoders
 * return the bytes written, -EINVAL for a field no decoder would accept, or
 * -EMSGSIZE when cap is too small. Pure functions, no allocation.
 */
#ifndef SKL_PAYLOAD_H
#define SKL_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* ---- REPLICATE (switch -> home): be16 owner switch id, then 1..128 be16 target node ids. ---- */

#define WIRE_REPL_MAX_TARGETS  128
#define WIRE_REPLICATE_MAX_LEN (2 + 2 * WIRE_REPL_MAX_TARGETS)

struct wire_replicate {
	uint16_t owner; /* the switch that asks: RC_ACKs go to it */
	uint8_t ntargets;
	uint16_t
	    targets[WIRE_REPL_MAX_TARGETS]; /* node ids, as sent (the home skips unknown ones) */
};

int wire_replicate_encode(const struct wire_replicate *r, uint8_t *buf, size_t cap);
int wire_replicate_decode(const struct wire_msg *msg, struct wire_replicate *r);

/*
 * ---- RC_REQ (home -> replica): an 8-byte prefix {be16 owner, u8 kind, u8 0,
 * be32 ttl_ms remaining}, then the value bytes (none for a tombstone). The
 * header's version (not 0) is the copy's version.
 */

#define WIRE_RC_PREFIX_LEN 8

enum wire_copy_kind { WIRE_COPY_VALUE = 0, WIRE_COPY_TOMBSTONE = 1 };

struct wire_rc_req {
	uint16_t owner;	      /* the owner switch named in the REPLICATE */
	uint8_t kind;	      /* enum wire_copy_kind */
	uint32_t ttl_ms;      /* remaining time to live; 0: none */
	const uint8_t *value; /* decode: points into the datagram; NULL when value_len is 0 */
	uint32_t value_len;
};

/*
 * Write the prefix into buf (the value follows it: callers read the value
 * straight into buf + WIRE_RC_PREFIX_LEN). r->value is not read. Returns
 * WIRE_RC_PREFIX_LEN or a negative errno.
 */
int wire_rc_req_encode_prefix(const struct wire_rc_req *r, uint8_t *buf, size_t cap);
int wire_rc_req_decode(const struct wire_msg *msg, struct wire_rc_req *r);

/*
 * ---- RC_ACK (replica -> owner switch): key; version = the version the
 * replica holds (0: none); node = the replica's id, 1..255; no value.
 */
struct wire_rc_ack {
	uint64_t version;
	uint16_t node;
};

/* Fill msg (op, version, node) for an RC_ACK; the caller sets key, keyhash, req_id, load. */
int wire_rc_ack_encode(const struct wire_rc_ack *a, struct wire_msg *msg);
int wire_rc_ack_decode(const struct wire_msg *msg, struct wire_rc_ack *a);

/*
 * ---- HINT (agent -> switch): key, no value. The reply: node = the node a
 * read goes to now (0 when the switch knows none), version = the directory's
 * completed version, REPLICATED when the key is in the directory; no value.
 */
struct wire_hint {
	uint16_t node;
	uint64_t version;
	uint8_t in_directory; /* 0 or 1: the REPLICATED flag */
};

/* Fill msg's op, node, version and flags for a HINT reply (msg->status is the caller's). */
int wire_hint_reply_encode(const struct wire_hint *h, struct wire_msg *msg);
int wire_hint_reply_decode(const struct wire_msg *msg, struct wire_hint *h);

/*
 * ---- CAS (agent -> home node): a write at the home that applies only if a
 * condition on the key's live value holds, checked and applied under the
 * key's lock. The value is a 12-byte prefix {u8 cond, u8 action, u8 ttl
 * mode, u8 0, be64 ttl_ms}, then the new value (SET only). The header's
 * version is the version cond VERSION expects (0: no live value).
 *
 * The reply: OK (applied; version = the version written, or the one read
 * for READ), NOT_FOUND (no live value, and cond or action needs one),
 * CONFLICT (a live value of another version, or one where none was
 * expected: version = the live one's). OK and CONFLICT replies of a live
 * value carry 8 bytes: be64 the ms it has left to live (0: no expiry); an
 * OK READ's reply then the value itself, so that a read-modify-write reads
 * and writes at the home alone.
 */
#define WIRE_CAS_PREFIX_LEN 12
#define WIRE_CAS_REPLY_LEN  8

enum wire_cas_cond {
	WIRE_CAS_ANY = 0,     /* no condition */
	WIRE_CAS_VERSION = 1, /* the live value is at the header's version (0: there is none) */
	WIRE_CAS_LIVE = 2,    /* a live value exists, any version */
};

enum wire_cas_action {
	WIRE_CAS_SET = 0,    /* write the value */
	WIRE_CAS_DEL = 1,    /* write a tombstone */
	WIRE_CAS_EXPIRE = 2, /* keep the value, a new version with the new expiry */
	WIRE_CAS_READ = 3,   /* write nothing: the reply reports version, ttl and value */
};

enum wire_cas_ttl {
	WIRE_CAS_TTL_SET = 0,  /* expire ttl_ms from now (0: never) */
	WIRE_CAS_TTL_KEEP = 1, /* keep the live value's expiry (none if there was no live value) */
};

struct wire_cas {
	uint8_t cond;	      /* enum wire_cas_cond */
	uint8_t action;	      /* enum wire_cas_action */
	uint8_t ttl;	      /* enum wire_cas_ttl */
	uint64_t ttl_ms;      /* WIRE_CAS_TTL_SET */
	const uint8_t *value; /* decode: points into the datagram; SET only */
	uint32_t value_len;
};

/* Write the 12-byte prefix into buf (the value follows it). Returns WIRE_CAS_PREFIX_LEN. */
int wire_cas_encode_prefix(const struct wire_cas *c, uint8_t *buf, size_t cap);
int wire_cas_decode(const struct wire_msg *msg, struct wire_cas *c);

#endif
