/*
 * ownership.c - the CDT follows the peers (see ownership.h): remote entries
 * routed to the live peers that claim them, our own to the keys the cluster
 * hot set gives us, and the lease rule over both.
 */
#include "ownership.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer_sync.h"
#include "reconcile.h"
#include "replicas.h"
#include "switchd.h"

struct ownership {
	struct peer_key *scratch; /* our owned list as published: peer_sync_owned_cap() keys */
};

int ownership_init(struct sw *sw, char *err, size_t errlen)
{
	struct ownership *o;
	uint32_t cap;

	if (!peer_sync_on(sw))
		return 0;
	cap = peer_sync_owned_cap(sw);
	o = calloc(1, sizeof(*o));
	if (o)
		o->scratch = calloc(cap ? cap : 1, sizeof(*o->scratch));
	sw->ownership = o;
	if (!o || !o->scratch) {
		snprintf(err, errlen, "out of memory for the peers' directory");
		return -1;
	}
	return 0;
}

void ownership_fini(struct sw *sw)
{
	struct ownership *o = sw->ownership;

	if (o)
		free(o->scratch);
	free(o);
	sw->ownership = NULL;
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
		peer_sync_count(sw, PEER_SYNC_RESET);
}

static void reset_owned(struct sw *sw)
{
	uint32_t it = 0;
	struct cdt_entry *e;

	while ((e = cdt_next(sw->cdt, &it)) != NULL)
		if (e->owner == 0)
			reset_entry(sw, e);
}

/* A remote entry whose owner is no longer live or no longer claims it. */
static bool remote_stale(struct sw *sw, struct cdt_entry *e, void *now)
{
	uint64_t now_us = *(const uint64_t *)now;

	return e->owner != 0 && !peer_sync_claims(sw, e->owner, e->keyhash, now_us);
}

/* An entry we own (not pinned) that the cluster hot set no longer gives us. */
static bool own_unwanted(struct sw *sw, struct cdt_entry *e, void *now)
{
	uint64_t now_us = *(const uint64_t *)now;
	uint32_t nhot;
	const struct peer_key *hot = peer_sync_hot_set(sw, &nhot);

	if (e->owner != 0 || e->pinned)
		return false;
	for (uint32_t i = 0; i < nhot; i++)
		if (hot[i].keyhash == e->keyhash)
			return peer_sync_owner(sw, e->keyhash, now_us) != sw->self->id;
	return true;
}

static void remove_keyhash(struct sw *sw, uint64_t keyhash, bool owned)
{
	struct cdt_entry *e = cdt_find(sw->cdt, keyhash);

	if (!e)
		return;
	if (!owned) /* a peer's key: none of its copies are this switch's to drop */
		replicas_drop(sw, e->index, false, keyhash, NULL, 0);
	if (owned ? reconcile_remove(sw, e) : cdt_remove(sw->cdt, keyhash)) /* nonzero: failed */
		return;
	peer_sync_count(sw, owned ? PEER_SYNC_OWNED_RETIRE : PEER_SYNC_REMOTE_REMOVE);
}

/* Route a live peer's claimed keys to it; true when every one of them is routed. */
static bool apply_claims(struct sw *sw, uint16_t peer, const struct peer_key *keys, uint32_t n)
{
	bool all = true;

	for (uint32_t i = 0; i < n; i++) {
		const struct peer_key *k = &keys[i];
		struct cdt_entry *e = cdt_find(sw->cdt, k->keyhash);
		uint64_t theirs = peer_rendezvous(peer, k->keyhash);

		if (e && !cdt_entry_is(e, k->key, k->key_len)) {
			all = false; /* another key holds this keyhash here */
			continue;
		}
		if (e && e->owner == peer)
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
			set_owner(e, peer);
			continue;
		}
		uint16_t home = ring_home(sw_ring(sw), k->keyhash);

		e = cdt_install(sw->cdt, k->keyhash, k->key, k->key_len, home, &home, 1, 0);
		if (!e) {
			all = false;
			peer_sync_count(sw, PEER_SYNC_REMOTE_FAILED);
			continue;
		}
		set_owner(e, peer);
		peer_sync_count(sw, PEER_SYNC_REMOTE_INSTALL);
	}
	return all;
}

/* Install (or take over) the cluster-hot keys the rendezvous hash gives us. */
static void install_owned(struct sw *sw, uint64_t now_us)
{
	uint32_t nhot;
	const struct peer_key *hot = peer_sync_hot_set(sw, &nhot);

	for (uint32_t i = 0; i < nhot; i++) {
		const struct peer_key *k = &hot[i];
		struct cdt_entry *e;

		if (peer_sync_owner(sw, k->keyhash, now_us) != sw->self->id)
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
			replicas_add_completed(sw, e);
			peer_sync_count(sw, PEER_SYNC_OWNED_INSTALL);
			continue;
		}
		if (e) {
			if (!e->pinned)
				e->want_replicas = (uint8_t)k->replicas;
			continue;
		}
		e = reconcile_install(sw, k->keyhash, k->key, k->key_len, (uint8_t)k->replicas, 0);
		if (e)
			peer_sync_count(sw, PEER_SYNC_OWNED_INSTALL);
	}
}

/* Publish our owned list; stamp new keys with its version; open replica reads where confirmed. */
static void publish_owned(struct sw *sw)
{
	struct peer_key *scratch = sw->ownership->scratch;
	uint32_t it = 0, n = 0, cap = peer_sync_owned_cap(sw);
	struct cdt_entry *e;
	uint64_t version, confirmed;

	while ((e = cdt_next(sw->cdt, &it)) != NULL)
		if (e->owner == 0 && n < cap) {
			uint16_t len;
			const uint8_t *key = cdt_entry_key(sw->cdt, e, &len);

			if (len == 0 || len > HOT_MAX_KEY)
				continue;
			scratch[n].keyhash = e->keyhash;
			scratch[n].key_len = len;
			memcpy(scratch[n].key, key, len);
			n++;
		}
	version = peer_sync_set_owned(sw, scratch, n, &confirmed);
	it = 0;
	while ((e = cdt_next(sw->cdt, &it)) != NULL) {
		if (e->owner != 0)
			continue;
		if (e->owned_since == 0)
			e->owned_since = version;
		__atomic_store_n(&e->spread, e->owned_since <= confirmed, __ATOMIC_RELAXED);
	}
}

/*
 * Make the CDT agree with what we know: remote entries follow the live
 * peers' claims, our own entries follow the cluster hot set (installs only
 * while every lease is held), then our list goes out with the next SYNC.
 */
static void follow_peers(struct sw *sw, uint64_t now_us, bool tick, bool leased)
{
	const uint64_t *victims;
	uint32_t n;

	n = reconcile_collect(sw, remote_stale, &now_us, &victims);
	for (uint32_t i = 0; i < n; i++)
		remove_keyhash(sw, victims[i], false);
	peer_sync_follow_claims(sw, now_us, tick, apply_claims);
	if (tick && __atomic_load_n(&sw->dir_on, __ATOMIC_RELAXED)) {
		n = reconcile_collect(sw, own_unwanted, &now_us, &victims);
		for (uint32_t i = 0; i < n; i++)
			remove_keyhash(sw, victims[i], true);
		if (leased)
			install_owned(sw, now_us);
	}
	publish_owned(sw);
}

/*
 * The lease rule, as decide.c judged it: a lease lost -> the workers stop
 * reading replicas at once, then every owned entry goes back to {home}; a
 * lease back -> the same reset, ownership recomputed, and only then replica
 * reads resume (the deadline is published last).
 */
void ownership_run(struct sw *sw, uint64_t now_us, const struct reconcile_want *w)
{
	if (!peer_sync_on(sw))
		return;
	if (!w->leased)
		peer_sync_publish_lease(sw, 0, now_us);
	if (w->lease_lost || w->lease_back)
		reset_owned(sw);
	if (w->lease_back || w->sync_tick)
		follow_peers(sw, now_us, true, w->leased);
	else if (w->claims_fresh)
		follow_peers(sw, now_us, false, w->leased);
	if (w->leased)
		peer_sync_publish_lease(sw, w->lease_until_us, now_us);
	if (w->sync_tick)
		peer_sync_send(sw, now_us);
}
