/*
 * test_resp.c - the RESP codec of skewless-proxy: requests parsed whole, in
 * pieces, inline and malformed (with Redis's error texts), and replies in
 * RESP2 and RESP3.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

static enum resp_parse parse(const char *s, size_t len, struct resp_req *req, size_t *used,
			     char *err)
{
	return resp_parse((const uint8_t *)s, len, req, used, err, 128);
}

static void arg_eq(const struct resp_req *req, int i, const char *want, size_t len)
{
	ck_assert_uint_eq(req->argvlen[i], len);
	ck_assert_mem_eq(req->argv[i], want, len);
}

START_TEST(multibulk_whole_and_pipelined)
{
	static const char in[] = "*2\r\n$3\r\nGET\r\n$3\r\na\0b\r\n*1\r\n$4\r\nPING\r\n";
	struct resp_req req = {0};
	size_t used, off = 0;
	char err[128];

	ck_assert_int_eq(parse(in, sizeof(in) - 1, &req, &used, err), RESP_PARSE_OK);
	ck_assert_int_eq(req.argc, 2);
	arg_eq(&req, 0, "GET", 3);
	arg_eq(&req, 1, "a\0b", 3); /* binary-safe */
	off = used;
	ck_assert_int_eq(parse(in + off, sizeof(in) - 1 - off, &req, &used, err), RESP_PARSE_OK);
	ck_assert_int_eq(req.argc, 1);
	arg_eq(&req, 0, "PING", 4);
	ck_assert_uint_eq(off + used, sizeof(in) - 1);
	resp_req_free(&req);
}
END_TEST

/* Every prefix of a request is incomplete, never an error. */
START_TEST(every_prefix_asks_for_more)
{
	static const char in[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123456789\r\n";
	struct resp_req req = {0};
	size_t used;
	char err[128];

	for (size_t n = 0; n < sizeof(in) - 1; n++)
		ck_assert_msg(parse(in, n, &req, &used, err) == RESP_PARSE_MORE, "prefix %zu", n);
	ck_assert_int_eq(parse(in, sizeof(in) - 1, &req, &used, err), RESP_PARSE_OK);
	arg_eq(&req, 2, "0123456789", 10);
	resp_req_free(&req);
}
END_TEST

START_TEST(inline_commands)
{
	struct resp_req req = {0};
	size_t used;
	char err[128];

	ck_assert_int_eq(parse("SET  k\tv\r\nX", 11, &req, &used, err), RESP_PARSE_OK);
	ck_assert_int_eq(req.argc, 3);
	arg_eq(&req, 2, "v", 1);
	ck_assert_uint_eq(used, 10);
	ck_assert_int_eq(parse("PING\n", 5, &req, &used, err), RESP_PARSE_OK);
	ck_assert_int_eq(req.argc, 1);
	ck_assert_int_eq(parse("\r\n", 2, &req, &used, err), RESP_PARSE_OK);
	ck_assert_int_eq(req.argc, 0); /* an empty line is skipped */
	ck_assert_int_eq(parse("PIN", 3, &req, &used, err), RESP_PARSE_MORE);
	resp_req_free(&req);
}
END_TEST

START_TEST(malformed_requests)
{
	static const struct {
		const char *in, *err;
	} cases[] = {
	    {"*x\r\n", "Protocol error: invalid multibulk length"},
	    {"*2000000\r\n", "Protocol error: invalid multibulk length"},
	    {"*1\r\n:3\r\n", "Protocol error: expected '$', got ':'"},
	    {"*1\r\n$-2\r\n", "Protocol error: invalid bulk length"},
	    {"*1\r\n$99999999999\r\n", "Protocol error: invalid bulk length"},
	    {"*1\r\n$1\r\nab\r\n", "Protocol error: expected CRLF after bulk"},
	};
	struct resp_req req = {0};
	size_t used;
	char err[128], *big;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(parse(cases[i].in, strlen(cases[i].in), &req, &used, err),
				 RESP_PARSE_ERROR);
		ck_assert_str_eq(err, cases[i].err);
	}
	big = malloc(RESP_MAX_INLINE + 2);
	memset(big, 'a', RESP_MAX_INLINE + 2);
	ck_assert_int_eq(parse(big, RESP_MAX_INLINE + 2, &req, &used, err), RESP_PARSE_ERROR);
	ck_assert_str_eq(err, "Protocol error: too big inline request");
	free(big);
	resp_req_free(&req);
}
END_TEST

START_TEST(replies_in_both_protocols)
{
	struct rbuf b = {0};

	resp_simple(&b, "OK");
	resp_error(&b, "ERR bad\r\nthing %d", 7);
	resp_int(&b, -42);
	resp_bulk(&b, "a\0b", 3);
	resp_null(&b, 2);
	resp_null(&b, 3);
	resp_map(&b, 2, 2);
	resp_map(&b, 2, 3);
	resp_null_array(&b, 2);
	rbuf_append(&b, "", 1);
	ck_assert_mem_eq(
	    b.p,
	    "+OK\r\n-ERR bad  thing 7\r\n:-42\r\n$3\r\na\0b\r\n$-1\r\n_\r\n*4\r\n%2\r\n"
	    "*-1\r\n",
	    b.len);
	rbuf_consume(&b, 5);
	ck_assert_mem_eq(b.p, "-ERR", 4);
	rbuf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proxy_resp");
	TCase *tc = tcase_create("codec");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, multibulk_whole_and_pipelined);
	tcase_add_test(tc, every_prefix_asks_for_more);
	tcase_add_test(tc, inline_commands);
	tcase_add_test(tc, malformed_requests);
	tcase_add_test(tc, replies_in_both_protocols);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
