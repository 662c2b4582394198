/*
 * test_meter.c - node-side measurement: histogram buckets and p95, receive
 * rate, CPU / I/O / memory from /proc-style files (fixtures in a temp dir),
 * and concurrent recording from several threads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "common.h"
#include "meter.h"

#define MS 1000ull

static char dir[64];

static void write_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* /proc/<pid>/stat with a comm holding spaces and a ')', utime/stime as given. */
static void write_stat(unsigned utime, unsigned stime)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "1234 (skewless node) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 %u %u 0 0 20 0 "
		 "3 0 1000 123456789 2000 18446744073709551615\n",
		 utime, stime);
	write_file("stat", buf);
}

static void write_io(unsigned long long rd, unsigned long long wr)
{
	char buf[512];

	snprintf(buf, sizeof(buf),
		 "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: %llu\nwrite_bytes: "
		 "%llu\ncancelled_write_bytes: 0\n",
		 rd, wr);
	write_file("io", buf);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/skl-digest-meter-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char path[128];
	const char *names[] = {"stat", "io", "statm"};

	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

START_TEST(histogram_buckets_bound_error)
{
	unsigned prev = 0;

	for (uint64_t v = 0; v <= UINT32_MAX; v = v < 64 ? v + 1 : v + v / 7 + 1) {
		unsigned b = dig_hist_bucket((uint32_t)v);

		ck_assert_uint_lt(b, DIG_HIST_BUCKETS);
		ck_assert_uint_ge(b, prev); /* monotonic */
		ck_assert_uint_ge(dig_hist_upper(b), v);
		ck_assert(dig_hist_upper(b) <= v + v / 8 + 1); /* <= 12.5% above */
		prev = b;
	}
	ck_assert_uint_eq(dig_hist_bucket(UINT32_MAX), DIG_HIST_BUCKETS - 1);
	ck_assert_uint_eq(dig_hist_upper(DIG_HIST_BUCKETS - 1), UINT32_MAX);
}
END_TEST

START_TEST(p95_from_interval_delta)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_meter *mt = calloc(1, sizeof(*mt));
	struct dig_digest d;

	ck_assert_int_eq(dig_meter_init(mt, &cfg, dir, 7, 0), 0);
	ck_assert_uint_eq(dig_meter_peek_p95(mt), 0);
	for (int i = 0; i < 95; i++)
		dig_meter_record(mt, 100);
	for (int i = 0; i < 5; i++)
		dig_meter_record(mt, 10000);
	ck_assert_uint_eq(dig_meter_peek_p95(mt), 103); /* bucket 96..103 */
	dig_meter_record(mt, 10000);			/* now 6 of 101 are slow */
	ck_assert_uint_ge(dig_meter_peek_p95(mt), 10000);
	ck_assert_uint_le(dig_meter_peek_p95(mt), 10000 + 10000 / 8);
	/* Peeking does not consume; sampling does. */
	ck_assert_int_eq(dig_meter_sample(mt, 0, 100 * MS, &d), 0);
	ck_assert_uint_ge(d.p95_us, 10000);
	ck_assert_uint_eq(d.m.p95, dig_normalise(d.p95_us, cfg.max_p95_us));
	ck_assert_uint_eq(dig_meter_peek_p95(mt), 0);
	ck_assert_int_eq(dig_meter_sample(mt, 0, 200 * MS, &d), 0);
	ck_assert_uint_eq(d.p95_us, 0);
	free(mt);
}
END_TEST

START_TEST(proc_metrics_from_deltas)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_meter *mt = calloc(1, sizeof(*mt));
	struct dig_digest d;

	write_stat(60, 40);
	write_io(1000, 0);
	write_file("statm", "500000 262144 1000 10 0 2000 0\n");
	ck_assert_int_eq(dig_meter_init(mt, &cfg, dir, 7, 1000 * MS), 0);
	mt->clk_tck = 100; /* fixture ticks are 10 ms */
	mt->page_size = 4096;

	/* 100 ms later: 5 ticks (50 ms of CPU = 50%), 5 MiB of I/O (51200 KiB/s = 50). */
	write_stat(63, 42);
	write_io(1000 + 4 * 1024 * 1024, 1024 * 1024);
	dig_meter_count_rx(mt, 300);
	dig_meter_count_rx(mt, 200);
	ck_assert_int_eq(dig_meter_sample(mt, 64, 1100 * MS, &d), 0);
	ck_assert_uint_eq(d.m.cpu, 50);
	ck_assert_uint_eq(d.m.io, 50);
	ck_assert_uint_eq(d.m.mem, 25); /* 1 GiB of 4096 MB */
	ck_assert_uint_eq(d.rx_rate, 5000);
	ck_assert_uint_eq(d.m.rx_rate, 10); /* of 50000/s */
	ck_assert_uint_eq(d.queue_len, 64);
	ck_assert_uint_eq(d.m.queue, 25); /* of 256 */
	ck_assert_uint_eq(d.seq, 1);
	ck_assert_uint_eq(d.boot_id, 7);
	ck_assert_uint_eq(d.ts_us, 1100 * MS);
	ck_assert_uint_eq(d.health, (uint8_t)(dig_score(&cfg, &d.m) + 0.5));
	ck_assert_uint_lt(d.health, 100);

	/* Nothing moved in the next 100 ms; RocksDB says writes stall. */
	dig_meter_set_io_pressure(mt, 80);
	ck_assert_int_eq(dig_meter_sample(mt, 0, 1200 * MS, &d), 0);
	ck_assert_uint_eq(d.m.cpu, 0);
	ck_assert_uint_eq(d.m.io, 80);
	ck_assert_uint_eq(d.rx_rate, 0);
	ck_assert_uint_eq(d.seq, 2);
	/* The sample is a valid digest once the emitter sets the interval. */
	uint8_t buf[DIG_PAYLOAD_LEN];
	ck_assert_int_eq(dig_payload_encode(&d, buf, sizeof(buf)), DIG_PAYLOAD_LEN);
	free(mt);
}
END_TEST

START_TEST(missing_proc_files_give_zero)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_meter *mt = calloc(1, sizeof(*mt));
	struct dig_digest d;

	ck_assert_int_eq(dig_meter_init(mt, &cfg, dir, 0, 0), 0);
	ck_assert_uint_ne(mt->boot_id, 0);
	ck_assert_int_eq(dig_meter_sample(mt, 0, 0, &d), 0); /* dt 0 must not divide by 0 */
	ck_assert_uint_eq(d.m.cpu, 0);
	ck_assert_uint_eq(d.m.io, 0);
	ck_assert_uint_eq(d.m.mem, 0);
	ck_assert_uint_eq(d.health, 100);
	ck_assert_int_eq(dig_meter_init(mt, NULL, dir, 0, 0), -EINVAL);
	free(mt);
}
END_TEST

START_TEST(real_proc_self_readable)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_meter *mt = calloc(1, sizeof(*mt));
	struct dig_digest d;

	cfg.max_mem_mb = 1; /* any real process is over 1 MB resident */
	ck_assert_int_eq(dig_meter_init(mt, &cfg, NULL, 0, 0), 0);
	ck_assert(mt->have_cpu);
	ck_assert_int_eq(dig_meter_sample(mt, 0, 100 * MS, &d), 0);
	ck_assert_uint_eq(d.m.mem, 100);
	free(mt);
}
END_TEST

#define THREADS 4
#define PER_THREAD 50000

static void *recorder(void *arg)
{
	struct dig_meter *mt = arg;

	for (uint32_t i = 0; i < PER_THREAD; i++) {
		dig_meter_record(mt, i % 2000);
		dig_meter_count_rx(mt, 1);
	}
	return NULL;
}

START_TEST(concurrent_recording_loses_nothing)
{
	struct cfg_digest cfg = default_digest_cfg();
	struct dig_meter *mt = calloc(1, sizeof(*mt));
	pthread_t th[THREADS];
	struct dig_digest d;
	uint64_t total = 0;

	ck_assert_int_eq(dig_meter_init(mt, &cfg, dir, 1, 0), 0);
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, recorder, mt), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (unsigned b = 0; b < DIG_HIST_BUCKETS; b++)
		total += mt->hist[b];
	ck_assert_uint_eq(total, THREADS * PER_THREAD);
	ck_assert_int_eq(dig_meter_sample(mt, 0, 1000 * MS, &d), 0);
	ck_assert_uint_eq(d.rx_rate, THREADS * PER_THREAD); /* over one second */
	ck_assert_uint_ge(d.p95_us, 1900);
	ck_assert_uint_le(d.p95_us, 1900 + 1900 / 8 + 1);
	free(mt);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("digest_meter");
	TCase *tc = tcase_create("meter");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, histogram_buckets_bound_error);
	tcase_add_test(tc, p95_from_interval_delta);
	tcase_add_test(tc, proc_metrics_from_deltas);
	tcase_add_test(tc, missing_proc_files_give_zero);
	tcase_add_test(tc, real_proc_self_readable);
	tcase_add_test(tc, concurrent_recording_loses_nothing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
