/* SPDX-License-Identifier: MIT */
/*
 * Every page of one of oood's admin lists (OOO_MSG_SESSIONS, _TENANTS,
 * _DEVICES, ...): over admin.sock for oooctl and ooo-k8s-plugin, through
 * the list's build handler for oood's own metrics listener.
 */
#ifndef OOO_PROTO_LIST_FETCH_H
#define OOO_PROTO_LIST_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

/*
 * One page: the reply to list request req of `type` (struct ooo_msg_list,
 * then its records) into buf (cap bytes). Returns its length or a negative
 * error.
 */
typedef ssize_t (*list_page_fn)(void *ctx, uint16_t type, const struct ooo_msg_list_req *req, void *buf, size_t cap);

/*
 * Page through list `type`, records of rec_size bytes, with page() and its
 * buffer buf (cap bytes). Each page comes from a fresh snapshot, so a list
 * that changes while it is paged may show an entry twice or miss one: fine
 * for a report. Returns 0 with *out malloc'd (the caller frees; NULL when
 * the list is empty) and *nout set, or a negative error with nothing
 * allocated: page()'s own (why left as it was), -ENOMEM, or -OOO_EPROTO for
 * a malformed page (why says how).
 */
int list_fetch(list_page_fn page, void *ctx, uint16_t type, size_t rec_size, void *buf, size_t cap, void **out,
	       size_t *nout, char *why, size_t whycap);

#endif
