/* SPDX-License-Identifier: MIT */
#include "hist.h"

#include <math.h>
#include <string.h>

uint64_t hist_value(unsigned i)
{
	unsigned shift, sub;

	if (i < 2 * HIST_SUB)
		return i;
	shift = (i - HIST_SUB) / HIST_SUB;
	sub = (i - HIST_SUB) % HIST_SUB;
	return ((uint64_t)(HIST_SUB + sub) << shift) + (((uint64_t)1 << shift) - 1) / 2;
}

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void hist_merge(struct hist *to, const struct hist *from)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		to->b[i] += from->b[i];
	to->count += from->count;
	to->sum += from->sum;
	if (from->min < to->min)
		to->min = from->min;
	if (from->max > to->max)
		to->max = from->max;
}

double hist_quantile(const struct hist *h, double q)
{
	uint64_t rank, seen = 0, v;

	if (!h->count)
		return NAN;
	rank = (uint64_t)ceil(q * (double)h->count);
	if (rank < 1)
		rank = 1;
	if (rank > h->count)
		rank = h->count;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			v = hist_value(i);
			v = v < h->min ? h->min : v > h->max ? h->max : v;
			return (double)v;
		}
	}
	return (double)h->max;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : NAN;
}
