/* SPDX-License-Identifier: MIT */
/*
 * The operators' read-only views of the daemon: OOO_MSG_STATUS, and the
 * paged lists OOO_MSG_TENANTS, _SESSIONS (the registry), _DEVICES and
 * _SCHED (one record per executor slot). No state of its own.
 */
#ifndef OOO_ADMIN_H
#define OOO_ADMIN_H

struct module;

extern const struct module admin_module;

#endif
