/* SPDX-License-Identifier: MIT */
/*
 * A queue of jobs served round-robin by owner: pure logic, no I/O.
 *
 * The coalescer's background compiler takes its jobs from one of these, so
 * that a tenant that loads many kernels at once (or keeps loading new ones)
 * cannot hold back another tenant's compile: each pick takes a job of the
 * next owner, in owner order after the last one served, wrapping around;
 * among one owner's jobs the newest goes first (the kernel a tenant loaded
 * last is the one it is about to launch).
 *
 * A job embeds struct fairq_node (the caller owns the memory and locking).
 * Cost: a pick scans the queue once (O(n) in the jobs queued; the compiler
 * holds at most a few thousand, and a compile takes milliseconds).
 */
#ifndef OOO_SCHED_FAIRQ_H
#define OOO_SCHED_FAIRQ_H

#include <stdint.h>

struct fairq_node {
	struct fairq_node *next;
	uint64_t owner;
};

struct fairq {
	struct fairq_node *head; /* newest first */
	uint64_t last;           /* owner of the last job taken */
	uint32_t n;
};

void fairq_push(struct fairq *q, struct fairq_node *j);
/* The next job (removed), or NULL when empty. */
struct fairq_node *fairq_take(struct fairq *q);

#endif
