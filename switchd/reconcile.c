/*
 * reconcile.c - the local directory follows what decide.c wants (see
 * reconcile.h): hot keys in, cold keys out, completions copied out, and the
 * installs and removals every writer of the CDT goes through.
 */
#include "reconcile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "keyhash.h"
#include "log.h"
#include "peer_sync.h"
#include "prom.h"
#include "replicas.h"
#include "switchd.h"

_Static_assert(CFG_MAX_REPLICAS <= CDT_MAX_REPLICAS, "a set can hold directory.max_replicas");

/* Write completions one round takes: what the workers' ring holds (intake takes no more). */
#define RECONCILE_COMPLETIONS SW_COMPLETION_RING

/*
 * Installed keys waiting for their first replica: the CDT update delay runs
 * from the install (the round decide.c found the key hot, or, with peers, the
 * round the cluster hot set gave it to us) to the first round the entry's set
 * holds a node besides the home, i.e. reads of it are spread. Measured by the
 * control round (so at its resolution), not by the workers: the fast path
 * does nothing more for it. A key retired first, or still waiting after
 * RECONCILE_DELAY_GIVE_UP_US, is counted as never served.
 */
#define RECONCILE_PENDING	   1024
#define RECONCILE_DELAY_GIVE_UP_US (60ull * 1000 * 1000)

struct reconcile_pending {
	uint64_t keyhash;
	uint64_t since_us;
};

struct reconcile {
	struct reconcile_stats stats; /* control thread writes; commands read on the same thread */
	uint32_t ncompleted;
	struct reconcile_completion completed[RECONCILE_COMPLETIONS];
	uint32_t npending;
	struct reconcile_pending pending[RECONCILE_PENDING];
	struct prom_hist update_delay; /* control thread writes, relaxed */
	uint64_t *victims;	       /* [cdt max_entries]: reconcile_collect()'s list */
	/* A ring step: keys whose home moves in it are not installed (NULL: none). */
	bool (*moving)(void *arg, uint64_t keyhash);
	void *moving_arg;
};

/* Update-delay buckets: a replica answers in about a round trip and a
 * control round; seconds mean something is wrong (the alert is at 1 s). */
static const double update_delay_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
					     0.25,  0.5,    1,	   2.5,	 5,	10};

int reconcile_init(struct sw *sw, char *err, size_t errlen)
{
	struct reconcile *r = calloc(1, sizeof(*r));

	sw->reconcile = r;
	if (r)
		r->victims = calloc(RTE_MAX(sw->cdt->max_entries, 1u), sizeof(*r->victims));
	if (!r || !r->victims) {
		snprintf(err, errlen, "out of memory for the directory manager");
		return -1;
	}
	prom_hist_init(&r->update_delay, update_delay_bounds, RTE_DIM(update_delay_bounds));
	r->stats.enabled = sw->cfg->directory.enabled;
	__atomic_store_n(&sw->dir_on, r->stats.enabled, __ATOMIC_RELAXED);
	return 0;
}

void reconcile_fini(struct sw *sw)
{
	if (sw->reconcile)
		free(sw->reconcile->victims);
	free(sw->reconcile);
	sw->reconcile = NULL;
}

void reconcile_completed(struct sw *sw, uint64_t keyhash, uint64_t version)
{
	struct reconcile *r = sw->reconcile;

	/* Never full (intake takes at most RECONCILE_COMPLETIONS a round); if it were, the
	 * epoch's repair would copy the version out. */
	if (r->ncompleted < RECONCILE_COMPLETIONS)
		r->completed[r->ncompleted++] =
		    (struct reconcile_completion){.keyhash = keyhash, .version = version};
}

/* ---- Installs and removals. --------------------------------------------------------------- */

uint32_t reconcile_collect(struct sw *sw, bool (*pick)(struct sw *, struct cdt_entry *, void *),
			   void *arg, const uint64_t **list)
{
	uint64_t *victims = sw->reconcile->victims;
	uint32_t it = 0, n = 0;
	struct cdt_entry *e;

	while ((e = cdt_next(sw->cdt, &it)) != NULL && n < sw->cdt->max_entries)
		if (pick(sw, e, arg))
			victims[n++] = e->keyhash;
	*list = victims;
	return n;
}

int reconcile_remove(struct sw *sw, struct cdt_entry *e)
{
	uint8_t key[WIRE_MAX_KEY];
	uint16_t key_len;
	uint64_t kh = e->keyhash;
	uint32_t index = e->index;
	const uint8_t *k = cdt_entry_key(sw->cdt, e, &key_len);
	bool owned = e->owner == 0;
	int rc;

	memcpy(key, k, key_len);
	replicas_note_set(sw, e);
	rc = cdt_remove(sw->cdt, kh);
	if (rc != 0)
		return rc;
	hot_forget(sw->hot, kh);
	replicas_drop(sw, index, owned, kh, key, key_len);
	return 0;
}

/*
 * e's key takes the want of the epoch's hot key k. Said in the log when its
 * writes take a copied key back to its home (docs/design.md section 13).
 */
static void set_want(struct cdt_entry *e, const struct hot_key *k)
{
	if (k->replicas < k->share_replicas && e->want_replicas > k->replicas)
		log_info("directory: keyhash %016llx: %.0f%% writes: copies cost more than they"
			 " give, kept at its home",
			 (unsigned long long)k->keyhash, 100 * k->write_share);
	e->want_replicas = (uint8_t)k->replicas;
}

struct cdt_entry *reconcile_install(struct sw *sw, uint64_t keyhash, const uint8_t *key,
				    uint16_t key_len, uint8_t want, double share)
{
	struct reconcile *r = sw->reconcile;
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
	/* Replica groups: a home the view skips is not the key's primary (views.h). */
	if (sw_group_skips(sw, home)) {
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
	replicas_set_share(sw, e, share);
	r->stats.installs++;
	if (want > 1 && r->npending < RECONCILE_PENDING)
		r->pending[r->npending++] = (struct reconcile_pending){keyhash, clock_mono_us()};
	else if (want > 1)
		r->stats.delay_unmeasured++;
	/* v = 0: "your current version"; the replies converge from there
	 * (docs/design.md section 5). */
	replicas_add(sw, e, cdt_entry_state(e), 0);
	return e;
}

struct cdt_entry *reconcile_pin(struct sw *sw, const void *key, size_t key_len,
				const uint16_t *force, unsigned nforce, uint8_t want)
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

void reconcile_hold(struct sw *sw, bool (*moves)(void *arg, uint64_t keyhash), void *arg)
{
	sw->reconcile->moving = moves;
	sw->reconcile->moving_arg = arg;
}

/* ---- Local policy: the epoch's hot set. -------------------------------------------------- */

/* Install or refresh the epoch's hot keys; retire the ones gone cold. */
static void follow_epoch(struct sw *sw, const struct hot_report *r)
{
	struct reconcile_stats *st = &sw->reconcile->stats;
	uint32_t installs = 0, retires = 0;

	if (peer_sync_on(sw)) {
		/* With peers the cluster hot set decides what is installed (ownership.c). */
		st->hot_set = r->nhot;
		st->epochs++;
		return;
	}
	/* The hot keys installed already take their new want and share; the cold go. */
	st->write_heavy = 0;
	for (uint32_t i = 0; i < r->nhot; i++) {
		const struct hot_key *k = &r->hot[i];
		struct cdt_entry *e = cdt_find(sw->cdt, k->keyhash);

		st->write_heavy += k->replicas < k->share_replicas;
		if (!e)
			continue;
		if (!cdt_entry_is(e, k->key, k->key_len)) {
			st->collisions++;
			continue;
		}
		replicas_set_share(sw, e, k->share);
		if (!e->pinned)
			set_want(e, k);
	}
	for (uint32_t i = 0; i < r->nretired; i++) {
		struct cdt_entry *e = cdt_find(sw->cdt, r->retired[i]);

		if (e && !e->pinned && reconcile_remove(sw, e) == 0)
			retires++;
	}
	/* Then the new ones, hottest first, each placed by the load the sets put on nodes. */
	replicas_charge(sw);
	for (uint32_t i = 0; i < r->nhot; i++) {
		const struct hot_key *k = &r->hot[i];

		if (!cdt_find(sw->cdt, k->keyhash) &&
		    reconcile_install(sw, k->keyhash, k->key, k->key_len, (uint8_t)k->replicas,
				      k->share))
			installs++;
	}
	st->hot_set = r->nhot;
	st->last_installs = installs;
	st->last_retires = retires;
	st->retires += retires;
	st->epochs++;
}

/* A key the directory took itself: not pinned, not a peer's (that is not ours to switch off). */
static bool own_unpinned(struct sw *sw, struct cdt_entry *e, void *arg)
{
	(void)sw;
	(void)arg;
	return !e->pinned && e->owner == 0;
}

void reconcile_set_enabled(struct sw *sw, bool on)
{
	struct reconcile_stats *st = &sw->reconcile->stats;

	__atomic_store_n(&sw->dir_on, on, __ATOMIC_RELAXED);
	st->enabled = on;
	if (on)
		return;
	/* Off: back to ring-only routing for everything but manual pins. */
	const uint64_t *victims;
	uint32_t n = reconcile_collect(sw, own_unpinned, NULL, &victims);
	struct cdt_entry *e;

	for (uint32_t i = 0; i < n; i++)
		if ((e = cdt_find(sw->cdt, victims[i])) != NULL && reconcile_remove(sw, e) == 0)
			st->retires++;
	st->hot_set = 0;
}

/* ---- The round. ------------------------------------------------------------------------ */

/*
 * Keys installed and waiting: those whose reads are now spread give their
 * update delay. Its own clock reading: the round's now_us is older than
 * this round's installs.
 */
static void measure_update_delay(struct sw *sw)
{
	struct reconcile *r = sw->reconcile;
	uint64_t now_us = clock_mono_us();
	uint32_t kept = 0;

	for (uint32_t i = 0; i < r->npending; i++) {
		const struct reconcile_pending *p = &r->pending[i];
		struct cdt_entry *e = cdt_find(sw->cdt, p->keyhash);

		if (e && cdt_entry_state(e)->nreplicas > 1)
			prom_hist_observe_ns(&r->update_delay, (now_us - p->since_us) * 1000);
		else if (!e || now_us - p->since_us > RECONCILE_DELAY_GIVE_UP_US)
			r->stats.never_served++;
		else
			r->pending[kept++] = *p;
	}
	r->npending = kept;
}

void reconcile_run(struct sw *sw, const struct reconcile_want *want)
{
	struct reconcile *r = sw->reconcile;

	/* A write shrank a set to {home}: copy the new version out right away. */
	for (uint32_t i = 0; i < r->ncompleted; i++) {
		struct cdt_entry *e = cdt_find(sw->cdt, r->completed[i].keyhash);
		const struct cdt_state *st = e ? cdt_entry_state(e) : NULL;

		if (st && st->completed == r->completed[i].version)
			replicas_add(sw, e, st, r->completed[i].version);
	}
	r->ncompleted = 0;
	if (want->epoch)
		follow_epoch(sw, want->epoch);
	if (want->repair)
		replicas_repair(sw);
	measure_update_delay(sw);
}

const struct reconcile_stats *reconcile_stats(const struct sw *sw)
{
	return &sw->reconcile->stats;
}

const struct prom_hist *reconcile_update_delay(const struct sw *sw)
{
	return &sw->reconcile->update_delay;
}
