/*
 * scores.h - per-node score tables, "SRAM-style" flat arrays indexed by node
 * id (docs/design.md section 5): in-flight requests, health 0..100, liveness.
 *
 * Who writes what:
 *   outstanding[w][]  worker w only (single writer, plain relaxed stores):
 *                   requests it forwarded to each node minus replies it saw
 *                   from each node (a wrapping counter: a reply may come back
 *                   through another worker). In-flight = sum over workers -
 *                   forgotten. A shared counter would need a locked add per
 *                   request, a large part of the fast path's cycles; the
 *                   sum costs one load per worker and candidate, and only for
 *                   directory reads.
 *   forgotten[]     the control thread: in-flight it wrote off as lost.
 *   health[], state[], delay_unit[]  the control thread only (single writer,
 *                   relaxed stores), from digests and failure detection. A node
 *                   is alive exactly when its delay_unit is not 0.
 *   last_reply_tsc[] workers (relaxed store): when a reply from the node last
 *                   came. The control thread reads it to forget in-flight
 *                   counts of requests whose replies were lost, and as a sign
 *                   of life for failure detection.
 *   written_off_tsc[] the control thread only: when it last forgot a node's
 *                   in-flight count.
 * Readers anywhere use relaxed loads; a reader may see health from a newer
 * update than delay_unit, and every such mix is safe to act on.
 */
#ifndef SKL_SW_SCORES_H
#define SKL_SW_SCORES_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

#define SCORES_NODES (CFG_MAX_NODES + 1) /* slot 0 unused: node 0 is "no node" */
#define SCORES_DELAY_ONE (1u << 20)	   /* fixed-point 1 of delay_unit[] */

/* What the switch knows of a node's liveness. UNKNOWN (no digest yet) routes like UP. */
enum scores_state { SCORES_UNKNOWN, SCORES_UP, SCORES_DOWN, SCORES_UNTRACKED };

#define SCORES_MAX_WORKERS 16

struct scores {
	uint16_t nworkers;
	uint32_t outstanding[SCORES_MAX_WORKERS][SCORES_NODES]; /* wrap-around counters */
	uint32_t forgotten[SCORES_NODES];
	uint8_t health[SCORES_NODES];
	uint8_t state[SCORES_NODES];
	/* 2^20 / (health + 1) while alive, 0 while down: what one request in flight
	 * adds to the node's expected delay (select.h), ready for a multiply. */
	uint32_t delay_unit[SCORES_NODES];
	uint64_t last_reply_tsc[SCORES_NODES];
	uint64_t written_off_tsc[SCORES_NODES];
};

/* Every node of cfg tracked: UNKNOWN, alive, health 100. Others untracked and down. */
void scores_init(struct scores *s, const struct cfg *cfg, uint16_t nworkers);

/* sum(outstanding) - forgotten, as a signed difference of wrapping counters. */
static inline int32_t scores_inflight_raw(const struct scores *s, uint16_t id)
{
	/* nworkers >= 1 (scores_init): worker 0's without a test, the others' after it. */
	uint32_t v = __atomic_load_n(&s->outstanding[0][id], __ATOMIC_RELAXED) -
		     __atomic_load_n(&s->forgotten[id], __ATOMIC_RELAXED);

	for (unsigned w = 1; w < s->nworkers; w++)
		v += __atomic_load_n(&s->outstanding[w][id], __ATOMIC_RELAXED);
	return (int32_t)v;
}

static inline int32_t scores_inflight(const struct scores *s, uint16_t id)
{
	int32_t v = scores_inflight_raw(s, id);

	return v > 0 ? v : 0; /* replies to requests sent before a restart undercount */
}
static inline uint8_t scores_health(const struct scores *s, uint16_t id)
{
	return __atomic_load_n(&s->health[id], __ATOMIC_RELAXED);
}
static inline uint32_t scores_delay_unit(const struct scores *s, uint16_t id)
{
	return __atomic_load_n(&s->delay_unit[id], __ATOMIC_RELAXED);
}
static inline bool scores_alive(const struct scores *s, uint16_t id)
{
	return scores_delay_unit(s, id) != 0;
}
/* Worker w's row of outstanding[], which it alone writes: a worker keeps its address. */
static inline uint32_t *scores_row(struct scores *s, uint16_t w)
{
	return s->outstanding[w];
}
/* The worker whose row this is forwarded a request to node id. */
static inline void scores_row_inc(uint32_t *row, uint16_t id)
{
	__atomic_store_n(&row[id], row[id] + 1, __ATOMIC_RELAXED);
}
/* Worker w forwarded a request to node id. */
static inline void scores_inflight_inc(struct scores *s, uint16_t w, uint16_t id)
{
	scores_row_inc(scores_row(s, w), id);
}
/* Worker w saw a reply from node id. */
static inline void scores_inflight_dec(struct scores *s, uint16_t w, uint16_t id, uint64_t now_tsc)
{
	__atomic_store_n(&s->outstanding[w][id], s->outstanding[w][id] - 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&s->last_reply_tsc[id], __ATOMIC_RELAXED) != now_tsc)
		__atomic_store_n(&s->last_reply_tsc[id], now_tsc, __ATOMIC_RELAXED);
}

/* Control thread only: set a node's health and liveness. */
void scores_set(struct scores *s, uint16_t id, uint8_t health, enum scores_state state);

/*
 * Control thread: a node with requests in flight but no reply for idle_tsc
 * cycles has lost them (dropped datagrams): write them off so it is not
 * shunned forever; and if late replies drove the count below zero, take back
 * what was written off. Returns the number of nodes reset.
 */
unsigned scores_forget_lost(struct scores *s, uint64_t now_tsc, uint64_t idle_tsc);

const char *scores_state_name(enum scores_state st);

#endif
