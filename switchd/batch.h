/*
 * batch.h - group commit of a directory key's PUTs at the switch
 * (docs/design.md section 5, "Hot writes").
 *
 * A directory key has at most one PUT out at its home from this switch at a
 * time. PUTs of the key that arrive meanwhile are held here. When the write
 * out is answered, the newest held PUT goes out, carrying how many of the
 * others it supersedes (its riders, wire field `riders`): the home stores
 * its value once, under a version that many above the one before, and says
 * so in its reply; each rider is then answered with a version of its own
 * just below it, oldest first. The held writes all overlap that moment, so
 * ordering them back to back there is a linearization, and nothing is
 * answered before the write that supersedes it is acknowledged (on every
 * live member of its group): a rider's value is never read because no read
 * falls between it and the write after it.
 *
 * A reply that does not give the riders their versions (the PUT was a retry
 * the home answered from its first attempt) sends them out again with the
 * next batch; a failed one answers them as it answers its own client. A
 * write out that is not answered within `stale_tsc` is given up: its riders
 * are dropped (their agents retry, as the writer's does) and the next batch
 * goes out.
 *
 * Slots are found by keyhash (a key whose slot another key holds is not
 * batched), apart from the directory's entries, so a reply still finds its
 * batch after the entry is gone. Each is locked with a spinlock: any worker
 * may take a PUT or its reply. The caller sends and frees what the calls
 * return; nothing here touches a port.
 */
#ifndef SKL_SWITCHD_BATCH_H
#define SKL_SWITCHD_BATCH_H

#include <stdbool.h>
#include <stdint.h>

struct rte_mbuf;

/* PUTs of one key held at once, at most (riders fit the wire's byte); one more goes out unbatched. */
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

struct batches;

/* keys: the directory's size; max_held: PUTs held at once over all keys. */
struct batches *batches_create(uint32_t keys, uint32_t max_held);
void batches_destroy(struct batches *b);

enum batch_verdict {
	BATCH_SEND, /* send it now, with *riders riders */
	BATCH_HELD, /* held: it goes with the next batch */
};

/*
 * A PUT of the directory key `keyhash`. Held when a write of the
 * key is out and there is room; otherwise it goes out (*riders: the held
 * writes it supersedes, when it replaces a write out for longer than
 * stale_tsc; 0 otherwise). Writes it takes from the slot to be dropped go to
 * drop[0..*ndrop) (at most BATCH_MAX).
 */
enum batch_verdict batch_put(struct batches *b, uint64_t keyhash, const struct batch_write *wr,
			      uint64_t now_tsc, uint64_t stale_tsc,
			     uint8_t *riders, struct rte_mbuf **drop, unsigned *ndrop);

/* What the reply to the write out asks of the caller. */
struct batch_done {
	struct batch_write answer[BATCH_MAX]; /* riders to answer, oldest first */
	unsigned nanswer;
	uint8_t first_gap;  /* answer[i] gets the reply's version - first_gap + i */
	bool send_next;	    /* next goes out now, with next_riders riders */
	uint8_t next_riders;
	struct batch_write next;
};

/*
 * A reply to a PUT of `keyhash`: false when it answers no
 * write out (nothing to do). ok: it was applied; riders: how many versions
 * the home gave its riders. With ok and every rider given a version, *done
 * lists them to answer OK with their versions; with ok and none, they wait
 * for the next batch; without ok, they are answered as the reply answers its
 * own client.
 */
bool batch_answered(struct batches *b, uint64_t keyhash, uint64_t req_id, bool ok, uint8_t riders,
		    uint64_t now_tsc, struct batch_done *done);

/*
 * Give up the batches whose write has been out for longer than stale_tsc
 * and that no PUT of their key has since replaced (batch_put()): their writes
 * go to drop[0..return) (at most cap), to be freed. Their agents retry.
 */
unsigned batch_sweep(struct batches *b, uint64_t now_tsc, uint64_t stale_tsc,
		     struct rte_mbuf **drop, unsigned cap);

/* PUTs held now, over every key (for the `batch_held` gauge). */
uint32_t batch_held(const struct batches *b);

#endif
