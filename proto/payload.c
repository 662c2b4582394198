/*
 * payload.c - REPLICATE, RC_REQ, RC_ACK, HINT and CAS codecs (see payload.h).
 */
#include "payload.h"

#include <errno.h>
#include <string.h>

int wire_replicate_encode(const struct wire_replicate *r, uint8_t *buf, size_t cap)
{
	size_t len;

	if (r->ntargets == 0 || r->ntargets > WIRE_REPL_MAX_TARGETS)
		return -EINVAL;
	len = 2 + 2 * (size_t)r->ntargets;
	if (cap < len)
		return -EMSGSIZE;
	wire_put16(buf, r->owner);
	for (unsigned i = 0; i < r->ntargets; i++)
		wire_put16(buf + 2 + 2 * i, r->targets[i]);
	return (int)len;
}

int wire_replicate_decode(const struct wire_msg *msg, struct wire_replicate *r)
{
	if (msg->op != WIRE_OP_REPLICATE || msg->val_len < 4 || msg->val_len % 2 != 0 ||
	    msg->val_len > WIRE_REPLICATE_MAX_LEN)
		return -EBADMSG;
	r->owner = wire_get16(msg->value);
	r->ntargets = (uint8_t)((msg->val_len - 2) / 2);
	for (unsigned i = 0; i < r->ntargets; i++)
		r->targets[i] = wire_get16(msg->value + 2 + 2 * i);
	return 0;
}

/* RC_REQ prefix offsets. */
enum { RC_OFF_OWNER = 0, RC_OFF_KIND = 2, RC_OFF_RESERVED = 3, RC_OFF_TTL = 4 };

int wire_rc_req_encode_prefix(const struct wire_rc_req *r, uint8_t *buf, size_t cap)
{
	if (r->kind > WIRE_COPY_TOMBSTONE || (r->kind == WIRE_COPY_TOMBSTONE && r->value_len))
		return -EINVAL;
	if (cap < WIRE_RC_PREFIX_LEN)
		return -EMSGSIZE;
	wire_put16(buf + RC_OFF_OWNER, r->owner);
	buf[RC_OFF_KIND] = r->kind;
	buf[RC_OFF_RESERVED] = 0;
	wire_put32(buf + RC_OFF_TTL, r->ttl_ms);
	return WIRE_RC_PREFIX_LEN;
}

int wire_rc_req_decode(const struct wire_msg *msg, struct wire_rc_req *r)
{
	const uint8_t *p = msg->value;

	if (msg->op != WIRE_OP_RC_REQ || msg->version == 0 || msg->val_len < WIRE_RC_PREFIX_LEN)
		return -EBADMSG;
	if (p[RC_OFF_KIND] > WIRE_COPY_TOMBSTONE || p[RC_OFF_RESERVED] != 0 ||
	    (p[RC_OFF_KIND] == WIRE_COPY_TOMBSTONE && msg->val_len != WIRE_RC_PREFIX_LEN))
		return -EBADMSG;
	r->owner = wire_get16(p + RC_OFF_OWNER);
	r->kind = p[RC_OFF_KIND];
	r->ttl_ms = wire_get32(p + RC_OFF_TTL);
	r->value_len = msg->val_len - WIRE_RC_PREFIX_LEN;
	r->value = r->value_len ? p + WIRE_RC_PREFIX_LEN : NULL;
	return 0;
}

int wire_rc_ack_encode(const struct wire_rc_ack *a, struct wire_msg *msg)
{
	if (a->node == 0 || a->node > WIRE_MAX_NODE)
		return -EINVAL;
	msg->op = WIRE_OP_RC_ACK;
	msg->version = a->version;
	msg->node = a->node;
	msg->value = NULL;
	msg->val_len = 0;
	return 0;
}

int wire_rc_ack_decode(const struct wire_msg *msg, struct wire_rc_ack *a)
{
	if (msg->op != WIRE_OP_RC_ACK || msg->node == 0 || msg->node > WIRE_MAX_NODE ||
	    msg->val_len != 0)
		return -EBADMSG;
	a->version = msg->version;
	a->node = msg->node;
	return 0;
}

int wire_hint_reply_encode(const struct wire_hint *h, struct wire_msg *msg)
{
	if (h->node > WIRE_MAX_NODE || h->in_directory > 1)
		return -EINVAL;
	msg->op = WIRE_OP_HINT | WIRE_REPLY;
	msg->node = h->node;
	msg->version = h->version;
	msg->flags = (uint16_t)(h->in_directory ? msg->flags | WIRE_F_REPLICATED
						: msg->flags & ~WIRE_F_REPLICATED);
	msg->value = NULL;
	msg->val_len = 0;
	return 0;
}

int wire_hint_reply_decode(const struct wire_msg *msg, struct wire_hint *h)
{
	if (msg->op != (WIRE_OP_HINT | WIRE_REPLY) || msg->node > WIRE_MAX_NODE ||
	    msg->val_len != 0)
		return -EBADMSG;
	h->node = msg->node;
	h->version = msg->version;
	h->in_directory = (msg->flags & WIRE_F_REPLICATED) ? 1 : 0;
	return 0;
}

/* CAS prefix offsets. */
enum {
	CAS_OFF_COND = 0,
	CAS_OFF_ACTION = 1,
	CAS_OFF_TTL = 2,
	CAS_OFF_RESERVED = 3,
	CAS_OFF_MS = 4
};

int wire_cas_encode_prefix(const struct wire_cas *c, uint8_t *buf, size_t cap)
{
	if (c->cond > WIRE_CAS_LIVE || c->action > WIRE_CAS_READ || c->ttl > WIRE_CAS_TTL_KEEP ||
	    (c->ttl == WIRE_CAS_TTL_KEEP && c->ttl_ms))
		return -EINVAL;
	if (cap < WIRE_CAS_PREFIX_LEN)
		return -EMSGSIZE;
	buf[CAS_OFF_COND] = c->cond;
	buf[CAS_OFF_ACTION] = c->action;
	buf[CAS_OFF_TTL] = c->ttl;
	buf[CAS_OFF_RESERVED] = 0;
	wire_put64(buf + CAS_OFF_MS, c->ttl_ms);
	return WIRE_CAS_PREFIX_LEN;
}

int wire_cas_decode(const struct wire_msg *msg, struct wire_cas *c)
{
	const uint8_t *p = msg->value;

	if (msg->op != WIRE_OP_CAS || msg->val_len < WIRE_CAS_PREFIX_LEN)
		return -EBADMSG;
	if (p[CAS_OFF_COND] > WIRE_CAS_LIVE || p[CAS_OFF_ACTION] > WIRE_CAS_READ ||
	    p[CAS_OFF_TTL] > WIRE_CAS_TTL_KEEP || p[CAS_OFF_RESERVED] != 0)
		return -EBADMSG;
	c->cond = p[CAS_OFF_COND];
	c->action = p[CAS_OFF_ACTION];
	c->ttl = p[CAS_OFF_TTL];
	c->ttl_ms = wire_get64(p + CAS_OFF_MS);
	c->value_len = msg->val_len - WIRE_CAS_PREFIX_LEN;
	c->value = c->value_len ? p + WIRE_CAS_PREFIX_LEN : NULL;
	/* Only a SET carries a value; a kept expiry has no ms of its own. */
	if ((c->action != WIRE_CAS_SET && c->value_len) ||
	    (c->ttl == WIRE_CAS_TTL_KEEP && c->ttl_ms))
		return -EBADMSG;
	return 0;
}
