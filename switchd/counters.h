/*
 * counters.h - every counter switchd keeps, from one X-macro list (VPP-style).
 *
 * X(enum name, exported name, kind, help): kind SW_CNT_EVENT counts something
 * that happened, SW_CNT_DROP counts a frame dropped for that reason. The
 * help is what /metrics says of it (a name with _us in it sums microseconds:
 * /metrics shows seconds, fmt.h). The list
 * generates the enum, the names and the kind table, so the control socket,
 * telemetry, /metrics and cdtctl can never disagree with the fast path.
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
	X(SW_CNT_RX, "rx_packets", SW_CNT_EVENT, "Frames received on every port")                  \
	X(SW_CNT_REQUESTS, "requests", SW_CNT_EVENT,                                               \
	  "Client and peer requests (GET, PUT, DEL) seen")                                         \
	X(SW_CNT_REQ_FORWARDED, "requests_forwarded", SW_CNT_EVENT, "Requests sent on to a node")  \
	X(SW_CNT_REPLIES, "replies", SW_CNT_EVENT, "Node replies seen")                            \
	X(SW_CNT_REPLY_FORWARDED, "replies_forwarded", SW_CNT_EVENT,                               \
	  "Node replies sent on to the client")                                                    \
	X(SW_CNT_CDT_HIT, "cdt_hits", SW_CNT_EVENT, "Requests whose key is in the directory")      \
	X(SW_CNT_CDT_MISS, "cdt_misses", SW_CNT_EVENT,                                             \
	  "Requests whose key is not in the directory")                                            \
	X(SW_CNT_FP_MISMATCH, "cdt_fingerprint_mismatch", SW_CNT_EVENT,                            \
	  "Directory keyhash matches whose key bytes differ")                                      \
	X(SW_CNT_REPLICA_READS, "replica_reads", SW_CNT_EVENT,                                     \
	  "Reads of directory keys sent to a copy rather than the home")                           \
	X(SW_CNT_MEMBER_READS, "member_reads", SW_CNT_EVENT,                                       \
	  "Reads sent to a replica group member other than the primary (served there if clean)")   \
	X(SW_CNT_CDT_UPDATES, "cdt_updates", SW_CNT_EVENT,                                         \
	  "Directory state changes applied by workers")                                            \
	X(SW_CNT_CDT_UPDATE_RETRIES, "cdt_update_retries", SW_CNT_EVENT,                           \
	  "Directory state updates retried after a lost race")                                     \
	X(SW_CNT_CDT_UPDATE_FAILED, "cdt_update_failed", SW_CNT_EVENT,                             \
	  "Directory state updates given up")                                                      \
	X(SW_CNT_WRITE_COMPLETIONS, "write_completions", SW_CNT_EVENT,                             \
	  "Writes to directory keys completed (set shrunk to the home)")                           \
	X(SW_CNT_RC_ACKS, "rc_acks", SW_CNT_EVENT, "RC_ACKs received from replicas")               \
	X(SW_CNT_RC_ACK_ADDED, "rc_acks_added", SW_CNT_EVENT,                                      \
	  "RC_ACKs that added a replica to a set")                                                 \
	X(SW_CNT_THROUGH_HOLDERS, "through_holders_added", SW_CNT_EVENT,                           \
	  "Holders a write-through reply listed, added to the key's set")                          \
	X(SW_CNT_MOVED_COPIES, "moved_copies_dropped", SW_CNT_EVENT,                               \
	  "Copies that answered MOVED to a read of their key, taken out of its set")               \
	X(SW_CNT_BATCH_HELD, "writes_held", SW_CNT_EVENT,                                          \
	  "PUTs of directory keys held while another of the key was out (batched)")                \
	X(SW_CNT_BATCH_RIDERS, "batch_riders_answered", SW_CNT_EVENT,                              \
	  "Held PUTs answered OK, superseded by the batch's write (given versions, never stored)") \
	X(SW_CNT_BATCH_GIVEN_UP, "batch_given_up", SW_CNT_EVENT,                                   \
	  "Held PUTs sent on alone: their batch's write had no answer in agent.timeout_ms")        \
	X(SW_CNT_CTL_REPLIES, "control_replies", SW_CNT_EVENT,                                     \
	  "Replies to the switch's own REPLICATE and UNREPLICATE")                                 \
	X(SW_CNT_HINTS, "hints_answered", SW_CNT_EVENT, "HINT requests answered")                  \
	X(SW_CNT_DIGESTS, "digests", SW_CNT_EVENT, "DIGEST datagrams taken by workers")            \
	X(SW_CNT_DETECTION_PAUSED, "detection_paused", SW_CNT_EVENT,                               \
	  "Control rounds that judged no node: a worker had not read its ports for a digest "      \
	  "interval (the switch's own stall)")                                                     \
	X(SW_CNT_UNAVAILABLE, "unavailable_sent", SW_CNT_EVENT,                                    \
	  "Requests answered UNAVAILABLE (target node down)")                                      \
	X(SW_CNT_ARP_REPLIES, "arp_replies_sent", SW_CNT_EVENT,                                    \
	  "ARP replies sent for the switch's address")                                             \
	X(SW_CNT_ARP_LEARNT, "arp_learnt", SW_CNT_EVENT, "Neighbours learnt from ARP")             \
	X(SW_CNT_L2_FORWARDED, "l2_forwarded", SW_CNT_EVENT,                                       \
	  "Frames L2-forwarded to a known port")                                                   \
	X(SW_CNT_L2_FLOODED, "l2_flooded", SW_CNT_EVENT,                                           \
	  "Frames flooded (unknown or broadcast destination)")                                     \
	X(SW_CNT_DEBUG_LOGS, "debug_logs", SW_CNT_EVENT, "Decision logs written")                  \
	X(SW_CNT_HOT_SAMPLES, "hot_samples", SW_CNT_EVENT,                                         \
	  "Requests sampled for hot-key detection")                                                \
	X(SW_CNT_HOT_SAMPLES_DROPPED, "hot_samples_dropped", SW_CNT_EVENT,                         \
	  "Samples lost to a full ring")                                                           \
	X(SW_CNT_REPL_LAG_US, "replication_lag_us_sum", SW_CNT_EVENT,                              \
	  "Sum of replication lags (completion to replica ack)")                                   \
	X(SW_CNT_REPL_LAG_SAMPLES, "replication_lag_samples", SW_CNT_EVENT,                        \
	  "Replication lags measured")                                                             \
	X(SW_CNT_SYNCS, "syncs_received", SW_CNT_EVENT,                                            \
	  "SYNC datagrams received from peer switches")                                            \
	X(SW_CNT_PEER_FORWARDED, "requests_to_owner", SW_CNT_EVENT,                                \
	  "Requests sent to the peer switch owning the key")                                       \
	X(SW_CNT_FROM_PEER, "requests_from_peers", SW_CNT_EVENT,                                   \
	  "Requests a peer switch sent here")                                                      \
	X(SW_CNT_LEASE_HOME_READS, "reads_home_without_lease", SW_CNT_EVENT,                       \
	  "Reads of directory keys sent home: no lease to spread them")                            \
	X(SW_CNT_DROP_RUNT, "runt_frame", SW_CNT_DROP, "Frame shorter than an Ethernet header")    \
	X(SW_CNT_DROP_MULTISEG, "multi_segment", SW_CNT_DROP, "Multi-segment mbuf")                \
	X(SW_CNT_DROP_ETHERTYPE, "not_ipv4_or_arp", SW_CNT_DROP, "EtherType not IPv4 or ARP")      \
	X(SW_CNT_DROP_NOT_FOR_US, "not_for_us", SW_CNT_DROP,                                       \
	  "Not addressed to the switch (one-arm)")                                                 \
	X(SW_CNT_DROP_ARP_BAD, "arp_malformed", SW_CNT_DROP, "Malformed ARP")                      \
	X(SW_CNT_DROP_ARP_OTHER, "arp_not_for_vip", SW_CNT_DROP, "ARP for another address")        \
	X(SW_CNT_DROP_IP_HDR, "ip_header", SW_CNT_DROP, "Bad IPv4 header")                         \
	X(SW_CNT_DROP_IP_CSUM, "ip_checksum", SW_CNT_DROP, "Bad IPv4 checksum")                    \
	X(SW_CNT_DROP_IP_FRAG, "ip_fragment", SW_CNT_DROP, "IPv4 fragment")                        \
	X(SW_CNT_DROP_NOT_UDP, "not_udp", SW_CNT_DROP, "Not UDP")                                  \
	X(SW_CNT_DROP_UDP_LEN, "udp_length", SW_CNT_DROP, "UDP length disagrees with the frame")   \
	X(SW_CNT_DROP_NOT_SERVICE, "not_service", SW_CNT_DROP,                                     \
	  "UDP to another port than the service")                                                  \
	X(SW_CNT_DROP_WIRE_SHORT, "wire_short", SW_CNT_DROP,                                       \
	  "Datagram shorter than the wire header")                                                 \
	X(SW_CNT_DROP_WIRE_MAGIC, "wire_bad_magic", SW_CNT_DROP, "Wrong magic")                    \
	X(SW_CNT_DROP_WIRE_VERSION, "wire_bad_version", SW_CNT_DROP, "Unknown wire version")       \
	X(SW_CNT_DROP_WIRE_OP, "wire_bad_op", SW_CNT_DROP, "Unknown op")                           \
	X(SW_CNT_DROP_WIRE_FLAGS, "wire_bad_flags", SW_CNT_DROP, "Unknown flags")                  \
	X(SW_CNT_DROP_WIRE_STATUS, "wire_bad_status", SW_CNT_DROP, "Unknown status")               \
	X(SW_CNT_DROP_WIRE_KEY_LEN, "wire_bad_key_len", SW_CNT_DROP, "Key length out of range")    \
	X(SW_CNT_DROP_WIRE_TRUNCATED, "wire_truncated", SW_CNT_DROP,                               \
	  "Datagram shorter than its header says")                                                 \
	X(SW_CNT_DROP_WIRE_TRAILING, "wire_trailing_bytes", SW_CNT_DROP,                           \
	  "Bytes after the message")                                                               \
	X(SW_CNT_DROP_UNEXPECTED_OP, "unexpected_op", SW_CNT_DROP,                                 \
	  "Op the switch does not take from that sender")                                          \
	X(SW_CNT_DROP_NOT_FROM_NODE, "reply_not_from_node", SW_CNT_DROP,                           \
	  "Reply from an address that is not its node")                                            \
	X(SW_CNT_DROP_NO_RETURN, "no_return_address", SW_CNT_DROP,                                 \
	  "Peer-forwarded request without a return address")                                       \
	X(SW_CNT_BATCH_DUPLICATE, "batch_duplicate", SW_CNT_DROP,                                  \
	  "Retries of a held PUT (the held one is answered)")                                      \
	X(SW_CNT_DROP_NO_NEIGHBOUR, "no_neighbour", SW_CNT_DROP,                                   \
	  "Target node's MAC not known yet")                                                       \
	X(SW_CNT_DROP_DIGEST_QUEUE, "digest_queue_full", SW_CNT_DROP, "DIGEST ring full")          \
	X(SW_CNT_DROP_DIGEST_SRC, "digest_not_from_node", SW_CNT_DROP,                             \
	  "DIGEST from an address that is not its node")                                           \
	X(SW_CNT_DROP_DIGEST_PORT, "digest_wrong_port", SW_CNT_DROP,                               \
	  "DIGEST on another port than its node's")                                                \
	X(SW_CNT_DROP_SYNC, "sync_not_from_peer", SW_CNT_DROP, "SYNC from no configured peer")     \
	X(SW_CNT_DROP_RING_REPLY_SRC, "ring_reply_not_from_node", SW_CNT_DROP,                     \
	  "RING reply from an address that is not its node")                                       \
	X(SW_CNT_DROP_RING_REPLY_QUEUE, "ring_reply_queue_full", SW_CNT_DROP,                      \
	  "RING reply: the control thread's digest ring full")                                     \
	X(SW_CNT_DROP_SYNC_QUEUE, "sync_queue_full", SW_CNT_DROP, "SYNC ring full")                \
	X(SW_CNT_DROP_AUTH_MISSING, "auth_missing", SW_CNT_DROP,                                   \
	  "Control datagram without a MAC (cluster key set)")                                      \
	X(SW_CNT_DROP_AUTH_BAD, "auth_bad", SW_CNT_DROP, "Control datagram with a wrong MAC")      \
	X(SW_CNT_DROP_L2_SAME_PORT, "l2_same_port", SW_CNT_DROP,                                   \
	  "L2 destination behind the port it came in on")                                          \
	X(SW_CNT_DROP_NO_MBUF, "no_mbuf", SW_CNT_DROP, "No mbuf for a frame the switch makes")

enum sw_counter {
#define X(name, str, kind, help) name,
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

/* Per port, per worker: X(enum name, exported name, help). */
#define SW_PORT_COUNTERS(X)                                                                        \
	X(SW_PCNT_RX, "rx", "Frames received on the port")                                         \
	X(SW_PCNT_TX, "tx", "Frames sent on the port")                                             \
	X(SW_PCNT_TX_DROPPED, "tx_dropped", "Frames the port did not take (TX queue full)")

enum sw_port_counter {
#define X(name, str, help) name,
	SW_PORT_COUNTERS(X)
#undef X
	    SW_PCNT_COUNT
};

const char *sw_counter_name(enum sw_counter c);
const char *sw_counter_help(enum sw_counter c);
enum sw_cnt_kind sw_counter_kind(enum sw_counter c);
const char *sw_port_counter_name(enum sw_port_counter c);
const char *sw_port_counter_help(enum sw_port_counter c);

#endif
