/*
 * log.c - leveled stderr logging and kept lines (see log.h).
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"

/* Set by log_init() before threads start; read-only afterwards. */
static enum log_level cur_level = LOG_LVL_INFO;
static char prefix[96] = "skewless";

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_init(const char *program, const char *name, enum log_level level)
{
	cur_level = level;
	if (name)
		snprintf(prefix, sizeof(prefix), "%s[%s]", program, name);
	else
		snprintf(prefix, sizeof(prefix), "%s", program);
}

int log_parse_level(const char *s)
{
	for (int i = 0; i <= LOG_LVL_DEBUG; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

bool log_enabled(enum log_level level)
{
	return level <= cur_level;
}

void log_write(enum log_level level, const char *fmt, ...)
{
	char line[1024], stamp[32];
	uint64_t now_ms;
	time_t secs;
	struct tm tm;
	va_list ap;
	int n;

	if (!log_enabled(level))
		return;
	now_ms = clock_real_ms();
	secs = (time_t)(now_ms / 1000);
	localtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03u %s %s: ", stamp, (unsigned)(now_ms % 1000),
		     prefix, level_names[level]);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* The whole line in one write, so lines of different threads never interleave. */
	fprintf(stderr, "%s\n", line);
}

void log_keep_add(struct log_keep *k, const char *line)
{
	snprintf(k->lines[k->next % LOG_KEEP_LINES], LOG_KEEP_WIDTH, "%s", line);
	k->next++;
}

unsigned log_keep_count(const struct log_keep *k)
{
	return k->next < LOG_KEEP_LINES ? k->next : LOG_KEEP_LINES;
}

const char *log_keep_line(const struct log_keep *k, unsigned i)
{
	return k->lines[(k->next - log_keep_count(k) + i) % LOG_KEEP_LINES];
}
