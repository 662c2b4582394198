/*
 * main.c - skewless-switchd: arguments and start-up only.
 *
 *   skewless-switchd [EAL args] -- --config FILE --switch ID|NAME [--idle-sleep-us N]
 *
 * EAL arguments pass through unchanged (-l, --vdev, -a, --no-pci, --no-huge,
 * --file-prefix, ...). The main lcore runs the control thread; every other
 * lcore named by the switch's "lcores" (or every EAL worker lcore) runs a
 * poll-mode worker. SIGINT/SIGTERM stop it gracefully. A bad config or a port
 * that cannot be set up is one line on stderr ("skewless-switchd: ...") and
 * exit code 1; once the switch is known, the rest goes through log.h
 * ("HH:MM:SS.mmm skewless-switchd[s1] info: ...").
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "log.h"
#include "switchd.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: skewless-switchd [EAL args] -- --config FILE --switch ID|NAME "
		   "[--idle-sleep-us N] [--socket PATH] [--no-digest-timeout] "
		   "[--log-level error|warn|info|debug]\n");
}

/* A start-up error: one line on stderr; main returns what this returns. */
static int __attribute__((format(printf, 1, 2))) die(const char *fmt, ...)
{
	char line[CFG_ERR_LEN + 128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "skewless-switchd: %s\n", line);
	rte_eal_cleanup();
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"switch", required_argument, NULL, 's'},
	    {"idle-sleep-us", required_argument, NULL, 'i'},
	    {"socket", required_argument, NULL, 'S'},
	    {"no-digest-timeout", no_argument, NULL, 'D'},
	    {"log-level", required_argument, NULL, 'L'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *config = NULL, *switch_name = NULL;
	struct sw_opts so = {.idle_sleep_us = -1, .close_ports = true};
	static struct cfg cfg;
	static struct sw sw;
	const struct cfg_switch *self;
	char err[CFG_ERR_LEN + 64];
	int log_level = LOG_LVL_INFO;
	int n, c;

	sw_block_rx_signals(); /* before EAL starts its threads: they inherit the mask */
	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "skewless-switchd: EAL initialisation failed: %s\n",
			rte_strerror(rte_errno));
		return 1;
	}
	argc -= n;
	argv += n;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 's':
			switch_name = optarg;
			break;
		case 'i': {
			uint64_t v;

			if (cfg_parse_uint(optarg, 0, 1000000, &v) != 0)
				return die("--idle-sleep-us: expected an integer 0..1000000, got "
					   "\"%.64s\"",
					   optarg);
			so.idle_sleep_us = (int64_t)v;
			break;
		}
		case 'S':
			so.socket_path = optarg;
			break;
		case 'D':
			so.no_digest_timeout = true;
			break;
		case 'L':
			log_level = log_parse_level(optarg);
			if (log_level < 0)
				return die("--log-level: expected error|warn|info|debug, got "
					   "\"%.64s\"",
					   optarg);
			break;
		case 'h':
			usage(stdout);
			rte_eal_cleanup();
			return 0;
		default:
			usage(stderr);
			rte_eal_cleanup();
			return 1;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return die("unexpected argument \"%.64s\"", argv[optind]);
	}
	if (!config || !switch_name) {
		usage(stderr);
		return die("--config and --switch are required");
	}
	if (cfg_load(config, &cfg, err, sizeof(err)) != 0)
		return die("%s", err);
	self = cfg_switch_lookup(&cfg, switch_name);
	if (!self)
		return die("%s: no switch \"%s\" in switches[]", config, switch_name);
	log_init("skewless-switchd", self->name, (enum log_level)log_level);
	/* The control socket's directory (/run/skewless) may not exist yet. */
	const char *sock = so.socket_path ? so.socket_path : self->control_socket;

	if (*sock) {
		char dir[CFG_MAX_PATH];

		snprintf(dir, sizeof(dir), "%s", sock);
		mkdir(dirname(dir), 0755);
	}
	if (sw_init(&sw, &cfg, self, &so, err, sizeof(err)) != 0) {
		sw_fini(&sw);
		return die("%s", err);
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (sw_start(&sw) != 0) {
		sw_fini(&sw);
		return die("cannot launch the workers");
	}
	char vip[16];

	log_info("%s (%s) running: %u ports, %u workers, VIP %s:%u, control socket %s, idle sleep "
		 "%u us after %u empty polls (a frame ends it on %u receive rings of worker 0)",
		 self->name, sw.inline_mode ? "inline" : "one-arm", sw.nports, sw.nworkers,
		 cfg_format_ipv4(sw.vip, vip), sw.svc_port, *sock ? sock : "(none)",
		 sw.idle_sleep_us, sw.idle_polls, sw.workers[0]->nwake);
	while (!stop_requested)
		sw_control_poll(&sw, 10);
	log_info("stopping");
	sw_fini(&sw);
	rte_eal_cleanup();
	return 0;
}
