/* SPDX-License-Identifier: MIT */
/*
 * The executor's data path: for each attached session, its shared area
 * (mapped and registered with cuMemHostRegister so copies are DMA), its
 * submission ring (read here) and completion ring (written here), its queues
 * (one CUDA stream each) and the device buffers it owns. Submissions are
 * copied out of shared memory, validated (validate.c), and issued on their
 * queue's stream; completions are posted in order per queue when a CUDA
 * event recorded after the command has completed.
 *
 * Owner: the executor's struct datapath owns every session, its mapping,
 * its doorbell fds, streams and events.
 */
#ifndef OOO_EXEC_DATAPATH_H
#define OOO_EXEC_DATAPATH_H

#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <ooo/proto.h>

#include "../../proto/exec_proto.h"
#include "../../proto/ring.h"
#include "cuda.h"
#include "longwork.h"
#include "validate.h"

struct memory;

#define DP_MAX_QUEUES 256     /* per session */
#define DP_QUEUE_DEPTH 1024   /* commands in flight per queue */
#define DP_BATCH 64           /* submissions taken from one session per pass */
#define DP_MAX_MODULES 256    /* per session */
#define DP_MAX_KERNELS 1024   /* per session */
#define DP_MAX_EVENTS 1024    /* per session: index space of ooo_event handles */
#define DP_BACKLOG 32         /* commands a queue holds behind a launch waiting for a bundle */
#define DP_HOLD_PARAMS 1024   /* launches with larger parameter blocks are never held */

struct dp_bundle;
struct co_class;
struct coalescer;
struct dp_session;

/* A command held by the executor (the scheduler has not dispatched the launch before it yet). */
struct dp_cmd {
	struct ooo_sqe e;
	uint64_t arrival_ns;
	uint64_t deadline_ns;
	uint32_t ev_seq; /* EVENT_RECORD: its number among the event's records; EVENT_WAIT: the records it must follow */
	uint8_t op;      /* the tenant's opcode: a copy held as a launch of the copy kernel has OOO_OP_LAUNCH in e */
};

struct dp_pending {
	CUevent ev;           /* or, when b is set, the bundle's completion */
	struct dp_bundle *b;  /* referenced */
	uint64_t taken_ns;    /* taken from the submission ring */
	uint64_t issued_ns;   /* issued to CUDA (its bundle dispatched) */
	uint64_t user_data;
	int32_t status;
	uint16_t member;      /* with b: the command's place among b's members (UINT16_MAX: it follows b) */
	uint8_t opcode;
	bool notify;          /* without b: false for a silent pending (watch_tail): it posts no completion */
	bool hung;            /* its work ran past the kernel time limit (check_hung): it ends with OOO_EHUNG */
	/* without b, for the kernel time limit (overdue_pending): the work on the queue's stream it completes */
	bool untimed;         /* it waits for another queue's event: not timed (that queue's work is) */
	bool bwait;           /* the stream waits for bundle bw_key, bw_seq first (co_seq_ended); cleared once seen ended */
	uint16_t bw_key;
	uint16_t steps;       /* commands issued on the stream since the pending before it (1 .. 65535) */
	uint64_t bw_seq;
};

struct dp_queue {
	bool live;
	CUstream stream;
	struct dp_pending fifo[DP_QUEUE_DEPTH];
	uint32_t head, len;
	/* coalescing (coalesce.c) */
	struct dp_session *s;
	uint16_t idx;
	uint8_t cls;           /* row of the per-class counters */
	uint8_t part;          /* the coalescer's partition for its class's bundles (0: the shared one) */
	uint32_t slo_us;
	uint8_t prio;          /* 0..99, higher first (its stream's, and its bundles' stream tier) */
	bool tier_live;        /* counted in the coalescer's live queues of its priority tier (from its first bundle) */
	uint32_t gid;          /* the scheduler's queue id */
	struct dp_cmd *bl;     /* backlog ring: DP_BACKLOG commands, allocated on first use */
	uint8_t *blparams;     /* DP_BACKLOG x DP_HOLD_PARAMS */
	uint32_t bl_head, bl_len;
	struct dp_queue *bl_next, *bl_prev; /* in the coalescer's list of queues with a backlog */
	bool bl_listed;
	bool in_sched;         /* the backlog's head launch is in the scheduler */
	bool burst_held;       /* its head launch waits for the rest of its burst (burst_open): counted once */
	bool own_dirty;        /* work went to the queue's own stream since the last switch */
	bool sw_wait;          /* waiting for sw_ev before the head launch may join a bundle */
	CUevent sw_ev;
	struct dp_bundle *last; /* referenced: the bundle holding the queue's latest work, if that went to a bundle */
	/* for the kernel time limit: what the queue's stream got since its last pending (dp_issue) */
	uint32_t direct_n;      /* commands issued on it */
	uint64_t direct_since;  /* when the first of them was (watch_tail) */
	bool direct_untimed;    /* one of them waits for another queue's event */
	bool bwait;             /* it waits for a bundle (co_before_direct): bw_key, bw_seq */
	uint16_t bw_key;
	uint64_t bw_seq;
	uint64_t head_since;    /* when its fifo's head became the head */
};

struct dp_session {
	uint64_t id;
	struct dp_session *next;
	int memfd;
	int bell;       /* the doorbell's executor end (proto/ring.h); -1 once the tenant shut its end */
	void *base;
	uint64_t size;
	bool registered;
	bool broken; /* the tenant corrupted its ring: stop reading it */
	bool blocked; /* a queue or the completion ring is full: wait for the tenant */
	bool paused;  /* a control request waits for its queues without the lock: take and reap nothing of it */
	bool cq_dirty; /* completions posted outside this session's own pass (bundles): publish */
	uint32_t posted;  /* completions of pending commands posted since the last publish */
	uint64_t seen_ns; /* when the first of them was seen */
	uint8_t cls;      /* the row of its class in the coalescer's per-class counters (has_cls: set) */
	bool has_cls;     /* it has made a queue (a session's queues are all of its tenant's class) */
	struct ooo_shm_hdr h;
	struct ring sq, cq;
	struct vbufs bufs;
	CUmodule modules[DP_MAX_MODULES];
	bool mlost[DP_MAX_MODULES]; /* a restored slot whose module could not be loaded again: taken until unloaded */
	CUfunction funcs[DP_MAX_KERNELS];
	struct co_class *kfuse[DP_MAX_KERNELS]; /* fusion class of a fusible PTX kernel, referenced */
	void *pmods[DP_MAX_MODULES];           /* parsed PTX of a module (struct co_pmod), referenced */
	uint16_t kmodule[DP_MAX_KERNELS]; /* module index + 1 of each kernel, 0: free */
	struct vkernel kernels[DP_MAX_KERNELS];
	CUevent events[DP_MAX_EVENTS]; /* created on first record */
	/* with the coalescer: records of each event taken from the ring, and issued (in that order) */
	uint32_t ev_rec[DP_MAX_EVENTS], ev_iss[DP_MAX_EVENTS];
	void *host[OOO_HOST_REGIONS];  /* host regions, mapped and registered */
	uint64_t host_size[OOO_HOST_REGIONS];
	uint8_t queue_live[DP_MAX_QUEUES];
	struct dp_queue *queues[DP_MAX_QUEUES];
	uint16_t qlist[DP_MAX_QUEUES]; /* indices of the queues that exist, in no order: what a pass visits */
	uint32_t nq;
	uint32_t inflight;
	bool fuse_capped; /* told once: its kernels beyond CO_SESSION_CLASSES new ones run unfused */
	/* a fenced executor: the session's window, and where each kernel's window parameters go */
	uint64_t fence_base;               /* 0 until its first launch (or buffer) */
	uint32_t kfence[DP_MAX_KERNELS];   /* offset of the window parameters (the tenant's block, 8-aligned) */
	unsigned char *fparams;            /* a launch's parameters with the window appended */
	uint32_t fparams_cap;
	char *fence_why[DP_MAX_MODULES];   /* per module: "KERNEL: reason" of each kernel it could not fence */
};

struct datapath {
	struct cuda_api *api;
	struct dp_session *sessions;
	CUevent *evpool;
	uint32_t nev, evcap;
	uint32_t inflight; /* commands issued, completion not yet posted */
	int cc_major, cc_minor;
	unsigned blocked; /* sessions blocked after the last pass */
	bool fuse;         /* coalesce fusible launches (the scheduler and the JIT) */
	bool fuse_copies;  /* and small copies, as launches of the copy kernel (coalesce.h) */
	bool spread_lanes; /* the scheduler's lanes choose bundles' streams (oood.conf spread_lanes) */
	bool chain_launches; /* a queue's consecutive launches may run chained in one fused bundle (oood.conf chain_launches) */
	uint32_t urgent_reserve; /* oood.conf urgent_reserve (coalesce.c, at most CO_RESERVE_MAX) */
	uint32_t burst_wait_ns;  /* oood.conf burst_wait_us (coalesce.c burst_open; 0: off) */
	uint64_t kernel_limit_ns; /* oood.conf kernel_time_limit_ms: a bundle running longer is hung (0: never) */
	uint64_t hung_checked_ns; /* when check_hung last looked */
	uint32_t tails;           /* queues with commands on their own stream and no pending behind them (watch_tail) */
	bool fence;        /* a fenced executor: every kernel runs fenced in its session's window */
	struct memory *mem; /* the executor's device memory (windows, when fenced) */
	uint32_t streams;  /* streams the coalescer runs bundles on (1 .. 8; 0: 1) */
	struct coalescer *co; /* NULL: not started (or failed: co_failed) */
	bool co_failed;
	bool fatal;        /* a sticky CUDA error: the context is gone */
	bool hung;         /* fatal because a bundle ran past kernel_limit_ns: the executor exits without touching CUDA */
	bool fault;        /* fatal because tenants' work faulted on the GPU (dp_kernel_fault): EXEC_EXIT_FAULT */
	char fatal_why[160];
	/*
	 * The sessions with work on the GPU when this thread found the context
	 * gone (dp_note_inflight): whose kernel may have faulted. The executor
	 * names them to oood before it exits for a fault (dp_report_fault).
	 */
	uint64_t inflight_ids[EXEC_HUNG_MAX];
	uint32_t inflight_n, inflight_more;
	atomic_uint nsessions; /* sessions in `sessions`, for the other serving threads (dp_blame) */
	atomic_bool *fatal_all; /* with several serving threads (executor.c): set by the first that finds it gone */
	/*
	 * With several serving threads (executor.c; else npeers 0): every
	 * thread's datapath, this one's too, and what this one last saw of its
	 * work running past half the limit (check_hung publishes it), which a
	 * hang report of another thread names too (dp_report_hung)
	 */
	struct datapath *const *peers;
	uint32_t npeers;
	struct longwork longwork;
	/* the serving loop's own cost (executor.c counts the passes, take_submissions the commands) */
	uint64_t loops, work_ns, commands, take_ns, dispatch_ns;
	uint64_t pass_take_ns, pass_dispatch_ns; /* of the last dp_progress */
	uint64_t now_ns; /* the current pass's start */
	/* per-command stages (struct ooo_sched_counters has their meaning) */
	uint64_t submit_hist[OOO_TM_BUCKETS], queue_hist[OOO_TM_BUCKETS], run_hist[OOO_TM_BUCKETS],
		notify_hist[OOO_TM_BUCKETS], gpu_hist[OOO_TM_BUCKETS];
	uint64_t submit_bad;
};

/* Count one duration (ns) in a stage histogram. */
void dp_hist(uint64_t *h, uint64_t ns);
/* Count n commands that spent ns in stage st: the executor's histogram, and (cls >= 0) their class's. */
void dp_stage(struct datapath *dp, enum ooo_cmd_stage st, int cls, uint64_t ns, uint64_t n);

void dp_init(struct datapath *dp, struct cuda_api *api);
void dp_fini(struct datapath *dp);

struct dp_session *dp_session_get(struct datapath *dp, uint64_t id, bool create);

/*
 * How a control request's long wait lets the serving thread's lock go (the
 * executor's shard lock; NULL: it keeps it, as with one serving thread,
 * where the thread that waits is the one that serves).
 */
struct dp_unlock {
	void (*lock)(void *arg);
	void (*unlock)(void *arg);
	void *arg;
};
/* Attach: map the area (fds are taken over). Returns 0 or -errno with a reason. */
int dp_attach(struct datapath *dp, uint64_t id, int memfd, int bell, uint64_t size, uint32_t sq_n,
	      uint32_t cq_n, bool reset, char *why, size_t cap);
/* Detach: the session's work runs out (without the lock, with u), then everything of it goes. */
int dp_detach(struct datapath *dp, uint64_t id, const struct dp_unlock *u);
/*
 * Wait for the session's queues: before memory they may use goes away.
 * With u, the lock goes between looks and the session is paused meanwhile
 * (nothing of it taken or reaped), so its thread's other sessions are
 * served while it waits for a long kernel.
 */
void dp_session_quiesce(struct datapath *dp, uint64_t id, const struct dp_unlock *u);
/* cuEventSynchronize(ev), or with ev NULL cuStreamSynchronize(q's stream), bounded by kernel_limit_ns (past it: exit) */
void dp_sync(struct datapath *dp, struct dp_queue *q, CUevent ev);
/* A queue priority (0..99, higher first) on the device's CUDA stream priorities [least, greatest] (lower numbers run first) */
int dp_cuda_priority(int least, int greatest, int priority);
/* Create or (create false) destroy a queue; a destroy waits for its work (without the lock, with u). */
int dp_queue(struct datapath *dp, uint64_t id, uint32_t queue, bool create, int priority, uint32_t slo_us,
	     const char *klass, const struct dp_unlock *u, char *why, size_t cap);

/*
 * Load a module from a sealed memfd image (fd stays the caller's) into the
 * first free slot, or into slot want - 1 when want is not 0 (oood restoring
 * the session's modules on a new executor: -EEXIST if it is taken), in
 * three steps, so that the slow one (compiling CUDA C, fencing, the
 * driver's PTX JIT, parsing for the coalescer) runs without the serving
 * thread's lock: dp_module_slot (locked) picks the slot (>= 0) or refuses
 * with why; dp_module_build (unlocked: it reads no session, only dp's fixed
 * settings) makes the module, parsed for the coalescer when parse;
 * dp_module_install (locked) puts it in the slot, or frees it (-EEXIST)
 * when the slot was taken meanwhile. dp_module_img_free frees one not
 * installed (NULL and an empty one are fine).
 */
struct dp_module_img {
	CUmodule mod;
	struct co_pmod *pm; /* the coalescer's parse (NULL: not fusible, or no coalescer) */
	char *fence_why;    /* fenced: why kernels could not be fenced, if any */
};
int dp_module_slot(struct datapath *dp, uint64_t id, uint32_t want, char *why, size_t cap);
int dp_module_build(struct datapath *dp, uint32_t kind, int fd, uint64_t len, bool parse, struct dp_module_img *img,
		    char *why, size_t cap);
int dp_module_install(struct datapath *dp, uint64_t id, uint32_t slot, struct dp_module_img *img, char *why,
		      size_t cap);
void dp_module_img_free(struct datapath *dp, struct dp_module_img *img);
int dp_module_unload(struct datapath *dp, uint64_t id, uint32_t module, const struct dp_unlock *u);
/*
 * A restore failed: slot `module` stays taken (lost) until the tenant
 * unloads it, or kernel index `kernel` of module `module` stays taken (its
 * launches refused) until its module goes, so that no later load or lookup
 * takes the tenant's old handle. -EEXIST if the slot or index is in use.
 */
int dp_module_lost(struct datapath *dp, uint64_t id, uint32_t module);
int dp_kernel_lost(struct datapath *dp, uint64_t id, uint32_t module, uint32_t kernel);
/* Map and register a host region from a sealed memfd (fd stays the caller's). */
int dp_host_map(struct datapath *dp, uint64_t id, uint32_t region, int fd, uint64_t size, char *why, size_t cap);
int dp_host_unmap(struct datapath *dp, uint64_t id, uint32_t region, const struct dp_unlock *u);
/* Look a kernel up and describe it, as the first free kernel index or as want - 1 (not 0: a restore). Returns 0 or -errno and why. */
int dp_kernel_get(struct datapath *dp, uint64_t id, uint32_t module, const char *name, uint32_t want,
		  struct ooo_msg_kernel *out, char *why, size_t cap);

/* For the coalescer: issue a validated command now on its queue's own stream (launch parameters at params). */
int dp_issue(struct datapath *dp, struct dp_session *s, const struct ooo_sqe *e, const void *params);
bool dp_post(struct dp_session *s, uint64_t user_data, uint16_t queue, uint8_t op, int32_t status);
/* The executor's address of a validated host address of s (staging offset, or OOO_HOST_ADDR of a region). */
void *dp_host_ptr(struct dp_session *s, uint64_t addr);
void dp_set_fatal(struct datapath *dp, CUresult r, const char *what);
uint64_t dp_now_ns(void); /* CLOCK_MONOTONIC */
bool dp_sticky(CUresult r); /* the context is lost after this error */

/* Start the coalescer if fusing is on and it has not started (or failed) yet. */
void dp_co_ensure(struct datapath *dp);

/* Issue what the rings hold and post what completed. Returns true if anything moved. */
bool dp_progress(struct datapath *dp);

/*
 * Before the executor sleeps: fill pfd[] with the doorbells to wait on
 * (after announcing the sleep on each ring). Returns how many there are
 * (only the first max are written: a result above max means pfd[] must grow
 * before the caller may sleep on it), or -1 if a ring filled meanwhile and
 * the caller must not sleep.
 */
int dp_prepare_sleep(struct datapath *dp, struct pollfd *pfd, int max);
void dp_awake(struct datapath *dp);
/* How long an idle serving loop may sleep before the next pass is due (0: until a doorbell): watch_tail's */
uint64_t dp_wake_ns(const struct datapath *dp);

/*
 * Tells oood (EXEC_MSG_HUNG on the control socket, never blocking; once per
 * process, whichever serving thread or control request finds a hang first)
 * which sessions the hung work was, ids[] (n, *more not named), and with
 * them every session whose work has run past half kernel_limit_ns, on this
 * serving thread and (as they last published it) on the others (work the
 * hang may have starved): oood counts the hang against their tenant only if
 * they are all one tenant's (oood.conf hang_strikes).
 */
void dp_report_hung(struct datapath *dp, const uint64_t *ids, uint32_t n, uint32_t more, uint64_t ran_ns);
/*
 * Before the executor exits for a kernel fault: tell oood which sessions
 * had work on the GPU (EXEC_MSG_FAULT), from every serving thread's
 * dps[0..n) as each noted them when it found the context gone. Call once,
 * after the serving threads have stopped.
 */
void dp_report_fault(struct datapath *const *dps, uint32_t n);
/* Adds session id to ids[] (*n of cap used) unless it is there; past cap, counts it in *more. */
void dp_ids_add(uint64_t id, uint64_t *ids, uint32_t cap, uint32_t *n, uint32_t *more);

#endif
