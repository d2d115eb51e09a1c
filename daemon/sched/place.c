/* SPDX-License-Identifier: MIT */
/* Placement of sessions and buffers on GPUs (place.h). */
#include "place.h"

int place_pick(const struct place_gpu *g, uint32_t n, int affinity)
{
	int best = -1;

	if (affinity >= 0)
		return (uint32_t)affinity < n && g[affinity].ready ? affinity : -1;
	for (uint32_t i = 0; i < n; i++) {
		if (!g[i].ready)
			continue;
		if (best < 0 || g[i].sessions < g[best].sessions ||
		    (g[i].sessions == g[best].sessions && g[i].mem_bytes < g[best].mem_bytes))
			best = (int)i;
	}
	return best;
}

uint32_t place_shard(const uint32_t *sessions, uint32_t n, uint32_t fill)
{
	uint32_t best = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (sessions[i] < fill)
			return i;
		if (sessions[i] < sessions[best])
			best = i;
	}
	return best;
}
