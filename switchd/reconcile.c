/*
 * reconcile.c - the CDT follows what decide.c wants (see reconcile.h): hot
 * keys in, cold keys out, peers' keys routed to them, and the
 * REPLICATE/UNREPLICATE traffic that keeps each entry's replica set as large
 * as its load asks for.
 */
#include "reconcile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_telemetry.h>

#include "clock.h"
#include "peer_sync.h"
#include "ctl.h"
#include "egress.h"
#include "fmt.h"
#include "keyhash.h"
#include "payload.h"
#include "place.h"
#include "prom.h"
#include "switchd.h"

_Static_assert(CDT_MAX_REPLICAS <= WIRE_REPL_MAX_TARGETS, "a REPLICATE can name every replica");
_Static_assert(CFG_MAX_REPLICAS <= CDT_MAX_REPLICAS, "a set can hold directory.max_replicas");

/* Write completions one round takes: what the workers' ring holds (intake takes no more). */
#define REC_COMPLETIONS SW_COMPLETION_RING

struct reconcile_completion {
	uint64_t keyhash;
	uint64_t version;
};

/*
 * Installed keys waiting for their first replica: the CDT update delay runs
 * from the install (the round decide.c found the key hot, or, with peers, the
 * round the cluster hot set gave it to us) to the first round the entry's set
 * holds a node besides the home, i.e. reads of it are spread. Measured by the
 * control round (so at its resolution), not by the workers: the fast path
 * does nothing more for it. A key retired first, or still waiting after
 * REC_DELAY_GIVE_UP_US, is counted as never served.
 */
#define REC_PENDING	     1024
#define REC_DELAY_GIVE_UP_US (60ull * 1000 * 1000)

struct reconcile_pending {
	uint64_t keyhash;
	uint64_t since_us;
};

/* A key removed because its home moves in a ring change, to be installed again. */
struct reconcile_moved {
	uint64_t keyhash;
	uint16_t key_len;
	uint8_t pinned, want;
	uint8_t key[WIRE_MAX_KEY];
};

/*
 * The nodes that may hold a copy of an entry's key: a bit per node id for
 * every target a REPLICATE of this switch named since the key was installed.
 * A removal sends UNREPLICATE to these, the home and the set's members, not
 * to every node: at hundreds of nodes one UNREPLICATE per node and removal,
 * each a job at a node, outweighs the hot keys' own reads (docs/benchmarks.md,
 * "Simulator"). A copy this switch never asked for (a peer's, before this
 * switch owned the key) is left behind as one a lost UNREPLICATE leaves:
 * harmless (remove_entry()).
 */
struct reconcile_copies {
	uint64_t bits[(WIRE_MAX_NODE + 64) / 64];
};

struct reconcile {
	struct reconcile_stats stats; /* control thread writes; commands read on the same thread */
	struct reconcile_copies *copies; /* [cdt max_entries], by entry index */
	/* By entry index: the key's share of the requests in the last epoch it was
	 * hot (0: not known, a pin or a peer's key); what its replicas are charged. */
	double *share;
	struct place place;	 /* expected load of the sets on each node (place.h) */
	struct place_cand *cand; /* [CFG_MAX_NODES]: pick_targets()' candidates */
	uint32_t ncompleted;
	struct reconcile_completion completed[REC_COMPLETIONS];
	uint32_t npending;
	struct reconcile_pending pending[REC_PENDING];
	struct prom_hist update_delay; /* control thread writes, relaxed */
	uint32_t nmoved, moved_cap;
	struct reconcile_moved *moved; /* reconcile_rehome_remove() -> reconcile_rehome_install() */
	/* Meanwhile: keys whose home moves in the step are not installed (NULL: none). */
	bool (*moving)(void *arg, uint64_t keyhash);
	void *moving_arg;
};

/* Update-delay buckets: a replica answers in about a round trip and a
 * control round; seconds mean something is wrong (the alert is at 1 s). */
static const double update_delay_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
					     0.25,  0.5,    1,	   2.5,	 5,	10};

static void register_commands(struct sw *sw);

int reconcile_init(struct sw *sw, char *err, size_t errlen)
{
	struct reconcile *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "out of memory for the directory manager");
		return -1;
	}
	sw->rec = r;
	r->copies = calloc(sw->cdt->max_entries, sizeof(*r->copies));
	r->share = calloc(sw->cdt->max_entries, sizeof(*r->share));
	/* Room for every node a config can name: a ring change may add nodes. */
	r->cand = calloc(CFG_MAX_NODES, sizeof(*r->cand));
	if (!r->copies || !r->share || !r->cand || place_init(&r->place, WIRE_MAX_NODE) != 0) {
		snprintf(err, errlen, "out of memory for the directory manager");
		return -1;
	}
	prom_hist_init(&r->update_delay, update_delay_bounds, RTE_DIM(update_delay_bounds));
	r->stats.enabled = sw->cfg->directory.enabled;
	__atomic_store_n(&sw->dir_on, r->stats.enabled, __ATOMIC_RELAXED);
	register_commands(sw);
	return 0;
}

void reconcile_fini(struct sw *sw)
{
	if (sw->rec) {
		free(sw->rec->moved);
		free(sw->rec->copies);
		free(sw->rec->share);
		free(sw->rec->cand);
		place_free(&sw->rec->place);
	}
	free(sw->rec);
	sw->rec = NULL;
}

void reconcile_completed(struct sw *sw, uint64_t keyhash, uint64_t version)
{
	struct reconcile *r = sw->rec;

	/* Never full (intake takes at most REC_COMPLETIONS a round); if it were, the
	 * epoch's repair would copy the version out. */
	if (r->ncompleted < REC_COMPLETIONS)
		r->completed[r->ncompleted++] =
		    (struct reconcile_completion){.keyhash = keyhash, .version = version};
}

/* ---- Replication. ---------------------------------------------------------------------- */

/*
 * Pick up to want targets among alive nodes outside e's set st: the least
 * expected load of the directory's sets first (place.h), then the least
 * expected delay (sel_cost(), as reads are weighed) times one plus the copies
 * the node holds, then the config's order. The chosen are charged e's share
 * and a copy, so the keys filled in one round spread. Returns how many.
 */
/* e's share of the requests: measured, or else what its want of replicas implies. */
static double share_of(const struct sw *sw, const struct cdt_entry *e)
{
	double s = sw->rec->share[e->index];

	return s > 0 ? s
		     : hot_share_for_replicas(e->want_replicas, sw->cfg->nnodes,
					      sw->cfg->directory.replica_factor);
}

static unsigned pick_targets(const struct sw *sw, const struct cdt_entry *e,
			     const struct cdt_state *st, unsigned want, uint16_t *out)
{
	struct reconcile *r = sw->rec;

	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;

		r->cand[i] = (struct place_cand){.id = id, .cost = sel_cost(&sw->scores, id)};
	}
	return place_pick(&r->place, r->cand, sw->cfg->nnodes, st, e->home, share_of(sw, e), want,
			  out);
}

/*
 * Every round (and after an epoch's retires): the sets of the entries this
 * switch owns are charged again, at their keys' latest shares, and their
 * copies counted, and the rest of the load by the ring's arcs (place.h).
 */
static void charge_sets(struct sw *sw)
{
	struct reconcile *r = sw->rec;
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

static void copies_add(struct reconcile_copies *c, uint16_t node)
{
	c->bits[node / 64] |= 1ull << (node % 64);
}

static bool copies_has(const struct reconcile_copies *c, uint16_t node)
{
	return c->bits[node / 64] >> (node % 64) & 1;
}

/*
 * Ask e's home to copy version (0: its current one) to as many new nodes as
 * the set is short of. The home pushes only if its version is still exactly
 * that (nodes/repl.c), so no replica gets a version the switch has not seen
 * complete.
 */
static void replicate(struct sw *sw, struct cdt_entry *e, const struct cdt_state *st,
		      uint64_t version)
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
	for (unsigned i = 0; i < req.ntargets; i++)
		copies_add(&sw->rec->copies[e->index], req.targets[i]);
	egress_replicate(sw, e->home, e->keyhash, key, key_len, version, &req);
}

/* REPLICATE the entry's completed version to as many nodes as it is short of. */
static void replicate_completed(struct sw *sw, struct cdt_entry *e)
{
	const struct cdt_state *st = cdt_entry_state(e);

	replicate(sw, e, st, st->completed);
}

/* Remove one entry (unpin, retire): CDT removal, then UNREPLICATE to every node
 * (none for a key owned by a peer switch). */
static int remove_entry(struct sw *sw, struct cdt_entry *e)
{
	uint8_t key[WIRE_MAX_KEY];
	uint16_t key_len, home = e->home;
	uint64_t kh = e->keyhash;
	const uint8_t *k = cdt_entry_key(sw->cdt, e, &key_len);
	struct reconcile_copies *copies = &sw->rec->copies[e->index];
	const struct cdt_state *st = cdt_entry_state(e);
	int rc;

	bool owned = e->owner == 0;

	memcpy(key, k, key_len);
	/* The last set's members too (a forced pin names nodes no REPLICATE did). */
	for (unsigned i = 0; i < st->nreplicas; i++)
		copies_add(copies, st->replicas[i]);
	copies_add(copies, home);
	rc = cdt_remove(sw->cdt, kh);
	if (rc != 0)
		return rc;
	hot_forget(sw->hot, kh);
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
				egress_unreplicate(sw, sw->cfg->nodes[i].id, kh, key, key_len);
	}
	/* Routed to a peer: the copies are the owner's business. */
	memset(copies, 0, sizeof(*copies));
	sw->rec->share[copies - sw->rec->copies] = 0;
	return 0;
}

/*
 * Install a key this switch owns with set {home}, want replicas, its share of
 * the requests (0: not known), and send the home REPLICATE(0). The entry, or
 * NULL (directory full, keyhash collision).
 */
static struct cdt_entry *install(struct sw *sw, uint64_t keyhash, const uint8_t *key,
				 uint16_t key_len, uint8_t want, double share)
{
	struct reconcile *r = sw->rec;
	uint16_t home = ring_home(sw_ring(sw), keyhash);
	struct cdt_entry *e;

	/*
	 * A ring step is under way and the key's home moves in it: the home the
	 * workers' ring gives would soon be wrong (a REPLICATE there could copy
	 * a version the new home is about to write over). Installed after the step.
	 */
	if (r->moving && r->moving(r->moving_arg, keyhash)) {
		r->stats.held_moving++;
		return NULL;
	}
	e = cdt_install(sw->cdt, keyhash, key, key_len, home, &home, 1, 0);
	if (!e) {
		if (errno == ENOSPC)
			r->stats.full++;
		else if (errno == EEXIST)
			r->stats.collisions++;
		return NULL;
	}
	e->want_replicas = want;
	r->share[e->index] = share;
	r->stats.installs++;
	if (want > 1 && r->npending < REC_PENDING)
		r->pending[r->npending++] = (struct reconcile_pending){keyhash, clock_mono_us()};
	else if (want > 1)
		r->stats.delay_unmeasured++;
	/* v = 0: "your current version"; the replies converge from there
	 * (docs/design.md section 5). */
	replicate(sw, e, cdt_entry_state(e), 0);
	return e;
}

/*
 * Install a key as a manual pin: with force, that replica set as it is;
 * otherwise starting from {home}, and the next repair REPLICATEs it out to
 * `want` replicas.
 */
static struct cdt_entry *pin(struct sw *sw, const void *key, size_t key_len, const uint16_t *force,
			     unsigned nforce, uint8_t want)
{
	uint64_t kh = keyhash(key, key_len);
	uint16_t home = ring_home(sw_ring(sw), kh);
	struct cdt_entry *e = cdt_find(sw->cdt, kh);

	if (nforce)
		e = cdt_install(sw->cdt, kh, key, key_len, home, force, nforce, 0);
	else if (!e || !cdt_entry_is(e, key, key_len))
		e = cdt_install(sw->cdt, kh, key, key_len, home, &home, 1, 0);
	if (e) {
		e->pinned = 1;
		e->want_replicas = want;
	}
	return e;
}

/* ---- Ring changes: entries whose home moves (docs/design.md section 12). ---------------- */

uint32_t reconcile_rehome_remove(struct sw *sw, bool (*moves)(void *arg, uint64_t keyhash), void *arg)
{
	struct reconcile *r = sw->rec;
	uint64_t *gone;
	uint32_t it = 0, n = 0, removed = 0;
	struct cdt_entry *e;

	r->moving = moves;
	r->moving_arg = arg;
	gone = calloc(sw->cdt->max_entries ? sw->cdt->max_entries : 1, sizeof(*gone));
	if (!gone)
		return 0;
	/* First the list, then the removals: removing frees slots the iteration walks. */
	while ((e = cdt_next(sw->cdt, &it)) != NULL && n < sw->cdt->max_entries)
		if (e->owner == 0 && moves(arg, e->keyhash))
			gone[n++] = e->keyhash;
	if (r->moved_cap < r->nmoved + n) {
		struct reconcile_moved *m = realloc(r->moved, (r->nmoved + n) * sizeof(*m));

		if (!m) {
			free(gone);
			return 0;
		}
		r->moved = m;
		r->moved_cap = r->nmoved + n;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct reconcile_moved *m = &r->moved[r->nmoved];
		const uint8_t *key;

		e = cdt_find(sw->cdt, gone[i]);
		if (!e)
			continue;
		key = cdt_entry_key(sw->cdt, e, &m->key_len);
		memcpy(m->key, key, m->key_len);
		m->keyhash = gone[i];
		m->pinned = e->pinned;
		m->want = e->want_replicas;
		if (remove_entry(sw, e) == 0) {
			r->nmoved++;
			removed++;
		}
	}
	free(gone);
	return removed;
}

uint32_t reconcile_rehome_install(struct sw *sw)
{
	struct reconcile *r = sw->rec;
	uint32_t done = 0;

	r->moving = NULL; /* the step is published: every home is the workers' ring's */
	for (uint32_t i = 0; i < r->nmoved; i++) {
		struct reconcile_moved *m = &r->moved[i];
		struct cdt_entry *e = install(sw, m->keyhash, m->key, m->key_len, m->want, 0);

		if (e) {
			e->pinned = m->pinned;
			done++;
		}
	}
	r->nmoved = 0;
	return done;
}

/* ---- Local policy: the epoch's hot set. -------------------------------------------------- */

/* Install or refresh the epoch's hot keys; retire the ones gone cold. */
static void follow_epoch(struct sw *sw, const struct hot_report *r)
{
	struct reconcile_stats *st = &sw->rec->stats;
	uint32_t installs = 0, retires = 0;

	if (peer_sync_on(sw)) {
		/* With peers the cluster hot set decides what is installed (decide.c). */
		st->hot_set = r->nhot;
		st->epochs++;
		return;
	}
	/* The hot keys installed already take their new want and share; the cold go. */
	for (uint32_t i = 0; i < r->nhot; i++) {
		const struct hot_key *k = &r->hot[i];
		struct cdt_entry *e = cdt_find(sw->cdt, k->keyhash);

		if (!e)
			continue;
		if (!cdt_entry_is(e, k->key, k->key_len)) {
			st->collisions++;
			continue;
		}
		sw->rec->share[e->index] = k->share;
		if (!e->pinned)
			e->want_replicas = (uint8_t)k->replicas;
	}
	for (uint32_t i = 0; i < r->nretired; i++) {
		struct cdt_entry *e = cdt_find(sw->cdt, r->retired[i]);

		if (e && !e->pinned && remove_entry(sw, e) == 0)
			retires++;
	}
	/* Then the new ones, hottest first, each placed by the load the sets put on nodes. */
	charge_sets(sw);
	for (uint32_t i = 0; i < r->nhot; i++) {
		const struct hot_key *k = &r->hot[i];

		if (!cdt_find(sw->cdt, k->keyhash) &&
		    install(sw, k->keyhash, k->key, k->key_len, (uint8_t)k->replicas, k->share))
			installs++;
	}
	st->hot_set = r->nhot;
	st->last_installs = installs;
	st->last_retires = retires;
	st->retires += retires;
	st->epochs++;
}

/*
 * A set grown past the replicas its key wants (its share fell, or a
 * REPLICATE added a node while a write's holders were still confirming)
 * loses its busiest copy, one per round: every write to the key pushes to
 * each copy, a service time there, so a copy beyond the want costs capacity.
 * Most sets overshoot by one copy as their keys are installed; trimmed to
 * their want, not left one past it, they stay there (at 8 nodes no more
 * REPLICATEs went out, and the pushes fell from 5.8% of the nodes' work to
 * 4.4%, docs/benchmarks.md). The node leaves the set first, so no read goes
 * there, then drops its copy (UNREPLICATE); the home stops pushing to it
 * once it answers the next push that it holds nothing (nodes/repl.c). Keys
 * of a peer, and pins, are left as they are.
 */
static void trim(struct sw *sw, struct cdt_entry *e)
{
	const struct cdt_state *st = cdt_entry_state(e);
	uint16_t key_len, drop = 0;
	uint64_t worst = 0;
	const uint8_t *key = cdt_entry_key(sw->cdt, e, &key_len);

	if (st->nreplicas <= e->want_replicas || e->pinned || e->owner != 0 ||
	    key_len == 0)
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
	if (!drop || cdt_apply(sw->cdt, sw->cdt->nworkers, e, CDT_EV_DROP, 0, drop, NULL) <= 0)
		return;
	sw->rec->stats.trims++;
	egress_unreplicate(sw, drop, e->keyhash, key, key_len);
}

/* Every entry short of replicas gets a REPLICATE of its completed version; one past them, a trim. */
static void repair(struct sw *sw)
{
	uint32_t it = 0;
	struct cdt_entry *e;

	while ((e = cdt_next(sw->cdt, &it)) != NULL) {
		trim(sw, e);
		replicate_completed(sw, e);
	}
}

/* Directory on or off; off removes every entry that is not pinned. */
static void set_enabled(struct sw *sw, bool on)
{
	struct reconcile_stats *st = &sw->rec->stats;

	__atomic_store_n(&sw->dir_on, on, __ATOMIC_RELAXED);
	st->enabled = on;
	if (on)
		return;
	/* Off: back to ring-only routing for everything but manual pins. Collect
	 * first: the hash is not iterated while keys are deleted from it. */
	uint64_t *victims = calloc(sw->cdt->max_entries, sizeof(*victims));
	uint32_t it = 0, n = 0;
	struct cdt_entry *e;

	if (!victims)
		return;
	/* A peer's keys stay routed to it: that is not ours to switch off. */
	while ((e = cdt_next(sw->cdt, &it)) != NULL)
		if (!e->pinned && e->owner == 0)
			victims[n++] = e->keyhash;
	for (uint32_t i = 0; i < n; i++)
		if ((e = cdt_find(sw->cdt, victims[i])) != NULL && remove_entry(sw, e) == 0)
			st->retires++;
	free(victims);
	st->hot_set = 0;
}

/* ---- Peer policy: ownership in the CDT. -------------------------------------------------- */

static int cmp_keyhash(const void *a, const void *b)
{
	const uint64_t *x = a;
	const struct peer_key *y = b;

	return *x < y->keyhash ? -1 : *x > y->keyhash;
}

/* Does slot sl's complete owned list hold keyhash? (lists are sorted by keyhash) */
static bool claims(const struct peer_slot *sl, uint64_t keyhash)
{
	return sl->owned_version &&
	       bsearch(&keyhash, sl->owned, sl->nowned, sizeof(*sl->owned), cmp_keyhash);
}

static void set_owner(struct cdt_entry *e, uint16_t owner)
{
	__atomic_store_n(&e->spread, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->owner, owner, __ATOMIC_RELAXED);
}

/* Back to {home}, completed 0: whatever happened while we were not sure is forgotten. */
static void reset_entry(struct sw *sw, struct cdt_entry *e)
{
	uint16_t home = e->home;

	if (cdt_set_replicas(sw->cdt, e, &home, 1, 0) == 0)
		sw->peer_sync->st.resets++;
}

static void reset_owned(struct sw *sw)
{
	uint32_t it = 0;
	struct cdt_entry *e;

	while ((e = cdt_next(sw->cdt, &it)) != NULL)
		if (e->owner == 0)
			reset_entry(sw, e);
}

/* Remove every entry the predicate picks (collected first: no deletes while iterating). */
static uint32_t collect(struct sw *sw, uint64_t *out,
			bool (*pick)(struct sw *, struct cdt_entry *, uint64_t), uint64_t now_us)
{
	uint32_t it = 0, n = 0;
	struct cdt_entry *e;

	while ((e = cdt_next(sw->cdt, &it)) != NULL)
		if (pick(sw, e, now_us))
			out[n++] = e->keyhash;
	return n;
}

/* A remote entry whose owner is no longer live or no longer claims it. */
static bool remote_stale(struct sw *sw, struct cdt_entry *e, uint64_t now_us)
{
	struct peer_sync *c = sw->peer_sync;
	int s;

	if (e->owner == 0)
		return false;
	s = peer_slot_of(&c->ps, e->owner);
	return s <= 0 || !peer_live(&c->ps, (unsigned)s, now_us) ||
	       !claims(&c->ps.slot[s], e->keyhash);
}

/* An entry we own (not pinned) that the cluster hot set no longer gives us. */
static bool own_unwanted(struct sw *sw, struct cdt_entry *e, uint64_t now_us)
{
	struct peer_sync *c = sw->peer_sync;

	if (e->owner != 0 || e->pinned)
		return false;
	for (uint32_t i = 0; i < c->ps.nhot; i++)
		if (c->ps.hot[i].keyhash == e->keyhash)
			return peer_owner(&c->ps, e->keyhash, now_us) != sw->self->id;
	return true;
}

static void remove_keyhash(struct sw *sw, uint64_t keyhash, bool owned)
{
	struct peer_sync *c = sw->peer_sync;
	struct cdt_entry *e = cdt_find(sw->cdt, keyhash);

	if (!e)
		return;
	if (!owned) { /* a peer's key: none of its copies are this switch's to drop */
		memset(&sw->rec->copies[e->index], 0, sizeof(sw->rec->copies[0]));
		sw->rec->share[e->index] = 0;
	}
	if (owned ? remove_entry(sw, e) : cdt_remove(sw->cdt, keyhash)) /* nonzero: failed */
		return;
	if (owned)
		c->st.owned_retires++;
	else
		c->st.remote_removes++;
}

/* Route a live peer's claimed keys to it; true when every one of them is routed. */
static bool apply_claims(struct sw *sw, unsigned s)
{
	struct peer_sync *c = sw->peer_sync;
	struct peer_slot *sl = &c->ps.slot[s];
	bool all = true;

	for (uint32_t i = 0; i < sl->nowned; i++) {
		const struct peer_key *k = &sl->owned[i];
		struct cdt_entry *e = cdt_find(sw->cdt, k->keyhash);
		uint64_t theirs = peer_rendezvous(sl->id, k->keyhash);

		if (e && !cdt_entry_is(e, k->key, k->key_len)) {
			all = false; /* another key holds this keyhash here */
			continue;
		}
		if (e && e->owner == sl->id)
			continue;
		if (e && e->owner == 0) {
			/* Both claim it: the higher rendezvous score wins (only it can hold every
			 * lease). */
			if (e->pinned || peer_rendezvous(sw->self->id, k->keyhash) > theirs)
				continue;
			remove_keyhash(sw, k->keyhash, true);
			e = NULL;
		} else if (e) {
			if (peer_rendezvous(e->owner, k->keyhash) > theirs)
				continue;
			reset_entry(sw, e);
			set_owner(e, sl->id);
			continue;
		}
		uint16_t home = ring_home(sw_ring(sw), k->keyhash);

		e = cdt_install(sw->cdt, k->keyhash, k->key, k->key_len, home, &home, 1, 0);
		if (!e) {
			all = false;
			c->st.remote_failed++;
			continue;
		}
		set_owner(e, sl->id);
		c->st.remote_installs++;
	}
	return all;
}

/* Install (or take over) the cluster-hot keys the rendezvous hash gives us. */
static void install_owned(struct sw *sw, uint64_t now_us)
{
	struct peer_sync *c = sw->peer_sync;

	for (uint32_t i = 0; i < c->ps.nhot; i++) {
		const struct peer_key *k = &c->ps.hot[i];
		struct cdt_entry *e;

		if (peer_owner(&c->ps, k->keyhash, now_us) != sw->self->id)
			continue;
		e = cdt_find(sw->cdt, k->keyhash);
		if (e && !cdt_entry_is(e, k->key, k->key_len))
			continue;
		if (e && e->owner != 0) {
			/* A peer's key that is ours now: start over from {home}. */
			reset_entry(sw, e);
			set_owner(e, 0);
			e->owned_since = 0;
			e->want_replicas = (uint8_t)k->replicas;
			replicate_completed(sw, e);
			c->st.owned_installs++;
			continue;
		}
		if (e) {
			if (!e->pinned)
				e->want_replicas = (uint8_t)k->replicas;
			continue;
		}
		e = install(sw, k->keyhash, k->key, k->key_len, (uint8_t)k->replicas, 0);
		if (e)
			c->st.owned_installs++;
	}
}

/* Publish our owned list; stamp new keys with its version; open replica reads where confirmed. */
static void publish_owned(struct sw *sw)
{
	struct peer_sync *c = sw->peer_sync;
	uint32_t it = 0, n = 0;
	struct cdt_entry *e;
	uint64_t confirmed;

	while ((e = cdt_next(sw->cdt, &it)) != NULL)
		if (e->owner == 0 && n < c->ps.owned_cap) {
			uint16_t len;
			const uint8_t *key = cdt_entry_key(sw->cdt, e, &len);

			if (len == 0 || len > HOT_MAX_KEY)
				continue;
			c->scratch[n].keyhash = e->keyhash;
			c->scratch[n].key_len = len;
			memcpy(c->scratch[n].key, key, len);
			n++;
		}
	peer_set_owned(&c->ps, c->scratch, n);
	confirmed = peer_min_confirmed(&c->ps);
	it = 0;
	while ((e = cdt_next(sw->cdt, &it)) != NULL) {
		if (e->owner != 0)
			continue;
		if (e->owned_since == 0)
			e->owned_since = c->ps.owned_version;
		__atomic_store_n(&e->spread, e->owned_since <= confirmed, __ATOMIC_RELAXED);
	}
}

/*
 * Make the CDT agree with what we know: remote entries follow the live
 * peers' claims, our own entries follow the cluster hot set (installs only
 * while every lease is held), then our list goes out with the next SYNC.
 */
static void follow_peers(struct sw *sw, uint64_t now_us, bool tick)
{
	struct peer_sync *c = sw->peer_sync;
	uint64_t *victims = calloc(sw->cdt->max_entries, sizeof(*victims));
	uint32_t n;

	if (!victims)
		return;
	n = collect(sw, victims, remote_stale, now_us);
	for (uint32_t i = 0; i < n; i++)
		remove_keyhash(sw, victims[i], false);
	for (unsigned s = 1; s < c->ps.nslots; s++) {
		struct peer_slot *sl = &c->ps.slot[s];

		if (!peer_live(&c->ps, s, now_us)) {
			sl->applied_version =
			    0; /* when it is back, it must hear us confirm afresh */
			continue;
		}
		if (!tick && !sl->owned_fresh)
			continue;
		sl->owned_fresh = false;
		if (apply_claims(sw, s))
			sl->applied_version = sl->owned_version;
	}
	if (tick && __atomic_load_n(&sw->dir_on, __ATOMIC_RELAXED)) {
		n = collect(sw, victims, own_unwanted, now_us);
		for (uint32_t i = 0; i < n; i++)
			remove_keyhash(sw, victims[i], true);
		if (c->leased)
			install_owned(sw, now_us);
	}
	publish_owned(sw);
	free(victims);
}

/*
 * The lease rule, as decide.c judged it: a lease lost -> the workers stop
 * reading replicas at once, then every owned entry goes back to {home}; a
 * lease back -> the same reset, ownership recomputed, and only then replica
 * reads resume (the deadline is published last).
 */
static void follow_cluster(struct sw *sw, uint64_t now_us, const struct reconcile_want *w)
{
	if (!w->leased)
		__atomic_store_n(&sw->lease_until_tsc, 0, __ATOMIC_RELAXED);
	if (w->lease_lost || w->lease_back)
		reset_owned(sw);
	if (w->lease_back || w->sync_tick)
		follow_peers(sw, now_us, true);
	else if (w->claims_fresh)
		follow_peers(sw, now_us, false);
	if (w->leased)
		__atomic_store_n(&sw->lease_until_tsc,
				 rte_rdtsc() + (w->lease_until_us - now_us) * sw->tsc_hz / 1000000u,
				 __ATOMIC_RELAXED);
	if (w->sync_tick)
		peer_sync_send(sw, now_us);
}

/* ---- The round. ------------------------------------------------------------------------ */

/*
 * Keys installed and waiting: those whose reads are now spread give their
 * update delay. Its own clock reading: the round's now_us is older than
 * this round's installs.
 */
static void measure_update_delay(struct sw *sw)
{
	struct reconcile *r = sw->rec;
	uint64_t now_us = clock_mono_us();
	uint32_t kept = 0;

	for (uint32_t i = 0; i < r->npending; i++) {
		const struct reconcile_pending *p = &r->pending[i];
		struct cdt_entry *e = cdt_find(sw->cdt, p->keyhash);

		if (e && cdt_entry_state(e)->nreplicas > 1)
			prom_hist_observe_ns(&r->update_delay, (now_us - p->since_us) * 1000);
		else if (!e || now_us - p->since_us > REC_DELAY_GIVE_UP_US)
			r->stats.never_served++;
		else
			r->pending[kept++] = *p;
	}
	r->npending = kept;
}

void reconcile_run(struct sw *sw, uint64_t now_us, const struct reconcile_want *want)
{
	struct reconcile *r = sw->rec;

	charge_sets(sw);
	if (peer_sync_on(sw))
		follow_cluster(sw, now_us, want);
	/* A write shrank a set to {home}: copy the new version out right away. */
	for (uint32_t i = 0; i < r->ncompleted; i++) {
		struct cdt_entry *e = cdt_find(sw->cdt, r->completed[i].keyhash);
		const struct cdt_state *st = e ? cdt_entry_state(e) : NULL;

		if (st && st->completed == r->completed[i].version)
			replicate(sw, e, st, r->completed[i].version);
	}
	r->ncompleted = 0;
	if (want->epoch)
		follow_epoch(sw, want->epoch);
	if (want->repair)
		repair(sw);
	measure_update_delay(sw);
}

/* ---- Formatters: a directory entry, the directory's figures. ------------------------------ */

static const char *node_name(const struct sw *sw, uint16_t id)
{
	const struct cfg_node *n = cfg_node_by_id(sw->cfg, id);

	return n ? n->name : "?";
}

/*
 * One directory entry, for `cdt show`, `cdt pin` and /skewless/cdt; with
 * ownership, who owns the key (peer switches) and whether reads are spread.
 */
static void format_entry(struct sw *sw, const struct cdt_entry *e, struct fmt *f, bool ownership)
{
	const struct cdt_state *st = cdt_entry_state(e);
	const char *reps[CDT_MAX_REPLICAS];
	struct cdt_entry_counters c;
	char kh[20];
	uint16_t klen;
	const uint8_t *key = cdt_entry_key(sw->cdt, e, &klen);

	cdt_entry_counters(sw->cdt, e, &c);
	for (unsigned i = 0; i < st->nreplicas; i++)
		reps[i] = node_name(sw, st->replicas[i]);
	snprintf(kh, sizeof(kh), "%016llx", (unsigned long long)e->keyhash);
	fmt_key(f, "key", key, klen);
	fmt_str(f, "keyhash", kh);
	fmt_str(f, "home", node_name(sw, e->home));
	fmt_int(f, "completed", (int64_t)st->completed);
	fmt_list(f, "replicas", reps, st->nreplicas);
	fmt_bool(f, "pinned", e->pinned);
	fmt_int(f, "want_replicas", e->want_replicas);
	fmt_int(f, "reads", (int64_t)c.reads);
	fmt_int(f, "replica_reads", (int64_t)c.replica_reads);
	fmt_int(f, "writes", (int64_t)c.writes);
	fmt_int(f, "completions", (int64_t)c.completions);
	fmt_int(f, "acks_added", (int64_t)c.acks_added);
	if (ownership) {
		uint16_t owner = __atomic_load_n(&e->owner, __ATOMIC_RELAXED);

		fmt_str(f, "owner", owner ? peer_sync_switch_name(sw, owner) : sw->self->name);
		fmt_bool(f, "spread", !sw->npeers || (!owner && e->spread));
	}
}

static json_t *entry_json(struct sw *sw, const struct cdt_entry *e, bool ownership)
{
	struct fmt f;
	json_t *o = fmt_json(&f);

	format_entry(sw, e, &f, ownership);
	return o;
}

/* The directory manager's view: hot set, churn, replication traffic and lag. */
void reconcile_format_stats(struct sw *sw, struct fmt *f)
{
	const struct reconcile_stats *d = &sw->rec->stats;
	uint64_t lag_n = sw_counter(sw, SW_CNT_REPL_LAG_SAMPLES);
	struct egress_stats eg;

	egress_get_stats(sw, &eg);
	fmt_flag(f, "enabled", "1 while the directory takes hot keys", d->enabled);
	fmt_gauge(f, "entries", "Keys in the directory", sw->cdt->nentries);
	fmt_gauge(f, "capacity", "Directory entries available (directory.max_keys)",
		  sw->cdt->max_entries);
	fmt_gauge(f, "hot_set", "Keys in the last epoch's hot set", d->hot_set);
	fmt_gauge(f, "epoch_installs", "Keys installed in the last epoch", d->last_installs);
	fmt_gauge(f, "epoch_retires", "Keys retired in the last epoch", d->last_retires);
	fmt_counter(f, "epochs", "Hot-key epochs ended", d->epochs);
	fmt_counter(f, "installs", "Hot keys installed", d->installs);
	fmt_counter(f, "retires", "Cold keys retired", d->retires);
	fmt_counter(f, "replicates_sent", "REPLICATE datagrams sent", eg.replicates_sent);
	fmt_counter(f, "unreplicates_sent", "UNREPLICATE datagrams sent", eg.unreplicates_sent);
	fmt_counter(f, "send_failed", "Directory datagrams that could not be sent", eg.send_failed);
	fmt_counter(f, "full", "Hot keys not installed: directory full", d->full);
	fmt_counter(f, "collisions", "Hot keys not installed: keyhash collision", d->collisions);
	fmt_counter(f, "held_moving", "Hot keys not installed: their home moves in a ring step",
		    d->held_moving);
	fmt_counter(f, "trims", "Copies dropped from sets grown past the replicas their key wants",
		    d->trims);
	fmt_gauge_double(f, "replication_lag_us_mean",
			 "Mean replication lag (a write's completion to a replica's ack)",
			 lag_n ? (double)sw_counter(sw, SW_CNT_REPL_LAG_US) / (double)lag_n : 0.0);
	fmt_int(f, "replica_reads", (int64_t)sw_counter(sw, SW_CNT_REPLICA_READS));
	fmt_hist(f, "update_delay_seconds",
		 "CDT update delay: a key found hot (installed) to its first replica serving "
		 "reads",
		 &sw->rec->update_delay);
	fmt_counter(f, "update_never_served",
		    "Installed keys retired, or still without a replica after 60 s",
		    d->never_served);
	fmt_counter(f, "update_unmeasured",
		    "Installed keys whose delay was not measured (too "
		    "many waiting)",
		    d->delay_unmeasured);
}

/* /metrics: the directory's figures. */
static void metrics_directory(struct sw *sw, struct prom *p)
{
	struct fmt f;

	fmt_prom(&f, p, "skewless_switch_directory_", NULL, 0);
	reconcile_format_stats(sw, &f);
}

static json_t *stats_json(struct sw *sw)
{
	struct fmt f;
	json_t *o = fmt_json(&f);

	reconcile_format_stats(sw, &f);
	return o;
}

/* ---- Commands. ------------------------------------------------------------------------- */

/* cdt show [HEXKEY] */
static json_t *cmd_cdt_show(struct sw *sw, int argc, char **argv, void *aux)
{
	json_t *arr = json_array();
	const char *hexkey = argc > 0 ? argv[0] : NULL;

	(void)aux;
	if (hexkey) {
		uint8_t key[WIRE_MAX_KEY];
		size_t len;
		struct cdt_entry *e;

		if (cfg_parse_hex(hexkey, key, sizeof(key), &len) != 0) {
			json_decref(arr);
			return ctl_error("bad key \"%s\": expected hex bytes", hexkey);
		}
		e = cdt_find(sw->cdt, keyhash(key, len));
		if (e && cdt_entry_is(e, key, len))
			json_array_append_new(arr, entry_json(sw, e, true));
	} else {
		uint32_t it = 0;
		struct cdt_entry *e;

		while ((e = cdt_next(sw->cdt, &it)) != NULL)
			json_array_append_new(arr, entry_json(sw, e, true));
	}
	return json_pack("{s:b, s:i, s:i, s:o}", "ok", 1, "size", sw->cdt->nentries, "capacity",
			 sw->cdt->max_entries, "entries", arr);
}

/* cdt pin HEXKEY [replicas N] [force NAME,NAME...] */
static json_t *cmd_cdt_pin(struct sw *sw, int argc, char **argv, void *aux)
{
	uint8_t key[WIRE_MAX_KEY];
	uint16_t force[CDT_MAX_REPLICAS];
	unsigned nforce = 0, want = 1;
	size_t len;
	struct cdt_entry *e;

	(void)aux;
	if (argc < 1 || cfg_parse_hex(argv[0], key, sizeof(key), &len) != 0)
		return ctl_error("cdt pin: expected HEXKEY, got \"%s\"", argc ? argv[0] : "");
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "replicas")) {
			char *end;
			unsigned long n = strtoul(argv[i + 1], &end, 10);

			if (*end || n < 1 || n > sw->cdt->cap)
				return ctl_error("cdt pin: replicas: expected 1 up to the directory's "
						 "cap (16, or directory.max_replicas above it), "
						 "got \"%s\"",
						 argv[i + 1]);
			want = (unsigned)n;
		} else if (!strcmp(argv[i], "force")) {
			char list[512], *save = NULL;

			snprintf(list, sizeof(list), "%s", argv[i + 1]);
			for (char *t = strtok_r(list, ",", &save); t;
			     t = strtok_r(NULL, ",", &save)) {
				const struct cfg_node *n = cfg_node_lookup(sw->cfg, t);

				if (!n || nforce == sw->cdt->cap)
					return ctl_error(
					    "cdt pin: force: unknown node or too many: \"%s\"", t);
				force[nforce++] = n->id;
			}
		} else {
			return ctl_error("cdt pin: unknown option \"%s\"", argv[i]);
		}
	}
	e = pin(sw, key, len, force, nforce, (uint8_t)want);
	if (!e)
		return ctl_error("cdt pin: %s", strerror(errno));
	json_t *o = json_pack("{s:b}", "ok", 1);

	json_object_set_new(o, "entry", entry_json(sw, e, false));
	return o;
}

/* cdt unpin HEXKEY */
static json_t *cmd_cdt_unpin(struct sw *sw, int argc, char **argv, void *aux)
{
	const char *hexkey = argc > 0 ? argv[0] : NULL;
	uint8_t key[WIRE_MAX_KEY];
	size_t len;
	int rc;

	(void)aux;
	if (!hexkey || cfg_parse_hex(hexkey, key, sizeof(key), &len) != 0)
		return ctl_error("cdt unpin: expected HEXKEY, got \"%s\"", hexkey ? hexkey : "");
	struct cdt_entry *e = cdt_find(sw->cdt, keyhash(key, len));

	if (!e || !cdt_entry_is(e, key, len))
		return ctl_error("cdt unpin: key not in the directory%s", "");
	rc = remove_entry(sw, e);
	if (rc != 0)
		return ctl_error("cdt unpin: %s", strerror(-rc));
	return json_pack("{s:b, s:i}", "ok", 1, "size", sw->cdt->nentries);
}

/* directory [on|off|show] */
static json_t *cmd_directory(struct sw *sw, int argc, char **argv, void *aux)
{
	const char *arg = argc > 0 ? argv[0] : NULL;

	(void)aux;
	if (arg && (!strcmp(arg, "on") || !strcmp(arg, "off")))
		set_enabled(sw, !strcmp(arg, "on"));
	else if (arg && strcmp(arg, "show")) {
		return ctl_error("directory: expected on, off or show, got \"%s\"", arg);
	}
	return json_pack("{s:b, s:o}", "ok", 1, "directory", stats_json(sw));
}

static void register_commands(struct sw *sw)
{
	ctl_register(sw, "cdt show", cmd_cdt_show, NULL);
	ctl_register(sw, "cdt pin", cmd_cdt_pin, NULL);
	ctl_register(sw, "cdt unpin", cmd_cdt_unpin, NULL);
	ctl_register(sw, "directory", cmd_directory, NULL);
	ctl_register_metrics(sw, metrics_directory);
}

/* /skewless/cdt (telemetry thread: QSBR reader nworkers + 1, serialised by tel_lock). */
static int tel_cdt(struct sw *sw, struct rte_tel_data *d)
{
	static const char *const brief[] = {"home", "completed", "replicas", NULL};
	uint32_t it = 0;
	struct cdt_entry *e;
	unsigned shown = 0;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&sw->tel_lock);
	rte_rcu_qsbr_thread_online(sw->qsbr, sw->nworkers + 1u);
	/* Telemetry answers are bounded (16 KiB): the first 64 entries, one line each. */
	while ((e = cdt_next(sw->cdt, &it)) != NULL && shown < 64) {
		char kh[20], val[160];
		struct fmt f;

		snprintf(kh, sizeof(kh), "%016llx", (unsigned long long)e->keyhash);
		fmt_text(&f, val, sizeof(val), brief);
		format_entry(sw, e, &f, false);
		rte_tel_data_add_dict_string(d, kh, val);
		shown++;
	}
	rte_rcu_qsbr_thread_offline(sw->qsbr, sw->nworkers + 1u);
	pthread_mutex_unlock(&sw->tel_lock);
	return 0;
}

CTL_TELEMETRY("/skewless/cdt", tel_cdt, "Directory entries: home, completed version, replica set")
