/* SPDX-License-Identifier: MIT */
/*
 * Validation of submissions, in the executor, before anything reaches CUDA.
 * Pure: the caller passes what the session owns (buffers, kernels, queues,
 * events, staging size); nothing here touches shared memory, so validate a
 * copy of the entry.
 */
#ifndef OOO_EXEC_VALIDATE_H
#define OOO_EXEC_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ooo/shm.h>

#define VALIDATE_MAX_GRID_X 2147483647u
#define VALIDATE_MAX_GRID_YZ 65535u
#define VALIDATE_MAX_BLOCK_XY 1024u
#define VALIDATE_MAX_BLOCK_Z 64u

/* A session's device buffers: sorted by address, never overlapping. */
struct vbuf {
	uint64_t addr, size;
};

struct vbufs {
	struct vbuf *v;
	size_t n, cap;
};

/* Add [addr, addr + size). Returns 0, -EINVAL (empty or wraps), -EEXIST (overlaps) or -ENOMEM. */
int vbufs_add(struct vbufs *t, uint64_t addr, uint64_t size);
/* Remove the buffer starting at addr. Returns 0 or -ENOENT. */
int vbufs_del(struct vbufs *t, uint64_t addr);
/* Does one buffer hold all of [addr, addr + len)? (len > 0) */
bool vbufs_contains(const struct vbufs *t, uint64_t addr, uint64_t len);
void vbufs_free(struct vbufs *t);

struct vkernel {
	bool live;
	uint32_t param_size;    /* bytes of the parameter block (cuFuncGetParamInfo) */
	uint32_t max_threads;   /* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
	uint32_t max_dyn_shmem; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
};

struct vsession {
	const struct vbufs *bufs;
	const struct vkernel *kernels;
	uint32_t nkernels;
	const uint8_t *queue_live; /* 1 per live queue index */
	uint32_t nqueues;
	const uint8_t *event_live;
	uint32_t nevents;
	uint64_t staging_size;
	const uint64_t *host_size; /* OOO_HOST_REGIONS sizes of host regions (0: none); NULL: no regions */
};

/*
 * Check one submission against what the session owns. Returns 0, or a
 * negative error with a static reason in *why: -EINVAL (malformed),
 * -ENOENT (unknown queue, kernel or event), -EFAULT (memory outside the
 * session's buffers or the staging area), -E2BIG (launch shape out of range).
 */
int validate_sqe(const struct ooo_sqe *e, const struct vsession *vs, const char **why);

#endif
