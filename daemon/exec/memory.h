/* SPDX-License-Identifier: MIT */
/*
 * Device memory in the executor: cuMemCreate with POSIX-fd handles, mapped
 * into the executor's address space. The fd goes to oood, which keeps it,
 * so an allocation outlives the executor that made it; a new executor maps
 * it again at the same device address (tenants put addresses in kernel
 * parameters, so they must not change).
 */
#ifndef OOO_EXEC_MEMORY_H
#define OOO_EXEC_MEMORY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda.h"

struct mem_map {
	uint64_t addr, size;
	CUmemGenericAllocationHandle handle;
};

/*
 * Device addresses come from one arena reserved at the same fixed address in
 * every executor of a GPU, so that a restarted executor can map each buffer
 * back where tenants' kernels expect it: a per-buffer reservation would land
 * wherever the new process's layout (ASLR, library mappings) leaves room.
 */
#define MEMORY_ARENA_BASE 0x600000000000ull /* per GPU: + index * the arena's size */
#define MEMORY_ARENA_SIZE (1ull << 40)       /* 1 TiB of address space */
/*
 * A fenced executor (one that serves the sessions of classes with fence =
 * yes, whatever their trust domain) gives each session its own window, an
 * aligned power-of-two range of the arena that holds all its buffers: the
 * fenced kernels of the session trap on any global address outside it.
 */
#define MEMORY_WINDOW_SIZE (1ull << 36) /* 64 GiB per session (the fence takes 4 GiB and up: jit.h) */
#define MEMORY_WINDOWS 256u             /* sessions per fenced executor */
#define MEMORY_FENCE_ARENA_SIZE (MEMORY_WINDOW_SIZE * MEMORY_WINDOWS) /* 16 TiB */

struct mem_range {
	uint64_t off, len;
};

struct memory {
	struct cuda_api *api;
	CUdevice dev;
	size_t granularity;
	struct mem_map *maps;
	size_t n, cap;
	uint64_t arena; /* base address, 0 if the fixed reservation failed */
	uint64_t arena_size;
	struct mem_range *free; /* free parts of the arena, sorted by offset */
	size_t nfree, capfree;
	bool fence;                       /* windows: each session's buffers in its own (fenced executors) */
	uint64_t window[MEMORY_WINDOWS];  /* the session that owns each window, 0 if none (under wmu) */
	pthread_mutex_t wmu;              /* window[]: the control thread and the serving threads (fence_params) claim them */
};

/*
 * fence: the arena is MEMORY_FENCE_ARENA_SIZE of windows, and must be
 * reserved (a fenced executor cannot run without it: -ENOMEM).
 */
int memory_init(struct memory *m, struct cuda_api *api, CUdevice dev, unsigned index, bool fence, char *why,
		size_t cap);
void memory_fini(struct memory *m);

/*
 * Allocate and map size bytes (rounded up) for session (inside its window
 * when fenced). Returns 0 with *addr, *rsize and a new fd, or -errno.
 */
int memory_alloc(struct memory *m, uint64_t session, uint64_t size, uint64_t *addr, uint64_t *rsize, int *fd,
		 char *why, size_t cap);

/*
 * Map an allocation of session from its fd at exactly addr (when fenced: in
 * a window that is the session's, or free and then becomes its). The fd
 * stays the caller's. Returns 0 or -errno.
 */
int memory_import(struct memory *m, uint64_t session, int fd, uint64_t addr, uint64_t size, char *why, size_t cap);

/* Fenced: the base of session's window, taken now if it has none. Returns 0, or -ENOSPC when none is free. */
int memory_window(struct memory *m, uint64_t session, uint64_t *base);
/* Fenced: give session's window back, if nothing is mapped in it any more. */
void memory_window_release(struct memory *m, uint64_t session);

/* Unmap and release the allocation at addr. Returns 0 or -ENOENT. */
int memory_free(struct memory *m, uint64_t addr);

#endif
