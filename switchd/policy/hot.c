/*
 * hot.c - rte_member count-min sketch + key names + hot-set bookkeeping.
 */
#include "hot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_member.h>

/* A key whose bytes we remember, and for how many epochs it has been hot or cold. */
struct hot_name {
	uint64_t keyhash;
	uint16_t key_len;
	uint8_t key[HOT_MAX_KEY];
	uint32_t cold_epochs; /* epochs in a row outside the hot set */
	uint32_t seen, writes; /* its samples this epoch since it was remembered, and the writes */
	uint8_t tracked;      /* was in a report's hot list and not yet retired */
	uint8_t used;
};

struct hot_detector {
	struct rte_member_setsum *sketch;
	struct rte_hash *index; /* keyhash -> slot in names */
	struct hot_name *names;
	uint32_t top_k;
	uint32_t nnodes;
	uint32_t max_replicas;
	double replica_factor;
	double push_cost;
	uint32_t retire_epochs;
	uint64_t epoch;
	uint64_t samples;
};

/*
 * A key is remembered once the sketch has counted it this many times in an
 * epoch: cold keys of a large key space rarely get there, so the name table
 * holds the candidates, not the key space.
 */
#define HOT_REMEMBER_AFTER 3
/* Noise floor: a top-K key must carry at least 1/(16 K) of the epoch's samples
 * (and 4 samples), so a uniform workload installs nothing. */
#define HOT_FLOOR_DIVISOR 16
#define HOT_MIN_COUNT	  4

uint16_t hot_replicas_for_share(double share, uint32_t nnodes, uint32_t max_replicas,
				double factor)
{
	/*
	 * A key carrying share s of the load puts s*n node-loads' worth on the
	 * cluster; serving it from 1 + ceil(f s n) nodes keeps each replica's part
	 * of it under 1/f of an average node's load. Not more: every write to the
	 * key copies the new version to the whole set again, one request's work
	 * at the home and at each replica (docs/benchmarks.md).
	 */
	double want = 1.0 + ceil(factor * share * (double)nnodes);
	uint32_t cap = max_replicas < nnodes ? max_replicas : nnodes;

	if (want > cap)
		want = cap;
	return (uint16_t)(want < 1 ? 1 : want);
}

double hot_share_for_replicas(unsigned replicas, uint32_t nnodes, double factor)
{
	if (replicas <= 1 || nnodes == 0 || !(factor > 0))
		return 0;
	return (double)(replicas - 1) / (factor * (double)nnodes);
}

/*
 * Copies must take at least a fifth off the home's load of the key: they also
 * cost the cluster a write per copy, and a key's write share is measured per
 * epoch, so a key near the line is not copied and dropped epoch after epoch.
 */
#define HOT_COPIES_PAY 0.8

uint16_t hot_replicas_for_writes(uint16_t replicas, double write_share, double push_cost)
{
	if (replicas <= 1)
		return replicas;
	double home = write_share * (1.0 + push_cost) + (1.0 - write_share) / replicas;

	return home <= HOT_COPIES_PAY ? replicas : 1;
}

struct hot_detector *hot_create(const struct cfg *cfg, int socket)
{
	static unsigned instance;
	struct hot_detector *h = calloc(1, sizeof(*h));
	char name[RTE_MEMBER_NAMESIZE];

	if (!h)
		return NULL;
	h->top_k = cfg_directory_top_k(cfg);
	if (h->top_k > HOT_MAX_TOP)
		h->top_k = HOT_MAX_TOP;
	h->nnodes = cfg->nnodes;
	h->max_replicas = cfg->directory.max_replicas;
	h->replica_factor = cfg->directory.replica_factor;
	h->push_cost = cfg->directory.push_cost;
	h->retire_epochs = cfg->directory.retire_epochs;

	snprintf(name, sizeof(name), "hot_sketch_%u", instance);
	struct rte_member_parameters mp = {
	    .name = name,
	    .type = RTE_MEMBER_TYPE_SKETCH,
	    .key_len = sizeof(uint64_t),
	    /* 1e-4 of the epoch's samples: counts of hot keys are exact enough. */
	    .error_rate = 0.0001f,
	    /* Count every row: lcores already sample (directory.sample_every). */
	    .sample_rate = 1.0f,
	    .top_k = h->top_k,
	    .prim_hash_seed = 0x736b6c31,
	    .sec_hash_seed = 0x736b6c32,
	    .socket_id = socket,
	};
	h->sketch = rte_member_create(&mp);

	snprintf(name, sizeof(name), "hot_names_%u", instance++);
	struct rte_hash_parameters hp = {
	    .name = name,
	    .entries = HOT_MAX_NAMES,
	    .key_len = sizeof(uint64_t),
	    .hash_func = rte_jhash,
	    .socket_id = socket,
	};
	h->index = rte_hash_create(&hp);
	h->names = calloc(HOT_MAX_NAMES, sizeof(*h->names));
	if (!h->sketch || !h->index || !h->names) {
		hot_free(h);
		errno = ENOMEM;
		return NULL;
	}
	return h;
}

void hot_free(struct hot_detector *h)
{
	if (!h)
		return;
	rte_member_free(h->sketch);
	rte_hash_free(h->index);
	free(h->names);
	free(h);
}

static struct hot_name *name_of(struct hot_detector *h, uint64_t keyhash)
{
	int slot = rte_hash_lookup(h->index, &keyhash);

	return slot < 0 ? NULL : &h->names[slot];
}

void hot_observe(struct hot_detector *h, uint64_t keyhash, const uint8_t *key, uint16_t len,
		 bool write)
{
	uint64_t count = 0;
	struct hot_name *known;

	rte_member_add(h->sketch, &keyhash, 1);
	h->samples++;
	if (len > HOT_MAX_KEY)
		return;
	known = name_of(h, keyhash);
	if (known) {
		known->seen++;
		known->writes += write;
		return;
	}
	if (rte_member_query_count(h->sketch, &keyhash, &count) != 0 || count < HOT_REMEMBER_AFTER)
		return;
	int slot = rte_hash_add_key(h->index, &keyhash);
	if (slot < 0) /* table full of candidates: this epoch's hot set is known */
		return;
	struct hot_name *n = &h->names[slot];
	n->keyhash = keyhash;
	n->key_len = len;
	memcpy(n->key, key, len);
	n->cold_epochs = 0;
	n->seen = 1;
	n->writes = write;
	n->tracked = 0;
	n->used = 1;
}

void hot_forget(struct hot_detector *h, uint64_t keyhash)
{
	int slot = rte_hash_del_key(h->index, &keyhash);

	if (slot >= 0)
		memset(&h->names[slot], 0, sizeof(h->names[slot]));
}

static int by_count_desc(const void *a, const void *b)
{
	const struct hot_key *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

void hot_epoch(struct hot_detector *h, struct hot_report *out)
{
	void *keys[HOT_MAX_TOP];
	uint64_t counts[HOT_MAX_TOP];
	uint64_t floor = h->samples / ((uint64_t)HOT_FLOOR_DIVISOR * h->top_k);
	int n = rte_member_report_heavyhitter(h->sketch, keys, counts);

	if (floor < HOT_MIN_COUNT)
		floor = HOT_MIN_COUNT;
	out->epoch = ++h->epoch;
	out->samples = h->samples;
	out->nhot = 0;
	out->nretired = 0;

	/* Everything remembered starts the epoch as cold; the hot ones are reset below. */
	for (uint32_t i = 0; i < HOT_MAX_NAMES; i++)
		if (h->names[i].used)
			h->names[i].cold_epochs++;

	for (int i = 0; i < n && out->nhot < h->top_k; i++) {
		uint64_t keyhash;
		struct hot_name *name;

		memcpy(&keyhash, keys[i], sizeof(keyhash));
		name = name_of(h, keyhash);
		if (counts[i] < floor || !name)
			continue;
		struct hot_key *k = &out->hot[out->nhot++];
		k->keyhash = keyhash;
		k->count = counts[i];
		k->share = h->samples ? (double)counts[i] / (double)h->samples : 0;
		k->write_share = name->seen ? (double)name->writes / name->seen : 0;
		k->share_replicas =
		    hot_replicas_for_share(k->share, h->nnodes, h->max_replicas, h->replica_factor);
		k->replicas = hot_replicas_for_writes(k->share_replicas, k->write_share, h->push_cost);
		k->key_len = name->key_len;
		memcpy(k->key, name->key, name->key_len);
		name->cold_epochs = 0;
		name->tracked = 1;
	}
	qsort(out->hot, out->nhot, sizeof(out->hot[0]), by_count_desc);
	for (uint32_t i = 0; i < HOT_MAX_NAMES; i++)
		h->names[i].seen = h->names[i].writes = 0; /* each epoch measures its own writes */

	/* Retire tracked keys cold for too long; drop untracked names that went cold. */
	for (uint32_t i = 0; i < HOT_MAX_NAMES; i++) {
		struct hot_name *name = &h->names[i];

		if (!name->used || name->cold_epochs == 0)
			continue;
		if (name->tracked && name->cold_epochs >= h->retire_epochs) {
			if (out->nretired < HOT_MAX_TOP)
				out->retired[out->nretired++] = name->keyhash;
			hot_forget(h, name->keyhash);
		} else if (!name->tracked) {
			hot_forget(h, name->keyhash);
		}
	}
	rte_member_reset(h->sketch);
	h->samples = 0;
}
