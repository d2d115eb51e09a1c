/* SPDX-License-Identifier: MIT */
/*
 * The tenant's GPU backend. direct and mps: the process's own CUDA context
 * (device 0's primary context, one non-blocking stream), libcuda loaded
 * with dlopen by cuda_load. Under MPS it is the same code: the driver
 * connects to the MPS control daemon named by CUDA_MPS_PIPE_DIRECTORY. ooo:
 * a libooo session and one queue; no CUDA in this process.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"

__attribute__((format(printf, 2, 3))) static int fail(struct gpu *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->why, sizeof(g->why), fmt, ap);
	va_end(ap);
	return -EIO;
}

static int cu_fail(struct gpu *g, const char *what, CUresult r)
{
	char b[256];

	return fail(g, "%s: %s", what, cuda_strerror(&g->api, r, b, sizeof(b)));
}

static int ooo_fail(struct gpu *g, const char *what, int r)
{
	const char *why = ooo_last_error();

	snprintf(g->why, sizeof(g->why), "%s: %s%s%s", what, ooo_strerror(r), why[0] ? ": " : "", why);
	return r < 0 ? r : -EIO;
}

/* CU(g, cuFoo, args...): call it, and on failure return "cuFoo: CUDA_ERROR_...: text" */
#define CU(g, fn, ...)                                                                                     \
	do {                                                                                               \
		CUresult cu_r_ = (g)->api.p_##fn(__VA_ARGS__);                                             \
		if (cu_r_ != CUDA_SUCCESS)                                                                 \
			return cu_fail((g), #fn, cu_r_);                                                   \
	} while (0)

static bool is_direct(const struct gpu *g)
{
	return g->mode != BM_OOO; /* lease tenants are native CUDA programs too */
}

int gpu_open(struct gpu *g, const struct tenant_cfg *c)
{
	memset(g, 0, sizeof(*g));
	g->mode = (enum bench_mode)c->mode;
	if (is_direct(g)) {
		int r = cuda_load(&g->api, c->libcuda, g->why, sizeof(g->why));

		if (r < 0)
			return r;
		g->cuda_loaded = true;
		CU(g, cuInit, 0);
		CU(g, cuDeviceGet, &g->dev, 0);
		CU(g, cuDevicePrimaryCtxRetain, &g->ctx, g->dev);
		g->ctx_retained = true;
		CU(g, cuCtxSetCurrent, g->ctx);
		if (c->stream_prio > 0) {
			int least, greatest;

			CU(g, cuCtxGetStreamPriorityRange, &least, &greatest);
			CU(g, cuStreamCreateWithPriority, &g->st, CU_STREAM_NON_BLOCKING, greatest);
		} else {
			CU(g, cuStreamCreate, &g->st, CU_STREAM_NON_BLOCKING);
		}
		return 0;
	}
	{
		struct ooo_open_opts o = {
			.sz = sizeof(o), .path = c->socket, .name = "ooo-bench", .timeout_ms = 30000
		};
		struct ooo_queue_opts qo = { .sz = sizeof(qo), .priority = c->ooo_priority, .slo_us = c->ooo_slo_us };
		int r;

		/* the previous point's sessions may still be closing: retry a session limit briefly */
		for (int tries = 0; !(g->s = ooo_open_opts(&o)) && errno == OOO_ELIMIT && tries < 200; tries++)
			usleep(10000);
		if (!g->s)
			return ooo_fail(g, "ooo_open", -errno);
		r = ooo_queue_create(g->s, &qo, &g->q);
		if (r < 0)
			return ooo_fail(g, "ooo_queue_create", r);
		return 0;
	}
}

int gpu_arena(struct gpu *g, size_t bytes)
{
	bytes = (bytes + 0xfffff) & ~(size_t)0xfffff;
	if (is_direct(g)) {
		CU(g, cuMemAlloc, &g->dptr, bytes);
		g->arena_base = g->dptr;
	} else {
		int r = ooo_buf_alloc(g->s, bytes, 0, &g->buf);

		if (r < 0)
			return ooo_fail(g, "ooo_buf_alloc", r);
		g->arena_base = ooo_buf_addr(g->buf);
	}
	g->arena_size = bytes;
	g->arena_used = 0;
	return 0;
}

uint64_t gpu_sub(struct gpu *g, size_t bytes)
{
	size_t at = (g->arena_used + 255) & ~(size_t)255;

	if (!g->arena_base || at + bytes > g->arena_size || at + bytes < at) {
		fail(g, "device arena of %zu bytes is full (%zu more wanted)", g->arena_size, bytes);
		return 0;
	}
	g->arena_used = at + bytes;
	return g->arena_base + at;
}

void *gpu_host(struct gpu *g, size_t bytes)
{
	size_t len = (bytes + 4095) & ~(size_t)4095;
	void *p;

	if (g->nhost == GPU_MAX_HOST) {
		fail(g, "too many host buffers");
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fail(g, "mmap of %zu bytes: %s", len, strerror(errno));
		return NULL;
	}
	g->host[g->nhost] = p;
	g->host_len[g->nhost] = len;
	if (is_direct(g)) {
		CUresult r = g->api.p_cuMemHostRegister(p, len, 0);

		if (r != CUDA_SUCCESS) {
			cu_fail(g, "cuMemHostRegister", r);
			munmap(p, len);
			return NULL;
		}
		g->host_reg[g->nhost] = true;
	}
	g->nhost++;
	return p;
}

int gpu_kernel(struct gpu *g, const char *ptx, size_t len, const char *name, struct gpu_kernel *k)
{
	memset(k, 0, sizeof(*k));
	if (g->nmods == GPU_MAX_MODULES || g->nkerns == GPU_MAX_KERNELS)
		return fail(g, "too many modules");
	if (is_direct(g)) {
		CUmodule m;
		size_t off, size;
		CUresult r;

		/* cuModuleLoadDataEx reads PTX up to its NUL: ptx[len] is one */
		(void)len;
		CU(g, cuModuleLoadDataEx, &m, ptx, 0, NULL, NULL);
		g->mods[g->nmods++] = m;
		r = g->api.p_cuModuleGetFunction(&k->f, m, name);
		if (r != CUDA_SUCCESS)
			return fail(g, "cuModuleGetFunction(\"%s\"): %s", name,
				    cuda_strerror(&g->api, r, (char[128]){ 0 }, 128));
		for (uint32_t i = 0;; i++) {
			r = g->api.p_cuFuncGetParamInfo(k->f, i, &off, &size);
			if (r != CUDA_SUCCESS)
				break;
			if (i == BENCH_MAX_PARAMS)
				return fail(g, "kernel %s has more than %d parameters", name, BENCH_MAX_PARAMS);
			k->off[i] = (uint32_t)off;
			k->size[i] = (uint32_t)size;
			k->nparams = i + 1;
			if (off + size > k->param_size)
				k->param_size = (uint32_t)(off + size);
		}
	} else {
		struct ooo_kernel_info info = { .sz = sizeof(info) };
		ooo_module *m;
		int r = ooo_module_load(g->s, OOO_PTX, ptx, len, &m);

		if (r < 0)
			return ooo_fail(g, "ooo_module_load", r);
		g->omods[g->nmods++] = m;
		r = ooo_kernel_get(m, name, &k->ok);
		if (r < 0)
			return ooo_fail(g, "ooo_kernel_get", r);
		g->okerns[g->nkerns++] = k->ok;
		r = ooo_kernel_info(k->ok, &info);
		if (r < 0)
			return ooo_fail(g, "ooo_kernel_info", r);
		if (info.nparams > BENCH_MAX_PARAMS)
			return fail(g, "kernel %s has more than %d parameters", name, BENCH_MAX_PARAMS);
		k->nparams = info.nparams;
		k->param_size = info.param_size;
		memcpy(k->off, info.param_offset, sizeof(k->off[0]) * info.nparams);
		memcpy(k->size, info.param_bytes, sizeof(k->size[0]) * info.nparams);
	}
	if (k->param_size > GPU_PARAM_MAX)
		return fail(g, "kernel %s takes %u bytes of parameters; the bench handles %d", name, k->param_size,
			    GPU_PARAM_MAX);
	return 0;
}

int gpu_pack(struct gpu *g, const struct gpu_kernel *k, const struct karg *a, unsigned n, void *buf, size_t cap)
{
	if (n != k->nparams)
		return fail(g, "the kernel takes %u parameters, %u given", k->nparams, n);
	if (k->param_size > cap)
		return fail(g, "parameter block of %u bytes too large", k->param_size);
	memset(buf, 0, k->param_size);
	for (unsigned i = 0; i < n; i++) {
		if (a[i].bytes != k->size[i])
			return fail(g, "parameter %u is %u bytes in the kernel, %u given", i + 1, k->size[i],
				    a[i].bytes);
		/* little-endian: the low bytes of bits */
		memcpy((char *)buf + k->off[i], &a[i].bits, a[i].bytes);
	}
	return 0;
}

int gpu_launch(struct gpu *g, const struct gpu_kernel *k, const uint32_t grid[3], const uint32_t block[3],
	       uint32_t shmem, const void *params)
{
	if (is_direct(g)) {
		size_t size = k->param_size;
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)params, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
				  CU_LAUNCH_PARAM_END };

		CU(g, cuLaunchKernel, k->f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem, g->st,
		   NULL, size ? extra : NULL);
		return 0;
	} else {
		int r = ooo_launch(g->q, k->ok, grid, block, shmem, params, k->param_size);

		return r < 0 ? ooo_fail(g, "ooo_launch", r) : 0;
	}
}

int gpu_htod(struct gpu *g, uint64_t dst, const void *src, size_t len)
{
	if (is_direct(g)) {
		CU(g, cuMemcpyHtoDAsync, dst, src, len, g->st);
		return 0;
	} else {
		int r = ooo_memcpy_htod(g->q, dst, src, len);

		return r < 0 ? ooo_fail(g, "ooo_memcpy_htod", r) : 0;
	}
}

int gpu_dtoh(struct gpu *g, void *dst, uint64_t src, size_t len)
{
	if (is_direct(g)) {
		CU(g, cuMemcpyDtoHAsync, dst, src, len, g->st);
		CU(g, cuStreamSynchronize, g->st);
		return 0;
	} else {
		/* returns when the data is here, after everything before it on the queue */
		int r = ooo_memcpy_dtoh(g->q, dst, src, len);

		return r < 0 ? ooo_fail(g, "ooo_memcpy_dtoh", r) : 0;
	}
}

int gpu_memset32(struct gpu *g, uint64_t dst, uint32_t value, size_t count)
{
	if (is_direct(g)) {
		CU(g, cuMemsetD32Async, dst, value, count, g->st);
		return 0;
	} else {
		int r = ooo_memset(g->q, dst, value, count, 4);

		return r < 0 ? ooo_fail(g, "ooo_memset", r) : 0;
	}
}

int gpu_sync(struct gpu *g)
{
	if (is_direct(g)) {
		CU(g, cuStreamSynchronize, g->st);
		return 0;
	} else {
		int r = ooo_queue_sync(g->q, GPU_SYNC_TIMEOUT_MS);

		return r < 0 ? ooo_fail(g, "ooo_queue_sync", r) : 0;
	}
}

void gpu_close(struct gpu *g)
{
	if (is_direct(g)) {
		if (g->ctx_retained) {
			if (g->st)
				g->api.p_cuStreamSynchronize(g->st);
			for (unsigned i = 0; i < g->nhost; i++)
				if (g->host_reg[i])
					g->api.p_cuMemHostUnregister(g->host[i]);
			if (g->dptr)
				g->api.p_cuMemFree(g->dptr);
			for (unsigned i = 0; i < g->nmods; i++)
				g->api.p_cuModuleUnload(g->mods[i]);
			if (g->st)
				g->api.p_cuStreamDestroy(g->st);
			g->api.p_cuDevicePrimaryCtxRelease(g->dev);
		}
		if (g->cuda_loaded)
			cuda_unload(&g->api);
	} else {
		if (g->q)
			ooo_queue_destroy(g->q);
		for (unsigned i = 0; i < g->nkerns; i++)
			ooo_kernel_free(g->okerns[i]);
		for (unsigned i = 0; i < g->nmods; i++)
			ooo_module_unload(g->omods[i]);
		if (g->buf)
			ooo_buf_free(g->buf);
		ooo_close(g->s);
	}
	for (unsigned i = 0; i < g->nhost; i++)
		munmap(g->host[i], g->host_len[i]);
	memset(g, 0, sizeof(*g));
}
