/*
 * test_sim.c - the simulator against what can be computed exactly.
 *
 * Ring only, each node's share of the requests is the sum of the
 * popularity of the keys whose ring point falls in the node's arcs: here
 * computed from the ring's points and the zipf pmf directly (no ring_lookup,
 * no sampler), and the simulator's max/mean of served requests must come
 * within 2% of it. The calculation is checked on its own first: the pmf sums
 * to 1, and with uniform keys each node's share is its arcs' length.
 * Then the directory (EAL in this process, for its rte_member sketch) must
 * balance what the ring does not, and bad parameters are refused.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>

#include "../common/eal_cleanup.h"
#include "keyhash.h"
#include "ring.h"
#include "sim.h"

#define KEYS 1000000u

/* The ring skewless-sim builds: nodes n1..nN, ids 1..N, equal weights. */
static void build_ring(struct ring *r, uint32_t nodes)
{
	struct ring_node *names = calloc(nodes, sizeof(*names));

	ck_assert_ptr_nonnull(names);
	for (uint32_t i = 0; i < nodes; i++) {
		names[i].id = (uint16_t)(i + 1);
		names[i].weight = 1;
		snprintf(names[i].name, sizeof(names[i].name), "n%u", i + 1);
	}
	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(ring_build(r, names, nodes, 1), 0);
	free(names);
}

/* The arc a 32-bit point falls in ends at the first ring point at or above it (wrapping). */
static uint16_t arc_owner(const struct ring *r, uint32_t point)
{
	uint32_t lo = 0, hi = r->npoints;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->points[mid].value < point)
			lo = mid + 1;
		else
			hi = mid;
	}
	return r->points[lo == r->npoints ? 0 : lo].node_id;
}

/* Zipf(s) pmf over ranks 1..n into pmf[0..n): P(k) = k^-s / H(n, s). s = 0 is uniform. */
static double *zipf_pmf_table(uint64_t n, double s)
{
	double *pmf = malloc(n * sizeof(*pmf)), h = 0;

	ck_assert_ptr_nonnull(pmf);
	for (uint64_t k = n; k >= 1; k--) /* smallest terms first: less rounding */
		h += pmf[k - 1] = pow((double)k, -s);
	for (uint64_t k = 0; k < n; k++)
		pmf[k] /= h;
	return pmf;
}

/*
 * Each node's expected share of requests: key:i has rank i + 1 (as
 * `skewless bench --dist zipf:S` maps ranks), and goes to the node whose arc
 * holds its point. share[] is indexed by node id.
 */
static void expected_shares(const struct ring *r, uint32_t nodes, double s, double *share)
{
	double *pmf = zipf_pmf_table(KEYS, s);

	memset(share, 0, (nodes + 1) * sizeof(*share));
	for (uint32_t i = 0; i < KEYS; i++) {
		char key[32];
		int len = snprintf(key, sizeof(key), "key:%u", i);

		share[arc_owner(r, keyhash_point(keyhash(key, (size_t)len)))] += pmf[i];
	}
	free(pmf);
}

static double expected_max_over_mean(uint32_t nodes, double s)
{
	struct ring r;
	double *share = calloc(nodes + 1, sizeof(*share)), max = 0;

	ck_assert_ptr_nonnull(share);
	build_ring(&r, nodes);
	expected_shares(&r, nodes, s, share);
	for (uint32_t id = 1; id <= nodes; id++)
		max = share[id] > max ? share[id] : max;
	ring_free(&r);
	free(share);
	return max * nodes;
}

START_TEST(pmf_sums_to_one)
{
	double *pmf = zipf_pmf_table(KEYS, 0.99), sum = 0;

	for (uint32_t i = 0; i < KEYS; i++)
		sum += pmf[i];
	ck_assert_double_eq_tol(sum, 1.0, 1e-9);
	/* Rank 1 of zipf 0.99 over 1M keys: 1 / H(1e6, 0.99), about 1/15.39. */
	ck_assert_double_eq_tol(pmf[0], 0.06497, 0.0001);
	free(pmf);
}
END_TEST

/* With uniform keys, a node's expected share is the length of its arcs (1M keys: within 2%). */
START_TEST(uniform_shares_follow_the_arcs)
{
	const uint32_t nodes = 8;
	struct ring r;
	double share[nodes + 1], arcs[nodes + 1];

	build_ring(&r, nodes);
	expected_shares(&r, nodes, 0, share);
	memset(arcs, 0, sizeof(arcs));
	for (uint32_t p = 0; p < r.npoints; p++) {
		uint32_t from = p ? r.points[p - 1].value : r.points[r.npoints - 1].value;
		/* Arc (from, points[p]], wrapping through 2^32 for the first point. */
		arcs[r.points[p].node_id] +=
		    (double)(uint32_t)(r.points[p].value - from) / 4294967296.0;
	}
	for (uint32_t id = 1; id <= nodes; id++)
		ck_assert_double_eq_tol(share[id] / arcs[id], 1.0, 0.02);
	ring_free(&r);
}
END_TEST

static void run(struct sim_params *p, struct sim_result *r)
{
	char err[256];

	if (sim_run(p, r, err, sizeof(err)) != 0)
		ck_abort_msg("sim_run: %s", err);
}

/* Open loop well under every node's capacity: served counts are the key draws' homes. */
static void ring_only_params(struct sim_params *p, uint32_t nodes, const char *dist)
{
	char err[256];

	ck_assert_int_eq(sim_params_default(p, err, sizeof(err)), 0);
	p->nodes = nodes;
	p->keys = KEYS;
	snprintf(p->dist, sizeof(p->dist), "%s", dist);
	p->directory = false;
	p->concurrency = 0;
	p->rate = 200000;
	p->service_us = 1; /* 2M ops/s per node: nothing queues to overflow */
	p->seconds = 5;
	p->warmup = 0.1;
	p->seed = 7;
}

static void check_ring_only(uint32_t nodes, double s)
{
	struct sim_params p;
	struct sim_result r;
	char dist[32];
	double want = expected_max_over_mean(nodes, s);

	snprintf(dist, sizeof(dist), "zipf:%g", s);
	ring_only_params(&p, nodes, dist);
	run(&p, &r);
	ck_assert_uint_eq(r.errors, 0);
	ck_assert_uint_gt(r.ops, 900000);
	if (fabs(r.max_over_mean / want - 1) > 0.02)
		ck_abort_msg("%u nodes, zipf %g: simulated max/mean %.4f, exact %.4f", nodes, s,
			     r.max_over_mean, want);
	sim_result_free(&r);
}

START_TEST(ring_only_8_nodes_zipf_099)
{
	check_ring_only(8, 0.99);
}
END_TEST

START_TEST(ring_only_8_nodes_zipf_12)
{
	check_ring_only(8, 1.2);
}
END_TEST

START_TEST(ring_only_64_nodes_zipf_099)
{
	check_ring_only(64, 0.99);
}
END_TEST

START_TEST(ring_only_1024_nodes_zipf_099)
{
	check_ring_only(1024, 0.99);
}
END_TEST

/* Closed loop at 8 nodes, zipf 0.99: the directory brings max/mean near 1 and more throughput. */
START_TEST(directory_balances_the_hot_keys)
{
	struct sim_params p;
	struct sim_result ring, dir;
	char err[256];

	ck_assert_int_eq(sim_params_default(&p, err, sizeof(err)), 0);
	p.keys = 100000;
	p.concurrency = 48;
	p.seconds = 4;
	p.directory = false;
	run(&p, &ring);
	p.directory = true;
	run(&p, &dir);
	ck_assert_double_gt(ring.max_over_mean, 1.3);
	ck_assert_double_lt(dir.max_over_mean, 1.1);
	ck_assert_double_gt(dir.throughput_ops, 1.2 * ring.throughput_ops);
	ck_assert_uint_gt(dir.dir_entries, 0);
	ck_assert_uint_gt(dir.rc_acks, 0);
	sim_result_free(&ring);
	sim_result_free(&dir);
}
END_TEST

/*
 * Replica groups at 64 nodes, uniform reads: reads spread over each key's
 * two members even out ketama's own arcs (1.19 max/mean with R = 1, the
 * busiest node bounding a closed loop).
 */
START_TEST(groups_even_out_the_ring)
{
	struct sim_params p;
	struct sim_result one, two;
	char err[256];

	ck_assert_int_eq(sim_params_default(&p, err, sizeof(err)), 0);
	p.nodes = 64;
	p.keys = 100000;
	snprintf(p.dist, sizeof(p.dist), "uniform");
	p.read_ratio = 1;
	p.directory = false;
	p.concurrency = 6 * 64;
	p.seconds = 4;
	run(&p, &one);
	p.replicas = 2;
	run(&p, &two);
	ck_assert_double_gt(one.max_over_mean, 1.1);
	ck_assert_double_lt(two.max_over_mean, 1.05);
	ck_assert_double_gt(two.throughput_ops, 1.1 * one.throughput_ops);
	sim_result_free(&one);
	sim_result_free(&two);
}
END_TEST

/*
 * Write-through at 8 nodes, zipf 1.2, 5% writes: a pushed write leaves its
 * holders in the set, so fewer directory reads find the set at the home
 * alone than when every write collapses it until REPLICATE's copies are in.
 */
START_TEST(write_through_keeps_hot_keys_spread)
{
	struct sim_params p;
	struct sim_result off, on;
	char err[256];

	ck_assert_int_eq(sim_params_default(&p, err, sizeof(err)), 0);
	p.keys = 10000;
	snprintf(p.dist, sizeof(p.dist), "zipf:1.2");
	p.concurrency = 48;
	p.seconds = 4;
	p.write_through = false;
	run(&p, &off);
	p.write_through = true;
	run(&p, &on);
	ck_assert_uint_gt(off.dir_reads, 10000);
	ck_assert_uint_gt(on.dir_reads, 10000);
	double off_alone = (double)off.dir_reads_home_only / (double)off.dir_reads;
	double on_alone = (double)on.dir_reads_home_only / (double)on.dir_reads;

	if (!(on_alone < 0.7 * off_alone))
		ck_abort_msg("home alone: %.3f with write-through, %.3f without", on_alone,
			     off_alone);
	ck_assert_double_lt(on.max_over_mean, 1.2);
	sim_result_free(&off);
	sim_result_free(&on);
}
END_TEST

/*
 * 256 nodes, read-only, zipf 0.99: the hottest key carries 17 nodes' worth of
 * reads. With sets of up to 64 (directory.max_replicas past 16, the larger
 * states) placed by expected load, max/mean stays near 1; held to 16 it
 * cannot.
 */
START_TEST(sets_past_sixteen_balance_256_nodes)
{
	struct sim_params p;
	struct sim_result small, large;
	char err[256];

	ck_assert_int_eq(sim_params_default(&p, err, sizeof(err)), 0);
	p.nodes = 256;
	p.keys = 100000;
	p.read_ratio = 1;
	p.concurrency = 6 * 256;
	p.seconds = 2;
	p.dir.max_replicas = 16;
	run(&p, &small);
	p.dir.max_replicas = 64;
	run(&p, &large);
	ck_assert_uint_le(small.dir_replicas_max, 16);
	ck_assert_uint_gt(large.dir_replicas_max, 16);
	ck_assert_double_gt(small.max_over_mean, 1.3);
	ck_assert_double_lt(large.max_over_mean, 1.15);
	ck_assert_double_gt(large.throughput_ops, 1.3 * small.throughput_ops);
	sim_result_free(&small);
	sim_result_free(&large);
}
END_TEST

START_TEST(bad_parameters_are_refused)
{
	struct sim_params p;
	struct sim_result r;
	char err[256];

	ck_assert_int_eq(sim_params_default(&p, err, sizeof(err)), 0);
	p.concurrency = 48;
	p.nodes = 1025;
	ck_assert_int_eq(sim_run(&p, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "--nodes"));
	ck_assert_int_eq(sim_params_default(&p, err, sizeof(err)), 0);
	p.concurrency = 48;
	snprintf(p.dist, sizeof(p.dist), "zipf");
	ck_assert_int_eq(sim_run(&p, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "--dist"));
	ck_assert_int_eq(sim_params_default(&p, err, sizeof(err)), 0);
	p.concurrency = 48;
	snprintf(p.dynamic, sizeof(p.dynamic), "random:1");
	ck_assert_int_eq(sim_run(&p, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "--dynamic"));
	ck_assert_int_eq(sim_params_default(&p, err, sizeof(err)), 0);
	p.concurrency = 0; /* open loop without a rate */
	ck_assert_int_eq(sim_run(&p, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "--rate"));
}
END_TEST

int main(int argc, char **argv)
{
	char *eal[] = {argv[0],
		       "--no-huge",
		       "-m",
		       "128",
		       "--no-pci",
		       "--no-shconf",
		       "--no-telemetry",
		       "--file-prefix=skl-test-sim",
		       "--log-level=lib.member:crit",
		       "-l",
		       "0",
		       NULL};
	Suite *s = suite_create("sim");
	TCase *exact = tcase_create("exact");
	TCase *model = tcase_create("model");
	SRunner *sr;
	int failed;

	(void)argc;
	if (rte_eal_init(11, eal) < 0) {
		fprintf(stderr, "test_sim: EAL init failed\n");
		return EXIT_FAILURE;
	}
	tcase_add_test(exact, pmf_sums_to_one);
	tcase_add_test(exact, uniform_shares_follow_the_arcs);
	tcase_add_test(exact, ring_only_8_nodes_zipf_099);
	tcase_add_test(exact, ring_only_8_nodes_zipf_12);
	tcase_add_test(exact, ring_only_64_nodes_zipf_099);
	tcase_add_test(exact, ring_only_1024_nodes_zipf_099);
	tcase_set_timeout(exact, 300);
	tcase_add_test(model, directory_balances_the_hot_keys);
	tcase_add_test(model, groups_even_out_the_ring);
	tcase_add_test(model, write_through_keeps_hot_keys_spread);
	tcase_add_test(model, sets_past_sixteen_balance_256_nodes);
	tcase_add_test(model, bad_parameters_are_refused);
	tcase_set_timeout(model, 300);
	suite_add_tcase(s, exact);
	suite_add_tcase(s, model);
	sr = srunner_create(s);
	/* EAL state lives in this process: no fork per test. */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	test_eal_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
