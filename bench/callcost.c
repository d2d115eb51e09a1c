// SPDX-License-Identifier: MIT
/*
 * ooo-callcost [--libcuda PATH] [--iters N]: the host CPU cost of each call
 * the executor makes per command or per bundle, on this machine: the clock
 * read, an eventfd doorbell write, a nonblocking receive on an empty socket,
 * and the CUDA driver calls (event record and query, launches with small
 * and 4 KiB parameter blocks, as a fused bundle's table goes). Each row is
 * the median over 9 rounds of the mean of N calls (ns per call, wall clock
 * of the calling thread). The launches go to an empty kernel on one stream,
 * synchronised every 256 launches outside the timed region, so the driver's
 * queue never fills.
 *
 * Then the GPU side of what the executor adds to a chain: the wall time of
 * a chain of 10 dependent launches of a small kernel (2 blocks of 128
 * threads, 2000 FMA iterations, as ooo-bench spin), waited for with
 * cuStreamSynchronize, bare and with an event recorded after each launch
 * (timing disabled, and timing enabled as the bundles' end events are), and
 * waited for by polling the last event with cuEventQuery as the executor
 * does. Median over 301 chains.
 *
 * Last, whether the launch cost spreads over threads: launches of the
 * empty 12-byte-parameter kernel per second from 1, 2, 4 and 8 threads at
 * once in the one context, each thread on its own stream (what a serving
 * loop split over threads would do). Best of 3 rounds of 0.5 s.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../daemon/exec/cuda.h"

#define ROUNDS 9

static const char ptx[] = ".version 7.8\n.target sm_90\n.address_size 64\n"
			  ".visible .entry small(.param .u64 a, .param .u32 b) { ret; }\n"
			  ".visible .entry big(.param .align 8 .b8 tab[4096]) { ret; }\n"
			  ".visible .entry spin(.param .u64 x, .param .u32 iters) {\n"
			  " .reg .pred p; .reg .f32 v; .reg .b32 i, n, t, b, w; .reg .b64 a, o;\n"
			  " ld.param.u64 a, [x]; ld.param.u32 n, [iters];\n"
			  " mov.u32 t, %tid.x; mov.u32 b, %ctaid.x; mov.u32 w, %ntid.x; mad.lo.s32 t, b, w, t;\n"
			  " mul.wide.u32 o, t, 4; cvta.to.global.u64 a, a; add.s64 a, a, o; ld.global.f32 v, [a];\n"
			  " mov.u32 i, 0; setp.ge.u32 p, i, n; @p bra done;\n"
			  "loop: fma.rn.f32 v, v, 0f3F7FBE77, 0f3A83126F; add.s32 i, i, 1; setp.lt.u32 p, i, n; @p bra loop;\n"
			  "done: st.global.f32 [a], v; ret; }\n";

static struct cuda_api api;
static CUstream st;
static CUfunction f_small, f_big, f_spin;
static CUevent ev_done, ev_pending;
static int efd, sock[2];
static unsigned char tab[4096];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#define CK(call)                                                                                           \
	do {                                                                                               \
		CUresult r_ = (call);                                                                      \
		if (r_ != CUDA_SUCCESS) {                                                                  \
			char e_[160];                                                                      \
			fprintf(stderr, "ooo-callcost: %s: %s\n", #call, cuda_strerror(&api, r_, e_, sizeof(e_))); \
			exit(1);                                                                           \
		}                                                                                          \
	} while (0)

enum { T_CLOCK, T_EFD, T_RECV, T_QDONE, T_QPEND, T_RECORD, T_SMALL, T_SMALL_EXTRA, T_BIG, T_BIG_REC, T_BIG_BUSY, T_N };
static const char *const names[T_N] = {
	"clock_gettime(CLOCK_MONOTONIC)",
	"write(eventfd) (a doorbell)",
	"recv(MSG_DONTWAIT) on an empty socket",
	"cuEventQuery, event complete",
	"cuEventQuery, event not ready",
	"cuEventRecord",
	"cuLaunchKernel, 12 B params (kernelParams)",
	"cuLaunchKernel, 12 B params (extra buffer)",
	"cuLaunchKernel, 4 KiB param (a bundle's table)",
	"cuLaunchKernel 4 KiB + cuEventRecord (a bundle)",
	"the same, 8 long kernels queued ahead on the stream",
};

/* one round of test t: the mean ns per call over n calls */
static double round_of(int t, unsigned n)
{
	uint64_t a = 0, t0;
	unsigned long long x = 1;
	int b = 7;
	void *small_args[] = { &x, &b };
	size_t psize = 12;
	unsigned char pbuf[16] = { 0 };
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, pbuf, CU_LAUNCH_PARAM_BUFFER_SIZE, &psize,
			  CU_LAUNCH_PARAM_END };
	void *big_args[] = { tab };
	char c;

	for (unsigned i = 0; i < n; i += 256) {
		unsigned k = n - i < 256 ? n - i : 256;

		if (t == T_BIG_BUSY)
			for (int q = 0; q < 8; q++) /* long enough to outlast the timed launches: the GPU is busy meanwhile */
				CK(api.p_cuLaunchKernel(f_big, 132 * 1024, 1, 1, 1024, 1, 1, 0, st, big_args, NULL));
		t0 = now_ns();
		for (unsigned j = 0; j < k; j++) {
			switch (t) {
			case T_CLOCK:
				(void)now_ns();
				break;
			case T_EFD: {
				uint64_t one = 1;
				(void)!write(efd, &one, sizeof(one));
				break;
			}
			case T_RECV:
				(void)!recv(sock[0], &c, 1, MSG_DONTWAIT);
				break;
			case T_QDONE:
				CK(api.p_cuEventQuery(ev_done));
				break;
			case T_QPEND:
				(void)api.p_cuEventQuery(ev_pending);
				break;
			case T_RECORD:
				CK(api.p_cuEventRecord(ev_done, st));
				break;
			case T_SMALL:
				CK(api.p_cuLaunchKernel(f_small, 1, 1, 1, 32, 1, 1, 0, st, small_args, NULL));
				break;
			case T_SMALL_EXTRA:
				CK(api.p_cuLaunchKernel(f_small, 1, 1, 1, 32, 1, 1, 0, st, NULL, extra));
				break;
			case T_BIG:
				tab[j & 4095]++;
				CK(api.p_cuLaunchKernel(f_big, 1, 1, 1, 32, 1, 1, 0, st, big_args, NULL));
				break;
			case T_BIG_REC:
			case T_BIG_BUSY:
				tab[j & 4095]++;
				CK(api.p_cuLaunchKernel(f_big, 1, 1, 1, 32, 1, 1, 0, st, big_args, NULL));
				CK(api.p_cuEventRecord(ev_done, st));
				break;
			}
		}
		a += now_ns() - t0;
		if (t >= T_RECORD)
			CK(api.p_cuStreamSynchronize(st));
		if (t == T_EFD) {
			uint64_t v;
			(void)!read(efd, &v, sizeof(v));
		}
	}
	return (double)a / n;
}

enum { CH_BARE, CH_REC_NT, CH_REC_T, CH_REC_T_QUERY, CH_N };
static const char *const ch_names[CH_N] = {
	"10 launches, cuStreamSynchronize",
	"10 x (launch, cuEventRecord no timing), sync",
	"10 x (launch, cuEventRecord timing), sync",
	"10 x (launch, cuEventRecord timing), query last",
};

/* the wall time of one chain of 10 spin launches, waited for as variant v says (ns) */
static uint64_t chain_of(int v, CUdeviceptr buf, CUevent *evs)
{
	unsigned long long x = buf;
	int iters = 2000;
	void *args[] = { &x, &iters };
	uint64_t t0 = now_ns();

	for (int k = 0; k < 10; k++) {
		CK(api.p_cuLaunchKernel(f_spin, 2, 1, 1, 128, 1, 1, 0, st, args, NULL));
		if (v != CH_BARE)
			CK(api.p_cuEventRecord(evs[(v == CH_REC_NT ? 0 : 10) + k], st));
	}
	if (v == CH_REC_T_QUERY) {
		CUresult r;

		while ((r = api.p_cuEventQuery(evs[19])) == CUDA_ERROR_NOT_READY)
			;
		CK(r);
	} else {
		CK(api.p_cuStreamSynchronize(st));
	}
	return now_ns() - t0;
}

static void chains(void)
{
	enum { N = 301 };
	static uint64_t t[CH_N][N];
	CUevent evs[20];
	CUdeviceptr buf;

	CK(api.p_cuMemAlloc(&buf, 2 * 128 * 4));
	CK(api.p_cuMemsetD32(buf, 0, 2 * 128));
	for (int k = 0; k < 20; k++)
		CK(api.p_cuEventCreate(&evs[k], k < 10 ? CU_EVENT_DISABLE_TIMING : CU_EVENT_DEFAULT));
	for (int k = 0; k < 20; k++)
		for (int v = 0; v < CH_N; v++)
			(void)chain_of(v, buf, evs); /* warm up */
	for (int i = 0; i < N; i++)
		for (int v = 0; v < CH_N; v++) /* interleaved: drift of the clocks hits all alike */
			t[v][i] = chain_of(v, buf, evs);
	printf("\n%-52s %10s %10s\n", "chain of 10 spin kernels (2 x 128 threads, 2000 its)", "us/chain", "vs bare");
	for (int v = 0; v < CH_N; v++) {
		qsort(t[v], N, sizeof(t[v][0]), cmp_u64);
		printf("%-52s %10.2f %+10.2f\n", ch_names[v], t[v][N / 2] / 1000.0,
		       ((double)t[v][N / 2] - (double)t[CH_BARE][N / 2]) / 1000.0);
	}
	for (int k = 0; k < 20; k++)
		api.p_cuEventDestroy(evs[k]);
	api.p_cuMemFree(buf);
}

struct mt_arg {
	CUcontext ctx;
	CUstream st;
	uint64_t until, n;
};

static atomic_int mt_go;

static void *mt_run(void *p)
{
	struct mt_arg *a = p;
	unsigned long long x = 1;
	int b = 7;
	void *args[] = { &x, &b };

	CK(api.p_cuCtxSetCurrent(a->ctx));
	while (!atomic_load(&mt_go))
		;
	while (now_ns() < a->until) {
		for (int j = 0; j < 64; j++)
			CK(api.p_cuLaunchKernel(f_small, 1, 1, 1, 32, 1, 1, 0, a->st, args, NULL));
		a->n += 64;
		CK(api.p_cuStreamSynchronize(a->st));
	}
	return NULL;
}

static void launch_threads(CUcontext ctx)
{
	static const int counts[] = { 1, 2, 4, 8 };
	struct mt_arg a[8];
	pthread_t t[8];

	for (int i = 0; i < 8; i++) {
		a[i].ctx = ctx;
		CK(api.p_cuStreamCreate(&a[i].st, CU_STREAM_NON_BLOCKING));
	}
	printf("\n%-52s %10s %10s\n", "cuLaunchKernel from N threads, a stream each", "launches/s", "per thread");
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		int n = counts[c];
		double best = 0;

		for (int round = 0; round < 3; round++) {
			uint64_t sum = 0, t0;

			atomic_store(&mt_go, 0);
			for (int i = 0; i < n; i++) {
				a[i].n = 0;
				a[i].until = now_ns() + 600000000ull; /* reset below, once all run */
				if (pthread_create(&t[i], NULL, mt_run, &a[i])) {
					fprintf(stderr, "ooo-callcost: pthread_create failed\n");
					exit(1);
				}
			}
			usleep(20000);
			t0 = now_ns();
			for (int i = 0; i < n; i++)
				a[i].until = t0 + 500000000ull;
			atomic_store(&mt_go, 1);
			for (int i = 0; i < n; i++) {
				pthread_join(t[i], NULL);
				sum += a[i].n;
			}
			if ((double)sum * 1e9 / (double)(now_ns() - t0) > best)
				best = (double)sum * 1e9 / (double)(now_ns() - t0);
		}
		printf("%-52d %10.0f %10.0f\n", n, best, best / n);
	}
	for (int i = 0; i < 8; i++)
		api.p_cuStreamDestroy(a[i].st);
}

int main(int argc, char **argv)
{
	const char *lib = "libcuda.so.1";
	unsigned iters = 20000;
	char why[256];
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--libcuda") && i + 1 < argc)
			lib = argv[++i];
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = (unsigned)strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: ooo-callcost [--libcuda PATH] [--iters N]\n");
			return strcmp(argv[i], "--help") ? 2 : 0;
		}
	}
	if (!iters)
		iters = 1;
	if (cuda_load(&api, lib, why, sizeof(why)) < 0) {
		fprintf(stderr, "ooo-callcost: %s\n", why);
		return 77;
	}
	if (api.p_cuInit(0) != CUDA_SUCCESS) {
		fprintf(stderr, "ooo-callcost: no CUDA device\n");
		return 77;
	}
	CK(api.p_cuDeviceGet(&dev, 0));
	CK(api.p_cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(api.p_cuCtxSetCurrent(ctx));
	CK(api.p_cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CK(api.p_cuModuleLoadDataEx(&mod, ptx, 0, NULL, NULL));
	CK(api.p_cuModuleGetFunction(&f_small, mod, "small"));
	CK(api.p_cuModuleGetFunction(&f_big, mod, "big"));
	CK(api.p_cuModuleGetFunction(&f_spin, mod, "spin"));
	CK(api.p_cuEventCreate(&ev_done, CU_EVENT_DISABLE_TIMING));
	CK(api.p_cuEventCreate(&ev_pending, CU_EVENT_DISABLE_TIMING));
	CK(api.p_cuEventRecord(ev_done, st));
	CK(api.p_cuStreamSynchronize(st));
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) < 0) {
		perror("ooo-callcost");
		return 1;
	}
	printf("%-52s %10s\n", "call", "ns/call");
	for (int t = 0; t < T_N; t++) {
		double r[ROUNDS];
		uint64_t ri[ROUNDS];

		if (t == T_QPEND) {
			/* a pending event: recorded behind a host-blocked stream would need more API; use a long queue */
			for (int k = 0; k < 10000; k++)
				CK(api.p_cuLaunchKernel(f_big, 132 * 64, 1, 1, 1024, 1, 1, 0, st, (void *[]){ tab }, NULL));
			CK(api.p_cuEventRecord(ev_pending, st));
		}
		for (int k = 0; k < ROUNDS; k++) {
			r[k] = round_of(t, iters);
			ri[k] = (uint64_t)(r[k] * 1000);
		}
		if (t == T_QPEND) {
			CUresult q = api.p_cuEventQuery(ev_pending);

			CK(api.p_cuStreamSynchronize(st));
			if (q != CUDA_ERROR_NOT_READY)
				printf("  (the pending event completed during the rounds: the row mixes both)\n");
		}
		qsort(ri, ROUNDS, sizeof(ri[0]), cmp_u64);
		printf("%-52s %10.1f\n", names[t], ri[ROUNDS / 2] / 1000.0);
	}
	chains();
	launch_threads(ctx);
	return 0;
}
