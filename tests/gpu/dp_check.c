/* SPDX-License-Identifier: MIT */
/*
 * dp_check: the tenant data path on a real GPU, for tests/gpu.
 *   dp_check SOCK check          fill and read back (memset, htod, dtoh, dtod), bounds
 *                                and other-session refusals; prints "ok"
 *   dp_check SOCK reset          keeps a queue busy; prints "busy", waits for a line
 *                                (the executor is killed meanwhile), expects
 *                                OOO_EDEVRESET, then checks the queue works again
 *   dp_check SOCK lost           one session fills and reads back, prints "attached", waits for a
 *                                line (meanwhile its executor is replaced by one that refuses
 *                                to take the session back), then submits until something other
 *                                than OOO_EDEVRESET comes back: it must be OOO_ECLOSED with the
 *                                reason (the session was closed, not left at an odd epoch)
 *   dp_check SOCK bw LIBCUDA MB  H2D/D2H bandwidth through ooo and, in this process,
 *                                direct pinned cuMemcpy; prints one line per mode
 *   dp_check SOCK launches       8 sessions load one fusible PTX kernel and launch it 10
 *                                times a round, all sessions' launches before their syncs,
 *                                for 300 rounds: every launch accepted and every sync
 *                                clean (the results are not read: tests/fakecuda, where
 *                                this runs in CI, runs no kernel); prints "ok"
 *   dp_check SOCK refused        as launches (100 rounds), but session 0's 5th launch of each
 *                                round is marked 0x7e7e7e7e, which tests/fakecuda refuses
 *                                with FAKECUDA_REFUSE=1 (as it refuses every fused launch):
 *                                session 0's syncs get -EIO, every other sync is clean
 *   dp_check SOCK shapes         one session launches one fusible kernel in 9 block shapes,
 *                                then the 9th again, another session in a 10th shape: the
 *                                first can add 8 of the class's shapes, so its 9th shape's two
 *                                launches go unfused (test_fakecuda.sh counts them); prints "ok"
 *   dp_check SOCK order [noresults]  8 sessions launch two order-sensitive kernels (v + 1,
 *                                2 v + 1) in patterns of different periods, 12 each a round
 *                                for 200 rounds, so that bundles gather queues whose previous
 *                                launch ran on other streams of the coalescer; every word
 *                                must come out as its queue's launches in order make it
 *                                (noresults: tests/fakecuda, which runs no kernel)
 *   dp_check SOCK copies         8 threads, a session each, 400 rounds at once of small copies
 *                                (1 byte .. 70 KiB, any alignment: what the executor runs as
 *                                launches of its copy kernel, fused across sessions): htod from
 *                                ordinary memory or from ooo_host_alloc memory, dtod within the
 *                                buffer, dtoh back, each result compared byte for byte with
 *                                the host's own copy
 *   dp_check SOCK prio           8 sessions for 200 rounds: 4 with the class's priority
 *                                launch k0, 4 with priority 10 launch k1 (two fusion
 *                                classes, so each kernel's bundles hold one kind of
 *                                queue), 10 each a round, then their syncs: every
 *                                launch and sync clean; prints each queue's priority
 *                                (tests/fakecuda, with the class at 99, checks the
 *                                CUDA stream priorities the fused launches ran at)
 *   dp_check SOCK crowd N        N sessions (up to 4096) each with a queue and a buffer; then
 *                                rounds of a pause (the executor goes to sleep) and a
 *                                memset + sync in the last session, then the first: each sync
 *                                must complete within 500 ms (an executor that sleeps without
 *                                some sessions' doorbells leaves them waiting, for seconds
 *                                or for ever); prints "ok"
 *                                with the slowest sync, or exits 77 when RLIMIT_NOFILE
 *                                cannot hold N sessions' descriptors
 *   dp_check SOCK threads        8 threads of one session, each on its own queue, fill,
 *                                sync and read back 2000 times at once: a completion
 *                                one thread reaps for another must still wake it (a
 *                                lost wake-up shows as a sync timing out)
 *   dp_check SOCK resetwake      8 threads of one session, each on its own queue with
 *                                seconds of memsets in flight, all asleep in their sync;
 *                                prints "busy" (the executor is killed meanwhile, and its
 *                                successor is slow to come): every sync must end with
 *                                OOO_EDEVRESET at the death, all within 1.5 s of the first, not
 *                                when the successor takes the session (the thread that
 *                                took the news fails the others' commands and must wake
 *                                them: it may have drained the doorbell oood rang); prints
 *                                "ok" with the spread
 */
#include <errno.h>
#include <sys/resource.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../../daemon/exec/cuda.h"

static int fails;

#define CHECK(cond, ...)                                                                                   \
	do {                                                                                               \
		if (!(cond)) {                                                                             \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                                        \
			printf(__VA_ARGS__);                                                               \
			printf(" (%s)\n", ooo_last_error());                                               \
			fails++;                                                                           \
		}                                                                                          \
	} while (0)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int check(const char *sock)
{
	const size_t size = 64u << 20, words = size / 4;
	ooo_session *s = ooo_open(sock), *other = ooo_open(sock);
	ooo_buf *b, *ob;
	ooo_queue *q, *q2;
	uint32_t *h = malloc(size), *h2 = malloc(size);
	uint64_t a;
	int r;

	if (!s || !other || !h || !h2)
		return printf("FAIL open: %s\n", ooo_last_error()), 1;
	CHECK(ooo_buf_alloc(s, size, 0, &b) == 0, "alloc");
	CHECK(ooo_buf_alloc(other, 1 << 20, 0, &ob) == 0, "alloc other");
	CHECK((r = ooo_queue_create(s, NULL, &q)) == 0, "queue create %d", r);
	CHECK((r = ooo_queue_create(s, NULL, &q2)) == 0, "queue create 2 %d", r);
	if (fails)
		return 1;
	/* queue options may lower the class's priority and loosen its SLO, never the reverse */
	{
		struct ooo_queue_opts up = { .sz = sizeof(up), .priority = 99, .slo_us = 1 };
		struct ooo_queue_opts down = { .sz = sizeof(down), .priority = 10, .slo_us = 50000 };
		ooo_queue *qu, *qd;

		CHECK(ooo_queue_create(s, &up, &qu) == 0 && ooo_queue_priority(qu) == 50 && ooo_queue_slo_us(qu) == 10000,
		      "asking for more than the class: priority %d slo %u", ooo_queue_priority(qu), ooo_queue_slo_us(qu));
		CHECK(ooo_queue_create(s, &down, &qd) == 0 && ooo_queue_priority(qd) == 10 && ooo_queue_slo_us(qd) == 50000,
		      "asking for less: priority %d slo %u", ooo_queue_priority(qd), ooo_queue_slo_us(qd));
		ooo_queue_destroy(qu);
		ooo_queue_destroy(qd);
	}
	a = ooo_buf_addr(b);
	/* memset, then read back */
	CHECK(ooo_memset(q, a, 0xabababab, words, 4) == 0, "memset");
	memset(h, 0, size);
	CHECK((r = ooo_memcpy_dtoh(q, h, a, size)) == 0, "dtoh %d", r);
	for (size_t i = 0; i < words && !fails; i++)
		CHECK(h[i] == 0xabababab, "memset word %zu = %#x", i, h[i]);
	/* random data up and back */
	srand(42);
	for (size_t i = 0; i < words; i++)
		h[i] = (uint32_t)rand() * 2654435761u + (uint32_t)i;
	CHECK(ooo_memcpy_htod(q, a, h, size) == 0, "htod");
	memset(h2, 0, size);
	CHECK((r = ooo_memcpy_dtoh(q, h2, a, size)) == 0, "dtoh %d", r);
	CHECK(!memcmp(h, h2, size), "random round trip differs");
	/* dtod of the first half onto the second, on another queue after a sync */
	CHECK(ooo_queue_sync(q, 10000) == 0, "sync");
	CHECK(ooo_memcpy_dtod(q2, a + size / 2, a, size / 2) == 0, "dtod");
	CHECK(ooo_queue_sync(q2, 10000) == 0, "sync 2");
	CHECK(ooo_memcpy_dtoh(q2, h2, a, size) == 0, "dtoh");
	CHECK(!memcmp(h2, h, size / 2) && !memcmp((char *)h2 + size / 2, h, size / 2), "dtod result");
	/* 2-byte and 1-byte memsets, odd counts, unaligned by element */
	CHECK(ooo_memset(q, a + 2, 0xbeef, 3, 2) == 0, "memset16");
	CHECK(ooo_memset(q, a + 9, 0x5a, 5, 1) == 0, "memset8");
	CHECK(ooo_memcpy_dtoh(q, h2, a, 16) == 0, "dtoh small");
	{
		unsigned char *c = (unsigned char *)h2, *o = (unsigned char *)h;
		CHECK(c[0] == o[0] && c[1] == o[1] && c[2] == 0xef && c[3] == 0xbe && c[7] == 0xbe && c[8] == o[8] &&
			      c[9] == 0x5a && c[13] == 0x5a && c[14] == o[14],
		      "small memsets");
	}
	/* refusals: nothing is written, the session goes on */
	uint32_t before[16], after[16];
	CHECK(ooo_memcpy_dtoh(q, before, a, sizeof(before)) == 0, "dtoh before");
	CHECK(ooo_memset(q, a + size - 4, 0, 2, 4) == 0, "submit past the end");
	CHECK((r = ooo_queue_sync(q, 10000)) == -EFAULT, "past the end: %d", r);
	CHECK(ooo_memset(q, ooo_buf_addr(ob), 0, 16, 4) == 0, "submit into another session's buffer");
	CHECK((r = ooo_queue_sync(q, 10000)) == -EFAULT, "other session's buffer: %d", r);
	CHECK(ooo_memset(q, a, 0, 1, 3) == 0, "submit bad element size");
	CHECK((r = ooo_queue_sync(q, 10000)) == -EINVAL, "bad element size: %d", r);
	CHECK(ooo_memcpy_dtoh(q, after, a, sizeof(after)) == 0 && !memcmp(before, after, sizeof(after)),
	      "buffer intact after refusals");
	/* events order queues: q2 copies only after q's long run of memsets */
	{
		ooo_event *ev;
		uint32_t v = 0;

		CHECK(ooo_event_create(s, &ev) == 0, "event create");
		for (uint32_t i = 1; i <= 50; i++)
			ooo_memset(q, a, i, words, 4);
		CHECK(ooo_event_record(q, ev) == 0, "record");
		CHECK(ooo_queue_wait_event(q2, ev) == 0, "wait event");
		CHECK(ooo_memcpy_dtod(q2, a + size - 4096, a, 4) == 0, "dtod after the event");
		CHECK(ooo_memcpy_dtoh(q2, &v, a + size - 4096, 4) == 0, "dtoh");
		CHECK(v == 50, "the copy ran before the event: %u", v);
		CHECK(ooo_event_wait(ev, 10000) == 0 && ooo_event_query(ev) == 0, "event complete");
		CHECK(ooo_event_destroy(ev) == 0, "event destroy");
	}
	CHECK(ooo_queue_destroy(q) == 0, "destroy");
	CHECK(ooo_queue_destroy(q2) == 0, "destroy 2");
	CHECK(ooo_buf_free(b) == 0, "free");
	CHECK(ooo_buf_free(ob) == 0, "free other");
	ooo_close(s);
	ooo_close(other);
	free(h);
	free(h2);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}

static int reset(const char *sock)
{
	ooo_session *s = ooo_open(sock);
	ooo_buf *b;
	ooo_queue *q;
	char line[16];
	uint32_t v = 0;
	int r;

	if (!s || ooo_buf_alloc(s, 256u << 20, 0, &b) || ooo_queue_create(s, NULL, &q))
		return printf("FAIL setup: %s\n", ooo_last_error()), 1;
	/* a queue with plenty of work in flight */
	for (int i = 0; i < 200; i++)
		ooo_memset(q, ooo_buf_addr(b), (uint32_t)i, (256u << 20) / 4, 4);
	printf("busy\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	r = ooo_queue_sync(q, 30000);
	CHECK(r == -OOO_EDEVRESET || r == 0, "sync after the executor died: %d", r);
	printf("sync after the kill: %d (%s)\n", r, ooo_strerror(r));
	/* the queue works again, on the buffer mapped again by the new executor (submissions are refused with OOO_EDEVRESET until it is back: retry) */
	for (int i = 0; i < 500 && (r = ooo_memset(q, ooo_buf_addr(b), 77, 1024, 4)) == -OOO_EDEVRESET; i++)
		usleep(10000);
	CHECK(r == 0, "memset after reset %d", r);
	CHECK((r = ooo_memcpy_dtoh(q, &v, ooo_buf_addr(b), 4)) == 0, "dtoh after reset %d", r);
	CHECK(v == 77, "value after reset %u", v);
	ooo_queue_destroy(q);
	ooo_buf_free(b);
	ooo_close(s);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}

/* See "lost" above. */
static int lost(const char *sock)
{
	ooo_session *s = ooo_open(sock);
	ooo_buf *b;
	ooo_queue *q;
	char line[16];
	uint32_t v = 0;
	int r = 0, n = 0;

	if (!s || ooo_buf_alloc(s, 4096, 0, &b) || ooo_queue_create(s, NULL, &q))
		return printf("FAIL setup: %s\n", ooo_last_error()), 1;
	if ((r = ooo_memset(q, ooo_buf_addr(b), 7, 1, 4)) || (r = ooo_memcpy_dtoh(q, &v, ooo_buf_addr(b), 4)) || v != 7)
		return printf("FAIL fill and read back: %d %s (%u)\n", r, ooo_strerror(r), v), 1;
	printf("attached\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (; n < 2000; n++) { /* 20 s */
		r = ooo_memset(q, ooo_buf_addr(b), 8, 1, 4);
		if (r == 0)
			r = ooo_queue_sync(q, 5000);
		if (r != -OOO_EDEVRESET)
			break;
		usleep(10000);
	}
	CHECK(r == -OOO_ECLOSED, "after the refused re-attach: %d (%s), not OOO_ECLOSED, after %d tries", r,
	      ooo_strerror(r), n);
	CHECK(!fails && strstr(ooo_last_error(), "could not take this session back"), "the reason: %s",
	      ooo_last_error());
	if (!fails)
		printf("ok: %s: %s\n", ooo_strerror(r), ooo_last_error());
	ooo_queue_destroy(q); /* the handles, on a closed session */
	ooo_buf_free(b);
	ooo_close(s);
	return fails != 0;
}

/* 100 sessions with 10 queues each: every queue fills its own slice and reads it back. */
static int many(const char *sock)
{
	enum { SESSIONS = 100, QUEUES = 10, SLICE = 1 << 16 };
	static ooo_session *s[SESSIONS];
	static ooo_queue *q[SESSIONS][QUEUES];
	static ooo_buf *b[SESSIONS];
	static uint32_t back[SLICE / 4];
	int r;

	for (int i = 0; i < SESSIONS; i++) {
		s[i] = ooo_open(sock);
		CHECK(s[i] && ooo_buf_alloc(s[i], QUEUES * SLICE, 0, &b[i]) == 0, "session %d", i);
		for (int j = 0; j < QUEUES && !fails; j++)
			CHECK((r = ooo_queue_create(s[i], NULL, &q[i][j])) == 0, "queue %d.%d: %d", i, j, r);
		if (fails)
			return 1;
	}
	for (int i = 0; i < SESSIONS; i++)
		for (int j = 0; j < QUEUES; j++)
			ooo_memset(q[i][j], ooo_buf_addr(b[i]) + (uint64_t)j * SLICE, (uint32_t)(i * 1000 + j), SLICE / 4, 4);
	for (int i = 0; i < SESSIONS && !fails; i++) {
		for (int j = 0; j < QUEUES && !fails; j++) {
			CHECK(ooo_memcpy_dtoh(q[i][j], back, ooo_buf_addr(b[i]) + (uint64_t)j * SLICE, SLICE) == 0,
			      "dtoh %d.%d", i, j);
			for (int k = 0; k < SLICE / 4 && !fails; k++)
				CHECK(back[k] == (uint32_t)(i * 1000 + j), "value %d.%d[%d] = %u", i, j, k, back[k]);
		}
	}
	for (int i = 0; i < SESSIONS; i++)
		ooo_close(s[i]); /* queues, buffers and data paths are reclaimed with the session */
	if (!fails)
		printf("ok: %d queues over %d sessions\n", SESSIONS * QUEUES, SESSIONS);
	return fails != 0;
}

/* See "crowd" above. */
static int crowd(const char *sock, const char *count)
{
	enum { MAX = 4096, ROUNDS = 10, FDS_PER_SESSION = 5 };
	const double bound_ms = 500; /* heard: microseconds; not heard: until something else wakes the executor (seconds) */
	static ooo_session *s[MAX];
	static ooo_queue *q[MAX];
	static ooo_buf *b[MAX];
	char *end;
	unsigned long n = strtoul(count, &end, 10);
	struct rlimit rl;
	double worst = 0;
	int r;

	if (*end || n < 2 || n > MAX) {
		fprintf(stderr, "dp_check crowd: N must be 2..%d\n", MAX);
		return 2;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n * FDS_PER_SESSION + 64) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < n * FDS_PER_SESSION + 64) {
		printf("skip: RLIMIT_NOFILE %llu holds fewer than %lu sessions' descriptors\n",
		       (unsigned long long)rl.rlim_cur, n);
		return 77;
	}
	for (unsigned long i = 0; i < n; i++) {
		s[i] = ooo_open(sock);
		CHECK(s[i], "session %lu: ooo_open failed", i);
		if (fails)
			return 1;
		CHECK((r = ooo_buf_alloc(s[i], 4096, 0, &b[i])) == 0, "session %lu: buffer: %s", i, ooo_strerror(r));
		if (fails)
			return 1;
		CHECK((r = ooo_queue_create(s[i], NULL, &q[i])) == 0, "session %lu: queue: %s", i, ooo_strerror(r));
		if (fails)
			return 1;
	}
	for (int round = 0; round < ROUNDS && !fails; round++) {
		unsigned long k = round % 2 ? 0 : n - 1;
		struct timespec t0, t1;
		uint32_t v = 0;

		usleep(50000); /* quiet: the executor spins a while, then sleeps on the doorbells */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = ooo_memset(q[k], ooo_buf_addr(b[k]), (uint32_t)round + 1, 1, 4);
		if (r == 0)
			r = ooo_queue_sync(q[k], 5000);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		CHECK(r == 0, "round %d: session %lu of %lu: memset + sync: %s", round, k + 1, n, ooo_strerror(r));
		CHECK(!fails && (r = ooo_memcpy_dtoh(q[k], &v, ooo_buf_addr(b[k]), 4)) == 0 && v == (uint32_t)round + 1,
		      "round %d: session %lu: read back %u: %s", round, k + 1, v, ooo_strerror(r));
		double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
		CHECK(ms < bound_ms, "round %d: session %lu of %lu: the sync took %.1f ms: its doorbell went unheard", round,
		      k + 1, n, ms);
		if (ms > worst)
			worst = ms;
	}
	for (unsigned long i = 0; i < n; i++)
		ooo_close(s[i]);
	if (!fails)
		printf("ok: %lu sessions, a sync in the first and the last after a quiet spell: slowest %.1f ms\n", n, worst);
	return fails != 0;
}

static const char launch_ptx[] = ".version 7.8\n.target sm_90\n.address_size 64\n"
				  ".visible .entry k0(.param .u64 x, .param .u32 n)\n{\n .reg .b32 t, v;\n .reg .b64 a, o;\n"
				  " ld.param.u64 a, [x];\n mov.u32 t, %tid.x;\n mul.wide.u32 o, t, 4;\n"
				  " cvta.to.global.u64 a, a;\n add.s64 a, a, o;\n ld.global.u32 v, [a];\n"
				  " add.s32 v, v, 1;\n st.global.u32 [a], v;\n ret;\n}\n"
				  /* k1: v = 2 v + 1 (with k0, the order of a queue's launches shows in the result) */
				  ".visible .entry k1(.param .u64 x, .param .u32 n)\n{\n .reg .b32 t, v;\n .reg .b64 a, o;\n"
				  " ld.param.u64 a, [x];\n mov.u32 t, %tid.x;\n mul.wide.u32 o, t, 4;\n"
				  " cvta.to.global.u64 a, a;\n add.s64 a, a, o;\n ld.global.u32 v, [a];\n"
				  " shl.b32 v, v, 1;\n add.s32 v, v, 1;\n st.global.u32 [a], v;\n ret;\n}\n";

/* A session with launch_ptx's k0 loaded, a buffer of `size` bytes and a queue. */
struct ktenant {
	ooo_session *s;
	ooo_module *m;
	ooo_kernel *k;
	ooo_buf *b;
	ooo_queue *q;
};

static void kt_close(struct ktenant *t)
{
	ooo_kernel_free(t->k);
	ooo_queue_destroy(t->q);
	ooo_buf_free(t->b);
	ooo_module_unload(t->m);
	ooo_close(t->s);
}

/* 0, or -1 (a failed CHECK) with nothing left open */
static int kt_open(const char *sock, size_t size, struct ktenant *t, int i)
{
	*t = (struct ktenant){ .s = ooo_open(sock) };
	CHECK(t->s && ooo_module_load(t->s, OOO_PTX, launch_ptx, sizeof(launch_ptx) - 1, &t->m) == 0 &&
		      ooo_kernel_get(t->m, "k0", &t->k) == 0 && ooo_buf_alloc(t->s, size, 0, &t->b) == 0 &&
		      ooo_queue_create(t->s, NULL, &t->q) == 0,
	      "session %d", i);
	if (!fails)
		return 0;
	kt_close(t);
	return -1;
}

/* k0 on t's buffer: `blocks` blocks of `threads` threads, n (unused by k0) the mark */
static int kt_launch_n(struct ktenant *t, uint32_t blocks, uint32_t threads, uint32_t n)
{
	const uint32_t grid[3] = { blocks, 1, 1 }, block[3] = { threads, 1, 1 };
	struct {
		uint64_t x;
		uint32_t n;
	} __attribute__((packed, aligned(8))) p = { ooo_buf_addr(t->b), n };

	return ooo_launch(t->q, t->k, grid, block, 0, &p, 12);
}

static int kt_launch(struct ktenant *t, uint32_t blocks, uint32_t threads)
{
	return kt_launch_n(t, blocks, threads, threads);
}

/*
 * Rounds of 10 launches of k0 by each of 8 sessions, then a sync of each.
 * mark: session 0's 5th launch of each round carries 0x7e7e7e7e, which
 * tests/fakecuda refuses with FAKECUDA_REFUSE=1 (as it refuses every fused
 * launch there, so bundles fall back to their members one by one): session
 * 0's syncs must get -EIO, every other sync stays clean (`refused`).
 * Without it every sync must be clean (`launches`).
 */
static int launch_rounds(const char *sock, int rounds, bool mark)
{
	enum { SESSIONS = 8, PER_ROUND = 10 };
	struct ktenant t[SESSIONS];
	int r, n = 0;

	while (n < SESSIONS && kt_open(sock, 1024, &t[n], n) == 0)
		n++;
	for (int round = 0; round < rounds && !fails; round++) {
		for (int i = 0; i < SESSIONS; i++)
			for (int j = 0; j < PER_ROUND && !fails; j++)
				CHECK((r = kt_launch_n(&t[i], 2, 128, mark && i == 0 && j == 4 ? 0x7e7e7e7eu : 128)) == 0,
				      "launch %d.%d: %d", round, i, r);
		for (int i = 0; i < SESSIONS && !fails; i++) {
			int want = mark && i == 0 ? -EIO : 0;

			r = ooo_queue_sync(t[i].q, 10000);
			CHECK(r == want, "sync %d.%d: %d (%s), not %d", round, i, r, ooo_strerror(r), want);
		}
	}
	for (int i = 0; i < n; i++)
		kt_close(&t[i]);
	if (!fails && mark)
		printf("ok: %d rounds: session 0's refused launch failed its sync with -EIO, every other sync clean\n",
		       rounds);
	else if (!fails)
		printf("ok: %d launches from %d sessions, every sync clean\n", SESSIONS * PER_ROUND * rounds, SESSIONS);
	return fails != 0;
}

/* Queues of two priorities, each kind with its own kernel (see the top) */
static int prio_rounds(const char *sock)
{
	enum { SESSIONS = 8, PER_ROUND = 10, ROUNDS = 200 };
	struct ktenant t[SESSIONS];
	int r, n = 0;

	for (; n < SESSIONS; n++) {
		struct ooo_queue_opts o = { .sz = sizeof(o), .priority = n < SESSIONS / 2 ? -1 : 10 };

		if (kt_open(sock, 1024, &t[n], n) < 0)
			break;
		ooo_queue_destroy(t[n].q);
		t[n].q = NULL;
		CHECK(ooo_queue_create(t[n].s, &o, &t[n].q) == 0, "session %d: queue with priority %d", n, o.priority);
		if (n >= SESSIONS / 2) {
			ooo_kernel_free(t[n].k);
			t[n].k = NULL;
			CHECK(ooo_kernel_get(t[n].m, "k1", &t[n].k) == 0, "session %d: k1", n);
		}
		if (fails) {
			kt_close(&t[n]);
			break;
		}
	}
	for (int round = 0; round < ROUNDS && !fails; round++) {
		for (int i = 0; i < SESSIONS; i++)
			for (int j = 0; j < PER_ROUND && !fails; j++)
				CHECK((r = kt_launch(&t[i], 2, 128)) == 0, "launch %d.%d: %d", round, i, r);
		for (int i = 0; i < SESSIONS && !fails; i++)
			CHECK((r = ooo_queue_sync(t[i].q, 10000)) == 0, "sync %d.%d: %d (%s)", round, i, r, ooo_strerror(r));
	}
	if (!fails)
		printf("ok: %d launches from %d sessions, queue priorities %d (k0) and %d (k1), every sync clean\n",
		       SESSIONS * PER_ROUND * ROUNDS, SESSIONS, ooo_queue_priority(t[0].q), ooo_queue_priority(t[SESSIONS - 1].q));
	for (int i = 0; i < n; i++)
		kt_close(&t[i]);
	return fails != 0;
}

/*
 * Order across the coalescer's streams: 8 sessions, one queue each, every
 * other one at priority 10 (below the class's: the lower stream tier),
 * launch k0 (v + 1) and k1 (2 v + 1) in patterns of different periods, so
 * that a bundle of one kernel gathers queues whose previous launch went in
 * bundles on other streams (a bundle goes on its highest member's tier); each
 * queue's words must come out as its launches in order make them. results
 * false: only that every launch and sync succeeds (tests/fakecuda runs no
 * kernel).
 */
static int order(const char *sock, bool results)
{
	enum { SESSIONS = 8, PER_ROUND = 12, ROUNDS = 200, THREADS = 128 };
	struct ktenant t[SESSIONS];
	ooo_kernel *k1[SESSIONS] = { 0 };
	uint32_t want[SESSIONS] = { 0 }, *h = NULL;
	int r, n = 0;

	while (n < SESSIONS && kt_open(sock, THREADS * 4, &t[n], n) == 0) {
		struct ooo_queue_opts o = { .sz = sizeof(o), .priority = 10 };

		if (n % 2) {
			ooo_queue_destroy(t[n].q);
			t[n].q = NULL;
			CHECK(ooo_queue_create(t[n].s, &o, &t[n].q) == 0, "session %d: queue with priority 10", n);
		}
		CHECK(ooo_kernel_get(t[n].m, "k1", &k1[n]) == 0, "k1 of session %d", n);
		CHECK((r = ooo_memset(t[n].q, ooo_buf_addr(t[n].b), 0, THREADS, 4)) == 0, "memset %d: %d", n, r);
		n++;
	}
	if (n < SESSIONS)
		fails++;
	for (int round = 0; round < ROUNDS && !fails; round++) {
		for (int i = 0; i < n; i++)
			for (int j = 0; j < PER_ROUND && !fails; j++) {
				const uint32_t grid[3] = { 1, 1, 1 }, block[3] = { THREADS, 1, 1 };
				struct {
					uint64_t x;
					uint32_t n;
				} __attribute__((packed, aligned(8))) p = { ooo_buf_addr(t[i].b), THREADS };
				bool two = (j / (i % 3 + 1) + i / 3) % 2; /* periods 1, 2 and 3, phases apart */

				CHECK((r = ooo_launch(t[i].q, two ? k1[i] : t[i].k, grid, block, 0, &p, 12)) == 0,
				      "launch %d.%d.%d: %d", round, i, j, r);
				want[i] = two ? 2 * want[i] + 1 : want[i] + 1;
			}
		for (int i = 0; i < n && !fails; i++)
			CHECK((r = ooo_queue_sync(t[i].q, 10000)) == 0, "sync %d.%d: %d", round, i, r);
	}
	if (results && !fails && !(h = malloc(THREADS * 4)))
		fails++;
	for (int i = 0; results && h && i < n && !fails; i++) {
		CHECK((r = ooo_memcpy_dtoh(t[i].q, h, ooo_buf_addr(t[i].b), THREADS * 4)) == 0, "dtoh %d: %d", i, r);
		for (int w = 0; w < THREADS && !fails; w++)
			CHECK(h[w] == want[i], "session %d word %d: %#x, its launches in order make %#x", i, w, h[w],
			      want[i]);
	}
	free(h);
	for (int i = 0; i < n; i++) {
		ooo_kernel_free(k1[i]);
		kt_close(&t[i]);
	}
	if (!fails)
		printf("ok: %d launches of 2 kernels from %d sessions in order%s\n", SESSIONS * PER_ROUND * ROUNDS,
		       SESSIONS, results ? ", every result right" : " (results not read)");
	return fails != 0;
}

static int shapes(const char *sock)
{
	struct ktenant t[2];
	int r, n = 0;

	while (n < 2 && kt_open(sock, 4096, &t[n], n) == 0)
		n++;
	/* session 0: shapes of 40 .. 48 threads (no other check uses them), then 48 again; session 1: 49 */
	for (int j = 0; j < 11 && !fails; j++) {
		int i = j == 10;

		CHECK((r = kt_launch(&t[i], 1, i ? 49 : 40u + (uint32_t)(j < 9 ? j : 8))) == 0,
		      "launch %d of session %d: %d", j, i, r);
		CHECK((r = ooo_queue_sync(t[i].q, 10000)) == 0, "sync %d: %d", j, r);
	}
	for (int i = 0; i < n; i++)
		kt_close(&t[i]);
	if (!fails)
		printf("ok: 10 launches in 9 shapes from one session, 1 in a 10th from another\n");
	return fails != 0;
}

enum { TH_THREADS = 8, TH_ROUNDS = 2000, TH_WORDS = 256 };

struct th_arg {
	ooo_session *s;
	ooo_buf *b;
	int id, bad;
	char why[160];
};

static void *th_run(void *p)
{
	struct th_arg *a = p;
	uint64_t base = ooo_buf_addr(a->b) + (uint64_t)a->id * TH_WORDS * 4;
	uint32_t back[TH_WORDS];
	ooo_queue *q;
	int r;

	if ((r = ooo_queue_create(a->s, NULL, &q))) {
		snprintf(a->why, sizeof(a->why), "queue create %d", r);
		a->bad = 1;
		return NULL;
	}
	for (int i = 0; i < TH_ROUNDS && !a->bad; i++) {
		uint32_t v = (uint32_t)(a->id << 24 | i);

		if ((r = ooo_memset(q, base, v, TH_WORDS, 4)) || (r = ooo_queue_sync(q, 10000)) ||
		    (r = ooo_memcpy_dtoh(q, back, base, sizeof(back)))) {
			snprintf(a->why, sizeof(a->why), "round %d: %d (%s)", i, r, ooo_strerror(r));
			a->bad = 1;
		}
		for (int k = 0; k < TH_WORDS && !a->bad; k++)
			if (back[k] != v) {
				snprintf(a->why, sizeof(a->why), "round %d: word %d is %#x, not %#x", i, k, back[k], v);
				a->bad = 1;
			}
	}
	ooo_queue_destroy(q);
	return NULL;
}

static int threads(const char *sock)
{
	ooo_session *s = ooo_open(sock);
	struct th_arg a[TH_THREADS];
	pthread_t t[TH_THREADS];
	ooo_buf *b;
	double t0;
	int n = 0;

	if (!s || ooo_buf_alloc(s, TH_THREADS * TH_WORDS * 4, 0, &b))
		return printf("FAIL setup: %s\n", ooo_last_error()), 1;
	t0 = now_s();
	for (; n < TH_THREADS; n++) {
		a[n] = (struct th_arg){ .s = s, .b = b, .id = n };
		if (pthread_create(&t[n], NULL, th_run, &a[n]))
			break;
	}
	CHECK(n == TH_THREADS, "only %d threads started", n);
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		CHECK(!a[i].bad, "thread %d: %s", i, a[i].why);
	}
	ooo_buf_free(b);
	ooo_close(s);
	if (!fails)
		printf("ok: %d threads x %d rounds of fill, sync, read back in %.2f s\n", n, TH_ROUNDS, now_s() - t0);
	return fails != 0;
}

#define RW_THREADS 8
#define RW_BUF (256u << 20)
#define RW_MEMSETS 40 /* of 256 MiB each, done by the stand-in at once: a second or more of the executor's time each thread */

struct rw_arg {
	ooo_queue *q;
	ooo_buf *b;
	int r;
	double end;
};

static int rw_asleep;
static pthread_mutex_t rw_mu = PTHREAD_MUTEX_INITIALIZER;

static void *rw_run(void *p)
{
	struct rw_arg *a = p;
	int r = 0;

	for (int i = 0; i < RW_MEMSETS && r == 0; i++)
		r = ooo_memset(a->q, ooo_buf_addr(a->b), (uint32_t)i, RW_BUF / 4, 4);
	pthread_mutex_lock(&rw_mu);
	rw_asleep++;
	pthread_mutex_unlock(&rw_mu);
	if (r == 0)
		r = ooo_queue_sync(a->q, 30000);
	a->end = now_s();
	a->r = r;
	return NULL;
}

static int resetwake(const char *sock)
{
	ooo_session *s = ooo_open(sock);
	struct rw_arg a[RW_THREADS];
	pthread_t t[RW_THREADS];
	double first = 0, last = 0;
	int n = 0, reset = 0, done = 0;
	char line[16];
	ooo_buf *b;

	if (!s || ooo_buf_alloc(s, RW_BUF, 0, &b))
		return printf("FAIL setup: %s\n", ooo_last_error()), 1;
	/* the queues first: the executor is slow to answer once the memsets keep it busy */
	for (int i = 0; i < RW_THREADS; i++) {
		a[i] = (struct rw_arg){ .b = b };
		if (ooo_queue_create(s, NULL, &a[i].q))
			return printf("FAIL queue create: %s\n", ooo_last_error()), 1;
	}
	for (; n < RW_THREADS; n++) {
		if (pthread_create(&t[n], NULL, rw_run, &a[n]))
			break;
	}
	CHECK(n == RW_THREADS, "only %d threads started", n);
	/* every thread has submitted its work and is (about to be) asleep in its sync */
	for (int i = 0; i < 3000; i++) {
		int k;

		pthread_mutex_lock(&rw_mu);
		k = rw_asleep;
		pthread_mutex_unlock(&rw_mu);
		if (k == n)
			break;
		usleep(10000);
	}
	usleep(200000);
	printf("busy\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		CHECK(a[i].r == -OOO_EDEVRESET || a[i].r == 0, "thread %d: its sync across the executor's death: %d (%s)", i,
		      a[i].r, ooo_strerror(a[i].r));
		if (a[i].r == -OOO_EDEVRESET && (!first || a[i].end < first))
			first = a[i].end;
	}
	/* (a thread whose work was done before the death may have ended before it, with 0) */
	for (int i = 0; i < n; i++) {
		reset += a[i].r == -OOO_EDEVRESET;
		done += a[i].r == 0 && a[i].end < first;
		if (a[i].end > last)
			last = a[i].end;
	}
	CHECK(reset >= n / 2, "only %d of %d threads had work in flight at the executor's death", reset, n);
	CHECK(last - first < 1.5,
	      "the threads' syncs ended up to %.2f s after the executor's death: some slept through it until the "
	      "successor took the session, or their timeout",
	      last - first);
	for (int i = 0; i < RW_THREADS; i++)
		ooo_queue_destroy(a[i].q);
	ooo_buf_free(b);
	ooo_close(s);
	if (!fails)
		printf("ok: %d threads' syncs ended with OOO_EDEVRESET within %.3f s (%d done before)\n", reset,
		       last - first, done);
	return fails != 0;
}

#define CP_THREADS 8
#define CP_ROUNDS 400
#define CP_BUF (1u << 20)
#define CP_MAX 70000u

struct cp_arg {
	const char *sock;
	unsigned id;
	bool bad;
	char why[200];
};

static uint32_t cp_rand(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void *cp_run(void *p)
{
	struct cp_arg *a = p;
	ooo_session *s = ooo_open(a->sock);
	unsigned char *mirror = malloc(CP_BUF), *src = malloc(CP_MAX + 64), *back = malloc(CP_MAX + 64), *hreg = NULL;
	uint32_t x = 2463534242u + a->id * 7919u;
	ooo_buf *b = NULL;
	ooo_queue *q = NULL;
	uint64_t base;
	int r;

	if (!s || !mirror || !src || !back || ooo_buf_alloc(s, CP_BUF, 0, &b) || ooo_queue_create(s, NULL, &q) ||
	    ooo_host_alloc(s, CP_MAX + 64, (void **)&hreg)) {
		snprintf(a->why, sizeof(a->why), "set-up: %s", ooo_last_error());
		a->bad = true;
		goto out;
	}
	base = ooo_buf_addr(b);
	/* the whole buffer known: random bytes up, mirrored here */
	for (uint32_t i = 0; i < CP_BUF; i++)
		mirror[i] = (unsigned char)cp_rand(&x);
	if ((r = ooo_memcpy_htod(q, base, mirror, CP_BUF)) || (r = ooo_queue_sync(q, 20000))) {
		snprintf(a->why, sizeof(a->why), "fill: %d %s", r, ooo_last_error());
		a->bad = true;
		goto out;
	}
	for (unsigned round = 0; round < CP_ROUNDS && !a->bad; round++) {
		uint32_t n = 1 + cp_rand(&x) % (round % 4 == 0 ? 64u : CP_MAX); /* a quarter of them tiny */
		/* d1 in the first half, d2 in the second: a copy's ranges never overlap (CUDA leaves that undefined) */
		uint32_t so = cp_rand(&x) % 64, d1 = cp_rand(&x) % (CP_BUF / 2 - n),
			 d2 = CP_BUF / 2 + cp_rand(&x) % (CP_BUF / 2 - n);
		bool zero = round % 3 == 1; /* from ooo_host_alloc memory: the GPU reads it in place */
		unsigned char *from = zero ? hreg : src;

		if (round % 5 == 0) { /* some 16-byte aligned, the kernel's wide path */
			n = (n + 15u) & ~15u;
			if (n > CP_MAX)
				n = CP_MAX & ~15u;
			so = 0;
			d1 &= ~15u;
			d2 &= ~15u;
		}
		for (uint32_t i = 0; i < n; i++)
			from[so + i] = (unsigned char)cp_rand(&x);
		r = ooo_memcpy_htod(q, base + d1, from + so, n);
		memcpy(mirror + d1, from + so, n);
		if (!r)
			r = ooo_memcpy_dtod(q, base + d2, base + d1, n);
		memcpy(mirror + d2, mirror + d1, n);
		if (r) {
			snprintf(a->why, sizeof(a->why), "round %u: submit: %d %s", round, r, ooo_last_error());
			a->bad = true;
			break;
		}
		if ((r = ooo_memcpy_dtoh(q, back + so, base + d2, n)) != 0) {
			snprintf(a->why, sizeof(a->why), "round %u: dtoh: %d %s", round, r, ooo_last_error());
			a->bad = true;
			break;
		}
		if (memcmp(back + so, mirror + d2, n)) {
			uint32_t i = 0;

			while (back[so + i] == mirror[d2 + i])
				i++;
			snprintf(a->why, sizeof(a->why),
				 "round %u: %u bytes htod at +%u (host +%u%s), dtod to +%u, dtoh: byte %u is %#x, not %#x",
				 round, n, d1, so, zero ? ", host region" : "", d2, i, back[so + i], mirror[d2 + i]);
			a->bad = true;
		}
	}
	/* and the whole buffer, which every copy above must have left as the mirror says */
	if (!a->bad) {
		unsigned char *all = malloc(CP_BUF);

		if (!all || (r = ooo_memcpy_dtoh(q, all, base, CP_BUF)) || memcmp(all, mirror, CP_BUF)) {
			snprintf(a->why, sizeof(a->why), "the whole buffer differs from the host's mirror at the end");
			a->bad = true;
		}
		free(all);
	}
out:
	if (q)
		ooo_queue_destroy(q);
	if (hreg)
		ooo_host_free(s, hreg);
	if (b)
		ooo_buf_free(b);
	ooo_close(s);
	free(mirror);
	free(src);
	free(back);
	return NULL;
}

static int copies(const char *sock)
{
	struct cp_arg a[CP_THREADS];
	pthread_t t[CP_THREADS];
	double t0 = now_s();
	int n = 0;

	for (; n < CP_THREADS; n++) {
		a[n] = (struct cp_arg){ .sock = sock, .id = (unsigned)n };
		if (pthread_create(&t[n], NULL, cp_run, &a[n]))
			break;
	}
	CHECK(n == CP_THREADS, "only %d threads started", n);
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		CHECK(!a[i].bad, "session %d: %s", i, a[i].why);
	}
	if (!fails)
		printf("ok: %d sessions x %d rounds of small copies (htod, dtod, dtoh) in %.2f s, every byte right\n", n,
		       CP_ROUNDS, now_s() - t0);
	return fails != 0;
}

static int bw(const char *sock, const char *libcuda, size_t mb)
{
	size_t size = mb << 20;
	ooo_session *s = ooo_open(sock);
	ooo_buf *b;
	ooo_queue *q;
	void *h = malloc(size);
	struct cuda_api api;
	char why[256];
	double t;
	int reps = 10;

	if (!s || !h || ooo_buf_alloc(s, size, 0, &b) || ooo_queue_create(s, NULL, &q))
		return printf("FAIL setup: %s\n", ooo_last_error()), 1;
	memset(h, 1, size);
	ooo_memcpy_htod(q, ooo_buf_addr(b), h, size); /* warm up */
	ooo_queue_sync(q, -1);
	t = now_s();
	for (int i = 0; i < reps; i++)
		ooo_memcpy_htod(q, ooo_buf_addr(b), h, size);
	ooo_queue_sync(q, -1);
	printf("ooo htod %zu MiB: %.2f GB/s\n", mb, (double)size * reps / (now_s() - t) / 1e9);
	ooo_memcpy_dtoh(q, h, ooo_buf_addr(b), size);
	t = now_s();
	for (int i = 0; i < reps; i++)
		ooo_memcpy_dtoh(q, h, ooo_buf_addr(b), size);
	printf("ooo dtoh %zu MiB: %.2f GB/s\n", mb, (double)size * reps / (now_s() - t) / 1e9);
	/* zero copy: the same copies from and to ooo_host_alloc memory */
	{
		void *hp;
		int r = ooo_host_alloc(s, size, &hp);

		if (r < 0) {
			printf("FAIL host alloc: %d %s\n", r, ooo_last_error());
			return 1;
		}
		memset(hp, 7, size);
		ooo_memcpy_htod(q, ooo_buf_addr(b), hp, size);
		ooo_queue_sync(q, -1);
		t = now_s();
		for (int i = 0; i < reps; i++)
			ooo_memcpy_htod(q, ooo_buf_addr(b), hp, size);
		r = ooo_queue_sync(q, -1);
		printf("ooo zero-copy htod %zu MiB: %.2f GB/s (%d)\n", mb, (double)size * reps / (now_s() - t) / 1e9, r);
		memset(hp, 0, size);
		t = now_s();
		for (int i = 0; i < reps; i++)
			r = ooo_memcpy_dtoh(q, hp, ooo_buf_addr(b), size);
		printf("ooo zero-copy dtoh %zu MiB: %.2f GB/s (%d)\n", mb, (double)size * reps / (now_s() - t) / 1e9, r);
		if (((unsigned char *)hp)[size - 1] != 7) {
			printf("FAIL zero-copy contents\n");
			return 1;
		}
		ooo_host_free(s, hp);
	}
	/* baseline: this process's own context, pinned host memory, cuMemcpy */
	if (cuda_load(&api, libcuda, why, sizeof(why)) == 0) {
		CUcontext ctx;
		CUdevice dev;
		CUdeviceptr d;
		void *ph;

		api.p_cuInit(0);
		api.p_cuDeviceGet(&dev, 0);
		api.p_cuDevicePrimaryCtxRetain(&ctx, dev);
		api.p_cuCtxSetCurrent(ctx);
		ph = aligned_alloc(4096, size);
		memset(ph, 1, size);
		api.p_cuMemHostRegister(ph, size, 0);
		{
			CUmemGenericAllocationHandle hh;
			CUmemAllocationProp p = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
						  .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
			CUmemAccessDesc acc = { .location = p.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
			size_t g = 2 << 20, sz = (size + g - 1) / g * g;
			api.p_cuMemCreate(&hh, sz, &p, 0);
			api.p_cuMemAddressReserve(&d, sz, 0, 0, 0);
			api.p_cuMemMap(d, sz, 0, hh, 0);
			api.p_cuMemSetAccess(d, sz, &acc, 1);
		}
		api.p_cuMemcpyHtoD(d, ph, size);
		t = now_s();
		for (int i = 0; i < reps; i++)
			api.p_cuMemcpyHtoD(d, ph, size);
		printf("direct htod %zu MiB: %.2f GB/s\n", mb, (double)size * reps / (now_s() - t) / 1e9);
		t = now_s();
		for (int i = 0; i < reps; i++)
			api.p_cuMemcpyDtoH(ph, d, size);
		printf("direct dtoh %zu MiB: %.2f GB/s\n", mb, (double)size * reps / (now_s() - t) / 1e9);
	} else {
		printf("direct: %s\n", why);
	}
	ooo_queue_destroy(q);
	ooo_buf_free(b);
	ooo_close(s);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[2], "check"))
		return check(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "many"))
		return many(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "reset"))
		return reset(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "shapes"))
		return shapes(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "launches"))
		return launch_rounds(argv[1], 300, false);
	if (argc == 3 && !strcmp(argv[2], "refused"))
		return launch_rounds(argv[1], 100, true);
	if ((argc == 3 || (argc == 4 && !strcmp(argv[3], "noresults"))) && !strcmp(argv[2], "order"))
		return order(argv[1], argc == 3);
	if (argc == 3 && !strcmp(argv[2], "copies"))
		return copies(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "lost"))
		return lost(argv[1]);
	if (argc == 4 && !strcmp(argv[2], "crowd"))
		return crowd(argv[1], argv[3]);
	if (argc == 3 && !strcmp(argv[2], "threads"))
		return threads(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "resetwake"))
		return resetwake(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "prio"))
		return prio_rounds(argv[1]);
	if (argc == 5 && !strcmp(argv[2], "bw"))
		return bw(argv[1], argv[3], strtoul(argv[4], NULL, 0));
	fprintf(stderr, "usage: dp_check SOCK check | many | crowd N | reset | lost | launches | refused | order [noresults] | shapes |"
			" threads | resetwake | prio | copies | bw LIBCUDA MB\n");
	return 2;
}
