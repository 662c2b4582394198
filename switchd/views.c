/*
 * views.c - replica groups' views: marks from digests and answers, VIEW out,
 * the skip bitmap in (views.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "clock.h"
#include "ctl.h"
#include "egress.h"
#include "fmt.h"
#include "group.h"
#include "log.h"
#include "prom.h"
#include "reconcile.h"
#include "switchd.h"
#include "views.h"

enum mark { MARK_UP, MARK_DOWN, MARK_CATCHING };

struct view_node {
	uint64_t down_since_us; /* CLOCK_MONOTONIC: when it was last marked down */
	uint64_t held;	  /* the newest view it answered holding */
	uint64_t told;	  /* the newest view sent to it */
	uint64_t up_from; /* marked up from this view and not told so yet (0: none) */
	uint64_t joined_from; /* its join ended by this view, not told so yet (0: none) */
	uint64_t left_from;   /* took groups from it while up: told first (0: none) */
	uint64_t answer_req;  /* the req_id of its newest answer (a lease is granted from it) */
	uint64_t answer_us;   /* CLOCK_MONOTONIC: when it came */
	uint64_t granted_us;  /* the last VIEW that granted it a lease was sent */
	bool answered;	  /* since this switch started */
	uint8_t state;	  /* its last answer's, enum wire_view_state */
	uint16_t sources_left;
	uint64_t records;
	uint32_t config_nodes; /* the nodes its config has, from its last answer */
};

struct views {
	bool publisher;	   /* the switch with the lowest id */
	bool published;	   /* its first view is out */
	uint64_t start_us; /* CLOCK_MONOTONIC */
	uint64_t last_send_us;
	struct wire_view cur; /* the publisher's view; the newest one answers show, otherwise */
	struct wire_view learned; /* the newest view any node answered holding */
	struct view_node node[CFG_MAX_NODES + 1];
	uint64_t changes, sent, answers, repairs;
};

static bool views_on(const struct sw *sw)
{
	return sw->views != NULL;
}

bool views_publisher(const struct sw *sw)
{
	return views_on(sw) && sw->views->publisher;
}

/* Weight 0 in the switch's config: drained (ring_change.c), out of every group for good. */
static bool drained(const struct cfg_node *n)
{
	return n->weight == 0;
}

static enum mark mark_of(const struct wire_view *v, uint16_t id)
{
	if (group_bit(v->down, id))
		return MARK_DOWN;
	return group_bit(v->catching, id) ? MARK_CATCHING : MARK_UP;
}

static void set_mark(struct wire_view *v, uint16_t id, enum mark m)
{
	group_clear_bit(v->down, id);
	group_clear_bit(v->catching, id);
	if (m == MARK_DOWN)
		group_set_bit(v->down, id);
	else if (m == MARK_CATCHING)
		group_set_bit(v->catching, id);
}

static const char *mark_name(enum mark m)
{
	return m == MARK_DOWN ? "down" : m == MARK_CATCHING ? "catching" : "up";
}

/* A node's state as `cdtctl nodes` shows it: its mark, or out, or joining. */
static const char *state_name(const struct wire_view *v, uint16_t id, enum mark m)
{
	if (group_bit(v->out, id))
		return "out";
	return m == MARK_UP && group_bit(v->joining, id) ? "joining" : mark_name(m);
}

static bool no_bits(const uint8_t *map)
{
	static const uint8_t zero[GROUP_BITMAP];

	return memcmp(map, zero, GROUP_BITMAP) == 0;
}

static unsigned count_bits(const struct sw *sw, const uint8_t *map)
{
	unsigned n = 0;

	for (unsigned i = 0; i < sw->cfg->nnodes; i++)
		n += group_bit(map, sw->cfg->nodes[i].id);
	return n;
}

/* A bitmap as the fast path's words (bit id % 64 of word id / 64). */
static void store_words(uint64_t *words, const uint8_t *map)
{
	for (unsigned w = 0; w < 4; w++) {
		uint64_t x = 0;

		for (unsigned b = 0; b < 8; b++)
			x |= (uint64_t)map[w * 8 + b] << (8 * b);
		__atomic_store_n(&words[w], x, __ATOMIC_RELAXED);
	}
}

/*
 * The fast path's skip bitmap: marked down or catching up, or marked up and
 * not told yet; and the groups' out, joining and was_out bitmaps.
 */
static void publish_skip(struct sw *sw)
{
	struct views *v = sw->views;
	uint8_t skip[GROUP_BITMAP] = {0};

	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;

		if (mark_of(&v->cur, id) != MARK_UP || v->node[id].up_from ||
		    group_bit(v->cur.out, id) || drained(&sw->cfg->nodes[i]))
			group_set_bit(skip, id);
	}
	store_words(sw->group_skip, skip);
	store_words(sw->group_out, v->cur.out);
	store_words(sw->group_joining, v->cur.joining);
	store_words(sw->group_was_out, v->cur.was_out);
}

/* A keyhash's directory entry homed at the node arg points to. */
static bool homed_at(struct sw *sw, struct cdt_entry *e, void *arg)
{
	(void)sw;
	return e->owner == 0 && e->home == *(const uint16_t *)arg;
}

/*
 * A node the groups skip from now on: it leaves every directory entry's
 * copies (it may come back with none: a wiped disk), and its own entries go
 * (their writes now land at another member, which does not know the
 * copies; docs/design.md section 13). None is installed with it as home
 * until it is up again (reconcile.c).
 */
static void drop_entries(struct sw *sw, uint16_t id)
{
	uint32_t it = 0;
	const uint64_t *list;
	struct cdt_entry *e;
	uint32_t n;

	while ((e = cdt_next(sw->cdt, &it)) != NULL)
		if (e->owner == 0 && e->home != id)
			cdt_apply(sw->cdt, sw->cdt->nworkers, e, CDT_EV_DROP, 0, id, NULL);
	n = reconcile_collect(sw, homed_at, &id, &list);
	for (uint32_t i = 0; i < n; i++) {
		e = cdt_find(sw->cdt, list[i]);
		if (e)
			reconcile_remove(sw, e);
	}
}

static void metrics_views(struct sw *sw, struct prom *p)
{
	const struct views *v = sw->views;

	prom_add(p, "skewless_switch_view_number",
		 "The replica groups' current view (microseconds of the wall clock)", PROM_GAUGE,
		 NULL, 0, (double)v->cur.number);
	prom_add(p, "skewless_switch_view_changes_total", "Views this switch published",
		 PROM_COUNTER, NULL, 0, (double)v->changes);
	prom_add(p, "skewless_switch_view_sent_total", "VIEW datagrams sent (views and queries)",
		 PROM_COUNTER, NULL, 0, (double)v->sent);
	prom_add(p, "skewless_switch_view_answers_total", "VIEW answers taken", PROM_COUNTER,
		 NULL, 0, (double)v->answers);
	prom_add(
	    p, "skewless_switch_view_out",
	    "Nodes left out of the replica groups (down past service.repair_after_ms, or drained)",
	    PROM_GAUGE, NULL, 0, (double)count_bits(sw, v->cur.out));
	prom_add(p, "skewless_switch_view_joining",
		 "Nodes taking the records of groups a repair made them members of", PROM_GAUGE,
		 NULL, 0, (double)count_bits(sw, v->cur.joining));
	prom_add(
	    p, "skewless_switch_repairs_total",
	    "Nodes this switch left out of the groups (down too long, or drained), their groups "
	    "copied to the next nodes",
	    PROM_COUNTER, NULL, 0, (double)v->repairs);
}

int views_init(struct sw *sw, char *err, size_t errlen)
{
	struct views *v;
	uint16_t lowest = UINT16_MAX;

	if (sw->cfg->service.replicas <= 1)
		return 0;
	v = calloc(1, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "out of memory for the replica groups' views");
		return -1;
	}
	for (unsigned i = 0; i < sw->cfg->nswitches; i++)
		lowest = RTE_MIN(lowest, sw->cfg->switches[i].id);
	v->publisher = sw->self->id == lowest;
	v->start_us = clock_mono_us();
	sw->views = v;
	ctl_register_metrics(sw, metrics_views);
	/* Until the first view, every node is skipped: none is known to serve. */
	for (unsigned i = 0; i < sw->cfg->nnodes; i++)
		set_mark(&v->cur, sw->cfg->nodes[i].id, MARK_CATCHING);
	publish_skip(sw);
	return 0;
}

void views_fini(struct sw *sw)
{
	free(sw->views);
	sw->views = NULL;
}

void views_take_reply(struct sw *sw, const struct wire_msg *msg)
{
	struct views *v = sw->views;
	struct wire_view_reply r;
	struct view_node *n;

	if (!views_on(sw) || msg->status != WIRE_ST_OK || !cfg_node_by_id(sw->cfg, msg->node) ||
	    wire_view_reply_decode(msg, &r) != 0)
		return;
	n = &v->node[msg->node];
	v->answers++;
	n->answered = true;
	n->answer_req = msg->req_id;
	n->answer_us = clock_mono_us();
	n->held = RTE_MAX(n->held, msg->version);
	n->state = r.state;
	n->sources_left = r.sources_left;
	n->records = r.records;
	n->config_nodes = r.config_nodes;
	if (n->up_from && n->held >= n->up_from) {
		n->up_from = 0; /* told, and it holds it: the fast path sends it its keys */
		publish_skip(sw);
	}
	if (n->joined_from && n->held >= n->joined_from)
		n->joined_from = 0;
	if (r.view.number > v->learned.number)
		v->learned = r.view;
	/* Not the publisher: route by the newest view any node holds. */
	if (!v->publisher && r.view.number > v->cur.number) {
		v->cur = r.view;
		publish_skip(sw);
	}
}

static bool alive(const struct sw *sw, uint16_t id)
{
	return sw->scores.state[id] != SCORES_DOWN;
}

/* Alive by the digests, and answering VIEWs (once it has answered one). */
static bool answers(const struct sw *sw, uint16_t id, uint64_t now_us)
{
	const struct view_node *n = &sw->views->node[id];

	/* (answer_us may be a little past now_us: answers are taken after the round's clock read) */
	return alive(sw, id) && (!n->answered || n->answer_us + VIEWS_SILENT_MS * 1000ull >= now_us);
}

/*
 * Every node that may act as a primary (marked up and told so) holds view
 * number, but node `except`: none of them still takes writes of the keys
 * that view gives `except`. Nodes whose join that view ends are not asked:
 * a group new to two of them had neither as its primary.
 */
static bool others_hold(const struct sw *sw, uint16_t except, uint64_t number)
{
	const struct views *v = sw->views;

	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;
		const struct view_node *n = &v->node[id];

		if (id != except && mark_of(&v->cur, id) == MARK_UP && !n->up_from &&
		    !n->joined_from && n->held < number)
			return false;
	}
	return true;
}

/*
 * Whether a node a view took groups from while it was up may still serve
 * them under a view from before: one does not hold that view, answers, and
 * the last lease granted to it has not ended (with leases off: until it
 * holds the view or stops answering).
 */
static bool leavers_serve(const struct sw *sw, uint64_t now_us)
{
	uint64_t lease_us = (uint64_t)sw->cfg->service.view_lease_ms * 1000;

	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;
		const struct view_node *n = &sw->views->node[id];

		if (n->left_from && n->held < n->left_from && answers(sw, id, now_us) &&
		    (!lease_us || now_us < n->granted_us + lease_us))
			return true;
	}
	return false;
}

/*
 * Told last (marked up, or its join ended): not before no other node acts
 * as its keys' primary. And no node but a leaver is told a view while a
 * leaver may still serve under an older one (leavers_serve): those groups'
 * primaries must not take writes it does not get while it still serves
 * reads of them.
 */
static bool held_back(const struct sw *sw, uint16_t id, bool leavers_serving)
{
	const struct view_node *n = &sw->views->node[id];

	if ((n->up_from && !others_hold(sw, id, n->up_from)) ||
	    (n->joined_from && !others_hold(sw, id, n->joined_from)))
		return true;
	return !n->left_from && leavers_serving;
}

/*
 * VIEW `number` to node id (0: a query). The publisher's grants a lease
 * from the node's newest answer, if that is fresh and the node alive: the
 * node serves until view_lease_ms past that answer, and remark() marks it
 * down no sooner than view_lease_ms past the grant.
 */
static void send_view(struct sw *sw, uint16_t id, uint64_t number, uint64_t now_us)
{
	struct views *v = sw->views;
	struct view_node *n = &v->node[id];
	uint8_t payload[WIRE_VIEW_LEN];
	struct wire_msg msg = {
	    .op = WIRE_OP_VIEW,
	    .req_id = (uint64_t)sw->self->id << 48 | (v->sent & 0xffffffffffffull),
	    .version = number,
	    .node = id,
	    .value = payload,
	    .val_len = WIRE_VIEW_LEN,
	};

	struct wire_view view = v->cur;
	bool grant = number && n->answered && n->answer_us + VIEWS_GRANT_MS * 1000ull >= now_us &&
		     answers(sw, id, now_us);

	view.lease = grant ? n->answer_req : 0;
	if (number)
		wire_view_encode(&view, payload, sizeof(payload));
	else
		memset(payload, 0, sizeof(payload));
	if (egress_to_node(sw, id, &msg) == 0) {
		v->sent++;
		n->told = RTE_MAX(n->told, number);
		if (grant)
			n->granted_us = now_us;
	}
}

/* VIEW 0 to every node, every VIEWS_RESEND_MS: what view each holds, and where it is. */
static void ask(struct sw *sw, uint64_t now_us)
{
	struct views *v = sw->views;

	if (now_us - v->last_send_us < VIEWS_RESEND_MS * 1000ull)
		return;
	v->last_send_us = now_us;
	for (unsigned i = 0; i < sw->cfg->nnodes; i++)
		send_view(sw, sw->cfg->nodes[i].id, 0, now_us);
}

/* Strictly above every view number seen: the wall clock's microseconds, or one more. */
static uint64_t next_number(const struct sw *sw)
{
	const struct views *v = sw->views;
	uint64_t n = RTE_MAX(clock_real_us(), v->cur.number + 1);

	for (unsigned i = 0; i < sw->cfg->nnodes; i++)
		n = RTE_MAX(n, v->node[sw->cfg->nodes[i].id].held + 1);
	return n;
}

/*
 * Repair (docs/design.md section 13): leave node `id` out of next's groups,
 * and mark joining every node marked up that this makes a member of a group
 * it is not in with next->was_out. False when no node joins.
 */
static bool leave_out(struct sw *sw, struct wire_view *next, uint16_t id)
{
	const struct ring *ring = sw_ring(sw);
	uint16_t now_in[GROUP_MAX], before[GROUP_MAX];
	bool any = false;

	group_set_bit(next->out, id);
	for (uint32_t k = 0; k < ring->npoints; k++) {
		uint32_t point = ring->points[k].value;
		unsigned n = ring_group_without(ring, point, sw->group_r, next->out, now_in);
		unsigned nb = ring_group_without(ring, point, sw->group_r, next->was_out, before);

		for (unsigned i = 0; i < n; i++) {
			bool member = false;

			for (unsigned j = 0; j < nb; j++)
				member |= before[j] == now_in[i];
			if (!member && mark_of(next, now_in[i]) == MARK_UP) {
				group_set_bit(next->joining, now_in[i]);
				any = true;
			}
		}
	}
	return any;
}

/*
 * Every node that answers VIEWs knows every node of the switch's config: a
 * config only gains nodes (a drained one stays, at weight 0), so its count
 * tells. A node added by `ring apply` is in no group before.
 */
static bool all_know(const struct sw *sw, uint64_t now_us)
{
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;
		const struct view_node *n = &sw->views->node[id];

		if (answers(sw, id, now_us) && (!n->answered || n->config_nodes < sw->cfg->nnodes))
			return false;
	}
	return true;
}

/*
 * Out, joining and was_out in next, once its marks are set: a node back up
 * is no longer out, unless drained or some node does not know every node;
 * a node not marked up joins nothing; one
 * that answered "joined" under cur is done; with no join running, was_out
 * is out, and a drained node not out yet, else the node down longest past
 * service.repair_after_ms, is left out.
 */
static void regroup(struct sw *sw, struct wire_view *next, uint64_t now_us)
{
	struct views *v = sw->views;
	uint64_t after_us = (uint64_t)sw->cfg->service.repair_after_ms * 1000;
	uint16_t longest = 0, drain = 0, id;

	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		const struct view_node *n = &v->node[id = sw->cfg->nodes[i].id];
		enum mark m = mark_of(next, id);

		/*
		 * Back in, alive and not drained, once every node that answers
		 * knows every node of this switch's config (an added node's ring
		 * points are in it).
		 * One that serves (added, caught up with no groups) catches up.
		 */
		if (group_bit(next->out, id) && m != MARK_DOWN && !drained(&sw->cfg->nodes[i]) &&
		    all_know(sw, now_us)) {
			group_clear_bit(next->out, id);
			group_clear_bit(next->was_out, id);
			if (m == MARK_UP) {
				set_mark(next, id, m = MARK_CATCHING);
				log_info(
				    "node %s into the replica groups: it catches up its groups",
				    sw->cfg->nodes[i].name);
			}
		}
		if (m != MARK_UP ||
		    (n->held == v->cur.number && n->state == WIRE_VIEW_JOINED))
			group_clear_bit(next->joining, id);
		if (group_bit(next->out, id))
			continue;
		if (drained(&sw->cfg->nodes[i]))
			drain = drain ? drain : id;
		else if (m == MARK_DOWN &&
			 (!longest || n->down_since_us < v->node[longest].down_since_us))
			longest = id;
	}
	if (!no_bits(next->joining))
		return;
	memcpy(next->was_out, next->out, GROUP_BITMAP);
	if (drain)
		log_info("node %s drained (weight 0): left out of the replica groups; their next "
			 "nodes take its records",
			 cfg_node_by_id(sw->cfg, id = drain)->name);
	else if (after_us && longest && now_us - v->node[longest].down_since_us >= after_us)
		log_info("node %s down for %llu ms: left out of the replica groups; their next "
			 "nodes take its records",
			 cfg_node_by_id(sw->cfg, id = longest)->name,
			 (unsigned long long)((now_us - v->node[longest].down_since_us) / 1000));
	else
		return;
	v->repairs++;
	if (!leave_out(sw, next, id))
		memcpy(next->was_out, next->out, GROUP_BITMAP);
}

/* The marks the digests and answers call for now; true if the view differs from cur. */
static bool remark(struct sw *sw, struct wire_view *next, uint64_t now_us)
{
	struct views *v = sw->views;
	uint64_t lease_us = (uint64_t)sw->cfg->service.view_lease_ms * 1000;

	*next = v->cur;
	if (!v->published) {
		/* Groups as the newest view any node holds left them (a restarted switch). */
		memcpy(next->out, v->learned.out, GROUP_BITMAP);
		memcpy(next->joining, v->learned.joining, GROUP_BITMAP);
		memcpy(next->was_out, v->learned.was_out, GROUP_BITMAP);
	}
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;
		struct view_node *n = &v->node[id];
		enum mark m = mark_of(&v->cur, id), to = m;
		bool answers_cur = n->held == v->cur.number;

		if (!v->published)
			/* The first view: a node that serves stays up (a restarted switch
			 * must not undo its predecessor's view); any other catches up. */
			to = !answers(sw, id, now_us)		      ? MARK_DOWN
			     : n->answered && wire_view_state_serves(n->state) ? MARK_UP
								: MARK_CATCHING;
		else if (!answers(sw, id, now_us))
			/* Not before the lease it was given ends: it may serve until then. */
			to = now_us < n->granted_us + lease_us ? m : MARK_DOWN;
		else if (m == MARK_DOWN)
			to = MARK_CATCHING; /* its digests resumed */
		else if (m == MARK_UP && answers_cur && n->state == WIRE_VIEW_CATCHING)
			to = MARK_CATCHING; /* it restarted */
		else if (m == MARK_CATCHING && answers_cur && n->state == WIRE_VIEW_CAUGHT_UP)
			to = MARK_UP;
		if (to == MARK_DOWN && (m != MARK_DOWN || !v->published))
			n->down_since_us = now_us;
		set_mark(next, id, to);
	}
	regroup(sw, next, now_us);
	return !v->published || memcmp(next->down, v->cur.down, GROUP_BITMAP) != 0 ||
	       memcmp(next->catching, v->cur.catching, GROUP_BITMAP) != 0 ||
	       memcmp(next->out, v->cur.out, GROUP_BITMAP) != 0 ||
	       memcmp(next->joining, v->cur.joining, GROUP_BITMAP) != 0 ||
	       memcmp(next->was_out, v->cur.was_out, GROUP_BITMAP) != 0;
}

/*
 * Nodes marked up in next that are members of a group under prev and not
 * under next (a drained node; the stand-ins of a node back from being out):
 * told first (held_back()), since a member serves clean reads of its groups
 * until it holds the view that takes them away, and their primaries stop
 * pushing to it from that view on.
 */
static void mark_leavers(struct sw *sw, const struct wire_view *prev, const struct wire_view *next)
{
	const struct ring *ring = sw_ring(sw);
	uint8_t lost[GROUP_BITMAP] = {0};

	if (!memcmp(prev->out, next->out, GROUP_BITMAP))
		return; /* the same groups */
	for (uint32_t k = 0; k < ring->npoints; k++) {
		uint32_t point = ring->points[k].value;
		uint16_t before[GROUP_MAX], after[GROUP_MAX];
		unsigned nb = view_group(ring, prev, point, sw->group_r, before),
			 na = view_group(ring, next, point, sw->group_r, after);

		for (unsigned i = 0; i < nb; i++) {
			bool kept = false;

			for (unsigned j = 0; j < na; j++)
				kept |= after[j] == before[i];
			if (!kept)
				group_set_bit(lost, before[i]);
		}
	}
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;

		if (group_bit(lost, id) && mark_of(next, id) == MARK_UP)
			sw->views->node[id].left_from = next->number;
	}
}

/* The publisher's round: a new view when the marks change, then VIEW to whoever is due. */
static void publish(struct sw *sw, uint64_t now_us)
{
	struct views *v = sw->views;
	struct wire_view next = v->cur;
	bool due = now_us - v->last_send_us >= VIEWS_RESEND_MS * 1000ull;

	if (!v->published) {
		bool known = true;

		for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
			uint16_t id = sw->cfg->nodes[i].id;

			known &= v->node[id].answered || !alive(sw, id);
		}
		if (!known && now_us - v->start_us < VIEWS_LEARN_MS * 1000ull) {
			ask(sw, now_us);
			return;
		}
	}
	if (remark(sw, &next, now_us)) {
		struct wire_view prev = v->cur;

		next.number = next_number(sw);
		v->cur = next;
		v->changes++;
		for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
			uint16_t id = sw->cfg->nodes[i].id;
			enum mark was = mark_of(&prev, id), is = mark_of(&next, id);
			const char *was_state = state_name(&prev, id, was),
				   *is_state = state_name(&next, id, is);
			bool joined = group_bit(prev.joining, id) && !group_bit(next.joining, id);

			if (v->published && strcmp(was_state, is_state) == 0)
				continue;
			log_info("view %llu: node %s %s", (unsigned long long)next.number,
				 sw->cfg->nodes[i].name, is_state);
			/* Back up after its catch-up (on a first view, one that
			 * serves already is a primary as it is), or its join done:
			 * told last. A joined node keeps its old groups meanwhile. */
			if (is == MARK_UP && v->published && was != MARK_UP)
				v->node[id].up_from = next.number;
			if (is == MARK_UP && joined)
				v->node[id].joined_from = next.number;
			if (is != MARK_UP)
				v->node[id].up_from = v->node[id].joined_from =
				    v->node[id].left_from = 0;
			/* Skipped from now on (down, or left out while up: drained). */
			if ((is != MARK_UP && (was == MARK_UP || !v->published)) ||
			    (is == MARK_UP && !group_bit(prev.out, id) && group_bit(next.out, id)))
				drop_entries(sw, id);
		}
		if (v->published)
			mark_leavers(sw, &prev, &next);
		v->published = true;
		publish_skip(sw);
		due = true;
	}
	bool leavers_serving = leavers_serve(sw, now_us);

	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;
		struct view_node *n = &v->node[id];

		if (held_back(sw, id, leavers_serving))
			continue;
		if (due || n->told < v->cur.number)
			send_view(sw, id, v->cur.number, now_us);
	}
	if (due)
		v->last_send_us = now_us;
}

bool views_joining(const struct sw *sw)
{
	return views_on(sw) && !no_bits(sw->views->cur.joining);
}

void views_add(struct sw *sw, const uint8_t *added)
{
	struct views *v = sw->views;

	for (unsigned w = 0; w < GROUP_BITMAP; w++) {
		v->cur.out[w] |= added[w];
		v->cur.was_out[w] |= added[w];
	}
	v->cur.number = next_number(sw);
	v->changes++;
	publish_skip(sw);
	log_info("view %llu: nodes added by a ring change are out until every node has the "
		 "config",
		 (unsigned long long)v->cur.number);
}

void views_run(struct sw *sw, uint64_t now_us)
{
	struct views *v = sw->views;

	if (!views_on(sw))
		return;
	if (v->publisher) {
		publish(sw, now_us);
		return;
	}
	ask(sw, now_us);
}

void views_format_node(const struct sw *sw, uint16_t id, struct fmt *f)
{
	const struct views *v = sw->views;
	const struct view_node *n;
	enum mark m;

	if (!views_on(sw))
		return;
	n = &v->node[id];
	m = mark_of(&v->cur, id);
	/* Marked up but not told yet: still catching up as far as anyone can tell. */
	fmt_state(f, "view",
		  "The node in the replica groups' view: up, down, catching, out (left out of "
		  "the groups) or joining (taking the records of groups new to it)",
		  m == MARK_UP && n->up_from ? mark_name(MARK_CATCHING) : state_name(&v->cur, id, m));
	fmt_counter(f, "view_held", "The newest view number the node answered holding", n->held);
	fmt_gauge(f, "catchup_sources_left", "Nodes the node's catch-up has still to read",
		  n->sources_left);
	fmt_counter(f, "catchup_records", "Records the node's catch-up took", n->records);
}
