/* SPDX-License-Identifier: MIT */
/*
 * SM partitions of one device, made of CUDA green contexts (CUDA 12.4+
 * driver; the streams need 12.5): partition i is a green context owning a
 * fixed set of SMs and one non-blocking stream in it. Kernels launched on
 * that stream run on those SMs only. No global state; every function
 * returns 0 (or a count) or a negative errno, with the reason in `why`.
 *
 * A set is n requested partitions plus a last "shared" one holding every
 * SM the others do not (so a set has n + 1 partitions, the shared one at
 * index n). All partitions are disjoint.
 *
 * What works across a partition and the primary context, from the CUDA
 * documentation (partition.c says where each answer comes from; the GPU
 * probe tests/gpu/green_check checks each one on the device):
 *
 *  - A green context is not a separate context: cuCtxFromGreenCtx returns
 *    "a normal primary context but with the resources of the specified
 *    green context". So a module loaded with cuModuleLoadDataEx in the
 *    primary context, and its CUfunction from cuModuleGetFunction, are
 *    launched with cuLaunchKernel on part_stream(): no module per green
 *    context. (Context-independent kernels, cuLibraryLoadData +
 *    cuLibraryGetKernel, cast to CUfunction, also launch there: the
 *    context is taken from the stream.)
 *  - Memory: one address space. cuMemAlloc memory of the primary context
 *    and VMM memory (cuMemCreate + cuMemMap + cuMemSetAccess for the
 *    device) are used by kernels on a partition's stream as they are.
 *  - Events: an event created in the primary context is recorded on a
 *    partition's stream with cuEventRecord, queried with cuEventQuery and
 *    waited on from a primary-context stream with cuStreamWaitEvent (and
 *    the other way round): cuStreamWaitEvent's event "may be from a
 *    different context or device".
 *  - cuCtxSynchronize with the primary context current also waits for the
 *    green contexts' work.
 *  - cuDeviceGetAttribute(MULTIPROCESSOR_COUNT) still says the whole
 *    device inside a green context: size grids with part_sms(). Occupancy
 *    (cuOccupancyMaxActiveBlocksPerMultiprocessor) is per SM, the same in
 *    every partition; blocks to fill a partition = that * part_sms().
 *  - Not isolated from: work launched on primary-context streams, which
 *    may run on every SM, the partitions' included (so route all kernels
 *    through partitions); memory bandwidth, L2 and copy engines, which are
 *    shared; MPS with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE below 100 and
 *    modules with dynamic parallelism (sm_90: 2 more SMs), where a
 *    partition's kernels may run on more SMs than it has (never fewer).
 *  - Threads: a green context "can be current to only one thread at a
 *    time" and the driver does not serialize calls on one green context:
 *    use a set from one thread, or lock around it.
 */
#ifndef OOO_EXEC_PARTITION_H
#define OOO_EXEC_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda.h"

/* Requested partitions in a set at most (the shared one not counted). */
#define PART_MAX 64
/* Streams of one partition at most (part_set_streams): 8 at each of 3 priorities (the coalescer's). */
#define PART_STREAMS 24

struct partition_set;

/*
 * The split granularity of `dev` without creating anything: *total_sms
 * the device's SMs, *granule the SMs of the smallest green-context
 * partition (sizes are rounded up to multiples of it; 8 on sm_90 by
 * default, 2 with `fine`). Returns 0, -ENOTSUP (no green contexts in this
 * driver; `why` says why) or -EINVAL.
 */
int part_limits(const struct cuda_api *api, CUdevice dev, bool fine, uint32_t *total_sms, uint32_t *granule,
		char *why, size_t cap);

/*
 * Create n partitions of sms[0..n-1] SMs (each > 0, rounded up to the
 * granule) and the shared one with the rest, which must not be empty.
 * prio[i] is the stream priority of partition i (cuCtxGetStreamPriorityRange:
 * lower is more urgent; clamped by the driver), or prio == NULL for 0; the
 * shared partition's stream has priority 0. fine: split with
 * CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING (granule 2 SMs on sm_90
 * instead of 8, at the cost of large thread-block clusters).
 *
 * The caller holds the device's primary context (cuDevicePrimaryCtxRetain;
 * each green context retains it too) and keeps `api` alive until
 * part_free. The current context is not changed.
 *
 * Returns 0 with *out set, or:
 *  -ENOTSUP  green contexts unavailable: a driver older than 12.5 (pointers
 *            NULL) or the driver refused them (`why` has its reason); fall
 *            back to one partition on the primary context
 *  -ENOSPC   the rounded sizes do not fit the device, or leave nothing for
 *            the shared partition (`why` has the numbers)
 *  -EINVAL   n > PART_MAX, a size of 0, NULL arguments
 *  -ENOMEM   out of host memory
 * On error nothing is left allocated.
 */
int part_create(const struct cuda_api *api, CUdevice dev, const uint32_t *sms, const int *prio, uint32_t n,
		bool fine, struct partition_set **out, char *why, size_t cap);

/* Destroy every stream and green context of the set. Accepts NULL. */
void part_free(struct partition_set *set);

/* Partitions in the set: n + 1. The shared one is part_count() - 1. */
uint32_t part_count(const struct partition_set *set);

/* Partition i's stream (non-blocking, in its green context), SMs, context. */
CUstream part_stream(const struct partition_set *set, uint32_t i);
/* Its stream k (0 .. part_nstreams() - 1; stream 0 is part_stream()'s), or NULL. */
CUstream part_stream_k(const struct partition_set *set, uint32_t i, uint32_t k);
uint32_t part_nstreams(const struct partition_set *set);
/*
 * Give every partition k streams (1 .. PART_STREAMS; a set starts with 1),
 * made in its green context, stream j with CUDA stream priority prio[j]
 * (prio NULL: every stream its partition's priority); part_resize
 * re-creates as many, with the same priorities. A stream that exists with
 * another priority is replaced, and streams beyond k are synchronized and
 * destroyed: read part_stream_k() again afterwards. Returns 0, -EINVAL, or
 * -EIO (the driver refused a stream: the set keeps its streams as they were).
 */
int part_set_streams(struct partition_set *set, uint32_t k, const int *prio, char *why, size_t cap);
uint32_t part_sms(const struct partition_set *set, uint32_t i);
/* cuCtxFromGreenCtx of partition i: for cuCtxSetCurrent and APIs taking a CUcontext. */
CUcontext part_ctx(const struct partition_set *set, uint32_t i);
CUgreenCtx part_green(const struct partition_set *set, uint32_t i);

/* The set's granule (SMs per split group) and the SMs of all partitions together. */
uint32_t part_granule(const struct partition_set *set);
uint32_t part_total_sms(const struct partition_set *set);

/*
 * Re-create partition i (not the shared one) with `sms` SMs (> 0, rounded
 * up to the granule), taking SMs from the shared partition or giving them
 * back to it, so the shared partition is re-created too. Both get new
 * green contexts and new streams (as many as before): read part_stream()
 * and part_stream_k() again afterwards.
 *
 * The caller must have drained both streams (everything submitted to
 * partition i and to the shared partition finished, e.g. an event recorded
 * last on each has completed) and must submit nothing to them during the
 * call. The old streams are synchronized anyway before they are destroyed,
 * so an undrained stream makes this call block rather than tear down
 * running work.
 *
 * Returns partition i's new SM count (> 0), or -EINVAL (bad index or
 * size), -ENOSPC (the shared partition cannot give that many SMs and keep
 * some), -EIO (the driver refused; `why` says why), -ENOMEM. On error the
 * set is as it was.
 */
int part_resize(struct partition_set *set, uint32_t i, uint32_t sms, char *why, size_t cap);

#endif
