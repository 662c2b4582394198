/*
 * main.c - skewless-proxy's arguments and start-up: load the cluster config,
 * start the workers (each its own agent, loop and listening socket), serve
 * /metrics, and stop cleanly on SIGINT or SIGTERM.
 */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "httpd.h"
#include "log.h"
#include "proxy.h"

struct args {
	const char *config;
	const char *listen;
	const char *metrics;
	unsigned threads;
	uint32_t max_clients;
	uint32_t rmw_deadline_ms;
	struct skl_options agent;
	int log_level;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: skewless-proxy --config FILE [options]\n"
		"\n"
		"A Redis (RESP2/RESP3) front door to a skewless cluster: Redis clients and\n"
		"tools talk to it unchanged; each command becomes libskewless requests.\n"
		"\n"
		"  -c, --config FILE          cluster config (JSON)\n"
		"  -L, --listen ADDR:PORT     where clients connect (default 127.0.0.1:6379;\n"
		"                             port 0 picks a free one, printed at start)\n"
		"  -t, --threads N            worker threads, each its own agent (default 1)\n"
		"  -m, --metrics ADDR:PORT    serve /metrics there (default: off)\n"
		"      --mode MODE            inpath|hint|direct (default: agent.mode)\n"
		"      --consistency C        linearizable|relaxed (default: agent.consistency)\n"
		"      --max-clients N        connections per worker (default 10000)\n"
		"      --rmw-deadline-ms N    how long INCR, APPEND and the like retry a\n"
		"                             conflicting write (default 1000)\n"
		"  -l, --log-level LEVEL      error|warn|info|debug (default info)\n"
		"  -h, --help                 this text\n");
}

static void __attribute__((format(printf, 1, 2), noreturn)) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "skewless-proxy: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static uint32_t uint_arg(const char *flag, const char *s, uint64_t lo, uint64_t hi)
{
	uint64_t v;

	if (cfg_parse_uint(s, lo, hi, &v) != 0)
		die("%s: expected an integer %llu..%llu, got \"%s\"", flag, (unsigned long long)lo,
		    (unsigned long long)hi, s);
	return (uint32_t)v;
}

static void parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"listen", required_argument, NULL, 'L'},
	    {"threads", required_argument, NULL, 't'},
	    {"metrics", required_argument, NULL, 'm'},
	    {"mode", required_argument, NULL, 'M'},
	    {"consistency", required_argument, NULL, 'C'},
	    {"max-clients", required_argument, NULL, 'x'},
	    {"rmw-deadline-ms", required_argument, NULL, 'd'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	*a = (struct args){.listen = "127.0.0.1:6379",
			   .threads = 1,
			   .max_clients = 10000,
			   .rmw_deadline_ms = 1000,
			   .log_level = LOG_LVL_INFO};
	while ((c = getopt_long(argc, argv, "c:L:t:m:l:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 'L':
			a->listen = optarg;
			break;
		case 't':
			a->threads = uint_arg("--threads", optarg, 1, 64);
			break;
		case 'm':
			a->metrics = optarg;
			break;
		case 'M':
			if (skl_mode_parse(optarg, &a->agent.mode) != 0)
				die("--mode: expected inpath|hint|direct, got \"%s\"", optarg);
			break;
		case 'C':
			if (skl_consistency_parse(optarg, &a->agent.consistency) != 0)
				die("--consistency: expected linearizable|relaxed, got \"%s\"",
				    optarg);
			break;
		case 'x':
			a->max_clients = uint_arg("--max-clients", optarg, 1, 1000000);
			break;
		case 'd':
			a->rmw_deadline_ms = uint_arg("--rmw-deadline-ms", optarg, 1, 600000);
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
	if (!a->config)
		die("--config FILE is required; see --help");
}

int main(int argc, char **argv)
{
	static struct cfg cfg;
	struct px_proxy px = {0};
	struct httpd *http = NULL;
	struct args a;
	char err[512];
	sigset_t sigs;
	int sig;

	parse_args(argc, argv, &a);
	log_init("skewless-proxy", NULL, (enum log_level)a.log_level);
	if (cfg_load(a.config, &cfg, err, sizeof(err)) != 0)
		die("%s", err);
	if (httpd_parse_listen(a.listen, &px.ip, &px.port, err, sizeof(err)) != 0)
		die("--listen %s", err);
	px.cfg = &cfg;
	px.config_path = a.config;
	px.max_value = cfg.service.max_value;
	px.max_clients = a.max_clients;
	px.rmw_deadline_ms = a.rmw_deadline_ms;
	px.start_unix_ms = clock_real_ms();
	px.nworkers = a.threads;
	px.workers = calloc(a.threads, sizeof(*px.workers));
	if (!px.workers)
		die("out of memory");
	/* Signals go to sigwait() below, not to the workers. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (unsigned i = 0; i < px.nworkers; i++) {
		px.workers[i].px = &px;
		px.workers[i].id = i;
		if (px_worker_start(&px.workers[i], &a.agent, err, sizeof(err)) != 0)
			die("%s", err);
	}
	if (a.metrics) {
		http = httpd_start(a.metrics, HTTPD_OWN_THREAD, px_metrics_render, &px, err,
				   sizeof(err));
		if (!http)
			die("--metrics %s", err);
	}
	/* One line that scripts wait for (and read the ports from when asked for 0). */
	printf("skewless-proxy: listening on %u.%u.%u.%u:%u, %u worker(s)", px.ip >> 24,
	       (px.ip >> 16) & 0xff, (px.ip >> 8) & 0xff, px.ip & 0xff, px.port, px.nworkers);
	if (http)
		printf(", /metrics on port %u", httpd_port(http));
	printf("\n");
	fflush(stdout);
	log_info("listening on port %u with %u worker(s), config %s", px.port, px.nworkers,
		 a.config);
	sigwait(&sigs, &sig);
	log_info("signal %d: stopping", sig);
	if (http)
		httpd_stop(http);
	for (unsigned i = 0; i < px.nworkers; i++)
		px_worker_stop(&px.workers[i]);
	free(px.workers);
	return 0;
}
