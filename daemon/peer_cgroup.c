/* SPDX-License-Identifier: MIT */
/*
 * A connecting process's cgroup, through its pidfd (peer_cgroup.h).
 *
 * Why it names the connector and no other process: SO_PEERPIDFD gives a
 * pidfd of the process that called connect(), which stays that process's
 * even after it exits. Its pid, in the pid namespace of our /proc, is the
 * "Pid:" line of /proc/self/fdinfo/PIDFD: -1 once the process has been
 * reaped (0 if it has no pid in our namespace). The steps:
 *
 *   1. P = the pidfd's Pid (must be > 0);
 *   2. open the directory /proc/P;
 *   3. the pidfd's Pid again, which must still be P;
 *   4. read "cgroup" through the directory opened in 2.
 *
 * A pid number is not given to another process while the process that
 * holds it is not reaped. Step 3 seeing P means the pidfd's process held
 * P from step 1 to step 3 (a reaped process never gets its pid back), so
 * the /proc/P opened in 2, between them, was that process's directory. A
 * directory of /proc/P stays bound to the process it was opened for:
 * once that process is gone, files opened through it fail (ESRCH, ENOENT)
 * rather than show a later holder of P. So step 4 reads the connector's
 * cgroup, or fails. What it reads is the cgroup when oood accepted the
 * connection, not at connect(): a process that may move itself between
 * cgroups could as well have moved before connecting.
 */
#include "peer_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy/cgroup.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* Up to cap - 1 bytes of the file at dirfd/path (AT_FDCWD: absolute), NUL-terminated; the length or -errno. */
static ssize_t read_small(int dirfd, const char *path, char *buf, size_t cap)
{
	size_t n = 0;
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	while (n < cap - 1) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return (ssize_t)n;
}

/* The pid of the pidfd's process in our /proc's namespace: > 0, 0 (none there), -1 (reaped), or -errno. */
static long pidfd_pid(int pidfd)
{
	char path[48], buf[512], *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	n = read_small(AT_FDCWD, path, buf, sizeof(buf));
	if (n < 0)
		return n;
	p = strstr(buf, "\nPid:");
	if (!p)
		return -ENOTSUP;
	return strtol(p + 5, NULL, 10);
}

int peer_cgroup_read(int sock, char *out, size_t cap)
{
	static char text[CGROUP_PROC_MAX + 2]; /* one byte more than accepted, to see a longer file */
	socklen_t len = sizeof(int);
	int pidfd = -1, dirfd = -1, r;
	char dir[32];
	long pid;
	ssize_t n;

	if (cap)
		out[0] = '\0';
	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		return errno == ENOPROTOOPT ? -ENOPROTOOPT : -errno;
	pid = pidfd_pid(pidfd);
	if (pid <= 0) {
		r = pid < 0 && pid != -1 ? (int)pid : -ESRCH;
		goto out;
	}
	snprintf(dir, sizeof(dir), "/proc/%ld", pid);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		r = errno == ENOENT ? -ESRCH : -errno;
		goto out;
	}
	/* still the pidfd's process: so /proc/PID, opened before, is its directory */
	if (pidfd_pid(pidfd) != pid) {
		r = -ESRCH;
		goto out;
	}
	n = read_small(dirfd, "cgroup", text, sizeof(text));
	if (n < 0) {
		r = n == -ENOENT ? -ESRCH : (int)n;
		goto out;
	}
	if ((size_t)n > CGROUP_PROC_MAX) {
		r = -EFBIG;
		goto out;
	}
	r = cgroup_parse_proc(text, (size_t)n, out, cap);
out:
	if (dirfd >= 0)
		close(dirfd);
	close(pidfd);
	return r;
}
