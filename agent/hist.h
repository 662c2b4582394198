/*
 * hist.h - a log-linear latency histogram, HdrHistogram style.
 *
 * Values (nanoseconds, or any non-negative integer) below 2^HIST_SUB_BITS are
 * counted exactly; above, each power-of-two range is split into
 * 2^(HIST_SUB_BITS-1) equal buckets, so a reported value is within 1/64 (1.6%)
 * of the true one, over the whole 64-bit range, in 30 KiB. Percentiles are
 * reported as the highest value equivalent to the bucket (as HdrHistogram
 * does), so they never understate a latency.
 */
#ifndef SKL_HIST_H
#define SKL_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB      (1u << HIST_SUB_BITS)
#define HIST_HALF     (HIST_SUB / 2)
#define HIST_BUCKETS  (HIST_SUB + (64 - HIST_SUB_BITS) * HIST_HALF)

struct hist {
	uint64_t count;
	uint64_t min, max;
	double sum;
	uint64_t counts[HIST_BUCKETS];
};

void hist_reset(struct hist *h);
void hist_record(struct hist *h, uint64_t v);

/* Value at percentile p (0..100]: the smallest recorded-bucket value v with
 * at least p% of the samples <= v. 0 when empty. */
uint64_t hist_percentile(const struct hist *h, double p);
double hist_mean(const struct hist *h);

/* Bucket index of v and the highest value that maps to bucket i. */
uint32_t hist_index(uint64_t v);
uint64_t hist_bucket_high(uint32_t i);

#endif
