/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for daemon/policy/cgroup.c: the text of /proc/PID/cgroup
 * and the cgroup paths in it are chosen, byte for byte, by whoever may name
 * cgroups (a delegated subtree; newlines included). The input is a
 * /proc/PID/cgroup text for cgroup_parse_proc, and its bytes up to the first
 * NUL a path for cgroup_pod_uid and cgroup_tenant_key.
 *
 * Aborts when
 *   - a result is not one the function documents, or out is not "" on error;
 *   - cgroup_parse_proc accepts a text that does not end with '\n', holds a
 *     NUL or more than one line starting "0::", or yields a path that does
 *     not start with '/', holds a '\n', or is not the text's last line;
 *   - cgroup_pod_uid yields a UID that is not 1..64 of [0-9a-f-], or one
 *     that a smaller buffer would take;
 *   - cgroup_tenant_key is not "" under tenant_by = uid, or disagrees with
 *     cgroup_pod_uid and the path under pod and cgroup;
 *   - cgroup_key_display writes past its field, leaves it unterminated or
 *     with a byte outside printable ASCII.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/policy/cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[CGROUP_PROC_MAX + 1], out[CGROUP_PATH_MAX], key[CGROUP_PATH_MAX];

static void check_proc(const char *text, size_t len)
{
	int r = cgroup_parse_proc(text, len, out, sizeof(out)), v2 = 0;

	if (r < 0) {
		if ((r != -EINVAL && r != -ENAMETOOLONG) || out[0])
			abort();
		return;
	}
	if (!len || text[len - 1] != '\n' || memchr(text, '\0', len))
		abort();
	for (size_t i = 0; i + 3 <= len; i++) {
		if ((i == 0 || text[i - 1] == '\n') && !memcmp(text + i, "0::", 3))
			v2++;
	}
	if (v2 != 1 || out[0] != '/' || strchr(out, '\n') || (size_t)r != strlen(out))
		abort();
	/* the last line, "0::" and the path */
	if ((size_t)r + 4 > len || memcmp(text + len - 1 - r, out, (size_t)r) || memcmp(text + len - 4 - r, "0::", 3))
		abort();
	if (len - 4 - (size_t)r && text[len - 5 - r] != '\n')
		abort();
	/* a buffer one byte short */
	if (cgroup_parse_proc(text, len, key, (size_t)r) != -ENAMETOOLONG || ((size_t)r && key[0]))
		abort();
}

static void check_path(const char *p)
{
	char uid[CGROUP_POD_UID_MAX], small[CGROUP_POD_UID_MAX];
	int r = cgroup_pod_uid(p, uid, sizeof(uid)), k;

	if (r < 0) {
		if (r != -ENOENT || uid[0])
			abort();
	} else {
		if (r < 1 || r >= CGROUP_POD_UID_MAX || (size_t)r != strlen(uid) || strspn(uid, "0123456789abcdef-") != (size_t)r)
			abort();
		if (cgroup_pod_uid(p, small, (size_t)r) != -ENAMETOOLONG || (r && small[0]))
			abort();
		if (cgroup_pod_uid(p, small, (size_t)r + 1) != r || strcmp(small, uid))
			abort();
	}
	if (cgroup_tenant_key(CGROUP_BY_UID, p, key, sizeof(key)) != 0 || key[0])
		abort();
	k = cgroup_tenant_key(CGROUP_BY_POD, p, key, sizeof(key));
	if (r >= 0 ? (k != r || strcmp(key, uid)) : (k != 0 || key[0]))
		abort();
	k = cgroup_tenant_key(CGROUP_BY_CGROUP, p, key, sizeof(key));
	if (r >= 0) {
		if (k != r || strcmp(key, uid))
			abort();
	} else if (!p[0]) {
		if (k != 0 || key[0])
			abort();
	} else if (strlen(p) >= sizeof(key)) {
		if (k != -ENAMETOOLONG || key[0])
			abort();
	} else if (k != (int)strlen(p) || strcmp(key, p)) {
		abort();
	}
	for (size_t cap = 8; cap <= 40; cap += 16) {
		char field[48];

		memset(field, 0x5a, sizeof(field));
		cgroup_key_display(field, cap, p);
		if (strnlen(field, cap) == cap || field[cap] != 0x5a)
			abort();
		for (const char *c = field; *c; c++) {
			if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = size < CGROUP_PROC_MAX ? size : CGROUP_PROC_MAX;

	check_proc((const char *)data, n);
	memcpy(path, data, n);
	path[n] = '\0';
	check_path(path);
	return 0;
}
