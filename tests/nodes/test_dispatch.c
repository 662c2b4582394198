/*
 * test_dispatch.c - the node serves exactly the ops the op table (proto/ops.h)
 * gives a lane: each has a handler, and no op without a lane has one.
 */
#include <check.h>
#include <stdlib.h>

#include "server.h"
#include "wire.h"

START_TEST(every_op_with_a_lane_has_a_handler)
{
#define X(name, value, str, by, attrs, sw, lane)                                                   \
	ck_assert_msg(server_serves(value) == ((lane) != WIRE_LANE_NONE),                          \
		      "%s: lane %d, handler %d", str, (int)(lane), (int)server_serves(value));
	WIRE_OPS(X)
#undef X
}
END_TEST

START_TEST(replies_and_unknown_ops_have_none)
{
	for (unsigned op = 0; op < 256; op++)
		if (!wire_op_valid((uint8_t)op) || (op & WIRE_REPLY))
			ck_assert_msg(!server_serves((uint8_t)op), "op 0x%02x", op);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("node_dispatch");
	TCase *tc = tcase_create("dispatch");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, every_op_with_a_lane_has_a_handler);
	tcase_add_test(tc, replies_and_unknown_ops_have_none);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
