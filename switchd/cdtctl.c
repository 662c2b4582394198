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
 * answers are JSON; --json prints them as they are. Otherwise it prints the
 * text the switch renders with the same formatters (ctl.h, "text"): plain
 * fields as name=value, one line per row of a table.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
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

/* An error: one line on stderr; main returns what this returns. */
static int __attribute__((format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cdtctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
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

/*
 * Send one command line and return its parsed JSON answer (NULL on I/O
 * error). Without --json the switch is asked for the answer as text
 * ("text" before the command), rendered by the formatters that write the JSON.
 */
static json_t *request(const char *line)
{
	static char *buf;
	static size_t cap;
	json_error_t jerr;
	size_t len = strlen(line);

	if ((!json_out && write(conn_fd, "text ", 5) != 5) ||
	    write(conn_fd, line, len) != (ssize_t)len || write(conn_fd, "\n", 1) != 1)
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

/* Print an answer; returns 0 when it says ok. */
static int show(json_t *r, const char *what)
{
	if (!r && (errno == EAGAIN || errno == EWOULDBLOCK))
		return die("no answer from the switch (%s) within " STR(ANSWER_TIMEOUT_S) " s",
			   what);
	if (!r)
		return die("no answer from the switch (%s)", what);
	if (!json_is_true(json_object_get(r, "ok"))) {
		die("%s", json_string_value(json_object_get(r, "error")));
		json_decref(r);
		return 1;
	}
	if (json_out) {
		char *s = json_dumps(r, JSON_INDENT(2));

		puts(s);
		free(s);
	} else
		fputs(json_string_value(json_object_get(r, "text")) ?: "", stdout);
	json_decref(r);
	return 0;
}

/* Whether a key fits the wire (1..WIRE_MAX_KEY bytes); says why not. */
static bool key_ok(const char *key)
{
	size_t n = strlen(key);

	if (n >= 1 && n <= WIRE_MAX_KEY)
		return true;
	die("KEY must be 1..%d bytes, got %zu", WIRE_MAX_KEY, n);
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
			return die("give --switch ID|NAME (with --config FILE) or --socket PATH");
		if (cfg_load(config, &cfg, err, sizeof(err)) != 0)
			return die("%s", err);
		s = cfg_switch_lookup(&cfg, sw);
		if (!s)
			return die("%s: no switch \"%s\"", config, sw);
		sock = s->control_socket;
	}
	conn_fd = connect_to(sock);
	if (conn_fd < 0)
		return die("cannot connect to %s: %s (is skewless-switchd running?)", sock,
			   strerror(errno));
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

			if (!abs)
				return die("%s: %s", args[2], strerror(errno));
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
