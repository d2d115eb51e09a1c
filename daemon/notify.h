/* SPDX-License-Identifier: MIT */
/*
 * sd_notify(3) for Type=notify units. Hand-written (a datagram to
 * $NOTIFY_SOCKET) because libsystemd is only shipped as a shared library and
 * the daemon must run on hosts without it.
 */
#ifndef OOO_NOTIFY_H
#define OOO_NOTIFY_H

#include <stdint.h>
#include <sys/types.h>

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

#endif
