/*
 * peer_sync.h - the switch's state among peer switches (docs/design.md section 7):
 * the protocol state of peer.c tied to the switch, the lease flag, where
 * each node's score comes from, and what `cdtctl peers` and telemetry show.
 *
 * A data module under the control thread's pipeline: intake feeds it SYNC
 * values (peer_sync_receive) and reads peers' node scores from it, decide runs
 * the peer policy on it (leases, the cluster hot set), reconcile makes the
 * CDT follow it and sends our SYNC (peer_sync_send, through egress). It
 * calls only egress and the pure modules. Everything runs on the control
 * thread, the single writer, except peer_sync_rows_snapshot() (telemetry).
 * A switch without peers has no struct peer_sync: peer_sync_on() is false and
 * the directory behaves exactly as it does alone.
 */
#ifndef SKL_SW_CLUSTER_H
#define SKL_SW_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "peer.h"

struct sw;

struct peer_sync_stats {
	uint64_t lease_losses;	 /* times the switch lost a lease and reset its entries */
	uint64_t lease_resumes;	 /* times all leases came back */
	uint64_t resets;	 /* entries reset to {home} by the lease rule */
	uint64_t sync_rejected;	 /* malformed or from an unknown switch */
	uint64_t owned_installs; /* keys installed as owner */
	uint64_t owned_retires;
	uint64_t remote_installs; /* keys installed as routed to a peer */
	uint64_t remote_removes;
	uint64_t remote_failed;	   /* a peer's key that could not be installed (directory full) */
	uint64_t health_from_peer; /* node score updates taken from a peer */
	uint64_t slowest_round_us; /* longest control round (grace periods of CDT changes) */
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

struct peer_sync {
	struct peer_state ps;
	bool leased;			      /* decide: every lease was held at the last round */
	struct peer_key *scratch;	      /* our owned list as published: owned_cap keys */
	uint64_t stale_us;		      /* own digests older than this are stale */
	uint8_t score_src[CFG_MAX_NODES + 1]; /* slot a node's score comes from; 0: own digests */
	struct peer_sync_stats st;
	/* Telemetry's copy, refreshed every sync round under sw->tel_lock. */
	struct peer_sync_row rows[PEER_MAX];
	unsigned nrows;
	bool rows_leased;
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
int peer_sync_node_score(struct sw *sw, uint16_t node, uint64_t now_us, uint8_t *health, bool *alive);

/* Name of the switch a node's score comes from now (NULL: this switch's own digests). */
const char *peer_sync_score_source(const struct sw *sw, uint16_t node);

/* Reconcile, on a sync tick: SYNC to every peer (through egress), then the rows for telemetry. */
void peer_sync_send(struct sw *sw, uint64_t now_us);
/* Our ring changed (ring_change.c): a heartbeat to every peer now, carrying it. */
void peer_sync_heartbeat(struct sw *sw, uint64_t now_us);

/* The control round took took_us: the slowest is kept, a slow one logged. */
void peer_sync_note_round(struct sw *sw, uint64_t took_us);

/* Telemetry: the rows of the last sync round (any thread). Returns how many. */
unsigned peer_sync_rows_snapshot(struct sw *sw, struct peer_sync_row *rows, bool *leased);
/* Name of a switch id ("-" when unknown). */
const char *peer_sync_switch_name(const struct sw *sw, uint16_t id);

#endif
