/*
 * chunk.c - chunked operations: the chunk header's codec and the set that
 * gathers an op's chunks (chunk.h, docs/protocol.md "Chunked operations").
 */
#include "chunk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const error_names[] = {
#define X(name, str) [name] = str,
    WIRE_CHUNK_ERRORS(X)
#undef X
};

const char *wire_chunk_error_name(enum wire_chunk_error e)
{
	return (unsigned)e < WIRE_CHUNK_ERR_COUNT_ ? error_names[e] : "?";
}

enum wire_chunk_error wire_chunk_decode(const struct wire_msg *m, struct wire_chunk *c)
{
	uint32_t stride;

	if (m->val_len < WIRE_CHUNK_HDR_LEN)
		return WIRE_CHUNK_ERR_SHORT;
	c->total = wire_get32(m->value);
	c->index = wire_get16(m->value + 4);
	c->count = wire_get16(m->value + 6);
	if (c->total == 0 || c->total > WIRE_CHUNK_MAX_TOTAL)
		return WIRE_CHUNK_ERR_TOTAL;
	if (c->count < 2 || c->count > c->total)
		return WIRE_CHUNK_ERR_COUNT;
	if (c->index >= c->count)
		return WIRE_CHUNK_ERR_INDEX;
	stride = wire_chunk_stride(c->total, c->count);
	/* Every chunk, the last included, must start inside the value. */
	if ((uint64_t)stride * (c->count - 1) >= c->total)
		return WIRE_CHUNK_ERR_COUNT;
	c->offset = stride * c->index;
	c->len = c->total - c->offset < stride ? c->total - c->offset : stride;
	if (m->val_len - WIRE_CHUNK_HDR_LEN != c->len)
		return WIRE_CHUNK_ERR_LENGTH;
	c->data = m->value + WIRE_CHUNK_HDR_LEN;
	return WIRE_CHUNK_OK;
}

uint32_t wire_chunk_room(uint32_t mtu, uint16_t key_len)
{
	uint32_t fixed = WIRE_IP_UDP_LEN + WIRE_HDR_LEN + WIRE_CHUNK_HDR_LEN + (uint32_t)key_len;

	return mtu > fixed ? mtu - fixed : 0;
}

bool wire_chunk_needed(const struct wire_msg *msg, uint32_t mtu, uint16_t *count)
{
	uint32_t room;
	uint64_t n;

	*count = 0;
	if (WIRE_IP_UDP_LEN + wire_len(msg) <= mtu)
		return false;
	room = wire_chunk_room(mtu, msg->key_len);
	if (room == 0 || msg->val_len > WIRE_CHUNK_MAX_TOTAL)
		return true;
	n = ((uint64_t)msg->val_len + room - 1) / room;
	if (n >= 2 && n <= WIRE_CHUNK_MAX_COUNT)
		*count = (uint16_t)n;
	return true;
}

int wire_chunk_encode_head(const struct wire_msg *msg, uint16_t index, uint16_t count, void *buf,
			   size_t cap, const uint8_t **slice, uint32_t *slice_len)
{
	struct wire_msg part = *msg;
	uint32_t stride, offset, len;
	uint8_t *p = buf;
	int hdr_len;

	if (count < 2 || index >= count || msg->val_len == 0 ||
	    msg->val_len > WIRE_CHUNK_MAX_TOTAL || count > msg->val_len)
		return -EINVAL;
	stride = wire_chunk_stride(msg->val_len, count);
	if ((uint64_t)stride * (count - 1) >= msg->val_len)
		return -EINVAL;
	offset = stride * index;
	len = msg->val_len - offset < stride ? msg->val_len - offset : stride;
	part.flags |= WIRE_F_CHUNK;
	part.value = NULL;
	part.val_len = 0;
	hdr_len = wire_encode(&part, buf, cap);
	if (hdr_len < 0)
		return hdr_len;
	if ((size_t)hdr_len + WIRE_CHUNK_HDR_LEN > cap)
		return -EMSGSIZE;
	wire_put32(p + WIRE_OFF_VAL_LEN, WIRE_CHUNK_HDR_LEN + len);
	p += hdr_len;
	wire_put32(p, msg->val_len);
	wire_put16(p + 4, index);
	wire_put16(p + 6, count);
	*slice = msg->value + offset;
	*slice_len = len;
	return hdr_len + WIRE_CHUNK_HDR_LEN;
}

int wire_chunk_encode(const struct wire_msg *msg, uint16_t index, uint16_t count, void *buf,
		      size_t cap)
{
	const uint8_t *slice;
	uint32_t len;
	int head = wire_chunk_encode_head(msg, index, count, buf, cap, &slice, &len);

	if (head < 0)
		return head;
	if ((size_t)head + len > cap)
		return -EMSGSIZE;
	memcpy((uint8_t *)buf + head, slice, len);
	return head + (int)len;
}

size_t wire_chunk_set_bytes(const struct wire_chunk *c, uint32_t lead)
{
	return (size_t)lead + c->total + ((size_t)c->count + 63) / 64 * sizeof(uint64_t);
}

int wire_chunk_set_init(struct wire_chunk_set *s, const struct wire_chunk *c, uint64_t tag,
			uint32_t lead)
{
	memset(s, 0, sizeof(*s));
	s->buf = malloc((size_t)lead + c->total);
	s->seen = calloc(((size_t)c->count + 63) / 64, sizeof(uint64_t));
	if (!s->buf || !s->seen) {
		wire_chunk_set_free(s);
		return -ENOMEM;
	}
	s->tag = tag;
	s->lead = lead;
	s->total = c->total;
	s->count = c->count;
	return 0;
}

enum wire_chunk_error wire_chunk_set_add(struct wire_chunk_set *s, const struct wire_chunk *c,
					 uint64_t tag)
{
	uint64_t bit = 1ull << (c->index % 64);

	if (c->total != s->total || c->count != s->count || tag != s->tag)
		return WIRE_CHUNK_ERR_MISMATCH;
	if (s->seen[c->index / 64] & bit)
		return WIRE_CHUNK_ERR_DUPLICATE;
	s->seen[c->index / 64] |= bit;
	memcpy(s->buf + s->lead + c->offset, c->data, c->len);
	s->got++;
	return WIRE_CHUNK_OK;
}

void wire_chunk_set_free(struct wire_chunk_set *s)
{
	free(s->buf);
	free(s->seen);
	memset(s, 0, sizeof(*s));
}
