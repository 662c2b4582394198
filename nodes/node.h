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
#include "members.h"
#include "reasm.h"
#include "migrate.h"
#include "ring.h"
#include "store.h"
#include "through.h"
#include "wire.h"

/*
 * Counters, VPP-style: X(name, kind, help). Every received datagram lands in
 * exactly one counter of kind NODE_CTR_CLASS, so rx_datagrams == their sum;
 * NODE_CTR_EVENT counts anything else. The help is what /metrics says of
 * each (docs/operations.md).
 */
enum node_ctr_kind { NODE_CTR_EVENT, NODE_CTR_CLASS };

#define NODE_COUNTERS(X)                                                                           \
	X(rx_datagrams, NODE_CTR_EVENT, "Datagrams received")                                      \
	X(accepted, NODE_CTR_CLASS,                                                                \
	  "Queued for a worker (UNREPLICATE: served by its receiver at once)")                     \
	X(rx_replies, NODE_CTR_CLASS, "Replies (op | 0x80) sent to a node: dropped")               \
	X(drop_short, NODE_CTR_CLASS, "Header unreadable: dropped, no reply")                      \
	X(drop_bad_magic, NODE_CTR_CLASS, "Wrong magic: dropped")                                  \
	X(drop_bad_version, NODE_CTR_CLASS, "Unknown wire version: dropped")                       \
	X(drop_bad_op, NODE_CTR_CLASS, "Unknown op: dropped")                                      \
	X(bad_flags, NODE_CTR_CLASS, "Unknown flags: answered BAD_REQUEST")                        \
	X(bad_status, NODE_CTR_CLASS, "Unknown status: answered BAD_REQUEST")                      \
	X(bad_key_len, NODE_CTR_CLASS, "Key length out of range: answered BAD_REQUEST")            \
	X(bad_truncated, NODE_CTR_CLASS, "Shorter than its header says: answered BAD_REQUEST")     \
	X(bad_trailing, NODE_CTR_CLASS, "Bytes after the message: answered BAD_REQUEST")           \
	X(bad_keyhash, NODE_CTR_CLASS, "keyhash field is not XXH3-64 of the key")                  \
	X(unsupported_op, NODE_CTR_CLASS, "RC_ACK, DIGEST, HINT, SYNC are not served by nodes")    \
	X(too_large, NODE_CTR_CLASS, "Value over max_value or datagram over the MTU")              \
	X(overloaded, NODE_CTR_CLASS, "Queue full: answered OVERLOADED")                           \
	X(chunks, NODE_CTR_CLASS,                                                                  \
	  "Chunks taken into an op being gathered (an op's last is counted as the op)")            \
	X(chunk_bad_header, NODE_CTR_CLASS,                                                        \
	  "Chunk header unreadable: total, count, or no value op")                                 \
	X(chunk_bad_index, NODE_CTR_CLASS, "Chunk index not below its count: dropped")             \
	X(chunk_bad_length, NODE_CTR_CLASS,                                                        \
	  "Chunk slice not the length its index implies: dropped")                                 \
	X(chunk_duplicate, NODE_CTR_CLASS, "A chunk index the op already has: dropped")            \
	X(chunk_mismatch, NODE_CTR_CLASS,                                                          \
	  "Total, count or key unlike the op's first chunk: dropped")                              \
	X(chunk_overloaded, NODE_CTR_CLASS, "A new chunked op past node.reassembly_mb: dropped")   \
	X(chunked_ops, NODE_CTR_EVENT, "Chunked ops gathered whole (then counted as one request)") \
	X(chunk_timeout, NODE_CTR_EVENT,                                                           \
	  "Chunked ops dropped unfinished after reassembly_timeout_ms")                            \
	X(chunked_replies, NODE_CTR_EVENT, "Replies sent in chunks (a GET of a large value)")      \
	X(chunks_sent, NODE_CTR_EVENT, "Datagrams of chunked replies and of chunked RC_REQs")      \
	X(chunk_gso_sends, NODE_CTR_EVENT,                                                         \
	  "Sends of up to 64 chunks at once that the kernel cut (UDP GSO)")                        \
	X(expired, NODE_CTR_EVENT,                                                                 \
	  "Client requests that waited in the queue past the agent timeout: dropped unserved")     \
	X(bad_payload, NODE_CTR_EVENT,                                                             \
	  "Malformed payload: REPLICATE and CAS BAD_REQUEST, RC_REQ none")                         \
	X(src_not_switch, NODE_CTR_EVENT,                                                          \
	  "REPLICATE from no configured switch address: dropped, no reply")                        \
	X(src_not_node, NODE_CTR_EVENT,                                                            \
	  "RC_REQ from no configured node, UNREPLICATE from no node nor switch: dropped")          \
	X(auth_missing, NODE_CTR_CLASS, "With a key: a control datagram without a MAC, dropped")   \
	X(auth_bad, NODE_CTR_CLASS, "With a key: a control datagram with a wrong MAC, dropped")    \
	X(auth_bad_reply, NODE_CTR_EVENT,                                                          \
	  "With a key: an RC_ACK or UNREPLICATE reply on a home's socket with no valid MAC")       \
	X(moved, NODE_CTR_EVENT, "Answered MOVED")                                                 \
	X(get, NODE_CTR_EVENT, "GETs served (OK or NOT_FOUND)")                                    \
	X(get_replica, NODE_CTR_EVENT, "GETs served from the replica family")                      \
	X(replica_miss, NODE_CTR_EVENT, "REPLICA_READ with no copy here: MOVED to the home")       \
	X(stamp_previous, NODE_CTR_EVENT,                                                          \
	  "Reads stamped with the version before a write-through: served it")                      \
	X(read_while_pushing, NODE_CTR_EVENT,                                                      \
	  "Home reads served the previous version while a write-through was out")                  \
	X(stamp_moved, NODE_CTR_EVENT,                                                             \
	  "Reads stamped with a version not held: MOVED (a replica's to the home)")                \
	X(put, NODE_CTR_EVENT, "PUTs applied")                                                     \
	X(write_retried, NODE_CTR_EVENT,                                                           \
	  "PUT/DEL retries answered from their first attempt (not re-applied)")                    \
	X(retry_notified, NODE_CTR_EVENT,                                                          \
	  "Of those, around the key's owner: copies dropped, the owner told")                      \
	X(bypass_writes, NODE_CTR_EVENT,                                                           \
	  "Writes of a replicated key not via its owner: copies dropped first")                    \
	X(bypass_refused, NODE_CTR_EVENT,                                                          \
	  "Such writes refused (UNAVAILABLE): a copy holder did not confirm")                      \
	X(del, NODE_CTR_EVENT, "DELs served")                                                      \
	X(cas, NODE_CTR_EVENT, "CASs applied (their condition held)")                              \
	X(cas_conflict, NODE_CTR_EVENT,                                                            \
	  "CASs refused: CONFLICT or NOT_FOUND (their condition did not hold)")                    \
	X(probe, NODE_CTR_EVENT, "PROBEs served")                                                  \
	X(replicate, NODE_CTR_EVENT, "REPLICATEs served")                                          \
	X(replicate_skipped, NODE_CTR_EVENT,                                                       \
	  "REPLICATEs whose version is not the local one: nothing pushed")                         \
	X(rc_req_sent, NODE_CTR_EVENT, "RC_REQs pushed to replicas")                               \
	X(rc_req, NODE_CTR_EVENT, "RC_REQs stored (or already held)")                              \
	X(rc_req_stale, NODE_CTR_EVENT, "RC_REQs older than the stored copy: ignored")             \
	X(rc_ack_sent, NODE_CTR_EVENT,                                                             \
	  "RC_ACKs sent to switches (and to homes, for write-through)")                            \
	X(write_through, NODE_CTR_EVENT,                                                           \
	  "Writes of a directory key pushed to its holders before the reply")                      \
	X(write_through_confirmed, NODE_CTR_EVENT, "Holders that confirmed such a push in time")   \
	X(write_through_missed, NODE_CTR_EVENT,                                                    \
	  "Holders that did not: left out of the reply's list")                                    \
	X(write_through_dropped, NODE_CTR_EVENT,                                                   \
	  "Holders that answered they hold no copy: no longer pushed to")                          \
	X(through_refused, NODE_CTR_EVENT,                                                         \
	  "Write-through pushes for a copy not held here: answered version 0")                     \
	X(write_riders, NODE_CTR_EVENT,                                                            \
	  "PUTs applied riding on the turn of another write of their key (group commit)")          \
	X(switch_riders, NODE_CTR_EVENT,                                                           \
	  "Writes a switch held and a PUT from it superseded: versions given, nothing stored")     \
	X(through_turn_timeout, NODE_CTR_EVENT,                                                    \
	  "Writes not applied: an earlier write of the key kept its turn")                         \
	X(unreplicate, NODE_CTR_EVENT, "UNREPLICATEs served")                                      \
	X(store_errors, NODE_CTR_EVENT, "RocksDB errors: answered INTERNAL")                       \
	X(send_errors, NODE_CTR_EVENT, "sendto() failures")                                        \
	X(ttl_expired, NODE_CTR_EVENT, "Expired values removed by the sampler")                    \
	X(tombstones_gc, NODE_CTR_EVENT, "Tombstones removed by GC")                               \
	X(digests_sent, NODE_CTR_EVENT, "DIGEST datagrams sent")                                   \
	X(member_pushes, NODE_CTR_EVENT, "Records pushed to a member of their group (MEMBER)")     \
	X(member_push_failed, NODE_CTR_EVENT,                                                      \
	  "Of those, not confirmed: the write was answered UNAVAILABLE")                           \
	X(member_behind, NODE_CTR_EVENT,                                                           \
	  "Keys marked behind: served here again only once a push of them is confirmed")           \
	X(member_behind_full, NODE_CTR_EVENT,                                                      \
	  "Keys that could not be marked behind: their set of marks was full")                     \
	X(member_repaired, NODE_CTR_EVENT,                                                         \
	  "Keys behind pushed again by a read of them and confirmed")                              \
	X(repair_notified, NODE_CTR_EVENT,                                                         \
	  "Of those, with copies: copies dropped, the owner told (no switch saw the write)")       \
	X(lease_refused, NODE_CTR_EVENT,                                                           \
	  "Reads this node refused as primary or member: its view lease had ended (and, as "       \
	  "primary, its group could not confirm its view)")                                        \
	X(reads_confirmed, NODE_CTR_EVENT,                                                         \
	  "Reads served as primary without a view lease: every other live member of the group "    \
	  "answered that it holds no newer view")                                                  \
	X(member_stored, NODE_CTR_EVENT, "MEMBER pushes taken (stored, or a newer one held)")      \
	X(member_refused, NODE_CTR_EVENT,                                                          \
	  "MEMBER pushes refused UNAVAILABLE: an older view, or no room to mark them dirty")       \
	X(member_commits, NODE_CTR_EVENT, "COMMITs taken: keys clean again at this member")        \
	X(member_reads, NODE_CTR_EVENT, "Reads of a clean key served as a member of its group")    \
	X(catchup_served, NODE_CTR_EVENT, "Records sent to a node catching up")                    \
	X(catchup_records, NODE_CTR_EVENT, "Records this node took while catching up")             \
	X(catchup_dropped, NODE_CTR_EVENT,                                                         \
	  "Records this node dropped while catching up: their primary no longer held them")

enum node_counter {
#define X(name, kind, help) NODE_CTR_##name,
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
	struct members members;	 /* replica groups: the view, catch-up (members.h) */
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
	atomic_bool gso_off; /* the kernel refused UDP GSO once: chunks go one datagram each (send.c) */
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
 * request that needs the owner is answered MOVED to that home. With
 * replica groups, the key's primary (members.h), under the view lock, for
 * `use`. During a ring change the home is the effective one (migrate.h);
 * RING_NO_NODE while this node has joined and not yet been told the change
 * (nobody's home is known).
 */
static inline uint16_t node_home_for(struct node *n, uint64_t keyhash, enum members_use use)
{
	uint16_t home;

	if (members_on(&n->members))
		return members_other(n, keyhash, use);
	home = mig_home(&n->mig, keyhash);

	if (!home)
		return RING_NO_NODE;
	return home == n->self->id ? 0 : home;
}

/* For a copy of the key's version (REPLICATE). */
static inline uint16_t node_other_home(struct node *n, uint64_t keyhash)
{
	return node_home_for(n, keyhash, MEMBERS_READ);
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
