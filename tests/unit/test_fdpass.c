/* SPDX-License-Identifier: MIT */
/* Unit tests of descriptor passing (proto/fdpass.c) over a real socket pair. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../proto/fdpass.h"

/* Send one byte with nfds copies of fd over sv[0]; returns sendmsg's result. */
static ssize_t send_with(int s, const int *fds, int nfds)
{
	char byte = 'x';
	struct iovec iov = { &byte, 1 };
	union {
		struct cmsghdr align;
		char b[FDPASS_SPACE(FDPASS_MAX)];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	assert_int_equal(fdpass_pack(&mh, u.b, sizeof(u.b), fds, nfds), 0);
	if (!nfds)
		assert_null(mh.msg_control);
	return sendmsg(s, &mh, 0);
}

/* Receive one message from s with room for 16 descriptors; returns what fdpass_take returns. */
static unsigned recv_take(int s, int *fds, unsigned keep)
{
	char byte;
	struct iovec iov = { &byte, 1 };
	union {
		struct cmsghdr align;
		char b[FDPASS_SPACE(16)];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b) };

	assert_int_equal(recvmsg(s, &mh, MSG_CMSG_CLOEXEC), 1);
	return fdpass_take(&mh, fds, keep);
}

static int open_count(void)
{
	int n = 0;

	for (int fd = 0; fd < 256; n += fcntl(fd, F_GETFD) >= 0, fd++)
		;
	return n;
}

static void test_roundtrip(void **state)
{
	int sv[2], p[2], got[FDPASS_MAX];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe(p), 0);
	for (int n = 0; n <= FDPASS_MAX; n++) {
		int fds[FDPASS_MAX] = { p[1], p[1], p[1], p[1] };

		assert_int_equal(send_with(sv[0], fds, n), 1);
		assert_int_equal(recv_take(sv[1], got, FDPASS_MAX), (unsigned)n);
		for (int i = 0; i < FDPASS_MAX; i++) {
			if (i >= n) {
				assert_int_equal(got[i], -1);
				continue;
			}
			/* a new descriptor of the same pipe end: it writes into p[0] */
			assert_int_not_equal(got[i], p[1]);
			assert_int_equal(write(got[i], "y", 1), 1);
			assert_int_equal(close(got[i]), 0);
		}
		for (int i = 0; i < n; i++) {
			char c;
			assert_int_equal(read(p[0], &c, 1), 1);
		}
	}
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}

static void test_keep_fewer_closes_rest(void **state)
{
	int sv[2], p[2], keep = -2, before;
	int fds[FDPASS_MAX];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe(p), 0);
	for (int i = 0; i < FDPASS_MAX; i++)
		fds[i] = p[1];
	before = open_count();
	assert_int_equal(send_with(sv[0], fds, FDPASS_MAX), 1);
	/* four came, one kept: the other three are closed, none leaks */
	assert_int_equal(recv_take(sv[1], &keep, 1), FDPASS_MAX);
	assert_true(keep >= 0);
	assert_int_equal(open_count(), before + 1);
	close(keep);
	/* keep 0: a count of what came, everything closed */
	assert_int_equal(send_with(sv[0], fds, 2), 1);
	assert_int_equal(recv_take(sv[1], NULL, 0), 2);
	assert_int_equal(open_count(), before);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}

static void test_bad_counts(void **state)
{
	struct msghdr mh = { 0 };
	char small[FDPASS_SPACE(1)];
	int fds[FDPASS_MAX + 1] = { 0 };

	(void)state;
	assert_int_equal(fdpass_pack(&mh, small, sizeof(small), fds, FDPASS_MAX + 1), -EINVAL);
	assert_int_equal(fdpass_pack(&mh, small, sizeof(small), fds, -1), -EINVAL);
	/* three do not fit in a buffer for one (two may: CMSG_SPACE rounds up to 8 bytes) */
	assert_int_equal(fdpass_pack(&mh, small, sizeof(small), fds, 3), -EINVAL);
	assert_null(mh.msg_control);
	/* no control data at all: nothing came */
	assert_int_equal(fdpass_take(&mh, fds, 2), 0);
	assert_int_equal(fds[0], -1);
	assert_int_equal(fds[1], -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_keep_fewer_closes_rest),
		cmocka_unit_test(test_bad_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
