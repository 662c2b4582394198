/*
 * report.h - load digests sent to every configured switch, and the
 * measurements behind them (service latency, receive rate).
 */
#ifndef SKL_NODE_REPORT_H
#define SKL_NODE_REPORT_H

#include <stdint.h>

#include "node.h"

/* A worker finished a request that was received latency_ns ago. */
void report_latency(uint64_t latency_ns);
/* Start and stop the digest thread. */
int report_start(struct node *n);
void report_stop(struct node *n);

#endif
