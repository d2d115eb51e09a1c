/* SPDX-License-Identifier: MIT */
/* The names of the wire's enums, stages and records: see names.h. */
#include "names.h"

const char *const res_names[OOO_RES_COUNT] = {
	[OOO_RES_SESSIONS] = "sessions", [OOO_RES_QUEUES] = "queues",   [OOO_RES_BUFFERS] = "buffers",
	[OOO_RES_MEM_BYTES] = "mem_bytes", [OOO_RES_MODULES] = "modules", [OOO_RES_INFLIGHT] = "inflight",
};

const char *const tm_fn_names[3] = { "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize" };

_Static_assert(OOO_STAGE_SUBMIT == 0 && OOO_STAGE_NOTIFY == 3 && OOO_CMD_STAGES < STAGES, "stage tables");
const char *const stage_rows[STAGES] = { "command submit", "command queue", "command run", "command notify",
						"bundle gpu time" };
const char *const stage_keys[STAGES] = { "command_submit", "command_queue", "command_run", "command_notify",
						"bundle_gpu" };
const char *const stage_prom[STAGES] = { "ooo_exec_command_submit_seconds", "ooo_exec_command_queue_seconds",
						"ooo_exec_command_run_seconds", "ooo_exec_command_notify_seconds",
						"ooo_exec_bundle_gpu_seconds" };
const char *const stage_help[STAGES] = {
	"Every command: the tenant's submit stamp to taken from the submission ring (libooo stamps; the tenant's word)",
	"Every command: taken to issued to CUDA, alone or in its bundle",
	"Commands with a completion: issued to completion seen",
	"Commands with a completion: completion seen to published on the tenant's completion ring",
	"Bundles timed with events: GPU time from their start to their end event",
};

const uint64_t *stage_hist(const struct ooo_sched_counters *c, int h)
{
	switch (h) {
	case 0: return c->cmd_submit_hist;
	case 1: return c->cmd_queue_hist;
	case 2: return c->cmd_run_hist;
	case 3: return c->cmd_notify_hist;
	default: return c->bundle_gpu_hist;
	}
}

const char *const sched_reason_names[4] = { "full", "slack", "idle", "alone" };
const char *const sched_tier_names[OOO_PRIO_TIERS] = { "low", "default", "high" };

const char *class_label(const char *name)
{
	return name[0] ? name : "(other classes)";
}

uint32_t sched_nclasses(const struct ooo_sched_counters *c)
{
	return c->nclasses < OOO_SCHED_CLASSES ? c->nclasses : OOO_SCHED_CLASSES;
}
