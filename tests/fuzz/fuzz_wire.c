/*
 * fuzz_wire.c - libFuzzer target for the v1 decoder, every payload decoder
 * (proto/payload.h, digest_codec.h, sync.h, ringmsg.h) and the MAC trailer's
 * check (auth.h). Whatever the bytes, no decoder may read past them, and
 * anything one accepts must re-encode to the same bytes.
 *
 * Chunks (chunk.h): a value with a chunk header that wire_chunk_decode()
 * accepts lies inside the value, re-encodes to the same bytes, and a chunk
 * set takes it once and refuses it twice.
 *
 * The input is tried twice: as a whole datagram (wire_decode(), then the
 * decoder its op calls for), and as a bare payload behind a header built
 * here, its first byte choosing the op, so the payload decoders see every
 * byte string and not only those behind a valid header.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "chunk.h"
#include "digest_codec.h"
#include "payload.h"
#include "ringmsg.h"
#include "sync.h"
#include "wire.h"

static uint8_t out[WIRE_HDR_LEN + WIRE_MAX_KEY + 70000];

static void same(const void *a, const void *b, size_t len)
{
	if (memcmp(a, b, len) != 0)
		abort();
}

static void fuzz_replicate(const struct wire_msg *m)
{
	struct wire_replicate r;

	if (wire_replicate_decode(m, &r) != 0)
		return;
	if (wire_replicate_encode(&r, out, sizeof(out)) != (int)m->val_len)
		abort();
	same(out, m->value, m->val_len);
}

static void fuzz_rc_req(const struct wire_msg *m)
{
	struct wire_rc_req r;

	if (wire_rc_req_decode(m, &r) != 0)
		return;
	if (r.value_len + WIRE_RC_PREFIX_LEN != m->val_len ||
	    (r.value_len && r.value != m->value + WIRE_RC_PREFIX_LEN))
		abort();
	if (wire_rc_req_encode_prefix(&r, out, sizeof(out)) != WIRE_RC_PREFIX_LEN)
		abort();
	same(out, m->value, WIRE_RC_PREFIX_LEN);
}

static void fuzz_rc_ack(const struct wire_msg *m)
{
	struct wire_rc_ack a;
	struct wire_msg again = *m;

	if (wire_rc_ack_decode(m, &a) != 0)
		return;
	if (wire_rc_ack_encode(&a, &again) != 0 || again.version != m->version ||
	    again.node != m->node)
		abort();
}

static void fuzz_hint(const struct wire_msg *m)
{
	struct wire_hint h;
	struct wire_msg again = *m;

	if (wire_hint_reply_decode(m, &h) != 0)
		return;
	if (wire_hint_reply_encode(&h, &again) != 0 || again.flags != m->flags ||
	    again.node != m->node || again.version != m->version)
		abort();
}

static void fuzz_digest(const struct wire_msg *m)
{
	struct dig_digest d;
	uint16_t node;

	if (dig_msg_decode(m, &node, &d) != DIG_OK)
		return;
	if (dig_payload_encode(&d, out, sizeof(out)) != (int)m->val_len)
		abort();
	same(out, m->value, m->val_len);
}

static void fuzz_sync(const uint8_t *buf, size_t len)
{
	struct sync_msg m;
	struct sync_enc e;
	size_t off = 0;

	if (sync_decode(buf, len, &m) != SYNC_OK)
		return;
	if (sync_enc_begin(&e, out, sizeof(out), &m) != 0)
		abort();
	for (unsigned i = 0; i < m.count; i++) {
		struct sync_score s;
		struct sync_cand c;

		if (m.kind == SYNC_K_SCORES) {
			sync_msg_score(&m, i, &s);
			if (sync_enc_score(&e, &s) != 0)
				abort();
		} else {
			sync_msg_cand(&m, &off, &c);
			if (sync_enc_cand(&e, c.keyhash, c.count, c.key, c.key_len) != 0)
				abort();
		}
	}
	if (sync_enc_end(&e) != len)
		abort();
	same(out, buf, len);
}

/* A chunk: decode, check the slice's bounds, re-encode it, add it to a set twice. */
static void fuzz_chunk(const struct wire_msg *m)
{
	static uint8_t whole[1u << 20];
	struct wire_msg logical = *m;
	struct wire_chunk_set set;
	struct wire_chunk c;
	int len;

	if (wire_chunk_decode(m, &c) != WIRE_CHUNK_OK)
		return;
	if ((uint64_t)c.offset + c.len > c.total || c.data != m->value + WIRE_CHUNK_HDR_LEN ||
	    c.len + WIRE_CHUNK_HDR_LEN != m->val_len || c.index >= c.count)
		abort();
	if (c.total > sizeof(whole))
		return;
	memcpy(whole + c.offset, c.data, c.len);
	logical.value = whole;
	logical.val_len = c.total;
	logical.key = (const uint8_t *)"k";
	logical.key_len = 1;
	len = wire_chunk_encode(&logical, c.index, c.count, out, sizeof(out));
	if (len != WIRE_HDR_LEN + 1 + (int)m->val_len)
		abort();
	same(out + WIRE_HDR_LEN + 1, m->value, m->val_len);
	if (wire_chunk_set_init(&set, &c, 1, 0) != 0)
		return;
	if (wire_chunk_set_add(&set, &c, 1) != WIRE_CHUNK_OK ||
	    wire_chunk_set_add(&set, &c, 1) != WIRE_CHUNK_ERR_DUPLICATE ||
	    wire_chunk_set_done(&set) != (c.count == 1))
		abort();
	wire_chunk_set_free(&set);
}

static void fuzz_ring(const struct wire_msg *m)
{
	struct wire_ring r;

	if (wire_ring_decode(m, &r) != 0)
		return;
	if (wire_ring_encode(&r, out, sizeof(out)) != (int)m->val_len)
		abort();
	same(out, m->value, m->val_len);
}

static void fuzz_ring_reply(const struct wire_msg *m)
{
	struct wire_ring_reply r;

	if (wire_ring_reply_decode(m, &r) != 0)
		return;
	if (wire_ring_reply_encode(&r, out, sizeof(out)) != (int)m->val_len)
		abort();
	same(out, m->value, m->val_len);
}

/* MIGRATE and FETCH replies: a record prefix, then the value bytes. */
static void fuzz_mig_record(const struct wire_msg *m)
{
	struct wire_mig_prefix p;
	const uint8_t *val;
	uint32_t vlen;

	if (wire_mig_prefix_decode(m, &p, &val, &vlen) != 0)
		return;
	size_t plen = WIRE_MIG_PREFIX_LEN + (size_t)p.nwrites * WIRE_MIG_WRITE_LEN;

	if (p.nwrites > WIRE_MIG_MAX_WRITES || vlen + plen != m->val_len ||
	    (vlen && val != m->value + plen))
		abort();
	if (wire_mig_prefix_encode(&p, out, sizeof(out)) != (int)plen)
		abort();
	same(out, m->value, plen);
}

/* The payload decoder op calls for, on a datagram wire_decode() accepted. */
static void fuzz_payload(const struct wire_msg *m)
{
	switch (m->op) {
	case WIRE_OP_REPLICATE:
		fuzz_replicate(m);
		break;
	case WIRE_OP_RC_REQ:
		fuzz_rc_req(m);
		break;
	case WIRE_OP_RC_ACK:
		fuzz_rc_ack(m);
		break;
	case WIRE_OP_HINT | WIRE_REPLY:
		fuzz_hint(m);
		break;
	case WIRE_OP_DIGEST:
		fuzz_digest(m);
		break;
	case WIRE_OP_SYNC:
		if (m->val_len)
			fuzz_sync(m->value, m->val_len);
		break;
	case WIRE_OP_RING:
		fuzz_ring(m);
		break;
	case WIRE_OP_RING | WIRE_REPLY:
		fuzz_ring_reply(m);
		break;
	case WIRE_OP_MIGRATE:
	case WIRE_OP_FETCH | WIRE_REPLY:
		fuzz_mig_record(m);
		break;
	}
}

static const uint8_t payload_ops[] = {
    WIRE_OP_REPLICATE,
    WIRE_OP_RC_REQ,
    WIRE_OP_RC_ACK,
    WIRE_OP_HINT | WIRE_REPLY,
    WIRE_OP_DIGEST,
    WIRE_OP_SYNC,
    WIRE_OP_RING,
    WIRE_OP_MIGRATE,
    WIRE_OP_FETCH | WIRE_REPLY,
    WIRE_OP_RING | WIRE_REPLY,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_msg msg;

	/* 1. A whole datagram. */
	wire_decode_header(data, size, &msg);
	if (wire_decode(data, size, &msg) == WIRE_OK) {
		int len = wire_encode(&msg, out, sizeof(out));

		if (len != (int)size || memcmp(out, data, size))
			abort();
		if (msg.flags & WIRE_F_CHUNK)
			fuzz_chunk(&msg);
		else
			fuzz_payload(&msg);
	}

	/* The MAC trailer's check (auth.h): it reads only the datagram, and what it
	 * passes is exactly the datagram and 32 bytes. */
	{
		static const struct wire_key key = {.bytes = {1, 2, 3}, .len = WIRE_KEY_MIN_LEN};
		size_t body = 0;
		enum wire_auth a = wire_auth_check(&key, data, size, &body);

		if (a == WIRE_AUTH_OK && body + WIRE_MAC_LEN != size)
			abort();
		if (a == WIRE_AUTH_MISSING && wire_decode(data, size, &msg) == WIRE_ERR_TRAILING)
			abort();
	}

	/* 2. A bare payload: byte 0 picks the op, bytes 1.. are the value. */
	if (size < 1)
		return 0;
	msg = (struct wire_msg){
	    .op = payload_ops[data[0] % sizeof(payload_ops)],
	    .version = data[0] & 0x80 ? 0 : 1, /* RC_REQ's version 0 is refused */
	    .node = (uint16_t)(data[0] >> 3),
	    .val_len = (uint32_t)(size - 1),
	};
	/* A heap copy of exactly the payload, so ASan sees any read past it. */
	uint8_t *value = size > 1 ? malloc(size - 1) : NULL;

	if (value)
		memcpy(value, data + 1, size - 1);
	msg.value = value;
	fuzz_payload(&msg);
	fuzz_chunk(&msg);
	free(value);
	return 0;
}
