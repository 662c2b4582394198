/*
 * digest_sample.h - a valid digest for tests of the DIGEST codec
 * (tests/proto) and of what digest/ does with digests (tests/digest).
 */
#ifndef SKL_TEST_DIGEST_SAMPLE_H
#define SKL_TEST_DIGEST_SAMPLE_H

#include <string.h>

#include "digest_codec.h"

/* A valid digest with every metric at `load` (0..100). */
static inline struct dig_digest digest_at(uint32_t seq, uint8_t load)
{
	struct dig_digest d;

	memset(&d, 0, sizeof(d));
	d.interval_ms = 100;
	d.seq = seq;
	d.boot_id = 42;
	d.ts_us = 1000000ull * seq;
	d.queue_len = load;
	d.p95_us = 100u * load;
	d.rx_rate = 500u * load;
	d.m = (struct dig_metrics){load, load, load, load, load, load};
	d.health = (uint8_t)(100 - load);
	return d;
}

#endif
