/*
 * send.c - the node's UDP socket and node_send() (see send.h).
 */
#include "send.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

int node_socket_open(struct node *n, char *err, size_t errlen)
{
	struct sockaddr_in addr = {.sin_family = AF_INET};
	int rcvbuf = 4 << 20; /* absorb bursts while the workers catch up */
	struct timeval tv = {.tv_sec = 0, .tv_usec = 100000}; /* rx thread checks stop_rx */
	char ip[16];

	n->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (n->fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(n->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(n->fd, SOL_SOCKET, SO_SNDBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(n->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	addr.sin_addr.s_addr = htonl(n->self->ip);
	addr.sin_port = htons(n->self->port);
	if (bind(n->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		snprintf(err, errlen, "%s:%u: cannot bind: %s%s", cfg_format_ipv4(n->self->ip, ip),
			 n->self->port, strerror(errno),
			 errno == EADDRINUSE ? " (is another node running on this port?)" : "");
		close(n->fd);
		n->fd = -1;
		return -1;
	}
	return 0;
}

void node_socket_close(struct node *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}

/* Whether buf, a datagram about to leave, is a control message that needs a MAC. */
static bool needs_mac(const struct node *n, const void *buf, size_t len)
{
	return n->keyed && len > WIRE_OFF_OP &&
	       wire_op_authenticated(((const uint8_t *)buf)[WIRE_OFF_OP]);
}

int node_send_on(struct node *n, int fd, const struct sockaddr_in *to, const void *buf,
		 size_t len)
{
	uint8_t mac[WIRE_MAC_LEN];
	struct iovec iov[2] = {{.iov_base = (void *)buf, .iov_len = len},
			       {.iov_base = mac, .iov_len = sizeof(mac)}};
	struct msghdr msg = {
	    .msg_name = (void *)to, .msg_namelen = sizeof(*to), .msg_iov = iov, .msg_iovlen = 1};
	int rc = 0;

	/* The trailer goes out as a second piece: callers' buffers need no room for it. */
	if (needs_mac(n, buf, len)) {
		rc = wire_mac(&n->key, buf, len, mac);
		msg.msg_iovlen = 2;
	}
	if (rc == 0 && sendmsg(fd, &msg, 0) < 0)
		rc = -errno; /* before logging, which may change errno */
	if (rc < 0) {
		node_count(n, NODE_CTR_send_errors);
		log_debug("sendto %s:%u: %s", inet_ntoa(to->sin_addr), ntohs(to->sin_port),
			  strerror(-rc));
	}
	return rc;
}

int node_send(struct node *n, const struct sockaddr_in *to, const void *buf, size_t len)
{
	return node_send_on(n, n->fd, to, buf, len);
}

/* sendmmsg() msgs[0..count), counting each one that fails and going on with the rest. */
static void send_batch(struct node *n, struct mmsghdr *msgs, unsigned count)
{
	for (unsigned sent = 0; sent < count;) {
		int r = sendmmsg(n->fd, msgs + sent, count - sent, 0);

		if (r <= 0) {
			node_count(n, NODE_CTR_send_errors);
			sent++;
			continue;
		}
		sent += (unsigned)r;
	}
}

/* Datagrams node_send_many() seals at a time: each needs a second iovec and a MAC of its own. */
#define SEAL_CHUNK 16

void node_send_many(struct node *n, struct mmsghdr *msgs, unsigned count)
{
	if (!n->keyed) {
		send_batch(n, msgs, count);
		return;
	}
	for (unsigned base = 0; base < count; base += SEAL_CHUNK) {
		unsigned k = count - base < SEAL_CHUNK ? count - base : SEAL_CHUNK, out = 0;
		struct mmsghdr batch[SEAL_CHUNK];
		struct iovec iov[SEAL_CHUNK][2];
		uint8_t mac[SEAL_CHUNK][WIRE_MAC_LEN];

		for (unsigned i = 0; i < k; i++) {
			struct msghdr *h = &msgs[base + i].msg_hdr;

			batch[out] = msgs[base + i];
			if (h->msg_iovlen == 1 &&
			    needs_mac(n, h->msg_iov[0].iov_base, h->msg_iov[0].iov_len)) {
				if (wire_mac(&n->key, h->msg_iov[0].iov_base, h->msg_iov[0].iov_len,
					     mac[out]) != 0) {
					node_count(n, NODE_CTR_send_errors);
					continue;
				}
				iov[out][0] = h->msg_iov[0];
				iov[out][1] = (struct iovec){.iov_base = mac[out],
							     .iov_len = WIRE_MAC_LEN};
				batch[out].msg_hdr.msg_iov = iov[out];
				batch[out].msg_hdr.msg_iovlen = 2;
			}
			out++;
		}
		send_batch(n, batch, out);
	}
}
