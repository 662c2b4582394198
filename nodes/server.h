/*
 * server.h - the request path: receiving workers, bounded queue, standby receive thread,
 * data ops and replies. The socket and sending are send.h's.
 */
#ifndef SKL_NODE_SERVER_H
#define SKL_NODE_SERVER_H

#include "node.h"

/* Start the workers and the receive thread. Returns 0 or a negative errno. */
int server_start(struct node *n, uint32_t workers);
/* Stop receiving, let the workers drain the queue, join them. The socket stays open. */
void server_stop(struct node *n);
/* Whether the node has a handler for request op (the op table's lane says which it must). */
bool server_serves(uint8_t op);

#endif
