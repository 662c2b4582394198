/*
 * repl.h - replica copies: REPLICATE (home side), RC_REQ / RC_ACK (replica
 * side), UNREPLICATE. Called by the workers (server.c) with a decoded,
 * validated request; rep is the reply being built (already echoing req_id,
 * key and header fields).
 */
#ifndef SKL_NODE_REPL_H
#define SKL_NODE_REPL_H

#include "node.h"

/* RC_REQ value prefix: be16 owner switch, u8 kind, u8 0, be32 remaining TTL ms. */
#define REPL_PREFIX_LEN 8

/* Home: push RC_REQ(v) to the listed targets if the local version is exactly v. */
void repl_replicate(struct node *n, const struct wire_msg *m, struct wire_msg *rep);
/* Replica: store the copy if not stale, then RC_ACK the switch. Never replies to the sender. */
void repl_rc_req(struct node *n, const struct wire_msg *m);
/* Replica: drop the copy. */
void repl_unreplicate(struct node *n, const struct wire_msg *m, struct wire_msg *rep);

#endif
