/* SPDX-License-Identifier: MIT */
/*
 * The arithmetic of `oooctl sched` (and the names and quantiles that
 * `metrics` and `top` share with it): pure functions of the executors'
 * counters, unit tested by tests/unit/test_oooctl_sched.c. No I/O, no
 * allocation, no global state; only j_sched() writes, through the JSON
 * writer of tools/json.h.
 *
 * A rate or a share without a denominator (no interval, no launches) is
 * NAN, which prints as "-" and as JSON null: never a division by zero.
 */
#ifndef OOO_TOOLS_OOOCTL_SCHED_CALC_H
#define OOO_TOOLS_OOOCTL_SCHED_CALC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ooo/proto.h>

#include "../../proto/names.h"

/* Two snapshots of one executor run agree on when it started (snapshot_ns - up_ns) to within this. */
#define SCHED_START_SLOP_NS (500ull * 1000000ull)

/* The name of an executor state (enum ooo_dev_state), "unknown" for others; static text. */
const char *dev_state(uint32_t s);

/* Upper bound in ns of the bucket holding quantile q (0..1) of a log2-microsecond histogram; NAN when empty. */
double hist_quantile(const uint64_t *h, double q);

/* later - earlier, or 0 if the counter went back. */
uint64_t sched_sub(uint64_t later, uint64_t earlier);
/* n events in ns nanoseconds, per second; NAN when ns is 0. */
double sched_per_s(uint64_t n, uint64_t ns);
/* part / whole; NAN when whole is 0. */
double sched_share(uint64_t part, uint64_t whole);
/* A utilisation estimate as displayed: percent, at most 100 (event timings of overlapping bundles add up). */
double sched_util_pct(double share);
/* c's partition rows in use: npartitions capped at the array's size (sched_nclasses: names.h). */
uint32_t sched_nparts(const struct ooo_sched_counters *c);
/* Whether b, taken after a, comes from the same executor run (else: the executor restarted in between). */
bool sched_same_run(const struct ooo_sched_counters *a, const struct ooo_sched_counters *b);

/*
 * d = what happened between snapshots a and b of one run: every count is
 * b's minus a's, snapshot_ns is the interval, up_ns, the maxima and the
 * table shapes are b's. Classes are matched by name (one that appeared in
 * between counts from zero), partitions by index and class.
 */
void sched_delta(const struct ooo_sched_counters *a, const struct ooo_sched_counters *b,
		 struct ooo_sched_counters *d);

struct sched_class_fig {
	double launches_s;
	double miss_share; /* deadline misses / launches */
	double lat_mean_us;
	double lat_max_us; /* the run's maximum */
};

struct sched_part_fig {
	double bundles_s;
	double util; /* busy_ns / span: a share, not capped */
};

/* Figures of counters c over span_ns: a delta over its interval, or a run's totals over its up_ns. */
struct sched_fig {
	uint64_t span_ns;
	double bundles_s, fused_bundles_s, launches_s, fused_launches_s, direct_launches_s;
	double members;           /* launches per bundle */
	double fused_share;       /* fused_launches / launches */
	double dispatch_share[4]; /* full, slack, idle, alone: of their sum */
	double jit_hit_share;     /* hits / (hits + misses) */
	double jit_compile_mean_ns;
	double cpu_pct;        /* of one core */
	double loops_s;        /* serving loop passes */
	double work_pct;       /* of one core: passes that moved something */
	double launch_pct;     /* of one core: the launcher thread issuing bundles */
	double commands_s;
	double ns_per_command;         /* work_ns / commands: the executor's CPU cost of one command */
	double take_share, disp_share; /* of work_ns */
	uint32_t nclasses, nparts;
	struct sched_class_fig classes[OOO_SCHED_CLASSES];
	struct sched_part_fig parts[OOO_SCHED_PARTITIONS];
};

/* Fill *f (every field) with the figures of c over span_ns. */
void sched_figures(const struct ooo_sched_counters *c, uint64_t span_ns, struct sched_fig *f);

/* How the two snapshots of one GPU compare. */
enum sched_cmp {
	SCHED_NONE,       /* no counters in the last snapshot */
	SCHED_CUMULATIVE, /* one snapshot asked for (--interval 0) */
	SCHED_FIRST,      /* the first snapshot had none: the executor's first report came in between */
	SCHED_RESTARTED,  /* different executor runs */
	SCHED_STALE,      /* the executor sent nothing new in between */
	SCHED_INTERVAL,   /* a delta over a positive interval */
};

/* a: the first snapshot's record of the GPU, NULL if only one was taken; b: the last one's. */
enum sched_cmp sched_compare(const struct ooo_sched_rec *a, const struct ooo_sched_rec *b);
/* Why a GPU has no counters, from its state and the device's last failure (NULL or "" if unknown), into buf; returns buf. */
const char *sched_why_none(char *buf, size_t cap, uint32_t state, const char *dev_reason);
/* The note a comparison k deserves (static text), or NULL. */
const char *sched_note(enum sched_cmp k);

/* JSON: the object KEY (NULL in an array) of counters c and their figures f. */
void j_sched(const char *key, const struct ooo_sched_counters *c, const struct sched_fig *f);

#endif
