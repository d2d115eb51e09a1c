/* SPDX-License-Identifier: MIT */
/* The SM partition plan of each GPU (see partplan.h). */
#include "partplan.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct part_override *find_override(const struct part_override *ovr, size_t novr, const char *klass)
{
	for (size_t i = 0; i < novr; i++)
		if (!strcmp(ovr[i].klass, klass))
			return &ovr[i];
	return NULL;
}

int part_plan(const struct policy *pol, const struct part_override *ovr, size_t novr, uint32_t sm_count,
	      struct part_plan *out, char *why, size_t cap)
{
	uint64_t sum = 0;

	if (!pol || !out || (novr && !ovr) || !sm_count) {
		snprintf(why, cap, "bad arguments");
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < pol->nclasses; i++) {
		const struct ooo_class *c = &pol->classes[i];
		const struct part_override *o = find_override(ovr, novr, c->name);
		uint32_t sms, src;

		if (o) {
			sms = o->sms;
			src = PART_SRC_OOOCTL;
		} else if (c->partition) {
			sms = (uint32_t)(((uint64_t)c->sm_share * sm_count + 99) / 100);
			src = PART_SRC_POLICY;
		} else {
			continue;
		}
		if (!sms)
			continue;
		if (strlen(c->name) >= sizeof(out->p[0].klass)) {
			snprintf(why, cap, "class '%.64s' cannot have a partition: its name is longer than %zu characters",
				 c->name, sizeof(out->p[0].klass) - 1);
			return -ENAMETOOLONG;
		}
		if (out->n == EXEC_PART_MAX) {
			snprintf(why, cap, "more than %u classes would have a partition ('%.64s' is one too many)",
				 EXEC_PART_MAX, c->name);
			return -ENOSPC;
		}
		memcpy(out->p[out->n].klass, c->name, strlen(c->name) + 1); /* fits: checked above */
		out->p[out->n].sms = sms;
		out->p[out->n].source = src;
		out->n++;
		sum += sms;
	}
	if (out->n && sum >= sm_count) {
		snprintf(why, cap, "the partitions would take %llu of the GPU's %u SMs: the other classes need some",
			 (unsigned long long)sum, sm_count);
		return -ENOSPC;
	}
	return 0;
}

bool part_plan_equal(const struct part_plan *a, const struct part_plan *b)
{
	if (a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (strcmp(a->p[i].klass, b->p[i].klass) || a->p[i].sms != b->p[i].sms)
			return false;
	return true;
}

int part_override_set(struct part_override *ovr, size_t *novr, const char *klass, uint32_t sms, bool reset)
{
	size_t i;

	if (!ovr || !novr || !klass || !klass[0] || strlen(klass) >= sizeof(ovr[0].klass))
		return -EINVAL;
	for (i = 0; i < *novr; i++)
		if (!strcmp(ovr[i].klass, klass))
			break;
	if (reset) {
		if (i < *novr)
			ovr[i] = ovr[--*novr];
		return 0;
	}
	if (i == *novr) {
		if (*novr == PART_OVERRIDES)
			return -ENOSPC;
		snprintf(ovr[i].klass, sizeof(ovr[i].klass), "%s", klass);
		(*novr)++;
	}
	ovr[i].sms = sms;
	return 0;
}
