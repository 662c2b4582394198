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
	uint64_t held;	  /* the newest view it answered holding */
	uint64_t told;	  /* the newest view sent to it */
	uint64_t up_from; /* marked up from this view and not told so yet (0: none) */
	bool answered;	  /* since this switch started */
	uint8_t state;	  /* its last answer's, enum wire_view_state */
	uint16_t sources_left;
	uint64_t records;
};

struct views {
	bool publisher;	   /* the switch with the lowest id */
	bool published;	   /* its first view is out */
	uint64_t start_us; /* CLOCK_MONOTONIC */
	uint64_t last_send_us;
	struct wire_view cur; /* the publisher's view; the newest one answers show, otherwise */
	struct view_node node[CFG_MAX_NODES + 1];
	uint64_t changes, sent, answers;
};

static bool views_on(const struct sw *sw)
{
	return sw->views != NULL;
}

static enum mark mark_of(const struct wire_view *v, uint16_t id)
{
	if (group_bit(v->down, id))
		return MARK_DOWN;
	return group_bit(v->catching, id) ? MARK_CATCHING : MARK_UP;
}

static void set_mark(struct wire_view *v, uint16_t id, enum mark m)
{
	if (id >= 8 * GROUP_BITMAP)
		return;
	v->down[id / 8] &= (uint8_t)~(1u << (id % 8));
	v->catching[id / 8] &= (uint8_t)~(1u << (id % 8));
	if (m == MARK_DOWN)
		group_set_bit(v->down, id);
	else if (m == MARK_CATCHING)
		group_set_bit(v->catching, id);
}

static const char *mark_name(enum mark m)
{
	return m == MARK_DOWN ? "down" : m == MARK_CATCHING ? "catching" : "up";
}

/* The fast path's skip bitmap: marked down or catching up, or marked up and not told yet. */
static void publish_skip(struct sw *sw)
{
	struct views *v = sw->views;
	uint64_t words[RTE_DIM(sw->group_skip)] = {0};

	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;

		if (mark_of(&v->cur, id) != MARK_UP || v->node[id].up_from)
			words[id / 64] |= 1ull << (id % 64);
	}
	for (unsigned w = 0; w < RTE_DIM(words); w++)
		__atomic_store_n(&sw->group_skip[w], words[w], __ATOMIC_RELAXED);
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
	n->held = RTE_MAX(n->held, msg->version);
	n->state = r.state;
	n->sources_left = r.sources_left;
	n->records = r.records;
	if (n->up_from && n->held >= n->up_from) {
		n->up_from = 0; /* told, and it holds it: the fast path sends it its keys */
		publish_skip(sw);
	}
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

/*
 * Every node that may act as a primary (marked up and told so) holds view
 * number, but node `except`: none of them still takes writes of the keys
 * that view gives `except`.
 */
static bool others_hold(const struct sw *sw, uint16_t except, uint64_t number)
{
	const struct views *v = sw->views;

	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;

		if (id != except && mark_of(&v->cur, id) == MARK_UP && !v->node[id].up_from &&
		    v->node[id].held < number)
			return false;
	}
	return true;
}

static void send_view(struct sw *sw, uint16_t id, uint64_t number)
{
	struct views *v = sw->views;
	uint8_t payload[WIRE_VIEW_LEN];
	struct wire_msg msg = {
	    .op = WIRE_OP_VIEW,
	    .req_id = (uint64_t)sw->self->id << 48 | (v->sent & 0xffffffffffffull),
	    .version = number,
	    .node = id,
	    .value = payload,
	    .val_len = WIRE_VIEW_LEN,
	};

	if (number)
		wire_view_encode(&v->cur, payload, sizeof(payload));
	else
		memset(payload, 0, sizeof(payload));
	if (egress_to_node(sw, id, &msg) == 0) {
		v->sent++;
		v->node[id].told = RTE_MAX(v->node[id].told, number);
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
		send_view(sw, sw->cfg->nodes[i].id, 0);
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

/* The marks the digests and answers call for now; true if they differ from cur's. */
static bool remark(struct sw *sw, struct wire_view *next)
{
	struct views *v = sw->views;
	bool changed = false;

	*next = v->cur;
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;
		const struct view_node *n = &v->node[id];
		enum mark m = mark_of(&v->cur, id), to = m;
		bool answers_cur = n->held == v->cur.number;

		if (!v->published)
			/* The first view: a node that serves stays up (a restarted switch
			 * must not undo its predecessor's view); any other catches up. */
			to = !alive(sw, id)					? MARK_DOWN
			     : n->answered && n->state == WIRE_VIEW_SERVING ? MARK_UP
									    : MARK_CATCHING;
		else if (!alive(sw, id))
			to = MARK_DOWN;
		else if (m == MARK_DOWN)
			to = MARK_CATCHING; /* its digests resumed */
		else if (m == MARK_UP && answers_cur && n->state == WIRE_VIEW_CATCHING)
			to = MARK_CATCHING; /* it restarted */
		else if (m == MARK_CATCHING && answers_cur && n->state == WIRE_VIEW_CAUGHT_UP)
			to = MARK_UP;
		if (to != m || !v->published) {
			set_mark(next, id, to);
			changed |= to != m;
		}
	}
	return changed || !v->published;
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
	if (remark(sw, &next)) {
		struct wire_view prev = v->cur;

		next.number = next_number(sw);
		v->cur = next;
		v->changes++;
		for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
			uint16_t id = sw->cfg->nodes[i].id;
			enum mark was = mark_of(&prev, id), is = mark_of(&next, id);

			if (v->published && was == is)
				continue;
			log_info("view %llu: node %s %s", (unsigned long long)next.number,
				 sw->cfg->nodes[i].name, mark_name(is));
			/* Back up after its catch-up (on a first view, one that
			 * serves already is a primary as it is). */
			if (is == MARK_UP && v->published)
				v->node[id].up_from = next.number;
			if (is != MARK_UP)
				v->node[id].up_from = 0;
			if (is != MARK_UP && (was == MARK_UP || !v->published))
				drop_entries(sw, id);
		}
		v->published = true;
		publish_skip(sw);
		due = true;
	}
	for (unsigned i = 0; i < sw->cfg->nnodes; i++) {
		uint16_t id = sw->cfg->nodes[i].id;
		struct view_node *n = &v->node[id];

		/* Marked up: told last, once no other node acts as its keys' primary. */
		if (n->up_from && !others_hold(sw, id, n->up_from))
			continue;
		if (due || n->told < v->cur.number)
			send_view(sw, id, v->cur.number);
	}
	if (due)
		v->last_send_us = now_us;
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
	fmt_state(f, "view", "The node in the replica groups' view: up, down or catching",
		  mark_name(m == MARK_UP && n->up_from ? MARK_CATCHING : m));
	fmt_counter(f, "view_held", "The newest view number the node answered holding", n->held);
	fmt_gauge(f, "catchup_sources_left", "Nodes the node's catch-up has still to read",
		  n->sources_left);
	fmt_counter(f, "catchup_records", "Records the node's catch-up took", n->records);
}
