/*
 * test_golden.c - golden-pcap test of the rewrite, through net_pcap.
 *
 * A one-arm switch (one port: net_pcap with rx_pcap = a capture this test
 * writes deterministically, tx_pcap = what the switch sent) takes: ARP
 * replies from four nodes, requests from two clients (one without a UDP
 * checksum), a node's reply, a HINT and a malformed frame. The frames it
 * sends must be byte-for-byte those of tests/fixtures/switchd_golden_out.pcap
 * (record timestamps aside). SKL_WRITE_GOLDEN=1 rewrites the fixture, after
 * a change of the rewrite that was checked by hand (test_switchd checks every
 * field and both checksums independently).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "../common/eal_cleanup.h"
#include "keyhash.h"
#include "switchd.h"
#include "wire.h"

static FILE *pc;
static int corrupt_magic; /* the next datagram gets a bad magic */

static void record(const uint8_t *f, uint32_t len)
{
	static uint32_t t;
	uint32_t rh[4] = {++t, 0, len, len};

	fwrite(rh, sizeof(rh), 1, pc);
	fwrite(f, len, 1, pc);
}

static const uint8_t vip_mac[6] = {0x02, 0x53, 0x4b, 0x4c, 0x00, 0x64};

static void mac_of(uint32_t ip, uint8_t mac[6])
{
	const uint8_t m[6] = {0x02, 0, 0, 0, (uint8_t)(ip >> 8), (uint8_t)ip};

	memcpy(mac, m, 6);
}

static void arp_reply(uint32_t ip)
{
	uint8_t f[42] = {0}, mac[6];

	mac_of(ip, mac);
	memcpy(f, vip_mac, 6);
	memcpy(f + 6, mac, 6);
	f[12] = 0x08, f[13] = 0x06;
	f[15] = 1, f[16] = 0x08, f[18] = 6, f[19] = 4, f[21] = 2;
	memcpy(f + 22, mac, 6);
	wire_put32(f + 28, ip);
	memcpy(f + 32, vip_mac, 6);
	wire_put32(f + 38, 0x0a4d0064);
	record(f, sizeof(f));
}

static void udp_frame(uint32_t sip, uint16_t sport, const struct wire_msg *m, int udp_csum)
{
	uint8_t f[512], mac[6], *ip = f + 14, *udp = ip + 20;
	int wl = wire_encode(m, udp + 8, sizeof(f) - 42);

	if (wl < 0)
		abort();
	if (corrupt_magic)
		udp[8] = 0x00;
	corrupt_magic = 0;
	uint16_t ulen = (uint16_t)(8 + wl), ilen = (uint16_t)(20 + ulen);
	const uint32_t dip = 0x0a4d0064;

	mac_of(sip, mac);
	memcpy(f, vip_mac, 6);
	memcpy(f + 6, mac, 6);
	f[12] = 0x08, f[13] = 0x00;
	memset(ip, 0, 20);
	ip[0] = 0x45, ip[8] = 64, ip[9] = 17;
	wire_put16(ip + 2, ilen);
	wire_put16(ip + 4, 0x1234);
	wire_put32(ip + 12, sip);
	wire_put32(ip + 16, dip);
	((struct rte_ipv4_hdr *)ip)->hdr_checksum = rte_ipv4_cksum((struct rte_ipv4_hdr *)ip);
	wire_put16(udp, sport);
	wire_put16(udp + 2, 7447);
	wire_put16(udp + 4, ulen);
	wire_put16(udp + 6, 0);
	if (udp_csum)
		((struct rte_udp_hdr *)udp)->dgram_cksum =
		    rte_ipv4_udptcp_cksum((struct rte_ipv4_hdr *)ip, udp);
	record(f, 14u + ilen);
}

static struct wire_msg msg(uint8_t op, const char *key, uint64_t version, uint16_t node,
			   uint32_t ret_ip, uint16_t ret_port)
{
	struct wire_msg m = {.op = op,
			     .req_id = 0x0000000900000000ull + op,
			     .keyhash = keyhash(key, strlen(key)),
			     .version = version,
			     .node = node,
			     .ret_ip = ret_ip,
			     .ret_port = ret_port,
			     .key_len = (uint16_t)strlen(key),
			     .key = (const uint8_t *)key};
	return m;
}

/* Frame payloads of a pcap file, concatenated with their lengths (timestamps dropped). */
static size_t frames(const char *path, uint8_t *out, size_t cap, unsigned *count)
{
	FILE *f = fopen(path, "rb");
	uint32_t gh[6], rh[4];
	size_t n = 0;

	*count = 0;
	if (!f || fread(gh, sizeof(gh), 1, f) != 1)
		return 0;
	while (fread(rh, sizeof(rh), 1, f) == 1 && n + 4 + rh[2] <= cap) {
		memcpy(out + n, &rh[2], 4);
		if (fread(out + n + 4, rh[2], 1, f) != 1)
			break;
		n += 4 + rh[2];
		(*count)++;
	}
	fclose(f);
	return n;
}

int main(void)
{
	char dir[] = "/tmp/skl-test-golden.XXXXXX", in[128], out[128], vdev[400], json[2048], prefix[64],
	     err[512], golden[512];
	static struct cfg cfg;
	static struct sw sw;
	const char *root = getenv("SKL_SOURCE_ROOT");
	uint32_t gh[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};

	if (!mkdtemp(dir))
		return 1;
	snprintf(in, sizeof(in), "%s/in.pcap", dir);
	snprintf(out, sizeof(out), "%s/out.pcap", dir);
	snprintf(golden, sizeof(golden), "%s/tests/fixtures/switchd_golden_out.pcap",
		 root ? root : ".");

	/* Input: 4 nodes announce themselves, 2 clients ask, n? answers, a HINT, garbage. */
	pc = fopen(in, "wb");
	fwrite(gh, sizeof(gh), 1, pc);
	for (uint32_t i = 1; i <= 4; i++)
		arp_reply(0x0a4d0000 + i);
	struct wire_msg m = msg(WIRE_OP_GET, "alpha", 0, 0, 0, 0);

	udp_frame(0x0a4d00c9, 40001, &m, 1);
	m = msg(WIRE_OP_PUT, "beta", 0, 0, 0, 0);
	m.val_len = 5;
	m.value = (const uint8_t *)"hello";
	udp_frame(0x0a4d00c9, 40002, &m, 1);
	m = msg(WIRE_OP_GET, "gamma", 0, 0, 0, 0);
	udp_frame(0x0a4d00ca, 50000, &m, 0); /* no UDP checksum: stays 0 */
	m = msg(WIRE_OP_HINT, "alpha", 0, 0, 0, 0);
	udp_frame(0x0a4d00ca, 50001, &m, 1);
	/* A reply from n3 (served-by 3) for client 1, forwarded to its return address. */
	m = msg(WIRE_OP_GET | WIRE_REPLY, "alpha", 42, 3, 0x0a4d00c9, 40001);
	m.val_len = 3;
	m.value = (const uint8_t *)"one";
	udp_frame(0x0a4d0003, 7447, &m, 1);
	m = msg(WIRE_OP_GET, "alpha", 0, 0, 0, 0);
	corrupt_magic = 1;
	udp_frame(0x0a4d00c9, 40003, &m, 1);
	fclose(pc);

	snprintf(vdev, sizeof(vdev), "net_pcap_golden,rx_pcap=%s,tx_pcap=%s", in, out);
	snprintf(json, sizeof(json),
		 "{\"service\": {\"vip\": \"10.77.0.100\", \"mac\": \"02:53:4b:4c:00:64\"},"
		 " \"switches\": [{\"id\": 1, \"role\": \"one-arm\", \"lcores\": [1],"
		 "  \"ports\": [{\"name\": \"arm\", \"vdev\": \"%s\"}]}],"
		 " \"nodes\": [{\"id\": 1, \"name\": \"n1\", \"ip\": \"10.77.0.1\"},"
		 "  {\"id\": 2, \"name\": \"n2\", \"ip\": \"10.77.0.2\"},"
		 "  {\"id\": 3, \"name\": \"n3\", \"ip\": \"10.77.0.3\"},"
		 "  {\"id\": 4, \"name\": \"n4\", \"ip\": \"10.77.0.4\"}]}",
		 vdev);
	if (cfg_load_string(json, "golden.json", &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "test_golden: %s\n", err);
		return 1;
	}
	snprintf(prefix, sizeof(prefix), "skl-test-golden-%d", getpid());
	char *eal[] = {"test_golden",	"--no-huge", "-m",	 "256",		"--no-pci", "--no-shconf",
		       "--file-prefix", prefix,	     "--lcores", "(0-1)@(0-1)", "--log-level",
		       "lib.eal:error", NULL};

	if (rte_eal_init(12, eal) < 0)
		return 1;
	struct sw_opts opts = {
	    .idle_sleep_us = -1, .socket_path = "", .no_telemetry = true, .close_ports = true};

	if (sw_init(&sw, &cfg, &cfg.switches[0], &opts, err, sizeof(err)) != 0) {
		fprintf(stderr, "test_golden: %s\n", err);
		return 1;
	}
	rte_rcu_qsbr_thread_online(sw.qsbr, 0);
	for (int idle = 0, i = 0; idle < 8 && i < 1000; i++)
		idle = pipeline_poll(sw.workers[0]) ? 0 : idle + 1;
	pipeline_flush(sw.workers[0]);
	rte_rcu_qsbr_thread_offline(sw.qsbr, 0);
	uint64_t forwarded = sw_counter(&sw, SW_CNT_REQ_FORWARDED);
	uint64_t bad = sw_counter(&sw, SW_CNT_DROP_WIRE_MAGIC);

	sw_fini(&sw); /* closes the port: the pcap writer flushes */
	test_eal_cleanup();

	static uint8_t got[65536], want[65536];
	unsigned ngot, nwant;
	size_t lg = frames(out, got, sizeof(got), &ngot);
	int rc = 0;

	if (forwarded != 3 || bad != 1) {
		fprintf(stderr,
			"test_golden: forwarded %llu requests (want 3), %llu bad (want 1)\n",
			(unsigned long long)forwarded, (unsigned long long)bad);
		rc = 1;
	}
	if (getenv("SKL_WRITE_GOLDEN")) {
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "cp %s %s", out, golden);
		rc |= system(cmd) != 0;
		fprintf(stderr, "test_golden: wrote %s (%u frames)\n", golden, ngot);
	} else {
		size_t lw = frames(golden, want, sizeof(want), &nwant);

		if (lw == 0 || lw != lg || memcmp(got, want, lg) != 0) {
			fprintf(stderr,
				"test_golden: %u frames (%zu bytes) differ from %s (%u frames, %zu "
				"bytes)\n",
				ngot, lg, golden, nwant, lw);
			rc = 1;
		} else {
			printf("test_golden: %u frames identical to the golden capture\n", ngot);
		}
	}
	unlink(in);
	unlink(out);
	rmdir(dir);
	return rc;
}
