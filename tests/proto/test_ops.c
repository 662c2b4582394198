/*
 * test_ops.c - the op table (proto/ops.h): what the helpers and the sets say
 * about each op agrees with its row, and the rows agree with docs/protocol.md
 * (which ops carry a key, which are answered, which a node or the switch serves).
 */
#include <check.h>
#include <stdlib.h>

#include "wire.h"

struct row {
	uint8_t op;
	const char *name;
	unsigned by, attrs;
	enum wire_sw sw;
	enum wire_lane lane;
};

static const struct row rows[] = {
#define X(name, value, str, by, attrs, sw, lane) {value, str, by, attrs, sw, lane},
    WIRE_OPS(X)
#undef X
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

START_TEST(helpers_read_each_row)
{
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];
		uint8_t rep = (uint8_t)(r->op | WIRE_REPLY);

		ck_assert(wire_op_valid(r->op));
		ck_assert_str_eq(wire_op_name(r->op), r->name);
		ck_assert_str_eq(wire_op_row(r->op)->name, r->name);
		ck_assert_uint_eq(wire_op_attrs(r->op), r->attrs);
		ck_assert_uint_eq(wire_op_attrs(rep), r->attrs);
		ck_assert_uint_eq(wire_op_senders(r->op), r->by);
		ck_assert_int_eq(wire_op_sw(r->op), r->sw);
		ck_assert_int_eq(wire_op_lane(r->op), r->lane);
		/* Replies are never routed as requests nor queued at a node. */
		ck_assert_int_eq(wire_op_sw(rep), WIRE_SW_NONE);
		ck_assert_int_eq(wire_op_lane(rep), WIRE_LANE_NONE);
		ck_assert_int_eq(wire_op_is_keyless(r->op), !(r->attrs & WIRE_A_KEY));
		ck_assert_uint_ne(r->by, 0); /* every op has a sender */
	}
}
END_TEST

START_TEST(unknown_ops_have_no_row)
{
	for (unsigned op = 0; op < 0x80; op++) {
		int known = 0;

		for (size_t i = 0; i < NROWS; i++)
			known |= rows[i].op == op;
		ck_assert_int_eq(wire_op_valid((uint8_t)op), known);
		if (known)
			continue;
		ck_assert_uint_eq(wire_op_attrs((uint8_t)op), 0);
		ck_assert_int_eq(wire_op_sw((uint8_t)op), WIRE_SW_NONE);
		ck_assert_int_eq(wire_op_lane((uint8_t)op), WIRE_LANE_NONE);
		ck_assert_str_eq(wire_op_name((uint8_t)op), "?");
		ck_assert_ptr_null(wire_op_row((uint8_t)op)->name);
		ck_assert(
		    !wire_op_is_keyless((uint8_t)op)); /* an unknown op is rejected, not keyless */
	}
}
END_TEST

/* The sets the switch's dispatch is checked against at compile time. */
START_TEST(sets_match_the_rows)
{
	uint64_t route = 0, worker = 0, control = 0, replies = 0, valid = 0;

	for (size_t i = 0; i < NROWS; i++) {
		uint64_t bit = 1ull << rows[i].op;

		valid |= bit;
		route |= rows[i].sw == WIRE_SW_ROUTE ? bit : 0;
		worker |= rows[i].sw == WIRE_SW_WORKER ? bit : 0;
		control |= rows[i].sw == WIRE_SW_CONTROL ? bit : 0;
		replies |=
		    (rows[i].attrs & WIRE_A_ANSWERED) && (rows[i].by & WIRE_BY_SWITCH) ? bit : 0;
	}
	ck_assert_uint_eq(WIRE_OPS_VALID, valid);
	ck_assert_uint_eq(WIRE_OPS_SW_ROUTE, route);
	ck_assert_uint_eq(WIRE_OPS_SW_WORKER, worker);
	ck_assert_uint_eq(WIRE_OPS_SW_CONTROL, control);
	ck_assert_uint_eq(WIRE_OPS_SW_REPLIES, replies);
	ck_assert_uint_eq(WIRE_OPS_RANGE(WIRE_OP_GET, WIRE_OP_DEL), WIRE_OPS_ONE(WIRE_OP_GET) |
									WIRE_OPS_ONE(WIRE_OP_PUT) |
									WIRE_OPS_ONE(WIRE_OP_DEL));
}
END_TEST

/* docs/protocol.md "Ops" and "Control ops", row by row. */
START_TEST(rows_say_what_the_protocol_says)
{
	/* DIGEST and SYNC are the keyless ops; the rest name a key. */
	ck_assert(wire_op_is_keyless(WIRE_OP_DIGEST) && wire_op_is_keyless(WIRE_OP_SYNC));
	ck_assert(!wire_op_is_keyless(WIRE_OP_GET) && !wire_op_is_keyless(WIRE_OP_RC_ACK));
	/* RC_REQ, RC_ACK, DIGEST and SYNC are not answered. */
	ck_assert(!(wire_op_attrs(WIRE_OP_RC_REQ) & WIRE_A_ANSWERED));
	ck_assert(!(wire_op_attrs(WIRE_OP_RC_ACK) & WIRE_A_ANSWERED));
	ck_assert(!(wire_op_attrs(WIRE_OP_DIGEST) & WIRE_A_ANSWERED));
	ck_assert(!(wire_op_attrs(WIRE_OP_SYNC) & WIRE_A_ANSWERED));
	ck_assert(wire_op_attrs(WIRE_OP_HINT) & WIRE_A_ANSWERED);
	/* Payloads: PUT's value and the control payloads. */
	ck_assert(wire_op_attrs(WIRE_OP_PUT) & WIRE_A_VALUE);
	/* CAS: an agent's conditional write, served at the home, never routed by a switch. */
	ck_assert_uint_eq(wire_op_attrs(WIRE_OP_CAS), WIRE_A_KEY | WIRE_A_VALUE | WIRE_A_ANSWERED);
	ck_assert_uint_eq(wire_op_senders(WIRE_OP_CAS), WIRE_BY_AGENT);
	ck_assert_int_eq(wire_op_sw(WIRE_OP_CAS), WIRE_SW_NONE);
	ck_assert_int_eq(wire_op_lane(WIRE_OP_CAS), WIRE_LANE_CLIENT);
	ck_assert_str_eq(wire_op_name(WIRE_OP_CAS | WIRE_REPLY), "CAS_REPLY");
	ck_assert(wire_op_attrs(WIRE_OP_REPLICATE) & WIRE_A_VALUE);
	ck_assert(wire_op_attrs(WIRE_OP_RC_REQ) & WIRE_A_VALUE);
	ck_assert(!(wire_op_attrs(WIRE_OP_GET) & WIRE_A_VALUE));
	/* The node queues replication in its control lane, serves UNREPLICATE on receipt. */
	ck_assert_int_eq(wire_op_lane(WIRE_OP_REPLICATE), WIRE_LANE_CONTROL);
	ck_assert_int_eq(wire_op_lane(WIRE_OP_RC_REQ), WIRE_LANE_CONTROL);
	ck_assert_int_eq(wire_op_lane(WIRE_OP_UNREPLICATE), WIRE_LANE_RX);
	ck_assert_int_eq(wire_op_lane(WIRE_OP_PROBE), WIRE_LANE_CLIENT);
	ck_assert_int_eq(wire_op_lane(WIRE_OP_HINT), WIRE_LANE_NONE);
	/* Only peers send SYNC; only nodes DIGEST. */
	ck_assert_uint_eq(wire_op_senders(WIRE_OP_SYNC), WIRE_BY_PEER);
	ck_assert_uint_eq(wire_op_senders(WIRE_OP_DIGEST), WIRE_BY_NODE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ops");
	TCase *tc = tcase_create("table");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, helpers_read_each_row);
	tcase_add_test(tc, unknown_ops_have_no_row);
	tcase_add_test(tc, sets_match_the_rows);
	tcase_add_test(tc, rows_say_what_the_protocol_says);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
