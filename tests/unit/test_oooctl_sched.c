/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the arithmetic of `oooctl sched` (rates, shares, the delta
 * of two snapshots, restarted executors) with synthetic counters: the pure
 * functions of tools/oooctl/sched_calc.c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../tools/json.h"
#include "../../tools/oooctl/sched_calc.h"

#define MS 1000000ull
#define S 1000000000ull

static void assert_near(double got, double want)
{
	if (!(fabs(got - want) <= 1e-9 * (fabs(want) > 1 ? fabs(want) : 1)))
		fail_msg("got %.12g, want %.12g", got, want);
}

/* A run that started at start_ns, snapshot at snap_ns, with every counter scaled by k. */
static void mk(struct ooo_sched_counters *c, uint64_t start_ns, uint64_t snap_ns, uint64_t k)
{
	memset(c, 0, sizeof(*c));
	c->snapshot_ns = snap_ns;
	c->up_ns = snap_ns - start_ns;
	c->bundles = 100 * k;
	c->fused_bundles = 60 * k;
	c->launches = 400 * k;
	c->fused_launches = 360 * k;
	c->direct_launches = 40 * k;
	c->dispatch_full = 50 * k;
	c->dispatch_slack = 30 * k;
	c->dispatch_idle = 15 * k;
	c->dispatch_alone = 5 * k;
	c->retried = 1 * k;
	c->jit_hits = 9 * k;
	c->jit_misses = 1 * k;
	c->jit_compiles = 2 * k;
	c->jit_failures = 0;
	c->jit_compile_ns = 2 * k * 30 * MS;
	c->jit_compile_max_ns = 40 * MS + k; /* a maximum: not a difference */
	c->cpu_ns = k * 250 * MS;
	c->loops = 1000 * k;
	c->work_ns = k * 100 * MS;
	c->launch_ns = k * 150 * MS;
	c->commands = 500 * k;
	c->max_members = 8 + (uint32_t)k;
	c->nclasses = 2;
	strcpy(c->classes[0].name, "interactive");
	c->classes[0].slo_us = 500;
	c->classes[0].launches = 300 * k;
	c->classes[0].deadline_misses = 3 * k;
	c->classes[0].lat_sum_ns = 300 * k * 200000ull;
	c->classes[0].lat_max_ns = 900000 + k;
	/* its commands: submits in [4, 8) us, runs in [64, 128) us, one run in 100 in [1, 2) ms */
	c->classes[0].cmd_stage_hist[OOO_STAGE_SUBMIT][3] = 50 * k;
	c->classes[0].cmd_stage_hist[OOO_STAGE_RUN][7] = 99 * k;
	c->classes[0].cmd_stage_hist[OOO_STAGE_RUN][11] = k;
	strcpy(c->classes[1].name, "batch");
	c->classes[1].slo_us = 50000;
	c->classes[1].launches = 100 * k;
	c->classes[1].lat_sum_ns = 100 * k * 2 * MS;
	c->classes[1].lat_max_ns = 7 * MS;
	c->npartitions = 2;
	c->parts[0] = (struct ooo_sched_part_stats){ .sms = 66, .max_inflight = 4, .bundles = 70 * k,
						     .busy_ns = k * 200 * MS };
	c->parts[1] = (struct ooo_sched_part_stats){ .sms = 66, .max_inflight = 4, .bundles = 30 * k,
						     .busy_ns = k * 600 * MS };
}

static void test_rates_and_shares(void **state)
{
	assert_near(sched_per_s(500, S / 2), 1000.0);
	assert_near(sched_per_s(0, S), 0.0);
	assert_true(isnan(sched_per_s(5, 0)));
	assert_true(isnan(sched_per_s(0, 0)));
	assert_near(sched_share(1, 4), 0.25);
	assert_near(sched_share(0, 4), 0.0);
	assert_true(isnan(sched_share(0, 0)));
	assert_true(isnan(sched_share(7, 0)));
	assert_int_equal(sched_sub(10, 3), 7);
	assert_int_equal(sched_sub(3, 10), 0); /* a counter that went back is no negative count */
	assert_int_equal(sched_sub(UINT64_MAX, 0), UINT64_MAX);
	assert_near(sched_util_pct(0.5), 50.0);
	assert_near(sched_util_pct(1.0), 100.0);
	assert_near(sched_util_pct(1.7), 100.0); /* capped */
	assert_true(isnan(sched_util_pct(NAN)));
}

static void test_delta_one_run(void **state)
{
	struct ooo_sched_counters a, b, d;
	struct ooo_sched_rec ra = { .have = 1 }, rb = { .have = 1 };
	struct sched_fig f;

	/* started at 10 s; snapshots at 12 s and 14 s: the second has 3x the first's counts */
	mk(&a, 10 * S, 12 * S, 1);
	mk(&b, 10 * S, 14 * S, 3);
	assert_true(sched_same_run(&a, &b));
	ra.c = a;
	rb.c = b;
	assert_int_equal(sched_compare(&ra, &rb), SCHED_INTERVAL);
	sched_delta(&a, &b, &d);
	assert_int_equal(d.snapshot_ns, 2 * S);
	assert_int_equal(d.up_ns, 4 * S);
	assert_int_equal(d.bundles, 200);
	assert_int_equal(d.launches, 800);
	assert_int_equal(d.fused_launches, 720);
	assert_int_equal(d.direct_launches, 80);
	assert_int_equal(d.dispatch_full, 100);
	assert_int_equal(d.retried, 2);
	assert_int_equal(d.jit_compiles, 4);
	assert_int_equal(d.cpu_ns, 500 * MS);
	assert_int_equal(d.loops, 2000);
	assert_int_equal(d.work_ns, 200 * MS);
	assert_int_equal(d.launch_ns, 300 * MS);
	assert_int_equal(d.commands, 1000);
	/* maxima are the later snapshot's, not differences */
	assert_int_equal(d.max_members, 11);
	assert_int_equal(d.jit_compile_max_ns, 40 * MS + 3);
	assert_int_equal(d.classes[0].lat_max_ns, 900003);
	assert_string_equal(d.classes[0].name, "interactive");
	assert_int_equal(d.classes[0].launches, 600);
	assert_int_equal(d.classes[0].deadline_misses, 6);
	/* a class's stage histograms are differences too; the quantiles are their buckets' upper bounds */
	assert_int_equal(d.classes[0].cmd_stage_hist[OOO_STAGE_SUBMIT][3], 100);
	assert_int_equal(d.classes[0].cmd_stage_hist[OOO_STAGE_RUN][7], 198);
	assert_int_equal(d.classes[0].cmd_stage_hist[OOO_STAGE_RUN][11], 2);
	assert_int_equal(d.classes[1].cmd_stage_hist[OOO_STAGE_RUN][7], 0);
	assert_near(hist_quantile(d.classes[0].cmd_stage_hist[OOO_STAGE_SUBMIT], 0.5), 8000.0);
	assert_near(hist_quantile(d.classes[0].cmd_stage_hist[OOO_STAGE_RUN], 0.5), 128000.0);
	assert_near(hist_quantile(d.classes[0].cmd_stage_hist[OOO_STAGE_RUN], 0.995), 2048000.0);
	assert_true(isnan(hist_quantile(d.classes[0].cmd_stage_hist[OOO_STAGE_QUEUE], 0.5))); /* none queued: no figure */
	assert_int_equal(d.parts[1].busy_ns, 1200 * MS);
	assert_int_equal(d.parts[1].sms, 66);

	sched_figures(&d, d.snapshot_ns, &f);
	assert_int_equal(f.span_ns, 2 * S);
	assert_near(f.bundles_s, 100.0);
	assert_near(f.fused_bundles_s, 60.0);
	assert_near(f.launches_s, 400.0);
	assert_near(f.fused_launches_s, 360.0);
	assert_near(f.direct_launches_s, 40.0);
	assert_near(f.members, 4.0);
	assert_near(f.fused_share, 0.9);
	assert_near(f.dispatch_share[0], 0.5);
	assert_near(f.dispatch_share[1], 0.3);
	assert_near(f.dispatch_share[2], 0.15);
	assert_near(f.dispatch_share[3], 0.05);
	assert_near(f.jit_hit_share, 0.9);
	assert_near(f.jit_compile_mean_ns, 30.0 * MS);
	assert_near(f.cpu_pct, 25.0); /* 0.5 s of CPU in 2 s */
	assert_near(f.loops_s, 1000.0);
	assert_near(f.work_pct, 10.0);
	assert_near(f.launch_pct, 15.0); /* the launcher: 300 ms in 2 s */
	assert_near(f.commands_s, 500.0);
	assert_near(f.ns_per_command, 200000.0); /* 200 ms of work over 1000 commands */
	assert_int_equal(f.nclasses, 2);
	assert_near(f.classes[0].launches_s, 300.0);
	assert_near(f.classes[0].miss_share, 0.01);
	assert_near(f.classes[0].lat_mean_us, 200.0);
	assert_near(f.classes[0].lat_max_us, 900.003);
	assert_near(f.classes[1].miss_share, 0.0);
	assert_near(f.classes[1].lat_mean_us, 2000.0);
	assert_int_equal(f.nparts, 2);
	assert_near(f.parts[0].bundles_s, 70.0);
	assert_near(f.parts[0].util, 0.2);
	assert_near(f.parts[1].util, 0.6);

	/* cumulative figures of the second snapshot: over its up_ns */
	sched_figures(&b, b.up_ns, &f);
	assert_near(f.bundles_s, 75.0);
	assert_near(f.members, 4.0);
	assert_near(f.cpu_pct, 18.75);
	assert_near(f.parts[1].util, 0.45);
}

static void test_restarted_executor(void **state)
{
	struct ooo_sched_counters a, b;
	struct ooo_sched_rec ra = { .have = 1 }, rb = { .have = 1 };
	struct sched_fig f;

	mk(&a, 10 * S, 20 * S, 5);
	/* up_ns went back: a new run */
	mk(&b, 19 * S, 21 * S, 1);
	assert_false(sched_same_run(&a, &b));
	ra.c = a;
	rb.c = b;
	assert_int_equal(sched_compare(&ra, &rb), SCHED_RESTARTED);
	assert_non_null(strstr(sched_note(SCHED_RESTARTED), "restarted"));
	/* its cumulative figures are the new run's */
	sched_figures(&b, b.up_ns, &f);
	assert_near(f.bundles_s, 50.0);
	/* snapshot_ns went back */
	mk(&b, 10 * S, 19 * S, 6);
	b.up_ns = 11 * S;
	assert_false(sched_same_run(&a, &b));
	/* a quick restart: up_ns grew, but the run started later (after its backoff) */
	mk(&a, 10 * S, 10 * S + 300 * MS, 1);
	mk(&b, 11 * S + 500 * MS, 12 * S + 300 * MS, 2);
	assert_true(b.up_ns > a.up_ns);
	assert_false(sched_same_run(&a, &b));
	/* counters that went back, even with plausible clocks */
	mk(&a, 10 * S, 12 * S, 4);
	mk(&b, 10 * S, 14 * S, 4);
	b.launches = a.launches - 1;
	assert_false(sched_same_run(&a, &b));
	/* a start time that jitters by a little is the same run */
	mk(&a, 10 * S, 12 * S, 1);
	mk(&b, 10 * S + 3 * MS, 13 * S, 2);
	assert_true(sched_same_run(&a, &b));
	/* executors that leave up_ns 0 are judged by the clock and the counters alone */
	mk(&a, 10 * S, 12 * S, 1);
	mk(&b, 10 * S, 13 * S, 2);
	a.up_ns = b.up_ns = 0;
	assert_true(sched_same_run(&a, &b));
}

static void test_zero_interval_and_zero_counts(void **state)
{
	struct ooo_sched_counters a, b, d, z;
	struct ooo_sched_rec ra = { .have = 1 }, rb = { .have = 1 };
	struct sched_fig f;

	/* the same report twice: same run, nothing new, no interval */
	mk(&a, 10 * S, 12 * S, 1);
	b = a;
	assert_true(sched_same_run(&a, &b));
	ra.c = a;
	rb.c = b;
	assert_int_equal(sched_compare(&ra, &rb), SCHED_STALE);
	sched_delta(&a, &b, &d);
	assert_int_equal(d.snapshot_ns, 0);
	assert_int_equal(d.bundles, 0);
	sched_figures(&d, d.snapshot_ns, &f);
	assert_true(isnan(f.bundles_s));
	assert_true(isnan(f.launches_s));
	assert_true(isnan(f.cpu_pct));
	assert_true(isnan(f.members));
	assert_true(isnan(f.fused_share));
	assert_true(isnan(f.jit_hit_share));
	assert_true(isnan(f.jit_compile_mean_ns));
	assert_true(isnan(f.dispatch_share[0]));
	assert_true(isnan(f.classes[0].launches_s));
	assert_true(isnan(f.classes[0].miss_share));
	assert_true(isnan(f.classes[0].lat_mean_us));
	assert_true(isnan(f.parts[0].util));
	assert_true(isnan(f.parts[0].bundles_s));

	/* an idle interval: time passed, nothing ran */
	mk(&b, 10 * S, 13 * S, 1);
	sched_delta(&a, &b, &d);
	sched_figures(&d, d.snapshot_ns, &f);
	assert_near(f.bundles_s, 0.0);
	assert_near(f.launches_s, 0.0);
	assert_true(isnan(f.members));     /* no bundles */
	assert_true(isnan(f.fused_share)); /* no launches */
	assert_near(f.parts[0].util, 0.0);

	/* a fresh executor that has reported all zeros */
	memset(&z, 0, sizeof(z));
	sched_figures(&z, z.up_ns, &f);
	assert_true(isnan(f.bundles_s));
	assert_true(isnan(f.members));
	assert_int_equal(f.nclasses, 0);
	assert_int_equal(f.nparts, 0);
	/* with time but no work */
	z.up_ns = S;
	sched_figures(&z, z.up_ns, &f);
	assert_near(f.bundles_s, 0.0);
	assert_true(isnan(f.members));
}

static void test_classes_by_name(void **state)
{
	struct ooo_sched_counters a, b, d;

	mk(&a, 10 * S, 12 * S, 1);
	mk(&b, 10 * S, 13 * S, 2);
	/* b lists batch first, and a class that appeared in between, and the overflow row */
	b.nclasses = 4;
	b.classes[2] = b.classes[0]; /* interactive */
	b.classes[0] = a.classes[1];  /* batch, at its counts in a ... */
	b.classes[0].launches += 50;  /* ... plus 50 */
	memset(&b.classes[1], 0, sizeof(b.classes[1]));
	strcpy(b.classes[1].name, "new");
	b.classes[1].launches = 7;
	b.classes[1].lat_sum_ns = 7 * MS;
	memset(&b.classes[3], 0, sizeof(b.classes[3]));
	b.classes[3].launches = 9; /* "" */
	sched_delta(&a, &b, &d);
	assert_int_equal(d.nclasses, 4);
	assert_string_equal(d.classes[0].name, "batch");
	assert_int_equal(d.classes[0].launches, 50);
	assert_string_equal(d.classes[1].name, "new");
	assert_int_equal(d.classes[1].launches, 7); /* counted from zero */
	assert_int_equal(d.classes[1].lat_sum_ns, 7 * MS);
	assert_string_equal(d.classes[2].name, "interactive");
	assert_int_equal(d.classes[2].launches, 300);
	/* matched by name, not by row: interactive's histograms moved with it */
	assert_int_equal(d.classes[2].cmd_stage_hist[OOO_STAGE_RUN][7], 99);
	assert_int_equal(d.classes[0].cmd_stage_hist[OOO_STAGE_RUN][7], 0);
	assert_string_equal(d.classes[3].name, "");
	assert_int_equal(d.classes[3].launches, 9);
	assert_string_equal(class_label(d.classes[3].name), "(other classes)");
	/* a partition that b has and a has not counts from zero */
	b.npartitions = 3;
	b.parts[2] = (struct ooo_sched_part_stats){ .sms = 10, .bundles = 5, .busy_ns = 4 * MS };
	sched_delta(&a, &b, &d);
	assert_int_equal(d.npartitions, 3);
	assert_int_equal(d.parts[2].bundles, 5);
	assert_int_equal(d.parts[2].busy_ns, 4 * MS);
	/* counts beyond the tables are clamped, never read past them */
	b.nclasses = 1000;
	b.npartitions = 1000;
	sched_delta(&a, &b, &d);
	assert_int_equal(d.nclasses, OOO_SCHED_CLASSES);
	assert_int_equal(d.npartitions, OOO_SCHED_PARTITIONS);
}

static void test_compare_and_reasons(void **state)
{
	struct ooo_sched_rec none = { .state = OOO_DEV_READY }, have = { .state = OOO_DEV_READY, .have = 1 };
	char buf[512];

	mk(&have.c, 10 * S, 12 * S, 1);
	assert_int_equal(sched_compare(NULL, &none), SCHED_NONE);
	assert_int_equal(sched_compare(&have, &none), SCHED_NONE);
	assert_int_equal(sched_compare(NULL, &have), SCHED_CUMULATIVE);
	assert_int_equal(sched_compare(&none, &have), SCHED_FIRST);
	assert_null(sched_note(SCHED_INTERVAL));
	assert_null(sched_note(SCHED_CUMULATIVE));
	assert_non_null(sched_note(SCHED_FIRST));
	assert_non_null(sched_note(SCHED_STALE));

	assert_non_null(strstr(sched_why_none(buf, sizeof(buf), OOO_DEV_READY, ""), "not reported"));
	assert_non_null(strstr(buf, "ready"));
	assert_non_null(strstr(sched_why_none(buf, sizeof(buf), OOO_DEV_STARTING, NULL), "starting"));
	sched_why_none(buf, sizeof(buf), OOO_DEV_FAILED, "no NVIDIA driver");
	assert_string_equal(buf, "no executor runs (failed: no NVIDIA driver)");
	sched_why_none(buf, sizeof(buf), OOO_DEV_RESTARTING, NULL);
	assert_string_equal(buf, "no executor runs (restarting)");
}

/* The JSON of figures without a denominator: null, never nan or inf. */
static void test_json_nulls(void **state)
{
	struct ooo_sched_counters z;
	struct sched_fig f;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	assert_non_null(m);
	memset(&z, 0, sizeof(z));
	z.nclasses = 1;
	z.npartitions = 1;
	sched_figures(&z, 0, &f);
	j_set_output(m);
	j_sched(NULL, &z, &f);
	fclose(m);
	assert_non_null(strstr(text, "\"bundles_per_s\": null"));
	assert_non_null(strstr(text, "\"members_per_bundle\": null"));
	assert_non_null(strstr(text, "\"cpu_pct\": null"));
	assert_non_null(strstr(text, "\"util_pct\": null"));
	assert_non_null(strstr(text, "\"bundles\": 0"));
	assert_null(strstr(text, ": nan"));
	assert_null(strstr(text, ": -nan"));
	assert_null(strstr(text, ": inf"));
	free(text);
	j_set_output(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rates_and_shares),
		cmocka_unit_test(test_delta_one_run),
		cmocka_unit_test(test_restarted_executor),
		cmocka_unit_test(test_zero_interval_and_zero_counts),
		cmocka_unit_test(test_classes_by_name),
		cmocka_unit_test(test_compare_and_reasons),
		cmocka_unit_test(test_json_nulls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
