/* SPDX-License-Identifier: MIT */
/*
 * What one serving thread of an executor last saw of its own long-running
 * GPU work (the sessions whose work had run past half kernel_time_limit_ms),
 * published for another serving thread that reports a hang
 * (datapath.c dp_report_hung): a kernel that never ends can starve work of
 * the other threads' tenants, and a report that named only the reporting
 * thread's work could blame a starved tenant. One writer (the owning
 * thread), any number of readers; a sequence lock, no mutex, so a reader
 * never waits for the writer. Pure: no CUDA, no I/O.
 */
#ifndef OOO_LONGWORK_H
#define OOO_LONGWORK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define LONGWORK_IDS 8u /* sessions one publication names; past it, a count */

struct longwork {
	atomic_uint seq; /* odd while the writer writes */
	atomic_uint n, more;
	atomic_uint_fast64_t ids[LONGWORK_IDS];
};

/* The owning thread publishes ids[0..n) (only the first LONGWORK_IDS are named; the rest and `more` are counted). */
void longwork_publish(struct longwork *lw, const uint64_t *ids, uint32_t n, uint32_t more);

/* Does the latest publication name no work? (For the owning thread, which alone writes it.) */
bool longwork_empty(const struct longwork *lw);

/*
 * Another thread reads the latest publication into ids[0..*n) (at most
 * LONGWORK_IDS) and *more. False when no consistent copy could be read
 * within a bounded number of tries (the writer kept writing): the caller
 * must then take the thread's work as unknown.
 */
bool longwork_read(const struct longwork *lw, uint64_t *ids, uint32_t *n, uint32_t *more);

#endif
