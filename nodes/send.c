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

/*
 * sendmmsg() msgs[0..count) on fd, counting each one that fails and going on
 * with the rest. Returns how many failed.
 */
static unsigned send_batch(struct node *n, int fd, struct mmsghdr *msgs, unsigned count)
{
	unsigned failed = 0;

	for (unsigned sent = 0; sent < count;) {
		int r = sendmmsg(fd, msgs + sent, count - sent, 0);

		if (r <= 0) {
			node_count(n, NODE_CTR_send_errors);
			failed++;
			sent++;
			continue;
		}
		sent += (unsigned)r;
	}
	return failed;
}

/* Datagrams node_send_many() seals at a time: each needs a second iovec and a MAC of its own. */
#define SEAL_CHUNK 16

void node_send_many(struct node *n, struct mmsghdr *msgs, unsigned count)
{
	if (!n->keyed) {
		send_batch(n, n->fd, msgs, count);
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
		send_batch(n, n->fd, batch, out);
	}
}

int node_send_msg(struct node *n, const struct sockaddr_in *to, const struct wire_msg *msg)
{
	return node_send_msg_fd(n, n->fd, to, msg);
}

int node_send_reply(struct node *n, const struct sockaddr_in *to, struct wire_msg *rep)
{
	rep->load = node_load(n);
	return node_send_msg(n, to, rep);
}

/*
 * Chunks node_send_msg_fd() hands the kernel per sendmmsg(): 187 chunks of a
 * 256 KB value at MTU 1500 leave in 6 system calls instead of 187. Each
 * chunk's head (header, key, chunk header) is written into heads[] and its
 * slice goes from the value itself: no copy of the value (a sealed chunk is
 * copied once, to compute its MAC over the whole datagram).
 */
#define CHUNK_BATCH 32

int node_send_msg_fd(struct node *n, int fd, const struct sockaddr_in *to,
		     const struct wire_msg *msg)
{
	/* A sealed datagram's MAC trailer must fit the MTU too. */
	bool sealed = n->keyed && wire_op_authenticated(msg->op);
	uint32_t mtu = n->cfg->service.mtu - (sealed ? WIRE_MAC_LEN : 0);
	uint8_t one[NODE_MAX_DGRAM];
	uint16_t count;
	int len;

	if (!wire_chunk_needed(msg, mtu, &count)) {
		len = wire_encode(msg, one, sizeof(one));
		return len < 0 ? len : node_send_on(n, fd, to, one, (size_t)len);
	}
	if (count == 0)
		return -EMSGSIZE;
	for (uint32_t base = 0; base < count; base += CHUNK_BATCH) {
		unsigned k = count - base < CHUNK_BATCH ? count - base : CHUNK_BATCH;
		/* 35 KB at most (1,024-byte keys), on the stack of a thread of 8 MB. */
		uint8_t heads[CHUNK_BATCH][WIRE_HDR_LEN + WIRE_MAX_KEY + WIRE_CHUNK_HDR_LEN];
		uint8_t mac[CHUNK_BATCH][WIRE_MAC_LEN];
		struct iovec iov[CHUNK_BATCH][3];
		struct mmsghdr msgs[CHUNK_BATCH];

		for (unsigned i = 0; i < k; i++) {
			uint8_t *head = heads[i];
			const uint8_t *slice;
			uint32_t slice_len;

			len = wire_chunk_encode_head(msg, (uint16_t)(base + i), count, head,
						     sizeof(heads[i]), &slice, &slice_len);
			if (len < 0)
				return len;
			iov[i][0] = (struct iovec){.iov_base = head, .iov_len = (size_t)len};
			iov[i][1] = (struct iovec){.iov_base = (void *)slice, .iov_len = slice_len};
			msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_name = (void *)to,
							       .msg_namelen = sizeof(*to),
							       .msg_iov = iov[i],
							       .msg_iovlen = 2}};
			if (sealed) {
				memcpy(one, head, (size_t)len);
				memcpy(one + len, slice, slice_len);
				if (wire_mac(&n->key, one, (size_t)len + slice_len, mac[i]) != 0) {
					node_count(n, NODE_CTR_send_errors);
					return -EIO;
				}
				iov[i][2] =
				    (struct iovec){.iov_base = mac[i], .iov_len = WIRE_MAC_LEN};
				msgs[i].msg_hdr.msg_iovlen = 3;
			}
		}
		node_count_n(n, NODE_CTR_chunks_sent, k - send_batch(n, fd, msgs, k));
	}
	return 0;
}
