/*
 * agent.c - libskewless core: the request table, routing, retries, fallback.
 *
 * A request lives in a slot of a table twice as large as max_inflight. Its
 * req_id is agent_id << 32 | seq, where seq is a per-agent counter and the slot
 * is seq's low bits: a reply is matched in O(1) by indexing the table and
 * comparing the whole req_id, and a seq whose slot is still busy is skipped,
 * so no req_id is ever reused while its request is in flight.
 *
 * Each request moves through phases (enum phase). Every attempt arms the
 * slot's timer for timeout_ms, never past the request's deadline
 * (deadline_ms after submission); a timeout costs one of the request's
 * retries and the next attempt is routed afresh, so a retry follows the
 * agent's current view (after enough switch timeouts, the ring home). A
 * write's attempt through a switch that timed out is resent to the ring home
 * when the nodes are reached without crossing the switch (one-arm). Data replies are accepted in any phase: a late answer from an
 * earlier attempt answers the request as well as a later one would, since
 * both were sent within it.
 *
 * Agent-wide state: the switch new requests start at (cur_switch; equal to
 * nswitches once every switch was given up), its consecutive timeouts, per
 * switch the reads answered and lost in a sliding window, and per node the
 * time of its last reply and a fail-fast deadline (an open circuit).
 *
 * Blame goes to the component the evidence points at. A timeout on the way
 * through a switch counts towards its silence only if nothing at all came
 * from it while the attempt waited (a switch that forwards other replies is
 * up; its nodes are slow), and a read's towards its loss rate only if the
 * switch answered one sent after it meanwhile (a queue answers in order). A
 * node is marked unresponsive only when it left a request unanswered through
 * every retry while the path to it is known to work: nodes are reached
 * directly, or other nodes answered meanwhile. Behind an inline switch a
 * stalled switch silences every node at once, and that is not the nodes'
 * fault. While a node's circuit is open, one real request per timeout still
 * goes to it (half-open), and any answer from it closes the circuit. In
 * inpath mode, while a switch carries the traffic, its node table decides (it
 * answers UNAVAILABLE for a node it holds down): the agent never fails a key
 * fast then.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "chunk.h"
#include "clock.h"
#include "config.h"
#include "group.h"
#include "keyhash.h"
#include "payload.h"
#include "rchange.h"
#include "ring.h"
#include "route_cache.h"
#include "skewless.h"
#include "timerwheel.h"
#include "wire.h"

#define RX_BATCH 16
/*
 * Datagrams queued for one sendmmsg(): inside skl_poll() (resends, and what
 * callbacks submit), and between skl_cork() and the next skl_poll() or
 * skl_uncork() (a pipelined client submits many at once).
 */
#define TX_BATCH 32
#define RX_BUF	 (WIRE_MAX_DATAGRAM + 1)
/* Replies drained per skl_poll() before timers get a turn again. */
#define RX_MAX_PER_POLL 4096
/* MOVED reloads the config at most this often, so that a MOVED storm does not
 * turn into a storm of file reads. */
#define RELOAD_MIN_NS 100000000ull
#define RECHECK_KEY   "skewless:recheck"
/* A switch given up as lossy gets this many re-check HINTs a round, and comes
 * back after RECHECK_CLEAN_ROUNDS rounds in a row with every one answered: at
 * 10% loss a round is clean 3% of the time, two in a row 0.1% (hysteresis:
 * leaving takes agent.loss_pct, returning takes none lost). */
#define RECHECK_BURST	     32
#define RECHECK_CLEAN_ROUNDS 2
/* Reads through a switch in its loss window before a loss rate is judged:
 * fewer say little (one loss in 5 reads is not a 20% loss rate). */
#define LOSS_MIN_READS 20
/* MOVED answers about a stale placement a read follows (placing it again),
 * within its deadline, before it ends MOVED. */
#define MAX_REPLACE 4

enum phase {
	PH_SWITCH,     /* data request sent to switch r->sw */
	PH_HINT,       /* HINT sent to switch r->sw */
	PH_NODE,       /* data request sent to node r->target */
	PH_PROBE,      /* PROBEs out to the nodes that may hold a copy */
	PH_STALE_READ, /* relaxed: REPLICA_READ GET to the best probed node */
	PH_DONE,       /* completion deferred to the next skl_poll() */
};

/* Redirects a request took, for the redirect success counters. */
enum { REDIRECT_MOVED = 1, REDIRECT_FALLBACK = 2 };

struct req {
	struct tw_timer timer; /* first: the timer is the slot's handle */
	uint64_t req_id;
	bool in_use;
	uint8_t op; /* WIRE_OP_GET/PUT/DEL */
	uint8_t phase;
	uint8_t consistency; /* enum cfg_consistency */
	uint8_t timeouts;
	bool moved_once;  /* sent to the owner a MOVED named, after the ring moved */
	uint8_t placed;	  /* a GET placed again after MOVED answers (on_moved()) */
	bool inpath_read; /* hint mode: read through the switch, not after a HINT */
	bool replica_read;
	bool refused;	      /* a node answered UNAVAILABLE directly: it is retried */
	uint8_t redirected;   /* REDIRECT_* this request went through (counted on completion) */
	uint8_t final_status; /* PH_DONE */
	uint16_t sw;
	uint16_t target;
	uint16_t home;
	uint32_t ttl_ms;
	/* GET: the version a HINT said to read (0: any); CAS: the version it expects. */
	uint64_t stamp;
	uint64_t keyhash;
	uint8_t *data; /* key bytes, then value bytes */
	struct wire_chunk_set *reply; /* a chunked reply being gathered (GET), else NULL */
	uint16_t chunks;	      /* chunks of each attempt of a PUT (0: one datagram) */
	uint64_t deadline_ns;	      /* the running attempt's */
	uint64_t sent_ns;	      /* when the running attempt was sent */
	uint64_t end_ns;	      /* the request's deadline: no attempt starts after it */
	uint16_t key_len;
	uint32_t val_len;
	uint64_t invoke_ns;
	uint64_t phase_start_ns;
	uint32_t sends;
	skl_callback cb;
	void *arg;
	uint32_t next_done; /* deferred-completion list */
	/* PH_PROBE */
	uint16_t probes_out, probes_in, best_node;
	bool best_found;
	uint64_t best_version;
};

struct node_state {
	bool present;
	struct sockaddr_in addr;
	uint64_t last_reply_ns;
	/* The newest send time of a read homed here that a switch answered:
	 * a read sent before it and still unanswered was overtaken (lost). */
	uint64_t read_answered_sent_ns;
	uint64_t down_until_ns; /* circuit open (fail fast) until then */
	uint64_t next_trial_ns; /* while open: when the next real request may go */
	char name[CFG_MAX_NAME];
};

struct switch_state {
	struct sockaddr_in addr;
	uint64_t last_rx_ns; /* anything from it: a reply, a re-check answer */
	/* Loss judgement: reads through it in this and the previous half window. */
	uint64_t window_start_ns;
	uint32_t reads[2], lost[2];
	uint64_t hint_answered_sent_ns; /* the newest HINT sent that it answered */
	/* Given up as lossy: back only after clean re-check rounds (recheck()). */
	bool lossy;
	uint16_t probes_sent, probes_answered, clean_rounds;
};

struct skl_agent {
	struct cfg *cfg;
	struct ring ring;
	enum cfg_mode mode;
	enum cfg_consistency consistency;
	uint64_t timeout_ns, deadline_ns, recheck_ns, loss_window_ns;
	uint32_t retries, switch_failures, max_inflight, loss_pct;
	uint32_t max_value;
	uint32_t mtu; /* service.mtu: a datagram larger than this goes in chunks */

	int fd;
	uint16_t local_port;
	uint32_t agent_id, seq;
	struct req *slots;
	uint32_t slot_mask, inflight;
	uint32_t done_head, done_tail; /* deferred completions, UINT32_MAX: none */

	struct timerwheel tw;
	struct route_cache rc;
	uint64_t now;

	struct node_state nodes[CFG_MAX_NODES + 1];
	uint16_t nswitches;
	struct switch_state switches[CFG_MAX_SWITCHES];
	uint16_t cur_switch;
	uint32_t consec_timeouts;
	uint64_t next_recheck_ns;
	/* Node traffic crosses an inline switch: a silent node proves nothing
	 * until another node answers on the same path. */
	bool nodes_via_switch;
	uint64_t last_node_reply_ns; /* any node's answer, direct or through a switch */
	uint64_t last_reload_ns;

	struct skl_stats st;
	uint8_t *tx; /* RX_BUF: a datagram sent at once (a chunk) */
	/* Queued for send_queued(): TX_BATCH buffers of mtu bytes, each to txto[i]. */
	uint8_t *txq;
	struct iovec txv[TX_BATCH];
	struct sockaddr_in txto[TX_BATCH];
	unsigned ntx;
	bool corked;  /* skl_cork() */
	bool polling; /* inside skl_poll() */
	uint8_t *rx; /* RX_BATCH buffers of RX_BUF */
};

static const char *const status_names[SKL_STATUS_COUNT] = {
#define X(name, value, str) [value] = str,
    SKL_STATUSES(X)
#undef X
};

static const char *const counter_names[] = {
#define X(field, desc) #field,
    SKL_COUNTERS(X)
#undef X
};
static const char *const counter_descs[] = {
#define X(field, desc) desc,
    SKL_COUNTERS(X)
#undef X
};

static struct sockaddr_in sockaddr_of(uint32_t ip, uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};

	sa.sin_addr.s_addr = htonl(ip);
	sa.sin_port = htons(port);
	return sa;
}

static bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

/* Take the nodes and ring of cfg as the agent's view. */
static int load_view(struct skl_agent *a, const struct cfg *cfg)
{
	struct ring ring = {0};
	int rc = cfg_build_ring(cfg, &ring);

	if (rc)
		return rc;
	ring_free(&a->ring);
	a->ring = ring;
	for (int i = 0; i <= CFG_MAX_NODES; i++)
		a->nodes[i].present = false;
	for (int i = 0; i < cfg->nnodes; i++) {
		struct node_state *n = &a->nodes[cfg->nodes[i].id];

		n->present = true;
		n->addr = sockaddr_of(cfg->nodes[i].ip, cfg->nodes[i].port);
		snprintf(n->name, sizeof(n->name), "%s", cfg->nodes[i].name);
	}
	return 0;
}

static int open_socket(struct skl_agent *a, const struct skl_options *opt)
{
	struct sockaddr_in sa = sockaddr_of(opt ? opt->bind_ip : 0, opt ? opt->bind_port : 0);
	socklen_t len = sizeof(sa);
	/* Room for a full window of replies: 10k+ in flight would overrun the default. */
	int bufsz = 8 << 20;

	a->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->fd < 0)
		return -errno;
	/* FORCE works past net.core.rmem_max when privileged; else take what we get. */
	if (setsockopt(a->fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof(bufsz)) < 0)
		setsockopt(a->fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	if (setsockopt(a->fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsz, sizeof(bufsz)) < 0)
		setsockopt(a->fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	if (bind(a->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(a->fd, (struct sockaddr *)&sa, &len) < 0)
		return -errno;
	a->local_port = ntohs(sa.sin_port);
	return 0;
}

/* Everything but the config copy and the switch list. */
static int agent_init(struct skl_agent *a, const struct skl_options *opt)
{
	const struct cfg_agent *p = &a->cfg->agent;
	uint32_t nslots = 1;
	int rc;

	a->fd = -1;
	a->done_head = a->done_tail = UINT32_MAX;
	a->mode = p->mode;
	a->consistency = p->consistency;
	a->timeout_ns = (uint64_t)p->timeout_ms * 1000000ull;
	a->deadline_ns = (uint64_t)p->deadline_ms * 1000000ull;
	a->retries = p->retries;
	a->switch_failures = p->switch_failures;
	a->loss_pct = p->loss_pct;
	a->loss_window_ns = (uint64_t)p->loss_window_ms * 1000000ull;
	a->recheck_ns = (uint64_t)p->recheck_ms * 1000000ull;
	a->max_inflight = p->max_inflight;
	a->max_value = a->cfg->service.max_value;
	a->mtu = a->cfg->service.mtu;
	for (int i = 0; i < a->cfg->nswitches; i++)
		a->nodes_via_switch |= a->cfg->switches[i].role == CFG_ROLE_INLINE;
	if (opt) {
		if (opt->mode > SKL_MODE_DIRECT || opt->consistency > SKL_RELAXED)
			return -EINVAL;
		if (opt->mode)
			a->mode = (enum cfg_mode)(opt->mode - SKL_MODE_INPATH);
		if (opt->consistency)
			a->consistency = (enum cfg_consistency)(opt->consistency - 1);
		if (opt->timeout_ms)
			a->timeout_ns = (uint64_t)opt->timeout_ms * 1000000ull;
		if (opt->deadline_ms)
			a->deadline_ns = (uint64_t)opt->deadline_ms * 1000000ull;
		if (opt->retries_set)
			a->retries = opt->retries > 100 ? 100 : opt->retries;
		if (opt->switch_failures)
			a->switch_failures = opt->switch_failures;
		if (opt->recheck_ms)
			a->recheck_ns = (uint64_t)opt->recheck_ms * 1000000ull;
		if (opt->max_inflight)
			a->max_inflight = opt->max_inflight;
	}
	if (a->max_inflight == 0 || a->max_inflight > (1u << 20))
		return -EINVAL;
	a->agent_id = opt ? opt->agent_id : 0;
	while (a->agent_id == 0)
		if (getrandom(&a->agent_id, sizeof(a->agent_id), 0) != sizeof(a->agent_id))
			a->agent_id = (uint32_t)getpid() ^ (uint32_t)clock_mono_ns();
	while (nslots < 2 * a->max_inflight)
		nslots <<= 1;
	a->slots = calloc(nslots, sizeof(*a->slots));
	a->tx = malloc(RX_BUF);
	a->txq = malloc((size_t)TX_BATCH * a->mtu);
	a->rx = malloc((size_t)RX_BATCH * RX_BUF);
	if (!a->slots || !a->tx || !a->txq || !a->rx)
		return -ENOMEM;
	a->slot_mask = nslots - 1;
	a->now = clock_mono_ns();
	/* 1 ms ticks; 1024 slots cover a second, longer timeouts take extra turns. */
	if ((rc = tw_init(&a->tw, 1000000, 1024, a->now)) ||
	    (rc = rc_init(&a->rc, a->cfg->agent.route_cache_entries,
			  (uint64_t)a->cfg->agent.route_cache_ttl_ms * 1000000ull)) ||
	    (rc = load_view(a, a->cfg)))
		return rc;
	return open_socket(a, opt);
}

static int agent_new(const struct cfg *cfg, const struct sockaddr_in *sw, size_t nsw,
		     const struct skl_options *opt, struct skl_agent **out)
{
	struct skl_agent *a = calloc(1, sizeof(*a));
	int rc;

	if (!a)
		return -ENOMEM;
	a->cfg = malloc(sizeof(*a->cfg));
	if (!a->cfg) {
		free(a);
		return -ENOMEM;
	}
	*a->cfg = *cfg;
	a->nswitches = (uint16_t)nsw;
	for (size_t i = 0; i < nsw; i++)
		a->switches[i].addr = sw[i];
	rc = agent_init(a, opt);
	if (rc) {
		skl_close(a);
		return rc;
	}
	*out = a;
	return 0;
}

/*
 * The order to try the config's switches in: those named in `order` (a comma
 * list of switch names or ids, the primary first), then the rest in config
 * order. Returns 0, or -EINVAL for a name the config does not have.
 */
static int switch_order(const struct cfg *cfg, const char *order, int *idx)
{
	bool used[CFG_MAX_SWITCHES] = {false};
	char list[256], *save = NULL;
	int n = 0;

	snprintf(list, sizeof(list), "%s", order ? order : "");
	for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		const struct cfg_switch *s = cfg_switch_lookup(cfg, t);
		int i = s ? (int)(s - cfg->switches) : -1;

		if (i < 0)
			return -EINVAL;
		if (!used[i]) {
			used[i] = true;
			idx[n++] = i;
		}
	}
	for (int i = 0; i < cfg->nswitches; i++)
		if (!used[i])
			idx[n++] = i;
	return 0;
}

int skl_create(const struct cfg *cfg, const struct skl_options *opt, struct skl_agent **out)
{
	struct sockaddr_in sw[CFG_MAX_SWITCHES];
	int order[CFG_MAX_SWITCHES];
	size_t nsw = 0;

	if (!cfg || !out)
		return -EINVAL;
	/* Switches in config order (or opt->switch_order / $SKL_SWITCH_ORDER first),
	 * each at its vip : service.port; a config without switches still names
	 * the service VIP. */
	if (switch_order(cfg,
			 opt && opt->switch_order ? opt->switch_order : getenv("SKL_SWITCH_ORDER"),
			 order) != 0)
		return -EINVAL;
	for (int i = 0; i < cfg->nswitches; i++)
		sw[nsw++] = sockaddr_of(cfg->switches[order[i]].vip, cfg->service.port);
	if (nsw == 0 && cfg->service.vip)
		sw[nsw++] = sockaddr_of(cfg->service.vip, cfg->service.port);
	return agent_new(cfg, sw, nsw, opt, out);
}

int skl_create_file(const char *path, const struct skl_options *opt, struct skl_agent **out,
		    char *err, size_t errlen)
{
	char msg[CFG_ERR_LEN];
	struct cfg *cfg;
	int rc;

	if (!path || !out)
		return -EINVAL;
	cfg = malloc(sizeof(*cfg)); /* tens of KB: not on the caller's stack */
	if (!cfg)
		return -ENOMEM;
	if (cfg_load(path, cfg, msg, sizeof(msg)) != 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s", msg);
		free(cfg);
		return -EINVAL;
	}
	rc = skl_create(cfg, opt, out);
	free(cfg);
	return rc;
}

int skl_create_addrs(const struct skl_addr *switches, size_t nswitches,
		     const struct skl_node_addr *nodes, size_t nnodes,
		     const struct skl_options *opt, struct skl_agent **out)
{
	struct sockaddr_in sw[CFG_MAX_SWITCHES];
	struct cfg *cfg;
	int rc;

	if (!out || nswitches > CFG_MAX_SWITCHES || nnodes == 0 || nnodes > CFG_MAX_NODES ||
	    (nswitches && !switches) || !nodes)
		return -EINVAL;
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return -ENOMEM;
	/* The documented defaults of docs/config.md. */
	cfg->service.port = nswitches ? switches[0].port : CFG_DEFAULT_PORT;
	cfg->service.vip = nswitches ? switches[0].ip : 0;
	cfg->service.mtu = CFG_DEFAULT_MTU;
	cfg->service.max_value = CFG_MAX_VALUE;
	cfg->ring_version = 1;
	cfg_agent_defaults(&cfg->agent);
	if (!nswitches)
		cfg->agent.mode = CFG_MODE_DIRECT;
	for (size_t i = 0; i < nnodes; i++) {
		struct cfg_node *n = &cfg->nodes[i];

		if (nodes[i].id == 0 || !nodes[i].name || !nodes[i].name[0]) {
			free(cfg);
			return -EINVAL;
		}
		n->id = nodes[i].id;
		snprintf(n->name, sizeof(n->name), "%s", nodes[i].name);
		n->ip = nodes[i].ip;
		n->port = nodes[i].port;
		n->weight = nodes[i].weight ? nodes[i].weight : 1;
	}
	cfg->nnodes = (uint16_t)nnodes;
	for (size_t i = 0; i < nswitches; i++)
		sw[i] = sockaddr_of(switches[i].ip, switches[i].port);
	rc = agent_new(cfg, sw, nswitches, opt, out);
	free(cfg);
	return rc;
}

/* ---- sending ---- */

/*
 * Send what is queued, in one sendmmsg() when the socket takes it all. A
 * datagram the kernel refuses is counted and skipped: its timer treats it
 * as lost.
 */
static void send_queued(struct skl_agent *a)
{
	struct mmsghdr msgs[TX_BATCH];
	unsigned done = 0;

	for (unsigned i = 0; i < a->ntx; i++)
		msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &a->txto[i],
						       .msg_namelen = sizeof(a->txto[i]),
						       .msg_iov = &a->txv[i],
						       .msg_iovlen = 1}};
	while (done < a->ntx) {
		int k = sendmmsg(a->fd, msgs + done, a->ntx - done, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			a->st.send_errors++;
			k = 1;
		}
		done += (unsigned)k;
	}
	a->ntx = 0;
}

/*
 * Send m (a PUT larger than a datagram) as count chunks, all of this attempt;
 * a lost one loses the attempt, which the timer retries whole (the node
 * counts the chunks it already had as duplicates). count 0: it cannot be
 * chunked at this MTU (submit() refuses such values first), counted as lost.
 */
static void send_chunks(struct skl_agent *a, const struct wire_msg *m, uint16_t count,
			const struct sockaddr_in *to)
{
	if (count == 0) {
		a->st.send_errors++;
		return;
	}
	for (uint16_t i = 0; i < count; i++) {
		int len = wire_chunk_encode(m, i, count, a->tx, RX_BUF);

		a->st.chunks_sent++;
		if (len < 0 || sendto(a->fd, a->tx, (size_t)len, 0, (const struct sockaddr *)to,
				      sizeof(*to)) < 0)
			a->st.send_errors++;
	}
}

static void send_msg(struct skl_agent *a, struct req *r, uint8_t op, uint16_t flags, uint16_t node,
		     bool with_value, const struct sockaddr_in *to)
{
	struct wire_msg m = {
	    .op = op,
	    .flags = flags,
	    .req_id = r->req_id,
	    .keyhash = r->keyhash,
	    .version = op == WIRE_OP_PUT			? r->ttl_ms
		       : op == WIRE_OP_GET || op == WIRE_OP_CAS ? r->stamp
								: 0,
	    .node = node,
	    .key_len = r->key_len,
	    .val_len = with_value ? r->val_len : 0,
	    .key = r->data,
	    .value = with_value ? r->data + r->key_len : NULL,
	};
	uint16_t count;
	int len;

	a->st.sent++;
	r->sends++;
	if (wire_chunk_needed(&m, a->mtu, &count)) {
		send_chunks(a, &m, count, to);
		return;
	}
	/* Not chunked: it fits in one datagram of mtu bytes. */
	if (a->ntx == TX_BATCH)
		send_queued(a);
	uint8_t *slot = a->txq + (size_t)a->ntx * a->mtu;

	len = wire_encode(&m, slot, a->mtu);
	if (len < 0) {
		a->st.send_errors++; /* the timer treats it as lost */
		return;
	}
	a->txv[a->ntx] = (struct iovec){.iov_base = slot, .iov_len = (size_t)len};
	a->txto[a->ntx++] = *to;
	if (!a->corked && !a->polling)
		send_queued(a);
}

static void send_data(struct skl_agent *a, struct req *r, const struct sockaddr_in *to,
		      uint16_t node)
{
	send_msg(a, r, r->op, r->replica_read ? WIRE_F_REPLICA_READ : 0, node,
		 r->op == WIRE_OP_PUT || r->op == WIRE_OP_CAS, to);
}

/*
 * How long an attempt of r waits: timeout_ms, and for a PUT in chunks 1/64 of
 * it more per chunk (its datagrams queue behind each other at every hop: a
 * 256 KB value is 187 of them at MTU 1500, 3.9 x the timeout). A chunked
 * reply stretches the wait as it arrives (gather()).
 */
static uint64_t attempt_ns(const struct skl_agent *a, const struct req *r)
{
	return a->timeout_ns + a->timeout_ns * r->chunks / 64;
}

/*
 * How long an attempt in phase ph waits. A HINT is answered by the switch
 * itself, from memory: half the timeout is ample, and a dead switch costs a
 * read half as much before it goes on. A data attempt never waits past the
 * request's deadline (PROBEs, after it, get their one wait).
 */
static uint64_t full_wait_ns(const struct skl_agent *a, const struct req *r, enum phase ph)
{
	return ph == PH_HINT ? a->timeout_ns / 2 : attempt_ns(a, r);
}

static uint64_t phase_wait_ns(const struct skl_agent *a, const struct req *r, enum phase ph)
{
	uint64_t wait = full_wait_ns(a, r, ph);

	if ((ph == PH_SWITCH || ph == PH_HINT || ph == PH_NODE) && a->now + wait > r->end_ns)
		wait = r->end_ns > a->now ? r->end_ns - a->now : 0;
	return wait;
}

static void enter_phase(struct skl_agent *a, struct req *r, enum phase ph)
{
	if (r->phase != ph)
		r->phase_start_ns = a->now;
	r->phase = (uint8_t)ph;
	r->sent_ns = a->now;
	r->deadline_ns = a->now + phase_wait_ns(a, r, ph);
	tw_add(&a->tw, &r->timer, r->deadline_ns);
}

/* r is rerouted: around given-up switches, or home after a cached route failed (once per request).
 */
static void note_fallback(struct skl_agent *a, struct req *r)
{
	if (!(r->redirected & REDIRECT_FALLBACK))
		a->st.redirects_fallback++;
	r->redirected |= REDIRECT_FALLBACK;
}

/* Queue r to complete with status at the start of the next skl_poll(). */
static void defer_done(struct skl_agent *a, struct req *r, enum skl_status st)
{
	uint32_t idx = (uint32_t)(r - a->slots);

	tw_cancel(&a->tw, &r->timer);
	r->phase = PH_DONE;
	r->final_status = (uint8_t)st;
	r->next_done = UINT32_MAX;
	if (a->done_tail == UINT32_MAX)
		a->done_head = idx;
	else
		a->slots[a->done_tail].next_done = idx;
	a->done_tail = idx;
}

static void start_probe(struct skl_agent *a, struct req *r);

/* An inpath switch carries the traffic: its node table (digests) decides
 * which nodes are up, not the agent's own timeouts. */
static bool switch_decides(const struct skl_agent *a)
{
	return a->mode == CFG_MODE_INPATH && a->cur_switch < a->nswitches;
}

/*
 * Is node n's circuit open, so that a request for it fails fast? Not while
 * the switch decides, and once per timeout a request goes through anyway
 * (half-open): its answer closes it.
 */
static bool circuit_open(struct skl_agent *a, struct node_state *n)
{
	if (n->down_until_ns <= a->now || switch_decides(a))
		return false;
	if (a->now >= n->next_trial_ns) {
		n->next_trial_ns = a->now + a->timeout_ns;
		a->st.node_trials++;
		return false;
	}
	return true;
}

/* Send r's next attempt to the node `id` (the home unless redirected). */
static void go_node(struct skl_agent *a, struct req *r, uint16_t id, bool replica_read)
{
	struct node_state *n = &a->nodes[id];

	if (!n->present) {
		defer_done(a, r, SKL_UNAVAILABLE);
		return;
	}
	if (id == r->home && !replica_read && circuit_open(a, n)) {
		/* The home left an earlier request unanswered: do not wait again. */
		if (r->op == WIRE_OP_GET && r->consistency == CFG_RELAXED) {
			start_probe(a, r);
		} else {
			a->st.fail_fast++;
			defer_done(a, r, SKL_UNAVAILABLE);
		}
		return;
	}
	r->target = id;
	r->replica_read = replica_read;
	enter_phase(a, r, PH_NODE);
	send_data(a, r, &n->addr, id);
}

/* Route r's next attempt. */
static void dispatch(struct skl_agent *a, struct req *r)
{
	bool is_read = r->op == WIRE_OP_GET;
	bool via_switch = a->mode != CFG_MODE_DIRECT && a->cur_switch < a->nswitches;
	const struct rc_entry *e;

	if (r->op == WIRE_OP_CAS) {
		/* A CAS is for the home alone: no switch routes it (proto/ops.h). */
		e = rc_lookup(&a->rc, r->keyhash, RC_MOVED, a->now);
		go_node(a, r, e && a->nodes[e->node].present ? e->node : r->home, false);
		return;
	}
	r->stamp = 0;

	if (is_read && a->mode == CFG_MODE_HINT && !r->inpath_read &&
	    r->consistency == CFG_RELAXED) {
		rc_record(&a->rc, r->keyhash);
		e = rc_lookup(&a->rc, r->keyhash, RC_ROUTE, a->now);
		if (e && a->nodes[e->node].present) {
			a->st.cache_hits++;
			go_node(a, r, e->node, e->node != r->home);
			return;
		}
	}
	if (via_switch && (!is_read || a->mode == CFG_MODE_INPATH || r->inpath_read)) {
		r->sw = a->cur_switch;
		enter_phase(a, r, PH_SWITCH);
		send_data(a, r, &a->switches[r->sw].addr, 0);
		return;
	}
	if (via_switch && is_read && a->mode == CFG_MODE_HINT) {
		r->sw = a->cur_switch;
		a->st.hints++;
		enter_phase(a, r, PH_HINT);
		send_msg(a, r, WIRE_OP_HINT, 0, 0, false, &a->switches[r->sw].addr);
		return;
	}
	/* Direct to the ring home, or where a MOVED said the key now lives; when
	 * the switches are given up, that is a reroute around them. */
	if (a->mode != CFG_MODE_DIRECT && a->nswitches && a->cur_switch >= a->nswitches)
		note_fallback(a, r);
	e = rc_lookup(&a->rc, r->keyhash, RC_MOVED, a->now);
	if (e && a->nodes[e->node].present) {
		go_node(a, r, e->node, false);
		return;
	}
	go_node(a, r, r->home, false);
}

/* ---- probing (relaxed reads whose home does not answer) ---- */

static void start_probe(struct skl_agent *a, struct req *r)
{
	r->probes_out = r->probes_in = 0;
	r->best_found = false;
	r->best_version = 0;
	for (int id = 1; id <= CFG_MAX_NODES; id++) {
		if (!a->nodes[id].present || id == r->home || a->nodes[id].down_until_ns > a->now)
			continue;
		send_msg(a, r, WIRE_OP_PROBE, 0, (uint16_t)id, false, &a->nodes[id].addr);
		a->st.probes++;
		r->probes_out++;
	}
	if (!r->probes_out) {
		defer_done(a, r, SKL_UNAVAILABLE);
		return;
	}
	enter_phase(a, r, PH_PROBE);
}

/* All probes answered or the wait ran out: read from the best copy. */
static void finish_probe(struct skl_agent *a, struct req *r)
{
	if (r->best_found) {
		r->target = r->best_node;
		r->replica_read = true;
		enter_phase(a, r, PH_STALE_READ);
		send_data(a, r, &a->nodes[r->best_node].addr, r->best_node);
	} else {
		defer_done(a, r, r->probes_in ? SKL_NOT_FOUND : SKL_UNAVAILABLE);
	}
}

/* ---- completion ---- */

static void release(struct req *r)
{
	free(r->data);
	r->data = NULL;
	if (r->reply) {
		wire_chunk_set_free(r->reply);
		free(r->reply);
		r->reply = NULL;
	}
	r->in_use = false;
}

/* Complete r: callback, then free the slot. reply may be NULL. */
static void complete(struct skl_agent *a, struct req *r, enum skl_status st,
		     const struct wire_msg *reply, bool from_switch)
{
	struct skl_result res = {
	    .op = r->op == WIRE_OP_GET	 ? SKL_OP_GET
		  : r->op == WIRE_OP_PUT ? SKL_OP_PUT
		  : r->op == WIRE_OP_CAS ? SKL_OP_CAS
					 : SKL_OP_DEL,
	    .status = st,
	    .req_id = r->req_id,
	    .key = r->data,
	    .key_len = r->key_len,
	    .sends = r->sends,
	    .invoke_ns = r->invoke_ns,
	    .complete_ns = a->now,
	};

	tw_cancel(&a->tw, &r->timer);
	if (st == SKL_OK || st == SKL_NOT_FOUND) {
		a->st.redirects_moved_ok += (r->redirected & REDIRECT_MOVED) != 0;
		a->st.redirects_fallback_ok += (r->redirected & REDIRECT_FALLBACK) != 0;
	}
	if (reply) {
		res.version = reply->version;
		res.node = reply->node;
		res.load = reply->load;
		if (reply->flags & WIRE_F_REPLICATED)
			res.flags |= SKL_R_REPLICATED;
		if (!from_switch)
			res.flags |= SKL_R_DIRECT;
		if (r->replica_read && r->phase != PH_SWITCH)
			res.flags |= SKL_R_REPLICA;
		if (r->op == WIRE_OP_GET && reply->val_len) {
			res.value = reply->value;
			res.value_len = reply->val_len;
		}
		if (r->op == WIRE_OP_CAS && reply->val_len >= WIRE_CAS_REPLY_LEN) {
			/* The ttl left, then (a READ's) the value. */
			res.ttl_ms = wire_get64(reply->value);
			res.value = reply->value + WIRE_CAS_REPLY_LEN;
			res.value_len = reply->val_len - WIRE_CAS_REPLY_LEN;
		}
	} else if (r->phase == PH_DONE && r->probes_in && st == SKL_NOT_FOUND) {
		res.flags |= SKL_R_STALE; /* "no copy anywhere" from probes alone */
	}
	if (r->phase == PH_STALE_READ && reply) {
		res.flags |= SKL_R_STALE;
		a->st.stale_reads++;
	}
	if (r->op == WIRE_OP_PUT) {
		res.value = r->data + r->key_len;
		res.value_len = r->val_len;
	}
	/* The slot stays taken until the callback returns (its key and value are
	 * in use), but it no longer counts against max_inflight, so that the
	 * callback may submit the next request. */
	a->inflight--;
	a->st.completed++;
	if (r->cb)
		r->cb(r->arg, &res);
	release(r);
}

static void run_deferred(struct skl_agent *a)
{
	while (a->done_head != UINT32_MAX) {
		struct req *r = &a->slots[a->done_head];

		a->done_head = r->next_done;
		if (a->done_head == UINT32_MAX)
			a->done_tail = UINT32_MAX;
		complete(a, r, (enum skl_status)r->final_status, NULL, false);
	}
}

/* ---- judging switches: silent, lossy, back ---- */

/* Give the current switch up (lossy: for its loss rate, else for its silence):
 * new requests start at the next one, or at the ring home when none is left. */
static void give_up_switch(struct skl_agent *a, bool lossy)
{
	struct switch_state *s = &a->switches[a->cur_switch];

	if (lossy)
		a->st.switch_lossy++;
	else
		a->st.switch_down++;
	s->lossy = lossy;
	s->probes_sent = s->probes_answered = s->clean_rounds = 0;
	a->cur_switch++;
	a->consec_timeouts = 0;
	a->next_recheck_ns = a->now + a->recheck_ns;
}

/* Switch sw, given up, takes new requests again. */
static void switch_back(struct skl_agent *a, uint16_t sw)
{
	struct switch_state *s = &a->switches[sw];

	a->cur_switch = sw;
	a->consec_timeouts = 0;
	a->st.switch_back++;
	s->lossy = false;
	s->reads[0] = s->reads[1] = s->lost[0] = s->lost[1] = 0;
	s->window_start_ns = a->now;
	/* Its node table is the authority again: forget what the agent
	 * concluded about nodes while it went around the switch. */
	for (int id = 1; id <= CFG_MAX_NODES; id++)
		a->nodes[id].down_until_ns = 0;
}

/* Whether giving the current switch up for loss leads anywhere better: the
 * next switch, or nodes reached without crossing this one (one-arm). */
static bool loss_judged(const struct skl_agent *a)
{
	return a->loss_pct && a->cur_switch < a->nswitches &&
	       (!a->nodes_via_switch || a->cur_switch + 1 < a->nswitches);
}

/*
 * A read through the current switch was answered (lost false) or lost. The
 * rate is judged over loss_window_ms, kept as two halves that slide: the
 * older half is dropped when a new one starts. Past agent.loss_pct, with
 * LOSS_MIN_READS reads to judge by, the switch is given up as lossy.
 */
static void loss_sample(struct skl_agent *a, uint16_t sw, bool lost)
{
	struct switch_state *s = &a->switches[sw];
	uint64_t half = a->loss_window_ns / 2;
	uint32_t reads, losses;

	if (sw != a->cur_switch || !loss_judged(a))
		return;
	if (a->now - s->window_start_ns >= half) {
		bool both = a->now - s->window_start_ns >= 2 * half;

		s->reads[1] = both ? 0 : s->reads[0];
		s->lost[1] = both ? 0 : s->lost[0];
		s->reads[0] = s->lost[0] = 0;
		s->window_start_ns = a->now;
	}
	s->reads[0]++;
	s->lost[0] += lost;
	if (!lost)
		return;
	a->st.switch_losses++;
	reads = s->reads[0] + s->reads[1];
	losses = s->lost[0] + s->lost[1];
	if (reads >= LOSS_MIN_READS && (uint64_t)losses * 100 > (uint64_t)a->loss_pct * reads)
		give_up_switch(a, true);
}

/*
 * An attempt of r through switch r->sw timed out after its whole wait. A read
 * is lost if the switch answered one sent after it (a HINT for a HINT, a read
 * of the same home for a read): the path works, this one fell off it. A busy
 * home answers in order and overtakes nothing, so a queue is not a loss. The
 * attempt counts towards silence only if nothing at all came from the switch
 * while it waited.
 */
static void switch_timeout(struct skl_agent *a, const struct req *r)
{
	uint16_t sw = r->sw;
	struct switch_state *s = &a->switches[sw];

	if (sw != a->cur_switch || a->cur_switch >= a->nswitches ||
	    a->now - r->sent_ns < full_wait_ns(a, r, (enum phase)r->phase))
		return; /* an old switch's, or cut short by the deadline */
	if (r->phase == PH_HINT && s->hint_answered_sent_ns > r->sent_ns)
		loss_sample(a, sw, true);
	else if (r->phase == PH_SWITCH && r->op == WIRE_OP_GET &&
		 a->nodes[r->home].read_answered_sent_ns > r->sent_ns)
		loss_sample(a, sw, true);
	if (sw != a->cur_switch || s->last_rx_ns >= r->sent_ns)
		return; /* given up as lossy, or it sent something meanwhile: it is up */
	if (++a->consec_timeouts >= a->switch_failures)
		give_up_switch(a, false);
}

/* ---- timeouts ---- */

/*
 * r ran out of attempts at its node: is that evidence against the node? Only
 * if nothing at all came from it while r waited (a busy node that answers
 * others is slow, not gone), the agent is not leaving node state to an inpath
 * switch, and the path to the node is known to work: reached directly, or,
 * behind an inline switch, that switch not silent itself and other nodes
 * answering meanwhile.
 */
static bool blame_node(const struct skl_agent *a, const struct req *r)
{
	if (a->nodes[r->target].last_reply_ns >= r->phase_start_ns || switch_decides(a))
		return false;
	if (!a->nodes_via_switch)
		return true;
	if (a->mode != CFG_MODE_DIRECT && a->cur_switch >= a->nswitches)
		return false; /* the switch on the path is silent: the stall is its */
	return a->last_node_reply_ns >= r->phase_start_ns;
}

/*
 * Replica groups: a node that did not answer may be dead. The switch, while
 * the agent takes it, routes around a dead member as soon as it has seen the
 * death; without it, the next member of the key's group is tried. A member
 * serves only what its view makes it primary for, and sends the rest to the
 * primary (MOVED), so a live primary that was merely slow is never passed by.
 */
static void retry_in_group(struct skl_agent *a, struct req *r)
{
	uint16_t ids[GROUP_MAX];
	unsigned n, next = 0;

	if (skl_using_switch(a)) {
		dispatch(a, r);
		return;
	}
	n = ring_group(&a->ring, keyhash_point(r->keyhash), a->cfg->service.replicas, ids);
	for (unsigned i = 0; i < n; i++)
		if (ids[i] == r->target)
			next = (i + 1) % n;
	go_node(a, r, n ? ids[next] : r->home, false);
}

static void on_timeout(struct tw_timer *t, void *arg)
{
	struct skl_agent *a = arg;
	struct req *r = (struct req *)t;
	bool exhausted;

	if (r->phase == PH_PROBE) {
		finish_probe(a, r);
		return;
	}
	if (r->phase == PH_STALE_READ) {
		defer_done(a, r, SKL_UNAVAILABLE);
		return;
	}
	a->st.timeouts++;
	r->timeouts++;
	exhausted = r->timeouts > a->retries || a->now >= r->end_ns;
	if (r->phase == PH_SWITCH || r->phase == PH_HINT) {
		switch_timeout(a, r);
		if (exhausted) {
			defer_done(a, r, SKL_TIMEOUT);
			return;
		}
		a->st.retries++;
		if (!a->nodes_via_switch && r->op != WIRE_OP_GET) {
			/* A write with a path around the switch: the ring home, which
			 * applies it at most once (the same req_id), and treats it as
			 * bypassing the switch (its copies dropped first). */
			a->st.switch_retries_home++;
			note_fallback(a, r);
			go_node(a, r, r->home, false);
			return;
		}
		/*
		 * A read goes where the agent's current view sends it: the switch
		 * again while it is not given up (inline: every path crosses it).
		 * At the home directly it could see a write whose reply the switch
		 * has not seen yet, and a later read through the switch the version
		 * before (docs/design.md section 5, "Write-through").
		 */
		dispatch(a, r);
		return;
	}
	/* PH_NODE */
	if (r->target != r->home)
		rc_remove(&a->rc, r->keyhash); /* a cached or redirected route failed */
	if (!exhausted && a->cfg->service.replicas > 1 && r->op != WIRE_OP_CAS) {
		/* Replica groups: retry_in_group() decides. */
		a->st.retries++;
		note_fallback(a, r);
		retry_in_group(a, r);
		return;
	}
	if (!exhausted) {
		/* Neither the cache nor the switch again: the home is the one place
		 * that is always right. */
		a->st.retries++;
		if (r->target != r->home)
			note_fallback(a, r);
		go_node(a, r, r->home, false);
		return;
	}
	if (blame_node(a, r)) {
		struct node_state *n = &a->nodes[r->target];

		n->down_until_ns = a->now + a->recheck_ns;
		n->next_trial_ns = a->now + a->timeout_ns;
		a->st.node_down++;
	}
	if (r->op == WIRE_OP_GET && r->consistency == CFG_RELAXED)
		start_probe(a, r);
	else
		defer_done(a, r, r->refused ? SKL_UNAVAILABLE : SKL_TIMEOUT);
}

/* ---- replies ---- */

/* The view of the ring may be stale: reload the config file it came from. */
static void reload_view(struct skl_agent *a)
{
	struct cfg *fresh;
	char err[CFG_ERR_LEN];

	if (!a->cfg->path[0] || a->now - a->last_reload_ns < RELOAD_MIN_NS)
		return;
	a->last_reload_ns = a->now;
	fresh = malloc(sizeof(*fresh));
	if (!fresh)
		return;
	if (cfg_load(a->cfg->path, fresh, err, sizeof(err)) == 0 && load_view(a, fresh) == 0) {
		free(a->cfg);
		a->cfg = fresh;
		rc_clear_kind(&a->rc, RC_MOVED);
		a->st.ring_reloads++;
		return;
	}
	free(fresh);
}

/*
 * r was refused unapplied and may still be tried: the attempt's timer
 * resends it, within its retries and deadline, and it ends UNAVAILABLE only
 * when those are out. False when they are out already.
 */
static bool retry_refused(struct skl_agent *a, struct req *r)
{
	if (r->timeouts >= a->retries || a->now >= r->end_ns)
		return false;
	if (!r->refused)
		a->st.refusals++;
	r->refused = true;
	return true;
}

/*
 * MOVED. For a read the switch placed (through it, or at its HINT's version)
 * whose node no longer serves that version, naming the home we know or no
 * node: the switch's view has moved on since, so the read is placed again,
 * within its deadline, and in hint mode from the second time on through the
 * switch itself, which stamps the version it has seen complete as it
 * forwards. Going to the home directly could show the reader a version the
 * switch has not yet seen complete, and a later read an older one
 * (docs/design.md section 5, "Write-through"). Otherwise the ring has moved:
 * the view is reloaded and the request resent once to the owner named. MOVED
 * is returned only when it cannot be resent.
 */
static void on_moved(struct skl_agent *a, struct req *r, const struct wire_msg *m, bool from_switch)
{
	uint16_t owner = m->node;
	/* A node answers MOVED with its ring epoch: a newer ring than ours is reloaded now. */
	bool newer_ring = rch_epoch_version(m->version) > a->cfg->ring_version;

	a->st.moved++;
	if (newer_ring)
		a->last_reload_ns = 0;
	if (r->op == WIRE_OP_GET && (from_switch || r->stamp) && (owner == 0 || owner == r->home) &&
	    !newer_ring && r->placed < MAX_REPLACE && a->now < r->end_ns) {
		a->st.replaced++;
		if (++r->placed >= 2 && a->mode == CFG_MODE_HINT)
			r->inpath_read = true;
		dispatch(a, r);
		return;
	}
	/*
	 * Replica groups: through the switch, a MOVED of a write that names no
	 * newer ring names the key's primary in a view the switch routes by a
	 * moment later (docs/design.md section 13). The write is tried through
	 * it again when the attempt's timer fires, within its deadline, as a
	 * refused one is. So is a read the placements above do not take (placed
	 * MAX_REPLACE times, or sent to a node other than its home): a member
	 * that holds the view marking the primary up answers MOVED to it until
	 * the switch, which tells the primary last, routes to it; the primary
	 * itself, not told yet, would send the reader back. Without the switch,
	 * a second MOVED is tried again the same way: a node whose view lease
	 * ended sends reads to a primary that may not serve them either, until
	 * the switch is back (docs/design.md section 13, "View leases").
	 */
	if ((from_switch || r->moved_once) && a->cfg->service.replicas > 1 && !newer_ring &&
	    retry_refused(a, r))
		return;
	if (r->moved_once) {
		complete(a, r, SKL_MOVED, m, from_switch);
		return;
	}
	r->moved_once = true;
	reload_view(a);
	r->home = ring_home(&a->ring, r->keyhash);
	if (owner == 0 || !a->nodes[owner].present) {
		complete(a, r, SKL_MOVED, m, from_switch);
		return;
	}
	rc_insert(&a->rc, r->keyhash, owner, RC_MOVED, a->now);
	a->st.redirects_moved++;
	r->redirected |= REDIRECT_MOVED;
	go_node(a, r, owner, false);
}

static void on_data_reply(struct skl_agent *a, struct req *r, const struct wire_msg *m,
			  bool from_switch)
{
	uint8_t st = m->status;

	if (st == WIRE_ST_MOVED) {
		/*
		 * Only the running attempt's says where to go next: a switch that
		 * stalled forwards every attempt queued in it once it runs, and
		 * their late MOVEDs say nothing about where the request went since.
		 */
		bool at_node = r->phase == PH_NODE || r->phase == PH_STALE_READ;

		if (from_switch ? r->phase == PH_SWITCH : at_node)
			on_moved(a, r, m, from_switch);
		return;
	}
	/*
	 * A node refused it unapplied: a write that waited out another's turn at
	 * the home, or whose copies' holders did not confirm their drop; a key
	 * being handed over. It may try again: the attempt's timer resends it,
	 * within the deadline, and it ends UNAVAILABLE only when that is out.
	 * With replica groups an UNAVAILABLE through the switch that names a
	 * node is tried again too: a write whose member just died, or a key
	 * whose primary the switch holds down, is served by the next member
	 * once the switch's next view skips it (docs/design.md section 13).
	 * The switch's own answer for a group with no member up names none: it
	 * ends the request at once. Behind a one-arm switch a node answers a
	 * request the switch forwarded itself, and its refusal is retried the
	 * same way.
	 */
	if (st == WIRE_ST_UNAVAILABLE && from_switch && r->phase != PH_SWITCH)
		return; /* an earlier attempt's, through a switch since given up: the running one decides */
	if (st == WIRE_ST_UNAVAILABLE &&
	    (from_switch ? a->cfg->service.replicas > 1 && r->phase == PH_SWITCH && m->node != 0
			 : r->phase == PH_NODE || r->phase == PH_SWITCH) &&
	    retry_refused(a, r))
		return;
	/* Remember where a relaxed read was served so the next one skips HINT. */
	if (r->op == WIRE_OP_GET && r->consistency == CFG_RELAXED && a->mode == CFG_MODE_HINT &&
	    st == WIRE_ST_OK && m->node && a->nodes[m->node].present &&
	    (m->flags & WIRE_F_REPLICATED || m->node == r->home))
		rc_insert(&a->rc, r->keyhash, m->node, RC_ROUTE, a->now);
	complete(a, r, st == WIRE_ST_CONFLICT ? SKL_CONFLICT : (enum skl_status)st, m, from_switch);
}

static void on_hint_reply(struct skl_agent *a, struct req *r, const struct wire_msg *m)
{
	struct wire_hint hint;
	uint16_t id;

	if (r->phase != PH_HINT)
		return; /* a late HINT answer: the request has moved on */
	id = wire_hint_reply_decode(m, &hint) == 0 ? hint.node : 0;
	if (m->status != WIRE_ST_OK || id == 0 || !a->nodes[id].present) {
		go_node(a, r, r->home, false);
		return;
	}
	/* The node serves the version the switch has seen complete (docs/design.md section 5). */
	r->stamp = hint.version;
	/* Linearizable: the answer serves this read only; relaxed: cache it. */
	if (r->consistency == CFG_RELAXED)
		rc_insert(&a->rc, r->keyhash, id, RC_ROUTE, a->now);
	go_node(a, r, id, id != r->home);
}

static void on_probe_reply(struct skl_agent *a, struct req *r, const struct wire_msg *m)
{
	if (r->phase != PH_PROBE)
		return;
	r->probes_in++;
	if (m->status == WIRE_ST_OK && m->node && a->nodes[m->node].present &&
	    (!r->best_found || m->version > r->best_version)) {
		r->best_found = true;
		r->best_version = m->version;
		r->best_node = m->node;
	}
	if (r->probes_in >= r->probes_out)
		finish_probe(a, r);
}

/*
 * A datagram from switch sw (recheck: the answer to a re-check HINT): the
 * current one answers, or one given up as silent is back. One given up as
 * lossy only counts the answers of its re-check round (recheck()).
 */
static void switch_seen(struct skl_agent *a, int sw, bool recheck)
{
	struct switch_state *s = &a->switches[sw];

	s->last_rx_ns = a->now;
	if (sw == a->cur_switch)
		a->consec_timeouts = 0;
	else if (sw < a->cur_switch && s->lossy)
		s->probes_answered += recheck;
	else if (sw < a->cur_switch)
		switch_back(a, (uint16_t)sw);
}

/*
 * A chunk of r's reply (a GET of a large value, or a CAS READ's): gather it. Returns true when
 * it completed the reply, *m then being the whole reply (its value in
 * r->reply, freed with r). A reply's chunks agree on the version (the set's
 * tag), so chunks of two versions never mix: chunks of the same version are
 * the same bytes, whichever node sent them. A chunk of a newer version (a
 * retry answered after a write) starts the reply afresh; an older one is
 * dropped. Versions only grow, so a reply being gathered is replaced at most
 * by newer ones, and the attempt's timer bounds the wait.
 */
static bool gather(struct skl_agent *a, struct req *r, struct wire_msg *m)
{
	enum wire_chunk_error err;
	struct wire_chunk c;

	a->st.chunks_received++;
	if ((r->op != WIRE_OP_GET && r->op != WIRE_OP_CAS) || m->status != WIRE_ST_OK ||
	    wire_chunk_decode(m, &c) != WIRE_CHUNK_OK ||
	    c.total > a->max_value + (r->op == WIRE_OP_CAS ? WIRE_CAS_REPLY_LEN : 0)) {
		a->st.chunk_drops++;
		return false;
	}
	if (r->reply && m->version > r->reply->tag)
		wire_chunk_set_free(r->reply); /* a newer version's reply: start again */
	if (!r->reply)
		r->reply = calloc(1, sizeof(*r->reply));
	if (!r->reply || (!r->reply->buf && wire_chunk_set_init(r->reply, &c, m->version, 0))) {
		a->st.chunk_drops++; /* out of memory: the attempt times out */
		return false;
	}
	err = wire_chunk_set_add(r->reply, &c, m->version);
	if (err != WIRE_CHUNK_OK) {
		a->st.chunk_drops++; /* a duplicate, or an older version's */
		return false;
	}
	if (!wire_chunk_set_done(r->reply)) {
		/* A reply still arriving is not lost: wait a timeout from its latest chunk. */
		if (tw_armed(&r->timer) && a->now + a->timeout_ns > r->deadline_ns) {
			r->deadline_ns = a->now + a->timeout_ns;
			tw_add(&a->tw, &r->timer, r->deadline_ns);
		}
		return false;
	}
	m->flags &= (uint16_t)~WIRE_F_CHUNK;
	m->value = r->reply->buf;
	m->val_len = r->reply->total;
	return true;
}

/* A read through switch r->sw was answered: a sample of its loss rate, and
 * *newest (a home's reads, or the switch's HINTs) the newest send answered. */
static void read_answered(struct skl_agent *a, const struct req *r, uint64_t *newest)
{
	if (r->sent_ns > *newest)
		*newest = r->sent_ns;
	loss_sample(a, r->sw, false);
}

static void on_datagram(struct skl_agent *a, const uint8_t *buf, size_t len,
			const struct sockaddr_in *from)
{
	struct wire_msg m;
	struct req *r;
	int sw = -1;
	uint8_t op;

	for (int i = 0; i < a->nswitches; i++)
		if (same_addr(from, &a->switches[i].addr)) {
			sw = i;
			break;
		}
	if (wire_decode(buf, len, &m) != WIRE_OK || !(m.op & WIRE_REPLY)) {
		a->st.rx_bad++;
		return;
	}
	if (sw >= 0)
		switch_seen(a, sw, m.req_id == (uint64_t)a->agent_id << 32);
	if (m.node && a->nodes[m.node].present && m.status != WIRE_ST_MOVED) {
		a->nodes[m.node].last_reply_ns = a->now;
		a->nodes[m.node].down_until_ns = 0; /* its first answer readmits it */
		a->last_node_reply_ns = a->now;
	}
	if ((uint32_t)(m.req_id >> 32) != a->agent_id) {
		a->st.rx_unmatched++;
		return;
	}
	r = &a->slots[(uint32_t)m.req_id & a->slot_mask];
	op = m.op & (uint8_t)~WIRE_REPLY;
	if (!r->in_use || r->req_id != m.req_id || r->phase == PH_DONE || r->keyhash != m.keyhash) {
		a->st.rx_unmatched++; /* re-check answers land here too */
		return;
	}
	if (op == r->op && (m.flags & WIRE_F_CHUNK) && !gather(a, r, &m)) {
		return; /* a chunk taken or dropped; the reply is not whole yet */
	} else if (op == r->op) {
		a->st.replies++;
		if (sw == r->sw && r->phase == PH_SWITCH && op == WIRE_OP_GET)
			read_answered(a, r, &a->nodes[r->home].read_answered_sent_ns);
		on_data_reply(a, r, &m, sw >= 0);
	} else if (op == WIRE_OP_HINT) {
		a->st.replies++;
		if (sw == r->sw && r->phase == PH_HINT)
			read_answered(a, r, &a->switches[sw].hint_answered_sent_ns);
		on_hint_reply(a, r, &m);
	} else if (op == WIRE_OP_PROBE) {
		a->st.replies++;
		on_probe_reply(a, r, &m);
	} else {
		a->st.rx_unmatched++;
	}
}

/* Every recheck_ms while a better switch is given up, knock on its door. */
static void recheck(struct skl_agent *a)
{
	struct req probe = {0};

	if (a->cur_switch == 0 || a->mode == CFG_MODE_DIRECT || a->now < a->next_recheck_ns)
		return;
	a->next_recheck_ns = a->now + a->recheck_ns;
	/* seq 0 is never given to a request, so the answer matches nothing. */
	probe.req_id = (uint64_t)a->agent_id << 32;
	probe.data = (uint8_t *)RECHECK_KEY;
	probe.key_len = sizeof(RECHECK_KEY) - 1;
	probe.keyhash = keyhash(RECHECK_KEY, probe.key_len);
	for (int i = 0; i < a->cur_switch && i < a->nswitches; i++) {
		struct switch_state *s = &a->switches[i];
		int burst = 1;

		if (s->lossy) {
			/* Judge the last round; a clean run of them brings it back. */
			if (s->probes_sent)
				s->clean_rounds =
				    s->probes_answered >= s->probes_sent ? s->clean_rounds + 1 : 0;
			if (s->clean_rounds >= RECHECK_CLEAN_ROUNDS) {
				switch_back(a, (uint16_t)i);
				return;
			}
			burst = RECHECK_BURST;
			s->probes_sent = RECHECK_BURST;
			s->probes_answered = 0;
		}
		for (int k = 0; k < burst; k++) {
			send_msg(a, &probe, WIRE_OP_HINT, 0, 0, false, &s->addr);
			a->st.rechecks++;
		}
	}
}

static int receive(struct skl_agent *a)
{
	struct mmsghdr msgs[RX_BATCH];
	struct iovec iov[RX_BATCH];
	struct sockaddr_in from[RX_BATCH];
	int total = 0;

	while (total < RX_MAX_PER_POLL) {
		int n;

		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < RX_BATCH; i++) {
			iov[i].iov_base = a->rx + (size_t)i * RX_BUF;
			iov[i].iov_len = RX_BUF;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &from[i];
			msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		}
		n = recvmmsg(a->fd, msgs, RX_BATCH, MSG_DONTWAIT, NULL);
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0
											 : -errno;
		a->now = clock_mono_ns();
		for (int i = 0; i < n; i++)
			on_datagram(a, iov[i].iov_base, msgs[i].msg_len, &from[i]);
		total += n;
		if (n < RX_BATCH)
			break;
	}
	return 0;
}

int skl_poll(struct skl_agent *a, int timeout_ms)
{
	uint64_t before = a->st.completed;
	int rc;

	/*
	 * Take in what has arrived before any timer fires: a poll loop held up
	 * longer than a timeout (a busy callback, a descheduled process) must
	 * not blame the switch or a node for replies already waiting here.
	 */
	send_queued(a);
	a->polling = true;
	rc = receive(a);
	if (rc < 0) {
		a->polling = false;
		return rc;
	}
	a->now = clock_mono_ns();
	run_deferred(a);
	tw_advance(&a->tw, a->now, on_timeout, a);
	recheck(a);
	run_deferred(a);
	send_queued(a);
	if (a->st.completed == before && timeout_ms != 0) {
		struct pollfd pfd = {.fd = a->fd, .events = POLLIN};
		int wait = skl_next_timeout_ms(a);

		if (timeout_ms > 0 && (wait < 0 || wait > timeout_ms))
			wait = timeout_ms;
		if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
			return -errno;
	}
	rc = receive(a);
	a->now = clock_mono_ns();
	tw_advance(&a->tw, a->now, on_timeout, a);
	run_deferred(a);
	send_queued(a);
	a->polling = false;
	if (rc < 0)
		return rc;
	return (int)(a->st.completed - before);
}

void skl_cork(struct skl_agent *a)
{
	a->corked = true;
}

void skl_uncork(struct skl_agent *a)
{
	a->corked = false;
	send_queued(a);
}

int skl_fd(const struct skl_agent *a)
{
	return a->fd;
}

int skl_next_timeout_ms(struct skl_agent *a)
{
	uint64_t next = tw_next_ns(&a->tw), now = clock_mono_ns();

	if (a->done_head != UINT32_MAX || a->ntx)
		return 0; /* callbacks to run, or datagrams to send */
	if (a->cur_switch > 0 && a->mode != CFG_MODE_DIRECT && a->next_recheck_ns < next)
		next = a->next_recheck_ns;
	if (next == UINT64_MAX)
		return -1;
	if (next <= now)
		return 0;
	/* Round up so that the wake-up finds the timer due. */
	return (int)((next - now + 999999) / 1000000);
}

uint32_t skl_inflight(const struct skl_agent *a)
{
	return a->inflight;
}

/* ---- submission ---- */

/* expect: CAS's expected version (ignored by the other ops). */
static int submit(struct skl_agent *a, uint8_t op, const void *key, size_t key_len,
		  const void *value, size_t value_len, const struct skl_call_opts *o,
		  uint64_t expect, skl_callback cb, void *arg)
{
	struct req *r;

	if (!key || key_len < 1 || key_len > WIRE_MAX_KEY || (value_len && !value) ||
	    value_len > WIRE_CHUNK_MAX_TOTAL || (o && o->consistency > SKL_RELAXED))
		return -EINVAL;
	if (a->inflight >= a->max_inflight)
		return -EBUSY;
	/* Bounded: fewer than half the slots are taken, so a free one is near. */
	do {
		a->seq++;
		r = &a->slots[a->seq & a->slot_mask];
	} while (a->seq == 0 || r->in_use);
	memset(r, 0, sizeof(*r));
	r->data = malloc(key_len + value_len);
	if (!r->data)
		return -ENOMEM;
	memcpy(r->data, key, key_len);
	if (value_len)
		memcpy(r->data + key_len, value, value_len);
	a->now = clock_mono_ns();
	r->in_use = true;
	r->req_id = (uint64_t)a->agent_id << 32 | a->seq;
	r->op = op;
	r->consistency = (uint8_t)(o && o->consistency ? (enum cfg_consistency)(o->consistency - 1)
						       : a->consistency);
	r->ttl_ms = o ? o->ttl_ms : 0;
	r->stamp = expect;
	r->key_len = (uint16_t)key_len;
	r->val_len = (uint32_t)value_len;
	r->keyhash = keyhash(key, key_len);
	r->home = ring_home(&a->ring, r->keyhash);
	r->invoke_ns = a->now;
	r->cb = cb;
	r->arg = arg;
	r->phase = PH_SWITCH;
	a->inflight++;
	a->st.submitted++;
	/* Over max_value, or in chunks with no room left beside a long key. */
	if (value_len > a->max_value + (op == WIRE_OP_CAS ? WIRE_CAS_PREFIX_LEN : 0) ||
	    (wire_chunk_needed(&(struct wire_msg){.op = op,
						  .key_len = (uint16_t)key_len,
						  .val_len = (uint32_t)value_len},
			       a->mtu, &r->chunks) &&
	     r->chunks == 0)) {
		defer_done(a, r, SKL_TOO_LARGE);
		return 0;
	}
	/* The deadline leaves room for a whole attempt and its resend, also for
	 * a PUT in chunks and a timeout set longer than the deadline. */
	r->end_ns = r->invoke_ns +
		    (a->deadline_ns > 2 * attempt_ns(a, r) ? a->deadline_ns : 2 * attempt_ns(a, r));
	dispatch(a, r);
	return 0;
}

int skl_get(struct skl_agent *a, const void *key, size_t key_len, const struct skl_call_opts *o,
	    skl_callback cb, void *arg)
{
	return submit(a, WIRE_OP_GET, key, key_len, NULL, 0, o, 0, cb, arg);
}

int skl_put(struct skl_agent *a, const void *key, size_t key_len, const void *value,
	    size_t value_len, const struct skl_call_opts *o, skl_callback cb, void *arg)
{
	return submit(a, WIRE_OP_PUT, key, key_len, value, value_len, o, 0, cb, arg);
}

int skl_del(struct skl_agent *a, const void *key, size_t key_len, const struct skl_call_opts *o,
	    skl_callback cb, void *arg)
{
	return submit(a, WIRE_OP_DEL, key, key_len, NULL, 0, o, 0, cb, arg);
}

int skl_cas(struct skl_agent *a, const void *key, size_t key_len, const struct skl_cas *c,
	    const void *value, size_t value_len, skl_callback cb, void *arg)
{
	struct wire_cas wc = {.cond = (uint8_t)c->cond,
			      .action = (uint8_t)c->action,
			      .ttl = c->keep_ttl ? WIRE_CAS_TTL_KEEP : WIRE_CAS_TTL_SET,
			      .ttl_ms = c->keep_ttl ? 0 : c->ttl_ms};
	uint8_t *buf;
	int rc;

	if ((unsigned)c->cond > SKL_CAS_LIVE || (unsigned)c->action > SKL_CAS_READ ||
	    (value_len && (c->action != SKL_CAS_SET || !value)) ||
	    value_len > WIRE_CHUNK_MAX_TOTAL - WIRE_CAS_PREFIX_LEN)
		return -EINVAL;
	buf = malloc(WIRE_CAS_PREFIX_LEN + value_len);
	if (!buf)
		return -ENOMEM;
	wire_cas_encode_prefix(&wc, buf, WIRE_CAS_PREFIX_LEN);
	if (value_len)
		memcpy(buf + WIRE_CAS_PREFIX_LEN, value, value_len);
	rc = submit(a, WIRE_OP_CAS, key, key_len, buf, WIRE_CAS_PREFIX_LEN + value_len, NULL,
		    c->version, cb, arg);
	free(buf); /* submit() took a copy */
	return rc;
}

/* ---- synchronous wrappers ---- */

struct sync_wait {
	bool done;
	void *buf;
	size_t cap;
	struct skl_result *res;
};

static void sync_cb(void *arg, const struct skl_result *res)
{
	struct sync_wait *w = arg;
	size_t n = res->value_len < w->cap ? res->value_len : w->cap;

	*w->res = *res;
	w->res->key = NULL; /* the key copy is freed after the callback */
	w->res->value = NULL;
	if (res->op == SKL_OP_GET && w->buf) {
		if (n)
			memcpy(w->buf, res->value, n);
		w->res->value = w->buf;
	}
	w->done = true;
}

static int sync_wait(struct skl_agent *a, struct sync_wait *w, int rc)
{
	if (rc)
		return rc;
	/* Every request ends (its timers are bounded), so this loop ends. */
	while (!w->done) {
		rc = skl_poll(a, -1);
		if (rc < 0 && rc != -EINTR)
			return rc;
	}
	return 0;
}

int skl_get_sync(struct skl_agent *a, const void *key, size_t key_len,
		 const struct skl_call_opts *o, void *buf, size_t cap, struct skl_result *res)
{
	struct sync_wait w = {.buf = buf, .cap = cap, .res = res};

	return sync_wait(a, &w, skl_get(a, key, key_len, o, sync_cb, &w));
}

int skl_put_sync(struct skl_agent *a, const void *key, size_t key_len, const void *value,
		 size_t value_len, const struct skl_call_opts *o, struct skl_result *res)
{
	struct sync_wait w = {.res = res};

	return sync_wait(a, &w, skl_put(a, key, key_len, value, value_len, o, sync_cb, &w));
}

int skl_del_sync(struct skl_agent *a, const void *key, size_t key_len,
		 const struct skl_call_opts *o, struct skl_result *res)
{
	struct sync_wait w = {.res = res};

	return sync_wait(a, &w, skl_del(a, key, key_len, o, sync_cb, &w));
}

/* ---- introspection ---- */

void skl_get_stats(const struct skl_agent *a, struct skl_stats *out)
{
	*out = a->st;
}

size_t skl_counter_count(void)
{
	return sizeof(counter_names) / sizeof(counter_names[0]);
}

const char *skl_counter_name(size_t i)
{
	return i < skl_counter_count() ? counter_names[i] : NULL;
}

const char *skl_counter_desc(size_t i)
{
	return i < skl_counter_count() ? counter_descs[i] : NULL;
}

uint64_t skl_counter_value(const struct skl_stats *s, size_t i)
{
	return i < skl_counter_count() ? ((const uint64_t *)s)[i] : 0;
}

uint32_t skl_agent_id(const struct skl_agent *a)
{
	return a->agent_id;
}

uint16_t skl_local_port(const struct skl_agent *a)
{
	return a->local_port;
}

int skl_using_switch(const struct skl_agent *a)
{
	return a->mode != CFG_MODE_DIRECT && a->cur_switch < a->nswitches;
}

uint16_t skl_home(const struct skl_agent *a, const void *key, size_t key_len)
{
	return ring_home(&a->ring, keyhash(key, key_len));
}

const char *skl_node_name(const struct skl_agent *a, uint16_t id)
{
	return id && a->nodes[id].present ? a->nodes[id].name : NULL;
}

const char *skl_status_name(enum skl_status st)
{
	return (unsigned)st < SKL_STATUS_COUNT ? status_names[st] : "?";
}

int skl_mode_parse(const char *s, enum skl_mode *mode)
{
	enum cfg_mode m;

	if (cfg_mode_parse(s, &m))
		return -EINVAL;
	*mode = (enum skl_mode)(m + SKL_MODE_INPATH);
	return 0;
}

int skl_consistency_parse(const char *s, enum skl_consistency *c)
{
	enum cfg_consistency v;

	if (cfg_consistency_parse(s, &v))
		return -EINVAL;
	*c = (enum skl_consistency)(v + 1);
	return 0;
}

void skl_close(struct skl_agent *a)
{
	if (!a)
		return;
	if (a->slots) {
		run_deferred(a);
		a->now = clock_mono_ns();
		for (uint32_t i = 0; i <= a->slot_mask; i++)
			if (a->slots[i].in_use)
				complete(a, &a->slots[i], SKL_CANCELLED, NULL, false);
	}
	if (a->fd >= 0)
		close(a->fd);
	if (a->tw.slots)
		tw_free(&a->tw);
	rc_free(&a->rc);
	ring_free(&a->ring);
	free(a->slots);
	free(a->tx);
	free(a->txq);
	free(a->rx);
	free(a->cfg);
	free(a);
}
