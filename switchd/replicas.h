/*
 * replicas.h - where an entry's copies go and where they are (docs/design.md
 * section 5): REPLICATE to as many nodes as an entry's set is short of,
 * placed by the load the sets put on the nodes (place.h), UNREPLICATE where
 * this switch put copies, and the trim of a set grown past what its key
 * wants. It keeps, per directory entry, the nodes that may hold a copy and
 * the key's share of the requests.
 *
 * Below the directory's writers (reconcile.c, ownership.c), which call it
 * around their installs and removals; it sends through egress.h and reads
 * the peers' lease (peer_sync.h). Control thread only.
 */
#ifndef SKL_SW_REPLICAS_H
#define SKL_SW_REPLICAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sw;
struct cdt_entry;
struct cdt_state;

int replicas_init(struct sw *sw, char *err, size_t errlen);
void replicas_fini(struct sw *sw);

/*
 * At the start of a control round: the sets of the entries this switch owns
 * are charged again, at their keys' latest shares, and the rest of the load
 * by the ring's arcs (place.h). Also after an epoch's retires.
 */
void replicas_charge(struct sw *sw);
/* The key of entry e takes share of the requests (0: not known, a pin or a peer's key). */
void replicas_set_share(struct sw *sw, const struct cdt_entry *e, double share);

/*
 * Ask e's home to copy version (0: its current one) to as many new nodes as
 * the set st is short of. Nothing for a peer's key, or while a lease is missing.
 */
void replicas_add(struct sw *sw, struct cdt_entry *e, const struct cdt_state *st, uint64_t version);
/* REPLICATE the entry's completed version to as many nodes as it is short of. */
void replicas_add_completed(struct sw *sw, struct cdt_entry *e);
/*
 * At an epoch boundary: every entry short of replicas gets a REPLICATE of
 * its completed version; one past them, a trim.
 */
void replicas_repair(struct sw *sw);

/* Before e is removed: the members of its last set may hold a copy too. */
void replicas_note_set(struct sw *sw, const struct cdt_entry *e);
/*
 * After the entry at index was removed: UNREPLICATE to every node that may
 * hold a copy of its key (when owned: this switch's copies), then forget them.
 */
void replicas_drop(struct sw *sw, uint32_t index, bool owned, uint64_t keyhash, const uint8_t *key,
		   uint16_t key_len);

/* Copies dropped from sets grown past what their key wants. */
uint64_t replicas_trims(const struct sw *sw);

#endif
