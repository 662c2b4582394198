/*
 * through.h - write-through state of directory keys at a node (docs/design.md
 * section 5, "Write-through").
 *
 * A write to a key the switch spreads over copies goes to its home, which
 * pushes the new version to the nodes holding copies before it answers. Until
 * the switch has seen that answer it still sends reads of the previous
 * version, stamped with it; so the home and every holder keep that previous
 * version (and a few before it: THROUGH_PREVIOUS) here, beside the new one
 * in RocksDB, and serve it to a read stamped with it. While the push is out,
 * the home serves any other read the previous version too: the new one is not
 * complete before the switch has seen it, and a read must never see a version
 * that a later read, stamped by the switch, would not. So the writes of a key
 * take turns: one at a time is pushed and answered. The home also keeps the
 * key's holders: the nodes the switch has copies on now (those REPLICATE
 * pushed to, and those that confirmed the last write), which the next write
 * pushes to.
 *
 * A fixed table of slots by keyhash, in memory only: a restart, or another
 * key in the same slot, forgets a key's state. That is always safe: with no
 * holders the write is not pushed (the switch's set falls back to the home,
 * which it then re-replicates), and a replica without the stamped version
 * sends the reader to the home.
 */
#ifndef SKL_THROUGH_H
#define SKL_THROUGH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define THROUGH_SLOTS	  1024 /* power of 2 */
#define THROUGH_MAX_VALUE 4096 /* larger previous values are not kept */
/*
 * Previous versions kept per key. A read waits in a busy holder's queue while
 * writes of its key pass it (their pushes go ahead, in the control lane): a
 * holder that kept only one would send it to the home once two had passed.
 * Only a read the switch stamped may get one older than the newest previous
 * (through_previous()'s depth): the switch stamps the version it has seen
 * complete when it forwards the read, so that version is linearizable however
 * late the read arrives. A HINT's stamp (an agent reading directly) is older
 * than the read itself, and an older version could be stale for it. 16
 * covers the pushes a read can wait behind at a busy copy of the hottest
 * key of a 64-node cluster. The values take THROUGH_SLOTS x 16 x
 * THROUGH_MAX_VALUE = 64 MiB of address space, of which only the pages of
 * keys written through are ever touched.
 */
#define THROUGH_PREVIOUS 16
#define THROUGH_HOLDERS	 32 /* bitmap bytes: node ids 1..255 */

struct through;

struct through *through_create(void);
void through_destroy(struct through *t);

/*
 * Keep rec (value bytes at rec->value) as keyhash's newest previous version
 * (the oldest of THROUGH_PREVIOUS kept is dropped); false when too large.
 * stamper: the switch whose stamped reads the kept versions answer at the
 * home (the owner of the copies a write-through replaced them for; 0 for
 * none: kept for a push's readers, or at a holder). Versions kept for
 * another stamper are forgotten first.
 */
bool through_keep_previous(struct through *t, uint64_t keyhash, const struct store_record *rec,
			   uint16_t stamper);
/*
 * keyhash's kept previous version that is exactly version, among the newest
 * depth of them (1..THROUGH_PREVIOUS), for a read stamped by switch stamper
 * (THROUGH_ANY_SWITCH: at a holder, or a HINT's stamp): 1 with *rec filled
 * and its value copied to buf (rec->value = buf), else 0 (also when it does
 * not fit cap, or the versions were kept for another switch's stamps: that
 * switch has not seen every write the stamper has, and a version older than
 * one a client of the stamper saw acknowledged could be stale).
 */
#define THROUGH_ANY_SWITCH 0xffffu
int through_previous(struct through *t, uint64_t keyhash, uint64_t version, unsigned depth,
		     uint16_t stamper, struct store_record *rec, uint8_t *buf, size_t cap);

/*
 * The writes of keyhash at its home take turns, and so does a REPLICATE of
 * it, each from before it reads or applies a version until its reply has
 * left (so that the switch learns the key's versions in order). take waits
 * (up to wait_ms) for the turn before to end and takes it: 1. 0 when the key
 * has no slot (no holders) and claim is not set (a REPLICATE claims one: it
 * is about to add holders), or its slot is another key's: there is no turn
 * to take. -1 when another write of the key still held the turn at the end
 * of the wait: the caller must not apply its write (readers at the home
 * still see the version before that write's push). give ends it, and the
 * push with it, and wakes the next in line.
 */
int through_turn_take(struct through *t, uint64_t keyhash, unsigned wait_ms, bool claim);
void through_turn_give(struct through *t, uint64_t keyhash);
/*
 * Group commit (docs/design.md section 13). A PUT that finds its key's turn
 * held may wait as a rider: the write holding the turn (the leader) takes
 * the riders waiting at that moment (through_riders_take()), applies each
 * after its own write within its turn, pushes only the newest version, and
 * answers for each. Every rider overlaps that moment, so ordering them back
 * to back there is a linearization, and the versions in between are never
 * read: the key's readers see the version before the leader's write until
 * the push has ended. A rider the leader does not apply (through_rider_done()
 * with applied false) waits for the turn again.
 */
enum through_rider_state { THROUGH_RIDER_WAITING, THROUGH_RIDER_TAKEN, THROUGH_RIDER_DONE };

struct through_rider {
	struct through_rider *next;
	void *write; /* the rider's own: what the leader applies and answers */
	enum through_rider_state state;
};

/*
 * through_turn_take(), queued as rider r while the turn is held: 2 once a
 * leader applied r (it answered r too), otherwise as through_turn_take().
 */
int through_turn_take_or_ride(struct through *t, uint64_t keyhash, unsigned wait_ms, bool claim,
			      struct through_rider *r);
/* Holding keyhash's turn: the riders waiting now, oldest first, taken (NULL: none). */
struct through_rider *through_riders_take(struct through *t, uint64_t keyhash);
/* The leader is done with rider r (r->next is not used after): applied, or back to waiting. */
void through_rider_done(struct through *t, uint64_t keyhash, struct through_rider *r, bool applied);

/*
 * Within a turn: the write's push is out from begin to end (or the end of
 * the turn); the home's readers see the previous version (kept first with
 * through_keep_previous()). The push ends before the write's reply leaves,
 * so that nothing the home answers after that reply (a REPLICATE's version)
 * is older than it.
 */
void through_push_begin(struct through *t, uint64_t keyhash);
void through_push_end(struct through *t, uint64_t keyhash);
/*
 * A read at the home that no kept version answers (through_previous()),
 * through switch via_switch (0: from an agent directly). While a push of
 * keyhash is out: 1 with its previous version in *rec (value copied to buf,
 * as through_previous()), which is what the home's readers see. Else 0: it
 * gets the newest version; unless via_switch is the kept versions' stamper,
 * that switch may not have seen the newest complete yet, and its stamps of
 * older ones are stale from now: the kept versions are forgotten.
 */
int through_home_read(struct through *t, uint64_t keyhash, uint16_t via_switch,
		      struct store_record *rec, uint8_t *buf, size_t cap);

/* Add nodes (a bitmap) to keyhash's holders. */
void through_holders_add(struct through *t, uint64_t keyhash, const uint8_t *holders);
/* Replace keyhash's holders with the bitmap (all zero: none). */
void through_holders_set(struct through *t, uint64_t keyhash, const uint8_t *holders);
/* Copy keyhash's holders into out; false when it has none. */
bool through_holders(struct through *t, uint64_t keyhash, uint8_t *out);

/* Forget keyhash (the switch retired it). */
void through_forget(struct through *t, uint64_t keyhash);
/*
 * Forget keyhash's kept versions, also while a write holds its turn: that
 * write pushes nothing (it bypassed the owner switch, or is a retry answered
 * from its first attempt, whose push ended before the retry got the turn),
 * and the owner's stamps, which the kept versions answer, are stale from now.
 */
void through_forget_previous(struct through *t, uint64_t keyhash);

#endif
