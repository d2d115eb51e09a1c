/* SPDX-License-Identifier: MIT */
/* Unit tests of tools/common/args.c: the tools' number, size and time parsers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/common/args.h"

/* A value parsed to want; sentinel: *out is untouched by a failure. */
#define SENTINEL 0x5a5a5a5aull

static void u64_ok(const char *s, int base, uint64_t min, uint64_t max, uint64_t want)
{
	uint64_t v = SENTINEL;

	if (args_u64(s, base, min, max, &v) != 0 || v != want)
		fail_msg("args_u64('%s', %d): %llu, want %llu", s, base, (unsigned long long)v, (unsigned long long)want);
}

static void u64_bad(const char *s, int base, uint64_t min, uint64_t max, int want)
{
	uint64_t v = SENTINEL;
	int r = args_u64(s, base, min, max, &v);

	if (r != want || v != SENTINEL)
		fail_msg("args_u64('%s', %d): %d (value %llu), want %d", s, base, r, (unsigned long long)v, want);
}

static void test_u64(void **state)
{
	(void)state;
	u64_ok("0", 10, 0, 10, 0);
	u64_ok("10", 10, 0, 10, 10);
	u64_ok("3600000", 10, 1, 3600000, 3600000);
	u64_ok("010", 10, 0, 100, 10); /* decimal: a leading zero is not octal */
	u64_ok("18446744073709551615", 10, 0, UINT64_MAX, UINT64_MAX);
	u64_ok("0x10", 0, 0, 100, 16);
	u64_ok("010", 0, 0, 100, 8);
	u64_ok("0xffffffff", 0, 0, 0xffffffffull, 0xffffffffull);
	u64_bad("11", 10, 0, 10, -ERANGE);
	u64_bad("0", 10, 1, 10, -ERANGE);
	u64_bad("18446744073709551616", 10, 0, UINT64_MAX, -ERANGE);
	u64_bad("", 10, 0, 10, -EINVAL);
	u64_bad("-1", 10, 0, UINT64_MAX, -EINVAL); /* strtoull would wrap it */
	u64_bad("+1", 10, 0, 10, -EINVAL);
	u64_bad(" 1", 10, 0, 10, -EINVAL);
	u64_bad("1 ", 10, 0, 10, -EINVAL);
	u64_bad("5x", 10, 0, 10, -EINVAL);
	u64_bad("0x10", 10, 0, 100, -EINVAL); /* hexadecimal only with base 0 */
	u64_bad("0x", 0, 0, 100, -EINVAL);
	u64_bad("x", 0, 0, 100, -EINVAL);
	u64_bad("1", 16, 0, 100, -EINVAL); /* bases other than 10 and 0 are refused */
	u64_bad(NULL, 10, 0, 10, -EINVAL);
}

static void test_double(void **state)
{
	double v = -7;

	(void)state;
	assert_int_equal(args_double("1.5", 0, 10, &v), 0);
	assert_true(v == 1.5);
	assert_int_equal(args_double("0.1", 0.1, 86400, &v), 0);
	assert_true(v == 0.1);
	assert_int_equal(args_double("86400", 0.1, 86400, &v), 0);
	assert_true(v == 86400);
	assert_int_equal(args_double("1e3", 0, 1e7, &v), 0);
	assert_true(v == 1000);
	assert_int_equal(args_double("0", 0, 1, &v), 0);
	assert_true(v == 0);
	v = -7;
	assert_int_equal(args_double("0.05", 0.1, 86400, &v), -ERANGE);
	assert_int_equal(args_double("86401", 0.1, 86400, &v), -ERANGE);
	assert_int_equal(args_double("-1", 0, 10, &v), -ERANGE);
	assert_int_equal(args_double("inf", 0, 10, &v), -ERANGE);
	assert_int_equal(args_double("1e999", 0, 10, &v), -ERANGE);
	assert_int_equal(args_double("nan", 0, 10, &v), -EINVAL);
	assert_int_equal(args_double("", 0, 10, &v), -EINVAL);
	assert_int_equal(args_double(" 1", 0, 10, &v), -EINVAL);
	assert_int_equal(args_double("\t1", 0, 10, &v), -EINVAL);
	assert_int_equal(args_double("1s", 0, 10, &v), -EINVAL);
	assert_int_equal(args_double("x", 0, 10, &v), -EINVAL);
	assert_true(v == -7);
}

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = SENTINEL;

	if (args_size(s, 0, UINT64_MAX, &v) != 0 || v != want)
		fail_msg("args_size('%s'): %llu, want %llu", s, (unsigned long long)v, (unsigned long long)want);
}

static void size_bad(const char *s, uint64_t min, uint64_t max, int want)
{
	uint64_t v = SENTINEL;
	int r = args_size(s, min, max, &v);

	if (r != want || v != SENTINEL)
		fail_msg("args_size('%s'): %d (value %llu), want %d", s, r, (unsigned long long)v, want);
}

static void test_size(void **state)
{
	uint64_t v;

	(void)state;
	size_ok("0", 0);
	size_ok("4096", 4096);
	size_ok("4096B", 4096);
	size_ok("1k", 1024);
	size_ok("64KB", 64 << 10);
	size_ok("512M", 512ull << 20);
	size_ok("512MiB", 512ull << 20);
	size_ok("2G", 2ull << 30);
	size_ok("2g", 2ull << 30);
	size_ok("2GiB", 2ull << 30);
	size_ok("1T", 1ull << 40);
	size_ok("16777215T", 16777215ull << 40);
	size_ok("010K", 10 << 10); /* decimal */
	assert_int_equal(args_size("1M", 1 << 20, UINT64_MAX, &v), 0);
	assert_int_equal(v, 1 << 20);
	size_bad("1023K", 1 << 20, UINT64_MAX, -ERANGE); /* ooo-run's --mem: at least 1M */
	size_bad("2T", 1, 1ull << 40, -ERANGE);           /* ooo-bench's sizes: at most 1T */
	size_bad("16777216T", 0, UINT64_MAX, -ERANGE);    /* 2^64: does not fit */
	size_bad("99999999999999999999", 0, UINT64_MAX, -ERANGE);
	size_bad("", 0, UINT64_MAX, -EINVAL);
	size_bad("G", 0, UINT64_MAX, -EINVAL);
	size_bad("-1G", 0, UINT64_MAX, -EINVAL);
	size_bad(" 1G", 0, UINT64_MAX, -EINVAL);
	size_bad("1.5G", 0, UINT64_MAX, -EINVAL);
	size_bad("1X", 0, UINT64_MAX, -EINVAL);
	size_bad("1GB2", 0, UINT64_MAX, -EINVAL);
	size_bad("1Gi", 0, UINT64_MAX, -EINVAL);
	size_bad("1iB", 0, UINT64_MAX, -EINVAL); /* iB only after a unit */
	size_bad("0x10K", 0, UINT64_MAX, -EINVAL);
}

static void test_why(void **state)
{
	(void)state;
	assert_string_equal(args_why(-EINVAL), "not a number");
	assert_string_equal(args_why(-ERANGE), "out of range");
	assert_string_equal(args_why(-ENOMEM), "invalid");
}

/* The parsers leave errno as they found it: callers print strerror(errno) of earlier failures. */
static void test_errno_kept(void **state)
{
	uint64_t v;
	double d;

	(void)state;
	errno = EBADF;
	assert_int_equal(args_u64("99999999999999999999", 10, 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(args_double("1e999", 0, 1, &d), -ERANGE);
	assert_int_equal(args_size("99999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(errno, EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_u64),  cmocka_unit_test(test_double), cmocka_unit_test(test_size),
		cmocka_unit_test(test_why),  cmocka_unit_test(test_errno_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
