/* SPDX-License-Identifier: MIT */
#include "staging.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int staging_init(struct staging *s, uint64_t size, uint32_t max_blocks)
{
	memset(s, 0, sizeof(*s));
	if (!size || !max_blocks)
		return -EINVAL;
	s->q = calloc(max_blocks, sizeof(*s->q));
	if (!s->q)
		return -ENOMEM;
	s->size = size;
	s->qcap = max_blocks;
	return 0;
}

void staging_fini(struct staging *s)
{
	free(s->q);
	memset(s, 0, sizeof(*s));
}

int staging_alloc(struct staging *s, uint64_t len, uint64_t align, uint64_t *off)
{
	uint64_t pos, pad, start;

	if (!len || !align || (align & (align - 1)) || align > 4096)
		return -EINVAL;
	if (len > s->size)
		return -E2BIG;
	if (s->qlen == s->qcap)
		return -ENOSPC;
	pos = s->tail % s->size;
	pad = (align - pos % align) % align;
	start = pos + pad;
	if (start + len > s->size) {
		/* does not fit before the end: skip to the start of the area */
		pad = s->size - pos;
		start = 0;
	}
	if (s->tail - s->head + pad + len > s->size)
		return -ENOSPC;
	s->q[(s->qhead + s->qlen) % s->qcap] = (struct staging_blk){ .off = start, .len = pad + len };
	s->qlen++;
	s->tail += pad + len;
	*off = start;
	return 0;
}

int staging_free(struct staging *s, uint64_t off)
{
	uint32_t i;

	for (i = 0; i < s->qlen; i++) {
		struct staging_blk *b = &s->q[(s->qhead + i) % s->qcap];
		if (b->off == off && !b->freed) {
			b->freed = true;
			break;
		}
	}
	if (i == s->qlen)
		return -ENOENT;
	/* reclaim the freed prefix */
	while (s->qlen && s->q[s->qhead].freed) {
		s->head += s->q[s->qhead].len;
		s->qhead = (s->qhead + 1) % s->qcap;
		s->qlen--;
	}
	if (!s->qlen)
		s->head = s->tail; /* empty: nothing pins the position */
	return 0;
}

uint64_t staging_used(const struct staging *s)
{
	return s->tail - s->head;
}
