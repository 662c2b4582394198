/*
 * meter.h - node-side measurement for load digests (docs/design.md section 6).
 *
 * Worker threads call dig_meter_record() per served request and the receive
 * path calls dig_meter_count_rx(); both are relaxed atomic increments, so any
 * thread may call them at any time without a lock. Exactly one thread (the
 * node's digest timer) calls dig_meter_peek_p95() and dig_meter_sample(): the
 * sample state (previous histogram, /proc counters) is that thread's alone.
 *
 * A sample covers the time since the previous sample (or dig_meter_init()):
 * p95 from the latency histogram's delta, receive rate, CPU from
 * /proc/self/stat utime+stime deltas, disk I/O from /proc/self/io
 * read_bytes+write_bytes deltas, memory from /proc/self/statm resident pages.
 * Each is normalised 0..100 against cfg digest.max.*.
 */
#ifndef SKL_DIG_METER_H
#define SKL_DIG_METER_H

#include <stdint.h>

#include "config.h"
#include "digest.h"

/*
 * Log-linear latency buckets: values 0..7 us exact, then 8 sub-buckets per power
 * of two up to 2^32 us, so a percentile is off by at most 12.5% (one sub-bucket).
 */
#define DIG_HIST_SUB_BITS 3
#define DIG_HIST_BUCKETS ((32 - DIG_HIST_SUB_BITS + 1) << DIG_HIST_SUB_BITS) /* 240 */

struct dig_meter {
	struct cfg_digest cfg;
	char proc_dir[128]; /* "/proc/self"; tests point it at fixture files */

	/* Written by any thread (relaxed atomic adds), read by the sampler. */
	uint64_t hist[DIG_HIST_BUCKETS];
	uint64_t rx_total;
	uint32_t io_pressure; /* 0..100 set by the node (e.g. RocksDB write stalls) */

	/* Sampler thread only. */
	uint64_t hist_prev[DIG_HIST_BUCKETS];
	uint64_t rx_prev;
	uint64_t last_us;
	uint64_t cpu_ticks_prev; /* utime + stime */
	uint64_t io_bytes_prev;	 /* read_bytes + write_bytes */
	uint8_t have_cpu, have_io; /* a previous /proc reading exists */
	long clk_tck, page_size;
	uint32_t seq;
	uint32_t boot_id;
};

/*
 * Start measuring at now_us (node's clock, microseconds). proc_dir NULL means
 * "/proc/self". boot_id identifies this run of the node (0: pick one from the
 * clock and pid). Returns 0 or -EINVAL.
 */
int dig_meter_init(struct dig_meter *mt, const struct cfg_digest *cfg, const char *proc_dir,
		   uint32_t boot_id, uint64_t now_us);

/* One served request took service_latency_us. Any thread. */
void dig_meter_record(struct dig_meter *mt, uint32_t service_latency_us);

/* n requests received. Any thread. */
void dig_meter_count_rx(struct dig_meter *mt, uint32_t n);

/*
 * Disk pressure the process counters cannot see (pending compaction, write
 * stalls), 0..100; the sample reports max(this, /proc/self/io rate). Any thread.
 */
void dig_meter_set_io_pressure(struct dig_meter *mt, uint32_t pct);

/* p95 of the requests recorded since the last sample, without consuming them. */
uint32_t dig_meter_peek_p95(const struct dig_meter *mt);

/*
 * Close the interval at now_us: fill *d with the next seq, boot id, raw and
 * normalised metrics and the node's own health (dig_score). d->interval_ms
 * and flags are left for the emitter (dig_emitter_on_sample). A /proc file
 * that cannot be read yields 0 for its metric. Returns 0 or -EINVAL.
 */
int dig_meter_sample(struct dig_meter *mt, uint32_t queue_len, uint64_t now_us,
		     struct dig_digest *d);

/* Bucket of a latency and the largest latency a bucket holds (exposed for tests). */
unsigned dig_hist_bucket(uint32_t us);
uint32_t dig_hist_upper(unsigned bucket);

#endif
