/*
 * ctl.c - the control socket and the command registry (see ctl.h). Control
 * path only: it may allocate, format JSON and block briefly; the fast path
 * never calls it. It knows no command: the modules register theirs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_debug.h>
#include <rte_rcu_qsbr.h>

#include "clock.h"
#include "ctl.h"
#include "fmt.h"
#include "httpd.h"
#include "prom.h"
#include "switchd.h"

#define CTL_MAX_CLIENTS 8
#define CTL_LINE_MAX	(64 * 1024)
#define CTL_MAX_CMDS	32
#define CTL_MAX_ARGS	16
#define CTL_MAX_METRICS 16

struct ctl_client {
	int fd;
	size_t len;
	char *buf;
};

struct ctl_cmd {
	char name[32];
	unsigned nwords; /* words in name: 1 or 2 */
	ctl_handler *fn;
	void *aux;
};

struct ctl {
	int listen_fd;
	char path[CFG_MAX_PATH];
	struct ctl_client clients[CTL_MAX_CLIENTS];
	struct ctl_cmd cmds[CTL_MAX_CMDS]; /* in the order registered */
	unsigned ncmds;
	ctl_metrics *metrics[CTL_MAX_METRICS]; /* in the order registered */
	unsigned nmetrics;
	struct httpd *http;   /* /metrics, HTTPD_EXTERNAL: run from ctl_poll() */
	uint64_t http_run_ms; /* its last pass */
};

static struct sw *tel_sw; /* the switch telemetry answers for (one per process) */

struct sw *ctl_tel_switch(void)
{
	return tel_sw;
}

json_t *ctl_error(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

int ctl_init(struct sw *sw, char *err, size_t errlen)
{
	struct ctl *c = calloc(1, sizeof(*c));

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->listen_fd = -1;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		c->clients[i].fd = -1;
	sw->ctl = c;
	return 0;
}

/* ---- The registry. -------------------------------------------------------------------- */

void ctl_register(struct sw *sw, const char *name, ctl_handler *fn, void *aux)
{
	struct ctl *c = sw->ctl;
	struct ctl_cmd *cmd;

	/* A table too small or a name taken is the program's error, not the
	 * operator's: stop at start-up rather than lose a command. */
	if (!c || c->ncmds == CTL_MAX_CMDS || strlen(name) >= sizeof(cmd->name))
		rte_panic("ctl_register: no room for command \"%s\" (CTL_MAX_CMDS %d, names < %zu "
			  "bytes)\n",
			  name, CTL_MAX_CMDS, sizeof(cmd->name));
	for (unsigned i = 0; i < c->ncmds; i++)
		if (!strcmp(c->cmds[i].name, name))
			rte_panic("ctl_register: command \"%s\" registered twice\n", name);
	cmd = &c->cmds[c->ncmds++];
	snprintf(cmd->name, sizeof(cmd->name), "%s", name);
	cmd->nwords = strchr(name, ' ') ? 2 : 1;
	cmd->fn = fn;
	cmd->aux = aux;
}

/* Does cmd's name match the first words of argv? */
static bool matches(const struct ctl_cmd *cmd, char **argv, int argc)
{
	size_t first = strcspn(cmd->name, " ");

	if (argc < (int)cmd->nwords || strlen(argv[0]) != first ||
	    strncmp(cmd->name, argv[0], first))
		return false;
	return cmd->nwords == 1 || !strcmp(cmd->name + first + 1, argv[1]);
}

/* Whether commands a and b start with the same word. */
static bool same_first_word(const char *a, const char *b)
{
	size_t n = strcspn(a, " ");

	return n == strcspn(b, " ") && !strncmp(a, b, n);
}

/* The registered commands for the error message: "stats, cdt show|pin|unpin, ...". */
static void list_commands(const struct ctl *c, char *buf, size_t cap)
{
	size_t off = 0;

	buf[0] = 0;
	for (unsigned i = 0; c && i < c->ncmds && off < cap; i++) {
		const char *name = c->cmds[i].name;
		bool seen = false;

		for (unsigned j = 0; j < i; j++)
			seen |= same_first_word(c->cmds[j].name, name);
		if (seen)
			continue;
		off += (size_t)snprintf(buf + off, cap - off, "%s%s", off ? ", " : "", name);
		/* The other sub-commands of the same word: "cdt show|pin|unpin". */
		for (unsigned j = i + 1; j < c->ncmds && off < cap; j++)
			if (c->cmds[i].nwords == 2 && same_first_word(c->cmds[j].name, name))
				off += (size_t)snprintf(buf + off, cap - off, "|%s",
							c->cmds[j].name + strcspn(name, " ") + 1);
	}
}

char *ctl_command(struct sw *sw, const char *line)
{
	char buf[CTL_LINE_MAX], *argv[CTL_MAX_ARGS], *save = NULL;
	const struct ctl_cmd *cmd = NULL;
	struct ctl *c = sw->ctl;
	int argc = 0, text = 0;
	json_t *r;
	char *out;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *t = strtok_r(buf, " \t\r\n", &save); t && argc < CTL_MAX_ARGS;
	     t = strtok_r(NULL, " \t\r\n", &save))
		argv[argc++] = t;
	if (argc > 1 && !strcmp(argv[0], "text"))
		text = 1;
	for (unsigned i = 0; c && i < c->ncmds; i++)
		if (matches(&c->cmds[i], argv + text, argc - text) &&
		    (!cmd || c->cmds[i].nwords > cmd->nwords))
			cmd = &c->cmds[i];
	/* Commands read and change the CDT: the control thread is a QSBR reader
	 * while it serves one (it waits for commands offline, sw_control_poll). */
	rte_rcu_qsbr_thread_online(sw->qsbr, sw->nworkers);
	if (argc == 0) {
		r = ctl_error("empty command");
	} else if (cmd) {
		r = cmd->fn(sw, argc - text - (int)cmd->nwords, argv + text + cmd->nwords,
			    cmd->aux);
	} else {
		char names[512];

		list_commands(c, names, sizeof(names));
		r = ctl_error("unknown command \"%s\" (%s)", argv[text], names);
	}
	rte_rcu_qsbr_thread_offline(sw->qsbr, sw->nworkers);
	if (text && json_is_true(json_object_get(r, "ok"))) {
		char *t = fmt_text_answer(r);

		json_decref(r);
		r = t ? json_pack("{s:b, s:s}", "ok", 1, "text", t) : ctl_error("out of memory");
		free(t);
	}
	out = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	return out;
}

/* ---- /metrics. ------------------------------------------------------------------------- */

void ctl_register_metrics(struct sw *sw, ctl_metrics *fn)
{
	struct ctl *c = sw->ctl;

	if (!c || c->nmetrics == CTL_MAX_METRICS)
		rte_panic("ctl_register_metrics: no room (CTL_MAX_METRICS %d)\n", CTL_MAX_METRICS);
	c->metrics[c->nmetrics++] = fn;
}

char *ctl_metrics_render(struct sw *sw, size_t *len)
{
	struct ctl *c = sw->ctl;
	struct prom *p = prom_new();
	char *out;

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	/* The modules read the CDT as commands do: a QSBR reader meanwhile. */
	rte_rcu_qsbr_thread_online(sw->qsbr, sw->nworkers);
	for (unsigned i = 0; c && i < c->nmetrics; i++)
		c->metrics[i](sw, p);
	rte_rcu_qsbr_thread_offline(sw->qsbr, sw->nworkers);
	out = prom_render(p, len);
	prom_free(p);
	return out;
}

static char *render_for_http(void *arg, size_t *len)
{
	return ctl_metrics_render(arg, len);
}

uint16_t ctl_metrics_port(const struct sw *sw)
{
	return sw->ctl && sw->ctl->http ? httpd_port(sw->ctl->http) : 0;
}

/* ---- Socket. ------------------------------------------------------------------------------ */

/*
 * Clear the way for binding sa: nothing there, or a socket nobody listens on
 * (a previous run's), which is removed. Anything else is an error: a file
 * that is not a socket is never deleted, and a live switch keeps its socket.
 */
static int remove_stale_socket(const struct sockaddr_un *sa, char *err, size_t errlen)
{
	struct stat st;
	int fd, live;

	if (lstat(sa->sun_path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen,
			 "control socket %s: exists and is not a socket; not removing it",
			 sa->sun_path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	live = fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	if (fd >= 0)
		close(fd);
	if (live) {
		snprintf(err, errlen,
			 "control socket %s: another process is listening on it (a switch with "
			 "the same control_socket?)",
			 sa->sun_path);
		return -1;
	}
	unlink(sa->sun_path); /* a stale socket of a previous run */
	return 0;
}

int ctl_open(struct sw *sw, const char *path, bool no_telemetry, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ctl *c;

	if (!sw->ctl && ctl_init(sw, err, errlen) != 0)
		return -1;
	c = sw->ctl;
	if (!no_telemetry && !tel_sw)
		tel_sw = sw;
	if (sw->self && sw->self->metrics_listen[0] && !c->http) {
		char why[256];

		c->http = httpd_start(sw->self->metrics_listen, HTTPD_EXTERNAL, render_for_http, sw,
				      why, sizeof(why));
		if (!c->http) {
			snprintf(err, errlen, "switches[%s].metrics_listen %s", sw->self->name,
				 why);
			return -1;
		}
	}
	if (!path)
		path = sw->self->control_socket;
	if (!*path)
		return 0;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "control socket %s: path too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (remove_stale_socket(&sa, err, errlen) != 0)
		return -1;
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->listen_fd < 0 || bind(c->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(c->listen_fd, 8) != 0) {
		snprintf(err, errlen, "control socket %s: %s (does its directory exist?)", path,
			 strerror(errno));
		return -1;
	}
	snprintf(c->path, sizeof(c->path), "%s", path); /* ours now: removed at exit */
	return 0;
}

void ctl_close(struct sw *sw)
{
	struct ctl *c = sw->ctl;

	if (tel_sw == sw)
		tel_sw = NULL;
	if (!c)
		return;
	httpd_stop(c->http);
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		if (c->clients[i].fd >= 0) {
			close(c->clients[i].fd);
			free(c->clients[i].buf);
		}
	if (c->listen_fd >= 0) {
		close(c->listen_fd);
		if (c->path[0])
			unlink(c->path);
	}
	free(c);
	sw->ctl = NULL;
}

static void client_drop(struct ctl_client *cl)
{
	close(cl->fd);
	free(cl->buf);
	cl->fd = -1;
	cl->buf = NULL;
	cl->len = 0;
}

/* Read what a client sent; answer each complete line. */
static void client_serve(struct sw *sw, struct ctl_client *cl)
{
	char tmp[4096];
	ssize_t n = read(cl->fd, tmp, sizeof(tmp));
	char *nl;

	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			client_drop(cl);
		return;
	}
	if (cl->len + (size_t)n >= CTL_LINE_MAX) {
		client_drop(cl);
		return;
	}
	char *nb = realloc(cl->buf, cl->len + (size_t)n + 1);

	if (!nb) {
		client_drop(cl);
		return;
	}
	cl->buf = nb;
	memcpy(cl->buf + cl->len, tmp, (size_t)n);
	cl->len += (size_t)n;
	cl->buf[cl->len] = 0;
	while ((nl = memchr(cl->buf, '\n', cl->len)) != NULL) {
		*nl = 0;
		char *out = ctl_command(sw, cl->buf);
		size_t rest = cl->len - (size_t)(nl + 1 - cl->buf);

		if (out) {
			/* Answers are small; a client that stops reading is dropped. */
			size_t olen = strlen(out), off = 0;

			out[olen] = 0;
			while (off < olen) {
				ssize_t w = send(cl->fd, out + off, olen - off, MSG_NOSIGNAL);

				if (w < 0 && errno == EAGAIN) {
					struct pollfd pf = {.fd = cl->fd, .events = POLLOUT};

					if (poll(&pf, 1, 1000) <= 0)
						break;
					continue;
				}
				if (w <= 0)
					break;
				off += (size_t)w;
			}
			if (off == olen)
				(void)!send(cl->fd, "\n", 1, MSG_NOSIGNAL);
			free(out);
		}
		memmove(cl->buf, nl + 1, rest);
		cl->len = rest;
		cl->buf[cl->len] = 0;
	}
}

void ctl_poll(struct sw *sw, int timeout_ms)
{
	struct ctl *c = sw->ctl;
	struct pollfd pf[CTL_MAX_CLIENTS + 3];
	eventfd_t woken;
	int n = 0, http = -1, sock;

	/* Index 0: a worker's wake-up (intake.c), which ends the wait early. */
	pf[n++] = (struct pollfd){.fd = sw->wake_fd, .events = POLLIN};
	/* Then /metrics: libmicrohttpd's epoll fd, readable when a scraper needs us. */
	if (c && c->http) {
		http = n;
		pf[n++] = (struct pollfd){.fd = httpd_fd(c->http), .events = POLLIN};
	}
	if (c && c->listen_fd >= 0) {
		pf[n++] = (struct pollfd){.fd = c->listen_fd, .events = POLLIN};
		for (int i = 0; i < CTL_MAX_CLIENTS; i++)
			pf[n++] = (struct pollfd){.fd = c->clients[i].fd, .events = POLLIN};
	}
	if (poll(pf, (nfds_t)n, timeout_ms) < 0)
		return;
	if (pf[0].revents & POLLIN)
		(void)!eventfd_read(sw->wake_fd, &woken);
	/* A pass when a scraper needs one, and one a second that closes idle connections. */
	if (http >= 0 &&
	    ((pf[http].revents & POLLIN) || clock_mono_ms() - c->http_run_ms >= 1000)) {
		httpd_run(c->http);
		c->http_run_ms = clock_mono_ms();
	}
	if (!c || c->listen_fd < 0)
		return;
	sock = http >= 0 ? 2 : 1; /* the listening socket, then the clients */
	if (pf[sock].revents & POLLIN) {
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			int i;

			for (i = 0; i < CTL_MAX_CLIENTS && c->clients[i].fd >= 0; i++)
				;
			if (i == CTL_MAX_CLIENTS)
				close(fd);
			else
				c->clients[i].fd = fd;
		}
	}
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		if (c->clients[i].fd >= 0 && pf[sock + 1 + i].fd == c->clients[i].fd &&
		    (pf[sock + 1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
			client_serve(sw, &c->clients[i]);
}
