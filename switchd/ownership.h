/*
 * ownership.h - the directory among peer switches (docs/design.md section
 * 7): which keys this switch owns and which it routes to a peer, as the
 * peer state has them (peer_sync.h).
 *
 * With peers, the first part of the control round's third stage, before
 * reconcile.c's: the lease rule (a lease lost or back: every owned entry to
 * {home}, completed 0), remote entries follow the live peers' claims, our
 * own follow the cluster hot set (installs only while every lease is held),
 * our owned list is published, the lease deadline the workers read is set,
 * and on a sync tick SYNC goes out. It installs and removes through
 * reconcile.h and replicates through replicas.h. Control thread only.
 */
#ifndef SKL_SW_OWNERSHIP_H
#define SKL_SW_OWNERSHIP_H

#include <stddef.h>
#include <stdint.h>

struct sw;
struct reconcile_want;

/* Set up (no peers configured: nothing). */
int ownership_init(struct sw *sw, char *err, size_t errlen);
void ownership_fini(struct sw *sw);

/* The ownership part of a control round (QSBR online; nothing without peers). */
void ownership_run(struct sw *sw, uint64_t now_us, const struct reconcile_want *want);

#endif
