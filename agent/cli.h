/*
 * cli.h - exit codes of the `skewless` tool, shared by its commands.
 * 0..9 are the request's status (enum skl_status); the rest follow sysexits.h.
 */
#ifndef SKL_CLI_H
#define SKL_CLI_H

enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_USAGE = 64,
	CLI_EXIT_SOFTWARE = 70,
	CLI_EXIT_CONFIG = 78,
};

#endif
