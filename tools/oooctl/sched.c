/* SPDX-License-Identifier: MIT */
/* oooctl sched: the executors' scheduler counters, as rates over an interval and as totals. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/args.h"
#include "../json.h"
#include "oooctl.h"
#include "sched_calc.h"

/* "-" for a figure without a value */
static const char *fmt_fig(char *buf, size_t cap, double v, int prec)
{
	if (!isfinite(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.*f", prec, v);
	return buf;
}

static const char *fmt_share(char *buf, size_t cap, double v)
{
	if (!isfinite(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.1f%%", v * 100.0);
	return buf;
}

static const char *fmt_dur_fig(char *buf, size_t cap, double ns)
{
	if (!isfinite(ns))
		snprintf(buf, cap, "-");
	else
		fmt_dur(buf, cap, (uint64_t)ns);
	return buf;
}




/* One metric row: its interval figure (if there is an interval column) and its cumulative one. */
static void sched_row(struct table *t, bool iv, const char *name, const char *vi, const char *vc)
{
	table_cell(t, "%s", name);
	if (iv)
		table_cell(t, "%s", vi);
	table_cell(t, "%s", vc);
}

/* "N (S%)" for a dispatch reason */
static const char *fmt_count_share(char *buf, size_t cap, uint64_t n, double share)
{
	char s[32];

	if (!isfinite(share))
		snprintf(buf, cap, "%" PRIu64, n);
	else
		snprintf(buf, cap, "%" PRIu64 " (%s)", n, fmt_share(s, sizeof(s), share));
	return buf;
}

/* The per-class tables of sched_print(): k/fk the counters shown, iv whether they are an interval. */
static void sched_print_classes(const struct ooo_sched_counters *k, const struct sched_fig *fk, bool iv)
{
	static const char *const ccols[] = { "CLASS", ">SLO_US", ">LAUNCHES/S", ">LAUNCHES", ">MISSES", ">MISS%",
					     ">MEAN_US", ">MAX_US" };
	static const char *const stcols[] = { "CLASS", ">SUBMIT", ">QUEUE", ">RUN", ">NOTIFY" };
	struct table t;
	char a[64];

	printf("\nper class, %s (MAX_US: since the executor started):\n",
	       iv ? "over the interval" : "since the executor started");
	table_init(&t, 8, ccols);
	for (uint32_t i = 0; i < fk->nclasses; i++) {
		const struct ooo_sched_class_stats *cl = &k->classes[i];
		const struct sched_class_fig *f = &fk->classes[i];

		table_cell(&t, "%s", class_label(cl->name));
		table_cell(&t, "%" PRIu32, cl->slo_us);
		table_cell(&t, "%s", fmt_fig(a, sizeof(a), f->launches_s, 1));
		table_cell(&t, "%" PRIu64, cl->launches);
		table_cell(&t, "%" PRIu64, cl->deadline_misses);
		table_cell(&t, "%s", fmt_share(a, sizeof(a), f->miss_share));
		table_cell(&t, "%s", fmt_fig(a, sizeof(a), f->lat_mean_us, 1));
		table_cell(&t, "%s", fmt_fig(a, sizeof(a), f->lat_max_us, 1));
	}
	table_print(&t);
	printf("\nper class, the command stages as above, p50 / p99, %s:\n",
	       iv ? "over the interval" : "since the executor started");
	table_init(&t, 1 + OOO_CMD_STAGES, stcols);
	for (uint32_t i = 0; i < fk->nclasses; i++) {
		const struct ooo_sched_class_stats *cl = &k->classes[i];

		table_cell(&t, "%s", class_label(cl->name));
		for (int h = 0; h < OOO_CMD_STAGES; h++) {
			double p50 = hist_quantile(cl->cmd_stage_hist[h], 0.5);
			double p99 = hist_quantile(cl->cmd_stage_hist[h], 0.99);
			char x[32], y[32];

			table_cell(&t, "%s / %s", isnan(p50) ? "-" : fmt_dur(x, sizeof(x), (uint64_t)p50),
				   isnan(p99) ? "-" : fmt_dur(y, sizeof(y), (uint64_t)p99));
		}
	}
	table_print(&t);
}

/* The per-partition table of sched_print(), as sched_print_classes(). */
static void sched_print_parts(const struct ooo_sched_counters *k, const struct sched_fig *fk, bool iv)
{
	static const char *const pcols[] = { ">PART", "CLASS", ">SMS", ">STREAMS", ">INFLIGHT", ">BUNDLES/S", ">BUNDLES",
					     ">UTIL" };
	struct table t;
	char a[64];

	printf("\nper partition, %s (UTIL: GPU time of its bundles / elapsed time):\n",
	       iv ? "over the interval" : "since the executor started");
	table_init(&t, 8, pcols);
	for (uint32_t i = 0; i < fk->nparts; i++) {
		table_cell(&t, "%" PRIu32, i);
		table_cell(&t, "%s", k->parts[i].name[0] ? k->parts[i].name : "(shared)");
		table_cell(&t, "%" PRIu32, k->parts[i].sms);
		table_cell(&t, "%" PRIu32, k->streams ? k->streams : 1);
		table_cell(&t, "%" PRIu32, k->parts[i].max_inflight);
		table_cell(&t, "%s", fmt_fig(a, sizeof(a), fk->parts[i].bundles_s, 1));
		table_cell(&t, "%" PRIu64, k->parts[i].bundles);
		table_cell(&t, "%s", fmt_share(a, sizeof(a), sched_util_pct(fk->parts[i].util) / 100.0));
	}
	table_print(&t);
}

/* The text of one GPU: d/fd the interval (NULL without one), c/fc the run's totals. */
static void sched_print(const struct ooo_sched_counters *d, const struct sched_fig *fd,
			const struct ooo_sched_counters *c, const struct sched_fig *fc)
{
	static const char *const cols3[] = { "METRIC", ">INTERVAL", ">CUMULATIVE" };
	static const char *const cols2[] = { "METRIC", ">CUMULATIVE" };
	const uint64_t wc[4] = { c->dispatch_full, c->dispatch_slack, c->dispatch_idle, c->dispatch_alone };
	const struct ooo_sched_counters *k = d ? d : c; /* what the class and partition rows show */
	const struct sched_fig *fk = d ? fd : fc;
	bool iv = d != NULL;
	char a[64], b[64];
	struct table t;

	table_init(&t, iv ? 3 : 2, iv ? cols3 : cols2);
#define ROW_RATE(name, field)                                                                              \
	sched_row(&t, iv, name, iv ? fmt_fig(a, sizeof(a), fd->field, 1) : "", fmt_fig(b, sizeof(b), fc->field, 1))
#define ROW_COUNT(name, field)                                                                             \
	do {                                                                                               \
		if (iv)                                                                                    \
			snprintf(a, sizeof(a), "%" PRIu64, d->field);                                      \
		snprintf(b, sizeof(b), "%" PRIu64, c->field);                                              \
		sched_row(&t, iv, name, a, b);                                                             \
	} while (0)
	ROW_RATE("bundles/s", bundles_s);
	ROW_RATE("fused bundles/s", fused_bundles_s);
	ROW_RATE("launches/s", launches_s);
	ROW_RATE("fused launches/s", fused_launches_s);
	ROW_RATE("direct launches/s", direct_launches_s);
	sched_row(&t, iv, "members/bundle", iv ? fmt_fig(a, sizeof(a), fd->members, 2) : "",
		  fmt_fig(b, sizeof(b), fc->members, 2));
	snprintf(b, sizeof(b), "%" PRIu32, c->max_members);
	sched_row(&t, iv, "max members", "-", b);
	sched_row(&t, iv, "fused share", iv ? fmt_share(a, sizeof(a), fd->fused_share) : "",
		  fmt_share(b, sizeof(b), fc->fused_share));
	ROW_COUNT("direct launches", direct_launches);
	for (int i = 0; i < 4; i++) {
		const uint64_t wd[4] = { iv ? d->dispatch_full : 0, iv ? d->dispatch_slack : 0,
					 iv ? d->dispatch_idle : 0, iv ? d->dispatch_alone : 0 };
		char name[32];

		snprintf(name, sizeof(name), "dispatch %s", sched_reason_names[i]);
		sched_row(&t, iv, name, iv ? fmt_count_share(a, sizeof(a), wd[i], fd->dispatch_share[i]) : "",
			  fmt_count_share(b, sizeof(b), wc[i], fc->dispatch_share[i]));
	}
	ROW_COUNT("retried", retried);
	ROW_COUNT("unfused, no gain", unfused_nopay);
	ROW_COUNT("stream waits", stream_waits);
	ROW_COUNT("chained launches", chained_launches);
	ROW_COUNT("burst holds", burst_holds);
	ROW_COUNT("bundles, low priority", tier_bundles[0]);
	ROW_COUNT("bundles, default priority", tier_bundles[1]);
	ROW_COUNT("bundles, high priority", tier_bundles[2]);
	{
		/* bundles by the stream they went on within their tier, "s0/s1/...": how the streams share them */
		unsigned ns = c->streams ? c->streams : 1;
		size_t la = 0, lb = 0;

		a[0] = b[0] = '\0';
		for (unsigned i = 0; i < ns && i < OOO_SCHED_STREAMS; i++) {
			if (iv && la < sizeof(a))
				la += (size_t)snprintf(a + la, sizeof(a) - la, "%s%" PRIu64, i ? "/" : "", d->stream_bundles[i]);
			if (lb < sizeof(b))
				lb += (size_t)snprintf(b + lb, sizeof(b) - lb, "%s%" PRIu64, i ? "/" : "", c->stream_bundles[i]);
		}
		sched_row(&t, iv, "bundles by stream", a, b);
	}
	ROW_COUNT("table as parameter", param_bundles);
	{
		static const char *const nm[4] = { "launch hold p50", "launch hold p99", "launch latency p50",
						   "launch latency p99" };
		for (int r = 0; r < 4; r++) {
			const uint64_t *hd = r < 2 ? k->hold_hist : k->lat_hist, *hc = r < 2 ? c->hold_hist : c->lat_hist;
			double q = r % 2 ? 0.99 : 0.5, vd = iv ? hist_quantile(hd, q) : NAN, vc = hist_quantile(hc, q);

			sched_row(&t, iv, nm[r], iv ? (isnan(vd) ? "-" : fmt_dur(a, sizeof(a), (uint64_t)vd)) : "",
				  isnan(vc) ? "-" : fmt_dur(b, sizeof(b), (uint64_t)vc));
		}
	}
	for (int h = 0; h < STAGES; h++) {
		for (int r = 0; r < 2; r++) {
			const uint64_t *hd = stage_hist(k, h), *hc = stage_hist(c, h);
			double q = r ? 0.99 : 0.5, vd = iv ? hist_quantile(hd, q) : NAN, vc = hist_quantile(hc, q);
			char nm[48];

			snprintf(nm, sizeof(nm), "%s %s", stage_rows[h], r ? "p99" : "p50");
			sched_row(&t, iv, nm, iv ? (isnan(vd) ? "-" : fmt_dur(a, sizeof(a), (uint64_t)vd)) : "",
				  isnan(vc) ? "-" : fmt_dur(b, sizeof(b), (uint64_t)vc));
		}
	}
	ROW_COUNT("jit hits", jit_hits);
	ROW_COUNT("jit misses", jit_misses);
	ROW_COUNT("jit compiles", jit_compiles);
	ROW_COUNT("jit failures", jit_failures);
	sched_row(&t, iv, "jit compile mean", iv ? fmt_dur_fig(a, sizeof(a), fd->jit_compile_mean_ns) : "",
		  fmt_dur_fig(b, sizeof(b), fc->jit_compile_mean_ns));
	sched_row(&t, iv, "jit compile max", "-",
		  c->jit_compiles ? fmt_dur(b, sizeof(b), c->jit_compile_max_ns) : "-");
	sched_row(&t, iv, "executor cpu", iv ? fmt_share(a, sizeof(a), fd->cpu_pct / 100.0) : "",
		  fmt_share(b, sizeof(b), fc->cpu_pct / 100.0));
	sched_row(&t, iv, "executor busy", iv ? fmt_share(a, sizeof(a), fd->work_pct / 100.0) : "",
		  fmt_share(b, sizeof(b), fc->work_pct / 100.0));
	sched_row(&t, iv, "launcher busy", iv ? fmt_share(a, sizeof(a), fd->launch_pct / 100.0) : "",
		  fmt_share(b, sizeof(b), fc->launch_pct / 100.0));
	ROW_RATE("loop passes/s", loops_s);
	ROW_RATE("commands/s", commands_s);
	sched_row(&t, iv, "busy ns/command", iv ? fmt_fig(a, sizeof(a), fd->ns_per_command, 0) : "",
		  fmt_fig(b, sizeof(b), fc->ns_per_command, 0));
	sched_row(&t, iv, "busy: sessions", iv ? fmt_share(a, sizeof(a), fd->take_share) : "",
		  fmt_share(b, sizeof(b), fc->take_share));
	sched_row(&t, iv, "busy: dispatching", iv ? fmt_share(a, sizeof(a), fd->disp_share) : "",
		  fmt_share(b, sizeof(b), fc->disp_share));
#undef ROW_RATE
#undef ROW_COUNT
	table_print(&t);
	if (fk->nclasses)
		sched_print_classes(k, fk, iv);
	if (fk->nparts)
		sched_print_parts(k, fk, iv);
}

/* The record of GPU idx in a snapshot, or NULL. */
static const struct ooo_sched_rec *sched_find(const struct ooo_sched_rec *r, size_t n, uint32_t idx)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].index == idx)
			return &r[i];
	return NULL;
}

/* One snapshot of every GPU (and, with dev, the devices' failure reasons); 0 or an exit code (reported). */
static int sched_snapshot(struct ooo_sched_rec **r, size_t *n, struct ooo_device_rec **dev, size_t *ndev)
{
	ooo_session *s;
	int rc, err;

	if (!(s = admin_open(&rc)))
		return rc;
	err = fetch_list(s, OOO_MSG_SCHED, sizeof(**r), (void **)r, n);
	/* the devices only explain missing counters: their absence is no failure */
	if (err == 0 && dev && fetch_list(s, OOO_MSG_DEVICES, sizeof(**dev), (void **)dev, ndev) < 0) {
		*dev = NULL;
		*ndev = 0;
	}
	ooo_close(s);
	return err < 0 ? report("sched", err) : 0;
}

/* Whether a selected GPU has counters in the snapshot (else an interval would measure nothing). */
static bool sched_any(const struct ooo_sched_rec *r, size_t n, long want)
{
	for (size_t i = 0; i < n; i++)
		if ((want < 0 || r[i].device == (uint32_t)want) && r[i].have)
			return true;
	return false;
}

/* True while a GPU with counters in both snapshots shows the same one twice. */
static bool sched_waiting(const struct ooo_sched_rec *r1, size_t n1, const struct ooo_sched_rec *r2, size_t n2,
			  long want)
{
	for (size_t i = 0; i < n2; i++) {
		const struct ooo_sched_rec *a = sched_find(r1, n1, r2[i].index);

		if (want >= 0 && r2[i].device != (uint32_t)want)
			continue;
		if (a && sched_compare(a, &r2[i]) == SCHED_STALE)
			return true;
	}
	return false;
}

/*
 * One GPU's figures, as a JSON array element or as text (sep: a blank line
 * before it). a: its record in the first snapshot (NULL: only one was
 * taken); b: in the last; dv: its device record, NULL if unknown.
 */
static void sched_show(const struct ooo_sched_rec *a, const struct ooo_sched_rec *b, const struct ooo_device_rec *dv,
		       bool sep)
{
	enum sched_cmp k;
	struct ooo_sched_counters d;
	struct sched_fig fd, fc;
	char why[OOO_ERRMSG_MAX + 64], b1[64], b2[64];

	k = sched_compare(a, b);
	if (k == SCHED_INTERVAL) {
		sched_delta(&a->c, &b->c, &d);
		sched_figures(&d, d.snapshot_ns, &fd);
	}
	if (k != SCHED_NONE)
		sched_figures(&b->c, b->c.up_ns, &fc);
	else
		sched_why_none(why, sizeof(why), b->state, dv ? dv->reason : NULL);
	if (opt_json) {
		j_obj(NULL);
		j_u64("index", b->index);
		j_u64("device", b->device);
		j_str("domain", b->domain);
		j_str("state", dev_state(b->state));
		j_bool("have_counters", k != SCHED_NONE);
		j_str("reason", k == SCHED_NONE ? why : NULL);
		j_bool("restarted", k == SCHED_RESTARTED);
		j_str("note", sched_note(k));
		if (k == SCHED_NONE) {
			j_null("age_ns");
			j_null("up_ns");
			j_null("snapshot_ns");
		} else {
			j_u64("age_ns", b->age_ns);
			j_u64("up_ns", b->c.up_ns);
			j_u64("snapshot_ns", b->c.snapshot_ns);
		}
		if (k == SCHED_INTERVAL) {
			j_u64("interval_ns", d.snapshot_ns);
			j_sched("interval", &d, &fd);
		} else {
			j_null("interval_ns");
			j_null("interval");
		}
		if (k != SCHED_NONE)
			j_sched("cumulative", &b->c, &fc);
		else
			j_null("cumulative");
		j_obj_end();
		return;
	}
	if (sep)
		putchar('\n');
	if (k == SCHED_NONE) {
		printf("gpu %" PRIu32 " %s: no scheduler counters: %s\n", b->device,
		       DOMAIN_NAME(b->domain), why);
		return;
	}
	printf("gpu %" PRIu32 " %s (%s): executor up %s, counters %s old", b->device,
	       DOMAIN_NAME(b->domain), dev_state(b->state),
	       fmt_dur(b1, sizeof(b1), b->c.up_ns), fmt_dur(b2, sizeof(b2), b->age_ns));
	if (k == SCHED_INTERVAL)
		printf(", interval %s\n", fmt_dur(b1, sizeof(b1), d.snapshot_ns));
	else
		putchar('\n');
	if (sched_note(k))
		printf("note: %s: cumulative figures only\n", sched_note(k));
	sched_print(k == SCHED_INTERVAL ? &d : NULL, &fd, &b->c, &fc);
}

#define SCHED_WAIT_MORE_NS (2500ull * 1000000ull) /* the executors report about once a second */
#define SCHED_POLL_NS (100ull * 1000000ull)

int do_sched(int argc, char **argv)
{
	struct ooo_sched_rec *r1 = NULL, *r2 = NULL;
	struct ooo_device_rec *dev = NULL;
	size_t n1 = 0, n2 = 0, ndev = 0, shown = 0;
	uint64_t interval = 1000, v;
	bool interval_used = true;
	long want = -1;
	int c, rc;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "d:i:")) != -1) {
		if (c == 'd') {
			if (args_u64(optarg, 10, 0, UINT32_MAX - 1, &v) < 0)
				return usage_error("--device wants a GPU index, not '%s'", optarg);
			want = (long)v;
		} else if (c == 'i') {
			if (args_u64(optarg, 10, 0, 3600000, &interval) < 0)
				return usage_error("--interval wants milliseconds from 0 to 3600000, not '%s'", optarg);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if ((rc = sched_snapshot(&r1, &n1, &dev, &ndev)))
		return rc;
	if (interval && sched_any(r1, n1, want)) {
		uint64_t deadline;

		free(dev);
		dev = NULL;
		ndev = 0;
		sleep_ns((uint64_t)interval * 1000000ull);
		deadline = (uint64_t)mono_ns() + SCHED_WAIT_MORE_NS;
		for (;;) {
			if ((rc = sched_snapshot(&r2, &n2, &dev, &ndev))) {
				free(r1);
				return rc;
			}
			if (!sched_waiting(r1, n1, r2, n2, want) || (uint64_t)mono_ns() >= deadline)
				break;
			free(r2);
			free(dev);
			r2 = NULL;
			dev = NULL;
			sleep_ns(SCHED_POLL_NS);
		}
	} else {
		/* one snapshot: asked for, or no counters to take a difference of */
		r2 = r1;
		n2 = n1;
		r1 = NULL;
		n1 = 0;
		interval_used = false;
	}
	uint32_t ngpus = 0;
	bool found = false;

	for (size_t i = 0; i < n2; i++) {
		if (r2[i].device + 1 > ngpus)
			ngpus = r2[i].device + 1;
		found |= want >= 0 && r2[i].device == (uint32_t)want;
	}
	if (want >= 0 && !found) {
		if (n2)
			err_msg("no GPU %ld: oood has %" PRIu32 " (0 to %" PRIu32 ")", want, ngpus, ngpus - 1);
		else
			err_msg("no GPU %ld: oood runs no GPU executors", want);
		free(r1);
		free(r2);
		free(dev);
		return RC_FAIL;
	}

	if (opt_json) {
		j_obj(NULL);
		j_u64("interval_ms", interval);
		j_arr("gpus");
	} else if (!n2) {
		printf("no GPU executors (executor = no in the configuration)\n");
	}
	for (size_t i = 0; i < n2; i++) {
		const struct ooo_sched_rec *b = &r2[i], *a = interval_used ? sched_find(r1, n1, b->index) : NULL;
		const struct ooo_device_rec *dv = NULL;
		static struct ooo_sched_rec none; /* the first snapshot lacked the GPU: as if it had no counters */

		if (want >= 0 && b->device != (uint32_t)want)
			continue;
		if (interval_used && !a)
			a = &none;
		for (size_t j = 0; j < ndev; j++)
			if (dev[j].index == b->index)
				dv = &dev[j];
		sched_show(a, b, dv, shown++ > 0);
	}
	if (opt_json) {
		j_arr_end();
		j_obj_end();
	}
	free(r1);
	free(r2);
	free(dev);
	return RC_OK;
}

