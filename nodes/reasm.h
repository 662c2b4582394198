/*
 * reasm.h - the node's table of chunked operations being gathered
 * (docs/protocol.md, "Chunked operations").
 *
 * Receivers add and expire, one at a time (under their own lock); a worker that has served a
 * completed op gives its bytes back with reasm_release() (an atomic), so the
 * cap covers an op from its first chunk until a worker is done with it.
 * An op is known by who sent it (the client: ret_ip:ret_port when a switch
 * stamped them, else the datagram's source), its req_id, op and keyhash: its
 * chunks may come through different switches. Knows nothing of the node.
 */
#ifndef SKL_NODE_REASM_H
#define SKL_NODE_REASM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "chunk.h"
#include "wire.h"

/* What became of a chunk (reasm_add()). The drops are counted by the caller. */
enum reasm_result {
	REASM_PARTIAL,	 /* taken; the op still misses chunks */
	REASM_COMPLETE,	 /* taken, and it was the last: *done holds the whole datagram */
	REASM_DUPLICATE, /* an index already taken: dropped */
	REASM_MISMATCH,	 /* total, count or key differ from the op's first chunk: dropped */
	REASM_FULL,	 /* starting this op would pass the cap: dropped (OVERLOADED) */
	REASM_NOMEM,	 /* malloc failed: dropped */
};

struct reasm_key {
	uint32_t client_ip; /* host order */
	uint16_t client_port;
	uint8_t op;
	uint64_t req_id;
	uint64_t keyhash;
};

struct reasm_entry;

struct reasm {
	struct reasm_entry **buckets;
	uint32_t nbuckets;		     /* a power of two */
	struct reasm_entry *oldest, *newest; /* by first chunk: expiry order */
	uint32_t live;			     /* ops being gathered */
	uint64_t cap;			     /* bytes */
	uint64_t timeout_ns;
	_Atomic uint64_t used; /* bytes of ops gathered or completed and not yet released */
};

int reasm_init(struct reasm *r, uint64_t cap_bytes, uint64_t timeout_ns);
/* Free every op still being gathered (completed ones belong to their holders). */
void reasm_free(struct reasm *r);

/*
 * Add chunk c of the datagram m (validated by wire_decode() and
 * wire_chunk_decode()) at time now. On REASM_COMPLETE, *done is a malloc'd
 * datagram of *done_len bytes: the last chunk's header without WIRE_F_CHUNK,
 * the key and the whole value, as if it had come in one piece; the caller
 * frees it and then calls reasm_release(r, *charged).
 */
enum reasm_result reasm_add(struct reasm *r, const struct reasm_key *k, const struct wire_msg *m,
			    const struct wire_chunk *c, uint64_t now, uint8_t **done,
			    size_t *done_len, size_t *charged);

/* Give back the bytes of a completed op once its datagram is freed. Any thread. */
void reasm_release(struct reasm *r, size_t charged);

/* Drop the ops whose first chunk came more than the timeout before now; returns how many. */
unsigned reasm_expire(struct reasm *r, uint64_t now);

/* The bytes in use (gathering and completed, not released). */
static inline uint64_t reasm_used(struct reasm *r)
{
	return atomic_load_explicit(&r->used, memory_order_relaxed);
}

#endif
