/*
 * wire.c - encode v1 datagrams; names of statuses, flags and errors for logs.
 * Decoding is inline in wire.h; op names are in ops.c.
 */
#include "wire.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const status_names[] = {
#define X(name, value, str) [value] = str,
	WIRE_STATUSES(X)
#undef X
};

const char *wire_status_name(uint8_t status)
{
	return status < WIRE_ST_COUNT ? status_names[status] : "?";
}

int wire_status_parse(const char *name)
{
	for (int i = 0; i < WIRE_ST_COUNT; i++)
		if (strcmp(name, status_names[i]) == 0)
			return i;
	return -1;
}

static const char *const error_names[] = {
#define X(name, str) [name] = str,
	WIRE_ERRORS(X)
#undef X
};

const char *wire_error_name(enum wire_error err)
{
	return (unsigned)err < WIRE_ERR_COUNT ? error_names[err] : "?";
}

char *wire_flags_str(uint16_t flags, char *buf, size_t cap)
{
	size_t used = 0;

	if (cap == 0)
		return buf;
	buf[0] = '\0';
#define X(name, value, str)                                                                        \
	if ((flags & (value)) && used < cap)                                                       \
		used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? "|" : "", str);
	WIRE_FLAGS(X)
#undef X
	return buf;
}

int wire_encode(const struct wire_msg *msg, void *buf, size_t cap)
{
	uint8_t *p = buf;
	size_t len;

	if (!wire_op_valid(msg->op & (uint8_t)~WIRE_REPLY))
		return -EINVAL;
	if (msg->key_len > WIRE_MAX_KEY || (msg->key_len == 0 && !wire_op_is_keyless(msg->op)))
		return -EINVAL;
	if ((msg->key_len && !msg->key) || (msg->val_len && !msg->value) ||
	    (wire_rider_bytes(msg) && !msg->rider_ids))
		return -EINVAL;
	if (msg->val_len > WIRE_MAX_DATAGRAM)
		return -EMSGSIZE;
	len = wire_len(msg);
	if (len > cap)
		return -EMSGSIZE;
	wire_put16(p + WIRE_OFF_MAGIC, WIRE_MAGIC);
	p[WIRE_OFF_VER] = WIRE_VERSION;
	p[WIRE_OFF_OP] = msg->op;
	wire_put16(p + WIRE_OFF_FLAGS, msg->flags);
	p[WIRE_OFF_STATUS] = msg->status;
	p[WIRE_OFF_RIDERS] = msg->riders;
	wire_put64(p + WIRE_OFF_REQ_ID, msg->req_id);
	wire_put64(p + WIRE_OFF_KEYHASH, msg->keyhash);
	wire_put64(p + WIRE_OFF_VERSION, msg->version);
	wire_put16(p + WIRE_OFF_NODE, msg->node);
	wire_put16(p + WIRE_OFF_LOAD, msg->load);
	wire_put32(p + WIRE_OFF_RET_IP, msg->ret_ip);
	wire_put16(p + WIRE_OFF_RET_PORT, msg->ret_port);
	wire_put16(p + WIRE_OFF_KEY_LEN, msg->key_len);
	wire_put32(p + WIRE_OFF_VAL_LEN, msg->val_len);
	/* memmove: callers may build a reply in the buffer the request came in. */
	if (msg->key_len)
		memmove(p + WIRE_HDR_LEN, msg->key, msg->key_len);
	if (msg->val_len)
		memmove(p + WIRE_HDR_LEN + msg->key_len, msg->value, msg->val_len);
	if (wire_rider_bytes(msg))
		memmove(p + WIRE_HDR_LEN + msg->key_len + msg->val_len, msg->rider_ids,
			wire_rider_bytes(msg));
	return (int)len;
}
