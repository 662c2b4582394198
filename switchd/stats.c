/*
 * stats.c - `stats` and /skewless/stats (see stats.h).
 */
#include "stats.h"

#include <stdio.h>

#include <rte_telemetry.h>

#include "ctl.h"
#include "dir_ctl.h"
#include "fmt.h"
#include "intake.h"
#include "prom.h"
#include "switchd.h"

static json_t *cmd_stats(struct sw *sw, int argc, char **argv, void *aux)
{
	json_t *o =
	    json_pack("{s:b, s:s, s:I, s:s}", "ok", 1, "switch", sw->self->name, "id",
		      (json_int_t)sw->self->id, "role", sw->inline_mode ? "inline" : "one-arm");
	json_t *cnt = json_object(), *drops = json_object(), *ports = json_array();
	json_t *workers = json_array(), *dir;
	struct fmt f;

	(void)argc;
	(void)argv;
	(void)aux;
	json_object_set_new(o, "tsc_hz", json_integer((json_int_t)sw->tsc_hz));
	for (int c = 0; c < SW_CNT_COUNT; c++)
		json_object_set_new(sw_counter_kind(c) == SW_CNT_DROP ? drops : cnt,
				    sw_counter_name(c),
				    json_integer((json_int_t)sw_counter(sw, c)));
	for (uint16_t p = 0; p < sw->nports; p++) {
		char mac[18];
		json_t *po;

		fmt_mac(sw->ports[p].mac.addr_bytes, mac);
		po = json_pack("{s:s, s:s, s:i, s:s, s:i, s:i, s:i, s:b}", "name",
			       sw->ports[p].name, "device", sw->ports[p].dev, "port_id",
			       sw->ports[p].port_id, "mac", mac, "mtu", sw->ports[p].mtu,
			       "rx_queues", sw->ports[p].nrxq, "tx_queues", sw->ports[p].ntxq,
			       "promiscuous", sw->ports[p].promiscuous);
		for (int c = 0; c < SW_PCNT_COUNT; c++)
			json_object_set_new(po, sw_port_counter_name(c),
					    json_integer((json_int_t)sw_port_counter(sw, p, c)));
		json_array_append_new(ports, po);
	}
	for (uint16_t i = 0; i < sw->nworkers; i++) {
		const struct sw_worker *w = sw->workers[i];
		uint64_t cyc = __atomic_load_n(&w->busy_cycles, __ATOMIC_RELAXED);
		uint64_t pk = __atomic_load_n(&w->busy_packets, __ATOMIC_RELAXED);

		json_array_append_new(
		    workers, json_pack("{s:i, s:I, s:I, s:f}", "lcore", w->lcore, "busy_packets",
				       (json_int_t)pk, "busy_cycles", (json_int_t)cyc,
				       "cycles_per_packet", pk ? (double)cyc / (double)pk : 0.0));
	}
	json_object_set_new(o, "counters", cnt);
	json_object_set_new(o, "drops", drops);
	json_object_set_new(o, "ports", ports);
	json_object_set_new(o, "workers", workers);
	json_object_set_new(o, "cdt_entries", json_integer(sw->cdt->nentries));
	json_object_set_new(o, "cdt_capacity", json_integer(sw->cdt->max_entries));
	json_object_set_new(o, "digests_received",
			    json_integer((json_int_t)intake_digests_received(sw)));
	dir = fmt_json(&f);
	dir_ctl_format_stats(sw, &f);
	json_object_set_new(o, "directory", dir);
	return o;
}

/*
 * /metrics: the counters of counters.h, walked from the same table as
 * `stats` and /skewless/stats: events as skewless_switch_<name>_total, drops
 * as skewless_switch_drops_total{reason}, ports' as
 * skewless_switch_port_<name>_total{port}; and the workers' busy time.
 */
static void metrics_stats(struct sw *sw, struct prom *p)
{
	const struct prom_label info[] = {{"switch", sw->self->name},
					  {"role", sw->inline_mode ? "inline" : "one-arm"}};
	struct fmt f;

	prom_add(p, "skewless_switch_info", "The switch's name and role (always 1)", PROM_GAUGE,
		 info, RTE_DIM(info), 1);
	fmt_prom(&f, p, "skewless_switch_", NULL, 0);
	for (int c = 0; c < SW_CNT_COUNT; c++)
		if (sw_counter_kind(c) == SW_CNT_EVENT)
			fmt_counter(&f, sw_counter_name(c), sw_counter_help(c), sw_counter(sw, c));
	fmt_counter(&f, "digests_received", "DIGEST datagrams the control thread took",
		    intake_digests_received(sw));
	for (int c = 0; c < SW_CNT_COUNT; c++)
		if (sw_counter_kind(c) == SW_CNT_DROP) {
			const struct prom_label reason = {"reason", sw_counter_name(c)};

			prom_add(p, "skewless_switch_drops_total",
				 "Frames the switch dropped, by reason (docs/operations.md)",
				 PROM_COUNTER, &reason, 1, (double)sw_counter(sw, c));
		}
	for (uint16_t port = 0; port < sw->nports; port++) {
		const struct prom_label label = {"port", sw->ports[port].name};

		fmt_prom(&f, p, "skewless_switch_port_", &label, 1);
		for (int c = 0; c < SW_PCNT_COUNT; c++)
			fmt_counter(&f, sw_port_counter_name(c), sw_port_counter_help(c),
				    sw_port_counter(sw, port, c));
	}
	for (uint16_t i = 0; i < sw->nworkers; i++) {
		const struct sw_worker *w = sw->workers[i];
		char lcore[8];
		const struct prom_label label = {"lcore", lcore};

		snprintf(lcore, sizeof(lcore), "%u", w->lcore);
		fmt_prom(&f, p, "skewless_switch_worker_", &label, 1);
		fmt_counter(&f, "busy_packets", "Packets the worker handled in busy polls",
			    __atomic_load_n(&w->busy_packets, __ATOMIC_RELAXED));
		fmt_counter(&f, "busy_cycles", "TSC cycles the worker spent on busy polls",
			    __atomic_load_n(&w->busy_cycles, __ATOMIC_RELAXED));
	}
}

void stats_init(struct sw *sw)
{
	ctl_register(sw, "stats", cmd_stats, NULL);
	ctl_register_metrics(sw, metrics_stats);
}

/* /skewless/stats (telemetry thread): counters are summed with relaxed loads. */
static int tel_stats(struct sw *sw, struct rte_tel_data *d)
{
	rte_tel_data_start_dict(d);
	for (int c = 0; c < SW_CNT_COUNT; c++) {
		char name[80];

		snprintf(name, sizeof(name), "%s%s",
			 sw_counter_kind(c) == SW_CNT_DROP ? "drop_" : "", sw_counter_name(c));
		rte_tel_data_add_dict_u64(d, name, sw_counter(sw, c));
	}
	for (uint16_t p = 0; p < sw->nports; p++)
		for (int c = 0; c < SW_PCNT_COUNT; c++) {
			char name[128];

			snprintf(name, sizeof(name), "port_%s_%s", sw->ports[p].name,
				 sw_port_counter_name(c));
			rte_tel_data_add_dict_u64(d, name, sw_port_counter(sw, p, c));
		}
	return 0;
}

CTL_TELEMETRY("/skewless/stats", tel_stats, "Switch counters: events, drops by reason, per port")
