/* SPDX-License-Identifier: MIT */
/*
 * SM partitions: oood decides each GPU's plan (partplan.c: classes with
 * `partition = yes`, and what `oooctl partition set` asked) and sends it to
 * the executor (EXEC_MSG_PARTITIONS), which makes the green contexts and
 * answers what each partition got. A plan goes when an executor becomes
 * ready, after a reload that changes it, and after `oooctl partition
 * set|reset`; each is numbered, so oooctl can wait for the answers.
 *
 * Owner: the parts module owns srv->parts: the overrides, and per executor
 * slot the plan last sent to its executor and the answer.
 */
#ifndef OOO_PARTS_H
#define OOO_PARTS_H

#include <stdint.h>
#include <sys/types.h>

#include <ooo/proto.h>

#include "../executors/gpu.h"

#include "partplan.h"

struct server;
struct gpu;
struct module;

/* The state of one GPU's plan (parts->slot[g->idx]). */
struct gpu_parts {
	struct part_plan plan;   /* last sent */
	uint64_t generation;     /* of the plan last sent (0: none) */
	uint64_t answered;       /* of the plan the executor last answered */
	int32_t status;          /* its answer */
	uint32_t granule;
	uint32_t sms[EXEC_PART_MAX + 1]; /* what each partition got, the shared one at plan.n */
	char reason[OOO_ERRMSG_MAX];
};

struct parts {
	struct part_override ovr[PART_OVERRIDES];
	size_t novr;
	uint64_t generation; /* of the last plan sent to any executor */
	struct gpu_parts slot[EXEC_MAX]; /* by executor slot */
};

/*
 * The module (server.h): owns srv->parts; listens to the executors (sends
 * a ready executor its plan, keeps its answers); after a reload, overrides
 * of classes that are gone are dropped and changed plans are sent. Handles
 * OOO_MSG_PARTITIONS (one ooo_part_gpu_rec per slot, paged like the device
 * list) and OOO_MSG_PARTITION_SET (oooctl partition set|reset).
 */
extern const struct module parts_module;

#endif
