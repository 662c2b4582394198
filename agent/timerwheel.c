/*
 * timerwheel.c - hashed timer wheel (see timerwheel.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "timerwheel.h"

int tw_init(struct timerwheel *tw, uint64_t tick_ns, uint32_t nslots, uint64_t now_ns)
{
	uint32_t n = 1;

	if (tick_ns == 0 || nslots == 0 || nslots > (1u << 24))
		return -EINVAL;
	while (n < nslots)
		n <<= 1;
	tw->slots = calloc(n, sizeof(*tw->slots));
	if (!tw->slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		tw->slots[i].next = tw->slots[i].prev = &tw->slots[i];
	tw->tick_ns = tick_ns;
	tw->now_tick = now_ns / tick_ns;
	tw->mask = n - 1;
	tw->armed = 0;
	return 0;
}

void tw_free(struct timerwheel *tw)
{
	free(tw->slots);
	tw->slots = NULL;
}

void tw_cancel(struct timerwheel *tw, struct tw_timer *t)
{
	if (!t->next)
		return;
	t->prev->next = t->next;
	t->next->prev = t->prev;
	t->next = t->prev = NULL;
	tw->armed--;
}

void tw_add(struct timerwheel *tw, struct tw_timer *t, uint64_t expires_ns)
{
	/* Round up: a timer must never fire before its deadline. */
	uint64_t tick = (expires_ns + tw->tick_ns - 1) / tw->tick_ns;
	struct tw_timer *head;

	tw_cancel(tw, t);
	if (tick <= tw->now_tick)
		tick = tw->now_tick + 1;
	t->expires = tick;
	head = &tw->slots[tick & tw->mask];
	t->next = head->next;
	t->prev = head;
	head->next->prev = t;
	head->next = t;
	tw->armed++;
}

size_t tw_advance(struct timerwheel *tw, uint64_t now_ns, tw_fire_fn fire, void *arg)
{
	uint64_t target = now_ns / tw->tick_ns;
	uint64_t span, fired = 0;

	if (target <= tw->now_tick)
		return 0;
	/* A jump longer than one turn visits each slot once, firing all that are due. */
	span = target - tw->now_tick;
	if (span > (uint64_t)tw->mask + 1)
		span = (uint64_t)tw->mask + 1;
	for (uint64_t i = 1; i <= span && tw->armed; i++) {
		struct tw_timer *head = &tw->slots[(tw->now_tick + i) & tw->mask];
		struct tw_timer *due = NULL, *t, *next;

		/* Detach the due timers first so that fire() may arm or cancel freely. */
		for (t = head->next; t != head; t = next) {
			next = t->next;
			if (t->expires <= target) {
				tw_cancel(tw, t);
				t->next = due; /* reuse next as the due-list link */
				due = t;
			}
		}
		while (due) {
			t = due;
			due = t->next;
			t->next = NULL;
			fire(t, arg);
			fired++;
		}
	}
	tw->now_tick = target;
	return fired;
}

uint64_t tw_next_ns(const struct timerwheel *tw)
{
	uint64_t best = UINT64_MAX;

	if (!tw->armed)
		return UINT64_MAX;
	/* The first non-empty slot ahead holds the nearest tick of this turn; timers
	 * of later turns in it are not due, so keep the minimum over that slot. */
	for (uint64_t i = 1; i <= (uint64_t)tw->mask + 1; i++) {
		const struct tw_timer *head = &tw->slots[(tw->now_tick + i) & tw->mask];

		for (const struct tw_timer *t = head->next; t != head; t = t->next)
			if (t->expires < best)
				best = t->expires;
		if (best <= tw->now_tick + i)
			break;
	}
	return best * tw->tick_ns;
}
