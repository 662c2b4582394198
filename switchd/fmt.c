/*
 * fmt.c - the three outputs of a formatter (see fmt.h). Control path and
 * telemetry threads; nothing here touches the switch's state.
 */
#include "fmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_telemetry.h>

#include "config.h"
#include "prom.h"
#include "wire.h"

json_t *fmt_json(struct fmt *f)
{
	memset(f, 0, sizeof(*f));
	f->kind = FMT_JSON;
	f->json = json_object();
	return f->json;
}

void fmt_tel(struct fmt *f, struct rte_tel_data *d)
{
	memset(f, 0, sizeof(*f));
	f->kind = FMT_TEL;
	f->tel = d;
	rte_tel_data_start_dict(d);
}

void fmt_text(struct fmt *f, char *buf, size_t cap, const char *const *only)
{
	memset(f, 0, sizeof(*f));
	f->kind = FMT_TEXT;
	f->buf = buf;
	f->cap = cap;
	f->only = only;
	if (cap)
		buf[0] = 0;
}

void fmt_prom(struct fmt *f, struct prom *prom, const char *prefix, const struct prom_label *labels,
	      unsigned nlabels)
{
	memset(f, 0, sizeof(*f));
	f->kind = FMT_PROM;
	f->prom = prom;
	f->prefix = prefix;
	f->labels = labels;
	f->nlabels = nlabels;
}

static bool wanted(const struct fmt *f, const char *name)
{
	if (!f->only)
		return true;
	for (const char *const *o = f->only; *o; o++)
		if (!strcmp(*o, name))
			return true;
	return false;
}

/* Append "name=" (a space before every field but the first); false when full. */
static bool text_field(struct fmt *f, const char *name)
{
	int n;

	if (f->len >= f->cap)
		return false;
	n = snprintf(f->buf + f->len, f->cap - f->len, "%s%s=", f->len ? " " : "", name);
	f->len = n < 0 ? f->cap : RTE_MIN(f->len + (size_t)n, f->cap);
	return f->len < f->cap;
}

static void text_append(struct fmt *f, const char *v)
{
	int n;

	if (f->len >= f->cap)
		return;
	n = snprintf(f->buf + f->len, f->cap - f->len, "%s", v);
	f->len = n < 0 ? f->cap : RTE_MIN(f->len + (size_t)n, f->cap);
}

void fmt_str(struct fmt *f, const char *name, const char *v)
{
	if (!wanted(f, name))
		return;
	switch (f->kind) {
	case FMT_PROM: /* not a metric */
		break;
	case FMT_JSON:
		json_object_set_new(f->json, name, v ? json_string(v) : json_null());
		break;
	case FMT_TEL:
		if (v)
			rte_tel_data_add_dict_string(f->tel, name, v);
		break;
	case FMT_TEXT:
		if (v && text_field(f, name))
			text_append(f, v);
		break;
	}
}

void fmt_int(struct fmt *f, const char *name, int64_t v)
{
	char num[24];

	if (!wanted(f, name))
		return;
	switch (f->kind) {
	case FMT_PROM: /* not a metric */
		break;
	case FMT_JSON:
		json_object_set_new(f->json, name, json_integer((json_int_t)v));
		break;
	case FMT_TEL:
		if (v >= 0)
			rte_tel_data_add_dict_u64(f->tel, name, (uint64_t)v);
		else
			rte_tel_data_add_dict_int(f->tel, name, (int)v);
		break;
	case FMT_TEXT:
		snprintf(num, sizeof(num), "%" PRId64, v);
		if (text_field(f, name))
			text_append(f, num);
		break;
	}
}

void fmt_bool(struct fmt *f, const char *name, bool v)
{
	if (f->kind == FMT_JSON) {
		if (wanted(f, name))
			json_object_set_new(f->json, name, json_boolean(v));
		return;
	}
	fmt_int(f, name, v);
}

void fmt_double(struct fmt *f, const char *name, double v)
{
	char num[32];

	if (f->kind == FMT_JSON) {
		if (wanted(f, name))
			json_object_set_new(f->json, name, json_real(v));
		return;
	}
	snprintf(num, sizeof(num), "%g", v);
	fmt_str(f, name, num);
}

void fmt_list(struct fmt *f, const char *name, const char *const *v, unsigned n)
{
	char joined[RTE_TEL_MAX_STRING_LEN];
	size_t off = 0;

	if (!wanted(f, name) || f->kind == FMT_PROM)
		return;
	if (f->kind == FMT_JSON) {
		json_t *arr = json_array();

		for (unsigned i = 0; i < n; i++)
			json_array_append_new(arr, json_string(v[i]));
		json_object_set_new(f->json, name, arr);
		return;
	}
	joined[0] = 0;
	for (unsigned i = 0; i < n && off < sizeof(joined); i++)
		off += (size_t)snprintf(joined + off, sizeof(joined) - off, "%s%s", i ? "," : "",
					v[i]);
	fmt_str(f, name, joined);
}

/* ---- Metric fields. ----------------------------------------------------------------------- */

/*
 * The family name for field `name` (prefix + name + suffix) into buf, and
 * the factor that turns its values into the family's unit: a name with an
 * _ms or _us word in it (lag_ms, replication_lag_us_sum) is a time, shown
 * in seconds (lag_seconds, replication_lag_seconds_sum).
 */
static double family(const struct fmt *f, const char *name, const char *suffix, char *buf,
		     size_t cap)
{
	for (const char *u = strchr(name, '_'); u; u = strchr(u + 1, '_'))
		if ((u[1] == 'm' || u[1] == 'u') && u[2] == 's' && (u[3] == '_' || !u[3])) {
			snprintf(buf, cap, "%s%.*s_seconds%s%s", f->prefix, (int)(u - name), name,
				 u + 3, suffix);
			return u[1] == 'm' ? 1e-3 : 1e-6;
		}
	snprintf(buf, cap, "%s%s%s", f->prefix, name, suffix);
	return 1;
}

static void prom_sample(struct fmt *f, const char *name, const char *suffix, const char *help,
			enum prom_type type, double v)
{
	char fam[128];
	double scale = family(f, name, suffix, fam, sizeof(fam));

	prom_add(f->prom, fam, help, type, f->labels, f->nlabels, v * scale);
}

void fmt_gauge(struct fmt *f, const char *name, const char *help, int64_t v)
{
	if (f->kind != FMT_PROM)
		fmt_int(f, name, v);
	else if (wanted(f, name))
		prom_sample(f, name, "", help, PROM_GAUGE, (double)v);
}

void fmt_gauge_double(struct fmt *f, const char *name, const char *help, double v)
{
	if (f->kind != FMT_PROM)
		fmt_double(f, name, v);
	else if (wanted(f, name))
		prom_sample(f, name, "", help, PROM_GAUGE, v);
}

void fmt_counter(struct fmt *f, const char *name, const char *help, uint64_t v)
{
	if (f->kind != FMT_PROM)
		fmt_int(f, name, (int64_t)v);
	else if (wanted(f, name))
		prom_sample(f, name, "_total", help, PROM_COUNTER, (double)v);
}

void fmt_flag(struct fmt *f, const char *name, const char *help, bool v)
{
	if (f->kind != FMT_PROM)
		fmt_bool(f, name, v);
	else if (wanted(f, name))
		prom_sample(f, name, "", help, PROM_GAUGE, v);
}

void fmt_state(struct fmt *f, const char *name, const char *help, const char *v)
{
	struct prom_label labels[8];
	char fam[128];

	if (f->kind != FMT_PROM) {
		fmt_str(f, name, v);
		return;
	}
	if (!wanted(f, name) || f->nlabels >= RTE_DIM(labels))
		return;
	memcpy(labels, f->labels, f->nlabels * sizeof(*labels));
	labels[f->nlabels] = (struct prom_label){name, v ? v : ""};
	family(f, name, "", fam, sizeof(fam));
	prom_add(f->prom, fam, help, PROM_GAUGE, labels, f->nlabels + 1, 1);
}

void fmt_hist(struct fmt *f, const char *name, const char *help, const struct prom_hist *h)
{
	uint64_t count = 0, cum = 0;
	double sum = (double)__atomic_load_n(&h->sum_ns, __ATOMIC_RELAXED) / 1e9;
	char fam[128], sub[160];

	if (!wanted(f, name))
		return;
	for (unsigned i = 0; i <= h->nbounds; i++)
		count += __atomic_load_n(&h->counts[i], __ATOMIC_RELAXED);
	switch (f->kind) {
	case FMT_PROM:
		family(f, name, "", fam, sizeof(fam));
		prom_add_hist(f->prom, fam, help, f->labels, f->nlabels, h);
		break;
	case FMT_JSON: {
		json_t *buckets = json_object();

		for (unsigned i = 0; i <= h->nbounds; i++) {
			char le[32];

			cum += __atomic_load_n(&h->counts[i], __ATOMIC_RELAXED);
			if (i < h->nbounds)
				snprintf(le, sizeof(le), "%g", h->bounds[i]);
			else
				strcpy(le, "+Inf");
			json_object_set_new(buckets, le, json_integer((json_int_t)cum));
		}
		json_object_set_new(f->json, name,
				    json_pack("{s:I, s:f, s:o}", "count", (json_int_t)count,
					      "sum_seconds", sum, "buckets", buckets));
		break;
	}
	case FMT_TEL:
	case FMT_TEXT:
		snprintf(sub, sizeof(sub), "%s_count", name);
		fmt_int(f, sub, (int64_t)count);
		snprintf(sub, sizeof(sub), "%s_sum_seconds", name);
		fmt_double(f, sub, sum);
		break;
	}
}

json_t *fmt_key_json(const uint8_t *key, uint16_t len)
{
	char buf[2 * WIRE_MAX_KEY + 8];
	bool printable = len > 0;

	for (unsigned i = 0; i < len; i++)
		if (key[i] < 0x20 || key[i] > 0x7e)
			printable = false;
	if (printable)
		return json_stringn((const char *)key, len);
	strcpy(buf, "hex:");
	cfg_format_hex(key, len, buf + 4);
	return json_string(buf);
}

void fmt_key(struct fmt *f, const char *name, const uint8_t *key, uint16_t len)
{
	json_t *k;

	if (!wanted(f, name) || f->kind == FMT_PROM)
		return;
	k = fmt_key_json(key, len);
	if (f->kind == FMT_JSON)
		json_object_set_new(f->json, name, k);
	else {
		fmt_str(f, name, json_string_value(k));
		json_decref(k);
	}
}

char *fmt_mac(const uint8_t m[6], char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
	return buf;
}

/* ---- A command's answer as text (fmt_text_answer). ------------------------------------------ */

#define TEXT_COLS 100

/* The line being written: fields go on it one by one, broken before TEXT_COLS when wrap. */
struct text_line {
	FILE *out;
	const char *indent;
	size_t col;
	bool wrap;
};

static void text_end_line(struct text_line *l)
{
	if (l->col)
		fputc('\n', l->out);
	l->col = 0;
}

static bool is_section(const json_t *v)
{
	return json_is_object(v) ||
	       (json_is_array(v) && (!json_array_size(v) || json_is_object(json_array_get(v, 0))));
}

/* Field `name` of value v onto the line, by the plain formatters in FMT_TEXT; an
 * object's fields as name.field, the elements of an array of non-strings as name.i. */
static void text_put(struct text_line *l, const char *name, json_t *v)
{
	char sub[128], buf[1024];
	struct fmt f;
	const char *k;
	size_t i, len;
	json_t *e;

	if (json_is_object(v)) {
		json_object_foreach (v, k, e) {
			snprintf(sub, sizeof(sub), "%s.%s", name, k);
			text_put(l, sub, e);
		}
		return;
	}
	fmt_text(&f, buf, sizeof(buf), NULL);
	if (json_is_array(v)) {
		const char *strs[64];
		unsigned n = 0;

		json_array_foreach (v, i, e) {
			if (!json_is_string(e) || n == RTE_DIM(strs))
				break;
			strs[n++] = json_string_value(e);
		}
		if (n < json_array_size(v)) {
			json_array_foreach (v, i, e) {
				snprintf(sub, sizeof(sub), "%s.%zu", name, i);
				text_put(l, sub, e);
			}
			return;
		}
		fmt_list(&f, name, strs, n);
	} else if (json_is_string(v))
		fmt_str(&f, name, json_string_value(v));
	else if (json_is_integer(v))
		fmt_int(&f, name, json_integer_value(v));
	else if (json_is_real(v))
		fmt_double(&f, name, json_real_value(v));
	else if (json_is_boolean(v))
		fmt_bool(&f, name, json_is_true(v));
	/* null: left out, as fmt_str(NULL) leaves it */
	len = strlen(buf);
	if (!len)
		return;
	if (l->col && l->wrap && l->col + 1 + len > TEXT_COLS)
		text_end_line(l);
	l->col += (size_t)fprintf(l->out, "%s%s", l->col ? " " : l->indent, buf);
}

char *fmt_text_answer(const json_t *answer)
{
	struct text_line l = {.indent = "", .wrap = true};
	char *text = NULL;
	size_t size, i;
	const char *k;
	json_t *v, *e;

	l.out = open_memstream(&text, &size);
	if (!l.out)
		return NULL;
	json_object_foreach ((json_t *)answer, k, v)
		if (strcmp(k, "ok") && !is_section(v))
			text_put(&l, k, v);
	text_end_line(&l);
	l.indent = "  ";
	json_object_foreach ((json_t *)answer, k, v) {
		if (!is_section(v))
			continue;
		fprintf(l.out, "%s:\n", k);
		if (json_is_object(v)) {
			const char *field;

			l.wrap = true;
			json_object_foreach (v, field, e)
				text_put(&l, field, e);
			text_end_line(&l);
			continue;
		}
		if (!json_array_size(v))
			fprintf(l.out, "  (none)\n");
		l.wrap = false;
		json_array_foreach (v, i, e) {
			const char *field;
			json_t *fv;

			json_object_foreach (e, field, fv)
				text_put(&l, field, fv);
			text_end_line(&l);
		}
	}
	if (fclose(l.out) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
