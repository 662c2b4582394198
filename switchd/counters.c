/*
 * counters.c - the counters of counters.h: names and kinds from the X-macro
 * list, and their sums over the workers (and the control thread). Any
 * thread: workers' arrays are read with relaxed loads.
 */
#include "counters.h"

#include "switchd.h"

static const char *const counter_names[] = {
#define X(name, str, kind, help) str,
    SW_COUNTERS(X)
#undef X
};
static const uint8_t counter_kinds[] = {
#define X(name, str, kind, help) kind,
    SW_COUNTERS(X)
#undef X
};
static const char *const counter_help[] = {
#define X(name, str, kind, help) help,
    SW_COUNTERS(X)
#undef X
};
static const char *const port_counter_names[] = {
#define X(name, str, help) str,
    SW_PORT_COUNTERS(X)
#undef X
};
static const char *const port_counter_help[] = {
#define X(name, str, help) help,
    SW_PORT_COUNTERS(X)
#undef X
};

const char *sw_counter_name(enum sw_counter c)
{
	return c < SW_CNT_COUNT ? counter_names[c] : "?";
}

const char *sw_counter_help(enum sw_counter c)
{
	return c < SW_CNT_COUNT ? counter_help[c] : "?";
}

enum sw_cnt_kind sw_counter_kind(enum sw_counter c)
{
	return c < SW_CNT_COUNT ? (enum sw_cnt_kind)counter_kinds[c] : SW_CNT_EVENT;
}

const char *sw_port_counter_name(enum sw_port_counter c)
{
	return c < SW_PCNT_COUNT ? port_counter_names[c] : "?";
}

const char *sw_port_counter_help(enum sw_port_counter c)
{
	return c < SW_PCNT_COUNT ? port_counter_help[c] : "?";
}

uint64_t sw_counter(const struct sw *sw, enum sw_counter c)
{
	uint64_t v = __atomic_load_n(&sw->ctl_counters[c], __ATOMIC_RELAXED);

	for (uint16_t i = 0; i < sw->nworkers; i++)
		v += __atomic_load_n(&sw->workers[i]->counters[c], __ATOMIC_RELAXED);
	return v;
}

uint64_t sw_port_counter(const struct sw *sw, uint16_t port, enum sw_port_counter c)
{
	uint64_t v = 0;

	for (uint16_t i = 0; i < sw->nworkers; i++)
		v += __atomic_load_n(&sw->workers[i]->port_counters[port][c], __ATOMIC_RELAXED);
	return v;
}
