/*
 * dir_ctl.c - the directory's commands and telemetry: `cdt show|pin|unpin`,
 * `directory`, /skewless/cdt and the directory's figures in /metrics, each
 * through one formatter (fmt.h). A command changes the directory only
 * through reconcile.h; registered at start-up (dir_ctl_init).
 */
#include "dir_ctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "ctl.h"
#include "egress.h"
#include "fmt.h"
#include "keyhash.h"
#include "peer_sync.h"
#include "prom.h"
#include "reconcile.h"
#include "replicas.h"
#include "switchd.h"

/* ---- Formatters: a directory entry, the directory's figures. ------------------------------ */

/*
 * One directory entry, for `cdt show`, `cdt pin` and /skewless/cdt; with
 * ownership, who owns the key (peer switches) and whether reads are spread.
 */
static void format_entry(struct sw *sw, const struct cdt_entry *e, struct fmt *f, bool ownership)
{
	const struct cdt_state *st = cdt_entry_state(e);
	const char *reps[CDT_MAX_REPLICAS];
	struct cdt_entry_counters c;
	char kh[20];
	uint16_t klen;
	const uint8_t *key = cdt_entry_key(sw->cdt, e, &klen);

	cdt_entry_counters(sw->cdt, e, &c);
	for (unsigned i = 0; i < st->nreplicas; i++)
		reps[i] = cfg_node_name(sw->cfg, st->replicas[i]);
	snprintf(kh, sizeof(kh), "%016llx", (unsigned long long)e->keyhash);
	fmt_key(f, "key", key, klen);
	fmt_str(f, "keyhash", kh);
	fmt_str(f, "home", cfg_node_name(sw->cfg, e->home));
	fmt_int(f, "completed", (int64_t)st->completed);
	fmt_list(f, "replicas", reps, st->nreplicas);
	fmt_bool(f, "pinned", e->pinned);
	fmt_int(f, "want_replicas", e->want_replicas);
	fmt_int(f, "reads", (int64_t)c.reads);
	fmt_int(f, "replica_reads", (int64_t)c.replica_reads);
	fmt_int(f, "writes", (int64_t)c.writes);
	fmt_int(f, "completions", (int64_t)c.completions);
	fmt_int(f, "acks_added", (int64_t)c.acks_added);
	if (ownership) {
		uint16_t owner = __atomic_load_n(&e->owner, __ATOMIC_RELAXED);

		fmt_str(f, "owner", owner ? peer_sync_switch_name(sw, owner) : sw->self->name);
		fmt_bool(f, "spread", !sw->npeers || (!owner && e->spread));
	}
}

static json_t *entry_json(struct sw *sw, const struct cdt_entry *e, bool ownership)
{
	struct fmt f;
	json_t *o = fmt_json(&f);

	format_entry(sw, e, &f, ownership);
	return o;
}

/* The directory manager's view: hot set, churn, replication traffic and lag. */
void dir_ctl_format_stats(struct sw *sw, struct fmt *f)
{
	const struct reconcile_stats *d = reconcile_stats(sw);
	uint64_t lag_n = sw_counter(sw, SW_CNT_REPL_LAG_SAMPLES);
	struct egress_stats eg;

	egress_get_stats(sw, &eg);
	fmt_flag(f, "enabled", "1 while the directory takes hot keys", d->enabled);
	fmt_gauge(f, "entries", "Keys in the directory", sw->cdt->nentries);
	fmt_gauge(f, "capacity", "Directory entries available (directory.max_keys)",
		  sw->cdt->max_entries);
	fmt_gauge(f, "hot_set", "Keys in the last epoch's hot set", d->hot_set);
	fmt_gauge(f, "write_heavy",
		  "Keys of the last epoch's hot set not copied: their writes would cost more",
		  d->write_heavy);
	fmt_gauge(f, "epoch_installs", "Keys installed in the last epoch", d->last_installs);
	fmt_gauge(f, "epoch_retires", "Keys retired in the last epoch", d->last_retires);
	fmt_counter(f, "epochs", "Hot-key epochs ended", d->epochs);
	fmt_counter(f, "installs", "Hot keys installed", d->installs);
	fmt_counter(f, "retires", "Cold keys retired", d->retires);
	fmt_counter(f, "replicates_sent", "REPLICATE datagrams sent", eg.replicates_sent);
	fmt_counter(f, "unreplicates_sent", "UNREPLICATE datagrams sent", eg.unreplicates_sent);
	fmt_counter(f, "send_failed", "Directory datagrams that could not be sent", eg.send_failed);
	fmt_counter(f, "full", "Hot keys not installed: directory full", d->full);
	fmt_counter(f, "collisions", "Hot keys not installed: keyhash collision", d->collisions);
	fmt_counter(f, "held_moving", "Hot keys not installed: their home moves in a ring step, or the replica groups' view skips it",
		    d->held_moving);
	fmt_counter(f, "trims", "Copies dropped from sets grown past the replicas their key wants",
		    replicas_trims(sw));
	fmt_gauge_double(f, "replication_lag_us_mean",
			 "Mean replication lag (a write's completion to a replica's ack)",
			 lag_n ? (double)sw_counter(sw, SW_CNT_REPL_LAG_US) / (double)lag_n : 0.0);
	fmt_int(f, "replica_reads", (int64_t)sw_counter(sw, SW_CNT_REPLICA_READS));
	fmt_hist(f, "update_delay_seconds",
		 "CDT update delay: a key found hot (installed) to its first replica serving "
		 "reads",
		 reconcile_update_delay(sw));
	fmt_counter(f, "update_never_served",
		    "Installed keys retired, or still without a replica after 60 s",
		    d->never_served);
	fmt_counter(f, "update_unmeasured",
		    "Installed keys whose delay was not measured (too "
		    "many waiting)",
		    d->delay_unmeasured);
}

/* /metrics: the directory's figures. */
static void metrics_directory(struct sw *sw, struct prom *p)
{
	struct fmt f;

	fmt_prom(&f, p, "skewless_switch_directory_", NULL, 0);
	dir_ctl_format_stats(sw, &f);
}

static json_t *stats_json(struct sw *sw)
{
	struct fmt f;
	json_t *o = fmt_json(&f);

	dir_ctl_format_stats(sw, &f);
	return o;
}

/* ---- Commands. ------------------------------------------------------------------------- */

/* cdt show [HEXKEY] */
static json_t *cmd_cdt_show(struct sw *sw, int argc, char **argv, void *aux)
{
	json_t *arr = json_array();
	const char *hexkey = argc > 0 ? argv[0] : NULL;

	(void)aux;
	if (hexkey) {
		uint8_t key[WIRE_MAX_KEY];
		size_t len;
		struct cdt_entry *e;

		if (cfg_parse_hex(hexkey, key, sizeof(key), &len) != 0) {
			json_decref(arr);
			return ctl_error("bad key \"%s\": expected hex bytes", hexkey);
		}
		e = cdt_find(sw->cdt, keyhash(key, len));
		if (e && cdt_entry_is(e, key, len))
			json_array_append_new(arr, entry_json(sw, e, true));
	} else {
		uint32_t it = 0;
		struct cdt_entry *e;

		while ((e = cdt_next(sw->cdt, &it)) != NULL)
			json_array_append_new(arr, entry_json(sw, e, true));
	}
	return json_pack("{s:b, s:i, s:i, s:o}", "ok", 1, "size", sw->cdt->nentries, "capacity",
			 sw->cdt->max_entries, "entries", arr);
}

/* cdt pin HEXKEY [replicas N] [force NAME,NAME...] */
static json_t *cmd_cdt_pin(struct sw *sw, int argc, char **argv, void *aux)
{
	uint8_t key[WIRE_MAX_KEY];
	uint16_t force[CDT_MAX_REPLICAS];
	unsigned nforce = 0, want = 1;
	size_t len;
	struct cdt_entry *e;

	(void)aux;
	if (argc < 1 || cfg_parse_hex(argv[0], key, sizeof(key), &len) != 0)
		return ctl_error("cdt pin: expected HEXKEY, got \"%s\"", argc ? argv[0] : "");
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "replicas")) {
			char *end;
			unsigned long n = strtoul(argv[i + 1], &end, 10);

			if (*end || n < 1 || n > sw->cdt->cap)
				return ctl_error(
				    "cdt pin: replicas: expected 1 up to the directory's "
				    "cap (16, or directory.max_replicas above it), "
				    "got \"%s\"",
				    argv[i + 1]);
			want = (unsigned)n;
		} else if (!strcmp(argv[i], "force")) {
			char list[512], *save = NULL;

			snprintf(list, sizeof(list), "%s", argv[i + 1]);
			for (char *t = strtok_r(list, ",", &save); t;
			     t = strtok_r(NULL, ",", &save)) {
				const struct cfg_node *n = cfg_node_lookup(sw->cfg, t);

				if (!n || nforce == sw->cdt->cap)
					return ctl_error(
					    "cdt pin: force: unknown node or too many: \"%s\"", t);
				force[nforce++] = n->id;
			}
		} else {
			return ctl_error("cdt pin: unknown option \"%s\"", argv[i]);
		}
	}
	e = reconcile_pin(sw, key, len, force, nforce, (uint8_t)want);
	if (!e)
		return ctl_error("cdt pin: %s", strerror(errno));
	json_t *o = json_pack("{s:b}", "ok", 1);

	json_object_set_new(o, "entry", entry_json(sw, e, false));
	return o;
}

/* cdt unpin HEXKEY */
static json_t *cmd_cdt_unpin(struct sw *sw, int argc, char **argv, void *aux)
{
	const char *hexkey = argc > 0 ? argv[0] : NULL;
	uint8_t key[WIRE_MAX_KEY];
	size_t len;
	int rc;

	(void)aux;
	if (!hexkey || cfg_parse_hex(hexkey, key, sizeof(key), &len) != 0)
		return ctl_error("cdt unpin: expected HEXKEY, got \"%s\"", hexkey ? hexkey : "");
	struct cdt_entry *e = cdt_find(sw->cdt, keyhash(key, len));

	if (!e || !cdt_entry_is(e, key, len))
		return ctl_error("cdt unpin: key not in the directory");
	rc = reconcile_remove(sw, e);
	if (rc != 0)
		return ctl_error("cdt unpin: %s", strerror(-rc));
	return json_pack("{s:b, s:i}", "ok", 1, "size", sw->cdt->nentries);
}

/* directory [on|off|show] */
static json_t *cmd_directory(struct sw *sw, int argc, char **argv, void *aux)
{
	const char *arg = argc > 0 ? argv[0] : NULL;

	(void)aux;
	if (arg && (!strcmp(arg, "on") || !strcmp(arg, "off")))
		reconcile_set_enabled(sw, !strcmp(arg, "on"));
	else if (arg && strcmp(arg, "show")) {
		return ctl_error("directory: expected on, off or show, got \"%s\"", arg);
	}
	return json_pack("{s:b, s:o}", "ok", 1, "directory", stats_json(sw));
}

void dir_ctl_init(struct sw *sw)
{
	ctl_register(sw, "cdt show", cmd_cdt_show, NULL);
	ctl_register(sw, "cdt pin", cmd_cdt_pin, NULL);
	ctl_register(sw, "cdt unpin", cmd_cdt_unpin, NULL);
	ctl_register(sw, "directory", cmd_directory, NULL);
	ctl_register_metrics(sw, metrics_directory);
}

/* /skewless/cdt (telemetry thread: QSBR reader nworkers + 1, serialised by tel_lock). */
static int tel_cdt(struct sw *sw, struct rte_tel_data *d)
{
	static const char *const brief[] = {"home", "completed", "replicas", NULL};
	uint32_t it = 0;
	struct cdt_entry *e;
	unsigned shown = 0;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&sw->tel_lock);
	rte_rcu_qsbr_thread_online(sw->qsbr, sw->nworkers + 1u);
	/* Telemetry answers are bounded (16 KiB): the first 64 entries, one line each. */
	while ((e = cdt_next(sw->cdt, &it)) != NULL && shown < 64) {
		char kh[20], val[160];
		struct fmt f;

		snprintf(kh, sizeof(kh), "%016llx", (unsigned long long)e->keyhash);
		fmt_text(&f, val, sizeof(val), brief);
		format_entry(sw, e, &f, false);
		rte_tel_data_add_dict_string(d, kh, val);
		shown++;
	}
	rte_rcu_qsbr_thread_offline(sw->qsbr, sw->nworkers + 1u);
	pthread_mutex_unlock(&sw->tel_lock);
	return 0;
}

CTL_TELEMETRY("/skewless/cdt", tel_cdt, "Directory entries: home, completed version, replica set")
