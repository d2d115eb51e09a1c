/* SPDX-License-Identifier: MIT */
/*
 * The OoO scheduler's core: pure logic, no I/O, no CUDA, time passed in.
 *
 * The window is the head launch of every queue. Each launch has a deadline
 * and belongs to a partition (a stream of bundles: bundles of one partition
 * run in the order they are dispatched) and to a fusion class (launches that
 * one fused kernel can run together; 0 = not fusible). sched_poll picks, per
 * partition, the ready launch with the earliest deadline and packs the other
 * ready launches of its class in deadline order up to the class's capacity in
 * blocks, then dispatches the bundle when it is full, when the earliest
 * member's slack (deadline - now - predicted time) is below the margin, or
 * when the partition has nothing in flight (work-conserving: holding work
 * back never leaves a partition idle while work is ready). Launches of a
 * class that is not compiled yet, or not fusible, go alone.
 *
 * Order within a queue is kept: only a queue's head is in the window, and a
 * queue's next launch enters it only once the head has been dispatched (into
 * a bundle of the same partition, so the stream keeps their order). A queue
 * can be blocked (an event wait the caller tracks) and unblocked.
 *
 * Not built into oood yet: the executor will feed it (issue 7).
 */
#ifndef OOO_SCHED_SCHED_H
#define OOO_SCHED_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_MAX_PARTITIONS 16u
#define SCHED_MAX_BUNDLE 256u /* members of one bundle */

struct sched_cfg {
	uint32_t max_queues;       /* queue ids are 0 .. max_queues-1 */
	uint32_t max_items;        /* launches waiting in all queues together */
	uint32_t partitions;       /* 1 .. SCHED_MAX_PARTITIONS */
	uint32_t max_inflight;     /* bundles in flight per partition (>= 1) */
	uint64_t slack_margin_ns;  /* dispatch when the earliest member's slack falls below this */
	uint64_t default_cost_ns;  /* predicted duration of a launch never seen */
	uint32_t ewma_shift;       /* cost model: new = old + (sample - old) >> shift */
};

struct sched_launch {
	uint64_t id;         /* the caller's handle, returned in bundles */
	uint32_t queue;
	uint32_t partition;
	uint64_t klass;      /* fusion class, 0: not fusible */
	uint32_t blocks;     /* grid size */
	uint32_t capacity;   /* blocks a bundle of this class may hold on its partition (>= 1) */
	uint64_t cost_key;   /* (kernel, grid) for the cost model */
	uint64_t deadline_ns;
};

struct sched_bundle {
	uint32_t partition;
	bool fused;          /* false: the members run as separate launches */
	uint32_t n;
	uint64_t ids[SCHED_MAX_BUNDLE];
	uint64_t token;      /* pass to sched_complete */
	uint64_t predicted_ns;
};

struct sched_stats {
	uint64_t bundles, fused_bundles, launches, fused_launches;
	uint64_t dispatch_full, dispatch_slack, dispatch_idle, dispatch_alone;
	uint32_t max_members;
	uint64_t deadline_misses; /* members dispatched too late to finish by their deadline (as predicted) */
};

struct sched;

/* -EINVAL for a bad configuration, -ENOMEM. */
int sched_new(const struct sched_cfg *cfg, struct sched **out);
void sched_free(struct sched *s); /* accepts NULL */

/* Queue a launch at the tail of its queue: -EINVAL (bad field), -ENOSPC (max_items). */
int sched_submit(struct sched *s, const struct sched_launch *l);

/* A queue waits for something outside the scheduler (an event): its head leaves the window until unblocked. */
int sched_block(struct sched *s, uint32_t queue, bool blocked);

/*
 * Launches of a queue run on another partition from now on (a resize or a
 * class moved). Its waiting launches move with it, and they wait until its
 * launches in flight on the old partition have completed, so the queue's
 * order holds across the move. A submit naming another partition than the
 * queue's does the same.
 */
int sched_move_queue(struct sched *s, uint32_t queue, uint32_t partition);

/* A fusion class's fused kernel exists now (compiled): its launches may be bundled. */
int sched_class_ready(struct sched *s, uint64_t klass, bool ready);

/*
 * Decide what to dispatch at `now`. Writes at most `max` bundles to out and
 * returns how many; *wake_ns (when not NULL) gets the latest time the
 * caller should poll again if nothing else happens (UINT64_MAX: no deadline
 * pending).
 */
size_t sched_poll(struct sched *s, uint64_t now, struct sched_bundle *out, size_t max, uint64_t *wake_ns);

/* A dispatched bundle finished after elapsed_ns: frees its in-flight slot and teaches the cost model. -ENOENT for an unknown token. */
int sched_complete(struct sched *s, uint64_t token, uint64_t elapsed_ns);

/* Predicted duration of a launch with this cost key. */
uint64_t sched_predict(const struct sched *s, uint64_t cost_key);

uint32_t sched_pending(const struct sched *s); /* launches waiting */
void sched_get_stats(const struct sched *s, struct sched_stats *out);

#endif
