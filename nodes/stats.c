/*
 * stats.c - the node's counters (node.h's X-macro list), dumped on SIGUSR1
 * and at exit, and served as Prometheus /metrics; and the request latency
 * histogram behind /metrics.
 *
 * The dump goes to <data-dir>/counters as "name value" lines (written to a
 * temporary file, then renamed, so a reader never sees half a file) and to
 * the log as one line. /metrics (nodes[].metrics_listen) runs on
 * libmicrohttpd's own thread: it reads only atomics (the counters, the
 * gauges, the histogram's buckets) and what is read-only after start-up.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "httpd.h"
#include "log.h"
#include "node.h"
#include "prom.h"

static const char *const counter_names[] = {
#define X(name, kind, help) #name,
    NODE_COUNTERS(X)
#undef X
};
static const char *const counter_help[] = {
#define X(name, kind, help) help,
    NODE_COUNTERS(X)
#undef X
};

/* Receipt to reply sent, every request a worker served (report_latency()). */
static struct prom_hist latency;
static struct httpd *http;

void node_dump_counters(struct node *n)
{
	char path[CFG_MAX_PATH + 16], tmp[CFG_MAX_PATH + 32], line[4096];
	size_t used = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/counters", n->data_dir);
	snprintf(tmp, sizeof(tmp), "%s/counters.tmp", n->data_dir);
	f = fopen(tmp, "w");
	for (int c = 0; c < NODE_CTR_COUNT; c++) {
		unsigned long long v = atomic_load_explicit(&n->ctr[c], memory_order_relaxed);

		if (f)
			fprintf(f, "%s %llu\n", counter_names[c], v);
		if (v && used < sizeof(line))
			used += (size_t)snprintf(line + used, sizeof(line) - used, " %s=%llu",
						 counter_names[c], v);
	}
	/* The ring change's counters (migrate.h), prefixed: one namespace per file. */
	for (int c = 0; c < MIG_CTR_COUNT; c++) {
		unsigned long long v = atomic_load_explicit(&n->mig.ctr[c], memory_order_relaxed);

		if (f)
			fprintf(f, "mig_%s %llu\n", mig_counter_name((enum mig_counter)c), v);
		if (v && used < sizeof(line))
			used += (size_t)snprintf(line + used, sizeof(line) - used, " mig_%s=%llu",
						 mig_counter_name((enum mig_counter)c), v);
	}
	if (f) {
		uint32_t arcs_out, arcs_done;
		enum mig_warm_phase phase = mig_warm_progress(&n->mig, &arcs_out, &arcs_done);

		fprintf(f, "ring_epoch %llu\n", (unsigned long long)mig_epoch(&n->mig));
		/* The warm-up, arc by arc: 0 indexing, 1 pushing, 2 done. */
		fprintf(f, "warm_phase %u\nwarm_arcs %u\nwarm_arcs_done %u\n", phase, arcs_out,
			arcs_done);
		fprintf(f, "load %u\n", node_load(n));
		/* A gauge: chunked ops being gathered or queued (node.reassembly_mb caps it). */
		fprintf(f, "reassembly_bytes %llu\n", (unsigned long long)reasm_used(&n->reasm));
		if (fclose(f) != 0 || rename(tmp, path) != 0)
			log_warn("%s: cannot write counters", path);
	} else {
		log_warn("%s: cannot write counters", tmp);
	}
	log_info("counters:%s", used ? line : " (all zero)");
}

void node_observe_latency(uint64_t ns)
{
	prom_hist_observe_ns(&latency, ns);
}

/* One scrape (libmicrohttpd's thread): the same table as the counters file. */
static char *render(void *arg, size_t *len)
{
	struct node *n = arg;
	const struct prom_label info[] = {{"node", n->self->name}};
	struct prom *p = prom_new();
	char name[96], *out;

	if (!p)
		return NULL;
	prom_add(p, "skewless_node_info", "The node's name (always 1)", PROM_GAUGE, info, 1, 1);
	for (int c = 0; c < NODE_CTR_COUNT; c++) {
		snprintf(name, sizeof(name), "skewless_node_%s_total", counter_names[c]);
		prom_add(p, name, counter_help[c], PROM_COUNTER, NULL, 0,
			 (double)atomic_load_explicit(&n->ctr[c], memory_order_relaxed));
	}
	prom_add(p, "skewless_node_inflight", "Requests a worker is serving", PROM_GAUGE, NULL, 0,
		 atomic_load_explicit(&n->inflight, memory_order_relaxed));
	prom_add(p, "skewless_node_queued", "Requests waiting for a worker", PROM_GAUGE, NULL, 0,
		 atomic_load_explicit(&n->queued, memory_order_relaxed));
	prom_add(p, "skewless_node_load", "Load the node reports (in flight + queued, capped)",
		 PROM_GAUGE, NULL, 0, node_load(n));
	{
		uint32_t arcs_out, arcs_done;
		enum mig_warm_phase phase = mig_warm_progress(&n->mig, &arcs_out, &arcs_done);

		prom_add(p, "skewless_node_ring_epoch",
			 "Ring epoch (ring.version << 20 | active arcs)", PROM_GAUGE, NULL, 0,
			 (double)mig_epoch(&n->mig));
		prom_add(p, "skewless_node_warm_phase",
			 "Ring change warm-up: 0 indexing, 1 pushing arc by arc, 2 done",
			 PROM_GAUGE, NULL, 0, phase);
		prom_add(p, "skewless_node_warm_arcs",
			 "Moved arcs this node is the previous home of", PROM_GAUGE, NULL, 0,
			 arcs_out);
		prom_add(p, "skewless_node_warm_arcs_done",
			 "Of those, the arcs whose keys it has all pushed to their new homes",
			 PROM_GAUGE, NULL, 0, arcs_done);
	}
	prom_add_hist(p, "skewless_node_request_latency_seconds",
		      "Request latency in the node: receipt to reply sent", NULL, 0, &latency);
	out = prom_render(p, len);
	prom_free(p);
	return out;
}

int node_metrics_start(struct node *n, char *err, size_t errlen)
{
	char why[256];

	prom_hist_init(&latency, prom_latency_bounds, prom_latency_nbounds);
	if (!n->self->metrics_listen[0])
		return 0;
	http = httpd_start(n->self->metrics_listen, HTTPD_OWN_THREAD, render, n, why, sizeof(why));
	if (!http) {
		snprintf(err, errlen, "nodes[%s].metrics_listen %s", n->self->name, why);
		return -1;
	}
	log_info("metrics on http://%s/metrics", n->self->metrics_listen);
	return 0;
}

void node_metrics_stop(void)
{
	httpd_stop(http);
	http = NULL;
}
