/*
 * test_agent_node.c - libskewless and the `skewless` CLI against real
 * skewless-node processes on 127.0.0.1. The service VIP is a UDP socket this
 * test binds and never answers: "a switch that is down". Covers every CLI
 * command and exit code, 10,000 requests in flight, the fallback chain in both
 * consistency levels with a stopped node, MOVED with a ring reload, and bench.
 *
 * Nodes are killed when the test exits (atexit) or dies (PR_SET_PDEATHSIG).
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "keyhash.h"
#include "skewless.h"
#include "wire.h"

#define MAX_NODES 3

#include "../common/node_cluster.h"

static struct cfg cfg;

/* n nodes; weights[i] (NULL: all 1); agent params appended verbatim. */
static void write_config_to(const char *path, int n, const int *weights, const char *agent)
{
	write_cluster_config(path, n, weights, "\"durability\":\"async\",\"queue_depth\":16384",
			     agent ? agent : "");
}

static void write_config(int n, const char *agent)
{
	char err[CFG_ERR_LEN];

	write_config_to(conf_path, n, NULL, agent);
	ck_assert_msg(cfg_load(conf_path, &cfg, err, sizeof(err)) == 0, "%s", err);
}

static struct skl_agent *agent_with(const struct skl_options *o)
{
	struct skl_agent *a;

	ck_assert_int_eq(skl_create(&cfg, o, &a), 0);
	return a;
}

/* Start node id; ready when a direct GET through the library gets an answer. */
static void start_node(int id)
{
	struct skl_options o = {.mode = SKL_MODE_DIRECT, .timeout_ms = 100, .retries_set = 1};
	pid_t pid = spawn_node(id, NULL);

	for (int i = 0; i < 100; i++) {
		/* A fresh agent per try: one that saw the node silent fails fast. */
		struct skl_agent *a = agent_with(&o);
		struct skl_result res;
		char key[32], buf[64];

		/* A key homed at this node, so that the answer is not MOVED. */
		for (int k = 0;; k++) {
			snprintf(key, sizeof(key), "ready:%d", k);
			if (skl_home(a, key, strlen(key)) == id)
				break;
		}
		ck_assert_int_eq(skl_get_sync(a, key, strlen(key), NULL, buf, sizeof(buf), &res),
				 0);
		skl_close(a);
		if (res.status == SKL_OK || res.status == SKL_NOT_FOUND)
			return;
		ck_assert_msg(waitpid(pid, NULL, WNOHANG) == 0, "node %d exited at start-up", id);
	}
	ck_abort_msg("node %d did not come up", id);
}

static void stop_node(int id)
{
	kill(pids[id], SIGKILL);
	waitpid(pids[id], NULL, 0);
	pids[id] = 0;
}

/* The switch that never answers: sw_fd, bound by cluster_setup(), never read. */
static void setup(void)
{
	cluster_setup(30000, 3000);
}

/* Run the CLI with args; returns its exit code, output in dir/out and dir/err. */
static int cli(const char *fmt, ...)
{
	char args[1024], cmd[2048];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "timeout 30 %s --config %s %s >%s/out 2>%s/err",
		 getenv("SKL_CLI_BIN"), conf_path, args, dir, dir);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool out_is(const char *want)
{
	char path[320], buf[4096] = {0};
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/out", dir);
	f = fopen(path, "r");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	if (strcmp(buf, want))
		fprintf(stderr, "output: \"%s\", expected \"%s\"\n", buf, want);
	return !strcmp(buf, want);
}

static bool file_has(const char *name, const char *needle)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "grep -q -- '%s' %s/%s", needle, dir, name);
	return system(cmd) == 0;
}

static const char *key_homed_at(struct skl_agent *a, uint16_t home, const char *prefix, char *buf,
				size_t cap)
{
	for (int i = 0; i < 100000; i++) {
		snprintf(buf, cap, "%s:%d", prefix, i);
		if (skl_home(a, buf, strlen(buf)) == home)
			return buf;
	}
	ck_abort_msg("no key homed at %u", home);
	return NULL;
}

/* Ask node `home` to push its copy of key to node `target` (as a switch would). */
static void replicate(uint16_t home, uint16_t target, const char *key)
{
	uint8_t val[4] = {0, 1, (uint8_t)(target >> 8), (uint8_t)target}, out[256], in[2048];
	struct wire_msg m = {.op = WIRE_OP_REPLICATE,
			     .req_id = 99,
			     .keyhash = keyhash(key, strlen(key)),
			     .key = (const uint8_t *)key,
			     .key_len = (uint16_t)strlen(key),
			     .value = val,
			     .val_len = 4};
	struct sockaddr_in to = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), len = wire_encode(&m, out, sizeof(out));
	struct timeval tv = {.tv_sec = 2};

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	to.sin_port = htons((uint16_t)(base_port + home));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ck_assert_int_eq(sendto(fd, out, (size_t)len, 0, (struct sockaddr *)&to, sizeof(to)), len);
	ck_assert_int_gt(recv(fd, in, sizeof(in), 0), 0);
	close(fd);
}

/* ---- tests ---- */

START_TEST(cli_commands)
{
	char key[32];
	struct skl_agent *a;

	write_config(2, "\"timeout_ms\":50");
	start_node(1);
	start_node(2);
	a = agent_with(NULL);
	/* put/get/del in direct mode, text and JSON. */
	ck_assert_int_eq(cli("--mode direct put user:1 hello"), 0);
	ck_assert(file_has("out", "^OK version=[0-9]* node=n[12]$"));
	ck_assert_int_eq(cli("--mode direct get user:1"), 0);
	ck_assert(out_is("hello")); /* byte-exact: no newline added */
	ck_assert_int_eq(cli("--mode direct --json get user:1"), 0);
	ck_assert(file_has("out", "\"value\": \"hello\""));
	ck_assert(file_has("out", "\"stale\": false"));
	ck_assert_int_eq(cli("get user:1 --mode direct --json"), 0); /* options after too */
	/* Bytes that are not UTF-8 (JSON strings must be) come out as hex. */
	ck_assert_int_eq(
	    cli("--mode direct --json put \"$(printf 'bin\\377')\" \"$(printf 'v\\376\\001')\""),
	    0);
	ck_assert(file_has("out", "\"key_hex\": \"62696eff\""));
	ck_assert_int_eq(cli("--mode direct --json get \"$(printf 'bin\\377')\""), 0);
	ck_assert(file_has("out", "\"value_hex\": \"76fe01\""));
	ck_assert_int_eq(cli("--mode direct del user:1"), 0);
	ck_assert_int_eq(cli("--mode direct get user:1"), 1);
	ck_assert(file_has("err", "NOT_FOUND"));
	/* TTL. */
	ck_assert_int_eq(cli("--mode direct put user:ttl v --ttl 300"), 0);
	ck_assert_int_eq(cli("--mode direct get user:ttl"), 0);
	usleep(500000);
	ck_assert_int_eq(cli("--mode direct get user:ttl"), 1);
	/* inpath (the config's mode) with the switch down: falls back to the home. */
	ck_assert_int_eq(cli("put user:2 world"), 0);
	ck_assert_int_eq(cli("get user:2"), 0);
	ck_assert(out_is("world")); /* byte-exact: no newline added */
	/* where. */
	ck_assert_int_eq(cli("where user:2"), 0);
	ck_assert(file_has("out", "home=n"));
	/* Exit codes: usage, config, TIMEOUT, relaxed stale read. */
	ck_assert_int_eq(cli("frobnicate"), 64);
	ck_assert_int_eq(cli("get"), 64);
	/* A switch order naming no switch of the config is a config error. */
	setenv("SKL_SWITCH_ORDER", "w9", 1);
	ck_assert_int_eq(cli("--mode direct get user:1"), 78);
	unsetenv("SKL_SWITCH_ORDER");
	ck_assert(file_has("err", "SKL_SWITCH_ORDER .w9. names a switch the config does not have"));
	/* A key or a value too long says which. */
	ck_assert_int_eq(cli("--mode direct get $(head -c 1100 /dev/zero | tr '\\0' k)"), 64);
	ck_assert(file_has("err", "KEY must be 1..1024 bytes, got 1100"));
	/* Values past one datagram go in chunks: put from stdin, get byte-exact. */
	{
		static char big[262145], path[600], *got;
		FILE *f;
		size_t n;

		for (size_t i = 0; i < sizeof(big); i++)
			big[i] = (char)(i * 2654435761u >> 11);
		for (int k = 0; k < 2; k++) { /* 200,000 bytes, then 262,145: one too many */
			snprintf(path, sizeof(path), "%s/big", dir);
			f = fopen(path, "w");
			ck_assert_ptr_nonnull(f);
			ck_assert_uint_eq(fwrite(big, 1, k ? sizeof(big) : 200000, f),
					  k ? sizeof(big) : 200000);
			fclose(f);
			if (k) {
				ck_assert_int_eq(cli("--mode direct put big - <%s", path), 3);
				ck_assert(file_has("err", "TOO_LARGE: the value on stdin is more than "
							  "the service.s max_value of 262144 bytes"));
				break;
			}
			ck_assert_int_eq(cli("--mode direct put big - <%s", path), 0);
			ck_assert_int_eq(cli("--mode direct get big"), 0);
			snprintf(path, sizeof(path), "%s/out", dir);
			f = fopen(path, "r");
			ck_assert_ptr_nonnull(f);
			got = malloc(sizeof(big));
			n = fread(got, 1, sizeof(big), f);
			fclose(f);
			ck_assert_uint_eq(n, 200000);
			ck_assert_int_eq(memcmp(got, big, n), 0);
			free(got);
		}
	}
	ck_assert_int_eq(cli("--mode sideways get k"), 64);
	{
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "%s --config /nonexistent.json get k 2>/dev/null",
			 getenv("SKL_CLI_BIN"));
		ck_assert_int_eq(WEXITSTATUS(system(cmd)), 78);
	}
	key_homed_at(a, 1, "cli", key, sizeof(key));
	ck_assert_int_eq(cli("--mode direct put %s precious", key), 0);
	replicate(1, 2, key);
	usleep(100000);
	stop_node(1);
	ck_assert_int_eq(cli("--mode direct get %s", key), 8);
	ck_assert(file_has("err", "TIMEOUT"));
	ck_assert_int_eq(cli("--mode direct --consistency relaxed get %s", key), 0);
	ck_assert(out_is("precious"));
	ck_assert(file_has("err", "possibly stale"));
	ck_assert_int_eq(cli("--mode direct --consistency relaxed --json get %s", key), 0);
	ck_assert(file_has("out", "\"stale\": true"));
	ck_assert_int_eq(cli("--mode direct put %s v", key), 8); /* TIMEOUT */
	skl_close(a);
}
END_TEST

static int done_ok, done_other;

static void count(void *arg, const struct skl_result *res)
{
	const char *want = arg;

	if (res->status == SKL_OK && (!want || (res->value_len == strlen(want) &&
						!memcmp(res->value, want, res->value_len))))
		done_ok++;
	else
		done_other++;
}

START_TEST(ten_thousand_in_flight)
{
	struct skl_options o = {.mode = SKL_MODE_DIRECT, .timeout_ms = 3000};
	struct skl_agent *a;
	char key[32];
	uint64_t end;
	struct skl_stats st;

	write_config(2, "");
	start_node(1);
	start_node(2);
	a = agent_with(&o);
	for (int round = 0; round < 2; round++) {
		done_ok = done_other = 0;
		for (int i = 0; i < 10000; i++) {
			int klen = snprintf(key, sizeof(key), "bulk:%d", i);

			ck_assert_int_eq(
			    round == 0 ? skl_put(a, key, (size_t)klen, "v", 1, NULL, count, NULL)
				       : skl_get(a, key, (size_t)klen, NULL, count, (void *)"v"),
			    0);
		}
		ck_assert_uint_eq(skl_inflight(a), 10000);
		end = clock_mono_ms() + 30000;
		while (skl_inflight(a) && clock_mono_ms() < end)
			skl_poll(a, 10);
		ck_assert_int_eq(done_ok, 10000);
		ck_assert_int_eq(done_other, 0);
	}
	skl_get_stats(a, &st);
	ck_assert_uint_eq(st.completed, 20000);
	skl_close(a);
}
END_TEST

START_TEST(fallback_chain)
{
	struct skl_options o = {.timeout_ms = 30,
				.retries = 1,
				.retries_set = 1,
				.switch_failures = 2,
				.recheck_ms = 300};
	struct skl_call_opts relaxed = {.consistency = SKL_RELAXED};
	struct skl_agent *a;
	struct skl_result res;
	struct skl_stats st;
	char key[32], buf[64];
	uint64_t t0;

	write_config(2, "");
	start_node(1);
	start_node(2);
	a = agent_with(&o);
	key_homed_at(a, 1, "fb", key, sizeof(key));
	/* The switch (one-arm) never answers: each write's retry goes to the
	 * ring home, which answers; after two such timeouts the switch is given up. */
	ck_assert_int_eq(skl_put_sync(a, key, strlen(key), "one", 3, NULL, &res), 0);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_eq(res.sends, 2);
	ck_assert_int_eq(skl_using_switch(a), 1);
	ck_assert_int_eq(skl_put_sync(a, key, strlen(key), "two", 3, NULL, &res), 0);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_eq(res.sends, 2);
	ck_assert_uint_eq(res.node, 1);
	ck_assert(res.flags & SKL_R_DIRECT);
	ck_assert_int_eq(skl_using_switch(a), 0);
	ck_assert_int_eq(skl_get_sync(a, key, strlen(key), NULL, buf, sizeof(buf), &res), 0);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert(res.value_len == 3 && !memcmp(buf, "two", 3));
	/* A copy on n2, then the home stops. */
	replicate(1, 2, key);
	usleep(100000);
	stop_node(1);
	/* Linearizable: TIMEOUT after the retry, then UNAVAILABLE at once. */
	ck_assert_int_eq(skl_get_sync(a, key, strlen(key), NULL, buf, sizeof(buf), &res), 0);
	ck_assert_int_eq(res.status, SKL_TIMEOUT);
	ck_assert_uint_eq(res.sends, 2);
	t0 = clock_mono_ms();
	ck_assert_int_eq(skl_get_sync(a, key, strlen(key), NULL, buf, sizeof(buf), &res), 0);
	ck_assert_int_eq(res.status, SKL_UNAVAILABLE);
	ck_assert_uint_eq(res.sends, 0);
	ck_assert_uint_lt(clock_mono_ms() - t0, 20);
	/* Relaxed: PROBE the others, read the copy, flagged possibly stale. */
	ck_assert_int_eq(skl_get_sync(a, key, strlen(key), &relaxed, buf, sizeof(buf), &res), 0);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert(res.flags & SKL_R_STALE);
	ck_assert_uint_eq(res.node, 2);
	ck_assert(res.value_len == 3 && !memcmp(buf, "two", 3));
	/* The home returns; after recheck_ms the agent tries it again. */
	start_node(1);
	usleep(350000);
	ck_assert_int_eq(skl_get_sync(a, key, strlen(key), NULL, buf, sizeof(buf), &res), 0);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_eq(res.node, 1);
	skl_get_stats(a, &st);
	ck_assert_uint_eq(st.switch_down, 1);
	ck_assert_uint_ge(st.rechecks, 1); /* the silent switch keeps being re-checked */
	ck_assert_uint_eq(st.switch_back, 0);
	ck_assert_uint_eq(st.stale_reads, 1);
	skl_close(a);
}
END_TEST

struct cas_wait {
	bool done;
	struct skl_result res;
	char value[8192]; /* res.value points here */
};

static void cas_cb(void *arg, const struct skl_result *res)
{
	struct cas_wait *w = arg;

	w->res = *res;
	if (res->value && res->value_len <= sizeof(w->value)) {
		memcpy(w->value, res->value, res->value_len);
		w->res.value = w->value;
	}
	w->done = true;
}

/* skl_cas() and wait: the result in *res (a value it read in a static buffer). */
static void cas_sync(struct skl_agent *a, const char *key, struct skl_cas c, const void *val,
		     size_t vlen, struct skl_result *res)
{
	static struct cas_wait w;

	memset(&w, 0, sizeof(w));

	ck_assert_int_eq(skl_cas(a, key, strlen(key), &c, val, vlen, cas_cb, &w), 0);
	while (!w.done)
		ck_assert_int_ge(skl_poll(a, 100), 0);
	*res = w.res;
}

/*
 * CAS goes to the home around the switch (here one that never answers),
 * applies only when its condition holds, reports the ttl left, carries a
 * value larger than a datagram, and drops the copies of a replicated key.
 */
START_TEST(cas_at_the_home)
{
	struct skl_options o = {.timeout_ms = 100};
	struct skl_agent *a, *b;
	struct skl_result res;
	struct skl_stats st;
	char key[32], big[5000];
	uint64_t v;

	write_config(2, "");
	start_node(1);
	start_node(2);
	a = agent_with(&o);
	b = agent_with(&o);
	key_homed_at(a, 1, "cas", key, sizeof(key));
	/* SET NX: absent, then taken. */
	cas_sync(a, key, (struct skl_cas){.cond = SKL_CAS_VERSION}, "1", 1, &res);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_eq(res.node, 1);
	v = res.version;
	cas_sync(b, key, (struct skl_cas){.cond = SKL_CAS_VERSION}, "x", 1, &res);
	ck_assert_int_eq(res.status, SKL_CONFLICT);
	ck_assert_uint_eq(res.version, v);
	/* Two read-modify-writes from the same version: one wins, one conflicts. */
	cas_sync(b, key, (struct skl_cas){.cond = SKL_CAS_VERSION, .version = v, .ttl_ms = 60000},
		 "2", 1, &res);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_gt(res.ttl_ms, 59000);
	cas_sync(a, key, (struct skl_cas){.cond = SKL_CAS_VERSION, .version = v}, "2", 1, &res);
	ck_assert_int_eq(res.status, SKL_CONFLICT);
	ck_assert_uint_gt(res.ttl_ms, 59000);
	/* A value in chunks, keeping the ttl. */
	memset(big, 'b', sizeof(big));
	cas_sync(a, key, (struct skl_cas){.cond = SKL_CAS_LIVE, .keep_ttl = 1}, big, sizeof(big),
		 &res);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_gt(res.ttl_ms, 59000);
	v = res.version;
	cas_sync(a, key, (struct skl_cas){.action = SKL_CAS_READ}, NULL, 0, &res);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_eq(res.version, v);
	/* Answered by the home itself: the silent switch never saw a CAS. */
	ck_assert(res.flags & SKL_R_DIRECT);
	ck_assert_uint_eq(res.sends, 1);
	/* READ answers the value too: here in chunks. */
	ck_assert_uint_eq(res.value_len, sizeof(big));
	ck_assert_mem_eq(res.value, big, sizeof(big));
	ck_assert_uint_gt(res.ttl_ms, 59000);
	/* A copy on n2: a CAS that writes drops it first, so n2 has no copy to serve. */
	replicate(1, 2, key);
	cas_sync(a, key, (struct skl_cas){.cond = SKL_CAS_LIVE, .action = SKL_CAS_DEL}, NULL, 0,
		 &res);
	ck_assert_int_eq(res.status, SKL_OK);
	cas_sync(a, key, (struct skl_cas){.cond = SKL_CAS_LIVE, .action = SKL_CAS_EXPIRE}, NULL, 0,
		 &res);
	ck_assert_int_eq(res.status, SKL_NOT_FOUND);
	skl_get_stats(a, &st);
	ck_assert_uint_eq(st.fail_fast, 0);
	/* A value with an action that takes none is refused at submission. */
	ck_assert_int_eq(skl_cas(a, key, strlen(key), &(struct skl_cas){.action = SKL_CAS_DEL}, "v",
				 1, cas_cb, NULL),
			 -EINVAL);
	skl_close(a);
	skl_close(b);
}
END_TEST

START_TEST(moved_reloads_ring)
{
	int skewed[2] = {3, 1}; /* n1 owns more of the stale ring */
	char err[CFG_ERR_LEN], key[32], buf[64];
	struct skl_options o = {.mode = SKL_MODE_DIRECT, .timeout_ms = 200};
	struct skl_agent *a;
	struct skl_result res;
	struct skl_stats st;
	struct ring node_ring = {0};
	int found = 0;

	write_config(2, "");
	start_node(1);
	start_node(2);
	ck_assert_int_eq(cfg_build_ring(&cfg, &node_ring), 0);
	/* The agent starts from a stale config with other weights... */
	write_config_to(conf_path, 2, skewed, "");
	ck_assert_msg(cfg_load(conf_path, &cfg, err, sizeof(err)) == 0, "%s", err);
	a = agent_with(&o);
	/* ...which the operator then fixes on disk. */
	write_config_to(conf_path, 2, NULL, "");
	for (int i = 0; i < 100000 && !found; i++) {
		snprintf(key, sizeof(key), "mv:%d", i);
		found = skl_home(a, key, strlen(key)) == 1 &&
			ring_home(&node_ring, keyhash(key, strlen(key))) == 2;
	}
	ck_assert(found);
	ck_assert_int_eq(skl_put_sync(a, key, strlen(key), "moved", 5, NULL, &res), 0);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_eq(res.node, 2);
	ck_assert_uint_eq(res.sends, 2);
	skl_get_stats(a, &st);
	ck_assert_uint_eq(st.moved, 1);
	ck_assert_uint_eq(st.ring_reloads, 1);
	/* The agent's ring now agrees with the nodes'. */
	ck_assert_uint_eq(skl_home(a, key, strlen(key)), 2);
	ck_assert_int_eq(skl_get_sync(a, key, strlen(key), NULL, buf, sizeof(buf), &res), 0);
	ck_assert_int_eq(res.status, SKL_OK);
	ck_assert_uint_eq(res.sends, 1);
	ring_free(&node_ring);
	skl_close(a);
}
END_TEST

START_TEST(bench_runs)
{
	char path[320];
	json_t *sum;
	json_error_t jerr;
	FILE *f;
	int lines = 0;
	char line[4096];
	json_int_t before_ms = (json_int_t)time(NULL) * 1000, started_ms;

	write_config(2, "");
	start_node(1);
	start_node(2);
	ck_assert_int_eq(cli("--mode direct bench --keys 500 --dist zipf:0.99 --read-ratio 0.9 "
			     "--concurrency 8 --duration 2 --preload --json %s/sum.json "
			     "--history %s/hist.jsonl --seed 1",
			     dir, dir),
			 0);
	ck_assert(file_has("out", "^latency us: p50"));
	ck_assert(file_has("out", "^per node: n1 [0-9]* n2 [0-9]*"));
	snprintf(path, sizeof(path), "%s/sum.json", dir);
	sum = json_load_file(path, 0, &jerr);
	ck_assert_ptr_nonnull(sum);
	ck_assert(json_real_value(json_object_get(sum, "throughput_ops")) > 100);
	ck_assert_int_eq(json_integer_value(json_object_get(sum, "errors")), 0);
	ck_assert_ptr_nonnull(json_object_get(json_object_get(sum, "per_node"), "n1"));
	ck_assert(json_real_value(json_object_get(json_object_get(sum, "load"), "max_over_mean")) >=
		  1.0);
	ck_assert_int_ge(json_array_size(json_object_get(sum, "timeline")), 2);
	ck_assert(json_real_value(json_object_get(json_object_get(sum, "latency_us"), "p99")) > 0);
	/* The load began after the preload and at least the 2 s duration before now. */
	started_ms = json_integer_value(json_object_get(sum, "started_unix_ms"));
	ck_assert_int_ge(
	    started_ms,
	    before_ms + (json_int_t)(1000 * json_real_value(json_object_get(sum, "preload_s"))));
	ck_assert_int_le(started_ms, (json_int_t)time(NULL) * 1000 - 1000);
	/* One history line per operation, in the documented format. */
	snprintf(path, sizeof(path), "%s/hist.jsonl", dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		json_t *h = json_loads(line, 0, &jerr);

		ck_assert_ptr_nonnull(h);
		if (lines == 0) {
			const char *fields[] = {"client",    "op",	    "key",
						"value",     "version",	    "status",
						"invoke_ns", "complete_ns", "node"};

			for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
				ck_assert_ptr_nonnull(json_object_get(h, fields[i]));
		}
		json_decref(h);
		lines++;
	}
	fclose(f);
	ck_assert_int_eq(lines, json_integer_value(json_object_get(sum, "attempts")));
	json_decref(sum);
	/* A warm-up runs the same load first and is not measured: the window
	 * starts after it, and what is answered after the window is drained,
	 * not counted. */
	before_ms = (json_int_t)time(NULL) * 1000;
	ck_assert_int_eq(cli("--mode direct bench --keys 500 --concurrency 8 --warmup 1 "
			     "--duration 1 --json %s/warm.json --seed 2",
			     dir),
			 0);
	snprintf(path, sizeof(path), "%s/warm.json", dir);
	sum = json_load_file(path, 0, &jerr);
	ck_assert_ptr_nonnull(sum);
	ck_assert(json_real_value(json_object_get(sum, "warmup_s")) == 1.0);
	ck_assert_int_ge(json_integer_value(json_object_get(sum, "started_unix_ms")),
			 before_ms + 1000);
	ck_assert(json_real_value(json_object_get(sum, "duration_s")) <= 1.0);
	ck_assert_int_le(json_integer_value(json_object_get(sum, "drained")), 8);
	ck_assert_int_ge(json_integer_value(json_object_get(sum, "attempts")),
			 json_integer_value(json_object_get(sum, "ops")) +
			     json_integer_value(json_object_get(sum, "drained")));
	json_decref(sum);
	ck_assert_int_eq(cli("bench --warmup -1"), 64);
	ck_assert_int_eq(cli("bench --warmup 1x"), 64);
	/* Open loop, YCSB F, hot-in changes, JSON on stdout. */
	ck_assert_int_eq(cli("--mode direct bench --keys 500 --ycsb F --rate 2000 --duration 2 "
			     "--dynamic hot-in:1 --json -"),
			 0);
	ck_assert(file_has("out", "\"loop\": \"open\""));
	/* Flag errors are usage errors. */
	ck_assert_int_eq(cli("bench --dist zipf"), 64);
	ck_assert_int_eq(cli("bench --rate 10 --concurrency 2"), 64);
	/* Integers: no sign, no wrap-around, nothing after the digits. */
	ck_assert_int_eq(cli("bench --concurrency -4294967295"), 64);
	ck_assert_int_eq(cli("bench --keys 18446744073709551617"), 64);
	ck_assert_int_eq(cli("bench --value-size 4294967297"), 64);
	ck_assert_int_eq(cli("bench --timeout 10ms"), 64);
	/* Empty numbers and trailing junk are not 0 or ignored. */
	ck_assert_int_eq(cli("bench --read-ratio="), 64);
	ck_assert_int_eq(cli("bench --duration ''"), 64);
	ck_assert_int_eq(cli("bench --dist zipf:0.99:junk"), 64);
	ck_assert_int_eq(cli("bench --dist scrambled-zipf:0.5:x"), 64);
	ck_assert_int_eq(cli("bench --json --preload"), 64);   /* bench's --json takes a file */
	ck_assert_int_eq(cli("bench --value-size 262145"), 64); /* above any max_value */
	ck_assert(file_has("err", "--value-size: expected bytes 0..262144"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent_node");
	TCase *tc = tcase_create("agent_node");

	if (!getenv("SKL_NODE_BIN") || !getenv("SKL_CLI_BIN")) {
		fprintf(stderr, "SKL_NODE_BIN and SKL_CLI_BIN must be set\n");
		return 1;
	}
	tcase_add_checked_fixture(tc, setup, cluster_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, cli_commands);
	tcase_add_test(tc, ten_thousand_in_flight);
	tcase_add_test(tc, fallback_chain);
	tcase_add_test(tc, moved_reloads_ring);
	tcase_add_test(tc, cas_at_the_home);
	tcase_add_test(tc, bench_runs);
	suite_add_tcase(s, tc);
	return cluster_main(s, "skl-test-agent");
}
