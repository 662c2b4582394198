/*
 * ringmsg.c - codecs of RING, FETCH and MIGRATE payloads (ringmsg.h).
 */
#include "ringmsg.h"

#include <errno.h>
#include <string.h>

int wire_ring_encode(const struct wire_ring *r, uint8_t *buf, size_t cap)
{
	size_t len = 18 + 4 * (size_t)r->nmembers;

	if (r->nmembers == 0 || r->nmembers > WIRE_RING_MAX_MEMBERS)
		return -EINVAL;
	if (len > cap)
		return -EMSGSIZE;
	wire_put64(buf, r->prev_version);
	wire_put16(buf + 8, r->nmembers);
	for (uint16_t i = 0; i < r->nmembers; i++) {
		if (r->members[i].id == 0 || r->members[i].id > WIRE_MAX_NODE)
			return -EINVAL;
		wire_put16(buf + 10 + 4 * i, r->members[i].id);
		wire_put16(buf + 12 + 4 * i, r->members[i].weight);
	}
	wire_put64(buf + len - 8, r->floor);
	return (int)len;
}

int wire_ring_decode(const struct wire_msg *msg, struct wire_ring *r)
{
	const uint8_t *p = msg->value;

	if (msg->val_len < 10)
		return -EINVAL;
	r->prev_version = wire_get64(p);
	r->nmembers = wire_get16(p + 8);
	if (r->nmembers == 0 || r->nmembers > WIRE_RING_MAX_MEMBERS ||
	    msg->val_len != 18 + 4 * (uint32_t)r->nmembers)
		return -EINVAL;
	r->floor = wire_get64(p + msg->val_len - 8);
	for (uint16_t i = 0; i < r->nmembers; i++) {
		r->members[i].id = wire_get16(p + 10 + 4 * i);
		r->members[i].weight = wire_get16(p + 12 + 4 * i);
		if (r->members[i].id == 0 || r->members[i].id > WIRE_MAX_NODE ||
		    r->members[i].weight == 0 || r->members[i].weight > 100)
			return -EINVAL;
	}
	return 0;
}

int wire_ring_reply_encode(const struct wire_ring_reply *r, uint8_t *buf, size_t cap)
{
	if (cap < WIRE_RING_REPLY_LEN)
		return -EMSGSIZE;
	buf[0] = r->flags;
	wire_put32(buf + 1, r->arcs_done);
	wire_put64(buf + 5, r->floor);
	return WIRE_RING_REPLY_LEN;
}

int wire_ring_reply_decode(const struct wire_msg *msg, struct wire_ring_reply *r)
{
	if (msg->val_len != WIRE_RING_REPLY_LEN)
		return -EINVAL;
	r->flags = msg->value[0];
	r->arcs_done = wire_get32(msg->value + 1);
	r->floor = wire_get64(msg->value + 5);
	return 0;
}

static size_t prefix_len(uint8_t nwrites)
{
	return WIRE_MIG_PREFIX_LEN + (size_t)nwrites * WIRE_MIG_WRITE_LEN;
}

int wire_mig_prefix_encode(const struct wire_mig_prefix *p, uint8_t *buf, size_t cap)
{
	if (p->kind > 1 || p->nwrites > WIRE_MIG_MAX_WRITES)
		return -EINVAL;
	if (cap < prefix_len(p->nwrites))
		return -EMSGSIZE;
	buf[0] = p->kind;
	buf[1] = p->nwrites;
	wire_put16(buf + 2, p->version_low);
	wire_put32(buf + 4, p->ttl_ms);
	for (uint8_t i = 0; i < p->nwrites; i++) {
		uint8_t *w = buf + prefix_len(i);

		if (p->writes[i].req_id == 0 ||
		    (p->writes[i].status != WIRE_ST_OK && p->writes[i].status != WIRE_ST_NOT_FOUND))
			return -EINVAL;
		wire_put64(w, p->writes[i].req_id);
		wire_put64(w + 8, p->writes[i].version);
		w[16] = p->writes[i].status;
	}
	return (int)prefix_len(p->nwrites);
}

int wire_mig_prefix_decode(const struct wire_msg *msg, struct wire_mig_prefix *p,
			   const uint8_t **value, uint32_t *value_len)
{
	const uint8_t *v = msg->value;
	size_t plen;

	if (msg->val_len < WIRE_MIG_PREFIX_LEN || v[0] > 1 || v[1] > WIRE_MIG_MAX_WRITES)
		return -EINVAL;
	p->kind = v[0];
	p->nwrites = v[1];
	p->version_low = wire_get16(v + 2);
	p->ttl_ms = wire_get32(v + 4);
	plen = prefix_len(p->nwrites);
	if (msg->val_len < plen)
		return -EINVAL;
	for (uint8_t i = 0; i < p->nwrites; i++) {
		const uint8_t *w = v + prefix_len(i);

		p->writes[i] = (struct wire_mig_write){
		    .req_id = wire_get64(w), .version = wire_get64(w + 8), .status = w[16]};
		if (p->writes[i].req_id == 0 || (w[16] != WIRE_ST_OK && w[16] != WIRE_ST_NOT_FOUND))
			return -EINVAL;
	}
	*value_len = msg->val_len - (uint32_t)plen;
	*value = *value_len ? v + plen : NULL;
	if (p->kind == 1 && (*value_len || p->ttl_ms))
		return -EINVAL;
	return 0;
}
