/*
 * daemon.c - starting and stopping a switch (tables, rings, ports, workers,
 * the control thread's modules) and the control round, which runs the
 * control plane's stages in order, each a module of its own that calls only
 * the stages after it and the modules below:
 *
 *   intake.c     the rings the workers fill: digests, SYNCs, samples,
 *                completions, decision logs, addresses to resolve;
 *   views.c      with replica groups: the view (who is down, who catches
 *                up), to the nodes and to the fast path;
 *   decide.c     the local policy (hot-key epochs) and the peer policy
 *                (leases, cluster hot set): what the directory should hold;
 *   ownership.c  with peers: the directory among them (leases, claims,
 *                our owned keys);
 *   reconcile.c  the local directory: installs, removes (replicas.c
 *                copies them out);
 *   ring_change.c  a ring change's steps (rehome.c moves the entries);
 *   egress.c     every frame the control thread sends;
 *
 * then the control socket (ctl.c) answers the commands the modules registered.
 * The control thread is the single writer of node health and liveness and
 * the only thread that adds or removes CDT entries (see switchd.h).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "batch.h"
#include "clock.h"
#include "ctl.h"
#include "decide.h"
#include "dir_ctl.h"
#include "egress.h"
#include "health.h"
#include "intake.h"
#include "ownership.h"
#include "peer_sync.h"
#include "reconcile.h"
#include "rehome.h"
#include "replicas.h"
#include "ring_change.h"
#include "stats.h"
#include "switchd.h"
#include "views.h"

#define SW_MAC_AGE_S 300
#define SW_NB_AGE_S  300

static unsigned sw_seq; /* distinguishes DPDK object names of successive switches */

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * The worker lcores (switches[].lcores, else every EAL worker), then a worker
 * each: sw->workers[] only ever holds workers, so that sw_fini() after a
 * failure here frees what was made and nothing else.
 */
static int pick_lcores(struct sw *sw, char *err, size_t errlen)
{
	unsigned lc, lcores[SW_MAX_WORKERS], n = 0;

	if (sw->self->nlcores) {
		for (unsigned i = 0; i < sw->self->nlcores && n < SW_MAX_WORKERS; i++) {
			lc = sw->self->lcores[i];
			if (lc >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lc) ||
			    lc == rte_get_main_lcore())
				return fail(
				    err, errlen,
				    "switches[%s].lcores: lcore %u is not an EAL worker lcore "
				    "(give it to EAL with -l, main lcore excluded)",
				    sw->self->name, lc);
			lcores[n++] = lc;
		}
	} else {
		RTE_LCORE_FOREACH_WORKER(lc)
		{
			if (n < SW_MAX_WORKERS)
				lcores[n++] = lc;
		}
	}
	if (n == 0)
		return fail(err, errlen,
			    "no worker lcore: give EAL at least two lcores (-l 0,1): the main one "
			    "runs the control thread");
	for (uint16_t i = 0; i < n; i++) {
		struct sw_worker *w = rte_zmalloc_socket("worker", sizeof(*w), RTE_CACHE_LINE_SIZE,
							 (int)rte_lcore_to_socket_id(lcores[i]));

		if (!w)
			return fail(err, errlen, "out of memory for worker %u", i);
		w->sw = sw;
		w->index = i;
		w->lcore = lcores[i];
		w->rng = rte_rand() | 1;
		w->outstanding = scores_row(&sw->scores, i);
		w->sample_countdown = 1; /* the first request is sampled */
		sw->workers[sw->nworkers++] = w;
	}
	return 0;
}

int sw_init(struct sw *sw, const struct cfg *cfg, const struct cfg_switch *self,
	    const struct sw_opts *opts, char *err, size_t errlen)
{
	char name[64];
	size_t qs;
	int rc;

	memset(sw, 0, sizeof(*sw));
	sw->wake_fd = -1;
	sw->cfg = cfg;
	sw->self = self;
	snprintf(sw->tag, sizeof(sw->tag), "%u_%u", self->id, sw_seq++);
	sw->vip = self->vip;
	memcpy(sw->mac.addr_bytes, self->mac, 6);
	memcpy(&sw->mac_word, self->mac, 6);
	sw->svc_port = cfg->service.port;
	sw->spare_home_from = cfg->directory.spare_home_from;
	sw->group_r = (uint8_t)cfg->service.replicas;
	sw->vip_be = rte_cpu_to_be_32(sw->vip);
	sw->svc_port_be = rte_cpu_to_be_16(sw->svc_port);
	sw->inline_mode = self->role == CFG_ROLE_INLINE;
	sw->close_ports = opts && opts->close_ports;
	sw->idle_sleep_us =
	    opts && opts->idle_sleep_us >= 0 ? (uint32_t)opts->idle_sleep_us : self->idle_sleep_us;
	sw->idle_polls = self->idle_polls ? self->idle_polls : 256;
	sw->tsc_hz = rte_get_tsc_hz();
	sw->drain_tsc = (sw->tsc_hz + 999999) / 1000000 * SW_DRAIN_US;
	pthread_mutex_init(&sw->tel_lock, NULL);
	for (unsigned i = 0; i < cfg->nnodes; i++) {
		sw->node_ip_be[cfg->nodes[i].id] = rte_cpu_to_be_32(cfg->nodes[i].ip);
		sw->node_port_be[cfg->nodes[i].id] = rte_cpu_to_be_16(cfg->nodes[i].port);
	}
	if (cfg_read_key(cfg, &sw->key, err, errlen) < 0)
		return -1;
	sw->keyed = sw->key.len != 0;
	sw->ring = calloc(1, sizeof(*sw->ring));
	if (!sw->ring)
		return fail(err, errlen, "cannot build the ring: %s", strerror(ENOMEM));
	rc = cfg_build_ring(cfg, sw->ring);
	if (rc != 0)
		return fail(err, errlen, "cannot build the ring: %s", strerror(-rc));
	if (pick_lcores(sw, err, errlen) != 0)
		return -1;

	/* QSBR threads: workers 0..n-1, the control thread n, telemetry n+1. */
	qs = rte_rcu_qsbr_get_memsize(sw->nworkers + 2u);
	sw->qsbr = rte_zmalloc("qsbr", qs, RTE_CACHE_LINE_SIZE);
	if (!sw->qsbr || rte_rcu_qsbr_init(sw->qsbr, sw->nworkers + 2u) != 0)
		return fail(err, errlen, "cannot create the QSBR variable");
	for (unsigned t = 0; t < sw->nworkers + 2u; t++)
		rte_rcu_qsbr_thread_register(sw->qsbr, t);

	sw->cdt = cdt_create(sw->tag, RTE_MAX(cfg->directory.max_keys, 1u), sw->nworkers,
			     cfg->directory.max_replicas, sw->qsbr, sw->nworkers);
	if (!sw->cdt)
		return fail(err, errlen, "cannot create the directory: %s", strerror(errno));
	for (uint16_t i = 0; i < sw->nworkers; i++)
		sw->workers[i]->entry_counters = cdt_worker_row(sw->cdt, i);
	if (cfg->directory.batch_writes) {
		sw->batches =
		    batches_create(cfg->directory.max_keys, SW_BATCH_MAX_HELD, SW_BATCH_MAX_FRAME);
		if (!sw->batches)
			return fail(err, errlen, "out of memory for write batches");
	}
	/* An agent resends a write it has no answer to after timeout_ms: a batch
	 * waiting longer for its write than that is given up. */
	sw->batch_stale_tsc = cfg->agent.timeout_ms * rte_get_tsc_hz() / 1000;
	scores_init(&sw->scores, cfg, sw->nworkers);
	sw->no_digest_timeout = opts && opts->no_digest_timeout;
	sw->dig = calloc(1, sizeof(*sw->dig));
	if (!sw->dig || dig_table_init(sw->dig, &cfg->digest) != 0 ||
	    dig_table_track_all(sw->dig, cfg, clock_mono_us()) != 0)
		return fail(err, errlen, "cannot create the health table");
	sw->l2 = rte_zmalloc("l2", sizeof(*sw->l2), RTE_CACHE_LINE_SIZE);
	if (!sw->l2)
		return fail(err, errlen, "out of memory for the L2 tables");
	l2_init(sw->l2, cfg, opts && opts->mac_age_s ? opts->mac_age_s : SW_MAC_AGE_S, SW_NB_AGE_S);

	snprintf(name, sizeof(name), "dig_%s", sw->tag);
	sw->digest_ring = rte_ring_create(name, SW_DIGEST_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "arp_%s", sw->tag);
	sw->arp_ring =
	    rte_ring_create_elem(name, sizeof(uint32_t), SW_ARP_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "log_%s", sw->tag);
	sw->log_ring = rte_ring_create_elem(name, sizeof(struct sw_decision), SW_LOG_RING,
					    SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "sync_%s", sw->tag);
	sw->sync_ring = rte_ring_create(name, SW_SYNC_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "ctx_%s", sw->tag);
	sw->ctl_tx_ring =
	    rte_ring_create(name, SW_CTL_TX_RING, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!sw->digest_ring || !sw->arp_ring || !sw->log_ring || !sw->ctl_tx_ring ||
	    !sw->sync_ring)
		return fail(err, errlen, "cannot create rings: %s", rte_strerror(rte_errno));
	sw->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (sw->wake_fd < 0)
		return fail(err, errlen, "cannot create the control thread's eventfd: %s",
			    strerror(errno));

	/* The registry first: every module registers its commands as it starts. */
	if (ctl_init(sw, err, errlen) != 0 || egress_init(sw, err, errlen) != 0 ||
	    replicas_init(sw, err, errlen) != 0 || reconcile_init(sw, err, errlen) != 0)
		return -1;
	dir_ctl_init(sw);
	if (decide_init(sw, err, errlen) != 0 || peer_sync_init(sw, err, errlen) != 0 ||
	    ownership_init(sw, err, errlen) != 0 || rehome_init(sw, err, errlen) != 0 ||
	    ring_change_init(sw, err, errlen) != 0 || views_init(sw, err, errlen) != 0 ||
	    intake_init(sw, err, errlen) != 0)
		return -1;
	if (ports_init(sw, err, errlen) != 0)
		return -1;
	stats_init(sw);
	if (ctl_open(sw, opts ? opts->socket_path : NULL, opts && opts->no_telemetry, err,
		     errlen) != 0)
		return -1;
	return 0;
}

/* The signals sw_block_rx_signals() blocks: every real-time one (the PMD takes the first free). */
static void rx_signals(sigset_t *set)
{
	sigemptyset(set);
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigaddset(set, sig);
}

void sw_block_rx_signals(void)
{
	sigset_t set;

	rx_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* A worker lcore's entry: take the Rx signals here, then poll. */
static int worker_main(void *arg)
{
	sigset_t set;

	rx_signals(&set);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	return pipeline_main(arg);
}

int sw_start(struct sw *sw)
{
	/*
	 * Failure detection counts silence from now, not from sw_init(): port
	 * set-up (seconds on a NIC, ~0.5 s for nine TAPs) would otherwise pass for
	 * 3 silent intervals and mark every node down before its first digest
	 * could arrive, and a restarted switch would answer UNAVAILABLE meanwhile.
	 */
	int rc = dig_table_track_all(sw->dig, sw->cfg, clock_mono_us());

	if (rc != 0)
		return rc;
	for (uint16_t i = 0; i < sw->nworkers; i++) {
		rc = rte_eal_remote_launch(worker_main, sw->workers[i], sw->workers[i]->lcore);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Free the mbufs still queued in r (NULL: none). */
static void free_queued_mbufs(struct rte_ring *r)
{
	struct rte_mbuf *m;

	while (r && rte_ring_dequeue(r, (void **)&m) == 0)
		rte_pktmbuf_free(m);
}

void sw_fini(struct sw *sw)
{
	__atomic_store_n(&sw->stop, 1, __ATOMIC_RELAXED);
	for (uint16_t i = 0; i < sw->nworkers; i++)
		if (sw->workers[i])
			rte_eal_wait_lcore(sw->workers[i]->lcore);
	ctl_close(sw);
	if (sw->pool)
		ports_fini(sw);
	free_queued_mbufs(sw->digest_ring);
	free_queued_mbufs(sw->ctl_tx_ring);
	free_queued_mbufs(sw->sync_ring);
	rte_ring_free(sw->sync_ring);
	ownership_fini(sw);
	peer_sync_fini(sw);
	rte_ring_free(sw->ctl_tx_ring);
	rte_ring_free(sw->digest_ring);
	rte_ring_free(sw->arp_ring);
	rte_ring_free(sw->log_ring);
	if (sw->wake_fd >= 0)
		close(sw->wake_fd);
	sw->wake_fd = -1;
	intake_fini(sw);
	decide_fini(sw);
	rehome_fini(sw);
	reconcile_fini(sw);
	replicas_fini(sw);
	egress_fini(sw);
	cdt_free(sw->cdt);
	batches_destroy(sw->batches);
	sw->batches = NULL;
	/* Ports are stopped (closed by the daemon): no queue holds an mbuf any more. */
	rte_mempool_free(sw->pool);
	sw->pool = NULL;
	rte_free(sw->l2);
	free(sw->dig);
	sw->dig = NULL;
	rte_free(sw->qsbr);
	for (uint16_t i = 0; i < sw->nworkers; i++)
		rte_free(sw->workers[i]);
	ring_change_fini(sw);
	views_fini(sw);
	if (sw->ring)
		ring_free(sw->ring);
	free(sw->ring);
	sw->ring = NULL;
	pthread_mutex_destroy(&sw->tel_lock);
	explicit_bzero(&sw->key, sizeof(sw->key));
}

/* ---- The control round. ------------------------------------------------------------------ */

void sw_control_poll(struct sw *sw, int timeout_ms)
{
	uint64_t now = rte_rdtsc(), now_u = clock_mono_us();
	struct reconcile_want want;

	rte_rcu_qsbr_thread_online(sw->qsbr, sw->nworkers);
	intake_run(sw, now, now_u);
	views_run(sw, now_u);
	ring_change_follow(sw, now_u);
	decide_run(sw, now_u, &want);
	replicas_charge(sw); /* the sets' load on the nodes, for this round's placements */
	ownership_run(sw, now_u, &want);
	reconcile_run(sw, &want);
	ring_change_run(sw, now_u);
	egress_run(sw, now);
	if (peer_sync_on(sw))
		peer_sync_note_round(sw, (rte_rdtsc() - now) * 1000000u / sw->tsc_hz);
	rte_rcu_qsbr_quiescent(sw->qsbr, sw->nworkers);
	/* Offline while blocked in poll(): no worker's reclamation waits on us. */
	rte_rcu_qsbr_thread_offline(sw->qsbr, sw->nworkers);
	ctl_poll(sw, timeout_ms);
}
