// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Run-queue delay of the processes oood tracks (executors, tenants, traced
 * pids): the time from a thread's wakeup, or its preemption while runnable,
 * until it runs again, as a log2 histogram per tgid in `rq`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "telemetry.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile bool trace_all = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* OOO_TM_TRACK_* */
} pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct ooo_tm_rq);
} rq SEC(".maps");

/* When each runnable thread was queued, by tid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} queued SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ooo_tm_drops);
} drops SEC(".maps");

/* The kernel's TASK_RUNNING */
#define OOO_TASK_RUNNING 0

struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (unsigned int)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

static __always_inline bool tracked(__u32 tgid)
{
	__u32 *f;

	if (trace_all)
		return true;
	f = bpf_map_lookup_elem(&pids, &tgid);
	return f && (*f & OOO_TM_TRACK_SCHED);
}

static __always_inline int enqueue(struct task_struct *t)
{
	__u32 tgid = BPF_CORE_READ(t, tgid), tid = BPF_CORE_READ(t, pid);
	__u64 now;

	if (!tid || !tracked(tgid))
		return 0;
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&queued, &tid, &now, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	return enqueue(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	return enqueue(p);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 tid, tgid;
	__u64 *ts, now, d;
	struct ooo_tm_rq *r;

	/* preempted while runnable: it waits on the run queue from now */
	if (task_state(prev) == OOO_TASK_RUNNING)
		enqueue(prev);
	tid = BPF_CORE_READ(next, pid);
	ts = bpf_map_lookup_elem(&queued, &tid);
	if (!ts)
		return 0;
	now = bpf_ktime_get_ns();
	d = now > *ts ? now - *ts : 0;
	bpf_map_delete_elem(&queued, &tid);
	tgid = BPF_CORE_READ(next, tgid);
	r = bpf_map_lookup_elem(&rq, &tgid);
	if (!r) {
		struct ooo_tm_rq z = {};
		struct ooo_tm_drops *dr;
		__u32 k = 0;

		bpf_map_update_elem(&rq, &tgid, &z, BPF_NOEXIST);
		r = bpf_map_lookup_elem(&rq, &tgid);
		if (!r) {
			dr = bpf_map_lookup_elem(&drops, &k);
			if (dr)
				__sync_fetch_and_add(&dr->procs_full, 1);
			return 0;
		}
	}
	__sync_fetch_and_add(&r->samples, 1);
	__sync_fetch_and_add(&r->total_ns, d);
	if (d > r->max_ns)
		r->max_ns = d; /* racy max: close enough for a gauge */
	__sync_fetch_and_add(&r->hist[ooo_tm_bucket(d) & (OOO_TM_HIST - 1)], 1);
	return 0;
}
