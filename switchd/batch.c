/*
 * batch.c - group commit of a directory key's PUTs at the switch (batch.h).
 */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_spinlock.h>

#define BATCH_GIVEN_UP 8

struct batch_slot {
	rte_spinlock_t lock;
	uint8_t nriders;  /* item[0..nriders): the riders of the write out */
	uint8_t n;	  /* item[nriders..n): waiting for it to be answered */
	uint64_t keyhash; /* the key with a write out; 0: none (relaxed atomic) */
	uint64_t out_req_id;
	uint64_t out_tsc;
	/* Writes out that were given up, newest at given_up[last_given_up]: their
	 * late replies must not be taken for a batch's, so a retry of one goes
	 * on alone and never goes out for a batch again. */
	uint64_t given_up[BATCH_GIVEN_UP];
	uint8_t last_given_up;
	struct batch_write item[BATCH_MAX];
};

struct batches {
	uint32_t mask;
	uint32_t max_held;
	uint32_t max_frame;
	uint32_t held; /* relaxed atomic: items in every slot */
	struct batch_slot *slot;
};

struct batches *batches_create(uint32_t keys, uint32_t max_held, uint32_t max_frame)
{
	struct batches *b = calloc(1, sizeof(*b));
	uint32_t n = RTE_MIN(rte_align32pow2(RTE_MAX(keys, 1u)), BATCH_SLOTS);

	if (!b)
		return NULL;
	/* Zeroed, unlocked (rte_spinlock_init() stores 0): the pages of slots
	 * never used are never touched. */
	b->slot = calloc(n, sizeof(*b->slot));
	if (!b->slot) {
		free(b);
		return NULL;
	}
	b->mask = n - 1;
	b->max_held = max_held;
	b->max_frame = max_frame;
	return b;
}

void batches_destroy(struct batches *b)
{
	if (!b)
		return;
	for (uint32_t i = 0; i <= b->mask; i++)
		for (unsigned j = 0; j < b->slot[i].n; j++)
			rte_pktmbuf_free(b->slot[i].item[j].m);
	free(b->slot);
	free(b);
}

static inline struct batch_slot *slot_of(struct batches *b, uint64_t keyhash)
{
	return &b->slot[(keyhash ^ (keyhash >> 32)) & b->mask];
}

static inline void held_add(struct batches *b, int32_t d)
{
	__atomic_fetch_add(&b->held, (uint32_t)d, __ATOMIC_RELAXED);
}

/*
 * Make wr the write out, at now_tsc: the oldest waiting items ride on it, as
 * many as its frame has room for the req_ids of (the rest wait on).
 */
static void send_out(struct batches *b, struct batch_slot *s, const struct batch_write *wr,
		     uint64_t now_tsc, struct batch_riders *out)
{
	uint32_t len = rte_pktmbuf_pkt_len(wr->m);
	uint32_t room = len < b->max_frame ? (b->max_frame - len) / 8 : 0;

	s->nriders = (uint8_t)RTE_MIN((uint32_t)s->n, room);
	s->out_req_id = wr->req_id;
	s->out_tsc = now_tsc;
	out->n = s->nriders;
	for (unsigned i = 0; i < s->nriders; i++)
		out->req_id[i] = s->item[i].req_id;
}

/* Take the riders of the write out off the front of s into rider[]; how many. */
static unsigned take_riders(struct batches *b, struct batch_slot *s, struct batch_write *rider)
{
	unsigned k = s->nriders;

	for (unsigned i = 0; i < k; i++)
		rider[i] = s->item[i];
	s->n -= k;
	memmove(s->item, s->item + k, s->n * sizeof(s->item[0]));
	s->nriders = 0;
	held_add(b, -(int32_t)k);
	return k;
}

/* The write out is given up: remember it, and take it out. */
static void give_up(struct batch_slot *s)
{
	s->last_given_up = (uint8_t)((s->last_given_up + 1) % BATCH_GIVEN_UP);
	s->given_up[s->last_given_up] = s->out_req_id;
}

/* Is req_id a write out (or given up: 1) or held (2) in s? */
static int held_as(const struct batch_slot *s, uint64_t req_id)
{
	if (s->out_req_id == req_id)
		return 1;
	for (unsigned i = 0; i < BATCH_GIVEN_UP; i++)
		if (s->given_up[i] == req_id)
			return 1;
	for (unsigned i = 0; i < s->n; i++)
		if (s->item[i].req_id == req_id)
			return 2;
	return 0;
}

enum batch_verdict batch_put(struct batches *b, uint64_t keyhash, const struct batch_write *wr,
			     uint64_t now_tsc, uint64_t stale_tsc, struct batch_riders *out,
			     struct batch_write *alone, unsigned *nalone)
{
	struct batch_slot *s = slot_of(b, keyhash);
	enum batch_verdict v = BATCH_SEND;
	int as;

	out->n = 0;
	*nalone = 0;
	rte_spinlock_lock(&s->lock);
	as = held_as(s, wr->req_id);
	if (s->keyhash != 0 && s->keyhash != keyhash) {
		/* Another key's slot: this one goes out on its own. */
	} else if (as == 1) {
		/* A retry of the write out (or of one given up): the home answers
		 * it as it did the first; alone, its reply is no batch's. */
	} else if (s->keyhash == 0) {
		__atomic_store_n(&s->keyhash, keyhash, __ATOMIC_RELAXED);
		send_out(b, s, wr, now_tsc, out);
	} else if (now_tsc - s->out_tsc > stale_tsc) {
		/* The write out is given up with its riders; the waiting ride on this one. */
		give_up(s);
		*nalone = take_riders(b, s, alone);
		/* A retry of a waiting write goes out in its place, never with its first
		 * attempt as a rider: that one goes on its own (the home applies one). */
		for (unsigned i = 0; i < s->n; i++)
			if (s->item[i].req_id == wr->req_id) {
				alone[(*nalone)++] = s->item[i];
				memmove(s->item + i, s->item + i + 1,
					(--s->n - i) * sizeof(s->item[0]));
				held_add(b, -1);
				break;
			}
		send_out(b, s, wr, now_tsc, out);
	} else if (as == 2) {
		v = BATCH_DUPLICATE;
	} else if (s->n < BATCH_MAX && __atomic_load_n(&b->held, __ATOMIC_RELAXED) < b->max_held) {
		s->item[s->n++] = *wr;
		held_add(b, 1);
		v = BATCH_HELD;
	}
	rte_spinlock_unlock(&s->lock);
	return v;
}

bool batch_answered(struct batches *b, uint64_t keyhash, uint64_t req_id, uint64_t now_tsc,
		    struct batch_done *done)
{
	struct batch_slot *s = slot_of(b, keyhash);

	if (__atomic_load_n(&s->keyhash, __ATOMIC_RELAXED) != keyhash)
		return false;
	rte_spinlock_lock(&s->lock);
	if (s->keyhash != keyhash || s->out_req_id != req_id) {
		rte_spinlock_unlock(&s->lock);
		return false;
	}
	done->nriders = take_riders(b, s, done->rider);
	done->send_next = s->n > 0;
	if (done->send_next) {
		/* The newest waiting write goes out; the oldest others ride on it. */
		done->next = s->item[--s->n];
		held_add(b, -1);
		send_out(b, s, &done->next, now_tsc, &done->out);
	} else {
		__atomic_store_n(&s->keyhash, 0, __ATOMIC_RELAXED);
	}
	rte_spinlock_unlock(&s->lock);
	return true;
}

unsigned batch_sweep(struct batches *b, uint64_t now_tsc, uint64_t stale_tsc,
		     struct batch_write *alone, unsigned cap)
{
	unsigned k = 0;

	for (uint32_t i = 0; i <= b->mask; i++) {
		struct batch_slot *s = &b->slot[i];

		if (__atomic_load_n(&s->keyhash, __ATOMIC_RELAXED) == 0)
			continue;
		rte_spinlock_lock(&s->lock);
		if (s->keyhash && now_tsc - s->out_tsc > stale_tsc && k + s->n <= cap) {
			for (unsigned j = 0; j < s->n; j++)
				alone[k++] = s->item[j];
			held_add(b, -(int32_t)s->n);
			s->n = s->nriders = 0;
			give_up(s);
			__atomic_store_n(&s->keyhash, 0, __ATOMIC_RELAXED);
		}
		rte_spinlock_unlock(&s->lock);
	}
	return k;
}
