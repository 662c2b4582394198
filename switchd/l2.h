/*
 * l2.h - what the switch knows about the link layer:
 *
 *   MAC table (inline mode): MAC -> port, learnt from every frame's source,
 *       aged out after mac_age_s. Misses are flooded.
 *   neighbours: IPv4 -> (MAC, port), so the switch can address a node or a
 *       client it forwards to. Learnt from ARP (requests and replies) and from
 *       the source of service traffic; the control thread sends ARP requests
 *       from the VIP for addresses it is asked about. Nodes have a slot each,
 *       indexed by node id (one 64-bit word); other hosts (clients) live in a
 *       4-way set-associative table of 128-bit slots, aged out after nb_age_s.
 *       Static entries (cdtctl neigh add) are never overwritten by learning.
 *
 * Concurrency: every worker learns and looks up. Node slots are one 64-bit
 * word (relaxed loads and stores); client slots are written whole with a
 * 128-bit compare-and-swap and read as two halves with a write count (a
 * seqlock without a lock), so a reader never sees half of one host's entry
 * and half of another's, and reading writes nothing. Two
 * workers learning different hosts into the same slot is a benign race: one
 * wins, the other relearns on its next frame. Stores happen only when
 * something changed or an entry is more than a second old, so steady traffic
 * does not bounce cache lines between lcores.
 */
#ifndef SKL_SW_L2_H
#define SKL_SW_L2_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "config.h"

#define L2_MAC_SLOTS 8192 /* direct-mapped; a collision costs a flood, not correctness */
#define L2_NB_SETS   1024
#define L2_NB_WAYS   4
#define L2_NODE_MAP  512 /* open-addressed IP -> node id, > 2 x CFG_MAX_NODES */

#define L2_F_VALID  0x1
#define L2_F_STATIC 0x2
/* Client slots: the upper 6 bits count writes (modulo 64), see slot_load() in l2.c. */
#define L2_F_GEN     0xfc
#define L2_F_GEN_ONE 0x04

union l2_nb_slot {
	unsigned __int128 raw;
	struct {
		uint32_t ip;
		uint32_t seen_s;
		uint8_t mac[6];
		uint8_t port;
		uint8_t flags;
	} f;
};

struct l2 {
	uint32_t mac_age_s;
	uint32_t nb_age_s;
	uint64_t mac_slot[L2_MAC_SLOTS]; /* mac << 16 | port << 8 | flags */
	uint32_t mac_seen[L2_MAC_SLOTS];
	uint64_t node_nb[CFG_MAX_NODES + 1]; /* same packing, by node id */
	union l2_nb_slot nb[L2_NB_SETS][L2_NB_WAYS] __attribute__((aligned(16)));
	/* Read-only after l2_init. */
	uint32_t node_ip[CFG_MAX_NODES + 1]; /* host order */
	uint32_t map_ip[L2_NODE_MAP];
	uint16_t map_id[L2_NODE_MAP];
};

void l2_init(struct l2 *l, const struct cfg *cfg, uint32_t mac_age_s, uint32_t nb_age_s);

/* Port behind mac, or -1 when unknown or aged out. */
int l2_mac_lookup(const struct l2 *l, const uint8_t mac[6], uint32_t now_s);
void l2_mac_learn(struct l2 *l, const uint8_t mac[6], uint8_t port, uint32_t now_s);

/* Node id whose configured address is ip (host order), or 0; the first of
 * several nodes on one host (they share its neighbour entry, see l2_nb_learn). */
uint16_t l2_node_of_ip(const struct l2 *l, uint32_t ip);

/*
 * Add node id at ip to the node map (a node a ring change brings, ring_change.c).
 * Control thread; readers see the entry once its id is stored (release).
 * 0, or -ENOSPC when the map is full, -EEXIST when id is known.
 */
int l2_add_node(struct l2 *l, uint16_t id, uint32_t ip);

/* A node's neighbour entry: true and mac/port when known. */
static inline bool l2_node_nb(const struct l2 *l, uint16_t node, uint8_t mac[6], uint8_t *port)
{
	uint64_t w = __atomic_load_n(&l->node_nb[node], __ATOMIC_RELAXED);

	if (!(w & L2_F_VALID))
		return false;
	w = __builtin_bswap64(w); /* MAC bytes first to last, then the port: store 6 at once */
	memcpy(mac, &w, 6);
	*port = (uint8_t)(w >> 48);
	return true;
}

/* Whether ip -> mac can be a neighbour entry at all: not 0.0.0.0, not multicast. */
static inline bool l2_nb_learnable(uint32_t ip, const uint8_t mac[6])
{
	return ip != 0 && !(mac[0] & 1);
}

/* Learn ip -> (mac, port), for every node configured at ip when it is a node's;
 * is_static pins it against learning. Ignored unless l2_nb_learnable(). */
void l2_nb_learn(struct l2 *l, uint32_t ip, const uint8_t mac[6], uint8_t port, uint32_t now_s,
		 bool is_static);
/* Look up any host (node or client); true with mac/port when known and fresh. */
bool l2_nb_lookup(const struct l2 *l, uint32_t ip, uint8_t mac[6], uint8_t *port, uint32_t now_s);

/* Visit every known neighbour (control thread, for cdtctl/telemetry). */
typedef void (*l2_nb_visit_fn)(void *arg, uint32_t ip, const uint8_t mac[6], uint8_t port,
			       bool is_static, uint16_t node);
void l2_nb_walk(const struct l2 *l, uint32_t now_s, l2_nb_visit_fn fn, void *arg);

#endif
