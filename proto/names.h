/* SPDX-License-Identifier: MIT */
/*
 * The names that oooctl's tables, its --json keys and the Prometheus
 * exposition (prom.h) give the wire's enums, stages and records
 * (include/ooo/proto.h). Pure: static text and functions of their
 * arguments, no allocation, no I/O; linked into oooctl and oood.
 */
#ifndef OOO_TOOLS_COMMON_NAMES_H
#define OOO_TOOLS_COMMON_NAMES_H

#include <stdint.h>

#include <ooo/proto.h>

/* The names of enum ooo_res, for JSON keys and metric labels. */
extern const char *const res_names[OOO_RES_COUNT];

/* The sync functions the probes time, by ooo_proc_rec.syncs index. */
extern const char *const tm_fn_names[3];

/*
 * The executor's per-command stages (struct ooo_sched_counters), for sched,
 * --json and metrics; the first OOO_CMD_STAGES are also each class's
 * (enum ooo_cmd_stage order). Indexes 0 .. STAGES - 1.
 */
#define STAGES 5
extern const char *const stage_rows[STAGES]; /* text rows: "command submit" */
extern const char *const stage_keys[STAGES]; /* JSON keys: "command_submit" */
extern const char *const stage_prom[STAGES]; /* metric names: "ooo_exec_command_submit_seconds" */
extern const char *const stage_help[STAGES]; /* metric help texts */
/* Stage h's histogram within c. */
const uint64_t *stage_hist(const struct ooo_sched_counters *c, int h);

/* Dispatch reasons (full, slack, idle, alone) and priority tiers, in the counters' order. */
extern const char *const sched_reason_names[4];
extern const char *const sched_tier_names[OOO_PRIO_TIERS];

/* A class row's label: its name, or "(other classes)" for the row without one. */
const char *class_label(const char *name);

/* c's class rows in use: nclasses capped at the array's size. */
uint32_t sched_nclasses(const struct ooo_sched_counters *c);

#endif
