/* SPDX-License-Identifier: MIT */
/*
 * Records shared by the BPF programs (bpf/cuda.bpf.c, bpf/sched.bpf.c) and
 * oood (daemon/telemetry.c). Fixed-size types only: the same layout on both
 * sides of the map.
 *
 * Histograms are log2 of microseconds: bucket 0 counts values below 1 us,
 * bucket b (1..OOO_TM_HIST-1) values in [2^(b-1), 2^b) us; the last bucket
 * also takes everything larger.
 */
#ifndef OOO_BPF_TELEMETRY_H
#define OOO_BPF_TELEMETRY_H

#include "../proto/hist.h" /* OOO_TM_HIST, ooo_tm_bucket */

#define OOO_TM_COMM 16

/* The synchronising calls timed by a uretprobe. */
enum ooo_tm_fn {
	OOO_TM_STREAM_SYNC = 0, /* cuStreamSynchronize, _ptsz */
	OOO_TM_CTX_SYNC = 1,    /* cuCtxSynchronize, _v2 */
	OOO_TM_EVENT_SYNC = 2,  /* cuEventSynchronize */
	OOO_TM_NSYNC = 3,
	OOO_TM_ALLOC = 3,       /* cuMemAlloc_v2: not a sync, uses the same entry map */
};

/* Value of the pid filter maps (key: tgid). */
#define OOO_TM_TRACK_CUDA 1u  /* count this process's libcuda calls */
#define OOO_TM_TRACK_SCHED 2u /* sample its run-queue delay */

/* Per process (key: tgid), map `procs` of the cuda programs. */
struct ooo_tm_proc {
	__u64 launches;       /* cuLaunchKernel, cuLaunchKernelEx and their _ptsz */
	__u64 graph_launches; /* cuGraphLaunch, _ptsz */
	__u64 syncs[OOO_TM_NSYNC]; /* returned sync calls, by enum ooo_tm_fn */
	__u64 sync_ns;        /* time spent in them */
	__u64 slow_syncs;     /* of them, slower than the threshold (one ring event each) */
	__u64 allocs;         /* cuMemAlloc_v2 calls that returned CUDA_SUCCESS */
	__u64 alloc_failed;   /* ... that returned an error */
	__u64 alloc_bytes;    /* bytes of the successful ones */
	__u64 frees;          /* cuMemFree_v2 calls */
	__u64 copies;         /* cuMemcpy, cuMemcpyAsync, HtoD/DtoH (+Async) calls */
	__u64 copy_bytes;
	__u64 first_ns;       /* bpf_ktime_get_ns of the first and last call seen */
	__u64 last_ns;
	__u64 last_launch_ns;
	__u64 gap_hist[OOO_TM_HIST];  /* launch inter-arrival time */
	__u64 sync_hist[OOO_TM_HIST]; /* time in a sync call */
	char comm[OOO_TM_COMM];       /* of the thread that created the record */
};

/* Per process (key: tgid), map `rq` of the sched programs. */
struct ooo_tm_rq {
	__u64 samples;
	__u64 total_ns;
	__u64 max_ns;
	__u64 hist[OOO_TM_HIST]; /* wakeup (or preemption) to running */
};

/* Ring buffer record: one sync call slower than the threshold. */
struct ooo_tm_event {
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 fn;  /* enum ooo_tm_fn */
	__u32 pad;
	__u64 dur_ns;
	__u64 end_ns; /* bpf_ktime_get_ns at return */
	char comm[OOO_TM_COMM];
};

/* Counters of what the programs could not record (one array element). */
struct ooo_tm_drops {
	__u64 procs_full;  /* a new process did not fit in `procs` / `rq` */
	__u64 ring_full;   /* a slow-sync event did not fit in the ring buffer */
	__u64 inflight_lost; /* a return without its entry (evicted, or attached mid-call) */
};

#endif
