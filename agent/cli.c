/*
 * cli.c - the `skewless` command-line tool: argument parsing and dispatch.
 *
 *   skewless --config FILE [--mode M] [--consistency C] [--json] <command> [args]
 *
 * get/put/del run one request through libskewless and exit with the status
 * (table in usage() and docs/cli.md); `where` prints a key's placement; `bench`
 * is the load generator (bench.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bench.h"
#include "cli.h"
#include "config.h"
#include "group.h"
#include "keyhash.h"
#include "wire.h"
#include "ring.h"
#include "skewless.h"

struct cli {
	const char *config_path;
	int json;
	enum skl_mode mode;
	enum skl_consistency consistency;
	uint32_t timeout_ms;
	struct cfg cfg;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: skewless --config FILE [options] <command> [args]\n"
		"\n"
		"commands:\n"
		"  get KEY                  read KEY; writes its value to stdout, byte for byte\n"
		"  put KEY VALUE [--ttl MS] write KEY (expiring after MS milliseconds)\n"
		"  put KEY - [--ttl MS]     the same, the value read from stdin (to EOF)\n"
		"  del KEY                  delete KEY\n"
		"  where KEY...             print each key's keyhash, ring point, home node and\n"
		"                           replica group (service.replicas nodes)\n"
		"  bench [flags]            load generator (skewless bench --help)\n"
		"\n"
		"options (before or after the command):\n"
		"  -c, --config FILE        cluster config (JSON)\n"
		"  -m, --mode M             inpath | hint | direct (default: the config's)\n"
		"      --consistency C      linearizable | relaxed (default: the config's)\n"
		"      --timeout MS         per-attempt timeout (default: the config's)\n"
		"  -j, --json               machine-readable output\n"
		"  -h, --help               this text\n"
		"\n"
		"A relaxed read served from a probed copy (home unreachable) is flagged\n"
		"\"possibly stale\" on stderr and \"stale\": true in JSON. The CLI sends one\n"
		"request, so it gives a silent switch up after its first timeout and\n"
		"retries at the key's ring home.\n"
		"\n"
		"exit codes:\n"
		"  0 OK   1 NOT_FOUND   2 MOVED   3 TOO_LARGE   4 BAD_REQUEST   5 UNAVAILABLE\n"
		"  6 OVERLOADED   7 INTERNAL   8 TIMEOUT   9 CANCELLED\n"
		"  64 usage error   70 local error (socket, memory)   78 config error\n");
}

/* Options every command accepts: returns 1 if handled, 0 if not, -1 on error. */
enum { OPT_CONSISTENCY = 256, OPT_TIMEOUT, OPT_TTL };

static const struct option common_opts[] = {
    {"config", required_argument, NULL, 'c'},
    {"mode", required_argument, NULL, 'm'},
    {"consistency", required_argument, NULL, OPT_CONSISTENCY},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"json", no_argument, NULL, 'j'},
    {"help", no_argument, NULL, 'h'},
    {"ttl", required_argument, NULL, OPT_TTL},
    {NULL, 0, NULL, 0},
};

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (cfg_parse_uint(s, 0, max, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int common_opt(struct cli *cli, int opt, const char *arg)
{
	switch (opt) {
	case 'c':
		cli->config_path = arg;
		return 1;
	case 'm':
		if (skl_mode_parse(arg, &cli->mode)) {
			fprintf(stderr,
				"skewless: --mode: expected inpath, hint or direct, got \"%s\"\n",
				arg);
			return -1;
		}
		return 1;
	case OPT_CONSISTENCY:
		if (skl_consistency_parse(arg, &cli->consistency)) {
			fprintf(stderr,
				"skewless: --consistency: expected linearizable or relaxed, got "
				"\"%s\"\n",
				arg);
			return -1;
		}
		return 1;
	case OPT_TIMEOUT:
		if (parse_u32(arg, 600000, &cli->timeout_ms) || !cli->timeout_ms) {
			fprintf(stderr, "skewless: --timeout: expected 1..600000 ms, got \"%s\"\n",
				arg);
			return -1;
		}
		return 1;
	case 'j':
		cli->json = 1;
		return 1;
	}
	return 0;
}

/*
 * Set o[name] to bytes[0..n) as a JSON string, or, when they are not UTF-8
 * (JSON strings must be), o[name + "_hex"] to their hex digits.
 */
static void set_bytes(json_t *o, const char *name, const void *bytes, size_t n)
{
	json_t *v = json_stringn(bytes, n);
	char field[32], *hex;

	if (v) {
		json_object_set_new(o, name, v);
		return;
	}
	hex = malloc(2 * n + 1);
	if (!hex)
		return;
	snprintf(field, sizeof(field), "%s_hex", name);
	json_object_set_new(o, field, json_string(cfg_format_hex(bytes, n, hex)));
	free(hex);
}

static int cmd_where(struct cli *cli, int argc, char **argv)
{
	json_t *out;
	struct ring ring;

	if (argc == 0) {
		fprintf(stderr, "skewless where: expected at least one KEY\n");
		return CLI_EXIT_USAGE;
	}
	if (cfg_build_ring(&cli->cfg, &ring) != 0) {
		fprintf(stderr, "skewless: %s: cannot build the ring\n", cli->config_path);
		return CLI_EXIT_CONFIG;
	}
	out = cli->json ? json_array() : NULL;
	for (int i = 0; i < argc; i++) {
		uint64_t hash = keyhash(argv[i], strlen(argv[i]));
		uint32_t point = keyhash_point(hash);
		const struct cfg_node *home = cfg_node_by_id(&cli->cfg, ring_home(&ring, hash));
		uint16_t ids[GROUP_MAX];
		unsigned nids = ring_group(&ring, point, cli->cfg.service.replicas, ids);
		char hex[24], group[GROUP_MAX * (CFG_MAX_NAME + 1)] = "";

		/* The key's replica group: its home and the next R - 1 nodes. */
		for (unsigned g = 0; g < nids; g++)
			snprintf(group + strlen(group), sizeof(group) - strlen(group), "%s%s",
				 g ? "," : "", cfg_node_name(&cli->cfg, ids[g]));

		snprintf(hex, sizeof(hex), "0x%016llx", (unsigned long long)hash);
		if (out) {
			char pt[16];

			snprintf(pt, sizeof(pt), "0x%08x", point);
			json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:s}", "keyhash", hex, "point", pt,
					      "home", home->name, "home_id", (int)home->id, "group",
					      group);

			set_bytes(o, "key", argv[i], strlen(argv[i]));
			json_array_append_new(out, o);
		} else {
			printf("%s keyhash=%s point=0x%08x home=%s group=%s\n", argv[i], hex, point,
			       home->name, group);
		}
	}
	if (out) {
		json_dumpf(out, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(out);
	}
	ring_free(&ring);
	return CLI_EXIT_OK;
}

/* Print one data-op result; returns the exit code (= the status). */
static int print_result(struct cli *cli, struct skl_agent *a, const char *cmd, const char *key,
			const struct skl_result *res, size_t shown)
{
	const char *node = skl_node_name(a, res->node);
	int stale = !!(res->flags & SKL_R_STALE);

	if (cli->json) {
		json_t *o =
		    json_pack("{s:s, s:s, s:I, s:s?, s:b, s:b, s:i, s:I}", "op", cmd, "status",
			      skl_status_name(res->status), "version", (json_int_t)res->version,
			      "node", node, "stale", stale, "replicated",
			      !!(res->flags & SKL_R_REPLICATED), "sends", (int)res->sends,
			      "latency_us", (json_int_t)((res->complete_ns - res->invoke_ns) / 1000));

		set_bytes(o, "key", key, strlen(key));
		if (res->op == SKL_OP_GET && (res->status == SKL_OK))
			set_bytes(o, "value", res->value, shown);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else if (res->op == SKL_OP_GET && res->status == SKL_OK) {
		/* Byte-exact (a file, a pipe); a newline only for a terminal's prompt. */
		fwrite(res->value, 1, shown, stdout);
		if (isatty(STDOUT_FILENO))
			putchar('\n');
	} else if (res->status == SKL_OK) {
		printf("OK version=%llu node=%s\n", (unsigned long long)res->version,
		       node ? node : "?");
	} else if (res->status == SKL_TOO_LARGE && res->op == SKL_OP_PUT) {
		fprintf(stderr,
			"skewless %s %s: TOO_LARGE: the value is %zu bytes, above the service's "
			"max_value of %u bytes\n",
			cmd, key, res->value_len, cli->cfg.service.max_value);
	} else {
		fprintf(stderr, "skewless %s %s: %s\n", cmd, key, skl_status_name(res->status));
	}
	if (stale && !cli->json)
		fprintf(stderr,
			"skewless %s %s: possibly stale: the home did not answer; read from %s at "
			"version %llu\n",
			cmd, key, node ? node : "?", (unsigned long long)res->version);
	return (int)res->status;
}

/*
 * Read all of stdin (put KEY -) into *out, at most limit bytes; *len = the
 * bytes read, limit + 1 when there was more (the caller refuses it unsent).
 * Returns 0 or a negative errno.
 */
static int read_stdin(size_t limit, char **out, size_t *len)
{
	size_t cap = limit + 1, n = 0;
	char *buf = malloc(cap ? cap : 1);

	if (!buf)
		return -ENOMEM;
	while (n < cap) {
		ssize_t r = read(STDIN_FILENO, buf + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int rc = -errno;

			free(buf);
			return rc;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

static int cmd_data(struct cli *cli, struct skl_agent *a, const char *cmd, int argc, char **argv,
		    uint32_t ttl_ms)
{
	struct skl_call_opts o = {.consistency = cli->consistency, .ttl_ms = ttl_ms};
	struct skl_result res;
	int want = !strcmp(cmd, "put") ? 2 : 1, rc;
	size_t cap = (size_t)cli->cfg.service.max_value + 1, value_len = 0;
	char *buf, *value = NULL;

	if (argc != want) {
		fprintf(stderr, "skewless %s: expected %s\n", cmd, want == 2 ? "KEY VALUE" : "KEY");
		return CLI_EXIT_USAGE;
	}
	if (want == 2 && !strcmp(argv[1], "-")) {
		/* The value from stdin, up to max_value (one byte more: too large). */
		rc = read_stdin(cli->cfg.service.max_value, &value, &value_len);
		if (rc) {
			fprintf(stderr, "skewless put: reading the value from stdin: %s\n",
				strerror(-rc));
			return CLI_EXIT_SOFTWARE;
		}
		if (value_len > cli->cfg.service.max_value) {
			fprintf(stderr,
				"skewless put %s: TOO_LARGE: the value on stdin is more than the "
				"service's max_value of %u bytes; nothing was sent\n",
				argv[0], cli->cfg.service.max_value);
			free(value);
			return SKL_TOO_LARGE;
		}
	} else if (want == 2) {
		value = strdup(argv[1]);
		value_len = strlen(argv[1]);
		if (!value)
			return CLI_EXIT_SOFTWARE;
	}
	buf = malloc(cap);
	if (!buf) {
		free(value);
		return CLI_EXIT_SOFTWARE;
	}
	if (!strcmp(cmd, "get"))
		rc = skl_get_sync(a, argv[0], strlen(argv[0]), &o, buf, cap, &res);
	else if (!strcmp(cmd, "put"))
		rc = skl_put_sync(a, argv[0], strlen(argv[0]), value, value_len, &o, &res);
	else
		rc = skl_del_sync(a, argv[0], strlen(argv[0]), &o, &res);
	if (rc == -EINVAL) {
		size_t klen = strlen(argv[0]);

		if (klen < 1 || klen > WIRE_MAX_KEY || argc < 2)
			fprintf(stderr, "skewless %s: KEY must be 1..%d bytes, got %zu\n", cmd,
				WIRE_MAX_KEY, klen);
		else /* only a value beyond any chunked op can be refused so */
			fprintf(stderr,
				"skewless %s: VALUE of %zu bytes is too long (at most %u)\n", cmd,
				value_len, cli->cfg.service.max_value);
		free(buf);
		free(value);
		return CLI_EXIT_USAGE;
	}
	if (rc) {
		fprintf(stderr, "skewless %s: %s\n", cmd, strerror(-rc));
		free(buf);
		free(value);
		return CLI_EXIT_SOFTWARE;
	}
	rc = print_result(cli, a, cmd, argv[0], &res, res.value_len < cap ? res.value_len : cap);
	free(buf);
	free(value);
	return rc;
}

int main(int argc, char **argv)
{
	/* Static: ~200 KB, too large for the stack, and no path can leak it. */
	static struct cli the_cli;
	struct cli *cli = &the_cli;
	char err[CFG_ERR_LEN];
	const char *cmd;
	char **args;
	int opt, nargs = 0, rc;
	uint32_t ttl_ms = 0;

	/* Global options up to the command ("+": stop at the first non-option). */
	while ((opt = getopt_long(argc, argv, "+c:m:jh", common_opts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return CLI_EXIT_OK;
		}
		rc = common_opt(cli, opt, optarg);
		if (rc <= 0) {
			if (rc == 0)
				usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	cmd = argv[optind];
	if (!strcmp(cmd, "bench")) {
		/* bench parses the rest itself, common options included. */
		rc = bench_main(cli->config_path, cli->mode, cli->consistency, cli->json,
				cli->timeout_ms, argc - optind, argv + optind);
		return rc;
	}
	/* The command's own arguments: options may follow it (put k v --ttl 5). */
	args = calloc((size_t)argc, sizeof(*args));
	if (!args)
		return CLI_EXIT_SOFTWARE;
	{
		int sub_argc = argc - optind;
		char **sub_argv = argv + optind;

		optind = 0; /* 0, not 1: glibc re-initialises its scanner */
		while ((opt = getopt_long(sub_argc, sub_argv, "c:m:jh", common_opts, NULL)) != -1) {
			if (opt == 'h') {
				usage(stdout);
				free(args);
				return CLI_EXIT_OK;
			}
			if (opt == OPT_TTL && !strcmp(cmd, "put")) {
				if (parse_u32(optarg, UINT32_MAX, &ttl_ms)) {
					fprintf(stderr,
						"skewless put: --ttl: expected milliseconds, got "
						"\"%s\"\n",
						optarg);
					free(args);
					return CLI_EXIT_USAGE;
				}
				continue;
			}
			rc = common_opt(cli, opt, optarg);
			if (rc <= 0) {
				if (rc == 0)
					usage(stderr);
				free(args);
				return CLI_EXIT_USAGE;
			}
		}
		for (int i = optind; i < sub_argc; i++)
			args[nargs++] = sub_argv[i];
	}
	if (!cli->config_path) {
		fprintf(stderr, "skewless: --config FILE is required\n");
		return CLI_EXIT_USAGE;
	}
	if (cfg_load(cli->config_path, &cli->cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "skewless: %s\n", err);
		return CLI_EXIT_CONFIG;
	}
	if (!strcmp(cmd, "where")) {
		rc = cmd_where(cli, nargs, args);
	} else if (!strcmp(cmd, "get") || !strcmp(cmd, "put") || !strcmp(cmd, "del")) {
		struct skl_options o = {.mode = cli->mode,
					.consistency = cli->consistency,
					.timeout_ms = cli->timeout_ms,
					.switch_failures = 1};
		struct skl_agent *a;

		rc = skl_create(&cli->cfg, &o, &a);
		if (rc == -EINVAL &&
		    getenv("SKL_SWITCH_ORDER")) { /* the options are the CLI's own */
			fprintf(stderr,
				"skewless: $SKL_SWITCH_ORDER \"%s\" names a switch the config does "
				"not have\n",
				getenv("SKL_SWITCH_ORDER"));
			rc = CLI_EXIT_CONFIG;
		} else if (rc) {
			fprintf(stderr, "skewless: cannot create the agent: %s\n", strerror(-rc));
			rc = CLI_EXIT_SOFTWARE;
		} else {
			rc = cmd_data(cli, a, cmd, nargs, args, ttl_ms);
			skl_close(a);
		}
	} else {
		fprintf(stderr, "skewless: unknown command \"%s\"\n", cmd);
		usage(stderr);
		rc = CLI_EXIT_USAGE;
	}
	free(args);
	return rc;
}
