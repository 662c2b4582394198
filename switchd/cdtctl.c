/*
 * cdtctl.c - the operator's CLI for a running skewless-switchd.
 *
 *   cdtctl (--switch ID|NAME [--config FILE] | --socket PATH) [--json] COMMAND
 *     stats                          counters, drops by reason, ports, workers
 *     nodes                          per node: in-flight, health, alive, neighbour
 *     peers                          peer switches: live, lease, last sync, lag, window,
 *                                    owned keys; the cluster hot set
 *     cdt show [KEY]                 directory entries
 *     cdt pin KEY... [--replicas N] [--force n1,n2,...]   (KEY "-": keys from stdin)
 *     cdt unpin KEY...
 *     directory on|off|show          hot-key management (off: ring only, pins stay)
 *     debug on|off|show              decision logs
 *     neigh show | neigh add IP MAC PORT
 *     ring show | ring apply FILE | ring resume PREV_FILE
 *                                    ring changes (docs/operations.md, "Changing the ring")
 *
 * It speaks the line protocol of switchd/ctl.h: keys are sent hex-encoded,
 * answers are JSON; --json prints them as they are, otherwise as tables.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "wire.h"

static int json_out;

static int die(const char *fmt, const char *arg)
{
	fprintf(stderr, "cdtctl: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: cdtctl (--switch ID|NAME [--config FILE] | --socket PATH) [--json] "
		   "COMMAND\n"
		   "  stats | nodes | peers | cdt show [KEY] | cdt pin KEY... [--replicas N] "
		   "[--force n1,n2] |\n"
		   "  cdt unpin KEY... | directory on|off|show | debug on|off|show |\n"
		   "  neigh show | neigh add IP MAC PORT\n"
		   "  ring show | ring apply FILE   apply a config with a higher ring.version\n"
		   "  ring resume PREV_FILE         drive again a change a restart interrupted\n"
		   "  KEY \"-\" reads keys from stdin, one per line\n");
}

/* A switch that does not answer within this long (stopped, wedged) is given up on. */
#define ANSWER_TIMEOUT_S 10
#define STR_(x)		 #x
#define STR(x)		 STR_(x)

static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = ANSWER_TIMEOUT_S};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	strcpy(sa.sun_path, path);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static FILE *conn_in;
static int conn_fd = -1;

/* Send one command line and return its parsed JSON answer (NULL on I/O error). */
static json_t *request(const char *line)
{
	static char *buf;
	static size_t cap;
	json_error_t jerr;
	size_t len = strlen(line);

	if (write(conn_fd, line, len) != (ssize_t)len || write(conn_fd, "\n", 1) != 1)
		return NULL;
	if (getline(&buf, &cap, conn_in) < 0)
		return NULL;
	return json_loads(buf, 0, &jerr);
}

static char *hex(const char *s)
{
	size_t n = strlen(s);
	char *h = malloc(2 * n + 1);

	return h ? cfg_format_hex(s, n, h) : NULL;
}

static void print_counters(json_t *obj, const char *title)
{
	const char *k;
	json_t *v;
	int any = 0;

	printf("%s:\n", title);
	json_object_foreach (obj, k, v) {
		if (json_integer_value(v)) {
			printf("  %-28s %lld\n", k, (long long)json_integer_value(v));
			any = 1;
		}
	}
	if (!any)
		printf("  (all zero)\n");
}

static void print_directory(json_t *d)
{
	printf("directory: %s, hot set %lld (last epoch +%lld -%lld), %lld epochs, %lld installs, "
	       "%lld retires,\n  %lld REPLICATE / %lld UNREPLICATE sent (%lld failed), "
	       "replication lag %.0f us mean, %lld replica reads\n",
	       json_is_true(json_object_get(d, "enabled")) ? "on" : "off",
	       (long long)json_integer_value(json_object_get(d, "hot_set")),
	       (long long)json_integer_value(json_object_get(d, "epoch_installs")),
	       (long long)json_integer_value(json_object_get(d, "epoch_retires")),
	       (long long)json_integer_value(json_object_get(d, "epochs")),
	       (long long)json_integer_value(json_object_get(d, "installs")),
	       (long long)json_integer_value(json_object_get(d, "retires")),
	       (long long)json_integer_value(json_object_get(d, "replicates_sent")),
	       (long long)json_integer_value(json_object_get(d, "unreplicates_sent")),
	       (long long)json_integer_value(json_object_get(d, "send_failed")),
	       json_real_value(json_object_get(d, "replication_lag_us_mean")),
	       (long long)json_integer_value(json_object_get(d, "replica_reads")));
}

static void print_stats(json_t *r)
{
	json_t *p, *w;
	size_t i;

	printf("switch %s (id %lld, %s), directory %lld/%lld entries\n",
	       json_string_value(json_object_get(r, "switch")),
	       (long long)json_integer_value(json_object_get(r, "id")),
	       json_string_value(json_object_get(r, "role")),
	       (long long)json_integer_value(json_object_get(r, "cdt_entries")),
	       (long long)json_integer_value(json_object_get(r, "cdt_capacity")));
	print_directory(json_object_get(r, "directory"));
	print_counters(json_object_get(r, "counters"), "counters");
	print_counters(json_object_get(r, "drops"), "drops");
	printf("ports:\n  %-12s %-20s %-17s %5s %12s %12s %10s\n", "name", "device", "mac", "mtu",
	       "rx", "tx", "tx_dropped");
	json_array_foreach (json_object_get(r, "ports"), i, p) {
		printf("  %-12s %-20s %-17s %5lld %12lld %12lld %10lld\n",
		       json_string_value(json_object_get(p, "name")),
		       json_string_value(json_object_get(p, "device")),
		       json_string_value(json_object_get(p, "mac")),
		       (long long)json_integer_value(json_object_get(p, "mtu")),
		       (long long)json_integer_value(json_object_get(p, "rx")),
		       (long long)json_integer_value(json_object_get(p, "tx")),
		       (long long)json_integer_value(json_object_get(p, "tx_dropped")));
	}
	printf("workers:\n");
	json_array_foreach (json_object_get(r, "workers"), i, w) {
		printf("  lcore %lld: %lld packets, %.1f cycles/packet while busy\n",
		       (long long)json_integer_value(json_object_get(w, "lcore")),
		       (long long)json_integer_value(json_object_get(w, "busy_packets")),
		       json_real_value(json_object_get(w, "cycles_per_packet")));
	}
}

static void print_nodes(json_t *r)
{
	json_t *n;
	size_t i;

	printf("%4s %-10s %-15s %-9s %5s %6s %8s %-17s %s\n", "id", "name", "ip", "state", "alive",
	       "health", "inflight", "mac", "port");
	json_array_foreach (json_object_get(r, "nodes"), i, n) {
		const char *mac = json_string_value(json_object_get(n, "mac"));
		const char *port = json_string_value(json_object_get(n, "port"));

		printf("%4lld %-10s %-15s %-9s %5s %6lld %8lld %-17s %s\n",
		       (long long)json_integer_value(json_object_get(n, "id")),
		       json_string_value(json_object_get(n, "name")),
		       json_string_value(json_object_get(n, "ip")),
		       json_string_value(json_object_get(n, "state")),
		       json_is_true(json_object_get(n, "alive")) ? "yes" : "no",
		       (long long)json_integer_value(json_object_get(n, "health")),
		       (long long)json_integer_value(json_object_get(n, "inflight")),
		       mac ? mac : "-", port ? port : "-");
	}
}

static void print_peers(json_t *r)
{
	json_t *p, *k;
	size_t i;

	if (!json_is_true(json_object_get(r, "peers_configured"))) {
		printf("no peer switches configured\n");
		return;
	}
	printf("leases: %s (%lld ms left); cluster hot set: %zu keys\n",
	       json_is_true(json_object_get(r, "leased")) ? "all held" : "MISSING (reads go home)",
	       (long long)json_integer_value(json_object_get(r, "lease_left_ms")),
	       json_array_size(json_object_get(r, "hot")));
	printf("%4s %-10s %-5s %-5s %12s %8s %8s %10s %8s\n", "id", "name", "live", "lease",
	       "last_sync_ms", "lag_ms", "window", "owned_keys", "claimed");
	json_array_foreach (json_object_get(r, "switches"), i, p) {
		char name[80];

		snprintf(name, sizeof(name), "%s%s", json_string_value(json_object_get(p, "name")),
			 json_is_true(json_object_get(p, "self")) ? "*" : "");
		printf("%4lld %-10s %-5s %-5s %12lld %8lld %8lld %10lld %8lld\n",
		       (long long)json_integer_value(json_object_get(p, "id")), name,
		       json_is_true(json_object_get(p, "live")) ? "yes" : "no",
		       json_is_true(json_object_get(p, "lease")) ? "yes" : "no",
		       (long long)json_integer_value(json_object_get(p, "last_sync_ms")),
		       (long long)json_integer_value(json_object_get(p, "lag_ms")),
		       (long long)json_integer_value(json_object_get(p, "window")),
		       (long long)json_integer_value(json_object_get(p, "owned_keys")),
		       (long long)json_integer_value(json_object_get(p, "claimed")));
	}
	json_array_foreach (json_object_get(r, "hot"), i, k)
		printf("  hot %-24s count %-8lld replicas %-3lld owner %s\n",
		       json_string_value(json_object_get(k, "key")),
		       (long long)json_integer_value(json_object_get(k, "count")),
		       (long long)json_integer_value(json_object_get(k, "replicas")),
		       json_string_value(json_object_get(k, "owner")));
}

static void print_entry(json_t *e)
{
	char reps[256] = "";
	size_t off = 0, i;
	json_t *r;

	json_array_foreach (json_object_get(e, "replicas"), i, r) {
		off += (size_t)snprintf(reps + off, sizeof(reps) - off, "%s%s", i ? "," : "",
					json_string_value(r));
		if (off >= sizeof(reps))
			break;
	}
	const char *owner = json_string_value(json_object_get(e, "owner"));

	printf("%-24s %-16s %-6s %10lld %-24s %6s %10lld %10lld %8lld %s\n",
	       json_string_value(json_object_get(e, "key")),
	       json_string_value(json_object_get(e, "keyhash")),
	       json_string_value(json_object_get(e, "home")),
	       (long long)json_integer_value(json_object_get(e, "completed")), reps,
	       json_is_true(json_object_get(e, "pinned")) ? "yes" : "no",
	       (long long)json_integer_value(json_object_get(e, "reads")),
	       (long long)json_integer_value(json_object_get(e, "replica_reads")),
	       (long long)json_integer_value(json_object_get(e, "writes")), owner ? owner : "");
}

static void print_cdt(json_t *r)
{
	json_t *e;
	size_t i;

	printf("directory: %lld/%lld entries\n",
	       (long long)json_integer_value(json_object_get(r, "size")),
	       (long long)json_integer_value(json_object_get(r, "capacity")));
	printf("%-24s %-16s %-6s %10s %-24s %6s %10s %10s %8s %s\n", "key", "keyhash", "home",
	       "completed", "replicas", "pinned", "reads", "rep_reads", "writes", "owner");
	json_array_foreach (json_object_get(r, "entries"), i, e)
		print_entry(e);
}

/* Print an answer; returns 0 when it says ok. */
static int show(json_t *r, const char *what)
{
	if (!r && (errno == EAGAIN || errno == EWOULDBLOCK))
		return die("no answer from the switch (%s) within " STR(ANSWER_TIMEOUT_S) " s",
			   what);
	if (!r)
		return die("no answer from the switch (%s)", what);
	if (!json_is_true(json_object_get(r, "ok"))) {
		fprintf(stderr, "cdtctl: %s\n", json_string_value(json_object_get(r, "error")));
		json_decref(r);
		return 1;
	}
	if (json_out) {
		char *s = json_dumps(r, JSON_INDENT(2));

		puts(s);
		free(s);
	} else if (!strcmp(what, "stats"))
		print_stats(r);
	else if (!strcmp(what, "nodes"))
		print_nodes(r);
	else if (!strcmp(what, "peers"))
		print_peers(r);
	else if (!strcmp(what, "cdt show"))
		print_cdt(r);
	else if (!strcmp(what, "directory"))
		print_directory(json_object_get(r, "directory"));
	else if (!strcmp(what, "cdt pin")) {
		print_entry(json_object_get(r, "entry"));
	} else if (!strcmp(what, "debug")) {
		json_t *l;
		size_t i;

		printf("debug %s\n", json_is_true(json_object_get(r, "debug")) ? "on" : "off");
		json_array_foreach (json_object_get(r, "log"), i, l)
			puts(json_string_value(l));
	} else if (!strcmp(what, "neigh show")) {
		json_t *n;
		size_t i;

		json_array_foreach (json_object_get(r, "neighbours"), i, n) {
			const char *node = json_string_value(json_object_get(n, "node"));

			printf("%-15s %-17s %-12s %s%s\n",
			       json_string_value(json_object_get(n, "ip")),
			       json_string_value(json_object_get(n, "mac")),
			       json_string_value(json_object_get(n, "port")),
			       json_is_true(json_object_get(n, "static")) ? "static " : "",
			       node ? node : "");
		}
	}
	json_decref(r);
	return 0;
}

/* Whether a key fits the wire (1..WIRE_MAX_KEY bytes); says why not. */
static bool key_ok(const char *key)
{
	size_t n = strlen(key);

	if (n >= 1 && n <= WIRE_MAX_KEY)
		return true;
	fprintf(stderr, "cdtctl: KEY must be 1..%d bytes, got %zu\n", WIRE_MAX_KEY, n);
	return false;
}

/* cdt pin/unpin over a list of keys (or stdin with "-"). */
static int keys_cmd(const char *verb, char **keys, int nkeys, const char *opts, const char *what)
{
	int rc = 0;

	for (int i = 0; i < nkeys; i++) {
		char *line = NULL;
		size_t cap = 0;
		ssize_t n;

		if (strcmp(keys[i], "-") != 0) {
			if (!key_ok(keys[i])) {
				rc = 1;
				continue;
			}
			char *h = hex(keys[i]), cmd[8192];

			snprintf(cmd, sizeof(cmd), "%s %s%s", verb, h, opts);
			free(h);
			rc |= show(request(cmd), what);
			continue;
		}
		while ((n = getline(&line, &cap, stdin)) > 0) {
			while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
				line[--n] = 0;
			if (n == 0)
				continue;
			if (!key_ok(line)) {
				rc = 1;
				continue;
			}
			char *h = hex(line), cmd[8192];

			snprintf(cmd, sizeof(cmd), "%s %s%s", verb, h, opts);
			free(h);
			json_t *r = request(cmd);

			/* Many keys: report failures only. */
			if (!r || !json_is_true(json_object_get(r, "ok")))
				rc |= show(r, what);
			else
				json_decref(r);
		}
		free(line);
	}
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"switch", required_argument, NULL, 's'},	{"socket", required_argument, NULL, 'S'},
	    {"config", required_argument, NULL, 'c'},	{"json", no_argument, NULL, 'j'},
	    {"replicas", required_argument, NULL, 'r'}, {"force", required_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},		{NULL, 0, NULL, 0},
	};
	const char *sw = NULL, *sock = NULL, *config = getenv("SKL_CONFIG");
	const char *replicas = NULL, *force = NULL;
	static struct cfg cfg;
	char err[CFG_ERR_LEN];
	int c;

	if (!config)
		config = "conf/testbed.json";
	/* Options may also follow the command (cdtctl cdt pin k --replicas 3 --json);
	 * "--" ends them, for a key that starts with "-". */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sw = optarg;
			break;
		case 'S':
			sock = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'j':
			json_out = 1;
			break;
		case 'r':
			replicas = optarg;
			break;
		case 'f':
			force = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	char **args = argv + optind;
	int nargs = argc - optind;

	if ((replicas && !*replicas) || (force && !*force))
		return die("%s needs a value", replicas && !*replicas ? "--replicas" : "--force");
	if (nargs == 0) {
		usage(stderr);
		return 1;
	}
	if (!sock) {
		const struct cfg_switch *s;

		if (!sw)
			return die("give --switch ID|NAME (with --config FILE) or --socket PATH%s",
				   "");
		if (cfg_load(config, &cfg, err, sizeof(err)) != 0)
			return die("%s", err);
		s = cfg_switch_lookup(&cfg, sw);
		if (!s) {
			fprintf(stderr, "cdtctl: %s: no switch \"%s\"\n", config, sw);
			return 1;
		}
		sock = s->control_socket;
	}
	conn_fd = connect_to(sock);
	if (conn_fd < 0) {
		fprintf(stderr, "cdtctl: cannot connect to %s: %s (is skewless-switchd running?)\n",
			sock, strerror(errno));
		return 1;
	}
	conn_in = fdopen(dup(conn_fd), "r");

	const char *cmd = args[0];
	char line[2 * WIRE_MAX_KEY + 64]; /* a command and a key in hex */

	if (!strcmp(cmd, "stats") || !strcmp(cmd, "nodes") || !strcmp(cmd, "peers"))
		return show(request(cmd), cmd);
	if (!strcmp(cmd, "directory")) {
		snprintf(line, sizeof(line), "directory %s", nargs > 1 ? args[1] : "show");
		return show(request(line), "directory");
	}
	if (!strcmp(cmd, "debug")) {
		snprintf(line, sizeof(line), "debug %s", nargs > 1 ? args[1] : "show");
		return show(request(line), "debug");
	}
	if (!strcmp(cmd, "neigh")) {
		line[0] = 0;
		size_t off = 0;

		for (int i = 0; i < nargs; i++)
			off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s",
						i ? " " : "", args[i]);
		return show(request(line),
			    nargs > 1 && !strcmp(args[1], "show") ? "neigh show" : "neigh");
	}
	if (!strcmp(cmd, "ring")) {
		if (nargs == 1 || (nargs == 2 && !strcmp(args[1], "show")))
			return show(request("ring show"), "ring show");
		if (nargs == 3 && (!strcmp(args[1], "apply") || !strcmp(args[1], "resume"))) {
			/* The switch reads the file: give it an absolute path, hex-encoded. */
			char *abs = realpath(args[2], NULL), *h;

			if (!abs) {
				fprintf(stderr, "cdtctl: %s: %s\n", args[2], strerror(errno));
				return 1;
			}
			h = hex(abs);
			snprintf(line, sizeof(line), "ring %s %s", args[1], h);
			free(h);
			free(abs);
			return show(request(line),
				    args[1][0] == 'a' ? "ring apply" : "ring resume");
		}
	}
	if (!strcmp(cmd, "cdt") && nargs >= 2) {
		if (!strcmp(args[1], "show")) {
			if (nargs > 2 && !key_ok(args[2]))
				return 1;
			if (nargs > 2) {
				char *h = hex(args[2]);

				snprintf(line, sizeof(line), "cdt show %s", h);
				free(h);
				return show(request(line), "cdt show");
			}
			return show(request("cdt show"), "cdt show");
		}
		if (!strcmp(args[1], "pin") && nargs > 2) {
			char o[600] = "";

			if (replicas)
				snprintf(o + strlen(o), sizeof(o) - strlen(o), " replicas %s",
					 replicas);
			if (force)
				snprintf(o + strlen(o), sizeof(o) - strlen(o), " force %s", force);
			return keys_cmd("cdt pin", args + 2, nargs - 2, o, "cdt pin");
		}
		if (!strcmp(args[1], "unpin") && nargs > 2)
			return keys_cmd("cdt unpin", args + 2, nargs - 2, "", "cdt unpin");
	}
	usage(stderr);
	return 1;
}
