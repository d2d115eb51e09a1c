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

struct memory {
	struct cuda_api *api;
	CUdevice dev;
	size_t granularity;
	struct mem_map *maps;
	size_t n, cap;
};

int memory_init(struct memory *m, struct cuda_api *api, CUdevice dev, char *why, size_t cap);
void memory_fini(struct memory *m);

/* Allocate and map size bytes (rounded up). Returns 0 with *addr, *rsize and a new fd, or -errno. */
int memory_alloc(struct memory *m, uint64_t size, uint64_t *addr, uint64_t *rsize, int *fd, char *why, size_t cap);

/* Map an allocation from its fd at exactly addr. The fd stays the caller's. Returns 0 or -errno. */
int memory_import(struct memory *m, int fd, uint64_t addr, uint64_t size, char *why, size_t cap);

/* Unmap and release the allocation at addr. Returns 0 or -ENOENT. */
int memory_free(struct memory *m, uint64_t addr);

#endif
