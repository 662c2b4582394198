/*
 * daemon.c - assembling a switch (tables, ports, workers, control socket) and
 * the control thread's periodic work: digests, failure detection, in-flight
 * repair, ARP requests from the VIP, decision logs.
 *
 * The control thread is the single writer of node health and liveness and
 * the only thread that adds or removes CDT entries (see switchd.h); which
 * keys it holds is directory.c's business, run from here every round.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_random.h>
#include <rte_udp.h>

#include "clock.h"
#include "cluster.h"
#include "ctl.h"
#include "health.h"
#include "keyhash.h"
#include "log.h"
#include "switchd.h"

#define SW_MAC_AGE_S	 300
#define SW_NB_AGE_S	 300
#define SW_ARP_RETRY_MS	 100  /* at most one ARP per address bucket per 100 ms */
#define SW_NODE_ARP_MS	 1000 /* re-ARP nodes the switch cannot reach, every second */
#define SW_LOST_REPLY_MS 1000 /* in-flight with no reply for 1 s: the replies were lost */

static unsigned sw_seq; /* distinguishes DPDK object names of successive switches */

static int fail(char *err, size_t errlen, const char *fmt, const char *a)
{
	snprintf(err, errlen, fmt, a);
	return -1;
}

static int pick_lcores(struct sw *sw, char *err, size_t errlen)
{
	unsigned lc;

	if (sw->self->nlcores) {
		for (unsigned i = 0; i < sw->self->nlcores; i++) {
			lc = sw->self->lcores[i];
			if (lc >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lc) ||
			    lc == rte_get_main_lcore()) {
				snprintf(err, errlen,
					 "switches[%s].lcores: lcore %u is not an EAL worker lcore "
					 "(give it to EAL with -l, main lcore excluded)",
					 sw->self->name, lc);
				return -1;
			}
			sw->workers[sw->nworkers++] = (void *)(uintptr_t)(lc + 1);
		}
	} else {
		RTE_LCORE_FOREACH_WORKER(lc)
		{
			if (sw->nworkers < SW_MAX_WORKERS)
				sw->workers[sw->nworkers++] = (void *)(uintptr_t)(lc + 1);
		}
	}
	if (sw->nworkers == 0)
		return fail(err, errlen,
			    "no worker lcore: give EAL at least two lcores (-l 0,1): the main one "
			    "runs the control thread%s",
			    "");
	for (uint16_t i = 0; i < sw->nworkers; i++) {
		unsigned lcore = (unsigned)(uintptr_t)sw->workers[i] - 1;
		struct sw_worker *w = rte_zmalloc_socket("worker", sizeof(*w), RTE_CACHE_LINE_SIZE,
							 (int)rte_lcore_to_socket_id(lcore));

		if (!w)
			return fail(err, errlen, "out of memory%s", "");
		w->sw = sw;
		w->index = i;
		w->lcore = lcore;
		w->rng = rte_rand() | 1;
		w->sample_countdown = 1; /* the first request is sampled */
		sw->workers[i] = w;
	}
	return 0;
}

int sw_init(struct sw *sw, const struct cfg *cfg, const struct cfg_switch *self,
	    const struct sw_opts *opts, char *err, size_t errlen)
{
	char name[64];
	size_t qs;
	int rc;

	memset(sw, 0, sizeof(*sw));
	sw->wake_fd = -1;
	sw->cfg = cfg;
	sw->self = self;
	snprintf(sw->tag, sizeof(sw->tag), "%u_%u", self->id, sw_seq++);
	sw->vip = self->vip;
	memcpy(sw->mac.addr_bytes, self->mac, 6);
	sw->svc_port = cfg->service.port;
	sw->inline_mode = self->role == CFG_ROLE_INLINE;
	sw->close_ports = opts && opts->close_ports;
	sw->idle_sleep_us =
	    opts && opts->idle_sleep_us >= 0 ? (uint32_t)opts->idle_sleep_us : self->idle_sleep_us;
	sw->idle_polls = self->idle_polls ? self->idle_polls : 256;
	sw->tsc_hz = rte_get_tsc_hz();
	sw->drain_tsc = (sw->tsc_hz + 999999) / 1000000 * SW_DRAIN_US;
	pthread_mutex_init(&sw->tel_lock, NULL);
	for (unsigned i = 0; i < cfg->nnodes; i++) {
		sw->node_ip_be[cfg->nodes[i].id] = rte_cpu_to_be_32(cfg->nodes[i].ip);
		sw->node_port_be[cfg->nodes[i].id] = rte_cpu_to_be_16(cfg->nodes[i].port);
	}
	rc = cfg_build_ring(cfg, &sw->ring);
	if (rc != 0)
		return fail(err, errlen, "cannot build the ring: %s", strerror(-rc));
	if (pick_lcores(sw, err, errlen) != 0)
		return -1;

	/* QSBR threads: workers 0..n-1, the control thread n, telemetry n+1. */
	qs = rte_rcu_qsbr_get_memsize(sw->nworkers + 2u);
	sw->qsbr = rte_zmalloc("qsbr", qs, RTE_CACHE_LINE_SIZE);
	if (!sw->qsbr || rte_rcu_qsbr_init(sw->qsbr, sw->nworkers + 2u) != 0)
		return fail(err, errlen, "cannot create the QSBR variable%s", "");
	for (unsigned t = 0; t < sw->nworkers + 2u; t++)
		rte_rcu_qsbr_thread_register(sw->qsbr, t);

	sw->cdt = cdt_create(sw->tag, RTE_MAX(cfg->directory.max_keys, 1u), sw->nworkers, sw->qsbr,
			     sw->nworkers);
	if (!sw->cdt)
		return fail(err, errlen, "cannot create the directory: %s", strerror(errno));
	scores_init(&sw->scores, cfg, sw->nworkers);
	sw->no_digest_timeout = opts && opts->no_digest_timeout;
	sw->dig = calloc(1, sizeof(*sw->dig));
	if (!sw->dig || dig_table_init(sw->dig, &cfg->digest) != 0 ||
	    dig_table_track_all(sw->dig, cfg, clock_mono_us()) != 0)
		return fail(err, errlen, "cannot create the health table%s", "");
	sw->l2 = rte_zmalloc("l2", sizeof(*sw->l2), RTE_CACHE_LINE_SIZE);
	if (!sw->l2)
		return fail(err, errlen, "out of memory for the L2 tables%s", "");
	l2_init(sw->l2, cfg, opts && opts->mac_age_s ? opts->mac_age_s : SW_MAC_AGE_S, SW_NB_AGE_S);

	snprintf(name, sizeof(name), "dig_%s", sw->tag);
	sw->digest_ring = rte_ring_create(name, SW_DIGEST_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "arp_%s", sw->tag);
	sw->arp_ring =
	    rte_ring_create_elem(name, sizeof(uint32_t), SW_ARP_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "log_%s", sw->tag);
	sw->log_ring = rte_ring_create_elem(name, sizeof(struct sw_decision), SW_LOG_RING,
					    SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "sync_%s", sw->tag);
	sw->sync_ring = rte_ring_create(name, SW_SYNC_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "ctx_%s", sw->tag);
	sw->ctl_tx_ring =
	    rte_ring_create(name, SW_CTL_TX_RING, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!sw->digest_ring || !sw->arp_ring || !sw->log_ring || !sw->ctl_tx_ring ||
	    !sw->sync_ring)
		return fail(err, errlen, "cannot create rings: %s", rte_strerror(rte_errno));
	sw->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (sw->wake_fd < 0)
		return fail(err, errlen, "cannot create the control thread's eventfd: %s",
			    strerror(errno));

	if (dir_init(sw, err, errlen) != 0 || cluster_init(sw, err, errlen) != 0)
		return -1;
	if (ports_init(sw, err, errlen) != 0)
		return -1;
	if (ctl_open(sw, opts ? opts->socket_path : NULL, opts && opts->no_telemetry, err,
		     errlen) != 0)
		return -1;
	return 0;
}

int sw_start(struct sw *sw)
{
	/*
	 * Failure detection counts silence from now, not from sw_init(): port
	 * set-up (seconds on a NIC, ~0.5 s for nine TAPs) would otherwise pass for
	 * 3 silent intervals and mark every node down before its first digest
	 * could arrive, and a restarted switch would answer UNAVAILABLE meanwhile.
	 */
	int rc = dig_table_track_all(sw->dig, sw->cfg, clock_mono_us());

	if (rc != 0)
		return rc;
	for (uint16_t i = 0; i < sw->nworkers; i++) {
		rc = rte_eal_remote_launch(pipeline_main, sw->workers[i], sw->workers[i]->lcore);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Free the mbufs still queued in r (NULL: none). */
static void free_queued_mbufs(struct rte_ring *r)
{
	struct rte_mbuf *m;

	while (r && rte_ring_dequeue(r, (void **)&m) == 0)
		rte_pktmbuf_free(m);
}

void sw_fini(struct sw *sw)
{
	__atomic_store_n(&sw->stop, 1, __ATOMIC_RELAXED);
	for (uint16_t i = 0; i < sw->nworkers; i++)
		if (sw->workers[i])
			rte_eal_wait_lcore(sw->workers[i]->lcore);
	ctl_close(sw);
	if (sw->pool)
		ports_fini(sw);
	free_queued_mbufs(sw->digest_ring);
	free_queued_mbufs(sw->ctl_tx_ring);
	free_queued_mbufs(sw->sync_ring);
	rte_ring_free(sw->sync_ring);
	cluster_fini(sw);
	rte_ring_free(sw->ctl_tx_ring);
	rte_ring_free(sw->digest_ring);
	rte_ring_free(sw->arp_ring);
	rte_ring_free(sw->log_ring);
	if (sw->wake_fd >= 0)
		close(sw->wake_fd);
	sw->wake_fd = -1;
	dir_fini(sw);
	cdt_free(sw->cdt);
	/* Ports are stopped (closed by the daemon): no queue holds an mbuf any more. */
	rte_mempool_free(sw->pool);
	sw->pool = NULL;
	rte_free(sw->l2);
	free(sw->dig);
	sw->dig = NULL;
	rte_free(sw->qsbr);
	for (uint16_t i = 0; i < sw->nworkers; i++)
		rte_free(sw->workers[i]);
	ring_free(&sw->ring);
	pthread_mutex_destroy(&sw->tel_lock);
}

uint64_t sw_counter(const struct sw *sw, enum sw_counter c)
{
	uint64_t v = __atomic_load_n(&sw->ctl_counters[c], __ATOMIC_RELAXED);

	for (uint16_t i = 0; i < sw->nworkers; i++)
		v += __atomic_load_n(&sw->workers[i]->counters[c], __ATOMIC_RELAXED);
	return v;
}

uint64_t sw_port_counter(const struct sw *sw, uint16_t port, enum sw_port_counter c)
{
	uint64_t v = 0;

	for (uint16_t i = 0; i < sw->nworkers; i++)
		v += __atomic_load_n(&sw->workers[i]->port_counters[port][c], __ATOMIC_RELAXED);
	return v;
}

/* ---- ARP requests from the VIP. --------------------------------------------------------- */

void sw_send_arp_request(struct sw *sw, uint32_t ip)
{
	for (uint16_t p = 0; p < sw->nports; p++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(sw->pool);
		struct rte_ether_hdr *eth;
		struct rte_arp_hdr *arp;

		if (!m) {
			sw->ctl_counters[SW_CNT_DROP_NO_MBUF]++;
			return;
		}
		eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*arp));
		if (!eth) {
			rte_pktmbuf_free(m);
			return;
		}
		arp = (struct rte_arp_hdr *)(eth + 1);
		memset(eth->dst_addr.addr_bytes, 0xff, 6);
		eth->src_addr = sw->mac;
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
		arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
		arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
		arp->arp_hlen = 6;
		arp->arp_plen = 4;
		arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
		arp->arp_data.arp_sha = sw->mac;
		arp->arp_data.arp_sip = rte_cpu_to_be_32(sw->vip);
		memset(arp->arp_data.arp_tha.addr_bytes, 0, 6);
		arp->arp_data.arp_tip = rte_cpu_to_be_32(ip);
		m->port = p; /* port index: worker 0 sends it on its own TX queue */
		if (rte_ring_sp_enqueue(sw->ctl_tx_ring, m) != 0) {
			rte_pktmbuf_free(m);
			sw->ctl_counters[SW_CNT_DROP_NO_MBUF]++;
		}
	}
}

static void arp_for(struct sw *sw, uint32_t ip, uint64_t now);

/* Build msg as a datagram VIP:service.port -> ip:port to mac and queue it for worker 0. */
static int send_datagram(struct sw *sw, const uint8_t mac[6], uint8_t port, uint32_t dst_ip,
			 uint16_t dst_port, const struct wire_msg *msg);

int sw_send_to_node(struct sw *sw, uint16_t node, const struct wire_msg *msg)
{
	uint32_t ip = rte_be_to_cpu_32(sw->node_ip_be[node]);
	uint8_t mac[6], port;

	if (!l2_node_nb(sw->l2, node, mac, &port) || port >= sw->nports) {
		arp_for(sw, ip, rte_rdtsc());
		return -ENOENT;
	}
	return send_datagram(sw, mac, port, ip, rte_be_to_cpu_16(sw->node_port_be[node]), msg);
}

int sw_send_to_peer(struct sw *sw, uint16_t id, const uint8_t *value, size_t len)
{
	const struct cfg_switch *peer = cfg_switch_by_id(sw->cfg, id);
	uint8_t mac[6], port;
	uint64_t now = rte_rdtsc();

	if (!peer || len > WIRE_MAX_DATAGRAM - WIRE_HDR_LEN)
		return -EINVAL;
	if (!l2_nb_lookup(sw->l2, peer->vip, mac, &port, (uint32_t)(now / sw->tsc_hz)) ||
	    port >= sw->nports) {
		arp_for(sw, peer->vip, now);
		return -ENOENT;
	}
	struct wire_msg m = {
	    .op = WIRE_OP_SYNC,
	    .flags = WIRE_F_VIA_SWITCH,
	    .val_len = (uint32_t)len,
	    .value = value,
	};
	return send_datagram(sw, mac, port, peer->vip, sw->svc_port, &m);
}

static int send_datagram(struct sw *sw, const uint8_t mac[6], uint8_t port, uint32_t dst_ip,
			 uint16_t dst_port, const struct wire_msg *msg)
{
	size_t wlen = wire_len(msg);
	uint16_t frame_len = (uint16_t)(RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) +
					sizeof(struct rte_udp_hdr) + wlen);
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	struct rte_mbuf *m;

	m = rte_pktmbuf_alloc(sw->pool);
	if (!m)
		return -ENOMEM;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, frame_len);
	if (!eth) {
		rte_pktmbuf_free(m);
		return -ENOMEM;
	}
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	udp = (struct rte_udp_hdr *)(ip + 1);
	memcpy(eth->dst_addr.addr_bytes, mac, 6);
	eth->src_addr = sw->mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + sizeof(*udp) + wlen));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(sw->vip);
	ip->dst_addr = rte_cpu_to_be_32(dst_ip);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(sw->svc_port);
	udp->dst_port = rte_cpu_to_be_16(dst_port);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(sizeof(*udp) + wlen));
	udp->dgram_cksum = 0;
	if (wire_encode(msg, udp + 1, wlen) < 0) {
		rte_pktmbuf_free(m);
		return -EINVAL;
	}
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	m->port = port; /* port index: worker 0 sends it on its own TX queue */
	if (rte_ring_sp_enqueue(sw->ctl_tx_ring, m) != 0) {
		rte_pktmbuf_free(m);
		return -ENOMEM;
	}
	return 0;
}

/* Rate-limited: one request per address bucket per SW_ARP_RETRY_MS. */
static void arp_for(struct sw *sw, uint32_t ip, uint64_t now)
{
	uint32_t b = (ip * 2654435761u) % L2_NB_SETS;

	if (ip == 0 || now - sw->arp_last_tsc[b] < sw->tsc_hz / 1000 * SW_ARP_RETRY_MS)
		return;
	sw->arp_last_tsc[b] = now;
	sw_send_arp_request(sw, ip);
}

/* ---- Digests and failure detection. --------------------------------------------------- */

/* The UDP payload of a DIGEST frame the fast path already validated. */
static const uint8_t *digest_payload(struct rte_mbuf *m, size_t *len)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)((uint8_t *)ip + rte_ipv4_hdr_len(ip));

	*len = rte_be_to_cpu_16(udp->dgram_len) - sizeof(*udp);
	return (const uint8_t *)(udp + 1);
}

/*
 * Digests (from the workers' ring) into the health table, failure detection,
 * then the fast path's view: health and alive per node. The control thread is
 * the only writer of both tables.
 */
static void take_digests(struct sw *sw, uint64_t now)
{
	struct rte_mbuf *m;

	while (rte_ring_sc_dequeue(sw->digest_ring, (void **)&m) == 0) {
		size_t len;
		const uint8_t *p = digest_payload(m, &len);

		if (dig_table_receive_datagram(sw->dig, p, len, now) == 0)
			sw->digests_received++;
		rte_pktmbuf_free(m);
	}
	if (!sw->no_digest_timeout)
		dig_table_tick(sw->dig, now);
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;
		enum scores_state st;
		uint8_t health = dig_health(sw->dig, id);

		bool alive = dig_alive(sw->dig, id);

		if (cluster_node_score(sw, id, now, &health, &alive) > 0)
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
	struct sw_decision d;

	while (rte_ring_sc_dequeue_elem(sw->log_ring, &d, sizeof(d)) == 0) {
		char line[LOG_KEEP_WIDTH];

		format_decision(sw, &d, line, sizeof(line));
		log_info("decision %s", line);
		log_keep_add(&sw->decisions, line);
	}
}

/* ---- The control loop body. -------------------------------------------------------------- */

void sw_control_poll(struct sw *sw, int timeout_ms)
{
	uint64_t now = rte_rdtsc(), now_u = clock_mono_us();
	uint32_t ip;

	rte_rcu_qsbr_thread_online(sw->qsbr, sw->nworkers);
	take_digests(sw, now_u);
	cluster_poll(sw, now_u);
	dir_poll(sw, now_u);
	take_logs(sw);
	while (rte_ring_sc_dequeue_elem(sw->arp_ring, &ip, sizeof(ip)) == 0)
		arp_for(sw, ip, now);
	if (now - sw->last_tick_tsc >= sw->tsc_hz / 1000 * SW_NODE_ARP_MS) {
		uint8_t mac[6], port;

		sw->last_tick_tsc = now;
		for (unsigned i = 0; i < sw->cfg->nnodes; i++)
			if (!l2_node_nb(sw->l2, sw->cfg->nodes[i].id, mac, &port))
				arp_for(sw, sw->cfg->nodes[i].ip, now);
		scores_forget_lost(&sw->scores, now, sw->tsc_hz / 1000 * SW_LOST_REPLY_MS);
	}
	rte_rcu_qsbr_quiescent(sw->qsbr, sw->nworkers);
	/* Offline while blocked in poll(): no worker's reclamation waits on us. */
	rte_rcu_qsbr_thread_offline(sw->qsbr, sw->nworkers);
	ctl_poll(sw, timeout_ms);
}

/* ---- Pins (control thread). ------------------------------------------------------------ */

struct cdt_entry *sw_pin(struct sw *sw, const void *key, size_t key_len, const uint16_t *force,
			 unsigned nforce, uint8_t want)
{
	uint64_t kh = keyhash(key, key_len);
	uint16_t home = ring_home(&sw->ring, kh);
	struct cdt_entry *e = cdt_find(sw->cdt, kh);

	if (nforce)
		e = cdt_install(sw->cdt, kh, key, key_len, home, force, nforce, 0);
	else if (!e || !cdt_entry_is(e, key, key_len))
		e = cdt_install(sw->cdt, kh, key, key_len, home, &home, 1, 0);
	if (e) {
		e->pinned = 1;
		e->want_replicas = want;
	}
	return e;
}
