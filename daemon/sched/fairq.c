/* SPDX-License-Identifier: MIT */
/* Round-robin by owner (see fairq.h). */
#include "fairq.h"

#include <stddef.h>

void fairq_push(struct fairq *q, struct fairq_node *j)
{
	j->next = q->head;
	q->head = j;
	q->n++;
}

struct fairq_node *fairq_take(struct fairq *q)
{
	struct fairq_node **after = NULL, **least = NULL;

	/* the list is newest first: the first job found of an owner is its newest */
	for (struct fairq_node **p = &q->head; *p; p = &(*p)->next) {
		uint64_t o = (*p)->owner;

		if (o > q->last && (!after || o < (*after)->owner))
			after = p;
		if (!least || o < (*least)->owner)
			least = p;
	}
	if (!after)
		after = least; /* wrap around */
	if (!after)
		return NULL;
	{
		struct fairq_node *j = *after;

		*after = j->next;
		j->next = NULL;
		q->last = j->owner;
		q->n--;
		return j;
	}
}
