/* SPDX-License-Identifier: MIT */
/*
 * sd_notify(3) for Type=notify units. Hand-written (a datagram to
 * $NOTIFY_SOCKET) because libsystemd is only shipped as a shared library and
 * the daemon must run on hosts without it.
 *
 * The notify module keeps the service manager's watchdog fed from the
 * loop's tick and tells it oood's state in STATUS= lines; it owns
 * srv->notifier. The loop itself sends READY=1, RELOADING=1 and STOPPING=1.
 */
#ifndef OOO_NOTIFY_H
#define OOO_NOTIFY_H

#include <stdint.h>
#include <sys/types.h>

struct module;

/*
 * Send `state` ("READY=1", "STOPPING=1", ...) without blocking: a
 * receiver whose queue is full costs -EAGAIN, not a wait. Returns 1 if
 * sent, 0 if not under systemd ($NOTIFY_SOCKET unset or empty), or -errno.
 */
int notify_send(const char *state);

/*
 * sd_watchdog_enabled(3) on the values of $WATCHDOG_USEC and $WATCHDOG_PID
 * (NULL: unset) for process `self`: 1 and *usec when the watchdog is on for
 * self; 0 when usec is NULL or pid names another process; -EINVAL when
 * either does not parse or usec is 0.
 */
int notify_watchdog_parse(const char *usec, const char *pid, pid_t self, uint64_t *usec_out);

/*
 * Sends WATCHDOG=1 from its tick at least every half $WATCHDOG_USEC
 * (every tick when that is shorter than two ticks), and STATUS= lines:
 * sessions, GPUs ready and the policy generation when they change (at most
 * once a second), at once after a reload and at shutdown. Reads and unsets
 * $WATCHDOG_USEC and $WATCHDOG_PID in init, so that no child inherits them.
 */
extern const struct module notify_module;

#endif
