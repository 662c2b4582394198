/*
 * ringmsg.h - the payloads of the ring-change ops (docs/protocol.md, "Ring
 * changes"; docs/design.md section 12):
 *
 *   RING     switch -> node: header version = the ring epoch (rchange.h);
 *            value = be64 previous ring version, be16 n, n x {be16 id,
 *            be16 weight}: the previous ring's members (their names and
 *            addresses are in the new config), then be64 the highest
 *            version floor the switch heard of in this change. Reply:
 *            version = the node's epoch, status OK or UNAVAILABLE (its
 *            config is not that version), value = u8 flags (bit0: its
 *            warm-up is done), be32 its arcs done, be64 its version floor.
 *   FETCH    new home -> previous home: key; header version = the asker's
 *            epoch. Reply: OK with version = the record's and value = a
 *            record prefix and the value bytes; NOT_FOUND (no record) with
 *            version = the previous home's version floor; UNAVAILABLE (not
 *            at that ring version yet).
 *   MIGRATE  previous home -> new home: key; header version = the record's
 *            version; value = a record prefix and the value bytes. Reply:
 *            OK (held, or something newer), UNAVAILABLE (another version).
 *
 * The record prefix is 8 bytes, as RC_REQ's, so that any record a node
 * accepted fits: u8 kind (0 value, 1 tombstone), u8 n the writes that
 * follow (0..8), be16 the ring version's low 16 bits (a check that both
 * ends are in one change), be32 remaining TTL in ms (0: none); then n x 17
 * bytes, the at-most-once outcomes the previous home remembers for the key
 * {be64 req_id, be64 version, u8 status (OK or NOT_FOUND)}, highest version
 * first (nodes/dedup.h: a write retried across the cut-over is answered at
 * the new home, not applied twice).
 */
#ifndef SKL_RINGMSG_H
#define SKL_RINGMSG_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define WIRE_RING_MAX_MEMBERS 255
#define WIRE_MIG_PREFIX_LEN   8
#define WIRE_MIG_MAX_WRITES   8
#define WIRE_MIG_WRITE_LEN    17
/* The longest prefix: the 8 bytes and every write. */
#define WIRE_MIG_PREFIX_MAX   (WIRE_MIG_PREFIX_LEN + WIRE_MIG_MAX_WRITES * WIRE_MIG_WRITE_LEN)
#define WIRE_RING_F_WARM_DONE 0x1
#define WIRE_RING_REPLY_LEN   13

struct wire_ring_member {
	uint16_t id;
	uint16_t weight;
};

struct wire_ring {
	uint64_t prev_version;
	uint16_t nmembers;
	struct wire_ring_member members[WIRE_RING_MAX_MEMBERS];
	uint64_t floor; /* the highest version floor of any node's RING reply (0: none yet) */
};

/* RING value into buf; its length or -EMSGSIZE / -EINVAL (too many members, id 0). */
int wire_ring_encode(const struct wire_ring *r, uint8_t *buf, size_t cap);
/* A RING request's value; 0 or -EINVAL (length, count, id 0, weight 0 or above 100). */
int wire_ring_decode(const struct wire_msg *msg, struct wire_ring *r);

/* A RING reply's value: the node's warm-up and its version floor. */
struct wire_ring_reply {
	uint8_t flags;	    /* WIRE_RING_F_WARM_DONE */
	uint32_t arcs_done; /* of its arcs as a previous home, the first this many are done */
	uint64_t floor;	    /* its version floor (nodes/store.h) */
};

/* Into buf[0..WIRE_RING_REPLY_LEN): the length, or -EMSGSIZE. */
int wire_ring_reply_encode(const struct wire_ring_reply *r, uint8_t *buf, size_t cap);
/* A RING reply's value; 0 or -EINVAL (not WIRE_RING_REPLY_LEN bytes). */
int wire_ring_reply_decode(const struct wire_msg *msg, struct wire_ring_reply *r);

struct wire_mig_write {
	uint64_t req_id;
	uint64_t version;
	uint8_t status; /* WIRE_ST_OK or WIRE_ST_NOT_FOUND */
};

struct wire_mig_prefix {
	uint8_t kind; /* 0 value, 1 tombstone */
	uint16_t version_low;
	uint32_t ttl_ms;
	uint8_t nwrites;
	struct wire_mig_write writes[WIRE_MIG_MAX_WRITES];
};

/* The prefix with its writes into buf: its length, -EMSGSIZE or -EINVAL. */
int wire_mig_prefix_encode(const struct wire_mig_prefix *p, uint8_t *buf, size_t cap);
/*
 * The prefix of a FETCH reply's or MIGRATE's value; the value bytes follow
 * it (*value, *value_len). 0 or -EINVAL (short, unknown kind, a tombstone
 * with bytes, more than WIRE_MIG_MAX_WRITES writes, a write's req_id 0 or
 * status other than OK and NOT_FOUND).
 */
int wire_mig_prefix_decode(const struct wire_msg *msg, struct wire_mig_prefix *p,
			   const uint8_t **value, uint32_t *value_len);

#endif
