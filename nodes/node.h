/*
 * node.h - the state of one skewless-node process, shared by its threads.
 *
 * Threads: main (start-up, then signals), N workers that receive and serve
 * and a standby receive thread (server.c; with emulated capacity the receive
 * thread receives and 8 N workers serve), the TTL/GC thread (ttl.c) and the
 * digest thread (report.c).
 * Everything here is set before the threads start and read-only afterwards,
 * except the atomics (counters, inflight, stop flags) and the queue (its own
 * lock).
 */
#ifndef SKL_NODE_NODE_H
#define SKL_NODE_NODE_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "config.h"
#include "dedup.h"
#include "reasm.h"
#include "migrate.h"
#include "ring.h"
#include "store.h"
#include "through.h"
#include "wire.h"

/*
 * Counters, VPP-style: X(name, help). Every received datagram lands in
 * exactly one of the classes marked (c), so rx_datagrams == their sum; the
 * help is what the counters file's docs and /metrics say of each
 * (docs/operations.md).
 */
#define NODE_COUNTERS(X)                                                                           \
	X(rx_datagrams, "Datagrams received")                                                      \
	X(accepted, "(c) Queued for a worker (UNREPLICATE: served by its receiver at once)")       \
	X(rx_replies, "(c) Replies (op | 0x80) sent to a node: dropped")                           \
	X(drop_short, "(c) Header unreadable: dropped, no reply")                                  \
	X(drop_bad_magic, "(c) Wrong magic: dropped")                                              \
	X(drop_bad_version, "(c) Unknown wire version: dropped")                                   \
	X(drop_bad_op, "(c) Unknown op: dropped")                                                  \
	X(bad_flags, "(c) Unknown flags: answered BAD_REQUEST")                                    \
	X(bad_status, "(c) Unknown status: answered BAD_REQUEST")                                  \
	X(bad_key_len, "(c) Key length out of range: answered BAD_REQUEST")                        \
	X(bad_truncated, "(c) Shorter than its header says: answered BAD_REQUEST")                 \
	X(bad_trailing, "(c) Bytes after the message: answered BAD_REQUEST")                       \
	X(bad_keyhash, "(c) keyhash field is not XXH3-64 of the key")                              \
	X(unsupported_op, "(c) RC_ACK, DIGEST, HINT, SYNC are not served by nodes")                \
	X(too_large, "(c) Value over max_value or datagram over the MTU")                          \
	X(overloaded, "(c) Queue full: answered OVERLOADED")                                       \
	X(chunks,                                                                                  \
	  "(c) Chunks taken into an op being gathered (an op's last is counted as the op)")        \
	X(chunk_bad_header, "(c) Chunk header unreadable: total, count, or no value op")           \
	X(chunk_bad_index, "(c) Chunk index not below its count: dropped")                         \
	X(chunk_bad_length, "(c) Chunk slice not the length its index implies: dropped")           \
	X(chunk_duplicate, "(c) A chunk index the op already has: dropped")                        \
	X(chunk_mismatch, "(c) Total, count or key unlike the op's first chunk: dropped")          \
	X(chunk_overloaded, "(c) A new chunked op past node.reassembly_mb: dropped")               \
	X(chunked_ops, "Chunked ops gathered whole (then counted as one request)")                 \
	X(chunk_timeout, "Chunked ops dropped unfinished after reassembly_timeout_ms")             \
	X(chunked_replies, "Replies sent in chunks (a GET of a large value)")                      \
	X(chunks_sent, "Datagrams of chunked replies and of chunked RC_REQs")                      \
	X(chunk_gso_sends, "Sends of up to 64 chunks at once that the kernel cut (UDP GSO)")       \
	X(expired,                                                                                 \
	  "Client requests that waited in the queue past the agent timeout: dropped unserved")     \
	X(bad_payload, "Malformed payload: REPLICATE and CAS BAD_REQUEST, RC_REQ none")            \
	X(src_not_switch, "REPLICATE from no configured switch address: dropped, no reply")        \
	X(src_not_node,                                                                            \
	  "RC_REQ from no configured node, UNREPLICATE from no node nor switch: dropped")          \
	X(auth_missing, "(c) With a key: a control datagram without a MAC, dropped")               \
	X(auth_bad, "(c) With a key: a control datagram with a wrong MAC, dropped")                \
	X(auth_bad_reply,                                                                          \
	  "With a key: an RC_ACK or UNREPLICATE reply on a home's socket with no valid MAC")       \
	X(moved, "Answered MOVED")                                                                 \
	X(get, "GETs served (OK or NOT_FOUND)")                                                    \
	X(get_replica, "GETs served from the replica family")                                      \
	X(replica_miss, "REPLICA_READ with no copy here: MOVED to the home")                       \
	X(stamp_previous, "Reads stamped with the version before a write-through: served it")      \
	X(read_while_pushing,                                                                      \
	  "Home reads served the previous version while a write-through was out")                  \
	X(stamp_moved, "Reads stamped with a version not held: MOVED (a replica's to the home)")   \
	X(put, "PUTs applied")                                                                     \
	X(write_retried, "PUT/DEL retries answered from their first attempt (not re-applied)")     \
	X(retry_notified, "Of those, around the key's owner: copies dropped, the owner told")      \
	X(bypass_writes, "Writes of a replicated key not via its owner: copies dropped first")     \
	X(bypass_refused, "Such writes refused (UNAVAILABLE): a copy holder did not confirm")      \
	X(del, "DELs served")                                                                      \
	X(cas, "CASs applied (their condition held)")                                              \
	X(cas_conflict, "CASs refused: CONFLICT or NOT_FOUND (their condition did not hold)")      \
	X(probe, "PROBEs served")                                                                  \
	X(replicate, "REPLICATEs served")                                                          \
	X(replicate_skipped, "REPLICATEs whose version is not the local one: nothing pushed")      \
	X(rc_req_sent, "RC_REQs pushed to replicas")                                               \
	X(rc_req, "RC_REQs stored (or already held)")                                              \
	X(rc_req_stale, "RC_REQs older than the stored copy: ignored")                             \
	X(rc_ack_sent, "RC_ACKs sent to switches (and to homes, for write-through)")               \
	X(write_through, "Writes of a directory key pushed to its holders before the reply")       \
	X(write_through_confirmed, "Holders that confirmed such a push in time")                   \
	X(write_through_missed, "Holders that did not: left out of the reply's list")              \
	X(write_through_dropped, "Holders that answered they hold no copy: no longer pushed to")   \
	X(through_refused, "Write-through pushes for a copy not held here: answered version 0")    \
	X(through_turn_timeout, "Writes not applied: an earlier write of the key kept its turn")   \
	X(unreplicate, "UNREPLICATEs served")                                                      \
	X(store_errors, "RocksDB errors: answered INTERNAL")                                       \
	X(send_errors, "sendto() failures")                                                        \
	X(ttl_expired, "Expired values removed by the sampler")                                    \
	X(tombstones_gc, "Tombstones removed by GC")                                               \
	X(digests_sent, "DIGEST datagrams sent")

enum node_counter {
#define X(name, help) NODE_CTR_##name,
	NODE_COUNTERS(X)
#undef X
	    NODE_CTR_COUNT
};

/*
 * A queued request: its bytes (worker and queue swap buffers, no copy) and
 * origin. A chunked op gathered whole is too large for buf: it travels as
 * `owned` (reasm.h's datagram, freed by the worker that serves it, which
 * then gives its `charged` bytes back to the reassembly cap).
 */
struct node_req {
	struct sockaddr_in from;
	uint32_t len;
	uint64_t rx_ns; /* CLOCK_MONOTONIC at receipt */
	uint8_t *buf;
	uint8_t *owned;
	size_t charged;
};

/* The bytes of a queued request. */
static inline const uint8_t *node_req_data(const struct node_req *r)
{
	return r->owned ? r->owned : r->buf;
}

/* One bounded FIFO of requests. */
struct node_lane {
	struct node_req *slots;
	uint32_t depth, head, count;
};

/*
 * Between the receivers (producers: workers, and the receive thread) and the
 * workers: two FIFO lanes under one lock. Replication (REPLICATE, RC_REQ) goes in the control lane,
 * which workers empty first: a hot key's copies are refreshed after each of
 * its writes, and until they are, every read of it goes to its home, so a
 * copy must not wait behind the home's (or the replica's) whole client queue.
 */
enum node_lane_id { NODE_LANE_CONTROL, NODE_LANE_CLIENT, NODE_LANES };

struct node_queue {
	pthread_mutex_t lock;
	pthread_cond_t nonempty;
	struct node_lane lane[NODE_LANES];
	uint32_t count;	  /* both lanes */
	uint32_t waiters; /* workers asleep on nonempty */
	bool closed;
};

struct node {
	/*
	 * The config: replaced by a ring change (RING, mignet.c) with a release
	 * store; every config the process loaded is kept until it exits, so a
	 * thread still reading the previous one reads valid memory.
	 */
	const struct cfg *cfg;
	const struct cfg_node *self;
	struct mig mig; /* the ring this node routes by, and a change in progress (migrate.h) */
	bool join;	/* --join: the home of nothing until a switch's RING */
	struct store *store;
	char data_dir[CFG_MAX_PATH];
	int fd;			  /* the UDP socket (send.c): rx receives, every thread sends */
	uint32_t service_time_us; /* capacity emulation; 0 = off */
	uint32_t ack_delay_ms;	  /* fault injection: RC_ACKs held this long (tests) */
	struct dedup *dedup;	  /* recent writes by req_id: retries applied once */
	struct reasm reasm;	  /* chunked ops being gathered (by receivers, under reasm_lock) */
	pthread_mutex_t reasm_lock;
	struct through *through; /* write-through: holders and previous versions (through.h) */
	struct node_queue queue;
	_Atomic uint32_t queued;   /* mirror of queue.count, read without the lock */
	_Atomic uint32_t inflight; /* requests a worker is serving */
	_Atomic uint64_t ctr[NODE_CTR_COUNT];
	atomic_bool stop_rx; /* set by main on SIGTERM */
	atomic_bool stop_bg; /* TTL and digest threads */
	uint16_t nswitches;
	uint16_t switch_ids[CFG_MAX_SWITCHES];
	struct sockaddr_in switch_addr[CFG_MAX_SWITCHES];
	/* The cluster key (auth.key_file): with it, send.c seals every control
	 * datagram and the receivers check them (server.c, repl.c). */
	bool keyed;
	struct wire_key key;
	atomic_bool
	    gso_off; /* the kernel refused UDP GSO once: chunks go one datagram each (send.c) */
	pthread_t rx_thread, ttl_thread, report_thread, warmup_thread;
	pthread_t *workers;
	uint32_t nthreads; /* worker threads: node.workers, more with emulated capacity */
	/* [nthreads] */
	struct node_worker {
		struct node *n;
		/*
		 * CLOCK_MONOTONIC ns since the worker began serving its current
		 * batch, 0 while it receives. Written by the worker, read by the
		 * receive thread, which receives only while every worker is busy.
		 */
		_Atomic uint64_t busy_since;
	} * wk;
	/*
	 * Capacity emulation (service_time_us): node.workers emulated servers,
	 * each held by one request for its service time only (server.c). A
	 * write-through's waits then hold a thread, not a server.
	 */
	struct node_servers {
		pthread_mutex_t lock;
		pthread_cond_t freed;
		uint32_t idle;
		/* [node.workers] when each server's last request ended; UINT64_MAX: taken */
		uint64_t *free_at;
	} servers;
};

static inline void node_count(struct node *n, enum node_counter c)
{
	atomic_fetch_add_explicit(&n->ctr[c], 1, memory_order_relaxed);
}

static inline void node_count_n(struct node *n, enum node_counter c, uint64_t v)
{
	atomic_fetch_add_explicit(&n->ctr[c], v, memory_order_relaxed);
}

/* Load reported on the wire: requests in flight plus queued, capped to 16 bits. */
static inline uint16_t node_load(struct node *n)
{
	uint32_t l = atomic_load_explicit(&n->inflight, memory_order_relaxed) +
		     atomic_load_explicit(&n->queued, memory_order_relaxed);

	return l > 0xffff ? 0xffff : (uint16_t)l;
}

/*
 * The key's home when it is not this node, 0 when this node owns it: a
 * request that needs the owner is answered MOVED to that home. During a ring
 * change the home is the effective one (migrate.h); RING_NO_NODE while this
 * node has joined and not yet been told the change (nobody's home is known).
 */
static inline uint16_t node_other_home(const struct node *n, uint64_t keyhash)
{
	uint16_t home = mig_home(&n->mig, keyhash);

	if (!home)
		return RING_NO_NODE;
	return home == n->self->id ? 0 : home;
}

/* Answer MOVED: the key lives at node home; version = this node's ring epoch. */
static inline void node_reply_moved(const struct node *n, struct wire_msg *rep, uint16_t home)
{
	if (home == RING_NO_NODE) {
		rep->status = WIRE_ST_UNAVAILABLE;
		return;
	}
	rep->status = WIRE_ST_MOVED;
	rep->node = home;
	rep->version = mig_epoch(&n->mig);
}

/* Write the counters to <data_dir>/counters (name value lines) and log them in one line. */
void node_dump_counters(struct node *n);

/*
 * /metrics (stats.c): start before the threads (it also readies the latency
 * histogram); serves only when nodes[].metrics_listen is set. 0, or -1 with err.
 */
int node_metrics_start(struct node *n, char *err, size_t errlen);
void node_metrics_stop(void);
/* A request's latency, receipt to reply sent, into the histogram. Any thread. */
void node_observe_latency(uint64_t ns);

#endif
