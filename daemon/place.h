/* SPDX-License-Identifier: MIT */
/*
 * Placement (pure): the GPU for a session's data path or buffer when the
 * tenant asks for none (OOO_DEVICE_ANY). A session keeps to one GPU: where
 * it is attached, else where its buffers are; a session with neither goes
 * to the ready GPU with the fewest attached sessions, then the least device
 * memory handed out, then the lowest index.
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

#endif
