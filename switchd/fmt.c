/*
 * fmt.c - the three outputs of a formatter (see fmt.h). Control path and
 * telemetry threads; nothing here touches the switch's state.
 */
#include "fmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_telemetry.h>

#include "config.h"
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

	if (!wanted(f, name))
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

	if (!wanted(f, name))
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
