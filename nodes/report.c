/*
 * report.c - load digests (DESIGN.md section 6), interim version.
 *
 * Every 100 ms a DIGEST with raw metrics goes to every configured switch
 * (its vip : service.port). The digest/ component will replace the payload
 * with its compact encoding and the fixed period with its adaptive interval;
 * that change is confined to this file. Interim payload (docs/protocol.md):
 *   be16 queue, be16 inflight, be32 p95_us, be32 rx_per_s, be16 cpu_pct,
 *   be16 0, be32 io_kbps                                     (20 bytes)
 */
#include "report.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

#define REPORT_PERIOD_MS 100
#define DIGEST_PAYLOAD 20
/* Latency histogram: 16 exact 1 us buckets, then 4 sub-buckets per power of two. */
#define LAT_BUCKETS 192

/* Workers add, the digest thread reads and resets; relaxed is enough for statistics. */
static _Atomic uint64_t lat_hist[LAT_BUCKETS];

static unsigned lat_bucket(uint64_t us)
{
	unsigned msb, b;

	if (us < 16)
		return (unsigned)us;
	msb = 63u - (unsigned)__builtin_clzll(us);
	b = 16 + (msb - 4) * 4 + (unsigned)((us >> (msb - 2)) & 3);
	return b < LAT_BUCKETS ? b : LAT_BUCKETS - 1;
}

/* Upper bound in us of bucket b. */
static uint64_t lat_bucket_max(unsigned b)
{
	unsigned msb, sub;

	if (b < 16)
		return b;
	msb = (b - 16) / 4 + 4;
	sub = (b - 16) % 4;
	return ((4ull + sub + 1) << (msb - 2)) - 1;
}

void report_latency(uint64_t latency_ns)
{
	atomic_fetch_add_explicit(&lat_hist[lat_bucket(latency_ns / 1000)], 1,
				  memory_order_relaxed);
}

/* p95 of the latencies since the last call, and reset. */
static uint32_t take_p95_us(void)
{
	uint64_t counts[LAT_BUCKETS], total = 0, seen = 0;

	for (int i = 0; i < LAT_BUCKETS; i++) {
		counts[i] = atomic_exchange_explicit(&lat_hist[i], 0, memory_order_relaxed);
		total += counts[i];
	}
	if (total == 0)
		return 0;
	for (unsigned i = 0; i < LAT_BUCKETS; i++) {
		seen += counts[i];
		if (seen * 100 >= total * 95) {
			uint64_t v = lat_bucket_max(i);

			return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		}
	}
	return UINT32_MAX;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Bytes this process read and wrote to storage so far (/proc/self/io), 0 if unknown. */
static uint64_t io_bytes(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	unsigned long long v, sum = 0;
	char name[64];

	if (!f)
		return 0;
	while (fscanf(f, "%63[^:]: %llu\n", name, &v) == 2)
		if (strcmp(name, "read_bytes") == 0 || strcmp(name, "write_bytes") == 0)
			sum += v;
	fclose(f);
	return sum;
}

struct report_state {
	uint64_t wall_ns, cpu_ns, rx, io;
	uint64_t seq;
};

static void send_digest(struct node *n, struct report_state *s)
{
	uint64_t wall = clock_ns(CLOCK_MONOTONIC), cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	uint64_t rx = atomic_load_explicit(&n->ctr[NODE_CTR_rx_datagrams], memory_order_relaxed);
	uint64_t io = io_bytes(), dt = wall - s->wall_ns ? wall - s->wall_ns : 1;
	uint32_t queued = atomic_load(&n->queued), inflight = atomic_load(&n->inflight);
	uint8_t payload[DIGEST_PAYLOAD], dgram[WIRE_HDR_LEN + DIGEST_PAYLOAD];
	struct wire_msg m = {.op = WIRE_OP_DIGEST,
			     .version = ++s->seq,
			     .node = n->self->id,
			     .load = node_load(n),
			     .value = payload,
			     .val_len = DIGEST_PAYLOAD};
	uint64_t rx_rate = (rx - s->rx) * 1000000000u / dt;
	uint64_t cpu_pct = (cpu - s->cpu_ns) * 100 / dt;
	uint64_t io_kbps = (io - s->io) * 1000000u / dt; /* bytes/ns * 1e9 / 1e3 */
	int len;

	wire_put16(payload, queued > 0xffff ? 0xffff : (uint16_t)queued);
	wire_put16(payload + 2, inflight > 0xffff ? 0xffff : (uint16_t)inflight);
	wire_put32(payload + 4, take_p95_us());
	wire_put32(payload + 8, rx_rate > UINT32_MAX ? UINT32_MAX : (uint32_t)rx_rate);
	wire_put16(payload + 12, cpu_pct > 0xffff ? 0xffff : (uint16_t)cpu_pct);
	wire_put16(payload + 14, 0);
	wire_put32(payload + 16, io_kbps > UINT32_MAX ? UINT32_MAX : (uint32_t)io_kbps);
	*s = (struct report_state){wall, cpu, rx, io, s->seq};
	len = wire_encode(&m, dgram, sizeof(dgram));
	if (len < 0)
		return;
	for (int i = 0; i < n->nswitches; i++)
		if (node_send(n, &n->switch_addr[i], dgram, (size_t)len) == 0)
			node_count(n, NODE_CTR_digests_sent);
}

static void *report_main(void *arg)
{
	struct node *n = arg;
	struct report_state s = {clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID), 0,
				 io_bytes(), 0};
	struct timespec ts = {.tv_sec = 0, .tv_nsec = REPORT_PERIOD_MS * 1000000L};

	while (!atomic_load(&n->stop_bg)) {
		nanosleep(&ts, NULL);
		if (!atomic_load(&n->stop_bg))
			send_digest(n, &s);
	}
	return NULL;
}

int report_start(struct node *n)
{
	return -pthread_create(&n->report_thread, NULL, report_main, n);
}

void report_stop(struct node *n)
{
	atomic_store(&n->stop_bg, true);
	pthread_join(n->report_thread, NULL);
}
