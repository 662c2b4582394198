/*
 * test_dedup.c - the at-most-once table: a retried write is known by its
 * req_id until as many later writes of its stripe's keys as the stripe keeps.
 */
#include <check.h>
#include <stdlib.h>

#include "dedup.h"

/* Two keys of one stripe (dedup.c: the top bits of the keyhash). */
static const uint64_t key_a = 0x0400000000000001ull, key_b = 0x0400000000000002ull;

static struct dedup *fresh(void)
{
	struct dedup *d = malloc(sizeof(*d));

	ck_assert_ptr_nonnull(d);
	dedup_init(d);
	return d;
}

static void applied(struct dedup *d, uint64_t req_id, uint64_t keyhash, uint64_t version)
{
	ck_assert_ptr_null(dedup_begin(d, req_id, keyhash));
	dedup_end(d, req_id, keyhash, true, 0, version);
}

/* req_id's remembered version for keyhash, 0 when it is not known. */
static uint64_t known(struct dedup *d, uint64_t req_id, uint64_t keyhash)
{
	const struct dedup_slot *s = dedup_begin(d, req_id, keyhash);
	uint64_t v = s ? s->version : 0;

	dedup_end(d, req_id, keyhash, false, 0, 0);
	return v;
}

/*
 * Every req_id the agent numbers in a row is still known after all the
 * writes a stripe keeps: no later write, of any req_id, pushes it out early
 * (a table placed by a hash of the req_id forgot one when another hashed to
 * its slot, and its retry was applied a second time).
 */
START_TEST(a_retry_is_known_until_the_stripe_is_full)
{
	struct dedup *d = fresh();
	const uint64_t agent = 7ull << 32;

	applied(d, agent | 1, key_a, 100);
	for (uint64_t i = 2; i <= DEDUP_SLOTS_PER_STRIPE; i++)
		applied(d, agent | i, i % 2 ? key_a : key_b, 100 + i);
	for (uint64_t i = 1; i <= DEDUP_SLOTS_PER_STRIPE; i++)
		ck_assert_uint_eq(known(d, agent | i, i % 2 ? key_a : key_b), (i == 1 ? 100 : 100 + i));
	/* One more write: the oldest goes (the bound dedup.h states). */
	applied(d, agent | 1000, key_b, 2000);
	ck_assert_uint_eq(known(d, agent | 1, key_a), 0);
	ck_assert_uint_eq(known(d, agent | 2, key_b), 102);
	dedup_fini(d);
	free(d);
}
END_TEST

/* A req_id is known for its own key only, and an unapplied write is not remembered. */
START_TEST(known_per_key_and_only_when_applied)
{
	struct dedup *d = fresh();

	applied(d, 42, key_a, 5);
	ck_assert_uint_eq(known(d, 42, key_b), 0);
	ck_assert_ptr_null(dedup_begin(d, 43, key_a));
	dedup_end(d, 43, key_a, false, 0, 0);
	ck_assert_uint_eq(known(d, 43, key_a), 0);
	dedup_fini(d);
	free(d);
}
END_TEST

/* An outcome handed over in a ring change twice takes one slot, and the later one holds. */
START_TEST(remembered_twice_is_kept_once)
{
	struct dedup *d = fresh();
	struct dedup_write w = {.req_id = 9, .version = 3}, out[4];

	dedup_remember(d, key_a, &w);
	w.version = 4;
	dedup_remember(d, key_a, &w);
	ck_assert_uint_eq(dedup_of_key(d, key_a, out, 4), 1);
	ck_assert_uint_eq(out[0].version, 4);
	dedup_fini(d);
	free(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dedup");
	TCase *tc = tcase_create("dedup");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, a_retry_is_known_until_the_stripe_is_full);
	tcase_add_test(tc, known_per_key_and_only_when_applied);
	tcase_add_test(tc, remembered_twice_is_kept_once);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
