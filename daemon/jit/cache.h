/* SPDX-License-Identifier: MIT */
/*
 * The fused-kernel cache of the JIT: blobs (a fused module, compiled or as
 * PTX) found by a 32-byte key (jit_fuse_key: a SHA-256 the caller computes).
 *
 * Two tiers. In memory, an LRU bounded by the total blob bytes and by the
 * number of entries (a hash table plus an intrusive list: O(1) per
 * operation). On disk, optionally, one file per key in a directory of the
 * caller's own: "<64 lowercase hex of the key>.bin", holding
 *
 *   off  0  magic "OOOJITC1"          (8 bytes)
 *   off  8  version 1                 (u32, little-endian)
 *   off 12  reserved, 0               (u32)
 *   off 16  payload length            (u64, little-endian)
 *   off 24  the key                   (32 bytes)
 *   off 56  SHA-256 of the payload    (32 bytes)
 *   off 88  the payload
 *
 * written to a temporary file of the same directory (0600), fsync()ed and
 * renamed over the final name, so that a reader, in this process or
 * another, sees a whole entry or none; several processes may share the
 * directory and write the same key. A file that is not a regular file, is
 * truncated, too long, or whose header, key or checksum is wrong, is a miss
 * and is deleted (a directory only when empty), so that the next put
 * rebuilds it. Symbolic links are never followed.
 *
 * Pure C, no CUDA. Thread-safe: one internal mutex, never held during disk
 * I/O. Functions return 0 or a negative errno.
 */
#ifndef OOO_JIT_CACHE_H
#define OOO_JIT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define JIT_CACHE_KEY_LEN 32u
#define JIT_CACHE_HDR_LEN 88u
#define JIT_CACHE_MAX_BLOB (256u << 20) /* larger blobs are refused (put) or corrupt (disk) */
#define JIT_CACHE_MAGIC "OOOJITC1"
#define JIT_CACHE_VERSION 1u

struct jit_cache_opts {
	/*
	 * Memory tier: LRU bound on the sum of the blob lengths, and on the
	 * number of entries. A blob longer than mem_max_bytes is not kept in
	 * memory (only on disk); either bound 0 turns the memory tier off.
	 */
	size_t mem_max_bytes;
	size_t mem_max_entries;
	/*
	 * Disk tier: NULL for memory only. Created 0700 if missing (its parent
	 * must exist); it must be a directory owned by the effective uid and
	 * not group- or world-writable, else jit_cache_open fails with -EPERM.
	 */
	const char *dir;
	/*
	 * 0: unlimited. Otherwise, when the entry files exceed it after a put
	 * (or at open), the oldest by mtime are deleted until they fit. A disk
	 * hit refreshes its file's mtime, so this is least recently used. An
	 * entry whose file alone exceeds it is not written. Files written by
	 * other processes are counted at open and at each eviction only.
	 */
	uint64_t disk_max_bytes;
	/* Optional: a one-line reason when jit_cache_open fails. */
	char *err;
	size_t errlen;
};

struct jit_cache;

struct jit_cache_stats {
	uint64_t mem_hits, disk_hits, misses, puts, evictions, corrupt;
	size_t mem_bytes, mem_entries;
	uint64_t disk_evictions; /* entry files deleted for disk_max_bytes */
	uint64_t disk_errors;    /* puts whose disk write failed */
	uint64_t disk_bytes;     /* entry files as this process counts them */
};

/* Errors: -EINVAL (o or out NULL), -EPERM (dir unsafe), -ENOMEM, or open/mkdir's errno. */
int jit_cache_open(const struct jit_cache_opts *o, struct jit_cache **out);
void jit_cache_close(struct jit_cache *c); /* accepts NULL */

/*
 * Memory first (the entry becomes the most recently used), then disk (a
 * disk hit is copied into memory when it fits). 0 and a malloc()ed copy
 * in *blob (non-NULL even for an empty blob) that the caller frees, or
 * -ENOENT (miss), -EINVAL, -ENOMEM.
 */
int jit_cache_get(struct jit_cache *c, const uint8_t key[JIT_CACHE_KEY_LEN], void **blob, size_t *len);

/*
 * Store a copy in memory (evicting the least recently used entries as
 * needed; replacing an entry of the same key) and, with a dir, on disk.
 * Errors: -EINVAL, -E2BIG (len > JIT_CACHE_MAX_BLOB), -ENOMEM (nothing
 * stored), or the errno of the disk write (the memory copy, if any, is
 * kept; the cache stays usable).
 */
int jit_cache_put(struct jit_cache *c, const uint8_t key[JIT_CACHE_KEY_LEN], const void *blob, size_t len);

void jit_cache_stats(struct jit_cache *c, struct jit_cache_stats *out);

/* The key as 64 lowercase hex digits and a NUL (the file name without ".bin"). */
void jit_cache_key_hex(const uint8_t key[JIT_CACHE_KEY_LEN], char out[2 * JIT_CACHE_KEY_LEN + 1]);

#endif
