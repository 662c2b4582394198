/*
 * cdt.c - the coherence directory table: rte_hash (lock-free readers) of
 * entries whose state is replaced copy-on-write and retired through QSBR.
 * See cdt.h for the concurrency contract.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "cdt.h"

struct cdt_priv {
	struct cdt pub;
	/* Workers' retire lists; the control thread frees synchronously instead. */
	struct cdt_limbo *limbo; /* [nworkers] */
};

static struct cdt_limbo *limbo_of(struct cdt *c, uint16_t worker)
{
	return &((struct cdt_priv *)c)->limbo[worker];
}

/* rte_hash's hash function: the signature the fast path computes inline. */
static uint32_t cdt_hash_fold(const void *key, uint32_t key_len, uint32_t init)
{
	uint64_t k;

	RTE_SET_USED(key_len);
	RTE_SET_USED(init);
	memcpy(&k, key, sizeof(k));
	return cdt_sig(k);
}

/* rte_hash compares 8-byte keys with memcmp() through the PLT; one load each is enough. */
static int cdt_key_cmp(const void *a, const void *b, size_t len)
{
	uint64_t x, y;

	RTE_SET_USED(len);
	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return x != y;
}

struct cdt *cdt_create(const char *name, uint32_t max_entries, uint16_t nworkers,
		       unsigned max_replicas, struct rte_rcu_qsbr *qsbr, uint16_t ctl_thread)
{
	char nm[RTE_HASH_NAMESIZE];
	struct cdt_priv *p;
	struct cdt *c;

	if (max_entries == 0 || max_entries > 65535 || nworkers == 0 || !qsbr ||
	    max_replicas == 0 || max_replicas > CDT_MAX_REPLICAS) {
		errno = EINVAL;
		return NULL;
	}
	p = rte_zmalloc("cdt", sizeof(*p), RTE_CACHE_LINE_SIZE);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	c = &p->pub;
	c->max_entries = max_entries;
	c->nworkers = nworkers;
	c->cap = cdt_state_cap(max_replicas);
	c->qsbr = qsbr;
	c->ctl_thread = ctl_thread;

	snprintf(nm, sizeof(nm), "cdt_%s", name);
	/* 2x slots: cuckoo hashing stays fast and never fails an insert well below capacity. */
	struct rte_hash_parameters hp = {
	    .name = nm,
	    .entries = RTE_MAX(max_entries * 2, 64u),
	    .key_len = sizeof(uint64_t),
	    .hash_func = cdt_hash_fold,
	    .socket_id = SOCKET_ID_ANY,
	    .extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF,
	};
	c->hash = rte_hash_create(&hp);
	if (c->hash)
		rte_hash_set_cmp_func(c->hash, cdt_key_cmp);

	snprintf(nm, sizeof(nm), "cdts_%s", name);
	/*
	 * States: one live per entry, up to CDT_LIMBO retired per worker, the
	 * mempool caches per lcore, and slack for states being built.
	 */
	unsigned nstates = max_entries + nworkers * (CDT_LIMBO + 512) + 1024;
	c->states = rte_mempool_create(nm, nstates, CDT_STATE_SMALL, 256, 0, NULL, NULL, NULL,
				       NULL, SOCKET_ID_ANY, 0);
	/*
	 * Larger sets, only when the cap allows them: every entry may be one,
	 * and slack for those in the workers' limbo and being built. A limbo full
	 * of large states is not provided for: past the slack, growing a set fails
	 * as -ENOMEM (counted; a set that does not grow is still correct), while
	 * versions advance in small states (a completion leaves one or two
	 * replicas).
	 */
	if (c->cap > CDT_SMALL_REPLICAS) {
		snprintf(nm, sizeof(nm), "cdtl_%s", name);
		c->states_large = rte_mempool_create(
		    nm, max_entries + nworkers * 512 + 1024, CDT_STATE_SIZE(c->cap), 64, 0, NULL,
		    NULL, NULL, NULL, SOCKET_ID_ANY, 0);
	}
	c->entries =
	    rte_zmalloc("cdt_entries", sizeof(*c->entries) * max_entries, RTE_CACHE_LINE_SIZE);
	c->counters = rte_zmalloc("cdt_counters", sizeof(*c->counters) * max_entries * nworkers,
				  RTE_CACHE_LINE_SIZE);
	p->limbo = rte_zmalloc("cdt_limbo", sizeof(*p->limbo) * nworkers, RTE_CACHE_LINE_SIZE);
	/*
	 * 16 filter slots per entry: with the directory full, a key not in it
	 * still finds a count (and is looked up) 1 time in 16 at most; 16 KiB
	 * for the default 1024 entries, in L1 beside the tables a burst reads.
	 */
	c->filter_mask = (uint32_t)rte_align32pow2(max_entries * 16) - 1;
	c->filter = rte_zmalloc("cdt_filter", (size_t)c->filter_mask + 1, RTE_CACHE_LINE_SIZE);
	c->key_len = calloc(max_entries, sizeof(*c->key_len));
	c->keys = calloc(max_entries, sizeof(*c->keys));
	c->free_idx = calloc(max_entries, sizeof(*c->free_idx));
	if (!c->hash || !c->states || (c->cap > CDT_SMALL_REPLICAS && !c->states_large) ||
	    !c->entries || !c->counters || !p->limbo || !c->filter || !c->key_len || !c->keys ||
	    !c->free_idx) {
		int err = rte_errno ? rte_errno : ENOMEM;

		cdt_free(c);
		errno = err;
		return NULL;
	}
	/* Hand out low indices first: a small directory stays in few cache lines. */
	for (uint32_t i = 0; i < max_entries; i++)
		c->free_idx[i] = max_entries - 1 - i;
	c->nfree = max_entries;
	return c;
}

void cdt_free(struct cdt *c)
{
	struct cdt_priv *p = (struct cdt_priv *)c;

	if (!c)
		return;
	rte_hash_free(c->hash);
	rte_mempool_free(c->states);
	rte_mempool_free(c->states_large);
	rte_free(c->entries);
	rte_free(c->counters);
	rte_free(p->limbo);
	rte_free(c->filter);
	free(c->key_len);
	free(c->keys);
	free(c->free_idx);
	rte_free(p);
}

/* ---- Publication and retirement. ----------------------------------------------------- */

/* The pool a state of n replicas lives in: n never changes once a state is built. */
static struct rte_mempool *pool_of(const struct cdt *c, unsigned n)
{
	return n <= CDT_SMALL_REPLICAS ? c->states : c->states_large;
}

static void state_put(struct cdt *c, struct cdt_state *s)
{
	rte_mempool_put(pool_of(c, s->nreplicas), s);
}

/* A state object for n replicas, or NULL. */
static struct cdt_state *state_get(struct cdt *c, unsigned n)
{
	void *s;

	return rte_mempool_get(pool_of(c, n), &s) == 0 ? s : NULL;
}

void cdt_reclaim(struct cdt *c, uint16_t worker)
{
	struct cdt_limbo *l = limbo_of(c, worker);

	while (l->head != l->tail) {
		uint32_t i = l->head & (CDT_LIMBO - 1);

		if (rte_rcu_qsbr_check(c->qsbr, l->slot[i].token, false) != 1)
			break;
		state_put(c, l->slot[i].state);
		l->head++;
	}
}

/*
 * Queue old for freeing once every reader has passed a quiescent point. A
 * full limbo waits for the oldest grace period: this worker reports its own
 * quiescent state first (it holds no state pointer here), and the others keep
 * reporting from their poll loops or are offline, so the wait is bounded.
 */
static void retire(struct cdt *c, uint16_t worker, struct cdt_state *old)
{
	struct cdt_limbo *l;

	if (worker >= c->nworkers) {
		/* Control thread: block for the grace period (never on the fast path). */
		rte_rcu_qsbr_synchronize(c->qsbr, c->ctl_thread);
		state_put(c, old);
		return;
	}
	l = limbo_of(c, worker);
	if (l->tail - l->head == CDT_LIMBO) {
		cdt_reclaim(c, worker);
		if (l->tail - l->head == CDT_LIMBO) {
			uint32_t i = l->head & (CDT_LIMBO - 1);

			rte_rcu_qsbr_quiescent(c->qsbr, worker);
			rte_rcu_qsbr_check(c->qsbr, l->slot[i].token, true);
			cdt_reclaim(c, worker);
		}
	}
	uint32_t i = l->tail & (CDT_LIMBO - 1);

	l->slot[i].state = old;
	l->slot[i].token = rte_rcu_qsbr_start(c->qsbr);
	l->tail++;
}

/* Publish next in place of cur; false when another writer published first. */
static bool publish(struct cdt_entry *e, struct cdt_state *cur, struct cdt_state *next)
{
	return __atomic_compare_exchange_n(&e->state, &cur, next, false, __ATOMIC_RELEASE,
					   __ATOMIC_RELAXED);
}

int cdt_apply(struct cdt *c, uint16_t worker, struct cdt_entry *e, enum cdt_event ev,
	      uint64_t version, uint16_t node, unsigned *retries)
{
	struct cdt_state *next = NULL;

	for (;;) {
		struct cdt_state *cur = (struct cdt_state *)cdt_entry_state(e);
		union cdt_state_room tmp;
		bool changed;

		if (!cur)
			changed = false;
		else if (ev == CDT_EV_REPLY)
			changed = cdt_state_on_reply(cur, version, node, c->cap, &tmp.st);
		else if (ev == CDT_EV_RC_ACK)
			changed = cdt_state_on_rc_ack(cur, version, node, e->home, c->cap, &tmp.st);
		else
			changed = cdt_state_without(cur, node, e->home, &tmp.st);
		/* A state kept from a lost race may be of the other size now. */
		if (next && (!changed || pool_of(c, next->nreplicas) !=
						 pool_of(c, tmp.st.nreplicas))) {
			state_put(c, next);
			next = NULL;
		}
		if (!changed)
			return 0;
		if (!next && !(next = state_get(c, tmp.st.nreplicas)))
			return -ENOMEM;
		tmp.st.completed_tsc =
		    tmp.st.completed != cur->completed ? rte_rdtsc() : cur->completed_tsc;
		cdt_state_copy(next, &tmp.st);
		if (publish(e, cur, next)) {
			retire(c, worker, cur);
			return 1;
		}
		if (retries)
			(*retries)++;
	}
}

/* ---- Control thread: management. ------------------------------------------------------ */

/* Count keyhash in the filter (delta +1, before it is added) or not (-1, after it is deleted). */
static void filter_count(struct cdt *c, uint64_t keyhash, int delta)
{
	uint8_t *slot = &c->filter[cdt_filter_slot(c, keyhash)];

	if (*slot == UINT8_MAX) /* saturated: stays */
		return;
	__atomic_store_n(slot, (uint8_t)(*slot + delta), __ATOMIC_RELEASE);
}

struct cdt_entry *cdt_find(const struct cdt *c, uint64_t keyhash)
{
	void *data = NULL;

	if (rte_hash_lookup_data(c->hash, &keyhash, &data) < 0) {
		errno = ENOENT;
		return NULL;
	}
	return data;
}

static struct cdt_state *state_new(struct cdt *c, const uint16_t *replicas, unsigned n,
				   uint64_t completed)
{
	union cdt_state_room tmp;
	struct cdt_state *s;

	/* Duplicates dropped first: the count decides the state's size. */
	memset(&tmp, 0, CDT_STATE_SMALL);
	tmp.st.completed = completed;
	for (unsigned i = 0; i < n; i++)
		if (!cdt_state_has(&tmp.st, replicas[i]))
			tmp.st.replicas[tmp.st.nreplicas++] = replicas[i];
	s = state_get(c, tmp.st.nreplicas);
	if (s)
		cdt_state_copy(s, &tmp.st);
	return s;
}

static bool replicas_valid(const struct cdt *c, const uint16_t *replicas, unsigned n)
{
	if (n == 0 || n > c->cap)
		return false;
	for (unsigned i = 0; i < n; i++)
		if (replicas[i] == 0)
			return false;
	return true;
}

struct cdt_entry *cdt_install(struct cdt *c, uint64_t keyhash, const void *key, size_t key_len,
			      uint16_t home, const uint16_t *replicas, unsigned n,
			      uint64_t completed)
{
	struct cdt_entry *e;
	uint64_t fp;

	if (!key || key_len == 0 || key_len > WIRE_MAX_KEY || home == 0 ||
	    !replicas_valid(c, replicas, n)) {
		errno = EINVAL;
		return NULL;
	}
	fp = cdt_fingerprint(key, key_len);
	e = cdt_find(c, keyhash);
	if (e) {
		if (!cdt_entry_is(e, key, key_len)) {
			errno = EEXIST;
			return NULL;
		}
		if (cdt_set_replicas(c, e, replicas, n, completed) != 0) {
			errno = ENOMEM;
			return NULL;
		}
		return e;
	}
	if (c->nfree == 0) {
		errno = ENOSPC;
		return NULL;
	}
	uint32_t idx = c->free_idx[c->nfree - 1];

	e = &c->entries[idx];
	e->state = state_new(c, replicas, n, completed);
	if (!e->state) {
		errno = ENOMEM;
		return NULL;
	}
	e->keyhash = keyhash;
	e->fingerprint = fp;
	e->key_len = (uint16_t)key_len;
	if (key_len <= sizeof(e->key_words))
		cdt_key_words(key, key_len, e->key_words);
	e->home = home;
	e->index = (uint16_t)idx;
	e->pinned = 0;
	e->want_replicas = 0;
	e->owner = 0;
	e->spread = 0;
	e->trimmed = 0;
	e->owned_since = 0;
	memcpy(c->keys[idx], key, key_len);
	c->key_len[idx] = (uint16_t)key_len;
	for (unsigned w = 0; w < c->nworkers; w++)
		memset(cdt_worker_counters(c, (uint16_t)w, e), 0,
		       sizeof(struct cdt_entry_counters));
	/*
	 * rte_hash_add_key_data publishes the data pointer with release ordering
	 * (LF mode), so a reader that finds the key sees the fields written above.
	 * The filter counts the key first: workers look up only what it counts.
	 */
	filter_count(c, keyhash, +1);
	if (rte_hash_add_key_data(c->hash, &keyhash, e) < 0) {
		filter_count(c, keyhash, -1);
		state_put(c, e->state);
		e->state = NULL;
		errno = ENOSPC;
		return NULL;
	}
	c->nfree--;
	c->nentries++;
	return e;
}

int cdt_set_replicas(struct cdt *c, struct cdt_entry *e, const uint16_t *replicas, unsigned n,
		     uint64_t completed)
{
	struct cdt_state *next, *cur;

	if (!replicas_valid(c, replicas, n))
		return -EINVAL;
	next = state_new(c, replicas, n, completed);
	if (!next)
		return -ENOMEM;
	/* Workers may publish concurrently: swap, then retire whatever was there. */
	cur = __atomic_exchange_n(&e->state, next, __ATOMIC_RELEASE);
	if (cur)
		retire(c, c->nworkers, cur);
	return 0;
}

int cdt_remove(struct cdt *c, uint64_t keyhash)
{
	struct cdt_entry *e = cdt_find(c, keyhash);
	int32_t pos;

	if (!e)
		return -ENOENT;
	pos = rte_hash_del_key(c->hash, &keyhash);
	if (pos < 0)
		return -ENOENT;
	filter_count(c, keyhash, -1); /* after the delete: no reader can miss it before */
	/* No reader can find the key now; wait until none still holds e or its state. */
	rte_rcu_qsbr_synchronize(c->qsbr, c->ctl_thread);
	rte_hash_free_key_with_position(c->hash, pos);
	state_put(c, e->state);
	e->state = NULL;
	e->keyhash = 0;
	c->key_len[e->index] = 0;
	c->free_idx[c->nfree++] = e->index;
	c->nentries--;
	return 0;
}

struct cdt_entry *cdt_next(const struct cdt *c, uint32_t *it)
{
	const void *key;
	void *data;

	if (rte_hash_iterate(c->hash, &key, &data, it) < 0)
		return NULL;
	return data;
}

const uint8_t *cdt_entry_key(const struct cdt *c, const struct cdt_entry *e, uint16_t *len)
{
	*len = c->key_len[e->index];
	return c->keys[e->index];
}

void cdt_entry_counters(const struct cdt *c, const struct cdt_entry *e,
			struct cdt_entry_counters *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned w = 0; w < c->nworkers; w++) {
		const struct cdt_entry_counters *x = cdt_worker_counters(c, (uint16_t)w, e);

		sum->reads += __atomic_load_n(&x->reads, __ATOMIC_RELAXED);
		sum->replica_reads += __atomic_load_n(&x->replica_reads, __ATOMIC_RELAXED);
		sum->writes += __atomic_load_n(&x->writes, __ATOMIC_RELAXED);
		sum->completions += __atomic_load_n(&x->completions, __ATOMIC_RELAXED);
		sum->acks_added += __atomic_load_n(&x->acks_added, __ATOMIC_RELAXED);
	}
}
