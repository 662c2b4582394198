/*
 * health.h - the switch's per-node health table (docs/design.md section 6).
 *
 * Flat arrays indexed by node id (1..CFG_MAX_NODES; slot 0 unused), built for
 * one writer and many lock-free readers:
 *
 *   writer:  ONE control thread calls every function in this file that takes a
 *            non-const struct dig_table (init, track, receive, tick). It stores
 *            each field readers may see with a relaxed atomic store.
 *   readers: fast-path lcores call dig_health() and dig_alive() per packet;
 *            the control socket may call dig_table_node() from any thread. They
 *            use relaxed atomic loads of naturally aligned fields and may see a
 *            node's fields from two different updates (health from the newer,
 *            alive from the older); every combination is safe to act on.
 *
 * health and alive are byte arrays of their own so a burst's lookups touch
 * one cache line each. switchd keeps its in-flight counters in its own table
 * next to this one, indexed by the same node id. No DPDK dependency here.
 *
 * Health per node is the weighted average of the scores (dig_score) of the
 * last cfg.window digests, weights cfg.window_weights oldest..newest; while a
 * window is not yet full the newest digest still gets the newest weight. A
 * node silent for down_after_intervals x its own current interval (the
 * interval its last digest announced, at least the base interval) is marked
 * down by dig_table_tick(): health 0, alive 0. Its next digest brings it back with a fresh window.
 * Digests whose seq is not above the last one accepted (same boot_id) are
 * ignored; gaps in seq count as lost digests.
 */
#ifndef SKL_DIG_HEALTH_H
#define SKL_DIG_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "digest.h"

#define DIG_NODES (CFG_MAX_NODES + 1)

/* Table counters: X(enum name, counter name, help). Decode errors are counted apart. */
#define DIG_COUNTERS(X)                                                                            \
	X(DIG_CNT_ACCEPTED, "digests_accepted", "Digests applied to the table")                    \
	X(DIG_CNT_STALE, "digests_stale", "Digests ignored: out of order or duplicate seq")        \
	X(DIG_CNT_UNTRACKED, "digests_untracked", "Digests from a node id not in the config")      \
	X(DIG_CNT_MALFORMED, "digests_malformed", "Digests that failed to decode")                 \
	X(DIG_CNT_LOST, "digests_lost", "Digests missing from gaps in the seq")                    \
	X(DIG_CNT_RESTARTS, "node_restarts", "Nodes seen with a new boot id")                      \
	X(DIG_CNT_DOWN, "node_down_events", "Nodes marked down")                                   \
	X(DIG_CNT_UP, "node_up_events", "Nodes marked up")

enum dig_counter {
#define X(name, str, help) name,
	DIG_COUNTERS(X)
#undef X
	DIG_CNT_COUNT
};

const char *dig_counter_name(enum dig_counter c);
const char *dig_counter_help(enum dig_counter c);

/* Per-node state. Writer: control thread (relaxed atomic stores); readers: any. */
struct dig_node_stats {
	uint64_t last_digest_us; /* switch clock when the last digest was accepted */
	uint64_t last_heard_us;	 /* switch clock of its last reply to a request (dig_table_heard()) */
	uint64_t received;	 /* digests accepted */
	uint64_t lost;		 /* digests missing from seq gaps */
	uint64_t stale;		 /* digests ignored as out of order or duplicate */
	uint32_t interval_ms;	 /* the node's current interval (from its last digest) */
	uint32_t last_seq;	 /* seq of the last digest accepted; 0 none yet */
	uint32_t boot_id;
	uint8_t tracked; /* node id is in the config */
};

/* Control-thread-only ring of the last cfg.window scores of one node. */
struct dig_window {
	float score[CFG_WINDOW_MAX];
	uint8_t head;  /* slot of the next score */
	uint8_t count; /* scores held, <= cfg.window */
};

struct dig_table {
	uint8_t health[DIG_NODES]; /* 0..100, 0 while down; fast path reads */
	uint8_t alive[DIG_NODES];  /* 1 up, 0 down or untracked; fast path reads */
	struct dig_node_stats node[DIG_NODES];
	uint64_t counters[DIG_CNT_COUNT];
	uint64_t decode_errors[DIG_ERR_COUNT];

	/* Control thread only. */
	struct cfg_digest cfg;
	struct dig_window win[DIG_NODES];
};

/* A consistent-enough copy of one node's state, for the control socket. */
struct dig_node_view {
	uint16_t id;
	bool tracked, alive;
	uint8_t health;
	uint64_t last_digest_us;
	uint32_t interval_ms;
	uint32_t last_seq;
	uint64_t received, lost, stale;
	double loss_rate; /* lost / (received + lost), 0 when nothing expected yet */
};

/* Zero the table and take its parameters. Returns 0 or -EINVAL (bad window). */
int dig_table_init(struct dig_table *t, const struct cfg_digest *cfg);

/*
 * Start tracking node id at now_us (switch clock, us): alive, health 100,
 * interval cfg.slow_interval_ms (the longest a node in good health waits
 * between digests), so a node that never sends is marked down after
 * down_after_intervals slow intervals. Returns 0 or -EINVAL (id 0 or too big).
 */
int dig_table_track(struct dig_table *t, uint16_t id, uint64_t now_us);

/* Track every node in cfg (switchd start-up). Returns 0 or a negative errno. */
int dig_table_track_all(struct dig_table *t, const struct cfg *cfg, uint64_t now_us);

/*
 * Apply a decoded digest from node id received at now_us. Returns 0 when it
 * was accepted (health updated, node alive), -EALREADY when ignored as out of
 * order or duplicate, -ENOENT for an untracked node, -EINVAL for id 0.
 */
int dig_table_receive(struct dig_table *t, uint16_t id, const struct dig_digest *d,
		      uint64_t now_us);

/* dig_datagram_parse() + dig_table_receive(); a bad datagram is counted, -EBADMSG. */
int dig_table_receive_datagram(struct dig_table *t, const void *buf, size_t len, uint64_t now_us);

/*
 * Mark down every alive node silent for down_after_intervals x its current
 * interval (at least the base interval) at now_us. Call it from the control thread's timer, at
 * least every fast_interval_ms. Returns the number of nodes newly marked down.
 */
unsigned dig_table_tick(struct dig_table *t, uint64_t now_us);

/*
 * Control thread: node id answered a request at at_us. For failure detection
 * as good as a digest: a lossy link can lose three digests in a row, not a
 * busy node's every reply. It does not bring a node marked down back (its
 * next digest does).
 */
void dig_table_heard(struct dig_table *t, uint16_t id, uint64_t at_us);

/* Weighted-window health of a node's ring (exposed for tests). */
double dig_window_health(const struct dig_window *w, const struct cfg_digest *cfg);

/* Copy node id's state; -EINVAL for a bad id. Any thread. */
int dig_table_node(const struct dig_table *t, uint16_t id, struct dig_node_view *v);

/* Fast-path reads: one relaxed byte load each. id must be < DIG_NODES. */
static inline uint8_t dig_health(const struct dig_table *t, uint16_t id)
{
	return __atomic_load_n(&t->health[id], __ATOMIC_RELAXED);
}
static inline bool dig_alive(const struct dig_table *t, uint16_t id)
{
	return __atomic_load_n(&t->alive[id], __ATOMIC_RELAXED) != 0;
}

#endif
