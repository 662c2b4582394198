/*
 * ops.h - the op table: one row per wire op with its attributes (docs/design.md
 * section 3, docs/protocol.md "Ops"), like Redis's command table.
 *
 * Everything that depends on what an op is derives from this one list:
 * wire_decode()'s set of valid ops and its key-length rule (wire.h), the
 * node's handler array and queue lane (nodes/server.c), and the cases of the
 * switch's per-datagram dispatch (switchd/pipeline.c checks its switch on op
 * against these constants at compile time, so it costs nothing per packet).
 * A new op is one new row here; the compiler (switchd/pipeline.c),
 * tests/proto/test_ops.c and tests/nodes/test_dispatch.c then name every
 * place that must learn it.
 */
#ifndef SKL_OPS_H
#define SKL_OPS_H

#include <stdint.h>

#define WIRE_REPLY 0x80u /* a reply is op | WIRE_REPLY */

/* Who sends a request of an op (bits of the `by` column). */
#define WIRE_BY_AGENT  0x1u /* a client (libskewless) */
#define WIRE_BY_SWITCH 0x2u /* a switch towards a node (its own, or a request it forwards) */
#define WIRE_BY_NODE   0x4u /* a storage node */
#define WIRE_BY_PEER   0x8u /* a switch towards a peer switch */

/* Attributes (bits of the `attrs` column). */
#define WIRE_A_KEY	0x1u /* names a key: key_len 1..WIRE_MAX_KEY (else key_len is 0) */
#define WIRE_A_VALUE	0x2u /* the request carries a value: PUT's, or a control payload */
#define WIRE_A_ANSWERED 0x4u /* answered by a reply, op | WIRE_REPLY */

/*
 * What the switch does with a request of the op (the `sw` column). A reply
 * reaches the switch only for an answered op a switch sends (WIRE_BY_SWITCH):
 * it is forwarded to the client when the op is WIRE_SW_ROUTE, else consumed.
 */
enum wire_sw {
	WIRE_SW_NONE,	 /* not for the switch: counted and dropped */
	WIRE_SW_ROUTE,	 /* a data op: routed to a node or to the key's owner switch */
	WIRE_SW_WORKER,	 /* served by the worker that receives it (HINT, RC_ACK) */
	WIRE_SW_CONTROL, /* handed to the control thread (DIGEST, SYNC) */
};

/* Where a node serves a request of the op (the `lane` column). */
enum wire_lane {
	WIRE_LANE_NONE,	   /* a node does not serve it: answered BAD_REQUEST */
	WIRE_LANE_CLIENT,  /* queued in the client lane (data ops, PROBE) */
	WIRE_LANE_CONTROL, /* queued in the control lane (replication) */
	WIRE_LANE_RX,	   /* served by the receive thread, never queued */
};

/*
 * X(enum name, value, log name, by, attrs, sw, lane). Values stay below 64:
 * the set of valid ops is one 64-bit word.
 */
#define WIRE_OPS(X)                                                                                \
	X(WIRE_OP_GET, 0x01, "GET", WIRE_BY_AGENT | WIRE_BY_SWITCH | WIRE_BY_PEER,                 \
	  WIRE_A_KEY | WIRE_A_ANSWERED, WIRE_SW_ROUTE, WIRE_LANE_CLIENT)                           \
	X(WIRE_OP_PUT, 0x02, "PUT", WIRE_BY_AGENT | WIRE_BY_SWITCH | WIRE_BY_PEER,                 \
	  WIRE_A_KEY | WIRE_A_VALUE | WIRE_A_ANSWERED, WIRE_SW_ROUTE, WIRE_LANE_CLIENT)            \
	X(WIRE_OP_DEL, 0x03, "DEL", WIRE_BY_AGENT | WIRE_BY_SWITCH | WIRE_BY_PEER,                 \
	  WIRE_A_KEY | WIRE_A_ANSWERED, WIRE_SW_ROUTE, WIRE_LANE_CLIENT)                           \
	X(WIRE_OP_CAS, 0x04, "CAS", WIRE_BY_AGENT, WIRE_A_KEY | WIRE_A_VALUE | WIRE_A_ANSWERED,    \
	  WIRE_SW_NONE, WIRE_LANE_CLIENT)                                                          \
	X(WIRE_OP_RC_REQ, 0x10, "RC_REQ", WIRE_BY_NODE, WIRE_A_KEY | WIRE_A_VALUE, WIRE_SW_NONE,   \
	  WIRE_LANE_CONTROL)                                                                       \
	X(WIRE_OP_RC_ACK, 0x11, "RC_ACK", WIRE_BY_NODE, WIRE_A_KEY, WIRE_SW_WORKER,                \
	  WIRE_LANE_NONE)                                                                          \
	X(WIRE_OP_REPLICATE, 0x12, "REPLICATE", WIRE_BY_SWITCH,                                    \
	  WIRE_A_KEY | WIRE_A_VALUE | WIRE_A_ANSWERED, WIRE_SW_NONE, WIRE_LANE_CONTROL)            \
	X(WIRE_OP_UNREPLICATE, 0x13, "UNREPLICATE", WIRE_BY_SWITCH | WIRE_BY_NODE,                 \
	  WIRE_A_KEY | WIRE_A_ANSWERED, WIRE_SW_NONE, WIRE_LANE_RX)                                \
	X(WIRE_OP_RING, 0x14, "RING", WIRE_BY_SWITCH, WIRE_A_VALUE | WIRE_A_ANSWERED,              \
	  WIRE_SW_NONE, WIRE_LANE_CONTROL)                                                         \
	X(WIRE_OP_FETCH, 0x15, "FETCH", WIRE_BY_NODE, WIRE_A_KEY | WIRE_A_ANSWERED, WIRE_SW_NONE,  \
	  WIRE_LANE_CONTROL)                                                                       \
	X(WIRE_OP_MIGRATE, 0x16, "MIGRATE", WIRE_BY_NODE,                                          \
	  WIRE_A_KEY | WIRE_A_VALUE | WIRE_A_ANSWERED, WIRE_SW_NONE, WIRE_LANE_CONTROL)            \
	X(WIRE_OP_VIEW, 0x17, "VIEW", WIRE_BY_SWITCH | WIRE_BY_NODE,                               \
	  WIRE_A_VALUE | WIRE_A_ANSWERED, WIRE_SW_NONE, WIRE_LANE_CONTROL)                         \
	X(WIRE_OP_MEMBER, 0x18, "MEMBER", WIRE_BY_NODE,                                            \
	  WIRE_A_KEY | WIRE_A_VALUE | WIRE_A_ANSWERED, WIRE_SW_NONE, WIRE_LANE_CONTROL)            \
	X(WIRE_OP_CATCHUP, 0x19, "CATCHUP", WIRE_BY_NODE, WIRE_A_VALUE | WIRE_A_ANSWERED,          \
	  WIRE_SW_NONE, WIRE_LANE_CONTROL)                                                         \
	X(WIRE_OP_COMMIT, 0x1a, "COMMIT", WIRE_BY_NODE, WIRE_A_KEY, WIRE_SW_NONE, WIRE_LANE_RX)    \
	X(WIRE_OP_DIGEST, 0x20, "DIGEST", WIRE_BY_NODE, WIRE_A_VALUE, WIRE_SW_CONTROL,             \
	  WIRE_LANE_NONE)                                                                          \
	X(WIRE_OP_PROBE, 0x21, "PROBE", WIRE_BY_AGENT, WIRE_A_KEY | WIRE_A_ANSWERED, WIRE_SW_NONE, \
	  WIRE_LANE_CLIENT)                                                                        \
	X(WIRE_OP_HINT, 0x22, "HINT", WIRE_BY_AGENT, WIRE_A_KEY | WIRE_A_ANSWERED, WIRE_SW_WORKER, \
	  WIRE_LANE_NONE)                                                                          \
	X(WIRE_OP_SYNC, 0x30, "SYNC", WIRE_BY_PEER, WIRE_A_VALUE, WIRE_SW_CONTROL, WIRE_LANE_NONE)

enum wire_op {
#define X(name, value, ...) name = value,
	WIRE_OPS(X)
#undef X
};

#define WIRE_OP_BELOW_64(name, value, ...) _Static_assert((value) < 64, "an op above 63");
WIRE_OPS(WIRE_OP_BELOW_64)
#undef WIRE_OP_BELOW_64

/*
 * Sets of ops as bits of one word, compile-time constants for checks that
 * cost nothing at run time (switchd/pipeline.c asserts its dispatch by them).
 */
#define WIRE_OP_IF_(cond, value)       | ((cond) ? 1ull << (value) : 0ull)
#define WIRE_OP_ALL_(name, value, ...) | (1ull << (value))
#define WIRE_OP_ROUTE_(name, value, str, by, attrs, sw, lane)                                      \
	WIRE_OP_IF_((sw) == WIRE_SW_ROUTE, value)
#define WIRE_OP_WORKER_(name, value, str, by, attrs, sw, lane)                                     \
	WIRE_OP_IF_((sw) == WIRE_SW_WORKER, value)
#define WIRE_OP_CONTROL_(name, value, str, by, attrs, sw, lane)                                    \
	WIRE_OP_IF_((sw) == WIRE_SW_CONTROL, value)
#define WIRE_OP_SW_REPLY_(name, value, str, by, attrs, sw, lane)                                   \
	WIRE_OP_IF_(((attrs)&WIRE_A_ANSWERED) && ((by)&WIRE_BY_SWITCH), value)

#define WIRE_OPS_VALID (0ull WIRE_OPS(WIRE_OP_ALL_))
/* Requests the switch routes as data ops, serves in a worker, hands to the control thread. */
#define WIRE_OPS_SW_ROUTE   (0ull WIRE_OPS(WIRE_OP_ROUTE_))
#define WIRE_OPS_SW_WORKER  (0ull WIRE_OPS(WIRE_OP_WORKER_))
#define WIRE_OPS_SW_CONTROL (0ull WIRE_OPS(WIRE_OP_CONTROL_))
/* Ops whose replies the switch takes: those it sends (or forwards) that are answered. */
#define WIRE_OPS_SW_REPLIES (0ull WIRE_OPS(WIRE_OP_SW_REPLY_))
/* The set of ops a..b (inclusive), to compare the sets with. */
#define WIRE_OPS_RANGE(a, b) ((2ull << (b)) - (1ull << (a)))
#define WIRE_OPS_ONE(a)	     (1ull << (a))

/* One row of the table, as data (ops.c); indexed by op in wire_op_table[]. */
struct wire_op_row {
	const char *name; /* NULL: no such op */
	uint8_t by;	  /* WIRE_BY_* */
	uint8_t attrs;	  /* WIRE_A_* */
	uint8_t sw;	  /* enum wire_sw */
	uint8_t lane;	  /* enum wire_lane */
};

/* Every op's row at its value; unknown values (0 among them) have a zero row. */
extern const struct wire_op_row wire_op_table[64];

/* Whether op (without WIRE_REPLY) is a known op. A bit test: wire_decode() runs it per datagram. */
static inline int wire_op_valid(uint8_t op)
{
	return op < 64 && ((WIRE_OPS_VALID >> op) & 1);
}

/* The row of op, WIRE_REPLY ignored; the zero row for an unknown op. */
static inline const struct wire_op_row *wire_op_row(uint8_t op)
{
	op &= (uint8_t)~WIRE_REPLY;
	return &wire_op_table[op < 64 ? op : 0];
}

/* The attributes (WIRE_A_*) of op (WIRE_REPLY ignored); 0 for an unknown op. */
static inline unsigned wire_op_attrs(uint8_t op)
{
	return wire_op_row(op)->attrs;
}

/* Who may send a request of op (WIRE_BY_* bits); 0 for an unknown op. */
static inline unsigned wire_op_senders(uint8_t op)
{
	return wire_op_row(op)->by;
}

/* What the switch does with a request of op (WIRE_SW_NONE for replies and unknown ops). */
static inline enum wire_sw wire_op_sw(uint8_t op)
{
	return (op & WIRE_REPLY) ? WIRE_SW_NONE : (enum wire_sw)wire_op_row(op)->sw;
}

/* Where a node serves a request of op (WIRE_LANE_NONE for replies and unknown ops). */
static inline enum wire_lane wire_op_lane(uint8_t op)
{
	return (op & WIRE_REPLY) ? WIRE_LANE_NONE : (enum wire_lane)wire_op_row(op)->lane;
}

/* Ops that name no key: a digest or a peer sync carries only a payload. */
static inline int wire_op_is_keyless(uint8_t op)
{
	return wire_op_valid(op & (uint8_t)~WIRE_REPLY) && !(wire_op_attrs(op) & WIRE_A_KEY);
}

/* Log name of op ("GET", "GET_REPLY"); "?" when unknown. */
const char *wire_op_name(uint8_t op);

#endif
