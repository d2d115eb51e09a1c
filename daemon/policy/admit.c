/* SPDX-License-Identifier: MIT */
/* Admission of connections waiting for hello (pure; admit.h). */
#include <errno.h>
#include <string.h>

#include "admit.h"

/* The entry of uid, or t->n when it has none. */
static uint32_t find(const struct admit_table *t, uint32_t uid)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (t->e[i].uid == uid)
			break;
	return i;
}

uint32_t admit_held(const struct admit_table *t, uint32_t uid)
{
	uint32_t i = find(t, uid);

	return i < t->n ? t->e[i].held : 0;
}

struct admit_decision admit_decide(const struct admit_table *t, uint32_t uid, uint32_t max, uint32_t floor)
{
	struct admit_decision d = { .verdict = ADMIT_FULL };
	uint32_t i = find(t, uid), uids, big = 0;

	d.held = i < t->n ? t->e[i].held : 0;
	if (!max)
		return d;
	uids = t->n + (i < t->n ? 0 : 1);
	d.share = max / uids;
	if (d.share < floor)
		d.share = floor < max ? floor : max;
	if (d.held >= d.share) {
		d.verdict = ADMIT_SHARE;
		return d;
	}
	if (t->total < max) {
		d.verdict = ADMIT_YES;
		return d;
	}
	for (uint32_t j = 1; j < t->n; j++)
		if (t->e[j].held > t->e[big].held)
			big = j;
	/* t->n >= 1 here: the table is full and max >= 1 */
	if (d.held < t->e[big].held) {
		d.verdict = ADMIT_EVICT;
		d.victim = t->e[big].uid;
	}
	return d;
}

int admit_add(struct admit_table *t, uint32_t uid)
{
	uint32_t i = find(t, uid);

	if (i == t->n) {
		if (t->n == ADMIT_UIDS_MAX)
			return -ENOSPC;
		t->e[t->n++] = (struct admit_uid){ .uid = uid, .held = 0 };
	}
	t->e[i].held++;
	t->total++;
	return 0;
}

void admit_del(struct admit_table *t, uint32_t uid)
{
	uint32_t i = find(t, uid);

	if (i == t->n)
		return;
	t->total--;
	if (--t->e[i].held)
		return;
	/* keep the others in the order they came: it breaks ties between biggest holders */
	memmove(&t->e[i], &t->e[i + 1], (t->n - i - 1) * sizeof(t->e[0]));
	t->n--;
}
