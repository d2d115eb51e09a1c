/* SPDX-License-Identifier: MIT */
/*
 * The GPU backend of ooo-bench's tenants (gpu.c): it either drives the
 * process's own CUDA context (direct and mps modes, libcuda loaded at run
 * time through daemon/exec/cuda.c) or goes through libooo to oood (ooo
 * mode, no CUDA in the tenant). The workloads (workloads.h) are written
 * once against it.
 */
#ifndef OOO_BENCH_BACKEND_H
#define OOO_BENCH_BACKEND_H

#include <ooo/ooo.h>

#include "../../daemon/exec/cuda.h"
#include "bench.h"

#define GPU_MAX_MODULES 4
#define GPU_MAX_KERNELS 4
#define GPU_MAX_HOST 8
#define GPU_SYNC_TIMEOUT_MS 60000
#define GPU_PARAM_MAX 4096

struct gpu_kernel {
	CUfunction f;   /* direct */
	ooo_kernel *ok; /* ooo */
	uint32_t nparams, param_size;
	uint32_t off[BENCH_MAX_PARAMS], size[BENCH_MAX_PARAMS];
};

struct gpu {
	enum bench_mode mode;
	char why[BENCH_ERR_MAX]; /* what the last failed call did */
	/* direct, mps */
	struct cuda_api api;
	bool cuda_loaded, ctx_retained;
	CUdevice dev;
	CUcontext ctx;
	CUstream st;
	CUmodule mods[GPU_MAX_MODULES];
	CUdeviceptr dptr;
	/* ooo */
	ooo_session *s;
	ooo_queue *q;
	ooo_buf *buf;
	ooo_module *omods[GPU_MAX_MODULES];
	ooo_kernel *okerns[GPU_MAX_KERNELS];
	unsigned nmods, nkerns;
	/* both: one device arena, sub-allocated; host buffers (pinned in direct) */
	uint64_t arena_base;
	size_t arena_size, arena_used;
	void *host[GPU_MAX_HOST];
	size_t host_len[GPU_MAX_HOST];
	bool host_reg[GPU_MAX_HOST];
	unsigned nhost;
};

/* A typed kernel argument, packed into the parameter block by gpu_pack. */
struct karg {
	uint32_t bytes;
	uint64_t bits;
};

static inline struct karg karg_u64(uint64_t v)
{
	return (struct karg){ 8, v };
}

static inline struct karg karg_i32(int32_t v)
{
	return (struct karg){ 4, (uint32_t)v };
}

/* Returns 0, or a negative error with g->why saying what failed. */
int gpu_open(struct gpu *g, const struct tenant_cfg *c);
int gpu_arena(struct gpu *g, size_t bytes);
/* The next `bytes` of the arena, 256-byte aligned; 0 (and why) when it is full. */
uint64_t gpu_sub(struct gpu *g, size_t bytes);
/* Zeroed host memory for per-request copies (page-locked in direct mode); NULL and why on failure. */
void *gpu_host(struct gpu *g, size_t bytes);
int gpu_kernel(struct gpu *g, const char *ptx, size_t len, const char *name, struct gpu_kernel *k);
int gpu_pack(struct gpu *g, const struct gpu_kernel *k, const struct karg *a, unsigned n, void *buf, size_t cap);
int gpu_launch(struct gpu *g, const struct gpu_kernel *k, const uint32_t grid[3], const uint32_t block[3],
	       uint32_t shmem, const void *params);
int gpu_htod(struct gpu *g, uint64_t dst, const void *src, size_t len); /* in queue order */
int gpu_dtoh(struct gpu *g, void *dst, uint64_t src, size_t len);       /* waits for it and all before */
int gpu_memset32(struct gpu *g, uint64_t dst, uint32_t value, size_t count); /* in queue order */
int gpu_sync(struct gpu *g);
void gpu_close(struct gpu *g);

#endif
