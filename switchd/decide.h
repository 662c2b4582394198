/*
 * decide.h - the policies of the control round: which keys the directory
 * should hold (docs/design.md sections 5 and 7).
 *
 * Second stage of the control round, after intake (which has fed the hot-key
 * detector, sw->hot, and the peer state, sw->peer_sync, this round):
 *   local policy  every directory.epoch_ms, with the directory on, the
 *                 epoch ends (hot_epoch): its hot keys, each with the
 *                 replicas its share of load calls for, and the keys cold
 *                 for retire_epochs epochs; with peers the hot keys join
 *                 this switch's pending window instead of being installed;
 *   peer policy   (with peers) the lease rule (all leases held or not, and
 *                 the transitions), the sync tick (our window closes, the
 *                 cluster hot set is recomputed) or, between ticks, the hot
 *                 set recomputed when a peer's window changed.
 * The result is a struct reconcile_want for reconcile.h, which alone changes the
 * CDT. Control thread only.
 */
#ifndef SKL_SW_DECIDE_H
#define SKL_SW_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "reconcile.h"

struct sw;

/* The hot-key detector (sw->hot) and the epoch clock. */
int decide_init(struct sw *sw, char *err, size_t errlen);
void decide_fini(struct sw *sw);

/* The decide stage of a control round: fill *want (valid until the next call). */
void decide_run(struct sw *sw, uint64_t now_us, struct reconcile_want *want);

#endif
