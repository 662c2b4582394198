/*
 * config.c - load and validate the cluster config with jansson.
 *
 * Every scalar key is a row of the key table (keys.c): read_section() reads
 * an object's keys from its section's rows, filling defaults and checking
 * types and bounds, and check_keys() rejects keys that have no row. What a
 * row cannot say is code here: the arrays of switches, ports, nodes and
 * agents, lcore and peer lists, window weights, weights that sum to 1, and
 * the cross-checks of check_unique(). A bad value writes "FILE: PATH:
 * expected WHAT, got FOUND" and returns -1; the first error stops the load.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys.h"

struct ctx {
	const char *file;
	/* What derived defaults read (service.vip); NULL when only defaults are filled in. */
	const struct cfg *cfg;
	char *err;
	size_t errlen;
};

/* A short rendering of a JSON value for error messages. */
static void describe(const json_t *v, char *buf, size_t cap)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		snprintf(buf, cap, "\"%.60s\"", json_string_value(v));
		break;
	case JSON_INTEGER:
		snprintf(buf, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		snprintf(buf, cap, "%g", json_real_value(v));
		break;
	case JSON_TRUE:
		snprintf(buf, cap, "true");
		break;
	case JSON_FALSE:
		snprintf(buf, cap, "false");
		break;
	case JSON_NULL:
		snprintf(buf, cap, "null");
		break;
	case JSON_OBJECT:
		snprintf(buf, cap, "an object");
		break;
	case JSON_ARRAY:
		snprintf(buf, cap, "an array");
		break;
	}
}

static int failf(struct ctx *c, const char *path, const char *fmt, ...)
{
	char what[CFG_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->errlen, "%s: %s: %s", c->file, path, what);
	return -1;
}

static int expected(struct ctx *c, const char *path, const char *what, const json_t *got)
{
	char found[96];

	describe(got, found, sizeof(found));
	return failf(c, path, "expected %s, got %s", what, found);
}

static void join(char *out, size_t cap, const char *path, const char *key)
{
	snprintf(out, cap, "%s%s%s", path, *path ? "." : "", key);
}

/* Reject keys of obj that have no row in section. */
static int check_keys(struct ctx *c, const json_t *obj, const char *path, const char *section)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		char list[CFG_ERR_LEN] = "", p[CFG_MAX_PATH];
		size_t len = 0;

		if (cfg_key_find(section, key))
			continue;
		for (size_t i = 0; i < cfg_nkeys && len < sizeof(list); i++)
			if (!strcmp(cfg_keys[i].section, section))
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
							len ? ", " : "", cfg_keys[i].name);
		join(p, sizeof(p), path, key);
		return failf(c, p, "unknown key (expected one of: %s)", list);
	}
	return 0;
}

/* The member k lands in, size bytes at base + offset, set to an unsigned value. */
static void store_uint(const struct cfg_key *k, void *base, uint64_t val)
{
	char *p = (char *)base + k->offset;

	switch (k->size) {
	case 1:
		*(uint8_t *)p = (uint8_t)val;
		break;
	case 2:
		*(uint16_t *)p = (uint16_t)val;
		break;
	case 4:
		*(uint32_t *)p = (uint32_t)val;
		break;
	default:
		*(uint64_t *)p = val;
		break;
	}
}

static uint64_t load_uint(const struct cfg_key *k, const void *base)
{
	const char *p = (const char *)base + k->offset;

	return k->size == 1   ? *(const uint8_t *)p
	       : k->size == 2 ? *(const uint16_t *)p
	       : k->size == 4 ? *(const uint32_t *)p
			      : *(const uint64_t *)p;
}

/* The row's default into its member: derived, or the row's own value. */
static void set_default(struct ctx *c, const struct cfg_key *k, void *base, size_t index)
{
	char *p = (char *)base + k->offset;

	if (k->derive) {
		k->derive(c->cfg, base, index);
		return;
	}
	switch (k->type) {
	case CFG_UINT:
		store_uint(k, base, k->def.u);
		break;
	case CFG_DOUBLE:
		*(double *)p = k->def.d;
		break;
	case CFG_BOOL:
		*(bool *)p = k->def.b;
		break;
	case CFG_ENUM:
		*(int *)p = k->def.e;
		break;
	case CFG_STRING:
		snprintf(p, k->size, "%s", k->def.s);
		break;
	case CFG_IPV4:
		cfg_parse_ipv4(k->def.s, (uint32_t *)p);
		break;
	case CFG_MAC:
		cfg_parse_mac(k->def.s, (uint8_t *)p);
		break;
	case CFG_OBJECT:
	case CFG_ARRAY:
		break;
	}
}

/* v, the value of key k at path, into k's member of base; -1 with the message when it is bad. */
static int read_value(struct ctx *c, const struct cfg_key *k, const json_t *v, const char *path,
		      void *base, size_t index)
{
	char *p = (char *)base + k->offset, what[CFG_MAX_PATH];

	switch (k->type) {
	case CFG_UINT: {
		json_int_t i = json_is_integer(v) ? json_integer_value(v) : -1;
		uint64_t max = k->max;

		if (k->flags & CFG_MAX_IS_DEFAULT) {
			set_default(c, k, base, index);
			max = load_uint(k, base);
		}
		snprintf(what, sizeof(what), "integer %llu..%llu", (unsigned long long)k->min,
			 (unsigned long long)max);
		if (!json_is_integer(v) || i < 0 || (uint64_t)i < k->min || (uint64_t)i > max)
			return expected(c, path, what, v);
		store_uint(k, base, (uint64_t)i);
		return 0;
	}
	case CFG_DOUBLE:
		memcpy(what, "number ", 7);
		cfg_format_bounds(k->dmin, k->dmax, what + 7, sizeof(what) - 7);
		if (!json_is_number(v) || json_number_value(v) < k->dmin ||
		    json_number_value(v) > k->dmax)
			return expected(c, path, what, v);
		*(double *)p = json_number_value(v);
		return 0;
	case CFG_BOOL:
		if (!json_is_boolean(v))
			return expected(c, path, "true or false", v);
		*(bool *)p = json_is_true(v);
		return 0;
	case CFG_STRING:
		snprintf(what, sizeof(what), "non-empty string of at most %zu bytes", k->size - 1);
		if (!json_is_string(v) || json_string_length(v) == 0 ||
		    json_string_length(v) >= k->size)
			return expected(c, path, what, v);
		memcpy(p, json_string_value(v), json_string_length(v) + 1);
		return 0;
	case CFG_ENUM:
		for (int i = 0; k->names[i]; i++)
			if (json_is_string(v) && !strcmp(json_string_value(v), k->names[i])) {
				*(int *)p = i;
				return 0;
			}
		memcpy(what, "one of ", 8);
		cfg_key_range(k, what + 7, sizeof(what) - 7);
		return expected(c, path, what, v);
	case CFG_IPV4:
		if (!json_is_string(v) || cfg_parse_ipv4(json_string_value(v), (uint32_t *)p) != 0)
			return expected(c, path, "IPv4 address \"a.b.c.d\"", v);
		return 0;
	case CFG_MAC:
		if (!json_is_string(v) || cfg_parse_mac(json_string_value(v), (uint8_t *)p) != 0)
			return expected(c, path, "MAC address \"xx:xx:xx:xx:xx:xx\"", v);
		return 0;
	case CFG_OBJECT:
	case CFG_ARRAY:
		break;
	}
	return 0;
}

/*
 * Every scalar key of section from obj (at path; NULL: the section is absent)
 * into base, the struct the section's rows point into, which is the index-th
 * entry of its array. Rows are read in table order; objects and arrays are
 * left to the caller.
 */
static int read_section(struct ctx *c, const char *section, const json_t *obj, const char *path,
			void *base, size_t index)
{
	if (obj && check_keys(c, obj, path, section))
		return -1;
	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_keys[i];
		json_t *v = obj ? json_object_get(obj, k->name) : NULL;
		char p[CFG_MAX_PATH];

		if (strcmp(k->section, section) || k->type == CFG_OBJECT || k->type == CFG_ARRAY)
			continue;
		join(p, sizeof(p), path, k->name);
		if (v && read_value(c, k, v, p, base, index))
			return -1;
		if (!v && (k->flags & CFG_REQUIRED))
			return failf(c, p, "missing (required)");
		if (!v)
			set_default(c, k, base, index);
	}
	return 0;
}

/* obj[key] of section as an object (NULL when absent and not required). */
static int get_object(struct ctx *c, const json_t *obj, const char *path, const char *section,
		      const char *key, json_t **out)
{
	const struct cfg_key *k = cfg_key_find(section, key);
	json_t *v = obj ? json_object_get(obj, key) : NULL;
	char p[CFG_MAX_PATH];

	*out = NULL;
	join(p, sizeof(p), path, key);
	if (!v)
		return (k->flags & CFG_REQUIRED) ? failf(c, p, "missing (required)") : 0;
	if (!json_is_object(v))
		return expected(c, p, "an object", v);
	*out = v;
	return 0;
}

/* obj[key] of section as an array of the row's min..max entries (NULL when absent). */
static int get_array(struct ctx *c, const json_t *obj, const char *path, const char *section,
		     const char *key, json_t **out)
{
	const struct cfg_key *k = cfg_key_find(section, key);
	json_t *v = json_object_get(obj, key);
	char p[CFG_MAX_PATH], what[64];

	*out = v;
	join(p, sizeof(p), path, key);
	if (!v)
		return (k->flags & CFG_REQUIRED) ? failf(c, p, "missing (required)") : 0;
	snprintf(what, sizeof(what), "an array of %llu..%llu entries", (unsigned long long)k->min,
		 (unsigned long long)k->max);
	if (!json_is_array(v) || json_array_size(v) < k->min || json_array_size(v) > k->max)
		return expected(c, p, what, v);
	return 0;
}

/* obj[key], an object of the section "SECTION.key", into base; absent: every key's default. */
static int get_section(struct ctx *c, const json_t *obj, const char *path, const char *section,
		       const char *key, void *base)
{
	char p[CFG_MAX_PATH], sub[CFG_MAX_PATH];
	json_t *o;

	join(p, sizeof(p), path, key);
	join(sub, sizeof(sub), section, key);
	return get_object(c, obj, path, section, key, &o) || read_section(c, sub, o, p, base, 0);
}

/* The list of integers at path into out[], each within k's item bounds and listed once. */
static int parse_u16_list(struct ctx *c, const struct cfg_key *k, const json_t *arr,
			  const char *path, uint16_t *out, uint16_t *n)
{
	size_t i;
	json_t *v;

	*n = 0;
	json_array_foreach(arr, i, v) {
		char p[CFG_MAX_PATH], what[64];
		json_int_t val = json_is_integer(v) ? json_integer_value(v) : -1;

		snprintf(p, sizeof(p), "%s[%zu]", path, i);
		snprintf(what, sizeof(what), "integer %llu..%llu", (unsigned long long)k->item_min,
			 (unsigned long long)k->item_max);
		if (val < 0 || (uint64_t)val < k->item_min || (uint64_t)val > k->item_max)
			return expected(c, p, what, v);
		for (uint16_t j = 0; j < *n; j++)
			if (out[j] == val)
				return failf(c, p, "%u is listed twice (also [%u])", out[j], j);
		out[(*n)++] = (uint16_t)val;
	}
	return 0;
}

/* The index-th entry of an array of objects, read by its section's rows. */
static int read_entry(struct ctx *c, const char *section, const json_t *v, const char *path,
		      void *base, size_t index)
{
	if (!json_is_object(v))
		return expected(c, path, "an object", v);
	return read_section(c, section, v, path, base, index);
}

/* The vdev drivers that need iface=NAME. */
static const char *const iface_drivers[] = {"net_tap", "net_af_packet"};

static int parse_port(struct ctx *c, const json_t *v, const char *path, struct cfg_port *port,
		      size_t index)
{
	if (read_entry(c, "switches[].ports[]", v, path, port, index))
		return -1;
	if (!*port->vdev == !*port->pci)
		return failf(c, path, "expected exactly one of \"vdev\" or \"pci\"");
	/* Each attaches to a kernel interface by name: without one it would make or take any. */
	for (size_t i = 0; i < sizeof(iface_drivers) / sizeof(iface_drivers[0]); i++)
		if (!strncmp(port->vdev, iface_drivers[i], strlen(iface_drivers[i])) &&
		    !strstr(port->vdev, "iface="))
			return failf(c, path, "%s vdev needs iface=NAME, got \"%s\"",
				     iface_drivers[i], port->vdev);
	return 0;
}

static int parse_switch(struct ctx *c, const json_t *v, const char *path, struct cfg_switch *sw,
			size_t index)
{
	char p[CFG_MAX_PATH];
	json_t *arr, *pv;
	size_t i;

	if (read_entry(c, "switches[]", v, path, sw, index))
		return -1;

	join(p, sizeof(p), path, "lcores");
	if (get_array(c, v, path, "switches[]", "lcores", &arr))
		return -1;
	if (arr && parse_u16_list(c, cfg_key_find("switches[]", "lcores"), arr, p, sw->lcores,
				  &sw->nlcores))
		return -1;

	join(p, sizeof(p), path, "peers");
	if (get_array(c, v, path, "switches[]", "peers", &arr))
		return -1;
	if (arr && parse_u16_list(c, cfg_key_find("switches[]", "peers"), arr, p, sw->peers,
				  &sw->npeers))
		return -1;

	if (get_array(c, v, path, "switches[]", "ports", &arr))
		return -1;
	json_array_foreach(arr, i, pv) {
		snprintf(p, sizeof(p), "%s.ports[%zu]", path, i);
		if (parse_port(c, pv, p, &sw->ports[i], i))
			return -1;
	}
	sw->nports = (uint16_t)json_array_size(arr);
	if (sw->role == CFG_ROLE_ONE_ARM && sw->nports != 1)
		return failf(c, path, "role \"one-arm\" expects exactly 1 port, got %u",
			     sw->nports);
	return 0;
}

static int parse_digest(struct ctx *c, const json_t *root, struct cfg_digest *d)
{
	const struct cfg_key *k = cfg_key_find("digest", "window_weights");
	json_t *o, *arr, *v;
	double sum;
	size_t i;

	if (get_object(c, root, "", "", "digest", &o) ||
	    read_section(c, "digest", o, "digest", d, 0))
		return -1;

	for (i = 0; i < d->window; i++)
		d->window_weights[i] = (double)(i + 1); /* oldest 1 .. newest N */
	if (o && get_array(c, o, "digest", "digest", "window_weights", &arr))
		return -1;
	if (o && arr) {
		if (json_array_size(arr) != d->window)
			return expected(c, "digest.window_weights",
					"an array with one weight per window slot", arr);
		json_array_foreach(arr, i, v) {
			char p[CFG_MAX_PATH], what[64] = "a number ";

			snprintf(p, sizeof(p), "digest.window_weights[%zu]", i);
			cfg_format_bounds(k->dmin, k->dmax, what + 9, sizeof(what) - 9);
			if (!json_is_number(v) || !(json_number_value(v) >= k->dmin &&
						     json_number_value(v) <= k->dmax))
				return expected(c, p, what, v);
			d->window_weights[i] = json_number_value(v);
		}
	}

	if (get_section(c, o, "digest", "digest", "weights", d))
		return -1;
	sum = d->w_queue + d->w_p95 + d->w_rx_rate + d->w_cpu + d->w_io;
	if (fabs(sum - 1.0) > 1e-6)
		return failf(c, "digest.weights", "expected weights that sum to 1, got %g", sum);
	return get_section(c, o, "digest", "digest", "max", d);
}

void cfg_agent_defaults(struct cfg_agent *a)
{
	char err[CFG_ERR_LEN];
	struct ctx c = {.file = "(defaults)", .err = err, .errlen = sizeof(err)};

	read_section(&c, "agent", NULL, "agent", a, 0); /* no object: every key gets its default */
}

/* Whether s is only decimal digits, as an id given for "NAME|ID" is. */
static bool all_digits(const char *s)
{
	return s[0] && s[strspn(s, "0123456789")] == '\0';
}

/*
 * Duplicate ids, names and addresses across the cluster's hosts; names that
 * are numbers (tools take "NAME|ID": "2" would read as another's id).
 */
static int check_unique(struct ctx *c, const struct cfg *cfg)
{
	char p[CFG_MAX_PATH];

	for (int i = 0; i < cfg->nnodes; i++) {
		const struct cfg_node *a = &cfg->nodes[i];

		snprintf(p, sizeof(p), "nodes[%d]", i);
		if (all_digits(a->name))
			return failf(c, p, "name \"%s\" is a number, which reads as a node id; "
					   "give it a name that is not",
				     a->name);
		for (int j = 0; j < i; j++) {
			const struct cfg_node *b = &cfg->nodes[j];

			if (a->id == b->id)
				return failf(c, p, "duplicate node id %u (also nodes[%d])", a->id, j);
			if (!strcmp(a->name, b->name))
				return failf(c, p, "duplicate node name \"%s\" (also nodes[%d])",
					     a->name, j);
			if (a->ip == b->ip && a->port == b->port)
				return failf(c, p, "duplicate node address (also nodes[%d])", j);
		}
		for (int j = 0; j < cfg->nagents; j++)
			if (!strcmp(a->name, cfg->agents[j].name))
				return failf(c, p, "name \"%s\" is also agents[%d]", a->name, j);
	}
	for (int i = 0; i < cfg->nagents; i++) {
		snprintf(p, sizeof(p), "agents[%d]", i);
		for (int j = 0; j < i; j++)
			if (!strcmp(cfg->agents[i].name, cfg->agents[j].name))
				return failf(c, p, "duplicate agent name \"%s\" (also agents[%d])",
					     cfg->agents[i].name, j);
	}
	for (int i = 0; i < cfg->nswitches; i++) {
		const struct cfg_switch *a = &cfg->switches[i];

		snprintf(p, sizeof(p), "switches[%d]", i);
		if (all_digits(a->name))
			return failf(c, p, "name \"%s\" is a number, which reads as a switch id; "
					   "give it a name that is not",
				     a->name);
		for (int j = 0; j < i; j++) {
			if (a->id == cfg->switches[j].id)
				return failf(c, p, "duplicate switch id %u (also switches[%d])",
					     a->id, j);
			if (a->vip == cfg->switches[j].vip)
				return failf(c, p, "duplicate switch vip (also switches[%d]); "
						   "give each switch its own \"vip\"", j);
			if (!strcmp(a->name, cfg->switches[j].name))
				return failf(c, p, "duplicate switch name \"%s\" (also switches[%d])",
					     a->name, j);
			if (a->control_socket[0] &&
			    !strcmp(a->control_socket, cfg->switches[j].control_socket))
				return failf(c, p, "duplicate control_socket \"%s\" (also "
						   "switches[%d]); give each switch its own",
					     a->control_socket, j);
		}
		for (int k = 0; k < a->npeers; k++)
			if (!cfg_switch_by_id(cfg, a->peers[k]) || a->peers[k] == a->id)
				return failf(c, p, "peers[%d]: expected the id of another switch, "
						   "got %u", k, a->peers[k]);
	}
	return 0;
}

/* Each entry of root[key], an array of objects, into entries[] by section's rows; *n of them. */
static int parse_hosts(struct ctx *c, const json_t *root, const char *key, const char *section,
		       void *entries, size_t entry_size, uint16_t *n)
{
	json_t *arr, *v;
	size_t i;

	if (get_array(c, root, "", "", key, &arr))
		return -1;
	json_array_foreach(arr, i, v) {
		char p[CFG_MAX_PATH];

		snprintf(p, sizeof(p), "%s[%zu]", key, i);
		if (read_entry(c, section, v, p, (char *)entries + i * entry_size, i))
			return -1;
	}
	*n = arr ? (uint16_t)json_array_size(arr) : 0;
	return 0;
}

/* A group of R distinct nodes needs R nodes on the ring. */
static int check_replicas(struct ctx *c, const struct cfg *cfg)
{
	unsigned weighted = 0;

	for (int i = 0; i < cfg->nnodes; i++)
		weighted += cfg->nodes[i].weight > 0;
	if (weighted && cfg->service.replicas > weighted)
		return failf(c, "service.replicas",
			     "%u is more than the %u nodes of weight > 0: a key's group needs that "
			     "many distinct nodes",
			     cfg->service.replicas, weighted);
	return 0;
}

static int parse_root(struct ctx *c, const json_t *root, struct cfg *cfg)
{
	json_t *arr, *v;
	size_t i;
	char p[CFG_MAX_PATH];

	if (!json_is_object(root))
		return expected(c, "(root)", "an object", root);
	if (check_keys(c, root, "", "") || get_section(c, root, "", "", "service", &cfg->service) ||
	    parse_hosts(c, root, "nodes", "nodes[]", cfg->nodes, sizeof(cfg->nodes[0]),
			&cfg->nnodes) ||
	    parse_hosts(c, root, "agents", "agents[]", cfg->agents, sizeof(cfg->agents[0]),
			&cfg->nagents))
		return -1;

	if (get_array(c, root, "", "", "switches", &arr))
		return -1;
	json_array_foreach(arr, i, v) {
		snprintf(p, sizeof(p), "switches[%zu]", i);
		if (parse_switch(c, v, p, &cfg->switches[i], i))
			return -1;
	}
	cfg->nswitches = arr ? (uint16_t)json_array_size(arr) : 0;

	if (get_section(c, root, "", "", "ring", cfg) ||
	    get_section(c, root, "", "", "directory", &cfg->directory) ||
	    parse_digest(c, root, &cfg->digest) || get_section(c, root, "", "", "sync", &cfg->sync) ||
	    get_section(c, root, "", "", "agent", &cfg->agent) ||
	    get_section(c, root, "", "", "node", &cfg->node) ||
	    get_section(c, root, "", "", "auth", &cfg->auth))
		return -1;
	if (check_unique(c, cfg))
		return -1;
	return check_replicas(c, cfg);
}

int cfg_load_string(const char *json, const char *name, struct cfg *cfg, char *err,
		    size_t errlen)
{
	struct ctx c = {.file = name, .cfg = cfg, .err = err, .errlen = errlen};
	json_error_t jerr;
	json_t *root;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->path, sizeof(cfg->path), "%s", name);
	root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(err, errlen, "%s: line %d column %d: invalid JSON: %s", name, jerr.line,
			 jerr.column, jerr.text);
		return -1;
	}
	rc = parse_root(&c, root, cfg);
	json_decref(root);
	return rc;
}

int cfg_load(const char *path, struct cfg *cfg, char *err, size_t errlen)
{
	/* Non-blocking: opening a FIFO must not wait for a writer; only regular files are read. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t size, got = 0;
	int rc = -1;

	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	size = (size_t)st.st_size;
	buf = malloc(size + 1);
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory for %zu bytes", path, size);
		goto out;
	}
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n <= 0) {
			snprintf(err, errlen, "%s: cannot read: %s", path,
				 n < 0 ? strerror(errno) : "file shrank while read");
			goto out;
		}
		got += (size_t)n;
	}
	buf[size] = '\0';
	if (memchr(buf, '\0', size)) {
		snprintf(err, errlen, "%s: contains a NUL byte (not a JSON text file)", path);
		goto out;
	}
	rc = cfg_load_string(buf, path, cfg, err, errlen);
out:
	free(buf);
	close(fd);
	return rc;
}

const struct cfg_node *cfg_node_by_id(const struct cfg *cfg, uint16_t id)
{
	for (int i = 0; i < cfg->nnodes; i++)
		if (cfg->nodes[i].id == id)
			return &cfg->nodes[i];
	return NULL;
}

const char *cfg_node_name(const struct cfg *cfg, uint16_t id)
{
	const struct cfg_node *n = cfg_node_by_id(cfg, id);

	return n ? n->name : "?";
}

const struct cfg_node *cfg_node_by_name(const struct cfg *cfg, const char *name)
{
	for (int i = 0; i < cfg->nnodes; i++)
		if (!strcmp(cfg->nodes[i].name, name))
			return &cfg->nodes[i];
	return NULL;
}

const struct cfg_node *cfg_node_lookup(const struct cfg *cfg, const char *name_or_id)
{
	const struct cfg_node *n = cfg_node_by_name(cfg, name_or_id);
	uint64_t id;

	if (n || cfg_parse_uint(name_or_id, 0, 65535, &id) != 0)
		return n;
	return cfg_node_by_id(cfg, (uint16_t)id);
}

const struct cfg_switch *cfg_switch_by_id(const struct cfg *cfg, uint16_t id)
{
	for (int i = 0; i < cfg->nswitches; i++)
		if (cfg->switches[i].id == id)
			return &cfg->switches[i];
	return NULL;
}

const struct cfg_switch *cfg_switch_lookup(const struct cfg *cfg, const char *name_or_id)
{
	uint64_t id;

	for (int i = 0; i < cfg->nswitches; i++)
		if (!strcmp(cfg->switches[i].name, name_or_id))
			return &cfg->switches[i];
	return cfg_parse_uint(name_or_id, 0, 65535, &id) != 0 ? NULL
							       : cfg_switch_by_id(cfg, (uint16_t)id);
}

int cfg_build_ring(const struct cfg *cfg, struct ring *ring)
{
	struct ring_node nodes[CFG_MAX_NODES];
	size_t n = 0;

	/* A node of weight 0 is leaving: in the cluster, in no arc. */
	for (int i = 0; i < cfg->nnodes; i++) {
		if (!cfg->nodes[i].weight)
			continue;
		nodes[n].id = cfg->nodes[i].id;
		nodes[n].weight = cfg->nodes[i].weight;
		snprintf(nodes[n].name, sizeof(nodes[n].name), "%s", cfg->nodes[i].name);
		n++;
	}
	return ring_build(ring, nodes, n, cfg->ring_version);
}

uint32_t cfg_directory_top_k(const struct cfg *cfg)
{
	double n = cfg->nnodes;
	uint32_t k = cfg->directory.top_k;

	if (k == 0)
		k = n < 2 ? 1 : (uint32_t)ceil(n * log2(n));
	return k < cfg->directory.max_keys ? k : cfg->directory.max_keys;
}

int cfg_parse_ipv4(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*ip = ntohl(a.s_addr);
	return 0;
}

char *cfg_format_ipv4(uint32_t ip, char *buf)
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff,
		 ip & 0xff);
	return buf;
}

int cfg_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9'	? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* The byte two hex digits at s spell, or -1 (sscanf's %2x also took signs and spaces). */
static int hex_byte(const char *s)
{
	int hi = hex_digit(s[0]), lo = hi < 0 ? -1 : hex_digit(s[1]);

	return lo < 0 ? -1 : hi << 4 | lo;
}

int cfg_parse_mac(const char *s, uint8_t mac[6])
{
	/* Exactly xx:xx:xx:xx:xx:xx. */
	if (strlen(s) != 17)
		return -1;
	for (int i = 0; i < 6; i++) {
		int b = hex_byte(s + 3 * i);

		if (b < 0 || (i < 5 && s[3 * i + 2] != ':'))
			return -1;
		mac[i] = (uint8_t)b;
	}
	return 0;
}

int cfg_parse_hex(const char *s, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = strlen(s);

	if (n == 0 || n % 2 || n / 2 > cap)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		int b = hex_byte(s + 2 * i);

		if (b < 0)
			return -1;
		out[i] = (uint8_t)b;
	}
	*len = n / 2;
	return 0;
}

char *cfg_format_hex(const void *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[((const uint8_t *)bytes)[i] >> 4];
		out[2 * i + 1] = digits[((const uint8_t *)bytes)[i] & 0xf];
	}
	out[2 * n] = '\0';
	return out;
}
