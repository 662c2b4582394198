/*
 * stats.c - `stats` and /skewless/stats (see stats.h).
 */
#include "stats.h"

#include <stdio.h>

#include <rte_telemetry.h>

#include "ctl.h"
#include "fmt.h"
#include "intake.h"
#include "reconcile.h"
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
	rec_format_stats(sw, &f);
	json_object_set_new(o, "directory", dir);
	return o;
}

void stats_init(struct sw *sw)
{
	ctl_register(sw, "stats", cmd_stats, NULL);
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
