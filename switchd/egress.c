/*
 * egress.c - frames from the control thread (see egress.h): ARP requests,
 * datagrams from VIP:service.port to nodes and peer switches, all queued on
 * sw->ctl_tx_ring for worker 0 to send on its own TX queue.
 */
#include "egress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "auth.h"
#include "payload.h"
#include "switchd.h"

#define EGRESS_ARP_RETRY_MS 100  /* at most one ARP per address bucket per 100 ms */
#define EGRESS_NODE_ARP_MS	1000 /* re-ARP nodes the switch cannot reach, every second */

struct egress {
	uint64_t arp_last_tsc[L2_NB_SETS]; /* ARP rate limit per address bucket */
	uint64_t last_node_arp_tsc;
	struct egress_stats st;
};

int egress_init(struct sw *sw, char *err, size_t errlen)
{
	sw->egress = calloc(1, sizeof(*sw->egress));
	if (!sw->egress) {
		snprintf(err, errlen, "out of memory for the control thread's egress");
		return -1;
	}
	return 0;
}

void egress_fini(struct sw *sw)
{
	free(sw->egress);
	sw->egress = NULL;
}

void egress_get_stats(const struct sw *sw, struct egress_stats *out)
{
	*out = sw->egress->st;
}

/* ---- ARP requests from the VIP. --------------------------------------------------------- */

void egress_arp_request(struct sw *sw, uint32_t ip)
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

void egress_arp(struct sw *sw, uint32_t ip, uint64_t now)
{
	uint64_t *last = sw->egress->arp_last_tsc;
	uint32_t b = (ip * 2654435761u) % L2_NB_SETS;

	if (ip == 0 || now - last[b] < sw->tsc_hz / 1000 * EGRESS_ARP_RETRY_MS)
		return;
	last[b] = now;
	egress_arp_request(sw, ip);
}

/* ---- Datagrams from the VIP. ------------------------------------------------------------ */

/* Build msg as a datagram VIP:service.port -> ip:port to mac and queue it for worker 0. */
static int send_datagram(struct sw *sw, const uint8_t mac[6], uint8_t port, uint32_t dst_ip,
			 uint16_t dst_port, const struct wire_msg *msg)
{
	size_t body = wire_len(msg);
	size_t wlen = body + (sw->keyed && wire_op_authenticated(msg->op) ? WIRE_MAC_LEN : 0);
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
	/* With a key, every control datagram leaves sealed (proto/auth.h). */
	if (wire_encode(msg, udp + 1, body) < 0 ||
	    (wlen > body && wire_seal(&sw->key, (uint8_t *)(udp + 1), body) < 0)) {
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

int egress_to_node(struct sw *sw, uint16_t node, const struct wire_msg *msg)
{
	uint32_t ip = rte_be_to_cpu_32(sw->node_ip_be[node]);
	uint8_t mac[6], port;

	if (!l2_node_nb(sw->l2, node, mac, &port) || port >= sw->nports) {
		egress_arp(sw, ip, rte_rdtsc());
		return -ENOENT;
	}
	return send_datagram(sw, mac, port, ip, rte_be_to_cpu_16(sw->node_port_be[node]), msg);
}

int egress_replicate(struct sw *sw, uint16_t home, uint64_t keyhash, const uint8_t *key,
		 uint16_t key_len, uint64_t version, const struct wire_replicate *req)
{
	struct egress_stats *st = &sw->egress->st;
	uint8_t payload[WIRE_REPLICATE_MAX_LEN];
	int len, rc;

	len = wire_replicate_encode(req, payload, sizeof(payload));
	if (len < 0) /* no target */
		return -EINVAL;
	struct wire_msg m = {
	    .op = WIRE_OP_REPLICATE,
	    .flags = WIRE_F_VIA_SWITCH,
	    .keyhash = keyhash,
	    .version = version,
	    .node = home,
	    .key_len = key_len,
	    .val_len = (uint32_t)len,
	    .key = key,
	    .value = payload,
	};
	rc = egress_to_node(sw, home, &m);
	if (rc == 0)
		st->replicates_sent++;
	else
		st->send_failed++;
	return rc;
}

int egress_unreplicate(struct sw *sw, uint16_t node, uint64_t keyhash, const uint8_t *key,
		       uint16_t key_len)
{
	struct egress_stats *st = &sw->egress->st;
	struct wire_msg m = {
	    .op = WIRE_OP_UNREPLICATE,
	    .flags = WIRE_F_VIA_SWITCH,
	    .keyhash = keyhash,
	    .node = node,
	    .key_len = key_len,
	    .key = key,
	};
	int rc = egress_to_node(sw, node, &m);

	if (rc == 0)
		st->unreplicates_sent++;
	else
		st->send_failed++;
	return rc;
}

int egress_sync(struct sw *sw, uint16_t id, const uint8_t *value, size_t len)
{
	const struct cfg_switch *peer = cfg_switch_by_id(sw->cfg, id);
	struct egress_stats *st = &sw->egress->st;
	uint8_t mac[6], port;
	uint64_t now = rte_rdtsc();
	int rc;

	if (!peer || len > WIRE_MAX_DATAGRAM - WIRE_HDR_LEN - WIRE_MAC_LEN) {
		rc = -EINVAL;
	} else if (!l2_nb_lookup(sw->l2, peer->vip, mac, &port, (uint32_t)(now / sw->tsc_hz)) ||
		   port >= sw->nports) {
		egress_arp(sw, peer->vip, now);
		rc = -ENOENT;
	} else {
		struct wire_msg m = {
		    .op = WIRE_OP_SYNC,
		    .flags = WIRE_F_VIA_SWITCH,
		    .val_len = (uint32_t)len,
		    .value = value,
		};
		rc = send_datagram(sw, mac, port, peer->vip, sw->svc_port, &m);
	}
	if (rc == 0)
		st->sync_sent++;
	else
		st->sync_send_failed++;
	return rc;
}

/* ---- The egress stage. ------------------------------------------------------------------ */

void egress_run(struct sw *sw, uint64_t now)
{
	struct egress *eg = sw->egress;
	uint8_t mac[6], port;

	if (now - eg->last_node_arp_tsc < sw->tsc_hz / 1000 * EGRESS_NODE_ARP_MS)
		return;
	eg->last_node_arp_tsc = now;
	for (unsigned i = 0; i < sw->cfg->nnodes; i++)
		if (!l2_node_nb(sw->l2, sw->cfg->nodes[i].id, mac, &port))
			egress_arp(sw, sw->cfg->nodes[i].ip, now);
}
