/* SPDX-License-Identifier: MIT */
#include "validate.h"

#include <ooo/proto.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Index of the first buffer whose address is > addr. */
static size_t upper(const struct vbufs *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int vbufs_add(struct vbufs *t, uint64_t addr, uint64_t size)
{
	size_t i;

	if (!size || addr + size < addr)
		return -EINVAL;
	i = upper(t, addr);
	if (i > 0 && t->v[i - 1].addr + t->v[i - 1].size > addr)
		return -EEXIST;
	if (i < t->n && addr + size > t->v[i].addr)
		return -EEXIST;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct vbuf *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
	t->v[i] = (struct vbuf){ addr, size };
	t->n++;
	return 0;
}

int vbufs_del(struct vbufs *t, uint64_t addr)
{
	size_t i = upper(t, addr);

	if (i == 0 || t->v[i - 1].addr != addr)
		return -ENOENT;
	memmove(&t->v[i - 1], &t->v[i], (t->n - i) * sizeof(*t->v));
	t->n--;
	return 0;
}

bool vbufs_contains(const struct vbufs *t, uint64_t addr, uint64_t len)
{
	size_t i;

	if (!len || addr + len < addr)
		return false;
	i = upper(t, addr);
	if (i == 0)
		return false;
	return addr + len <= t->v[i - 1].addr + t->v[i - 1].size;
}

void vbufs_free(struct vbufs *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static bool in_staging(const struct vsession *vs, uint64_t off, uint64_t len)
{
	return len && off <= vs->staging_size && len <= vs->staging_size - off;
}

/* A host address of a copy: staging, or a tagged offset into one of the session's host regions. */
static bool in_host(const struct vsession *vs, uint64_t addr, uint64_t len)
{
	uint64_t tag = addr >> OOO_HOST_TAG_SHIFT, off = addr & ((1ull << OOO_HOST_TAG_SHIFT) - 1), size;

	if (!tag)
		return in_staging(vs, addr, len);
	if (!vs->host_size || tag > OOO_HOST_REGIONS)
		return false;
	size = vs->host_size[tag - 1];
	return len && size && off <= size && len <= size - off;
}

#define BAD(code, text)                                                                                    \
	do {                                                                                               \
		*why = text;                                                                               \
		return code;                                                                               \
	} while (0)

static int check_launch(const struct ooo_sqe *e, const struct vsession *vs, const char **why)
{
	const struct vkernel *k;
	uint64_t threads;

	if (e->launch.kernel >= vs->nkernels || !vs->kernels[e->launch.kernel].live)
		BAD(-ENOENT, "unknown kernel");
	k = &vs->kernels[e->launch.kernel];
	for (int i = 0; i < 3; i++) {
		if (!e->launch.grid[i] || !e->launch.block[i])
			BAD(-E2BIG, "grid and block dimensions must be at least 1");
	}
	if (e->launch.grid[0] > VALIDATE_MAX_GRID_X || e->launch.grid[1] > VALIDATE_MAX_GRID_YZ ||
	    e->launch.grid[2] > VALIDATE_MAX_GRID_YZ)
		BAD(-E2BIG, "grid larger than the device allows (2^31-1 x 65535 x 65535)");
	if (e->launch.block[0] > VALIDATE_MAX_BLOCK_XY || e->launch.block[1] > VALIDATE_MAX_BLOCK_XY ||
	    e->launch.block[2] > VALIDATE_MAX_BLOCK_Z)
		BAD(-E2BIG, "block larger than the device allows (1024 x 1024 x 64)");
	threads = (uint64_t)e->launch.block[0] * e->launch.block[1] * e->launch.block[2];
	if (threads > k->max_threads)
		BAD(-E2BIG, "more threads per block than the kernel allows");
	if (e->launch.shmem > k->max_dyn_shmem)
		BAD(-E2BIG, "more dynamic shared memory than the kernel allows");
	if (e->launch.param_len != k->param_size)
		BAD(-EINVAL, "parameter bytes do not match the kernel's parameter layout");
	if (k->param_size && (e->launch.param_off % 8 || !in_staging(vs, e->launch.param_off, e->launch.param_len)))
		BAD(-EFAULT, "parameters outside the staging area or misaligned");
	return 0;
}

int validate_sqe(const struct ooo_sqe *e, const struct vsession *vs, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	if (e->flags & ~OOO_SQE_FLAGS_ALL)
		BAD(-EINVAL, "unknown flags");
	if (e->opcode >= OOO_OP_MAX)
		BAD(-EINVAL, "unknown opcode");
	if (e->queue >= vs->nqueues || !vs->queue_live[e->queue])
		BAD(-ENOENT, "unknown queue");
	switch (e->opcode) {
	case OOO_OP_NOP:
		return 0;
	case OOO_OP_LAUNCH:
		return check_launch(e, vs, why);
	case OOO_OP_HTOD:
		if (!in_host(vs, e->copy.src, e->copy.len))
			BAD(-EFAULT, "copy source outside the staging area");
		if (!vbufs_contains(vs->bufs, e->copy.dst, e->copy.len))
			BAD(-EFAULT, "copy destination is not inside one of the session's buffers");
		return 0;
	case OOO_OP_DTOH:
		if (!vbufs_contains(vs->bufs, e->copy.src, e->copy.len))
			BAD(-EFAULT, "copy source is not inside one of the session's buffers");
		if (!in_host(vs, e->copy.dst, e->copy.len))
			BAD(-EFAULT, "copy destination outside the staging area");
		return 0;
	case OOO_OP_DTOD:
		if (!vbufs_contains(vs->bufs, e->copy.src, e->copy.len))
			BAD(-EFAULT, "copy source is not inside one of the session's buffers");
		if (!vbufs_contains(vs->bufs, e->copy.dst, e->copy.len))
			BAD(-EFAULT, "copy destination is not inside one of the session's buffers");
		return 0;
	case OOO_OP_MEMSET: {
		uint32_t es = e->set.elsize;

		if (es != 1 && es != 2 && es != 4)
			BAD(-EINVAL, "memset element size must be 1, 2 or 4");
		if (es < 4 && e->set.value >> (es * 8))
			BAD(-EINVAL, "memset value does not fit its element size");
		if (e->set.count > UINT64_MAX / es || !vbufs_contains(vs->bufs, e->set.dst, e->set.count * es))
			BAD(-EFAULT, "memset range is not inside one of the session's buffers");
		if (e->set.dst % es)
			BAD(-EINVAL, "memset destination is not aligned to its element size");
		return 0;
	}
	case OOO_OP_EVENT_RECORD:
	case OOO_OP_EVENT_WAIT:
		if (e->event.event >= vs->nevents || !vs->event_live[e->event.event])
			BAD(-ENOENT, "unknown event");
		return 0;
	default:
		BAD(-EINVAL, "unknown opcode");
	}
}
