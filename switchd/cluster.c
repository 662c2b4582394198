/*
 * cluster.c - peer switches in the switch: SYNC I/O, ownership in the CDT,
 * the lease rule, health from peers (see cluster.h; docs/protocol.md "Peer
 * switches" has the protocol and the linearizability argument).
 */
#include "cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_random.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "clock.h"
#include "ctl.h"
#include "health.h"
#include "log.h"
#include "switchd.h"

struct cluster {
	struct peer_state ps;
	bool leased;	 /* every lease was held at the last round */
	struct peer_key *scratch;	      /* our owned list as published: owned_cap keys */
	uint64_t stale_us;		      /* own digests older than this are stale */
	uint8_t score_src[CFG_MAX_NODES + 1]; /* slot a node's score comes from; 0: own digests */
	struct cluster_stats st;
	/* Telemetry's copy, refreshed every sync round under sw->tel_lock. */
	struct cluster_row rows[PEER_MAX];
	unsigned nrows;
	bool rows_leased;
};

bool cluster_on(const struct sw *sw)
{
	return sw->cluster != NULL;
}

int cluster_init(struct sw *sw, char *err, size_t errlen)
{
	struct cluster *c;
	uint32_t inc;
	int rc;

	if (sw->self->npeers == 0)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory for the peer state");
		return -1;
	}
	do
		inc = (uint32_t)rte_rand();
	while (inc == 0);
	rc = peer_init(&c->ps, sw->cfg, sw->self->id, inc, 0);
	c->scratch = calloc(rc == 0 && c->ps.owned_cap ? c->ps.owned_cap : 1, sizeof(*c->scratch));
	if (rc != 0 || !c->scratch) {
		snprintf(err, errlen, "switches[%s].peers: cannot set up the peer state: %s",
			 sw->self->name, strerror(rc ? -rc : ENOMEM));
		peer_fini(&c->ps);
		free(c->scratch);
		free(c);
		return -1;
	}
	c->stale_us =
	    (uint64_t)sw->cfg->digest.down_after_intervals * sw->cfg->digest.interval_ms * 1000u;
	for (unsigned s = 1; s < c->ps.nslots; s++)
		sw->peer_vip[sw->npeers++] = c->ps.slot[s].vip;
	sw->cluster = c;
	__atomic_store_n(&sw->lease_until_tsc, 0, __ATOMIC_RELAXED);
	return 0;
}

void cluster_fini(struct sw *sw)
{
	struct cluster *c = sw->cluster;

	if (!c)
		return;
	peer_fini(&c->ps);
	free(c->scratch);
	free(c);
	sw->cluster = NULL;
}

bool cluster_may_replicate(const struct sw *sw)
{
	return !sw->cluster || sw->cluster->leased;
}

void cluster_epoch(struct sw *sw, const struct hot_report *r)
{
	if (sw->cluster)
		peer_add_epoch(&sw->cluster->ps, r);
}

const char *cluster_switch_name(const struct sw *sw, uint16_t id)
{
	const struct cfg_switch *s = cfg_switch_by_id(sw->cfg, id);

	return s ? s->name : "-";
}

/* ---- SYNC in. ------------------------------------------------------------------------------- */

static void take_syncs(struct sw *sw, uint64_t now_us)
{
	struct cluster *c = sw->cluster;
	struct rte_mbuf *m;

	while (rte_ring_sc_dequeue(sw->sync_ring, (void **)&m) == 0) {
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
		struct rte_udp_hdr *udp =
		    (struct rte_udp_hdr *)((uint8_t *)ip + rte_ipv4_hdr_len(ip));
		size_t len = rte_be_to_cpu_16(udp->dgram_len) - sizeof(*udp);
		struct wire_msg msg;

		/* The fast path validated the wire header; the value is the SYNC payload. */
		if (wire_decode(udp + 1, len, &msg) != WIRE_OK ||
		    peer_receive(&c->ps, msg.value, msg.val_len, now_us) != SYNC_OK)
			c->st.sync_rejected++;
		rte_pktmbuf_free(m);
	}
}

/* ---- SYNC out. ------------------------------------------------------------------------------ */

struct emit_ctx {
	struct sw *sw;
	uint16_t peer;
	uint64_t now_us;
};

static void emit(void *arg, const uint8_t *buf, size_t len)
{
	struct emit_ctx *x = arg;
	struct cluster *c = x->sw->cluster;

	if (sw_send_to_peer(x->sw, x->peer, buf, len) == 0)
		c->st.sync_sent++;
	else
		c->st.sync_send_failed++;
}

/* Our own view of a node, as peers get it: from our digests only, never a peer's. */
static void own_score(void *arg, uint16_t node, struct sync_score *s)
{
	struct emit_ctx *x = arg;
	const struct dig_table *d = x->sw->dig;
	uint64_t last = d->node[node].last_digest_us;

	s->node = node;
	s->health = dig_health(d, node);
	s->alive = dig_alive(d, node);
	if (d->node[node].received == 0 || last > x->now_us)
		s->age_ms = SYNC_AGE_NEVER;
	else
		s->age_ms = (x->now_us - last) / 1000u > UINT32_MAX - 1
				? UINT32_MAX - 1
				: (uint32_t)((x->now_us - last) / 1000u);
}

static void send_syncs(struct sw *sw, uint64_t now_us)
{
	struct cluster *c = sw->cluster;
	uint16_t nodes[CFG_MAX_NODES];
	size_t cap = 1500;

	for (uint16_t p = 0; p < sw->nports; p++)
		if (sw->ports[p].mtu && sw->ports[p].mtu < cap)
			cap = sw->ports[p].mtu;
	/* A SYNC datagram fits one frame: IPv4 + UDP + the 48-byte wire header. */
	cap -= sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) + WIRE_HDR_LEN;
	for (unsigned i = 0; i < sw->cfg->nnodes; i++)
		nodes[i] = sw->cfg->nodes[i].id;
	for (unsigned s = 1; s < c->ps.nslots; s++) {
		struct emit_ctx x = {sw, c->ps.slot[s].id, now_us};

		peer_build(&c->ps, s, now_us, cap, nodes, sw->cfg->nnodes, own_score, emit, &x);
	}
}

/* ---- Ownership in the CDT. ------------------------------------------------------------------ */

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
		sw->cluster->st.resets++;
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
	struct cluster *c = sw->cluster;
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
	struct cluster *c = sw->cluster;

	if (e->owner != 0 || e->pinned)
		return false;
	for (uint32_t i = 0; i < c->ps.nhot; i++)
		if (c->ps.hot[i].keyhash == e->keyhash)
			return peer_owner(&c->ps, e->keyhash, now_us) != sw->self->id;
	return true;
}

static void remove_entry(struct sw *sw, uint64_t keyhash, bool owned)
{
	struct cluster *c = sw->cluster;
	struct cdt_entry *e = cdt_find(sw->cdt, keyhash);

	if (!e)
		return;
	if (owned ? dir_remove(sw, e) : cdt_remove(sw->cdt, keyhash)) /* nonzero: failed */
		return;
	if (owned)
		c->st.owned_retires++;
	else
		c->st.remote_removes++;
}

/* Route a live peer's claimed keys to it; true when every one of them is routed. */
static bool apply_claims(struct sw *sw, unsigned s)
{
	struct cluster *c = sw->cluster;
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
			remove_entry(sw, k->keyhash, true);
			e = NULL;
		} else if (e) {
			if (peer_rendezvous(e->owner, k->keyhash) > theirs)
				continue;
			reset_entry(sw, e);
			set_owner(e, sl->id);
			continue;
		}
		uint16_t home = ring_home(&sw->ring, k->keyhash);

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
	struct cluster *c = sw->cluster;

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
			dir_replicate(sw, e);
			c->st.owned_installs++;
			continue;
		}
		if (e) {
			if (!e->pinned)
				e->want_replicas = (uint8_t)k->replicas;
			continue;
		}
		e = dir_install(sw, k->keyhash, k->key, k->key_len, (uint8_t)k->replicas);
		if (e)
			c->st.owned_installs++;
	}
}

/* Publish our owned list; stamp new keys with its version; open replica reads where confirmed. */
static void publish_owned(struct sw *sw)
{
	struct cluster *c = sw->cluster;
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
static void reconcile(struct sw *sw, uint64_t now_us, bool tick)
{
	struct cluster *c = sw->cluster;
	uint64_t *victims = calloc(sw->cdt->max_entries, sizeof(*victims));
	uint32_t n;

	if (!victims)
		return;
	n = collect(sw, victims, remote_stale, now_us);
	for (uint32_t i = 0; i < n; i++)
		remove_entry(sw, victims[i], false);
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
			remove_entry(sw, victims[i], true);
		if (c->leased)
			install_owned(sw, now_us);
	}
	publish_owned(sw);
	free(victims);
}

/* ---- The lease rule. ---------------------------------------------------------------------- */

static void lease_rule(struct sw *sw, uint64_t now_us)
{
	struct cluster *c = sw->cluster;
	uint64_t until;
	bool all = peer_all_leases(&c->ps, now_us, &until);

	if (!all) {
		__atomic_store_n(&sw->lease_until_tsc, 0, __ATOMIC_RELAXED);
		if (c->leased) {
			c->leased = false;
			c->st.lease_losses++;
			reset_owned(sw);
		}
		return;
	}
	if (!c->leased) {
		/* Back: forget what may have changed behind our back, recompute ownership. */
		reset_owned(sw);
		c->leased = true;
		c->st.lease_resumes++;
		peer_compute_hot(&c->ps, now_us);
		reconcile(sw, now_us, true);
	}
	__atomic_store_n(&sw->lease_until_tsc,
			 rte_rdtsc() + (until - now_us) * sw->tsc_hz / 1000000u, __ATOMIC_RELAXED);
}

/* ---- Health from peers. -----------------------------------------------------------------------
 */

int cluster_node_score(struct sw *sw, uint16_t node, uint64_t now_us, uint8_t *health, bool *alive)
{
	struct cluster *c = sw->cluster;
	const struct dig_node_stats *own;
	uint64_t best_age = UINT64_MAX, fresh_for;
	int best = 0;

	if (!c || node == 0 || node > CFG_MAX_NODES)
		return 0;
	own = &sw->dig->node[node];
	if (own->received && own->last_digest_us <= now_us &&
	    now_us - own->last_digest_us <= c->stale_us) {
		c->score_src[node] = 0;
		return 0;
	}
	/* Unchanged entries are re-sent with every PEER_FULL_EVERY-th SYNC. */
	fresh_for = (uint64_t)(PEER_FULL_EVERY + 1) * c->ps.interval_ms * 1000u;
	for (unsigned s = 1; s < c->ps.nslots; s++) {
		const struct peer_slot *sl = &c->ps.slot[s];
		uint64_t rx = sl->score_rx_us[node], age;

		if (!peer_live(&c->ps, s, now_us) || !rx || now_us - rx > fresh_for ||
		    sl->score[node].age_ms == SYNC_AGE_NEVER)
			continue;
		age = (uint64_t)sl->score[node].age_ms * 1000u + (now_us - rx);
		if ((uint64_t)sl->score[node].age_ms * 1000u > c->stale_us || age >= best_age)
			continue;
		best_age = age;
		best = (int)s;
	}
	c->score_src[node] = (uint8_t)best;
	if (!best)
		return 0;
	*health = c->ps.slot[best].score[node].health;
	*alive = c->ps.slot[best].score[node].alive;
	c->st.health_from_peer++;
	return best;
}

const char *cluster_score_source(const struct sw *sw, uint16_t node)
{
	const struct cluster *c = sw->cluster;

	if (!c || node > CFG_MAX_NODES || c->score_src[node] == 0)
		return NULL;
	return c->ps.slot[c->score_src[node]].name;
}

/* ---- The round. ------------------------------------------------------------------------------ */

static void fill_rows(struct sw *sw, uint64_t now_us, struct cluster_row *rows)
{
	struct cluster *c = sw->cluster;

	for (unsigned s = 0; s < c->ps.nslots; s++) {
		const struct peer_slot *sl = &c->ps.slot[s];
		const struct peer_window *w = sl->nwin ? &sl->win[0] : NULL;
		struct cluster_row *r = &rows[s];

		memset(r, 0, sizeof(*r));
		r->id = sl->id;
		snprintf(r->name, sizeof(r->name), "%s", sl->name);
		r->self = s == 0;
		r->live = peer_live(&c->ps, s, now_us);
		r->lease = peer_lease(&c->ps, s, now_us);
		r->last_sync_ms = s == 0      ? 0
				  : sl->heard ? (int64_t)((now_us - sl->last_heard_us) / 1000)
					      : -1;
		r->lag_ms = s == 0 ? 0 : sl->lease_echo_us ? (int64_t)(sl->lag_us / 1000) : -1;
		r->window = w ? w->id : 0;
		for (uint32_t i = 0; i < c->ps.nhot; i++)
			if (peer_owner(&c->ps, c->ps.hot[i].keyhash, now_us) == sl->id)
				r->owned_keys++;
		r->claimed = s == 0 ? c->ps.nowned : sl->nowned;
		r->owned_version = s == 0 ? c->ps.owned_version : sl->owned_version;
		r->confirmed = s == 0 ? 0 : sl->lease_confirmed;
	}
}

void cluster_poll(struct sw *sw, uint64_t now_us)
{
	struct cluster *c = sw->cluster;
	bool fresh = false;

	uint64_t t0 = rte_rdtsc(), took_us;

	if (!c)
		return;
	take_syncs(sw, now_us);
	lease_rule(sw, now_us);
	for (unsigned s = 1; s < c->ps.nslots; s++)
		fresh |= c->ps.slot[s].owned_fresh;
	if (peer_tick(&c->ps, now_us)) {
		struct cluster_row rows[PEER_MAX];

		reconcile(sw, now_us, true);
		send_syncs(sw, now_us);
		fill_rows(sw, now_us, rows);
		pthread_mutex_lock(&sw->tel_lock);
		memcpy(c->rows, rows, sizeof(rows));
		c->nrows = c->ps.nslots;
		c->rows_leased = c->leased;
		pthread_mutex_unlock(&sw->tel_lock);
	} else {
		if (c->ps.hot_dirty)
			peer_compute_hot(&c->ps, now_us);
		if (fresh)
			reconcile(sw, now_us, false);
	}
	took_us = (rte_rdtsc() - t0) * 1000000u / sw->tsc_hz;
	if (took_us > c->st.slowest_round_us)
		c->st.slowest_round_us = took_us;
	if (took_us > 50000)
		log_warn("peers: a control round took %llu ms (resets %llu, installs %llu+%llu, "
			 "removes %llu+%llu)",
			 (unsigned long long)took_us / 1000, (unsigned long long)c->st.resets,
			 (unsigned long long)c->st.owned_installs,
			 (unsigned long long)c->st.remote_installs,
			 (unsigned long long)c->st.owned_retires,
			 (unsigned long long)c->st.remote_removes);
}

unsigned cluster_rows_snapshot(struct sw *sw, struct cluster_row *rows, bool *leased)
{
	struct cluster *c = sw->cluster;
	unsigned n;

	if (!c)
		return 0;
	pthread_mutex_lock(&sw->tel_lock);
	n = c->nrows;
	memcpy(rows, c->rows, n * sizeof(*rows));
	*leased = c->rows_leased;
	pthread_mutex_unlock(&sw->tel_lock);
	return n;
}

json_t *cluster_json(struct sw *sw)
{
	struct cluster *c = sw->cluster;
	struct cluster_row rows[PEER_MAX];
	json_t *arr = json_array(), *hot = json_array(), *o;
	uint64_t now_us, until = 0;

	if (!c)
		return json_pack("{s:b, s:b, s:o, s:o}", "ok", 1, "peers_configured", 0, "switches",
				 arr, "hot", hot);
	now_us = clock_mono_us();
	fill_rows(sw, now_us, rows);
	for (unsigned s = 0; s < c->ps.nslots; s++) {
		const struct cluster_row *r = &rows[s];

		json_array_append_new(
		    arr,
		    json_pack("{s:i, s:s, s:b, s:b, s:b, s:I, s:I, s:I, s:i, s:i, s:I, s:I}", "id",
			      r->id, "name", r->name, "self", r->self, "live", r->live, "lease",
			      r->lease, "last_sync_ms", (json_int_t)r->last_sync_ms, "lag_ms",
			      (json_int_t)r->lag_ms, "window", (json_int_t)r->window, "owned_keys",
			      r->owned_keys, "claimed", r->claimed, "owned_version",
			      (json_int_t)r->owned_version, "confirmed", (json_int_t)r->confirmed));
	}
	for (uint32_t i = 0; i < c->ps.nhot; i++) {
		const struct peer_key *k = &c->ps.hot[i];

		json_array_append_new(
		    hot,
		    json_pack("{s:o, s:I, s:i, s:s}", "key", ctl_key_json(k->key, k->key_len),
			      "count", (json_int_t)k->count, "replicas", k->replicas, "owner",
			      cluster_switch_name(sw, peer_owner(&c->ps, k->keyhash, now_us))));
	}
	peer_all_leases(&c->ps, now_us, &until);
	o = json_pack(
	    "{s:b, s:b, s:b, s:I, s:o, s:o}", "ok", 1, "peers_configured", 1, "leased", c->leased,
	    "lease_left_ms",
	    (json_int_t)(until > now_us && until != UINT64_MAX ? (until - now_us) / 1000 : 0),
	    "switches", arr, "hot", hot);
	json_object_set_new(
	    o, "stats",
	    json_pack(
		"{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "lease_losses",
		(json_int_t)c->st.lease_losses, "lease_resumes", (json_int_t)c->st.lease_resumes,
		"resets", (json_int_t)c->st.resets, "sync_sent", (json_int_t)c->st.sync_sent,
		"sync_send_failed", (json_int_t)c->st.sync_send_failed, "sync_rejected",
		(json_int_t)c->st.sync_rejected, "owned_installs", (json_int_t)c->st.owned_installs,
		"owned_retires", (json_int_t)c->st.owned_retires, "remote_installs",
		(json_int_t)c->st.remote_installs, "remote_removes",
		(json_int_t)c->st.remote_removes, "remote_failed", (json_int_t)c->st.remote_failed,
		"health_from_peer", (json_int_t)c->st.health_from_peer));
	json_object_set_new(json_object_get(o, "stats"), "slowest_round_us",
			    json_integer((json_int_t)c->st.slowest_round_us));
	return o;
}
