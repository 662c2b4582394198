/*
 * migrate.c - a node's side of a ring change: the view, read-through,
 * hand-over and warm-up (migrate.h, docs/design.md section 12).
 */
#include "migrate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keyhash.h"

static const char *const counter_names[] = {
#define X(name) #name,
    MIG_COUNTERS(X)
#undef X
};

const char *mig_counter_name(enum mig_counter c)
{
	return c < MIG_CTR_COUNT ? counter_names[c] : "?";
}

static void count(struct mig *m, enum mig_counter c)
{
	atomic_fetch_add_explicit(&m->ctr[c], 1, memory_order_relaxed);
}

int mig_init(struct mig *m, struct store *st, struct dedup *dedup, uint16_t self,
	     const struct mig_transport *tx, void *tx_arg)
{
	memset(m, 0, sizeof(*m));
	m->st = st;
	m->dedup = dedup;
	m->self = self;
	m->tx = tx;
	m->tx_arg = tx_arg;
	for (int i = 0; i < MIG_LOCKS; i++)
		pthread_mutex_init(&m->locks[i], NULL);
	pthread_mutex_init(&m->change_lock, NULL);
	return 0;
}

static void view_free(struct mig_view *v)
{
	if (!v)
		return;
	rch_free(&v->change);
	ring_free(&v->next);
	ring_free(&v->prev);
	free(v);
}

void mig_fini(struct mig *m)
{
	for (uint32_t i = 0; i < m->nviews; i++)
		view_free(m->views[i]);
	m->nviews = 0;
	atomic_store(&m->view, NULL);
	for (int i = 0; i < MIG_LOCKS; i++)
		pthread_mutex_destroy(&m->locks[i]);
	pthread_mutex_destroy(&m->change_lock);
}

static struct mig_view *view_of(const struct mig *m)
{
	return atomic_load_explicit(&((struct mig *)m)->view, memory_order_acquire);
}

static uint32_t active_of(const struct mig_view *v)
{
	return atomic_load_explicit(&((struct mig_view *)v)->active, memory_order_acquire);
}

/* A deep copy of a ketama ring: built again from its members. */
static int ring_copy(struct ring *dst, const struct ring *src)
{
	return ring_build(dst, src->nodes, src->nnodes, src->version);
}

/* ---- Persisted state: "m:ring" and "m:warm" in the meta family. ---- */

#define STATE_MAX (32 + 2 * RING_MAX_NODES * (7 + RING_MAX_NAME))

static size_t put_members(uint8_t *p, const struct ring *r)
{
	size_t at = 2;

	wire_put16(p, r->nnodes);
	for (uint16_t i = 0; i < r->nnodes; i++) {
		size_t len = strnlen(r->nodes[i].name, RING_MAX_NAME - 1);

		wire_put16(p + at, r->nodes[i].id);
		wire_put32(p + at + 2, r->nodes[i].weight);
		p[at + 6] = (uint8_t)len;
		memcpy(p + at + 7, r->nodes[i].name, len);
		at += 7 + len;
	}
	return at;
}

/* Members at p[0..len) into nodes; returns bytes read or -EINVAL. */
static int get_members(const uint8_t *p, size_t len, struct ring_node *nodes, uint16_t *n)
{
	size_t at = 2;

	if (len < 2)
		return -EINVAL;
	*n = wire_get16(p);
	if (*n > RING_MAX_NODES)
		return -EINVAL;
	for (uint16_t i = 0; i < *n; i++) {
		uint8_t nl;

		if (at + 7 > len || (nl = p[at + 6]) >= RING_MAX_NAME || at + 7 + nl > len)
			return -EINVAL;
		nodes[i].id = wire_get16(p + at);
		nodes[i].weight = wire_get32(p + at + 2);
		memcpy(nodes[i].name, p + at + 7, nl);
		nodes[i].name[nl] = '\0';
		at += 7 + nl;
	}
	return (int)at;
}

static int persist_view(struct mig *m, const struct mig_view *v)
{
	uint8_t *buf = malloc(STATE_MAX);
	size_t at;
	int rc;

	if (!buf)
		return -ENOMEM;
	wire_put64(buf, v->version);
	wire_put32(buf + 8, active_of(v));
	buf[12] = v->changing;
	buf[13] = v->joining;
	at = 14 + put_members(buf + 14, &v->next);
	if (v->changing)
		at += put_members(buf + at, &v->prev);
	rc = store_meta_put(m->st, "ring", buf, at);
	free(buf);
	return rc;
}

/* "m:warm": be64 version, u8 phase, u8 0, be16 cursor length, the cursor. */
static int persist_warm(struct mig *m, uint64_t version)
{
	uint8_t buf[12 + STORE_ARC_POS_MAX];

	wire_put64(buf, version);
	buf[8] = atomic_load(&m->warm_phase);
	buf[9] = 0;
	wire_put16(buf + 10, m->cursor_len);
	memcpy(buf + 12, m->cursor, m->cursor_len);
	m->since_cursor = 0;
	return store_meta_put(m->st, "warm", buf, 12 + (size_t)m->cursor_len);
}

/* This node's arcs as a previous home (the change's arcs, from == self), and those before `arc`. */
static void count_arcs(struct mig *m, const struct mig_view *v, uint32_t before_arc)
{
	uint8_t phase = atomic_load(&m->warm_phase);
	uint32_t out = 0, done = 0;

	for (uint32_t a = 0; v && v->changing && a < v->change.narcs; a++)
		if (v->change.arcs[a].from == m->self) {
			out++;
			done += a < before_arc;
		}
	atomic_store(&m->arcs_out, out);
	atomic_store(&m->arcs_done, phase == MIG_WARM_DONE   ? out
				    : phase == MIG_WARM_PUSH ? done
							     : 0);
}

static void load_warm(struct mig *m, const struct mig_view *v)
{
	uint8_t buf[12 + STORE_ARC_POS_MAX];
	int len = store_meta_get(m->st, "warm", buf, sizeof(buf));

	atomic_store(&m->warm_phase, MIG_WARM_INDEX);
	m->cursor_len = 0;
	m->cursor_arc = 0;
	if (len >= 12 && wire_get64(buf) == v->version && buf[8] <= MIG_WARM_DONE &&
	    12 + (size_t)wire_get16(buf + 10) <= (size_t)len) {
		atomic_store(&m->warm_phase, buf[8]);
		m->cursor_len = wire_get16(buf + 10);
		memcpy(m->cursor, buf + 12, m->cursor_len);
		if (buf[8] == MIG_WARM_PUSH && m->cursor_len >= 4)
			m->cursor_arc = wire_get32(m->cursor);
	}
	count_arcs(m, v, m->cursor_arc);
}

/* Publish v (kept until mig_fini). Caller holds change_lock. */
static int publish(struct mig *m, struct mig_view *v)
{
	if (m->nviews == MIG_MAX_VIEWS)
		return -ENOSPC;
	m->views[m->nviews++] = v;
	atomic_store_explicit(&m->view, v, memory_order_release);
	return 0;
}

int mig_restore(struct mig *m, const struct ring *cfg_ring, bool join)
{
	uint8_t *buf = malloc(STATE_MAX);
	struct ring_node *nodes = calloc(RING_MAX_NODES, sizeof(*nodes));
	struct mig_view *v = calloc(1, sizeof(*v));
	int len, rc = -EINVAL, at;
	uint16_t n;

	if (!buf || !nodes || !v) {
		rc = -ENOMEM;
		goto out;
	}
	len = store_meta_get(m->st, "ring", buf, STATE_MAX);
	if (len < 0) {
		rc = len;
		goto out;
	}
	if (len == 0) {
		/* Nothing persisted: a new cluster's node, or one joining a running one. */
		v->version = cfg_ring->version;
		v->joining = join;
		atomic_init(&v->active, RCH_COMPLETE);
		rc = ring_copy(&v->next, cfg_ring);
		if (rc == 0)
			rc = persist_view(m, v);
	} else {
		if (len < 16)
			goto out;
		v->version = wire_get64(buf);
		atomic_init(&v->active, wire_get32(buf + 8));
		v->changing = buf[12] != 0;
		v->joining = buf[13] != 0;
		if (v->version > cfg_ring->version) {
			rc = -ESTALE; /* the data is from a newer ring than the config */
			goto out;
		}
		at = get_members(buf + 14, (size_t)len - 14, nodes, &n);
		if (at < 0 || ring_build(&v->next, nodes, n, v->version) != 0)
			goto out;
		if (v->changing) {
			int more = get_members(buf + 14 + at, (size_t)(len - 14 - at), nodes, &n);

			if (more < 0 || ring_build(&v->prev, nodes, n, v->version) != 0 ||
			    rch_build(&v->change, &v->prev, &v->next) != 0)
				goto out;
		}
		load_warm(m, v);
		rc = 0;
	}
	if (rc == 0) {
		pthread_mutex_lock(&m->change_lock);
		rc = publish(m, v);
		pthread_mutex_unlock(&m->change_lock);
		if (rc == 0)
			v = NULL;
	}
out:
	view_free(v);
	free(buf);
	free(nodes);
	return rc;
}

int mig_begin(struct mig *m, const struct ring *prev, const struct ring *next, uint32_t active)
{
	struct mig_view *cur, *v;
	int rc;

	pthread_mutex_lock(&m->change_lock);
	cur = view_of(m);
	if (cur && next->version == cur->version && !cur->joining) {
		pthread_mutex_unlock(&m->change_lock);
		return mig_advance(m, rch_epoch(next->version, active)) < 0 ? -ESTALE : 0;
	}
	if (cur &&
	    (next->version < cur->version || (!cur->joining && prev->version != cur->version))) {
		pthread_mutex_unlock(&m->change_lock);
		return -ESTALE;
	}
	if (cur && cur->changing && active_of(cur) != RCH_COMPLETE) {
		pthread_mutex_unlock(&m->change_lock);
		return -EBUSY;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&m->change_lock);
		return -ENOMEM;
	}
	v->version = next->version;
	v->changing = true;
	atomic_init(&v->active, active);
	rc = ring_copy(&v->next, next);
	if (rc == 0)
		rc = ring_copy(&v->prev, prev);
	if (rc == 0)
		rc = rch_build(&v->change, &v->prev, &v->next);
	if (rc == 0 && active != RCH_COMPLETE && active > v->change.narcs)
		atomic_store(&v->active, v->change.narcs);
	/* Persisted before it is used: a restart resumes this change, never the old ring. */
	atomic_store(&m->warm_phase, MIG_WARM_INDEX);
	m->cursor_len = 0;
	m->cursor_arc = 0;
	if (rc == 0)
		rc = store_arc_index_clear(m->st); /* an index left by an earlier change */
	if (rc == 0)
		rc = persist_warm(m, v->version);
	if (rc == 0)
		count_arcs(m, v, 0);
	if (rc == 0)
		rc = persist_view(m, v);
	if (rc == 0)
		rc = publish(m, v);
	pthread_mutex_unlock(&m->change_lock);
	if (rc)
		view_free(v);
	return rc;
}

int mig_advance(struct mig *m, uint64_t epoch)
{
	struct mig_view *v;
	uint32_t want = rch_epoch_active(epoch), cur;
	int rc = 0;

	pthread_mutex_lock(&m->change_lock);
	v = view_of(m);
	if (!v || v->joining || rch_epoch_version(epoch) != v->version) {
		pthread_mutex_unlock(&m->change_lock);
		return -ESTALE;
	}
	cur = active_of(v);
	if (want != RCH_COMPLETE && v->changing && want > v->change.narcs)
		want = v->change.narcs;
	if (want > cur && v->changing) {
		atomic_store_explicit(&v->active, want, memory_order_release);
		rc = persist_view(m, v) == 0 ? 1 : -EIO;
	}
	pthread_mutex_unlock(&m->change_lock);
	return rc;
}

bool mig_joining(const struct mig *m)
{
	const struct mig_view *v = view_of(m);

	return v && v->joining;
}

uint64_t mig_epoch(const struct mig *m)
{
	const struct mig_view *v = view_of(m);

	return v ? rch_epoch(v->version, v->joining ? 0 : active_of(v)) : 0;
}

uint16_t mig_home(const struct mig *m, uint64_t hash)
{
	const struct mig_view *v = view_of(m);

	if (!v || v->joining)
		return 0;
	if (!v->changing)
		return ring_home(&v->next, hash);
	return rch_home(&v->change, active_of(v), keyhash_point(hash));
}

uint16_t mig_prev_home(const struct mig *m, uint64_t hash)
{
	const struct mig_view *v = view_of(m);

	if (!v || !v->changing)
		return 0;
	return rch_prev_home(&v->change, active_of(v), keyhash_point(hash));
}

void mig_lock(struct mig *m, uint64_t hash)
{
	pthread_mutex_lock(&m->locks[hash & (MIG_LOCKS - 1)]);
}

void mig_unlock(struct mig *m, uint64_t hash)
{
	pthread_mutex_unlock(&m->locks[hash & (MIG_LOCKS - 1)]);
}

/* A moving record into its stored form: a TTL becomes an expiry again. */
static struct store_record stored_form(const struct mig_record *r, uint64_t now_ms)
{
	return (struct store_record){.kind = r->kind,
				     .version = r->version,
				     .time_ms = r->ttl_ms ? now_ms + r->ttl_ms : 0,
				     .value = r->value,
				     .value_len = r->value_len};
}

/*
 * A stored record into its moving form. An expired value moves as a
 * tombstone of its version: the new home must not reuse the version.
 */
static struct mig_record moving_form(const struct store_record *r, uint64_t now_ms)
{
	struct mig_record out = {.kind = r->kind, .version = r->version};

	if (r->kind == STORE_VALUE && !store_record_live(r, now_ms)) {
		out.kind = STORE_TOMBSTONE;
		return out;
	}
	if (r->kind == STORE_VALUE) {
		uint64_t left = r->time_ms ? r->time_ms - now_ms : 0;

		out.ttl_ms = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
		out.value = r->value;
		out.value_len = r->value_len;
	}
	return out;
}

/* The key's at-most-once outcomes, to leave with its record. Under the key's lock. */
static void writes_out(struct mig *m, uint64_t hash, struct mig_record *out)
{
	out->nwrites =
	    m->dedup ? (uint8_t)dedup_of_key(m->dedup, hash, out->writes, MIG_MAX_WRITES) : 0;
}

/* Outcomes that arrived with a record: a retry of one of them is answered, not applied. */
static void writes_in(struct mig *m, uint64_t hash, const struct mig_record *in)
{
	for (uint8_t i = 0; m->dedup && i < in->nwrites && i < MIG_MAX_WRITES; i++)
		dedup_remember(m->dedup, hash, &in->writes[i]);
}

int mig_ensure(struct mig *m, uint64_t hash, const void *key, size_t klen, uint64_t now_ms)
{
	static __thread uint8_t buf[WIRE_MAX_DATAGRAM];
	uint16_t prev = mig_prev_home(m, hash);
	struct store_record have;
	struct mig_record got;
	int rc;

	if (!prev || prev == m->self)
		return 0;
	rc = store_get(m->st, STORE_OWNED, key, klen, &have, NULL, 0);
	if (rc != 0)
		return rc < 0 ? -EIO : 0; /* held: read through, pushed, or written here */
	rc = m->tx->fetch(m->tx_arg, prev, mig_epoch(m), hash, key, klen, &got, buf, sizeof(buf));
	if (rc < 0) {
		count(m, MIG_CTR_read_through_failed);
		return -EAGAIN;
	}
	if (rc == 0) {
		/* Nothing there, maybe collected: our versions of it go above its floor. */
		count(m, MIG_CTR_read_through_miss);
		return store_raise_floor(m->st, got.version) ? -EIO : 0;
	}
	struct store_record rec = stored_form(&got, now_ms);

	if (store_adopt(m->st, hash, key, klen, &rec, now_ms) < 0)
		return -EIO;
	writes_in(m, hash, &got);
	count(m, MIG_CTR_read_through);
	return 0;
}

/* An epoch from another node: adopt its arcs when it is of our version. */
static int take_epoch(struct mig *m, uint64_t epoch)
{
	const struct mig_view *v = view_of(m);

	if (!v || v->joining || rch_epoch_version(epoch) != v->version)
		return -EAGAIN;
	if (rch_epoch_active(epoch) > active_of(v) && mig_advance(m, epoch) < 0)
		return -EIO;
	return 0;
}

int mig_read(struct mig *m, uint64_t hash, const void *key, size_t klen, struct mig_record *out,
	     void *buf, size_t cap, uint64_t now_ms)
{
	struct store_record rec;
	int rc;

	/* Under the lock: every write applied here to the key is in rec and in its outcomes. */
	mig_lock(m, hash);
	rc = store_get(m->st, STORE_OWNED, key, klen, &rec, buf, cap);
	if (rc > 0) {
		*out = moving_form(&rec, now_ms);
		writes_out(m, hash, out);
	} else if (rc == 0) {
		/* Read after the miss: a record collected since is below it. */
		*out = (struct mig_record){.version = store_floor(m->st)};
	}
	mig_unlock(m, hash);
	return rc > 0 ? 1 : rc;
}

int mig_serve_fetch(struct mig *m, uint64_t epoch, uint64_t hash, const void *key, size_t klen,
		    struct mig_record *out, void *buf, size_t cap, uint64_t now_ms)
{
	int rc = take_epoch(m, epoch);

	if (rc)
		return rc;
	rc = mig_read(m, hash, key, klen, out, buf, cap, now_ms);
	if (rc > 0)
		count(m, MIG_CTR_fetch_served);
	return rc;
}

int mig_adopt(struct mig *m, uint64_t hash, const void *key, size_t klen,
	      const struct mig_record *in, uint64_t now_ms)
{
	struct store_record rec = stored_form(in, now_ms);
	int rc;

	mig_lock(m, hash);
	rc = store_adopt(m->st, hash, key, klen, &rec, now_ms);
	if (rc >= 0)
		writes_in(m, hash, in);
	mig_unlock(m, hash);
	return rc;
}

int mig_serve_push(struct mig *m, uint64_t epoch, uint64_t hash, const void *key, size_t klen,
		   const struct mig_record *in, uint64_t now_ms)
{
	int rc = take_epoch(m, epoch);

	if (rc)
		return rc;
	rc = mig_adopt(m, hash, key, klen, in, now_ms);
	if (rc < 0)
		return rc;
	count(m, rc ? MIG_CTR_push_stored : MIG_CTR_push_kept);
	return 0;
}

uint64_t mig_floor(const struct mig *m)
{
	return store_floor(m->st);
}

int mig_take_floor(struct mig *m, uint64_t floor)
{
	return store_raise_floor(m->st, floor);
}

bool mig_warm_done(const struct mig *m)
{
	const struct mig_view *v = view_of(m);

	return !v || !v->changing || active_of(v) == RCH_COMPLETE ||
	       atomic_load(&((struct mig *)m)->warm_phase) == MIG_WARM_DONE;
}

enum mig_warm_phase mig_warm_progress(const struct mig *m, uint32_t *arcs_out, uint32_t *arcs_done)
{
	struct mig *w = (struct mig *)m;

	*arcs_out = atomic_load(&w->arcs_out);
	*arcs_done = mig_warm_done(m) ? *arcs_out : atomic_load(&w->arcs_done);
	return mig_warm_done(m) ? MIG_WARM_DONE : (enum mig_warm_phase)atomic_load(&w->warm_phase);
}

uint32_t mig_pace_take(struct mig_pace *p, uint32_t rate, uint64_t now_ms)
{
	uint64_t bucket = (rate + 49) / 50, pushes; /* 20 ms of pushes, rounded up */

	if (!p->started || now_ms < p->last_ms) { /* the first step: one push at most */
		p->started = true;
		p->last_ms = now_ms;
		p->milli = 1000;
	}
	p->milli += (now_ms - p->last_ms) * rate; /* rate per s = rate per ms x 1000 */
	p->last_ms = now_ms;
	pushes = p->milli / 1000;
	p->milli %= 1000; /* a slow rate's fraction waits for the next step */
	return (uint32_t)(pushes < bucket ? pushes : bucket); /* a stall is not made up */
}

struct warm_ctx {
	struct mig *m;
	const struct mig_view *v;
	uint32_t pushed, budget;
	uint64_t epoch, now_ms;
	uint8_t *buf;
	size_t cap;
};

/* The cursor moves on; persisted every MIG_CURSOR_EVERY entries. */
static int advance_cursor(struct mig *m, const void *pos, size_t len)
{
	memcpy(m->cursor, pos, len);
	m->cursor_len = (uint16_t)len;
	if (++m->since_cursor >= MIG_CURSOR_EVERY && persist_warm(m, view_of(m)->version) != 0)
		return -EIO;
	return 0;
}

/* Indexing: an owned record whose home moved goes into the arc index, under its arc. */
static int index_one(void *arg, const void *key, size_t klen, const struct store_record *seen)
{
	struct warm_ctx *c = arg;
	struct mig *m = c->m;
	uint64_t hash = keyhash(key, klen);
	uint16_t home = mig_home(m, hash);

	(void)seen;
	count(m, MIG_CTR_scanned);
	if (home != m->self && home != 0) {
		const struct rch_arc *arc = rch_arc_of(&c->v->change, keyhash_point(hash));
		/* A key of no moved arc that is not ours (left by an earlier change) goes last. */
		uint32_t a = arc ? (uint32_t)(arc - c->v->change.arcs) : c->v->change.narcs;

		if (store_arc_index_add(m->st, a, key, klen) != 0)
			return -EIO;
		count(m, MIG_CTR_indexed);
	}
	return advance_cursor(m, key, klen);
}

/* Pushing has reached arc `arc`: every arc of ours before it is done. */
static void reach_arc(struct mig *m, const struct mig_view *v, uint32_t arc)
{
	uint32_t before = atomic_load(&m->arcs_done);

	if (arc <= m->cursor_arc)
		return;
	m->cursor_arc = arc;
	count_arcs(m, v, arc);
	for (uint32_t i = before; i < atomic_load(&m->arcs_done); i++)
		count(m, MIG_CTR_arcs_done);
}

/* Pushing: one index entry's record to its new home, then handed over. */
static int push_one(void *arg, uint32_t arc, const void *key, size_t klen, const uint8_t *pos,
		    size_t plen)
{
	struct warm_ctx *c = arg;
	struct mig *m = c->m;
	uint64_t hash = keyhash(key, klen);
	uint16_t home = mig_home(m, hash);
	struct store_record rec;
	struct mig_record out;
	int rc;

	reach_arc(m, c->v, arc);
	if (home != m->self && home != 0) {
		/* Read again under the lock: a write that checked ownership before the
		 * last arc went active is either in this record or was refused. */
		mig_lock(m, hash);
		rc = store_get(m->st, STORE_OWNED, key, klen, &rec, c->buf, c->cap);
		if (rc > 0) {
			out = moving_form(&rec, c->now_ms);
			writes_out(m, hash, &out);
		}
		mig_unlock(m, hash);
		if (rc < 0)
			return -EIO;
		if (rc > 0) {
			if (m->tx->push(m->tx_arg, home, c->epoch, hash, key, klen, &out) != 0) {
				count(m, MIG_CTR_push_failed);
				return -EAGAIN; /* the cursor stays before this key */
			}
			count(m, MIG_CTR_pushed);
			rc = store_handover(m->st, hash, key, klen, rec.version);
			if (rc < 0)
				return -EIO;
			if (rc > 0)
				count(m, MIG_CTR_handed_over);
		}
	}
	if (advance_cursor(m, pos, plen) != 0)
		return -EIO;
	/* The budget is in pushes: the rate bounds what crosses the network. */
	return home != m->self && home != 0 && ++c->pushed >= c->budget ? 1 : 0;
}

/* The next phase, persisted before anything of it is done. */
static int next_phase(struct mig *m, const struct mig_view *v, enum mig_warm_phase phase)
{
	atomic_store(&m->warm_phase, phase);
	m->cursor_len = 0;
	m->cursor_arc = 0;
	if (phase == MIG_WARM_DONE) {
		count_arcs(m, v, v->change.narcs + 1);
		if (store_arc_index_clear(m->st) != 0)
			return -EIO;
	}
	return persist_warm(m, v->version);
}

int mig_warmup_step(struct mig *m, uint32_t budget, uint64_t now_ms, bool *done)
{
	static __thread uint8_t buf[WIRE_MAX_DATAGRAM];
	const struct mig_view *v = view_of(m);
	struct warm_ctx c = {
	    .m = m, .v = v, .budget = budget, .now_ms = now_ms, .buf = buf, .cap = sizeof(buf)};
	bool end = false;
	int n, indexed = 0;

	*done = mig_warm_done(m);
	if (*done || active_of(v) < v->change.narcs)
		return 0;
	c.epoch = mig_epoch(m);
	if (atomic_load(&m->warm_phase) == MIG_WARM_INDEX) {
		n = store_scan_owned(m->st, m->cursor, m->cursor_len, budget * MIG_SCAN_PER_PUSH,
				     index_one, &c, &end);
		if (n < 0) {
			persist_warm(m, v->version);
			return n;
		}
		if (!end)
			return n;
		/* Indexed: the pushes begin in this same step (nothing to push: done at once). */
		if (next_phase(m, v, MIG_WARM_PUSH) != 0)
			return -EIO;
		indexed = n;
	}
	n = store_arc_index_scan(m->st, m->cursor, m->cursor_len, budget * MIG_SCAN_PER_PUSH,
				 push_one, &c, &end);
	if (n < 0) {
		persist_warm(m, v->version);
		return n;
	}
	if (end) {
		if (next_phase(m, v, MIG_WARM_DONE) != 0)
			return -EIO;
		*done = true;
	}
	n += indexed;
	return n;
}
