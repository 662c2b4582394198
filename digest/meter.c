/*
 * meter.c - what a node measures about itself for its load digest.
 *
 * Hot side (any thread): a latency histogram and a receive counter, bumped
 * with relaxed atomic adds. Relaxed is enough: the sampler only needs each
 * counter to be exact eventually, not ordered against the others; a request
 * counted in the "wrong" interval moves one sample by one request.
 * Cold side (the sampler thread): deltas of the histogram and of the
 * process's /proc counters since the previous sample.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "meter.h"

unsigned dig_hist_bucket(uint32_t us)
{
	unsigned msb, sub;

	if (us < (1u << DIG_HIST_SUB_BITS))
		return us;
	msb = 31u - (unsigned)__builtin_clz(us);
	sub = (us >> (msb - DIG_HIST_SUB_BITS)) & ((1u << DIG_HIST_SUB_BITS) - 1);
	return ((msb - DIG_HIST_SUB_BITS + 1) << DIG_HIST_SUB_BITS) + sub;
}

uint32_t dig_hist_upper(unsigned bucket)
{
	unsigned group = bucket >> DIG_HIST_SUB_BITS, sub = bucket & ((1u << DIG_HIST_SUB_BITS) - 1);
	unsigned msb;
	uint64_t lo;

	if (group == 0)
		return bucket;
	msb = group + DIG_HIST_SUB_BITS - 1;
	lo = ((uint64_t)((1u << DIG_HIST_SUB_BITS) | sub)) << (msb - DIG_HIST_SUB_BITS);
	lo += (1ull << (msb - DIG_HIST_SUB_BITS)) - 1;
	return lo > UINT32_MAX ? UINT32_MAX : (uint32_t)lo;
}

static int read_cpu_ticks(const struct dig_meter *mt, uint64_t *ticks);
static int read_io_bytes(const struct dig_meter *mt, uint64_t *bytes);

int dig_meter_init(struct dig_meter *mt, const struct cfg_digest *cfg, const char *proc_dir,
		   uint32_t boot_id, uint64_t now_us)
{
	if (!mt || !cfg)
		return -EINVAL;
	memset(mt, 0, sizeof(*mt));
	mt->cfg = *cfg;
	snprintf(mt->proc_dir, sizeof(mt->proc_dir), "%s", proc_dir ? proc_dir : "/proc/self");
	mt->clk_tck = sysconf(_SC_CLK_TCK);
	mt->page_size = sysconf(_SC_PAGESIZE);
	if (mt->clk_tck <= 0)
		mt->clk_tck = 100;
	if (mt->page_size <= 0)
		mt->page_size = 4096;
	if (boot_id == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		boot_id = (uint32_t)ts.tv_sec * 2654435761u ^ (uint32_t)ts.tv_nsec ^
			  ((uint32_t)getpid() << 16);
		if (boot_id == 0)
			boot_id = 1;
	}
	mt->boot_id = boot_id;
	mt->last_us = now_us;
	/* Baselines, so the first sample already has CPU and I/O deltas. */
	mt->have_cpu = read_cpu_ticks(mt, &mt->cpu_ticks_prev) == 0;
	mt->have_io = read_io_bytes(mt, &mt->io_bytes_prev) == 0;
	return 0;
}

void dig_meter_record(struct dig_meter *mt, uint32_t service_latency_us)
{
	__atomic_fetch_add(&mt->hist[dig_hist_bucket(service_latency_us)], 1, __ATOMIC_RELAXED);
}

void dig_meter_count_rx(struct dig_meter *mt, uint32_t n)
{
	__atomic_fetch_add(&mt->rx_total, n, __ATOMIC_RELAXED);
}

void dig_meter_set_io_pressure(struct dig_meter *mt, uint32_t pct)
{
	__atomic_store_n(&mt->io_pressure, pct > DIG_METRIC_MAX ? DIG_METRIC_MAX : pct,
			 __ATOMIC_RELAXED);
}

/* p95 of the histogram deltas cur - prev; 0 when nothing was recorded. */
static uint32_t delta_p95(const uint64_t *cur, const uint64_t *prev)
{
	uint64_t total = 0, seen = 0, rank;
	unsigned b;

	for (b = 0; b < DIG_HIST_BUCKETS; b++)
		total += cur[b] - prev[b];
	if (total == 0)
		return 0;
	rank = (total * 95 + 99) / 100; /* ceil: the 95th percentile request */
	for (b = 0; b < DIG_HIST_BUCKETS; b++) {
		seen += cur[b] - prev[b];
		if (seen >= rank)
			return dig_hist_upper(b);
	}
	return dig_hist_upper(DIG_HIST_BUCKETS - 1);
}

static void load_hist(const struct dig_meter *mt, uint64_t *cur)
{
	for (unsigned b = 0; b < DIG_HIST_BUCKETS; b++)
		cur[b] = __atomic_load_n(&mt->hist[b], __ATOMIC_RELAXED);
}

uint32_t dig_meter_peek_p95(const struct dig_meter *mt)
{
	uint64_t cur[DIG_HIST_BUCKETS];

	load_hist(mt, cur);
	return delta_p95(cur, mt->hist_prev);
}

/* Read proc_dir/name into buf (NUL-terminated). Returns bytes read or -errno. */
static int read_proc(const struct dig_meter *mt, const char *name, char *buf, size_t cap)
{
	char path[192];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", mt->proc_dir, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (int)n;
}

/* utime + stime (clock ticks) from stat: fields 14 and 15, counted after "(comm)". */
static int read_cpu_ticks(const struct dig_meter *mt, uint64_t *ticks)
{
	char buf[1024];
	unsigned long long utime, stime;
	const char *p;

	if (read_proc(mt, "stat", buf, sizeof(buf)) < 0)
		return -EIO;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (!p)
		return -EIO;
	/* After ")": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
		   &stime) != 2)
		return -EIO;
	*ticks = utime + stime;
	return 0;
}

/* read_bytes + write_bytes (bytes that reached the storage layer) from io. */
static int read_io_bytes(const struct dig_meter *mt, uint64_t *bytes)
{
	char buf[1024];
	unsigned long long rd = 0, wr = 0;
	const char *p;

	if (read_proc(mt, "io", buf, sizeof(buf)) < 0)
		return -EIO;
	p = strstr(buf, "\nread_bytes:");
	if (!p || sscanf(p, "\nread_bytes: %llu", &rd) != 1)
		return -EIO;
	p = strstr(buf, "\nwrite_bytes:");
	if (!p || sscanf(p, "\nwrite_bytes: %llu", &wr) != 1)
		return -EIO;
	*bytes = rd + wr;
	return 0;
}

/* Resident set (bytes) from statm's second field. */
static int read_rss(const struct dig_meter *mt, uint64_t *bytes)
{
	char buf[256];
	unsigned long long size, resident;

	if (read_proc(mt, "statm", buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return -EIO;
	*bytes = resident * (uint64_t)mt->page_size;
	return 0;
}

int dig_meter_sample(struct dig_meter *mt, uint32_t queue_len, uint64_t now_us,
		     struct dig_digest *d)
{
	uint64_t cur[DIG_HIST_BUCKETS], rx, dt_us, ticks, io_bytes, rss;
	const struct cfg_digest *cfg;
	uint32_t io_pressure;

	if (!mt || !d)
		return -EINVAL;
	cfg = &mt->cfg;
	memset(d, 0, sizeof(*d));
	/* A clock that went backwards or did not move: count it as 1 us, not a division by 0. */
	dt_us = now_us > mt->last_us ? now_us - mt->last_us : 1;

	load_hist(mt, cur);
	d->p95_us = delta_p95(cur, mt->hist_prev);
	memcpy(mt->hist_prev, cur, sizeof(cur));

	rx = __atomic_load_n(&mt->rx_total, __ATOMIC_RELAXED);
	uint64_t rate = (rx - mt->rx_prev) * 1000000ull / dt_us;
	d->rx_rate = rate > UINT32_MAX ? UINT32_MAX : (uint32_t)rate;
	mt->rx_prev = rx;

	d->queue_len = queue_len;
	d->m.queue = dig_normalise(queue_len, cfg->max_queue);
	d->m.p95 = dig_normalise(d->p95_us, cfg->max_p95_us);
	d->m.rx_rate = dig_normalise(d->rx_rate, cfg->max_rx_rate);

	/* CPU percent of one core: ticks / clk_tck seconds of CPU over dt. */
	if (read_cpu_ticks(mt, &ticks) == 0) {
		if (mt->have_cpu && ticks >= mt->cpu_ticks_prev) {
			uint64_t pct = (ticks - mt->cpu_ticks_prev) * 100000000ull /
				       ((uint64_t)mt->clk_tck * dt_us);
			d->m.cpu = dig_normalise(pct, cfg->max_cpu_pct);
		}
		mt->cpu_ticks_prev = ticks;
		mt->have_cpu = 1;
	}
	if (read_io_bytes(mt, &io_bytes) == 0) {
		if (mt->have_io && io_bytes >= mt->io_bytes_prev) {
			uint64_t kbps = (io_bytes - mt->io_bytes_prev) * 1000000ull / 1024 / dt_us;
			d->m.io = dig_normalise(kbps, cfg->max_io_kbps);
		}
		mt->io_bytes_prev = io_bytes;
		mt->have_io = 1;
	}
	io_pressure = __atomic_load_n(&mt->io_pressure, __ATOMIC_RELAXED);
	if (io_pressure > d->m.io)
		d->m.io = (uint8_t)io_pressure;
	if (read_rss(mt, &rss) == 0)
		d->m.mem = dig_normalise(rss >> 20, cfg->max_mem_mb);

	d->seq = ++mt->seq;
	if (d->seq == 0) /* wrapped after 2^32 digests: 0 is never sent */
		d->seq = ++mt->seq;
	d->boot_id = mt->boot_id;
	d->ts_us = now_us;
	d->interval_ms = (uint16_t)(cfg->interval_ms > DIG_INTERVAL_MAX_MS ? DIG_INTERVAL_MAX_MS
									  : cfg->interval_ms);
	d->health = (uint8_t)(dig_score(cfg, &d->m) + 0.5);
	mt->last_us = now_us;
	return 0;
}
