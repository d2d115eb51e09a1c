/* SPDX-License-Identifier: MIT */
#include "notify.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

int notify_send(const char *state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = getenv("NOTIFY_SOCKET");
	size_t n;
	ssize_t r;
	int fd;

	if (!path || !*path)
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	r = sendto(fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
	r = r < 0 ? -errno : 1;
	close(fd);
	return (int)r;
}

/* A decimal number without sign, spaces or overflow. */
static int parse_u64(const char *s, uint64_t *v)
{
	uint64_t x = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = x;
	return 0;
}

int notify_watchdog_parse(const char *usec, const char *pid, pid_t self, uint64_t *usec_out)
{
	uint64_t u, p;

	if (!usec)
		return 0;
	if (parse_u64(usec, &u) < 0 || u == 0 || u == UINT64_MAX)
		return -EINVAL;
	if (pid) {
		if (parse_u64(pid, &p) < 0 || p == 0 || p > INT32_MAX)
			return -EINVAL;
		if ((pid_t)p != self)
			return 0;
	}
	*usec_out = u;
	return 1;
}
