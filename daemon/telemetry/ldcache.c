/* SPDX-License-Identifier: MIT */
/* ld.so.cache lookups: see ldcache.h. Every offset read from the file is checked. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ldcache.h"

#define OLD_MAGIC "ld.so-1.7.0"
#define NEW_MAGIC "glibc-ld.so.cache1.1"
#define OLD_HDR 16u   /* char magic[11], padding, uint32 nlibs (struct cache_file) */
#define OLD_ENTRY 12u /* int32 flags, uint32 key, uint32 value */
#define NEW_HDR 48u   /* magic[20], nlibs, len_strings, flags[4], extension_offset, unused[3] */
#define NEW_ENTRY 24u /* int32 flags, uint32 key, value, osversion, uint64 hwcap */

#define FLAG_TYPE_MASK 0x00ffu
#define FLAG_ELF_LIBC6 0x0003u
#define FLAG_ARCH_MASK 0xff00u
#define FLAG_X8664_LIB64 0x0300u

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The NUL-terminated string at offset `off` of [base, base + n), or NULL. */
static const char *str_at(const unsigned char *base, size_t n, uint32_t off)
{
	if (off >= n || !memchr(base + off, '\0', n - off))
		return NULL;
	return (const char *)base + off;
}

static int abi_ok(uint32_t flags)
{
	if ((flags & FLAG_TYPE_MASK) != FLAG_ELF_LIBC6)
		return 0;
#if defined(__x86_64__)
	return (flags & FLAG_ARCH_MASK) == FLAG_X8664_LIB64;
#else
	return (flags & FLAG_ARCH_MASK) == 0;
#endif
}

int ldcache_find(const void *buf, size_t len, const char *name, char (*paths)[256], int max)
{
	const unsigned char *b = buf, *h;
	size_t off = 0, avail;
	uint32_t nlibs;
	int found = 0;

	if (!buf || !name || max < 0 || len > LDCACHE_MAX_FILE)
		return -EINVAL;
	if (len >= sizeof(OLD_MAGIC) - 1 && !memcmp(b, OLD_MAGIC, sizeof(OLD_MAGIC) - 1)) {
		/* old block first: magic[11], padding to 12, nlibs, then nlibs entries from 16,
		 * then the new header aligned to 8 */
		if (len < OLD_HDR)
			return -EBADMSG;
		nlibs = rd32(b + 12);
		if (nlibs > (len - OLD_HDR) / OLD_ENTRY)
			return -EBADMSG;
		off = OLD_HDR + (size_t)nlibs * OLD_ENTRY;
		off = (off + 7) & ~(size_t)7;
		if (off > len)
			return -EBADMSG;
	}
	avail = len - off;
	h = b + off;
	if (avail < NEW_HDR || memcmp(h, NEW_MAGIC, sizeof(NEW_MAGIC) - 1))
		return off ? -EBADMSG : -EINVAL;
	nlibs = rd32(h + 20);
	if (nlibs > (avail - NEW_HDR) / NEW_ENTRY)
		return -EBADMSG;
	/* string offsets are relative to the new header */
	for (uint32_t i = 0; i < nlibs && found < max; i++) {
		const unsigned char *e = h + NEW_HDR + (size_t)i * NEW_ENTRY;
		const char *key = str_at(h, avail, rd32(e + 4));
		const char *val = str_at(h, avail, rd32(e + 8));
		size_t vl;

		if (!key || !val)
			return -EBADMSG;
		if (strcmp(key, name) || !abi_ok(rd32(e)))
			continue;
		vl = strlen(val);
		if (vl >= sizeof(paths[0]) || val[0] != '/')
			continue;
		memcpy(paths[found], val, vl + 1);
		found++;
	}
	return found;
}
