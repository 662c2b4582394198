/*
 * skewless.h - libskewless, the asynchronous C client of a skewless cluster.
 *
 * One agent is one UDP socket and a table of requests in flight, driven by the
 * caller's thread: submit requests with skl_get()/skl_put()/skl_del(), then call
 * skl_poll() (or wait on skl_fd() in your own event loop, bounded by
 * skl_next_timeout_ms()) and the callbacks fire from inside skl_poll(). There
 * is no thread and no blocking per request; one agent holds up to
 * agent.max_inflight requests (16384 by default). An agent is not thread-safe:
 * use one per thread.
 *
 * Routing (docs/design.md section 8):
 *   inpath  every request goes to the switch's VIP (the default);
 *   hint    a GET asks the switch with HINT, then reads from that node directly
 *           (REPLICA_READ when it is not the home); writes go through the switch;
 *   direct  every request goes to the key's home node on the ketama ring.
 * Each attempt waits agent.timeout_ms (50) for its reply (a PUT in chunks 1/64
 * more per chunk, a HINT half of it, and a chunked reply re-arms it as it
 * arrives); a timed-out request is resent, routed afresh and with the same
 * req_id, at most agent.retries (9) times and only until its deadline,
 * agent.deadline_ms (500) after submission; one that runs out ends SKL_TIMEOUT.
 * When a write's attempt through a switch times out and the nodes are reached
 * without crossing it (one-arm), the retry goes to the key's ring home, which
 * applies it at most once; a read's goes where the agent's view sends it, the
 * switch until it is given up (a read at the home directly could see a write
 * the switch has not seen complete). After agent.switch_failures consecutive switch timeouts
 * during which the switch sent nothing at all (silent), or once more than
 * agent.loss_pct of the reads through it over agent.loss_window_ms were lost
 * while later ones were answered (lossy), the agent routes to the ring home,
 * trying the next configured switch first if there is one, and re-checks the
 * switch every agent.recheck_ms: a silent one is back as soon as anything comes
 * from it, a lossy one after two rounds of 32 re-check HINTs all answered. A
 * node that leaves a request unanswered while the path to it is known to work
 * (nodes reached directly, or others answering through the same inline switch)
 * is marked unresponsive for recheck_ms: linearizable requests for its keys
 * then fail fast with SKL_UNAVAILABLE, but for one real request per timeout
 * (half-open), and its first answer readmits it. In inpath mode the switch's
 * node table decides while the switch carries the traffic. Relaxed reads whose
 * home does not answer PROBE the other nodes and read the highest version any
 * of them holds, flagged SKL_R_STALE. A MOVED to a read the switch placed (a
 * stale HINT) places it again within the deadline, in hint mode through the
 * switch from the second time; a MOVED because the ring moved reloads the
 * agent's view of it and resends once to the owner the node named.
 *
 * The library never prints and never exits; functions return 0 or a negative
 * errno.
 */
#ifndef SKEWLESS_H
#define SKEWLESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cfg;
struct skl_agent;

/*
 * Final status of a request. 0..7 are the wire status codes the cluster
 * answers with (docs/protocol.md), and CONFLICT is the wire's 8 (numbered
 * after the agent's own, so that the CLI's exit codes, the statuses, stay as
 * docs/cli.md lists them); the rest are decided by the agent.
 */
#define SKL_STATUSES(X)                                                                            \
	X(SKL_OK, 0, "OK")                                                                         \
	X(SKL_NOT_FOUND, 1, "NOT_FOUND")                                                           \
	X(SKL_MOVED, 2, "MOVED") /* the ring moved, still MOVED after the one resend */            \
	X(SKL_TOO_LARGE, 3, "TOO_LARGE")                                                           \
	X(SKL_BAD_REQUEST, 4, "BAD_REQUEST")                                                       \
	X(SKL_UNAVAILABLE, 5, "UNAVAILABLE") /* no node able to serve it answered */               \
	X(SKL_OVERLOADED, 6, "OVERLOADED")                                                         \
	X(SKL_INTERNAL, 7, "INTERNAL")                                                             \
	X(SKL_TIMEOUT, 8, "TIMEOUT")	 /* no answer by the deadline, or retries used up */       \
	X(SKL_CANCELLED, 9, "CANCELLED") /* the agent was closed first */                          \
	X(SKL_CONFLICT, 10, "CONFLICT")	 /* wire status 8: skl_cas()'s condition did not hold */

enum skl_status {
#define X(name, value, str) name = value,
	SKL_STATUSES(X)
#undef X
	    SKL_STATUS_COUNT
};

enum skl_op { SKL_OP_GET, SKL_OP_PUT, SKL_OP_DEL, SKL_OP_CAS };

/* 0 means "as in the config" for both. */
enum skl_mode { SKL_MODE_CONFIG, SKL_MODE_INPATH, SKL_MODE_HINT, SKL_MODE_DIRECT };
enum skl_consistency { SKL_CONSISTENCY_CONFIG, SKL_LINEARIZABLE, SKL_RELAXED };

/* skl_result.flags */
#define SKL_R_STALE	 0x1 /* relaxed read from a probed copy: possibly stale */
#define SKL_R_REPLICATED 0x2 /* the key is in the switch's directory */
#define SKL_R_REPLICA	 0x4 /* served from a replica copy (REPLICA_READ) */
#define SKL_R_DIRECT	 0x8 /* answered by a node directly, not through the switch */

/* What a callback gets. Pointers are valid only during the callback. */
struct skl_result {
	enum skl_op op;
	enum skl_status status;
	uint32_t flags;	  /* SKL_R_* */
	uint64_t req_id;  /* agent id << 32 | sequence */
	uint64_t version; /* the object's version (GET), or the one written (PUT/DEL) */
	uint16_t node;	  /* served-by node id; 0 when no node answered */
	uint16_t load;	  /* that node's load, piggybacked on the reply */
	const void *key;
	size_t key_len;
	const void *value; /* GET, CAS READ: the value read; PUT: the value written; else NULL */
	size_t value_len;
	uint64_t ttl_ms;      /* CAS: the ms the live value has left (0: no expiry, or none live) */
	uint32_t sends;	      /* datagrams sent for it, retries and PROBEs included */
	uint64_t invoke_ns;   /* CLOCK_MONOTONIC at submission */
	uint64_t complete_ns; /* CLOCK_MONOTONIC at completion */
};

typedef void (*skl_callback)(void *arg, const struct skl_result *res);

/* Per-call options; NULL means all defaults. */
struct skl_call_opts {
	enum skl_consistency consistency;
	uint32_t ttl_ms; /* PUT: expire after this many ms (0: never) */
};

/*
 * A conditional write at the key's home (skl_cas()): the condition is checked
 * and the action applied in one step under the key's lock, so a
 * read-modify-write loops on SKL_CONFLICT instead of overwriting a write it
 * did not see. The values are the wire's (docs/protocol.md, CAS).
 */
enum skl_cas_cond {
	SKL_CAS_ANY = 0,     /* no condition */
	SKL_CAS_VERSION = 1, /* the live value is at `version` (0: there is none) */
	SKL_CAS_LIVE = 2,    /* a live value exists, any version */
};
enum skl_cas_action {
	SKL_CAS_SET = 0,    /* write the value */
	SKL_CAS_DEL = 1,    /* delete */
	SKL_CAS_EXPIRE = 2, /* keep the value, set its expiry */
	SKL_CAS_READ = 3,   /* write nothing: report version, ttl_ms and the value */
};
struct skl_cas {
	enum skl_cas_cond cond;
	enum skl_cas_action action;
	uint64_t version; /* SKL_CAS_VERSION */
	int keep_ttl;	  /* SET/EXPIRE: keep the live value's expiry instead of ttl_ms */
	uint64_t ttl_ms;  /* SET/EXPIRE: expire this many ms from now (0: never) */
};

/* Creation options; a zeroed struct (or NULL) takes everything from the config. */
struct skl_options {
	uint32_t agent_id; /* upper 32 bits of every req_id; 0: random */
	enum skl_mode mode;
	enum skl_consistency consistency;
	uint32_t timeout_ms;  /* per attempt; 0: config */
	uint32_t deadline_ms; /* per request; 0: config */
	uint32_t retries;     /* used only when retries_set: 0 is a valid count */
	int retries_set;
	uint32_t switch_failures; /* 0: config */
	uint32_t recheck_ms;	  /* 0: config */
	uint32_t max_inflight;	  /* 0: config */
	uint32_t bind_ip;	  /* host order; 0: any */
	uint16_t bind_port;	  /* 0: ephemeral */
	/*
	 * Switches to try first, in order: "w2" or "w2,w1" (names or ids); the
	 * others follow in config order. NULL: $SKL_SWITCH_ORDER, else the
	 * config's order. An unknown name makes skl_create() fail with -EINVAL.
	 */
	const char *switch_order;
};

/* A switch or node address, host byte order. */
struct skl_addr {
	uint32_t ip;
	uint16_t port;
};

struct skl_node_addr {
	uint16_t id;	  /* 1..255 */
	const char *name; /* ring name ("n1"): ketama hashes "<name>-<i>" */
	uint32_t ip;
	uint16_t port;
	uint32_t weight; /* 0 counts as 1 */
};

/*
 * Create an agent from a loaded config. The config is copied; if cfg->path
 * names a file, MOVED replies reload it to refresh the ring. Returns 0 and
 * sets *out, or a negative errno (-EINVAL bad options, -ENOMEM, socket errors).
 */
int skl_create(const struct cfg *cfg, const struct skl_options *opt, struct skl_agent **out);

/*
 * Create an agent from a cluster config file (/etc/skewless/cluster.json,
 * docs/config.md); MOVED replies reload it. A file that does not load returns
 * -EINVAL with the loader's one-line message in err (when err is not NULL):
 * the file, the key and what was expected.
 */
int skl_create_file(const char *path, const struct skl_options *opt, struct skl_agent **out,
		    char *err, size_t errlen);

/*
 * Create an agent from explicit addresses: switches in the order to try them
 * (nswitches may be 0, then only direct routing works) and the ring's nodes.
 * Agent parameters are the documented config defaults unless opt sets them.
 */
int skl_create_addrs(const struct skl_addr *switches, size_t nswitches,
		     const struct skl_node_addr *nodes, size_t nnodes,
		     const struct skl_options *opt, struct skl_agent **out);

/*
 * Submit a request. key_len is 1..1024; key and value are copied, so they may
 * be freed on return. A value above service.max_value (262,144 bytes by
 * default) completes TOO_LARGE without a datagram; one larger than a datagram
 * travels in chunks (docs/protocol.md, "Chunked operations"). cb(arg, result)
 * is called exactly once, from a later skl_poll() (never from inside the
 * submit call). Returns 0, -EINVAL (bad key
 * or value length), -EBUSY (max_inflight requests already in flight) or -ENOMEM.
 */
int skl_get(struct skl_agent *a, const void *key, size_t key_len, const struct skl_call_opts *o,
	    skl_callback cb, void *arg);
int skl_put(struct skl_agent *a, const void *key, size_t key_len, const void *value,
	    size_t value_len, const struct skl_call_opts *o, skl_callback cb, void *arg);
int skl_del(struct skl_agent *a, const void *key, size_t key_len, const struct skl_call_opts *o,
	    skl_callback cb, void *arg);

/*
 * Submit a conditional write (struct skl_cas). It always goes to the key's
 * home node, around the switch: a home that pushed copies of the key drops
 * them before applying it (docs/design.md section 5). The callback's status
 * is OK (applied; version = the new version, or the current one for READ),
 * NOT_FOUND (no live value where the condition or action needs one) or
 * CONFLICT (version = the live value's), or an agent status; ttl_ms reports
 * the live value's remaining time. Returns as skl_put(), -EINVAL also for a
 * value with an action other than SET.
 */
int skl_cas(struct skl_agent *a, const void *key, size_t key_len, const struct skl_cas *c,
	    const void *value, size_t value_len, skl_callback cb, void *arg);

/*
 * Receive replies, fire expired timers and due re-checks, and call callbacks.
 * Waits up to timeout_ms (0: do not wait, -1: until something happens or
 * the next timer) for the first event. Returns the number of requests
 * completed, or a negative errno.
 */
int skl_poll(struct skl_agent *a, int timeout_ms);

/*
 * Corked, requests are held and leave together, up to 32 in one
 * sendmmsg(), at the next skl_poll() or skl_uncork(): one system call for
 * a pipeline's worth instead of one per request. A loop that submits a
 * burst and then polls stays corked. Uncorked (the default) each leaves at
 * once. What skl_poll() itself sends (resends, callbacks' submissions)
 * always leaves together, before it returns.
 */
void skl_cork(struct skl_agent *a);
void skl_uncork(struct skl_agent *a);

/* The socket to wait on for readability, and how long until skl_poll() must run
 * anyway for timers (-1: no timer pending; 0 also while submitted requests
 * wait to be sent). */
int skl_fd(const struct skl_agent *a);
int skl_next_timeout_ms(struct skl_agent *a);

/* Requests in flight. */
uint32_t skl_inflight(const struct skl_agent *a);

/*
 * Synchronous wrappers: submit, then poll until this request completes (other
 * requests' callbacks fire meanwhile). res->value points into buf: the value
 * is copied up to cap bytes, res->value_len is its full length. Return 0 (the
 * outcome is res->status) or the negative errno of the submission.
 */
int skl_get_sync(struct skl_agent *a, const void *key, size_t key_len,
		 const struct skl_call_opts *o, void *buf, size_t cap, struct skl_result *res);
int skl_put_sync(struct skl_agent *a, const void *key, size_t key_len, const void *value,
		 size_t value_len, const struct skl_call_opts *o, struct skl_result *res);
int skl_del_sync(struct skl_agent *a, const void *key, size_t key_len,
		 const struct skl_call_opts *o, struct skl_result *res);

/* Counters, VPP-style: X(field, description). */
#define SKL_COUNTERS(X)                                                                            \
	X(submitted, "requests submitted")                                                         \
	X(completed, "requests completed")                                                         \
	X(sent, "datagrams sent (requests, HINTs, PROBEs, re-checks)")                             \
	X(send_errors, "sendto() failures (counted as lost)")                                      \
	X(retries, "requests resent after a timeout")                                              \
	X(timeouts, "attempts that timed out")                                                     \
	X(replies, "replies matched to a request")                                                 \
	X(rx_bad, "datagrams that failed validation")                                              \
	X(rx_unmatched, "replies for no request in flight (late or foreign)")                      \
	X(moved, "MOVED replies")                                                                  \
	X(ring_reloads, "ring views rebuilt after MOVED")                                          \
	X(switch_down, "times a switch was given up as silent: consecutive timeouts")              \
	X(switch_lossy, "times a switch was given up as lossy: reads lost past agent.loss_pct")    \
	X(switch_losses, "reads through a switch that timed out while later ones were answered")   \
	X(switch_back, "times a switch given up took traffic again")                               \
	X(rechecks, "re-check datagrams sent to switches that were given up")                      \
	X(switch_retries_home,                                                                     \
	  "writes through a switch that timed out, resent to the ring home")                     \
	X(refusals, "requests a node refused unapplied (UNAVAILABLE), resent within the deadline") \
	X(node_down, "times a node was marked unresponsive")                                       \
	X(node_trials, "requests let through to a node marked unresponsive (half-open)")           \
	X(fail_fast, "linearizable requests failed at once: home marked unresponsive")             \
	X(hints, "HINT requests sent")                                                             \
	X(cache_hits, "reads routed from the route cache")                                         \
	X(probes, "PROBE datagrams sent")                                                          \
	X(stale_reads, "relaxed reads answered from a probed copy")                                \
	X(redirects_moved, "requests resent to the node a MOVED named")                            \
	X(replaced, "reads placed again after a MOVED: the switch's placement was stale")          \
	X(redirects_moved_ok, "of those, answered OK or NOT_FOUND")                                \
	X(redirects_fallback,                                                                      \
	  "requests rerouted: direct while the switches are given up, or home after a cached "     \
	  "route failed")                                                                          \
	X(redirects_fallback_ok, "of those, answered OK or NOT_FOUND")                             \
	X(chunks_sent, "chunks of PUTs larger than a datagram (in sent: one per attempt)")         \
	X(chunks_received, "chunks of replies larger than a datagram")                             \
	X(chunk_drops, "reply chunks dropped: malformed, duplicate, or of another version")

struct skl_stats {
#define X(field, desc) uint64_t field;
	SKL_COUNTERS(X)
#undef X
};

void skl_get_stats(const struct skl_agent *a, struct skl_stats *out);
/* Counter i's name and description, for i < skl_counter_count(); NULL past it. */
size_t skl_counter_count(void);
const char *skl_counter_name(size_t i);
const char *skl_counter_desc(size_t i);
uint64_t skl_counter_value(const struct skl_stats *s, size_t i);

/* This agent's id (upper half of its req_ids) and the UDP port it is bound to. */
uint32_t skl_agent_id(const struct skl_agent *a);
uint16_t skl_local_port(const struct skl_agent *a);

/*
 * Whether new requests currently start at a switch (1) or at the ring home
 * because every switch was given up (0); in direct mode always 0.
 */
int skl_using_switch(const struct skl_agent *a);

/* Home node id of a key on the agent's current ring. */
uint16_t skl_home(const struct skl_agent *a, const void *key, size_t key_len);
/* A node's name from the agent's view ("n3"), or NULL. */
const char *skl_node_name(const struct skl_agent *a, uint16_t id);

/* Name of a status ("NOT_FOUND"), "?" when out of range. */
const char *skl_status_name(enum skl_status st);
/* Parse "inpath"/"hint"/"direct" and "linearizable"/"relaxed"; 0 or -EINVAL. */
int skl_mode_parse(const char *s, enum skl_mode *mode);
int skl_consistency_parse(const char *s, enum skl_consistency *c);

/* Complete every request still in flight with SKL_CANCELLED, then free the agent. */
void skl_close(struct skl_agent *a);

#ifdef __cplusplus
}
#endif

#endif
