/* SPDX-License-Identifier: MIT */
#include "hangs.h"

#include <string.h>

static struct hangs_uid *find(const struct hangs *h, uint32_t uid)
{
	for (uint32_t i = 0; i < h->nu; i++)
		if (h->u[i].uid == uid)
			return (struct hangs_uid *)&h->u[i];
	return NULL;
}

/* The hangs of r within window_ns up to its last one (at least 1 if any). */
static uint32_t in_window(const struct hangs_uid *r, uint64_t window_ns)
{
	uint32_t k = 0;

	if (!r->n)
		return 0;
	for (uint32_t i = r->n; i-- > 0;) {
		if (r->at[r->n - 1] - r->at[i] >= window_ns && i != r->n - 1)
			break;
		k++;
	}
	return k;
}

uint32_t hangs_record(struct hangs *h, uint32_t uid, uint64_t now, uint64_t window_ns)
{
	struct hangs_uid *r = find(h, uid);

	if (!r) {
		if (h->nu < HANGS_UIDS) {
			r = &h->u[h->nu++];
		} else {
			/* full: the tenant whose last hang is the oldest makes room */
			r = &h->u[0];
			for (uint32_t i = 1; i < h->nu; i++)
				if (h->u[i].at[h->u[i].n - 1] < r->at[r->n - 1])
					r = &h->u[i];
		}
		memset(r, 0, sizeof(*r));
		r->uid = uid;
	}
	if (r->n && now < r->at[r->n - 1])
		now = r->at[r->n - 1];
	if (r->n == HANGS_STRIKES_MAX) {
		memmove(r->at, r->at + 1, (HANGS_STRIKES_MAX - 1) * sizeof(r->at[0]));
		r->n--;
	}
	r->at[r->n++] = now;
	return in_window(r, window_ns);
}

bool hangs_barred(const struct hangs *h, uint32_t uid, uint64_t now, uint32_t strikes, uint64_t window_ns,
		  uint64_t *until, uint32_t *count)
{
	const struct hangs_uid *r = find(h, uid);
	uint32_t k;
	uint64_t last, end;

	if (count)
		*count = 0;
	if (until)
		*until = 0;
	if (!r || !strikes)
		return false;
	k = in_window(r, window_ns);
	if (count)
		*count = k;
	last = r->at[r->n - 1];
	end = last + window_ns < last ? UINT64_MAX : last + window_ns;
	if (k < strikes || now >= end)
		return false;
	if (until)
		*until = end;
	return true;
}

bool hangs_forget(struct hangs *h, uint32_t uid)
{
	struct hangs_uid *r = find(h, uid);

	if (!r)
		return false;
	*r = h->u[--h->nu];
	return true;
}
