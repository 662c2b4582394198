/*
 * mignet.h - the wire side of a node's ring changes (docs/design.md section
 * 12; the state machine is migrate.h): RING from a switch (reload the config,
 * begin or advance the change), FETCH and MIGRATE between nodes (the
 * transport migrate.c uses, from a socket of each calling thread, and their
 * handlers), and the warm-up thread, which pushes this node's moved keys at
 * ring.warmup_keys_per_s.
 */
#ifndef SKL_NODE_MIGNET_H
#define SKL_NODE_MIGNET_H

#include "node.h"
#include "ringmsg.h"

#define MIGNET_TRIES   3  /* a FETCH or MIGRATE is sent this many times */
#define MIGNET_WAIT_MS 20 /* for an answer each time */
#define MIGNET_TICK_MS 10 /* between warm-up steps (migrate.h: struct mig_pace) */

/*
 * Send req to node `to` and wait for its answer, from a socket of this
 * thread's own (answers to it never reach the receive thread): MIGNET_TRIES
 * of MIGNET_WAIT_MS. 0 with *rep pointing into in, or -ETIMEDOUT.
 */
int mignet_request(struct node *n, uint16_t to, struct wire_msg *req, uint8_t *in, size_t incap,
		   struct wire_msg *rep);
/* A record's at-most-once outcomes, between migrate.h's form and the wire's. */
void mignet_writes_to_wire(const struct mig_record *rec, struct wire_mig_prefix *pre);
void mignet_writes_from_wire(const struct wire_mig_prefix *pre, struct mig_record *rec);

/* migrate.c's transport over the node's network; arg is the struct node. */
extern const struct mig_transport mignet_transport;

/* Handlers (server.c's table); each fills rep. out[0..cap) is room for the reply's value. */
void mignet_ring(struct node *n, const struct wire_msg *m, struct wire_msg *rep, uint8_t *out,
		 size_t cap);
void mignet_fetch(struct node *n, const struct wire_msg *m, struct wire_msg *rep, uint8_t *out,
		  size_t cap);
void mignet_migrate(struct node *n, const struct wire_msg *m, struct wire_msg *rep);

/* The warm-up thread (stops with stop_bg). */
int mignet_start(struct node *n);
void mignet_stop(struct node *n);

#endif
