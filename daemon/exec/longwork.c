/* SPDX-License-Identifier: MIT */
#include "longwork.h"

#define LONGWORK_TRIES 1000u

void longwork_publish(struct longwork *lw, const uint64_t *ids, uint32_t n, uint32_t more)
{
	unsigned s = atomic_load_explicit(&lw->seq, memory_order_relaxed);
	uint32_t k = n < LONGWORK_IDS ? n : LONGWORK_IDS;

	atomic_store_explicit(&lw->seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release); /* the odd count is seen before any of the new data */
	for (uint32_t i = 0; i < k; i++)
		atomic_store_explicit(&lw->ids[i], ids[i], memory_order_relaxed);
	atomic_store_explicit(&lw->n, k, memory_order_relaxed);
	atomic_store_explicit(&lw->more, more + (n - k), memory_order_relaxed);
	atomic_store_explicit(&lw->seq, s + 2, memory_order_release);
}

bool longwork_empty(const struct longwork *lw)
{
	return !atomic_load_explicit(&lw->n, memory_order_relaxed) && !atomic_load_explicit(&lw->more, memory_order_relaxed);
}

bool longwork_read(const struct longwork *lw, uint64_t *ids, uint32_t *n, uint32_t *more)
{
	for (unsigned t = 0; t < LONGWORK_TRIES; t++) {
		unsigned s0 = atomic_load_explicit(&lw->seq, memory_order_acquire), s1;
		uint32_t k;

		if (s0 & 1)
			continue;
		k = atomic_load_explicit(&lw->n, memory_order_relaxed);
		if (k > LONGWORK_IDS)
			k = LONGWORK_IDS;
		for (uint32_t i = 0; i < k; i++)
			ids[i] = atomic_load_explicit(&lw->ids[i], memory_order_relaxed);
		*more = atomic_load_explicit(&lw->more, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire); /* the data is read before the count is looked at again */
		s1 = atomic_load_explicit(&lw->seq, memory_order_relaxed);
		if (s0 == s1) {
			*n = k;
			return true;
		}
	}
	return false;
}
