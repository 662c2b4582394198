/*
 * scores.h - per-node score tables, "SRAM-style" flat arrays indexed by node
 * id (DESIGN.md section 5): in-flight requests, health 0..100, alive flag.
 *
 * Who writes what:
 *   inflight[]      every worker lcore, with relaxed atomic add/sub (a request
 *                   forwarded to a node +1, its reply -1). Relaxed is enough:
 *                   the count steers load, it orders nothing.
 *   health[], alive[], state[]  the control thread only (single writer, relaxed
 *                   stores), from digests and failure detection.
 *   last_reply_tsc[] workers (relaxed store); the control thread reads it to
 *                   forget in-flight counts of requests whose replies were lost.
 * Readers anywhere use relaxed loads; a reader may see health from a newer
 * update than alive, and every such mix is safe to act on.
 */
#ifndef SKL_SW_SCORES_H
#define SKL_SW_SCORES_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#define SCORES_NODES (CFG_MAX_NODES + 1) /* slot 0 unused: node 0 is "no node" */

/* What the switch knows of a node's liveness. UNKNOWN (no digest yet) routes like UP. */
enum scores_state { SCORES_UNKNOWN, SCORES_UP, SCORES_DOWN, SCORES_UNTRACKED };

struct scores {
	int32_t inflight[SCORES_NODES];
	uint8_t health[SCORES_NODES];
	uint8_t alive[SCORES_NODES];
	uint8_t state[SCORES_NODES];
	uint64_t last_reply_tsc[SCORES_NODES];
};

/* Every node of cfg tracked: UNKNOWN, alive, health 100. Others untracked and down. */
void scores_init(struct scores *s, const struct cfg *cfg);

static inline int32_t scores_inflight(const struct scores *s, uint16_t id)
{
	int32_t v = __atomic_load_n(&s->inflight[id], __ATOMIC_RELAXED);

	return v > 0 ? v : 0; /* a reply for a request sent before a restart may undercount */
}
static inline uint8_t scores_health(const struct scores *s, uint16_t id)
{
	return __atomic_load_n(&s->health[id], __ATOMIC_RELAXED);
}
static inline bool scores_alive(const struct scores *s, uint16_t id)
{
	return __atomic_load_n(&s->alive[id], __ATOMIC_RELAXED) != 0;
}
static inline void scores_inflight_inc(struct scores *s, uint16_t id)
{
	__atomic_fetch_add(&s->inflight[id], 1, __ATOMIC_RELAXED);
}
/* One reply from node id: -1, never below zero for long (clamped by readers). */
static inline void scores_inflight_dec(struct scores *s, uint16_t id, uint64_t now_tsc)
{
	if (__atomic_load_n(&s->inflight[id], __ATOMIC_RELAXED) > 0)
		__atomic_fetch_sub(&s->inflight[id], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->last_reply_tsc[id], now_tsc, __ATOMIC_RELAXED);
}

/* Control thread only: set a node's health and liveness. */
void scores_set(struct scores *s, uint16_t id, uint8_t health, enum scores_state state);

/*
 * Control thread: a node with requests in flight but no reply for idle_tsc
 * cycles has lost them (dropped datagrams): reset its count to 0 so it is not
 * shunned forever. Returns the number of nodes reset.
 */
unsigned scores_forget_lost(struct scores *s, uint64_t now_tsc, uint64_t idle_tsc);

const char *scores_state_name(enum scores_state st);

#endif
