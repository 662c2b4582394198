/*
 * dir_ctl.h - the directory's commands (`cdt show|pin|unpin`, `directory`),
 * /skewless/cdt, and its figures for `cdtctl stats` and /metrics. Control
 * thread, but for the telemetry callback.
 */
#ifndef SKL_SW_DIR_CTL_H
#define SKL_SW_DIR_CTL_H

struct sw;
struct fmt;

/* Register the directory's commands and its /metrics samples. */
void dir_ctl_init(struct sw *sw);

/* The directory's figures (stats, counters of egress and workers) through f. */
void dir_ctl_format_stats(struct sw *sw, struct fmt *f);

#endif
