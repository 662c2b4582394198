/*
 * ports.c - switchd's ports from the config: vdevs (net_tap, net_ring,
 * net_pcap, net_af_packet, ...) and PCI devices by address.
 *
 * A device EAL already created (--vdev, -a, or a test's rte_eth_from_rings)
 * is used as it is; anything else is hot-plugged with rte_dev_probe(). Every
 * port gets one RX queue per worker (as many as the device has, RSS spreading
 * over them where the device supports it), one TX queue per worker (the
 * control thread's frames go out through worker 0), the configured MTU or the
 * largest the device takes,
 * and promiscuous mode (inline L2 forwarding needs it; one-arm needs the VIP
 * MAC, which is not the device's own).
 *
 * It also owns the neighbours the ports reach: `neigh show` and `neigh add`.
 */
#include <dirent.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "ctl.h"
#include "fmt.h"
#include "switchd.h"

#define RSS_WANTED (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP)

/* The ethdev name of a config port: the vdev up to its first ',' or the PCI address. */
static void dev_name(const struct cfg_port *cp, char *buf, size_t cap)
{
	const char *src = cp->vdev[0] ? cp->vdev : cp->pci;
	size_t n = strcspn(src, ",");

	snprintf(buf, cap, "%.*s", (int)n, src);
}

static int find_or_probe(const struct cfg_port *cp, const char *name, uint16_t *pid)
{
	if (rte_eth_dev_get_port_by_name(name, pid) == 0)
		return 0;
	if (rte_dev_probe(cp->vdev[0] ? cp->vdev : cp->pci) < 0)
		return -1;
	return rte_eth_dev_get_port_by_name(name, pid);
}

/* l3fwd's sizing: RX rings + bursts in flight + TX rings + per-lcore caches, at least 8192. */
static unsigned pool_size(const struct sw *sw)
{
	unsigned nl = sw->nworkers + 1u; /* workers and the control thread */
	unsigned n = sw->nports * sw->nworkers * SW_NB_RXD + sw->nports * nl * SW_BURST +
		     sw->nports * nl * SW_NB_TXD + nl * SW_MEMPOOL_CACHE;

	/* Plus what switchd itself can hold: TX buffers and the rings of mbufs
	 * between workers and the control thread (digests, peers' SYNCs, and
	 * the control frames worker 0 sends) and the PUTs held for group
	 * commit, each counted full. */
	n += sw->nports * sw->nworkers * SW_BURST + SW_DIGEST_RING + SW_SYNC_RING + SW_CTL_TX_RING +
	     SW_BATCH_MAX_HELD;
	return RTE_MAX(n, 8192u);
}

static int port_setup(struct sw *sw, uint16_t idx, uint16_t mtu_want, char *err, size_t errlen)
{
	const struct cfg_port *cp = &sw->self->ports[idx];
	struct sw_port *sp = &sw->ports[idx];
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	uint16_t nrxd = SW_NB_RXD, ntxd = SW_NB_TXD, pid;
	int rc;

	dev_name(cp, sp->dev, sizeof(sp->dev));
	snprintf(sp->name, sizeof(sp->name), "%s", cp->name);
	if (find_or_probe(cp, sp->dev, &pid) != 0) {
		snprintf(err, errlen, "port %s: cannot create or find device \"%s\"", cp->name,
			 cp->vdev[0] ? cp->vdev : cp->pci);
		return -1;
	}
	sp->port_id = pid;
	rc = rte_eth_dev_info_get(pid, &info);
	if (rc != 0) {
		snprintf(err, errlen, "port %s: cannot read device info: %s", cp->name,
			 rte_strerror(-rc));
		return -1;
	}
	sp->nrxq = (uint16_t)RTE_MIN(sw->nworkers, info.max_rx_queues);
	/*
	 * One TX queue per worker lcore. The control thread sends (ARP) through
	 * worker 0 (sw->ctl_tx_ring), so every device works with as many queues
	 * as workers: net_tap insists on as many RX as TX queues.
	 */
	sp->ntxq = sw->nworkers;
	if (sp->nrxq == 0 || info.max_tx_queues < sp->ntxq ||
	    (!strncmp(sp->dev, "net_tap", 7) && sp->nrxq != sp->ntxq)) {
		snprintf(err, errlen,
			 "port %s: needs %u TX queues (one per worker lcore) and 1 RX queue; %s "
			 "has %u TX, %u RX",
			 cp->name, sw->nworkers, sp->dev, info.max_tx_queues, info.max_rx_queues);
		return -1;
	}
	memset(&conf, 0, sizeof(conf));
	conf.rx_adv_conf.rss_conf.rss_hf = RSS_WANTED & info.flow_type_rss_offloads;
	if (sp->nrxq > 1 && conf.rx_adv_conf.rss_conf.rss_hf)
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
	else
		conf.rx_adv_conf.rss_conf.rss_hf = 0;
	rc = rte_eth_dev_configure(pid, sp->nrxq, sp->ntxq, &conf);
	if (rc != 0) {
		snprintf(err, errlen, "port %s: configure failed: %s", cp->name, rte_strerror(-rc));
		return -1;
	}
	/* The configured MTU where the device takes it, else the largest it does. */
	sp->mtu = mtu_want;
	if (info.max_mtu && sp->mtu > info.max_mtu)
		sp->mtu = info.max_mtu;
	if (rte_eth_dev_set_mtu(pid, sp->mtu) != 0)
		rte_eth_dev_get_mtu(pid, &sp->mtu);
	rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nrxd, &ntxd);
	for (uint16_t q = 0; q < sp->nrxq; q++) {
		rc = rte_eth_rx_queue_setup(pid, q, nrxd, rte_eth_dev_socket_id(pid), NULL,
					    sw->pool);
		if (rc != 0) {
			snprintf(err, errlen, "port %s: RX queue %u: %s", cp->name, q,
				 rte_strerror(-rc));
			return -1;
		}
	}
	for (uint16_t q = 0; q < sp->ntxq; q++) {
		rc = rte_eth_tx_queue_setup(pid, q, ntxd, rte_eth_dev_socket_id(pid), NULL);
		if (rc != 0) {
			snprintf(err, errlen, "port %s: TX queue %u: %s", cp->name, q,
				 rte_strerror(-rc));
			return -1;
		}
	}
	rte_eth_macaddr_get(pid, &sp->mac);
	rc = rte_eth_dev_start(pid);
	if (rc != 0) {
		snprintf(err, errlen, "port %s: start failed: %s", cp->name, rte_strerror(-rc));
		return -1;
	}
	sp->started = true;
	sp->promiscuous = rte_eth_promiscuous_enable(pid) == 0;
	return 0;
}

/*
 * Wake: the AF_PACKET sockets net_af_packet opened for the kernel interface
 * ifindex (one per queue pair), into fds[0..cap). DPDK 22.11's net_af_packet
 * has no Rx interrupts, and nothing else tells a sleeping worker that a
 * frame came; the socket of a PACKET_MMAP ring is readable (poll()) while a
 * frame waits in it, so an idle worker sleeps in poll() on them. Found among
 * the process's descriptors by family and bound interface: the switch opens
 * no AF_PACKET socket of its own. Returns how many were found.
 */
static unsigned packet_sockets(int ifindex, struct pollfd *fds, unsigned cap)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned n = 0;

	if (!dir)
		return 0;
	while ((e = readdir(dir)) != NULL && n < cap) {
		struct sockaddr_ll ll;
		socklen_t len = sizeof(ll), dlen = sizeof(int);
		int fd = atoi(e->d_name), domain;

		if (e->d_name[0] == '.' || fd == dirfd(dir) ||
		    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) != 0 ||
		    domain != AF_PACKET || getsockname(fd, (struct sockaddr *)&ll, &len) != 0 ||
		    ll.sll_ifindex != ifindex)
			continue;
		fds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
	}
	closedir(dir);
	return n;
}

/* Each worker's wake descriptors: those of the ports it receives from. */
static void wake_setup(struct sw *sw)
{
	for (uint16_t wi = 0; wi < sw->nworkers; wi++) {
		struct sw_worker *w = sw->workers[wi];

		w->nwake = 0;
		for (uint16_t q = 0; q < w->nrxq; q++) {
			struct rte_eth_dev_info info;
			uint16_t p = w->rxq[q].port;

			if (strncmp(sw->ports[p].dev, "net_af_packet", 13) != 0 ||
			    rte_eth_dev_info_get(sw->ports[p].port_id, &info) != 0 ||
			    info.if_index == 0)
				continue;
			w->nwake += (uint16_t)packet_sockets((int)info.if_index, w->wake + w->nwake,
							     SW_MAX_WAKE - w->nwake);
		}
	}
}

static json_t *cmd_neigh(struct sw *sw, int argc, char **argv, void *aux);

int ports_init(struct sw *sw, char *err, size_t errlen)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	uint32_t frame = sw->cfg->service.mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + 8;
	uint32_t room = RTE_MAX((uint32_t)RTE_MBUF_DEFAULT_BUF_SIZE, RTE_PKTMBUF_HEADROOM + frame);

	ctl_register(sw, "neigh", cmd_neigh, NULL);
	sw->nports = sw->self->nports;
	snprintf(name, sizeof(name), "mb_%s", sw->tag);
	sw->pool = rte_pktmbuf_pool_create(name, pool_size(sw), SW_MEMPOOL_CACHE, 0, (uint16_t)room,
					   (int)rte_socket_id());
	if (!sw->pool) {
		snprintf(err, errlen, "mbuf pool of %u: %s", pool_size(sw),
			 rte_strerror(rte_errno));
		return -1;
	}
	for (uint16_t i = 0; i < sw->nports; i++)
		if (port_setup(sw, i, sw->cfg->service.mtu, err, errlen) != 0)
			return -1;
	/* Workers: RX queue w of every port that has one, TX queue w of every port. */
	for (uint16_t wi = 0; wi < sw->nworkers; wi++) {
		struct sw_worker *w = sw->workers[wi];

		for (uint16_t p = 0; p < sw->nports; p++) {
			if (wi < sw->ports[p].nrxq) {
				w->rxq[w->nrxq].port = p;
				w->rxq[w->nrxq].queue = wi;
				w->nrxq++;
			}
			w->txb[p] = rte_zmalloc_socket("txb", RTE_ETH_TX_BUFFER_SIZE(SW_BURST), 0,
						       rte_lcore_to_socket_id(w->lcore));
			if (!w->txb[p]) {
				snprintf(err, errlen, "out of memory for TX buffers");
				return -1;
			}
			rte_eth_tx_buffer_init(w->txb[p], SW_BURST);
			rte_eth_tx_buffer_set_err_callback(
			    w->txb[p], rte_eth_tx_buffer_count_callback,
			    &w->port_counters[p][SW_PCNT_TX_DROPPED]);
		}
	}
	wake_setup(sw);
	return 0;
}

void ports_fini(struct sw *sw)
{
	for (uint16_t i = 0; i < sw->nports; i++) {
		if (!sw->ports[i].started)
			continue;
		rte_eth_dev_stop(sw->ports[i].port_id);
		if (sw->close_ports)
			rte_eth_dev_close(sw->ports[i].port_id);
		sw->ports[i].started = false;
	}
	for (uint16_t wi = 0; wi < sw->nworkers; wi++)
		for (uint16_t p = 0; p < sw->nports; p++) {
			rte_free(sw->workers[wi]->txb[p]);
			sw->workers[wi]->txb[p] = NULL;
		}
}

/* ---- Neighbours: `neigh show`, `neigh add IP MAC PORT`. ------------------------------------ */

/* One neighbour, for `neigh show` and `neigh add`. */
static json_t *neighbour_json(const struct sw *sw, uint32_t ip, const uint8_t mac[6], uint8_t port,
			      bool is_static, uint16_t node)
{
	char ips[16], macs[18];
	struct fmt f;
	json_t *o = fmt_json(&f);

	fmt_str(&f, "ip", cfg_format_ipv4(ip, ips));
	fmt_str(&f, "mac", fmt_mac(mac, macs));
	fmt_str(&f, "port", port < sw->nports ? sw->ports[port].name : "?");
	fmt_bool(&f, "static", is_static);
	if (node)
		fmt_str(&f, "node", cfg_node_name(sw->cfg, node));
	return o;
}

static void nb_visit(void *arg, uint32_t ip, const uint8_t mac[6], uint8_t port, bool is_static,
		     uint16_t node)
{
	json_t **ctx = arg;

	json_array_append_new(ctx[0],
			      neighbour_json((struct sw *)ctx[1], ip, mac, port, is_static, node));
}

static json_t *cmd_neigh(struct sw *sw, int argc, char **argv, void *aux)
{
	(void)aux;
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
			return ctl_error("neigh add: bad IPv4 address \"%s\"", argv[1]);
		if (cfg_parse_mac(argv[2], mac) != 0)
			return ctl_error("neigh add: expected a MAC xx:xx:xx:xx:xx:xx, got \"%s\"",
					 argv[2]);
		if (!l2_nb_learnable(ip, mac))
			return ctl_error("neigh add: address 0.0.0.0 and multicast MACs are never "
					 "neighbours");
		for (uint16_t p = 0; p < sw->nports; p++)
			if (!strcmp(sw->ports[p].name, argv[3]))
				port = p;
		if (port < 0)
			return ctl_error("neigh add: no port named \"%s\"", argv[3]);
		l2_nb_learn(sw->l2, ip, mac, (uint8_t)port, (uint32_t)(rte_rdtsc() / sw->tsc_hz),
			    true);
		return json_pack("{s:b, s:o}", "ok", 1, "neighbour",
				 neighbour_json(sw, ip, mac, (uint8_t)port, true, 0));
	}
	return ctl_error("neigh: expected \"show\" or \"add IP MAC PORT\"");
}
