/*
 * test_log.c - base/: the log line's shape and level filter, the kept lines
 * (order, wrap-around, cut), and the clock's units.
 */
#include <check.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

/* Run the log calls of fn with stderr captured; returns what they wrote. */
static char *capture(void (*fn)(void))
{
	static char out[4096];
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	ck_assert_ptr_nonnull(f);
	fflush(stderr);
	dup2(fileno(f), STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	return out;
}

static void warn_level_lines(void)
{
	log_init("prog", "n1", LOG_LVL_WARN);
	log_info("not shown");
	log_debug("not shown either");
	log_warn("queue %d", 5);
	log_error("gone");
	log_init("prog", NULL, LOG_LVL_INFO);
	log_info("no name");
}

START_TEST(lines_have_time_prefix_and_level)
{
	const char *out = capture(warn_level_lines);
	const char *want = "^[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} prog\\[n1\\] warn: queue 5\n"
			   "[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} prog\\[n1\\] error: gone\n"
			   "[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} prog info: no name\n$";
	regex_t re;

	ck_assert_int_eq(regcomp(&re, want, REG_EXTENDED), 0);
	ck_assert_msg(regexec(&re, out, 0, NULL, 0) == 0, "got: %s", out);
	regfree(&re);
}
END_TEST

START_TEST(levels_parse_and_filter)
{
	ck_assert_int_eq(log_parse_level("error"), LOG_LVL_ERROR);
	ck_assert_int_eq(log_parse_level("warn"), LOG_LVL_WARN);
	ck_assert_int_eq(log_parse_level("info"), LOG_LVL_INFO);
	ck_assert_int_eq(log_parse_level("debug"), LOG_LVL_DEBUG);
	ck_assert_int_eq(log_parse_level("verbose"), -1);
	log_init("prog", NULL, LOG_LVL_INFO);
	ck_assert(log_enabled(LOG_LVL_INFO));
	ck_assert(!log_enabled(LOG_LVL_DEBUG));
}
END_TEST

START_TEST(keep_holds_the_newest_lines_in_order)
{
	static struct log_keep k; /* zeroed: empty */
	char line[32];

	ck_assert_uint_eq(log_keep_count(&k), 0);
	log_keep_add(&k, "first");
	log_keep_add(&k, "second");
	ck_assert_uint_eq(log_keep_count(&k), 2);
	ck_assert_str_eq(log_keep_line(&k, 0), "first");
	ck_assert_str_eq(log_keep_line(&k, 1), "second");
	for (unsigned i = 2; i < LOG_KEEP_LINES + 10; i++) {
		snprintf(line, sizeof(line), "line %u", i);
		log_keep_add(&k, line);
	}
	ck_assert_uint_eq(log_keep_count(&k), LOG_KEEP_LINES);
	ck_assert_str_eq(log_keep_line(&k, 0), "line 10");
	snprintf(line, sizeof(line), "line %u", LOG_KEEP_LINES + 9);
	ck_assert_str_eq(log_keep_line(&k, LOG_KEEP_LINES - 1), line);
}
END_TEST

START_TEST(keep_cuts_long_lines)
{
	static struct log_keep k;
	char long_line[LOG_KEEP_WIDTH * 2];

	memset(long_line, 'x', sizeof(long_line) - 1);
	long_line[sizeof(long_line) - 1] = '\0';
	log_keep_add(&k, long_line);
	ck_assert_uint_eq(strlen(log_keep_line(&k, 0)), LOG_KEEP_WIDTH - 1);
}
END_TEST

START_TEST(clock_units_agree)
{
	uint64_t ns = clock_mono_ns(), us = clock_mono_us(), ms = clock_mono_ms();
	uint64_t real_ms = clock_real_ms();

	ck_assert_uint_le(ns / 1000, us);
	ck_assert_uint_le(us / 1000, ms);
	ck_assert_uint_ge(clock_mono_ns(), ns);
	/* Real time is the epoch clock, within a second of time(). */
	ck_assert_uint_le(real_ms / 1000, (uint64_t)time(NULL));
	ck_assert_uint_ge(real_ms / 1000 + 1, (uint64_t)time(NULL));
	ck_assert_uint_ge(clock_real_us() / 1000, real_ms);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("base_log");
	TCase *tc = tcase_create("log");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, lines_have_time_prefix_and_level);
	tcase_add_test(tc, levels_parse_and_filter);
	tcase_add_test(tc, keep_holds_the_newest_lines_in_order);
	tcase_add_test(tc, keep_cuts_long_lines);
	tcase_add_test(tc, clock_units_agree);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
