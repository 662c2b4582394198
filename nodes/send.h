/*
 * send.h - the node's UDP socket and sending from it.
 *
 * Below every module that sends: the request path (server.c), replica
 * copies (repl.c) and digests (report.c) all send through node_send(). The
 * receive thread (server.c) reads the same socket. Nothing here knows the
 * request path.
 */
#ifndef SKL_NODE_SEND_H
#define SKL_NODE_SEND_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

#include "node.h"

/* Largest datagram the node handles; MTU is at most 9000, so anything above is TOO_LARGE. */
#define NODE_MAX_DGRAM 10240

/*
 * Open n->fd bound to the node's ip:port. Returns 0, or -1 with a one-line
 * message in err ("127.0.0.1:7447: cannot bind: address already in use").
 */
int node_socket_open(struct node *n, char *err, size_t errlen);
/* Close n->fd, once no thread receives or sends any more. */
void node_socket_close(struct node *n);

/*
 * Send one datagram from the node's socket; counts failures (send_errors). 0
 * or -errno. With the cluster key (n->keyed), a control datagram (auth.h)
 * leaves with its MAC appended here, so that no sender can forget it.
 */
int node_send(struct node *n, const struct sockaddr_in *to, const void *buf, size_t len);
/* The same from another socket of the node's (repl.c's own, for UNREPLICATE). */
int node_send_on(struct node *n, int fd, const struct sockaddr_in *to, const void *buf,
		 size_t len);
/*
 * Send count prepared datagrams, one iovec each, in as few system calls as
 * the kernel takes (sendmmsg(): a worker's batch of replies); each one that
 * fails is counted and skipped. Control datagrams are sealed as by node_send().
 */
void node_send_many(struct node *n, struct mmsghdr *msgs, unsigned count);
/*
 * Send msg whole if its datagram fits service.mtu, else in chunks
 * (proto/chunk.h; counted in chunks_sent). 0, -EMSGSIZE when it can be
 * neither, or -ENOMEM.
 */
int node_send_msg(struct node *n, const struct sockaddr_in *to, const struct wire_msg *msg);
/* The same from another socket of the node's (a worker's own, to read the answers itself). */
int node_send_msg_fd(struct node *n, int fd, const struct sockaddr_in *to,
		     const struct wire_msg *msg);
/*
 * A reply sent now rather than with its worker's batch (within a key's turn,
 * or in chunks): stamped with the node's load, then sent as node_send_msg().
 */
int node_send_reply(struct node *n, const struct sockaddr_in *to, struct wire_msg *rep);

#endif
