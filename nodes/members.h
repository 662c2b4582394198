/*
 * members.h - this node's side of replica groups (docs/design.md section 13,
 * docs/protocol.md "Replica groups"), with service.replicas R above 1.
 *
 * A key's group is its ring home and the next R - 1 nodes (proto/group.h).
 * The switch publishes views (VIEW): which nodes are down, which are
 * catching up. A key's primary is the first member of its group the view
 * marks neither; only the primary serves the key's reads and writes, and it
 * answers a write once every member the view does not mark down holds it
 * (MEMBER). A node starts catching up: it serves nothing, takes pushes, and
 * reads every record of its groups from the other nodes (CATCHUP) before it
 * says it is caught up; the switch then publishes a view that marks it up.
 * A view that marks a serving node down or catching up sends it back to
 * catching up. A view that leaves a dead node out of the groups (repair)
 * marks the nodes that gain its groups joining: each keeps serving its
 * own groups and takes the new ones' records the same way (JOINING, then
 * JOINED) before it serves them. Views only grow: a push from an older
 * view than the node's is refused, so a member the switch has skipped
 * cannot have a write acknowledged in its old role.
 *
 * Data ops hold the view lock for reading from the primary check to the
 * reply (members_read_lock()); a new view takes it for writing, so it waits
 * for every write in flight under the old one.
 *
 * View leases (service.view_lease_ms): the node serves reads only within a
 * lease, which runs for view_lease_ms from its answer to a VIEW that a
 * later VIEW names (the publisher heard that answer; it publishes no view
 * that marks this node down before the lease ends). A node cut off from
 * the switch stops serving reads before another can serve its keys;
 * writes need no lease (a member that holds a newer view refuses their
 * push).
 */
#ifndef SKL_NODE_MEMBERS_H
#define SKL_NODE_MEMBERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "group.h"
#include "ring.h"
#include "wire.h"

struct node;

#define MEMBERS_SCAN_STEP 256 /* owned records a CATCHUP request visits at most */
#define MEMBERS_RETRY_MS  100 /* between catch-up passes over sources that did not answer */
#define MEMBERS_DIRTY_SETS 16384 /* 4-way sets of dirty keys (members_clean()) */
#define MEMBERS_DIRTY_WAYS 4
/*
 * A mark older than this is a write whose COMMIT never came (lost, or the
 * write not acknowledged); the primary serves that version too. Until then
 * the member sends the key's reads to the primary. Twice the longest push to
 * four members (MIGNET_TRIES x MIGNET_WAIT_MS each, one after another), and
 * well inside an agent's deadline.
 */
#define MEMBERS_DIRTY_MS 500

/*
 * Keys this primary holds a version of that a member the view does not mark
 * down may lack: their last push was not confirmed (the write was answered
 * UNAVAILABLE). Such a member still serves the version before as clean, so
 * the primary serves the key again only once a push of it is confirmed
 * (members_behind()). 4-way sets of keyhashes; a full set keeps no mark
 * (counted: member_behind_full).
 */
#define MEMBERS_BEHIND_SETS 4096
#define MEMBERS_BEHIND_WAYS 4
/* Answers to VIEWs remembered, for the lease a later VIEW grants from one. */
#define MEMBERS_ANSWERS 32

struct members {
	unsigned r; /* service.replicas; 1: every key on its home alone, nothing here runs */
	struct ring ring;
	pthread_rwlock_t lock; /* readers: data ops; writer: a new view */
	struct wire_view view; /* number 0: none yet */
	_Atomic uint64_t number;
	_Atomic int state;	     /* enum wire_view_state */
	uint64_t caught_up_at;	     /* the view held when the catch-up ended */
	_Atomic uint32_t restarts;   /* views that sent this node back to catching up */
	_Atomic uint32_t sources_left;
	_Atomic uint64_t records;
	pthread_t thread;
	bool started;
	struct members_dirty {
		pthread_mutex_t lock;
		struct {
			uint64_t keyhash, version, since_ms;
		} way[MEMBERS_DIRTY_WAYS];
	} *dirty; /* [MEMBERS_DIRTY_SETS] */
	uint32_t lease_us; /* service.view_lease_ms; 0: no leases */
	_Atomic uint64_t lease_until_us; /* CLOCK_MONOTONIC */
	pthread_mutex_t answers_lock;
	struct {
		uint64_t req_id, at_us;
	} answers[MEMBERS_ANSWERS];
	unsigned answers_next;
	pthread_mutex_t behind_lock;
	_Atomic uint32_t behind_count; /* 0: no key behind, nothing to look up */
	struct members_behind {
		bool used;
		uint64_t keyhash;
	} *behind; /* [MEMBERS_BEHIND_SETS * MEMBERS_BEHIND_WAYS] */
};

/* From the config: R and the ring. 0, or -1 (no memory). */
int members_init(struct node *n);
void members_fini(struct node *n);
/* The catch-up thread (stops with stop_bg); nothing with R = 1. */
int members_start(struct node *n);
void members_stop(struct node *n);

static inline bool members_on(const struct members *g)
{
	return g->r > 1;
}

/* What the caller of members_other() is about to serve. */
enum members_use {
	MEMBERS_WRITE, /* needs no lease: a member that holds a newer view refuses its push */
	MEMBERS_READ,  /* within this node's view lease (a REPLICATE's version) */
	/*
	 * A GET: as its primary also without a lease, when the caller asks
	 * members_confirm() after reading, unless members_leased() by then.
	 */
	MEMBERS_READ_CONFIRMED,
};

/*
 * Under the read lock: 0 when this node serves keyhash now; else the node
 * that does (its primary), or RING_NO_NODE when none does (answer
 * UNAVAILABLE).
 */
uint16_t members_other(struct node *n, uint64_t keyhash, enum members_use use);
/* Within the view lease (or leases off). */
bool members_leased(const struct node *n);
/*
 * Under the read lock, after a read of keyhash served without a lease:
 * when this node served it as the key's primary, ask every other member
 * the view does not mark down which view it holds (VIEW 0). 0 when at
 * least one was asked and none holds a newer view: no other node can have
 * acknowledged a write of the key as its primary before they answered, so
 * what was read stands (a read lease of one round trip, as Raft's
 * ReadIndex confirms a leader). -1 otherwise (answer UNAVAILABLE). This
 * keeps reads served while the publishing switch is away.
 */
int members_confirm(struct node *n, uint64_t keyhash);
/* Under the read lock: whether the view marks node id down (false without groups). */
bool members_marks_down(struct node *n, uint16_t id);
void members_read_lock(struct node *n);
void members_read_unlock(struct node *n);

/*
 * After a write at the primary (under the read lock): push the key's record
 * to every member the view does not mark down. 0 when each holds it, with
 * *version the version pushed (0: nothing stored, nothing pushed); -1 when
 * one did not confirm (the write is not acknowledged).
 */
int members_push(struct node *n, const struct wire_msg *m, uint64_t *version);
/*
 * Then, once this node's own readers see that version (every other push of
 * the write is over): COMMIT it to those members, which may serve it as
 * clean from then on. Sooner, a member could serve the new version while a
 * reader at the primary, during the write-through push to the key's
 * directory copies, is still served the one before.
 */
void members_commit(struct node *n, const struct wire_msg *m, uint64_t version);
/*
 * Whether keyhash's last push from here was not confirmed by every member
 * the view does not mark down (members_push() keeps the mark): this node
 * must not serve the key (a read, a REPLICATE) before a push of it is.
 */
bool members_behind(struct node *n, uint64_t keyhash);

/*
 * Reads from the whole group (CRAQ): a member holds a key *dirty* from
 * applying a pushed version until the primary's COMMIT of it, sent once
 * every member holds it. A clean key may be read at any serving member:
 * every acknowledged write of it is there. members_clean(): whether this
 * node may serve a read of keyhash as a member now (serving, in its group,
 * not its primary, not dirty).
 */
bool members_clean(struct node *n, uint64_t keyhash);

/* Handlers (server.c's table): VIEW, MEMBER, CATCHUP, COMMIT. */
void members_on_commit(struct node *n, const struct wire_msg *m);
/* from_switch: a switch's VIEW; a node may only ask (VIEW 0, members_confirm()). */
void members_on_view(struct node *n, const struct wire_msg *m, bool from_switch,
		     struct wire_msg *rep, uint8_t *out, size_t cap);
void members_on_member(struct node *n, const struct wire_msg *m, struct wire_msg *rep);
void members_on_catchup(struct node *n, const struct wire_msg *m, struct wire_msg *rep,
			uint8_t *out, size_t cap);

#endif
