/*
 * emit.c - the node's adaptive digest interval (emit.h has the rules).
 * Pure state machine over the node's clock, so tests drive it with a
 * simulated one.
 */
#include <errno.h>
#include <string.h>

#include "emit.h"

int dig_emitter_init(struct dig_emitter *e, const struct cfg_digest *cfg, uint64_t now_us)
{
	if (!e || !cfg || cfg->interval_ms == 0 || cfg->fast_interval_ms == 0 ||
	    cfg->slow_interval_ms == 0)
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	e->cfg = *cfg;
	e->mode = DIG_EMIT_BASE;
	e->interval_ms = cfg->interval_ms;
	e->next_us = now_us; /* announce ourselves at once */
	return 0;
}

uint64_t dig_emitter_next_deadline(const struct dig_emitter *e)
{
	return e->next_us;
}

bool dig_emitter_triggered(const struct dig_emitter *e, uint32_t queue_len, uint32_t p95_us)
{
	uint64_t prev = e->last_queue;

	/* Grew by more than queue_jump_pct of the last digest's queue, and by a real amount. */
	if (queue_len >= prev + DIG_QUEUE_JUMP_MIN &&
	    (uint64_t)queue_len * 100 > prev * (100 + (uint64_t)e->cfg.queue_jump_pct))
		return true;
	/* p95 crossed the threshold since the last digest; staying above keeps fast mode instead. */
	return p95_us > e->cfg.p95_threshold_us && e->last_p95_us <= e->cfg.p95_threshold_us;
}

bool dig_emitter_due(const struct dig_emitter *e, uint32_t queue_len, uint32_t p95_us,
		     uint64_t now_us)
{
	return now_us >= e->next_us || dig_emitter_triggered(e, queue_len, p95_us);
}

uint32_t dig_emitter_on_sample(struct dig_emitter *e, struct dig_digest *d, uint64_t now_us)
{
	const struct cfg_digest *cfg = &e->cfg;
	bool triggered = e->sent > 0 && dig_emitter_triggered(e, d->queue_len, d->p95_us);
	/* Still over the threshold keeps reporting fast, without counting as a new trigger. */
	bool overloaded = d->p95_us > cfg->p95_threshold_us;

	if (triggered || overloaded) {
		e->fast_left = cfg->fast_count;
		e->stable_run = 0;
	} else if (d->health > cfg->stable_health) {
		e->stable_run++;
	} else {
		e->stable_run = 0;
	}

	if (e->fast_left > 0) {
		e->fast_left--;
		e->mode = DIG_EMIT_FAST;
		e->interval_ms = cfg->fast_interval_ms;
	} else if (e->stable_run >= cfg->stable_count) {
		e->mode = DIG_EMIT_SLOW;
		e->interval_ms = cfg->slow_interval_ms;
	} else {
		e->mode = DIG_EMIT_BASE;
		e->interval_ms = cfg->interval_ms;
	}

	if (triggered)
		d->flags |= DIG_F_TRIGGERED;
	d->interval_ms = (uint16_t)(e->interval_ms > DIG_INTERVAL_MAX_MS ? DIG_INTERVAL_MAX_MS
									 : e->interval_ms);
	e->last_queue = d->queue_len;
	e->last_p95_us = d->p95_us;
	e->next_us = now_us + (uint64_t)e->interval_ms * 1000;
	e->sent++;
	return e->interval_ms;
}
