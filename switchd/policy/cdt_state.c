/*
 * cdt_state.c - the directory's coherence rules as pure transitions (cdt_state.h).
 */
#include <string.h>

#include "cdt_state.h"

static void state_single(struct cdt_state *next, uint64_t version, uint16_t node)
{
	memset(next, 0, CDT_STATE_SMALL);
	next->completed = version;
	next->nreplicas = 1;
	next->replicas[0] = node;
}

/* next = cur plus node; false when node is already there or the set has cap replicas. */
static bool state_add(const struct cdt_state *cur, uint16_t node, unsigned cap,
		      struct cdt_state *next)
{
	if (cur->nreplicas >= cap || cdt_state_has(cur, node))
		return false;
	cdt_state_copy(next, cur);
	next->replicas[next->nreplicas++] = node;
	return true;
}

bool cdt_state_on_reply(const struct cdt_state *cur, uint64_t version, uint16_t replier,
			unsigned cap, struct cdt_state *next)
{
	if (version == 0 || replier == 0 || version < cur->completed)
		return false;
	if (version > cur->completed) {
		state_single(next, version, replier);
		return true;
	}
	return state_add(cur, replier, cap, next);
}

bool cdt_state_on_rc_ack(const struct cdt_state *cur, uint64_t version, uint16_t replica,
			 uint16_t home, unsigned cap, struct cdt_state *next)
{
	/* Unknown completed: an ack may be a late one for an older version (see cdt_state.h). */
	if (version == 0 || replica == 0 || cur->completed == 0 || version < cur->completed)
		return false;
	if (version > cur->completed) {
		state_single(next, version, home);
		if (replica != home)
			next->replicas[next->nreplicas++] = replica;
		return true;
	}
	return state_add(cur, replica, cap, next);
}

bool cdt_state_without(const struct cdt_state *cur, uint16_t node, uint16_t home,
		       struct cdt_state *next)
{
	unsigned n = 0;

	if (node == home || cur->nreplicas <= 1 || !cdt_state_has(cur, node))
		return false;
	cdt_state_copy(next, cur);
	for (unsigned i = 0; i < cur->nreplicas; i++)
		if (cur->replicas[i] != node)
			next->replicas[n++] = cur->replicas[i];
	next->nreplicas = (uint8_t)n;
	return true;
}
