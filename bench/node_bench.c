/*
 * node_bench.c - helper of bench/node.sh: one storage node's GET/PUT rate on
 * loopback, and RocksDB's raw single-thread rate with the node's options.
 *
 *   node_bench load DIR KEYS            preload KEYS records into a node's store
 *   node_bench udp PORT KEYS SECS get|put [WINDOW]
 *                                       closed-loop client, WINDOW outstanding
 *   node_bench raw DIR KEYS SECS        RocksDB alone: KEYS loaded, reopened,
 *                                       random gets, then random puts, SECS
 *                                       each, one thread
 *   node_bench echo PORT SECS           the transport alone: a server that
 *                                       answers every request as a node's GET
 *                                       is answered (OK, key, 128-byte value),
 *                                       stores nothing, 2 threads on one
 *                                       socket (as the node's workers), SECS
 * Values are 128 bytes; keys are "key-<i>". Each mode prints name=value.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "clock.h"
#include "keyhash.h"
#include "store.h"
#include "wire.h"

#define VALUE_LEN 128

static double now_s(void)
{
	return (double)clock_mono_ns() / 1e9;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int key_of(char *buf, uint64_t i)
{
	return snprintf(buf, 32, "key-%llu", (unsigned long long)i);
}

static int cmd_load(const char *dir, uint64_t keys)
{
	struct store_options o = {.block_cache_mb = 64, .sync = 0};
	char err[512], k[32];
	uint8_t val[VALUE_LEN];
	struct store *st = store_open(dir, &o, err, sizeof(err));
	uint64_t ver, now = store_now_ms();

	if (!st) {
		fprintf(stderr, "node_bench: %s\n", err);
		return 1;
	}
	memset(val, 'v', sizeof(val));
	for (uint64_t i = 0; i < keys; i++) {
		int kl = key_of(k, i);

		if (store_put(st, keyhash(k, (size_t)kl), k, (size_t)kl, val, sizeof(val), 0, now,
			      0, &ver) != 0) {
			fprintf(stderr, "node_bench: store_put failed\n");
			return 1;
		}
	}
	store_close(st);
	printf("loaded=%llu\n", (unsigned long long)keys);
	return 0;
}

/* Closed loop with window requests outstanding; batched system calls so the client stays cheap. */
static int cmd_udp(uint16_t port, uint64_t keys, double secs, int put, int window)
{
	enum { BATCH = 64 };
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
	static uint8_t out[BATCH][256], in[BATCH][2048];
	uint8_t val[VALUE_LEN];
	struct mmsghdr sm[BATCH], rm[BATCH];
	struct iovec siov[BATCH], riov[BATCH];
	uint64_t seq = 0, ok = 0, other = 0;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), outstanding = 0;
	double start, end, last_rx;

	if (window > BATCH)
		window = BATCH;
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(val, 'w', sizeof(val));
	for (int i = 0; i < BATCH; i++) {
		memset(&sm[i], 0, sizeof(sm[i]));
		memset(&rm[i], 0, sizeof(rm[i]));
		sm[i].msg_hdr.msg_iov = &siov[i];
		sm[i].msg_hdr.msg_iovlen = 1;
		sm[i].msg_hdr.msg_name = &to;
		sm[i].msg_hdr.msg_namelen = sizeof(to);
		riov[i].iov_base = in[i];
		riov[i].iov_len = sizeof(in[i]);
		rm[i].msg_hdr.msg_iov = &riov[i];
		rm[i].msg_hdr.msg_iovlen = 1;
	}
	start = now_s();
	end = start + secs;
	last_rx = start;
	while (now_s() < end) {
		int ns = 0;

		while (outstanding + ns < window) {
			char k[32];
			int kl = key_of(k, next_rand() % keys);
			struct wire_msg m = {.op = put ? WIRE_OP_PUT : WIRE_OP_GET,
					     .req_id = ++seq,
					     .keyhash = keyhash(k, (size_t)kl),
					     .key = (const void *)k,
					     .key_len = (uint16_t)kl,
					     .value = put ? val : NULL,
					     .val_len = put ? VALUE_LEN : 0};
			int len = wire_encode(&m, out[ns], sizeof(out[ns]));

			siov[ns].iov_base = out[ns];
			siov[ns].iov_len = (size_t)len;
			ns++;
		}
		if (ns > 0) {
			int sent = sendmmsg(fd, sm, (unsigned)ns, 0);

			outstanding += sent > 0 ? sent : 0;
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (poll(&p, 1, 10) <= 0) {
			/* Lost datagrams (socket buffers): refill the window after 50 ms quiet. */
			if (now_s() - last_rx > 0.05)
				outstanding = 0;
			continue;
		}
		int got = recvmmsg(fd, rm, BATCH, MSG_DONTWAIT, NULL);

		for (int b = 0; b < got; b++) {
			struct wire_msg r;

			last_rx = now_s();
			if (outstanding > 0)
				outstanding--;
			if (wire_decode_header(in[b], rm[b].msg_len, &r) == WIRE_OK &&
			    r.status == WIRE_ST_OK)
				ok++;
			else
				other++;
		}
	}
	double el = now_s() - start;

	printf("%s_ops=%.0f %s_not_ok=%llu\n", put ? "put" : "get", (double)ok / el,
	       put ? "put" : "get", (unsigned long long)other);
	close(fd);
	return ok ? 0 : 1;
}

/* rocksdb_open with the node's options; NULL after printing why. */
static rocksdb_t *raw_open(rocksdb_options_t *o, const char *dir)
{
	char *err = NULL;
	rocksdb_t *db = rocksdb_open(o, dir, &err);

	if (err) {
		fprintf(stderr, "node_bench: %s\n", err);
		free(err);
		return NULL;
	}
	return db;
}

/*
 * RocksDB alone, doing what the node's clients ask of the node, on a store
 * made as the node's is: KEYS records loaded in key order (not measured),
 * the database closed and opened again (the node starts on a loaded store),
 * then uniform random GETs for SECS, then uniform random PUTs (overwrites)
 * for SECS, one thread, records as large as the node's (header + 128 B).
 */
static int cmd_raw(const char *dir, uint64_t keys, double secs)
{
	rocksdb_options_t *o = store_make_options(64, 0);
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *err = NULL, k[32];
	uint8_t val[VALUE_LEN + STORE_REC_HDR];
	rocksdb_t *db = raw_open(o, dir);
	uint64_t gets = 0, found = 0, puts = 0;
	double t0, get_rate, put_rate;

	if (!db)
		return 1;
	memset(val, 'r', sizeof(val));
	for (uint64_t i = 0; i < keys && !err; i++) {
		int kl = key_of(k, i);

		rocksdb_put(db, wo, k, (size_t)kl, (const char *)val, sizeof(val), &err);
	}
	rocksdb_close(db);
	db = err ? NULL : raw_open(o, dir);
	if (!db) {
		if (err)
			fprintf(stderr, "node_bench: put: %s\n", err);
		return 1;
	}
	t0 = now_s();
	while (now_s() - t0 < secs) {
		for (int b = 0; b < 1000; b++) {
			int kl = key_of(k, next_rand() % keys);
			rocksdb_pinnableslice_t *ps =
			    rocksdb_get_pinned(db, ro, k, (size_t)kl, &err);

			if (ps) {
				found++;
				rocksdb_pinnableslice_destroy(ps);
			}
			gets++;
		}
	}
	get_rate = (double)gets / (now_s() - t0);
	t0 = now_s();
	while (now_s() - t0 < secs && !err) {
		for (int b = 0; b < 1000 && !err; b++) {
			int kl = key_of(k, next_rand() % keys);

			rocksdb_put(db, wo, k, (size_t)kl, (const char *)val, sizeof(val), &err);
			puts++;
		}
	}
	put_rate = (double)puts / (now_s() - t0);
	if (err) {
		fprintf(stderr, "node_bench: put: %s\n", err);
		return 1;
	}
	printf("rocksdb_put_ops=%.0f rocksdb_get_ops=%.0f rocksdb_get_found=%llu\n", put_rate,
	       get_rate, (unsigned long long)found);
	rocksdb_close(db);
	rocksdb_options_destroy(o);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_readoptions_destroy(ro);
	return found == gets ? 0 : 1;
}

struct echo {
	int fd;
	double end;
};

/*
 * What the node's workers do minus the node: block in recvmmsg() for a batch,
 * answer each request with a reply as large as a GET's, send the batch with
 * one sendmmsg(). A 100 ms receive timeout ends the loop at e->end.
 */
static void *echo_worker(void *arg)
{
	enum { BATCH = 32 };
	const struct echo *e = arg;
	static __thread uint8_t in[BATCH][2048], out[BATCH][512];
	static __thread struct sockaddr_in from[BATCH];
	uint8_t val[VALUE_LEN];
	struct mmsghdr rm[BATCH], sm[BATCH];
	struct iovec riov[BATCH], siov[BATCH];

	memset(val, 'e', sizeof(val));
	memset(rm, 0, sizeof(rm));
	memset(sm, 0, sizeof(sm));
	for (int i = 0; i < BATCH; i++) {
		riov[i] = (struct iovec){.iov_base = in[i], .iov_len = sizeof(in[i])};
		rm[i].msg_hdr = (struct msghdr){.msg_iov = &riov[i],
						.msg_iovlen = 1,
						.msg_name = &from[i],
						.msg_namelen = sizeof(from[i])};
	}
	while (now_s() < e->end) {
		int got = recvmmsg(e->fd, rm, BATCH, MSG_WAITFORONE, NULL), ns = 0;

		for (int b = 0; b < got; b++) {
			struct wire_msg q;

			rm[b].msg_hdr.msg_namelen = sizeof(from[b]);
			if (wire_decode(in[b], rm[b].msg_len, &q) != WIRE_OK)
				continue;
			struct wire_msg r = {.op = q.op | WIRE_REPLY,
					     .status = WIRE_ST_OK,
					     .req_id = q.req_id,
					     .keyhash = q.keyhash,
					     .version = 1,
					     .key = q.key,
					     .key_len = q.key_len,
					     .value = val,
					     .val_len = VALUE_LEN};
			int len = wire_encode(&r, out[ns], sizeof(out[ns]));

			if (len < 0)
				continue;
			siov[ns] = (struct iovec){.iov_base = out[ns], .iov_len = (size_t)len};
			sm[ns].msg_hdr = (struct msghdr){.msg_iov = &siov[ns],
							 .msg_iovlen = 1,
							 .msg_name = &from[b],
							 .msg_namelen = sizeof(from[b])};
			ns++;
		}
		if (ns > 0)
			sendmmsg(e->fd, sm, (unsigned)ns, 0);
	}
	return NULL;
}

/* The transport's ceiling: bench/node.sh drives this as it drives the node. */
static int cmd_echo(uint16_t port, double secs)
{
	struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval rcv_timeout = {.tv_usec = 100000};
	int bufsz = 4 << 20;
	struct echo e = {.fd = socket(AF_INET, SOCK_DGRAM, 0), .end = now_s() + secs};
	pthread_t t[2];

	at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(e.fd, SOL_SOCKET, SO_RCVTIMEO, &rcv_timeout, sizeof(rcv_timeout));
	setsockopt(e.fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	if (bind(e.fd, (struct sockaddr *)&at, sizeof(at)) != 0) {
		perror("node_bench: echo: bind");
		return 1;
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, echo_worker, &e);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	close(e.fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "load") == 0)
		return cmd_load(argv[2], strtoull(argv[3], NULL, 10));
	if (argc >= 6 && strcmp(argv[1], "udp") == 0)
		return cmd_udp((uint16_t)atoi(argv[2]), strtoull(argv[3], NULL, 10), atof(argv[4]),
			       strcmp(argv[5], "put") == 0, argc >= 7 ? atoi(argv[6]) : 32);
	if (argc >= 5 && strcmp(argv[1], "raw") == 0)
		return cmd_raw(argv[2], strtoull(argv[3], NULL, 10), atof(argv[4]));
	if (argc >= 4 && strcmp(argv[1], "echo") == 0)
		return cmd_echo((uint16_t)atoi(argv[2]), atof(argv[3]));
	fprintf(stderr, "usage: node_bench load DIR KEYS | udp PORT KEYS SECS get|put [WINDOW] | "
			"raw DIR KEYS SECS | echo PORT SECS\n");
	return 64;
}
