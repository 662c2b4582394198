/*
 * counters.h - every counter switchd keeps, from one X-macro list (VPP-style).
 *
 * X(enum name, exported name, kind): kind SW_CNT_EVENT counts something that
 * happened, SW_CNT_DROP counts a frame dropped for that reason. The list
 * generates the enum, the names and the kind table, so the control socket,
 * telemetry and cdtctl can never disagree with the fast path.
 *
 * Each worker owns a private array (struct sw_worker.counters); only that
 * worker writes it, readers (control thread, telemetry) sum the workers with
 * relaxed loads. No counter is ever shared between lcores.
 */
#ifndef SKL_SW_COUNTERS_H
#define SKL_SW_COUNTERS_H

#include <stdint.h>

#include "wire.h"

enum sw_cnt_kind { SW_CNT_EVENT, SW_CNT_DROP };

#define SW_COUNTERS(X)                                                                             \
	X(SW_CNT_RX, "rx_packets", SW_CNT_EVENT)                                                   \
	X(SW_CNT_REQUESTS, "requests", SW_CNT_EVENT)                                               \
	X(SW_CNT_REQ_FORWARDED, "requests_forwarded", SW_CNT_EVENT)                                \
	X(SW_CNT_REPLIES, "replies", SW_CNT_EVENT)                                                 \
	X(SW_CNT_REPLY_FORWARDED, "replies_forwarded", SW_CNT_EVENT)                               \
	X(SW_CNT_CDT_HIT, "cdt_hits", SW_CNT_EVENT)                                                \
	X(SW_CNT_CDT_MISS, "cdt_misses", SW_CNT_EVENT)                                             \
	X(SW_CNT_FP_MISMATCH, "cdt_fingerprint_mismatch", SW_CNT_EVENT)                            \
	X(SW_CNT_REPLICA_READS, "replica_reads", SW_CNT_EVENT)                                     \
	X(SW_CNT_CDT_UPDATES, "cdt_updates", SW_CNT_EVENT)                                         \
	X(SW_CNT_CDT_UPDATE_RETRIES, "cdt_update_retries", SW_CNT_EVENT)                           \
	X(SW_CNT_CDT_UPDATE_FAILED, "cdt_update_failed", SW_CNT_EVENT)                             \
	X(SW_CNT_WRITE_COMPLETIONS, "write_completions", SW_CNT_EVENT)                             \
	X(SW_CNT_RC_ACKS, "rc_acks", SW_CNT_EVENT)                                                 \
	X(SW_CNT_RC_ACK_ADDED, "rc_acks_added", SW_CNT_EVENT)                                      \
	X(SW_CNT_THROUGH_HOLDERS, "through_holders_added", SW_CNT_EVENT)                           \
	X(SW_CNT_CTL_REPLIES, "control_replies", SW_CNT_EVENT)                                     \
	X(SW_CNT_HINTS, "hints_answered", SW_CNT_EVENT)                                            \
	X(SW_CNT_DIGESTS, "digests", SW_CNT_EVENT)                                                 \
	X(SW_CNT_UNAVAILABLE, "unavailable_sent", SW_CNT_EVENT)                                    \
	X(SW_CNT_ARP_REPLIES, "arp_replies_sent", SW_CNT_EVENT)                                    \
	X(SW_CNT_ARP_LEARNT, "arp_learnt", SW_CNT_EVENT)                                           \
	X(SW_CNT_L2_FORWARDED, "l2_forwarded", SW_CNT_EVENT)                                       \
	X(SW_CNT_L2_FLOODED, "l2_flooded", SW_CNT_EVENT)                                           \
	X(SW_CNT_DEBUG_LOGS, "debug_logs", SW_CNT_EVENT)                                           \
	X(SW_CNT_HOT_SAMPLES, "hot_samples", SW_CNT_EVENT)                                         \
	X(SW_CNT_HOT_SAMPLES_DROPPED, "hot_samples_dropped", SW_CNT_EVENT)                         \
	X(SW_CNT_REPL_LAG_US, "replication_lag_us_sum", SW_CNT_EVENT)                              \
	X(SW_CNT_REPL_LAG_SAMPLES, "replication_lag_samples", SW_CNT_EVENT)                        \
	X(SW_CNT_SYNCS, "syncs_received", SW_CNT_EVENT)                                            \
	X(SW_CNT_PEER_FORWARDED, "requests_to_owner", SW_CNT_EVENT)                                \
	X(SW_CNT_FROM_PEER, "requests_from_peers", SW_CNT_EVENT)                                   \
	X(SW_CNT_LEASE_HOME_READS, "reads_home_without_lease", SW_CNT_EVENT)                       \
	X(SW_CNT_DROP_RUNT, "runt_frame", SW_CNT_DROP)                                             \
	X(SW_CNT_DROP_MULTISEG, "multi_segment", SW_CNT_DROP)                                      \
	X(SW_CNT_DROP_ETHERTYPE, "not_ipv4_or_arp", SW_CNT_DROP)                                   \
	X(SW_CNT_DROP_NOT_FOR_US, "not_for_us", SW_CNT_DROP)                                       \
	X(SW_CNT_DROP_ARP_BAD, "arp_malformed", SW_CNT_DROP)                                       \
	X(SW_CNT_DROP_ARP_OTHER, "arp_not_for_vip", SW_CNT_DROP)                                   \
	X(SW_CNT_DROP_IP_HDR, "ip_header", SW_CNT_DROP)                                            \
	X(SW_CNT_DROP_IP_CSUM, "ip_checksum", SW_CNT_DROP)                                         \
	X(SW_CNT_DROP_IP_FRAG, "ip_fragment", SW_CNT_DROP)                                         \
	X(SW_CNT_DROP_NOT_UDP, "not_udp", SW_CNT_DROP)                                             \
	X(SW_CNT_DROP_UDP_LEN, "udp_length", SW_CNT_DROP)                                          \
	X(SW_CNT_DROP_NOT_SERVICE, "not_service", SW_CNT_DROP)                                     \
	X(SW_CNT_DROP_WIRE_SHORT, "wire_short", SW_CNT_DROP)                                       \
	X(SW_CNT_DROP_WIRE_MAGIC, "wire_bad_magic", SW_CNT_DROP)                                   \
	X(SW_CNT_DROP_WIRE_VERSION, "wire_bad_version", SW_CNT_DROP)                               \
	X(SW_CNT_DROP_WIRE_OP, "wire_bad_op", SW_CNT_DROP)                                         \
	X(SW_CNT_DROP_WIRE_FLAGS, "wire_bad_flags", SW_CNT_DROP)                                   \
	X(SW_CNT_DROP_WIRE_STATUS, "wire_bad_status", SW_CNT_DROP)                                 \
	X(SW_CNT_DROP_WIRE_KEY_LEN, "wire_bad_key_len", SW_CNT_DROP)                               \
	X(SW_CNT_DROP_WIRE_TRUNCATED, "wire_truncated", SW_CNT_DROP)                               \
	X(SW_CNT_DROP_WIRE_TRAILING, "wire_trailing_bytes", SW_CNT_DROP)                           \
	X(SW_CNT_DROP_UNEXPECTED_OP, "unexpected_op", SW_CNT_DROP)                                 \
	X(SW_CNT_DROP_NOT_FROM_NODE, "reply_not_from_node", SW_CNT_DROP)                           \
	X(SW_CNT_DROP_NO_RETURN, "no_return_address", SW_CNT_DROP)                                 \
	X(SW_CNT_DROP_NO_NEIGHBOUR, "no_neighbour", SW_CNT_DROP)                                   \
	X(SW_CNT_DROP_DIGEST_QUEUE, "digest_queue_full", SW_CNT_DROP)                              \
	X(SW_CNT_DROP_DIGEST_SRC, "digest_not_from_node", SW_CNT_DROP)                             \
	X(SW_CNT_DROP_DIGEST_PORT, "digest_wrong_port", SW_CNT_DROP)                               \
	X(SW_CNT_DROP_SYNC, "sync_not_from_peer", SW_CNT_DROP)                                     \
	X(SW_CNT_DROP_RING_REPLY, "ring_reply_dropped", SW_CNT_DROP)                               \
	X(SW_CNT_DROP_SYNC_QUEUE, "sync_queue_full", SW_CNT_DROP)                                  \
	X(SW_CNT_DROP_AUTH_MISSING, "auth_missing", SW_CNT_DROP)                                   \
	X(SW_CNT_DROP_AUTH_BAD, "auth_bad", SW_CNT_DROP)                                           \
	X(SW_CNT_DROP_L2_SAME_PORT, "l2_same_port", SW_CNT_DROP)                                   \
	X(SW_CNT_DROP_NO_MBUF, "no_mbuf", SW_CNT_DROP)

enum sw_counter {
#define X(name, str, kind) name,
	SW_COUNTERS(X)
#undef X
	    SW_CNT_COUNT
};

/* The wire_decode() errors map onto a contiguous run of drop counters. */
_Static_assert(SW_CNT_DROP_WIRE_TRAILING - SW_CNT_DROP_WIRE_SHORT ==
		   WIRE_ERR_TRAILING - WIRE_ERR_SHORT,
	       "wire drop counters must follow enum wire_error");

static inline enum sw_counter sw_cnt_wire(enum wire_error err)
{
	return (enum sw_counter)(SW_CNT_DROP_WIRE_SHORT + (err - WIRE_ERR_SHORT));
}

/* Per port, per worker: X(enum name, exported name). */
#define SW_PORT_COUNTERS(X)                                                                        \
	X(SW_PCNT_RX, "rx")                                                                        \
	X(SW_PCNT_TX, "tx")                                                                        \
	X(SW_PCNT_TX_DROPPED, "tx_dropped")

enum sw_port_counter {
#define X(name, str) name,
	SW_PORT_COUNTERS(X)
#undef X
	    SW_PCNT_COUNT
};

const char *sw_counter_name(enum sw_counter c);
enum sw_cnt_kind sw_counter_kind(enum sw_counter c);
const char *sw_port_counter_name(enum sw_port_counter c);

#endif
