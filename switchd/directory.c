/*
 * directory.c - hot keys in, cold keys out, and the REPLICATE/UNREPLICATE
 * traffic that keeps each directory key's replica set as large as its load
 * asks for. See directory.h for who calls what.
 */
#include "directory.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include <rte_ring.h>

#include "cluster.h"
#include "switchd.h"

#define DIR_SAMPLE_RING	    8192 /* sampled keys per control round, at most */
#define DIR_COMPLETION_RING 4096 /* write completions per control round, at most */

/* A sampled request key; its size is a multiple of 4 as rte_ring elements need. */
struct dir_sample {
	uint64_t keyhash;
	uint16_t key_len;
	uint16_t pad;
	uint8_t key[HOT_MAX_KEY];
};

struct dir_completion {
	uint64_t keyhash;
	uint64_t version;
};

struct directory {
	struct hot_detector *hot;
	struct hot_report *report;
	struct rte_ring *samples;
	struct rte_ring *completions;
	uint64_t next_epoch_us;
	struct dir_stats stats; /* control thread writes; ctl reads on the same thread */
};

int dir_init(struct sw *sw, char *err, size_t errlen)
{
	struct directory *d = calloc(1, sizeof(*d));
	char name[64];

	if (!d) {
		snprintf(err, errlen, "out of memory for the directory manager");
		return -1;
	}
	sw->dir = d;
	d->hot = hot_create(sw->cfg, SOCKET_ID_ANY);
	d->report = calloc(1, sizeof(*d->report));
	snprintf(name, sizeof(name), "dsmp_%s", sw->tag);
	d->samples = rte_ring_create_elem(name, sizeof(struct dir_sample), DIR_SAMPLE_RING,
					  SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "dcmp_%s", sw->tag);
	d->completions = rte_ring_create_elem(name, sizeof(struct dir_completion),
					      DIR_COMPLETION_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (!d->hot || !d->report || !d->samples || !d->completions) {
		snprintf(err, errlen, "cannot create the hot-key detector: %s",
			 rte_strerror(rte_errno ? rte_errno : ENOMEM));
		return -1;
	}
	sw->sample_every = sw->cfg->directory.sample_every;
	d->stats.enabled = sw->cfg->directory.enabled;
	__atomic_store_n(&sw->dir_on, d->stats.enabled, __ATOMIC_RELAXED);
	return 0;
}

void dir_fini(struct sw *sw)
{
	struct directory *d = sw->dir;

	if (!d)
		return;
	hot_free(d->hot);
	free(d->report);
	rte_ring_free(d->samples);
	rte_ring_free(d->completions);
	free(d);
	sw->dir = NULL;
}

/* ---- Workers. ------------------------------------------------------------------------------ */

void dir_sample(struct sw_worker *w, const struct wire_msg *msg)
{
	struct dir_sample s;

	if (msg->key_len > HOT_MAX_KEY)
		return; /* never installed (hotkeys.h): not worth a sample */
	s.keyhash = msg->keyhash;
	s.key_len = msg->key_len;
	s.pad = 0;
	memcpy(s.key, msg->key, msg->key_len);
	if (rte_ring_mp_enqueue_elem(w->sw->dir->samples, &s, sizeof(s)) == 0)
		w->counters[SW_CNT_HOT_SAMPLES]++;
	else
		w->counters[SW_CNT_HOT_SAMPLES_DROPPED]++;
}

void dir_completed(struct sw_worker *w, uint64_t keyhash, uint64_t version)
{
	struct dir_completion c = {.keyhash = keyhash, .version = version};

	/* Wake the control thread: until the copy is out, every read of the key
	 * goes to its home. One system call per write to a directory key. */
	if (rte_ring_mp_enqueue_elem(w->sw->dir->completions, &c, sizeof(c)) == 0)
		(void)!eventfd_write(w->sw->wake_fd, 1);
}

/* ---- Control thread. ------------------------------------------------------------------------ */

/*
 * Pick up to want targets among alive nodes outside the set, least expected
 * delay first (sel_cost(), as reads are weighed). Returns how many.
 */
static unsigned pick_targets(const struct sw *sw, const struct cdt_state *st, uint16_t home,
			     unsigned want, uint16_t *out)
{
	unsigned n = 0;

	while (n < want) {
		uint16_t best = 0;
		uint64_t best_cost = 0;

		for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
			uint16_t id = sw->cfg->nodes[i].id;
			bool taken = id == home || cdt_state_has(st, id);

			for (unsigned j = 0; j < n && !taken; j++)
				taken = out[j] == id;
			if (taken || !scores_alive(&sw->scores, id))
				continue;
			uint64_t cost = sel_cost(&sw->scores, id);

			if (!best || cost < best_cost) {
				best = id;
				best_cost = cost;
			}
		}
		if (!best)
			break;
		out[n++] = best;
	}
	return n;
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
	struct directory *d = sw->dir;
	uint16_t targets[CDT_MAX_REPLICAS];
	uint8_t payload[2 + 2 * CDT_MAX_REPLICAS];
	unsigned want = e->want_replicas, n;
	uint16_t key_len;
	const uint8_t *key = cdt_entry_key(sw->cdt, e, &key_len);

	/* A peer's key is that peer's to replicate; none of ours while a lease is missing. */
	if (st->nreplicas >= want || key_len == 0 || e->owner != 0 || !cluster_may_replicate(sw))
		return;
	n = pick_targets(sw, st, e->home, want - st->nreplicas, targets);
	if (n == 0)
		return;
	wire_put16(payload, sw->self->id);
	for (unsigned i = 0; i < n; i++)
		wire_put16(payload + 2 + 2 * i, targets[i]);
	struct wire_msg m = {
	    .op = WIRE_OP_REPLICATE,
	    .flags = WIRE_F_VIA_SWITCH,
	    .keyhash = e->keyhash,
	    .version = version,
	    .node = e->home,
	    .key_len = key_len,
	    .val_len = 2 + 2 * n,
	    .key = key,
	    .value = payload,
	};
	if (sw_send_to_node(sw, e->home, &m) == 0)
		d->stats.replicates_sent++;
	else
		d->stats.send_failed++;
}

int dir_remove(struct sw *sw, struct cdt_entry *e)
{
	struct directory *d = sw->dir;
	uint8_t key[WIRE_MAX_KEY];
	uint16_t key_len;
	uint64_t kh = e->keyhash;
	const uint8_t *k = cdt_entry_key(sw->cdt, e, &key_len);
	int rc;

	bool owned = e->owner == 0;

	memcpy(key, k, key_len);
	rc = cdt_remove(sw->cdt, kh);
	if (rc != 0)
		return rc;
	hot_forget(d->hot, kh);
	if (!owned) /* routed to a peer: the copies are the owner's business */
		return 0;
	/*
	 * After the removal (and its grace period) no read goes to a replica any
	 * more: drop the copies everywhere; the home forgets where it pushed them
	 * (nodes/repl.c). A copy left behind by a lost UNREPLICATE is harmless:
	 * reads go only to nodes in a set, and a node joins a set only by acking
	 * the completed version.
	 */
	struct wire_msg m = {
	    .op = WIRE_OP_UNREPLICATE,
	    .flags = WIRE_F_VIA_SWITCH,
	    .keyhash = kh,
	    .key_len = key_len,
	    .key = key,
	};
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;

		m.node = id;
		if (sw_send_to_node(sw, id, &m) == 0)
			d->stats.unreplicates_sent++;
		else
			d->stats.send_failed++;
	}
	return 0;
}

struct cdt_entry *dir_install(struct sw *sw, uint64_t keyhash, const uint8_t *key, uint16_t key_len,
			      uint8_t want)
{
	struct directory *d = sw->dir;
	uint16_t home = ring_home(&sw->ring, keyhash);
	struct cdt_entry *e = cdt_install(sw->cdt, keyhash, key, key_len, home, &home, 1, 0);

	if (!e) {
		if (errno == ENOSPC)
			d->stats.full++;
		else if (errno == EEXIST)
			d->stats.collisions++;
		return NULL;
	}
	e->want_replicas = want;
	d->stats.installs++;
	/* v = 0: "your current version"; the replies converge from there
	 * (docs/design.md section 5). */
	replicate(sw, e, cdt_entry_state(e), 0);
	return e;
}

void dir_replicate(struct sw *sw, struct cdt_entry *e)
{
	const struct cdt_state *st = cdt_entry_state(e);

	replicate(sw, e, st, st->completed);
}

/* Install or refresh the epoch's hot keys; retire the ones gone cold. */
static void run_epoch(struct sw *sw)
{
	struct directory *d = sw->dir;
	struct hot_report *r = d->report;
	uint32_t installs = 0, retires = 0;

	hot_epoch(d->hot, r);
	if (cluster_on(sw)) {
		/* With peers the cluster hot set decides what is installed (cluster.c). */
		cluster_epoch(sw, r);
		d->stats.hot_set = r->nhot;
		d->stats.epochs++;
		return;
	}
	for (uint32_t i = 0; i < r->nhot; i++) {
		const struct hot_key *k = &r->hot[i];
		struct cdt_entry *e = cdt_find(sw->cdt, k->keyhash);

		if (e) {
			if (!cdt_entry_is(e, k->key, k->key_len))
				d->stats.collisions++;
			else if (!e->pinned)
				e->want_replicas = (uint8_t)k->replicas;
			continue;
		}
		if (dir_install(sw, k->keyhash, k->key, k->key_len, (uint8_t)k->replicas))
			installs++;
	}
	for (uint32_t i = 0; i < r->nretired; i++) {
		struct cdt_entry *e = cdt_find(sw->cdt, r->retired[i]);

		if (e && !e->pinned && dir_remove(sw, e) == 0)
			retires++;
	}
	d->stats.hot_set = r->nhot;
	d->stats.last_installs = installs;
	d->stats.last_retires = retires;
	d->stats.retires += retires;
	d->stats.epochs++;
}

/* Every entry short of replicas gets a REPLICATE of its completed version. */
static void repair(struct sw *sw)
{
	uint32_t it = 0;
	struct cdt_entry *e;

	while ((e = cdt_next(sw->cdt, &it)) != NULL)
		dir_replicate(sw, e);
}

void dir_poll(struct sw *sw, uint64_t now_us)
{
	struct directory *d = sw->dir;
	struct dir_sample s;
	struct dir_completion c;
	bool on = __atomic_load_n(&sw->dir_on, __ATOMIC_RELAXED);

	while (rte_ring_sc_dequeue_elem(d->samples, &s, sizeof(s)) == 0)
		if (on)
			hot_observe(d->hot, s.keyhash, s.key, s.key_len);
	/* A write shrank a set to {home}: copy the new version out right away. */
	while (rte_ring_sc_dequeue_elem(d->completions, &c, sizeof(c)) == 0) {
		struct cdt_entry *e = cdt_find(sw->cdt, c.keyhash);
		const struct cdt_state *st = e ? cdt_entry_state(e) : NULL;

		if (st && st->completed == c.version)
			replicate(sw, e, st, c.version);
	}
	if (now_us < d->next_epoch_us)
		return;
	d->next_epoch_us = now_us + (uint64_t)sw->cfg->directory.epoch_ms * 1000u;
	if (on)
		run_epoch(sw);
	repair(sw);
}

void dir_set_enabled(struct sw *sw, bool on)
{
	struct directory *d = sw->dir;

	__atomic_store_n(&sw->dir_on, on, __ATOMIC_RELAXED);
	d->stats.enabled = on;
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
		if ((e = cdt_find(sw->cdt, victims[i])) != NULL && dir_remove(sw, e) == 0)
			d->stats.retires++;
	free(victims);
	d->stats.hot_set = 0;
}

void dir_get_stats(const struct sw *sw, struct dir_stats *out)
{
	*out = sw->dir->stats;
}
