/*
 * pipeline.c - the fast path: what a worker lcore does with each burst.
 *
 * Read top to bottom: pipeline_main() polls; process_burst() runs three
 * stages over a burst of up to 32 frames, each prefetching for the next:
 *   1. parse: classify(): a frame of the common shape (common_shape(): IPv4
 *      without options to the VIP and service port, nothing around it) in a
 *      few tests; any other the careful way (parse_careful(): Ethernet, ARP
 *      answered for the VIP, L2 forwarding of everything that is not service
 *      traffic in inline mode, IPv4/UDP validation step by step); then
 *      wire_decode_route() (and the rest of the header for what is not a
 *      request). Frames that end here are sent or dropped (counted by
 *      reason); the rest are service datagrams with a key.
 *   2. look up: one bulk lookup in the CDT of the keyhashes its filter may
 *      hold (cdt_may_hold(): most keys are not in the directory);
 *      rte_hash_lookup_with_hash_bulk_data() is rte_hash_lookup_bulk_data()
 *      with the signatures computed here, see cdt_sig().
 *   3. handle, per datagram: do_request() (route and rewrite towards a node;
 *      a PUT of a directory key may wait for the one of it out, batch.h),
 *      do_reply() (learn, update the directory, end a batch, rewrite towards
 *      the client), do_rc_ack(), do_hint().
 * Directory updates are published (release CAS in cdt_apply) before the
 * reply that caused them is even buffered for TX. TX goes through per-port
 * buffers drained every SW_DRAIN_US.
 */
#include <string.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_udp.h>

#include "auth.h"
#include "batch.h"
#include "chunk.h"
#include "group.h"
#include "intake.h"
#include "keyhash.h"
#include "switchd.h"
#include "wire.h"

enum pkt_kind { K_DONE, K_REQUEST, K_HINT, K_REPLY, K_CTL_REPLY, K_RC_ACK };

struct pkt {
	struct rte_mbuf *m;
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	uint8_t *hdr; /* the 48-byte wire header */
	struct wire_msg msg;
	struct cdt_entry *e; /* what the CDT lookup found for msg.keyhash, or NULL */
	uint8_t kind;
};

#define CNT(w, c) ((w)->counters[(c)]++)

static inline void drop(struct sw_worker *w, struct rte_mbuf *m, enum sw_counter why)
{
	CNT(w, why);
	rte_pktmbuf_free(m);
}

static inline void tx(struct sw_worker *w, uint16_t port, struct rte_mbuf *m)
{
	struct sw *sw = w->sw;

	w->port_counters[port][SW_PCNT_TX]++;
	rte_eth_tx_buffer(sw->ports[port].port_id, w->index, w->txb[port], m);
}

void pipeline_flush(struct sw_worker *w)
{
	for (uint16_t p = 0; p < w->sw->nports; p++)
		rte_eth_tx_buffer_flush(w->sw->ports[p].port_id, w->index, w->txb[p]);
}

/*
 * Whether the MAC at mac, which has 2 readable bytes after it, is the one
 * whose bytes `word` holds from its lowest address up (memcpy'd, the rest 0):
 * one load and compare instead of three.
 */
static inline bool mac_is(const void *mac, uint64_t word)
{
	uint64_t at;

	memcpy(&at, mac, sizeof(at));
	return rte_le_to_cpu_64(at ^ word) << 16 == 0;
}

/* Ask the control thread to ARP for ip (best effort: a full ring is fine). */
static inline void want_neighbour(struct sw_worker *w, uint32_t ip)
{
	rte_ring_mp_enqueue_elem(w->sw->arp_ring, &ip, sizeof(ip));
}

/*
 * ---- Checksums: RFC 1624 incremental update, HC' = ~(~HC + ~m + m'). ----------------
 * Sums are taken over raw memory words (network order, as loaded): the
 * one's-complement sum does not care about byte order, and a 32-bit word adds
 * its two 16-bit halves at once (2^16 = 1 modulo 2^16 - 1). Every patched
 * field sits at an even offset from the start of its header, as the
 * checksum's 16-bit words do. A change is summed as m' - m in a signed
 * accumulator (~m is -m modulo 2^16 - 1): csum_apply() adds CSUM_BIAS, a
 * multiple of 2^16 - 1 above any sum of a few dozen such changes, to make it
 * positive before it folds it.
 */
#define CSUM_BIAS ((int64_t)0xffff << 40)
/*
 * Hold the sum of changes in a register as it stands (the Linux kernel's
 * OPTIMIZER_HIDE_VAR(); no instruction): GCC would otherwise reassociate a
 * datagram's changes into one sum at its end and keep each old field's value
 * on the stack until then, which costs the request path instructions.
 */
#define CSUM_HOLD(acc) __asm__("" : "+r"(acc))

/* Replace the 32-bit (64-, 16-bit) field at p with new_raw; accumulate the change. */
static __rte_always_inline void patch32(int64_t *acc, void *p, uint32_t new_raw)
{
	uint32_t old;

	memcpy(&old, p, 4);
	*acc += (int64_t)new_raw - old;
	CSUM_HOLD(*acc);
	memcpy(p, &new_raw, 4);
}
static __rte_always_inline void patch64(int64_t *acc, void *p, uint64_t new_raw)
{
	uint64_t old;

	memcpy(&old, p, 8);
	*acc += (int64_t)(new_raw >> 32) + (uint32_t)new_raw - (int64_t)(old >> 32) - (uint32_t)old;
	CSUM_HOLD(*acc);
	memcpy(p, &new_raw, 8);
}
static __rte_always_inline void patch16(int64_t *acc, void *p, uint16_t new_raw)
{
	uint16_t old;

	memcpy(&old, p, 2);
	*acc += (int64_t)new_raw - old;
	CSUM_HOLD(*acc);
	memcpy(p, &new_raw, 2);
}
/*
 * Fold a sum of 16- and 32-bit words into its 16-bit one's-complement sum.
 * The high half of x + rotate(x, half its width) is the sum of x's halves
 * with the end-around carry: 64 bits to 32, then 32 to 16.
 */
static __rte_always_inline uint16_t csum_fold(uint64_t sum)
{
	uint32_t s = (uint32_t)((sum + (sum >> 32 | sum << 32)) >> 32);

	return (uint16_t)((s + (s >> 16 | s << 16)) >> 16);
}
/* The checksum hc with the changes acc made to what it covers (~hc is -hc). */
static __rte_always_inline uint16_t csum_apply(uint16_t hc, int64_t acc)
{
	return (uint16_t)~csum_fold((uint64_t)(acc + CSUM_BIAS - hc));
}

/*
 * One's-complement sum of an IPv4 header: 0xffff when its checksum is right.
 * Without options: two 64-bit words and a 32-bit one, each carry out of the
 * top added back in (2^64 = 1 modulo 2^16 - 1).
 */
static __rte_always_inline uint16_t ipv4_hdr_sum(const struct rte_ipv4_hdr *ip, uint16_t ihl)
{
	const uint8_t *h = (const uint8_t *)ip;
	uint64_t a, b, sum;
	uint32_t c;

	if (unlikely(ihl != sizeof(*ip)))
		return rte_raw_cksum(ip, ihl);
	memcpy(&a, h, 8);
	memcpy(&b, h + 8, 8);
	memcpy(&c, h + 16, 4);
	sum = a + b;
	sum += sum < a;
	sum += c;
	sum += sum < c;
	return csum_fold(sum);
}

/*
 * The wire header's flags, in network order as they are in the frame: those
 * of keep stay, those of set are set, the rest cleared. Accumulates the change.
 */
static __rte_always_inline void patch_flags(int64_t *acc, uint8_t *h, uint16_t keep, rte_be16_t set)
{
	rte_be16_t flags;

	memcpy(&flags, h + WIRE_OFF_FLAGS, 2);
	patch16(acc, h + WIRE_OFF_FLAGS, (flags & RTE_BE16(keep)) | set);
}

/*
 * Readdress a service datagram in place, from the VIP and the service port:
 * Ethernet source to the VIP's MAC (the caller wrote the destination MAC
 * straight from the neighbour table), IPv4 src/dst, UDP ports. Address and
 * port in network byte order; body_acc is the sum of the changes the caller
 * made to the wire header (patch16(), patch32(), patch_flags()), 0 for none.
 * IPv4 checksum updated incrementally; the UDP checksum too (RFC 1624)
 * unless it is 0 (none, allowed in IPv4), and never left as 0.
 *
 * Every datagram that gets here was sent to the VIP and the service port
 * (classify() drops the rest), which become its source: in both checksums
 * that pair cancels out, so only the old source and the new destination are
 * summed.
 */
static __rte_always_inline void readdress(struct sw *sw, struct pkt *p, rte_be32_t dst_ip,
					  rte_be16_t dport, int64_t body_acc)
{
	/* Locals: the frame's bytes are written as bytes, which might alias *p. */
	struct rte_ether_hdr *eth = p->eth;
	struct rte_ipv4_hdr *ip = p->ip;
	struct rte_udp_hdr *udp = p->udp;
	int64_t ip_acc, udp_acc;

	eth->src_addr = sw->mac;

	ip_acc = (int64_t)dst_ip - ip->src_addr;
	ip->src_addr = sw->vip_be;
	ip->dst_addr = dst_ip;
	ip->hdr_checksum = csum_apply(ip->hdr_checksum, ip_acc);

	/* The pseudo-header's addresses changed exactly as the IP header's did. */
	udp_acc = ip_acc + body_acc + dport - udp->src_port;
	udp->src_port = sw->svc_port_be;
	udp->dst_port = dport;
	if (udp->dgram_cksum != 0) {
		uint16_t c = csum_apply(udp->dgram_cksum, udp_acc);

		udp->dgram_cksum = c ? c : 0xffff;
	}
}

/*
 * Stamp a read of a directory key with the version the directory has seen
 * complete: the node serves exactly that version (docs/design.md section 5,
 * "Write-through"). Accumulates the change, for readdress() to apply.
 */
static __rte_always_inline void stamp_version(int64_t *acc, uint8_t *h, uint64_t version)
{
	patch64(acc, h + WIRE_OFF_VERSION, rte_cpu_to_be_64(version));
}

/*
 * A request on its way to a node or a peer: flags (REPLICA_READ as given,
 * VIA_SWITCH set), node, and the client's return address in the wire header.
 * Accumulates the changes.
 */
static __rte_always_inline void stamp_request(int64_t *acc, uint8_t *h, bool replica_read,
					      uint16_t node, rte_be32_t ret_ip, rte_be16_t ret_port)
{
	patch_flags(acc, h, (uint16_t)~WIRE_F_REPLICA_READ,
		    replica_read ? RTE_BE16(WIRE_F_VIA_SWITCH | WIRE_F_REPLICA_READ)
				 : RTE_BE16(WIRE_F_VIA_SWITCH));
	patch16(acc, h + WIRE_OFF_NODE, __builtin_bswap16(node));
	patch32(acc, h + WIRE_OFF_RET_IP, ret_ip);
	patch16(acc, h + WIRE_OFF_RET_PORT, ret_port);
}

/*
 * Turn a request into the switch's own answer to its sender, on the port it
 * came from: op | REPLY, status, node, version, no value. Rare (HINT, or the
 * target is down), so checksums are recomputed in full.
 */
static void answer(struct sw_worker *w, struct pkt *p, uint16_t in_port, uint8_t status,
		   uint16_t node, uint64_t version, uint16_t flags)
{
	struct sw *sw = w->sw;
	struct rte_ipv4_hdr *ip = p->ip;
	struct rte_udp_hdr *udp = p->udp;
	uint8_t *h = p->hdr;
	uint32_t wire_len = WIRE_HDR_LEN + p->msg.key_len;
	uint16_t ihl = (uint16_t)rte_ipv4_hdr_len(ip);
	struct rte_ether_addr peer = p->eth->src_addr;

	h[WIRE_OFF_OP] = (uint8_t)(p->msg.op | WIRE_REPLY);
	h[WIRE_OFF_STATUS] = status;
	wire_put16(h + WIRE_OFF_FLAGS, flags);
	wire_put64(h + WIRE_OFF_VERSION, version);
	wire_put16(h + WIRE_OFF_NODE, node);
	wire_put16(h + WIRE_OFF_LOAD,
		   node ? (uint16_t)RTE_MIN(scores_inflight(&sw->scores, node), UINT16_MAX) : 0);
	wire_put32(h + WIRE_OFF_RET_IP, 0);
	wire_put16(h + WIRE_OFF_RET_PORT, 0);
	wire_put32(h + WIRE_OFF_VAL_LEN, 0);

	p->eth->dst_addr = peer;
	p->eth->src_addr = sw->mac;
	ip->dst_addr = ip->src_addr;
	ip->src_addr = sw->vip_be;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(ihl + 8 + wire_len));
	ip->time_to_live = 64;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dst_port = udp->src_port;
	udp->src_port = sw->svc_port_be;
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(8 + wire_len));
	rte_pktmbuf_trim(p->m,
			 (uint16_t)(p->m->pkt_len - (RTE_ETHER_HDR_LEN + ihl + 8 + wire_len)));
	udp->dgram_cksum = 0;
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	tx(w, in_port, p->m);
}

/* ---- Stage 1: parse. ---------------------------------------------------------------- */

/* Flood to every port but in_port (refcount, no copies) or forward to the learnt port. */
static void l2_forward(struct sw_worker *w, struct rte_mbuf *m, struct rte_ether_hdr *eth,
		       uint16_t in_port, uint32_t now_s)
{
	struct sw *sw = w->sw;
	int out;

	if (!sw->inline_mode) {
		drop(w, m, SW_CNT_DROP_NOT_FOR_US);
		return;
	}
	if (!rte_is_multicast_ether_addr(&eth->dst_addr)) {
		out = l2_mac_lookup(sw->l2, eth->dst_addr.addr_bytes, now_s);
		if (out >= 0) {
			if (out == in_port || out >= sw->nports) {
				drop(w, m, SW_CNT_DROP_L2_SAME_PORT);
				return;
			}
			CNT(w, SW_CNT_L2_FORWARDED);
			tx(w, (uint16_t)out, m);
			return;
		}
	}
	if (sw->nports < 2) {
		drop(w, m, SW_CNT_DROP_L2_SAME_PORT);
		return;
	}
	CNT(w, SW_CNT_L2_FLOODED);
	rte_mbuf_refcnt_update(m, (int16_t)(sw->nports - 2));
	for (uint16_t p = 0; p < sw->nports; p++)
		if (p != in_port)
			tx(w, p, m);
}

/* ARP: learn the sender; answer requests for the VIP; pass the rest on (inline). */
static void do_arp(struct sw_worker *w, struct rte_mbuf *m, struct rte_ether_hdr *eth,
		   uint16_t in_port, uint32_t now_s)
{
	struct sw *sw = w->sw;
	struct rte_arp_hdr *arp;
	uint32_t sip, tip;

	if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + sizeof(*arp)) {
		drop(w, m, SW_CNT_DROP_ARP_BAD);
		return;
	}
	arp = (struct rte_arp_hdr *)(eth + 1);
	if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || arp->arp_hlen != 6 ||
	    arp->arp_plen != 4) {
		drop(w, m, SW_CNT_DROP_ARP_BAD);
		return;
	}
	sip = rte_be_to_cpu_32(arp->arp_data.arp_sip);
	tip = rte_be_to_cpu_32(arp->arp_data.arp_tip);
	if (sip != 0 && sip != sw->vip) {
		l2_nb_learn(sw->l2, sip, arp->arp_data.arp_sha.addr_bytes, (uint8_t)in_port, now_s,
			    false);
		CNT(w, SW_CNT_ARP_LEARNT);
	}
	if (arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) && tip == sw->vip) {
		arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
		arp->arp_data.arp_tha = arp->arp_data.arp_sha;
		arp->arp_data.arp_tip = arp->arp_data.arp_sip;
		arp->arp_data.arp_sha = sw->mac;
		arp->arp_data.arp_sip = rte_cpu_to_be_32(sw->vip);
		eth->dst_addr = eth->src_addr;
		eth->src_addr = sw->mac;
		CNT(w, SW_CNT_ARP_REPLIES);
		tx(w, in_port, m);
		return;
	}
	if (rte_is_same_ether_addr(&eth->dst_addr, &sw->mac)) { /* a reply to our own request */
		rte_pktmbuf_free(m);
		return;
	}
	if (sw->inline_mode)
		l2_forward(w, m, eth, in_port, now_s);
	else
		drop(w, m, SW_CNT_DROP_ARP_OTHER);
}

/* The datagram names a node (msg.node): true when its source address is that node's. */
static inline bool from_node(const struct sw *sw, const struct pkt *p)
{
	uint16_t node = p->msg.node;

	return node != 0 && node <= CFG_MAX_NODES && sw->node_ip_be[node] == p->ip->src_addr;
}

/*
 * With a key: whether a control datagram ends in the MAC of its header, key
 * and value (proto/auth.h); dropped and counted when it does not. Only
 * control datagrams come here, after their source was checked: a stranger's
 * costs no HMAC.
 */
static bool authentic(struct sw_worker *w, struct pkt *p)
{
	size_t body, len = rte_be_to_cpu_16(p->udp->dgram_len) - sizeof(struct rte_udp_hdr);

	switch (wire_auth_check(&w->sw->key, p->hdr, len, &body)) {
	case WIRE_AUTH_OK:
		return true;
	case WIRE_AUTH_MISSING:
		drop(w, p->m, SW_CNT_DROP_AUTH_MISSING);
		return false;
	default:
		drop(w, p->m, SW_CNT_DROP_AUTH_BAD);
		return false;
	}
}

/*
 * service_kind() for everything but a request: replies, RC_ACK, HINT and the
 * control thread's datagrams. Out of line: the request path stays small.
 */
static __rte_noinline uint8_t other_kind(struct sw_worker *w, struct pkt *p, uint16_t in_port,
					 uint32_t now_s)
{
	struct sw *sw = w->sw;
	uint8_t op = p->msg.op;

	/*
	 * The cases are the op table's sets (proto/ops.h), checked here at
	 * compile time: an op given a switch role there and no case here fails
	 * the build. Data ops are the range GET..DEL, which service_kind() takes first.
	 */
	_Static_assert(WIRE_OPS_SW_ROUTE == WIRE_OPS_RANGE(WIRE_OP_GET, WIRE_OP_DEL),
		       "routed requests are ops GET..DEL");
	_Static_assert(WIRE_OPS_SW_WORKER ==
			   (WIRE_OPS_ONE(WIRE_OP_HINT) | WIRE_OPS_ONE(WIRE_OP_RC_ACK)),
		       "a worker serves HINT and RC_ACK");
	_Static_assert(WIRE_OPS_SW_CONTROL ==
			   (WIRE_OPS_ONE(WIRE_OP_DIGEST) | WIRE_OPS_ONE(WIRE_OP_SYNC)),
		       "the control thread takes DIGEST and SYNC");
	_Static_assert(WIRE_OPS_SW_REPLIES ==
			   (WIRE_OPS_SW_ROUTE | WIRE_OPS_ONE(WIRE_OP_REPLICATE) |
			    WIRE_OPS_ONE(WIRE_OP_UNREPLICATE) | WIRE_OPS_ONE(WIRE_OP_RING) |
			    WIRE_OPS_ONE(WIRE_OP_VIEW)),
		       "replies: of data ops (forwarded), of REPLICATE, UNREPLICATE (consumed) and "
		       "of RING and VIEW (the control thread's)");
	wire_decode_rest(p->hdr, &p->msg);
	switch (op) {
	case WIRE_OP_HINT:
		return K_HINT;
	case WIRE_OP_RC_ACK:
		return K_RC_ACK;
	case WIRE_OP_GET | WIRE_REPLY:
	case WIRE_OP_PUT | WIRE_REPLY:
	case WIRE_OP_DEL | WIRE_REPLY:
		return K_REPLY;
	case WIRE_OP_REPLICATE | WIRE_REPLY:
	case WIRE_OP_UNREPLICATE | WIRE_REPLY:
		return K_CTL_REPLY;
	case WIRE_OP_RING | WIRE_REPLY:
	case WIRE_OP_VIEW | WIRE_REPLY:
		/* A node's answer to a ring change (ring_change.c) or to a view (view.c),
		 * through the digests' ring. */
		p->m->port = in_port;
		if (!from_node(sw, p)) {
			drop(w, p->m, SW_CNT_DROP_RING_REPLY_SRC);
			return K_DONE;
		}
		if (sw->keyed && !authentic(w, p)) /* counted by authentic() */
			return K_DONE;
		if (rte_ring_mp_enqueue(sw->digest_ring, p->m) != 0) {
			drop(w, p->m, SW_CNT_DROP_RING_REPLY_QUEUE);
			return K_DONE;
		}
		return K_DONE;
	case WIRE_OP_DIGEST:
		/* Only from the address of the node it names (intake.c checks the port). */
		if (!from_node(sw, p)) {
			drop(w, p->m, SW_CNT_DROP_DIGEST_SRC);
			return K_DONE;
		}
		if (sw->keyed && !authentic(w, p))
			return K_DONE;
		/* The control thread is the single writer of health: hand it the frame,
		 * with the port index it came in on (intake.c checks it against L2). */
		p->m->port = in_port;
		if (rte_ring_mp_enqueue(sw->digest_ring, p->m) != 0) {
			drop(w, p->m, SW_CNT_DROP_DIGEST_QUEUE);
			return K_DONE;
		}
		CNT(w, SW_CNT_DIGESTS);
		return K_DONE;
	case WIRE_OP_SYNC: {
		uint32_t src = rte_be_to_cpu_32(p->ip->src_addr);

		/* Only from a configured peer's VIP; the control thread decodes it. */
		if (sw_peer_of_ip(sw, src) < 0) {
			drop(w, p->m, SW_CNT_DROP_SYNC);
			return K_DONE;
		}
		if (sw->keyed && !authentic(w, p))
			return K_DONE;
		l2_nb_learn(sw->l2, src, p->eth->src_addr.addr_bytes, (uint8_t)in_port, now_s,
			    false);
		if (rte_ring_mp_enqueue(sw->sync_ring, p->m) != 0) {
			drop(w, p->m, SW_CNT_DROP_SYNC_QUEUE);
			return K_DONE;
		}
		CNT(w, SW_CNT_SYNCS);
		return K_DONE;
	}
	default:
		drop(w, p->m, SW_CNT_DROP_UNEXPECTED_OP);
		return K_DONE;
	}
}

/* Which stage-3 handler a decoded datagram needs; K_DONE when it was consumed here. */
static inline uint8_t service_kind(struct sw_worker *w, struct pkt *p, uint16_t in_port,
				   uint32_t now_s)
{
	/* Most datagrams: routed from the fields decoded so far. */
	if (likely((unsigned)(p->msg.op - WIRE_OP_GET) <= WIRE_OP_DEL - WIRE_OP_GET))
		return K_REQUEST;
	return other_kind(w, p, in_port, now_s);
}

/* Bursts mostly come from one host: learn each source once per burst (inline mode). */
static inline void learn_source(struct sw_worker *w, const struct rte_ether_hdr *eth,
				uint16_t in_port, uint32_t now_s)
{
	struct sw *sw = w->sw;

	if (sw->inline_mode && !mac_is(&eth->src_addr, w->burst_src)) {
		l2_mac_learn(sw->l2, eth->src_addr.addr_bytes, (uint8_t)in_port, now_s);
		w->burst_src = 0;
		memcpy(&w->burst_src, &eth->src_addr, RTE_ETHER_ADDR_LEN);
	}
}

/*
 * Ethernet, IPv4 and UDP the careful way: every check in turn, ARP, L2
 * forwarding and each drop counted by its reason. False when the frame went
 * no further (sent or dropped); true, with p->eth, ip, udp and hdr and
 * *udp_len set, for a datagram to the VIP and the service port.
 */
static __rte_noinline bool parse_careful(struct sw_worker *w, struct pkt *p, uint16_t in_port,
					 uint32_t now_s, uint16_t *udp_len)
{
	struct sw *sw = w->sw;
	struct rte_mbuf *m = p->m;
	uint32_t len = rte_pktmbuf_data_len(m);
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	uint16_t ihl, ip_len;

	if (len < RTE_ETHER_HDR_LEN) {
		drop(w, m, SW_CNT_DROP_RUNT);
		return false;
	}
	if (m->nb_segs != 1) {
		drop(w, m, SW_CNT_DROP_MULTISEG);
		return false;
	}
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	learn_source(w, eth, in_port, now_s);

	/* ARP, whoever it is for; other traffic for other hosts; not IPv4. */
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
		if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP))
			do_arp(w, m, eth, in_port, now_s);
		else if (!mac_is(&eth->dst_addr, sw->mac_word))
			l2_forward(w, m, eth, in_port, now_s);
		else
			drop(w, m, SW_CNT_DROP_ETHERTYPE);
		return false;
	}
	if (!mac_is(&eth->dst_addr, sw->mac_word)) {
		l2_forward(w, m, eth, in_port, now_s);
		return false;
	}

	/* IPv4: version, header length, total length within the frame, no fragments. */
	if (len < RTE_ETHER_HDR_LEN + sizeof(*ip)) {
		drop(w, m, SW_CNT_DROP_IP_HDR);
		return false;
	}
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	ihl = (uint16_t)((ip->version_ihl & 0x0f) * 4);
	ip_len = rte_be_to_cpu_16(ip->total_length);
	/* Version 4 and at least 5 words of header: 0x45..0x4f. */
	if ((uint8_t)(ip->version_ihl - RTE_IPV4_VHL_DEF) > 0x4f - RTE_IPV4_VHL_DEF ||
	    ip_len < ihl + sizeof(*udp) || RTE_ETHER_HDR_LEN + (uint32_t)ip_len > len) {
		drop(w, m, SW_CNT_DROP_IP_HDR);
		return false;
	}
	if ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) != RTE_MBUF_F_RX_IP_CKSUM_GOOD &&
	    ipv4_hdr_sum(ip, ihl) != 0xffff) {
		drop(w, m, SW_CNT_DROP_IP_CSUM);
		return false;
	}
	if (ip->fragment_offset &
	    rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) {
		drop(w, m, SW_CNT_DROP_IP_FRAG);
		return false;
	}
	if (ip->next_proto_id != IPPROTO_UDP) {
		drop(w, m, SW_CNT_DROP_NOT_UDP);
		return false;
	}
	udp = (struct rte_udp_hdr *)((uint8_t *)ip + ihl);
	*udp_len = rte_be_to_cpu_16(udp->dgram_len);
	if (*udp_len < sizeof(*udp) || *udp_len > ip_len - ihl) {
		drop(w, m, SW_CNT_DROP_UDP_LEN);
		return false;
	}
	if (ip->dst_addr != sw->vip_be || udp->dst_port != sw->svc_port_be) {
		drop(w, m, SW_CNT_DROP_NOT_SERVICE);
		return false;
	}
	p->eth = eth;
	p->ip = ip;
	p->udp = udp;
	p->hdr = (uint8_t *)(udp + 1);
	return true;
}

/* The shortest frame of the common shape: every header, and a key of one byte. */
#define COMMON_MIN_LEN                                                                             \
	(RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) +            \
	 WIRE_HDR_LEN + 1)

/*
 * Whether m has the common shape, which parse_careful() takes without a
 * second look (and with the same result): one segment of Ethernet to the
 * VIP's MAC, IPv4 without options, unfragmented, with a right checksum,
 * ending where the frame does, and UDP to the VIP and the service port,
 * ending where the IPv4 datagram does. Its UDP length is then the frame's
 * less the two headers before it.
 */
static inline bool common_shape(const struct sw *sw, const struct rte_mbuf *m)
{
	uint32_t len = rte_pktmbuf_data_len(m);
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);

	return len >= COMMON_MIN_LEN && m->nb_segs == 1 &&
	       eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4) &&
	       mac_is(&eth->dst_addr, sw->mac_word) && ip->version_ihl == RTE_IPV4_VHL_DEF &&
	       ip->total_length == rte_cpu_to_be_16((uint16_t)(len - RTE_ETHER_HDR_LEN)) &&
	       !(ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) &&
	       ip->next_proto_id == IPPROTO_UDP &&
	       udp->dgram_len ==
		   rte_cpu_to_be_16((uint16_t)(len - RTE_ETHER_HDR_LEN - sizeof(*ip))) &&
	       ip->dst_addr == sw->vip_be && udp->dst_port == sw->svc_port_be &&
	       ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD ||
		ipv4_hdr_sum(ip, sizeof(*ip)) == 0xffff);
}

/*
 * Parse and validate one frame. Handles ARP, L2 and every drop itself and
 * returns K_DONE; returns the kind of a valid service datagram otherwise.
 */
static uint8_t classify(struct sw_worker *w, struct pkt *p, uint16_t in_port, uint32_t now_s)
{
	struct sw *sw = w->sw;
	uint16_t udp_len;
	enum wire_error err;

	if (likely(common_shape(sw, p->m))) {
		p->eth = rte_pktmbuf_mtod(p->m, struct rte_ether_hdr *);
		p->ip = (struct rte_ipv4_hdr *)(p->eth + 1);
		p->udp = (struct rte_udp_hdr *)(p->ip + 1);
		p->hdr = (uint8_t *)(p->udp + 1);
		udp_len = (uint16_t)(rte_pktmbuf_data_len(p->m) - RTE_ETHER_HDR_LEN -
				     sizeof(struct rte_ipv4_hdr));
		learn_source(w, p->eth, in_port, now_s);
	} else if (!parse_careful(w, p, in_port, now_s, &udp_len)) {
		return K_DONE;
	}
	/* The routing fields only: service_kind() reads the rest for what is not a request. */
	err = wire_decode_route(p->hdr, udp_len - sizeof(struct rte_udp_hdr), &p->msg);
	/* With a key, a control datagram ends in a MAC (proto/auth.h): decoded
	 * without it here, checked by its handler once its source is. */
	if (unlikely(err != WIRE_OK) &&
	    !(err == WIRE_ERR_TRAILING && sw->keyed && wire_op_authenticated(p->msg.op) &&
	      wire_decode(p->hdr, udp_len - sizeof(struct rte_udp_hdr) - WIRE_MAC_LEN, &p->msg) ==
		  WIRE_OK)) {
		drop(w, p->m, sw_cnt_wire(err));
		return K_DONE;
	}
	return service_kind(w, p, in_port, now_s);
}

/* ---- Stage 3: the service datagrams, after the bulk CDT lookup. ------------------------ */

/* The entry if it is really this key's (cdt_entry_is()), else NULL. */
static inline struct cdt_entry *entry_for(struct sw_worker *w, struct cdt_entry *e,
					  const struct wire_msg *msg)
{
	if (!e) {
		CNT(w, SW_CNT_CDT_MISS);
		return NULL;
	}
	if (!cdt_entry_is(e, msg->key, msg->key_len)) {
		CNT(w, SW_CNT_FP_MISMATCH);
		return NULL;
	}
	CNT(w, SW_CNT_CDT_HIT);
	return e;
}

/* The copies of st a read weighs: all, or all but a home spared (cdt_state_read_skip()). */
static inline const uint16_t *read_candidates(const struct sw *sw, const struct cdt_state *st,
					      uint16_t home, unsigned *n)
{
	unsigned skip = cdt_state_read_skip(st, home, sw->spare_home_from);

	*n = st->nreplicas - skip;
	return st->replicas + skip;
}

/*
 * The node a read of this key goes to now: the candidate of st with the
 * least expected delay; home when not in the directory (st NULL) or no
 * candidate is alive.
 */
static inline uint16_t read_target(struct sw_worker *w, const struct cdt_state *st, uint16_t home)
{
	const uint16_t *cand;
	unsigned n;
	uint16_t t;

	if (!st)
		return home;
	cand = read_candidates(w->sw, st, home, &n);
	t = sel_pick(&w->sw->scores, cand, n, &w->rng);
	return t == SEL_NONE ? home : t;
}

/* Decision log: what the choice among st's candidates saw (or only the chosen node). */
static __rte_noinline void log_decision(struct sw_worker *w, const struct pkt *p, uint16_t chosen,
					uint16_t home, bool in_dir, const struct cdt_state *st)
{
	struct sw_decision d;

	memset(&d, 0, sizeof(d));
	d.keyhash = p->msg.keyhash;
	d.chosen = chosen;
	d.home = home;
	d.op = p->msg.op;
	d.in_directory = in_dir;
	d.key_len = (uint8_t)RTE_MIN(p->msg.key_len, sizeof(d.key));
	memcpy(d.key, p->msg.key, d.key_len);
	if (st) {
		unsigned n;
		const uint16_t *cand = read_candidates(w->sw, st, home, &n);

		sel_explain(&w->sw->scores, cand, n, &d.trace);
	} else
		sel_explain(&w->sw->scores, &chosen, 1, &d.trace);
	if (rte_ring_mp_enqueue_elem(w->sw->log_ring, &d, sizeof(d)) == 0)
		CNT(w, SW_CNT_DEBUG_LOGS);
}

/* The reply will go to this client: remember where it lives (cheaply, see switchd.h). */
static inline void learn_client(struct sw_worker *w, const struct pkt *p, uint16_t in_port,
				uint32_t now_s)
{
	rte_be32_t ip = p->ip->src_addr; /* as it is on the wire: any order will do here */
	uint64_t who = (uint64_t)ip << 32 | now_s, where;
	typeof(w->learnt[0]) *c = &w->learnt[(ip ^ (ip >> 24)) & 63];

	/* The source MAC and the EtherType after it (IPv4 here), the port xored in. */
	memcpy(&where, &p->eth->src_addr, sizeof(where));
	where ^= (uint64_t)in_port << 48;
	if (c->who == who && c->where == where)
		return;
	l2_nb_learn(w->sw->l2, rte_be_to_cpu_32(ip), p->eth->src_addr.addr_bytes, (uint8_t)in_port,
		    now_s, false);
	c->who = who;
	c->where = where;
}

/*
 * May reads of e go to replicas? Without peers: whenever it is in the
 * directory. With peers: only keys this switch owns, whose routing every peer
 * confirmed, and only while every peer's lease runs (docs/protocol.md, "Peer
 * switches"); the deadline is checked here, not only by the control thread.
 */
static inline bool may_spread(const struct sw *sw, const struct cdt_entry *e, uint64_t now_tsc)
{
	if (!e)
		return false;
	if (!sw->npeers)
		return true;
	return __atomic_load_n(&e->owner, __ATOMIC_RELAXED) == 0 &&
	       __atomic_load_n(&e->spread, __ATOMIC_RELAXED) &&
	       now_tsc < __atomic_load_n(&sw->lease_until_tsc, __ATOMIC_RELAXED);
}

/*
 * A request for a key a peer switch owns: to that peer's VIP, return address
 * stamped with the client's; the owner routes it and answers the client.
 */
static __rte_noinline void to_owner(struct sw_worker *w, struct pkt *p, uint16_t owner,
				    uint32_t now_s)
{
	struct sw *sw = w->sw;
	const struct cfg_switch *peer = cfg_switch_by_id(sw->cfg, owner);
	int64_t acc;
	uint8_t out;

	if (!peer || !l2_nb_lookup(sw->l2, peer->vip, p->eth->dst_addr.addr_bytes, &out, now_s) ||
	    out >= sw->nports) {
		want_neighbour(w, peer ? peer->vip : 0);
		drop(w, p->m, SW_CNT_DROP_NO_NEIGHBOUR);
		return;
	}
	acc = 0;
	stamp_request(&acc, p->hdr, false, 0, p->ip->src_addr, p->udp->src_port);
	readdress(sw, p, rte_cpu_to_be_32(peer->vip), sw->svc_port_be, acc);
	CNT(w, SW_CNT_PEER_FORWARDED);
	tx(w, out, p->m);
}

/*
 * A chunked op (proto/chunk.h) is routed chunk by chunk like any request,
 * but counts once, as its chunk 0: a later chunk neither counts in flight at
 * its node nor feeds hot-key sampling. One flag test for everything else.
 */
static __rte_always_inline bool later_chunk(const struct wire_msg *msg)
{
	return unlikely(msg->flags & WIRE_F_CHUNK) && wire_chunk_is_later(msg);
}

/*
 * Replica groups (docs/design.md section 13): where a request for a key
 * outside the directory goes. A write goes to the key's primary, the first
 * member of its group the view does not skip; a read to the least-loaded
 * of those members, which serves it as a member if its copy is clean
 * (*member_read; otherwise it answers MOVED to the primary). 0: no member
 * is up.
 */
static __rte_noinline uint16_t group_target(struct sw_worker *w, const struct wire_msg *msg,
					    bool is_read, bool *member_read)
{
	struct sw *sw = w->sw;
	const struct ring *ring = sw_ring(sw);
	uint32_t point = keyhash_point(msg->keyhash);
	uint16_t ids[GROUP_MAX], up[GROUP_MAX], t;
	struct wire_view v;
	bool regrouped = sw_group_view(sw, &v); /* a node left out: repair's groups */
	unsigned n = regrouped ? view_group(ring, &v, point, sw->group_r, ids)
			       : ring_group(ring, point, sw->group_r, ids);
	unsigned nup = 0;

	for (unsigned i = 0; i < n; i++)
		if (!sw_group_skips(sw, ids[i]) &&
		    !(regrouped && group_is_new(ring, &v, point, sw->group_r, ids[i])))
			up[nup++] = ids[i];
	if (!nup)
		return 0;
	if (!is_read)
		return up[0];
	t = sel_pick(&sw->scores, up, nup, &w->rng);
	if (t == SEL_NONE)
		return up[0];
	*member_read = t != up[0];
	return t;
}

/*
 * Do replica groups route this request rather than the directory? With R
 * above 1, for a key outside it or one whose home the view skips (that
 * entry is passed by: views.c removes it).
 */
static __rte_always_inline bool by_group(const struct sw *sw, const struct cdt_entry *e,
					 uint16_t home)
{
	return unlikely(sw->group_r > 1) && (!e || sw_group_skips(sw, home));
}

/* The frame's IPv4 header's offset, for a held PUT (batch.h) to be parsed again. */
static inline uint16_t l3_off(const struct pkt *p)
{
	return (uint16_t)((const uint8_t *)p->ip - rte_pktmbuf_mtod(p->m, const uint8_t *));
}

/* A PUT held by batch.h, as classify() left it. */
static void held_pkt(struct pkt *p, const struct batch_write *wr)
{
	p->m = wr->m;
	p->eth = rte_pktmbuf_mtod(wr->m, struct rte_ether_hdr *);
	p->ip = rte_pktmbuf_mtod_offset(wr->m, struct rte_ipv4_hdr *, wr->l3_off);
	p->udp = (struct rte_udp_hdr *)((uint8_t *)p->ip + rte_ipv4_hdr_len(p->ip));
	p->hdr = (uint8_t *)(p->udp + 1);
	/* It decoded when it came (classify()); zeroed for the compiler's sake. */
	p->msg = (struct wire_msg){0};
	wire_decode_route(p->hdr, rte_be_to_cpu_16(p->udp->dgram_len) - sizeof(struct rte_udp_hdr),
			  &p->msg);
	p->e = NULL;
	p->kind = K_REQUEST;
}

static __rte_always_inline void route_request(struct sw_worker *w, struct pkt *p,
					      struct cdt_entry *e, uint16_t in_port, bool from_peer,
					      rte_be32_t ret_ip, rte_be16_t ret_port, bool sample,
					      const struct batch_riders *released,
					      uint64_t now_tsc);

/* The directory entry of a held PUT's key now, or NULL. */
static struct cdt_entry *held_entry(struct sw_worker *w, const struct pkt *p)
{
	struct cdt_entry *e = cdt_find(w->sw->cdt, p->msg.keyhash);

	return e && cdt_entry_is(e, p->msg.key, p->msg.key_len) ? e : NULL;
}

/*
 * Send a held PUT on, as it came, with the riders r names (NULL: on its
 * own), to its key's home: the entry is looked up again, as it may be gone.
 */
static void send_held(struct sw_worker *w, const struct batch_write *wr,
		      const struct batch_riders *r, uint64_t now_tsc)
{
	static const struct batch_riders none;
	struct pkt rp;

	held_pkt(&rp, wr);
	route_request(w, &rp, held_entry(w, &rp), wr->in_port, false, rp.ip->src_addr,
		      rp.udp->src_port, false, r ? r : &none, now_tsc);
}

/* Send held PUTs on, each on its own. */
static __rte_noinline void send_alone(struct sw_worker *w, const struct batch_write *wr, unsigned n,
				      uint64_t now_tsc)
{
	for (unsigned i = 0; i < n; i++)
		send_held(w, &wr[i], NULL, now_tsc);
}

/*
 * A PUT of a directory key on its way to its home: held while another of
 * the key is out (batch.h), or sent with the riders *out names. True when
 * it goes no further here.
 */
static __rte_noinline bool hold_put(struct sw_worker *w, struct pkt *p, uint16_t in_port,
				    uint64_t now_tsc, struct batch_riders *out)
{
	struct sw *sw = w->sw;
	struct batch_write wr = {.m = p->m,
				 .req_id = wire_get64(p->hdr + WIRE_OFF_REQ_ID),
				 .in_port = in_port,
				 .l3_off = l3_off(p)};
	struct batch_write alone[BATCH_MAX + 1];
	unsigned nalone;
	enum batch_verdict v = batch_put(sw->batches, p->msg.keyhash, &wr, now_tsc,
					 sw->batch_stale_tsc, out, alone, &nalone);

	w->counters[SW_CNT_BATCH_GIVEN_UP] += nalone;
	send_alone(w, alone, nalone, now_tsc);
	if (v == BATCH_HELD)
		CNT(w, SW_CNT_BATCH_HELD);
	else if (v == BATCH_DUPLICATE)
		drop(w, p->m, SW_CNT_BATCH_DUPLICATE);
	return v != BATCH_SEND;
}

/* Stamp how many held writes a PUT supersedes (0 for any other one it forwards). */
static __rte_always_inline void stamp_riders(int64_t *acc, uint8_t *h, uint8_t riders)
{
	uint8_t word[2] = {h[WIRE_OFF_STATUS], riders};
	uint16_t raw;

	memcpy(&raw, word, sizeof(raw));
	patch16(acc, h + WIRE_OFF_STATUS, raw);
}

/*
 * A batch's write, addressed: its riders' req_ids after its value (wire.h),
 * and its lengths and checksums anew. Rare: once per batch. The caller made
 * sure of the room.
 */
static __rte_noinline void append_riders(struct pkt *p, const struct batch_riders *r)
{
	uint16_t add = (uint16_t)(8u * r->n), ip_len = rte_be_to_cpu_16(p->ip->total_length);
	uint8_t *t;

	/* Anything after the IPv4 datagram (Ethernet padding) goes first. */
	rte_pktmbuf_trim(p->m, (uint16_t)(p->m->pkt_len - (l3_off(p) + ip_len)));
	t = (uint8_t *)rte_pktmbuf_append(p->m, add);
	for (unsigned i = 0; i < r->n; i++)
		wire_put64(t + 8 * i, r->req_id[i]);
	p->ip->total_length = rte_cpu_to_be_16((uint16_t)(ip_len + add));
	p->ip->hdr_checksum = 0;
	p->ip->hdr_checksum = rte_ipv4_cksum(p->ip);
	p->udp->dgram_len = rte_cpu_to_be_16((uint16_t)(rte_be_to_cpu_16(p->udp->dgram_len) + add));
	p->udp->dgram_cksum = 0;
	p->udp->dgram_cksum = rte_ipv4_udptcp_cksum(p->ip, p->udp);
}

/* Has p's frame room for r's req_ids? */
static inline bool room_for(const struct pkt *p, const struct batch_riders *r)
{
	uint32_t end = l3_off(p) + rte_be_to_cpu_16(p->ip->total_length);

	return end + 8u * r->n <= (uint32_t)p->m->buf_len - p->m->data_off;
}

/* Do this PUT's writes batch at this switch (batch.h)? A client's whole PUT of a directory key. */
static __rte_always_inline bool batches_put(const struct sw *sw, const struct pkt *p,
					    const struct cdt_entry *e, bool from_peer)
{
	return p->msg.op == WIRE_OP_PUT && e && !from_peer && !(p->msg.flags & WIRE_F_CHUNK) &&
	       sw->batches;
}

/*
 * Route a request and send it: to the node its key's entry, its group or
 * the ring names. sample: feed it to hot-key detection. released: a PUT
 * that batch.h sends out, with its riders; NULL for any other request, which
 * a PUT of a directory key may be held by (hold_put()).
 */
static __rte_always_inline void route_request(struct sw_worker *w, struct pkt *p,
					      struct cdt_entry *e, uint16_t in_port, bool from_peer,
					      rte_be32_t ret_ip, rte_be16_t ret_port, bool sample,
					      const struct batch_riders *released, uint64_t now_tsc)
{
	struct sw *sw = w->sw;
	const struct wire_msg *msg = &p->msg;
	uint16_t home;
	const struct cdt_state *st = NULL; /* the replica set a read chose from */
	bool is_read = msg->op == WIRE_OP_GET;
	struct batch_riders held_riders;
	const struct batch_riders *riders = released; /* what goes after the value */
	uint8_t out;
	uint16_t target;
	bool replica_read = false; /* served by a node that is not the key's home (or primary) */
	bool member_read = false;  /* that node is a member of the key's replica group */
	bool held = false, alive;
	int64_t acc = 0; /* the changes to the datagram, for the UDP checksum */

	/* A directory entry knows its home: no ring lookup for hot keys. */
	home = e ? e->home : ring_home(sw_ring(sw), msg->keyhash);
	if (by_group(sw, e, home)) {
		e = NULL;
		target = group_target(w, msg, is_read, &member_read);
		replica_read = member_read;
	} else if (!is_read)
		target = home;
	else if (may_spread(sw, e, now_tsc)) {
		st = cdt_entry_state(e);
		target = read_target(w, st, home);
		replica_read = target != home;
	} else {
		target = home;
		if (e && !__atomic_load_n(&e->owner, __ATOMIC_RELAXED))
			CNT(w, SW_CNT_LEASE_HOME_READS);
	}
	/* A read of a directory key gets the version it must return (0: not known yet). */
	if (is_read && e) {
		const struct cdt_state *now_st = st ? st : cdt_entry_state(e);

		if (now_st)
			stamp_version(&acc, p->hdr, now_st->completed);
	}
	alive = scores_alive(&sw->scores, target);
	/* A PUT of a directory key may wait for the one of it out (batch.h). */
	if (!released && alive && batches_put(sw, p, e, from_peer)) {
		held = hold_put(w, p, in_port, now_tsc, &held_riders);
		riders = &held_riders;
	}
	/* Sampled as a write when it costs the home one: a held PUT will not. */
	if (sample)
		intake_sample(w, msg, held);
	if (held) {
		w->entry_counters[e->index].writes++;
		return;
	}
	if (riders && riders->n && !room_for(p, riders))
		riders = NULL; /* sent without them: the home gives them no versions */
	if (unlikely((msg->flags & WIRE_F_DEBUG) || __atomic_load_n(&sw->debug, __ATOMIC_RELAXED)))
		log_decision(w, p, target, home, e != NULL, st);
	if (!alive) {
		CNT(w, SW_CNT_UNAVAILABLE);
		if (from_peer) /* the client is not behind the sender: let it time out and retry */
			drop(w, p->m, SW_CNT_DROP_NO_RETURN);
		else
			answer(w, p, in_port, WIRE_ST_UNAVAILABLE, target, 0, WIRE_F_VIA_SWITCH);
		return;
	}
	if (!l2_node_nb(sw->l2, target, p->eth->dst_addr.addr_bytes, &out) || out >= sw->nports) {
		want_neighbour(w, rte_be_to_cpu_32(sw->node_ip_be[target]));
		drop(w, p->m, SW_CNT_DROP_NO_NEIGHBOUR);
		return;
	}
	if (e && !released) { /* a batch's write was counted when it came */
		struct cdt_entry_counters *ec = &w->entry_counters[e->index];

		if (!is_read)
			ec->writes++;
		else if (replica_read)
			ec->replica_reads++;
		else
			ec->reads++;
	}
	if (msg->op == WIRE_OP_PUT)
		stamp_riders(&acc, p->hdr, riders ? riders->n : 0);
	stamp_request(&acc, p->hdr, replica_read, target, ret_ip, ret_port);
	readdress(sw, p, sw->node_ip_be[target], sw->node_port_be[target], acc);
	if (riders && riders->n)
		append_riders(p, riders);
	if (!later_chunk(msg))
		scores_row_inc(w->outstanding, target);
	if (member_read)
		CNT(w, SW_CNT_MEMBER_READS);
	else if (replica_read)
		CNT(w, SW_CNT_REPLICA_READS);
	CNT(w, SW_CNT_REQ_FORWARDED);
	tx(w, out, p->m);
}

/*
 * GET/PUT/DEL from a client (or from a peer switch that sent it to us as the
 * key's owner): count and sample it, then route it (route_request()).
 */
static void do_request(struct sw_worker *w, struct pkt *p, struct cdt_entry *e, uint16_t in_port,
		       uint32_t now_s, uint64_t now_tsc)
{
	struct sw *sw = w->sw;
	const struct wire_msg *msg = &p->msg;
	/* A peer already stamped the client's address; it is never sent on again. */
	bool from_peer =
	    unlikely(sw->npeers) && sw_peer_of_ip(sw, rte_be_to_cpu_32(p->ip->src_addr)) >= 0;
	rte_be32_t ret_ip = p->ip->src_addr;
	rte_be16_t ret_port = p->udp->src_port;
	uint16_t owner;
	bool sample = false;

	CNT(w, SW_CNT_REQUESTS);
	if (from_peer) {
		/* As the peer stamped them, in network order (not decoded for requests). */
		memcpy(&ret_ip, p->hdr + WIRE_OFF_RET_IP, sizeof(ret_ip));
		memcpy(&ret_port, p->hdr + WIRE_OFF_RET_PORT, sizeof(ret_port));
		CNT(w, SW_CNT_FROM_PEER);
		if (ret_ip == 0 || ret_port == 0) {
			drop(w, p->m, SW_CNT_DROP_NO_RETURN);
			return;
		}
	} else {
		/* Learn the client before anything can drop the request: its reply (or
		 * the switch's own answer) needs the way back, even right after a restart. */
		learn_client(w, p, in_port, now_s);
		/* 1 in sample_every client requests feeds hot-key detection (intake.c);
		 * a peer's forwarded requests were counted by that peer already. */
		if (__atomic_load_n(&sw->dir_on, __ATOMIC_RELAXED) && !later_chunk(msg) &&
		    --w->sample_countdown == 0) {
			w->sample_countdown = sw->sample_every;
			sample = true;
		}
	}
	e = entry_for(w, e, msg);
	owner = e ? __atomic_load_n(&e->owner, __ATOMIC_RELAXED) : 0;
	if (owner && !from_peer) {
		if (sample)
			intake_sample(w, msg, false);
		to_owner(w, p, owner, now_s);
		return;
	}
	route_request(w, p, e, in_port, from_peer, ret_ip, ret_port, sample, NULL, now_tsc);
}

/*
 * The node a reply or RC_ACK comes from: the one its `node` field names, when
 * it comes from that node's configured address. A MOVED reply names the key's
 * home there instead (a replica sending a reader home), so its sender is the
 * node whose address and port it comes from (a rare answer: the search costs
 * the rest nothing). 0: from no node.
 */
static uint16_t sender_node(const struct sw *sw, const struct pkt *p)
{
	if (p->msg.status != WIRE_ST_MOVED || !(p->msg.op & WIRE_REPLY))
		return from_node(sw, p) ? p->msg.node : 0;
	for (uint16_t id = 1; id <= CFG_MAX_NODES; id++)
		if (sw->node_ip_be[id] == p->ip->src_addr &&
		    sw->node_port_be[id] == p->udp->src_port)
			return id;
	return 0;
}

/*
 * Take a reply or RC_ACK from a node: refresh that node's neighbour entry and
 * return its id, or drop it (0) when it comes from no node.
 */
static inline uint16_t accept_from_node(struct sw_worker *w, struct pkt *p, uint16_t in_port,
					uint32_t now_s)
{
	struct sw *sw = w->sw;
	uint16_t node = sender_node(sw, p);

	if (!node) {
		drop(w, p->m, SW_CNT_DROP_NOT_FROM_NODE);
		return 0;
	}
	l2_nb_learn(sw->l2, rte_be_to_cpu_32(p->ip->src_addr), p->eth->src_addr.addr_bytes,
		    (uint8_t)in_port, now_s, false);
	return node;
}

/* Apply a directory event to e from this worker, counting lost races, updates and failures. */
static int apply_event(struct sw_worker *w, struct cdt_entry *e, enum cdt_event ev,
		       const struct wire_msg *msg)
{
	unsigned retries = 0;
	int r = cdt_apply(w->sw->cdt, w->index, e, ev, msg->version, msg->node, &retries);

	w->counters[SW_CNT_CDT_UPDATE_RETRIES] += retries;
	if (r > 0)
		CNT(w, SW_CNT_CDT_UPDATES);
	else if (r < 0)
		CNT(w, SW_CNT_CDT_UPDATE_FAILED);
	return r;
}

/* May node join e's set by confirming a version? Not the node a trim took out (cdt.h). */
static inline bool may_join(const struct cdt_entry *e, uint16_t node)
{
	return node != __atomic_load_n(&e->trimmed, __ATOMIC_RELAXED);
}

/*
 * A home's write-through reply lists the nodes that confirmed they hold its
 * version (16-bit ids in the value): each joins the set, as its RC_ACK would.
 */
static void add_holders(struct sw_worker *w, struct cdt_entry *e, const struct wire_msg *msg)
{
	for (uint32_t i = 0; i + 1 < msg->val_len; i += 2) {
		struct wire_msg ack = *msg;

		ack.node = wire_get16(msg->value + i);
		if (ack.node <= WIRE_MAX_NODE && may_join(e, ack.node) &&
		    apply_event(w, e, CDT_EV_RC_ACK, &ack) > 0)
			CNT(w, SW_CNT_THROUGH_HOLDERS);
	}
}

/*
 * A copy answered MOVED to a read sent to it: it lacks the version the read
 * was stamped with (nodes/server.c), so it leaves the key's set (never the
 * home: cdt_state_without()). Answering at once, it would otherwise look the
 * least loaded and draw every read of the key until the next write.
 */
static __rte_noinline void drop_moved_copy(struct sw_worker *w, struct cdt_entry *e,
					   uint16_t sender)
{
	if (cdt_apply(w->sw->cdt, w->index, e, CDT_EV_DROP, 0, sender, NULL) > 0)
		CNT(w, SW_CNT_MOVED_COPIES);
}

/*
 * Apply a reply from node `sender` to the directory (docs/design.md section
 * 5); the key's entry, or NULL when it is not in it.
 */
static struct cdt_entry *learn_version(struct sw_worker *w, struct pkt *p, struct cdt_entry *e,
				       uint16_t sender)
{
	const struct wire_msg *msg = &p->msg;

	e = entry_for(w, e, msg);
	if (!e)
		return NULL;
	if (unlikely(msg->status == WIRE_ST_MOVED) && (msg->flags & WIRE_F_REPLICA_READ))
		drop_moved_copy(w, e, sender);
	if (msg->status != WIRE_ST_OK && msg->status != WIRE_ST_NOT_FOUND)
		return e;
	const struct cdt_state *st = cdt_entry_state(e);
	bool advanced;

	/*
	 * An entry whose completed version is not known yet (a fresh one) must
	 * not start from a version older than one the home has answered. It
	 * takes its version from the home's REPLICATE reply, or from a write
	 * reply that was not pushed, never from a read's: a read served the
	 * version kept while a write was pushed, and its reply may leave after
	 * that write's. Nor from a write-through reply, which may come late (its
	 * push took a while), after the home answered newer writes.
	 */
	if ((!st || st->completed == 0) &&
	    (msg->op == (WIRE_OP_GET | WIRE_REPLY) || (msg->flags & WIRE_F_WRITE_THROUGH)))
		return e;
	advanced = apply_event(w, e, CDT_EV_REPLY, msg) > 0;

	if (msg->op != (WIRE_OP_PUT | WIRE_REPLY) && msg->op != (WIRE_OP_DEL | WIRE_REPLY))
		return e;
	/* Also when a read of the new version advanced the set to the home first. */
	if (msg->flags & WIRE_F_WRITE_THROUGH)
		add_holders(w, e, msg);
	if (advanced) {
		CNT(w, SW_CNT_WRITE_COMPLETIONS);
		w->entry_counters[e->index].completions++;
		/* The set is {home} and the holders now: have it filled up if short. */
		intake_completed(w, e->keyhash, msg->version);
	}
	return e;
}

/*
 * The reply to a PUT batch.h sent out: answer its riders, each with its own
 * version, oldest first, when the home gave them all one; otherwise send
 * each on its own, as it came (the write failed, and the riders were never
 * applied; or one was applied before, and the home answers its retry from
 * its first attempt). Then send the next batch's write.
 */
static void end_batch(struct sw_worker *w, const struct pkt *p, const struct cdt_entry *e,
		      uint64_t now_tsc)
{
	const struct wire_msg *msg = &p->msg;
	struct batch_done done;
	struct pkt rp;

	if (!batch_answered(w->sw->batches, msg->keyhash, msg->req_id, now_tsc, &done))
		return;
	if (msg->status == WIRE_ST_OK && msg->riders == done.nriders) {
		for (unsigned i = 0; i < done.nriders; i++) {
			held_pkt(&rp, &done.rider[i]);
			answer(w, &rp, done.rider[i].in_port, WIRE_ST_OK, msg->node,
			       msg->version - done.nriders + i,
			       (uint16_t)(WIRE_F_VIA_SWITCH | (e ? WIRE_F_REPLICATED : 0)));
		}
		w->counters[SW_CNT_BATCH_RIDERS] += done.nriders;
	} else {
		send_alone(w, done.rider, done.nriders, now_tsc);
	}
	if (done.send_next)
		send_held(w, &done.next, &done.out, now_tsc);
}

/* A node's reply: update load and directory, then send it to the client's return address. */
static __rte_noinline void do_reply(struct sw_worker *w, struct pkt *p, struct cdt_entry *e,
				    uint16_t in_port, uint32_t now_s, uint64_t now_tsc)
{
	struct sw *sw = w->sw;
	const struct wire_msg *msg = &p->msg;
	uint8_t out;
	bool in_dir;
	uint16_t sender;
	int64_t acc = 0;

	CNT(w, SW_CNT_REPLIES);
	sender = accept_from_node(w, p, in_port, now_s);
	if (!sender)
		return;
	if (p->kind == K_REPLY && !later_chunk(msg))
		scores_inflight_dec(&sw->scores, w->index, sender, now_tsc);
	else if (sw->keyed && !authentic(w, p)) /* a REPLICATE or UNREPLICATE reply */
		return;
	/* Published (release) here, before the reply is buffered for TX below. */
	e = learn_version(w, p, e, sender);
	in_dir = e != NULL;
	if (msg->op == (WIRE_OP_PUT | WIRE_REPLY) && p->kind == K_REPLY && sw->batches)
		end_batch(w, p, e, now_tsc);
	if (p->kind == K_CTL_REPLY) {
		CNT(w, SW_CNT_CTL_REPLIES);
		rte_pktmbuf_free(p->m);
		return;
	}
	if (msg->ret_ip == 0 || msg->ret_port == 0) {
		drop(w, p->m, SW_CNT_DROP_NO_RETURN);
		return;
	}
	if (!l2_nb_lookup(sw->l2, msg->ret_ip, p->eth->dst_addr.addr_bytes, &out, now_s) ||
	    out >= sw->nports) {
		want_neighbour(w, msg->ret_ip);
		drop(w, p->m, SW_CNT_DROP_NO_NEIGHBOUR);
		return;
	}
	/* To the return address, which the header keeps; flags VIA_SWITCH and,
	 * exactly when the key is in the directory, REPLICATED. */
	patch_flags(&acc, p->hdr, (uint16_t)~WIRE_F_REPLICATED,
		    in_dir ? RTE_BE16(WIRE_F_VIA_SWITCH | WIRE_F_REPLICATED)
			   : RTE_BE16(WIRE_F_VIA_SWITCH));
	readdress(sw, p, rte_cpu_to_be_32(msg->ret_ip), rte_cpu_to_be_16(msg->ret_port), acc);
	CNT(w, SW_CNT_REPLY_FORWARDED);
	tx(w, out, p->m);
}

/* RC_ACK(v) from a replica: it holds v; join the set when v is the completed version. */
static __rte_noinline void do_rc_ack(struct sw_worker *w, struct pkt *p, struct cdt_entry *e,
				     uint16_t in_port, uint32_t now_s, uint64_t now_tsc)
{
	struct sw *sw = w->sw;
	const struct wire_msg *msg = &p->msg;

	CNT(w, SW_CNT_RC_ACKS);
	if (!accept_from_node(w, p, in_port, now_s) || (sw->keyed && !authentic(w, p)))
		return;
	e = entry_for(w, e, msg);
	if (e && may_join(e, msg->node) && apply_event(w, e, CDT_EV_RC_ACK, msg) > 0) {
		const struct cdt_state *st = cdt_entry_state(e);

		/* Replication lag: this version's completion to this replica's ack. */
		if (st->completed == msg->version && st->completed_tsc &&
		    now_tsc > st->completed_tsc) {
			w->counters[SW_CNT_REPL_LAG_US] +=
			    (now_tsc - st->completed_tsc) * 1000000u / sw->tsc_hz;
			CNT(w, SW_CNT_REPL_LAG_SAMPLES);
		}
		CNT(w, SW_CNT_RC_ACK_ADDED);
		w->entry_counters[e->index].acks_added++;
	}
	rte_pktmbuf_free(p->m);
}

/* HINT: which node would a read of this key go to now (docs/protocol.md). */
static __rte_noinline void do_hint(struct sw_worker *w, struct pkt *p, struct cdt_entry *e,
				   uint16_t in_port, uint64_t now_tsc)
{
	struct sw *sw = w->sw;
	const struct cdt_state *st = NULL;
	uint16_t home, target;
	uint64_t version = 0;

	e = entry_for(w, e, &p->msg);
	home = e ? e->home : ring_home(sw_ring(sw), p->msg.keyhash);
	if (by_group(sw, e, home)) {
		bool member_read = false;

		e = NULL;
		target = group_target(w, &p->msg, true, &member_read);
	} else {
		/* A key this switch may not spread (a peer's, or no lease) is read at its home. */
		if (may_spread(sw, e, now_tsc)) {
			st = cdt_entry_state(e);
			version = st->completed;
		}
		target = read_target(w, st, home);
	}
	CNT(w, SW_CNT_HINTS);
	answer(w, p, in_port, scores_alive(&sw->scores, target) ? WIRE_ST_OK : WIRE_ST_UNAVAILABLE,
	       target, version, (uint16_t)(WIRE_F_VIA_SWITCH | (e ? WIRE_F_REPLICATED : 0)));
}

/*
 * A burst in stages, each prefetching for the next (as DPDK's l3fwd_em_hlm.h):
 *   parse    classify() every frame; prefetch the frame 4 ahead and, for
 *            each datagram the directory does not hold, its ring-table entry;
 *   look up  in the CDT, at once, the keyhashes its filter may hold (most
 *            keys are not in the directory); prefetch the entries found;
 *   handle   each datagram in order; prefetch the next one's replica set.
 */
static void process_burst(struct sw_worker *w, uint16_t in_port, struct rte_mbuf **mbufs,
			  uint16_t n, uint64_t now_tsc)
{
	struct sw *sw = w->sw;
	const struct cdt *cdt = sw->cdt;
	/* For the prefetch only: the handlers load it again (a ring change mid-burst is fine). */
	const struct ring *ring = sw_ring(sw);
	uint32_t now_s = (uint32_t)(now_tsc / sw->tsc_hz);
	struct pkt pkts[SW_BURST + 1]; /* and an end with no entry, for stage 3's prefetch */
	const void *keys[SW_BURST];    /* &p->msg.keyhash of the datagrams looked up */
	hash_sig_t sigs[SW_BURST];
	void *data[SW_BURST];
	struct pkt *p = pkts;
	uint64_t hits = 0;
	unsigned nk, nl = 0;

	/* Parse. The mbufs themselves are warm: the PMD has just written them. */
	w->burst_src = 0;
	for (uint16_t i = 0; i < n && i < 4; i++)
		rte_prefetch0(rte_pktmbuf_mtod(mbufs[i], void *));
	for (uint16_t i = 0; i < n; i++) {
		if (i + 4 < n)
			rte_prefetch0(rte_pktmbuf_mtod(mbufs[i + 4], void *));
		p->m = mbufs[i];
		p->kind = classify(w, p, in_port, now_s);
		if (p->kind == K_DONE)
			continue;
		p->e = NULL;
		if (cdt_may_hold(cdt, p->msg.keyhash)) {
			keys[nl] = &p->msg.keyhash;
			sigs[nl++] = cdt_sig(p->msg.keyhash);
		} else {
			/* Not in the directory: stage 3 reads its home in the ring. */
			ring_home_prefetch(ring, p->msg.keyhash);
		}
		p++;
	}
	nk = (unsigned)(p - pkts);
	if (nk == 0)
		return;
	p->e = NULL;

	/* Look up. */
	if (nl) {
		rte_hash_lookup_with_hash_bulk_data(cdt->hash, keys, sigs, nl, &hits, data);
		for (uint64_t h = hits; h; h &= h - 1) {
			unsigned j = (unsigned)__builtin_ctzll(h);

			container_of(keys[j], struct pkt, msg.keyhash)->e = data[j];
			rte_prefetch0(data[j]);
		}
	}

	/* Handle. */
	for (p = pkts; p < pkts + nk; p++) {
		/*
		 * The next datagram's replica set, when it is a hit: only a hint
		 * (a prefetch never faults), under this burst's RCU read side.
		 */
		if (p[1].e)
			rte_prefetch0(__atomic_load_n(&p[1].e->state, __ATOMIC_RELAXED));
		if (likely(p->kind == K_REQUEST)) {
			do_request(w, p, p->e, in_port, now_s, now_tsc);
			continue;
		}
		switch (p->kind) {
		case K_REPLY:
		case K_CTL_REPLY:
			do_reply(w, p, p->e, in_port, now_s, now_tsc);
			break;
		case K_RC_ACK:
			do_rc_ack(w, p, p->e, in_port, now_s, now_tsc);
			break;
		case K_HINT:
			do_hint(w, p, p->e, in_port, now_tsc);
			break;
		}
	}
}

/* Worker 0 sends what the control thread queued (ARP requests from the VIP). */
static void send_control_frames(struct sw_worker *w)
{
	struct rte_mbuf *m;

	while (rte_ring_sc_dequeue(w->sw->ctl_tx_ring, (void **)&m) == 0) {
		if (m->port < w->sw->nports)
			tx(w, m->port, m);
		else
			rte_pktmbuf_free(m);
	}
}

/*
 * Worker 0, now and then: give up the batches whose write was never
 * answered and whose key had no PUT since (batch_put() gives up the others).
 */
static void sweep_batches(struct sw_worker *w, uint64_t now_tsc)
{
	struct sw *sw = w->sw;
	struct batch_write alone[BATCH_MAX];
	unsigned n;

	if (!sw->batches || now_tsc - sw->last_sweep_tsc < sw->batch_stale_tsc)
		return;
	sw->last_sweep_tsc = now_tsc;
	n = batch_sweep(sw->batches, now_tsc, sw->batch_stale_tsc, alone, BATCH_MAX);
	w->counters[SW_CNT_BATCH_GIVEN_UP] += n;
	send_alone(w, alone, n, now_tsc);
}

unsigned pipeline_poll(struct sw_worker *w)
{
	struct sw *sw = w->sw;
	struct rte_mbuf *mbufs[SW_BURST];
	uint64_t start = rte_rdtsc(), now;
	unsigned total = 0;

	for (uint16_t q = 0; q < w->nrxq; q++) {
		uint16_t port = w->rxq[q].port;
		uint16_t n =
		    rte_eth_rx_burst(sw->ports[port].port_id, w->rxq[q].queue, mbufs, SW_BURST);

		if (n == 0)
			continue;
		w->port_counters[port][SW_PCNT_RX] += n;
		w->counters[SW_CNT_RX] += n;
		process_burst(w, port, mbufs, n, start);
		total += n;
	}
	now = rte_rdtsc();
	if (total) {
		w->busy_cycles += now - start;
		w->busy_packets += total;
	}
	if (now - w->last_drain_tsc >= sw->drain_tsc) {
		if (w->index == 0) {
			send_control_frames(w);
			sweep_batches(w, now);
		}
		pipeline_flush(w);
		cdt_reclaim(sw->cdt, w->index);
		/* Also a sign of life for failure detection (intake.c). */
		__atomic_store_n(&w->last_drain_tsc, now, __ATOMIC_RELAXED);
	}
	/* Between bursts this worker holds no CDT state pointer. */
	rte_rcu_qsbr_quiescent(sw->qsbr, w->index);
	return total;
}

/*
 * Sleep idle_sleep_us, or less: a frame that lands in a receive ring with a
 * wake descriptor (ports.c) ends the sleep, as net_tap's Rx signal does for
 * its ports (docs/design.md section 9).
 */
static void idle_sleep(struct sw_worker *w)
{
	uint32_t us = w->sw->idle_sleep_us;
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};

	if (w->nwake)
		ppoll(w->wake, w->nwake, &ts, NULL);
	else
		usleep(us);
}

int pipeline_main(void *arg)
{
	struct sw_worker *w = arg;
	struct sw *sw = w->sw;

	rte_rcu_qsbr_thread_online(sw->qsbr, w->index);
	while (!__atomic_load_n(&sw->stop, __ATOMIC_RELAXED)) {
		if (pipeline_poll(w)) {
			w->idle_polls = 0;
			continue;
		}
		/*
		 * Idle backoff: after idle_polls empty polls in a row, sleep, so a
		 * 2-core machine keeps room for nodes. Offline while asleep: QSBR
		 * grace periods never wait for a sleeping worker.
		 */
		if (++w->idle_polls >= sw->idle_polls && sw->idle_sleep_us) {
			pipeline_flush(w);
			rte_rcu_qsbr_thread_offline(sw->qsbr, w->index);
			idle_sleep(w);
			rte_rcu_qsbr_thread_online(sw->qsbr, w->index);
		}
	}
	pipeline_flush(w);
	rte_rcu_qsbr_thread_offline(sw->qsbr, w->index);
	return 0;
}
