/*
 * resp.h - the Redis serialization protocol (RESP2 and RESP3) as
 * skewless-proxy speaks it: requests parsed out of a connection's input, and
 * replies appended to an output buffer.
 *
 * Requests are what Redis accepts: a multibulk array of bulk strings
 * ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), or an inline command line ("PING\r\n")
 * as typed into telnet. Keys and values are binary-safe; the parser never
 * copies, its arguments point into the input buffer. Replies are written in
 * the protocol version the connection chose with HELLO (2 or 3): a null is
 * "$-1" or "_", a map "*2n" or "%n".
 */
#ifndef SKL_PROXY_RESP_H
#define SKL_PROXY_RESP_H

#include <stddef.h>
#include <stdint.h>

/* Limits, as Redis has them (proto-max-bulk-len is lower here: values stop at 256 KB). */
#define RESP_MAX_ARGS	  (1024 * 1024)
#define RESP_MAX_BULK	  (16u * 1024 * 1024) /* a bulk above this is a protocol error */
#define RESP_MAX_INLINE	  (64 * 1024)
#define RESP_ARGV_INITIAL 16

struct resp_req {
	int argc;
	int argv_cap;
	const uint8_t **argv; /* into the input buffer */
	size_t *argvlen;
};

enum resp_parse {
	RESP_PARSE_OK = 0,    /* one request in req; *used bytes consumed */
	RESP_PARSE_MORE = 1,  /* incomplete: read more */
	RESP_PARSE_ERROR = -1 /* a protocol error: err says what; the connection closes */
};

/*
 * Parse one request from buf[0..len). An empty inline line is skipped
 * (consumed, argc 0). err gets Redis's wording ("Protocol error: invalid
 * bulk length").
 */
enum resp_parse resp_parse(const uint8_t *buf, size_t len, struct resp_req *req, size_t *used,
			   char *err, size_t errlen);
void resp_req_free(struct resp_req *req);

/* An output buffer. Append functions return 0 or -ENOMEM (then the buffer is unchanged). */
struct rbuf {
	char *p;
	size_t len, cap;
};

int rbuf_append(struct rbuf *b, const void *data, size_t len);
/* Room for `more` bytes past len (the socket reads into it). */
int rbuf_reserve(struct rbuf *b, size_t more);
void rbuf_free(struct rbuf *b);
/* Drop the first n bytes (written to the socket). */
void rbuf_consume(struct rbuf *b, size_t n);

int resp_simple(struct rbuf *b, const char *s);	     /* +s */
int resp_error(struct rbuf *b, const char *fmt, ...) /* -..., \r\n stripped */
    __attribute__((format(printf, 2, 3)));
int resp_int(struct rbuf *b, int64_t v);		     /* :v */
int resp_bulk(struct rbuf *b, const void *data, size_t len); /* $len data */
int resp_bulk_str(struct rbuf *b, const char *s);
int resp_null(struct rbuf *b, int proto);	   /* $-1 or _ */
int resp_null_array(struct rbuf *b, int proto);	   /* *-1 or _ */
int resp_array(struct rbuf *b, size_t n);	   /* *n */
int resp_map(struct rbuf *b, size_t n, int proto); /* n pairs: *2n or %n */
int resp_set(struct rbuf *b, size_t n, int proto); /* ~n in RESP3 */

#endif
