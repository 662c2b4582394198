/*
 * common.h - shared by the digest suites: the default digest config, loaded
 * through conf/ so tests use exactly the documented defaults.
 */
#ifndef SKL_TEST_DIGEST_COMMON_H
#define SKL_TEST_DIGEST_COMMON_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "digest.h"

static inline struct cfg_digest default_digest_cfg(void)
{
	static const char *json =
		"{\"service\":{\"vip\":\"10.0.0.100\"},"
		"\"nodes\":[{\"id\":1,\"name\":\"n1\",\"ip\":\"10.0.0.1\"},"
		"{\"id\":2,\"name\":\"n2\",\"ip\":\"10.0.0.2\"}]}";
	struct cfg *cfg = calloc(1, sizeof(*cfg));
	char err[CFG_ERR_LEN] = "";
	struct cfg_digest d;

	ck_assert_ptr_nonnull(cfg);
	ck_assert_msg(cfg_load_string(json, "test.json", cfg, err, sizeof(err)) == 0, "%s", err);
	d = cfg->digest;
	free(cfg);
	return d;
}

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
