/*
 * cli.h - exit codes of the `skewless` tool, shared by its commands.
 * 0..9 are the request's status (enum skl_status); the rest follow sysexits.h.
 */
#ifndef SKL_CLI_H
#define SKL_CLI_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_USAGE = 64,
	CLI_EXIT_SOFTWARE = 70,
	CLI_EXIT_CONFIG = 78,
};

/*
 * A decimal integer in min..max for a command-line flag: digits only (no
 * sign, space or trailing bytes) and no overflow. 0, or -1 when s is not one.
 */
static inline int cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

#endif
