/* SPDX-License-Identifier: MIT */
/*
 * The latency histograms every process shares: the eBPF probes
 * (bpf/telemetry.h), the executor's scheduler counters, and what oood and
 * oooctl print. Log2 of microseconds: bucket 0 counts values below 1 us,
 * bucket b (1..OOO_TM_HIST-1) values in [2^(b-1), 2^b) us; the last bucket
 * also takes everything larger. Included by BPF programs too, where the
 * __u32/__u64 types come from vmlinux.h.
 */
#ifndef OOO_PROTO_HIST_H
#define OOO_PROTO_HIST_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define OOO_TM_HIST 32

/*
 * The bucket of a duration in ns: the bit length of its microseconds, capped
 * at the last bucket. Shared by the probes and the executor's counters; in
 * BPF a loop of constant bound (which the verifier accepts), elsewhere one
 * count-leading-zeros (the executor takes several per launch).
 */
static inline __u32 ooo_tm_bucket(__u64 ns)
{
	__u64 us = ns / 1000;
#if defined(__bpf__)
	__u32 b = 0;

	for (int i = 0; i < OOO_TM_HIST - 1; i++) {
		if (us) {
			b++;
			us >>= 1;
		}
	}
	return b;
#else
	__u32 b = us ? 64u - (__u32)__builtin_clzll(us) : 0u;

	return b < OOO_TM_HIST - 1 ? b : OOO_TM_HIST - 1;
#endif
}

#endif
