/*
 * peer.c - the peer-switch protocol state (see peer.h); the SYNC codec is proto/sync.c.
 * Pure: no DPDK, no clock, no I/O; peer_sync.c drives it from the control thread.
 */
#include "peer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* ---- State. -------------------------------------------------------------------------------- */

static uint32_t owned_cap(const struct cfg *cfg)
{
	return cfg->directory.max_keys < SYNC_MAX_OWNED ? cfg->directory.max_keys : SYNC_MAX_OWNED;
}

int peer_init(struct peer_state *ps, const struct cfg *cfg, uint16_t self_id, uint32_t incarnation,
	      uint64_t now_us)
{
	const struct cfg_switch *self = cfg_switch_by_id(cfg, self_id);
	uint32_t ocap = owned_cap(cfg);

	memset(ps, 0, sizeof(*ps));
	if (!self || incarnation == 0)
		return -EINVAL;
	ps->interval_ms = cfg->sync.interval_ms;
	ps->delta_pct = cfg->sync.score_delta_pct;
	ps->nwin = cfg->sync.window;
	ps->top_k = cfg_directory_top_k(cfg);
	if (ps->top_k > HOT_MAX_TOP)
		ps->top_k = HOT_MAX_TOP;
	if (ps->top_k == 0)
		ps->top_k = 1;
	ps->nnodes = cfg->nnodes;
	ps->max_replicas = cfg->directory.max_replicas;
	ps->replica_factor = cfg->directory.replica_factor;
	ps->dead_us = (uint64_t)PEER_DEAD_INTERVALS * ps->interval_ms * 1000u;
	ps->lease_us = (uint64_t)PEER_LEASE_INTERVALS * ps->interval_ms * 1000u;
	ps->next_tick_us = now_us;
	ps->owned_cap = ocap;
	ps->pending = calloc(2u * ps->top_k, sizeof(*ps->pending));
	ps->hot = calloc(2u * ps->top_k, sizeof(*ps->hot));
	ps->owned = calloc(ocap ? ocap : 1, sizeof(*ps->owned));
	if (!ps->pending || !ps->hot || !ps->owned)
		goto nomem;
	ps->nslots = 1;
	ps->slot[0].id = self->id;
	ps->slot[0].incarnation = incarnation;
	for (unsigned i = 0; i < self->npeers && ps->nslots < PEER_MAX; i++)
		ps->slot[ps->nslots++].id = self->peers[i];
	for (unsigned s = 0; s < ps->nslots; s++) {
		struct peer_slot *sl = &ps->slot[s];
		const struct cfg_switch *c = cfg_switch_by_id(cfg, sl->id);

		if (!c) {
			peer_fini(ps);
			return -EINVAL;
		}
		snprintf(sl->name, sizeof(sl->name), "%s", c->name);
		sl->vip = c->vip;
		sl->win = calloc(ps->nwin, sizeof(*sl->win));
		if (!sl->win)
			goto nomem;
		for (unsigned w = 0; w < ps->nwin; w++) {
			sl->win[w].keys = calloc(2u * ps->top_k, sizeof(struct peer_key));
			if (!sl->win[w].keys)
				goto nomem;
		}
		if (s == 0)
			continue;
		sl->rx_filled = calloc(ocap ? ocap : 1, 1);
		sl->rx_keys = calloc(ocap ? ocap : 1, sizeof(struct peer_key));
		sl->owned = calloc(ocap ? ocap : 1, sizeof(struct peer_key));
		if (!sl->rx_filled || !sl->rx_keys || !sl->owned)
			goto nomem;
	}
	/* Our first owned list (empty) is version 1: peers can confirm it. */
	ps->owned_version = 1;
	return 0;
nomem:
	peer_fini(ps);
	return -ENOMEM;
}

void peer_fini(struct peer_state *ps)
{
	for (unsigned s = 0; s < PEER_MAX; s++) {
		struct peer_slot *sl = &ps->slot[s];

		if (sl->win)
			for (unsigned w = 0; w < ps->nwin; w++)
				free(sl->win[w].keys);
		free(sl->win);
		free(sl->rx_filled);
		free(sl->rx_keys);
		free(sl->owned);
		sl->win = NULL;
		sl->rx_filled = NULL;
		sl->rx_keys = sl->owned = NULL;
	}
	free(ps->pending);
	free(ps->hot);
	free(ps->owned);
	ps->pending = ps->hot = ps->owned = NULL;
}

int peer_slot_of(const struct peer_state *ps, uint16_t id)
{
	for (unsigned s = 0; s < ps->nslots; s++)
		if (ps->slot[s].id == id)
			return (int)s;
	return -1;
}

/* A peer restarted (new incarnation): nothing it told us before holds. */
static void forget_peer(struct peer_state *ps, struct peer_slot *sl)
{
	for (unsigned w = 0; w < ps->nwin; w++)
		sl->win[w].n = 0, sl->win[w].id = 0;
	sl->nwin = 0;
	sl->resend_windows = PEER_RESEND_ROUNDS;
	sl->rx_version = 0;
	sl->rx_total = sl->rx_have = 0;
	sl->owned_version = 0;
	sl->nowned = 0;
	sl->owned_fresh = true;
	sl->applied_version = 0;
	sl->their_ts_us = 0;
	sl->lease_echo_us = 0;
	sl->lease_confirmed = 0;
	sl->ring_epoch = sl->ring_ready = sl->ring_prev = 0;
	memset(sl->score_rx_us, 0, sizeof(sl->score_rx_us));
	memset(sl->sent_any, 0, sizeof(sl->sent_any));
}

/* Windows are kept newest first (win[0]), ordered by id. */
static struct peer_window *newest(const struct peer_state *ps, const struct peer_slot *sl)
{
	(void)ps;
	return sl->nwin ? &sl->win[0] : NULL;
}

/* The i-th most recent window of sl (0 = newest), NULL when it has fewer. */
static const struct peer_window *recent(const struct peer_state *ps, const struct peer_slot *sl,
					unsigned i)
{
	(void)ps;
	return i < sl->nwin ? &sl->win[i] : NULL;
}

/*
 * The window with this id, made room for in id order (the oldest one goes
 * when all N are used); NULL when it is older than every window kept.
 */
static struct peer_window *window_at(struct peer_state *ps, struct peer_slot *sl, uint64_t id,
				     uint64_t samples)
{
	unsigned pos = 0;
	struct peer_key *keys;

	for (unsigned i = 0; i < sl->nwin; i++)
		if (sl->win[i].id == id)
			return &sl->win[i];
	while (pos < sl->nwin && sl->win[pos].id > id)
		pos++;
	if (pos == ps->nwin)
		return NULL;
	if (sl->nwin < ps->nwin)
		sl->nwin++;
	/* Shift older windows down one; the last one's buffer is reused. */
	keys = sl->win[sl->nwin - 1].keys;
	memmove(&sl->win[pos + 1], &sl->win[pos], (sl->nwin - 1 - pos) * sizeof(sl->win[0]));
	sl->win[pos] = (struct peer_window){.id = id, .samples = samples, .n = 0, .keys = keys};
	return &sl->win[pos];
}

static void window_put(struct peer_state *ps, struct peer_window *w, const struct sync_cand *c)
{
	for (uint32_t i = 0; i < w->n; i++)
		if (w->keys[i].keyhash == c->keyhash) {
			w->keys[i].count = c->count;
			return;
		}
	if (w->n >= 2 * ps->top_k)
		return;
	struct peer_key *k = &w->keys[w->n++];
	k->keyhash = c->keyhash;
	k->count = c->count;
	k->key_len = c->key_len;
	memcpy(k->key, c->key, c->key_len);
}

static void receive_cands(struct peer_state *ps, struct peer_slot *sl, const struct sync_msg *m)
{
	struct peer_window *w = window_at(ps, sl, m->window_id, m->samples);
	size_t off = 0;

	if (!w)
		return; /* older than every window kept */
	for (unsigned i = 0; i < m->count; i++) {
		struct sync_cand c;

		sync_msg_cand(m, &off, &c);
		window_put(ps, w, &c);
	}
}

static void receive_owned(struct peer_slot *sl, const struct sync_msg *m)
{
	size_t off = 0;

	if (m->owned_version < sl->rx_version || m->owned_version == sl->owned_version)
		return;
	if (m->owned_version > sl->rx_version) {
		sl->rx_version = m->owned_version;
		sl->rx_total = m->owned_total;
		sl->rx_have = 0;
		memset(sl->rx_filled, 0, m->owned_total);
	}
	if (m->owned_total != sl->rx_total)
		return; /* the same version with another length: malformed, ignore */
	for (unsigned i = 0; i < m->count; i++) {
		struct sync_cand c;
		unsigned idx = m->owned_first + i;

		sync_msg_cand(m, &off, &c);
		if (sl->rx_filled[idx])
			continue;
		sl->rx_filled[idx] = 1;
		sl->rx_have++;
		sl->rx_keys[idx].keyhash = c.keyhash;
		sl->rx_keys[idx].count = 0;
		sl->rx_keys[idx].key_len = c.key_len;
		memcpy(sl->rx_keys[idx].key, c.key, c.key_len);
	}
	if (sl->rx_have == sl->rx_total) {
		memcpy(sl->owned, sl->rx_keys, (size_t)sl->rx_total * sizeof(*sl->owned));
		sl->nowned = sl->rx_total;
		sl->owned_version = sl->rx_version;
		sl->owned_fresh = true;
	}
}

enum sync_error peer_receive(struct peer_state *ps, const void *buf, size_t len, uint64_t now_us)
{
	struct sync_msg m;
	enum sync_error err = sync_decode(buf, len, &m);
	struct peer_slot *sl;
	int s;

	if (err == SYNC_OK) {
		s = peer_slot_of(ps, m.sender);
		if (s <= 0)
			err = SYNC_ERR_SENDER;
	}
	if (err != SYNC_OK)
		return err;
	sl = &ps->slot[s];
	if (sl->heard && sl->incarnation != m.incarnation)
		forget_peer(ps, sl);
	/* (Back) in touch: it may have missed our windows; send it all of them. */
	if (!peer_live(ps, (unsigned)s, now_us))
		sl->resend_windows = PEER_RESEND_ROUNDS;
	sl->incarnation = m.incarnation;
	sl->heard = true;
	sl->last_heard_us = now_us;
	if (m.ts_us > sl->their_ts_us)
		sl->their_ts_us = m.ts_us;
	/* An echo of one of our heartbeats: the lease runs from when we sent it. */
	if (m.echo_incarnation == ps->slot[0].incarnation && m.echo_ts_us &&
	    m.echo_ts_us <= now_us && m.echo_ts_us >= sl->lease_echo_us) {
		sl->lease_echo_us = m.echo_ts_us;
		sl->lease_confirmed = m.confirmed;
		sl->lag_us = now_us - m.echo_ts_us;
	}
	/* Its ring: epochs only grow, so a datagram reordered behind a newer one changes nothing.
	 */
	if (m.ring_ready >= sl->ring_ready) {
		sl->ring_ready = m.ring_ready;
		sl->ring_prev = m.ring_prev;
	}
	if (m.ring_epoch > sl->ring_epoch)
		sl->ring_epoch = m.ring_epoch;
	switch (m.kind) {
	case SYNC_K_SCORES:
		for (unsigned i = 0; i < m.count; i++) {
			struct sync_score sc;

			sync_msg_score(&m, i, &sc);
			sl->score[sc.node] = sc;
			sl->score_rx_us[sc.node] = now_us;
		}
		break;
	case SYNC_K_CANDS:
		receive_cands(ps, sl, &m);
		ps->hot_dirty = true;
		break;
	case SYNC_K_OWNED:
		if (m.owned_total <= ps->owned_cap) /* more than we keep: ignored */
			receive_owned(sl, &m);
		break;
	}
	return SYNC_OK;
}

void peer_set_ring(struct peer_state *ps, uint64_t epoch, uint64_t ready, uint64_t prev)
{
	ps->slot[0].ring_epoch = epoch;
	ps->slot[0].ring_ready = ready > epoch ? ready : epoch;
	ps->slot[0].ring_prev = prev;
}

bool peer_ring_ready(const struct peer_state *ps, uint64_t epoch, uint64_t now_us,
		     unsigned *lagging)
{
	for (unsigned s = 1; s < ps->nslots; s++)
		if (peer_live(ps, s, now_us) && ps->slot[s].ring_ready < epoch) {
			*lagging = s;
			return false;
		}
	return true;
}

bool peer_live(const struct peer_state *ps, unsigned slot, uint64_t now_us)
{
	const struct peer_slot *sl = &ps->slot[slot];

	return slot == 0 || (sl->heard && now_us - sl->last_heard_us < ps->dead_us);
}

bool peer_lease(const struct peer_state *ps, unsigned slot, uint64_t now_us)
{
	const struct peer_slot *sl = &ps->slot[slot];

	return slot == 0 || (sl->lease_echo_us && now_us < sl->lease_echo_us + ps->lease_us);
}

bool peer_all_leases(const struct peer_state *ps, uint64_t now_us, uint64_t *until_us)
{
	uint64_t until = UINT64_MAX;

	for (unsigned s = 1; s < ps->nslots; s++) {
		if (!peer_lease(ps, s, now_us)) {
			if (until_us)
				*until_us = 0;
			return false;
		}
		if (ps->slot[s].lease_echo_us + ps->lease_us < until)
			until = ps->slot[s].lease_echo_us + ps->lease_us;
	}
	if (until_us)
		*until_us = until;
	return true;
}

uint64_t peer_min_confirmed(const struct peer_state *ps)
{
	uint64_t v = UINT64_MAX;

	for (unsigned s = 1; s < ps->nslots; s++)
		if (ps->slot[s].lease_confirmed < v)
			v = ps->slot[s].lease_confirmed;
	return v;
}

/* splitmix64's finaliser: a good 64-bit mix. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t peer_rendezvous(uint16_t switch_id, uint64_t keyhash)
{
	return mix64(keyhash ^ mix64(switch_id));
}

uint16_t peer_owner(const struct peer_state *ps, uint64_t keyhash, uint64_t now_us)
{
	uint16_t best = ps->slot[0].id;
	uint64_t best_score = peer_rendezvous(best, keyhash);

	for (unsigned s = 1; s < ps->nslots; s++) {
		uint64_t sc;

		if (!peer_live(ps, s, now_us))
			continue;
		sc = peer_rendezvous(ps->slot[s].id, keyhash);
		if (sc > best_score || (sc == best_score && ps->slot[s].id > best)) {
			best = ps->slot[s].id;
			best_score = sc;
		}
	}
	return best;
}

/* ---- Windows and the cluster hot set. ------------------------------------------------------- */

void peer_add_epoch(struct peer_state *ps, const struct hot_report *r)
{
	ps->pending_epochs++;
	ps->pending_samples += r->samples;
	for (uint32_t i = 0; i < r->nhot; i++) {
		const struct hot_key *h = &r->hot[i];
		uint32_t j;

		for (j = 0; j < ps->npending; j++)
			if (ps->pending[j].keyhash == h->keyhash)
				break;
		if (j == ps->npending) {
			if (ps->npending == 2 * ps->top_k)
				continue; /* the window's top k is already among 2k candidates */
			ps->pending[j].keyhash = h->keyhash;
			ps->pending[j].count = 0;
			ps->pending[j].key_len = h->key_len;
			memcpy(ps->pending[j].key, h->key, h->key_len);
			ps->npending++;
		}
		ps->pending[j].count += h->count;
	}
}

static int by_count_desc(const void *a, const void *b)
{
	const struct peer_key *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->keyhash < y->keyhash ? -1 : x->keyhash > y->keyhash;
}

/*
 * Close this switch's window: its candidates are the pending epochs' top 2k,
 * so that a key just outside every switch's own top k can still make the
 * merged top k.
 */
static void close_window(struct peer_state *ps)
{
	struct peer_window *w;

	qsort(ps->pending, ps->npending, sizeof(*ps->pending), by_count_desc);
	w = window_at(ps, &ps->slot[0], ++ps->window_id, ps->pending_samples);
	for (uint32_t i = 0; i < ps->npending && i < 2 * ps->top_k; i++)
		w->keys[w->n++] = ps->pending[i];
	ps->npending = 0;
	ps->pending_epochs = 0;
	ps->pending_samples = 0;
}

struct tally {
	uint64_t keyhash;
	uint64_t count;
	uint64_t samples; /* of the merged window it came from */
	uint32_t recency; /* merged window index: 0 newest */
	const struct peer_key *k;
};

static int tally_by_key(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;

	if (x->keyhash != y->keyhash)
		return x->keyhash < y->keyhash ? -1 : 1;
	return x->recency < y->recency ? -1 : x->recency > y->recency;
}

static int tally_by_count(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->keyhash < y->keyhash ? -1 : x->keyhash > y->keyhash;
}

/*
 * Merge: the i-th most recent windows of the given slots, counts summed; the
 * top k of each merged window; a key is hot when it is in the top k of more
 * than nwin/2 merged windows. Writes at most max keys.
 */
static uint32_t peer_merge(const struct peer_state *ps, const bool *use, struct peer_key *out,
			   uint32_t max)
{
	size_t cap = (size_t)ps->nslots * 2 * ps->top_k, nvotes = 0;
	struct tally *cur = calloc(cap ? cap : 1, sizeof(*cur));
	struct tally *votes = calloc((size_t)ps->nwin * ps->top_k + 1, sizeof(*votes));
	uint32_t nout = 0;

	if (!cur || !votes)
		goto out;
	for (unsigned i = 0; i < ps->nwin; i++) {
		size_t n = 0, m = 0;
		uint64_t samples = 0;

		for (unsigned s = 0; s < ps->nslots; s++) {
			const struct peer_window *w = use[s] ? recent(ps, &ps->slot[s], i) : NULL;

			if (!w)
				continue;
			samples += w->samples;
			for (uint32_t j = 0; j < w->n; j++)
				cur[n++] = (struct tally){w->keys[j].keyhash, w->keys[j].count, 0,
							  i, &w->keys[j]};
		}
		/* Sum the counts of each key over the switches. */
		qsort(cur, n, sizeof(*cur), tally_by_key);
		for (size_t j = 0; j < n; j++) {
			if (m && cur[m - 1].keyhash == cur[j].keyhash)
				cur[m - 1].count += cur[j].count;
			else
				cur[m++] = cur[j];
		}
		qsort(cur, m, sizeof(*cur), tally_by_count);
		for (size_t j = 0; j < m && j < ps->top_k; j++) {
			votes[nvotes] = cur[j];
			votes[nvotes++].samples = samples;
		}
	}
	/* A majority of the N merged windows: more than N/2 votes. */
	qsort(votes, nvotes, sizeof(*votes), tally_by_key);
	for (size_t j = 0; j < nvotes;) {
		size_t k = j;
		uint64_t total = 0;

		while (k < nvotes && votes[k].keyhash == votes[j].keyhash)
			total += votes[k++].count;
		if ((k - j) * 2 > ps->nwin && nout < max) {
			/* votes[j] is the key's most recent merged window (sorted by recency). */
			struct peer_key *o = &out[nout++];
			double share = votes[j].samples
					   ? (double)votes[j].count / (double)votes[j].samples
					   : 0;

			*o = *votes[j].k;
			o->count = total;
			o->replicas = hot_replicas_for_share(share, ps->nnodes, ps->max_replicas,
							     ps->replica_factor);
		}
		j = k;
	}
	qsort(out, nout, sizeof(*out), by_count_desc);
out:
	free(cur);
	free(votes);
	return nout;
}

void peer_compute_hot(struct peer_state *ps, uint64_t now_us)
{
	bool use[PEER_MAX];

	for (unsigned s = 0; s < ps->nslots; s++)
		use[s] = peer_live(ps, s, now_us);
	ps->nhot = peer_merge(ps, use, ps->hot, 2 * ps->top_k);
	ps->hot_dirty = false;
}

bool peer_tick(struct peer_state *ps, uint64_t now_us)
{
	if (now_us < ps->next_tick_us)
		return false;
	ps->next_tick_us += (uint64_t)ps->interval_ms * 1000u;
	if (ps->next_tick_us <= now_us) /* fell behind (a stall): no burst of catch-up ticks */
		ps->next_tick_us = now_us + (uint64_t)ps->interval_ms * 1000u;
	ps->seq++;
	if (ps->pending_epochs)
		close_window(ps);
	peer_compute_hot(ps, now_us);
	return true;
}

static int by_keyhash(const void *a, const void *b)
{
	const struct peer_key *x = a, *y = b;

	return x->keyhash < y->keyhash ? -1 : x->keyhash > y->keyhash;
}

void peer_set_owned(struct peer_state *ps, const struct peer_key *keys, uint32_t n)
{
	struct peer_key *sorted;
	bool same;

	if (n > ps->owned_cap)
		n = ps->owned_cap;
	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (!sorted)
		return;
	memcpy(sorted, keys, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), by_keyhash);
	same = n == ps->nowned;
	for (uint32_t i = 0; same && i < n; i++)
		same = sorted[i].keyhash == ps->owned[i].keyhash;
	if (!same) {
		memcpy(ps->owned, sorted, n * sizeof(*sorted));
		ps->nowned = n;
		ps->owned_version++;
	}
	free(sorted);
}

/* ---- Building the SYNC datagrams for one peer. -------------------------------------------- */

/* Did this entry move enough since we last sent it to be worth sending? */
static bool score_moved(const struct peer_state *ps, const struct peer_slot *sl,
			const struct sync_score *s)
{
	unsigned old = sl->sent_health[s->node];
	unsigned diff = s->health > old ? s->health - old : old - s->health;

	if (!sl->sent_any[s->node] || sl->sent_alive[s->node] != s->alive)
		return true;
	return diff * 100u > ps->delta_pct * (old ? old : 1u);
}

/* The common header of what we send peer slot sl at now_us. */
static struct sync_msg header_for(const struct peer_state *ps, const struct peer_slot *sl,
				  uint64_t now_us)
{
	return (struct sync_msg){
	    .sender = ps->slot[0].id,
	    .incarnation = ps->slot[0].incarnation,
	    .seq = ps->seq ? ps->seq : 1,
	    .echo_incarnation = sl->incarnation,
	    .ts_us = now_us,
	    .echo_ts_us = sl->their_ts_us,
	    .confirmed = sl->applied_version,
	    .ring_epoch = ps->slot[0].ring_epoch,
	    .ring_ready = ps->slot[0].ring_ready,
	    .ring_prev = ps->slot[0].ring_prev,
	};
}

void peer_build_heartbeat(struct peer_state *ps, unsigned slot, uint64_t now_us, peer_emit_fn emit,
			  void *arg)
{
	uint8_t buf[SYNC_HDR_LEN];
	struct sync_msg h = header_for(ps, &ps->slot[slot], now_us);
	struct sync_enc e;

	h.kind = SYNC_K_SCORES;
	if (sync_enc_begin(&e, buf, sizeof(buf), &h) == 0)
		emit(arg, buf, sync_enc_end(&e));
}

void peer_build(struct peer_state *ps, unsigned slot, uint64_t now_us, size_t cap,
		const uint16_t *nodes, unsigned nnodes, peer_score_fn get_score, peer_emit_fn emit,
		void *arg)
{
	struct peer_slot *sl = &ps->slot[slot];
	uint8_t buf[WIRE_MAX_DATAGRAM];
	struct sync_enc e;
	struct sync_msg h = header_for(ps, sl, now_us);
	bool full = h.seq % PEER_FULL_EVERY == 0;
	const struct peer_window *w = newest(ps, &ps->slot[0]);

	if (cap > sizeof(buf))
		cap = sizeof(buf);
	/* 1. Heartbeat and node scores (at least one datagram: the heartbeat). */
	h.kind = SYNC_K_SCORES;
	if (sync_enc_begin(&e, buf, cap, &h) != 0)
		return;
	for (unsigned i = 0; i < nnodes; i++) {
		struct sync_score s = {.node = nodes[i]};

		get_score(arg, nodes[i], &s);
		if (!full && !score_moved(ps, sl, &s))
			continue;
		if (sync_enc_score(&e, &s) != 0) {
			emit(arg, buf, sync_enc_end(&e));
			sync_enc_begin(&e, buf, cap, &h);
			if (sync_enc_score(&e, &s) != 0)
				return;
		}
		sl->sent_health[s.node] = s.health;
		sl->sent_alive[s.node] = s.alive;
		sl->sent_any[s.node] = true;
	}
	emit(arg, buf, sync_enc_end(&e));

	/* 2. Our newest window's candidates; all N windows after we (re)gained touch. */
	/* A peer we do not hear (yet) may have missed any of them: all of them too. */
	if (!peer_live(ps, slot, now_us) && !sl->resend_windows)
		sl->resend_windows = 1;
	for (unsigned wi = 0; wi < (sl->resend_windows ? ps->slot[0].nwin : (w ? 1u : 0u)); wi++) {
		w = &ps->slot[0].win[wi];
		h.kind = SYNC_K_CANDS;
		h.window_id = w->id;
		h.samples = w->samples;
		sync_enc_begin(&e, buf, cap, &h);
		for (uint32_t i = 0; i < w->n; i++) {
			const struct peer_key *k = &w->keys[i];
			uint32_t count = k->count > UINT32_MAX ? UINT32_MAX : (uint32_t)k->count;

			if (sync_enc_cand(&e, k->keyhash, count, k->key, k->key_len) == -EMSGSIZE) {
				emit(arg, buf, sync_enc_end(&e));
				sync_enc_begin(&e, buf, cap, &h);
				if (sync_enc_cand(&e, k->keyhash, count, k->key, k->key_len) != 0)
					continue;
			}
		}
		emit(arg, buf, sync_enc_end(&e));
	}
	if (sl->resend_windows)
		sl->resend_windows--;

	/* 3. The keys we own (the whole list, every time: it is what peers confirm). */
	h.kind = SYNC_K_OWNED;
	h.owned_version = ps->owned_version;
	h.owned_total = (uint16_t)ps->nowned;
	h.owned_first = 0;
	sync_enc_begin(&e, buf, cap, &h);
	for (uint32_t i = 0; i < ps->nowned; i++) {
		const struct peer_key *k = &ps->owned[i];

		if (sync_enc_cand(&e, k->keyhash, 0, k->key, k->key_len) == -EMSGSIZE) {
			emit(arg, buf, sync_enc_end(&e));
			h.owned_first = (uint16_t)i;
			sync_enc_begin(&e, buf, cap, &h);
			if (sync_enc_cand(&e, k->keyhash, 0, k->key, k->key_len) != 0)
				return; /* a key larger than a datagram: cannot happen (HOT_MAX_KEY)
					 */
		}
	}
	emit(arg, buf, sync_enc_end(&e));
}
