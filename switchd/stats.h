/*
 * stats.h - the switch as a whole: `stats` on the control socket and
 * /skewless/stats in telemetry (counters by kind, ports, workers, the CDT's
 * size, digests, the directory's figures). A reader on top of every module:
 * it changes nothing.
 */
#ifndef SKL_SW_STATS_H
#define SKL_SW_STATS_H

struct sw;

/* Register the `stats` command (telemetry's /skewless/stats is registered at load). */
void stats_init(struct sw *sw);

#endif
