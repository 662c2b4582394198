/*
 * config.h - the cluster config (docs/design.md section 9), loaded from one JSON file.
 *
 * cfg_load() reads and validates the whole file into a struct cfg with every
 * default filled in. Each key, with its default and bounds, is a row of the
 * key table (keys.h), from which docs/config.md's key tables are generated; a
 * new key is a member here and a row there. Unknown keys, wrong
 * types, out-of-range values and duplicate node ids, names or addresses are
 * errors whose message names the file, the JSON path, what was expected and
 * what was found. The struct is plain data: every process loads its own copy.
 */
#ifndef SKL_CONFIG_H
#define SKL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"
#include "wire.h"

#define CFG_MAX_NODES WIRE_MAX_NODE /* node ids are 1..255; 0 means "no node" on the wire */
#define CFG_MAX_SWITCHES 8
#define CFG_MAX_AGENTS 64
#define CFG_MAX_PORTS 32
#define CFG_MAX_LCORES 16
#define CFG_MAX_NAME 64
#define CFG_MAX_LISTEN 24 /* "255.255.255.255:65535" */
#define CFG_MAX_PATH 256
#define CFG_MAX_REPLICAS 128
#define CFG_WINDOW_MAX 16
#define CFG_ERR_LEN 512

enum cfg_role { CFG_ROLE_INLINE, CFG_ROLE_ONE_ARM };
enum cfg_mode { CFG_MODE_INPATH, CFG_MODE_HINT, CFG_MODE_DIRECT };
enum cfg_consistency { CFG_LINEARIZABLE, CFG_RELAXED };
enum cfg_durability { CFG_DURABILITY_SYNC, CFG_DURABILITY_ASYNC };

#define CFG_DEFAULT_PORT 7447
#define CFG_DEFAULT_MTU	 1500
/* The largest value the service takes (service.max_value's bound and default). */
#define CFG_MAX_VALUE 262144

struct cfg_service {
	uint32_t vip; /* host byte order */
	uint16_t port;
	uint8_t mac[6];
	uint16_t mtu;
	uint32_t max_value; /* bytes; larger values get TOO_LARGE */
	uint32_t replicas;  /* R: a key's group, its home and the next R - 1 nodes */
	uint32_t repair_after_ms; /* a node down this long leaves the groups (0: never) */
	uint32_t view_lease_ms;   /* a node serves this long past a VIEW's lease (0: no leases) */
};

/* One switchd port: a DPDK vdev string or a PCI address, and the host behind it. */
struct cfg_port {
	char name[CFG_MAX_NAME];
	char vdev[CFG_MAX_PATH]; /* "net_tap0,iface=skl-n1"; empty for PCI */
	char pci[32];		 /* "0000:03:00.0"; empty for vdevs */
	char host[CFG_MAX_NAME]; /* testbed: host whose namespace gets the TAP (inline) */
};

struct cfg_switch {
	uint16_t id;
	char name[CFG_MAX_NAME];
	enum cfg_role role;
	uint32_t vip; /* this switch's service address; defaults to service.vip */
	uint8_t mac[6];
	char control_socket[CFG_MAX_PATH];
	char metrics_listen[CFG_MAX_LISTEN]; /* "A.B.C.D:PORT" of /metrics; "": none */
	uint16_t nlcores;
	uint16_t lcores[CFG_MAX_LCORES]; /* worker lcores */
	uint32_t idle_sleep_us;		 /* sleep after idle_polls empty polls */
	uint32_t idle_polls;
	uint16_t nports;
	struct cfg_port ports[CFG_MAX_PORTS];
	uint16_t npeers;
	uint16_t peers[CFG_MAX_SWITCHES]; /* switch ids */
};

struct cfg_node {
	uint16_t id;
	char name[CFG_MAX_NAME];
	uint32_t ip; /* host byte order */
	uint16_t port;
	uint32_t weight;
	char data_dir[CFG_MAX_PATH];
	char metrics_listen[CFG_MAX_LISTEN]; /* "A.B.C.D:PORT" of /metrics; "": none */
};

struct cfg_agent_host {
	char name[CFG_MAX_NAME];
	uint32_t ip;
};

struct cfg_directory {
	bool enabled;
	uint32_t max_keys;
	uint32_t top_k; /* 0: ceil(n * log2 n), capped by max_keys */
	uint32_t epoch_ms;
	uint32_t retire_epochs; /* M: epochs a key may stay cold before retirement */
	uint32_t max_replicas;
	double replica_factor; /* a key with share s wants 1 + ceil(factor * s * n) replicas */
	double push_cost; /* a write's push to a key's copies, in writes at its home */
	bool batch_writes;	  /* group commit of a directory key's PUTs at the switch */
	uint32_t spare_home_from; /* sets of this many copies read from all but the home; 0: none */
	uint32_t sample_every; /* count 1 in N requests in the sketch */
};

struct cfg_digest {
	uint32_t interval_ms;
	uint32_t fast_interval_ms;
	uint32_t fast_count;
	uint32_t slow_interval_ms;
	uint32_t stable_count;
	uint32_t stable_health;
	uint32_t queue_jump_pct;
	uint32_t p95_threshold_us;
	uint32_t down_after_intervals;
	uint32_t window;
	double window_weights[CFG_WINDOW_MAX];
	/* Per-metric weights of the health score. */
	double w_queue, w_p95, w_rx_rate, w_cpu, w_io;
	/* Maxima that normalise each metric to 0..100. */
	uint32_t max_queue, max_p95_us, max_rx_rate, max_cpu_pct, max_io_kbps, max_mem_mb;
};

struct cfg_sync {
	uint32_t interval_ms;
	uint32_t score_delta_pct;
	uint32_t window;
};

struct cfg_agent {
	enum cfg_mode mode;
	enum cfg_consistency consistency;
	uint32_t timeout_ms;  /* per attempt */
	uint32_t deadline_ms; /* per request */
	uint32_t retries;
	uint32_t switch_failures; /* consecutive switch timeouts before falling back to direct */
	uint32_t loss_pct;	  /* read loss rate through a switch that gives it up (0: never) */
	uint32_t loss_window_ms;
	uint32_t recheck_ms;	  /* how often a fallen-back agent re-checks the switch */
	uint32_t max_inflight;
	uint32_t route_cache_entries;
	uint32_t route_cache_ttl_ms;
};

struct cfg_node_params {
	uint32_t workers;
	uint32_t queue_depth;
	enum cfg_durability durability;
	uint32_t service_time_us;
	uint32_t ttl_sample_keys;
	uint32_t ttl_sample_ms;
	uint32_t tombstone_gc_s;
	uint32_t block_cache_mb;
	uint32_t write_buffer_mb; /* 0: RocksDB's default (64 MB) */
	uint32_t reassembly_mb;	  /* cap on chunked operations' memory */
	uint32_t reassembly_timeout_ms; /* an unfinished chunked op is dropped after this */
};

/* The shared key of control messages (docs/operations.md, "Threat model"). */
struct cfg_auth {
	char key_file[CFG_MAX_PATH]; /* empty: no key, control messages carry no MAC */
};

struct cfg {
	char path[CFG_MAX_PATH];
	struct cfg_service service;
	uint16_t nswitches;
	struct cfg_switch switches[CFG_MAX_SWITCHES];
	uint16_t nnodes;
	struct cfg_node nodes[CFG_MAX_NODES];
	uint16_t nagents;
	struct cfg_agent_host agents[CFG_MAX_AGENTS];
	uint64_t ring_version;
	uint32_t ramp_ms;	    /* a ring change activates its moved arcs over this time */
	uint32_t warmup_keys_per_s; /* warm-up rate of each previous home */
	struct cfg_directory directory;
	struct cfg_digest digest;
	struct cfg_sync sync;
	struct cfg_agent agent;
	struct cfg_node_params node;
	struct cfg_auth auth;
};

/*
 * Load and validate path into *cfg. Returns 0, or -1 with a one-line message
 * in err ("conf/x.json: nodes[3].port: expected integer 1..65535, got \"x\"").
 */
int cfg_load(const char *path, struct cfg *cfg, char *err, size_t errlen);

/* Same, from a JSON string; `name` stands in for the file name in messages. */
int cfg_load_string(const char *json, const char *name, struct cfg *cfg, char *err,
		    size_t errlen);

/* Lookups; NULL when absent. */
const struct cfg_node *cfg_node_by_id(const struct cfg *cfg, uint16_t id);
const struct cfg_node *cfg_node_by_name(const struct cfg *cfg, const char *name);
/* The name of node id, for output: "?" when the config has no such node. */
const char *cfg_node_name(const struct cfg *cfg, uint16_t id);
/* "n3" or "3". */
const struct cfg_node *cfg_node_lookup(const struct cfg *cfg, const char *name_or_id);
const struct cfg_switch *cfg_switch_by_id(const struct cfg *cfg, uint16_t id);
const struct cfg_switch *cfg_switch_lookup(const struct cfg *cfg, const char *name_or_id);

/* Build the ketama ring of the config's nodes. Returns 0 or a negative errno. */
int cfg_build_ring(const struct cfg *cfg, struct ring *ring);

/*
 * Read the cluster key named by auth.key_file (a relative path is taken from
 * the config file's folder), as the daemons do at start: 1 with the key in
 * *key, 0 when the config names none, -1 with a message in err (the file, the
 * problem, the fix). The file holds 64..128 hex digits (32..64 bytes; `openssl
 * rand -hex 32`) and white space around them; group and others must have no
 * access to it.
 */
struct wire_key;
int cfg_read_key(const struct cfg *cfg, struct wire_key *key, char *err, size_t errlen);

/* The "agent" section's defaults (docs/config.md), for agents built without a config file. */
void cfg_agent_defaults(struct cfg_agent *a);

/* Directory size K for n nodes: top_k if set, else ceil(n log2 n), capped by max_keys. */
uint32_t cfg_directory_top_k(const struct cfg *cfg);

/* Names for logs and the CLI. */
const char *cfg_mode_name(enum cfg_mode mode);
const char *cfg_consistency_name(enum cfg_consistency c);
int cfg_mode_parse(const char *s, enum cfg_mode *mode);
int cfg_consistency_parse(const char *s, enum cfg_consistency *c);

/* "10.0.0.1" <-> host-order IPv4; "02:00:..." -> 6 bytes. Return 0 or -1. */
int cfg_parse_ipv4(const char *s, uint32_t *ip);
int cfg_parse_mac(const char *s, uint8_t mac[6]);
/*
 * A decimal integer in min..max, as command-line flags take them: digits
 * only (no sign, space, empty string or trailing bytes) and no overflow. 0,
 * or -1 when s is not one.
 */
int cfg_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Writes the dotted quad into buf (at least 16 bytes); returns buf. */
char *cfg_format_ipv4(uint32_t ip, char *buf);
/* bytes[0..n) as lowercase hex digits into out (at least 2n + 1 bytes); returns out. */
char *cfg_format_hex(const void *bytes, size_t n, char *out);
/* Hex digit pairs (at least one) into out[0..cap): 0 with *len bytes, or -1. */
int cfg_parse_hex(const char *s, uint8_t *out, size_t cap, size_t *len);

#endif
