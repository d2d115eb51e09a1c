/* SPDX-License-Identifier: MIT */
/*
 * The executor's coalescer: it joins the data path (datapath.c) to the
 * scheduler (daemon/sched) and the JIT (daemon/jit).
 *
 * A launch of a fusible PTX kernel is not issued when it arrives: it is
 * copied (with its parameters) into its queue's backlog, and once it is the
 * queue's head and everything before it on the queue's own stream is known
 * complete, it enters the scheduler's window. Commands behind it in the
 * queue wait in the backlog, so each queue keeps its order. The scheduler
 * forms bundles of launches of one fusion class (one kernel, by the hash of
 * its PTX and all it reaches, from any tenant, with one block shape and
 * dynamic shared memory size); a bundle of two or more runs as one launch of
 * the class's fused kernel on one of the partition's streams, with a
 * descriptor table as its parameter or copied before it; a bundle of one runs
 * the tenant's own kernel there. A bundle goes where most of its members'
 * earlier bundles still run, else on the least busy stream (with
 * spread_lanes, on its scheduler lane's stream: see sched.h), and waits for
 * its members' earlier bundles on other streams first.
 * Fused kernels are compiled in a background thread; until one is ready its
 * class's launches go alone. Each member completes on its own, in its queue's
 * order: its queue's next commands follow the bundle (its end event), and a
 * completion asked of the bundle's members is posted when that event fires.
 *
 * Owner: struct datapath owns the coalescer (dp->co), which owns the
 * classes, the compile thread, the bundles in flight, the partition's
 * streams and the descriptor slots. Queues reference bundles (q->last, pending
 * completions); a bundle is freed when its last reference goes.
 */
#ifndef OOO_EXEC_COALESCE_H
#define OOO_EXEC_COALESCE_H

#include <stdbool.h>
#include <stdint.h>

#include <ooo/proto.h>

#include "datapath.h"

#define CO_PLAN_MAX 7u /* reserved partitions (the shared one besides: OOO_SCHED_PARTITIONS in all) */

/* One reserved partition of a plan: the tenant class whose bundles run there, and its SMs. */
struct co_plan_part {
	char klass[32];
	uint32_t sms; /* rounded up to the device's split granule */
};

/*
 * Apply a partition plan: n (<= CO_PLAN_MAX) classes each get a partition
 * of their SMs, made of CUDA green contexts, where their bundles run; every
 * other class's bundles run on the shared partition, the SMs left. n = 0:
 * no green contexts, every bundle on the whole device. A plan like the
 * current one changes nothing; another first waits until no bundle is in
 * flight (held launches stay held and keep their order), then moves every
 * queue to its class's partition. The new green contexts are made before
 * the old ones go, so a refused plan leaves everything as it was. On
 * success got[0..n-1] are the reserved partitions' SMs, got[n] the shared
 * one's, *granule the split granule (0 without green contexts). Returns 0,
 * or -EINVAL (a bad plan), -ENOSPC (the sizes do not fit the device and
 * leave some SMs shared), -ENOTSUP (no green contexts: an old driver, or
 * the coalescer off), -EIO/-ENOMEM, with the reason in why.
 */
int co_partitions(struct datapath *dp, const struct co_plan_part *plan, uint32_t n, uint32_t *got,
		  uint32_t *granule, char *why, size_t cap);

/* Start the coalescer on the current context: -errno and why (the data path then runs without it). */
int co_start(struct datapath *dp, char *why, size_t cap);
void co_stop(struct datapath *dp); /* waits for the GPU and the compile thread; accepts dp->co == NULL */

/*
 * A module loaded from PTX text (NUL-terminated), parsed for fusion (pure:
 * no lock needed; NULL when it is not fusible or out of memory), then
 * installed in s's slot `module` under the serving thread's lock (it takes
 * pm; without a coalescer pm is freed). co_pmod_free accepts NULL.
 */
struct co_pmod *co_module_parse(const char *ptx, size_t len);
void co_module_install(struct datapath *dp, struct dp_session *s, uint32_t module, struct co_pmod *pm);
void co_pmod_free(struct co_pmod *pm);
/* Before a module of s goes: flush s's held work, forget its kernels' classes. */
void co_module_unload(struct datapath *dp, struct dp_session *s, uint32_t module);
/* A kernel handle was made: find its fusion class. */
void co_kernel_got(struct datapath *dp, struct dp_session *s, uint32_t module, uint32_t kernel, const char *name,
		   uint32_t param_size);

/* A queue was made (cls: its class's name) or is going (its held work is issued first, unfused). */
void co_queue_created(struct datapath *dp, struct dp_queue *q, const char *klass);
void co_queue_destroy(struct datapath *dp, struct dp_queue *q);

/*
 * Copies as launches: a small copy (HtoD, DtoH, DtoD of at most
 * CO_COPY_MAX bytes) is held as a launch of the executor's copy kernel
 * (copy.cu), whose kernel handle is CO_COPY_KERNEL (never a tenant's), so
 * that the copies of many tenants fuse into one launch like their kernels
 * instead of each costing the serving thread a driver call on its queue's
 * own stream. Only with oood.conf's fuse_copies = yes (the default; --fuse-copies yes),
 * where the device reaches registered host memory at its host address, and
 * once the copy kernel's fused form is compiled.
 */
#define CO_COPY_KERNEL UINT32_MAX
#define CO_COPY_MAX (64u << 10)
/* The function a launch of s runs alone: s's kernel, or for CO_COPY_KERNEL the copy kernel (NULL without it). */
CUfunction co_kernel_fn(const struct datapath *dp, const struct dp_session *s, uint32_t kernel);

/*
 * A validated submission of s for queue q: true if the coalescer took it
 * (held in the backlog); false if the caller issues it now (call
 * co_before_direct first). A launch's parameters are at params, or in the
 * session's staging when NULL. *full: the backlog cannot take it now (stop
 * reading the ring).
 */
bool co_take(struct datapath *dp, struct dp_session *s, struct dp_queue *q, const struct ooo_sqe *e, const void *params,
	     uint64_t now, bool *full);
/* Before work goes to q's own stream: order it after q's bundles. Returns a CUDA error or CUDA_SUCCESS. */
CUresult co_before_direct(struct datapath *dp, struct dp_queue *q);
/*
 * A completion asked of a command that adds no work (a NOP): if q's latest
 * work is a bundle, the completion follows it. Returns the bundle
 * (referenced) or NULL.
 */
struct dp_bundle *co_follow(struct datapath *dp, struct dp_queue *q);
/*
 * Whether b has completed, and then the status of member `member` (its own
 * launch's error, or the bundle's fault; a member index out of range, as
 * for a command that follows the bundle: the bundle's fault only).
 */
bool co_bundle_done(const struct dp_bundle *b, uint32_t member, int32_t *status);
/* When the launcher thread had issued the bundle to CUDA (dp_now_ns; before that, when it was dispatched). */
uint64_t co_bundle_issued(const struct dp_bundle *b);
void co_bundle_put(struct datapath *dp, struct dp_bundle *b); /* accepts NULL */

/* Issue everything s holds (unfused, in order) and wait for the GPU: before s's memory or modules go. */
void co_flush_session(struct datapath *dp, struct dp_session *s);
/*
 * co_flush_session in two: issue s's held commands (true if any queue had
 * held work or a bundle), then the end of each queue's last bundle, when it
 * is still to be waited for (NULL: none). The bundle stays referenced by
 * the queue while nothing more of it is issued.
 */
bool co_flush_issue(struct datapath *dp, struct dp_session *s);
CUevent co_queue_last_end(const struct dp_queue *q);

/* Complete the bundles that finished (before the sessions' completions are reaped). */
bool co_reap(struct datapath *dp, uint64_t now);
/* The kernel time limit (datapath.c check_hung): the oldest bundle still running past it, and ending it. */
struct dp_bundle *co_overdue(struct datapath *dp, uint64_t now, uint64_t *since);
/* Has the bundle with this (part * streams + stream, seq) ended, as seen? *end_ns: its stream's last end seen. */
bool co_seq_ended(const struct datapath *dp, uint16_t key, uint64_t seq, uint64_t *end_ns);
/* The same, asking the bundle's end event when no pass has seen it end yet (a control request's wait) */
bool co_seq_query(const struct datapath *dp, uint16_t key, uint64_t seq);
void co_end_hung(struct datapath *dp, struct dp_bundle *b, uint64_t now, uint64_t since);
/* The distinct sessions of b's members, the first cap of them in ids[] (returns how many), *more the rest. */
uint32_t co_bundle_sessions(const struct dp_bundle *b, uint64_t *ids, uint32_t cap, uint32_t *more);
/*
 * Adds to ids[] (*n of cap used; past cap, *more counts) the sessions of
 * every stream's running bundle whose time (as co_overdue counts it) is
 * past min_ns, whatever its steps: work that may be the hang or starved by
 * it (dp_long_sessions).
 */
void co_running_past(struct datapath *dp, uint64_t now, uint64_t min_ns, uint64_t *ids, uint32_t cap, uint32_t *n,
		     uint32_t *more);
/*
 * Adds to ids[] (*n of cap used; past cap, *more counts) the sessions of
 * the members of every bundle in flight on any stream (dispatched, its end
 * not seen); a member whose session has gone counts in *more.
 */
void co_inflight_sessions(const struct datapath *dp, uint64_t *ids, uint32_t cap, uint32_t *n, uint32_t *more);
/* Start compiled classes, move backlogs, form and dispatch bundles. Returns true if anything moved. */
bool co_progress(struct datapath *dp, uint64_t now);
/* A pass without sessions: take in the compiles that finished (classes outlive their sessions). */
void co_idle(struct datapath *dp);
/* Work held or in flight: the executor must keep polling. */
bool co_busy(const struct datapath *dp);
/* The launcher thread's busy time so far (ns): issuing bundles to CUDA. */
uint64_t co_launch_ns(const struct datapath *dp);
void co_counters(const struct datapath *dp, uint64_t now, struct ooo_sched_counters *out);

/*
 * Count n commands of queue class cls (dp_queue.cls) that spent ns in stage
 * st; nothing without a coalescer (its class rows are the coalescer's).
 * dp_stage calls it with the executor-wide histogram.
 */
void co_class_stage(struct datapath *dp, uint8_t cls, enum ooo_cmd_stage st, uint64_t ns, uint64_t n);

#endif
