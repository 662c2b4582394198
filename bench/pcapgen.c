/*
 * pcapgen.c - writes the benchmark's input: a pcap of valid skewless
 * requests from one client (10.77.0.201:40000+) to the VIP (10.77.0.100:7447),
 * one per key "key:<i>", i = 0..nkeys-1: GET, with every 10th a PUT of a
 * 16-byte value. Every other key ("key:<even>") is also written, one per
 * line, to the keys file: those are the ones bench/fastpath.sh pins in the
 * directory, so half the requests hit the CDT and half go to the ring home.
 *
 * With "replies", the pcap holds what nodes send back instead: for key i, the
 * GET (or PUT) reply with status OK and version 1 from node 1 + i % NODES
 * (10.78.0.<id + 1>, as bench/fastpath.sh configures them), for the client's
 * return address, a GET reply carrying a 16-byte value.
 *
 *   bench_pcapgen OUT.pcap KEYS.txt NKEYS [replies NODES]
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "keyhash.h"
#include "wire.h"

int main(int argc, char **argv)
{
	static const uint8_t vip_mac[6] = {0x02, 0x53, 0x4b, 0x4c, 0x00, 0x64};
	static const uint8_t client_mac[6] = {0x02, 0, 0, 0, 0, 0xc1};
	const uint32_t client_ip = 0x0a4d00c9, vip = 0x0a4d0064;
	FILE *out, *keys;
	long nkeys, nodes = 0;

	if ((argc != 4 && argc != 6) || (nkeys = strtol(argv[3], NULL, 10)) < 1 ||
	    nkeys > 1000000 ||
	    (argc == 6 && (strcmp(argv[4], "replies") != 0 ||
			   (nodes = strtol(argv[5], NULL, 10)) < 1 || nodes > 249))) {
		fprintf(stderr, "usage: bench_pcapgen OUT.pcap KEYS.txt NKEYS [replies NODES]\n");
		return 1;
	}
	out = fopen(argv[1], "wb");
	keys = fopen(argv[2], "w");
	if (!out || !keys) {
		perror("bench_pcapgen");
		return 1;
	}
	/* pcap global header: magic, v2.4, GMT 0, sigfigs 0, snaplen 65535, Ethernet. */
	uint32_t gh[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};

	fwrite(gh, sizeof(gh), 1, out);
	for (long i = 0; i < nkeys; i++) {
		uint8_t f[256], *ip = f + 14, *udp = ip + 20, *w = udp + 8;
		char key[32];
		int klen = snprintf(key, sizeof(key), "key:%ld", i);
		int put = i % 10 == 9;
		uint16_t node = nodes ? (uint16_t)(1 + i % nodes) : 0;
		uint16_t client_port = (uint16_t)(40000 + i % 1000);
		/* A reply carries a value where the request does not, and vice versa. */
		int has_value = nodes ? !put : put;
		struct wire_msg m = {
		    .op = (uint8_t)((put ? WIRE_OP_PUT : WIRE_OP_GET) | (nodes ? WIRE_REPLY : 0)),
		    .req_id = (7ull << 32) | (uint64_t)i,
		    .keyhash = keyhash(key, (size_t)klen),
		    .version = nodes ? 1 : 0,
		    .node = node,
		    .ret_ip = nodes ? client_ip : 0,
		    .ret_port = nodes ? client_port : 0,
		    .key_len = (uint16_t)klen,
		    .key = (const uint8_t *)key,
		    .val_len = has_value ? 16 : 0,
		    .value = (const uint8_t *)"0123456789abcdef",
		};
		uint32_t sip = nodes ? 0x0a4e0001u + node : client_ip, dip = vip;
		const uint8_t *src_mac = client_mac;
		uint8_t node_mac[6] = {0x02, 0, 0, 0, 0, (uint8_t)node};

		if (nodes)
			src_mac = node_mac;
		int wl = wire_encode(&m, w, sizeof(f) - 42);
		uint16_t ulen = (uint16_t)(8 + wl), ilen = (uint16_t)(20 + ulen);
		uint32_t flen = 14u + ilen;

		if (i % 2 == 0)
			fprintf(keys, "%s\n", key);
		memcpy(f, vip_mac, 6);
		memcpy(f + 6, src_mac, 6);
		f[12] = 0x08, f[13] = 0x00;
		memset(ip, 0, 20);
		ip[0] = 0x45;
		ip[2] = (uint8_t)(ilen >> 8), ip[3] = (uint8_t)ilen;
		ip[8] = 64, ip[9] = 17;
		wire_put32(ip + 12, sip);
		wire_put32(ip + 16, dip);
		((struct rte_ipv4_hdr *)ip)->hdr_checksum = rte_ipv4_cksum((struct rte_ipv4_hdr *)ip);
		wire_put16(udp, nodes ? 7447 : client_port);
		wire_put16(udp + 2, 7447);
		wire_put16(udp + 4, ulen);
		wire_put16(udp + 6, 0);
		((struct rte_udp_hdr *)udp)->dgram_cksum =
		    rte_ipv4_udptcp_cksum((struct rte_ipv4_hdr *)ip, udp);
		uint32_t rh[4] = {(uint32_t)i, 0, flen, flen};

		fwrite(rh, sizeof(rh), 1, out);
		fwrite(f, flen, 1, out);
	}
	fclose(keys);
	return fclose(out) == 0 ? 0 : 1;
}
