/* SPDX-License-Identifier: MIT */
/*
 * The OoO scheduler's core: pure logic, no I/O, no CUDA, time passed in.
 *
 * The window is the head launch of every queue. Each launch has a deadline
 * and belongs to a partition (a stream of bundles: bundles of one partition
 * run in the order they are dispatched) and to a fusion class (launches that
 * one fused kernel can run together; 0 = not fusible). sched_poll takes, per
 * partition, the window's launches that are not blocked or fenced in
 * (deadline, queue id) order. The earliest one leads a bundle: if its class
 * is compiled, the other window launches of its class are packed in deadline
 * order up to the leader's capacity in blocks (one that does not fit is
 * passed over, and makes the bundle full), and the bundle is dispatched when
 * it is full, when the leader's slack (deadline - now - predicted time) is
 * not above the slack margin, or when the partition is idle or predicted to
 * be within idle_margin_ns; otherwise it is held. A held class's launches are
 * all passed over for the rest of that poll, and the next launch in deadline
 * order (of another class, or not fusible) leads the next bundle, as long as
 * the partition has an in-flight slot. Launches of a class that is not
 * compiled yet, or not fusible, go alone, at once.
 *
 * Work-conserving: a partition with nothing in flight never holds, so while
 * it has a launch that is neither blocked nor fenced, sched_poll dispatches.
 * Pipelining: each partition has a predicted busy_until (the end of its work
 * in flight, from the cost model), so the next bundle can be queued on the
 * stream just before the GPU would go idle, not after.
 *
 * Order within a queue is kept: only a queue's head is in the window, and a
 * queue's next launch enters it only once the head has been dispatched (into
 * a bundle of the same partition, so the stream keeps their order; one poll
 * dispatches one launch of a queue at most). A queue can be blocked (an event
 * wait the caller tracks) and unblocked.
 *
 * Cost: sched_poll visits only the queues with a launch waiting (kept in an
 * active list, O(1) to update on submit, dispatch and drop), then sorts the
 * candidates (O(n log n) in the number n of such queues, not in max_queues).
 * A poll that dispatched nothing is remembered: until its wake time, and
 * while nothing changes (a submit, block, move, class change, drop or
 * completion), the next poll returns the same answer at once. Nothing
 * allocates after sched_new.
 *
 * The executor's coalescer (daemon/exec/coalesce.c) feeds it.
 */
#ifndef OOO_SCHED_SCHED_H
#define OOO_SCHED_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_MAX_PARTITIONS 16u
#define SCHED_MAX_BUNDLE 256u /* members of one bundle */
#define SCHED_MAX_LANES 64u   /* sched_cfg.streams at most */
#ifndef SCHED_LANE_RATIO
#define SCHED_LANE_RATIO 2u   /* lanes spread bundles whose predicted time is at least this many issue times (sched_poll) */
#endif
#if SCHED_LANE_RATIO < 1
#error "SCHED_LANE_RATIO must be at least 1"
#endif
#define SCHED_NOPAY_PROBE 16u /* of a class's bundles that fusing would not pay for, one in this many is fused anyway */

struct sched_cfg {
	uint32_t max_queues;       /* queue ids are 0 .. max_queues-1 */
	uint32_t max_items;        /* launches waiting in all queues together */
	uint32_t partitions;       /* 1 .. SCHED_MAX_PARTITIONS */
	uint32_t max_inflight;     /* bundles in flight per partition (>= 1) */
	/*
	 * More bundles in flight per partition, for bundles led by an urgent
	 * launch (sched_launch.urgent): a latency-critical queue's launch does
	 * not wait for a slot behind a best-effort backlog that holds all
	 * max_inflight, and the urgent bundles do not count in the others'
	 * max_inflight. max_inflight + reserve_inflight <= 64.
	 */
	uint32_t reserve_inflight;
	uint64_t slack_margin_ns;  /* dispatch when the earliest member's slack is no longer above this */
	uint64_t default_cost_ns;  /* predicted duration of a launch never seen */
	uint32_t ewma_shift;       /* cost model: new = old + (sample - old) >> shift */
	uint64_t idle_margin_ns;   /* a partial bundle goes once its partition is predicted idle within this (0 allowed) */
	uint32_t streams;          /* streams the caller runs a partition's bundles on (0 or 1: one, in order) */
	/*
	 * Lanes (0 or 1: none; at most streams and SCHED_MAX_LANES): each bundle names its
	 * lane (sched_bundle.lane), the stream the caller runs it on, so that
	 * independent queues' bundles run side by side. See sched_poll.
	 */
	uint32_t lanes;
	/*
	 * A bundle of one launch is held (see sched_poll) only if launches of its
	 * class came from two or more queues within this long before now: a
	 * class that one queue alone uses gains nothing by waiting. 0: any
	 * partial bundle may be held (no such test).
	 */
	uint64_t share_window_ns;
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
	bool urgent;         /* may lead a bundle into the partition's reserve_inflight slots (its queue outranks others) */
};

struct sched_bundle {
	uint32_t partition;
	uint32_t lane;       /* the partition's stream to run it on, 0 .. lanes - 1 (0 without lanes) */
	bool fused;          /* false: the members run as separate launches */
	uint32_t n;
	uint64_t ids[SCHED_MAX_BUNDLE];
	uint64_t token;      /* pass to sched_complete */
	uint64_t predicted_ns;
};

struct sched_stats {
	uint64_t bundles, fused_bundles, launches, fused_launches;
	/*
	 * Why a bundle of a compiled class went: full; idle (nothing in flight, or
	 * the partition is predicted idle within idle_margin_ns while the leader
	 * still had slack); slack (the leader's slack ran out while the partition
	 * was busy). Alone: a launch not fusible, of a class not compiled, or of
	 * a class that no other queue launched on its partition within
	 * share_window_ns (waiting could not fill its bundle).
	 */
	uint64_t dispatch_full, dispatch_slack, dispatch_idle, dispatch_alone;
	/*
	 * Bundles of two or more sent unfused (fused false) because the cost
	 * model predicts the fused kernel slower than its members one after
	 * another (counted besides their reason above).
	 */
	uint64_t dispatch_nopay;
	uint32_t max_members;
	/*
	 * Members dispatched too late to finish by their deadline, as predicted:
	 * deadline < now + the bundle's predicted_ns (the wait behind the
	 * partition's work in flight is not counted).
	 */
	uint64_t deadline_misses;
	uint64_t part_bundles[SCHED_MAX_PARTITIONS]; /* bundles dispatched on each partition */
};

struct sched;

/* -EINVAL for a bad configuration, -ENOMEM. */
int sched_new(const struct sched_cfg *cfg, struct sched **out);
void sched_free(struct sched *s); /* accepts NULL */

/* Queue a launch at the tail of its queue: -EINVAL (bad field), -ENOSPC (max_items). */
int sched_submit(struct sched *s, const struct sched_launch *l);

/* A queue waits for something outside the scheduler (an event): its head leaves the window until unblocked. */
int sched_block(struct sched *s, uint32_t queue, bool blocked);

/* Launches of the queue waiting (submitted, not dispatched); 0 for a queue id out of range. */
uint32_t sched_queue_waiting(const struct sched *s, uint32_t queue);

/*
 * The queue is gone (destroyed, or its session): removes all its waiting
 * launches, writes their ids to ids in queue order and returns how many
 * (ids may be NULL when max is 0 and none waits), and unblocks it.
 * -ENOSPC, removing nothing, when more than max are waiting (see
 * sched_queue_waiting); -EINVAL for a queue id out of range. Its launches in
 * flight are not affected: their bundles complete through sched_complete.
 * The queue id may be used again at once (a later launch of it on another
 * partition still waits for those in flight, as after sched_move_queue).
 */
int sched_drop_queue(struct sched *s, uint32_t queue, uint64_t *ids, size_t max);

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
 * caller should poll again if nothing else happens (no submit, unblock,
 * class ready or completion): the earliest, over the held bundles, of
 * min(deadline - predicted - slack_margin_ns, busy_until - idle_margin_ns);
 * `now` when out filled up while launches that may go were left (poll
 * again at once); UINT64_MAX when nothing is held. A partition without a
 * free in-flight slot holds nothing: its next completion is the event.
 * A partition has max_inflight + reserve_inflight slots: an urgent launch
 * may lead a bundle into any free one, an ordinary launch only while fewer
 * than max_inflight bundles led by ordinary launches are in flight.
 *
 * A non-full bundle of a compiled class is held only if its partition has
 * a bundle in flight, and now + idle_margin_ns < busy_until, and now +
 * predicted + slack_margin_ns < the leader's deadline, where predicted is
 * the bundle's predicted_ns (its longest member's prediction), and (with
 * share_window_ns) the class is shared: the bundle has members of two
 * queues, or a queue other than the leader's (or a bundle of several
 * queues) dispatched the class on the same partition within
 * share_window_ns before now; the class remembers its last 4 launchers
 * (queue, partition), so one of many may be forgotten, which errs towards
 * going at once. A launch of a class no other queue uses on its partition
 * goes at once, counted alone, and a held lone launch goes when the window
 * since that other launch has passed. Dispatching
 * a bundle sets its partition's busy_until = max(busy_until, now) +
 * predicted_ns. With streams > 1 (the caller runs a partition's bundles on
 * that many streams, concurrently), a bundle that fills only part of its
 * capacity leaves room for others beside it: busy_until grows by
 * predicted_ns / k, where k, the bundles that could run side by side, is
 * the least of streams, capacity / its blocks, and predicted_ns over the
 * caller's issue time per bundle (sched_set_issue_ns; a bundle shorter
 * than that gains nothing from company); k <= 1, a bundle of a full
 * capacity, and a launch alone count whole.
 *
 * Lanes (cfg.lanes > 1): a queue with launches in flight is bound to the lane
 * of its last bundle, so that its next launch runs after them by stream
 * order alone; a bundle packs only launches of queues bound to its lane or
 * bound to none, and its lane is its leader's if the leader's queue is
 * bound. A candidate of the class left out for its lane leads a bundle of
 * its own lane (it does not make the bundle full). How the others go
 * depends on whether running side by side pays, that is whether the
 * leader's predicted time is at least SCHED_LANE_RATIO times the caller's
 * issue time per bundle (sched_set_issue_ns; unknown: no):
 *  - it pays (long kernels: one stream would be the bound): a leader bound
 *    to no lane takes the lane with the fewest bundles in flight (ties in
 *    turn), and launches of unbound queues join only while the bundle's
 *    lane has no more bundles in flight than any other, so independent
 *    tenants' bundles run side by side instead of one behind another;
 *  - it does not (short kernels: issuing bundles is the bound): an unbound
 *    leader takes the lane with the most bundles in flight (ties: the
 *    lowest), and unbound launches always join, so bundles stay few and
 *    large, on one stream where they can.
 *
 * Fusing that does not pay: a bundle of two or more whose leader's cost key
 * has both a fused bundle and a launch alone timed, and whose fused time
 * scaled to its members (see fusing_pays) is above members x the time
 * alone, goes with fused = false (its members one after another; its
 * predicted_ns then members x the time alone), except one such bundle of a
 * class in SCHED_NOPAY_PROBE, which is fused to measure it again
 * (stats.dispatch_nopay counts the unfused ones).
 */
size_t sched_poll(struct sched *s, uint64_t now, struct sched_bundle *out, size_t max, uint64_t *wake_ns);

/*
 * A dispatched bundle finished after elapsed_ns (seen at `now`): frees its
 * in-flight slot and teaches the cost model (every member's cost key learns
 * elapsed_ns, or elapsed_ns / n for an unfused bundle of n, whose members
 * ran one after another; 0: the bundle was not timed, nothing is learnt);
 * when it was
 * its partition's last bundle in flight, the partition's busy_until becomes
 * `now`. -ENOENT for an unknown token.
 */
int sched_complete(struct sched *s, uint64_t token, uint64_t elapsed_ns, uint64_t now);

/*
 * The caller's CPU time to issue one bundle (measured: its busy time over
 * the bundles it dispatched; 0: unknown). With several streams it bounds
 * how many bundles count as running side by side (see sched_poll).
 */
void sched_set_issue_ns(struct sched *s, uint64_t ns);

/* Predicted duration of a launch with this cost key. */
uint64_t sched_predict(const struct sched *s, uint64_t cost_key);

uint32_t sched_pending(const struct sched *s); /* launches waiting */
void sched_get_stats(const struct sched *s, struct sched_stats *out);

#endif
