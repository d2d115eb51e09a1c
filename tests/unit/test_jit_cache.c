/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the JIT's fused-kernel cache: the memory LRU, the disk
 * tier (format, corrupt entries, disk_max_bytes, directory checks), and
 * threads and processes sharing it. Each test gets its own directory
 * under /tmp, removed at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nettle/sha2.h>
#include <nettle/version.h>

#include "../../daemon/jit/cache.h"

#define HDR JIT_CACHE_HDR_LEN

struct tdir {
	char root[64]; /* mkdtemp */
	char dir[96];  /* root/c: the cache directory, created by jit_cache_open */
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup_dir(void **state)
{
	struct tdir *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	strcpy(t->root, "/tmp/test_jit_cache.XXXXXX");
	if (!mkdtemp(t->root)) {
		free(t);
		return -1;
	}
	snprintf(t->dir, sizeof(t->dir), "%s/c", t->root);
	*state = t;
	return 0;
}

static int teardown_dir(void **state)
{
	struct tdir *t = *state;
	int rc;

	rc = nftw(t->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(t);
	return rc;
}

static void mkkey(uint8_t key[JIT_CACHE_KEY_LEN], unsigned i)
{
	for (unsigned j = 0; j < JIT_CACHE_KEY_LEN; j++)
		key[j] = (uint8_t)(i * 131u + j * 7u + (i >> 8) * 17u);
	key[0] = (uint8_t)i;
	key[1] = (uint8_t)(i >> 8);
}

static void pattern(unsigned char *p, size_t n, unsigned i)
{
	for (size_t j = 0; j < n; j++)
		p[j] = (unsigned char)(i * 13u + j * 29u + (j >> 8));
}

static bool is_pattern(const unsigned char *p, size_t n, unsigned i)
{
	for (size_t j = 0; j < n; j++)
		if (p[j] != (unsigned char)(i * 13u + j * 29u + (j >> 8)))
			return false;
	return true;
}

static struct jit_cache *open_cache(const char *dir, size_t mem_bytes, size_t mem_entries, uint64_t disk_max)
{
	struct jit_cache_opts o = { .mem_max_bytes = mem_bytes, .mem_max_entries = mem_entries, .dir = dir,
				    .disk_max_bytes = disk_max };
	struct jit_cache *c = NULL;
	char err[256] = "";

	o.err = err;
	o.errlen = sizeof(err);
	if (jit_cache_open(&o, &c) != 0)
		print_error("jit_cache_open: %s\n", err);
	assert_non_null(c);
	return c;
}

static void put_pattern(struct jit_cache *c, unsigned i, size_t len)
{
	uint8_t key[JIT_CACHE_KEY_LEN];
	unsigned char *b = malloc(len ? len : 1);

	assert_non_null(b);
	mkkey(key, i);
	pattern(b, len, i);
	assert_int_equal(jit_cache_put(c, key, b, len), 0);
	free(b);
}

/* 0 and the blob checked against pattern(i), or the error. */
static int get_check(struct jit_cache *c, unsigned i, size_t len)
{
	uint8_t key[JIT_CACHE_KEY_LEN];
	void *b = (void *)1;
	size_t n = 12345;
	int rc;

	mkkey(key, i);
	rc = jit_cache_get(c, key, &b, &n);
	if (rc < 0) {
		assert_null(b);
		assert_int_equal(n, 0);
		return rc;
	}
	assert_non_null(b);
	assert_int_equal(n, len);
	assert_true(is_pattern(b, n, i));
	free(b);
	return 0;
}

static void entry_path(const struct tdir *t, unsigned i, char *path, size_t cap)
{
	uint8_t key[JIT_CACHE_KEY_LEN];
	char hex[2 * JIT_CACHE_KEY_LEN + 1];

	mkkey(key, i);
	jit_cache_key_hex(key, hex);
	snprintf(path, cap, "%s/%s.bin", t->dir, hex);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void set_mtime(const char *path, time_t when)
{
	struct timespec ts[2] = { { .tv_sec = when }, { .tv_sec = when } };

	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void sha256_of(const void *p, size_t n, uint8_t out[SHA256_DIGEST_SIZE])
{
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, n, p);
#if NETTLE_VERSION_MAJOR >= 4
	sha256_digest(&ctx, out);
#else
	sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
#endif
}

static unsigned char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	unsigned char *b;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void write_file(const char *path, const void *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	close(fd);
}

static size_t count_prefix(const char *dir, const char *prefix)
{
	char cmd[256];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -c '^%s' || true", dir, prefix);
	p = popen(cmd, "re");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%zu", &n), 1);
	pclose(p);
	return n;
}

/* ---- arguments, memory tier ----------------------------------------------- */

static void test_args_and_null_close(void **state)
{
	struct jit_cache_opts o = { .mem_max_bytes = 1000, .mem_max_entries = 10 };
	struct jit_cache_stats st;
	struct jit_cache *c = (struct jit_cache *)1;
	uint8_t key[JIT_CACHE_KEY_LEN];
	char hex[2 * JIT_CACHE_KEY_LEN + 1];
	unsigned char one = 1;
	void *b;
	size_t n;

	(void)state;
	jit_cache_close(NULL);
	jit_cache_stats(NULL, &st);
	assert_int_equal(st.puts, 0);
	jit_cache_stats(NULL, NULL);
	assert_int_equal(jit_cache_open(NULL, &c), -EINVAL);
	assert_int_equal(jit_cache_open(&o, NULL), -EINVAL);
	assert_int_equal(jit_cache_open(&o, &c), 0);
	mkkey(key, 1);
	assert_int_equal(jit_cache_get(NULL, key, &b, &n), -EINVAL);
	assert_int_equal(jit_cache_get(c, NULL, &b, &n), -EINVAL);
	assert_int_equal(jit_cache_get(c, key, NULL, &n), -EINVAL);
	assert_int_equal(jit_cache_get(c, key, &b, NULL), -EINVAL);
	assert_int_equal(jit_cache_put(NULL, key, &one, 1), -EINVAL);
	assert_int_equal(jit_cache_put(c, NULL, &one, 1), -EINVAL);
	assert_int_equal(jit_cache_put(c, key, NULL, 1), -EINVAL);
	assert_int_equal(jit_cache_put(c, key, &one, (size_t)JIT_CACHE_MAX_BLOB + 1), -E2BIG);
	/* an empty blob is a blob: a non-NULL buffer of length 0 */
	assert_int_equal(jit_cache_put(c, key, NULL, 0), 0);
	assert_int_equal(jit_cache_get(c, key, &b, &n), 0);
	assert_non_null(b);
	assert_int_equal(n, 0);
	free(b);
	jit_cache_close(c);

	for (unsigned i = 0; i < JIT_CACHE_KEY_LEN; i++)
		key[i] = (uint8_t)(i * 8 + 0x0f);
	jit_cache_key_hex(key, hex);
	assert_string_equal(hex, "0f171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff07");
}

static void test_mem_put_get(void **state)
{
	struct jit_cache *c = open_cache(NULL, 1 << 20, 100, 0);
	struct jit_cache_stats st;
	uint8_t k1[JIT_CACHE_KEY_LEN], k2[JIT_CACHE_KEY_LEN];
	void *b;
	size_t n;

	(void)state;
	mkkey(k1, 1);
	mkkey(k2, 2);
	assert_int_equal(jit_cache_put(c, k1, "hello", 5), 0);
	assert_int_equal(jit_cache_get(c, k1, &b, &n), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(b, "hello", 5);
	memset(b, 'x', n); /* a copy: the cache's is untouched */
	free(b);
	assert_int_equal(jit_cache_get(c, k1, &b, &n), 0);
	assert_memory_equal(b, "hello", 5);
	free(b);
	assert_int_equal(jit_cache_get(c, k2, &b, &n), -ENOENT);
	assert_null(b);
	jit_cache_stats(c, &st);
	assert_int_equal(st.mem_hits, 2);
	assert_int_equal(st.disk_hits, 0);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.puts, 1);
	assert_int_equal(st.mem_entries, 1);
	assert_int_equal(st.mem_bytes, 5);
	/* a second put of the key replaces the entry */
	assert_int_equal(jit_cache_put(c, k1, "world!!", 7), 0);
	assert_int_equal(jit_cache_get(c, k1, &b, &n), 0);
	assert_int_equal(n, 7);
	assert_memory_equal(b, "world!!", 7);
	free(b);
	jit_cache_stats(c, &st);
	assert_int_equal(st.mem_entries, 1);
	assert_int_equal(st.mem_bytes, 7);
	assert_int_equal(st.evictions, 0);
	jit_cache_close(c);
}

static void test_lru_by_bytes(void **state)
{
	struct jit_cache *c = open_cache(NULL, 300, 100, 0);
	struct jit_cache_stats st;

	(void)state;
	put_pattern(c, 0, 100);
	put_pattern(c, 1, 100);
	put_pattern(c, 2, 100);
	assert_int_equal(get_check(c, 0, 100), 0); /* 0 is now the most recent: 1 is the oldest */
	put_pattern(c, 3, 100);
	jit_cache_stats(c, &st);
	assert_int_equal(st.evictions, 1);
	assert_int_equal(st.mem_bytes, 300);
	assert_int_equal(st.mem_entries, 3);
	assert_int_equal(get_check(c, 1, 100), -ENOENT);
	assert_int_equal(get_check(c, 0, 100), 0);
	assert_int_equal(get_check(c, 2, 100), 0);
	assert_int_equal(get_check(c, 3, 100), 0);
	/* recency now 3, 2, 0: 150 more bytes evict 0 then 2 */
	put_pattern(c, 4, 150);
	jit_cache_stats(c, &st);
	assert_int_equal(st.evictions, 3);
	assert_int_equal(st.mem_bytes, 250);
	assert_int_equal(st.mem_entries, 2);
	assert_int_equal(get_check(c, 0, 100), -ENOENT);
	assert_int_equal(get_check(c, 2, 100), -ENOENT);
	assert_int_equal(get_check(c, 3, 100), 0);
	assert_int_equal(get_check(c, 4, 150), 0);
	/* exactly the bound fits, one byte more is not kept */
	put_pattern(c, 5, 300);
	assert_int_equal(get_check(c, 5, 300), 0);
	put_pattern(c, 6, 301);
	assert_int_equal(get_check(c, 6, 301), -ENOENT);
	assert_int_equal(get_check(c, 5, 300), 0);
	jit_cache_stats(c, &st);
	assert_int_equal(st.mem_bytes, 300);
	assert_int_equal(st.mem_entries, 1);
	jit_cache_close(c);
}

static void test_lru_by_entries(void **state)
{
	struct jit_cache *c = open_cache(NULL, 1 << 20, 3, 0);
	struct jit_cache_stats st;

	(void)state;
	put_pattern(c, 0, 10);
	put_pattern(c, 1, 20);
	put_pattern(c, 2, 30);
	assert_int_equal(get_check(c, 0, 10), 0);
	assert_int_equal(get_check(c, 1, 20), 0); /* recency 1, 0, 2 */
	put_pattern(c, 3, 40);                     /* evicts 2 */
	assert_int_equal(get_check(c, 2, 30), -ENOENT);
	put_pattern(c, 4, 50); /* recency 3, 1, 0: evicts 0 */
	assert_int_equal(get_check(c, 0, 10), -ENOENT);
	assert_int_equal(get_check(c, 1, 20), 0);
	assert_int_equal(get_check(c, 3, 40), 0);
	assert_int_equal(get_check(c, 4, 50), 0);
	jit_cache_stats(c, &st);
	assert_int_equal(st.evictions, 2);
	assert_int_equal(st.mem_entries, 3);
	assert_int_equal(st.mem_bytes, 110);
	/* a replaced entry is not an eviction and takes no extra slot */
	put_pattern(c, 1, 25);
	jit_cache_stats(c, &st);
	assert_int_equal(st.evictions, 2);
	assert_int_equal(st.mem_bytes, 115);
	jit_cache_close(c);
}

/* Many keys: the table grows; every key is found; an LRU over them holds. */
static void test_many_keys(void **state)
{
	struct jit_cache *c = open_cache(NULL, 1 << 24, 5000, 0);
	struct jit_cache_stats st;

	(void)state;
	for (unsigned i = 0; i < 5000; i++)
		put_pattern(c, i, i % 64);
	for (unsigned i = 0; i < 5000; i++)
		assert_int_equal(get_check(c, i, i % 64), 0);
	for (unsigned i = 5000; i < 6000; i++) /* evicts 0..999, the oldest */
		put_pattern(c, i, 8);
	jit_cache_stats(c, &st);
	assert_int_equal(st.mem_entries, 5000);
	assert_int_equal(st.evictions, 1000);
	for (unsigned i = 0; i < 1000; i++)
		assert_int_equal(get_check(c, i, i % 64), -ENOENT);
	for (unsigned i = 1000; i < 5000; i++)
		assert_int_equal(get_check(c, i, i % 64), 0);
	jit_cache_close(c);

	/* memory tier off: nothing is kept */
	c = open_cache(NULL, 0, 10, 0);
	put_pattern(c, 1, 1);
	assert_int_equal(get_check(c, 1, 1), -ENOENT);
	jit_cache_close(c);
	c = open_cache(NULL, 100, 0, 0);
	put_pattern(c, 1, 1);
	assert_int_equal(get_check(c, 1, 1), -ENOENT);
	jit_cache_stats(c, &st);
	assert_int_equal(st.mem_entries, 0);
	assert_int_equal(st.misses, 1);
	jit_cache_close(c);
}

/* ---- disk tier ------------------------------------------------------------------ */

static void test_too_big_for_memory(void **state)
{
	struct tdir *t = *state;
	struct jit_cache *c = open_cache(t->dir, 100, 10, 0);
	struct jit_cache_stats st;
	uint8_t key[JIT_CACHE_KEY_LEN], sum[SHA256_DIGEST_SIZE];
	char path[256];
	unsigned char *f;
	struct stat sb;
	size_t n;

	(void)state;
	assert_int_equal(stat(t->dir, &sb), 0); /* created, 0700 */
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 0777, 0700);

	put_pattern(c, 7, 50);
	jit_cache_stats(c, &st);
	assert_int_equal(st.mem_entries, 1);
	put_pattern(c, 7, 200); /* too big for memory: the old copy goes too */
	jit_cache_stats(c, &st);
	assert_int_equal(st.mem_entries, 0);
	assert_int_equal(st.mem_bytes, 0);
	entry_path(t, 7, path, sizeof(path));
	assert_int_equal(stat(path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(sb.st_size, HDR + 200);
	assert_int_equal(get_check(c, 7, 200), 0);
	assert_int_equal(get_check(c, 7, 200), 0);
	jit_cache_stats(c, &st);
	assert_int_equal(st.disk_hits, 2); /* never promoted: it does not fit */
	assert_int_equal(st.mem_hits, 0);
	assert_int_equal(st.mem_entries, 0);
	assert_int_equal(st.disk_bytes, HDR + 200);
	assert_int_equal(count_prefix(t->dir, "\\.tmp-"), 0);

	/* the format of cache.h, byte for byte */
	f = read_file(path, &n);
	assert_int_equal(n, HDR + 200);
	mkkey(key, 7);
	assert_memory_equal(f, "OOOJITC1", 8);
	assert_memory_equal(f + 8, "\x01\x00\x00\x00", 4);
	assert_memory_equal(f + 12, "\x00\x00\x00\x00", 4);
	assert_memory_equal(f + 16, "\xc8\x00\x00\x00\x00\x00\x00\x00", 8);
	assert_memory_equal(f + 24, key, 32);
	sha256_of(f + HDR, 200, sum);
	assert_memory_equal(f + 56, sum, 32);
	assert_true(is_pattern(f + HDR, 200, 7));
	free(f);
	jit_cache_close(c);
}

static void test_disk_hit_after_reopen(void **state)
{
	struct tdir *t = *state;
	struct jit_cache *c = open_cache(t->dir, 1 << 20, 100, 0);
	struct jit_cache_stats st;

	for (unsigned i = 0; i < 5; i++)
		put_pattern(c, i, 1000 * i);
	jit_cache_close(c);

	c = open_cache(t->dir, 1 << 20, 100, 0);
	jit_cache_stats(c, &st);
	assert_int_equal(st.mem_entries, 0);
	assert_int_equal(st.disk_bytes, 5 * HDR + 10000);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(get_check(c, i, 1000 * i), 0);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(get_check(c, i, 1000 * i), 0);
	assert_int_equal(get_check(c, 9, 0), -ENOENT);
	jit_cache_stats(c, &st);
	assert_int_equal(st.disk_hits, 5);
	assert_int_equal(st.mem_hits, 5); /* promoted by the disk hit */
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.mem_entries, 5);
	assert_int_equal(st.corrupt, 0);
	jit_cache_close(c);

	/* memory off: every hit comes from disk */
	c = open_cache(t->dir, 0, 0, 0);
	assert_int_equal(get_check(c, 3, 3000), 0);
	assert_int_equal(get_check(c, 3, 3000), 0);
	jit_cache_stats(c, &st);
	assert_int_equal(st.disk_hits, 2);
	jit_cache_close(c);
}

/* ---- corrupt entries: a miss, deleted, then rebuilt ------------------------------- */

#define CLEN 300u /* payload of the entry the corruption tests spoil */

enum leftover { GONE, STAYS };

static void corrupt_case(struct tdir *t, void (*spoil)(struct tdir *t, const char *path), enum leftover left)
{
	struct jit_cache *c = open_cache(t->dir, 1 << 20, 100, 0);
	struct jit_cache_stats st;
	char path[256];

	put_pattern(c, 42, CLEN);
	jit_cache_close(c);
	entry_path(t, 42, path, sizeof(path));
	spoil(t, path);

	c = open_cache(t->dir, 1 << 20, 100, 0);
	assert_int_equal(get_check(c, 42, CLEN), -ENOENT);
	jit_cache_stats(c, &st);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.corrupt, 1);
	assert_int_equal(st.disk_hits, 0);
	assert_int_equal(st.mem_entries, 0);
	if (left == STAYS) {
		uint8_t key[JIT_CACHE_KEY_LEN];
		unsigned char b[CLEN];

		/* a non-empty directory cannot be deleted, nor renamed over */
		assert_true(exists(path));
		mkkey(key, 42);
		pattern(b, CLEN, 42);
		assert_int_equal(jit_cache_put(c, key, b, CLEN), -EISDIR);
		jit_cache_stats(c, &st);
		assert_int_equal(st.disk_errors, 1);
		assert_int_equal(get_check(c, 42, CLEN), 0); /* the memory copy is kept */
		jit_cache_close(c);
		return;
	}
	assert_false(exists(path));
	put_pattern(c, 42, CLEN); /* rebuilt */
	jit_cache_close(c);
	c = open_cache(t->dir, 1 << 20, 100, 0);
	assert_int_equal(get_check(c, 42, CLEN), 0);
	jit_cache_stats(c, &st);
	assert_int_equal(st.disk_hits, 1);
	assert_int_equal(st.corrupt, 0);
	jit_cache_close(c);
	assert_int_equal(count_prefix(t->dir, "\\.tmp-"), 0);
}

static void patch(const char *path, off_t off, const void *bytes, size_t n)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, n, off), (ssize_t)n);
	close(fd);
}

static void flip(const char *path, off_t off)
{
	unsigned char b;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, off), 1);
	b ^= 0x01;
	assert_int_equal(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

static void spoil_payload(struct tdir *t, const char *p)
{
	(void)t;
	flip(p, HDR + 123);
}
static void spoil_checksum(struct tdir *t, const char *p)
{
	(void)t;
	flip(p, 56 + 31);
}
static void spoil_magic(struct tdir *t, const char *p)
{
	(void)t;
	patch(p, 0, "OOOJITC2", 8);
}
static void spoil_version(struct tdir *t, const char *p)
{
	(void)t;
	patch(p, 8, "\x02", 1);
}
static void spoil_reserved(struct tdir *t, const char *p)
{
	(void)t;
	patch(p, 13, "\x01", 1);
}
static void spoil_length(struct tdir *t, const char *p)
{
	(void)t;
	flip(p, 16);
}
static void spoil_key(struct tdir *t, const char *p)
{
	(void)t;
	flip(p, 24 + 5);
}
static void spoil_trunc_payload(struct tdir *t, const char *p)
{
	(void)t;
	assert_int_equal(truncate(p, HDR + CLEN - 1), 0);
}
static void spoil_trunc_header(struct tdir *t, const char *p)
{
	(void)t;
	assert_int_equal(truncate(p, 40), 0);
}
static void spoil_empty(struct tdir *t, const char *p)
{
	(void)t;
	assert_int_equal(truncate(p, 0), 0);
}

static void spoil_trailing(struct tdir *t, const char *p)
{
	int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);

	(void)t;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

/* The length field and the file agree, the checksum does not. */
static void spoil_consistent_length(struct tdir *t, const char *p)
{
	(void)t;
	assert_int_equal(truncate(p, HDR + 100), 0);
	patch(p, 16, "\x64\x00\x00\x00\x00\x00\x00\x00", 8);
}

/* The whole file of another key, renamed to this one. */
static void spoil_other_entry(struct tdir *t, const char *p)
{
	struct jit_cache *c = open_cache(t->dir, 1 << 20, 100, 0);
	char other[256];

	put_pattern(c, 43, CLEN);
	jit_cache_close(c);
	entry_path(t, 43, other, sizeof(other));
	assert_int_equal(rename(other, p), 0);
}

static void spoil_dir(struct tdir *t, const char *p)
{
	(void)t;
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 0700), 0);
}

static void spoil_full_dir(struct tdir *t, const char *p)
{
	char inner[300];

	spoil_dir(t, p);
	snprintf(inner, sizeof(inner), "%s/x", p);
	write_file(inner, "x", 1);
}

static void spoil_fifo(struct tdir *t, const char *p)
{
	(void)t;
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkfifo(p, 0600), 0);
}

static char symlink_target[256];

/* A symbolic link to a valid entry file of this very key: still not followed. */
static void spoil_symlink(struct tdir *t, const char *p)
{
	snprintf(symlink_target, sizeof(symlink_target), "%s/target.bin", t->root);
	assert_int_equal(rename(p, symlink_target), 0);
	assert_int_equal(symlink(symlink_target, p), 0);
}

static void spoil_symlink_dir(struct tdir *t, const char *p)
{
	assert_int_equal(unlink(p), 0);
	assert_int_equal(symlink(t->root, p), 0);
}

static void spoil_dangling(struct tdir *t, const char *p)
{
	(void)t;
	assert_int_equal(unlink(p), 0);
	assert_int_equal(symlink("/nonexistent/jit-cache-target", p), 0);
}

#define CORRUPT_TEST(name, left)                                                                           \
	static void test_corrupt_##name(void **state) { corrupt_case(*state, spoil_##name, left); }
CORRUPT_TEST(payload, GONE)
CORRUPT_TEST(checksum, GONE)
CORRUPT_TEST(magic, GONE)
CORRUPT_TEST(version, GONE)
CORRUPT_TEST(reserved, GONE)
CORRUPT_TEST(length, GONE)
CORRUPT_TEST(consistent_length, GONE)
CORRUPT_TEST(key, GONE)
CORRUPT_TEST(other_entry, GONE)
CORRUPT_TEST(trunc_payload, GONE)
CORRUPT_TEST(trunc_header, GONE)
CORRUPT_TEST(empty, GONE)
CORRUPT_TEST(trailing, GONE)
CORRUPT_TEST(dir, GONE)
CORRUPT_TEST(full_dir, STAYS)
CORRUPT_TEST(fifo, GONE)
CORRUPT_TEST(symlink_dir, GONE)
CORRUPT_TEST(dangling, GONE)

static void test_corrupt_symlink(void **state)
{
	struct tdir *t = *state;
	unsigned char *f;
	size_t n;

	corrupt_case(t, spoil_symlink, GONE);
	/* the link went, not what it pointed at, and that was never read as an entry */
	f = read_file(symlink_target, &n);
	assert_int_equal(n, HDR + CLEN);
	assert_true(is_pattern(f + HDR, CLEN, 42));
	free(f);
}

/* ---- disk_max_bytes -------------------------------------------------------------- */

static void test_disk_max(void **state)
{
	struct tdir *t = *state;
	const uint64_t fsz = HDR + 100, max = 3 * fsz + 50;
	struct jit_cache *c = open_cache(t->dir, 0, 0, max); /* memory off: every get reads the disk */
	struct jit_cache_stats st;
	char p[8][256], notes[256], upper[256];
	time_t now = time(NULL);

	for (unsigned i = 0; i < 8; i++)
		entry_path(t, i, p[i], sizeof(p[i]));
	/* files that are not entries are neither counted nor deleted */
	snprintf(notes, sizeof(notes), "%s/notes.txt", t->dir);
	write_file(notes, "x", 1);
	snprintf(upper, sizeof(upper), "%s/%s", t->dir,
		 "ABCDEF0000000000000000000000000000000000000000000000000000000000.bin");
	write_file(upper, "x", 1);
	set_mtime(notes, now - 100000);
	set_mtime(upper, now - 100000);

	put_pattern(c, 0, 100);
	put_pattern(c, 1, 100);
	put_pattern(c, 2, 100);
	/* by mtime, not by put order: 1 is the oldest */
	set_mtime(p[0], now - 100);
	set_mtime(p[1], now - 300);
	set_mtime(p[2], now - 200);
	jit_cache_stats(c, &st);
	assert_int_equal(st.disk_bytes, 3 * fsz);
	assert_int_equal(st.disk_evictions, 0);
	put_pattern(c, 3, 100);
	jit_cache_stats(c, &st);
	assert_int_equal(st.disk_evictions, 1);
	assert_int_equal(st.disk_bytes, 3 * fsz);
	assert_false(exists(p[1]));
	assert_true(exists(p[0]) && exists(p[2]) && exists(p[3]));
	assert_true(exists(notes) && exists(upper));

	/* a disk hit makes its file the most recent */
	set_mtime(p[0], now - 1000);
	set_mtime(p[3], now - 10);
	assert_int_equal(get_check(c, 0, 100), 0);
	put_pattern(c, 4, 100); /* oldest now: 2 */
	assert_false(exists(p[2]));
	assert_true(exists(p[0]) && exists(p[3]) && exists(p[4]));

	/* a bigger payload evicts as many as needed */
	set_mtime(p[0], now - 50);
	set_mtime(p[3], now - 40);
	put_pattern(c, 5, 250); /* 2 x 188 + 338 > 614: 0 goes, then 3 */
	assert_false(exists(p[0]));
	assert_false(exists(p[3]));
	assert_true(exists(p[4]) && exists(p[5]));
	jit_cache_stats(c, &st);
	assert_int_equal(st.disk_evictions, 4);
	assert_int_equal(st.disk_bytes, fsz + HDR + 250);

	/* an entry larger than the bound is not written (nor anything evicted for it) */
	put_pattern(c, 6, max);
	assert_false(exists(p[6]));
	assert_true(exists(p[4]) && exists(p[5]));
	assert_int_equal(get_check(c, 6, max), -ENOENT);
	jit_cache_close(c);

	/* a lower bound at open trims at once */
	set_mtime(p[4], now - 20);
	set_mtime(p[5], now - 30);
	c = open_cache(t->dir, 0, 0, HDR + 250 + 10);
	jit_cache_stats(c, &st);
	assert_int_equal(st.disk_evictions, 1);
	assert_int_equal(st.disk_bytes, fsz);
	assert_false(exists(p[5]));
	assert_true(exists(p[4]));
	jit_cache_close(c);
	/* unlimited: nothing goes */
	c = open_cache(t->dir, 0, 0, 0);
	for (unsigned i = 0; i < 8; i++)
		put_pattern(c, 100 + i, 1000);
	jit_cache_stats(c, &st);
	assert_int_equal(st.disk_evictions, 0);
	assert_int_equal(st.disk_bytes, fsz + 8 * (HDR + 1000));
	jit_cache_close(c);
	assert_true(exists(notes) && exists(upper));
}

/* Temporary files left by a crash go when old, stay while they may be in use. */
static void test_stale_temp_files(void **state)
{
	struct tdir *t = *state;
	struct jit_cache *c;
	char old[256], fresh[256];

	assert_int_equal(mkdir(t->dir, 0700), 0);
	snprintf(old, sizeof(old), "%s/.tmp-00000000deadbeef", t->dir);
	snprintf(fresh, sizeof(fresh), "%s/.tmp-00000000feedf00d", t->dir);
	write_file(old, "x", 1);
	write_file(fresh, "x", 1);
	set_mtime(old, time(NULL) - 7200);
	c = open_cache(t->dir, 100, 10, 0);
	assert_false(exists(old));
	assert_true(exists(fresh));
	jit_cache_close(c);
}

/* ---- the directory ---------------------------------------------------------------- */

static int try_open(const char *dir, char *err, size_t errlen)
{
	struct jit_cache_opts o = { .mem_max_bytes = 100, .mem_max_entries = 10, .dir = dir, .err = err,
				    .errlen = errlen };
	struct jit_cache *c = (struct jit_cache *)1;
	int rc;

	err[0] = '\0';
	rc = jit_cache_open(&o, &c);
	if (rc == 0) {
		assert_non_null(c);
		jit_cache_close(c);
	} else {
		assert_null(c);
		assert_true(err[0] != '\0');
	}
	return rc;
}

static void test_bad_dir(void **state)
{
	struct tdir *t = *state;
	char err[256], path[256], link[256];

	assert_int_equal(mkdir(t->dir, 0700), 0);
	assert_int_equal(try_open(t->dir, err, sizeof(err)), 0);
	assert_int_equal(chmod(t->dir, 0777), 0);
	assert_int_equal(try_open(t->dir, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable"));
	assert_int_equal(chmod(t->dir, 0720), 0);
	assert_int_equal(try_open(t->dir, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(t->dir, 0702), 0);
	assert_int_equal(try_open(t->dir, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(t->dir, 0755), 0); /* readable by others is fine */
	assert_int_equal(try_open(t->dir, err, sizeof(err)), 0);
	assert_int_equal(chmod(t->dir, 0700), 0);

	if (geteuid() == 0) {
		assert_int_equal(chown(t->dir, 12345, 12345), 0);
		assert_int_equal(try_open(t->dir, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "owned by uid 12345"));
		assert_int_equal(chown(t->dir, 0, 0), 0);
	} else {
		print_message("not root: the test of a directory of another owner is skipped\n");
	}

	/* not a directory */
	snprintf(path, sizeof(path), "%s/file", t->root);
	write_file(path, "x", 1);
	assert_int_equal(try_open(path, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "not a directory"));
	/* a missing parent is not created */
	snprintf(path, sizeof(path), "%s/missing/c", t->root);
	assert_int_equal(try_open(path, err, sizeof(err)), -ENOENT);
	assert_int_equal(try_open("", err, sizeof(err)), -EINVAL);
	/* a link to a good directory is the directory; to a bad one is refused */
	snprintf(link, sizeof(link), "%s/link", t->root);
	assert_int_equal(symlink(t->dir, link), 0);
	assert_int_equal(try_open(link, err, sizeof(err)), 0);
	assert_int_equal(chmod(t->dir, 0777), 0);
	assert_int_equal(try_open(link, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(t->dir, 0700), 0);
	/* no reason buffer: still refused */
	{
		struct jit_cache_opts o = { .mem_max_bytes = 1, .mem_max_entries = 1, .dir = path };
		struct jit_cache *c;

		assert_int_equal(jit_cache_open(&o, &c), -ENOENT);
	}
}

/* ---- threads and processes --------------------------------------------------------- */

#define TKEYS 16u
#define TITER 4000u

static size_t tlen(unsigned k)
{
	return 1 + 300u * k; /* up to 4501: some do not fit in memory */
}

struct targ {
	struct jit_cache *c;
	unsigned seed;
	unsigned bad, hits, puts;
};

static void *hammer(void *p)
{
	struct targ *a = p;
	unsigned char buf[1 + 300 * TKEYS];
	uint8_t key[JIT_CACHE_KEY_LEN];

	for (unsigned i = 0; i < TITER; i++) {
		unsigned r = (unsigned)rand_r(&a->seed), k = r % TKEYS;
		void *b;
		size_t n;
		int rc;

		mkkey(key, k);
		if ((r >> 8) % 16 == 0) {
			pattern(buf, tlen(k), k);
			if (jit_cache_put(a->c, key, buf, tlen(k)) != 0)
				a->bad++;
			a->puts++;
			continue;
		}
		rc = jit_cache_get(a->c, key, &b, &n);
		if (rc == 0) {
			if (n != tlen(k) || !is_pattern(b, n, k))
				a->bad++;
			a->hits++;
			free(b);
		} else if (rc != -ENOENT) {
			a->bad++;
		}
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct tdir *t = *state;
	/* small bounds so that memory evictions, disk reads, writes and disk evictions all race */
	struct jit_cache *c = open_cache(t->dir, 8192, 6, 8 * (HDR + 2000));
	struct targ a[4];
	pthread_t th[4];
	struct jit_cache_stats st;
	unsigned hits = 0;

	for (unsigned i = 0; i < 4; i++) {
		a[i] = (struct targ){ .c = c, .seed = 1234u + i * 7919u };
		assert_int_equal(pthread_create(&th[i], NULL, hammer, &a[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(a[i].bad, 0);
		hits += a[i].hits;
	}
	jit_cache_stats(c, &st);
	assert_int_equal(st.mem_hits + st.disk_hits, hits);
	assert_int_equal(st.corrupt, 0);
	assert_int_equal(st.disk_errors, 0);
	assert_true(st.mem_bytes <= 8192);
	assert_true(st.mem_entries <= 6);
	assert_true(st.evictions > 0);
	assert_true(st.disk_hits > 0);
	print_message("threads: %llu puts, %llu memory hits, %llu disk hits, %llu misses, %llu disk evictions\n",
		      (unsigned long long)st.puts, (unsigned long long)st.mem_hits,
		      (unsigned long long)st.disk_hits, (unsigned long long)st.misses,
		      (unsigned long long)st.disk_evictions);
	jit_cache_close(c);
	assert_int_equal(count_prefix(t->dir, "\\.tmp-"), 0);
}

/* Two processes, each with its own cache on one directory, writing the same keys. */
static void test_processes(void **state)
{
	struct tdir *t = *state;
	struct jit_cache *c = open_cache(t->dir, 0, 0, 0); /* creates the directory */
	struct jit_cache_stats st;
	pid_t pid[2];

	jit_cache_close(c);
	for (unsigned p = 0; p < 2; p++) {
		pid[p] = fork();
		assert_true(pid[p] >= 0);
		if (pid[p] == 0) {
			struct jit_cache_opts o = { .mem_max_bytes = 0, .dir = t->dir };
			struct targ a = { .seed = 99u + p };

			if (jit_cache_open(&o, &a.c) != 0)
				_exit(2);
			for (unsigned i = 0; i < 300; i++) {
				unsigned k = (unsigned)rand_r(&a.seed) % 4;
				unsigned char buf[1 + 300 * TKEYS];
				uint8_t key[JIT_CACHE_KEY_LEN];
				void *b;
				size_t n;
				int rc;

				mkkey(key, k);
				if (i % 3 == 0) {
					pattern(buf, tlen(k), k);
					if (jit_cache_put(a.c, key, buf, tlen(k)) != 0)
						_exit(3);
					continue;
				}
				rc = jit_cache_get(a.c, key, &b, &n);
				if (rc == 0) {
					if (n != tlen(k) || !is_pattern(b, n, k))
						_exit(4);
					free(b);
				} else if (rc != -ENOENT) {
					_exit(5);
				}
			}
			jit_cache_stats(a.c, &st);
			jit_cache_close(a.c);
			_exit(st.corrupt ? 6 : 0);
		}
	}
	for (unsigned p = 0; p < 2; p++) {
		int ws;

		assert_int_equal(waitpid(pid[p], &ws, 0), pid[p]);
		assert_true(WIFEXITED(ws));
		assert_int_equal(WEXITSTATUS(ws), 0);
	}
	assert_int_equal(count_prefix(t->dir, "\\.tmp-"), 0);
	c = open_cache(t->dir, 0, 0, 0);
	for (unsigned k = 0; k < 4; k++)
		assert_int_equal(get_check(c, k, tlen(k)), 0);
	jit_cache_stats(c, &st);
	assert_int_equal(st.corrupt, 0);
	assert_int_equal(st.disk_bytes, 4 * HDR + tlen(0) + tlen(1) + tlen(2) + tlen(3));
	jit_cache_close(c);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup_dir, teardown_dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_args_and_null_close),
		T(test_mem_put_get),
		T(test_lru_by_bytes),
		T(test_lru_by_entries),
		T(test_many_keys),
		T(test_too_big_for_memory),
		T(test_disk_hit_after_reopen),
		T(test_corrupt_payload),
		T(test_corrupt_checksum),
		T(test_corrupt_magic),
		T(test_corrupt_version),
		T(test_corrupt_reserved),
		T(test_corrupt_length),
		T(test_corrupt_consistent_length),
		T(test_corrupt_key),
		T(test_corrupt_other_entry),
		T(test_corrupt_trunc_payload),
		T(test_corrupt_trunc_header),
		T(test_corrupt_empty),
		T(test_corrupt_trailing),
		T(test_corrupt_dir),
		T(test_corrupt_full_dir),
		T(test_corrupt_fifo),
		T(test_corrupt_symlink),
		T(test_corrupt_symlink_dir),
		T(test_corrupt_dangling),
		T(test_disk_max),
		T(test_stale_temp_files),
		T(test_bad_dir),
		T(test_threads),
		T(test_processes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
