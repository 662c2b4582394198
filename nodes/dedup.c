/*
 * dedup.c - the recent-writes table of dedup.h: per stripe, a ring of the
 * last writes' outcomes, searched whole (a few hundred compares under the
 * lock a write takes anyway, beside a RocksDB write).
 */
#include "dedup.h"

#include <stdlib.h>
#include <string.h>

#include "wire.h"

static struct dedup_stripe *stripe_of(struct dedup *d, uint64_t keyhash)
{
	return &d->stripe[(keyhash >> 58) % DEDUP_STRIPES]; /* the top bits: the ring uses them too */
}

/* req_id's outcome for keyhash in s, or NULL. */
static struct dedup_slot *find(struct dedup_stripe *s, uint64_t req_id, uint64_t keyhash)
{
	for (unsigned i = 0; i < DEDUP_SLOTS_PER_STRIPE; i++) {
		struct dedup_slot *o = &s->slot[i];

		if (o->req_id == req_id && o->keyhash == keyhash && o->used)
			return o;
	}
	return NULL;
}

void dedup_init(struct dedup *d)
{
	memset(d, 0, sizeof(*d));
	for (unsigned i = 0; i < DEDUP_STRIPES; i++)
		pthread_mutex_init(&d->stripe[i].lock, NULL);
}

void dedup_fini(struct dedup *d)
{
	for (unsigned i = 0; i < DEDUP_STRIPES; i++)
		pthread_mutex_destroy(&d->stripe[i].lock);
}

const struct dedup_slot *dedup_begin(struct dedup *d, uint64_t req_id, uint64_t keyhash)
{
	struct dedup_stripe *s = stripe_of(d, keyhash);

	pthread_mutex_lock(&s->lock);
	return find(s, req_id, keyhash);
}

/* Remember an outcome in o, or (NULL) in the oldest's slot. */
static void keep(struct dedup_stripe *s, struct dedup_slot *o, uint64_t req_id, uint64_t keyhash,
		 uint8_t status, uint64_t version)
{
	if (!o) {
		o = &s->slot[s->next];
		s->next = (s->next + 1) % DEDUP_SLOTS_PER_STRIPE;
	}
	*o = (struct dedup_slot){
	    .req_id = req_id, .keyhash = keyhash, .version = version, .status = status, .used = 1};
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

bool dedup_riders_known(struct dedup *d, uint64_t keyhash, const uint8_t *ids, uint8_t k)
{
	struct dedup_stripe *s = stripe_of(d, keyhash);
	uint64_t sorted[UINT8_MAX];

	for (unsigned i = 0; i < k; i++)
		sorted[i] = wire_get64(ids + 8 * i);
	qsort(sorted, k, sizeof(sorted[0]), by_value);
	/* One pass over the stripe, not one per rider. */
	for (unsigned i = 0; i < DEDUP_SLOTS_PER_STRIPE; i++) {
		const struct dedup_slot *o = &s->slot[i];

		if (o->used && o->keyhash == keyhash &&
		    bsearch(&o->req_id, sorted, k, sizeof(sorted[0]), by_value))
			return true;
	}
	return false;
}

void dedup_keep_riders(struct dedup *d, uint64_t keyhash, const uint8_t *ids, uint8_t k,
		       uint64_t first)
{
	struct dedup_stripe *s = stripe_of(d, keyhash);

	for (unsigned i = 0; i < k; i++)
		keep(s, NULL, wire_get64(ids + 8 * i), keyhash, WIRE_ST_OK, first + i);
}

void dedup_end(struct dedup *d, uint64_t req_id, uint64_t keyhash, bool applied, uint8_t status,
	       uint64_t version)
{
	struct dedup_stripe *s = stripe_of(d, keyhash);

	/* Applied only when dedup_begin() found no outcome: a new one. */
	if (applied)
		keep(s, NULL, req_id, keyhash, status, version);
	pthread_mutex_unlock(&s->lock);
}

unsigned dedup_of_key(struct dedup *d, uint64_t keyhash, struct dedup_write *out, unsigned max)
{
	struct dedup_stripe *st = stripe_of(d, keyhash);
	unsigned n = 0;

	pthread_mutex_lock(&st->lock);
	for (unsigned i = 0; i < DEDUP_SLOTS_PER_STRIPE; i++) {
		const struct dedup_slot *s = &st->slot[i];
		unsigned at;

		if (!s->used || s->keyhash != keyhash)
			continue;
		/* Insertion by version, highest first; past max the lowest falls off. */
		for (at = n; at > 0 && out[at - 1].version < s->version; at--)
			if (at < max)
				out[at] = out[at - 1];
		if (at < max) {
			out[at] = (struct dedup_write){
			    .req_id = s->req_id, .version = s->version, .status = s->status};
			if (n < max)
				n++;
		}
	}
	pthread_mutex_unlock(&st->lock);
	return n;
}

void dedup_remember(struct dedup *d, uint64_t keyhash, const struct dedup_write *w)
{
	struct dedup_stripe *s = stripe_of(d, keyhash);

	pthread_mutex_lock(&s->lock);
	keep(s, find(s, w->req_id, keyhash), w->req_id, keyhash, w->status, w->version);
	pthread_mutex_unlock(&s->lock);
}
