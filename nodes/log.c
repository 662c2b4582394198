/*
 * log.c - leveled stderr logging (see log.h).
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum nlog_level cur_level = NLOG_INFO;
static char proc_name[64] = "";

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void nlog_set(enum nlog_level level, const char *name)
{
	cur_level = level;
	if (name)
		snprintf(proc_name, sizeof(proc_name), "%s", name);
}

int nlog_parse(const char *s)
{
	for (int i = 0; i <= NLOG_DEBUG; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

int nlog_enabled(enum nlog_level level)
{
	return level <= cur_level;
}

void nlog(enum nlog_level level, const char *fmt, ...)
{
	char line[1024], stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (!nlog_enabled(level))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03ld skewless-node[%s] %s: ", stamp,
		     ts.tv_nsec / 1000000, proc_name, level_names[level]);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* The whole line in one write, so lines of different threads never interleave. */
	fprintf(stderr, "%s\n", line);
}
