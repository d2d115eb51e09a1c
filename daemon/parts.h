/* SPDX-License-Identifier: MIT */
/*
 * SM partitions: oood decides each GPU's plan (partplan.c: classes with
 * `partition = yes`, and what `oooctl partition set` asked) and sends it to
 * the executor (EXEC_MSG_PARTITIONS), which makes the green contexts and
 * answers what each partition got. A plan goes when an executor becomes
 * ready, after a reload that changes it, and after `oooctl partition
 * set|reset`; each is numbered, so oooctl can wait for the answers.
 *
 * Owner: the server owns the overrides (struct parts); each struct gpu owns
 * the plan last sent to its executor and the answer.
 */
#ifndef OOO_PARTS_H
#define OOO_PARTS_H

#include <stdint.h>
#include <sys/types.h>

#include <ooo/proto.h>

#include "partplan.h"

struct server;
struct gpu;

struct parts {
	struct part_override ovr[PART_OVERRIDES];
	size_t novr;
	uint64_t generation; /* of the last plan sent to any executor */
};

/* The state of one GPU's plan (in struct gpu). */
struct gpu_parts {
	struct part_plan plan;   /* last sent */
	uint64_t generation;     /* of the plan last sent (0: none) */
	uint64_t answered;       /* of the plan the executor last answered */
	int32_t status;          /* its answer */
	uint32_t granule;
	uint32_t sms[EXEC_PART_MAX + 1]; /* what each partition got, the shared one at plan.n */
	char reason[OOO_ERRMSG_MAX];
};

/* An executor is ready (a new one after a restart too): send it its plan. */
void parts_gpu_ready(struct server *srv, struct gpu *g);
/* The executor's answer (checked by exec_msg_check). */
void parts_on_reply(struct server *srv, struct gpu *g, const void *payload);
/* After a reload: overrides of classes that are gone are dropped; changed plans are sent. */
void parts_reload(struct server *srv);
/* oooctl partition set|reset: 0 with *rep filled, or -errno with rep->msg the reason. */
int parts_admin_set(struct server *srv, const struct ooo_msg_partition_set *req,
		    struct ooo_msg_partition_set_reply *rep);
/* oooctl partition: one ooo_part_gpu_rec per GPU slot, paged like the device list. */
ssize_t parts_admin_list(struct server *srv, const struct ooo_msg_list_req *req, void *buf, size_t cap);

#endif
