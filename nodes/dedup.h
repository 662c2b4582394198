/*
 * dedup.h - at-most-once writes. An agent retries a PUT or DEL that timed out
 * with the same req_id; if the first attempt was applied after all, applying
 * the retry too would write the value twice under two versions, and a reader
 * could see it, another write, then it again. The home remembers the outcome
 * of recent writes by req_id and answers a retry with it instead.
 *
 * Outcomes are partitioned by key stripe, and a stripe's lock is held across
 * the check and the write, so a retry racing its first attempt waits for it.
 * Each stripe keeps the outcomes of its last DEDUP_SLOTS_PER_STRIPE writes,
 * oldest out first, so a retry is known until that many writes of the
 * stripe's keys came after it (an agent retries within its timeout; at 256
 * writes that is over 2 s even for one key written 100 times a second). The
 * memory is bounded: a retry later than that is applied again, as it would
 * be after a restart.
 */
#ifndef SKL_NODE_DEDUP_H
#define SKL_NODE_DEDUP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define DEDUP_STRIPES 64
#define DEDUP_SLOTS_PER_STRIPE 256

struct dedup_slot {
	uint64_t req_id;
	uint64_t keyhash;
	uint64_t version;
	uint8_t status;
	uint8_t used;
};

struct dedup_stripe {
	pthread_mutex_t lock;
	unsigned next; /* the slot the next outcome takes: the oldest */
	struct dedup_slot slot[DEDUP_SLOTS_PER_STRIPE];
};

struct dedup {
	struct dedup_stripe stripe[DEDUP_STRIPES];
};

void dedup_init(struct dedup *d);
void dedup_fini(struct dedup *d);

/*
 * Lock keyhash's stripe. Returns the remembered outcome of req_id's write to
 * this key, or NULL when it has not been applied. dedup_end() must follow.
 */
const struct dedup_slot *dedup_begin(struct dedup *d, uint64_t req_id, uint64_t keyhash);
/*
 * Between dedup_begin() and dedup_end() of a PUT from a switch that carries
 * riders (the req_ids of the writes it supersedes, wire.h: 8 bytes each,
 * oldest first): whether any of the k was applied already, and, once it is
 * applied, remembering each, the i-th at version first + i, so that a retry
 * of a rider gets the version its switch answered.
 */
bool dedup_riders_known(struct dedup *d, uint64_t keyhash, const uint8_t *ids, uint8_t k);
void dedup_keep_riders(struct dedup *d, uint64_t keyhash, const uint8_t *ids, uint8_t k,
		       uint64_t first);
/* Remember the outcome (when applied: dedup_begin() found none) and unlock the stripe. */
void dedup_end(struct dedup *d, uint64_t req_id, uint64_t keyhash, bool applied, uint8_t status,
	       uint64_t version);

/*
 * Across a ring change (docs/design.md section 12) a key's writes move with
 * it: the previous home hands the outcomes it remembers for the key to the
 * new home with the record (FETCH, MIGRATE), so that a write retried across
 * the cut-over is answered there with its first attempt's outcome, not
 * applied a second time.
 */
struct dedup_write {
	uint64_t req_id;
	uint64_t version;
	uint8_t status;
};

/* Up to max remembered writes of keyhash, highest version first; how many. */
unsigned dedup_of_key(struct dedup *d, uint64_t keyhash, struct dedup_write *out, unsigned max);
/* Remember a write another node applied to keyhash, as if applied here. */
void dedup_remember(struct dedup *d, uint64_t keyhash, const struct dedup_write *w);

#endif
