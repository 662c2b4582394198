/*
 * config.c - load and validate the cluster config with jansson.
 *
 * Each section has a parse_* function that reads its object with the typed
 * getters below. A getter fills in the default when the key is absent, and on
 * a bad value writes "FILE: PATH: expected WHAT, got FOUND" and returns -1;
 * the first error stops the load.
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

struct ctx {
	const char *file;
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

/* Reject keys of obj that are not in allowed (NULL-terminated). */
static int check_keys(struct ctx *c, const json_t *obj, const char *path,
		      const char *const *allowed)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		int known = 0;
		char list[CFG_ERR_LEN] = "", p[CFG_MAX_PATH];

		for (const char *const *a = allowed; *a; a++) {
			if (strcmp(key, *a) == 0)
				known = 1;
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 a == allowed ? "" : ", ", *a);
		}
		if (!known) {
			join(p, sizeof(p), path, key);
			return failf(c, p, "unknown key (expected one of: %s)", list);
		}
	}
	return 0;
}

static int get_uint(struct ctx *c, const json_t *obj, const char *path, const char *key,
		    uint64_t min, uint64_t max, uint64_t def, void *out, size_t size)
{
	json_t *v = json_object_get(obj, key);
	uint64_t val = def;
	char p[CFG_MAX_PATH], what[64];

	if (v) {
		json_int_t i = json_is_integer(v) ? json_integer_value(v) : -1;

		join(p, sizeof(p), path, key);
		snprintf(what, sizeof(what), "integer %llu..%llu", (unsigned long long)min,
			 (unsigned long long)max);
		if (!json_is_integer(v) || i < 0 || (uint64_t)i < min || (uint64_t)i > max)
			return expected(c, p, what, v);
		val = (uint64_t)i;
	}
	if (size == 8)
		*(uint64_t *)out = val;
	else if (size == 4)
		*(uint32_t *)out = (uint32_t)val;
	else
		*(uint16_t *)out = (uint16_t)val;
	return 0;
}
#define GET_UINT(c, obj, path, key, min, max, def, out)                                            \
	get_uint(c, obj, path, key, min, max, def, out, sizeof(*(out)))

static int get_double(struct ctx *c, const json_t *obj, const char *path, const char *key,
		      double min, double max, double def, double *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CFG_MAX_PATH], what[64];

	*out = def;
	if (!v)
		return 0;
	join(p, sizeof(p), path, key);
	snprintf(what, sizeof(what), "number %g..%g", min, max);
	if (!json_is_number(v) || json_number_value(v) < min || json_number_value(v) > max)
		return expected(c, p, what, v);
	*out = json_number_value(v);
	return 0;
}

static int get_bool(struct ctx *c, const json_t *obj, const char *path, const char *key,
		    bool def, bool *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CFG_MAX_PATH];

	*out = def;
	if (!v)
		return 0;
	join(p, sizeof(p), path, key);
	if (!json_is_boolean(v))
		return expected(c, p, "true or false", v);
	*out = json_is_true(v);
	return 0;
}

/* def == NULL makes the key required. */
static int get_string(struct ctx *c, const json_t *obj, const char *path, const char *key,
		      const char *def, char *out, size_t cap)
{
	json_t *v = json_object_get(obj, key);
	char p[CFG_MAX_PATH], what[64];

	join(p, sizeof(p), path, key);
	if (!v) {
		if (!def)
			return failf(c, p, "missing (required)");
		snprintf(out, cap, "%s", def);
		return 0;
	}
	snprintf(what, sizeof(what), "non-empty string of at most %zu bytes", cap - 1);
	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= cap)
		return expected(c, p, what, v);
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

static int get_ipv4(struct ctx *c, const json_t *obj, const char *path, const char *key,
		    const uint32_t *def, uint32_t *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CFG_MAX_PATH];

	join(p, sizeof(p), path, key);
	if (!v) {
		if (!def)
			return failf(c, p, "missing (required)");
		*out = *def;
		return 0;
	}
	if (!json_is_string(v) || cfg_parse_ipv4(json_string_value(v), out) != 0)
		return expected(c, p, "IPv4 address \"a.b.c.d\"", v);
	return 0;
}

static int get_mac(struct ctx *c, const json_t *obj, const char *path, const char *key,
		   const uint8_t *def, uint8_t out[6])
{
	json_t *v = json_object_get(obj, key);
	char p[CFG_MAX_PATH];

	join(p, sizeof(p), path, key);
	if (!v) {
		memcpy(out, def, 6);
		return 0;
	}
	if (!json_is_string(v) || cfg_parse_mac(json_string_value(v), out) != 0)
		return expected(c, p, "MAC address \"xx:xx:xx:xx:xx:xx\"", v);
	return 0;
}

static int get_enum(struct ctx *c, const json_t *obj, const char *path, const char *key,
		    const char *const *names, int def, int *out)
{
	json_t *v = json_object_get(obj, key);
	char p[CFG_MAX_PATH], what[128] = "one of";

	*out = def;
	if (!v)
		return 0;
	for (int i = 0; names[i]; i++) {
		if (json_is_string(v) && strcmp(json_string_value(v), names[i]) == 0) {
			*out = i;
			return 0;
		}
		snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s \"%s\"",
			 i ? "," : "", names[i]);
	}
	join(p, sizeof(p), path, key);
	return expected(c, p, what, v);
}

/* obj[key] as an object (NULL when absent); an error when present but not an object. */
static int get_object(struct ctx *c, const json_t *obj, const char *path, const char *key,
		      const char *const *allowed, json_t **out)
{
	json_t *v = json_object_get(obj, key);
	char p[CFG_MAX_PATH];

	*out = NULL;
	if (!v)
		return 0;
	join(p, sizeof(p), path, key);
	if (!json_is_object(v))
		return expected(c, p, "an object", v);
	*out = v;
	return check_keys(c, v, p, allowed);
}

static int get_array(struct ctx *c, const json_t *obj, const char *path, const char *key,
		     size_t min, size_t max, json_t **out)
{
	json_t *v = json_object_get(obj, key);
	char p[CFG_MAX_PATH], what[64];

	*out = v;
	join(p, sizeof(p), path, key);
	snprintf(what, sizeof(what), "an array of %zu..%zu entries", min, max);
	if (!v) {
		if (min > 0)
			return failf(c, p, "missing (required)");
		return 0;
	}
	if (!json_is_array(v) || json_array_size(v) < min || json_array_size(v) > max)
		return expected(c, p, what, v);
	return 0;
}

static const uint8_t default_mac[6] = {0x02, 0x53, 0x4b, 0x4c, 0x00, 0x01};

static int parse_service(struct ctx *c, const json_t *root, struct cfg *cfg)
{
	static const char *const keys[] = {"vip", "port", "mac", "mtu", "max_value", NULL};
	struct cfg_service *s = &cfg->service;
	json_t *o;
	const uint32_t overhead = CFG_SERVICE_OVERHEAD;

	if (get_object(c, root, "", "service", keys, &o))
		return -1;
	if (!o)
		return failf(c, "service", "missing (required)");
	if (get_ipv4(c, o, "service", "vip", NULL, &s->vip) ||
	    GET_UINT(c, o, "service", "port", 1, 65535, CFG_DEFAULT_PORT, &s->port) ||
	    get_mac(c, o, "service", "mac", default_mac, s->mac) ||
	    GET_UINT(c, o, "service", "mtu", 576, 9000, CFG_DEFAULT_MTU, &s->mtu))
		return -1;
	return GET_UINT(c, o, "service", "max_value", 1, s->mtu - overhead, s->mtu - overhead,
			&s->max_value);
}

static int parse_u16_list(struct ctx *c, const json_t *arr, const char *path, uint16_t max_val,
			  uint16_t *out, uint16_t *n)
{
	size_t i;
	json_t *v;

	*n = 0;
	json_array_foreach(arr, i, v) {
		char p[CFG_MAX_PATH], what[32];

		snprintf(p, sizeof(p), "%s[%zu]", path, i);
		snprintf(what, sizeof(what), "integer 0..%u", max_val);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > max_val)
			return expected(c, p, what, v);
		for (uint16_t j = 0; j < *n; j++)
			if (out[j] == json_integer_value(v))
				return failf(c, p, "%u is listed twice (also [%u])", out[j], j);
		out[(*n)++] = (uint16_t)json_integer_value(v);
	}
	return 0;
}

static int parse_port(struct ctx *c, const json_t *v, const char *path, struct cfg_port *port)
{
	static const char *const keys[] = {"name", "vdev", "pci", "host", NULL};

	if (!json_is_object(v))
		return expected(c, path, "an object", v);
	if (check_keys(c, v, path, keys) || get_string(c, v, path, "name", "", port->name,
						       sizeof(port->name)) ||
	    get_string(c, v, path, "vdev", "", port->vdev, sizeof(port->vdev)) ||
	    get_string(c, v, path, "pci", "", port->pci, sizeof(port->pci)) ||
	    get_string(c, v, path, "host", "", port->host, sizeof(port->host)))
		return -1;
	if (!*port->vdev == !*port->pci)
		return failf(c, path, "expected exactly one of \"vdev\" or \"pci\"");
	if (!strncmp(port->vdev, "net_tap", 7) && !strstr(port->vdev, "iface="))
		return failf(c, path, "net_tap vdev needs iface=NAME, got \"%s\"", port->vdev);
	return 0;
}

static int parse_switch(struct ctx *c, const json_t *v, const char *path, struct cfg *cfg,
			struct cfg_switch *sw)
{
	static const char *const keys[] = {"id",	   "name",	     "role",	   "vip",
					   "mac",	   "control_socket", "lcores",	   "idle_sleep_us",
					   "idle_polls",   "ports",	     "peers",	   NULL};
	static const char *const roles[] = {"inline", "one-arm", NULL};
	char p[CFG_MAX_PATH], sock[CFG_MAX_PATH];
	json_t *arr, *pv;
	size_t i;
	int role;

	if (!json_is_object(v))
		return expected(c, path, "an object", v);
	if (check_keys(c, v, path, keys) ||
	    GET_UINT(c, v, path, "id", 1, CFG_MAX_SWITCHES * 1000, 0, &sw->id))
		return -1;
	if (!json_object_get(v, "id"))
		return failf(c, path, "id: missing (required)");
	snprintf(p, sizeof(p), "s%u", sw->id);
	snprintf(sock, sizeof(sock), "/run/skewless/switch-%u.sock", sw->id);
	if (get_string(c, v, path, "name", p, sw->name, sizeof(sw->name)) ||
	    get_enum(c, v, path, "role", roles, CFG_ROLE_INLINE, &role) ||
	    get_ipv4(c, v, path, "vip", &cfg->service.vip, &sw->vip) ||
	    get_mac(c, v, path, "mac", cfg->service.mac, sw->mac) ||
	    get_string(c, v, path, "control_socket", sock, sw->control_socket,
		       sizeof(sw->control_socket)) ||
	    GET_UINT(c, v, path, "idle_sleep_us", 0, 1000000, 50, &sw->idle_sleep_us) ||
	    GET_UINT(c, v, path, "idle_polls", 1, 1u << 30, 256, &sw->idle_polls))
		return -1;
	sw->role = (enum cfg_role)role;

	join(p, sizeof(p), path, "lcores");
	if (get_array(c, v, path, "lcores", 0, CFG_MAX_LCORES, &arr))
		return -1;
	if (arr && parse_u16_list(c, arr, p, 1023, sw->lcores, &sw->nlcores))
		return -1;

	join(p, sizeof(p), path, "peers");
	if (get_array(c, v, path, "peers", 0, CFG_MAX_SWITCHES, &arr))
		return -1;
	if (arr && parse_u16_list(c, arr, p, 65535, sw->peers, &sw->npeers))
		return -1;

	if (get_array(c, v, path, "ports", 1, CFG_MAX_PORTS, &arr))
		return -1;
	json_array_foreach(arr, i, pv) {
		snprintf(p, sizeof(p), "%s.ports[%zu]", path, i);
		if (parse_port(c, pv, p, &sw->ports[i]))
			return -1;
		if (!*sw->ports[i].name)
			snprintf(sw->ports[i].name, sizeof(sw->ports[i].name), "p%zu", i);
	}
	sw->nports = (uint16_t)json_array_size(arr);
	if (sw->role == CFG_ROLE_ONE_ARM && sw->nports != 1)
		return failf(c, path, "role \"one-arm\" expects exactly 1 port, got %u",
			     sw->nports);
	return 0;
}

static int parse_node(struct ctx *c, const json_t *v, const char *path, struct cfg_node *n)
{
	static const char *const keys[] = {"id",     "name",	 "ip", "port",
					   "weight", "data_dir", NULL};
	char def_dir[CFG_MAX_PATH];

	if (!json_is_object(v))
		return expected(c, path, "an object", v);
	if (check_keys(c, v, path, keys) ||
	    GET_UINT(c, v, path, "id", 1, CFG_MAX_NODES, 0, &n->id))
		return -1;
	if (!json_object_get(v, "id"))
		return failf(c, path, "id: missing (required)");
	if (get_string(c, v, path, "name", NULL, n->name, sizeof(n->name)) ||
	    get_ipv4(c, v, path, "ip", NULL, &n->ip) ||
	    GET_UINT(c, v, path, "port", 1, 65535, 7447, &n->port) ||
	    GET_UINT(c, v, path, "weight", 1, 100, 1, &n->weight))
		return -1;
	snprintf(def_dir, sizeof(def_dir), "/var/lib/skewless/%s", n->name);
	return get_string(c, v, path, "data_dir", def_dir, n->data_dir, sizeof(n->data_dir));
}

static int parse_agent_host(struct ctx *c, const json_t *v, const char *path,
			    struct cfg_agent_host *a)
{
	static const char *const keys[] = {"name", "ip", NULL};

	if (!json_is_object(v))
		return expected(c, path, "an object", v);
	if (check_keys(c, v, path, keys) ||
	    get_string(c, v, path, "name", NULL, a->name, sizeof(a->name)))
		return -1;
	return get_ipv4(c, v, path, "ip", NULL, &a->ip);
}

static int parse_directory(struct ctx *c, const json_t *root, struct cfg_directory *d)
{
	static const char *const keys[] = {"enabled",	    "max_keys",	    "top_k",	    "epoch_ms",
					   "retire_epochs", "max_replicas", "sample_every", NULL};
	json_t *o;

	if (get_object(c, root, "", "directory", keys, &o) ||
	    get_bool(c, o, "directory", "enabled", true, &d->enabled) ||
	    GET_UINT(c, o, "directory", "max_keys", 1, 65535, 1024, &d->max_keys) ||
	    GET_UINT(c, o, "directory", "top_k", 0, 1u << 20, 0, &d->top_k) ||
	    GET_UINT(c, o, "directory", "epoch_ms", 1, 60000, 100, &d->epoch_ms) ||
	    GET_UINT(c, o, "directory", "retire_epochs", 1, 10000, 5, &d->retire_epochs) ||
	    GET_UINT(c, o, "directory", "max_replicas", 1, CFG_MAX_REPLICAS, 8,
		     &d->max_replicas))
		return -1;
	return GET_UINT(c, o, "directory", "sample_every", 1, 1u << 16, 1, &d->sample_every);
}

static int parse_digest(struct ctx *c, const json_t *root, struct cfg_digest *d)
{
	static const char *const keys[] = {
		"interval_ms",	    "fast_interval_ms", "fast_count",	  "slow_interval_ms",
		"stable_count",	    "stable_health",	"queue_jump_pct", "p95_threshold_us",
		"down_after_intervals", "window",	"window_weights", "weights",
		"max",		    NULL};
	static const char *const wkeys[] = {"queue", "p95", "rx_rate", "cpu", "io", NULL};
	static const char *const mkeys[] = {"queue",	   "p95_us",	 "rx_rate", "cpu_pct",
					    "io_kbps", "mem_mb", NULL};
	json_t *o, *w, *m, *arr, *v;
	size_t i;

	if (get_object(c, root, "", "digest", keys, &o) ||
	    GET_UINT(c, o, "digest", "interval_ms", 1, 60000, 100, &d->interval_ms) ||
	    GET_UINT(c, o, "digest", "fast_interval_ms", 1, 60000, 20, &d->fast_interval_ms) ||
	    GET_UINT(c, o, "digest", "fast_count", 0, 1000, 3, &d->fast_count) ||
	    GET_UINT(c, o, "digest", "slow_interval_ms", 1, 60000, 200, &d->slow_interval_ms) ||
	    GET_UINT(c, o, "digest", "stable_count", 1, 1000, 5, &d->stable_count) ||
	    GET_UINT(c, o, "digest", "stable_health", 0, 100, 85, &d->stable_health) ||
	    GET_UINT(c, o, "digest", "queue_jump_pct", 1, 10000, 50, &d->queue_jump_pct) ||
	    GET_UINT(c, o, "digest", "p95_threshold_us", 1, 60000000, 10000,
		     &d->p95_threshold_us) ||
	    GET_UINT(c, o, "digest", "down_after_intervals", 1, 1000, 3,
		     &d->down_after_intervals) ||
	    GET_UINT(c, o, "digest", "window", 1, CFG_WINDOW_MAX, 5, &d->window))
		return -1;

	for (i = 0; i < d->window; i++)
		d->window_weights[i] = (double)(i + 1); /* oldest 1 .. newest N */
	if (get_array(c, o, "digest", "window_weights", 0, CFG_WINDOW_MAX, &arr))
		return -1;
	if (arr) {
		if (json_array_size(arr) != d->window)
			return expected(c, "digest.window_weights",
					"an array with one weight per window slot", arr);
		json_array_foreach(arr, i, v) {
			char p[CFG_MAX_PATH];

			snprintf(p, sizeof(p), "digest.window_weights[%zu]", i);
			if (!json_is_number(v) || !(json_number_value(v) >= 0 &&
						     json_number_value(v) <= 1e6))
				return expected(c, p, "a number 0..1000000", v);
			d->window_weights[i] = json_number_value(v);
		}
	}

	if (get_object(c, o, "digest", "weights", wkeys, &w) ||
	    get_double(c, w, "digest.weights", "queue", 0, 1, 0.35, &d->w_queue) ||
	    get_double(c, w, "digest.weights", "p95", 0, 1, 0.30, &d->w_p95) ||
	    get_double(c, w, "digest.weights", "rx_rate", 0, 1, 0.20, &d->w_rx_rate) ||
	    get_double(c, w, "digest.weights", "cpu", 0, 1, 0.10, &d->w_cpu) ||
	    get_double(c, w, "digest.weights", "io", 0, 1, 0.05, &d->w_io))
		return -1;
	if (fabs(d->w_queue + d->w_p95 + d->w_rx_rate + d->w_cpu + d->w_io - 1.0) > 1e-6)
		return failf(c, "digest.weights", "expected weights that sum to 1, got %g",
			     d->w_queue + d->w_p95 + d->w_rx_rate + d->w_cpu + d->w_io);

	return get_object(c, o, "digest", "max", mkeys, &m) ||
	       GET_UINT(c, m, "digest.max", "queue", 1, 1u << 30, 256, &d->max_queue) ||
	       GET_UINT(c, m, "digest.max", "p95_us", 1, 1u << 30, 20000, &d->max_p95_us) ||
	       GET_UINT(c, m, "digest.max", "rx_rate", 1, 1u << 30, 50000, &d->max_rx_rate) ||
	       GET_UINT(c, m, "digest.max", "cpu_pct", 1, 10000, 100, &d->max_cpu_pct) ||
	       GET_UINT(c, m, "digest.max", "io_kbps", 1, 1u << 30, 102400, &d->max_io_kbps) ||
	       GET_UINT(c, m, "digest.max", "mem_mb", 1, 1u << 30, 4096, &d->max_mem_mb);
}

static int parse_sync(struct ctx *c, const json_t *root, struct cfg_sync *s)
{
	static const char *const keys[] = {"interval_ms", "score_delta_pct", "window", NULL};
	json_t *o;

	return get_object(c, root, "", "sync", keys, &o) ||
	       GET_UINT(c, o, "sync", "interval_ms", 1, 60000, 200, &s->interval_ms) ||
	       GET_UINT(c, o, "sync", "score_delta_pct", 0, 100, 15, &s->score_delta_pct) ||
	       GET_UINT(c, o, "sync", "window", 1, CFG_WINDOW_MAX, 5, &s->window);
}

static const char *const mode_names[] = {"inpath", "hint", "direct", NULL};
static const char *const consistency_names[] = {"linearizable", "relaxed", NULL};

static int parse_agent(struct ctx *c, const json_t *root, struct cfg_agent *a)
{
	static const char *const keys[] = {"mode",	  "consistency",	 "timeout_ms",
					   "retries",	  "switch_failures",	 "recheck_ms",
					   "max_inflight", "route_cache_entries", "route_cache_ttl_ms",
					   NULL};
	json_t *o;
	int mode, cons;

	if (get_object(c, root, "", "agent", keys, &o) ||
	    get_enum(c, o, "agent", "mode", mode_names, CFG_MODE_INPATH, &mode) ||
	    get_enum(c, o, "agent", "consistency", consistency_names, CFG_LINEARIZABLE, &cons))
		return -1;
	a->mode = (enum cfg_mode)mode;
	a->consistency = (enum cfg_consistency)cons;
	return GET_UINT(c, o, "agent", "timeout_ms", 1, 60000, 50, &a->timeout_ms) ||
	       GET_UINT(c, o, "agent", "retries", 0, 10, 1, &a->retries) ||
	       GET_UINT(c, o, "agent", "switch_failures", 1, 1000, 3, &a->switch_failures) ||
	       GET_UINT(c, o, "agent", "recheck_ms", 1, 600000, 1000, &a->recheck_ms) ||
	       GET_UINT(c, o, "agent", "max_inflight", 1, 1u << 20, 16384, &a->max_inflight) ||
	       GET_UINT(c, o, "agent", "route_cache_entries", 0, 1u << 20, 1000,
			&a->route_cache_entries) ||
	       GET_UINT(c, o, "agent", "route_cache_ttl_ms", 1, 3600000, 5000,
			&a->route_cache_ttl_ms);
}

void cfg_agent_defaults(struct cfg_agent *a)
{
	char err[CFG_ERR_LEN];
	struct ctx c = {.file = "(defaults)", .err = err, .errlen = sizeof(err)};

	parse_agent(&c, NULL, a); /* no "agent" section: every member gets its default */
}

static int parse_node_params(struct ctx *c, const json_t *root, struct cfg_node_params *n)
{
	static const char *const keys[] = {"workers",	      "queue_depth",	 "durability",
					   "service_time_us", "ttl_sample_keys", "ttl_sample_ms",
					   "tombstone_gc_s",  "block_cache_mb",	 "write_buffer_mb",
					   NULL};
	static const char *const durability[] = {"sync", "async", NULL};
	json_t *o;
	int dur;

	if (get_object(c, root, "", "node", keys, &o) ||
	    get_enum(c, o, "node", "durability", durability, CFG_DURABILITY_SYNC, &dur))
		return -1;
	n->durability = (enum cfg_durability)dur;
	return GET_UINT(c, o, "node", "workers", 1, 64, 2, &n->workers) ||
	       GET_UINT(c, o, "node", "queue_depth", 1, 1u << 20, 1024, &n->queue_depth) ||
	       GET_UINT(c, o, "node", "service_time_us", 0, 10000000, 0, &n->service_time_us) ||
	       GET_UINT(c, o, "node", "ttl_sample_keys", 1, 100000, 20, &n->ttl_sample_keys) ||
	       GET_UINT(c, o, "node", "ttl_sample_ms", 1, 600000, 100, &n->ttl_sample_ms) ||
	       GET_UINT(c, o, "node", "tombstone_gc_s", 1, 1u << 30, 60, &n->tombstone_gc_s) ||
	       GET_UINT(c, o, "node", "block_cache_mb", 1, 1u << 20, 64, &n->block_cache_mb) ||
	       GET_UINT(c, o, "node", "write_buffer_mb", 0, 1u << 16, 0, &n->write_buffer_mb);
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

static int parse_root(struct ctx *c, const json_t *root, struct cfg *cfg)
{
	static const char *const keys[] = {"service",	"switches", "nodes", "agents", "ring",
					   "directory", "digest",   "sync",  "agent",  "node",
					   NULL};
	static const char *const ring_keys[] = {"version", NULL};
	json_t *arr, *v, *ring;
	size_t i;
	char p[CFG_MAX_PATH];

	if (!json_is_object(root))
		return expected(c, "(root)", "an object", root);
	if (check_keys(c, root, "", keys) || parse_service(c, root, cfg))
		return -1;

	if (get_array(c, root, "", "nodes", 1, CFG_MAX_NODES, &arr))
		return -1;
	json_array_foreach(arr, i, v) {
		snprintf(p, sizeof(p), "nodes[%zu]", i);
		if (parse_node(c, v, p, &cfg->nodes[i]))
			return -1;
	}
	cfg->nnodes = (uint16_t)json_array_size(arr);

	if (get_array(c, root, "", "agents", 0, CFG_MAX_AGENTS, &arr))
		return -1;
	json_array_foreach(arr, i, v) {
		snprintf(p, sizeof(p), "agents[%zu]", i);
		if (parse_agent_host(c, v, p, &cfg->agents[i]))
			return -1;
	}
	cfg->nagents = arr ? (uint16_t)json_array_size(arr) : 0;

	if (get_array(c, root, "", "switches", 0, CFG_MAX_SWITCHES, &arr))
		return -1;
	json_array_foreach(arr, i, v) {
		snprintf(p, sizeof(p), "switches[%zu]", i);
		if (parse_switch(c, v, p, cfg, &cfg->switches[i]))
			return -1;
	}
	cfg->nswitches = arr ? (uint16_t)json_array_size(arr) : 0;

	if (get_object(c, root, "", "ring", ring_keys, &ring) ||
	    GET_UINT(c, ring, "ring", "version", 1, UINT32_MAX, 1, &cfg->ring_version) ||
	    parse_directory(c, root, &cfg->directory) || parse_digest(c, root, &cfg->digest) ||
	    parse_sync(c, root, &cfg->sync) || parse_agent(c, root, &cfg->agent) ||
	    parse_node_params(c, root, &cfg->node))
		return -1;
	return check_unique(c, cfg);
}

int cfg_load_string(const char *json, const char *name, struct cfg *cfg, char *err,
		    size_t errlen)
{
	struct ctx c = {.file = name, .err = err, .errlen = errlen};
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

	for (int i = 0; i < cfg->nnodes; i++) {
		nodes[i].id = cfg->nodes[i].id;
		nodes[i].weight = cfg->nodes[i].weight;
		snprintf(nodes[i].name, sizeof(nodes[i].name), "%s", cfg->nodes[i].name);
	}
	return ring_build(ring, nodes, cfg->nnodes, cfg->ring_version);
}

uint32_t cfg_directory_top_k(const struct cfg *cfg)
{
	double n = cfg->nnodes;
	uint32_t k = cfg->directory.top_k;

	if (k == 0)
		k = n < 2 ? 1 : (uint32_t)ceil(n * log2(n));
	return k < cfg->directory.max_keys ? k : cfg->directory.max_keys;
}

const char *cfg_mode_name(enum cfg_mode mode)
{
	return (unsigned)mode < 3 ? mode_names[mode] : "?";
}

const char *cfg_consistency_name(enum cfg_consistency c)
{
	return (unsigned)c < 2 ? consistency_names[c] : "?";
}

static int parse_name(const char *s, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

int cfg_mode_parse(const char *s, enum cfg_mode *mode)
{
	int i = parse_name(s, mode_names);

	if (i < 0)
		return -1;
	*mode = (enum cfg_mode)i;
	return 0;
}

int cfg_consistency_parse(const char *s, enum cfg_consistency *c)
{
	int i = parse_name(s, consistency_names);

	if (i < 0)
		return -1;
	*c = (enum cfg_consistency)i;
	return 0;
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
