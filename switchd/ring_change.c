/*
 * ring_change.c - ring changes at the switch (ring_change.h, docs/design.md section 12).
 *
 * State, all on the control thread: the ring the switch runs (`next`, and
 * while a change runs the previous ring and the moved arcs), the epoch
 * announced and each node's answer to it, and every config applied (kept for
 * the process's life: workers and commands may hold sw->cfg, and a change is
 * an operator's action, not a per-request event).
 *
 * With peer switches (docs/design.md section 12, "Peer switches") the switch
 * that applied the change drives it; the others follow it from the ring
 * fields every SYNC carries (peer.h): each step is first made *ready* (the
 * directory entries whose home moves in it removed, at every switch), and
 * announced to the nodes only once every live peer says it is ready too;
 * a follower publishes the epochs the driver published.
 */
#include "ring_change.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_rcu_qsbr.h>

#include "clock.h"
#include "ctl.h"
#include "egress.h"
#include "health.h"
#include "keyhash.h"
#include "peer_sync.h"
#include "rchange.h"
#include "rehome.h"
#include "ringmsg.h"
#include "switchd.h"
#include "views.h"

/* The keys whose home moves in a ring step: between `from` and `to` active arcs, or (follower)
 * between the workers' ring and `target`. */
struct step_arg {
	const struct rchange *c;
	uint32_t from, to;
	const struct ring *target;
	struct sw *sw;
};

struct ring_change {
	struct cfg *applied; /* the config a change made, sw->cfg (NULL: still sw_init()'s) */
	bool changing;
	bool driving;	      /* this switch applied (or resumed) the change; else it follows */
	uint64_t ready;	      /* the epoch this switch is ready for (peer.h) */
	struct step_arg step; /* the step made ready, for rehome.c's installs */
	struct ring target;   /* following: the ring at `ready` */
	uint16_t leader;      /* following: the peer whose change this is */
	uint16_t waiting_for; /* driving: a live peer not ready for the next step (0: none) */
	uint64_t refused_version, next_try_us; /* following: a config without the peer's version */
	uint64_t follows, follow_refused, peer_waits;
	struct ring prev, next; /* ketama rings: the previous one while changing */
	struct rchange change;
	struct wire_ring prev_members;
	uint64_t start_us, last_send_us, last_step_us, complete_us;
	uint32_t published; /* arcs active in the workers' ring */
	uint64_t epoch;	    /* announced; a step is taken once every node has it */
	uint64_t acked[CFG_MAX_NODES + 1];
	bool warm[CFG_MAX_NODES + 1];
	uint32_t
	    arcs_done[CFG_MAX_NODES + 1]; /* each previous home's arcs done (its RING answers) */
	bool refused_logged[CFG_MAX_NODES + 1];
	uint32_t outgoing[CFG_MAX_NODES + 1]; /* arcs each node is the previous home of */
	uint32_t incoming[CFG_MAX_NODES + 1];
	uint64_t ring_sent, ring_acks, ring_refused, steps, rehomed, changes;
};

static void register_commands(struct sw *sw);
static json_t *show(struct sw *sw);

int ring_change_init(struct sw *sw, char *err, size_t errlen)
{
	struct ring_change *m = calloc(1, sizeof(*m));

	if (!m || cfg_build_ring(sw->cfg, &m->next) != 0) {
		free(m);
		snprintf(err, errlen, "out of memory for ring changes");
		return -1;
	}
	m->ready = rch_epoch(m->next.version, RCH_COMPLETE);
	sw->ring_change = m;
	register_commands(sw);
	return 0;
}

void ring_change_fini(struct sw *sw)
{
	struct ring_change *m = sw->ring_change;

	if (!m)
		return;
	rch_free(&m->change);
	ring_free(&m->prev);
	ring_free(&m->next);
	ring_free(&m->target);
	free(m->applied);
	free(m);
	sw->ring_change = NULL;
}

/*
 * The config of a change for every thread. The one it replaces, if a change
 * made it, is freed after every worker and the telemetry reader let go of
 * it, as a replaced ring is.
 */
static void publish_cfg(struct sw *sw, struct cfg *next)
{
	struct ring_change *m = sw->ring_change;
	struct cfg *old = m->applied;

	m->applied = next;
	__atomic_store_n(&sw->cfg, next, __ATOMIC_RELEASE);
	if (old) {
		rte_rcu_qsbr_synchronize(sw->qsbr, sw->nworkers);
		free(old);
	}
}

/* The step's ring for the workers; the old one is freed after every worker let go of it. */
static int publish_ring(struct sw *sw, uint32_t active)
{
	struct ring_change *m = sw->ring_change;
	struct ring *r = calloc(1, sizeof(*r)), *old = sw->ring;
	int rc;

	if (!r)
		return -ENOMEM;
	rc = active == RCH_COMPLETE
		 ? ring_build(r, m->next.nodes, m->next.nnodes, m->next.version)
		 : rch_effective_ring(&m->change, active, rch_epoch(m->next.version, active), r);
	if (rc) {
		free(r);
		return rc;
	}
	__atomic_store_n(&sw->ring, r, __ATOMIC_RELEASE);
	rte_rcu_qsbr_synchronize(sw->qsbr, sw->nworkers);
	ring_free(old);
	free(old);
	return 0;
}

/* Every node of the running config: the members of both rings and the ones at weight 0. */
static void send_ring(struct sw *sw, bool laggards_only, bool warm_poll)
{
	struct ring_change *m = sw->ring_change;
	uint8_t payload[16 + 4 * WIRE_RING_MAX_MEMBERS];
	int len = wire_ring_encode(&m->prev_members, payload, sizeof(payload));

	if (len < 0)
		return;
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;
		struct wire_msg msg = {
		    .op = WIRE_OP_RING,
		    .req_id = (uint64_t)sw->self->id << 48 | m->ring_sent,
		    .version = m->epoch,
		    .node = id,
		    .value = payload,
		    .val_len = (uint32_t)len,
		};

		if (laggards_only && m->acked[id] >= m->epoch &&
		    !(warm_poll && m->outgoing[id] && !m->warm[id]))
			continue;
		if (egress_to_node(sw, id, &msg) == 0)
			m->ring_sent++;
	}
}

static bool all_acked(const struct sw *sw)
{
	const struct ring_change *m = sw->ring_change;

	for (unsigned i = 0; i < sw->cfg->nnodes; i++)
		if (m->acked[sw->cfg->nodes[i].id] < m->epoch)
			return false;
	return true;
}

static bool all_warm(const struct sw *sw)
{
	const struct ring_change *m = sw->ring_change;

	for (unsigned id = 1; id <= CFG_MAX_NODES; id++)
		if (m->outgoing[id] && !m->warm[id])
			return false;
	return true;
}

/* Does the key's home change between `from` and `to` active arcs? */
static bool home_moves(void *arg, uint64_t keyhash)
{
	const struct step_arg *s = arg;
	uint32_t p = keyhash_point(keyhash);

	return rch_home(s->c, s->from, p) != rch_home(s->c, s->to, p);
}

/* Following: does the key's home differ between the workers' ring and the target? */
static bool home_differs(void *arg, uint64_t keyhash)
{
	const struct step_arg *s = arg;

	return ring_home(sw_ring(s->sw), keyhash) != ring_home(s->target, keyhash);
}

/* The epoch the workers route by. */
static uint64_t published_epoch(const struct ring_change *m)
{
	return rch_epoch(m->next.version, m->changing ? m->published : RCH_COMPLETE);
}

/*
 * What every SYNC tells the peers of our ring; when it changed, a heartbeat
 * carries it at once (a step waits for the peers' answer: not an interval).
 */
static void tell_peers(struct sw *sw)
{
	struct ring_change *m = sw->ring_change;

	peer_sync_set_ring(sw, published_epoch(m), m->ready, m->changing ? m->prev.version : 0,
			   clock_mono_us());
}

/* Driving: whether every live peer is ready for epoch (no peers: yes). */
static bool peers_ready(struct sw *sw, uint64_t epoch, uint64_t now_us)
{
	struct ring_change *m = sw->ring_change;
	uint16_t lagging = 0;
	bool was_waiting = m->waiting_for != 0;

	m->waiting_for = 0;
	if (peer_sync_ring_ready(sw, epoch, now_us, &lagging))
		return true;
	if (!was_waiting) /* one wait per step: counted when it begins */
		m->peer_waits++;
	m->waiting_for = lagging;
	return false;
}

static void announce(struct sw *sw, uint64_t epoch, uint64_t now_us)
{
	struct ring_change *m = sw->ring_change;

	m->epoch = epoch;
	m->last_send_us = now_us;
	send_ring(sw, false, false);
}

/*
 * Driving: make the step to epoch ready (our entries whose home moves in it
 * are out, and the peers are told), and announce it to the nodes as soon as
 * every live peer is ready too. The complete epoch moves no home: it waits
 * for no peer.
 */
static void prepare(struct sw *sw, uint64_t epoch, uint64_t now_us)
{
	struct ring_change *m = sw->ring_change;

	m->ready = epoch;
	tell_peers(sw);
	if (rch_epoch_active(epoch) == RCH_COMPLETE || peers_ready(sw, epoch, now_us))
		announce(sw, epoch, now_us);
}

void ring_change_run(struct sw *sw, uint64_t now_us)
{
	struct ring_change *m = sw->ring_change;
	uint32_t announced, want;

	if (!m->changing || !m->driving)
		goto out;
	announced = rch_epoch_active(m->epoch);
	if (!all_acked(sw)) {
		if (now_us - m->last_send_us >= RING_CHANGE_RESEND_MS * 1000ull) {
			m->last_send_us = now_us;
			send_ring(sw, true, false);
		}
		goto out;
	}
	/* Every node has the announced epoch: the workers may route by it now. */
	if (announced == RCH_COMPLETE) {
		publish_ring(sw, RCH_COMPLETE);
		m->changing = false;
		m->complete_us = now_us;
		log_info("ring version %lu complete: %u arcs moved in %.1f s",
			 (unsigned long)m->next.version, m->change.narcs,
			 (double)(now_us - m->start_us) / 1e6);
		goto out;
	}
	if (m->published < announced || (m->published == 0 && announced == 0 && !m->steps)) {
		if (publish_ring(sw, announced) != 0)
			goto out; /* out of memory: try again next round */
		m->published = announced;
		m->steps++;
		m->rehomed += rehome_install(sw);
	}
	/* A step made ready, waiting for a peer. */
	if (m->ready > m->epoch) {
		if (peers_ready(sw, m->ready, now_us))
			announce(sw, m->ready, now_us);
		goto out;
	}
	if (announced < m->change.narcs) {
		want =
		    rch_active_at(m->change.narcs, (now_us - m->start_us) / 1000, sw->cfg->ramp_ms);
		if (want > announced && now_us - m->last_step_us >= RING_CHANGE_STEP_MS * 1000ull) {
			m->step = (struct step_arg){.c = &m->change, .from = announced, .to = want};
			/* Hot keys whose home moves leave the directory before the nodes hear. */
			rehome_remove(sw, home_moves, &m->step);
			m->last_step_us = now_us;
			prepare(sw, rch_epoch(m->next.version, want), now_us);
		}
		goto out;
	}
	/* Every arc active: the previous homes push their keys; then complete. */
	if (all_warm(sw)) {
		prepare(sw, rch_epoch(m->next.version, RCH_COMPLETE), now_us);
		goto out;
	}
	if (now_us - m->last_send_us >= RING_CHANGE_POLL_MS * 1000ull) {
		m->last_send_us = now_us;
		send_ring(sw, true, true);
	}
out:
	tell_peers(sw);
}

/* ---- Following a peer's change (docs/design.md section 12, "Peer switches"). ---------- */

static int validate(const struct sw *sw, const struct cfg *next, bool following, const char *path,
		    char *err, size_t errlen);
static int add_nodes(struct sw *sw, const struct cfg *next);

/*
 * Take the peer's change to ring version `version`: our own config file
 * must have it (the operator installs the new config on every host first).
 * When our running ring is the one the change runs from (prev), we follow
 * it step by step; otherwise (we missed a whole change) we go straight to
 * the new ring. 0, or -1 (logged once per version).
 */
static int follow_begin(struct sw *sw, uint16_t leader, uint64_t version, uint64_t prev,
			uint64_t now_us)
{
	struct ring_change *m = sw->ring_change;
	const char *path = sw->cfg->path;
	struct cfg *next;
	struct ring ring = {0};
	struct rchange change = {0};
	char err[CFG_ERR_LEN];
	bool stepwise = !m->changing && prev == m->next.version;

	if (now_us < m->next_try_us)
		return -1;
	m->next_try_us = now_us + RING_CHANGE_FOLLOW_RETRY_MS * 1000ull;
	next = malloc(sizeof(*next));
	if (!next)
		return -1;
	err[0] = '\0';
	if (cfg_load(path, next, err, sizeof(err)) == 0 && next->ring_version != version)
		snprintf(err, sizeof(err),
			 "%s: ring.version: peer %s runs version %lu, this file has %lu: install "
			 "the new config on this host",
			 path, peer_sync_switch_name(sw, leader), (unsigned long)version,
			 (unsigned long)next->ring_version);
	else if (!err[0])
		validate(sw, next, true, path, err, sizeof(err));
	if (!err[0] &&
	    (cfg_build_ring(next, &ring) != 0 ||
	     (stepwise && rch_build(&change, &m->next, &ring) != 0) || add_nodes(sw, next) != 0))
		snprintf(err, sizeof(err), "%s: nodes: cannot build the ring or add its nodes",
			 path);
	if (err[0]) {
		m->follow_refused++;
		if (m->refused_version != version)
			log_warn("ring: not following %s to version %lu: %s",
				 peer_sync_switch_name(sw, leader), (unsigned long)version, err);
		m->refused_version = version;
		rch_free(&change);
		ring_free(&ring);
		free(next);
		return -1;
	}
	publish_cfg(sw, next);
	ring_free(&m->prev);
	m->prev = m->next;
	m->next = ring;
	rch_free(&m->change);
	m->change = change;
	m->change.prev = &m->prev;
	m->change.next = &m->next;
	m->changing = stepwise;
	m->driving = false;
	m->leader = leader;
	m->published = 0;
	m->steps = 0;
	m->changes++;
	m->follows++;
	m->start_us = now_us;
	memset(m->outgoing, 0, sizeof(m->outgoing));
	memset(m->incoming, 0, sizeof(m->incoming));
	if (stepwise)
		rch_count_by_node(&m->change, m->outgoing, m->incoming);
	log_info("ring: following %s from version %lu to %lu (%s)",
		 peer_sync_switch_name(sw, leader), (unsigned long)m->prev.version,
		 (unsigned long)version,
		 stepwise ? "step by step" : "straight to the new ring: ours was older");
	return 0;
}

/* Following: ready for epoch (our entries whose home moves up to it out), and its ring kept. */
static int follow_ready(struct sw *sw, uint64_t epoch)
{
	struct ring_change *m = sw->ring_change;
	uint32_t active = rch_epoch_active(epoch);
	struct ring target = {0};
	int rc = active == RCH_COMPLETE || !m->changing
		     ? ring_build(&target, m->next.nodes, m->next.nnodes, m->next.version)
		     : rch_effective_ring(&m->change, active, epoch, &target);

	if (rc)
		return rc;
	ring_free(&m->target);
	m->target = target;
	m->step = (struct step_arg){.target = &m->target, .sw = sw};
	rehome_remove(sw, home_differs, &m->step);
	m->ready = epoch;
	return 0;
}

void ring_change_follow(struct sw *sw, uint64_t now_us)
{
	struct ring_change *m = sw->ring_change;
	struct peer_sync_rings peers;
	uint64_t ready, prev, published, want;
	uint16_t leader;

	if (!peer_sync_on(sw) || (m->changing && m->driving))
		return;
	/* The newest change a live peer is ready for, and the furthest any live peer routes by. */
	peer_sync_rings(sw, now_us, &peers);
	ready = peers.ready;
	prev = peers.prev;
	leader = peers.leader;
	published = peers.published;
	if (rch_epoch_version(ready) > m->next.version &&
	    follow_begin(sw, leader, rch_epoch_version(ready), prev, now_us) != 0)
		return;
	if (rch_epoch_version(ready) != m->next.version || m->driving)
		return;
	if (!m->changing) {
		/* Straight to the new ring (or a restart that began there): nothing to step
		 * through. */
		if (sw_ring(sw)->version == m->next.version)
			goto out;
		if (follow_ready(sw, rch_epoch(m->next.version, RCH_COMPLETE)) == 0 &&
		    publish_ring(sw, RCH_COMPLETE) == 0)
			m->rehomed += rehome_install(sw);
		goto out;
	}
	if (ready > m->ready && follow_ready(sw, ready) != 0)
		goto out;
	/* Publish what the leader published (every node has it), never past what we are ready for.
	 */
	want = published < m->ready ? published : m->ready;
	if (rch_epoch_version(want) != m->next.version || want <= published_epoch(m))
		goto out;
	if (rch_epoch_active(want) == RCH_COMPLETE) {
		if (publish_ring(sw, RCH_COMPLETE) != 0)
			goto out;
		m->changing = false;
		m->complete_us = now_us;
		log_info("ring version %lu complete (following %s)", (unsigned long)m->next.version,
			 peer_sync_switch_name(sw, m->leader));
	} else {
		if (publish_ring(sw, rch_epoch_active(want)) != 0)
			goto out;
		m->published = rch_epoch_active(want);
		m->steps++;
	}
	m->epoch = want;
	if (want == m->ready)
		m->rehomed += rehome_install(sw);
out:
	tell_peers(sw);
}

void ring_change_take_reply(struct sw *sw, const struct wire_msg *msg)
{
	struct ring_change *m = sw->ring_change;
	uint16_t id = msg->node;
	const struct cfg_node *n = cfg_node_by_id(sw->cfg, id);
	struct wire_ring_reply reply;

	if (!n || !m->changing || !m->driving)
		return;
	if (msg->status != WIRE_ST_OK) {
		m->ring_refused++;
		if (!m->refused_logged[id]) {
			m->refused_logged[id] = true;
			log_warn("node %s refused ring version %lu: install the new config on it",
				 n->name, (unsigned long)rch_epoch_version(m->epoch));
		}
		return;
	}
	m->ring_acks++;
	if (msg->version > m->acked[id])
		m->acked[id] = msg->version;
	if (wire_ring_reply_decode(msg, &reply) != 0)
		return;
	if (msg->version >= rch_epoch(m->next.version, m->change.narcs) &&
	    (reply.flags & WIRE_RING_F_WARM_DONE))
		m->warm[id] = true;
	/* Its arcs done, in the order of the arcs (a count of its own; never more than it has). */
	if (rch_epoch_version(msg->version) == m->next.version)
		m->arcs_done[id] =
		    reply.arcs_done < m->outgoing[id] ? reply.arcs_done : m->outgoing[id];
	if (m->warm[id])
		m->arcs_done[id] = m->outgoing[id];
	/*
	 * Every RING carries the highest floor heard: the complete epoch goes out
	 * only after every previous home said its warm-up is done, floor included,
	 * so every node takes a floor above each version a previous home gave a
	 * key it no longer holds before it stops reading through (design.md).
	 */
	if (reply.floor > m->prev_members.floor)
		m->prev_members.floor = reply.floor;
}

/* ---- ring apply: validate, then start the change. ------------------------------------ */

/*
 * With replica groups a ring change adds nodes or drains them
 * (docs/design.md section 13, "Draining a node", "Adding a node"): every
 * other node keeps its weight, and the ring of the nodes kept is exactly
 * the running one without the drained nodes' points (the new one without
 * the added nodes'). So every party computes the same groups, whether it
 * runs the old config or the new one, while the view leaves the drained
 * and the added nodes out. Changing weights moves groups between live
 * nodes: not built. Why next cannot follow cur, in err; 0 when it can.
 */
static int validate_groups(const struct sw *sw, const struct cfg *next, bool following,
			   const char *path, char *err, size_t errlen)
{
	const struct cfg *cur = sw->cfg;
	const struct ring *running = &sw->ring_change->next;
	struct ring ring = {0};
	unsigned added = 0, drained = 0;
	uint32_t k = 0;
	bool same = true;

	if (next->service.replicas != cur->service.replicas) {
		snprintf(err, errlen, "%s: service.replicas: expected %u (the running config's)",
			 path, cur->service.replicas);
		return -1;
	}
	/* A peer that follows takes what its publisher applied. */
	if (!following && !views_publisher(sw)) {
		snprintf(err, errlen,
			 "%s: with replica groups, apply a ring change at the switch that "
			 "publishes views (the lowest id)",
			 path);
		return -1;
	}
	if (!following && views_joining(sw)) {
		snprintf(
		    err, errlen,
		    "%s: nodes are joining groups (a drain or a repair: `cdtctl nodes`); apply "
		    "the change once none is",
		    path);
		return -1;
	}
	for (unsigned i = 0; i < next->nnodes; i++) {
		const struct cfg_node *n = &next->nodes[i], *o = cfg_node_by_id(cur, n->id);

		added += !o;
		drained += o && o->weight && !n->weight;
		if (o && n->weight != o->weight && n->weight != 0) {
			snprintf(
			    err, errlen,
			    "%s: nodes: node %s: with replica groups a ring change adds nodes "
			    "or drains them (\"weight\": 0); changing a weight is not supported",
			    path, n->name);
			return -1;
		}
	}
	if (added && drained) {
		snprintf(err, errlen,
			 "%s: nodes: with replica groups a ring change adds nodes or drains them, "
			 "not both",
			 path);
		return -1;
	}
	if (cfg_build_ring(next, &ring) != 0) {
		snprintf(err, errlen, "%s: nodes: no ring can be built of them (every weight 0?)",
			 path);
		return -1;
	}
	/* The running ring without the drained, the new one without the added: the same points. */
	for (uint32_t i = 0; i < running->npoints && same; i++) {
		const struct cfg_node *n = cfg_node_by_id(next, running->points[i].node_id);

		if (n && n->weight == 0)
			continue;
		while (k < ring.npoints && !cfg_node_by_id(cur, ring.points[k].node_id))
			k++;
		same = k < ring.npoints && ring.points[k].value == running->points[i].value &&
		       ring.points[k].node_id == running->points[i].node_id;
		k++;
	}
	while (same && k < ring.npoints && !cfg_node_by_id(cur, ring.points[k].node_id))
		k++;
	same &= k == ring.npoints;
	ring_free(&ring);
	if (!same) {
		snprintf(err, errlen,
			 "%s: nodes: the other nodes' ring points move (ketama gives each node "
			 "floor(weight / total x 40 x n) x 4 points): with replica groups only "
			 "nodes of the others' weight can be added or drained",
			 path);
		return -1;
	}
	return 0;
}

/* Why next cannot follow cur (applied here, or following a peer), in err; 0 when it can. */
static int validate(const struct sw *sw, const struct cfg *next, bool following, const char *path,
		    char *err, size_t errlen)
{
	const struct cfg *cur = sw->cfg;
	const struct ring_change *m = sw->ring_change;

	if (next->ring_version <= m->next.version) {
		snprintf(err, errlen,
			 "%s: ring.version: expected more than %lu (the running ring), got %lu",
			 path, (unsigned long)m->next.version, (unsigned long)next->ring_version);
		return -1;
	}
	if (next->nswitches != cur->nswitches || next->service.vip != cur->service.vip ||
	    next->service.port != cur->service.port) {
		snprintf(err, errlen,
			 "%s: switches, service: expected those of the running config (a ring "
			 "change changes nodes only)",
			 path);
		return -1;
	}
	for (unsigned i = 0; i < cur->nswitches; i++) {
		const struct cfg_switch *s = cfg_switch_by_id(next, cur->switches[i].id);

		if (!s || s->vip != cur->switches[i].vip) {
			snprintf(err, errlen, "%s: switches: switch %s must stay as it runs", path,
				 cur->switches[i].name);
			return -1;
		}
	}
	for (unsigned i = 0; i < cur->nnodes; i++) {
		const struct cfg_node *o = &cur->nodes[i];
		const struct cfg_node *n = cfg_node_by_id(next, o->id);

		if (!n || strcmp(n->name, o->name) || n->ip != o->ip || n->port != o->port) {
			snprintf(
			    err, errlen,
			    "%s: nodes: node %s (id %u) is in the running config; keep it with "
			    "its name and address (\"weight\": 0 drains it) until it has drained",
			    path, o->name, o->id);
			return -1;
		}
	}
	if (cur->service.replicas > 1 || next->service.replicas > 1)
		return validate_groups(sw, next, following, path, err, errlen);
	return 0;
}

/* Nodes of next that the switch does not know yet: addresses, neighbour map, health. */
static int add_nodes(struct sw *sw, const struct cfg *next)
{
	uint64_t now = clock_mono_us();

	for (unsigned i = 0; i < next->nnodes; i++) {
		const struct cfg_node *n = &next->nodes[i];

		if (cfg_node_by_id(sw->cfg, n->id))
			continue;
		sw->node_ip_be[n->id] = rte_cpu_to_be_32(n->ip);
		sw->node_port_be[n->id] = rte_cpu_to_be_16(n->port);
		if (l2_add_node(sw->l2, n->id, n->ip) != 0 ||
		    dig_table_track(sw->dig, n->id, now) != 0)
			return -1;
		egress_arp(sw, n->ip, rte_rdtsc());
	}
	return 0;
}

/*
 * Start driving the change from m->prev to m->next (their arcs in *change):
 * every node's answer forgotten, the ramp from 0, the first epoch announced.
 */
static void begin(struct sw *sw, const struct rchange *change)
{
	struct ring_change *m = sw->ring_change;

	/* The previous ring's members, for the nodes (RING); no floor heard yet. */
	m->prev_members.prev_version = m->prev.version;
	m->prev_members.nmembers = m->prev.nnodes;
	m->prev_members.floor = 0;
	for (uint16_t i = 0; i < m->prev.nnodes; i++)
		m->prev_members.members[i] = (struct wire_ring_member){
		    .id = m->prev.nodes[i].id, .weight = (uint16_t)m->prev.nodes[i].weight};
	rch_free(&m->change);
	m->change = *change;
	m->change.prev = &m->prev; /* the rings moved into m */
	m->change.next = &m->next;
	memset(m->acked, 0, sizeof(m->acked));
	memset(m->warm, 0, sizeof(m->warm));
	memset(m->arcs_done, 0, sizeof(m->arcs_done));
	memset(m->refused_logged, 0, sizeof(m->refused_logged));
	memset(m->outgoing, 0, sizeof(m->outgoing));
	memset(m->incoming, 0, sizeof(m->incoming));
	rch_count_by_node(&m->change, m->outgoing, m->incoming);
	m->changing = true;
	m->driving = true;
	m->ready = rch_epoch(m->next.version, 0);
	m->published = 0;
	m->steps = 0;
	m->changes++;
	m->start_us = clock_mono_us();
	announce(sw, rch_epoch(m->next.version, 0), m->start_us);
}

/*
 * `ring resume PREV_FILE`: a switch restarted in the middle of a change runs
 * its config's ring as if the change were complete and does not drive it.
 * Given the config the change started from, it drives it again from step 0:
 * nodes already further answer with their own (higher) epoch, which counts
 * as acknowledged, and the switch's steps catch up with theirs.
 */
static json_t *resume(struct sw *sw, const char *path)
{
	struct ring_change *m = sw->ring_change;
	struct cfg *prev = malloc(sizeof(*prev));
	struct ring ring = {0};
	struct rchange change;
	char err[CFG_ERR_LEN];

	if (!prev)
		return ctl_error("%s: out of memory", path);
	if (sw->cfg->service.replicas > 1) {
		free(prev);
		return ctl_error(
		    "%s: with replica groups a restarted switch has nothing to resume: "
		    "its views take an added node in (service.replicas %u)",
		    path, sw->cfg->service.replicas);
	}
	if (m->changing) {
		free(prev);
		return ctl_error("%s: a ring change is in progress already", path);
	}
	if (cfg_load(path, prev, err, sizeof(err)) != 0) {
		free(prev);
		return json_pack("{s:b, s:s}", "ok", 0, "error", err);
	}
	if (prev->ring_version >= m->next.version) {
		snprintf(err, sizeof(err),
			 "%s: ring.version: expected less than %lu (the running ring), got %lu",
			 path, (unsigned long)m->next.version, (unsigned long)prev->ring_version);
		free(prev);
		return json_pack("{s:b, s:s}", "ok", 0, "error", err);
	}
	for (unsigned i = 0; i < prev->nnodes; i++) {
		const struct cfg_node *o = &prev->nodes[i], *n = cfg_node_by_id(sw->cfg, o->id);

		if (!n || strcmp(n->name, o->name)) {
			snprintf(err, sizeof(err),
				 "%s: nodes: node %s (id %u) is not in the running config", path,
				 o->name, o->id);
			free(prev);
			return json_pack("{s:b, s:s}", "ok", 0, "error", err);
		}
	}
	if (cfg_build_ring(prev, &ring) != 0 || rch_build(&change, &ring, &m->next) != 0) {
		ring_free(&ring);
		free(prev);
		return ctl_error("%s: nodes: no ring can be built of them", path);
	}
	free(prev);
	ring_free(&m->prev);
	m->prev = ring;
	begin(sw, &change);
	log_info("ring resume from %s: version %lu -> %lu, %u arcs", path,
		 (unsigned long)m->prev.version, (unsigned long)m->next.version, m->change.narcs);
	return show(sw);
}

/*
 * With replica groups (validate_groups()): drained nodes are left out by the
 * views (views.c) and no ring point moves. Added nodes are put out of every
 * group in a view first; then the workers route by the ring that has them,
 * the directory entries whose home moves to them removed first (rehome.c).
 */
static json_t *apply_groups(struct sw *sw, struct cfg *next, const char *path)
{
	struct ring_change *m = sw->ring_change;
	uint8_t added[GROUP_BITMAP] = {0};
	struct ring ring = {0};
	unsigned nadded = 0;

	for (unsigned i = 0; i < next->nnodes; i++)
		if (!cfg_node_by_id(sw->cfg, next->nodes[i].id)) {
			group_set_bit(added, next->nodes[i].id);
			nadded++;
		}
	if (!nadded) {
		log_info("ring apply %s: version %lu: its nodes of weight 0 are drained out of the "
			 "replica groups, one at a time",
			 path, (unsigned long)next->ring_version);
		publish_cfg(sw, next);
		return show(sw);
	}
	if (cfg_build_ring(next, &ring) != 0 || add_nodes(sw, next) != 0) {
		ring_free(&ring);
		free(next);
		return ctl_error("%s: nodes: no room for the new nodes in the switch's tables",
				 path);
	}
	publish_cfg(sw, next);
	views_add(sw, added);
	ring_free(&m->target);
	m->target = ring;
	m->step = (struct step_arg){.target = &m->target, .sw = sw};
	m->rehomed += rehome_remove(sw, home_differs, &m->step);
	ring_free(&m->prev);
	m->prev = m->next;
	memset(&m->next, 0, sizeof(m->next));
	if (ring_build(&m->next, ring.nodes, ring.nnodes, ring.version) != 0 ||
	    publish_ring(sw, RCH_COMPLETE) != 0)
		log_warn("ring apply %s: out of memory building the ring", path);
	m->rehomed += rehome_install(sw);
	/* Peer switches follow it straight to the new ring (ring_change_follow()). */
	m->ready = m->epoch = rch_epoch(m->next.version, RCH_COMPLETE);
	tell_peers(sw);
	log_info("ring apply %s: version %lu adds %u node(s): out of the replica groups until "
		 "every node has this config, then they catch up their groups",
		 path, (unsigned long)next->ring_version, nadded);
	return show(sw);
}

static json_t *apply(struct sw *sw, const char *path)
{
	struct ring_change *m = sw->ring_change;
	struct cfg *next;
	struct ring ring = {0};
	struct rchange change;
	char err[CFG_ERR_LEN];

	if (m->changing)
		return ctl_error("%s: a ring change is in progress; wait until `cdtctl ring show` "
				 "says it is stable",
				 path);
	next = malloc(sizeof(*next));
	if (!next)
		return ctl_error("%s: out of memory", path);
	if (cfg_load(path, next, err, sizeof(err)) != 0 ||
	    validate(sw, next, false, path, err, sizeof(err)) != 0) {
		free(next);
		return json_pack("{s:b, s:s}", "ok", 0, "error", err);
	}
	if (next->service.replicas > 1)
		return apply_groups(sw, next, path);
	if (cfg_build_ring(next, &ring) != 0 || rch_build(&change, &m->next, &ring) != 0) {
		ring_free(&ring);
		free(next);
		return ctl_error("%s: nodes: no ring can be built of them (every weight 0?)", path);
	}
	if (add_nodes(sw, next) != 0) {
		rch_free(&change);
		ring_free(&ring);
		free(next);
		return ctl_error("%s: nodes: no room for the new nodes in the switch's tables",
				 path);
	}
	publish_cfg(sw, next);
	/* The running ring becomes the previous one. */
	ring_free(&m->prev);
	m->prev = m->next;
	m->next = ring;
	begin(sw, &change);
	log_info("ring apply %s: version %lu -> %lu, %u arcs move (%.1f%% of the keyspace), ramp "
		 "%u ms",
		 path, (unsigned long)m->prev.version, (unsigned long)m->next.version,
		 m->change.narcs, 100 * rch_moved_share(&m->change), next->ramp_ms);
	return show(sw);
}

/* `ring show`: the running ring, the change in progress, each node's answer, the peers'. */
static json_t *show(struct sw *sw)
{
	struct ring_change *m = sw->ring_change;
	json_t *nodes = json_array(), *o;
	uint32_t announced = rch_epoch_active(m->epoch), done = 0;
	const char *state = !m->changing		  ? "stable"
			    : !m->driving		  ? "following"
			    : announced == RCH_COMPLETE	  ? "completing"
			    : announced < m->change.narcs ? "ramp"
							  : "warmup";

	for (unsigned id = 1; m->changing && m->driving && id <= CFG_MAX_NODES; id++)
		done += m->arcs_done[id];
	if (!m->changing)
		done = m->change.narcs;
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		const struct cfg_node *n = &sw->cfg->nodes[i];

		json_array_append_new(
		    nodes,
		    json_pack("{s:s, s:i, s:I, s:i, s:i, s:i, s:b}", "name", n->name, "weight",
			      (int)n->weight, "epoch", (json_int_t)m->acked[n->id], "arcs_out",
			      (int)m->outgoing[n->id], "arcs_done",
			      (int)(m->changing ? m->arcs_done[n->id] : m->outgoing[n->id]),
			      "arcs_in", (int)m->incoming[n->id], "warm_done", m->warm[n->id]));
	}
	o = json_pack("{s:b, s:s, s:I, s:I, s:I, s:i, s:i, s:i, s:f, s:I, s:I, s:I, s:I, s:o}",
		      "ok", 1, "state", state, "version", (json_int_t)m->next.version,
		      "previous_version", (json_int_t)(m->changes ? m->prev.version : 0), "epoch",
		      (json_int_t)m->epoch, "arcs", (int)m->change.narcs, "active",
		      (int)(announced == RCH_COMPLETE ? m->change.narcs : announced), "arcs_done",
		      (int)done, "moved_share", rch_moved_share(&m->change), "ring_sent",
		      (json_int_t)m->ring_sent, "ring_acks", (json_int_t)m->ring_acks,
		      "ring_refused", (json_int_t)m->ring_refused, "rehomed",
		      (json_int_t)m->rehomed, "nodes", nodes);
	/* With peers: who drives, what we are ready for, whom a step waits for. */
	json_object_set_new(o, "published", json_integer((json_int_t)published_epoch(m)));
	json_object_set_new(o, "ready", json_integer((json_int_t)m->ready));
	json_object_set_new(o, "driving", json_boolean(m->changing && m->driving));
	json_object_set_new(
	    o, "following",
	    json_string(m->changing && !m->driving ? peer_sync_switch_name(sw, m->leader) : ""));
	json_object_set_new(o, "waiting_for",
			    json_string(m->changing && m->driving && m->waiting_for
					    ? peer_sync_switch_name(sw, m->waiting_for)
					    : ""));
	json_object_set_new(o, "follows", json_integer((json_int_t)m->follows));
	json_object_set_new(o, "follow_refused", json_integer((json_int_t)m->follow_refused));
	json_object_set_new(o, "peer_waits", json_integer((json_int_t)m->peer_waits));
	return o;
}

static json_t *cmd_ring(struct sw *sw, int argc, char **argv, void *aux)
{
	uint8_t path[CFG_MAX_PATH];
	size_t len;

	(void)aux;
	if (argc == 0 || !strcmp(argv[0], "show"))
		return show(sw);
	if ((!strcmp(argv[0], "apply") || !strcmp(argv[0], "resume")) && argc == 2) {
		/* The path comes hex-encoded (cdtctl), so that any byte may be in it. */
		if (cfg_parse_hex(argv[1], path, sizeof(path) - 1, &len) != 0)
			return ctl_error("ring apply: expected a hex-encoded path, got \"%s\"",
					 argv[1]);
		path[len] = '\0';
		return argv[0][0] == 'a' ? apply(sw, (const char *)path)
					 : resume(sw, (const char *)path);
	}
	return ctl_error("ring: expected show, apply FILE or resume PREV_FILE, got \"%s\"",
			 argv[0]);
}

static void register_commands(struct sw *sw)
{
	ctl_register(sw, "ring", cmd_ring, NULL);
}
