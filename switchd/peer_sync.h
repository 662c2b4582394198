/*
 * peer_sync.h - the switch's side of the peer protocol (docs/design.md
 * section 7): the protocol state of peer.c tied to the switch, SYNC in and
 * out, the lease bookkeeping, where each node's score comes from, and what
 * `cdtctl peers` and telemetry show.
 *
 * A data module under the control thread's pipeline: intake feeds it SYNC
 * values (peer_sync_receive) and reads peers' node scores from it, decide
 * runs the peer policy through it (leases, the tick, the cluster hot set),
 * ownership.c makes the CDT follow it and sends our SYNC (peer_sync_send,
 * through egress), ring_change.c tells the peers our ring and reads theirs.
 * struct peer_sync is its own: the others go through these functions. It
 * calls only egress and the pure modules. Everything runs on the control
 * thread, the single writer, except peer_sync_rows_snapshot() (telemetry).
 * A switch without peers has no struct peer_sync: peer_sync_on() is false
 * and the directory behaves exactly as it does alone.
 */
#ifndef SKL_SW_PEER_SYNC_H
#define SKL_SW_PEER_SYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "peer.h"

struct sw;

/* What ownership.c does to the directory, counted with the peers' figures. */
enum peer_sync_event {
	PEER_SYNC_RESET,	  /* an entry reset to {home} by the lease rule */
	PEER_SYNC_OWNED_INSTALL,  /* a key installed as owner */
	PEER_SYNC_OWNED_RETIRE,	  /* an owned key retired */
	PEER_SYNC_REMOTE_INSTALL, /* a key installed as routed to a peer */
	PEER_SYNC_REMOTE_REMOVE,  /* a peer's key removed */
	PEER_SYNC_REMOTE_FAILED,  /* a peer's key that could not be installed (directory full) */
	PEER_SYNC_NEVENTS
};

/* One switch as `cdtctl peers` shows it (slot 0: this switch). */
struct peer_sync_row {
	uint16_t id;
	char name[CFG_MAX_NAME];
	bool self, live, lease;
	int64_t last_sync_ms; /* -1: never heard */
	int64_t lag_ms;	      /* our clock now - our heartbeat it echoed last; -1 none */
	uint64_t window;      /* its newest candidate window id */
	uint32_t owned_keys;  /* cluster hot keys it owns in our view */
	uint32_t claimed;     /* keys in its last complete owned list */
	uint64_t owned_version, confirmed;
	uint64_t ring_version, ring_epoch; /* the ring it routes by (docs/design.md section 12) */
};

/* Set up (no peers configured: nothing) and register `peers` and /skewless/peers. */
int peer_sync_init(struct sw *sw, char *err, size_t errlen);
void peer_sync_fini(struct sw *sw);

/* True when the switch has peers (the consensus drives the directory). */
bool peer_sync_on(const struct sw *sw);

/* Whether REPLICATE may go out now (false while a lease is missing). */
bool peer_sync_may_replicate(const struct sw *sw);

/* Intake: a SYNC datagram (UDP payload) from a peer into the peer state; rejects counted. */
void peer_sync_receive(struct sw *sw, const uint8_t *dgram, size_t len, uint64_t now_us);

/*
 * Intake: the score a node should get. When this switch's own digests from
 * the node are stale and a live peer's entry for it is fresh, *health and
 * *alive are replaced by the peer's and the peer's slot is returned (>0);
 * else 0 and nothing changes.
 */
int peer_sync_node_score(struct sw *sw, uint16_t node, uint64_t now_us, uint8_t *health,
			 bool *alive);

/* Name of the switch a node's score comes from now (NULL: this switch's own digests). */
const char *peer_sync_score_source(const struct sw *sw, uint16_t node);

/* ---- The peer policy (decide.c). ---- */

/* The lease rule's input: held now or not, and the transitions. */
struct peer_sync_lease {
	bool held;	   /* every lease is held, until until_us */
	uint64_t until_us; /* CLOCK_MONOTONIC */
	bool lost;	   /* a lease was lost since the last call */
	bool back;	   /* every lease is back since the last call (hot set recomputed) */
};
/* Whether every lease is held now; a change is counted and remembered. */
void peer_sync_lease(struct sw *sw, uint64_t now_us, struct peer_sync_lease *l);
/* Whether a peer's complete owned list arrived that ownership.c has not applied. */
bool peer_sync_claims_fresh(const struct sw *sw);
/*
 * Once per sync interval (true when it ran): our window closes and the
 * cluster hot set is recomputed; between ticks the hot set is recomputed
 * when a peer's window changed.
 */
bool peer_sync_tick(struct sw *sw, uint64_t now_us);
/* This switch's epoch ended: its hot keys join our pending window. */
void peer_sync_add_epoch(struct sw *sw, const struct hot_report *r);

/* ---- Ownership in the directory (ownership.c). ---- */

/* The cluster hot set, hottest first (valid until the next tick). */
const struct peer_key *peer_sync_hot_set(const struct sw *sw, uint32_t *n);
/* The owner of keyhash among the live switches: a switch id (ours: sw->self->id). */
uint16_t peer_sync_owner(const struct sw *sw, uint64_t keyhash, uint64_t now_us);
/* Whether switch `owner` is a live peer whose complete owned list holds keyhash. */
bool peer_sync_claims(const struct sw *sw, uint16_t owner, uint64_t keyhash, uint64_t now_us);
/*
 * Each live peer's complete owned list to apply(sw, peer id, keys, n): every
 * one when all, else those that arrived since they were last applied. When
 * apply returns true (every key routed), that version counts as applied. A
 * peer that is not live must confirm afresh when it is back.
 */
void peer_sync_follow_claims(struct sw *sw, uint64_t now_us, bool all,
			     bool (*apply)(struct sw *sw, uint16_t peer,
					   const struct peer_key *keys, uint32_t n));
/* Keys our owned list may hold (directory.max_keys, capped). */
uint32_t peer_sync_owned_cap(const struct sw *sw);
/*
 * Replace our owned list (sorted as the directory iterates; the version is
 * bumped when it changed). Returns its version; *confirmed: the smallest
 * version of it every peer confirmed routing to us.
 */
uint64_t peer_sync_set_owned(struct sw *sw, const struct peer_key *keys, uint32_t n,
			     uint64_t *confirmed);
/* Count one of ownership.c's changes to the directory. */
void peer_sync_count(struct sw *sw, enum peer_sync_event ev);
/*
 * The lease deadline the workers read: replica reads until until_us
 * (CLOCK_MONOTONIC, now_us being now), or none from now on (until_us 0).
 */
void peer_sync_publish_lease(struct sw *sw, uint64_t until_us, uint64_t now_us);
/* On a sync tick: SYNC to every peer (through egress), then the rows for telemetry. */
void peer_sync_send(struct sw *sw, uint64_t now_us);

/* ---- Ring changes (ring_change.c). ---- */

/*
 * Our ring, for every SYNC from now on (docs/design.md section 12); when it
 * changed, a heartbeat to every peer now carries it.
 */
void peer_sync_set_ring(struct sw *sw, uint64_t epoch, uint64_t ready, uint64_t prev,
			uint64_t now_us);
/*
 * Whether every live peer is ready for ring epoch `epoch` (no peers: true);
 * else false with the first laggard's switch id in *lagging.
 */
bool peer_sync_ring_ready(const struct sw *sw, uint64_t epoch, uint64_t now_us, uint16_t *lagging);
/* What the live peers say of their rings. */
struct peer_sync_rings {
	uint64_t ready;	    /* the newest epoch a live peer is ready for (0: none) */
	uint64_t prev;	    /* the version that peer's change runs from */
	uint16_t leader;    /* that peer's switch id */
	uint64_t published; /* the furthest epoch a live peer routes by */
};
void peer_sync_rings(const struct sw *sw, uint64_t now_us, struct peer_sync_rings *r);

/* The control round took took_us: the slowest is kept, a slow one logged. */
void peer_sync_note_round(struct sw *sw, uint64_t took_us);

/* Telemetry: the rows of the last sync round (any thread). Returns how many. */
unsigned peer_sync_rows_snapshot(struct sw *sw, struct peer_sync_row *rows, bool *leased);
/* Name of a switch id ("-" when unknown). */
const char *peer_sync_switch_name(const struct sw *sw, uint16_t id);

#endif
