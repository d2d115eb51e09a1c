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

int memory_init(struct memory *m, struct cuda_api *api, CUdevice dev, unsigned index, bool fence, char *why,
		size_t cap)
{
	CUmemAllocationProp p = prop_for(dev);
	uint64_t size = fence ? MEMORY_FENCE_ARENA_SIZE : MEMORY_ARENA_SIZE;
	/*
	 * A fenced arena is 16 TiB: at the same address for every GPU (each
	 * executor is its own address space), below the top of the 47-bit user
	 * address space that unified addressing shares with the CPU. Where that
	 * is taken (a sanitizer's allocator lives at 0x600000000000), the next
	 * candidate: a restarted executor tries them in the same order.
	 */
	static const uint64_t fence_bases[] = { MEMORY_ARENA_BASE, 0x200000000000ull, 0x400000000000ull };
	uint64_t want = MEMORY_ARENA_BASE + (fence ? 0 : (uint64_t)index * size);
	CUdeviceptr got = 0;
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;

	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->wmu, NULL);
	m->api = api;
	m->dev = dev;
	m->fence = fence;
	m->arena_size = size;
	r = api->p_cuMemGetAllocationGranularity(&m->granularity, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	if (r != CUDA_SUCCESS)
		return fail(m, r, "cuMemGetAllocationGranularity", why, cap);
	/* fenced: aligned to the window size, so that each window is (address & mask) == base */
	for (size_t i = 0; i < (fence ? sizeof(fence_bases) / sizeof(fence_bases[0]) : 1); i++) {
		if (fence)
			want = fence_bases[i];
		got = 0;
		r = api->p_cuMemAddressReserve(&got, size, fence ? MEMORY_WINDOW_SIZE : 0, want, 0);
		if (r == CUDA_SUCCESS && got == want)
			break;
		if (r == CUDA_SUCCESS)
			api->p_cuMemAddressFree(got, size);
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r == CUDA_SUCCESS && got == want) {
		m->free = malloc(64 * sizeof(*m->free));
		if (m->free) {
			m->arena = want;
			m->capfree = 64;
			m->nfree = 1;
			m->free[0] = (struct mem_range){ 0, size };
			return 0;
		}
	}
	if (r == CUDA_SUCCESS)
		api->p_cuMemAddressFree(got, size);
	if (fence) {
		snprintf(why, cap, "cannot reserve the fenced executor's %llu TiB of device address space (tried %#llx, "
				   "%#llx, %#llx)",
			 (unsigned long long)(size >> 40), (unsigned long long)fence_bases[0],
			 (unsigned long long)fence_bases[1], (unsigned long long)fence_bases[2]);
		return -ENOMEM;
	}
	/* without the arena buffers still work, but may not survive a restart */
	fprintf(stderr, "oood[executor]: cannot reserve the device address arena at %#llx; buffers will not "
			"survive an executor restart\n",
		(unsigned long long)want);
	return 0;
}

/* Take [off, off+len) out of the free list (it must lie inside one free range). */
static int arena_take(struct memory *m, uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < m->nfree; i++) {
		struct mem_range *f = &m->free[i];

		if (off < f->off || off + len > f->off + f->len)
			continue;
		if (off == f->off && len == f->len) {
			memmove(f, f + 1, (m->nfree - i - 1) * sizeof(*f));
			m->nfree--;
		} else if (off == f->off) {
			f->off += len;
			f->len -= len;
		} else if (off + len == f->off + f->len) {
			f->len -= len;
		} else {
			if (m->nfree == m->capfree) {
				struct mem_range *v = realloc(m->free, m->capfree * 2 * sizeof(*v));
				if (!v)
					return -ENOMEM;
				m->free = v;
				m->capfree *= 2;
				f = &m->free[i];
			}
			memmove(f + 2, f + 1, (m->nfree - i - 1) * sizeof(*f));
			m->free[i + 1] = (struct mem_range){ off + len, f->off + f->len - (off + len) };
			f->len = off - f->off;
			m->nfree++;
		}
		return 0;
	}
	return -EADDRINUSE;
}

/* First fit of len bytes inside [lo, hi) of the arena. */
static int arena_alloc(struct memory *m, uint64_t lo, uint64_t hi, uint64_t len, uint64_t *off)
{
	for (size_t i = 0; i < m->nfree; i++) {
		uint64_t a = m->free[i].off > lo ? m->free[i].off : lo;
		uint64_t e = m->free[i].off + m->free[i].len < hi ? m->free[i].off + m->free[i].len : hi;

		if (e > a && e - a >= len) {
			*off = a;
			return arena_take(m, *off, len);
		}
	}
	return -ENOMEM;
}

static int window_of(const struct memory *m, uint64_t session)
{
	for (uint32_t w = 0; w < MEMORY_WINDOWS; w++)
		if (m->window[w] == session)
			return (int)w;
	return -1;
}

/* memory_window with m->wmu held */
static int window_claim(struct memory *m, uint64_t session, uint64_t *base)
{
	int w = window_of(m, session);

	if (!m->fence || !m->arena || !session)
		return -EINVAL;
	if (w < 0) {
		w = window_of(m, 0);
		if (w < 0)
			return -ENOSPC;
		m->window[w] = session;
	}
	*base = m->arena + (uint64_t)w * MEMORY_WINDOW_SIZE;
	return 0;
}

int memory_window(struct memory *m, uint64_t session, uint64_t *base)
{
	int r;

	pthread_mutex_lock(&m->wmu);
	r = window_claim(m, session, base);
	pthread_mutex_unlock(&m->wmu);
	return r;
}

void memory_window_release(struct memory *m, uint64_t session)
{
	int w;
	uint64_t lo, hi;

	pthread_mutex_lock(&m->wmu);
	w = session ? window_of(m, session) : -1;
	if (w >= 0) {
		lo = m->arena + (uint64_t)w * MEMORY_WINDOW_SIZE;
		hi = lo + MEMORY_WINDOW_SIZE;
		for (size_t i = 0; i < m->n; i++)
			if (m->maps[i].addr >= lo && m->maps[i].addr < hi)
				w = -1; /* memory of it is still mapped there (an orphan, freed later): not for another session */
		if (w >= 0)
			m->window[w] = 0;
	}
	pthread_mutex_unlock(&m->wmu);
}

static void arena_put(struct memory *m, uint64_t off, uint64_t len)
{
	size_t i = 0;

	while (i < m->nfree && m->free[i].off < off)
		i++;
	/* merge with the neighbours where they touch */
	if (i > 0 && m->free[i - 1].off + m->free[i - 1].len == off) {
		m->free[i - 1].len += len;
		if (i < m->nfree && off + len == m->free[i].off) {
			m->free[i - 1].len += m->free[i].len;
			memmove(&m->free[i], &m->free[i + 1], (m->nfree - i - 1) * sizeof(*m->free));
			m->nfree--;
		}
		return;
	}
	if (i < m->nfree && off + len == m->free[i].off) {
		m->free[i].off = off;
		m->free[i].len += len;
		return;
	}
	if (m->nfree == m->capfree) {
		struct mem_range *v = realloc(m->free, m->capfree * 2 * sizeof(*v));
		if (!v)
			return; /* the range stays lost to the arena: harmless, address space is plentiful */
		m->free = v;
		m->capfree *= 2;
	}
	memmove(&m->free[i + 1], &m->free[i], (m->nfree - i) * sizeof(*m->free));
	m->free[i] = (struct mem_range){ off, len };
	m->nfree++;
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

/* Give address space back: to the arena, or to the driver if it was reserved alone. */
static void unreserve(struct memory *m, uint64_t p, uint64_t size)
{
	if (m->arena)
		arena_put(m, p - m->arena, size);
	else
		m->api->p_cuMemAddressFree(p, size);
}

/*
 * Reserve [at, at+size) (at 0: anywhere, or in session's window when
 * fenced), map h there, give this device access.
 */
static int map(struct memory *m, uint64_t session, CUmemGenericAllocationHandle h, uint64_t at, uint64_t size,
	       uint64_t *addr, char *why, size_t cap)
{
	CUmemAccessDesc acc;
	CUdeviceptr p = 0;
	CUresult r;

	if (m->arena) {
		uint64_t off, lo = 0, hi = m->arena_size;
		int rc;

		if (!size || (at && (at < m->arena || at - m->arena >= m->arena_size ||
				     size > m->arena_size - (at - m->arena)))) {
			snprintf(why, cap, "device address %#llx is outside this executor's arena", (unsigned long long)at);
			return -EADDRINUSE;
		}
		if (m->fence) {
			/* the session's window: the one it has, or for an import the one its address names */
			uint64_t base;
			int w;

			/* (serving threads claim windows too, at a session's first fenced launch) */
			pthread_mutex_lock(&m->wmu);
			w = window_of(m, session);
			if (at) {
				uint32_t aw = (uint32_t)((at - m->arena) / MEMORY_WINDOW_SIZE);

				if ((w >= 0 && (uint32_t)w != aw) || (w < 0 && m->window[aw])) {
					pthread_mutex_unlock(&m->wmu);
					snprintf(why, cap, "device address %#llx is in another session's window",
						 (unsigned long long)at);
					return -EADDRINUSE;
				}
				m->window[aw] = session;
				w = (int)aw;
			} else if (window_claim(m, session, &base) < 0) {
				pthread_mutex_unlock(&m->wmu);
				snprintf(why, cap, "every one of the %u session windows is taken", MEMORY_WINDOWS);
				return -ENOSPC;
			} else {
				w = (int)((base - m->arena) / MEMORY_WINDOW_SIZE);
			}
			pthread_mutex_unlock(&m->wmu);
			lo = (uint64_t)w * MEMORY_WINDOW_SIZE;
			hi = lo + MEMORY_WINDOW_SIZE;
			if (at && (at - m->arena) + size > hi) {
				snprintf(why, cap, "a buffer at %#llx of %llu bytes crosses its session's window",
					 (unsigned long long)at, (unsigned long long)size);
				return -EADDRINUSE;
			}
		}
		off = at ? at - m->arena : 0;
		rc = at ? arena_take(m, off, size) : arena_alloc(m, lo, hi, size, &off);
		if (rc < 0) {
			if (at)
				snprintf(why, cap, "device address %#llx is taken", (unsigned long long)at);
			else if (m->fence)
				snprintf(why, cap, "the session's %llu GiB window is full (a fenced session's buffers "
						   "all live in it)",
					 (unsigned long long)(MEMORY_WINDOW_SIZE >> 30));
			else
				snprintf(why, cap, "device address space exhausted");
			return rc;
		}
		p = m->arena + off;
	} else {
		r = m->api->p_cuMemAddressReserve(&p, size, 0, (CUdeviceptr)at, 0);
		if (r != CUDA_SUCCESS)
			return fail(m, r, "cuMemAddressReserve", why, cap);
		if (at && p != at) {
			m->api->p_cuMemAddressFree(p, size);
			snprintf(why, cap, "device address %#llx is taken in the new executor", (unsigned long long)at);
			return -EADDRINUSE;
		}
	}
	r = m->api->p_cuMemMap(p, size, 0, h, 0);
	if (r != CUDA_SUCCESS) {
		unreserve(m, p, size);
		return fail(m, r, "cuMemMap", why, cap);
	}
	memset(&acc, 0, sizeof(acc));
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = m->dev;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	r = m->api->p_cuMemSetAccess(p, size, &acc, 1);
	if (r != CUDA_SUCCESS) {
		m->api->p_cuMemUnmap(p, size);
		unreserve(m, p, size);
		return fail(m, r, "cuMemSetAccess", why, cap);
	}
	*addr = p;
	return 0;
}

int memory_alloc(struct memory *m, uint64_t session, uint64_t size, uint64_t *addr, uint64_t *rsize, int *fd,
		 char *why, size_t cap)
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
	rc = map(m, session, h, 0, sz, addr, why, cap);
	if (rc == 0)
		rc = track(m, *addr, sz, h);
	if (rc < 0) {
		if (*addr && rc == -ENOMEM) {
			m->api->p_cuMemUnmap(*addr, sz);
			unreserve(m, *addr, sz);
		}
		m->api->p_cuMemRelease(h);
		close(efd);
		return rc;
	}
	*rsize = sz;
	*fd = efd;
	return 0;
}

int memory_import(struct memory *m, uint64_t session, int fd, uint64_t addr, uint64_t size, char *why, size_t cap)
{
	CUmemGenericAllocationHandle h;
	uint64_t got = 0;
	CUresult r;
	int rc;

	r = m->api->p_cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (r != CUDA_SUCCESS)
		return fail(m, r, "cuMemImportFromShareableHandle", why, cap);
	rc = map(m, session, h, addr, size, &got, why, cap);
	if (rc == 0)
		rc = track(m, got, size, h);
	if (rc < 0) {
		if (got && rc == -ENOMEM) {
			m->api->p_cuMemUnmap(got, size);
			unreserve(m, got, size);
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
		unreserve(m, mm->addr, mm->size);
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
	if (m->arena)
		m->api->p_cuMemAddressFree(m->arena, m->arena_size);
	m->arena = 0;
	free(m->free);
	m->free = NULL;
}
