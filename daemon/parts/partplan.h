/* SPDX-License-Identifier: MIT */
/*
 * The SM partition plan oood asks of each executor: which tenant classes get
 * SMs reserved for their bundles, and how many. Pure logic (no I/O), tested
 * in tests/unit/test_partplan.c.
 *
 * A class gets a reserved partition when oooctl set one for it (`oooctl
 * partition set CLASS SMS`, kept as an override until `oooctl partition
 * reset CLASS`), else when its policy says `partition = yes`: sm_share
 * percent of the GPU's SMs, rounded up. Every other class shares what is
 * left. The executor rounds each size up to the device's split granule and
 * may still refuse a plan that does not fit (its reason comes back).
 */
#ifndef OOO_PARTPLAN_H
#define OOO_PARTPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../proto/exec_proto.h"
#include "../policy/policy.h"

#define PART_OVERRIDES 32 /* classes oooctl has sized at once */

enum part_source { PART_SRC_POLICY = 0, PART_SRC_OOOCTL = 1 };

struct part_override {
	char klass[OOO_NAME_MAX];
	uint32_t sms; /* 0: no reserved partition, whatever the policy says */
};

struct part_plan {
	uint32_t n;
	struct {
		char klass[32];  /* as the executor knows the class (its queues' class names are cut to 31) */
		uint32_t sms;
		uint32_t source; /* enum part_source */
	} p[EXEC_PART_MAX];
};

/*
 * The plan for a GPU of sm_count SMs under policy pol and the novr
 * overrides, classes in policy order (an override of a class the policy
 * does not have is left out). Returns 0, or with the reason in why:
 * -ENOSPC (more than EXEC_PART_MAX partitions, or together they leave the
 * other classes no SMs), -ENAMETOOLONG (a class with a partition whose name
 * is longer than 31 characters, which the executor cannot tell apart),
 * -EINVAL (bad arguments).
 */
int part_plan(const struct policy *pol, const struct part_override *ovr, size_t novr, uint32_t sm_count,
	      struct part_plan *out, char *why, size_t cap);

/* Whether two plans ask the same. */
bool part_plan_equal(const struct part_plan *a, const struct part_plan *b);

/*
 * Set (or with reset, remove) class klass's override in ovr[0..*novr-1]
 * (room for PART_OVERRIDES). Returns 0, -ENOSPC (no room), -EINVAL.
 */
int part_override_set(struct part_override *ovr, size_t *novr, const char *klass, uint32_t sms, bool reset);

#endif
