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
#define MEMORY_ARENA_BASE 0x600000000000ull /* per GPU: + index * MEMORY_ARENA_SIZE */
#define MEMORY_ARENA_SIZE (1ull << 40)       /* 1 TiB of address space */

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
	struct mem_range *free; /* free parts of the arena, sorted by offset */
	size_t nfree, capfree;
};

int memory_init(struct memory *m, struct cuda_api *api, CUdevice dev, unsigned index, char *why, size_t cap);
void memory_fini(struct memory *m);

/* Allocate and map size bytes (rounded up). Returns 0 with *addr, *rsize and a new fd, or -errno. */
int memory_alloc(struct memory *m, uint64_t size, uint64_t *addr, uint64_t *rsize, int *fd, char *why, size_t cap);

/* Map an allocation from its fd at exactly addr. The fd stays the caller's. Returns 0 or -errno. */
int memory_import(struct memory *m, int fd, uint64_t addr, uint64_t size, char *why, size_t cap);

/* Unmap and release the allocation at addr. Returns 0 or -ENOENT. */
int memory_free(struct memory *m, uint64_t addr);

#endif
