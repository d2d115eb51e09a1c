/* SPDX-License-Identifier: MIT */
/*
 * Hang strikes (pure: time is passed in): which tenants' kernels ran past
 * kernel_time_limit_ms, and which of them may not attach a data path for a
 * while. Every hang costs every other tenant of the executor a restart, so
 * a tenant that hangs the GPU again and again (hostile or broken) is barred
 * once its kernels hung `strikes` times within `window_ns`, until
 * `window_ns` after its last hang. Kept per uid, not per session: a tenant
 * cannot start afresh by opening a new session.
 */
#ifndef OOO_HANGS_H
#define OOO_HANGS_H

#include <stdbool.h>
#include <stdint.h>

#define HANGS_STRIKES_MAX 16u /* oood.conf hang_strikes at most */
#define HANGS_UIDS 256u       /* tenants remembered: past it, the one whose last hang is oldest is forgotten */

struct hangs {
	struct hangs_uid {
		uint32_t uid;
		uint32_t n;                     /* hangs recorded in at[] (the latest HANGS_STRIKES_MAX) */
		uint64_t at[HANGS_STRIKES_MAX]; /* oldest first */
	} u[HANGS_UIDS];
	uint32_t nu;
};

/*
 * Records a hang of uid's work at `now` (times must not go backwards for
 * one uid; a smaller one is taken as `now` = its last). Returns the hangs of
 * uid within window_ns up to now, this one included.
 */
uint32_t hangs_record(struct hangs *h, uint32_t uid, uint64_t now, uint64_t window_ns);

/*
 * Whether uid is barred at `now`: `strikes` (1 .. HANGS_STRIKES_MAX; 0:
 * never) of its hangs lie within window_ns of each other, the last of them
 * less than window_ns ago. *until (may be NULL) gets the end of the bar,
 * *count the hangs within the window ending at its last.
 */
bool hangs_barred(const struct hangs *h, uint32_t uid, uint64_t now, uint32_t strikes, uint64_t window_ns,
		  uint64_t *until, uint32_t *count);

/* Forgets uid's hangs (an operator's pardon); false if none were kept. */
bool hangs_forget(struct hangs *h, uint32_t uid);

#endif
