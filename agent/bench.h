/*
 * bench.h - `skewless bench`, the load generator.
 */
#ifndef SKL_BENCH_H
#define SKL_BENCH_H

#include "skewless.h"

/*
 * Run `bench` with argv[0] == "bench". config_path, mode, consistency, json
 * and timeout_ms (0: the config's) come from the options given before the
 * command (they may be repeated after it). Returns the process exit code.
 */
int bench_main(const char *config_path, enum skl_mode mode, enum skl_consistency consistency,
	       int json, uint32_t timeout_ms, int argc, char **argv);

#endif
