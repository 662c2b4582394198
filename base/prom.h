/*
 * prom.h - the Prometheus text exposition format (version 0.0.4), and the
 * fixed-bucket histogram the daemons observe latencies into.
 *
 * A scrape collects samples into a struct prom in any order (a formatter
 * walks one object at a time: node n1's fields, then n2's); prom_render()
 * groups them by family, each with its HELP and TYPE once, as the format
 * requires. Names and label names are checked against the format's
 * grammar, label values and help text are escaped. Not thread-safe: one
 * collector per scrape.
 */
#ifndef SKL_BASE_PROM_H
#define SKL_BASE_PROM_H

#include <stddef.h>
#include <stdint.h>

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

struct prom_label {
	const char *name;
	const char *value;
};

/*
 * Histogram buckets: upper bounds in seconds, ascending; the +Inf bucket is
 * implicit. Observers from any thread add with relaxed atomics (a scrape may
 * see a sample in a bucket before it sees it in the sum: Prometheus
 * tolerates that, the next scrape agrees).
 */
#define PROM_HIST_MAX 24
struct prom_hist {
	unsigned nbounds;
	double bounds[PROM_HIST_MAX];
	uint64_t counts[PROM_HIST_MAX + 1]; /* per bucket, not cumulative; last: +Inf */
	uint64_t sum_ns;
};

/* nbounds bounds (at most PROM_HIST_MAX, ascending). 0 or -EINVAL. */
int prom_hist_init(struct prom_hist *h, const double *bounds, unsigned nbounds);
void prom_hist_observe_ns(struct prom_hist *h, uint64_t ns);
/* Upper bounds 1 us, 2.5 us, 5 us, ... 10 s (1-2.5-5 per decade): request latency. */
extern const double prom_latency_bounds[];
extern const unsigned prom_latency_nbounds;

struct prom;

struct prom *prom_new(void);
void prom_free(struct prom *p);

/*
 * One sample of family `name` (created on first use with help and type; a
 * later sample must agree on the type). 0, -EINVAL (bad name, label name or
 * type clash) or -ENOMEM; the first error sticks and prom_render() reports it.
 */
int prom_add(struct prom *p, const char *name, const char *help, enum prom_type type,
	     const struct prom_label *labels, unsigned nlabels, double value);
/* A histogram's samples (_bucket with le, _sum, _count) under family `name`. */
int prom_add_hist(struct prom *p, const char *name, const char *help,
		  const struct prom_label *labels, unsigned nlabels, const struct prom_hist *h);

/* The exposition text (malloc'd, NUL-terminated; *len its length), or NULL with errno. */
char *prom_render(struct prom *p, size_t *len);

/* Whether s is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*). */
int prom_valid_name(const char *s);

#endif
