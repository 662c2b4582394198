/*
 * ctl.c - control socket and telemetry (see ctl.h). Control path only: it
 * may allocate, format JSON and block briefly; the fast path never calls it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_cycles.h>
#include <rte_telemetry.h>

#include "cluster.h"
#include "ctl.h"
#include "keyhash.h"
#include "switchd.h"

#define CTL_MAX_CLIENTS 8
#define CTL_LINE_MAX	(64 * 1024)

struct ctl_client {
	int fd;
	size_t len;
	char *buf;
};

struct ctl {
	int listen_fd;
	char path[CFG_MAX_PATH];
	struct ctl_client clients[CTL_MAX_CLIENTS];
};

static struct sw *tel_sw; /* the switch telemetry answers for (one per process) */

static const char *const counter_names[] = {
#define X(name, str, kind) str,
    SW_COUNTERS(X)
#undef X
};
static const uint8_t counter_kinds[] = {
#define X(name, str, kind) kind,
    SW_COUNTERS(X)
#undef X
};
static const char *const port_counter_names[] = {
#define X(name, str) str,
    SW_PORT_COUNTERS(X)
#undef X
};

const char *sw_counter_name(enum sw_counter c)
{
	return c < SW_CNT_COUNT ? counter_names[c] : "?";
}
enum sw_cnt_kind sw_counter_kind(enum sw_counter c)
{
	return c < SW_CNT_COUNT ? (enum sw_cnt_kind)counter_kinds[c] : SW_CNT_EVENT;
}
const char *sw_port_counter_name(enum sw_port_counter c)
{
	return c < SW_PCNT_COUNT ? port_counter_names[c] : "?";
}

/* ---- Helpers. ------------------------------------------------------------------------------ */

static void fmt_mac(const uint8_t *m, char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* A key as text when printable, else "hex:..." */
json_t *ctl_key_json(const uint8_t *key, uint16_t len)
{
	char buf[2 * WIRE_MAX_KEY + 8];
	bool printable = len > 0;

	for (unsigned i = 0; i < len; i++)
		if (key[i] < 0x20 || key[i] > 0x7e)
			printable = false;
	if (printable)
		return json_stringn((const char *)key, len);
	strcpy(buf, "hex:");
	cfg_format_hex(key, len, buf + 4);
	return json_string(buf);
}

static json_t *error(const char *fmt, const char *arg)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, arg);
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static const char *node_name(const struct sw *sw, uint16_t id)
{
	const struct cfg_node *n = cfg_node_by_id(sw->cfg, id);

	return n ? n->name : "?";
}

/* ---- Commands. --------------------------------------------------------------------------- */

/* The directory manager's view: hot set, churn, replication traffic and lag. */
static json_t *directory_json(struct sw *sw)
{
	struct dir_stats d;
	uint64_t lag_n = sw_counter(sw, SW_CNT_REPL_LAG_SAMPLES);

	dir_get_stats(sw, &d);
	return json_pack("{s:b, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:I}",
			 "enabled", d.enabled, "hot_set", d.hot_set, "epoch_installs",
			 d.last_installs, "epoch_retires", d.last_retires, "epochs",
			 (json_int_t)d.epochs, "installs", (json_int_t)d.installs, "retires",
			 (json_int_t)d.retires, "replicates_sent", (json_int_t)d.replicates_sent,
			 "unreplicates_sent", (json_int_t)d.unreplicates_sent, "send_failed",
			 (json_int_t)d.send_failed, "full", (json_int_t)d.full, "collisions",
			 (json_int_t)d.collisions, "replication_lag_us_mean",
			 lag_n ? (double)sw_counter(sw, SW_CNT_REPL_LAG_US) / (double)lag_n : 0.0,
			 "replica_reads", (json_int_t)sw_counter(sw, SW_CNT_REPLICA_READS));
}

static json_t *cmd_stats(struct sw *sw)
{
	json_t *o =
	    json_pack("{s:b, s:s, s:I, s:s}", "ok", 1, "switch", sw->self->name, "id",
		      (json_int_t)sw->self->id, "role", sw->inline_mode ? "inline" : "one-arm");
	json_t *cnt = json_object(), *drops = json_object(), *ports = json_array();
	json_t *workers = json_array();

	json_object_set_new(o, "tsc_hz", json_integer((json_int_t)sw->tsc_hz));
	for (int c = 0; c < SW_CNT_COUNT; c++)
		json_object_set_new(sw_counter_kind(c) == SW_CNT_DROP ? drops : cnt,
				    sw_counter_name(c),
				    json_integer((json_int_t)sw_counter(sw, c)));
	for (uint16_t p = 0; p < sw->nports; p++) {
		char mac[18];
		json_t *po;

		fmt_mac(sw->ports[p].mac.addr_bytes, mac);
		po = json_pack("{s:s, s:s, s:i, s:s, s:i, s:i, s:i, s:b}", "name",
			       sw->ports[p].name, "device", sw->ports[p].dev, "port_id",
			       sw->ports[p].port_id, "mac", mac, "mtu", sw->ports[p].mtu,
			       "rx_queues", sw->ports[p].nrxq, "tx_queues", sw->ports[p].ntxq,
			       "promiscuous", sw->ports[p].promiscuous);
		for (int c = 0; c < SW_PCNT_COUNT; c++)
			json_object_set_new(po, sw_port_counter_name(c),
					    json_integer((json_int_t)sw_port_counter(sw, p, c)));
		json_array_append_new(ports, po);
	}
	for (uint16_t i = 0; i < sw->nworkers; i++) {
		const struct sw_worker *w = sw->workers[i];
		uint64_t cyc = __atomic_load_n(&w->busy_cycles, __ATOMIC_RELAXED);
		uint64_t pk = __atomic_load_n(&w->busy_packets, __ATOMIC_RELAXED);

		json_array_append_new(
		    workers, json_pack("{s:i, s:I, s:I, s:f}", "lcore", w->lcore, "busy_packets",
				       (json_int_t)pk, "busy_cycles", (json_int_t)cyc,
				       "cycles_per_packet", pk ? (double)cyc / (double)pk : 0.0));
	}
	json_object_set_new(o, "counters", cnt);
	json_object_set_new(o, "drops", drops);
	json_object_set_new(o, "ports", ports);
	json_object_set_new(o, "workers", workers);
	json_object_set_new(o, "cdt_entries", json_integer(sw->cdt->nentries));
	json_object_set_new(o, "cdt_capacity", json_integer(sw->cdt->max_entries));
	json_object_set_new(o, "digests_received", json_integer((json_int_t)sw->digests_received));
	json_object_set_new(o, "directory", directory_json(sw));
	return o;
}

static json_t *cmd_nodes(struct sw *sw)
{
	json_t *arr = json_array();

	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		const struct cfg_node *n = &sw->cfg->nodes[i];
		char ip[16], mac[18] = "";
		uint8_t m[6], port;
		bool known = l2_node_nb(sw->l2, n->id, m, &port);

		if (known)
			fmt_mac(m, mac);
		json_array_append_new(
		    arr,
		    json_pack("{s:i, s:s, s:s, s:i, s:i, s:i, s:b, s:s, s:s?, s:s?}", "id", n->id,
			      "name", n->name, "ip", cfg_format_ipv4(n->ip, ip), "inflight",
			      scores_inflight(&sw->scores, n->id), "health",
			      scores_health(&sw->scores, n->id), "weight", n->weight, "alive",
			      scores_alive(&sw->scores, n->id), "state",
			      scores_state_name(sw->scores.state[n->id]), "mac", known ? mac : NULL,
			      "port", known && port < sw->nports ? sw->ports[port].name : NULL));
		/* Whose digests the score comes from: this switch's, or a peer's. */
		const char *src = cluster_score_source(sw, n->id);

		json_object_set_new(json_array_get(arr, json_array_size(arr) - 1), "score_from",
				    json_string(src ? src : sw->self->name));
	}
	return json_pack("{s:b, s:o}", "ok", 1, "nodes", arr);
}

static json_t *entry_json(struct sw *sw, const struct cdt_entry *e)
{
	const struct cdt_state *st = cdt_entry_state(e);
	struct cdt_entry_counters c;
	json_t *reps = json_array();
	char kh[20];
	uint16_t klen;
	const uint8_t *key = cdt_entry_key(sw->cdt, e, &klen);

	cdt_entry_counters(sw->cdt, e, &c);
	for (unsigned i = 0; i < st->nreplicas; i++)
		json_array_append_new(reps, json_string(node_name(sw, st->replicas[i])));
	snprintf(kh, sizeof(kh), "%016llx", (unsigned long long)e->keyhash);
	return json_pack("{s:o, s:s, s:s, s:I, s:o, s:b, s:i, s:I, s:I, s:I, s:I, s:I}", "key",
			 ctl_key_json(key, klen), "keyhash", kh, "home", node_name(sw, e->home),
			 "completed", (json_int_t)st->completed, "replicas", reps, "pinned",
			 e->pinned, "want_replicas", e->want_replicas, "reads", (json_int_t)c.reads,
			 "replica_reads", (json_int_t)c.replica_reads, "writes",
			 (json_int_t)c.writes, "completions", (json_int_t)c.completions,
			 "acks_added", (json_int_t)c.acks_added);
}

/* entry_json plus who owns the key (peer switches) and whether reads are spread. */
static json_t *entry_json_owned(struct sw *sw, const struct cdt_entry *e)
{
	json_t *o = entry_json(sw, e);
	uint16_t owner = __atomic_load_n(&e->owner, __ATOMIC_RELAXED);

	json_object_set_new(o, "owner",
			    json_string(owner ? cluster_switch_name(sw, owner) : sw->self->name));
	json_object_set_new(o, "spread", json_boolean(!sw->npeers || (!owner && e->spread)));
	return o;
}

static json_t *cmd_cdt_show(struct sw *sw, const char *hexkey)
{
	json_t *arr = json_array();

	if (hexkey) {
		uint8_t key[WIRE_MAX_KEY];
		size_t len;
		struct cdt_entry *e;

		if (cfg_parse_hex(hexkey, key, sizeof(key), &len) != 0) {
			json_decref(arr);
			return error("bad key \"%s\": expected hex bytes", hexkey);
		}
		e = cdt_find(sw->cdt, keyhash(key, len));
		if (e && cdt_entry_is(e, key, len))
			json_array_append_new(arr, entry_json_owned(sw, e));
	} else {
		uint32_t it = 0;
		struct cdt_entry *e;

		while ((e = cdt_next(sw->cdt, &it)) != NULL)
			json_array_append_new(arr, entry_json_owned(sw, e));
	}
	return json_pack("{s:b, s:i, s:i, s:o}", "ok", 1, "size", sw->cdt->nentries, "capacity",
			 sw->cdt->max_entries, "entries", arr);
}

static json_t *cmd_cdt_pin(struct sw *sw, char **argv, int argc)
{
	uint8_t key[WIRE_MAX_KEY];
	uint16_t force[CDT_MAX_REPLICAS];
	unsigned nforce = 0, want = 1;
	size_t len;
	struct cdt_entry *e;

	if (argc < 1 || cfg_parse_hex(argv[0], key, sizeof(key), &len) != 0)
		return error("cdt pin: expected HEXKEY, got \"%s\"", argc ? argv[0] : "");
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "replicas")) {
			char *end;
			unsigned long n = strtoul(argv[i + 1], &end, 10);

			if (*end || n < 1 || n > CDT_MAX_REPLICAS)
				return error("cdt pin: replicas: expected 1..16, got \"%s\"",
					     argv[i + 1]);
			want = (unsigned)n;
		} else if (!strcmp(argv[i], "force")) {
			char list[512], *save = NULL;

			snprintf(list, sizeof(list), "%s", argv[i + 1]);
			for (char *t = strtok_r(list, ",", &save); t;
			     t = strtok_r(NULL, ",", &save)) {
				const struct cfg_node *n = cfg_node_lookup(sw->cfg, t);

				if (!n || nforce == CDT_MAX_REPLICAS)
					return error(
					    "cdt pin: force: unknown node or too many: \"%s\"", t);
				force[nforce++] = n->id;
			}
		} else {
			return error("cdt pin: unknown option \"%s\"", argv[i]);
		}
	}
	e = sw_pin(sw, key, len, force, nforce, (uint8_t)want);
	if (!e)
		return error("cdt pin: %s", strerror(errno));
	json_t *o = json_pack("{s:b}", "ok", 1);

	json_object_set_new(o, "entry", entry_json(sw, e));
	return o;
}

static json_t *cmd_cdt_unpin(struct sw *sw, const char *hexkey)
{
	uint8_t key[WIRE_MAX_KEY];
	size_t len;
	int rc;

	if (!hexkey || cfg_parse_hex(hexkey, key, sizeof(key), &len) != 0)
		return error("cdt unpin: expected HEXKEY, got \"%s\"", hexkey ? hexkey : "");
	struct cdt_entry *e = cdt_find(sw->cdt, keyhash(key, len));

	if (!e || !cdt_entry_is(e, key, len))
		return error("cdt unpin: key not in the directory%s", "");
	rc = dir_remove(sw, e);
	if (rc != 0)
		return error("cdt unpin: %s", strerror(-rc));
	return json_pack("{s:b, s:i}", "ok", 1, "size", sw->cdt->nentries);
}

static json_t *cmd_directory(struct sw *sw, const char *arg)
{
	if (arg && (!strcmp(arg, "on") || !strcmp(arg, "off")))
		dir_set_enabled(sw, !strcmp(arg, "on"));
	else if (arg && strcmp(arg, "show")) {
		return error("directory: expected on, off or show, got \"%s\"", arg);
	}
	return json_pack("{s:b, s:o}", "ok", 1, "directory", directory_json(sw));
}

static json_t *cmd_debug(struct sw *sw, const char *arg)
{
	if (arg && !strcmp(arg, "on"))
		__atomic_store_n(&sw->debug, 1, __ATOMIC_RELAXED);
	else if (arg && !strcmp(arg, "off"))
		__atomic_store_n(&sw->debug, 0, __ATOMIC_RELAXED);
	else if (!arg || strcmp(arg, "show"))
		return error("debug: expected on, off or show, got \"%s\"", arg ? arg : "");
	json_t *lines = json_array();

	for (unsigned i = 0; i < log_keep_count(&sw->decisions); i++)
		json_array_append_new(lines, json_string(log_keep_line(&sw->decisions, i)));
	return json_pack("{s:b, s:b, s:o}", "ok", 1, "debug", sw->debug, "log", lines);
}

static void nb_visit(void *arg, uint32_t ip, const uint8_t mac[6], uint8_t port, bool is_static,
		     uint16_t node)
{
	json_t **ctx = arg;
	struct sw *sw = (struct sw *)ctx[1];
	char ips[16], macs[18];

	fmt_mac(mac, macs);
	json_array_append_new(
	    ctx[0], json_pack("{s:s, s:s, s:s, s:b, s:s?}", "ip", cfg_format_ipv4(ip, ips), "mac",
			      macs, "port", port < sw->nports ? sw->ports[port].name : "?",
			      "static", is_static, "node", node ? node_name(sw, node) : NULL));
}

static json_t *cmd_neigh(struct sw *sw, char **argv, int argc)
{
	if (argc >= 1 && !strcmp(argv[0], "show")) {
		json_t *ctx[2] = {json_array(), (json_t *)sw};

		l2_nb_walk(sw->l2, (uint32_t)(rte_rdtsc() / sw->tsc_hz), nb_visit, ctx);
		return json_pack("{s:b, s:o}", "ok", 1, "neighbours", ctx[0]);
	}
	if (argc == 4 && !strcmp(argv[0], "add")) {
		uint32_t ip;
		uint8_t mac[6];
		int port = -1;

		if (cfg_parse_ipv4(argv[1], &ip) != 0)
			return error("neigh add: bad IPv4 address \"%s\"", argv[1]);
		if (cfg_parse_mac(argv[2], mac) != 0)
			return error("neigh add: expected a MAC xx:xx:xx:xx:xx:xx, got \"%s\"",
				     argv[2]);
		if (!l2_nb_learnable(ip, mac))
			return error("neigh add: address 0.0.0.0 and multicast MACs are never "
				     "neighbours%s",
				     "");
		for (uint16_t p = 0; p < sw->nports; p++)
			if (!strcmp(sw->ports[p].name, argv[3]))
				port = p;
		if (port < 0)
			return error("neigh add: no port named \"%s\"", argv[3]);
		l2_nb_learn(sw->l2, ip, mac, (uint8_t)port, (uint32_t)(rte_rdtsc() / sw->tsc_hz),
			    true);
		return json_pack("{s:b}", "ok", 1);
	}
	return error("neigh: expected \"show\" or \"add IP MAC PORT\"%s", "");
}

char *ctl_command(struct sw *sw, const char *line)
{
	char buf[CTL_LINE_MAX], *argv[16], *save = NULL;
	int argc = 0;
	json_t *r;
	char *out;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *t = strtok_r(buf, " \t\r\n", &save); t && argc < 16;
	     t = strtok_r(NULL, " \t\r\n", &save))
		argv[argc++] = t;
	/* Commands read and change the CDT: the control thread is a QSBR reader
	 * while it serves one (it waits for commands offline, sw_control_poll). */
	rte_rcu_qsbr_thread_online(sw->qsbr, sw->nworkers);
	if (argc == 0)
		r = error("empty command%s", "");
	else if (!strcmp(argv[0], "stats"))
		r = cmd_stats(sw);
	else if (!strcmp(argv[0], "nodes"))
		r = cmd_nodes(sw);
	else if (!strcmp(argv[0], "debug"))
		r = cmd_debug(sw, argc > 1 ? argv[1] : NULL);
	else if (!strcmp(argv[0], "directory"))
		r = cmd_directory(sw, argc > 1 ? argv[1] : NULL);
	else if (!strcmp(argv[0], "neigh"))
		r = cmd_neigh(sw, argv + 1, argc - 1);
	else if (!strcmp(argv[0], "peers"))
		r = cluster_json(sw);
	else if (!strcmp(argv[0], "cdt") && argc >= 2 && !strcmp(argv[1], "show"))
		r = cmd_cdt_show(sw, argc > 2 ? argv[2] : NULL);
	else if (!strcmp(argv[0], "cdt") && argc >= 2 && !strcmp(argv[1], "pin"))
		r = cmd_cdt_pin(sw, argv + 2, argc - 2);
	else if (!strcmp(argv[0], "cdt") && argc >= 2 && !strcmp(argv[1], "unpin"))
		r = cmd_cdt_unpin(sw, argc > 2 ? argv[2] : NULL);
	else
		r = error("unknown command \"%s\" (stats, nodes, peers, cdt show|pin|unpin, "
			  "directory, debug, neigh)",
			  argv[0]);
	rte_rcu_qsbr_thread_offline(sw->qsbr, sw->nworkers);
	out = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	return out;
}

/* ---- Socket. ------------------------------------------------------------------------------ */

/*
 * Clear the way for binding sa: nothing there, or a socket nobody listens on
 * (a previous run's), which is removed. Anything else is an error: a file
 * that is not a socket is never deleted, and a live switch keeps its socket.
 */
static int remove_stale_socket(const struct sockaddr_un *sa, char *err, size_t errlen)
{
	struct stat st;
	int fd, live;

	if (lstat(sa->sun_path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen,
			 "control socket %s: exists and is not a socket; not removing it",
			 sa->sun_path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	live = fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	if (fd >= 0)
		close(fd);
	if (live) {
		snprintf(err, errlen,
			 "control socket %s: another process is listening on it (a switch with "
			 "the same control_socket?)",
			 sa->sun_path);
		return -1;
	}
	unlink(sa->sun_path); /* a stale socket of a previous run */
	return 0;
}

int ctl_open(struct sw *sw, const char *path, bool no_telemetry, char *err, size_t errlen)
{
	struct ctl *c = calloc(1, sizeof(*c));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	sw->ctl = c;
	c->listen_fd = -1;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		c->clients[i].fd = -1;
	if (!no_telemetry && !tel_sw)
		tel_sw = sw;
	if (!path)
		path = sw->self->control_socket;
	if (!*path)
		return 0;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "control socket %s: path too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (remove_stale_socket(&sa, err, errlen) != 0)
		return -1;
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->listen_fd < 0 || bind(c->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(c->listen_fd, 8) != 0) {
		snprintf(err, errlen, "control socket %s: %s (does its directory exist?)", path,
			 strerror(errno));
		return -1;
	}
	snprintf(c->path, sizeof(c->path), "%s", path); /* ours now: removed at exit */
	return 0;
}

void ctl_close(struct sw *sw)
{
	struct ctl *c = sw->ctl;

	if (tel_sw == sw)
		tel_sw = NULL;
	if (!c)
		return;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		if (c->clients[i].fd >= 0) {
			close(c->clients[i].fd);
			free(c->clients[i].buf);
		}
	if (c->listen_fd >= 0) {
		close(c->listen_fd);
		if (c->path[0])
			unlink(c->path);
	}
	free(c);
	sw->ctl = NULL;
}

static void client_drop(struct ctl_client *cl)
{
	close(cl->fd);
	free(cl->buf);
	cl->fd = -1;
	cl->buf = NULL;
	cl->len = 0;
}

/* Read what a client sent; answer each complete line. */
static void client_serve(struct sw *sw, struct ctl_client *cl)
{
	char tmp[4096];
	ssize_t n = read(cl->fd, tmp, sizeof(tmp));
	char *nl;

	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			client_drop(cl);
		return;
	}
	if (cl->len + (size_t)n >= CTL_LINE_MAX) {
		client_drop(cl);
		return;
	}
	char *nb = realloc(cl->buf, cl->len + (size_t)n + 1);

	if (!nb) {
		client_drop(cl);
		return;
	}
	cl->buf = nb;
	memcpy(cl->buf + cl->len, tmp, (size_t)n);
	cl->len += (size_t)n;
	cl->buf[cl->len] = 0;
	while ((nl = memchr(cl->buf, '\n', cl->len)) != NULL) {
		*nl = 0;
		char *out = ctl_command(sw, cl->buf);
		size_t rest = cl->len - (size_t)(nl + 1 - cl->buf);

		if (out) {
			/* Answers are small; a client that stops reading is dropped. */
			size_t olen = strlen(out), off = 0;

			out[olen] = 0;
			while (off < olen) {
				ssize_t w = send(cl->fd, out + off, olen - off, MSG_NOSIGNAL);

				if (w < 0 && errno == EAGAIN) {
					struct pollfd pf = {.fd = cl->fd, .events = POLLOUT};

					if (poll(&pf, 1, 1000) <= 0)
						break;
					continue;
				}
				if (w <= 0)
					break;
				off += (size_t)w;
			}
			if (off == olen)
				(void)!send(cl->fd, "\n", 1, MSG_NOSIGNAL);
			free(out);
		}
		memmove(cl->buf, nl + 1, rest);
		cl->len = rest;
		cl->buf[cl->len] = 0;
	}
}

void ctl_poll(struct sw *sw, int timeout_ms)
{
	struct ctl *c = sw->ctl;
	struct pollfd pf[CTL_MAX_CLIENTS + 2];
	eventfd_t woken;
	int n = 0;

	/* Index 0: a worker's wake-up (directory.c), which ends the wait early. */
	pf[n++] = (struct pollfd){.fd = sw->wake_fd, .events = POLLIN};
	if (c && c->listen_fd >= 0) {
		pf[n++] = (struct pollfd){.fd = c->listen_fd, .events = POLLIN};
		for (int i = 0; i < CTL_MAX_CLIENTS; i++)
			pf[n++] = (struct pollfd){.fd = c->clients[i].fd, .events = POLLIN};
	}
	if (poll(pf, (nfds_t)n, timeout_ms) <= 0)
		return;
	if (pf[0].revents & POLLIN)
		(void)!eventfd_read(sw->wake_fd, &woken);
	if (n == 1)
		return;
	if (pf[1].revents & POLLIN) {
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			int i;

			for (i = 0; i < CTL_MAX_CLIENTS && c->clients[i].fd >= 0; i++)
				;
			if (i == CTL_MAX_CLIENTS)
				close(fd);
			else
				c->clients[i].fd = fd;
		}
	}
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		if (c->clients[i].fd >= 0 && pf[i + 2].fd == c->clients[i].fd &&
		    (pf[i + 2].revents & (POLLIN | POLLHUP | POLLERR)))
			client_serve(sw, &c->clients[i]);
}

/* ---- Telemetry (its own thread: QSBR reader nworkers + 1, serialised by tel_lock). ------ */

static int tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct sw *sw = tel_sw;

	(void)cmd;
	(void)params;
	if (!sw)
		return -1;
	rte_tel_data_start_dict(d);
	for (int c = 0; c < SW_CNT_COUNT; c++) {
		char name[80];

		snprintf(name, sizeof(name), "%s%s",
			 sw_counter_kind(c) == SW_CNT_DROP ? "drop_" : "", sw_counter_name(c));
		rte_tel_data_add_dict_u64(d, name, sw_counter(sw, c));
	}
	for (uint16_t p = 0; p < sw->nports; p++)
		for (int c = 0; c < SW_PCNT_COUNT; c++) {
			char name[128];

			snprintf(name, sizeof(name), "port_%s_%s", sw->ports[p].name,
				 sw_port_counter_name(c));
			rte_tel_data_add_dict_u64(d, name, sw_port_counter(sw, p, c));
		}
	return 0;
}

static int tel_nodes(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct sw *sw = tel_sw;

	(void)cmd;
	(void)params;
	if (!sw)
		return -1;
	rte_tel_data_start_dict(d);
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		const struct cfg_node *n = &sw->cfg->nodes[i];
		struct rte_tel_data *nd = rte_tel_data_alloc();

		if (!nd)
			return -1;
		rte_tel_data_start_dict(nd);
		rte_tel_data_add_dict_u64(nd, "id", n->id);
		rte_tel_data_add_dict_int(nd, "inflight", scores_inflight(&sw->scores, n->id));
		rte_tel_data_add_dict_u64(nd, "health", scores_health(&sw->scores, n->id));
		rte_tel_data_add_dict_u64(nd, "alive", scores_alive(&sw->scores, n->id));
		rte_tel_data_add_dict_string(nd, "state",
					     scores_state_name(sw->scores.state[n->id]));
		rte_tel_data_add_dict_container(d, n->name, nd, 0);
	}
	return 0;
}

static int tel_cdt(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct sw *sw = tel_sw;
	uint32_t it = 0;
	struct cdt_entry *e;
	unsigned shown = 0;

	(void)cmd;
	(void)params;
	if (!sw)
		return -1;
	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&sw->tel_lock);
	rte_rcu_qsbr_thread_online(sw->qsbr, sw->nworkers + 1u);
	/* Telemetry answers are bounded (16 KiB): show the first 64 entries. */
	while ((e = cdt_next(sw->cdt, &it)) != NULL && shown < 64) {
		const struct cdt_state *st = cdt_entry_state(e);
		char kh[20], val[160];
		size_t off;

		snprintf(kh, sizeof(kh), "%016llx", (unsigned long long)e->keyhash);
		off = (size_t)snprintf(val, sizeof(val),
				       "home=%s completed=%llu replicas=", node_name(sw, e->home),
				       (unsigned long long)st->completed);
		for (unsigned i = 0; i < st->nreplicas && off < sizeof(val); i++)
			off += (size_t)snprintf(val + off, sizeof(val) - off, "%s%s", i ? "," : "",
						node_name(sw, st->replicas[i]));
		rte_tel_data_add_dict_string(d, kh, val);
		shown++;
	}
	rte_rcu_qsbr_thread_offline(sw->qsbr, sw->nworkers + 1u);
	pthread_mutex_unlock(&sw->tel_lock);
	return 0;
}

static int tel_peers(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct sw *sw = tel_sw;
	struct cluster_row rows[PEER_MAX];
	bool leased = false;
	unsigned n;

	(void)cmd;
	(void)params;
	if (!sw)
		return -1;
	n = cluster_rows_snapshot(sw, rows, &leased);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "peers_configured", sw->npeers);
	rte_tel_data_add_dict_u64(d, "leased", leased);
	for (unsigned i = 0; i < n; i++) {
		struct rte_tel_data *pd = rte_tel_data_alloc();

		if (!pd)
			return -1;
		rte_tel_data_start_dict(pd);
		rte_tel_data_add_dict_u64(pd, "id", rows[i].id);
		rte_tel_data_add_dict_u64(pd, "self", rows[i].self);
		rte_tel_data_add_dict_u64(pd, "live", rows[i].live);
		rte_tel_data_add_dict_u64(pd, "lease", rows[i].lease);
		rte_tel_data_add_dict_int(pd, "last_sync_ms", (int)rows[i].last_sync_ms);
		rte_tel_data_add_dict_int(pd, "lag_ms", (int)rows[i].lag_ms);
		rte_tel_data_add_dict_u64(pd, "window", rows[i].window);
		rte_tel_data_add_dict_u64(pd, "owned_keys", rows[i].owned_keys);
		rte_tel_data_add_dict_u64(pd, "claimed", rows[i].claimed);
		rte_tel_data_add_dict_container(d, rows[i].name, pd, 0);
	}
	return 0;
}

/* Registered once per process; the commands answer for tel_sw. */
__attribute__((constructor)) static void tel_register(void)
{
	rte_telemetry_register_cmd("/skewless/stats", tel_stats,
				   "Switch counters: events, drops by reason, per port");
	rte_telemetry_register_cmd("/skewless/nodes", tel_nodes,
				   "Per node: in-flight, health, alive, state");
	rte_telemetry_register_cmd("/skewless/peers", tel_peers,
				   "Peer switches: live, lease, last sync, lag, window, owned keys "
				   "(as of the last sync round)");
	rte_telemetry_register_cmd("/skewless/cdt", tel_cdt,
				   "Directory entries: home, completed version, replica set");
}
