/* SPDX-License-Identifier: MIT */
/*
 * hostile_check: a tenant that abuses what oood handed it, and a victim that
 * times its own round trips, for tests/integration/test_hostile.sh (on the
 * stand-in driver) and the GPU machine.
 *
 *   hostile_check SOCK bells
 *       opens a session, attaches its data path (a memset and a sync), then
 *       abuses every doorbell descriptor it holds: an eventfd (the layout 1
 *       doorbells) is filled to its limit (0xfffffffffffffffe) and a socket
 *       (layout 2) gets the smallest receive buffer and is sent to until it
 *       is full; then O_NONBLOCK is cleared on each, so that any read or
 *       write of the same file description blocks. Prints "bells N" (the
 *       descriptors abused; 0 is a failure: nothing was found) and "ready",
 *       then reads lines on stdin:
 *         "sync"   a memset and a sync of its own, prints "sync: STATUS"
 *         "fault"  launches a kernel whose pointer is in the null page (a
 *                  fault on the GPU and on the stand-in), syncs, prints
 *                  "fault: STATUS"
 *       and exits 0 at the end of its input.
 *   hostile_check SOCK fault
 *       one launch of that faulting kernel and a sync; prints "fault: STATUS"
 *       (the status of the first call that failed: the attach when the
 *       tenant is barred) and the reason; exits 0 (the caller judges).
 *   hostile_check SOCK rounds N MAX_MS
 *       N round trips (a 4 KiB memset and a sync, each with a 10 s timeout),
 *       prints "rounds N max_ms M"; exits 1 if one failed or took more than
 *       MAX_MS.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "poke_ptx.h"

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static bool is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	return strstr(link, "eventfd") != NULL;
}

static bool is_stream_socket(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

/* Abuse one doorbell descriptor as the header says. Returns true if fd was one. */
static bool abuse(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return false;
	if (is_eventfd(fd)) {
		uint64_t v = 0xfffffffffffffffeull;

		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		(void)!read(fd, &v, sizeof(v)); /* from zero, */
		v = 0xfffffffffffffffeull;      /* to the most it holds */
		(void)!write(fd, &v, sizeof(v));
	} else if (is_stream_socket(fd)) {
		int one = 1;
		char junk[4096];

		memset(junk, 0x5a, sizeof(junk));
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &one, sizeof(one));
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		while (send(fd, junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
			;
	} else {
		return false;
	}
	return fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0;
}

static int abuse_all(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
			continue;
		n += abuse(fd);
	}
	closedir(d);
	return n;
}

static int round_trip(ooo_queue *q, ooo_buf *b)
{
	int r = ooo_memset(q, ooo_buf_addr(b), 0x5a5a5a5a, 1024, 4);

	return r ? r : ooo_queue_sync(q, 10000);
}

static int bells(const char *sock)
{
	uint32_t grid[3] = { 1, 1, 1 }, block[3] = { 32, 1, 1 };
	ooo_session *s = ooo_open(sock);
	ooo_queue *q = NULL;
	ooo_buf *b = NULL;
	ooo_module *m = NULL;
	ooo_kernel *k = NULL;
	char line[64];
	int r, n;

	if (!s || ooo_queue_create(s, NULL, &q) || ooo_buf_alloc(s, 4096, 0, &b) ||
	    ooo_module_load(s, OOO_PTX, poke_ptx, sizeof(poke_ptx) - 1, &m) || ooo_kernel_get(m, "poke", &k)) {
		printf("FAIL setup: %s\n", ooo_last_error());
		return 1;
	}
	if ((r = round_trip(q, b))) {
		printf("FAIL first round trip: %d (%s)\n", r, ooo_strerror(r));
		return 1;
	}
	n = abuse_all();
	printf("bells %d\nready\n", n);
	fflush(stdout);
	if (!n)
		return 1;
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "sync", 4)) {
			r = round_trip(q, b);
			printf("sync: %d\n", r);
		} else if (!strncmp(line, "fault", 5)) {
			uint64_t p = 0x10;

			r = ooo_launch(q, k, grid, block, 0, &p, sizeof(p));
			if (!r)
				r = ooo_queue_sync(q, 10000);
			printf("fault: %d\n", r);
		}
		fflush(stdout);
	}
	/* (on a session that died these fail at once; they free the handles: the sanitizers' leak check) */
	ooo_kernel_free(k);
	ooo_module_unload(m);
	ooo_buf_free(b);
	ooo_queue_destroy(q);
	ooo_close(s);
	return 0;
}

static int fault(const char *sock)
{
	uint32_t grid[3] = { 1, 1, 1 }, block[3] = { 32, 1, 1 };
	ooo_session *s = ooo_open(sock);
	ooo_queue *q = NULL;
	ooo_module *m = NULL;
	ooo_kernel *k = NULL;
	uint64_t p = 0x10;
	int r;

	if (!s) {
		printf("fault: %d %s\n", -errno, ooo_last_error());
		return 0;
	}
	r = ooo_queue_create(s, NULL, &q);
	if (!r)
		r = ooo_module_load(s, OOO_PTX, poke_ptx, sizeof(poke_ptx) - 1, &m);
	if (!r)
		r = ooo_kernel_get(m, "poke", &k);
	if (!r)
		r = ooo_launch(q, k, grid, block, 0, &p, sizeof(p));
	if (!r)
		r = ooo_queue_sync(q, 10000);
	printf("fault: %d %s\n", r, r ? ooo_last_error() : "");
	ooo_kernel_free(k);
	ooo_module_unload(m);
	ooo_queue_destroy(q);
	ooo_close(s);
	return 0;
}

static int rounds(const char *sock, int n, double max_ms)
{
	ooo_session *s = ooo_open(sock);
	ooo_queue *q = NULL;
	ooo_buf *b = NULL;
	double worst = 0;

	if (!s || ooo_queue_create(s, NULL, &q) || ooo_buf_alloc(s, 4096, 0, &b)) {
		printf("FAIL setup: %s\n", ooo_last_error());
		ooo_buf_free(b);
		ooo_queue_destroy(q);
		ooo_close(s);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		double t0 = now_ms();
		int r = round_trip(q, b);
		double t = now_ms() - t0;

		if (t > worst)
			worst = t;
		if (r) {
			printf("FAIL round %d: %d (%s) after %.1f ms\n", i, r, ooo_strerror(r), t);
			worst = -1;
			break;
		}
	}
	if (worst >= 0)
		printf("rounds %d max_ms %.1f\n", n, worst);
	ooo_buf_free(b);
	ooo_queue_destroy(q);
	ooo_close(s);
	return worst < 0 || worst > max_ms;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[2], "bells"))
		return bells(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "fault"))
		return fault(argv[1]);
	if (argc == 5 && !strcmp(argv[2], "rounds"))
		return rounds(argv[1], atoi(argv[3]), atof(argv[4]));
	fprintf(stderr, "usage: hostile_check SOCK bells | fault | rounds N MAX_MS\n");
	return 2;
}
