/*
 * resp_client.c - the bench's RESP client (see resp_client.h).
 */
#include "resp_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"

#define RC_READ_CHUNK (64 * 1024)

/* An operation waiting for its reply: key then value bytes in data. */
struct pending {
	skl_callback cb;
	void *arg;
	enum skl_op op;
	uint64_t invoke_ns;
	uint8_t *data;
	size_t klen, vlen;
};

struct rc_conn {
	int fd;
	uint8_t *out, *in;
	size_t out_len, out_cap, in_len, in_cap;
	struct pending *q; /* a ring of q_cap */
	uint32_t q_head, q_len, q_cap;
};

struct resp_client {
	struct rc_conn *conns;
	uint32_t nconns, next;
	uint32_t inflight;
	struct pollfd *pfds;
};

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 4096;
	uint8_t *p;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	p = realloc(*buf, c);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = c;
	return 0;
}

int resp_client_open(const char *addr, uint32_t conns, struct resp_client **out)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char host[64];
	const char *colon = strrchr(addr, ':');
	struct resp_client *rc;
	unsigned long port;
	char *end;

	if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(host) || conns == 0 ||
	    conns > 1024)
		return -EINVAL;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (*end || port == 0 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	sa.sin_port = htons((uint16_t)port);
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	rc->conns = calloc(conns, sizeof(*rc->conns));
	rc->pfds = calloc(conns, sizeof(*rc->pfds));
	if (!rc->conns || !rc->pfds) {
		resp_client_close(rc);
		return -ENOMEM;
	}
	rc->nconns = conns;
	for (uint32_t i = 0; i < conns; i++)
		rc->conns[i].fd = -1;
	for (uint32_t i = 0; i < conns; i++) {
		struct rc_conn *c = &rc->conns[i];
		int one = 1, err;

		c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
			err = -errno;
			resp_client_close(rc);
			return err;
		}
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	*out = rc;
	return 0;
}

uint32_t resp_client_inflight(const struct resp_client *rc)
{
	return rc->inflight;
}

static void complete(struct resp_client *rc, struct pending *p, enum skl_status st,
		     const uint8_t *value, size_t vlen)
{
	struct skl_result res = {
	    .op = p->op,
	    .status = st,
	    .key = p->data,
	    .key_len = p->klen,
	    .invoke_ns = p->invoke_ns,
	    .complete_ns = clock_mono_ns(),
	};

	if (p->op == SKL_OP_GET && st == SKL_OK) {
		res.value = value;
		res.value_len = vlen;
	} else if (p->op == SKL_OP_PUT) {
		res.value = p->data + p->klen;
		res.value_len = p->vlen;
	}
	rc->inflight--;
	p->cb(p->arg, &res);
	free(p->data);
}

/* Fail what c has in flight with st and close it. */
static void conn_fail(struct resp_client *rc, struct rc_conn *c, enum skl_status st)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->out_len = c->in_len = 0;
	while (c->q_len) {
		struct pending p = c->q[c->q_head];

		c->q_head = (c->q_head + 1) % c->q_cap;
		c->q_len--;
		complete(rc, &p, st, NULL, 0);
	}
}

/* Append "$len\r\n<bytes>\r\n". */
static int put_bulk(struct rc_conn *c, const void *s, size_t len)
{
	char hdr[32];
	int n = snprintf(hdr, sizeof(hdr), "$%zu\r\n", len);

	if (grow(&c->out, &c->out_cap, c->out_len + (size_t)n + len + 2))
		return -ENOMEM;
	memcpy(c->out + c->out_len, hdr, (size_t)n);
	memcpy(c->out + c->out_len + n, s, len);
	memcpy(c->out + c->out_len + n + len, "\r\n", 2);
	c->out_len += (size_t)n + len + 2;
	return 0;
}

static int submit(struct resp_client *rc, enum skl_op op, const void *key, size_t klen,
		  const void *val, size_t vlen, skl_callback cb, void *arg)
{
	struct rc_conn *c;
	struct pending *p;
	size_t mark;

	for (uint32_t tries = 0;; tries++) {
		if (tries == rc->nconns)
			return -ENOTCONN;
		c = &rc->conns[rc->next++ % rc->nconns];
		if (c->fd >= 0)
			break;
	}
	if (c->q_len == c->q_cap) {
		uint32_t cap = c->q_cap ? c->q_cap * 2 : 64;
		struct pending *q = malloc(cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		for (uint32_t i = 0; i < c->q_len; i++)
			q[i] = c->q[(c->q_head + i) % c->q_cap];
		free(c->q);
		c->q = q;
		c->q_cap = cap;
		c->q_head = 0;
	}
	p = &c->q[(c->q_head + c->q_len) % c->q_cap];
	*p = (struct pending){.cb = cb, .arg = arg, .op = op, .klen = klen, .vlen = vlen};
	p->data = malloc(klen + vlen + 1);
	if (!p->data)
		return -ENOMEM;
	memcpy(p->data, key, klen);
	if (vlen)
		memcpy(p->data + klen, val, vlen);
	mark = c->out_len;
	if (grow(&c->out, &c->out_cap, c->out_len + 16) ||
	    (memcpy(c->out + c->out_len, op == SKL_OP_GET ? "*2\r\n" : "*3\r\n", 4),
	     c->out_len += 4, put_bulk(c, op == SKL_OP_GET ? "GET" : "SET", 3)) ||
	    put_bulk(c, key, klen) || (op == SKL_OP_PUT && put_bulk(c, val, vlen))) {
		c->out_len = mark;
		free(p->data);
		return -ENOMEM;
	}
	p->invoke_ns = clock_mono_ns();
	c->q_len++;
	rc->inflight++;
	return 0;
}

int resp_client_get(struct resp_client *rc, const void *key, size_t klen, skl_callback cb,
		    void *arg)
{
	return submit(rc, SKL_OP_GET, key, klen, NULL, 0, cb, arg);
}

int resp_client_set(struct resp_client *rc, const void *key, size_t klen, const void *val,
		    size_t vlen, skl_callback cb, void *arg)
{
	return submit(rc, SKL_OP_PUT, key, klen, val, vlen, cb, arg);
}

/* The status an error reply names ("ERR skewless TIMEOUT: ..."), else INTERNAL. */
static enum skl_status error_status(const uint8_t *line, size_t len)
{
	static const char tag[] = "ERR skewless ";

	if (len > sizeof(tag) && !memcmp(line, tag, sizeof(tag) - 1))
		for (int s = 0; s < SKL_STATUS_COUNT; s++) {
			const char *name = skl_status_name((enum skl_status)s);
			size_t n = strlen(name);

			if (len >= sizeof(tag) - 1 + n + 1 &&
			    !memcmp(line + sizeof(tag) - 1, name, n) &&
			    line[sizeof(tag) - 1 + n] == ':')
				return (enum skl_status)s;
		}
	return SKL_INTERNAL;
}

/*
 * Parse one reply at buf[0..len): 1 and *used when whole, 0 incomplete,
 * -1 malformed. *st and the value (a bulk's) describe it.
 */
static int parse_reply(const uint8_t *buf, size_t len, size_t *used, enum skl_status *st,
		       const uint8_t **val, size_t *vlen)
{
	const uint8_t *cr = len ? memchr(buf, '\r', len) : NULL;
	long long n;
	char num[24];
	size_t hl;

	if (!cr || (size_t)(cr - buf) + 2 > len)
		return 0;
	hl = (size_t)(cr - buf) + 2;
	*val = NULL;
	*vlen = 0;
	switch (buf[0]) {
	case '+':
	case ':':
		*st = SKL_OK;
		*used = hl;
		return 1;
	case '-':
		*st = error_status(buf + 1, hl - 3);
		*used = hl;
		return 1;
	case '_':
		*st = SKL_NOT_FOUND;
		*used = hl;
		return 1;
	case '$':
		if (hl - 3 >= sizeof(num))
			return -1;
		memcpy(num, buf + 1, hl - 3);
		num[hl - 3] = '\0';
		n = strtoll(num, NULL, 10);
		if (n < 0) {
			*st = SKL_NOT_FOUND;
			*used = hl;
			return 1;
		}
		if (len < hl + (size_t)n + 2)
			return 0;
		*st = SKL_OK;
		*val = buf + hl;
		*vlen = (size_t)n;
		*used = hl + (size_t)n + 2;
		return 1;
	default:
		return -1;
	}
}

static void conn_input(struct resp_client *rc, struct rc_conn *c)
{
	size_t off = 0;

	for (;;) {
		ssize_t n;

		if (grow(&c->in, &c->in_cap, c->in_len + RC_READ_CHUNK)) {
			conn_fail(rc, c, SKL_UNAVAILABLE);
			return;
		}
		n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			conn_fail(rc, c, SKL_UNAVAILABLE);
			return;
		}
		c->in_len += (size_t)n;
		if ((size_t)n < RC_READ_CHUNK)
			break;
	}
	while (c->q_len) {
		const uint8_t *val;
		size_t used, vlen;
		enum skl_status st;
		int r = parse_reply(c->in + off, c->in_len - off, &used, &st, &val, &vlen);
		struct pending p;

		if (r == 0)
			break;
		if (r < 0) {
			conn_fail(rc, c, SKL_INTERNAL);
			return;
		}
		p = c->q[c->q_head];
		c->q_head = (c->q_head + 1) % c->q_cap;
		c->q_len--;
		complete(rc, &p, st, val, vlen);
		off += used;
		if (c->fd < 0)
			return;
	}
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
}

static void conn_output(struct resp_client *rc, struct rc_conn *c)
{
	size_t sent = 0;

	while (sent < c->out_len) {
		ssize_t n =
		    send(c->fd, c->out + sent, c->out_len - sent, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			conn_fail(rc, c, SKL_UNAVAILABLE);
			return;
		}
		sent += (size_t)n;
	}
	memmove(c->out, c->out + sent, c->out_len - sent);
	c->out_len -= sent;
}

int resp_client_poll(struct resp_client *rc, int timeout_ms)
{
	uint32_t before = rc->inflight;
	int n;

	for (uint32_t i = 0; i < rc->nconns; i++) {
		struct rc_conn *c = &rc->conns[i];

		if (c->fd >= 0 && c->out_len)
			conn_output(rc, c);
		rc->pfds[i].fd = c->fd;
		rc->pfds[i].events = (short)(POLLIN | (c->out_len ? POLLOUT : 0));
		rc->pfds[i].revents = 0;
	}
	n = poll(rc->pfds, rc->nconns, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (uint32_t i = 0; i < rc->nconns && n > 0; i++) {
		struct rc_conn *c = &rc->conns[i];

		if (!rc->pfds[i].revents || c->fd < 0)
			continue;
		if (rc->pfds[i].revents & (POLLIN | POLLERR | POLLHUP))
			conn_input(rc, c);
		if (c->fd >= 0 && rc->pfds[i].revents & POLLOUT)
			conn_output(rc, c);
	}
	return (int)(before > rc->inflight ? before - rc->inflight : 0);
}

void resp_client_close(struct resp_client *rc)
{
	if (!rc)
		return;
	for (uint32_t i = 0; rc->conns && i < rc->nconns; i++) {
		conn_fail(rc, &rc->conns[i], SKL_CANCELLED);
		free(rc->conns[i].out);
		free(rc->conns[i].in);
		free(rc->conns[i].q);
	}
	free(rc->conns);
	free(rc->pfds);
	free(rc);
}
