/*
 * digest.h - a load digest: what a storage node reports about itself, the
 * health score both sides compute from it. Its binary encoding (the value of
 * a DIGEST datagram, docs/protocol.md "DIGEST payload") is proto/digest_codec.h.
 *
 * Node side: meter.h measures, emit.h decides when to send, dig_datagram_build()
 * makes the datagram. Switch side: dig_datagram_parse() (or dig_payload_decode()
 * after wire_decode()), then health.h keeps the window and the score.
 */
#ifndef SKL_DIGEST_H
#define SKL_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "digest_codec.h"

/*
 * Health of one digest's metrics, 0 (saturated) .. 100 (idle):
 * 100 - (w_queue*queue + w_p95*p95 + w_rx_rate*rx_rate + w_cpu*cpu + w_io*io).
 * The node's own estimate and the switch's window use this same function.
 */
double dig_score(const struct cfg_digest *cfg, const struct dig_metrics *m);

/* raw scaled against max to 0..100 (saturating). max 0 gives 100 for any raw > 0. */
uint8_t dig_normalise(uint64_t raw, uint64_t max);

#endif
