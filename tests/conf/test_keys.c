/*
 * test_keys.c - the config key table (conf/keys.c): its rows are consistent,
 * the loader applies each row's default and bounds, and docs/config.md's key
 * tables are exactly what the table renders.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "keys.h"

#define SERVICE "\"service\":{\"vip\":\"10.0.0.100\""
#define NODES2                                                                                     \
	"\"nodes\":[{\"id\":1,\"name\":\"n1\",\"ip\":\"10.0.0.1\"},"                               \
	"{\"id\":2,\"name\":\"n2\",\"ip\":\"10.0.0.2\"}]"
/* Service keys are set with enough nodes for the largest replica group. */
#define NODES8                                                                                     \
	"\"nodes\":[{\"id\":1,\"name\":\"n1\",\"ip\":\"10.0.0.1\"},"                               \
	"{\"id\":2,\"name\":\"n2\",\"ip\":\"10.0.0.2\"},{\"id\":3,\"name\":\"n3\",\"ip\":\"10.0.0.3\"}," \
	"{\"id\":4,\"name\":\"n4\",\"ip\":\"10.0.0.4\"},{\"id\":5,\"name\":\"n5\",\"ip\":\"10.0.0.5\"}," \
	"{\"id\":6,\"name\":\"n6\",\"ip\":\"10.0.0.6\"},{\"id\":7,\"name\":\"n7\",\"ip\":\"10.0.0.7\"}," \
	"{\"id\":8,\"name\":\"n8\",\"ip\":\"10.0.0.8\"}]"

static const char *root(void)
{
	const char *r = getenv("SKL_SOURCE_ROOT");

	return r ? r : ".";
}

/* The row a section "a.b" or "a[]" or "a[].b[]" opens under: a.b's is "b" in "a". */
static const struct cfg_key *parent_row(const char *section)
{
	char parent[128], key[128];
	const char *dot = strrchr(section, '.');
	size_t plen = dot ? (size_t)(dot - section) : 0;

	snprintf(parent, sizeof(parent), "%.*s", (int)plen, section);
	snprintf(key, sizeof(key), "%s", dot ? dot + 1 : section);
	if (strlen(key) > 2 && !strcmp(key + strlen(key) - 2, "[]"))
		key[strlen(key) - 2] = '\0';
	return cfg_key_find(parent, key);
}

/* Every row: a known section opened by an object or array row, one name, a doc, a default
 * that its own bounds accept, bounds that fit its member. */
START_TEST(rows_are_consistent)
{
	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_keys[i];
		const char *what = k->name;

		ck_assert_msg(k->doc && *k->doc, "%s.%s: no doc", k->section, what);
		ck_assert_msg(cfg_key_find(k->section, k->name) == k, "%s.%s: listed twice",
			      k->section, what);
		if (i > 0 && strcmp(cfg_keys[i - 1].section, k->section))
			for (size_t j = 0; j + 1 < i; j++)
				ck_assert_msg(strcmp(cfg_keys[j].section, k->section),
					      "section \"%s\" is split", k->section);
		if (*k->section) {
			const struct cfg_key *p = parent_row(k->section);

			ck_assert_msg(p && (p->type == CFG_OBJECT || p->type == CFG_ARRAY) && p < k,
				      "section \"%s\" has no object or array row above it",
				      k->section);
		}
		ck_assert_msg(!(k->flags & CFG_REQUIRED) || !k->derive,
			      "%s.%s: required and derived", k->section, what);
		/* def_doc says a derived default, or what code fills in for a list. */
		ck_assert_msg(k->derive ? k->def_doc != NULL : !k->def_doc || k->type == CFG_ARRAY,
			      "%s.%s: def_doc without derive", k->section, what);
		switch (k->type) {
		case CFG_UINT:
			ck_assert_msg(k->size == 1 || k->size == 2 || k->size == 4 || k->size == 8,
				      "%s.%s: size %zu", k->section, what, k->size);
			if (k->flags & CFG_MAX_IS_DEFAULT) {
				ck_assert_msg(k->derive, "%s.%s: bound without a derived default",
					      k->section, what);
				break;
			}
			ck_assert_msg(k->min <= k->max, "%s.%s: min > max", k->section, what);
			ck_assert_msg(k->size == 8 || k->max < (uint64_t)1 << (8 * k->size),
				      "%s.%s: max %llu does not fit %zu bytes", k->section, what,
				      (unsigned long long)k->max, k->size);
			if (!k->derive && !(k->flags & CFG_REQUIRED))
				ck_assert_msg(k->def.u >= k->min && k->def.u <= k->max,
					      "%s.%s: default out of range", k->section, what);
			break;
		case CFG_DOUBLE:
			ck_assert_uint_eq(k->size, sizeof(double));
			ck_assert_msg(k->def.d >= k->dmin && k->def.d <= k->dmax,
				      "%s.%s: default out of range", k->section, what);
			break;
		case CFG_BOOL:
			ck_assert_uint_eq(k->size, sizeof(bool));
			break;
		case CFG_ENUM: {
			int n = 0;

			ck_assert_uint_eq(k->size, sizeof(int));
			while (k->names[n])
				n++;
			ck_assert_msg(k->def.e >= 0 && k->def.e < n, "%s.%s: default not a name",
				      k->section, what);
			break;
		}
		case CFG_STRING:
			ck_assert_msg(k->derive || (k->flags & CFG_REQUIRED) ||
					  (k->def.s && strlen(k->def.s) < k->size),
				      "%s.%s: default does not fit", k->section, what);
			break;
		case CFG_IPV4: {
			uint32_t ip;

			ck_assert_uint_eq(k->size, sizeof(uint32_t));
			ck_assert_msg(k->derive || (k->flags & CFG_REQUIRED) ||
					  cfg_parse_ipv4(k->def.s, &ip) == 0,
				      "%s.%s: bad default", k->section, what);
			break;
		}
		case CFG_MAC: {
			uint8_t mac[6];

			ck_assert_uint_eq(k->size, 6);
			ck_assert_msg(k->derive || cfg_parse_mac(k->def.s, mac) == 0,
				      "%s.%s: bad default", k->section, what);
			break;
		}
		case CFG_OBJECT:
			break;
		case CFG_ARRAY: {
			char sub[128];

			ck_assert_msg(k->min <= k->max, "%s.%s: min > max", k->section, what);
			snprintf(sub, sizeof(sub), "%s%s%s[]", k->section, *k->section ? "." : "",
				 k->name);
			/* Objects have their section below; lists of integers are uint16_t. */
			if (k->item == CFG_OBJECT) {
				size_t j = 0;

				while (j < cfg_nkeys && strcmp(cfg_keys[j].section, sub))
					j++;
				ck_assert_msg(j < cfg_nkeys, "%s: no section \"%s\"", what, sub);
			} else if (k->item == CFG_UINT)
				ck_assert_msg(k->item_min <= k->item_max &&
						  k->item_max <= UINT16_MAX,
					      "%s.%s: item bounds", k->section, what);
			else
				ck_assert_msg(k->item == CFG_DOUBLE && k->dmin <= k->dmax,
					      "%s.%s: item bounds", k->section, what);
			break;
		}
		}
	}
}
END_TEST

/* The JSON of a minimal config with "key": value set in an object section ("digest.max"). */
static void config_with(char *out, size_t cap, const char *section, const char *key,
			const char *value)
{
	char inner[256], outer[512];
	const char *dot = strchr(section, '.');

	if (!strcmp(section, "service")) {
		snprintf(out, cap, "{" SERVICE ",\"%s\":%s}," NODES8 "}", key, value);
		return;
	}
	snprintf(inner, sizeof(inner), "{\"%s\":%s}", key, value);
	if (dot)
		snprintf(outer, sizeof(outer), "{\"%s\":%s}", dot + 1, inner);
	else
		snprintf(outer, sizeof(outer), "%s", inner);
	snprintf(out, cap, "{" SERVICE "}," NODES2 ",\"%.*s\":%s}",
		 (int)(dot ? dot - section : (long)strlen(section)), section, outer);
}

/* Each integer key of an object section: its bounds are accepted, one past them is an
 * error that gives them, and an absent key gets the row's default. */
START_TEST(loader_applies_rows)
{
	struct cfg *cfg = calloc(1, sizeof(*cfg));
	char json[1024], err[CFG_ERR_LEN], want[CFG_ERR_LEN], v[32];
	int checked = 0;

	ck_assert_int_eq(cfg_load_string("{" SERVICE "}," NODES2 "}", "x", cfg, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(cfg->directory.sample_every,
			  cfg_key_find("directory", "sample_every")->def.u);
	ck_assert_uint_eq(cfg->node.block_cache_mb, cfg_key_find("node", "block_cache_mb")->def.u);
	ck_assert(cfg->digest.w_io == cfg_key_find("digest.weights", "io")->def.d);
	ck_assert_uint_eq(cfg->digest.max_mem_mb, cfg_key_find("digest.max", "mem_mb")->def.u);
	ck_assert_uint_eq(cfg->ring_version, 1);
	ck_assert_uint_eq(cfg->service.mac[0], 0x02);

	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_keys[i];

		if (k->type != CFG_UINT || k->derive || strchr(k->section, '[') || !*k->section)
			continue;
		/* Weights must sum to 1, window_weights follow window: both stay valid. */
		snprintf(v, sizeof(v), "%llu", (unsigned long long)k->max);
		config_with(json, sizeof(json), k->section, k->name, v);
		ck_assert_msg(cfg_load_string(json, "x", cfg, err, sizeof(err)) == 0, "%s: %s",
			      json, err);
		if (k->max < UINT32_MAX) {
			snprintf(v, sizeof(v), "%llu", (unsigned long long)k->max + 1);
			config_with(json, sizeof(json), k->section, k->name, v);
			ck_assert_int_eq(cfg_load_string(json, "x", cfg, err, sizeof(err)), -1);
			snprintf(want, sizeof(want),
				 "x: %s.%s: expected integer %llu..%llu, got %s", k->section,
				 k->name, (unsigned long long)k->min, (unsigned long long)k->max,
				 v);
			ck_assert_str_eq(err, want);
		}
		checked++;
	}
	ck_assert_int_gt(checked, 40);
	/* max_value is 1..262144 whatever the MTU: larger values travel in chunks. */
	ck_assert_int_eq(cfg_load_string("{" SERVICE ",\"mtu\":576,\"max_value\":262144}," NODES2
					 "}",
					 "x", cfg, err, sizeof(err)),
			 0);
	ck_assert_int_eq(cfg_load_string("{" SERVICE ",\"max_value\":262145}," NODES2 "}", "x", cfg,
					 err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "x: service.max_value: expected integer 1..262144, got 262145");
	free(cfg);
}
END_TEST

/* docs/config.md's generated block against what the table renders, line by line. */
START_TEST(docs_match_table)
{
	char path[512], *doc = NULL, *want = NULL;
	const char *begin, *end;
	size_t doc_len = 0, want_len = 0, len, line = 1;
	FILE *f, *mem;

	snprintf(path, sizeof(path), "%s/docs/config.md", root());
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	mem = open_memstream(&doc, &doc_len);
	for (int ch; (ch = fgetc(f)) != EOF;)
		fputc(ch, mem);
	fclose(f);
	fclose(mem);
	mem = open_memstream(&want, &want_len);
	ck_assert_int_eq(cfg_keys_markdown(mem), 0);
	fclose(mem);

	begin = cfg_keys_block(doc, &len);
	ck_assert_msg(begin != NULL, "%s: no generated key block; run `ninja -C build config-doc`",
		      path);
	end = begin + len;
	for (size_t i = 0; i < want_len; i++) {
		if (begin + i >= end || begin[i] != want[i]) {
			const char *bol = want + i, *got = begin + i;

			while (bol > want && bol[-1] != '\n')
				bol--, got--;
			ck_abort_msg("%s: the key tables differ from conf/keys.c at block line "
				     "%zu:\n  doc:   %.*s\n  table: %.*s\nrun `ninja -C build "
				     "config-doc` (or fix the row)",
				     path, line, (int)strcspn(got, "\n"), got,
				     (int)strcspn(bol, "\n"), bol);
		}
		if (want[i] == '\n')
			line++;
	}
	ck_assert_msg(begin + want_len == end, "%s: the key block has extra lines", path);
	free(doc);
	free(want);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("keys");
	TCase *tc = tcase_create("table");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, rows_are_consistent);
	tcase_add_test(tc, loader_applies_rows);
	tcase_add_test(tc, docs_match_table);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
