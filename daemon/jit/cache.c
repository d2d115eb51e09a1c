/* SPDX-License-Identifier: MIT */
/* The fused-kernel cache of the JIT (see cache.h for the file format). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nettle/sha2.h>
#include <nettle/version.h>

#include "cache.h"

#define HEX_LEN (2 * JIT_CACHE_KEY_LEN)
#define NAME_LEN (HEX_LEN + 4) /* "<hex>.bin" */
#define TMP_PREFIX ".tmp-"
#define TMP_NAME_MAX 32
#define TMP_STALE_S 3600 /* a temporary file older than this was left by a crash */
#define MIN_BUCKETS 64u

struct lru_node {
	struct lru_node *prev, *next;
};

struct entry {
	struct lru_node lru;  /* first: an entry is its node */
	struct entry *hnext;  /* hash chain, or the list of entries to free */
	uint64_t hash;
	size_t len;
	uint8_t key[JIT_CACHE_KEY_LEN];
	unsigned char blob[];
};

struct jit_cache {
	pthread_mutex_t lock;
	/* memory tier, under lock */
	struct entry **buckets;
	size_t nbuckets; /* a power of two */
	struct lru_node lru; /* lru.next: most recently used; lru.prev: least */
	size_t mem_bytes, mem_entries;
	size_t mem_max_bytes, mem_max_entries;
	bool mem_on;
	uint64_t seed;
	/* disk tier: dfd and disk_max are set at open, the rest under lock */
	int dfd; /* -1: memory only */
	uint64_t disk_max;
	uint64_t disk_bytes;
	bool evicting; /* one thread at a time scans the directory */
	uint64_t tmp_seq;
	struct jit_cache_stats st;
};

static const char hexdig[] = "0123456789abcdef";

void jit_cache_key_hex(const uint8_t key[JIT_CACHE_KEY_LEN], char out[2 * JIT_CACHE_KEY_LEN + 1])
{
	for (unsigned i = 0; i < JIT_CACHE_KEY_LEN; i++) {
		out[2 * i] = hexdig[key[i] >> 4];
		out[2 * i + 1] = hexdig[key[i] & 15];
	}
	out[HEX_LEN] = '\0';
}

static void file_name(const uint8_t *key, char name[NAME_LEN + 1])
{
	jit_cache_key_hex(key, name);
	memcpy(name + HEX_LEN, ".bin", 5);
}

static bool is_entry_name(const char *n)
{
	for (unsigned i = 0; i < HEX_LEN; i++)
		if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
			return false;
	return strcmp(n + HEX_LEN, ".bin") == 0;
}

__attribute__((format(printf, 2, 3))) static void set_reason(const struct jit_cache_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o || !o->err || !o->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(o->err, o->errlen, fmt, ap);
	va_end(ap);
}

static void sha256_of(const void *p, size_t n, uint8_t out[SHA256_DIGEST_SIZE])
{
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, n, n ? p : (const void *)"");
#if NETTLE_VERSION_MAJOR >= 4
	sha256_digest(&ctx, out);
#else
	sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
#endif
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t random_u64(uint64_t fallback)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	return fallback;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* ---- memory tier (all under c->lock) --------------------------------------- */

static uint64_t key_hash(const struct jit_cache *c, const uint8_t *key)
{
	uint64_t h = c->seed, w;

	for (unsigned i = 0; i < JIT_CACHE_KEY_LEN; i += 8) {
		memcpy(&w, key + i, sizeof(w));
		h = mix64(h ^ w);
	}
	return h;
}

static struct entry *mem_find(const struct jit_cache *c, const uint8_t *key, uint64_t h)
{
	for (struct entry *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->hnext)
		if (e->hash == h && memcmp(e->key, key, JIT_CACHE_KEY_LEN) == 0)
			return e;
	return NULL;
}

static void lru_unlink(struct lru_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

static void lru_push_front(struct jit_cache *c, struct lru_node *n)
{
	n->prev = &c->lru;
	n->next = c->lru.next;
	c->lru.next->prev = n;
	c->lru.next = n;
}

/* Take e out of the table and the list and push it on *dead (freed after unlock). */
static void mem_remove(struct jit_cache *c, struct entry *e, struct entry **dead)
{
	struct entry **pp = &c->buckets[e->hash & (c->nbuckets - 1)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	lru_unlink(&e->lru);
	c->mem_bytes -= e->len;
	c->mem_entries--;
	e->hnext = *dead;
	*dead = e;
}

static void mem_grow(struct jit_cache *c)
{
	size_t n = c->nbuckets * 2;
	struct entry **nb;

	if (n > SIZE_MAX / sizeof(*nb))
		return;
	nb = calloc(n, sizeof(*nb));
	if (!nb)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct entry *e = c->buckets[i], *next;

		for (; e; e = next) {
			next = e->hnext;
			e->hnext = nb[e->hash & (n - 1)];
			nb[e->hash & (n - 1)] = e;
		}
	}
	free(c->buckets);
	c->buckets = nb;
	c->nbuckets = n;
}

/* e fits the bounds by itself (len <= mem_max_bytes, mem_max_entries >= 1). */
static void mem_insert(struct jit_cache *c, struct entry *e, struct entry **dead)
{
	struct entry *old = mem_find(c, e->key, e->hash);
	size_t b;

	if (old)
		mem_remove(c, old, dead);
	b = e->hash & (c->nbuckets - 1);
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	lru_push_front(c, &e->lru);
	c->mem_bytes += e->len;
	c->mem_entries++;
	while (c->mem_bytes > c->mem_max_bytes || c->mem_entries > c->mem_max_entries) {
		mem_remove(c, (struct entry *)c->lru.prev, dead);
		c->st.evictions++;
	}
	if (c->mem_entries > c->nbuckets)
		mem_grow(c);
}

static void free_dead(struct entry *dead)
{
	while (dead) {
		struct entry *next = dead->hnext;

		free(dead);
		dead = next;
	}
}

static struct entry *entry_new(const uint8_t *key, uint64_t h, const void *blob, size_t len)
{
	struct entry *e = malloc(sizeof(*e) + len);

	if (!e)
		return NULL;
	e->hash = h;
	e->len = len;
	memcpy(e->key, key, JIT_CACHE_KEY_LEN);
	if (len)
		memcpy(e->blob, blob, len);
	return e;
}

static bool mem_fits(const struct jit_cache *c, size_t len)
{
	return c->mem_on && len <= c->mem_max_bytes;
}

/* ---- disk tier (no lock held) ------------------------------------------------ */

struct dfile {
	struct timespec mtime;
	uint64_t size;
	char name[NAME_LEN + 1];
};

static int dfile_cmp(const void *a, const void *b)
{
	const struct dfile *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Count the entry files (regular files named like entries; nothing else
 * in the directory is touched, except temporary files left by a crash),
 * and, when limit != 0 and they exceed it, delete the oldest by mtime
 * until they fit. *total gets what remains.
 */
static int disk_scan(struct jit_cache *c, uint64_t limit, uint64_t *total, uint64_t *nevicted)
{
	struct dfile *v = NULL, *nv;
	size_t n = 0, cap = 0;
	uint64_t sum = 0;
	struct timespec now;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, rc = 0;

	*nevicted = 0;
	fd = openat(c->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	while ((de = readdir(d))) {
		const char *name = de->d_name;

		if (strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0) {
			if (fstatat(c->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
			    now.tv_sec - st.st_mtim.tv_sec > TMP_STALE_S)
				unlinkat(c->dfd, name, 0);
			continue;
		}
		if (strlen(name) != NAME_LEN || !is_entry_name(name))
			continue;
		if (fstatat(c->dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;

			nv = reallocarray(v, ncap, sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		v[n].mtime = st.st_mtim;
		v[n].size = (uint64_t)st.st_size;
		memcpy(v[n].name, name, NAME_LEN + 1);
		sum += v[n].size;
		n++;
	}
	closedir(d);
	if (rc == 0 && limit && sum > limit) {
		qsort(v, n, sizeof(*v), dfile_cmp);
		for (size_t i = 0; i < n && sum > limit; i++) {
			if (unlinkat(c->dfd, v[i].name, 0) == 0)
				(*nevicted)++;
			else if (errno != ENOENT)
				continue;
			sum -= v[i].size;
		}
	}
	free(v);
	*total = sum;
	return rc;
}

/* Run disk_scan unless another thread is at it, and account for it. */
static void disk_evict(struct jit_cache *c, bool force)
{
	uint64_t total = 0, nev = 0;
	bool go;
	int rc;

	pthread_mutex_lock(&c->lock);
	go = !c->evicting && (force || (c->disk_max && c->disk_bytes > c->disk_max));
	if (go)
		c->evicting = true;
	pthread_mutex_unlock(&c->lock);
	if (!go)
		return;
	rc = disk_scan(c, c->disk_max, &total, &nev);
	pthread_mutex_lock(&c->lock);
	if (rc == 0)
		c->disk_bytes = total;
	c->st.disk_evictions += nev;
	c->evicting = false;
	pthread_mutex_unlock(&c->lock);
}

/*
 * Delete what is at `name` when it is still what we looked at (seen, from
 * fstat of the open file or lstat of the name): a writer may have renamed
 * a good entry over it meanwhile. A directory goes only when empty.
 */
static void remove_bad(struct jit_cache *c, const char *name, const struct stat *seen)
{
	struct stat st;

	if (fstatat(c->dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (st.st_dev != seen->st_dev || st.st_ino != seen->st_ino)
		return;
	unlinkat(c->dfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
}

static ssize_t pread_all(int fd, void *buf, size_t n, off_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done, off + (off_t)done);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

static int write_all(int fd, const void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = write(fd, (const char *)buf + done, n - done);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

static bool header_ok(const unsigned char *h, const uint8_t *key, uint64_t payload)
{
	return memcmp(h, JIT_CACHE_MAGIC, 8) == 0 && get_le32(h + 8) == JIT_CACHE_VERSION && get_le32(h + 12) == 0 &&
	       get_le64(h + 16) == payload && memcmp(h + 24, key, JIT_CACHE_KEY_LEN) == 0;
}

/*
 * 0 and a malloc()ed payload, -ENOENT (miss; *corrupt when what was there
 * was bad, and deleted) or -ENOMEM.
 */
static int disk_read(struct jit_cache *c, const uint8_t *key, unsigned char **out, size_t *outlen, bool *corrupt)
{
	unsigned char hdr[JIT_CACHE_HDR_LEN], sum[SHA256_DIGEST_SIZE];
	char name[NAME_LEN + 1];
	unsigned char *buf = NULL;
	struct stat st;
	uint64_t payload;
	int fd, e;

	*corrupt = false;
	file_name(key, name);
	fd = openat(c->dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT || e == EMFILE || e == ENFILE || e == ENOMEM || e == EINTR)
			return -ENOENT; /* nothing there, or no resources now: a plain miss */
		/* ELOOP (a symbolic link), ENXIO (a socket), EACCES, ...: something bad in its place */
		if (fstatat(c->dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -ENOENT;
		if (S_ISREG(st.st_mode) && e != EACCES)
			return -ENOENT; /* replaced by a writer since */
		remove_bad(c, name, &st);
		*corrupt = true;
		return -ENOENT;
	}
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -ENOENT;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)JIT_CACHE_HDR_LEN ||
	    (uint64_t)st.st_size > (uint64_t)JIT_CACHE_HDR_LEN + JIT_CACHE_MAX_BLOB)
		goto bad;
	payload = (uint64_t)st.st_size - JIT_CACHE_HDR_LEN;
	if (pread_all(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) || !header_ok(hdr, key, payload))
		goto bad;
	buf = malloc(payload ? (size_t)payload : 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	if (pread_all(fd, buf, (size_t)payload, JIT_CACHE_HDR_LEN) != (ssize_t)payload)
		goto bad;
	sha256_of(buf, (size_t)payload, sum);
	if (memcmp(sum, hdr + 56, sizeof(sum)) != 0)
		goto bad;
	futimens(fd, NULL); /* recently used: last to go for disk_max_bytes */
	close(fd);
	*out = buf;
	*outlen = (size_t)payload;
	return 0;
bad:
	remove_bad(c, name, &st);
	close(fd);
	free(buf);
	*corrupt = true;
	return -ENOENT;
}

static int tmp_open(struct jit_cache *c, char name[TMP_NAME_MAX])
{
	for (int tries = 0; tries < 100; tries++) {
		uint64_t seq = __atomic_fetch_add(&c->tmp_seq, 1, __ATOMIC_RELAXED);
		uint64_t r = random_u64(mix64(c->seed ^ ((uint64_t)getpid() << 32) ^ seq));
		int fd;

		snprintf(name, TMP_NAME_MAX, TMP_PREFIX "%016llx", (unsigned long long)r);
		fd = openat(c->dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Write the entry file atomically; *replaced gets the size of the file it replaced, or 0. */
static int disk_write(struct jit_cache *c, const uint8_t *key, const void *blob, size_t len, uint64_t *replaced)
{
	unsigned char hdr[JIT_CACHE_HDR_LEN];
	char name[NAME_LEN + 1], tmp[TMP_NAME_MAX];
	struct stat st;
	int fd, rc;

	*replaced = 0;
	memcpy(hdr, JIT_CACHE_MAGIC, 8);
	put_le32(hdr + 8, JIT_CACHE_VERSION);
	put_le32(hdr + 12, 0);
	put_le64(hdr + 16, len);
	memcpy(hdr + 24, key, JIT_CACHE_KEY_LEN);
	sha256_of(blob, len, hdr + 56);
	file_name(key, name);

	fd = tmp_open(c, tmp);
	if (fd < 0)
		return fd;
	rc = write_all(fd, hdr, sizeof(hdr));
	if (rc == 0 && len)
		rc = write_all(fd, blob, len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0) {
		if (fstatat(c->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			*replaced = (uint64_t)st.st_size;
		if (renameat(c->dfd, tmp, c->dfd, name) < 0) {
			rc = -errno;
			*replaced = 0;
		}
	}
	if (rc < 0)
		unlinkat(c->dfd, tmp, 0);
	return rc;
}

static int disk_put(struct jit_cache *c, const uint8_t *key, const void *blob, size_t len)
{
	uint64_t size = (uint64_t)JIT_CACHE_HDR_LEN + len, replaced;
	int rc;

	if (c->disk_max && size > c->disk_max)
		return 0; /* would evict everything, itself included: not kept on disk */
	rc = disk_write(c, key, blob, len, &replaced);
	pthread_mutex_lock(&c->lock);
	if (rc < 0) {
		c->st.disk_errors++;
	} else {
		c->disk_bytes += size;
		c->disk_bytes -= replaced < c->disk_bytes ? replaced : c->disk_bytes;
	}
	pthread_mutex_unlock(&c->lock);
	if (rc == 0)
		disk_evict(c, false);
	return rc;
}

/* ---- the API ------------------------------------------------------------------ */

static int open_dir(struct jit_cache *c, const struct jit_cache_opts *o)
{
	struct stat st;
	int fd, rc;

	if (!*o->dir) {
		set_reason(o, "empty cache directory name");
		return -EINVAL;
	}
	if (mkdir(o->dir, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		set_reason(o, "cannot create %s: %s", o->dir, strerror(-rc));
		return rc;
	}
	/* a symbolic link to a directory is fine: what counts is the directory it names */
	fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ENOTDIR) {
			set_reason(o, "%s is not a directory", o->dir);
			return -EPERM;
		}
		set_reason(o, "cannot open %s: %s", o->dir, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		set_reason(o, "cannot stat %s: %s", o->dir, strerror(-rc));
		close(fd);
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		set_reason(o, "%s is not a directory", o->dir);
		rc = -EPERM;
	} else if (st.st_uid != geteuid()) {
		set_reason(o, "%s is owned by uid %u, not by uid %u", o->dir, (unsigned)st.st_uid, (unsigned)geteuid());
		rc = -EPERM;
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		set_reason(o, "%s is writable by its group or others (mode %04o)", o->dir,
			   (unsigned)(st.st_mode & 07777));
		rc = -EPERM;
	} else {
		c->dfd = fd;
		return 0;
	}
	close(fd);
	return rc;
}

int jit_cache_open(const struct jit_cache_opts *o, struct jit_cache **out)
{
	struct jit_cache *c;
	int rc;

	if (!o || !out) {
		set_reason(o, "invalid arguments");
		return -EINVAL;
	}
	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		set_reason(o, "out of memory");
		return -ENOMEM;
	}
	c->dfd = -1;
	c->nbuckets = MIN_BUCKETS;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		set_reason(o, "out of memory");
		return -ENOMEM;
	}
	rc = pthread_mutex_init(&c->lock, NULL);
	if (rc) {
		free(c->buckets);
		free(c);
		set_reason(o, "cannot create a mutex: %s", strerror(rc));
		return -rc;
	}
	c->lru.prev = c->lru.next = &c->lru;
	c->mem_on = o->mem_max_bytes && o->mem_max_entries;
	c->mem_max_bytes = o->mem_max_bytes;
	c->mem_max_entries = o->mem_max_entries;
	c->seed = random_u64(mix64((uint64_t)(uintptr_t)c ^ (uint64_t)time(NULL)));
	c->disk_max = o->disk_max_bytes;
	if (o->dir) {
		rc = open_dir(c, o);
		if (rc) {
			jit_cache_close(c);
			return rc;
		}
		disk_evict(c, true); /* count what is there; trim it to disk_max_bytes */
	}
	*out = c;
	return 0;
}

void jit_cache_close(struct jit_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nbuckets; i++)
		free_dead(c->buckets[i]);
	free(c->buckets);
	if (c->dfd >= 0)
		close(c->dfd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int jit_cache_get(struct jit_cache *c, const uint8_t key[JIT_CACHE_KEY_LEN], void **blob, size_t *len)
{
	struct entry *e, *dead = NULL;
	unsigned char *buf = NULL;
	size_t n = 0;
	bool corrupt = false;
	uint64_t h;
	int rc;

	if (!c || !key || !blob || !len)
		return -EINVAL;
	*blob = NULL;
	*len = 0;
	pthread_mutex_lock(&c->lock);
	h = key_hash(c, key);
	e = mem_find(c, key, h);
	if (e) {
		buf = malloc(e->len ? e->len : 1);
		if (!buf) {
			pthread_mutex_unlock(&c->lock);
			return -ENOMEM;
		}
		memcpy(buf, e->blob, e->len);
		n = e->len;
		lru_unlink(&e->lru);
		lru_push_front(c, &e->lru);
		c->st.mem_hits++;
		pthread_mutex_unlock(&c->lock);
		*blob = buf;
		*len = n;
		return 0;
	}
	if (c->dfd < 0) {
		c->st.misses++;
		pthread_mutex_unlock(&c->lock);
		return -ENOENT;
	}
	pthread_mutex_unlock(&c->lock);

	rc = disk_read(c, key, &buf, &n, &corrupt);
	e = rc == 0 && mem_fits(c, n) ? entry_new(key, h, buf, n) : NULL;
	pthread_mutex_lock(&c->lock);
	if (rc == 0) {
		c->st.disk_hits++;
		if (e)
			mem_insert(c, e, &dead);
	} else if (rc == -ENOENT) {
		c->st.misses++;
		if (corrupt)
			c->st.corrupt++;
	}
	pthread_mutex_unlock(&c->lock);
	free_dead(dead);
	if (rc < 0)
		return rc;
	*blob = buf;
	*len = n;
	return 0;
}

int jit_cache_put(struct jit_cache *c, const uint8_t key[JIT_CACHE_KEY_LEN], const void *blob, size_t len)
{
	struct entry *e = NULL, *old, *dead = NULL;
	int rc = 0;
	uint64_t h;

	if (!c || !key || (!blob && len))
		return -EINVAL;
	if (len > JIT_CACHE_MAX_BLOB)
		return -E2BIG;
	h = key_hash(c, key);
	if (mem_fits(c, len)) {
		e = entry_new(key, h, blob, len);
		if (!e)
			rc = -ENOMEM;
	}
	pthread_mutex_lock(&c->lock);
	c->st.puts++;
	if (e)
		mem_insert(c, e, &dead);
	else if ((old = mem_find(c, key, h))) /* too large now, or no memory: drop the old copy */
		mem_remove(c, old, &dead);
	pthread_mutex_unlock(&c->lock);
	free_dead(dead);
	if (c->dfd >= 0) {
		int drc = disk_put(c, key, blob, len);

		if (drc < 0)
			return drc;
		return 0; /* on disk: stored even when memory failed */
	}
	return rc;
}

void jit_cache_stats(struct jit_cache *c, struct jit_cache_stats *out)
{
	if (!out)
		return;
	if (!c) {
		memset(out, 0, sizeof(*out));
		return;
	}
	pthread_mutex_lock(&c->lock);
	*out = c->st;
	out->mem_bytes = c->mem_bytes;
	out->mem_entries = c->mem_entries;
	out->disk_bytes = c->disk_bytes;
	pthread_mutex_unlock(&c->lock);
}
