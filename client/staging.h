/* SPDX-License-Identifier: MIT */
/*
 * The staging area allocator of a session (libooo side). Space is handed out
 * in order around the area, like a log, and given back when the command
 * that used it completes; completions may come out of order, so a freed
 * block is only reclaimed once every block before it is free too. The
 * metadata is private to the tenant: the executor only sees offsets in
 * submissions, which it bounds-checks against the area.
 */
#ifndef OOO_STAGING_H
#define OOO_STAGING_H

#include <stdbool.h>
#include <stdint.h>

struct staging_blk {
	uint64_t off, len; /* len includes any padding before the block */
	bool freed;
};

struct staging {
	uint64_t size;
	uint64_t head; /* oldest live byte, as a running count of bytes handed out */
	uint64_t tail; /* next byte to hand out, same scale; tail - head <= size */
	struct staging_blk *q;
	uint32_t qcap, qhead, qlen;
};

/* Set up for an area of `size` bytes and at most `max_blocks` live blocks. Returns 0 or -ENOMEM/-EINVAL. */
int staging_init(struct staging *s, uint64_t size, uint32_t max_blocks);
void staging_fini(struct staging *s);

/*
 * Allocate len bytes aligned to align (a power of two, at most 4096).
 * Returns 0 and the area offset in *off; -ENOSPC when there is no room now
 * (wait for completions and retry); -E2BIG when len can never fit.
 */
int staging_alloc(struct staging *s, uint64_t len, uint64_t align, uint64_t *off);

/* Give back the block at offset off. Returns 0, or -ENOENT if no live block starts there. */
int staging_free(struct staging *s, uint64_t off);

/* Bytes in use (live and not yet reclaimed). */
uint64_t staging_used(const struct staging *s);

#endif
