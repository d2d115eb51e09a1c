/* SPDX-License-Identifier: MIT */
/* oooctl telemetry, top, hist, trace: the eBPF probes and what they measure. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/args.h"
#include "../../proto/prom.h"
#include "../json.h"
#include "oooctl.h"
#include "sched_calc.h"

static const char *tm_state_name(uint32_t s)
{
	switch (s) {
	case OOO_TM_DISABLED: return "disabled";
	case OOO_TM_UNAVAILABLE: return "unavailable";
	case OOO_TM_RUNNING: return "running";
	default: return "unknown";
	}
}

static const char *tm_launch_mode(uint32_t m)
{
	return m == 1 ? "all" : m == 2 ? "off" : "tracked";
}

int get_telemetry(ooo_session *s, struct ooo_msg_telemetry *t)
{
	int r = admin_call(s, OOO_MSG_TELEMETRY, NULL, 0, t, sizeof(*t));

	if (r >= 0 && (size_t)r != sizeof(*t)) {
		snprintf(reason, sizeof(reason), "telemetry reply of %d bytes, expected %zu", r, sizeof(*t));
		return -OOO_EPROTO;
	}
	return r < 0 ? r : 0;
}

static const char *fmt_track(char *buf, size_t cap, uint32_t t)
{
	snprintf(buf, cap, "%s%s%s%s%s%s", t & OOO_TRACK_SESSION ? "s" : "", t & OOO_TRACK_EXECUTOR ? "x" : "",
		 t & OOO_TRACK_LEASE ? "n" : "", t & OOO_TRACK_OPERATOR ? "o" : "", t & OOO_TRACK_LAUNCHES ? "L" : "",
		 t ? "" : "-");
	return buf;
}

static void j_track(const char *key, uint32_t t)
{
	j_arr(key);
	if (t & OOO_TRACK_SESSION)
		j_str(NULL, "session");
	if (t & OOO_TRACK_EXECUTOR)
		j_str(NULL, "executor");
	if (t & OOO_TRACK_LEASE)
		j_str(NULL, "lease");
	if (t & OOO_TRACK_OPERATOR)
		j_str(NULL, "operator");
	if (t & OOO_TRACK_LAUNCHES)
		j_str(NULL, "launches");
	j_arr_end();
}

int do_telemetry(int argc, char **argv)
{
	struct ooo_msg_telemetry t;
	ooo_session *s;
	char b1[64], b2[64];
	int rc, r;

	if ((rc = no_args(argc, argv)))
		return rc;
	if (!(s = admin_open(&rc)))
		return rc;
	r = get_telemetry(s, &t);
	ooo_close(s);
	if (r < 0)
		return report("telemetry", r);
	if (opt_json) {
		j_obj(NULL);
		j_str("state", tm_state_name(t.state));
		j_str("reason", t.reason[0] ? t.reason : NULL);
		j_bool("cuda_probes", t.cuda);
		j_bool("runqueue_probes", t.sched);
		j_bool("all_processes", t.all_processes);
		j_str("launch_probes", tm_launch_mode(t.launch_probes));
		j_u64("slow_sync_ns", t.slow_sync_ns);
		j_u64("tracked", t.tracked);
		j_u64("max_tracked", t.max_tracked);
		j_u64("procs", t.procs);
		j_u64("runqueue_procs", t.rq_procs);
		j_u64("max_procs", t.max_procs);
		j_u64("events", t.events);
		j_u64("ring_full", t.ring_full);
		j_u64("procs_full", t.procs_full);
		j_u64("inflight_lost", t.inflight_lost);
		j_u64("aged_out", t.aged_out);
		j_u64("launch_links", t.launch_links);
		j_arr("libraries");
		for (uint32_t i = 0; i < t.nlibs; i++) {
			j_obj(NULL);
			j_str("path", t.libs[i].path);
			j_u64("dev", t.libs[i].dev);
			j_u64("ino", t.libs[i].ino);
			j_u64("probes", t.libs[i].probes);
			j_u64("missing_symbols", t.libs[i].missing);
			j_obj_end();
		}
		j_arr_end();
		j_arr("slow_syncs");
		for (uint32_t i = 0; i < t.nrecent; i++) {
			j_obj(NULL);
			j_u64("pid", t.recent[i].pid);
			j_u64("tid", t.recent[i].tid);
			j_str("comm", t.recent[i].comm);
			j_str("function", t.recent[i].fn < 3 ? tm_fn_names[t.recent[i].fn] : "?");
			j_u64("dur_ns", t.recent[i].dur_ns);
			j_u64("age_ns", t.recent[i].age_ns);
			j_obj_end();
		}
		j_arr_end();
		j_obj_end();
		return RC_OK;
	}
	kv("telemetry", "%s%s%s", tm_state_name(t.state), t.reason[0] ? ": " : "", t.reason);
	if (t.state != OOO_TM_RUNNING)
		return RC_OK;
	kv("probes", "libcuda %s, run queue %s; %s; launch probes %s", t.cuda ? "on" : "off", t.sched ? "on" : "off",
	   t.all_processes ? "all processes" : "tracked processes only", tm_launch_mode(t.launch_probes));
	kv("slow sync", "over %s", fmt_dur(b1, sizeof(b1), t.slow_sync_ns));
	kv("tracked", "%" PRIu32 " / %" PRIu32 " pids (%" PRIu64 " per-process launch probes)", t.tracked, t.max_tracked,
	   t.launch_links);
	kv("records", "%" PRIu32 " libcuda, %" PRIu32 " run queue, of %" PRIu32 " each", t.procs, t.rq_procs, t.max_procs);
	kv("events", "%" PRIu64 " slow syncs read, %" PRIu64 " lost (ring full)", t.events, t.ring_full);
	kv("not recorded", "%" PRIu64 " (maps full), %" PRIu64 " returns without entry", t.procs_full, t.inflight_lost);
	kv("aged out", "%" PRIu64 " records of exited processes", t.aged_out);
	if (!t.nlibs)
		kv("libcuda", "none found yet");
	for (uint32_t i = 0; i < t.nlibs; i++)
		kv(i ? "" : "libcuda", "%s (%" PRIu32 " uprobes, %" PRIu32 " symbols absent)", t.libs[i].path,
		   t.libs[i].probes, t.libs[i].missing);
	for (uint32_t i = 0; i < t.nrecent; i++)
		kv(i ? "" : "recent slow syncs", "pid %" PRIu32 " (%s) tid %" PRIu32 ": %s %s, %s ago", t.recent[i].pid,
		   t.recent[i].comm, t.recent[i].tid, t.recent[i].fn < 3 ? tm_fn_names[t.recent[i].fn] : "?",
		   fmt_dur(b1, sizeof(b1), t.recent[i].dur_ns), fmt_dur(b2, sizeof(b2), t.recent[i].age_ns));
	return RC_OK;
}

static double tm_quantile(const uint64_t *h, double q)
{
	return hist_quantile(h, q);
}

static uint64_t tm_sum(const uint64_t *h)
{
	uint64_t t = 0;

	for (int b = 0; b < OOO_TM_BUCKETS; b++)
		t += h[b];
	return t;
}

static int procs_snapshot(struct ooo_proc_rec **out, size_t *n)
{
	ooo_session *s;
	int rc, r;

	if (!(s = admin_open(&rc)))
		return rc;
	r = fetch_list(s, OOO_MSG_PROCS, sizeof(**out), (void **)out, n);
	ooo_close(s);
	if (r < 0)
		return report("procs", r);
	prom_procs_unique(*out, n);
	return RC_OK;
}

static const struct ooo_proc_rec *proc_find(const struct ooo_proc_rec *v, size_t n, uint32_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid)
			return &v[i];
	return NULL;
}

static uint64_t proc_syncs(const struct ooo_proc_rec *p)
{
	return p->syncs[0] + p->syncs[1] + p->syncs[2];
}

static void print_top(const struct ooo_proc_rec *a, size_t na, const struct ooo_proc_rec *b, size_t nb, double secs)
{
	static const char *const cols[] = { ">PID", "COMM", ">UID", "TRACK", ">LAUNCH/S", ">SYNC/S", ">SYNC_P50",
					    ">SYNC_P99", ">RQ_P99", ">RQ_MAX", ">ALLOCATED", ">LAUNCHES" };
	struct table tab;

	if (opt_json) {
		j_obj(NULL);
		j_num("interval_s", secs, 3);
		j_arr("procs");
	} else {
		table_init(&tab, 12, cols);
	}
	for (size_t i = 0; i < nb; i++) {
		const struct ooo_proc_rec *p = &b[i], *o = a ? proc_find(a, na, p->pid) : NULL;
		double lps = NAN, sps = NAN;
		uint64_t dh[OOO_TM_BUCKETS], rh[OOO_TM_BUCKETS];
		char c1[32], c2[32], c3[32], c4[32], c5[32], tr[8];

		/* the interval's histograms where there is an earlier snapshot, else since the start */
		for (int k = 0; k < OOO_TM_BUCKETS; k++) {
			dh[k] = p->sync_hist[k] - (o && o->sync_hist[k] <= p->sync_hist[k] ? o->sync_hist[k] : 0);
			rh[k] = p->rq_hist[k] - (o && o->rq_hist[k] <= p->rq_hist[k] ? o->rq_hist[k] : 0);
		}
		if (o && secs > 0) {
			lps = (double)(p->launches - (o->launches <= p->launches ? o->launches : p->launches)) / secs;
			sps = (double)(proc_syncs(p) - (proc_syncs(o) <= proc_syncs(p) ? proc_syncs(o) : proc_syncs(p))) /
			      secs;
		}
		if (opt_json) {
			j_obj(NULL);
			j_u64("pid", p->pid);
			j_str("comm", p->comm);
			if (p->uid == UINT32_MAX)
				j_null("uid");
			else
				j_u64("uid", p->uid);
			j_track("track", p->track);
			j_num("launches_per_s", lps, 1);
			j_num("syncs_per_s", sps, 1);
			j_num("sync_p50_ns", tm_quantile(dh, 0.5), 0);
			j_num("sync_p99_ns", tm_quantile(dh, 0.99), 0);
			j_num("runqueue_p99_ns", tm_quantile(rh, 0.99), 0);
			j_u64("runqueue_max_ns", p->rq_max_ns);
			j_u64("launches", p->launches);
			j_u64("graph_launches", p->graph_launches);
			j_u64("syncs", proc_syncs(p));
			j_u64("alloc_bytes", p->alloc_bytes);
			j_obj_end();
			continue;
		}
		table_cell(&tab, "%" PRIu32, p->pid);
		table_cell(&tab, "%s", p->comm[0] ? p->comm : "-");
		if (p->uid == UINT32_MAX)
			table_cell(&tab, "-");
		else
			table_cell(&tab, "%" PRIu32, p->uid);
		table_cell(&tab, "%s", fmt_track(tr, sizeof(tr), p->track));
		table_cell(&tab, "%s", isnan(lps) ? "-" : (snprintf(c1, sizeof(c1), "%.0f", lps), c1));
		table_cell(&tab, "%s", isnan(sps) ? "-" : (snprintf(c2, sizeof(c2), "%.0f", sps), c2));
		table_cell(&tab, "%s", tm_sum(dh) ? fmt_dur(c3, sizeof(c3), (uint64_t)tm_quantile(dh, 0.5)) : "-");
		table_cell(&tab, "%s", tm_sum(dh) ? fmt_dur(c4, sizeof(c4), (uint64_t)tm_quantile(dh, 0.99)) : "-");
		table_cell(&tab, "%s", tm_sum(rh) ? fmt_dur(c5, sizeof(c5), (uint64_t)tm_quantile(rh, 0.99)) : "-");
		table_cell(&tab, "%s", p->rq_samples ? fmt_dur(c1, sizeof(c1), p->rq_max_ns) : "-");
		table_cell(&tab, "%s", fmt_size(c2, sizeof(c2), p->alloc_bytes));
		table_cell(&tab, "%" PRIu64, p->launches);
	}
	if (opt_json) {
		j_arr_end();
		j_obj_end();
	} else if (!nb) {
		printf("no processes tracked or seen (see oooctl telemetry)\n");
	} else {
		table_print(&tab);
	}
	fflush(stdout);
}

int do_top(int argc, char **argv)
{
	uint64_t interval = 1000, count = 0;
	struct ooo_proc_rec *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	bool tty = isatty(STDOUT_FILENO);
	int c, rc;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "c:i:")) != -1) {
		if (c == 'c' && args_u64(optarg, 10, 1, 1000000, &count) < 0)
			return usage_error("--count wants 1 to 1000000 refreshes, not '%s'", optarg);
		if (c == 'i' && args_u64(optarg, 10, 100, 3600000, &interval) < 0)
			return usage_error("--interval wants milliseconds from 100 to 3600000, not '%s'", optarg);
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!count && !tty)
		count = 1; /* not a terminal: one refresh unless asked for more */
	/* JSON Lines: one compact object per refresh, flushed as it is printed */
	j_set_compact(true);
	if ((rc = procs_snapshot(&a, &na)))
		return rc;
	for (uint64_t k = 0; !count || k < count; k++) {
		int64_t t0 = mono_ns(), t1;

		sleep_ns((uint64_t)interval * 1000000ull);
		if ((rc = procs_snapshot(&b, &nb))) {
			free(a);
			return rc;
		}
		t1 = mono_ns();
		if (tty && !opt_json)
			fputs("\033[H\033[2J", stdout);
		if (!opt_json)
			printf("oooctl top: every %.1f s (TRACK: s session, x executor, n native lease, o operator, L launches probed)\n",
			       (double)interval / 1000.0);
		print_top(a, na, b, nb, (double)(t1 - t0) / 1e9);
		free(a);
		a = b;
		na = nb;
		b = NULL;
	}
	free(a);
	return RC_OK;
}

static void print_hist(const char *title, const uint64_t *h)
{
	uint64_t max = 0, total = tm_sum(h);
	int last = -1;

	for (int b = 0; b < OOO_TM_BUCKETS; b++) {
		if (h[b] > max)
			max = h[b];
		if (h[b])
			last = b;
	}
	printf("%s: %" PRIu64 " samples\n", title, total);
	if (!total)
		return;
	printf("%20s : %-10s |%-40s|\n", "usecs", "count", "distribution");
	for (int b = 0; b <= last; b++) {
		char range[48];
		int stars = max ? (int)((h[b] * 40 + max - 1) / max) : 0;

		if (b == 0)
			snprintf(range, sizeof(range), "0 -> 1");
		else
			snprintf(range, sizeof(range), "%llu -> %llu", 1ull << (b - 1), b == OOO_TM_BUCKETS - 1 ? 0ull : 1ull << b);
		if (b == OOO_TM_BUCKETS - 1)
			snprintf(range, sizeof(range), "%llu -> inf", 1ull << (b - 1));
		printf("%20s : %-10" PRIu64 " |%-*.*s%*s|\n", range, h[b], stars, stars,
		       "****************************************", 40 - stars, "");
	}
}

int do_hist(int argc, char **argv)
{
	static const char *const metrics[] = { "sync", "gap", "rq" };
	static const char *const titles[] = { "time in sync calls", "launch inter-arrival time", "run-queue delay" };
	struct ooo_proc_rec *v = NULL;
	uint64_t h[3][OOO_TM_BUCKETS];
	uint64_t id;
	bool by_uid = false;
	int metric = -1, c, rc;
	size_t n = 0, matched = 0;
	const char *who;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "m:")) != -1) {
		if (c != 'm')
			continue;
		for (int k = 0; k < 3; k++)
			if (!strcmp(optarg, metrics[k]))
				metric = k;
		if (metric < 0)
			return usage_error("--metric wants sync, gap or rq, not '%s'", optarg);
	}
	if (optind + 1 != argc)
		return usage_error(optind < argc ? "one PID or uid:N, not more" : "which process? PID or uid:N");
	who = argv[optind];
	if (!strncmp(who, "uid:", 4)) {
		by_uid = true;
		if (args_u64(who + 4, 10, 0, UINT32_MAX - 1, &id) < 0)
			return usage_error("bad uid in '%s'", who);
	} else if (args_u64(who, 10, 1, 0x7fffffff, &id) < 0) {
		return usage_error("'%s' is not a PID or uid:N", who);
	}
	if ((rc = procs_snapshot(&v, &n)))
		return rc;
	memset(h, 0, sizeof(h));
	for (size_t i = 0; i < n; i++) {
		if (by_uid ? v[i].uid != id : v[i].pid != id)
			continue;
		matched++;
		for (int k = 0; k < OOO_TM_BUCKETS; k++) {
			h[0][k] += v[i].sync_hist[k];
			h[1][k] += v[i].gap_hist[k];
			h[2][k] += v[i].rq_hist[k];
		}
	}
	free(v);
	if (!matched) {
		err_msg("no telemetry for %s %" PRIu64 " (oooctl top lists what oood sees)", by_uid ? "uid" : "pid", id);
		return RC_FAIL;
	}
	if (opt_json) {
		j_obj(NULL);
		j_str("scope", by_uid ? "uid" : "pid");
		j_u64("id", id);
		j_u64("processes", matched);
		for (int m = 0; m < 3; m++) {
			if (metric >= 0 && m != metric)
				continue;
			j_arr(metrics[m]);
			for (int k = 0; k < OOO_TM_BUCKETS; k++) {
				if (!h[m][k])
					continue;
				j_obj(NULL);
				j_u64("lo_us", k ? 1ull << (k - 1) : 0);
				if (k == OOO_TM_BUCKETS - 1)
					j_null("hi_us");
				else
					j_u64("hi_us", 1ull << k);
				j_u64("count", h[m][k]);
				j_obj_end();
			}
			j_arr_end();
		}
		j_obj_end();
		return RC_OK;
	}
	printf("%s %" PRIu64 " (%zu process%s)\n", by_uid ? "uid" : "pid", id, matched, matched == 1 ? "" : "es");
	for (int m = 0; m < 3; m++) {
		if (metric >= 0 && m != metric)
			continue;
		putchar('\n');
		print_hist(titles[m], h[m]);
	}
	return RC_OK;
}

int do_trace(int argc, char **argv)
{
	struct ooo_msg_trace req = { 0 };
	struct ooo_msg_trace_reply rep;
	uint64_t pid;
	ooo_session *s;
	int rc, r;

	optind = 0;
	if (cmd_getopt(argc, argv, "") != -1)
		return RC_USAGE;
	if (argc - optind != 2)
		return usage_error("usage: oooctl trace add|remove PID");
	if (!strcmp(argv[optind], "add"))
		req.op = OOO_TRACE_ADD;
	else if (!strcmp(argv[optind], "remove"))
		req.op = OOO_TRACE_REMOVE;
	else
		return usage_error("'%s': add or remove", argv[optind]);
	if (args_u64(argv[optind + 1], 10, 1, 0x7fffffff, &pid) < 0)
		return usage_error("'%s' is not a PID", argv[optind + 1]);
	req.pid = (uint32_t)pid;
	if (!(s = admin_open(&rc)))
		return rc;
	r = admin_call(s, OOO_MSG_TRACE, &req, sizeof(req), &rep, sizeof(rep));
	ooo_close(s);
	if (r >= 0 && (size_t)r != sizeof(rep)) {
		snprintf(reason, sizeof(reason), "trace reply of %d bytes, expected %zu", r, sizeof(rep));
		r = -OOO_EPROTO;
	}
	if (r < 0)
		return report("trace", r);
	if (opt_json) {
		j_obj(NULL);
		j_u64("pid", rep.pid);
		j_track("track", rep.track);
		j_u64("libraries", rep.libs);
		j_str("message", rep.msg);
		j_obj_end();
		return RC_OK;
	}
	sanitize(rep.msg);
	printf("%s\n", rep.msg);
	return RC_OK;
}


