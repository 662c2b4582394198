/*
 * ttl.c - expiry sampler and tombstone GC, on one background thread.
 *
 * Every node.ttl_sample_ms (100) the sampler takes node.ttl_sample_keys (20)
 * keys with the earliest expiry and deletes the expired ones; while more than
 * 25% of the sample was expired it samples again at once (as Redis does),
 * bounded to 16 rounds so GC and shutdown are never starved. Then tombstones
 * older than node.tombstone_gc_s are collected, 1000 at most per period.
 * Removal raises the version floor in the same write batch (store.c), so a
 * key re-created later still gets a higher version.
 */
#include "ttl.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "log.h"

#define TTL_MAX_REPEATS	  16
#define GC_MAX_PER_PERIOD 1000

static void ttl_period(struct node *n)
{
	const struct cfg_node_params *p = &n->cfg->node;
	uint32_t visited, removed;

	for (int i = 0; i < TTL_MAX_REPEATS && !atomic_load(&n->stop_bg); i++) {
		if (store_expire_round(n->store, store_now_ms(), p->ttl_sample_keys, &visited,
				       &removed) != 0) {
			log_warn("TTL sampler: store error");
			break;
		}
		node_count_n(n, NODE_CTR_ttl_expired, removed);
		if ((uint64_t)removed * 4 <= p->ttl_sample_keys)
			break;
	}
	uint64_t now = store_now_ms(), age = (uint64_t)p->tombstone_gc_s * 1000;

	if (now > age && store_gc_round(n->store, now - age, GC_MAX_PER_PERIOD, &removed) == 0)
		node_count_n(n, NODE_CTR_tombstones_gc, removed);
}

static void *ttl_main(void *arg)
{
	struct node *n = arg;
	uint32_t period_ms = n->cfg->node.ttl_sample_ms, slept = 0;

	/* Sleep in slices of at most 50 ms so that a stop is seen quickly. */
	while (!atomic_load(&n->stop_bg)) {
		uint32_t slice = period_ms - slept < 50 ? period_ms - slept : 50;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)slice * 1000000};

		nanosleep(&ts, NULL);
		slept += slice;
		if (slept >= period_ms && !atomic_load(&n->stop_bg)) {
			ttl_period(n);
			slept = 0;
		}
	}
	return NULL;
}

int ttl_start(struct node *n)
{
	return -pthread_create(&n->ttl_thread, NULL, ttl_main, n);
}

void ttl_stop(struct node *n)
{
	atomic_store(&n->stop_bg, true);
	pthread_join(n->ttl_thread, NULL);
}
