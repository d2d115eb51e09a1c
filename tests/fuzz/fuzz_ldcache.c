/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for daemon/ldcache.c, which reads /etc/ld.so.cache as
 * root. The input is the file; the name looked up is "libcuda.so.1" and,
 * from the first byte, sometimes a name taken from the input itself.
 *
 * Aborts when
 *   - a found path is not NUL-terminated inside its slot, is not absolute,
 *     or does not occur in the input (it must be a copy of a cache string);
 *   - more paths are reported than there is room for;
 *   - the result is neither a count nor -EINVAL / -EBADMSG.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/telemetry/ldcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *data, size_t size, const char *name)
{
	char paths[4][256];
	int n;

	memset(paths, 0x5a, sizeof(paths));
	n = ldcache_find(data, size, name, paths, 4);
	if (n < 0) {
		if (n != -EINVAL && n != -EBADMSG)
			abort();
		return;
	}
	if (n > 4)
		abort();
	for (int i = 0; i < n; i++) {
		size_t l = strnlen(paths[i], sizeof(paths[i]));

		if (l == sizeof(paths[i]) || paths[i][0] != '/' || !memmem(data, size, paths[i], l + 1))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[32];

	check(data, size, "libcuda.so.1");
	if (size > 2 && data[0] < 16) {
		size_t l = data[1] % sizeof(name);

		if (l + 2 <= size) {
			memcpy(name, data + 2, l);
			name[l] = '\0';
			check(data, size, name);
		}
	}
	return 0;
}
