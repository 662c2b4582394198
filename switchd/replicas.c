/*
 * replicas.c - REPLICATE, UNREPLICATE and the trim of each entry's replica
 * set, placed by the load the sets put on the nodes (see replicas.h).
 */
#include "replicas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "payload.h"
#include "peer_sync.h"
#include "place.h"
#include "switchd.h"

_Static_assert(CDT_MAX_REPLICAS <= WIRE_REPL_MAX_TARGETS, "a REPLICATE can name every replica");

/*
 * The nodes that may hold a copy of an entry's key: a bit per node id for
 * every target a REPLICATE of this switch named since the key was installed.
 * A removal sends UNREPLICATE to these, the home and the set's members, not
 * to every node: at hundreds of nodes one UNREPLICATE per node and removal,
 * each a job at a node, outweighs the hot keys' own reads (docs/benchmarks.md,
 * "Simulator"). A copy this switch never asked for (a peer's, before this
 * switch owned the key) is left behind as one a lost UNREPLICATE leaves:
 * harmless (replicas_drop()).
 */
struct replicas_copies {
	uint64_t bits[(WIRE_MAX_NODE + 64) / 64];
};

struct replicas {
	struct replicas_copies *copies; /* [cdt max_entries], by entry index */
	/* By entry index: the key's share of the requests in the last epoch it was
	 * hot (0: not known, a pin or a peer's key); what its replicas are charged. */
	double *share;
	struct place place;	 /* expected load of the sets on each node (place.h) */
	struct place_cand *cand; /* [CFG_MAX_NODES]: pick_targets()' candidates */
	uint64_t trims;		 /* copies dropped from sets grown past what their key wants */
};

int replicas_init(struct sw *sw, char *err, size_t errlen)
{
	struct replicas *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "out of memory for the directory manager");
		return -1;
	}
	sw->replicas = r;
	r->copies = calloc(sw->cdt->max_entries, sizeof(*r->copies));
	r->share = calloc(sw->cdt->max_entries, sizeof(*r->share));
	/* Room for every node a config can name: a ring change may add nodes. */
	r->cand = calloc(CFG_MAX_NODES, sizeof(*r->cand));
	if (!r->copies || !r->share || !r->cand || place_init(&r->place, WIRE_MAX_NODE) != 0) {
		snprintf(err, errlen, "out of memory for the directory manager");
		return -1;
	}
	return 0;
}

void replicas_fini(struct sw *sw)
{
	struct replicas *r = sw->replicas;

	if (r) {
		free(r->copies);
		free(r->share);
		free(r->cand);
		place_free(&r->place);
	}
	free(r);
	sw->replicas = NULL;
}

static void copies_add(struct replicas_copies *c, uint16_t node)
{
	c->bits[node / 64] |= 1ull << (node % 64);
}

static bool copies_has(const struct replicas_copies *c, uint16_t node)
{
	return c->bits[node / 64] >> (node % 64) & 1;
}

void replicas_set_share(struct sw *sw, const struct cdt_entry *e, double share)
{
	sw->replicas->share[e->index] = share;
}

/* e's share of the requests: measured, or else what its want of replicas implies. */
static double share_of(const struct sw *sw, const struct cdt_entry *e)
{
	double s = sw->replicas->share[e->index];

	return s > 0 ? s
		     : hot_share_for_replicas(e->want_replicas, sw->cfg->nnodes,
					      sw->cfg->directory.replica_factor);
}

/*
 * Pick up to want targets among alive nodes outside e's set st: the least
 * expected load of the directory's sets first (place.h), then the least
 * expected delay (sel_cost(), as reads are weighed) times one plus the copies
 * the node holds, then the config's order. The chosen are charged e's share
 * and a copy, so the keys filled in one round spread. Returns how many.
 */
static unsigned pick_targets(const struct sw *sw, const struct cdt_entry *e,
			     const struct cdt_state *st, unsigned want, uint16_t *out)
{
	struct replicas *r = sw->replicas;

	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;

		r->cand[i] = (struct place_cand){.id = id, .cost = sel_cost(&sw->scores, id)};
	}
	return place_pick(&r->place, r->cand, sw->cfg->nnodes, st, e->home, share_of(sw, e), want,
			  out);
}

void replicas_charge(struct sw *sw)
{
	struct replicas *r = sw->replicas;
	uint32_t it = 0;
	struct cdt_entry *e;

	double hot = 0;

	place_clear(&r->place);
	while ((e = cdt_next(sw->cdt, &it)) != NULL) {
		const struct cdt_state *st = cdt_entry_state(e);

		if (st && e->owner == 0) {
			double share = share_of(sw, e);

			place_charge_set(&r->place, st, e->home, share);
			hot += share;
		}
	}
	/* The rest of the requests go to the keys' homes on the ring. */
	place_charge_ring(&r->place, sw_ring(sw), 1 - hot);
}

/*
 * The home pushes only if its version is still exactly the one asked for
 * (nodes/repl.c), so no replica gets a version the switch has not seen
 * complete.
 */
void replicas_add(struct sw *sw, struct cdt_entry *e, const struct cdt_state *st, uint64_t version)
{
	struct wire_replicate req = {.owner = sw->self->id};
	unsigned want = e->want_replicas;
	uint16_t key_len;
	const uint8_t *key = cdt_entry_key(sw->cdt, e, &key_len);

	/* A peer's key is that peer's to replicate; none of ours while a lease is missing. */
	if (st->nreplicas >= want || key_len == 0 || e->owner != 0 || !peer_sync_may_replicate(sw))
		return;
	req.ntargets = (uint8_t)pick_targets(sw, e, st, want - st->nreplicas, req.targets);
	if (req.ntargets == 0)
		return;
	for (unsigned i = 0; i < req.ntargets; i++) {
		copies_add(&sw->replicas->copies[e->index], req.targets[i]);
		if (req.targets[i] == e->trimmed)
			__atomic_store_n(&e->trimmed, 0, __ATOMIC_RELAXED);
	}
	egress_replicate(sw, e->home, e->keyhash, key, key_len, version, &req);
}

void replicas_add_completed(struct sw *sw, struct cdt_entry *e)
{
	const struct cdt_state *st = cdt_entry_state(e);

	replicas_add(sw, e, st, st->completed);
}

void replicas_note_set(struct sw *sw, const struct cdt_entry *e)
{
	struct replicas_copies *copies = &sw->replicas->copies[e->index];
	const struct cdt_state *st = cdt_entry_state(e);

	/* The last set's members too (a forced pin names nodes no REPLICATE did). */
	for (unsigned i = 0; i < st->nreplicas; i++)
		copies_add(copies, st->replicas[i]);
	copies_add(copies, e->home);
}

void replicas_drop(struct sw *sw, uint32_t index, bool owned, uint64_t keyhash, const uint8_t *key,
		   uint16_t key_len)
{
	struct replicas_copies *copies = &sw->replicas->copies[index];

	if (owned) {
		/*
		 * After the removal (and its grace period) no read goes to a
		 * replica any more: drop the copies where this switch put them;
		 * the home forgets where it pushed them (nodes/repl.c). A copy
		 * left behind (a lost UNREPLICATE) is harmless: reads go only to
		 * nodes in a set, and a node joins a set only by acking the
		 * completed version.
		 */
		for (unsigned i = 0; i < sw->cfg->nnodes; i++)
			if (copies_has(copies, sw->cfg->nodes[i].id))
				egress_unreplicate(sw, sw->cfg->nodes[i].id, keyhash, key, key_len);
	}
	/* Routed to a peer: the copies are the owner's business. */
	memset(copies, 0, sizeof(*copies));
	sw->replicas->share[index] = 0;
}

/*
 * A set grown past the replicas its key wants (its share fell, or a
 * REPLICATE added a node while a write's holders were still confirming)
 * loses its busiest copy, one per round: every write to the key pushes to
 * each copy, a service time there, so a copy beyond the want costs capacity.
 * Most sets overshoot by one copy as their keys are installed; trimmed to
 * their want, not left one past it, they stay there (docs/benchmarks.md has
 * what it saves the nodes). The node leaves the set first, so no read goes
 * there, then drops its copy (UNREPLICATE); the home stops pushing to it
 * once it answers the next push that it holds nothing (nodes/repl.c). A
 * write that the node confirmed before its copy went may still list it as
 * a holder: marked trimmed, it joins no set until a REPLICATE names it
 * again. Keys of a peer, and pins, are left as they are.
 */
static void trim(struct sw *sw, struct cdt_entry *e)
{
	const struct cdt_state *st = cdt_entry_state(e);
	uint16_t key_len, drop = 0;
	uint64_t worst = 0;
	const uint8_t *key = cdt_entry_key(sw->cdt, e, &key_len);

	if (st->nreplicas <= e->want_replicas || e->pinned || e->owner != 0 || key_len == 0)
		return;
	for (unsigned i = 0; i < st->nreplicas; i++) {
		uint16_t id = st->replicas[i];
		uint64_t cost = sel_cost(&sw->scores, id);

		cost = cost ? cost : UINT64_MAX; /* down: the first to go */
		if (id != e->home && (!drop || cost > worst)) {
			drop = id;
			worst = cost;
		}
	}
	if (!drop)
		return;
	__atomic_store_n(&e->trimmed, drop, __ATOMIC_RELAXED);
	if (cdt_apply(sw->cdt, sw->cdt->nworkers, e, CDT_EV_DROP, 0, drop, NULL) <= 0)
		return;
	sw->replicas->trims++;
	egress_unreplicate(sw, drop, e->keyhash, key, key_len);
}

void replicas_repair(struct sw *sw)
{
	uint32_t it = 0;
	struct cdt_entry *e;

	while ((e = cdt_next(sw->cdt, &it)) != NULL) {
		trim(sw, e);
		replicas_add_completed(sw, e);
	}
}

uint64_t replicas_trims(const struct sw *sw)
{
	return sw->replicas->trims;
}
