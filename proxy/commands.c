/*
 * commands.c - the command table and its handlers (see proxy.h).
 *
 * Dispatch, the arity check and COMMAND's replies all read px_commands[].
 * A handler either writes its reply and calls px_cmd_done() at once, or
 * submits libskewless requests whose callbacks do. Replies and errors are
 * worded as Redis words them.
 *
 * What needs a condition at the home (SET NX/XX, SETNX, EXPIRE, TTL,
 * PERSIST) is one CAS (skl_cas()). What reads, computes and writes (INCR,
 * APPEND, SET ... GET, GETDEL, GETEX, EXPIRE with NX/XX/GT/LT) is a
 * read-modify-write: read the value, its version and ttl at the home (CAS
 * READ), compute, then a CAS at that version; on CONFLICT (another write came between) it reads
 * again, until rmw_deadline_ms. No write is ever blind to one it did not see. The
 * read-modify-writes of one key on one worker run one at a time (the others wait in a queue per
 * key), so that a hot counter does not have hundreds of them racing and starving each other:
 * conflicts arise only between workers or proxies.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "keyhash.h"
#include "proxy.h"
#include "wire.h"

/* ---- replies and checks shared by the handlers ---- */

static int proto_of(const struct px_cmd *c)
{
	return c->conn->proto;
}

/* A status the agent could not hide: an error that names it. */
static void reply_status(struct px_cmd *c, enum skl_status st)
{
	static const char *const what[] = {
	    [SKL_MOVED] = "the key's owner kept moving",
	    [SKL_TOO_LARGE] = "the value is over the cluster's limit",
	    [SKL_BAD_REQUEST] = "the cluster refused the request as malformed",
	    [SKL_UNAVAILABLE] = "no node able to serve the key answered",
	    [SKL_OVERLOADED] = "the key's node is overloaded",
	    [SKL_INTERNAL] = "a node failed to read or write its store",
	    [SKL_TIMEOUT] = "no answer from the cluster in time",
	    [SKL_CANCELLED] = "the proxy is shutting down",
	    [SKL_CONFLICT] = "the key kept changing",
	};
	const char *w = (unsigned)st < sizeof(what) / sizeof(what[0]) && what[st] ? what[st] : "";

	if ((unsigned)st < SKL_STATUS_COUNT)
		px_count(&c->conn->w->failures[st], 1);
	resp_error(&c->reply, "ERR skewless %s: %s", skl_status_name(st), w);
}

/* A request libskewless refused at submission (rc < 0). */
static void reply_submit_error(struct px_cmd *c, int rc)
{
	if (rc == -EBUSY) {
		px_count(&c->conn->w->ctr.busy, 1);
		resp_error(&c->reply,
			   "ERR skewless BUSY: the proxy has agent.max_inflight requests "
			   "in flight; retry");
	} else {
		resp_error(&c->reply, "ERR skewless: request refused (%s)", strerror(-rc));
	}
}

static void done_error(struct px_cmd *c, const char *msg)
{
	resp_error(&c->reply, "%s", msg);
	px_cmd_done(c);
}

/* Keys are 1..1024 bytes in skewless (Redis allows an empty one). */
static bool keys_ok(struct px_cmd *c)
{
	const struct px_command *d = c->def;
	int last;

	if (d->first_key <= 0)
		return true;
	last = d->last_key < 0 ? c->argc + d->last_key : d->last_key;
	for (int i = d->first_key; i <= last; i += d->key_step)
		if (c->argvlen[i] < 1 || c->argvlen[i] > WIRE_MAX_KEY) {
			resp_error(&c->reply, "ERR skewless: a key is 1..%d bytes, got %zu",
				   WIRE_MAX_KEY, c->argvlen[i]);
			px_cmd_done(c);
			return false;
		}
	return true;
}

static bool value_ok(struct px_cmd *c, size_t len)
{
	uint32_t max = c->conn->w->px->max_value;

	if (len <= max)
		return true;
	resp_error(&c->reply,
		   "ERR string exceeds maximum allowed size (%" PRIu32
		   " bytes, service.max_value): nothing stored",
		   max);
	px_cmd_done(c);
	return false;
}

/* Redis's string2ll(): an optional '-', digits, no leading zeros, no spaces. */
static bool parse_ll(const uint8_t *s, size_t len, long long *out)
{
	char buf[32], *end;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!(isdigit((unsigned char)buf[0]) || (buf[0] == '-' && len > 1)) ||
	    (buf[0] == '0' && len > 1) || (buf[0] == '-' && buf[1] == '0'))
		return false;
	errno = 0;
	*out = strtoll(buf, &end, 10);
	return errno == 0 && *end == '\0';
}

static bool arg_is(const struct px_cmd *c, int i, const char *word)
{
	return c->argvlen[i] == strlen(word) &&
	       strncasecmp((const char *)c->argv[i], word, c->argvlen[i]) == 0;
}

static void count_read(struct px_cmd *c, enum skl_status st)
{
	if (st == SKL_OK)
		px_count(&c->conn->w->ctr.keyspace_hits, 1);
	else if (st == SKL_NOT_FOUND)
		px_count(&c->conn->w->ctr.keyspace_misses, 1);
}

/*
 * An expiry argument in `unit` ms (1000: seconds), absolute when `at`:
 * the ms from now, at least 1 (a time already past expires at once).
 * false with Redis's reply written when it is not a positive integer.
 */
static bool parse_expiry(struct px_cmd *c, int i, long long unit, bool at, uint64_t *ttl_ms)
{
	long long v;
	uint64_t now = clock_real_ms();

	if (!parse_ll(c->argv[i], c->argvlen[i], &v)) {
		done_error(c, "ERR value is not an integer or out of range");
		return false;
	}
	if (v <= 0 || v > LLONG_MAX / unit || (at && (uint64_t)(v * unit) > LLONG_MAX - now)) {
		resp_error(&c->reply, "ERR invalid expire time in '%s' command", c->def->name);
		px_cmd_done(c);
		return false;
	}
	v *= unit;
	if (!at)
		*ttl_ms = (uint64_t)v;
	else
		*ttl_ms = (uint64_t)v > now ? (uint64_t)v - now : 1;
	return true;
}

/* ---- the read-modify-write engine ---- */

struct rmw;
/*
 * After the read: write the reply and return true (done, nothing to write),
 * or fill m->cas (and m->val) and return false to write it.
 */
typedef bool rmw_decide(struct px_cmd *c, struct rmw *m);
/* After an applied CAS: write the reply. */
typedef void rmw_applied(struct px_cmd *c, struct rmw *m, const struct skl_result *res);

struct rmw {
	rmw_decide *decide;
	rmw_applied *applied;
	/* What the read found. */
	bool found;
	uint64_t version, ttl_left;
	uint8_t *old;
	size_t old_len;
	/* What to write. */
	struct skl_cas cas;
	uint8_t *val;
	size_t val_len;
	/* Parsed arguments. */
	int64_t num;	/* INCR: the increment */
	int64_t result; /* INCR: the new value */
	uint64_t ttl_ms;
	bool nx, xx, gt, lt, get, keep_ttl, persist, has_expiry;
	int value_arg;
};

static void rmw_free(void *p)
{
	struct rmw *m = p;

	free(m->old);
	free(m->val);
	free(m);
}

static struct rmw *rmw_new(struct px_cmd *c)
{
	struct rmw *m = calloc(1, sizeof(*m));

	if (m) {
		c->state = m;
		c->free_state = rmw_free;
	}
	return m;
}

static void rmw_read(struct px_cmd *c);

/* A key with a read-modify-write in flight on this worker, and those waiting for it. */
struct rmw_lock {
	uint64_t hash;
	struct px_cmd *wait_head, *wait_tail;
	struct rmw_lock *next;
};

static struct rmw_lock **lock_slot(struct px_worker *w, uint64_t hash)
{
	struct rmw_lock **pp = &w->locks[hash % PX_LOCK_BUCKETS];

	while (*pp && (*pp)->hash != hash)
		pp = &(*pp)->next;
	return pp;
}

static uint64_t key_hash(const struct px_cmd *c)
{
	return keyhash(c->argv[1], c->argvlen[1]);
}

/*
 * Take the key's turn: true when c may run now, false when it waits behind
 * another (started by rmw_done() of the one before it).
 */
static bool rmw_turn(struct px_cmd *c)
{
	struct px_worker *w = c->conn->w;
	struct rmw_lock **pp = lock_slot(w, key_hash(c)), *l = *pp;

	if (l) {
		if (l->wait_tail)
			l->wait_tail->next_waiter = c;
		else
			l->wait_head = c;
		l->wait_tail = c;
		c->locked = true;
		return false;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return true; /* runs unserialised: its CAS still keeps it correct */
	l->hash = key_hash(c);
	*pp = l;
	c->locked = true;
	return true;
}

static void rmw_start(struct px_cmd *c);

/* c is done: pass the key's turn to the next waiting, or free it. */
static void rmw_done(struct px_cmd *c)
{
	struct px_worker *w = c->conn->w;
	struct rmw_lock **pp, *l;
	struct px_cmd *next;

	if (!c->locked) {
		px_cmd_done(c);
		return;
	}
	pp = lock_slot(w, key_hash(c));
	l = *pp;
	px_cmd_done(c); /* c may be freed from here on */
	next = l->wait_head;
	if (!next) {
		*pp = l->next;
		free(l);
		return;
	}
	l->wait_head = next->next_waiter;
	if (!l->wait_head)
		l->wait_tail = NULL;
	next->next_waiter = NULL;
	if (w->stopping) {
		reply_status(next, SKL_CANCELLED);
		rmw_done(next);
		return;
	}
	rmw_start(next);
}

static void rmw_on_cas(void *arg, const struct skl_result *res)
{
	struct px_cmd *c = arg;
	struct rmw *m = c->state;

	c->outstanding--;
	if (res->status == SKL_OK) {
		m->applied(c, m, res);
		rmw_done(c);
		return;
	}
	if (res->status == SKL_CONFLICT || res->status == SKL_NOT_FOUND) {
		/* Another write came between the read and this one: read again. */
		px_count(&c->conn->w->ctr.cas_conflicts, 1);
		if (clock_mono_ns() < c->deadline_ns) {
			rmw_read(c);
			return;
		}
		px_count(&c->conn->w->ctr.cas_gave_up, 1);
		reply_status(c, SKL_CONFLICT);
		rmw_done(c);
		return;
	}
	reply_status(c, res->status);
	rmw_done(c);
}

static void rmw_write(struct px_cmd *c, struct rmw *m)
{
	int rc;

	m->cas.cond = SKL_CAS_VERSION;
	m->cas.version = m->found ? m->version : 0;
	rc = skl_cas(c->conn->w->agent, c->argv[1], c->argvlen[1], &m->cas, m->val, m->val_len,
		     rmw_on_cas, c);
	if (rc < 0) {
		reply_submit_error(c, rc);
		rmw_done(c);
		return;
	}
	c->outstanding++;
}

static void rmw_on_read(void *arg, const struct skl_result *res)
{
	struct px_cmd *c = arg;
	struct rmw *m = c->state;

	c->outstanding--;
	c->attempts++;
	if (res->status != SKL_OK && res->status != SKL_NOT_FOUND) {
		reply_status(c, res->status);
		rmw_done(c);
		return;
	}
	if (c->attempts == 1)
		count_read(c, res->status);
	m->found = res->status == SKL_OK;
	m->version = res->version;
	m->ttl_left = res->ttl_ms;
	free(m->old);
	m->old = NULL;
	m->old_len = 0;
	if (m->found) {
		m->old = malloc(res->value_len ? res->value_len : 1);
		if (!m->old) {
			resp_error(&c->reply, "ERR skewless: out of memory");
			rmw_done(c);
			return;
		}
		memcpy(m->old, res->value, res->value_len);
		m->old_len = res->value_len;
	}
	free(m->val);
	m->val = NULL;
	m->val_len = 0;
	m->cas = (struct skl_cas){0};
	if (m->decide(c, m)) {
		rmw_done(c);
		return;
	}
	rmw_write(c, m);
}

static void rmw_read(struct px_cmd *c)
{
	struct skl_agent *a = c->conn->w->agent;
	int rc;

	/*
	 * At the home, as the write will be: a switch that saw these reads but
	 * not the writes would take a hot counter for a read-hot key and copy
	 * it, and every write would then drop the copies first.
	 */
	rc = skl_cas(a, c->argv[1], c->argvlen[1], &(struct skl_cas){.action = SKL_CAS_READ}, NULL,
		     0, rmw_on_read, c);
	if (rc < 0) {
		reply_submit_error(c, rc);
		rmw_done(c);
		return;
	}
	c->outstanding++;
}

/* Start c's read-modify-write now, or once the one of its key before it is done. */
static void rmw_start(struct px_cmd *c)
{
	if (c->attempts == 0 && !c->locked && !rmw_turn(c))
		return;
	c->deadline_ns = clock_mono_ns() + (uint64_t)c->conn->w->px->rmw_deadline_ms * 1000000ull;
	rmw_read(c);
}

/* ---- one request, one reply ---- */

/* A single CAS whose result the handler's `after` turns into the reply. */
typedef void cas_reply(struct px_cmd *c, const struct skl_result *res);

static void on_cas_once(void *arg, const struct skl_result *res)
{
	struct px_cmd *c = arg;
	cas_reply *after = (cas_reply *)c->state;

	c->outstanding--;
	c->state = NULL;
	if (res->status == SKL_OK || res->status == SKL_NOT_FOUND || res->status == SKL_CONFLICT)
		after(c, res);
	else
		reply_status(c, res->status);
	px_cmd_done(c);
}

static void cas_once(struct px_cmd *c, const struct skl_cas *cas, const void *val, size_t len,
		     cas_reply *after)
{
	int rc;

	c->state = (void *)after;
	rc = skl_cas(c->conn->w->agent, c->argv[1], c->argvlen[1], cas, val, len, on_cas_once, c);
	if (rc < 0) {
		c->state = NULL;
		reply_submit_error(c, rc);
		px_cmd_done(c);
		return;
	}
	c->outstanding++;
}

static void on_get(void *arg, const struct skl_result *res)
{
	struct px_cmd *c = arg;

	c->outstanding--;
	count_read(c, res->status);
	if (res->status == SKL_OK)
		resp_bulk(&c->reply, res->value, res->value_len);
	else if (res->status == SKL_NOT_FOUND)
		resp_null(&c->reply, proto_of(c));
	else
		reply_status(c, res->status);
	px_cmd_done(c);
}

static void cmd_get(struct px_cmd *c)
{
	int rc = skl_get(c->conn->w->agent, c->argv[1], c->argvlen[1], NULL, on_get, c);

	if (rc < 0) {
		reply_submit_error(c, rc);
		px_cmd_done(c);
		return;
	}
	c->outstanding++;
}

static void on_put_ok(void *arg, const struct skl_result *res)
{
	struct px_cmd *c = arg;

	c->outstanding--;
	if (res->status == SKL_OK)
		resp_simple(&c->reply, "OK");
	else
		reply_status(c, res->status);
	px_cmd_done(c);
}

static void reply_ok_if_applied(struct px_cmd *c, const struct skl_result *res)
{
	if (res->status == SKL_OK)
		resp_simple(&c->reply, "OK");
	else
		resp_null(&c->reply, proto_of(c)); /* NX or XX did not hold */
}

/*
 * An unconditional write of argv[1] = argv[vi] with ttl_ms (0: none): a PUT
 * through the switch, or a CAS when the ttl does not fit the PUT's 32 bits.
 */
static void put_value(struct px_cmd *c, int vi, uint64_t ttl_ms)
{
	int rc;

	if (ttl_ms > UINT32_MAX) {
		cas_once(c, &(struct skl_cas){.ttl_ms = ttl_ms}, c->argv[vi], c->argvlen[vi],
			 reply_ok_if_applied);
		return;
	}
	rc = skl_put(c->conn->w->agent, c->argv[1], c->argvlen[1], c->argv[vi], c->argvlen[vi],
		     &(struct skl_call_opts){.ttl_ms = (uint32_t)ttl_ms}, on_put_ok, c);
	if (rc < 0) {
		reply_submit_error(c, rc);
		px_cmd_done(c);
		return;
	}
	c->outstanding++;
}

/* ---- SET and its kin ---- */

/* SET ... GET: reply the old value; write unless NX/XX says otherwise. */
static bool set_get_decide(struct px_cmd *c, struct rmw *m)
{
	if ((m->nx && m->found) || (m->xx && !m->found)) {
		if (m->found)
			resp_bulk(&c->reply, m->old, m->old_len);
		else
			resp_null(&c->reply, proto_of(c));
		return true;
	}
	m->val_len = c->argvlen[m->value_arg];
	m->val = malloc(m->val_len ? m->val_len : 1);
	if (!m->val) {
		resp_error(&c->reply, "ERR skewless: out of memory");
		return true;
	}
	memcpy(m->val, c->argv[m->value_arg], m->val_len);
	m->cas.action = SKL_CAS_SET;
	m->cas.keep_ttl = m->keep_ttl;
	m->cas.ttl_ms = m->keep_ttl ? 0 : m->ttl_ms;
	return false;
}

static void set_get_applied(struct px_cmd *c, struct rmw *m, const struct skl_result *res)
{
	(void)res;
	if (m->found)
		resp_bulk(&c->reply, m->old, m->old_len);
	else
		resp_null(&c->reply, proto_of(c));
}

static void cmd_set(struct px_cmd *c)
{
	struct rmw o = {.value_arg = 2};
	bool expiry = false;

	for (int j = 3; j < c->argc; j++) {
		bool more = j + 1 < c->argc;

		if (arg_is(c, j, "nx") && !o.xx) {
			o.nx = true;
		} else if (arg_is(c, j, "xx") && !o.nx) {
			o.xx = true;
		} else if (arg_is(c, j, "get")) {
			o.get = true;
		} else if (arg_is(c, j, "keepttl") && !expiry) {
			o.keep_ttl = expiry = true;
		} else if (more && !expiry &&
			   (arg_is(c, j, "ex") || arg_is(c, j, "px") || arg_is(c, j, "exat") ||
			    arg_is(c, j, "pxat"))) {
			bool secs = arg_is(c, j, "ex") || arg_is(c, j, "exat");
			bool at = arg_is(c, j, "exat") || arg_is(c, j, "pxat");

			expiry = true;
			if (!parse_expiry(c, ++j, secs ? 1000 : 1, at, &o.ttl_ms))
				return;
		} else {
			done_error(c, "ERR syntax error");
			return;
		}
	}
	if (!value_ok(c, c->argvlen[2]))
		return;
	if (o.get) {
		struct rmw *m = rmw_new(c);

		if (!m) {
			done_error(c, "ERR skewless: out of memory");
			return;
		}
		*m = o;
		m->decide = set_get_decide;
		m->applied = set_get_applied;
		rmw_start(c);
		return;
	}
	if (o.nx || o.xx || o.keep_ttl) {
		struct skl_cas cas = {.cond = o.nx   ? SKL_CAS_VERSION
					      : o.xx ? SKL_CAS_LIVE
						     : SKL_CAS_ANY,
				      .keep_ttl = o.keep_ttl,
				      .ttl_ms = o.ttl_ms};

		cas_once(c, &cas, c->argv[2], c->argvlen[2], reply_ok_if_applied);
		return;
	}
	put_value(c, 2, o.ttl_ms);
}

static void setnx_reply(struct px_cmd *c, const struct skl_result *res)
{
	resp_int(&c->reply, res->status == SKL_OK);
}

static void cmd_setnx(struct px_cmd *c)
{
	if (!value_ok(c, c->argvlen[2]))
		return;
	cas_once(c, &(struct skl_cas){.cond = SKL_CAS_VERSION}, c->argv[2], c->argvlen[2],
		 setnx_reply);
}

/* SETEX key seconds value, PSETEX key milliseconds value. */
static void cmd_setex(struct px_cmd *c)
{
	uint64_t ttl_ms;

	if (!parse_expiry(c, 2, c->def->name[0] == 'p' ? 1 : 1000, false, &ttl_ms) ||
	    !value_ok(c, c->argvlen[3]))
		return;
	put_value(c, 3, ttl_ms);
}

/* GETDEL: the value, deleted at the version read. */
static bool getdel_decide(struct px_cmd *c, struct rmw *m)
{
	if (!m->found) {
		resp_null(&c->reply, proto_of(c));
		return true;
	}
	m->cas.action = SKL_CAS_DEL;
	return false;
}

static void reply_old(struct px_cmd *c, struct rmw *m, const struct skl_result *res)
{
	(void)res;
	resp_bulk(&c->reply, m->old, m->old_len);
}

static void cmd_getdel(struct px_cmd *c)
{
	struct rmw *m = rmw_new(c);

	if (!m) {
		done_error(c, "ERR skewless: out of memory");
		return;
	}
	m->decide = getdel_decide;
	m->applied = reply_old;
	rmw_start(c);
}

/* GETEX: the value, with a new expiry (or none: PERSIST) at the version read. */
static bool getex_decide(struct px_cmd *c, struct rmw *m)
{
	if (!m->found) {
		resp_null(&c->reply, proto_of(c));
		return true;
	}
	m->cas.action = SKL_CAS_EXPIRE;
	m->cas.ttl_ms = m->persist ? 0 : m->ttl_ms;
	return false;
}

static void cmd_getex(struct px_cmd *c)
{
	struct rmw o = {0};

	for (int j = 2; j < c->argc; j++) {
		bool more = j + 1 < c->argc;

		if (arg_is(c, j, "persist") && !o.has_expiry) {
			o.persist = o.has_expiry = true;
		} else if (more && !o.has_expiry &&
			   (arg_is(c, j, "ex") || arg_is(c, j, "px") || arg_is(c, j, "exat") ||
			    arg_is(c, j, "pxat"))) {
			bool secs = arg_is(c, j, "ex") || arg_is(c, j, "exat");
			bool at = arg_is(c, j, "exat") || arg_is(c, j, "pxat");

			o.has_expiry = true;
			if (!parse_expiry(c, ++j, secs ? 1000 : 1, at, &o.ttl_ms))
				return;
		} else {
			done_error(c, "ERR syntax error");
			return;
		}
	}
	if (!o.has_expiry) {
		cmd_get(c);
		return;
	}
	struct rmw *m = rmw_new(c);

	if (!m) {
		done_error(c, "ERR skewless: out of memory");
		return;
	}
	*m = o;
	m->decide = getex_decide;
	m->applied = reply_old;
	rmw_start(c);
}

/* ---- counters and APPEND ---- */

static bool incr_decide(struct px_cmd *c, struct rmw *m)
{
	long long old = 0;
	char buf[32];

	if (m->found && !parse_ll(m->old, m->old_len, &old)) {
		resp_error(&c->reply, "ERR value is not an integer or out of range");
		return true;
	}
	if ((m->num < 0 && old < LLONG_MIN - m->num) || (m->num > 0 && old > LLONG_MAX - m->num)) {
		resp_error(&c->reply, "ERR increment or decrement would overflow");
		return true;
	}
	m->result = old + m->num;
	m->val_len = (size_t)snprintf(buf, sizeof(buf), "%lld", (long long)(old + m->num));
	m->val = malloc(m->val_len);
	if (!m->val) {
		resp_error(&c->reply, "ERR skewless: out of memory");
		return true;
	}
	memcpy(m->val, buf, m->val_len);
	m->cas.action = SKL_CAS_SET;
	m->cas.keep_ttl = 1;
	return false;
}

static void incr_applied(struct px_cmd *c, struct rmw *m, const struct skl_result *res)
{
	(void)res;
	resp_int(&c->reply, m->result);
}

/* INCR, DECR, INCRBY key n, DECRBY key n. */
static void cmd_incr(struct px_cmd *c)
{
	bool decr = c->def->name[0] == 'd';
	long long by = 1;
	struct rmw *m;

	if (c->argc == 3 && !parse_ll(c->argv[2], c->argvlen[2], &by)) {
		done_error(c, "ERR value is not an integer or out of range");
		return;
	}
	if (decr && by == LLONG_MIN) {
		done_error(c, "ERR decrement would overflow");
		return;
	}
	m = rmw_new(c);
	if (!m) {
		done_error(c, "ERR skewless: out of memory");
		return;
	}
	m->num = decr ? -by : by;
	m->decide = incr_decide;
	m->applied = incr_applied;
	rmw_start(c);
}

static bool append_decide(struct px_cmd *c, struct rmw *m)
{
	size_t add = c->argvlen[2];

	m->val_len = m->old_len + add;
	if (m->val_len > c->conn->w->px->max_value) {
		resp_error(&c->reply,
			   "ERR string exceeds maximum allowed size (%" PRIu32
			   " bytes, service.max_value): nothing stored",
			   c->conn->w->px->max_value);
		return true;
	}
	m->val = malloc(m->val_len ? m->val_len : 1);
	if (!m->val) {
		resp_error(&c->reply, "ERR skewless: out of memory");
		return true;
	}
	if (m->old_len)
		memcpy(m->val, m->old, m->old_len);
	memcpy(m->val + m->old_len, c->argv[2], add);
	m->cas.action = SKL_CAS_SET;
	m->cas.keep_ttl = 1;
	return false;
}

static void append_applied(struct px_cmd *c, struct rmw *m, const struct skl_result *res)
{
	(void)res;
	resp_int(&c->reply, (int64_t)m->val_len);
}

static void cmd_append(struct px_cmd *c)
{
	struct rmw *m = rmw_new(c);

	if (!m) {
		done_error(c, "ERR skewless: out of memory");
		return;
	}
	m->decide = append_decide;
	m->applied = append_applied;
	rmw_start(c);
}

/* ---- expiry ---- */

static void expire_reply(struct px_cmd *c, const struct skl_result *res)
{
	resp_int(&c->reply, res->status == SKL_OK);
}

/* EXPIRE ... NX|XX|GT|LT, PERSIST: decided on the ttl read, written at its version. */
static bool expire_decide(struct px_cmd *c, struct rmw *m)
{
	bool has_ttl = m->ttl_left != 0;

	/* No ttl counts as an infinite one for GT and LT, as in Redis. */
	if (!m->found || (m->nx && has_ttl) || (m->xx && !has_ttl) ||
	    (m->gt && (!has_ttl || m->ttl_ms <= m->ttl_left)) ||
	    (m->lt && has_ttl && m->ttl_ms >= m->ttl_left) || (m->persist && !has_ttl)) {
		resp_int(&c->reply, 0);
		return true;
	}
	m->cas.action = SKL_CAS_EXPIRE;
	m->cas.ttl_ms = m->persist ? 0 : m->ttl_ms;
	return false;
}

static void reply_one(struct px_cmd *c, struct rmw *m, const struct skl_result *res)
{
	(void)m, (void)res;
	resp_int(&c->reply, 1);
}

/* EXPIRE key s, PEXPIRE key ms, EXPIREAT key unix-s, PEXPIREAT key unix-ms; [NX|XX|GT|LT]. */
static void cmd_expire(struct px_cmd *c)
{
	const char *n = c->def->name;
	bool ms = n[0] == 'p', at = strstr(n, "at") != NULL;
	struct rmw o = {0};
	long long v;

	for (int j = 3; j < c->argc; j++) {
		if (arg_is(c, j, "nx"))
			o.nx = true;
		else if (arg_is(c, j, "xx"))
			o.xx = true;
		else if (arg_is(c, j, "gt"))
			o.gt = true;
		else if (arg_is(c, j, "lt"))
			o.lt = true;
		else {
			resp_error(&c->reply, "ERR Unsupported option %.*s", (int)c->argvlen[j],
				   (const char *)c->argv[j]);
			px_cmd_done(c);
			return;
		}
	}
	if (o.nx && (o.xx || o.gt || o.lt)) {
		done_error(c,
			   "ERR NX and XX, GT or LT options at the same time are not compatible");
		return;
	}
	if (o.gt && o.lt) {
		done_error(c, "ERR GT and LT options at the same time are not compatible");
		return;
	}
	if (!parse_ll(c->argv[2], c->argvlen[2], &v)) {
		done_error(c, "ERR value is not an integer or out of range");
		return;
	}
	if (!ms && (v > LLONG_MAX / 1000 || v < LLONG_MIN / 1000)) {
		resp_error(&c->reply, "ERR invalid expire time in '%s' command", n);
		px_cmd_done(c);
		return;
	}
	v *= ms ? 1 : 1000;
	if (at)
		v -= (long long)clock_real_ms();
	if (v <= 0) {
		/* A time already past: the key is deleted, as Redis does. */
		if (o.nx || o.xx || o.gt || o.lt) {
			o.ttl_ms = 1;
		} else {
			cas_once(c, &(struct skl_cas){.cond = SKL_CAS_LIVE, .action = SKL_CAS_DEL},
				 NULL, 0, expire_reply);
			return;
		}
	} else {
		o.ttl_ms = (uint64_t)v;
	}
	if (!(o.nx || o.xx || o.gt || o.lt)) {
		cas_once(c,
			 &(struct skl_cas){
			     .cond = SKL_CAS_LIVE, .action = SKL_CAS_EXPIRE, .ttl_ms = o.ttl_ms},
			 NULL, 0, expire_reply);
		return;
	}
	struct rmw *m = rmw_new(c);

	if (!m) {
		done_error(c, "ERR skewless: out of memory");
		return;
	}
	*m = o;
	m->has_expiry = true;
	m->decide = expire_decide;
	m->applied = reply_one;
	rmw_start(c);
}

static void cmd_persist(struct px_cmd *c)
{
	struct rmw *m = rmw_new(c);

	if (!m) {
		done_error(c, "ERR skewless: out of memory");
		return;
	}
	m->persist = true;
	m->decide = expire_decide;
	m->applied = reply_one;
	rmw_start(c);
}

static void ttl_reply(struct px_cmd *c, const struct skl_result *res)
{
	bool ms = c->def->name[0] == 'p';

	if (res->status != SKL_OK)
		resp_int(&c->reply, -2);
	else if (res->ttl_ms == 0)
		resp_int(&c->reply, -1);
	else
		resp_int(&c->reply,
			 ms ? (int64_t)res->ttl_ms : (int64_t)(res->ttl_ms + 500) / 1000);
}

static void cmd_ttl(struct px_cmd *c)
{
	cas_once(c, &(struct skl_cas){.action = SKL_CAS_READ}, NULL, 0, ttl_reply);
}

/* ---- several keys: one request per key, one reply ---- */

struct multi {
	struct px_cmd *c;
	int n;
	struct multi_key {
		struct multi *m;
		enum skl_status status;
		uint8_t *value;
		size_t value_len;
	} k[];
};

static void multi_free(void *p)
{
	struct multi *m = p;

	for (int i = 0; i < m->n; i++)
		free(m->k[i].value);
	free(m);
}

/* Every key answered: the reply, by command. */
static void multi_reply(struct px_cmd *c, struct multi *m)
{
	const char *n = c->def->name;
	int64_t count = 0;

	/* A failure the agent could not hide fails the command, as a node error would. */
	for (int i = 0; i < m->n; i++)
		if (m->k[i].status != SKL_OK && m->k[i].status != SKL_NOT_FOUND) {
			reply_status(c, m->k[i].status);
			return;
		}
	if (!strcmp(n, "mget")) {
		resp_array(&c->reply, (size_t)m->n);
		for (int i = 0; i < m->n; i++) {
			if (m->k[i].status == SKL_OK)
				resp_bulk(&c->reply, m->k[i].value, m->k[i].value_len);
			else
				resp_null(&c->reply, proto_of(c));
		}
		return;
	}
	if (!strcmp(n, "mset")) {
		resp_simple(&c->reply, "OK");
		return;
	}
	for (int i = 0; i < m->n; i++)
		count += m->k[i].status == SKL_OK;
	resp_int(&c->reply, count);
}

static void on_multi(void *arg, const struct skl_result *res)
{
	struct multi_key *k = arg;
	struct multi *m = k->m;
	struct px_cmd *c = m->c;

	c->outstanding--;
	k->status = res->status;
	if (res->op == SKL_OP_GET) {
		count_read(c, res->status);
		if (res->status == SKL_OK && !strcmp(c->def->name, "mget")) {
			k->value = malloc(res->value_len ? res->value_len : 1);
			if (k->value) {
				memcpy(k->value, res->value, res->value_len);
				k->value_len = res->value_len;
			} else {
				k->status = SKL_INTERNAL;
			}
		}
	}
	if (c->outstanding == 0) {
		multi_reply(c, m);
		px_cmd_done(c);
	}
}

/* MGET, EXISTS, TOUCH (GETs), DEL, UNLINK (DELs), MSET (PUTs). */
static void cmd_multi(struct px_cmd *c)
{
	const char *n = c->def->name;
	bool mset = !strcmp(n, "mset"), del = !strcmp(n, "del") || !strcmp(n, "unlink");
	int step = mset ? 2 : 1, nkeys = (c->argc - 1) / step;
	struct skl_agent *a = c->conn->w->agent;
	struct multi *m;

	if (mset && (c->argc - 1) % 2) {
		done_error(c, "ERR wrong number of arguments for 'mset' command");
		return;
	}
	for (int i = 2; mset && i < c->argc; i += 2)
		if (!value_ok(c, c->argvlen[i]))
			return;
	m = calloc(1, sizeof(*m) + (size_t)nkeys * sizeof(m->k[0]));
	if (!m) {
		done_error(c, "ERR skewless: out of memory");
		return;
	}
	m->c = c;
	m->n = nkeys;
	c->state = m;
	c->free_state = multi_free;
	for (int i = 0; i < nkeys; i++) {
		const uint8_t *key = c->argv[1 + i * step];
		size_t klen = c->argvlen[1 + i * step];
		int rc;

		m->k[i].m = m;
		if (mset)
			rc = skl_put(a, key, klen, c->argv[2 + i * 2], c->argvlen[2 + i * 2], NULL,
				     on_multi, &m->k[i]);
		else if (del)
			rc = skl_del(a, key, klen, NULL, on_multi, &m->k[i]);
		else
			rc = skl_get(a, key, klen, NULL, on_multi, &m->k[i]);
		if (rc < 0) {
			/* Those submitted complete on their own; this one fails the command. */
			if (rc == -EBUSY)
				px_count(&c->conn->w->ctr.busy, 1);
			m->k[i].status = SKL_OVERLOADED;
			for (int j = i + 1; j < nkeys; j++)
				m->k[j].status = SKL_OVERLOADED;
			break;
		}
		c->outstanding++;
	}
	if (c->outstanding == 0) {
		multi_reply(c, m);
		px_cmd_done(c);
	}
}

/* ---- connection and server commands ---- */

static void cmd_ping(struct px_cmd *c)
{
	if (c->argc == 2)
		resp_bulk(&c->reply, c->argv[1], c->argvlen[1]);
	else
		resp_simple(&c->reply, "PONG");
	px_cmd_done(c);
}

static void cmd_echo(struct px_cmd *c)
{
	resp_bulk(&c->reply, c->argv[1], c->argvlen[1]);
	px_cmd_done(c);
}

static void cmd_quit(struct px_cmd *c)
{
	resp_simple(&c->reply, "OK");
	c->conn->quit = true;
	px_cmd_done(c);
}

static void cmd_select(struct px_cmd *c)
{
	long long db;

	if (!parse_ll(c->argv[1], c->argvlen[1], &db))
		resp_error(&c->reply, "ERR value is not an integer or out of range");
	else if (db != 0)
		resp_error(&c->reply, "ERR DB index is out of range");
	else
		resp_simple(&c->reply, "OK");
	px_cmd_done(c);
}

/* Client names: printable, no spaces (Redis's rule). */
static bool name_ok(const uint8_t *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < '!' || s[i] > '~')
			return false;
	return true;
}

static void set_name(struct px_conn *conn, const uint8_t *s, size_t len)
{
	if (len >= sizeof(conn->name))
		len = sizeof(conn->name) - 1;
	memcpy(conn->name, s, len);
	conn->name[len] = '\0';
}

static void cmd_hello(struct px_cmd *c)
{
	struct px_conn *conn = c->conn;
	long long ver = conn->proto;
	const uint8_t *name = NULL;
	size_t name_len = 0;

	if (c->argc >= 2) {
		if (!parse_ll(c->argv[1], c->argvlen[1], &ver)) {
			done_error(c, "ERR Protocol version is not an integer or out of range");
			return;
		}
		if (ver < 2 || ver > 3) {
			done_error(c, "NOPROTO unsupported protocol version");
			return;
		}
	}
	for (int j = 2; j < c->argc; j++) {
		bool more = j + 1 < c->argc;

		if (arg_is(c, j, "auth") && j + 2 < c->argc) {
			/* No authentication in the proxy: the default user has no password. */
			if (!arg_is(c, j + 1, "default")) {
				done_error(c, "WRONGPASS invalid username-password pair or user is "
					      "disabled.");
				return;
			}
			j += 2;
		} else if (arg_is(c, j, "setname") && more) {
			name = c->argv[++j];
			name_len = c->argvlen[j];
			if (!name_ok(name, name_len)) {
				done_error(c, "ERR Client names cannot contain spaces, newlines or "
					      "special characters.");
				return;
			}
		} else {
			resp_error(&c->reply, "ERR Syntax error in HELLO option '%.*s'",
				   (int)c->argvlen[j], (const char *)c->argv[j]);
			px_cmd_done(c);
			return;
		}
	}
	if (name)
		set_name(conn, name, name_len);
	conn->proto = (int)ver;
	resp_map(&c->reply, 7, conn->proto);
	resp_bulk_str(&c->reply, "server");
	resp_bulk_str(&c->reply, "redis");
	resp_bulk_str(&c->reply, "version");
	resp_bulk_str(&c->reply, "7.0.0");
	resp_bulk_str(&c->reply, "proto");
	resp_int(&c->reply, conn->proto);
	resp_bulk_str(&c->reply, "id");
	resp_int(&c->reply, (int64_t)conn->id);
	resp_bulk_str(&c->reply, "mode");
	resp_bulk_str(&c->reply, "standalone");
	resp_bulk_str(&c->reply, "role");
	resp_bulk_str(&c->reply, "master");
	resp_bulk_str(&c->reply, "modules");
	resp_array(&c->reply, 0);
	px_cmd_done(c);
}

static void unknown_subcommand(struct px_cmd *c, const char *cmd)
{
	resp_error(&c->reply, "ERR unknown subcommand '%.128s'. Try %s HELP.",
		   (const char *)c->argv[1], cmd);
	px_cmd_done(c);
}

static void wrong_arity(struct px_cmd *c, const char *fullname)
{
	resp_error(&c->reply, "ERR wrong number of arguments for '%s' command", fullname);
	px_cmd_done(c);
}

static void cmd_client(struct px_cmd *c)
{
	struct px_conn *conn = c->conn;

	if (arg_is(c, 1, "setname")) {
		if (c->argc != 3)
			return wrong_arity(c, "client|setname");
		if (!name_ok(c->argv[2], c->argvlen[2]))
			return done_error(c, "ERR Client names cannot contain spaces, newlines or "
					     "special characters.");
		set_name(conn, c->argv[2], c->argvlen[2]);
		resp_simple(&c->reply, "OK");
	} else if (arg_is(c, 1, "getname")) {
		if (c->argc != 2)
			return wrong_arity(c, "client|getname");
		if (conn->name[0])
			resp_bulk_str(&c->reply, conn->name);
		else
			resp_null(&c->reply, conn->proto);
	} else if (arg_is(c, 1, "id")) {
		if (c->argc != 2)
			return wrong_arity(c, "client|id");
		resp_int(&c->reply, (int64_t)conn->id);
	} else if (arg_is(c, 1, "setinfo")) {
		/* Clients announce their library (redis-py does): taken, not kept. */
		if (c->argc != 4)
			return wrong_arity(c, "client|setinfo");
		resp_simple(&c->reply, "OK");
	} else {
		return unknown_subcommand(c, "CLIENT");
	}
	px_cmd_done(c);
}

/*
 * CONFIG GET: the few parameters clients ask for at start (redis-benchmark
 * reads save and appendonly), answered for the proxy, which keeps nothing.
 */
static void cmd_config(struct px_cmd *c)
{
	static const char *const params[][2] = {
	    {"save", ""}, {"appendonly", "no"}, {"databases", "1"}};
	unsigned n = 0;
	bool match[sizeof(params) / sizeof(params[0])] = {0};

	if (!arg_is(c, 1, "get"))
		return unknown_subcommand(c, "CONFIG");
	if (c->argc < 3)
		return wrong_arity(c, "config|get");
	for (unsigned i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		for (int j = 2; j < c->argc && !match[i]; j++)
			if (fnmatch((const char *)c->argv[j], params[i][0], FNM_CASEFOLD) == 0) {
				match[i] = true;
				n++;
			}
	resp_map(&c->reply, n, c->conn->proto);
	for (unsigned i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (match[i]) {
			resp_bulk_str(&c->reply, params[i][0]);
			resp_bulk_str(&c->reply, params[i][1]);
		}
	px_cmd_done(c);
}

static void flag_names(const struct px_command *d, const char **out, unsigned *n)
{
	*n = 0;
	if (d->flags & PX_F_WRITE)
		out[(*n)++] = "write";
	if (d->flags & PX_F_READONLY)
		out[(*n)++] = "readonly";
	if (d->flags & PX_F_FAST)
		out[(*n)++] = "fast";
	if (d->flags & PX_F_NOKEYS) {
		out[(*n)++] = "loading";
		out[(*n)++] = "stale";
	}
}

/* One command's COMMAND INFO entry (Redis 7's ten fields). */
static void command_info(struct px_cmd *c, const struct px_command *d)
{
	const char *flags[4];
	unsigned nflags;
	int proto = c->conn->proto;

	flag_names(d, flags, &nflags);
	resp_array(&c->reply, 10);
	resp_bulk_str(&c->reply, d->name);
	resp_int(&c->reply, d->arity);
	resp_set(&c->reply, nflags, proto);
	for (unsigned i = 0; i < nflags; i++)
		resp_simple(&c->reply, flags[i]);
	resp_int(&c->reply, d->first_key);
	resp_int(&c->reply, d->last_key);
	resp_int(&c->reply, d->key_step);
	resp_set(&c->reply, 0, proto);
	resp_array(&c->reply, 0);
	resp_array(&c->reply, 0);
	resp_array(&c->reply, 0);
}

static void command_docs(struct px_cmd *c, const struct px_command *d)
{
	int proto = c->conn->proto;

	resp_bulk_str(&c->reply, d->name);
	resp_map(&c->reply, 3, proto);
	resp_bulk_str(&c->reply, "summary");
	resp_bulk_str(&c->reply, d->summary);
	resp_bulk_str(&c->reply, "since");
	resp_bulk_str(&c->reply, d->since);
	resp_bulk_str(&c->reply, "group");
	resp_bulk_str(&c->reply, d->group);
}

static void cmd_command(struct px_cmd *c)
{
	if (c->argc == 1) {
		resp_array(&c->reply, px_ncommands);
		for (unsigned i = 0; i < px_ncommands; i++)
			command_info(c, &px_commands[i]);
	} else if (arg_is(c, 1, "count")) {
		if (c->argc != 2)
			return wrong_arity(c, "command|count");
		resp_int(&c->reply, px_ncommands);
	} else if (arg_is(c, 1, "docs")) {
		unsigned n = 0;

		for (int j = 2; j < c->argc; j++)
			n += px_command_find(c->argv[j], c->argvlen[j]) != NULL;
		resp_map(&c->reply, c->argc == 2 ? px_ncommands : n, c->conn->proto);
		for (unsigned i = 0; c->argc == 2 && i < px_ncommands; i++)
			command_docs(c, &px_commands[i]);
		for (int j = 2; j < c->argc; j++) {
			const struct px_command *d = px_command_find(c->argv[j], c->argvlen[j]);

			if (d)
				command_docs(c, d);
		}
	} else if (arg_is(c, 1, "info")) {
		resp_array(&c->reply, (size_t)(c->argc - 2));
		for (int j = 2; j < c->argc; j++) {
			const struct px_command *d = px_command_find(c->argv[j], c->argvlen[j]);

			if (d)
				command_info(c, d);
			else
				resp_null_array(&c->reply, c->conn->proto);
		}
	} else {
		return unknown_subcommand(c, "COMMAND");
	}
	px_cmd_done(c);
}

static void cmd_info(struct px_cmd *c)
{
	char section[32] = "";

	if (c->argc >= 2 && c->argvlen[1] < sizeof(section)) {
		memcpy(section, c->argv[1], c->argvlen[1]);
		section[c->argvlen[1]] = '\0';
	}
	struct rbuf text = {0};

	if (px_info(c->conn->w->px, section, &text) == 0)
		resp_bulk(&c->reply, text.p, text.len);
	else
		resp_error(&c->reply, "ERR skewless: out of memory");
	rbuf_free(&text);
	px_cmd_done(c);
}

/* ---- the table ---- */

#define W  PX_F_WRITE
#define R  PX_F_READONLY
#define F  PX_F_FAST
#define NK PX_F_NOKEYS

const struct px_command px_commands[] = {
    /* name, arity, flags, first, last, step, handler, group, since, summary */
    {"get", 2, R | F, 1, 1, 1, cmd_get, "string", "1.0.0", "Returns the string value of a key."},
    {"set", -3, W, 1, 1, 1, cmd_set, "string", "1.0.0",
     "Sets the string value of a key, ignoring its type. The key is created if it doesn't "
     "exist."},
    {"setnx", 3, W | F, 1, 1, 1, cmd_setnx, "string", "1.0.0",
     "Set the string value of a key only when the key doesn't exist."},
    {"setex", 4, W, 1, 1, 1, cmd_setex, "string", "2.0.0",
     "Sets the string value and expiration time of a key."},
    {"psetex", 4, W, 1, 1, 1, cmd_setex, "string", "2.6.0",
     "Sets both string value and expiration time in milliseconds of a key."},
    {"getdel", 2, W | F, 1, 1, 1, cmd_getdel, "string", "6.2.0",
     "Returns the string value of a key after deleting the key."},
    {"getex", -2, W | F, 1, 1, 1, cmd_getex, "string", "6.2.0",
     "Returns the string value of a key after setting its expiration time."},
    {"mget", -2, R | F, 1, -1, 1, cmd_multi, "string", "1.0.0",
     "Returns the string values of one or more keys (in skewless: one GET per key)."},
    {"mset", -3, W, 1, -1, 2, cmd_multi, "string", "1.0.1",
     "Sets the string values of one or more keys (in skewless: per key, not atomically)."},
    {"incr", 2, W | F, 1, 1, 1, cmd_incr, "string", "1.0.0",
     "Increments the integer value of a key by one."},
    {"decr", 2, W | F, 1, 1, 1, cmd_incr, "string", "1.0.0",
     "Decrements the integer value of a key by one."},
    {"incrby", 3, W | F, 1, 1, 1, cmd_incr, "string", "1.0.0",
     "Increments the integer value of a key by a number."},
    {"decrby", 3, W | F, 1, 1, 1, cmd_incr, "string", "1.0.0",
     "Decrements a number from the integer value of a key."},
    {"append", 3, W, 1, 1, 1, cmd_append, "string", "2.0.0",
     "Appends a string to the value of a key. Creates the key if it doesn't exist."},
    {"del", -2, W, 1, -1, 1, cmd_multi, "generic", "1.0.0", "Deletes one or more keys."},
    {"unlink", -2, W | F, 1, -1, 1, cmd_multi, "generic", "4.0.0", "Deletes one or more keys."},
    {"exists", -2, R | F, 1, -1, 1, cmd_multi, "generic", "1.0.0",
     "Determines whether one or more keys exist."},
    {"touch", -2, R | F, 1, -1, 1, cmd_multi, "generic", "3.2.1",
     "Returns the number of existing keys out of those specified."},
    {"expire", -3, W | F, 1, 1, 1, cmd_expire, "generic", "1.0.0",
     "Sets the expiration time of a key in seconds."},
    {"pexpire", -3, W | F, 1, 1, 1, cmd_expire, "generic", "2.6.0",
     "Sets the expiration time of a key in milliseconds."},
    {"expireat", -3, W | F, 1, 1, 1, cmd_expire, "generic", "1.2.0",
     "Sets the expiration time of a key to a Unix timestamp."},
    {"pexpireat", -3, W | F, 1, 1, 1, cmd_expire, "generic", "2.6.0",
     "Sets the expiration time of a key to a Unix milliseconds timestamp."},
    {"ttl", 2, R | F, 1, 1, 1, cmd_ttl, "generic", "1.0.0",
     "Returns the expiration time in seconds of a key."},
    {"pttl", 2, R | F, 1, 1, 1, cmd_ttl, "generic", "2.6.0",
     "Returns the expiration time in milliseconds of a key."},
    {"persist", 2, W | F, 1, 1, 1, cmd_persist, "generic", "2.2.0",
     "Removes the expiration time of a key."},
    {"ping", -1, F | NK, 0, 0, 0, cmd_ping, "connection", "1.0.0",
     "Returns the server's liveliness response."},
    {"echo", 2, F | NK, 0, 0, 0, cmd_echo, "connection", "1.0.0", "Returns the given string."},
    {"quit", -1, F | NK, 0, 0, 0, cmd_quit, "connection", "1.0.0", "Closes the connection."},
    {"select", 2, F | NK, 0, 0, 0, cmd_select, "connection", "2.0.0",
     "Changes the selected database (skewless has database 0 only)."},
    {"hello", -1, F | NK, 0, 0, 0, cmd_hello, "connection", "6.0.0", "Handshakes with the server."},
    {"client", -2, NK, 0, 0, 0, cmd_client, "connection", "2.4.0",
     "A container for client connection commands (SETNAME, GETNAME, ID, SETINFO)."},
    {"command", -1, NK, 0, 0, 0, cmd_command, "server", "2.8.13",
     "Returns detailed information about all commands."},
    {"config", -2, NK, 0, 0, 0, cmd_config, "server", "2.0.0",
     "A container for server configuration commands (GET: save, appendonly, databases)."},
    {"info", -1, NK, 0, 0, 0, cmd_info, "server", "1.0.0",
     "Returns information and statistics about the server."},
};

#undef W
#undef R
#undef F
#undef NK

const unsigned px_ncommands = sizeof(px_commands) / sizeof(px_commands[0]);

const struct px_command *px_command_find(const uint8_t *name, size_t len)
{
	for (unsigned i = 0; i < px_ncommands; i++)
		if (strlen(px_commands[i].name) == len &&
		    strncasecmp(px_commands[i].name, (const char *)name, len) == 0)
			return &px_commands[i];
	return NULL;
}

/*
 * Redis's rejection of an unknown command: its name, then the first
 * arguments, each quoted, until 128 bytes of them.
 */
static void unknown_command(struct px_cmd *c)
{
	char args[256] = "";
	size_t used = 0;

	for (int i = 1; i < c->argc && used < 128; i++) {
		int n = snprintf(args + used, sizeof(args) - used, "'%.*s' ", (int)(128 - used),
				 (const char *)c->argv[i]);

		if (n < 0)
			break;
		used += (size_t)n < sizeof(args) - used ? (size_t)n : sizeof(args) - used - 1;
	}
	resp_error(&c->reply, "ERR unknown command '%.128s', with args beginning with: %s",
		   (const char *)c->argv[0], args);
	px_cmd_done(c);
}

static bool arity_ok(const struct px_command *d, int argc)
{
	return !((d->arity > 0 && argc != d->arity) || argc < -d->arity ||
		 (d->proc == cmd_ping && argc > 2));
}

int px_cmd_prepare(struct px_cmd *c)
{
	const struct px_command *d = px_command_find(c->argv[0], c->argvlen[0]);
	int last;

	c->def = d;
	c->nkeys = 0;
	if (!d || d->first_key <= 0 || !arity_ok(d, c->argc))
		return 0;
	last = d->last_key < 0 ? c->argc + d->last_key : d->last_key;
	if (last < d->first_key)
		return 0;
	c->keys = malloc(sizeof(*c->keys) * (size_t)((last - d->first_key) / d->key_step + 1));
	if (!c->keys)
		return -ENOMEM;
	for (int i = d->first_key; i <= last; i += d->key_step)
		c->keys[c->nkeys++] = keyhash(c->argv[i], c->argvlen[i]);
	return 0;
}

void px_dispatch(struct px_cmd *c)
{
	const struct px_command *d = c->def;
	struct px_worker *w = c->conn->w;

	px_count(&w->ctr.commands_processed, 1);
	if (!d) {
		unknown_command(c);
		return;
	}
	px_count(&w->calls[d - px_commands], 1);
	if (!arity_ok(d, c->argc)) {
		wrong_arity(c, d->name);
		return;
	}
	if (!keys_ok(c))
		return;
	d->proc(c);
}
