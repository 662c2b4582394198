/*
 * egress.h - the bottom of switchd's control plane: every frame the control
 * thread sends goes out here, from the VIP, through worker 0's TX queue
 * (sw->ctl_tx_ring): ARP requests, REPLICATE and UNREPLICATE to nodes, SYNC
 * to peer switches.
 *
 * It calls nothing of the control plane above it (intake, decide, reconcile,
 * cluster); everything may call it. A frame that cannot go out (neighbour
 * unknown, no mbuf) is counted here and reported to the caller, and an ARP
 * request for the missing neighbour goes out instead (rate-limited).
 * Control thread only.
 */
#ifndef SKL_SW_EGRESS_H
#define SKL_SW_EGRESS_H

#include <stddef.h>
#include <stdint.h>

struct sw;
struct wire_msg;
struct wire_replicate;

/* What the control thread sent; `cdtctl stats` (directory) and `cdtctl peers` show it. */
struct egress_stats {
	uint64_t replicates_sent;
	uint64_t unreplicates_sent;
	uint64_t send_failed; /* REPLICATE/UNREPLICATE not sent (no neighbour or no mbuf) */
	uint64_t sync_sent;   /* SYNC datagrams sent */
	uint64_t sync_send_failed;
};

int egress_init(struct sw *sw, char *err, size_t errlen);
void egress_fini(struct sw *sw);

/* An ARP request for ip from the VIP (every port inline, else the one). */
void egress_arp_request(struct sw *sw, uint32_t ip);
/* The same, rate-limited: one request per address bucket per 100 ms. now: TSC. */
void egress_arp(struct sw *sw, uint32_t ip, uint64_t now_tsc);

/*
 * msg to node from the VIP. 0, or -ENOENT when the node's MAC is not known
 * yet (an ARP goes out), -ENOMEM.
 */
int egress_to_node(struct sw *sw, uint16_t node, const struct wire_msg *msg);

/*
 * REPLICATE(version) of key to its home: copy it to req's targets (encoded by
 * proto/payload.h). 0 or as egress_to_node(), counted either way; -EINVAL, not
 * sent, when req names no target.
 */
int egress_replicate(struct sw *sw, uint16_t home, uint64_t keyhash, const uint8_t *key,
		 uint16_t key_len, uint64_t version, const struct wire_replicate *req);

/* UNREPLICATE of key to node: drop its copy. 0 or as egress_to_node(); counted either way. */
int egress_unreplicate(struct sw *sw, uint16_t node, uint64_t keyhash, const uint8_t *key,
		       uint16_t key_len);

/*
 * A SYNC value to peer switch id. 0, or -ENOENT when its MAC is not known yet
 * (an ARP goes out), -ENOMEM, -EINVAL; counted either way.
 */
int egress_sync(struct sw *sw, uint16_t id, const uint8_t *value, size_t len);

/* The egress stage of a control round: re-ARP, every second, the nodes not resolved. */
void egress_run(struct sw *sw, uint64_t now_tsc);

void egress_get_stats(const struct sw *sw, struct egress_stats *out);

#endif
