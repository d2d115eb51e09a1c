/* SPDX-License-Identifier: MIT */
/*
 * sd_notify(3) for Type=notify units. Hand-written (a datagram to
 * $NOTIFY_SOCKET) because libsystemd is only shipped as a shared library and
 * the daemon must run on hosts without it.
 */
#ifndef OOO_NOTIFY_H
#define OOO_NOTIFY_H

/* Send `state` ("READY=1", "STOPPING=1", ...). Returns 1 if sent, 0 if not under systemd, or -errno. */
int notify_send(const char *state);

#endif
