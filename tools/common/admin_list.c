/* SPDX-License-Identifier: MIT */
#include "admin_list.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ooo/proto.h>

int admin_list_fetch(ooo_session *s, uint16_t type, size_t rec_size, void **out, size_t *nout, char *why,
		     size_t whycap)
{
	struct ooo_msg_list_req req = { 0 };
	unsigned char *buf = malloc(OOO_MSG_MAX);
	char *recs = NULL;
	size_t n = 0;
	int r;

	if (!buf) {
		snprintf(why, whycap, "out of memory");
		return -ENOMEM;
	}
	for (;;) {
		struct ooo_msg_list l;
		char *p;

		r = ooo_admin_call(s, type, &req, sizeof(req), buf, OOO_MSG_MAX);
		if (r < 0)
			goto fail;
		if ((size_t)r < sizeof(l)) {
			snprintf(why, whycap, "list reply shorter than its header");
			r = -OOO_EPROTO;
			goto fail;
		}
		memcpy(&l, buf, sizeof(l));
		if (l.rec_size != rec_size || (size_t)r - sizeof(l) != (size_t)l.count * rec_size) {
			snprintf(why, whycap, "list records of %" PRIu32 " bytes, expected %zu", l.rec_size, rec_size);
			r = -OOO_EPROTO;
			goto fail;
		}
		if (!l.count)
			break; /* the list shrank under us, or is empty */
		if (!(p = realloc(recs, (n + l.count) * rec_size))) {
			snprintf(why, whycap, "out of memory");
			r = -ENOMEM;
			goto fail;
		}
		recs = p;
		memcpy(recs + n * rec_size, buf + sizeof(l), (size_t)l.count * rec_size);
		n += l.count;
		req.offset += l.count;
		if (req.offset >= l.total)
			break;
	}
	free(buf);
	*out = recs;
	*nout = n;
	return 0;
fail:
	free(buf);
	free(recs);
	return r;
}
