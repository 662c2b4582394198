/*
 * send.c - the node's UDP socket and node_send() (see send.h).
 */
#include "send.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "chunk.h"
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

int node_send(struct node *n, const struct sockaddr_in *to, const void *buf, size_t len)
{
	if (sendto(n->fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to)) < 0) {
		int rc = -errno; /* before logging, which may change errno */

		node_count(n, NODE_CTR_send_errors);
		log_debug("sendto %s:%u: %s", inet_ntoa(to->sin_addr), ntohs(to->sin_port),
			  strerror(-rc));
		return rc;
	}
	return 0;
}

/* Chunks per sendmmsg(): a 256 KB value at MTU 1500 is about 190 of them. */
#define CHUNK_BATCH 32

/* sendmmsg() on fd; each datagram that fails is counted and skipped. */
static void send_many_fd(struct node *n, int fd, struct mmsghdr *msgs, unsigned count)
{
	for (unsigned sent = 0; sent < count;) {
		int r = sendmmsg(fd, msgs + sent, count - sent, 0);

		if (r <= 0) {
			node_count(n, NODE_CTR_send_errors);
			sent++;
			continue;
		}
		sent += (unsigned)r;
	}
}

void node_send_many(struct node *n, struct mmsghdr *msgs, unsigned count)
{
	send_many_fd(n, n->fd, msgs, count);
}

int node_send_msg(struct node *n, const struct sockaddr_in *to, const struct wire_msg *msg)
{
	return node_send_msg_fd(n, n->fd, to, msg);
}

int node_send_msg_fd(struct node *n, int fd, const struct sockaddr_in *to,
		     const struct wire_msg *msg)
{
	uint32_t mtu = n->cfg->service.mtu;
	size_t dgram = mtu - WIRE_IP_UDP_LEN;
	struct mmsghdr msgs[CHUNK_BATCH];
	struct iovec iov[CHUNK_BATCH];
	uint16_t count;
	uint8_t *bufs;
	int len;

	if (!wire_chunk_needed(msg, mtu, &count)) {
		uint8_t one[NODE_MAX_DGRAM];

		len = wire_encode(msg, one, sizeof(one));
		if (len < 0)
			return len;
		if (sendto(fd, one, (size_t)len, 0, (const struct sockaddr *)to, sizeof(*to)) < 0) {
			node_count(n, NODE_CTR_send_errors);
			return -errno;
		}
		return 0;
	}
	if (count == 0)
		return -EMSGSIZE;
	bufs = malloc(CHUNK_BATCH * dgram);
	if (!bufs)
		return -ENOMEM;
	for (uint32_t first = 0; first < count; first += CHUNK_BATCH) {
		unsigned k = 0;

		for (uint32_t i = first; i < count && k < CHUNK_BATCH; i++, k++) {
			len = wire_chunk_encode(msg, (uint16_t)i, count, bufs + k * dgram, dgram);
			if (len < 0) {
				free(bufs);
				return len;
			}
			iov[k] =
			    (struct iovec){.iov_base = bufs + k * dgram, .iov_len = (size_t)len};
			memset(&msgs[k], 0, sizeof(msgs[k]));
			msgs[k].msg_hdr.msg_iov = &iov[k];
			msgs[k].msg_hdr.msg_iovlen = 1;
			msgs[k].msg_hdr.msg_name = (void *)to;
			msgs[k].msg_hdr.msg_namelen = sizeof(*to);
		}
		send_many_fd(n, fd, msgs, k);
		node_count_n(n, NODE_CTR_chunks_sent, k);
	}
	free(bufs);
	return 0;
}
