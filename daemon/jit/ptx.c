/* SPDX-License-Identifier: MIT */
/*
 * PTX lexer and parser: text in, a struct ptx_module out, with its symbols
 * and its kernels (each analysed by ptx_analyse.c); the module's public
 * accessors.
 *
 * The parser knows PTX's statement structure (directives, declarations,
 * functions, labels, instructions with predicates and vector operands), not
 * every instruction: operands stay token lists.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
			} else if ((sz = ptx_type_size(tok_s(m, t), k->len)) > 0) {
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
		if ((rc = ptx_analyse_kernel(m, m->nkern - 1, i)) < 0)
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
