/* SPDX-License-Identifier: MIT */
/*
 * PTX printing (tokens with PTX spacing, function bodies, whole modules)
 * and per-function name scopes, for the printers that rename. Pure: no I/O.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
