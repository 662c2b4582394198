/*
 * log.h - leveled log lines to stderr for skewless-node.
 *
 * One line per event: "<time> skewless-node[<name>] <level>: <message>". The
 * level is process-wide and set once at start-up (--log-level); lines above it
 * are skipped before formatting.
 */
#ifndef SKL_NODE_LOG_H
#define SKL_NODE_LOG_H

enum nlog_level { NLOG_ERROR, NLOG_WARN, NLOG_INFO, NLOG_DEBUG };

void nlog_set(enum nlog_level level, const char *name);
/* Parse "error|warn|info|debug"; returns -1 when unknown. */
int nlog_parse(const char *s);
int nlog_enabled(enum nlog_level level);
void nlog(enum nlog_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define nlog_error(...) nlog(NLOG_ERROR, __VA_ARGS__)
#define nlog_warn(...)	nlog(NLOG_WARN, __VA_ARGS__)
#define nlog_info(...)	nlog(NLOG_INFO, __VA_ARGS__)
#define nlog_debug(...)                                                                            \
	do {                                                                                       \
		if (nlog_enabled(NLOG_DEBUG))                                                      \
			nlog(NLOG_DEBUG, __VA_ARGS__);                                             \
	} while (0)

#endif
