/*
 * httpd.c - /metrics on libmicrohttpd (see httpd.h). libmicrohttpd parses
 * HTTP and manages connections; this file only answers the one path.
 */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

/* Scrapers are few (Prometheus, an operator's curl): bound what a stray
 * client can hold, and close idle connections after 10 s. */
#define HTTPD_MAX_CONNECTIONS 16
#define HTTPD_IDLE_TIMEOUT_S  10

struct httpd {
	struct MHD_Daemon *d;
	httpd_render *fn;
	void *arg;
	uint16_t port;
	uint64_t scrapes, errors; /* relaxed atomics: the callback's thread writes */
};

int httpd_parse_listen(const char *listen, uint32_t *ip_host, uint16_t *port, char *err,
		       size_t errlen)
{
	char host[INET_ADDRSTRLEN];
	const char *colon = listen ? strrchr(listen, ':') : NULL;
	struct in_addr a;
	char *end;
	unsigned long p;

	if (!colon || (size_t)(colon - listen) >= sizeof(host)) {
		snprintf(err, errlen, "\"%s\": expected A.B.C.D:PORT", listen ? listen : "");
		return -1;
	}
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = 0;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (inet_pton(AF_INET, host, &a) != 1 || !colon[1] || *end || errno || p > 65535) {
		snprintf(err, errlen, "\"%s\": expected A.B.C.D:PORT with PORT 0..65535", listen);
		return -1;
	}
	*ip_host = ntohl(a.s_addr);
	*port = (uint16_t)p;
	return 0;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, char *body, size_t len,
			      const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	struct httpd *h = cls;
	size_t len = 0;
	char *body;

	(void)version;
	(void)upload;
	if (!*state) { /* the first call only sees the headers: answer on the second */
		*state = h;
		return MHD_YES;
	}
	if (*upload_len) { /* a body nobody asked for: ignore it */
		*upload_len = 0;
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		__atomic_fetch_add(&h->errors, 1, __ATOMIC_RELAXED);
		return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, strdup("GET /metrics\n"), 13,
			      "text/plain");
	}
	if (strcmp(url, "/metrics")) {
		__atomic_fetch_add(&h->errors, 1, __ATOMIC_RELAXED);
		return answer(c, MHD_HTTP_NOT_FOUND, strdup("not found: try /metrics\n"), 24,
			      "text/plain");
	}
	body = h->fn(h->arg, &len);
	if (!body) {
		__atomic_fetch_add(&h->errors, 1, __ATOMIC_RELAXED);
		return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, strdup("metrics unavailable\n"),
			      20, "text/plain");
	}
	__atomic_fetch_add(&h->scrapes, 1, __ATOMIC_RELAXED);
	return answer(c, MHD_HTTP_OK, body, len, "text/plain; version=0.0.4; charset=utf-8");
}

struct httpd *httpd_start(const char *listen, enum httpd_mode mode, httpd_render *fn, void *arg,
			  char *err, size_t errlen)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;
	struct httpd *h;
	uint32_t ip;
	uint16_t port;

	if (httpd_parse_listen(listen, &ip, &port, err, errlen) != 0)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "\"%s\": out of memory", listen);
		return NULL;
	}
	h->fn = fn;
	h->arg = arg;
	sa.sin_addr.s_addr = htonl(ip);
	sa.sin_port = htons(port);
	if (mode == HTTPD_OWN_THREAD)
		flags |= MHD_USE_INTERNAL_POLLING_THREAD;
	h->d = MHD_start_daemon(flags, port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, &sa,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTPD_MAX_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTPD_IDLE_TIMEOUT_S,
				MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen,
			 "\"%s\": cannot listen (address in use, or not an address of this host?)",
			 listen);
		free(h);
		return NULL;
	}
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	return h;
}

uint16_t httpd_port(const struct httpd *h)
{
	return h->port;
}

int httpd_fd(const struct httpd *h)
{
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);

	return info ? info->epoll_fd : -1;
}

void httpd_run(struct httpd *h)
{
	MHD_run(h->d);
}

uint64_t httpd_scrapes(const struct httpd *h)
{
	return __atomic_load_n(&h->scrapes, __ATOMIC_RELAXED);
}

uint64_t httpd_errors(const struct httpd *h)
{
	return __atomic_load_n(&h->errors, __ATOMIC_RELAXED);
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h);
}
