/*
 * proxy.h - skewless-proxy, a RESP front door to a skewless cluster.
 *
 * The proxy translates: each Redis command becomes one or more libskewless
 * requests, and routing, fallback, consistency, retries and deadlines stay
 * in the library. Each worker thread owns one libskewless agent, one epoll
 * loop and a listening socket of its own on the shared address
 * (SO_REUSEPORT: the kernel spreads connections over the workers), so a
 * connection and every request it makes live on one thread and nothing on
 * the data path is shared.
 *
 *   resp.c      the protocol: parse requests, write replies
 *   commands.c  the command table and one handler per command
 *   worker.c    a worker: its loop, its connections, replies in order
 *   metrics.c   INFO's text and /metrics, from every worker's counters
 *   main.c      arguments and start-up
 *
 * A command on a connection is a struct px_cmd, queued in arrival order;
 * its handler may complete it at once or submit requests whose callbacks
 * complete it later. Replies leave in the order the commands came
 * (pipelining), whatever order the cluster answers in.
 */
#ifndef SKL_PROXY_H
#define SKL_PROXY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "resp.h"
#include "skewless.h"

struct px_cmd;
struct px_worker;

/* Command flags (COMMAND shows their names). */
#define PX_F_WRITE    0x01
#define PX_F_READONLY 0x02
#define PX_F_FAST     0x04
#define PX_F_NOKEYS   0x08 /* connection or server command, no key */

typedef void px_handler(struct px_cmd *c);

/*
 * The command table (commands.c), one row per command as in Redis's
 * commands.def: name, arity (n: exactly n arguments with the name; -n: at
 * least n), flags, first key, last key (-1: the last argument), key step,
 * handler, and the docs COMMAND DOCS gives.
 */
struct px_command {
	const char *name; /* lower case */
	int arity;
	unsigned flags;
	int first_key, last_key, key_step;
	px_handler *proc;
	const char *group;
	const char *since;
	const char *summary;
};

extern const struct px_command px_commands[];
extern const unsigned px_ncommands;

/* Look a command up by name (any case); NULL when unknown. */
const struct px_command *px_command_find(const uint8_t *name, size_t len);

/* Per-worker counters, written by the worker only, read by INFO and /metrics. */
#define PX_COUNTERS(X)                                                                             \
	X(connections_received, "connections accepted")                                            \
	X(connections_rejected, "connections refused: over --max-clients")                         \
	X(commands_processed, "commands run")                                                      \
	X(errors, "error replies sent")                                                            \
	X(protocol_errors, "connections closed on a protocol error")                               \
	X(keyspace_hits, "reads that found a live value")                                          \
	X(keyspace_misses, "reads that found none")                                                \
	X(cas_conflicts, "conditional writes retried after a conflict")                            \
	X(cas_gave_up, "read-modify-writes that ran out of attempts or time")                      \
	X(busy, "requests refused: the agent had max_inflight in flight")                          \
	X(net_input_bytes, "bytes read from clients")                                              \
	X(net_output_bytes, "bytes written to clients")

struct px_counters {
#define X(name, desc) uint64_t name;
	PX_COUNTERS(X)
#undef X
};

struct px_proxy;
struct rmw_lock;

#define PX_LOCK_BUCKETS 1024

struct px_worker {
	struct px_proxy *px;
	unsigned id;
	pthread_t thread;
	struct skl_agent *agent;
	int epfd, listen_fd, stop_fd;
	uint64_t next_conn_id;
	uint32_t clients; /* open connections */
	bool running, stopping;
	/* Keys with a read-modify-write in flight, and the ones waiting (commands.c). */
	struct rmw_lock *locks[PX_LOCK_BUCKETS];
	struct px_conn *open;	 /* open connections */
	struct px_conn *closing; /* closed, freed once their commands are done */
	/* In skl_poll(): completions only queue their connection here, and
	 * each is flushed once after (one send for a pipeline's replies). */
	bool in_poll;
	struct px_conn *flush;
	struct px_counters ctr;
	uint64_t *calls, *failed;	     /* per command, px_ncommands each */
	uint64_t failures[SKL_STATUS_COUNT]; /* error replies naming an agent status */
	/* The agent's counters as of the last refresh (every 100 ms), for other threads. */
	pthread_mutex_t snap_lock;
	struct skl_stats agent_snap;
};

struct px_proxy {
	const struct cfg *cfg;
	uint32_t max_value;
	uint32_t max_clients; /* per worker */
	uint32_t rmw_deadline_ms;
	unsigned nworkers;
	struct px_worker *workers;
	uint16_t port; /* resolved listening port */
	uint32_t ip;
	uint64_t start_unix_ms;
	const char *config_path;
};

/* One client connection (worker.c). */
struct px_conn {
	struct px_worker *w;
	int fd;
	uint64_t id;
	int proto; /* 2 or 3 (HELLO) */
	char name[128];
	char addr[64];
	struct rbuf in, out;
	struct px_cmd *head, *tail; /* commands in arrival order */
	uint32_t queued;
	uint32_t events; /* EPOLL* mask registered */
	bool quit;	 /* QUIT: close once the replies are out */
	bool parsing;	 /* in process_input() (worker.c) */
	bool waking;	 /* in conn_wake() (worker.c) */
	bool dead;	 /* closed; freed when head is NULL */
	bool flush_due;	 /* on its worker's flush list (worker.c) */
	struct px_conn *prev_open, *next_open;
	struct px_conn *next_flush;
	struct px_conn *next_closing;
	struct resp_req req;
};

/* One command of a connection, from parse to reply. */
struct px_cmd {
	struct px_conn *conn;
	struct px_cmd *next;
	struct px_cmd *next_waiter; /* behind another read-modify-write of its key */
	const struct px_command *def;
	int argc;
	uint8_t **argv; /* copies, NUL-terminated for convenience */
	size_t *argvlen;
	struct rbuf reply;
	bool done;
	bool waiting;	/* behind an earlier command of its connection on one of its keys */
	uint64_t *keys; /* keyhashes of its keys (px_cmd_prepare()) */
	int nkeys;
	uint32_t outstanding; /* libskewless requests in flight */
	uint64_t deadline_ns; /* read-modify-writes stop retrying here */
	uint32_t attempts;
	bool locked; /* holds or waits for its key's turn (commands.c) */
	/* State of the handler (commands.c), freed with the command. */
	void *state;
	void (*free_state)(void *);
};

/* Complete c: its reply is in c->reply (worker.c sends the replies in order). */
void px_cmd_done(struct px_cmd *c);
/*
 * Look a parsed command up and note the keyhashes of its keys (none when
 * it is unknown or of the wrong arity). 0 or -ENOMEM.
 */
int px_cmd_prepare(struct px_cmd *c);
/* Run a prepared command: checks (unknown, arity, keys), then its handler. */
void px_dispatch(struct px_cmd *c);

/* INFO's text for `section` ("" or "default": all) into b (metrics.c). */
int px_info(struct px_proxy *px, const char *section, struct rbuf *b);
/* Sum of every worker's counters, and of their agents'. */
void px_sum(struct px_proxy *px, struct px_counters *ctr, struct skl_stats *agent,
	    uint32_t *clients);
/* The /metrics exposition (httpd_render). */
char *px_metrics_render(void *arg, size_t *len);

/* worker.c */
int px_worker_start(struct px_worker *w, const struct skl_options *opt, char *err, size_t errlen);
void px_worker_stop(struct px_worker *w);
/* Counters, atomically (one writer: the worker). */
static inline void px_count(uint64_t *ctr, uint64_t n)
{
	__atomic_store_n(ctr, __atomic_load_n(ctr, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
static inline uint64_t px_read(const uint64_t *ctr)
{
	return __atomic_load_n(ctr, __ATOMIC_RELAXED);
}

#endif
