/*
 * http_fetch.h - the tests' HTTP client for /metrics: one request to
 * 127.0.0.1:port, the whole answer read until the server closes (5 s at
 * most), and the value of a sample in exposition text. A thread body too,
 * for a server the test drives from its own thread.
 */
#ifndef SKL_TEST_HTTP_FETCH_H
#define SKL_TEST_HTTP_FETCH_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

struct http_fetch {
	uint16_t port;
	const char *request; /* e.g. "GET /metrics HTTP/1.0\r\n\r\n" */
	char *reply;	     /* NUL-terminated; empty when nothing came */
	size_t cap;
};

/* Send f->request, read the answer into f->reply. Returns NULL (a thread body). */
static inline void *http_fetch_run(void *arg)
{
	struct http_fetch *f = arg;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(f->port)};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t off = 0;
	ssize_t n;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(fd, f->request, strlen(f->request)) > 0)
		while (off < f->cap - 1 && (n = read(fd, f->reply + off, f->cap - 1 - off)) > 0)
			off += (size_t)n;
	f->reply[off] = 0;
	close(fd);
	return NULL;
}

/* The value of the sample line "series value" in exposition text, or -1. */
static inline double http_sample_value(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, series, n) && l[n] == ' ')
			return strtod(l + n + 1, NULL);
	return -1;
}

#endif
