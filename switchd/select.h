/*
 * select.h - which replica serves a read: least expected delay.
 *
 * Expected delay of node n = (inflight(n) + 1) / health(n): the requests
 * queued ahead of this one, slowed down by how unhealthy the node is. Nodes
 * that are down are never chosen; ties are broken at random so that equal
 * replicas share load instead of the first one taking every read.
 * Pure apart from the caller's RNG state: callable from any lcore.
 */
#ifndef SKL_SW_SELECT_H
#define SKL_SW_SELECT_H

#include <stdint.h>

#include "scores.h"

#define SEL_NONE 0 /* no node: every candidate is down */

/* What the choice saw, for decision logs (filled only when trace != NULL). */
struct sel_trace {
	uint8_t n;
	struct {
		uint16_t node;
		int32_t inflight;
		uint8_t health;
		uint8_t alive;
	} cand[16];
};

/* xorshift64*: per-lcore, cheap, good enough to break ties. *state must be non-zero. */
static inline uint64_t sel_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* 2^20 / (health + 1), health 0..100: a multiply instead of a divide per candidate. */
extern const uint32_t sel_recip[101];

/*
 * Expected delay of node id in fixed point: (inflight + 1) * 2^20 / (health + 1).
 * Health 0 (alive but saturated) gives the largest delay for its load.
 */
static inline uint64_t sel_cost(const struct scores *s, uint16_t id)
{
	uint8_t h = scores_health(s, id);

	return ((uint64_t)scores_inflight(s, id) + 1) * sel_recip[h > 100 ? 100 : h];
}

/* Least expected delay among cand[0..n) that are alive; SEL_NONE when none is. */
uint16_t sel_pick(const struct scores *s, const uint16_t *cand, unsigned n, uint64_t *rng,
		  struct sel_trace *trace);

#endif
