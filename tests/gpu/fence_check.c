/* SPDX-License-Identifier: MIT */
/*
 * fence_check: fenced kernels (daemon/jit/fence.c) on a real GPU, without
 * oood, for tests/gpu/test_fence.sh.
 *
 *   fence_check LIBCUDA [global|generic|func] [fused]
 *
 * The tenant's window is a 4 GiB aligned range reserved with
 * cuMemAddressReserve, 256 MiB of it mapped (cuMemCreate/cuMemMap); the
 * kernels below are fenced in process (jit_fence) and proven
 * (jit_fence_check) before they load. Checks, one line each, "ok: ..." or
 * "FAIL: ...", then "N passed, N failed":
 *  1 a fenced copy inside the window gives the same bytes as the unfenced one
 *  2 a fenced generic access to shared memory passes (isspacep)
 *  3 kernel time, fenced against unfenced, of a memory-bound copy (64 MiB)
 *    and a compute-bound FMA loop, medians of 20 timed launches (events);
 *    printed as "bench: ..." lines, no pass/fail: the benchmark is the result
 *  4 last (a trap ends the context): the unfenced poke writes host-mapped
 *    memory outside the window (the control: the write is possible); the
 *    fenced poke of another value there traps (through a global address; with
 *    `generic` a generic one; with `func` a global store in a .func the kernel
 *    calls), and the host memory keeps the control's value
 * Exit 0 when none failed, 77 when there is no device.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../daemon/exec/cuda.h"
#include "../../daemon/jit/jit.h"

static const char ptx[] =
	".version 8.0\n"
	".target sm_90\n"
	".address_size 64\n"
	".func store(.param .b64 a, .param .b32 v)\n"
	"{\n"
	"\t.reg .b64 %rd<2>;\n"
	"\t.reg .b32 %r<2>;\n"
	"\tld.param.u64 %rd1, [a];\n"
	"\tld.param.u32 %r1, [v];\n"
	"\tst.global.u32 [%rd1], %r1;\n"
	"\tret;\n"
	"}\n"
	".visible .entry poke_func(.param .u64 a, .param .u32 v)\n"
	"{\n"
	"\t.reg .b64 %rd<2>;\n"
	"\t.reg .b32 %r<2>;\n"
	"\tld.param.u64 %rd1, [a];\n"
	"\tld.param.u32 %r1, [v];\n"
	"\t{\n"
	"\t.param .b64 p0;\n"
	"\tst.param.b64 [p0], %rd1;\n"
	"\t.param .b32 p1;\n"
	"\tst.param.b32 [p1], %r1;\n"
	"\tcall.uni store, (p0, p1);\n"
	"\t}\n"
	"\tret;\n"
	"}\n"
	".visible .entry poke(.param .u64 a, .param .u32 v)\n"
	"{\n"
	"\t.reg .b64 %rd<2>;\n"
	"\t.reg .b32 %r<2>;\n"
	"\tld.param.u64 %rd1, [a];\n"
	"\tld.param.u32 %r1, [v];\n"
	"\tst.global.u32 [%rd1], %r1;\n"
	"\tret;\n"
	"}\n"
	".visible .entry poke_generic(.param .u64 a, .param .u32 v)\n"
	"{\n"
	"\t.reg .b64 %rd<2>;\n"
	"\t.reg .b32 %r<2>;\n"
	"\tld.param.u64 %rd1, [a];\n"
	"\tld.param.u32 %r1, [v];\n"
	"\tst.u32 [%rd1], %r1;\n"
	"\tret;\n"
	"}\n"
	".visible .entry copy(.param .u64 s, .param .u64 d, .param .u32 n)\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .b32 %r<8>;\n"
	"\t.reg .b64 %rd<8>;\n"
	"\tld.param.u64 %rd1, [s];\n"
	"\tld.param.u64 %rd2, [d];\n"
	"\tld.param.u32 %r1, [n];\n"
	"\tmov.u32 %r2, %ctaid.x;\n"
	"\tmov.u32 %r3, %ntid.x;\n"
	"\tmov.u32 %r4, %tid.x;\n"
	"\tmad.lo.u32 %r5, %r2, %r3, %r4;\n"
	"\tsetp.ge.u32 %p1, %r5, %r1;\n"
	"\t@%p1 bra DONE;\n"
	"\tmul.wide.u32 %rd3, %r5, 16;\n"
	"\tadd.s64 %rd4, %rd1, %rd3;\n"
	"\tadd.s64 %rd5, %rd2, %rd3;\n"
	"\tld.global.v4.u32 {%r6, %r7, %r2, %r3}, [%rd4];\n"
	"\tst.global.v4.u32 [%rd5], {%r6, %r7, %r2, %r3};\n"
	"DONE:\n"
	"\tret;\n"
	"}\n"
	".visible .entry fma(.param .u64 d, .param .u32 iters)\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .b32 %r<8>;\n"
	"\t.reg .f32 %f<4>;\n"
	"\t.reg .b64 %rd<4>;\n"
	"\tld.param.u64 %rd1, [d];\n"
	"\tld.param.u32 %r1, [iters];\n"
	"\tmov.u32 %r2, %ctaid.x;\n"
	"\tmov.u32 %r3, %ntid.x;\n"
	"\tmov.u32 %r4, %tid.x;\n"
	"\tmad.lo.u32 %r5, %r2, %r3, %r4;\n"
	"\tcvt.rn.f32.u32 %f1, %r5;\n"
	"\tmov.u32 %r6, 0;\n"
	"LOOP:\n"
	"\tfma.rn.f32 %f1, %f1, 0f3F800347, 0f3F000000;\n"
	"\tadd.u32 %r6, %r6, 1;\n"
	"\tsetp.lt.u32 %p1, %r6, %r1;\n"
	"\t@%p1 bra LOOP;\n"
	"\tmul.wide.u32 %rd2, %r5, 4;\n"
	"\tadd.s64 %rd3, %rd1, %rd2;\n"
	"\tst.global.f32 [%rd3], %f1;\n"
	"\tret;\n"
	"}\n"
	".visible .entry shared_generic(.param .u64 d)\n"
	"{\n"
	"\t.reg .b32 %r<4>;\n"
	"\t.reg .b64 %rd<6>;\n"
	"\t.shared .align 4 .b8 sm[512];\n"
	"\tld.param.u64 %rd1, [d];\n"
	"\tmov.u32 %r1, %tid.x;\n"
	"\tmov.u64 %rd2, sm;\n"
	"\tcvta.shared.u64 %rd3, %rd2;\n"
	"\tmul.wide.u32 %rd4, %r1, 4;\n"
	"\tadd.s64 %rd5, %rd3, %rd4;\n"
	"\tadd.u32 %r2, %r1, 1000;\n"
	"\tst.u32 [%rd5], %r2;\n"
	"\tbar.sync 0;\n"
	"\tld.u32 %r3, [%rd5];\n"
	"\tadd.s64 %rd5, %rd1, %rd4;\n"
	"\tst.global.u32 [%rd5], %r3;\n"
	"\tret;\n"
	"}\n";

static const char *const kernels[] = { "poke", "poke_generic", "copy", "fma", "shared_generic", "poke_func" };
#define NK 6
#define WINDOW (4ull << 30) /* the smallest window the fence takes (jit.h) */
#define MAPPED (256ull << 20)

static struct cuda_api api;
static int passed, failed;

static void ok(const char *fmt, const char *a)
{
	(void)fmt; /* always "%s" */
	printf("ok: %s\n", a);
	passed++;
}

static void bad(const char *what, const char *detail)
{
	printf("FAIL: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	failed++;
}

static const char *cuerr(CUresult r)
{
	static char b[128];

	return cuda_strerror(&api, r, b, sizeof(b));
}

#define CK(call)                                                                                              \
	do {                                                                                                  \
		CUresult r_ = (call);                                                                         \
		if (r_ != CUDA_SUCCESS) {                                                                     \
			bad(#call, cuerr(r_));                                                                \
			goto out;                                                                             \
		}                                                                                             \
	} while (0)

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

/* median of 20 timed launches, in microseconds */
static float timed(CUfunction f, unsigned grid, void **args, CUstream st, CUevent e0, CUevent e1, CUresult *err)
{
	float ms[20];

	for (int i = 0; i < 23; i++) {
		float t = 0;

		if ((*err = api.p_cuEventRecord(e0, st)) || (*err = api.p_cuLaunchKernel(f, grid, 1, 1, 256, 1, 1, 0, st, args, NULL)) ||
		    (*err = api.p_cuEventRecord(e1, st)) || (*err = api.p_cuEventSynchronize(e1)) ||
		    (*err = api.p_cuEventElapsedTime(&t, e0, e1)))
			return 0;
		if (i >= 3)
			ms[i - 3] = t;
	}
	qsort(ms, 20, sizeof(ms[0]), cmp_f);
	return (ms[9] + ms[10]) * 500.0f;
}

int main(int argc, char **argv)
{
	char why[512], name[64];
	struct ptx_module *m = NULL;
	char *fenced_text = NULL;
	/* the kernel of the last check */
	int pk = argc > 2 && !strcmp(argv[2], "generic") ? 1 : argc > 2 && !strcmp(argv[2], "func") ? 5 : 0;
	bool fused = argc > 3 && !strcmp(argv[3], "fused");
	struct jit_fused *fz = NULL;
	CUmodule mod_fused;
	CUfunction f_fused = NULL;
	CUdeviceptr tab_dev = 0;
	CUmodule mod_plain, mod_fenced;
	CUfunction fp[NK], ff[NK];
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr win = 0, src, dst, out2;
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	CUstream st;
	CUevent e0, e1;
	uint32_t *host = NULL, *buf = NULL;
	uint64_t base, mask;
	unsigned nfenced = 0;
	const unsigned n16 = (64u << 20) / 16; /* 64 MiB as 16-byte elements */

	if (argc < 2) {
		fprintf(stderr, "usage: fence_check LIBCUDA\n");
		return 2;
	}
	if (cuda_load(&api, argv[1], why, sizeof(why)) < 0) {
		printf("SKIP: %s\n", why);
		return 77;
	}
	/* fence every kernel (the module grows one fenced copy at a time), then prove it */
	{
		struct jit_buf cur = { 0 };
		const char *text = ptx;
		size_t len = strlen(ptx);

		for (int k = 0; k < NK; k++) {
			struct jit_buf next = { 0 };

			if (ptx_parse(text, len, &m, why, sizeof(why)) < 0 ||
			    jit_fence(m, kernels[k], &next, why, sizeof(why)) < 0) {
				bad("fence", why);
				return 1;
			}
			ptx_module_free(m);
			m = NULL;
			jit_buf_free(&cur);
			cur = next;
			text = cur.data;
			len = cur.len;
		}
		if (jit_fence_check(cur.data, cur.len, &nfenced, why, sizeof(why)) < 0 || nfenced != NK) {
			bad("fence-check", why);
			return 1;
		}
		fenced_text = strndup(cur.data, cur.len); /* NUL-terminated for cuModuleLoadData */
		jit_buf_free(&cur);
		if (!fenced_text)
			return 1;
	}
	if (fused) {
		struct jit_body body = { 0 };

		snprintf(name, sizeof(name), "%s_ooo_fenced", kernels[pk]);
		body.kernel = name;
		if (ptx_parse(fenced_text, strlen(fenced_text), &m, why, sizeof(why)) < 0 ||
		    (body.mod = m, jit_fuse(&body, 1, &fz, why, sizeof(why)) < 0)) {
			bad("fuse of the fenced poke", why);
			return 1;
		}
	}
	if (api.p_cuInit(0) != CUDA_SUCCESS) {
		printf("SKIP: cuInit failed\n");
		return 77;
	}
	CK(api.p_cuDeviceGet(&dev, 0));
	CK(api.p_cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(api.p_cuCtxSetCurrent(ctx));
	CK(api.p_cuModuleLoadDataEx(&mod_plain, ptx, 0, NULL, NULL));
	CK(api.p_cuModuleLoadDataEx(&mod_fenced, fenced_text, 0, NULL, NULL));
	if (fz) {
		CK(api.p_cuModuleLoadDataEx(&mod_fused, fz->ptx, 0, NULL, NULL));
		CK(api.p_cuModuleGetFunction(&f_fused, mod_fused, fz->entry));
	}
	for (int k = 0; k < NK; k++) {
		snprintf(name, sizeof(name), "%s_ooo_fenced", kernels[k]);
		CK(api.p_cuModuleGetFunction(&fp[k], mod_plain, kernels[k]));
		CK(api.p_cuModuleGetFunction(&ff[k], mod_fenced, name));
	}
	/* the window */
	CK(api.p_cuMemAddressReserve(&win, WINDOW, WINDOW, 0, 0));
	if (win & (WINDOW - 1)) {
		bad("cuMemAddressReserve alignment", "window not aligned");
		goto out;
	}
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	CK(api.p_cuMemCreate(&h, MAPPED, &prop, 0));
	CK(api.p_cuMemMap(win, MAPPED, 0, h, 0));
	memset(&acc, 0, sizeof(acc));
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = dev;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CK(api.p_cuMemSetAccess(win, MAPPED, &acc, 1));
	base = win;
	mask = ~(WINDOW - 1);
	src = win;
	dst = win + (64u << 20);
	out2 = win + (128u << 20);
	CK(api.p_cuStreamCreate(&st, 0));
	CK(api.p_cuEventCreate(&e0, 0));
	CK(api.p_cuEventCreate(&e1, 0));
	printf("info: window %#llx, %llu MiB, %llu MiB mapped\n", (unsigned long long)win,
	       (unsigned long long)(WINDOW >> 20), (unsigned long long)(MAPPED >> 20));

	/* 1: copy, fenced and not */
	buf = malloc(64u << 20);
	if (!buf) {
		bad("malloc", NULL);
		goto out;
	}
	for (uint32_t i = 0; i < (64u << 20) / 4; i++)
		buf[i] = i * 2654435761u;
	CK(api.p_cuMemcpyHtoD(src, buf, 64u << 20));
	{
		void *a[] = { &src, &dst, (void *)&n16, &base, &mask };
		uint32_t *back = malloc(64u << 20);

		if (!back) {
			bad("malloc", NULL);
			goto out;
		}
		CK(api.p_cuMemsetD32Async(dst, 0, (64u << 20) / 4, st));
		CK(api.p_cuLaunchKernel(ff[2], n16 / 256, 1, 1, 256, 1, 1, 0, st, a, NULL));
		CK(api.p_cuStreamSynchronize(st));
		CK(api.p_cuMemcpyDtoH(back, dst, 64u << 20));
		if (memcmp(back, buf, 64u << 20) == 0)
			ok("%s", "a fenced copy inside the window moves every byte (64 MiB)");
		else
			bad("fenced copy", "the bytes differ");
		free(back);
	}
	/* 2: generic access to shared memory */
	{
		void *a[] = { &out2, &base, &mask };
		uint32_t got[128], good = 1;

		CK(api.p_cuLaunchKernel(ff[4], 1, 1, 1, 128, 1, 1, 0, st, a, NULL));
		CK(api.p_cuStreamSynchronize(st));
		CK(api.p_cuMemcpyDtoH(got, out2, sizeof(got)));
		for (uint32_t i = 0; i < 128; i++)
			good &= got[i] == i + 1000;
		if (good)
			ok("%s", "a fenced generic access to shared memory passes (isspacep.shared)");
		else
			bad("shared through a generic address", "wrong values");
	}
	/* 3: the cost */
	{
		void *ap[] = { &src, &dst, (void *)&n16 }, *af[] = { &src, &dst, (void *)&n16, &base, &mask };
		uint32_t iters = 4096, nthreads = 132 * 2048;
		void *bp[] = { &out2, &iters }, *bf[] = { &out2, &iters, &base, &mask };
		CUresult e = CUDA_SUCCESS;
		float cp = timed(fp[2], n16 / 256, ap, st, e0, e1, &e), cf = timed(ff[2], n16 / 256, af, st, e0, e1, &e);
		float fpu = timed(fp[3], nthreads / 256, bp, st, e0, e1, &e), ffu = timed(ff[3], nthreads / 256, bf, st, e0, e1, &e);

		if (e != CUDA_SUCCESS) {
			bad("timing", cuerr(e));
			goto out;
		}
		printf("bench: memory-bound copy of 64 MiB (ld/st.global.v4): unfenced %.1f us, fenced %.1f us: %+.1f%%\n",
		       cp, cf, (cf / cp - 1) * 100);
		printf("bench: compute-bound FMA loop (4096 iterations, %u threads, one store): unfenced %.1f us, fenced %.1f us: "
		       "%+.1f%%\n",
		       nthreads, fpu, ffu, (ffu / fpu - 1) * 100);
	}
	/* 4: outside the window, last */
	CK(api.p_cuMemHostAlloc((void **)&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
	host[0] = 0;
	{
		uint64_t hp = (uint64_t)(uintptr_t)host; /* unified addressing: the host pointer is the device pointer */
		uint32_t v1 = 0x1111, v2 = 0x2222;
		void *a1[] = { &hp, &v1 }, *a2[] = { &hp, &v2, &base, &mask };
		CUresult r;

		if ((hp & mask) == base) {
			bad("host memory inside the window", "cannot test");
			goto out;
		}
		CK(api.p_cuLaunchKernel(fp[pk], 1, 1, 1, 1, 1, 1, 0, st, a1, NULL));
		CK(api.p_cuStreamSynchronize(st));
		if (host[0] == v1)
			ok("%s", "the unfenced poke writes memory outside the window (the control)");
		else
			bad("unfenced poke", "did not write");
		if (f_fused) {
			/* two members of the fused kernel: the first pokes its own window, the second outside it */
			struct {
				uint64_t a;
				uint32_t v, pad;
				uint64_t base, mask;
			} pin = { out2, 7, 0, base, mask }, pout = { hp, v2, 0, base, mask };
			struct jit_desc_launch dl[2] = {
				{ .body = 0, .grid = { 1, 1, 1 }, .params = &pin, .param_size = sizeof(pin) },
				{ .body = 0, .grid = { 1, 1, 1 }, .params = &pout, .param_size = sizeof(pout) }
			};
			unsigned char tab[1024];
			uint32_t total = 0, nm = 2, uni = 1;
			size_t need = 0;
			long tsize = jit_desc_build(dl, 2, tab, sizeof(tab), &total, &need);
			void *fa[] = { &tab_dev, &nm, &uni };

			if (tsize < 0) {
				bad("jit_desc_build", NULL);
				goto out;
			}
			CK(api.p_cuMemAlloc(&tab_dev, (size_t)tsize));
			CK(api.p_cuMemcpyHtoD(tab_dev, tab, (size_t)tsize));
			r = api.p_cuLaunchKernel(f_fused, total, 1, 1, 1, 1, 1, 0, st, fa, NULL);
		} else {
			r = api.p_cuLaunchKernel(ff[pk], 1, 1, 1, 1, 1, 1, 0, st, a2, NULL);
		}
		if (r == CUDA_SUCCESS)
			r = api.p_cuStreamSynchronize(st);
		if (r != CUDA_SUCCESS && host[0] == v1) {
			char msg[240];

			snprintf(msg, sizeof(msg), "the fenced %s poke outside the window%s traps (%s) and writes nothing",
				 pk == 1 ? "generic" : pk == 5 ? "through a .func" : "global",
				 f_fused ? ", the second member of a fused kernel," : "", cuerr(r));
			ok("%s", msg);
		} else {
			bad("fenced poke", r == CUDA_SUCCESS ? "did not trap" : "trapped but the memory changed");
		}
	}
out:
	printf("%d passed, %d failed\n", passed, failed);
	jit_fused_free(fz);
	ptx_module_free(m);
	free(fenced_text);
	free(buf);
	return failed ? 1 : 0;
}
