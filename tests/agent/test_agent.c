/*
 * test_agent.c - libskewless against fake nodes and switches: UDP sockets on
 * 127.0.0.1 inside the test process that answer (or do not) as told. Covers
 * req_id uniqueness with 10,000 requests in flight, timeout and retry counts,
 * the fallback state machine in both consistency levels, re-check, MOVED,
 * hint mode and the route cache. tests/agent/integration.sh repeats the
 * end-to-end cases against a real skewless-node.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/check_quiet.h"
#include "chunk.h"
#include "clock.h"
#include "config.h"
#include "keyhash.h"
#include "skewless.h"
#include "wire.h"

#define LOCALHOST 0x7f000001u

enum fake_mode {
	FAKE_ANSWER, /* a node: answers GET/PUT/DEL/PROBE */
	FAKE_SILENT, /* counts and drops */
	FAKE_HOLD,   /* keeps requests to answer later (fake_release) */
	FAKE_MOVED,  /* answers MOVED with node = moved_to */
	FAKE_SWITCH, /* answers HINT with hint_node; data ops as node 1 */
};

struct held {
	uint8_t buf[2048];
	size_t len;
	struct sockaddr_in from;
};

struct fake {
	int fd;
	uint16_t port, id;
	enum fake_mode mode;
	uint16_t moved_to, hint_node;
	bool probe_has;
	unsigned drop_every; /* drop every Nth datagram received (0: none) */
	unsigned refuse;     /* answer this many more requests UNAVAILABLE */
	uint16_t switch_names; /* FAKE_SWITCH: the node its answers name (0: none, its own) */
	uint64_t version;
	unsigned rx_total, rx_op[256];
	uint16_t last_flags;
	uint64_t *req_ids;
	size_t nreq_ids, cap_req_ids;
	struct held *held;
	size_t nheld, cap_held;
};

static struct fake *fake_new(uint16_t id, enum fake_mode mode)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int bufsz = 8 << 20;

	sa.sin_addr.s_addr = htonl(LOCALHOST);
	f->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(f->fd, 0);
	if (setsockopt(f->fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof(bufsz)) < 0)
		setsockopt(f->fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	ck_assert_int_eq(bind(f->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	getsockname(f->fd, (struct sockaddr *)&sa, &len);
	f->port = ntohs(sa.sin_port);
	f->id = id;
	f->mode = mode;
	f->switch_names = 1;
	f->version = 7;
	return f;
}

static void fake_free(struct fake *f)
{
	close(f->fd);
	free(f->req_ids);
	free(f->held);
	free(f);
}

static void fake_reply(struct fake *f, const struct wire_msg *q, const struct sockaddr_in *to)
{
	uint8_t out[2048];
	char value[1100];
	struct wire_msg m = *q;
	uint8_t op = q->op;
	int len;

	m.op = op | WIRE_REPLY;
	m.flags = 0;
	m.status = WIRE_ST_OK;
	m.node = f->id;
	m.load = 1;
	m.val_len = 0;
	m.value = NULL;
	m.version = f->version;
	if (f->mode == FAKE_MOVED) {
		m.status = WIRE_ST_MOVED;
		m.node = f->moved_to;
	} else if (f->refuse) {
		f->refuse--;
		m.status = WIRE_ST_UNAVAILABLE;
	} else if (op == WIRE_OP_HINT) {
		m.node = f->hint_node;
		m.flags = WIRE_F_REPLICATED;
	} else if (op == WIRE_OP_PROBE) {
		if (!f->probe_has)
			m.status = WIRE_ST_NOT_FOUND;
	} else if (op == WIRE_OP_GET) {
		m.val_len = (uint32_t)snprintf(value, sizeof(value), "val@%u:%.*s", f->id,
					       (int)q->key_len, (const char *)q->key);
		m.value = (const uint8_t *)value;
	} else if (op == WIRE_OP_PUT || op == WIRE_OP_DEL) {
		m.version = ++f->version;
	}
	if (f->mode == FAKE_SWITCH && op != WIRE_OP_HINT) {
		m.node = f->switch_names; /* the node it "forwarded" to */
		m.flags = WIRE_F_VIA_SWITCH;
	}
	len = wire_encode(&m, out, sizeof(out));
	ck_assert_int_gt(len, 0);
	sendto(f->fd, out, (size_t)len, 0, (const struct sockaddr *)to, sizeof(*to));
}

/* Receive everything queued; answer per mode. */
static void fake_pump(struct fake *f)
{
	uint8_t buf[2048];
	struct sockaddr_in from;
	socklen_t flen;
	ssize_t n;
	struct wire_msg m;

	for (int guard = 0; guard < 100000; guard++) {
		flen = sizeof(from);
		n = recvfrom(f->fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
		if (n < 0)
			return;
		ck_assert_int_eq(wire_decode(buf, (size_t)n, &m), WIRE_OK);
		f->rx_total++;
		f->rx_op[m.op]++;
		f->last_flags = m.flags;
		if (f->nreq_ids == f->cap_req_ids) {
			f->cap_req_ids = f->cap_req_ids ? 2 * f->cap_req_ids : 1024;
			f->req_ids = realloc(f->req_ids, f->cap_req_ids * sizeof(*f->req_ids));
		}
		f->req_ids[f->nreq_ids++] = m.req_id;
		if (f->mode == FAKE_SILENT || (f->drop_every && f->rx_total % f->drop_every == 0))
			continue;
		if (f->mode == FAKE_HOLD) {
			if (f->nheld == f->cap_held) {
				f->cap_held = f->cap_held ? 2 * f->cap_held : 1024;
				f->held = realloc(f->held, f->cap_held * sizeof(*f->held));
			}
			memcpy(f->held[f->nheld].buf, buf, (size_t)n);
			f->held[f->nheld].len = (size_t)n;
			f->held[f->nheld].from = from;
			f->nheld++;
			continue;
		}
		fake_reply(f, &m, &from);
	}
}

/* Answer up to max held requests. */
static void fake_release(struct fake *f, size_t max)
{
	struct wire_msg m;
	size_t n = f->nheld < max ? f->nheld : max;

	for (size_t i = 0; i < n; i++) {
		struct held *h = &f->held[f->nheld - 1 - i];

		ck_assert_int_eq(wire_decode(h->buf, h->len, &m), WIRE_OK);
		fake_reply(f, &m, &h->from);
	}
	f->nheld -= n;
}

/* ---- harness ---- */

struct outcome {
	bool done;
	struct skl_result res;
	char value[256];
	int count;
};

static void on_result(void *arg, const struct skl_result *res)
{
	struct outcome *o = arg;
	size_t n = res->value_len < sizeof(o->value) - 1 ? res->value_len : sizeof(o->value) - 1;

	ck_assert(!o->done || o->count > 0);
	o->res = *res;
	if (res->value && res->op == SKL_OP_GET)
		memcpy(o->value, res->value, n);
	o->value[res->value ? n : 0] = '\0';
	o->done = true;
	o->count++;
}

static void pump_all(struct skl_agent *a, struct fake **fakes, int nf)
{
	skl_poll(a, 1);
	for (int i = 0; i < nf; i++)
		if (fakes[i])
			fake_pump(fakes[i]);
}

/* Poll and pump until o is done or max_ms passes. */
static void run_until(struct skl_agent *a, struct fake **fakes, int nf, struct outcome *o,
		      int max_ms)
{
	uint64_t end = clock_mono_ms() + (uint64_t)max_ms;

	while (!o->done && clock_mono_ms() < end)
		pump_all(a, fakes, nf);
	ck_assert_msg(o->done, "request did not complete within %d ms", max_ms);
}

static void do_get(struct skl_agent *a, struct fake **fakes, int nf, const char *key,
		   const struct skl_call_opts *opts, struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	ck_assert_int_eq(skl_get(a, key, strlen(key), opts, on_result, o), 0);
	run_until(a, fakes, nf, o, 5000);
}

static void do_put(struct skl_agent *a, struct fake **fakes, int nf, const char *key,
		   struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	ck_assert_int_eq(skl_put(a, key, strlen(key), "v", 1, NULL, on_result, o), 0);
	run_until(a, fakes, nf, o, 2000);
}

static struct skl_agent *make_agent(struct fake *sw, struct fake **nodes, int nn,
				    struct skl_options *opt)
{
	struct skl_addr swaddr = {LOCALHOST, sw ? sw->port : 0};
	struct skl_node_addr na[8];
	char names[8][8];
	struct skl_agent *a;

	for (int i = 0; i < nn; i++) {
		snprintf(names[i], sizeof(names[i]), "n%u", nodes[i]->id);
		na[i] =
		    (struct skl_node_addr){nodes[i]->id, names[i], LOCALHOST, nodes[i]->port, 1};
	}
	ck_assert_int_eq(skl_create_addrs(sw ? &swaddr : NULL, sw ? 1 : 0, na, (size_t)nn, opt, &a),
			 0);
	return a;
}

/* A key whose ring home is node `home`. */
static const char *key_homed_at(struct skl_agent *a, uint16_t home, char *buf, size_t cap)
{
	for (int i = 0; i < 100000; i++) {
		snprintf(buf, cap, "key:%d", i);
		if (skl_home(a, buf, strlen(buf)) == home)
			return buf;
	}
	ck_abort_msg("no key homed at %u", home);
	return NULL;
}

static struct skl_stats stats(struct skl_agent *a)
{
	struct skl_stats s;

	skl_get_stats(a, &s);
	return s;
}

/* ---- tests ---- */

static int completed_ok;

static void count_ok(void *arg, const struct skl_result *res)
{
	(void)arg;
	if (res->status == SKL_OK)
		completed_ok++;
}

START_TEST(ten_thousand_in_flight_unique_req_ids)
{
	struct fake *n1 = fake_new(1, FAKE_HOLD);
	struct skl_options opt = {.mode = SKL_MODE_DIRECT,
				  .timeout_ms = 10000,
				  .max_inflight = 10000,
				  .agent_id = 0xabcd};
	struct skl_agent *a = make_agent(NULL, &n1, 1, &opt);
	char key[32];
	uint64_t end;

	completed_ok = 0;
	for (int i = 0; i < 10000; i++) {
		int klen = snprintf(key, sizeof(key), "k%d", i);

		ck_assert_int_eq(skl_get(a, key, (size_t)klen, NULL, count_ok, NULL), 0);
		if (i % 256 == 0)
			fake_pump(n1);
	}
	ck_assert_uint_eq(skl_inflight(a), 10000);
	ck_assert_int_eq(skl_get(a, "x", 1, NULL, count_ok, NULL), -EBUSY);
	end = clock_mono_ms() + 5000;
	while (n1->nheld < 10000 && clock_mono_ms() < end)
		fake_pump(n1);
	ck_assert_uint_eq(n1->nheld, 10000);
	/* Every req_id distinct and carrying the agent id. */
	for (size_t i = 0; i < n1->nreq_ids; i++) {
		ck_assert_uint_eq(n1->req_ids[i] >> 32, 0xabcd);
		for (size_t j = i + 1; j < n1->nreq_ids && j < i + 64; j++)
			ck_assert_uint_ne(n1->req_ids[i], n1->req_ids[j]);
	}
	{
		/* Full check by sorting. */
		uint64_t *ids = malloc(n1->nreq_ids * sizeof(*ids));

		memcpy(ids, n1->req_ids, n1->nreq_ids * sizeof(*ids));
		for (size_t gap = n1->nreq_ids / 2; gap > 0; gap /= 2) /* shell sort */
			for (size_t i = gap; i < n1->nreq_ids; i++)
				for (size_t j = i; j >= gap && ids[j - gap] > ids[j]; j -= gap) {
					uint64_t t = ids[j];

					ids[j] = ids[j - gap];
					ids[j - gap] = t;
				}
		for (size_t i = 1; i < n1->nreq_ids; i++)
			ck_assert_uint_ne(ids[i - 1], ids[i]);
		free(ids);
	}
	/* Answer them all, a batch at a time, while the agent polls. */
	end = clock_mono_ms() + 20000;
	while (completed_ok < 10000 && clock_mono_ms() < end) {
		fake_release(n1, 500);
		skl_poll(a, 1);
	}
	ck_assert_int_eq(completed_ok, 10000);
	ck_assert_uint_eq(skl_inflight(a), 0);
	ck_assert_uint_eq(stats(a).retries, 0);
	skl_close(a);
	fake_free(n1);
}
END_TEST

START_TEST(req_id_not_reused_while_in_flight)
{
	struct fake *n1 = fake_new(1, FAKE_HOLD), *n2 = fake_new(2, FAKE_ANSWER);
	struct fake *nodes[] = {n1, n2};
	struct skl_options opt = {.mode = SKL_MODE_DIRECT, .timeout_ms = 60000, .max_inflight = 16};
	struct skl_agent *a = make_agent(NULL, nodes, 2, &opt);
	struct outcome slow = {0};
	char k1[32], k2[32];
	uint64_t slow_id;

	key_homed_at(a, 1, k1, sizeof(k1));
	key_homed_at(a, 2, k2, sizeof(k2));
	ck_assert_int_eq(skl_get(a, k1, strlen(k1), NULL, on_result, &slow), 0);
	while (n1->nreq_ids == 0)
		fake_pump(n1);
	slow_id = n1->req_ids[0];
	/* 5000 requests through a 32-slot table: the sequence wraps it ~150 times. */
	for (int batch = 0; batch < 500; batch++) {
		struct outcome o[10];

		memset(o, 0, sizeof(o));
		for (int i = 0; i < 10; i++)
			ck_assert_int_eq(skl_get(a, k2, strlen(k2), NULL, on_result, &o[i]), 0);
		for (int i = 0; i < 10; i++)
			run_until(a, nodes, 2, &o[i], 2000);
	}
	ck_assert_uint_eq(n2->nreq_ids, 5000);
	for (size_t i = 0; i < n2->nreq_ids; i++)
		ck_assert_uint_ne(n2->req_ids[i], slow_id);
	ck_assert(!slow.done);
	ck_assert_uint_eq(skl_inflight(a), 1);
	/* The slow one still completes, with its own req_id. */
	fake_release(n1, 1);
	run_until(a, nodes, 2, &slow, 2000);
	ck_assert_int_eq(slow.res.status, SKL_OK);
	ck_assert_uint_eq(slow.res.req_id, slow_id);
	skl_close(a);
	fake_free(n1);
	fake_free(n2);
}
END_TEST

/* Corked, requests wait for skl_poll() or skl_uncork(), then leave together. */
START_TEST(cork_holds_requests_until_poll)
{
	struct fake *n1 = fake_new(1, FAKE_HOLD);
	struct skl_options opt = {.mode = SKL_MODE_DIRECT, .timeout_ms = 60000};
	struct skl_agent *a = make_agent(NULL, &n1, 1, &opt);
	char key[32];

	skl_cork(a);
	for (int i = 0; i < 100; i++) {
		int klen = snprintf(key, sizeof(key), "c%d", i);

		ck_assert_int_eq(skl_get(a, key, (size_t)klen, NULL, count_ok, NULL), 0);
	}
	ck_assert_int_eq(skl_next_timeout_ms(a), 0); /* there is something to send */
	usleep(20000);
	fake_pump(n1);
	/* Only full batches of 32 have left. */
	ck_assert_uint_eq(n1->nreq_ids, 96);
	skl_poll(a, 0);
	for (int t = 0; t < 100 && n1->nreq_ids < 100; t++) {
		usleep(1000);
		fake_pump(n1);
	}
	ck_assert_uint_eq(n1->nreq_ids, 100);
	/* Uncorked, each leaves at once. */
	skl_uncork(a);
	ck_assert_int_eq(skl_get(a, "u", 1, NULL, count_ok, NULL), 0);
	for (int t = 0; t < 100 && n1->nreq_ids < 101; t++) {
		usleep(1000);
		fake_pump(n1);
	}
	ck_assert_uint_eq(n1->nreq_ids, 101);
	ck_assert_uint_eq(stats(a).send_errors, 0);
	skl_close(a);
	fake_free(n1);
}
END_TEST

START_TEST(close_cancels_in_flight)
{
	struct fake *n1 = fake_new(1, FAKE_SILENT);
	struct skl_options opt = {.mode = SKL_MODE_DIRECT, .timeout_ms = 60000};
	struct skl_agent *a = make_agent(NULL, &n1, 1, &opt);
	struct outcome o = {0};

	ck_assert_int_eq(skl_get(a, "k", 1, NULL, on_result, &o), 0);
	ck_assert(!o.done);
	skl_close(a);
	ck_assert(o.done);
	ck_assert_int_eq(o.res.status, SKL_CANCELLED);
	fake_free(n1);
}
END_TEST

START_TEST(timeout_and_retry_counts)
{
	struct fake *sw = fake_new(0, FAKE_SILENT), *n1 = fake_new(1, FAKE_ANSWER);
	struct fake *all[] = {sw, n1};
	struct skl_options opt = {.mode = SKL_MODE_INPATH,
				  .timeout_ms = 20,
				  .retries = 2,
				  .retries_set = 1,
				  .switch_failures = 100};
	struct skl_agent *a = make_agent(sw, &n1, 1, &opt);
	struct outcome o;
	uint64_t t0 = clock_mono_ms();

	/* A read is resent where the agent's view sends it: the switch, not
	 * given up (switch_failures 100). */
	do_get(a, all, 2, "user:1", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_TIMEOUT);
	ck_assert_uint_eq(o.res.sends, 3);
	ck_assert_uint_eq(sw->rx_total, 3);
	ck_assert_uint_eq(sw->req_ids[0], sw->req_ids[2]); /* a retry keeps its req_id */
	ck_assert_uint_eq(n1->rx_total, 0);
	ck_assert_uint_ge(clock_mono_ms() - t0, 60);
	ck_assert_uint_lt(clock_mono_ms() - t0, 1000);
	ck_assert_uint_eq(stats(a).timeouts, 3);
	ck_assert_uint_eq(stats(a).retries, 2);
	/* A write, the nodes reached without the switch (no inline switch): its
	 * retry goes to the ring home, with the same req_id. */
	do_put(a, all, 2, "user:1", &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(o.res.sends, 2);
	ck_assert_uint_eq(sw->req_ids[3], n1->req_ids[0]);
	ck_assert_uint_eq(stats(a).switch_retries_home, 1);
	skl_close(a);

	/* retries = 0: exactly one attempt. */
	opt.retries = 0;
	a = make_agent(sw, &n1, 1, &opt);
	sw->rx_total = 0;
	do_get(a, all, 2, "user:1", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_TIMEOUT);
	ck_assert_uint_eq(o.res.sends, 1);
	ck_assert_uint_eq(sw->rx_total, 1);
	skl_close(a);

	/* The deadline ends a request before its retries run out: attempts of
	 * 20 ms within 90 ms are 5, the last one cut short to 10 ms. */
	opt.retries = 100;
	opt.deadline_ms = 90;
	a = make_agent(sw, &n1, 1, &opt);
	t0 = clock_mono_ms();
	do_get(a, all, 2, "user:1", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_TIMEOUT);
	ck_assert_uint_eq(o.res.sends, 5);
	ck_assert_uint_ge(clock_mono_ms() - t0, 90);
	ck_assert_uint_lt(clock_mono_ms() - t0, 1000);
	skl_close(a);
	fake_free(sw);
	fake_free(n1);
}
END_TEST

START_TEST(fallback_linearizable_and_recheck)
{
	struct fake *sw = fake_new(0, FAKE_SILENT), *n1 = fake_new(1, FAKE_ANSWER);
	struct fake *all[] = {sw, n1};
	struct skl_options opt = {.mode = SKL_MODE_INPATH,
				  .timeout_ms = 20,
				  .retries = 1,
				  .retries_set = 1,
				  .switch_failures = 2,
				  .recheck_ms = 100};
	struct skl_agent *a = make_agent(sw, &n1, 1, &opt);
	struct outcome o;
	uint64_t t0, end;

	ck_assert_int_eq(skl_using_switch(a), 1);
	/* Two timeouts at the switch (attempt + retry): the switch is given up. */
	do_get(a, all, 2, "user:1", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_TIMEOUT);
	ck_assert_uint_eq(o.res.sends, 2);
	ck_assert_int_eq(skl_using_switch(a), 0);
	ck_assert_uint_eq(stats(a).switch_down, 1);
	/* Now straight to the ring home. */
	do_get(a, all, 2, "user:1", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(o.res.node, 1);
	ck_assert(o.res.flags & SKL_R_DIRECT);
	ck_assert_str_eq(o.value, "val@1:user:1");
	/* The home stops answering (reached directly: its silence is its own):
	 * TIMEOUT after its retry... */
	n1->mode = FAKE_SILENT;
	do_get(a, all, 2, "user:1", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_TIMEOUT);
	ck_assert_uint_eq(o.res.sends, 2);
	/* ...and the next request fails fast, without a datagram. */
	t0 = clock_mono_ms();
	do_get(a, all, 2, "user:2", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_UNAVAILABLE);
	ck_assert_uint_eq(o.res.sends, 0);
	ck_assert_uint_lt(clock_mono_ms() - t0, 15);
	ck_assert_uint_eq(stats(a).fail_fast, 1);
	/* The switch comes back: the re-check notices within recheck_ms. */
	sw->mode = FAKE_SWITCH;
	sw->hint_node = 1;
	end = clock_mono_ms() + 1000;
	while (!skl_using_switch(a) && clock_mono_ms() < end)
		pump_all(a, all, 2);
	ck_assert_int_eq(skl_using_switch(a), 1);
	ck_assert_uint_ge(stats(a).rechecks, 1);
	ck_assert_uint_eq(stats(a).switch_back, 1);
	do_get(a, all, 2, "user:1", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert(!(o.res.flags & SKL_R_DIRECT));
	skl_close(a);
	fake_free(sw);
	fake_free(n1);
}
END_TEST

START_TEST(half_open_node_readmitted_at_first_answer)
{
	struct fake *n1 = fake_new(1, FAKE_SILENT);
	struct skl_options opt = {.mode = SKL_MODE_DIRECT, .timeout_ms = 20, .recheck_ms = 60000};
	struct skl_agent *a = make_agent(NULL, &n1, 1, &opt);
	struct outcome o;

	/* Reached directly, the silent node is to blame: TIMEOUT, then fail fast. */
	do_get(a, &n1, 1, "user:1", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_TIMEOUT);
	ck_assert_uint_eq(stats(a).node_down, 1);
	do_get(a, &n1, 1, "user:2", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_UNAVAILABLE);
	ck_assert_uint_eq(o.res.sends, 0);
	/* It is back. Within one timeout (not the 60 s recheck) a real request
	 * goes through, and its answer readmits the node for every request. */
	n1->mode = FAKE_ANSWER;
	usleep(25 * 1000);
	do_get(a, &n1, 1, "user:3", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(o.res.sends, 1);
	ck_assert_uint_eq(stats(a).node_trials, 1);
	do_get(a, &n1, 1, "user:4", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(stats(a).node_trials, 1);
	ck_assert_uint_eq(stats(a).fail_fast, 1);
	skl_close(a);
	fake_free(n1);
}
END_TEST

START_TEST(fallback_within_one_request)
{
	/* switch_failures = 1 (what the CLI uses): the retry goes to the home. */
	struct fake *sw = fake_new(0, FAKE_SILENT), *n1 = fake_new(1, FAKE_ANSWER);
	struct fake *all[] = {sw, n1};
	struct skl_options opt = {.mode = SKL_MODE_INPATH, .timeout_ms = 20, .switch_failures = 1};
	struct skl_agent *a = make_agent(sw, &n1, 1, &opt);
	struct outcome o;

	do_get(a, all, 2, "user:1", NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(o.res.sends, 2);
	ck_assert_uint_eq(sw->rx_total, 1);
	ck_assert_uint_eq(n1->rx_total, 1);
	/* One reroute (the switch given up), and it succeeded. */
	ck_assert_uint_eq(stats(a).redirects_fallback, 1);
	ck_assert_uint_eq(stats(a).redirects_fallback_ok, 1);
	ck_assert_uint_eq(stats(a).redirects_moved, 0);
	skl_close(a);
	fake_free(sw);
	fake_free(n1);
}
END_TEST

START_TEST(relaxed_probe_reads_highest_version)
{
	struct fake *n1 = fake_new(1, FAKE_SILENT), *n2 = fake_new(2, FAKE_ANSWER),
		    *n3 = fake_new(3, FAKE_ANSWER);
	struct fake *nodes[] = {n1, n2, n3};
	struct skl_options opt = {
	    .mode = SKL_MODE_DIRECT, .consistency = SKL_RELAXED, .timeout_ms = 20};
	struct skl_agent *a = make_agent(NULL, nodes, 3, &opt);
	struct skl_call_opts lin = {.consistency = SKL_LINEARIZABLE};
	struct outcome o;
	char key[32], key2[32];

	n2->probe_has = true;
	n2->version = 5;
	n3->probe_has = true;
	n3->version = 9;
	key_homed_at(a, 1, key, sizeof(key));
	do_get(a, nodes, 3, key, NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert(o.res.flags & SKL_R_STALE);
	ck_assert(o.res.flags & SKL_R_REPLICA);
	ck_assert_uint_eq(o.res.node, 3);
	ck_assert_uint_eq(o.res.version, 9);
	ck_assert(n3->last_flags & WIRE_F_REPLICA_READ);
	ck_assert_uint_eq(n2->rx_op[WIRE_OP_PROBE], 1);
	ck_assert_uint_eq(n3->rx_op[WIRE_OP_PROBE], 1);
	ck_assert_uint_eq(n1->rx_op[WIRE_OP_PROBE], 0); /* the silent home is not probed */
	ck_assert_uint_eq(stats(a).stale_reads, 1);
	/* The same agent, linearizable per call: fails fast. */
	do_get(a, nodes, 3, key, &lin, &o);
	ck_assert_int_eq(o.res.status, SKL_UNAVAILABLE);
	ck_assert_uint_eq(o.res.sends, 0);
	/* Relaxed again, the home known down: probes at once, no wait at the home. */
	n2->probe_has = n3->probe_has = false;
	snprintf(key2, sizeof(key2), "%s", key);
	do_get(a, nodes, 3, key2, NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_NOT_FOUND);
	ck_assert(o.res.flags & SKL_R_STALE);
	ck_assert_uint_eq(o.res.sends, 2);
	/* Writes never go anywhere but the home. */
	do_put(a, nodes, 3, key, &o);
	ck_assert_int_eq(o.res.status, SKL_UNAVAILABLE);
	skl_close(a);
	fake_free(n1);
	fake_free(n2);
	fake_free(n3);
}
END_TEST

START_TEST(moved_resends_once)
{
	struct fake *n1 = fake_new(1, FAKE_MOVED), *n2 = fake_new(2, FAKE_ANSWER);
	struct fake *nodes[] = {n1, n2};
	struct skl_options opt = {.mode = SKL_MODE_DIRECT, .timeout_ms = 50};
	struct skl_agent *a = make_agent(NULL, nodes, 2, &opt);
	struct outcome o;
	char key[32], key2[32];

	n1->moved_to = 2;
	key_homed_at(a, 1, key, sizeof(key));
	do_get(a, nodes, 2, key, NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(o.res.node, 2);
	ck_assert_uint_eq(o.res.sends, 2);
	ck_assert_uint_eq(stats(a).moved, 1);
	ck_assert_uint_eq(stats(a).redirects_moved, 1);
	ck_assert_uint_eq(stats(a).redirects_moved_ok, 1);
	/* Linearizable mode keeps the MOVED redirect: the next read skips n1. */
	do_get(a, nodes, 2, key, NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(o.res.sends, 1);
	ck_assert_uint_eq(n1->rx_total, 1);
	/* Redirected again by the owner: give up with MOVED after one resend. */
	n2->mode = FAKE_MOVED;
	n2->moved_to = 1;
	for (int i = 0; i < 100000; i++) {
		snprintf(key2, sizeof(key2), "other:%d", i);
		if (skl_home(a, key2, strlen(key2)) == 1)
			break;
	}
	ck_assert_int_eq(skl_home(a, key2, strlen(key2)), 1);
	do_get(a, nodes, 2, key2, NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_MOVED);
	ck_assert_uint_eq(o.res.sends, 2);
	/* A redirect that ended MOVED again: attempted, not succeeded. */
	ck_assert_uint_eq(stats(a).redirects_moved, 2);
	ck_assert_uint_eq(stats(a).redirects_moved_ok, 1);
	skl_close(a);
	fake_free(n1);
	fake_free(n2);
}
END_TEST

START_TEST(hint_mode_and_route_cache)
{
	struct fake *sw = fake_new(0, FAKE_SWITCH), *n1 = fake_new(1, FAKE_ANSWER),
		    *n2 = fake_new(2, FAKE_ANSWER);
	struct fake *nodes[] = {n1, n2}, *all[] = {sw, n1, n2};
	struct skl_options opt = {.mode = SKL_MODE_HINT, .timeout_ms = 50};
	struct skl_agent *a = make_agent(sw, nodes, 2, &opt);
	struct skl_call_opts relaxed = {.consistency = SKL_RELAXED};
	struct outcome o;
	char key[32];

	sw->hint_node = 2;
	key_homed_at(a, 1, key, sizeof(key));
	/* Linearizable: every read asks the switch. */
	for (int i = 0; i < 2; i++) {
		do_get(a, all, 3, key, NULL, &o);
		ck_assert_int_eq(o.res.status, SKL_OK);
		ck_assert_uint_eq(o.res.node, 2);
		ck_assert(o.res.flags & SKL_R_REPLICA);
		ck_assert(n2->last_flags & WIRE_F_REPLICA_READ);
	}
	ck_assert_uint_eq(stats(a).hints, 2);
	ck_assert_uint_eq(stats(a).cache_hits, 0);
	/* Relaxed: the second read comes from the route cache. */
	for (int i = 0; i < 3; i++) {
		do_get(a, all, 3, key, &relaxed, &o);
		ck_assert_int_eq(o.res.status, SKL_OK);
		ck_assert_uint_eq(o.res.node, 2);
	}
	ck_assert_uint_eq(stats(a).hints, 3);
	ck_assert_uint_eq(stats(a).cache_hits, 2);
	/* Writes go through the switch in hint mode. */
	do_put(a, all, 3, key, &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(sw->rx_op[WIRE_OP_PUT], 1);
	ck_assert_uint_eq(n1->rx_op[WIRE_OP_PUT] + n2->rx_op[WIRE_OP_PUT], 0);
	skl_close(a);
	fake_free(sw);
	fake_free(n1);
	fake_free(n2);
}
END_TEST

/*
 * A switch that answers but loses one read in 5 is given up as lossy (not
 * silent), every read still answered through the ring home; it is re-checked
 * with bursts of HINTs and comes back only after two clean rounds.
 */
START_TEST(lossy_switch_bypassed_and_back)
{
	struct fake *sw = fake_new(0, FAKE_SWITCH), *n1 = fake_new(1, FAKE_ANSWER);
	struct fake *all[] = {sw, n1};
	struct skl_options opt = {
	    .mode = SKL_MODE_INPATH, .timeout_ms = 20, .switch_failures = 100, .recheck_ms = 100};
	struct skl_agent *a = make_agent(sw, &n1, 1, &opt);
	uint64_t end = clock_mono_ms() + 3000, back_end;
	int submitted = 0;

	sw->drop_every = 5;
	completed_ok = 0;
	while (stats(a).switch_lossy == 0 && clock_mono_ms() < end) {
		while (skl_inflight(a) < 8) {
			ck_assert_int_eq(skl_get(a, "user:1", 6, NULL, count_ok, NULL), 0);
			submitted++;
		}
		pump_all(a, all, 2);
	}
	ck_assert_uint_eq(stats(a).switch_lossy, 1);
	ck_assert_uint_eq(stats(a).switch_down, 0);
	ck_assert_uint_ge(stats(a).switch_losses, 2);
	ck_assert_int_eq(skl_using_switch(a), 0);
	/* Still lossy: three re-check rounds later it has not come back. */
	end = clock_mono_ms() + 350;
	while (clock_mono_ms() < end)
		pump_all(a, all, 2);
	ck_assert_int_eq(skl_using_switch(a), 0);
	ck_assert_uint_ge(stats(a).rechecks, 64);
	ck_assert_uint_eq(stats(a).switch_back, 0);
	/* Clean again: back after two clean rounds. */
	sw->drop_every = 0;
	back_end = clock_mono_ms() + 1000;
	while (!skl_using_switch(a) && clock_mono_ms() < back_end)
		pump_all(a, all, 2);
	ck_assert_int_eq(skl_using_switch(a), 1);
	ck_assert_uint_eq(stats(a).switch_back, 1);
	end = clock_mono_ms() + 2000;
	while (skl_inflight(a) && clock_mono_ms() < end)
		pump_all(a, all, 2);
	ck_assert_int_eq(completed_ok, submitted); /* not one read failed */
	skl_close(a);
	fake_free(sw);
	fake_free(n1);
}
END_TEST

/*
 * A node that refuses a write unapplied (UNAVAILABLE: another write kept the
 * key's turn) gets it again at the next attempt, within the deadline; one
 * that keeps refusing ends it UNAVAILABLE at the deadline, not TIMEOUT.
 */
START_TEST(refused_write_resent)
{
	struct fake *n1 = fake_new(1, FAKE_ANSWER);
	struct skl_options opt = {.mode = SKL_MODE_DIRECT, .timeout_ms = 20, .deadline_ms = 100};
	struct skl_agent *a = make_agent(NULL, &n1, 1, &opt);
	struct outcome o;
	uint64_t t0;

	n1->refuse = 2;
	do_put(a, &n1, 1, "user:1", &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(o.res.sends, 3);
	ck_assert_uint_eq(n1->req_ids[0], n1->req_ids[2]);
	ck_assert_uint_eq(stats(a).refusals, 1);
	ck_assert_uint_eq(stats(a).node_down, 0);

	n1->refuse = 1000;
	t0 = clock_mono_ms();
	do_put(a, &n1, 1, "user:1", &o);
	ck_assert_int_eq(o.res.status, SKL_UNAVAILABLE);
	ck_assert_uint_ge(clock_mono_ms() - t0, 95);
	ck_assert_uint_eq(stats(a).node_down, 0);
	skl_close(a);
	fake_free(n1);
}
END_TEST

/*
 * With replica groups, an UNAVAILABLE through the switch (a write whose
 * member just died, a key whose primary the switch holds down) is tried
 * again within the deadline: the switch's next view routes it to the next
 * member. With R = 1 it stays final.
 */
/* A config of replica groups (R = 2) over nodes n1 and n2, with switch sw (or none). */
static struct cfg *group_cfg(struct fake *sw, struct fake *n1, struct fake *n2)
{
	struct cfg *cfg = calloc(1, sizeof(*cfg));
	struct fake *nodes[2] = {n1, n2};

	ck_assert_ptr_nonnull(cfg);
	cfg->service.vip = LOCALHOST;
	cfg->service.port = sw ? sw->port : n1->port;
	cfg->service.mtu = CFG_DEFAULT_MTU;
	cfg->service.max_value = CFG_MAX_VALUE;
	cfg->service.replicas = 2;
	cfg->ring_version = 1;
	cfg_agent_defaults(&cfg->agent);
	if (sw) {
		cfg->nswitches = 1;
		cfg->switches[0] = (struct cfg_switch){.id = 1, .vip = LOCALHOST};
		snprintf(cfg->switches[0].name, sizeof(cfg->switches[0].name), "s1");
	}
	for (int i = 0; i < 2; i++) {
		cfg->nodes[i] = (struct cfg_node){.id = (uint16_t)(i + 1), .ip = LOCALHOST,
						  .port = nodes[i]->port, .weight = 1};
		snprintf(cfg->nodes[i].name, sizeof(cfg->nodes[i].name), "n%d", i + 1);
	}
	cfg->nnodes = 2;
	return cfg;
}

START_TEST(group_unavailable_via_switch_retried)
{
	struct fake *sw = fake_new(1, FAKE_SWITCH), *n1 = fake_new(1, FAKE_ANSWER),
		    *n2 = fake_new(2, FAKE_ANSWER), *fakes[3] = {sw, n1, n2};
	struct skl_options opt = {.timeout_ms = 20, .deadline_ms = 200};
	struct cfg *cfg = group_cfg(sw, n1, n2);
	struct skl_agent *a;
	struct outcome o;

	ck_assert_int_eq(skl_create(cfg, &opt, &a), 0);
	sw->refuse = 2;
	do_put(a, fakes, 3, "user:1", &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(o.res.sends, 3);
	ck_assert_uint_eq(sw->rx_op[WIRE_OP_PUT], 3);

	/* The switch's own answer for a group with no member up names no node: the answer. */
	sw->switch_names = 0;
	sw->refuse = 1;
	do_put(a, fakes, 3, "user:1", &o);
	ck_assert_int_eq(o.res.status, SKL_UNAVAILABLE);
	ck_assert_uint_eq(o.res.sends, 1);
	sw->switch_names = 1;
	skl_close(a);

	/* R = 1: the switch's UNAVAILABLE is the answer. */
	cfg->service.replicas = 1;
	ck_assert_int_eq(skl_create(cfg, &opt, &a), 0);
	sw->refuse = 1;
	do_put(a, fakes, 3, "user:1", &o);
	ck_assert_int_eq(o.res.status, SKL_UNAVAILABLE);
	ck_assert_uint_eq(o.res.sends, 1);
	skl_close(a);
	free(cfg);
	for (int i = 0; i < 3; i++)
		fake_free(fakes[i]);
}
END_TEST

/*
 * Replica groups without a switch: a home that does not answer (dead) is
 * passed by, and the next member of the key's group serves the request.
 */
START_TEST(group_next_member_when_home_silent)
{
	struct fake *n1 = fake_new(1, FAKE_ANSWER), *n2 = fake_new(2, FAKE_ANSWER),
		    *fakes[2] = {n1, n2};
	struct skl_options opt = {.mode = SKL_MODE_DIRECT, .timeout_ms = 20, .deadline_ms = 400};
	struct cfg *cfg = group_cfg(NULL, n1, n2);
	struct skl_agent *a;
	struct outcome o;
	uint16_t home;

	ck_assert_int_eq(skl_create(cfg, &opt, &a), 0);
	do_put(a, fakes, 2, "user:1", &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	home = o.res.node;
	ck_assert(home == 1 || home == 2);
	fakes[home - 1]->mode = FAKE_SILENT;
	do_get(a, fakes, 2, "user:1", NULL, &o);
	ck_assert_msg(o.res.status == SKL_OK || o.res.status == SKL_NOT_FOUND, "status %d",
		      o.res.status);
	ck_assert_uint_eq(o.res.node, 3 - home);
	ck_assert_uint_eq(o.res.sends, 2);
	skl_close(a);
	free(cfg);
	fake_free(n1);
	fake_free(n2);
}
END_TEST

/*
 * Hint mode: the node a HINT named no longer has the version (MOVED to the
 * home): the read asks the switch again, then reads through it, and never
 * ends MOVED.
 */
START_TEST(hint_moved_followed)
{
	struct fake *sw = fake_new(0, FAKE_SWITCH), *n1 = fake_new(1, FAKE_ANSWER),
		    *n2 = fake_new(2, FAKE_MOVED);
	struct fake *nodes[] = {n1, n2}, *all[] = {sw, n1, n2};
	struct skl_options opt = {.mode = SKL_MODE_HINT, .timeout_ms = 50};
	struct skl_agent *a = make_agent(sw, nodes, 2, &opt);
	struct outcome o;
	char key[32];

	sw->hint_node = 2;
	n2->moved_to = 1;
	key_homed_at(a, 1, key, sizeof(key));
	do_get(a, all, 3, key, NULL, &o);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert(!(o.res.flags & SKL_R_DIRECT));
	ck_assert_uint_eq(stats(a).hints, 2);
	ck_assert_uint_eq(stats(a).moved, 2);
	ck_assert_uint_eq(stats(a).replaced, 2);
	ck_assert_uint_eq(sw->rx_op[WIRE_OP_GET], 1);
	ck_assert_uint_eq(n2->rx_op[WIRE_OP_GET], 2);
	skl_close(a);
	fake_free(sw);
	fake_free(n1);
	fake_free(n2);
}
END_TEST

/* ---- chunked values (docs/protocol.md, "Chunked operations") ---- */

static uint8_t big_a[5000], big_b[5000], big_got[5000];
static size_t big_got_len;

static void on_big(void *arg, const struct skl_result *res)
{
	big_got_len = res->value_len;
	if (res->op == SKL_OP_GET && res->value)
		memcpy(big_got, res->value, res->value_len <= sizeof(big_got) ? res->value_len : 0);
	on_result(arg, res);
}

/* The next datagram on f's socket within 500 ms (the agent polled meanwhile). */
static bool next_dgram(struct skl_agent *a, struct fake *f, struct wire_msg *m, uint8_t *buf,
		       struct sockaddr_in *from)
{
	uint64_t end = clock_mono_ms() + 500;

	while (clock_mono_ms() < end) {
		socklen_t flen = sizeof(*from);
		ssize_t n = recvfrom(f->fd, buf, 2048, 0, (struct sockaddr *)from, &flen);

		if (n > 0) {
			ck_assert_int_eq(wire_decode(buf, (size_t)n, m), WIRE_OK);
			return true;
		}
		skl_poll(a, 1);
	}
	return false;
}

/* Send chunks of a GET reply to q, value val at version, the indexes in mask (bit i: chunk i). */
static void send_reply_chunks(struct fake *f, const struct wire_msg *q,
			      const struct sockaddr_in *to, const uint8_t *val, uint64_t version,
			      unsigned mask)
{
	struct wire_msg m = *q;
	uint8_t out[1500];

	m.op = WIRE_OP_GET | WIRE_REPLY;
	m.status = WIRE_ST_OK;
	m.node = f->id;
	m.version = version;
	m.value = val;
	m.val_len = sizeof(big_a);
	for (uint16_t i = 0; i < 4; i++) {
		int len = wire_chunk_encode(&m, i, 4, out, sizeof(out));

		ck_assert_int_gt(len, 0);
		if (mask & (1u << i))
			sendto(f->fd, out, (size_t)len, 0, (const struct sockaddr *)to,
			       sizeof(*to));
	}
}

/*
 * A lost chunk loses the attempt; the agent resends the whole op within its
 * retry budget. PUT: 4 chunks, no answer until the second attempt's 4. GET:
 * the first reply misses a chunk, the retry's reply completes it (its other
 * chunks are duplicates). And a reply of a newer version replaces the older
 * one being gathered: versions never mix.
 */
START_TEST(chunk_loss_retried)
{
	struct fake *n1 = fake_new(1, FAKE_SILENT);
	struct skl_options opt = {
	    .mode = SKL_MODE_DIRECT, .timeout_ms = 60, .retries = 1, .retries_set = 1};
	struct skl_agent *a = make_agent(NULL, &n1, 1, &opt);
	struct outcome o = {0};
	struct sockaddr_in from;
	struct wire_msg m;
	uint8_t buf[2048], out[2048];
	uint64_t req_id = 0;
	int len;

	for (size_t i = 0; i < sizeof(big_a); i++) {
		big_a[i] = (uint8_t)(i * 7);
		big_b[i] = (uint8_t)(i * 13 + 1);
	}
	ck_assert_int_eq(skl_put(a, "big", 3, big_a, sizeof(big_a), NULL, on_big, &o), 0);
	for (int k = 0; k < 8; k++) { /* two attempts of 4 chunks, the same req_id */
		ck_assert_msg(next_dgram(a, n1, &m, buf, &from), "chunk %d of the PUT", k);
		ck_assert(m.flags & WIRE_F_CHUNK);
		ck_assert_uint_eq(m.op, WIRE_OP_PUT);
		ck_assert(req_id == 0 || m.req_id == req_id);
		req_id = m.req_id;
	}
	ck_assert(!o.done);
	m.op = WIRE_OP_PUT | WIRE_REPLY;
	m.flags = 0;
	m.status = WIRE_ST_OK;
	m.node = 1;
	m.version = 3;
	m.value = NULL;
	m.val_len = 0;
	len = wire_encode(&m, out, sizeof(out));
	sendto(n1->fd, out, (size_t)len, 0, (struct sockaddr *)&from, sizeof(from));
	run_until(a, NULL, 0, &o, 1000);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(o.res.sends, 2);
	ck_assert_uint_eq(stats(a).chunks_sent, 8);
	ck_assert_uint_eq(stats(a).retries, 1);

	/* GET: chunk 2 lost, then the retry's whole reply. */
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(skl_get(a, "big", 3, NULL, on_big, &o), 0);
	ck_assert(next_dgram(a, n1, &m, buf, &from));
	send_reply_chunks(n1, &m, &from, big_a, 3, 0xb);
	ck_assert(next_dgram(a, n1, &m, buf, &from)); /* the retry, after 60 ms */
	ck_assert_uint_eq(m.op, WIRE_OP_GET);
	send_reply_chunks(n1, &m, &from, big_a, 3, 0xf);
	run_until(a, NULL, 0, &o, 1000);
	ck_assert_int_eq(o.res.status, SKL_OK);
	ck_assert_uint_eq(o.res.version, 3);
	ck_assert_uint_eq(big_got_len, sizeof(big_a));
	ck_assert_int_eq(memcmp(big_got, big_a, sizeof(big_a)), 0);
	/* The retry's chunks 0 and 1 are duplicates; 2 completes it; 3 comes too late. */
	ck_assert_uint_eq(stats(a).chunk_drops, 2);

	/* Two chunks of version 3, then all of version 4: version 4 whole, unmixed. */
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(skl_get(a, "big", 3, NULL, on_big, &o), 0);
	ck_assert(next_dgram(a, n1, &m, buf, &from));
	send_reply_chunks(n1, &m, &from, big_a, 3, 0x3);
	ck_assert(next_dgram(a, n1, &m, buf, &from));
	send_reply_chunks(n1, &m, &from, big_b, 4, 0x4);
	send_reply_chunks(n1, &m, &from, big_a, 3, 0x4); /* older: dropped */
	send_reply_chunks(n1, &m, &from, big_b, 4, 0xb);
	run_until(a, NULL, 0, &o, 1000);
	ck_assert_uint_eq(o.res.version, 4);
	ck_assert_int_eq(memcmp(big_got, big_b, sizeof(big_b)), 0);
	skl_close(a);
	fake_free(n1);
}
END_TEST

START_TEST(argument_checks)
{
	struct fake *n1 = fake_new(1, FAKE_ANSWER);
	struct skl_options opt = {.mode = SKL_MODE_DIRECT};
	struct skl_agent *a = make_agent(NULL, &n1, 1, &opt);
	static char big[262145];
	struct outcome o = {0};

	ck_assert_int_eq(skl_get(a, "", 0, NULL, on_result, &o), -EINVAL);
	ck_assert_int_eq(skl_get(a, big, 1025, NULL, on_result, &o), -EINVAL);
	/* Past any chunked op (16 MB): refused before the bytes are read. */
	ck_assert_int_eq(skl_put(a, "k", 1, big, (1u << 24) + 1, NULL, on_result, &o), -EINVAL);
	/* Above max_value (262,144 by default): TOO_LARGE without a datagram. */
	ck_assert_int_eq(skl_put(a, "k", 1, big, sizeof(big), NULL, on_result, &o), 0);
	ck_assert(!o.done); /* never from inside the submit call */
	run_until(a, &n1, 1, &o, 1000);
	ck_assert_int_eq(o.res.status, SKL_TOO_LARGE);
	ck_assert_uint_eq(o.res.sends, 0);
	ck_assert_str_eq(skl_status_name(SKL_TIMEOUT), "TIMEOUT");
	ck_assert_str_eq(skl_status_name((enum skl_status)99), "?");
	ck_assert_str_eq(skl_counter_name(0), "submitted");
	ck_assert_ptr_null(skl_counter_name(skl_counter_count()));
	skl_close(a);
	fake_free(n1);
}
END_TEST

/* skl_create_file(): the example config loads; a bad file says why and makes nothing. */
START_TEST(create_from_file)
{
	char path[512], err[512] = "";
	struct skl_agent *a = NULL;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/conf/testbed.json", getenv("SKL_SOURCE_ROOT"));
	ck_assert_int_eq(skl_create_file(path, NULL, &a, err, sizeof(err)), 0);
	ck_assert_str_eq(skl_node_name(a, 1), "n1");
	skl_close(a);

	a = NULL;
	ck_assert_int_eq(skl_create_file("/nonexistent/cluster.json", NULL, &a, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_null(a);
	ck_assert_msg(strstr(err, "/nonexistent/cluster.json") != NULL, "%s", err);

	snprintf(path, sizeof(path), "/tmp/skl-agent-cfg-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs("{\"service\":{\"vip\":\"127.0.0.1\",\"port\":\"x\"}}", f);
	fclose(f);
	ck_assert_int_eq(skl_create_file(path, NULL, &a, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(a);
	ck_assert_msg(strstr(err, path) && strstr(err, "service.port"), "%s", err);
	ck_assert_int_eq(skl_create_file(path, NULL, &a, NULL, 0), -EINVAL); /* err is optional */
	unlink(path);
}
END_TEST

START_TEST(sync_wrappers)
{
	/* The sync wrappers block in skl_poll(), so the fake node answers from a
	 * child process here. */
	struct fake *n1 = fake_new(1, FAKE_ANSWER);
	struct skl_options opt = {.mode = SKL_MODE_DIRECT, .timeout_ms = 200};
	struct skl_agent *a = make_agent(NULL, &n1, 1, &opt);
	struct skl_result res;
	char buf[8];
	pid_t pid = fork();

	if (pid == 0) {
		uint64_t end = clock_mono_ms() + 3000;

		while (clock_mono_ms() < end)
			fake_pump(n1), usleep(200);
		_exit(0);
	}
	ck_assert_int_eq(skl_put_sync(a, "k", 1, "hello", 5, NULL, &res), 0);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_eq(res.version, 8);
	ck_assert_int_eq(skl_get_sync(a, "k", 1, NULL, buf, sizeof(buf), &res), 0);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_eq(res.value_len, 7); /* "val@1:k", copied up to 8 bytes */
	ck_assert(!memcmp(buf, "val@1:k", 7));
	ck_assert_int_eq(skl_del_sync(a, "k", 1, NULL, &res), 0);
	ck_assert_int_eq(res.status, SKL_OK);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	skl_close(a);
	fake_free(n1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent_lib");
	TCase *tc = tcase_create("agent");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, ten_thousand_in_flight_unique_req_ids);
	tcase_add_test(tc, create_from_file);
	tcase_add_test(tc, req_id_not_reused_while_in_flight);
	tcase_add_test(tc, cork_holds_requests_until_poll);
	tcase_add_test(tc, close_cancels_in_flight);
	tcase_add_test(tc, timeout_and_retry_counts);
	tcase_add_test(tc, fallback_linearizable_and_recheck);
	tcase_add_test(tc, fallback_within_one_request);
	tcase_add_test(tc, half_open_node_readmitted_at_first_answer);
	tcase_add_test(tc, relaxed_probe_reads_highest_version);
	tcase_add_test(tc, moved_resends_once);
	tcase_add_test(tc, hint_mode_and_route_cache);
	tcase_add_test(tc, lossy_switch_bypassed_and_back);
	tcase_add_test(tc, hint_moved_followed);
	tcase_add_test(tc, refused_write_resent);
	tcase_add_test(tc, group_unavailable_via_switch_retried);
	tcase_add_test(tc, group_next_member_when_home_silent);
	tcase_add_test(tc, argument_checks);
	tcase_add_test(tc, chunk_loss_retried);
	tcase_add_test(tc, sync_wrappers);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
