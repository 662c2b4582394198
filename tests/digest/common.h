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

#include "../common/digest_sample.h"

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

#endif
