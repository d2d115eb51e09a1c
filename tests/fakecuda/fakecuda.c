/* SPDX-License-Identifier: MIT */
/*
 * A stand-in libcuda.so.1 for the tests on machines without a GPU (never
 * installed, never in the product): the driver entry points the executor
 * resolves (daemon/exec/cuda.h), with "device" memory that is host memory
 * at the same address, so that oood's executor runs its data path in CI.
 *
 * What it models: one device (132 SMs, compute capability 9.0, 16 GiB);
 * address reservations (PROT_NONE mappings), physical allocations as
 * memfds mapped into them (exported and imported as POSIX fds, so a buffer
 * outlives an executor as with the real driver), copies and memsets done
 * at once, streams and events that are complete as soon as recorded, PTX
 * modules whose .entry names and .param layouts are read from the text.
 * What it does not: kernels (a launch checks its function and does
 * nothing; the one exception is the executor's copy kernel, below),
 * timing (an event pair measures 1 us, or FAKECUDA_ELAPSED_US from the
 * environment: a fused bundle as slow as a test wants), peer
 * access. Green contexts are bookkeeping only: the 132 SMs split into
 * groups of 8 (2 with CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) and
 * a remainder, and a green context knows its SM count and makes streams,
 * but nothing confines a launch to its SMs. One GPU error is modelled: a launch whose 64-bit parameter is
 * below 4096 faults, as a kernel dereferencing a null-page pointer would,
 * and like the real driver's, the fault is sticky: the next query or
 * synchronize sees it (the kernel ran after its launch returned), and from
 * then on every launch, copy, record, query or synchronize of the process
 * fails with CUDA_ERROR_ILLEGAL_ADDRESS (or the CUresult that
 * FAKECUDA_FAULT_CODE gives, such as 710, a device-side assert). With
 * FAKECUDA_REFUSE=1 in the
 * environment, launches are refused (errors that leave the context usable)
 * in two cases: a fused kernel of the executor (an entry named ooo_fused*),
 * as when a fused kernel needs more registers than its block shape allows
 * (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), and a launch whose last parameter
 * is the 32-bit word 0x7e7e7e7e (CUDA_ERROR_INVALID_VALUE): the executor's
 * fallback from a fused launch to its members, one of which is refused.
 * With FAKECUDA_HOSTPTR=1 the device says it reaches registered host
 * memory at its host address (CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM), and
 * the executor's copy kernel (daemon/exec/copy.cu: an entry oood_copy, or a
 * fused module whose only body is oood_copy) does its copies when launched,
 * read from its parameters or its fused table as the real kernel would, so
 * that the executor's copies as launches (oood.conf fuse_copies) are
 * checked byte for byte here too. Tests that need any other kernel's result
 * run on the GPU machine. FAKECUDA_FUSED_LOAD_MS=N makes each load of a
 * module with a fused entry (ooo_fused*) take N ms, as a slow compile
 * would: its results come after the tenants that asked for them are gone.
 * FAKECUDA_SLOW_LOAD_MS=N makes each load of a module whose text holds
 * "fakecuda_slow_load" take N ms, as the driver's PTX JIT of a large
 * module would (launch_check loadstall).
 * Streams remember their priority: with FAKECUDA_PRIO_DIR=DIR, the first
 * launch of a fused entry (ooo_fused*) on a stream of priority P creates
 * the file DIR/fused-prio-P, so a test sees which CUDA stream priorities
 * the coalescer's bundles ran at.
 * One hang is modelled: a launch whose parameters end in the 32-bit word
 * 0x676e6168 ("hang"), alone or as a member of a fused table, is a kernel
 * that never ends. Its stream hangs: an event recorded on it from then on
 * never completes (cuEventQuery says CUDA_ERROR_NOT_READY), a stream made
 * to wait for such an event hangs too, and synchronizing on any of them
 * (or on the context) blocks, as it would on the GPU: only the process's
 * end stops it. Other streams' work completes as usual.
 * And a slow kernel: one whose parameters end in 0x776f6c73 ("slow") runs
 * FAKECUDA_SLOW_MS (default 3000) ms: its stream's events recorded from
 * then on complete only then (a stream made to wait for one, likewise),
 * and synchronizing on them sleeps until then.
 */
#include <ooo/jit.h>
#include <stddef.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/exec/cuda.h"

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_ENTRIES 4096
#define FAKE_MAX_PARAMS 64

static int hostptr(void);

struct fake_func {
	char name[128];
	int copyk; /* the executor's copy kernel: 1 alone (oood_copy), 2 fused (every member oood_copy) */
	uint32_t nparams;
	size_t off[FAKE_MAX_PARAMS], size[FAKE_MAX_PARAMS];
};

struct CUmod_st {
	uint32_t n;
	struct fake_func *f;
};

struct fake_alloc {
	int fd;
	size_t size;
};

static int inited;
/* atomic: the executor calls the driver from its serving thread and its launcher thread */
static _Atomic CUresult sticky;  /* CUDA_SUCCESS, or the fault every later call reports */
static _Atomic CUresult pending; /* a fault not seen yet: the next query or synchronize sees it (it ran after the launch) */
static _Atomic bool hung;        /* a launch marked "hang" was issued: see the top */
static _Atomic bool legacy_hung; /* on a legacy or per-thread stream handle (below 4096) */
static _Atomic uint64_t slow_until;   /* the latest end of a slow kernel (CLOCK_MONOTONIC ns): see the top */
static _Atomic uint64_t legacy_slow;  /* a slow kernel's end on a legacy or per-thread stream handle */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A synchronizing call behind a slow kernel: it returns when the kernel has ended. */
static void sleep_until(uint64_t t)
{
	for (uint64_t now = mono_ns(); now < t; now = mono_ns()) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)((t - now) < 1000000u ? (t - now) : 1000000u) };

		nanosleep(&ts, NULL);
	}
}

/* *a = max(*a, v) */
static void max_store(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t o = *a;

	while (o < v && !__atomic_compare_exchange_n((uint64_t *)a, &o, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

/* A synchronizing call behind a hang: it never returns (the kernel never ends). */
static void block_if(const _Atomic bool *h)
{
	while (*h)
		pause();
}

static CUresult seen(void)
{
	if (pending != CUDA_SUCCESS)
		sticky = pending;
	return sticky;
}
#define STICKY()                                                                                           \
	do {                                                                                               \
		if (sticky != CUDA_SUCCESS)                                                                \
			return sticky;                                                                     \
	} while (0)
static int ctx_token;

/* FAKECUDA_INIT_MS (environment): cuInit takes that long, as a real driver's first call does (~0.5 s) */
CUresult cuInit(unsigned int flags)
{
	const char *ms = getenv("FAKECUDA_INIT_MS");

	(void)flags;
	if (ms && atoi(ms) > 0)
		usleep((useconds_t)atoi(ms) * 1000u);
	inited = 1;
	return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = 12080;
	return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult e, const char **s)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "FAKE_ERROR_%d", (int)e);
	*s = e == CUDA_SUCCESS ? "CUDA_SUCCESS" : buf;
	return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult e, const char **s)
{
	*s = e == CUDA_SUCCESS ? "no error" : "an error of the fake driver (tests/fakecuda)";
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
	if (!inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	*n = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = 0;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
	if (d != 0 || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "ooo fake GPU (tests/fakecuda)");
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	if (d != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 << 10; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 << 10; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *v = hostptr(); break;
	default: *v = 0; break;
	}
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d)
{
	if (d != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = 16ull << 30;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d)
{
	if (d != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	for (int i = 0; i < 16; i++)
		u->bytes[i] = (char)(0xf0 + i);
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	if (d != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*c = (CUcontext)&ctx_token;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d) { return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }

static __thread CUcontext current;

CUresult cuCtxSetCurrent(CUcontext c)
{
	current = c;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *c)
{
	*c = current;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *d)
{
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	*d = 0;
	return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(size_t *free_b, size_t *total)
{
	*free_b = 15ull << 30;
	*total = 16ull << 30;
	return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p, CUmemAllocationGranularity_flags o)
{
	(void)p;
	(void)o;
	*g = 2u << 20;
	return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *p, unsigned long long fl)
{
	struct fake_alloc *a;
	int fd;

	(void)p;
	(void)fl;
	if (!size)
		return CUDA_ERROR_INVALID_VALUE;
	fd = memfd_create("fakecuda", MFD_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (ftruncate(fd, (off_t)size) < 0 || !(a = malloc(sizeof(*a)))) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->fd = fd;
	a->size = size;
	*h = (CUmemGenericAllocationHandle)(uintptr_t)a;
	return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	struct fake_alloc *a = (struct fake_alloc *)(uintptr_t)h;

	if (!a)
		return CUDA_ERROR_INVALID_VALUE;
	close(a->fd);
	free(a);
	return CUDA_SUCCESS;
}

CUresult cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle h, CUmemAllocationHandleType t,
				      unsigned long long fl)
{
	struct fake_alloc *a = (struct fake_alloc *)(uintptr_t)h;
	int fd;

	(void)fl;
	if (!a || t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_INVALID_VALUE;
	fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*(int *)out = fd;
	return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *handle, CUmemAllocationHandleType t)
{
	int fd = (int)(uintptr_t)handle;
	struct fake_alloc *a;
	struct stat st;

	if (t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || fstat(fd, &st) < 0 || st.st_size <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(a = malloc(sizeof(*a))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (a->fd < 0) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->size = (size_t)st.st_size;
	*h = (CUmemGenericAllocationHandle)(uintptr_t)a;
	return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr, unsigned long long fl)
{
	void *m;

	(void)align;
	(void)fl;
	m = mmap((void *)(uintptr_t)addr, size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (addr ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	if (m == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)m;
	return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr p, size_t size)
{
	return munmap((void *)(uintptr_t)p, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemMap(CUdeviceptr p, size_t size, size_t off, CUmemGenericAllocationHandle h, unsigned long long fl)
{
	struct fake_alloc *a = (struct fake_alloc *)(uintptr_t)h;

	(void)fl;
	if (!a || off + size > a->size)
		return CUDA_ERROR_INVALID_VALUE;
	if (mmap((void *)(uintptr_t)p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, a->fd, (off_t)off) ==
	    MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr p, size_t size)
{
	/* back to a reservation */
	return mmap((void *)(uintptr_t)p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
		    0) == MAP_FAILED
		       ? CUDA_ERROR_INVALID_VALUE
		       : CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr p, size_t size, const CUmemAccessDesc *d, size_t n)
{
	(void)p;
	(void)size;
	return d && n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	STICKY();
	memmove((void *)(uintptr_t)dst, src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	STICKY();
	memmove(dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemsetD32(CUdeviceptr dst, unsigned int v, size_t n)
{
	STICKY();
	uint32_t *p = (uint32_t *)(uintptr_t)dst;

	for (size_t i = 0; i < n; i++)
		p[i] = v;
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
	block_if(&hung);
	sleep_until(slow_until);
	return seen();
}

/* A stream: its priority (the legacy and per-thread handles, below 4096, have 0), and whether it hangs */
struct fake_stream {
	int prio;
	_Atomic bool hung;
	_Atomic uint64_t slow; /* a slow kernel on it ends then (0: none) */
};

static _Atomic bool *stream_hung(CUstream s)
{
	return (uintptr_t)s >= 4096 ? &((struct fake_stream *)s)->hung : &legacy_hung;
}

static _Atomic uint64_t *stream_slow(CUstream s)
{
	return (uintptr_t)s >= 4096 ? &((struct fake_stream *)s)->slow : &legacy_slow;
}

/* An event: whether it was last recorded behind a hang (it never completes), or behind a slow kernel (until when) */
struct fake_event {
	_Atomic bool hung;
	_Atomic uint64_t ready; /* CLOCK_MONOTONIC ns; 0: at once */
};

CUresult cuStreamCreateWithPriority(CUstream *s, unsigned int fl, int prio)
{
	struct fake_stream *f;

	(void)fl;
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	f = calloc(1, sizeof(*f));
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	f->prio = prio < -5 ? -5 : prio > 0 ? 0 : prio; /* clamped to the range, as the driver does */
	*s = (CUstream)f;
	return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *s, unsigned int fl) { return cuStreamCreateWithPriority(s, fl, 0); }

CUresult cuStreamDestroy(CUstream s)
{
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((uintptr_t)s >= 4096)
		free(s);
	return CUDA_SUCCESS;
}

static int stream_prio(CUstream s) { return (uintptr_t)s >= 4096 ? ((const struct fake_stream *)s)->prio : 0; }

/* FAKECUDA_PRIO_DIR: DIR/fused-prio-P on the first fused launch on a stream of priority P (0..-5) */
static void note_fused_prio(CUstream s)
{
	static unsigned seen;
	const char *dir = getenv("FAKECUDA_PRIO_DIR");
	int p = stream_prio(s);
	unsigned bit = 1u << -p;
	char path[512];
	int fd;

	if (!dir || (__atomic_load_n(&seen, __ATOMIC_RELAXED) & bit) || (__atomic_fetch_or(&seen, bit, __ATOMIC_RELAXED) & bit))
		return;
	snprintf(path, sizeof(path), "%s/fused-prio-%d", dir, p);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}
CUresult cuStreamSynchronize(CUstream s)
{
	block_if(stream_hung(s));
	sleep_until(*stream_slow(s));
	return seen();
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int fl)
{
	(void)fl;
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	if (((struct fake_event *)e)->hung)
		*stream_hung(s) = true; /* what comes after waits for ever */
	max_store(stream_slow(s), ((struct fake_event *)e)->ready); /* and for the slow kernel before the event */
	return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
	*least = 0;
	*greatest = -5;
	return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *e, unsigned int fl)
{
	(void)fl;
	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	*e = (CUevent)calloc(1, sizeof(struct fake_event));
	return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuEventDestroy(CUevent e)
{
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	free(e);
	return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s)
{
	STICKY();
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	((struct fake_event *)e)->hung = *stream_hung(s);
	((struct fake_event *)e)->ready = *stream_slow(s);
	return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent e)
{
	if (seen() != CUDA_SUCCESS)
		return sticky;
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	return ((struct fake_event *)e)->hung || mono_ns() < ((struct fake_event *)e)->ready ? CUDA_ERROR_NOT_READY
												: CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e)
{
	if (e) {
		block_if(&((struct fake_event *)e)->hung);
		sleep_until(((struct fake_event *)e)->ready);
	}
	return cuEventQuery(e);
}

/* FAKECUDA_ELAPSED_US (environment): what every event pair measures, in us (default 1) */
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	const char *e = getenv("FAKECUDA_ELAPSED_US"); /* each call: the executor's threads call it at once */
	double us = e && *e ? strtod(e, NULL) : 1;

	if (!a || !b)
		return CUDA_ERROR_INVALID_HANDLE;
	*ms = (float)((us > 0 && us < 1e9 ? us : 1) / 1000.0);
	return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void *p, size_t n, unsigned int fl)
{
	/* FAKECUDA_HOSTREG_FAIL=PATH: while PATH exists, registering host memory fails (out of memory) */
	const char *f = getenv("FAKECUDA_HOSTREG_FAIL");

	(void)fl;
	if (f && *f && access(f, F_OK) == 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return p && n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemHostUnregister(void *p) { return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	(void)s;
	return cuMemcpyHtoD(dst, src, n);
}

CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	(void)s;
	return cuMemcpyDtoH(dst, src, n);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	STICKY();
	(void)s;
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
	STICKY();
	(void)s;
	memset((void *)(uintptr_t)dst, v, n);
	return CUDA_SUCCESS;
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s)
{
	STICKY();
	uint16_t *p = (uint16_t *)(uintptr_t)dst;

	(void)s;
	for (size_t i = 0; i < n; i++)
		p[i] = v;
	return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s)
{
	(void)s;
	return cuMemsetD32(dst, v, n);
}

/* ---- modules: the .entry names and .param layouts of PTX text -------------------- */

static size_t type_size(const char *t, size_t n)
{
	static const struct {
		const char *name;
		size_t size;
	} types[] = { { ".u8", 1 },  { ".s8", 1 },  { ".b8", 1 },  { ".u16", 2 }, { ".s16", 2 }, { ".b16", 2 },
		      { ".f16", 2 }, { ".u32", 4 }, { ".s32", 4 }, { ".b32", 4 }, { ".f32", 4 }, { ".u64", 8 },
		      { ".s64", 8 }, { ".b64", 8 }, { ".f64", 8 } };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i].name) == n && !memcmp(types[i].name, t, n))
			return types[i].size;
	return 0;
}

/* One ".param [.align A] .TYPE name[[N]]" of an entry's list (p .. end): its size and alignment. */
static int param_of(const char *p, const char *end, size_t *size, size_t *align)
{
	size_t a = 0, t = 0, count = 1;

	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		if (p == end)
			break;
		const char *w = p;

		while (p < end && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		if ((size_t)(p - w) == 6 && !memcmp(w, ".align", 6)) {
			a = strtoul(p, NULL, 10);
			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
			while (p < end && *p >= '0' && *p <= '9')
				p++;
		} else if (*w == '.' && type_size(w, (size_t)(p - w))) {
			t = type_size(w, (size_t)(p - w));
		} else if (t) {
			const char *br = memchr(w, '[', (size_t)(p - w));

			if (br)
				count = strtoul(br + 1, NULL, 10);
			break;
		}
	}
	if (!t || !count)
		return -1;
	*size = t * count;
	*align = a ? a : t;
	return 0;
}

static int parse_entries(const char *ptx, size_t len, struct CUmod_st *m)
{
	const char *p = ptx, *end = ptx + len;

	while ((p = memmem(p, (size_t)(end - p), ".entry", 6))) {
		struct fake_func *f;
		const char *n, *open, *close;
		size_t off = 0;

		p += 6;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		n = p;
		while (p < end && *p != '(' && *p != ' ' && *p != '\t' && *p != '\n' && *p != '{')
			p++;
		if (p == n || m->n == FAKE_MAX_ENTRIES)
			continue;
		f = &m->f[m->n];
		memset(f, 0, sizeof(*f));
		snprintf(f->name, sizeof(f->name), "%.*s", (int)(p - n), n);
		open = p;
		while (open < end && (*open == ' ' || *open == '\t' || *open == '\n' || *open == '\r'))
			open++;
		if (open < end && *open == '(' && (close = memchr(open, ')', (size_t)(end - open)))) {
			const char *q = open + 1;

			while (q < close && f->nparams < FAKE_MAX_PARAMS) {
				const char *pr = memmem(q, (size_t)(close - q), ".param", 6), *comma;
				size_t size, align;

				if (!pr)
					break;
				pr += 6;
				comma = memchr(pr, ',', (size_t)(close - pr));
				if (!comma)
					comma = close;
				if (param_of(pr, comma, &size, &align) < 0)
					return -1;
				off = (off + align - 1) / align * align;
				f->off[f->nparams] = off;
				f->size[f->nparams] = size;
				f->nparams++;
				off += size;
				q = comma;
			}
			p = close;
		}
		m->n++;
	}
	return 0;
}

/* Sleep the milliseconds environment variable name says (1 .. max; else not at all): a slow load. */
static void sleep_env_ms(const char *name, long max)
{
	const char *e = getenv(name);
	long ms = e ? strtol(e, NULL, 10) : 0;

	if (ms > 0 && ms <= max) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
}

CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned int nopt, CUjit_option *opt, void **val)
{
	const char *s = image;
	struct CUmod_st *m;
	size_t len;

	(void)nopt;
	(void)opt;
	(void)val;
	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->f = calloc(FAKE_MAX_ENTRIES, sizeof(*m->f)))) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!memcmp(s, "\177ELF", 4)) {
		/* a CUBIN: loaded, with no kernel this fake can name */
		*out = m;
		return CUDA_SUCCESS;
	}
	len = strlen(s);
	if (!memmem(s, len, ".version", 8) || parse_entries(s, len, m) < 0) {
		free(m->f);
		free(m);
		return CUDA_ERROR_INVALID_PTX;
	}
	if (memmem(s, len, "fakecuda_slow_load", 18))
		sleep_env_ms("FAKECUDA_SLOW_LOAD_MS", 60000);
	if (memmem(s, len, ".entry ooo_fused", 16))
		sleep_env_ms("FAKECUDA_FUSED_LOAD_MS", 10000);
	{
		/* the executor's copy kernel, alone or fused with itself only (the JIT names each body) */
		static const char b0[] = "// body 0: oood_copy\n", b1[] = "// body 1:";
		bool fused_copy = memmem(s, len, b0, sizeof(b0) - 1) && !memmem(s, len, b1, sizeof(b1) - 1);

		for (uint32_t i = 0; i < m->n; i++) {
			if (!strcmp(m->f[i].name, "oood_copy"))
				m->f[i].copyk = 1;
			else if (fused_copy && !strncmp(m->f[i].name, "ooo_fused", 9))
				m->f[i].copyk = 2;
		}
	}
	*out = m;
	return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m)
{
	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	free(m->f);
	free(m);
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	if (!m || !name)
		return CUDA_ERROR_INVALID_HANDLE;
	for (uint32_t i = 0; i < m->n; i++)
		if (!strcmp(m->f[i].name, name)) {
			*f = (CUfunction)&m->f[i];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 32; break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = 90; break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = 48 << 10; break;
	default: *v = 0; break;
	}
	return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction fn, size_t index, size_t *off, size_t *size)
{
	const struct fake_func *f = (const struct fake_func *)fn;

	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (index >= f->nparams)
		return CUDA_ERROR_INVALID_VALUE;
	if (off)
		*off = f->off[index];
	if (size)
		*size = f->size[index];
	return CUDA_SUCCESS;
}

/* Whether the environment has NAME=1, read once into *cache (-1: not read yet). */
static int env_flag(const char *name, _Atomic int *cache)
{
	if (*cache < 0) {
		const char *e = getenv(name);

		*cache = e && !strcmp(e, "1");
	}
	return *cache;
}

/* FAKECUDA_FAULT_CODE=N: the CUresult a faulting launch leaves (default CUDA_ERROR_ILLEGAL_ADDRESS) */
static CUresult fault_code(void)
{
	static _Atomic int code = -1;

	if (code < 0) {
		const char *e = getenv("FAKECUDA_FAULT_CODE");
		char *end;
		long v = e ? strtol(e, &end, 10) : 0;

		code = e && *e && !*end && v > 0 && v < 1000 ? (int)v : (int)CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	return (CUresult)code;
}

/* FAKECUDA_REFUSE=1: refuse fused launches and launches marked 0x7e7e7e7e (see the top) */
static int refusing(void)
{
	static _Atomic int on = -1;

	return env_flag("FAKECUDA_REFUSE", &on);
}

/* The bytes of parameter i of a launch, from kernelParams or the extra buffer; NULL if not given. */
static const unsigned char *param_bytes(const struct fake_func *f, uint32_t i, void **params, void **extra)
{
	if (params)
		return params[i];
	for (void **x = extra; x && *x != CU_LAUNCH_PARAM_END; x += 2)
		if (*x == CU_LAUNCH_PARAM_BUFFER_POINTER)
			return (const unsigned char *)x[1] + f->off[i];
	return NULL;
}

/* FAKECUDA_HOSTPTR=1: the device reaches registered host memory at its host address (see cuDeviceGetAttribute) */
static int hostptr(void)
{
	static _Atomic int on = -1;

	return env_flag("FAKECUDA_HOSTPTR", &on);
}

/* One copy of the executor's copy kernel: its parameters dst, src, n (host memory is device memory here). */
static void copy_params(const unsigned char *p)
{
	uint64_t d, s, n;

	memcpy(&d, p, 8);
	memcpy(&s, p + 8, 8);
	memcpy(&n, p + 16, 8);
	if (d >= 4096 && s >= 4096)
		memcpy((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
}

/*
 * A fused launch's descriptor table (include/ooo/jit.h): its parameter
 * (an ooo_fusedp_ entry), or where its first parameter points (device
 * memory is host memory here). NULL: no parameters.
 */
static const unsigned char *fused_table(const struct fake_func *f, void **params, void **extra)
{
	const unsigned char *p = f->nparams ? param_bytes(f, 0, params, extra) : NULL;
	uint64_t a;

	if (!p || !strncmp(f->name, "ooo_fusedp_", 11))
		return p;
	memcpy(&a, p, 8);
	return (const unsigned char *)(uintptr_t)a;
}

#define HANG_WORD 0x676e6168u /* "hang" */
#define SLOW_WORD 0x776f6c73u /* "slow" */

/* Do n bytes of parameters end in word (see the top)? */
static bool hang_word(const unsigned char *p, uint32_t n, uint32_t word)
{
	uint32_t v;

	if (!p || n < 4)
		return false;
	memcpy(&v, p + n - 4, 4);
	return v == word;
}

/* Is a launch of f with these parameters marked (HANG_WORD, SLOW_WORD): alone, or any member of a fused table? */
static bool hang_marked(const struct fake_func *f, void **params, void **extra, uint32_t word)
{
	const unsigned char *t;
	uint32_t n;

	if (!f->nparams)
		return false;
	if (strncmp(f->name, "ooo_fused", 9))
		return hang_word(param_bytes(f, f->nparams - 1, params, extra), f->size[f->nparams - 1], word);
	if (!(t = fused_table(f, params, extra)))
		return false;
	memcpy(&n, t, 4);
	for (uint32_t i = 0; i < n; i++) {
		struct ooo_jit_desc_member m;

		memcpy(&m, t + sizeof(struct ooo_jit_desc_hdr) + sizeof(m) * i, sizeof(m));
		if (hang_word(t + m.param_off, m.param_size, word))
			return true;
	}
	return false;
}

/*
 * The copy kernel runs, at once like every copy here: alone, or fused (the
 * table as the parameter, or its address; include/ooo/jit.h's layout).
 */
static void copy_kernel(const struct fake_func *f, void **params, void **extra)
{
	const unsigned char *p = f->nparams ? param_bytes(f, 0, params, extra) : NULL, *t;
	uint32_t n;

	if (!p)
		return;
	if (f->copyk == 1) {
		copy_params(p);
		return;
	}
	t = fused_table(f, params, extra);
	memcpy(&n, t, 4);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t off;

		memcpy(&off, t + sizeof(struct ooo_jit_desc_hdr) + sizeof(struct ooo_jit_desc_member) * i +
				     offsetof(struct ooo_jit_desc_member, param_off),
		       4);
		copy_params(t + off);
	}
}

CUresult cuLaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
			unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params, void **extra)
{
	const struct fake_func *f = (const struct fake_func *)fn;

	(void)shmem;
	STICKY();
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	if (refusing()) {
		const unsigned char *p = f->nparams && f->size[f->nparams - 1] == 4
						 ? param_bytes(f, f->nparams - 1, params, extra)
						 : NULL;
		uint32_t v = 0;

		if (!strncmp(f->name, "ooo_fused", 9))
			return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
		if (p && (memcpy(&v, p, sizeof(v)), v == 0x7e7e7e7eu))
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (!strncmp(f->name, "ooo_fused", 9))
		note_fused_prio(s);
	if (f->copyk && hostptr())
		copy_kernel(f, params, extra);
	if (!f->copyk && hang_marked(f, params, extra, HANG_WORD))
		hung = *stream_hung(s) = true;
	if (!f->copyk && hang_marked(f, params, extra, SLOW_WORD)) {
		const char *e = getenv("FAKECUDA_SLOW_MS");
		uint64_t ms = e && atoi(e) > 0 ? (uint64_t)atoi(e) : 3000u;
		uint64_t end = (*stream_slow(s) > mono_ns() ? *stream_slow(s) : mono_ns()) + ms * 1000000u;

		max_store(stream_slow(s), end);
		max_store(&slow_until, end);
	}
	/* kernels do not run here; one that would dereference a null-page pointer faults (see the top) */
	for (uint32_t i = 0; i < f->nparams && f->copyk != 1; i++) { /* (the copy kernel's third is a length) */
		const unsigned char *p = f->size[i] == 8 ? param_bytes(f, i, params, extra) : NULL;
		uint64_t v;

		if (p) {
			memcpy(&v, p, sizeof(v));
			if (v < 4096)
				pending = fault_code(); /* seen by the next query or synchronize */
		}
	}
	return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int threads, size_t smem)
{
	(void)smem;
	if (!f || threads <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	*n = 2048 / threads > 32 ? 32 : 2048 / threads;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *p, size_t n)
{
	void *m = n ? aligned_alloc(256, (n + 255) / 256 * 256) : NULL;

	if (!m)
		return n ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
	*p = (CUdeviceptr)(uintptr_t)m;
	return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr p)
{
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **p, size_t n, unsigned int fl)
{
	(void)fl;
	*p = n ? aligned_alloc(4096, (n + 4095) / 4096 * 4096) : NULL;
	return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFreeHost(void *p)
{
	free(p);
	return CUDA_SUCCESS;
}

/* ---- green contexts: bookkeeping of SM counts ------------------------------------- */

#define FAKE_SMS 132u
#define FAKE_SM_GROUP 8u      /* the split granule (2 when co-scheduling is ignored) */
#define FAKE_DESCS 256u

struct CUdevResourceDesc_st {
	unsigned int sms;
};
struct CUgreenCtx_st {
	unsigned int sms;
	int ctx; /* its address is the green context's CUcontext */
};

/* Descriptors live until the process ends with the real driver too (there is no destroy): a ring of them */
static struct CUdevResourceDesc_st descs[FAKE_DESCS];
static _Atomic unsigned int next_desc;

static void sm_resource(CUdevResource *r, unsigned int sms)
{
	memset(r, 0, sizeof(*r));
	r->type = CU_DEV_RESOURCE_TYPE_SM;
	r->sm.smCount = sms;
	r->sm.minSmPartitionSize = FAKE_SM_GROUP;
	r->sm.smCoscheduledAlignment = 2;
}

CUresult cuDeviceGetDevResource(CUdevice d, CUdevResource *r, CUdevResourceType type)
{
	if (d != 0 || !r)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_DEV_RESOURCE_TYPE_SM)
		return CUDA_ERROR_INVALID_RESOURCE_TYPE;
	sm_resource(r, FAKE_SMS);
	return CUDA_SUCCESS;
}

CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nb, const CUdevResource *input,
				     CUdevResource *remaining, unsigned int flags, unsigned int min_count)
{
	unsigned int g = flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING ? 2 : FAKE_SM_GROUP, n;

	if (!nb || !input || input->type != CU_DEV_RESOURCE_TYPE_SM || min_count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	g = (min_count + g - 1) / g * g;
	n = input->sm.smCount / g;
	if (!result) {
		*nb = n;
		return CUDA_SUCCESS;
	}
	if (*nb < n)
		n = *nb;
	for (unsigned int i = 0; i < n; i++)
		sm_resource(&result[i], g);
	*nb = n;
	if (remaining)
		sm_resource(remaining, input->sm.smCount - n * g);
	return CUDA_SUCCESS;
}

CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *desc, CUdevResource *r, unsigned int n)
{
	struct CUdevResourceDesc_st *d = &descs[next_desc++ % FAKE_DESCS];

	if (!desc || !r || !n)
		return CUDA_ERROR_INVALID_VALUE;
	d->sms = 0;
	for (unsigned int i = 0; i < n; i++) {
		if (r[i].type != CU_DEV_RESOURCE_TYPE_SM)
			return CUDA_ERROR_INVALID_RESOURCE_TYPE;
		d->sms += r[i].sm.smCount;
	}
	*desc = d;
	return CUDA_SUCCESS;
}

CUresult cuGreenCtxCreate(CUgreenCtx *green, CUdevResourceDesc desc, CUdevice d, unsigned int flags)
{
	struct CUgreenCtx_st *g;

	(void)flags;
	if (!green || !desc || d != 0 || !desc->sms)
		return CUDA_ERROR_INVALID_VALUE;
	STICKY();
	if (!(g = calloc(1, sizeof(*g))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->sms = desc->sms;
	*green = g;
	return CUDA_SUCCESS;
}

CUresult cuGreenCtxDestroy(CUgreenCtx g)
{
	if (!g)
		return CUDA_ERROR_INVALID_HANDLE;
	free(g);
	return CUDA_SUCCESS;
}

CUresult cuGreenCtxGetDevResource(CUgreenCtx g, CUdevResource *r, CUdevResourceType type)
{
	if (!g || !r)
		return CUDA_ERROR_INVALID_HANDLE;
	if (type != CU_DEV_RESOURCE_TYPE_SM)
		return CUDA_ERROR_INVALID_RESOURCE_TYPE;
	sm_resource(r, g->sms);
	return CUDA_SUCCESS;
}

CUresult cuCtxFromGreenCtx(CUcontext *c, CUgreenCtx g)
{
	if (!c || !g)
		return CUDA_ERROR_INVALID_HANDLE;
	*c = (CUcontext)&g->ctx;
	return CUDA_SUCCESS;
}

CUresult cuGreenCtxStreamCreate(CUstream *s, CUgreenCtx g, unsigned int flags, int prio)
{
	if (!s || !g || !(flags & CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	return cuStreamCreateWithPriority(s, flags, prio);
}

/* ---- the one entry point the loader looks up by name ------------------------------ */

static const struct {
	const char *name;
	void *fn;
} table[] = {
#define FAKE_ENTRY(name) { #name, (void *)&name },
#define FAKE_ENTRY_V(name, ver) FAKE_NEWER_##name
#define FAKE_NEWER_cuFuncGetParamInfo { "cuFuncGetParamInfo", (void *)&cuFuncGetParamInfo },
#define FAKE_NEWER_cuDeviceGetDevResource { "cuDeviceGetDevResource", (void *)&cuDeviceGetDevResource },
#define FAKE_NEWER_cuDevSmResourceSplitByCount { "cuDevSmResourceSplitByCount", (void *)&cuDevSmResourceSplitByCount },
#define FAKE_NEWER_cuDevResourceGenerateDesc { "cuDevResourceGenerateDesc", (void *)&cuDevResourceGenerateDesc },
#define FAKE_NEWER_cuGreenCtxCreate { "cuGreenCtxCreate", (void *)&cuGreenCtxCreate },
#define FAKE_NEWER_cuGreenCtxDestroy { "cuGreenCtxDestroy", (void *)&cuGreenCtxDestroy },
#define FAKE_NEWER_cuGreenCtxGetDevResource { "cuGreenCtxGetDevResource", (void *)&cuGreenCtxGetDevResource },
#define FAKE_NEWER_cuCtxFromGreenCtx { "cuCtxFromGreenCtx", (void *)&cuCtxFromGreenCtx },
#define FAKE_NEWER_cuGreenCtxStreamCreate { "cuGreenCtxStreamCreate", (void *)&cuGreenCtxStreamCreate },
	CUDA_FUNCS(FAKE_ENTRY) CUDA_FUNCS_NEWER(FAKE_ENTRY_V)
};

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
					 CUdriverProcAddressQueryResult *status)
{
	(void)version;
	(void)flags;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i].name, symbol)) {
			*pfn = table[i].fn;
			if (status)
				*status = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
	*pfn = NULL;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_ERROR_NOT_FOUND;
}
