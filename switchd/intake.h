/*
 * intake.h - what the workers hand the control thread, taken in: the first
 * stage of the control round.
 *
 * Workers fill rings and never wait on the control thread:
 *   digests      DIGEST frames from nodes (sw->digest_ring);
 *   syncs        SYNC frames from peer switches (sw->sync_ring);
 *   samples      every directory.sample_every-th request's key (intake_sample);
 *   completions  write completions of directory keys (intake_completed), so
 *                re-replication of the new version follows the write at once
 *                (the worker also wakes the control thread: sw->wake_fd);
 *   decisions    decision-log records while `debug on` (sw->log_ring);
 *   addresses    IPv4 addresses workers want resolved (sw->arp_ring).
 * Once per round intake_run() puts digests into the health table (failure
 * detection), SYNC values into the peer state, samples into the hot-key
 * detector (sw->hot), completions into reconcile's queue, decision logs into
 * the lines `debug show` prints and addresses into ARP requests (egress);
 * then it publishes each node's score (own digests, or a peer's when ours
 * are stale) and, every second, forgets the in-flight requests whose replies
 * were lost. It owns the node rows: `nodes`, /skewless/nodes, and `debug`.
 * Control thread only, except intake_sample() and intake_completed(), which
 * workers call.
 */
#ifndef SKL_SW_INTAKE_H
#define SKL_SW_INTAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sw;
struct sw_worker;
struct wire_msg;

int intake_init(struct sw *sw, char *err, size_t errlen);
void intake_fini(struct sw *sw);

/* The intake stage of a control round. now_tsc: TSC, now_us: CLOCK_MONOTONIC. */
void intake_run(struct sw *sw, uint64_t now_tsc, uint64_t now_us);

/* Digests taken into the health table since start. */
uint64_t intake_digests_received(const struct sw *sw);

/*
 * Worker: a sampled request key (best effort; a full ring drops the sample).
 * rider: a PUT held for group commit (batch.h), which costs its home no
 * write of its own: not counted as a write.
 */
void intake_sample(struct sw_worker *w, const struct wire_msg *msg, bool rider);
/* Worker: a write to a directory key completed at version. */
void intake_completed(struct sw_worker *w, uint64_t keyhash, uint64_t version);

#endif
