/*
 * mignet.c - RING, FETCH and MIGRATE at a node, and the warm-up thread
 * (mignet.h, docs/design.md section 12).
 */
#include "mignet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "log.h"
#include "rchange.h"
#include "ringmsg.h"
#include "send.h"

/* The low 16 bits of the ring version a record prefix carries (ringmsg.h). */
static uint16_t version_low(const struct node *n)
{
	return (uint16_t)rch_epoch_version(mig_epoch(&n->mig));
}

int mignet_request(struct node *n, uint16_t to, struct wire_msg *req, uint8_t *in, size_t incap,
		   struct wire_msg *rep)
{
	static __thread int fd = -1;
	static __thread uint64_t seq;
	const struct cfg *cfg = __atomic_load_n(&n->cfg, __ATOMIC_ACQUIRE);
	const struct cfg_node *cn = cfg_node_by_id(cfg, to);
	struct sockaddr_in addr = {.sin_family = AF_INET};

	if (!cn)
		return -ETIMEDOUT;
	if (fd < 0 && (fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -ETIMEDOUT;
	req->req_id = ((uint64_t)0xfffe0000u | n->self->id) << 32 | (uint32_t)++seq;
	req->node = to;
	addr.sin_addr.s_addr = htonl(cn->ip);
	addr.sin_port = htons(cn->port);
	for (int attempt = 0; attempt < MIGNET_TRIES; attempt++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		/* Whole or in chunks, sealed under a cluster key (proto/auth.h). */
		if (node_send_msg_fd(n, fd, &addr, req) != 0)
			continue;
		while (poll(&p, 1, MIGNET_WAIT_MS) > 0) {
			ssize_t got = recv(fd, in, incap, 0);
			size_t body = got > 0 ? (size_t)got : 0;

			/* Under a key the answer must carry its MAC; it is checked and cut off. */
			if (got > 0 && n->keyed &&
			    (wire_decode_header(in, body, rep) != WIRE_OK ||
			     wire_auth_check(&n->key, in, body, &body) != WIRE_AUTH_OK))
				continue;
			if (got > 0 && wire_decode(in, body, rep) == WIRE_OK &&
			    rep->req_id == req->req_id && rep->op == (req->op | WIRE_REPLY))
				return 0;
		}
	}
	return -ETIMEDOUT;
}

/* The at-most-once outcomes a record carries, between the wire and migrate.h's form. */
void mignet_writes_to_wire(const struct mig_record *rec, struct wire_mig_prefix *pre)
{
	pre->nwrites = rec->nwrites;
	for (uint8_t i = 0; i < rec->nwrites; i++)
		pre->writes[i] = (struct wire_mig_write){.req_id = rec->writes[i].req_id,
							 .version = rec->writes[i].version,
							 .status = rec->writes[i].status};
}

void mignet_writes_from_wire(const struct wire_mig_prefix *pre, struct mig_record *rec)
{
	rec->nwrites = pre->nwrites;
	for (uint8_t i = 0; i < pre->nwrites; i++)
		rec->writes[i] = (struct dedup_write){.req_id = pre->writes[i].req_id,
						      .version = pre->writes[i].version,
						      .status = pre->writes[i].status};
}

static int net_fetch(void *arg, uint16_t from, uint64_t epoch, uint64_t hash, const void *key,
		     size_t klen, struct mig_record *rec, void *buf, size_t cap)
{
	static __thread uint8_t in[NODE_MAX_DGRAM + WIRE_MAX_KEY];
	struct node *n = arg;
	struct wire_msg req = {.op = WIRE_OP_FETCH,
			       .keyhash = hash,
			       .version = epoch,
			       .key = key,
			       .key_len = (uint16_t)klen};
	struct wire_msg rep;
	struct wire_mig_prefix pre;
	const uint8_t *val;
	uint32_t vlen;

	if (mignet_request(n, from, &req, in, sizeof(in), &rep) != 0)
		return -ETIMEDOUT;
	if (rep.status == WIRE_ST_NOT_FOUND) {
		*rec = (struct mig_record){.version = rep.version}; /* its version floor */
		return 0;
	}
	if (rep.status != WIRE_ST_OK || wire_mig_prefix_decode(&rep, &pre, &val, &vlen) != 0 ||
	    pre.version_low != version_low(n) || vlen > cap)
		return -EAGAIN;
	memcpy(buf, val, vlen);
	*rec = (struct mig_record){.kind = pre.kind,
				   .version = rep.version,
				   .ttl_ms = pre.ttl_ms,
				   .value = buf,
				   .value_len = vlen};
	mignet_writes_from_wire(&pre, rec);
	return 1;
}

static int net_push(void *arg, uint16_t to, uint64_t epoch, uint64_t hash, const void *key,
		    size_t klen, const struct mig_record *rec)
{
	static __thread uint8_t in[WIRE_HDR_LEN + WIRE_MAX_KEY + 64];
	static __thread uint8_t value[NODE_MAX_DGRAM];
	struct node *n = arg;
	struct wire_mig_prefix pre = {.kind = rec->kind,
				      .version_low = (uint16_t)rch_epoch_version(epoch),
				      .ttl_ms = rec->ttl_ms};
	struct wire_msg rep, req = {.op = WIRE_OP_MIGRATE,
				    .keyhash = hash,
				    .version = rec->version,
				    .key = key,
				    .key_len = (uint16_t)klen,
				    .value = value};
	int plen;

	mignet_writes_to_wire(rec, &pre);
	plen = wire_mig_prefix_encode(&pre, value, sizeof(value));
	if (plen < 0 || rec->value_len > sizeof(value) - (size_t)plen)
		return -EINVAL;
	memcpy(value + plen, rec->value, rec->value_len);
	req.val_len = (uint32_t)plen + rec->value_len;
	if (mignet_request(n, to, &req, in, sizeof(in), &rep) != 0)
		return -ETIMEDOUT;
	return rep.status == WIRE_ST_OK ? 0 : -EAGAIN;
}

const struct mig_transport mignet_transport = {.fetch = net_fetch, .push = net_push};

/* ---- RING: a switch announces a change, or its next step. ------------------------------- */

/* Begin the change to ring version `version` of the config file, from the members in r. */
static int begin_change(struct node *n, const struct wire_ring *r, uint64_t epoch)
{
	struct cfg *c = malloc(sizeof(*c));
	struct ring_node *members = calloc(WIRE_RING_MAX_MEMBERS, sizeof(*members));
	struct ring prev = {0}, next = {0};
	char err[CFG_ERR_LEN];
	int rc = -EINVAL;

	if (!c || !members) {
		rc = -ENOMEM;
		goto out;
	}
	if (cfg_load(n->cfg->path, c, err, sizeof(err)) != 0) {
		log_warn("RING for ring version %lu: %s", (unsigned long)rch_epoch_version(epoch),
			 err);
		goto out;
	}
	if (c->ring_version != rch_epoch_version(epoch) || !cfg_node_by_id(c, n->self->id)) {
		log_warn("RING for ring version %lu, but %s has version %lu%s: install the new "
			 "config first",
			 (unsigned long)rch_epoch_version(epoch), n->cfg->path,
			 (unsigned long)c->ring_version,
			 cfg_node_by_id(c, n->self->id) ? "" : " without this node");
		goto out;
	}
	for (uint16_t i = 0; i < r->nmembers; i++) {
		const struct cfg_node *cn = cfg_node_by_id(c, r->members[i].id);

		if (!cn) {
			log_warn("RING: previous member %u is not in %s", r->members[i].id,
				 n->cfg->path);
			goto out;
		}
		members[i].id = cn->id;
		members[i].weight = r->members[i].weight;
		snprintf(members[i].name, sizeof(members[i].name), "%s", cn->name);
	}
	if (ring_build(&prev, members, r->nmembers, r->prev_version) != 0 ||
	    cfg_build_ring(c, &next) != 0) {
		log_warn("RING for ring version %lu: cannot build the rings",
			 (unsigned long)rch_epoch_version(epoch));
		goto out;
	}
	rc = mig_begin(&n->mig, &prev, &next, rch_epoch_active(epoch));
	if (rc == 0) {
		/* The new nodes' addresses for FETCH, MIGRATE and the source checks. */
		__atomic_store_n(&n->cfg, c, __ATOMIC_RELEASE);
		c = NULL; /* kept for the process's life: readers may hold the previous one */
		log_info("ring change %lu -> %lu begun (%u of its arcs active)",
			 (unsigned long)r->prev_version, (unsigned long)next.version,
			 rch_epoch_active(epoch));
	} else {
		log_warn("RING for ring version %lu: %s", (unsigned long)next.version,
			 rc == -EBUSY ? "another change is not complete" : strerror(-rc));
	}
out:
	ring_free(&prev);
	ring_free(&next);
	free(members);
	free(c);
	return rc;
}

void mignet_ring(struct node *n, const struct wire_msg *m, struct wire_msg *rep, uint8_t *out,
		 size_t cap)
{
	/* One RING at a time: two workers taking the switch's resends at once would
	 * both load the config and begin the change. */
	static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
	static __thread struct wire_ring r;
	uint64_t cur, want = rch_epoch_version(m->version);
	int rc = 0;

	rep->status = WIRE_ST_OK;
	if (wire_ring_decode(m, &r) != 0) {
		node_count(n, NODE_CTR_bad_payload);
		rep->status = WIRE_ST_BAD_REQUEST;
		return;
	}
	pthread_mutex_lock(&ring_lock);
	cur = mig_epoch(&n->mig);
	/* The floor first: at the complete epoch this node stops reading through. */
	rc = mig_take_floor(&n->mig, r.floor);
	if (rc == 0 && want == rch_epoch_version(cur) && !mig_joining(&n->mig))
		rc = mig_advance(&n->mig, m->version);
	else if (rc == 0 && (want > rch_epoch_version(cur) || mig_joining(&n->mig)))
		rc = begin_change(n, &r, m->version);
	pthread_mutex_unlock(&ring_lock);
	if (rc < 0)
		rep->status = WIRE_ST_UNAVAILABLE;
	rep->version = mig_epoch(&n->mig);
	if (cap >= WIRE_HDR_LEN + WIRE_RING_REPLY_LEN) {
		struct wire_ring_reply reply = {
		    .flags = mig_warm_done(&n->mig) ? WIRE_RING_F_WARM_DONE : 0,
		    .floor = mig_floor(&n->mig)};
		uint32_t arcs_out;

		mig_warm_progress(&n->mig, &arcs_out, &reply.arcs_done);
		rep->value = out + WIRE_HDR_LEN;
		rep->val_len = (uint32_t)wire_ring_reply_encode(&reply, out + WIRE_HDR_LEN,
								WIRE_RING_REPLY_LEN);
	}
}

void mignet_fetch(struct node *n, const struct wire_msg *m, struct wire_msg *rep, uint8_t *out,
		  size_t cap)
{
	uint8_t *val = out + WIRE_HDR_LEN + m->key_len;
	size_t room = cap - WIRE_HDR_LEN - m->key_len - WIRE_MIG_PREFIX_MAX;
	struct mig_record rec;
	uint32_t vlen;
	int plen;
	/* The value is read past the longest prefix, then moved up to the one it gets. */
	int rc = mig_serve_fetch(&n->mig, m->version, m->keyhash, m->key, m->key_len, &rec,
				 val + WIRE_MIG_PREFIX_MAX, room, store_now_ms());

	if (rc == 0) {
		rep->status = WIRE_ST_NOT_FOUND;
		rep->version = rec.version; /* this node's version floor */
		return;
	}
	if (rc < 0) {
		rep->status = rc == -EAGAIN ? WIRE_ST_UNAVAILABLE : WIRE_ST_INTERNAL;
		return;
	}
	struct wire_mig_prefix pre = {
	    .kind = rec.kind, .version_low = version_low(n), .ttl_ms = rec.ttl_ms};

	mignet_writes_to_wire(&rec, &pre);
	plen = wire_mig_prefix_encode(&pre, val, WIRE_MIG_PREFIX_MAX);
	if (plen < 0) {
		rep->status = WIRE_ST_INTERNAL;
		return;
	}
	vlen = rec.kind == STORE_VALUE ? rec.value_len : 0;
	memmove(val + plen, val + WIRE_MIG_PREFIX_MAX, vlen);
	rep->status = WIRE_ST_OK;
	rep->version = rec.version;
	rep->value = val;
	rep->val_len = (uint32_t)plen + vlen;
}

void mignet_migrate(struct node *n, const struct wire_msg *m, struct wire_msg *rep)
{
	struct wire_mig_prefix pre;
	const uint8_t *val;
	uint32_t vlen;
	struct mig_record rec;
	int rc;

	if (wire_mig_prefix_decode(m, &pre, &val, &vlen) != 0) {
		node_count(n, NODE_CTR_bad_payload);
		rep->status = WIRE_ST_BAD_REQUEST;
		return;
	}
	if (pre.version_low != version_low(n)) {
		rep->status = WIRE_ST_UNAVAILABLE; /* not in the same change (yet) */
		return;
	}
	rec = (struct mig_record){.kind = pre.kind,
				  .version = m->version,
				  .ttl_ms = pre.ttl_ms,
				  .value = val,
				  .value_len = vlen};
	mignet_writes_from_wire(&pre, &rec);
	rc = mig_serve_push(&n->mig, mig_epoch(&n->mig), m->keyhash, m->key, m->key_len, &rec,
			    store_now_ms());
	rep->status = rc == 0 ? WIRE_ST_OK : rc == -EAGAIN ? WIRE_ST_UNAVAILABLE : WIRE_ST_INTERNAL;
}

/* ---- The warm-up thread. ------------------------------------------------------------- */

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void *warmup_main(void *arg)
{
	struct node *n = arg;
	struct mig_pace pace = {0};
	bool was_done = true;

	while (!atomic_load(&n->stop_bg)) {
		const struct cfg *cfg = __atomic_load_n(&n->cfg, __ATOMIC_ACQUIRE);
		/* The pushes ring.warmup_keys_per_s allows since the last step. */
		uint32_t budget =
		    mig_pace_take(&pace, cfg->warmup_keys_per_s, clock_mono_us() / 1000);
		bool done = false;
		int rc;

		if (budget == 0) {
			sleep_ms(MIGNET_TICK_MS);
			continue;
		}
		rc = mig_warmup_step(&n->mig, budget, store_now_ms(), &done);
		if (done && !was_done)
			log_info("warm-up done: %lu keys pushed to their new homes",
				 (unsigned long)atomic_load(&n->mig.ctr[MIG_CTR_pushed]));
		was_done = done;
		/* A new home that does not answer: try again a little later. */
		sleep_ms(rc < 0 ? 10 * MIGNET_TICK_MS : MIGNET_TICK_MS);
	}
	return NULL;
}

int mignet_start(struct node *n)
{
	int rc = pthread_create(&n->warmup_thread, NULL, warmup_main, n);

	if (rc == 0)
		pthread_setname_np(n->warmup_thread, "skl-warmup");
	return -rc;
}

void mignet_stop(struct node *n)
{
	pthread_join(n->warmup_thread, NULL);
}
