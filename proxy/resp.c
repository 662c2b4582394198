/*
 * resp.c - RESP request parser and reply writer (see resp.h). The parser
 * follows Redis's processMultibulkBuffer()/processInlineBuffer(), with its
 * error texts.
 */
#include "resp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int argv_reserve(struct resp_req *req, int n)
{
	const uint8_t **argv;
	size_t *lens;
	int cap = req->argv_cap ? req->argv_cap : RESP_ARGV_INITIAL;

	if (n <= req->argv_cap)
		return 0;
	while (cap < n)
		cap *= 2;
	argv = realloc(req->argv, (size_t)cap * sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	req->argv = argv;
	lens = realloc(req->argvlen, (size_t)cap * sizeof(*lens));
	if (!lens)
		return -ENOMEM;
	req->argvlen = lens;
	req->argv_cap = cap;
	return 0;
}

void resp_req_free(struct resp_req *req)
{
	free(req->argv);
	free(req->argvlen);
	*req = (struct resp_req){0};
}

/*
 * A decimal integer line at p (up to the CR of "\r\n" within end); *next
 * past the LF. 1 parsed, 0 incomplete, -1 not a number or too long.
 */
static int parse_line_int(const uint8_t *p, const uint8_t *end, long long *v, const uint8_t **next)
{
	const uint8_t *cr = memchr(p, '\r', (size_t)(end - p));
	char num[32];
	char *stop;
	size_t n;

	if (!cr) {
		return (size_t)(end - p) > sizeof(num) ? -1 : 0;
	}
	if (cr + 1 >= end)
		return 0;
	n = (size_t)(cr - p);
	if (n == 0 || n >= sizeof(num) || cr[1] != '\n')
		return -1;
	memcpy(num, p, n);
	num[n] = '\0';
	errno = 0;
	*v = strtoll(num, &stop, 10);
	if (errno || *stop)
		return -1;
	*next = cr + 2;
	return 1;
}

static enum resp_parse fail(char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return RESP_PARSE_ERROR;
}

static enum resp_parse parse_inline(const uint8_t *buf, size_t len, struct resp_req *req,
				    size_t *used, char *err, size_t errlen)
{
	const uint8_t *nl = memchr(buf, '\n', len), *p, *end;

	if (!nl)
		return len > RESP_MAX_INLINE
			   ? fail(err, errlen, "Protocol error: too big inline request")
			   : RESP_PARSE_MORE;
	end = nl > buf && nl[-1] == '\r' ? nl - 1 : nl;
	req->argc = 0;
	for (p = buf; p < end;) {
		const uint8_t *start;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p == end)
			break;
		start = p;
		while (p < end && *p != ' ' && *p != '\t')
			p++;
		if (argv_reserve(req, req->argc + 1))
			return fail(err, errlen, "out of memory");
		req->argv[req->argc] = start;
		req->argvlen[req->argc++] = (size_t)(p - start);
	}
	*used = (size_t)(nl - buf) + 1;
	return RESP_PARSE_OK;
}

enum resp_parse resp_parse(const uint8_t *buf, size_t len, struct resp_req *req, size_t *used,
			   char *err, size_t errlen)
{
	const uint8_t *p = buf + 1, *end = buf + len;
	long long count, blen;
	int rc;

	req->argc = 0;
	if (len == 0)
		return RESP_PARSE_MORE;
	if (buf[0] != '*')
		return parse_inline(buf, len, req, used, err, errlen);
	rc = parse_line_int(p, end, &count, &p);
	if (rc < 0 || (rc > 0 && count > RESP_MAX_ARGS))
		return fail(err, errlen, "Protocol error: invalid multibulk length");
	if (rc == 0)
		return RESP_PARSE_MORE;
	if (count <= 0) {
		*used = (size_t)(p - buf);
		return RESP_PARSE_OK; /* an empty request: skipped, as Redis does */
	}
	/* Reserved as the bulks arrive: a count alone commits no memory. */
	for (long long i = 0; i < count; i++) {
		if (p >= end)
			return RESP_PARSE_MORE;
		if (*p != '$') {
			snprintf(err, errlen, "Protocol error: expected '$', got '%c'", *p);
			return RESP_PARSE_ERROR;
		}
		rc = parse_line_int(p + 1, end, &blen, &p);
		if (rc < 0 || (rc > 0 && (blen < 0 || blen > RESP_MAX_BULK)))
			return fail(err, errlen, "Protocol error: invalid bulk length");
		if (rc == 0)
			return RESP_PARSE_MORE;
		if ((size_t)(end - p) < (size_t)blen + 2)
			return RESP_PARSE_MORE;
		if (p[blen] != '\r' || p[blen + 1] != '\n')
			return fail(err, errlen, "Protocol error: expected CRLF after bulk");
		if (argv_reserve(req, (int)i + 1))
			return fail(err, errlen, "out of memory");
		req->argv[i] = p;
		req->argvlen[i] = (size_t)blen;
		p += blen + 2;
	}
	req->argc = (int)count;
	*used = (size_t)(p - buf);
	return RESP_PARSE_OK;
}

/* ---- replies ---- */

int rbuf_reserve(struct rbuf *b, size_t more)
{
	if (b->len + more > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + more)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	return 0;
}

int rbuf_append(struct rbuf *b, const void *data, size_t len)
{
	if (rbuf_reserve(b, len) != 0)
		return -ENOMEM;
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
	return 0;
}

void rbuf_free(struct rbuf *b)
{
	free(b->p);
	*b = (struct rbuf){0};
}

void rbuf_consume(struct rbuf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

/* A type byte, a number and CRLF. */
static int prefix(struct rbuf *b, char type, long long n)
{
	char s[32];
	int len = snprintf(s, sizeof(s), "%c%lld\r\n", type, n);

	return rbuf_append(b, s, (size_t)len);
}

int resp_simple(struct rbuf *b, const char *s)
{
	size_t old = b->len;

	if (rbuf_append(b, "+", 1) || rbuf_append(b, s, strlen(s)) || rbuf_append(b, "\r\n", 2)) {
		b->len = old;
		return -ENOMEM;
	}
	return 0;
}

int resp_error(struct rbuf *b, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	size_t old = b->len;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* An error is one line: newlines in user text become spaces, as Redis does. */
	for (char *c = msg; *c; c++)
		if (*c == '\r' || *c == '\n')
			*c = ' ';
	if (rbuf_append(b, "-", 1) || rbuf_append(b, msg, strlen(msg)) ||
	    rbuf_append(b, "\r\n", 2)) {
		b->len = old;
		return -ENOMEM;
	}
	return 0;
}

int resp_int(struct rbuf *b, int64_t v)
{
	return prefix(b, ':', v);
}

int resp_bulk(struct rbuf *b, const void *data, size_t len)
{
	size_t old = b->len;

	if (prefix(b, '$', (long long)len) || rbuf_append(b, data, len) ||
	    rbuf_append(b, "\r\n", 2)) {
		b->len = old;
		return -ENOMEM;
	}
	return 0;
}

int resp_bulk_str(struct rbuf *b, const char *s)
{
	return resp_bulk(b, s, strlen(s));
}

int resp_null(struct rbuf *b, int proto)
{
	return proto >= 3 ? rbuf_append(b, "_\r\n", 3) : rbuf_append(b, "$-1\r\n", 5);
}

int resp_null_array(struct rbuf *b, int proto)
{
	return proto >= 3 ? rbuf_append(b, "_\r\n", 3) : rbuf_append(b, "*-1\r\n", 5);
}

int resp_array(struct rbuf *b, size_t n)
{
	return prefix(b, '*', (long long)n);
}

int resp_map(struct rbuf *b, size_t n, int proto)
{
	return proto >= 3 ? prefix(b, '%', (long long)n) : prefix(b, '*', 2 * (long long)n);
}

int resp_set(struct rbuf *b, size_t n, int proto)
{
	return prefix(b, proto >= 3 ? '~' : '*', (long long)n);
}
