/*
 * ctl.h - the control socket and its command registry (Open vSwitch's
 * unixctl_command_register): each module registers the commands it owns
 * when it starts (directory, cluster, intake, ports, stats), and the socket
 * code knows none of them. DPDK telemetry commands (/skewless/...) are
 * registered by the same modules; ctl_tel_switch() says which switch they
 * answer for.
 *
 * Socket protocol: one command per line, one JSON object per line back
 * ({"ok": true, ...} or {"ok": false, "error": "..."}); a connection may send
 * many commands. Keys travel hex-encoded so that any byte string works.
 *   stats | nodes | peers | neigh show | neigh add IP MAC PORT
 *   cdt show [HEXKEY] | cdt pin HEXKEY [replicas N] [force ID,ID...] | cdt unpin HEXKEY
 *   directory [on|off|show] | debug on | debug off | debug show
 * "text" before a command asks for its answer as text, rendered by the
 * formatters that write its JSON (fmt_text_answer): {"ok": true, "text": "..."}.
 * The same registry serves Prometheus /metrics (switches[].metrics_listen,
 * on libmicrohttpd driven from ctl_poll(), so on the control thread): each
 * module registers the function that adds its samples (ctl_register_metrics()),
 * and those functions use the module's formatters (fmt.h), the same that
 * write its commands' JSON and its telemetry.
 * Everything runs on the control thread, from sw_control_poll(); a command
 * runs with the control thread online as a QSBR reader, so it may read the CDT,
 * and changes the pipeline's state only through the owning module's functions.
 */
#ifndef SKL_SW_CTL_H
#define SKL_SW_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <rte_telemetry.h>

struct prom;
struct sw;

/*
 * A command: argv holds the words after its name (argc of them). Returns
 * the JSON answer (the registry sends and frees it), ctl_error() for errors.
 */
typedef json_t *ctl_handler(struct sw *sw, int argc, char **argv, void *aux);

/* Create the registry (before the modules register). Returns 0 or -1 with err. */
int ctl_init(struct sw *sw, char *err, size_t errlen);

/*
 * Register command `name` (one or two words: "peers", "cdt pin"); the
 * longest name that matches the line's first words runs. A full table or a
 * name registered twice is a bug: it panics (as Open vSwitch's
 * unixctl_command_register() asserts), so no command is lost unseen.
 */
void ctl_register(struct sw *sw, const char *name, ctl_handler *fn, void *aux);

/* A module's share of /metrics: its samples into p (control thread, QSBR online). */
typedef void ctl_metrics(struct sw *sw, struct prom *p);

/* Register a module's metrics; they are rendered in the order registered. Panics when full. */
void ctl_register_metrics(struct sw *sw, ctl_metrics *fn);

/*
 * The /metrics text (malloc'd, *len its length; caller frees), or NULL with
 * errno. Control thread only; used by the HTTP server and by tests.
 */
char *ctl_metrics_render(struct sw *sw, size_t *len);

/* The port /metrics listens on, 0 when not served. */
uint16_t ctl_metrics_port(const struct sw *sw);

/*
 * Open the socket (path NULL: the config's; "": none), start /metrics when
 * the switch's metrics_listen is set, and answer telemetry for sw.
 */
int ctl_open(struct sw *sw, const char *path, bool no_telemetry, char *err, size_t errlen);
/* Serve socket clients for up to timeout_ms. */
void ctl_poll(struct sw *sw, int timeout_ms);
void ctl_close(struct sw *sw);

/*
 * Run one command line and return its JSON answer (malloc'd, caller frees).
 * Control thread only; used by the socket and by tests.
 */
char *ctl_command(struct sw *sw, const char *line);

/* {"ok": false, "error": the message printf formats}. */
json_t *ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The switch DPDK telemetry answers for (one per process), or NULL. Any thread. */
struct sw *ctl_tel_switch(void);

/*
 * A module's DPDK telemetry command: CTL_TELEMETRY("/skewless/x", fn, "help")
 * registers path at load time (telemetry commands are per process) to call
 * int fn(struct sw *sw, struct rte_tel_data *d) for ctl_tel_switch(), on the
 * telemetry thread: fn reads only what is safe there (atomics, snapshots, the
 * CDT as QSBR reader nworkers + 1 under sw->tel_lock).
 */
#define CTL_TELEMETRY(path, fn, help)                                                              \
	static int fn##_cmd(const char *cmd, const char *params, struct rte_tel_data *d)           \
	{                                                                                          \
		struct sw *sw = ctl_tel_switch();                                                  \
                                                                                                   \
		(void)cmd;                                                                         \
		(void)params;                                                                      \
		return sw ? fn(sw, d) : -1;                                                        \
	}                                                                                          \
	__attribute__((constructor)) static void fn##_register(void)                               \
	{                                                                                          \
		rte_telemetry_register_cmd(path, fn##_cmd, help);                                  \
	}

#endif
