/*
 * reconcile.h - the directory's one writer: installs, removes and
 * replication of CDT entries (docs/design.md section 5, "Hot-key detection",
 * and section 7 for peers).
 *
 * Third stage of the control round. decide.c hands it what the policies
 * want (struct reconcile_want): the epoch's hot and retired keys (alone), or the
 * cluster hot set and the peers' claims (with peers, in struct peer_sync), and
 * the lease state. It makes the CDT agree, in this order:
 *   1. with peers: the lease rule (a lease lost or back: every owned entry
 *      to {home}, completed 0), remote entries follow the live peers'
 *      claims, our own follow the cluster hot set (installs only while every
 *      lease is held), our owned list is published, the lease deadline the
 *      workers read is set, and on a sync tick SYNC goes out;
 *   2. write completions intake queued: the new version is copied out;
 *   3. alone, at an epoch: new hot keys installed with set {home} and a
 *      REPLICATE(0) to the home, replica wants adjusted by share of load,
 *      retired keys removed (CDT removal, then UNREPLICATE);
 *   4. at an epoch boundary: REPLICATE again for every entry short of what
 *      it wants (lost messages, or a write that shrank it).
 * Frames go out through egress.h. It registers `cdt show|pin|unpin`,
 * `directory` and /skewless/cdt. Control thread only.
 */
#ifndef SKL_SW_RECONCILE_H
#define SKL_SW_RECONCILE_H

#include <stdbool.h>
#include <stdint.h>

#include "hot.h"

struct sw;
struct cdt_entry;
struct fmt;

/* What the policies want this round (decide.c fills it). */
struct reconcile_want {
	/* Local policy: an epoch ended with the directory on (NULL: none). */
	const struct hot_report *epoch;
	bool repair; /* an epoch boundary: REPLICATE every entry short of replicas */
	/* Peer policy (with peers only). */
	bool leased;		 /* every lease is held, until lease_until_us */
	uint64_t lease_until_us; /* CLOCK_MONOTONIC */
	bool lease_lost;	 /* a lease was lost this round */
	bool lease_back;	 /* every lease is back this round (hot set recomputed) */
	bool sync_tick;		 /* our window closed: full reconcile, SYNC out */
	bool claims_fresh;	 /* a peer's complete owned list arrived */
};

/* What `cdtctl stats` and `cdtctl directory` show of the directory. */
struct reconcile_stats {
	bool enabled;
	uint32_t hot_set;	/* keys in the last epoch's hot set */
	uint32_t last_installs; /* in the last epoch */
	uint32_t last_retires;	/* in the last epoch */
	uint64_t epochs;
	uint64_t installs;
	uint64_t retires;
	uint64_t full;		   /* hot keys not installed: directory full */
	uint64_t collisions;	   /* hot keys whose keyhash another installed key holds */
	uint64_t never_served;	   /* installed keys retired (or 60 s) before a replica served */
	uint64_t delay_unmeasured; /* installs whose update delay was not tracked (list full) */
	uint64_t held_moving;	   /* hot keys not installed: their home moves in a ring step */
	uint64_t trims;		   /* copies dropped from sets grown past what their key wants */
};

int reconcile_init(struct sw *sw, char *err, size_t errlen);
void reconcile_fini(struct sw *sw);

/* Intake: a write to a directory key completed at version (queued for this round's run). */
void reconcile_completed(struct sw *sw, uint64_t keyhash, uint64_t version);

/*
 * A ring change moves homes (ring_change.c, docs/design.md section 12): remove
 * every entry this switch owns whose home moves (moves(arg, keyhash) true),
 * UNREPLICATE its copies, and remember it; reconcile_rehome_install() installs the
 * remembered keys again at the home the ring now gives, set {home},
 * completed 0. Returns the entries removed. In between, no key for which
 * moves() holds is installed (its home in the workers' ring is about to be
 * wrong): arg must live until reconcile_rehome_install().
 */
uint32_t reconcile_rehome_remove(struct sw *sw, bool (*moves)(void *arg, uint64_t keyhash), void *arg);
uint32_t reconcile_rehome_install(struct sw *sw);

/* The reconcile stage of a control round (QSBR online). now_us: CLOCK_MONOTONIC. */
void reconcile_run(struct sw *sw, uint64_t now_us, const struct reconcile_want *want);

/* The directory's figures (stats, counters of egress and workers) through f. */
void reconcile_format_stats(struct sw *sw, struct fmt *f);

#endif
