/*
 * ctl.h - the control interface: a Unix socket for cdtctl and DPDK telemetry
 * commands (/skewless/stats, /skewless/nodes, /skewless/cdt, /skewless/peers).
 *
 * Socket protocol: one command per line, one JSON object per line back
 * ({"ok": true, ...} or {"ok": false, "error": "..."}); a connection may send
 * many commands. Keys travel hex-encoded so that any byte string works.
 *   stats | nodes | peers | neigh show | neigh add IP MAC PORT
 *   cdt show [HEXKEY] | cdt pin HEXKEY [replicas N] [force ID,ID...] | cdt unpin HEXKEY
 *   debug on | debug off | debug show
 * Everything runs on the control thread, from sw_control_poll().
 */
#ifndef SKL_SW_CTL_H
#define SKL_SW_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct sw;

/* Open the socket (path NULL: the config's; "": none) and register telemetry. */
int ctl_open(struct sw *sw, const char *path, bool no_telemetry, char *err, size_t errlen);
/* Serve socket clients for up to timeout_ms. */
void ctl_poll(struct sw *sw, int timeout_ms);
void ctl_close(struct sw *sw);

/*
 * Run one command line and return its JSON answer (malloc'd, caller frees).
 * Control thread only; used by the socket and by tests.
 */
char *ctl_command(struct sw *sw, const char *line);

/* A key as a JSON string: the text when printable, else "hex:..." */
json_t *ctl_key_json(const uint8_t *key, uint16_t len);

#endif
