/*
 * hot.h - hot-key detection for the coherence directory (docs/design.md section 5).
 *
 * The control thread owns a struct hot_detector: fast-path lcores hand it
 * sampled request keys (through an rte_ring, see intake_sample() in
 * intake.c), it counts their keyhashes in DPDK's count-min sketch with
 * top-K (rte_member, sketch mode) and remembers the key bytes of keys that have been seen often enough to
 * matter. Once per epoch hot_epoch() reports the hot set: the top K keys whose
 * share of the epoch's samples clears a noise floor, each with the number of
 * replicas its share calls for, and the keys that have now been cold for
 * `retire_epochs` epochs in a row. Single-threaded by design: only the
 * control thread calls any of this.
 */
#ifndef SKL_SW_HOT_H
#define SKL_SW_HOT_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "wire.h"

/* Keys longer than this are counted but never installed (their REPLICATE
 * would not fit the datagram budget anyway). */
#define HOT_MAX_KEY 256
/* Key bytes remembered per epoch: a bound on the candidate table. */
#define HOT_MAX_NAMES 4096
#define HOT_MAX_TOP   1024

struct hot_key {
	uint64_t keyhash;
	uint64_t count;	   /* samples this epoch */
	double share;	   /* count / samples this epoch */
	double write_share; /* of its samples this epoch, the writes (PUT, DEL) */
	uint16_t share_replicas; /* what its share alone asks for (hot_replicas_for_share()) */
	uint16_t replicas; /* how many nodes should serve it, home included: share_replicas,
			    * or 1 where its writes make copies cost more than they give
			    * (hot_replicas_for_writes()) */
	uint16_t key_len;
	uint8_t key[HOT_MAX_KEY];
};

struct hot_report {
	uint64_t epoch;
	uint64_t samples; /* samples counted in the epoch that ended */
	uint32_t nhot;
	struct hot_key hot[HOT_MAX_TOP]; /* hottest first */
	uint32_t nretired;
	uint64_t retired[HOT_MAX_TOP]; /* keyhashes cold for retire_epochs epochs */
};

struct hot_detector;

/* NULL and errno set on failure. socket: NUMA socket for the sketch. */
struct hot_detector *hot_create(const struct cfg *cfg, int socket);
void hot_free(struct hot_detector *h);

/* Count one sampled request key; write: the request was a PUT or DEL. */
void hot_observe(struct hot_detector *h, uint64_t keyhash, const uint8_t *key, uint16_t len,
		 bool write);

/* Forget a key the directory no longer holds (unpinned by hand, say). */
void hot_forget(struct hot_detector *h, uint64_t keyhash);

/* End the epoch: fill *out, reset the sketch for the next one. */
void hot_epoch(struct hot_detector *h, struct hot_report *out);

/*
 * Replicas for a key with this share of load among n nodes:
 * 1 + ceil(factor * share * n), within 1..max_replicas and <= n.
 */
uint16_t hot_replicas_for_share(double share, uint32_t nnodes, uint32_t max_replicas,
				double factor);

/*
 * The share hot_replicas_for_share() reads from a want of replicas: (R - 1) /
 * (factor * n), 0 for one replica. For a key whose share is not measured (a
 * pin, a peer's), so that its replicas weigh as the sizing rule meant them.
 */
double hot_share_for_replicas(unsigned replicas, uint32_t nnodes, double factor);

/*
 * Whether copies of a hot key pay for its writes (docs/design.md section 13,
 * "Copies only where they pay"). With r copies, the home among them, every
 * write costs the home the write and the wait for its push to the others
 * (push_cost writes' worth) and every other copy one write; reads divide over
 * the r. The busiest copy is the home: write_share (1 + push_cost) +
 * (1 - write_share) / r of what the key alone brings it. Returns replicas
 * when that is at most HOT_COPIES_PAY, else 1: the key stays at its home.
 * write_share is the fraction of the key's requests that are writes.
 */
uint16_t hot_replicas_for_writes(uint16_t replicas, double write_share, double push_cost);

#endif
