/*
 * metrics.c - what skewless-proxy reports about itself: INFO's text and the
 * /metrics exposition, both from the sum of every worker's counters (read
 * with relaxed atomic loads; one writer each) and of their agents' (the
 * snapshot each worker refreshes every 100 ms, since an agent is not
 * thread-safe).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "clock.h"
#include "prom.h"
#include "proxy.h"

void px_sum(struct px_proxy *px, struct px_counters *ctr, struct skl_stats *agent,
	    uint32_t *clients)
{
	memset(ctr, 0, sizeof(*ctr));
	memset(agent, 0, sizeof(*agent));
	*clients = 0;
	for (unsigned i = 0; i < px->nworkers; i++) {
		struct px_worker *w = &px->workers[i];
		struct skl_stats st;

#define X(name, desc) ctr->name += px_read(&w->ctr.name);
		PX_COUNTERS(X)
#undef X
		*clients += __atomic_load_n(&w->clients, __ATOMIC_RELAXED);
		pthread_mutex_lock(&w->snap_lock);
		st = w->agent_snap;
		pthread_mutex_unlock(&w->snap_lock);
#define X(name, desc) agent->name += st.name;
		SKL_COUNTERS(X)
#undef X
	}
}

static uint64_t command_sum(struct px_proxy *px, size_t i, bool failed)
{
	uint64_t n = 0;

	for (unsigned w = 0; w < px->nworkers; w++)
		n += px_read(failed ? &px->workers[w].failed[i] : &px->workers[w].calls[i]);
	return n;
}

static int addf(struct rbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int addf(struct rbuf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return rbuf_append(b, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* Whether INFO `section` asks for `name` (in the default set when dflt). */
static bool wants(const char *section, const char *name, bool dflt)
{
	if (!section[0] || !strcasecmp(section, "default"))
		return dflt;
	return !strcasecmp(section, "all") || !strcasecmp(section, "everything") ||
	       !strcasecmp(section, name);
}

int px_info(struct px_proxy *px, const char *section, struct rbuf *b)
{
	struct px_counters ctr;
	struct skl_stats st;
	uint32_t clients;
	struct utsname u;
	uint64_t up = (clock_real_ms() - px->start_unix_ms) / 1000;
	int rc = 0;

	px_sum(px, &ctr, &st, &clients);
	if (wants(section, "server", true)) {
		uname(&u);
		rc |= addf(b, "# Server\r\nredis_version:7.0.0\r\nredis_mode:standalone\r\n");
		rc |= addf(b, "skewless_proxy:1\r\nos:%s %s %s\r\narch_bits:64\r\n", u.sysname,
			   u.release, u.machine);
		rc |= addf(b, "multiplexing_api:epoll\r\nprocess_id:%d\r\ntcp_port:%u\r\n",
			   getpid(), px->port);
		rc |= addf(b, "uptime_in_seconds:%" PRIu64 "\r\nuptime_in_days:%" PRIu64 "\r\n", up,
			   up / 86400);
		rc |= addf(b, "skewless_workers:%u\r\nconfig_file:%s\r\n\r\n", px->nworkers,
			   px->config_path);
	}
	if (wants(section, "clients", true))
		rc |= addf(b, "# Clients\r\nconnected_clients:%u\r\nmaxclients:%u\r\n\r\n", clients,
			   px->max_clients * px->nworkers);
	if (wants(section, "stats", true)) {
		rc |= addf(b, "# Stats\r\ntotal_connections_received:%" PRIu64 "\r\n",
			   ctr.connections_received);
		rc |= addf(b, "total_commands_processed:%" PRIu64 "\r\n", ctr.commands_processed);
		rc |= addf(b, "total_net_input_bytes:%" PRIu64 "\r\n", ctr.net_input_bytes);
		rc |= addf(b, "total_net_output_bytes:%" PRIu64 "\r\n", ctr.net_output_bytes);
		rc |= addf(b, "rejected_connections:%" PRIu64 "\r\n", ctr.connections_rejected);
		rc |= addf(b, "keyspace_hits:%" PRIu64 "\r\nkeyspace_misses:%" PRIu64 "\r\n",
			   ctr.keyspace_hits, ctr.keyspace_misses);
		rc |= addf(b, "total_error_replies:%" PRIu64 "\r\n", ctr.errors);
		rc |= addf(b, "cas_conflicts:%" PRIu64 "\r\ncas_gave_up:%" PRIu64 "\r\n",
			   ctr.cas_conflicts, ctr.cas_gave_up);
		/* The agents' counters: redirects, fallbacks, timeouts (skewless.h). */
		for (size_t i = 0; i < skl_counter_count(); i++)
			rc |= addf(b, "skewless_agent_%s:%" PRIu64 "\r\n", skl_counter_name(i),
				   skl_counter_value(&st, i));
		rc |= addf(b, "\r\n");
	}
	if (wants(section, "commandstats", false)) {
		rc |= addf(b, "# Commandstats\r\n");
		for (unsigned i = 0; i < px_ncommands; i++) {
			uint64_t calls = command_sum(px, i, false);

			if (calls)
				rc |= addf(
				    b, "cmdstat_%s:calls=%" PRIu64 ",failed_calls=%" PRIu64 "\r\n",
				    px_commands[i].name, calls, command_sum(px, i, true));
		}
		rc |= addf(b, "\r\n");
	}
	/* The cluster keeps no key count: the section is there, empty. */
	if (wants(section, "keyspace", true))
		rc |= addf(b, "# Keyspace\r\n");
	return rc ? -1 : 0;
}

char *px_metrics_render(void *arg, size_t *len)
{
	struct px_proxy *px = arg;
	struct prom *p = prom_new();
	struct px_counters ctr;
	struct skl_stats st;
	uint32_t clients;
	char name[96], *out;

	if (!p)
		return NULL;
	px_sum(px, &ctr, &st, &clients);
#define X(field, desc)                                                                             \
	prom_add(p, "skewless_proxy_" #field "_total", desc, PROM_COUNTER, NULL, 0,                \
		 (double)ctr.field);
	PX_COUNTERS(X)
#undef X
	for (int s = 0; s < SKL_STATUS_COUNT; s++) {
		struct prom_label l = {"status", skl_status_name((enum skl_status)s)};
		uint64_t n = 0;

		if (s == SKL_OK || s == SKL_NOT_FOUND)
			continue;
		for (unsigned w = 0; w < px->nworkers; w++)
			n += px_read(&px->workers[w].failures[s]);
		prom_add(p, "skewless_proxy_failures_total",
			 "Commands failed by a status the agent could not hide, by status",
			 PROM_COUNTER, &l, 1, (double)n);
	}
	prom_add(p, "skewless_proxy_connected_clients", "Client connections open", PROM_GAUGE, NULL,
		 0, clients);
	for (unsigned i = 0; i < px_ncommands; i++) {
		struct prom_label l = {"command", px_commands[i].name};

		prom_add(p, "skewless_proxy_commands_total", "Commands run, by command",
			 PROM_COUNTER, &l, 1, (double)command_sum(px, i, false));
		prom_add(p, "skewless_proxy_command_errors_total",
			 "Commands answered with an error, by command", PROM_COUNTER, &l, 1,
			 (double)command_sum(px, i, true));
	}
	for (size_t i = 0; i < skl_counter_count(); i++) {
		snprintf(name, sizeof(name), "skewless_agent_%s_total", skl_counter_name(i));
		prom_add(p, name, skl_counter_desc(i), PROM_COUNTER, NULL, 0,
			 (double)skl_counter_value(&st, i));
	}
	out = prom_render(p, len);
	prom_free(p);
	return out;
}
