/*
 * peer_sync.c - peer switches in the switch: the state, SYNC in and out, the
 * leases, health from peers, and what `cdtctl peers` and /skewless/peers
 * show (see peer_sync.h; docs/protocol.md "Peer switches" has the protocol
 * and the linearizability argument). The policy on this state is decide.c's,
 * the CDT changes it calls for are ownership.c's.
 */
#include "peer_sync.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_random.h>
#include <rte_telemetry.h>
#include <rte_udp.h>

#include "clock.h"
#include "ctl.h"
#include "egress.h"
#include "fmt.h"
#include "health.h"
#include "log.h"
#include "prom.h"
#include "rchange.h"
#include "switchd.h"

struct peer_sync_stats {
	uint64_t lease_losses;	   /* times the switch lost a lease and reset its entries */
	uint64_t lease_resumes;	   /* times all leases came back */
	uint64_t sync_rejected;	   /* malformed or from an unknown switch */
	uint64_t health_from_peer; /* node score updates taken from a peer */
	uint64_t slowest_round_us; /* longest control round (grace periods of CDT changes) */
	uint64_t events[PEER_SYNC_NEVENTS]; /* ownership.c's changes to the directory */
};

struct peer_sync {
	struct peer_state ps;
	bool leased;			      /* every lease was held at the last round */
	uint64_t stale_us;		      /* own digests older than this are stale */
	uint8_t score_src[CFG_MAX_NODES + 1]; /* slot a node's score comes from; 0: own digests */
	struct peer_sync_stats st;
	/* Telemetry's copy, refreshed every sync round under sw->tel_lock. */
	struct peer_sync_row rows[PEER_MAX];
	unsigned nrows;
	bool rows_leased;
};

static json_t *cmd_peers(struct sw *sw, int argc, char **argv, void *aux);
static void metrics_peers(struct sw *sw, struct prom *p);

int peer_sync_init(struct sw *sw, char *err, size_t errlen)
{
	struct peer_sync *c;
	uint32_t inc;
	int rc;

	ctl_register(sw, "peers", cmd_peers, NULL);
	ctl_register_metrics(sw, metrics_peers);
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
	if (rc != 0) {
		snprintf(err, errlen, "switches[%s].peers: cannot set up the peer state: %s",
			 sw->self->name, strerror(-rc));
		peer_fini(&c->ps);
		free(c);
		return -1;
	}
	c->stale_us =
	    (uint64_t)sw->cfg->digest.down_after_intervals * sw->cfg->digest.interval_ms * 1000u;
	for (unsigned s = 1; s < c->ps.nslots; s++)
		sw->peer_vip[sw->npeers++] = c->ps.slot[s].vip;
	sw->peer_sync = c;
	__atomic_store_n(&sw->lease_until_tsc, 0, __ATOMIC_RELAXED);
	return 0;
}

void peer_sync_fini(struct sw *sw)
{
	struct peer_sync *c = sw->peer_sync;

	if (!c)
		return;
	peer_fini(&c->ps);
	free(c);
	sw->peer_sync = NULL;
}

bool peer_sync_on(const struct sw *sw)
{
	return sw->peer_sync != NULL;
}

bool peer_sync_may_replicate(const struct sw *sw)
{
	return !sw->peer_sync || sw->peer_sync->leased;
}

const char *peer_sync_switch_name(const struct sw *sw, uint16_t id)
{
	const struct cfg_switch *s = cfg_switch_by_id(sw->cfg, id);

	return s ? s->name : "-";
}

/* ---- SYNC in. ------------------------------------------------------------------------------- */

void peer_sync_receive(struct sw *sw, const uint8_t *dgram, size_t len, uint64_t now_us)
{
	struct peer_sync *c = sw->peer_sync;
	struct wire_msg msg;

	/* The fast path validated the wire header; the value is the SYNC payload. */
	if (wire_decode(dgram, len, &msg) != WIRE_OK ||
	    peer_receive(&c->ps, msg.value, msg.val_len, now_us) != SYNC_OK)
		c->st.sync_rejected++;
}

/* ---- Health from peers. ---------------------------------------------------------------------- */

int peer_sync_node_score(struct sw *sw, uint16_t node, uint64_t now_us, uint8_t *health,
			 bool *alive)
{
	struct peer_sync *c = sw->peer_sync;
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

const char *peer_sync_score_source(const struct sw *sw, uint16_t node)
{
	const struct peer_sync *c = sw->peer_sync;

	if (!c || node > CFG_MAX_NODES || c->score_src[node] == 0)
		return NULL;
	return c->ps.slot[c->score_src[node]].name;
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

	egress_sync(x->sw, x->peer, buf, len); /* counted by egress */
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
	struct peer_sync *c = sw->peer_sync;
	uint16_t nodes[CFG_MAX_NODES];
	size_t cap = 1500;

	for (uint16_t p = 0; p < sw->nports; p++)
		if (sw->ports[p].mtu && sw->ports[p].mtu < cap)
			cap = sw->ports[p].mtu;
	/* A SYNC datagram fits one frame: IPv4 + UDP + the 48-byte wire header,
	 * and with a key the MAC. */
	cap -= sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) + WIRE_HDR_LEN +
	       (sw->keyed ? WIRE_MAC_LEN : 0);
	for (unsigned i = 0; i < sw->cfg->nnodes; i++)
		nodes[i] = sw->cfg->nodes[i].id;
	for (unsigned s = 1; s < c->ps.nslots; s++) {
		struct emit_ctx x = {sw, c->ps.slot[s].id, now_us};

		peer_build(&c->ps, s, now_us, cap, nodes, sw->cfg->nnodes, own_score, emit, &x);
	}
}

/* ---- Rows: `cdtctl peers` and telemetry. ------------------------------------------------- */

static void fill_rows(struct sw *sw, uint64_t now_us, struct peer_sync_row *rows)
{
	struct peer_sync *c = sw->peer_sync;

	for (unsigned s = 0; s < c->ps.nslots; s++) {
		const struct peer_slot *sl = &c->ps.slot[s];
		const struct peer_window *w = sl->nwin ? &sl->win[0] : NULL;
		struct peer_sync_row *r = &rows[s];

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
		r->ring_epoch = sl->ring_epoch;
		r->ring_version = rch_epoch_version(sl->ring_epoch);
	}
}

/* One switch's row, for the socket's JSON and telemetry alike. */
static void format_row(struct fmt *f, const struct peer_sync_row *r)
{
	fmt_int(f, "id", r->id);
	fmt_str(f, "name", r->name);
	fmt_bool(f, "self", r->self);
	fmt_flag(f, "live", "1 while the peer's SYNCs arrive (this switch: always)", r->live);
	fmt_flag(f, "lease", "1 while this switch holds the peer's lease (this switch: its own)",
		 r->lease);
	fmt_gauge(f, "last_sync_ms", "Time since the peer's last SYNC (-0.001: never heard)",
		  r->last_sync_ms);
	fmt_gauge(f, "lag_ms", "Round trip of the peer's lease echo (-0.001: none yet)", r->lag_ms);
	fmt_gauge(f, "window", "The peer's last hot-key window id", (int64_t)r->window);
	fmt_gauge(f, "owned_keys", "Cluster hot keys the switch owns", r->owned_keys);
	fmt_gauge(f, "claimed", "Keys on the switch's owned list", r->claimed);
	fmt_gauge(f, "owned_version", "Version of the switch's owned list",
		  (int64_t)r->owned_version);
	fmt_gauge(f, "confirmed", "Owned-list version the peer confirmed routing",
		  (int64_t)r->confirmed);
	fmt_gauge(f, "ring_version", "ring.version of the ring the switch routes by (0: not heard)",
		  (int64_t)r->ring_version);
	fmt_gauge(f, "ring_epoch", "Ring epoch the switch routes by (version << 20 | active arcs)",
		  (int64_t)r->ring_epoch);
}

/* The peer machinery's counters, for `peers` and /metrics. */
static void format_stats(struct sw *sw, struct fmt *f)
{
	const struct peer_sync *c = sw->peer_sync;
	struct egress_stats eg;

	egress_get_stats(sw, &eg);
	fmt_counter(f, "lease_losses", "Times this switch lost a peer lease (reads go home)",
		    c->st.lease_losses);
	fmt_counter(f, "lease_resumes", "Times every lease was held again", c->st.lease_resumes);
	fmt_counter(f, "resets", "Directory resets on a lease change",
		    c->st.events[PEER_SYNC_RESET]);
	fmt_counter(f, "sync_sent", "SYNC datagrams sent", eg.sync_sent);
	fmt_counter(f, "sync_send_failed", "SYNC datagrams that could not be sent",
		    eg.sync_send_failed);
	fmt_counter(f, "sync_rejected", "SYNC datagrams rejected (bad payload or sender)",
		    c->st.sync_rejected);
	fmt_counter(f, "owned_installs", "Owned keys installed",
		    c->st.events[PEER_SYNC_OWNED_INSTALL]);
	fmt_counter(f, "owned_retires", "Owned keys retired", c->st.events[PEER_SYNC_OWNED_RETIRE]);
	fmt_counter(f, "remote_installs", "Peers' keys installed (routed to their owner)",
		    c->st.events[PEER_SYNC_REMOTE_INSTALL]);
	fmt_counter(f, "remote_removes", "Peers' keys removed",
		    c->st.events[PEER_SYNC_REMOTE_REMOVE]);
	fmt_counter(f, "remote_failed", "Peers' keys that could not be installed",
		    c->st.events[PEER_SYNC_REMOTE_FAILED]);
	fmt_counter(f, "health_from_peer", "Node scores taken from a peer's digests",
		    c->st.health_from_peer);
	fmt_gauge(f, "slowest_round_us", "Slowest control round so far",
		  (int64_t)c->st.slowest_round_us);
}

/* ---- The peer policy's state (decide.c). ----------------------------------------------------- */

void peer_sync_lease(struct sw *sw, uint64_t now_us, struct peer_sync_lease *l)
{
	struct peer_sync *c = sw->peer_sync;

	l->held = peer_all_leases(&c->ps, now_us, &l->until_us);
	l->lost = !l->held && c->leased;
	l->back = l->held && !c->leased;
	if (l->lost) {
		c->leased = false;
		c->st.lease_losses++;
	} else if (l->back) {
		/* Back: forget what may have changed behind our back, recompute ownership. */
		c->leased = true;
		c->st.lease_resumes++;
		peer_compute_hot(&c->ps, now_us);
	}
}

bool peer_sync_claims_fresh(const struct sw *sw)
{
	const struct peer_sync *c = sw->peer_sync;
	bool fresh = false;

	for (unsigned s = 1; s < c->ps.nslots; s++)
		fresh |= c->ps.slot[s].owned_fresh;
	return fresh;
}

bool peer_sync_tick(struct sw *sw, uint64_t now_us)
{
	struct peer_sync *c = sw->peer_sync;

	if (peer_tick(&c->ps, now_us))
		return true;
	if (c->ps.hot_dirty)
		peer_compute_hot(&c->ps, now_us);
	return false;
}

void peer_sync_add_epoch(struct sw *sw, const struct hot_report *r)
{
	peer_add_epoch(&sw->peer_sync->ps, r);
}

/* ---- Ownership in the directory (ownership.c). ----------------------------------------------- */

const struct peer_key *peer_sync_hot_set(const struct sw *sw, uint32_t *n)
{
	*n = sw->peer_sync->ps.nhot;
	return sw->peer_sync->ps.hot;
}

uint16_t peer_sync_owner(const struct sw *sw, uint64_t keyhash, uint64_t now_us)
{
	return peer_owner(&sw->peer_sync->ps, keyhash, now_us);
}

static int cmp_keyhash(const void *a, const void *b)
{
	const uint64_t *x = a;
	const struct peer_key *y = b;

	return *x < y->keyhash ? -1 : *x > y->keyhash;
}

bool peer_sync_claims(const struct sw *sw, uint16_t owner, uint64_t keyhash, uint64_t now_us)
{
	const struct peer_state *ps = &sw->peer_sync->ps;
	int s = peer_slot_of(ps, owner);
	const struct peer_slot *sl;

	if (s <= 0 || !peer_live(ps, (unsigned)s, now_us))
		return false;
	/* Lists are sorted by keyhash. */
	sl = &ps->slot[s];
	return sl->owned_version &&
	       bsearch(&keyhash, sl->owned, sl->nowned, sizeof(*sl->owned), cmp_keyhash);
}

void peer_sync_follow_claims(struct sw *sw, uint64_t now_us, bool all,
			     bool (*apply)(struct sw *sw, uint16_t peer,
					   const struct peer_key *keys, uint32_t n))
{
	struct peer_state *ps = &sw->peer_sync->ps;

	for (unsigned s = 1; s < ps->nslots; s++) {
		struct peer_slot *sl = &ps->slot[s];

		if (!peer_live(ps, s, now_us)) {
			/* When it is back, it must hear us confirm afresh. */
			sl->applied_version = 0;
			continue;
		}
		if (!all && !sl->owned_fresh)
			continue;
		sl->owned_fresh = false;
		if (apply(sw, sl->id, sl->owned, sl->nowned))
			sl->applied_version = sl->owned_version;
	}
}

uint32_t peer_sync_owned_cap(const struct sw *sw)
{
	return sw->peer_sync->ps.owned_cap;
}

uint64_t peer_sync_set_owned(struct sw *sw, const struct peer_key *keys, uint32_t n,
			     uint64_t *confirmed)
{
	struct peer_state *ps = &sw->peer_sync->ps;

	peer_set_owned(ps, keys, n);
	*confirmed = peer_min_confirmed(ps);
	return ps->owned_version;
}

void peer_sync_count(struct sw *sw, enum peer_sync_event ev)
{
	sw->peer_sync->st.events[ev]++;
}

void peer_sync_publish_lease(struct sw *sw, uint64_t until_us, uint64_t now_us)
{
	uint64_t tsc = until_us ? rte_rdtsc() + (until_us - now_us) * sw->tsc_hz / 1000000u : 0;

	__atomic_store_n(&sw->lease_until_tsc, tsc, __ATOMIC_RELAXED);
}

/* ---- Ring changes (ring_change.c). ----------------------------------------------------------- */

void peer_sync_set_ring(struct sw *sw, uint64_t epoch, uint64_t ready, uint64_t prev,
			uint64_t now_us)
{
	struct peer_sync *c = sw->peer_sync;
	const struct peer_slot *self;

	if (!c)
		return;
	self = &c->ps.slot[0];
	if (self->ring_epoch == epoch && self->ring_ready == (ready > epoch ? ready : epoch))
		return;
	peer_set_ring(&c->ps, epoch, ready, prev);
	for (unsigned s = 1; s < c->ps.nslots; s++) {
		struct emit_ctx x = {sw, c->ps.slot[s].id, now_us};

		peer_build_heartbeat(&c->ps, s, now_us, emit, &x);
	}
}

bool peer_sync_ring_ready(const struct sw *sw, uint64_t epoch, uint64_t now_us, uint16_t *lagging)
{
	const struct peer_sync *c = sw->peer_sync;
	unsigned slot = 0;

	if (!c || peer_ring_ready(&c->ps, epoch, now_us, &slot))
		return true;
	*lagging = c->ps.slot[slot].id;
	return false;
}

void peer_sync_rings(const struct sw *sw, uint64_t now_us, struct peer_sync_rings *r)
{
	const struct peer_state *ps = &sw->peer_sync->ps;

	memset(r, 0, sizeof(*r));
	for (unsigned s = 1; s < ps->nslots; s++) {
		const struct peer_slot *sl = &ps->slot[s];

		if (!peer_live(ps, s, now_us))
			continue;
		if (sl->ring_ready > r->ready) {
			r->ready = sl->ring_ready;
			r->prev = sl->ring_prev;
			r->leader = sl->id;
		}
		if (sl->ring_epoch > r->published)
			r->published = sl->ring_epoch;
	}
}

/* ---- A sync tick, the round's time, the rows for telemetry. ----------------------------- */

void peer_sync_send(struct sw *sw, uint64_t now_us)
{
	struct peer_sync *c = sw->peer_sync;
	struct peer_sync_row rows[PEER_MAX];

	send_syncs(sw, now_us);
	fill_rows(sw, now_us, rows);
	pthread_mutex_lock(&sw->tel_lock);
	memcpy(c->rows, rows, sizeof(rows));
	c->nrows = c->ps.nslots;
	c->rows_leased = c->leased;
	pthread_mutex_unlock(&sw->tel_lock);
}

void peer_sync_note_round(struct sw *sw, uint64_t took_us)
{
	struct peer_sync *c = sw->peer_sync;

	if (took_us > c->st.slowest_round_us)
		c->st.slowest_round_us = took_us;
	if (took_us > 50000)
		log_warn("peers: a control round took %llu ms (resets %llu, installs %llu+%llu, "
			 "removes %llu+%llu)",
			 (unsigned long long)took_us / 1000,
			 (unsigned long long)c->st.events[PEER_SYNC_RESET],
			 (unsigned long long)c->st.events[PEER_SYNC_OWNED_INSTALL],
			 (unsigned long long)c->st.events[PEER_SYNC_REMOTE_INSTALL],
			 (unsigned long long)c->st.events[PEER_SYNC_OWNED_RETIRE],
			 (unsigned long long)c->st.events[PEER_SYNC_REMOTE_REMOVE]);
}

unsigned peer_sync_rows_snapshot(struct sw *sw, struct peer_sync_row *rows, bool *leased)
{
	struct peer_sync *c = sw->peer_sync;
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

/* `peers`: every switch's row, the lease state, the cluster hot set, the counters. */
static json_t *cmd_peers(struct sw *sw, int argc, char **argv, void *aux)
{
	struct peer_sync *c = sw->peer_sync;
	struct peer_sync_row rows[PEER_MAX];
	json_t *arr = json_array(), *hot = json_array(), *o;
	uint64_t now_us, until = 0;
	struct fmt f;

	(void)argc;
	(void)argv;
	(void)aux;
	if (!c)
		return json_pack("{s:b, s:b, s:o, s:o}", "ok", 1, "peers_configured", 0, "switches",
				 arr, "hot", hot);
	now_us = clock_mono_us();
	fill_rows(sw, now_us, rows);
	for (unsigned s = 0; s < c->ps.nslots; s++) {
		json_array_append_new(arr, fmt_json(&f));
		format_row(&f, &rows[s]);
	}
	for (uint32_t i = 0; i < c->ps.nhot; i++) {
		const struct peer_key *k = &c->ps.hot[i];

		json_array_append_new(
		    hot,
		    json_pack("{s:o, s:I, s:i, s:s}", "key", fmt_key_json(k->key, k->key_len),
			      "count", (json_int_t)k->count, "replicas", k->replicas, "owner",
			      peer_sync_switch_name(sw, peer_owner(&c->ps, k->keyhash, now_us))));
	}
	peer_all_leases(&c->ps, now_us, &until);
	o = json_pack(
	    "{s:b, s:b, s:b, s:I, s:o, s:o}", "ok", 1, "peers_configured", 1, "leased", c->leased,
	    "lease_left_ms",
	    (json_int_t)(until > now_us && until != UINT64_MAX ? (until - now_us) / 1000 : 0),
	    "switches", arr, "hot", hot);
	json_object_set_new(o, "stats", fmt_json(&f));
	format_stats(sw, &f);
	return o;
}

/*
 * /metrics: every switch's row of this round, labelled peer="name" (this
 * switch's own row too, self), the lease and the counters. Nothing without peers.
 */
static void metrics_peers(struct sw *sw, struct prom *p)
{
	struct peer_sync *c = sw->peer_sync;
	struct peer_sync_row rows[PEER_MAX];
	uint64_t now_us, until = 0;
	struct fmt f;

	if (!c)
		return;
	now_us = clock_mono_us();
	fill_rows(sw, now_us, rows);
	for (unsigned s = 0; s < c->ps.nslots; s++) {
		const struct prom_label label = {"peer", rows[s].name};

		fmt_prom(&f, p, "skewless_switch_peer_", &label, 1);
		format_row(&f, &rows[s]);
	}
	peer_all_leases(&c->ps, now_us, &until);
	prom_add(p, "skewless_switch_leased", "1 while this switch holds every peer's lease",
		 PROM_GAUGE, NULL, 0, c->leased);
	fmt_prom(&f, p, "skewless_switch_peers_", NULL, 0);
	format_stats(sw, &f);
}

/* /skewless/peers (telemetry thread): the rows of the last sync round. */
static int tel_peers(struct sw *sw, struct rte_tel_data *d)
{
	struct peer_sync_row rows[PEER_MAX];
	bool leased = false;
	unsigned n;

	n = peer_sync_rows_snapshot(sw, rows, &leased);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "peers_configured", sw->npeers);
	rte_tel_data_add_dict_u64(d, "leased", leased);
	for (unsigned i = 0; i < n; i++) {
		struct rte_tel_data *pd = rte_tel_data_alloc();
		struct fmt f;

		if (!pd)
			return -1;
		fmt_tel(&f, pd);
		format_row(&f, &rows[i]);
		rte_tel_data_add_dict_container(d, rows[i].name, pd, 0);
	}
	return 0;
}

CTL_TELEMETRY("/skewless/peers", tel_peers,
	      "Peer switches: live, lease, last sync, lag, window, owned keys, "
	      "owned list version and confirmation (as of the last sync round)")
