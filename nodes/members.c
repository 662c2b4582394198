/*
 * members.c - replica groups at a node: views, member pushes, catch-up
 * (members.h; docs/design.md section 13).
 */
#include "members.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "keyhash.h"
#include "log.h"
#include "mignet.h"
#include "node.h"
#include "auth.h"
#include "chunk.h"
#include "ringmsg.h"
#include "send.h"

int members_init(struct node *n)
{
	struct members *g = &n->members;
	pthread_rwlockattr_t attr;

	g->r = n->cfg->service.replicas;
	atomic_store(&g->state, members_on(g) ? WIRE_VIEW_CATCHING : WIRE_VIEW_SERVING);
	if (!members_on(g))
		return 0;
	g->dirty = calloc(MEMBERS_DIRTY_SETS, sizeof(*g->dirty));
	g->behind = calloc(MEMBERS_BEHIND_SETS * MEMBERS_BEHIND_WAYS, sizeof(*g->behind));
	if (!g->dirty || !g->behind || cfg_build_ring(n->cfg, &g->ring) != 0) {
		free(g->dirty);
		free(g->behind);
		return -1;
	}
	g->lease_us = n->cfg->service.view_lease_ms * 1000;
	pthread_mutex_init(&g->answers_lock, NULL);
	pthread_mutex_init(&g->behind_lock, NULL);
	for (unsigned i = 0; i < MEMBERS_DIRTY_SETS; i++)
		pthread_mutex_init(&g->dirty[i].lock, NULL);
	/* A new view must not wait behind a stream of reads. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&g->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	return 0;
}

void members_fini(struct node *n)
{
	struct members *g = &n->members;

	if (!members_on(g))
		return;
	ring_free(&g->ring);
	pthread_rwlock_destroy(&g->lock);
	for (unsigned i = 0; i < MEMBERS_DIRTY_SETS; i++)
		pthread_mutex_destroy(&g->dirty[i].lock);
	free(g->dirty);
	pthread_mutex_destroy(&g->behind_lock);
	pthread_mutex_destroy(&g->answers_lock);
	free(g->behind);
}

bool members_marks_down(struct node *n, uint16_t id)
{
	return members_on(&n->members) && group_bit(n->members.view.down, id);
}

void members_read_lock(struct node *n)
{
	pthread_rwlock_rdlock(&n->members.lock);
}

void members_read_unlock(struct node *n)
{
	pthread_rwlock_unlock(&n->members.lock);
}

/* The key's group under the view held (its out nodes left out). */
static unsigned group_of(const struct members *g, uint64_t keyhash, uint16_t *ids)
{
	return view_group(&g->ring, &g->view, keyhash_point(keyhash), g->r, ids);
}

static uint16_t primary_of(const struct members *g, uint64_t keyhash, const uint16_t *ids,
			   unsigned k)
{
	return group_primary(&g->ring, &g->view, keyhash_point(keyhash), g->r, ids, k);
}

/* Serving: caught up, or taking only groups new to it (which it does not serve yet). */
static bool serving(const struct members *g)
{
	return wire_view_state_serves(atomic_load(&g->state));
}

static bool in_group(const uint16_t *ids, unsigned k, uint16_t id)
{
	for (unsigned i = 0; i < k; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/*
 * Whether a catch-up of node `asker` takes the key at point, of group
 * ids[0..k): one of its groups (new_only, a join: one new to it).
 */
static bool catchup_takes(const struct members *g, uint32_t point, const uint16_t *ids,
			  unsigned k, uint16_t asker, bool new_only)
{
	return in_group(ids, k, asker) &&
	       (!new_only || group_is_new(&g->ring, &g->view, point, g->r, asker));
}

bool members_leased(const struct node *n)
{
	const struct members *g = &n->members;

	return !g->lease_us || clock_mono_us() < atomic_load(&g->lease_until_us);
}

/* Within its view lease; counted when not. */
static bool leased(struct node *n)
{
	if (members_leased(n))
		return true;
	node_count(n, NODE_CTR_lease_refused);
	return false;
}

uint16_t members_other(struct node *n, uint64_t keyhash, enum members_use use)
{
	struct members *g = &n->members;
	uint16_t ids[GROUP_MAX];
	uint16_t primary = primary_of(g, keyhash, ids, group_of(g, keyhash, ids));

	if (!primary ||
	    (primary == n->self->id && (!serving(g) || (use == MEMBERS_READ && !leased(n)))))
		return RING_NO_NODE;
	return primary == n->self->id ? 0 : primary;
}

/* Whether id is another member this node pushes to: not itself, not marked down by the view. */
static bool other_live(const struct node *n, uint16_t id)
{
	return id != n->self->id && !group_bit(n->members.view.down, id);
}

/* The view number node `to` holds (a VIEW query), or 0 when it does not answer. */
static uint64_t view_held_by(struct node *n, uint16_t to)
{
	static __thread uint8_t in[WIRE_HDR_LEN + WIRE_VIEW_REPLY_LEN + 64];
	uint8_t query[WIRE_VIEW_LEN] = {0};
	struct wire_msg rep, req = {.op = WIRE_OP_VIEW, .value = query, .val_len = sizeof(query)};

	if (mignet_request(n, to, &req, in, sizeof(in), &rep) != 0 || rep.status != WIRE_ST_OK)
		return 0;
	return rep.version;
}

int members_confirm(struct node *n, uint64_t keyhash)
{
	struct members *g = &n->members;
	uint16_t ids[GROUP_MAX];
	unsigned k = group_of(g, keyhash, ids), asked = 0;

	if (primary_of(g, keyhash, ids, k) != n->self->id)
		return 0; /* a stamped copy, or a clean read within the lease */
	for (unsigned i = 0; i < k; i++) {
		if (!other_live(n, ids[i]))
			continue;
		uint64_t held = view_held_by(n, ids[i]);

		if (!held || held > g->view.number) {
			node_count(n, NODE_CTR_lease_refused);
			return -1;
		}
		asked++;
	}
	if (!asked) { /* the group's only live member: nobody to ask */
		node_count(n, NODE_CTR_lease_refused);
		return -1;
	}
	node_count(n, NODE_CTR_reads_confirmed);
	return 0;
}

/* ---- Dirty keys: pushed here, their COMMIT not yet received. ---- */

static struct members_dirty *dirty_set(struct members *g, uint64_t keyhash)
{
	return &g->dirty[keyhash & (MEMBERS_DIRTY_SETS - 1)];
}

/* Mark keyhash dirty at version; false when its set is full of fresh marks. */
static bool dirty_mark(struct members *g, uint64_t keyhash, uint64_t version, uint64_t now)
{
	struct members_dirty *d = dirty_set(g, keyhash);
	int free_way = -1;
	bool ok = true;

	pthread_mutex_lock(&d->lock);
	for (int w = 0; w < MEMBERS_DIRTY_WAYS; w++) {
		if (d->way[w].since_ms && d->way[w].keyhash == keyhash) {
			free_way = w;
			break;
		}
		if (free_way < 0 && (!d->way[w].since_ms || now - d->way[w].since_ms > MEMBERS_DIRTY_MS))
			free_way = w;
	}
	if (free_way >= 0) {
		if (d->way[free_way].keyhash != keyhash || d->way[free_way].version < version)
			d->way[free_way].version = version;
		d->way[free_way].keyhash = keyhash;
		d->way[free_way].since_ms = now;
	} else {
		ok = false;
	}
	pthread_mutex_unlock(&d->lock);
	return ok;
}

static bool dirty(struct members *g, uint64_t keyhash, uint64_t now)
{
	struct members_dirty *d = dirty_set(g, keyhash);
	bool found = false;

	pthread_mutex_lock(&d->lock);
	for (int w = 0; w < MEMBERS_DIRTY_WAYS && !found; w++)
		found = d->way[w].since_ms && d->way[w].keyhash == keyhash &&
			now - d->way[w].since_ms <= MEMBERS_DIRTY_MS;
	pthread_mutex_unlock(&d->lock);
	return found;
}

void members_on_commit(struct node *n, const struct wire_msg *m)
{
	struct members_dirty *d;

	if (!members_on(&n->members))
		return;
	d = dirty_set(&n->members, m->keyhash);
	pthread_mutex_lock(&d->lock);
	for (int w = 0; w < MEMBERS_DIRTY_WAYS; w++)
		if (d->way[w].since_ms && d->way[w].keyhash == m->keyhash &&
		    d->way[w].version <= m->version)
			d->way[w].since_ms = 0;
	pthread_mutex_unlock(&d->lock);
	node_count(n, NODE_CTR_member_commits);
}

bool members_clean(struct node *n, uint64_t keyhash)
{
	struct members *g = &n->members;
	uint16_t ids[GROUP_MAX];
	unsigned k = group_of(g, keyhash, ids);

	if (!serving(g) || primary_of(g, keyhash, ids, k) == 0)
		return false;
	return in_group(ids, k, n->self->id) &&
	       !group_is_new(&g->ring, &g->view, keyhash_point(keyhash), g->r, n->self->id) &&
	       !dirty(g, keyhash, store_now_ms()) && leased(n);
}

/* COMMIT(version) of a key to node `to`: its members may serve it clean from now. */
static void send_commit(struct node *n, uint16_t to, const struct wire_msg *m, uint64_t version)
{
	const struct cfg_node *cn = cfg_node_by_id(n->cfg, to);
	struct wire_msg c = {.op = WIRE_OP_COMMIT,
			     .keyhash = m->keyhash,
			     .version = version,
			     .node = n->self->id,
			     .key = m->key,
			     .key_len = m->key_len};
	struct sockaddr_in addr = {.sin_family = AF_INET};

	if (!cn)
		return;
	addr.sin_addr.s_addr = htonl(cn->ip);
	addr.sin_port = htons(cn->port);
	node_send_msg(n, &addr, &c);
}

/* ---- Keys behind at a member: a push from here not confirmed. ---- */

static struct members_behind *behind_set(struct members *g, uint64_t keyhash)
{
	return &g->behind[(keyhash & (MEMBERS_BEHIND_SETS - 1)) * MEMBERS_BEHIND_WAYS];
}

/* Under behind_lock: keyhash's mark, or NULL (then *free_way: a free way of its set, or NULL). */
static struct members_behind *behind_find(struct members *g, uint64_t keyhash,
					  struct members_behind **free_way)
{
	struct members_behind *set = behind_set(g, keyhash);

	*free_way = NULL;
	for (int w = 0; w < MEMBERS_BEHIND_WAYS; w++) {
		if (set[w].used && set[w].keyhash == keyhash)
			return &set[w];
		if (!set[w].used && !*free_way)
			*free_way = &set[w];
	}
	return NULL;
}

/* Mark keyhash behind (confirmed false) or clear its mark. */
static void behind_note(struct node *n, uint64_t keyhash, bool confirmed)
{
	struct members *g = &n->members;
	struct members_behind *mark, *free_way;

	if (confirmed && !atomic_load(&g->behind_count))
		return;
	pthread_mutex_lock(&g->behind_lock);
	mark = behind_find(g, keyhash, &free_way);
	if (mark && confirmed) {
		mark->used = false;
		atomic_fetch_sub(&g->behind_count, 1);
	} else if (!mark && !confirmed && free_way) {
		*free_way = (struct members_behind){.used = true, .keyhash = keyhash};
		atomic_fetch_add(&g->behind_count, 1);
		node_count(n, NODE_CTR_member_behind);
	} else if (!mark && !confirmed) {
		node_count(n, NODE_CTR_member_behind_full);
	}
	pthread_mutex_unlock(&g->behind_lock);
}

bool members_behind(struct node *n, uint64_t keyhash)
{
	struct members *g = &n->members;
	struct members_behind *free_way;
	bool found;

	if (!members_on(g) || !atomic_load(&g->behind_count))
		return false;
	pthread_mutex_lock(&g->behind_lock);
	found = behind_find(g, keyhash, &free_way) != NULL;
	pthread_mutex_unlock(&g->behind_lock);
	return found;
}

/* Catching up again: this node is no key's primary, and every member will catch up from it. */
static void behind_clear(struct members *g)
{
	pthread_mutex_lock(&g->behind_lock);
	memset(g->behind, 0, MEMBERS_BEHIND_SETS * MEMBERS_BEHIND_WAYS * sizeof(*g->behind));
	atomic_store(&g->behind_count, 0);
	pthread_mutex_unlock(&g->behind_lock);
}

/* ---- Pushing a record to a member. ---- */

/* Room for a pushed record: the view, the longest prefix and the largest value. */
#define PUSH_ROOM (WIRE_MEMBER_VIEW_LEN + WIRE_MIG_PREFIX_MAX + CFG_MAX_VALUE)

/*
 * MEMBER(rec, view) to node `to`: 0 once it holds that version or a newer
 * one, -1 otherwise. rec's value is in buf past WIRE_MEMBER_VIEW_LEN +
 * WIRE_MIG_PREFIX_MAX, where mig_read() put it, or right after the prefix
 * (where a first push moved it: rec->value follows); the view and the
 * prefix go before it.
 */
static int push_record(struct node *n, uint16_t to, uint64_t view, uint64_t keyhash,
		       const void *key, uint16_t klen, struct mig_record *rec, uint8_t *buf)
{
	static __thread uint8_t in[WIRE_HDR_LEN + WIRE_MAX_KEY + 64];
	struct wire_mig_prefix pre = {.kind = rec->kind, .ttl_ms = rec->ttl_ms};
	uint32_t vlen = rec->kind == STORE_VALUE ? rec->value_len : 0;
	struct wire_msg rep, req = {.op = WIRE_OP_MEMBER,
				    .keyhash = keyhash,
				    .version = rec->version,
				    .key = key,
				    .key_len = klen,
				    .value = buf};
	int plen;

	mignet_writes_to_wire(rec, &pre);
	wire_put64(buf, view);
	plen = wire_mig_prefix_encode(&pre, buf + WIRE_MEMBER_VIEW_LEN, WIRE_MIG_PREFIX_MAX);
	if (plen < 0)
		return -1;
	if (vlen && rec->value != buf + WIRE_MEMBER_VIEW_LEN + plen) {
		memmove(buf + WIRE_MEMBER_VIEW_LEN + plen, rec->value, vlen);
		rec->value = buf + WIRE_MEMBER_VIEW_LEN + plen;
	}
	req.val_len = WIRE_MEMBER_VIEW_LEN + (uint32_t)plen + vlen;
	node_count(n, NODE_CTR_member_pushes);
	if (mignet_request(n, to, &req, in, sizeof(in), &rep) != 0 || rep.status != WIRE_ST_OK ||
	    rep.version < rec->version) {
		node_count(n, NODE_CTR_member_push_failed);
		return -1;
	}
	return 0;
}

int members_push(struct node *n, const struct wire_msg *m, uint64_t *version)
{
	static __thread uint8_t buf[PUSH_ROOM];
	struct members *g = &n->members;
	uint16_t ids[GROUP_MAX];
	unsigned k = group_of(g, m->keyhash, ids);
	struct mig_record rec;
	int rc, failed = 0;

	*version = 0;
	rc = mig_read(&n->mig, m->keyhash, m->key, m->key_len, &rec,
		      buf + WIRE_MEMBER_VIEW_LEN + WIRE_MIG_PREFIX_MAX, CFG_MAX_VALUE,
		      store_now_ms());
	if (rc < 0)
		return -1;
	if (rc == 0) {
		behind_note(n, m->keyhash, true);
		return 0; /* nothing stored (a DEL of nothing): nothing to hold */
	}
	for (unsigned i = 0; i < k; i++) {
		if (!other_live(n, ids[i]))
			continue;
		if (push_record(n, ids[i], g->view.number, m->keyhash, m->key, m->key_len, &rec,
				buf) != 0)
			failed = -1;
	}
	behind_note(n, m->keyhash, failed == 0);
	if (!failed)
		*version = rec.version;
	return failed;
}

void members_commit(struct node *n, const struct wire_msg *m, uint64_t version)
{
	struct members *g = &n->members;
	uint16_t ids[GROUP_MAX];
	unsigned k = group_of(g, m->keyhash, ids);

	for (unsigned i = 0; i < k && version; i++)
		if (other_live(n, ids[i]))
			send_commit(n, ids[i], m, version);
}

void members_on_member(struct node *n, const struct wire_msg *m, struct wire_msg *rep)
{
	struct members *g = &n->members;
	struct wire_msg body = *m;
	struct wire_mig_prefix pre;
	struct store_record held;
	struct mig_record rec;
	const uint8_t *val;
	uint64_t view;
	uint32_t vlen;

	if (!members_on(g) || m->val_len < WIRE_MEMBER_VIEW_LEN || m->version == 0) {
		node_count(n, NODE_CTR_bad_payload);
		rep->status = WIRE_ST_BAD_REQUEST;
		return;
	}
	body.value += WIRE_MEMBER_VIEW_LEN;
	body.val_len -= WIRE_MEMBER_VIEW_LEN;
	if (wire_mig_prefix_decode(&body, &pre, &val, &vlen) != 0) {
		node_count(n, NODE_CTR_bad_payload);
		rep->status = WIRE_ST_BAD_REQUEST;
		return;
	}
	/* View 0: a catch-up copy (members_on_catchup()), which fences nothing. */
	view = wire_get64(m->value);
	if (view && view < atomic_load(&g->number)) {
		node_count(n, NODE_CTR_member_refused);
		rep->status = WIRE_ST_UNAVAILABLE;
		rep->version = atomic_load(&g->number);
		return;
	}
	rec = (struct mig_record){
	    .kind = pre.kind, .version = m->version, .ttl_ms = pre.ttl_ms, .value = val, .value_len = vlen};
	mignet_writes_from_wire(&pre, &rec);
	/* Dirty until the primary's COMMIT (a catch-up copy is not a write in flight). */
	if (view && !dirty_mark(g, m->keyhash, m->version, store_now_ms())) {
		node_count(n, NODE_CTR_member_refused);
		rep->status = WIRE_ST_UNAVAILABLE;
		return;
	}
	if (mig_adopt(&n->mig, m->keyhash, m->key, m->key_len, &rec, store_now_ms()) < 0 ||
	    store_get(n->store, STORE_OWNED, m->key, m->key_len, &held, NULL, 0) < 0) {
		rep->status = WIRE_ST_INTERNAL;
		return;
	}
	node_count(n, NODE_CTR_member_stored);
	rep->status = WIRE_ST_OK;
	rep->version = held.version;
}

/* ---- Views. ---- */

static bool marked(const uint8_t *map, const struct node *n)
{
	return group_bit(map, n->self->id);
}

/* Under the write lock: a new state, ending any catch-up or join running. */
static void restart(struct members *g, enum wire_view_state state)
{
	atomic_store(&g->state, state);
	atomic_fetch_add(&g->restarts, 1);
}

/* Under the write lock: a view newer than the one held. 0, or -1 (its floor not stored). */
static int take_view(struct node *n, const struct wire_view *v)
{
	struct members *g = &n->members;
	int state = atomic_load(&g->state);

	/*
	 * No version assigned under this view is below its number (the
	 * switch's wall clock in microseconds): above every version an
	 * earlier primary of the same keys assigned, acknowledged or not
	 * (no key takes a million writes a second), so that a write it
	 * left behind never ties with one made since.
	 */
	if (store_raise_floor(n->store, v->number) != 0) {
		node_count(n, NODE_CTR_store_errors);
		return -1;
	}
	bool regrouped = memcmp(v->out, g->view.out, GROUP_BITMAP) != 0;
	bool catching = state == WIRE_VIEW_CATCHING || state == WIRE_VIEW_CAUGHT_UP;
	bool joins = state == WIRE_VIEW_JOINING || state == WIRE_VIEW_JOINED;

	g->view = *v;
	atomic_store(&g->number, v->number);
	/*
	 * Marked down: pushes to this node were skipped, so whatever it
	 * took is incomplete. Marked catching up while serving: the switch
	 * saw it restart. Catching up while the groups changed (a node
	 * left out, or back): its groups are others now. Each way it
	 * catches up again, from the start.
	 */
	if (marked(v->down, n) || (marked(v->catching, n) && !catching) ||
	    (catching && regrouped)) {
		if (state != WIRE_VIEW_CATCHING)
			log_info("view %llu marks this node %s: catching up",
				 (unsigned long long)v->number,
				 marked(v->down, n) ? "down" : "catching up");
		restart(g, WIRE_VIEW_CATCHING);
		behind_clear(g);
	} else if (marked(v->joining, n) && (state == WIRE_VIEW_SERVING || regrouped)) {
		log_info("view %llu marks this node joining groups new to it",
			 (unsigned long long)v->number);
		restart(g, WIRE_VIEW_JOINING);
	} else if (!marked(v->joining, n) && joins) {
		log_info("view %llu ends this node's join: serving", (unsigned long long)v->number);
		restart(g, WIRE_VIEW_SERVING);
	} else if (!marked(v->catching, n) && !marked(v->down, n) &&
		   state == WIRE_VIEW_CAUGHT_UP && v->number > g->caught_up_at) {
		atomic_store(&g->state, WIRE_VIEW_SERVING);
		log_info("view %llu marks this node up: serving", (unsigned long long)v->number);
	}
	return 0;
}

/* The lease a VIEW grants from this node's answer `req_id` (if it is still remembered). */
static void lease_from(struct members *g, uint64_t req_id)
{
	pthread_mutex_lock(&g->answers_lock);
	for (unsigned i = 0; i < MEMBERS_ANSWERS; i++)
		if (g->answers[i].req_id == req_id) {
			uint64_t until = g->answers[i].at_us + g->lease_us;

			if (until > atomic_load(&g->lease_until_us))
				atomic_store(&g->lease_until_us, until);
			break;
		}
	pthread_mutex_unlock(&g->answers_lock);
}

/* This node answers VIEW req_id now (at_us, before the answer leaves). */
static void note_answer(struct members *g, uint64_t req_id, uint64_t at_us)
{
	pthread_mutex_lock(&g->answers_lock);
	g->answers[g->answers_next].req_id = req_id;
	g->answers[g->answers_next].at_us = at_us;
	g->answers_next = (g->answers_next + 1) % MEMBERS_ANSWERS;
	pthread_mutex_unlock(&g->answers_lock);
}

/*
 * Whether view v names a node this node's config does not have, and the
 * config file is due to be read again (at most once a second).
 */
static bool names_unknown(const struct node *n, const struct wire_view *v)
{
	static _Atomic uint64_t last_try_ms;
	const uint8_t *maps[] = {v->down, v->catching, v->out, v->joining, v->was_out};
	uint64_t now = clock_mono_ms(), last = atomic_load(&last_try_ms);

	for (unsigned id = 1; id < 8 * GROUP_BITMAP; id++)
		for (unsigned i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
			if (group_bit(maps[i], id) && !cfg_node_by_id(n->cfg, (uint16_t)id))
				return now - last >= 1000 &&
				       atomic_compare_exchange_strong(&last_try_ms, &last, now);
	return false;
}

/*
 * Under the write lock: the config file again, for a view that names a
 * node this one does not know. A node a ring change adds with R above 1
 * is left out of every group until every node has its config
 * (docs/design.md section 13, "Adding a node"), so groups are the same
 * with either config until then: until the new config is installed the
 * view is taken as it is.
 */
static void reload_config(struct node *n)
{
	struct members *g = &n->members;
	struct cfg *c = malloc(sizeof(*c));
	struct ring ring = {0};
	char err[CFG_ERR_LEN] = "";

	if (!c || cfg_load(n->cfg->path, c, err, sizeof(err)) != 0 ||
	    c->ring_version <= n->cfg->ring_version ||
	    c->service.replicas != n->cfg->service.replicas || !cfg_node_by_id(c, n->self->id) ||
	    cfg_build_ring(c, &ring) != 0) {
		log_warn("a view names a node not in %s (ring version %lu): install the config "
			 "that adds it%s%s",
			 n->cfg->path, (unsigned long)n->cfg->ring_version, err[0] ? ": " : "",
			 err);
		ring_free(&ring);
		free(c);
		return;
	}
	ring_free(&g->ring);
	g->ring = ring;
	/* Kept for the process's life: readers may hold the previous one (as mignet.c's). */
	__atomic_store_n(&n->cfg, c, __ATOMIC_RELEASE);
	log_info("config %s: ring version %lu, %u nodes", c->path, (unsigned long)c->ring_version,
		 c->nnodes);
}

void members_on_view(struct node *n, const struct wire_msg *m, bool from_switch,
		     struct wire_msg *rep, uint8_t *out, size_t cap)
{
	struct members *g = &n->members;
	uint64_t now_us = clock_mono_us();
	struct wire_view v;
	struct wire_view_reply r;
	uint8_t *val = out + WIRE_HDR_LEN;
	int len, rc = 0;

	if (!members_on(g) || wire_view_decode(m, &v) != 0) {
		node_count(n, NODE_CTR_bad_payload);
		rep->status = WIRE_ST_BAD_REQUEST;
		return;
	}
	if (!from_switch && v.number) { /* only switches publish */
		node_count(n, NODE_CTR_src_not_switch);
		rep->status = WIRE_ST_BAD_REQUEST;
		return;
	}
	/* A newer view waits for the data ops under the one held; the same one, sent again, does not. */
	bool reload = names_unknown(n, &v);

	if (v.number > atomic_load(&g->number) || reload) {
		pthread_rwlock_wrlock(&g->lock);
		if (reload)
			reload_config(n);
		if (v.number > g->view.number)
			rc = take_view(n, &v);
		pthread_rwlock_unlock(&g->lock);
		if (rc != 0) {
			rep->status = WIRE_ST_INTERNAL;
			return;
		}
	}
	/* Only the publisher's views (queries have number 0) grant leases. */
	if (v.number && v.lease && g->lease_us)
		lease_from(g, v.lease);
	pthread_rwlock_rdlock(&g->lock);
	r = (struct wire_view_reply){.state = (uint8_t)atomic_load(&g->state),
				     .sources_left = (uint16_t)atomic_load(&g->sources_left),
				     .records = atomic_load(&g->records),
				     .config_nodes = n->cfg->nnodes,
				     .view = g->view};
	rep->version = g->view.number;
	pthread_rwlock_unlock(&g->lock);
	if (from_switch) /* a node's question grants nothing, and must not crowd out the switch's */
		note_answer(g, m->req_id, now_us);
	len = wire_view_reply_encode(&r, val, cap - WIRE_HDR_LEN);
	rep->status = WIRE_ST_OK;
	rep->value = len > 0 ? val : NULL;
	rep->val_len = len > 0 ? (uint32_t)len : 0;
}

/* ---- Catch-up: serving it. ---- */

#define CATCHUP_REQ_LEN 12 /* be16 asker, be16 flags, be64 the view that marks it catching up */

struct scan_ctx {
	const struct members *g;
	uint16_t asker;
	bool new_only; /* CATCHUP_NEW_ONLY: only groups the asker is new to */
	bool found;
	uint64_t hash;
	uint16_t klen;
	uint8_t key[WIRE_MAX_KEY];
};

static int scan_one(void *arg, const void *key, size_t klen, const struct store_record *rec)
{
	struct scan_ctx *c = arg;
	uint16_t ids[GROUP_MAX];
	uint64_t hash = keyhash(key, klen);
	unsigned k = group_of(c->g, hash, ids);

	(void)rec;
	memcpy(c->key, key, klen);
	c->klen = (uint16_t)klen;
	c->hash = hash;
	c->found = catchup_takes(c->g, keyhash_point(hash), ids, k, c->asker, c->new_only);
	return c->found;
}

void members_on_catchup(struct node *n, const struct wire_msg *m, struct wire_msg *rep,
			uint8_t *out, size_t cap)
{
	static __thread uint8_t buf[PUSH_ROOM];
	static __thread struct scan_ctx c;
	struct members *g = &n->members;
	uint8_t *val = out + WIRE_HDR_LEN + WIRE_MAX_KEY;
	struct wire_mig_prefix pre;
	struct mig_record rec;
	bool end = false;
	uint16_t chunks;
	int rc, plen;

	if (!members_on(g) || m->val_len != CATCHUP_REQ_LEN || cap < WIRE_HDR_LEN + WIRE_MAX_KEY) {
		node_count(n, NODE_CTR_bad_payload);
		rep->status = WIRE_ST_BAD_REQUEST;
		return;
	}
	/* The groups are the view's: a new one waits for this step. */
	pthread_rwlock_rdlock(&g->lock);
	/* Not yet at the view that marks the asker catching up: this node may not push to it yet. */
	if (g->view.number < wire_get64(m->value + 4)) {
		pthread_rwlock_unlock(&g->lock);
		rep->status = WIRE_ST_UNAVAILABLE;
		return;
	}
	c = (struct scan_ctx){.g = g,
			      .asker = wire_get16(m->value),
			      .new_only = wire_get16(m->value + 2) & CATCHUP_NEW_ONLY};
	rc = store_scan_owned(n->store, m->key, m->key_len, MEMBERS_SCAN_STEP, scan_one, &c, &end);
	pthread_rwlock_unlock(&g->lock);
	if (rc < 0 && !c.found) {
		rep->status = WIRE_ST_INTERNAL;
		return;
	}
	if (!c.klen) { /* nothing after the cursor */
		rep->status = WIRE_ST_NOT_FOUND;
		rep->version = mig_floor(&n->mig);
		rep->key = NULL;
		rep->key_len = 0;
		return;
	}
	rep->status = WIRE_ST_OK;
	rep->keyhash = c.hash;
	rep->key = c.key;
	rep->key_len = c.klen;
	rep->version = 0;
	rep->val_len = 0;
	if (!c.found)
		return; /* this step saw only other groups' keys: go on after the last */
	rc = mig_read(&n->mig, c.hash, c.key, c.klen, &rec,
		      buf + WIRE_MEMBER_VIEW_LEN + WIRE_MIG_PREFIX_MAX, CFG_MAX_VALUE, store_now_ms());
	if (rc <= 0) {
		rep->status = rc < 0 ? WIRE_ST_INTERNAL : WIRE_ST_OK; /* gone since: go on */
		return;
	}
	node_count(n, NODE_CTR_catchup_served);
	pre = (struct wire_mig_prefix){.kind = rec.kind, .ttl_ms = rec.ttl_ms};
	mignet_writes_to_wire(&rec, &pre);
	plen = wire_mig_prefix_encode(&pre, val, WIRE_MIG_PREFIX_MAX);
	if (plen < 0) {
		rep->status = WIRE_ST_INTERNAL;
		return;
	}
	if (rec.kind == STORE_VALUE)
		memcpy(val + plen, rec.value, rec.value_len);
	rep->version = rec.version;
	rep->value = val;
	rep->val_len = (uint32_t)plen + (rec.kind == STORE_VALUE ? rec.value_len : 0);
	/*
	 * A record too large for one datagram goes as a push, in chunks; the
	 * reply names its key and version, without the value, and says go on.
	 */
	if (wire_chunk_needed(rep, n->cfg->service.mtu - (n->keyed ? WIRE_MAC_LEN : 0), &chunks)) {
		rep->value = NULL;
		rep->val_len = 0;
		if (push_record(n, c.asker, 0, c.hash, c.key, c.klen, &rec, buf) != 0)
			rep->status = WIRE_ST_UNAVAILABLE;
	}
}

/* ---- Catch-up: taking it. ---- */

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Stop a catch-up that a newer view restarted, or the node's stop. */
static bool interrupted(struct node *n, uint32_t restarts)
{
	return atomic_load(&n->stop_bg) || atomic_load(&n->members.restarts) != restarts;
}

/* ---- Catch-up: records a source no longer holds. ---- */

#define UNHELD_MAX 64 /* keys a step of drop_unheld() removes */

struct unheld {
	const struct members *g;
	uint16_t self, from;
	bool join;	/* only groups new to this node */
	uint64_t below; /* the catch-up's view */
	const uint8_t *upto; /* the range's end, not in it (NULL: none) */
	uint16_t upto_len;
	bool past; /* the scan reached upto */
	unsigned count;
	struct {
		uint64_t hash;
		uint16_t klen;
		uint8_t key[WIRE_MAX_KEY];
	} key[UNHELD_MAX];
	uint16_t clen; /* the last key visited: the next step goes on after it */
	uint8_t cursor[WIRE_MAX_KEY];
};

/* RocksDB's order of keys: bytewise, a prefix first. */
static int key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/* Whether the catch-up takes keyhash from `from`: a key of its groups, whose primary `from` is. */
static bool taken_from(const struct unheld *c, uint64_t hash)
{
	uint16_t ids[GROUP_MAX];
	uint32_t point = keyhash_point(hash);
	unsigned k = group_of(c->g, hash, ids);

	return catchup_takes(c->g, point, ids, k, c->self, c->join) &&
	       primary_of(c->g, hash, ids, k) == c->from;
}

static int unheld_one(void *arg, const void *key, size_t klen, const struct store_record *rec)
{
	struct unheld *c = arg;
	uint64_t hash;

	if (c->upto) {
		int cmp = key_cmp(key, klen, c->upto, c->upto_len);

		if (cmp >= 0) {
			c->past = true;
			return 1;
		}
	}
	memcpy(c->cursor, key, klen);
	c->clen = (uint16_t)klen;
	hash = keyhash(key, klen);
	if (rec->version < c->below && taken_from(c, hash)) {
		c->key[c->count].hash = hash;
		c->key[c->count].klen = (uint16_t)klen;
		memcpy(c->key[c->count].key, key, klen);
		if (++c->count == UNHELD_MAX)
			return 1;
	}
	return 0;
}

/*
 * `from` sent nothing of the keys after after[0..alen) and before upto
 * (NULL: to the end) that this catch-up takes. What
 * this node holds of those keys with `from` as their primary, `from` no
 * longer holds: deleted (its tombstone collected since), or never
 * acknowledged; it goes, so that it is not served again. Not what was
 * pushed here since the catch-up began: its version is at or above the
 * catch-up's view. 0, or -1 (the store failed).
 */
static int drop_unheld(struct node *n, struct unheld *c, const uint8_t *after, uint16_t alen)
{
	struct members *g = &n->members;
	bool end = false;

	memcpy(c->cursor, after, alen);
	c->clen = alen;
	c->past = false;
	while (!end && !c->past) {
		int rc;

		c->count = 0;
		pthread_rwlock_rdlock(&g->lock);
		rc = store_scan_owned(n->store, c->cursor, c->clen, MEMBERS_SCAN_STEP, unheld_one, c,
				      &end);
		pthread_rwlock_unlock(&g->lock);
		if (rc < 0)
			return -1;
		end &= c->count < UNHELD_MAX;
		for (unsigned i = 0; i < c->count; i++) {
			rc = store_handover(n->store, c->key[i].hash, c->key[i].key, c->key[i].klen,
					    c->below - 1);
			if (rc < 0)
				return -1;
			if (rc > 0)
				node_count(n, NODE_CTR_catchup_dropped);
		}
	}
	return 0;
}

/*
 * `from` pushed key rep->key at rep->version, a record too large for its
 * reply. A push is kept only when newer, so what this node holds of the key
 * may still be a newer record from below the catch-up's view. When `from`
 * is the key's primary that record was never acknowledged: it goes (1), and
 * the key is asked for again. 0: kept; -1: the store failed.
 */
static int drop_unacked_newer(struct node *n, const struct unheld *c, const struct wire_msg *rep)
{
	uint64_t hash = keyhash(rep->key, rep->key_len);
	struct store_record held;
	bool primary;
	int rc = store_get(n->store, STORE_OWNED, rep->key, rep->key_len, &held, NULL, 0);

	if (rc < 0)
		return -1;
	if (rc == 0 || held.version <= rep->version || held.version >= c->below)
		return 0;
	pthread_rwlock_rdlock(&n->members.lock);
	primary = taken_from(c, hash);
	pthread_rwlock_unlock(&n->members.lock);
	if (!primary)
		return 0;
	rc = store_handover(n->store, hash, rep->key, rep->key_len, c->below - 1);
	if (rc > 0)
		node_count(n, NODE_CTR_catchup_dropped);
	return rc < 0 ? -1 : 1;
}

/*
 * Take every record of this node's groups (flags: CATCHUP_NEW_ONLY, those
 * new to it) that node `from` holds, newer than the one here, at
 * ring.warmup_keys_per_s; of the keys whose primary `from` is, take its
 * record even when older, and drop one `from` does not send
 * (drop_unheld()). 0 when done, -1 when `from` did not answer (or is not
 * at view yet) or the catch-up was interrupted.
 */
static int catch_up_from(struct node *n, uint16_t from, uint64_t view, uint16_t flags,
			 uint32_t restarts)
{
	static uint8_t in[NODE_MAX_DGRAM + WIRE_MAX_KEY];
	static struct unheld unheld;
	uint8_t cursor[WIRE_MAX_KEY], body[CATCHUP_REQ_LEN] = {0};
	uint16_t clen = 0;
	uint32_t rate = n->cfg->warmup_keys_per_s, taken = 0;
	uint64_t second = clock_mono_ns();
	uint64_t asked_again = 0; /* the keyhash of a key dropped and asked for again */

	unheld = (struct unheld){.g = &n->members,
				 .self = n->self->id,
				 .from = from,
				 .join = flags & CATCHUP_NEW_ONLY,
				 .below = view};
	wire_put16(body, n->self->id);
	wire_put16(body + 2, flags);
	wire_put64(body + 4, view);
	for (;;) {
		struct wire_msg rep, req = {.op = WIRE_OP_CATCHUP,
					    .keyhash = clen ? keyhash(cursor, clen) : 0,
					    .key = clen ? cursor : NULL,
					    .key_len = clen,
					    .value = body,
					    .val_len = CATCHUP_REQ_LEN};
		struct wire_mig_prefix pre;
		struct mig_record rec;
		const uint8_t *val;
		uint32_t vlen;
		uint64_t hash;
		bool primary;

		if (interrupted(n, restarts) ||
		    mignet_request(n, from, &req, in, sizeof(in), &rep) != 0)
			return -1;
		if (rep.status == WIRE_ST_NOT_FOUND) {
			unheld.upto = NULL;
			return drop_unheld(n, &unheld, cursor, clen) == 0 &&
					   store_raise_floor(n->store, rep.version) == 0
				   ? 0
				   : -1;
		}
		if (rep.status != WIRE_ST_OK || rep.key_len == 0 || rep.key_len > WIRE_MAX_KEY)
			return -1;
		/*
		 * Between the cursor and this key `from` holds nothing this
		 * catch-up takes. (The key itself, without a value, is either one
		 * it does not take, or, with a version, one too large for the
		 * reply, pushed to this node as a MEMBER just before.)
		 */
		unheld.upto = rep.key;
		unheld.upto_len = rep.key_len;
		if (drop_unheld(n, &unheld, cursor, clen) != 0)
			return -1;
		if (!rep.val_len) {
			int dropped = rep.version && rep.keyhash != asked_again
					  ? drop_unacked_newer(n, &unheld, &rep)
					  : 0;

			if (dropped < 0)
				return -1;
			/* Dropped: the cursor stays, and the key comes again, once. */
			asked_again = dropped > 0 ? rep.keyhash : 0;
			if (!dropped) {
				memcpy(cursor, rep.key, rep.key_len);
				clen = rep.key_len;
			}
			continue;
		}
		asked_again = 0;
		memcpy(cursor, rep.key, rep.key_len);
		clen = rep.key_len;
		if (wire_mig_prefix_decode(&rep, &pre, &val, &vlen) != 0 || rep.version == 0)
			return -1;
		rec = (struct mig_record){.kind = pre.kind,
					  .version = rep.version,
					  .ttl_ms = pre.ttl_ms,
					  .value = val,
					  .value_len = vlen};
		mignet_writes_from_wire(&pre, &rec);
		hash = keyhash(cursor, clen);
		/*
		 * From the key's primary, which holds every acknowledged write of it:
		 * a version here above its (and below the view) was never
		 * acknowledged, and goes for the primary's.
		 */
		pthread_rwlock_rdlock(&n->members.lock);
		primary = taken_from(&unheld, hash);
		pthread_rwlock_unlock(&n->members.lock);
		if ((primary && store_handover(n->store, hash, cursor, clen, view - 1) < 0) ||
		    mig_adopt(&n->mig, hash, cursor, clen, &rec, store_now_ms()) < 0)
			return -1;
		atomic_fetch_add(&n->members.records, 1);
		node_count(n, NODE_CTR_catchup_records);
		/* At the warm-up's rate: a returning node must not swamp its sources. */
		if (++taken >= rate) {
			uint64_t spent = clock_mono_ns() - second;

			if (spent < 1000000000ull)
				sleep_ms((uint32_t)((1000000000ull - spent) / 1000000));
			taken = 0;
			second = clock_mono_ns();
		}
	}
}

/*
 * One catch-up, from every other node, under the view that marks this node
 * catching up; or one join, the same for the groups that view makes it new to.
 */
static void catch_up(struct node *n, bool join)
{
	struct members *g = &n->members;
	uint32_t restarts = atomic_load(&g->restarts);
	uint8_t left[GROUP_BITMAP] = {0};
	unsigned nleft = 0;
	uint64_t view;

	pthread_rwlock_rdlock(&g->lock);
	view = g->view.number;
	bool ready = view && marked(join ? g->view.joining : g->view.catching, n) &&
		     !marked(g->view.down, n);
	pthread_rwlock_unlock(&g->lock);
	if (!ready)
		return;
	for (int i = 0; i < n->cfg->nnodes; i++)
		if (n->cfg->nodes[i].id != n->self->id) {
			group_set_bit(left, n->cfg->nodes[i].id);
			nleft++;
		}
	log_info("%s from %u nodes under view %llu", join ? "joining new groups" : "catching up",
		 nleft, (unsigned long long)view);
	while (nleft && !interrupted(n, restarts)) {
		for (unsigned id = 1; id < 8 * GROUP_BITMAP; id++) {
			bool down;

			if (!group_bit(left, id))
				continue;
			pthread_rwlock_rdlock(&g->lock);
			down = group_bit(g->view.down, id);
			pthread_rwlock_unlock(&g->lock);
			/* A node marked down is read by nobody: its records are on its groups' others. */
			if (down || catch_up_from(n, (uint16_t)id, view, join ? CATCHUP_NEW_ONLY : 0,
						  restarts) == 0) {
				left[id / 8] &= (uint8_t)~(1u << (id % 8));
				nleft--;
			}
			atomic_store(&g->sources_left, nleft);
		}
		if (nleft)
			sleep_ms(MEMBERS_RETRY_MS);
	}
	pthread_rwlock_wrlock(&g->lock);
	if (!interrupted(n, restarts)) {
		g->caught_up_at = g->view.number;
		atomic_store(&g->state, join ? WIRE_VIEW_JOINED : WIRE_VIEW_CAUGHT_UP);
		log_info("%s (%llu records): waiting for a view that marks this node up",
			 join ? "joined" : "caught up", (unsigned long long)atomic_load(&g->records));
	}
	pthread_rwlock_unlock(&g->lock);
}

static void *catch_up_main(void *arg)
{
	struct node *n = arg;

	while (!atomic_load(&n->stop_bg)) {
		int state = atomic_load(&n->members.state);

		if (state == WIRE_VIEW_CATCHING || state == WIRE_VIEW_JOINING)
			catch_up(n, state == WIRE_VIEW_JOINING);
		sleep_ms(10);
	}
	return NULL;
}

int members_start(struct node *n)
{
	if (!members_on(&n->members))
		return 0;
	if (pthread_create(&n->members.thread, NULL, catch_up_main, n) != 0)
		return -1;
	n->members.started = true;
	return 0;
}

void members_stop(struct node *n)
{
	if (n->members.started)
		pthread_join(n->members.thread, NULL);
	n->members.started = false;
}
