/*
 * group.h - replica groups (docs/design.md section 13): which nodes hold a
 * key, and the payloads of the ops that keep them (docs/protocol.md,
 * "Replica groups"):
 *
 *   VIEW     switch -> node: header version = the view number; value =
 *            five 32-byte bitmaps (bit id % 8 of byte id / 8): the nodes
 *            the view marks down, catching up, out (left out of every
 *            group), joining (taking groups new to them), and the out set
 *            the joining nodes' old groups are computed with; then be64 the
 *            lease: the req_id of the node's answer to an earlier VIEW from
 *            which this one grants it a lease (0: none; docs/design.md
 *            section 13, "View leases"). Reply:
 *            version = the view the node holds; value = WIRE_VIEW_REPLY_LEN
 *            bytes {u8 state, u8 0, be16 sources left, be32 the nodes
 *            its config has, be64 records taken}: where its catch-up is,
 *            and whether it knows the nodes a ring change added. A node
 *            that gets a VIEW naming a node its config does not have reads
 *            its config file again.
 *   MEMBER   primary -> member: key; header version = the record's
 *            version; value = be64 the pusher's view, then a record prefix
 *            (ringmsg.h: kind, at-most-once outcomes, ttl; its ring-version
 *            field is 0) and the value bytes. Reply: OK with version = the
 *            version the member holds after it; UNAVAILABLE when the push
 *            comes from an older view than the member's.
 *   CATCHUP  catching-up node -> any node: no key in the request but the
 *            cursor (0..WIRE_MAX_KEY bytes: the scan goes on strictly after
 *            it; from the first key when empty); value = be16 the asking
 *            node's id, be16 flags (CATCHUP_NEW_ONLY: only groups the
 *            view marks it joining), be64 the view that marks it catching
 *            up or joining. Reply: OK with key = the next key of a group
 *            the asker is a member of (and new to, with CATCHUP_NEW_ONLY),
 *            version = its record's and value = a record prefix and the
 *            value bytes; OK with a key and no value
 *            when the scan's step visited only other groups' keys (go on
 *            after it); NOT_FOUND at the end, version = the answering node's
 *            version floor.
 *   COMMIT   primary -> member: key; header version = a version every
 *            member holds; not answered (the member's key is clean again).
 *
 * Pure functions, no allocation; decoders return 0 or -EBADMSG, encoders the
 * bytes written or -EMSGSIZE.
 */
#ifndef SKL_GROUP_H
#define SKL_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"
#include "wire.h"

#define GROUP_MAX	     8 /* service.replicas' bound */
#define GROUP_BITMAP	     32 /* bytes: node ids 0..255 */
#define GROUP_VIEW_LEN	     (5 * GROUP_BITMAP) /* a view's bitmaps */
#define WIRE_VIEW_LEN	     (GROUP_VIEW_LEN + 8)
#define WIRE_VIEW_REPLY_LEN  (16 + GROUP_VIEW_LEN)
#define WIRE_MEMBER_VIEW_LEN 8

/*
 * The group of the key at point: its home and the next r - 1 distinct nodes
 * clockwise (Dynamo's preference list), into ids[0..). Returns how many (r,
 * or fewer when the ring has fewer nodes); ids[0] is ring_lookup(point).
 */
unsigned ring_group(const struct ring *ring, uint32_t point, unsigned r, uint16_t *ids);
/* The same without the nodes in bitmap out (NULL: none), which the walk passes by. */
unsigned ring_group_without(const struct ring *ring, uint32_t point, unsigned r,
			    const uint8_t *out, uint16_t *ids);

static inline bool group_bit(const uint8_t *map, unsigned id)
{
	return id < 8 * GROUP_BITMAP && (map[id / 8] >> (id % 8)) & 1;
}

static inline void group_set_bit(uint8_t *map, unsigned id)
{
	if (id < 8 * GROUP_BITMAP)
		map[id / 8] |= (uint8_t)(1u << (id % 8));
}

static inline void group_clear_bit(uint8_t *map, unsigned id)
{
	if (id < 8 * GROUP_BITMAP)
		map[id / 8] &= (uint8_t)~(1u << (id % 8));
}

/*
 * A view: the nodes it marks down, and those it marks catching up. Nodes
 * out (down past service.repair_after_ms) are in no group; nodes joining
 * are members of groups they were not in with the out set was_out, and
 * take those groups' records before they serve them (docs/design.md
 * section 13, "Repair").
 */
struct wire_view {
	uint64_t number;
	uint8_t down[GROUP_BITMAP];
	uint8_t catching[GROUP_BITMAP];
	uint8_t out[GROUP_BITMAP];
	uint8_t joining[GROUP_BITMAP];
	uint8_t was_out[GROUP_BITMAP];
	uint64_t lease; /* a VIEW's lease (its answers carry none): see above */
};

/* The group of the key at point under view: ring_group() without its out nodes. */
unsigned view_group(const struct ring *ring, const struct wire_view *view, uint32_t point,
		    unsigned r, uint16_t *ids);
/*
 * Whether member id of that group is new to it: joining, and not in the
 * group computed with was_out. A new member takes pushes but serves nothing.
 */
bool group_is_new(const struct ring *ring, const struct wire_view *view, uint32_t point,
		  unsigned r, uint16_t id);
/* Whether member id may serve the key: neither down, catching up, nor new to its group. */
bool group_serves(const struct ring *ring, const struct wire_view *view, uint32_t point,
		  unsigned r, uint16_t id);
/*
 * The first member of ids[0..n), the key's group at point, that serves it
 * (the key's primary), or 0 when there is none.
 */
uint16_t group_primary(const struct ring *ring, const struct wire_view *view, uint32_t point,
		       unsigned r, const uint16_t *ids, unsigned n);

/* VIEW's value (the view and its lease) into buf[0..WIRE_VIEW_LEN). */
int wire_view_encode(const struct wire_view *v, uint8_t *buf, size_t cap);
/* A VIEW request (number from the header, 0: a query); -EBADMSG for another length. */
int wire_view_decode(const struct wire_msg *msg, struct wire_view *v);

enum wire_view_state {
	WIRE_VIEW_SERVING = 0,	/* caught up, and the view it holds says so */
	WIRE_VIEW_CATCHING = 1, /* taking its groups' records from the others */
	WIRE_VIEW_CAUGHT_UP = 2, /* done: waits for a view that marks it up */
	WIRE_VIEW_JOINING = 3,	 /* serving, and taking the records of groups new to it */
	WIRE_VIEW_JOINED = 4	 /* serving, done: waits for a view that ends its join */
};

/* A node in this state serves its groups (a joining one: those not new to it). */
static inline bool wire_view_state_serves(int state)
{
	return state == WIRE_VIEW_SERVING || state == WIRE_VIEW_JOINING || state == WIRE_VIEW_JOINED;
}

/* CATCHUP's flags: only the groups the view marks the asker new to (a join). */
#define CATCHUP_NEW_ONLY 1

struct wire_view_reply {
	uint8_t state;	       /* enum wire_view_state */
	uint16_t sources_left; /* nodes its catch-up has still to read */
	uint32_t config_nodes; /* the nodes its config has (a config only gains nodes) */
	uint64_t records;      /* records its catch-up took */
	struct wire_view view; /* the view it holds (number: the header's version) */
};

int wire_view_reply_encode(const struct wire_view_reply *r, uint8_t *buf, size_t cap);
int wire_view_reply_decode(const struct wire_msg *msg, struct wire_view_reply *r);

#endif
