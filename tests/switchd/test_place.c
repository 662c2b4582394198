/*
 * test_place.c - where new replicas go (switchd/policy/place.c): by the expected load
 * the directory's sets put on each node, then by expected delay.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "place.h"

#define NODES 32

static struct place p;
static struct place_cand cand[NODES];
static union cdt_state_room room;

static void setup(void)
{
	ck_assert_int_eq(place_init(&p, NODES), 0);
	for (unsigned i = 0; i < NODES; i++)
		cand[i] = (struct place_cand){.id = (uint16_t)(i + 1), .cost = 100};
	memset(&room, 0, sizeof(room));
	room.st.nreplicas = 1;
	room.st.replicas[0] = 1; /* the home */
}

static void teardown(void)
{
	place_free(&p);
}

/* Equal load: the least cost wins, then the candidates' order; home, members and down never. */
START_TEST(equal_load_goes_by_cost)
{
	uint16_t out[4];

	cand[4].cost = 50; /* node 5: fewer in flight */
	cand[2].cost = 0;  /* node 3: down */
	room.st.replicas[room.st.nreplicas++] = 2;
	ck_assert_uint_eq(place_pick(&p, cand, NODES, &room.st, 1, 0, 3, out), 3);
	ck_assert_uint_eq(out[0], 5);
	ck_assert_uint_eq(out[1], 4);
	ck_assert_uint_eq(out[2], 6);
}
END_TEST

/*
 * Keys installed one after another in one round spread over the nodes: each
 * choice charges what it takes, so the next key's replicas go elsewhere, even
 * though the costs (in flight now) did not move.
 */
START_TEST(one_round_of_installs_spreads)
{
	unsigned held[NODES + 1] = {0};
	uint16_t out[8];

	for (unsigned k = 0; k < 7; k++) {
		unsigned n = place_pick(&p, cand, NODES, &room.st, 1, 0.04, 4, out);

		ck_assert_uint_eq(n, 4);
		for (unsigned i = 0; i < n; i++)
			held[out[i]]++;
	}
	/* 28 replicas over the 31 nodes that are not the home: none holds two. */
	for (unsigned id = 2; id <= NODES; id++)
		ck_assert_msg(held[id] <= 1, "node %u holds %u replicas", id, held[id]);
	ck_assert_uint_eq(held[1], 0);
}
END_TEST

/* Load comes before cost: a busy set's members are passed over for idle nodes. */
START_TEST(expected_load_before_cost)
{
	union cdt_state_room hot;
	uint16_t out[2];

	memset(&hot, 0, sizeof(hot));
	hot.st.nreplicas = 3;
	hot.st.replicas[0] = 10;
	hot.st.replicas[1] = 11;
	hot.st.replicas[2] = 12;
	place_charge_set(&p, &hot.st, 10, 0.3); /* 0.1 of all requests each; 10 is the home */
	ck_assert_uint_eq(p.load[10], (uint64_t)(0.3 * PLACE_ONE) / 3);
	ck_assert_uint_eq(p.copies[10], 0);
	ck_assert_uint_eq(p.copies[11], 1);
	for (unsigned i = 0; i < NODES; i++)
		cand[i].cost = i + 9 >= 12 ? 1000 : 10; /* nodes 10..12 the least delayed... */
	cand[9].cost = cand[10].cost = cand[11].cost = 1;
	ck_assert_uint_eq(place_pick(&p, cand, NODES, &room.st, 1, 0.01, 2, out), 2);
	/* ...yet loaded by the hot key: the idle nodes with the least cost win. */
	ck_assert_uint_eq(out[0], 2);
	ck_assert_uint_eq(out[1], 3);
	/* Each chosen is charged share / set size once they join (1 + 2). */
	ck_assert_uint_eq(p.load[2], (uint64_t)(0.01 * PLACE_ONE) / 3);
	place_clear(&p);
	ck_assert_uint_eq(p.load[10], 0);
}
END_TEST

/*
 * Keys of unknown share (pins, a peer's) charge no load: among equal loads the
 * copies a node holds weigh its delay, so two such keys filled one after the
 * other go to different nodes, and a node with copies loses to one without
 * unless it is that much less busy.
 */
START_TEST(copies_spread_keys_of_unknown_share)
{
	uint16_t a, b;

	ck_assert_uint_eq(place_pick(&p, cand, NODES, &room.st, 1, 0, 1, &a), 1);
	ck_assert_uint_eq(place_pick(&p, cand, NODES, &room.st, 1, 0, 1, &b), 1);
	ck_assert_uint_ne(a, b);
	ck_assert_uint_eq(p.copies[a], 1);
	place_clear(&p);
	ck_assert_uint_eq(p.copies[a], 0);
	/* n2 holds 3 copies: at cost 100 it weighs 400, more than n3 at 300. */
	p.copies[2] = 3;
	cand[2].cost = 300;
	ck_assert_uint_eq(place_pick(&p, cand, 3, &room.st, 1, 0, 1, &a), 1);
	ck_assert_uint_eq(a, 3);
}
END_TEST

/*
 * The keys outside the directory charge each node by its arcs: on a ring of
 * two nodes where n1's points cover three quarters of the space, half the
 * load charged by the ring puts 3/8 on n1 and 1/8 on n2, and the next replica
 * goes to n2. A new ring version is measured again.
 */
START_TEST(ring_arcs_charge_the_cold_load)
{
	/* A point belongs to the first ring point at or after it, wrapping. */
	struct ring_point pts[2] = {{.value = 1u << 30, .node_id = 1}, /* (2^31, 2^32) + [0, 2^30] */
				    {.value = 2u << 31, .node_id = 2}};
	struct ring r = {.version = 1, .npoints = 2, .points = pts};
	uint16_t out;

	pts[1].value = 1u << 31; /* n2: (2^30, 2^31], a quarter */
	place_charge_ring(&p, &r, 0.5);
	ck_assert_uint_eq(p.load[1], 3 * PLACE_ONE / 8);
	ck_assert_uint_eq(p.load[2], PLACE_ONE / 8);
	room.st.replicas[0] = 3; /* a key homed elsewhere */
	ck_assert_uint_eq(place_pick(&p, cand, 2, &room.st, 3, 0.01, 1, &out), 1);
	ck_assert_uint_eq(out, 2);
	/* The ring changes (n2 takes three quarters): measured again. */
	pts[0].node_id = 2;
	pts[1].node_id = 1;
	r.version = 2;
	place_clear(&p);
	place_charge_ring(&p, &r, 1);
	ck_assert_uint_eq(p.load[1], PLACE_ONE / 4);
	ck_assert_uint_eq(p.load[2], 3 * PLACE_ONE / 4);
}
END_TEST

/* Sets past 16: a key may ask for more replicas than the small size holds. */
START_TEST(large_sets_picked_whole)
{
	uint16_t out[CDT_MAX_REPLICAS];

	ck_assert_uint_eq(place_pick(&p, cand, NODES, &room.st, 1, 0.5, 20, out), 20);
	for (unsigned i = 0; i < 20; i++)
		ck_assert_uint_eq(out[i], i + 2);
	/* More than there are nodes: every node but the home. */
	place_clear(&p);
	ck_assert_uint_eq(place_pick(&p, cand, NODES, &room.st, 1, 0.5, 100, out), NODES - 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("place");
	TCase *tc = tcase_create("place");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, equal_load_goes_by_cost);
	tcase_add_test(tc, one_round_of_installs_spreads);
	tcase_add_test(tc, expected_load_before_cost);
	tcase_add_test(tc, copies_spread_keys_of_unknown_share);
	tcase_add_test(tc, ring_arcs_charge_the_cold_load);
	tcase_add_test(tc, large_sets_picked_whole);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
