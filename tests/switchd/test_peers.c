/*
 * test_peers.c - the peer-switch protocol (switchd/peer.c) on a simulated
 * clock: window merge and the majority rule, rendezvous ownership, the lease and
 * liveness state machine, owned lists across several datagrams, score deltas.
 * Two protocol states talk through peer_build() -> peer_receive().
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "keyhash.h"
#include "peer.h"
#include "wire.h"

#define MS  1000ull
#define CAP 1424 /* a 1500-byte MTU minus IPv4, UDP and the wire header */

static struct cfg *cfg;

static void load_cfg(const char *extra)
{
	char err[CFG_ERR_LEN], json[4096];

	snprintf(json, sizeof(json),
		 "{\"service\":{\"vip\":\"127.0.0.1\"},"
		 "\"switches\":[{\"id\":1,\"name\":\"w1\",\"vip\":\"127.0.0.11\","
		 "\"mac\":\"02:00:00:00:00:01\",\"peers\":[2],\"ports\":[{\"name\":\"p\",\"vdev\":"
		 "\"net_null0\"}]},"
		 "{\"id\":2,\"name\":\"w2\",\"vip\":\"127.0.0.12\",\"mac\":\"02:00:00:00:00:02\","
		 "\"peers\":[1],\"ports\":[{\"name\":\"p\",\"vdev\":\"net_null0\"}]}],"
		 "\"nodes\":[{\"id\":1,\"name\":\"n1\",\"ip\":\"127.0.0.1\",\"port\":1},"
		 "{\"id\":2,\"name\":\"n2\",\"ip\":\"127.0.0.1\",\"port\":2},"
		 "{\"id\":3,\"name\":\"n3\",\"ip\":\"127.0.0.1\",\"port\":3},"
		 "{\"id\":4,\"name\":\"n4\",\"ip\":\"127.0.0.1\",\"port\":4}]%s}",
		 extra);
	free(cfg);
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg || cfg_load_string(json, "test", cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "test_peers: %s\n", err);
		exit(EXIT_FAILURE);
	}
}

/* ---- A little network: datagrams built by one state, delivered to another. ---------------- */

struct wire_log {
	unsigned n;
	size_t len[64];
	uint8_t buf[64][CAP];
};

static void capture(void *arg, const uint8_t *buf, size_t len)
{
	struct wire_log *l = arg;

	ck_assert_uint_lt(l->n, 64);
	ck_assert_uint_le(len, CAP);
	memcpy(l->buf[l->n], buf, len);
	l->len[l->n++] = len;
}

struct fake_scores {
	struct wire_log log;
	struct sync_score s[8];
};

static void fake_score(void *arg, uint16_t node, struct sync_score *s)
{
	struct fake_scores *f = arg;

	*s = f->s[node];
	s->node = node;
}

static void emit_fake(void *arg, const uint8_t *buf, size_t len)
{
	capture(&((struct fake_scores *)arg)->log, buf, len);
}

static struct fake_scores net;

/* Build what `from` sends its peer (slot 1) at now and deliver it to `to` at now + delay. */
static unsigned exchange(struct peer_state *from, struct peer_state *to, uint64_t now,
			 uint64_t delay)
{
	uint16_t nodes[4] = {1, 2, 3, 4};
	unsigned n;

	net.log.n = 0;
	peer_build(from, 1, now, CAP, nodes, 4, fake_score, emit_fake, &net);
	n = net.log.n;
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(peer_receive(to, net.log.buf[i], net.log.len[i], now + delay),
				 SYNC_OK);
	return n;
}

static void two(struct peer_state *a, struct peer_state *b)
{
	ck_assert_int_eq(peer_init(a, cfg, 1, 0xa1, 0), 0);
	ck_assert_int_eq(peer_init(b, cfg, 2, 0xb2, 0), 0);
	for (int i = 1; i <= 4; i++)
		net.s[i] = (struct sync_score){
		    .node = (uint16_t)i, .health = 90, .alive = 1, .age_ms = 20};
}

/* ---- Windows and the majority rule. -------------------------------------------------------- */

/* One epoch of this switch with the given keys (counts), then a sync tick. */
static void epoch(struct peer_state *ps, uint64_t now, const char **keys, const uint64_t *counts,
		  unsigned n)
{
	struct hot_report *r = calloc(1, sizeof(*r));

	r->samples = 1000;
	for (unsigned i = 0; i < n; i++) {
		struct hot_key *k = &r->hot[r->nhot++];

		k->keyhash = keyhash(keys[i], strlen(keys[i]));
		k->count = counts[i];
		k->key_len = (uint16_t)strlen(keys[i]);
		memcpy(k->key, keys[i], k->key_len);
	}
	peer_add_epoch(ps, r);
	free(r);
	ck_assert(peer_tick(ps, now));
}

static bool is_hot(const struct peer_state *ps, const char *key)
{
	uint64_t kh = keyhash(key, strlen(key));

	for (uint32_t i = 0; i < ps->nhot; i++)
		if (ps->hot[i].keyhash == kh)
			return true;
	return false;
}

START_TEST(majority_of_windows_alone_reduces_to_local)
{
	struct peer_state a;
	const char *keys[] = {"hot", "flash"};
	uint64_t counts[] = {300, 200};

	load_cfg(",\"directory\":{\"top_k\":2},\"sync\":{\"window\":5}");
	ck_assert_int_eq(peer_init(&a, cfg, 1, 1, 0), 0);
	/* "hot" in every window, "flash" in 2 of 5: only "hot" has the majority (3). */
	epoch(&a, 0, keys, counts, 2);
	ck_assert(!is_hot(&a, "hot")); /* one window of five is no majority yet */
	epoch(&a, 200 * MS, keys, counts, 2);
	epoch(&a, 400 * MS, keys, counts, 1);
	ck_assert(is_hot(&a, "hot"));
	ck_assert(is_hot(&a, "flash") == false);
	epoch(&a, 600 * MS, keys, counts, 1);
	epoch(&a, 800 * MS, keys, counts, 1);
	ck_assert(is_hot(&a, "hot"));
	ck_assert(!is_hot(&a, "flash"));
	/* Cold for 3 windows: no longer a majority. */
	epoch(&a, 1000 * MS, NULL, NULL, 0);
	epoch(&a, 1200 * MS, NULL, NULL, 0);
	ck_assert(is_hot(&a, "hot"));
	epoch(&a, 1400 * MS, NULL, NULL, 0);
	ck_assert(!is_hot(&a, "hot"));
	peer_fini(&a);
}
END_TEST

START_TEST(merged_windows_sum_counts_over_live_switches)
{
	struct peer_state a, b;
	const char *ka[] = {"a-only", "shared"}, *kb[] = {"b-only", "shared"};
	uint64_t c[] = {100, 60};

	load_cfg(",\"directory\":{\"top_k\":1},\"sync\":{\"window\":3}");
	two(&a, &b);
	/* Alone, each switch's top-1 is its own key; merged, "shared" (120) beats both (100). */
	for (int w = 0; w < 3; w++) {
		uint64_t t = (uint64_t)w * 200 * MS;

		epoch(&a, t, ka, c, 2);
		epoch(&b, t, kb, c, 2);
		exchange(&a, &b, t, 1 * MS);
		exchange(&b, &a, t, 1 * MS);
	}
	peer_compute_hot(&a, 401 * MS);
	peer_compute_hot(&b, 401 * MS);
	ck_assert(is_hot(&a, "shared") && is_hot(&b, "shared"));
	ck_assert(!is_hot(&a, "a-only") && !is_hot(&b, "b-only"));
	ck_assert_uint_eq(a.nhot, 1);
	ck_assert_uint_eq(a.hot[0].count, 3 * 120);
	/* b dead at a (no SYNC for D): a's own windows alone again. */
	peer_compute_hot(&a, 401 * MS + 1000 * MS);
	ck_assert(is_hot(&a, "a-only") && !is_hot(&a, "shared"));
	peer_fini(&a);
	peer_fini(&b);
}
END_TEST

START_TEST(after_a_partition_both_switches_merge_the_same_windows)
{
	struct peer_state a, b;
	const char *ka[] = {"a"}, *kb[] = {"b"};
	uint64_t c[] = {100};
	uint64_t t = 10000 * MS;

	load_cfg(",\"sync\":{\"window\":5}");
	two(&a, &b);
	for (int r = 0; r < 5; r++, t += 200 * MS) {
		epoch(&a, t, ka, c, 1);
		epoch(&b, t, kb, c, 1);
		exchange(&a, &b, t, 1 * MS);
		exchange(&b, &a, t, 1 * MS);
	}
	/* Cut off for 2 s: each closes 10 windows the other never sees. */
	for (int r = 0; r < 10; r++, t += 200 * MS) {
		epoch(&a, t, ka, c, 1);
		epoch(&b, t, kb, c, 1);
	}
	ck_assert(!peer_live(&a, 1, t) && !peer_live(&b, 1, t));
	/* Back in touch: the first round carries every window, not just the newest. */
	exchange(&a, &b, t, 1 * MS);
	exchange(&b, &a, t, 1 * MS);
	for (unsigned i = 0; i < 5; i++) {
		ck_assert_uint_eq(a.slot[1].win[i].id, b.slot[0].win[i].id);
		ck_assert_uint_eq(b.slot[1].win[i].id, a.slot[0].win[i].id);
	}
	peer_compute_hot(&a, t + 2 * MS);
	peer_compute_hot(&b, t + 2 * MS);
	ck_assert(is_hot(&a, "a") && is_hot(&a, "b") && is_hot(&b, "a") && is_hot(&b, "b"));
	peer_fini(&a);
	peer_fini(&b);
}
END_TEST

/* ---- Rendezvous ownership. ------------------------------------------------------------------ */

START_TEST(rendezvous_owner_is_stable_and_balanced)
{
	struct peer_state a, b;
	unsigned mine = 0;

	load_cfg("");
	two(&a, &b);
	exchange(&a, &b, 0, 1 * MS);
	exchange(&b, &a, 0, 1 * MS);
	for (uint64_t k = 0; k < 10000; k++) {
		uint64_t kh = keyhash(&k, sizeof(k));
		uint16_t oa = peer_owner(&a, kh, 2 * MS), ob = peer_owner(&b, kh, 2 * MS);

		ck_assert_uint_eq(oa, ob); /* both sides agree */
		ck_assert_uint_eq(oa, peer_rendezvous(1, kh) > peer_rendezvous(2, kh) ? 1 : 2);
		mine += oa == 1;
		/* The other one dead: every key is this switch's. */
		ck_assert_uint_eq(peer_owner(&a, kh, 2000 * MS), 1);
	}
	ck_assert_uint_gt(mine, 4500);
	ck_assert_uint_lt(mine, 5500);
	peer_fini(&a);
	peer_fini(&b);
}
END_TEST

/* ---- Leases and liveness. ------------------------------------------------------------------- */

START_TEST(lease_ends_before_the_peer_judges_us_dead)
{
	struct peer_state a, b;
	uint64_t until, T0 = 10000 * MS; /* the clock is never near 0 (0 means "none") */

	load_cfg("");
	two(&a, &b);
	ck_assert(!peer_live(&a, 1, T0));
	ck_assert(!peer_all_leases(&a, T0, &until));
	/* a's heartbeat at T0 reaches b at 1 ms; b echoes it at 200 ms, a gets it at 201 ms. */
	exchange(&a, &b, T0, 1 * MS);
	ck_assert(peer_live(&b, 1, T0 + 1 * MS));
	ck_assert(!peer_lease(&a, 1, T0 + 1 * MS));
	exchange(&b, &a, T0 + 200 * MS, 1 * MS);
	ck_assert(peer_live(&a, 1, T0 + 201 * MS));
	ck_assert(peer_lease(&a, 1, T0 + 201 * MS));
	ck_assert_uint_eq(a.slot[1].lag_us, 201 * MS);
	/* The lease runs from a's send time (0): L = 600 ms. */
	ck_assert(peer_all_leases(&a, T0 + 300 * MS, &until));
	ck_assert_uint_eq(until, T0 + 600 * MS);
	ck_assert(peer_lease(&a, 1, T0 + 599 * MS));
	ck_assert(!peer_lease(&a, 1, T0 + 600 * MS));
	/* b last heard a at 1 ms: a stays live at b until 1001 ms, after a's lease ended. */
	ck_assert(peer_live(&b, 1, T0 + 1000 * MS));
	ck_assert(!peer_live(&b, 1, T0 + 1001 * MS));
	ck_assert_uint_lt(until, T0 + 1001 * MS);
	/* Nothing is echoed that b never received: b echoes only a's t=0 heartbeat. */
	exchange(&b, &a, T0 + 700 * MS, 1 * MS);
	ck_assert(!peer_lease(&a, 1, T0 + 701 * MS));
	peer_fini(&a);
	peer_fini(&b);
}
END_TEST

START_TEST(echoes_of_another_incarnation_or_the_future_are_ignored)
{
	struct peer_state a, b;

	load_cfg("");
	two(&a, &b);
	exchange(&a, &b, 5000 * MS, 1 * MS);
	/* a restarts (new incarnation, same clock): b's echo is of the old one. */
	peer_fini(&a);
	ck_assert_int_eq(peer_init(&a, cfg, 1, 0xa2, 0), 0);
	exchange(&b, &a, 5100 * MS, 1 * MS);
	ck_assert(!peer_lease(&a, 1, 5101 * MS));
	/* An echo from the future (b claims to have heard a at a time a has not reached). */
	exchange(&a, &b, 9000 * MS, 1 * MS);
	net.log.n = 0;
	uint16_t nodes[1] = {1};
	peer_build(&b, 1, 9100 * MS, CAP, nodes, 1, fake_score, emit_fake, &net);
	ck_assert_int_eq(peer_receive(&a, net.log.buf[0], net.log.len[0], 8000 * MS), SYNC_OK);
	ck_assert(!peer_lease(&a, 1, 8000 * MS));
	/* A SYNC from a switch that is not a configured peer is refused. */
	struct peer_state c;
	load_cfg(",\"sync\":{\"window\":5}");
	ck_assert_int_eq(peer_init(&c, cfg, 2, 0xc3, 0), 0);
	ck_assert_int_eq(peer_receive(&c, net.log.buf[0], net.log.len[0], 1), SYNC_ERR_SENDER);
	peer_fini(&a);
	peer_fini(&b);
	peer_fini(&c);
}
END_TEST

START_TEST(a_restarted_peer_is_forgotten)
{
	struct peer_state a, b;
	uint64_t kh = keyhash("k", 1);
	struct peer_key k = {.keyhash = kh, .key_len = 1, .key = "k"};

	load_cfg("");
	two(&a, &b);
	peer_set_owned(&b, &k, 1);
	exchange(&b, &a, 0, 1 * MS);
	ck_assert_uint_eq(a.slot[1].nowned, 1);
	ck_assert(a.slot[1].owned_fresh);
	a.slot[1].owned_fresh = false;
	a.slot[1].applied_version = a.slot[1].owned_version;
	peer_fini(&b);
	ck_assert_int_eq(peer_init(&b, cfg, 2, 0xb3, 0), 0);
	exchange(&b, &a, 10 * MS, 1 * MS);
	ck_assert_uint_eq(a.slot[1].nowned, 0);
	ck_assert(a.slot[1].owned_fresh);
	ck_assert_uint_eq(a.slot[1].incarnation, 0xb3);
	peer_fini(&a);
	peer_fini(&b);
}
END_TEST

/* ---- Ring changes travel with every SYNC (docs/design.md section 12). ------------------------ */

/*
 * A's ring reaches b in every datagram; a step waits for a live peer that is
 * not ready for it, not for one that is not live (its lease from us has
 * ended); a reordered older datagram does not take a peer's ring back; a
 * restarted peer's ring is forgotten until it tells it again.
 */
START_TEST(ring_epochs_travel_and_gate_the_steps)
{
	struct peer_state a, b;
	uint64_t T0 = 10000 * MS, v2_0 = 2ull << 20, v2_7 = 2ull << 20 | 7;
	uint64_t v1_done = 1ull << 20 | 0xfffff;
	unsigned lagging = 0;

	load_cfg("");
	two(&a, &b);
	peer_set_ring(&a, v1_done, v1_done, 0);
	peer_set_ring(&b, v1_done, v1_done, 0);
	ck_assert_uint_gt(exchange(&a, &b, T0, 1 * MS), 1); /* every datagram carries it */
	exchange(&b, &a, T0 + 1 * MS, 1 * MS);
	ck_assert_uint_eq(b.slot[1].ring_epoch, v1_done);
	/* a applies version 2 and makes its first step ready: b is live and not ready. */
	peer_set_ring(&a, v2_0, v2_7, 1);
	ck_assert(!peer_ring_ready(&a, v2_7, T0 + 2 * MS, &lagging));
	ck_assert_uint_eq(lagging, 1);
	/* A heartbeat alone carries it at once (ring_change.c sends one when its ring changes). */
	net.log.n = 0;
	peer_build_heartbeat(&a, 1, T0 + 150 * MS, emit_fake, &net);
	ck_assert_uint_eq(net.log.n, 1);
	ck_assert_uint_eq(net.log.len[0], SYNC_HDR_LEN);
	ck_assert_int_eq(peer_receive(&b, net.log.buf[0], net.log.len[0], T0 + 151 * MS), SYNC_OK);
	ck_assert_uint_eq(b.slot[1].ring_ready, v2_7);
	exchange(&a, &b, T0 + 200 * MS, 1 * MS);
	ck_assert_uint_eq(b.slot[1].ring_ready, v2_7);
	ck_assert_uint_eq(b.slot[1].ring_epoch, v2_0);
	ck_assert_uint_eq(b.slot[1].ring_prev, 1);
	/* b follows (ring_change.c) and says so: the step may go. */
	peer_set_ring(&b, v1_done, v2_7, 0);
	exchange(&b, &a, T0 + 210 * MS, 1 * MS);
	ck_assert(peer_ring_ready(&a, v2_7, T0 + 211 * MS, &lagging));
	ck_assert(!peer_ring_ready(&a, v2_7 + 1, T0 + 211 * MS, &lagging));
	/* An older datagram of a's arriving late changes nothing at b. */
	peer_set_ring(&a, v1_done, v1_done, 0);
	net.log.n = 0;
	uint16_t nodes[1] = {1};
	peer_build(&a, 1, T0 + 150 * MS, CAP, nodes, 1, fake_score, emit_fake, &net);
	ck_assert_int_eq(peer_receive(&b, net.log.buf[0], net.log.len[0], T0 + 220 * MS), SYNC_OK);
	ck_assert_uint_eq(b.slot[1].ring_ready, v2_7);
	ck_assert_uint_eq(b.slot[1].ring_epoch, v2_0);
	/* b goes silent: once it is not live, a's steps no longer wait for it. */
	ck_assert(!peer_ring_ready(&a, v2_7 + 5, T0 + 1000 * MS, &lagging));
	ck_assert(peer_ring_ready(&a, v2_7 + 5, T0 + 1300 * MS, &lagging));
	ck_assert(!peer_lease(&b, 1, T0 + 1300 * MS)); /* and its lease from a is gone */
	/* b restarts: what it said before is forgotten with its incarnation. */
	peer_fini(&b);
	ck_assert_int_eq(peer_init(&b, cfg, 2, 0xb9, 0), 0);
	peer_set_ring(&b, v1_done, v1_done, 0);
	exchange(&b, &a, T0 + 1400 * MS, 1 * MS);
	ck_assert_uint_eq(a.slot[1].ring_ready, v1_done);
	ck_assert(!peer_ring_ready(&a, v2_7 + 5, T0 + 1401 * MS, &lagging));
	peer_fini(&a);
	peer_fini(&b);
}
END_TEST

/* ---- Owned lists and confirmations. ---------------------------------------------------------- */

START_TEST(owned_list_spans_datagrams_and_completes_only_whole)
{
	struct peer_state a, b;
	struct peer_key *keys = calloc(40, sizeof(*keys));
	unsigned n, owned_dgrams = 0;
	uint16_t nodes[4] = {1, 2, 3, 4};

	load_cfg("");
	two(&a, &b);
	for (unsigned i = 0; i < 40; i++) {
		keys[i].key_len = 200;
		memset(keys[i].key, 'a' + i % 26, 200);
		keys[i].key[0] = (uint8_t)i;
		keys[i].keyhash = keyhash(keys[i].key, 200);
	}
	peer_set_owned(&a, keys, 40);
	ck_assert_uint_eq(a.owned_version, 2);
	peer_set_owned(&a, keys, 40); /* unchanged: same version */
	ck_assert_uint_eq(a.owned_version, 2);
	net.log.n = 0;
	peer_build(&a, 1, 0, CAP, nodes, 4, fake_score, emit_fake, &net);
	n = net.log.n;
	/* Deliver all but one OWNED datagram: the list is not complete. */
	for (unsigned i = 0; i < n; i++) {
		struct sync_msg m;

		ck_assert_int_eq(sync_decode(net.log.buf[i], net.log.len[i], &m), SYNC_OK);
		if (m.kind == SYNC_K_OWNED && owned_dgrams++ == 1)
			continue;
		ck_assert_int_eq(peer_receive(&b, net.log.buf[i], net.log.len[i], 1 * MS), SYNC_OK);
	}
	ck_assert_uint_gt(owned_dgrams, 3);
	ck_assert_uint_eq(b.slot[1].owned_version, 0);
	/* The next SYNC carries the whole list again. */
	exchange(&a, &b, 200 * MS, 1 * MS);
	ck_assert_uint_eq(b.slot[1].owned_version, 2);
	ck_assert_uint_eq(b.slot[1].nowned, 40);
	/* b confirms what it applied, in the same datagrams as its echo. */
	b.slot[1].applied_version = 2;
	exchange(&b, &a, 300 * MS, 1 * MS);
	ck_assert_uint_eq(peer_min_confirmed(&a), 2);
	ck_assert(peer_lease(&a, 1, 301 * MS));
	free(keys);
	peer_fini(&a);
	peer_fini(&b);
}
END_TEST

START_TEST(scores_are_sent_when_moved_and_all_every_fifth_sync)
{
	struct peer_state a, b;
	uint16_t nodes[4] = {1, 2, 3, 4};
	unsigned counts[8];

	load_cfg(",\"sync\":{\"score_delta_pct\":15}");
	two(&a, &b);
	for (unsigned round = 1; round <= 6; round++) {
		struct sync_msg m;

		ck_assert(peer_tick(&a, (round - 1) * 200 * MS));
		if (round == 3)
			net.s[2].health = 80; /* 90 -> 80: 11 %, not enough */
		if (round == 4)
			net.s[2].health = 60; /* 80 (last sent 90) -> 60: 33 % */
		if (round == 6)
			net.s[3].alive = 0;
		net.log.n = 0;
		peer_build(&a, 1, (round - 1) * 200 * MS, CAP, nodes, 4, fake_score, emit_fake,
			   &net);
		ck_assert_int_eq(sync_decode(net.log.buf[0], net.log.len[0], &m), SYNC_OK);
		ck_assert_uint_eq(m.kind, SYNC_K_SCORES);
		counts[round] = m.count;
		for (unsigned i = 0; i < net.log.n; i++)
			peer_receive(&b, net.log.buf[i], net.log.len[i],
				     (round - 1) * 200 * MS + 1);
	}
	ck_assert_uint_eq(counts[1], 4); /* first: everything */
	ck_assert_uint_eq(counts[2], 0);
	ck_assert_uint_eq(counts[3], 0);
	ck_assert_uint_eq(counts[4], 1);
	ck_assert_uint_eq(counts[5], 4); /* every 5th SYNC: everything */
	ck_assert_uint_eq(counts[6], 1); /* liveness changes always go */
	ck_assert_uint_eq(b.slot[1].score[2].health, 60);
	ck_assert(!b.slot[1].score[3].alive);
	peer_fini(&a);
	peer_fini(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("peers");
	TCase *t = tcase_create("peers");
	SRunner *r;
	int failed;

	load_cfg("");
	tcase_add_test(t, majority_of_windows_alone_reduces_to_local);
	tcase_add_test(t, merged_windows_sum_counts_over_live_switches);
	tcase_add_test(t, after_a_partition_both_switches_merge_the_same_windows);
	tcase_add_test(t, rendezvous_owner_is_stable_and_balanced);
	tcase_add_test(t, lease_ends_before_the_peer_judges_us_dead);
	tcase_add_test(t, echoes_of_another_incarnation_or_the_future_are_ignored);
	tcase_add_test(t, a_restarted_peer_is_forgotten);
	tcase_add_test(t, ring_epochs_travel_and_gate_the_steps);
	tcase_add_test(t, owned_list_spans_datagrams_and_completes_only_whole);
	tcase_add_test(t, scores_are_sent_when_moved_and_all_every_fifth_sync);
	suite_add_tcase(s, t);
	r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
