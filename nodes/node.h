/*
 * node.h - the state of one skewless-node process, shared by its threads.
 *
 * Threads: main (start-up, then signals), the receive thread and N workers
 * (server.c), the TTL/GC thread (ttl.c) and the digest thread (report.c).
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
#include "migrate.h"
#include "ring.h"
#include "store.h"
#include "through.h"
#include "wire.h"

/*
 * Counters, VPP-style. Every received datagram lands in exactly one of the
 * classes marked (c), so rx_datagrams == their sum; docs/operations.md
 * explains each.
 */
#define NODE_COUNTERS(X)                                                                           \
	X(rx_datagrams)	     /* every datagram received */                                         \
	X(accepted)	     /* (c) queued for a worker (UNREPLICATE: served by the rx thread) */  \
	X(rx_replies)	     /* (c) a reply (op | 0x80) sent to a node: dropped */                 \
	X(drop_short)	     /* (c) header unreadable: dropped, no reply */                        \
	X(drop_bad_magic)    /* (c) */                                                             \
	X(drop_bad_version)  /* (c) */                                                             \
	X(drop_bad_op)	     /* (c) */                                                             \
	X(bad_flags)	     /* (c) answered BAD_REQUEST */                                        \
	X(bad_status)	     /* (c) */                                                             \
	X(bad_key_len)	     /* (c) */                                                             \
	X(bad_truncated)     /* (c) */                                                             \
	X(bad_trailing)	     /* (c) */                                                             \
	X(bad_keyhash)	     /* (c) keyhash field is not XXH3-64 of the key */                     \
	X(unsupported_op)    /* (c) RC_ACK, DIGEST, HINT, SYNC are not served by nodes */          \
	X(too_large)	     /* (c) value over max_value or datagram over the MTU */               \
	X(overloaded)	     /* (c) queue full: answered OVERLOADED */                             \
	X(expired)	     /* client requests that waited in the queue past the agent timeout: \
				dropped unserved, their sender has given up on them */            \
	X(bad_payload)	     /* malformed control payload: REPLICATE BAD_REQUEST, RC_REQ none */  \
	X(src_not_switch)    /* REPLICATE from no configured switch address: dropped, no reply */ \
	X(src_not_node)	     /* RC_REQ from no configured node, UNREPLICATE from no node nor \
				switch: dropped, no reply */                                      \
	X(auth_missing)	     /* (c) with a key: a control datagram without a MAC, dropped */      \
	X(auth_bad)	     /* (c) with a key: a control datagram with a wrong MAC, dropped */   \
	X(auth_bad_reply)    /* with a key: an RC_ACK or UNREPLICATE reply on a home's own \
				socket with no valid MAC: not taken as a holder's confirmation */ \
	X(moved)	     /* answered MOVED */                                                  \
	X(get)		     /* GETs served (OK or NOT_FOUND) */                                   \
	X(get_replica)	     /* of which from the replica family */                                \
	X(replica_miss)	     /* REPLICA_READ with no copy here: MOVED to the home */              \
	X(stamp_previous)    /* reads stamped with the version before a write-through: served it */ \
	X(read_while_pushing) /* home reads served the previous version while a write-through \
				 was out */                                                        \
	X(stamp_moved)	     /* reads stamped with a version not held: MOVED (a replica's to the \
				home; the home's, to a HINT's read, to no node: ask again) */     \
	X(put)		     /* PUTs applied */                                                    \
	X(write_retried)     /* PUT/DEL retry answered from its first attempt (not re-applied) */ \
	X(bypass_writes)     /* writes of a replicated key not via its owner: copies dropped first */ \
	X(bypass_refused)    /* such writes refused (UNAVAILABLE): a copy holder did not confirm */ \
	X(del)		     /* DELs served */                                                     \
	X(probe)	     /* PROBEs served */                                                   \
	X(replicate)	     /* REPLICATEs served */                                               \
	X(replicate_skipped) /* REPLICATE whose v is not the local version: nothing pushed */      \
	X(rc_req_sent)	     /* RC_REQs pushed to replicas */                                      \
	X(rc_req)	     /* RC_REQs stored (or already held) */                                \
	X(rc_req_stale)	     /* RC_REQs older than the stored copy: ignored */                     \
	X(rc_ack_sent)	     /* RC_ACKs sent to switches (and to homes, for write-through) */     \
	X(write_through)     /* writes of a directory key pushed to its holders before the reply */ \
	X(write_through_confirmed) /* holders that confirmed such a push in time */               \
	X(write_through_missed)	   /* holders that did not: left out of the reply's list */       \
	X(unreplicate)	     /* UNREPLICATEs served */                                             \
	X(store_errors)	     /* RocksDB errors: answered INTERNAL */                               \
	X(send_errors)	     /* sendto() failures */                                               \
	X(ttl_expired)	     /* expired values removed by the sampler */                           \
	X(tombstones_gc)     /* tombstones removed by GC */                                        \
	X(digests_sent)	     /* DIGEST datagrams sent */

enum node_counter {
#define X(name) NODE_CTR_##name,
	NODE_COUNTERS(X)
#undef X
	    NODE_CTR_COUNT
};

/* A queued request: its bytes (worker and queue swap buffers, no copy) and origin. */
struct node_req {
	struct sockaddr_in from;
	uint32_t len;
	uint64_t rx_ns; /* CLOCK_MONOTONIC at receipt */
	uint8_t *buf;
};

/* One bounded FIFO of requests. */
struct node_lane {
	struct node_req *slots;
	uint32_t depth, head, count;
};

/*
 * Between the receive thread (producer) and the workers: two FIFO lanes
 * under one lock. Replication (REPLICATE, RC_REQ) goes in the control lane,
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
	uint32_t ack_delay_ms;	   /* fault injection: RC_ACKs held this long (tests) */
	struct dedup *dedup;	  /* recent writes by req_id: retries applied once */
	struct through *through;  /* write-through: holders and previous versions (through.h) */
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
	pthread_t rx_thread, ttl_thread, report_thread, warmup_thread;
	pthread_t *workers;
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

#endif
