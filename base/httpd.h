/*
 * httpd.h - the daemons' /metrics endpoint, on libmicrohttpd.
 *
 * GET /metrics answers the exposition text the daemon's callback renders
 * (text/plain; version=0.0.4); any other path is 404, any other method 405.
 * Two ways to run it:
 *   HTTPD_OWN_THREAD  libmicrohttpd's internal polling thread calls the
 *                     callback: it must read only what is safe from another
 *                     thread (the node: atomics);
 *   HTTPD_EXTERNAL    the caller polls httpd_fd() in its own loop and calls
 *                     httpd_run() when it is readable: the callback runs on
 *                     the caller's thread (the switch's control thread).
 */
#ifndef SKL_BASE_HTTPD_H
#define SKL_BASE_HTTPD_H

#include <stddef.h>
#include <stdint.h>

struct httpd;

enum httpd_mode { HTTPD_OWN_THREAD, HTTPD_EXTERNAL };

/* The body of one scrape (malloc'd; *len its length), or NULL (answered 500). */
typedef char *httpd_render(void *arg, size_t *len);

/*
 * Parse "A.B.C.D:PORT" (PORT 0..65535; 0 picks a free port). 0, or -1 with a
 * message in err that starts with the quoted value (the caller puts the key
 * or flag in front) and names the expected form.
 */
int httpd_parse_listen(const char *listen, uint32_t *ip_host, uint16_t *port, char *err,
		       size_t errlen);

/* Listen on `listen` and serve /metrics. The server, or NULL with err. */
struct httpd *httpd_start(const char *listen, enum httpd_mode mode, httpd_render *fn, void *arg,
			  char *err, size_t errlen);
/* The port it listens on (the chosen one when asked for port 0). */
uint16_t httpd_port(const struct httpd *h);
/* HTTPD_EXTERNAL: the fd (epoll) to wait on for POLLIN, and one non-blocking pass. */
int httpd_fd(const struct httpd *h);
void httpd_run(struct httpd *h);
/* Scrapes answered 200, and requests answered otherwise. */
uint64_t httpd_scrapes(const struct httpd *h);
uint64_t httpd_errors(const struct httpd *h);
void httpd_stop(struct httpd *h);

#endif
