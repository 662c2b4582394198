/*
 * timerwheel.h - a hashed timer wheel for request timeouts.
 *
 * Timers are intrusive (embedded in the agent's request slots), so arming and
 * cancelling are O(1) and allocate nothing. Time is cut into ticks of tick_ns;
 * a timer sits in slot (expiry tick mod nslots) and fires on the first
 * tw_advance() that reaches its tick, never earlier. Deadlines further away
 * than one turn of the wheel wait in their slot for the later turn.
 */
#ifndef SKL_TIMERWHEEL_H
#define SKL_TIMERWHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tw_timer {
	struct tw_timer *next, *prev; /* NULL when not armed */
	uint64_t expires;	      /* tick */
};

struct timerwheel {
	uint64_t tick_ns;
	uint64_t now_tick; /* every tick <= now_tick has been processed */
	uint32_t mask;	   /* nslots - 1 */
	size_t armed;
	struct tw_timer *slots; /* nslots list heads (sentinels) */
};

typedef void (*tw_fire_fn)(struct tw_timer *t, void *arg);

/* nslots is rounded up to a power of two. Returns 0 or -ENOMEM / -EINVAL. */
int tw_init(struct timerwheel *tw, uint64_t tick_ns, uint32_t nslots, uint64_t now_ns);
void tw_free(struct timerwheel *tw);

/* Arm t (cancelling it first if armed) to fire at or after expires_ns. */
void tw_add(struct timerwheel *tw, struct tw_timer *t, uint64_t expires_ns);
/* Disarm t; harmless if it is not armed. */
void tw_cancel(struct timerwheel *tw, struct tw_timer *t);

static inline bool tw_armed(const struct tw_timer *t)
{
	return t->next != NULL;
}

/*
 * Process every tick up to now_ns and call fire(t, arg) for each timer that
 * expired, after unlinking it (fire may re-arm it or arm others). Returns the
 * number fired.
 */
size_t tw_advance(struct timerwheel *tw, uint64_t now_ns, tw_fire_fn fire, void *arg);

/* Earliest time (ns) at which some armed timer may fire; UINT64_MAX if none. */
uint64_t tw_next_ns(const struct timerwheel *tw);

#endif
