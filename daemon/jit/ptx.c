/* SPDX-License-Identifier: MIT */
/*
 * PTX lexer, parser, printer and fusibility analysis.
 *
 * The parser knows PTX's statement structure (directives, declarations,
 * functions, labels, instructions with predicates and vector operands), not
 * every instruction: operands stay token lists. The analysis is
 * conservative: a construct it does not recognise makes the kernel
 * unfusible with that construct named, never a wrong rewrite.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

#include "ptx.h"

/* ---- small utilities --------------------------------------------------- */

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

static bool tok_prefix(const struct ptx_module *m, uint32_t t, const char *p)
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

/* ---- lexer ------------------------------------------------------------- */

struct perr {
	char *msg;
	size_t len;
	int rc;
};

__attribute__((format(printf, 3, 4))) static int fail(struct perr *e, uint32_t line, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (e->rc)
		return e->rc;
	e->rc = -EINVAL;
	if (!e->msg || !e->len)
		return e->rc;
	if (line)
		n = snprintf(e->msg, e->len, "line %" PRIu32 ": ", line);
	if (n < 0 || (size_t)n >= e->len)
		return e->rc;
	va_start(ap, fmt);
	vsnprintf(e->msg + n, e->len - (size_t)n, fmt, ap);
	va_end(ap);
	return e->rc;
}

static bool is_sym_start(int c) { return isalpha(c) || c == '_' || c == '$'; }
static bool is_sym(int c) { return isalnum(c) || c == '_' || c == '$'; }

static int push_tok(struct ptx_module *m, size_t *cap, uint32_t off, uint32_t len, uint32_t line, uint8_t kind,
		    struct perr *e)
{
	if (m->ntok >= JIT_MAX_TOKENS) {
		e->rc = -E2BIG;
		if (e->msg && e->len)
			snprintf(e->msg, e->len, "line %" PRIu32 ": more than %u tokens", line, JIT_MAX_TOKENS);
		return -E2BIG;
	}
	if (len > JIT_NAME_MAX && kind != T_STR)
		return fail(e, line, "token longer than %u characters", JIT_NAME_MAX);
	if (m->ntok == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		struct tok *t = realloc(m->toks, nc * sizeof(*t));

		if (!t)
			return e->rc = -ENOMEM;
		m->toks = t;
		*cap = nc;
	}
	m->toks[m->ntok++] = (struct tok){ .off = off, .len = len, .line = line, .kind = kind };
	return 0;
}

static int lex(struct ptx_module *m, struct perr *e)
{
	const char *s = m->src;
	size_t n = m->len, i = 0, cap = 0;
	uint32_t line = 1;
	int rc;

	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t j = i;
		uint8_t kind;

		if (c == '\n') {
			line++;
			i++;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			i++;
			continue;
		}
		if (c == '/' && i + 1 < n && s[i + 1] == '/') {
			while (i < n && s[i] != '\n')
				i++;
			continue;
		}
		if (c == '/' && i + 1 < n && s[i + 1] == '*') {
			i += 2;
			while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/')) {
				if (s[i] == '\n')
					line++;
				i++;
			}
			if (i + 1 >= n)
				return fail(e, line, "unterminated comment");
			i += 2;
			continue;
		}
		if (c == '@' && i + 1 < n && s[i + 1] == '@') { /* @@DWARF lines: debug, dropped */
			while (i < n && s[i] != '\n')
				i++;
			continue;
		}
		if (c == '\0')
			return fail(e, line, "NUL byte in PTX text");
		if (is_sym_start(c) || c == '.' || c == '%') {
			kind = c == '.' ? T_DIR : c == '%' ? T_REG : T_IDENT;
			j = i + 1;
			if (kind != T_IDENT && (j >= n || !is_sym_start((unsigned char)s[j]))) {
				if (kind == T_REG)
					return fail(e, line, "'%%' not followed by a name");
				/* a lone '.' is punctuation */
				kind = T_PUNCT;
			} else {
				for (;;) {
					if (j < n && is_sym((unsigned char)s[j]))
						j++;
					else if (j + 1 < n && s[j] == '.' && kind != T_DIR && is_sym_start((unsigned char)s[j + 1]))
						j++;
					else if (j + 2 < n && s[j] == ':' && s[j + 1] == ':' && is_sym_start((unsigned char)s[j + 2]))
						j += 2;
					else
						break;
				}
			}
			if (kind == T_PUNCT)
				j = i + 1;
		} else if (isdigit(c)) {
			bool hexlike = c == '0' && i + 1 < n && strchr("xXfFdDbB", s[i + 1]);

			kind = T_NUM;
			j = i + 1;
			while (j < n) {
				if (isalnum((unsigned char)s[j]) || s[j] == '.' || s[j] == '_')
					j++;
				else if (!hexlike && (s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E') &&
					 j + 1 < n && isdigit((unsigned char)s[j + 1]))
					j++;
				else
					break;
			}
		} else if (c == '"') {
			kind = T_STR;
			j = i + 1;
			while (j < n && s[j] != '"') {
				if (s[j] == '\n')
					return fail(e, line, "newline in string");
				if (s[j] == '\\')
					j++;
				j++;
			}
			if (j >= n)
				return fail(e, line, "unterminated string");
			j++;
		} else if (c < 0x80 && ispunct(c)) {
			kind = T_PUNCT;
			j = i + 1;
		} else {
			return fail(e, line, "unexpected character 0x%02x", c);
		}
		rc = push_tok(m, &cap, (uint32_t)i, (uint32_t)(j - i), line, kind, e);
		if (rc)
			return rc;
		i = j;
	}
	return 0;
}

/* ---- parser ------------------------------------------------------------ */

struct parser {
	struct ptx_module *m;
	uint32_t t; /* next token */
	struct perr *e;
	size_t stmt_cap, var_cap, func_cap, item_cap;
};

static uint32_t cur_line(const struct parser *p)
{
	const struct ptx_module *m = p->m;

	if (p->t < m->ntok)
		return m->toks[p->t].line;
	return m->ntok ? m->toks[m->ntok - 1].line : 1;
}

static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	void *a = realloc(*arr, nc * sz);

	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = nc;
	return 0;
}

static int add_stmt(struct parser *p, uint32_t first, uint32_t n, uint8_t kind, uint32_t *idx)
{
	struct ptx_module *m = p->m;

	if (grow((void **)&m->stmts, &p->stmt_cap, m->nstmt, sizeof(*m->stmts)))
		return p->e->rc = -ENOMEM;
	m->stmts[m->nstmt] = (struct stmt){ .first = first, .n = n, .kind = kind, .var = -1 };
	if (idx)
		*idx = m->nstmt;
	m->nstmt++;
	return 0;
}

static int add_item(struct parser *p, uint8_t kind, uint32_t idx)
{
	struct ptx_module *m = p->m;

	if (grow((void **)&m->items, &p->item_cap, m->nitem, sizeof(*m->items)))
		return p->e->rc = -ENOMEM;
	m->items[m->nitem++] = (struct item){ .kind = kind, .idx = idx };
	return 0;
}

/* Tokens up to the ';' ending a statement at brace depth 0; returns the count, p->t after the ';'. */
static int until_semi(struct parser *p, uint32_t *n)
{
	struct ptx_module *m = p->m;
	uint32_t start = p->t;
	int depth = 0;

	while (p->t < m->ntok) {
		if (tok_punct(m, p->t, '{'))
			depth++;
		else if (tok_punct(m, p->t, '}')) {
			if (--depth < 0)
				return fail(p->e, cur_line(p), "unbalanced '}' in a statement");
		} else if (depth == 0 && tok_punct(m, p->t, ';')) {
			*n = p->t - start;
			p->t++;
			return 0;
		}
		p->t++;
	}
	return fail(p->e, m->ntok ? m->toks[start].line : 0, "statement without ';'");
}

/* A directive that ends at the end of its line (.version, .target, .loc, ...). */
static uint32_t line_stmt(struct parser *p)
{
	struct ptx_module *m = p->m;
	uint32_t start = p->t, line = m->toks[p->t].line;

	while (p->t < m->ntok && m->toks[p->t].line == line)
		p->t++;
	return p->t - start;
}

static int type_size(const char *s, size_t n)
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

/*
 * Parse the pieces of a declaration: [.align N] [.vN] type [.ptr [space]
 * [.align N]] name [ '[' N ']' ... ] [= init]. Fills size/align/name.
 */
static int parse_decl(struct parser *p, uint32_t first, uint32_t n, uint32_t *name, uint64_t *size, uint32_t *align,
		      bool *unsized, bool *init, bool *ptr)
{
	struct ptx_module *m = p->m;
	uint32_t end = first + n, t = first;
	uint64_t elsz = 0, count = 1, vec = 1;
	uint32_t al = 0;
	bool after_ptr = false;

	*name = UINT32_MAX;
	*unsized = *init = false;
	if (ptr)
		*ptr = false;
	for (; t < end; t++) {
		const struct tok *k = &m->toks[t];

		if (k->kind == T_DIR) {
			int sz;

			if (tok_is(m, t, ".align")) {
				int64_t v;

				if (t + 1 >= end || !parse_num(tok_s(m, t + 1), m->toks[t + 1].len, &v) || v <= 0 ||
				    v > 4096 || (v & (v - 1)))
					return fail(p->e, k->line, "bad .align");
				if (!after_ptr)
					al = (uint32_t)v;
				t++;
			} else if (tok_is(m, t, ".ptr")) {
				after_ptr = true;
				if (ptr)
					*ptr = true;
			} else if (tok_is(m, t, ".v2") || tok_is(m, t, ".v4") || tok_is(m, t, ".v8")) {
				vec = (uint64_t)(tok_s(m, t)[2] - '0');
			} else if ((sz = type_size(tok_s(m, t), k->len)) > 0) {
				elsz = (uint64_t)sz;
			}
			continue;
		}
		if ((k->kind == T_IDENT || k->kind == T_REG) && *name == UINT32_MAX) {
			*name = t;
			continue;
		}
		if (tok_punct(m, t, '[') && *name != UINT32_MAX) {
			int64_t v;

			if (t + 1 < end && tok_punct(m, t + 1, ']')) {
				*unsized = true;
				t++;
				continue;
			}
			if (t + 2 >= end || !parse_num(tok_s(m, t + 1), m->toks[t + 1].len, &v) || v < 0 ||
			    v > (1ll << 40) || !tok_punct(m, t + 2, ']'))
				return fail(p->e, k->line, "bad array size");
			if (count > (1ull << 40) / ((uint64_t)v + 1))
				return fail(p->e, k->line, "array too large");
			count *= (uint64_t)v;
			t += 2;
			continue;
		}
		if (tok_punct(m, t, '=')) {
			*init = true;
			break;
		}
		if (tok_punct(m, t, '<')) /* %r<N> */
			break;
	}
	if (*name == UINT32_MAX)
		return fail(p->e, m->toks[first].line, "declaration without a name");
	*size = elsz * vec * count;
	if (!al)
		al = (uint32_t)(elsz * vec);
	if (!al)
		al = 1;
	*align = al;
	return 0;
}

static int parse_var(struct parser *p, uint32_t first, uint32_t n, int32_t func, bool ext)
{
	struct ptx_module *m = p->m;
	struct var v = { .first = first, .n = n, .func = func, .ext = ext };
	bool ptr;

	for (uint32_t t = first; t < first + n; t++) {
		if (m->toks[t].kind != T_DIR)
			continue;
		if (tok_is(m, t, ".global"))
			v.space = SP_GLOBAL;
		else if (tok_is(m, t, ".const"))
			v.space = SP_CONST;
		else if (tok_is(m, t, ".shared"))
			v.space = SP_SHARED;
		else if (tok_is(m, t, ".local"))
			v.space = SP_LOCAL;
		else if (tok_is(m, t, ".extern"))
			v.ext = true;
		else if (tok_is(m, t, ".texref") || tok_is(m, t, ".samplerref") || tok_is(m, t, ".surfref"))
			v.opaque = true;
		else if (tok_is(m, t, ".tex"))
			v.space = SP_TEX;
	}
	if (!v.space)
		return fail(p->e, m->toks[first].line, "variable without a state space");
	if (parse_decl(p, first, n, &v.name, &v.size, &v.align, &v.unsized, &v.init, &ptr))
		return p->e->rc;
	if (grow((void **)&m->vars, &p->var_cap, m->nvar, sizeof(*m->vars)))
		return p->e->rc = -ENOMEM;
	m->vars[m->nvar++] = v;
	return 0;
}

/* Statements of a function body; p->t is after the opening '{'. */
static int parse_body(struct parser *p, uint32_t fidx)
{
	struct ptx_module *m = p->m;
	uint32_t first_stmt = m->nstmt, n;
	int depth = 1;

	while (p->t < m->ntok) {
		uint32_t t = p->t;
		const struct tok *k = &m->toks[t];

		if (tok_punct(m, t, '}')) {
			p->t++;
			if (--depth == 0) {
				m->funcs[fidx].body_first = first_stmt;
				m->funcs[fidx].body_n = m->nstmt - first_stmt;
				return 0;
			}
			if (add_stmt(p, t, 1, ST_CLOSE, NULL))
				return p->e->rc;
			continue;
		}
		if (tok_punct(m, t, '{')) {
			if (++depth > 64)
				return fail(p->e, k->line, "blocks nested deeper than 64");
			p->t++;
			if (add_stmt(p, t, 1, ST_OPEN, NULL))
				return p->e->rc;
			continue;
		}
		if (k->kind == T_IDENT && tok_punct(m, t + 1, ':') && !tok_punct(m, t + 2, ':')) {
			p->t += 2;
			if (add_stmt(p, t, 1, ST_LABEL, NULL))
				return p->e->rc;
			continue;
		}
		if (k->kind == T_DIR) {
			if (tok_is(m, t, ".loc") || tok_is(m, t, ".file")) {
				line_stmt(p); /* debug: dropped */
				continue;
			}
			if (until_semi(p, &n))
				return p->e->rc;
			if (add_stmt(p, t, n, ST_DIR, NULL))
				return p->e->rc;
			if ((tok_is(m, t, ".shared") || tok_is(m, t, ".local")) && depth == 1) {
				if (parse_var(p, t, n, (int32_t)fidx, false))
					return p->e->rc;
				m->stmts[m->nstmt - 1].var = (int32_t)(m->nvar - 1);
			}
			continue;
		}
		if (k->kind == T_IDENT || tok_punct(m, t, '@')) {
			if (until_semi(p, &n))
				return p->e->rc;
			if (n == 0)
				return fail(p->e, k->line, "empty instruction");
			if (add_stmt(p, t, n, ST_INSN, NULL))
				return p->e->rc;
			continue;
		}
		if (tok_punct(m, t, ';')) { /* empty statement */
			p->t++;
			continue;
		}
		return fail(p->e, k->line, "unexpected '%.*s' in a function body", (int)k->len, tok_s(m, t));
	}
	return fail(p->e, cur_line(p), "function body without '}'");
}

static int parse_params(struct parser *p, uint32_t first, uint32_t n, struct func *f)
{
	struct ptx_module *m = p->m;
	uint32_t t = first, end = first + n, off = 0;

	while (t < end) {
		uint32_t s = t, depth = 0;
		struct fparam fp = { 0 };
		uint64_t size;
		bool unsized, init;

		while (t < end && !(depth == 0 && tok_punct(m, t, ','))) {
			if (tok_punct(m, t, '['))
				depth++;
			else if (tok_punct(m, t, ']'))
				depth--;
			t++;
		}
		if (t == s)
			return fail(p->e, m->toks[s].line, "empty parameter");
		if (!tok_is(m, s, ".param") && !tok_is(m, s, ".reg"))
			return fail(p->e, m->toks[s].line, "parameter does not start with .param");
		if (f->nparams >= JIT_MAX_PARAMS) {
			p->e->rc = -E2BIG;
			if (p->e->msg)
				snprintf(p->e->msg, p->e->len, "line %u: more than %u parameters", m->toks[s].line,
					 JIT_MAX_PARAMS);
			return -E2BIG;
		}
		if (parse_decl(p, s, t - s, &fp.name, &size, &fp.align, &unsized, &init, &fp.ptr))
			return p->e->rc;
		if (size == 0 || size > 32768 || unsized)
			return fail(p->e, m->toks[s].line, "parameter of unknown or huge size");
		fp.first = s;
		fp.n = t - s;
		fp.size = (uint32_t)size;
		off = (off + fp.align - 1) & ~(fp.align - 1);
		fp.offset = off;
		off += fp.size;
		if (!fp.ptr && !tok_punct(m, fp.name + 1, '[') &&
		    (tok_is(m, fp.name - 1, ".u64") || tok_is(m, fp.name - 1, ".b64") || tok_is(m, fp.name - 1, ".s64")))
			fp.ptr = true;
		{
			struct fparam *np = realloc(f->params, (f->nparams + 1) * sizeof(*np));

			if (!np)
				return p->e->rc = -ENOMEM;
			f->params = np;
		}
		f->params[f->nparams++] = fp;
		if (t < end)
			t++; /* ',' */
	}
	return 0;
}

/* A parenthesised list starting at p->t ('('): sets first/n to the inside. */
static int paren_list(struct parser *p, uint32_t *first, uint32_t *n)
{
	struct ptx_module *m = p->m;
	int depth = 0;
	uint32_t s = p->t;

	for (; p->t < m->ntok; p->t++) {
		if (tok_punct(m, p->t, '('))
			depth++;
		else if (tok_punct(m, p->t, ')') && --depth == 0) {
			*first = s + 1;
			*n = p->t - s - 1;
			p->t++;
			return 0;
		} else if (tok_punct(m, p->t, '{') || tok_punct(m, p->t, ';'))
			break;
	}
	return fail(p->e, m->toks[s].line, "unterminated parameter list");
}

static int parse_func(struct parser *p, uint32_t start, uint32_t link_n)
{
	struct ptx_module *m = p->m;
	struct func f = { .hdr_first = start, .link_n = link_n };
	uint32_t idx;

	f.entry = tok_is(m, p->t, ".entry");
	for (uint32_t t = start; t < p->t; t++)
		if (tok_is(m, t, ".extern"))
			f.ext = true;
	p->t++;
	if (!f.entry && tok_punct(m, p->t, '(')) {
		if (paren_list(p, &f.ret_first, &f.ret_n))
			return p->e->rc;
	}
	if (p->t >= m->ntok || m->toks[p->t].kind != T_IDENT)
		return fail(p->e, cur_line(p), "function without a name");
	f.name = p->t++;
	if (tok_punct(m, p->t, '(')) {
		if (paren_list(p, &f.par_first, &f.par_n))
			return p->e->rc;
		if (parse_params(p, f.par_first, f.par_n, &f)) {
			free(f.params);
			return p->e->rc;
		}
	}
	f.hdr_n = p->t - start;
	f.perf_first = p->t;
	while (p->t < m->ntok && !tok_punct(m, p->t, '{') && !tok_punct(m, p->t, ';'))
		p->t++;
	f.perf_n = p->t - f.perf_first;
	if (p->t >= m->ntok) {
		free(f.params);
		return fail(p->e, cur_line(p), "function without body or ';'");
	}
	if (grow((void **)&m->funcs, &p->func_cap, m->nfunc, sizeof(*m->funcs))) {
		free(f.params);
		return p->e->rc = -ENOMEM;
	}
	idx = m->nfunc;
	m->funcs[m->nfunc++] = f;
	if (tok_punct(m, p->t, ';')) {
		p->t++;
	} else {
		p->t++;
		m->funcs[idx].has_body = true;
		if (parse_body(p, idx))
			return p->e->rc;
	}
	return add_item(p, IT_FUNC, idx);
}

static int parse_module(struct parser *p)
{
	struct ptx_module *m = p->m;

	while (p->t < m->ntok) {
		uint32_t t = p->t, n, st;
		const struct tok *k = &m->toks[t];

		if (k->kind != T_DIR) {
			if (tok_punct(m, t, ';')) {
				p->t++;
				continue;
			}
			return fail(p->e, k->line, "unexpected '%.*s' at module scope", (int)k->len, tok_s(m, t));
		}
		if (tok_is(m, t, ".version") || tok_is(m, t, ".target") || tok_is(m, t, ".address_size")) {
			n = line_stmt(p);
			if (n < 2)
				return fail(p->e, k->line, "%.*s without a value", (int)k->len, tok_s(m, t));
			/* nothing else on the line: the rest of it would be printed back, and compiled, unparsed */
			if (!tok_is(m, t, ".target") && n != 2)
				return fail(p->e, k->line, "%.*s takes one value and nothing after it on its line", (int)k->len,
					    tok_s(m, t));
			if (tok_is(m, t, ".version")) {
				if (m->toks[t + 1].len >= sizeof(m->version) || m->version[0])
					return fail(p->e, k->line, "bad or repeated .version");
				memcpy(m->version, tok_s(m, t + 1), m->toks[t + 1].len);
			} else if (tok_is(m, t, ".target")) {
				if (m->toks[t + 1].len >= sizeof(m->target) || m->target[0])
					return fail(p->e, k->line, "bad or repeated .target");
				for (uint32_t u = 1; u < n; u++) /* NAME[, NAME]... */
					if ((u % 2 == 1) != (m->toks[t + u].kind == T_IDENT) ||
					    (u % 2 == 0 && !tok_punct(m, t + u, ',')) || (u == n - 1 && u % 2 == 0))
						return fail(p->e, k->line, ".target wants names separated by commas");
				memcpy(m->target, tok_s(m, t + 1), m->toks[t + 1].len);
			} else if (!tok_is(m, t + 1, "64")) {
				return fail(p->e, k->line, "only .address_size 64 is supported");
			}
			if (add_stmt(p, t, n, ST_DIR, &st) || add_item(p, IT_LINE, st))
				return p->e->rc;
			continue;
		}
		if (tok_is(m, t, ".file") || tok_is(m, t, ".loc")) {
			line_stmt(p);
			continue;
		}
		if (tok_is(m, t, ".section")) { /* debug sections: dropped */
			int depth = 0;

			while (p->t < m->ntok && !tok_punct(m, p->t, '{'))
				p->t++;
			for (; p->t < m->ntok; p->t++) {
				if (tok_punct(m, p->t, '{'))
					depth++;
				else if (tok_punct(m, p->t, '}') && --depth == 0)
					break;
			}
			if (p->t >= m->ntok)
				return fail(p->e, k->line, "unterminated .section");
			p->t++;
			continue;
		}
		/* linkage prefixes, then .entry/.func or a variable */
		{
			uint32_t s = t, link = 0;
			bool ext = false;

			while (p->t < m->ntok &&
			       (tok_is(m, p->t, ".visible") || tok_is(m, p->t, ".extern") || tok_is(m, p->t, ".weak") ||
				tok_is(m, p->t, ".common"))) {
				if (tok_is(m, p->t, ".extern"))
					ext = true;
				p->t++;
				link++;
			}
			if (tok_is(m, p->t, ".entry") || tok_is(m, p->t, ".func")) {
				if (parse_func(p, s, link))
					return p->e->rc;
				continue;
			}
			p->t = s;
			if (until_semi(p, &n))
				return p->e->rc;
			if (add_stmt(p, s, n, ST_DIR, &st))
				return p->e->rc;
			if (tok_is(m, s + link, ".global") || tok_is(m, s + link, ".const") ||
			    tok_is(m, s + link, ".shared") || tok_is(m, s + link, ".local") ||
			    tok_is(m, s + link, ".tex")) {
				if (parse_var(p, s, n, -1, ext) || add_item(p, IT_VAR, m->nvar - 1))
					return p->e->rc;
			} else if (add_item(p, IT_LINE, st)) {
				return p->e->rc;
			}
		}
	}
	if (!m->version[0] || !m->target[0])
		return fail(p->e, 0, "missing .version or .target");
	return 0;
}

/* ---- printer ----------------------------------------------------------- */

static bool wordlike(uint8_t k) { return k != T_PUNCT; }

void print_toks(const struct ptx_module *m, uint32_t first, uint32_t n, tok_sub_fn sub, void *ctx, struct jit_buf *b)
{
	uint32_t end = first + n, prev = UINT32_MAX;

	for (uint32_t t = first; t < end;) {
		uint32_t used = 0;

		if (prev != UINT32_MAX) {
			const struct tok *a = &m->toks[prev], *c = &m->toks[t];

			/*
			 * A space where the source had blank (or a comment), and after
			 * commas: never join tokens the source kept apart, so the output
			 * lexes as the input did.
			 */
			if (a->off + a->len < c->off || (a->kind == T_PUNCT && tok_s(m, prev)[0] == ',') ||
			    (wordlike(a->kind) && wordlike(c->kind)))
				buf_put(b, " ", 1);
		}
		if (sub)
			used = sub(ctx, m, t, end, b);
		if (!used) {
			buf_put(b, tok_s(m, t), m->toks[t].len);
			used = 1;
		}
		prev = t + used - 1;
		t += used;
	}
}

void print_body(const struct ptx_module *m, const struct func *f, tok_sub_fn sub, stmt_fn before, void *ctx,
		struct jit_buf *b)
{
	for (uint32_t i = 0; i < f->body_n; i++) {
		const struct stmt *s = &m->stmts[f->body_first + i];

		if (before && !before(ctx, m, s))
			continue;
		switch (s->kind) {
		case ST_OPEN:
			buf_puts(b, "{\n");
			break;
		case ST_CLOSE:
			buf_puts(b, "}\n");
			break;
		case ST_LABEL:
			print_toks(m, s->first, 1, sub, ctx, b);
			buf_puts(b, ":\n");
			break;
		default:
			buf_put(b, "\t", 1);
			print_toks(m, s->first, s->n, sub, ctx, b);
			buf_puts(b, ";\n");
		}
	}
}

int ptx_print(const struct ptx_module *m, struct jit_buf *b)
{
	for (uint32_t i = 0; i < m->nitem; i++) {
		const struct item *it = &m->items[i];

		if (it->kind == IT_LINE) {
			const struct stmt *s = &m->stmts[it->idx];
			bool line = tok_is(m, s->first, ".version") || tok_is(m, s->first, ".target") ||
				    tok_is(m, s->first, ".address_size");

			if (tok_is(m, s->first, ".target")) {
				/* debug sections are dropped, so is the target's `debug` */
				buf_puts(b, ".target ");
				for (uint32_t t = s->first + 1, n = 0; t < stmt_end(s); t++) {
					if (m->toks[t].kind == T_PUNCT || tok_is(m, t, "debug"))
						continue;
					if (n++)
						buf_puts(b, ", ");
					buf_put(b, tok_s(m, t), m->toks[t].len);
				}
				buf_puts(b, "\n");
				continue;
			}
			print_toks(m, s->first, s->n, NULL, NULL, b);
			buf_puts(b, line ? "\n" : ";\n");
		} else if (it->kind == IT_VAR) {
			const struct var *v = &m->vars[it->idx];

			print_toks(m, v->first, v->n, NULL, NULL, b);
			buf_puts(b, ";\n");
		} else {
			const struct func *f = &m->funcs[it->idx];

			print_toks(m, f->hdr_first, f->hdr_n, NULL, NULL, b);
			if (f->perf_n) {
				buf_put(b, " ", 1);
				print_toks(m, f->perf_first, f->perf_n, NULL, NULL, b);
			}
			if (!f->has_body) {
				buf_puts(b, ";\n");
				continue;
			}
			buf_puts(b, "\n{\n");
			print_body(m, f, NULL, NULL, NULL, b);
			buf_puts(b, "}\n");
		}
	}
	return b->err;
}


/* ---- scopes ------------------------------------------------------------ */

void fscope_free(struct fscope *s)
{
	strmap_free(s->labels);
	strmap_free(s->names);
	strmap_free(s->regs);
	memset(s, 0, sizeof(*s));
}

bool fscope_has_reg(const struct fscope *s, const char *name, size_t len)
{
	int64_t v;
	size_t d = len;

	if (strmap_get(s->regs, name, len, &v) && v == 1)
		return true;
	while (d > 1 && isdigit((unsigned char)name[d - 1]))
		d--;
	if (d == len || !strmap_get(s->regs, name, d, &v) || v >= 0)
		return false;
	{
		int64_t idx;

		if (len - d > 9)
			return false;
		if (name[d] == '0' && len - d > 1)
			return false; /* %r01 is not %r1 */
		idx = strtoll(name + d, NULL, 10);
		return idx < -v - 1;
	}
}

/* Declared names of one declaration statement: `.reg .b32 %r<5>, %x, y;` */
static int scope_decl(const struct ptx_module *m, const struct stmt *s, struct fscope *sc, int32_t var)
{
	bool reg = tok_is(m, s->first, ".reg");
	uint32_t end = stmt_end(s);
	int rc = 0;

	for (uint32_t t = s->first + 1; t < end && !rc; t++) {
		const struct tok *k = &m->toks[t];

		if (tok_punct(m, t, '=') || tok_punct(m, t, '['))
			break; /* initializer / array size: no more names */
		if (k->kind == T_REG || (k->kind == T_IDENT && reg)) {
			if (tok_punct(m, t + 1, '<')) {
				int64_t cnt;

				if (t + 3 >= end || !parse_num(tok_s(m, t + 2), m->toks[t + 2].len, &cnt) || cnt < 0 ||
				    cnt > 1000000 || !tok_punct(m, t + 3, '>'))
					return -EINVAL;
				rc = strmap_put(sc->regs, tok_s(m, t), k->len, -cnt - 1);
				t += 3;
			} else if (k->kind == T_REG) {
				rc = strmap_put(sc->regs, tok_s(m, t), k->len, 1);
			} else {
				rc = strmap_put(sc->names, tok_s(m, t), k->len, -1);
			}
		} else if (k->kind == T_IDENT) {
			rc = strmap_put(sc->names, tok_s(m, t), k->len, var);
			break; /* .param/.local/.shared: one name per statement */
		}
	}
	return rc;
}

int fscope_build(const struct ptx_module *m, uint32_t fi, struct fscope *s)
{
	const struct func *f = &m->funcs[fi];
	int rc = 0;

	s->labels = strmap_new();
	s->names = strmap_new();
	s->regs = strmap_new();
	if (!s->labels || !s->names || !s->regs) {
		fscope_free(s);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < f->nparams && !rc; i++)
		rc = strmap_put(s->names, tok_s(m, f->params[i].name), m->toks[f->params[i].name].len, -2);
	/* return parameters of a .func */
	for (uint32_t t = f->ret_first; t < f->ret_first + f->ret_n && !rc; t++)
		if (m->toks[t].kind == T_IDENT)
			rc = strmap_put(s->names, tok_s(m, t), m->toks[t].len, -1);
	for (uint32_t i = 0; i < f->body_n && !rc; i++) {
		const struct stmt *st = &m->stmts[f->body_first + i];

		if (st->kind == ST_LABEL) {
			rc = strmap_put(s->labels, tok_s(m, st->first), m->toks[st->first].len, 1);
		} else if (st->kind == ST_DIR &&
			   (tok_is(m, st->first, ".reg") || tok_is(m, st->first, ".param") ||
			    tok_is(m, st->first, ".local") || tok_is(m, st->first, ".shared"))) {
			rc = scope_decl(m, st, s, st->var);
		}
	}
	if (rc)
		fscope_free(s);
	return rc;
}

/* ---- analysis ---------------------------------------------------------- */

struct an {
	struct ptx_module *m;
	struct ptx_kernel *k;
	struct kinfo *ki;
	bool bad;
	/* taint for initialized .global data */
	struct strmap *taint;
	uint32_t taint_var;
	bool any_data_global;
};

__attribute__((format(printf, 2, 3))) static void reject(struct an *a, const char *fmt, ...)
{
	va_list ap;

	if (a->bad)
		return;
	a->bad = true;
	va_start(ap, fmt);
	vsnprintf(a->k->reason, sizeof(a->k->reason), fmt, ap);
	va_end(ap);
}

#define JIT_MAX_REACHED 4096u /* functions, data or shared objects one kernel may reach */

static int u32_add(uint32_t **arr, uint32_t *n, uint32_t v)
{
	for (uint32_t i = 0; i < *n; i++)
		if ((*arr)[i] == v)
			return 0;
	if (*n >= JIT_MAX_REACHED)
		return -E2BIG;
	uint32_t *a = realloc(*arr, (*n + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	a[(*n)++] = v;
	*arr = a;
	return 0;
}

static const char *const special_regs[] = {
	"%tid", "%ntid", "%laneid", "%warpid", "%nwarpid", "%ctaid", "%nctaid", "%smid", "%nsmid", "%gridid",
	"%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt", "%clock", "%clock_hi",
	"%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi", "%pm0", "%pm1", "%pm2", "%pm3", "%pm4",
	"%pm5", "%pm6", "%pm7", "%pm0_64", "%pm1_64", "%pm2_64", "%pm3_64", "%pm4_64", "%pm5_64", "%pm6_64",
	"%pm7_64", NULL,
};

/* Length of the register name before a ".x" component. */
static size_t reg_base_len(const char *s, size_t n)
{
	const char *d = memchr(s, '.', n);

	return d ? (size_t)(d - s) : n;
}

static bool is_special(const char *s, size_t n)
{
	size_t b = reg_base_len(s, n);

	for (size_t i = 0; special_regs[i]; i++)
		if (strlen(special_regs[i]) == b && memcmp(special_regs[i], s, b) == 0)
			return true;
	return false;
}

static bool prefix_is(const char *s, size_t n, const char *p)
{
	size_t l = strlen(p);

	return n >= l && memcmp(s, p, l) == 0;
}

/* Registers and special registers of one instruction token. */
static void check_reg(struct an *a, const struct fscope *sc, uint32_t t, bool entry, const char *fname)
{
	const struct ptx_module *m = a->m;
	const char *s = tok_s(m, t);
	size_t n = m->toks[t].len, b = reg_base_len(s, n);

	if (fscope_has_reg(sc, s, n))
		return;
	if (prefix_is(s, n, "%envreg")) {
		reject(a, "grid-wide sync or cooperative launch: reads %.*s", (int)n, s);
		return;
	}
	if (prefix_is(s, n, "%cluster") || prefix_is(s, n, "%ncluster") || prefix_is(s, n, "%is_explicit_cluster")) {
		reject(a, "uses thread-block clusters (%.*s)", (int)n, s);
		return;
	}
	if (prefix_is(s, n, "%dynamic_smem_size") || prefix_is(s, n, "%total_smem_size") ||
	    prefix_is(s, n, "%aggr_smem_size") || prefix_is(s, n, "%reserved_smem")) {
		reject(a, "reads %.*s, which differs in a fused kernel", (int)n, s);
		return;
	}
	if ((b == 6 && memcmp(s, "%ctaid", 6) == 0) || (b == 7 && memcmp(s, "%nctaid", 7) == 0)) {
		if (!entry) {
			reject(a, "reads %.*s in .func %s (cannot virtualise it there)", (int)n, s, fname);
			return;
		}
		if (n != b + 2 || !strchr("xyz", s[b + 1])) {
			reject(a, "reads %.*s as a vector (cannot virtualise)", (int)n, s);
			return;
		}
		return;
	}
	if (is_special(s, n))
		return;
	reject(a, "undeclared register %.*s in %s", (int)n, s, fname);
}

static bool opcode_is(const char *op, size_t n, const char *root)
{
	size_t l = strlen(root);

	return n >= l && memcmp(op, root, l) == 0 && (n == l || op[l] == '.');
}

static bool opcode_has(const char *op, size_t n, const char *part)
{
	size_t l = strlen(part);

	for (size_t i = 0; i + l <= n; i++)
		if (memcmp(op + i, part, l) == 0 &&
		    (i + l == n || op[i + l] == '.' || op[i + l] == ':'))
			return true;
	return false;
}

/* Operand boundaries of an instruction: returns the count, ops[i] = first token. */
static uint32_t split_ops(const struct ptx_module *m, uint32_t first, uint32_t end, uint32_t *ops, uint32_t max)
{
	uint32_t n = 0;
	int depth = 0;

	if (first >= end)
		return 0;
	ops[n++] = first;
	for (uint32_t t = first; t < end; t++) {
		if (tok_punct(m, t, '[') || tok_punct(m, t, '{') || tok_punct(m, t, '('))
			depth++;
		else if (tok_punct(m, t, ']') || tok_punct(m, t, '}') || tok_punct(m, t, ')'))
			depth--;
		else if (depth == 0 && tok_punct(m, t, ',') && n < max && t + 1 < end)
			ops[n++] = t + 1;
	}
	return n;
}

static const char *const extern_ok[] = { "vprintf", "__assertfail", "malloc", "free", NULL };

static bool is_load(const char *op, size_t n)
{
	return opcode_is(op, n, "ld") || opcode_is(op, n, "ldu") || opcode_is(op, n, "prefetch") ||
	       opcode_is(op, n, "prefetchu");
}

/*
 * Does the call block around statement i (the `{ .param ...; st.param ...;
 * call ...; }` nvcc emits) call an external function that only reads its
 * pointer arguments (vprintf's format, __assertfail's strings)?
 */
static bool block_calls_reader(const struct ptx_module *m, const struct func *f, uint32_t i)
{
	static const char *const readers[] = { "vprintf", "__assertfail", NULL };
	int depth = 0;

	for (uint32_t j = i + 1; j < f->body_n; j++) {
		const struct stmt *s = &m->stmts[f->body_first + j];
		uint32_t op = s->first, end = stmt_end(s);
		int64_t v;

		if (s->kind == ST_OPEN)
			depth++;
		else if (s->kind == ST_CLOSE && --depth < 0)
			return false;
		if (s->kind != ST_INSN || depth != 0)
			continue;
		if (tok_punct(m, op, '@'))
			op += tok_punct(m, op + 1, '!') ? 3 : 2;
		if (op >= end || !opcode_is(tok_s(m, op), m->toks[op].len, "call"))
			continue;
		for (uint32_t t = op + 1, d = 0; t < end; t++) {
			if (tok_punct(m, t, '('))
				d++;
			else if (tok_punct(m, t, ')'))
				d--;
			else if (d == 0 && m->toks[t].kind == T_IDENT) {
				if (!strmap_get(m->syms, tok_s(m, t), m->toks[t].len, &v) || SYM_KIND(v) != SYM_FUNC ||
				    m->funcs[SYM_IDX(v)].has_body)
					return false;
				for (size_t r = 0; readers[r]; r++)
					if (tok_is(m, t, readers[r]))
						return true;
				return false;
			}
		}
		return false;
	}
	return false;
}

/* One pass of the taint over a function; returns true when it changed. */
static bool taint_pass(struct an *a, uint32_t fi)
{
	const struct ptx_module *m = a->m;
	const struct func *f = &m->funcs[fi];
	bool changed = false;

	for (uint32_t i = 0; i < f->body_n && !a->bad; i++) {
		const struct stmt *s = &m->stmts[f->body_first + i];
		uint32_t op, end = stmt_end(s), ops[64], nops, t;
		bool hit = false, in_src_addr = true;

		if (s->kind != ST_INSN)
			continue;
		op = s->first;
		if (tok_punct(m, op, '@'))
			op += tok_punct(m, op + 1, '!') ? 3 : 2;
		if (op >= end)
			continue;
		nops = split_ops(m, op + 1, end, ops, 64);
		for (t = op + 1; t < end; t++) {
			const struct tok *k = &m->toks[t];
			bool tainted = false;
			int64_t v;

			if (k->kind == T_REG)
				tainted = strmap_get(a->taint, tok_s(m, t), k->len, NULL);
			else if (k->kind == T_IDENT && strmap_get(m->syms, tok_s(m, t), k->len, &v) &&
				 SYM_KIND(v) == SYM_VAR && m->vars[SYM_IDX(v)].space == SP_GLOBAL && m->vars[SYM_IDX(v)].init)
				tainted = true, a->taint_var = SYM_IDX(v);
			if (!tainted)
				continue;
			hit = true;
			/* where is it? loads may use it inside their source address */
			{
				uint32_t oi = 0;
				bool in_br = false;

				while (oi + 1 < nops && ops[oi + 1] <= t)
					oi++;
				for (uint32_t u = ops[oi]; u < t; u++)
					if (tok_punct(m, u, '['))
						in_br = true;
				if (!(is_load(tok_s(m, op), m->toks[op].len) && oi >= 1 && in_br) &&
				    !(opcode_is(tok_s(m, op), m->toks[op].len, "cp") && oi == 1 && in_br) &&
				    !(opcode_is(tok_s(m, op), m->toks[op].len, "st.param") && oi == 1 && !in_br &&
				      block_calls_reader(m, f, i)))
					in_src_addr = false;
			}
		}
		if (!hit || in_src_addr)
			continue;
		{
			const char *o = tok_s(m, op);
			size_t on = m->toks[op].len;
			const struct var *tv = &m->vars[a->taint_var];

			if (opcode_is(o, on, "setp") || opcode_is(o, on, "set") || opcode_is(o, on, "slct")) {
				reject(a, "compares the address of module-scope .global %.*s (in %.*s)",
				       (int)m->toks[tv->name].len, tok_s(m, tv->name), (int)m->toks[f->name].len,
				       tok_s(m, f->name));
				return false;
			}
			if (opcode_is(o, on, "st") || opcode_is(o, on, "atom") || opcode_is(o, on, "red") ||
			    opcode_is(o, on, "cp") || opcode_is(o, on, "call") || opcode_is(o, on, "ld") ||
			    opcode_is(o, on, "ldu") || opcode_is(o, on, "cp") || opcode_is(o, on, "mbarrier") ||
			    opcode_is(o, on, "tensormap") || opcode_is(o, on, "multimem") || opcode_is(o, on, "stmatrix") ||
			    opcode_is(o, on, "wgmma") || opcode_is(o, on, "bra") || opcode_is(o, on, "brx")) {
				reject(a, "module-scope .global %.*s may be written, or its address escapes (%.*s in %.*s)",
				       (int)m->toks[tv->name].len, tok_s(m, tv->name), (int)on, o,
				       (int)m->toks[f->name].len, tok_s(m, f->name));
				return false;
			}
			/* arithmetic: the destination registers now hold addresses derived from the data */
			if (nops == 0)
				continue;
			for (t = ops[0]; t < end && !(tok_punct(m, t, ',')); t++) {
				if (m->toks[t].kind == T_REG && !strmap_get(a->taint, tok_s(m, t), m->toks[t].len, NULL)) {
					if (strmap_put(a->taint, tok_s(m, t), m->toks[t].len, 1) < 0) {
						reject(a, "out of memory");
						return false;
					}
					changed = true;
				}
				if (tok_punct(m, t, '{')) /* vector destination: take all of it */
					for (; t < end && !tok_punct(m, t, '}'); t++)
						if (m->toks[t].kind == T_REG &&
						    !strmap_get(a->taint, tok_s(m, t), m->toks[t].len, NULL)) {
							if (strmap_put(a->taint, tok_s(m, t), m->toks[t].len, 1) < 0) {
								reject(a, "out of memory");
								return false;
							}
							changed = true;
						}
			}
		}
	}
	return changed;
}

static bool init_has_sym(const struct ptx_module *m, const struct var *v)
{
	bool after = false;

	for (uint32_t t = v->first; t < v->first + v->n; t++) {
		if (tok_punct(m, t, '='))
			after = true;
		else if (after && m->toks[t].kind == T_IDENT)
			return true;
	}
	return false;
}

/* A parameter (or return value) of f's own header? */
static bool is_param_name(const struct ptx_module *m, const struct func *f, const char *n, size_t len)
{
	for (uint32_t i = 0; i < f->nparams; i++)
		if (m->toks[f->params[i].name].len == len && memcmp(tok_s(m, f->params[i].name), n, len) == 0)
			return true;
	for (uint32_t t = f->ret_first; t < f->ret_first + f->ret_n; t++)
		if (m->toks[t].kind == T_IDENT && m->toks[t].len == len && memcmp(tok_s(m, t), n, len) == 0)
			return true;
	return false;
}

/*
 * The names of the fence (daemon/jit/fence.c) are not the generator's: a
 * fenced kernel's window parameters and guard registers, which a fused
 * kernel keeps per member (the window comes from the member's descriptor
 * like any parameter), so fenced kernels fuse.
 */
static bool fence_name(const char *s, size_t n)
{
	static const char *const names[] = { "ooo_fence_base", "ooo_fence_mask", "%ooo_fa",  "%ooo_fb", "%ooo_fk",
					     "%ooo_fm",	       "%ooo_fbh",	 "%ooo_fo",  "%ooo_fl", "%ooo_fh",
					     "%ooo_fn",	       "%ooo_fv",	 "%ooo_fx",  "%ooo_fp", "%ooo_fp0",
					     "%ooo_fp1",       "%ooo_fp2",	 NULL };

	for (int i = 0; names[i]; i++)
		if (strlen(names[i]) == n && !memcmp(s, names[i], n))
			return true;
	/* the window passed to a fenced .func: call arguments ooo_fpbN, ooo_fpkN */
	if (n > 7 && (!memcmp(s, "ooo_fpb", 7) || !memcmp(s, "ooo_fpk", 7))) {
		for (size_t i = 7; i < n; i++)
			if (s[i] < '0' || s[i] > '9')
				return false;
		return true;
	}
	return false;
}

static bool reserved_name(const char *s, size_t n)
{
	return (prefix_is(s, n, "ooo_") || prefix_is(s, n, "$ooo_") || prefix_is(s, n, "%ooo_")) && !fence_name(s, n);
}

/*
 * Names a fused kernel could resolve differently from the original. The
 * scopes of names declared without '%' are not tracked, so a declaration
 * must not hide (or be hidden by) a parameter, a module symbol, a label or
 * a name declared at the function's top level, and nothing may use the
 * prefixes of the names the generator adds.
 */
static void check_names(struct an *a, uint32_t fi, const struct fscope *sc, const char *fname)
{
	const struct ptx_module *m = a->m;
	const struct func *f = &m->funcs[fi];
	struct strmap *top = strmap_new();
	int depth = 0;

	if (!top) {
		reject(a, "out of memory");
		return;
	}
	for (uint32_t t = f->hdr_first; t < f->hdr_first + f->hdr_n && !a->bad; t++)
		if ((m->toks[t].kind == T_IDENT || m->toks[t].kind == T_REG) && reserved_name(tok_s(m, t), m->toks[t].len))
			reject(a, "uses the reserved name %.*s", (int)m->toks[t].len, tok_s(m, t));
	for (int pass = 0; pass < 2 && !a->bad; pass++) {
		depth = 0;
		for (uint32_t i = 0; i < f->body_n && !a->bad; i++) {
			const struct stmt *st = &m->stmts[f->body_first + i];
			uint32_t end = stmt_end(st);
			bool decl;

			if (st->kind == ST_OPEN) {
				depth++;
				continue;
			}
			if (st->kind == ST_CLOSE) {
				depth--;
				continue;
			}
			if (pass == 0) {
				for (uint32_t t = st->first; t < end && !a->bad; t++)
					if ((m->toks[t].kind == T_IDENT || m->toks[t].kind == T_REG) &&
					    reserved_name(tok_s(m, t), m->toks[t].len))
						reject(a, "uses the reserved name %.*s", (int)m->toks[t].len, tok_s(m, t));
			}
			if (st->kind == ST_LABEL) {
				const char *ln = tok_s(m, st->first);
				size_t ll = m->toks[st->first].len;

				if (pass == 1 && (strmap_get(m->syms, ln, ll, NULL) || strmap_get(sc->names, ln, ll, NULL)))
					reject(a, "label %.*s in %s has the name of a variable or parameter", (int)ll, ln,
					       fname);
				continue;
			}
			decl = st->kind == ST_DIR && (tok_is(m, st->first, ".reg") || tok_is(m, st->first, ".param") ||
						      tok_is(m, st->first, ".local") || tok_is(m, st->first, ".shared"));
			if (!decl)
				continue;
			if (tok_is(m, st->first, ".shared") && f->entry && (depth > 0 || st->var < 0 ||
									    m->vars[st->var].unsized)) {
				reject(a, "declares .shared inside a nested block or unsized in %s", fname);
				continue;
			}
			for (uint32_t t = st->first + 1; t < end && !a->bad; t++) {
				const struct tok *k = &m->toks[t];
				const char *n = tok_s(m, t);

				if (tok_punct(m, t, '=') || tok_punct(m, t, '['))
					break;
				if (k->kind != T_IDENT)
					continue;
				if (pass == 0) {
					if (depth == 0 && strmap_put(top, n, k->len, 1) < 0)
						reject(a, "out of memory");
				} else if (strmap_get(m->syms, n, k->len, NULL) || strmap_get(sc->labels, n, k->len, NULL) ||
					   is_param_name(m, f, n, k->len) || (depth > 0 && strmap_get(top, n, k->len, NULL))) {
					reject(a, "declaration of %.*s in %s hides another name", (int)k->len, n, fname);
				}
				if (!tok_is(m, st->first, ".reg"))
					break;
			}
		}
	}
	strmap_free(top);
}

/* Bytes an `ld.param...` opcode reads: the type size times the vector width, 0 if unreadable. */
static uint32_t ld_width(const char *o, size_t on)
{
	uint32_t vec = 1, sz = 0;
	size_t i = 0;

	while (i < on) {
		size_t j = i + 1;

		if (o[i] != '.') {
			i++;
			continue;
		}
		while (j < on && o[j] != '.' && o[j] != ':')
			j++;
		if (j - i == 3 && o[i + 1] == 'v' && (o[i + 2] == '2' || o[i + 2] == '4' || o[i + 2] == '8'))
			vec = (uint32_t)(o[i + 2] - '0');
		else if (type_size(o + i, j - i) > 0)
			sz = (uint32_t)type_size(o + i, j - i);
		i = j;
	}
	return sz * vec;
}

/* Check one function (the entry or a reached .func) and collect what it reaches. */
static int analyse_func(struct an *a, uint32_t fi, uint32_t **queue, uint32_t *nq)
{
	struct ptx_module *m = a->m;
	const struct func *f = &m->funcs[fi];
	char fname[128];
	struct fscope sc;
	int rc;

	snprintf(fname, sizeof(fname), "%.*s", (int)m->toks[f->name].len, tok_s(m, f->name));
	if ((rc = fscope_build(m, fi, &sc)) < 0) {
		if (rc == -EINVAL)
			reject(a, "cannot read the register declarations of %s", fname);
		return rc == -EINVAL ? 0 : rc;
	}
	check_names(a, fi, &sc, fname);
	for (uint32_t i = 0; i < f->body_n && !a->bad; i++) {
		const struct stmt *s = &m->stmts[f->body_first + i];
		uint32_t end = stmt_end(s), op, call_target;
		const char *o;
		size_t on;

		if (s->kind == ST_OPEN || s->kind == ST_CLOSE || s->kind == ST_LABEL)
			continue;
		if (s->kind == ST_DIR) {
			if (tok_is(m, s->first, ".reg") || tok_is(m, s->first, ".param") || tok_is(m, s->first, ".local") ||
			    tok_is(m, s->first, ".pragma") || tok_is(m, s->first, ".branchtargets"))
				continue;
			if (tok_is(m, s->first, ".shared")) {
				if (f->entry)
					continue;
				reject(a, ".shared declared inside .func %s", fname);
				continue;
			}
			if (tok_is(m, s->first, ".callprototype") || tok_is(m, s->first, ".calltargets")) {
				reject(a, "indirect call in %s", fname);
				continue;
			}
			reject(a, "unsupported directive %.*s in %s", (int)m->toks[s->first].len, tok_s(m, s->first),
			       fname);
			continue;
		}
		/* instruction */
		op = s->first;
		if (tok_punct(m, op, '@')) {
			op++;
			if (tok_punct(m, op, '!'))
				op++;
			if (op < end && m->toks[op].kind == T_IDENT &&
			    strmap_get(sc.names, tok_s(m, op), m->toks[op].len, NULL)) {
				/* a predicate declared without '%' (inline asm: `.reg .pred p; @p ...`) */
			} else if (op >= end || m->toks[op].kind != T_REG) {
				reject(a, "unreadable predicate in %s", fname);
				continue;
			} else {
				check_reg(a, &sc, op, f->entry, fname);
			}
			op++;
		}
		if (op >= end || m->toks[op].kind != T_IDENT) {
			reject(a, "unreadable instruction in %s (line %u)", fname, m->toks[s->first].line);
			continue;
		}
		o = tok_s(m, op);
		on = m->toks[op].len;
		if (opcode_is(o, on, "barrier") && opcode_has(o, on, "cluster")) {
			reject(a, "uses thread-block clusters (%.*s)", (int)on, o);
			continue;
		}
		if (opcode_has(o, on, "shared::cluster") || opcode_is(o, on, "mapa") || opcode_is(o, on, "getctarank") ||
		    opcode_has(o, on, "multicast::cluster")) {
			reject(a, "uses thread-block clusters (%.*s)", (int)on, o);
			continue;
		}
		if (f->entry && opcode_has(o, on, "param")) {
			/* param space in a kernel: only by name (its parameters, or a call block's .param) */
			bool named = !opcode_is(o, on, "cvta") && !opcode_is(o, on, "mov");

			for (uint32_t t = op + 1; t < end && named; t++)
				if (tok_punct(m, t, '[') && !(t + 1 < end && m->toks[t + 1].kind == T_IDENT &&
							      strmap_get(sc.names, tok_s(m, t + 1), m->toks[t + 1].len, NULL)))
					named = false;
			if (!named) {
				reject(a, "address of kernel parameter space taken (%.*s through a register)", (int)on, o);
				continue;
			}
		}
		if (opcode_is(o, on, "griddepcontrol")) {
			reject(a, "uses programmatic dependent launch (%.*s)", (int)on, o);
			continue;
		}
		if (opcode_is(o, on, "setmaxnreg")) {
			reject(a, "uses setmaxnreg, which needs the kernel's own register budget");
			continue;
		}
		call_target = UINT32_MAX;
		if (opcode_is(o, on, "call")) {
			/* call[.uni] [(ret),] target, (args) [, proto] */
			uint32_t t = op + 1, target = UINT32_MAX;
			int depth = 0;
			int64_t v;

			for (; t < end; t++) {
				if (tok_punct(m, t, '('))
					depth++;
				else if (tok_punct(m, t, ')'))
					depth--;
				else if (depth == 0 && m->toks[t].kind != T_PUNCT) {
					target = t;
					break;
				}
			}
			if (target == UINT32_MAX || m->toks[target].kind != T_IDENT) {
				reject(a, "indirect call in %s", fname);
				continue;
			}
			call_target = target;
			if (!strmap_get(m->syms, tok_s(m, target), m->toks[target].len, &v) || SYM_KIND(v) != SYM_FUNC) {
				reject(a, "calls unknown function %.*s", (int)m->toks[target].len, tok_s(m, target));
				continue;
			}
			{
				uint32_t ci = SYM_IDX(v);
				const struct func *cf = &m->funcs[ci];
				bool known = false;

				if (cf->entry) {
					reject(a, "calls kernel %.*s (dynamic parallelism)", (int)m->toks[cf->name].len,
					       tok_s(m, cf->name));
					continue;
				}
				if (!cf->has_body) {
					for (size_t e = 0; extern_ok[e]; e++)
						known |= tok_is(m, cf->name, extern_ok[e]);
					if (!known) {
						if (tok_prefix(m, cf->name, "cudaLaunchDevice") ||
						    tok_prefix(m, cf->name, "cudaGetParameterBuffer"))
							reject(a, "dynamic parallelism (calls %.*s)", (int)m->toks[cf->name].len,
							       tok_s(m, cf->name));
						else if (tok_prefix(m, cf->name, "cudaCG"))
							reject(a, "grid-wide sync (calls %.*s)", (int)m->toks[cf->name].len,
							       tok_s(m, cf->name));
						else
							reject(a, "calls external function %.*s", (int)m->toks[cf->name].len,
							       tok_s(m, cf->name));
						continue;
					}
					if ((rc = u32_add(&a->ki->efuncs, &a->ki->nefuncs, ci)) < 0)
						goto out;
				} else {
					uint32_t before = a->ki->nfuncs;

					if ((rc = u32_add(&a->ki->funcs, &a->ki->nfuncs, ci)) < 0)
						goto out;
					if (a->ki->nfuncs != before && (rc = u32_add(queue, nq, ci)) < 0)
						goto out;
				}
			}
		}
		/* operands */
		for (uint32_t t = op + 1; t < end && !a->bad; t++) {
			const struct tok *k = &m->toks[t];
			int64_t v;

			if (k->kind == T_REG) {
				check_reg(a, &sc, t, f->entry, fname);
				continue;
			}
			if (k->kind != T_IDENT)
				continue;
			if (strmap_get(sc.labels, tok_s(m, t), k->len, NULL))
				continue;
			if (strmap_get(sc.names, tok_s(m, t), k->len, &v)) {
				if (v == -2 && f->entry) {
					/* a kernel parameter: only `ld.param d, [P]` or `[P+imm]` */
					bool ok = opcode_is(o, on, "ld") && opcode_has(o, on, "param") && t > op + 1 &&
						  tok_punct(m, t - 1, '[') &&
						  (tok_punct(m, t + 1, ']') ||
						   (tok_punct(m, t + 1, '+') && t + 3 < end &&
						    m->toks[t + 2].kind == T_NUM && tok_punct(m, t + 3, ']')));
					if (!ok) {
						reject(a, "address of kernel parameter %.*s taken (%.*s)", (int)k->len,
						       tok_s(m, t), (int)on, o);
						continue;
					}
					/* the read must stay inside the parameter */
					{
						int64_t imm = 0;
						uint32_t w = ld_width(o, on), psz = 0;

						for (uint32_t pi = 0; pi < f->nparams; pi++)
							if (m->toks[f->params[pi].name].len == k->len &&
							    memcmp(tok_s(m, f->params[pi].name), tok_s(m, t), k->len) == 0)
								psz = f->params[pi].size;
						if (tok_punct(m, t + 1, '+') &&
						    !parse_num(tok_s(m, t + 2), m->toks[t + 2].len, &imm))
							imm = -1;
						if (!w || imm < 0 || imm > 65536 || (uint64_t)imm + w > psz) {
							reject(a, "%.*s reads outside kernel parameter %.*s", (int)on, o,
							       (int)k->len, tok_s(m, t));
							continue;
						}
					}
				}
				if (v >= 0) { /* a demoted .shared/.local of this function */
					const struct var *dv = &m->vars[v];

					if (dv->space == SP_SHARED && !dv->unsized &&
					    (rc = u32_add(&a->ki->smem, &a->ki->nsmem, (uint32_t)v)) < 0)
						goto out;
				}
				continue;
			}
			if (strmap_get(m->syms, tok_s(m, t), k->len, &v)) {
				if (SYM_KIND(v) == SYM_FUNC) {
					if (t != call_target)
						reject(a, "address of function %.*s taken", (int)k->len, tok_s(m, t));
					continue;
				}
				{
					uint32_t vi = SYM_IDX(v);
					const struct var *mv = &m->vars[vi];
					const char *vn = tok_s(m, mv->name);
					int vl = (int)m->toks[mv->name].len;

					if (mv->opaque || mv->space == SP_TEX) {
						reject(a, "uses texture/surface reference %.*s", vl, vn);
					} else if (mv->space == SP_SHARED) {
						if (mv->unsized || (mv->ext && !mv->size)) {
							a->k->dynamic_smem = true;
							if (mv->align > a->ki->dsmem_align)
								a->ki->dsmem_align = mv->align;
						} else if (mv->ext) {
							reject(a, "uses external .shared %.*s", vl, vn);
						} else if ((rc = u32_add(&a->ki->smem, &a->ki->nsmem, vi)) < 0) {
							goto out;
						}
					} else if (mv->ext) {
						reject(a, "uses external variable %.*s", vl, vn);
					} else if (mv->space == SP_CONST) {
						if (!mv->init)
							reject(a, "reads host-written .const %.*s (no initializer)", vl, vn);
						else if (init_has_sym(m, mv))
							reject(a, "initializer of %.*s refers to other symbols", vl, vn);
						else if ((rc = u32_add(&a->ki->data, &a->ki->ndata, vi)) < 0)
							goto out;
					} else if (mv->space == SP_GLOBAL) {
						if (!mv->init)
							reject(a, "module-scope mutable state: .global %.*s", vl, vn);
						else if (init_has_sym(m, mv))
							reject(a, "initializer of %.*s refers to other symbols", vl, vn);
						else {
							a->any_data_global = true;
							if ((rc = u32_add(&a->ki->data, &a->ki->ndata, vi)) < 0)
								goto out;
						}
					} else {
						reject(a, "uses module-scope variable %.*s of an unsupported state space", vl,
						       vn);
					}
				}
				continue;
			}
			if (tok_is(m, t, "WARP_SZ") || tok_is(m, t, "_"))
				continue;
			reject(a, "unknown symbol %.*s in %s", (int)k->len, tok_s(m, t), fname);
		}
	}
	rc = 0;
out:
	fscope_free(&sc);
	return rc;
}

static int perf_dims(const struct ptx_module *m, uint32_t t, uint32_t end, uint32_t d[3])
{
	uint32_t i = 0;

	d[0] = d[1] = d[2] = 1;
	for (t++; t < end && i < 3; t++) {
		int64_t v;

		if (tok_punct(m, t, ','))
			continue;
		if (m->toks[t].kind != T_NUM || !parse_num(tok_s(m, t), m->toks[t].len, &v) || v <= 0 || v > 65535)
			return -1;
		d[i++] = (uint32_t)v;
		if (!tok_punct(m, t + 1, ','))
			break;
	}
	return i ? (int)t : -1;
}

/* Length-prefixed tokens after a tag, so that different texts never hash alike. */
static void hash_toks(struct sha256_ctx *h, char tag, const struct ptx_module *m, uint32_t first, uint32_t n)
{
	uint8_t hdr[5] = { (uint8_t)tag, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24) };

	sha256_update(h, sizeof(hdr), hdr);
	for (uint32_t t = first; t < first + n; t++) {
		uint32_t len = m->toks[t].len;
		uint8_t l[4] = { (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16), (uint8_t)(len >> 24) };

		sha256_update(h, sizeof(l), l);
		sha256_update(h, len, (const uint8_t *)tok_s(m, t));
	}
}

static void hash_func(struct sha256_ctx *h, const struct ptx_module *m, uint32_t fi)
{
	const struct func *f = &m->funcs[fi];

	hash_toks(h, 'F', m, f->hdr_first, f->hdr_n);
	hash_toks(h, 'P', m, f->perf_first, f->perf_n);
	for (uint32_t i = 0; i < f->body_n; i++) {
		const struct stmt *s = &m->stmts[f->body_first + i];

		hash_toks(h, (char)('0' + s->kind), m, s->first, s->n);
	}
	hash_toks(h, 'E', m, 0, 0);
}

static int analyse_kernel(struct ptx_module *m, uint32_t ki_idx, uint32_t fi)
{
	struct ptx_kernel *k = &m->kernels[ki_idx];
	struct kinfo *ki = &m->kinfo[ki_idx];
	const struct func *f = &m->funcs[fi];
	struct an a = { .m = m, .k = k, .ki = ki };
	uint32_t *queue = NULL, nq = 0, qi = 0;
	int rc = 0;

	ki->func = fi;
	k->fusible = true;
	ki->smem_align = 1;
	ki->dsmem_align = 1;
	/* performance directives */
	for (uint32_t t = f->perf_first; t < f->perf_first + f->perf_n && !a.bad;) {
		uint32_t end = f->perf_first + f->perf_n;
		int nt;

		if (tok_is(m, t, ".maxntid") || tok_is(m, t, ".reqntid")) {
			uint32_t *d = tok_is(m, t, ".maxntid") ? k->maxntid : k->reqntid;

			if ((nt = perf_dims(m, t, end, d)) < 0) {
				reject(&a, "unreadable %.*s", (int)m->toks[t].len, tok_s(m, t));
				break;
			}
			t = (uint32_t)nt + 1;
		} else if (tok_is(m, t, ".minnctapersm") || tok_is(m, t, ".maxnreg") || tok_is(m, t, ".maxnctapersm")) {
			int64_t v;

			if (t + 1 >= end || !parse_num(tok_s(m, t + 1), m->toks[t + 1].len, &v) || v < 0 || v > 65535) {
				reject(&a, "unreadable %.*s", (int)m->toks[t].len, tok_s(m, t));
				break;
			}
			if (tok_is(m, t, ".minnctapersm"))
				k->minnctapersm = (uint32_t)v;
			else if (tok_is(m, t, ".maxnreg"))
				k->maxnreg = (uint32_t)v;
			t += 2;
		} else if (tok_is(m, t, ".reqnctapercluster") || tok_is(m, t, ".explicitcluster") ||
			   tok_is(m, t, ".maxclusterrank") || tok_is(m, t, ".blocksareclusters")) {
			reject(&a, "uses thread-block clusters (%.*s)", (int)m->toks[t].len, tok_s(m, t));
		} else if (tok_is(m, t, ".pragma")) {
			t += 2;
			if (tok_punct(m, t, ';'))
				t++;
		} else {
			reject(&a, "unsupported kernel directive %.*s", (int)m->toks[t].len, tok_s(m, t));
		}
	}
	if (!f->has_body)
		reject(&a, "declared without a body");
	if (!(a.taint = strmap_new()))
		return -ENOMEM;
	if (!a.bad)
		rc = analyse_func(&a, fi, &queue, &nq);
	while (!rc && !a.bad && qi < nq)
		rc = analyse_func(&a, queue[qi++], &queue, &nq);
	if (rc == -E2BIG) {
		reject(&a, "reaches more than %u functions, data or shared objects", JIT_MAX_REACHED);
		rc = 0;
	}
	/* initialized .global data must only be read */
	if (!rc && !a.bad && a.any_data_global) {
		bool changed = true;
		int rounds = 0;

		while (changed && !a.bad && rounds++ < 64) {
			changed = taint_pass(&a, fi);
			for (uint32_t i = 0; i < ki->nfuncs && !a.bad; i++)
				changed |= taint_pass(&a, ki->funcs[i]);
		}
		if (changed && !a.bad)
			reject(&a, "too many registers derived from module-scope .global data to check");
	}
	free(queue);
	strmap_free(a.taint);
	if (rc)
		return rc;
	/* static shared layout */
	{
		uint64_t off = 0;

		free(ki->smem_off);
		ki->smem_off = calloc(ki->nsmem ? ki->nsmem : 1, sizeof(*ki->smem_off));
		if (!ki->smem_off)
			return -ENOMEM;
		for (uint32_t i = 0; i < ki->nsmem; i++) {
			const struct var *v = &m->vars[ki->smem[i]];

			off = (off + v->align - 1) & ~(uint64_t)(v->align - 1);
			ki->smem_off[i] = (uint32_t)off;
			off += v->size;
			if (v->align > ki->smem_align)
				ki->smem_align = v->align;
			if (off > (1u << 20)) {
				reject(&a, "static shared memory over 1 MiB");
				break;
			}
		}
		k->static_smem = (uint32_t)off;
	}
	if (k->reqntid[0] && k->maxntid[0])
		reject(&a, "declares both .reqntid and .maxntid");
	if (a.bad)
		k->fusible = false;
	/* hash: the kernel and everything it reaches, with the target */
	{
		struct sha256_ctx h;

		sha256_init(&h);
		sha256_update(&h, strlen(m->target) + 1, (const uint8_t *)m->target);
		sha256_update(&h, strlen(m->version) + 1, (const uint8_t *)m->version);
		hash_func(&h, m, fi);
		for (uint32_t i = 0; i < ki->nfuncs; i++)
			hash_func(&h, m, ki->funcs[i]);
		for (uint32_t i = 0; i < ki->nefuncs; i++)
			hash_func(&h, m, ki->efuncs[i]);
		for (uint32_t i = 0; i < ki->ndata; i++)
			hash_toks(&h, 'D', m, m->vars[ki->data[i]].first, m->vars[ki->data[i]].n);
		for (uint32_t i = 0; i < ki->nsmem; i++)
			hash_toks(&h, 'S', m, m->vars[ki->smem[i]].first, m->vars[ki->smem[i]].n);
		sha256_digest(&h, sizeof(k->hash), k->hash);
	}
	return 0;
}

static int build_kernels(struct ptx_module *m, struct perr *e)
{
	uint32_t n = 0;

	if (!(m->syms = strmap_new()))
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nvar; i++) {
		const struct var *v = &m->vars[i];

		if (v->func >= 0)
			continue;
		if (strmap_get(m->syms, tok_s(m, v->name), m->toks[v->name].len, NULL))
			return fail(e, m->toks[v->name].line, "'%.*s' declared twice", (int)m->toks[v->name].len,
				    tok_s(m, v->name));
		if (strmap_put(m->syms, tok_s(m, v->name), m->toks[v->name].len, (int64_t)((SYM_VAR << 28) | i)))
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->nfunc; i++) {
		const struct func *f = &m->funcs[i];
		int64_t old;

		if (strmap_get(m->syms, tok_s(m, f->name), m->toks[f->name].len, &old)) {
			/* a prototype followed by the definition */
			if (SYM_KIND(old) != SYM_FUNC || (m->funcs[SYM_IDX(old)].has_body && f->has_body))
				return fail(e, m->toks[f->name].line, "'%.*s' defined twice", (int)m->toks[f->name].len,
					    tok_s(m, f->name));
			if (!f->has_body)
				continue;
		}
		if (strmap_put(m->syms, tok_s(m, f->name), m->toks[f->name].len, (int64_t)((SYM_FUNC << 28) | i)))
			return -ENOMEM;
		if (f->entry && f->has_body)
			n++;
	}
	m->kernels = calloc(n ? n : 1, sizeof(*m->kernels));
	m->kinfo = calloc(n ? n : 1, sizeof(*m->kinfo));
	if (!m->kernels || !m->kinfo)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nfunc; i++) {
		const struct func *f = &m->funcs[i];
		struct ptx_kernel *k;
		struct ptx_param *pp;
		char *name;
		int rc;

		if (!f->entry || !f->has_body)
			continue;
		k = &m->kernels[m->nkern];
		name = strndup(tok_s(m, f->name), m->toks[f->name].len);
		pp = calloc(f->nparams ? f->nparams : 1, sizeof(*pp));
		k->name = name;
		k->params = pp;
		m->nkern++;
		if (!name || !pp)
			return -ENOMEM;
		k->nparams = f->nparams;
		for (uint32_t j = 0; j < f->nparams; j++) {
			const struct fparam *fp = &f->params[j];

			pp[j].name = strndup(tok_s(m, fp->name), m->toks[fp->name].len);
			if (!pp[j].name)
				return -ENOMEM;
			pp[j].offset = fp->offset;
			pp[j].size = fp->size;
			pp[j].align = fp->align;
			pp[j].is_ptr = fp->ptr;
			k->param_bytes = fp->offset + fp->size;
		}
		if ((rc = analyse_kernel(m, m->nkern - 1, i)) < 0)
			return rc;
	}
	return 0;
}

/* ---- public ------------------------------------------------------------ */

void ptx_module_free(struct ptx_module *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->nkern; i++) {
		for (uint32_t j = 0; j < m->kernels[i].nparams; j++)
			free((char *)m->kernels[i].params[j].name);
		free((char *)m->kernels[i].params);
		free((char *)m->kernels[i].name);
		free(m->kinfo[i].funcs);
		free(m->kinfo[i].efuncs);
		free(m->kinfo[i].data);
		free(m->kinfo[i].smem);
		free(m->kinfo[i].smem_off);
	}
	free(m->kernels);
	free(m->kinfo);
	for (uint32_t i = 0; i < m->nfunc; i++)
		free(m->funcs[i].params);
	free(m->funcs);
	free(m->vars);
	free(m->items);
	free(m->stmts);
	free(m->toks);
	strmap_free(m->syms);
	free(m->src);
	free(m);
}

int ptx_parse(const char *text, size_t len, struct ptx_module **out, char *err, size_t errlen)
{
	struct perr e = { .msg = err, .len = errlen };
	struct ptx_module *m;
	struct parser p;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (len > JIT_MAX_PTX_BYTES) {
		if (err && errlen)
			snprintf(err, errlen, "PTX larger than %u bytes", JIT_MAX_PTX_BYTES);
		return -E2BIG;
	}
	if (!(m = calloc(1, sizeof(*m))) || !(m->src = malloc(len + 1))) {
		free(m);
		return -ENOMEM;
	}
	memcpy(m->src, text, len);
	m->src[len] = '\0';
	m->len = len;
	memset(&p, 0, sizeof(p));
	p.m = m;
	p.e = &e;
	rc = lex(m, &e);
	if (!rc)
		rc = parse_module(&p);
	if (!rc)
		rc = build_kernels(m, &e);
	if (!rc && e.rc)
		rc = e.rc;
	if (rc) {
		if (rc == -ENOMEM && err && errlen && !err[0])
			snprintf(err, errlen, "out of memory");
		ptx_module_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

const char *ptx_target(const struct ptx_module *m) { return m->target; }
const char *ptx_version(const struct ptx_module *m) { return m->version; }
size_t ptx_kernel_count(const struct ptx_module *m) { return m->nkern; }

const struct ptx_kernel *ptx_kernel_at(const struct ptx_module *m, size_t i)
{
	return i < m->nkern ? &m->kernels[i] : NULL;
}

const struct ptx_kernel *ptx_kernel_find(const struct ptx_module *m, const char *name)
{
	for (uint32_t i = 0; i < m->nkern; i++)
		if (strcmp(m->kernels[i].name, name) == 0)
			return &m->kernels[i];
	return NULL;
}
