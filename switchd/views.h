/*
 * views.h - replica groups' views (docs/design.md section 13): which nodes
 * every key's group skips, told to the nodes (VIEW) and to the fast path
 * (sw->group_skip).
 *
 * The switch with the lowest id publishes. Each control round it turns what
 * its digests and the nodes' VIEW answers say into marks:
 *   up -> down          the digests declare the node dead, or it answers no
 *                       VIEW for VIEWS_SILENT_MS; not before the lease the
 *                       switch last granted it has ended;
 *   down -> catching    its digests and answers resume;
 *   up -> catching      it answers "catching up" (it restarted, or it was
 *                       never caught up: a cluster's first start);
 *   catching -> up      it answers "caught up" under the current view.
 * Every change is a new view, numbered by the wall clock in microseconds
 * (strictly above every number seen), sent at once and then every
 * VIEWS_RESEND_MS to every node. A node marked up is told last: only once
 * every other node not marked down holds the view that marks it up, so
 * that no other node still acts as its keys' primary when it starts to; the
 * fast path routes to it from its answer on. The other switches send
 * queries (VIEW 0) and route by the newest view the answers show.
 * Before its first view a publisher asks every node (for at most
 * VIEWS_LEARN_MS): a node that serves stays up, one that does not is marked
 * catching up, so a restarted switch does not undo its predecessor's view.
 * A node down past service.repair_after_ms is left out of the groups
 * (out), and the nodes that gain its groups join them (joining); so is a
 * node the config gives weight 0 (drained by `ring apply`), up or down, and
 * it stays out; one repair at a time, drains first. No node is taken back
 * in before every node that answers knows every node of the switch's
 * config: a node `ring apply` adds is out until then (views_add()).
 * Nodes a view takes groups from while they serve are told it first.
 * Each VIEW the publisher sends grants a lease from the node's newest
 * answer, when that is fresh (design section 13, "View leases").
 * Control thread only; off (nothing sent, nothing skipped) with R = 1.
 */
#ifndef SKL_SW_VIEWS_H
#define SKL_SW_VIEWS_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

#define VIEWS_RESEND_MS 25   /* VIEW (or the query) to every node this often: leases renew */
#define VIEWS_GRANT_MS	50   /* a lease is granted from an answer at most this old */
#define VIEWS_SILENT_MS 2000 /* a node that answers no VIEW this long is marked down */
#define VIEWS_LEARN_MS	1000 /* a new publisher's questions before its first view */

struct sw;

int views_init(struct sw *sw, char *err, size_t errlen);
void views_fini(struct sw *sw);
/* Whether this switch publishes the views (the lowest id; with R above 1). */
bool views_publisher(const struct sw *sw);
/*
 * Nodes a ring change adds with R above 1 (bitmap added): out of every group
 * in a view published now, before the switch routes by a ring that has
 * them, until every node answers with that config's ring version; then in,
 * catching up as a node back from being out (docs/design.md section 13,
 * "Adding a node").
 */
void views_add(struct sw *sw, const uint8_t *added);
/* Whether the current view marks a node joining (a drain or a repair runs). */
bool views_joining(const struct sw *sw);
/* A node's VIEW answer (intake.c; pipeline.c checked its source). */
void views_take_reply(struct sw *sw, const struct wire_msg *msg);
/* The views' part of a control round, after intake (the digests' verdicts). */
void views_run(struct sw *sw, uint64_t now_us);
/* A node's row in `cdtctl nodes` and /metrics: its mark, the view it holds, its catch-up. */
struct fmt;
void views_format_node(const struct sw *sw, uint16_t id, struct fmt *f);

#endif
