/*
 * test_through.c - the write-through table: the previous version kept per key,
 * and the turns the writes of a key take.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "through.h"

static struct store_record version_rec(uint64_t v, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "value-%llu", (unsigned long long)v);

	return (struct store_record){.kind = STORE_VALUE,
				     .version = v,
				     .value = (const uint8_t *)buf,
				     .value_len = (uint32_t)n};
}

START_TEST(keeps_the_newest_previous_versions)
{
	struct through *t = through_create();
	const uint64_t kh = 0x1234;
	struct store_record rec;
	uint8_t out[64];
	char buf[32];

	ck_assert_ptr_nonnull(t);
	for (uint64_t v = 1; v <= THROUGH_PREVIOUS + 1; v++) {
		struct store_record r = version_rec(v, buf, sizeof(buf));

		ck_assert(through_keep_previous(t, kh, &r, 1));
	}
	/* The oldest went; each of the others is served exactly, with its own bytes. */
	ck_assert_int_eq(through_previous(t, kh, 1, THROUGH_PREVIOUS, THROUGH_ANY_SWITCH, &rec, out,
					  sizeof(out)),
			 0);
	for (uint64_t v = 2; v <= THROUGH_PREVIOUS + 1; v++) {
		char want[32];

		ck_assert_int_eq(through_previous(t, kh, v, THROUGH_PREVIOUS, THROUGH_ANY_SWITCH,
						  &rec, out, sizeof(out)),
				 1);
		ck_assert_uint_eq(rec.version, v);
		snprintf(want, sizeof(want), "value-%llu", (unsigned long long)v);
		ck_assert_uint_eq(rec.value_len, strlen(want));
		ck_assert(memcmp(rec.value, want, rec.value_len) == 0);
	}
	/* A HINT's stamp (depth 1) gets only the newest previous version. */
	ck_assert_int_eq(through_previous(t, kh, THROUGH_PREVIOUS + 1, 1, THROUGH_ANY_SWITCH, &rec,
					  out, sizeof(out)),
			 1);
	ck_assert_int_eq(through_previous(t, kh, THROUGH_PREVIOUS, 1, THROUGH_ANY_SWITCH, &rec, out,
					  sizeof(out)),
			 0);
	/* Kept again (a push sent twice): no second copy pushes out another. */
	struct store_record again = version_rec(THROUGH_PREVIOUS + 1, buf, sizeof(buf));

	ck_assert(through_keep_previous(t, kh, &again, 1));
	ck_assert_int_eq(through_previous(t, kh, 2, THROUGH_PREVIOUS, THROUGH_ANY_SWITCH, &rec, out,
					  sizeof(out)),
			 1);
	/* Too small a buffer: not served. Another key: nothing. */
	ck_assert_int_eq(
	    through_previous(t, kh, 2, THROUGH_PREVIOUS, THROUGH_ANY_SWITCH, &rec, out, 3), 0);
	ck_assert_int_eq(through_previous(t, kh + 1, 2, THROUGH_PREVIOUS, THROUGH_ANY_SWITCH, &rec,
					  out, sizeof(out)),
			 0);
	through_destroy(t);
}
END_TEST

/*
 * The kept versions answer the stamps of the switch whose writes kept them
 * (and a HINT's): another switch has not seen those writes complete. A read
 * that gets the newest version elsewhere makes them stale.
 */
START_TEST(kept_versions_answer_their_switch_only)
{
	struct through *t = through_create();
	const uint64_t kh = 0x4321;
	struct store_record rec;
	uint8_t out[64];
	char buf[32];
	struct store_record r5 = version_rec(5, buf, sizeof(buf));

	ck_assert(through_keep_previous(t, kh, &r5, 1));
	ck_assert_int_eq(through_previous(t, kh, 5, THROUGH_PREVIOUS, 1, &rec, out, sizeof(out)),
			 1);
	ck_assert_int_eq(through_previous(t, kh, 5, THROUGH_PREVIOUS, 2, &rec, out, sizeof(out)),
			 0);
	ck_assert_int_eq(through_previous(t, kh, 5, 1, THROUGH_ANY_SWITCH, &rec, out, sizeof(out)),
			 1);
	/* Seen by the stamper itself: kept. By another switch, or an agent: forgotten. */
	ck_assert_int_eq(through_home_read(t, kh, 1, &rec, out, sizeof(out)), 0);
	ck_assert_int_eq(through_previous(t, kh, 5, THROUGH_PREVIOUS, 1, &rec, out, sizeof(out)),
			 1);
	ck_assert_int_eq(through_home_read(t, kh, 2, &rec, out, sizeof(out)), 0);
	ck_assert_int_eq(through_previous(t, kh, 5, THROUGH_PREVIOUS, 1, &rec, out, sizeof(out)),
			 0);
	ck_assert(through_keep_previous(t, kh, &r5, 1));
	ck_assert_int_eq(through_home_read(t, kh, 0, &rec, out, sizeof(out)), 0);
	ck_assert_int_eq(through_previous(t, kh, 5, THROUGH_PREVIOUS, 1, &rec, out, sizeof(out)),
			 0);
	/* Kept for another switch: the first switch's versions go. */
	struct store_record r6 = version_rec(6, buf, sizeof(buf));

	ck_assert(through_keep_previous(t, kh, &r5, 1));
	ck_assert(through_keep_previous(t, kh, &r6, 2));
	ck_assert_int_eq(through_previous(t, kh, 5, THROUGH_PREVIOUS, THROUGH_ANY_SWITCH, &rec, out,
					  sizeof(out)),
			 0);
	ck_assert_int_eq(through_previous(t, kh, 6, THROUGH_PREVIOUS, 2, &rec, out, sizeof(out)),
			 1);
	through_destroy(t);
}
END_TEST

START_TEST(readers_see_the_newest_previous_while_pushing)
{
	struct through *t = through_create();
	const uint64_t kh = 0x777;
	uint8_t holders[THROUGH_HOLDERS] = {0}, out[64];
	struct store_record rec;
	char buf[32];

	holders[0] = 0x06;
	through_holders_set(t, kh, holders);
	struct store_record r1 = version_rec(10, buf, sizeof(buf));

	ck_assert(through_keep_previous(t, kh, &r1, 1));
	ck_assert_int_eq(through_home_read(t, kh, 1, &rec, out, sizeof(out)), 0);
	ck_assert(through_turn_take(t, kh, 10, false));
	/* The turn alone does not show the previous version: only the push does. */
	ck_assert_int_eq(through_home_read(t, kh, 1, &rec, out, sizeof(out)), 0);
	struct store_record r2 = version_rec(11, buf, sizeof(buf));

	ck_assert(through_keep_previous(t, kh, &r2, 1));
	through_push_begin(t, kh);
	ck_assert_int_eq(through_home_read(t, kh, 1, &rec, out, sizeof(out)), 1);
	ck_assert_uint_eq(rec.version, 11);
	/* A second writer waits for the turn, and times out while it is held; a
	 * REPLICATE (claim, no wait) does not get it either. */
	ck_assert_int_eq(through_turn_take(t, kh, 20, false), -1);
	ck_assert_int_eq(through_turn_take(t, kh, 0, true), -1);
	/* Forgetting the key while a write has its turn keeps what its readers see. */
	through_forget(t, kh);
	ck_assert_int_eq(through_home_read(t, kh, 1, &rec, out, sizeof(out)), 1);
	through_turn_give(t, kh);
	ck_assert_int_eq(through_home_read(t, kh, 1, &rec, out, sizeof(out)), 0);
	through_destroy(t);
}
END_TEST

START_TEST(a_key_without_holders_has_no_turn)
{
	struct through *t = through_create();

	ck_assert_int_eq(through_turn_take(t, 0x99, 10, false), 0);
	through_destroy(t);
}
END_TEST

START_TEST(a_replicate_claims_the_turn_and_a_write_waits_for_it)
{
	struct through *t = through_create();
	const uint64_t kh = 0x5a5a;

	/* A REPLICATE of a key without a slot claims one and takes the turn. */
	ck_assert(through_turn_take(t, kh, 0, true));
	/* A write of the key now finds the slot: it waits, and times out while held. */
	ck_assert_int_eq(through_turn_take(t, kh, 20, false), -1);
	through_turn_give(t, kh);
	ck_assert(through_turn_take(t, kh, 20, false));
	/* Another key of the same slot (through.c's slot_of()) cannot claim it meanwhile. */
	ck_assert_int_eq(through_turn_take(t, kh ^ (1ull << 32) ^ 1, 0, true), 0);
	through_turn_give(t, kh);
	through_destroy(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("through");
	TCase *tc = tcase_create("through");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, keeps_the_newest_previous_versions);
	tcase_add_test(tc, kept_versions_answer_their_switch_only);
	tcase_add_test(tc, readers_see_the_newest_previous_while_pushing);
	tcase_add_test(tc, a_key_without_holders_has_no_turn);
	tcase_add_test(tc, a_replicate_claims_the_turn_and_a_write_waits_for_it);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
