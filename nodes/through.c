/*
 * through.c - write-through state of directory keys (through.h).
 */
#include "through.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct through_slot {
	pthread_mutex_t lock;
	pthread_cond_t turn_given; /* signalled when a turn ends */
	uint64_t keyhash;	   /* 0: free */
	bool turn;		   /* a write or REPLICATE of the key: its version to its reply */
	bool pushing;		   /* its push is out: readers see the previous version */
	bool has_holders;
	uint16_t stamper; /* the switch whose stamps the kept versions answer (0: none) */
	struct through_rider *riders; /* PUTs of the key waiting for its turn, newest first */
	uint8_t holders[THROUGH_HOLDERS];
	/* Versions before the current one, newest at previous[newest]; .value is
	 * unused: the bytes are in through.value. */
	uint8_t nprevious, newest;
	struct store_record previous[THROUGH_PREVIOUS];
};

struct through {
	struct through_slot slot[THROUGH_SLOTS];
	/* Apart from the slots: pages of keys never written through stay untouched. */
	uint8_t (*value)[THROUGH_PREVIOUS][THROUGH_MAX_VALUE];
};

struct through *through_create(void)
{
	struct through *t = calloc(1, sizeof(*t));

	if (t)
		t->value = calloc(THROUGH_SLOTS, sizeof(*t->value));
	if (!t || !t->value) {
		free(t);
		return NULL;
	}
	for (unsigned i = 0; i < THROUGH_SLOTS; i++) {
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_mutex_init(&t->slot[i].lock, NULL);
		pthread_cond_init(&t->slot[i].turn_given, &ca);
		pthread_condattr_destroy(&ca);
	}
	return t;
}

void through_destroy(struct through *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < THROUGH_SLOTS; i++) {
		pthread_mutex_destroy(&t->slot[i].lock);
		pthread_cond_destroy(&t->slot[i].turn_given);
	}
	free(t->value);
	free(t);
}

static inline unsigned slot_of(uint64_t keyhash)
{
	return (unsigned)((keyhash ^ (keyhash >> 32)) & (THROUGH_SLOTS - 1));
}

/*
 * keyhash's slot, locked. When it holds another key: claimed for keyhash (the
 * other key forgotten) if claim is set and no write of that key has its turn, else NULL.
 */
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
	/* A write of the slot's other key keeps the slot until its turn ends. */
	if (s->turn) {
		pthread_mutex_unlock(&s->lock);
		return NULL;
	}
	s->keyhash = keyhash;
	s->has_holders = false;
	s->nprevious = 0;
	s->riders = NULL; /* the other key's riders find its slot gone (through_turn_take_or_ride()) */
	return s;
}

bool through_keep_previous(struct through *t, uint64_t keyhash, const struct store_record *rec,
			   uint16_t stamper)
{
	struct through_slot *s = lock_slot(t, keyhash, true);
	bool kept = false;

	if (!s)
		return false;
	if (s->stamper != stamper)
		s->nprevious = 0; /* kept for another switch's stamps */
	s->stamper = stamper;
	if (s->nprevious && s->previous[s->newest].version == rec->version) {
		kept = true; /* already the newest kept (a push sent again) */
	} else if (rec->value_len <= THROUGH_MAX_VALUE) {
		unsigned i = s->nprevious ? (s->newest + 1u) % THROUGH_PREVIOUS : 0;

		s->previous[i] = *rec;
		s->previous[i].value = NULL;
		if (rec->value_len)
			memcpy(t->value[slot_of(keyhash)][i], rec->value, rec->value_len);
		s->newest = (uint8_t)i;
		s->nprevious += s->nprevious < THROUGH_PREVIOUS;
		kept = true;
	} else {
		s->nprevious = 0; /* too large: what is kept would no longer be the newest */
	}
	pthread_mutex_unlock(&s->lock);
	return kept;
}

/* Remove r from s's riders, if it is there. */
static void unlink_rider(struct through_slot *s, struct through_rider *r)
{
	for (struct through_rider **p = &s->riders; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			return;
		}
}

int through_turn_take_or_ride(struct through *t, uint64_t keyhash, unsigned wait_ms, bool claim,
			      struct through_rider *r)
{
	struct through_slot *s = lock_slot(t, keyhash, claim);
	struct timespec until;
	bool expired = false;
	int taken;

	if (!s)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (r && s->turn && s->keyhash == keyhash) {
		r->state = THROUGH_RIDER_WAITING;
		r->next = s->riders;
		s->riders = r;
	}
	for (;;) {
		/* Taken by a leader: it applies and answers it; wait for that however long. */
		if (r && r->state == THROUGH_RIDER_DONE) {
			pthread_mutex_unlock(&s->lock);
			return 2;
		}
		if (!r || r->state == THROUGH_RIDER_WAITING) {
			if (!s->turn || s->keyhash != keyhash || expired)
				break;
			expired = pthread_cond_timedwait(&s->turn_given, &s->lock, &until) ==
				  ETIMEDOUT;
		} else {
			pthread_cond_wait(&s->turn_given, &s->lock);
		}
	}
	if (r)
		unlink_rider(s, r);
	/* The slot may have gone to another key meanwhile: this key's state is gone. */
	if (s->keyhash != keyhash)
		taken = 0;
	else if (s->turn)
		taken = -1; /* another write of the key still has it */
	else {
		s->turn = true;
		taken = 1;
	}
	pthread_mutex_unlock(&s->lock);
	return taken;
}

int through_turn_take(struct through *t, uint64_t keyhash, unsigned wait_ms, bool claim)
{
	return through_turn_take_or_ride(t, keyhash, wait_ms, claim, NULL);
}

struct through_rider *through_riders_take(struct through *t, uint64_t keyhash)
{
	struct through_slot *s = lock_slot(t, keyhash, false);
	struct through_rider *oldest_first = NULL;

	if (!s)
		return NULL;
	while (s->riders) {
		struct through_rider *r = s->riders;

		s->riders = r->next;
		r->state = THROUGH_RIDER_TAKEN;
		r->next = oldest_first;
		oldest_first = r;
	}
	pthread_mutex_unlock(&s->lock);
	return oldest_first;
}

void through_rider_done(struct through *t, uint64_t keyhash, struct through_rider *r, bool applied)
{
	struct through_slot *s = lock_slot(t, keyhash, false);

	if (!s) { /* cannot be: the leader's turn keeps the slot */
		r->state = THROUGH_RIDER_WAITING;
		return;
	}
	if (applied) {
		r->state = THROUGH_RIDER_DONE;
	} else {
		r->state = THROUGH_RIDER_WAITING;
		r->next = s->riders;
		s->riders = r;
	}
	pthread_cond_broadcast(&s->turn_given);
	pthread_mutex_unlock(&s->lock);
}

void through_turn_give(struct through *t, uint64_t keyhash)
{
	struct through_slot *s = lock_slot(t, keyhash, false);

	if (!s)
		return;
	s->turn = false;
	s->pushing = false;
	pthread_cond_broadcast(&s->turn_given);
	pthread_mutex_unlock(&s->lock);
}

void through_push_begin(struct through *t, uint64_t keyhash)
{
	struct through_slot *s = lock_slot(t, keyhash, false);

	if (!s)
		return;
	s->pushing = true;
	pthread_mutex_unlock(&s->lock);
}

void through_push_end(struct through *t, uint64_t keyhash)
{
	struct through_slot *s = lock_slot(t, keyhash, false);

	if (!s)
		return;
	s->pushing = false;
	pthread_mutex_unlock(&s->lock);
}

/* The kept version i into *rec, its value copied to buf[0..cap); 0 when it does not fit. */
static int copy_previous(struct through *t, struct through_slot *s, uint64_t keyhash, unsigned i,
			 struct store_record *rec, uint8_t *buf, size_t cap)
{
	if (s->previous[i].value_len > cap)
		return 0;
	*rec = s->previous[i];
	memcpy(buf, t->value[slot_of(keyhash)][i], s->previous[i].value_len);
	rec->value = buf;
	return 1;
}

int through_home_read(struct through *t, uint64_t keyhash, uint16_t via_switch,
		      struct store_record *rec, uint8_t *buf, size_t cap)
{
	struct through_slot *s = lock_slot(t, keyhash, false);
	int found;

	if (!s)
		return 0;
	found =
	    s->pushing && s->nprevious && copy_previous(t, s, keyhash, s->newest, rec, buf, cap);
	if (!found && (!via_switch || via_switch != s->stamper))
		s->nprevious = 0;
	pthread_mutex_unlock(&s->lock);
	return found;
}

int through_previous(struct through *t, uint64_t keyhash, uint64_t version, unsigned depth,
		     uint16_t stamper, struct store_record *rec, uint8_t *buf, size_t cap)
{
	struct through_slot *s = lock_slot(t, keyhash, false);
	int found = 0;

	if (!s)
		return 0;
	if (stamper != THROUGH_ANY_SWITCH && stamper != s->stamper)
		depth = 0;
	for (unsigned k = 0; k < s->nprevious && k < depth && !found; k++) {
		unsigned i = (s->newest + THROUGH_PREVIOUS - k) % THROUGH_PREVIOUS;

		if (s->previous[i].version == version)
			found = copy_previous(t, s, keyhash, i, rec, buf, cap);
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

void through_holders_add(struct through *t, uint64_t keyhash, const uint8_t *holders)
{
	struct through_slot *s = lock_slot(t, keyhash, true);

	if (!s)
		return;
	for (unsigned i = 0; i < THROUGH_HOLDERS; i++)
		s->holders[i] = (uint8_t)((s->has_holders ? s->holders[i] : 0) | holders[i]);
	s->has_holders = true;
	pthread_mutex_unlock(&s->lock);
}

void through_holders_set(struct through *t, uint64_t keyhash, const uint8_t *holders)
{
	struct through_slot *s = lock_slot(t, keyhash, true);

	if (!s)
		return;
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

void through_forget_previous(struct through *t, uint64_t keyhash)
{
	struct through_slot *s = lock_slot(t, keyhash, false);

	if (!s)
		return;
	s->nprevious = 0;
	pthread_mutex_unlock(&s->lock);
}

void through_forget(struct through *t, uint64_t keyhash)
{
	struct through_slot *s = lock_slot(t, keyhash, false);

	if (!s)
		return;
	s->has_holders = false;
	if (!s->turn) { /* a write with its turn keeps what its readers see until it ends */
		s->keyhash = 0;
		s->nprevious = 0;
	}
	pthread_mutex_unlock(&s->lock);
}
