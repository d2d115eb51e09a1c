/* SPDX-License-Identifier: MIT */
/* The arithmetic of `oooctl sched`: see sched_calc.h. */
#include "sched_calc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../json.h"

const char *dev_state(uint32_t s)
{
	switch (s) {
	case OOO_DEV_STARTING: return "starting";
	case OOO_DEV_READY: return "ready";
	case OOO_DEV_RESTARTING: return "restarting";
	case OOO_DEV_FAILED: return "failed";
	case OOO_DEV_STOPPED: return "stopped";
	default: return "unknown";
	}
}

/* Upper bound in ns of the bucket holding quantile q of a log2 us histogram; NAN when empty. */
double hist_quantile(const uint64_t *h, double q)
{
	uint64_t total = 0, acc = 0;

	for (int b = 0; b < OOO_TM_BUCKETS; b++)
		total += h[b];
	if (!total)
		return NAN;
	for (int b = 0; b < OOO_TM_BUCKETS; b++) {
		acc += h[b];
		if ((double)acc >= q * (double)total)
			return 1000.0 * (double)(1ull << b);
	}
	return 1000.0 * (double)(1ull << (OOO_TM_BUCKETS - 1));
}

uint64_t sched_sub(uint64_t later, uint64_t earlier)
{
	return later > earlier ? later - earlier : 0;
}

/* n events in ns nanoseconds, per second; NAN when ns is 0. */
double sched_per_s(uint64_t n, uint64_t ns)
{
	return ns ? (double)n * 1e9 / (double)ns : NAN;
}

/* part / whole; NAN when whole is 0. */
double sched_share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : NAN;
}

/* A utilisation estimate as displayed: percent, at most 100 (event timings of overlapping bundles add up). */
double sched_util_pct(double share)
{
	if (!isfinite(share))
		return share;
	return share > 1.0 ? 100.0 : share * 100.0;
}

uint32_t sched_nparts(const struct ooo_sched_counters *c)
{
	return c->npartitions < OOO_SCHED_PARTITIONS ? c->npartitions : OOO_SCHED_PARTITIONS;
}

/* Whether b, taken after a, comes from the same executor run (else: the executor restarted in between). */
bool sched_same_run(const struct ooo_sched_counters *a, const struct ooo_sched_counters *b)
{
	if (b->up_ns < a->up_ns || b->snapshot_ns < a->snapshot_ns)
		return false;
	if (a->up_ns && b->up_ns && a->up_ns <= a->snapshot_ns && b->up_ns <= b->snapshot_ns) {
		uint64_t sa = a->snapshot_ns - a->up_ns, sb = b->snapshot_ns - b->up_ns;

		if ((sa > sb ? sa - sb : sb - sa) > SCHED_START_SLOP_NS)
			return false;
	}
	/* cumulative counters never go back within one run */
	return b->bundles >= a->bundles && b->launches >= a->launches && b->cpu_ns >= a->cpu_ns &&
	       b->jit_compiles >= a->jit_compiles;
}

/* The class row of a that is b's row i: the same name, at the same index if it is there. */
static const struct ooo_sched_class_stats *sched_class_in(const struct ooo_sched_counters *a,
							  const struct ooo_sched_class_stats *cb, uint32_t i)
{
	uint32_t n = sched_nclasses(a);

	if (i < n && !strncmp(a->classes[i].name, cb->name, sizeof(cb->name)))
		return &a->classes[i];
	for (uint32_t k = 0; k < n; k++)
		if (!strncmp(a->classes[k].name, cb->name, sizeof(cb->name)))
			return &a->classes[k];
	return NULL;
}

/*
 * d = what happened between snapshots a and b of one run: every count is
 * b's minus a's, snapshot_ns is the interval, up_ns, the maxima and the
 * table shapes are b's. Classes are matched by name (one that appeared in
 * between counts from zero), partitions by index.
 */
void sched_delta(const struct ooo_sched_counters *a, const struct ooo_sched_counters *b,
			struct ooo_sched_counters *d)
{
	memset(d, 0, sizeof(*d));
	d->snapshot_ns = sched_sub(b->snapshot_ns, a->snapshot_ns);
	d->up_ns = b->up_ns;
#define SCHED_D(f) d->f = sched_sub(b->f, a->f)
	SCHED_D(bundles);
	SCHED_D(fused_bundles);
	SCHED_D(launches);
	SCHED_D(fused_launches);
	SCHED_D(direct_launches);
	SCHED_D(dispatch_full);
	SCHED_D(dispatch_slack);
	SCHED_D(dispatch_idle);
	SCHED_D(dispatch_alone);
	SCHED_D(retried);
	SCHED_D(unfused_nopay);
	SCHED_D(stream_waits);
	SCHED_D(chained_launches);
	SCHED_D(burst_holds);
	SCHED_D(jit_hits);
	SCHED_D(jit_misses);
	SCHED_D(jit_compiles);
	SCHED_D(jit_failures);
	SCHED_D(jit_compile_ns);
	SCHED_D(cpu_ns);
	SCHED_D(loops);
	SCHED_D(work_ns);
	SCHED_D(launch_ns);
	for (unsigned i = 0; i < OOO_PRIO_TIERS; i++)
		SCHED_D(tier_bundles[i]);
	for (unsigned i = 0; i < OOO_SCHED_STREAMS; i++)
		SCHED_D(stream_bundles[i]);
	SCHED_D(commands);
	SCHED_D(param_bundles);
	SCHED_D(take_ns);
	SCHED_D(dispatch_ns);
#undef SCHED_D
	for (int k = 0; k < OOO_TM_BUCKETS; k++) {
		d->hold_hist[k] = sched_sub(b->hold_hist[k], a->hold_hist[k]);
		d->lat_hist[k] = sched_sub(b->lat_hist[k], a->lat_hist[k]);
		d->cmd_submit_hist[k] = sched_sub(b->cmd_submit_hist[k], a->cmd_submit_hist[k]);
		d->cmd_queue_hist[k] = sched_sub(b->cmd_queue_hist[k], a->cmd_queue_hist[k]);
		d->cmd_run_hist[k] = sched_sub(b->cmd_run_hist[k], a->cmd_run_hist[k]);
		d->cmd_notify_hist[k] = sched_sub(b->cmd_notify_hist[k], a->cmd_notify_hist[k]);
		d->bundle_gpu_hist[k] = sched_sub(b->bundle_gpu_hist[k], a->bundle_gpu_hist[k]);
	}
	d->submit_stamp_bad = sched_sub(b->submit_stamp_bad, a->submit_stamp_bad);
	d->jit_compile_max_ns = b->jit_compile_max_ns;
	d->max_members = b->max_members;
	d->nclasses = sched_nclasses(b);
	d->npartitions = sched_nparts(b);
	d->streams = b->streams;
	for (uint32_t i = 0; i < d->nclasses; i++) {
		const struct ooo_sched_class_stats *cb = &b->classes[i], *ca = sched_class_in(a, cb, i);
		struct ooo_sched_class_stats *cd = &d->classes[i];

		memcpy(cd->name, cb->name, sizeof(cd->name));
		cd->name[sizeof(cd->name) - 1] = '\0';
		cd->slo_us = cb->slo_us;
		cd->launches = sched_sub(cb->launches, ca ? ca->launches : 0);
		cd->deadline_misses = sched_sub(cb->deadline_misses, ca ? ca->deadline_misses : 0);
		cd->lat_sum_ns = sched_sub(cb->lat_sum_ns, ca ? ca->lat_sum_ns : 0);
		cd->lat_max_ns = cb->lat_max_ns;
		for (int h = 0; h < OOO_CMD_STAGES; h++)
			for (int k = 0; k < OOO_TM_BUCKETS; k++)
				cd->cmd_stage_hist[h][k] = sched_sub(cb->cmd_stage_hist[h][k], ca ? ca->cmd_stage_hist[h][k] : 0);
	}
	for (uint32_t i = 0; i < d->npartitions; i++) {
		const struct ooo_sched_part_stats *pb = &b->parts[i];
		/* a partition of another class now (a new plan) counts from zero */
		const struct ooo_sched_part_stats *pa =
			i < sched_nparts(a) && !strcmp(a->parts[i].name, pb->name) ? &a->parts[i] : NULL;

		memcpy(d->parts[i].name, pb->name, sizeof(d->parts[i].name));
		d->parts[i].sms = pb->sms;
		d->parts[i].max_inflight = pb->max_inflight;
		d->parts[i].reserve_inflight = pb->reserve_inflight;
		d->parts[i].bundles = sched_sub(pb->bundles, pa ? pa->bundles : 0);
		d->parts[i].busy_ns = sched_sub(pb->busy_ns, pa ? pa->busy_ns : 0);
	}
}


void sched_figures(const struct ooo_sched_counters *c, uint64_t span_ns, struct sched_fig *f)
{
	uint64_t reasons = c->dispatch_full + c->dispatch_slack + c->dispatch_idle + c->dispatch_alone;
	const uint64_t why[4] = { c->dispatch_full, c->dispatch_slack, c->dispatch_idle, c->dispatch_alone };

	memset(f, 0, sizeof(*f));
	f->span_ns = span_ns;
	f->bundles_s = sched_per_s(c->bundles, span_ns);
	f->fused_bundles_s = sched_per_s(c->fused_bundles, span_ns);
	f->launches_s = sched_per_s(c->launches, span_ns);
	f->fused_launches_s = sched_per_s(c->fused_launches, span_ns);
	f->direct_launches_s = sched_per_s(c->direct_launches, span_ns);
	f->members = sched_share(c->launches, c->bundles);
	f->fused_share = sched_share(c->fused_launches, c->launches);
	for (int i = 0; i < 4; i++)
		f->dispatch_share[i] = sched_share(why[i], reasons);
	f->jit_hit_share = sched_share(c->jit_hits, c->jit_hits + c->jit_misses);
	f->jit_compile_mean_ns = sched_share(c->jit_compile_ns, c->jit_compiles);
	f->cpu_pct = sched_share(c->cpu_ns, span_ns) * 100.0;
	f->loops_s = sched_per_s(c->loops, span_ns);
	f->work_pct = sched_share(c->work_ns, span_ns) * 100.0;
	f->launch_pct = sched_share(c->launch_ns, span_ns) * 100.0;
	f->commands_s = sched_per_s(c->commands, span_ns);
	f->ns_per_command = sched_share(c->work_ns, c->commands);
	f->take_share = sched_share(c->take_ns, c->work_ns);
	f->disp_share = sched_share(c->dispatch_ns, c->work_ns);
	f->nclasses = sched_nclasses(c);
	f->nparts = sched_nparts(c);
	for (uint32_t i = 0; i < f->nclasses; i++) {
		const struct ooo_sched_class_stats *k = &c->classes[i];

		f->classes[i].launches_s = sched_per_s(k->launches, span_ns);
		f->classes[i].miss_share = sched_share(k->deadline_misses, k->launches);
		f->classes[i].lat_mean_us = sched_share(k->lat_sum_ns, k->launches) / 1e3;
		f->classes[i].lat_max_us = (double)k->lat_max_ns / 1e3;
	}
	for (uint32_t i = 0; i < f->nparts; i++) {
		f->parts[i].bundles_s = sched_per_s(c->parts[i].bundles, span_ns);
		f->parts[i].util = sched_share(c->parts[i].busy_ns, span_ns);
	}
}


/* a: the first snapshot's record of the GPU, NULL if only one was taken; b: the last one's. */
enum sched_cmp sched_compare(const struct ooo_sched_rec *a, const struct ooo_sched_rec *b)
{
	if (!b->have)
		return SCHED_NONE;
	if (!a)
		return SCHED_CUMULATIVE;
	if (!a->have)
		return SCHED_FIRST;
	if (!sched_same_run(&a->c, &b->c))
		return SCHED_RESTARTED;
	if (b->c.snapshot_ns == a->c.snapshot_ns)
		return SCHED_STALE;
	return SCHED_INTERVAL;
}

/* Why a GPU has no counters, from its state (and the device's last failure, if known). */
const char *sched_why_none(char *buf, size_t cap, uint32_t state, const char *dev_reason)
{
	const char *sep = dev_reason && dev_reason[0] ? ": " : "";

	if (!dev_reason)
		dev_reason = "";
	switch (state) {
	case OOO_DEV_READY:
		snprintf(buf, cap, "the executor has not reported counters yet (ready)");
		break;
	case OOO_DEV_STARTING:
		snprintf(buf, cap, "the executor has not reported counters yet (starting)");
		break;
	default:
		snprintf(buf, cap, "no executor runs (%s%s%s)", dev_state(state), sep, dev_reason);
		break;
	}
	return buf;
}

const char *sched_note(enum sched_cmp k)
{
	switch (k) {
	case SCHED_FIRST: return "the executor reported its first counters during the interval";
	case SCHED_RESTARTED: return "the executor restarted between the snapshots";
	case SCHED_STALE: return "the executor reported nothing new during the interval";
	default: return NULL;
	}
}

/* KEY_p50_ns and KEY_p99_ns of histogram h (null when it is empty). */
static void j_stage_quantiles(const char *key, const uint64_t *h)
{
	char sk[48];

	snprintf(sk, sizeof(sk), "%s_p50_ns", key);
	j_num(sk, hist_quantile(h, 0.5), 0);
	snprintf(sk, sizeof(sk), "%s_p99_ns", key);
	j_num(sk, hist_quantile(h, 0.99), 0);
}

void j_sched(const char *key, const struct ooo_sched_counters *c, const struct sched_fig *f)
{
	const uint64_t why[4] = { c->dispatch_full, c->dispatch_slack, c->dispatch_idle, c->dispatch_alone };

	j_obj(key);
	j_u64("span_ns", f->span_ns);
	j_u64("bundles", c->bundles);
	j_u64("fused_bundles", c->fused_bundles);
	j_u64("launches", c->launches);
	j_u64("fused_launches", c->fused_launches);
	j_u64("direct_launches", c->direct_launches);
	j_num("bundles_per_s", f->bundles_s, 3);
	j_num("fused_bundles_per_s", f->fused_bundles_s, 3);
	j_num("launches_per_s", f->launches_s, 3);
	j_num("fused_launches_per_s", f->fused_launches_s, 3);
	j_num("direct_launches_per_s", f->direct_launches_s, 3);
	j_num("members_per_bundle", f->members, 3);
	j_u64("max_members", c->max_members);
	j_num("fused_share", f->fused_share, 4);
	j_obj("dispatch");
	for (int i = 0; i < 4; i++)
		j_u64(sched_reason_names[i], why[i]);
	j_obj_end();
	j_u64("retried", c->retried);
	j_u64("unfused_nopay", c->unfused_nopay);
	j_u64("stream_waits", c->stream_waits);
	j_u64("chained_launches", c->chained_launches);
	j_u64("burst_holds", c->burst_holds);
	j_obj("bundles_by_priority");
	for (unsigned i = 0; i < OOO_PRIO_TIERS; i++)
		j_u64(sched_tier_names[i], c->tier_bundles[i]);
	j_obj_end();
	j_obj("bundles_by_stream"); /* within their tier: "0" .. streams - 1 */
	for (unsigned i = 0; i < OOO_SCHED_STREAMS && i < (c->streams ? c->streams : 1); i++) {
		char k[4];

		snprintf(k, sizeof(k), "%u", i);
		j_u64(k, c->stream_bundles[i]);
	}
	j_obj_end();
	j_u64("param_bundles", c->param_bundles);
	j_obj("jit");
	j_u64("hits", c->jit_hits);
	j_u64("misses", c->jit_misses);
	j_u64("compiles", c->jit_compiles);
	j_u64("failures", c->jit_failures);
	j_num("hit_share", f->jit_hit_share, 4);
	j_num("compile_mean_ns", f->jit_compile_mean_ns, 0);
	j_u64("compile_max_ns", c->jit_compile_max_ns);
	j_obj_end();
	j_u64("cpu_ns", c->cpu_ns);
	j_num("cpu_pct", f->cpu_pct, 2);
	j_u64("loops", c->loops);
	j_num("loops_per_s", f->loops_s, 1);
	j_u64("work_ns", c->work_ns);
	j_num("work_pct", f->work_pct, 2);
	j_u64("launch_ns", c->launch_ns);
	j_num("launch_pct", f->launch_pct, 2);
	j_u64("commands", c->commands);
	j_num("commands_per_s", f->commands_s, 1);
	j_num("ns_per_command", f->ns_per_command, 1);
	j_u64("take_ns", c->take_ns);
	j_num("take_share", f->take_share, 4);
	j_u64("dispatch_ns", c->dispatch_ns);
	j_num("dispatch_share", f->disp_share, 4);
	j_num("hold_p50_ns", hist_quantile(c->hold_hist, 0.5), 0);
	j_num("hold_p99_ns", hist_quantile(c->hold_hist, 0.99), 0);
	j_num("latency_p50_ns", hist_quantile(c->lat_hist, 0.5), 0);
	j_num("latency_p99_ns", hist_quantile(c->lat_hist, 0.99), 0);
	for (int h = 0; h < STAGES; h++)
		j_stage_quantiles(stage_keys[h], stage_hist(c, h));
	j_u64("submit_stamps_bad", c->submit_stamp_bad);
	j_arr("classes");
	for (uint32_t i = 0; i < f->nclasses; i++) {
		const struct ooo_sched_class_stats *k = &c->classes[i];

		j_obj(NULL);
		j_str("name", k->name);
		j_u64("slo_us", k->slo_us);
		j_u64("launches", k->launches);
		j_num("launches_per_s", f->classes[i].launches_s, 3);
		j_u64("deadline_misses", k->deadline_misses);
		j_num("miss_share", f->classes[i].miss_share, 4);
		j_num("lat_mean_us", f->classes[i].lat_mean_us, 3);
		j_num("lat_max_us", f->classes[i].lat_max_us, 3);
		for (int h = 0; h < OOO_CMD_STAGES; h++)
			j_stage_quantiles(stage_keys[h], k->cmd_stage_hist[h]);
		j_obj_end();
	}
	j_arr_end();
	j_arr("partitions");
	for (uint32_t i = 0; i < f->nparts; i++) {
		j_obj(NULL);
		j_u64("index", i);
		j_str("class", c->parts[i].name[0] ? c->parts[i].name : NULL);
		j_u64("sms", c->parts[i].sms);
		j_u64("max_inflight", c->parts[i].max_inflight);
		j_u64("streams", c->streams ? c->streams : 1);
		j_u64("bundles", c->parts[i].bundles);
		j_num("bundles_per_s", f->parts[i].bundles_s, 3);
		j_u64("busy_ns", c->parts[i].busy_ns);
		j_num("util_pct", sched_util_pct(f->parts[i].util), 2);
		j_u64("reserve_inflight", c->parts[i].reserve_inflight);
		j_obj_end();
	}
	j_arr_end();
	j_obj_end();
}
