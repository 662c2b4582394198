/*
 * test_prom.c - base/: the exposition format (families grouped whatever the
 * order samples come in, HELP and TYPE once, escaping, name checks,
 * cumulative histogram buckets) and /metrics over real HTTP (libmicrohttpd,
 * driven from this thread as the switch drives it), checked by promtool.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/http_fetch.h"
#include "httpd.h"
#include "prom.h"

static char *render_two_nodes(size_t *len)
{
	struct prom *p = prom_new();
	const struct prom_label n1[] = {{"node", "n1"}}, n2[] = {{"node", "n\"2\\"}};
	char *out;

	ck_assert_ptr_nonnull(p);
	/* One object at a time, as a formatter walks them. */
	ck_assert_int_eq(prom_add(p, "x_inflight", "Requests in flight", PROM_GAUGE, n1, 1, 3), 0);
	ck_assert_int_eq(prom_add(p, "x_up", "Up", PROM_GAUGE, n1, 1, 1), 0);
	ck_assert_int_eq(prom_add(p, "x_inflight", "Requests in flight", PROM_GAUGE, n2, 1, 4), 0);
	ck_assert_int_eq(prom_add(p, "x_up", "Up", PROM_GAUGE, n2, 1, 0), 0);
	out = prom_render(p, len);
	prom_free(p);
	return out;
}

START_TEST(families_grouped_and_escaped)
{
	size_t len;
	char *out = render_two_nodes(&len);

	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(strlen(out), len);
	ck_assert_str_eq(out, "# HELP x_inflight Requests in flight\n"
			      "# TYPE x_inflight gauge\n"
			      "x_inflight{node=\"n1\"} 3\n"
			      "x_inflight{node=\"n\\\"2\\\\\"} 4\n"
			      "# HELP x_up Up\n"
			      "# TYPE x_up gauge\n"
			      "x_up{node=\"n1\"} 1\n"
			      "x_up{node=\"n\\\"2\\\\\"} 0\n");
	free(out);
}
END_TEST

START_TEST(bad_names_and_type_clash)
{
	struct prom *p = prom_new();
	const struct prom_label bad[] = {{"no-dash", "v"}};
	size_t len;

	ck_assert_int_eq(prom_add(p, "9starts_with_digit", "h", PROM_COUNTER, NULL, 0, 1), -EINVAL);
	prom_free(p);
	p = prom_new();
	ck_assert_int_eq(prom_add(p, "ok_total", "h", PROM_COUNTER, bad, 1, 1), -EINVAL);
	prom_free(p);
	p = prom_new();
	ck_assert_int_eq(prom_add(p, "a", "h", PROM_COUNTER, NULL, 0, 1), 0);
	ck_assert_int_eq(prom_add(p, "a", "h", PROM_GAUGE, NULL, 0, 1), -EINVAL);
	/* The first error sticks: nothing half-valid is served. */
	ck_assert_ptr_null(prom_render(p, &len));
	ck_assert_int_eq(errno, EINVAL);
	prom_free(p);
}
END_TEST

START_TEST(histogram_buckets_cumulative)
{
	static const double bounds[] = {0.001, 0.01, 0.1};
	struct prom *p = prom_new();
	const struct prom_label l[] = {{"node", "n1"}};
	struct prom_hist h;
	size_t len;
	char *out;

	ck_assert_int_eq(prom_hist_init(&h, bounds, 3), 0);
	prom_hist_observe_ns(&h, 500000);     /* 0.5 ms */
	prom_hist_observe_ns(&h, 1000000);    /* 1 ms: le="0.001" is inclusive */
	prom_hist_observe_ns(&h, 50000000);   /* 50 ms */
	prom_hist_observe_ns(&h, 2000000000); /* 2 s: +Inf only */
	ck_assert_int_eq(prom_add_hist(p, "d_seconds", "delay", l, 1, &h), 0);
	out = prom_render(p, &len);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(strstr(out, "# TYPE d_seconds histogram\n"
					  "d_seconds_bucket{node=\"n1\",le=\"0.001\"} 2\n"
					  "d_seconds_bucket{node=\"n1\",le=\"0.01\"} 2\n"
					  "d_seconds_bucket{node=\"n1\",le=\"0.1\"} 3\n"
					  "d_seconds_bucket{node=\"n1\",le=\"+Inf\"} 4\n"
					  "d_seconds_sum{node=\"n1\"} 2.0515\n"
					  "d_seconds_count{node=\"n1\"} 4\n"));
	free(out);
	prom_free(p);
	ck_assert_int_eq(prom_hist_init(&h, (const double[]){1, 1}, 2), -EINVAL);
}
END_TEST

static char *render_cb(void *arg, size_t *len)
{
	(*(int *)arg)++;
	return render_two_nodes(len);
}

/* One request against h, served from this thread (HTTPD_EXTERNAL), at most 5 s. */
static void get(struct httpd *h, const char *request, char *reply, size_t cap)
{
	struct http_fetch fe = {httpd_port(h), request, reply, cap};
	struct http_fetch *f = &fe;
	pthread_t t;
	void *done;

	ck_assert_int_eq(pthread_create(&t, NULL, http_fetch_run, f), 0);
	for (int i = 0; i < 500 && pthread_tryjoin_np(t, &done) == EBUSY; i++) {
		struct pollfd pf = {.fd = httpd_fd(h), .events = POLLIN};

		poll(&pf, 1, 10);
		httpd_run(h);
	}
	ck_assert_msg(reply[0], "no answer from the metrics server");
}

START_TEST(http_metrics_external_loop)
{
	char err[256];
	int calls = 0;
	struct httpd *h =
	    httpd_start("127.0.0.1:0", HTTPD_EXTERNAL, render_cb, &calls, err, sizeof(err));
	static char reply[8192];

	ck_assert_msg(h != NULL, "%s", err);
	ck_assert_uint_gt(httpd_port(h), 0);
	get(h, "GET /metrics HTTP/1.0\r\n\r\n", reply, sizeof(reply));
	ck_assert_ptr_nonnull(strstr(reply, " 200 OK\r\n"));
	ck_assert_ptr_nonnull(strstr(reply, "text/plain; version=0.0.4"));
	ck_assert_ptr_nonnull(strstr(reply, "\r\n\r\n# HELP x_inflight"));
	ck_assert_int_eq(calls, 1);
	get(h, "GET /other HTTP/1.0\r\n\r\n", reply, sizeof(reply));
	ck_assert_ptr_nonnull(strstr(reply, " 404 "));
	get(h, "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n", reply, sizeof(reply));
	ck_assert_ptr_nonnull(strstr(reply, " 405 "));
	ck_assert_int_eq(calls, 1);
	ck_assert_uint_eq(httpd_scrapes(h), 1);
	ck_assert_uint_eq(httpd_errors(h), 2);
	httpd_stop(h);
}
END_TEST

START_TEST(listen_address_checked)
{
	char err[256];
	uint32_t ip;
	uint16_t port;

	ck_assert_int_eq(httpd_parse_listen("10.0.0.1:9447", &ip, &port, err, sizeof(err)), 0);
	ck_assert_uint_eq(ip, 0x0a000001);
	ck_assert_uint_eq(port, 9447);
	ck_assert_int_eq(httpd_parse_listen("10.0.0.1", &ip, &port, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "A.B.C.D:PORT"));
	ck_assert_int_eq(httpd_parse_listen("10.0.0.1:70000", &ip, &port, err, sizeof(err)), -1);
	ck_assert_int_eq(httpd_parse_listen("host:80", &ip, &port, err, sizeof(err)), -1);
	ck_assert_ptr_null(httpd_start("nope", HTTPD_EXTERNAL, render_cb, NULL, err, sizeof(err)));
}
END_TEST

/* The rendered text passes `promtool check metrics` (the format's own linter). */
START_TEST(promtool_accepts_output)
{
	static const double bounds[] = {0.001, 0.01};
	struct prom *p = prom_new();
	struct prom_hist h;
	size_t len;
	char *out;
	FILE *pipe;

	prom_hist_init(&h, bounds, 2);
	prom_hist_observe_ns(&h, 2000000);
	prom_add(p, "skl_test_requests_total", "Requests.", PROM_COUNTER, NULL, 0, 12);
	prom_add(p, "skl_test_queue_bytes", "Queue.", PROM_GAUGE, NULL, 0, 0);
	prom_add_hist(p, "skl_test_delay_seconds", "Delay.", NULL, 0, &h);
	out = prom_render(p, &len);
	ck_assert_ptr_nonnull(out);
	pipe = popen("promtool check metrics >/dev/null 2>&1", "w");
	ck_assert_ptr_nonnull(pipe);
	fwrite(out, 1, len, pipe);
	ck_assert_msg(pclose(pipe) == 0, "promtool check metrics rejected:\n%s", out);
	free(out);
	prom_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prom");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, families_grouped_and_escaped);
	tcase_add_test(tc, bad_names_and_type_clash);
	tcase_add_test(tc, histogram_buckets_cumulative);
	tcase_add_test(tc, http_metrics_external_loop);
	tcase_add_test(tc, listen_address_checked);
	tcase_add_test(tc, promtool_accepts_output);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
