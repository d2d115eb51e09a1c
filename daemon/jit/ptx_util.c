/* SPDX-License-Identifier: MIT */
/*
 * The JIT's small utilities (ptx.h): output buffers, the string map, token
 * tests, numbers and type sizes. Pure: no I/O.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void jit_buf_free(struct jit_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->err = 0;
}

void buf_put(struct jit_buf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *d;

		while (cap < b->len + n + 1)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d) {
			b->err = -ENOMEM;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void buf_puts(struct jit_buf *b, const char *s) { buf_put(b, s, strlen(s)); }

void buf_printf(struct jit_buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = -EINVAL;
		return;
	}
	if ((size_t)n < sizeof(tmp)) {
		buf_put(b, tmp, (size_t)n);
		return;
	}
	{
		char *big = malloc((size_t)n + 1);

		if (!big) {
			b->err = -ENOMEM;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		buf_put(b, big, (size_t)n);
		free(big);
	}
}

struct strmap_ent {
	const char *k;
	uint32_t n;
	int64_t v;
};

struct strmap {
	struct strmap_ent *e;
	size_t cap, used;
};

static uint64_t hash_str(const char *k, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
	return h;
}

struct strmap *strmap_new(void)
{
	struct strmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cap = 64;
	m->e = calloc(m->cap, sizeof(*m->e));
	if (!m->e) {
		free(m);
		return NULL;
	}
	return m;
}

void strmap_free(struct strmap *m)
{
	if (!m)
		return;
	free(m->e);
	free(m);
}

static int strmap_grow(struct strmap *m)
{
	size_t cap = m->cap * 2;
	struct strmap_ent *e = calloc(cap, sizeof(*e));

	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->e[i].k)
			continue;
		size_t j = hash_str(m->e[i].k, m->e[i].n) & (cap - 1);

		while (e[j].k)
			j = (j + 1) & (cap - 1);
		e[j] = m->e[i];
	}
	free(m->e);
	m->e = e;
	m->cap = cap;
	return 0;
}

int strmap_put(struct strmap *m, const char *k, size_t n, int64_t v)
{
	size_t j;

	if ((m->used + 1) * 2 > m->cap && strmap_grow(m) < 0)
		return -ENOMEM;
	j = hash_str(k, n) & (m->cap - 1);
	while (m->e[j].k) {
		if (m->e[j].n == n && memcmp(m->e[j].k, k, n) == 0) {
			m->e[j].v = v;
			return 0;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->e[j].k = k;
	m->e[j].n = (uint32_t)n;
	m->e[j].v = v;
	m->used++;
	return 0;
}

bool strmap_get(const struct strmap *m, const char *k, size_t n, int64_t *v)
{
	size_t j = hash_str(k, n) & (m->cap - 1);

	while (m->e[j].k) {
		if (m->e[j].n == n && memcmp(m->e[j].k, k, n) == 0) {
			if (v)
				*v = m->e[j].v;
			return true;
		}
		j = (j + 1) & (m->cap - 1);
	}
	return false;
}

bool tok_is(const struct ptx_module *m, uint32_t t, const char *s)
{
	size_t n = strlen(s);

	return t < m->ntok && m->toks[t].len == n && memcmp(tok_s(m, t), s, n) == 0;
}

bool tok_punct(const struct ptx_module *m, uint32_t t, char c)
{
	return t < m->ntok && m->toks[t].kind == T_PUNCT && tok_s(m, t)[0] == c;
}

bool tok_prefix(const struct ptx_module *m, uint32_t t, const char *p)
{
	size_t n = strlen(p);

	return t < m->ntok && m->toks[t].len >= n && memcmp(tok_s(m, t), p, n) == 0;
}

uint32_t stmt_end(const struct stmt *s) { return s->first + s->n; }

bool parse_num(const char *s, size_t n, int64_t *v)
{
	char tmp[32], *end;
	long long x;

	if (n == 0 || n >= sizeof(tmp))
		return false;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (n > 1 && (tmp[n - 1] == 'U' || tmp[n - 1] == 'u'))
		tmp[--n] = '\0';
	if (tmp[0] == '0' && (tmp[1] == 'f' || tmp[1] == 'F' || tmp[1] == 'd' || tmp[1] == 'D'))
		return false; /* float bit patterns */
	errno = 0;
	if (tmp[0] == '0' && (tmp[1] == 'x' || tmp[1] == 'X'))
		x = (long long)strtoull(tmp + 2, &end, 16);
	else if (tmp[0] == '0' && (tmp[1] == 'b' || tmp[1] == 'B'))
		x = (long long)strtoull(tmp + 2, &end, 2);
	else if (tmp[0] == '0' && n > 1)
		x = (long long)strtoull(tmp + 1, &end, 8);
	else
		x = strtoll(tmp, &end, 10);
	if (errno || *end)
		return false;
	*v = x;
	return true;
}

int ptx_type_size(const char *s, size_t n)
{
	static const struct {
		const char *t;
		int sz;
	} tab[] = {
		{ ".b8", 1 },   { ".u8", 1 },   { ".s8", 1 },    { ".b16", 2 },   { ".u16", 2 },   { ".s16", 2 },
		{ ".f16", 2 },  { ".bf16", 2 }, { ".b32", 4 },   { ".u32", 4 },   { ".s32", 4 },   { ".f32", 4 },
		{ ".f16x2", 4 }, { ".bf16x2", 4 }, { ".b64", 8 }, { ".u64", 8 },  { ".s64", 8 },   { ".f64", 8 },
		{ ".b128", 16 }, { ".pred", 1 }, { ".e4m3", 1 }, { ".e5m2", 1 }, { ".tf32", 4 },
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strlen(tab[i].t) == n && memcmp(tab[i].t, s, n) == 0)
			return tab[i].sz;
	return 0;
}
