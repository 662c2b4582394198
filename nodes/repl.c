/*
 * repl.c - replica copies (DESIGN.md section 5, home-primary variant).
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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "server.h"

/* REPLICATE value: be16 owner switch id, then 1..16 be16 target node ids. */
static int replicate_payload_ok(const struct wire_msg *m)
{
	return m->val_len >= 4 && m->val_len % 2 == 0 && m->val_len <= 2 + 2 * CFG_MAX_REPLICAS;
}

static void node_addr(const struct cfg_node *cn, struct sockaddr_in *a)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(cn->ip);
	a->sin_port = htons(cn->port);
}

void repl_replicate(struct node *n, const struct wire_msg *m, struct wire_msg *rep)
{
	uint8_t val[NODE_MAX_DGRAM], dgram[NODE_MAX_DGRAM + WIRE_MAX_KEY];
	struct store_record rec;
	uint64_t now = store_now_ms();
	int rc;

	if (!replicate_payload_ok(m)) {
		node_count(n, NODE_CTR_bad_payload);
		rep->status = WIRE_ST_BAD_REQUEST;
		return;
	}
	if (ring_home(&n->ring, m->keyhash) != n->self->id) {
		node_count(n, NODE_CTR_moved);
		rep->status = WIRE_ST_MOVED;
		rep->node = ring_home(&n->ring, m->keyhash);
		return;
	}
	node_count(n, NODE_CTR_replicate);
	rc = store_get(n->store, STORE_OWNED, m->key, m->key_len, &rec, val + REPL_PREFIX_LEN,
		       sizeof(val) - REPL_PREFIX_LEN);
	if (rc < 0) {
		node_count(n, NODE_CTR_store_errors);
		rep->status = WIRE_ST_INTERNAL;
		return;
	}
	rep->status = rc ? WIRE_ST_OK : WIRE_ST_NOT_FOUND;
	rep->version = rc ? rec.version : 0;
	/*
	 * Push only the exact version the switch saw complete (0: whatever is
	 * current). A newer local version means a newer write is in flight and
	 * its own REPLICATE follows. An expired value is not pushed: its copy
	 * would have nothing left to serve.
	 */
	if (rc == 0 || (m->version != 0 && m->version != rec.version) ||
	    (rec.kind == STORE_VALUE && !store_record_live(&rec, now))) {
		node_count(n, NODE_CTR_replicate_skipped);
		return;
	}
	uint16_t owner = wire_get16(m->value);
	uint64_t ttl = rec.kind == STORE_VALUE && rec.time_ms ? rec.time_ms - now : 0;
	struct wire_msg rc_req = {
	    .op = WIRE_OP_RC_REQ,
	    .req_id = m->req_id,
	    .keyhash = m->keyhash,
	    .version = rec.version,
	    .node = n->self->id,
	    .key = m->key,
	    .key_len = m->key_len,
	    .value = val,
	    .val_len = REPL_PREFIX_LEN + rec.value_len,
	};

	wire_put16(val, owner);
	val[2] = rec.kind;
	val[3] = 0;
	wire_put32(val + 4, ttl > UINT32_MAX ? UINT32_MAX : (uint32_t)ttl);
	int len = wire_encode(&rc_req, dgram, sizeof(dgram));

	if (len < 0)
		return;
	for (uint32_t i = 2; i + 2 <= m->val_len; i += 2) {
		uint16_t target = wire_get16(m->value + i);
		const struct cfg_node *cn = cfg_node_by_id(n->cfg, target);
		struct sockaddr_in to;

		if (!cn || target == n->self->id)
			continue;
		rc_req.node = target;
		wire_put16(dgram + WIRE_OFF_NODE, target);
		node_addr(cn, &to);
		if (node_send(n, &to, dgram, (size_t)len) == 0)
			node_count(n, NODE_CTR_rc_req_sent);
	}
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

/* Send RC_ACK(version) for key to the owner switch, or to every switch when unknown. */
static void send_ack(struct node *n, const struct wire_msg *m, uint16_t owner, uint64_t version)
{
	uint8_t dgram[WIRE_HDR_LEN + WIRE_MAX_KEY];
	struct wire_msg ack = {
	    .op = WIRE_OP_RC_ACK,
	    .req_id = m->req_id,
	    .keyhash = m->keyhash,
	    .version = version,
	    .node = n->self->id,
	    .load = node_load(n),
	    .key = m->key,
	    .key_len = m->key_len,
	};
	int len = wire_encode(&ack, dgram, sizeof(dgram)), known = 0;

	if (len < 0)
		return;
	for (int i = 0; i < n->nswitches; i++)
		if (owner != 0 && n->switch_ids[i] == owner)
			known = 1;
	for (int i = 0; i < n->nswitches; i++) {
		if (known && n->switch_ids[i] != owner)
			continue;
		if (n->ack_delay_ms)
			send_late(n, &n->switch_addr[i], dgram, (size_t)len);
		else if (node_send(n, &n->switch_addr[i], dgram, (size_t)len) == 0)
			node_count(n, NODE_CTR_rc_ack_sent);
	}
}

void repl_rc_req(struct node *n, const struct wire_msg *m)
{
	uint64_t now = store_now_ms(), held = 0;
	uint8_t kind;
	uint32_t ttl;
	int rc;

	if (m->val_len < REPL_PREFIX_LEN || m->value[2] > STORE_TOMBSTONE || m->value[3] != 0 ||
	    (m->value[2] == STORE_TOMBSTONE && m->val_len != REPL_PREFIX_LEN) || m->version == 0) {
		node_count(n, NODE_CTR_bad_payload);
		return;
	}
	kind = m->value[2];
	ttl = wire_get32(m->value + 4);
	rc = store_replica_put(n->store, m->keyhash, m->key, m->key_len, m->version, kind,
			       ttl ? now + ttl : 0, m->value + REPL_PREFIX_LEN,
			       m->val_len - REPL_PREFIX_LEN, now, &held);
	if (rc < 0) {
		node_count(n, NODE_CTR_store_errors);
		return;
	}
	if (rc == 0) {
		node_count(n, NODE_CTR_rc_req_stale);
		nlog_debug("stale RC_REQ: v%llu < held v%llu", (unsigned long long)m->version,
			   (unsigned long long)held);
	} else {
		node_count(n, NODE_CTR_rc_req);
	}
	/* The ack states what this node holds; the switch uses it only if it equals completed. */
	send_ack(n, m, wire_get16(m->value), held);
}

void repl_unreplicate(struct node *n, const struct wire_msg *m, struct wire_msg *rep)
{
	int rc = store_replica_drop(n->store, m->keyhash, m->key, m->key_len);

	if (rc < 0) {
		node_count(n, NODE_CTR_store_errors);
		rep->status = WIRE_ST_INTERNAL;
		return;
	}
	node_count(n, NODE_CTR_unreplicate);
	rep->status = WIRE_ST_OK;
}
