/* SPDX-License-Identifier: MIT */
/*
 * Reading /etc/ld.so.cache (glibc's "glibc-ld.so.cache1.1" format, alone or
 * after the old "ld.so-1.7.0" block) to find where the dynamic linker would
 * load a library from, without loading it. Pure: works on a buffer.
 */
#ifndef OOO_LDCACHE_H
#define OOO_LDCACHE_H

#include <stddef.h>

#define LDCACHE_MAX_FILE (64u << 20) /* larger caches are refused */

/*
 * Paths of `name` (e.g. "libcuda.so.1") for this machine's ABI (x86-64
 * entries when built for x86-64), in cache order, into paths[0..max), each of
 * `cap` bytes. Returns how many were found (at most max), or -EINVAL when
 * buf is not a cache file, -EBADMSG when it is truncated or inconsistent.
 * A path that does not fit in cap is skipped.
 */
int ldcache_find(const void *buf, size_t len, const char *name, char (*paths)[256], int max);

#endif
