/* SPDX-License-Identifier: MIT */
/*
 * mps_check: a native CUDA program (driver API, no libooo) for
 * tests/gpu/test_mps.sh, run under ooo-run leases.
 *
 *   mps_check LIBCUDA info           print "sm N" (MULTIPROCESSOR_COUNT) and "mem_free BYTES"
 *   mps_check LIBCUDA alloc BYTES    cuMemAlloc BYTES: "alloc ok" (exit 0) or "alloc failed NAME" (exit 3)
 *   mps_check LIBCUDA probe          4096 blocks that each spin 20 us: "smids N" distinct SMs they ran on
 *   mps_check LIBCUDA hold SECONDS   open the context, print "ready", sleep
 *   mps_check LIBCUDA spin SECONDS   print "ready", launch probe batches for SECONDS: "launches N"
 *
 * Exit 77 when there is no device, 1 on any other CUDA error (printed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/exec/cuda.h"

static const char ptx[] = ".version 8.0\n"
			  ".target sm_75\n"
			  ".address_size 64\n"
			  ".visible .entry probe(.param .u64 p_smid, .param .u64 p_ns)\n"
			  "{\n"
			  "	.reg .pred %p<3>;\n"
			  "	.reg .b32 %r<8>;\n"
			  "	.reg .b64 %rd<10>;\n"
			  "	mov.u32 %r1, %tid.x;\n"
			  "	setp.ne.u32 %p1, %r1, 0;\n"
			  "	@%p1 bra DONE;\n"
			  "	ld.param.u64 %rd1, [p_smid];\n"
			  "	ld.param.u64 %rd3, [p_ns];\n"
			  "	cvta.to.global.u64 %rd1, %rd1;\n"
			  "	mov.u64 %rd4, %globaltimer;\n"
			  "SPIN:\n"
			  "	mov.u64 %rd5, %globaltimer;\n"
			  "	sub.u64 %rd6, %rd5, %rd4;\n"
			  "	setp.lt.u64 %p2, %rd6, %rd3;\n"
			  "	@%p2 bra SPIN;\n"
			  "	mov.u32 %r2, %smid;\n"
			  "	mov.u32 %r4, %ctaid.x;\n"
			  "	mul.wide.u32 %rd7, %r4, 4;\n"
			  "	add.u64 %rd8, %rd1, %rd7;\n"
			  "	st.global.u32 [%rd8], %r2;\n"
			  "DONE:\n"
			  "	ret;\n"
			  "}\n";

#define BLOCKS 4096

static struct cuda_api api;

static void die(const char *what, CUresult r)
{
	char b[128];

	printf("FAIL: %s: %s\n", what, cuda_strerror(&api, r, b, sizeof(b)));
	exit(cuda_error_is_nodev(r) ? 77 : 1);
}

#define CK(call)                                                                                             \
	do {                                                                                                 \
		CUresult r_ = (call);                                                                        \
		if (r_ != CUDA_SUCCESS)                                                                      \
			die(#call, r_);                                                                      \
	} while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned probe(CUfunction fn, CUdeviceptr smids, uint32_t *host)
{
	uint64_t ns = 20000;
	void *args[] = { &smids, &ns };
	unsigned char seen[1024] = { 0 };
	unsigned n = 0;

	CK(api.p_cuLaunchKernel(fn, BLOCKS, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	CK(api.p_cuCtxSynchronize());
	if (!host)
		return 0;
	CK(api.p_cuMemcpyDtoH(host, smids, BLOCKS * sizeof(uint32_t)));
	for (int i = 0; i < BLOCKS; i++) {
		if (host[i] < sizeof(seen) && !seen[host[i]]) {
			seen[host[i]] = 1;
			n++;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	char why[256];
	CUdevice dev;
	CUcontext ctx;
	const char *mode;

	if (argc < 3) {
		fprintf(stderr, "usage: mps_check LIBCUDA info|alloc BYTES|probe|hold S|spin S\n");
		return 2;
	}
	mode = argv[2];
	if (cuda_load(&api, argv[1], why, sizeof(why)) < 0) {
		printf("SKIP: %s\n", why);
		return 77;
	}
	CK(api.p_cuInit(0));
	CK(api.p_cuDeviceGet(&dev, 0));
	CK(api.p_cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(api.p_cuCtxSetCurrent(ctx));
	if (!strcmp(mode, "info")) {
		int sm = 0;
		size_t fr = 0, to = 0;

		CK(api.p_cuDeviceGetAttribute(&sm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
		CK(api.p_cuMemGetInfo(&fr, &to));
		printf("sm %d\nmem_free %zu\nmem_total %zu\n", sm, fr, to);
		return 0;
	}
	if (!strcmp(mode, "alloc") && argc > 3) {
		CUdeviceptr p;
		CUresult r = api.p_cuMemAlloc(&p, (size_t)strtoull(argv[3], NULL, 0));
		const char *name = "?";

		if (r == CUDA_SUCCESS) {
			printf("alloc ok\n");
			return 0;
		}
		api.p_cuGetErrorName(r, &name);
		printf("alloc failed %s\n", name);
		return 3;
	}
	if (!strcmp(mode, "hold") && argc > 3) {
		printf("ready\n");
		fflush(stdout);
		sleep((unsigned)atoi(argv[3]));
		return 0;
	}
	if (!strcmp(mode, "probe") || (!strcmp(mode, "spin") && argc > 3)) {
		CUmodule mod;
		CUfunction fn;
		CUdeviceptr smids;
		static uint32_t host[BLOCKS];

		CK(api.p_cuModuleLoadDataEx(&mod, ptx, 0, NULL, NULL));
		CK(api.p_cuModuleGetFunction(&fn, mod, "probe"));
		CK(api.p_cuMemAlloc(&smids, BLOCKS * sizeof(uint32_t)));
		if (!strcmp(mode, "probe")) {
			printf("smids %u\n", probe(fn, smids, host));
			return 0;
		}
		{
			double end = now_s() + atof(argv[3]);
			unsigned long n = 0;

			printf("ready\n");
			fflush(stdout);
			while (now_s() < end) {
				probe(fn, smids, NULL);
				n++;
			}
			printf("launches %lu\n", n);
		}
		return 0;
	}
	fprintf(stderr, "mps_check: unknown mode '%s'\n", mode);
	return 2;
}
