/* SPDX-License-Identifier: MIT */
/*
 * Fusibility analysis of a parsed PTX kernel: what it reaches, whether it
 * can be fused (or the construct that stops it), its static shared layout
 * and its hash. Pure: no I/O.
 *
 * The analysis is conservative: a construct it does not recognise makes the
 * kernel unfusible with that construct named, never a wrong rewrite.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

#include "internal.h"

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
		else if (ptx_type_size(o + i, j - i) > 0)
			sz = (uint32_t)ptx_type_size(o + i, j - i);
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

int ptx_analyse_kernel(struct ptx_module *m, uint32_t ki_idx, uint32_t fi)
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
