/*
 * repl.h - replica copies: REPLICATE (home side), RC_REQ / RC_ACK (replica
 * side), UNREPLICATE. Called by the workers (server.c; UNREPLICATE by the
 * receive thread) with a decoded, validated request; rep is the reply being
 * built (already echoing req_id, key and header fields).
 */
#ifndef SKL_NODE_REPL_H
#define SKL_NODE_REPL_H

#include "node.h"
#include "payload.h"

/*
 * Home: push RC_REQ(v) to the listed targets if the local version is exactly
 * v; the value is read into val[0..cap) (room for max_value and the RC_REQ
 * prefix), and a copy too large for one datagram goes in chunks. Within the
 * key's turn (through.h) it sends its reply to from itself, and returns
 * false; true when rep is left for the caller to send.
 */
bool repl_replicate(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		    struct wire_msg *rep, uint8_t *val, size_t cap);
/*
 * Replica: store the copy if not stale, then RC_ACK the switch; a
 * write-through push (WIRE_F_WRITE_THROUGH) is acked to its sender, the home,
 * after the copy it replaces was kept as the previous version.
 */
void repl_rc_req(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from);
/* A bypassing write waits this long for each replica to confirm its copy is gone. */
#define REPL_DROP_TRIES	  3
#define REPL_DROP_WAIT_MS 20

/*
 * Home, before applying a PUT/DEL from `from` (between store_write_begin()
 * and store_write_end()): if this home pushed copies of the key and the write
 * does not come from the owner switch that asked for them, drop every copy
 * first (UNREPLICATE at the current version, confirmed). Returns 0 (nothing to
 * do), 1 (copies dropped: call repl_notify_owner() once applied; *owner set),
 * -EAGAIN (a holder did not confirm: refuse the write, UNAVAILABLE) or -EIO.
 */
int repl_before_write(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		      uint16_t *owner);
/* Tell the owner switch of a write that bypassed it (rep: the write's reply). */
void repl_notify_owner(struct node *n, uint16_t owner, const struct wire_msg *rep);
/*
 * Home, a write's retry from `from` answered from its first attempt (rep),
 * before that answer is sent. If the key has copies and the retry did not
 * come through their owner switch (an agent went around it after a
 * timeout), the first attempt may have come through the owner, been pushed
 * to the holders, and its reply been lost on the way back: the owner would
 * go on stamping reads with the version before, which the holders keep. So
 * it is treated as a write that bypassed the owner: every copy dropped,
 * confirmed, the kept versions forgotten, the owner told. Returns 0, -EAGAIN
 * (a holder did not confirm: answer UNAVAILABLE) or -EIO.
 */
int repl_after_retry(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		     const struct wire_msg *rep);

/*
 * Home, replica groups: a read (m) is about to push the key's newest
 * version, which its write's client was refused (a member did not confirm
 * it), to the members again (nodes/server.c). No switch saw that write
 * complete, and the owner of the key's copies may go on stamping reads with
 * the version before, which the holders keep, after that read has seen the
 * new one. So, as before a write that bypasses the owner: every copy
 * dropped, confirmed, and the kept versions forgotten; *owner is set to the
 * switch to tell once the members hold the version (repl_notify_owner()),
 * 0 when the key has no copies. Returns 0, -EAGAIN (a holder did not
 * confirm: answer UNAVAILABLE) or -EIO.
 */
int repl_before_repair(struct node *n, const struct wire_msg *m, uint16_t *owner);

/*
 * Write-through, at the home, for a write through the owner switch (docs/design.md
 * section 5). The writes of a key with holders take turns: repl_through_turn()
 * waits for the previous write's turn to end (up to REPL_THROUGH_WAIT_MS plus
 * three service times) and takes it, before the write takes any lock a read
 * takes: 1; 0 when the key has no holders (and claim is not set: with
 * replica groups every write takes a turn); -1 when the wait ran out, and the
 * write must not be applied (through_turn_take()). Within the
 * turn, before applying: repl_through_begin() tells whether there are holders
 * to push to (into holders, a bitmap of THROUGH_HOLDERS bytes), and if so
 * keeps the current version as the previous one, which the home's readers see
 * until the turn ends. After applying (rep: the write's reply):
 * repl_through_push() pushes the new version to the holders, waits as long for
 * their RC_ACKs, and lists those that confirmed in rep's value (16-bit node
 * ids) with flag WIRE_F_WRITE_THROUGH, and ends the push (readers, and a
 * REPLICATE's reply, see the new version from then on). The caller sends the
 * reply, then ends the turn with repl_through_turn_end().
 */
#define REPL_THROUGH_WAIT_MS 50
int repl_through_turn(struct node *n, uint64_t keyhash, bool claim);
/* repl_through_turn() for a PUT that may ride on the write holding the turn: 2 once applied. */
int repl_through_turn_or_ride(struct node *n, uint64_t keyhash, bool claim,
			      struct through_rider *r);
/* Whether a write from `from` comes through switch `owner` (0: no copies, any sender). */
bool repl_via_owner(const struct node *n, uint16_t owner, const struct sockaddr_in *from);
/* The id of the configured switch whose address `from` is; 0 for any other sender. */
uint16_t repl_switch_id(const struct node *n, const struct sockaddr_in *from);
void repl_through_turn_end(struct node *n, uint64_t keyhash);
/* owner: the switch the write came through, whose stamps the kept version answers. */
bool repl_through_begin(struct node *n, const struct wire_msg *m, uint16_t owner, uint8_t *holders);
void repl_through_push(struct node *n, const struct wire_msg *m, uint16_t owner,
		       const uint8_t *holders, struct wire_msg *rep);

/*
 * Replica groups (members.h): within the key's turn (taken with claim),
 * before a write the primary pushes to the key's members, keep the current
 * version as the previous one, which the primary's readers see until the
 * push ends (through_push_end(), or repl_through_push() when the key has
 * holders too). false when it cannot be kept (readers then see the write
 * before its members hold it).
 */
bool repl_members_begin(struct node *n, const struct wire_msg *m);

/* Replica: drop the copy; from a home, keep its version as a floor (store_replica_drop()). */
void repl_unreplicate(struct node *n, const struct wire_msg *m, struct wire_msg *rep);

#endif
