/* SPDX-License-Identifier: MIT */
/*
 * The cgroup v2 path of the process that connected on a unix socket, read
 * through its pidfd (SO_PEERPIDFD), never through a pid alone: a pid read
 * from SO_PEERCRED may have been reused by the time oood looks. For
 * match_cgroup and tenant_by (docs/architecture.md, "Tenants in cgroups").
 */
#ifndef OOO_PEER_CGROUP_H
#define OOO_PEER_CGROUP_H

#include <stddef.h>

/*
 * Read the cgroup v2 path of sock's connecting process into out (cap
 * bytes; "" on error). Returns its length, or:
 *  -ENOPROTOOPT  the kernel has no SO_PEERPIDFD (before Linux 6.5);
 *  -ESRCH        the process has exited, or has no pid in oood's pid
 *                namespace;
 *  -EFBIG        /proc/PID/cgroup is over CGROUP_PROC_MAX bytes;
 *  -EINVAL, -ENAMETOOLONG  what cgroup_parse_proc says of its text;
 *  another -errno of a read of /proc.
 * Only kernel-generated files are read (/proc/self/fdinfo, /proc/PID),
 * each at most CGROUP_PROC_MAX bytes: nothing a tenant controls can make
 * it block. Not reentrant (one static buffer): oood's loop only.
 */
int peer_cgroup_read(int sock, char *out, size_t cap);

#endif
