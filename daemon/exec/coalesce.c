/* SPDX-License-Identifier: MIT */
/*
 * The executor's coalescer (see coalesce.h). Runs on the executor's serving
 * thread, except compile_main, the background compiler, which only reads the
 * parsed PTX a class references and hands its result back through a list.
 */
#include "coalesce.h"
#include "../../proto/exec_proto.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ooo/jit.h>
#include <ooo/ooo.h>

#include <linux/types.h>

#include "../../proto/wire.h" /* wire_strerror */
#include "../../proto/hist.h"

#include "../jit/jit.h"
#include "../sched/fairq.h"
#include "../sched/sched.h"
#include "partition.h"

#define CO_MAX_QUEUES 65536u   /* scheduler queue ids: queues of all sessions together */
#define CO_MAX_CLASSES 1024u   /* fusion classes kept (compiled or not) */
/*
 * A launch of a class that no other queue launched on its partition within
 * this long is not held back for company (sched_cfg.share_window_ns): a latency-critical
 * tenant's own kernels go at once instead of waiting out their slack.
 */
#define CO_SHARE_WINDOW_NS 2000000ull
#define CO_SESSION_CLASSES 128u /* distinct classes one session's kernels may hold (one tenant cannot fill the table) */
#define CO_SHAPES 16u          /* launch shapes (block, dynamic smem) per class */
#define CO_SESSION_SHAPES 8u   /* of a class's shapes, those one session may add (one tenant cannot take them all) */
#define CO_MAX_STREAMS OOO_SCHED_STREAMS /* streams of a partition at one priority (executor --streams; oood.conf streams) */
/*
 * A bundle keeps its queues' priority (oood.conf priority) in tiers: below
 * the default, the default, above it, its highest-priority member's. Each
 * partition has nstreams streams at each of three CUDA stream priorities
 * (the least, the default's as dp_queue maps it, the greatest), and a
 * bundle runs on those of its tier above the lowest tier with live queues
 * (stream_tier), so that the GPU prefers a latency-critical class's bundles
 * to a best-effort class's when they compete for SMs, while tenants of one
 * tier stay at the least. One tier where the device has one stream priority.
 */
#define CO_TIERS OOO_PRIO_TIERS
#define CO_MAX_SI (CO_TIERS * CO_MAX_STREAMS) /* a partition's streams, every tier's */
#define CO_MAX_PARTS OOO_SCHED_PARTITIONS /* the shared partition (0) and the classes' reserved ones */
#define CO_INFLIGHT_PER_STREAM 4u /* bundles in flight per stream (and never fewer than CO_INFLIGHT in all) */
#define CO_SLOT_BYTES                                                                                          \
	(sizeof(struct ooo_jit_desc_hdr) + sizeof(struct ooo_jit_desc_member) * SCHED_MAX_BUNDLE +             \
	 SCHED_MAX_BUNDLE * DP_HOLD_PARAMS)
#define CO_CHAIN_MAX 16u       /* a queue's launches one bundle may chain (its head and those behind it) */
/*
 * A tenant writes a request's launches one after another (~0.1-0.3 us each):
 * a pass that takes only the first would send it alone and the rest as a
 * second bundle behind it. With oood.conf burst_wait_us (co->burst_gap_ns;
 * 0: off), while the last command a queue's backlog took is a launch that
 * came less than that ago, its head launch (of a class that chains) waits
 * for the rest, at most CO_BURST_SPAN times that after it came, so that the
 * request goes as one chain. A burst ends at once with anything but a
 * launch (a sync's barrier, an event) or at CO_CHAIN_MAX.
 */
#define CO_BURST_SPAN 4u
#define CO_CHAIN_WORDS (1u + SCHED_MAX_BUNDLE) /* a stream's chain counters: the ticket, a done counter per member */
#define CO_SPARE 64u           /* freed bundles kept for reuse (a bundle is ~6 KiB: no malloc per dispatch) */
#define CO_INFLIGHT 8u         /* bundles in flight on the partition, at least (a queue's chain pipelines like direct launches) */
/*
 * Bundles in flight on a partition beyond max_inflight, for those led by a
 * launch of a queue above the executor's lowest live priority tier
 * (sched_cfg.reserve_inflight, which also keeps such bundles out of the
 * others' max_inflight): oood.conf urgent_reserve (co->reserve), at most
 * this many. Default 0: measured on an H100 (bench/results/
 * 2026-12-06-urgent-reserve-h100-7046365.txt), 4 with bundles above the
 * lowest tier on the launcher's first ring halved the mix's critical p99
 * (closed loop: 159-200 -> 79-140 us) but cost best effort 6-25%. (An open
 * loop critical tenant at 7-10k req/s falls behind with or without it:
 * 2026-12-06-spin-iters-open-reserve-h100-db2c28b.txt.)
 */
#ifdef CO_RESERVE
#error "CO_RESERVE is gone: the reserve is oood.conf urgent_reserve (executor --urgent-reserve)"
#endif
#define CO_RESERVE_MAX 8u
#define CO_SLOTS (CO_MAX_STREAMS * CO_INFLIGHT_PER_STREAM + CO_RESERVE_MAX) /* descriptor tables: one per bundle in flight at most */
#define CO_DEFAULT_SLO_US 10000u
#define CO_POLL_MAX 8u
#define CO_SMEM_DEFAULT (48u << 10) /* a fused kernel gets no opt-in shared memory */
#define CO_SMEM_FUSED JIT_CHAIN_SMEM /* static shared memory a fused kernel adds to its members' (a chain's ticket) */
#define CO_TIME_EVERY 16u      /* fused bundles timed with a start event: one in this many (the cost model's samples) */
#define CO_LOOK_EARLY_NS 1000u /* a fused bundle's end is looked for from this long before its predicted end */
#define CO_LOOK_MAX_NS 50000u  /* and never later than this after its dispatch (a prediction a tenant trained long cannot hold completions back) */
#define CO_ISSUE_EVERY 512u    /* bundles between two measures of the executor's busy time per bundle (sched_set_issue_ns) */
#define CO_LQ 128u             /* a launcher ring: bundles dispatched, not yet issued or not yet looked at */
#define CO_LQ_FIRST 0          /* the ring issued first: reserved partitions' bundles (with a reserve, also those above the lowest tier) */
#define CO_LQ_SHARED 1
#define CO_LAUNCH_SPIN_NS 300000u /* the launcher polls this long after its last bundle before it sleeps */

struct coalescer;
static uint32_t prio_tier(uint32_t prio);
static uint32_t stream_tier(const struct coalescer *co, uint32_t t);

struct co_pmod {
	uint32_t refs;
	struct ptx_module *m;
};

enum { CLS_NEW, CLS_COMPILING, CLS_READY, CLS_FAILED };

struct co_shape {
	uint32_t block[3];
	uint32_t shmem;
	uint32_t per_sm;   /* blocks of the fused kernel resident per SM: a bundle holds per_sm x its partition's SMs */
	uint64_t by;       /* the session that added it (ids are never reused) */
};

struct co_class {
	struct co_class *next;
	uint32_t refs; /* kernels of sessions, and a compile job */
	uint32_t id;   /* never reused: scheduler classes are id << 8 | shape + 1 */
	uint64_t mark;  /* held_classes' visit stamp */
	uint8_t key[32];
	struct co_pmod *pm;
	char *kname;
	uint32_t static_smem;
	int state;
	CUmodule mod;
	CUfunction fn, fnp; /* the fused entry reading the table from device memory, and from its parameter */
	bool chain;         /* the fused kernel runs chains (jit_fused.chain) */
	struct co_shape shapes[CO_SHAPES];
	uint32_t nshapes;
};

struct co_job {
	struct fairq_node q; /* first: the todo queue's node (owner: the session that made the class) */
	struct co_job *next; /* the done list */
	struct co_class *c;
	CUmodule mod;
	CUfunction fn, fnp;
	bool chain;
	int rc;
	uint64_t ns;
	char why[256];
};

/*
 * A member of a bundle: what the launcher needs to run it alone (a bundle of
 * one, a bundle sent unfused, or the fused launch refused), and where its
 * launch error goes.
 */
struct co_member {
	uint64_t arrival, deadline;
	CUfunction fn;      /* the tenant's own kernel */
	uint32_t grid[3], block[3], shmem;
	uint32_t poff, plen; /* its parameters, in the bundle's params */
	int32_t status;     /* the launcher's: 0, -EIO (its launch refused), -OOO_EFAULT (the context is lost) */
	struct dp_session *s; /* for its launch error, when it asks no completion of its own */
	uint64_t user_data;
	uint16_t queue;
	uint8_t cls;
	uint8_t op;         /* the tenant's opcode (a copy run by the copy kernel: its copy's) */
	bool notify;        /* its own completion carries its status */
	bool signal;        /* fused with a chain: a later member runs after it */
	uint16_t wait;      /* fused with a chain: 0, or 1 + the index of its queue's previous member in the bundle */
};

/*
 * A bundle. The serving thread fills it and hands it to the launcher thread
 * (the launcher queue), which issues it to CUDA and sets `issued`; from then
 * on the serving thread reads what the launcher wrote (fused, retried,
 * lstatus, the members' status) and may query its events. Fields above
 * "the launcher's" are the serving thread's alone, or written before the
 * hand-over and only read by the launcher.
 */
struct dp_bundle {
	struct dp_bundle *next;
	uint32_t refs;
	bool done;
	bool planned_fused; /* what the scheduler dispatched (it may have run unfused: a retry) */
	bool fuse;          /* the launcher runs it fused (planned, one class, and a descriptor slot if its table needs one) */
	bool waited;        /* its stream waited for another stream's bundle first (its time is not its own) */
	bool looked;        /* the serving thread has taken the launcher's results (co_results) */
	bool hung;          /* ran past the kernel time limit (co_overdue): ended with OOO_EHUNG, the context given up */
	uint8_t part;       /* the partition it runs on */
	uint8_t stream;     /* which of the partition's streams */
	uint64_t seq;       /* its place on that stream (bundles on one stream end in order) */
	int32_t status;
	CUevent start, end; /* start: only on the fused bundles that are timed */
	uint64_t token, dispatch_ns, predicted_ns;
	uint64_t expect_ns; /* fused: its end is not looked for before this (0: look on every pass) */
	uint32_t depth;     /* the most launches of one queue it holds (> 1: a chain, if it runs fused) */
	int slot;
	/* for the launcher */
	CUstream cstream;
	CUfunction fn, fnp;  /* the class's fused entries (fnp: the table as the parameter; may be NULL) */
	uint32_t nwait;
	struct dp_bundle *after[CO_MAX_PARTS * CO_MAX_SI]; /* referenced: its stream first waits for their ends */
	/* what it waits for, kept after the references go (co_overdue: it runs once those have ended) */
	uint32_t nwkey;
	uint64_t wait_met_ns; /* when those were first seen ended (0: not yet) */
	uint16_t wkey[CO_MAX_PARTS * CO_MAX_SI]; /* part * CO_MAX_SI + stream */
	uint64_t wseq[CO_MAX_PARTS * CO_MAX_SI];
	unsigned char *params; /* the members' parameter blocks, copied out of their backlogs */
	size_t pcap;
	/* the launcher's */
	bool fused, retried, param_table;
	int32_t lstatus;    /* -OOO_EFAULT: the context was lost before or while it was issued (its end is not recorded) */
	uint64_t issued_ns; /* when the launcher finished issuing it */
	atomic_bool issued;
	uint32_t n;
	struct co_member m[SCHED_MAX_BUNDLE];
};

/*
 * One of a partition's streams: its bundles run in dispatch order, and
 * bundles of different streams may run at the same time.
 */
struct co_stream {
	CUstream stream;
	struct dp_bundle *fl_head, *fl_tail; /* in flight on it, in dispatch order */
	uint32_t nflight;
	uint64_t seq;         /* bundles dispatched on it */
	uint64_t ended_seq;   /* the seq of its last bundle whose end was seen */
	uint64_t last_end_ns; /* when its last bundle's end was seen */
};

/*
 * The values of one stream's chain counters in device memory (co->chain_dev)
 * once its issued bundles have run (the launcher's; kept apart from
 * co_stream, which a partition change resets: the device's counters stay).
 * They are never reset: a chained launch adds its blocks to the ticket and
 * each signalling member's threads to its done counter.
 */
struct co_chainc {
	uint32_t ticket;
	uint32_t done[SCHED_MAX_BUNDLE];
};

/*
 * A partition: the SMs its bundles run on. Partition 0 is the shared one
 * (every class without a reservation); the others are reserved for one
 * class each (co_partitions). Without reservations there are no green
 * contexts: partition 0 is the whole device, on primary-context streams.
 */
struct co_part {
	char klass[32];      /* the class it is reserved for ("" for the shared one) */
	uint32_t sms;        /* what the partition has */
	uint32_t asked;      /* reserved ones: what the plan asked (before rounding to the split granule) */
	struct co_stream str[CO_MAX_SI]; /* tier t's are t * nstreams .. (t + 1) * nstreams - 1 */
	uint32_t next_stream[CO_TIERS];  /* without lanes: where stream_choose's search starts */
};

struct coalescer {
	struct sched *sched;
	CUcontext ctx;
	CUdevice cudev;
	uint32_t nstreams; /* of every partition, at each tier */
	bool lanes;        /* oood.conf spread_lanes: the scheduler's lanes choose the streams */
	uint32_t reserve;  /* oood.conf urgent_reserve: in-flight bundles per partition for queues above the lowest tier */
	uint32_t burst_gap_ns; /* oood.conf burst_wait_us (burst_open; 0: off) */
	uint32_t ntiers;   /* CO_TIERS, or 1 where the device has one stream priority */
	uint32_t nsi;      /* ntiers * nstreams: the streams of a partition */
	int tier_prio[CO_TIERS]; /* the CUDA stream priority of each tier's streams */
	struct co_part part[CO_MAX_PARTS];
	uint32_t nparts;   /* 1 + the reserved ones */
	struct partition_set *pset; /* the green contexts, while any partition is reserved (else NULL) */
	CUstream prim[CO_MAX_SI]; /* partition 0's streams without green contexts (primary context) */
	uint32_t max_inflight; /* per partition */
	uint32_t sms;      /* of the device */
	struct dp_queue **qtab;
	uint32_t *qfree, nqfree;
	struct dp_queue *bl_head;
	struct co_class *classes;
	uint32_t nclasses, next_id;
	/* copies as launches (coalesce.h): the copy kernel's class (referenced; NULL: copies go as they are) */
	struct co_class *copy;
	CUmodule copy_mod;
	CUfunction copy_fn; /* the copy kernel alone */
	uint64_t mark;
	/* the compiler */
	pthread_t thr;
	bool thr_started, stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fairq todo; /* round-robin by session: one tenant's many kernels do not hold back another's */
	struct co_job *done;
	atomic_uint ndone;
	struct dp_bundle *spare; /* freed bundles kept for reuse, nspare of them */
	uint32_t nspare;
	uint32_t nflight; /* bundles in flight on all streams */
	bool draining;    /* co_partitions waits for every bundle: reap without the predicted-end gate */
	bool cls_over;    /* a queue's class went to the overflow row: co_counters reports every row */
	unsigned char *host;
	CUdeviceptr dev;
	CUdeviceptr chain_dev; /* every stream's chain counters (CO_CHAIN_WORDS each); 0: no chains */
	bool chain;            /* oood.conf chain_launches: a queue's consecutive launches may share a fused bundle */
	bool slot_busy[CO_SLOTS];
	struct ev_pool {
		CUevent *ev;
		uint32_t n, cap;
	} pool[2]; /* events kept for reuse: [0] timing disabled (most bundles' ends), [1] timing (the timed bundles) */
	/* counters */
	char cname[OOO_SCHED_CLASSES][32];
	uint32_t ncls;
	struct ooo_sched_counters st;
	uint64_t start_ns;
	struct sched_bundle out[CO_POLL_MAX];
	uint64_t nfused;    /* fused dispatches, for sampling their timing */
	uint64_t issue_b0, issue_w0, issue_l0; /* bundles, dp->work_ns and launch_ns at the last measure of the issue time */
	/*
	 * The launcher thread: the serving thread pushes bundles at a ring's
	 * tail, the launcher issues them to CUDA in that order and moves its
	 * head, and the serving thread takes their results (co_results) at its
	 * look. The driver calls of a bundle (cuLaunchKernel, its event records
	 * and stream waits) cost the serving thread nothing but the hand-over.
	 * Two rings: the first (CO_LQ_FIRST) has the bundles of reserved
	 * partitions (and, with an urgent reserve, co->reserve, those on streams
	 * above the lowest live priority tier), and the launcher issues it before the next bundle of the other
	 * (CO_LQ_SHARED), so that a class with SMs of its own, or a higher
	 * priority, does not queue behind the others on the CPU either. A
	 * stream's bundles all go to one ring (by its partition and tier), so
	 * each stream's order holds. A bundle whose stream waits for another
	 * stream's bundle (after[]) that is in the other ring and not issued yet
	 * waits for it: the launcher issues the other ring's head first
	 * (launcher_pick; that one was pushed earlier and only waits for
	 * bundles pushed before it, so this ends).
	 */
	struct co_lring {
		struct dp_bundle *q[CO_LQ];
		uint32_t look;                /* the serving thread's */
		_Alignas(64) atomic_uint tail; /* written by the serving thread */
		_Alignas(64) atomic_uint head; /* written by the launcher */
	} lr[2];
	atomic_int lsleep;                /* 1: the launcher sleeps (or is about to) on this futex word */
	atomic_uint_fast64_t launch_ns;   /* the launcher's busy time */
	atomic_int lfatal;                /* a sticky CUresult the launcher met (0: none) */
	atomic_bool lstop;
	pthread_t lthr;
	bool lthr_started;
	char lfatal_why[64];
	/* the launcher's own */
	size_t ptab_len;    /* bytes of ptab the last bundle used (the rest is zero) */
	_Alignas(16) unsigned char ptab[JIT_PTABLE_BYTES]; /* the table of a bundle launched with it as its parameter */
	struct jit_desc_launch ldl[SCHED_MAX_BUNDLE];
	struct co_chainc chainc[CO_MAX_PARTS][CO_MAX_SI];
};

/* ---- parsed modules and classes ---------------------------------------------------- */

static void pmod_put(struct co_pmod *pm)
{
	if (pm && --pm->refs == 0) {
		ptx_module_free(pm->m);
		free(pm);
	}
}

static void class_free(struct coalescer *co, struct co_class *c, const struct cuda_api *api)
{
	(void)co;
	if (c->mod)
		api->p_cuModuleUnload(c->mod);
	pmod_put(c->pm);
	free(c->kname);
	free(c);
}

/* Drop classes nobody references, oldest first, until there is room for one more. */
static void class_trim(struct coalescer *co, const struct cuda_api *api)
{
	struct co_class **pp = &co->classes;

	while (co->nclasses >= CO_MAX_CLASSES && *pp) {
		struct co_class **victim = NULL;

		for (struct co_class **p = &co->classes; *p; p = &(*p)->next)
			if ((*p)->refs == 0)
				victim = p; /* the list is newest first: the last one found is the oldest */
		if (!victim)
			return;
		{
			struct co_class *c = *victim;
			*victim = c->next;
			class_free(co, c, api);
			co->nclasses--;
		}
	}
	(void)pp;
}

static void class_put(struct datapath *dp, struct co_class *c)
{
	if (c)
		c->refs--; /* kept compiled for the next session that loads this kernel; trimmed when full */
	(void)dp;
}

static void compile_queue(struct coalescer *co, struct co_class *c, uint64_t owner)
{
	struct co_job *j = calloc(1, sizeof(*j));

	if (!j) {
		c->state = CLS_FAILED;
		co->st.jit_failures++;
		return;
	}
	j->c = c;
	j->q.owner = owner;
	c->refs++;
	c->state = CLS_COMPILING;
	pthread_mutex_lock(&co->mu);
	fairq_push(&co->todo, &j->q);
	pthread_cond_signal(&co->cv);
	pthread_mutex_unlock(&co->mu);
}

/* What the compile and launcher threads start with (theirs to free). */
struct thread_ctx {
	struct coalescer *co;
	const struct cuda_api *api;
};

static void compile_one(const struct cuda_api *api, struct co_job *j)
{
	struct jit_body b = { .mod = j->c->pm->m, .kernel = j->c->kname };
	struct jit_fused *f = NULL;
	char log[2048] = "";
	CUjit_option opt[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *val[2] = { log, (void *)(uintptr_t)sizeof(log) };
	uint64_t t0 = dp_now_ns();
	CUresult r;

	j->rc = jit_fuse(&b, 1, &f, j->why, sizeof(j->why));
	if (j->rc == 0) {
		r = api->p_cuModuleLoadDataEx(&j->mod, f->ptx, 2, opt, val);
		if (r != CUDA_SUCCESS) {
			char e[128];
			snprintf(j->why, sizeof(j->why), "loading the fused kernel: %s%s%.160s",
				 cuda_strerror(api, r, e, sizeof(e)), log[0] ? ": " : "", log);
			j->mod = NULL;
			j->rc = -EINVAL;
		} else if ((r = api->p_cuModuleGetFunction(&j->fn, j->mod, f->entry)) != CUDA_SUCCESS) {
			snprintf(j->why, sizeof(j->why), "the fused module has no entry %s", f->entry);
			api->p_cuModuleUnload(j->mod);
			j->mod = NULL;
			j->rc = -EINVAL;
		} else if (api->p_cuModuleGetFunction(&j->fnp, j->mod, f->entry_param) != CUDA_SUCCESS) {
			j->fnp = NULL; /* every bundle copies its table to the device first */
		}
		j->chain = j->rc == 0 && f->chain;
	}
	jit_fused_free(f);
	j->ns = dp_now_ns() - t0;
}

static void *compile_main(void *arg)
{
	struct thread_ctx *cc = arg;
	struct coalescer *co = cc->co;
	const struct cuda_api *api = cc->api;

	free(cc);
	api->p_cuCtxSetCurrent(co->ctx);
	pthread_mutex_lock(&co->mu);
	for (;;) {
		struct co_job *j;

		while (!co->todo.n && !co->stop)
			pthread_cond_wait(&co->cv, &co->mu);
		if (co->stop)
			break;
		j = (struct co_job *)fairq_take(&co->todo); /* q is j's first member */
		pthread_mutex_unlock(&co->mu);
		compile_one(api, j);
		pthread_mutex_lock(&co->mu);
		j->next = co->done;
		co->done = j;
		atomic_fetch_add(&co->ndone, 1);
	}
	pthread_mutex_unlock(&co->mu);
	return NULL;
}

static uint64_t sched_class(const struct co_class *c, uint32_t shape) { return (uint64_t)c->id << 8 | (shape + 1); }

static void shape_capacity(struct datapath *dp, struct co_class *c, uint32_t i)
{
	struct coalescer *co = dp->co;
	struct co_shape *sh = &c->shapes[i];
	int nb = 0;
	uint32_t threads = sh->block[0] * sh->block[1] * sh->block[2];

	/* per SM: the same in every partition (the driver's occupancy is per SM) */
	sh->per_sm = 0;
	if (dp->api->p_cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, c->fn, (int)threads, sh->shmem) ==
		    CUDA_SUCCESS &&
	    nb > 0)
		sh->per_sm = (uint32_t)nb;
	if (c->fnp) {
		/* a bundle may run as either entry: the capacity of the one with fewer blocks resident */
		int np = 0;

		if (dp->api->p_cuOccupancyMaxActiveBlocksPerMultiprocessor(&np, c->fnp, (int)threads, sh->shmem) ==
			    CUDA_SUCCESS &&
		    np > 0 && (!sh->per_sm || (uint32_t)np < sh->per_sm))
			sh->per_sm = (uint32_t)np;
	}
	sched_class_ready(co->sched, sched_class(c, i), true);
}

/*
 * The shape index of a launch of session s in its class, adding it; -1 when
 * it cannot be fused: the class has CO_SHAPES shapes, or s added
 * CO_SESSION_SHAPES of them already (the shapes are shared by every session
 * that loads the kernel: one must not take them all), or its shared memory
 * does not fit.
 */
static int shape_of(struct datapath *dp, const struct dp_session *s, struct co_class *c, const struct ooo_sqe *e)
{
	uint32_t mine = 0;

	for (uint32_t i = 0; i < c->nshapes; i++) {
		const struct co_shape *sh = &c->shapes[i];

		if (!memcmp(sh->block, e->launch.block, sizeof(sh->block)) && sh->shmem == e->launch.shmem)
			return (int)i;
	}
	/* a new shape (not on the path of every launch): how many s added already */
	for (uint32_t i = 0; i < c->nshapes; i++)
		mine += c->shapes[i].by == s->id;
	if (c->nshapes == CO_SHAPES || mine >= CO_SESSION_SHAPES ||
	    (uint64_t)e->launch.shmem + c->static_smem + (dp->co->chain ? CO_SMEM_FUSED : 0) > CO_SMEM_DEFAULT)
		return -1;
	memcpy(c->shapes[c->nshapes].block, e->launch.block, sizeof(e->launch.block));
	c->shapes[c->nshapes].shmem = e->launch.shmem;
	c->shapes[c->nshapes].per_sm = 0;
	c->shapes[c->nshapes].by = s->id;
	if (c->state == CLS_READY)
		shape_capacity(dp, c, c->nshapes);
	return (int)c->nshapes++;
}

static void drain_compiles(struct datapath *dp)
{
	struct coalescer *co = dp->co;
	struct co_job *list;

	if (!atomic_load(&co->ndone))
		return;
	pthread_mutex_lock(&co->mu);
	list = co->done;
	co->done = NULL;
	atomic_store(&co->ndone, 0);
	pthread_mutex_unlock(&co->mu);
	while (list) {
		struct co_job *j = list;
		struct co_class *c = j->c;

		list = j->next;
		co->st.jit_compile_ns += j->ns;
		if (j->ns > co->st.jit_compile_max_ns)
			co->st.jit_compile_max_ns = j->ns;
		if (j->rc == 0) {
			co->st.jit_compiles++;
			c->mod = j->mod;
			c->fn = j->fn;
			c->fnp = j->fnp;
			c->chain = j->chain;
			c->state = CLS_READY;
			for (uint32_t i = 0; i < c->nshapes; i++)
				shape_capacity(dp, c, i);
		} else {
			co->st.jit_failures++;
			c->state = CLS_FAILED;
			fprintf(stderr, "oood[executor]: kernel %.100s runs unfused: %s\n", c->kname, j->why);
		}
		c->refs--;
		free(j);
	}
}

void co_idle(struct datapath *dp)
{
	if (dp->co)
		drain_compiles(dp);
}

struct co_pmod *co_module_parse(const char *ptx, size_t len)
{
	struct co_pmod *pm = calloc(1, sizeof(*pm));
	char err[256];

	if (!pm)
		return NULL;
	if (ptx_parse(ptx, len, &pm->m, err, sizeof(err)) < 0) {
		free(pm);
		return NULL; /* not fusible: launches of its kernels are issued as they come */
	}
	pm->refs = 1;
	return pm;
}

void co_module_install(struct datapath *dp, struct dp_session *s, uint32_t module, struct co_pmod *pm)
{
	if (!dp->co || module >= DP_MAX_MODULES || s->pmods[module]) {
		pmod_put(pm);
		return;
	}
	s->pmods[module] = pm;
}

void co_pmod_free(struct co_pmod *pm)
{
	pmod_put(pm);
}

/*
 * The distinct classes s's kernels hold (a scan of its kernels, on a
 * kernel look-up only, which is a control message); *has: whether c is one
 * of them (c may be NULL).
 */
static uint32_t held_classes(struct coalescer *co, const struct dp_session *s, const struct co_class *c, bool *has)
{
	uint32_t n = 0;

	*has = false;
	co->mark++;
	for (uint32_t k = 0; k < DP_MAX_KERNELS; k++) {
		struct co_class *x = s->kfuse[k];

		if (x && x->mark != co->mark) {
			x->mark = co->mark;
			n++;
			*has |= x == c;
		}
	}
	return n;
}

void co_kernel_got(struct datapath *dp, struct dp_session *s, uint32_t module, uint32_t kernel, const char *name,
		   uint32_t param_size)
{
	struct coalescer *co = dp->co;
	struct co_pmod *pm = module < DP_MAX_MODULES ? s->pmods[module] : NULL;
	const struct ptx_kernel *pk;
	struct jit_body b;
	uint8_t key[32];
	struct co_class *c;

	if (!co || !pm || kernel >= DP_MAX_KERNELS)
		return;
	pk = ptx_kernel_find(pm->m, name);
	if (!pk || !pk->fusible || pk->param_bytes != param_size || param_size > DP_HOLD_PARAMS)
		return;
	b = (struct jit_body){ .mod = pm->m, .kernel = pk->name };
	jit_fuse_key(&b, 1, NULL, key);
	for (c = co->classes; c; c = c->next)
		if (!memcmp(c->key, key, sizeof(key)))
			break;
	{
		/*
		 * A session's kernels hold at most CO_SESSION_CLASSES distinct
		 * classes, whether they made them or found them (a class nobody
		 * holds is dropped when the table needs room): one tenant cannot
		 * take the table from the others.
		 */
		bool has;

		if (held_classes(co, s, c, &has) >= CO_SESSION_CLASSES && !has) {
			if (!s->fuse_capped)
				fprintf(stderr,
					"oood[executor]: session %llu holds %u fusion classes: its further kernels run "
					"unfused\n",
					(unsigned long long)s->id, CO_SESSION_CLASSES);
			s->fuse_capped = true;
			return;
		}
	}
	if (c) {
		if (c->state == CLS_READY)
			co->st.jit_hits++;
		else
			co->st.jit_misses++;
	} else {
		class_trim(co, dp->api);
		if (co->nclasses >= CO_MAX_CLASSES || !(c = calloc(1, sizeof(*c))))
			return;
		if (!(c->kname = strdup(pk->name))) {
			free(c);
			return;
		}
		memcpy(c->key, key, sizeof(key));
		c->id = ++co->next_id;
		c->pm = pm;
		pm->refs++;
		c->static_smem = pk->static_smem;
		c->next = co->classes;
		co->classes = c;
		co->nclasses++;
		co->st.jit_misses++;
		compile_queue(co, c, s->id); /* now, off the launch path: ready before the launches come, mostly */
	}
	c->refs++;
	s->kfuse[kernel] = c;
}

void co_module_unload(struct datapath *dp, struct dp_session *s, uint32_t module)
{
	if (!dp->co)
		return;
	co_flush_session(dp, s); /* held launches of any module's kernels (CUBIN too) go before it */
	if (module >= DP_MAX_MODULES || !s->pmods[module])
		return;
	for (uint32_t k = 0; k < DP_MAX_KERNELS; k++) {
		if (s->kmodule[k] == module + 1 && s->kfuse[k]) {
			class_put(dp, s->kfuse[k]);
			s->kfuse[k] = NULL;
		}
	}
	pmod_put(s->pmods[module]);
	s->pmods[module] = NULL;
}

/* ---- bundles -------------------------------------------------------------------- */

/*
 * An event from pool timing (1: timing enabled, for the timed bundles' start
 * and end; 0: timing disabled, which the driver records for less).
 */
static int tev_get(struct datapath *dp, CUevent *ev, int timing)
{
	struct ev_pool *pl = &dp->co->pool[timing];

	if (pl->n) {
		*ev = pl->ev[--pl->n];
		return 0;
	}
	return dp->api->p_cuEventCreate(ev, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS ? 0
													       : -ENOMEM;
}

static void tev_put(struct datapath *dp, CUevent ev, int timing)
{
	struct ev_pool *pl = &dp->co->pool[timing];

	if (!ev)
		return;
	if (pl->n == pl->cap) {
		uint32_t cap = pl->cap ? pl->cap * 2 : 64;
		CUevent *p = realloc(pl->ev, cap * sizeof(*p));

		if (!p) {
			dp->api->p_cuEventDestroy(ev);
			return;
		}
		pl->ev = p;
		pl->cap = cap;
	}
	pl->ev[pl->n++] = ev;
}

/* A bundle's events back to their pools: a timed bundle (one with a start) has a timing end too. */
static void bundle_events_put(struct datapath *dp, struct dp_bundle *b)
{
	int timing = b->start != NULL;

	tev_put(dp, b->start, 1);
	tev_put(dp, b->end, timing);
	b->start = b->end = NULL;
}

/* The bundles b's stream waited for: referenced until the launcher has issued b. */
static void bundle_after_put(struct datapath *dp, struct dp_bundle *b)
{
	for (uint32_t i = 0; i < b->nwait; i++)
		co_bundle_put(dp, b->after[i]);
	b->nwait = 0;
}

static void bundle_free(struct dp_bundle *b)
{
	if (b) {
		free(b->params);
		free(b);
	}
}

void co_bundle_put(struct datapath *dp, struct dp_bundle *b)
{
	struct coalescer *co = dp->co;

	if (!b || --b->refs)
		return;
	bundle_after_put(dp, b); /* a bundle never issued (co_stop) still holds them */
	bundle_events_put(dp, b);
	if (co->nspare < CO_SPARE) {
		b->next = co->spare;
		co->spare = b;
		co->nspare++;
	} else {
		bundle_free(b);
	}
}

uint64_t co_bundle_issued(const struct dp_bundle *b)
{
	return atomic_load_explicit(&b->issued, memory_order_acquire) && b->issued_ns ? b->issued_ns : b->dispatch_ns;
}

bool co_bundle_done(const struct dp_bundle *b, uint32_t member, int32_t *status)
{
	if (b->done)
		*status = b->status < 0 ? b->status : member < b->n ? b->m[member].status : 0;
	return b->done;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* Until the launcher has issued b (its events exist on the GPU's timeline): a few bundles' driver calls at most. */
static void wait_issued(const struct dp_bundle *b)
{
	while (!atomic_load_explicit(&b->issued, memory_order_acquire))
		cpu_relax();
}

/*
 * May work go to q's own stream now? It must wait for q's latest bundle's
 * end there, an event that exists once the launcher has issued the bundle.
 * Until then the work stays in q's backlog (advance looks again next
 * pass): the serving thread never waits for the launcher to work through
 * its queue (a copy after a bundle used to: mlp's copy of its output).
 */
static bool own_stream_ready(const struct dp_queue *q)
{
	return !q->last || q->last->done || atomic_load_explicit(&q->last->issued, memory_order_acquire);
}

CUresult co_before_direct(struct datapath *dp, struct dp_queue *q)
{
	CUresult r = CUDA_SUCCESS;

	if (!dp->co || !q->last)
		return CUDA_SUCCESS;
	if (!q->last->done) {
		wait_issued(q->last);
		r = dp->api->p_cuStreamWaitEvent(q->stream, q->last->end, 0);
		/* the kernel time limit: the queue's stream runs on once this bundle has ended */
		q->bwait = true;
		q->bw_key = (uint16_t)(q->last->part * CO_MAX_SI + q->last->stream);
		q->bw_seq = q->last->seq;
	}
	co_bundle_put(dp, q->last);
	q->last = NULL;
	return r;
}

struct dp_bundle *co_follow(struct datapath *dp, struct dp_queue *q)
{
	if (!dp->co || !q->last)
		return NULL;
	q->last->refs++;
	return q->last;
}

static void bl_list(struct coalescer *co, struct dp_queue *q)
{
	if (q->bl_listed)
		return;
	q->bl_prev = NULL;
	q->bl_next = co->bl_head;
	if (co->bl_head)
		co->bl_head->bl_prev = q;
	co->bl_head = q;
	q->bl_listed = true;
}

static void bl_unlist(struct coalescer *co, struct dp_queue *q)
{
	if (!q->bl_listed)
		return;
	if (q->bl_prev)
		q->bl_prev->bl_next = q->bl_next;
	else
		co->bl_head = q->bl_next;
	if (q->bl_next)
		q->bl_next->bl_prev = q->bl_prev;
	q->bl_next = q->bl_prev = NULL;
	q->bl_listed = false;
}

static uint8_t *bl_params(struct dp_queue *q, uint32_t slot) { return q->blparams + (size_t)slot * DP_HOLD_PARAMS; }

static void bl_pop(struct coalescer *co, struct dp_queue *q)
{
	q->bl_head = (q->bl_head + 1) % DP_BACKLOG;
	if (--q->bl_len == 0)
		bl_unlist(co, q);
}

/* The fusion class of a held launch: the tenant kernel's, or the copy kernel's. */
static struct co_class *cmd_class(const struct coalescer *co, const struct dp_session *s, const struct ooo_sqe *e)
{
	if (e->launch.kernel == CO_COPY_KERNEL)
		return co->copy;
	return e->launch.kernel < DP_MAX_KERNELS ? s->kfuse[e->launch.kernel] : NULL;
}

CUfunction co_kernel_fn(const struct datapath *dp, const struct dp_session *s, uint32_t kernel)
{
	if (kernel == CO_COPY_KERNEL)
		return dp->co ? dp->co->copy_fn : NULL;
	return s->funcs[kernel];
}

static bool holdable(struct datapath *dp, struct dp_session *s, const struct ooo_sqe *e, int *shape)
{
	struct co_class *c;

	if (e->opcode != OOO_OP_LAUNCH || e->launch.param_len > DP_HOLD_PARAMS)
		return false;
	c = cmd_class(dp->co, s, e);
	if (!c || c->state == CLS_FAILED)
		return false;
	*shape = shape_of(dp, s, c, e);
	return *shape >= 0;
}

/*
 * A small copy as a launch of the copy kernel (coalesce.h): *ce and its
 * parameters p (dst, src, bytes: host addresses as the executor maps them,
 * which the device reaches at the same address). False: it goes as it is.
 */
static bool copy_launch(const struct coalescer *co, struct dp_session *s, const struct ooo_sqe *e, struct ooo_sqe *ce,
			uint64_t p[3])
{
	if (!co->copy || co->copy->state != CLS_READY || !co->copy_fn ||
	    (e->opcode != OOO_OP_HTOD && e->opcode != OOO_OP_DTOH && e->opcode != OOO_OP_DTOD) || !e->copy.len ||
	    e->copy.len > CO_COPY_MAX)
		return false;
	p[0] = e->opcode == OOO_OP_DTOH ? (uint64_t)(uintptr_t)dp_host_ptr(s, e->copy.dst) : e->copy.dst;
	p[1] = e->opcode == OOO_OP_HTOD ? (uint64_t)(uintptr_t)dp_host_ptr(s, e->copy.src) : e->copy.src;
	p[2] = e->copy.len;
	*ce = (struct ooo_sqe){ .opcode = OOO_OP_LAUNCH,
				.flags = e->flags,
				.queue = e->queue,
				.submit_us = e->submit_us,
				.user_data = e->user_data };
	ce->launch.kernel = CO_COPY_KERNEL;
	ce->launch.grid[0] = (uint32_t)((e->copy.len + 4095u) / 4096u);
	ce->launch.grid[1] = ce->launch.grid[2] = 1;
	ce->launch.block[0] = 256;
	ce->launch.block[1] = ce->launch.block[2] = 1;
	ce->launch.param_len = 3 * sizeof(uint64_t);
	return true;
}

bool co_take(struct datapath *dp, struct dp_session *s, struct dp_queue *q, const struct ooo_sqe *e, const void *params,
	     uint64_t now, bool *full)
{
	struct coalescer *co = dp->co;
	struct dp_cmd *cmd;
	uint32_t slot, seq = 0, ev = 0;
	bool force = false, defer;
	int shape = -1;
	struct ooo_sqe ce;
	uint64_t cp[3];
	uint8_t op = e->opcode;

	*full = false;
	if (!co)
		return false;
	if (copy_launch(co, s, e, &ce, cp)) {
		e = &ce;
		params = cp;
	}
	/*
	 * Events keep their program order across queues: a record waits for the
	 * event's earlier records, a wait for the records taken before it, even
	 * when those are held behind launches in other queues' backlogs.
	 */
	if (e->opcode == OOO_OP_EVENT_RECORD || e->opcode == OOO_OP_EVENT_WAIT) {
		ev = e->event.event;
		seq = e->opcode == OOO_OP_EVENT_RECORD ? s->ev_rec[ev] + 1 : s->ev_rec[ev];
		force = e->opcode == OOO_OP_EVENT_RECORD ? s->ev_iss[ev] != seq - 1 : s->ev_iss[ev] < seq;
	}
	/* work for the own stream behind a bundle the launcher has not issued yet waits in the backlog (not for a
	 * launch whose parameters the backlog cannot hold: that one waits for the launcher, in co_before_direct) */
	defer = e->opcode != OOO_OP_NOP && !(e->opcode == OOO_OP_LAUNCH && e->launch.param_len > DP_HOLD_PARAMS) &&
		!own_stream_ready(q);
	if (!q->bl_len && !force && !defer && !holdable(dp, s, e, &shape)) {
		if (op == OOO_OP_LAUNCH)
			co->st.direct_launches++;
		if (e->opcode == OOO_OP_EVENT_RECORD)
			s->ev_rec[ev] = s->ev_iss[ev] = seq; /* the caller issues it now */
		return false;
	}
	if (q->bl_len == DP_BACKLOG || (e->opcode == OOO_OP_LAUNCH && e->launch.param_len > DP_HOLD_PARAMS)) {
		*full = true;
		return false;
	}
	if (!q->bl) {
		q->bl = calloc(DP_BACKLOG, sizeof(*q->bl));
		q->blparams = malloc((size_t)DP_BACKLOG * DP_HOLD_PARAMS);
		if (!q->bl || !q->blparams) {
			free(q->bl);
			free(q->blparams);
			q->bl = NULL;
			q->blparams = NULL;
			if (force) {
				*full = true; /* it must wait, and there is no memory to hold it: refused (-EBUSY) */
				return false;
			}
			return false; /* the backlog is empty here: issue it now */
		}
	}
	if (e->opcode == OOO_OP_EVENT_RECORD)
		s->ev_rec[ev] = seq;
	slot = (q->bl_head + q->bl_len) % DP_BACKLOG;
	cmd = &q->bl[slot];
	cmd->e = *e;
	cmd->arrival_ns = now;
	{
		/* a launch's own deadline may be looser than its queue's SLO, never tighter (the class bounds the queue's) */
		uint32_t us = q->slo_us ? q->slo_us : CO_DEFAULT_SLO_US;

		if (e->opcode == OOO_OP_LAUNCH && e->launch.deadline_us > us)
			us = e->launch.deadline_us;
		cmd->deadline_ns = now + (uint64_t)us * 1000u;
	}
	cmd->ev_seq = seq;
	cmd->op = op;
	if (e->opcode == OOO_OP_LAUNCH && e->launch.param_len)
		memcpy(bl_params(q, slot),
		       params ? params : (const unsigned char *)s->base + s->h.staging_off + e->launch.param_off,
		       e->launch.param_len);
	q->bl_len++;
	bl_list(co, q);
	return true;
}

static void member_error(struct datapath *dp, struct dp_queue *q, const struct dp_cmd *cmd, int status)
{
	if (!dp_post(q->s, cmd->e.user_data, q->idx, cmd->op, status))
		fprintf(stderr, "oood[executor]: session %llu: completion ring full, a launch error was lost\n",
			(unsigned long long)q->s->id);
	q->s->cq_dirty = true;
}

/* Issue a held command on its queue's own stream, as if it had just come. */
static void issue_held(struct datapath *dp, struct dp_queue *q, struct dp_cmd *cmd, uint32_t slot)
{
	int r = dp_issue(dp, q->s, &cmd->e, bl_params(q, slot));

	if (r == 1 && cmd->op != cmd->e.opcode) /* a copy held as a launch: its completion says what it was */
		q->fifo[(q->head + q->len - 1) % DP_QUEUE_DEPTH].opcode = cmd->op;

	if (cmd->e.opcode == OOO_OP_EVENT_RECORD && cmd->ev_seq > q->s->ev_iss[cmd->e.event.event])
		q->s->ev_iss[cmd->e.event.event] = cmd->ev_seq;
	if (r < 0)
		member_error(dp, q, cmd, r);
}

/* May a held event command go now? */
static bool event_ready(const struct dp_session *s, const struct dp_cmd *cmd)
{
	if (cmd->e.opcode == OOO_OP_EVENT_RECORD)
		return s->ev_iss[cmd->e.event.event] >= cmd->ev_seq - 1; /* >=: a flush may have issued later ones */
	if (cmd->e.opcode == OOO_OP_EVENT_WAIT)
		return s->ev_iss[cmd->e.event.event] >= cmd->ev_seq;
	return true;
}

/*
 * Is the tenant still writing the burst that q's head launch (of class c,
 * shape) begins? Only while everything behind the head is a launch that
 * could chain with it (same class and shape): a different kernel, a barrier
 * or an event ends the burst for chaining, and so does co->burst_gap_ns
 * without a command, CO_BURST_SPAN times that after the head came, or
 * CO_CHAIN_MAX.
 */
static bool burst_open(struct datapath *dp, struct co_class *c, int shape, struct dp_queue *q, uint64_t now)
{
	struct coalescer *co = dp->co;
	const struct dp_cmd *head = &q->bl[q->bl_head], *tail = &q->bl[(q->bl_head + q->bl_len - 1) % DP_BACKLOG];

	if (!co->burst_gap_ns || !co->chain || !c || !c->chain || c->state != CLS_READY || q->bl_len >= CO_CHAIN_MAX ||
	    (now > tail->arrival_ns && now - tail->arrival_ns >= co->burst_gap_ns) ||
	    (now > head->arrival_ns && now - head->arrival_ns >= (uint64_t)co->burst_gap_ns * CO_BURST_SPAN))
		return false;
	for (uint32_t i = 1; i < q->bl_len; i++) {
		const struct ooo_sqe *e = &q->bl[(q->bl_head + i) % DP_BACKLOG].e;
		int sh = -1;

		if (!holdable(dp, q->s, e, &sh) || sh != shape || cmd_class(co, q->s, e) != c)
			return false;
	}
	return true;
}

/* Move q's backlog forward: issue what goes to its own stream, hand its next launch to the scheduler. */
static bool advance(struct datapath *dp, struct dp_queue *q, uint64_t now)
{
	struct coalescer *co = dp->co;
	bool moved = false;

	while (q->bl_len && !q->in_sched && !dp->fatal) {
		struct dp_cmd *cmd = &q->bl[q->bl_head];
		int shape = -1;

		if ((cmd->e.flags & OOO_SQE_NOTIFY) && q->len == DP_QUEUE_DEPTH)
			break; /* its completion needs a slot: after the next reap */
		if (!event_ready(q->s, cmd))
			break; /* an earlier record of the event is still held in another queue */
		if (holdable(dp, q->s, &cmd->e, &shape)) {
			struct co_class *c = cmd_class(co, q->s, &cmd->e);
			struct sched_launch l;

			if (burst_open(dp, c, shape, q, now)) {
				if (!q->burst_held)
					co->st.burst_holds++;
				q->burst_held = true;
				break; /* the rest of the request is coming: next pass (co_busy keeps the loop polling) */
			}
			q->burst_held = false;
			if (q->sw_wait) {
				CUresult r = dp->api->p_cuEventQuery(q->sw_ev);

				if (r == CUDA_ERROR_NOT_READY)
					break;
				if (r != CUDA_SUCCESS) {
					dp_set_fatal(dp, r, "a command on the GPU");
					break;
				}
				q->sw_wait = false;
			}
			if (q->own_dirty) {
				/* the launch joins the partition's stream: first let the own stream's work finish */
				if ((!q->sw_ev && dp->api->p_cuEventCreate(&q->sw_ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) ||
				    dp->api->p_cuEventRecord(q->sw_ev, q->stream) != CUDA_SUCCESS) {
					dp_set_fatal(dp, CUDA_ERROR_OUT_OF_MEMORY, "recording an event");
					break;
				}
				q->own_dirty = false;
				q->sw_wait = true;
				moved = true;
				continue;
			}
			l = (struct sched_launch){
				.id = q->gid,
				.queue = q->gid,
				.partition = q->part,
				.klass = c->state == CLS_READY ? sched_class(c, (uint32_t)shape) : 0,
				.blocks = cmd->e.launch.grid[0] * cmd->e.launch.grid[1] * cmd->e.launch.grid[2],
				.capacity = c->shapes[shape].per_sm * co->part[q->part].sms,
				.cost_key = (uint64_t)c->id << 32 ^ (cmd->e.launch.grid[0] * cmd->e.launch.grid[1] *
								      cmd->e.launch.grid[2]),
				.deadline_ns = cmd->deadline_ns,
				/* its bundles outrank others on the GPU: they may use the partition's reserve (if any) */
				.urgent = co->reserve && stream_tier(co, prio_tier(q->prio)) > 0,
			};
			if (!l.blocks)
				l.blocks = 1;
			if (!l.capacity)
				l.capacity = 1; /* occupancy unknown: bundles of one */
			if (sched_submit(co->sched, &l) == 0) {
				q->in_sched = true;
				moved = true;
				break;
			}
			/* the window is full: this one goes alone, now */
		}
		if (cmd->e.opcode != OOO_OP_NOP && !own_stream_ready(q))
			break; /* after q's latest bundle, which the launcher has not issued yet: next pass */
		issue_held(dp, q, cmd, q->bl_head);
		bl_pop(co, q);
		moved = true;
	}
	return moved;
}

static struct dp_bundle *bundle_new(struct coalescer *co)
{
	struct dp_bundle *b = co->spare;

	if (b) {
		co->spare = b->next;
		co->nspare--;
	} else if ((b = malloc(sizeof(*b)))) {
		b->params = NULL; /* kept while the bundle is a spare */
		b->pcap = 0;
	} else {
		return NULL;
	}
	b->next = NULL;
	b->refs = 1; /* the in-flight list's */
	b->done = b->fuse = b->waited = b->looked = b->hung = false;
	b->fused = b->retried = b->param_table = false;
	b->status = b->lstatus = 0;
	b->expect_ns = 0;
	b->start = b->end = NULL;
	b->fn = b->fnp = NULL;
	b->slot = -1;
	b->nwait = b->nwkey = 0;
	b->wait_met_ns = 0;
	b->n = 0;
	atomic_store_explicit(&b->issued, false, memory_order_relaxed); /* published by the launcher queue's tail */
	return b;
}

/* Room for need bytes of the members' parameters (kept with a spare bundle). */
static int bundle_params(struct dp_bundle *b, size_t need)
{
	unsigned char *p;

	if (need <= b->pcap)
		return 0;
	if (need < 4096)
		need = 4096;
	if (!(p = malloc(need)))
		return -ENOMEM; /* the room it had stays */
	free(b->params);
	b->params = p;
	b->pcap = need;
	return 0;
}

static int slot_take(struct coalescer *co)
{
	for (int i = 0; i < (int)(co->max_inflight + co->reserve); i++)
		if (!co->slot_busy[i]) {
			co->slot_busy[i] = true;
			return i;
		}
	return -1;
}

/* ---- the launcher thread --------------------------------------------------------------- */

static long futex_op(atomic_int *w, int op, int val)
{
	return syscall(SYS_futex, (int *)w, op, val, NULL, NULL, 0);
}

/* The launcher met a sticky error: the context is lost (the serving thread sets dp->fatal from it). */
static void launcher_fatal(struct coalescer *co, CUresult r, const char *what)
{
	if (atomic_load_explicit(&co->lfatal, memory_order_relaxed))
		return;
	snprintf(co->lfatal_why, sizeof(co->lfatal_why), "%s", what);
	atomic_store_explicit(&co->lfatal, (int)r, memory_order_release);
}

/* Member m of b alone, on b's stream, with its own parameters. */
static CUresult launch_member(const struct cuda_api *api, const struct dp_bundle *b, const struct co_member *m)
{
	size_t psize = m->plen;
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, b->params + m->poff, CU_LAUNCH_PARAM_BUFFER_SIZE, &psize,
			  CU_LAUNCH_PARAM_END };

	return api->p_cuLaunchKernel(m->fn, m->grid[0], m->grid[1], m->grid[2], m->block[0], m->block[1], m->block[2],
				     m->shmem, b->cstream, NULL, psize ? extra : NULL);
}

/* A chained launch of b went to its stream: what its run adds to the stream's counters. */
static void chain_ran(struct co_chainc *cc, const struct dp_bundle *b, uint32_t total, uint32_t threads)
{
	cc->ticket += total;
	for (uint32_t k = 0; k < b->n; k++)
		if (b->m[k].signal)
			cc->done[k] += b->m[k].grid[0] * b->m[k].grid[1] * b->m[k].grid[2] * threads;
}

/*
 * b's members as one launch of the class's fused kernel: the descriptor
 * table as the launch's parameter when it fits, else copied to b's slot of
 * device memory first.
 */
static CUresult launch_fused(struct coalescer *co, const struct cuda_api *api, struct dp_bundle *b)
{
	const struct co_member *m0 = &b->m[0];
	unsigned char *host;
	struct ooo_jit_args a;
	uint32_t total = 0;
	long len;
	CUresult r;
	void *args[3];

	struct co_chainc *cc = &co->chainc[b->part][b->stream];
	bool chained = b->depth > 1;
	uint32_t threads = m0->block[0] * m0->block[1] * m0->block[2];
	CUdeviceptr counters = co->chain_dev + ((CUdeviceptr)b->part * CO_MAX_SI + b->stream) * CO_CHAIN_WORDS * 4u;

	for (uint32_t k = 0; k < b->n; k++) {
		const struct co_member *m = &b->m[k];

		co->ldl[k] = (struct jit_desc_launch){ .body = 0,
						       .grid = { m->grid[0], m->grid[1], m->grid[2] },
						       .params = b->params + m->poff,
						       .param_size = m->plen };
		if (chained) {
			co->ldl[k].signal = m->signal;
			co->ldl[k].wait = m->wait;
			if (m->wait) {
				const struct co_member *d = &b->m[m->wait - 1];

				co->ldl[k].wait_target = cc->done[m->wait - 1] + d->grid[0] * d->grid[1] * d->grid[2] * threads;
			}
		}
	}
	/* a table that fits goes as the launch's parameter: no copy to the device before the kernel */
	if (b->fnp && (len = jit_desc_build(co->ldl, b->n, co->ptab, sizeof(co->ptab), &total, NULL)) > 0) {
		if ((size_t)len < co->ptab_len)
			memset(co->ptab + len, 0, co->ptab_len - (size_t)len); /* no earlier bundle's parameters */
		co->ptab_len = (size_t)len;
		if (chained)
			jit_desc_chain(co->ptab, counters, cc->ticket);
		args[0] = co->ptab;
		b->param_table = true;
		r = api->p_cuLaunchKernel(b->fnp, total, 1, 1, m0->block[0], m0->block[1], m0->block[2], m0->shmem,
					  b->cstream, args, NULL);
		if (r == CUDA_SUCCESS && chained)
			chain_ran(cc, b, total, threads);
		return r;
	}
	if (b->slot < 0)
		return CUDA_ERROR_INVALID_VALUE; /* the table did not fit after all: its members run one by one */
	host = co->host + (size_t)b->slot * CO_SLOT_BYTES;
	len = jit_desc_build(co->ldl, b->n, host, CO_SLOT_BYTES, &total, NULL);
	if (len < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (chained)
		jit_desc_chain(host, counters, cc->ticket);
	jit_desc_args(host, co->dev + (CUdeviceptr)b->slot * CO_SLOT_BYTES, &a);
	args[0] = &a.desc;
	args[1] = &a.n_members;
	args[2] = &a.uniform_blocks;
	r = api->p_cuMemcpyHtoDAsync(co->dev + (CUdeviceptr)b->slot * CO_SLOT_BYTES, host, (size_t)len, b->cstream);
	if (r == CUDA_SUCCESS)
		r = api->p_cuLaunchKernel(b->fn, total, 1, 1, m0->block[0], m0->block[1], m0->block[2], m0->shmem,
					  b->cstream, args, NULL);
	if (r == CUDA_SUCCESS && chained)
		chain_ran(cc, b, total, threads);
	return r;
}

/*
 * Issue b to CUDA: its stream's waits for other streams' bundles, its start
 * (timed bundles), its members (fused, or one by one: a bundle of one, one
 * sent unfused, or a fused launch the driver refused), its end. A member
 * whose own launch is refused gets the error; nobody else's work is
 * affected. After a sticky error nothing more is issued.
 */
static void issue_bundle(struct coalescer *co, const struct cuda_api *api, struct dp_bundle *b)
{
	CUresult r;

	if (atomic_load_explicit(&co->lfatal, memory_order_relaxed))
		goto lost;
	for (uint32_t i = 0; i < b->nwait; i++) {
		r = api->p_cuStreamWaitEvent(b->cstream, b->after[i]->end, 0);
		if (r != CUDA_SUCCESS && !dp_sticky(r))
			r = api->p_cuEventSynchronize(b->after[i]->end); /* the same order, kept on the host */
		if (r != CUDA_SUCCESS) {
			launcher_fatal(co, r, "ordering a bundle after another stream's");
			goto lost;
		}
	}
	if (b->start && (r = api->p_cuEventRecord(b->start, b->cstream)) != CUDA_SUCCESS && dp_sticky(r)) {
		launcher_fatal(co, r, "recording a bundle's start");
		goto lost;
	}
	if (b->fuse) {
		r = launch_fused(co, api, b);
		if (r == CUDA_SUCCESS) {
			b->fused = true;
		} else if (dp_sticky(r)) {
			launcher_fatal(co, r, "launching a fused kernel");
			goto lost;
		} else {
			b->retried = true; /* its members run one by one instead */
		}
	}
	for (uint32_t k = 0; !b->fused && k < b->n; k++) {
		r = launch_member(api, b, &b->m[k]);
		if (r != CUDA_SUCCESS && dp_sticky(r)) {
			b->m[k].status = -OOO_EFAULT;
			launcher_fatal(co, r, "enqueue");
			goto lost;
		}
		if (r != CUDA_SUCCESS)
			b->m[k].status = -EIO;
	}
	if ((r = api->p_cuEventRecord(b->end, b->cstream)) != CUDA_SUCCESS) {
		launcher_fatal(co, r, "recording a bundle's event");
		goto lost;
	}
	return;
lost:
	b->lstatus = -OOO_EFAULT; /* its end may not be recorded: never query it */
}

/* The ring with a bundle to issue, the first ring first; -1: none. */
static int launcher_next(struct coalescer *co, const uint32_t *head)
{
	for (int r = CO_LQ_FIRST; r <= CO_LQ_SHARED; r++)
		if (head[r] != atomic_load_explicit(&co->lr[r].tail, memory_order_acquire))
			return r;
	return -1;
}

/*
 * The ring to issue from next: launcher_next's, unless its head waits for a
 * bundle not issued yet, which is then in the other ring (pushed earlier):
 * that ring's head goes first. (Its end event must be recorded before a
 * stream waits for it: a wait for an event never recorded waits for nothing.)
 */
static int launcher_pick(struct coalescer *co, const uint32_t *head)
{
	int r = launcher_next(co, head), o;
	const struct dp_bundle *b;

	if (r < 0)
		return r;
	b = co->lr[r].q[head[r] % CO_LQ];
	o = r ^ 1;
	for (uint32_t i = 0; i < b->nwait; i++)
		if (!atomic_load_explicit(&b->after[i]->issued, memory_order_acquire))
			return head[o] != atomic_load_explicit(&co->lr[o].tail, memory_order_acquire) ? o : r;
	return r;
}

/*
 * The launcher: issues the bundles the serving thread pushes, each ring in
 * order, the reserved partitions' ring first. It polls CO_LAUNCH_SPIN_NS
 * after its last bundle (a tenant's next kernel usually comes within
 * microseconds), then sleeps on co->lsleep until a push wakes it.
 */
static void *launch_main(void *arg)
{
	struct thread_ctx *lc = arg;
	struct coalescer *co = lc->co;
	const struct cuda_api *api = lc->api;
	uint32_t head[2];
	uint64_t idle_since = dp_now_ns();
	int r;

	free(lc);
	for (r = 0; r < 2; r++)
		head[r] = atomic_load_explicit(&co->lr[r].head, memory_order_relaxed);
	api->p_cuCtxSetCurrent(co->ctx);
	for (;;) {
		if ((r = launcher_pick(co, head)) >= 0) {
			uint64_t t0 = idle_since = dp_now_ns();

			do {
				struct dp_bundle *b = co->lr[r].q[head[r] % CO_LQ];

				issue_bundle(co, api, b);
				b->issued_ns = idle_since = dp_now_ns();
				atomic_store_explicit(&b->issued, true, memory_order_release);
				atomic_store_explicit(&co->lr[r].head, ++head[r], memory_order_release);
			} while ((r = launcher_pick(co, head)) >= 0);
			atomic_fetch_add_explicit(&co->launch_ns, idle_since - t0, memory_order_relaxed);
			continue;
		}
		if (atomic_load_explicit(&co->lstop, memory_order_acquire))
			break;
		if (dp_now_ns() - idle_since < CO_LAUNCH_SPIN_NS) {
			cpu_relax();
			continue;
		}
		atomic_store(&co->lsleep, 1);
		atomic_thread_fence(memory_order_seq_cst); /* against the serving thread's push: one of us sees the other */
		if (atomic_load(&co->lr[0].tail) == head[0] && atomic_load(&co->lr[1].tail) == head[1] &&
		    !atomic_load(&co->lstop))
			futex_op(&co->lsleep, FUTEX_WAIT_PRIVATE, 1);
		atomic_store(&co->lsleep, 0);
		idle_since = dp_now_ns();
	}
	return NULL;
}

static void launcher_wake(struct coalescer *co)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&co->lsleep, memory_order_relaxed)) {
		atomic_store(&co->lsleep, 0);
		futex_op(&co->lsleep, FUTEX_WAKE_PRIVATE, 1);
	}
}

static void co_results(struct datapath *dp);

/*
 * Hand b to the launcher: on the first ring (a reserved partition; with an
 * urgent reserve, co->reserve, also a stream above the lowest tier), or the
 * other.
 */
static void launcher_push(struct datapath *dp, struct dp_bundle *b)
{
	struct coalescer *co = dp->co;
	struct co_lring *l = &co->lr[b->part || (co->reserve && b->stream >= co->nstreams) ? CO_LQ_FIRST : CO_LQ_SHARED];
	uint32_t tail = atomic_load_explicit(&l->tail, memory_order_relaxed);

	/* never full: bundles in flight (the scheduler's bound per partition) are fewer than CO_LQ; a guard */
	while (tail - l->look >= CO_LQ) {
		cpu_relax();
		co_results(dp);
	}
	l->q[tail % CO_LQ] = b;
	atomic_store_explicit(&l->tail, tail + 1, memory_order_release);
	launcher_wake(co);
}

/* The launcher's results of b, once it has issued it: see co_results. */
static void bundle_looked(struct datapath *dp, struct dp_bundle *b)
{
	struct coalescer *co = dp->co;

	if (b->fused) {
		co->st.fused_bundles++;
		co->st.fused_launches += b->n;
		if (b->depth > 1)
			for (uint32_t k = 0; k < b->n; k++)
				co->st.chained_launches += b->m[k].wait != 0;
	}
	co->st.param_bundles += b->param_table;
	co->st.retried += b->retried;
	for (uint32_t k = 0; k < b->n; k++) {
		const struct co_member *m = &b->m[k];

		if (m->status < 0 && !m->notify) {
			if (!dp_post(m->s, m->user_data, m->queue, m->op, m->status))
				fprintf(stderr,
					"oood[executor]: session %llu: completion ring full, a launch error was lost\n",
					(unsigned long long)m->s->id);
			m->s->cq_dirty = true;
		}
	}
	bundle_after_put(dp, b);
	b->looked = true;
}

/*
 * Take the results of the bundles the launcher has issued, in order: count
 * them, post their members' launch errors (those that ask no completion of
 * their own), release the bundles their streams waited for, and learn of a
 * sticky error.
 */
static void co_results(struct datapath *dp)
{
	struct coalescer *co = dp->co;
	int lf;

	for (int r = 0; r < 2; r++) {
		struct co_lring *l = &co->lr[r];
		uint32_t head = atomic_load_explicit(&l->head, memory_order_acquire);

		while (l->look != head)
			bundle_looked(dp, l->q[l->look++ % CO_LQ]);
	}
	if ((lf = atomic_load_explicit(&co->lfatal, memory_order_acquire)) != 0)
		dp_set_fatal(dp, (CUresult)lf, co->lfatal_why);
}


/*
 * Until the launcher has issued everything pushed, and its results are
 * taken: before a session or a queue goes (its bundles' members name it), or
 * the host waits for a bundle.
 */
static void launcher_drain(struct datapath *dp)
{
	struct coalescer *co = dp->co;

	for (int r = 0; r < 2; r++) {
		uint32_t tail = atomic_load_explicit(&co->lr[r].tail, memory_order_relaxed);

		while (atomic_load_explicit(&co->lr[r].head, memory_order_acquire) != tail)
			cpu_relax();
	}
	co_results(dp);
}

/* ---- dispatch ------------------------------------------------------------------------ */

/* The tier of a queue priority (0..99): below the default, the default, above it. */
static uint32_t prio_tier(uint32_t prio)
{
	return prio < OOO_PRIORITY_DEFAULT ? 0 : prio == OOO_PRIORITY_DEFAULT ? 1 : 2;
}

/*
 * The executor's live queues of each tier: those that have had a bundle,
 * until they are destroyed; every shard's coalescer's together (one
 * executor process serves one context, and its shards' bundles compete for
 * the same SMs).
 */
static _Atomic uint32_t tiers_live[CO_TIERS];

/*
 * The streams a bundle of tier t runs on: its tier above the lowest tier
 * that has live queues. Tenants of one tier (the common case) all run on
 * the least CUDA priority, as every bundle did before tiers; only where
 * tiers mix does the GPU prefer the higher one's bundles.
 */
static uint32_t stream_tier(const struct coalescer *co, uint32_t t)
{
	uint32_t low = 0;

	if (co->ntiers == 1)
		return 0;
	while (low < t && atomic_load_explicit(&tiers_live[low], memory_order_relaxed) == 0)
		low++;
	return t - low;
}

/*
 * Without lanes (spread_lanes = no): the stream of partition p a bundle of
 * qs goes on, among tier t's. Where members' queues still have a bundle in
 * flight there, the stream most of those are on (it keeps their order with
 * no wait); else the stream with the fewest bundles in flight, the search
 * starting after the last one chosen so that ties spread.
 */
static uint32_t stream_choose(struct coalescer *co, uint32_t p, uint32_t t, struct dp_queue *const *qs, uint32_t n)
{
	struct co_part *pt = &co->part[p];
	uint32_t votes[CO_MAX_SI] = { 0 }, best = UINT32_MAX, most = 0, first = t * co->nstreams;

	if (co->nstreams == 1)
		return first;
	for (uint32_t k = 0; k < n; k++) {
		const struct dp_bundle *l = qs[k]->last;

		if (l && !l->done && l->part == p && l->stream / co->nstreams == t && ++votes[l->stream] > most) {
			most = votes[l->stream];
			best = l->stream;
		}
	}
	if (best != UINT32_MAX)
		return best;
	best = pt->next_stream[t];
	for (uint32_t i = 1; i < co->nstreams; i++) {
		uint32_t x = (pt->next_stream[t] + i) % co->nstreams;

		if (pt->str[first + x].nflight < pt->str[first + best].nflight)
			best = x;
	}
	pt->next_stream[t] = (best + 1) % co->nstreams;
	return first + best;
}

/*
 * What b (on stream si of partition p) waits for first: the members'
 * earlier bundles on other streams, the latest of them on each other stream
 * (a stream's bundles end in order), referenced until the launcher has
 * issued b. (A queue's earlier bundles are on another partition only if a
 * plan moved its class while they ran, which co_partitions prevents by
 * draining first; they are waited for all the same.)
 */
static void streams_after(struct coalescer *co, uint32_t p, uint32_t si, struct dp_queue *const *qs, uint32_t n,
			  struct dp_bundle *b)
{
	uint32_t me = p * CO_MAX_SI + si;

	if (co->nsi == 1 && co->nparts == 1)
		return;
	/* b->after[] holds the latest bundle of each other stream: at most one per stream, so few */
	for (uint32_t k = 0; k < n; k++) {
		struct dp_bundle *l = qs[k]->last;
		uint32_t x, i;

		if (!l || l->done || (x = l->part * CO_MAX_SI + l->stream) == me)
			continue;
		for (i = 0; i < b->nwait; i++)
			if (b->after[i]->part * CO_MAX_SI + b->after[i]->stream == x)
				break;
		if (i == b->nwait) {
			b->after[b->nwait++] = l;
			l->refs++;
		} else if (l->seq > b->after[i]->seq) {
			b->after[i]->refs--; /* still referenced by its stream's flight list: l is later there */
			b->after[i] = l;
			l->refs++;
		}
	}
	for (uint32_t i = 0; i < b->nwait; i++) {
		b->wkey[i] = (uint16_t)(b->after[i]->part * CO_MAX_SI + b->after[i]->stream);
		b->wseq[i] = b->after[i]->seq;
	}
	b->nwkey = b->nwait;
	co->st.stream_waits += b->nwait;
	b->waited = b->nwait > 0;
}

static inline uint32_t align16(uint32_t n) { return (n + 15u) & ~15u; }

/*
 * Chains: a fused bundle of a class whose kernel runs them also takes, from
 * each member's queue, the launches right behind its head that the same
 * fused kernel runs (same class and shape, nothing else between), each
 * after the one before it (<ooo/jit.h>: done counters and waits), so that
 * a queue's chain of small kernels goes in one launch instead of one bundle
 * per step. A level at a time over the queues (every queue's second launch
 * before any third), while the bundle's blocks stay within the class's
 * capacity on the partition, its members within SCHED_MAX_BUNDLE, each
 * queue's depth within CO_CHAIN_MAX and its completions within its queue's
 * room. Writes each queue's count (head included) to depth[], adds the
 * members and their parameter room to *total and *need, and returns the
 * deepest count (1: no chain).
 */
static uint32_t chain_plan(struct datapath *dp, struct co_class *c, uint32_t p, struct dp_queue *const *qs, uint32_t n,
			   uint64_t step_ns, uint64_t now, uint32_t *depth, uint32_t *total, size_t *need)
{
	struct coalescer *co = dp->co;
	const struct ooo_sqe *e0 = &qs[0]->bl[qs[0]->bl_head].e;
	uint32_t notes[SCHED_MAX_BUNDLE], maxd = 1, levels = CO_CHAIN_MAX;
	uint64_t blocks = 0, cap, due = UINT64_MAX;
	int shape = -1;

	if (!holdable(dp, qs[0]->s, e0, &shape) || !c->shapes[shape].per_sm)
		return 1; /* occupancy unknown: no room to plan with */
	cap = (uint64_t)c->shapes[shape].per_sm * co->part[p].sms;
	for (uint32_t k = 0; k < n; k++) {
		const struct dp_cmd *cmd = &qs[k]->bl[qs[k]->bl_head];
		const struct ooo_sqe *e = &cmd->e;

		blocks += (uint64_t)e->launch.grid[0] * e->launch.grid[1] * e->launch.grid[2];
		notes[k] = (e->flags & OOO_SQE_NOTIFY) != 0;
		if (cmd->deadline_ns < due)
			due = cmd->deadline_ns;
	}
	/*
	 * Every member's completion waits for the whole bundle: no deeper than
	 * its earliest head's deadline allows at the predicted time per step
	 * (a chain never makes a member late that its one step would not).
	 */
	if (step_ns && due != UINT64_MAX) {
		uint64_t fit = due > now ? (due - now) / step_ns : 0;

		levels = fit < 1 ? 1 : fit < CO_CHAIN_MAX ? (uint32_t)fit : CO_CHAIN_MAX;
	}
	for (uint32_t lvl = 1; lvl < levels; lvl++) {
		bool grew = false;

		for (uint32_t k = 0; k < n && *total < SCHED_MAX_BUNDLE; k++) {
			struct dp_queue *q = qs[k];
			const struct ooo_sqe *e;
			uint64_t g;
			bool note;
			int sh = -1;

			if (depth[k] != lvl || lvl >= q->bl_len)
				continue;
			e = &q->bl[(q->bl_head + lvl) % DP_BACKLOG].e;
			note = (e->flags & OOO_SQE_NOTIFY) != 0;
			if (!holdable(dp, q->s, e, &sh) || sh != shape || cmd_class(co, q->s, e) != c ||
			    (note && q->len + notes[k] + 1 > DP_QUEUE_DEPTH))
				continue;
			g = (uint64_t)e->launch.grid[0] * e->launch.grid[1] * e->launch.grid[2];
			if (blocks + g > cap)
				continue;
			blocks += g;
			depth[k]++;
			notes[k] += note;
			(*total)++;
			*need += align16(e->launch.param_len);
			grew = true;
			if (depth[k] > maxd)
				maxd = depth[k];
		}
		if (!grew)
			break;
	}
	return maxd;
}

static void dispatch(struct datapath *dp, const struct sched_bundle *sb, uint64_t now)
{
	struct coalescer *co = dp->co;
	struct dp_queue *qs[SCHED_MAX_BUNDLE];
	struct dp_bundle *b = bundle_new(co);
	uint32_t n = 0, depth[SCHED_MAX_BUNDLE], last[SCHED_MAX_BUNDLE];
	size_t need = 0;

	for (uint32_t k = 0; k < sb->n; k++) {
		struct dp_queue *q = sb->ids[k] < CO_MAX_QUEUES ? co->qtab[sb->ids[k]] : NULL;

		if (q && q->in_sched && q->bl_len) {
			qs[n++] = q;
			need += align16(q->bl[q->bl_head].e.launch.param_len);
		}
	}
	/*
	 * One fused bundle in CO_TIME_EVERY is timed by CUDA events around it
	 * (the cost model's samples); the others, and a launch alone, only get
	 * their end event (a driver call less on the latency path).
	 */
	bool fuse = sb->fused && n > 1, timed = fuse && co->nfused++ % CO_TIME_EVERY == 0;
	uint32_t p = sb->partition < co->nparts ? sb->partition : 0, tier = 0;

	for (uint32_t k = 0; k < n; k++) {
		uint32_t t = prio_tier(qs[k]->prio);

		tier = t > tier ? t : tier;
		if (!qs[k]->tier_live) {
			/* a queue counts in its tier from its first bundle on (not while it only sits open) */
			atomic_fetch_add_explicit(&tiers_live[t], 1, memory_order_relaxed);
			qs[k]->tier_live = true;
		}
	}
	/*
	 * With lanes, the scheduler's lane's stream in the bundle's tier (a queue
	 * with bundles in flight stays on its lane: within one tier, its order
	 * holds without a wait); else stream_choose.
	 */
	uint32_t si = co->lanes ? stream_tier(co, tier) * co->nstreams + sb->lane % co->nstreams
				: stream_choose(co, p, stream_tier(co, tier), qs, n);
	struct co_stream *cs = &co->part[p].str[si];

	if (!b || bundle_params(b, need) < 0 || (timed && tev_get(dp, &b->start, 1) < 0) ||
	    tev_get(dp, &b->end, timed) < 0) {
		/* no bundle record: the members run on their own streams instead */
		for (uint32_t k = 0; k < n; k++) {
			qs[k]->in_sched = false;
			issue_held(dp, qs[k], &qs[k]->bl[qs[k]->bl_head], qs[k]->bl_head);
			bl_pop(co, qs[k]);
		}
		if (b) {
			bundle_events_put(dp, b);
			co_bundle_put(dp, b);
		}
		sched_complete(co->sched, sb->token, 0, now); /* nothing ran: teach it nothing */
		return;
	}
	b->token = sb->token;
	b->planned_fused = sb->fused;
	b->part = (uint8_t)p;
	b->stream = (uint8_t)si;
	b->cstream = cs->stream;
	b->dispatch_ns = now;
	b->predicted_ns = sb->predicted_ns;
	for (uint32_t k = 0; k < n; k++)
		depth[k] = 1;
	b->depth = 1;
	if (fuse) {
		/* one scheduler class is one kernel and shape: every member has the leader's class */
		const struct ooo_sqe *e0 = &qs[0]->bl[qs[0]->bl_head].e;
		struct co_class *c = cmd_class(co, qs[0]->s, e0);
		bool same = c && c->state == CLS_READY;
		uint32_t total = n;
		size_t cneed = need;

		for (uint32_t k = 1; same && k < n; k++)
			same = cmd_class(co, qs[k]->s, &qs[k]->bl[qs[k]->bl_head].e) == c;
		if (same && c->chain && co->chain)
			b->depth = chain_plan(dp, c, p, qs, n, sb->predicted_ns, now, depth, &total, &cneed);
		/* a table that does not go as the launch's parameter is copied to a slot of device memory first */
		if (same && b->depth > 1 && !(c->fnp && jit_desc_size(total, cneed) <= JIT_PTABLE_BYTES) &&
		    (b->slot = slot_take(co)) < 0) {
			/* no slot for the chain's table: the heads alone, if their table fits the parameter */
			for (uint32_t k = 0; k < n; k++)
				depth[k] = 1;
			b->depth = 1;
		}
		if (b->depth > 1) {
			need = cneed;
			b->predicted_ns = sb->predicted_ns * b->depth;
		}
		if (same && (b->slot >= 0 || (c->fnp && jit_desc_size(b->depth > 1 ? total : n, need) <= JIT_PTABLE_BYTES) ||
			     (b->slot = slot_take(co)) >= 0)) {
			b->fuse = true;
			b->fn = c->fn;
			b->fnp = c->fnp;
		}
	}
	if (need > b->pcap && bundle_params(b, need) < 0) {
		/* no room for the chains' parameters: the heads alone (their room was made above) */
		for (uint32_t k = 0; k < n; k++)
			depth[k] = 1;
		b->depth = 1;
		b->predicted_ns = sb->predicted_ns;
	}
	streams_after(co, p, si, qs, n, b);
	for (uint32_t lvl = 0, off = 0; lvl < b->depth; lvl++)
	for (uint32_t k = 0; k < n; k++) {
		struct dp_queue *q = qs[k];
		struct dp_cmd *cmd = &q->bl[q->bl_head];
		const struct ooo_sqe *e = &cmd->e;
		struct dp_session *s = q->s;
		bool notify = (e->flags & OOO_SQE_NOTIFY) != 0;

		if (depth[k] <= lvl)
			continue;
		if (lvl) {
			/* behind its queue's previous launch in this bundle, which counts itself for it */
			b->m[last[k]].signal = true;
		}
		b->m[b->n] = (struct co_member){ .arrival = cmd->arrival_ns,
						 .deadline = cmd->deadline_ns,
						 .fn = co_kernel_fn(dp, s, e->launch.kernel),
						 .grid = { e->launch.grid[0], e->launch.grid[1], e->launch.grid[2] },
						 .block = { e->launch.block[0], e->launch.block[1], e->launch.block[2] },
						 .shmem = e->launch.shmem,
						 .poff = off,
						 .plen = e->launch.param_len,
						 .s = s,
						 .user_data = e->user_data,
						 .queue = q->idx,
						 .cls = q->cls,
						 .op = cmd->op,
						 .notify = notify,
						 .wait = (uint16_t)(lvl ? last[k] + 1 : 0) };
		last[k] = b->n;
		if (e->launch.param_len)
			memcpy(b->params + off, bl_params(q, q->bl_head), e->launch.param_len);
		off += align16(e->launch.param_len);
		/* the queue's next work follows this bundle */
		if (q->last)
			co_bundle_put(dp, q->last);
		q->last = b;
		b->refs++;
		if (notify) {
			struct dp_pending *pe = &q->fifo[(q->head + q->len) % DP_QUEUE_DEPTH];

			*pe = (struct dp_pending){ .b = b, .member = (uint16_t)b->n, .user_data = e->user_data,
						  .opcode = cmd->op, .notify = true, .taken_ns = cmd->arrival_ns,
						  .issued_ns = b->dispatch_ns };
			b->refs++;
			q->len++;
			s->inflight++;
			dp->inflight++;
		}
		b->n++;
		q->in_sched = false;
		bl_pop(co, q);
	}
	b->seq = ++cs->seq;
	/*
	 * A query of an event not yet reached costs ~1.3 us of driver time on
	 * the H200 machine, once per pass for the oldest bundle: a fused one is
	 * not looked for before its dispatch plus its predicted GPU time, a
	 * lower bound of its end that depends on nothing else (a chain of
	 * predictions would drift). Its GPU time comes from the timed bundles'
	 * events, so a late look teaches the model nothing; a launch alone
	 * (timed by when its end is seen) is looked for on every pass. The wait
	 * is capped (CO_LOOK_MAX_NS): a tenant that taught the model a long time
	 * for its kernel, then launches short ones, delays the bundles' other
	 * members by at most that.
	 */
	b->expect_ns = b->fuse ? now + (b->predicted_ns < CO_LOOK_MAX_NS ? b->predicted_ns : CO_LOOK_MAX_NS) : 0;
	if (cs->fl_tail)
		cs->fl_tail->next = b;
	else
		cs->fl_head = b;
	cs->fl_tail = b;
	cs->nflight++;
	co->nflight++;
	co->st.bundles++;
	co->st.launches += b->n;
	if (b->n > co->st.max_members)
		co->st.max_members = b->n;
	co->st.parts[p].bundles++;
	co->st.tier_bundles[tier]++;
	co->st.stream_bundles[b->stream % co->nstreams]++;
	launcher_push(dp, b);
	for (uint32_t k = 0; k < n; k++)
		advance(dp, qs[k], now);
}

/* The bundles of stream cs that have ended, in order. */
static bool reap_stream(struct datapath *dp, struct co_stream *cs, uint64_t now)
{
	struct coalescer *co = dp->co;
	bool moved = false;

	while (cs->fl_head) {
		struct dp_bundle *b = cs->fl_head;
		CUresult r;
		float ms = 0;
		uint64_t ns = 0;

		if (!b->looked)
			break; /* not issued yet, or its results not taken (co_results) */
		if (b->expect_ns && now + CO_LOOK_EARLY_NS < b->expect_ns && !co->draining)
			break; /* predicted to run a while yet (bundles end in order: the later ones too) */
		r = b->lstatus < 0 ? CUDA_ERROR_LAUNCH_FAILED
		    : b->hung	   ? CUDA_ERROR_LAUNCH_TIMEOUT
				   : dp->api->p_cuEventQuery(b->end);
		if (r == CUDA_ERROR_NOT_READY)
			break;
		if (b->hung) {
			b->status = -OOO_EHUNG; /* dp->fatal is set: nothing behind it is looked at */
		} else if (r != CUDA_SUCCESS) {
			dp_set_fatal(dp, r, "a bundle on the GPU");
			b->status = -OOO_EFAULT;
		} else if (b->start) {
			if (dp->api->p_cuEventElapsedTime(&ms, b->start, b->end) == CUDA_SUCCESS && ms > 0) {
				ns = (uint64_t)((double)ms * 1e6);
				dp_hist(dp->gpu_hist, ns);
			}
		} else if (!b->fused && !b->waited) {
			/* a stream's bundles end in order: this one ran since the later of its issue and the last end seen */
			ns = now - (b->issued_ns > cs->last_end_ns ? b->issued_ns : cs->last_end_ns);
			if ((int64_t)ns < 0)
				ns = 0;
		}
		cs->last_end_ns = now;
		cs->ended_seq = b->seq;
		/*
		 * An untimed fused bundle teaches nothing (its GPU time is the
		 * model's prediction), nor one run otherwise than the scheduler
		 * dispatched it (fused, it ran unfused: its time is not what the
		 * model would learn it as).
		 */
		/* a chain ran its queues' launches one after another: the model learns one step */
		sched_complete(co->sched, b->token, b->fused == b->planned_fused ? ns / (b->fused ? b->depth : 1) : 0, now);
		co->st.parts[b->part].busy_ns += ns ? ns : b->fused ? b->predicted_ns : 0;
		for (uint32_t k = 0; k < b->n; k++) {
			struct ooo_sched_class_stats *cl = &co->st.classes[b->m[k].cls];
			uint64_t lat = now - b->m[k].arrival;
			uint64_t hold = b->dispatch_ns > b->m[k].arrival ? b->dispatch_ns - b->m[k].arrival : 0;
			uint64_t issued = co_bundle_issued(b);

			co->st.hold_hist[ooo_tm_bucket(hold)]++;
			/* the command stage goes on to the launcher's issue: its ring's wait is queueing, not running */
			dp_stage(dp, OOO_STAGE_QUEUE, b->m[k].cls, issued > b->m[k].arrival ? issued - b->m[k].arrival : 0, 1);
			co->st.lat_hist[ooo_tm_bucket(lat)]++;
			cl->launches++;
			cl->lat_sum_ns += lat;
			if (lat > cl->lat_max_ns)
				cl->lat_max_ns = lat;
			if (now > b->m[k].deadline)
				cl->deadline_misses++;
		}
		b->done = true;
		if (b->slot >= 0)
			co->slot_busy[b->slot] = false;
		cs->fl_head = b->next;
		if (!cs->fl_head)
			cs->fl_tail = NULL;
		cs->nflight--;
		co->nflight--;
		co_bundle_put(dp, b);
		moved = true;
	}
	return moved;
}

bool co_seq_ended(const struct datapath *dp, uint16_t key, uint64_t seq, uint64_t *end_ns)
{
	const struct co_stream *w;

	if (!dp->co || key / CO_MAX_SI >= CO_MAX_PARTS)
		return true;
	w = &dp->co->part[key / CO_MAX_SI].str[key % CO_MAX_SI];
	*end_ns = w->last_end_ns;
	return w->ended_seq >= seq;
}

/*
 * Has bundle seq of stream key ended, asking its end event when no pass has
 * seen it end yet (a control request's wait: no pass reaps meanwhile)? Not
 * for a bundle whose launcher results the serving thread has not taken
 * (its end may not be recorded yet), one that failed to launch or hung.
 */
bool co_seq_query(const struct datapath *dp, uint16_t key, uint64_t seq)
{
	const struct co_stream *w;
	uint64_t e;

	if (co_seq_ended(dp, key, seq, &e))
		return true;
	w = &dp->co->part[key / CO_MAX_SI].str[key % CO_MAX_SI];
	for (const struct dp_bundle *b = w->fl_head; b; b = b->next)
		if (b->seq == seq)
			return b->looked && b->lstatus >= 0 && !b->hung && dp->api->p_cuEventQuery(b->end) == CUDA_SUCCESS;
	return false;
}

/*
 * When b, a stream's head bundle, can have started running at the earliest
 * (*t: its issue or its stream's last end, as given): after the ends of the
 * other streams' bundles it waits for, as first seen (each such stream's
 * last end when all of them were first seen ended: no earlier than theirs,
 * and fixed from then on). False while one of them has not ended: b is not
 * running yet.
 */
static bool hung_start(const struct coalescer *co, struct dp_bundle *b, uint64_t *t)
{
	if (b->nwkey && !b->wait_met_ns) {
		uint64_t met = 1;

		for (uint32_t i = 0; i < b->nwkey; i++) {
			const struct co_stream *w = &co->part[b->wkey[i] / CO_MAX_SI].str[b->wkey[i] % CO_MAX_SI];

			if (w->ended_seq < b->wseq[i])
				return false;
			if (w->last_end_ns > met)
				met = w->last_end_ns;
		}
		b->wait_met_ns = met;
	}
	if (b->wait_met_ns > *t)
		*t = b->wait_met_ns;
	return true;
}

/*
 * The kernel time limit (oood.conf kernel_time_limit_ms; datapath.c
 * check_hung): of the streams' head bundles, those that still run after
 * this pass's reaping, the one that started first and has run past the
 * limit for each kernel it runs one after another (a chain's steps, or its
 * members when it runs unfused: no kernel is taken as hung before it has
 * run the limit). A head runs from the later of its issue and its stream's
 * last end seen, and, when it waits for other streams' bundles, of theirs
 * (until they end it is not a candidate: they are). *since: its start.
 */
/*
 * Stream cs's oldest running bundle if the time limit times it now, with
 * when its time started (*t: the later of its issue, the end of the bundle
 * before it, and the ends of what it waits for); else NULL.
 */
static struct dp_bundle *timed_bundle(const struct coalescer *co, struct co_stream *cs, uint64_t *t)
{
	struct dp_bundle *b = cs->fl_head;

	if (!b || !b->looked || b->lstatus < 0)
		return NULL;
	*t = b->issued_ns > cs->last_end_ns ? b->issued_ns : cs->last_end_ns;
	return hung_start(co, b, t) ? b : NULL;
}

struct dp_bundle *co_overdue(struct datapath *dp, uint64_t now, uint64_t *since)
{
	struct coalescer *co = dp->co;
	struct dp_bundle *worst = NULL;

	for (uint32_t p = 0; co && p < co->nparts; p++)
		for (uint32_t i = 0; i < co->nsi; i++) {
			uint32_t steps;
			uint64_t t = 0;
			struct dp_bundle *b = timed_bundle(co, &co->part[p].str[i], &t);

			if (!b)
				continue;
			steps = b->fused ? b->depth : b->n;
			if (now > t && now - t > dp->kernel_limit_ns * (steps ? steps : 1) && (!worst || t < *since)) {
				worst = b;
				*since = t;
			}
		}
	/* it may have ended since this pass looked: asked once more */
	if (worst && dp->api->p_cuEventQuery(worst->end) != CUDA_ERROR_NOT_READY)
		return NULL;
	return worst;
}

uint32_t co_bundle_sessions(const struct dp_bundle *b, uint64_t *ids, uint32_t cap, uint32_t *more)
{
	uint32_t n = 0;

	*more = 0;
	for (uint32_t k = 0; k < b->n; k++)
		if (b->m[k].s)
			dp_ids_add(b->m[k].s->id, ids, cap, &n, more);
	return n;
}

void co_inflight_sessions(const struct datapath *dp, uint64_t *ids, uint32_t cap, uint32_t *n, uint32_t *more)
{
	const struct coalescer *co = dp->co;

	for (uint32_t p = 0; co && p < co->nparts; p++)
		for (uint32_t i = 0; i < co->nsi; i++)
			for (const struct dp_bundle *b = co->part[p].str[i].fl_head; b; b = b->next)
				for (uint32_t k = 0; k < b->n; k++) {
					if (b->m[k].s)
						dp_ids_add(b->m[k].s->id, ids, cap, n, more);
					else
						(*more)++;
				}
}

void co_running_past(struct datapath *dp, uint64_t now, uint64_t min_ns, uint64_t *ids, uint32_t cap, uint32_t *n,
		     uint32_t *more)
{
	struct coalescer *co = dp->co;

	for (uint32_t p = 0; co && p < co->nparts; p++)
		for (uint32_t i = 0; i < co->nsi; i++) {
			uint64_t t = 0;
			struct dp_bundle *b = timed_bundle(co, &co->part[p].str[i], &t);

			if (!b || now <= t || now - t <= min_ns)
				continue;
			for (uint32_t k = 0; k < b->n; k++)
				if (b->m[k].s)
					dp_ids_add(b->m[k].s->id, ids, cap, n, more);
		}
}

/*
 * End hung bundle b (co_overdue's, running since `since`; dp->fatal is
 * set): its members get OOO_EHUNG, and dp->fatal_why names its sessions
 * (each once, the first few).
 */
void co_end_hung(struct datapath *dp, struct dp_bundle *b, uint64_t now, uint64_t since)
{
	struct coalescer *co = dp->co;
	char who[64] = "";
	size_t w = 0, cap = sizeof(who);
	uint64_t ids[EXEC_HUNG_MAX];
	uint32_t more, nid = co_bundle_sessions(b, ids, EXEC_HUNG_MAX, &more);

	dp_report_hung(dp, ids, nid, more, now - since);

	for (uint32_t k = 0; k < nid && k < 4 && w < cap; k++) {
		int n = snprintf(who + w, cap - w, "%s%llu", k ? ", " : "", (unsigned long long)ids[k]);

		if (n < 0)
			break;
		w += (size_t)n;
	}
	if (nid + more > 4 && w < cap)
		snprintf(who + w, cap - w, ", ...");
	snprintf(dp->fatal_why, sizeof(dp->fatal_why),
		 "a bundle of %u launch(es) ran %llu ms, past kernel_time_limit_ms %llu a kernel (sessions %.32s)", b->n,
		 (unsigned long long)((now - since) / 1000000u), (unsigned long long)(dp->kernel_limit_ns / 1000000u),
		 who);
	b->hung = true;
	(void)reap_stream(dp, &co->part[b->part].str[b->stream], now);
}

static bool reap_bundles(struct datapath *dp, uint64_t now)
{
	struct coalescer *co = dp->co;
	bool moved = false;

	for (uint32_t p = 0; p < co->nparts; p++)
		for (uint32_t i = 0; i < co->nsi; i++)
			moved |= reap_stream(dp, &co->part[p].str[i], now);
	return moved;
}

bool co_progress(struct datapath *dp, uint64_t now)
{
	struct coalescer *co = dp->co;
	bool moved;
	size_t nb;

	if (!co)
		return false;
	moved = false;
	drain_compiles(dp);
	for (struct dp_queue *q = co->bl_head, *next; q; q = next) {
		next = q->bl_next;
		if (!q->in_sched)
			moved |= advance(dp, q, now);
	}
	do {
		nb = sched_poll(co->sched, now, co->out, CO_POLL_MAX, NULL);
		for (size_t i = 0; i < nb && !dp->fatal; i++)
			dispatch(dp, &co->out[i], now);
		moved |= nb > 0;
		/* a dispatch moved its members' next launches into the window: poll again (in-flight slots bound it) */
	} while (nb > 0 && !dp->fatal);
	if (co->nstreams > 1 && co->st.bundles - co->issue_b0 >= CO_ISSUE_EVERY) {
		/*
		 * What issuing one bundle costs: the serving loop's busy time per
		 * bundle (all of its commands included) or the launcher's (the
		 * driver calls), whichever is more: the two run side by side.
		 */
		uint64_t bn = co->st.bundles - co->issue_b0, l = atomic_load_explicit(&co->launch_ns, memory_order_relaxed);
		uint64_t w = dp->work_ns > co->issue_w0 ? (dp->work_ns - co->issue_w0) / bn : 0;
		uint64_t li = (l - co->issue_l0) / bn;

		if (w || li)
			sched_set_issue_ns(co->sched, w > li ? w : li);
		co->issue_b0 = co->st.bundles;
		co->issue_w0 = dp->work_ns;
		co->issue_l0 = l;
	}
	return moved;
}

bool co_reap(struct datapath *dp, uint64_t now)
{
	if (!dp->co)
		return false;
	co_results(dp);
	return reap_bundles(dp, now);
}

bool co_busy(const struct datapath *dp)
{
	const struct coalescer *co = dp->co;

	return co && (co->nflight || co->bl_head);
}

uint64_t co_launch_ns(const struct datapath *dp)
{
	return dp->co ? atomic_load_explicit(&dp->co->launch_ns, memory_order_relaxed) : 0;
}

/* ---- queues and sessions ------------------------------------------------------------- */

/* The partition of a tenant class's bundles: its reserved one, else the shared one (0). */
static uint32_t part_of(const struct coalescer *co, const char *klass)
{
	for (uint32_t i = 1; i < co->nparts; i++)
		if (!strncmp(co->part[i].klass, klass, sizeof(co->part[i].klass) - 1))
			return i;
	return 0;
}

/*
 * Until no bundle is in flight on any partition (held work stays held):
 * the launcher's queue empty, every stream synchronized, every bundle
 * reaped. Control-message time: it blocks the serving loop while the GPU
 * finishes what it has.
 */
static void co_quiesce(struct datapath *dp)
{
	struct coalescer *co = dp->co;

	launcher_drain(dp);
	for (uint32_t p = 0; p < co->nparts; p++)
		for (uint32_t i = 0; i < co->nsi; i++)
			if (co->part[p].str[i].fl_head)
				dp->api->p_cuStreamSynchronize(co->part[p].str[i].stream);
	co->draining = true;
	while (co->nflight && !dp->fatal)
		reap_bundles(dp, dp_now_ns());
	co->draining = false;
}

/* Each stream's CUDA priority, stream by stream (prio: CO_MAX_SI entries). */
static const int *co_stream_prios(const struct coalescer *co, int *prio)
{
	for (uint32_t i = 0; i < co->nsi; i++)
		prio[i] = co->tier_prio[i / co->nstreams];
	return prio;
}

/* Partition p's streams and SMs from set index i of s (NULL: the primary context's streams, every SM). */
static void part_install(struct coalescer *co, uint32_t p, const struct partition_set *s, uint32_t i)
{
	struct co_part *pt = &co->part[p];

	memset(pt->next_stream, 0, sizeof(pt->next_stream));
	for (uint32_t k = 0; k < CO_MAX_SI; k++) {
		struct co_stream *cs = &pt->str[k];

		*cs = (struct co_stream){ 0 };
		if (k < co->nsi)
			cs->stream = s ? part_stream_k(s, i, k) : co->prim[k];
	}
	pt->sms = s ? part_sms(s, i) : co->sms;
}

int co_partitions(struct datapath *dp, const struct co_plan_part *plan, uint32_t n, uint32_t *got,
		  uint32_t *granule, char *why, size_t cap)
{
	struct coalescer *co = dp->co;
	struct partition_set *ns = NULL;
	uint32_t sms[CO_PLAN_MAX];
	int sp[CO_MAX_SI];
	bool same;
	int r;

	if (!co && n == 0) {
		got[0] = 0; /* nothing to partition: every launch runs as it comes */
		*granule = 0;
		return 0;
	}
	if (!co) {
		snprintf(why, cap, "the coalescer is not running (fuse = no, or it failed to start)");
		return -ENOTSUP;
	}
	if (n > CO_PLAN_MAX) {
		snprintf(why, cap, "%u reserved partitions asked, at most %u", n, CO_PLAN_MAX);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!plan[i].klass[0] || !memchr(plan[i].klass, 0, sizeof(plan[i].klass)) || !plan[i].sms) {
			snprintf(why, cap, "reserved partition %u: no class name, or 0 SMs", i);
			return -EINVAL;
		}
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(plan[i].klass, plan[j].klass)) {
				snprintf(why, cap, "class '%s' is given two partitions", plan[i].klass);
				return -EINVAL;
			}
		sms[i] = plan[i].sms;
	}
	same = n + 1 == co->nparts;
	for (uint32_t i = 0; same && i < n; i++)
		same = !strcmp(plan[i].klass, co->part[i + 1].klass) && plan[i].sms == co->part[i + 1].asked;
	if (!same && n) {
		/* the new green contexts first, beside the old ones (green contexts may overlap): a failure changes nothing */
		r = part_create(dp->api, co->cudev, sms, NULL, n, false, &ns, why, cap);
		if (r == 0 && (r = part_set_streams(ns, co->nsi, co_stream_prios(co, sp), why, cap)) < 0) {
			part_free(ns);
			ns = NULL;
		}
		if (r < 0)
			return r;
	}
	if (!same) {
		/* nothing in flight while streams and partitions change; held launches stay held, in order */
		co_quiesce(dp);
		if (dp->fatal) {
			part_free(ns); /* the context is lost: the executor exits, its bundles with it */
			snprintf(why, cap, "the CUDA context was lost while the bundles in flight finished");
			return -EIO;
		}
		part_free(co->pset);
		co->pset = ns;
		co->nparts = n + 1;
		part_install(co, 0, ns, n);
		co->part[0].klass[0] = '\0';
		for (uint32_t i = 0; i < n; i++) {
			struct co_part *pt = &co->part[i + 1];

			if (strcmp(pt->klass, plan[i].klass)) {
				co->st.parts[i + 1].bundles = co->st.parts[i + 1].busy_ns = 0; /* another class's now */
				snprintf(pt->klass, sizeof(pt->klass), "%s", plan[i].klass);
			}
			pt->asked = plan[i].sms;
			part_install(co, i + 1, ns, i);
		}
		for (uint32_t i = n + 1; i < CO_MAX_PARTS; i++) {
			co->part[i] = (struct co_part){ 0 };
			co->st.parts[i].bundles = co->st.parts[i].busy_ns = 0;
		}
		/* every queue to its class's partition now: its waiting launches move with it */
		for (uint32_t gid = 0; gid < CO_MAX_QUEUES; gid++) {
			struct dp_queue *q = co->qtab[gid];
			uint32_t np;

			if (!q)
				continue;
			np = q->cls < co->ncls ? part_of(co, co->cname[q->cls]) : 0;
			if (np != q->part) {
				q->part = (uint8_t)np;
				sched_move_queue(co->sched, gid, np);
			}
		}
	}
	for (uint32_t i = 0; i <= n; i++)
		got[i] = co->part[i == n ? 0 : i + 1].sms;
	*granule = co->pset ? part_granule(co->pset) : 0;
	return 0;
}

void co_queue_created(struct datapath *dp, struct dp_queue *q, const char *klass)
{
	struct coalescer *co = dp->co;
	uint32_t i;

	q->gid = UINT32_MAX;
	if (!co)
		return;
	if (co->nqfree)
		q->gid = co->qfree[--co->nqfree];
	if (q->gid != UINT32_MAX)
		co->qtab[q->gid] = q;
	for (i = 0; i < co->ncls; i++)
		if (!strncmp(co->cname[i], klass, sizeof(co->cname[i]) - 1))
			break;
	if (i == co->ncls && co->ncls < OOO_SCHED_CLASSES - 1) {
		snprintf(co->cname[i], sizeof(co->cname[i]), "%s", klass);
		co->ncls++;
	} else if (i == co->ncls) {
		i = OOO_SCHED_CLASSES - 1; /* the overflow row */
		co->cls_over = true;
	}
	q->cls = (uint8_t)i;
	if (q->slo_us > co->st.classes[i].slo_us)
		co->st.classes[i].slo_us = q->slo_us;
	q->part = (uint8_t)part_of(co, klass);
}

/* Take q's head launch back from the scheduler: it will be issued unfused. */
static void queue_unsched(struct coalescer *co, struct dp_queue *q)
{
	if (q->in_sched) {
		uint64_t id;

		sched_drop_queue(co->sched, q->gid, &id, 1);
		q->in_sched = false;
	}
	q->sw_wait = false;
}

/* Issue q's held commands now, in order, unfused, on its own stream. */
static void queue_flush(struct datapath *dp, struct dp_queue *q)
{
	struct coalescer *co = dp->co;

	queue_unsched(co, q);
	while (q->bl_len) {
		issue_held(dp, q, &q->bl[q->bl_head], q->bl_head);
		bl_pop(co, q);
	}
}

void co_queue_destroy(struct datapath *dp, struct dp_queue *q)
{
	struct coalescer *co = dp->co;

	if (!co)
		return;
	if (q->tier_live)
		atomic_fetch_sub_explicit(&tiers_live[prio_tier(q->prio)], 1, memory_order_relaxed);
	q->tier_live = false;
	queue_flush(dp, q);
	launcher_drain(dp); /* its bundles' members name it: their launch errors are posted before it goes */
	bl_unlist(co, q);
	if (q->gid != UINT32_MAX) {
		co->qtab[q->gid] = NULL;
		co->qfree[co->nqfree++] = q->gid;
		q->gid = UINT32_MAX;
	}
	co_bundle_put(dp, q->last);
	q->last = NULL;
	if (q->sw_ev)
		dp->api->p_cuEventDestroy(q->sw_ev);
	q->sw_ev = NULL;
	free(q->bl);
	free(q->blparams);
	q->bl = NULL;
	q->blparams = NULL;
}

bool co_flush_issue(struct datapath *dp, struct dp_session *s)
{
	struct coalescer *co = dp->co;
	bool any = false, moved = true;

	if (!co)
		return false;
	/* issue held heads whose events allow it, round after round, so records and waits keep their order */
	for (int i = 0; i < DP_MAX_QUEUES; i++) {
		if (s->queues[i])
			queue_unsched(co, s->queues[i]);
	}
	while (moved) {
		moved = false;
		for (int i = 0; i < DP_MAX_QUEUES; i++) {
			struct dp_queue *q = s->queues[i];

			while (q && q->bl_len && event_ready(s, &q->bl[q->bl_head])) {
				issue_held(dp, q, &q->bl[q->bl_head], q->bl_head);
				bl_pop(co, q);
				moved = true;
			}
		}
	}
	for (int i = 0; i < DP_MAX_QUEUES; i++) {
		struct dp_queue *q = s->queues[i];

		if (q && (q->bl_len || q->last)) {
			queue_flush(dp, q); /* what is left (an event whose record never comes): as it is */
			any = true;
		}
	}
	/* its bundles' members name it (launch errors): the launcher's results first */
	launcher_drain(dp);
	return any;
}

CUevent co_queue_last_end(const struct dp_queue *q)
{
	return q->last && !q->last->done && q->last->lstatus == 0 ? q->last->end : NULL;
}

void co_flush_session(struct datapath *dp, struct dp_session *s)
{
	/* wait for this session's bundles only (the others' ahead of them on the stream, in order) */
	if (!co_flush_issue(dp, s))
		return;
	for (int i = 0; i < DP_MAX_QUEUES; i++) {
		CUevent e = s->queues[i] ? co_queue_last_end(s->queues[i]) : NULL;

		if (e)
			dp_sync(dp, NULL, e);
	}
}

/* ---- start, stop, counters ------------------------------------------------------------- */

/* Start one of the coalescer's threads on fn (which frees its thread_ctx). -errno and why. */
static int thread_start(struct coalescer *co, const struct cuda_api *api, void *(*fn)(void *), pthread_t *thr,
			const char *what, char *why, size_t cap)
{
	struct thread_ctx *tc = malloc(sizeof(*tc));
	int r;

	if (!tc) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	tc->co = co;
	tc->api = api;
	if ((r = pthread_create(thr, NULL, fn, tc)) != 0) {
		free(tc);
		snprintf(why, cap, "cannot start the %s thread: %s", what, strerror(r));
		return -r;
	}
	return 0;
}

extern const char exec_copy_ptx[]; /* copy.ptx, embedded (build/gen/copy_ptx.c) */

/*
 * Copies as launches (coalesce.h): parse the copy kernel, load it alone and
 * queue its fused form for the compiler. Anything missing only leaves
 * copies to the copy engines, as without it; said once on stderr.
 */
static void copy_start(struct datapath *dp)
{
	struct coalescer *co = dp->co;
	const struct cuda_api *api = dp->api;
	const char *name = "oood_copy";
	const struct ptx_kernel *pk;
	struct co_pmod *pm = NULL;
	struct co_class *c = NULL;
	struct jit_body b;
	char err[256] = "out of memory";
	int can = 0;

	if (!dp->fuse_copies)
		return; /* oood.conf fuse_copies = no */
	if (api->p_cuDeviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, co->cudev) !=
		    CUDA_SUCCESS ||
	    !can) {
		fprintf(stderr, "oood[executor]: fuse_copies = yes, but the device does not reach registered host memory "
				"at its host address: small copies go to the copy engines\n");
		return;
	}
	if (!(pm = calloc(1, sizeof(*pm))))
		goto fail;
	if (ptx_parse(exec_copy_ptx, strlen(exec_copy_ptx), &pm->m, err, sizeof(err)) < 0) {
		free(pm);
		pm = NULL;
		goto fail;
	}
	pm->refs = 1;
	pk = ptx_kernel_find(pm->m, name);
	if (!pk || !pk->fusible || pk->param_bytes != 3 * sizeof(uint64_t)) {
		snprintf(err, sizeof(err), "%s is not a fusible kernel of 24 parameter bytes", name);
		goto fail;
	}
	{
		CUjit_option opt[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
		void *val[2] = { err, (void *)(uintptr_t)sizeof(err) };
		CUresult r;

		err[0] = 0;
		if ((r = api->p_cuModuleLoadDataEx(&co->copy_mod, exec_copy_ptx, 2, opt, val)) != CUDA_SUCCESS ||
		    (r = api->p_cuModuleGetFunction(&co->copy_fn, co->copy_mod, name)) != CUDA_SUCCESS) {
			if (!err[0])
				snprintf(err, sizeof(err), "loading it: CUDA error %d", (int)r);
			co->copy_fn = NULL;
			goto fail;
		}
	}
	if (!(c = calloc(1, sizeof(*c))) || !(c->kname = strdup(name))) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	b = (struct jit_body){ .mod = pm->m, .kernel = pk->name };
	jit_fuse_key(&b, 1, NULL, c->key);
	c->id = ++co->next_id;
	c->pm = pm; /* the parse's reference */
	c->static_smem = pk->static_smem;
	c->refs = 1; /* the coalescer's, for as long as it runs */
	c->next = co->classes;
	co->classes = c;
	co->nclasses++;
	co->copy = c;
	compile_queue(co, c, 0);
	return;
fail:
	fprintf(stderr, "oood[executor]: small copies go to the copy engines, not fused: the copy kernel: %s\n", err);
	if (c)
		free(c->kname);
	free(c);
	pmod_put(pm);
	if (co->copy_mod)
		api->p_cuModuleUnload(co->copy_mod);
	co->copy_mod = NULL;
	co->copy_fn = NULL;
}

int co_start(struct datapath *dp, char *why, size_t cap)
{
	const struct cuda_api *api = dp->api;
	struct sched_cfg cfg = {
		.max_queues = CO_MAX_QUEUES,
		.max_items = CO_MAX_QUEUES,
		.partitions = CO_MAX_PARTS,
		.slack_margin_ns = 200000,
		.idle_margin_ns = 20000,
		.share_window_ns = CO_SHARE_WINDOW_NS,
		.default_cost_ns = 20000,
		.ewma_shift = 3,
	};
	struct coalescer *co = calloc(1, sizeof(*co));
	CUdevice d;
	int v = 0, r;

	if (!co) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	dp->co = co;
	co->nstreams = dp->streams < 1 ? 1 : dp->streams > CO_MAX_STREAMS ? CO_MAX_STREAMS : dp->streams;
	co->ntiers = 1;
	co->max_inflight = co->nstreams * CO_INFLIGHT_PER_STREAM;
	if (co->max_inflight < CO_INFLIGHT)
		co->max_inflight = CO_INFLIGHT;
	cfg.max_inflight = co->max_inflight;
	co->reserve = dp->urgent_reserve < CO_RESERVE_MAX ? dp->urgent_reserve : CO_RESERVE_MAX;
	co->burst_gap_ns = dp->burst_wait_ns;
	cfg.reserve_inflight = co->reserve;
	cfg.streams = co->nstreams;
	co->lanes = dp->spread_lanes && co->nstreams > 1;
	cfg.lanes = co->lanes ? co->nstreams : 1;
	pthread_mutex_init(&co->mu, NULL);
	pthread_cond_init(&co->cv, NULL);
	if (api->p_cuCtxGetCurrent(&co->ctx) != CUDA_SUCCESS || !co->ctx || api->p_cuCtxGetDevice(&d) != CUDA_SUCCESS ||
	    api->p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) != CUDA_SUCCESS || v <= 0) {
		snprintf(why, cap, "no current CUDA context");
		r = -ENODEV;
		goto fail;
	}
	co->cudev = d;
	co->sms = (uint32_t)v;
	co->nparts = 1;
	co->part[0].sms = co->sms;
	co->st.streams = co->nstreams;
	if ((r = sched_new(&cfg, &co->sched)) < 0) {
		snprintf(why, cap, "scheduler: %s", wire_strerror(r));
		goto fail;
	}
	co->qtab = calloc(CO_MAX_QUEUES, sizeof(*co->qtab));
	co->qfree = calloc(CO_MAX_QUEUES, sizeof(*co->qfree));
	if (!co->qtab || !co->qfree) {
		snprintf(why, cap, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < CO_MAX_QUEUES; i++)
		co->qfree[i] = CO_MAX_QUEUES - 1 - i;
	co->nqfree = CO_MAX_QUEUES;
	{
		/* the tiers' CUDA priorities, the middle one as dp_queue maps the default's */
		int least = 0, greatest = 0;

		if (api->p_cuCtxGetStreamPriorityRange(&least, &greatest) == CUDA_SUCCESS && least != greatest) {
			co->ntiers = CO_TIERS;
			co->tier_prio[0] = least;
			co->tier_prio[1] = dp_cuda_priority(least, greatest, (int)OOO_PRIORITY_DEFAULT);
			co->tier_prio[2] = greatest;
		}
	}
	co->nsi = co->ntiers * co->nstreams;
	for (uint32_t i = 0; i < co->nsi; i++) {
		if (api->p_cuStreamCreateWithPriority(&co->prim[i], CU_STREAM_NON_BLOCKING,
						      co->tier_prio[i / co->nstreams]) != CUDA_SUCCESS) {
			co->prim[i] = NULL;
			snprintf(why, cap, "cannot make the partition's %u streams", co->nsi);
			r = -ENOMEM;
			goto fail;
		}
		co->part[0].str[i].stream = co->prim[i];
	}
	if (api->p_cuMemAlloc(&co->dev, (size_t)(co->max_inflight + co->reserve) * CO_SLOT_BYTES) != CUDA_SUCCESS ||
	    api->p_cuMemHostAlloc((void **)&co->host, (size_t)(co->max_inflight + co->reserve) * CO_SLOT_BYTES, 0) !=
		    CUDA_SUCCESS) {
		snprintf(why, cap, "cannot allocate the partition's descriptor memory");
		r = -ENOMEM;
		goto fail;
	}
	if (dp->chain_launches) {
		/* every stream's chain counters, zero to start with (the launcher knows their values from then on) */
		size_t bytes = (size_t)CO_MAX_PARTS * CO_MAX_SI * CO_CHAIN_WORDS * 4u;

		/* (synchronized: the bundles' streams are non-blocking, the memset is not ordered before them) */
		if (api->p_cuMemAlloc(&co->chain_dev, bytes) != CUDA_SUCCESS ||
		    api->p_cuMemsetD32(co->chain_dev, 0, bytes / 4u) != CUDA_SUCCESS ||
		    api->p_cuCtxSynchronize() != CUDA_SUCCESS) {
			snprintf(why, cap, "cannot allocate the chain counters (%zu bytes of device memory)", bytes);
			r = -ENOMEM;
			goto fail;
		}
		co->chain = true;
	}
	if ((r = thread_start(co, api, compile_main, &co->thr, "compile", why, cap)) < 0)
		goto fail;
	co->thr_started = true;
	if ((r = thread_start(co, api, launch_main, &co->lthr, "launcher", why, cap)) < 0)
		goto fail;
	co->lthr_started = true;
	co->ncls = 0;
	co->start_ns = dp_now_ns();
	copy_start(dp);
	return 0;
fail:
	co_stop(dp);
	return r;
}

static void co_job_drop(const struct cuda_api *api, struct co_job *j)
{
	if (j->mod)
		api->p_cuModuleUnload(j->mod);
	j->c->refs--;
	free(j);
}

void co_stop(struct datapath *dp)
{
	struct coalescer *co = dp->co;
	const struct cuda_api *api = dp->api;

	if (!co)
		return;
	if (co->lthr_started) {
		/* it issues what was pushed, then stops */
		atomic_store_explicit(&co->lstop, true, memory_order_release);
		atomic_store(&co->lsleep, 0);
		futex_op(&co->lsleep, FUTEX_WAKE_PRIVATE, 1);
		pthread_join(co->lthr, NULL);
		co_results(dp);
	}
	if (co->thr_started) {
		pthread_mutex_lock(&co->mu);
		co->stop = true;
		pthread_cond_signal(&co->cv);
		pthread_mutex_unlock(&co->mu);
		pthread_join(co->thr, NULL);
	}
	for (uint32_t p = 0; p < co->nparts; p++)
		for (uint32_t i = 0; i < CO_MAX_SI; i++) {
			struct co_stream *cs = &co->part[p].str[i];

			if (cs->stream)
				api->p_cuStreamSynchronize(cs->stream);
			while (cs->fl_head) {
				struct dp_bundle *b = cs->fl_head;

				cs->fl_head = b->next;
				b->done = true;
				co_bundle_put(dp, b);
			}
		}
	for (struct fairq_node *n; (n = fairq_take(&co->todo));)
		co_job_drop(api, (struct co_job *)n);
	while (co->done) {
		struct co_job *j = co->done;

		co->done = j->next;
		co_job_drop(api, j);
	}
	while (co->classes) {
		struct co_class *c = co->classes;

		co->classes = c->next;
		class_free(co, c, api);
	}
	co->copy = NULL;
	if (co->copy_mod)
		api->p_cuModuleUnload(co->copy_mod);
	while (co->spare) {
		struct dp_bundle *b = co->spare;

		co->spare = b->next;
		bundle_free(b);
	}
	co->nspare = 0;
	for (int k = 0; k < 2; k++) {
		while (co->pool[k].n)
			api->p_cuEventDestroy(co->pool[k].ev[--co->pool[k].n]);
		free(co->pool[k].ev);
	}
	if (co->host)
		api->p_cuMemFreeHost(co->host);
	if (co->dev)
		api->p_cuMemFree(co->dev);
	if (co->chain_dev)
		api->p_cuMemFree(co->chain_dev);
	part_free(co->pset);
	for (uint32_t i = 0; i < CO_MAX_SI; i++)
		if (co->prim[i])
			api->p_cuStreamDestroy(co->prim[i]);
	sched_free(co->sched);
	free(co->qtab);
	free(co->qfree);
	pthread_mutex_destroy(&co->mu);
	pthread_cond_destroy(&co->cv);
	free(co);
	dp->co = NULL;
}

void co_class_stage(struct datapath *dp, uint8_t cls, enum ooo_cmd_stage st, uint64_t ns, uint64_t n)
{
	if (dp->co && cls < OOO_SCHED_CLASSES && st < OOO_CMD_STAGES)
		dp->co->st.classes[cls].cmd_stage_hist[st][ooo_tm_bucket(ns)] += n;
}

void co_counters(const struct datapath *dp, uint64_t now, struct ooo_sched_counters *out)
{
	const struct coalescer *co = dp->co;
	struct sched_stats ss;
	struct timespec ts;

	if (co)
		*out = co->st;
	else
		memset(out, 0, sizeof(*out));
	out->snapshot_ns = now;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
		out->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	out->loops = dp->loops;
	out->work_ns = dp->work_ns;
	out->commands = dp->commands;
	out->take_ns = dp->take_ns;
	out->dispatch_ns = dp->dispatch_ns;
	out->launch_ns = co_launch_ns(dp);
	memcpy(out->cmd_submit_hist, dp->submit_hist, sizeof(out->cmd_submit_hist));
	memcpy(out->cmd_queue_hist, dp->queue_hist, sizeof(out->cmd_queue_hist));
	memcpy(out->cmd_run_hist, dp->run_hist, sizeof(out->cmd_run_hist));
	memcpy(out->cmd_notify_hist, dp->notify_hist, sizeof(out->cmd_notify_hist));
	memcpy(out->bundle_gpu_hist, dp->gpu_hist, sizeof(out->bundle_gpu_hist));
	out->submit_stamp_bad = dp->submit_bad;
	if (!co)
		return;
	out->up_ns = now - co->start_ns;
	out->npartitions = co->nparts;
	for (uint32_t i = 0; i < co->nparts; i++) {
		out->parts[i].sms = co->part[i].sms;
		out->parts[i].max_inflight = co->max_inflight;
		out->parts[i].reserve_inflight = co->reserve;
		memcpy(out->parts[i].name, co->part[i].klass, sizeof(out->parts[i].name));
	}
	sched_get_stats(co->sched, &ss);
	out->dispatch_full = ss.dispatch_full;
	out->dispatch_slack = ss.dispatch_slack;
	out->dispatch_idle = ss.dispatch_idle;
	out->dispatch_alone = ss.dispatch_alone;
	out->unfused_nopay = ss.dispatch_nopay;
	out->nclasses = co->ncls;
	if (co->cls_over || co->st.classes[OOO_SCHED_CLASSES - 1].launches)
		out->nclasses = OOO_SCHED_CLASSES; /* its commands count there even when none is a coalesced launch */
	for (uint32_t i = 0; i < out->nclasses; i++)
		memcpy(out->classes[i].name, co->cname[i], sizeof(out->classes[i].name));
}
