/*
 * resp_client.h - a pipelining RESP (Redis protocol) client for `skewless
 * bench --resp`, so that one load generator measures skewless-proxy, a
 * plain redis-server or nutcracker in front of Redis alike.
 *
 * It looks like the part of libskewless the bench uses: GET and SET are
 * submitted with a callback that gets a struct skl_result, and
 * resp_client_poll() sends, receives and calls them back. Operations are
 * spread round-robin over `conns` TCP connections and pipelined on each;
 * replies come in order per connection. Statuses: a bulk string is OK, a
 * null NOT_FOUND, +OK OK; an error reply that names a skewless status
 * ("ERR skewless TIMEOUT: ...") that status, any other error INTERNAL; a
 * connection that fails completes what it had in flight UNAVAILABLE.
 * Single-threaded, like an agent; never prints.
 */
#ifndef SKL_RESP_CLIENT_H
#define SKL_RESP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "skewless.h"

struct resp_client;

/* Connect conns (1..1024) connections to "A.B.C.D:PORT". 0 or a negative errno. */
int resp_client_open(const char *addr, uint32_t conns, struct resp_client **out);
int resp_client_get(struct resp_client *rc, const void *key, size_t klen, skl_callback cb,
		    void *arg);
int resp_client_set(struct resp_client *rc, const void *key, size_t klen, const void *val,
		    size_t vlen, skl_callback cb, void *arg);
/* Send what is queued, wait up to timeout_ms for replies, call back. Completions, or -errno. */
int resp_client_poll(struct resp_client *rc, int timeout_ms);
uint32_t resp_client_inflight(const struct resp_client *rc);
/* Complete what is in flight CANCELLED and free. */
void resp_client_close(struct resp_client *rc);

#endif
