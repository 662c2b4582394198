/*
 * scores.c - the per-node score table (see scores.h for who writes what).
 */
#include <string.h>

#include "scores.h"

void scores_init(struct scores *s, const struct cfg *cfg, uint16_t nworkers)
{
	memset(s, 0, sizeof(*s));
	/* At least one column: readers sum them without a test for none. */
	s->nworkers = nworkers ? nworkers : 1;
	for (unsigned i = 0; i < SCORES_NODES; i++)
		s->state[i] = SCORES_UNTRACKED;
	for (unsigned i = 0; i < cfg->nnodes; i++)
		scores_set(s, cfg->nodes[i].id, 100, SCORES_UNKNOWN);
}

void scores_set(struct scores *s, uint16_t id, uint8_t health, enum scores_state state)
{
	bool alive = state == SCORES_UP || state == SCORES_UNKNOWN;

	if (id == 0 || id >= SCORES_NODES)
		return;
	if (health > 100)
		health = 100;
	__atomic_store_n(&s->health[id], health, __ATOMIC_RELAXED);
	__atomic_store_n(&s->state[id], (uint8_t)state, __ATOMIC_RELAXED);
	__atomic_store_n(&s->delay_unit[id], alive ? SCORES_DELAY_ONE / (health + 1u) : 0,
			 __ATOMIC_RELAXED);
}

unsigned scores_forget_lost(struct scores *s, uint64_t now_tsc, uint64_t idle_tsc)
{
	unsigned reset = 0;

	for (unsigned id = 1; id < SCORES_NODES; id++) {
		uint64_t last = __atomic_load_n(&s->last_reply_tsc[id], __ATOMIC_RELAXED);

		/* Counted from the last write-off too, so a quiet node is not reset again at once. */
		if (s->written_off_tsc[id] > last)
			last = s->written_off_tsc[id];

		int32_t raw = scores_inflight_raw(s, id);

		/*
		 * A worker may have stored a reply's time after the caller read
		 * now_tsc: that reply is recent, not idle_tsc old (now_tsc - last
		 * would wrap, and write off the in-flight of a busy node).
		 */
		if (raw < 0) /* late replies: written off too much */
			__atomic_store_n(&s->forgotten[id], s->forgotten[id] + (uint32_t)raw,
					 __ATOMIC_RELAXED);
		else if (raw > 0 && now_tsc > last && now_tsc - last > idle_tsc) {
			__atomic_store_n(&s->forgotten[id], s->forgotten[id] + (uint32_t)raw,
					 __ATOMIC_RELAXED);
			s->written_off_tsc[id] = now_tsc;
			reset++;
		}
	}
	return reset;
}

const char *scores_state_name(enum scores_state st)
{
	switch (st) {
	case SCORES_UNKNOWN:
		return "unknown";
	case SCORES_UP:
		return "up";
	case SCORES_DOWN:
		return "down";
	case SCORES_UNTRACKED:
		return "untracked";
	}
	return "?";
}
