/*
 * repl.c - replica copies (docs/design.md section 5, home-primary variant).
 *
 * The switch asks the home to REPLICATE a key at the version v it saw
 * complete; the home pushes RC_REQ(v) only while v is still its local
 * version, so no replica ever gets a version the directory has not seen
 * complete. A replica keeps the copy in its own column family if v is not
 * older than the copy it holds, and reports RC_ACK(version held) to the
 * switch that owns the key's directory entry.
 */
#include "repl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "send.h"

/* An RC_REQ carries a store record's kind as its copy kind. */
_Static_assert((int)STORE_VALUE == (int)WIRE_COPY_VALUE &&
		   (int)STORE_TOMBSTONE == (int)WIRE_COPY_TOMBSTONE,
	       "store kinds are the RC_REQ copy kinds");

static void node_addr(const struct cfg_node *cn, struct sockaddr_in *a)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(cn->ip);
	a->sin_port = htons(cn->port);
}

/* Node id's bit in a node bitmap (holders, copy targets: byte id / 8, bit id % 8). */
static inline bool has_node(const uint8_t *map, unsigned id)
{
	return map[id / 8] & (1u << (id % 8));
}

static inline void add_node(uint8_t *map, unsigned id)
{
	map[id / 8] |= (uint8_t)(1u << (id % 8));
}

/*
 * Keep the key's record in cf as its previous version, before a write-through
 * replaces it: 1 when kept, 0 when it cannot be. At the home a key not stored
 * yet is kept as "not found" at version 0. A replica without a copy (none, or
 * a dropped one) keeps nothing: -1. stamper: through_keep_previous().
 */
static int keep_stored(struct node *n, enum store_cf cf, const struct wire_msg *m, uint16_t stamper)
{
	static __thread uint8_t val[THROUGH_MAX_VALUE];
	struct store_record cur = {.kind = STORE_TOMBSTONE};
	int rc = store_get(n->store, cf, m->key, m->key_len, &cur, val, sizeof(val));

	if (cf == STORE_REPLICA && (rc <= 0 || cur.kind == STORE_DROPPED))
		return -1;
	if (rc < 0 || cur.value_len > sizeof(val))
		return 0;
	return through_keep_previous(n->through, m->keyhash, &cur, stamper);
}

/* REPLICATE's work, within the key's turn when turn is set (repl_replicate()). */
static void replicate(struct node *n, const struct wire_msg *m, bool turn, struct wire_msg *rep,
		      uint8_t *val, size_t cap)
{
	struct store_record rec;
	struct wire_replicate req;
	uint64_t now = store_now_ms(), gate;
	int rc;

	if (wire_replicate_decode(m, &req) != 0) {
		node_count(n, NODE_CTR_bad_payload);
		rep->status = WIRE_ST_BAD_REQUEST;
		return;
	}
	uint16_t home = node_other_home(n, m->keyhash);

	if (home) {
		node_count(n, NODE_CTR_moved);
		node_reply_moved(n, rep, home);
		return;
	}
	node_count(n, NODE_CTR_replicate);
	/* Before reading the version: a write beginning from here on stops the push. */
	bool no_write = store_write_gate(n->store, m->keyhash, &gate);
	rc = store_get(n->store, STORE_OWNED, m->key, m->key_len, &rec, val + WIRE_RC_PREFIX_LEN,
		       cap - WIRE_RC_PREFIX_LEN);
	if (rc < 0) {
		node_count(n, NODE_CTR_store_errors);
		rep->status = WIRE_ST_INTERNAL;
		return;
	}
	rep->status = rc ? WIRE_ST_OK : WIRE_ST_NOT_FOUND;
	/*
	 * Without the turn a write's reply may overtake this one: "not known"
	 * (0). So too while a member may lack this version (a copy of it would
	 * be served while that member serves the one before).
	 */
	if (turn && members_behind(n, m->keyhash))
		turn = false;
	rep->version = turn && rc ? rec.version : 0;
	/*
	 * Push only the exact version the switch saw complete (0: whatever is
	 * current). A newer local version, or a write in progress, means a newer
	 * write is in flight and its own REPLICATE follows. An expired value is
	 * not pushed: its copy would have nothing left to serve.
	 */
	if (rc == 0 || !turn || !no_write || (m->version != 0 && m->version != rec.version) ||
	    (rec.kind == STORE_VALUE && !store_record_live(&rec, now))) {
		node_count(n, NODE_CTR_replicate_skipped);
		return;
	}
	uint64_t ttl = rec.kind == STORE_VALUE && rec.time_ms ? rec.time_ms - now : 0;
	struct wire_rc_req copy = {
	    .owner = req.owner,
	    .kind = rec.kind,
	    .ttl_ms = ttl > UINT32_MAX ? UINT32_MAX : (uint32_t)ttl,
	    .value_len = rec.value_len,
	};
	struct wire_msg rc_req = {
	    .op = WIRE_OP_RC_REQ,
	    .req_id = m->req_id,
	    .keyhash = m->keyhash,
	    .version = rec.version,
	    .node = n->self->id,
	    .key = m->key,
	    .key_len = m->key_len,
	    .value = val,
	    .val_len = WIRE_RC_PREFIX_LEN + rec.value_len,
	};
	int len = wire_rc_req_encode_prefix(&copy, val, WIRE_RC_PREFIX_LEN);
	struct store_copies copies = {.owner = req.owner};

	if (len < 0)
		return;
	/* Remember the holders first: a write that bypasses the owner must find them. */
	for (unsigned i = 0; i < req.ntargets; i++) {
		uint16_t target = req.targets[i];

		if (target > 0 && target <= CFG_MAX_NODES && target != n->self->id)
			add_node(copies.targets, target);
	}
	rc = store_copies_add(n->store, m->key, m->key_len, &copies, gate);
	if (rc != 0) {
		node_count(n, rc == -EBUSY ? NODE_CTR_replicate_skipped : NODE_CTR_store_errors);
		return;
	}
	/* They join the switch's set when they ack: the next write pushes to them. */
	through_holders_add(n->through, m->keyhash, copies.targets);
	for (unsigned i = 0; i < req.ntargets; i++) {
		uint16_t target = req.targets[i];
		const struct cfg_node *cn = cfg_node_by_id(n->cfg, target);
		struct sockaddr_in to;

		if (!cn || target == n->self->id)
			continue;
		rc_req.node = target;
		node_addr(cn, &to);
		/* Whole, or in chunks when the copy is larger than a datagram. */
		if (node_send_msg(n, &to, &rc_req) == 0)
			node_count(n, NODE_CTR_rc_req_sent);
	}
}

bool repl_replicate(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		    struct wire_msg *rep, uint8_t *val, size_t cap)
{
	/*
	 * The key's turn, from before the version is read until the reply has
	 * left: a write of the key answers after it. A fresh directory entry
	 * takes its version from this reply and ignores write-through replies,
	 * so a write's reply that overtook it would leave the entry a version
	 * behind one already acknowledged. Not waited for: while a write holds
	 * it, the reply says "not known" and the switch asks again next epoch.
	 */
	bool turn = through_turn_take(n->through, m->keyhash, 0, true) > 0;
	bool sent = false;

	replicate(n, m, turn, rep, val, cap);
	if (turn) {
		sent = node_send_reply(n, from, rep) == 0;
		through_turn_give(n->through, m->keyhash);
	}
	return !sent;
}

/* ---- Write-through (docs/design.md section 5): the home pushes before it answers. ---- */

/* How long a home waits for its holders: their control lane's wait and one service time. */
static int through_wait_ms(const struct node *n)
{
	return REPL_THROUGH_WAIT_MS + 3 * (int)(n->service_time_us / 1000);
}

/*
 * A write waits for its key's turn as long as its sender waits for an answer
 * (agent.timeout_ms), at least as long as one push takes: the writes of a hot
 * key queue for their turns, and one refused is one its client must send again.
 */
int repl_through_turn_or_ride(struct node *n, uint64_t keyhash, bool claim,
			      struct through_rider *r)
{
	int wait_ms = through_wait_ms(n);

	if ((int)n->cfg->agent.timeout_ms > wait_ms)
		wait_ms = (int)n->cfg->agent.timeout_ms;
	return through_turn_take_or_ride(n->through, keyhash, (unsigned)wait_ms, claim, r);
}

int repl_through_turn(struct node *n, uint64_t keyhash, bool claim)
{
	return repl_through_turn_or_ride(n, keyhash, claim, NULL);
}

void repl_through_turn_end(struct node *n, uint64_t keyhash)
{
	through_turn_give(n->through, keyhash);
}

bool repl_through_begin(struct node *n, const struct wire_msg *m, uint16_t owner, uint8_t *holders)
{
	/* The version readers see until the switch has seen this write's reply. */
	if (!through_holders(n->through, m->keyhash, holders) ||
	    keep_stored(n, STORE_OWNED, m, owner) <= 0)
		return false;
	through_push_begin(n->through, m->keyhash);
	return true;
}

bool repl_members_begin(struct node *n, const struct wire_msg *m)
{
	if (keep_stored(n, STORE_OWNED, m, 0) <= 0)
		return false;
	through_push_begin(n->through, m->keyhash);
	return true;
}

/*
 * Whether a reply on one of this node's own sockets (a write-through push's
 * RC_ACKs, an UNREPLICATE's confirmation) may be taken: with a key it must
 * carry a valid MAC, then *len is cut to the datagram without it (a forged
 * confirmation would let a write through while a copy still serves the old
 * value, or list a holder that holds nothing).
 */
static bool authentic_reply(struct node *n, const uint8_t *in, size_t *len)
{
	size_t body;

	if (!n->keyed)
		return true;
	if (wire_auth_check(&n->key, in, *len, &body) == WIRE_AUTH_OK) {
		*len = body;
		return true;
	}
	node_count(n, NODE_CTR_auth_bad_reply);
	return false;
}

/*
 * Send the RC_REQ rc_req to every holder from fd, whole or in chunks when the
 * value is larger than a datagram (sealed with a key); the number sent.
 */
static unsigned push_to_holders(struct node *n, int fd, struct wire_msg *rc_req,
				const uint8_t *holders)
{
	unsigned sent = 0;

	for (unsigned id = 1; id <= CFG_MAX_NODES; id++) {
		const struct cfg_node *cn = cfg_node_by_id(n->cfg, (uint16_t)id);
		struct sockaddr_in to;

		if (!has_node(holders, id) || !cn || id == n->self->id)
			continue;
		rc_req->node = (uint16_t)id;
		node_addr(cn, &to);
		if (node_send_msg_fd(n, fd, &to, rc_req) == 0) {
			node_count(n, NODE_CTR_rc_req_sent);
			sent++;
		}
	}
	return sent;
}

/*
 * Wait on fd for the holders' RC_ACKs of (req_id, version); mark each in
 * confirmed. A holder that answers version 0 holds no copy any more: it
 * counts as answered, not confirmed. Returns the answers.
 */
static unsigned await_holders(struct node *n, int fd, uint64_t req_id, uint64_t version,
			      const uint8_t *holders, unsigned expected, uint8_t *confirmed)
{
	uint64_t deadline = clock_mono_ns() + (uint64_t)through_wait_ms(n) * 1000000u;
	uint8_t in[WIRE_HDR_LEN + WIRE_MAX_KEY + 64], answered[THROUGH_HOLDERS] = {0};
	unsigned got = 0;

	while (got < expected) {
		uint64_t now = clock_mono_ns();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		struct wire_rc_ack ack;
		struct wire_msg r;
		ssize_t got_len;
		size_t len;

		if (now >= deadline || poll(&p, 1, (int)((deadline - now + 999999) / 1000000)) <= 0)
			break;
		got_len = recv(fd, in, sizeof(in), 0);
		len = got_len > 0 ? (size_t)got_len : 0;
		if (len == 0 || !authentic_reply(n, in, &len) ||
		    wire_decode(in, len, &r) != WIRE_OK || r.op != WIRE_OP_RC_ACK ||
		    r.req_id != req_id || wire_rc_ack_decode(&r, &ack) != 0)
			continue;
		/* A holder that holds a newer version does not hold this one. */
		if ((ack.version != version && ack.version != 0) || ack.node == 0 ||
		    ack.node > CFG_MAX_NODES || !has_node(holders, ack.node) ||
		    has_node(answered, ack.node))
			continue;
		add_node(answered, ack.node);
		if (ack.version == version) {
			add_node(confirmed, ack.node);
			node_count(n, NODE_CTR_write_through_confirmed);
		} else {
			node_count(n, NODE_CTR_write_through_dropped);
		}
		got++;
	}
	return got;
}

/* Push rep's version to the holders; list those that confirmed in rep. */
static void push_and_list(struct node *n, const struct wire_msg *m, uint16_t owner,
			  const uint8_t *holders, struct wire_msg *rep)
{
	static __thread int fd = -1;
	static __thread uint8_t list[2 * CFG_MAX_NODES];
	uint8_t confirmed[THROUGH_HOLDERS] = {0}, *val;
	bool del = m->op == WIRE_OP_DEL;
	struct wire_rc_req copy = {
	    .owner = owner,
	    .kind = del ? STORE_TOMBSTONE : STORE_VALUE,
	    .ttl_ms = del ? 0 : (uint32_t)m->version, /* a PUT's version field is its TTL */
	    .value_len = del ? 0 : m->val_len,
	};
	unsigned sent, got, nlist = 0;
	int prefix;

	/* The copy: its prefix and the value, up to max_value (sent in chunks past the MTU). */
	val = malloc(WIRE_RC_PREFIX_LEN + (size_t)copy.value_len);
	if (!val)
		return;
	prefix = wire_rc_req_encode_prefix(&copy, val, WIRE_RC_PREFIX_LEN);
	if (prefix < 0 || (fd < 0 && (fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)) {
		free(val);
		return;
	}
	if (copy.value_len)
		memcpy(val + prefix, m->value, copy.value_len);
	struct wire_msg rc_req = {
	    .op = WIRE_OP_RC_REQ,
	    .flags = WIRE_F_WRITE_THROUGH,
	    .req_id = m->req_id,
	    .keyhash = m->keyhash,
	    .version = rep->version,
	    .node = n->self->id,
	    .key = m->key,
	    .key_len = m->key_len,
	    .value = val,
	    .val_len = (uint32_t)prefix + copy.value_len,
	};
	node_count(n, NODE_CTR_write_through);
	sent = push_to_holders(n, fd, &rc_req, holders);
	free(val);
	got = await_holders(n, fd, m->req_id, rep->version, holders, sent, confirmed);
	node_count_n(n, NODE_CTR_write_through_missed, sent - got);
	/* The next write pushes to those that hold this one: the switch's set after it. */
	through_holders_set(n->through, m->keyhash, confirmed);
	for (unsigned id = 1; id <= CFG_MAX_NODES; id++)
		if (has_node(confirmed, id)) {
			wire_put16(list + 2 * nlist, (uint16_t)id);
			nlist++;
		}
	/* The reply names them: the switch moves the set to {home} and these at once. */
	rep->flags |= WIRE_F_WRITE_THROUGH;
	rep->value = nlist ? list : NULL;
	rep->val_len = 2 * nlist;
}

void repl_through_push(struct node *n, const struct wire_msg *m, uint16_t owner,
		       const uint8_t *holders, struct wire_msg *rep)
{
	if (rep->status == WIRE_ST_OK && rep->version)
		push_and_list(n, m, owner, holders, rep);
	/* Readers see the new version from here: its reply goes to the switch next. */
	through_push_end(n->through, m->keyhash);
}

/* An RC_ACK held back by --ack-delay-ms, sent by a thread of its own. */
struct late_ack {
	struct node *n;
	struct sockaddr_in to;
	size_t len;
	uint8_t dgram[WIRE_HDR_LEN + WIRE_MAX_KEY];
};

static void *late_ack_main(void *arg)
{
	struct late_ack *a = arg;
	struct timespec ts = {.tv_sec = a->n->ack_delay_ms / 1000,
			      .tv_nsec = (long)(a->n->ack_delay_ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
	if (node_send(a->n, &a->to, a->dgram, a->len) == 0)
		node_count(a->n, NODE_CTR_rc_ack_sent);
	free(a);
	return NULL;
}

/*
 * Fault injection for tests: deliver the ack ack_delay_ms late without
 * holding a worker (a worker asleep would stall the node's other requests,
 * which is not the fault being injected). Falls back to sending now.
 */
static void send_late(struct node *n, const struct sockaddr_in *to, const uint8_t *dgram,
		      size_t len)
{
	struct late_ack *a = malloc(sizeof(*a));
	pthread_attr_t attr;
	pthread_t t;

	if (a) {
		*a = (struct late_ack){.n = n, .to = *to, .len = len};
		memcpy(a->dgram, dgram, len);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, late_ack_main, a) == 0) {
			pthread_attr_destroy(&attr);
			return;
		}
		pthread_attr_destroy(&attr);
		free(a);
	}
	if (node_send(n, to, dgram, len) == 0)
		node_count(n, NODE_CTR_rc_ack_sent);
}

/* The address of switch `owner` (its vip : service.port), or NULL when not configured. */
static const struct sockaddr_in *switch_addr_of(const struct node *n, uint16_t owner)
{
	for (int i = 0; i < n->nswitches; i++)
		if (owner != 0 && n->switch_ids[i] == owner)
			return &n->switch_addr[i];
	return NULL;
}

/*
 * Send RC_ACK(version) for key to home when given, else to the owner switch,
 * or to every switch when unknown.
 */
static void send_ack(struct node *n, const struct wire_msg *m, uint16_t owner, uint64_t version,
		     const struct sockaddr_in *home)
{
	uint8_t dgram[WIRE_HDR_LEN + WIRE_MAX_KEY];
	struct wire_rc_ack held = {.version = version, .node = n->self->id};
	struct wire_msg ack = {
	    .req_id = m->req_id,
	    .keyhash = m->keyhash,
	    .load = node_load(n),
	    .key = m->key,
	    .key_len = m->key_len,
	};
	const struct sockaddr_in *to = switch_addr_of(n, owner);
	int len;

	if (wire_rc_ack_encode(&held, &ack) != 0)
		return;
	len = wire_encode(&ack, dgram, sizeof(dgram));
	if (len < 0)
		return;
	if (home) {
		if (node_send(n, home, dgram, (size_t)len) == 0)
			node_count(n, NODE_CTR_rc_ack_sent);
		return;
	}
	for (int i = 0; i < n->nswitches; i++) {
		if (to && &n->switch_addr[i] != to)
			continue;
		if (n->ack_delay_ms)
			send_late(n, &n->switch_addr[i], dgram, (size_t)len);
		else if (node_send(n, &n->switch_addr[i], dgram, (size_t)len) == 0)
			node_count(n, NODE_CTR_rc_ack_sent);
	}
}

void repl_rc_req(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from)
{
	uint64_t now = store_now_ms(), held = 0;
	bool through = m->flags & WIRE_F_WRITE_THROUGH;
	struct wire_rc_req copy;
	int rc;

	if (wire_rc_req_decode(m, &copy) != 0) {
		node_count(n, NODE_CTR_bad_payload);
		return;
	}
	/*
	 * A write-through push: a holder first keeps the copy it replaces as the
	 * previous version. The push goes to the holders the home knows of; one
	 * whose copy the switch has dropped (a trimmed set, docs/design.md
	 * section 5) holds nothing to keep up to date: it says so (version 0),
	 * and the home pushes to it no more. Storing the push would make it a
	 * holder again.
	 */
	if (through && keep_stored(n, STORE_REPLICA, m, 0) < 0) {
		node_count(n, NODE_CTR_through_refused);
		send_ack(n, m, copy.owner, 0, from);
		return;
	}
	rc = store_replica_put(n->store, m->keyhash, m->key, m->key_len, m->version, copy.kind,
			       copy.ttl_ms ? now + copy.ttl_ms : 0, copy.value, copy.value_len, now,
			       &held);
	if (rc < 0) {
		node_count(n, NODE_CTR_store_errors);
		return;
	}
	if (rc == 0) {
		node_count(n, NODE_CTR_rc_req_stale);
		log_debug("stale RC_REQ: v%llu < held v%llu", (unsigned long long)m->version,
			  (unsigned long long)held);
	} else {
		node_count(n, NODE_CTR_rc_req);
	}
	/*
	 * The ack states what this node holds. A write-through push is confirmed
	 * to the home that waits for it (its reply lists this node to the
	 * switch); any other to the switch, which uses it only if it equals completed.
	 */
	send_ack(n, m, copy.owner, held, through ? from : NULL);
}

uint16_t repl_switch_id(const struct node *n, const struct sockaddr_in *from)
{
	for (int i = 0; i < n->nswitches; i++)
		if (n->switch_addr[i].sin_addr.s_addr == from->sin_addr.s_addr &&
		    n->switch_addr[i].sin_port == from->sin_port)
			return n->switch_ids[i];
	return 0;
}

/* Whether from is the address of switch `owner`. */
static bool from_switch(const struct node *n, uint16_t owner, const struct sockaddr_in *from)
{
	return owner != 0 && repl_switch_id(n, from) == owner;
}

bool repl_via_owner(const struct node *n, uint16_t owner, const struct sockaddr_in *from)
{
	return owner == 0 || from_switch(n, owner, from);
}

/*
 * UNREPLICATE key at node `target`, floor `version`, and wait for its answer,
 * from a socket of this worker's own (replies to it never reach the receive
 * thread).
 */
static bool drop_copy_at(struct node *n, const struct wire_msg *m, uint16_t target,
			 uint64_t version)
{
	static __thread int fd = -1;
	static __thread uint64_t seq;
	const struct cfg_node *cn = cfg_node_by_id(n->cfg, target);
	uint8_t out[WIRE_HDR_LEN + WIRE_MAX_KEY], in[WIRE_HDR_LEN + WIRE_MAX_KEY + 64];
	struct sockaddr_in to;

	if (!cn)
		return true; /* not in the config any more: it serves nothing */
	if (fd < 0 && (fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return false;
	struct wire_msg un = {
	    .op = WIRE_OP_UNREPLICATE,
	    .req_id = ((uint64_t)0xffff0000u | n->self->id) << 32 | ++seq,
	    .keyhash = m->keyhash,
	    .version = version,
	    .node = target,
	    .key = m->key,
	    .key_len = m->key_len,
	};
	int len = wire_encode(&un, out, sizeof(out));

	node_addr(cn, &to);
	for (int attempt = 0; attempt < REPL_DROP_TRIES && len > 0; attempt++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		struct wire_msg r;

		if (node_send_on(n, fd, &to, out, (size_t)len) != 0)
			continue;
		while (poll(&p, 1, REPL_DROP_WAIT_MS) > 0) {
			ssize_t got = recv(fd, in, sizeof(in), 0);
			size_t len = got > 0 ? (size_t)got : 0;

			if (len && wire_decode_header(in, len, &r) == WIRE_OK &&
			    r.req_id == un.req_id && r.op == (WIRE_OP_UNREPLICATE | WIRE_REPLY) &&
			    authentic_reply(n, in, &len))
				return r.status == WIRE_ST_OK;
		}
	}
	return false;
}

/*
 * Drop every copy c lists, confirmed, at the current version (or the node's
 * floor if it was collected: every version pushed so far), then forget the
 * copies record and the previous versions kept for reads the owner stamps.
 * Returns 0, -EAGAIN (a holder did not confirm) or -EIO.
 */
static int drop_copies(struct node *n, const struct wire_msg *m, const struct store_copies *c)
{
	struct store_record cur;
	int rc = store_get(n->store, STORE_OWNED, m->key, m->key_len, &cur, NULL, 0);
	uint64_t floor;

	if (rc < 0)
		return -EIO;
	floor = rc ? cur.version : store_floor(n->store);
	for (unsigned id = 1; id <= CFG_MAX_NODES; id++) {
		/*
		 * A holder the view marks down serves nothing: the switch took it
		 * out of every set, and it joins one again only by acking a
		 * version the switch has seen complete. Waiting for it would
		 * refuse every write past the switch until it is back.
		 */
		if (!has_node(c->targets, id) || members_marks_down(n, (uint16_t)id))
			continue;
		if (!drop_copy_at(n, m, (uint16_t)id, floor)) {
			node_count(n, NODE_CTR_bypass_refused);
			return -EAGAIN;
		}
	}
	if (store_copies_clear(n->store, m->key, m->key_len) != 0)
		return -EIO;
	/* The owner's stamps are stale from here (its note may be lost): no
	 * kept version may answer them, also while this write holds the turn. */
	through_forget(n->through, m->keyhash);
	through_forget_previous(n->through, m->keyhash);
	return 0;
}

int repl_before_write(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		      uint16_t *owner)
{
	struct store_copies c;
	struct store_record cur;
	int rc = store_copies_get(n->store, m->key, m->key_len, &c);

	if (rc <= 0)
		return rc; /* never replicated here, or -EIO */
	*owner = c.owner;
	if (from_switch(n, c.owner, from))
		return 0; /* through the owner: it records the completion before the client hears */
	/*
	 * The write bypasses the switch that may be spreading this key's reads
	 * over its copies (an agent fallen back to direct routing, a peer switch
	 * that lost the owner). Drop every copy, confirmed, before applying: a
	 * replica read then finds nothing and is sent home (MOVED). No REPLICATE
	 * adds copies once this write began (store_write_begin()); one that
	 * pushed before may still be on its way, and the replica refuses it: the
	 * current version is its floor.
	 */
	rc = store_get(n->store, STORE_OWNED, m->key, m->key_len, &cur, NULL, 0);
	if (rc < 0)
		return -EIO;
	/* A DEL of a key already deleted makes no new version: the copies stay right. */
	if (m->op == WIRE_OP_DEL && (rc == 0 || cur.kind == STORE_TOMBSTONE))
		return 0;
	rc = drop_copies(n, m, &c);
	if (rc)
		return rc;
	node_count(n, NODE_CTR_bypass_writes);
	return 1;
}

void repl_notify_owner(struct node *n, uint16_t owner, const struct wire_msg *rep)
{
	uint8_t dgram[WIRE_HDR_LEN + WIRE_MAX_KEY];
	struct wire_msg note = *rep;

	/*
	 * Shaped as a REPLICATE reply at the new version: the owner applies it
	 * like any reply (its set shrinks to {home}; the next epoch re-replicates)
	 * and consumes it, with no request of its own to account for.
	 */
	note.op = WIRE_OP_REPLICATE | WIRE_REPLY;
	note.status = WIRE_ST_OK;
	note.ret_ip = 0;
	note.ret_port = 0;
	note.val_len = 0;
	note.value = NULL;
	int len = wire_encode(&note, dgram, sizeof(dgram));
	const struct sockaddr_in *to = switch_addr_of(n, owner);

	if (to && len > 0)
		node_send(n, to, dgram, (size_t)len);
}

int repl_after_retry(struct node *n, const struct wire_msg *m, const struct sockaddr_in *from,
		     const struct wire_msg *rep)
{
	struct store_copies c;
	int rc;

	if (rep->status != WIRE_ST_OK && rep->status != WIRE_ST_NOT_FOUND)
		return 0;
	rc = store_copies_get(n->store, m->key, m->key_len, &c);
	if (rc <= 0 || from_switch(n, c.owner, from))
		return rc;
	rc = drop_copies(n, m, &c);
	if (rc)
		return rc;
	node_count(n, NODE_CTR_retry_notified);
	repl_notify_owner(n, c.owner, rep);
	return 0;
}

int repl_before_repair(struct node *n, const struct wire_msg *m, uint16_t *owner)
{
	struct store_copies c;
	int rc = store_copies_get(n->store, m->key, m->key_len, &c);

	*owner = 0;
	if (rc <= 0)
		return rc; /* never replicated here, or -EIO */
	rc = drop_copies(n, m, &c);
	if (rc == 0)
		*owner = c.owner;
	return rc;
}

void repl_unreplicate(struct node *n, const struct wire_msg *m, struct wire_msg *rep)
{
	int rc = store_replica_drop(n->store, m->keyhash, m->key, m->key_len, m->version,
				    store_now_ms());

	/*
	 * At the home, UNREPLICATE means the switch retired the key: forget the
	 * copies record. A copy whose own UNREPLICATE was lost stays out of every
	 * replica set (a node joins one only by acking the completed version).
	 */
	if (rc >= 0 && !node_home_for(n, m->keyhash, MEMBERS_WRITE))
		rc = store_copies_clear(n->store, m->key, m->key_len) == 0 ? rc : -EIO;
	through_forget(n->through, m->keyhash);
	if (rc < 0) {
		node_count(n, NODE_CTR_store_errors);
		rep->status = WIRE_ST_INTERNAL;
		return;
	}
	node_count(n, NODE_CTR_unreplicate);
	rep->status = WIRE_ST_OK;
}
