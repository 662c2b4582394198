/*
 * decide.c - the local policy (hot-key epochs) and the peer policy (leases,
 * cluster hot set) of the control round; see decide.h.
 */
#include "decide.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer_sync.h"
#include "switchd.h"

struct decide {
	struct hot_report *report; /* the last epoch's, handed to reconcile */
	uint64_t next_epoch_us;
};

int decide_init(struct sw *sw, char *err, size_t errlen)
{
	struct decide *d = calloc(1, sizeof(*d));

	if (!d) {
		snprintf(err, errlen, "out of memory for the directory manager");
		return -1;
	}
	sw->decide = d;
	sw->hot = hot_create(sw->cfg, SOCKET_ID_ANY);
	d->report = calloc(1, sizeof(*d->report));
	if (!sw->hot || !d->report) {
		snprintf(err, errlen, "cannot create the hot-key detector: %s",
			 rte_strerror(rte_errno ? rte_errno : ENOMEM));
		return -1;
	}
	return 0;
}

void decide_fini(struct sw *sw)
{
	struct decide *d = sw->decide;

	hot_free(sw->hot);
	sw->hot = NULL;
	if (!d)
		return;
	free(d->report);
	free(d);
	sw->decide = NULL;
}

/* The lease rule and the cluster hot set. */
static void peer_policy(struct sw *sw, uint64_t now_us, struct reconcile_want *want)
{
	struct peer_sync_lease lease;
	bool fresh;

	peer_sync_lease(sw, now_us, &lease);
	want->leased = lease.held;
	want->lease_lost = lease.lost;
	want->lease_back = lease.back;
	want->lease_until_us = lease.until_us;
	fresh = peer_sync_claims_fresh(sw);
	if (peer_sync_tick(sw, now_us)) {
		want->sync_tick = true;
		return;
	}
	want->claims_fresh = fresh;
}

/* Every epoch_ms: the epoch's hot set (directory on); with peers, into our pending window. */
static void local_policy(struct sw *sw, uint64_t now_us, struct reconcile_want *want)
{
	struct decide *d = sw->decide;

	if (now_us < d->next_epoch_us)
		return;
	d->next_epoch_us = now_us + (uint64_t)sw->cfg->directory.epoch_ms * 1000u;
	want->repair = true;
	if (!__atomic_load_n(&sw->dir_on, __ATOMIC_RELAXED))
		return;
	hot_epoch(sw->hot, d->report);
	if (peer_sync_on(sw))
		peer_sync_add_epoch(sw, d->report);
	want->epoch = d->report;
}

void decide_run(struct sw *sw, uint64_t now_us, struct reconcile_want *want)
{
	memset(want, 0, sizeof(*want));
	/* Peers first: an epoch's keys join the window after this round's tick. */
	if (peer_sync_on(sw))
		peer_policy(sw, now_us, want);
	local_policy(sw, now_us, want);
}
