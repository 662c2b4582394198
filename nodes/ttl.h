/*
 * ttl.h - the background thread that deletes expired values (a sampler, 20
 * keys per 100 ms round by default, repeating at once while more than 25% of
 * the sample was expired) and garbage-collects tombstones older than
 * node.tombstone_gc_s.
 */
#ifndef SKL_NODE_TTL_H
#define SKL_NODE_TTL_H

#include "node.h"

int ttl_start(struct node *n);
void ttl_stop(struct node *n);

#endif
