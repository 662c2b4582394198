/*
 * stats.c - the node's counters, dumped on SIGUSR1 and at exit.
 *
 * The dump goes to <data-dir>/counters as "name value" lines (written to a
 * temporary file, then renamed, so a reader never sees half a file) and to
 * the log as one line.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "node.h"

static const char *const counter_names[] = {
#define X(name) #name,
    NODE_COUNTERS(X)
#undef X
};

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
		fprintf(f, "ring_epoch %llu\n", (unsigned long long)mig_epoch(&n->mig));
		fprintf(f, "load %u\n", node_load(n));
		if (fclose(f) != 0 || rename(tmp, path) != 0)
			log_warn("%s: cannot write counters", path);
	} else {
		log_warn("%s: cannot write counters", tmp);
	}
	log_info("counters:%s", used ? line : " (all zero)");
}
