/*
 * switchd.h - the switch daemon's shared state: one struct sw per process,
 * one struct sw_worker per poll-mode lcore.
 *
 * Threads and what they own:
 *   workers (pipeline.c)  one per worker lcore: RX queue `index` of every port,
 *                         TX queue `index` of every port, their own counters.
 *   control thread        on the main lcore: config, CDT management, score
 *                         writer, the frames it sends (through worker 0 from
 *                         ctl_tx_ring), the control socket. Each round
 *                         (sw_control_poll, daemon.c) runs a one-way pipeline:
 *                         intake.c (the rings workers fill) -> decide.c (the
 *                         policies) -> ownership.c and reconcile.c (the
 *                         CDT's writers) -> egress.c (every frame sent);
 *                         then ctl.c serves
 *                         the commands the modules registered.
 *   telemetry thread(s)   read counters, scores, the CDT and published
 *                         snapshots (QSBR reader `nworkers + 1`, serialised
 *                         by tel_lock).
 * Shared structures and their rules: cdt.h (RCU), scores.h (atomics), l2.h
 * (atomic slots), rte_rings from workers to the control thread.
 */
#ifndef SKL_SWITCHD_H
#define SKL_SWITCHD_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "auth.h"
#include "cdt.h"
#include "config.h"
#include "counters.h"
#include "group.h"
#include "l2.h"
#include "log.h"
#include "ring.h"
#include "scores.h"
#include "select.h"

#define SW_BURST       32
#define SW_MAX_WORKERS CFG_MAX_LCORES
_Static_assert(CFG_MAX_LCORES <= SCORES_MAX_WORKERS, "scores has a column per worker");
#define SW_DRAIN_US	   100 /* TX buffers are flushed at least this often */
#define SW_NB_RXD	   1024
#define SW_NB_TXD	   1024
#define SW_MEMPOOL_CACHE   256
#define SW_DIGEST_RING	   1024 /* DIGEST mbufs waiting for the control thread */
#define SW_ARP_RING	   1024 /* addresses workers want resolved */
#define SW_LOG_RING	   1024 /* decision-log records */
#define SW_SAMPLE_RING	   8192 /* sampled keys per control round, at most */
#define SW_COMPLETION_RING 4096 /* write completions per control round, at most */
#define SW_CTL_TX_RING	   4096 /* frames the control thread sends through worker 0 */
#define SW_SYNC_RING	   1024 /* SYNC mbufs from peer switches waiting for the control thread */
#define SW_BATCH_MAX_HELD  1024 /* PUTs held for group commit (batch.h), over every key */
/* A batch's write with its riders' req_ids stays within a standard Ethernet frame. */
#define SW_BATCH_MAX_FRAME (RTE_ETHER_MAX_LEN - RTE_ETHER_CRC_LEN)
#define SW_MAX_PEERS	   (CFG_MAX_SWITCHES - 1)

struct sw_rxq {
	uint16_t port; /* index in sw->ports */
	uint16_t queue;
};

/* Descriptors an idle worker sleeps on, at most (ports.c, "wake"). */
#define SW_MAX_WAKE 64

struct sw_worker {
	struct sw *sw;
	uint16_t index; /* 0..nworkers-1: its RX/TX queue id and QSBR thread id */
	unsigned lcore;
	uint16_t nrxq;
	struct sw_rxq rxq[CFG_MAX_PORTS];
	struct rte_eth_dev_tx_buffer *txb[CFG_MAX_PORTS];
	uint64_t rng;
	uint64_t last_drain_tsc;
	uint32_t *outstanding; /* scores_row(&sw->scores, index): requests it forwarded */
	struct cdt_entry_counters *entry_counters; /* cdt_worker_row(sw->cdt, index) */
	/*
	 * Clients this worker learnt recently (direct-mapped by address): a
	 * request from a client already learnt this second skips learning it
	 * into the shared neighbour table (a scan of its set, maybe a
	 * compare-and-swap). Two words each, compared whole.
	 */
	struct {
		uint64_t who;	/* address (network order) << 32 | the second it was learnt */
		uint64_t where; /* the 8 bytes from the source MAC on, the port xored in */
	} learnt[64];
	uint32_t idle_polls;
	uint32_t sample_countdown; /* requests until the next hot-key sample */
	uint64_t burst_src;	   /* the last source MAC learnt in this burst, for mac_is() */
	/* Written by this worker only; read by others with relaxed loads. */
	uint64_t counters[SW_CNT_COUNT];
	uint64_t port_counters[CFG_MAX_PORTS][SW_PCNT_COUNT];
	uint64_t busy_cycles;  /* cycles spent in polls that received packets */
	uint64_t busy_packets; /* packets received in those polls */
	/*
	 * What ends this worker's idle sleep early: a descriptor per receive
	 * ring that the kernel marks readable when a frame lands in it (the
	 * AF_PACKET sockets of its net_af_packet ports; set by ports_init()).
	 * Last: only an idle worker reads them.
	 */
	struct pollfd wake[SW_MAX_WAKE];
	uint16_t nwake;
} __rte_cache_aligned;

struct sw_port {
	char name[CFG_MAX_NAME];
	char dev[CFG_MAX_PATH];
	uint16_t port_id;
	uint16_t nrxq, ntxq;
	uint16_t mtu;
	bool promiscuous;
	bool started;
	struct rte_ether_addr mac; /* the device's own MAC */
};

/* A decision-log record, worker -> control thread. */
struct sw_decision {
	uint64_t keyhash;
	uint16_t chosen;
	uint16_t home;
	uint8_t op;
	uint8_t key_len; /* bytes of key[] used */
	uint8_t in_directory;
	uint8_t pad;
	char key[32];
	struct sel_trace trace;
};

struct sw_opts {
	int64_t idle_sleep_us;	 /* < 0: from the config */
	const char *socket_path; /* NULL: from the config; "" : no control socket */
	bool no_telemetry;
	uint32_t mac_age_s;	/* 0: 300 */
	bool close_ports;	/* sw_fini closes the ports (the daemon); tests reuse theirs */
	bool no_digest_timeout; /* never mark a silent node down (benchmarks without nodes) */
};

struct ctl;
struct dig_table;
struct peer_sync;
struct intake;
struct decide;
struct reconcile;
struct replicas;
struct ownership;
struct rehome;
struct egress;
struct hot_detector;
struct ring_change;
struct views;
struct batches;

struct sw {
	const struct cfg *cfg;
	const struct cfg_switch *self;
	char tag[32]; /* makes DPDK object names unique per switch */
	/*
	 * The ring requests are routed by (RCU: workers load it with acquire,
	 * sw_ring(); the control thread publishes a new one in a ring change,
	 * ring_change.c, and frees the old one after a QSBR grace period).
	 */
	struct ring *ring;
	uint32_t vip;		   /* host order */
	uint16_t svc_port;	   /* host order */
	rte_be32_t vip_be;	   /* the same two in network order, as the fast path compares */
	rte_be16_t svc_port_be;	   /* and writes them */
	struct rte_ether_addr mac; /* the VIP's MAC: source of everything the switch sends */
	uint64_t mac_word;	   /* the same, for mac_is() (pipeline.c) */
	bool inline_mode;
	bool close_ports;

	uint16_t nports;
	struct sw_port ports[CFG_MAX_PORTS];
	uint16_t nworkers;
	struct sw_worker *workers[SW_MAX_WORKERS];

	struct rte_mempool *pool;
	struct rte_rcu_qsbr *qsbr;
	struct cdt *cdt;
	/* batch.h: PUTs of directory keys held for group commit (NULL: none held).
	 * A batch's write out longer than batch_stale_tsc is given up. */
	struct batches *batches;
	uint64_t batch_stale_tsc;
	uint64_t last_sweep_tsc; /* worker 0: when it last gave up stale batches */
	struct scores scores;
	struct l2 *l2;
	struct rte_ring *digest_ring;
	struct rte_ring *arp_ring;
	struct rte_ring *log_ring;
	int wake_fd; /* eventfd: a worker queued work the control thread must not sit on */
	struct rte_ring
	    *ctl_tx_ring; /* control thread -> worker 0: frames to send (m->port = index) */

	uint8_t debug;	       /* relaxed atomic: decision logs for every request */
	uint8_t dir_on;	       /* relaxed atomic: hot-key sampling and management on */
	uint32_t sample_every; /* sample 1 in N requests for hot-key detection */
	/* directory.spare_home_from: sets this large, home first, read past it */
	uint32_t spare_home_from;
	/* The control round's stages (control thread only, but for the rings
	 * intake_sample() and intake_completed() fill). */
	struct intake *intake;		 /* intake.h: the rings the workers fill */
	struct hot_detector *hot;	 /* hot.h: fed by intake, read by decide */
	struct decide *decide;		 /* decide.h: the policies */
	struct ownership *ownership;	 /* ownership.h: the directory among peers */
	struct reconcile *reconcile;	 /* reconcile.h: the local directory */
	struct replicas *replicas;	 /* replicas.h: where entries' copies go and are */
	struct rehome *rehome;		 /* rehome.h: entries a ring step moves */
	struct egress *egress;		 /* egress.h: every frame the control thread sends */
	struct ring_change *ring_change; /* ring_change.h: ring changes */
	/*
	 * Replica groups (views.h): group_r = R (service.replicas, read-only), and the
	 * nodes every group skips (bit id % 64 of word id / 64; the control
	 * thread stores, workers load, relaxed). views is NULL with R = 1.
	 */
	uint8_t group_r;
	uint64_t group_skip[4];
	/* The view's out, joining and was_out (group.h; a repair), in the same words. */
	uint64_t group_out[4], group_joining[4], group_was_out[4];
	struct views *views;
	volatile int stop;
	uint32_t idle_sleep_us;
	uint32_t idle_polls;
	uint64_t tsc_hz;
	uint64_t drain_tsc;

	/*
	 * Peer switches (peer_sync.h). Addresses read-only after start-up; the
	 * lease deadline is written by the control thread (relaxed) and read by
	 * workers: replica reads only while now_tsc < lease_until_tsc.
	 */
	uint16_t npeers;		 /* 0: no peers configured */
	uint32_t peer_vip[SW_MAX_PEERS]; /* host order */
	uint64_t lease_until_tsc;
	struct rte_ring *sync_ring;
	struct peer_sync *peer_sync;

	/* The cluster key (auth.key_file), read-only after start-up: with it, the
	 * workers check the MAC of every control datagram (pipeline.c) and the
	 * control thread seals every one it sends (egress.c). */
	bool keyed;
	struct wire_key key;

	/* Node addressing, read-only after start-up, in network byte order: as
	 * the fast path compares and writes them. */
	rte_be32_t node_ip_be[CFG_MAX_NODES + 1];
	rte_be16_t node_port_be[CFG_MAX_NODES + 1];

	/* Control thread only. */
	struct ctl *ctl;
	struct dig_table *dig; /* digest/health.h: windows and failure detection */
	bool no_digest_timeout;
	uint64_t ctl_counters[SW_CNT_COUNT];
	pthread_mutex_t tel_lock; /* serialises telemetry readers (one QSBR id) */
};

/* The ring requests are routed by now. Any thread; valid until its next quiescent point. */
static inline const struct ring *sw_ring(const struct sw *sw)
{
	return __atomic_load_n(&sw->ring, __ATOMIC_ACQUIRE);
}

/* Do replica groups skip node id now (marked down or catching up)? Any thread. */
static inline bool sw_group_skips(const struct sw *sw, uint16_t id)
{
	return id < 256 && (__atomic_load_n(&sw->group_skip[id / 64], __ATOMIC_RELAXED) >> (id % 64)) & 1;
}

/*
 * The groups' repair bitmaps (sw->group_out...) into a view's; false when no
 * node is out (groups are the ring's own). Any thread.
 */
static inline bool sw_group_view(const struct sw *sw, struct wire_view *v)
{
	uint64_t out[4], any = 0;

	for (unsigned w = 0; w < 4; w++)
		any |= out[w] = __atomic_load_n(&sw->group_out[w], __ATOMIC_RELAXED);
	if (!any)
		return false;
	for (unsigned w = 0; w < 4; w++) {
		uint64_t joining = __atomic_load_n(&sw->group_joining[w], __ATOMIC_RELAXED),
			 was_out = __atomic_load_n(&sw->group_was_out[w], __ATOMIC_RELAXED);

		for (unsigned b = 0; b < 8; b++) {
			v->out[w * 8 + b] = (uint8_t)(out[w] >> (8 * b));
			v->joining[w * 8 + b] = (uint8_t)(joining >> (8 * b));
			v->was_out[w * 8 + b] = (uint8_t)(was_out >> (8 * b));
		}
	}
	return true;
}

/* ---- daemon.c: assembling and running a switch. ----------------------------------- */

/*
 * Build switch `self` of cfg (EAL already initialised): ring, tables, ports,
 * workers on the given lcores (or every worker lcore), the control socket.
 * Returns 0, or -1 with one line in err.
 */
int sw_init(struct sw *sw, const struct cfg *cfg, const struct cfg_switch *self,
	    const struct sw_opts *opts, char *err, size_t errlen);
/*
 * Call before rte_eal_init(), on the main thread: DPDK's TAP PMD announces
 * every frame it is given with a real-time signal (its Rx trigger, one of
 * SIGRTMIN..SIGRTMAX), which the kernel hands to whichever thread of the
 * process has it unblocked, the sleeping main thread first. Blocked here, and
 * so in every thread EAL creates, it reaches only the workers: sw_start()'s
 * workers unblock it. A worker then takes it on its own core, and a frame
 * that arrives while it sleeps (idle backoff) wakes it, instead of waking the
 * control, interrupt and telemetry threads once a frame on the cores the
 * nodes and agents share (a 256 KB value is 187 frames each way).
 */
void sw_block_rx_signals(void);
/* Launch the workers on their lcores (each unblocks the Rx signals first). */
int sw_start(struct sw *sw);
/*
 * One control round, non-blocking: intake, decide, reconcile, egress (each
 * stage its own module), then up to timeout_ms serving the control socket.
 */
void sw_control_poll(struct sw *sw, int timeout_ms);
/* Stop workers, wait for them, close ports and free everything. */
void sw_fini(struct sw *sw);

/* ---- counters.c ---------------------------------------------------------------------- */

/* Sum a counter over workers (and the control thread). Any thread. */
uint64_t sw_counter(const struct sw *sw, enum sw_counter c);
uint64_t sw_port_counter(const struct sw *sw, uint16_t port, enum sw_port_counter c);

/* Index of a peer switch by its VIP (host order), or -1. Workers and control thread. */
static inline int sw_peer_of_ip(const struct sw *sw, uint32_t ip)
{
	for (uint16_t i = 0; i < sw->npeers; i++)
		if (sw->peer_vip[i] == ip)
			return i;
	return -1;
}

/* ---- pipeline.c: the fast path. ------------------------------------------------------ */

/* The worker's main loop (rte_eal_remote_launch target); returns when sw->stop. */
int pipeline_main(void *worker);
/* One poll of every RX queue of w, then drain if due. Returns packets received. */
unsigned pipeline_poll(struct sw_worker *w);
/* Flush w's TX buffers now. */
void pipeline_flush(struct sw_worker *w);

/* ---- ports.c --------------------------------------------------------------------------- */

/*
 * Create/find, configure and start every port of sw->self; register `neigh`.
 * -1 with err on failure.
 */
int ports_init(struct sw *sw, char *err, size_t errlen);
void ports_fini(struct sw *sw);

#endif
