/*
 * worker.c - one worker thread of skewless-proxy: its listening socket, its
 * libskewless agent and its connections, all driven by one epoll loop.
 *
 * A connection's input is parsed into commands as it arrives; each command
 * is queued and run at once (px_dispatch()), and its reply leaves when it
 * and every command before it are done, so a pipeline of requests is
 * answered in order while the cluster serves them concurrently. A command
 * that shares a key with an earlier one of its connection still running
 * waits for it (conn_wake()): SET k then GET k in one pipeline reads what
 * the SET wrote, as it would from Redis. A
 * connection stops reading while it has PX_MAX_QUEUED commands waiting or
 * PX_MAX_OUT bytes of replies unsent (a client that does not read its
 * replies is not buffered without bound), and resumes when they drain.
 * A closed connection is freed once its last command's requests complete.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "proxy.h"

#define PX_MAX_QUEUED 1024	    /* commands waiting on one connection */
#define PX_MAX_OUT    (1024 * 1024) /* reply bytes unsent on one connection */
#define PX_READ_CHUNK (64 * 1024)
#define PX_EVENTS     128
/* How often the agent's counters are copied for INFO and /metrics. */
#define PX_SNAP_NS (100ull * 1000 * 1000)

static void conn_flush(struct px_conn *c);
static void conn_wake(struct px_conn *c);

static bool throttled(const struct px_conn *c)
{
	return c->queued >= PX_MAX_QUEUED || c->out.len >= PX_MAX_OUT;
}

/* Register what c waits for: input unless throttled or quitting, output while some is unsent. */
static void conn_update_events(struct px_conn *c)
{
	uint32_t want = 0;
	struct epoll_event ev;

	if (c->dead)
		return;
	if (!throttled(c) && !c->quit)
		want |= EPOLLIN;
	if (c->out.len)
		want |= EPOLLOUT;
	if (want == c->events)
		return;
	ev.events = want;
	ev.data.ptr = c;
	if (epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->events = want;
}

static void conn_close(struct px_conn *c)
{
	struct px_worker *w = c->w;

	if (c->dead)
		return;
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->prev_open)
		c->prev_open->next_open = c->next_open;
	else
		w->open = c->next_open;
	if (c->next_open)
		c->next_open->prev_open = c->prev_open;
	c->fd = -1;
	c->dead = true;
	w->clients--;
	c->next_closing = w->closing;
	w->closing = c;
}

static void cmd_free(struct px_cmd *cmd)
{
	if (cmd->free_state && cmd->state)
		cmd->free_state(cmd->state);
	free(cmd->keys);
	rbuf_free(&cmd->reply);
	free(cmd->argv);
	free(cmd);
}

/* A new command of c from the parsed request (argv copied: the input buffer moves). */
static struct px_cmd *cmd_new(struct px_conn *c, const struct resp_req *req)
{
	size_t bytes = 0;
	struct px_cmd *cmd = calloc(1, sizeof(*cmd));
	uint8_t *p;

	if (!cmd)
		return NULL;
	for (int i = 0; i < req->argc; i++)
		bytes += req->argvlen[i] + 1;
	cmd->argv = malloc((size_t)req->argc * (sizeof(uint8_t *) + sizeof(size_t)) + bytes);
	if (!cmd->argv) {
		free(cmd);
		return NULL;
	}
	cmd->argvlen = (size_t *)(cmd->argv + req->argc);
	p = (uint8_t *)(cmd->argvlen + req->argc);
	for (int i = 0; i < req->argc; i++) {
		memcpy(p, req->argv[i], req->argvlen[i]);
		p[req->argvlen[i]] = '\0';
		cmd->argv[i] = p;
		cmd->argvlen[i] = req->argvlen[i];
		p += req->argvlen[i] + 1;
	}
	cmd->argc = req->argc;
	cmd->conn = c;
	return cmd;
}

static void enqueue(struct px_conn *c, struct px_cmd *cmd)
{
	if (c->tail)
		c->tail->next = cmd;
	else
		c->head = cmd;
	c->tail = cmd;
	c->queued++;
}

/* A reply written without a command (a protocol error): queued in order, done. */
static void enqueue_error(struct px_conn *c, const char *msg)
{
	struct px_cmd *cmd = calloc(1, sizeof(*cmd));

	if (!cmd) {
		conn_close(c);
		return;
	}
	cmd->conn = c;
	resp_error(&cmd->reply, "%s", msg);
	cmd->done = true;
	enqueue(c, cmd);
}

/* Does an earlier command of cmd's connection, not done yet, share one of its keys? */
static bool waits_for_earlier(const struct px_cmd *cmd)
{
	for (const struct px_cmd *e = cmd->conn->head; e && e != cmd; e = e->next) {
		if (e->done)
			continue;
		for (int i = 0; i < e->nkeys; i++)
			for (int j = 0; j < cmd->nkeys; j++)
				if (e->keys[i] == cmd->keys[j])
					return true;
	}
	return false;
}

/*
 * Run the waiting commands of c that no earlier one holds up any more. One
 * pass in queue order: a command waits only for earlier ones, whose state
 * is final by the time the pass reaches it. Completions inside the pass
 * only mark commands done (px_cmd_done()), so none is freed under it. On a
 * closed connection they are dropped instead.
 */
static void conn_wake(struct px_conn *c)
{
	c->waking = true;
	for (struct px_cmd *cmd = c->head; cmd; cmd = cmd->next) {
		if (!cmd->waiting || (!c->dead && waits_for_earlier(cmd)))
			continue;
		cmd->waiting = false;
		if (c->dead)
			cmd->done = true;
		else
			px_dispatch(cmd);
	}
	c->waking = false;
}

/* Parse and run what c's input holds, as far as the throttle allows. */
static void process_input(struct px_conn *c)
{
	struct px_worker *w = c->w;
	size_t off = 0;
	char err[128];

	/* A command completed while parsing flushes (conn_flush()): it must not parse again. */
	if (c->parsing)
		return;
	c->parsing = true;
	while (!c->dead && !c->quit && !throttled(c) && off < c->in.len) {
		size_t used = 0;
		enum resp_parse rc = resp_parse((const uint8_t *)c->in.p + off, c->in.len - off,
						&c->req, &used, err, sizeof(err));
		struct px_cmd *cmd;

		if (rc == RESP_PARSE_MORE)
			break;
		if (rc == RESP_PARSE_ERROR) {
			char msg[160];

			/* Redis answers the error, then closes the connection. */
			px_count(&w->ctr.protocol_errors, 1);
			snprintf(msg, sizeof(msg), "ERR %s", err);
			enqueue_error(c, msg);
			c->quit = true;
			off = c->in.len;
			break;
		}
		off += used;
		if (c->req.argc == 0)
			continue;
		cmd = cmd_new(c, &c->req);
		if (!cmd) {
			enqueue_error(c, "ERR skewless: out of memory");
			continue;
		}
		enqueue(c, cmd);
		if (px_cmd_prepare(cmd) != 0) {
			resp_error(&cmd->reply, "ERR skewless: out of memory");
			cmd->done = true;
		} else if (waits_for_earlier(cmd)) {
			cmd->waiting = true;
		} else {
			px_dispatch(cmd);
		}
	}
	rbuf_consume(&c->in, off);
	c->parsing = false;
	conn_flush(c);
}

/* Send what is unsent; false when the connection failed (closed). */
static bool conn_write(struct px_conn *c)
{
	size_t sent = 0;

	while (sent < c->out.len) {
		ssize_t n = send(c->fd, c->out.p + sent, c->out.len - sent, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			conn_close(c);
			return false;
		}
		sent += (size_t)n;
	}
	px_count(&c->w->ctr.net_output_bytes, sent);
	rbuf_consume(&c->out, sent);
	return true;
}

/*
 * Move the replies of the done commands at the head of c's queue to its
 * output, in order, and send. A throttled connection that drains is
 * picked up again by the loop (w->resume).
 */
static void conn_flush(struct px_conn *c)
{
	struct px_worker *w = c->w;
	bool was_throttled = throttled(c);

	while (c->head && c->head->done) {
		struct px_cmd *cmd = c->head;

		if (cmd->reply.len && cmd->reply.p[0] == '-') {
			px_count(&w->ctr.errors, 1);
			if (cmd->def)
				px_count(&w->failed[cmd->def - px_commands], 1);
		}
		if (!c->dead && rbuf_append(&c->out, cmd->reply.p, cmd->reply.len) != 0)
			conn_close(c);
		c->head = cmd->next;
		if (!c->head)
			c->tail = NULL;
		c->queued--;
		cmd_free(cmd);
	}
	if (c->dead)
		return;
	if (c->out.len && !conn_write(c))
		return;
	if (c->quit && !c->head && !c->out.len) {
		conn_close(c);
		return;
	}
	if (was_throttled && !throttled(c) && c->in.len)
		process_input(c);
	conn_update_events(c);
}

/* Dispatch the commands that waited for c's completions, and send what is ready. */
static void conn_done(struct px_conn *conn)
{
	conn_wake(conn);
	if (conn->head && conn->head->done)
		conn_flush(conn);
}

void px_cmd_done(struct px_cmd *c)
{
	struct px_conn *conn = c->conn;
	struct px_worker *w = conn->w;

	c->done = true;
	/* Inside conn_wake(), which flushes when it is through. */
	if (conn->waking)
		return;
	/* A reply from the agent's poll: the connection is flushed after it. */
	if (w->in_poll) {
		if (!conn->flush_due) {
			conn->flush_due = true;
			conn->next_flush = w->flush;
			w->flush = conn;
		}
		return;
	}
	conn_done(conn);
}

/* The agent's replies and due timers; then each connection they completed commands of, once. */
static void poll_agent(struct px_worker *w)
{
	w->in_poll = true;
	skl_poll(w->agent, 0);
	w->in_poll = false;
	while (w->flush) {
		struct px_conn *c = w->flush;

		w->flush = c->next_flush;
		c->flush_due = false;
		conn_done(c);
	}
}

static void conn_read(struct px_conn *c)
{
	while (!c->dead && !throttled(c)) {
		ssize_t n;

		if (rbuf_reserve(&c->in, PX_READ_CHUNK) != 0) {
			conn_close(c);
			return;
		}
		n = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		px_count(&c->w->ctr.net_input_bytes, (uint64_t)n);
		c->in.len += (size_t)n;
		process_input(c);
	}
}

static void accept_all(struct px_worker *w)
{
	for (;;) {
		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(w->listen_fd, (struct sockaddr *)&peer, &plen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev = {.events = EPOLLIN};
		struct px_conn *c;
		int one = 1;

		if (fd < 0)
			return;
		px_count(&w->ctr.connections_received, 1);
		if (w->clients >= w->px->max_clients) {
			static const char full[] = "-ERR max number of clients reached\r\n";

			px_count(&w->ctr.connections_rejected, 1);
			if (send(fd, full, sizeof(full) - 1, MSG_NOSIGNAL) < 0) {
				/* Closed either way. */
			}
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->w = w;
		c->fd = fd;
		c->proto = 2;
		/* Ids unique across workers: the worker's id in the low bits. */
		c->id = ++w->next_conn_id * w->px->nworkers + w->id;
		snprintf(c->addr, sizeof(c->addr), "%s:%u", inet_ntoa(peer.sin_addr),
			 ntohs(peer.sin_port));
		ev.data.ptr = c;
		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			close(fd);
			free(c);
			continue;
		}
		c->events = EPOLLIN;
		c->next_open = w->open;
		if (w->open)
			w->open->prev_open = c;
		w->open = c;
		w->clients++;
	}
}

/* Free the closed connections whose commands are all done. */
static void reap(struct px_worker *w)
{
	struct px_conn **pp = &w->closing;

	while (*pp) {
		struct px_conn *c = *pp;

		conn_wake(c); /* drops the commands still waiting */
		while (c->head && c->head->done) {
			struct px_cmd *cmd = c->head;

			c->head = cmd->next;
			cmd_free(cmd);
		}
		if (c->head) {
			pp = &c->next_closing;
			continue;
		}
		*pp = c->next_closing;
		rbuf_free(&c->in);
		rbuf_free(&c->out);
		resp_req_free(&c->req);
		free(c);
	}
}

static void snapshot(struct px_worker *w)
{
	pthread_mutex_lock(&w->snap_lock);
	skl_get_stats(w->agent, &w->agent_snap);
	pthread_mutex_unlock(&w->snap_lock);
}

static void *worker_main(void *arg)
{
	struct px_worker *w = arg;
	struct epoll_event evs[PX_EVENTS];
	uint64_t next_snap = 0;
	bool stop = false;

	while (!stop) {
		int timeout = skl_next_timeout_ms(w->agent), n;
		uint64_t now;

		if (timeout < 0 || timeout > 100)
			timeout = 100;
		n = epoll_wait(w->epfd, evs, PX_EVENTS, timeout);
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &w->listen_fd) {
				accept_all(w);
			} else if (p == &w->stop_fd) {
				stop = true;
			} else if (p != &w->agent) {
				struct px_conn *c = p;

				if (c->dead)
					continue;
				if (evs[i].events & (EPOLLERR | EPOLLHUP) &&
				    !(evs[i].events & EPOLLIN)) {
					conn_close(c);
					continue;
				}
				if (evs[i].events & EPOLLOUT)
					conn_flush(c);
				if (!c->dead && evs[i].events & EPOLLIN)
					conn_read(c);
			}
		}
		/* Replies and due timers; callbacks complete commands (px_cmd_done()). */
		poll_agent(w);
		reap(w);
		now = clock_mono_ns();
		if (now >= next_snap) {
			snapshot(w);
			next_snap = now + PX_SNAP_NS;
		}
	}
	return NULL;
}

/* Listen on the proxy's address with SO_REUSEPORT: each worker has its own queue. */
static int open_listener(struct px_worker *w, char *err, size_t errlen)
{
	struct px_proxy *px = w->px;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	sa.sin_addr.s_addr = htonl(px->ip);
	sa.sin_port = htons(px->port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 1024) != 0) {
		snprintf(err, errlen, "--listen %s:%u: %s", inet_ntoa(sa.sin_addr), px->port,
			 strerror(errno));
		close(fd);
		return -1;
	}
	/* Port 0: the first worker's choice is everyone's. */
	if (px->port == 0 && getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		px->port = ntohs(sa.sin_port);
	return fd;
}

int px_worker_start(struct px_worker *w, const struct skl_options *opt, char *err, size_t errlen)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int rc;

	w->listen_fd = w->stop_fd = w->epfd = -1;
	w->calls = calloc(px_ncommands, sizeof(uint64_t));
	w->failed = calloc(px_ncommands, sizeof(uint64_t));
	if (!w->calls || !w->failed) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&w->snap_lock, NULL);
	rc = skl_create(w->px->cfg, opt, &w->agent);
	if (rc < 0) {
		snprintf(err, errlen, "worker %u: cannot create its agent: %s", w->id,
			 strerror(-rc));
		return -1;
	}
	/* The commands of one pass over the connections leave together, at poll_agent(). */
	skl_cork(w->agent);
	w->listen_fd = open_listener(w, err, errlen);
	w->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->listen_fd < 0)
		return -1;
	if (w->stop_fd < 0 || w->epfd < 0) {
		snprintf(err, errlen, "worker %u: %s", w->id, strerror(errno));
		return -1;
	}
	ev.data.ptr = &w->listen_fd;
	epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listen_fd, &ev);
	ev.data.ptr = &w->stop_fd;
	epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->stop_fd, &ev);
	ev.data.ptr = &w->agent;
	epoll_ctl(w->epfd, EPOLL_CTL_ADD, skl_fd(w->agent), &ev);
	snapshot(w);
	rc = pthread_create(&w->thread, NULL, worker_main, w);
	if (rc != 0) {
		snprintf(err, errlen, "worker %u: pthread_create: %s", w->id, strerror(rc));
		return -1;
	}
	w->running = true;
	return 0;
}

/*
 * Stop the loop, close every connection, then close the agent: requests
 * still in flight complete CANCELLED, which frees their commands.
 */
void px_worker_stop(struct px_worker *w)
{
	uint64_t one = 1;

	if (w->running) {
		if (write(w->stop_fd, &one, sizeof(one)) != sizeof(one)) {
			/* An eventfd write fails only on overflow: the loop is stopping anyway. */
		}
		pthread_join(w->thread, NULL);
		w->running = false;
	}
	w->stopping = true;
	while (w->open)
		conn_close(w->open);
	if (w->agent) {
		skl_close(w->agent);
		w->agent = NULL;
	}
	reap(w);
	if (w->listen_fd >= 0)
		close(w->listen_fd);
	if (w->stop_fd >= 0)
		close(w->stop_fd);
	if (w->epfd >= 0)
		close(w->epfd);
	free(w->calls);
	free(w->failed);
}
