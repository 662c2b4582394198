/*
 * heap.h - the simulator's event queue: a binary min-heap on time.
 *
 * Events at the same time leave in an order fixed by the heap's operations,
 * so a run is reproducible from its seed.
 */
#ifndef SKL_SIM_HEAP_H
#define SKL_SIM_HEAP_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

struct sim_ev {
	uint64_t t;   /* simulated ns */
	uint32_t arg; /* a request's index, or a node id */
	uint32_t type;
};

struct sim_heap {
	struct sim_ev *ev;
	uint32_t n, cap;
};

static inline int heap_push(struct sim_heap *h, uint64_t t, uint32_t type, uint32_t arg)
{
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? h->cap * 2 : 4096;
		struct sim_ev *ev = realloc(h->ev, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		h->ev = ev;
		h->cap = cap;
	}
	uint32_t i = h->n++;

	while (i > 0) {
		uint32_t up = (i - 1) / 2;

		if (h->ev[up].t <= t)
			break;
		h->ev[i] = h->ev[up];
		i = up;
	}
	h->ev[i] = (struct sim_ev){.t = t, .arg = arg, .type = type};
	return 0;
}

/* Remove the earliest event into *out; 0 when the heap is empty. */
static inline int heap_pop(struct sim_heap *h, struct sim_ev *out)
{
	if (h->n == 0)
		return 0;
	*out = h->ev[0];
	struct sim_ev last = h->ev[--h->n];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->ev[c + 1].t < h->ev[c].t)
			c++;
		if (last.t <= h->ev[c].t)
			break;
		h->ev[i] = h->ev[c];
		i = c;
	}
	if (h->n)
		h->ev[i] = last;
	return 1;
}

#endif
