/*
 * check_quiet.h - Check's assertions without a mark on every pass.
 *
 * A passing ck_assert_*() records its file and line in Check's message file,
 * one write(2) each. A test that checks every one of 200,000 keys spends its
 * whole run in those writes (tens of seconds under AddressSanitizer). Include
 * this after <check.h> in such a test: a failure is reported exactly as
 * before; only a crash no longer names the last assertion that passed (the
 * sanitizer's stack trace does).
 */
#ifndef SKL_TEST_CHECK_QUIET_H
#define SKL_TEST_CHECK_QUIET_H

#include <check.h>

#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                                        \
	((expr) ? (void)0                                                               \
		: _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", \
				    ##__VA_ARGS__))

#endif
