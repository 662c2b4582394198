/*
 * score.c - the health score of one digest's metrics. One function, used by
 * the node for its own estimate (which drives the emitter's "stable" rule)
 * and by the switch for every digest in its window, so both agree.
 */
#include "digest.h"

uint8_t dig_normalise(uint64_t raw, uint64_t max)
{
	if (raw == 0)
		return 0;
	if (max == 0 || raw >= max)
		return DIG_METRIC_MAX;
	/* Round to nearest; double because raw * 100 may not fit 64 bits. raw < max keeps it <= 100. */
	return (uint8_t)((double)raw * DIG_METRIC_MAX / (double)max + 0.5);
}

double dig_score(const struct cfg_digest *cfg, const struct dig_metrics *m)
{
	double load = cfg->w_queue * m->queue + cfg->w_p95 * m->p95 +
		      cfg->w_rx_rate * m->rx_rate + cfg->w_cpu * m->cpu + cfg->w_io * m->io;
	double health = DIG_METRIC_MAX - load;

	/* The config makes weights sum to 1; clamp anyway for hand-built configs. */
	if (health < 0)
		return 0;
	if (health > DIG_METRIC_MAX)
		return DIG_METRIC_MAX;
	return health;
}
