/* SPDX-License-Identifier: MIT */
/*
 * Every page of one of oood's admin lists (OOO_MSG_SESSIONS, _TENANTS,
 * _DEVICES, ...), for oooctl and ooo-k8s-plugin.
 */
#ifndef OOO_TOOLS_COMMON_ADMIN_LIST_H
#define OOO_TOOLS_COMMON_ADMIN_LIST_H

#include <stddef.h>
#include <stdint.h>

#include <ooo/ooo.h>

/*
 * Fetch list `type`, records of rec_size bytes, through admin session s.
 * Each page is answered from a fresh snapshot, so a list that changes while
 * it is paged may show an entry twice or miss one: fine for a report.
 * Returns 0 with *out malloc'd (the caller frees; NULL when the list is
 * empty) and *nout set, or a negative error with *out untouched: what
 * ooo_admin_call returned (ooo_last_error() says why; why is left as it
 * was), -ENOMEM, or -OOO_EPROTO for a malformed reply (why says how).
 */
int admin_list_fetch(ooo_session *s, uint16_t type, size_t rec_size, void **out, size_t *nout, char *why,
		     size_t whycap);

#endif
