/* SPDX-License-Identifier: MIT */
/*
 * A peer's cgroup v2 path, and the tenant key taken from it: pure text
 * functions (no I/O), for the policy (match_cgroup, tenant_by), the
 * registry and oood's reading of /proc/PID/cgroup (server.c). The text
 * they take comes from the kernel, but cgroup names are chosen by whoever
 * may create cgroups (a delegated subtree: any byte but '/' and NUL,
 * newlines included), so every function treats it as untrusted and is
 * fuzzed (tests/fuzz/fuzz_cgroup.c).
 */
#ifndef OOO_POLICY_CGROUP_H
#define OOO_POLICY_CGROUP_H

#include <stddef.h>

/* A cgroup path as the registry keeps it, with its NUL: PATH_MAX, the kernel's own bound on the line. */
#define CGROUP_PATH_MAX 4096
/* What oood reads of /proc/PID/cgroup at most: every hierarchy's line of a hybrid host, each up to a path. */
#define CGROUP_PROC_MAX (64 * 1024)
/* A pod UID as kubelet writes it (a UUID, or 32 hex digits for a static pod), with its NUL. */
#define CGROUP_POD_UID_MAX 65

/* How a class splits its peers into tenants (oood.conf tenant_by). */
enum cgroup_tenant_by {
	CGROUP_BY_UID = 0, /* (uid, class): every peer of a uid in the class shares one tenant (default) */
	CGROUP_BY_POD,     /* (uid, class, pod UID); peers outside a pod: (uid, class) */
	CGROUP_BY_CGROUP,  /* (uid, class, pod UID), else (uid, class, cgroup path) */
};

/*
 * The cgroup v2 path in the text of /proc/PID/cgroup (len bytes, the whole
 * file: the caller read to its end), into out (cap bytes, NUL-terminated).
 * The kernel writes one line per hierarchy, the v2 one ("0::PATH") last;
 * a cgroup name may hold a newline, so a name could fake a line. Accepted
 * only when the text ends with '\n', holds no NUL, its last line starts
 * "0::/" and no other line starts "0::": a name that fakes a v2 line
 * makes the text ambiguous, and it is refused rather than guessed.
 * Returns the path's length, or -EINVAL (not such a text: no v2 line,
 * ambiguous, truncated), -ENAMETOOLONG (the path does not fit in cap).
 * out is "" on error (when cap > 0).
 */
int cgroup_parse_proc(const char *text, size_t len, char *out, size_t cap);

/*
 * The UID of the Kubernetes pod whose cgroup holds path, into out (cap
 * bytes), or -ENOENT if path is in no pod's cgroup. kubelet names a pod's
 * cgroup "kubepods[-QOS]-pod<UID>.slice" (systemd driver; '-' in the UID
 * written '_'), or "pod<UID>" (cgroupfs driver) below a component whose
 * name starts with "kubepods". The deepest such component counts (a
 * node inside a pod: kind). The UID is given with '_' as '-', in lower
 * case: 1 to 64 of hex digits and '-'. Returns its length, -ENOENT, or
 * -ENAMETOOLONG (cap too small). out is "" on error (when cap > 0).
 */
int cgroup_pod_uid(const char *path, char *out, size_t cap);

/*
 * The tenant key of a peer in cgroup path ("" or NULL: unknown) under
 * tenant_by `by`, into out (cap bytes): "" for CGROUP_BY_UID, an unknown
 * cgroup, or a peer in no pod under CGROUP_BY_POD; the pod UID; or for
 * CGROUP_BY_CGROUP outside a pod, the path itself (which starts with
 * '/', a pod UID never does). Returns its length, or -ENAMETOOLONG
 * (out is then "").
 */
int cgroup_tenant_key(int by, const char *path, char *out, size_t cap);

/*
 * A key shortened for a fixed field of cap bytes (cap >= 8): the key if it
 * fits, else "..." and its last cap - 4 bytes (the end of a cgroup path
 * says the most). Bytes outside printable ASCII become '?'.
 */
void cgroup_key_display(char *dst, size_t cap, const char *key);

/* The name of a tenant_by value ("uid", "pod", "cgroup"). */
const char *cgroup_tenant_by_name(int by);

#endif
