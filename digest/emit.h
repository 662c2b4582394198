/*
 * emit.h - when a node sends its next digest: the adaptive emission interval.
 *
 * Base interval cfg.interval_ms (100). A queue jump of more than
 * queue_jump_pct (50%) or p95 over p95_threshold_us sends a digest at once
 * and switches to fast_interval_ms (20) for the next fast_count (3) digests.
 * After stable_count (5) digests in a row with health above stable_health
 * (85) the interval stretches to slow_interval_ms (200) until one is not.
 *
 * Use, on the node's digest thread:
 *   at each poll tick: if (dig_emitter_due(e, queue, dig_meter_peek_p95(mt), now))
 *     { dig_meter_sample(mt, queue, now, &d); dig_emitter_on_sample(e, &d, now); send }
 *   and sleep no longer than until dig_emitter_next_deadline(e) (or the poll tick).
 * Single-threaded: the struct belongs to that thread.
 */
#ifndef SKL_DIG_EMIT_H
#define SKL_DIG_EMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "digest.h"

/*
 * A queue must also grow by at least this many requests to count as a jump:
 * 0 -> 1 on an idle node is +inf% but says nothing about load.
 */
#define DIG_QUEUE_JUMP_MIN 4

enum dig_emit_mode { DIG_EMIT_BASE, DIG_EMIT_FAST, DIG_EMIT_SLOW };

struct dig_emitter {
	struct cfg_digest cfg;
	enum dig_emit_mode mode;
	uint32_t interval_ms; /* current interval: the one after the last digest */
	uint32_t fast_left;   /* fast digests still to send */
	uint32_t stable_run;  /* stable digests in a row */
	uint32_t last_queue;  /* queue_len of the last digest sent */
	uint32_t last_p95_us; /* p95 of the last digest sent */
	uint64_t next_us;     /* deadline of the next digest */
	uint64_t sent;	      /* digests sent */
};

/* Start at base interval; the first digest is due at now_us. Returns 0 or -EINVAL. */
int dig_emitter_init(struct dig_emitter *e, const struct cfg_digest *cfg, uint64_t now_us);

/* When the next digest is due (node clock, us). */
uint64_t dig_emitter_next_deadline(const struct dig_emitter *e);

/*
 * Whether a trigger fires for queue_len / p95_us against the last digest sent:
 * a queue jump, or p95 crossing the threshold from below.
 */
bool dig_emitter_triggered(const struct dig_emitter *e, uint32_t queue_len, uint32_t p95_us);

/* Whether a digest should go now: deadline reached or dig_emitter_triggered(). */
bool dig_emitter_due(const struct dig_emitter *e, uint32_t queue_len, uint32_t p95_us,
		     uint64_t now_us);

/*
 * A digest built at now_us is about to be sent: choose the interval that
 * follows it, write it into d->interval_ms (and DIG_F_TRIGGERED into
 * d->flags when a trigger fired), and set the next deadline. Returns the
 * interval in ms.
 */
uint32_t dig_emitter_on_sample(struct dig_emitter *e, struct dig_digest *d, uint64_t now_us);

#endif
