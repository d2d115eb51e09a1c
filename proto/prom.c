/* SPDX-License-Identifier: MIT */
/* The Prometheus exposition of oood's figures: see prom.h. */
#include "prom.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

void prom_buf_init(struct prom_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

void prom_buf_free(struct prom_buf *b)
{
	if (!b)
		return;
	free(b->data);
	prom_buf_init(b, b->max);
}

/* Room for need more bytes and the NUL: 0, or the sticky error. */
static int prom_reserve(struct prom_buf *b, size_t need)
{
	size_t cap;
	char *p;

	if (b->err)
		return b->err;
	if (need > SIZE_MAX / 2 - b->len || (b->max && b->len + need > b->max))
		return b->err = -EMSGSIZE;
	if (b->len + need < b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap <= b->len + need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		return b->err = -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int prom_append(struct prom_buf *b, const void *p, size_t n)
{
	if (prom_reserve(b, n))
		return b->err;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int prom_printf(struct prom_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return b->err;
	/* most lines fit in what is left; else measure, grow and write again */
	for (int pass = 0; pass < 2; pass++) {
		size_t room = b->cap > b->len ? b->cap - b->len : 0;

		va_start(ap, fmt);
		n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return b->err = -EINVAL;
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return 0;
		}
		if (prom_reserve(b, (size_t)n))
			return b->err;
	}
	return b->err = -EINVAL; /* not reached: the second pass had room */
}

static void prom_family(struct prom_buf *b, const char *name, const char *type, const char *help)
{
	prom_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one sample without labels. */
static void prom_scalar(struct prom_buf *b, const char *name, const char *type, const char *help, uint64_t v)
{
	prom_family(b, name, type, help);
	prom_printf(b, "%s %" PRIu64 "\n", name, v);
}

/* A label value with \, " and newline escaped; non-ASCII bytes become '?' so it is always valid UTF-8. */
static void prom_escape(char *out, size_t cap, const char *s)
{
	size_t k = 0;

	for (; *s && k + 3 < cap; s++) {
		if ((unsigned char)*s >= 0x80 || (unsigned char)*s < 0x20 || *s == 0x7f) {
			out[k++] = *s == '\n' ? '\\' : '?';
			if (*s == '\n')
				out[k++] = 'n';
		} else if (*s == '\\' || *s == '"') {
			out[k++] = '\\';
			out[k++] = *s;
		} else {
			out[k++] = *s;
		}
	}
	out[k] = '\0';
}

static void prom_hist(struct prom_buf *b, const char *name, const char *labels, const uint64_t *h, bool have_sum, double sum_s)
{
	uint64_t acc = 0;

	for (int k = 0; k < OOO_TM_BUCKETS - 1; k++) {
		acc += h[k];
		prom_printf(b, "%s_bucket{%s,le=\"%.6g\"} %" PRIu64 "\n", name, labels, (double)(1ull << k) * 1e-6, acc);
	}
	acc += h[OOO_TM_BUCKETS - 1];
	prom_printf(b, "%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", name, labels, acc);
	if (have_sum)
		prom_printf(b, "%s_sum{%s} %.9f\n", name, labels, sum_s);
	prom_printf(b, "%s_count{%s} %" PRIu64 "\n", name, labels, acc);
}

/* The daemon's own figures. */
static void metrics_daemon(struct prom_buf *b, const struct ooo_msg_status *st)
{
	prom_family(b, "ooo_up", "gauge", "1 while oood answers");
	prom_printf(b, "ooo_up 1\n");
	prom_family(b, "ooo_uptime_seconds", "gauge", "Time since oood started");
	prom_printf(b, "ooo_uptime_seconds %.3f\n", (double)st->uptime_ns / 1e9);
	prom_scalar(b, "ooo_policy_generation", "gauge", "Policies loaded so far (1 at start)", st->policy_generation);
	prom_scalar(b, "ooo_sessions", "gauge", "Open tenant sessions", st->sessions);
	prom_scalar(b, "ooo_sessions_max", "gauge", "Tenant sessions allowed at once", st->max_sessions);
	prom_scalar(b, "ooo_tenants", "gauge", "Tenants with at least one session", st->tenants);
	prom_scalar(b, "ooo_sessions_admitted_total", "counter", "Tenant sessions admitted", st->sessions_total);
	prom_scalar(b, "ooo_sessions_refused_total", "counter", "Tenant connections refused", st->sessions_refused);
	prom_family(b, "ooo_messages_total", "counter", "Control messages");
	prom_printf(b, "ooo_messages_total{direction=\"in\"} %" PRIu64 "\n", st->msgs_in);
	prom_printf(b, "ooo_messages_total{direction=\"out\"} %" PRIu64 "\n", st->msgs_out);
	prom_scalar(b, "ooo_protocol_errors_total", "counter", "Malformed messages from peers", st->proto_errors);
	prom_scalar(b, "ooo_reloads_failed_total", "counter", "Configuration reloads refused", st->reloads_failed);
	prom_family(b, "ooo_gpus", "gauge", "GPUs by executor state");
	prom_printf(b, "ooo_gpus{state=\"ready\"} %" PRIu32 "\n", st->gpus_ready);
	prom_printf(b, "ooo_gpus{state=\"other\"} %" PRIu32 "\n", st->gpus - st->gpus_ready);
}

/* ',key="KEY"' for a tenant with a key (escaped), "" for one without. */
static void tenant_key_label(char *out, size_t cap, const char *key)
{
	char esc[2 * OOO_TENANT_KEY_MAX];

	out[0] = '\0';
	if (!key[0])
		return;
	prom_escape(esc, sizeof(esc), key);
	snprintf(out, cap, ",key=\"%s\"", esc);
}

/* Each tenant's use and limits. */
static void metrics_tenants(struct prom_buf *b, const struct ooo_tenant_rec *tn, size_t ntn)
{
	/* a tenant of a class with tenant_by = pod or cgroup has a key label too: its pod UID or cgroup */
	prom_family(b, "ooo_tenant_used", "gauge", "A tenant's use of a resource");
	for (size_t i = 0; i < ntn; i++) {
		char cls[2 * OOO_NAME_MAX], key[2 * OOO_TENANT_KEY_MAX + 16] = "";

		prom_escape(cls, sizeof(cls), tn[i].class_name);
		tenant_key_label(key, sizeof(key), tn[i].key);
		for (int k = 0; k < OOO_RES_COUNT; k++)
			prom_printf(b, "ooo_tenant_used{tenant=\"%" PRIu32 "\",class=\"%s\"%s,resource=\"%s\"} %" PRIu64 "\n",
				    tn[i].uid, cls, key, res_names[k], tn[i].used[k]);
	}
	prom_family(b, "ooo_tenant_limit", "gauge", "A tenant's limit on a resource (0: none)");
	for (size_t i = 0; i < ntn; i++) {
		char cls[2 * OOO_NAME_MAX], key[2 * OOO_TENANT_KEY_MAX + 16] = "";

		prom_escape(cls, sizeof(cls), tn[i].class_name);
		tenant_key_label(key, sizeof(key), tn[i].key);
		for (int k = 0; k < OOO_RES_COUNT; k++)
			prom_printf(b, "ooo_tenant_limit{tenant=\"%" PRIu32 "\",class=\"%s\"%s,resource=\"%s\"} %" PRIu64 "\n",
				    tn[i].uid, cls, key, res_names[k], tn[i].limit[k]);
	}
}

/* The executors' scheduler counters (executors without counters have no samples). */
static void metrics_sched_counters(struct prom_buf *b, const struct ooo_sched_rec *sr, size_t nsr)
{
	static const struct { const char *name, *help; size_t off; } sc[] = {
#define SC(f, h) { "ooo_sched_" #f "_total", h, offsetof(struct ooo_sched_counters, f) }
		SC(bundles, "Dispatches: fused launches plus launches that went alone"),
		SC(fused_bundles, "Fused launches"),
		SC(launches, "Tenant launches through the scheduler"),
		SC(fused_launches, "Tenant launches run inside a fused launch"),
		SC(direct_launches, "Tenant launches that could not be fused"),
		SC(retried, "Fused launches that failed to start and ran unfused"),
		SC(unfused_nopay, "Bundles sent unfused: the fused kernel was predicted slower than its members alone"),
		SC(stream_waits, "Waits of one of a partition's streams for another stream's bundle"),
		SC(chained_launches, "Tenant launches run chained behind their queue's previous launch in one fused launch"),
		SC(burst_holds, "Head launches held for the rest of their tenant's burst (burst_wait_us)"),
		SC(jit_hits, "Fusion classes found compiled"),
		SC(jit_misses, "Fusion classes not found compiled"),
		SC(jit_compiles, "Fused kernels compiled"),
		SC(jit_failures, "Fusion classes the JIT or the driver refused"),
		SC(loops, "Passes of the executor's serving loop"),
		SC(commands, "Commands taken from the tenants' submission rings"),
		SC(param_bundles, "Fused bundles whose table went as the launch's parameter"),
#undef SC
	};
	static const char *const why[4] = { "full", "slack", "idle", "alone" };

	for (size_t k = 0; k < sizeof(sc) / sizeof(sc[0]); k++) {
		prom_family(b, sc[k].name, "counter", sc[k].help);
		for (size_t i = 0; i < nsr; i++) {
			uint64_t v;

			if (!sr[i].have)
				continue;
			memcpy(&v, (const char *)&sr[i].c + sc[k].off, sizeof(v));
			prom_printf(b, "%s{gpu=\"%" PRIu32 "\",domain=\"%s\"} %" PRIu64 "\n", sc[k].name, sr[i].device, sr[i].domain, v);
		}
	}
	prom_family(b, "ooo_sched_dispatches_total", "counter", "Dispatch decisions by reason");
	for (size_t i = 0; i < nsr; i++) {
		const uint64_t v[4] = { sr[i].c.dispatch_full, sr[i].c.dispatch_slack, sr[i].c.dispatch_idle,
					sr[i].c.dispatch_alone };

		if (!sr[i].have)
			continue;
		for (int k = 0; k < 4; k++)
			prom_printf(b, "ooo_sched_dispatches_total{gpu=\"%" PRIu32 "\",domain=\"%s\",reason=\"%s\"} %" PRIu64 "\n",
			       sr[i].device, sr[i].domain, why[k], v[k]);
	}
	prom_family(b, "ooo_sched_bundles_by_priority_total", "counter",
		    "Dispatches by the highest priority of their members' queues: below, at or above the default 50");
	for (size_t i = 0; i < nsr; i++) {
		if (!sr[i].have)
			continue;
		for (unsigned k = 0; k < OOO_PRIO_TIERS; k++)
			prom_printf(b, "ooo_sched_bundles_by_priority_total{gpu=\"%" PRIu32 "\",domain=\"%s\",tier=\"%s\"} %" PRIu64 "\n",
			       sr[i].device, sr[i].domain, sched_tier_names[k], sr[i].c.tier_bundles[k]);
	}
	prom_family(b, "ooo_sched_bundles_by_stream_total", "counter",
		    "Dispatches by the stream they went on within their priority tier (0 .. streams - 1)");
	for (size_t i = 0; i < nsr; i++) {
		if (!sr[i].have)
			continue;
		for (unsigned k = 0; k < OOO_SCHED_STREAMS && k < (sr[i].c.streams ? sr[i].c.streams : 1); k++)
			prom_printf(b, "ooo_sched_bundles_by_stream_total{gpu=\"%" PRIu32 "\",domain=\"%s\",stream=\"%u\"} %" PRIu64 "\n",
			       sr[i].device, sr[i].domain, k, sr[i].c.stream_bundles[k]);
	}
	prom_family(b, "ooo_sched_executor_cpu_seconds_total", "counter", "CPU time of the executor (all threads)");
	for (size_t i = 0; i < nsr; i++)
		if (sr[i].have)
			prom_printf(b, "ooo_sched_executor_cpu_seconds_total{gpu=\"%" PRIu32 "\",domain=\"%s\"} %.6f\n", sr[i].device, sr[i].domain,
			       (double)sr[i].c.cpu_ns / 1e9);
	prom_family(b, "ooo_sched_launcher_busy_seconds_total", "counter",
		    "Time the executor's launcher thread spent issuing bundles to CUDA");
	for (size_t i = 0; i < nsr; i++)
		if (sr[i].have)
			prom_printf(b, "ooo_sched_launcher_busy_seconds_total{gpu=\"%" PRIu32 "\",domain=\"%s\"} %.6f\n", sr[i].device, sr[i].domain,
			       (double)sr[i].c.launch_ns / 1e9);
}

/* The executors' latency and stage histograms, and the counters that go with them. */
static void metrics_sched_hists(struct prom_buf *b, const struct ooo_sched_rec *sr, size_t nsr)
{
	for (int h = 0; h < 2; h++) {
		static const char *const hn[2] = { "ooo_sched_launch_hold_seconds", "ooo_sched_launch_latency_seconds" };
		static const char *const hh[2] = {
			"Launches through the coalescer: submission taken to its bundle dispatched",
			"Launches through the coalescer: submission taken to completion seen",
		};

		prom_family(b, hn[h], "histogram", hh[h]);
		for (size_t i = 0; i < nsr; i++) {
			char lab[96];

			snprintf(lab, sizeof(lab), "gpu=\"%" PRIu32 "\",domain=\"%s\"", sr[i].device, sr[i].domain);
			if (sr[i].have)
				prom_hist(b, hn[h], lab, h ? sr[i].c.lat_hist : sr[i].c.hold_hist, false, 0);
		}
	}
	for (int h = 0; h < STAGES; h++) {
		prom_family(b, stage_prom[h], "histogram", stage_help[h]);
		for (size_t i = 0; i < nsr; i++) {
			char lab[96];

			snprintf(lab, sizeof(lab), "gpu=\"%" PRIu32 "\",domain=\"%s\"", sr[i].device, sr[i].domain);
			if (sr[i].have)
				prom_hist(b, stage_prom[h], lab, stage_hist(&sr[i].c, h), false, 0);
		}
	}
	for (int h = 0; h < OOO_CMD_STAGES; h++) {
		char name[80], help[192];

		/* ooo_exec_command_X_seconds -> ooo_exec_class_command_X_seconds */
		snprintf(name, sizeof(name), "ooo_exec_class_%s", stage_prom[h] + strlen("ooo_exec_"));
		snprintf(help, sizeof(help), "%s; per tenant class (the rows of oooctl sched)", stage_help[h]);
		prom_family(b, name, "histogram", help);
		for (size_t i = 0; i < nsr; i++) {
			if (!sr[i].have)
				continue;
			for (uint32_t k = 0; k < sched_nclasses(&sr[i].c); k++) {
				const struct ooo_sched_class_stats *cl = &sr[i].c.classes[k];
				char cls[2 * sizeof(cl->name)], lab[192];

				prom_escape(cls, sizeof(cls), class_label(cl->name));
				snprintf(lab, sizeof(lab), "gpu=\"%" PRIu32 "\",domain=\"%s\",class=\"%s\"", sr[i].device,
					 sr[i].domain, cls);
				prom_hist(b, name, lab, cl->cmd_stage_hist[h], false, 0);
			}
		}
	}
	prom_family(b, "ooo_exec_submit_stamps_bad_total", "counter",
		    "Tenant submit stamps more than 10 s before or 1 s after the executor's clock (not in the submit histogram)");
	for (size_t i = 0; i < nsr; i++)
		if (sr[i].have)
			prom_printf(b, "ooo_exec_submit_stamps_bad_total{gpu=\"%" PRIu32 "\",domain=\"%s\"} %" PRIu64 "\n", sr[i].device, sr[i].domain,
			       sr[i].c.submit_stamp_bad);
	prom_family(b, "ooo_sched_jit_compile_seconds_total", "counter", "Time the JIT spent compiling");
	for (size_t i = 0; i < nsr; i++)
		if (sr[i].have)
			prom_printf(b, "ooo_sched_jit_compile_seconds_total{gpu=\"%" PRIu32 "\",domain=\"%s\"} %.6f\n", sr[i].device, sr[i].domain,
			       (double)sr[i].c.jit_compile_ns / 1e9);
}

/* The state of the eBPF probes (t NULL: the telemetry reply could not be had). */
static void metrics_telemetry(struct prom_buf *b, const struct ooo_msg_telemetry *t)
{
	bool running = t && t->state == OOO_TM_RUNNING;

	prom_family(b, "ooo_telemetry_running", "gauge", "1 when the eBPF probes run");
	prom_printf(b, "ooo_telemetry_running %d\n", running);
	if (running) {
		prom_scalar(b, "ooo_telemetry_tracked_processes", "gauge", "Pids in the probes' filter set", t->tracked);
		prom_scalar(b, "ooo_telemetry_libraries", "gauge", "libcuda files probed", t->nlibs);
		prom_scalar(b, "ooo_telemetry_slow_syncs_total", "counter", "Slow-sync events read from the ring buffer", t->events);
		prom_family(b, "ooo_telemetry_lost_total", "counter", "What the probes could not record, by cause");
		prom_printf(b, "ooo_telemetry_lost_total{cause=\"ring_full\"} %" PRIu64 "\n", t->ring_full);
		prom_printf(b, "ooo_telemetry_lost_total{cause=\"maps_full\"} %" PRIu64 "\n", t->procs_full);
		prom_printf(b, "ooo_telemetry_lost_total{cause=\"no_entry\"} %" PRIu64 "\n", t->inflight_lost);
	}
}

/* A process's labels: pid="PID",comm="COMM" (comm escaped) into lab; returns lab. */
#define PROC_LABEL_MAX (32 + 2 * OOO_TM_COMM)
static const char *proc_label(char *lab, const struct ooo_proc_rec *p)
{
	char comm[2 * OOO_TM_COMM + 1];

	prom_escape(comm, sizeof(comm), p->comm);
	snprintf(lab, PROC_LABEL_MAX, "pid=\"%" PRIu32 "\",comm=\"%s\"", p->pid, comm);
	return lab;
}

/* Per-process figures of the probes. */
static void metrics_procs(struct prom_buf *b, const struct ooo_proc_rec *pr, size_t npr)
{
	static const struct { const char *name, *help; size_t off; } pc[] = {
#define PC(f, n, h) { "ooo_process_cuda_" n "_total", h, offsetof(struct ooo_proc_rec, f) }
		PC(launches, "launches", "cuLaunchKernel and cuLaunchKernelEx calls"),
		PC(graph_launches, "graph_launches", "cuGraphLaunch calls"),
		PC(allocs, "allocs", "cuMemAlloc_v2 calls that succeeded"),
		PC(alloc_failed, "alloc_failures", "cuMemAlloc_v2 calls that failed"),
		PC(alloc_bytes, "alloc_bytes", "Bytes of the successful cuMemAlloc_v2 calls"),
		PC(frees, "frees", "cuMemFree_v2 calls"),
		PC(copies, "copies", "cuMemcpy calls (all probed forms)"),
		PC(copy_bytes, "copy_bytes", "Bytes of the probed cuMemcpy calls"),
		PC(slow_syncs, "slow_syncs", "Sync calls slower than slow_sync_us"),
#undef PC
	};
	char lab[PROC_LABEL_MAX];

	for (size_t k = 0; k < sizeof(pc) / sizeof(pc[0]); k++) {
		prom_family(b, pc[k].name, "counter", pc[k].help);
		for (size_t i = 0; i < npr; i++) {
			uint64_t v;

			if (!(pr[i].have & 1))
				continue;
			memcpy(&v, (const char *)&pr[i] + pc[k].off, sizeof(v));
			prom_printf(b, "%s{%s} %" PRIu64 "\n", pc[k].name, proc_label(lab, &pr[i]), v);
		}
	}
	prom_family(b, "ooo_process_cuda_syncs_total", "counter", "Sync calls that returned, by function");
	for (size_t i = 0; i < npr; i++)
		for (int f = 0; f < 3 && (pr[i].have & 1); f++)
			prom_printf(b, "ooo_process_cuda_syncs_total{%s,function=\"%s\"} %" PRIu64 "\n", proc_label(lab, &pr[i]), tm_fn_names[f],
			       pr[i].syncs[f]);
	prom_family(b, "ooo_process_cuda_sync_seconds", "histogram", "Time in sync calls");
	for (size_t i = 0; i < npr; i++)
		if (pr[i].have & 1)
			prom_hist(b, "ooo_process_cuda_sync_seconds", proc_label(lab, &pr[i]), pr[i].sync_hist, true,
				  (double)pr[i].sync_ns / 1e9);
	prom_family(b, "ooo_process_cuda_launch_interval_seconds", "histogram", "Time between a process's launches");
	for (size_t i = 0; i < npr; i++)
		if (pr[i].have & 1)
			prom_hist(b, "ooo_process_cuda_launch_interval_seconds", proc_label(lab, &pr[i]), pr[i].gap_hist, false, 0);
	prom_family(b, "ooo_process_runqueue_delay_seconds", "histogram",
		    "Time from wakeup or preemption to running, for tracked processes");
	for (size_t i = 0; i < npr; i++)
		if (pr[i].have & 2)
			prom_hist(b, "ooo_process_runqueue_delay_seconds", proc_label(lab, &pr[i]), pr[i].rq_hist, true,
				  (double)pr[i].rq_total_ns / 1e9);
}


int prom_write(struct prom_buf *b, const struct prom_input *in)
{
	bool running = in->tm && in->tm->state == OOO_TM_RUNNING;

	metrics_daemon(b, in->st);
	metrics_tenants(b, in->tn, in->ntn);
	metrics_sched_counters(b, in->sr, in->nsr);
	metrics_sched_hists(b, in->sr, in->nsr);
	metrics_telemetry(b, in->tm);
	metrics_procs(b, in->pr, running ? in->npr : 0);
	return b->err;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct ooo_proc_rec *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void prom_procs_unique(struct ooo_proc_rec *v, size_t *n)
{
	size_t u = 0;

	if (!*n)
		return;
	qsort(v, *n, sizeof(*v), cmp_proc);
	for (size_t i = 0; i < *n; i++) {
		if (u && v[u - 1].pid == v[i].pid)
			continue;
		v[u++] = v[i];
	}
	*n = u;
}
