/* SPDX-License-Identifier: MIT */
/*
 * ooo-bench's log-linear latency histogram: 64 sub-buckets per power of
 * two (under 1.6% error), so memory does not grow with run time. Values
 * below 2 * HIST_SUB are exact; above, each power of two is split into
 * HIST_SUB equal buckets, so a bucket is at most 1/64 of its value.
 */
#ifndef OOO_BENCH_HIST_H
#define OOO_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 6
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS (HIST_SUB + (64 - HIST_SUB_BITS) * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t sum; /* ns; overflows after ~584 years of latency */
	uint64_t min, max;
	uint64_t b[HIST_BUCKETS];
};

static inline unsigned hist_index(uint64_t v)
{
	unsigned shift;

	if (v < HIST_SUB)
		return (unsigned)v;
	shift = (unsigned)(63 - __builtin_clzll(v)) - HIST_SUB_BITS;
	return HIST_SUB + shift * HIST_SUB + (unsigned)((v >> shift) - HIST_SUB);
}

static inline void hist_add(struct hist *h, uint64_t v)
{
	h->b[hist_index(v)]++;
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

/* The middle of bucket i: halves the worst-case error of reporting its low edge. */
uint64_t hist_value(unsigned i);
void hist_init(struct hist *h);
void hist_merge(struct hist *to, const struct hist *from);
/* The q-quantile in ns (0 < q <= 1), clamped to the exact min and max; NAN if empty. */
double hist_quantile(const struct hist *h, double q);
/* The mean in ns; NAN if empty. */
double hist_mean(const struct hist *h);

#endif
