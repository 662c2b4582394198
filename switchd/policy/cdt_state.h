/*
 * cdt_state.h - what the coherence directory knows of one key's copies, and
 * the pure transitions that are its coherence rules (docs/design.md section 5).
 *
 * No DPDK here: cdt.h publishes these states copy-on-write in its rte_hash
 * (the switch), and sim/ applies the same transitions to its model of the
 * directory, so both follow one set of rules.
 */
#ifndef SKL_SW_CDT_STATE_H
#define SKL_SW_CDT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Replica sets come in two sizes. Up to CDT_SMALL_REPLICAS a state is one
 * 56-byte object, so the common sets cost one fixed-size copy. A larger set
 * (a key hotter than 16 nodes can serve, at hundreds of nodes;
 * directory.max_replicas above 16) is a larger object of the same layout
 * with more replica slots after the header.
 */
#define CDT_SMALL_REPLICAS 16
#define CDT_MAX_REPLICAS   128

/* Immutable once published: what the directory knows of one key's copies. */
struct cdt_state {
	uint64_t completed;	/* completed version; 0 = unknown (fresh entry) */
	uint64_t completed_tsc; /* when `completed` last advanced (replication lag) */
	uint8_t nreplicas;	/* 1..the directory's cap once installed */
	uint8_t pad[5];
	uint16_t replicas[]; /* node ids holding `completed` (nreplicas of them) */
};

/* Bytes of a state with room for n replicas, rounded to its 8-byte alignment. */
#define CDT_STATE_SIZE(n)                                                                          \
	((offsetof(struct cdt_state, replicas) + (n) * sizeof(uint16_t) + 7) & ~(size_t)7)
#define CDT_STATE_SMALL CDT_STATE_SIZE(CDT_SMALL_REPLICAS) /* 56 */

/* Room for a state of any size: one built on the stack, or kept by value (sim/). */
union cdt_state_room {
	struct cdt_state st;
	uint8_t bytes[CDT_STATE_SIZE(CDT_MAX_REPLICAS)];
};

/*
 * The most replicas a set may hold when directory.max_replicas is max: the
 * small size at least (sets grow past `want` by RC_ACKs of write-through
 * holders up to there), max above it.
 */
static inline unsigned cdt_state_cap(unsigned max_replicas)
{
	unsigned cap = max_replicas > CDT_SMALL_REPLICAS ? max_replicas : CDT_SMALL_REPLICAS;

	return cap < CDT_MAX_REPLICAS ? cap : CDT_MAX_REPLICAS;
}

/* Bytes a state with n replicas occupies: a small state's copy is one fixed-size move. */
static inline size_t cdt_state_size(unsigned n)
{
	return n <= CDT_SMALL_REPLICAS ? CDT_STATE_SMALL : CDT_STATE_SIZE(n);
}

/* dst = src; dst has room for src's replicas. */
static inline void cdt_state_copy(struct cdt_state *dst, const struct cdt_state *src)
{
	if (src->nreplicas <= CDT_SMALL_REPLICAS)
		memcpy(dst, src, CDT_STATE_SMALL);
	else
		memcpy(dst, src, CDT_STATE_SIZE(src->nreplicas));
}

static inline bool cdt_state_has(const struct cdt_state *s, uint16_t node)
{
	for (unsigned i = 0; i < s->nreplicas; i++)
		if (s->replicas[i] == node)
			return true;
	return false;
}

/*
 * How many of s's members a read passes over before it weighs the rest: 1
 * (the home) when the set has spare_from members or more
 * (directory.spare_home_from; 0: never) and the home first, else 0. The
 * home applies every write of the key and pushes it to the copies, so its
 * part of the key is its writes: weighed by least expected delay alone, it
 * would take its share of the reads on top of them, and the home of the
 * hottest key would be the busiest node (docs/benchmarks.md). The home is
 * first in every set its write replies and REPLICATEs made; a set whose
 * first member is not the home (a forced pin listing it later, a set a
 * copy's reply of a newer version started) weighs it like the others. The switch's reads and the
 * simulator's both ask here.
 */
static inline unsigned cdt_state_read_skip(const struct cdt_state *s, uint16_t home,
					   uint32_t spare_from)
{
	return spare_from && s->nreplicas >= spare_from && s->replicas[0] == home;
}

/*
 * Transitions (pure: read cur, write next, return whether next differs).
 * These are the coherence rules of docs/design.md section 5:
 *
 * on_reply:  any reply carrying a version (GET/PUT/DEL/REPLICATE replies):
 *            v > completed -> completed = v, set = {replier} (for a write
 *            reply the replier is the home, so set = {home});
 *            v == completed -> replier joins the set; v < completed -> nothing.
 * on_rc_ack: RC_ACK(v) from replica r: v == completed -> r joins the set;
 *            v > completed (a lost write reply) -> completed = v, set =
 *            {home, r} (the home always holds the latest completed version);
 *            v < completed (late or old ack) -> nothing. While completed is
 *            unknown (0, a fresh entry) acks change nothing: one may be a late
 *            ack of a copy older than what the home served meanwhile; the
 *            home's REPLICATE reply makes its version the completed one.
 * without:  the control thread trims a set grown past the replicas its key
 *            wants: next = cur less `node`, same completed version (every
 *            member left holds it). Not the home, never the last member.
 * A version of 0 never changes anything. A full set (cap replicas,
 * cdt_state_cap()) stays as it is. next has room for cap replicas.
 */
bool cdt_state_on_reply(const struct cdt_state *cur, uint64_t version, uint16_t replier,
			unsigned cap, struct cdt_state *next);
bool cdt_state_on_rc_ack(const struct cdt_state *cur, uint64_t version, uint16_t replica,
			 uint16_t home, unsigned cap, struct cdt_state *next);
bool cdt_state_without(const struct cdt_state *cur, uint16_t node, uint16_t home,
		       struct cdt_state *next);

#endif
