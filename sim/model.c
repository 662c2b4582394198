/*
 * model.c - the simulated cluster (sim.h): agents, the switch, nodes and
 * their digests as events on one clock.
 *
 * The switch is the part that is not modelled: each request it routes goes
 * through the ring (ring_home), the directory (the coherence rules of
 * cdt_state.h) and, for a read of a directory key, sel_pick() over the
 * switch's score table (struct scores) holding the candidates' in-flight
 * counts and delay units; its control round feeds the rte_member hot-key
 * detector (hot.h) with every request key, ends an epoch every
 * directory.epoch_ms (installs, replica wants, retires), REPLICATEs entries
 * short of replicas, and keeps health from digests in digest/health.h's
 * window. The nodes' digests are built by digest/meter.h and timed by
 * digest/emit.h, from the simulated queue and latencies.
 *
 * What is a model: a node is `workers` servers with a FIFO client queue
 * (bounded: OVERLOADED when full) and a control lane its workers empty first
 * (REPLICATE, RC_REQ, UNREPLICATE), each job taking one service time, as
 * skewless-node does with --service-time-us; every hop takes link_us; the
 * switch takes no time; nothing is lost but digests.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdt_state.h"
#include "group.h"
#include "digest.h"
#include "emit.h"
#include "health.h"
#include "heap.h"
#include "hist.h"
#include "hot.h"
#include "keyhash.h"
#include "meter.h"
#include "place.h"
#include "ring.h"
#include "scores.h"
#include "select.h"
#include "sim.h"

#define NS_PER_US 1000ull
#define NS_PER_MS 1000000ull
#define NS_PER_S  1000000000ull
/* The control thread's round: digests ticked, scores published (switchd wakes every 10 ms). */
#define ROUND_NS (10 * NS_PER_MS)
/* How often a node's digest thread looks at its queue (nodes/report.c polls every 5 ms). */
#define DIGEST_POLL_NS (5 * NS_PER_MS)
/* Served counts are kept per BUCKET_NS; the balance timeline is over WINDOW_BUCKETS of them. */
#define BUCKET_NS      (10 * NS_PER_MS)
#define WINDOW_BUCKETS 5
/* Copies of one key the model remembers the versions of (more than any replica set). */
#define COPY_SLOTS (CDT_MAX_REPLICAS + 32)
/* Digest tables: node ids of one table are 1..CFG_MAX_NODES, as in the switch. */
#define DIG_TABLE_NODES CFG_MAX_NODES
#define NO_REQ		UINT32_MAX

/*
 * An agent's request costs four events: at the switch, at the node, done,
 * the reply at the switch. The agent's side needs none: it sends at once
 * (open loop: arrivals at the switch are its Poisson process shifted by one
 * hop; closed loop: the next request reaches the switch two hops after the
 * reply left it), and a latency is the reply's time at the switch plus a hop.
 */
enum ev_type {
	EV_ARRIVAL,	   /* open loop: the next request reaches the switch */
	EV_AT_SWITCH,	   /* a closed-loop request reaches the switch */
	EV_AT_NODE,	   /* a request or control op reaches a node */
	EV_DONE,	   /* a node's worker finished a job */
	EV_REPLY,	   /* a reply (or RC_ACK) reaches the switch */
	EV_DIGEST_POLL,	   /* a node's digest thread looks */
	EV_DIGEST_ARRIVAL, /* a digest reaches the switch */
	EV_ROUND,	   /* the switch's control round */
	EV_BUCKET,	   /* a measurement bucket ends */
	EV_SHIFT,	   /* the hot set moves (--dynamic hot-in) */
	EV_PUSH_ACK,	   /* a holder's RC_ACK of a write-through push reaches the home */
	EV_PUSH_TIMEOUT,   /* a home stops waiting for its holders (arg: the entry) */
	EV_WAIT_TIMEOUT,   /* a write stops waiting for its key's push (arg: the write) */
};

enum req_kind { RQ_READ, RQ_WRITE, RQ_REPLICATE, RQ_RC_REQ, RQ_UNREPLICATE, RQ_THROUGH };

struct queue {
	uint32_t head, tail, len;
};

struct req {
	uint64_t start_ns; /* issued (open loop: scheduled) */
	uint64_t rx_ns;	   /* reached its node */
	uint64_t key;	   /* key index */
	uint64_t version;  /* reply: version served; REPLICATE / RC_REQ: version to copy */
	uint32_t link;	   /* next in a node queue or the free list */
	uint16_t node;	   /* target, then replier */
	uint8_t kind;
	uint8_t overloaded;
	uint8_t ntargets; /* REPLICATE: its targets; a pushed write's reply: its holders */
	uint8_t through;  /* a write's reply lists the holders that confirmed it */
	uint8_t waiting;  /* a write waiting for its key's push to end, until wait_until */
	uint64_t wait_until;
	struct queue riders; /* a batch's write: the writes it supersedes (switchd/batch.h) */
};

struct node {
	uint32_t busy;
	struct queue client, control;
	int32_t inflight; /* the switch's: forwarded minus replies seen */
	uint8_t health, state;
	uint32_t delay_unit; /* struct scores' delay unit for this node (0: down) */
	uint64_t served;     /* client requests served in the measured part */
	uint32_t rx;	     /* received since the meter was last told (dig_meter_count_rx) */
	uint32_t bucket[WINDOW_BUCKETS];
};

/* A node's digest side, apart: the request path touches struct node only. */
struct node_digest {
	struct dig_meter meter;
	struct dig_emitter emitter;
	struct dig_digest in_flight;
};

struct dir_entry {
	uint64_t keyhash;
	uint64_t key;
	uint16_t home;
	uint8_t want;
	uint8_t used;
	double share; /* of the requests, in the last epoch it was hot (reconcile.c's share[]) */
	union cdt_state_room state; /* the switch's state of the entry (state.st) */
	uint64_t collapsed_ns; /* a write's reply left the set at {home} (0: not since) */
	/* Nodes REPLICATE named as targets since the install: where a retire sends
	 * UNREPLICATE, with the home and the set (replicas.c's struct replicas_copies). */
	uint64_t copied[SIM_MAX_NODES / 64 + 1];
	uint16_t ncopies;
	uint16_t copy_node[COPY_SLOTS];
	uint64_t copy_ver[COPY_SLOTS];
	/*
	 * The home's write-through state of the key (nodes/through.c): the nodes
	 * it would push a write to, the push that is out and the writes waiting
	 * for it (each holding its worker, as through_push_begin() does).
	 */
	uint8_t nholders;
	uint16_t holders[CDT_MAX_REPLICAS];
	uint8_t push_out, push_sent, push_got;
	uint16_t confirmed[CDT_MAX_REPLICAS];
	uint32_t push_req;
	/* push_prev: the version before the push's, which the home's readers see
	 * while it is out (through_home_read()). kept: the last write was pushed,
	 * so the versions it replaced are kept for stamped reads (through.h). */
	uint64_t push_version, push_prev, push_deadline;
	uint8_t kept;
	struct queue waiting;
	/* The switch's batch of the key (switchd/batch.c): the write out, and the
	 * writes waiting for it. */
	uint8_t batch_busy;
	uint32_t batch_out;
	struct queue batch_wait;
};

struct timeline_point {
	uint64_t t;
	double maxmean;
};

struct sim {
	const struct sim_params *p;
	struct sim_result *res;
	struct rng rng;
	uint64_t now, end, measure_from;
	struct sim_heap heap;
	struct workload wl;
	struct ring ring;
	uint64_t *keyhash;	/* [keys] */
	uint16_t *home;		/* [keys] */
	uint32_t *version;	/* [keys] the home's version */
	struct node *node;	/* [nodes + 1], slot 0 unused */
	struct node_digest *nd; /* [nodes + 1] */
	uint32_t nnodes;
	/* Requests. */
	struct req *req;
	uint32_t nreq, free_req;
	/* REPLICATE targets: a slot of CDT_MAX_REPLICAS per request, by request index. */
	uint16_t (*targets)[CDT_MAX_REPLICAS];
	/* Switch. */
	struct scores *pick_scores; /* sel_pick()'s table: the candidates of one read */
	struct scores *one;	    /* scores_set() of one node, for its delay unit */
	uint64_t sel_rng;
	struct dig_table *dig; /* [ntables] */
	uint32_t ntables;
	struct hot_detector *hot;
	struct hot_report *report;
	uint64_t samples;
	uint64_t next_epoch;
	struct dir_entry *dir; /* [max_keys] */
	uint32_t dir_cap, dir_used;
	uint32_t *dir_index; /* open addressing: entry + 1, 0 empty */
	uint32_t index_mask;
	unsigned cap;	 /* replicas a set may hold: cdt_state_cap(max_replicas), as the switch's */
	struct place place;	 /* the expected load of the sets on each node (place.h) */
	struct place_cand *cand; /* [nodes] pick_targets' candidates */
	/* Measurement. */
	struct hist lat;
	uint32_t bucket_at;
	struct timeline_point *timeline;
	uint32_t ntimeline, timeline_cap;
	uint64_t *shifts;
	uint32_t nshifts, shifts_cap;
	uint64_t shift_ns;
	int oom;
};

static void start_jobs(struct sim *s, uint16_t id);
static void push_end(struct sim *s, struct dir_entry *e);
static void forward(struct sim *s, uint32_t i, uint16_t target);

/* ---- Events and requests. ----------------------------------------------------------- */

static void at(struct sim *s, uint64_t t, enum ev_type type, uint32_t arg)
{
	if (heap_push(&s->heap, t, type, arg) != 0)
		s->oom = 1;
}

static uint32_t req_new(struct sim *s, enum req_kind kind, uint64_t key)
{
	uint32_t i = s->free_req;

	if (i == NO_REQ) {
		uint32_t n = s->nreq ? s->nreq * 2 : 8192;
		struct req *r = realloc(s->req, n * sizeof(*r));

		if (!r) {
			s->oom = 1;
			return NO_REQ;
		}
		s->req = r;
		uint16_t(*t)[CDT_MAX_REPLICAS] = realloc(s->targets, n * sizeof(*t));

		if (!t) {
			s->oom = 1;
			return NO_REQ;
		}
		s->targets = t;
		for (uint32_t j = s->nreq; j < n; j++)
			r[j].link = j + 1 < n ? j + 1 : NO_REQ;
		s->free_req = s->nreq;
		s->nreq = n;
		i = s->free_req;
	}
	s->free_req = s->req[i].link;
	memset(&s->req[i], 0, sizeof(s->req[i]));
	s->req[i].kind = (uint8_t)kind;
	s->req[i].key = key;
	s->req[i].link = NO_REQ;
	return i;
}

static void req_free(struct sim *s, uint32_t i)
{
	s->req[i].link = s->free_req;
	s->free_req = i;
}

static void q_push(struct sim *s, struct queue *q, uint32_t i)
{
	s->req[i].link = NO_REQ;
	if (q->len++ == 0)
		q->head = i;
	else
		s->req[q->tail].link = i;
	q->tail = i;
}

static uint32_t q_pop(struct sim *s, struct queue *q)
{
	uint32_t i = q->head;

	q->head = s->req[i].link;
	q->len--;
	return i;
}

/* ---- The directory (the switch's CDT, as the control thread sees it). ---------------- */

static uint32_t slot_of(const struct sim *s, uint64_t keyhash)
{
	return (uint32_t)(keyhash ^ (keyhash >> 29)) & s->index_mask;
}

static struct dir_entry *dir_find(const struct sim *s, uint64_t keyhash)
{
	for (uint32_t i = slot_of(s, keyhash);; i = (i + 1) & s->index_mask) {
		uint32_t e = s->dir_index[i];

		if (e == 0)
			return NULL;
		if (s->dir[e - 1].keyhash == keyhash)
			return &s->dir[e - 1];
	}
}

static void index_add(struct sim *s, uint32_t entry)
{
	uint32_t i = slot_of(s, s->dir[entry].keyhash);

	while (s->dir_index[i])
		i = (i + 1) & s->index_mask;
	s->dir_index[i] = entry + 1;
}

static void index_rebuild(struct sim *s)
{
	memset(s->dir_index, 0, (s->index_mask + 1) * sizeof(*s->dir_index));
	for (uint32_t e = 0; e < s->dir_cap; e++)
		if (s->dir[e].used)
			index_add(s, e);
}

/* The copy version a node holds of e's key (0: none). */
static uint64_t *copy_of(struct dir_entry *e, uint16_t node, bool make)
{
	unsigned victim = COPY_SLOTS;

	for (unsigned i = 0; i < e->ncopies; i++) {
		if (e->copy_node[i] == node)
			return &e->copy_ver[i];
		if (victim == COPY_SLOTS && !cdt_state_has(&e->state.st, e->copy_node[i]))
			victim = i;
	}
	if (!make)
		return NULL;
	if (e->ncopies < COPY_SLOTS)
		victim = e->ncopies++;
	else if (victim == COPY_SLOTS)
		return NULL;
	e->copy_node[victim] = node;
	e->copy_ver[victim] = 0;
	return &e->copy_ver[victim];
}

/* ---- Scores: the switch's table, through its own functions. ----------------------------- */

/* Health and liveness of node id as the control thread publishes them (intake.c). */
static void publish(struct sim *s, uint32_t id)
{
	struct node *n = &s->node[id];
	const struct dig_table *t = &s->dig[(id - 1) / DIG_TABLE_NODES];
	uint16_t local = (uint16_t)((id - 1) % DIG_TABLE_NODES + 1);
	uint8_t health = dig_health(t, local);
	enum scores_state st = !dig_alive(t, local)	      ? SCORES_DOWN
			       : t->node[local].received == 0 ? SCORES_UNKNOWN
							      : SCORES_UP;

	if (n->state == st && n->health == health)
		return;
	/* scores_set() on a one-node table gives this node's delay unit. */
	scores_set(s->one, 1, health, st);
	n->health = health;
	n->state = (uint8_t)st;
	n->delay_unit = s->one->delay_unit[1];
}

/*
 * The replica a read of e goes to: sel_pick() over a score table whose slot
 * i + 1 holds the in-flight count and delay unit of st->replicas[i] (the
 * switch's table has one slot per node id; the model's node ids go past
 * it), from the first member a read weighs (cdt_state_read_skip(), as the
 * switch does).
 */
static uint16_t pick_reader(struct sim *s, const struct cdt_state *st, uint16_t home)
{
	unsigned first = cdt_state_read_skip(st, home, s->p->dir.spare_home_from);
	uint16_t slot[CDT_MAX_REPLICAS];

	for (unsigned i = first; i < st->nreplicas; i++) {
		const struct node *n = &s->node[st->replicas[i]];

		slot[i - first] = (uint16_t)(i + 1);
		s->pick_scores->outstanding[0][i + 1] = (uint32_t)n->inflight;
		s->pick_scores->delay_unit[i + 1] = n->delay_unit;
	}
	uint16_t best = sel_pick(s->pick_scores, slot, st->nreplicas - first, &s->sel_rng);

	return best == SEL_NONE ? 0 : st->replicas[best - 1];
}

/*
 * Replica groups: the member of the key's group (its home and the next R - 1
 * nodes) a read outside the directory goes to, by sel_pick() as the switch's
 * group_target() does.
 */
static uint16_t pick_member(struct sim *s, uint64_t keyhash)
{
	uint16_t ids[GROUP_MAX], slot[GROUP_MAX];
	unsigned n = ring_group(&s->ring, keyhash_point(keyhash), s->p->replicas, ids);

	for (unsigned i = 0; i < n; i++) {
		const struct node *nd = &s->node[ids[i]];

		slot[i] = (uint16_t)(i + 1);
		s->pick_scores->outstanding[0][i + 1] = (uint32_t)nd->inflight;
		s->pick_scores->delay_unit[i + 1] = nd->delay_unit;
	}
	uint16_t best = sel_pick(s->pick_scores, slot, n, &s->sel_rng);

	return best == SEL_NONE ? ids[0] : ids[best - 1];
}

/*
 * Up to want alive nodes outside e's set: reconcile.c's pick_targets(), by
 * place_pick() (the least expected load of the sets, then the least
 * expected delay by sel_cost()'s formula, then the lower id).
 */
static unsigned pick_targets(struct sim *s, const struct dir_entry *e, unsigned want, uint16_t *out)
{
	for (uint32_t id = 1; id <= s->nnodes; id++) {
		const struct node *nd = &s->node[id];

		s->cand[id - 1] = (struct place_cand){
		    .id = (uint16_t)id,
		    .cost = ((uint64_t)(nd->inflight > 0 ? nd->inflight : 0) + 1) * nd->delay_unit};
	}
	return place_pick(&s->place, s->cand, s->nnodes, &e->state.st, e->home, e->share, want,
			  out);
}

/* Every round: every set is charged again at its key's latest share, its copies
 * counted, the rest by the ring's arcs (reconcile.c's charge_sets()). */
static void charge_sets(struct sim *s)
{
	double hot = 0;

	place_clear(&s->place);
	for (uint32_t e = 0; e < s->dir_cap; e++) {
		if (!s->dir[e].used)
			continue;
		place_charge_set(&s->place, &s->dir[e].state.st, s->dir[e].home, s->dir[e].share);
		hot += s->dir[e].share;
	}
	place_charge_ring(&s->place, &s->ring, 1 - hot);
}

/* REPLICATE e's version (0: the home's current) to as many nodes as its set is short of. */
static void replicate(struct sim *s, struct dir_entry *e, uint64_t version)
{
	uint16_t targets[CDT_MAX_REPLICAS];
	unsigned n;

	if (e->state.st.nreplicas >= e->want)
		return;
	n = pick_targets(s, e, e->want - e->state.st.nreplicas, targets);
	if (n == 0)
		return;
	uint32_t i = req_new(s, RQ_REPLICATE, e->key);

	if (i == NO_REQ)
		return;
	s->req[i].node = e->home;
	s->req[i].version = version;
	s->req[i].ntargets = (uint8_t)n;
	memcpy(s->targets[i], targets, n * sizeof(*targets));
	for (unsigned t = 0; t < n; t++)
		e->copied[targets[t] / 64] |= 1ull << (targets[t] % 64);
	s->res->replicates++;
	at(s, s->now + s->p->link_us * NS_PER_US, EV_AT_NODE, i);
}

static void install(struct sim *s, const struct hot_key *k)
{
	char *end;
	uint64_t key;
	char name[HOT_MAX_KEY + 1];

	/* The detector hands back the key bytes the requests carried: "key:<index>". */
	memcpy(name, k->key, k->key_len);
	name[k->key_len] = 0;
	key = strtoull(name + 4, &end, 10);
	if (k->key_len < 5 || memcmp(name, "key:", 4) || *end || key >= s->p->keys)
		return;
	if (s->dir_used == s->dir_cap)
		return; /* directory full, as cdt_install()'s ENOSPC */
	uint32_t at_slot = 0;

	while (s->dir[at_slot].used)
		at_slot++;
	struct dir_entry *e = &s->dir[at_slot];

	memset(e, 0, sizeof(*e));
	e->used = 1;
	e->keyhash = k->keyhash;
	e->key = key;
	e->home = s->home[key];
	e->want = (uint8_t)k->replicas;
	e->share = k->share;
	e->state.st.nreplicas = 1;
	e->state.st.replicas[0] = e->home;
	s->dir_used++;
	index_add(s, at_slot);
	s->res->installs++;
	replicate(s, e, 0);
}

/*
 * Remove e; UNREPLICATE goes to the nodes that may hold a copy (the home, the
 * set, every REPLICATE target since the install: reconcile.c's
 * remove_entry()), each one a control-lane job there.
 */
static void retire(struct sim *s, struct dir_entry *e)
{
	/* The home's state of the key goes with it: a push out ends, waiting writes go on. */
	e->nholders = 0;
	if (e->push_out)
		push_end(s, e);
	/* Writes waiting at the switch go on alone (a write out keeps its riders). */
	while (e->batch_wait.len)
		forward(s, q_pop(s, &e->batch_wait), e->home);
	e->batch_busy = 0;
	e->copied[e->home / 64] |= 1ull << (e->home % 64);
	for (unsigned i = 0; i < e->state.st.nreplicas; i++)
		e->copied[e->state.st.replicas[i] / 64] |= 1ull << (e->state.st.replicas[i] % 64);
	for (uint32_t id = 1; id <= s->nnodes; id++) {
		if (!(e->copied[id / 64] >> (id % 64) & 1))
			continue;
		uint32_t i = req_new(s, RQ_UNREPLICATE, e->key);

		if (i == NO_REQ)
			return;
		s->req[i].node = (uint16_t)id;
		at(s, s->now + s->p->link_us * NS_PER_US, EV_AT_NODE, i);
	}
	e->used = 0;
	s->dir_used--;
	s->res->retires++;
}

/* An epoch ends: decide.c's local policy, reconcile.c's follow_epoch() and repair(). */
static void epoch(struct sim *s)
{
	const struct hot_report *r = s->report;
	uint32_t retired = 0;

	hot_epoch(s->hot, s->report);
	for (uint32_t i = 0; i < r->nhot; i++) {
		struct dir_entry *e = dir_find(s, r->hot[i].keyhash);

		if (e) {
			e->want = (uint8_t)r->hot[i].replicas;
			e->share = r->hot[i].share;
		}
	}
	for (uint32_t i = 0; i < r->nretired; i++) {
		struct dir_entry *e = dir_find(s, r->retired[i]);

		if (e) {
			retire(s, e);
			retired++;
		}
	}
	if (retired)
		index_rebuild(s);
	charge_sets(s);
	for (uint32_t i = 0; i < r->nhot; i++)
		if (!dir_find(s, r->hot[i].keyhash))
			install(s, &r->hot[i]);
	for (uint32_t e = 0; e < s->dir_cap; e++)
		if (s->dir[e].used)
			replicate(s, &s->dir[e], s->dir[e].state.st.completed);
}

/* ---- Write-through at the home (docs/design.md section 5, nodes/repl.c). ------------------ */

static void holders_add(struct dir_entry *e, uint16_t node)
{
	for (unsigned i = 0; i < e->nholders; i++)
		if (e->holders[i] == node)
			return;
	if (e->nholders < CDT_MAX_REPLICAS)
		e->holders[e->nholders++] = node;
}

static void write_reply(struct sim *s, uint32_t i);

/* How long a home waits, for its holders or for the key's push before its own
 * (nodes/repl.c through_wait_ms(): REPL_THROUGH_WAIT_MS, 50, plus three service times). */
static uint64_t through_wait_ns(const struct sim *s)
{
	return 50 * NS_PER_MS + 3ull * s->p->service_us * NS_PER_US;
}

/* A write waits for its key's push to end, holding its worker, at most through_wait_ns(). */
static void wait_for_push(struct sim *s, struct dir_entry *e, uint32_t i)
{
	s->req[i].waiting = 1;
	s->req[i].wait_until = s->now + through_wait_ns(s);
	q_push(s, &e->waiting, i);
	at(s, s->req[i].wait_until, EV_WAIT_TIMEOUT, i);
}

/* An unpushed write (e: its entry, or NULL): the home applies it and answers (the set falls to {home}). */
static void write_unpushed(struct sim *s, struct dir_entry *e, uint32_t i)
{
	s->version[s->req[i].key] += 1 + s->req[i].riders.len;
	s->req[i].version = s->version[s->req[i].key];
	if (e)
		e->kept = 0;
	write_reply(s, i);
}

/* The home pushes write i of e's key to its holders and waits for their acks. */
static void push_start(struct sim *s, struct dir_entry *e, uint32_t i)
{
	uint64_t link = s->p->link_us * NS_PER_US;
	uint64_t key = s->req[i].key;

	e->push_prev = s->version[key];
	e->kept = 1;
	s->version[key] += 1 + s->req[i].riders.len;
	s->req[i].version = s->version[key];
	e->push_out = 1;
	e->push_req = i;
	e->push_version = s->version[key];
	e->push_sent = e->push_got = 0;
	for (unsigned h = 0; h < e->nholders; h++) {
		uint32_t c = req_new(s, RQ_THROUGH, key);

		if (c == NO_REQ)
			break;
		s->req[c].node = e->holders[h];
		s->req[c].version = e->push_version;
		at(s, s->now + link, EV_AT_NODE, c);
		e->push_sent++;
	}
	e->push_deadline = s->now + through_wait_ns(s);
	at(s, e->push_deadline, EV_PUSH_TIMEOUT, (uint32_t)(e - s->dir));
}

/*
 * The push is over (every holder acked, or the wait ran out): the write's
 * reply lists the holders that confirmed, which are the next push's holders;
 * the worker is free; the next waiting write of the key goes on.
 */
static void push_end(struct sim *s, struct dir_entry *e)
{
	uint32_t i = e->push_req;
	struct req *r = &s->req[i];
	uint16_t home = r->node;

	e->push_out = 0;
	r->through = 1;
	r->ntargets = e->push_got;
	memcpy(s->targets[i], e->confirmed, e->push_got * sizeof(e->confirmed[0]));
	e->nholders = e->push_got;
	memcpy(e->holders, e->confirmed, e->push_got * sizeof(e->confirmed[0]));
	write_reply(s, i);
	while (e->waiting.len) {
		uint32_t w = q_pop(s, &e->waiting);

		s->req[w].waiting = 0;
		if (e->nholders) {
			push_start(s, e, w);
			break;
		}
		write_unpushed(s, e, w);
	}
	start_jobs(s, home);
}

/* A holder's ack of the push reaches the home. */
static void push_ack(struct sim *s, uint32_t i)
{
	struct req *r = &s->req[i];
	struct dir_entry *e = s->dir_used ? dir_find(s, s->keyhash[r->key]) : NULL;

	if (e && e->push_out && r->version == e->push_version) {
		bool dup = false;

		for (unsigned k = 0; k < e->push_got; k++)
			dup |= e->confirmed[k] == r->node;
		if (!dup && e->push_got < CDT_MAX_REPLICAS)
			e->confirmed[e->push_got++] = r->node;
		if (e->push_got >= e->push_sent)
			push_end(s, e);
	}
	req_free(s, i);
}

/*
 * A write waited through_wait_ns() for its key's push (through_push_begin()
 * timed out): answered without a push, its worker free again.
 */
static void wait_timeout(struct sim *s, uint32_t i)
{
	struct req *r = &s->req[i];

	if (i >= s->nreq || r->kind != RQ_WRITE || !r->waiting || r->wait_until != s->now)
		return;
	struct dir_entry *e = dir_find(s, s->keyhash[r->key]);
	uint16_t home = r->node;

	/* Out of the entry's waiting list (a short one: writes of one key). */
	if (e) {
		struct queue rest = {0};

		while (e->waiting.len) {
			uint32_t w = q_pop(s, &e->waiting);

			if (w != i)
				q_push(s, &rest, w);
		}
		e->waiting = rest;
	}
	r->waiting = 0;
	write_unpushed(s, e, i);
	start_jobs(s, home);
}

static void push_timeout(struct sim *s, uint32_t slot)
{
	struct dir_entry *e = &s->dir[slot];

	if (e->used && e->push_out && s->now >= e->push_deadline)
		push_end(s, e);
}

/* ---- Agents. ------------------------------------------------------------------------- */

/* A new request, sent by its agent at sent_ns; NO_REQ when out of memory. */
static uint32_t issue(struct sim *s, uint64_t sent_ns)
{
	uint64_t key = wl_next_key(&s->wl, &s->rng);
	enum req_kind kind = rng_double(&s->rng) < s->p->read_ratio ? RQ_READ : RQ_WRITE;
	uint32_t i = req_new(s, kind, key);

	if (i != NO_REQ)
		s->req[i].start_ns = sent_ns;
	return i;
}

/* The reply to request i leaves the switch now: its agent has it one hop later. */
static void to_agent(struct sim *s, uint32_t i)
{
	struct req *r = &s->req[i];
	uint64_t link = s->p->link_us * NS_PER_US, got = s->now + link;

	if (r->start_ns >= s->measure_from && got <= s->end) {
		if (r->overloaded) {
			s->res->errors++;
		} else {
			s->res->ops++;
			hist_record(&s->lat, (got - r->start_ns) / NS_PER_US);
		}
	}
	req_free(s, i);
	if (!s->p->concurrency)
		return;
	uint32_t next = issue(s, got);

	if (next != NO_REQ)
		at(s, got + link, EV_AT_SWITCH, next);
}

/* ---- The switch's data path. ------------------------------------------------------------ */

/* "key:<index>", as `skewless bench` names keys; its length. */
static uint16_t key_name(uint64_t index, char *out)
{
	char digits[20];
	unsigned n = 0;

	do
		digits[n++] = (char)('0' + index % 10);
	while ((index /= 10) != 0);
	memcpy(out, "key:", 4);
	for (unsigned i = 0; i < n; i++)
		out[4 + i] = digits[n - 1 - i];
	return (uint16_t)(4 + n);
}

/* Forward request i to node target. */
static void forward(struct sim *s, uint32_t i, uint16_t target)
{
	s->req[i].node = target;
	s->node[target].inflight++;
	at(s, s->now + s->p->link_us * NS_PER_US, EV_AT_NODE, i);
}

/*
 * A write of a directory key while another of it is out waits at the
 * switch (switchd/batch.c); true when it does. Otherwise it is the write out.
 */
static bool batch_hold(struct sim *s, struct dir_entry *e, uint32_t i)
{
	if (!e || !s->p->dir.batch_writes)
		return false;
	if (e->batch_busy) {
		q_push(s, &e->batch_wait, i);
		return true;
	}
	e->batch_busy = 1;
	e->batch_out = i;
	return false;
}

/* The write out of e's batch was answered: the newest waiting one goes out for all. */
static void batch_next(struct sim *s, struct dir_entry *e)
{
	uint32_t out;

	if (!e->batch_wait.len) {
		e->batch_busy = 0;
		return;
	}
	out = e->batch_wait.tail;
	while (e->batch_wait.len > 1) {
		uint32_t j = q_pop(s, &e->batch_wait);

		q_push(s, &s->req[out].riders, j);
	}
	e->batch_wait.len = 0;
	e->batch_out = out;
	forward(s, out, e->home);
}

static void at_switch(struct sim *s, uint32_t i)
{
	struct req *r = &s->req[i];
	uint64_t kh = s->keyhash[r->key];
	uint16_t target = s->home[r->key];
	struct dir_entry *e = s->dir_used ? dir_find(s, kh) : NULL;
	bool held = r->kind == RQ_WRITE && batch_hold(s, e, i);

	/* A write that waits costs its home no write: sampled as none. */
	if (s->hot && s->samples++ % s->p->dir.sample_every == 0) {
		char key[32];
		uint16_t len = key_name(r->key, key);

		hot_observe(s->hot, kh, (const uint8_t *)key, len, r->kind == RQ_WRITE && !held);
	}
	if (held)
		return;
	if (r->kind == RQ_READ) {
		if (e) {
			uint16_t pick = pick_reader(s, &e->state.st, e->home);

			s->res->dir_reads++;
			s->res->dir_reads_home_only += e->state.st.nreplicas == 1;
			if (pick)
				target = pick;
			r->version = e->state.st.completed; /* the stamp (stamp_version()) */
		} else if (s->p->replicas > 1) {
			target = pick_member(s, kh);
		}
	}
	forward(s, i, target);
}

/* A reply, REPLICATE reply or RC_ACK reaches the switch: the coherence rules apply. */
/* The coherence rules (cdt_state.h) on e's state, as cdt_apply() does: whether it changed. */
static bool on_reply(const struct sim *s, struct dir_entry *e, uint64_t version, uint16_t node)
{
	union cdt_state_room next;

	if (!cdt_state_on_reply(&e->state.st, version, node, s->cap, &next.st))
		return false;
	cdt_state_copy(&e->state.st, &next.st);
	return true;
}

static bool on_rc_ack(const struct sim *s, struct dir_entry *e, uint64_t version, uint16_t node)
{
	union cdt_state_room next;

	if (!cdt_state_on_rc_ack(&e->state.st, version, node, e->home, s->cap, &next.st))
		return false;
	cdt_state_copy(&e->state.st, &next.st);
	return true;
}

static void at_switch_reply(struct sim *s, uint32_t i)
{
	struct req *r = &s->req[i];
	struct dir_entry *e = s->dir_used ? dir_find(s, s->keyhash[r->key]) : NULL;

	switch (r->kind) {
	case RQ_READ:
	case RQ_WRITE:
		s->node[r->node].inflight--;
		if (e && !r->overloaded) {
			bool advanced = on_reply(s, e, r->version, r->node);

			/* A pushed write's holders join as their RC_ACKs would (add_holders()). */
			for (unsigned h = 0; r->through && h < r->ntargets; h++)
				on_rc_ack(s, e, r->version, s->targets[i][h]);
			/* A write completed: the set is filled up now if short (reconcile_completed()).
			 */
			if (advanced && r->kind == RQ_WRITE) {
				if (e->state.st.nreplicas == 1)
					e->collapsed_ns = s->now;
				replicate(s, e, e->state.st.completed);
			}
		}
		/* A batch's write answered: its riders with it, then the next batch. */
		while (s->req[i].riders.len) {
			uint32_t j = q_pop(s, &s->req[i].riders);

			s->req[j].overloaded = s->req[i].overloaded;
			to_agent(s, j);
		}
		if (e && e->batch_busy && e->batch_out == i)
			batch_next(s, e);
		to_agent(s, i);
		return;
	case RQ_REPLICATE:
		if (e)
			on_reply(s, e, r->version, r->node);
		break;
	case RQ_RC_REQ: /* the RC_ACK */
		if (e && on_rc_ack(s, e, r->version, r->node)) {
			s->res->rc_acks++;
			/* The first copy of a write's version: the key is spread again. */
			if (e->collapsed_ns && e->state.st.nreplicas > 1) {
				s->res->repl_lag_sum_ms +=
				    (double)(s->now - e->collapsed_ns) / NS_PER_MS;
				s->res->repl_lags++;
				e->collapsed_ns = 0;
			}
		}
		break;
	}
	req_free(s, i);
}

/* ---- Nodes. ------------------------------------------------------------------------- */

static uint64_t service_ns(struct sim *s)
{
	double mean = (double)s->p->service_us * NS_PER_US;

	if (s->p->service == SIM_SERVICE_FIXED)
		return (uint64_t)mean;
	return (uint64_t)(-log(1.0 - rng_double(&s->rng)) * mean) + 1;
}

static void start_jobs(struct sim *s, uint16_t id)
{
	struct node *n = &s->node[id];

	while (n->busy < s->p->workers && (n->control.len || n->client.len)) {
		uint32_t i = n->control.len ? q_pop(s, &n->control) : q_pop(s, &n->client);

		n->busy++;
		at(s, s->now + service_ns(s), EV_DONE, i);
	}
}

static void at_node(struct sim *s, uint32_t i)
{
	struct req *r = &s->req[i];
	struct node *n = &s->node[r->node];

	r->rx_ns = s->now;
	n->rx++; /* told to the meter in one add before it is read (digest_poll) */
	if (r->kind == RQ_READ || r->kind == RQ_WRITE) {
		if (n->client.len >= s->p->queue_depth) {
			r->overloaded = 1;
			at(s, s->now + s->p->link_us * NS_PER_US, EV_REPLY, i);
			return;
		}
		q_push(s, &n->client, i);
	} else {
		q_push(s, &n->control, i);
	}
	start_jobs(s, r->node);
}

/*
 * The version node id serves read r (its version field: the switch's stamp,
 * 0 for none). A stamp the node holds (current, or kept because the write
 * that replaced it was pushed: nodes/through.h; the 16-version depth, and
 * which holders took the push, are not modelled) is served as it is;
 * otherwise the home's readers see the version before a push that is out
 * (through_home_read()), else the current one, and a holder its copy.
 */
static uint64_t read_version(const struct sim *s, struct dir_entry *e, const struct req *r,
			     uint16_t id)
{
	uint64_t *copy;
	uint64_t have;

	if (e && e->push_out && id == e->home)
		have = e->push_prev;
	else if (id == s->home[r->key] || !e || !(copy = copy_of(e, id, false)))
		have = s->version[r->key];
	else
		have = *copy;
	if (r->version && (have == r->version || (have > r->version && e && e->kept)))
		return r->version;
	return have;
}

/* A worker finished job i: what skewless-node's handler of its op does. */
static void done(struct sim *s, uint32_t i)
{
	struct req *r = &s->req[i];
	uint16_t id = r->node;
	struct node *n = &s->node[id];
	uint64_t link = s->p->link_us * NS_PER_US;
	struct dir_entry *e = s->dir_used ? dir_find(s, s->keyhash[r->key]) : NULL;
	uint64_t *copy;

	if (r->kind == RQ_WRITE && s->p->write_through && e && id == e->home &&
	    (e->nholders || e->push_out)) {
		/* Pushed: the worker stays with the write until its holders ack. */
		if (r->start_ns >= s->measure_from)
			n->served++;
		n->bucket[s->bucket_at]++;
		if (e->push_out)
			wait_for_push(s, e, i);
		else
			push_start(s, e, i);
		return;
	}
	n->busy--;
	dig_meter_record(&s->nd[id].meter, (uint32_t)((s->now - r->rx_ns) / NS_PER_US));
	switch (r->kind) {
	case RQ_READ:
	case RQ_WRITE:
		if (r->kind == RQ_WRITE) {
			s->version[r->key] += 1 + r->riders.len;
			r->version = s->version[r->key];
			if (e)
				e->kept = 0; /* not pushed: nothing kept (through.h) */
		} else {
			r->version = read_version(s, e, r, id);
		}
		if (r->start_ns >= s->measure_from)
			n->served++;
		n->bucket[s->bucket_at]++;
		at(s, s->now + link, EV_REPLY, i);
		break;
	case RQ_REPLICATE:
		/* The home pushes only a key it holds, and only if its version is
		 * still exactly v (0: its current one). */
		if (e && e->push_out) {
			/* A write holds the key's turn: no version, no push (repl.c). */
			r->version = 0;
			at(s, s->now + link, EV_REPLY, i);
			break;
		}
		if (r->version == 0)
			r->version = s->version[r->key];
		if (s->version[r->key] != 0 && r->version == s->version[r->key]) {
			/* The home records where it pushed: the next write's holders. */
			for (unsigned t = 0; e && t < r->ntargets; t++)
				holders_add(e, s->targets[i][t]);
			for (unsigned t = 0; t < r->ntargets; t++) {
				uint32_t c = req_new(s, RQ_RC_REQ, r->key);

				if (c == NO_REQ)
					break;
				r = &s->req[i]; /* the pool may have moved */
				s->req[c].node = s->targets[i][t];
				s->req[c].version = r->version;
				at(s, s->now + link, EV_AT_NODE, c);
			}
		}
		r->version = s->version[r->key];
		at(s, s->now + link, EV_REPLY, i);
		break;
	case RQ_RC_REQ:
		/* A replica stores a copy not older than its own and acks it to the switch. */
		if (e && (copy = copy_of(e, id, true)) && r->version >= *copy)
			*copy = r->version;
		at(s, s->now + link, EV_REPLY, i);
		break;
	case RQ_THROUGH:
		/* A holder stores the pushed version and acks it to the home. */
		if (e && (copy = copy_of(e, id, true)) && r->version >= *copy)
			*copy = r->version;
		at(s, s->now + link, EV_PUSH_ACK, i);
		break;
	case RQ_UNREPLICATE:
		if (e && (copy = copy_of(e, id, false)))
			*copy = 0;
		req_free(s, i);
		break;
	}
	start_jobs(s, id);
}

/* A pushed write is answered: its worker is free, its reply leaves for the switch. */
static void write_reply(struct sim *s, uint32_t i)
{
	struct req *r = &s->req[i];
	struct node *n = &s->node[r->node];

	n->busy--;
	dig_meter_record(&s->nd[r->node].meter, (uint32_t)((s->now - r->rx_ns) / NS_PER_US));
	at(s, s->now + s->p->link_us * NS_PER_US, EV_REPLY, i);
}

/* nodes/report.c's loop: a digest when the emitter says so; the network may lose it. */
static void digest_poll(struct sim *s, uint16_t id)
{
	struct node *n = &s->node[id];
	struct node_digest *nd = &s->nd[id];
	uint64_t now_us = s->now / NS_PER_US;
	uint32_t queue = n->client.len + n->control.len + n->busy;

	dig_meter_count_rx(&nd->meter, n->rx);
	n->rx = 0;
	uint32_t p95 = dig_meter_peek_p95(&nd->meter);

	at(s, s->now + DIGEST_POLL_NS, EV_DIGEST_POLL, id);
	if (!dig_emitter_due(&nd->emitter, queue, p95, now_us))
		return;
	struct dig_digest d;

	if (dig_meter_sample(&nd->meter, queue, now_us, &d) != 0)
		return;
	dig_emitter_on_sample(&nd->emitter, &d, now_us);
	s->res->digests_sent++;
	if (rng_double(&s->rng) < s->p->digest_loss) {
		s->res->digests_lost++;
		return;
	}
	nd->in_flight = d;
	at(s, s->now + s->p->link_us * NS_PER_US, EV_DIGEST_ARRIVAL, id);
}

static void digest_arrival(struct sim *s, uint16_t id)
{
	struct dig_table *t = &s->dig[(id - 1) / DIG_TABLE_NODES];

	dig_table_receive(t, (uint16_t)((id - 1) % DIG_TABLE_NODES + 1), &s->nd[id].in_flight,
			  s->now / NS_PER_US);
	publish(s, id);
}

/* The switch's control round: liveness, scores, and every epoch_ms the directory's epoch. */
static void round_(struct sim *s)
{
	uint64_t now_us = s->now / NS_PER_US;

	at(s, s->now + ROUND_NS, EV_ROUND, 0);
	for (uint32_t t = 0; t < s->ntables; t++)
		s->res->node_down_events += dig_table_tick(&s->dig[t], now_us);
	for (uint32_t id = 1; id <= s->nnodes; id++)
		publish(s, id);
	if (s->hot)
		charge_sets(s);
	if (s->now < s->next_epoch)
		return;
	s->next_epoch = s->now + (uint64_t)s->p->dir.epoch_ms * NS_PER_MS;
	if (s->hot)
		epoch(s);
}

/* ---- Measurement. ------------------------------------------------------------------ */

/* A bucket ends: the balance of the last WINDOW_BUCKETS buckets joins the timeline. */
static void bucket_end(struct sim *s)
{
	uint64_t max = 0, sum = 0;
	uint32_t next = (s->bucket_at + 1) % WINDOW_BUCKETS;

	at(s, s->now + BUCKET_NS, EV_BUCKET, 0);
	for (uint32_t id = 1; id <= s->nnodes; id++) {
		uint64_t w = 0;

		for (unsigned b = 0; b < WINDOW_BUCKETS; b++)
			w += s->node[id].bucket[b];
		max = w > max ? w : max;
		sum += w;
		s->node[id].bucket[next] = 0;
	}
	s->bucket_at = next;
	if (s->ntimeline == s->timeline_cap) {
		uint32_t cap = s->timeline_cap ? s->timeline_cap * 2 : 1024;
		struct timeline_point *tl = realloc(s->timeline, cap * sizeof(*tl));

		if (!tl) {
			s->oom = 1;
			return;
		}
		s->timeline = tl;
		s->timeline_cap = cap;
	}
	s->timeline[s->ntimeline++] = (struct timeline_point){
	    .t = s->now, .maxmean = sum ? (double)max * s->nnodes / (double)sum : 0};
}

static void shift(struct sim *s)
{
	at(s, s->now + s->shift_ns, EV_SHIFT, 0);
	wl_shift(&s->wl, &s->rng);
	if (s->nshifts == s->shifts_cap) {
		uint32_t cap = s->shifts_cap ? s->shifts_cap * 2 : 64;
		uint64_t *sh = realloc(s->shifts, cap * sizeof(*sh));

		if (!sh) {
			s->oom = 1;
			return;
		}
		s->shifts = sh;
		s->shifts_cap = cap;
	}
	s->shifts[s->nshifts++] = s->now;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * After each hot-set change in the measured part: how long until the
 * windowed max/mean (WINDOW_BUCKETS x BUCKET_NS, a window wholly after the
 * change) is back within 1.2 x its settled level, the median of the windows
 * over the 40% of the period before the change. At 8 nodes the settled level
 * is close to 1 (the target is then max/mean <= 1.2); with many nodes a 50 ms
 * window holds few requests per node and sampling noise alone lifts it.
 */
static void rebalance(struct sim *s)
{
	double sum = 0, worst = 0, settled_sum = 0;
	uint32_t n = 0;
	double *pre = malloc((s->ntimeline + 1) * sizeof(*pre));

	if (!pre) {
		s->oom = 1;
		return;
	}
	for (uint32_t k = 0; k < s->nshifts; k++) {
		uint64_t ts = s->shifts[k], from = ts - s->shift_ns * 2 / 5;
		uint64_t until = k + 1 < s->nshifts ? s->shifts[k + 1] : s->end;
		uint32_t npre = 0;
		double took = -1;

		if (ts < s->measure_from)
			continue;
		for (uint32_t i = 0; i < s->ntimeline; i++)
			if (s->timeline[i].t >= from + WINDOW_BUCKETS * BUCKET_NS &&
			    s->timeline[i].t <= ts)
				pre[npre++] = s->timeline[i].maxmean;
		if (npre == 0)
			continue;
		qsort(pre, npre, sizeof(*pre), cmp_double);
		double settled = pre[npre / 2];

		for (uint32_t i = 0; i < s->ntimeline && took < 0; i++) {
			const struct timeline_point *p = &s->timeline[i];

			if (p->t >= ts + WINDOW_BUCKETS * BUCKET_NS && p->t <= until &&
			    p->maxmean <= 1.2 * settled)
				took = (double)(p->t - ts) / NS_PER_MS;
		}
		if (took < 0)
			took = (double)(until - ts) / NS_PER_MS; /* never within the period */
		sum += took;
		worst = took > worst ? took : worst;
		settled_sum += settled;
		n++;
	}
	free(pre);
	s->res->changes = n;
	s->res->rebalance_ms = n ? sum / n : -1;
	s->res->rebalance_max_ms = n ? worst : -1;
	s->res->settled_maxmean = n ? settled_sum / n : -1;
}

/* ---- Set-up and the run. ------------------------------------------------------------ */

int sim_params_default(struct sim_params *p, char *err, size_t errlen)
{
	/* conf/keys.c's defaults, through the loader, for one placeholder node. */
	const char *json = "{\"service\":{\"vip\":\"127.0.0.1\"},\"nodes\":[{\"id\":1,"
			   "\"name\":\"n1\",\"ip\":\"127.0.0.1\",\"port\":7447}]}";
	struct cfg *cfg = calloc(1, sizeof(*cfg));

	if (!cfg) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (cfg_load_string(json, "defaults", cfg, err, errlen) != 0) {
		free(cfg);
		return -1;
	}
	*p = (struct sim_params){
	    .nodes = 8,
	    .keys = 1000000,
	    .read_ratio = 0.95,
	    .directory = true,
	    .seconds = 10,
	    .warmup = 1,
	    .seed = 1,
	    .replicas = 1,
	    .workers = cfg->node.workers,
	    .service_us = 1000,
	    .service = SIM_SERVICE_EXP,
	    .preload = true,
	    .write_through = true,
	    .link_us = 25,
	    .queue_depth = cfg->node.queue_depth,
	    .dir = cfg->directory,
	    .digest = cfg->digest,
	};
	snprintf(p->dist, sizeof(p->dist), "zipf:0.99");
	free(cfg);
	return 0;
}

static int fail(char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return -1;
}

static int setup(struct sim *s, const struct sim_params *p, char *err, size_t errlen)
{
	struct ring_node *names = calloc(p->nodes, sizeof(*names));
	uint64_t now_us;

	if (!names)
		return fail(err, errlen, "out of memory");
	for (uint32_t i = 0; i < p->nodes; i++) {
		names[i].id = (uint16_t)(i + 1);
		names[i].weight = 1;
		snprintf(names[i].name, sizeof(names[i].name), "n%u", i + 1);
	}
	int rc = ring_build(&s->ring, names, p->nodes, 1);

	free(names);
	if (rc != 0)
		return fail(err, errlen, "cannot build the ring");
	if (wl_parse_dist(&s->wl, p->dist) != 0) {
		snprintf(err, errlen, "--dist: expected uniform, zipf:S or hotspot:D:O, got \"%s\"",
			 p->dist);
		return -1;
	}
	if (p->dynamic[0] &&
	    (wl_parse_dynamic(&s->wl, p->dynamic) != 0 || s->wl.dynamic != WL_HOT_IN)) {
		snprintf(err, errlen, "--dynamic: expected hot-in:T (seconds), got \"%s\"",
			 p->dynamic);
		return -1;
	}
	s->wl.nkeys = p->keys;
	s->wl.read = p->read_ratio;
	s->wl.update = 1 - p->read_ratio;
	if (wl_init(&s->wl) != 0)
		return fail(err, errlen, "cannot prepare the workload (--keys, --dist)");
	s->nnodes = p->nodes;
	s->cap = cdt_state_cap(p->dir.max_replicas);
	s->keyhash = malloc(p->keys * sizeof(*s->keyhash));
	s->home = malloc(p->keys * sizeof(*s->home));
	s->version = calloc(p->keys, sizeof(*s->version));
	s->node = calloc(p->nodes + 1, sizeof(*s->node));
	s->nd = calloc(p->nodes + 1, sizeof(*s->nd));
	s->cand = calloc(p->nodes, sizeof(*s->cand));
	s->pick_scores = calloc(1, sizeof(*s->pick_scores));
	s->one = calloc(1, sizeof(*s->one));
	s->ntables = (p->nodes + DIG_TABLE_NODES - 1) / DIG_TABLE_NODES;
	s->dig = calloc(s->ntables, sizeof(*s->dig));
	s->dir_cap = p->dir.max_keys < HOT_MAX_TOP ? p->dir.max_keys : HOT_MAX_TOP;
	s->dir = calloc(s->dir_cap, sizeof(*s->dir));
	s->index_mask = 1;
	while (s->index_mask < 4 * s->dir_cap)
		s->index_mask <<= 1;
	s->dir_index = calloc(s->index_mask, sizeof(*s->dir_index));
	s->index_mask--;
	if (!s->keyhash || !s->home || !s->version || !s->node || !s->nd || !s->cand ||
	    place_init(&s->place, p->nodes) != 0 ||
	    !s->pick_scores || !s->one || !s->dig || !s->dir || !s->dir_index)
		return fail(err, errlen, "out of memory");
	for (uint64_t k = 0; k < p->keys; k++) {
		char key[32];
		uint16_t len = key_name(k, key);

		s->keyhash[k] = keyhash(key, len);
		/* Preloaded, every key exists at version 1; otherwise a key exists
		 * once written. A node copies only what it holds (nodes/repl.c), so a
		 * key never written never gains a replica. */
		s->version[k] = p->preload ? 1 : 0;
		s->home[k] = ring_home(&s->ring, s->keyhash[k]);
	}

	/* One worker column in each score table: the model's in-flight count is the sum. */
	s->pick_scores->nworkers = 1;
	s->one->nworkers = 1;
	s->sel_rng = p->seed | 1;
	rng_seed(&s->rng, p->seed);
	now_us = s->now / NS_PER_US;
	for (uint32_t t = 0; t < s->ntables; t++)
		if (dig_table_init(&s->dig[t], &p->digest) != 0)
			return fail(err, errlen, "bad digest parameters");
	for (uint32_t id = 1; id <= p->nodes; id++) {
		struct node *n = &s->node[id];

		dig_table_track(&s->dig[(id - 1) / DIG_TABLE_NODES],
				(uint16_t)((id - 1) % DIG_TABLE_NODES + 1), now_us);
		/* No /proc for a simulated node: its CPU and I/O metrics read 0. */
		if (dig_meter_init(&s->nd[id].meter, &p->digest, "/nonexistent", id, now_us) != 0 ||
		    dig_emitter_init(&s->nd[id].emitter, &p->digest, now_us) != 0)
			return fail(err, errlen, "bad digest parameters");
		n->state = UINT8_MAX; /* publish() sets it */
		publish(s, id);
		/* Digest threads start spread over one poll period. */
		at(s, s->now + rng_below(&s->rng, DIGEST_POLL_NS), EV_DIGEST_POLL, id);
	}
	if (p->directory) {
		/*
		 * The detector reads the node count and the directory section of a
		 * config (K = ceil(n log2 n), replicas by share of n): a config with
		 * that section and n, whose node table it never reads.
		 */
		struct cfg *cfg = calloc(1, sizeof(*cfg));

		if (!cfg)
			return fail(err, errlen, "out of memory");
		cfg->nnodes = (uint16_t)p->nodes;
		cfg->directory = p->dir;
		s->res->top_k = cfg_directory_top_k(cfg);
		s->hot = hot_create(cfg, -1 /* SOCKET_ID_ANY */);
		free(cfg);
		s->report = calloc(1, sizeof(*s->report));
		if (!s->hot || !s->report)
			return fail(
			    err, errlen,
			    "cannot create the hot-key detector (rte_member): is DPDK's EAL "
			    "initialised?");
	}
	s->next_epoch = s->now + (uint64_t)p->dir.epoch_ms * NS_PER_MS;
	at(s, s->now + ROUND_NS, EV_ROUND, 0);
	at(s, s->now + BUCKET_NS, EV_BUCKET, 0);
	if (s->wl.dynamic == WL_HOT_IN) {
		s->shift_ns = (uint64_t)(s->wl.dynamic_period_s * NS_PER_S);
		at(s, s->now + s->shift_ns, EV_SHIFT, 0);
	}
	if (p->concurrency) {
		/* Closed loop: every client sends its first request within the first 100 us. */
		for (uint32_t c = 0; c < p->concurrency; c++) {
			uint64_t sent = s->now + rng_below(&s->rng, 100 * NS_PER_US);
			uint32_t i = issue(s, sent);

			if (i != NO_REQ)
				at(s, sent + p->link_us * NS_PER_US, EV_AT_SWITCH, i);
		}
	} else {
		at(s, s->now + p->link_us * NS_PER_US, EV_ARRIVAL, 0);
	}
	return s->oom ? fail(err, errlen, "out of memory") : 0;
}

static int check(const struct sim_params *p, char *err, size_t errlen)
{
	if (p->nodes < 1 || p->nodes > SIM_MAX_NODES)
		return fail(err, errlen, "--nodes: expected 1..1024");
	if (p->keys < 1 || p->keys > (1ull << 32))
		return fail(err, errlen, "--keys: expected 1..4294967296");
	if (!(p->read_ratio >= 0 && p->read_ratio <= 1))
		return fail(err, errlen, "--read-ratio: expected 0..1");
	if (!(p->seconds > 0 && p->seconds <= 3600) || !(p->warmup >= 0 && p->warmup <= 3600))
		return fail(err, errlen, "--seconds, --warmup: expected up to 3600 s");
	if (!p->concurrency && !(p->rate > 0 && p->rate <= 1e9))
		return fail(err, errlen, "--rate: expected 1..1e9 ops/s (or --concurrency N)");
	if (p->workers < 1 || p->workers > 64 || p->service_us < 1 || p->queue_depth < 1)
		return fail(err, errlen, "--workers 1..64, --service-us >= 1, --queue-depth >= 1");
	if (!(p->digest_loss >= 0 && p->digest_loss <= 1))
		return fail(err, errlen, "--digest-loss: expected 0..1");
	if (p->dir.max_replicas < 1 || p->dir.max_replicas > CDT_MAX_REPLICAS ||
	    p->dir.epoch_ms < 1 || p->dir.sample_every < 1 || p->dir.max_keys < 1)
		return fail(err, errlen, "--max-replicas 1..128, --epoch-ms >= 1, --max-keys >= 1");
	return 0;
}

static void finish(struct sim *s)
{
	struct sim_result *r = s->res;
	uint64_t max = 0, sum = 0;
	double seconds = (double)(s->end - s->measure_from) / NS_PER_S;
	uint64_t reps = 0;

	for (uint32_t id = 1; id <= s->nnodes; id++) {
		r->per_node[id - 1] = s->node[id].served;
		max = s->node[id].served > max ? s->node[id].served : max;
		sum += s->node[id].served;
	}
	r->max_over_mean = sum ? (double)max * s->nnodes / (double)sum : 0;
	r->throughput_ops = (double)r->ops / seconds;
	r->p50_us = (double)hist_percentile(&s->lat, 50);
	r->p99_us = (double)hist_percentile(&s->lat, 99);
	for (uint32_t e = 0; e < s->dir_cap; e++) {
		if (!s->dir[e].used)
			continue;
		r->dir_entries++;
		reps += s->dir[e].state.st.nreplicas;
		if (s->dir[e].state.st.nreplicas > r->dir_replicas_max)
			r->dir_replicas_max = s->dir[e].state.st.nreplicas;
	}
	r->dir_replicas_mean = r->dir_entries ? (double)reps / r->dir_entries : 0;
	rebalance(s);
}

static void teardown(struct sim *s)
{
	hot_free(s->hot);
	free(s->report);
	ring_free(&s->ring);
	wl_free(&s->wl);
	free(s->keyhash);
	free(s->home);
	free(s->version);
	free(s->node);
	free(s->nd);
	free(s->targets);
	free(s->cand);
	place_free(&s->place);
	free(s->pick_scores);
	free(s->one);
	free(s->dig);
	free(s->dir);
	free(s->dir_index);
	free(s->req);
	free(s->heap.ev);
	free(s->timeline);
	free(s->shifts);
}

int sim_run(const struct sim_params *p, struct sim_result *r, char *err, size_t errlen)
{
	struct sim *s;
	struct sim_ev ev;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	if (check(p, err, errlen) != 0)
		return -1;
	s = calloc(1, sizeof(*s));
	r->per_node = calloc(p->nodes, sizeof(*r->per_node));
	if (!s || !r->per_node) {
		free(s);
		return fail(err, errlen, "out of memory");
	}
	s->p = p;
	s->res = r;
	s->free_req = NO_REQ;
	/* The clock starts at 1 s: the digest table reads 0 as "never". */
	s->now = NS_PER_S;
	s->measure_from = s->now + (uint64_t)(p->warmup * NS_PER_S);
	s->end = s->measure_from + (uint64_t)(p->seconds * NS_PER_S);
	hist_reset(&s->lat);
	if (setup(s, p, err, errlen) != 0)
		goto out;
	while (!s->oom && heap_pop(&s->heap, &ev) && ev.t <= s->end) {
		s->now = ev.t;
		/* The next event's request is a cache miss away: start it now. */
		if (s->heap.n && s->heap.ev[0].arg < s->nreq)
			__builtin_prefetch(&s->req[s->heap.ev[0].arg]);
		r->events++;
		switch ((enum ev_type)ev.type) {
		case EV_ARRIVAL: {
			uint32_t i = issue(s, s->now - p->link_us * NS_PER_US);

			if (i != NO_REQ)
				at_switch(s, i);
			at(s,
			   s->now +
			       (uint64_t)(-log(1.0 - rng_double(&s->rng)) / p->rate * NS_PER_S),
			   EV_ARRIVAL, 0);
			break;
		}
		case EV_AT_SWITCH:
			at_switch(s, ev.arg);
			break;
		case EV_AT_NODE:
			at_node(s, ev.arg);
			break;
		case EV_DONE:
			done(s, ev.arg);
			break;
		case EV_REPLY:
			at_switch_reply(s, ev.arg);
			break;
		case EV_DIGEST_POLL:
			digest_poll(s, (uint16_t)ev.arg);
			break;
		case EV_DIGEST_ARRIVAL:
			digest_arrival(s, (uint16_t)ev.arg);
			break;
		case EV_ROUND:
			round_(s);
			break;
		case EV_BUCKET:
			bucket_end(s);
			break;
		case EV_SHIFT:
			shift(s);
			break;
		case EV_PUSH_ACK:
			push_ack(s, ev.arg);
			break;
		case EV_PUSH_TIMEOUT:
			push_timeout(s, ev.arg);
			break;
		case EV_WAIT_TIMEOUT:
			wait_timeout(s, ev.arg);
			break;
		}
	}
	if (s->oom) {
		fail(err, errlen, "out of memory");
		goto out;
	}
	finish(s);
	rc = s->oom ? fail(err, errlen, "out of memory") : 0;
out:
	teardown(s);
	free(s);
	if (rc != 0)
		sim_result_free(r);
	return rc;
}

void sim_result_free(struct sim_result *r)
{
	free(r->per_node);
	r->per_node = NULL;
}
