/*
 * server.h - the request path: UDP socket, receive thread, bounded queue,
 * worker pool, data ops and replies.
 */
#ifndef SKL_NODE_SERVER_H
#define SKL_NODE_SERVER_H

#include "node.h"

/* Largest datagram the node handles; MTU is at most 9000, so anything above is TOO_LARGE. */
#define NODE_MAX_DGRAM 10240

/*
 * Bind the node's ip:port. Returns 0, or -1 with a one-line message in err
 * ("127.0.0.1:7447: address already in use").
 */
int server_bind(struct node *n, char *err, size_t errlen);
/* Start the receive thread and the workers. Returns 0 or a negative errno. */
int server_start(struct node *n, uint32_t workers);
/* Stop receiving, let the workers drain the queue, join them. */
void server_stop(struct node *n, uint32_t workers);
/* Whether the node has a handler for request op (the op table's lane says which it must). */
bool server_serves(uint8_t op);

#endif
