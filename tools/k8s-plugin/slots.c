/* SPDX-License-Identifier: MIT */
/* Tenant slots as kubelet devices: IDs and preferred allocations (slots.h). Pure. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slots.h"

int slot_id_format(char *buf, size_t cap, unsigned gpu, unsigned slot)
{
	int r = snprintf(buf, cap, "gpu%u-slot%u", gpu, slot);

	return r < 0 || (size_t)r >= cap ? -ENOSPC : r;
}

/* A decimal number below lim at *p without a leading zero (but "0"); advances *p. */
static int number(const char **p, unsigned lim, unsigned *out)
{
	const char *s = *p;
	unsigned v = 0;

	if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (unsigned)(*s - '0');
		if (v >= lim)
			return -EINVAL;
	}
	*out = v;
	*p = s;
	return 0;
}

int slot_id_parse(const char *id, unsigned *gpu, unsigned *slot)
{
	unsigned g, s;

	if (strncmp(id, "gpu", 3))
		return -EINVAL;
	id += 3;
	if (number(&id, SLOTS_GPU_MAX, &g) || strncmp(id, "-slot", 5))
		return -EINVAL;
	id += 5;
	if (number(&id, SLOTS_PER_GPU_MAX, &s) || *id)
		return -EINVAL;
	*gpu = g;
	*slot = s;
	return 0;
}

struct cand {
	const char *id;
	unsigned gpu, slot;
	bool must, taken;
};

static int by_gpu_slot(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->gpu != y->gpu)
		return x->gpu < y->gpu ? -1 : 1;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return (int)y->must - (int)x->must; /* of duplicates, the must one first */
}

int slots_prefer(const char *const *avail, size_t n_avail, const char *const *must, size_t n_must, size_t size,
		 const char **out)
{
	size_t n = n_avail + n_must, m = 0, chosen = 0;
	unsigned *left = NULL; /* per GPU: available IDs not yet chosen */
	bool *used = NULL;     /* per GPU: holds a chosen ID */
	struct cand *c;
	int r = 0;

	c = calloc(n ? n : 1, sizeof(*c));
	left = calloc(SLOTS_GPU_MAX, sizeof(*left));
	used = calloc(SLOTS_GPU_MAX, sizeof(*used));
	if (!c || !left || !used) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const char *id = i < n_must ? must[i] : avail[i - n_must];

		if (slot_id_parse(id, &c[i].gpu, &c[i].slot)) {
			r = -EINVAL;
			goto out;
		}
		c[i].id = id;
		c[i].must = i < n_must;
	}
	qsort(c, n, sizeof(*c), by_gpu_slot);
	/* drop duplicates (the must copy stays: it sorts first) */
	for (size_t i = 0; i < n; i++)
		if (!m || c[i].gpu != c[m - 1].gpu || c[i].slot != c[m - 1].slot)
			c[m++] = c[i];
	for (size_t i = 0; i < m && chosen < size; i++)
		if (c[i].must) {
			c[i].taken = true;
			used[c[i].gpu] = true;
			out[chosen++] = c[i].id;
		}
	for (size_t i = 0; i < m; i++)
		if (!c[i].taken)
			left[c[i].gpu]++;
	while (chosen < size) {
		size_t want = size - chosen;
		unsigned best = SLOTS_GPU_MAX;

		/* a GPU already in use with IDs left */
		for (unsigned g = 0; g < SLOTS_GPU_MAX && best == SLOTS_GPU_MAX; g++)
			if (used[g] && left[g])
				best = g;
		/* the smallest that holds the rest */
		if (best == SLOTS_GPU_MAX)
			for (unsigned g = 0; g < SLOTS_GPU_MAX; g++)
				if (left[g] >= want && (best == SLOTS_GPU_MAX || left[g] < left[best]))
					best = g;
		/* else the largest */
		if (best == SLOTS_GPU_MAX)
			for (unsigned g = 0; g < SLOTS_GPU_MAX; g++)
				if (left[g] && (best == SLOTS_GPU_MAX || left[g] > left[best]))
					best = g;
		if (best == SLOTS_GPU_MAX)
			break; /* nothing left */
		used[best] = true;
		for (size_t i = 0; i < m && chosen < size; i++)
			if (!c[i].taken && c[i].gpu == best) {
				c[i].taken = true;
				left[best]--;
				out[chosen++] = c[i].id;
			}
	}
	r = (int)chosen;
out:
	free(c);
	free(left);
	free(used);
	return r;
}
