/*
 * chunk.h - values larger than one datagram (docs/protocol.md, "Chunked
 * operations").
 *
 * An op whose datagram would not fit the MTU is sent as several datagrams,
 * its chunks. Each is a whole datagram of the op: the same 48-byte header
 * (flag WIRE_F_CHUNK set, keyhash and key included, so that a switch routes
 * every chunk as it routes the first, with no state) whose value is an
 * 8-byte chunk header and a slice of the op's logical value:
 *
 *   be32 total   length of the logical value, 1..WIRE_CHUNK_MAX_TOTAL
 *   be16 index   0..count-1
 *   be16 count   2..WIRE_CHUNK_MAX_COUNT
 *
 * Slices have a fixed stride S = ceil(total / count): chunk i carries bytes
 * [i*S, min(total, (i+1)*S)) of the value, so a receiver checks each chunk's
 * length exactly and needs no offset field. wire_chunk_decode() validates one
 * chunk; struct wire_chunk_set gathers an op's chunks (node and agent alike).
 * Pure functions, no allocation but the set's own buffer.
 */
#ifndef SKL_CHUNK_H
#define SKL_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define WIRE_CHUNK_HDR_LEN   8
#define WIRE_CHUNK_MAX_COUNT 65535u
/* Protocol bound on a logical value: far above any max_value (262,144 + the RC_REQ prefix). */
#define WIRE_CHUNK_MAX_TOTAL (1u << 24)
/* IPv4 (20, no options) + UDP (8): what a datagram costs beyond its payload. */
#define WIRE_IP_UDP_LEN 28

/* Why wire_chunk_decode() or wire_chunk_set_add() refused a chunk: X(enum name, log name). */
#define WIRE_CHUNK_ERRORS(X)                                                                       \
	X(WIRE_CHUNK_OK, "ok")                                                                     \
	X(WIRE_CHUNK_ERR_SHORT, "chunk_short")	     /* value under the 8-byte chunk header */     \
	X(WIRE_CHUNK_ERR_TOTAL, "chunk_bad_total")   /* total 0 or over WIRE_CHUNK_MAX_TOTAL */    \
	X(WIRE_CHUNK_ERR_COUNT, "chunk_bad_count")   /* count < 2, or more chunks than bytes */    \
	X(WIRE_CHUNK_ERR_INDEX, "chunk_bad_index")   /* index >= count */                          \
	X(WIRE_CHUNK_ERR_LENGTH, "chunk_bad_length") /* slice not the stride's length */           \
	X(WIRE_CHUNK_ERR_MISMATCH, "chunk_mismatch") /* total/count/version differ in one op */    \
	X(WIRE_CHUNK_ERR_DUPLICATE, "chunk_duplicate")

enum wire_chunk_error {
#define X(name, str) name,
	WIRE_CHUNK_ERRORS(X)
#undef X
	    WIRE_CHUNK_ERR_COUNT_
};

/* One decoded chunk; data points into the datagram. */
struct wire_chunk {
	uint32_t total;
	uint16_t index, count;
	uint32_t offset; /* index * stride */
	uint32_t len;	 /* bytes at data */
	const uint8_t *data;
};

const char *wire_chunk_error_name(enum wire_chunk_error e);

/* The stride of a value of total bytes in count chunks. */
static inline uint32_t wire_chunk_stride(uint32_t total, uint16_t count)
{
	return (uint32_t)(((uint64_t)total + count - 1) / count);
}

/*
 * Is m (a decoded datagram with WIRE_F_CHUNK) a chunk other than the first?
 * For the switch, which counts an op once (its chunk 0): reads only the
 * index, and a chunk too short to have one counts as a first.
 */
static inline bool wire_chunk_is_later(const struct wire_msg *m)
{
	return m->val_len >= WIRE_CHUNK_HDR_LEN && wire_get16(m->value + 4) != 0;
}

/* Validate the chunk header and slice of m (flag WIRE_F_CHUNK set) into *c. */
enum wire_chunk_error wire_chunk_decode(const struct wire_msg *m, struct wire_chunk *c);

/*
 * Value bytes one chunk can carry in a datagram of at most mtu bytes (IPv4
 * and UDP included) with a key of key_len; 0 when not even one fits.
 */
uint32_t wire_chunk_room(uint32_t mtu, uint16_t key_len);

/*
 * Does msg (its value the whole logical value) need chunks at this MTU? Then
 * *count is how many (0 when it cannot be chunked at all: no room, or over
 * the protocol's bounds).
 */
bool wire_chunk_needed(const struct wire_msg *msg, uint32_t mtu, uint16_t *count);

/*
 * Encode chunk `index` of `count` of msg (whose value is the logical value)
 * into buf: msg's header with WIRE_F_CHUNK, the key, the chunk header and the
 * slice. Returns the length, -EINVAL (bad index/count for the value), or
 * -EMSGSIZE.
 */
int wire_chunk_encode(const struct wire_msg *msg, uint16_t index, uint16_t count, void *buf,
		      size_t cap);
/*
 * The same without the slice, for a sender that hands the kernel the slice
 * from msg's value itself (one iovec each): encodes the header, the key and
 * the chunk header into buf and points *slice (*slice_len bytes) into
 * msg->value. Returns the length in buf (the datagram is that plus
 * *slice_len), -EINVAL (bad index/count for the value) or -EMSGSIZE (buf
 * cannot take the head).
 */
int wire_chunk_encode_head(const struct wire_msg *msg, uint16_t index, uint16_t count, void *buf,
			   size_t cap, const uint8_t **slice, uint32_t *slice_len);
/* Bytes wire_chunk_encode_head() writes for a key of key_len bytes. */
static inline size_t wire_chunk_head_len(uint16_t key_len)
{
	return WIRE_HDR_LEN + (size_t)key_len + WIRE_CHUNK_HDR_LEN;
}

/*
 * An op's chunks being gathered. Fixed by the first chunk added: total,
 * count and tag (what else must agree: the agent puts a reply's version and
 * status there, so chunks of two versions never mix).
 */
struct wire_chunk_set {
	uint8_t *buf;	/* lead bytes, then the value */
	uint64_t *seen; /* a bit per index */
	uint64_t tag;
	uint32_t lead;
	uint32_t total;
	uint16_t count, got;
};

/*
 * Allocate a set for c's op: buf is lead + total bytes, the value at
 * buf + lead (room before it for a header the caller writes). 0 or -ENOMEM.
 */
int wire_chunk_set_init(struct wire_chunk_set *s, const struct wire_chunk *c, uint64_t tag,
			uint32_t lead);
/* The bytes such a set allocates (buf and bitmap), for a caller's memory accounting. */
size_t wire_chunk_set_bytes(const struct wire_chunk *c, uint32_t lead);
/*
 * Add c: WIRE_CHUNK_OK when taken, WIRE_CHUNK_ERR_MISMATCH (total, count or
 * tag not the set's) or WIRE_CHUNK_ERR_DUPLICATE, the set unchanged then.
 */
enum wire_chunk_error wire_chunk_set_add(struct wire_chunk_set *s, const struct wire_chunk *c,
					 uint64_t tag);
static inline bool wire_chunk_set_done(const struct wire_chunk_set *s)
{
	return s->count && s->got == s->count;
}
/* Free buf and the bitmap; the set is zeroed. */
void wire_chunk_set_free(struct wire_chunk_set *s);

#endif
