/*
 * sim.h - skewless-sim: a discrete-event simulator of a skewless cluster
 * beyond what one machine holds (docs/benchmarks.md, "bench/sim.sh").
 *
 * What is the switch's own code, linked, not modelled: the ketama ring
 * (proto/ring.h), hot-key detection and replica sizing (switchd/policy/hot.h:
 * DPDK's rte_member sketch with top-K, the epoch's hot and retired keys),
 * the directory's coherence rules (switchd/policy/cdt_state.h), the read target
 * choice (switchd/policy/select.h, sel_pick() over the switch's score table),
 * health from digests with its window (digest/health.h) and the nodes' side
 * of digests (digest/meter.h, digest/emit.h), and the load generator's key
 * choice (agent/workload.h, keys "key:0".."key:K-1" as `skewless bench`).
 * What is modelled: node service (workers, a client queue and a control
 * lane), agents (closed or open loop), link latency, digest loss, and the
 * control thread's round (every 10 ms; an epoch every directory.epoch_ms).
 * Packets are events, not bytes.
 *
 * A library: it never prints or exits; main.c is the program.
 */
#ifndef SKL_SIM_H
#define SKL_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "workload.h"

#define SIM_MAX_NODES 1024

enum sim_service { SIM_SERVICE_FIXED, SIM_SERVICE_EXP };

struct sim_params {
	uint32_t nodes;
	uint64_t keys;
	char dist[64];	    /* --dist as `skewless bench` takes it */
	char dynamic[64];   /* --dynamic "hot-in:T" or "" */
	double read_ratio;  /* 0..1 */
	bool preload;	    /* every key exists at the start (else: once written) */
	bool write_through; /* homes push a directory key's writes to its holders */
	bool directory;	    /* the directory on (off: ring only) */
	double seconds;	    /* simulated time measured */
	double warmup;	    /* simulated seconds before measuring */
	uint64_t seed;
	uint32_t concurrency; /* closed loop: requests outstanding (0: open loop) */
	double rate;	      /* open loop: Poisson arrivals per second */
	uint32_t workers;     /* per node */
	uint32_t service_us;  /* mean service time of a request at a node */
	enum sim_service service;
	uint32_t link_us;	  /* one-way latency of every hop */
	double digest_loss;	  /* probability a digest is lost */
	uint32_t queue_depth;	  /* a node's client queue; full: OVERLOADED */
	struct cfg_directory dir; /* directory knobs (conf/keys.c defaults) */
	struct cfg_digest digest; /* digest knobs (conf/keys.c defaults) */
	uint32_t replicas;	  /* R: reads of keys outside the directory go to the
				   * least-loaded of their group (writes' member pushes
				   * are not modelled) */
};

/* The defaults: conf/keys.c's for directory and digest, testbed-like nodes. */
int sim_params_default(struct sim_params *p, char *err, size_t errlen);

struct sim_result {
	double throughput_ops; /* successful ops per simulated second (measured part) */
	double max_over_mean;  /* served by the busiest node over the mean */
	double p50_us, p99_us;
	uint64_t ops, errors; /* completed OK, OVERLOADED */
	uint64_t *per_node;   /* [nodes] client requests served (measured part) */
	/* Reaction to hot-in changes (-1: no change measured). */
	double rebalance_ms;	 /* mean over changes: back within 1.2 x settled */
	double rebalance_max_ms; /* the slowest change */
	double settled_maxmean;	 /* windowed max/mean before a change (50 ms window) */
	uint32_t changes;
	/* The directory at the end. */
	uint32_t dir_entries;
	double dir_replicas_mean;
	uint32_t dir_replicas_max;
	uint64_t installs, retires, replicates, rc_acks;
	uint32_t top_k;
	/* Reads of directory keys, and those that found the set at {home} alone. */
	uint64_t dir_reads, dir_reads_home_only;
	/* Replication lag: a write's reply to its version's first RC_ACK joining. */
	double repl_lag_sum_ms;
	uint64_t repl_lags;
	/* Digests. */
	uint64_t digests_sent, digests_lost, node_down_events;
	uint64_t events; /* simulator events processed */
};

/*
 * Run one simulation. Returns 0, or -1 with a one-line message in err (bad
 * parameters, out of memory, the hot-key detector could not be created: the
 * directory needs DPDK's EAL initialised by the caller). r->per_node is
 * allocated; sim_result_free() releases it.
 */
int sim_run(const struct sim_params *p, struct sim_result *r, char *err, size_t errlen);
void sim_result_free(struct sim_result *r);

#endif
