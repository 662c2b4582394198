/*
 * clock.h - the one place the daemons read the time, as whole units.
 *
 * Two clocks, for two purposes:
 *   monotonic  intervals, deadlines, latencies, timers (never jumps; meaningless
 *              across processes)
 *   real       what other processes and records compare: a digest's ts_us
 *              (docs/protocol.md), a stored record's time_ms, log timestamps
 * The switch's fast path counts TSC cycles (rte_rdtsc()) instead and never
 * calls these.
 */
#ifndef SKL_CLOCK_H
#define SKL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in nanoseconds, microseconds, milliseconds. */
static inline uint64_t clock_mono_ns(void)
{
	return clock_ns_of(CLOCK_MONOTONIC);
}

static inline uint64_t clock_mono_us(void)
{
	return clock_mono_ns() / 1000u;
}

static inline uint64_t clock_mono_ms(void)
{
	return clock_mono_ns() / 1000000u;
}

/* CLOCK_REALTIME (since the epoch) in microseconds and milliseconds. */
static inline uint64_t clock_real_us(void)
{
	return clock_ns_of(CLOCK_REALTIME) / 1000u;
}

static inline uint64_t clock_real_ms(void)
{
	return clock_ns_of(CLOCK_REALTIME) / 1000000u;
}

#endif
