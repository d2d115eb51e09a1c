// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * uprobes on libcuda.so.1: per-process launch counts and inter-arrival
 * times, sync waits, allocations and copies. oood attaches the programs
 * (daemon/telemetry.c) to each variant of each function; this file does not
 * name the library or the symbols. Counting runs in the probe: user space
 * only reads the `procs` map and consumes the `events` ring buffer.
 * (BPF_KPROBE and BPF_KRETPROBE serve uprobes too: libbpf 1.1 has no
 * BPF_UPROBE.)
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "telemetry.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by oood before load. */
const volatile bool trace_all = false;   /* every process, not only those in `pids` */
const volatile __u64 slow_ns = 10000000; /* a sync longer than this becomes a ring event */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* resized by oood */
	__type(key, __u32);        /* tgid */
	__type(value, __u32);      /* OOO_TM_TRACK_* */
} pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct ooo_tm_proc);
} procs SEC(".maps");

struct entry {
	__u64 ts;
	__u64 arg; /* cuMemAlloc_v2: the size asked for */
};

/* Calls in progress, by thread and function (a probed function that calls
 * another keeps both entries). LRU: a thread that dies inside a call leaves
 * an entry that is evicted rather than filling the map. */
struct inflight_key {
	__u64 id; /* pid_tgid */
	__u32 fn;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct inflight_key);
	__type(value, struct entry);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* A zeroed record to create `procs` entries from (too large for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ooo_tm_proc);
} zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ooo_tm_drops);
} drops SEC(".maps");

static __always_inline struct ooo_tm_drops *drop_counters(void)
{
	__u32 k = 0;

	return bpf_map_lookup_elem(&drops, &k);
}

static __always_inline bool tracked(__u32 tgid)
{
	__u32 *f;

	if (trace_all)
		return true;
	f = bpf_map_lookup_elem(&pids, &tgid);
	return f && (*f & OOO_TM_TRACK_CUDA);
}

static __always_inline struct ooo_tm_proc *proc_get(__u32 tgid, __u64 now)
{
	struct ooo_tm_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	struct ooo_tm_drops *d;
	__u32 k = 0;

	if (p)
		return p;
	p = bpf_map_lookup_elem(&zero, &k); /* never written: always zero */
	if (!p)
		return NULL;
	/* EEXIST: another thread of the process made it first */
	bpf_map_update_elem(&procs, &tgid, p, BPF_NOEXIST);
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p) {
		d = drop_counters();
		if (d)
			__sync_fetch_and_add(&d->procs_full, 1);
		return NULL;
	}
	if (!p->first_ns) {
		p->first_ns = now;
		bpf_get_current_comm(p->comm, sizeof(p->comm));
	}
	return p;
}

SEC("uprobe")
int BPF_KPROBE(launch)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 now, prev;
	struct ooo_tm_proc *p;

	if (!tracked(tgid))
		return 0;
	now = bpf_ktime_get_ns();
	p = proc_get(tgid, now);
	if (!p)
		return 0;
	__sync_fetch_and_add(&p->launches, 1);
	/* threads of one process race here; a lost gap sample is acceptable */
	prev = p->last_launch_ns;
	p->last_launch_ns = now;
	p->last_ns = now;
	if (prev && now > prev)
		__sync_fetch_and_add(&p->gap_hist[ooo_tm_bucket(now - prev) & (OOO_TM_HIST - 1)], 1);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(graph_launch)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ooo_tm_proc *p;
	__u64 now;

	if (!tracked(tgid))
		return 0;
	now = bpf_ktime_get_ns();
	p = proc_get(tgid, now);
	if (!p)
		return 0;
	__sync_fetch_and_add(&p->graph_launches, 1);
	p->last_ns = now;
	return 0;
}

static __always_inline int enter(__u32 fn, __u64 arg)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct inflight_key key = { .id = id, .fn = fn };
	struct entry e = { .arg = arg };

	if (!tracked(id >> 32))
		return 0;
	e.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&inflight, &key, &e, BPF_ANY);
	return 0;
}

static __always_inline int leave(__u32 fn, long rc)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct inflight_key key = { .id = id, .fn = fn };
	__u32 tgid = id >> 32;
	struct ooo_tm_event *ev;
	struct ooo_tm_drops *d;
	struct ooo_tm_proc *p;
	struct entry *e;
	__u64 now, dur, arg;

	e = bpf_map_lookup_elem(&inflight, &key);
	if (!e) {
		/* attached in the middle of a call, or evicted: count only if tracked */
		if (tracked(tgid)) {
			d = drop_counters();
			if (d)
				__sync_fetch_and_add(&d->inflight_lost, 1);
		}
		return 0;
	}
	now = bpf_ktime_get_ns();
	dur = now > e->ts ? now - e->ts : 0;
	arg = e->arg;
	bpf_map_delete_elem(&inflight, &key);
	p = proc_get(tgid, now);
	if (!p)
		return 0;
	p->last_ns = now;
	if (fn == OOO_TM_ALLOC) {
		if (rc == 0) {
			__sync_fetch_and_add(&p->allocs, 1);
			__sync_fetch_and_add(&p->alloc_bytes, arg);
		} else {
			__sync_fetch_and_add(&p->alloc_failed, 1);
		}
		return 0;
	}
	if (fn >= OOO_TM_NSYNC)
		return 0;
	__sync_fetch_and_add(&p->syncs[fn], 1);
	__sync_fetch_and_add(&p->sync_ns, dur);
	__sync_fetch_and_add(&p->sync_hist[ooo_tm_bucket(dur) & (OOO_TM_HIST - 1)], 1);
	if (dur < slow_ns)
		return 0;
	__sync_fetch_and_add(&p->slow_syncs, 1);
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		d = drop_counters();
		if (d)
			__sync_fetch_and_add(&d->ring_full, 1);
		return 0;
	}
	ev->pid = tgid;
	ev->tid = (__u32)id;
	ev->fn = fn;
	ev->pad = 0;
	ev->dur_ns = dur;
	ev->end_ns = now;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(stream_sync_enter)
{
	return enter(OOO_TM_STREAM_SYNC, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(stream_sync_leave, long rc)
{
	return leave(OOO_TM_STREAM_SYNC, rc);
}

SEC("uprobe")
int BPF_KPROBE(ctx_sync_enter)
{
	return enter(OOO_TM_CTX_SYNC, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(ctx_sync_leave, long rc)
{
	return leave(OOO_TM_CTX_SYNC, rc);
}

SEC("uprobe")
int BPF_KPROBE(event_sync_enter)
{
	return enter(OOO_TM_EVENT_SYNC, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(event_sync_leave, long rc)
{
	return leave(OOO_TM_EVENT_SYNC, rc);
}

/* CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) */
SEC("uprobe")
int BPF_KPROBE(alloc_enter, void *dptr, __u64 bytes)
{
	return enter(OOO_TM_ALLOC, bytes);
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_leave, long rc)
{
	/* CUresult is a 32-bit enum: the upper half of the register is not defined */
	return leave(OOO_TM_ALLOC, (int)rc);
}

SEC("uprobe")
int BPF_KPROBE(mem_free)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ooo_tm_proc *p;
	__u64 now;

	if (!tracked(tgid))
		return 0;
	now = bpf_ktime_get_ns();
	p = proc_get(tgid, now);
	if (!p)
		return 0;
	__sync_fetch_and_add(&p->frees, 1);
	p->last_ns = now;
	return 0;
}

/* cuMemcpy(dst, src, bytes), cuMemcpyAsync(dst, src, bytes, stream),
 * cuMemcpyHtoD_v2(dst, host, bytes), cuMemcpyDtoH_v2(host, src, bytes) and
 * their Async forms: the size is the third argument of every one. */
SEC("uprobe")
int BPF_KPROBE(copy, __u64 dst, __u64 src, __u64 bytes)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ooo_tm_proc *p;
	__u64 now;

	if (!tracked(tgid))
		return 0;
	now = bpf_ktime_get_ns();
	p = proc_get(tgid, now);
	if (!p)
		return 0;
	__sync_fetch_and_add(&p->copies, 1);
	__sync_fetch_and_add(&p->copy_bytes, bytes);
	p->last_ns = now;
	return 0;
}
