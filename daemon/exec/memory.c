/* SPDX-License-Identifier: MIT */
#include "memory.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static CUmemAllocationProp prop_for(CUdevice dev)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	return p;
}

static int fail(struct memory *m, CUresult r, const char *what, char *why, size_t cap)
{
	char e[160];

	snprintf(why, cap, "%s: %s", what, cuda_strerror(m->api, r, e, sizeof(e)));
	return r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
}

int memory_init(struct memory *m, struct cuda_api *api, CUdevice dev, char *why, size_t cap)
{
	CUmemAllocationProp p = prop_for(dev);
	CUresult r;

	memset(m, 0, sizeof(*m));
	m->api = api;
	m->dev = dev;
	r = api->p_cuMemGetAllocationGranularity(&m->granularity, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (r != CUDA_SUCCESS)
		return fail(m, r, "cuMemGetAllocationGranularity", why, cap);
	return 0;
}

static int track(struct memory *m, uint64_t addr, uint64_t size, CUmemGenericAllocationHandle h)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct mem_map *v = realloc(m->maps, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->maps = v;
		m->cap = cap;
	}
	m->maps[m->n++] = (struct mem_map){ addr, size, h };
	return 0;
}

/* Reserve [at, at+size) (at 0: anywhere), map h there, give this device access. */
static int map(struct memory *m, CUmemGenericAllocationHandle h, uint64_t at, uint64_t size, uint64_t *addr, char *why,
	       size_t cap)
{
	CUmemAccessDesc acc;
	CUdeviceptr p = 0;
	CUresult r;

	r = m->api->p_cuMemAddressReserve(&p, size, 0, (CUdeviceptr)at, 0);
	if (r != CUDA_SUCCESS)
		return fail(m, r, "cuMemAddressReserve", why, cap);
	if (at && p != at) {
		m->api->p_cuMemAddressFree(p, size);
		snprintf(why, cap, "device address %#llx is taken in the new executor", (unsigned long long)at);
		return -EADDRINUSE;
	}
	r = m->api->p_cuMemMap(p, size, 0, h, 0);
	if (r != CUDA_SUCCESS) {
		m->api->p_cuMemAddressFree(p, size);
		return fail(m, r, "cuMemMap", why, cap);
	}
	memset(&acc, 0, sizeof(acc));
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = m->dev;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	r = m->api->p_cuMemSetAccess(p, size, &acc, 1);
	if (r != CUDA_SUCCESS) {
		m->api->p_cuMemUnmap(p, size);
		m->api->p_cuMemAddressFree(p, size);
		return fail(m, r, "cuMemSetAccess", why, cap);
	}
	*addr = p;
	return 0;
}

int memory_alloc(struct memory *m, uint64_t size, uint64_t *addr, uint64_t *rsize, int *fd, char *why, size_t cap)
{
	CUmemAllocationProp p = prop_for(m->dev);
	CUmemGenericAllocationHandle h;
	uint64_t g = m->granularity, sz;
	CUresult r;
	int efd = -1, rc;

	*addr = 0;
	if (!size || size > UINT64_MAX - g) {
		snprintf(why, cap, "size %llu is not allocatable", (unsigned long long)size);
		return -EINVAL;
	}
	sz = (size + g - 1) / g * g;
	r = m->api->p_cuMemCreate(&h, sz, &p, 0);
	if (r != CUDA_SUCCESS)
		return fail(m, r, "cuMemCreate", why, cap);
	r = m->api->p_cuMemExportToShareableHandle(&efd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	if (r != CUDA_SUCCESS) {
		m->api->p_cuMemRelease(h);
		return fail(m, r, "cuMemExportToShareableHandle", why, cap);
	}
	rc = map(m, h, 0, sz, addr, why, cap);
	if (rc == 0)
		rc = track(m, *addr, sz, h);
	if (rc < 0) {
		if (*addr && rc == -ENOMEM) {
			m->api->p_cuMemUnmap(*addr, sz);
			m->api->p_cuMemAddressFree(*addr, sz);
		}
		m->api->p_cuMemRelease(h);
		close(efd);
		return rc;
	}
	*rsize = sz;
	*fd = efd;
	return 0;
}

int memory_import(struct memory *m, int fd, uint64_t addr, uint64_t size, char *why, size_t cap)
{
	CUmemGenericAllocationHandle h;
	uint64_t got = 0;
	CUresult r;
	int rc;

	r = m->api->p_cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (r != CUDA_SUCCESS)
		return fail(m, r, "cuMemImportFromShareableHandle", why, cap);
	rc = map(m, h, addr, size, &got, why, cap);
	if (rc == 0)
		rc = track(m, got, size, h);
	if (rc < 0) {
		if (got && rc == -ENOMEM) {
			m->api->p_cuMemUnmap(got, size);
			m->api->p_cuMemAddressFree(got, size);
		}
		m->api->p_cuMemRelease(h);
	}
	return rc;
}

int memory_free(struct memory *m, uint64_t addr)
{
	for (size_t i = 0; i < m->n; i++) {
		struct mem_map *mm = &m->maps[i];

		if (mm->addr != addr)
			continue;
		m->api->p_cuMemUnmap(mm->addr, mm->size);
		m->api->p_cuMemAddressFree(mm->addr, mm->size);
		m->api->p_cuMemRelease(mm->handle);
		m->maps[i] = m->maps[--m->n];
		return 0;
	}
	return -ENOENT;
}

void memory_fini(struct memory *m)
{
	while (m->n)
		memory_free(m, m->maps[m->n - 1].addr);
	free(m->maps);
	m->maps = NULL;
	m->cap = 0;
}
