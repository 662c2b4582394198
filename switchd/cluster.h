/*
 * cluster.h - a switch among peer switches (docs/design.md section 7): SYNC in and out,
 * key ownership in the CDT, the lease rule, node health learned from peers.
 *
 * The protocol state lives in peers.c (pure); this file ties it to the
 * switch. Everything here runs on the control thread, which stays the single
 * writer of the CDT's keys, the score tables and the lease deadline the
 * workers read (sw->lease_until_tsc). A switch without peers in the config
 * never calls into peers.c: cluster_on() is false and the directory manager
 * behaves exactly as it does alone.
 *
 * Per round (cluster_poll):
 *   1. SYNC datagrams from the workers' ring into peers.c;
 *   2. the lease rule: all leases held -> replica reads allowed until the
 *      earliest lease ends; a lease lost -> every owned entry back to {home},
 *      completed 0, no installs, no REPLICATE; leases back -> the same reset,
 *      then ownership is recomputed, then replica reads resume;
 *   3. peers' owned lists -> remote entries (owner = that peer) in the CDT;
 *   4. every sync.interval_ms: our window closes, the cluster hot set is
 *      recomputed, the keys it gives us are installed (owner 0) or retired,
 *      our owned list is published, and SYNC goes to every peer.
 */
#ifndef SKL_SW_CLUSTER_H
#define SKL_SW_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "peers.h"

struct sw;
struct hot_report;

struct cluster_stats {
	uint64_t lease_losses;	/* times the switch lost a lease and reset its entries */
	uint64_t lease_resumes; /* times all leases came back */
	uint64_t resets;	/* entries reset to {home} by the lease rule */
	uint64_t sync_sent;	/* SYNC datagrams sent */
	uint64_t sync_send_failed;
	uint64_t sync_rejected;	 /* malformed or from an unknown switch */
	uint64_t owned_installs; /* keys installed as owner */
	uint64_t owned_retires;
	uint64_t remote_installs; /* keys installed as routed to a peer */
	uint64_t remote_removes;
	uint64_t remote_failed;	   /* a peer's key that could not be installed (directory full) */
	uint64_t health_from_peer; /* node score updates taken from a peer */
	uint64_t slowest_round_us; /* longest cluster_poll() (grace periods of CDT changes) */
};

int cluster_init(struct sw *sw, char *err, size_t errlen);
void cluster_fini(struct sw *sw);

/* True when the switch has peers (the consensus drives the directory). */
bool cluster_on(const struct sw *sw);

/* Control thread, every round (QSBR online). now_us: CLOCK_MONOTONIC. */
void cluster_poll(struct sw *sw, uint64_t now_us);

/* directory.c: an epoch ended; its hot keys join this switch's pending window. */
void cluster_epoch(struct sw *sw, const struct hot_report *r);

/* directory.c: whether REPLICATE may go out now (false while a lease is missing). */
bool cluster_may_replicate(const struct sw *sw);

/*
 * take_digests(): the score a node should get. When this switch's own digests
 * from the node are stale and a live peer's entry for it is fresh, *health
 * and *alive are replaced by the peer's and the peer's slot is returned (>0);
 * else 0 and nothing changes.
 */
int cluster_node_score(struct sw *sw, uint16_t node, uint64_t now_us, uint8_t *health, bool *alive);

/* Name of the switch a node's score comes from now (NULL: this switch's own digests). */
const char *cluster_score_source(const struct sw *sw, uint16_t node);

/* One switch as `cdtctl peers` shows it (slot 0: this switch). */
struct cluster_row {
	uint16_t id;
	char name[CFG_MAX_NAME];
	bool self, live, lease;
	int64_t last_sync_ms; /* -1: never heard */
	int64_t lag_ms;	      /* our clock now - our heartbeat it echoed last; -1 none */
	uint64_t window;      /* its newest candidate window id */
	uint32_t owned_keys;  /* cluster hot keys it owns in our view */
	uint32_t claimed;     /* keys in its last complete owned list */
	uint64_t owned_version, confirmed;
};

/* `cdtctl peers`: every switch's row, the lease state, the cluster hot set. Control thread. */
json_t *cluster_json(struct sw *sw);
/* Telemetry: the rows of the last sync round (any thread). Returns how many. */
unsigned cluster_rows_snapshot(struct sw *sw, struct cluster_row *rows, bool *leased);
/* Name of a switch id ("-" when unknown). */
const char *cluster_switch_name(const struct sw *sw, uint16_t id);

#endif
