/* SPDX-License-Identifier: MIT */
/* Unit tests of the shared-memory rings, including two processes over a memfd. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../proto/ring.h"

#define AREA (1u << 20)

static void *area(void)
{
	void *p = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	return p;
}

static void test_layout(void **state)
{
	void *a = area();
	struct ooo_shm_hdr h, copy;

	assert_int_equal(ring_layout(a, AREA, 256, 512, &h), 0);
	memcpy(&copy, a, sizeof(copy));
	assert_memory_equal(&copy, &h, sizeof(h));
	assert_int_equal(ring_check_hdr(&copy, AREA), 0);
	assert_true(h.sq_off >= h.cq_ctl_off + sizeof(struct ooo_ring_ctl));
	assert_true(h.cq_off >= h.sq_off + 256 * sizeof(struct ooo_sqe));
	assert_true(h.staging_off >= h.cq_off + 512 * sizeof(struct ooo_cqe));
	assert_int_equal(h.staging_off % 4096, 0);
	assert_int_equal(h.staging_off + h.staging_size, AREA);
	/* bad shapes */
	assert_int_equal(ring_layout(a, AREA, 100, 512, NULL), -EINVAL);
	assert_int_equal(ring_layout(a, AREA, 0, 512, NULL), -EINVAL);
	assert_int_equal(ring_layout(a, 8192, 256, 512, NULL), -ENOSPC);
	/* a tampered header is refused */
	copy.size = AREA * 2;
	assert_int_equal(ring_check_hdr(&copy, AREA), -EPROTO);
	copy = h;
	copy.staging_size += 1;
	assert_int_equal(ring_check_hdr(&copy, AREA), -EPROTO);
	copy = h;
	copy.sq_entries = 3;
	assert_int_equal(ring_check_hdr(&copy, AREA), -EPROTO);
	copy = h;
	copy.cq_off = AREA - 8;
	assert_int_equal(ring_check_hdr(&copy, AREA), -EPROTO);
	munmap(a, AREA);
}

static void test_fill_drain_wrap(void **state)
{
	void *a = area();
	struct ooo_shm_hdr h;
	struct ring p, c;
	struct ooo_sqe e, out;
	uint64_t next = 0, seen = 0;

	assert_int_equal(ring_layout(a, AREA, 8, 8, &h), 0);
	assert_int_equal(ring_init(&p, a, AREA, h.sq_ctl_off, h.sq_off, 8, sizeof(e), -1, true), 0);
	assert_int_equal(ring_init(&c, a, AREA, h.sq_ctl_off, h.sq_off, 8, sizeof(e), -1, false), 0);
	assert_int_equal(ring_pop(&c, &out), 0);
	/* many laps: indices wrap the ring many times */
	for (int round = 0; round < 1000; round++) {
		int k = round % 9; /* 0..8 entries per round */
		for (int i = 0; i < k; i++) {
			struct ooo_sqe *slot = ring_reserve(&p);
			assert_non_null(slot);
			memset(&e, 0, sizeof(e));
			e.user_data = next++;
			memcpy(slot, &e, sizeof(e));
		}
		if (k == 8)
			assert_null(ring_reserve(&p)); /* full */
		ring_publish(&p);
		assert_int_equal(ring_pending(&c), (uint32_t)k);
		for (int i = 0; i < k; i++) {
			assert_int_equal(ring_pop(&c, &out), 1);
			assert_int_equal(out.user_data, seen++);
		}
		assert_int_equal(ring_pop(&c, &out), 0);
		ring_release(&c);
	}
	assert_int_equal(seen, next);
	munmap(a, AREA);
}

static void test_full_until_released(void **state)
{
	void *a = area();
	struct ooo_shm_hdr h;
	struct ring p, c;
	struct ooo_cqe e;

	assert_int_equal(ring_layout(a, AREA, 4, 4, &h), 0);
	assert_int_equal(ring_init(&p, a, AREA, h.cq_ctl_off, h.cq_off, 4, sizeof(e), -1, true), 0);
	assert_int_equal(ring_init(&c, a, AREA, h.cq_ctl_off, h.cq_off, 4, sizeof(e), -1, false), 0);
	for (int i = 0; i < 4; i++)
		assert_non_null(ring_reserve(&p));
	ring_publish(&p);
	assert_null(ring_reserve(&p));
	assert_int_equal(ring_pop(&c, &e), 1);
	/* popped but not released: the producer still sees a full ring */
	assert_null(ring_reserve(&p));
	ring_release(&c);
	assert_non_null(ring_reserve(&p));
	munmap(a, AREA);
}

static void test_hostile_indices(void **state)
{
	void *a = area();
	struct ooo_shm_hdr h;
	struct ring p, c;
	struct ooo_sqe e;
	struct ooo_ring_ctl *ctl;

	assert_int_equal(ring_layout(a, AREA, 8, 8, &h), 0);
	ctl = (struct ooo_ring_ctl *)((char *)a + h.sq_ctl_off);
	assert_int_equal(ring_init(&c, a, AREA, h.sq_ctl_off, h.sq_off, 8, sizeof(e), -1, false), 0);
	/* a tail claiming more than the ring holds is refused, not read past */
	ctl->tail = 9;
	assert_int_equal(ring_pop(&c, &e), -EPROTO);
	assert_int_equal(ring_pending(&c), 0);
	ctl->tail = 0xfffffff0u;
	assert_int_equal(ring_pop(&c, &e), -EPROTO);
	/* a consumer head from the future never lets the producer overwrite */
	ctl->tail = 0;
	ctl->head = 0;
	assert_int_equal(ring_init(&p, a, AREA, h.sq_ctl_off, h.sq_off, 8, sizeof(e), -1, true), 0);
	for (int i = 0; i < 8; i++)
		assert_non_null(ring_reserve(&p));
	ring_publish(&p);
	ctl->head = 100;
	assert_null(ring_reserve(&p));
	/* ring_init refuses rings that do not fit */
	assert_int_equal(ring_init(&p, a, AREA, h.sq_ctl_off, AREA - 64, 8, sizeof(e), -1, true), -EINVAL);
	assert_int_equal(ring_init(&p, a, AREA, 3, h.sq_off, 8, sizeof(e), -1, true), -EINVAL);
	assert_int_equal(ring_init(&p, a, AREA, h.sq_ctl_off, h.sq_off, 6, sizeof(e), -1, true), -EINVAL);
	munmap(a, AREA);
}

/* Whether end fd was rung since the last look (and take the rings). */
static bool rung(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	if (poll(&pf, 1, 0) != 1)
		return false;
	assert_int_equal(doorbell_drain(fd), 1);
	return true;
}

static void test_doorbell_only_when_sleeping(void **state)
{
	void *a = area();
	struct ooo_shm_hdr h;
	struct ring p, c;
	struct ooo_sqe e;
	int bell[2];

	assert_int_equal(doorbell_pair(bell), 0);
	assert_int_equal(ring_layout(a, AREA, 8, 8, &h), 0);
	assert_int_equal(ring_init(&p, a, AREA, h.sq_ctl_off, h.sq_off, 8, sizeof(e), bell[0], true), 0);
	assert_int_equal(ring_init(&c, a, AREA, h.sq_ctl_off, h.sq_off, 8, sizeof(e), bell[1], false), 0);
	/* consumer busy: no system call, no doorbell */
	assert_non_null(ring_reserve(&p));
	assert_int_equal(ring_publish(&p), 0);
	assert_false(rung(bell[1]));
	/* entries present: the consumer does not go to sleep */
	assert_false(ring_sleep_prepare(&c));
	assert_int_equal(ring_pop(&c, &e), 1);
	ring_release(&c);
	/* empty: it announces sleep, and the next publish rings */
	assert_true(ring_sleep_prepare(&c));
	assert_non_null(ring_reserve(&p));
	assert_int_equal(ring_publish(&p), 1);
	assert_true(rung(bell[1]));
	ring_awake(&c);
	assert_int_equal(ring_publish(&p), 0);
	/*
	 * nothing new since the last publish: no store, but a sleeper is still
	 * rung (the executor's publish after taking launches, which post
	 * nothing, wakes a tenant waiting for room)
	 */
	assert_int_equal(ring_pop(&c, &e), 1);
	ring_release(&c);
	assert_true(ring_sleep_prepare(&c));
	{
		uint32_t tail = __atomic_load_n(&p.ctl->tail, __ATOMIC_RELAXED);

		__atomic_store_n(&p.ctl->tail, tail + 1000, __ATOMIC_RELAXED); /* a store would put it back */
		assert_int_equal(ring_publish(&p), 1);
		assert_int_equal(__atomic_load_n(&p.ctl->tail, __ATOMIC_RELAXED), tail + 1000);
		__atomic_store_n(&p.ctl->tail, tail, __ATOMIC_RELAXED);
	}
	assert_true(rung(bell[1]));
	ring_awake(&c);
	assert_true(ring_sleep_prepare(&c));
	/* and the next entry still rings */
	assert_non_null(ring_reserve(&p));
	assert_int_equal(ring_publish(&p), 1);
	assert_true(rung(bell[1]));
	assert_false(ring_sleep_prepare(&c));
	close(bell[0]);
	close(bell[1]);
	munmap(a, AREA);
}

/*
 * Two processes, as in production: a producer child sends N entries through
 * a small ring; the parent consumes, sleeping on the eventfd whenever the
 * ring is empty. Every entry arrives once, in order, and no wake-up is lost
 * (a lost one would hang: poll has a timeout that fails the test).
 */
static void test_two_processes(void **state)
{
	enum { N = 200000, ENTRIES = 16 };
	void *a = area();
	struct ooo_shm_hdr h;
	struct ring c;
	struct ooo_sqe e;
	int bell[2];
	uint64_t want = 0, sleeps = 0;
	pid_t pid;
	int st;

	assert_int_equal(doorbell_pair(bell), 0);
	assert_int_equal(ring_layout(a, AREA, ENTRIES, ENTRIES, &h), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ring p;

		if (ring_init(&p, a, AREA, h.sq_ctl_off, h.sq_off, ENTRIES, sizeof(e), bell[0], true))
			_exit(2);
		for (uint64_t i = 0; i < N;) {
			struct ooo_sqe *slot = ring_reserve(&p);
			if (!slot) {
				ring_publish(&p);
				sched_yield();
				continue;
			}
			memset(slot, 0, sizeof(*slot));
			slot->user_data = i++;
			if (i % 7 == 0)
				ring_publish(&p); /* publish in uneven batches */
		}
		ring_publish(&p);
		_exit(0);
	}
	assert_int_equal(ring_init(&c, a, AREA, h.sq_ctl_off, h.sq_off, ENTRIES, sizeof(e), bell[1], false), 0);
	while (want < N) {
		int r = ring_pop(&c, &e);

		assert_true(r >= 0);
		if (r == 1) {
			assert_int_equal(e.user_data, want);
			want++;
			if (want % 4 == 0)
				ring_release(&c);
			continue;
		}
		ring_release(&c);
		if (ring_sleep_prepare(&c)) {
			struct pollfd pf = { .fd = bell[1], .events = POLLIN };

			assert_int_equal(poll(&pf, 1, 10000), 1); /* a lost wake-up fails here */
			assert_int_equal(doorbell_drain(bell[1]), 1);
			ring_awake(&c);
			sleeps++;
		}
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(ring_pop(&c, &e), 0);
	print_message("two processes: %d entries, consumer slept %llu times\n", N, (unsigned long long)sleeps);
	close(bell[0]);
	close(bell[1]);
	munmap(a, AREA);
}

/*
 * A tenant owns its end of the doorbell and may do anything to it: clear
 * O_NONBLOCK on it, never read it, shrink its buffer, shut it down. Nothing
 * of that may make a ring or a drain on the other end block (oood and the
 * executor ring and drain with one thread for many tenants) or raise
 * SIGPIPE. With the eventfd doorbells of layout 1 (one file description for
 * all three processes) the tenant's fcntl made oood's write and the
 * executor's read block.
 */
static void test_doorbell_hostile_peer(void **state)
{
	int bell[2], flags, small = 1;
	struct sigaction sa = { .sa_handler = SIG_DFL }, old;

	/* a SIGPIPE would kill the test: default action on purpose */
	assert_int_equal(sigaction(SIGPIPE, &sa, &old), 0);
	assert_int_equal(doorbell_pair(bell), 0);
	/* the tenant (bell[0]) makes its end blocking and shrinks its receive buffer, then never reads */
	flags = fcntl(bell[0], F_GETFL);
	assert_int_equal(fcntl(bell[0], F_SETFL, flags & ~O_NONBLOCK), 0);
	assert_int_equal(setsockopt(bell[0], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	/* and our own end's flags too: the calls must not depend on them */
	flags = fcntl(bell[1], F_GETFL);
	assert_int_equal(fcntl(bell[1], F_SETFL, flags & ~O_NONBLOCK), 0);
	/* an empty end drains at once */
	assert_int_equal(doorbell_drain(bell[1]), 1);
	/* ringing a tenant that never reads: the socket fills, then every ring says "already rung" */
	{
		int full = 0;

		for (int i = 0; i < 100000 && !full; i++) {
			int r = doorbell_ring(bell[1]);

			assert_true(r == 0 || r == 1);
			full = r == 0;
		}
		assert_true(full);
		assert_int_equal(doorbell_ring(bell[1]), 0);
	}
	/* a tenant that rings without pause: a drain still returns */
	for (int i = 0; i < 50000 && doorbell_ring(bell[0]) == 1; i++)
		;
	assert_int_equal(doorbell_drain(bell[1]), 1);
	/* the tenant shuts its end down: the drain says so (stop waiting on it), a ring fails without SIGPIPE */
	assert_int_equal(shutdown(bell[0], SHUT_RDWR), 0);
	while (doorbell_drain(bell[1]) == 1)
		;
	assert_int_equal(doorbell_drain(bell[1]), 0);
	assert_true(doorbell_ring(bell[1]) < 0);
	close(bell[0]);
	close(bell[1]);
	assert_int_equal(sigaction(SIGPIPE, &old, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_fill_drain_wrap),
		cmocka_unit_test(test_full_until_released),
		cmocka_unit_test(test_hostile_indices),
		cmocka_unit_test(test_doorbell_only_when_sleeping),
		cmocka_unit_test(test_two_processes),
		cmocka_unit_test(test_doorbell_hostile_peer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
