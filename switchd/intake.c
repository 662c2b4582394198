/*
 * intake.c - the rings the workers fill, taken in by the control thread
 * (see intake.h), and the node rows built from what they taught.
 */
#include "intake.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include <rte_ip.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_telemetry.h>
#include <rte_udp.h>

#include "ctl.h"
#include "egress.h"
#include "fmt.h"
#include "health.h"
#include "log.h"
#include "peer_sync.h"
#include "prom.h"
#include "reconcile.h"
#include "ring_change.h"
#include "switchd.h"
#include "views.h"

#define IN_LOST_REPLY_MS 1000 /* in-flight with no reply for 1 s: the replies were lost */

/* A sampled request key; its size is a multiple of 4 as rte_ring elements need. */
struct in_sample {
	uint64_t keyhash;
	uint16_t key_len;
	uint8_t write; /* a PUT or DEL */
	uint8_t pad;
	uint8_t key[HOT_MAX_KEY];
};

struct intake {
	struct rte_ring *samples;     /* workers -> control thread */
	struct rte_ring *completions; /* workers -> control thread */
	uint64_t last_lost_tsc;
	uint64_t digests_received;
	struct log_keep decisions; /* the newest decision-log lines, for cdtctl debug show */
};

static void register_commands(struct sw *sw);

int intake_init(struct sw *sw, char *err, size_t errlen)
{
	struct intake *in = calloc(1, sizeof(*in));
	char name[64];

	if (!in) {
		snprintf(err, errlen, "out of memory for the control thread's intake");
		return -1;
	}
	sw->intake = in;
	snprintf(name, sizeof(name), "dsmp_%s", sw->tag);
	in->samples = rte_ring_create_elem(name, sizeof(struct in_sample), SW_SAMPLE_RING,
					   SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "dcmp_%s", sw->tag);
	in->completions = rte_ring_create_elem(name, sizeof(struct reconcile_completion),
					       SW_COMPLETION_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (!in->samples || !in->completions) {
		snprintf(err, errlen, "cannot create the hot-key detector: %s",
			 rte_strerror(rte_errno ? rte_errno : ENOMEM));
		return -1;
	}
	sw->sample_every = sw->cfg->directory.sample_every;
	register_commands(sw);
	return 0;
}

void intake_fini(struct sw *sw)
{
	struct intake *in = sw->intake;

	if (!in)
		return;
	rte_ring_free(in->samples);
	rte_ring_free(in->completions);
	free(in);
	sw->intake = NULL;
}

uint64_t intake_digests_received(const struct sw *sw)
{
	return sw->intake->digests_received;
}

/* ---- Workers. ------------------------------------------------------------------------------ */

void intake_sample(struct sw_worker *w, const struct wire_msg *msg, bool rider)
{
	struct in_sample s;

	if (msg->key_len > HOT_MAX_KEY)
		return; /* never installed (hot.h): not worth a sample */
	s.keyhash = msg->keyhash;
	s.key_len = msg->key_len;
	s.write = !rider && (msg->op == WIRE_OP_PUT || msg->op == WIRE_OP_DEL);
	s.pad = 0;
	memcpy(s.key, msg->key, msg->key_len);
	if (rte_ring_mp_enqueue_elem(w->sw->intake->samples, &s, sizeof(s)) == 0)
		w->counters[SW_CNT_HOT_SAMPLES]++;
	else
		w->counters[SW_CNT_HOT_SAMPLES_DROPPED]++;
}

void intake_completed(struct sw_worker *w, uint64_t keyhash, uint64_t version)
{
	struct reconcile_completion c = {.keyhash = keyhash, .version = version};

	/* Wake the control thread: until the copy is out, every read of the key
	 * goes to its home. One system call per write to a directory key. */
	if (rte_ring_mp_enqueue_elem(w->sw->intake->completions, &c, sizeof(c)) == 0)
		(void)!eventfd_write(w->sw->wake_fd, 1);
}

/* ---- Digests, SYNCs and failure detection. --------------------------------------------- */

/*
 * The datagram of a DIGEST or SYNC frame the fast path already validated;
 * with a key, without the MAC the fast path checked.
 */
static const uint8_t *udp_payload(const struct sw *sw, struct rte_mbuf *m, size_t *len)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)((uint8_t *)ip + rte_ipv4_hdr_len(ip));

	*len = rte_be_to_cpu_16(udp->dgram_len) - sizeof(*udp) - (sw->keyed ? WIRE_MAC_LEN : 0);
	return (const uint8_t *)(udp + 1);
}

/*
 * Whether a DIGEST the fast path took (its source address is the node's own,
 * pipeline.c) came in on the port the L2 table has that node behind (m->port
 * holds the port index it came in on); true while that port is not known yet.
 */
static bool on_node_port(const struct sw *sw, const struct rte_mbuf *m, uint16_t node)
{
	uint8_t mac[6], port;

	return !l2_node_nb(sw->l2, node, mac, &port) || port == m->port;
}

/* The nodes' replies the workers saw, as signs of life for failure detection. */
static void heard(struct sw *sw, uint64_t now_us)
{
	uint64_t now_tsc = rte_rdtsc();

	for (unsigned id = 1; id < SCORES_NODES && id < DIG_NODES; id++) {
		uint64_t at = __atomic_load_n(&sw->scores.last_reply_tsc[id], __ATOMIC_RELAXED);
		uint64_t ago_us;

		if (!at)
			continue;
		/* A reply stored after now_tsc was read is as recent as now. */
		ago_us = now_tsc > at ? (now_tsc - at) / (sw->tsc_hz / 1000000u + 1) : 0;
		if (ago_us < now_us)
			dig_table_heard(sw->dig, (uint16_t)id, now_us - ago_us);
	}
}

/*
 * Whether every worker has polled its ports within a digest interval. One
 * that has not (the switch was stopped, or its lcores starved) may have
 * digests waiting unread in its receive rings: that silence is the switch's,
 * not the nodes', and no node is judged by it.
 */
static bool workers_polling(const struct sw *sw)
{
	uint64_t now_tsc = rte_rdtsc();
	uint64_t limit = sw->tsc_hz / 1000 * sw->cfg->digest.interval_ms;

	for (uint16_t i = 0; i < sw->nworkers; i++) {
		uint64_t at = __atomic_load_n(&sw->workers[i]->last_drain_tsc, __ATOMIC_RELAXED);

		if (now_tsc > at && now_tsc - at > limit)
			return false;
	}
	return true;
}

/* Digests (from the workers' ring) into the health table, then failure detection. */
static void take_digests(struct sw *sw, uint64_t now)
{
	struct rte_mbuf *m;

	while (rte_ring_sc_dequeue(sw->digest_ring, (void **)&m) == 0) {
		size_t len;
		const uint8_t *p = udp_payload(sw, m, &len);
		struct wire_msg ring_reply; /* or a view's */

		if (len > WIRE_OFF_OP && (p[WIRE_OFF_OP] == (WIRE_OP_RING | WIRE_REPLY) ||
					  p[WIRE_OFF_OP] == (WIRE_OP_VIEW | WIRE_REPLY))) {
			/* A node's answer to a ring change or a view (pipeline.c checked its source). */
			if (wire_decode(p, len, &ring_reply) == WIRE_OK) {
				if (ring_reply.op == (WIRE_OP_RING | WIRE_REPLY))
					ring_change_take_reply(sw, &ring_reply);
				else
					views_take_reply(sw, &ring_reply);
			}
			rte_pktmbuf_free(m);
			continue;
		}
		if (!on_node_port(sw, m, wire_get16(p + WIRE_OFF_NODE))) {
			sw->ctl_counters[SW_CNT_DROP_DIGEST_PORT]++;
			rte_pktmbuf_free(m);
			continue;
		}
		if (dig_table_receive_datagram(sw->dig, p, len, now) == 0)
			sw->intake->digests_received++;
		rte_pktmbuf_free(m);
	}
	if (sw->no_digest_timeout)
		return;
	if (!workers_polling(sw)) {
		sw->ctl_counters[SW_CNT_DETECTION_PAUSED]++;
		return;
	}
	heard(sw, now);
	dig_table_tick(sw->dig, now);
}

static void take_syncs(struct sw *sw, uint64_t now_us)
{
	struct rte_mbuf *m;

	while (rte_ring_sc_dequeue(sw->sync_ring, (void **)&m) == 0) {
		size_t len;
		const uint8_t *p = udp_payload(sw, m, &len);

		peer_sync_receive(sw, p, len, now_us);
		rte_pktmbuf_free(m);
	}
}

/*
 * The fast path's view of each node: health and alive, from our digests or,
 * when those are stale, a peer's. The control thread is the only writer.
 */
static void publish_scores(struct sw *sw, uint64_t now)
{
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;
		enum scores_state st;
		uint8_t health = dig_health(sw->dig, id);

		bool alive = dig_alive(sw->dig, id);

		if (peer_sync_node_score(sw, id, now, &health, &alive) > 0)
			st = alive ? SCORES_UP
				   : SCORES_DOWN; /* our digests are stale: a peer's view */
		else if (!alive)
			st = SCORES_DOWN;
		else if (sw->dig->node[id].received == 0)
			st = SCORES_UNKNOWN; /* tracked, no digest yet: routed to, health 100 */
		else
			st = SCORES_UP;
		if (sw->scores.state[id] != st || sw->scores.health[id] != health)
			scores_set(&sw->scores, id, health, st);
	}
}

/* ---- Samples and completions. ----------------------------------------------------------- */

static void take_samples(struct sw *sw)
{
	struct in_sample s;
	bool on = __atomic_load_n(&sw->dir_on, __ATOMIC_RELAXED);

	while (rte_ring_sc_dequeue_elem(sw->intake->samples, &s, sizeof(s)) == 0)
		if (on)
			hot_observe(sw->hot, s.keyhash, s.key, s.key_len, s.write);
}

/* At most a ring's worth per round (what reconcile queues); the rest waits for the next. */
static void take_completions(struct sw *sw)
{
	struct reconcile_completion c;

	for (unsigned n = 0; n < SW_COMPLETION_RING &&
			     rte_ring_sc_dequeue_elem(sw->intake->completions, &c, sizeof(c)) == 0;
	     n++)
		reconcile_completed(sw, c.keyhash, c.version);
}

/* ---- Decision logs. ------------------------------------------------------------------------ */

/* Render a decision record as the log line cdtctl debug show prints. */
static void format_decision(const struct sw *sw, const struct sw_decision *d, char *line,
			    size_t cap)
{
	char key[2 * sizeof(d->key) + 1];
	const struct cfg_node *cn = cfg_node_by_id(sw->cfg, d->chosen);
	const struct cfg_node *hn = cfg_node_by_id(sw->cfg, d->home);
	bool printable = true;
	size_t off;

	for (unsigned i = 0; i < d->key_len; i++)
		if (d->key[i] <= 0x20 || d->key[i] > 0x7e)
			printable = false;
	if (printable)
		snprintf(key, sizeof(key), "%.*s", d->key_len, d->key);
	else
		cfg_format_hex(d->key, d->key_len, key);
	off = (size_t)snprintf(line, cap, "key=%s op=%s dir=%s home=%s chosen=%s", key,
			       wire_op_name(d->op), d->in_directory ? "yes" : "no",
			       hn ? hn->name : "?", cn ? cn->name : "none");
	/* The chosen node's figures first, then every other candidate's. */
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < d->trace.n && off < cap; i++) {
			const struct cfg_node *n = cfg_node_by_id(sw->cfg, d->trace.cand[i].node);
			bool is_chosen = d->trace.cand[i].node == d->chosen;

			if (is_chosen != (pass == 0))
				continue;
			if (is_chosen)
				off += (size_t)snprintf(
				    line + off, cap - off, " inflight=%d health=%u",
				    d->trace.cand[i].inflight, d->trace.cand[i].health);
			else
				off += (size_t)snprintf(
				    line + off, cap - off, "; %s inflight=%d health=%u%s",
				    n ? n->name : "?", d->trace.cand[i].inflight,
				    d->trace.cand[i].health, d->trace.cand[i].alive ? "" : " down");
		}
}

static void take_logs(struct sw *sw)
{
	struct intake *in = sw->intake;
	struct sw_decision d;

	while (rte_ring_sc_dequeue_elem(sw->log_ring, &d, sizeof(d)) == 0) {
		char line[LOG_KEEP_WIDTH];

		format_decision(sw, &d, line, sizeof(line));
		log_info("decision %s", line);
		log_keep_add(&in->decisions, line);
	}
}

/* ---- The intake stage. ------------------------------------------------------------------- */

void intake_run(struct sw *sw, uint64_t now_tsc, uint64_t now_us)
{
	struct intake *in = sw->intake;
	uint32_t ip;

	take_digests(sw, now_us);
	if (peer_sync_on(sw))
		take_syncs(sw, now_us);
	publish_scores(sw, now_us);
	take_samples(sw);
	take_completions(sw);
	take_logs(sw);
	while (rte_ring_sc_dequeue_elem(sw->arp_ring, &ip, sizeof(ip)) == 0)
		egress_arp(sw, ip, now_tsc);
	if (now_tsc - in->last_lost_tsc >= sw->tsc_hz / 1000 * IN_LOST_REPLY_MS) {
		in->last_lost_tsc = now_tsc;
		scores_forget_lost(&sw->scores, now_tsc, sw->tsc_hz / 1000 * IN_LOST_REPLY_MS);
	}
}

/* ---- Node rows: `nodes` and /skewless/nodes. ----------------------------------------------- */

/* One node as the switch sees it, for the socket's JSON and telemetry alike. */
static void format_node(const struct sw *sw, const struct cfg_node *n, struct fmt *f)
{
	char ip[16], mac[18];
	uint8_t m[6], port;
	bool known = l2_node_nb(sw->l2, n->id, m, &port);
	/* Whose digests the score comes from: this switch's, or a peer's. */
	const char *src = peer_sync_score_source(sw, n->id);
	struct dig_node_view dv = {0};

	dig_table_node(sw->dig, n->id, &dv);
	fmt_int(f, "id", n->id);
	fmt_str(f, "name", n->name);
	fmt_str(f, "ip", cfg_format_ipv4(n->ip, ip));
	fmt_gauge(f, "inflight", "Requests forwarded to the node and not answered yet",
		  scores_inflight(&sw->scores, n->id));
	fmt_gauge(f, "health", "The node's health score, 0..100 (0 while down)",
		  scores_health(&sw->scores, n->id));
	fmt_gauge(f, "weight", "The node's ring weight", n->weight);
	fmt_flag(f, "alive", "1 when the switch sends the node requests, 0 when down",
		 scores_alive(&sw->scores, n->id));
	fmt_state(f, "state", "The node's state as the switch sees it (the state label)",
		  scores_state_name(sw->scores.state[n->id]));
	fmt_str(f, "mac", known ? fmt_mac(m, mac) : NULL);
	fmt_str(f, "port", known && port < sw->nports ? sw->ports[port].name : NULL);
	fmt_str(f, "score_from", src ? src : sw->self->name);
	fmt_counter(f, "digests", "DIGESTs from the node accepted", dv.received);
	fmt_counter(f, "digests_lost", "DIGESTs from the node missing (gaps in their seq)",
		    dv.lost);
	fmt_gauge_double(f, "digest_loss_rate",
			 "Share of the node's DIGESTs lost since it (re)started: lost / (received "
			 "+ lost)",
			 dv.loss_rate);
	views_format_node(sw, n->id, f);
}

static json_t *cmd_nodes(struct sw *sw, int argc, char **argv, void *aux)
{
	json_t *arr = json_array();

	(void)argc;
	(void)argv;
	(void)aux;
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		struct fmt f;

		json_array_append_new(arr, fmt_json(&f));
		format_node(sw, &sw->cfg->nodes[i], &f);
	}
	return json_pack("{s:b, s:o}", "ok", 1, "nodes", arr);
}

/* debug on | off | show: decision logs for every request, and the last lines. */
static json_t *cmd_debug(struct sw *sw, int argc, char **argv, void *aux)
{
	const char *arg = argc > 0 ? argv[0] : NULL;
	struct intake *in = sw->intake;

	(void)aux;
	if (arg && !strcmp(arg, "on"))
		__atomic_store_n(&sw->debug, 1, __ATOMIC_RELAXED);
	else if (arg && !strcmp(arg, "off"))
		__atomic_store_n(&sw->debug, 0, __ATOMIC_RELAXED);
	else if (!arg || strcmp(arg, "show"))
		return ctl_error("debug: expected on, off or show, got \"%s\"", arg ? arg : "");
	json_t *lines = json_array();

	for (unsigned i = 0; i < log_keep_count(&in->decisions); i++)
		json_array_append_new(lines, json_string(log_keep_line(&in->decisions, i)));
	return json_pack("{s:b, s:b, s:o}", "ok", 1, "debug", sw->debug, "log", lines);
}

/*
 * /metrics: each node's row, labelled node="name"; the digest table's
 * counters and its decode errors by reason.
 */
static void metrics_nodes(struct sw *sw, struct prom *p)
{
	char name[96];

	for (int c = 0; c < DIG_CNT_COUNT; c++) {
		snprintf(name, sizeof(name), "skewless_switch_%s_total", dig_counter_name(c));
		prom_add(p, name, dig_counter_help(c), PROM_COUNTER, NULL, 0,
			 (double)__atomic_load_n(&sw->dig->counters[c], __ATOMIC_RELAXED));
	}
	for (int e = DIG_OK + 1; e < DIG_ERR_COUNT; e++) {
		const struct prom_label reason = {"reason", dig_error_name(e)};

		prom_add(p, "skewless_switch_digests_rejected_total",
			 "Digests that failed to decode, by reason", PROM_COUNTER, &reason, 1,
			 (double)__atomic_load_n(&sw->dig->decode_errors[e], __ATOMIC_RELAXED));
	}
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		const struct cfg_node *n = &sw->cfg->nodes[i];
		const struct prom_label label = {"node", n->name};
		struct fmt f;

		fmt_prom(&f, p, "skewless_switch_node_", &label, 1);
		format_node(sw, n, &f);
	}
}

static void register_commands(struct sw *sw)
{
	ctl_register(sw, "nodes", cmd_nodes, NULL);
	ctl_register(sw, "debug", cmd_debug, NULL);
	ctl_register_metrics(sw, metrics_nodes);
}

/* /skewless/nodes (telemetry thread): scores are atomics, the rest read-only. */
static int tel_nodes(struct sw *sw, struct rte_tel_data *d)
{
	int rc = 0;

	rte_tel_data_start_dict(d);
	/* A QSBR reader (nworkers + 1, under tel_lock): ring changes free replaced configs. */
	pthread_mutex_lock(&sw->tel_lock);
	rte_rcu_qsbr_thread_online(sw->qsbr, sw->nworkers + 1u);
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		const struct cfg_node *n = &sw->cfg->nodes[i];
		struct rte_tel_data *nd = rte_tel_data_alloc();
		struct fmt f;

		if (!nd) {
			rc = -1;
			break;
		}
		fmt_tel(&f, nd);
		format_node(sw, n, &f);
		rte_tel_data_add_dict_container(d, n->name, nd, 0);
	}
	rte_rcu_qsbr_thread_offline(sw->qsbr, sw->nworkers + 1u);
	pthread_mutex_unlock(&sw->tel_lock);
	return rc;
}

CTL_TELEMETRY("/skewless/nodes", tel_nodes,
	      "Per node: address, in-flight, health, weight, alive, state, "
	      "neighbour, whose digests the score comes from")
