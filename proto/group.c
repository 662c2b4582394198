/*
 * group.c - replica group placement and the VIEW codec (see group.h).
 */
#include "group.h"

#include <errno.h>
#include <string.h>

unsigned ring_group(const struct ring *ring, uint32_t point, unsigned r, uint16_t *ids)
{
	return ring_group_without(ring, point, r, NULL, ids);
}

unsigned ring_group_without(const struct ring *ring, uint32_t point, unsigned r,
			    const uint8_t *out, uint16_t *ids)
{
	uint32_t lo = 0, hi = ring->npoints;
	unsigned n = 0;

	if (ring->npoints == 0 || r == 0)
		return 0;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ring->points[mid].value < point)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Clockwise from the key's point, each node once, until r or every point seen. */
	for (uint32_t k = 0; k < ring->npoints && n < r; k++) {
		uint16_t id = ring->points[(lo + k) % ring->npoints].node_id;
		bool seen = out && group_bit(out, id);

		for (unsigned i = 0; i < n && !seen; i++)
			seen = ids[i] == id;
		if (!seen)
			ids[n++] = id;
	}
	return n;
}

unsigned view_group(const struct ring *ring, const struct wire_view *view, uint32_t point,
		    unsigned r, uint16_t *ids)
{
	return ring_group_without(ring, point, r, view->out, ids);
}

bool group_is_new(const struct ring *ring, const struct wire_view *view, uint32_t point,
		  unsigned r, uint16_t id)
{
	uint16_t before[GROUP_MAX];
	unsigned n;

	if (!group_bit(view->joining, id))
		return false;
	n = ring_group_without(ring, point, r, view->was_out, before);
	for (unsigned i = 0; i < n; i++)
		if (before[i] == id)
			return false;
	return true;
}

bool group_serves(const struct ring *ring, const struct wire_view *view, uint32_t point,
		  unsigned r, uint16_t id)
{
	return !group_bit(view->down, id) && !group_bit(view->catching, id) &&
	       !group_is_new(ring, view, point, r, id);
}

uint16_t group_primary(const struct ring *ring, const struct wire_view *view, uint32_t point,
		       unsigned r, const uint16_t *ids, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (group_serves(ring, view, point, r, ids[i]))
			return ids[i];
	return 0;
}

/* A view's bitmaps into GROUP_VIEW_LEN bytes at p. */
static void view_to(const struct wire_view *v, uint8_t *p)
{
	memcpy(p, v->down, GROUP_BITMAP);
	memcpy(p + GROUP_BITMAP, v->catching, GROUP_BITMAP);
	memcpy(p + 2 * GROUP_BITMAP, v->out, GROUP_BITMAP);
	memcpy(p + 3 * GROUP_BITMAP, v->joining, GROUP_BITMAP);
	memcpy(p + 4 * GROUP_BITMAP, v->was_out, GROUP_BITMAP);
}

int wire_view_encode(const struct wire_view *v, uint8_t *buf, size_t cap)
{
	if (cap < WIRE_VIEW_LEN)
		return -EMSGSIZE;
	view_to(v, buf);
	wire_put64(buf + GROUP_VIEW_LEN, v->lease);
	return WIRE_VIEW_LEN;
}

/* A view's number and its bitmaps, from GROUP_VIEW_LEN bytes at p (no lease). */
static void view_from(uint64_t number, const uint8_t *p, struct wire_view *v)
{
	v->number = number;
	memcpy(v->down, p, GROUP_BITMAP);
	memcpy(v->catching, p + GROUP_BITMAP, GROUP_BITMAP);
	memcpy(v->out, p + 2 * GROUP_BITMAP, GROUP_BITMAP);
	memcpy(v->joining, p + 3 * GROUP_BITMAP, GROUP_BITMAP);
	memcpy(v->was_out, p + 4 * GROUP_BITMAP, GROUP_BITMAP);
	v->lease = 0;
}

int wire_view_decode(const struct wire_msg *msg, struct wire_view *v)
{
	if (msg->op != WIRE_OP_VIEW || msg->val_len != WIRE_VIEW_LEN)
		return -EBADMSG;
	view_from(msg->version, msg->value, v);
	v->lease = wire_get64(msg->value + GROUP_VIEW_LEN);
	return 0;
}

int wire_view_reply_encode(const struct wire_view_reply *r, uint8_t *buf, size_t cap)
{
	if (cap < WIRE_VIEW_REPLY_LEN)
		return -EMSGSIZE;
	memset(buf, 0, WIRE_VIEW_REPLY_LEN);
	buf[0] = r->state;
	wire_put16(buf + 2, r->sources_left);
	wire_put32(buf + 4, r->config_nodes);
	wire_put64(buf + 8, r->records);
	view_to(&r->view, buf + 16);
	return WIRE_VIEW_REPLY_LEN;
}

int wire_view_reply_decode(const struct wire_msg *msg, struct wire_view_reply *r)
{
	const uint8_t *p = msg->value;

	if (msg->op != (WIRE_OP_VIEW | WIRE_REPLY) || msg->val_len != WIRE_VIEW_REPLY_LEN ||
	    p[0] > WIRE_VIEW_JOINED || p[1] != 0)
		return -EBADMSG;
	r->state = p[0];
	r->sources_left = wire_get16(p + 2);
	r->config_nodes = wire_get32(p + 4);
	r->records = wire_get64(p + 8);
	view_from(msg->version, p + 16, &r->view);
	return 0;
}
