/*
 * sync.c - the SYNC payload codec (see sync.h). Decoding trusts nothing:
 * every length is checked before the bytes it covers are read.
 */
#include "sync.h"

#include <errno.h>
#include <string.h>

static const char *const error_names[] = {
#define X(name, str) str,
    SYNC_ERRORS(X)
#undef X
};

const char *sync_error_name(enum sync_error e)
{
	return e < SYNC_ERR_COUNT ? error_names[e] : "?";
}

/* Header field offsets (docs/protocol.md "SYNC payload"), shared by decoder and encoder. */
enum sync_off {
	SYNC_OFF_LAYOUT = 0,
	SYNC_OFF_KIND = 1,
	SYNC_OFF_SENDER = 2,
	SYNC_OFF_INCARNATION = 4,
	SYNC_OFF_SEQ = 8,
	SYNC_OFF_ECHO_INCARNATION = 12,
	SYNC_OFF_TS = 16,
	SYNC_OFF_ECHO_TS = 24,
	SYNC_OFF_CONFIRMED = 32,
	SYNC_OFF_COUNT = 40,
	SYNC_OFF_RESERVED = 42,
	SYNC_OFF_RING_EPOCH = 44,
	SYNC_OFF_RING_READY = 52,
	SYNC_OFF_RING_PREV = 60,
};

static size_t kind_hdr_len(uint8_t kind)
{
	return kind == SYNC_K_CANDS   ? SYNC_CAND_HDR_LEN
	       : kind == SYNC_K_OWNED ? SYNC_OWNED_HDR_LEN
				      : 0;
}

enum sync_error sync_decode(const void *buf, size_t len, struct sync_msg *m)
{
	const uint8_t *p = buf;
	size_t off, item_start;

	memset(m, 0, sizeof(*m));
	if (len < SYNC_OFF_KIND + 1)
		return SYNC_ERR_SHORT;
	/* The layout byte first: a future layout of another length is reported as such. */
	if (p[SYNC_OFF_LAYOUT] != SYNC_LAYOUT)
		return SYNC_ERR_LAYOUT;
	if (len < SYNC_HDR_LEN)
		return SYNC_ERR_SHORT;
	m->kind = p[SYNC_OFF_KIND];
	m->sender = wire_get16(p + SYNC_OFF_SENDER);
	m->incarnation = wire_get32(p + SYNC_OFF_INCARNATION);
	m->seq = wire_get32(p + SYNC_OFF_SEQ);
	m->echo_incarnation = wire_get32(p + SYNC_OFF_ECHO_INCARNATION);
	m->ts_us = wire_get64(p + SYNC_OFF_TS);
	m->echo_ts_us = wire_get64(p + SYNC_OFF_ECHO_TS);
	m->confirmed = wire_get64(p + SYNC_OFF_CONFIRMED);
	m->count = wire_get16(p + SYNC_OFF_COUNT);
	m->ring_epoch = wire_get64(p + SYNC_OFF_RING_EPOCH);
	m->ring_ready = wire_get64(p + SYNC_OFF_RING_READY);
	m->ring_prev = wire_get64(p + SYNC_OFF_RING_PREV);
	if (m->kind >= SYNC_K_COUNT)
		return SYNC_ERR_KIND;
	if (m->sender == 0)
		return SYNC_ERR_SENDER;
	if (m->incarnation == 0)
		return SYNC_ERR_INCARNATION;
	if (m->seq == 0)
		return SYNC_ERR_SEQ;
	if (wire_get16(p + SYNC_OFF_RESERVED) != 0)
		return SYNC_ERR_RESERVED;
	if (m->ring_ready < m->ring_epoch)
		return SYNC_ERR_RING;
	off = SYNC_HDR_LEN;
	if (len < off + kind_hdr_len(m->kind))
		return SYNC_ERR_TRUNCATED;
	if (m->kind == SYNC_K_CANDS) {
		m->window_id = wire_get64(p + off);
		m->samples = wire_get64(p + off + 8);
		if (m->window_id == 0)
			return SYNC_ERR_RANGE;
	} else if (m->kind == SYNC_K_OWNED) {
		m->owned_version = wire_get64(p + off);
		m->owned_total = wire_get16(p + off + 8);
		m->owned_first = wire_get16(p + off + 10);
		if (m->owned_version == 0 || m->owned_total > SYNC_MAX_OWNED ||
		    (uint32_t)m->owned_first + m->count > m->owned_total)
			return SYNC_ERR_RANGE;
	}
	off += kind_hdr_len(m->kind);
	item_start = off;
	for (unsigned i = 0; i < m->count; i++) {
		if (m->kind == SYNC_K_SCORES) {
			if (len < off + SYNC_SCORE_LEN)
				return SYNC_ERR_TRUNCATED;
			if (wire_get16(p + off) == 0 || wire_get16(p + off) > WIRE_MAX_NODE)
				return SYNC_ERR_NODE;
			if (p[off + 2] > 100)
				return SYNC_ERR_HEALTH;
			if (p[off + 3] & ~1u)
				return SYNC_ERR_FLAGS;
			off += SYNC_SCORE_LEN;
		} else {
			size_t fixed = m->kind == SYNC_K_CANDS ? 14 : 10;
			uint16_t klen;

			if (len < off + fixed)
				return SYNC_ERR_TRUNCATED;
			klen = wire_get16(p + off + fixed - 2);
			if (klen == 0 || klen > SYNC_MAX_KEY)
				return SYNC_ERR_KEY_LEN;
			if (len < off + fixed + klen)
				return SYNC_ERR_TRUNCATED;
			off += fixed + klen;
		}
	}
	if (off != len)
		return SYNC_ERR_TRAILING;
	m->items = p + item_start;
	m->items_len = off - item_start;
	return SYNC_OK;
}

void sync_msg_score(const struct sync_msg *m, unsigned i, struct sync_score *s)
{
	const uint8_t *p = m->items + (size_t)i * SYNC_SCORE_LEN;

	s->node = wire_get16(p);
	s->health = p[2];
	s->alive = p[3] & 1;
	s->age_ms = wire_get32(p + 4);
}

void sync_msg_cand(const struct sync_msg *m, size_t *off, struct sync_cand *c)
{
	const uint8_t *p = m->items + *off;

	c->keyhash = wire_get64(p);
	if (m->kind == SYNC_K_CANDS) {
		c->count = wire_get32(p + 8);
		c->key_len = wire_get16(p + 12);
		c->key = p + 14;
		*off += 14u + c->key_len;
	} else {
		c->count = 0;
		c->key_len = wire_get16(p + 8);
		c->key = p + 10;
		*off += 10u + c->key_len;
	}
}

int sync_enc_begin(struct sync_enc *e, void *buf, size_t cap, const struct sync_msg *h)
{
	size_t need = SYNC_HDR_LEN + kind_hdr_len(h->kind);
	uint8_t *p = buf;

	if (cap < need || h->kind >= SYNC_K_COUNT)
		return -EMSGSIZE;
	e->buf = p;
	e->cap = cap;
	e->count = 0;
	e->kind = h->kind;
	p[SYNC_OFF_LAYOUT] = SYNC_LAYOUT;
	p[SYNC_OFF_KIND] = h->kind;
	wire_put16(p + SYNC_OFF_SENDER, h->sender);
	wire_put32(p + SYNC_OFF_INCARNATION, h->incarnation);
	wire_put32(p + SYNC_OFF_SEQ, h->seq);
	wire_put32(p + SYNC_OFF_ECHO_INCARNATION, h->echo_incarnation);
	wire_put64(p + SYNC_OFF_TS, h->ts_us);
	wire_put64(p + SYNC_OFF_ECHO_TS, h->echo_ts_us);
	wire_put64(p + SYNC_OFF_CONFIRMED, h->confirmed);
	wire_put16(p + SYNC_OFF_COUNT, 0);
	wire_put16(p + SYNC_OFF_RESERVED, 0);
	wire_put64(p + SYNC_OFF_RING_EPOCH, h->ring_epoch);
	wire_put64(p + SYNC_OFF_RING_READY, h->ring_ready);
	wire_put64(p + SYNC_OFF_RING_PREV, h->ring_prev);
	if (h->kind == SYNC_K_CANDS) {
		wire_put64(p + SYNC_HDR_LEN, h->window_id);
		wire_put64(p + SYNC_HDR_LEN + 8, h->samples);
	} else if (h->kind == SYNC_K_OWNED) {
		wire_put64(p + SYNC_HDR_LEN, h->owned_version);
		wire_put16(p + SYNC_HDR_LEN + 8, h->owned_total);
		wire_put16(p + SYNC_HDR_LEN + 10, h->owned_first);
	}
	e->len = need;
	return 0;
}

int sync_enc_score(struct sync_enc *e, const struct sync_score *s)
{
	uint8_t *p = e->buf + e->len;

	if (e->kind != SYNC_K_SCORES || e->len + SYNC_SCORE_LEN > e->cap || e->count == UINT16_MAX)
		return -EMSGSIZE;
	wire_put16(p, s->node);
	p[2] = s->health;
	p[3] = s->alive ? 1 : 0;
	wire_put32(p + 4, s->age_ms);
	e->len += SYNC_SCORE_LEN;
	e->count++;
	return 0;
}

int sync_enc_cand(struct sync_enc *e, uint64_t keyhash, uint32_t count, const uint8_t *key,
		  uint16_t key_len)
{
	size_t fixed = e->kind == SYNC_K_CANDS ? 14 : 10;
	uint8_t *p = e->buf + e->len;

	if (e->kind == SYNC_K_SCORES || key_len == 0 || key_len > SYNC_MAX_KEY)
		return -EINVAL;
	if (e->len + fixed + key_len > e->cap || e->count == UINT16_MAX)
		return -EMSGSIZE;
	wire_put64(p, keyhash);
	if (e->kind == SYNC_K_CANDS)
		wire_put32(p + 8, count);
	wire_put16(p + fixed - 2, key_len);
	memcpy(p + fixed, key, key_len);
	e->len += fixed + key_len;
	e->count++;
	return 0;
}

size_t sync_enc_end(struct sync_enc *e)
{
	wire_put16(e->buf + SYNC_OFF_COUNT, e->count);
	return e->len;
}
