/*
 * dedup.c - the recent-writes table of dedup.h.
 */
#include "dedup.h"

#include <string.h>

static unsigned stripe_of(uint64_t keyhash)
{
	return (unsigned)(keyhash >> 58) % DEDUP_STRIPES; /* the top bits: the ring uses them too */
}

static struct dedup_slot *slot_of(struct dedup *d, uint64_t req_id, uint64_t keyhash)
{
	/* Fibonacci hashing of the req_id: agent ids and sequences both spread. */
	uint64_t h = req_id * 0x9e3779b97f4a7c15ull;

	return &d->slot[stripe_of(keyhash)][h >> 57 & (DEDUP_SLOTS_PER_STRIPE - 1)];
}

void dedup_init(struct dedup *d)
{
	memset(d->slot, 0, sizeof(d->slot));
	for (unsigned i = 0; i < DEDUP_STRIPES; i++)
		pthread_mutex_init(&d->lock[i], NULL);
}

void dedup_fini(struct dedup *d)
{
	for (unsigned i = 0; i < DEDUP_STRIPES; i++)
		pthread_mutex_destroy(&d->lock[i]);
}

const struct dedup_slot *dedup_begin(struct dedup *d, uint64_t req_id, uint64_t keyhash)
{
	const struct dedup_slot *s = slot_of(d, req_id, keyhash);

	pthread_mutex_lock(&d->lock[stripe_of(keyhash)]);
	return s->used && s->req_id == req_id && s->keyhash == keyhash ? s : NULL;
}

void dedup_end(struct dedup *d, uint64_t req_id, uint64_t keyhash, bool applied, uint8_t status,
	       uint64_t version)
{
	struct dedup_slot *s = slot_of(d, req_id, keyhash);

	if (applied)
		*s = (struct dedup_slot){.req_id = req_id,
					 .keyhash = keyhash,
					 .version = version,
					 .status = status,
					 .used = 1};
	pthread_mutex_unlock(&d->lock[stripe_of(keyhash)]);
}

unsigned dedup_of_key(struct dedup *d, uint64_t keyhash, struct dedup_write *out, unsigned max)
{
	unsigned st = stripe_of(keyhash), n = 0;

	pthread_mutex_lock(&d->lock[st]);
	for (unsigned i = 0; i < DEDUP_SLOTS_PER_STRIPE; i++) {
		const struct dedup_slot *s = &d->slot[st][i];
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
	pthread_mutex_unlock(&d->lock[st]);
	return n;
}

void dedup_remember(struct dedup *d, uint64_t keyhash, const struct dedup_write *w)
{
	dedup_begin(d, w->req_id, keyhash);
	dedup_end(d, w->req_id, keyhash, true, w->status, w->version);
}
