/*
 * wire.c - encode, decode and validate v1 datagrams; names for logs.
 */
#include "wire.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int wire_op_valid(uint8_t op)
{
	switch (op) {
#define X(name, value, str) case value:
		WIRE_OPS(X)
#undef X
		return 1;
	default:
		return 0;
	}
}

const char *wire_op_name(uint8_t op)
{
	switch (op & (uint8_t)~WIRE_REPLY) {
#define X(name, value, str)                                                                        \
	case value:                                                                                \
		return (op & WIRE_REPLY) ? str "_REPLY" : str;
		WIRE_OPS(X)
#undef X
	default:
		return "?";
	}
}

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

enum wire_error wire_decode_header(const void *buf, size_t len, struct wire_msg *msg)
{
	const uint8_t *p = buf;

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
	msg->req_id = wire_get64(p + WIRE_OFF_REQ_ID);
	msg->keyhash = wire_get64(p + WIRE_OFF_KEYHASH);
	msg->version = wire_get64(p + WIRE_OFF_VERSION);
	msg->node = wire_get16(p + WIRE_OFF_NODE);
	msg->load = wire_get16(p + WIRE_OFF_LOAD);
	msg->ret_ip = wire_get32(p + WIRE_OFF_RET_IP);
	msg->ret_port = wire_get16(p + WIRE_OFF_RET_PORT);
	msg->key_len = wire_get16(p + WIRE_OFF_KEY_LEN);
	msg->val_len = wire_get32(p + WIRE_OFF_VAL_LEN);
	msg->key = NULL;
	msg->value = NULL;
	return WIRE_OK;
}

/* Ops that name no key: a digest or a peer sync carries only a payload. */
static int op_is_keyless(uint8_t op)
{
	op &= (uint8_t)~WIRE_REPLY;
	return op == WIRE_OP_DIGEST || op == WIRE_OP_SYNC;
}

enum wire_error wire_decode(const void *buf, size_t len, struct wire_msg *msg)
{
	const uint8_t *p = buf;
	enum wire_error err = wire_decode_header(buf, len, msg);

	if (err != WIRE_OK)
		return err;
	if (msg->flags & ~WIRE_F_ALL)
		return WIRE_ERR_FLAGS;
	if ((msg->op & WIRE_REPLY) && msg->status >= WIRE_ST_COUNT)
		return WIRE_ERR_STATUS;
	if (msg->key_len > WIRE_MAX_KEY || (msg->key_len == 0 && !op_is_keyless(msg->op)))
		return WIRE_ERR_KEY_LEN;
	/* 64-bit sums: key_len + val_len cannot wrap, whatever val_len says. */
	uint64_t body = (uint64_t)msg->key_len + (uint64_t)msg->val_len;
	if ((uint64_t)len - WIRE_HDR_LEN < body)
		return WIRE_ERR_TRUNCATED;
	if ((uint64_t)len - WIRE_HDR_LEN > body)
		return WIRE_ERR_TRAILING;
	msg->key = msg->key_len ? p + WIRE_HDR_LEN : NULL;
	msg->value = msg->val_len ? p + WIRE_HDR_LEN + msg->key_len : NULL;
	return WIRE_OK;
}

int wire_encode(const struct wire_msg *msg, void *buf, size_t cap)
{
	uint8_t *p = buf;
	size_t len;

	if (!wire_op_valid(msg->op & (uint8_t)~WIRE_REPLY))
		return -EINVAL;
	if (msg->key_len > WIRE_MAX_KEY || (msg->key_len == 0 && !op_is_keyless(msg->op)))
		return -EINVAL;
	if ((msg->key_len && !msg->key) || (msg->val_len && !msg->value))
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
	p[WIRE_OFF_RESERVED] = 0;
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
	return (int)len;
}
