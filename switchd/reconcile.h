/*
 * reconcile.h - the local directory: installs and removals of CDT entries,
 * the epoch's hot set, write completions and pins (docs/design.md section 5,
 * "Hot-key detection").
 *
 * Third stage of the control round. decide.c hands it what the policies
 * want (struct reconcile_want); with peers, ownership.c has applied the
 * peer part of it first. It makes the CDT agree, in this order:
 *   1. write completions intake queued: the new version is copied out;
 *   2. alone, at an epoch: new hot keys installed with set {home} and a
 *      REPLICATE(0) to the home, replica wants adjusted by share of load,
 *      retired keys removed (CDT removal, then UNREPLICATE);
 *   3. at an epoch boundary: REPLICATE again for every entry short of what
 *      it wants (lost messages, or a write that shrank it).
 * Replication goes through replicas.h. Its installs and removals are the
 * ones ownership.c, rehome.c and the directory's commands (dir_ctl.c) use
 * too. Control thread only.
 */
#ifndef SKL_SW_RECONCILE_H
#define SKL_SW_RECONCILE_H

#include <stdbool.h>
#include <stdint.h>

#include "hot.h"

struct sw;
struct cdt_entry;
struct prom_hist;

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
	uint32_t write_heavy;	/* of them, kept uncopied by their writes (section 13) */
	uint32_t last_installs; /* in the last epoch */
	uint32_t last_retires;	/* in the last epoch */
	uint64_t epochs;
	uint64_t installs;
	uint64_t retires;
	uint64_t full;		   /* hot keys not installed: directory full */
	uint64_t collisions;	   /* hot keys whose keyhash another installed key holds */
	uint64_t never_served;	   /* installed keys retired (or 60 s) before a replica served */
	uint64_t delay_unmeasured; /* installs whose update delay was not tracked (list full) */
	uint64_t held_moving;	   /* hot keys not installed: their home moves, or a view skips it */
};

int reconcile_init(struct sw *sw, char *err, size_t errlen);
void reconcile_fini(struct sw *sw);

/* A write to a directory key completed at version: what the workers queue to intake. */
struct reconcile_completion {
	uint64_t keyhash;
	uint64_t version;
};

/* Intake: a write to a directory key completed at version (queued for this round's run). */
void reconcile_completed(struct sw *sw, uint64_t keyhash, uint64_t version);

/* The local directory's part of a control round (QSBR online). */
void reconcile_run(struct sw *sw, const struct reconcile_want *want);

/*
 * Install a key this switch owns with set {home}, want replicas, its share
 * of the requests (0: not known), and send the home REPLICATE(0). The entry,
 * or NULL (directory full, keyhash collision, its home moving: counted).
 */
struct cdt_entry *reconcile_install(struct sw *sw, uint64_t keyhash, const uint8_t *key,
				    uint16_t key_len, uint8_t want, double share);
/*
 * The keyhashes of the entries pick() chooses, in *list, and how many. The
 * caller removes them afterwards: the CDT is not iterated while keys are
 * deleted from it. The list, made at reconcile_init() with room for every
 * entry, is the next call's too, so a removal never stops half-way for want
 * of memory.
 */
uint32_t reconcile_collect(struct sw *sw,
			   bool (*pick)(struct sw *sw, struct cdt_entry *e, void *arg), void *arg,
			   const uint64_t **list);
/* Remove one entry: CDT removal, then UNREPLICATE (none for a peer's key). 0 or -errno. */
int reconcile_remove(struct sw *sw, struct cdt_entry *e);
/*
 * Install a key as a manual pin: with force, that replica set as it is;
 * otherwise starting from {home}, and the next repair REPLICATEs it out to
 * `want` replicas. The entry, or NULL with errno.
 */
struct cdt_entry *reconcile_pin(struct sw *sw, const void *key, size_t key_len,
				const uint16_t *force, unsigned nforce, uint8_t want);
/* Directory on or off; off removes every entry that is not pinned (a peer's stay). */
void reconcile_set_enabled(struct sw *sw, bool on);
/*
 * A ring step is under way (rehome.c): keys for which moves(arg, keyhash)
 * holds are not installed until it ends (moves NULL).
 */
void reconcile_hold(struct sw *sw, bool (*moves)(void *arg, uint64_t keyhash), void *arg);

/* What `cdtctl directory` shows: the figures, and the CDT update delay. */
const struct reconcile_stats *reconcile_stats(const struct sw *sw);
const struct prom_hist *reconcile_update_delay(const struct sw *sw);

#endif
