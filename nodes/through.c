/*
 * through.c - write-through state of directory keys (through.h).
 */
#include "through.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct through_slot {
	pthread_mutex_t lock;
	uint64_t keyhash; /* 0: free */
	bool has_holders;
	uint8_t holders[THROUGH_HOLDERS];
	bool has_previous;
	struct store_record previous; /* .value is unused: the bytes are in through.value */
};

struct through {
	struct through_slot slot[THROUGH_SLOTS];
	/* Apart from the slots: pages of keys never written through stay untouched. */
	uint8_t (*value)[THROUGH_MAX_VALUE];
};

struct through *through_create(void)
{
	struct through *t = calloc(1, sizeof(*t));

	if (t)
		t->value = calloc(THROUGH_SLOTS, THROUGH_MAX_VALUE);
	if (!t || !t->value) {
		free(t);
		return NULL;
	}
	for (unsigned i = 0; i < THROUGH_SLOTS; i++)
		pthread_mutex_init(&t->slot[i].lock, NULL);
	return t;
}

void through_destroy(struct through *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < THROUGH_SLOTS; i++)
		pthread_mutex_destroy(&t->slot[i].lock);
	free(t->value);
	free(t);
}

/* keyhash's slot, locked; claimed for it (its old key forgotten) when claim is set. */
static inline unsigned slot_of(uint64_t keyhash)
{
	return (unsigned)((keyhash ^ (keyhash >> 32)) & (THROUGH_SLOTS - 1));
}

static struct through_slot *lock_slot(struct through *t, uint64_t keyhash, bool claim)
{
	struct through_slot *s = &t->slot[slot_of(keyhash)];

	pthread_mutex_lock(&s->lock);
	if (s->keyhash == keyhash)
		return s;
	if (!claim) {
		pthread_mutex_unlock(&s->lock);
		return NULL;
	}
	s->keyhash = keyhash;
	s->has_holders = false;
	s->has_previous = false;
	return s;
}

void through_keep_previous(struct through *t, uint64_t keyhash, const struct store_record *rec)
{
	struct through_slot *s = lock_slot(t, keyhash, true);

	s->has_previous = rec->value_len <= THROUGH_MAX_VALUE;
	if (s->has_previous) {
		s->previous = *rec;
		s->previous.value = NULL;
		if (rec->value_len)
			memcpy(t->value[slot_of(keyhash)], rec->value, rec->value_len);
	}
	pthread_mutex_unlock(&s->lock);
}

int through_previous(struct through *t, uint64_t keyhash, uint64_t version,
		     struct store_record *rec, uint8_t *buf, size_t cap)
{
	struct through_slot *s = lock_slot(t, keyhash, false);
	int found;

	if (!s)
		return 0;
	found = s->has_previous && s->previous.version == version && s->previous.value_len <= cap;
	if (found) {
		*rec = s->previous;
		memcpy(buf, t->value[slot_of(keyhash)], s->previous.value_len);
		rec->value = buf;
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

void through_holders_add(struct through *t, uint64_t keyhash, const uint8_t *holders)
{
	struct through_slot *s = lock_slot(t, keyhash, true);

	for (unsigned i = 0; i < THROUGH_HOLDERS; i++)
		s->holders[i] = (uint8_t)((s->has_holders ? s->holders[i] : 0) | holders[i]);
	s->has_holders = true;
	pthread_mutex_unlock(&s->lock);
}

void through_holders_set(struct through *t, uint64_t keyhash, const uint8_t *holders)
{
	struct through_slot *s = lock_slot(t, keyhash, true);

	memcpy(s->holders, holders, THROUGH_HOLDERS);
	s->has_holders = true;
	pthread_mutex_unlock(&s->lock);
}

bool through_holders(struct through *t, uint64_t keyhash, uint8_t *out)
{
	struct through_slot *s = lock_slot(t, keyhash, false);
	bool any = false;

	if (!s)
		return false;
	if (s->has_holders) {
		memcpy(out, s->holders, THROUGH_HOLDERS);
		for (unsigned i = 0; i < THROUGH_HOLDERS; i++)
			any = any || out[i];
	}
	pthread_mutex_unlock(&s->lock);
	return any;
}

void through_forget(struct through *t, uint64_t keyhash)
{
	struct through_slot *s = lock_slot(t, keyhash, false);

	if (!s)
		return;
	s->keyhash = 0;
	s->has_holders = false;
	s->has_previous = false;
	pthread_mutex_unlock(&s->lock);
}
