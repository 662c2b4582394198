/*
 * digest_codec.h - the DIGEST payload (layout 1, docs/protocol.md "DIGEST
 * payload") and the whole DIGEST datagram around it: what a storage node
 * reports about its load. The codec only; digest/ measures, scores and keeps
 * the switch's window.
 *
 * Node side: dig_datagram_build(). Switch side: dig_datagram_parse() (or
 * dig_msg_decode() after wire_decode()).
 */
#ifndef SKL_DIGEST_CODEC_H
#define SKL_DIGEST_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define DIG_LAYOUT_VERSION  1
#define DIG_PAYLOAD_LEN	    40				     /* bytes of a layout-1 payload */
#define DIG_DATAGRAM_LEN    (WIRE_HDR_LEN + DIG_PAYLOAD_LEN) /* 88 */
#define DIG_METRIC_MAX	    100				     /* normalised metrics are 0..100 */
#define DIG_INTERVAL_MAX_MS 60000			     /* same bound as conf/ digest.*_ms */

/* Payload flags. */
#define DIG_F_TRIGGERED 0x1 /* sent early: queue jump or p95 over threshold */
#define DIG_F_ALL	DIG_F_TRIGGERED

/* Normalised metrics, each 0 (idle) .. 100 (at or past its configured maximum). */
struct dig_metrics {
	uint8_t queue;
	uint8_t p95;
	uint8_t rx_rate;
	uint8_t cpu;
	uint8_t io;
	uint8_t mem; /* reported, not part of the score (no weight in the config) */
};

/* One digest, decoded. Raw values are the 12-byte feature vector on the wire. */
struct dig_digest {
	uint8_t flags;	      /* DIG_F_* */
	uint16_t interval_ms; /* sender's interval until its next digest, 1..60000 */
	uint32_t seq;	      /* 1, 2, ... per boot; 0 is never sent */
	uint32_t boot_id;     /* random per node start; a new value restarts seq */
	uint64_t ts_us;	      /* node's clock (CLOCK_REALTIME) when sampled */
	uint32_t queue_len;   /* raw: requests queued + in service */
	uint32_t p95_us;      /* raw: p95 service latency over the interval */
	uint32_t rx_rate;     /* raw: requests received per second */
	struct dig_metrics m;
	uint8_t health; /* node's own dig_score() estimate, 0..100 */
};

/* Why a digest was rejected: X(enum name, counter name). */
#define DIG_ERRORS(X)                                                                              \
	X(DIG_OK, "ok")                                                                            \
	X(DIG_ERR_WIRE, "bad_datagram") /* wire_decode() failed */                                 \
	X(DIG_ERR_OP, "not_digest")	/* op is not DIGEST (or is a reply) */                     \
	X(DIG_ERR_KEY, "has_key")	/* key_len != 0 */                                         \
	X(DIG_ERR_NODE, "bad_node")	/* node id 0 or > WIRE_MAX_NODE */                         \
	X(DIG_ERR_SHORT, "short")	/* payload under DIG_PAYLOAD_LEN */                        \
	X(DIG_ERR_LAYOUT, "bad_layout") /* unknown layout version */                               \
	X(DIG_ERR_FLAGS, "bad_flags")                                                              \
	X(DIG_ERR_INTERVAL, "bad_interval")                                                        \
	X(DIG_ERR_SEQ, "bad_seq")                                                                  \
	X(DIG_ERR_METRIC, "bad_metric") /* a normalised metric or health > 100 */                  \
	X(DIG_ERR_RESERVED, "bad_reserved")                                                        \
	X(DIG_ERR_TRAILING, "trailing_bytes")

enum dig_error {
#define X(name, str) name,
	DIG_ERRORS(X)
#undef X
	    DIG_ERR_COUNT
};

const char *dig_error_name(enum dig_error err);

/*
 * Write d as a layout-1 payload into buf. Returns DIG_PAYLOAD_LEN, -EMSGSIZE
 * when cap is too small, -EINVAL when d would not pass dig_payload_decode().
 */
int dig_payload_encode(const struct dig_digest *d, uint8_t *buf, size_t cap);

/* Validate every field of a payload and fill *d. */
enum dig_error dig_payload_decode(const uint8_t *buf, size_t len, struct dig_digest *d);

/*
 * A whole DIGEST datagram: v1 header (op DIGEST, key_len 0, node = sender) and
 * the payload. Returns the length written (DIG_DATAGRAM_LEN) or a negative errno
 * (-EMSGSIZE, -EINVAL for a bad node id (0 or over WIRE_MAX_NODE) or digest).
 */
int dig_datagram_build(uint16_t node, const struct dig_digest *d, void *buf, size_t cap);

/* For a datagram already passed through wire_decode(): check it is a DIGEST. */
enum dig_error dig_msg_decode(const struct wire_msg *msg, uint16_t *node, struct dig_digest *d);

/* wire_decode() + dig_msg_decode(). */
enum dig_error dig_datagram_parse(const void *buf, size_t len, uint16_t *node,
				  struct dig_digest *d);

#endif
