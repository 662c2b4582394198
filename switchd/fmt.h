/*
 * fmt.h - one formatter per object, every output (VPP's format_* idea).
 *
 * A module that owns an object (a node row, a directory entry, a peer
 * switch) writes one function that emits the object's fields through a
 * struct fmt; the same function then feeds the control socket's JSON, a
 * DPDK telemetry dict, a one-line "name=value ..." text and Prometheus
 * samples for /metrics, so the outputs cannot drift apart. Fields come out in
 * the order they are emitted.
 *
 * Types per output:  JSON        telemetry         text
 *   fmt_str          string|null string (NULL: -)  name=value (NULL: left out)
 *   fmt_int          integer     u64, int if < 0   name=123
 *   fmt_bool         true/false  0/1               name=0|1
 *   fmt_double       real        string %g         name=%g
 *   fmt_list         [strings]   "a,b"             name=a,b
 * NULL strings are left out of telemetry and text (neither has a null).
 *
 * Metric fields carry their help text too, and are what /metrics sees
 * (FMT_PROM: family <prefix><name>, the object's labels, e.g. node="n1");
 * the plain fields above are left out of it. In every other output they
 * are the plain field of the same name:
 *   fmt_gauge        integer; gauge <prefix><name>
 *   fmt_gauge_double real; gauge <prefix><name>
 *   fmt_counter      integer; counter <prefix><name>_total
 *   fmt_flag         bool; gauge 0/1
 *   fmt_state        string; gauge <prefix><name>{<name>="value"} 1
 *   fmt_hist         {count, sum_seconds, buckets: {le: cumulative}} (telemetry
 *                    and text: count and sum); histogram <prefix><name>
 * A name with an _ms or _us word is a time: /metrics shows it in seconds
 * (lag_ms -> <prefix>lag_seconds, lag_us_sum -> <prefix>lag_seconds_sum).
 */
#ifndef SKL_SW_FMT_H
#define SKL_SW_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct prom;
struct prom_label;
struct prom_hist;
struct rte_tel_data;

enum fmt_kind { FMT_JSON, FMT_TEL, FMT_TEXT, FMT_PROM };

struct fmt {
	enum fmt_kind kind;
	json_t *json;		  /* FMT_JSON: the object the fields go into */
	struct rte_tel_data *tel; /* FMT_TEL: a started dict */
	char *buf;		  /* FMT_TEXT: NUL-terminated, truncated at cap */
	size_t cap, len;
	const char *const *only; /* NULL: every field; else the names to keep, NULL-ended */
	struct prom *prom;	 /* FMT_PROM: the scrape's collector */
	const char *prefix;	 /* FMT_PROM: family name prefix ("skewless_switch_node_") */
	const struct prom_label *labels; /* FMT_PROM: the object's labels */
	unsigned nlabels;
};

/* Into a new JSON object (returned; the caller owns it). */
json_t *fmt_json(struct fmt *f);
/* Into telemetry dict d (rte_tel_data_start_dict() done here). */
void fmt_tel(struct fmt *f, struct rte_tel_data *d);
/* Into buf as "name=value name=value", only the fields named in `only` (NULL: all). */
void fmt_text(struct fmt *f, char *buf, size_t cap, const char *const *only);

/*
 * A command's JSON answer as text, by fmt_text's rules (name=value, bools
 * 0/1, lists a,b, nulls left out): the answer's plain fields on the first
 * line; each object under a "name:" line, its fields wrapped at 100 columns
 * (an object inside it as name.field=); each array of objects under a "name:"
 * line, one line per element. "ok" is left out. malloc'd, NULL when out of memory.
 */
char *fmt_text_answer(const json_t *answer);

/* Into prom: families prefix + name, every sample with labels (kept, not copied). */
void fmt_prom(struct fmt *f, struct prom *prom, const char *prefix, const struct prom_label *labels,
	      unsigned nlabels);

void fmt_str(struct fmt *f, const char *name, const char *v);
void fmt_int(struct fmt *f, const char *name, int64_t v);
void fmt_bool(struct fmt *f, const char *name, bool v);
void fmt_double(struct fmt *f, const char *name, double v);
void fmt_list(struct fmt *f, const char *name, const char *const *v, unsigned n);
void fmt_gauge(struct fmt *f, const char *name, const char *help, int64_t v);
void fmt_gauge_double(struct fmt *f, const char *name, const char *help, double v);
void fmt_counter(struct fmt *f, const char *name, const char *help, uint64_t v);
void fmt_flag(struct fmt *f, const char *name, const char *help, bool v);
void fmt_state(struct fmt *f, const char *name, const char *help, const char *v);
void fmt_hist(struct fmt *f, const char *name, const char *help, const struct prom_hist *h);

/* A key: its text when printable, else "hex:" and its bytes in hex. */
void fmt_key(struct fmt *f, const char *name, const uint8_t *key, uint16_t len);

/* A key as a JSON string, as fmt_key() writes it. */
json_t *fmt_key_json(const uint8_t *key, uint16_t len);
/* A MAC as xx:xx:xx:xx:xx:xx into buf (18 bytes). */
char *fmt_mac(const uint8_t m[6], char *buf);

#endif
