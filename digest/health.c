/*
 * health.c - the switch's per-node health table: digest window, weighted
 * score, failure detection, seq-gap loss accounting (health.h has the
 * threading contract: one control thread writes, fast-path lcores read).
 *
 * Every store to a field that readers may load is a relaxed atomic store of a
 * naturally aligned field: readers never see a torn value, and no field's
 * meaning depends on another's (health and alive are each safe alone; a node
 * briefly "alive with health 0" or "down with old health" is handled by the
 * selector as it would be a moment later).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "health.h"

#define STORE(field, value) __atomic_store_n(&(field), (value), __ATOMIC_RELAXED)
#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

static const char *const counter_names[] = {
#define X(name, str, help) str,
	DIG_COUNTERS(X)
#undef X
};
static const char *const counter_help[] = {
#define X(name, str, help) help,
	DIG_COUNTERS(X)
#undef X
};

const char *dig_counter_name(enum dig_counter c)
{
	return (unsigned)c < DIG_CNT_COUNT ? counter_names[c] : "?";
}

const char *dig_counter_help(enum dig_counter c)
{
	return (unsigned)c < DIG_CNT_COUNT ? counter_help[c] : "?";
}

static void count(struct dig_table *t, enum dig_counter c, uint64_t n)
{
	STORE(t->counters[c], LOAD(t->counters[c]) + n); /* single writer: no RMW needed */
}

int dig_table_init(struct dig_table *t, const struct cfg_digest *cfg)
{
	if (!t || !cfg || cfg->window == 0 || cfg->window > CFG_WINDOW_MAX ||
	    cfg->interval_ms == 0 || cfg->down_after_intervals == 0)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->cfg = *cfg;
	return 0;
}

int dig_table_track(struct dig_table *t, uint16_t id, uint64_t now_us)
{
	struct dig_node_stats *n;

	if (id == 0 || id >= DIG_NODES)
		return -EINVAL;
	n = &t->node[id];
	memset(&t->win[id], 0, sizeof(t->win[id]));
	/* Until its first digest says otherwise, the node may be on its slowest
	 * interval: a switch that just started must wait that long to hear it. */
	STORE(n->interval_ms, t->cfg.slow_interval_ms > t->cfg.interval_ms ? t->cfg.slow_interval_ms
									   : t->cfg.interval_ms);
	STORE(n->last_digest_us, now_us);
	STORE(n->tracked, 1);
	STORE(t->health[id], DIG_METRIC_MAX);
	STORE(t->alive[id], 1);
	return 0;
}

int dig_table_track_all(struct dig_table *t, const struct cfg *cfg, uint64_t now_us)
{
	for (uint16_t i = 0; i < cfg->nnodes; i++) {
		int rc = dig_table_track(t, cfg->nodes[i].id, now_us);

		if (rc)
			return rc;
	}
	return 0;
}

double dig_window_health(const struct dig_window *w, const struct cfg_digest *cfg)
{
	double sum = 0, wsum = 0;
	unsigned i;

	if (w->count == 0)
		return DIG_METRIC_MAX;
	/* i = 0 is the newest score and takes the newest weight, window_weights[window - 1]. */
	for (i = 0; i < w->count; i++) {
		unsigned slot = (w->head + cfg->window - 1 - i) % cfg->window;
		double weight = cfg->window_weights[cfg->window - 1 - i];

		sum += weight * w->score[slot];
		wsum += weight;
	}
	if (wsum <= 0) /* all weights 0 in the config: the newest score alone */
		return w->score[(w->head + cfg->window - 1) % cfg->window];
	return sum / wsum;
}

static void window_push(struct dig_window *w, const struct cfg_digest *cfg, double score)
{
	w->score[w->head] = (float)score;
	w->head = (uint8_t)((w->head + 1) % cfg->window);
	if (w->count < cfg->window)
		w->count++;
}

int dig_table_receive(struct dig_table *t, uint16_t id, const struct dig_digest *d,
		      uint64_t now_us)
{
	struct dig_node_stats *n;
	uint64_t gap = 0;

	if (id == 0 || id >= DIG_NODES)
		return -EINVAL;
	n = &t->node[id];
	if (!n->tracked) {
		count(t, DIG_CNT_UNTRACKED, 1);
		return -ENOENT;
	}

	if (n->last_seq != 0 && d->boot_id != n->boot_id) {
		/* The node restarted: its seq starts again; old scores describe another process. */
		count(t, DIG_CNT_RESTARTS, 1);
		memset(&t->win[id], 0, sizeof(t->win[id]));
	} else if (n->last_seq != 0) {
		/* Serial-number order (RFC 1982 style), so a wrapped seq still counts as newer. */
		int32_t ahead = (int32_t)(d->seq - n->last_seq);

		if (ahead <= 0) {
			STORE(n->stale, n->stale + 1);
			count(t, DIG_CNT_STALE, 1);
			return -EALREADY;
		}
		gap = (uint64_t)ahead - 1;
		if (d->seq < n->last_seq && gap) /* wrapped: senders skip seq 0 */
			gap--;
	}
	/* The first digest of a boot counts no loss: the switch may have started later. */

	if (gap) {
		STORE(n->lost, n->lost + gap);
		count(t, DIG_CNT_LOST, gap);
	}
	STORE(n->received, n->received + 1);
	STORE(n->last_seq, d->seq);
	STORE(n->boot_id, d->boot_id);
	STORE(n->interval_ms, (uint32_t)d->interval_ms);
	STORE(n->last_digest_us, now_us);
	count(t, DIG_CNT_ACCEPTED, 1);

	if (!LOAD(t->alive[id])) {
		/* Back from down: what it reported before the silence no longer applies. */
		memset(&t->win[id], 0, sizeof(t->win[id]));
		count(t, DIG_CNT_UP, 1);
	}
	window_push(&t->win[id], &t->cfg, dig_score(&t->cfg, &d->m));
	STORE(t->health[id], (uint8_t)lround(dig_window_health(&t->win[id], &t->cfg)));
	STORE(t->alive[id], 1);
	return 0;
}

int dig_table_receive_datagram(struct dig_table *t, const void *buf, size_t len,
			       uint64_t now_us)
{
	struct dig_digest d;
	uint16_t id = 0;
	enum dig_error err = dig_datagram_parse(buf, len, &id, &d);

	if (err != DIG_OK) {
		STORE(t->decode_errors[err], t->decode_errors[err] + 1);
		count(t, DIG_CNT_MALFORMED, 1);
		return -EBADMSG;
	}
	return dig_table_receive(t, id, &d, now_us);
}

void dig_table_heard(struct dig_table *t, uint16_t id, uint64_t at_us)
{
	if (id > 0 && id < DIG_NODES && at_us > t->node[id].last_heard_us)
		STORE(t->node[id].last_heard_us, at_us);
}

unsigned dig_table_tick(struct dig_table *t, uint64_t now_us)
{
	unsigned down = 0;

	for (unsigned id = 1; id < DIG_NODES; id++) {
		const struct dig_node_stats *n = &t->node[id];
		uint64_t silent_limit;

		if (!n->tracked || !t->alive[id])
			continue;
		/*
		 * down_after_intervals x the node's current interval, but never
		 * under that many base intervals: a loaded node announces 20 ms, and 60 ms of silence on
		 * a busy machine is scheduling noise, not a failure.
		 */
		uint32_t interval = n->interval_ms > t->cfg.interval_ms ? n->interval_ms
									  : t->cfg.interval_ms;

		uint64_t last = n->last_heard_us > n->last_digest_us ? n->last_heard_us
								     : n->last_digest_us;

		silent_limit = (uint64_t)t->cfg.down_after_intervals * interval * 1000;
		if (now_us < last || now_us - last < silent_limit)
			continue;
		/* Health first: a reader that sees alive still 1 then sees the node at its worst. */
		STORE(t->health[id], 0);
		STORE(t->alive[id], 0);
		count(t, DIG_CNT_DOWN, 1);
		down++;
	}
	return down;
}

int dig_table_node(const struct dig_table *t, uint16_t id, struct dig_node_view *v)
{
	const struct dig_node_stats *n;
	uint64_t expected;

	if (id == 0 || id >= DIG_NODES || !v)
		return -EINVAL;
	n = &t->node[id];
	memset(v, 0, sizeof(*v));
	v->id = id;
	v->tracked = LOAD(n->tracked) != 0;
	v->alive = dig_alive(t, id);
	v->health = dig_health(t, id);
	v->last_digest_us = LOAD(n->last_digest_us);
	v->interval_ms = LOAD(n->interval_ms);
	v->last_seq = LOAD(n->last_seq);
	v->received = LOAD(n->received);
	v->lost = LOAD(n->lost);
	v->stale = LOAD(n->stale);
	expected = v->received + v->lost;
	v->loss_rate = expected ? (double)v->lost / (double)expected : 0;
	return 0;
}
