/*
 * main.c - skewless-node: argument parsing and start-up only.
 *
 *   skewless-node --config FILE --node NAME|ID [--data-dir DIR]
 *                 [--service-time-us N] [--log-level LEVEL]
 *
 * Start-up errors are one line on stderr and exit code 1. Once up, the main
 * thread only waits for signals: SIGUSR1 dumps the counters, SIGTERM/SIGINT
 * drain the queue and close RocksDB cleanly.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "mignet.h"
#include "node.h"
#include "report.h"
#include "send.h"
#include "server.h"
#include "store.h"
#include "ttl.h"

struct args {
	const char *config;
	const char *node;
	const char *data_dir;
	long service_time_us; /* -1: from the config */
	long ack_delay_ms;
	int log_level;
	int join;
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: skewless-node --config FILE --node NAME|ID [options]\n"
	    "\n"
	    "RocksDB-backed skewless storage node; listens on the node's ip:port.\n"
	    "\n"
	    "  -c, --config FILE          cluster config (JSON)\n"
	    "  -n, --node NAME|ID         which node of the config this is\n"
	    "  -d, --data-dir DIR         data directory (default: the node's data_dir)\n"
	    "  -s, --service-time-us N    capacity emulation: hold a worker N us per request\n"
	    "                             (timed sleep; default node.service_time_us, 0 = off)\n"
	    "      --ack-delay-ms N       fault injection for tests: hold each RC_ACK N ms\n"
	    "      --join                 joining a running cluster (a ring change): the home of\n"
	    "                             nothing until a switch's RING tells it the change\n"
	    "  -l, --log-level LEVEL      error|warn|info|debug (default info)\n"
	    "  -h, --help                 this text\n"
	    "\n"
	    "Signals: SIGUSR1 writes counters to DIR/counters and the log; SIGTERM drains.\n");
}

/* A start-up error: one line on stderr, exit code 1. */
static void __attribute__((format(printf, 1, 2), noreturn)) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "skewless-node: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"node", required_argument, NULL, 'n'},
	    {"data-dir", required_argument, NULL, 'd'},
	    {"service-time-us", required_argument, NULL, 's'},
	    {"ack-delay-ms", required_argument, NULL, 'a'},
	    {"join", no_argument, NULL, 'j'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	*a = (struct args){.service_time_us = -1, .log_level = LOG_LVL_INFO};
	while ((c = getopt_long(argc, argv, "c:n:d:s:l:h", opts, NULL)) != -1) {
		uint64_t v;

		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 'n':
			a->node = optarg;
			break;
		case 'd':
			a->data_dir = optarg;
			break;
		case 's':
			if (cfg_parse_uint(optarg, 0, 10000000, &v) != 0)
				die("--service-time-us: expected an integer 0..10000000, got "
				    "\"%s\"",
				    optarg);
			a->service_time_us = (long)v;
			break;
		case 'a':
			if (cfg_parse_uint(optarg, 0, 10000, &v) != 0)
				die("--ack-delay-ms: expected an integer 0..10000, got \"%s\"",
				    optarg);
			a->ack_delay_ms = (long)v;
			break;
		case 'j':
			a->join = 1;
			break;
		case 'l':
			a->log_level = log_parse_level(optarg);
			if (a->log_level < 0)
				die("--log-level: expected error|warn|info|debug, got \"%s\"",
				    optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(1);
		}
	}
	if (optind < argc)
		die("unexpected argument \"%s\"; see --help", argv[optind]);
	if (!a->config || !a->node)
		die("--config FILE and --node NAME|ID are required; see --help");
}

/* mkdir -p dir, then check it is writable. Returns 0 or -1 with errno set. */
static int make_dir(const char *dir)
{
	char buf[PATH_MAX];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, dir, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return -1;
	return access(buf, W_OK | X_OK);
}

/* Addresses of every configured switch: digests and RC_ACKs go there. */
static void resolve_switches(struct node *n)
{
	for (int i = 0; i < n->cfg->nswitches; i++) {
		const struct cfg_switch *s = &n->cfg->switches[i];
		struct sockaddr_in *a = &n->switch_addr[n->nswitches];

		memset(a, 0, sizeof(*a));
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(s->vip);
		a->sin_port = htons(n->cfg->service.port);
		n->switch_ids[n->nswitches++] = s->id;
	}
}

int main(int argc, char **argv)
{
	static struct cfg cfg; /* large: keep it off the stack */
	static struct node n;
	char err[CFG_ERR_LEN], dbdir[CFG_MAX_PATH + 16], ip[16];
	struct args a;
	sigset_t sigs;
	int sig;

	/*
	 * Signals go to the main thread only: block them before any thread
	 * starts, RocksDB's background threads included, or a SIGUSR1 could land
	 * on one of those and kill the process.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	parse_args(argc, argv, &a);
	if (cfg_load(a.config, &cfg, err, sizeof(err)) != 0)
		die("%s", err);
	n.cfg = &cfg;
	n.self = cfg_node_lookup(&cfg, a.node);
	if (!n.self)
		die("%s: no node \"%s\" in nodes[] (give a node name or id)", a.config, a.node);
	log_init("skewless-node", n.self->name, (enum log_level)a.log_level);
	if (a.data_dir && !*a.data_dir)
		die("--data-dir: expected a directory, got \"%s\"", a.data_dir);
	if (a.data_dir && strlen(a.data_dir) + sizeof("/rocksdb") > sizeof(n.data_dir)) {
		char limit[16];

		snprintf(limit, sizeof(limit), "%zu", sizeof(n.data_dir) - sizeof("/rocksdb"));
		die("--data-dir: at most %s bytes, got \"%s\"", limit, a.data_dir);
	}
	snprintf(n.data_dir, sizeof(n.data_dir), "%s", a.data_dir ? a.data_dir : n.self->data_dir);
	if (make_dir(n.data_dir) != 0)
		die("%s: data directory is not writable: %s", n.data_dir, strerror(errno));
	n.service_time_us =
	    a.service_time_us >= 0 ? (uint32_t)a.service_time_us : cfg.node.service_time_us;
	n.ack_delay_ms = (uint32_t)a.ack_delay_ms;
	n.dedup = malloc(sizeof(*n.dedup));
	if (!n.dedup)
		die("out of memory");
	dedup_init(n.dedup);
	n.join = a.join;
	n.through = through_create();
	if (!n.through)
		die("out of memory");
	resolve_switches(&n);
	switch (cfg_read_key(&cfg, &n.key, err, sizeof(err))) {
	case 1:
		n.keyed = true;
		break;
	case 0:
		break;
	default:
		die("%s", err);
	}
	if (node_socket_open(&n, err, sizeof(err)) != 0)
		die("%s", err);

	struct store_options so = {.block_cache_mb = cfg.node.block_cache_mb,
				   .write_buffer_mb = cfg.node.write_buffer_mb,
				   .sync = cfg.node.durability == CFG_DURABILITY_SYNC};

	snprintf(dbdir, sizeof(dbdir), "%s/rocksdb", n.data_dir);
	n.store = store_open(dbdir, &so, err, sizeof(err));
	if (!n.store)
		die("%s", err);
	{
		struct ring ring = {0};
		int rc;

		if (cfg_build_ring(&cfg, &ring) != 0)
			die("%s: cannot build the ring of nodes[]", a.config);
		mig_init(&n.mig, n.store, n.dedup, n.self->id, &mignet_transport, &n);
		rc = mig_restore(&n.mig, &ring, n.join);
		ring_free(&ring);
		if (rc == -ESTALE)
			die("%s: the data holds a newer ring version than %s has", dbdir, a.config);
		if (rc != 0)
			die("%s: cannot restore the ring state: %s", dbdir, strerror(-rc));
	}

	if (members_init(&n) != 0)
		die("cannot set up replica groups: out of memory");
	signal(SIGPIPE, SIG_IGN);
	if (node_metrics_start(&n, err, sizeof(err)) != 0)
		die("%s", err);
	if (server_start(&n, cfg.node.workers) != 0 || ttl_start(&n) != 0 ||
	    report_start(&n) != 0 || mignet_start(&n) != 0 || members_start(&n) != 0)
		die("cannot start threads: %s", strerror(errno));
	log_info("node %u (%s) listening on %s:%u, data %s, %u workers, queue %u, durability %s, "
		 "service time %u us, control messages %s",
		 n.self->id, n.self->name, cfg_format_ipv4(n.self->ip, ip), n.self->port,
		 n.data_dir, cfg.node.workers, cfg.node.queue_depth, so.sync ? "sync" : "async",
		 n.service_time_us, n.keyed ? "with HMAC-SHA256 (auth.key_file)" : "without MAC");

	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig == SIGUSR1) {
			node_dump_counters(&n);
			continue;
		}
		break;
	}
	log_info("signal %d: draining", sig);
	server_stop(&n);
	ttl_stop(&n);
	report_stop(&n);
	mignet_stop(&n);
	members_stop(&n);
	node_metrics_stop();
	node_socket_close(&n); /* every sender has stopped */
	mig_fini(&n.mig);
	members_fini(&n);
	store_close(n.store);
	node_dump_counters(&n);
	dedup_fini(n.dedup);
	free(n.dedup);
	through_destroy(n.through);
	explicit_bzero(&n.key, sizeof(n.key)); /* the key outlives no thread that uses it */
	log_info("stopped");
	return 0;
}
