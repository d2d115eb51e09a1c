/* SPDX-License-Identifier: MIT */
/*
 * soak_check: the tenants of tests/integration/test_soak.sh (on the stand-in
 * driver; nothing here needs a kernel's result). Every mode takes its
 * randomness from SEED, so a soak replays.
 *
 *   soak_check SOCK checker SEED THREADS
 *       the checker: one session, THREADS threads with a queue each, each
 *       its own 256 KiB region of one buffer. A round fills the region (a
 *       memset), then writes pieces of it (HtoD from ordinary memory or from
 *       ooo_host_alloc memory, memsets of 1, 2 and 4 byte elements, DtoD
 *       within the region), maybe a launch (on a scratch buffer) and an
 *       event record, syncs, reads the region back (DtoH into ordinary or
 *       ooo_host_alloc memory) and compares it byte for byte with the host's
 *       model of the round; every 8th round it also reads a piece of a
 *       buffer written once at the start. A round that meets OOO_EDEVRESET
 *       (its executor was replaced), or OOO_EFAULT (another tenant's kernel
 *       faulted in the context they share), is counted and done again from
 *       the start. Any other failure is one of the checker: a wrong byte, an
 *       event whose record a clean sync did not complete, a sync that takes
 *       more than 5 s (they take milliseconds here: it slept through its
 *       wake-up) or 30 s (a hang), a call that does not return within 60 s
 *       (a watchdog thread). Prints "ready" once set up, runs until "stop"
 *       or the end of stdin, cleans up and prints "checker rounds R verified
 *       V ..." with its counts; exits 1 after any failure or if no round was
 *       verified.
 *   soak_check SOCK worker SEED
 *       an ordinary tenant that works at random (queues, buffers, a module
 *       and launches, host memory, events, copies, syncs) until killed or
 *       done, then leaves in one of several ways (closing, or exiting or
 *       dying with work in flight). OOO_EDEVRESET, OOO_EFAULT, OOO_ENODEV
 *       and OOO_ELIMIT are taken; any other failure exits 1.
 *   soak_check SOCK rings SEED
 *       a hostile tenant: attaches its data path, then finds the session
 *       area among its descriptors (as libooo's, in /proc/self/fd), maps it
 *       and writes garbage into it: indices (its own and the executor's),
 *       ring flags, entries (random bytes and well-formed commands naming
 *       wild addresses, queues, kernels, events), the header and staging,
 *       ringing the doorbell between; in between some ordinary commands of
 *       its own; then leaves at random. Prints "rings N" (the scribbles).
 *   soak_check PATH garbage SEED N
 *       N connections to PATH (oood.sock or admin.sock) sending malformed
 *       datagrams: random bytes, empty and oversized datagrams, truncated
 *       headers, wrong magic, version, flags, status and lengths, requests
 *       of every type with well-sized random payloads (after a hello or
 *       without), descriptors attached where none belong (and too many of
 *       them); replies are read and their descriptors closed. Prints
 *       "garbage conns C msgs M replies R"; exits 1 only if PATH cannot be
 *       reached.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>
#include <ooo/shm.h>

#include "../../proto/wire.h"
#include "poke_ptx.h"


/* ---- randomness (splitmix64: one state per thread, from the seed) ---- */

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* in [0, n) (n > 0) */
static uint64_t below(uint64_t *s, uint64_t n)
{
	return rnd(s) % n;
}

static void fill(uint64_t *s, void *p, size_t n)
{
	unsigned char *c = p;

	while (n >= 8) {
		uint64_t v = rnd(s);

		memcpy(c, &v, 8);
		c += 8;
		n -= 8;
	}
	if (n) {
		uint64_t v = rnd(s);

		memcpy(c, &v, n);
	}
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void sleep_ms(unsigned ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* ---- the checker ---- */

#define CK_REGION (256u << 10)    /* each thread's part of the buffer */
#define CK_STABLE (64u << 10)     /* written once, read back every 8th round */
#define CK_HOST_SLICE (512u << 10) /* each thread's part of the host region: sources, then a read-back */
#define CK_SYNC_MS 30000           /* a sync that takes longer: a hang */
#define CK_SLOW_MS 5000            /* a sync that ends after this: it slept through something (a lost wake-up) */
#define CK_CALL_S 60               /* a call that has not returned after this: a hang (the watchdog) */
#define CK_STALL_S 180             /* no round verified for this long: stalled */
#define CK_MAX_THREADS 4

struct ck {
	int id;
	pthread_t th;
	uint64_t rng;
	ooo_queue *q;
	ooo_event *ev;
	uint64_t base;           /* the region's device address */
	unsigned char *expect;   /* the host's model of the region */
	unsigned char *got;      /* read back */
	unsigned char *src;      /* HtoD sources (ordinary memory) */
	unsigned char *hsrc;     /* HtoD sources in the host region (zero copy) */
	unsigned char *hgot;     /* read back into the host region */
	/* what it did, for the report */
	uint64_t rounds, verified, resets, refused, faults, commands, completed, lost, stable, launches, events;
	double max_sync_ms;
	/* the watchdog's view: the call under way and since when (0: none) */
	const char *volatile op;
	volatile double since;
	volatile double last_verified;
	int failed;
	char log[512]; /* the round's commands so far, for a failure's report */
	size_t loglen;
};

static ooo_session *ck_s;
static ooo_buf *ck_buf, *ck_stable, *ck_scratch;
static ooo_kernel *ck_kernel;
static unsigned char *ck_host;
static unsigned char ck_stable_pat[CK_STABLE];
static volatile int ck_stop;
static int ck_n; /* threads */
static pthread_mutex_t ck_print = PTHREAD_MUTEX_INITIALIZER;

#define CK_FAIL(c, ...)                                                                                    \
	do {                                                                                               \
		pthread_mutex_lock(&ck_print);                                                             \
		printf("FAIL checker thread %d round %llu: ", (c)->id, (unsigned long long)(c)->rounds);  \
		printf(__VA_ARGS__);                                                                       \
		printf(" (the round:%s)\n", (c)->log);                                                     \
		fflush(stdout);                                                                            \
		pthread_mutex_unlock(&ck_print);                                                           \
		(c)->failed++;                                                                             \
	} while (0)

__attribute__((format(printf, 2, 3))) static void ck_log(struct ck *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->loglen >= sizeof(c->log) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(c->log + c->loglen, sizeof(c->log) - c->loglen, fmt, ap);
	va_end(ap);
	if (n > 0)
		c->loglen += (size_t)n;
	if (c->loglen >= sizeof(c->log))
		c->loglen = sizeof(c->log) - 1;
}

static void ck_begin(struct ck *c, const char *op)
{
	c->since = now_ms();
	c->op = op;
}

static void ck_end(struct ck *c)
{
	c->op = NULL;
	c->since = 0;
}

/* The first difference of n bytes, or -1 */
static long first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return (long)i;
	return -1;
}

enum ck_outcome { CK_OK, CK_RESET, CK_FAILED };

/*
 * r from a call named op: go on (0), start the round again (a reset), or fail. OOO_EFAULT counts as a
 * reset: another tenant's kernel faulted in the context they share (the same trust domain), and what
 * was in flight there may get it too (docs/architecture.md); the executor is replaced after it.
 */
static enum ck_outcome ck_check(struct ck *c, int r, const char *op)
{
	if (r == 0)
		return CK_OK;
	if (r == -OOO_EFAULT)
		c->faults++;
	if (r == -OOO_EDEVRESET || r == -OOO_EFAULT)
		return CK_RESET;
	CK_FAIL(c, "%s: %d (%s): %s", op, r, ooo_strerror(r), ooo_last_error());
	return CK_FAILED;
}

#define CK_CALL(c, op, call)                                                                               \
	do {                                                                                               \
		int r_;                                                                                    \
		ck_begin(c, op);                                                                           \
		r_ = (call);                                                                               \
		ck_end(c);                                                                                 \
		if ((out = ck_check(c, r_, op)) != CK_OK)                                                  \
			goto done;                                                                         \
		n_cmds++;                                                                                  \
	} while (0)

/* One round: the region rewritten in pieces, synced, read back and compared. */
static enum ck_outcome ck_round(struct ck *c)
{
	enum ck_outcome out = CK_OK;
	uint64_t n_cmds = 0;
	uint32_t v = (uint32_t)rnd(&c->rng);
	size_t hused = 0;
	bool recorded = false, synced = false;
	int pieces = 1 + (int)below(&c->rng, 6);
	double t0;
	int r;

	/* the whole region first: the round's result depends on nothing before it */
	for (size_t i = 0; i < CK_REGION; i += 4)
		memcpy(c->expect + i, &v, 4);
	c->loglen = 0;
	c->log[0] = '\0';
	ck_log(c, " fill %#x", v);
	CK_CALL(c, "memset (fill)", ooo_memset(c->q, c->base, v, CK_REGION / 4, 4));
	for (int p = 0; p < pieces; p++) {
		static const size_t lens[] = { 64, 4096, 65536 };
		size_t len = 1 + below(&c->rng, lens[below(&c->rng, 3)]);
		size_t off = below(&c->rng, CK_REGION - len + 1);

		switch (below(&c->rng, 7)) {
		case 0:
		case 1: /* HtoD, staged */
			fill(&c->rng, c->src, len);
			memcpy(c->expect + off, c->src, len);
			ck_log(c, " htod %zu+%zu", off, len);
			CK_CALL(c, "htod", ooo_memcpy_htod(c->q, c->base + off, c->src, len));
			break;
		case 2: /* HtoD from the host region: the GPU reads it in place, so it stays until the sync */
			if (hused + len > CK_HOST_SLICE / 2) {
				p--;
				break;
			}
			fill(&c->rng, c->hsrc + hused, len);
			memcpy(c->expect + off, c->hsrc + hused, len);
			ck_log(c, " htod(host) %zu+%zu", off, len);
			CK_CALL(c, "htod (host region)", ooo_memcpy_htod(c->q, c->base + off, c->hsrc + hused, len));
			hused += (len + 255) & ~(size_t)255;
			break;
		case 3: { /* memset of 1, 2 or 4 byte elements */
			unsigned es = 1u << below(&c->rng, 3);
			uint32_t val = (uint32_t)rnd(&c->rng) & (es == 4 ? 0xffffffffu : (1u << (es * 8)) - 1);
			size_t count = len / es ? len / es : 1;

			off &= ~(size_t)(es - 1);
			if (off + count * es > CK_REGION)
				count = (CK_REGION - off) / es;
			for (size_t i = 0; i < count; i++)
				memcpy(c->expect + off + i * es, &val, es); /* little endian: the element's low bytes */
			ck_log(c, " memset%u %zu+%zu", es, off, count);
			CK_CALL(c, "memset", ooo_memset(c->q, c->base + off, val, count, es));
			break;
		}
		case 4: { /* DtoD within the region, the two ranges apart */
			size_t half = CK_REGION / 2, l = len > half ? half : len;
			size_t a = below(&c->rng, half - l + 1), b = half + below(&c->rng, half - l + 1);

			if (below(&c->rng, 2)) {
				size_t t = a;
				a = b;
				b = t;
			}
			memcpy(c->expect + b, c->expect + a, l);
			ck_log(c, " dtod %zu<-%zu+%zu", b, a, l);
			CK_CALL(c, "dtod", ooo_memcpy_dtod(c->q, c->base + b, c->base + a, l));
			break;
		}
		case 5: { /* a launch (its kernel runs nowhere here; it writes the scratch buffer on a GPU) */
			uint32_t grid[3] = { 1, 1, 1 }, block[3] = { 32, 1, 1 };
			uint64_t pa = ooo_buf_addr(ck_scratch) + 256u * (unsigned)c->id;

			ck_log(c, " launch");
			CK_CALL(c, "launch", ooo_launch(c->q, ck_kernel, grid, block, 0, &pa, sizeof(pa)));
			c->launches++;
			break;
		}
		default: /* an event record: a clean sync after it must find it complete */
			ck_log(c, " record");
			CK_CALL(c, "event record", ooo_event_record(c->q, c->ev));
			recorded = true;
			c->events++;
			break;
		}
	}
	t0 = now_ms();
	ck_begin(c, "sync");
	r = ooo_queue_sync(c->q, CK_SYNC_MS);
	ck_end(c);
	if (now_ms() - t0 > c->max_sync_ms)
		c->max_sync_ms = now_ms() - t0;
	if (r == -ETIMEDOUT) {
		CK_FAIL(c, "sync: no completion within %d ms (%llu commands in flight)", CK_SYNC_MS,
			(unsigned long long)n_cmds);
		out = CK_FAILED;
		goto done;
	}
	/*
	 * A sync is answered in milliseconds here, across an executor's death too (at once, with
	 * OOO_EDEVRESET): one that took seconds slept through its wake-up, until something else came
	 * (the successor taking the session, seconds later)
	 */
	if (now_ms() - t0 > 1000) {
		pthread_mutex_lock(&ck_print);
		printf("slow sync: thread %d round %llu: %d after %.0f ms (the round:%s)\n", c->id,
		       (unsigned long long)c->rounds, r, now_ms() - t0, c->log);
		pthread_mutex_unlock(&ck_print);
	}
	if (now_ms() - t0 > CK_SLOW_MS) {
		CK_FAIL(c, "sync: %d (%s) after %.0f ms", r, ooo_strerror(r), now_ms() - t0);
		out = CK_FAILED;
		goto done;
	}
	if ((out = ck_check(c, r, "sync")) != CK_OK)
		goto done;
	c->completed += n_cmds;
	c->commands += n_cmds;
	n_cmds = 0;
	synced = true;
	if (recorded) {
		ck_begin(c, "event wait");
		r = ooo_event_wait(c->ev, 0);
		ck_end(c);
		if (r == -ETIMEDOUT) {
			CK_FAIL(c, "a clean sync, yet the event recorded before it is not complete (a lost completion)");
			out = CK_FAILED;
			goto done;
		}
		if ((out = ck_check(c, r, "event wait")) != CK_OK)
			goto done;
	}
	/* read it back: into ordinary memory, or into the host region (zero copy) */
	{
		bool zero = below(&c->rng, 3) == 0;
		unsigned char *dst = zero ? c->hgot : c->got;
		long d;

		memset(dst, 0xee, CK_REGION);
		ck_log(c, " sync dtoh%s", zero ? "(host)" : "");
		CK_CALL(c, zero ? "dtoh (host region)" : "dtoh", ooo_memcpy_dtoh(c->q, dst, c->base, CK_REGION));
		if ((d = first_diff(dst, c->expect, CK_REGION)) >= 0) {
			CK_FAIL(c, "byte %ld of the region read back (%s) is 0x%02x, not 0x%02x, after a clean sync", d,
				zero ? "host region" : "staged", dst[d], c->expect[d]);
			out = CK_FAILED;
			goto done;
		}
	}
	if (c->rounds % 8 == 0) {
		size_t len = 1 + below(&c->rng, CK_STABLE), off = below(&c->rng, CK_STABLE - len + 1);
		long d;

		memset(c->got, 0xee, len);
		ck_log(c, " dtoh(stable) %zu+%zu", off, len);
		CK_CALL(c, "dtoh (stable)", ooo_memcpy_dtoh(c->q, c->got, ooo_buf_addr(ck_stable) + off, len));
		if ((d = first_diff(c->got, ck_stable_pat + off, len)) >= 0) {
			CK_FAIL(c, "byte %zu of the buffer written once is 0x%02x, not 0x%02x", off + (size_t)d,
				c->got[d], ck_stable_pat[off + (size_t)d]);
			out = CK_FAILED;
			goto done;
		}
		c->stable++;
	}
	c->completed += n_cmds;
	c->commands += n_cmds;
	n_cmds = 0;
	c->verified++;
	c->last_verified = now_ms();
done:
	if (out == CK_RESET) {
		/*
		 * what this round had in flight failed with the executor; a round whose first command was
		 * refused (the executor is being replaced) had nothing in flight
		 */
		if (n_cmds || synced)
			c->resets++;
		else
			c->refused++;
		c->lost += n_cmds;
		c->commands += n_cmds;
		/* the event's records before the reset ended with it: none is left pending */
		ck_begin(c, "event wait (after a reset)");
		r = ooo_event_wait(c->ev, 0);
		ck_end(c);
		if (r != 0 && r != -OOO_EDEVRESET && r != -OOO_EFAULT) {
			CK_FAIL(c, "after a reset, the event: %d (%s)", r, ooo_strerror(r));
			out = CK_FAILED;
		}
	}
	return out;
}

static void *ck_thread(void *arg)
{
	struct ck *c = arg;

	c->last_verified = now_ms();
	while (!ck_stop && !c->failed) {
		enum ck_outcome o = ck_round(c);

		c->rounds++;
		if (o == CK_RESET)
			sleep_ms(20); /* submissions are refused while the executor is replaced */
		if (o == CK_FAILED)
			break;
	}
	return NULL;
}

static void *ck_watchdog(void *arg)
{
	struct ck *cs = arg;

	for (;;) {
		sleep_ms(500);
		for (int i = 0; i < ck_n; i++) {
			struct ck *c = &cs[i];
			double since = c->since, t = now_ms();
			const char *op = c->op;

			if (op && since && t - since > CK_CALL_S * 1e3) {
				printf("FAIL checker thread %d round %llu: %s has not returned after %d s (a hang)\n", c->id,
				       (unsigned long long)c->rounds, op, CK_CALL_S);
				fflush(stdout);
				_exit(1);
			}
			if (!ck_stop && t - c->last_verified > CK_STALL_S * 1e3) {
				printf("FAIL checker thread %d: no round verified for %d s (%llu rounds, %llu resets)\n",
				       c->id, CK_STALL_S, (unsigned long long)c->rounds, (unsigned long long)c->resets);
				fflush(stdout);
				_exit(1);
			}
		}
	}
	return NULL;
}

static int checker(const char *sock, uint64_t seed, int nthreads)
{
	struct ooo_open_opts oo = { .sz = sizeof(oo), .path = sock, .name = "soak-checker" };
	static struct ck cs[CK_MAX_THREADS];
	uint64_t rng = seed;
	pthread_t wd;
	char line[64];
	int r, fails = 0;
	struct {
		uint64_t rounds, verified, resets, refused, faults, commands, completed, lost, stable, launches, events;
		double max_sync_ms;
	} t = { 0 };
	ooo_module *m;

	if (nthreads < 1 || nthreads > CK_MAX_THREADS)
		return fprintf(stderr, "checker: 1 to %d threads\n", CK_MAX_THREADS), 2;
	ck_n = nthreads;
	ck_s = ooo_open_opts(&oo);
	if (!ck_s)
		return printf("FAIL checker open: %s (%s)\n", ooo_strerror(errno), ooo_last_error()), 1;
	if ((r = ooo_buf_alloc(ck_s, (size_t)nthreads * CK_REGION, 0, &ck_buf)) ||
	    (r = ooo_buf_alloc(ck_s, CK_STABLE, 0, &ck_stable)) || (r = ooo_buf_alloc(ck_s, 4096, 0, &ck_scratch)) ||
	    (r = ooo_host_alloc(ck_s, (size_t)nthreads * CK_HOST_SLICE, (void **)&ck_host)) ||
	    (r = ooo_module_load(ck_s, OOO_PTX, poke_ptx, sizeof(poke_ptx) - 1, &m)) ||
	    (r = ooo_kernel_get(m, "poke", &ck_kernel)))
		return printf("FAIL checker setup: %d (%s): %s\n", r, ooo_strerror(r), ooo_last_error()), 1;
	for (int i = 0; i < nthreads; i++) {
		struct ck *c = &cs[i];

		c->id = i;
		c->rng = rnd(&rng);
		c->base = ooo_buf_addr(ck_buf) + (uint64_t)i * CK_REGION;
		c->expect = malloc(CK_REGION);
		c->got = malloc(CK_REGION);
		c->src = malloc(CK_REGION);
		c->hsrc = ck_host + (size_t)i * CK_HOST_SLICE;
		c->hgot = c->hsrc + CK_HOST_SLICE / 2;
		if (!c->expect || !c->got || !c->src)
			return printf("FAIL checker: out of memory\n"), 1;
		if ((r = ooo_queue_create(ck_s, NULL, &c->q)) || (r = ooo_event_create(ck_s, &c->ev)))
			return printf("FAIL checker queue %d: %d (%s): %s\n", i, r, ooo_strerror(r), ooo_last_error()), 1;
	}
	/* the buffer written once, read back through the soak */
	fill(&rng, ck_stable_pat, sizeof(ck_stable_pat));
	if ((r = ooo_memcpy_htod(cs[0].q, ooo_buf_addr(ck_stable), ck_stable_pat, CK_STABLE)) ||
	    (r = ooo_queue_sync(cs[0].q, CK_SYNC_MS)))
		return printf("FAIL checker: writing the stable buffer: %d (%s): %s\n", r, ooo_strerror(r),
			      ooo_last_error()),
		       1;
	pthread_create(&wd, NULL, ck_watchdog, cs);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&cs[i].th, NULL, ck_thread, &cs[i]);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "stop", 4))
		;
	ck_stop = 1;
	for (int i = 0; i < nthreads; i++) {
		struct ck *c = &cs[i];

		pthread_join(c->th, NULL);
		fails += c->failed;
		t.rounds += c->rounds;
		t.verified += c->verified;
		t.resets += c->resets;
		t.refused += c->refused;
		t.faults += c->faults;
		t.commands += c->commands;
		t.completed += c->completed;
		t.lost += c->lost;
		t.stable += c->stable;
		t.launches += c->launches;
		t.events += c->events;
		if (c->max_sync_ms > t.max_sync_ms)
			t.max_sync_ms = c->max_sync_ms;
	}
	/* clean up as a tenant would (the watchdog still bounds each call) */
	for (int i = 0; i < nthreads && !fails; i++) {
		struct ck *c = &cs[i];

		ck_begin(c, "clean-up");
		ooo_event_destroy(c->ev);
		r = ooo_queue_destroy(c->q);
		if (r && r != -OOO_EDEVRESET)
			CK_FAIL(c, "queue destroy: %d (%s): %s", r, ooo_strerror(r), ooo_last_error());
		ck_end(c);
		c->q = NULL;
		fails += c->failed;
	}
	if (!fails) {
		int rs[4];

		ck_begin(&cs[0], "clean-up (buffers)");
		rs[0] = ooo_buf_free(ck_buf);
		rs[1] = ooo_buf_free(ck_stable);
		rs[2] = ooo_buf_free(ck_scratch);
		rs[3] = ooo_host_free(ck_s, ck_host);
		ck_end(&cs[0]);
		for (int i = 0; i < 4; i++)
			if (rs[i]) {
				printf("FAIL checker clean-up: free %d: %d (%s): %s\n", i, rs[i], ooo_strerror(rs[i]),
				       ooo_last_error());
				fails++;
			}
		ooo_close(ck_s);
	}
	printf("checker threads %d rounds %llu verified %llu resets %llu refused %llu faults %llu commands %llu "
	       "completed %llu lost %llu stable %llu launches %llu events %llu max_sync_ms %.1f\n",
	       nthreads, (unsigned long long)t.rounds, (unsigned long long)t.verified, (unsigned long long)t.resets,
	       (unsigned long long)t.refused, (unsigned long long)t.faults, (unsigned long long)t.commands, (unsigned long long)t.completed,
	       (unsigned long long)t.lost, (unsigned long long)t.stable, (unsigned long long)t.launches,
	       (unsigned long long)t.events, t.max_sync_ms);
	if (t.commands != t.completed + t.lost) {
		printf("FAIL checker: %llu commands, %llu completed and %llu lost to resets\n",
		       (unsigned long long)t.commands, (unsigned long long)t.completed, (unsigned long long)t.lost);
		fails++;
	}
	if (!t.verified) {
		printf("FAIL checker: no round verified\n");
		fails++;
	}
	return fails ? 1 : 0;
}

/* ---- an ordinary tenant, killed or not ---- */

static bool worker_ok(int r)
{
	return r == 0 || r == -OOO_EDEVRESET || r == -OOO_EFAULT || r == -OOO_ENODEV || r == -OOO_ELIMIT;
}

#define W_MAXQ 4
#define W_MAXB 4

/*
 * How a tenant of the soak goes (0..3): closing its session (0, 1: the
 * caller freed its handles first for 0), exiting without a word (2), or
 * killed (3). Returns 0 when it returns at all.
 */
static int leave(ooo_session *s, unsigned how)
{
	if (how == 2)
		_exit(0);
	if (how >= 3)
		raise(SIGKILL);
	ooo_close(s);
	return 0;
}

static int worker(const char *sock, uint64_t seed)
{
	struct ooo_open_opts oo = { .sz = sizeof(oo), .path = sock, .name = "soak-worker" };
	uint64_t rng = seed;
	ooo_session *s = ooo_open_opts(&oo);
	ooo_queue *q[W_MAXQ] = { 0 };
	ooo_buf *b[W_MAXB] = { 0 };
	ooo_module *m = NULL;
	ooo_kernel *k = NULL;
	ooo_event *ev = NULL;
	unsigned char *host = NULL, *tmp;
	int rounds = 20 + (int)below(&rng, 2000), r = 0, nq = 0, nb = 0, i;
	unsigned how;
	const char *op = "open";

	if (!s) {
		r = -errno;
		if (worker_ok(r))
			return printf("worker: open: %s\n", ooo_strerror(r)), 0;
		goto bad;
	}
	tmp = malloc(1u << 20);
	if (!tmp)
		return 1;
	/* set up, in a random order of what it holds */
	for (i = 0; i < 1 + (int)below(&rng, W_MAXQ); i++) {
		op = "queue create";
		if ((r = ooo_queue_create(s, NULL, &q[nq])) == 0)
			nq++;
		else if (!worker_ok(r))
			goto bad;
	}
	for (i = 0; i < 1 + (int)below(&rng, W_MAXB); i++) {
		op = "buffer alloc";
		if ((r = ooo_buf_alloc(s, 4096 + below(&rng, 4u << 20), 0, &b[nb])) == 0)
			nb++;
		else if (!worker_ok(r))
			goto bad;
	}
	if (below(&rng, 2)) {
		op = "module load";
		if ((r = ooo_module_load(s, OOO_PTX, poke_ptx, sizeof(poke_ptx) - 1, &m)) == 0) {
			op = "kernel get";
			if ((r = ooo_kernel_get(m, "poke", &k)) && !worker_ok(r))
				goto bad;
			if (r)
				k = NULL;
		} else if (!worker_ok(r)) {
			goto bad;
		}
	}
	if (below(&rng, 2)) {
		op = "host alloc";
		if ((r = ooo_host_alloc(s, 2u << 20, (void **)&host)) && !worker_ok(r))
			goto bad;
		if (r)
			host = NULL;
	}
	if (nq && below(&rng, 2)) {
		op = "event create";
		if ((r = ooo_event_create(s, &ev)) && !worker_ok(r))
			goto bad;
		if (r)
			ev = NULL;
	}
	printf("ready\n");
	fflush(stdout);
	for (int n = 0; n < rounds && nq && nb; n++) {
		ooo_queue *qq = q[below(&rng, (uint64_t)nq)];
		ooo_buf *bb = b[below(&rng, (uint64_t)nb)];
		size_t size = ooo_buf_size(bb), len = 1 + below(&rng, size < (1u << 20) ? size : (1u << 20));
		size_t off = below(&rng, size - len + 1);

		switch (below(&rng, 10)) {
		case 0:
			op = "memset";
			r = ooo_memset(qq, ooo_buf_addr(bb) + (off & ~3ul), (uint32_t)rnd(&rng), len / 4 ? len / 4 : 1, 4);
			break;
		case 1:
			op = "htod";
			fill(&rng, tmp, len);
			r = ooo_memcpy_htod(qq, ooo_buf_addr(bb) + off, tmp, len);
			break;
		case 2:
			op = "htod (host region)";
			r = host ? ooo_memcpy_htod(qq, ooo_buf_addr(bb) + off, host, len < (2u << 20) ? len : (2u << 20)) : 0;
			break;
		case 3:
			op = "dtoh";
			r = ooo_memcpy_dtoh(qq, tmp, ooo_buf_addr(bb) + off, len);
			break;
		case 4:
			op = "dtod"; /* (the buffer's first and last (len + 1) / 2 bytes: apart, it is at least 2 MiB) */
			r = ooo_memcpy_dtod(qq, ooo_buf_addr(bb), ooo_buf_addr(bb) + size - (len + 1) / 2, (len + 1) / 2);
			break;
		case 5: {
			uint32_t grid[3] = { 1 + (uint32_t)below(&rng, 64), 1, 1 }, block[3] = { 32, 1, 1 };
			uint64_t pa = ooo_buf_addr(bb);

			op = "launch";
			for (int j = 0; k && j < 1 + (int)below(&rng, 20) && r == 0; j++)
				r = ooo_launch(qq, k, grid, block, 0, &pa, sizeof(pa));
			break;
		}
		case 6:
			op = "event";
			if (ev) {
				r = ooo_event_record(qq, ev);
				if (r == 0)
					r = ooo_queue_wait_event(q[below(&rng, (uint64_t)nq)], ev);
			}
			break;
		case 7: { /* a buffer comes or goes */
			int j = (int)below(&rng, (uint64_t)nb);

			op = "buffer free/alloc";
			if (nb > 1 && below(&rng, 2)) {
				r = ooo_queue_sync(qq, 20000); /* nothing may still use it */
				for (int x = 0; x < nq && worker_ok(r); x++)
					r = ooo_queue_sync(q[x], 20000);
				if (worker_ok(r)) {
					r = ooo_buf_free(b[j]);
					b[j] = b[--nb];
				}
			} else if (nb < W_MAXB) {
				if ((r = ooo_buf_alloc(s, 4096 + below(&rng, 4u << 20), 0, &b[nb])) == 0)
					nb++;
			}
			break;
		}
		default:
			op = "sync";
			r = ooo_queue_sync(qq, 20000);
			break;
		}
		if (!worker_ok(r))
			goto bad;
		if (r == -OOO_EDEVRESET || r == -OOO_ENODEV)
			sleep_ms(20);
	}
	printf("worker done\n");
	fflush(stdout);
	/* leave: cleanly, or with work in flight, or dead */
	how = below(&rng, 4);
	if (how == 0) {
		for (i = 0; i < nq; i++)
			ooo_queue_destroy(q[i]);
		for (i = 0; i < nb; i++)
			ooo_buf_free(b[i]);
		if (host)
			ooo_host_free(s, host);
		ooo_module_unload(m);
	}
	return leave(s, how);
bad:
	printf("FAIL worker: %s: %d (%s): %s\n", op, r, ooo_strerror(r), ooo_last_error());
	return 1;
}

/* ---- a tenant that writes garbage into its own session area ---- */

static bool fd_is(int fd, const char *what)
{
	char path[64], link[256];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	return strstr(link, what) != NULL;
}

static bool is_stream(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

/* The session area and the doorbell, as libooo holds them */
static int find_area(int *area, int *bell)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	*area = *bell = -1;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
			continue;
		if (fd_is(fd, "memfd:ooo-session"))
			*area = fd;
		else if (is_stream(fd))
			*bell = fd;
	}
	closedir(d);
	return *area >= 0 && *bell >= 0 ? 0 : -1;
}

static void on_alarm(int sig)
{
	(void)sig;
	/* its own calls may wait on what it broke: that is its problem, not oood's */
	static const char msg[] = "rings: out of time\n";
	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(0);
}

static int rings(const char *sock, uint64_t seed)
{
	uint64_t rng = seed;
	ooo_session *s = ooo_open(sock);
	ooo_queue *q = NULL;
	ooo_buf *b = NULL;
	ooo_module *m = NULL;
	ooo_kernel *k = NULL;
	struct ooo_shm_hdr h;
	struct ooo_ring_ctl *sqc, *cqc;
	struct stat st;
	unsigned char *a;
	int area, bell, r, n = 20 + (int)below(&rng, 300), done = 0;
	unsigned how;

	signal(SIGALRM, on_alarm);
	alarm(10);
	if (!s)
		return printf("rings: open: %s\n", ooo_strerror(errno)), 0;
	if ((r = ooo_queue_create(s, NULL, &q)) || (r = ooo_buf_alloc(s, 1u << 20, 0, &b)) ||
	    (r = ooo_module_load(s, OOO_PTX, poke_ptx, sizeof(poke_ptx) - 1, &m)) || (r = ooo_kernel_get(m, "poke", &k)) ||
	    (r = ooo_memset(q, ooo_buf_addr(b), 1, 1024, 4)) || (r = ooo_queue_sync(q, 10000))) {
		if (worker_ok(r) || r == -ETIMEDOUT)
			return printf("rings: set-up: %s\n", ooo_strerror(r)), 0;
		return printf("FAIL rings set-up: %d (%s): %s\n", r, ooo_strerror(r), ooo_last_error()), 1;
	}
	if (find_area(&area, &bell) || fstat(area, &st))
		return printf("FAIL rings: no session area or doorbell among the descriptors\n"), 1;
	a = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, area, 0);
	if (a == MAP_FAILED)
		return printf("FAIL rings: mmap: %s\n", strerror(errno)), 1;
	memcpy(&h, a, sizeof(h));
	if (h.magic != OOO_SHM_MAGIC || h.sq_ctl_off + sizeof(*sqc) > (uint64_t)st.st_size ||
	    h.cq_ctl_off + sizeof(*cqc) > (uint64_t)st.st_size ||
	    h.sq_off + (uint64_t)h.sq_entries * sizeof(struct ooo_sqe) > (uint64_t)st.st_size || !h.sq_entries ||
	    h.staging_off + h.staging_size > (uint64_t)st.st_size)
		return printf("FAIL rings: the area's header is not what <ooo/shm.h> says\n"), 1;
	sqc = (struct ooo_ring_ctl *)(a + h.sq_ctl_off);
	cqc = (struct ooo_ring_ctl *)(a + h.cq_ctl_off);
	for (int i = 0; i < n; i++) {
		struct ooo_sqe *sq = (struct ooo_sqe *)(a + h.sq_off);
		uint32_t tail = __atomic_load_n(&sqc->tail, __ATOMIC_RELAXED);

		switch (below(&rng, 12)) {
		case 0: /* a tail far from the head */
			__atomic_store_n(&sqc->tail, (uint32_t)rnd(&rng), __ATOMIC_RELEASE);
			break;
		case 1: /* entries of random bytes, published */
		case 2: {
			uint32_t c = 1 + (uint32_t)below(&rng, 16);

			for (uint32_t j = 0; j < c; j++)
				fill(&rng, &sq[(tail + j) & (h.sq_entries - 1)], sizeof(struct ooo_sqe));
			__atomic_store_n(&sqc->tail, tail + c, __ATOMIC_RELEASE);
			break;
		}
		case 3:
		case 4: { /* well-formed commands that name what is not theirs */
			uint32_t c = 1 + (uint32_t)below(&rng, 16);

			for (uint32_t j = 0; j < c; j++) {
				struct ooo_sqe e = { 0 };
				static const uint64_t wild[] = { 0, 1, 4095, 0x1000, 0xffffffffffffffffull,
								 0x7fffffffffffull, 0x600000000000ull };

				e.opcode = (uint8_t)below(&rng, OOO_OP_MAX + 2);
				e.flags = (uint8_t)(below(&rng, 4) ? OOO_SQE_NOTIFY : rnd(&rng));
				e.queue = (uint16_t)(below(&rng, 2) ? below(&rng, 4) : rnd(&rng));
				e.user_data = rnd(&rng);
				switch (e.opcode) {
				case OOO_OP_LAUNCH:
					e.launch.kernel = (uint32_t)(below(&rng, 2) ? below(&rng, 4) : rnd(&rng));
					e.launch.grid[0] = (uint32_t)rnd(&rng);
					e.launch.grid[1] = e.launch.grid[2] = 1;
					e.launch.block[0] = (uint32_t)below(&rng, 2048);
					e.launch.block[1] = e.launch.block[2] = 1;
					e.launch.param_len = (uint32_t)(below(&rng, 2) ? 8 : rnd(&rng));
					e.launch.param_off = below(&rng, 2) ? below(&rng, h.staging_size) & ~7ull : rnd(&rng);
					/* a parameter in the null page: the stand-in's fault, were it run */
					break;
				case OOO_OP_HTOD:
				case OOO_OP_DTOH:
				case OOO_OP_DTOD:
					e.copy.dst = below(&rng, 2) ? ooo_buf_addr(b) + below(&rng, 2u << 20) : wild[below(&rng, 7)];
					e.copy.src = below(&rng, 2) ? below(&rng, h.staging_size + 4096)
								    : OOO_HOST_ADDR(below(&rng, 70), rnd(&rng) >> 20);
					e.copy.len = below(&rng, 2) ? below(&rng, 1u << 21) : rnd(&rng);
					break;
				case OOO_OP_MEMSET:
					e.set.dst = below(&rng, 2) ? ooo_buf_addr(b) + below(&rng, 2u << 20) : wild[below(&rng, 7)];
					e.set.count = below(&rng, 2) ? below(&rng, 1u << 20) : rnd(&rng);
					e.set.elsize = (uint32_t)below(&rng, 6);
					e.set.value = (uint32_t)rnd(&rng);
					break;
				case OOO_OP_EVENT_RECORD:
				case OOO_OP_EVENT_WAIT:
					e.event.event = (uint32_t)(below(&rng, 2) ? below(&rng, 2048) : rnd(&rng));
					break;
				default:
					break;
				}
				memcpy(&sq[(tail + j) & (h.sq_entries - 1)], &e, sizeof(e));
			}
			__atomic_store_n(&sqc->tail, tail + c, __ATOMIC_RELEASE);
			break;
		}
		case 5: /* the completion ring's head (its own index) anywhere */
			__atomic_store_n(&cqc->head, (uint32_t)rnd(&rng), __ATOMIC_RELEASE);
			break;
		case 6: /* the flags, both rings */
			__atomic_store_n(&sqc->flags, (uint32_t)rnd(&rng), __ATOMIC_RELEASE);
			__atomic_store_n(&cqc->flags, (uint32_t)rnd(&rng), __ATOMIC_RELEASE);
			break;
		case 7: /* the executor's own indices */
			__atomic_store_n(&sqc->head, (uint32_t)rnd(&rng), __ATOMIC_RELEASE);
			__atomic_store_n(&cqc->tail, (uint32_t)rnd(&rng), __ATOMIC_RELEASE);
			break;
		case 8: /* the header (oood's) and the staging area */
			fill(&rng, a + 8 + below(&rng, sizeof(h) - 8), 4);
			fill(&rng, a + h.staging_off + below(&rng, h.staging_size - 4096), 4096);
			break;
		case 9: /* a flood of rings */
			for (int j = 0; j < 64; j++)
				(void)send(bell, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
			break;
		case 10: /* an ordinary command of its own amid the garbage (its result does not matter) */
			(void)ooo_memset(q, ooo_buf_addr(b), (uint32_t)i, 1024, 4);
			(void)ooo_queue_sync(q, 200);
			break;
		default: /* a launch whose parameter faults were it run: the stand-in only faults below 4096 */
			{
				uint32_t grid[3] = { 1, 1, 1 }, block[3] = { 32, 1, 1 };
				uint64_t pa = ooo_buf_addr(b) + 64;

				(void)ooo_launch(q, k, grid, block, 0, &pa, sizeof(pa));
			}
			break;
		}
		(void)send(bell, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		done++;
		if (below(&rng, 4) == 0)
			sleep_ms((unsigned)below(&rng, 5));
	}
	printf("rings %d\n", done);
	fflush(stdout);
	how = below(&rng, 4);
	if (how == 0) /* its end of the doorbell shut, then gone */
		shutdown(bell, SHUT_RDWR);
	return leave(s, how);
}

/* ---- malformed datagrams on oood's sockets ---- */

/* a descriptor of some kind to pass where none belongs (the caller closes it) */
static int some_fd(uint64_t *rng)
{
	int p[2], fd;

	switch (below(rng, 5)) {
	case 0:
		if (pipe2(p, O_CLOEXEC))
			return -1;
		close(p[1]);
		return p[0];
	case 1:
		return eventfd(0, EFD_CLOEXEC);
	case 2:
		fd = memfd_create("soak-garbage", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd >= 0 && below(rng, 2)) {
			(void)!write(fd, poke_ptx, sizeof(poke_ptx) - 1);
			(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
		}
		return fd;
	case 3:
		return open("/dev/null", O_RDWR | O_CLOEXEC);
	default:
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p))
			return -1;
		close(p[1]);
		return p[0];
	}
}

/* send len bytes of buf with nfds descriptors of random kinds */
static void send_with_fds(int sock, const void *buf, size_t len, int nfds, uint64_t *rng)
{
	static int fds[253];
	static char cbuf[CMSG_SPACE(sizeof(fds))];
	struct iovec iov = { (void *)(uintptr_t)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int k = 0;

	for (; k < nfds && k < 253; k++)
		if ((fds[k] = some_fd(rng)) < 0)
			break;
	if (k) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)k);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)k);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)k);
	}
	(void)sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	for (int i = 0; i < k; i++)
		close(fds[i]);
}

/* read what came back (a little while), closing any descriptor in it; returns the replies, -1 at the end */
static int drain(int sock, int wait_ms)
{
	static char buf[OOO_MSG_MAX + 64];
	static char cbuf[CMSG_SPACE(sizeof(int) * 16)];
	int got = 0;

	for (;;) {
		struct pollfd p = { sock, POLLIN, 0 };
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		ssize_t n;

		if (poll(&p, 1, wait_ms) <= 0)
			return got;
		n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n <= 0)
			return got ? got : -1;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
				size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				for (size_t i = 0; i < nfd; i++) {
					int fd;
					memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
					close(fd);
				}
			}
		}
		got++;
		wait_ms = 0;
	}
}

/* a request of type with a payload of the size that type takes, its fields random or plausible */
static size_t make_request(uint64_t *rng, bool admin, unsigned char *out, size_t cap, uint32_t seq)
{
	static const uint16_t tenant_types[] = { OOO_MSG_PING, OOO_MSG_BYE, OOO_MSG_BUF_ALLOC, OOO_MSG_BUF_FREE,
						 OOO_MSG_BUF_EXPORT, OOO_MSG_ATTACH, OOO_MSG_QUEUE_CREATE,
						 OOO_MSG_QUEUE_DESTROY, OOO_MSG_MODULE_LOAD, OOO_MSG_MODULE_UNLOAD,
						 OOO_MSG_KERNEL_GET, OOO_MSG_HOST_ALLOC, OOO_MSG_HOST_FREE, OOO_MSG_LEASE,
						 OOO_MSG_STATUS, OOO_MSG_HELLO };
	/* (no evict, trace or MPS run: their subjects are processes and daemons outside this test) */
	static const uint16_t admin_types[] = { OOO_MSG_PING,	  OOO_MSG_STATUS,      OOO_MSG_TENANTS,
						OOO_MSG_SESSIONS, OOO_MSG_DEVICES,     OOO_MSG_SCHED,
						OOO_MSG_TELEMETRY, OOO_MSG_PROCS,      OOO_MSG_LEASES,
						OOO_MSG_MPS,	  OOO_MSG_PARTITIONS,  OOO_MSG_PARTITION_SET,
						OOO_MSG_PARDON,	  OOO_MSG_BUF_ALLOC,   OOO_MSG_HELLO,
						OOO_MSG_BYE };
	unsigned char p[1024];
	size_t plen = 0;
	uint16_t type = admin ? admin_types[below(rng, sizeof(admin_types) / sizeof(admin_types[0]))]
			      : tenant_types[below(rng, sizeof(tenant_types) / sizeof(tenant_types[0]))];
	ssize_t n;

	memset(p, 0, sizeof(p));
	switch (type) {
	case OOO_MSG_HELLO:
		plen = sizeof(struct ooo_msg_hello);
		snprintf(((struct ooo_msg_hello *)p)->name, OOO_NAME_MAX, "soak-garbage");
		break;
	case OOO_MSG_PING:
		plen = below(rng, OOO_PING_MAX + 1);
		fill(rng, p, plen < sizeof(p) ? plen : sizeof(p));
		if (plen > sizeof(p))
			plen = sizeof(p);
		break;
	case OOO_MSG_BUF_ALLOC: {
		struct ooo_msg_buf_alloc *x = (void *)p;
		x->size = below(rng, 2) ? below(rng, 64u << 20) : rnd(rng);
		x->device = below(rng, 2) ? OOO_DEVICE_ANY : (uint32_t)below(rng, 4);
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_BUF_FREE:
	case OOO_MSG_BUF_EXPORT: {
		struct ooo_msg_buf_ref *x = (void *)p;
		x->id = below(rng, 2) ? below(rng, 64) : rnd(rng);
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_ATTACH: {
		struct ooo_msg_attach *x = (void *)p;
		x->device = below(rng, 2) ? OOO_DEVICE_ANY : (uint32_t)below(rng, 4);
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_QUEUE_CREATE: {
		struct ooo_msg_queue_create *x = (void *)p;
		x->priority = (int32_t)below(rng, 101) - 1;
		x->slo_us = (uint32_t)rnd(rng);
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_QUEUE_DESTROY: {
		struct ooo_msg_queue *x = (void *)p;
		x->queue = (uint32_t)(below(rng, 2) ? below(rng, 8) : rnd(rng));
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_MODULE_LOAD: {
		struct ooo_msg_module_load *x = (void *)p;
		x->kind = 1 + (uint32_t)below(rng, 4);
		x->len = below(rng, 2) ? sizeof(poke_ptx) - 1 : 1 + below(rng, OOO_MODULE_MAX_BYTES);
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_MODULE_UNLOAD: {
		struct ooo_msg_module *x = (void *)p;
		x->module = (uint32_t)(below(rng, 2) ? below(rng, 8) : rnd(rng));
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_KERNEL_GET: {
		struct ooo_msg_kernel_get *x = (void *)p;
		x->module = (uint32_t)(below(rng, 2) ? below(rng, 8) : rnd(rng));
		snprintf(x->name, sizeof(x->name), below(rng, 2) ? "poke" : "nothing");
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_HOST_ALLOC:
	case OOO_MSG_HOST_FREE: {
		struct ooo_msg_host *x = (void *)p;
		x->region = (uint32_t)(below(rng, 2) ? below(rng, 64) : rnd(rng));
		x->size = below(rng, 2) ? below(rng, 8u << 20) : rnd(rng);
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_LEASE: {
		struct ooo_msg_lease_req *x = (void *)p;
		x->device = OOO_DEVICE_ANY;
		x->sm_pct = (uint32_t)below(rng, 101);
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_TENANTS:
	case OOO_MSG_SESSIONS:
	case OOO_MSG_DEVICES:
	case OOO_MSG_SCHED:
	case OOO_MSG_PROCS:
	case OOO_MSG_LEASES:
	case OOO_MSG_PARTITIONS: {
		struct ooo_msg_list_req *x = (void *)p;
		x->offset = (uint32_t)(below(rng, 2) ? below(rng, 4) : rnd(rng));
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_PARTITION_SET: {
		struct ooo_msg_partition_set *x = (void *)p;
		snprintf(x->class_name, sizeof(x->class_name), below(rng, 2) ? "default" : "nosuchclass");
		x->reset = (uint32_t)below(rng, 2);
		x->sms = x->reset ? 0 : (uint32_t)below(rng, 300);
		plen = sizeof(*x);
		break;
	}
	case OOO_MSG_PARDON: {
		struct ooo_msg_pardon *x = (void *)p;
		x->uid = (uint32_t)(below(rng, 2) ? 4000 + below(rng, 100) : rnd(rng));
		plen = sizeof(*x);
		break;
	}
	default: /* no payload */
		break;
	}
	/* now and then a payload one byte off, or a field it must not have */
	if (below(rng, 8) == 0)
		plen = plen ? plen - 1 : 8;
	else if (below(rng, 8) == 0 && plen >= 8)
		fill(rng, p + plen - 8, 8);
	n = wire_encode(out, cap, type, seq, 0, p, plen);
	return n > 0 ? (size_t)n : 0;
}

static int garbage(const char *path, uint64_t seed, int conns)
{
	static unsigned char buf[OOO_MSG_MAX + 4096];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	bool admin = strstr(path, "admin.sock") != NULL;
	uint64_t rng = seed;
	int msgs = 0, replies = 0, unreachable = 0;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	signal(SIGPIPE, SIG_IGN);
	for (int c = 0; c < conns; c++) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), k = 1 + (int)below(&rng, 6);
		struct timeval tv = { 1, 0 };
		int t;

		if (fd < 0)
			return printf("FAIL garbage: socket: %s\n", strerror(errno)), 1;
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		for (t = 0; t < 50 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)); t++)
			sleep_ms(100);
		if (t == 50) {
			if (++unreachable > 3)
				return printf("FAIL garbage: cannot connect to %s: %s\n", path, strerror(errno)), 1;
			close(fd);
			continue;
		}
		/* half the connections say hello first, so that requests reach their handlers */
		if (below(&rng, 2)) {
			struct ooo_msg_hello h = { 0 };
			size_t len;

			snprintf(h.name, sizeof(h.name), "soak-garbage");
			len = (size_t)wire_encode(buf, sizeof(buf), OOO_MSG_HELLO, 1, 0, &h, sizeof(h));
			(void)send(fd, buf, len, MSG_NOSIGNAL);
			msgs++;
			if (drain(fd, 50) > 0)
				replies++;
		}
		for (int i = 0; i < k; i++) {
			size_t len;
			int nfds = below(&rng, 4) == 0 ? (below(&rng, 4) ? 1 + (int)below(&rng, 3) : 200 + (int)below(&rng, 53))
						       : 0;
			struct ooo_msg_hdr *hd = (struct ooo_msg_hdr *)buf;
			int d;

			switch (below(&rng, 9)) {
			case 0: /* random bytes, empty included */
				len = below(&rng, 2) ? below(&rng, 64) : below(&rng, 9000);
				fill(&rng, buf, len);
				break;
			case 1: /* a truncated header */
				len = make_request(&rng, admin, buf, sizeof(buf), (uint32_t)rnd(&rng));
				len = len ? below(&rng, sizeof(struct ooo_msg_hdr)) : 0;
				break;
			case 2: /* another protocol version */
				len = make_request(&rng, admin, buf, sizeof(buf), (uint32_t)rnd(&rng));
				hd->version = (uint16_t)(below(&rng, 2) ? 0 : 2 + below(&rng, 0xfffe));
				break;
			case 3: /* a header that lies: its length, magic, flags, status, or the reply bit */
				len = make_request(&rng, admin, buf, sizeof(buf), (uint32_t)rnd(&rng));
				switch (below(&rng, 5)) {
				case 0:
					hd->len = (uint32_t)rnd(&rng);
					break;
				case 1:
					hd->magic ^= 1u << below(&rng, 32);
					break;
				case 2:
					hd->flags = (uint32_t)rnd(&rng) | 1;
					break;
				case 3:
					hd->status = -(int32_t)below(&rng, 2000) - 1;
					break;
				default:
					hd->type |= OOO_MSG_REPLY;
					break;
				}
				break;
			case 4: /* larger than oood takes, behind a header that may be right */
				len = 8193 + below(&rng, sizeof(buf) - 8193);
				fill(&rng, buf, len);
				if (below(&rng, 2)) {
					(void)make_request(&rng, admin, buf, sizeof(buf), 7);
					hd->len = (uint32_t)len;
				}
				break;
			case 5: /* a type unknown or of the other socket */
				len = make_request(&rng, !admin, buf, sizeof(buf), (uint32_t)rnd(&rng));
				if (below(&rng, 2))
					hd->type = (uint16_t)rnd(&rng);
				break;
			default: /* a well-formed request (its payload random) */
				len = make_request(&rng, admin, buf, sizeof(buf), (uint32_t)rnd(&rng));
				/* a module load takes its image: one descriptor */
				if (hd->type == OOO_MSG_MODULE_LOAD && below(&rng, 2))
					nfds = 1;
				break;
			}
			send_with_fds(fd, buf, len, nfds, &rng);
			msgs++;
			d = drain(fd, below(&rng, 4) ? 0 : 20);
			if (d > 0)
				replies += d;
			if (d < 0)
				break; /* oood closed it */
		}
		/* leave: closed, or held a little longer (oood's own timers end it), or shut down */
		if (below(&rng, 4) == 0)
			shutdown(fd, SHUT_WR);
		(void)drain(fd, below(&rng, 4) ? 0 : 20);
		close(fd);
	}
	printf("garbage conns %d msgs %d replies %d\n", conns, msgs, replies);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[2], "checker"))
		return checker(argv[1], strtoull(argv[3], NULL, 0), atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[2], "worker"))
		return worker(argv[1], strtoull(argv[3], NULL, 0));
	if (argc == 4 && !strcmp(argv[2], "rings"))
		return rings(argv[1], strtoull(argv[3], NULL, 0));
	if (argc == 5 && !strcmp(argv[2], "garbage"))
		return garbage(argv[1], strtoull(argv[3], NULL, 0), atoi(argv[4]));
	fprintf(stderr, "usage: soak_check SOCK checker SEED THREADS | SOCK worker SEED | SOCK rings SEED |\n"
			"       PATH garbage SEED N\n");
	return 2;
}
