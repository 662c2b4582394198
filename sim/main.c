/*
 * main.c - skewless-sim: the command line, DPDK's EAL for the hot-key
 * detector, and the report (text or JSON). The simulation is model.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_eal.h>
#include <rte_random.h>

#include "cdt_state.h"
#include "group.h"
#include "sim.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: skewless-sim --nodes N --keys K --dist uniform|zipf:S|hotspot:D:O\n"
		   "                    --read-ratio R --directory on|off [--dynamic hot-in:T]\n"
		   "                    [--seconds S] [--seed N] [--json FILE|-]\n"
		   "  agents:   --concurrency C (closed loop; default 6 per node) | --rate OPS "
		   "(open loop)\n"
		   "  nodes:    --workers W (2) --service-us U (1000) --service exp|fixed (exp)\n"
		   "            --queue-depth Q (1024) --preload on|off (on: every key exists)\n"
		   "            --write-through on|off (on: homes push writes of directory keys)\n"
		   "            --batch-writes on|off (on: the switch batches the writes of a directory\n"
		   "            key while one is out, directory.batch_writes)\n"
		   "  network:  --link-us L (25, every hop) --digest-loss P (0)\n"
		   "  groups:   --replicas R (1): reads outside the directory go to the least-loaded\n"
		   "            of the key's R ring members (member pushes of writes not modelled)\n"
		   "  switch:   --max-replicas R (8) --max-keys K (1024) --top-k K (0: n log2 n)\n"
		   "            --epoch-ms M (100) --retire-epochs E (5) --replica-factor F (2)\n"
		   "  measure:  --warmup S (1 s before the measured S seconds)\n");
}

static int parse_double(const char *name, const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "skewless-sim: --%s: expected a number %g..%g, got \"%s\"\n", name,
			lo, hi, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_u32(const char *name, const char *s, double lo, double hi, uint32_t *out)
{
	double v;

	if (parse_double(name, s, lo, hi, &v) != 0)
		return -1;
	if (v != (double)(uint32_t)v) {
		fprintf(stderr, "skewless-sim: --%s: expected an integer, got \"%s\"\n", name, s);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

static int parse_on_off(const char *name, const char *s, bool *out)
{
	if (strcmp(s, "on") && strcmp(s, "off")) {
		fprintf(stderr, "skewless-sim: --%s: expected on or off, got \"%s\"\n", name, s);
		return -1;
	}
	*out = !strcmp(s, "on");
	return 0;
}

/* Parse argv into *p. 0, 1 for --help, -1 on a usage error (printed). */
static int parse_args(int argc, char **argv, struct sim_params *p, const char **json)
{
	enum {
		O_NODES = 256,
		O_KEYS,
		O_DIST,
		O_READ,
		O_DIR,
		O_DYN,
		O_SECONDS,
		O_SEED,
		O_JSON,
		O_CONC,
		O_RATE,
		O_WORKERS,
		O_SVC,
		O_SVCDIST,
		O_QUEUE,
		O_LINK,
		O_LOSS,
		O_MAXREP,
		O_GROUP,
		O_MAXKEYS,
		O_TOPK,
		O_EPOCH,
		O_RETIRE,
		O_FACTOR,
		O_WARMUP,
		O_PRELOAD,
		O_THROUGH,
		O_BATCH,
		O_HELP
	};
	static const struct option opts[] = {
	    {"nodes", 1, 0, O_NODES},
	    {"keys", 1, 0, O_KEYS},
	    {"dist", 1, 0, O_DIST},
	    {"read-ratio", 1, 0, O_READ},
	    {"directory", 1, 0, O_DIR},
	    {"dynamic", 1, 0, O_DYN},
	    {"seconds", 1, 0, O_SECONDS},
	    {"seed", 1, 0, O_SEED},
	    {"json", 1, 0, O_JSON},
	    {"concurrency", 1, 0, O_CONC},
	    {"rate", 1, 0, O_RATE},
	    {"workers", 1, 0, O_WORKERS},
	    {"service-us", 1, 0, O_SVC},
	    {"service", 1, 0, O_SVCDIST},
	    {"queue-depth", 1, 0, O_QUEUE},
	    {"link-us", 1, 0, O_LINK},
	    {"digest-loss", 1, 0, O_LOSS},
	    {"max-replicas", 1, 0, O_MAXREP},
	    {"replicas", 1, 0, O_GROUP},
	    {"max-keys", 1, 0, O_MAXKEYS},
	    {"top-k", 1, 0, O_TOPK},
	    {"epoch-ms", 1, 0, O_EPOCH},
	    {"retire-epochs", 1, 0, O_RETIRE},
	    {"replica-factor", 1, 0, O_FACTOR},
	    {"warmup", 1, 0, O_WARMUP},
	    {"preload", 1, 0, O_PRELOAD},
	    {"write-through", 1, 0, O_THROUGH},
	    {"batch-writes", 1, 0, O_BATCH},
	    {"help", 0, 0, O_HELP},
	    {0, 0, 0, 0},
	};
	bool conc_set = false;
	double v;
	int c, rc = 0;

	while (rc == 0 && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_NODES:
			rc = parse_u32("nodes", optarg, 1, 1024, &p->nodes);
			break;
		case O_KEYS:
			rc = parse_double("keys", optarg, 1, 4294967296.0, &v);
			p->keys = (uint64_t)v;
			break;
		case O_DIST:
			snprintf(p->dist, sizeof(p->dist), "%s", optarg);
			break;
		case O_READ:
			rc = parse_double("read-ratio", optarg, 0, 1, &p->read_ratio);
			break;
		case O_DIR:
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(
				    stderr,
				    "skewless-sim: --directory: expected on or off, got \"%s\"\n",
				    optarg);
				return -1;
			}
			p->directory = !strcmp(optarg, "on");
			break;
		case O_DYN:
			snprintf(p->dynamic, sizeof(p->dynamic), "%s", optarg);
			break;
		case O_SECONDS:
			rc = parse_double("seconds", optarg, 0.001, 3600, &p->seconds);
			break;
		case O_SEED:
			rc = parse_double("seed", optarg, 0, 1e18, &v);
			p->seed = (uint64_t)v;
			break;
		case O_JSON:
			*json = optarg;
			break;
		case O_CONC:
			rc = parse_u32("concurrency", optarg, 1, 1e7, &p->concurrency);
			conc_set = true;
			break;
		case O_RATE:
			rc = parse_double("rate", optarg, 1, 1e9, &p->rate);
			break;
		case O_WORKERS:
			rc = parse_u32("workers", optarg, 1, 64, &p->workers);
			break;
		case O_SVC:
			rc = parse_u32("service-us", optarg, 1, 1e7, &p->service_us);
			break;
		case O_SVCDIST:
			if (strcmp(optarg, "fixed") && strcmp(optarg, "exp")) {
				fprintf(
				    stderr,
				    "skewless-sim: --service: expected fixed or exp, got \"%s\"\n",
				    optarg);
				return -1;
			}
			p->service = !strcmp(optarg, "exp") ? SIM_SERVICE_EXP : SIM_SERVICE_FIXED;
			break;
		case O_QUEUE:
			rc = parse_u32("queue-depth", optarg, 1, 1 << 20, &p->queue_depth);
			break;
		case O_LINK:
			rc = parse_u32("link-us", optarg, 0, 1e6, &p->link_us);
			break;
		case O_LOSS:
			rc = parse_double("digest-loss", optarg, 0, 1, &p->digest_loss);
			break;
		case O_MAXREP:
			rc = parse_u32("max-replicas", optarg, 1, CDT_MAX_REPLICAS, &p->dir.max_replicas);
			break;
		case O_GROUP:
			rc = parse_u32("replicas", optarg, 1, GROUP_MAX, &p->replicas);
			break;
		case O_MAXKEYS:
			rc = parse_u32("max-keys", optarg, 1, 65535, &p->dir.max_keys);
			break;
		case O_TOPK:
			rc = parse_u32("top-k", optarg, 0, 1 << 20, &p->dir.top_k);
			break;
		case O_EPOCH:
			rc = parse_u32("epoch-ms", optarg, 1, 1e6, &p->dir.epoch_ms);
			break;
		case O_RETIRE:
			rc = parse_u32("retire-epochs", optarg, 1, 1e6, &p->dir.retire_epochs);
			break;
		case O_FACTOR:
			rc =
			    parse_double("replica-factor", optarg, 0, 1000, &p->dir.replica_factor);
			break;
		case O_WARMUP:
			rc = parse_double("warmup", optarg, 0, 3600, &p->warmup);
			break;
		case O_PRELOAD:
			rc = parse_on_off("preload", optarg, &p->preload);
			break;
		case O_THROUGH:
			rc = parse_on_off("write-through", optarg, &p->write_through);
			break;
		case O_BATCH:
			rc = parse_on_off("batch-writes", optarg, &p->dir.batch_writes);
			break;
		case O_HELP:
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (rc != 0)
		return -1;
	if (optind < argc) {
		fprintf(stderr, "skewless-sim: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return -1;
	}
	if (p->rate > 0 && conc_set) {
		fprintf(stderr,
			"skewless-sim: --rate and --concurrency: give one (open or closed loop)\n");
		return -1;
	}
	if (p->rate == 0 && !conc_set)
		p->concurrency = 6 * p->nodes; /* bench/skew.sh's 48 for 8 nodes */
	return 0;
}

/*
 * The hot-key detector is DPDK's rte_member sketch: EAL in this process,
 * without hugepages, PCI, shared files or telemetry.
 */
static int eal_start(const char *prog, char *prefix, size_t len)
{
	char arg_prefix[96];

	snprintf(prefix, len, "skewless-sim-%d", (int)getpid());
	snprintf(arg_prefix, sizeof(arg_prefix), "--file-prefix=%s", prefix);
	char *eal[] = {(char *)prog,
		       "--no-huge",
		       "-m",
		       "128",
		       "--no-pci",
		       "--no-shconf",
		       "--no-telemetry",
		       arg_prefix,
		       "--log-level=*:error",
		       "--log-level=lib.member:crit",
		       "-l",
		       "0"};
	int n = (int)(sizeof(eal) / sizeof(eal[0]));

	return rte_eal_init(n, eal) < 0 ? -1 : 0;
}

/* rte_eal_cleanup() leaves the runtime directory behind: remove it too. */
static void eal_stop(void)
{
	char dir[512], path[1024];

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	static const char *files[] = {"config", "fbarray_memseg-0", "mp_socket"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

static json_t *result_json(const struct sim_params *p, const struct sim_result *r, double wall,
			   double cpu)
{
	json_t *per_node = json_array();
	json_t *o;

	for (uint32_t i = 0; i < p->nodes; i++)
		json_array_append_new(per_node, json_integer((json_int_t)r->per_node[i]));
	o = json_pack(
	    "{s:i, s:I, s:s, s:f, s:s, s:s, s:f, s:f, s:I, s:s, s:i, s:f, s:i, s:i, s:i, s:s, s:b}",
	    "nodes", (int)p->nodes, "keys", (json_int_t)p->keys, "dist", p->dist, "read_ratio",
	    p->read_ratio, "directory", p->directory ? "on" : "off", "dynamic", p->dynamic,
	    "seconds", p->seconds, "warmup", p->warmup, "seed", (json_int_t)p->seed, "loop",
	    p->concurrency ? "closed" : "open", "concurrency", (int)p->concurrency, "rate", p->rate,
	    "workers", (int)p->workers, "service_us", (int)p->service_us, "link_us",
	    (int)p->link_us, "service", p->service == SIM_SERVICE_EXP ? "exp" : "fixed", "preload",
	    p->preload);
	json_object_set_new(o, "write_through", json_boolean(p->write_through));
	json_object_set_new(o, "batch_writes", json_boolean(p->dir.batch_writes));
	json_object_set_new(o, "throughput_ops", json_real(r->throughput_ops));
	json_object_set_new(o, "max_over_mean", json_real(r->max_over_mean));
	json_object_set_new(o, "p50_us", json_real(r->p50_us));
	json_object_set_new(o, "p99_us", json_real(r->p99_us));
	json_object_set_new(o, "ops", json_integer((json_int_t)r->ops));
	json_object_set_new(o, "errors", json_integer((json_int_t)r->errors));
	json_object_set_new(o, "per_node", per_node);
	json_object_set_new(o, "rebalance_ms",
			    r->changes ? json_real(r->rebalance_ms) : json_null());
	json_object_set_new(o, "rebalance_max_ms",
			    r->changes ? json_real(r->rebalance_max_ms) : json_null());
	json_object_set_new(o, "settled_maxmean",
			    r->changes ? json_real(r->settled_maxmean) : json_null());
	json_object_set_new(o, "changes", json_integer(r->changes));
	json_object_set_new(
	    o, "directory_state",
	    json_pack("{s:i, s:i, s:f, s:i, s:i, s:I, s:I, s:I, s:I, s:i, s:f}", "top_k",
		      (int)r->top_k, "entries", (int)r->dir_entries, "replicas_mean",
		      r->dir_replicas_mean, "replicas_max", (int)r->dir_replicas_max,
		      "max_replicas", (int)p->dir.max_replicas, "installs", (json_int_t)r->installs,
		      "retires", (json_int_t)r->retires, "replicates", (json_int_t)r->replicates,
		      "rc_acks", (json_int_t)r->rc_acks, "epoch_ms", (int)p->dir.epoch_ms,
		      "replica_factor", p->dir.replica_factor));
	json_object_set_new(
	    json_object_get(o, "directory_state"), "home_only_share",
	    json_real(r->dir_reads ? (double)r->dir_reads_home_only / r->dir_reads : 0));
	json_object_set_new(json_object_get(o, "directory_state"), "replication_lag_ms",
			    json_real(r->repl_lags ? r->repl_lag_sum_ms / r->repl_lags : 0));
	json_object_set_new(o, "digests",
			    json_pack("{s:I, s:I, s:I}", "sent", (json_int_t)r->digests_sent,
				      "lost", (json_int_t)r->digests_lost, "node_down_events",
				      (json_int_t)r->node_down_events));
	json_object_set_new(o, "events", json_integer((json_int_t)r->events));
	json_object_set_new(o, "wall_s", json_real(wall));
	json_object_set_new(o, "cpu_s", json_real(cpu));
	return o;
}

static void result_text(const struct sim_params *p, const struct sim_result *r, double wall,
			double cpu)
{
	printf("skewless-sim: %u nodes, %llu keys, %s, read ratio %.2f, directory %s%s%s\n",
	       p->nodes, (unsigned long long)p->keys, p->dist, p->read_ratio,
	       p->directory ? "on" : "off", p->dynamic[0] ? ", dynamic " : "", p->dynamic);
	printf("  %s loop", p->concurrency ? "closed" : "open");
	if (!p->preload)
		printf(", keys not preloaded");
	if (!p->write_through)
		printf(", no write-through");
	if (!p->dir.batch_writes)
		printf(", no write batches");
	if (p->concurrency)
		printf(" x%u", p->concurrency);
	else
		printf(" at %.0f ops/s", p->rate);
	printf(", %u workers x %u us (%s) per node, link %u us, %.1f s measured after %.1f s\n",
	       p->workers, p->service_us, p->service == SIM_SERVICE_EXP ? "exponential" : "fixed",
	       p->link_us, p->seconds, p->warmup);
	printf("  throughput %.0f ops/s, errors %llu, max/mean %.3f, p50 %.0f us, p99 %.0f us\n",
	       r->throughput_ops, (unsigned long long)r->errors, r->max_over_mean, r->p50_us,
	       r->p99_us);
	if (p->directory)
		printf("  directory: K=%u, %u entries, %.2f replicas each (max %u), %llu installs,"
		       " %llu retires, %llu REPLICATEs, %llu RC_ACKs joined\n",
		       r->top_k, r->dir_entries, r->dir_replicas_mean, r->dir_replicas_max,
		       (unsigned long long)r->installs, (unsigned long long)r->retires,
		       (unsigned long long)r->replicates, (unsigned long long)r->rc_acks);
	if (p->directory)
		printf("  directory reads: %.1f%% found the set at the home alone; replication lag"
		       " %.1f ms mean\n",
		       r->dir_reads ? 100.0 * r->dir_reads_home_only / r->dir_reads : 0,
		       r->repl_lags ? r->repl_lag_sum_ms / r->repl_lags : 0);
	if (r->changes)
		printf("  rebalance: %.0f ms mean, %.0f ms worst over %u changes (settled max/mean "
		       "%.2f, 50 ms windows)\n",
		       r->rebalance_ms, r->rebalance_max_ms, r->changes, r->settled_maxmean);
	printf("  digests %llu sent, %llu lost; %llu events in %.1f s (%.1f s of CPU)\n",
	       (unsigned long long)r->digests_sent, (unsigned long long)r->digests_lost,
	       (unsigned long long)r->events, wall, cpu);
}

int main(int argc, char **argv)
{
	struct sim_params p;
	struct sim_result r;
	const char *json = NULL;
	char err[256], prefix[64];
	struct timespec t0, t1, c0, c1;
	int rc;

	if (sim_params_default(&p, err, sizeof(err)) != 0) {
		fprintf(stderr, "skewless-sim: %s\n", err);
		return 70;
	}
	rc = parse_args(argc, argv, &p, &json);
	if (rc != 0)
		return rc > 0 ? 0 : 64;
	if (p.directory && eal_start(argv[0], prefix, sizeof(prefix)) != 0) {
		fprintf(
		    stderr,
		    "skewless-sim: cannot initialise DPDK's EAL (the hot-key sketch needs it)\n");
		return 70;
	}
	/* rte_member's sketch draws from rte_rand(): seeded, a run repeats. */
	if (p.directory)
		rte_srand(p.seed);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	rc = sim_run(&p, &r, err, sizeof(err));
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (p.directory)
		eal_stop();
	if (rc != 0) {
		fprintf(stderr, "skewless-sim: %s\n", err);
		return 64;
	}
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;

	if (json) {
		json_t *o = result_json(&p, &r, wall, cpu);
		int bad = !strcmp(json, "-")
			      ? json_dumpf(o, stdout, JSON_INDENT(2)) != 0 || putchar('\n') == EOF
			      : json_dump_file(o, json, JSON_INDENT(2)) != 0;

		json_decref(o);
		if (bad) {
			fprintf(stderr, "skewless-sim: cannot write %s\n", json);
			sim_result_free(&r);
			return 70;
		}
	}
	if (!json || strcmp(json, "-"))
		result_text(&p, &r, wall, cpu);
	sim_result_free(&r);
	return 0;
}
