/*
 * send.c - the node's UDP socket and node_send() (see send.h).
 */
#include "send.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdatomic.h>
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
	struct timeval tv = {.tv_sec = 0, .tv_usec = 100000}; /* receivers check stop_rx */
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
 * Chunks node_send_msg_fd() prepares at a time (a round). With UDP GSO
 * (below) a round leaves in one sendmsg(), else in one sendmmsg() of a
 * datagram each. 64: the most segments one GSO send may have on every
 * kernel that has GSO (UDP_MAX_SEGMENTS). Each chunk's head (header, key,
 * chunk header) is written into heads[] and its slice goes from the value
 * itself: no copy of the value (a sealed chunk is copied once, to compute
 * its MAC over the whole datagram).
 */
#define CHUNK_ROUND 64
/* The UDP payload one GSO send may carry: an IPv4 datagram's 65,535 bytes less IP and UDP. */
#define GSO_MAX_PAYLOAD (65535u - WIRE_IP_UDP_LEN)

/*
 * Send a round of chunks (iov: their pieces in order, niov of them) as one
 * UDP GSO datagram that the kernel cuts every seg bytes, at the chunks'
 * boundaries: every chunk but an op's last is seg bytes long. The stack
 * then runs once per round instead of once per chunk. 0 or -errno.
 */
static int send_gso(int fd, const struct sockaddr_in *to, struct iovec *iov, size_t niov,
		    uint16_t seg)
{
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = {.msg_name = (void *)to,
			    .msg_namelen = sizeof(*to),
			    .msg_iov = iov,
			    .msg_iovlen = niov,
			    .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = IPPROTO_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof(seg));
	memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
	return sendmsg(fd, &mh, 0) < 0 ? -errno : 0;
}

/*
 * Whether to send chunks with UDP GSO: until the kernel refuses it once
 * (EINVAL: a kernel without UDP_SEGMENT; EIO: one that wants checksum
 * offload from the device), then never again in this process.
 */
static bool gso_refused(int rc)
{
	static atomic_bool logged;

	if (rc != -EINVAL && rc != -EIO && rc != -ENOPROTOOPT)
		return false;
	if (!atomic_exchange(&logged, true))
		log_info("UDP GSO refused (%s): chunks leave one datagram a chunk", strerror(-rc));
	return true;
}

int node_send_msg_fd(struct node *n, int fd, const struct sockaddr_in *to,
		     const struct wire_msg *msg)
{
	/* A sealed datagram's MAC trailer must fit the MTU too. */
	bool sealed = n->keyed && wire_op_authenticated(msg->op);
	uint32_t mtu = n->cfg->service.mtu - (sealed ? WIRE_MAC_LEN : 0);
	uint8_t one[NODE_MAX_DGRAM];
	uint32_t full, round;
	uint16_t count;
	int len;

	if (!wire_chunk_needed(msg, mtu, &count)) {
		len = wire_encode(msg, one, sizeof(one));
		return len < 0 ? len : node_send_on(n, fd, to, one, (size_t)len);
	}
	if (count == 0)
		return -EMSGSIZE;
	/* Every chunk but the last is this long; a GSO send carries as many as fit. */
	full = (uint32_t)wire_chunk_head_len(msg->key_len) +
	       wire_chunk_stride(msg->val_len, count) + (sealed ? WIRE_MAC_LEN : 0);
	round = GSO_MAX_PAYLOAD / full < CHUNK_ROUND ? GSO_MAX_PAYLOAD / full : CHUNK_ROUND;
	for (uint32_t base = 0; base < count; base += round) {
		unsigned k = count - base < round ? count - base : round, niov = 0;
		/* 69 KB at most (1,024-byte keys), on the stack of a thread of 8 MB. */
		uint8_t heads[CHUNK_ROUND][WIRE_HDR_LEN + WIRE_MAX_KEY + WIRE_CHUNK_HDR_LEN];
		uint8_t mac[CHUNK_ROUND][WIRE_MAC_LEN];
		struct iovec iov[CHUNK_ROUND * 3];
		struct mmsghdr msgs[CHUNK_ROUND];

		for (unsigned i = 0; i < k; i++) {
			uint8_t *head = heads[i];
			const uint8_t *slice;
			uint32_t slice_len;

			len = wire_chunk_encode_head(msg, (uint16_t)(base + i), count, head,
						     sizeof(heads[i]), &slice, &slice_len);
			if (len < 0)
				return len;
			msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_name = (void *)to,
							       .msg_namelen = sizeof(*to),
							       .msg_iov = &iov[niov],
							       .msg_iovlen = sealed ? 3 : 2}};
			iov[niov++] = (struct iovec){.iov_base = head, .iov_len = (size_t)len};
			iov[niov++] =
			    (struct iovec){.iov_base = (void *)slice, .iov_len = slice_len};
			if (sealed) {
				memcpy(one, head, (size_t)len);
				memcpy(one + len, slice, slice_len);
				if (wire_mac(&n->key, one, (size_t)len + slice_len, mac[i]) != 0) {
					node_count(n, NODE_CTR_send_errors);
					return -EIO;
				}
				iov[niov++] =
				    (struct iovec){.iov_base = mac[i], .iov_len = WIRE_MAC_LEN};
			}
		}
		if (k > 1 && !atomic_load_explicit(&n->gso_off, memory_order_relaxed)) {
			int rc = send_gso(fd, to, iov, niov, (uint16_t)full);

			if (rc == 0) {
				node_count_n(n, NODE_CTR_chunks_sent, k);
				node_count(n, NODE_CTR_chunk_gso_sends);
				continue;
			}
			if (gso_refused(rc))
				atomic_store_explicit(&n->gso_off, true, memory_order_relaxed);
			else {
				node_count(n, NODE_CTR_send_errors);
				continue; /* the round is lost, as a datagram would be */
			}
		}
		node_count_n(n, NODE_CTR_chunks_sent, k - send_batch(n, fd, msgs, k));
	}
	return 0;
}
