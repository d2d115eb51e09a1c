/* SPDX-License-Identifier: MIT */
/*
 * green_check: SM partitions with green contexts (daemon/exec/partition.c)
 * on a real GPU, for tests/gpu/test_green.sh. No oood involved.
 *
 *   green_check LIBCUDA    run the checks
 *   green_check ptx        print the embedded PTX (to check it with ptxas)
 *
 * Checks, one line each, "ok: ..." or "FAIL: ..." ("info: ..." lines are
 * observations that pass or fail nothing), then "N passed, N failed";
 * exit 0 only when none failed, 77 when there is no device:
 *  a  partitions of 16, 32 and 8 SMs and the shared rest, their SM counts
 *  b  a kernel of a module loaded in the primary context (cuModuleLoadDataEx)
 *     launched on each partition's stream runs, and on exactly as many
 *     distinct SMs (%smid of 4096 blocks) as the partition has; the
 *     partitions' SMs are disjoint
 *  g  the same through cuLibraryLoadData + cuLibraryGetKernel (CUkernel cast
 *     to CUfunction) and cuKernelGetFunction with the green context current;
 *     if b failed, c-f use these kernels
 *  c  cuMemAlloc memory (primary context) and cuMemCreate + cuMemMap +
 *     cuMemSetAccess memory read and written by a kernel on a green stream
 *  d  an event recorded on a green stream: NOT_READY while its kernel runs,
 *     waited for by a primary-context stream (cuStreamWaitEvent), SUCCESS
 *     after; and the other way round
 *  e  cuOccupancyMaxActiveBlocksPerMultiprocessor on the kernel
 *  f  part_resize of the 16-SM partition to 24 SMs and back to 8, a launch
 *     after each on exactly that many SMs, the shared partition adjusted
 *
 * Environment: GREEN_CHECK_TIMEOUT_S (seconds a step may take, default 20).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/exec/cuda.h"
#include "../../daemon/exec/partition.h"

/*
 * probe(smid[], nsmid_max, ns): thread 0 of each block spins ns
 *   nanoseconds (%globaltimer), then writes %smid to smid[block] and
 *   atomically maxes %nsmid into nsmid_max[0]
 * xform(buf, n, k): buf[i] = buf[i] * 3 + k for i < n
 * spin_flag(flag, ns, val): thread 0 spins ns nanoseconds, then flag[0] = val
 * copy_flag(dst, src): dst[0] = src[0]
 */
static const char ptx[] = ".version 8.0\n"
			  ".target sm_75\n"
			  ".address_size 64\n"
			  "\n"
			  ".visible .entry probe(.param .u64 p_smid, .param .u64 p_nsmid, .param .u64 p_ns)\n"
			  "{\n"
			  "	.reg .pred %p<3>;\n"
			  "	.reg .b32 %r<8>;\n"
			  "	.reg .b64 %rd<10>;\n"
			  "	mov.u32 %r1, %tid.x;\n"
			  "	setp.ne.u32 %p1, %r1, 0;\n"
			  "	@%p1 bra PROBE_DONE;\n"
			  "	ld.param.u64 %rd1, [p_smid];\n"
			  "	ld.param.u64 %rd2, [p_nsmid];\n"
			  "	ld.param.u64 %rd3, [p_ns];\n"
			  "	cvta.to.global.u64 %rd1, %rd1;\n"
			  "	cvta.to.global.u64 %rd2, %rd2;\n"
			  "	mov.u64 %rd4, %globaltimer;\n"
			  "PROBE_SPIN:\n"
			  "	mov.u64 %rd5, %globaltimer;\n"
			  "	sub.u64 %rd6, %rd5, %rd4;\n"
			  "	setp.lt.u64 %p2, %rd6, %rd3;\n"
			  "	@%p2 bra PROBE_SPIN;\n"
			  "	mov.u32 %r2, %smid;\n"
			  "	mov.u32 %r3, %nsmid;\n"
			  "	mov.u32 %r4, %ctaid.x;\n"
			  "	mul.wide.u32 %rd7, %r4, 4;\n"
			  "	add.u64 %rd8, %rd1, %rd7;\n"
			  "	st.global.u32 [%rd8], %r2;\n"
			  "	atom.global.max.u32 %r5, [%rd2], %r3;\n"
			  "PROBE_DONE:\n"
			  "	ret;\n"
			  "}\n"
			  "\n"
			  ".visible .entry xform(.param .u64 p_buf, .param .u32 p_n, .param .u32 p_k)\n"
			  "{\n"
			  "	.reg .pred %p<2>;\n"
			  "	.reg .b32 %r<10>;\n"
			  "	.reg .b64 %rd<5>;\n"
			  "	ld.param.u64 %rd1, [p_buf];\n"
			  "	ld.param.u32 %r1, [p_n];\n"
			  "	ld.param.u32 %r2, [p_k];\n"
			  "	mov.u32 %r3, %ctaid.x;\n"
			  "	mov.u32 %r4, %ntid.x;\n"
			  "	mov.u32 %r5, %tid.x;\n"
			  "	mad.lo.u32 %r6, %r3, %r4, %r5;\n"
			  "	setp.ge.u32 %p1, %r6, %r1;\n"
			  "	@%p1 bra XFORM_DONE;\n"
			  "	cvta.to.global.u64 %rd1, %rd1;\n"
			  "	mul.wide.u32 %rd2, %r6, 4;\n"
			  "	add.u64 %rd3, %rd1, %rd2;\n"
			  "	ld.global.u32 %r7, [%rd3];\n"
			  "	mov.u32 %r9, 3;\n"
			  "	mad.lo.u32 %r8, %r7, %r9, %r2;\n"
			  "	st.global.u32 [%rd3], %r8;\n"
			  "XFORM_DONE:\n"
			  "	ret;\n"
			  "}\n"
			  "\n"
			  ".visible .entry spin_flag(.param .u64 p_flag, .param .u64 p_ns, .param .u32 p_val)\n"
			  "{\n"
			  "	.reg .pred %p<3>;\n"
			  "	.reg .b32 %r<4>;\n"
			  "	.reg .b64 %rd<8>;\n"
			  "	mov.u32 %r1, %tid.x;\n"
			  "	mov.u32 %r2, %ctaid.x;\n"
			  "	or.b32 %r1, %r1, %r2;\n"
			  "	setp.ne.u32 %p1, %r1, 0;\n"
			  "	@%p1 bra FLAG_DONE;\n"
			  "	ld.param.u64 %rd1, [p_flag];\n"
			  "	ld.param.u64 %rd2, [p_ns];\n"
			  "	ld.param.u32 %r3, [p_val];\n"
			  "	cvta.to.global.u64 %rd1, %rd1;\n"
			  "	mov.u64 %rd3, %globaltimer;\n"
			  "FLAG_SPIN:\n"
			  "	mov.u64 %rd4, %globaltimer;\n"
			  "	sub.u64 %rd5, %rd4, %rd3;\n"
			  "	setp.lt.u64 %p2, %rd5, %rd2;\n"
			  "	@%p2 bra FLAG_SPIN;\n"
			  "	st.global.u32 [%rd1], %r3;\n"
			  "FLAG_DONE:\n"
			  "	ret;\n"
			  "}\n"
			  "\n"
			  ".visible .entry copy_flag(.param .u64 p_dst, .param .u64 p_src)\n"
			  "{\n"
			  "	.reg .b32 %r<2>;\n"
			  "	.reg .b64 %rd<3>;\n"
			  "	ld.param.u64 %rd1, [p_dst];\n"
			  "	ld.param.u64 %rd2, [p_src];\n"
			  "	cvta.to.global.u64 %rd1, %rd1;\n"
			  "	cvta.to.global.u64 %rd2, %rd2;\n"
			  "	ld.global.u32 %r1, [%rd2];\n"
			  "	st.global.u32 [%rd1], %r1;\n"
			  "	ret;\n"
			  "}\n";

/*
 * CUDA 12.0 functions for the context-independent path (check g), not in
 * daemon/exec/cuda.h's table: resolved here the same way, as of
 * CUDA_ABI_VERSION. If the executor comes to need them, they belong in
 * CUDA_FUNCS.
 */
#define GC_EXTRA_FUNCS(X)                                                                                  \
	X(cuLibraryLoadData)                                                                               \
	X(cuLibraryUnload)                                                                                 \
	X(cuLibraryGetKernel)                                                                              \
	X(cuKernelGetFunction)

static struct {
#define GC_MEMBER(name) __typeof__(&name) p_##name;
	GC_EXTRA_FUNCS(GC_MEMBER)
#undef GC_MEMBER
} xa;

#define NBLOCKS 4096
#define NTHREADS 64
#define PROBE_NS 20000ull        /* per block: 4096 blocks fill a 16-SM partition in ~8 waves */
#define FLAG_NS 200000000ull     /* 200 ms: long enough to see NOT_READY */
#define NWORDS (1u << 16)
#define MAX_SMID 1024

static struct cuda_api api;
static CUdevice g_dev;
static CUcontext g_primary;
static CUevent g_done;
static CUstream g_pstream;   /* a primary-context stream */
static int g_passed, g_failed;
static double g_timeout_s = 20;
static CUdeviceptr g_smid, g_nsmid;

struct smset {
	uint64_t b[MAX_SMID / 64];
};

static void ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void vline(const char *tag, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void vline(const char *tag, const char *fmt, va_list ap)
{
	printf("%s: ", tag);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

static void ok(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("ok", fmt, ap);
	va_end(ap);
	g_passed++;
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("FAIL", fmt, ap);
	va_end(ap);
	g_failed++;
}

static void info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("info", fmt, ap);
	va_end(ap);
}

static int finish(void)
{
	printf("%d passed, %d failed\n", g_passed, g_failed);
	return g_failed ? 1 : 0;
}

static const char *err(CUresult r)
{
	static char buf[256];

	return cuda_strerror(&api, r, buf, sizeof(buf));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Wait for everything submitted to `s` so far, at most g_timeout_s. A
 * kernel that hangs leaves nothing to continue with: say so and exit.
 */
static CUresult drain(CUstream s, const char *what)
{
	double end = now_s() + g_timeout_s;
	CUresult r = api.p_cuEventRecord(g_done, s);

	if (r != CUDA_SUCCESS)
		return api.p_cuStreamSynchronize(s); /* d says whether this should have worked */
	while ((r = api.p_cuEventQuery(g_done)) == CUDA_ERROR_NOT_READY) {
		if (now_s() > end) {
			fail("%s: still running after %.0f s", what, g_timeout_s);
			finish();
			exit(1);
		}
		usleep(100);
	}
	return r;
}

static uint32_t smset_count(const struct smset *s)
{
	uint32_t n = 0;

	for (size_t i = 0; i < sizeof(s->b) / sizeof(s->b[0]); i++)
		n += (uint32_t)__builtin_popcountll(s->b[i]);
	return n;
}

static uint32_t smset_overlap(const struct smset *a, const struct smset *b)
{
	uint32_t n = 0;

	for (size_t i = 0; i < sizeof(a->b) / sizeof(a->b[0]); i++)
		n += (uint32_t)__builtin_popcountll(a->b[i] & b->b[i]);
	return n;
}

/*
 * Launch probe on `s`, wait, collect the SMs it ran on. Returns false
 * (having printed FAIL) when the launch or the kernel failed.
 */
static bool probe_on(CUfunction f, CUstream s, const char *what, struct smset *set, uint32_t *nsmid)
{
	static uint32_t host[NBLOCKS];
	unsigned long long ns = PROBE_NS;
	void *args[] = { &g_smid, &g_nsmid, &ns };
	uint32_t missing = 0;
	CUresult r;

	memset(set, 0, sizeof(*set));
	if ((r = api.p_cuMemsetD32(g_smid, 0xffffffffu, NBLOCKS)) != CUDA_SUCCESS ||
	    (r = api.p_cuMemsetD32(g_nsmid, 0, 1)) != CUDA_SUCCESS || (r = api.p_cuCtxSynchronize()) != CUDA_SUCCESS) {
		fail("%s: clearing the probe buffers: %s", what, err(r));
		return false;
	}
	r = api.p_cuLaunchKernel(f, NBLOCKS, 1, 1, NTHREADS, 1, 1, 0, s, args, NULL);
	if (r != CUDA_SUCCESS) {
		fail("%s: cuLaunchKernel: %s", what, err(r));
		return false;
	}
	if ((r = drain(s, what)) != CUDA_SUCCESS) {
		fail("%s: the kernel failed: %s", what, err(r));
		return false;
	}
	if ((r = api.p_cuMemcpyDtoH(host, g_smid, sizeof(host))) != CUDA_SUCCESS ||
	    (r = api.p_cuMemcpyDtoH(nsmid, g_nsmid, sizeof(*nsmid))) != CUDA_SUCCESS) {
		fail("%s: reading the probe buffers: %s", what, err(r));
		return false;
	}
	for (uint32_t i = 0; i < NBLOCKS; i++) {
		if (host[i] >= MAX_SMID) {
			missing++;
			continue;
		}
		set->b[host[i] / 64] |= 1ull << (host[i] % 64);
	}
	if (missing) {
		fail("%s: %u of %u blocks did not record an SM id", what, missing, NBLOCKS);
		return false;
	}
	return true;
}

/* probe, then check the SM count is `want` exactly; returns the set through *set. */
static bool probe_check(CUfunction f, CUstream s, uint32_t want, const char *what, struct smset *set)
{
	uint32_t nsmid = 0, got;

	if (!probe_on(f, s, what, set, &nsmid))
		return false;
	got = smset_count(set);
	if (got == want) {
		ok("%s: %u blocks ran on %u distinct SMs = the partition's %u (%%nsmid %u)", what, NBLOCKS, got, want,
		   nsmid);
		return true;
	}
	fail("%s: %u blocks ran on %u distinct SMs, the partition has %u (%%nsmid %u)%s", what, NBLOCKS, got, want,
	     nsmid, got > want ? "; more SMs than provisioned: MPS below 100% or a CDP module?" : "");
	return false;
}

static void resolve_extra(void)
{
	typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
	get_proc_fn gp = (get_proc_fn)dlsym(api.lib, "cuGetProcAddress_v2");
	CUdriverProcAddressQueryResult st;

	if (!gp)
		return;
#define GC_RESOLVE(name)                                                                                   \
	if (gp(#name, (void **)&xa.p_##name, CUDA_ABI_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) !=          \
		    CUDA_SUCCESS ||                                                                        \
	    st != CU_GET_PROC_ADDRESS_SUCCESS)                                                             \
		xa.p_##name = NULL;
	GC_EXTRA_FUNCS(GC_RESOLVE)
#undef GC_RESOLVE
}

static CUresult load_module(CUmodule *mod)
{
	char log[8192] = "";
	CUjit_option opt[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *val[] = { log, (void *)(uintptr_t)sizeof(log) };
	CUresult r = api.p_cuModuleLoadDataEx(mod, ptx, 2, opt, val);

	if (r != CUDA_SUCCESS)
		printf("  | %s\n", log);
	return r;
}

/* The kernels c-f use: the module's (b) or the library's (g). */
struct kernels {
	CUfunction probe, xform, spin_flag, copy_flag;
};

static void check_memory(const struct kernels *k, struct partition_set *set)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = g_dev } };
	CUmemAccessDesc acc = { .location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUmemGenericAllocationHandle h = 0;
	static uint32_t host[NWORDS];
	size_t gran = 0, size;
	CUdeviceptr a = 0, v = 0;
	CUstream s = part_stream(set, 1);
	uint32_t n = NWORDS, kk;
	void *args[3];
	CUresult r;

	/* cuMemAlloc in the primary context */
	if ((r = api.p_cuMemAlloc(&a, NWORDS * 4)) != CUDA_SUCCESS) {
		fail("c: cuMemAlloc: %s", err(r));
	} else {
		for (uint32_t i = 0; i < NWORDS; i++)
			host[i] = i * 7u + 1;
		kk = 11;
		args[0] = &a;
		args[1] = &n;
		args[2] = &kk;
		if ((r = api.p_cuMemcpyHtoD(a, host, sizeof(host))) != CUDA_SUCCESS ||
		    /* a copy from pageable memory may return before its DMA lands, and the partition's stream
		       (non-blocking) does not wait for the legacy stream: wait here */
		    (r = api.p_cuCtxSynchronize()) != CUDA_SUCCESS ||
		    (r = api.p_cuLaunchKernel(k->xform, NWORDS / 256, 1, 1, 256, 1, 1, 0, s, args, NULL)) != CUDA_SUCCESS ||
		    (r = drain(s, "c: cuMemAlloc")) != CUDA_SUCCESS ||
		    (r = api.p_cuMemcpyDtoH(host, a, sizeof(host))) != CUDA_SUCCESS) {
			fail("c: cuMemAlloc memory, kernel on partition 1's stream: %s", err(r));
		} else {
			uint32_t bad = 0;

			for (uint32_t i = 0; i < NWORDS; i++)
				bad += host[i] != (i * 7u + 1) * 3u + 11;
			if (bad)
				fail("c: cuMemAlloc memory, kernel on partition 1's stream: %u of %u words wrong", bad,
				     NWORDS);
			else
				ok("c: cuMemAlloc memory of the primary context read and written by a kernel on "
				   "partition 1's stream (%u words)", NWORDS);
		}
		api.p_cuMemFree(a);
	}

	/* VMM: cuMemCreate + cuMemAddressReserve + cuMemMap + cuMemSetAccess */
	if ((r = api.p_cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) !=
	    CUDA_SUCCESS) {
		fail("c: cuMemGetAllocationGranularity: %s", err(r));
		return;
	}
	size = (NWORDS * 4 + gran - 1) / gran * gran;
	if ((r = api.p_cuMemCreate(&h, size, &prop, 0)) != CUDA_SUCCESS) {
		fail("c: cuMemCreate: %s", err(r));
		return;
	}
	if ((r = api.p_cuMemAddressReserve(&v, size, 0, 0, 0)) != CUDA_SUCCESS ||
	    (r = api.p_cuMemMap(v, size, 0, h, 0)) != CUDA_SUCCESS ||
	    (r = api.p_cuMemSetAccess(v, size, &acc, 1)) != CUDA_SUCCESS) {
		fail("c: mapping VMM memory: %s", err(r));
	} else {
		for (uint32_t i = 0; i < NWORDS; i++)
			host[i] = i ^ 0x5a5a5a5au;
		kk = 5;
		args[0] = &v;
		args[1] = &n;
		args[2] = &kk;
		if ((r = api.p_cuMemcpyHtoD(v, host, sizeof(host))) != CUDA_SUCCESS ||
		    /* a copy from pageable memory may return before its DMA lands, and the partition's stream
		       (non-blocking) does not wait for the legacy stream: wait here */
		    (r = api.p_cuCtxSynchronize()) != CUDA_SUCCESS ||
		    (r = api.p_cuLaunchKernel(k->xform, NWORDS / 256, 1, 1, 256, 1, 1, 0, s, args, NULL)) != CUDA_SUCCESS ||
		    (r = drain(s, "c: VMM")) != CUDA_SUCCESS ||
		    (r = api.p_cuMemcpyDtoH(host, v, sizeof(host))) != CUDA_SUCCESS) {
			fail("c: VMM memory, kernel on partition 1's stream: %s", err(r));
		} else {
			uint32_t bad = 0;

			for (uint32_t i = 0; i < NWORDS; i++)
				bad += host[i] != (i ^ 0x5a5a5a5au) * 3u + 5;
			if (bad)
				fail("c: VMM memory, kernel on partition 1's stream: %u of %u words wrong", bad, NWORDS);
			else
				ok("c: cuMemCreate+cuMemMap+cuMemSetAccess memory read and written by a kernel on "
				   "partition 1's stream (%zu bytes mapped)", size);
		}
	}
	if (v) {
		api.p_cuMemUnmap(v, size);
		api.p_cuMemAddressFree(v, size);
	}
	api.p_cuMemRelease(h);
}

/*
 * One direction of d: spin_flag on `from`, event recorded there, `to`
 * waits for it with cuStreamWaitEvent and copies the flag. The copy must
 * see the flag, and the event must be NOT_READY while the spinner runs.
 */
static void check_event_dir(const struct kernels *k, CUstream from, CUstream to, uint32_t val, const char *what)
{
	CUdeviceptr flag = 0, dst = 0;
	unsigned long long ns = FLAG_NS;
	uint32_t got = 0;
	void *sargs[] = { &flag, &ns, &val };
	void *cargs[] = { &dst, &flag };
	CUevent ev = NULL;
	CUresult r, q1, q2;

	if ((r = api.p_cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS ||
	    (r = api.p_cuMemAlloc(&flag, 4)) != CUDA_SUCCESS || (r = api.p_cuMemAlloc(&dst, 4)) != CUDA_SUCCESS ||
	    (r = api.p_cuMemsetD32(flag, 0, 1)) != CUDA_SUCCESS || (r = api.p_cuMemsetD32(dst, 0, 1)) != CUDA_SUCCESS ||
	    (r = api.p_cuCtxSynchronize()) != CUDA_SUCCESS) {
		fail("d %s: set-up: %s", what, err(r));
		goto out;
	}
	if ((r = api.p_cuLaunchKernel(k->spin_flag, 1, 1, 1, 32, 1, 1, 0, from, sargs, NULL)) != CUDA_SUCCESS) {
		fail("d %s: launching the spinner: %s", what, err(r));
		goto out;
	}
	if ((r = api.p_cuEventRecord(ev, from)) != CUDA_SUCCESS) {
		fail("d %s: cuEventRecord (event of the primary context): %s", what, err(r));
		drain(from, what);
		goto out;
	}
	q1 = api.p_cuEventQuery(ev);
	if ((r = api.p_cuStreamWaitEvent(to, ev, 0)) != CUDA_SUCCESS ||
	    (r = api.p_cuLaunchKernel(k->copy_flag, 1, 1, 1, 1, 1, 1, 0, to, cargs, NULL)) != CUDA_SUCCESS) {
		fail("d %s: cuStreamWaitEvent + copy: %s", what, err(r));
		drain(from, what);
		goto out;
	}
	if ((r = drain(to, what)) != CUDA_SUCCESS || (r = api.p_cuMemcpyDtoH(&got, dst, 4)) != CUDA_SUCCESS) {
		fail("d %s: waiting: %s", what, err(r));
		goto out;
	}
	q2 = api.p_cuEventQuery(ev);
	if (q1 == CUDA_ERROR_NOT_READY)
		ok("d %s: cuEventQuery NOT_READY while the kernel runs", what);
	else
		fail("d %s: cuEventQuery right after the record: %s (expected NOT_READY)", what, err(q1));
	if (got == val)
		ok("d %s: the waiting stream ran after the event (it saw the flag %#x)", what, got);
	else
		fail("d %s: the waiting stream saw %#x, not the flag %#x: cuStreamWaitEvent did not order it", what,
		     got, val);
	if (q2 == CUDA_SUCCESS)
		ok("d %s: cuEventQuery SUCCESS after", what);
	else
		fail("d %s: cuEventQuery after: %s", what, err(q2));
out:
	api.p_cuCtxSynchronize();
	if (flag)
		api.p_cuMemFree(flag);
	if (dst)
		api.p_cuMemFree(dst);
	if (ev)
		api.p_cuEventDestroy(ev);
}

static void check_occupancy(const struct kernels *k, struct partition_set *set)
{
	int nb = 0, nb_green = 0, attr = 0;
	CUresult r;

	r = api.p_cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, k->probe, NTHREADS, 0);
	if (r != CUDA_SUCCESS || nb <= 0)
		fail("e: cuOccupancyMaxActiveBlocksPerMultiprocessor (primary context current): %d, %s", nb, err(r));
	else
		ok("e: cuOccupancyMaxActiveBlocksPerMultiprocessor: %d blocks of %d threads per SM; to fill partition "
		   "0: %u blocks, the shared one: %u", nb, NTHREADS, (uint32_t)nb * part_sms(set, 0),
		   (uint32_t)nb * part_sms(set, part_count(set) - 1));
	/* the same with the green context current, and what the device attribute says there */
	if ((r = api.p_cuCtxSetCurrent(part_ctx(set, 0))) != CUDA_SUCCESS) {
		fail("e: cuCtxSetCurrent(partition 0's context): %s", err(r));
		return;
	}
	r = api.p_cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb_green, k->probe, NTHREADS, 0);
	if (r != CUDA_SUCCESS)
		info("e: occupancy with partition 0's context current: %s (compute it with the primary context current)",
		     err(r));
	else
		info("e: occupancy with partition 0's context current: %d blocks per SM%s", nb_green,
		     nb_green == nb ? ", the same" : ", NOT the same");
	if (api.p_cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g_dev) == CUDA_SUCCESS)
		info("e: MULTIPROCESSOR_COUNT with partition 0's context current: %d (the partition has %u)", attr,
		     part_sms(set, 0));
	if ((r = api.p_cuCtxSetCurrent(g_primary)) != CUDA_SUCCESS) {
		fail("e: cuCtxSetCurrent(primary): %s", err(r));
		exit(finish());
	}
}

/* g: the context-independent path; fills *lk when it works. */
static bool check_library(struct partition_set *set, CUlibrary *lib, struct kernels *lk)
{
	struct smset s0;
	CUkernel kern[4];
	const char *names[] = { "probe", "xform", "spin_flag", "copy_flag" };
	CUfunction fn = NULL;
	bool good = true;
	CUresult r;
	char what[96];

	if (!xa.p_cuLibraryLoadData || !xa.p_cuLibraryGetKernel || !xa.p_cuKernelGetFunction) {
		fail("g: the driver has no cuLibraryLoadData/cuLibraryGetKernel/cuKernelGetFunction");
		return false;
	}
	if ((r = xa.p_cuLibraryLoadData(lib, ptx, NULL, NULL, 0, NULL, NULL, 0)) != CUDA_SUCCESS) {
		fail("g: cuLibraryLoadData: %s", err(r));
		return false;
	}
	for (int i = 0; i < 4; i++) {
		if ((r = xa.p_cuLibraryGetKernel(&kern[i], *lib, names[i])) != CUDA_SUCCESS) {
			fail("g: cuLibraryGetKernel(%s): %s", names[i], err(r));
			return false;
		}
	}
	lk->probe = (CUfunction)kern[0];
	lk->xform = (CUfunction)kern[1];
	lk->spin_flag = (CUfunction)kern[2];
	lk->copy_flag = (CUfunction)kern[3];
	snprintf(what, sizeof(what), "g: CUkernel (cuLibraryGetKernel) on partition 0's stream");
	good = probe_check(lk->probe, part_stream(set, 0), part_sms(set, 0), what, &s0) && good;
	/* cuKernelGetFunction with the green context current: that context's CUfunction */
	if ((r = api.p_cuCtxSetCurrent(part_ctx(set, 0))) != CUDA_SUCCESS) {
		fail("g: cuCtxSetCurrent(partition 0's context): %s", err(r));
		return false;
	}
	r = xa.p_cuKernelGetFunction(&fn, kern[0]);
	if (api.p_cuCtxSetCurrent(g_primary) != CUDA_SUCCESS)
		exit(finish());
	if (r != CUDA_SUCCESS) {
		fail("g: cuKernelGetFunction with partition 0's context current: %s", err(r));
		return false;
	}
	snprintf(what, sizeof(what), "g: cuKernelGetFunction (green context current) on partition 0's stream");
	good = probe_check(fn, part_stream(set, 0), part_sms(set, 0), what, &s0) && good;
	return good;
}

int main(int argc, char **argv)
{
	static const uint32_t want[3] = { 16, 32, 8 };
	struct smset sets[4], s;
	struct partition_set *set = NULL;
	struct kernels mk = { 0 }, lk = { 0 };
	const struct kernels *k;
	CUlibrary lib = NULL;
	CUmodule mod = NULL;
	char why[512], name[128] = "";
	const char *t;
	uint32_t granule = 0, total = 0, n, sum = 0, nsmid = 0;
	int prio[3], least = 0, greatest = 0, smcount = 0, rr;
	bool b_ok = true, g_ok;
	CUresult r;

	if (argc == 2 && !strcmp(argv[1], "ptx")) {
		fputs(ptx, stdout);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: green_check LIBCUDA | ptx\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((t = getenv("GREEN_CHECK_TIMEOUT_S")) && atof(t) > 0)
		g_timeout_s = atof(t);
	rr = cuda_load(&api, argv[1], why, sizeof(why));
	if (rr == -ENOENT) {
		printf("SKIP: %s\n", why);
		return 77;
	}
	if (rr < 0) {
		fail("cuda_load: %s", why);
		return finish();
	}
	r = api.p_cuInit(0);
	if (r != CUDA_SUCCESS) {
		if (cuda_error_is_nodev(r)) {
			printf("SKIP: cuInit: %s\n", err(r));
			return 77;
		}
		fail("cuInit: %s", err(r));
		return finish();
	}
	resolve_extra();
	if ((r = api.p_cuDeviceGet(&g_dev, 0)) != CUDA_SUCCESS ||
	    (r = api.p_cuDevicePrimaryCtxRetain(&g_primary, g_dev)) != CUDA_SUCCESS ||
	    (r = api.p_cuCtxSetCurrent(g_primary)) != CUDA_SUCCESS ||
	    (r = api.p_cuEventCreate(&g_done, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS ||
	    (r = api.p_cuStreamCreate(&g_pstream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS ||
	    (r = api.p_cuMemAlloc(&g_smid, NBLOCKS * 4)) != CUDA_SUCCESS ||
	    (r = api.p_cuMemAlloc(&g_nsmid, 4)) != CUDA_SUCCESS) {
		fail("set-up: %s", err(r));
		return finish();
	}
	api.p_cuDeviceGetName(name, sizeof(name), g_dev);
	api.p_cuDeviceGetAttribute(&smcount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g_dev);
	api.p_cuCtxGetStreamPriorityRange(&least, &greatest);
	info("%s, %d SMs, driver %d.%d, stream priorities %d (least) .. %d (greatest)", name, smcount,
	     api.driver_version / 1000, api.driver_version % 1000 / 10, least, greatest);
	if ((r = load_module(&mod)) != CUDA_SUCCESS) {
		fail("cuModuleLoadDataEx of the probe PTX: %s", err(r));
		return finish();
	}
	if ((r = api.p_cuModuleGetFunction(&mk.probe, mod, "probe")) != CUDA_SUCCESS ||
	    (r = api.p_cuModuleGetFunction(&mk.xform, mod, "xform")) != CUDA_SUCCESS ||
	    (r = api.p_cuModuleGetFunction(&mk.spin_flag, mod, "spin_flag")) != CUDA_SUCCESS ||
	    (r = api.p_cuModuleGetFunction(&mk.copy_flag, mod, "copy_flag")) != CUDA_SUCCESS) {
		fail("cuModuleGetFunction: %s", err(r));
		return finish();
	}

	/* a: partitions */
	rr = part_limits(&api, g_dev, false, &total, &granule, why, sizeof(why));
	if (rr < 0) {
		fail("a: part_limits: %d %s: %s", rr, strerror(-rr), why);
		return finish();
	}
	info("a: the device splits into groups of %u SMs, %u SMs in all", granule, total);
	{
		uint32_t fg = 0, ft = 0;

		if (part_limits(&api, g_dev, true, &ft, &fg, why, sizeof(why)) == 0)
			info("a: with CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING: groups of %u SMs, %u in all", fg,
			     ft);
		else
			info("a: with CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING: %s", why);
	}
	prio[0] = greatest;
	prio[1] = least;
	prio[2] = least;
	rr = part_create(&api, g_dev, want, prio, 3, false, &set, why, sizeof(why));
	if (rr < 0) {
		fail("a: part_create(16, 32, 8): %d %s: %s", rr, strerror(-rr), why);
		return finish();
	}
	n = part_count(set);
	for (uint32_t i = 0; i < n; i++)
		sum += part_sms(set, i);
	{
		bool good = n == 4 && sum == part_total_sms(set);

		for (uint32_t i = 0; i < 3 && i < n; i++) {
			uint32_t w = (want[i] + granule - 1) / granule * granule;

			good = good && part_sms(set, i) == w;
		}
		if (good)
			ok("a: partitions of %u, %u, %u SMs and a shared one of %u (%u SMs in all, device attribute %d)",
			   part_sms(set, 0), part_sms(set, 1), part_sms(set, 2), part_sms(set, 3), sum, smcount);
		else
			fail("a: %u partitions of %u, %u, %u, %u SMs (asked 16, 32, 8 rounded to %u, the rest; %u in "
			     "all, the split has %u)",
			     n, part_sms(set, 0), part_sms(set, 1), part_sms(set, 2), part_sms(set, 3), granule, sum,
			     part_total_sms(set));
	}

	/* b: primary-context module functions on every partition's stream */
	for (uint32_t i = 0; i < n; i++) {
		char what[96];

		snprintf(what, sizeof(what), "b: module function on partition %u's stream%s", i,
			 i == n - 1 ? " (shared)" : "");
		b_ok = probe_check(mk.probe, part_stream(set, i), part_sms(set, i), what, &sets[i]) && b_ok;
	}
	if (b_ok) {
		uint32_t overlap = 0;

		for (uint32_t i = 0; i < n; i++)
			for (uint32_t j = i + 1; j < n; j++)
				overlap += smset_overlap(&sets[i], &sets[j]);
		if (overlap)
			fail("b: the partitions share %u SMs", overlap);
		else
			ok("b: the %u partitions ran on disjoint SMs", n);
	}
	if (probe_on(mk.probe, g_pstream, "b: primary-context stream", &s, &nsmid))
		info("b: the same kernel on a primary-context stream ran on %u SMs (not confined by the partitions)",
		     smset_count(&s));

	/* g: the context-independent path */
	g_ok = check_library(set, &lib, &lk);
	if (b_ok) {
		k = &mk;
	} else if (g_ok) {
		info("b failed and g passed: c-f use the cuLibrary kernels (load modules with cuLibraryLoadData)");
		k = &lk;
	} else {
		fail("neither module functions nor library kernels launch on green streams: c-f not run");
		part_free(set);
		return finish();
	}

	/* c: memory */
	check_memory(k, set);

	/* d: events both ways */
	check_event_dir(k, part_stream(set, 0), g_pstream, 0xc0ffee01u, "green->primary");
	check_event_dir(k, g_pstream, part_stream(set, 2), 0xc0ffee02u, "primary->green");

	/* e: occupancy */
	check_occupancy(k, set);

	/* f: resize partition 0: 16 -> 24 -> 8 */
	{
		static const uint32_t sizes[2] = { 24, 8 };

		for (int step = 0; step < 2; step++) {
			uint32_t before0 = part_sms(set, 0), before_sh = part_sms(set, n - 1);
			uint32_t w = (sizes[step] + granule - 1) / granule * granule;
			char what[96];

			rr = part_resize(set, 0, sizes[step], why, sizeof(why));
			if (rr < 0) {
				fail("f: part_resize(0, %u): %d %s: %s", sizes[step], rr, strerror(-rr), why);
				break;
			}
			if ((uint32_t)rr == w && part_sms(set, 0) == w && part_sms(set, n - 1) == before_sh + before0 - w)
				ok("f: part_resize(0, %u): %u -> %u SMs, the shared partition %u -> %u", sizes[step],
				   before0, w, before_sh, part_sms(set, n - 1));
			else
				fail("f: part_resize(0, %u) returned %d; partition 0 %u -> %u SMs, the shared one %u -> %u",
				     sizes[step], rr, before0, part_sms(set, 0), before_sh, part_sms(set, n - 1));
			snprintf(what, sizeof(what), "f: after resizing to %u, partition 0's new stream", sizes[step]);
			if (probe_check(k->probe, part_stream(set, 0), part_sms(set, 0), what, &sets[0])) {
				uint32_t ov = smset_overlap(&sets[0], &sets[1]) + smset_overlap(&sets[0], &sets[2]);

				if (ov)
					fail("f: after resizing to %u, partition 0 shares %u SMs with partitions 1-2",
					     sizes[step], ov);
				else
					ok("f: after resizing to %u, partition 0 is disjoint from partitions 1 and 2",
					   sizes[step]);
			}
			snprintf(what, sizeof(what), "f: after resizing to %u, the shared partition's new stream",
				 sizes[step]);
			probe_check(k->probe, part_stream(set, n - 1), part_sms(set, n - 1), what, &sets[n - 1]);
		}
	}

	part_free(set);
	if (lib && xa.p_cuLibraryUnload)
		xa.p_cuLibraryUnload(lib);
	api.p_cuModuleUnload(mod);
	api.p_cuMemFree(g_smid);
	api.p_cuMemFree(g_nsmid);
	api.p_cuStreamDestroy(g_pstream);
	api.p_cuEventDestroy(g_done);
	api.p_cuDevicePrimaryCtxRelease(g_dev);
	cuda_unload(&api);
	return finish();
}
