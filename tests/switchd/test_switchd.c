/*
 * test_switchd.c - the switch data plane in-process: real EAL (--no-huge,
 * --no-pci), net_ring ports whose rings the test holds (inject into a port's
 * RX ring, read what the switch sent from its TX rings), the fast path polled
 * by the test (or run by 2 worker lcores in the concurrency case).
 *
 * Topology (inline, conf string below): ports a1 (client 10.77.0.201),
 * n1..n4 (nodes 10.77.0.1..4), VIP 10.77.0.100:7447.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "../common/eal_cleanup.h"
#include "../common/http_fetch.h"
#include "auth.h"
#include "cdt.h"
#include "chunk.h"
#include "clock.h"
#include "ctl.h"
#include "digest.h"
#include "egress.h"
#include "intake.h"
#include "keyhash.h"
#include "payload.h"
#include "peer.h"
#include "rchange.h"
#include "ring_change.h"
#include "switchd.h"
#include "wire.h"

#define NPORTS 5 /* a1, n1..n4 */
#define NRX    2 /* RX rings per port: up to 2 workers */
#define NTX    3 /* TX rings per port: 2 workers + control */

static const char *port_names[NPORTS] = {"a1", "n1", "n2", "n3", "n4"};
static struct rte_ring *rx_rings[NPORTS][NRX], *tx_rings[NPORTS][NTX];
static struct rte_mempool *tpool;
static struct cfg cfg;
static struct sw sw;

static const uint8_t vip_mac[6] = {0x02, 0x53, 0x4b, 0x4c, 0x00, 0x64};
static const uint8_t client_mac[6] = {0x02, 0, 0, 0, 0, 0xc1};
#define CLIENT_IP   0x0a4d00c9u /* 10.77.0.201 */
#define CLIENT_PORT 40000
#define VIP	    0x0a4d0064u
#define SVC	    7447

static void node_mac(uint16_t id, uint8_t mac[6])
{
	const uint8_t m[6] = {0x02, 0, 0, 0, 0, (uint8_t)id};

	memcpy(mac, m, 6);
}

static const char *conf_json =
    "{\"service\": {\"vip\": \"10.77.0.100\", \"port\": 7447, \"mac\": \"02:53:4b:4c:00:64\"},"
    " \"switches\": ["
    "  {\"id\": 1, \"name\": \"s1\", \"role\": \"inline\", \"control_socket\": "
    "\"/tmp/skl-test.sock\","
    "   \"lcores\": [1], \"idle_sleep_us\": 10,"
    "   \"ports\": [{\"name\": \"a1\", \"vdev\": \"net_ring_a1\"},"
    "     {\"name\": \"n1\", \"vdev\": \"net_ring_n1\"}, {\"name\": \"n2\", \"vdev\": "
    "\"net_ring_n2\"},"
    "     {\"name\": \"n3\", \"vdev\": \"net_ring_n3\"}, {\"name\": \"n4\", \"vdev\": "
    "\"net_ring_n4\"}]}],"
    " \"nodes\": ["
    "  {\"id\": 1, \"name\": \"n1\", \"ip\": \"10.77.0.1\"}, {\"id\": 2, \"name\": \"n2\", \"ip\": "
    "\"10.77.0.2\"},"
    "  {\"id\": 3, \"name\": \"n3\", \"ip\": \"10.77.0.3\"}, {\"id\": 4, \"name\": \"n4\", \"ip\": "
    "\"10.77.0.4\"}],"
    " \"agents\": [{\"name\": \"a1\", \"ip\": \"10.77.0.201\"}]}";

/* ---- Frames. -------------------------------------------------------------------------- */

/* An Ethernet/IPv4/UDP frame around payload, with valid IPv4 and UDP checksums. */
static struct rte_mbuf *frame(const uint8_t src_mac[6], const uint8_t dst_mac[6], uint32_t sip,
			      uint32_t dip, uint16_t sport, uint16_t dport, const void *payload,
			      size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(tpool);
	size_t total = sizeof(struct rte_ether_hdr) + 20 + 8 + len;
	uint8_t *b = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)total);
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)b;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	ck_assert_ptr_nonnull(b);
	memcpy(eth->dst_addr.addr_bytes, dst_mac, 6);
	memcpy(eth->src_addr.addr_bytes, src_mac, 6);
	eth->ether_type = htons(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, 20);
	ip->version_ihl = 0x45;
	ip->total_length = htons((uint16_t)(20 + 8 + len));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = htonl(sip);
	ip->dst_addr = htonl(dip);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = htons(sport);
	udp->dst_port = htons(dport);
	udp->dgram_len = htons((uint16_t)(8 + len));
	memcpy(udp + 1, payload, len);
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	return m;
}

static size_t encode(uint8_t op, const char *key, const char *val, uint64_t version, uint16_t node,
		     uint32_t ret_ip, uint16_t ret_port, uint8_t *buf)
{
	struct wire_msg msg = {
	    .op = op,
	    .req_id = 0x0000000700000001ull,
	    .keyhash = keyhash(key, strlen(key)),
	    .version = version,
	    .node = node,
	    .ret_ip = ret_ip,
	    .ret_port = ret_port,
	    .key_len = (uint16_t)strlen(key),
	    .val_len = val ? (uint32_t)strlen(val) : 0,
	    .key = (const uint8_t *)key,
	    .value = (const uint8_t *)val,
	};
	int n = wire_encode(&msg, buf, 2048);

	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

/* A client request to the VIP. */
static struct rte_mbuf *request(uint8_t op, const char *key, const char *val)
{
	uint8_t buf[2048];
	size_t n = encode(op, key, val, 0, 0, 0, 0, buf);

	return frame(client_mac, vip_mac, CLIENT_IP, VIP, CLIENT_PORT, SVC, buf, n);
}

/* Node id's reply (op | REPLY) carrying version, to the VIP, for the client's return address. */
static struct rte_mbuf *node_msg(uint8_t op, uint16_t id, const char *key, uint64_t version)
{
	uint8_t buf[2048], mac[6];
	size_t n = encode(op, key, NULL, version, id, CLIENT_IP, CLIENT_PORT, buf);

	node_mac(id, mac);
	return frame(mac, vip_mac, 0x0a4d0000u + id, VIP, SVC, SVC, buf, n);
}

static void inject(unsigned port, unsigned queue, struct rte_mbuf *m)
{
	ck_assert_int_eq(rte_ring_enqueue(rx_rings[port][queue], m), 0);
}

/* Poll worker 0 until its RX rings are empty and its TX buffers flushed. */
static void run(void)
{
	struct sw_worker *w = sw.workers[0];

	rte_rcu_qsbr_thread_online(sw.qsbr, 0);
	for (int i = 0; i < 64 && pipeline_poll(w); i++)
		;
	pipeline_flush(w);
	rte_rcu_qsbr_thread_offline(sw.qsbr, 0);
}

/* Frames the switch sent on port (all its TX rings), up to max. */
static unsigned collect(unsigned port, struct rte_mbuf **out, unsigned max)
{
	unsigned n = 0;

	for (unsigned q = 0; q < NTX; q++) {
		void *m;

		while (n < max && rte_ring_dequeue(tx_rings[port][q], &m) == 0)
			out[n++] = m;
	}
	return n;
}

static void free_all(struct rte_mbuf **m, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(m[i]);
}

static unsigned drain(unsigned port)
{
	struct rte_mbuf *m[256];
	unsigned n, total = 0;

	while ((n = collect(port, m, 256)) > 0) {
		free_all(m, n);
		total += n;
	}
	return total;
}

static unsigned drain_all(void)
{
	unsigned n = 0;

	for (unsigned p = 0; p < NPORTS; p++)
		n += drain(p);
	return n;
}

struct parsed {
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	struct wire_msg msg;
};

/* Parse a frame the switch sent and check both checksums. */
static void parse_out(struct rte_mbuf *m, struct parsed *p)
{
	p->eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	ck_assert_uint_eq(ntohs(p->eth->ether_type), RTE_ETHER_TYPE_IPV4);
	p->ip = (struct rte_ipv4_hdr *)(p->eth + 1);
	p->udp = (struct rte_udp_hdr *)(p->ip + 1);
	ck_assert_uint_eq(rte_raw_cksum(p->ip, 20), 0xffff); /* IPv4 header checksum */
	ck_assert_uint_ne(p->udp->dgram_cksum, 0);
	uint16_t got = p->udp->dgram_cksum;

	p->udp->dgram_cksum = 0;
	ck_assert_uint_eq(rte_ipv4_udptcp_cksum(p->ip, p->udp), got); /* full recomputation */
	p->udp->dgram_cksum = got;
	ck_assert_int_eq(wire_decode(p->udp + 1, ntohs(p->udp->dgram_len) - 8, &p->msg), WIRE_OK);
}

/* Make every node known: each sends an ARP request for the VIP (and gets the answer). */
static void learn_nodes(void)
{
	for (uint16_t id = 1; id <= 4; id++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(tpool);
		struct rte_ether_hdr *eth =
		    (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + 28);
		struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);
		uint8_t mac[6];

		node_mac(id, mac);
		memset(eth->dst_addr.addr_bytes, 0xff, 6);
		memcpy(eth->src_addr.addr_bytes, mac, 6);
		eth->ether_type = htons(RTE_ETHER_TYPE_ARP);
		arp->arp_hardware = htons(RTE_ARP_HRD_ETHER);
		arp->arp_protocol = htons(RTE_ETHER_TYPE_IPV4);
		arp->arp_hlen = 6;
		arp->arp_plen = 4;
		arp->arp_opcode = htons(RTE_ARP_OP_REQUEST);
		memcpy(arp->arp_data.arp_sha.addr_bytes, mac, 6);
		arp->arp_data.arp_sip = htonl(0x0a4d0000u + id);
		memset(arp->arp_data.arp_tha.addr_bytes, 0, 6);
		arp->arp_data.arp_tip = htonl(VIP);
		inject(id, 0, m);
	}
	run();
	drain_all();
}

static char *hexkey(const char *key, char *buf)
{
	for (size_t i = 0; key[i]; i++)
		sprintf(buf + 2 * i, "%02x", (unsigned char)key[i]);
	return buf;
}

static void command_ok(const char *fmt, const char *key, const char *rest)
{
	char line[512], hex[256];
	char *out;

	snprintf(line, sizeof(line), fmt, hexkey(key, hex), rest);
	out = ctl_command(&sw, line);
	ck_assert_msg(strstr(out, "\"ok\":true") != NULL, "%s -> %s", line, out);
	free(out);
}

static void start_switch(const char *name)
{
	char err[512];
	struct sw_opts opts = {.idle_sleep_us = -1, .socket_path = "", .no_telemetry = true};

	drain_all();
	ck_assert_msg(sw_init(&sw, &cfg, cfg_switch_lookup(&cfg, name), &opts, err, sizeof(err)) ==
			  0,
		      "sw_init: %s", err);
}

static void setup(void)
{
	start_switch("s1");
	learn_nodes();
}

static void teardown(void)
{
	sw_fini(&sw);
	drain_all();
}

static uint16_t home_of(const char *key)
{
	return ring_home(sw.ring, keyhash(key, strlen(key)));
}

/* ---- Tests. ------------------------------------------------------------------------------ */

START_TEST(request_goes_home_rewritten)
{
	struct rte_mbuf *out[8];
	struct parsed p;
	uint16_t home = home_of("alpha");
	uint8_t mac[6];

	inject(0, 0, request(WIRE_OP_GET, "alpha", NULL));
	run();
	for (unsigned port = 0; port < NPORTS; port++)
		if (port != home)
			ck_assert_uint_eq(drain(port), 0);
	ck_assert_uint_eq(collect(home, out, 8), 1);
	parse_out(out[0], &p);
	node_mac(home, mac);
	ck_assert_mem_eq(p.eth->dst_addr.addr_bytes, mac, 6);
	ck_assert_mem_eq(p.eth->src_addr.addr_bytes, vip_mac, 6);
	ck_assert_uint_eq(ntohl(p.ip->src_addr), VIP);
	ck_assert_uint_eq(ntohl(p.ip->dst_addr), 0x0a4d0000u + home);
	ck_assert_uint_eq(ntohs(p.udp->src_port), SVC);
	ck_assert_uint_eq(ntohs(p.udp->dst_port), SVC);
	ck_assert_uint_eq(p.msg.ret_ip, CLIENT_IP);
	ck_assert_uint_eq(p.msg.ret_port, CLIENT_PORT);
	ck_assert_uint_eq(p.msg.node, home);
	ck_assert_uint_eq(p.msg.flags, WIRE_F_VIA_SWITCH);
	ck_assert_uint_eq(p.msg.op, WIRE_OP_GET);
	ck_assert_mem_eq(p.msg.key, "alpha", 5);
	ck_assert_int_eq(scores_inflight(&sw.scores, home), 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_REQ_FORWARDED), 1);
	free_all(out, 1);
}
END_TEST

START_TEST(reply_returns_to_client)
{
	struct rte_mbuf *out[8];
	struct parsed p;
	uint16_t home = home_of("alpha");

	inject(0, 0, request(WIRE_OP_GET, "alpha", NULL));
	run();
	drain_all();
	inject(home, 0, node_msg(WIRE_OP_GET | WIRE_REPLY, home, "alpha", 5));
	run();
	ck_assert_uint_eq(collect(0, out, 8), 1);
	parse_out(out[0], &p);
	ck_assert_mem_eq(p.eth->dst_addr.addr_bytes, client_mac, 6);
	ck_assert_mem_eq(p.eth->src_addr.addr_bytes, vip_mac, 6);
	ck_assert_uint_eq(ntohl(p.ip->src_addr), VIP);
	ck_assert_uint_eq(ntohl(p.ip->dst_addr), CLIENT_IP);
	ck_assert_uint_eq(ntohs(p.udp->src_port), SVC);
	ck_assert_uint_eq(ntohs(p.udp->dst_port), CLIENT_PORT);
	ck_assert_uint_eq(p.msg.op, WIRE_OP_GET | WIRE_REPLY);
	ck_assert_uint_eq(p.msg.version, 5);
	ck_assert_uint_eq(p.msg.node, home);
	ck_assert_int_eq(scores_inflight(&sw.scores, home), 0);
	ck_assert_uint_eq(drain_all(), 0);
	free_all(out, 1);
}
END_TEST

/*
 * A chunked op (proto/chunk.h) is routed chunk by chunk, every chunk to the
 * same node and rewritten as a request is, but counts once in flight: a PUT
 * of 3 chunks adds 1 (its chunk 0), and a GET reply of 3 chunks takes 1 off.
 */
START_TEST(chunked_op_counts_once)
{
	static uint8_t value[3000];
	uint16_t home = home_of("alpha");
	struct wire_msg put = {.op = WIRE_OP_PUT,
			       .req_id = 1ull << 32 | 9,
			       .keyhash = keyhash("alpha", 5),
			       .key = (const uint8_t *)"alpha",
			       .key_len = 5,
			       .value = value,
			       .val_len = sizeof(value)};
	struct wire_msg rep = {.op = WIRE_OP_GET | WIRE_REPLY,
			       .req_id = 1ull << 32 | 10,
			       .keyhash = put.keyhash,
			       .version = 5,
			       .node = home,
			       .ret_ip = CLIENT_IP,
			       .ret_port = CLIENT_PORT,
			       .key = put.key,
			       .key_len = 5,
			       .value = value,
			       .val_len = sizeof(value)};
	struct rte_mbuf *out[8];
	uint8_t buf[1500], mac[6];
	struct parsed p;
	int len;

	/* Later chunks first: none of them counts, chunk 0 does. */
	for (int i = 2; i >= 0; i--) {
		len = wire_chunk_encode(&put, (uint16_t)i, 3, buf, sizeof(buf));
		ck_assert_int_gt(len, 0);
		inject(
		    0, 0,
		    frame(client_mac, vip_mac, CLIENT_IP, VIP, CLIENT_PORT, SVC, buf, (size_t)len));
		run();
		ck_assert_int_eq(scores_inflight(&sw.scores, home), i == 0 ? 1 : 0);
	}
	ck_assert_uint_eq(collect(home, out, 8), 3);
	for (int i = 0; i < 3; i++) {
		parse_out(out[i], &p);
		ck_assert_uint_eq(p.msg.flags, WIRE_F_VIA_SWITCH | WIRE_F_CHUNK);
		ck_assert_uint_eq(p.msg.node, home);
		ck_assert_uint_eq(p.msg.ret_ip, CLIENT_IP);
	}
	free_all(out, 3);
	/* The PUT's one reply (not chunked) takes it back to 0. */
	inject(home, 0, node_msg(WIRE_OP_PUT | WIRE_REPLY, home, "alpha", 4));
	run();
	ck_assert_int_eq(scores_inflight(&sw.scores, home), 0);
	drain_all();
	/* A GET, then its reply in 3 chunks: one off, at chunk 0. */
	inject(0, 0, request(WIRE_OP_GET, "alpha", NULL));
	run();
	ck_assert_int_eq(scores_inflight(&sw.scores, home), 1);
	drain_all();
	node_mac(home, mac);
	for (int i = 1; i < 3; i++) {
		len = wire_chunk_encode(&rep, (uint16_t)i, 3, buf, sizeof(buf));
		inject(home, 0,
		       frame(mac, vip_mac, 0x0a4d0000u + home, VIP, SVC, SVC, buf, (size_t)len));
		run();
		ck_assert_int_eq(scores_inflight(&sw.scores, home), 1);
	}
	len = wire_chunk_encode(&rep, 0, 3, buf, sizeof(buf));
	inject(home, 0, frame(mac, vip_mac, 0x0a4d0000u + home, VIP, SVC, SVC, buf, (size_t)len));
	run();
	ck_assert_int_eq(scores_inflight(&sw.scores, home), 0);
	ck_assert_uint_eq(collect(0, out, 8), 3); /* every chunk to the client */
	free_all(out, 3);
}
END_TEST

/* Read `key` count times, one at a time; how many reads each node got. */
static void spread(const char *key, unsigned count, unsigned got[NPORTS], unsigned *replica_flags)
{
	struct rte_mbuf *out[64];
	uint16_t home = home_of(key);

	memset(got, 0, sizeof(unsigned) * NPORTS);
	*replica_flags = 0;
	for (unsigned i = 0; i < count; i++) {
		inject(0, 0, request(WIRE_OP_GET, key, NULL));
		run(); /* one at a time: each choice sees the previous one's in-flight */
		for (unsigned port = 1; port < NPORTS; port++) {
			unsigned n = collect(port, out, 64);

			got[port] += n;
			for (unsigned k = 0; k < n; k++) {
				struct parsed p;

				parse_out(out[k], &p);
				ck_assert_uint_eq(p.msg.node, port);
				ck_assert_uint_eq(!!(p.msg.flags & WIRE_F_REPLICA_READ),
						  port != home);
				*replica_flags += !!(p.msg.flags & WIRE_F_REPLICA_READ);
			}
			free_all(out, n);
		}
	}
}

static void count_static(void *arg, uint32_t ip, const uint8_t mac[6], uint8_t port, bool is_static,
			 uint16_t node)
{
	(void)ip, (void)mac, (void)port, (void)node;
	*(unsigned *)arg += is_static;
}

/* Learning never evicts a static neighbour, even from a set that holds only static ones. */
START_TEST(learning_keeps_static_neighbours)
{
	static struct l2 l; /* large: not on the stack */
	static const uint8_t mac[6] = {0x02, 0, 0, 0, 0x55, 0x55};
	unsigned before = 0, after = 0;

	l2_init(&l, &cfg, 300, 300);
	/* 4 x the table's slots of static entries: every set ends up full of them. */
	for (uint32_t i = 1; i <= 4 * L2_NB_SETS * L2_NB_WAYS; i++)
		l2_nb_learn(&l, 0x0b000000u + i, mac, 0, 1, true);
	l2_nb_walk(&l, 1, count_static, &before);
	ck_assert_uint_eq(before, L2_NB_SETS * L2_NB_WAYS);
	for (uint32_t i = 1; i <= 1000; i++)
		l2_nb_learn(&l, 0x0c000000u + i, mac, 0, 1, false);
	l2_nb_walk(&l, 1, count_static, &after);
	ck_assert_uint_eq(after, before);
}
END_TEST

/*
 * Neighbour slots are read without a lock (slot_load() in l2.c): under
 * writers that keep replacing the ways of one set, a reader never sees one
 * write's address with another write's MAC and port.
 */
#define TORN_IPS 8 /* twice the ways of a set: every learn evicts */
static struct l2 torn_l2;
static uint32_t torn_ips[TORN_IPS];
static volatile int torn_stop;

static void torn_entry(uint32_t ip, uint8_t k, uint8_t mac[6], uint8_t *port)
{
	mac[0] = 0x02; /* unicast: the address's low three bytes, then k and ~k */
	mac[1] = (uint8_t)(ip >> 16);
	mac[2] = (uint8_t)(ip >> 8);
	mac[3] = (uint8_t)ip;
	mac[4] = k;
	mac[5] = (uint8_t)~k;
	*port = (uint8_t)((ip ^ k) & 0x3f);
}

static void *torn_writer(void *arg)
{
	uint8_t mac[6], port, k = (uint8_t)(uintptr_t)arg;

	for (unsigned i = 0; i < 20000000 && !torn_stop; i++, k += 2) {
		uint32_t ip = torn_ips[i % TORN_IPS];

		torn_entry(ip, k, mac, &port);
		l2_nb_learn(&torn_l2, ip, mac, port, 1, false);
	}
	return NULL;
}

static void *torn_reader(void *arg)
{
	unsigned *counts = arg; /* found, torn */
	uint8_t mac[6], want[6], port, want_port;

	for (unsigned i = 0; i < 20000000 && !torn_stop; i++) {
		uint32_t ip = torn_ips[i % TORN_IPS];

		if (!l2_nb_lookup(&torn_l2, ip, mac, &port, 1))
			continue;
		counts[0]++;
		torn_entry(ip, mac[4], want, &want_port);
		counts[1] += memcmp(mac, want, 6) != 0 || port != want_port;
	}
	return NULL;
}

START_TEST(neighbour_reads_never_torn)
{
	static const uint8_t mac0[6] = {0x02, 0, 0, 0, 0, 0};
	pthread_t th[4];
	unsigned counts[2][2] = {{0}}, n = 0;
	int set = -1;

	/* Addresses that share one set of the table: learn each, see where it went. */
	l2_init(&torn_l2, &cfg, 300, 300);
	for (uint32_t ip = 0x0d000001u; n < TORN_IPS && ip < 0x0d100000u; ip++) {
		l2_nb_learn(&torn_l2, ip, mac0, 0, 1, false);
		for (int s = 0; s < L2_NB_SETS; s++)
			for (int w = 0; w < L2_NB_WAYS; w++)
				if (torn_l2.nb[s][w].f.ip == ip && (set < 0 || s == set)) {
					set = s;
					torn_ips[n++] = ip;
				}
	}
	ck_assert_uint_eq(n, TORN_IPS);
	l2_init(&torn_l2, &cfg, 300, 300);
	torn_stop = 0;
	for (uintptr_t i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_create(&th[i], NULL, torn_writer, (void *)i), 0);
		ck_assert_int_eq(pthread_create(&th[2 + i], NULL, torn_reader, counts[i]), 0);
	}
	usleep(1000000); /* bounded by the loops' counts too */
	torn_stop = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	ck_assert_msg(counts[0][0] + counts[1][0] > 10000, "only %u reads found an entry",
		      counts[0][0] + counts[1][0]);
	ck_assert_msg(counts[0][1] + counts[1][1] == 0, "%u torn reads of %u",
		      counts[0][1] + counts[1][1], counts[0][0] + counts[1][0]);
}
END_TEST

/*
 * The control socket's path: a stale socket is replaced, but a file that is
 * not a socket is never deleted and a live socket (another switch's) is
 * never taken over.
 */
START_TEST(control_socket_never_takes_what_is_not_stale)
{
	static struct sw sw; /* only its ctl is used */
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char err[256] = "";
	int fd;
	FILE *f;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/skl-ctl-test-%d", (int)getpid());
	f = fopen(sa.sun_path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("precious", f);
	fclose(f);
	ck_assert_int_eq(ctl_open(&sw, sa.sun_path, true, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "exists and is not a socket") != NULL, "%s", err);
	ctl_close(&sw);
	ck_assert_int_eq(access(sa.sun_path, F_OK), 0);
	unlink(sa.sun_path);

	/* Someone listens there. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_eq(ctl_open(&sw, sa.sun_path, true, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "another process is listening") != NULL, "%s", err);
	ctl_close(&sw);
	ck_assert_int_eq(access(sa.sun_path, F_OK), 0);
	/* Nobody any more: a stale socket, replaced, and removed at close. */
	close(fd);
	ck_assert_int_eq(ctl_open(&sw, sa.sun_path, true, err, sizeof(err)), 0);
	ctl_close(&sw);
	ck_assert_int_ne(access(sa.sun_path, F_OK), 0);
}
END_TEST

/* Equal costs are won at random by every candidate, in a set of 16 too. */
START_TEST(ties_won_by_every_replica)
{
	static struct scores s; /* large: not on the stack */
	uint16_t cand[16];
	unsigned won[17] = {0};
	uint64_t rng = 0x9e3779b97f4a7c15ull;

	scores_init(&s, &cfg, 1);
	for (uint16_t id = 1; id <= 16; id++) {
		scores_set(&s, id, 100, SCORES_UP);
		cand[id - 1] = id;
	}
	for (unsigned i = 0; i < 16000; i++)
		won[sel_pick(&s, cand, 16, &rng)]++;
	for (uint16_t id = 1; id <= 16; id++) /* 1000 each expected */
		ck_assert_msg(won[id] > 700 && won[id] < 1300, "node %u won %u of 16000", id,
			      won[id]);
}
END_TEST

/*
 * In-flight is written off only after idle_tsc without a reply. A reply a
 * worker stamped after the control thread read its clock is recent: the
 * busy node keeps its count (a wrapped now - last wrote it off, and the
 * late replies then left it near 0 for good, drawing every read there).
 */
START_TEST(in_flight_written_off_only_when_idle)
{
	static struct scores s; /* large: not on the stack */

	scores_init(&s, &cfg, 2);
	scores_set(&s, 1, 100, SCORES_UP);
	for (unsigned i = 0; i < 6; i++)
		scores_inflight_inc(&s, 0, 1);
	scores_inflight_dec(&s, 1, 1, 5000); /* through the other worker */
	ck_assert_int_eq(scores_inflight(&s, 1), 5);

	ck_assert_uint_eq(scores_forget_lost(&s, 4990, 100), 0); /* reply after "now" */
	ck_assert_int_eq(scores_inflight(&s, 1), 5);
	ck_assert_uint_eq(scores_forget_lost(&s, 5100, 100), 0); /* exactly idle_tsc: not yet */
	ck_assert_int_eq(scores_inflight(&s, 1), 5);
	ck_assert_uint_eq(scores_forget_lost(&s, 5101, 100), 1); /* silent too long: lost */
	ck_assert_int_eq(scores_inflight(&s, 1), 0);

	/* Their late replies are taken back, not counted below zero. */
	scores_inflight_dec(&s, 0, 1, 5200);
	scores_inflight_dec(&s, 1, 1, 5200);
	ck_assert_int_eq(scores_inflight_raw(&s, 1), -2);
	ck_assert_uint_eq(scores_forget_lost(&s, 5201, 100), 0);
	scores_inflight_inc(&s, 1, 1);
	ck_assert_int_eq(scores_inflight(&s, 1), 1);
}
END_TEST

START_TEST(pinned_reads_spread_by_load)
{
	unsigned got[NPORTS], rflags;

	command_ok("cdt pin %s force n1,n2,n3%s", "hot", "");
	/* n1 is busy: the first reads go to n2 and n3 until they catch up. */
	sw.scores.outstanding[0][1] += 10;
	spread("hot", 30, got, &rflags);
	ck_assert_uint_eq(got[4], 0);
	ck_assert_uint_eq(got[1] + got[2] + got[3], 30);
	/* Least expected delay: final in-flight 10+got1, got2, got3 within 1 of each other. */
	ck_assert_uint_ge(got[2], 12);
	ck_assert_uint_ge(got[3], 12);
	ck_assert_uint_le(got[1], 5);
	ck_assert_int_le(abs((int)got[2] - (int)got[3]), 1);
	ck_assert_int_le(abs(10 + (int)got[1] - (int)got[2]), 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_REPLICA_READS), rflags);
}
END_TEST

/* Forget every read in flight (spread() leaves its reads unanswered). */
static void no_reads_in_flight(void)
{
	for (unsigned id = 1; id < NPORTS; id++)
		sw.scores.outstanding[0][id] = 0;
}

/*
 * A set of directory.spare_home_from copies or more (3 here: the test has 4
 * nodes), its home first: the home takes every write of the key, so reads
 * go to the other copies, however idle the home is. In a smaller set, a set
 * whose first member is not the home, with the rule off (0), or when the
 * other copies are down, the home serves reads.
 */
START_TEST(home_spared_in_larger_sets)
{
	unsigned got[NPORTS], rflags;
	uint16_t home = home_of("hot"), a = home % 4 + 1, b = a % 4 + 1;
	char set[32];

	ck_assert_uint_eq(sw.spare_home_from, 8); /* the default */
	sw.spare_home_from = 3;
	snprintf(set, sizeof(set), " force n%u,n%u,n%u", home, a, b);
	command_ok("cdt pin %s%s", "hot", set);
	sw.scores.outstanding[0][a] += 10;
	sw.scores.outstanding[0][b] += 10;
	spread("hot", 20, got, &rflags);
	ck_assert_uint_eq(got[home], 0);
	ck_assert_uint_eq(got[a] + got[b], 20);

	scores_set(&sw.scores, a, 0, SCORES_DOWN);
	scores_set(&sw.scores, b, 0, SCORES_DOWN);
	spread("hot", 5, got, &rflags);
	ck_assert_uint_eq(got[home], 5);

	scores_set(&sw.scores, a, 100, SCORES_UP);
	scores_set(&sw.scores, b, 100, SCORES_UP);
	home = home_of("warm");
	a = home % 4 + 1;
	snprintf(set, sizeof(set), " force n%u,n%u", home, a);
	command_ok("cdt pin %s%s", "warm", set);
	no_reads_in_flight();
	spread("warm", 20, got, &rflags);
	ck_assert_uint_eq(got[home], 10); /* least expected delay: they take turns */
	ck_assert_uint_eq(got[a], 10);

	/* Three copies, the home second: weighed like the others. */
	home = home_of("cool");
	a = home % 4 + 1;
	b = a % 4 + 1;
	snprintf(set, sizeof(set), " force n%u,n%u,n%u", a, home, b);
	command_ok("cdt pin %s%s", "cool", set);
	no_reads_in_flight();
	spread("cool", 30, got, &rflags);
	ck_assert_uint_eq(got[home], 10);

	/* The home first again, with the rule off. */
	sw.spare_home_from = 0;
	no_reads_in_flight();
	spread("hot", 30, got, &rflags);
	ck_assert_uint_eq(got[home_of("hot")], 10);
}
END_TEST

START_TEST(down_node_gets_no_reads)
{
	unsigned got[NPORTS], rflags;
	struct rte_mbuf *out[8];
	struct parsed p;
	const char *cold = NULL;
	char buf[32];

	command_ok("cdt pin %s force n1,n2,n3%s", "hot", "");
	scores_set(&sw.scores, 2, 0, SCORES_DOWN);
	spread("hot", 40, got, &rflags);
	ck_assert_uint_eq(got[2], 0);
	ck_assert_uint_eq(got[1] + got[3], 40);
	ck_assert_uint_ge(got[1], 15);
	ck_assert_uint_ge(got[3], 15);

	/* A key whose home is down: the switch answers UNAVAILABLE itself. */
	for (int i = 0; !cold && i < 1000; i++) {
		snprintf(buf, sizeof(buf), "cold-%d", i);
		if (home_of(buf) == 2)
			cold = buf;
	}
	ck_assert_ptr_nonnull(cold);
	inject(0, 0, request(WIRE_OP_GET, cold, NULL));
	run();
	ck_assert_uint_eq(drain(2), 0);
	ck_assert_uint_eq(collect(0, out, 8), 1);
	parse_out(out[0], &p);
	ck_assert_uint_eq(p.msg.op, WIRE_OP_GET | WIRE_REPLY);
	ck_assert_uint_eq(p.msg.status, WIRE_ST_UNAVAILABLE);
	ck_assert_uint_eq(p.msg.node, 2);
	ck_assert_uint_eq(ntohs(p.udp->dst_port), CLIENT_PORT);
	free_all(out, 1);
}
END_TEST

/* Overwrite n bytes at off in a valid request frame. */
static struct rte_mbuf *corrupt(size_t off, const void *bytes, size_t n)
{
	struct rte_mbuf *m = request(WIRE_OP_GET, "alpha", NULL);

	memcpy(rte_pktmbuf_mtod_offset(m, uint8_t *, off), bytes, n);
	return m;
}

START_TEST(malformed_dropped_and_counted)
{
	const size_t W = 14 + 20 + 8; /* wire header offset */
	const uint8_t bad_magic[2] = {0x12, 0x34}, bad_ver = 9, bad_op = 0x7f,
		      bad_flags[2] = {0x80, 0};
	const uint8_t big_key[2] = {0x00, 0x00}, frag[2] = {0x20, 0x00}, proto = IPPROTO_TCP;
	const uint8_t big_udp[2] = {0x05, 0xdc}, bad_csum[2] = {0xde, 0xad};
	const uint8_t ipv6_vhl = 0x65, short_ihl = 0x44, v5 = 0x50, longest_ihl = 0x4f;
	struct {
		struct rte_mbuf *m;
		enum sw_counter why;
	} cases[] = {
	    {corrupt(W + WIRE_OFF_MAGIC, bad_magic, 2), SW_CNT_DROP_WIRE_MAGIC},
	    {corrupt(W + WIRE_OFF_VER, &bad_ver, 1), SW_CNT_DROP_WIRE_VERSION},
	    {corrupt(W + WIRE_OFF_OP, &bad_op, 1), SW_CNT_DROP_WIRE_OP},
	    {corrupt(W + WIRE_OFF_FLAGS, bad_flags, 2), SW_CNT_DROP_WIRE_FLAGS},
	    {corrupt(W + WIRE_OFF_KEY_LEN, big_key, 2), SW_CNT_DROP_WIRE_KEY_LEN},
	    {corrupt(14 + 6, frag, 2), SW_CNT_DROP_IP_CSUM}, /* checksum now wrong too */
	    {corrupt(14 + 10, bad_csum, 2), SW_CNT_DROP_IP_CSUM},
	    {corrupt(14 + 20 + 4, big_udp, 2), SW_CNT_DROP_UDP_LEN},
	    {corrupt(14, &ipv6_vhl, 1), SW_CNT_DROP_IP_HDR},
	    {corrupt(14, &short_ihl, 1), SW_CNT_DROP_IP_HDR},
	    {corrupt(14, &v5, 1), SW_CNT_DROP_IP_HDR},
	    {corrupt(14, &longest_ihl, 1), SW_CNT_DROP_IP_CSUM}, /* a valid IHL: checked further */
	};
	unsigned ncases = sizeof(cases) / sizeof(cases[0]);
	uint64_t before[SW_CNT_COUNT];
	uint8_t pl[8] = {0x50, 0x47, 1, 1};

	/* Frames whose IP checksum is fixed up after the damage: reach the deeper checks. */
	struct rte_mbuf *fr = request(WIRE_OP_GET, "alpha", NULL), *tcp, *shrt;
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(fr, struct rte_ipv4_hdr *, 14);

	ip->fragment_offset = htons(RTE_IPV4_HDR_MF_FLAG);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	tcp = request(WIRE_OP_GET, "alpha", NULL);
	ip = rte_pktmbuf_mtod_offset(tcp, struct rte_ipv4_hdr *, 14);
	ip->next_proto_id = proto;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	shrt = frame(client_mac, vip_mac, CLIENT_IP, VIP, CLIENT_PORT, SVC, pl, sizeof(pl));

	for (int c = 0; c < SW_CNT_COUNT; c++)
		before[c] = sw_counter(&sw, c);
	for (unsigned i = 0; i < ncases; i++)
		inject(0, 0, cases[i].m);
	inject(0, 0, fr);
	inject(0, 0, tcp);
	inject(0, 0, shrt);
	/* A runt and a frame with trailing bytes after the value. */
	struct rte_mbuf *runt = rte_pktmbuf_alloc(tpool);

	rte_pktmbuf_append(runt, 6);
	inject(0, 0, runt);
	run();
	ck_assert_uint_eq(drain_all(), 0);
	/* Each case counted under its own reason: as many as the cases that name it. */
	for (unsigned i = 0; i < ncases; i++) {
		unsigned same = 0;

		for (unsigned j = 0; j < ncases; j++)
			same += cases[j].why == cases[i].why;
		ck_assert_msg(sw_counter(&sw, cases[i].why) == before[cases[i].why] + same,
			      "case %u (%s)", i, sw_counter_name(cases[i].why));
	}
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_IP_FRAG), before[SW_CNT_DROP_IP_FRAG] + 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_NOT_UDP), before[SW_CNT_DROP_NOT_UDP] + 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_WIRE_SHORT),
			  before[SW_CNT_DROP_WIRE_SHORT] + 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_RUNT), before[SW_CNT_DROP_RUNT] + 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_REQ_FORWARDED), 0);
	/* And the switch still works. */
	inject(0, 0, request(WIRE_OP_GET, "alpha", NULL));
	run();
	ck_assert_uint_eq(drain(home_of("alpha")), 1);
}
END_TEST

/* The request m again with 4 bytes of IPv4 options (NOPs): IHL 6, both checksums valid. */
static struct rte_mbuf *with_ip_options(struct rte_mbuf *m)
{
	struct rte_mbuf *o = rte_pktmbuf_alloc(tpool);
	const uint8_t *in = rte_pktmbuf_mtod(m, const uint8_t *);
	uint16_t len = rte_pktmbuf_data_len(m);
	uint8_t *b = (uint8_t *)rte_pktmbuf_append(o, (uint16_t)(len + 4));
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(b + 14);

	ck_assert_ptr_nonnull(b);
	memcpy(b, in, 14 + 20);
	memset(b + 14 + 20, 1, 4); /* IPOPT_NOP */
	memcpy(b + 14 + 24, in + 14 + 20, len - 14 - 20u);
	ip->version_ihl = 0x46;
	ip->total_length = htons((uint16_t)(ntohs(ip->total_length) + 4));
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	rte_pktmbuf_free(m);
	return o;
}

/* Headers with options take the general checksum path: checked, then forwarded like any. */
START_TEST(ip_options_checked_and_forwarded)
{
	struct rte_mbuf *out[8], *bad = with_ip_options(request(WIRE_OP_GET, "alpha", NULL));
	uint16_t home = home_of("alpha");
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	struct wire_msg msg;
	uint16_t got;

	rte_pktmbuf_mtod_offset(bad, uint8_t *, 14 + 20)[0] = 0x00; /* option byte: sum now wrong */
	inject(0, 0, bad);
	inject(0, 0, with_ip_options(request(WIRE_OP_GET, "alpha", NULL)));
	run();
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_IP_CSUM), 1);
	ck_assert_uint_eq(collect(home, out, 8), 1);
	ip = rte_pktmbuf_mtod_offset(out[0], struct rte_ipv4_hdr *, 14);
	udp = (struct rte_udp_hdr *)((uint8_t *)ip + 24);
	ck_assert_uint_eq(ip->version_ihl, 0x46);
	ck_assert_uint_eq(rte_raw_cksum(ip, 24), 0xffff);
	ck_assert_uint_eq(ntohl(ip->dst_addr), 0x0a4d0000u + home);
	got = udp->dgram_cksum;
	udp->dgram_cksum = 0;
	ck_assert_uint_eq(rte_ipv4_udptcp_cksum(ip, udp), got);
	ck_assert_int_eq(wire_decode(udp + 1, ntohs(udp->dgram_len) - 8, &msg), WIRE_OK);
	ck_assert_uint_eq(msg.ret_ip, CLIENT_IP);
	ck_assert_uint_eq(msg.node, home);
	free_all(out, 1);
}
END_TEST

/*
 * The request m with ip_pad bytes after its UDP datagram inside the IPv4 one
 * (total length and checksum fixed) and frame_pad bytes after the IPv4
 * datagram in the frame: valid, but not of the common shape the fast path
 * takes in a few tests (pipeline.c, common_shape()).
 */
static struct rte_mbuf *with_padding(struct rte_mbuf *m, uint16_t ip_pad, uint16_t frame_pad)
{
	uint8_t *tail = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(ip_pad + frame_pad));
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);

	ck_assert_ptr_nonnull(tail);
	memset(tail, 0xee, ip_pad + frame_pad);
	ip->total_length = htons((uint16_t)(ntohs(ip->total_length) + ip_pad));
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	return m;
}

/*
 * One's-complement sum of a UDP datagram (its own length, whatever the IPv4
 * datagram around it holds after it) and its pseudo-header: 0xffff when its
 * checksum is right. Words as rte_raw_cksum() reads them, from memory.
 */
static uint16_t udp_sum(const struct rte_ipv4_hdr *ip, const struct rte_udp_hdr *udp)
{
	uint16_t len = ntohs(udp->dgram_len);
	uint32_t sum = (uint32_t)rte_raw_cksum(&ip->src_addr, 8) + htons(IPPROTO_UDP) + htons(len) +
		       rte_raw_cksum(udp, len);

	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)((sum & 0xffff) + (sum >> 16));
}

/* Valid frames of another shape take the careful parse, and come out as the common one does. */
START_TEST(uncommon_shapes_forwarded_like_the_common_one)
{
	struct rte_mbuf *out[8];
	uint16_t home = home_of("alpha");
	const uint16_t pads[][2] = {{0, 0}, {0, 6}, {4, 0}, {4, 6}};

	for (unsigned i = 0; i < 4; i++)
		inject(0, 0,
		       with_padding(request(WIRE_OP_GET, "alpha", NULL), pads[i][0], pads[i][1]));
	run();
	ck_assert_uint_eq(collect(home, out, 8), 4);
	for (unsigned i = 0; i < 4; i++) {
		struct rte_ipv4_hdr *ip =
		    rte_pktmbuf_mtod_offset(out[i], struct rte_ipv4_hdr *, 14);
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
		struct wire_msg msg;

		ck_assert_uint_eq(rte_pktmbuf_data_len(out[i]),
				  14 + ntohs(ip->total_length) + pads[i][1]);
		ck_assert_uint_eq(ntohs(ip->total_length), 20 + ntohs(udp->dgram_len) + pads[i][0]);
		ck_assert_uint_eq(rte_raw_cksum(ip, 20), 0xffff);
		ck_assert_uint_eq(ntohl(ip->src_addr), VIP);
		ck_assert_uint_eq(ntohl(ip->dst_addr), 0x0a4d0000u + home);
		ck_assert_uint_ne(udp->dgram_cksum, 0);
		ck_assert_uint_eq(udp_sum(ip, udp), 0xffff);
		ck_assert_int_eq(wire_decode(udp + 1, ntohs(udp->dgram_len) - 8, &msg), WIRE_OK);
		ck_assert_uint_eq(msg.ret_ip, CLIENT_IP);
		ck_assert_uint_eq(msg.ret_port, CLIENT_PORT);
		ck_assert_uint_eq(msg.node, home);
		ck_assert(msg.flags & WIRE_F_VIA_SWITCH);
	}
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_REQ_FORWARDED), 4);
	free_all(out, 4);
}
END_TEST

START_TEST(arp_for_vip_answered)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(tpool), *out[4];
	struct rte_ether_hdr *eth =
	    (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + 28);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	memset(eth->dst_addr.addr_bytes, 0xff, 6);
	memcpy(eth->src_addr.addr_bytes, client_mac, 6);
	eth->ether_type = htons(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = htons(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = htons(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = htons(RTE_ARP_OP_REQUEST);
	memcpy(arp->arp_data.arp_sha.addr_bytes, client_mac, 6);
	arp->arp_data.arp_sip = htonl(CLIENT_IP);
	arp->arp_data.arp_tip = htonl(VIP);
	inject(0, 0, m);
	run();
	for (unsigned p = 1; p < NPORTS; p++)
		ck_assert_uint_eq(drain(p), 0);
	ck_assert_uint_eq(collect(0, out, 4), 1);
	eth = rte_pktmbuf_mtod(out[0], struct rte_ether_hdr *);
	arp = (struct rte_arp_hdr *)(eth + 1);
	ck_assert_uint_eq(ntohs(eth->ether_type), RTE_ETHER_TYPE_ARP);
	ck_assert_mem_eq(eth->dst_addr.addr_bytes, client_mac, 6);
	ck_assert_mem_eq(eth->src_addr.addr_bytes, vip_mac, 6);
	ck_assert_uint_eq(ntohs(arp->arp_opcode), RTE_ARP_OP_REPLY);
	ck_assert_mem_eq(arp->arp_data.arp_sha.addr_bytes, vip_mac, 6);
	ck_assert_uint_eq(ntohl(arp->arp_data.arp_sip), VIP);
	ck_assert_mem_eq(arp->arp_data.arp_tha.addr_bytes, client_mac, 6);
	ck_assert_uint_eq(ntohl(arp->arp_data.arp_tip), CLIENT_IP);
	free_all(out, 1);
}
END_TEST

START_TEST(l2_learning_forwards)
{
	const uint8_t x_mac[6] = {0x02, 0, 0, 0, 0, 0x77};
	uint8_t payload[16] = {0}, n3_mac[6];
	unsigned seen = 0;

	/* a1 -> unknown X (not service traffic): flooded to every other port. */
	inject(0, 0, frame(client_mac, x_mac, CLIENT_IP, 0x0a4d0077u, 1000, 2000, payload, 16));
	run();
	ck_assert_uint_eq(drain(0), 0);
	for (unsigned p = 1; p < NPORTS; p++)
		seen += drain(p) == 1;
	ck_assert_uint_eq(seen, NPORTS - 1);
	/* X speaks on n3's port, then a1 -> X goes only there. */
	node_mac(3, n3_mac);
	inject(3, 0, frame(x_mac, client_mac, 0x0a4d0077u, CLIENT_IP, 2000, 1000, payload, 16));
	run();
	ck_assert_uint_eq(drain(0), 1); /* a1 was learnt from the first frame */
	ck_assert_uint_eq(drain_all(), 0);
	inject(0, 0, frame(client_mac, x_mac, CLIENT_IP, 0x0a4d0077u, 1000, 2000, payload, 16));
	run();
	ck_assert_uint_eq(drain(3), 1);
	ck_assert_uint_eq(drain_all(), 0);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_L2_FORWARDED), 2);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_L2_FLOODED), 1);
	(void)n3_mac;
}
END_TEST

/*
 * Entries filled in the same round spread their copies: a node that holds a
 * copy already costs more as a target, so two keys of one home, each short
 * of one replica, do not both pick the same node (all nodes equal here).
 */
START_TEST(targets_spread_over_nodes)
{
	char a[16], b[16];
	uint16_t home = 0, targets[4] = {0};
	unsigned got = 0;

	for (int i = 0; home == 0; i++) {
		snprintf(a, sizeof(a), "sa%d", i);
		for (int j = 0; j < 64 && home == 0; j++) {
			snprintf(b, sizeof(b), "sb%d", j);
			if (home_of(a) == home_of(b))
				home = home_of(a);
		}
	}
	command_ok("cdt pin %s%s", a, " replicas 2");
	command_ok("cdt pin %s%s", b, " replicas 2");
	usleep((sw.cfg->directory.epoch_ms + 20) * 1000);
	sw_control_poll(&sw, 0); /* the epoch's repair REPLICATEs both */
	for (int i = 0; i < 400 && got < 2; i++) {
		struct rte_mbuf *out[8];
		unsigned n;

		usleep(200); /* worker 0 sends the control thread's frames every SW_DRAIN_US */
		run();
		n = collect(home, out, 8);
		for (unsigned k = 0; k < n; k++) {
			struct rte_ipv4_hdr *ip =
			    rte_pktmbuf_mtod_offset(out[k], struct rte_ipv4_hdr *, 14);
			struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
			struct wire_replicate req;
			struct wire_msg msg;

			if (wire_decode(udp + 1, ntohs(udp->dgram_len) - 8, &msg) == WIRE_OK &&
			    msg.op == WIRE_OP_REPLICATE && wire_replicate_decode(&msg, &req) == 0 &&
			    got < 4) {
				ck_assert_uint_eq(req.ntargets, 1);
				targets[got++] = req.targets[0];
			}
		}
		free_all(out, n);
	}
	ck_assert_uint_eq(got, 2);
	ck_assert_uint_ne(targets[0], home);
	ck_assert_uint_ne(targets[1], home);
	ck_assert_uint_ne(targets[0], targets[1]);
}
END_TEST

START_TEST(write_completion_and_acks)
{
	uint16_t home = home_of("w"), other = home == 1 ? 2 : 1, third = home == 3 ? 4 : 3;
	struct cdt_entry *e;
	const struct cdt_state *st;

	command_ok("cdt pin %s%s", "w", "");
	e = cdt_find(sw.cdt, keyhash("w", 1));
	ck_assert_ptr_nonnull(e);
	/* RC_ACK(7) while completed is unknown changes nothing (it may be a late
	 * one); the home's REPLICATE reply makes 7 the completed version. */
	inject(other, 0, node_msg(WIRE_OP_RC_ACK, other, "w", 7));
	run();
	ck_assert_uint_eq(cdt_entry_state(e)->completed, 0);
	inject(home, 0, node_msg(WIRE_OP_REPLICATE | WIRE_REPLY, home, "w", 7));
	run();
	inject(other, 0, node_msg(WIRE_OP_RC_ACK, other, "w", 7));
	run();
	st = cdt_entry_state(e);
	ck_assert_uint_eq(st->completed, 7);
	ck_assert_uint_eq(st->nreplicas, 2);
	/* A late ack (6) changes nothing; an ack for 7 adds. */
	inject(third, 0, node_msg(WIRE_OP_RC_ACK, third, "w", 6));
	run();
	ck_assert_uint_eq(cdt_entry_state(e)->nreplicas, 2);
	inject(third, 0, node_msg(WIRE_OP_RC_ACK, third, "w", 7));
	run();
	ck_assert_uint_eq(cdt_entry_state(e)->nreplicas, 3);
	/* The write reply (v 8) shrinks the set to {home} before the client sees it. */
	inject(0, 0, request(WIRE_OP_PUT, "w", "v"));
	run();
	ck_assert_uint_eq(drain(home), 1);
	inject(home, 0, node_msg(WIRE_OP_PUT | WIRE_REPLY, home, "w", 8));
	run();
	st = cdt_entry_state(e);
	ck_assert_uint_eq(st->completed, 8);
	ck_assert_uint_eq(st->nreplicas, 1);
	ck_assert_uint_eq(st->replicas[0], home);
	ck_assert_uint_eq(drain(0), 1);
	/* An ack that claims to come from `third` but is sent from `other`'s address is dropped. */
	struct rte_mbuf *spoof = node_msg(WIRE_OP_RC_ACK, third, "w", 8);
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(spoof, struct rte_ipv4_hdr *, 14);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	ip->src_addr = htonl(0x0a4d0000u + other);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	inject(other, 0, spoof);
	run();
	ck_assert_uint_eq(cdt_entry_state(e)->nreplicas, 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_NOT_FROM_NODE), 1);
}
END_TEST

/* ---- Group commit at the switch (switchd/batch.c). ------------------------------------ */

/* A datagram with req_id, riders and status set after encode(). */
static struct rte_mbuf *with_ids(struct rte_mbuf *m, uint64_t req_id, uint8_t riders,
				 uint8_t status)
{
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	uint8_t *h = (uint8_t *)(udp + 1);

	wire_put64(h + WIRE_OFF_REQ_ID, req_id);
	h[WIRE_OFF_RIDERS] = riders;
	h[WIRE_OFF_STATUS] = status;
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	return m;
}

static void put_n(uint64_t req_id, const char *val)
{
	inject(0, 0, with_ids(request(WIRE_OP_PUT, "b", val), req_id, 0, 0));
}

/* The home's reply to PUT req_id of "b": version, the riders it gave versions, status. */
static void home_answers(uint16_t home, uint64_t req_id, uint64_t version, uint8_t riders,
			 uint8_t status)
{
	inject(home, 0,
	       with_ids(node_msg(WIRE_OP_PUT | WIRE_REPLY, home, "b", version), req_id, riders,
			status));
}

/* The one frame the switch sent on port: its parsed datagram (the frame is freed). */
static struct wire_msg one_sent(unsigned port, char *val, size_t cap)
{
	struct rte_mbuf *m[4];
	struct parsed p;
	unsigned n = collect(port, m, 4);

	ck_assert_uint_eq(n, 1);
	parse_out(m[0], &p);
	snprintf(val, cap, "%.*s", (int)p.msg.val_len, (const char *)p.msg.value);
	rte_pktmbuf_free(m[0]);
	return p.msg;
}

/* The replies the switch sent the client: req_id's low word -> (status, version), in order. */
static unsigned client_replies(uint32_t *req, uint8_t *status, uint64_t *version, unsigned max)
{
	struct rte_mbuf *m[16];
	unsigned n = collect(0, m, RTE_MIN(max, 16u));

	for (unsigned i = 0; i < n; i++) {
		struct parsed p;

		parse_out(m[i], &p);
		ck_assert_uint_eq(p.msg.op, WIRE_OP_PUT | WIRE_REPLY);
		ck_assert_uint_eq(ntohl(p.ip->dst_addr), CLIENT_IP);
		ck_assert_uint_eq(ntohs(p.udp->dst_port), CLIENT_PORT);
		req[i] = (uint32_t)p.msg.req_id;
		status[i] = p.msg.status;
		version[i] = p.msg.version;
	}
	free_all(m, n);
	return n;
}

START_TEST(puts_batched_while_one_is_out)
{
	uint16_t home = home_of("b");
	uint32_t req[16];
	uint8_t status[16];
	uint64_t version[16];
	char val[64];
	struct wire_msg sent;

	command_ok("cdt pin %s%s", "b", "");
	run();
	drain_all(); /* the pin's REPLICATE */
	/* The first PUT goes out; three more wait for it. */
	put_n(1, "v1");
	run();
	sent = one_sent(home, val, sizeof(val));
	ck_assert_uint_eq(sent.req_id, 1);
	ck_assert_uint_eq(sent.riders, 0);
	put_n(2, "v2");
	put_n(3, "v3");
	put_n(4, "v4");
	run();
	ck_assert_uint_eq(drain(home), 0);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_BATCH_HELD), 3);
	/* Its reply goes to its client, and the newest waiting PUT goes out for
	 * all three, the others' req_ids after its value. */
	home_answers(home, 1, 10, 0, WIRE_ST_OK);
	run();
	ck_assert_uint_eq(client_replies(req, status, version, 16), 1);
	ck_assert_uint_eq(req[0], 1);
	ck_assert_uint_eq(version[0], 10);
	sent = one_sent(home, val, sizeof(val));
	ck_assert_uint_eq(sent.req_id, 4);
	ck_assert_uint_eq(sent.riders, 2);
	ck_assert_str_eq(val, "v4");
	ck_assert_uint_eq(wire_get64(sent.rider_ids), 2);
	ck_assert_uint_eq(wire_get64(sent.rider_ids + 8), 3);
	/* Applied at 13 with two versions below it: each rider gets its own, oldest first. */
	home_answers(home, 4, 13, 2, WIRE_ST_OK);
	run();
	ck_assert_uint_eq(client_replies(req, status, version, 16), 3);
	ck_assert_uint_eq(req[0], 2);
	ck_assert_uint_eq(version[0], 11);
	ck_assert_uint_eq(req[1], 3);
	ck_assert_uint_eq(version[1], 12);
	ck_assert_uint_eq(status[0], WIRE_ST_OK);
	ck_assert_uint_eq(status[1], WIRE_ST_OK);
	ck_assert_uint_eq(req[2], 4);
	ck_assert_uint_eq(version[2], 13);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_BATCH_RIDERS), 2);
	ck_assert_uint_eq(drain(home), 0);

	/* A reply that gave the riders no versions (one was applied before):
	 * each goes to the home on its own, which answers a retry from its first
	 * attempt. */
	put_n(5, "v5");
	run();
	ck_assert_uint_eq(one_sent(home, val, sizeof(val)).req_id, 5);
	put_n(6, "v6");
	put_n(7, "v7");
	run();
	home_answers(home, 5, 14, 0, WIRE_ST_OK);
	run();
	ck_assert_uint_eq(client_replies(req, status, version, 16), 1);
	sent = one_sent(home, val, sizeof(val));
	ck_assert_uint_eq(sent.req_id, 7);
	ck_assert_uint_eq(sent.riders, 1);
	home_answers(home, 7, 20, 0, WIRE_ST_OK);
	run();
	ck_assert_uint_eq(client_replies(req, status, version, 16), 1);
	ck_assert_uint_eq(req[0], 7);
	sent = one_sent(home, val, sizeof(val));
	ck_assert_uint_eq(sent.req_id, 6);
	ck_assert_uint_eq(sent.riders, 0);
	ck_assert_str_eq(val, "v6");
	home_answers(home, 6, 12, 0, WIRE_ST_OK); /* its first attempt's version */
	run();
	ck_assert_uint_eq(client_replies(req, status, version, 16), 1);
	ck_assert_uint_eq(version[0], 12);

	/* A failed write fails only its own client: its riders, never applied,
	 * each go to the home on their own. */
	put_n(8, "v8");
	run();
	ck_assert_uint_eq(one_sent(home, val, sizeof(val)).req_id, 8);
	put_n(9, "v9");
	put_n(10, "v10");
	run();
	home_answers(home, 8, 21, 0, WIRE_ST_OK);
	run();
	ck_assert_uint_eq(client_replies(req, status, version, 16), 1);
	ck_assert_uint_eq(one_sent(home, val, sizeof(val)).req_id, 10);
	home_answers(home, 10, 21, 1, WIRE_ST_UNAVAILABLE);
	run();
	ck_assert_uint_eq(client_replies(req, status, version, 16), 1);
	ck_assert_uint_eq(req[0], 10);
	ck_assert_uint_eq(status[0], WIRE_ST_UNAVAILABLE);
	sent = one_sent(home, val, sizeof(val));
	ck_assert_uint_eq(sent.req_id, 9);
	ck_assert_uint_eq(sent.riders, 0);
	home_answers(home, 9, 22, 0, WIRE_ST_OK);
	run();
	ck_assert_uint_eq(client_replies(req, status, version, 16), 1);
	ck_assert_uint_eq(req[0], 9);
	ck_assert_uint_eq(version[0], 22);

	/* A retry of a held PUT is dropped (the held one is answered); one of
	 * the write out goes on (the home answers it as it did the first). */
	put_n(11, "v11");
	run();
	ck_assert_uint_eq(one_sent(home, val, sizeof(val)).req_id, 11);
	put_n(12, "v12");
	put_n(12, "v12");
	put_n(11, "v11");
	put_n(13, "v13");
	run();
	sent = one_sent(home, val, sizeof(val));
	ck_assert_uint_eq(sent.req_id, 11);
	ck_assert_uint_eq(sent.riders, 0);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_BATCH_DUPLICATE), 1);

	/* A write out that is never answered is given up once an agent would have
	 * resent it: its riders go on alone, and the next PUT goes out for the
	 * waiting; a retry of a waiting one goes out in its place, its first
	 * attempt alone (the home applies one of the two). */
	put_n(14, "v14");
	run();
	ck_assert_uint_eq(drain(home), 0);
	rte_delay_us_sleep((unsigned)(2 * sw.batch_stale_tsc * 1000000 / rte_get_tsc_hz()));
	put_n(14, "v14");
	run();
	{
		struct rte_mbuf *m[4];
		struct parsed a, b;

		ck_assert_uint_eq(collect(home, m, 4), 2);
		parse_out(m[0], &a);
		parse_out(m[1], &b);
		ck_assert_uint_eq(a.msg.req_id, 14); /* the first attempt, alone */
		ck_assert_uint_eq(a.msg.riders, 0);
		ck_assert_uint_eq(b.msg.req_id, 14);
		ck_assert_uint_eq(b.msg.riders, 2);
		ck_assert_uint_eq(wire_get64(b.msg.rider_ids), 12);
		ck_assert_uint_eq(wire_get64(b.msg.rider_ids + 8), 13);
		free_all(m, 2);
	}
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_BATCH_GIVEN_UP), 1);
	ck_assert_uint_eq(drain(0), 0);
	/* The write given up never goes out for a batch again: its retry goes on
	 * alone, and its late reply ends no batch. */
	put_n(11, "v11");
	run();
	sent = one_sent(home, val, sizeof(val));
	ck_assert_uint_eq(sent.req_id, 11);
	ck_assert_uint_eq(sent.riders, 0);
	home_answers(home, 11, 30, 0, WIRE_ST_OK);
	run();
	ck_assert_uint_eq(client_replies(req, status, version, 16), 1);
	ck_assert_uint_eq(req[0], 11);
	home_answers(home, 14, 33, 2, WIRE_ST_OK);
	run();
	ck_assert_uint_eq(client_replies(req, status, version, 16), 3);
	ck_assert_uint_eq(req[0], 12);
	ck_assert_uint_eq(version[0], 31);
}
END_TEST

START_TEST(puts_go_on_at_once_without_batches)
{
	uint16_t home = home_of("b");

	sw_fini(&sw);
	cfg.directory.batch_writes = false;
	start_switch("s1");
	learn_nodes();
	cfg.directory.batch_writes = true;
	command_ok("cdt pin %s%s", "b", "");
	run();
	drain_all();
	put_n(1, "v1");
	put_n(2, "v2");
	run();
	ck_assert_uint_eq(drain(home), 2);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_BATCH_HELD), 0);
}
END_TEST

/* Frames with op the switch sent to each node in 300 ms of control rounds (epochs of
 * 100 ms: the repair of short sets), counted by node. */
static void ops_sent(uint8_t op, unsigned count[5], unsigned *targets)
{
	struct rte_mbuf *out[16];
	uint64_t until = clock_mono_us() + 300 * 1000;

	memset(count, 0, 5 * sizeof(*count));
	while (clock_mono_us() < until) {
		usleep(200); /* worker 0 sends the control thread's frames every SW_DRAIN_US */
		sw_control_poll(&sw, 0);
		run();
		for (uint16_t id = 1; id <= 4; id++) {
			unsigned n = collect(id, out, 16);

			for (unsigned k = 0; k < n; k++) {
				struct parsed p;

				parse_out(out[k], &p);
				if (p.msg.op != op)
					continue;
				count[id]++;
				if (op == WIRE_OP_REPLICATE && targets) {
					struct wire_replicate r;

					ck_assert_int_eq(wire_replicate_decode(&p.msg, &r), 0);
					ck_assert_uint_eq(r.ntargets, 1);
					*targets |= 1u << r.targets[0];
				}
			}
			free_all(out, n);
		}
	}
}

/* A removed entry's UNREPLICATE goes to the home and the nodes it was copied to, no others. */
START_TEST(unreplicate_only_where_copied)
{
	uint16_t home = home_of("w");
	unsigned count[5], targets = 0, none = 0;
	char line[64], hex[8];

	command_ok("cdt pin %s replicas 2%s", "w", "");
	/* No acks come: every epoch's repair asks the home again. */
	ops_sent(WIRE_OP_REPLICATE, count, &targets);
	ck_assert_uint_ge(count[home], 1);
	ck_assert_uint_ne(targets, 0);
	ck_assert(!(targets & (1u << home)));
	snprintf(line, sizeof(line), "cdt unpin %s", hexkey("w", hex));
	free(ctl_command(&sw, line));
	ck_assert_ptr_null(cdt_find(sw.cdt, keyhash("w", 1)));
	ops_sent(WIRE_OP_UNREPLICATE, count, NULL);
	for (uint16_t id = 1; id <= 4; id++) {
		bool copied = id == home || targets >> id & 1;

		ck_assert_msg(count[id] == copied, "node %u: %u UNREPLICATE", id, count[id]);
		none += !copied;
	}
	ck_assert_uint_ge(none, 1); /* some node had no copy, and got nothing */
}
END_TEST

/* A frame from node id: a write reply of `home` listing the holders of its write-through. */
static struct rte_mbuf *through_reply(uint16_t id, const char *key, uint64_t version,
				      const uint16_t *holders, unsigned n)
{
	uint8_t buf[2048], list[32], mac[6];
	struct wire_msg msg = {
	    .op = WIRE_OP_PUT | WIRE_REPLY,
	    .flags = WIRE_F_WRITE_THROUGH,
	    .req_id = 0x0000000700000001ull,
	    .keyhash = keyhash(key, strlen(key)),
	    .version = version,
	    .node = id,
	    .ret_ip = CLIENT_IP,
	    .ret_port = CLIENT_PORT,
	    .key_len = (uint16_t)strlen(key),
	    .val_len = 2 * n,
	    .key = (const uint8_t *)key,
	    .value = list,
	};
	for (unsigned i = 0; i < n; i++)
		wire_put16(list + 2 * i, holders[i]);
	int len = wire_encode(&msg, buf, sizeof(buf));

	ck_assert_int_gt(len, 0);
	node_mac(id, mac);
	return frame(mac, vip_mac, 0x0a4d0000u + id, VIP, SVC, SVC, buf, (size_t)len);
}

/* Write-through: the reply's holders join at once; reads carry the completed version. */
START_TEST(write_through_reply_and_stamped_reads)
{
	uint16_t home = home_of("w"), a = home == 1 ? 2 : 1, b = home == 3 ? 4 : 3;
	const uint16_t holders[2] = {a, b};
	struct rte_mbuf *out[4];
	struct cdt_entry *e;
	const struct cdt_state *st;
	unsigned got = 0;

	command_ok("cdt pin %s%s", "w", "");
	e = cdt_find(sw.cdt, keyhash("w", 1));
	ck_assert_ptr_nonnull(e);
	/*
	 * Fresh (completed unknown): a read's reply sets nothing. It may carry
	 * the version kept while a write was pushed, after that write's reply.
	 */
	inject(0, 0, request(WIRE_OP_GET, "w", NULL));
	run();
	ck_assert_uint_eq(drain(home), 1);
	inject(home, 0, node_msg(WIRE_OP_GET | WIRE_REPLY, home, "w", 2));
	run();
	ck_assert_uint_eq(drain(0), 1);
	ck_assert_uint_eq(cdt_entry_state(e)->completed, 0);
	inject(home, 0, node_msg(WIRE_OP_REPLICATE | WIRE_REPLY, home, "w", 3));
	run();
	ck_assert_uint_eq(cdt_entry_state(e)->completed, 3);
	inject(0, 0, request(WIRE_OP_PUT, "w", "v"));
	run();
	ck_assert_uint_eq(drain(home), 1);
	inject(home, 0, through_reply(home, "w", 4, holders, 2));
	run();
	st = cdt_entry_state(e);
	ck_assert_uint_eq(st->completed, 4);
	ck_assert_uint_eq(st->nreplicas, 3);
	ck_assert(cdt_state_has(st, home) && cdt_state_has(st, a) && cdt_state_has(st, b));
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_THROUGH_HOLDERS), 2);
	ck_assert_uint_eq(drain(0), 1); /* the client's reply */
	/* A read goes to one of them, stamped with 4, checksums right. */
	inject(0, 0, request(WIRE_OP_GET, "w", NULL));
	run();
	for (unsigned port = 1; port < NPORTS && !got; port++) {
		got = collect(port, out, 4);
		if (got) {
			struct parsed p;

			ck_assert_uint_eq(got, 1);
			parse_out(out[0], &p);
			ck_assert_uint_eq(p.msg.version, 4);
			rte_pktmbuf_free(out[0]);
		}
	}
	ck_assert_uint_eq(got, 1);
}
END_TEST

/* A replica's MOVED names the home: it is taken from the replica (its address) and forwarded. */
START_TEST(moved_from_a_replica_forwarded)
{
	uint16_t home = home_of("w"), replica = home == 1 ? 2 : 1;
	uint8_t buf[2048], mac[6];
	struct wire_msg msg = {
	    .op = WIRE_OP_GET | WIRE_REPLY,
	    .status = WIRE_ST_MOVED,
	    .req_id = 0x0000000700000001ull,
	    .keyhash = keyhash("w", 1),
	    .node = home,
	    .ret_ip = CLIENT_IP,
	    .ret_port = CLIENT_PORT,
	    .key_len = 1,
	    .key = (const uint8_t *)"w",
	};
	int len = wire_encode(&msg, buf, sizeof(buf));

	ck_assert_int_gt(len, 0);
	inject(0, 0, request(WIRE_OP_GET, "w", NULL)); /* the switch learns the client */
	run();
	ck_assert_uint_eq(drain(home), 1);
	node_mac(replica, mac);
	inject(replica, 0,
	       frame(mac, vip_mac, 0x0a4d0000u + replica, VIP, SVC, SVC, buf, (size_t)len));
	run();
	ck_assert_uint_eq(drain(0), 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_NOT_FROM_NODE), 0);
	/* From an address that is no node's: dropped. */
	inject(replica, 0, frame(mac, vip_mac, 0x0a4d0077u, VIP, SVC, SVC, buf, (size_t)len));
	run();
	ck_assert_uint_eq(drain_all(), 0);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_NOT_FROM_NODE), 1);
}
END_TEST

START_TEST(hint_answered)
{
	struct rte_mbuf *out[4];
	struct parsed p;

	command_ok("cdt pin %s force n4%s", "hot", "");
	inject(0, 0, request(WIRE_OP_HINT, "hot", NULL));
	run();
	ck_assert_uint_eq(collect(0, out, 4), 1);
	parse_out(out[0], &p);
	ck_assert_uint_eq(p.msg.op, WIRE_OP_HINT | WIRE_REPLY);
	ck_assert_uint_eq(p.msg.status, WIRE_ST_OK);
	ck_assert_uint_eq(p.msg.node, 4);
	ck_assert(p.msg.flags & WIRE_F_REPLICATED);
	ck_assert_uint_eq(ntohl(p.ip->dst_addr), CLIENT_IP);
	free_all(out, 1);
	ck_assert_uint_eq(drain_all(), 0);
}
END_TEST

START_TEST(debug_logs_decisions)
{
	char *out;

	command_ok("cdt pin %s force n1,n2,n3%s", "hot", "");
	free(ctl_command(&sw, "debug on"));
	inject(0, 0, request(WIRE_OP_GET, "hot", NULL));
	run();
	drain_all();
	sw_control_poll(&sw, 0);
	out = ctl_command(&sw, "debug show");
	ck_assert_msg(strstr(out, "key=hot op=GET dir=yes") && strstr(out, "chosen=n") &&
			  strstr(out, "inflight=0 health=100;"),
		      "%s", out);
	free(out);
	out = ctl_command(&sw, "stats");
	ck_assert_msg(strstr(out, "\"requests_forwarded\":1") &&
			  strstr(out, "\"wire_bad_magic\":0"),
		      "%s", out);
	free(out);
}
END_TEST

/* Node id's DIGEST with the given queue metric (0..100). */
static struct rte_mbuf *digest_from(uint16_t id, uint32_t seq, uint8_t queue)
{
	struct dig_digest d = {.interval_ms = 100,
			       .seq = seq,
			       .boot_id = 42,
			       .ts_us = seq,
			       .m = {.queue = queue},
			       .health = 100};
	uint8_t buf[256], mac[6];
	int n = dig_datagram_build(id, &d, buf, sizeof(buf));

	ck_assert_int_gt(n, 0);
	node_mac(id, mac);
	return frame(mac, vip_mac, 0x0a4d0000u + id, VIP, SVC, SVC, buf, (size_t)n);
}

START_TEST(digests_drive_health_and_liveness)
{
	struct rte_mbuf *out[4];
	struct parsed p;
	const char *key = NULL;
	char buf[32];

	/* A loaded n2: its health drops below 100, and it is up. */
	inject(2, 0, digest_from(2, 1, 100));
	run();
	ck_assert_uint_eq(drain_all(), 0); /* consumed, never forwarded */
	sw_control_poll(&sw, 0);
	ck_assert_uint_eq(sw.scores.state[2], SCORES_UP);
	ck_assert_uint_lt(scores_health(&sw.scores, 2), 100);
	ck_assert_uint_eq(sw.scores.state[1], SCORES_UNKNOWN);
	/* Nodes never heard get 3 slow intervals (600 ms), then they are down;
	 * n2 keeps talking. */
	for (uint32_t seq = 2; seq < 14; seq++) {
		usleep(70 * 1000);
		inject(2, 0, digest_from(2, seq, 0));
		run();
		sw_control_poll(&sw, 0);
	}
	ck_assert(scores_alive(&sw.scores, 2));
	ck_assert(!scores_alive(&sw.scores, 1));
	ck_assert_uint_eq(sw.scores.state[1], SCORES_DOWN);
	/* A read whose home is down is answered UNAVAILABLE by the switch. */
	for (int i = 0; !key && i < 1000; i++) {
		snprintf(buf, sizeof(buf), "k%d", i);
		if (home_of(buf) == 1)
			key = buf;
	}
	inject(0, 0, request(WIRE_OP_GET, key, NULL));
	run();
	ck_assert_uint_eq(collect(0, out, 4), 1);
	parse_out(out[0], &p);
	ck_assert_uint_eq(p.msg.status, WIRE_ST_UNAVAILABLE);
	free_all(out, 1);
	ck_assert_uint_eq(drain_all(), 0);
}
END_TEST

/*
 * A switch whose workers did not poll (stopped, or its lcores starved) has
 * digests waiting unread: its silence is its own, and no node is marked
 * down for it. Once its workers read them, the nodes are heard.
 */
START_TEST(stalled_switch_blames_no_node)
{
	inject(2, 0, digest_from(2, 1, 0));
	run();
	sw_control_poll(&sw, 0);
	ck_assert(scores_alive(&sw.scores, 2));
	/* n2 goes on sending, but nothing reads its port for 800 ms. */
	for (uint32_t seq = 2; seq < 10; seq++) {
		usleep(100 * 1000);
		inject(2, 0, digest_from(2, seq, 0));
	}
	sw_control_poll(&sw, 0);
	ck_assert(scores_alive(&sw.scores, 2));
	ck_assert_uint_ge(sw_counter(&sw, SW_CNT_DETECTION_PAUSED), 1);
	run();
	sw_control_poll(&sw, 0);
	ck_assert(scores_alive(&sw.scores, 2));
	ck_assert_uint_eq(intake_digests_received(&sw), 9);
}
END_TEST

/*
 * DIGEST only from the address of the node it names and on the port that node
 * sits behind; SYNC only from a configured peer (s1 has none). Spoofs are
 * dropped, counted, and change no health.
 */
START_TEST(spoofed_digest_and_sync_dropped)
{
	struct rte_mbuf *m = digest_from(2, 1, 100);
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	uint8_t dgram[64], mac[6];
	struct wire_msg sync = {.op = WIRE_OP_SYNC,
				.flags = WIRE_F_VIA_SWITCH,
				.val_len = 4,
				.value = (const uint8_t *)"sync"};
	int n = wire_encode(&sync, dgram, sizeof(dgram));

	/* n2's digest from n3's address. */
	ip->src_addr = htonl(0x0a4d0003u);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	inject(3, 0, m);
	/* n2's digest from n2's address, on n3's port. */
	inject(3, 0, digest_from(2, 2, 100));
	/* A SYNC from a node's address: no peer. */
	ck_assert_int_gt(n, 0);
	node_mac(4, mac);
	inject(4, 0, frame(mac, vip_mac, 0x0a4d0004u, VIP, SVC, SVC, dgram, (size_t)n));
	run();
	sw_control_poll(&sw, 0);
	ck_assert_uint_eq(drain_all(), 0);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_DIGEST_SRC), 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_DIGEST_PORT), 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_SYNC), 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_SYNCS), 0);
	ck_assert_uint_eq(sw.scores.state[2], SCORES_UNKNOWN);
	ck_assert_uint_eq(intake_digests_received(&sw), 0);

	/* The same digest from n2, where n2 is: taken. */
	inject(2, 0, digest_from(2, 3, 100));
	run();
	sw_control_poll(&sw, 0);
	ck_assert_uint_eq(sw.scores.state[2], SCORES_UP);
	ck_assert_uint_eq(intake_digests_received(&sw), 1);
}
END_TEST

/* ---- The cluster key. ------------------------------------------------------------------- */

/* m's datagram with key's MAC appended (key NULL: 32 bytes that are no MAC), as a new frame. */
static struct rte_mbuf *sealed(struct rte_mbuf *m, const struct wire_key *key)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	size_t len = ntohs(udp->dgram_len) - 8;
	uint8_t buf[2048], src[6], dst[6];
	struct rte_mbuf *out;

	memcpy(buf, udp + 1, len);
	if (key)
		ck_assert_int_eq(wire_seal(key, buf, len), (int)(len + WIRE_MAC_LEN));
	else
		memset(buf + len, 0x5a, WIRE_MAC_LEN);
	memcpy(src, eth->src_addr.addr_bytes, 6);
	memcpy(dst, eth->dst_addr.addr_bytes, 6);
	out = frame(src, dst, ntohl(ip->src_addr), ntohl(ip->dst_addr), ntohs(udp->src_port),
		    ntohs(udp->dst_port), buf, len + WIRE_MAC_LEN);
	rte_pktmbuf_free(m);
	return out;
}

/*
 * With a key, DIGEST, RC_ACK and REPLICATE replies need its MAC: without one
 * (auth_missing) or with a wrong one (auth_bad) they are dropped and change
 * no health and no replica set; sealed, they are taken. What the switch sends
 * (REPLICATE) is sealed. Data ops are as without a key: a trailer on a GET is
 * trailing bytes.
 */
START_TEST(keyed_control_needs_mac)
{
	uint16_t home = home_of("w"), other = home == 1 ? 2 : 1;
	struct wire_key other_key;
	struct cdt_entry *e;
	struct rte_mbuf *out[8];
	unsigned n = 0;

	sw.keyed = true;
	sw.key.len = WIRE_KEY_MIN_LEN;
	for (int i = 0; i < WIRE_KEY_MIN_LEN; i++)
		sw.key.bytes[i] = (uint8_t)(0x30 + i);
	other_key = sw.key;
	other_key.bytes[5] ^= 0x80;

	inject(2, 0, digest_from(2, 1, 100));
	inject(2, 0, sealed(digest_from(2, 2, 100), &other_key));
	inject(2, 0, sealed(digest_from(2, 3, 100), NULL));
	run();
	sw_control_poll(&sw, 0);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_AUTH_MISSING), 1);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_AUTH_BAD), 2);
	ck_assert_uint_eq(sw.scores.state[2], SCORES_UNKNOWN);
	ck_assert_uint_eq(intake_digests_received(&sw), 0);
	inject(2, 0, sealed(digest_from(2, 4, 100), &sw.key));
	run();
	sw_control_poll(&sw, 0);
	ck_assert_uint_eq(sw.scores.state[2], SCORES_UP);
	ck_assert_uint_eq(intake_digests_received(&sw), 1);

	/* The switch's own REPLICATE leaves sealed. */
	struct wire_replicate req = {.owner = 1, .ntargets = 1, .targets = {other}};

	ck_assert_int_eq(
	    egress_replicate(&sw, home, keyhash("w", 1), (const uint8_t *)"w", 1, 0, &req), 0);
	for (int i = 0; i < 200 && n == 0; i++) {
		usleep(200); /* worker 0 sends the control thread's frames every SW_DRAIN_US */
		run();
		n = collect(home, out, 8);
	}
	ck_assert_uint_ge(n, 1);
	{
		struct rte_ipv4_hdr *ip =
		    rte_pktmbuf_mtod_offset(out[0], struct rte_ipv4_hdr *, 14);
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
		size_t len = ntohs(udp->dgram_len) - 8, body;
		struct wire_msg msg;

		ck_assert_int_eq(wire_auth_check(&sw.key, udp + 1, len, &body), WIRE_AUTH_OK);
		ck_assert_int_eq(wire_decode(udp + 1, body, &msg), WIRE_OK);
		ck_assert_uint_eq(msg.op, WIRE_OP_REPLICATE);
		ck_assert_int_eq(wire_decode(udp + 1, len, &msg), WIRE_ERR_TRAILING);
	}
	free_all(out, n);
	command_ok("cdt pin %s%s", "w", "");
	e = cdt_find(sw.cdt, keyhash("w", 1));
	ck_assert_ptr_nonnull(e);

	/* A REPLICATE reply without a MAC gives no version; sealed, it does. */
	inject(home, 0, node_msg(WIRE_OP_REPLICATE | WIRE_REPLY, home, "w", 9));
	run();
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_AUTH_MISSING), 2);
	ck_assert_uint_eq(cdt_entry_state(e)->completed, 0);
	inject(home, 0, sealed(node_msg(WIRE_OP_REPLICATE | WIRE_REPLY, home, "w", 7), &sw.key));
	run();
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_CTL_REPLIES), 1);
	ck_assert_uint_eq(cdt_entry_state(e)->completed, 7);
	/* RC_ACK(7), the completed version: unsealed or another key's, no replica joins. */
	inject(other, 0, node_msg(WIRE_OP_RC_ACK, other, "w", 7));
	inject(other, 0, sealed(node_msg(WIRE_OP_RC_ACK, other, "w", 7), &other_key));
	run();
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_AUTH_MISSING), 3);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_AUTH_BAD), 3);
	ck_assert_uint_eq(cdt_entry_state(e)->nreplicas, 1);
	inject(other, 0, sealed(node_msg(WIRE_OP_RC_ACK, other, "w", 7), &sw.key));
	run();
	ck_assert_uint_eq(cdt_entry_state(e)->nreplicas, 2);

	/* Data ops carry no MAC: forwarded as ever, and a trailer is trailing bytes. */
	drain_all();
	inject(0, 0, request(WIRE_OP_GET, "w", NULL));
	inject(0, 0, sealed(request(WIRE_OP_GET, "w", NULL), &sw.key));
	run();
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_DROP_WIRE_TRAILING), 1);
	ck_assert_uint_eq(drain_all(), 1);
	memset(&sw.key, 0, sizeof(sw.key));
}
END_TEST

/* ---- Two workers under concurrent CDT updates. ------------------------------------------ */

START_TEST(two_workers_concurrent_updates)
{
	struct cdt_entry *hot, *w;
	uint16_t set_a[2] = {1, 2}, set_b[2] = {3, 4};
	uint16_t wh;
	uint64_t deadline;
	unsigned hints = 0, sent = 0, flips = 0;
	struct rte_mbuf *out[64];

	teardown();
	/* The same switch with two worker lcores. */
	struct cfg_switch *s1 = (struct cfg_switch *)cfg_switch_lookup(&cfg, "s1");

	s1->nlcores = 2;
	s1->lcores[1] = 2;
	start_switch("s1");
	s1->nlcores = 1;
	ck_assert_uint_eq(sw.nworkers, 2);
	learn_nodes();
	command_ok("cdt pin %s force n1,n2%s", "hot", "");
	command_ok("cdt pin %s%s", "w", "");
	hot = cdt_find(sw.cdt, keyhash("hot", 3));
	w = cdt_find(sw.cdt, keyhash("w", 1));
	wh = home_of("w");
	/* Versions pair with sets: 1 <-> {n1,n2}, 2 <-> {n3,n4}. */
	rte_rcu_qsbr_thread_online(sw.qsbr, sw.nworkers);
	ck_assert_int_eq(cdt_set_replicas(sw.cdt, hot, set_a, 2, 1), 0);
	rte_rcu_qsbr_thread_offline(sw.qsbr, sw.nworkers);
	ck_assert_int_eq(sw_start(&sw), 0);

	deadline = rte_get_tsc_cycles() + rte_get_tsc_hz(); /* 1 s */
	uint64_t version = 0;

	while (rte_get_tsc_cycles() < deadline) {
		/* Both workers: HINTs and GETs of hot, write replies for w from two nodes. */
		for (unsigned q = 0; q < 2; q++) {
			if (rte_ring_free_count(rx_rings[0][q]) > 8) {
				inject(0, q, request(WIRE_OP_HINT, "hot", NULL));
				inject(0, q, request(WIRE_OP_GET, "hot", NULL));
				sent++;
			}
			if (rte_ring_free_count(rx_rings[wh][q]) > 4) {
				version++;
				inject(wh, q, node_msg(WIRE_OP_PUT | WIRE_REPLY, wh, "w", version));
			}
		}
		/* The control thread flips hot's set and version. */
		rte_rcu_qsbr_thread_online(sw.qsbr, sw.nworkers);
		flips++;
		ck_assert_int_eq(
		    cdt_set_replicas(sw.cdt, hot, flips % 2 ? set_b : set_a, 2, flips % 2 ? 2 : 1),
		    0);
		rte_rcu_qsbr_thread_offline(sw.qsbr, sw.nworkers);
		/* HINT answers pair node and version from one snapshot: never torn. */
		unsigned n = collect(0, out, 64);

		for (unsigned k = 0; k < n; k++) {
			struct parsed p;

			parse_out(out[k], &p);
			if (p.msg.op == (WIRE_OP_HINT | WIRE_REPLY)) {
				hints++;
				if (p.msg.version == 1)
					ck_assert(p.msg.node == 1 || p.msg.node == 2);
				else
					ck_assert(p.msg.version == 2 &&
						  (p.msg.node == 3 || p.msg.node == 4));
			}
		}
		free_all(out, n);
		for (unsigned port = 1; port < NPORTS; port++)
			drain(port);
	}
	__atomic_store_n(&sw.stop, 1, __ATOMIC_RELAXED);
	rte_eal_mp_wait_lcore();
	ck_assert_uint_gt(hints, 100);
	ck_assert_uint_gt(flips, 100);
	ck_assert_uint_gt(sent, 100);
	/* Every write reply a worker saw advanced or kept `completed`: it is the max seen. */
	const struct cdt_state *st = cdt_entry_state(w);

	ck_assert_uint_ge(st->completed, 1);
	ck_assert_uint_le(st->completed, version);
	ck_assert_uint_eq(st->nreplicas, 1);
	ck_assert_uint_eq(st->replicas[0], wh);
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_CDT_UPDATE_FAILED), 0);
	fprintf(stderr,
		"two workers: %u hints, %u gets, %u flips, %llu write replies, %llu CAS retries\n",
		hints, sent, flips, (unsigned long long)version,
		(unsigned long long)sw_counter(&sw, SW_CNT_CDT_UPDATE_RETRIES));
	for (unsigned q = 0; q < NRX; q++)
		for (unsigned p = 0; p < NPORTS; p++) {
			void *m;

			while (rte_ring_dequeue(rx_rings[p][q], &m) == 0)
				rte_pktmbuf_free(m);
		}
}
END_TEST

/* ---- Pure state transitions (the coherence rules the directory builds on). ------------------ */

/* A state with the given replicas, in room for any size. */
static struct cdt_state *state_of(union cdt_state_room *room, uint64_t completed,
				  const uint16_t *replicas, unsigned n)
{
	memset(room, 0, sizeof(*room));
	room->st.completed = completed;
	room->st.nreplicas = (uint8_t)n;
	memcpy(room->st.replicas, replicas, n * sizeof(*replicas));
	return &room->st;
}

START_TEST(state_transitions)
{
	union cdt_state_room cur_room, next_room;
	struct cdt_state *cur = state_of(&cur_room, 5, (const uint16_t[]){1, 2}, 2);
	struct cdt_state *next = &next_room.st;
	unsigned cap = cdt_state_cap(8);

	ck_assert(!cdt_state_on_reply(cur, 4, 3, cap, next)); /* older: nothing */
	ck_assert(!cdt_state_on_reply(cur, 0, 3, cap, next)); /* no version: nothing */
	ck_assert(cdt_state_on_reply(cur, 5, 3, cap, next));  /* equal: replier joins */
	ck_assert_uint_eq(next->nreplicas, 3);
	ck_assert(!cdt_state_on_reply(cur, 5, 2, cap, next)); /* already in the set */
	ck_assert(cdt_state_on_reply(cur, 6, 1, cap, next));  /* newer: completion */
	ck_assert_uint_eq(next->completed, 6);
	ck_assert_uint_eq(next->nreplicas, 1);
	ck_assert_uint_eq(next->replicas[0], 1);
	ck_assert(!cdt_state_on_rc_ack(cur, 4, 3, 1, cap, next)); /* late ack */
	ck_assert(cdt_state_on_rc_ack(cur, 5, 3, 1, cap, next));
	ck_assert_uint_eq(next->replicas[2], 3);
	ck_assert(cdt_state_on_rc_ack(cur, 9, 4, 1, cap, next)); /* unknown write: {home, r} */
	ck_assert_uint_eq(next->completed, 9);
	ck_assert_uint_eq(next->nreplicas, 2);
	ck_assert_uint_eq(next->replicas[0], 1);
	ck_assert_uint_eq(next->replicas[1], 4);
	/* A fresh entry (completed unknown) takes no ack: it may be a late one. */
	cur = state_of(&cur_room, 0, (const uint16_t[]){1}, 1);
	ck_assert(!cdt_state_on_rc_ack(cur, 9, 4, 1, cap, next));
	ck_assert(cdt_state_on_reply(cur, 9, 1, cap, next)); /* the home's REPLICATE reply */
	ck_assert_uint_eq(next->completed, 9);
	/* A trim: the node leaves, the version stays; never the home, never the last. */
	cur = state_of(&cur_room, 5, (const uint16_t[]){1, 2, 3}, 3);
	ck_assert(cdt_state_without(cur, 2, 1, next));
	ck_assert_uint_eq(next->completed, 5);
	ck_assert_uint_eq(next->nreplicas, 2);
	ck_assert_uint_eq(next->replicas[0], 1);
	ck_assert_uint_eq(next->replicas[1], 3);
	ck_assert(!cdt_state_without(cur, 1, 1, next)); /* the home */
	ck_assert(!cdt_state_without(cur, 4, 1, next)); /* not a member */
	cur = state_of(&cur_room, 5, (const uint16_t[]){2}, 1);
	ck_assert(!cdt_state_without(cur, 2, 1, next)); /* the last one */
}
END_TEST

/*
 * Sets past 16: the cap is max_replicas above 16 (16 below it, as before),
 * a set grows one ack at a time up to the cap and not past it, keeps its
 * members in order, and a completion leaves a small set again.
 */
START_TEST(state_sets_past_sixteen)
{
	union cdt_state_room a, b;
	struct cdt_state *cur = state_of(&a, 7, (const uint16_t[]){1}, 1), *next = &b.st;
	unsigned cap = cdt_state_cap(64);

	ck_assert_uint_eq(cdt_state_cap(1), CDT_SMALL_REPLICAS);
	ck_assert_uint_eq(cdt_state_cap(16), 16);
	ck_assert_uint_eq(cdt_state_cap(17), 17);
	ck_assert_uint_eq(cap, 64);
	ck_assert_uint_eq(cdt_state_cap(1000), CDT_MAX_REPLICAS);
	ck_assert_uint_eq(CDT_STATE_SMALL, 56); /* the small state's size is unchanged */
	ck_assert_uint_eq(cdt_state_size(16), 56);
	ck_assert_uint_eq(cdt_state_size(17), CDT_STATE_SIZE(17));
	for (uint16_t r = 2; r <= 80; r++) {
		bool joined = cdt_state_on_rc_ack(cur, 7, r, 1, cap, next);

		ck_assert_msg(joined == (r <= 64), "replica %u: joined %d", r, joined);
		if (joined)
			a = b;
	}
	ck_assert_uint_eq(cur->nreplicas, 64);
	for (unsigned i = 0; i < 64; i++)
		ck_assert_uint_eq(cur->replicas[i], i + 1);
	ck_assert(cdt_state_has(cur, 64));
	ck_assert(!cdt_state_has(cur, 65));
	/* The same replier again, at the cap: nothing. */
	ck_assert(!cdt_state_on_reply(cur, 7, 30, cap, next));
	/* With the old cap (max_replicas 8) the same set stops at 16. */
	cur = state_of(&a, 7, (const uint16_t[]){1}, 1);
	for (uint16_t r = 2; r <= 20; r++)
		if (cdt_state_on_rc_ack(cur, 7, r, 1, cdt_state_cap(8), next))
			a = b;
	ck_assert_uint_eq(cur->nreplicas, 16);
	/* A write completes: {home, replier}, small again. */
	ck_assert(cdt_state_on_rc_ack(cur, 8, 40, 1, cap, next));
	ck_assert_uint_eq(next->nreplicas, 2);
	ck_assert_uint_eq(next->replicas[1], 40);
}
END_TEST

/* A directory of small sets only (cap 16) has no second pool and refuses a larger set. */
START_TEST(directory_sets_past_sixteen)
{
	size_t qs = rte_rcu_qsbr_get_memsize(2);
	struct rte_rcu_qsbr *q = rte_zmalloc("test_qsbr", qs, RTE_CACHE_LINE_SIZE);
	uint16_t set[40];
	struct cdt *small, *large;
	struct cdt_entry *e;
	unsigned retries = 0;

	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(rte_rcu_qsbr_init(q, 2), 0);
	rte_rcu_qsbr_thread_register(q, 0);
	rte_rcu_qsbr_thread_register(q, 1);
	for (unsigned i = 0; i < 40; i++)
		set[i] = (uint16_t)(i + 1);
	errno = 0;
	ck_assert_ptr_null(cdt_create("t0", 16, 1, 0, q, 1));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(cdt_create("t0", 16, 1, CDT_MAX_REPLICAS + 1, q, 1));
	small = cdt_create("ts", 16, 1, 8, q, 1);
	large = cdt_create("tl", 16, 1, 40, q, 1);
	ck_assert_ptr_nonnull(small);
	ck_assert_ptr_nonnull(large);
	ck_assert_ptr_null(small->states_large);
	ck_assert_uint_eq(small->cap, 16);
	ck_assert_uint_eq(large->cap, 40);
	ck_assert_uint_eq(large->states_large->elt_size, CDT_STATE_SIZE(40));
	errno = 0;
	ck_assert_ptr_null(cdt_install(small, 1, "k", 1, 1, set, 17, 3));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(cdt_install(large, 1, "k", 1, 1, set, 41, 3));

	/* 16 replicas: a small state; the 17th ack moves the set to the large pool. */
	rte_rcu_qsbr_thread_online(q, 1);
	e = cdt_install(large, 1, "k", 1, 1, set, 16, 3);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(rte_mempool_in_use_count(large->states_large), 0);
	ck_assert_int_eq(cdt_apply(large, 1, e, CDT_EV_RC_ACK, 3, 17, &retries), 1);
	ck_assert_uint_eq(cdt_entry_state(e)->nreplicas, 17);
	ck_assert_uint_eq(cdt_entry_state(e)->replicas[16], 17);
	ck_assert_uint_eq(rte_mempool_in_use_count(large->states_large), 1);
	for (uint16_t r = 18; r <= 45; r++)
		cdt_apply(large, 1, e, CDT_EV_RC_ACK, 3, r, &retries);
	ck_assert_uint_eq(cdt_entry_state(e)->nreplicas, 40); /* the cap */
	for (unsigned i = 0; i < 40; i++)
		ck_assert_uint_eq(cdt_entry_state(e)->replicas[i], i + 1);
	/* A completion: {replier}, a small state; every large one back in its pool. */
	ck_assert_int_eq(cdt_apply(large, 1, e, CDT_EV_REPLY, 4, 1, &retries), 1);
	ck_assert_uint_eq(cdt_entry_state(e)->nreplicas, 1);
	ck_assert_uint_eq(rte_mempool_in_use_count(large->states_large), 0);
	/* The control thread sets a large set at once, and removes it. */
	ck_assert_int_eq(cdt_set_replicas(large, e, set, 40, 5), 0);
	ck_assert_uint_eq(cdt_entry_state(e)->nreplicas, 40);
	ck_assert_uint_eq(rte_mempool_in_use_count(large->states_large), 1);
	ck_assert_int_eq(cdt_remove(large, 1), 0);
	ck_assert_uint_eq(rte_mempool_in_use_count(large->states_large), 0);
	rte_rcu_qsbr_thread_offline(q, 1);
	cdt_free(small);
	cdt_free(large);
	rte_free(q);
}
END_TEST

/*
 * Reads of a set past 16 weigh a window of 16 replicas: equal replicas are
 * each chosen about equally, a loaded one less, a down one never.
 */
START_TEST(large_set_reads_spread)
{
	static struct scores s; /* large: not on the stack */
	uint16_t cand[64];
	unsigned won[65] = {0};
	uint64_t rng = 0x9e3779b97f4a7c15ull;

	scores_init(&s, &cfg, 1);
	for (uint16_t id = 1; id <= 64; id++) {
		scores_set(&s, id, 100, SCORES_UP);
		cand[id - 1] = id;
	}
	scores_set(&s, 5, 100, SCORES_DOWN);
	s.outstanding[0][9] = 3; /* three reads queued at n9 */
	for (unsigned i = 0; i < 64000; i++)
		won[sel_pick(&s, cand, 64, &rng)]++;
	ck_assert_uint_eq(won[0], 0);
	ck_assert_uint_eq(won[5], 0);
	ck_assert_uint_lt(won[9], 100);
	for (uint16_t id = 1; id <= 64; id++) /* about 64000 / 62 each */
		if (id != 5 && id != 9)
			ck_assert_msg(won[id] > 700 && won[id] < 1400, "node %u won %u of 64000",
				      id, won[id]);
}
END_TEST

/* Two nodes on one host (same address, own ports): learning the host reaches both. */
START_TEST(nodes_sharing_an_address_both_learnt)
{
	static const char *json =
	    "{\"service\": {\"vip\": \"10.77.0.100\", \"port\": 7447, \"mac\": "
	    "\"02:53:4b:4c:00:64\"},"
	    " \"switches\": [{\"id\": 1, \"name\": \"s1\", \"lcores\": [1],"
	    "   \"ports\": [{\"name\": \"p\", \"vdev\": \"net_null0\"}]}],"
	    " \"nodes\": [{\"id\": 1, \"name\": \"a\", \"ip\": \"10.77.0.9\", \"port\": 7447},"
	    "   {\"id\": 2, \"name\": \"b\", \"ip\": \"10.77.0.9\", \"port\": 7448},"
	    "   {\"id\": 3, \"name\": \"c\", \"ip\": \"10.77.0.10\"}]}";
	static const uint8_t host_mac[6] = {0x02, 0, 0, 0, 0, 0x09};
	static struct cfg shared; /* large: not on the stack */
	static struct l2 table;
	struct l2 *l = &table;
	char err[CFG_ERR_LEN];
	uint8_t mac[6], port;

	ck_assert_msg(cfg_load_string(json, "shared.json", &shared, err, sizeof(err)) == 0, "%s",
		      err);
	l2_init(l, &shared, 300, 300);
	l2_nb_learn(l, 0x0a4d0009u, host_mac, 0, 1, false);
	for (uint16_t id = 1; id <= 2; id++) {
		ck_assert_msg(l2_node_nb(l, id, mac, &port), "node %u not learnt", id);
		ck_assert_mem_eq(mac, host_mac, 6);
	}
	ck_assert(!l2_node_nb(l, 3, mac, &port));
	ck_assert(l2_nb_lookup(l, 0x0a4d0009u, mac, &port, 1));
}
END_TEST

/* A key colliding with an entry's keyhash is routed to its own home, not the replicas. */
START_TEST(keyhash_collision_goes_home)
{
	uint8_t buf[2048];
	uint16_t home_bad;
	struct rte_mbuf *out[4];
	struct parsed p;

	command_ok("cdt pin %s force n1,n2,n3,n4%s", "hot", "");
	/* "other" claims hot's keyhash: fingerprint mismatch, routed by the keyhash's home. */
	size_t n = encode(WIRE_OP_GET, "other", NULL, 0, 0, 0, 0, buf);

	wire_put64(buf + WIRE_OFF_KEYHASH, keyhash("hot", 3));
	home_bad = home_of("hot");
	for (int i = 0; i < 20; i++)
		inject(0, 0, frame(client_mac, vip_mac, CLIENT_IP, VIP, CLIENT_PORT, SVC, buf, n));
	run();
	ck_assert_uint_eq(sw_counter(&sw, SW_CNT_FP_MISMATCH), 20);
	ck_assert_uint_eq(collect(home_bad, out, 4), 4);
	parse_out(out[0], &p);
	ck_assert(!(p.msg.flags & WIRE_F_REPLICA_READ));
	free_all(out, 4);
	ck_assert_uint_eq(drain(home_bad), 16);
	ck_assert_uint_eq(drain_all(), 0);
}
END_TEST

/*
 * The CDT's filter (cdt_may_hold()): an installed key always counts (the
 * fast path never skips its lookup), a slot two keys share counts until both
 * are removed, and a slot that saturates stays counted.
 */
START_TEST(cdt_filter_counts_installed_keys)
{
	struct cdt *c = sw.cdt;
	const uint16_t reps[2] = {1, 2};
	const uint64_t slot = 1ull << 40; /* keyhashes k * slot + i share slot k */
	const uint64_t a = 5 * slot + 1, b = 5 * slot + 2;
	char key[16];

	ck_assert_uint_ge(c->max_entries, 300);
	ck_assert(!cdt_may_hold(c, a));
	ck_assert_ptr_nonnull(cdt_install(c, a, "ka", 2, 1, reps, 2, 0));
	ck_assert_ptr_nonnull(cdt_install(c, b, "kb", 2, 1, reps, 2, 0));
	ck_assert(cdt_may_hold(c, a) && cdt_may_hold(c, b));
	ck_assert(cdt_may_hold(c, 5 * slot + 3)); /* not installed: a false positive */
	ck_assert(!cdt_may_hold(c, 6 * slot + 1));
	ck_assert_int_eq(cdt_remove(c, a), 0);
	ck_assert(cdt_may_hold(c, b));
	ck_assert_int_eq(cdt_remove(c, b), 0);
	ck_assert(!cdt_may_hold(c, b));
	/* A failed install leaves no count behind. */
	ck_assert_ptr_null(cdt_install(c, b, "kb", 2, 0, reps, 2, 0));
	ck_assert(!cdt_may_hold(c, b));

	for (unsigned i = 1; i <= 300; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		ck_assert_ptr_nonnull(
		    cdt_install(c, 7 * slot + i, key, strlen(key), 1, reps, 2, 0));
	}
	for (unsigned i = 1; i <= 300; i++)
		ck_assert_int_eq(cdt_remove(c, 7 * slot + i), 0);
	ck_assert(cdt_may_hold(c, 7 * slot + 1)); /* saturated at 255: stays */
	ck_assert_uint_eq(c->nentries, 0);
}
END_TEST

/*
 * cdt_entry_is(): a key of any length from 1 to 40 bytes is told apart from
 * every key of its length that differs in one byte (kept words up to 16,
 * the fingerprint beyond) and from its own prefix.
 */
START_TEST(cdt_entry_tells_keys_apart)
{
	struct cdt *c = sw.cdt;
	const uint16_t reps[1] = {1};
	uint8_t key[40], other[40];

	for (unsigned len = 1; len <= sizeof(key); len++) {
		struct cdt_entry *e;

		for (unsigned i = 0; i < len; i++)
			key[i] = (uint8_t)('a' + (i * 7 + len) % 26);
		e = cdt_install(c, 0x1234500 + len, key, len, 1, reps, 1, 0);
		ck_assert_ptr_nonnull(e);
		ck_assert(cdt_entry_is(e, key, len));
		ck_assert(!cdt_entry_is(e, key, len - 1));
		for (unsigned i = 0; i < len; i++) {
			memcpy(other, key, len);
			other[i] ^= 0x20;
			ck_assert_msg(!cdt_entry_is(e, other, len), "len %u, byte %u", len, i);
		}
		ck_assert_int_eq(cdt_remove(c, 0x1234500 + len), 0);
	}
}
END_TEST

static json_t *frob(struct sw *s, int argc, char **argv, void *aux)
{
	ck_assert_ptr_eq(s, &sw);
	ck_assert_ptr_eq(aux, (void *)frob);
	return json_pack("{s:b, s:i, s:s}", "ok", 1, "argc", argc, "first", argc ? argv[0] : "");
}

/* Commands are found in the registry the modules filled; the socket code knows none. */
START_TEST(commands_come_from_the_registry)
{
	char *out;

	ctl_register(&sw, "cdt frob", frob, (void *)frob);
	out = ctl_command(&sw, "cdt frob a b");
	ck_assert_str_eq(out, "{\"ok\":true,\"argc\":2,\"first\":\"a\"}");
	free(out);
	out = ctl_command(&sw, "cdt");
	ck_assert_msg(strstr(out, "unknown command \\\"cdt\\\"") &&
			  strstr(out, "cdt show|pin|unpin|frob") && strstr(out, "stats") &&
			  strstr(out, "neigh") && strstr(out, "peers"),
		      "%s", out);
	free(out);
	out = ctl_command(&sw, "directory bogus");
	ck_assert_str_eq(out, "{\"ok\":false,\"error\":\"directory: expected on, off or show, got "
			      "\\\"bogus\\\"\"}");
	free(out);
}
END_TEST

/* Ask DPDK telemetry (this process's socket) for path; the answer in buf. */
static void telemetry(const char *path, char *buf, size_t cap)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ssize_t n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/dpdk_telemetry.v2",
		 rte_eal_get_runtime_dir());
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "%s", sa.sun_path);
	n = read(fd, buf, cap - 1); /* the greeting */
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(write(fd, path, strlen(path)), (ssize_t)strlen(path));
	n = read(fd, buf, cap - 1);
	ck_assert_int_gt(n, 0);
	buf[n] = 0;
	close(fd);
}

/* A node row and a directory entry have one formatter: telemetry shows what the socket does. */
START_TEST(telemetry_rows_match_the_socket)
{
	struct sw_opts opts = {.idle_sleep_us = -1, .socket_path = ""};
	static char buf[16384];
	char err[512], *out;
	static const char *const same[] = {"\"ip\":\"10.77.0.3\"",  "\"mac\":\"02:00:00:00:00:03\"",
					   "\"port\":\"n3\"",	    "\"state\":\"unknown\"",
					   "\"score_from\":\"s1\"", "\"health\":100"};

	sw_fini(&sw);
	drain_all();
	ck_assert_msg(sw_init(&sw, &cfg, cfg_switch_lookup(&cfg, "s1"), &opts, err, sizeof(err)) ==
			  0,
		      "sw_init: %s", err);
	learn_nodes();
	out = ctl_command(&sw, "nodes");
	telemetry("/skewless/nodes", buf, sizeof(buf));
	for (unsigned i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		ck_assert_msg(strstr(out, same[i]), "socket: no %s in %s", same[i], out);
		ck_assert_msg(strstr(buf, same[i]), "telemetry: no %s in %s", same[i], buf);
	}
	free(out);
	command_ok("cdt pin %s force n1,n2,n3%s", "hot", "");
	telemetry("/skewless/cdt", buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "completed=0 replicas=n1,n2,n3\""), "%s", buf);
}
END_TEST

/* ---- /metrics: the same formatters as the socket, over real HTTP, checked by promtool. ---- */

START_TEST(metrics_from_the_same_formatters)
{
	struct cfg_switch *self = (struct cfg_switch *)cfg_switch_lookup(&cfg, "s1");
	static char reply[1 << 17];
	struct http_fetch sc = {0, "GET /metrics HTTP/1.0\r\n\r\n", reply, sizeof(reply)};
	uint16_t home = home_of("hot"), other = home % 4 + 1;
	char *out, *json, num[64];
	size_t len;
	FILE *promtool;
	pthread_t t;
	void *done;

	sw_fini(&sw);
	snprintf(self->metrics_listen, sizeof(self->metrics_listen), "127.0.0.1:0");
	start_switch("s1");
	self->metrics_listen[0] = 0; /* the other tests' switches serve none */
	learn_nodes();
	ck_assert_uint_gt(ctl_metrics_port(&sw), 0);
	/* Load on one key: hot at the end of the epoch, installed, REPLICATE to its home. */
	for (int i = 0; i < 200; i++)
		inject(0, 0, request(WIRE_OP_GET, "hot", NULL));
	run();
	drain_all();
	sw_control_poll(&sw, 0);
	usleep((sw.cfg->directory.epoch_ms + 20) * 1000);
	sw_control_poll(&sw, 0);
	drain_all();
	ck_assert_ptr_nonnull(cdt_find(sw.cdt, keyhash("hot", 3)));
	/* The home's REPLICATE reply sets the version, a replica acks it: reads are
	 * spread now; the next round measures it. */
	inject(home, 0, node_msg(WIRE_OP_REPLICATE | WIRE_REPLY, home, "hot", 1));
	run();
	inject(other, 0, node_msg(WIRE_OP_RC_ACK, other, "hot", 1));
	run();
	ck_assert_uint_eq(cdt_entry_state(cdt_find(sw.cdt, keyhash("hot", 3)))->nreplicas, 2);
	sw_control_poll(&sw, 0);
	drain_all();

	out = ctl_metrics_render(&sw, &len);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(strlen(out), len);
	ck_assert_double_eq(
	    http_sample_value(out, "skewless_switch_directory_update_delay_seconds_count"), 1);
	ck_assert_double_ge(
	    http_sample_value(out,
			      "skewless_switch_directory_update_delay_seconds_bucket{le=\"10\"}"),
	    1);
	ck_assert_double_eq(http_sample_value(out, "skewless_switch_directory_installs_total"), 1);
	ck_assert_double_eq(http_sample_value(out, "skewless_switch_directory_entries"), 1);
	ck_assert_double_eq(http_sample_value(out, "skewless_switch_node_health{node=\"n3\"}"),
			    100);
	ck_assert_double_eq(
	    http_sample_value(out, "skewless_switch_node_state{node=\"n3\",state=\"unknown\"}"), 1);
	ck_assert_double_eq(
	    http_sample_value(out, "skewless_switch_node_digest_loss_rate{node=\"n1\"}"), 0);
	ck_assert_double_eq(
	    http_sample_value(out, "skewless_switch_drops_total{reason=\"runt_frame\"}"), 0);
	ck_assert_double_ge(http_sample_value(out, "skewless_switch_port_rx_total{port=\"a1\"}"),
			    200);
	ck_assert_ptr_nonnull(strstr(out, "# TYPE skewless_switch_requests_total counter\n"));
	ck_assert_double_eq(http_sample_value(out, "skewless_switch_digests_malformed_total"), 0);
	ck_assert_double_eq(
	    http_sample_value(out, "skewless_switch_digests_rejected_total{reason=\"short\"}"), 0);
	ck_assert_ptr_nonnull(
	    strstr(out, "# TYPE skewless_switch_directory_update_delay_seconds histogram\n"));
	/* The socket's figures are the same numbers (one formatter, one table). */
	json = ctl_command(&sw, "stats");
	snprintf(num, sizeof(num), "\"requests\":%.0f,",
		 http_sample_value(out, "skewless_switch_requests_total"));
	ck_assert_msg(strstr(json, num), "no %s in %s", num, json);
	ck_assert_ptr_nonnull(strstr(json, "\"update_delay_seconds\":{\"count\":1,"));
	free(json);
	/* The exposition format's own linter. */
	promtool = popen("promtool check metrics >/dev/null 2>&1", "w");
	ck_assert_ptr_nonnull(promtool);
	fwrite(out, 1, len, promtool);
	ck_assert_msg(pclose(promtool) == 0, "promtool check metrics rejected:\n%s", out);
	free(out);

	/* Over HTTP, served by the control round (ctl_poll), at most 5 s. */
	sc.port = ctl_metrics_port(&sw);
	ck_assert_int_eq(pthread_create(&t, NULL, http_fetch_run, &sc), 0);
	for (int i = 0; i < 500 && pthread_tryjoin_np(t, &done) == EBUSY; i++)
		sw_control_poll(&sw, 10);
	ck_assert_msg(strstr(sc.reply, " 200 OK\r\n"), "reply: %.200s", sc.reply);
	ck_assert_ptr_nonnull(strstr(sc.reply, "skewless_switch_node_inflight{node=\"n1\"} "));
}
END_TEST

/* ---- Peer switches: the control round with a peer (peer.c plays switch s2). ------------ */

static const char *peers_json =
    "{\"service\": {\"vip\": \"10.77.0.100\", \"port\": 7447, \"mac\": \"02:53:4b:4c:00:64\"},"
    " \"sync\": {\"interval_ms\": 20},"
    " \"switches\": ["
    "  {\"id\": 1, \"name\": \"s1\", \"role\": \"inline\", \"lcores\": [1], \"peers\": [2],"
    "   \"ports\": [{\"name\": \"a1\", \"vdev\": \"net_ring_a1\"},"
    "     {\"name\": \"n1\", \"vdev\": \"net_ring_n1\"}, {\"name\": \"n2\", \"vdev\": "
    "\"net_ring_n2\"},"
    "     {\"name\": \"n3\", \"vdev\": \"net_ring_n3\"}, {\"name\": \"n4\", \"vdev\": "
    "\"net_ring_n4\"}]},"
    "  {\"id\": 2, \"name\": \"s2\", \"role\": \"inline\", \"vip\": \"10.77.0.102\","
    "   \"mac\": \"02:53:4b:4c:00:66\", \"lcores\": [1], \"peers\": [1],"
    "   \"ports\": [{\"name\": \"x\", \"vdev\": \"net_ring_x\"}]}],"
    " \"nodes\": ["
    "  {\"id\": 1, \"name\": \"n1\", \"ip\": \"10.77.0.1\"}, {\"id\": 2, \"name\": \"n2\", \"ip\": "
    "\"10.77.0.2\"},"
    "  {\"id\": 3, \"name\": \"n3\", \"ip\": \"10.77.0.3\"}, {\"id\": 4, \"name\": \"n4\", \"ip\": "
    "\"10.77.0.4\"}],"
    " \"agents\": [{\"name\": \"a1\", \"ip\": \"10.77.0.201\"}]}";

#define S2_IP 0x0a4d0066u /* 10.77.0.102 */
static const uint8_t s2_mac[6] = {0x02, 0x53, 0x4b, 0x4c, 0x00, 0x66};

/* s2's view of every node: alive, never heard a digest. */
static void s2_score(void *arg, uint16_t node, struct sync_score *sc)
{
	(void)arg;
	*sc =
	    (struct sync_score){.node = node, .health = 100, .alive = 1, .age_ms = SYNC_AGE_NEVER};
}

/* One SYNC value from s2, as a datagram into s1's client port. */
static void s2_emit(void *arg, const uint8_t *buf, size_t len)
{
	uint8_t dgram[2048];
	struct wire_msg m = {
	    .op = WIRE_OP_SYNC, .flags = WIRE_F_VIA_SWITCH, .val_len = (uint32_t)len, .value = buf};
	int n = wire_encode(&m, dgram, sizeof(dgram));

	(void)arg;
	ck_assert_int_gt(n, 0);
	inject(0, 0, frame(s2_mac, vip_mac, S2_IP, VIP, SVC, SVC, dgram, (size_t)n));
}

/*
 * One control round of s1 against s2 (talking when s2_talks): s2's SYNC in,
 * s1's round, s1's SYNC to s2 taken by s2's state; everything else s1 sent
 * dropped. Returns the SYNC datagrams s1 sent s2.
 */
static unsigned peer_round(struct peer_state *s2, bool s2_talks)
{
	uint16_t nodes[4] = {1, 2, 3, 4};
	struct rte_mbuf *out[256];
	unsigned n, syncs = 0;

	if (s2_talks && peer_tick(s2, clock_mono_us()))
		peer_build(s2, 1, clock_mono_us(), 1400, nodes, 4, s2_score, s2_emit, NULL);
	run();
	sw_control_poll(&sw, 0);
	run(); /* worker 0 sends what the control thread queued */
	while ((n = collect(0, out, 256)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			struct rte_ether_hdr *eth =
			    rte_pktmbuf_mtod(out[i], struct rte_ether_hdr *);
			struct parsed p;

			if (eth->ether_type != htons(RTE_ETHER_TYPE_IPV4))
				continue;
			parse_out(out[i], &p);
			if (p.msg.op == WIRE_OP_SYNC && ntohl(p.ip->dst_addr) == S2_IP) {
				ck_assert_mem_eq(p.eth->dst_addr.addr_bytes, s2_mac, 6);
				syncs++;
				if (s2_talks)
					peer_receive(s2, p.msg.value, p.msg.val_len,
						     clock_mono_us());
			}
		}
		free_all(out, n);
	}
	for (unsigned port = 1; port < NPORTS; port++)
		drain(port);
	return syncs;
}

static bool command_has(const char *line, const char *what)
{
	char *out = ctl_command(&sw, line);
	bool has = strstr(out, what) != NULL;

	if (!has)
		fprintf(stderr, "%s -> %s (no %s)\n", line, out, what);
	free(out);
	return has;
}

/*
 * The lease rule through the whole round: s2's SYNC in (intake), every lease
 * held (decide), the deadline the workers read published (reconcile), s1's
 * SYNC out (egress); s2 silent -> the lease lost and the deadline withdrawn.
 */
START_TEST(peer_lease_held_then_lost)
{
	static struct cfg two; /* large: not on the stack */
	static struct peer_state s2;
	struct sw_opts opts = {.idle_sleep_us = -1, .socket_path = "", .no_telemetry = true};
	char err[CFG_ERR_LEN];
	unsigned syncs = 0;
	uint64_t until;

	ck_assert_msg(cfg_load_string(peers_json, "peers.json", &two, err, sizeof(err)) == 0, "%s",
		      err);
	drain_all();
	ck_assert_msg(sw_init(&sw, &two, cfg_switch_lookup(&two, "s1"), &opts, err, sizeof(err)) ==
			  0,
		      "sw_init: %s", err);
	learn_nodes();
	ck_assert_int_eq(peer_init(&s2, &two, 2, 0x5eed, clock_mono_us()), 0);
	ck_assert(command_has("peers", "\"leased\":false"));
	for (int i = 0; i < 1000 && !__atomic_load_n(&sw.lease_until_tsc, __ATOMIC_RELAXED); i++) {
		syncs += peer_round(&s2, true);
		usleep(1000);
	}
	until = __atomic_load_n(&sw.lease_until_tsc, __ATOMIC_RELAXED);
	ck_assert_msg(until > rte_rdtsc(), "no lease after %u SYNCs to s2", syncs);
	ck_assert_uint_gt(syncs, 0);
	ck_assert(command_has("peers", "\"leased\":true"));
	ck_assert(
	    command_has("peers", "\"name\":\"s2\",\"self\":false,\"live\":true,\"lease\":true"));
	/* s2 falls silent: the lease (3 intervals, 60 ms) runs out. */
	for (uint64_t t0 = clock_mono_us(); clock_mono_us() - t0 < 200000;) {
		peer_round(&s2, false);
		usleep(1000);
	}
	ck_assert_uint_eq(__atomic_load_n(&sw.lease_until_tsc, __ATOMIC_RELAXED), 0);
	ck_assert(command_has("peers", "\"leased\":false"));
	ck_assert(command_has("peers", "\"lease_losses\":1,"));
	sw_fini(&sw);
	drain_all();
	peer_fini(&s2);
}
END_TEST

/* Write text to path (the test's private config file). */
static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

/* peers_json at ring version 2 with n4 drained (weight 0). */
static void peers_json_v2(char *out, size_t cap)
{
	static const char n4[] = "{\"id\": 4, \"name\": \"n4\", \"ip\": \"10.77.0.4\"}";
	const char *at = strstr(peers_json, n4);

	ck_assert_ptr_nonnull(at);
	snprintf(out, cap,
		 "{\"ring\": {\"version\": 2},%.*s{\"id\": 4, \"name\": \"n4\", \"ip\": "
		 "\"10.77.0.4\", \"weight\": 0}%s",
		 (int)(at - peers_json - 1), peers_json + 1, at + strlen(n4));
}

/* Rounds against s2 until done() or 2 s; whether done() came true. */
static bool rounds_until(struct peer_state *s2, bool (*done)(struct peer_state *s2))
{
	for (uint64_t t0 = clock_mono_us(); clock_mono_us() - t0 < 2000000;) {
		peer_round(s2, true);
		if (done(s2))
			return true;
		usleep(1000);
	}
	return false;
}

static uint64_t want_epoch;
static bool s1_ready(struct peer_state *s2)
{
	return s2->slot[1].ring_ready >= want_epoch;
}
static bool s1_routes(struct peer_state *s2)
{
	(void)s2;
	return sw.ring->version == want_epoch;
}
static bool s1_stable(struct peer_state *s2)
{
	(void)s2;
	return command_has("ring show", "\"state\":\"stable\",\"version\":2,");
}

/*
 * A ring change driven by the peer s2 (its SYNCs' ring fields; no command at
 * s1): s1 reloads its config file, removes its directory entry whose home
 * moves before it says it is ready for the step, routes by the step only once
 * s2 published it, installs the entry again at its new home, and completes
 * with s2.
 */
START_TEST(peer_ring_change_followed)
{
	static struct cfg two, two_v2; /* large: not on the stack */
	static struct peer_state s2;
	static char v2[8192];
	struct sw_opts opts = {.idle_sleep_us = -1, .socket_path = "", .no_telemetry = true};
	char dir[] = "/tmp/skl-sw-ring-XXXXXX", path[64], err[CFG_ERR_LEN], key[16] = "", line[96];
	struct ring r1 = {0}, r2 = {0};
	struct rchange c;
	uint32_t k, later = 0;
	uint16_t new_home = 0;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/peers.json", dir);
	write_file(path, peers_json);
	peers_json_v2(v2, sizeof(v2));
	ck_assert_msg(cfg_load(path, &two, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(cfg_load_string(v2, "v2.json", &two_v2, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(cfg_build_ring(&two, &r1), 0);
	ck_assert_int_eq(cfg_build_ring(&two_v2, &r2), 0);
	ck_assert_int_eq(rch_build(&c, &r1, &r2), 0);
	k = c.narcs / 2;
	ck_assert_uint_gt(k, 0);
	/* A key whose home moves at step k, and one that moves only later. */
	for (int i = 0; i < 100000 && (!new_home || !later); i++) {
		char name[16];
		uint32_t p;

		snprintf(name, sizeof(name), "r%d", i);
		p = keyhash_point(keyhash(name, strlen(name)));
		if (!new_home && rch_home(&c, 0, p) != rch_home(&c, k, p)) {
			snprintf(key, sizeof(key), "%s", name);
			new_home = rch_home(&c, k, p);
		} else if (!later && rch_home(&c, k, p) != rch_home(&c, RCH_COMPLETE, p)) {
			later = 1;
		}
	}
	ck_assert_uint_ne(new_home, 0);
	drain_all();
	ck_assert_msg(sw_init(&sw, &two, cfg_switch_lookup(&two, "s1"), &opts, err, sizeof(err)) ==
			  0,
		      "sw_init: %s", err);
	learn_nodes();
	ck_assert_int_eq(peer_init(&s2, &two, 2, 0x5eee, clock_mono_us()), 0);
	want_epoch = rch_epoch(1, RCH_COMPLETE);
	peer_set_ring(&s2, want_epoch, want_epoch, 0);
	ck_assert(rounds_until(&s2, s1_ready));
	command_ok("cdt pin %s%s", key, "");
	snprintf(line, sizeof(line), "\"key\":\"%s\"", key);
	ck_assert(command_has("cdt show", line));

	/* s2 applies version 2 and makes step k ready; s1 has the file (installed first). */
	write_file(path, v2);
	want_epoch = rch_epoch(2, k);
	peer_set_ring(&s2, rch_epoch(2, 0), want_epoch, 1);
	ck_assert_msg(rounds_until(&s2, s1_ready), "s1 never said it was ready for the step");
	ck_assert(command_has("ring show", "\"state\":\"following\",\"version\":2,"));
	ck_assert(command_has("ring show", "\"following\":\"s2\""));
	char *out = ctl_command(&sw, "cdt show");
	ck_assert_msg(strstr(out, line) == NULL, "%s is still in the directory: %s", key, out);
	free(out);
	ck_assert_uint_eq(sw.ring->version, 1); /* s2 has not published the step */

	/* s2 published it (every node has it): s1 routes by it, the entry back at its new home. */
	peer_set_ring(&s2, want_epoch, want_epoch, 1);
	ck_assert_msg(rounds_until(&s2, s1_routes), "s1 never routed by the step");
	ck_assert_uint_eq(ring_home(sw.ring, keyhash(key, strlen(key))), new_home);
	snprintf(line, sizeof(line), "\"key\":\"%s\",\"keyhash\"", key);
	ck_assert(command_has("cdt show", line));
	snprintf(line, sizeof(line), "\"home\":\"n%u\"", new_home);
	ck_assert(command_has("cdt show", line));

	/* s2 completes: so does s1. */
	want_epoch = rch_epoch(2, RCH_COMPLETE);
	peer_set_ring(&s2, want_epoch, want_epoch, 0);
	ck_assert_msg(rounds_until(&s2, s1_stable), "s1 never completed the change");
	ck_assert_uint_eq(sw.ring->version, 2);
	ck_assert(command_has("ring show", "\"follows\":1,"));
	sw_fini(&sw);
	drain_all();
	peer_fini(&s2);
	rch_free(&c);
	ring_free(&r1);
	ring_free(&r2);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Replace the first `from` in text[0..cap) with `to`. */
static void substitute(char *text, size_t cap, const char *from, const char *to)
{
	static char out[8192];
	const char *at = strstr(text, from);

	ck_assert_msg(at != NULL, "no %s in %s", from, text);
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	snprintf(text, cap, "%s", out);
}

/* conf_json at ring version `version`. */
static void conf_at(char *out, size_t cap, int version)
{
	snprintf(out, cap, "{\"ring\": {\"version\": %d},%s", version, conf_json + 1);
}

/* `ring apply` of a file with text: refused in one line that names the file and why. */
static void apply_refused(const char *path, const char *text, const char *why)
{
	char line[600], hex[512];
	char *out;

	write_file(path, text);
	snprintf(line, sizeof(line), "ring apply %s", hexkey(path, hex));
	out = ctl_command(&sw, line);
	ck_assert_msg(strstr(out, "\"ok\":false") && strstr(out, why) && strstr(out, path) &&
			  !strstr(out, "\\n"),
		      "%s: want one line with %s, got %s", text, why, out);
	free(out);
}

/*
 * `ring apply` validates the file before anything changes: a file that does
 * not parse, a ring.version not above the running one, a running node
 * dropped or moved, the service changed, no ring to build. Each is one line
 * naming the file, and the switch still runs its ring and config as before;
 * then a valid file (n4 drained) begins the change, and another apply waits
 * until it is complete.
 */
START_TEST(ring_apply_validates)
{
	static char text[4096];
	char dir[] = "/tmp/skl-sw-apply-XXXXXX", path[64], line[600], hex[512];
	const struct cfg *running = sw.cfg;
	static const char n4[] = ", {\"id\": 4, \"name\": \"n4\", \"ip\": \"10.77.0.4\"}";
	char *out;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/next.json", dir);
	apply_refused(path, "{\"ring\": ", "");
	apply_refused(path, conf_json,
		      "ring.version: expected more than 1 (the running ring), got 1");
	conf_at(text, sizeof(text), 2);
	substitute(text, sizeof(text), n4, "");
	apply_refused(path, text, "node n4 (id 4) is in the running config");
	conf_at(text, sizeof(text), 2);
	substitute(text, sizeof(text), "\"10.77.0.2\"", "\"10.77.0.12\"");
	apply_refused(path, text, "node n2 (id 2) is in the running config");
	conf_at(text, sizeof(text), 2);
	substitute(text, sizeof(text), "\"port\": 7447", "\"port\": 7448");
	apply_refused(path, text, "switches, service: expected those of the running config");
	conf_at(text, sizeof(text), 2);
	for (int id = 1; id <= 4; id++) {
		char from[32], to[48];

		snprintf(from, sizeof(from), "\"ip\": \"10.77.0.%d\"}", id);
		snprintf(to, sizeof(to), "\"ip\": \"10.77.0.%d\", \"weight\": 0}", id);
		substitute(text, sizeof(text), from, to);
	}
	apply_refused(path, text, "no ring can be built");
	/* Nothing changed. */
	ck_assert_ptr_eq(sw.cfg, running);
	ck_assert_uint_eq(sw.ring->version, 1);
	ck_assert(command_has("ring show", "\"state\":\"stable\",\"version\":1,"));

	/* n4 drained: the change begins; a second apply waits for it. */
	conf_at(text, sizeof(text), 2);
	substitute(text, sizeof(text), "\"ip\": \"10.77.0.4\"}",
		   "\"ip\": \"10.77.0.4\", \"weight\": 0}");
	write_file(path, text);
	snprintf(line, sizeof(line), "ring apply %s", hexkey(path, hex));
	out = ctl_command(&sw, line);
	ck_assert_msg(strstr(out, "\"ok\":true") &&
			  strstr(out, "\"state\":\"ramp\",\"version\":2,"),
		      "%s", out);
	free(out);
	ck_assert_ptr_ne(sw.cfg, running);
	apply_refused(path, text, "a ring change is in progress");
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Whether fn, run in a child process, ends in abort() (no core file). */
static bool aborts(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit none = {0, 0};

		setrlimit(RLIMIT_CORE, &none);
		fn();
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void register_past_the_table(void)
{
	static struct sw fresh;
	char err[64], name[16];

	ck_assert_int_eq(ctl_init(&fresh, err, sizeof(err)), 0);
	for (int i = 0; i <= 32; i++) {
		snprintf(name, sizeof(name), "cmd%d", i);
		ctl_register(&fresh, name, frob, NULL);
	}
}

static void register_stats_again(void)
{
	ctl_register(&sw, "stats", frob, NULL);
}

/* A command the registry cannot keep stops the program instead of vanishing. */
START_TEST(registry_refuses_loudly)
{
	ck_assert_msg(aborts(register_past_the_table), "a 33rd command was dropped unseen");
	ck_assert_msg(aborts(register_stats_again), "a second \"stats\" was dropped unseen");
}
END_TEST

/* A bad second entry in switches[].lcores: an error message, and sw_fini() frees what was made. */
START_TEST(bad_second_lcore_is_an_error)
{
	static struct cfg bad; /* large: not on the stack */
	static char text[4096];
	struct sw_opts opts = {.idle_sleep_us = -1, .socket_path = "", .no_telemetry = true};
	char err[CFG_ERR_LEN];

	snprintf(text, sizeof(text), "%s", conf_json);
	substitute(text, sizeof(text), "\"lcores\": [1]", "\"lcores\": [1, 7]");
	ck_assert_msg(cfg_load_string(text, "lcores.json", &bad, err, sizeof(err)) == 0, "%s", err);
	sw_fini(&sw);
	drain_all();
	ck_assert_int_eq(sw_init(&sw, &bad, cfg_switch_lookup(&bad, "s1"), &opts, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "switches[s1].lcores: lcore 7 is not an EAL worker lcore"), "%s",
		      err);
	sw_fini(&sw);
	start_switch("s1"); /* for teardown */
}
END_TEST

/* `text LINE`: ok, and every string of want (NULL-ended) in its text. */
static void text_has(const char *line, const char *const *want)
{
	char cmd[1200];
	json_t *r;
	char *out;
	const char *text;

	snprintf(cmd, sizeof(cmd), "text %s", line);
	out = ctl_command(&sw, cmd);
	r = json_loads(out, 0, NULL);
	text = json_string_value(json_object_get(r, "text"));
	ck_assert_msg(json_is_true(json_object_get(r, "ok")) && text && *text, "%s -> %s", cmd,
		      out);
	for (; *want; want++)
		ck_assert_msg(strstr(text, *want), "%s: no \"%s\" in\n%s", line, *want, text);
	json_decref(r);
	free(out);
}

/*
 * Every command answers in text (cdtctl without --json): the fields its
 * formatter writes into the JSON, as name=value, tables one row per line.
 */
START_TEST(every_command_answers_in_text)
{
	char dir[] = "/tmp/skl-sw-text-XXXXXX", path[64], line[600], hex[512];
	static char conf[4096];

	command_ok("cdt pin %s force n1,n2,n3%s", "hot", "");
	text_has("stats", (const char *[]){"switch=s1 id=1 role=inline", "\ndirectory:\n  enabled=",
					   "\ncounters:\n  ", "\ndrops:\n  ",
					   "\nports:\n  name=a1 ", "\nworkers:\n  lcore=1 ", NULL});
	text_has("nodes", (const char *[]){"nodes:\n  id=1 name=n1 ip=10.77.0.1 ",
					   "\n  id=3 name=n3 ip=10.77.0.3 ", " port=n3", NULL});
	text_has("peers", (const char *[]){"peers_configured=0", NULL});
	text_has("cdt show", (const char *[]){"size=1 capacity=", "entries:\n  key=hot ",
					      " replicas=n1,n2,n3 pinned=1", NULL});
	snprintf(line, sizeof(line), "cdt show %s", hexkey("hot", hex));
	text_has(line, (const char *[]){"entries:\n  key=hot ", NULL});
	snprintf(line, sizeof(line), "cdt pin %s replicas 2", hexkey("warm", hex));
	text_has(line, (const char *[]){"entry:\n  key=warm ", "pinned=1", NULL});
	snprintf(line, sizeof(line), "cdt unpin %s", hexkey("warm", hex));
	text_has(line, (const char *[]){"size=1", NULL});
	text_has("directory off", (const char *[]){"directory:\n  enabled=0 entries=1 ", NULL});
	text_has("directory on", (const char *[]){"directory:\n  enabled=1 ", NULL});
	text_has("directory show", (const char *[]){"update_delay_seconds.count=", NULL});
	text_has("debug on", (const char *[]){"debug=1", "log:\n", NULL});
	text_has("debug off", (const char *[]){"debug=0", NULL});
	text_has("debug show", (const char *[]){"debug=0", NULL});
	text_has("neigh add 10.77.0.9 02:00:00:00:00:09 n4",
		 (const char *[]){
		     "neighbour:\n  ip=10.77.0.9 mac=02:00:00:00:00:09 port=n4 static=1", NULL});
	text_has("neigh show",
		 (const char *[]){"neighbours:\n  ", "ip=10.77.0.9 mac=02:00:00:00:00:09 port=n4",
				  "ip=10.77.0.3 mac=02:00:00:00:00:03 port=n3 static=0 node=n3",
				  NULL});
	text_has("ring show", (const char *[]){"state=stable version=1 ", NULL});
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/next.json", dir);
	conf_at(conf, sizeof(conf), 2);
	substitute(conf, sizeof(conf), "\"ip\": \"10.77.0.4\"}",
		   "\"ip\": \"10.77.0.4\", \"weight\": 0}");
	write_file(path, conf);
	snprintf(line, sizeof(line), "ring apply %s", hexkey(path, hex));
	text_has(line, (const char *[]){"state=ramp version=2 ", NULL});
	unlink(path);
	rmdir(dir);
}
END_TEST

/*
 * A switch takes any number of ring changes: each `ring apply` replaces the
 * config, and the one it replaced is freed (after a grace period), not kept.
 * A change that moves nothing completes in a few control rounds once every
 * node has acknowledged its last epoch (their RING replies, given here).
 */
START_TEST(ring_applies_without_end)
{
	char dir[] = "/tmp/skl-sw-applies-XXXXXX", path[64], line[600], hex[512], want[64];
	static char text[4096];
	char *out;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/next.json", dir);
	for (int v = 2; v <= 80; v++) {
		conf_at(text, sizeof(text), v);
		write_file(path, text);
		snprintf(line, sizeof(line), "ring apply %s", hexkey(path, hex));
		out = ctl_command(&sw, line);
		ck_assert_msg(strstr(out, "\"ok\":true"), "apply %d: %s", v, out);
		free(out);
		snprintf(want, sizeof(want), "\"state\":\"stable\",\"version\":%d,", v);
		for (uint16_t id = 1; id <= 4; id++) {
			struct wire_msg ack = {.node = id,
					       .status = WIRE_ST_OK,
					       .version = rch_epoch((uint64_t)v, RCH_COMPLETE)};

			ring_change_take_reply(&sw, &ack);
		}
		for (int i = 0; i < 200 && !command_has("ring show", want); i++)
			sw_control_poll(&sw, 1);
		ck_assert_msg(command_has("ring show", want), "version %d never stable", v);
	}
	ck_assert_uint_eq(sw.ring->version, 80);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* A RING reply from an address that is not its node's is dropped and counted for that reason. */
START_TEST(ring_reply_drops_by_reason)
{
	uint8_t buf[2048], mac[6];
	size_t n = encode(WIRE_OP_RING | WIRE_REPLY, "r", NULL, 1, 3, CLIENT_IP, CLIENT_PORT, buf);

	node_mac(2, mac);
	inject(2, 0,
	       frame(mac, vip_mac, 0x0a4d0002u, VIP, SVC, SVC, buf, n)); /* n2 says it is n3 */
	run();
	ck_assert(command_has("stats", "\"ring_reply_not_from_node\":1"));
	ck_assert(command_has("stats", "\"ring_reply_queue_full\":0"));
}
END_TEST

#ifndef __SANITIZE_ADDRESS__ /* ASan has its own calloc */
/* While set, calloc() fails: what the control path does without memory. */
static bool calloc_fails;
extern void *__libc_calloc(size_t n, size_t size);

void *calloc(size_t n, size_t size)
{
	if (__atomic_load_n(&calloc_fails, __ATOMIC_RELAXED)) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(n, size);
}

/* `directory off` removes every key the directory took, with memory short or not. */
START_TEST(directory_off_needs_no_memory)
{
	static const char *const keys[] = {"k1", "k2", "k3"};
	const uint16_t reps[] = {1, 2};
	char *out;

	for (unsigned i = 0; i < 3; i++)
		ck_assert_ptr_nonnull(
		    cdt_install(sw.cdt, keyhash(keys[i], 2), keys[i], 2, 1, reps, 2, 0));
	command_ok("cdt pin %s force n3%s", "pinned", "");
	ck_assert_uint_eq(sw.cdt->nentries, 4);
	__atomic_store_n(&calloc_fails, true, __ATOMIC_RELAXED);
	out = ctl_command(&sw, "directory off");
	__atomic_store_n(&calloc_fails, false, __ATOMIC_RELAXED);
	ck_assert_msg(strstr(out, "\"enabled\":false"), "%s", out);
	ck_assert_msg(sw.cdt->nentries == 1, "directory off, yet %u entries installed",
		      sw.cdt->nentries);
	free(out);
}
END_TEST
#endif

static Suite *suite(void)
{
	Suite *s = suite_create("switchd");
	TCase *tc = tcase_create("fastpath");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, request_goes_home_rewritten);
	tcase_add_test(tc, reply_returns_to_client);
	tcase_add_test(tc, puts_batched_while_one_is_out);
	tcase_add_test(tc, puts_go_on_at_once_without_batches);
	tcase_add_test(tc, chunked_op_counts_once);
	tcase_add_test(tc, pinned_reads_spread_by_load);
	tcase_add_test(tc, home_spared_in_larger_sets);
	tcase_add_test(tc, down_node_gets_no_reads);
	tcase_add_test(tc, malformed_dropped_and_counted);
	tcase_add_test(tc, keyed_control_needs_mac);
	tcase_add_test(tc, nodes_sharing_an_address_both_learnt);
	tcase_add_test(tc, ties_won_by_every_replica);
	tcase_add_test(tc, in_flight_written_off_only_when_idle);
	tcase_add_test(tc, learning_keeps_static_neighbours);
	tcase_add_test(tc, neighbour_reads_never_torn);
	tcase_add_test(tc, control_socket_never_takes_what_is_not_stale);
	tcase_add_test(tc, ip_options_checked_and_forwarded);
	tcase_add_test(tc, uncommon_shapes_forwarded_like_the_common_one);
	tcase_add_test(tc, arp_for_vip_answered);
	tcase_add_test(tc, l2_learning_forwards);
	tcase_add_test(tc, write_completion_and_acks);
	tcase_add_test(tc, unreplicate_only_where_copied);
	tcase_add_test(tc, write_through_reply_and_stamped_reads);
	tcase_add_test(tc, moved_from_a_replica_forwarded);
	tcase_add_test(tc, hint_answered);
	tcase_add_test(tc, debug_logs_decisions);
	tcase_add_test(tc, telemetry_rows_match_the_socket);
	tcase_add_test(tc, metrics_from_the_same_formatters);
	tcase_add_test(tc, commands_come_from_the_registry);
	tcase_add_test(tc, keyhash_collision_goes_home);
	tcase_add_test(tc, cdt_filter_counts_installed_keys);
	tcase_add_test(tc, cdt_entry_tells_keys_apart);
	tcase_add_test(tc, digests_drive_health_and_liveness);
	tcase_add_test(tc, stalled_switch_blames_no_node);
	tcase_add_test(tc, spoofed_digest_and_sync_dropped);
	tcase_add_test(tc, two_workers_concurrent_updates);
	tcase_add_test(tc, targets_spread_over_nodes);
	tcase_add_test(tc, ring_apply_validates);
	tcase_add_test(tc, registry_refuses_loudly);
	tcase_add_test(tc, bad_second_lcore_is_an_error);
	tcase_add_test(tc, every_command_answers_in_text);
	tcase_add_test(tc, ring_applies_without_end);
	tcase_add_test(tc, ring_reply_drops_by_reason);
#ifndef __SANITIZE_ADDRESS__
	tcase_add_test(tc, directory_off_needs_no_memory);
#endif
	suite_add_tcase(s, tc);
	tc = tcase_create("peers");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, peer_lease_held_then_lost);
	tcase_add_test(tc, peer_ring_change_followed);
	suite_add_tcase(s, tc);
	tc = tcase_create("state");
	tcase_add_test(tc, state_transitions);
	tcase_add_test(tc, state_sets_past_sixteen);
	tcase_add_test(tc, large_set_reads_spread);
	tcase_add_test(tc, directory_sets_past_sixteen);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	char prefix[64];
	char *eal[] = {"test_switchd", "--no-huge",	"-m",	"256",	    "--no-pci",
		       "--no-shconf",  "--file-prefix", prefix, "--lcores", "(0-2)@(0-1)",
		       "--log-level",  "lib.eal:error", NULL};
	char err[CFG_ERR_LEN];
	int failed;

	snprintf(prefix, sizeof(prefix), "skl-test-switchd-%d", getpid());
	if (rte_eal_init(12, eal) < 0) {
		fprintf(stderr, "test_switchd: EAL init failed\n");
		return 1;
	}
	if (cfg_load_string(conf_json, "test.json", &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "test_switchd: %s\n", err);
		return 1;
	}
	tpool = rte_pktmbuf_pool_create("tpool", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	for (unsigned p = 0; p < NPORTS; p++) {
		char name[32];

		for (unsigned q = 0; q < NRX; q++) {
			snprintf(name, sizeof(name), "rx_%s_%u", port_names[p], q);
			rx_rings[p][q] =
			    rte_ring_create(name, 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		}
		for (unsigned q = 0; q < NTX; q++) {
			snprintf(name, sizeof(name), "tx_%s_%u", port_names[p], q);
			tx_rings[p][q] =
			    rte_ring_create(name, 4096, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
		}
		/* rte_eth_from_rings() names the device net_ring_<name>, as the config says. */
		snprintf(name, sizeof(name), "net_ring_%s", port_names[p]);
		if (rte_eth_from_rings(port_names[p], rx_rings[p], NRX, tx_rings[p], NTX, 0) < 0) {
			fprintf(stderr, "test_switchd: cannot create %s\n", name);
			return 1;
		}
	}
	SRunner *sr = srunner_create(suite());

	/* One process: EAL and its ports cannot be re-created in forked children. */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	test_eal_cleanup();
	return failed ? 1 : 0;
}
