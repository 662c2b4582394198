/*
 * bench.c - `skewless bench`: an open- or closed-loop load generator on one
 * libskewless agent.
 *
 * Open loop (--rate): arrivals are a Poisson process scheduled in advance;
 * each operation's latency is measured from its scheduled time, not from when
 * it could be sent, so stalls are charged to the system (no coordinated
 * omission). Closed loop (--concurrency): N operations always in flight,
 * latency from submission. Results: throughput (successes only: OK and
 * NOT_FOUND), errors by status as counts and rates, log-linear latency
 * histograms (every answered operation), per-node served counts of successes
 * (the reply's served-by field) and their max/mean, a per-second timeline;
 * --json writes the summary, --history one JSON line per operation for the
 * linearizability checker.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "hist.h"
#include "httpd.h"
#include "prom.h"
#include "resp_client.h"
#include "rng.h"
#include "workload.h"

#define PRELOAD_WINDOW 512
/* The least value size a history takes: an agent id, a client and a sequence (fill_value()). */
#define HISTORY_MIN_VALUE 24
/* ...and at most this many value bytes in flight: 256 KB values (in chunks) go 4 at a time. */
#define PRELOAD_BYTES (1u << 20)
/* After the run, in-flight operations get this long to finish (they are
 * bounded by their own timeouts anyway). */
#define DRAIN_NS 5000000000ull

struct second {
	uint64_t ops, errors;
	uint64_t p50, p99;
	uint64_t per_node[CFG_MAX_NODES + 1];
};

struct op_ctx {
	struct bench *b;
	uint64_t start_ns; /* scheduled (open loop) or submitted (closed loop) */
	uint64_t key;
	uint32_t client;
	uint8_t kind; /* enum wl_op */
	bool rmw_write;
	uint32_t next_free;
	char value[0]; /* value_size + 1 */
};

struct bench {
	/* flags */
	const char *config_path;
	enum skl_mode mode;
	enum skl_consistency consistency;
	int json_stdout;
	const char *json_path, *history_path;
	const char *key_prefix;	    /* keys are "<prefix><n>" */
	const char *metrics_listen; /* --metrics A.B.C.D:PORT, or NULL */
	const char *resp_addr;	    /* --resp A.B.C.D:PORT: a RESP server instead of the agent */
	uint32_t resp_conns;
	struct httpd *http;	    /* the agent's counters as /metrics, run from the load loop */
	double rate, duration_s, warmup_s;
	uint32_t concurrency, value_size, timeout_ms;
	bool preload;
	uint64_t seed;

	struct cfg *cfg;
	struct skl_agent *agent;
	struct resp_client *resp; /* --resp: operations go here, the agent stays idle */
	struct workload wl;
	struct rng rng;
	FILE *history;
	bool tty;

	/* per-op contexts; a client id is the context's index, so each "client"
	 * has at most one operation outstanding, as a history checker expects */
	struct op_ctx *ctx;
	size_t ctx_size;
	uint32_t nctx, free_ctx;
	uint32_t max_inflight;

	/* The measured window is [t0, end_ns): after the warm-up, before the drain. */
	uint64_t t0, end_ns;
	struct timespec started; /* wall clock at t0, for lining runs up with logs */
	bool measuring;
	/* completed: every answered operation; succeeded: OK or NOT_FOUND answered
	 * inside the window, the only ones throughput counts (a failing closed
	 * loop is not faster, and the drain after the window is not load). */
	uint64_t issued, completed, succeeded, drained, not_issued, submit_errors;
	uint64_t status[SKL_STATUS_COUNT];
	uint64_t stale;
	uint64_t per_node[CFG_MAX_NODES + 1];
	struct hist all, reads, writes, cur_second;
	struct second *seconds;
	uint32_t nseconds, cur_sec;
	uint64_t preload_ns, preload_errors;
	uint64_t value_seq;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void bench_usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: skewless --config FILE bench [flags]\n"
	    "\n"
	    "  --keys N                 key space key:0..key:N-1 (default 10000)\n"
	    "  --dist D                 uniform | zipf:S | scrambled-zipf:S | hotspot:DATA:OPS\n"
	    "                           (default zipf:0.99)\n"
	    "  --read-ratio R           fraction of GETs, the rest PUTs (default 0.95)\n"
	    "  --ycsb A..F              YCSB core mix (E's scans are issued as reads)\n"
	    "  --value-size B           PUT value bytes, 0..262144 (default 64)\n"
	    "  --rate OPS               open loop: Poisson arrivals at OPS per second\n"
	    "  --concurrency N          closed loop: N operations in flight (default 16)\n"
	    "  --duration S             seconds of measured load (default 10)\n"
	    "  --warmup S               seconds of the same load before it, not measured\n"
	    "                           (default 0)\n"
	    "  --preload                PUT every key first (not measured)\n"
	    "  --dynamic hot-in:T|random:T  move the hot set every T seconds\n"
	    "  --hot-keys K             keys moved per change (default 128)\n"
	    "  --mode M, --consistency C, --timeout MS   agent settings\n"
	    "  --seed N                 workload seed (default: from the clock)\n"
	    "  --json FILE              write the summary as JSON ('-': stdout)\n"
	    "  --history FILE           one JSON line per operation\n"
	    "  --key-prefix P           keys are P0, P1, ... (default \"key:\")\n"
	    "  --metrics A.B.C.D:PORT   serve the agent's counters as Prometheus /metrics\n"
	    "  --resp A.B.C.D:PORT      drive a RESP server (skewless-proxy, redis-server,\n"
	    "                           nutcracker) with GET and SET instead of the agent\n"
	    "  --resp-conns N           its connections, pipelined (default: concurrency,\n"
	    "                           at most 50)\n"
	    "\n"
	    "Exit: 0 when the run finished (errors are in the report), 64 usage, 70 local\n"
	    "error, 78 config error.\n");
}

/* ---- per-operation bookkeeping ---- */

static struct op_ctx *ctx_at(struct bench *b, uint32_t i)
{
	return (struct op_ctx *)((char *)b->ctx + (size_t)i * b->ctx_size);
}

static struct op_ctx *ctx_get(struct bench *b)
{
	struct op_ctx *c;

	if (b->free_ctx == UINT32_MAX)
		return NULL;
	c = ctx_at(b, b->free_ctx);
	b->free_ctx = c->next_free;
	return c;
}

static void ctx_put(struct bench *b, struct op_ctx *c)
{
	c->next_free = b->free_ctx;
	b->free_ctx = c->client;
}

static void fill_value(struct bench *b, char *buf, uint32_t client)
{
	/*
	 * Unique per write, so that a history checker can tell writes apart, also
	 * across benches whose histories are checked together: the agent's id,
	 * the client and the write's sequence (HISTORY_MIN_VALUE leaves room).
	 */
	int n = snprintf(buf, b->value_size + 1, "%08x.c%u-%llu-", skl_agent_id(b->agent), client,
			 (unsigned long long)++b->value_seq);

	for (uint32_t i = n > 0 ? (uint32_t)n : 0; i < b->value_size; i++)
		buf[i] = (char)('a' + i % 26);
	buf[b->value_size] = '\0';
}

static void json_str(FILE *f, const void *s, size_t len)
{
	const unsigned char *p = s;

	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '"' || p[i] == '\\')
			fprintf(f, "\\%c", p[i]);
		else if (p[i] < 0x20 || p[i] >= 0x7f)
			fprintf(f, "\\u%04x", p[i]);
		else
			fputc(p[i], f);
	}
	fputc('"', f);
}

static void write_history(struct bench *b, const struct op_ctx *c, const struct skl_result *res)
{
	static const char *const ops[] = {"get", "put", "del"};
	const char *node = skl_node_name(b->agent, res->node);

	fprintf(b->history, "{\"client\":%u,\"op\":\"%s\",\"key\":", c->client, ops[res->op]);
	json_str(b->history, res->key, res->key_len);
	fputs(",\"value\":", b->history);
	json_str(b->history, res->value, res->value ? res->value_len : 0);
	fprintf(b->history,
		",\"version\":%llu,\"status\":\"%s\",\"invoke_ns\":%llu,\"complete_ns\":%llu,"
		"\"node\":\"%s\"}\n",
		(unsigned long long)res->version, skl_status_name(res->status),
		(unsigned long long)res->invoke_ns, (unsigned long long)res->complete_ns,
		node ? node : "");
}

static void close_second(struct bench *b)
{
	if (b->cur_sec < b->nseconds) {
		b->seconds[b->cur_sec].p50 = hist_percentile(&b->cur_second, 50);
		b->seconds[b->cur_sec].p99 = hist_percentile(&b->cur_second, 99);
	}
	hist_reset(&b->cur_second);
}

static void progress(struct bench *b, uint32_t sec)
{
	const struct second *s = &b->seconds[sec];

	if (!b->tty)
		return;
	printf("\r[%3us] %8llu ops/s  p50 %7.1f us  p99 %8.1f us  errors %llu   ", sec + 1,
	       (unsigned long long)s->ops, (double)s->p50 / 1e3, (double)s->p99 / 1e3,
	       (unsigned long long)s->errors);
	fflush(stdout);
}

static void record(struct bench *b, const struct op_ctx *c, const struct skl_result *res)
{
	uint64_t lat = res->complete_ns > c->start_ns ? res->complete_ns - c->start_ns : 0;
	uint32_t sec = (uint32_t)((res->complete_ns - b->t0) / 1000000000ull);
	bool error = res->status != SKL_OK && res->status != SKL_NOT_FOUND;
	bool late = res->complete_ns >= b->end_ns; /* answered in the drain */

	b->completed++;
	b->status[res->status]++;
	if (res->flags & SKL_R_STALE)
		b->stale++;
	if (!error && late) {
		b->drained++;
		return;
	}
	b->succeeded += !error;
	if (res->node && !error)
		b->per_node[res->node]++;
	hist_record(&b->all, lat);
	hist_record(res->op == SKL_OP_GET ? &b->reads : &b->writes, lat);
	while (sec > b->cur_sec && b->cur_sec < b->nseconds) {
		close_second(b);
		progress(b, b->cur_sec);
		b->cur_sec++;
	}
	if (sec < b->nseconds) {
		b->seconds[sec].ops += !error;
		b->seconds[sec].errors += error;
		if (res->node && !error)
			b->seconds[sec].per_node[res->node]++;
		hist_record(&b->cur_second, lat);
	}
}

/* The bench's requests go to the agent, or with --resp to a RESP server. */
static int b_get(struct bench *b, const char *key, size_t klen, skl_callback cb, void *arg)
{
	return b->resp ? resp_client_get(b->resp, key, klen, cb, arg)
		       : skl_get(b->agent, key, klen, NULL, cb, arg);
}

static int b_put(struct bench *b, const char *key, size_t klen, const char *val, size_t vlen,
		 skl_callback cb, void *arg)
{
	return b->resp ? resp_client_set(b->resp, key, klen, val, vlen, cb, arg)
		       : skl_put(b->agent, key, klen, val, vlen, NULL, cb, arg);
}

static uint32_t b_inflight(const struct bench *b)
{
	return b->resp ? resp_client_inflight(b->resp) : skl_inflight(b->agent);
}

static int b_poll(struct bench *b, int timeout_ms)
{
	return b->resp ? resp_client_poll(b->resp, timeout_ms) : skl_poll(b->agent, timeout_ms);
}

static int issue(struct bench *b, struct op_ctx *c);

static void on_done(void *arg, const struct skl_result *res)
{
	struct op_ctx *c = arg;
	struct bench *b = c->b;

	if (b->history)
		write_history(b, c, res);
	if (c->kind == WL_RMW && !c->rmw_write && res->status != SKL_TIMEOUT &&
	    res->status != SKL_UNAVAILABLE && res->status != SKL_CANCELLED) {
		/* The write half of a read-modify-write; latency covers both. */
		c->rmw_write = true;
		if (issue(b, c) == 0)
			return;
	}
	if (b->measuring)
		record(b, c, res);
	ctx_put(b, c);
}

/* Submit c's operation (key and kind already chosen). */
static int issue(struct bench *b, struct op_ctx *c)
{
	char key[96];
	int klen = snprintf(key, sizeof(key), "%s%llu", b->key_prefix, (unsigned long long)c->key);
	int rc;

	if (c->kind == WL_READ || (c->kind == WL_RMW && !c->rmw_write)) {
		rc = b_get(b, key, (size_t)klen, on_done, c);
	} else {
		fill_value(b, c->value, c->client);
		rc = b_put(b, key, (size_t)klen, c->value, b->value_size, on_done, c);
	}
	if (rc)
		b->submit_errors++;
	return rc;
}

/* Start one workload operation scheduled at start_ns. */
static int start_op(struct bench *b, uint64_t start_ns)
{
	struct op_ctx *c = ctx_get(b);

	if (!c)
		return -EBUSY;
	c->start_ns = start_ns;
	c->rmw_write = false;
	c->kind = (uint8_t)wl_next_op(&b->wl, &b->rng);
	c->key = c->kind == WL_INSERT ? wl_insert_key(&b->wl) : wl_next_key(&b->wl, &b->rng);
	if (issue(b, c)) {
		ctx_put(b, c);
		return -EAGAIN;
	}
	b->issued++;
	return 0;
}

/* ---- phases ---- */

static void on_preload(void *arg, const struct skl_result *res)
{
	struct bench *b = arg;

	if (res->status != SKL_OK)
		b->preload_errors++;
}

/*
 * /metrics: the agent's counters (SKL_COUNTERS, their descriptions as help),
 * rendered on this thread, between polls: the agent is single-threaded.
 */
static char *render_metrics(void *arg, size_t *len)
{
	struct bench *b = arg;
	struct skl_stats st;
	struct prom *p = prom_new();
	char name[96], *out;

	if (!p)
		return NULL;
	skl_get_stats(b->agent, &st);
	for (size_t i = 0; i < skl_counter_count(); i++) {
		snprintf(name, sizeof(name), "skewless_agent_%s_total", skl_counter_name(i));
		prom_add(p, name, skl_counter_desc(i), PROM_COUNTER, NULL, 0,
			 (double)skl_counter_value(&st, i));
	}
	prom_add(p, "skewless_agent_inflight", "Requests in flight", PROM_GAUGE, NULL, 0,
		 (double)skl_inflight(b->agent));
	out = prom_render(p, len);
	prom_free(p);
	return out;
}

/* One pass of the /metrics server, when there is one (non-blocking). */
static void serve_metrics(struct bench *b)
{
	if (b->http)
		httpd_run(b->http);
}

static int run_preload(struct bench *b)
{
	char key[96], *value = malloc(b->value_size + 1);
	uint64_t next = 0, t = clock_mono_ns();
	uint32_t window = b->value_size ? PRELOAD_BYTES / b->value_size : PRELOAD_WINDOW;

	window = window < 1 ? 1 : window > PRELOAD_WINDOW ? PRELOAD_WINDOW : window;

	if (!value)
		return -ENOMEM;
	while ((next < b->wl.nkeys || b_inflight(b)) && !interrupted) {
		while (next < b->wl.nkeys && b_inflight(b) < window) {
			int klen = snprintf(key, sizeof(key), "%s%llu", b->key_prefix,
					    (unsigned long long)next);

			fill_value(b, value, UINT32_MAX);
			if (b_put(b, key, (size_t)klen, value, b->value_size, on_preload, b))
				break;
			next++;
		}
		serve_metrics(b);
		if (b_poll(b, 10) < 0)
			break;
	}
	free(value);
	b->preload_ns = clock_mono_ns() - t;
	return 0;
}

static double exp_interval_ns(struct bench *b)
{
	double u = rng_double(&b->rng);

	return -log(1 - u) / b->rate * 1e9;
}

static void run_load(struct bench *b)
{
	double next_arrival;
	uint64_t next_shift;

	uint64_t start = clock_mono_ns();
	uint64_t warm_end = start + (uint64_t)(b->warmup_s * 1e9);

	/* Until the warm-up ends, the window lies ahead (end_ns also marks it). */
	b->t0 = warm_end;
	b->end_ns = warm_end + (uint64_t)(b->duration_s * 1e9);
	next_arrival = (double)start;
	next_shift = b->wl.dynamic != WL_STATIC ? start + (uint64_t)(b->wl.dynamic_period_s * 1e9)
						: UINT64_MAX;
	b->measuring = b->warmup_s <= 0;
	if (b->measuring)
		clock_gettime(CLOCK_REALTIME, &b->started);
	for (;;) {
		uint64_t now = clock_mono_ns();
		int wait_ms = 10;

		if (now >= b->end_ns || interrupted)
			break;
		if (!b->measuring && now >= warm_end) {
			/* What is in flight now is the steady state's: it is measured. */
			clock_gettime(CLOCK_REALTIME, &b->started);
			b->measuring = true;
		}
		if (now >= next_shift) {
			wl_shift(&b->wl, &b->rng);
			next_shift += (uint64_t)(b->wl.dynamic_period_s * 1e9);
		}
		if (b->rate > 0) {
			/* Issue every arrival that is due; those held back by a full
			 * window keep their scheduled time. */
			while (next_arrival <= (double)now && next_arrival < (double)b->end_ns) {
				if (b_inflight(b) >= b->max_inflight ||
				    start_op(b, (uint64_t)next_arrival) == -EBUSY)
					break;
				next_arrival += exp_interval_ns(b);
			}
			if (next_arrival > (double)now)
				wait_ms = (int)((next_arrival - (double)now) / 1e6);
			else
				wait_ms = 0;
		} else {
			while (b_inflight(b) < b->concurrency)
				if (start_op(b, clock_mono_ns()))
					break;
		}
		if (wait_ms > 10)
			wait_ms = 10;
		b_poll(b, wait_ms);
		serve_metrics(b);
	}
	/* Arrivals scheduled before the end that never got a window. */
	if (b->rate > 0)
		while (next_arrival < (double)b->end_ns) {
			b->not_issued++;
			next_arrival += exp_interval_ns(b);
		}
	{
		uint64_t deadline = clock_mono_ns() + DRAIN_NS;

		while (b_inflight(b) && clock_mono_ns() < deadline && !interrupted)
			b_poll(b, 10);
	}
	close_second(b);
	if (b->cur_sec < b->nseconds)
		progress(b, b->cur_sec);
	if (b->tty)
		putchar('\n');
}

/* ---- report ---- */

static json_t *latency_json(const struct hist *h)
{
	return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "count", (json_int_t)h->count,
			 "mean", hist_mean(h) / 1e3, "p50", hist_percentile(h, 50) / 1e3, "p90",
			 hist_percentile(h, 90) / 1e3, "p99", hist_percentile(h, 99) / 1e3, "p999",
			 hist_percentile(h, 99.9) / 1e3, "min", h->count ? h->min / 1e3 : 0.0,
			 "max", h->max / 1e3);
}

/* Load balance over the config's nodes: the busiest node against the mean. */
static void load_stats(const struct bench *b, const uint64_t *counts, double *max, double *mean)
{
	double sum = 0, top = 0;

	for (int i = 0; i < b->cfg->nnodes; i++) {
		double v = (double)counts[b->cfg->nodes[i].id];

		sum += v;
		if (v > top)
			top = v;
	}
	*max = top;
	*mean = b->cfg->nnodes ? sum / b->cfg->nnodes : 0;
}

static json_t *per_node_json(const struct bench *b, const uint64_t *counts)
{
	json_t *o = json_object();

	for (int i = 0; i < b->cfg->nnodes; i++)
		json_object_set_new(o, b->cfg->nodes[i].name,
				    json_integer((json_int_t)counts[b->cfg->nodes[i].id]));
	return o;
}

static json_t *summary_json(struct bench *b, double elapsed_s)
{
	json_t *root, *statuses = json_object(), *timeline = json_array(), *agent = json_object();
	json_t *error_rates = json_object();
	struct skl_stats st;
	double max, mean;
	uint64_t errors = 0;
	static const char *const dist_names[] = {"uniform", "zipf", "scrambled-zipf", "hotspot",
						 "latest"};

	for (int s = 0; s < SKL_STATUS_COUNT; s++) {
		if (b->status[s])
			json_object_set_new(statuses, skl_status_name(s),
					    json_integer((json_int_t)b->status[s]));
		if (s != SKL_OK && s != SKL_NOT_FOUND && b->status[s]) {
			errors += b->status[s];
			json_object_set_new(error_rates, skl_status_name(s),
					    json_real((double)b->status[s] / b->completed));
		}
	}
	for (uint32_t i = 0; i < b->nseconds && i <= b->cur_sec; i++) {
		const struct second *s = &b->seconds[i];
		double smax, smean;

		load_stats(b, s->per_node, &smax, &smean);
		json_array_append_new(
		    timeline, json_pack("{s:i, s:I, s:I, s:f, s:f, s:o, s:f}", "t", (int)i, "ops",
					(json_int_t)s->ops, "errors", (json_int_t)s->errors,
					"p50_us", s->p50 / 1e3, "p99_us", s->p99 / 1e3, "per_node",
					per_node_json(b, s->per_node), "load_max_over_mean",
					smean > 0 ? smax / smean : 0.0));
	}
	skl_get_stats(b->agent, &st);
	for (size_t i = 0; i < skl_counter_count(); i++)
		json_object_set_new(agent, skl_counter_name(i),
				    json_integer((json_int_t)skl_counter_value(&st, i)));
	load_stats(b, b->per_node, &max, &mean);
	root = json_pack(
	    "{s:s, s:s, s:s, s:f, s:I, s:f, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:I, s:I,"
	    " s:o, s:{s:f, s:f, s:f}, s:o, s:o}",
	    "config", b->config_path, "workload", b->wl.name, "loop",
	    b->rate > 0 ? "open" : "closed", "duration_s", elapsed_s, "ops",
	    (json_int_t)b->succeeded, "throughput_ops",
	    elapsed_s > 0 ? b->succeeded / elapsed_s : 0.0, "dist", dist_names[b->wl.dist], "keys",
	    (json_int_t)b->wl.nkeys, "value_size", (json_int_t)b->value_size, "latency_us",
	    latency_json(&b->all), "read_latency_us", latency_json(&b->reads), "write_latency_us",
	    latency_json(&b->writes), "status", statuses, "errors", (json_int_t)errors,
	    "stale_reads", (json_int_t)b->stale, "per_node", per_node_json(b, b->per_node), "load",
	    "max", max, "mean", mean, "max_over_mean", mean > 0 ? max / mean : 0.0, "timeline",
	    timeline, "agent", agent);
	/* Every answered operation, errors included, under names of their own. */
	json_object_set_new(root, "attempts", json_integer((json_int_t)b->completed));
	json_object_set_new(root, "attempts_per_s",
			    json_real(elapsed_s > 0 ? b->completed / elapsed_s : 0.0));
	json_object_set_new(root, "error_rate",
			    json_real(b->completed ? (double)errors / b->completed : 0.0));
	json_object_set_new(root, "error_rates", error_rates);
	/* Value bytes per second: each success moves one value of value_size (a GET's
	 * read back, a PUT's written); a larger value travels in chunks. */
	json_object_set_new(root, "throughput_mb_s",
			    json_real(elapsed_s > 0
					  ? b->succeeded * (double)b->value_size / elapsed_s / 1e6
					  : 0.0));
	json_object_set_new(root, "target_rate", json_real(b->rate));
	/* --resp: the RESP server driven (the agent's counters then stay 0). */
	json_object_set_new(root, "resp", b->resp_addr ? json_string(b->resp_addr) : json_null());
	json_object_set_new(root, "concurrency", json_integer(b->rate > 0 ? 0 : b->concurrency));
	json_object_set_new(root, "zipf_s", json_real(b->wl.zipf_s));
	json_object_set_new(root, "not_issued", json_integer((json_int_t)b->not_issued));
	json_object_set_new(root, "warmup_s", json_real(b->warmup_s));
	json_object_set_new(root, "drained", json_integer((json_int_t)b->drained));
	json_object_set_new(root, "preload_s", json_real(b->preload_ns / 1e9));
	json_object_set_new(root, "preload_errors", json_integer((json_int_t)b->preload_errors));
	json_object_set_new(
	    root, "started_unix_ms",
	    json_integer((json_int_t)b->started.tv_sec * 1000 + b->started.tv_nsec / 1000000));
	return root;
}

static void print_text(struct bench *b, json_t *sum)
{
	json_t *lat = json_object_get(sum, "latency_us"), *load = json_object_get(sum, "load");
	double elapsed = json_real_value(json_object_get(sum, "duration_s"));

	printf("skewless bench: %s, %s loop, %.1f s: %llu ops succeeded, %.0f ops/s", b->wl.name,
	       b->rate > 0 ? "open" : "closed", elapsed, (unsigned long long)b->succeeded,
	       json_real_value(json_object_get(sum, "throughput_ops")));
	if (b->rate > 0)
		printf(" (target %.0f/s)", b->rate);
	printf(", %.2f MB/s of %u-byte values",
	       json_real_value(json_object_get(sum, "throughput_mb_s")), b->value_size);
	printf("\nlatency us: p50 %.1f  p90 %.1f  p99 %.1f  p999 %.1f  max %.1f  mean %.1f\n",
	       json_real_value(json_object_get(lat, "p50")),
	       json_real_value(json_object_get(lat, "p90")),
	       json_real_value(json_object_get(lat, "p99")),
	       json_real_value(json_object_get(lat, "p999")),
	       json_real_value(json_object_get(lat, "max")),
	       json_real_value(json_object_get(lat, "mean")));
	printf("errors: %llu of %llu answered (%.3f%%)",
	       (unsigned long long)(b->completed - b->succeeded - b->drained),
	       (unsigned long long)b->completed,
	       100 * json_real_value(json_object_get(sum, "error_rate")));
	if (b->drained)
		printf("; %llu answered after the window, not counted",
		       (unsigned long long)b->drained);
	printf("\nstatus:");
	for (int s = 0; s < SKL_STATUS_COUNT; s++)
		if (b->status[s])
			printf(" %s %llu", skl_status_name(s), (unsigned long long)b->status[s]);
	if (b->stale)
		printf(" (possibly stale reads: %llu)", (unsigned long long)b->stale);
	if (b->not_issued)
		printf(" (arrivals not issued: %llu)", (unsigned long long)b->not_issued);
	printf("\nper node:");
	for (int i = 0; i < b->cfg->nnodes; i++)
		printf(" %s %llu", b->cfg->nodes[i].name,
		       (unsigned long long)b->per_node[b->cfg->nodes[i].id]);
	printf("\nload: max %.0f mean %.1f max/mean %.3f\n",
	       json_real_value(json_object_get(load, "max")),
	       json_real_value(json_object_get(load, "mean")),
	       json_real_value(json_object_get(load, "max_over_mean")));
}

/* ---- flags ---- */

enum {
	B_KEYS = 300,
	B_DIST,
	B_READ_RATIO,
	B_YCSB,
	B_VALUE_SIZE,
	B_RATE,
	B_CONCURRENCY,
	B_DURATION,
	B_WARMUP,
	B_PRELOAD,
	B_DYNAMIC,
	B_HOT_KEYS,
	B_MODE,
	B_CONSISTENCY,
	B_TIMEOUT,
	B_SEED,
	B_JSON,
	B_HISTORY,
	B_KEY_PREFIX,
	B_CONFIG,
	B_METRICS,
	B_RESP,
	B_RESP_CONNS,
};

static int bad(const char *flag, const char *expected, const char *got)
{
	fprintf(stderr, "skewless bench: %s: expected %s, got \"%s\"\n", flag, expected, got);
	return CLI_EXIT_USAGE;
}

static int parse_flags(struct bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"keys", required_argument, NULL, B_KEYS},
	    {"dist", required_argument, NULL, B_DIST},
	    {"read-ratio", required_argument, NULL, B_READ_RATIO},
	    {"ycsb", required_argument, NULL, B_YCSB},
	    {"value-size", required_argument, NULL, B_VALUE_SIZE},
	    {"rate", required_argument, NULL, B_RATE},
	    {"concurrency", required_argument, NULL, B_CONCURRENCY},
	    {"duration", required_argument, NULL, B_DURATION},
	    {"warmup", required_argument, NULL, B_WARMUP},
	    {"preload", no_argument, NULL, B_PRELOAD},
	    {"dynamic", required_argument, NULL, B_DYNAMIC},
	    {"hot-keys", required_argument, NULL, B_HOT_KEYS},
	    {"mode", required_argument, NULL, B_MODE},
	    {"consistency", required_argument, NULL, B_CONSISTENCY},
	    {"timeout", required_argument, NULL, B_TIMEOUT},
	    {"seed", required_argument, NULL, B_SEED},
	    {"json", required_argument, NULL, B_JSON},
	    {"history", required_argument, NULL, B_HISTORY},
	    {"key-prefix", required_argument, NULL, B_KEY_PREFIX},
	    {"config", required_argument, NULL, B_CONFIG},
	    {"metrics", required_argument, NULL, B_METRICS},
	    {"resp", required_argument, NULL, B_RESP},
	    {"resp-conns", required_argument, NULL, B_RESP_CONNS},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *ycsb = NULL, *dist = NULL;
	double read_ratio = -1;
	uint64_t u;
	int opt;
	char *end;

	optind = 0; /* 0, not 1: glibc re-initialises its scanner */
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case B_KEYS:
			if (cfg_parse_uint(optarg, 1, 1ull << 32, &u))
				return bad("--keys", "1..4294967296", optarg);
			b->wl.nkeys = u;
			break;
		case B_DIST:
			dist = optarg;
			break;
		case B_READ_RATIO:
			read_ratio = strtod(optarg, &end);
			if (end == optarg || *end || !(read_ratio >= 0 && read_ratio <= 1))
				return bad("--read-ratio", "a fraction 0..1", optarg);
			break;
		case B_YCSB:
			ycsb = optarg;
			break;
		case B_VALUE_SIZE:
			if (cfg_parse_uint(optarg, 0, CFG_MAX_VALUE, &u))
				return bad("--value-size", "bytes 0..262144", optarg);
			b->value_size = (uint32_t)u;
			break;
		case B_RATE:
			b->rate = strtod(optarg, &end);
			if (end == optarg || *end || !(b->rate > 0 && b->rate <= 1e8))
				return bad("--rate", "operations per second > 0", optarg);
			break;
		case B_CONCURRENCY:
			if (cfg_parse_uint(optarg, 1, 1u << 20, &u))
				return bad("--concurrency", "1..1048576", optarg);
			b->concurrency = (uint32_t)u;
			break;
		case B_DURATION:
			b->duration_s = strtod(optarg, &end);
			if (end == optarg || *end || !(b->duration_s > 0 && b->duration_s <= 86400))
				return bad("--duration", "seconds, above 0 and at most 86400",
					   optarg);
			break;
		case B_WARMUP:
			b->warmup_s = strtod(optarg, &end);
			if (end == optarg || *end || !(b->warmup_s >= 0 && b->warmup_s <= 3600))
				return bad("--warmup", "seconds, 0 to 3600", optarg);
			break;
		case B_PRELOAD:
			b->preload = true;
			break;
		case B_DYNAMIC:
			if (wl_parse_dynamic(&b->wl, optarg))
				return bad("--dynamic", "hot-in:SECONDS or random:SECONDS", optarg);
			break;
		case B_HOT_KEYS:
			if (cfg_parse_uint(optarg, 1, UINT64_MAX, &u))
				return bad("--hot-keys", "a count >= 1", optarg);
			b->wl.hot_keys = u;
			break;
		case B_MODE:
			if (skl_mode_parse(optarg, &b->mode))
				return bad("--mode", "inpath, hint or direct", optarg);
			break;
		case B_CONSISTENCY:
			if (skl_consistency_parse(optarg, &b->consistency))
				return bad("--consistency", "linearizable or relaxed", optarg);
			break;
		case B_TIMEOUT:
			if (cfg_parse_uint(optarg, 1, 600000, &u))
				return bad("--timeout", "1..600000 ms", optarg);
			b->timeout_ms = (uint32_t)u;
			break;
		case B_SEED:
			if (cfg_parse_uint(optarg, 0, UINT64_MAX, &b->seed))
				return bad("--seed", "an integer >= 0", optarg);
			break;
		case B_JSON:
			/* "--json --preload": a flag where the file name goes. */
			if (optarg[0] == '-' && optarg[1])
				return bad("--json", "a file name, or - for stdout", optarg);
			b->json_path = optarg;
			break;
		case B_METRICS:
			b->metrics_listen = optarg;
			break;
		case B_RESP:
			b->resp_addr = optarg;
			break;
		case B_RESP_CONNS:
			if (cfg_parse_uint(optarg, 1, 1024, &u))
				return bad("--resp-conns", "1..1024", optarg);
			b->resp_conns = (uint32_t)u;
			break;
		case B_KEY_PREFIX:
			if (strlen(optarg) > 64) {
				fprintf(stderr, "skewless bench: --key-prefix: at most 64 bytes\n");
				return 64;
			}
			b->key_prefix = optarg;
			break;
		case B_HISTORY:
			b->history_path = optarg;
			break;
		case B_CONFIG:
			b->config_path = optarg;
			break;
		case 'h':
			bench_usage(stdout);
			return -1;
		default:
			bench_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return bad("arguments", "flags only", argv[optind]);
	if (ycsb && read_ratio >= 0) {
		fprintf(stderr, "skewless bench: --ycsb and --read-ratio exclude each other\n");
		return CLI_EXIT_USAGE;
	}
	if (b->rate > 0 && b->concurrency) {
		fprintf(stderr, "skewless bench: --rate (open loop) and --concurrency (closed "
				"loop) exclude each other\n");
		return CLI_EXIT_USAGE;
	}
	if (dist && wl_parse_dist(&b->wl, dist))
		return bad("--dist", "uniform, zipf:S, scrambled-zipf:S or hotspot:DATA:OPS", dist);
	if (ycsb) {
		if (wl_parse_ycsb(&b->wl, ycsb, dist != NULL))
			return bad("--ycsb", "one of A, B, C, D, E, F", ycsb);
	} else {
		b->wl.read = read_ratio >= 0 ? read_ratio : 0.95;
		b->wl.update = 1 - b->wl.read;
		snprintf(b->wl.name, sizeof(b->wl.name), "read-%.2f", b->wl.read);
	}
	return 0;
}

int bench_main(const char *config_path, enum skl_mode mode, enum skl_consistency consistency,
	       int json, uint32_t timeout_ms, int argc, char **argv)
{
	struct bench *b = calloc(1, sizeof(*b));
	struct skl_options o = {0};
	char err[CFG_ERR_LEN];
	int rc = CLI_EXIT_SOFTWARE;
	double elapsed;
	uint64_t now;
	json_t *sum;

	if (!b)
		return CLI_EXIT_SOFTWARE;
	b->config_path = config_path;
	b->mode = mode;
	b->consistency = consistency;
	b->json_stdout = json;
	b->timeout_ms = timeout_ms;
	b->wl.nkeys = 10000;
	b->wl.dist = WL_ZIPF;
	b->wl.zipf_s = 0.99;
	b->value_size = 64;
	b->key_prefix = "key:";
	b->duration_s = 10;
	b->seed = clock_mono_ns();
	rc = parse_flags(b, argc, argv);
	if (rc) {
		rc = rc < 0 ? CLI_EXIT_OK : rc;
		goto out;
	}
	rc = CLI_EXIT_SOFTWARE;
	if (b->rate == 0 && b->concurrency == 0)
		b->concurrency = 16;
	if (!b->config_path) {
		fprintf(stderr, "skewless bench: --config FILE is required\n");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	b->cfg = malloc(sizeof(*b->cfg));
	if (!b->cfg)
		goto out;
	if (cfg_load(b->config_path, b->cfg, err, sizeof(err))) {
		fprintf(stderr, "skewless: %s\n", err);
		rc = CLI_EXIT_CONFIG;
		goto out;
	}
	if (b->value_size > b->cfg->service.max_value) {
		fprintf(
		    stderr,
		    "skewless bench: --value-size %u is above the service's max_value %u: every "
		    "PUT would be TOO_LARGE\n",
		    b->value_size, b->cfg->service.max_value);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (b->history_path && b->value_size < HISTORY_MIN_VALUE) {
		fprintf(stderr,
			"skewless bench: --history needs --value-size %u or more: each write's value "
			"names its agent, client and sequence, so that a checker can tell writes "
			"apart\n",
			HISTORY_MIN_VALUE);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (wl_init(&b->wl)) {
		fprintf(stderr, "skewless bench: cannot set up the workload%s\n",
			b->wl.dynamic == WL_RANDOM
			    ? " (--dynamic random keeps a 4-byte slot per key: fewer --keys?)"
			    : "");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	rng_seed(&b->rng, b->seed);
	o.mode = b->mode;
	o.consistency = b->consistency;
	o.timeout_ms = b->timeout_ms;
	if (skl_create(b->cfg, &o, &b->agent)) {
		fprintf(stderr, "skewless bench: cannot create the agent%s\n",
			getenv("SKL_SWITCH_ORDER")
			    ? " (does $SKL_SWITCH_ORDER name switches of the config?)"
			    : "");
		goto out;
	}
	if (b->resp_addr) {
		uint32_t conns = b->resp_conns;
		int err;

		if (!conns)
			conns = b->concurrency && b->concurrency < 50 ? b->concurrency : 50;
		err = resp_client_open(b->resp_addr, conns, &b->resp);

		if (err) {
			fprintf(stderr, "skewless bench: --resp %s: %s\n", b->resp_addr,
				err == -EINVAL ? "expected A.B.C.D:PORT" : strerror(-err));
			rc = CLI_EXIT_USAGE;
			goto out;
		}
	}
	b->max_inflight = b->rate > 0 ? b->cfg->agent.max_inflight : b->concurrency;
	if (b->max_inflight > b->cfg->agent.max_inflight)
		b->max_inflight = b->cfg->agent.max_inflight;
	if (b->concurrency > b->max_inflight)
		b->concurrency = b->max_inflight;
	b->nctx = b->max_inflight;
	b->ctx_size = (sizeof(struct op_ctx) + b->value_size + 1 + 7) & ~(size_t)7;
	b->ctx = calloc(b->nctx, b->ctx_size);
	b->nseconds = (uint32_t)ceil(b->duration_s) + (uint32_t)(DRAIN_NS / 1000000000ull) + 2;
	b->seconds = calloc(b->nseconds, sizeof(*b->seconds));
	if (!b->ctx || !b->seconds)
		goto out;
	for (uint32_t i = 0; i < b->nctx; i++) {
		struct op_ctx *c = ctx_at(b, i);

		c->b = b;
		c->client = i;
		c->next_free = i + 1 < b->nctx ? i + 1 : UINT32_MAX;
	}
	b->free_ctx = 0;
	hist_reset(&b->all);
	hist_reset(&b->reads);
	hist_reset(&b->writes);
	hist_reset(&b->cur_second);
	if (b->history_path && !(b->history = fopen(b->history_path, "w"))) {
		fprintf(stderr, "skewless bench: %s: %s\n", b->history_path, strerror(errno));
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (b->metrics_listen) {
		b->http = httpd_start(b->metrics_listen, HTTPD_EXTERNAL, render_metrics, b, err,
				      sizeof(err));
		if (!b->http) {
			fprintf(stderr, "skewless bench: --metrics %s\n", err);
			rc = CLI_EXIT_USAGE;
			goto out;
		}
	}
	b->tty = isatty(STDOUT_FILENO) && !b->json_stdout;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (b->preload)
		run_preload(b);
	run_load(b);
	now = clock_mono_ns();
	now = now < b->end_ns ? now : b->end_ns;
	elapsed = now > b->t0 ? (double)(now - b->t0) / 1e9 : 0; /* 0: stopped in the warm-up */
	sum = summary_json(b, elapsed);
	if (b->json_stdout) {
		json_dumpf(sum, stdout, JSON_INDENT(2));
		putchar('\n');
	} else {
		print_text(b, sum);
	}
	rc = CLI_EXIT_OK;
	if (b->json_path) {
		int wrc = !strcmp(b->json_path, "-")
			      ? json_dumpf(sum, stdout, JSON_INDENT(2))
			      : json_dump_file(sum, b->json_path, JSON_INDENT(2));
		if (wrc) {
			fprintf(stderr, "skewless bench: cannot write %s\n", b->json_path);
			rc = CLI_EXIT_SOFTWARE;
		}
	}
	json_decref(sum);
out:
	httpd_stop(b->http);
	resp_client_close(b->resp);
	if (b->agent)
		skl_close(b->agent);
	if (b->history && fclose(b->history)) {
		fprintf(stderr, "skewless bench: %s: %s\n", b->history_path, strerror(errno));
		rc = CLI_EXIT_SOFTWARE;
	}
	wl_free(&b->wl);
	free(b->ctx);
	free(b->seconds);
	free(b->cfg);
	free(b);
	return rc;
}
