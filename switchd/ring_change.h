/*
 * ring_change.h - ring changes at the switch (docs/design.md section 12): the
 * operator's `ring apply FILE` and `ring show`, and the change it drives.
 *
 * A stage of the control round after reconcile (order 8 in docs/design.md
 * section 11): ring_change_run() announces each step's ring epoch to the nodes
 * with RING (egress), waits for every node's answer (intake hands them in,
 * ring_change_take_reply()), removes the directory entries whose home moves
 * before a step and installs them again after it (rehome.h), and publishes
 * the step's effective ring to the workers (sw->ring, RCU).
 */
#ifndef SKL_SW_RING_CHANGE_H
#define SKL_SW_RING_CHANGE_H

#include <stddef.h>
#include <stdint.h>

struct sw;
struct wire_msg;

#define RING_CHANGE_RESEND_MS	100 /* RING again to a node that has not answered the epoch */
#define RING_CHANGE_POLL_MS		500 /* RING again to a previous home whose warm-up runs */
#define RING_CHANGE_STEP_MS		100 /* a ramp's steps at most this often: each one is a RING round */
#define RING_CHANGE_FOLLOW_RETRY_MS 1000 /* a peer's change our config file lacks: read it again */

int ring_change_init(struct sw *sw, char *err, size_t errlen);
void ring_change_fini(struct sw *sw);
/* One round of the change this switch drives, if any. */
void ring_change_run(struct sw *sw, uint64_t now_us);
/*
 * With peers, before the round's policy (daemon.c, after intake): follow a
 * peer's change from the ring fields of its SYNCs (peer.h). A switch that
 * was away catches up here, before it can hold a lease again.
 */
void ring_change_follow(struct sw *sw, uint64_t now_us);
/* A node's RING reply (intake.c). */
void ring_change_take_reply(struct sw *sw, const struct wire_msg *msg);

#endif
