/*
 * report.c - load digests (docs/design.md section 6) through digest/.
 *
 * Workers feed each request's service latency into the digest meter
 * (dig_meter_record, relaxed atomics). The digest thread polls every 5 ms:
 * it feeds the receive counter into the meter, asks the emitter whether a
 * digest is due (interval 100 ms, 20 ms after a queue jump or a p95 over the
 * threshold, 200 ms when stable; cfg digest.*), and if so samples the meter
 * and sends the DIGEST datagram (docs/protocol.md "DIGEST payload") to every
 * configured switch at its vip : service.port. Every 100 ms it also reads
 * RocksDB's write pressure (stalls, level-0 files, compaction debt:
 * store_pressure_pct()) into the digest's io metric.
 */
#include "report.h"

#include <errno.h>
#include <time.h>

#include "clock.h"
#include "digest.h"
#include "emit.h"
#include "log.h"
#include "meter.h"
#include "send.h"
#include "store.h"

/* Poll tick: fine enough for 20 ms fast intervals and prompt triggers, cheap when idle. */
#define REPORT_TICK_MS 5
/* RocksDB's write pressure is read every this many ticks (100 ms). */
#define PRESSURE_EVERY_TICKS 20

/* Workers write the histogram with atomic adds; only the digest thread samples. */
static struct dig_meter meter;

void report_latency(uint64_t latency_ns)
{
	uint64_t us = latency_ns / 1000;

	dig_meter_record(&meter, us > UINT32_MAX ? UINT32_MAX : (uint32_t)us);
	node_observe_latency(latency_ns);
}

static void *report_main(void *arg)
{
	struct node *n = arg;
	struct dig_emitter em;
	uint64_t rx_seen = 0, ticks = 0;
	struct timespec tick = {.tv_sec = 0, .tv_nsec = REPORT_TICK_MS * 1000000L};

	if (dig_emitter_init(&em, &n->cfg->digest, clock_real_us()) != 0) {
		log_error("digest emitter: bad digest config; no digests will be sent");
		return NULL;
	}
	while (!atomic_load(&n->stop_bg)) {
		uint64_t rx =
		    atomic_load_explicit(&n->ctr[NODE_CTR_rx_datagrams], memory_order_relaxed);
		uint32_t queue = node_load(n), p95;
		/* A digest's ts_us is real time (docs/protocol.md). */
		uint64_t now = clock_real_us();
		uint8_t dgram[DIG_DATAGRAM_LEN];
		struct dig_digest d;
		int len;

		dig_meter_count_rx(&meter, (uint32_t)(rx - rx_seen));
		rx_seen = rx;
		if (ticks++ % PRESSURE_EVERY_TICKS == 0) {
			struct store_pressure sp;

			if (store_pressure_read(n->store, &sp) == 0)
				dig_meter_set_io_pressure(&meter, store_pressure_pct(&sp));
		}
		p95 = dig_meter_peek_p95(&meter);
		if (dig_emitter_due(&em, queue, p95, now) &&
		    dig_meter_sample(&meter, queue, now, &d) == 0) {
			dig_emitter_on_sample(&em, &d, now);
			len = dig_datagram_build(n->self->id, &d, dgram, sizeof(dgram));
			for (int i = 0; len > 0 && i < n->nswitches; i++)
				if (node_send(n, &n->switch_addr[i], dgram, (size_t)len) == 0)
					node_count(n, NODE_CTR_digests_sent);
		}
		nanosleep(&tick, NULL);
	}
	return NULL;
}

int report_start(struct node *n)
{
	if (dig_meter_init(&meter, &n->cfg->digest, NULL, 0, clock_real_us()) != 0)
		return -EINVAL; /* a config cfg_load() accepted never gets here */
	return -pthread_create(&n->report_thread, NULL, report_main, n);
}

void report_stop(struct node *n)
{
	atomic_store(&n->stop_bg, true);
	pthread_join(n->report_thread, NULL);
}
