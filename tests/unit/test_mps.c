/* SPDX-License-Identifier: MIT */
/*
 * daemon/mps_text.c and daemon/lease_decide.c: MPS control replies (recorded
 * from nvidia-cuda-mps-control on driver 580, H200), the command grammar of
 * oooctl mps run, lease decisions and lease environments.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../daemon/leases/lease.h"
#include "../../daemon/mps/mps.h"

#define GIB (1ull << 30)
#define MIB (1ull << 20)

/* why must say something, and only in printable ASCII (mps_why's promise) */
static void assert_why(const char *why)
{
	assert_non_null(why);
	assert_true(why[0] != '\0');
	for (const char *c = why; *c; c++)
		assert_true((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f);
}

static void assert_why_has(const char *why, const char *sub)
{
	assert_why(why);
	if (!strstr(why, sub))
		print_message("why '%s' lacks '%s'\n", why, sub);
	assert_non_null(strstr(why, sub));
}

/* ---- mps_parse_pids ------------------------------------------------------------------- */

static int pids(const char *reply, pid_t *out, size_t cap, size_t *n, char *why, size_t wcap)
{
	why[0] = '\0';
	return mps_parse_pids(reply, out, cap, n, why, wcap);
}

static void test_pids_real(void **state)
{
	pid_t p[MPS_MAX_PIDS];
	char why[256];
	size_t n = 99;

	(void)state;
	/* get_server_list, no server running */
	assert_int_equal(pids("", p, MPS_MAX_PIDS, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 0);
	/* get_server_list, one server */
	assert_int_equal(pids("1016\n", p, MPS_MAX_PIDS, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0], 1016);
	/* get_client_list 1 */
	assert_int_equal(pids("Server 1 not found\n", p, MPS_MAX_PIDS, &n, why, sizeof(why)), -ESRCH);
	assert_why_has(why, "Server 1 not found");
	/* a command it does not know */
	assert_int_equal(pids("Unknown command \"bogus_command\"\n", p, MPS_MAX_PIDS, &n, why, sizeof(why)), -EPROTO);
	assert_why_has(why, "Unknown command");
}

static void test_pids_lists(void **state)
{
	pid_t p[MPS_MAX_PIDS];
	char why[256];
	size_t n;

	(void)state;
	assert_int_equal(pids("12\n34\n", p, MPS_MAX_PIDS, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(p[0], 12);
	assert_int_equal(p[1], 34);
	/* no trailing newline */
	assert_int_equal(pids("12\n34", p, MPS_MAX_PIDS, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(p[1], 34);
	/* whitespace and blank lines */
	assert_int_equal(pids("\n  12  \n\n\t34\r\n   \n\n", p, MPS_MAX_PIDS, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(p[0], 12);
	assert_int_equal(p[1], 34);
	assert_int_equal(pids("\n\n \t\n", p, MPS_MAX_PIDS, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 0);
	/* the largest pid there can be */
	assert_int_equal(pids("2147483647\n", p, MPS_MAX_PIDS, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0], INT32_MAX);
	/* leading zeros within ten digits */
	assert_int_equal(pids("0000000007\n", p, MPS_MAX_PIDS, &n, why, sizeof(why)), 0);
	assert_int_equal(p[0], 7);
	/* Server not found after pids: still -ESRCH */
	assert_int_equal(pids("12\nServer 7 not found\n", p, MPS_MAX_PIDS, &n, why, sizeof(why)), -ESRCH);
	assert_why_has(why, "not found");
}

static void test_pids_bad(void **state)
{
	static const char *const bad[] = {
		"0\n", "-5\n", "12a\n", "a12\n", "2147483648\n", "4294967296\n", "12345678901\n",
		"99999999999\n", "00000000001\n", "12 34\n", "+12\n", "1.5\n", "12\n34x\n", "Server 1 found\n", "0x10\n",
	};
	pid_t p[MPS_MAX_PIDS];
	char why[256];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = pids(bad[i], p, MPS_MAX_PIDS, &n, why, sizeof(why));

		if (r != -EPROTO)
			print_message("reply '%s' gave %d\n", bad[i], r);
		assert_int_equal(r, -EPROTO);
		assert_why_has(why, "unexpected reply line");
	}
	/* a very long line is an error, not a pid */
	{
		char longline[600];

		memset(longline, '1', sizeof(longline) - 2);
		longline[sizeof(longline) - 2] = '\n';
		longline[sizeof(longline) - 1] = '\0';
		assert_int_equal(pids(longline, p, MPS_MAX_PIDS, &n, why, sizeof(why)), -EPROTO);
		assert_why(why);
	}
}

static void test_pids_cap(void **state)
{
	char reply[MPS_MAX_PIDS * 8 + 64], why[256];
	pid_t p[MPS_MAX_PIDS];
	size_t n, pos = 0;

	(void)state;
	for (unsigned i = 1; i <= 3; i++)
		pos += (size_t)snprintf(reply + pos, sizeof(reply) - pos, "%u\n", 100 + i);
	assert_int_equal(pids(reply, p, 3, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 3);
	assert_int_equal(pids(reply, p, 2, &n, why, sizeof(why)), -E2BIG);
	assert_why_has(why, "more than 2 pids");
	assert_int_equal(pids(reply, NULL, 0, &n, why, sizeof(why)), -E2BIG);
	assert_int_equal(pids("", NULL, 0, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 0);

	/* exactly MPS_MAX_PIDS, then one more */
	pos = 0;
	for (unsigned i = 1; i <= MPS_MAX_PIDS; i++)
		pos += (size_t)snprintf(reply + pos, sizeof(reply) - pos, "%u\n", 1000 + i);
	assert_int_equal(pids(reply, p, MPS_MAX_PIDS, &n, why, sizeof(why)), 0);
	assert_int_equal(n, MPS_MAX_PIDS);
	assert_int_equal(p[0], 1001);
	assert_int_equal(p[MPS_MAX_PIDS - 1], 1000 + MPS_MAX_PIDS);
	snprintf(reply + pos, sizeof(reply) - pos, "99\n");
	assert_int_equal(pids(reply, p, MPS_MAX_PIDS, &n, why, sizeof(why)), -E2BIG);
	assert_why(why);

	/* no why buffer at all */
	assert_int_equal(mps_parse_pids("x\n", p, MPS_MAX_PIDS, &n, NULL, 0), -EPROTO);
}

/* ---- mps_parse_pct -------------------------------------------------------------------- */

static int pct(const char *reply, uint32_t want, char *why, size_t wcap)
{
	why[0] = '\0';
	return mps_parse_pct(reply, want, why, wcap);
}

static void test_pct(void **state)
{
	char why[256];

	(void)state;
	/* set_default_active_thread_percentage 50 */
	assert_int_equal(pct("50.0\n", 50, why, sizeof(why)), 0);
	/* ... abc and ... 200: MPS prints the value it kept */
	assert_int_equal(pct("100.0\n", 100, why, sizeof(why)), 0);
	assert_int_equal(pct("100.0\n", 200, why, sizeof(why)), -EINVAL);
	assert_why_has(why, "kept");
	assert_why_has(why, "100.0");
	assert_int_equal(pct("100.0\n", 50, why, sizeof(why)), -EINVAL);
	assert_why_has(why, "kept");
	/* set_active_thread_percentage 999999 50 */
	assert_int_equal(pct("Server 999999 not found\n", 50, why, sizeof(why)), -ESRCH);
	assert_why_has(why, "Server 999999 not found");
	/* no decimal, whitespace, blank lines */
	assert_int_equal(pct("30", 30, why, sizeof(why)), 0);
	assert_int_equal(pct("30\n", 30, why, sizeof(why)), 0);
	assert_int_equal(pct("\n  25.0 \r\n\n", 25, why, sizeof(why)), 0);
	assert_int_equal(pct("1.0\n", 1, why, sizeof(why)), 0);
	assert_int_equal(pct("0.0\n", 0, why, sizeof(why)), 0);
	/* within 0.05 of what was asked */
	assert_int_equal(pct("50.04\n", 50, why, sizeof(why)), 0);
	assert_int_equal(pct("49.96\n", 50, why, sizeof(why)), 0);
	assert_int_equal(pct("50.1\n", 50, why, sizeof(why)), -EINVAL);
	assert_why_has(why, "kept");
	assert_int_equal(pct("49.9\n", 50, why, sizeof(why)), -EINVAL);
	assert_why(why);
}

static void test_pct_bad(void **state)
{
	static const char *const bad[] = {
		"50.0\n50.0\n", "50.0\n100.0\n", "abc\n", "-5.0\n", "100.1\n", "101\n", "50.0x\n", "50 %\n",
		".5\n", "Unknown command \"bogus\"\n", "nan\n", "inf\n", "1e999\n",
	};
	char why[256];

	(void)state;
	assert_int_equal(pct("", 50, why, sizeof(why)), -EPROTO);
	assert_why_has(why, "no reply");
	assert_int_equal(pct("\n\n  \n", 50, why, sizeof(why)), -EPROTO);
	assert_why_has(why, "no reply");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = pct(bad[i], 50, why, sizeof(why));

		if (r != -EPROTO)
			print_message("reply '%s' gave %d\n", bad[i], r);
		assert_int_equal(r, -EPROTO);
		assert_why_has(why, "unexpected reply");
	}
	/* a second line is never taken for the value, even "Server N not found" */
	assert_int_equal(pct("Server 5 not found\n50.0\n", 50, why, sizeof(why)), -EPROTO);
	assert_why(why);
}

/* ---- mps_parse_terminate -------------------------------------------------------------- */

static int term(const char *reply, char *why, size_t wcap)
{
	why[0] = '\0';
	return mps_parse_terminate(reply, why, wcap);
}

static void test_terminate(void **state)
{
	static const char *const bad[] = { "1\n", "1", "x\n", "2\n", "0 1\n", "x\n0\n", "00\n", "\n1\n\n" };
	char why[256];

	(void)state;
	assert_int_equal(term("0\n", why, sizeof(why)), 0);
	assert_int_equal(term("0", why, sizeof(why)), 0);
	assert_int_equal(term("\n 0 \n\n", why, sizeof(why)), 0);
	/* terminate_client 1016 999999 */
	assert_int_equal(term("Invalid process 999999!\n1\n", why, sizeof(why)), -ESRCH);
	assert_why_has(why, "Invalid process");
	/* terminate_client 999999 1 */
	assert_int_equal(term("Server 999999 not found\nServer 999999 not found!\n1\n", why, sizeof(why)), -ESRCH);
	assert_why_has(why, "Server 999999 not found");
	/* nothing */
	assert_int_equal(term("", why, sizeof(why)), -EPROTO);
	assert_why_has(why, "no reply");
	assert_int_equal(term("\n\n", why, sizeof(why)), -EPROTO);
	assert_why_has(why, "no reply");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = term(bad[i], why, sizeof(why));

		if (r != -EPROTO)
			print_message("reply '%s' gave %d\n", bad[i], r);
		assert_int_equal(r, -EPROTO);
		assert_why_has(why, "unexpected reply");
	}
}

/* ---- mps_parse_empty ------------------------------------------------------------------ */

static void test_empty(void **state)
{
	char why[256];

	(void)state;
	why[0] = '\0';
	assert_int_equal(mps_parse_empty("", why, sizeof(why)), 0);
	assert_int_equal(mps_parse_empty("\n \n\t\n", why, sizeof(why)), 0);
	/* the real set_default_device_pinned_mem_limit prints nothing even for a bogus value */
	/* set_default_client_priority 5 */
	assert_int_equal(mps_parse_empty("Invalid priority value - must be 0 or 1!\n", why, sizeof(why)), -EINVAL);
	assert_why_has(why, "Invalid priority value");
	why[0] = '\0';
	assert_int_equal(mps_parse_empty("Server 5 not found\n", why, sizeof(why)), -ESRCH);
	assert_why_has(why, "Server 5 not found");
	why[0] = '\0';
	assert_int_equal(mps_parse_empty("\n  anything at all\n", why, sizeof(why)), -EINVAL);
	assert_why_has(why, "anything at all");
	/* control characters of a reply are not copied into why */
	why[0] = '\0';
	assert_int_equal(mps_parse_empty("bad\x01\x1b[31mred\x7f\xff\n", why, sizeof(why)), -EINVAL);
	assert_why(why);
	assert_non_null(strstr(why, "bad"));
	/* a small why is truncated, still terminated */
	memset(why, 'z', sizeof(why));
	assert_int_equal(mps_parse_empty("Invalid priority value - must be 0 or 1!\n", why, 8), -EINVAL);
	assert_string_equal(why, "Invalid");
}

/* ---- sizes ---------------------------------------------------------------------------- */

static void fmt(uint64_t bytes, const char *want)
{
	char out[32];

	mps_format_size(bytes, out, sizeof(out));
	if (strcmp(out, want))
		print_message("%llu bytes: '%s', want '%s'\n", (unsigned long long)bytes, out, want);
	assert_string_equal(out, want);
}

static void test_format_size(void **state)
{
	char small[3];

	(void)state;
	fmt(2 * GIB, "2G");
	fmt(1536 * MIB, "1536M");
	fmt(1, "1M");
	fmt(0, "0M");
	fmt(MIB, "1M");
	fmt(MIB + 1, "2M");
	fmt(GIB - 1, "1G");
	fmt(GIB, "1G");
	fmt(GIB + 1, "1025M");
	fmt(16 * GIB, "16G");
	fmt(1024 * GIB, "1024G");
	fmt(1ull << 50, "1048576G");
	/* truncated, terminated */
	memset(small, 'z', sizeof(small));
	mps_format_size(1536 * MIB, small, sizeof(small));
	assert_string_equal(small, "15");
}

static void test_parse_size(void **state)
{
	static const char *const bad[] = {
		"2X", "", "G", "M", "-1", "-1G", "+1G", " 2G", "2G ", "2g", "2m", "2GB", "2.5G", "0x10",
		"99999999999999999999G", "99999999999999999999", "18446744073709551616", "17179869184G",
		"16777216T", "18014398509481984K",
	};
	uint64_t b;

	(void)state;
	b = 1;
	assert_int_equal(mps_parse_size("2G", &b), 0);
	assert_int_equal(b, 2 * GIB);
	assert_int_equal(mps_parse_size("512M", &b), 0);
	assert_int_equal(b, 512 * MIB);
	assert_int_equal(mps_parse_size("0", &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(mps_parse_size("1T", &b), 0);
	assert_int_equal(b, 1ull << 40);
	assert_int_equal(mps_parse_size("7K", &b), 0);
	assert_int_equal(b, 7 * 1024);
	assert_int_equal(mps_parse_size("12345", &b), 0);
	assert_int_equal(b, 12345);
	assert_int_equal(mps_parse_size("0G", &b), 0);
	assert_int_equal(b, 0);
	/* the largest of each unit */
	assert_int_equal(mps_parse_size("18446744073709551615", &b), 0);
	assert_true(b == UINT64_MAX);
	assert_int_equal(mps_parse_size("17179869183G", &b), 0);
	assert_true(b == 17179869183ull << 30);
	assert_int_equal(mps_parse_size("16777215T", &b), 0);
	assert_true(b == 16777215ull << 40);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r;

		b = 42;
		r = mps_parse_size(bad[i], &b);
		if (r != -EPROTO)
			print_message("size '%s' gave %d\n", bad[i], r);
		assert_int_equal(r, -EPROTO);
		assert_int_equal(b, 42); /* untouched */
	}
}

static void test_size_round_trip(void **state)
{
	static const uint64_t vals[] = { 0, 1, 4095, MIB - 1, MIB, MIB + 1, 3 * MIB, 1023 * MIB, GIB, GIB + MIB,
					 1536 * MIB, 2 * GIB, 16 * GIB, 80 * GIB + 1, 141 * GIB, 1ull << 40,
					 (1ull << 50) - 1, 1ull << 50 };
	char out[32];
	uint64_t b;

	(void)state;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint64_t want = (vals[i] + MIB - 1) & ~(MIB - 1);

		mps_format_size(vals[i], out, sizeof(out));
		assert_int_equal(mps_parse_size(out, &b), 0);
		assert_true(b == want);
	}
	/* every MiB count up to 4 GiB and a spread above: exact after rounding up */
	for (uint64_t mib = 0; mib <= 4096; mib++) {
		mps_format_size(mib * MIB, out, sizeof(out));
		assert_int_equal(mps_parse_size(out, &b), 0);
		assert_true(b == mib * MIB);
		mps_format_size(mib * MIB + 12345, out, sizeof(out));
		assert_int_equal(mps_parse_size(out, &b), 0);
		assert_true(b == (mib + 1) * MIB);
	}
	for (uint64_t x = 1; x < (1ull << 50); x = x * 3 + 7) {
		mps_format_size(x, out, sizeof(out));
		assert_int_equal(mps_parse_size(out, &b), 0);
		assert_true(b >= x && b - x < MIB && !(b % MIB));
	}
}

/* ---- mps_check_command ---------------------------------------------------------------- */

static void cmd_ok(const char *line, int kind, const char *norm)
{
	char out[OOO_MPS_LINE_MAX], out2[OOO_MPS_LINE_MAX], why[256] = "";
	int r;

	memset(out, 'z', sizeof(out));
	r = mps_check_command(line, out, sizeof(out), why, sizeof(why));
	if (r != kind)
		print_message("'%s' gave %d (%s), want %d\n", line, r, why, kind);
	assert_int_equal(r, kind);
	assert_string_equal(out, norm);
	/* the normalised line is its own normal form */
	assert_int_equal(mps_check_command(out, out2, sizeof(out2), why, sizeof(why)), kind);
	assert_string_equal(out2, norm);
}

static void cmd_bad(const char *line, const char *sub)
{
	char out[OOO_MPS_LINE_MAX], why[256] = "";
	int r = mps_check_command(line, out, sizeof(out), why, sizeof(why));

	if (r != -EINVAL)
		print_message("'%s' gave %d, want -EINVAL\n", line, r);
	assert_int_equal(r, -EINVAL);
	if (sub)
		assert_why_has(why, sub);
	else
		assert_why(why);
}

static void test_command_ok(void **state)
{
	(void)state;
	cmd_ok("get_server_list", MPS_GET_SERVER_LIST, "get_server_list");
	cmd_ok("get_client_list 1016", MPS_GET_CLIENT_LIST, "get_client_list 1016");
	cmd_ok("set_default_active_thread_percentage 50", MPS_SET_DEFAULT_PCT, "set_default_active_thread_percentage 50");
	cmd_ok("set_active_thread_percentage 1016 25", MPS_SET_PCT, "set_active_thread_percentage 1016 25");
	cmd_ok("set_default_device_pinned_mem_limit 0 2G", MPS_SET_DEFAULT_MEM, "set_default_device_pinned_mem_limit 0 2G");
	cmd_ok("set_device_pinned_mem_limit 1016 3 512M", MPS_SET_MEM, "set_device_pinned_mem_limit 1016 3 512M");
	cmd_ok("set_default_client_priority 1", MPS_SET_DEFAULT_PRIORITY, "set_default_client_priority 1");
	cmd_ok("set_default_client_priority 0", MPS_SET_DEFAULT_PRIORITY, "set_default_client_priority 0");
	cmd_ok("terminate_client 1016 4242", MPS_TERMINATE_CLIENT, "terminate_client 1016 4242");
	cmd_ok("quit", MPS_QUIT, "quit");
	/* spaces and tabs collapse */
	cmd_ok("  get_server_list  ", MPS_GET_SERVER_LIST, "get_server_list");
	cmd_ok("\tquit\t", MPS_QUIT, "quit");
	cmd_ok("set_active_thread_percentage \t 1016\t\t  25   ", MPS_SET_PCT, "set_active_thread_percentage 1016 25");
	cmd_ok("terminate_client\t1\t2147483647", MPS_TERMINATE_CLIENT, "terminate_client 1 2147483647");
	/* bounds of each argument */
	cmd_ok("set_default_active_thread_percentage 1", MPS_SET_DEFAULT_PCT, "set_default_active_thread_percentage 1");
	cmd_ok("set_default_active_thread_percentage 100", MPS_SET_DEFAULT_PCT,
	       "set_default_active_thread_percentage 100");
	cmd_ok("set_default_device_pinned_mem_limit 63 0", MPS_SET_DEFAULT_MEM, "set_default_device_pinned_mem_limit 63 0");
	cmd_ok("set_default_device_pinned_mem_limit 0 1T", MPS_SET_DEFAULT_MEM, "set_default_device_pinned_mem_limit 0 1T");
	cmd_ok("set_default_device_pinned_mem_limit 0 7K", MPS_SET_DEFAULT_MEM, "set_default_device_pinned_mem_limit 0 7K");
	cmd_ok("set_device_pinned_mem_limit 1 0 1048576", MPS_SET_MEM, "set_device_pinned_mem_limit 1 0 1048576");
	cmd_ok("get_client_list 2147483647", MPS_GET_CLIENT_LIST, "get_client_list 2147483647");
	/* leading zeros are digits like any other (as MPS reads them) */
	cmd_ok("get_client_list 0000000001", MPS_GET_CLIENT_LIST, "get_client_list 0000000001");
	cmd_ok("set_default_active_thread_percentage 050", MPS_SET_DEFAULT_PCT,
	       "set_default_active_thread_percentage 050");
}

static void test_command_long_ok(void **state)
{
	char line[OOO_MPS_LINE_MAX];

	(void)state;
	/* 127 characters, mostly spaces: fits, and normalises short */
	memset(line, ' ', sizeof(line));
	memcpy(line, "get_client_list", 15);
	memcpy(line + OOO_MPS_LINE_MAX - 5, "1016", 4);
	line[OOO_MPS_LINE_MAX - 1] = '\0';
	assert_int_equal(strlen(line), OOO_MPS_LINE_MAX - 1);
	cmd_ok(line, MPS_GET_CLIENT_LIST, "get_client_list 1016");
}

static void test_command_bad(void **state)
{
	char line[OOO_MPS_LINE_MAX + 16];

	(void)state;
	/* argument counts */
	cmd_bad("get_server_list 1", "takes 0 arguments, got 1");
	cmd_bad("get_client_list", "takes 1 argument, got 0");
	cmd_bad("get_client_list 1 2", "takes 1 argument, got 2");
	cmd_bad("set_active_thread_percentage 50", "takes 2 arguments, got 1");
	cmd_bad("set_device_pinned_mem_limit 1 0", "takes 3 arguments, got 2");
	cmd_bad("terminate_client 1", "takes 2 arguments, got 1");
	cmd_bad("quit now", "takes 0 arguments");
	/* pids */
	cmd_bad("get_client_list 0", "a pid");
	cmd_bad("get_client_list -1", "a pid");
	cmd_bad("get_client_list 99999999999", "a pid");
	cmd_bad("get_client_list 00000000001", "a pid");
	cmd_bad("get_client_list 2147483648", "a pid");
	cmd_bad("get_client_list 4294967297", "a pid");
	cmd_bad("get_client_list 12a", "a pid");
	cmd_bad("get_client_list +5", "a pid");
	cmd_bad("terminate_client 1016 0", "argument 2 must be a pid");
	/* percentages */
	cmd_bad("set_default_active_thread_percentage 0", "percentage");
	cmd_bad("set_default_active_thread_percentage 101", "percentage");
	cmd_bad("set_default_active_thread_percentage abc", "percentage");
	cmd_bad("set_default_active_thread_percentage 1000", "percentage");
	cmd_bad("set_default_active_thread_percentage 0100", "percentage");
	cmd_bad("set_default_active_thread_percentage 50.0", "percentage");
	cmd_bad("set_active_thread_percentage 1016 200", "argument 2 must be a percentage");
	/* devices */
	cmd_bad("set_default_device_pinned_mem_limit 64 2G", "device index");
	cmd_bad("set_default_device_pinned_mem_limit 100 2G", "device index");
	cmd_bad("set_default_device_pinned_mem_limit -1 2G", "device index");
	cmd_bad("set_device_pinned_mem_limit 1016 64 2G", "argument 2 must be a device");
	/* sizes */
	cmd_bad("set_default_device_pinned_mem_limit 0 2X", "a size");
	cmd_bad("set_default_device_pinned_mem_limit 0 G", "a size");
	cmd_bad("set_default_device_pinned_mem_limit 0 -2G", "a size");
	cmd_bad("set_default_device_pinned_mem_limit 0 99999999999999999999G", "a size");
	cmd_bad("set_default_device_pinned_mem_limit 0 17179869184G", "a size");
	cmd_bad("set_device_pinned_mem_limit 1016 0 2GB", "argument 3 must be a size");
	/* priorities */
	cmd_bad("set_default_client_priority 2", "0 or 1");
	cmd_bad("set_default_client_priority 00", "0 or 1");
	cmd_bad("set_default_client_priority -1", "0 or 1");
	/* commands */
	cmd_bad("bogus_command", "unsupported command 'bogus_command'");
	cmd_bad("GET_SERVER_LIST", "unsupported command");
	cmd_bad("get_server_list_x", "unsupported command");
	cmd_bad("start_server -uid 0", "unsupported command");
	cmd_bad("get_device_client_list", "unsupported command");
	cmd_bad("", "empty command");
	cmd_bad("   \t  ", "empty command");
	/* bytes */
	cmd_bad("get_server_list\n", "control characters");
	cmd_bad("get_server_list\r", "control characters");
	cmd_bad("quit\nget_server_list", "control characters");
	cmd_bad("get_client_list \x1b" "1", "control characters");
	cmd_bad("get_server_list\x7f", "non-ASCII");
	cmd_bad("get_server_list \xc3\xa9", "non-ASCII");
	cmd_bad("qu\xffit", "non-ASCII");
	/* words */
	cmd_bad("a b c d e f g", "too many words");
	cmd_bad("set_device_pinned_mem_limit 1 2 3 4 5 6 7 8", "too many words");
	cmd_bad("set_device_pinned_mem_limit 1016 0 2G 5", "takes 3 arguments, got 4");
	cmd_bad("set_device_pinned_mem_limit 1016 0 2G 5 6", "takes 3 arguments, got 5");
	/* length: OOO_MPS_LINE_MAX - 1 characters and more */
	memset(line, ' ', sizeof(line));
	memcpy(line, "quit", 4);
	line[OOO_MPS_LINE_MAX] = '\0';
	cmd_bad(line, "longer than");
	line[OOO_MPS_LINE_MAX + 15] = '\0';
	cmd_bad(line, "longer than");
}

static void test_command_out_cap(void **state)
{
	char out[16], why[256] = "";

	(void)state;
	/* the normalised line does not fit the caller's buffer */
	assert_int_equal(mps_check_command("get_client_list 1016", out, sizeof(out), why, sizeof(why)), -EINVAL);
	assert_why_has(why, "too long");
	assert_true(strnlen(out, sizeof(out)) < sizeof(out));
	/* just fits: 15 characters and the NUL */
	assert_int_equal(mps_check_command("get_server_list", out, sizeof(out), why, sizeof(why)), MPS_GET_SERVER_LIST);
	assert_string_equal(out, "get_server_list");
	/* one short */
	assert_int_equal(mps_check_command("get_server_list", out, 15, why, sizeof(why)), -EINVAL);
	assert_why(why);
	/* no why wanted */
	assert_int_equal(mps_check_command("bogus", out, sizeof(out), NULL, 0), -EINVAL);
}

/* ---- mps_check_reply ------------------------------------------------------------------ */

static int reply(int kind, const char *cmd, const char *text, char *why)
{
	why[0] = '\0';
	return mps_check_reply(kind, cmd, text, why, 256);
}

static void test_check_reply(void **state)
{
	char why[256];

	(void)state;
	assert_int_equal(reply(MPS_SET_DEFAULT_PCT, "set_default_active_thread_percentage 50", "50.0\n", why), 0);
	assert_int_equal(reply(MPS_SET_DEFAULT_PCT, "set_default_active_thread_percentage 50", "100.0\n", why),
			 -EINVAL);
	assert_why_has(why, "kept");
	assert_int_equal(reply(MPS_SET_PCT, "set_active_thread_percentage 1016 30", "30.0\n", why), 0);
	/* the percentage is the last word, not the pid */
	assert_int_equal(reply(MPS_SET_PCT, "set_active_thread_percentage 30 1016", "30.0\n", why), -EINVAL);
	assert_why_has(why, "kept");
	assert_int_equal(reply(MPS_SET_PCT, "set_active_thread_percentage 1016 30", "Server 1016 not found\n", why),
			 -ESRCH);
	assert_why(why);

	assert_int_equal(reply(MPS_GET_SERVER_LIST, "get_server_list", "", why), 0);
	assert_int_equal(reply(MPS_GET_SERVER_LIST, "get_server_list", "1016\n", why), 0);
	assert_int_equal(reply(MPS_GET_CLIENT_LIST, "get_client_list 1", "Server 1 not found\n", why), -ESRCH);
	assert_int_equal(reply(MPS_GET_CLIENT_LIST, "get_client_list 1016", "12\n34\n", why), 0);
	assert_int_equal(reply(MPS_GET_SERVER_LIST, "get_server_list", "Unknown command \"x\"\n", why), -EPROTO);
	assert_why(why);

	assert_int_equal(reply(MPS_TERMINATE_CLIENT, "terminate_client 1016 4242", "0\n", why), 0);
	assert_int_equal(reply(MPS_TERMINATE_CLIENT, "terminate_client 1016 999999", "Invalid process 999999!\n1\n", why),
			 -ESRCH);
	assert_why_has(why, "Invalid process");
	assert_int_equal(reply(MPS_TERMINATE_CLIENT, "terminate_client 1016 4242", "", why), -EPROTO);

	assert_int_equal(reply(MPS_SET_DEFAULT_MEM, "set_default_device_pinned_mem_limit 0 2G", "", why), 0);
	assert_int_equal(reply(MPS_SET_MEM, "set_device_pinned_mem_limit 1016 0 2G", "", why), 0);
	assert_int_equal(reply(MPS_SET_MEM, "set_device_pinned_mem_limit 5 0 2G", "Server 5 not found\n", why), -ESRCH);
	assert_int_equal(reply(MPS_SET_DEFAULT_PRIORITY, "set_default_client_priority 1", "", why), 0);
	assert_int_equal(reply(MPS_SET_DEFAULT_PRIORITY, "set_default_client_priority 1",
			       "Invalid priority value - must be 0 or 1!\n", why),
			 -EINVAL);
	assert_why_has(why, "Invalid priority");
	assert_int_equal(reply(MPS_QUIT, "quit", "", why), 0);
	/* a pid list is not an empty reply */
	assert_int_equal(reply(MPS_QUIT, "quit", "1016\n", why), -EINVAL);
	assert_why(why);

	/* kinds there are not */
	assert_int_equal(reply(0, "quit", "", why), -EINVAL);
	assert_why_has(why, "unknown command kind 0");
	assert_int_equal(reply(MPS_QUIT + 1, "quit", "", why), -EINVAL);
	assert_why(why);
	assert_int_equal(reply(-1, "quit", "", why), -EINVAL);
	assert_why(why);
}

/* Each command's normalised line checked together with a reply to it. */
static void test_command_then_reply(void **state)
{
	static const struct {
		const char *line, *reply;
		int want;
	} cases[] = {
		{ "set_default_active_thread_percentage   50", "50.0\n", 0 },
		{ "set_default_active_thread_percentage 200", NULL, 0 },
		{ "set_active_thread_percentage 1016\t75 ", "75.0\n", 0 },
		{ "set_active_thread_percentage 1016 75", "100.0\n", -EINVAL },
		{ "get_server_list", "1016\n", 0 },
		{ "terminate_client 1016 999999", "Invalid process 999999!\n1\n", -ESRCH },
		{ "set_default_device_pinned_mem_limit 0 2G", "", 0 },
		{ "quit", "", 0 },
	};
	char out[OOO_MPS_LINE_MAX], why[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int kind = mps_check_command(cases[i].line, out, sizeof(out), why, sizeof(why));

		if (!cases[i].reply) {
			assert_int_equal(kind, -EINVAL);
			continue;
		}
		assert_true(kind > 0);
		assert_int_equal(reply(kind, out, cases[i].reply, why), cases[i].want);
		if (cases[i].want)
			assert_why(why);
	}
}

/* ---- lease_decide --------------------------------------------------------------------- */

/* What class_defaults in daemon/policy.c sets, plus a name. */
static void class_init(struct ooo_class *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "gpu");
	c->admit = true;
	c->priority = 50;
	c->slo_us = 10000;
	c->sm_share = 100;
	c->limit[OOO_RES_SESSIONS] = 64;
	c->limit[OOO_RES_QUEUES] = 256;
	c->limit[OOO_RES_BUFFERS] = 4096;
	c->limit[OOO_RES_MEM_BYTES] = 16 * GIB;
	c->limit[OOO_RES_MODULES] = 256;
	c->limit[OOO_RES_INFLIGHT] = 4096;
	c->native_sm = 25;
	c->native_priority = OOO_LEASE_PRIO_NORMAL;
	c->max_leases = 16;
}

static void view_init(struct lease_view *v, uint32_t ngpus)
{
	memset(v, 0, sizeof(*v));
	v->ngpus = ngpus;
	v->max_clients = 48;
}

static void req_init(struct ooo_msg_lease_req *r, uint32_t device)
{
	memset(r, 0, sizeof(*r));
	r->device = device;
}

static int decide(const struct lease_view *v, const struct ooo_class *c, const struct ooo_msg_lease_req *r,
		  struct lease_grant *g, char *why)
{
	memset(why, 'z', 256);
	why[255] = '\0';
	return lease_decide(v, c, r, g, why, 256);
}

static void test_decide_defaults(void **state)
{
	struct ooo_class c;
	struct lease_view v;
	struct ooo_msg_lease_req r;
	struct lease_grant g;
	char why[256];

	(void)state;
	class_init(&c);
	view_init(&v, 1);
	req_init(&r, 0);
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_string_equal(why, "");
	assert_int_equal(g.device, 0);
	assert_int_equal(g.sm_pct, 25);
	assert_int_equal(g.priority, OOO_LEASE_PRIO_NORMAL);
	assert_true(g.mem_bytes == 16 * GIB); /* native_mem 0: mem_limit */
	assert_string_equal(g.note, "");

	/* native_mem set */
	c.native_mem = 4 * GIB;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_true(g.mem_bytes == 4 * GIB);
	/* native_mem above mem_limit: clamped */
	c.native_mem = 32 * GIB;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_true(g.mem_bytes == 16 * GIB);
	c.native_mem = 0;

	/* explicit --sm and --mem */
	r.sm_pct = 60;
	r.mem_bytes = 2 * GIB;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.sm_pct, 60);
	assert_true(g.mem_bytes == 2 * GIB);
	r.sm_pct = 100;
	r.mem_bytes = 16 * GIB; /* exactly mem_limit */
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.sm_pct, 100);
	assert_true(g.mem_bytes == 16 * GIB);
	r.sm_pct = 1;
	r.mem_bytes = MIB; /* the least there is */
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.sm_pct, 1);
	assert_true(g.mem_bytes == MIB);

	/* an explicit device */
	view_init(&v, 4);
	req_init(&r, 3);
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 3);
}

static void test_decide_refusals(void **state)
{
	struct ooo_class c;
	struct lease_view v;
	struct ooo_msg_lease_req r;
	struct lease_grant g;
	char why[256];

	(void)state;
	class_init(&c);
	view_init(&v, 2);

	/* sm above 100, whatever the class allows */
	req_init(&r, 0);
	r.sm_pct = 101;
	assert_int_equal(decide(&v, &c, &r, &g, why), -EINVAL);
	assert_why_has(why, "--sm");
	r.sm_pct = UINT32_MAX;
	assert_int_equal(decide(&v, &c, &r, &g, why), -EINVAL);
	assert_why(why);
	/* sm above sm_share */
	c.sm_share = 50;
	r.sm_pct = 51;
	assert_int_equal(decide(&v, &c, &r, &g, why), -EPERM);
	assert_why_has(why, "sm_share");
	assert_why_has(why, "'gpu'");
	r.sm_pct = 50;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.sm_pct, 50);
	c.sm_share = 100;

	/* memory */
	req_init(&r, 0);
	r.mem_bytes = 16 * GIB + 1;
	assert_int_equal(decide(&v, &c, &r, &g, why), -EPERM);
	assert_why_has(why, "mem_limit");
	r.mem_bytes = MIB - 1;
	assert_int_equal(decide(&v, &c, &r, &g, why), -EINVAL);
	assert_why_has(why, "--mem");
	r.mem_bytes = 1;
	assert_int_equal(decide(&v, &c, &r, &g, why), -EINVAL);
	assert_why(why);

	/* priority */
	req_init(&r, 0);
	r.priority = OOO_LEASE_PRIO_BELOW;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.priority, OOO_LEASE_PRIO_BELOW);
	r.priority = OOO_LEASE_PRIO_NORMAL;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.priority, OOO_LEASE_PRIO_NORMAL);
	r.priority = 3;
	assert_int_equal(decide(&v, &c, &r, &g, why), -EINVAL);
	assert_why_has(why, "priority");
	c.native_priority = OOO_LEASE_PRIO_BELOW;
	r.priority = OOO_LEASE_PRIO_NORMAL;
	assert_int_equal(decide(&v, &c, &r, &g, why), -EPERM);
	assert_why_has(why, "native_priority");
	r.priority = OOO_LEASE_PRIO_CLASS;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.priority, OOO_LEASE_PRIO_BELOW);
	r.priority = OOO_LEASE_PRIO_BELOW;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.priority, OOO_LEASE_PRIO_BELOW);
	c.native_priority = OOO_LEASE_PRIO_NORMAL;

	/* max_leases */
	req_init(&r, 0);
	v.tenant_leases = 15;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	v.tenant_leases = 16;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "max_leases = 16");
	c.max_leases = 0;
	v.tenant_leases = 0;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why(why);
	c.max_leases = 16;

	/* GPUs */
	v.ngpus = 0;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ENODEV);
	assert_why_has(why, "no GPU");
	req_init(&r, OOO_DEVICE_ANY);
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ENODEV);
	assert_why(why);
	v.ngpus = 2;
	req_init(&r, 2);
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ENODEV);
	assert_why_has(why, "no GPU 2");
	req_init(&r, 1000);
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ENODEV);
	assert_why(why);
	req_init(&r, 1);
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 1);
}

static void test_decide_room(void **state)
{
	struct ooo_class c;
	struct lease_view v;
	struct ooo_msg_lease_req r;
	struct lease_grant g;
	char why[256];

	(void)state;
	class_init(&c);
	view_init(&v, 1);
	req_init(&r, 0);

	/* oversubscription */
	v.reserved[0] = 80;
	v.clients[0] = 2;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "oversubscribe");
	assert_why_has(why, "80%");
	v.reserved[0] = 75; /* exactly 100 */
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.sm_pct, 25);
	v.reserved[0] = 0;
	r.sm_pct = 100;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	v.reserved[0] = 1;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "oversubscribe");
	/* executor_reserve counts */
	r.sm_pct = 0;
	v.reserved[0] = 65;
	v.exec_reserve = 10;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	v.reserved[0] = 70;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "oversubscribe");
	assert_why_has(why, "executor_reserve");
	assert_why_has(why, "80%");
	v.reserved[0] = 0;
	v.exec_reserve = 76;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why(why);
	v.exec_reserve = 0;

	/* max_clients: the executor is a client too */
	v.clients[0] = 47;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	v.exec_clients = 1;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "max_clients");
	assert_why_has(why, "executor");
	v.clients[0] = 46;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	/* more trust domains' executors (and the spare) on the GPU are clients too */
	v.exec_extra[0] = 2;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "46 leases and 3 executors");
	v.clients[0] = 44;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	v.exec_extra[0] = 0;
	v.exec_clients = 0;
	v.clients[0] = 48;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "max_clients = 48");
	v.clients[0] = 0;
	v.max_clients = 0;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "max_clients");
}

static void test_decide_any(void **state)
{
	struct ooo_class c;
	struct lease_view v;
	struct ooo_msg_lease_req r;
	struct lease_grant g;
	char why[256];

	(void)state;
	class_init(&c);
	req_init(&r, OOO_DEVICE_ANY);

	/* the least reserved */
	view_init(&v, 4);
	v.reserved[0] = 50;
	v.reserved[1] = 30;
	v.reserved[2] = 10;
	v.reserved[3] = 40;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 2);
	/* ties: fewer clients */
	v.reserved[1] = 10;
	v.clients[1] = 3;
	v.clients[2] = 2;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 2);
	v.clients[1] = 1;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 1);
	/* then the lowest index */
	v.clients[1] = 2;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 1);
	/* all idle: GPU 0 */
	view_init(&v, 4);
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 0);
	/* the last one */
	v.reserved[0] = v.reserved[1] = v.reserved[2] = 5;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 3);

	/* full GPUs are skipped: 2 has no client slot left, 1 no share */
	view_init(&v, 4);
	v.reserved[0] = 60;
	v.reserved[1] = 80;
	v.reserved[2] = 0;
	v.clients[2] = 48;
	v.reserved[3] = 70;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 0);
	/* a larger share fits only where there is room for it */
	r.sm_pct = 35;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 0);
	r.sm_pct = 40;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 0);
	r.sm_pct = 41;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why(why);
	r.sm_pct = 0;
	/* the executor's client slot counts when choosing */
	view_init(&v, 2);
	v.clients[0] = 47;
	v.reserved[1] = 50;
	v.clients[1] = 10;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 0);
	v.exec_clients = 1;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, 1);
	/* and executor_reserve when the least reserved is out of client slots */
	v.exec_reserve = 30;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why(why);

	/* every GPU full: share */
	view_init(&v, 3);
	v.reserved[0] = 90;
	v.reserved[1] = 80;
	v.reserved[2] = 100;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "no GPU has room for 25%");
	assert_why_has(why, "GPU 1 80% reserved");
	/* every GPU full: clients */
	view_init(&v, 3);
	v.clients[0] = v.clients[1] = v.clients[2] = 48;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "no GPU has room");
	assert_why_has(why, "GPU 2 0% reserved, 48 of 48 clients");
	/* one GPU, full */
	view_init(&v, 1);
	v.reserved[0] = 100;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "oversubscribe");

	/* OOO_MPS_GPUS of them, only the last free */
	view_init(&v, OOO_MPS_GPUS);
	for (unsigned d = 0; d < OOO_MPS_GPUS - 1; d++)
		v.reserved[d] = 90;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.device, OOO_MPS_GPUS - 1);
}

static void test_decide_offer(void **state)
{
	struct ooo_class c;
	struct lease_view v;
	struct ooo_msg_lease_req r;
	struct lease_grant g;
	char why[256];

	(void)state;
	class_init(&c);
	view_init(&v, 1);
	req_init(&r, 0);

	/* feedback raised the offer */
	v.offer = 40;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.sm_pct, 40);
	assert_non_null(strstr(g.note, "feedback"));
	assert_non_null(strstr(g.note, "40%"));
	assert_non_null(strstr(g.note, "25%"));
	assert_non_null(strstr(g.note, "'gpu'"));
	/* clamped to sm_share */
	c.sm_share = 30;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.sm_pct, 30);
	assert_non_null(strstr(g.note, "feedback"));
	assert_non_null(strstr(g.note, "share 30%"));
	c.sm_share = 100;
	/* an offer that is native_sm: no note */
	v.offer = 25;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.sm_pct, 25);
	assert_string_equal(g.note, "");
	/* an explicit --sm: the offer does not apply */
	v.offer = 40;
	r.sm_pct = 10;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.sm_pct, 10);
	assert_string_equal(g.note, "");
	/* the raised offer must still fit */
	r.sm_pct = 0;
	v.reserved[0] = 70;
	assert_int_equal(decide(&v, &c, &r, &g, why), -OOO_ELIMIT);
	assert_why_has(why, "40% more would oversubscribe");
	v.reserved[0] = 0;

	/* native_sm above sm_share: clamped (policy forbids it, but a view may) */
	v.offer = 0;
	c.native_sm = 80;
	c.sm_share = 50;
	assert_int_equal(decide(&v, &c, &r, &g, why), 0);
	assert_int_equal(g.sm_pct, 50);
	assert_string_equal(g.note, "");
}

/* ---- lease_env ------------------------------------------------------------------------ */

static const char env_want[] = "CUDA_MPS_PIPE_DIRECTORY=/run/ooo/mps/pipe\n"
			       "CUDA_MPS_LOG_DIRECTORY=/run/ooo/mps/log\n"
			       "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\n"
			       "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2G\n"
			       "CUDA_MPS_CLIENT_PRIORITY=1\n"
			       "CUDA_VISIBLE_DEVICES=GPU-5e2f8c1a-0000-1111-2222-333344445555\n"
			       "OOO_LEASE=7\n";

static void test_env(void **state)
{
	struct lease_grant g;
	char out[OOO_LEASE_ENV_MAX];
	const char *vis = "GPU-5e2f8c1a-0000-1111-2222-333344445555";

	(void)state;
	memset(&g, 0, sizeof(g));
	g.device = 0;
	g.sm_pct = 25;
	g.mem_bytes = 2 * GIB;
	g.priority = OOO_LEASE_PRIO_BELOW;
	assert_int_equal(lease_env(&g, 7, "/run/ooo/mps/pipe", "/run/ooo/mps/log", vis, out, sizeof(out)), 0);
	assert_string_equal(out, env_want);
	assert_true(out[strlen(out) - 1] == '\n');

	/* normal priority, an odd size, a large id */
	g.priority = OOO_LEASE_PRIO_NORMAL;
	g.sm_pct = 100;
	g.mem_bytes = 1536 * MIB + 1;
	assert_int_equal(lease_env(&g, UINT64_MAX, "/p", "/l", "0", out, sizeof(out)), 0);
	assert_string_equal(out, "CUDA_MPS_PIPE_DIRECTORY=/p\nCUDA_MPS_LOG_DIRECTORY=/l\n"
				 "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100\nCUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1537M\n"
				 "CUDA_MPS_CLIENT_PRIORITY=0\nCUDA_VISIBLE_DEVICES=0\nOOO_LEASE=18446744073709551615\n");
	/* the class priority (never granted, but not BELOW): 0 */
	g.priority = OOO_LEASE_PRIO_CLASS;
	assert_int_equal(lease_env(&g, 1, "/p", "/l", "0", out, sizeof(out)), 0);
	assert_non_null(strstr(out, "\nCUDA_MPS_CLIENT_PRIORITY=0\n"));
}

static void test_env_cap(void **state)
{
	struct lease_grant g;
	char out[OOO_LEASE_ENV_MAX], big[OOO_LEASE_ENV_MAX];
	const char *vis = "GPU-5e2f8c1a-0000-1111-2222-333344445555";
	size_t need = strlen(env_want) + 1;

	(void)state;
	memset(&g, 0, sizeof(g));
	g.sm_pct = 25;
	g.mem_bytes = 2 * GIB;
	g.priority = OOO_LEASE_PRIO_BELOW;
	assert_int_equal(lease_env(&g, 7, "/run/ooo/mps/pipe", "/run/ooo/mps/log", vis, out, need), 0);
	assert_string_equal(out, env_want);
	assert_int_equal(lease_env(&g, 7, "/run/ooo/mps/pipe", "/run/ooo/mps/log", vis, out, need - 1), -ENAMETOOLONG);
	assert_int_equal(lease_env(&g, 7, "/run/ooo/mps/pipe", "/run/ooo/mps/log", vis, out, 16), -ENAMETOOLONG);
	assert_int_equal(lease_env(&g, 7, "/run/ooo/mps/pipe", "/run/ooo/mps/log", vis, out, 0), -ENAMETOOLONG);
	/* paths that do not fit OOO_LEASE_ENV_MAX */
	memset(big, 'd', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(lease_env(&g, 7, big, "/l", "0", out, sizeof(out)), -ENAMETOOLONG);
	big[600] = '\0';
	assert_int_equal(lease_env(&g, 7, big, big, "0", out, sizeof(out)), -ENAMETOOLONG);
	big[300] = '\0';
	assert_int_equal(lease_env(&g, 7, big, big, "0", out, sizeof(out)), 0);
	assert_true(strlen(out) < sizeof(out));
}

/* ---- lease_hist_quantile -------------------------------------------------------------- */

/* telemetry feedback: when a lease counts as slow, and what its class offers next */
static void test_feedback(void **state)
{
	struct ooo_class c;

	(void)state;
	class_init(&c);
	/* too few syncs to judge, or within the SLO */
	assert_false(lease_is_slow(LEASE_FEEDBACK_MIN - 1, 50000000, 10000));
	assert_false(lease_is_slow(LEASE_FEEDBACK_MIN, 10000000, 10000));
	/* the bucket (8.2, 16.4] ms is not wholly above 10 ms; (16.4, 32.8] is */
	assert_false(lease_is_slow(LEASE_FEEDBACK_MIN, 16384000, 10000));
	assert_true(lease_is_slow(LEASE_FEEDBACK_MIN, 32768000, 10000));
	assert_true(lease_is_slow(1000, 20000000, 10000));
	/* the first raise starts from native_sm, later ones from the offer, capped at sm_share */
	assert_int_equal(lease_raise_offer(0, &c, 10), 35);
	assert_int_equal(lease_raise_offer(35, &c, 10), 45);
	assert_int_equal(lease_raise_offer(95, &c, 10), 100);
	assert_int_equal(lease_raise_offer(100, &c, 10), 100);
	c.sm_share = 30;
	assert_int_equal(lease_raise_offer(0, &c, 10), 30);
	c.native_sm = 50; /* above sm_share: the cap applies to the base too */
	assert_int_equal(lease_raise_offer(0, &c, 1), 30);
}

static void test_hist(void **state)
{
	uint64_t h[64];

	(void)state;
	memset(h, 0, sizeof(h));
	assert_true(lease_hist_quantile(h, 64, 0.99) == 0);
	assert_true(lease_hist_quantile(h, 0, 0.99) == 0);
	h[0] = 5;
	assert_true(lease_hist_quantile(h, 64, 0.99) == 1000);
	assert_true(lease_hist_quantile(h, 64, 0.0) == 1000);
	assert_true(lease_hist_quantile(h, 64, 1.0) == 1000);
	/* 99 fast, 1 slow: p99 is the slow bucket, p50 the fast */
	h[0] = 99;
	h[5] = 1;
	assert_true(lease_hist_quantile(h, 64, 0.99) == 32000);
	assert_true(lease_hist_quantile(h, 64, 0.5) == 1000);
	assert_true(lease_hist_quantile(h, 64, 0.98) == 1000);
	/* 90 at 4 us, 9 at 64 us, 1 at 1024 us */
	memset(h, 0, sizeof(h));
	h[2] = 900;
	h[6] = 90;
	h[10] = 10;
	assert_true(lease_hist_quantile(h, 64, 0.5) == 4000);
	assert_true(lease_hist_quantile(h, 64, 0.9) == 64000);
	assert_true(lease_hist_quantile(h, 64, 0.99) == 1024000);
	assert_true(lease_hist_quantile(h, 64, 1.0) == 1024000);
	assert_true(lease_hist_quantile(h, 64, 2.0) == 1024000);
	/* only the first nb buckets count */
	assert_true(lease_hist_quantile(h, 7, 0.99) == 64000);
	assert_true(lease_hist_quantile(h, 2, 0.99) == 0);
	/* the top buckets saturate */
	memset(h, 0, sizeof(h));
	h[40] = 1;
	assert_true(lease_hist_quantile(h, 64, 0.99) == (1ull << 40) * 1000ull);
	h[40] = 0;
	h[63] = 1;
	assert_true(lease_hist_quantile(h, 64, 0.99) == UINT64_MAX / 1000 * 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pids_real),
		cmocka_unit_test(test_pids_lists),
		cmocka_unit_test(test_pids_bad),
		cmocka_unit_test(test_pids_cap),
		cmocka_unit_test(test_pct),
		cmocka_unit_test(test_pct_bad),
		cmocka_unit_test(test_terminate),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_format_size),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_size_round_trip),
		cmocka_unit_test(test_command_ok),
		cmocka_unit_test(test_command_long_ok),
		cmocka_unit_test(test_command_bad),
		cmocka_unit_test(test_command_out_cap),
		cmocka_unit_test(test_check_reply),
		cmocka_unit_test(test_command_then_reply),
		cmocka_unit_test(test_decide_defaults),
		cmocka_unit_test(test_decide_refusals),
		cmocka_unit_test(test_decide_room),
		cmocka_unit_test(test_decide_any),
		cmocka_unit_test(test_decide_offer),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_env_cap),
		cmocka_unit_test(test_hist),
		cmocka_unit_test(test_feedback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
