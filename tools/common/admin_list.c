/* SPDX-License-Identifier: MIT */
#include "admin_list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../proto/list_fetch.h"

static ssize_t admin_page(void *ctx, uint16_t type, const struct ooo_msg_list_req *req, void *buf, size_t cap)
{
	return ooo_admin_call(ctx, type, req, sizeof(*req), buf, cap);
}

int admin_list_fetch(ooo_session *s, uint16_t type, size_t rec_size, void **out, size_t *nout, char *why,
		     size_t whycap)
{
	void *buf = malloc(OOO_MSG_MAX);
	int r;

	if (!buf) {
		snprintf(why, whycap, "out of memory");
		return -ENOMEM;
	}
	r = list_fetch(admin_page, s, type, rec_size, buf, OOO_MSG_MAX, out, nout, why, whycap);
	free(buf);
	return r;
}
