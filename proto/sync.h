/*
 * sync.h - the SYNC payload (layout 1, docs/protocol.md "SYNC payload"):
 * what peer switches tell each other every sync interval. One datagram's
 * value is a 44-byte header, a per-kind header and items (node scores,
 * hot-key candidates, or a slice of the sender's owned list).
 *
 * sync_decode() validates a whole value and points into it; sync_msg_*()
 * then walk the items. The encoder appends items while they fit. The
 * protocol state built from these messages is switchd/peer.h.
 */
#ifndef SKL_SYNC_H
#define SKL_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define SYNC_MAX_KEY	   256	/* key bytes of a candidate or owned item */
#define SYNC_MAX_OWNED	   4096 /* items an owned list may have (total) */
#define SYNC_LAYOUT	   2
#define SYNC_HDR_LEN	   68
#define SYNC_CAND_HDR_LEN  16 /* window_id, samples */
#define SYNC_OWNED_HDR_LEN 12 /* version, total, first */
#define SYNC_SCORE_LEN	   8
#define SYNC_AGE_NEVER	   UINT32_MAX /* no digest from that node yet */

/* What one SYNC datagram carries after the common header. */
enum sync_kind { SYNC_K_SCORES = 0, SYNC_K_CANDS = 1, SYNC_K_OWNED = 2, SYNC_K_COUNT };

/* Why sync_decode() rejected a SYNC payload: X(enum name, counter name). */
#define SYNC_ERRORS(X)                                                                             \
	X(SYNC_OK, "ok")                                                                           \
	X(SYNC_ERR_SHORT, "sync_short")                                                            \
	X(SYNC_ERR_LAYOUT, "sync_bad_layout")                                                      \
	X(SYNC_ERR_KIND, "sync_bad_kind")                                                          \
	X(SYNC_ERR_SENDER, "sync_bad_sender")                                                      \
	X(SYNC_ERR_INCARNATION, "sync_bad_incarnation")                                            \
	X(SYNC_ERR_SEQ, "sync_bad_seq")                                                            \
	X(SYNC_ERR_RESERVED, "sync_bad_reserved")                                                  \
	X(SYNC_ERR_TRUNCATED, "sync_truncated")                                                    \
	X(SYNC_ERR_TRAILING, "sync_trailing_bytes")                                                \
	X(SYNC_ERR_NODE, "sync_bad_node")                                                          \
	X(SYNC_ERR_HEALTH, "sync_bad_health")                                                      \
	X(SYNC_ERR_FLAGS, "sync_bad_flags")                                                        \
	X(SYNC_ERR_KEY_LEN, "sync_bad_key_len")                                                    \
	X(SYNC_ERR_RANGE, "sync_bad_range")                                                        \
	X(SYNC_ERR_RING, "sync_bad_ring")

enum sync_error {
#define X(name, str) name,
	SYNC_ERRORS(X)
#undef X
	    SYNC_ERR_COUNT
};

const char *sync_error_name(enum sync_error e);

struct sync_score {
	uint16_t node;
	uint8_t health;	 /* 0..100 */
	uint8_t alive;	 /* 0 or 1 */
	uint32_t age_ms; /* age of the sender's last digest from node; SYNC_AGE_NEVER */
};

struct sync_cand {
	uint64_t keyhash;
	uint32_t count; /* samples in the window */
	uint16_t key_len;
	const uint8_t *key; /* decode: points into the datagram */
};

/* A decoded SYNC datagram; arrays point into the datagram (scores are copied). */
struct sync_msg {
	uint8_t kind;
	uint16_t sender;
	uint32_t incarnation;
	uint32_t seq;
	uint32_t echo_incarnation; /* the destination's incarnation, as the sender knows it */
	uint64_t ts_us;		   /* sender's clock at send */
	uint64_t echo_ts_us;	   /* newest heartbeat ts the sender got from the destination */
	uint64_t confirmed;	   /* the destination's owned-list version the sender applied */
	uint16_t count;
	/*
	 * The sender's ring (docs/design.md section 12, "Peer switches"): the
	 * epoch its workers route by, the highest epoch it is ready for (its
	 * directory holds no entry whose home moves up to it; >= ring_epoch),
	 * and the version of the ring the change runs from (0: none).
	 */
	uint64_t ring_epoch;
	uint64_t ring_ready;
	uint64_t ring_prev;
	/* SYNC_K_CANDS */
	uint64_t window_id;
	uint64_t samples;
	/* SYNC_K_OWNED */
	uint64_t owned_version;
	uint16_t owned_total, owned_first;
	/* items; for SYNC_K_OWNED the count field of each cand is 0 */
	const uint8_t *items; /* raw, validated */
	size_t items_len;
};

/* Validate buf[0..len) (the SYNC datagram's value) and fill *m. */
enum sync_error sync_decode(const void *buf, size_t len, struct sync_msg *m);
/* Item i of a decoded message (scores: *s; cands/owned: *c). Valid after SYNC_OK. */
void sync_msg_score(const struct sync_msg *m, unsigned i, struct sync_score *s);
/* Walk cands/owned items in order: *off starts at 0. */
void sync_msg_cand(const struct sync_msg *m, size_t *off, struct sync_cand *c);

/*
 * Encoder: a header template plus items appended while they fit. sync_enc_*
 * return 0, or -EMSGSIZE when the item does not fit (nothing written).
 */
struct sync_enc {
	uint8_t *buf;
	size_t cap, len;
	uint16_t count;
	uint8_t kind;
};
int sync_enc_begin(struct sync_enc *e, void *buf, size_t cap, const struct sync_msg *hdr);
int sync_enc_score(struct sync_enc *e, const struct sync_score *s);
int sync_enc_cand(struct sync_enc *e, uint64_t keyhash, uint32_t count, const uint8_t *key,
		  uint16_t key_len);
/* Patch the item count; returns the datagram value's length. */
size_t sync_enc_end(struct sync_enc *e);

#endif
