/* SPDX-License-Identifier: MIT */
/*
 * Admission of connections that have not said hello yet (pure). A table per
 * socket counts that socket's pending connections by uid; admit_decide says
 * whether one more connection of a uid is admitted, refused, or admitted in
 * place of the oldest pending connection of the uid that holds the most.
 *
 * The rule, for a socket with `max` pending slots:
 *  - a uid's share is max / (the uids holding pending connections, the
 *    newcomer's counted), but never less than `floor`: a uid holding its
 *    share is refused, even while slots are free, so a uid alone may burst
 *    up to the whole table and several share it evenly;
 *  - while the table is full, a newcomer whose uid holds fewer than the
 *    biggest holder takes that holder's oldest slot; one whose uid is (one
 *    of) the biggest holder(s) is refused.
 * So no uid, nor any group of uids, can keep another uid out by opening
 * connections and staying silent until the hello timeout: the newcomer's
 * uid gets slots as long as it holds fewer than someone else.
 *
 * Every function is O(uids in the table), and a table never holds more
 * uids than pending connections: at most ADMIT_UIDS_MAX, without
 * allocating.
 */
#ifndef OOO_ADMIT_H
#define OOO_ADMIT_H

#include <stdint.h>

#define ADMIT_UIDS_MAX 1024 /* uids a table can count: at least the largest `max` given to admit_decide */

struct admit_uid {
	uint32_t uid;
	uint32_t held; /* >= 1: an entry goes when its last connection does */
};

/*
 * Zeroed is empty. Entries stay in the order their uids came (the
 * connection that made each one appear), so that among equal holders the
 * one that has held slots without a break the longest is the first.
 */
struct admit_table {
	uint32_t n;     /* entries in use */
	uint32_t total; /* connections counted: the sum of the entries' held */
	struct admit_uid e[ADMIT_UIDS_MAX];
};

enum admit_verdict {
	ADMIT_YES,   /* a free slot, and its uid holds less than its share */
	ADMIT_EVICT, /* no free slot: admitted in place of the oldest pending connection of `victim` */
	ADMIT_FULL,  /* no free slot, and its uid holds as many as any other: refused */
	ADMIT_SHARE, /* its uid holds its share already: refused */
};

struct admit_decision {
	enum admit_verdict verdict;
	uint32_t victim; /* ADMIT_EVICT: the uid that gives up a slot (never the newcomer's) */
	uint32_t held;   /* pending connections of the newcomer's uid, before it */
	uint32_t share;  /* its uid's share of the table, with it counted */
};

/*
 * The decision for one more pending connection of uid on a socket whose
 * table is t, with max slots (<= ADMIT_UIDS_MAX) and shares of at least
 * floor (a floor above max counts as max). Among equal biggest holders the
 * victim is the first in the table. Changes nothing: the caller evicts,
 * then admit_add()s the newcomer.
 */
struct admit_decision admit_decide(const struct admit_table *t, uint32_t uid, uint32_t max, uint32_t floor);

/* Count one more pending connection of uid. Returns 0, or -ENOSPC when the table has no entry left for a new uid. */
int admit_add(struct admit_table *t, uint32_t uid);

/* Count one fewer (a connection counted with admit_add leaves the table); no-op for a uid not in it. */
void admit_del(struct admit_table *t, uint32_t uid);

/* Pending connections of uid in the table. */
uint32_t admit_held(const struct admit_table *t, uint32_t uid);

#endif
