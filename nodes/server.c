/*
 * server.c - the request path of skewless-node.
 *
 * The workers receive: a worker with nothing queued blocks in recvmmsg() on
 * the node's socket, validates what a burst brings and either answers it at
 * once (BAD_REQUEST, TOO_LARGE, OVERLOADED: cheap, so malformed input never
 * reaches RocksDB) or puts it on the bounded queue; then it serves up to a
 * batch from the queue (the control lane first) and sends the replies in one
 * sendmmsg(). Between batches it takes in, without waiting, whatever else
 * has arrived, so that the queue (its depth, OVERLOADED, the load, the
 * expiry) sees every request the node holds. A request is mostly served by
 * the thread that received it: no hand-off, no wake-up, on a machine with
 * fewer cores than threads. While every worker is busy (a RocksDB stall, a
 * write waiting on other nodes) the receive thread takes over receiving, so
 * UNREPLICATE is still served and overload still answered. With emulated
 * capacity, the receive thread alone receives and the workers only serve.
 * Load = in flight + queued.
 */
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "chunk.h"
#include "clock.h"
#include "keyhash.h"
#include "log.h"
#include "mignet.h"
#include "payload.h"
#include "ringmsg.h"
#include "repl.h"
#include "report.h"
#include "send.h"

/* ---- bounded queue ---- */

static int lane_init(struct node_lane *l, uint32_t depth, uint32_t slot_cap)
{
	l->slots = calloc(depth, sizeof(*l->slots));
	if (!l->slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < depth; i++) {
		l->slots[i].buf = malloc(slot_cap);
		if (!l->slots[i].buf)
			return -ENOMEM;
	}
	l->depth = depth;
	return 0;
}

static void lane_free(struct node_lane *l)
{
	for (uint32_t i = 0; l->slots && i < l->depth; i++)
		free(l->slots[i].buf);
	free(l->slots);
	l->slots = NULL;
}

/* The lane of a queued op, as the op table (proto/ops.h) has it. */
static enum node_lane_id lane_of(uint8_t op)
{
	return wire_op_lane(op) == WIRE_LANE_CONTROL ? NODE_LANE_CONTROL : NODE_LANE_CLIENT;
}

/* Each lane holds depth requests (node.queue_depth). */
static int queue_init(struct node_queue *q, uint32_t depth, uint32_t slot_cap)
{
	for (int i = 0; i < NODE_LANES; i++)
		if (lane_init(&q->lane[i], depth, slot_cap) != 0)
			return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->nonempty, NULL);
	return 0;
}

static void queue_free(struct node_queue *q)
{
	for (int l = 0; l < NODE_LANES; l++)
		lane_free(&q->lane[l]);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->nonempty);
}

/*
 * Copy a datagram into the tail slot, or with owned set, hand over that
 * buffer instead (a chunked op gathered whole; its charged bytes go with
 * it). Returns 0, or -ENOSPC when the queue is full (owned stays the
 * caller's).
 */
static int queue_push(struct node *n, enum node_lane_id lane, const struct sockaddr_in *from,
		      const void *buf, uint32_t len, uint64_t rx_ns, uint8_t *owned, size_t charged)
{
	struct node_queue *q = &n->queue;
	struct node_lane *l = &q->lane[lane];

	pthread_mutex_lock(&q->lock);
	if (l->count == l->depth) {
		pthread_mutex_unlock(&q->lock);
		return -ENOSPC;
	}
	struct node_req *s = &l->slots[(l->head + l->count) % l->depth];

	s->from = *from;
	s->len = len;
	s->rx_ns = rx_ns;
	s->owned = owned;
	s->charged = charged;
	if (!owned)
		memcpy(s->buf, buf, len);
	l->count++;
	q->count++;
	atomic_fetch_add(&n->queued, 1);
	/* Wake a worker only if one sleeps: busy workers find the request themselves. */
	if (q->waiters)
		pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/*
 * Take up to max requests from the head into out[], swapping buffers with
 * them so each slot keeps a buffer. With wait, blocks while empty; returns
 * the number taken, or 0 once closed and drained (without wait: when empty).
 * Requests move from queued to in flight under the lock, so the load never
 * misses them.
 */
static uint32_t queue_pop(struct node *n, struct node_req *out, uint32_t max, bool wait)
{
	struct node_queue *q = &n->queue;
	uint32_t k = 0;

	if (!wait && atomic_load_explicit(&n->queued, memory_order_relaxed) == 0)
		return 0;
	pthread_mutex_lock(&q->lock);
	while (wait && q->count == 0 && !q->closed) {
		q->waiters++;
		pthread_cond_wait(&q->nonempty, &q->lock);
		q->waiters--;
	}
	/* The control lane first (node.h). */
	for (int lane = 0; lane < NODE_LANES; lane++) {
		struct node_lane *l = &q->lane[lane];

		while (k < max && l->count > 0) {
			struct node_req *s = &l->slots[l->head];
			uint8_t *mine = out[k].buf;

			out[k] = *s;
			s->buf = mine;
			s->owned = NULL;
			l->head = (l->head + 1) % l->depth;
			l->count--;
			q->count--;
			k++;
		}
	}
	atomic_fetch_add(&n->inflight, k);
	atomic_fetch_sub(&n->queued, k);
	pthread_mutex_unlock(&q->lock);
	return k;
}

static void queue_close(struct node_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = true;
	pthread_cond_broadcast(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
}

/* ---- replies ---- */

/* A reply skeleton that echoes what the switch and the agent match on. */
static void reply_init(struct node *n, const struct wire_msg *m, struct wire_msg *rep)
{
	memset(rep, 0, sizeof(*rep));
	rep->op = (uint8_t)(m->op | WIRE_REPLY);
	/* A home sets WRITE_THROUGH; a reply is sent whole or chunked anew. */
	rep->flags = m->flags & WIRE_F_ALL & ~(WIRE_F_WRITE_THROUGH | WIRE_F_CHUNK);
	rep->req_id = m->req_id;
	rep->keyhash = m->keyhash;
	rep->node = n->self->id;
	rep->ret_ip = m->ret_ip;
	rep->ret_port = m->ret_port;
	rep->key = m->key;
	rep->key_len = m->key_len;
}

/* Encode rep into out; returns its length, or 0 when it cannot be encoded. */
static size_t reply_encode(struct node *n, struct wire_msg *rep, uint8_t *out, size_t cap)
{
	int len;

	rep->load = node_load(n);
	len = wire_encode(rep, out, cap);
	if (len < 0) {
		log_warn("cannot encode %s reply: %s", wire_op_name(rep->op), strerror(-len));
		return 0;
	}
	return (size_t)len;
}

/*
 * Answer a request the receive thread rejects. Its body may be unreadable,
 * so the header is written by hand: the key is echoed only when it lies
 * inside the datagram, otherwise key_len is 0 (a client reads such a reply
 * with wire_decode_header()).
 */
static void reply_reject(struct node *n, const struct sockaddr_in *to, const uint8_t *buf,
			 size_t len, const struct wire_msg *m, uint8_t status, uint8_t *out)
{
	uint16_t klen = m->key_len;
	size_t total;

	if (klen == 0 || klen > WIRE_MAX_KEY || len < (size_t)WIRE_HDR_LEN + klen)
		klen = 0;
	total = WIRE_HDR_LEN + klen;
	memset(out, 0, WIRE_HDR_LEN);
	wire_put16(out + WIRE_OFF_MAGIC, WIRE_MAGIC);
	out[WIRE_OFF_VER] = WIRE_VERSION;
	out[WIRE_OFF_OP] = (uint8_t)(m->op | WIRE_REPLY);
	wire_put16(out + WIRE_OFF_FLAGS, m->flags & WIRE_F_ALL & ~WIRE_F_CHUNK);
	out[WIRE_OFF_STATUS] = status;
	wire_put64(out + WIRE_OFF_REQ_ID, m->req_id);
	wire_put64(out + WIRE_OFF_KEYHASH, m->keyhash);
	wire_put16(out + WIRE_OFF_NODE, n->self->id);
	wire_put16(out + WIRE_OFF_LOAD, node_load(n));
	wire_put32(out + WIRE_OFF_RET_IP, m->ret_ip);
	wire_put16(out + WIRE_OFF_RET_PORT, m->ret_port);
	wire_put16(out + WIRE_OFF_KEY_LEN, klen);
	memcpy(out + WIRE_HDR_LEN, buf + WIRE_HDR_LEN, klen);
	node_send(n, to, out, total);
}

/* ---- receive thread ---- */

static enum node_counter drop_counter(enum wire_error e)
{
	switch (e) {
	case WIRE_ERR_SHORT:
		return NODE_CTR_drop_short;
	case WIRE_ERR_MAGIC:
		return NODE_CTR_drop_bad_magic;
	case WIRE_ERR_VERSION:
		return NODE_CTR_drop_bad_version;
	case WIRE_ERR_OP:
		return NODE_CTR_drop_bad_op;
	case WIRE_ERR_FLAGS:
		return NODE_CTR_bad_flags;
	case WIRE_ERR_STATUS:
		return NODE_CTR_bad_status;
	case WIRE_ERR_KEY_LEN:
		return NODE_CTR_bad_key_len;
	case WIRE_ERR_TRUNCATED:
		return NODE_CTR_bad_truncated;
	default:
		return NODE_CTR_bad_trailing;
	}
}

static bool handle(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		   struct wire_msg *rep, uint8_t *out, size_t cap);

/* Is a value of val_len (a whole op's, chunked or not) too large for op? */
static bool value_too_large(const struct node *n, uint8_t op, uint64_t val_len)
{
	uint32_t max_value = n->cfg->service.max_value;

	if (op == WIRE_OP_RC_REQ)
		return val_len > (uint64_t)max_value + WIRE_RC_PREFIX_LEN;
	if (op == WIRE_OP_MIGRATE)
		return val_len > (uint64_t)max_value + WIRE_MIG_PREFIX_MAX;
	if (op == WIRE_OP_CAS)
		return val_len > (uint64_t)max_value + WIRE_CAS_PREFIX_LEN;
	return op == WIRE_OP_PUT && val_len > max_value;
}

/* Is a valid datagram (or chunk) of len bytes too large for this node? */
static bool too_large(const struct node *n, const struct wire_msg *m, size_t len)
{
	if (len > NODE_MAX_DGRAM || len + WIRE_IP_UDP_LEN > n->cfg->service.mtu)
		return true;
	return !(m->flags & WIRE_F_CHUNK) && value_too_large(n, m->op, m->val_len);
}

/* Whether `from` is a switch's address (its VIP). */
static bool from_switch(const struct node *n, const struct sockaddr_in *from)
{
	uint32_t ip = ntohl(from->sin_addr.s_addr);

	for (int i = 0; i < n->cfg->nswitches; i++)
		if (n->cfg->switches[i].vip == ip)
			return true;
	return false;
}

/*
 * Whether a control op may come from `from`: the op table's `by` column names
 * who sends it, and the config where they are. Addresses only, not ports: a
 * home's UNREPLICATE comes from a socket of its own (repl.c). Ops that agents
 * send are taken from anyone. The fabric's source addresses are trusted
 * (docs/operations.md, "Threat model").
 */
static enum node_counter source_check(const struct node *n, uint8_t op,
				      const struct sockaddr_in *from)
{
	unsigned by = wire_op_senders(op);
	uint32_t ip = ntohl(from->sin_addr.s_addr);

	if (by & WIRE_BY_AGENT)
		return NODE_CTR_COUNT;
	if ((by & (WIRE_BY_SWITCH | WIRE_BY_PEER)) && from_switch(n, from))
		return NODE_CTR_COUNT;
	if (by & WIRE_BY_NODE)
		for (int i = 0; i < n->cfg->nnodes; i++)
			if (n->cfg->nodes[i].ip == ip)
				return NODE_CTR_COUNT;
	return (by & WIRE_BY_NODE) ? NODE_CTR_src_not_node : NODE_CTR_src_not_switch;
}

/* A chunk's drop counter for a chunk header wire_chunk_decode() refused. */
static enum node_counter chunk_counter(enum wire_chunk_error e)
{
	switch (e) {
	case WIRE_CHUNK_ERR_INDEX:
		return NODE_CTR_chunk_bad_index;
	case WIRE_CHUNK_ERR_LENGTH:
		return NODE_CTR_chunk_bad_length;
	default:
		return NODE_CTR_chunk_bad_header;
	}
}

/*
 * One chunk of an op (docs/protocol.md, "Chunked operations"), validated as
 * a datagram and from an accepted source: gather it; once the op is whole,
 * queue it as one request. Bad chunks are counted and dropped; the op's
 * chunk 0 alone is answered (TOO_LARGE, OVERLOADED), so an op gets at most
 * one such answer and a switch counts it once.
 */
static void rx_chunk(struct node *n, const struct sockaddr_in *from, const uint8_t *buf, size_t len,
		     const struct wire_msg *m, uint64_t now, uint8_t *out)
{
	struct reasm_key key = {
	    .client_ip = m->ret_ip ? m->ret_ip : ntohl(from->sin_addr.s_addr),
	    .client_port = m->ret_ip ? m->ret_port : ntohs(from->sin_port),
	    .op = m->op,
	    .req_id = m->req_id,
	    .keyhash = m->keyhash,
	};
	struct wire_chunk c;
	enum wire_chunk_error err;
	struct wire_msg whole;
	uint8_t *done = NULL;
	size_t done_len = 0, charged = 0;

	err =
	    (wire_op_attrs(m->op) & WIRE_A_VALUE) ? wire_chunk_decode(m, &c) : WIRE_CHUNK_ERR_SHORT;
	if (err != WIRE_CHUNK_OK) {
		node_count(n, chunk_counter(err));
		return;
	}
	if (value_too_large(n, m->op, c.total)) {
		node_count(n, NODE_CTR_too_large);
		if (c.index == 0)
			reply_reject(n, from, buf, len, m, WIRE_ST_TOO_LARGE, out);
		return;
	}
	pthread_mutex_lock(&n->reasm_lock);
	enum reasm_result res = reasm_add(&n->reasm, &key, m, &c, now, &done, &done_len, &charged);

	pthread_mutex_unlock(&n->reasm_lock);
	switch (res) {
	case REASM_PARTIAL:
		node_count(n, NODE_CTR_chunks);
		return;
	case REASM_DUPLICATE:
		node_count(n, NODE_CTR_chunk_duplicate);
		return;
	case REASM_MISMATCH:
		node_count(n, NODE_CTR_chunk_mismatch);
		return;
	case REASM_FULL:
	case REASM_NOMEM:
		node_count(n, NODE_CTR_chunk_overloaded);
		if (c.index == 0)
			reply_reject(n, from, buf, len, m, WIRE_ST_OVERLOADED, out);
		return;
	case REASM_COMPLETE:
		break;
	}
	node_count(n, NODE_CTR_chunked_ops);
	if (wire_decode(done, done_len, &whole) != WIRE_OK ||
	    wire_op_lane(whole.op) == WIRE_LANE_RX ||
	    queue_push(n, lane_of(whole.op), from, NULL, (uint32_t)done_len, now, done, charged) !=
		0) {
		/* A full queue (gathered ops are never served on receipt: no op with a
		 * value is). The answer goes as for a whole datagram. */
		node_count(n, NODE_CTR_overloaded);
		reply_reject(n, from, buf, len, m, WIRE_ST_OVERLOADED, out);
		free(done);
		reasm_release(&n->reasm, charged);
		return;
	}
	node_count(n, NODE_CTR_accepted);
}

/*
 * With a key, a control datagram must come from an address the config names
 * for its op (checked first, so a stranger's datagram costs no HMAC) and
 * carry a valid MAC; true when it may go on, *len then without the trailer.
 * Dropped ones get no reply. A length that fits neither form goes on as it
 * is, for wire_decode() to name.
 */
static bool authentic(struct node *n, const struct sockaddr_in *from, const uint8_t *buf,
		      size_t *len, uint8_t op)
{
	enum node_counter foreign = source_check(n, op, from);
	size_t body;

	if (foreign != NODE_CTR_COUNT) {
		node_count(n, foreign);
		return false;
	}
	switch (wire_auth_check(&n->key, buf, *len, &body)) {
	case WIRE_AUTH_OK:
		*len = body;
		return true;
	case WIRE_AUTH_MISSING:
		node_count(n, NODE_CTR_auth_missing);
		return false;
	case WIRE_AUTH_BAD:
		node_count(n, NODE_CTR_auth_bad);
		return false;
	default:
		return true;
	}
}

/* This node's own address (and port). */
static void self_addr(const struct node *n, struct sockaddr_in *a)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(n->self->ip);
	a->sin_port = htons(n->self->port);
}

static bool is_self(const struct node *n, const struct sockaddr_in *from)
{
	return from->sin_addr.s_addr == htonl(n->self->ip) &&
	       from->sin_port == htons(n->self->port);
}

/* Classify one datagram: answer it at once, or queue it for a worker. */
static void rx_one(struct node *n, const struct sockaddr_in *from, const uint8_t *buf, size_t len,
		   uint64_t now, uint8_t *out)
{
	struct wire_msg m;
	enum wire_error err;
	enum node_counter foreign;

	if (len == 0 && is_self(n, from))
		return; /* the receive thread's wake-up (rx_main()) */
	node_count(n, NODE_CTR_rx_datagrams);
	err = wire_decode_header(buf, len, &m);
	if (err != WIRE_OK) {
		node_count(n, drop_counter(err));
		return;
	}
	if (m.op & WIRE_REPLY) {
		node_count(n, NODE_CTR_rx_replies);
		return;
	}
	if (n->keyed && wire_op_authenticated(m.op) && !authentic(n, from, buf, &len, m.op))
		return;
	err = wire_decode(buf, len, &m);
	if (err != WIRE_OK) {
		node_count(n, drop_counter(err));
		reply_reject(n, from, buf, len, &m, WIRE_ST_BAD_REQUEST, out);
		return;
	}
	if (wire_op_lane(m.op) == WIRE_LANE_NONE) {
		node_count(n, NODE_CTR_unsupported_op);
		reply_reject(n, from, buf, len, &m, WIRE_ST_BAD_REQUEST, out);
		return;
	}
	foreign = source_check(n, m.op, from);
	if (foreign != NODE_CTR_COUNT) {
		node_count(n, foreign); /* no reply: a spoofer learns nothing */
		return;
	}
	/* Keyless ops (RING) carry no keyhash. */
	if (m.key_len && keyhash(m.key, m.key_len) != m.keyhash) {
		node_count(n, NODE_CTR_bad_keyhash);
		reply_reject(n, from, buf, len, &m, WIRE_ST_BAD_REQUEST, out);
		return;
	}
	if (too_large(n, &m, len)) {
		node_count(n, NODE_CTR_too_large);
		reply_reject(n, from, buf, len, &m, WIRE_ST_TOO_LARGE, out);
		return;
	}
	if (m.flags & WIRE_F_CHUNK) {
		rx_chunk(n, from, buf, len, &m, now, out);
		return;
	}
	if (wire_op_lane(m.op) == WIRE_LANE_RX) {
		/*
		 * UNREPLICATE is served here, never queued: a home applying a write
		 * that bypassed the owner waits in a worker for these confirmations
		 * (repl.c), and two homes whose workers all wait on each other's
		 * queues would stall.
		 */
		struct wire_msg rep;
		size_t rlen = 0;

		node_count(n, NODE_CTR_accepted);
		reply_init(n, &m, &rep);
		/* No value in an UNREPLICATE reply: out holds a header and the key. */
		if (handle(n, &m, from, &rep, NULL, 0))
			rlen = reply_encode(n, &rep, out, WIRE_HDR_LEN + WIRE_MAX_KEY);
		if (rlen)
			node_send(n, from, out, rlen);
		return;
	}
	if (queue_push(n, lane_of(m.op), from, buf, (uint32_t)len, now, NULL, 0) != 0) {
		node_count(n, NODE_CTR_overloaded);
		reply_reject(n, from, buf, len, &m, WIRE_ST_OVERLOADED, out);
		return;
	}
	node_count(n, NODE_CTR_accepted);
}

/* Datagrams per recvmmsg(): fewer system calls under load, no added wait when idle. */
#define RX_BATCH 32

/* A receiver's buffers: a burst of datagrams and room for a rejection. */
struct rx_ctx {
	uint8_t *bufs;
	uint8_t *out;
	struct mmsghdr msgs[RX_BATCH];
	struct iovec iov[RX_BATCH];
	struct sockaddr_in from[RX_BATCH];
};

static int rx_init(struct rx_ctx *rx)
{
	rx->bufs = malloc((size_t)RX_BATCH * (WIRE_MAX_DATAGRAM + 1));
	rx->out = malloc(WIRE_HDR_LEN + WIRE_MAX_KEY);
	return rx->bufs && rx->out ? 0 : -ENOMEM;
}

static void rx_free(struct rx_ctx *rx)
{
	free(rx->bufs);
	free(rx->out);
}

/* Chunked ops unfinished past their timeout: dropped. */
static void rx_expire(struct node *n, uint64_t now)
{
	pthread_mutex_lock(&n->reasm_lock);
	node_count_n(n, NODE_CTR_chunk_timeout, reasm_expire(&n->reasm, now));
	pthread_mutex_unlock(&n->reasm_lock);
}

/*
 * Receive one burst and classify it (rx_one()): with wait, block until a
 * datagram comes (or the socket's 100 ms timeout passes), else take only
 * what is there. Returns how many datagrams came.
 */
static int rx_burst(struct node *n, struct rx_ctx *rx, bool wait)
{
	int got;

	for (int i = 0; i < RX_BATCH; i++) {
		rx->iov[i].iov_base = rx->bufs + (size_t)i * (WIRE_MAX_DATAGRAM + 1);
		rx->iov[i].iov_len = WIRE_MAX_DATAGRAM + 1;
		memset(&rx->msgs[i].msg_hdr, 0, sizeof(rx->msgs[i].msg_hdr));
		rx->msgs[i].msg_hdr.msg_iov = &rx->iov[i];
		rx->msgs[i].msg_hdr.msg_iovlen = 1;
		rx->msgs[i].msg_hdr.msg_name = &rx->from[i];
		rx->msgs[i].msg_hdr.msg_namelen = sizeof(rx->from[i]);
	}
	got = recvmmsg(n->fd, rx->msgs, RX_BATCH, wait ? MSG_WAITFORONE : MSG_DONTWAIT, NULL);
	if (got < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			log_warn("recvmmsg: %s", strerror(errno));
		/* Idle (the socket's 100 ms timeout): unfinished ops still expire. */
		if (wait)
			rx_expire(n, clock_mono_ns());
		return 0;
	}
	uint64_t now = clock_mono_ns();

	for (int i = 0; i < got; i++)
		rx_one(n, &rx->from[i], rx->iov[i].iov_base, rx->msgs[i].msg_len, now, rx->out);
	rx_expire(n, now);
	return got;
}

/*
 * How long every worker must have been serving its batch before the
 * receive thread receives in their place: far above a batch of reads or
 * writes (tens of microseconds), far below an agent's timeout.
 */
#define RX_STANDBY_NS 1000000ull

/* Whether every worker has been serving one batch for RX_STANDBY_NS or more. */
static bool workers_stuck(struct node *n, uint64_t now)
{
	for (uint32_t i = 0; i < n->nthreads; i++) {
		uint64_t since = atomic_load_explicit(&n->wk[i].busy_since, memory_order_relaxed);

		if (since == 0 || now - since < RX_STANDBY_NS)
			return false;
	}
	return true;
}

/*
 * The receive thread. With emulated capacity it receives for the workers.
 * Otherwise it stands by: every millisecond it looks whether the workers are
 * all stuck in a batch, and then receives for them until one is free. A
 * home whose workers all wait for other nodes' UNREPLICATE confirmations
 * then still serves the UNREPLICATEs sent to it (two such homes would
 * otherwise wait on each other), and answers OVERLOADED once its queue fills.
 * What it queued, a worker freed meanwhile may not see: it went back to
 * waiting in recvmmsg() while the queue was still empty. An empty datagram
 * to the node's own socket wakes one such worker, which then drains the
 * queue before it waits again.
 */
static void *rx_main(void *arg)
{
	struct node *n = arg;
	struct rx_ctx rx;
	struct sockaddr_in self;
	const struct timespec tick = {.tv_sec = 0, .tv_nsec = (long)RX_STANDBY_NS};

	self_addr(n, &self);
	if (rx_init(&rx) != 0) {
		log_error("receive thread: out of memory");
		rx_free(&rx);
		return NULL;
	}
	while (!atomic_load(&n->stop_rx)) {
		if (n->service_time_us) {
			rx_burst(n, &rx, true);
			continue;
		}
		nanosleep(&tick, NULL);
		bool took = false;

		while (!atomic_load(&n->stop_rx) && workers_stuck(n, clock_mono_ns()) &&
		       rx_burst(n, &rx, false) > 0)
			took = true;
		if (took && atomic_load(&n->queued) > 0)
			node_send(n, &self, "", 0);
	}
	rx_free(&rx);
	return NULL;
}

/* ---- workers ---- */

/* Fill rep for a request that failed in the store. */
static void store_failed(struct node *n, struct wire_msg *rep, int rc)
{
	node_count(n, NODE_CTR_store_errors);
	log_warn("store error on %s: %s", wire_op_name(rep->op), strerror(-rc));
	rep->status = WIRE_ST_INTERNAL;
	rep->val_len = 0;
}

/*
 * How many previous versions a stamped GET may be served from (through.h):
 * any kept when the switch stamped it, only the newest for a HINT's stamp.
 */
static unsigned stamp_depth(const struct wire_msg *m)
{
	return (m->flags & WIRE_F_VIA_SWITCH) ? THROUGH_PREVIOUS : 1;
}

/*
 * The version a GET gets at the home, when not the stored one (rec):
 * 1 with rec (and its value in val) replaced, 0 to serve rec as it is, -1 to
 * answer MOVED to no node ("ask the switch again").
 *  - Stamped with a kept previous version (docs/design.md section 5,
 *    "Write-through"; stamp_depth()) by the switch the versions were kept
 *    for, or by a HINT: that one. Another switch's stamp (a peer that lost
 *    its lease, or has not handed a key back yet) has not seen the writes
 *    through the owner, and gets what an unstamped read gets.
 *  - Stamped by a HINT (a direct read: no switch sees the reply) with a
 *    version the home no longer has: nothing else is safe to serve.
 *  - Otherwise what any read gets there: while a write-through of the key is
 *    out, the previous version, which the switch still stamps its reads
 *    with; else the stored one (a newer version through the switch is that
 *    write's completion there: "Defence in depth"). Served to a read the
 *    kept versions' switch does not see, it makes that switch's stamps of
 *    older versions stale: they are forgotten (through_home_read()).
 */
static int home_version(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
			struct store_record *rec, uint8_t *val, size_t cap)
{
	bool via_switch = m->flags & WIRE_F_VIA_SWITCH;
	uint16_t sender = via_switch ? repl_switch_id(n, from) : 0;

	if (m->version &&
	    through_previous(n->through, m->keyhash, m->version, stamp_depth(m),
			     via_switch ? sender : THROUGH_ANY_SWITCH, rec, val, cap)) {
		node_count(n, NODE_CTR_stamp_previous);
		return 1;
	}
	if (m->version && !via_switch) {
		node_count(n, NODE_CTR_stamp_moved);
		return -1;
	}
	if (through_home_read(n->through, m->keyhash, sender, rec, val, cap)) {
		node_count(n, NODE_CTR_read_while_pushing);
		return 1;
	}
	return 0;
}

/*
 * Whether a replica holds the version a GET is stamped with: its copy, or
 * one of the copy's previous versions (rec replaced; stamp_depth()). A GET
 * without a stamp takes the copy.
 */
static bool replica_version(struct node *n, const struct wire_msg *m, struct store_record *rec,
			    uint8_t *val, size_t cap)
{
	if (!m->version || rec->version == m->version)
		return true;
	if (through_previous(n->through, m->keyhash, m->version, stamp_depth(m), THROUGH_ANY_SWITCH,
			     rec, val, cap)) {
		node_count(n, NODE_CTR_stamp_previous);
		return true;
	}
	node_count(n, NODE_CTR_stamp_moved);
	return false;
}

/*
 * Replica groups: a read stamped with a version this node's copy lacks is
 * served when the node holds exactly that version as a member of the key's
 * group (a version names one write of the key: it is that write's value).
 */
static bool member_version(struct node *n, const struct wire_msg *m, struct store_record *rec,
			   uint8_t *val, size_t cap)
{
	if (!members_on(&n->members) || !m->version)
		return false;
	return store_get(n->store, STORE_OWNED, m->key, m->key_len, rec, val, cap) > 0 &&
	       rec->kind == STORE_VALUE && rec->version == m->version;
}

/*
 * The owned record of the GET a worker serves now, read ahead with the
 * other GETs of its batch (serve_batch()), or NULL. Per thread: handlers
 * have one signature, and only the worker that read ahead serves the GET.
 */
static __thread struct store_read *get_ahead;

/*
 * GET: owned data, or the replica copy for a REPLICA_READ on a non-home
 * node. The value is read straight into the reply buffer after the key. A
 * GET the switch stamped with a version (docs/design.md section 5) gets that
 * version from a replica, or is sent to the home.
 */
static void serve_get(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		      struct wire_msg *rep, uint8_t *out, size_t cap)
{
	/* As the primary also without a view lease: on_get() confirms the view then. */
	uint16_t other_home = node_home_for(n, m->keyhash, MEMBERS_READ_CONFIRMED);
	enum store_cf cf;

	/*
	 * With replica groups, a read the switch sent to a member without a stamp
	 * is served only where the key is clean (members.h); elsewhere it goes to
	 * the primary. A directory copy here may be from before a write that is
	 * out, or from before this node's own absence, and nothing would check
	 * its version.
	 */
	if (other_home && (m->flags & WIRE_F_REPLICA_READ) && !m->version &&
	    members_on(&n->members)) {
		if (other_home == RING_NO_NODE || !members_clean(n, m->keyhash)) {
			node_count(n, NODE_CTR_moved);
			node_reply_moved(n, rep, other_home);
			return;
		}
		node_count(n, NODE_CTR_member_reads);
		other_home = 0;
	}
	cf = other_home ? STORE_REPLICA : STORE_OWNED;
	uint8_t *val = out + WIRE_HDR_LEN + m->key_len;
	size_t val_cap = cap - WIRE_HDR_LEN - m->key_len;
	struct store_record rec;
	int rc;

	if (other_home && !(m->flags & WIRE_F_REPLICA_READ)) {
		node_count(n, NODE_CTR_moved);
		node_reply_moved(n, rep, other_home);
		return;
	}
	if (!other_home) {
		/* A key whose home just moved here is read from its previous home first. */
		rc = mig_ensure(&n->mig, m->keyhash, m->key, m->key_len, store_now_ms());
		if (rc < 0) {
			rep->status = rc == -EAGAIN ? WIRE_ST_UNAVAILABLE : WIRE_ST_INTERNAL;
			return;
		}
	}
	node_count(n, NODE_CTR_get);
	if (cf == STORE_REPLICA) {
		node_count(n, NODE_CTR_get_replica);
		rep->flags |= WIRE_F_REPLICATED;
	}
	/*
	 * A record read ahead is as good as one read now: it was read after the
	 * request came (a read may take effect at any point between), under the
	 * same ownership, and with no previous home to read through from first.
	 */
	if (get_ahead && cf == STORE_OWNED && !mig_prev_home(&n->mig, m->keyhash))
		rc = store_read_take(get_ahead, &rec, val, val_cap);
	else
		rc = store_get(n->store, cf, m->key, m->key_len, &rec, val, val_cap);
	if (rc < 0) {
		store_failed(n, rep, rc);
		return;
	}
	if (cf == STORE_REPLICA) {
		/*
		 * No copy here (never replicated, or dropped by UNREPLICATE): "not
		 * found" would be a lie about a key that may well exist. Send the
		 * reader to the home, which always holds the latest version; so too
		 * a copy without the stamped version. A member of the key's group
		 * may hold that version as a member, though.
		 */
		bool miss = rc == 0 || rec.kind == STORE_DROPPED;

		if (miss || !replica_version(n, m, &rec, val, val_cap)) {
			if (!member_version(n, m, &rec, val, val_cap)) {
				if (miss)
					node_count(n, NODE_CTR_replica_miss);
				node_reply_moved(n, rep, other_home);
				return;
			}
			node_count(n, NODE_CTR_member_reads);
			rc = 1;
		}
	}
	if (cf == STORE_OWNED && (rc == 0 || rec.version != m->version)) {
		int which = home_version(n, m, from, &rec, val, val_cap);

		if (which < 0) {
			node_reply_moved(n, rep, 0);
			return;
		}
		rc = which ? 1 : rc;
	}
	if (rc == 0) {
		rep->status = WIRE_ST_NOT_FOUND;
		return;
	}
	rep->version = rec.version;
	if (!store_record_live(&rec, store_now_ms())) {
		rep->status = WIRE_ST_NOT_FOUND;
		return;
	}
	rep->status = WIRE_ST_OK;
	rep->value = val;
	rep->val_len = rec.value_len;
}

/*
 * A PUT from a switch may carry riders: writes of the key the switch held
 * while the one before was out, which this one supersedes (group commit at
 * the switch, docs/design.md section 5). They get the versions just below
 * this write's, never stored, and are remembered by req_id as applied
 * there; the reply says how many were given versions: all, or none when one
 * was applied already (the switch then sends each on its own). Called under
 * the key's dedup stripe (dedup_begin()).
 */
static void serve_put(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		      struct wire_msg *rep)
{
	/* From the switch's service address: a client on the switch's host has another port. */
	uint8_t riders =
	    m->riders && from_switch(n, from) && ntohs(from->sin_port) == n->cfg->service.port
		? m->riders
		: 0;
	uint64_t version;
	int rc;

	if (riders && dedup_riders_known(n->dedup, m->keyhash, m->rider_ids, riders))
		riders = 0;
	rc = store_put(n->store, m->keyhash, m->key, m->key_len, m->value, m->val_len, m->version,
		       store_now_ms(), riders, &version);
	if (rc < 0) {
		store_failed(n, rep, rc);
		return;
	}
	node_count(n, NODE_CTR_put);
	if (riders) {
		dedup_keep_riders(n->dedup, m->keyhash, m->rider_ids, riders, version - riders);
		node_count_n(n, NODE_CTR_switch_riders, riders);
	}
	rep->status = WIRE_ST_OK;
	rep->version = version;
	rep->riders = riders;
}

static void serve_del(struct node *n, const struct wire_msg *m, struct wire_msg *rep)
{
	uint64_t version;
	int rc = store_del(n->store, m->keyhash, m->key, m->key_len, store_now_ms(), &version);

	if (rc < 0) {
		store_failed(n, rep, rc);
		return;
	}
	node_count(n, NODE_CTR_del);
	rep->status = rc ? WIRE_ST_OK : WIRE_ST_NOT_FOUND;
	rep->version = version;
}

/*
 * CAS: the condition and the write in one step at the home (store_cas()).
 * The reply carries the live value's remaining ttl in out[0..8), and a
 * READ's the value after it (a reply larger than a datagram goes in chunks).
 */
static void serve_cas(struct node *n, const struct wire_msg *m, struct wire_msg *rep, uint8_t *out,
		      size_t cap)
{
	static const uint8_t status_of[] = {[STORE_CAS_OK] = WIRE_ST_OK,
					    [STORE_CAS_ABSENT] = WIRE_ST_NOT_FOUND,
					    [STORE_CAS_CONFLICT] = WIRE_ST_CONFLICT};
	struct wire_cas c;
	struct store_cas sc;
	uint64_t version, ttl_left;
	int rc;

	if (wire_cas_decode(m, &c) != 0) {
		node_count(n, NODE_CTR_bad_payload);
		rep->status = WIRE_ST_BAD_REQUEST;
		return;
	}
	sc = (struct store_cas){.cond = c.cond,
				.action = c.action,
				.ttl = c.ttl,
				.expect = m->version,
				.ttl_ms = c.ttl_ms};
	/* A READ's reply: the ttl left, then the value. */
	if (c.action == WIRE_CAS_READ && cap > WIRE_CAS_REPLY_LEN) {
		sc.out = out + WIRE_CAS_REPLY_LEN;
		sc.out_cap = cap - WIRE_CAS_REPLY_LEN;
	}
	rc = store_cas(n->store, m->keyhash, m->key, m->key_len, &sc, c.value, c.value_len,
		       store_now_ms(), &version, &ttl_left);
	if (rc < 0) {
		store_failed(n, rep, rc);
		return;
	}
	node_count(n, rc == STORE_CAS_OK ? NODE_CTR_cas : NODE_CTR_cas_conflict);
	rep->status = status_of[rc];
	rep->version = version;
	if (version && (rc != STORE_CAS_OK || c.action != WIRE_CAS_DEL) &&
	    cap >= WIRE_CAS_REPLY_LEN) {
		wire_put64(out, ttl_left);
		rep->value = out;
		rep->val_len = WIRE_CAS_REPLY_LEN + (rc == STORE_CAS_OK ? sc.out_len : 0);
	}
}

/* A CAS that only reads: it changes nothing, so copies of the key stay right. */
static bool cas_reads_only(const struct wire_msg *m)
{
	struct wire_cas c;

	return m->op == WIRE_OP_CAS && wire_cas_decode(m, &c) == 0 && c.action == WIRE_CAS_READ;
}

/* A write's pushes, done after the hand-over lock (on_write()). */
struct write_push {
	bool through; /* to the key's holders (write-through) */
	bool members; /* to its group's members: the previous version kept for readers */
	uint16_t owner;
	uint8_t holders[THROUGH_HOLDERS];
};

/*
 * PUT or DEL at the home, at most once per req_id (dedup.h): a retry of a
 * write that was applied gets the first attempt's answer. With the key's
 * write-through turn (turn), a write through its owner switch to a key
 * spread over copies is to be pushed to them: push says so.
 */
static void serve_write(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
			bool turn, struct wire_msg *rep, struct write_push *push, uint8_t *out,
			size_t cap)
{
	const struct dedup_slot *done = dedup_begin(n->dedup, m->req_id, m->keyhash);
	bool applied;
	int bypass;

	if (done) {
		node_count(n, NODE_CTR_write_retried);
		rep->status = done->status;
		rep->version = done->version;
		bypass = repl_after_retry(n, m, from, rep);
		if (bypass < 0)
			rep->status = bypass == -EAGAIN ? WIRE_ST_UNAVAILABLE : WIRE_ST_INTERNAL;
		dedup_end(n->dedup, m->req_id, m->keyhash, false, 0, 0);
		return;
	}
	bypass = cas_reads_only(m) ? 0 : repl_before_write(n, m, from, &push->owner);
	if (bypass < 0) {
		rep->status = bypass == -EAGAIN ? WIRE_ST_UNAVAILABLE : WIRE_ST_INTERNAL;
		dedup_end(n->dedup, m->req_id, m->keyhash, false, 0, 0);
		return;
	}
	push->through =
	    turn && !bypass && push->owner && repl_through_begin(n, m, push->owner, push->holders);
	push->members = turn && !push->through && members_on(&n->members) &&
			repl_members_begin(n, m);
	if (m->op == WIRE_OP_PUT)
		serve_put(n, m, from, rep);
	else if (m->op == WIRE_OP_CAS)
		serve_cas(n, m, rep, out, cap);
	else
		serve_del(n, m, rep);
	applied = rep->status == WIRE_ST_OK || rep->status == WIRE_ST_NOT_FOUND ||
		  rep->status == WIRE_ST_CONFLICT;
	if (applied && bypass)
		repl_notify_owner(n, push->owner, rep);
	dedup_end(n->dedup, m->req_id, m->keyhash, applied, rep->status, rep->version);
}

/* PROBE: the highest version held, owned or replica copy; no value. */
static void serve_probe(struct node *n, const struct wire_msg *m, struct wire_msg *rep)
{
	struct store_record own, rep_copy;
	uint64_t now = store_now_ms();
	int ro = store_get(n->store, STORE_OWNED, m->key, m->key_len, &own, NULL, 0);
	int rr = store_get(n->store, STORE_REPLICA, m->key, m->key_len, &rep_copy, NULL, 0);
	const struct store_record *best = NULL;

	if (ro < 0 || rr < 0) {
		store_failed(n, rep, ro < 0 ? ro : rr);
		return;
	}
	node_count(n, NODE_CTR_probe);
	if (ro > 0)
		best = &own;
	if (rr > 0 && rep_copy.kind != STORE_DROPPED &&
	    (!best || rep_copy.version > best->version)) {
		best = &rep_copy;
		rep->flags |= WIRE_F_REPLICATED;
	}
	rep->status = best && store_record_live(best, now) ? WIRE_ST_OK : WIRE_ST_NOT_FOUND;
	rep->version = best ? best->version : 0;
}

/*
 * The node's handlers, one per op it serves (a `lane` other than
 * WIRE_LANE_NONE in proto/ops.h; tests/nodes/test_dispatch.c checks that
 * every such op has one). A handler fills rep, the reply already echoing the
 * request; it returns false when nothing is to be sent back (also when it
 * sent the reply itself). out[0..cap) is room
 * for a value read from the store (NULL on the receive thread).
 */
typedef bool (*node_handler)(struct node *n, const struct wire_msg *m,
			     const struct sockaddr_in *from, struct wire_msg *rep, uint8_t *out,
			     size_t cap);

/* A read or write that was served: the key's value, or its absence, at a version. */
static bool served_ok(const struct wire_msg *rep)
{
	return rep->status == WIRE_ST_OK || rep->status == WIRE_ST_NOT_FOUND;
}

/*
 * A key behind at a member (members_behind()), read at its primary under the
 * view lock: push it to the members again within its write turn. Its
 * write's client was refused, so no switch saw that version complete: its
 * directory copies go first, and their owner is told the version once the
 * members hold it (repl_before_repair()). 0 once every live member holds
 * it; -1 otherwise (the read is answered UNAVAILABLE, and its client tries
 * again).
 */
static int push_to_members_again(struct node *n, const struct wire_msg *m)
{
	int turn = repl_through_turn(n, m->keyhash, true), rc = -1;
	uint64_t version;
	uint16_t owner;

	if (turn < 0)
		return -1;
	if (!members_behind(n, m->keyhash))
		rc = 0; /* another read or a write pushed it meanwhile */
	else if (repl_before_repair(n, m, &owner) == 0 && members_push(n, m, &version) == 0) {
		if (owner && version) {
			struct wire_msg note = *m;

			note.version = version;
			note.node = n->self->id;
			repl_notify_owner(n, owner, &note);
			node_count(n, NODE_CTR_repair_notified);
		}
		members_commit(n, m, version);
		node_count(n, NODE_CTR_member_repaired);
		rc = 0;
	}
	if (turn > 0)
		repl_through_turn_end(n, m->keyhash);
	return rc;
}

/*
 * GET, PUT and DEL hold the key's hand-over lock (migrate.h) from the
 * ownership check to the store: in a ring change, a FETCH of the key by its
 * new home then either sees this request's write or this request sees the
 * key moved (MOVED).
 */
static bool on_get(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		   struct wire_msg *rep, uint8_t *out, size_t cap)
{
	bool grouped = members_on(&n->members);
	struct wire_msg echo = *rep;

	if (grouped)
		members_read_lock(n);
	mig_lock(&n->mig, m->keyhash);
	serve_get(n, m, from, rep, out, cap);
	mig_unlock(&n->mig, m->keyhash);
	/*
	 * Asked after the read: a write marks its key behind before its push
	 * ends, so a read that saw that write's version sees the mark.
	 */
	if (grouped && served_ok(rep) && members_behind(n, m->keyhash)) {
		*rep = echo;
		if (push_to_members_again(n, m) == 0) {
			get_ahead = NULL; /* taken by the first read */
			mig_lock(&n->mig, m->keyhash);
			serve_get(n, m, from, rep, out, cap);
			mig_unlock(&n->mig, m->keyhash);
		} else {
			rep->status = WIRE_ST_UNAVAILABLE;
		}
	}
	/* Asked after the read too: the lease only grows, and what was read must stand. */
	if (grouped && served_ok(rep) && !members_leased(n) && members_confirm(n, m->keyhash) != 0)
		rep->status = WIRE_ST_UNAVAILABLE;
	if (grouped)
		members_read_unlock(n);
	return true;
}

/* A write as its handler has it: what a leader needs to apply it and answer it. */
struct node_write {
	const struct wire_msg *m;
	const struct sockaddr_in *from;
	struct wire_msg *rep;
};

static struct node_write *write_of(struct through_rider *r)
{
	return r->write;
}

/*
 * Group commit (through.h): apply the PUTs riding on this write's turn, each
 * after it with a version of its own and at most once by req_id, under this
 * write's locks. A rider this write may not apply for waits for the turn
 * again: one past the owner switch of a key with copies (it drops them
 * first), or a retry (answered from its first attempt). The riders applied,
 * oldest first (their replies filled), and *last, the newest applied, or NULL.
 */
static struct through_rider *apply_riders(struct node *n, uint64_t keyhash,
					  const struct write_push *push, struct node_write **last)
{
	struct through_rider *r = through_riders_take(n->through, keyhash), *next;
	struct through_rider *applied = NULL, **tail = &applied;

	*last = NULL;
	for (; r; r = next) {
		struct node_write *w = write_of(r);
		bool via_owner = repl_via_owner(n, push->owner, w->from);
		const struct dedup_slot *done =
		    via_owner ? dedup_begin(n->dedup, w->m->req_id, w->m->keyhash) : NULL;

		next = r->next;
		if (!via_owner || done) {
			if (done)
				dedup_end(n->dedup, w->m->req_id, w->m->keyhash, false, 0, 0);
			through_rider_done(n->through, keyhash, r, false);
			continue;
		}
		serve_put(n, w->m, w->from, w->rep);
		dedup_end(n->dedup, w->m->req_id, w->m->keyhash, w->rep->status == WIRE_ST_OK,
			  w->rep->status, w->rep->version);
		node_count(n, NODE_CTR_write_riders);
		if (w->rep->status == WIRE_ST_OK)
			*last = w;
		r->next = NULL;
		*tail = r;
		tail = &r->next;
	}
	return applied;
}

/*
 * PUT, DEL and CAS: at the home only, REPLICA_READ or not; a replica never
 * takes a write. A write to be pushed to the key's holders (write-through) pushes
 * after the hand-over lock, so that reads of the key (which see the previous
 * version meanwhile) and writes of other keys go on; the writes of the key
 * take turns instead, each from before it applies until its reply has left.
 * PUTs that wait for the turn ride on the write holding it (apply_riders()):
 * one push, the newest version, serves them all, and that write answers
 * each, the newest first. false: the reply has been sent.
 */
static bool on_write(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		     struct wire_msg *rep, uint8_t *out, size_t cap)
{
	bool grouped = members_on(&n->members), served = false;
	struct write_push push = {0};
	struct node_write self = {.m = m, .from = from, .rep = rep}, *last = NULL, *pushed;
	struct through_rider rider = {.write = &self}, *riders = NULL, *next;
	bool sent = false;
	uint64_t committed = 0; /* the version the members may serve once it is out here */
	uint16_t home;
	int turn, rc;

	/* With replica groups: under one view from the primary check to the reply. */
	if (grouped)
		members_read_lock(n);
	turn = repl_through_turn_or_ride(n, m->keyhash, grouped,
					 m->op == WIRE_OP_PUT ? &rider : NULL);
	if (turn == 2) { /* applied and answered by the write that held the turn */
		if (grouped)
			members_read_unlock(n);
		return false;
	}

	/*
	 * Another write of the key kept its turn past the wait: its push is still
	 * out, and the home's readers see the version before it. Applied now,
	 * this write would be answered while they still do. Not applied; the
	 * client may try again.
	 */
	if (turn < 0) {
		node_count(n, NODE_CTR_through_turn_timeout);
		rep->status = WIRE_ST_UNAVAILABLE;
		if (grouped)
			members_read_unlock(n);
		return true;
	}
	mig_lock(&n->mig, m->keyhash);
	/* No REPLICATE of the key pushes from here until the push below is done. */
	store_write_begin(n->store, m->keyhash);
	home = node_home_for(n, m->keyhash, MEMBERS_WRITE);
	if (home) {
		node_count(n, NODE_CTR_moved);
		node_reply_moved(n, rep, home);
	} else if ((rc = mig_ensure(&n->mig, m->keyhash, m->key, m->key_len, store_now_ms())) < 0) {
		/* The version the previous home gave is unknown: write nothing. */
		rep->status = rc == -EAGAIN ? WIRE_ST_UNAVAILABLE : WIRE_ST_INTERNAL;
	} else {
		serve_write(n, m, from, turn > 0, rep, &push, out, cap);
		served = true;
		if ((push.through || push.members) && served_ok(rep))
			riders = apply_riders(n, m->keyhash, &push, &last);
	}
	mig_unlock(&n->mig, m->keyhash);
	/* The newest version is the one pushed; its reply lists the holders that took it. */
	pushed = last ? last : &self;
	/* Acknowledged only once every live member of the group holds it (members.h). */
	if (grouped && served && served_ok(rep) && members_push(n, pushed->m, &committed) != 0) {
		for (struct through_rider *r = riders; r; r = r->next)
			write_of(r)->rep->status = WIRE_ST_UNAVAILABLE;
		rep->status = WIRE_ST_UNAVAILABLE;
		rep->value = NULL;
		rep->val_len = 0;
	}
	if (push.through) {
		repl_through_push(n, pushed->m, push.owner, push.holders, pushed->rep);
		/* Each write of a batch was pushed in its newest version. */
		for (struct through_rider *r = riders; r; r = r->next)
			write_of(r)->rep->flags |= pushed->rep->flags & WIRE_F_WRITE_THROUGH;
		rep->flags |= pushed->rep->flags & WIRE_F_WRITE_THROUGH;
		sent = node_send_reply(n, pushed->from, pushed->rep) == 0;
		if (pushed != &self)
			sent = node_send_reply(n, from, rep) == 0;
	} else if (push.members) {
		/*
		 * The version kept for the push's readers serves no read once the
		 * write is answered. A switch that still stamps reads with it has
		 * not seen this write: it came past the switch (an agent that gave
		 * the switch up), whether or not the home knew of copies to drop
		 * and a note to send (repl_before_write()).
		 */
		through_push_end(n->through, m->keyhash);
		through_forget_previous(n->through, m->keyhash);
	}
	/* This node's readers see the new version from here: so may the members'. */
	members_commit(n, pushed->m, committed);
	/* The riders' replies, from here: their threads wait for the turn to pass them. */
	for (struct through_rider *r = riders; r; r = next) {
		struct node_write *w = write_of(r);

		next = r->next;
		if (w != pushed || !push.through)
			node_send_reply(n, w->from, w->rep);
		through_rider_done(n->through, m->keyhash, r, true);
	}
	store_write_end(n->store, m->keyhash);
	if (turn > 0)
		repl_through_turn_end(n, m->keyhash);
	if (grouped)
		members_read_unlock(n);
	return !sent;
}

/* Ring changes (mignet.c). */
static bool on_ring(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		    struct wire_msg *rep, uint8_t *out, size_t cap)
{
	(void)from;
	mignet_ring(n, m, rep, out, cap);
	return true;
}

static bool on_fetch(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		     struct wire_msg *rep, uint8_t *out, size_t cap)
{
	(void)from;
	mignet_fetch(n, m, rep, out, cap);
	return true;
}

static bool on_migrate(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		       struct wire_msg *rep, uint8_t *out, size_t cap)
{
	(void)from, (void)out, (void)cap;
	mignet_migrate(n, m, rep);
	return true;
}

static bool on_probe(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		     struct wire_msg *rep, uint8_t *out, size_t cap)
{
	(void)from, (void)out, (void)cap;
	serve_probe(n, m, rep);
	return true;
}

static bool on_replicate(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
			 struct wire_msg *rep, uint8_t *out, size_t cap)
{
	return repl_replicate(n, m, from, rep, out, cap);
}

/* RC_REQ is answered by the RC_ACK it sends (to the switch, or to a home writing through). */
static bool on_rc_req(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		      struct wire_msg *rep, uint8_t *out, size_t cap)
{
	(void)rep, (void)out, (void)cap;
	repl_rc_req(n, m, from);
	return false;
}

static bool on_unreplicate(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
			   struct wire_msg *rep, uint8_t *out, size_t cap)
{
	(void)from, (void)out, (void)cap;
	repl_unreplicate(n, m, rep);
	return true;
}

/* Replica groups (members.h). */
static bool on_view(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		    struct wire_msg *rep, uint8_t *out, size_t cap)
{
	members_on_view(n, m, from_switch(n, from), rep, out, cap);
	return true;
}

static bool on_member(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		      struct wire_msg *rep, uint8_t *out, size_t cap)
{
	(void)from, (void)out, (void)cap;
	members_on_member(n, m, rep);
	return true;
}

/* COMMIT is served by the receive thread: it only marks a key clean. */
static bool on_commit(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		      struct wire_msg *rep, uint8_t *out, size_t cap)
{
	(void)from, (void)rep, (void)out, (void)cap;
	members_on_commit(n, m);
	return false;
}

static bool on_catchup(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		       struct wire_msg *rep, uint8_t *out, size_t cap)
{
	(void)from;
	members_on_catchup(n, m, rep, out, cap);
	return true;
}

/* Indexed by op (requests only: ops are below 64). */
static const node_handler handlers[64] = {
    [WIRE_OP_GET] = on_get,	    [WIRE_OP_PUT] = on_write,
    [WIRE_OP_DEL] = on_write,	    [WIRE_OP_CAS] = on_write,
    [WIRE_OP_PROBE] = on_probe,	    [WIRE_OP_REPLICATE] = on_replicate,
    [WIRE_OP_RC_REQ] = on_rc_req,   [WIRE_OP_UNREPLICATE] = on_unreplicate,
    [WIRE_OP_RING] = on_ring,	    [WIRE_OP_FETCH] = on_fetch,
    [WIRE_OP_MIGRATE] = on_migrate, [WIRE_OP_VIEW] = on_view,
    [WIRE_OP_MEMBER] = on_member,   [WIRE_OP_CATCHUP] = on_catchup,
    [WIRE_OP_COMMIT] = on_commit,
};

bool server_serves(uint8_t op)
{
	return op < 64 && handlers[op] != NULL;
}

/* Run m's handler; false when there is none or it sends no reply. */
static bool handle(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		   struct wire_msg *rep, uint8_t *out, size_t cap)
{
	return server_serves(m->op) && handlers[m->op](n, m, from, rep, out, cap);
}

/*
 * Serve one queued request. Handlers read values into scratch[0..scratch_cap);
 * a reply that fits one datagram is encoded into out and its length returned,
 * a larger one (a GET of a large value) is sent here in chunks (0 returned,
 * as when there is no reply).
 */
static size_t serve(struct node *n, struct node_req *r, uint8_t *out, size_t cap, uint8_t *scratch,
		    size_t scratch_cap)
{
	struct wire_msg m, rep;
	uint16_t count;
	int rc;

	if (wire_decode(node_req_data(r), r->len, &m) != WIRE_OK)
		return 0; /* validated by the receive thread; cannot happen */
	reply_init(n, &m, &rep);
	if (!handle(n, &m, &r->from, &rep, scratch, scratch_cap))
		return 0;
	if (!wire_chunk_needed(&rep, n->cfg->service.mtu, &count))
		return reply_encode(n, &rep, out, cap);
	rc = node_send_reply(n, &r->from, &rep);
	if (rc == 0) {
		node_count(n, NODE_CTR_chunked_replies);
		return 0;
	}
	/* A key too long to leave room for a chunk at this MTU. */
	log_warn("cannot send a %u-byte %s reply: %s", rep.val_len, wire_op_name(rep.op),
		 strerror(-rc));
	rep.status = WIRE_ST_TOO_LARGE;
	rep.value = NULL;
	rep.val_len = 0;
	return reply_encode(n, &rep, out, cap);
}

/*
 * Requests a worker takes per visit to the queue. Taking several amortises
 * the lock and the wake-up, and their replies leave in one sendmmsg(); the
 * per-request work is a few microseconds, so hand-off cost would dominate.
 */
#define WORKER_BATCH 8

/*
 * Capacity emulation: node.workers emulated servers, on THREADS_PER_SERVER
 * times as many threads. A request holds a server for the service time only,
 * with a timed sleep, no spinning; what it does next (served and answered
 * at once, or a write-through's waits for its turn and its holders) holds
 * its thread but no server, as in a node that serves while it waits.
 *
 * The server starts a request when it arrived (rx_ns) or when the server's
 * previous request ended, whichever is later, as a real server with that
 * service time would. Not from when the thread woke: on a busy machine a
 * sleep ends late, and timed from the wake-up every late wake-up would lower
 * the node's capacity below workers / service time, by as much as the
 * machine is loaded. Timed this way the next sleep is shorter (or none) and
 * the server catches up.
 */
#define THREADS_PER_SERVER 8

/* Take an idle server (waiting for one); its index, and *free_at when it ended its last. */
static uint32_t server_take(struct node *n, uint64_t *free_at)
{
	struct node_servers *s = &n->servers;
	uint32_t i = 0;

	pthread_mutex_lock(&s->lock);
	while (s->idle == 0)
		pthread_cond_wait(&s->freed, &s->lock);
	while (s->free_at[i] == UINT64_MAX)
		i++;
	*free_at = s->free_at[i];
	s->free_at[i] = UINT64_MAX;
	s->idle--;
	pthread_mutex_unlock(&s->lock);
	return i;
}

static void server_give(struct node *n, uint32_t i, uint64_t free_at)
{
	struct node_servers *s = &n->servers;

	pthread_mutex_lock(&s->lock);
	s->free_at[i] = free_at;
	s->idle++;
	pthread_cond_signal(&s->freed);
	pthread_mutex_unlock(&s->lock);
}

/* Hold server i for the service time of a request that arrived at rx_ns, then give it back. */
static void emulate_service_time(struct node *n, uint32_t i, uint64_t free_at, uint64_t rx_ns)
{
	uint64_t until = (rx_ns > free_at ? rx_ns : free_at) + (uint64_t)n->service_time_us * 1000;
	struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
			      .tv_nsec = (long)(until % 1000000000u)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	server_give(n, i, until);
}

/*
 * Has r waited in the queue longer than any agent waits for an answer? Then
 * its sender has given up on it (and may have resent it): serving it would
 * only spend capacity on work nobody reads, and under overload such work
 * crowds out every request still wanted (congestion collapse). Client data
 * ops only; an unserved write was never applied, so dropping it is safe.
 */
static bool expired(const struct node *n, const struct node_req *r, uint64_t now)
{
	return now - r->rx_ns > (uint64_t)n->cfg->agent.timeout_ms * 1000000ull &&
	       lane_of(node_req_data(r)[WIRE_OFF_OP]) == NODE_LANE_CLIENT;
}

/* Free a gathered op's datagram once served, and give its bytes back to the cap. */
static void req_release(struct node *n, struct node_req *r)
{
	if (!r->owned)
		return;
	free(r->owned);
	reasm_release(&n->reasm, r->charged);
	r->owned = NULL;
}

/*
 * Read the owned records of a batch's GETs at once (store_get_many()):
 * ahead_of[i] is request i's index in ahead[], -1 when it has none (not a
 * GET, or not this node's key; or the batch's only GET). Returns how many.
 */
static unsigned read_ahead(struct node *n, const struct node_req *reqs, uint32_t k,
			   struct store_read *ahead, int8_t *ahead_of)
{
	const void *keys[WORKER_BATCH];
	size_t klens[WORKER_BATCH];
	unsigned count = 0;

	for (uint32_t i = 0; i < k; i++) {
		const uint8_t *d = node_req_data(&reqs[i]);
		struct wire_msg m;

		ahead_of[i] = -1;
		if (d[WIRE_OFF_OP] != WIRE_OP_GET || wire_decode(d, reqs[i].len, &m) != WIRE_OK ||
		    node_home_for(n, m.keyhash, MEMBERS_READ_CONFIRMED))
			continue; /* not read ahead (whether it is served, on_get() says) */
		keys[count] = m.key;
		klens[count] = m.key_len;
		ahead_of[i] = (int8_t)count++;
	}
	if (count < 2) { /* one GET reads as it is served */
		memset(ahead_of, -1, k);
		return 0;
	}
	store_get_many(n->store, STORE_OWNED, count, keys, klens, ahead);
	return count;
}

/*
 * Serve one batch taken off the queue and send its replies in one
 * sendmmsg(). server and free_at: the emulated server the batch (of one)
 * holds.
 */
static void serve_batch(struct node *n, struct node_req *reqs, uint32_t k, uint8_t *outs,
			size_t cap, uint8_t *scratch, size_t scratch_cap, uint32_t server,
			uint64_t free_at)
{
	struct mmsghdr msgs[WORKER_BATCH];
	struct iovec iov[WORKER_BATCH];
	struct store_read ahead[WORKER_BATCH];
	int8_t ahead_of[WORKER_BATCH];
	unsigned nmsg = 0, nahead = read_ahead(n, reqs, k, ahead, ahead_of);

	for (uint32_t i = 0; i < k; i++) {
		uint64_t start = clock_mono_ns();
		uint8_t *out = outs + cap * i;
		size_t len;

		if (expired(n, &reqs[i], start)) {
			node_count(n, NODE_CTR_expired);
			req_release(n, &reqs[i]);
			if (n->service_time_us)
				server_give(n, server, free_at);
			continue;
		}
		/*
		 * The emulated time passes first, then the request is served
		 * and answered at once: what a write makes visible is not
		 * seen a service time before its reply leaves.
		 */
		if (n->service_time_us)
			emulate_service_time(n, server, free_at, reqs[i].rx_ns);
		get_ahead = ahead_of[i] >= 0 ? &ahead[ahead_of[i]] : NULL;
		len = serve(n, &reqs[i], out, cap, scratch, scratch_cap);
		get_ahead = NULL;
		req_release(n, &reqs[i]);
		if (len == 0)
			continue;
		iov[nmsg] = (struct iovec){.iov_base = out, .iov_len = len};
		memset(&msgs[nmsg], 0, sizeof(msgs[nmsg]));
		msgs[nmsg].msg_hdr.msg_iov = &iov[nmsg];
		msgs[nmsg].msg_hdr.msg_iovlen = 1;
		msgs[nmsg].msg_hdr.msg_name = &reqs[i].from;
		msgs[nmsg].msg_hdr.msg_namelen = sizeof(reqs[i].from);
		nmsg++;
	}
	for (unsigned a = 0; a < nahead; a++)
		store_read_done(&ahead[a]);
	node_send_many(n, msgs, nmsg);
	uint64_t now = clock_mono_ns();

	for (uint32_t i = 0; i < k; i++)
		report_latency(now - reqs[i].rx_ns);
	atomic_fetch_sub(&n->inflight, k);
}

/*
 * A worker's next batch (0: the node stops). Emulating, it only takes
 * requests, one at a time. Otherwise it receives first: waiting in
 * recvmmsg() when nothing is queued, else taking only what has arrived,
 * so that new requests are queued (or answered OVERLOADED) while older
 * ones are served. Once the node stops receiving, it drains the queue.
 */
static uint32_t worker_next(struct node_worker *w, struct rx_ctx *rx, struct node_req *reqs,
			    uint32_t batch)
{
	struct node *n = w->n;
	uint32_t k;

	if (n->service_time_us)
		return queue_pop(n, reqs, batch, true);
	for (;;) {
		if (atomic_load(&n->stop_rx))
			return queue_pop(n, reqs, batch, true);
		rx_burst(n, rx, atomic_load_explicit(&n->queued, memory_order_relaxed) == 0);
		k = queue_pop(n, reqs, batch, false);
		if (k)
			return k;
	}
}

static void *worker_main(void *arg)
{
	struct node_worker *w = arg;
	struct node *n = w->n;
	const size_t cap = NODE_MAX_DGRAM + WIRE_MAX_KEY;
	/* Room for any value a handler reads: max_value, and an RC_REQ prefix. */
	const size_t scratch_cap =
	    WIRE_HDR_LEN + WIRE_MAX_KEY + WIRE_RC_PREFIX_LEN + n->cfg->service.max_value;
	uint8_t *scratch = malloc(scratch_cap);
	/* With emulated service time each request holds the worker on its own. */
	const uint32_t batch = n->service_time_us ? 1 : WORKER_BATCH;
	struct node_req reqs[WORKER_BATCH] = {0};
	uint8_t *outs = malloc(cap * batch);
	struct rx_ctx rx = {0};
	/* Emulating, the receive thread alone receives. */
	int ok = outs != NULL && scratch != NULL && (n->service_time_us || rx_init(&rx) == 0);

	for (uint32_t i = 0; i < batch; i++) {
		reqs[i].buf = malloc(NODE_MAX_DGRAM);
		ok = ok && reqs[i].buf;
	}
	if (!ok) {
		log_error("worker: out of memory");
		goto out;
	}
	for (;;) {
		uint64_t free_at = 0;
		/* Emulating: a server first, then a request for it (batch is 1). */
		uint32_t server = n->service_time_us ? server_take(n, &free_at) : 0;
		uint32_t k = worker_next(w, &rx, reqs, batch);

		if (k == 0) {
			if (n->service_time_us)
				server_give(n, server, free_at);
			break;
		}
		atomic_store_explicit(&w->busy_since, clock_mono_ns(), memory_order_relaxed);
		serve_batch(n, reqs, k, outs, cap, scratch, scratch_cap, server, free_at);
		atomic_store_explicit(&w->busy_since, 0, memory_order_relaxed);
	}
out:
	for (int i = 0; i < WORKER_BATCH; i++)
		free(reqs[i].buf);
	free(outs);
	free(scratch);
	rx_free(&rx);
	return NULL;
}

int server_start(struct node *n, uint32_t workers)
{
	int rc;

	rc = queue_init(&n->queue, n->cfg->node.queue_depth, NODE_MAX_DGRAM);
	if (rc)
		return rc;
	rc = reasm_init(&n->reasm, (uint64_t)n->cfg->node.reassembly_mb << 20,
			(uint64_t)n->cfg->node.reassembly_timeout_ms * 1000000ull);
	if (rc)
		return rc;
	pthread_mutex_init(&n->reasm_lock, NULL);
	n->nthreads = workers;
	if (n->service_time_us) {
		struct node_servers *sv = &n->servers;

		sv->free_at = calloc(workers, sizeof(*sv->free_at));
		if (!sv->free_at)
			return -ENOMEM;
		pthread_mutex_init(&sv->lock, NULL);
		pthread_cond_init(&sv->freed, NULL);
		sv->idle = workers;
		n->nthreads = workers * THREADS_PER_SERVER;
	}
	n->workers = calloc(n->nthreads, sizeof(*n->workers));
	n->wk = calloc(n->nthreads, sizeof(*n->wk));
	if (!n->workers || !n->wk)
		return -ENOMEM;
	for (uint32_t i = 0; i < n->nthreads; i++) {
		char name[16];

		n->wk[i].n = n;
		rc = pthread_create(&n->workers[i], NULL, worker_main, &n->wk[i]);
		if (rc)
			return -rc;
		snprintf(name, sizeof(name), "skl-worker%u", i);
		pthread_setname_np(n->workers[i], name);
	}
	rc = pthread_create(&n->rx_thread, NULL, rx_main, n);
	if (rc == 0)
		pthread_setname_np(n->rx_thread, "skl-rx");
	return -rc;
}

void server_stop(struct node *n)
{
	atomic_store(&n->stop_rx, true);
	pthread_join(n->rx_thread, NULL);
	/* Workers serve what is queued, then see the closed, empty queue and leave. */
	queue_close(&n->queue);
	for (uint32_t i = 0; i < n->nthreads; i++)
		pthread_join(n->workers[i], NULL);
	free(n->workers);
	n->workers = NULL;
	free(n->wk);
	n->wk = NULL;
	if (n->servers.free_at) {
		pthread_mutex_destroy(&n->servers.lock);
		pthread_cond_destroy(&n->servers.freed);
		free(n->servers.free_at);
		n->servers.free_at = NULL;
	}
	queue_free(&n->queue);
	reasm_free(&n->reasm);
	pthread_mutex_destroy(&n->reasm_lock);
}
