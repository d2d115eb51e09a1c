/* SPDX-License-Identifier: MIT */
/*
 * Placement (pure): the GPU for a session's data path or buffer when the
 * tenant asks for none (OOO_DEVICE_ANY). A session keeps to one GPU: where
 * it is attached, else where its buffers are; a session with neither goes
 * to the ready GPU with the fewest attached sessions, then the least device
 * memory handed out, then the lowest index. Also which of an executor's
 * serving threads a new session joins.
 */
#ifndef OOO_PLACE_H
#define OOO_PLACE_H

#include <stdbool.h>
#include <stdint.h>

struct place_gpu {
	bool ready;
	uint32_t sessions;  /* data paths attached to it */
	uint64_t mem_bytes; /* buffer bytes on it */
};

/*
 * affinity: the session's GPU (its data path's, else its first buffer's), or
 * -1. Returns the index, or -1 when no GPU is ready (or the session's own is
 * not: its buffers and queues must stay together).
 */
int place_pick(const struct place_gpu *g, uint32_t n, int affinity);

/*
 * The shard (serving thread) of an executor a new session goes to, from
 * the sessions each of the n (>= 1) shards holds: the first holding fewer
 * than fill, else the one with the fewest (the lowest index on a tie).
 * fill 0 spreads sessions evenly from the first.
 */
uint32_t place_shard(const uint32_t *sessions, uint32_t n, uint32_t fill);

#endif
