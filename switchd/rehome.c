/*
 * rehome.c - entries whose home moves in a ring step: out before the step,
 * in again after it (see rehome.h).
 */
#include "rehome.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile.h"
#include "switchd.h"

/* A key removed because its home moves in a ring change, to be installed again. */
struct rehome_moved {
	uint64_t keyhash;
	uint16_t key_len;
	uint8_t pinned, want;
	uint8_t key[WIRE_MAX_KEY];
};

struct rehome {
	uint32_t nmoved, moved_cap;
	struct rehome_moved *moved; /* rehome_remove() -> rehome_install() */
};

/* rehome_remove()'s predicate, for reconcile_collect(). */
struct rehome_moves {
	bool (*moves)(void *arg, uint64_t keyhash);
	void *arg;
};

/* A key of ours whose home moves in the step. */
static bool own_moving(struct sw *sw, struct cdt_entry *e, void *arg)
{
	const struct rehome_moves *m = arg;

	(void)sw;
	return e->owner == 0 && m->moves(m->arg, e->keyhash);
}

int rehome_init(struct sw *sw, char *err, size_t errlen)
{
	sw->rehome = calloc(1, sizeof(*sw->rehome));
	if (!sw->rehome) {
		snprintf(err, errlen, "out of memory for the directory manager");
		return -1;
	}
	return 0;
}

void rehome_fini(struct sw *sw)
{
	if (sw->rehome)
		free(sw->rehome->moved);
	free(sw->rehome);
	sw->rehome = NULL;
}

uint32_t rehome_remove(struct sw *sw, bool (*moves)(void *arg, uint64_t keyhash), void *arg)
{
	struct rehome *r = sw->rehome;
	struct rehome_moves pick = {.moves = moves, .arg = arg};
	const uint64_t *gone;
	uint32_t n, removed = 0;
	struct cdt_entry *e;

	reconcile_hold(sw, moves, arg);
	n = reconcile_collect(sw, own_moving, &pick, &gone);
	if (r->moved_cap < r->nmoved + n) {
		struct rehome_moved *m = realloc(r->moved, (r->nmoved + n) * sizeof(*m));

		if (!m)
			return 0;
		r->moved = m;
		r->moved_cap = r->nmoved + n;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct rehome_moved *m = &r->moved[r->nmoved];
		const uint8_t *key;

		e = cdt_find(sw->cdt, gone[i]);
		if (!e)
			continue;
		key = cdt_entry_key(sw->cdt, e, &m->key_len);
		memcpy(m->key, key, m->key_len);
		m->keyhash = gone[i];
		m->pinned = e->pinned;
		m->want = e->want_replicas;
		if (reconcile_remove(sw, e) == 0) {
			r->nmoved++;
			removed++;
		}
	}
	return removed;
}

uint32_t rehome_install(struct sw *sw)
{
	struct rehome *r = sw->rehome;
	uint32_t done = 0;

	/* The step is published: every home is the workers' ring's. */
	reconcile_hold(sw, NULL, NULL);
	for (uint32_t i = 0; i < r->nmoved; i++) {
		struct rehome_moved *m = &r->moved[i];
		struct cdt_entry *e =
		    reconcile_install(sw, m->keyhash, m->key, m->key_len, m->want, 0);

		if (e) {
			e->pinned = m->pinned;
			done++;
		}
	}
	r->nmoved = 0;
	return done;
}
