/*
 * directory.h - the directory manager: which keys the CDT holds and how many
 * replicas each has (docs/design.md section 5, "Hot-key detection").
 *
 * Workers feed it through two rings and never wait on it:
 *   samples      every directory.sample_every-th request's key (when enabled);
 *   completions  write completions of directory keys, so re-replication of
 *                the new version follows the write at once.
 * The control thread (dir_poll, every control round) turns samples into hot
 * keys with hotkeys.c, and once per epoch installs new hot keys with set
 * {home} and a REPLICATE(0, targets) to the home, adjusts how many replicas a
 * key wants by its share of load, retires keys cold for retire_epochs epochs
 * (CDT removal, then UNREPLICATE), and re-sends REPLICATE for every entry
 * whose set is short of what it wants (lost messages, or a write that shrank
 * it). Only the control thread calls these functions, except dir_sample()
 * and dir_completed(), which workers call.
 */
#ifndef SKL_SW_DIRECTORY_H
#define SKL_SW_DIRECTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "hotkeys.h"

struct sw;
struct sw_worker;
struct cdt_entry;
struct wire_msg;

/* What `cdtctl stats` and /skewless/stats show of the directory. */
struct dir_stats {
	bool enabled;
	uint32_t hot_set;	/* keys in the last epoch's hot set */
	uint32_t last_installs; /* in the last epoch */
	uint32_t last_retires;	/* in the last epoch */
	uint64_t epochs;
	uint64_t installs;
	uint64_t retires;
	uint64_t replicates_sent;
	uint64_t unreplicates_sent;
	uint64_t send_failed; /* control frames not sent (no neighbour or no mbuf) */
	uint64_t full;	      /* hot keys not installed: directory full */
	uint64_t collisions;  /* hot keys whose keyhash another installed key holds */
};

int dir_init(struct sw *sw, char *err, size_t errlen);
void dir_fini(struct sw *sw);

/* Control thread, once per control round; now_us from CLOCK_MONOTONIC. */
void dir_poll(struct sw *sw, uint64_t now_us);

/* Turn hot-key management on or off; off removes every entry that is not pinned. */
void dir_set_enabled(struct sw *sw, bool on);

/*
 * Install a key this switch owns with set {home}, want replicas, and send the
 * home REPLICATE(0). The entry, or NULL (directory full, keyhash collision).
 */
struct cdt_entry *dir_install(struct sw *sw, uint64_t keyhash, const uint8_t *key, uint16_t key_len,
			      uint8_t want);

/* REPLICATE the entry's completed version to as many nodes as it is short of. */
void dir_replicate(struct sw *sw, struct cdt_entry *e);

/* Remove one entry (unpin, retire): CDT removal, then UNREPLICATE to every node
 * (none for a key owned by a peer switch). */
int dir_remove(struct sw *sw, struct cdt_entry *e);

void dir_get_stats(const struct sw *sw, struct dir_stats *out);

/* Worker: a sampled request key (best effort; a full ring drops the sample). */
void dir_sample(struct sw_worker *w, const struct wire_msg *msg);
/* Worker: a write to a directory key completed at version. */
void dir_completed(struct sw_worker *w, uint64_t keyhash, uint64_t version);

#endif
