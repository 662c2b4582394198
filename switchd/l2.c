/*
 * l2.c - MAC learning and the neighbour table (see l2.h for the concurrency).
 */
#include <errno.h>
#include <string.h>

#include "l2.h"

static inline uint64_t mac_u64(const uint8_t mac[6])
{
	uint64_t v = 0;

	for (int i = 0; i < 6; i++)
		v = v << 8 | mac[i];
	return v;
}

/* Multiplicative hashing: MACs and IPs share prefixes, so mix before masking. */
static inline uint32_t mix32(uint64_t v)
{
	return (uint32_t)((v * 0x9E3779B97F4A7C15ull) >> 32);
}

void l2_init(struct l2 *l, const struct cfg *cfg, uint32_t mac_age_s, uint32_t nb_age_s)
{
	memset(l, 0, sizeof(*l));
	l->mac_age_s = mac_age_s;
	l->nb_age_s = nb_age_s;
	for (unsigned i = 0; i < cfg->nnodes; i++) {
		const struct cfg_node *n = &cfg->nodes[i];
		uint32_t h = mix32(n->ip) % L2_NODE_MAP;

		l->node_ip[n->id] = n->ip;
		while (l->map_id[h] != 0)
			h = (h + 1) % L2_NODE_MAP;
		l->map_ip[h] = n->ip;
		l->map_id[h] = n->id;
	}
}

int l2_add_node(struct l2 *l, uint16_t id, uint32_t ip)
{
	uint32_t h = mix32(ip) % L2_NODE_MAP;

	if (id == 0 || id > CFG_MAX_NODES || l->node_ip[id])
		return -EEXIST;
	for (uint32_t tries = 0; l->map_id[h] != 0; tries++) {
		if (tries == L2_NODE_MAP)
			return -ENOSPC;
		h = (h + 1) % L2_NODE_MAP;
	}
	__atomic_store_n(&l->node_ip[id], ip, __ATOMIC_RELEASE);
	__atomic_store_n(&l->map_ip[h], ip, __ATOMIC_RELEASE);
	__atomic_store_n(&l->map_id[h], id, __ATOMIC_RELEASE);
	return 0;
}

/*
 * The next node configured at ip along its probe sequence of the node map,
 * from *h on (start at mix32(ip) % L2_NODE_MAP); 0 when there is none.
 */
static uint16_t next_node_at(const struct l2 *l, uint32_t ip, uint32_t *h)
{
	for (; l->map_id[*h] != 0; *h = (*h + 1) % L2_NODE_MAP)
		if (l->map_ip[*h] == ip) {
			uint16_t id = l->map_id[*h];

			*h = (*h + 1) % L2_NODE_MAP;
			return id;
		}
	return 0;
}

uint16_t l2_node_of_ip(const struct l2 *l, uint32_t ip)
{
	uint32_t h = mix32(ip) % L2_NODE_MAP;

	return next_node_at(l, ip, &h);
}

int l2_mac_lookup(const struct l2 *l, const uint8_t mac[6], uint32_t now_s)
{
	uint64_t m = mac_u64(mac);
	uint32_t i = mix32(m) % L2_MAC_SLOTS;
	uint64_t w = __atomic_load_n(&l->mac_slot[i], __ATOMIC_RELAXED);

	if (!(w & L2_F_VALID) || (w >> 16) != m)
		return -1;
	if (now_s - __atomic_load_n(&l->mac_seen[i], __ATOMIC_RELAXED) > l->mac_age_s)
		return -1;
	return (int)(uint8_t)(w >> 8);
}

void l2_mac_learn(struct l2 *l, const uint8_t mac[6], uint8_t port, uint32_t now_s)
{
	uint64_t m = mac_u64(mac);
	uint32_t i = mix32(m) % L2_MAC_SLOTS;
	uint64_t w = m << 16 | (uint64_t)port << 8 | L2_F_VALID;

	if (mac[0] & 1) /* never learn a multicast or broadcast source */
		return;
	if (__atomic_load_n(&l->mac_slot[i], __ATOMIC_RELAXED) != w)
		__atomic_store_n(&l->mac_slot[i], w, __ATOMIC_RELAXED);
	if (__atomic_load_n(&l->mac_seen[i], __ATOMIC_RELAXED) != now_s)
		__atomic_store_n(&l->mac_seen[i], now_s, __ATOMIC_RELAXED);
}

/*
 * Read a client slot without writing to it (a locked cmpxchg16b writes the
 * line even when it compares equal, so readers on other lcores would take it
 * from each other): its two 8-byte halves, the second one twice. Writers
 * replace all 16 bytes at once and count in the flags' L2_F_GEN bits, so an
 * unchanged second half means the first half belongs to the same write.
 */
static inline union l2_nb_slot slot_load(const union l2_nb_slot *s)
{
	const uint64_t *half = (const uint64_t *)s;
	uint64_t first, second;
	union l2_nb_slot v;

	do {
		second = __atomic_load_n(&half[1], __ATOMIC_ACQUIRE);
		first = __atomic_load_n(&half[0], __ATOMIC_ACQUIRE);
	} while (__atomic_load_n(&half[1], __ATOMIC_ACQUIRE) != second);
	memcpy((uint8_t *)&v, &first, sizeof(first));
	memcpy((uint8_t *)&v + sizeof(first), &second, sizeof(second));
	return v;
}

/*
 * Learn ip -> w (a node_nb word) for every node configured at ip (nodes on one
 * host share its address, each with its own port). False when ip is no node's.
 */
static bool learn_nodes_at(struct l2 *l, uint32_t ip, uint64_t w)
{
	uint32_t h = mix32(ip) % L2_NODE_MAP;
	uint16_t node;
	bool any = false;

	while ((node = next_node_at(l, ip, &h)) != 0) {
		uint64_t cur = __atomic_load_n(&l->node_nb[node], __ATOMIC_RELAXED);

		any = true;
		if (cur != w && ((w & L2_F_STATIC) || !(cur & L2_F_STATIC)))
			__atomic_store_n(&l->node_nb[node], w, __ATOMIC_RELAXED);
	}
	return any;
}

/*
 * One attempt at learning a client into its set: the way holding ip, else the
 * oldest learnt one (never a static one, unless is_static). Written with a
 * compare-and-swap against what the scan read, so a way that changed since
 * (a static entry just added, say) is left alone. True when done or nothing
 * needed doing, false when that way changed under us.
 */
static bool client_slot_learn(union l2_nb_slot *set, uint32_t ip, const uint8_t mac[6],
			      uint8_t port, uint32_t now_s, bool is_static)
{
	union l2_nb_slot way[L2_NB_WAYS], nv;
	int victim = 0;
	uint32_t oldest = UINT32_MAX;

	for (int i = 0; i < L2_NB_WAYS; i++) {
		union l2_nb_slot cur = way[i] = slot_load(&set[i]);

		if ((cur.f.flags & L2_F_VALID) && cur.f.ip == ip) {
			if ((cur.f.flags & L2_F_STATIC) && !is_static)
				return true;
			if (cur.f.port == port && !memcmp(cur.f.mac, mac, 6) &&
			    now_s - cur.f.seen_s < 1 && !is_static)
				return true; /* fresh and unchanged: no store */
			victim = i;
			oldest = 0;
			break;
		}
		uint32_t age = (cur.f.flags & L2_F_VALID) ? cur.f.seen_s : 0;

		if (cur.f.flags & L2_F_STATIC)
			continue;
		if (age < oldest) {
			oldest = age;
			victim = i;
		}
	}
	if (oldest == UINT32_MAX && !is_static)
		return true; /* every way holds a static entry: learning never evicts one */
	memset(&nv, 0, sizeof(nv));
	nv.f.ip = ip;
	nv.f.seen_s = now_s;
	memcpy(nv.f.mac, mac, 6);
	nv.f.port = port;
	nv.f.flags = L2_F_VALID | (is_static ? L2_F_STATIC : 0) |
		     ((way[victim].f.flags + L2_F_GEN_ONE) & L2_F_GEN);
	return __sync_bool_compare_and_swap(&set[victim].raw, way[victim].raw, nv.raw);
}

void l2_nb_learn(struct l2 *l, uint32_t ip, const uint8_t mac[6], uint8_t port, uint32_t now_s,
		 bool is_static)
{
	if (!l2_nb_learnable(ip, mac))
		return;
	if (learn_nodes_at(l, ip,
			   mac_u64(mac) << 16 | (uint64_t)port << 8 | L2_F_VALID |
			       (is_static ? L2_F_STATIC : 0)))
		return;

	/* Learning makes one attempt (losing to a concurrent learner is fine, see
	 * l2.h); an operator's static entry tries again, up to 16 times. */
	for (int attempt = 0; attempt < (is_static ? 16 : 1); attempt++)
		if (client_slot_learn(l->nb[mix32(ip) % L2_NB_SETS], ip, mac, port, now_s,
				      is_static))
			return;
}

bool l2_nb_lookup(const struct l2 *l, uint32_t ip, uint8_t mac[6], uint8_t *port, uint32_t now_s)
{
	uint16_t node = l2_node_of_ip(l, ip);

	if (node)
		return l2_node_nb(l, node, mac, port);

	const union l2_nb_slot *set = l->nb[mix32(ip) % L2_NB_SETS];

	for (int i = 0; i < L2_NB_WAYS; i++) {
		union l2_nb_slot cur = slot_load(&set[i]);

		if (!(cur.f.flags & L2_F_VALID) || cur.f.ip != ip)
			continue;
		if (!(cur.f.flags & L2_F_STATIC) && now_s - cur.f.seen_s > l->nb_age_s)
			return false;
		memcpy(mac, cur.f.mac, 6);
		*port = cur.f.port;
		return true;
	}
	return false;
}

void l2_nb_walk(const struct l2 *l, uint32_t now_s, l2_nb_visit_fn fn, void *arg)
{
	uint8_t mac[6], port;

	for (unsigned id = 1; id <= CFG_MAX_NODES; id++) {
		uint64_t w = __atomic_load_n(&l->node_nb[id], __ATOMIC_RELAXED);

		if (l->node_ip[id] && l2_node_nb(l, (uint16_t)id, mac, &port))
			fn(arg, l->node_ip[id], mac, port, (w & L2_F_STATIC) != 0, (uint16_t)id);
	}
	for (unsigned s = 0; s < L2_NB_SETS; s++)
		for (unsigned i = 0; i < L2_NB_WAYS; i++) {
			union l2_nb_slot cur = slot_load(&l->nb[s][i]);

			if (!(cur.f.flags & L2_F_VALID))
				continue;
			if (!(cur.f.flags & L2_F_STATIC) && now_s - cur.f.seen_s > l->nb_age_s)
				continue;
			fn(arg, cur.f.ip, cur.f.mac, cur.f.port, (cur.f.flags & L2_F_STATIC) != 0,
			   0);
		}
}
