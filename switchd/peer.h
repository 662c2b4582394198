/*
 * peer.h - peer switches (docs/design.md section 7, docs/protocol.md "Peer switches"):
 * the protocol state a switch keeps about its peers, built from the SYNC
 * messages proto/sync.h encodes and decodes.
 *
 * Pure logic, no DPDK and no clock of its own: every function takes the
 * caller's monotonic time in microseconds, so the unit tests drive it on a
 * simulated clock. switchd's control thread is the only caller (peer_sync.c,
 * which alone holds a struct peer_state) and the only writer; cdtctl's
 * answers are built on the same thread.
 *
 * What it keeps, per configured switch (slot 0 is this switch):
 *   liveness   a peer is live when a SYNC from it arrived within D = 5 x
 *              sync.interval_ms;
 *   lease      this switch holds a lease from peer P while P has echoed one
 *              of this switch's heartbeats sent within L = 3 x interval (L < D:
 *              the lease always ends before P can judge this switch dead);
 *   windows    the last sync.window candidate windows (hot keys with counts);
 *   claims     the keys a peer says it owns (its versioned owned list), and
 *              which version of OUR owned list it confirmed routing to us;
 *   scores     the peer's view of each node (health, alive, digest age);
 *   ring       the epoch the peer routes by, the epoch it is ready for and
 *              the version its change runs from (docs/design.md section 12,
 *              "Peer switches"); slot 0 holds this switch's own, which every
 *              SYNC datagram carries.
 * From these it computes the cluster hot set (sliding-window consensus) and
 * the owner of a key (rendezvous hash over the live switches).
 */
#ifndef SKL_SW_PEER_H
#define SKL_SW_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "hot.h"
#include "sync.h"

#define PEER_MAX	     CFG_MAX_SWITCHES /* slots, this switch included */
#define PEER_FULL_EVERY	     5		/* every 5th SYNC carries every score entry */
#define PEER_DEAD_INTERVALS  5		/* D = 5 x interval */
#define PEER_LEASE_INTERVALS 3		/* L = 3 x interval */
/* Rounds that carry every window after a peer is (back) in touch: 2, so one lost datagram does
 * not leave the two switches merging different windows for N rounds. */
#define PEER_RESEND_ROUNDS 2

/* A candidate or owned key received is copied whole into a struct peer_key. */
_Static_assert(HOT_MAX_KEY == SYNC_MAX_KEY, "SYNC carries keys of up to HOT_MAX_KEY bytes");

struct peer_key {
	uint64_t keyhash;
	uint64_t count;	   /* merged: summed samples */
	uint16_t replicas; /* cluster hot set: replicas its share calls for */
	uint16_t key_len;
	uint8_t key[HOT_MAX_KEY];
};

struct peer_window {
	uint64_t id;
	uint64_t samples;
	uint32_t n;
	struct peer_key *keys; /* 2 x top_k slots: a switch's candidates */
};

/* Per configured switch; slot 0 is this switch. */
struct peer_slot {
	uint16_t id;
	char name[CFG_MAX_NAME];
	uint32_t vip;
	uint32_t incarnation; /* 0 until heard (peers) */
	uint64_t last_heard_us;
	bool heard;
	uint64_t their_ts_us;	  /* newest heartbeat ts received from it (echoed back) */
	uint64_t lease_echo_us;	  /* newest of OUR send times it echoed */
	uint64_t lease_confirmed; /* our owned version it confirmed in that same datagram */
	uint64_t lag_us;	  /* our clock now - echoed send time, at the echo */
	/* windows, newest first (ordered by id), nwin of N used */
	struct peer_window *win;
	uint32_t nwin;
	uint32_t resend_windows; /* rounds that carry all our windows to it, not just the newest */
	/* its owned list: being assembled (rx_*) and the last complete one */
	uint64_t rx_version;
	uint16_t rx_total, rx_have;
	uint8_t *rx_filled;
	struct peer_key *rx_keys;
	uint64_t owned_version; /* complete list; 0 none */
	uint32_t nowned;
	struct peer_key *owned;
	bool owned_fresh; /* a new complete list arrived since ownership.c last applied it */
	/* its node scores, and when each arrived (our clock) */
	struct sync_score score[CFG_MAX_NODES + 1];
	uint64_t score_rx_us[CFG_MAX_NODES + 1];
	/* what we last sent it of each node (for deltas) */
	uint8_t sent_health[CFG_MAX_NODES + 1];
	uint8_t sent_alive[CFG_MAX_NODES + 1];
	bool sent_any[CFG_MAX_NODES + 1];
	/* the version of ITS owned list we have applied (ownership.c's, through peer_sync.c) */
	uint64_t applied_version;
	/* its ring (highest heard in this incarnation); slot 0: ours (ring_change.c sets it) */
	uint64_t ring_epoch, ring_ready, ring_prev;
};

struct peer_state {
	uint16_t nslots; /* 1 + configured peers */
	struct peer_slot slot[PEER_MAX];
	uint32_t interval_ms, delta_pct, nwin, top_k, nnodes, max_replicas;
	double replica_factor;
	uint32_t owned_cap; /* keys an owned list may hold: directory.max_keys, capped */
	uint64_t dead_us, lease_us;
	uint32_t seq;
	uint64_t next_tick_us;
	/* this switch's pending window: the epochs since the last tick */
	uint64_t pending_samples;
	uint32_t pending_epochs, npending;
	struct peer_key *pending; /* 2 x top_k slots */
	uint64_t window_id;
	/*
	 * Cluster hot set, hottest first. hot_dirty: a peer's window changed
	 * since it was computed; recomputing then (not only at our own tick)
	 * makes both switches merge the same windows a moment after each SYNC.
	 */
	bool hot_dirty;
	uint32_t nhot;
	struct peer_key *hot;
	/* this switch's owned list (ownership.c's, through peer_sync.c) */
	uint64_t owned_version;
	uint32_t nowned;
	struct peer_key *owned;
};

/*
 * Set up for switch self_id of cfg: its configured peers get slots 1..n.
 * incarnation: random, nonzero, new at every start. Returns 0 or -errno.
 */
int peer_init(struct peer_state *ps, const struct cfg *cfg, uint16_t self_id, uint32_t incarnation,
	      uint64_t now_us);
void peer_fini(struct peer_state *ps);

/* Slot of a switch id, or -1. */
int peer_slot_of(const struct peer_state *ps, uint16_t id);

/* Apply one received SYNC value (already known to come from a peer's VIP). */
enum sync_error peer_receive(struct peer_state *ps, const void *buf, size_t len, uint64_t now_us);

bool peer_live(const struct peer_state *ps, unsigned slot, uint64_t now_us);
bool peer_lease(const struct peer_state *ps, unsigned slot, uint64_t now_us);
/* Whether this switch holds a lease from every configured peer; *until_us: when that ends. */
bool peer_all_leases(const struct peer_state *ps, uint64_t now_us, uint64_t *until_us);
/* The smallest version of our owned list every configured peer confirmed (with its lease). */
uint64_t peer_min_confirmed(const struct peer_state *ps);

/* Rendezvous score of switch id for keyhash; the owner has the highest. */
uint64_t peer_rendezvous(uint16_t switch_id, uint64_t keyhash);
/* The owner of keyhash among the live switches (this one always counts): a switch id. */
uint16_t peer_owner(const struct peer_state *ps, uint64_t keyhash, uint64_t now_us);

/* This switch's epoch ended (decide.c): add its hot keys to the pending window. */
void peer_add_epoch(struct peer_state *ps, const struct hot_report *r);

/*
 * Once per sync interval (true when it ran): close this switch's window
 * (when an epoch ended since the last one), recompute the cluster hot set.
 */
bool peer_tick(struct peer_state *ps, uint64_t now_us);
/* Recompute the cluster hot set from the windows of the live switches. */
void peer_compute_hot(struct peer_state *ps, uint64_t now_us);

/* This switch's ring, for every SYNC from now on (ring_change.c). */
void peer_set_ring(struct peer_state *ps, uint64_t epoch, uint64_t ready, uint64_t prev);
/*
 * Whether every configured peer is ready for ring epoch `epoch`: its SYNC
 * said so, or it is not live (then its lease from us has ended: it reads
 * no replica until it hears us again, and catches up first). Else false,
 * with the first laggard's slot in *lagging.
 */
bool peer_ring_ready(const struct peer_state *ps, uint64_t epoch, uint64_t now_us,
		     unsigned *lagging);

/* Replace this switch's owned list (bumps the version when it changed). */
void peer_set_owned(struct peer_state *ps, const struct peer_key *keys, uint32_t n);

/*
 * Build the SYNC values for peer `slot` at now_us: calls emit(arg, buf, len)
 * once per datagram, at most cap bytes each. Scores are read through
 * get_score(arg, node, &score) for nodes 1..nnodes of the config ids given.
 */
typedef void (*peer_emit_fn)(void *arg, const uint8_t *buf, size_t len);
typedef void (*peer_score_fn)(void *arg, uint16_t node, struct sync_score *s);
/*
 * A heartbeat alone (SCORES, no items) for peer `slot`: between two rounds,
 * so that a change of our ring (peer_set_ring) reaches it at once rather
 * than at the next interval. It is a heartbeat like any other.
 */
void peer_build_heartbeat(struct peer_state *ps, unsigned slot, uint64_t now_us,
			  peer_emit_fn emit, void *arg);
void peer_build(struct peer_state *ps, unsigned slot, uint64_t now_us, size_t cap,
		const uint16_t *nodes, unsigned nnodes, peer_score_fn get_score, peer_emit_fn emit,
		void *arg);

#endif
