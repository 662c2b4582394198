/*
 * batch.h - group commit of a directory key's PUTs at the switch
 * (docs/design.md section 5, "Hot writes").
 *
 * A directory key has at most one PUT out at its home from this switch at a
 * time. PUTs of the key that arrive meanwhile are held here. When the write
 * out is answered, the newest held PUT goes out, carrying how many of the
 * others it supersedes (its riders: wire field `riders`, their req_ids
 * after its value): the home stores its value once, under a version that
 * many above the one before, remembers each rider's req_id at its own
 * version just below, and says so in its reply; each rider is then
 * answered with that version, oldest first. The held writes all overlap
 * that moment, so ordering them back to back there is a linearization, and
 * nothing is answered before the write that supersedes it is acknowledged
 * (on every live member of its group): a rider's value is never read
 * because no read falls between it and the write after it.
 *
 * A reply that does not give the riders their versions (the write failed,
 * or it or one of them was applied before) has each rider sent on its own,
 * as it came. A write out that is not answered within `stale_tsc` is given
 * up: its riders are sent on their own too (the home answers any it applied
 * from its dedup table) and the next batch goes out.
 *
 * Slots are found by keyhash (a key whose slot another key holds is not
 * batched), apart from the directory's entries, so a reply still finds its
 * batch after the entry is gone. Each is locked with a spinlock: any worker
 * may take a PUT or its reply. The caller sends what the calls return;
 * nothing here touches a port.
 */
#ifndef SKL_SWITCHD_BATCH_H
#define SKL_SWITCHD_BATCH_H

#include <stdbool.h>
#include <stdint.h>

struct rte_mbuf;

/* PUTs of one key held at once, at most (riders fit a byte); one more goes out alone. */
#define BATCH_MAX 255
/* Slots, at most: keys whose slot another key holds are not batched. */
#define BATCH_SLOTS 1024u

/* A PUT as the switch holds it: what answering it or sending it needs. */
struct batch_write {
	struct rte_mbuf *m;
	uint64_t req_id;
	uint16_t in_port; /* where it came from: its answer goes back there */
	uint16_t l3_off;  /* its IPv4 header's offset in the frame */
};

/* The riders of a write sent out: their req_ids, oldest first, go after its value. */
struct batch_riders {
	uint8_t n;
	uint64_t req_id[BATCH_MAX];
};

struct batches;

/*
 * keys: the directory's size; max_held: PUTs held at once over all keys;
 * max_frame: the longest frame a write with its riders' req_ids may make.
 */
struct batches *batches_create(uint32_t keys, uint32_t max_held, uint32_t max_frame);
void batches_destroy(struct batches *b);

enum batch_verdict {
	BATCH_SEND,	 /* send it now, with the riders *out names */
	BATCH_HELD,	 /* held: it goes with the next batch */
	BATCH_DUPLICATE, /* a retry of a held PUT, which will be answered: free it */
};

/*
 * A PUT of the directory key `keyhash`. Held when a write of the key is out
 * and there is room; otherwise it goes out, with riders (*out) when it
 * replaces a write out for longer than stale_tsc (the waiting ride on it),
 * none otherwise. Writes it takes from the slot, to be sent on their own,
 * go to alone[0..*nalone) (at most BATCH_MAX + 1).
 */
enum batch_verdict batch_put(struct batches *b, uint64_t keyhash, const struct batch_write *wr,
			     uint64_t now_tsc, uint64_t stale_tsc, struct batch_riders *out,
			     struct batch_write *alone, unsigned *nalone);

/* What the reply to the write out asks of the caller. */
struct batch_done {
	struct batch_write rider[BATCH_MAX]; /* the write's riders, oldest first */
	unsigned nriders;
	bool send_next; /* next goes out now, with the riders out names */
	struct batch_write next;
	struct batch_riders out;
};

/*
 * A reply to a PUT of `keyhash`: false when it answers no write out
 * (nothing to do). Otherwise *done has the write's riders, for the caller to
 * answer (each with its own version, when the reply gave them all one) or to
 * send on their own, and the next write to send.
 */
bool batch_answered(struct batches *b, uint64_t keyhash, uint64_t req_id, uint64_t now_tsc,
		    struct batch_done *done);

/*
 * Give up the batches whose write has been out for longer than stale_tsc
 * and that no PUT of their key has since replaced (batch_put()): their writes
 * go to alone[0..return) (at most cap), to be sent on their own.
 */
unsigned batch_sweep(struct batches *b, uint64_t now_tsc, uint64_t stale_tsc,
		     struct batch_write *alone, unsigned cap);

#endif
