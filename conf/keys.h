/*
 * keys.h - the config key table: one row per key of the cluster config.
 *
 * Like Redis's standardConfig: each row gives a key's JSON section and name,
 * its type, default, bounds, the struct member it lands in (offsetof) and one
 * line of documentation. config.c parses, fills defaults and checks bounds
 * from the rows; the unknown-key lists come from them; docs/config.md's key
 * tables are rendered from them (cfg_keys_markdown(), `ninja -C build
 * config-doc`) and a unit test fails when the two differ.
 *
 * Objects and arrays have rows too (type CFG_OBJECT / CFG_ARRAY, no member):
 * they name the key, its bounds and its doc, and their own section's rows
 * follow; a list's row gives its entries' bounds. What a row cannot say (one
 * of vdev and pci, one weight per window slot, weights that sum to 1, unique
 * ids and names) stays code in config.c.
 */
#ifndef SKL_CONF_KEYS_H
#define SKL_CONF_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cfg;

enum cfg_type {
	CFG_UINT,   /* unsigned integer member of 1, 2, 4 or 8 bytes, min..max */
	CFG_DOUBLE, /* double, dmin..dmax */
	CFG_BOOL,   /* bool */
	CFG_STRING, /* char[size]: a non-empty string of at most size - 1 bytes */
	CFG_ENUM,   /* enum member: the index of the string in names[] */
	CFG_IPV4,   /* uint32_t, host byte order, from "a.b.c.d" */
	CFG_MAC,    /* uint8_t[6] from "xx:xx:xx:xx:xx:xx" */
	CFG_OBJECT, /* a section: the rows whose section is this row's path */
	CFG_ARRAY,  /* min..max entries of type item: objects (the section "path[]"), or a
		       list of integers (item_min..item_max) or numbers (dmin..dmax) */
};

enum {
	CFG_REQUIRED = 1 << 0,	     /* no default: absent is an error */
	CFG_MAX_IS_DEFAULT = 1 << 1, /* UINT: the derived default is also the upper bound */
};

struct cfg_key {
	const char *section; /* "" (top level), "directory", "switches[]", "digest.max" */
	const char *name;
	enum cfg_type type;
	unsigned flags;
	size_t offset, size; /* the member in the section's struct; 0, 0 for objects and arrays */
	uint64_t min, max;   /* UINT value, ARRAY entries */
	double dmin, dmax;   /* DOUBLE value, ARRAY of CFG_DOUBLE: each entry */
	enum cfg_type item;  /* ARRAY: CFG_OBJECT, CFG_UINT or CFG_DOUBLE entries */
	uint64_t item_min, item_max; /* ARRAY of CFG_UINT: each entry */
	union {
		uint64_t u;
		double d;
		bool b;
		int e;
		/* STRING, IPV4 and MAC: the default as the JSON text would give it. */
		const char *s;
	} def;
	const char *const *names; /* ENUM: the values' names, NULL-terminated */
	/*
	 * A default that depends on keys read before this one (rows are read in
	 * table order): writes it into the member of obj, the index-th entry of
	 * its array. def_doc says it for the docs.
	 */
	void (*derive)(const struct cfg *cfg, void *obj, size_t index);
	const char *def_doc;
	const char *doc;
};

extern const struct cfg_key cfg_keys[];
extern const size_t cfg_nkeys;

/* The row of section.name; NULL when there is none. */
const struct cfg_key *cfg_key_find(const char *section, const char *name);

/* "integer", "number", "boolean", "string", "enum", "IPv4", "MAC", "object", "array". */
const char *cfg_key_type_name(const struct cfg_key *k);
/* The default as the docs give it ("100", "\"inpath\"", "mtu - 148", "required"); returns buf. */
char *cfg_key_default(const struct cfg_key *k, char *buf, size_t cap);
/*
 * The accepted values ("1..65535", "\"sync\", \"async\"", "1..63 bytes", "0..16
 * entries of 0..1023"); returns buf.
 */
char *cfg_key_range(const struct cfg_key *k, char *buf, size_t cap);
/* "lo..hi" of two numbers, whole ones without an exponent ("0..1000000", "0..0.5"); returns buf. */
char *cfg_format_bounds(double lo, double hi, char *buf, size_t cap);

/*
 * The key tables of docs/config.md: for each section a heading, the doc of
 * the row that opens it and one table row per key. Returns 0 or -1 (write error).
 */
int cfg_keys_markdown(FILE *out);

/*
 * The rendered block inside text (docs/config.md's contents): its start, and
 * in *len its length up to and with the newline after CFG_KEYS_END; NULL when
 * text has no such block.
 */
const char *cfg_keys_block(const char *text, size_t *len);

/* The lines that enclose the rendered block in docs/config.md. */
#define CFG_KEYS_BEGIN "<!-- keys: generated from conf/keys.c by `ninja -C build config-doc` -->"
#define CFG_KEYS_END   "<!-- keys: end -->"

#endif
