/*
 * test_ring.c - ketama balance, minimal movement, weights, the O(1) table,
 * and placement identical to twemproxy's (fixture verified against nutcracker).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check_quiet.h"
#include "keyhash.h"
#include "ring.h"

static void make_nodes(struct ring_node *nodes, int n, const uint32_t *weights)
{
	for (int i = 0; i < n; i++) {
		nodes[i].id = (uint16_t)(i + 1);
		nodes[i].weight = weights ? weights[i] : 1;
		snprintf(nodes[i].name, sizeof(nodes[i].name), "n%d", i + 1);
	}
}

/* A key's hash for key number i: the real keyhash of "key:<i>". */
static uint64_t key_hash(uint32_t i)
{
	char key[32];
	int len = snprintf(key, sizeof(key), "key:%u", i);

	return keyhash(key, (size_t)len);
}

#define NKEYS 1000000

START_TEST(point_counts_match_twemproxy)
{
	struct ring_node nodes[8];
	struct ring r = {0};
	uint32_t weights[3] = {1, 2, 3};

	make_nodes(nodes, 8, NULL);
	ck_assert_int_eq(ring_build(&r, nodes, 8, 1), 0);
	ck_assert_uint_eq(r.npoints, 8 * 160);
	ck_assert_uint_eq(r.version, 1);
	for (uint32_t i = 1; i < r.npoints; i++)
		ck_assert_uint_le(r.points[i - 1].value, r.points[i].value);
	ring_free(&r);

	/* floor(w/6 * 40 * 3) * 4: 80, 160, 240 points. */
	make_nodes(nodes, 3, weights);
	ck_assert_int_eq(ring_build(&r, nodes, 3, 2), 0);
	ck_assert_uint_eq(r.npoints, 80 + 160 + 240);
	ring_free(&r);

	ck_assert_int_eq(ring_build(&r, nodes, 0, 1), -EINVAL);
	nodes[0].weight = 0;
	ck_assert_int_eq(ring_build(&r, nodes, 3, 1), -EINVAL);
}
END_TEST

/* Fraction of the 32-bit point space owned by each node (its arcs). */
static void arc_shares(const struct ring *r, double *share)
{
	uint32_t prev = r->points[r->npoints - 1].value;

	for (uint32_t i = 0; i < r->npoints; i++) {
		share[r->points[i].node_id] +=
		    (double)(uint32_t)(r->points[i].value - prev) / 4294967296.0;
		prev = r->points[i].value;
	}
}

/*
 * 1M keys over 8 equal nodes. Keys follow the arcs to within 1% (the keyhash
 * is uniform); the arcs themselves are twemproxy's, whose spread at 160 points
 * per node is about 7% (sd): n1..n8 reach 1.12 of the mean at most, so the
 * bound on the mean is 15% and docs/benchmarks.md records the real spread.
 */
START_TEST(balance_of_one_million_keys)
{
	struct ring_node nodes[8];
	struct ring r = {0};
	uint32_t count[9] = {0};
	double share[9] = {0};

	make_nodes(nodes, 8, NULL);
	ck_assert_int_eq(ring_build(&r, nodes, 8, 1), 0);
	arc_shares(&r, share);
	for (uint32_t i = 0; i < NKEYS; i++)
		count[ring_home(&r, key_hash(i))]++;
	for (int n = 1; n <= 8; n++) {
		double of_mean = (double)count[n] / (NKEYS / 8.0);
		double of_arc = (double)count[n] / (NKEYS * share[n]);

		ck_assert_msg(of_arc > 0.99 && of_arc < 1.01, "node %d: %.4f of its arc share", n,
			      of_arc);
		ck_assert_msg(of_mean > 0.85 && of_mean < 1.15, "node %d holds %.3f of the mean", n,
			      of_mean);
	}
	ring_free(&r);
}
END_TEST

START_TEST(adding_a_node_moves_only_to_it)
{
	struct ring_node nodes[9];
	struct ring r8 = {0}, r9 = {0};
	uint32_t moved = 0;

	make_nodes(nodes, 9, NULL);
	ck_assert_int_eq(ring_build(&r8, nodes, 8, 1), 0);
	ck_assert_int_eq(ring_build(&r9, nodes, 9, 2), 0);
	for (uint32_t i = 0; i < NKEYS; i++) {
		uint64_t h = key_hash(i);
		uint16_t before = ring_home(&r8, h), after = ring_home(&r9, h);

		if (before != after) {
			moved++;
			ck_assert_uint_eq(after, 9);
		}
	}
	ck_assert_msg(moved <= NKEYS * (1.0 / 9 + 0.02), "moved %u keys", moved);
	ck_assert_uint_gt(moved, 0);
	ring_free(&r8);
	ring_free(&r9);
}
END_TEST

START_TEST(weights_give_proportional_shares)
{
	struct ring_node nodes[4];
	struct ring r = {0};
	uint32_t weights[4] = {1, 1, 2, 4}, count[5] = {0};

	make_nodes(nodes, 4, weights);
	ck_assert_int_eq(ring_build(&r, nodes, 4, 1), 0);
	for (uint32_t i = 0; i < NKEYS; i++)
		count[ring_home(&r, key_hash(i))]++;
	for (int n = 1; n <= 4; n++) {
		double expect = NKEYS * weights[n - 1] / 8.0;

		ck_assert_msg(count[n] > expect * 0.85 && count[n] < expect * 1.15,
			      "node %d: %u keys, expected about %.0f", n, count[n], expect);
	}
	ring_free(&r);
}
END_TEST

START_TEST(fast_table_agrees_with_binary_search)
{
	struct ring_node nodes[64];
	struct ring r = {0};
	unsigned seed = 7;

	make_nodes(nodes, 64, NULL);
	ck_assert_int_eq(ring_build(&r, nodes, 64, 1), 0);
	/* Every ring point, its neighbours, the extremes, and random points. */
	for (uint32_t i = 0; i < r.npoints; i++) {
		uint32_t p = r.points[i].value;

		ck_assert_uint_eq(ring_lookup_fast(&r, p), ring_lookup(&r, p));
		ck_assert_uint_eq(ring_lookup_fast(&r, p + 1), ring_lookup(&r, p + 1));
		ck_assert_uint_eq(ring_lookup_fast(&r, p - 1), ring_lookup(&r, p - 1));
	}
	ck_assert_uint_eq(ring_lookup_fast(&r, 0), ring_lookup(&r, 0));
	ck_assert_uint_eq(ring_lookup_fast(&r, UINT32_MAX), r.points[0].node_id);
	for (int i = 0; i < 1000000; i++) {
		uint32_t p = ((uint32_t)rand_r(&seed) << 16) ^ (uint32_t)rand_r(&seed);

		ck_assert_uint_eq(ring_lookup_fast(&r, p), ring_lookup(&r, p));
	}
	ring_free(&r);
}
END_TEST

/*
 * tests/fixtures/ketama_nutcracker.txt holds lines
 *   pool NAME name:weight,name:weight,...
 *   v HASH32_HEX SERVER_NAME
 * recorded by tests/proto/nutcracker_compare.py from a live nutcracker.
 */
START_TEST(placement_matches_nutcracker_fixture)
{
	char path[512], line[512];
	const char *root = getenv("SKL_SOURCE_ROOT");
	struct ring r = {0};
	int vectors = 0, pools = 0;
	FILE *f;

	if (getenv("SKL_KETAMA_FIXTURE")) /* a live recording, from scripts/test.sh */
		snprintf(path, sizeof(path), "%s", getenv("SKL_KETAMA_FIXTURE"));
	else
		snprintf(path, sizeof(path), "%s/tests/fixtures/ketama_nutcracker.txt",
			 root ? root : ".");
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	while (fgets(line, sizeof(line), f)) {
		char name[64], servers[400], server[64];
		unsigned hash;

		if (sscanf(line, "pool %63s %399s", name, servers) == 2) {
			struct ring_node nodes[RING_MAX_NODES];
			int n = 0;

			for (char *tok = strtok(servers, ","); tok; tok = strtok(NULL, ",")) {
				char *colon = strchr(tok, ':');

				ck_assert_ptr_nonnull(colon);
				*colon = '\0';
				nodes[n].id = (uint16_t)(n + 1);
				nodes[n].weight = (uint32_t)atoi(colon + 1);
				snprintf(nodes[n].name, sizeof(nodes[n].name), "%s", tok);
				n++;
			}
			ring_free(&r);
			ck_assert_int_eq(ring_build(&r, nodes, (size_t)n, 1), 0);
			pools++;
		} else if (sscanf(line, "v %x %63s", &hash, server) == 2) {
			uint16_t id = ring_lookup(&r, hash);
			const struct ring_node *home = NULL;

			for (uint16_t i = 0; i < r.nnodes; i++)
				if (r.nodes[i].id == id)
					home = &r.nodes[i];
			ck_assert_ptr_nonnull(home);
			ck_assert_str_eq(home->name, server);
			ck_assert_uint_eq(ring_lookup_fast(&r, hash), id);
			vectors++;
		}
	}
	fclose(f);
	ring_free(&r);
	ck_assert_int_ge(pools, 2);
	ck_assert_int_ge(vectors, 1000);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("ketama");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, point_counts_match_twemproxy);
	tcase_add_test(tc, balance_of_one_million_keys);
	tcase_add_test(tc, adding_a_node_moves_only_to_it);
	tcase_add_test(tc, weights_give_proportional_shares);
	tcase_add_test(tc, fast_table_agrees_with_binary_search);
	tcase_add_test(tc, placement_matches_nutcracker_fixture);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
