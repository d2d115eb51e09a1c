/* SPDX-License-Identifier: MIT */
/* daemon/ldcache.c: lookups in ld.so.cache images built here. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../daemon/telemetry/ldcache.h"

struct ent {
	int32_t flags;
	const char *key, *val;
};

/* A "glibc-ld.so.cache1.1" image of the entries at buf + pre (pre bytes of old-format block first). */
static size_t build(unsigned char *buf, size_t cap, const unsigned char *pre, size_t npre, const struct ent *e, uint32_t n)
{
	unsigned char *h = buf + npre;
	size_t strs = 48 + 24 * (size_t)n, k = strs;
	uint32_t zero = 0;

	assert_true(npre + strs < cap);
	if (npre)
		memcpy(buf, pre, npre);
	memset(h, 0, strs);
	memcpy(h, "glibc-ld.so.cache1.1", 20);
	memcpy(h + 20, &n, 4);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t ko = (uint32_t)k, vo;
		unsigned char *r = h + 48 + 24 * (size_t)i;

		strcpy((char *)h + k, e[i].key);
		k += strlen(e[i].key) + 1;
		vo = (uint32_t)k;
		strcpy((char *)h + k, e[i].val);
		k += strlen(e[i].val) + 1;
		memcpy(r, &e[i].flags, 4);
		memcpy(r + 4, &ko, 4);
		memcpy(r + 8, &vo, 4);
		memcpy(r + 12, &zero, 4);
	}
	k -= strs;
	memcpy(h + 24, &k, 4);
	return npre + strs + k;
}

static const struct ent ents[] = {
	{ 0x0003, "libcuda.so.1", "/lib32/libcuda.so.1" }, /* 32-bit: not ours */
	{ 0x0303, "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1" },
	{ 0x0303, "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6" },
	{ 0x0303, "libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1" },
	{ 0x0303, "libcuda.so.1", "relative/libcuda.so.1" }, /* not absolute: skipped */
};

static void test_find(void **state)
{
	unsigned char buf[4096];
	char paths[4][256];
	size_t len = build(buf, sizeof(buf), NULL, 0, ents, 5);
	int n;

	(void)state;
	n = ldcache_find(buf, len, "libcuda.so.1", paths, 4);
#if defined(__x86_64__)
	assert_int_equal(n, 2);
	assert_string_equal(paths[0], "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
	assert_string_equal(paths[1], "/usr/local/nvidia/lib64/libcuda.so.1");
	assert_int_equal(ldcache_find(buf, len, "libcuda.so.1", paths, 1), 1);
#endif
	assert_int_equal(ldcache_find(buf, len, "libnothere.so", paths, 4), 0);
	assert_int_equal(ldcache_find(buf, len, "libcuda.so.1", paths, 0), 0);
}

static void test_old_then_new(void **state)
{
	unsigned char buf[4096], pre[32];
	char paths[4][256];
	uint32_t one = 1;
	size_t len;

	(void)state;
	memset(pre, 0, sizeof(pre));
	memcpy(pre, "ld.so-1.7.0", 11);
	memcpy(pre + 12, &one, 4); /* struct cache_file: magic[11], padding, nlibs at 12 */
	/* 16 + 12 = 28, aligned to 32 */
	len = build(buf, sizeof(buf), pre, 32, ents + 1, 1);
	assert_int_equal(ldcache_find(buf, len, "libcuda.so.1", paths, 4), 1);
	assert_string_equal(paths[0], "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
	/* an old block claiming more entries than the file holds */
	one = 1000000;
	memcpy(buf + 12, &one, 4);
	assert_int_equal(ldcache_find(buf, len, "libcuda.so.1", paths, 4), -EBADMSG);
}

static void test_bad(void **state)
{
	unsigned char buf[4096];
	char paths[4][256];
	size_t len = build(buf, sizeof(buf), NULL, 0, ents, 5);
	uint32_t big = 0xffffffffu;

	(void)state;
	assert_int_equal(ldcache_find("not a cache", 11, "libcuda.so.1", paths, 4), -EINVAL);
	assert_int_equal(ldcache_find(buf, 0, "libcuda.so.1", paths, 4), -EINVAL);
	assert_int_equal(ldcache_find(NULL, 10, "libcuda.so.1", paths, 4), -EINVAL);
	/* every truncation is refused or answered, never read past */
	for (size_t l = 0; l < len; l++) {
		int r = ldcache_find(buf, l, "libcuda.so.1", paths, 4);

		assert_true(r == -EINVAL || r == -EBADMSG || r >= 0);
	}
	/* a string offset past the end */
	memcpy(buf + 48 + 4, &big, 4);
	assert_int_equal(ldcache_find(buf, len, "libcuda.so.1", paths, 4), -EBADMSG);
	/* more entries than fit */
	len = build(buf, sizeof(buf), NULL, 0, ents, 5);
	memcpy(buf + 20, &big, 4);
	assert_int_equal(ldcache_find(buf, len, "libcuda.so.1", paths, 4), -EBADMSG);
}

static void test_this_machine(void **state)
{
	static unsigned char buf[LDCACHE_MAX_FILE / 16];
	char paths[4][256];
	FILE *f = fopen("/etc/ld.so.cache", "rb");
	size_t n;

	(void)state;
	if (!f)
		skip();
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	/* glibc systems list libc.so.6 */
	assert_true(ldcache_find(buf, n, "libc.so.6", paths, 4) >= 1);
	assert_true(paths[0][0] == '/');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_old_then_new),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_this_machine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
