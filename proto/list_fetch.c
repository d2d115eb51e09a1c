/* SPDX-License-Identifier: MIT */
#include "list_fetch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int list_fetch(list_page_fn page, void *ctx, uint16_t type, size_t rec_size, void *buf, size_t cap, void **out,
	       size_t *nout, char *why, size_t whycap)
{
	struct ooo_msg_list_req req = { 0 };
	char *recs = NULL;
	size_t n = 0;
	ssize_t r;

	for (;;) {
		struct ooo_msg_list l;
		char *p;

		r = page(ctx, type, &req, buf, cap);
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
		memcpy(recs + n * rec_size, (const char *)buf + sizeof(l), (size_t)l.count * rec_size);
		n += l.count;
		req.offset += l.count;
		if (req.offset >= l.total)
			break;
	}
	*out = recs;
	*nout = n;
	return 0;
fail:
	free(recs);
	return (int)r;
}
