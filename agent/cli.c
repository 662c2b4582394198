/*
 * cli.c - the `skewless` command-line tool.
 *
 *   skewless --config FILE [--json] where KEY...
 *
 * `where` is the operator's "where does this key live?": it prints each key's
 * keyhash, ring point and home node as the switch, agents and nodes compute them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "keyhash.h"
#include "ring.h"

enum cli_exit { CLI_EXIT_OK = 0, CLI_EXIT_USAGE = 64, CLI_EXIT_CONFIG = 78 };

struct cli {
	const char *config_path;
	int json;
	struct cfg cfg;
	struct ring ring;
};

static void usage(FILE *out)
{
	fprintf(out, "usage: skewless --config FILE [--json] <command> [args]\n"
		     "\n"
		     "commands:\n"
		     "  where KEY...   print each key's keyhash, ring point and home node\n"
		     "\n"
		     "options:\n"
		     "  -c, --config FILE   cluster config (JSON)\n"
		     "  -j, --json          machine-readable output\n"
		     "  -h, --help          this text\n");
}

static int cmd_where(struct cli *cli, int argc, char **argv)
{
	json_t *out = cli->json ? json_array() : NULL;

	if (argc == 0) {
		fprintf(stderr, "skewless where: expected at least one KEY\n");
		return CLI_EXIT_USAGE;
	}
	for (int i = 0; i < argc; i++) {
		uint64_t hash = keyhash(argv[i], strlen(argv[i]));
		uint32_t point = keyhash_point(hash);
		const struct cfg_node *home = cfg_node_by_id(&cli->cfg, ring_home(&cli->ring, hash));
		char hex[24];

		snprintf(hex, sizeof(hex), "0x%016llx", (unsigned long long)hash);
		if (out) {
			char pt[16];

			snprintf(pt, sizeof(pt), "0x%08x", point);
			json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s, s:i}", "key",
							     argv[i], "keyhash", hex, "point", pt,
							     "home", home->name, "home_id",
							     (int)home->id));
		} else {
			printf("%s keyhash=%s point=0x%08x home=%s\n", argv[i], hex, point,
			       home->name);
		}
	}
	if (out) {
		json_dumpf(out, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(out);
	}
	return CLI_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
					     {"json", no_argument, NULL, 'j'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	struct cli *cli = calloc(1, sizeof(*cli));
	char err[CFG_ERR_LEN];
	int opt, rc;

	if (!cli)
		return 1;
	while ((opt = getopt_long(argc, argv, "c:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cli->config_path = optarg;
			break;
		case 'j':
			cli->json = 1;
			break;
		case 'h':
			usage(stdout);
			return CLI_EXIT_OK;
		default:
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc || !cli->config_path) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (cfg_load(cli->config_path, &cli->cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "skewless: %s\n", err);
		return CLI_EXIT_CONFIG;
	}
	if (cfg_build_ring(&cli->cfg, &cli->ring) != 0) {
		fprintf(stderr, "skewless: %s: cannot build the ring\n", cli->config_path);
		return CLI_EXIT_CONFIG;
	}
	if (!strcmp(argv[optind], "where")) {
		rc = cmd_where(cli, argc - optind - 1, argv + optind + 1);
	} else {
		fprintf(stderr, "skewless: unknown command \"%s\"\n", argv[optind]);
		usage(stderr);
		rc = CLI_EXIT_USAGE;
	}
	ring_free(&cli->ring);
	free(cli);
	return rc;
}
