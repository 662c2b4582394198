/*
 * keys.c - the config key table (keys.h) and its rendering for docs/config.md.
 *
 * One row per key, grouped by section; a section's rows are contiguous and
 * in the order config.c reads them, so a derived default may use the keys
 * above it. Adding a key is one row here (and its member in config.h):
 * parsing, the default, the bound check, the unknown-key list and the docs
 * follow from it.
 */
#include "keys.h"

#include <inttypes.h>
#include <string.h>

#include "config.h"
#include "group.h"

static const char *const role_names[] = {"inline", "one-arm", NULL};
static const char *const mode_names[] = {"inpath", "hint", "direct", NULL};
static const char *const consistency_names[] = {"linearizable", "relaxed", NULL};
static const char *const durability_names[] = {"sync", "async", NULL};

/* Derived defaults: each reads keys of its section (or service) above it. */

static void switch_name(const struct cfg *cfg, void *obj, size_t index)
{
	struct cfg_switch *sw = obj;

	(void)cfg, (void)index;
	snprintf(sw->name, sizeof(sw->name), "s%u", sw->id);
}

static void switch_vip(const struct cfg *cfg, void *obj, size_t index)
{
	(void)index;
	((struct cfg_switch *)obj)->vip = cfg->service.vip;
}

static void switch_mac(const struct cfg *cfg, void *obj, size_t index)
{
	(void)index;
	memcpy(((struct cfg_switch *)obj)->mac, cfg->service.mac, 6);
}

static void switch_control_socket(const struct cfg *cfg, void *obj, size_t index)
{
	struct cfg_switch *sw = obj;

	(void)cfg, (void)index;
	snprintf(sw->control_socket, sizeof(sw->control_socket), "/run/skewless/switch-%u.sock",
		 sw->id);
}

static void port_name(const struct cfg *cfg, void *obj, size_t index)
{
	struct cfg_port *port = obj;

	(void)cfg;
	snprintf(port->name, sizeof(port->name), "p%zu", index);
}

static void node_data_dir(const struct cfg *cfg, void *obj, size_t index)
{
	struct cfg_node *n = obj;

	(void)cfg, (void)index;
	snprintf(n->data_dir, sizeof(n->data_dir), "/var/lib/skewless/%s", n->name);
}

/*
 * Row builders. A section argument is two: its JSON path and the struct its
 * keys land in (SERVICE below); the wrappers without "_" let it expand first.
 * Trailing arguments are more designators (.flags, .derive, .def_doc).
 */
#define MEMBER(T, m) .offset = offsetof(T, m), .size = sizeof(((T *)0)->m)
#define KEY_UINT_(S, T, key, m, lo, hi, dflt, text, ...)                                           \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_UINT, MEMBER(T, m), .min = lo, .max = hi,   \
		.def.u = dflt, .doc = text, __VA_ARGS__                                            \
	}
#define KEY_DOUBLE_(S, T, key, m, lo, hi, dflt, text)                                              \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_DOUBLE, MEMBER(T, m), .dmin = lo,           \
		.dmax = hi, .def.d = dflt, .doc = text                                             \
	}
#define KEY_BOOL_(S, T, key, m, dflt, text)                                                        \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_BOOL, MEMBER(T, m), .def.b = dflt,          \
		.doc = text                                                                        \
	}
#define KEY_STRING_(S, T, key, m, dflt, text, ...)                                                 \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_STRING, MEMBER(T, m), .def.s = dflt,        \
		.doc = text, __VA_ARGS__                                                           \
	}
#define KEY_ENUM_(S, T, key, m, values, dflt, text)                                                \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_ENUM, MEMBER(T, m), .names = values,        \
		.def.e = dflt, .doc = text                                                         \
	}
#define KEY_IPV4_(S, T, key, m, text, ...)                                                         \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_IPV4, MEMBER(T, m), .doc = text,            \
		__VA_ARGS__                                                                        \
	}
#define KEY_MAC_(S, T, key, m, dflt, text, ...)                                                    \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_MAC, MEMBER(T, m), .def.s = dflt,           \
		.doc = text, __VA_ARGS__                                                           \
	}
#define KEY_UINT(...)	KEY_UINT_(__VA_ARGS__)
#define KEY_DOUBLE(...) KEY_DOUBLE_(__VA_ARGS__)
#define KEY_BOOL(...)	KEY_BOOL_(__VA_ARGS__)
#define KEY_STRING(...) KEY_STRING_(__VA_ARGS__)
#define KEY_ENUM(...)	KEY_ENUM_(__VA_ARGS__)
#define KEY_IPV4(...)	KEY_IPV4_(__VA_ARGS__)
#define KEY_MAC(...)	KEY_MAC_(__VA_ARGS__)
#define KEY_OBJECT(S, key, text, ...)                                                              \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_OBJECT, .doc = text, __VA_ARGS__            \
	}
#define KEY_ARRAY(S, key, lo, hi, text, ...)                                                       \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_ARRAY, .min = lo, .max = hi,                \
		.item = CFG_OBJECT, .doc = text, __VA_ARGS__                                       \
	}
#define KEY_LIST_UINT(S, key, lo, hi, item_lo, item_hi, text)                                      \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_ARRAY, .min = lo, .max = hi,                \
		.item = CFG_UINT, .item_min = item_lo, .item_max = item_hi, .doc = text            \
	}
#define KEY_LIST_DOUBLE(S, key, lo, hi, item_lo, item_hi, text, ...)                               \
	{                                                                                          \
		.section = S, .name = key, .type = CFG_ARRAY, .min = lo, .max = hi,                \
		.item = CFG_DOUBLE, .dmin = item_lo, .dmax = item_hi, .doc = text, __VA_ARGS__     \
	}

#define SERVICE	   "service", struct cfg_service
#define SWITCH	   "switches[]", struct cfg_switch
#define PORT	   "switches[].ports[]", struct cfg_port
#define NODE	   "nodes[]", struct cfg_node
#define AGENT_HOST "agents[]", struct cfg_agent_host
#define RING	   "ring", struct cfg
#define DIRECTORY  "directory", struct cfg_directory
#define DIGEST	   "digest", struct cfg_digest
#define WEIGHTS	   "digest.weights", struct cfg_digest
#define MAXIMA	   "digest.max", struct cfg_digest
#define SYNC	   "sync", struct cfg_sync
#define AGENT	   "agent", struct cfg_agent
#define NODE_PARAM "node", struct cfg_node_params
#define AUTH	   "auth", struct cfg_auth

const struct cfg_key cfg_keys[] = {
    KEY_OBJECT("", "service", "the service address (below)", .flags = CFG_REQUIRED),
    KEY_ARRAY("", "switches", 0, CFG_MAX_SWITCHES, "the switches (below)"),
    KEY_ARRAY("", "nodes", 1, CFG_MAX_NODES, "the storage nodes (below)", .flags = CFG_REQUIRED),
    KEY_ARRAY("", "agents", 0, CFG_MAX_AGENTS,
	      "hosts that run agents (the testbed makes a namespace for each)"),
    KEY_OBJECT("", "ring", "the ketama ring"),
    KEY_OBJECT("", "directory", "the coherence directory's hot keys"),
    KEY_OBJECT("", "digest", "the load digests nodes send and the health score"),
    KEY_OBJECT("", "sync", "what peer switches tell each other"),
    KEY_OBJECT("", "agent", "parameters of every agent"),
    KEY_OBJECT("", "node", "parameters shared by every node"),
    KEY_OBJECT("", "auth",
	       "the shared key of control messages (docs/operations.md \"Threat model\")"),

    KEY_IPV4(SERVICE, "vip", vip, "the switch's service IPv4 address", .flags = CFG_REQUIRED),
    KEY_UINT(SERVICE, "port", port, 1, 65535, CFG_DEFAULT_PORT,
	     "UDP port of the service and of nodes"),
    KEY_MAC(SERVICE, "mac", mac, "02:53:4b:4c:00:01",
	    "the VIP's MAC (answered by switchd's ARP responder)"),
    KEY_UINT(SERVICE, "mtu", mtu, 576, 9000, CFG_DEFAULT_MTU,
	     "the MTU ports run (testbed: 1500)"),
    KEY_UINT(SERVICE, "max_value", max_value, 1, CFG_MAX_VALUE, CFG_MAX_VALUE,
	     "largest value in bytes; larger values get TOO_LARGE. A value whose datagram "
	     "would not fit the MTU travels in chunks (docs/protocol.md, \"Chunked operations\")"),

    KEY_UINT(SERVICE, "replicas", replicas, 1, GROUP_MAX, 1,
	     "R: every key is held by its home and the next R - 1 nodes clockwise, and a "
	     "write is acknowledged once each live one holds it (docs/design.md section 13). "
	     "1 keeps each key on its home alone; bare metal should use 3"),
    KEY_UINT(SERVICE, "repair_after_ms", repair_after_ms, 0, 86400000, 600000,
	     "with R above 1: a node down this long is left out of the groups, and the next "
	     "node of each takes its records, so that R copies exist again (docs/design.md "
	     "section 13, \"Repair\"); 0: never"),
    KEY_UINT(SERVICE, "view_lease_ms", view_lease_ms, 0, 60000, 150,
	     "with R above 1: a node serves reads without asking (as primary or member) only "
	     "within this long of an answer to a VIEW that a later VIEW named, and the switch "
	     "marks no node down before the lease it gave it ended; past it, a primary serves "
	     "a read only once another member of the key's group answers that it holds no "
	     "newer view, and members send reads to the primary (docs/design.md section 13, "
	     "\"View leases\"); 0: no leases, reads are served on any view without asking"),

    KEY_UINT(SWITCH, "id", id, 1, CFG_MAX_SWITCHES * 1000, 0, "unique", .flags = CFG_REQUIRED),
    KEY_STRING(SWITCH, "name", name, NULL, "unique, not a number (tools take NAME or ID)",
	       .derive = switch_name, .def_doc = "s<id>"),
    KEY_ENUM(SWITCH, "role", role, role_names, CFG_ROLE_INLINE,
	     "`\"inline\"` (a port per host, L2-forwards other traffic) or `\"one-arm\"` "
	     "(exactly one port into a fabric)"),
    KEY_IPV4(SWITCH, "vip", vip,
	     "this switch's own service address; with several switches each needs its own",
	     .derive = switch_vip, .def_doc = "service.vip"),
    KEY_MAC(SWITCH, "mac", mac, NULL, "this switch's own service MAC", .derive = switch_mac,
	    .def_doc = "service.mac"),
    KEY_STRING(SWITCH, "control_socket", control_socket, NULL, "Unix socket for `cdtctl`",
	       .derive = switch_control_socket, .def_doc = "/run/skewless/switch-<id>.sock"),
    KEY_STRING(SWITCH, "metrics_listen", metrics_listen, "",
	       "`A.B.C.D:PORT` where the switch serves Prometheus `/metrics` (docs/operations.md "
	       "\"Metrics\"); empty: not served"),
    KEY_LIST_UINT("switches[]", "lcores", 0, CFG_MAX_LCORES, 0, 1023,
		  "worker lcores, each once (must be in EAL `-l`); empty: every EAL worker lcore"),
    KEY_UINT(SWITCH, "idle_sleep_us", idle_sleep_us, 0, 1000000, 50,
	     "sleep after `idle_polls` empty polls in a row (0: never sleep)"),
    KEY_UINT(SWITCH, "idle_polls", idle_polls, 1, 1u << 30, 256,
	     "empty polls in a row before a worker sleeps"),
    KEY_ARRAY("switches[]", "ports", 1, CFG_MAX_PORTS, "the switch's ports (below)",
	      .flags = CFG_REQUIRED),
    KEY_LIST_UINT("switches[]", "peers", 0, CFG_MAX_SWITCHES, 0, 65535,
		  "ids of peer switches (each must list this one too; docs/protocol.md \"Peer "
		  "switches\"): SYNC goes only to them and is accepted only from their `vip`"),

    KEY_STRING(PORT, "name", name, NULL, "the port's name", .derive = port_name,
	       .def_doc = "p<index>"),
    KEY_STRING(PORT, "vdev", vdev, "",
	       "a DPDK vdev string (`net_af_packet0,iface=sw1-n1`; `net_tap` and "
	       "`net_af_packet` need `iface=`); exactly one of `vdev` and `pci`"),
    KEY_STRING(PORT, "pci", pci, "", "a PCI address (`0000:3b:00.0`)"),
    KEY_STRING(PORT, "host", host, "",
	       "the agent or node whose namespace gets the port's other end in the testbed (inline)"),

    KEY_UINT(NODE, "id", id, 1, CFG_MAX_NODES, 0, "unique (0 means \"no node\" on the wire)",
	     .flags = CFG_REQUIRED),
    KEY_STRING(NODE, "name", name, NULL,
	       "unique across nodes and agents, not a number (tools take NAME or ID); ketama "
	       "hashes `\"<name>-<i>\"`",
	       .flags = CFG_REQUIRED),
    KEY_IPV4(NODE, "ip", ip,
	     "ip:port unique. Nodes may share a host's address with their own ports: the "
	     "switch learns the host's MAC for all of them",
	     .flags = CFG_REQUIRED),
    KEY_UINT(NODE, "port", port, 1, 65535, CFG_DEFAULT_PORT, "the node's UDP port"),
    KEY_UINT(NODE, "weight", weight, 0, 100, 1,
	     "ring points = twemproxy's `floor(w/W * 40 * n) * 4`; 0: in the cluster but in "
	     "no arc of the ring (a node leaving, kept until it has drained)"),
    KEY_STRING(NODE, "data_dir", data_dir, NULL, "RocksDB directory", .derive = node_data_dir,
	       .def_doc = "/var/lib/skewless/<name>"),
    KEY_STRING(NODE, "metrics_listen", metrics_listen, "",
	       "`A.B.C.D:PORT` where the node serves Prometheus `/metrics`; empty: not served"),

    KEY_STRING(AGENT_HOST, "name", name, NULL, "unique across agents and nodes",
	       .flags = CFG_REQUIRED),
    KEY_IPV4(AGENT_HOST, "ip", ip, "the host's address", .flags = CFG_REQUIRED),

    KEY_UINT(RING, "version", ring_version, 1, UINT32_MAX, 1,
	     "the ring's version: `cdtctl ring apply` takes a config only with a higher one"),
    KEY_UINT(RING, "ramp_ms", ramp_ms, 0, 3600000, 10000,
	     "a ring change activates its moved arcs over this time (a joining node's weight "
	     "ramps from 0)"),
    KEY_UINT(RING, "warmup_keys_per_s", warmup_keys_per_s, 1, 1000000, 5000,
	     "keys per second each previous home pushes to the new homes in a ring change"),

    KEY_BOOL(DIRECTORY, "enabled", enabled, true, "false: ring only"),
    KEY_UINT(DIRECTORY, "max_keys", max_keys, 1, 65535, 1024, "cap on directory entries"),
    KEY_UINT(DIRECTORY, "top_k", top_k, 0, 1u << 20, 0,
	     "hot keys per epoch; 0 = `ceil(n * log2 n)` for n nodes, capped by `max_keys`"),
    KEY_UINT(DIRECTORY, "epoch_ms", epoch_ms, 1, 60000, 100, "hot-key epoch"),
    KEY_UINT(DIRECTORY, "retire_epochs", retire_epochs, 1, 10000, 5,
	     "M: epochs a key may stay out of the top K before UNREPLICATE"),
    KEY_UINT(DIRECTORY, "max_replicas", max_replicas, 1, CFG_MAX_REPLICAS, 8,
	     "replicas per key; above 16 the switch keeps a second pool of larger sets "
	     "(docs/design.md section 5)"),
    KEY_DOUBLE(DIRECTORY, "replica_factor", replica_factor, 0, 64, 2,
	       "f: a key with share s of the load wants `1 + ceil(f * s * n)` replicas"),
    KEY_DOUBLE(DIRECTORY, "push_cost", push_cost, 0, 64, 3,
	       "what a write's push to a key's copies costs its home, in writes: a key whose "
	       "writes would leave its home busier with copies than without is not copied "
	       "(docs/design.md section 13)"),
    KEY_BOOL(DIRECTORY, "batch_writes", batch_writes, true,
	     "group commit at the switch: PUTs of a directory key that arrive while one of it "
	     "is out at its home wait, and the newest goes next for all (docs/design.md "
	     "section 5); false: each PUT goes on at once"),
    KEY_UINT(DIRECTORY, "spare_home_from", spare_home_from, 0, CFG_MAX_REPLICAS, 8,
	     "a set of this many copies or more sends no reads to the key's home, which applies "
	     "and pushes every write of it (docs/design.md section 5); 0: the home is always "
	     "weighed like the other copies"),
    KEY_UINT(DIRECTORY, "sample_every", sample_every, 1, 1u << 16, 1,
	     "count 1 in N requests in the heavy-hitter sketch"),

    KEY_UINT(DIGEST, "interval_ms", interval_ms, 1, 60000, 100, "base emission interval"),
    KEY_UINT(DIGEST, "fast_interval_ms", fast_interval_ms, 1, 60000, 20,
	     "interval after a queue jump or p95 over threshold"),
    KEY_UINT(DIGEST, "fast_count", fast_count, 0, 1000, 3, "digests sent at the fast interval"),
    KEY_UINT(DIGEST, "slow_interval_ms", slow_interval_ms, 1, 60000, 200, "interval once stable"),
    KEY_UINT(DIGEST, "stable_count", stable_count, 1, 1000, 5,
	     "stable digests in a row before stretching"),
    KEY_UINT(DIGEST, "stable_health", stable_health, 0, 100, 85,
	     "health above which a digest counts as stable"),
    KEY_UINT(DIGEST, "queue_jump_pct", queue_jump_pct, 1, 10000, 50,
	     "queue growth that triggers an immediate digest"),
    KEY_UINT(DIGEST, "p95_threshold_us", p95_threshold_us, 1, 60000000, 10000,
	     "p95 that triggers an immediate digest"),
    KEY_UINT(DIGEST, "down_after_intervals", down_after_intervals, 1, 1000, 3,
	     "silent intervals (no digest and no reply to a request) before a node is marked down"),
    KEY_UINT(DIGEST, "window", window, 1, CFG_WINDOW_MAX, 5, "digests kept per node"),
    KEY_LIST_DOUBLE("digest", "window_weights", 0, CFG_WINDOW_MAX, 0, 1e6,
		    "one weight per window slot, oldest to newest",
		    .def_doc = "[1, 2, ..., window]"),
    KEY_OBJECT("digest", "weights",
	       "per-metric weights of the health score, which must sum to 1 (below)"),
    KEY_OBJECT("digest", "max", "maxima that normalise each metric to 0..100 (below)"),

    KEY_DOUBLE(WEIGHTS, "queue", w_queue, 0, 1, 0.35, "weight of the queue length"),
    KEY_DOUBLE(WEIGHTS, "p95", w_p95, 0, 1, 0.30, "weight of the p95 latency"),
    KEY_DOUBLE(WEIGHTS, "rx_rate", w_rx_rate, 0, 1, 0.20, "weight of the receive rate"),
    KEY_DOUBLE(WEIGHTS, "cpu", w_cpu, 0, 1, 0.10, "weight of the CPU use"),
    KEY_DOUBLE(WEIGHTS, "io", w_io, 0, 1, 0.05, "weight of the disk I/O"),

    KEY_UINT(MAXIMA, "queue", max_queue, 1, 1u << 30, 256,
	     "queue length that normalises to 100 (above it saturates)"),
    KEY_UINT(MAXIMA, "p95_us", max_p95_us, 1, 1u << 30, 20000,
	     "p95 latency in us that normalises to 100"),
    KEY_UINT(MAXIMA, "rx_rate", max_rx_rate, 1, 1u << 30, 50000,
	     "requests per second that normalise to 100"),
    KEY_UINT(MAXIMA, "cpu_pct", max_cpu_pct, 1, 10000, 100, "CPU percent that normalises to 100"),
    KEY_UINT(MAXIMA, "io_kbps", max_io_kbps, 1, 1u << 30, 102400,
	     "disk I/O in KB/s that normalises to 100"),
    KEY_UINT(MAXIMA, "mem_mb", max_mem_mb, 1, 1u << 30, 4096,
	     "resident memory in MB that normalises to 100"),

    KEY_UINT(SYNC, "interval_ms", interval_ms, 1, 60000, 200,
	     "SYNC period between peer switches; a peer is dead after 5 intervals without "
	     "SYNC, a lease lasts 3"),
    KEY_UINT(SYNC, "score_delta_pct", score_delta_pct, 0, 100, 15,
	     "send a node's score when it moved by more than this (relative), or changed "
	     "liveness; all scores every 5th SYNC"),
    KEY_UINT(SYNC, "window", window, 1, CFG_WINDOW_MAX, 5,
	     "candidate windows kept per switch; a key is cluster-hot in more than half of "
	     "them (docs/protocol.md \"Peer switches\")"),

    KEY_ENUM(AGENT, "mode", mode, mode_names, CFG_MODE_INPATH,
	     "`\"inpath\"`, `\"hint\"` or `\"direct\"` (docs/cli.md)"),
    KEY_ENUM(AGENT, "consistency", consistency, consistency_names, CFG_LINEARIZABLE,
	     "`\"linearizable\"` or `\"relaxed\"` (docs/cli.md)"),
    KEY_UINT(AGENT, "timeout_ms", timeout_ms, 1, 60000, 50,
	     "per attempt; nodes drop queued client requests older than this unserved (their "
	     "sender gave up)"),
    KEY_UINT(AGENT, "deadline_ms", deadline_ms, 1, 600000, 500,
	     "per request: attempts are resent until this long after submission (at least two "
	     "whole attempts); covers a 100 ms switch stall and its drain on a loaded host "
	     "(docs/cli.md)"),
    KEY_UINT(AGENT, "retries", retries, 0, 100, 9,
	     "at most this many resends of a timed-out request within its deadline, each routed "
	     "afresh"),
    KEY_UINT(AGENT, "switch_failures", switch_failures, 1, 1000, 3,
	     "consecutive switch timeouts, each with nothing at all from the switch while it "
	     "waited, before routing to the ring home"),
    KEY_UINT(AGENT, "loss_pct", loss_pct, 0, 100, 5,
	     "a switch whose reads time out more often than this (percent, over `loss_window_ms`) "
	     "while later ones are answered is given up as lossy where there is a path around it "
	     "(0: never)"),
    KEY_UINT(AGENT, "loss_window_ms", loss_window_ms, 10, 600000, 1000,
	     "sliding window over which a switch's loss rate is judged"),
    KEY_UINT(AGENT, "recheck_ms", recheck_ms, 1, 600000, 1000,
	     "how often a fallen-back agent re-checks the switch"),
    KEY_UINT(AGENT, "max_inflight", max_inflight, 1, 1u << 20, 16384,
	     "requests in flight per agent"),
    KEY_UINT(AGENT, "route_cache_entries", route_cache_entries, 0, 1u << 20, 1000,
	     "route cache size (relaxed mode)"),
    KEY_UINT(AGENT, "route_cache_ttl_ms", route_cache_ttl_ms, 1, 3600000, 5000,
	     "route cache entry lifetime"),

    KEY_UINT(NODE_PARAM, "workers", workers, 1, 64, 2, "worker threads"),
    KEY_UINT(NODE_PARAM, "queue_depth", queue_depth, 1, 1u << 20, 1024,
	     "bounded client request queue; full -> OVERLOADED. Replication (REPLICATE, "
	     "RC_REQ) has a control lane of the same depth that workers empty first"),
    KEY_ENUM(NODE_PARAM, "durability", durability, durability_names, CFG_DURABILITY_SYNC,
	     "`\"sync\"` fsyncs the WAL before replying; `\"async\"` does not"),
    KEY_UINT(NODE_PARAM, "service_time_us", service_time_us, 0, 10000000, 0,
	     "capacity emulation (see skewless-node --service-time-us)"),
    KEY_UINT(NODE_PARAM, "ttl_sample_keys", ttl_sample_keys, 1, 100000, 20,
	     "keys sampled per TTL round"),
    KEY_UINT(NODE_PARAM, "ttl_sample_ms", ttl_sample_ms, 1, 600000, 100, "TTL round period"),
    KEY_UINT(NODE_PARAM, "tombstone_gc_s", tombstone_gc_s, 1, 1u << 30, 60,
	     "tombstones older than this are removed"),
    KEY_UINT(NODE_PARAM, "block_cache_mb", block_cache_mb, 1, 1u << 20, 64, "RocksDB block cache"),
    KEY_UINT(NODE_PARAM, "write_buffer_mb", write_buffer_mb, 0, 1u << 16, 0,
	     "RocksDB memtable size per column family; 0 keeps RocksDB's 64 MB. Small values "
	     "(with a small block cache) let many nodes share one machine: `conf/scale64.json`"),
    KEY_UINT(NODE_PARAM, "reassembly_mb", reassembly_mb, 1, 1u << 16, 64,
	     "cap on the memory of chunked operations being gathered or queued; a chunk "
	     "that would start one past it is answered OVERLOADED"),
    KEY_UINT(NODE_PARAM, "reassembly_timeout_ms", reassembly_timeout_ms, 1, 600000, 500,
	     "a chunked operation not complete this long after its first chunk is dropped "
	     "(counted `chunk_timeout`); the agent resends it whole"),

    KEY_STRING(AUTH, "key_file", key_file, "",
	       "file with the cluster's shared key, 64..128 hex digits (`openssl rand -hex 32`), "
	       "no access for group and others (`chmod 600`); relative to the config's folder. "
	       "Set: every control message carries an HMAC-SHA256 and switches and nodes drop "
	       "those without a valid one. Read by switches and nodes at start, never by agents"),
};

const size_t cfg_nkeys = sizeof(cfg_keys) / sizeof(cfg_keys[0]);

const struct cfg_key *cfg_key_find(const char *section, const char *name)
{
	for (size_t i = 0; i < cfg_nkeys; i++)
		if (!strcmp(cfg_keys[i].section, section) && !strcmp(cfg_keys[i].name, name))
			return &cfg_keys[i];
	return NULL;
}

const char *cfg_key_type_name(const struct cfg_key *k)
{
	static const char *const names[] = {
	    [CFG_UINT] = "integer",  [CFG_DOUBLE] = "number", [CFG_BOOL] = "boolean",
	    [CFG_STRING] = "string", [CFG_ENUM] = "enum",     [CFG_IPV4] = "IPv4",
	    [CFG_MAC] = "MAC",	     [CFG_OBJECT] = "object", [CFG_ARRAY] = "array",
	};

	return names[k->type];
}

char *cfg_key_default(const struct cfg_key *k, char *buf, size_t cap)
{
	if (k->flags & CFG_REQUIRED)
		snprintf(buf, cap, "required");
	else if (k->def_doc)
		snprintf(buf, cap, "%s", k->def_doc);
	else if (k->type == CFG_UINT)
		snprintf(buf, cap, "%" PRIu64, k->def.u);
	else if (k->type == CFG_DOUBLE)
		snprintf(buf, cap, "%g", k->def.d);
	else if (k->type == CFG_BOOL)
		snprintf(buf, cap, "%s", k->def.b ? "true" : "false");
	else if (k->type == CFG_ENUM)
		snprintf(buf, cap, "\"%s\"", k->names[k->def.e]);
	else if ((k->type == CFG_STRING || k->type == CFG_MAC) && k->def.s && *k->def.s)
		snprintf(buf, cap, k->type == CFG_STRING ? "\"%s\"" : "%s", k->def.s);
	else if (k->type == CFG_ARRAY)
		snprintf(buf, cap, "[]");
	else if (k->type == CFG_OBJECT)
		snprintf(buf, cap, "{}");
	else
		snprintf(buf, cap, "none");
	return buf;
}

char *cfg_key_range(const struct cfg_key *k, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	switch (k->type) {
	case CFG_UINT:
		if (k->flags & CFG_MAX_IS_DEFAULT)
			snprintf(buf, cap, "%" PRIu64 "..%s", k->min, k->def_doc);
		else
			snprintf(buf, cap, "%" PRIu64 "..%" PRIu64, k->min, k->max);
		break;
	case CFG_DOUBLE:
		cfg_format_bounds(k->dmin, k->dmax, buf, cap);
		break;
	case CFG_BOOL:
		snprintf(buf, cap, "true, false");
		break;
	case CFG_STRING:
		snprintf(buf, cap, "1..%zu bytes", k->size - 1);
		break;
	case CFG_ENUM:
		for (int i = 0; k->names[i] && len < cap; i++)
			len += (size_t)snprintf(buf + len, cap - len, "%s\"%s\"", i ? ", " : "",
						k->names[i]);
		break;
	case CFG_IPV4:
		snprintf(buf, cap, "a.b.c.d");
		break;
	case CFG_MAC:
		snprintf(buf, cap, "xx:xx:xx:xx:xx:xx");
		break;
	case CFG_ARRAY: {
		char items[CFG_MAX_NAME] = "";

		if (k->item == CFG_UINT)
			snprintf(items, sizeof(items), " of %" PRIu64 "..%" PRIu64, k->item_min,
				 k->item_max);
		else if (k->item == CFG_DOUBLE) {
			memcpy(items, " of ", 4);
			cfg_format_bounds(k->dmin, k->dmax, items + 4, sizeof(items) - 4);
		}
		snprintf(buf, cap, "%" PRIu64 "..%" PRIu64 " entries%s", k->min, k->max, items);
		break;
	}
	case CFG_OBJECT:
		break;
	}
	return buf;
}

/* Whole numbers without an exponent (1000000, not 1e+06), others as %g. */
static int format_number(double d, char *buf, size_t cap)
{
	if (d > -1e15 && d < 1e15 && d == (double)(long long)d)
		return snprintf(buf, cap, "%lld", (long long)d);
	return snprintf(buf, cap, "%g", d);
}

char *cfg_format_bounds(double lo, double hi, char *buf, size_t cap)
{
	size_t len = (size_t)format_number(lo, buf, cap);

	if (len + 2 < cap) {
		memcpy(buf + len, "..", 2);
		format_number(hi, buf + len + 2, cap - len - 2);
	}
	return buf;
}

/* A table cell in backticks, or empty; "required" and "none" read as words. */
static void cell(FILE *out, const char *text)
{
	if (!*text || !strcmp(text, "required") || !strcmp(text, "none"))
		fprintf(out, " %s |", text);
	else
		fprintf(out, " `%s` |", text);
}

int cfg_keys_markdown(FILE *out)
{
	const char *section = NULL;
	char def[CFG_MAX_PATH], range[CFG_MAX_PATH];

	fprintf(out, "%s\n", CFG_KEYS_BEGIN);
	for (size_t i = 0; i < cfg_nkeys; i++) {
		const struct cfg_key *k = &cfg_keys[i];

		if (!section || strcmp(section, k->section)) {
			section = k->section;
			if (*section)
				fprintf(out, "\n### `%s`\n", section);
			else
				fprintf(out, "\n### Top level\n");
			fprintf(out, "\n| key | type | default | range | meaning |\n"
				     "|---|---|---|---|---|\n");
		}
		fprintf(out, "| `%s` | %s |", k->name, cfg_key_type_name(k));
		cell(out, cfg_key_default(k, def, sizeof(def)));
		cell(out, cfg_key_range(k, range, sizeof(range)));
		fprintf(out, " %s |\n", k->doc);
	}
	fprintf(out, "\n%s\n", CFG_KEYS_END);
	return ferror(out) ? -1 : 0;
}

const char *cfg_keys_block(const char *text, size_t *len)
{
	const char *begin = strstr(text, CFG_KEYS_BEGIN);
	const char *end = begin ? strstr(begin, CFG_KEYS_END) : NULL;

	if (!end)
		return NULL;
	end += strlen(CFG_KEYS_END);
	*len = (size_t)(end + (*end == '\n') - begin);
	return begin;
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
