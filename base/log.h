/*
 * log.h - leveled log lines on stderr, one module for every daemon.
 *
 * One line per event:
 *
 *   HH:MM:SS.mmm <program>[<name>] <level>: <message>
 *
 * e.g. "12:03:04.567 skewless-node[n1] warn: recvmmsg: ...". The program and
 * instance name (the component prefix) and the level are process-wide and set
 * once at start-up, before any thread starts (log_init()); lines above the
 * level are skipped before their arguments are formatted. Each line is written
 * whole, so lines of different threads never interleave.
 *
 * Libraries (proto/, conf/, digest/, libskewless) never log: they return
 * errors and the program logs them.
 *
 * A log_keep holds the newest lines a daemon keeps to show on request (the
 * switch's decision log, `cdtctl debug show`); one thread writes and reads it.
 */
#ifndef SKL_LOG_H
#define SKL_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/*
 * Set the component prefix and the level: "program[name]", or "program" when
 * name is NULL. Until called: "skewless", level info.
 */
void log_init(const char *program, const char *name, enum log_level level);
/* Parse "error|warn|info|debug": the level, or -1 when unknown. */
int log_parse_level(const char *s);
bool log_enabled(enum log_level level);
/* Write one line at level (nothing when the level is off). */
void log_write(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_write(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_write(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_write(LOG_LVL_INFO, __VA_ARGS__)
/* Debug arguments are not even evaluated when debug is off (they may cost: strerror, names). */
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (log_enabled(LOG_LVL_DEBUG))                                                    \
			log_write(LOG_LVL_DEBUG, __VA_ARGS__);                                     \
	} while (0)

#define LOG_KEEP_LINES 256 /* lines kept; the oldest is overwritten */
#define LOG_KEEP_WIDTH 384 /* bytes per line, with its NUL; longer lines are cut */

/* The newest LOG_KEEP_LINES lines. Zeroed memory is an empty one. */
struct log_keep {
	char lines[LOG_KEEP_LINES][LOG_KEEP_WIDTH];
	uint32_t next; /* lines ever added; the next goes to next % LOG_KEEP_LINES */
};

/* Keep a copy of line (cut to LOG_KEEP_WIDTH - 1 bytes), dropping the oldest when full. */
void log_keep_add(struct log_keep *k, const char *line);
/* How many lines k holds (at most LOG_KEEP_LINES). */
unsigned log_keep_count(const struct log_keep *k);
/* Line i of k, 0 the oldest; i < log_keep_count(k). */
const char *log_keep_line(const struct log_keep *k, unsigned i);

#endif
