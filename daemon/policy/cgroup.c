/* SPDX-License-Identifier: MIT */
/* A peer's cgroup v2 path and the tenant key taken from it (cgroup.h). Pure: text in, text out. */
#include "cgroup.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

int cgroup_parse_proc(const char *text, size_t len, char *out, size_t cap)
{
	const char *end, *last, *p;
	size_t n;

	if (cap)
		out[0] = '\0';
	if (!text || !len || text[len - 1] != '\n' || memchr(text, '\0', len))
		return -EINVAL;
	end = text + len - 1; /* the last line's '\n' */
	for (last = end; last > text && last[-1] != '\n'; last--)
		;
	if ((size_t)(end - last) < 4 || memcmp(last, "0::/", 4))
		return -EINVAL;
	/* every line before the last: none may be a v2 line too */
	for (p = text; p < last;) {
		const char *nl = memchr(p, '\n', (size_t)(last - p));

		if ((size_t)(last - p) >= 3 && !memcmp(p, "0::", 3))
			return -EINVAL;
		p = nl + 1; /* the line before `last` ends with the '\n' just before it */
	}
	p = last + 3;
	n = (size_t)(end - p);
	if (n + 1 > cap)
		return -ENAMETOOLONG;
	memcpy(out, p, n);
	out[n] = '\0';
	return (int)n;
}

/* The UID in s[0, n): kubelet's '_' read as '-', upper case as lower; false unless 1..64 of hex digits and '-'. */
static bool pod_uid(const char *s, size_t n, char *uid)
{
	if (!n || n >= CGROUP_POD_UID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '_')
			ch = '-';
		else if (ch >= 'A' && ch <= 'F')
			ch = (char)(ch - 'A' + 'a');
		if (!(ch >= '0' && ch <= '9') && !(ch >= 'a' && ch <= 'f') && ch != '-')
			return false;
		uid[i] = ch;
	}
	uid[n] = '\0';
	return true;
}

static bool starts(const char *s, size_t n, const char *pre)
{
	size_t l = strlen(pre);

	return n >= l && !memcmp(s, pre, l);
}

/*
 * The UID of a pod cgroup's name s[0, n) in either driver's form, into uid;
 * false if it is not one. The cgroupfs form counts only below_kubepods.
 */
static bool pod_component(const char *s, size_t n, bool below_kubepods, char *uid)
{
	static const char slice[] = ".slice";
	size_t sl = sizeof(slice) - 1;

	/* systemd: kubepods[-QOS]-pod<UID>.slice, the UID after the last "-pod" */
	if (starts(s, n, "kubepods") && n > sl && !memcmp(s + n - sl, slice, sl)) {
		for (size_t i = n - sl; i >= 4; i--) {
			if (!memcmp(s + i - 4, "-pod", 4))
				return pod_uid(s + i, n - sl - i, uid);
		}
		return false;
	}
	/* cgroupfs: pod<UID> */
	return below_kubepods && starts(s, n, "pod") && pod_uid(s + 3, n - 3, uid);
}

int cgroup_pod_uid(const char *path, char *out, size_t cap)
{
	char uid[CGROUP_POD_UID_MAX], found[CGROUP_POD_UID_MAX];
	bool below_kubepods = false, any = false;
	const char *p = path;
	size_t n;

	if (cap)
		out[0] = '\0';
	if (!path)
		return -ENOENT;
	while (*p) {
		const char *s;

		while (*p == '/')
			p++;
		s = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - s);
		if (!n)
			break;
		/* "pod<UID>" only below kubelet's cgroup: a name that common may be anything elsewhere */
		if (pod_component(s, n, below_kubepods, uid)) {
			memcpy(found, uid, strlen(uid) + 1);
			any = true;
		}
		if (starts(s, n, "kubepods"))
			below_kubepods = true;
	}
	if (!any)
		return -ENOENT;
	n = strlen(found);
	if (n + 1 > cap)
		return -ENAMETOOLONG;
	memcpy(out, found, n + 1);
	return (int)n;
}

int cgroup_tenant_key(int by, const char *path, char *out, size_t cap)
{
	size_t n;
	int r;

	if (cap)
		out[0] = '\0';
	if (by == CGROUP_BY_UID || !path || !path[0])
		return 0;
	r = cgroup_pod_uid(path, out, cap);
	if (r != -ENOENT)
		return r;
	if (by == CGROUP_BY_POD)
		return 0;
	n = strlen(path);
	if (n + 1 > cap)
		return -ENAMETOOLONG;
	memcpy(out, path, n + 1);
	return (int)n;
}

void cgroup_key_display(char *dst, size_t cap, const char *key)
{
	size_t n = key ? strlen(key) : 0;

	if (!cap)
		return;
	if (n < cap) {
		memcpy(dst, key ? key : "", n + 1);
	} else {
		size_t keep = cap - 4;

		memcpy(dst, "...", 3);
		memcpy(dst + 3, key + n - keep, keep);
		dst[cap - 1] = '\0';
	}
	for (char *s = dst; *s; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
	}
}

const char *cgroup_tenant_by_name(int by)
{
	return by == CGROUP_BY_POD ? "pod" : by == CGROUP_BY_CGROUP ? "cgroup" : "uid";
}
