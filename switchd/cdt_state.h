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
#include <stdint.h>

#define CDT_MAX_REPLICAS 16

/* Immutable once published: what the directory knows of one key's copies. */
struct cdt_state {
	uint64_t completed;	/* completed version; 0 = unknown (fresh entry) */
	uint64_t completed_tsc; /* when `completed` last advanced (replication lag) */
	uint8_t nreplicas;	/* 1..CDT_MAX_REPLICAS once installed */
	uint8_t pad[5];
	uint16_t replicas[CDT_MAX_REPLICAS]; /* node ids holding `completed` */
};

static inline bool cdt_state_has(const struct cdt_state *s, uint16_t node)
{
	for (unsigned i = 0; i < s->nreplicas; i++)
		if (s->replicas[i] == node)
			return true;
	return false;
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
 * A version of 0 never changes anything. A full set (16) stays as it is.
 */
bool cdt_state_on_reply(const struct cdt_state *cur, uint64_t version, uint16_t replier,
			struct cdt_state *next);
bool cdt_state_on_rc_ack(const struct cdt_state *cur, uint64_t version, uint16_t replica,
			 uint16_t home, struct cdt_state *next);

#endif
