/* SPDX-License-Identifier: MIT */
/* Unit tests for daemon/policy.c: defaults, matching, every key, every error. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/policy/cgroup.h"
#include "../../daemon/policy/policy.h"

/* A user and group name no system has. */
#define NO_SUCH_NAME "ooo-no-such-name-7f3a9c"

static struct policy *parse_ok(const char *text)
{
	struct policy_error err = { 0 };
	struct policy *p = NULL;
	int rc = policy_parse(text, strlen(text), "test", &p, &err);

	if (rc)
		print_message("unexpected error rc=%d line %d: %s\n--- text:\n%s\n", rc, err.line,
			      err.msg, text);
	assert_int_equal(rc, 0);
	assert_non_null(p);
	return p;
}

static void check_err_len(const char *text, size_t len, int want_rc, int line, const char *substr)
{
	struct policy_error err = { 0 };
	struct policy *p = (struct policy *)(uintptr_t)0x1; /* must stay untouched */
	int rc = policy_parse(text, len, "test", &p, &err);

	if (rc != want_rc || err.line != line || !strstr(err.msg, substr))
		print_message("want rc=%d line %d '%s'\n got rc=%d line %d '%s'\n", want_rc, line,
			      substr, rc, err.line, err.msg);
	assert_int_equal(rc, want_rc);
	assert_int_equal(err.line, line);
	assert_non_null(strstr(err.msg, substr));
	assert_ptr_equal(p, (struct policy *)(uintptr_t)0x1);
}

static void check_err(const char *text, int line, const char *substr)
{
	check_err_len(text, strlen(text), -EINVAL, line, substr);
}

/* ---- defaults ----------------------------------------------------------- */

static void check_class_defaults(const struct ooo_class *c)
{
	assert_true(c->admit);
	assert_int_equal(c->priority, 50);
	assert_int_equal(c->slo_us, 10000);
	assert_int_equal(c->sm_share, 100);
	assert_int_equal(c->limit[OOO_RES_SESSIONS], 64);
	assert_int_equal(c->limit[OOO_RES_QUEUES], 256);
	assert_int_equal(c->limit[OOO_RES_BUFFERS], 4096);
	assert_int_equal(c->limit[OOO_RES_MEM_BYTES], 16ull << 30);
	assert_int_equal(c->limit[OOO_RES_MODULES], 256);
	assert_int_equal(c->limit[OOO_RES_INFLIGHT], 4096);
}

static void check_daemon_defaults(const struct policy *p)
{
	assert_false(p->has_admin_group);
	assert_int_equal(p->max_sessions, 4096);
	assert_int_equal(p->max_admin_sessions, 16);
	assert_int_equal(p->hello_timeout_ms, 5000);
	assert_int_equal(p->shutdown_grace_ms, 2000);
	assert_int_equal(p->log_level, POLICY_LOG_INFO);
	assert_int_equal(p->streams, POLICY_STREAMS_DEFAULT);
	assert_int_equal(p->serving_threads, POLICY_SERVING_THREADS_DEFAULT);
	assert_int_equal(p->serving_threads, 2);
	assert_int_equal(p->shard_sessions, 16);
	assert_true(p->fuse);
	assert_true(p->fuse_copies);
	assert_false(p->spread_lanes);
	assert_true(p->chain_launches);
	assert_int_equal(p->urgent_reserve, 0);
	assert_int_equal(p->burst_wait_us, 0);
	assert_int_equal(p->kernel_time_limit_ms, 10000);
	assert_int_equal(p->hang_strikes, 3);
	assert_int_equal(p->hang_window_s, 600);
}

static void test_default_text(void **state)
{
	struct policy *p = NULL;
	const struct ooo_class *c;
	gid_t g = 12345;

	(void)state;
	assert_int_equal(policy_load_default(&p), 0);
	assert_string_equal(p->source, "(embedded defaults)");
	check_daemon_defaults(p);
	assert_int_equal(p->nclasses, 1);
	c = &p->classes[0];
	assert_string_equal(c->name, "default");
	assert_true(c->match_all);
	check_class_defaults(c);
	assert_ptr_equal(policy_find_class(p, "default"), c);
	assert_null(policy_find_class(p, "nope"));
	assert_ptr_equal(policy_match(p, 1000, 1000, NULL, 0), c);
	assert_ptr_equal(policy_match(p, 0, 0, &g, 1), c);
	assert_null(policy_free(p));
}

static void test_empty(void **state)
{
	struct policy_error err = { 0 };
	struct policy *p = NULL;

	(void)state;
	/* an empty policy is valid and admits nobody */
	assert_int_equal(policy_parse(NULL, 0, "empty", &p, &err), 0);
	check_daemon_defaults(p);
	assert_int_equal(p->nclasses, 0);
	assert_null(policy_match(p, 0, 0, NULL, 0));
	assert_string_equal(p->source, "empty");
	policy_free(p);

	p = parse_ok("# only comments\n; and more\n\n   \n[daemon]\nlog_level = debug\n");
	assert_int_equal(p->nclasses, 0);
	assert_int_equal(p->log_level, POLICY_LOG_DEBUG);
	assert_null(policy_match(p, 1000, 1000, NULL, 0));
	policy_free(p);

	assert_null(policy_free(NULL));
	assert_null(policy_match(NULL, 0, 0, NULL, 0));
	assert_null(policy_find_class(NULL, "x"));
}

/* ---- matching ----------------------------------------------------------- */

static const char multi_conf[] =
	"[daemon]\n"
	"admin_group = root\n"
	"\n"
	"[class banned]\n"
	"match_uid = 1001\n"
	"admit = no\n"
	"\n"
	"[class gpu]\n"
	"match_uid = 1000, 1002\n"
	"match_user = root\n"
	"priority = 90\n"
	"mem_limit = 64G\n"
	"\n"
	"[class staff]\n"
	"match_gid = 50 60,70\n"
	"priority = 10\n"
	"\n"
	"[class wheel]\n"
	"match_group = root\n"
	"\n"
	"[class also-staff]\n"
	"match_gid = 50\n";

static void test_multi_class(void **state)
{
	struct policy *p = parse_ok(multi_conf);
	const struct ooo_class *banned, *gpu, *staff, *wheel;
	gid_t g60 = 60, groups[] = { 7, 8, 0 };

	(void)state;
	assert_int_equal(p->nclasses, 5);
	assert_true(p->has_admin_group);
	assert_int_equal(p->admin_gid, 0);
	assert_string_equal(p->admin_group, "root");
	banned = policy_find_class(p, "banned");
	gpu = policy_find_class(p, "gpu");
	staff = policy_find_class(p, "staff");
	wheel = policy_find_class(p, "wheel");
	assert_non_null(banned);
	assert_false(banned->admit);
	assert_ptr_equal(gpu, &p->classes[1]);
	assert_int_equal(gpu->nuids, 3);
	assert_int_equal(gpu->uids[0], 1000);
	assert_int_equal(gpu->uids[1], 1002);
	assert_int_equal(gpu->uids[2], 0); /* match_user = root */
	assert_int_equal(gpu->priority, 90);
	assert_int_equal(gpu->limit[OOO_RES_MEM_BYTES], 64ull << 30);
	assert_int_equal(staff->ngids, 3);
	assert_int_equal(wheel->ngids, 1);
	assert_int_equal(wheel->gids[0], 0);
	check_class_defaults(wheel);

	/* admit = no refuses, even though staff would match by gid */
	assert_null(policy_match(p, 1001, 50, NULL, 0));
	assert_ptr_equal(policy_match(p, 1000, 1000, NULL, 0), gpu);
	assert_ptr_equal(policy_match(p, 1002, 50, NULL, 0), gpu);
	assert_ptr_equal(policy_match(p, 0, 0, NULL, 0), gpu);
	/* primary gid, then supplementary groups */
	assert_ptr_equal(policy_match(p, 5, 70, NULL, 0), staff);
	assert_ptr_equal(policy_match(p, 5, 7, &g60, 1), staff);
	/* staff is before also-staff: first match wins */
	assert_ptr_equal(policy_match(p, 5, 50, NULL, 0), staff);
	assert_ptr_equal(policy_match(p, 5, 7, groups, 3), wheel);
	assert_ptr_equal(policy_match(p, 5, 7, groups, 2), NULL);
	assert_null(policy_match(p, 5, 7, NULL, 0));
	/* a uid is not a gid */
	assert_null(policy_match(p, 50, 7, NULL, 0));
	policy_free(p);
}

static void test_match_all(void **state)
{
	struct policy *p;
	const struct ooo_class *c;

	(void)state;
	p = parse_ok("[class a]\nmatch_uid = 1\n[class rest]\nmatch_gid = *\nadmit = false\n");
	assert_int_equal(p->classes[0].nuids, 1);
	assert_false(p->classes[0].match_all);
	assert_true(p->classes[1].match_all);
	assert_int_equal(p->classes[1].ngids, 0);
	assert_ptr_equal(policy_match(p, 1, 1, NULL, 0), &p->classes[0]);
	assert_null(policy_match(p, 2, 2, NULL, 0));
	policy_free(p);

	p = parse_ok("[class a]\nmatch_uid = *\nmatch_gid = *\n");
	c = policy_match(p, 123, 456, NULL, 0);
	assert_ptr_equal(c, &p->classes[0]);
	policy_free(p);
}

/* ---- keys and boundaries ------------------------------------------------ */

struct range_case {
	const char *key;
	uint64_t lo, hi;
};

static const struct range_case daemon_ranges[] = {
	{ "max_sessions", 1, 65536 },
	{ "max_admin_sessions", 1, 1024 },
	{ "hello_timeout_ms", 100, 600000 },
	{ "shutdown_grace_ms", 0, 600000 },
	{ "streams", 1, 8 },
	{ "serving_threads", 1, 8 },
	{ "shard_sessions", 0, 4096 },
	{ "urgent_reserve", 0, 8 },
	{ "burst_wait_us", 0, 50 },
	{ "kernel_time_limit_ms", 0, 3600000 },
	{ "hang_strikes", 0, 16 },
	{ "hang_window_s", 1, 86400 },
};

static uint64_t daemon_field(const struct policy *p, const char *key)
{
	if (!strcmp(key, "max_sessions"))
		return p->max_sessions;
	if (!strcmp(key, "max_admin_sessions"))
		return p->max_admin_sessions;
	if (!strcmp(key, "hello_timeout_ms"))
		return p->hello_timeout_ms;
	if (!strcmp(key, "streams"))
		return p->streams;
	if (!strcmp(key, "serving_threads"))
		return p->serving_threads;
	if (!strcmp(key, "shard_sessions"))
		return p->shard_sessions;
	if (!strcmp(key, "urgent_reserve"))
		return p->urgent_reserve;
	if (!strcmp(key, "burst_wait_us"))
		return p->burst_wait_us;
	if (!strcmp(key, "kernel_time_limit_ms"))
		return p->kernel_time_limit_ms;
	if (!strcmp(key, "hang_strikes"))
		return p->hang_strikes;
	if (!strcmp(key, "hang_window_s"))
		return p->hang_window_s;
	return p->shutdown_grace_ms;
}

static const struct range_case class_ranges[] = {
	{ "priority", 0, 99 },
	{ "slo_us", 1, 60000000 },
	{ "sm_share", 1, 100 },
	{ "max_sessions", 1, 65536 },
	{ "max_queues", 0, 65536 },
	{ "max_buffers", 0, 1048576 },
	{ "max_modules", 0, 65536 },
	{ "max_inflight", 0, 1048576 },
	{ "wait_spin_us", 0, 100000 },
};

static uint64_t class_field(const struct ooo_class *c, const char *key)
{
	if (!strcmp(key, "priority"))
		return (uint64_t)c->priority;
	if (!strcmp(key, "slo_us"))
		return c->slo_us;
	if (!strcmp(key, "sm_share"))
		return c->sm_share;
	if (!strcmp(key, "max_sessions"))
		return c->limit[OOO_RES_SESSIONS];
	if (!strcmp(key, "max_queues"))
		return c->limit[OOO_RES_QUEUES];
	if (!strcmp(key, "max_buffers"))
		return c->limit[OOO_RES_BUFFERS];
	if (!strcmp(key, "max_modules"))
		return c->limit[OOO_RES_MODULES];
	if (!strcmp(key, "wait_spin_us"))
		return c->wait_spin_us;
	return c->limit[OOO_RES_INFLIGHT];
}

static void test_daemon_ranges(void **state)
{
	char text[256], want[128];
	struct policy *p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(daemon_ranges) / sizeof(daemon_ranges[0]); i++) {
		const struct range_case *r = &daemon_ranges[i];

		snprintf(text, sizeof(text), "[daemon]\n%s = %llu\n", r->key, (unsigned long long)r->lo);
		p = parse_ok(text);
		assert_int_equal(daemon_field(p, r->key), r->lo);
		policy_free(p);
		snprintf(text, sizeof(text), "[daemon]\n%s = %llu\n", r->key, (unsigned long long)r->hi);
		p = parse_ok(text);
		assert_int_equal(daemon_field(p, r->key), r->hi);
		policy_free(p);

		snprintf(want, sizeof(want), "%s must be %llu..%llu, got '%llu'", r->key,
			 (unsigned long long)r->lo, (unsigned long long)r->hi,
			 (unsigned long long)r->hi + 1);
		snprintf(text, sizeof(text), "[daemon]\n%s = %llu\n", r->key,
			 (unsigned long long)r->hi + 1);
		check_err(text, 2, want);
		if (r->lo) {
			snprintf(want, sizeof(want), "%s must be %llu..%llu, got '%llu'", r->key,
				 (unsigned long long)r->lo, (unsigned long long)r->hi,
				 (unsigned long long)r->lo - 1);
			snprintf(text, sizeof(text), "[daemon]\n%s = %llu\n", r->key,
				 (unsigned long long)r->lo - 1);
			check_err(text, 2, want);
		}
	}
}

static void test_class_ranges(void **state)
{
	char text[256], want[128];
	struct policy *p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(class_ranges) / sizeof(class_ranges[0]); i++) {
		const struct range_case *r = &class_ranges[i];

		snprintf(text, sizeof(text), "[class c]\nmatch_uid = 1\n%s = %llu\n", r->key,
			 (unsigned long long)r->lo);
		p = parse_ok(text);
		assert_int_equal(class_field(&p->classes[0], r->key), r->lo);
		policy_free(p);
		snprintf(text, sizeof(text), "[class c]\nmatch_uid = 1\n%s = %llu\n", r->key,
			 (unsigned long long)r->hi);
		p = parse_ok(text);
		assert_int_equal(class_field(&p->classes[0], r->key), r->hi);
		policy_free(p);

		snprintf(want, sizeof(want), "%s must be %llu..%llu, got '%llu'", r->key,
			 (unsigned long long)r->lo, (unsigned long long)r->hi,
			 (unsigned long long)r->hi + 1);
		snprintf(text, sizeof(text), "[class c]\nmatch_uid = 1\n%s = %llu\n", r->key,
			 (unsigned long long)r->hi + 1);
		check_err(text, 3, want);
		if (r->lo) {
			snprintf(want, sizeof(want), "%s must be %llu..%llu, got '%llu'", r->key,
				 (unsigned long long)r->lo, (unsigned long long)r->hi,
				 (unsigned long long)r->lo - 1);
			snprintf(text, sizeof(text), "[class c]\nmatch_uid = 1\n%s = %llu\n", r->key,
				 (unsigned long long)r->lo - 1);
			check_err(text, 3, want);
		}
	}
}

static void test_log_level(void **state)
{
	static const struct {
		const char *name;
		int level;
	} cases[] = {
		{ "err", POLICY_LOG_ERR },
		{ "warn", POLICY_LOG_WARN },
		{ "info", POLICY_LOG_INFO },
		{ "debug", POLICY_LOG_DEBUG },
		{ "DEBUG", POLICY_LOG_DEBUG },
	};
	char text[128];
	struct policy *p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "[daemon]\nlog_level = %s\n", cases[i].name);
		p = parse_ok(text);
		assert_int_equal(p->log_level, cases[i].level);
		policy_free(p);
	}
	check_err("[daemon]\nlog_level = verbose\n", 2,
		  "log_level must be err, warn, info or debug, got 'verbose'");
}

static void test_admin_group(void **state)
{
	struct policy *p;

	(void)state;
	p = parse_ok("[daemon]\nadmin_group = root\n");
	assert_true(p->has_admin_group);
	assert_int_equal(p->admin_gid, 0);
	assert_string_equal(p->admin_group, "root");
	policy_free(p);
	p = parse_ok("[daemon]\nadmin_group = 4242\n");
	assert_true(p->has_admin_group);
	assert_int_equal(p->admin_gid, 4242);
	assert_string_equal(p->admin_group, "4242");
	policy_free(p);

	check_err("[daemon]\nadmin_group = " NO_SUCH_NAME "\n", 2, "unknown group '" NO_SUCH_NAME "'");
	check_err("[daemon]\nadmin_group = 4294967295\n", 2,
		  "admin_group gid must be 0..4294967294, got '4294967295'");
	check_err("[daemon]\nadmin_group = 99999999999999999999999\n", 2,
		  "admin_group gid must be 0..4294967294");
	check_err("[daemon]\nadmin_group = "
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		  2, "is too long (max 63 characters)");
}

static void test_admit(void **state)
{
	static const struct {
		const char *v;
		bool admit;
	} cases[] = {
		{ "yes", true }, { "no", false }, { "true", true }, { "false", false },
		{ "1", true },   { "0", false },  { "YES", true },  { "No", false },
	};
	char text[128];
	struct policy *p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "[class c]\nmatch_uid = 5\nadmit = %s\n", cases[i].v);
		p = parse_ok(text);
		assert_int_equal(p->classes[0].admit, cases[i].admit);
		assert_ptr_equal(policy_match(p, 5, 5, NULL, 0), cases[i].admit ? &p->classes[0] : NULL);
		policy_free(p);
	}
	check_err("[class c]\nmatch_uid = 5\nadmit = maybe\n", 3, "admit must be yes or no, got 'maybe'");
}

static void test_match_lists(void **state)
{
	struct policy *p;
	const struct ooo_class *c;

	(void)state;
	/* commas and/or blanks; match_uid and match_user both add to uids */
	p = parse_ok("[class c]\nmatch_uid = 1,2 3 ,\t4,,5\nmatch_user = root, root\n"
		     "match_gid = 4294967294\nmatch_group = root\n");
	c = &p->classes[0];
	assert_int_equal(c->nuids, 7);
	assert_int_equal(c->uids[4], 5);
	assert_int_equal(c->uids[5], 0);
	assert_int_equal(c->ngids, 2);
	assert_int_equal(c->gids[0], 4294967294u);
	assert_int_equal(c->gids[1], 0);
	policy_free(p);

	/* indented lines continue a list (inih multiline values) */
	p = parse_ok("[class c]\nmatch_uid = 1, 2,\n    3 4\n# a comment\n\t5\n"
		     "priority = 7\n");
	c = &p->classes[0];
	assert_int_equal(c->nuids, 5);
	assert_int_equal(c->uids[2], 3);
	assert_int_equal(c->uids[4], 5);
	assert_int_equal(c->priority, 7);
	policy_free(p);
	p = parse_ok("[class c]\nmatch_user = root\n root ; comment\n");
	assert_int_equal(p->classes[0].nuids, 2);
	policy_free(p);

	/* indentation right after a header is not a continuation */
	p = parse_ok("[class c]\n   match_gid = 9\n");
	assert_int_equal(p->classes[0].gids[0], 9);
	policy_free(p);

	/* exactly POLICY_MAX_MATCH ids */
	{
		size_t cap = 16384, n = 0, i;
		char *t = malloc(cap);

		assert_non_null(t);
		n += (size_t)snprintf(t + n, cap - n, "[class big]\nmatch_uid = 0\n");
		for (i = 1; i < POLICY_MAX_MATCH; i++)
			n += (size_t)snprintf(t + n, cap - n, "%s%zu", i % 20 == 1 ? "\n  " : " ", i);
		n += (size_t)snprintf(t + n, cap - n, "\nmatch_gid = 1\n");
		assert_true(n < cap);
		p = parse_ok(t);
		assert_int_equal(p->classes[0].nuids, POLICY_MAX_MATCH);
		assert_int_equal(p->classes[0].uids[POLICY_MAX_MATCH - 1], POLICY_MAX_MATCH - 1);
		assert_ptr_equal(policy_match(p, POLICY_MAX_MATCH - 1, 99, NULL, 0), &p->classes[0]);
		policy_free(p);
		free(t);
	}
}

static void test_sizes(void **state)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "0", 0 },
		{ "123", 123 },
		{ "123B", 123 },
		{ "64K", 64ull << 10 },
		{ "64k", 64ull << 10 },
		{ "16M", 16ull << 20 },
		{ "2G", 2ull << 30 },
		{ "1T", 1ull << 40 },
		{ "16GB", 16ull << 30 },
		{ "16GiB", 16ull << 30 },
		{ "512MiB", 512ull << 20 },
		{ "007K", 7ull << 10 },
		{ "16777215T", 16777215ull << 40 },
		{ "18446744073709551615", UINT64_MAX },
	};
	static const char *const bad[] = {
		"", "K", "-1", "+1", " 1", "1 ", "1P", "1.5G", "16 G", "16Gi", "16GiBx", "16iB",
		"16Gib", "0x10", "1KK", "1BB",
	};
	struct policy *p;
	uint64_t v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 1;
		if (policy_parse_size(ok[i].s, &v))
			print_message("'%s' rejected\n", ok[i].s);
		assert_int_equal(policy_parse_size(ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (policy_parse_size(bad[i], &v) != -EINVAL)
			print_message("'%s' accepted\n", bad[i]);
		assert_int_equal(policy_parse_size(bad[i], &v), -EINVAL);
	}
	assert_int_equal(policy_parse_size("16777216T", &v), -ERANGE);
	assert_int_equal(policy_parse_size("18446744073709551616", &v), -ERANGE);
	assert_int_equal(policy_parse_size(NULL, &v), -EINVAL);

	p = parse_ok("[class c]\nmatch_uid = 1\nmem_limit = 1\n");
	assert_int_equal(p->classes[0].limit[OOO_RES_MEM_BYTES], 1);
	policy_free(p);
	p = parse_ok("[class c]\nmatch_uid = 1\nmem_limit = 1024TiB\n");
	assert_int_equal(p->classes[0].limit[OOO_RES_MEM_BYTES], 1ull << 50);
	policy_free(p);
	check_err("[class c]\nmatch_uid = 1\nmem_limit = 0\n", 3, "mem_limit must be 1 byte..1 PiB, got '0'");
	check_err("[class c]\nmatch_uid = 1\nmem_limit = 1025T\n", 3, "mem_limit must be 1 byte..1 PiB");
	check_err("[class c]\nmatch_uid = 1\nmem_limit = 99999999999999999999\n", 3,
		  "mem_limit must be 1 byte..1 PiB");
	check_err("[class c]\nmatch_uid = 1\nmem_limit = 16X\n", 3,
		  "mem_limit must be a size such as 512M or 16G, got '16X'");
}

/* Syntax that is accepted: ':' separator, inline ';' comments, CRLF, BOM,
 * padded headers, text without a final newline or NUL. */
static void test_syntax_variants(void **state)
{
	static const char tail[] = "[daemon]\r\nmax_sessions = 12"
				   "34"; /* the last two bytes are not passed */
	struct policy_error err = { 0 };
	struct policy *p = NULL;
	char name63[OOO_NAME_MAX], text[256];

	(void)state;
	p = parse_ok("\xEF\xBB\xBF[ daemon ]  ; comment\r\nmax_sessions: 7 ; seven\r\n"
		     "log_level=warn\r\n[class  x.y-Z_9] # comment\nmatch_uid = 3 ;c\n");
	assert_int_equal(p->max_sessions, 7);
	assert_int_equal(p->log_level, POLICY_LOG_WARN);
	assert_string_equal(p->classes[0].name, "x.y-Z_9");
	policy_free(p);

	assert_int_equal(policy_parse(tail, sizeof(tail) - 3, "t", &p, &err), 0);
	assert_int_equal(p->max_sessions, 12);
	policy_free(p);

	/* class names longer than inih's 49-byte section buffer are kept whole */
	memset(name63, 'n', sizeof(name63) - 1);
	name63[sizeof(name63) - 1] = '\0';
	snprintf(text, sizeof(text), "[class %s]\nmatch_uid = 1\n[class %.62sm]\nmatch_uid = 2\n",
		 name63, name63);
	p = parse_ok(text);
	assert_int_equal(p->nclasses, 2);
	assert_string_equal(p->classes[0].name, name63);
	assert_int_equal(strlen(p->classes[1].name), 63);
	assert_ptr_equal(policy_find_class(p, name63), &p->classes[0]);
	policy_free(p);

	/* the source is truncated safely */
	{
		char src[OOO_PATH_MAX + 50];

		memset(src, 's', sizeof(src) - 1);
		src[sizeof(src) - 1] = '\0';
		assert_int_equal(policy_parse("", 0, src, &p, &err), 0);
		assert_int_equal(strlen(p->source), OOO_PATH_MAX - 1);
		policy_free(p);
	}
}

/* ---- errors ------------------------------------------------------------- */

static void test_err_sections(void **state)
{
	(void)state;
	check_err("[daemon]\n\n[users]\n", 3, "unknown section [users]");
	check_err("[classes]\n", 1, "unknown section [classes]");
	check_err("[]\n", 1, "unknown section []");
	check_err("[Daemon]\n", 1, "unknown section [Daemon]");
	check_err("[class]\nmatch_uid = 1\n", 1, "missing class name in [class NAME]");
	check_err("[class  ]\n", 1, "missing class name");
	check_err("[class a b]\n", 1, "bad class name 'a b'");
	check_err("[class a/b]\n", 1, "bad class name 'a/b': use 1..63 of A-Z a-z 0-9 _ . -");
	check_err("[class aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n", 1,
		  "bad class name");
	check_err("[class a]\nmatch_uid = 1\n\n[class b]\nmatch_uid = 2\n[class a]\n", 6,
		  "duplicate class 'a' (first on line 1)");
	check_err("[daemon]\n[class a]\nmatch_uid = 1\n[daemon]\n", 4,
		  "duplicate section [daemon] (first on line 1)");
	check_err("[daemon\nmax_sessions = 1\n", 1, "missing ']' in section header");
	check_err("[daemon ;]\n", 1, "missing ']'");
	check_err("[daemon] max_sessions = 5\n", 1, "unexpected text after [daemon]");
	check_err("max_sessions = 5\n[daemon]\n", 1,
		  "key 'max_sessions' before any [daemon], [telemetry], [mps], [metrics] or [class NAME] section");
}

static void test_err_class_no_match(void **state)
{
	(void)state;
	check_err("[class a]\npriority = 5\n[class b]\nmatch_uid = 1\n", 1,
		  "class 'a' has no match_uid, match_gid, match_user, match_group or match_cgroup");
	/* at the end of the text too */
	check_err("[class a]\nmatch_uid = 1\n\n[class empty]\n# nothing\n", 4, "class 'empty' has no match_uid");
}

/* match_cgroup and tenant_by: parsing, the semantics with the id keys, and every error */
static void test_cgroup_keys(void **state)
{
	const char *pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod11_22.slice/cri-x.scope";
	const char *text = "[class pods]\n"
			   "match_cgroup = /kubepods.slice/*, /kubepods/*\n"
			   "  /system.slice/inference.service\n"
			   "tenant_by = pod\n"
			   "max_sessions = 1\n"
			   "[class pods-of-1000]\n"
			   "match_cgroup = /other.slice/*\n"
			   "match_uid = 1000\n"
			   "match_group = root\n"
			   "tenant_by = cgroup\n"
			   "[class rest]\n"
			   "match_uid = *\n";
	struct policy *p = parse_ok(text);
	const struct ooo_class *pods = &p->classes[0], *p1000 = &p->classes[1], *rest = &p->classes[2];
	gid_t g0 = 0;

	(void)state;
	assert_int_equal(pods->ncgroups, 3);
	assert_string_equal(pods->cgroups[0], "/kubepods.slice/*");
	assert_string_equal(pods->cgroups[2], "/system.slice/inference.service");
	assert_int_equal(pods->tenant_by, CGROUP_BY_POD);
	assert_int_equal(p1000->tenant_by, CGROUP_BY_CGROUP);
	assert_int_equal(rest->tenant_by, CGROUP_BY_UID);
	assert_true(policy_uses_cgroups(p));
	/* only match_cgroup: any uid in those cgroups; '*' spans levels; a pattern is the whole path */
	assert_ptr_equal(policy_match_cgroup(p, 5, 5, NULL, 0, pod), pods);
	assert_ptr_equal(policy_match_cgroup(p, 0, 0, NULL, 0, "/kubepods/burstable/podab/c"), pods);
	assert_ptr_equal(policy_match_cgroup(p, 5, 5, NULL, 0, "/system.slice/inference.service"), pods);
	assert_ptr_equal(policy_match_cgroup(p, 5, 5, NULL, 0, "/system.slice/inference.service/x"), rest);
	assert_ptr_equal(policy_match_cgroup(p, 5, 5, NULL, 0, "/kubepods.slice"), rest);
	assert_ptr_equal(policy_match_cgroup(p, 5, 5, NULL, 0, "/user.slice/kubepods.slice/x"), rest);
	/* an unknown cgroup matches no pattern */
	assert_ptr_equal(policy_match_cgroup(p, 5, 5, NULL, 0, NULL), rest);
	assert_ptr_equal(policy_match_cgroup(p, 5, 5, NULL, 0, ""), rest);
	assert_ptr_equal(policy_match(p, 5, 5, NULL, 0), rest);
	assert_false(policy_class_matches(pods, 5, 5, NULL, 0));
	assert_true(policy_class_matches_cgroup(pods, 5, 5, NULL, 0, pod));
	/* match_cgroup and id keys: the cgroup, and one of the ids */
	assert_ptr_equal(policy_match_cgroup(p, 1000, 7, NULL, 0, "/other.slice/a"), p1000);
	assert_ptr_equal(policy_match_cgroup(p, 7, 7, &g0, 1, "/other.slice/a"), p1000);
	assert_ptr_equal(policy_match_cgroup(p, 7, 7, NULL, 0, "/other.slice/a"), rest);
	assert_ptr_equal(policy_match_cgroup(p, 1000, 7, NULL, 0, "/user.slice/a"), rest);
	policy_free(p);

	/* match_cgroup with match_uid = *: any uid, in those cgroups */
	p = parse_ok("[class a]\nmatch_uid = *\nmatch_cgroup = /k/*\n");
	assert_ptr_equal(policy_match_cgroup(p, 9, 9, NULL, 0, "/k/x"), &p->classes[0]);
	assert_null(policy_match_cgroup(p, 9, 9, NULL, 0, "/j/x"));
	policy_free(p);
	/* no cgroup key: policy_uses_cgroups says so */
	p = parse_ok("[class a]\nmatch_uid = *\ntenant_by = uid\n");
	assert_false(policy_uses_cgroups(p));
	policy_free(p);
	assert_false(policy_uses_cgroups(NULL));

	check_err("[class a]\nmatch_cgroup = kubepods.slice/*\n", 2,
		  "match_cgroup: 'kubepods.slice/*' must start with '/': a cgroup v2 path from the root");
	check_err("[class a]\nmatch_cgroup = *\n", 2, "'/*' matches every cgroup");
	check_err("[class a]\nmatch_cgroup = /a\x01b\n", 2, "match_cgroup: control character");
	check_err("[class a]\nmatch_cgroup =\n", 2, "missing value for match_cgroup");
	check_err("[class a]\nmatch_cgroup = /a\nmatch_cgroup = /b\n", 3, "duplicate key 'match_cgroup' in [class a]");
	check_err("[class a]\nmatch_uid = 1\ntenant_by = pods\n", 3, "tenant_by must be uid, pod or cgroup, got 'pods'");
	check_err("[class a]\nmatch_uid = 1\ntenant_by = pod\npriority = 3\n", 3,
		  "tenant_by = pod in class 'a' needs match_cgroup");
	check_err("[class a]\ntenant_by = cgroup\nmatch_uid = 1\n[class b]\nmatch_uid = 2\n", 2,
		  "tenant_by = cgroup in class 'a' needs match_cgroup");
	check_err("[class a]\ntenant_by = cgroup\n", 1, "class 'a' has no match_uid, match_gid, match_user, match_group or match_cgroup");
	{
		char big[POLICY_MAX_LINE * 80], *w = big;

		w += sprintf(w, "[class a]\nmatch_cgroup = /0\n");
		for (int i = 1; i <= POLICY_MAX_CGROUPS; i++)
			w += sprintf(w, "  /%d\n", i);
		check_err(big, 2 + POLICY_MAX_CGROUPS, "too many match_cgroup patterns in [class a] (max 64)");
	}
}

static void test_err_keys(void **state)
{
	(void)state;
	check_err("[daemon]\nmax_session = 5\n", 2, "unknown key 'max_session' in [daemon]");
	check_err("[class gpu]\nmatch_uid = 1\nslo = 5\n", 3, "unknown key 'slo' in [class gpu]");
	/* a [class] key in [daemon] and the other way round */
	check_err("[daemon]\npriority = 5\n", 2, "unknown key 'priority' in [daemon]");
	check_err("[class c]\nlog_level = info\n", 2, "unknown key 'log_level' in [class c]");
	check_err("[daemon]\nmax_sessions = 5\nmax_sessions = 6\n", 3,
		  "duplicate key 'max_sessions' in [daemon]");
	check_err("[class y]\nmatch_uid = 1\nmatch_uid = 2\n", 3, "duplicate key 'match_uid' in [class y]");
	check_err("[class y]\nmatch_uid = 1\n\npriority = 1\npriority = 1\n", 5,
		  "duplicate key 'priority' in [class y]");
	check_err("[daemon]\n= 5\n", 2, "missing key name before '='");
	check_err("[daemon]\nmax_sessions =\n", 2, "missing value for max_sessions");
	check_err("[class c]\nmatch_uid = ,\n", 2, "missing value for match_uid");
	check_err("[class c]\nmatch_uid = 1\nmatch_user = ; just a comment\n", 3,
		  "missing value for match_user");
}

static void test_err_numbers(void **state)
{
	(void)state;
	check_err("[class c]\nmatch_uid = 1\npriority = 120\n", 3, "priority must be 0..99, got '120'");
	check_err("[class c]\nmatch_uid = 1\npriority = 99999999999999999999999\n", 3,
		  "priority must be 0..99, got '99999999999999999999999'");
	check_err("[class c]\nmatch_uid = 1\npriority = high\n", 3, "priority must be a number, got 'high'");
	check_err("[class c]\nmatch_uid = 1\npriority = -1\n", 3, "priority must be a number, got '-1'");
	check_err("[class c]\nmatch_uid = 1\npriority = +1\n", 3, "priority must be a number, got '+1'");
	check_err("[class c]\nmatch_uid = 1\npriority = 5x\n", 3, "priority: trailing junk after the number in '5x'");
	check_err("[class c]\nmatch_uid = 1\npriority = 5 5\n", 3, "trailing junk");
	check_err("[class c]\nmatch_uid = 1\npriority = 0x10\n", 3, "trailing junk");
	check_err("[daemon]\nhello_timeout_ms = 500 # ms\n", 2,
		  "trailing junk after the number in '500 # ms' (inline comments start with ';')");
	check_err("[daemon]\nhello_timeout_ms = 5e3\n", 2, "hello_timeout_ms: trailing junk");
	/* control characters from the file do not reach the message */
	check_err("[daemon]\nmax_sessions = 1\x1b[2J\n", 2, "trailing junk after the number in '1?[2J'");
	check_err("[daemon]\nmax_sessions = 1\r\n\r\nlog_level = a\rb\r\n", 4, "got 'a?b'");
}

static void test_err_match(void **state)
{
	(void)state;
	check_err("[class c]\nmatch_uid = 1, alice\n", 2,
		  "match_uid: 'alice' is not a number (names go in match_user)");
	check_err("[class c]\nmatch_gid = 1 2x\n", 2, "match_gid: '2x' is not a number (names go in match_group)");
	check_err("[class c]\nmatch_uid = -1\n", 2, "match_uid: '-1' is not a number");
	check_err("[class c]\nmatch_uid = 4294967295\n", 2,
		  "match_uid ids must be 0..4294967294, got '4294967295'");
	check_err("[class c]\nmatch_gid = 99999999999999999999999\n", 2, "match_gid ids must be 0..4294967294");
	check_err("[class c]\nmatch_uid = *, 5\n", 2, "match_uid: '*' cannot be combined with other ids");
	check_err("[class c]\nmatch_uid = 5 *\n", 2, "match_uid: '*' cannot be combined with other ids");
	check_err("[class c]\nmatch_gid = *\n  7\n", 3, "match_gid: '*' cannot be combined");
	check_err("[class c]\nmatch_uid = 1\nmatch_user = root " NO_SUCH_NAME "\n", 3,
		  "unknown user '" NO_SUCH_NAME "'");
	check_err("[class c]\nmatch_group = " NO_SUCH_NAME "\n", 2, "unknown group '" NO_SUCH_NAME "'");
	check_err("[class c]\nmatch_user = *\n", 2, "unknown user '*'");
	check_err("[class c]\nmatch_user = 4000000\n", 2, "unknown user '4000000' (numeric uids go in match_uid)");
	check_err("[class c]\nmatch_group = 4000000\n", 2, "unknown group '4000000' (numeric gids go in match_gid)");
}

static void test_err_continuation(void **state)
{
	(void)state;
	check_err("[class c]\nmatch_uid = 1\npriority = 5\n  6\n", 4,
		  "indented line continues priority, which takes one value (remove the indentation)");
	check_err("[class c]\nmatch_uid = 1\n  priority = 5\n", 3,
		  "indented line continues the match_uid list but looks like a key or section");
	check_err("[class c]\nmatch_uid = 1\n\n  [class d]\n", 4,
		  "indented line continues the match_uid list but looks like a key or section");
	check_err("[class c]\nmatch_user = root\n  x: y\n", 3, "looks like a key or section");
}

static void test_err_too_many(void **state)
{
	size_t cap = 32768, n = 0, i;
	char *t = malloc(cap);

	(void)state;
	assert_non_null(t);
	n += (size_t)snprintf(t + n, cap - n, "[class big]\nmatch_gid = 0");
	for (i = 1; i <= POLICY_MAX_MATCH; i++)
		n += (size_t)snprintf(t + n, cap - n, "%s%zu", i % 20 == 0 ? "\n  " : ",", i);
	snprintf(t + n, cap - n, "\n");
	/* gid 1024 is the 1025th, on line 2 + 1024 / 20 */
	check_err(t, 2 + POLICY_MAX_MATCH / 20, "too many gids in [class big] (max 1024)");

	n = 0;
	for (i = 0; i <= POLICY_MAX_CLASSES; i++)
		n += (size_t)snprintf(t + n, cap - n, "[class c%zu]\nmatch_uid = %zu\n", i, i);
	assert_true(n < cap);
	check_err(t, 2 * POLICY_MAX_CLASSES + 1, "too many classes (max 256)");
	/* 256 classes are fine */
	t[n - strlen("[class c256]\nmatch_uid = 256\n")] = '\0';
	{
		struct policy *p = parse_ok(t);

		assert_int_equal(p->nclasses, POLICY_MAX_CLASSES);
		assert_string_equal(p->classes[255].name, "c255");
		assert_ptr_equal(policy_match(p, 200, 9999, NULL, 0), &p->classes[200]);
		policy_free(p);
	}
	free(t);
}

static void test_err_lines(void **state)
{
	static const char nul_text[] = "[daemon]\nmax_sessions = 1\0\nlog_level = info\n";
	char text[512];
	struct policy *p;

	(void)state;
	/* POLICY_MAX_LINE characters are fine, one more is not */
	snprintf(text, sizeof(text), "[daemon]\n# %0*d\nmax_sessions = 1\n", POLICY_MAX_LINE - 2, 0);
	p = parse_ok(text);
	policy_free(p);
	snprintf(text, sizeof(text), "[daemon]\n# %0*d\nmax_sessions = 1\n", POLICY_MAX_LINE - 1, 0);
	check_err(text, 2, "line too long (max 190 characters)");
	/* also without a final newline, and where inih would split the line */
	snprintf(text, sizeof(text), "[daemon]\nmax_sessions = 1\n#%0*d", 300, 0);
	check_err(text, 3, "line too long");

	check_err_len(nul_text, sizeof(nul_text) - 1, -EINVAL, 2, "line contains a NUL byte");
	check_err_len("\0", 1, -EINVAL, 1, "NUL byte");

	check_err("[daemon]\nmax_sessions\n", 2, "syntax error: expected 'key = value' or '[section]'");
	check_err("[class c]\nmatch_uid = 1\njust words\n", 3, "syntax error");
	check_err("[daemon]\nlog_level ; = info\n", 2, "syntax error");
	/* the last line, without a newline */
	check_err("[daemon]\nmax_sessions = 1\noops", 3, "syntax error");
}

static void test_err_first_only(void **state)
{
	char text[512];

	(void)state;
	check_err("[daemon]\nbogus\nmax_sessions = 0\n[nope]\n", 2, "syntax error");
	check_err("[daemon]\nmax_sessions = 0\nbogus\n[nope]\n", 2, "max_sessions must be 1..65536");
	snprintf(text, sizeof(text), "[daemon]\n[nope]\n#%0300d\n", 0);
	check_err(text, 2, "unknown section [nope]");
}

static void test_err_args(void **state)
{
	struct policy_error err = { 0 };
	struct policy *p = NULL;
	char *big;

	(void)state;
	assert_int_equal(policy_parse("", 0, "x", NULL, &err), -EINVAL);
	assert_int_equal(policy_parse(NULL, 3, "x", &p, &err), -EINVAL);
	assert_null(p);
	/* err may be NULL */
	assert_int_equal(policy_parse("[x]", 3, "x", &p, NULL), -EINVAL);
	assert_null(p);

	big = calloc(1, POLICY_MAX_FILE + 1);
	assert_non_null(big);
	memset(big, '\n', POLICY_MAX_FILE + 1);
	check_err_len(big, POLICY_MAX_FILE + 1, -E2BIG, 0, "too big");
	assert_int_equal(policy_parse(big, POLICY_MAX_FILE, "x", &p, &err), 0);
	policy_free(p);
	free(big);
}

/* ---- files -------------------------------------------------------------- */

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_executor_keys(void **state)
{
	struct policy *p = parse_ok("[daemon]\nexecutor = no\nexecutor_uids = 70000-70015\n"
				    "libcuda = /usr/local/nvidia/lib64/libcuda.so.1\n");

	assert_false(p->executor);
	assert_int_equal(p->exec_uid_lo, 70000);
	assert_int_equal(p->exec_uid_n, 16);
	assert_true(policy_exec_uid(p, 70000));
	assert_true(policy_exec_uid(p, 70015));
	assert_false(policy_exec_uid(p, 69999));
	assert_false(policy_exec_uid(p, 70016));
	assert_false(policy_exec_uid(p, 0));
	assert_string_equal(p->warning, "");
	assert_string_equal(p->libcuda, "/usr/local/nvidia/lib64/libcuda.so.1");
	policy_free(p);
	p = parse_ok("");
	assert_true(p->executor);
	assert_int_equal(p->exec_uid_lo, POLICY_EXEC_UID_LO);
	assert_int_equal(p->exec_uid_n, POLICY_EXEC_UIDS_MAX);
	assert_false(policy_exec_uid(p, 65534)); /* nobody is a tenant like any other */
	assert_string_equal(p->libcuda, "libcuda.so.1");
	policy_free(p);
	/* the key executors once dropped root to: accepted (an old oood.conf still loads), ignored, said */
	p = parse_ok("[daemon]\nexecutor_user = nobody\n");
	assert_non_null(strstr(p->warning, "line 2: executor_user is no longer used"));
	assert_int_equal(p->exec_uid_lo, POLICY_EXEC_UID_LO);
	policy_free(p);
	check_err("[daemon]\nexecutor_uids = 70000\n", 2, "executor_uids must be FIRST-LAST");
	check_err("[daemon]\nexecutor_uids = 70000-\n", 2, "executor_uids must be FIRST-LAST");
	check_err("[daemon]\nexecutor_uids = -5\n", 2, "executor_uids must be FIRST-LAST");
	check_err("[daemon]\nexecutor_uids = 0-255\n", 2, "must be 1..256 uids above 0");
	check_err("[daemon]\nexecutor_uids = 70010-70000\n", 2, "must be 1..256 uids above 0");
	check_err("[daemon]\nexecutor_uids = 70000-70256\n", 2, "must be 1..256 uids above 0");
	check_err("[daemon]\nexecutor_uids = 4294967040-4294967295\n", 2, "must be 1..256 uids above 0");
	check_err("[daemon]\nexecutor_uids = 65500-65600\n", 2, "must not take in 65534");
	check_err("[daemon]\nlibcuda = lib/libcuda.so\n", 2, "library name or an absolute path");
	check_err("[daemon]\nexecutor = maybe\n", 2, "executor must be yes or no");
	check_err("[daemon]\nchain_launches = maybe\n", 2, "chain_launches must be yes or no");
	p = parse_ok("[daemon]\nchain_launches = no\n");
	assert_false(p->chain_launches);
	policy_free(p);
	check_err("[daemon]\nspread_lanes = 4\n", 2, "spread_lanes must be yes or no");
	p = parse_ok("[daemon]\nspread_lanes = yes\n");
	assert_true(p->spread_lanes);
	policy_free(p);
}

static void test_telemetry_keys(void **state)
{
	struct policy *p = parse_ok("");

	assert_true(p->telemetry.enabled);
	assert_false(p->telemetry.all_processes);
	assert_int_equal(p->telemetry.launch_probes, POLICY_LAUNCH_TRACKED);
	assert_string_equal(p->telemetry.libcuda, "");
	assert_int_equal(p->telemetry.slow_sync_us, 10000);
	assert_int_equal(p->telemetry.max_processes, 4096);
	assert_int_equal(p->telemetry.max_tracked, 1024);
	assert_int_equal(p->telemetry.ringbuf_kb, 256);
	policy_free(p);
	p = parse_ok("[telemetry]\nenabled = no\nall_processes = yes\nlaunch_probes = all\n"
		     "libcuda = /opt/cuda/libcuda.so.1\nslow_sync_us = 500\nmax_processes = 100\n"
		     "max_tracked = 7\nringbuf_kb = 64\n[class a]\nmatch_uid = 1\ntrace_launches = yes\n");
	assert_false(p->telemetry.enabled);
	assert_true(p->telemetry.all_processes);
	assert_int_equal(p->telemetry.launch_probes, POLICY_LAUNCH_ALL);
	assert_string_equal(p->telemetry.libcuda, "/opt/cuda/libcuda.so.1");
	assert_int_equal(p->telemetry.slow_sync_us, 500);
	assert_int_equal(p->telemetry.max_processes, 100);
	assert_int_equal(p->telemetry.max_tracked, 7);
	assert_int_equal(p->telemetry.ringbuf_kb, 64);
	assert_int_equal(p->nclasses, 1);
	assert_true(p->classes[0].trace_launches);
	policy_free(p);
	p = parse_ok("[telemetry]\nlaunch_probes = off\n[class a]\nmatch_uid = 1\n");
	assert_int_equal(p->telemetry.launch_probes, POLICY_LAUNCH_OFF);
	assert_false(p->classes[0].trace_launches);
	policy_free(p);
	check_err("[telemetry]\nlaunch_probes = some\n", 2, "launch_probes must be tracked, all or off");
	check_err("[telemetry]\nlibcuda = libcuda.so.1\n", 2, "libcuda must be an absolute path");
	check_err("[telemetry]\nslow_sync_us = 0\n", 2, "slow_sync_us must be 1..60000000");
	check_err("[telemetry]\nmax_processes = 15\n", 2, "max_processes must be 16..1048576");
	check_err("[telemetry]\nringbuf_kb = 3\n", 2, "ringbuf_kb must be 4..65536");
	check_err("[telemetry]\nenabled = 2\n", 2, "enabled must be yes or no");
	check_err("[telemetry]\npriority = 2\n", 2, "unknown key 'priority' in [telemetry]");
	check_err("[telemetry]\n[telemetry]\n", 2, "duplicate section [telemetry] (first on line 1)");
	check_err("[daemon]\nslow_sync_us = 5\n", 2, "unknown key 'slow_sync_us' in [daemon]");
	check_err("[class a]\nmatch_uid = 1\ntrace_launches = sometimes\n", 3, "trace_launches must be yes or no");
}

static void test_binary_modules_key(void **state)
{
	struct policy *p = parse_ok("[class a]\nmatch_uid = 1\n[class b]\nmatch_uid = 2\nbinary_modules = no\n"
				    "[class c]\nmatch_uid = 3\nbinary_modules = yes\n");

	(void)state;
	assert_int_equal(p->nclasses, 3);
	assert_true(p->classes[0].binary_modules); /* default yes */
	assert_false(p->classes[1].binary_modules);
	assert_true(p->classes[2].binary_modules);
	policy_free(p);
	check_err("[class a]\nmatch_uid = 1\nbinary_modules = ptx\n", 3, "binary_modules must be yes or no");
	check_err("[daemon]\nbinary_modules = no\n", 2, "unknown key 'binary_modules' in [daemon]");
}

static void test_domain_keys(void **state)
{
	struct policy *p = parse_ok("[daemon]\nmax_domains = 3\ndomain_idle_ms = 0\n"
				    "[class a]\nmatch_uid = 1\ndomain = model-7.replicas_x\n"
				    "[class b]\nmatch_uid = 2\ndomain = uid\n[class c]\nmatch_uid = 3\n");

	(void)state;
	assert_int_equal(p->max_domains, 3);
	assert_int_equal(p->domain_idle_ms, 0);
	assert_string_equal(p->classes[0].domain, "model-7.replicas_x");
	assert_string_equal(p->classes[1].domain, ""); /* "uid": one per uid, as by default */
	assert_string_equal(p->classes[2].domain, "");
	policy_free(p);
	p = parse_ok("[class a]\nmatch_uid = 1\n");
	assert_int_equal(p->max_domains, 16);
	assert_int_equal(p->domain_idle_ms, 60000);
	policy_free(p);
	check_err("[class a]\nmatch_uid = 1\ndomain = uid:5\n", 3, "domain must be 'uid' or a name");
	check_err("[class a]\nmatch_uid = 1\ndomain = a/b\n", 3, "domain must be 'uid' or a name");
	check_err("[class a]\nmatch_uid = 1\ndomain = 0123456789012345678901234567890123\n", 3,
		  "domain must be 1..31 characters");
	check_err("[daemon]\ndomain = x\n", 2, "unknown key 'domain' in [daemon]");
	check_err("[daemon]\nmax_domains = 0\n", 2, "max_domains");
	check_err("[daemon]\nmax_domains = 65\n", 2, "max_domains");
	check_err("[daemon]\ndomain_idle_ms = 86400001\n", 2, "domain_idle_ms");
	check_err("[class a]\nmatch_uid = 1\nmax_domains = 2\n", 3, "unknown key 'max_domains' in [class a]");
	p = parse_ok("[class a]\nmatch_uid = 1\nfence = yes\n[class b]\nmatch_uid = 2\n");
	assert_true(p->classes[0].fence);
	assert_false(p->classes[1].fence); /* default no */
	policy_free(p);
	check_err("[class a]\nmatch_uid = 1\nfence = maybe\n", 3, "fence must be yes or no");
	check_err("[daemon]\nfence = yes\n", 2, "unknown key 'fence' in [daemon]");
}

static void test_partition_key(void **state)
{
	char text[2048];
	size_t at = 0;
	struct policy *p = parse_ok("[class a]\nmatch_uid = 1\nsm_share = 30\npartition = yes\n"
				    "[class b]\nmatch_uid = 2\nsm_share = 60\npartition = yes\n[class c]\nmatch_uid = 3\n");

	(void)state;
	assert_true(p->classes[0].partition);
	assert_true(p->classes[1].partition);
	assert_false(p->classes[2].partition); /* default no */
	policy_free(p);
	check_err("[class a]\nmatch_uid = 1\npartition = 50\n", 3, "partition must be yes or no");
	check_err("[daemon]\npartition = yes\n", 2, "unknown key 'partition' in [daemon]");
	/* the shared partition must keep SMs: the reserved shares add up to less than 100 */
	check_err("[class a]\nmatch_uid = 1\nsm_share = 50\npartition = yes\n[class b]\nmatch_uid = 2\n"
		  "sm_share = 50\npartition = yes\n",
		  0, "reserve 100% of each GPU's SMs");
	/* a share of 100 (the default) with partition = yes leaves nothing either */
	check_err("[class a]\nmatch_uid = 1\npartition = yes\n", 0, "reserve 100%");
	/* at most POLICY_MAX_PARTITIONS classes */
	for (int i = 0; i <= POLICY_MAX_PARTITIONS; i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at,
				       "[class c%d]\nmatch_uid = %d\nsm_share = 1\npartition = yes\n", i, i + 1);
	check_err(text, 0, "at most 7 may");
	at = 0;
	for (int i = 0; i < POLICY_MAX_PARTITIONS; i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at,
				       "[class c%d]\nmatch_uid = %d\nsm_share = 10\npartition = yes\n", i, i + 1);
	p = parse_ok(text);
	assert_int_equal(p->nclasses, POLICY_MAX_PARTITIONS);
	policy_free(p);
}

static void test_mps_keys(void **state)
{
	struct policy *p = parse_ok("[class a]\nmatch_uid = 1\n");

	(void)state;
	assert_int_equal(p->mps.enabled, POLICY_MPS_AUTO);
	assert_string_equal(p->mps.control, "");
	assert_true(p->mps.multiuser);
	assert_true(p->mps.executor_client);
	assert_int_equal(p->mps.max_clients, 48);
	assert_int_equal(p->mps.executor_reserve, 0);
	assert_int_equal(p->mps.evict_grace_ms, 5000);
	assert_int_equal(p->mps.stop_grace_ms, 10000);
	assert_int_equal(p->mps.devices, 0);
	assert_true(p->mps.feedback);
	assert_int_equal(p->mps.feedback_step, 10);
	assert_int_equal(p->classes[0].native_sm, 25);
	assert_int_equal(p->classes[0].native_mem, 0);
	assert_int_equal(p->classes[0].native_priority, OOO_LEASE_PRIO_NORMAL);
	assert_int_equal(p->classes[0].max_leases, 16);
	assert_int_equal(p->classes[0].wait_spin_us, 1000);
	policy_free(p);
	p = parse_ok("[mps]\nenabled = yes\ncontrol = /opt/nv/nvidia-cuda-mps-control\nmultiuser = no\n"
		     "executor_client = no\nmax_clients = 60\nexecutor_reserve = 20\nevict_grace_ms = 0\n"
		     "stop_grace_ms = 100\ndevices = 2\nfeedback = no\nfeedback_step = 5\n"
		     "[class a]\nmatch_uid = 1\nnative_sm = 40\nnative_mem = 2G\nnative_priority = below\n"
		     "max_leases = 0\nwait_spin_us = 0\n");
	assert_int_equal(p->mps.enabled, POLICY_MPS_YES);
	assert_string_equal(p->mps.control, "/opt/nv/nvidia-cuda-mps-control");
	assert_false(p->mps.multiuser);
	assert_false(p->mps.executor_client);
	assert_int_equal(p->mps.max_clients, 60);
	assert_int_equal(p->mps.executor_reserve, 20);
	assert_int_equal(p->mps.evict_grace_ms, 0);
	assert_int_equal(p->mps.stop_grace_ms, 100);
	assert_int_equal(p->mps.devices, 2);
	assert_false(p->mps.feedback);
	assert_int_equal(p->mps.feedback_step, 5);
	assert_int_equal(p->classes[0].native_sm, 40);
	assert_int_equal(p->classes[0].native_mem, 2ull << 30);
	assert_int_equal(p->classes[0].native_priority, OOO_LEASE_PRIO_BELOW);
	assert_int_equal(p->classes[0].max_leases, 0);
	assert_int_equal(p->classes[0].wait_spin_us, 0);
	assert_string_equal(p->telemetry.libcuda, ""); /* control went to its own field */
	policy_free(p);
	p = parse_ok("[mps]\nenabled = no\n");
	assert_int_equal(p->mps.enabled, POLICY_MPS_NO);
	policy_free(p);
	check_err("[mps]\nenabled = sometimes\n", 2, "enabled must be auto, yes or no");
	check_err("[mps]\ncontrol = nvidia-cuda-mps-control\n", 2, "control must be an absolute path");
	check_err("[mps]\nmax_clients = 0\n", 2, "max_clients must be 1..1024");
	check_err("[mps]\nexecutor_reserve = 101\n", 2, "executor_reserve must be 0..100");
	check_err("[mps]\ndevices = 17\n", 2, "devices must be 0..16");
	check_err("[mps]\nfeedback_step = 0\n", 2, "feedback_step must be 1..100");
	check_err("[mps]\nslo_us = 5\n", 2, "unknown key 'slo_us' in [mps]");
	check_err("[mps]\n[mps]\n", 2, "duplicate section [mps] (first on line 1)");
	check_err("[class a]\nmatch_uid = 1\nnative_sm = 0\n", 3, "native_sm must be 1..100");
	check_err("[class a]\nmatch_uid = 1\nnative_priority = high\n", 3, "native_priority must be normal or below");
	check_err("[class a]\nmatch_uid = 1\nnative_mem = lots\n", 3, "native_mem must be a size");
	check_err("[class a]\nmatch_uid = 1\nmax_leases = 4097\n", 3, "max_leases must be 0..4096");
	check_err("[class a]\nmatch_uid = 1\nwait_spin_us = 100001\n", 3, "wait_spin_us must be 0..100000");
	check_err("[class a]\nmatch_uid = 1\nwait_spin_us = -1\n", 3, "wait_spin_us must be a number");
}

/* [metrics] listen: off by default; IPv4, [IPv6], a port alone for loopback; bad ports and hosts refused */
static void test_metrics_listen(void **state)
{
	static const uint8_t v6_loop[16] = { [15] = 1 };
	struct policy_metrics m;
	struct policy *p = parse_ok("[class a]\nmatch_uid = 1\n");
	char why[160];

	(void)state;
	assert_false(p->metrics.enabled);
	policy_free(p);
	p = parse_ok("[metrics]\n");
	assert_false(p->metrics.enabled);
	policy_free(p);
	p = parse_ok("[metrics]\nlisten = 127.0.0.1:9400\n");
	assert_true(p->metrics.enabled);
	assert_int_equal(p->metrics.family, AF_INET);
	assert_memory_equal(p->metrics.addr, "\x7f\0\0\x01", 4);
	assert_int_equal(p->metrics.port, 9400);
	assert_string_equal(p->metrics.listen, "127.0.0.1:9400");
	policy_free(p);
	p = parse_ok("[metrics]\nlisten = [::1]:9400 ; loopback only\n");
	assert_int_equal(p->metrics.family, AF_INET6);
	assert_memory_equal(p->metrics.addr, v6_loop, 16);
	assert_int_equal(p->metrics.port, 9400);
	assert_string_equal(p->metrics.listen, "[::1]:9400");
	policy_free(p);
	/* a port alone, or after an empty host, is loopback; every address must be spelled out */
	p = parse_ok("[metrics]\nlisten = 9401\n");
	assert_int_equal(p->metrics.family, AF_INET);
	assert_string_equal(p->metrics.listen, "127.0.0.1:9401");
	policy_free(p);
	assert_int_equal(policy_parse_listen(":65535", &m, why, sizeof(why)), 0);
	assert_string_equal(m.listen, "127.0.0.1:65535");
	assert_int_equal(policy_parse_listen("0.0.0.0:1", &m, why, sizeof(why)), 0);
	assert_string_equal(m.listen, "0.0.0.0:1");
	assert_int_equal(policy_parse_listen("[::]:80", &m, why, sizeof(why)), 0);
	assert_string_equal(m.listen, "[::]:80");
	assert_int_equal(policy_parse_listen("[0:0:0:0:0:ffff:7f00:1]:9400", &m, why, sizeof(why)), 0);
	assert_string_equal(m.listen, "[::ffff:127.0.0.1]:9400");

	check_err("[metrics]\nlisten = 127.0.0.1:0\n", 2, "listen: the port must be 1..65535, got '127.0.0.1:0'");
	check_err("[metrics]\nlisten = 127.0.0.1:65536\n", 2, "the port must be 1..65535");
	check_err("[metrics]\nlisten = 127.0.0.1:\n", 2, "the port must be 1..65535");
	check_err("[metrics]\nlisten = 127.0.0.1:94x\n", 2, "the port must be 1..65535");
	check_err("[metrics]\nlisten = 127.0.0.1:+9400\n", 2, "the port must be 1..65535");
	check_err("[metrics]\nlisten = 0\n", 2, "the port must be 1..65535");
	check_err("[metrics]\nlisten = localhost:9400\n", 2, "the host must be an IPv4 address");
	check_err("[metrics]\nlisten = 127.0.0.256:9400\n", 2, "the host must be an IPv4 address");
	check_err("[metrics]\nlisten = ::1:9400\n", 2, "the host must be an IPv4 address (IPv6 in brackets");
	check_err("[metrics]\nlisten = [::1]9400\n", 2, "an IPv6 address goes in brackets");
	check_err("[metrics]\nlisten = [::1\n", 2, "an IPv6 address goes in brackets");
	check_err("[metrics]\nlisten = [127.0.0.1]:9400\n", 2, "the host in brackets must be an IPv6 address");
	check_err("[metrics]\nlisten = []:9400\n", 2, "the host in brackets must be an IPv6 address");
	check_err("[metrics]\nlisten = 10.0.0.1:2\nlisten = 3\n", 3, "duplicate key 'listen' in [metrics]");
	check_err("[metrics]\nport = 9400\n", 2, "unknown key 'port' in [metrics]");
	check_err("[metrics]\n[metrics]\n", 2, "duplicate section [metrics] (first on line 1)");
}

static void test_load_file(void **state)
{
	struct policy_error err = { 0 };
	struct policy *p = NULL;
	char dir[] = "/tmp/test_policy.XXXXXX", path[512], want[600];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));

	snprintf(path, sizeof(path), "%s/oood.conf", dir);
	write_file(path, multi_conf);
	assert_int_equal(policy_load_file(path, &p, &err), 0);
	assert_string_equal(p->source, path);
	assert_int_equal(p->nclasses, 5);
	p = policy_free(p);

	write_file(path, "[daemon]\nmax_sessions = 1\n\n[class c]\nmatch_uid = 1\nadmit = perhaps\n");
	assert_int_equal(policy_load_file(path, &p, &err), -EINVAL);
	assert_null(p);
	assert_int_equal(err.line, 6);
	assert_non_null(strstr(err.msg, "admit must be yes or no, got 'perhaps'"));

	snprintf(path, sizeof(path), "%s/missing.conf", dir);
	assert_int_equal(policy_load_file(path, &p, &err), -ENOENT);
	assert_int_equal(err.line, 0);
	snprintf(want, sizeof(want), "cannot open %s: No such file or directory", path);
	assert_string_equal(err.msg, want);
	assert_null(p);

	assert_int_equal(policy_load_file(dir, &p, &err), -EISDIR);
	assert_int_equal(err.line, 0);
	snprintf(want, sizeof(want), "%s is a directory", dir);
	assert_non_null(strstr(err.msg, want));

	assert_int_equal(policy_load_file("/dev/null", &p, &err), -EINVAL);
	assert_string_equal(err.msg, "/dev/null is not a regular file");

	snprintf(path, sizeof(path), "%s/big.conf", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, POLICY_MAX_FILE + 1), 0); /* sparse: cheap */
	close(fd);
	assert_int_equal(policy_load_file(path, &p, &err), -E2BIG);
	assert_int_equal(err.line, 0);
	assert_non_null(strstr(err.msg, "is too big"));
	assert_null(p);
	unlink(path);

	snprintf(path, sizeof(path), "%s/empty.conf", dir);
	write_file(path, "");
	assert_int_equal(policy_load_file(path, &p, &err), 0);
	assert_int_equal(p->nclasses, 0);
	policy_free(p);
	unlink(path);

	snprintf(path, sizeof(path), "%s/oood.conf", dir);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_text),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_multi_class),
		cmocka_unit_test(test_match_all),
		cmocka_unit_test(test_daemon_ranges),
		cmocka_unit_test(test_class_ranges),
		cmocka_unit_test(test_log_level),
		cmocka_unit_test(test_admin_group),
		cmocka_unit_test(test_admit),
		cmocka_unit_test(test_match_lists),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_syntax_variants),
		cmocka_unit_test(test_err_sections),
		cmocka_unit_test(test_err_class_no_match),
		cmocka_unit_test(test_cgroup_keys),
		cmocka_unit_test(test_err_keys),
		cmocka_unit_test(test_err_numbers),
		cmocka_unit_test(test_err_match),
		cmocka_unit_test(test_err_continuation),
		cmocka_unit_test(test_err_too_many),
		cmocka_unit_test(test_err_lines),
		cmocka_unit_test(test_err_first_only),
		cmocka_unit_test(test_err_args),
		cmocka_unit_test(test_executor_keys),
		cmocka_unit_test(test_telemetry_keys),
		cmocka_unit_test(test_binary_modules_key),
		cmocka_unit_test(test_domain_keys), cmocka_unit_test(test_partition_key),
		cmocka_unit_test(test_mps_keys),
		cmocka_unit_test(test_metrics_listen),
		cmocka_unit_test(test_load_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
