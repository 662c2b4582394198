/*
 * reasm.c - gathering chunked operations on the node (reasm.h).
 *
 * A chained hash of the ops being gathered, and the same entries on a list in
 * the order their first chunk came, which is their expiry order (a fixed
 * timeout from the first chunk): reasm_expire() only looks at the head.
 */
#include "reasm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct reasm_entry {
	struct reasm_entry *next_in_bucket;
	struct reasm_entry *older, *newer;
	struct reasm_key key;
	uint64_t first_ns;
	size_t charged; /* bytes counted in r->used */
	struct wire_chunk_set set;
};

/* 4096 buckets: ops at the cap of small chunked values (64 MB / 1.4 KB) chain ~10 deep. */
#define REASM_BUCKETS 4096u

int reasm_init(struct reasm *r, uint64_t cap_bytes, uint64_t timeout_ns)
{
	memset(r, 0, sizeof(*r));
	r->buckets = calloc(REASM_BUCKETS, sizeof(*r->buckets));
	if (!r->buckets)
		return -ENOMEM;
	r->nbuckets = REASM_BUCKETS;
	r->cap = cap_bytes;
	r->timeout_ns = timeout_ns;
	atomic_init(&r->used, 0);
	return 0;
}

static uint32_t bucket_of(const struct reasm *r, const struct reasm_key *k)
{
	uint64_t h = k->keyhash ^ (k->req_id * 0x9e3779b97f4a7c15ull) ^
		     ((uint64_t)k->client_ip << 16 | k->client_port) ^ k->op;

	return (uint32_t)(h ^ (h >> 29)) & (r->nbuckets - 1);
}

static bool same_key(const struct reasm_key *a, const struct reasm_key *b)
{
	return a->client_ip == b->client_ip && a->client_port == b->client_port && a->op == b->op &&
	       a->req_id == b->req_id && a->keyhash == b->keyhash;
}

static struct reasm_entry **find(struct reasm *r, const struct reasm_key *k)
{
	struct reasm_entry **pp = &r->buckets[bucket_of(r, k)];

	while (*pp && !same_key(&(*pp)->key, k))
		pp = &(*pp)->next_in_bucket;
	return pp;
}

/* Unlink e (found at *pp in its bucket) from the table and the age list. */
static void unlink_entry(struct reasm *r, struct reasm_entry **pp, struct reasm_entry *e)
{
	*pp = e->next_in_bucket;
	if (e->older)
		e->older->newer = e->newer;
	else
		r->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		r->newest = e->older;
	r->live--;
}

static void drop_entry(struct reasm *r, struct reasm_entry **pp, struct reasm_entry *e)
{
	unlink_entry(r, pp, e);
	wire_chunk_set_free(&e->set);
	reasm_release(r, e->charged);
	free(e);
}

void reasm_free(struct reasm *r)
{
	while (r->oldest)
		drop_entry(r, find(r, &r->oldest->key), r->oldest);
	free(r->buckets);
	r->buckets = NULL;
}

void reasm_release(struct reasm *r, size_t charged)
{
	atomic_fetch_sub_explicit(&r->used, charged, memory_order_relaxed);
}

/* Start an op at its first chunk to arrive (any index). */
static enum reasm_result start(struct reasm *r, struct reasm_entry **pp, const struct reasm_key *k,
			       const struct wire_msg *m, const struct wire_chunk *c, uint64_t now,
			       struct reasm_entry **out)
{
	uint32_t lead = WIRE_HDR_LEN + m->key_len;
	size_t charged = sizeof(struct reasm_entry) + wire_chunk_set_bytes(c, lead);
	struct reasm_entry *e;

	if (reasm_used(r) + charged > r->cap)
		return REASM_FULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return REASM_NOMEM;
	if (wire_chunk_set_init(&e->set, c, 0, lead) != 0) {
		free(e);
		return REASM_NOMEM;
	}
	/* The key bytes now: every later chunk must carry the same. */
	memcpy(e->set.buf + WIRE_HDR_LEN, m->key, m->key_len);
	e->key = *k;
	e->first_ns = now;
	e->charged = charged;
	atomic_fetch_add_explicit(&r->used, charged, memory_order_relaxed);
	*pp = e;
	e->older = r->newest;
	if (r->newest)
		r->newest->newer = e;
	else
		r->oldest = e;
	r->newest = e;
	r->live++;
	*out = e;
	return REASM_PARTIAL;
}

enum reasm_result reasm_add(struct reasm *r, const struct reasm_key *k, const struct wire_msg *m,
			    const struct wire_chunk *c, uint64_t now, uint8_t **done,
			    size_t *done_len, size_t *charged)
{
	struct reasm_entry **pp = find(r, k), *e = *pp;
	enum wire_chunk_error err;
	uint8_t *buf;

	if (!e) {
		enum reasm_result res = start(r, pp, k, m, c, now, &e);

		if (res != REASM_PARTIAL)
			return res;
		pp = find(r, k);
	} else if ((uint32_t)m->key_len + WIRE_HDR_LEN != e->set.lead ||
		   memcmp(e->set.buf + WIRE_HDR_LEN, m->key, m->key_len) != 0) {
		return REASM_MISMATCH;
	}
	err = wire_chunk_set_add(&e->set, c, 0);
	if (err == WIRE_CHUNK_ERR_DUPLICATE)
		return REASM_DUPLICATE;
	if (err != WIRE_CHUNK_OK)
		return REASM_MISMATCH;
	if (!wire_chunk_set_done(&e->set))
		return REASM_PARTIAL;
	/* Whole: the last chunk's header, as one datagram of the op. */
	buf = e->set.buf;
	memcpy(buf, m->value - m->key_len - WIRE_HDR_LEN, WIRE_HDR_LEN);
	wire_put16(buf + WIRE_OFF_FLAGS, (uint16_t)(m->flags & ~WIRE_F_CHUNK));
	wire_put32(buf + WIRE_OFF_VAL_LEN, e->set.total);
	*done = buf;
	*done_len = (size_t)e->set.lead + e->set.total;
	*charged = e->charged;
	e->set.buf = NULL; /* the caller's now, still charged */
	unlink_entry(r, pp, e);
	wire_chunk_set_free(&e->set);
	free(e);
	return REASM_COMPLETE;
}

unsigned reasm_expire(struct reasm *r, uint64_t now)
{
	unsigned n = 0;

	while (r->oldest && now - r->oldest->first_ns > r->timeout_ns) {
		drop_entry(r, find(r, &r->oldest->key), r->oldest);
		n++;
	}
	return n;
}
