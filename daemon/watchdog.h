/* SPDX-License-Identifier: MIT */
/*
 * The watchdog module: keeps the service manager's watchdog fed from the
 * loop's tick and tells it oood's state in STATUS= lines (through
 * notify_send); it owns srv->notifier. The loop itself sends READY=1,
 * RELOADING=1 and STOPPING=1.
 */
#ifndef OOO_WATCHDOG_H
#define OOO_WATCHDOG_H

struct module;

/*
 * Sends WATCHDOG=1 from its tick at least every half $WATCHDOG_USEC
 * (every tick when that is shorter than two ticks), and STATUS= lines:
 * sessions, GPUs ready and the policy generation when they change (at most
 * once a second), at once after a reload and at shutdown. Reads and unsets
 * $WATCHDOG_USEC and $WATCHDOG_PID in init, so that no child inherits them.
 */
extern const struct module watchdog_module;

#endif
