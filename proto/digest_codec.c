/*
 * digest_codec.c - the DIGEST payload (layout 1, docs/protocol.md "DIGEST
 * payload") and the whole DIGEST datagram around it (see digest_codec.h). Decoding trusts nothing:
 * every field is range-checked before the digest reaches the health table.
 */
#include <errno.h>
#include <string.h>

#include "digest_codec.h"

/* Payload field offsets (layout 1). */
enum dig_off {
	DIG_OFF_LAYOUT = 0,
	DIG_OFF_FLAGS = 1,
	DIG_OFF_INTERVAL = 2,
	DIG_OFF_SEQ = 4,
	DIG_OFF_BOOT = 8,
	DIG_OFF_TS = 12,
	DIG_OFF_VEC_QUEUE = 20, /* feature vector: 3 x be32 */
	DIG_OFF_VEC_P95 = 24,
	DIG_OFF_VEC_RX = 28,
	DIG_OFF_QUEUE = 32, /* normalised metrics: 6 x u8 */
	DIG_OFF_P95 = 33,
	DIG_OFF_RX = 34,
	DIG_OFF_CPU = 35,
	DIG_OFF_IO = 36,
	DIG_OFF_MEM = 37,
	DIG_OFF_HEALTH = 38,
	DIG_OFF_RESERVED = 39,
};

static const char *const error_names[] = {
#define X(name, str) str,
    DIG_ERRORS(X)
#undef X
};

const char *dig_error_name(enum dig_error err)
{
	return (unsigned)err < DIG_ERR_COUNT ? error_names[err] : "?";
}

static int metrics_valid(const struct dig_metrics *m, uint8_t health)
{
	return m->queue <= DIG_METRIC_MAX && m->p95 <= DIG_METRIC_MAX &&
	       m->rx_rate <= DIG_METRIC_MAX && m->cpu <= DIG_METRIC_MAX &&
	       m->io <= DIG_METRIC_MAX && m->mem <= DIG_METRIC_MAX && health <= DIG_METRIC_MAX;
}

int dig_payload_encode(const struct dig_digest *d, uint8_t *buf, size_t cap)
{
	if (!d || !buf)
		return -EINVAL;
	if ((d->flags & ~DIG_F_ALL) || d->interval_ms == 0 ||
	    d->interval_ms > DIG_INTERVAL_MAX_MS || d->seq == 0 || !metrics_valid(&d->m, d->health))
		return -EINVAL;
	if (cap < DIG_PAYLOAD_LEN)
		return -EMSGSIZE;
	buf[DIG_OFF_LAYOUT] = DIG_LAYOUT_VERSION;
	buf[DIG_OFF_FLAGS] = d->flags;
	wire_put16(buf + DIG_OFF_INTERVAL, d->interval_ms);
	wire_put32(buf + DIG_OFF_SEQ, d->seq);
	wire_put32(buf + DIG_OFF_BOOT, d->boot_id);
	wire_put64(buf + DIG_OFF_TS, d->ts_us);
	wire_put32(buf + DIG_OFF_VEC_QUEUE, d->queue_len);
	wire_put32(buf + DIG_OFF_VEC_P95, d->p95_us);
	wire_put32(buf + DIG_OFF_VEC_RX, d->rx_rate);
	buf[DIG_OFF_QUEUE] = d->m.queue;
	buf[DIG_OFF_P95] = d->m.p95;
	buf[DIG_OFF_RX] = d->m.rx_rate;
	buf[DIG_OFF_CPU] = d->m.cpu;
	buf[DIG_OFF_IO] = d->m.io;
	buf[DIG_OFF_MEM] = d->m.mem;
	buf[DIG_OFF_HEALTH] = d->health;
	buf[DIG_OFF_RESERVED] = 0;
	return DIG_PAYLOAD_LEN;
}

enum dig_error dig_payload_decode(const uint8_t *buf, size_t len, struct dig_digest *d)
{
	struct dig_digest out;

	/* The layout byte first: a newer layout may be any length. */
	if (!buf || len < 1)
		return DIG_ERR_SHORT;
	if (buf[DIG_OFF_LAYOUT] != DIG_LAYOUT_VERSION)
		return DIG_ERR_LAYOUT;
	if (len < DIG_PAYLOAD_LEN)
		return DIG_ERR_SHORT;
	if (len > DIG_PAYLOAD_LEN)
		return DIG_ERR_TRAILING;

	memset(&out, 0, sizeof(out));
	out.flags = buf[DIG_OFF_FLAGS];
	out.interval_ms = wire_get16(buf + DIG_OFF_INTERVAL);
	out.seq = wire_get32(buf + DIG_OFF_SEQ);
	out.boot_id = wire_get32(buf + DIG_OFF_BOOT);
	out.ts_us = wire_get64(buf + DIG_OFF_TS);
	out.queue_len = wire_get32(buf + DIG_OFF_VEC_QUEUE);
	out.p95_us = wire_get32(buf + DIG_OFF_VEC_P95);
	out.rx_rate = wire_get32(buf + DIG_OFF_VEC_RX);
	out.m.queue = buf[DIG_OFF_QUEUE];
	out.m.p95 = buf[DIG_OFF_P95];
	out.m.rx_rate = buf[DIG_OFF_RX];
	out.m.cpu = buf[DIG_OFF_CPU];
	out.m.io = buf[DIG_OFF_IO];
	out.m.mem = buf[DIG_OFF_MEM];
	out.health = buf[DIG_OFF_HEALTH];

	if (out.flags & ~DIG_F_ALL)
		return DIG_ERR_FLAGS;
	if (out.interval_ms == 0 || out.interval_ms > DIG_INTERVAL_MAX_MS)
		return DIG_ERR_INTERVAL;
	if (out.seq == 0)
		return DIG_ERR_SEQ;
	if (!metrics_valid(&out.m, out.health))
		return DIG_ERR_METRIC;
	if (buf[DIG_OFF_RESERVED] != 0)
		return DIG_ERR_RESERVED;
	*d = out;
	return DIG_OK;
}

int dig_datagram_build(uint16_t node, const struct dig_digest *d, void *buf, size_t cap)
{
	uint8_t payload[DIG_PAYLOAD_LEN];
	struct wire_msg msg;
	int n;

	if (node == 0 || node > WIRE_MAX_NODE)
		return -EINVAL;
	n = dig_payload_encode(d, payload, sizeof(payload));
	if (n < 0)
		return n;
	memset(&msg, 0, sizeof(msg));
	msg.op = WIRE_OP_DIGEST;
	msg.node = node;
	msg.val_len = (uint32_t)n;
	msg.value = payload;
	return wire_encode(&msg, buf, cap);
}

enum dig_error dig_msg_decode(const struct wire_msg *msg, uint16_t *node, struct dig_digest *d)
{
	if (msg->op != WIRE_OP_DIGEST)
		return DIG_ERR_OP;
	if (msg->key_len != 0)
		return DIG_ERR_KEY;
	if (msg->node == 0 || msg->node > WIRE_MAX_NODE)
		return DIG_ERR_NODE;
	enum dig_error err = dig_payload_decode(msg->value, msg->val_len, d);
	if (err == DIG_OK && node)
		*node = msg->node;
	return err;
}

enum dig_error dig_datagram_parse(const void *buf, size_t len, uint16_t *node, struct dig_digest *d)
{
	struct wire_msg msg;

	if (wire_decode(buf, len, &msg) != WIRE_OK)
		return DIG_ERR_WIRE;
	return dig_msg_decode(&msg, node, d);
}
