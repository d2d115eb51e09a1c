/* SPDX-License-Identifier: MIT */
/*
 * Fencing (docs/jit.md, "Fencing"): a copy of one kernel whose every global
 * and generic memory access goes to its address confined to the tenant's
 * window, an aligned power-of-two range [base, base + size) of at least
 * 4 GiB: the address's high half becomes (high & ~mask_high) | base_high,
 * which leaves an address in the window as it is. Generic addresses that
 * point into shared or local space (isspacep) pass unchanged. An address
 * outside the window sets a flag, and the function traps on it before it
 * returns or exits: the access went to the tenant's own window, and the
 * launch fails. The window arrives as two parameters appended to the
 * kernel's own, ooo_fence_base and ooo_fence_mask (= ~(size - 1)).
 *
 * What cannot be guarded instruction by instruction is refused, never
 * passed through: calls (the callee would need the window too), texture
 * and surface instructions (handles), bulk and tensor copies, multimem and
 * asynchronous stores, cluster shared memory, the address of a module
 * .global variable, 32-bit addressing, names in the reserved %ooo_ prefix.
 *
 * jit_fence_check() is the proof: independent of the rewriter, it walks a
 * fenced entry statement by statement and accepts it only when every
 * memory instruction that needs a guard goes through %ooo_fm and is
 * immediately preceded by the exact guard that confines %ooo_fm to the
 * window, and the window registers are written only by the prologue.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define FENCE_SUFFIX "_ooo_fenced"

static int failf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* What an instruction's opcode asks of the fence. */
enum fkind {
	FK_NONE = 0, /* not a memory access, or one the fence leaves alone (shared, local, const, param) */
	FK_GLOBAL,   /* .global: the address must be in the window */
	FK_GENERIC,  /* no state space: in the window, or shared or local */
	FK_ASYNC,    /* cp.async ... .shared.global: the second address is global */
	FK_PARAM,    /* ld/st.param: only [symbol(+imm)], never a computed address */
	FK_REFUSE,   /* cannot be fenced */
};

static bool has_part(const char *op, size_t n, const char *part)
{
	size_t pl = strlen(part);

	for (size_t i = 0; i + pl <= n; i++) {
		if (op[i] == '.' && memcmp(op + i, part, pl) == 0 && (i + pl == n || op[i + pl] == '.' || op[i + pl] == ':'))
			return true;
	}
	return false;
}

static bool starts(const char *op, size_t n, const char *w)
{
	size_t wl = strlen(w);

	return n >= wl && memcmp(op, w, wl) == 0 && (n == wl || op[wl] == '.');
}

/* Classify opcode token text op (n bytes); why names a refusal. */
static enum fkind classify(const char *op, size_t n, const char **why)
{
	static const char *const refused[] = { "tex", "tld4", "suld", "sust", "sured", "suq", "txq", "multimem",
					       "cp.async.bulk", "cp.reduce.async", "st.async", "red.async", "tensormap",
					       "st.bulk", NULL };
	bool mem;

	*why = NULL;
	if (starts(op, n, "call")) {
		*why = "a call (the callee would need the window too)";
		return FK_REFUSE;
	}
	for (int i = 0; refused[i]; i++) {
		if (starts(op, n, refused[i])) {
			*why = "a texture, surface, bulk, tensor, multimem or asynchronous store instruction (st.bulk: a size the "
			       "fence cannot bound)";
			return FK_REFUSE;
		}
	}
	/* a generic pointer into constant or parameter space lies outside every window: its accesses would fail */
	if (starts(op, n, "cvta") && !has_part(op, n, ".to") && (has_part(op, n, ".const") || has_part(op, n, ".param"))) {
		*why = "a generic pointer to constant or parameter space (a __grid_constant__ parameter, a __constant__ "
		       "array passed by address), which lies outside the tenant's window";
		return FK_REFUSE;
	}
	if (starts(op, n, "cp.async.commit_group") || starts(op, n, "cp.async.wait_group") ||
	    starts(op, n, "cp.async.wait_all"))
		return FK_NONE; /* no address of their own */
	if (starts(op, n, "cp.async")) {
		if (has_part(op, n, ".shared") && has_part(op, n, ".global"))
			return FK_ASYNC;
		*why = "a cp.async form other than .shared.global";
		return FK_REFUSE;
	}
	mem = starts(op, n, "ld") || starts(op, n, "ldu") || starts(op, n, "st") || starts(op, n, "atom") ||
	      starts(op, n, "red") || starts(op, n, "prefetch") || starts(op, n, "prefetchu") ||
	      starts(op, n, "applypriority") || starts(op, n, "discard");
	if (!mem) {
		/* fail closed: only instructions known to touch no memory pass unguarded */
		static const char *const pure[] = {
			"add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min", "max",
			"popc", "clz", "bfind", "fns", "brev", "bfe", "bfi", "szext", "bmsk", "dp4a", "dp2a", "and", "or",
			"xor", "not", "cnot", "lop3", "shf", "shl", "shr", "prmt", "testp", "copysign", "rcp", "sqrt",
			"rsqrt", "sin", "cos", "lg2", "ex2", "tanh", "fma", "set", "setp", "selp", "slct", "mov", "cvt",
			"cvt.pack", "cvta", "isspacep", "bra", "brx", "ret", "exit", "trap", "bar", "barrier", "membar",
			"fence", "vote", "shfl", "match", "activemask", "redux", "nanosleep", "pmevent", "elect",
			"griddepcontrol", "createpolicy", "addc", "subc", "madc", "mad.hi", "mul.hi", "add.cc", "sub.cc",
			"madc.hi", "setmaxnreg", "brkpt", NULL
		};
		for (int i = 0; pure[i]; i++) {
			if (starts(op, n, pure[i]))
				return FK_NONE;
		}
		*why = "an instruction the fence does not know to be free of memory accesses";
		return FK_REFUSE;
	}
	if (memmem(op, n, "::cluster", 9)) {
		*why = "shared memory of other blocks of a cluster";
		return FK_REFUSE;
	}
	if (has_part(op, n, ".global"))
		return FK_GLOBAL;
	if (has_part(op, n, ".shared") || has_part(op, n, ".local") || has_part(op, n, ".const"))
		return FK_NONE;
	if (has_part(op, n, ".param"))
		return FK_PARAM;
	return FK_GENERIC;
}

/* The opcode token, after a guard predicate `@%p` or `@!%p` (described in pred and neg). */
static uint32_t opcode_of(const struct ptx_module *m, const struct stmt *s, uint32_t *pred, bool *neg)
{
	uint32_t op = s->first, end = stmt_end(s);

	*pred = UINT32_MAX;
	*neg = false;
	if (op < end && tok_punct(m, op, '@')) {
		*neg = op + 1 < end && tok_punct(m, op + 1, '!');
		*pred = op + 1 + *neg;
		op = *pred + 1;
	}
	return op;
}

/* The k-th (0-based) [ ... ] group of the statement: tokens inside, in *first and *n. */
static bool addr_group(const struct ptx_module *m, const struct stmt *s, uint32_t from, unsigned k, uint32_t *first,
		       uint32_t *n, unsigned *count)
{
	uint32_t end = stmt_end(s);
	unsigned seen = 0;
	bool found = false;

	for (uint32_t t = from; t < end; t++) {
		if (!tok_punct(m, t, '['))
			continue;
		uint32_t c = t + 1;

		while (c < end && !tok_punct(m, c, ']'))
			c++;
		if (c >= end)
			return false;
		if (seen == k) {
			*first = t + 1;
			*n = c - t - 1;
			found = true;
		}
		seen++;
		t = c;
	}
	*count = seen;
	return found;
}

/* The address expression of a group, as register, offset and/or absolute: REG, REG+IMM, REG+-IMM, REG-IMM, IMM. */
struct addr {
	uint32_t reg; /* token, or UINT32_MAX */
	int64_t imm;
	bool sym;     /* a symbol instead of a register */
};

static bool parse_addr(const struct ptx_module *m, uint32_t first, uint32_t n, struct addr *a)
{
	uint32_t t = first, end = first + n;
	int64_t v;

	a->reg = UINT32_MAX;
	a->imm = 0;
	a->sym = false;
	if (t >= end)
		return false;
	if (m->toks[t].kind == T_REG || m->toks[t].kind == T_IDENT) {
		a->reg = t;
		a->sym = m->toks[t].kind == T_IDENT;
		t++;
		if (t == end)
			return true;
		if (tok_punct(m, t, '+') && t + 2 == end && m->toks[t + 1].kind == T_NUM &&
		    parse_num(tok_s(m, t + 1), m->toks[t + 1].len, &v)) {
			a->imm = v;
			return true;
		}
		if (tok_punct(m, t, '+') && t + 3 == end && tok_punct(m, t + 1, '-') && m->toks[t + 2].kind == T_NUM &&
		    parse_num(tok_s(m, t + 2), m->toks[t + 2].len, &v)) {
			a->imm = -v;
			return true;
		}
		if (tok_punct(m, t, '-') && t + 2 == end && m->toks[t + 1].kind == T_NUM &&
		    parse_num(tok_s(m, t + 1), m->toks[t + 1].len, &v)) {
			a->imm = -v;
			return true;
		}
		return false;
	}
	if (m->toks[t].kind == T_NUM && t + 1 == end && parse_num(tok_s(m, t), m->toks[t].len, &v)) {
		a->imm = v;
		return true;
	}
	return false;
}

/* Does token t end with the fenced copies' suffix? */
static bool fenced_name(const struct ptx_module *m, uint32_t t)
{
	size_t sl = strlen(FENCE_SUFFIX);

	return m->toks[t].len >= sl && memcmp(tok_s(m, t) + m->toks[t].len - sl, FENCE_SUFFIX, sl) == 0;
}

static bool reserved_name(const struct ptx_module *m, uint32_t t)
{
	const char *s = tok_s(m, t);
	uint32_t n = m->toks[t].len;

	return (n >= 5 && memcmp(s, "%ooo_", 5) == 0) || (n >= 4 && memcmp(s, "ooo_", 4) == 0);
}

/*
 * The first statements of every fenced function: the window, of which
 * only the high halves are used (a window is at least 4 GiB, aligned to
 * its size: its base's low half is 0 and its mask's all ones, so every
 * address in it shares its high half with the base), base_hi and ~mask_hi
 * written here and nowhere else; the guards' scratch; and the violation
 * flag, 0 until an access outside the window runs.
 */
#define FENCE_PROLOGUE 9
static const char *const fence_prologue[FENCE_PROLOGUE] = {
	".reg .b64 %ooo_fb, %ooo_fk, %ooo_fa, %ooo_fm",
	".reg .b32 %ooo_fbh, %ooo_fo, %ooo_fl, %ooo_fh, %ooo_fn, %ooo_fv, %ooo_fx",
	".reg .pred %ooo_fp<3>",
	"ld.param.u64 %ooo_fb, [ooo_fence_base]",
	"ld.param.u64 %ooo_fk, [ooo_fence_mask]",
	"mov.b64 {%ooo_fx, %ooo_fbh}, %ooo_fb",
	"mov.b64 {%ooo_fx, %ooo_fo}, %ooo_fk",
	"not.b32 %ooo_fo, %ooo_fo",
	"mov.u32 %ooo_fv, 0",
};

/* The report of a violation, before every return or exit and where the body ends: two statements. */
#define FENCE_REPORT1 "setp.ne.u32 %ooo_fp0, %ooo_fv, 0"
#define FENCE_REPORT2 "@%ooo_fp0 trap"

/*
 * The guard for one access, as text. The address goes into %ooo_fa; the
 * access itself is rewritten to use %ooo_fm, the address confined to the
 * window: its low half kept, its high half (h & ~mask_hi) | base_hi, which
 * is h itself when the address is in the window (generic: or when it
 * points into shared or local space). An address outside leaves a bit in
 * %ooo_fv (h ^ confined h, when the access runs: under its own predicate),
 * and the function traps on %ooo_fv before it returns or exits. Nothing
 * traps between accesses: a trap there holds every earlier load in flight
 * until it completes, and a 64-bit compare per access feeding a predicate
 * cost as much (measured on the H200: the tiled SGEMM of ooo-bench gemm
 * 2x and 1.2x as long; 1.02x in this form).
 */
static void emit_guard_addr(const struct ptx_module *m, const struct addr *a, struct jit_buf *b)
{
	if (a->reg == UINT32_MAX) {
		buf_printf(b, "\tmov.u64 %%ooo_fa, %lld;\n", (long long)a->imm);
	} else {
		buf_puts(b, "\tadd.s64 %ooo_fa, ");
		buf_put(b, tok_s(m, a->reg), m->toks[a->reg].len);
		buf_printf(b, ", %lld;\n", (long long)a->imm);
	}
}

/* The guard after its first line: `kind` FK_GLOBAL or FK_GENERIC; pred/neg the access's predicate. */
static void emit_guard_rest(const struct ptx_module *m, enum fkind kind, uint32_t pred, bool neg, struct jit_buf *b)
{
	/*
	 * The confinement as one lop3 ((a & b) | c is truth table 0xea): the
	 * load waits on it, and and.b32 + or.b32 cost the tiled SGEMM 1.065x
	 * against 1.02x. The flag as xor + or: a lop3 there (0xf6) crashed
	 * ptxas 13.0 in a .func returning a struct (the corpus's ni_structret).
	 */
	buf_puts(b, "\tmov.b64 {%ooo_fl, %ooo_fh}, %ooo_fa;\n"
		    "\tlop3.b32 %ooo_fn, %ooo_fh, %ooo_fo, %ooo_fbh, 0xea;\n");
	if (kind == FK_GENERIC)
		buf_puts(b, "\tisspacep.shared %ooo_fp1, %ooo_fa;\n"
			    "\tisspacep.local %ooo_fp2, %ooo_fa;\n"
			    "\tor.pred %ooo_fp1, %ooo_fp1, %ooo_fp2;\n"
			    "\tselp.b32 %ooo_fn, %ooo_fh, %ooo_fn, %ooo_fp1;\n");
	buf_puts(b, "\tmov.b64 %ooo_fm, {%ooo_fl, %ooo_fn};\n"
		    "\txor.b32 %ooo_fx, %ooo_fh, %ooo_fn;\n\t");
	if (pred != UINT32_MAX) {
		buf_puts(b, neg ? "@!" : "@");
		buf_put(b, tok_s(m, pred), m->toks[pred].len);
		buf_puts(b, " ");
	}
	buf_puts(b, "or.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n");
}

/* ld/st.param with its one address a symbol(+imm): the kernel's or a call's own parameters, nothing computed. */
static bool param_addr_ok(const struct ptx_module *m, const struct stmt *s, uint32_t op)
{
	uint32_t first, n;
	unsigned count;
	struct addr a;

	return addr_group(m, s, op + 1, 0, &first, &n, &count) && count == 1 && parse_addr(m, first, n, &a) && a.sym;
}

/* `ld .global.u32 ...`: a modifier written apart from its opcode (ptxas takes it) would hide the state space. */
static bool separated_modifier(const struct ptx_module *m, const struct stmt *s, uint32_t op)
{
	return op + 1 < stmt_end(s) && m->toks[op + 1].kind == T_DIR;
}

/*
 * .loc and .file take what their syntax allows and nothing else. The parser
 * drops them with the rest of their line, so an instruction written after
 * one on the same line would be invisible here but compiled by ptxas: every
 * token on such a line must belong to the directive.
 */
static bool line_directive_ok(const struct ptx_module *m, uint32_t t)
{
	uint32_t line = m->toks[t].line, end = t;

	while (end < m->ntok && m->toks[end].line == line)
		end++;
	if (tok_is(m, t, ".loc")) {
		if (end - t < 4)
			return false;
		for (uint32_t k = t + 1; k < t + 4; k++)
			if (m->toks[k].kind != T_NUM)
				return false;
		/* `, function_name LABEL[+N], inlined_at N N N` */
		for (uint32_t k = t + 4; k < end; k++) {
			if (tok_punct(m, k, ',') || tok_punct(m, k, '+') || m->toks[k].kind == T_NUM ||
			    tok_is(m, k, "function_name") || tok_is(m, k, "inlined_at"))
				continue;
			if (m->toks[k].kind == T_IDENT && tok_is(m, k - 1, "function_name"))
				continue;
			return false;
		}
		return true;
	}
	/* .file N "name" [, N, N] */
	for (uint32_t k = t + 1; k < end; k++)
		if (!(m->toks[k].kind == T_NUM || m->toks[k].kind == T_STR || tok_punct(m, k, ',')))
			return false;
	return true;
}

static int check_line_directives(const struct ptx_module *m, char *err, size_t errlen)
{
	for (uint32_t t = 0; t < m->ntok; t++) {
		/* wherever it stands (after a label too: `L: .loc 1 1 0 st.global ...` hid the store) */
		if ((tok_is(m, t, ".loc") || tok_is(m, t, ".file")) && !line_directive_ok(m, t))
			return failf(err, errlen, "line %u: a .loc or .file directive with more on its line than it takes",
				     m->toks[t].line);
	}
	return 0;
}

/* A fenced function takes the window as its last two parameters, and names the fence nowhere else in its header. */
static bool fenced_header_ok(const struct ptx_module *m, const struct func *f)
{
	if (f->nparams < 2 || !tok_is(m, f->params[f->nparams - 2].name, "ooo_fence_base") ||
	    !tok_is(m, f->params[f->nparams - 1].name, "ooo_fence_mask"))
		return false;
	for (uint32_t t = f->hdr_first; t < f->hdr_first + f->hdr_n; t++) {
		if (t == f->params[f->nparams - 2].name || t == f->params[f->nparams - 1].name)
			continue;
		if ((m->toks[t].kind == T_IDENT || m->toks[t].kind == T_REG) && reserved_name(m, t))
			return false;
	}
	return true;
}

/* A function with a body called name (the definition, not a prototype), or NULL. */
static const struct func *func_named(const struct ptx_module *m, uint32_t t)
{
	for (uint32_t i = 0; i < m->nfunc; i++) {
		const struct func *f = &m->funcs[i];

		if (f->has_body && !f->entry && m->toks[f->name].len == m->toks[t].len &&
		    memcmp(tok_s(m, f->name), tok_s(m, t), m->toks[t].len) == 0)
			return f;
	}
	return NULL;
}

/*
 * A direct call `call[.uni] [(RET),] NAME[, (ARGS)]`: its target token and,
 * when present, the argument list's '(' and ')'. False for other shapes
 * (indirect calls through a register, with a prototype).
 */
static bool call_shape(const struct ptx_module *m, const struct stmt *s, uint32_t op, uint32_t *target, uint32_t *lp,
		       uint32_t *rp)
{
	uint32_t t = op + 1, end = stmt_end(s);

	*lp = *rp = UINT32_MAX;
	if (t < end && tok_punct(m, t, '(')) { /* the return list */
		while (t < end && !tok_punct(m, t, ')'))
			t++;
		if (t + 1 >= end || !tok_punct(m, t + 1, ','))
			return false;
		t += 2;
	}
	if (t >= end || m->toks[t].kind != T_IDENT)
		return false;
	*target = t++;
	if (t == end)
		return true;
	if (t + 1 >= end || !tok_punct(m, t, ',') || !tok_punct(m, t + 1, '('))
		return false;
	*lp = t + 1;
	for (t = t + 2; t < end && !tok_punct(m, t, ')'); t++)
		if (tok_punct(m, t, '('))
			return false;
	if (t + 1 != end) /* anything after the list: a prototype (indirect) */
		return false;
	*rp = t;
	return true;
}

/* Check one function (the entry or a .func it reaches) before anything is printed. */
static int check_fn(const struct ptx_module *m, const struct func *f, const char *kernel, char *err, size_t errlen)
{
	const char *why;

	/* the header too: the fenced copy's header may name the fence only where the rewriter puts it */
	for (uint32_t t = f->hdr_first; t < f->hdr_first + f->hdr_n; t++) {
		if ((m->toks[t].kind == T_REG || m->toks[t].kind == T_IDENT) && reserved_name(m, t))
			return failf(err, errlen, "%s: line %u uses the reserved name '%.*s'", kernel, m->toks[t].line,
				     (int)m->toks[t].len, tok_s(m, t));
	}

	for (uint32_t i = 0; i < f->body_n; i++) {
		const struct stmt *s = &m->stmts[f->body_first + i];
		uint32_t pred, op, first, n, target, lp, rp;
		unsigned count;
		struct addr a;
		bool neg;
		enum fkind kind;

		for (uint32_t t = s->first; t < stmt_end(s); t++) {
			if ((m->toks[t].kind == T_REG || m->toks[t].kind == T_IDENT) && reserved_name(m, t))
				return failf(err, errlen, "%s: line %u uses the reserved name '%.*s'", kernel, m->toks[t].line,
					     (int)m->toks[t].len, tok_s(m, t));
		}
		if (s->kind != ST_INSN)
			continue;
		op = opcode_of(m, s, &pred, &neg);
		if (op >= stmt_end(s))
			continue;
		if (starts(tok_s(m, op), m->toks[op].len, "call")) {
			if (!call_shape(m, s, op, &target, &lp, &rp))
				return failf(err, errlen, "%s: line %u: an indirect call: cannot be fenced", kernel,
					     m->toks[op].line);
			if (!func_named(m, target))
				return failf(err, errlen, "%s: line %u calls '%.*s', which has no body here to fence: cannot be fenced",
					     kernel, m->toks[op].line, (int)m->toks[target].len, tok_s(m, target));
			continue;
		}
		if (separated_modifier(m, s, op))
			return failf(err, errlen, "%s: line %u: '%.*s' with a modifier written apart: cannot be fenced",
				     kernel, m->toks[op].line, (int)m->toks[op].len, tok_s(m, op));
		kind = classify(tok_s(m, op), m->toks[op].len, &why);
		if (kind == FK_REFUSE)
			return failf(err, errlen, "%s: line %u: '%.*s' is %s: cannot be fenced", kernel, m->toks[op].line,
				     (int)m->toks[op].len, tok_s(m, op), why);
		if (kind == FK_PARAM && !param_addr_ok(m, s, op))
			return failf(err, errlen, "%s: line %u: '%.*s' with a computed address: cannot be fenced", kernel,
				     m->toks[op].line, (int)m->toks[op].len, tok_s(m, op));
		if (kind == FK_NONE || kind == FK_PARAM)
			continue;
		if (!addr_group(m, s, op + 1, kind == FK_ASYNC ? 1 : 0, &first, &n, &count) ||
		    count != (kind == FK_ASYNC ? 2u : 1u) || !parse_addr(m, first, n, &a))
			return failf(err, errlen, "%s: line %u: the address of '%.*s' is not REG[+IMM] or IMM: cannot be fenced",
				     kernel, m->toks[op].line, (int)m->toks[op].len, tok_s(m, op));
		if (a.sym)
			return failf(err, errlen, "%s: line %u: '%.*s' addresses the variable '%.*s' (a module .global variable "
				     "or another symbol outside every tenant's window): cannot be fenced", kernel,
				     m->toks[op].line, (int)m->toks[op].len, tok_s(m, op), (int)m->toks[a.reg].len,
				     tok_s(m, a.reg));
	}
	return 0;
}

struct fence_gen {
	const struct ptx_module *m;
	const struct func *f;
	bool call;         /* printing a call statement */
	uint32_t target, lp, rp;
	uint32_t afirst, an; /* printing a guarded access: its address tokens, printed as %ooo_fm */
	unsigned ncall;    /* calls printed in this function, for unique .param names */
};

/* The header of a fenced copy: the name gets the suffix, the parameter list the window. */
static uint32_t sub_header(void *ctx, const struct ptx_module *m, uint32_t t, uint32_t end, struct jit_buf *b)
{
	struct fence_gen *g = ctx;

	(void)end;
	if (t == g->f->name) {
		buf_put(b, tok_s(m, t), m->toks[t].len);
		buf_puts(b, FENCE_SUFFIX);
		return 1;
	}
	if (t == g->f->par_first + g->f->par_n && tok_punct(m, t, ')')) {
		buf_puts(b, g->f->par_n ? ", .param .u64 ooo_fence_base, .param .u64 ooo_fence_mask)"
					: ".param .u64 ooo_fence_base, .param .u64 ooo_fence_mask)");
		return 1;
	}
	return 0;
}

/* A call: the fenced callee, and the window as its last two arguments; an access: its confined address. */
static uint32_t sub_call(void *ctx, const struct ptx_module *m, uint32_t t, uint32_t end, struct jit_buf *b)
{
	struct fence_gen *g = ctx;

	(void)end;
	if (g->an && t == g->afirst) {
		buf_puts(b, "%ooo_fm");
		return g->an;
	}
	if (!g->call)
		return 0;
	if (t == g->target) {
		buf_put(b, tok_s(m, t), m->toks[t].len);
		buf_puts(b, FENCE_SUFFIX);
		if (g->lp == UINT32_MAX)
			buf_printf(b, ", (ooo_fpb%u, ooo_fpk%u)", g->ncall, g->ncall);
		return 1;
	}
	if (t == g->rp) {
		buf_printf(b, g->rp == g->lp + 1 ? "ooo_fpb%u, ooo_fpk%u)" : ", ooo_fpb%u, ooo_fpk%u)", g->ncall, g->ncall);
		return 1;
	}
	return 0;
}

static void emit_header(struct fence_gen *g, struct jit_buf *out)
{
	const struct ptx_module *m = g->m;
	const struct func *f = g->f;
	/* .func copies lose their linkage (.visible, .weak): they are this module's own */
	uint32_t skip = f->entry ? 0 : f->link_n;

	print_toks(m, f->hdr_first + skip, f->hdr_n - skip, sub_header, g, out);
	if (f->perf_n) {
		buf_put(out, " ", 1);
		print_toks(m, f->perf_first, f->perf_n, NULL, NULL, out);
	}
}

static void emit_fn(struct fence_gen *g, struct jit_buf *out)
{
	const struct ptx_module *m = g->m;
	const struct func *f = g->f;
	const char *why;

	emit_header(g, out);
	buf_puts(out, "\n{\n");
	for (unsigned i = 0; i < FENCE_PROLOGUE; i++)
		buf_printf(out, "\t%s;\n", fence_prologue[i]);
	g->ncall = 0;
	for (uint32_t j = 0; j < f->body_n; j++) {
		const struct stmt *s = &m->stmts[f->body_first + j];
		uint32_t pred, op, first, n;
		unsigned count;
		struct addr a;
		bool neg;
		enum fkind kind;

		g->call = false;
		g->an = 0;
		if (s->kind == ST_INSN) {
			op = opcode_of(m, s, &pred, &neg);
			if (op < stmt_end(s) && starts(tok_s(m, op), m->toks[op].len, "call") &&
			    call_shape(m, s, op, &g->target, &g->lp, &g->rp)) {
				g->call = true;
				g->ncall++;
				buf_printf(out,
					   "\t.param .b64 ooo_fpb%u;\n\t.param .b64 ooo_fpk%u;\n"
					   "\tst.param.b64 [ooo_fpb%u], %%ooo_fb;\n\tst.param.b64 [ooo_fpk%u], %%ooo_fk;\n",
					   g->ncall, g->ncall, g->ncall, g->ncall);
			} else {
				kind = op < stmt_end(s) ? classify(tok_s(m, op), m->toks[op].len, &why) : FK_NONE;
				if (kind != FK_NONE && kind != FK_PARAM && kind != FK_REFUSE &&
				    addr_group(m, s, op + 1, kind == FK_ASYNC ? 1 : 0, &first, &n, &count) &&
				    parse_addr(m, first, n, &a)) {
					emit_guard_addr(m, &a, out);
					emit_guard_rest(m, kind == FK_GENERIC ? FK_GENERIC : FK_GLOBAL, pred, neg, out);
					g->afirst = first;
					g->an = n;
				}
				/* a violation is reported (a trap) before the function returns or exits */
				if (op < stmt_end(s) && (starts(tok_s(m, op), m->toks[op].len, "ret") ||
							 starts(tok_s(m, op), m->toks[op].len, "exit")))
					buf_puts(out, "\t" FENCE_REPORT1 ";\n\t" FENCE_REPORT2 ";\n");
			}
		}
		switch (s->kind) {
		case ST_OPEN:
			buf_puts(out, "{\n");
			break;
		case ST_CLOSE:
			buf_puts(out, "}\n");
			break;
		case ST_LABEL:
			print_toks(m, s->first, 1, NULL, NULL, out);
			buf_puts(out, ":\n");
			break;
		default:
			buf_put(out, "\t", 1);
			print_toks(m, s->first, s->n, g->call || g->an ? sub_call : NULL, g, out);
			buf_puts(out, ";\n");
		}
	}
	g->call = false;
	g->an = 0;
	/* and where the body ends without a ret */
	buf_puts(out, "\t" FENCE_REPORT1 ";\n\t" FENCE_REPORT2 ";\n}\n");
}

/* Does the function, in its body, name a module .global variable (its address, or a direct access)? */
static const char *global_var_use(const struct ptx_module *m, const struct func *f, uint32_t *where)
{
	for (uint32_t i = 0; i < f->body_n; i++) {
		const struct stmt *s = &m->stmts[f->body_first + i];

		if (s->kind != ST_INSN)
			continue;
		for (uint32_t t = s->first; t < stmt_end(s); t++) {
			int64_t v;

			if (m->toks[t].kind != T_IDENT || !strmap_get(m->syms, tok_s(m, t), m->toks[t].len, &v) ||
			    SYM_KIND(v) != SYM_VAR)
				continue;
			if (m->vars[SYM_IDX(v)].space == SP_GLOBAL) {
				*where = m->toks[t].line;
				return "a module .global variable (outside every tenant's window)";
			}
		}
	}
	return NULL;
}

/* The .funcs with a body that f reaches through direct calls, appended to list (no duplicates). */
static void reach(const struct ptx_module *m, const struct func *f, uint32_t *list, uint32_t *n)
{
	for (uint32_t i = 0; i < f->body_n; i++) {
		const struct stmt *s = &m->stmts[f->body_first + i];
		uint32_t pred, op, target, lp, rp, idx;
		const struct func *callee;
		bool neg, seen = false;

		if (s->kind != ST_INSN)
			continue;
		op = opcode_of(m, s, &pred, &neg);
		if (op >= stmt_end(s) || !starts(tok_s(m, op), m->toks[op].len, "call") ||
		    !call_shape(m, s, op, &target, &lp, &rp) || !(callee = func_named(m, target)))
			continue;
		idx = (uint32_t)(callee - m->funcs);
		for (uint32_t j = 0; j < *n; j++)
			seen |= list[j] == idx;
		if (seen)
			continue;
		list[(*n)++] = idx;
		reach(m, callee, list, n);
	}
}

/*
 * Whether kernel k of m can be fenced: 0 with its entry in *f and the
 * .funcs it reaches in *fl (malloc'd, *nfl of them), or -EINVAL naming why.
 * Module-wide refusals (32-bit addressing, .loc lines hiding statements)
 * come from fence_module_ok.
 */
/*
 * For jit_fence_all, what a fenced executor loads: the fence's names
 * nowhere in the input, not even in kernels it cannot fence (printed as
 * they are), so every *_ooo_fenced function and %ooo_f* register of the
 * output is the rewriter's own and a tenant cannot hand in a "fenced"
 * kernel for the checker alone to judge. (jit_fence, one kernel at a time,
 * is also run on its own output, to fence a module kernel by kernel.)
 */
static int fence_names_absent(const struct ptx_module *m, char *err, size_t errlen)
{
	for (uint32_t t = 0; t < m->ntok; t++) {
		if ((m->toks[t].kind == T_REG || m->toks[t].kind == T_IDENT) && (reserved_name(m, t) || fenced_name(m, t)))
			return failf(err, errlen, "line %u uses the reserved name '%.*s': the module cannot be fenced",
				     m->toks[t].line, (int)m->toks[t].len, tok_s(m, t));
	}
	return 0;
}

static int fence_module_ok(const struct ptx_module *m, char *err, size_t errlen)
{

	for (uint32_t i = 0; i < m->nitem; i++) {
		const struct item *it = &m->items[i];

		if (it->kind == IT_LINE && tok_is(m, m->stmts[it->idx].first, ".address_size") &&
		    !tok_is(m, m->stmts[it->idx].first + 1, "64"))
			return failf(err, errlen, "32-bit addressing cannot be fenced");
	}
	return check_line_directives(m, err, errlen);
}

static int fence_plan(const struct ptx_module *m, const char *kernel, const struct func **fp, uint32_t **flp,
		      uint32_t *nflp, char *err, size_t errlen)
{
	const struct ptx_kernel *k = ptx_kernel_find(m, kernel);
	const struct func *f;
	uint32_t *fl, nfl = 0, line = 0;
	const char *why;
	int rc;

	if (!k)
		return failf(err, errlen, "no kernel '%s' in the module", kernel);
	f = &m->funcs[m->kinfo[k - m->kernels].func];
	if (!f->has_body)
		return failf(err, errlen, "kernel '%s' has no body", kernel);
	/* every statement of everything it runs first: refuse before printing anything */
	if ((rc = check_fn(m, f, kernel, err, errlen)) < 0)
		return rc;
	fl = calloc(m->nfunc ? m->nfunc : 1, sizeof(*fl));
	if (!fl)
		return -ENOMEM;
	reach(m, f, fl, &nfl);
	for (uint32_t i = 0; i < nfl && !rc; i++)
		rc = check_fn(m, &m->funcs[fl[i]], kernel, err, errlen);
	if (!rc && (why = global_var_use(m, f, &line)))
		rc = failf(err, errlen, "%s: line %u uses %s: cannot be fenced", kernel, line, why);
	for (uint32_t i = 0; i < nfl && !rc; i++)
		if ((why = global_var_use(m, &m->funcs[fl[i]], &line)))
			rc = failf(err, errlen, "%s: line %u uses %s: cannot be fenced", kernel, line, why);
	if (rc) {
		free(fl);
		return rc;
	}
	*fp = f;
	*flp = fl;
	*nflp = nfl;
	return 0;
}

/* Print one item of m as it is, through ptx_print's rules. */
static void print_item(const struct ptx_module *m, const struct item *it, struct jit_buf *out)
{
	struct ptx_module *mm = (struct ptx_module *)m;
	struct item *save = mm->items;
	uint32_t nsave = mm->nitem;

	mm->items = (struct item *)it;
	mm->nitem = 1;
	ptx_print(mm, out);
	mm->items = save;
	mm->nitem = nsave;
}

/*
 * At an entry's place: the fenced copies of the .funcs it reaches that are
 * not printed yet (declared first: they may call one another, then
 * defined), then its own fenced copy.
 */
static void emit_fenced(struct fence_gen *g, const struct func *f, const uint32_t *fl, uint32_t nfl, bool *done,
			struct jit_buf *out)
{
	for (uint32_t j = 0; j < nfl; j++) {
		if (done[fl[j]])
			continue;
		g->f = &g->m->funcs[fl[j]];
		emit_header(g, out);
		buf_puts(out, ";\n");
	}
	for (uint32_t j = 0; j < nfl; j++) {
		if (done[fl[j]])
			continue;
		g->f = &g->m->funcs[fl[j]];
		emit_fn(g, out);
		done[fl[j]] = true;
	}
	g->f = f;
	emit_fn(g, out);
}

/* Never hand out what the checker cannot prove (input the parser took but ptxas would not, ...). */
static int fence_prove(const struct jit_buf *out, const char *what, char *err, size_t errlen)
{
	char why2[256];
	unsigned nf = 0;
	int cr;

	if (out->err)
		return out->err;
	cr = jit_fence_check(out->data, out->len, &nf, why2, sizeof(why2));
	if (cr == -ENOMEM)
		return cr;
	if (cr < 0)
		return failf(err, errlen, "%s: the fenced copy does not pass the checker (%s): cannot be fenced", what,
			     why2);
	return 0;
}

int jit_fence(const struct ptx_module *m, const char *kernel, struct jit_buf *out, char *err, size_t errlen)
{
	const struct func *f = NULL;
	struct fence_gen g;
	uint32_t *fl = NULL, nfl = 0;
	bool *done;
	int rc;

	if ((rc = fence_module_ok(m, err, errlen)) < 0) {
		if (rc == -EINVAL && err && errlen && !strncmp(err, "32-bit", 6))
			return failf(err, errlen, "%s: 32-bit addressing cannot be fenced", kernel);
		return rc;
	}
	if ((rc = fence_plan(m, kernel, &f, &fl, &nfl, err, errlen)) < 0)
		return rc;
	done = calloc(m->nfunc ? m->nfunc : 1, sizeof(*done));
	if (!done) {
		free(fl);
		return -ENOMEM;
	}
	memset(&g, 0, sizeof(g));
	g.m = m;
	/* the module around it, as it was (other kernels too: only these copies are fenced) */
	for (uint32_t i = 0; i < m->nitem; i++) {
		const struct item *it = &m->items[i];

		if (it->kind != IT_FUNC || &m->funcs[it->idx] != f)
			print_item(m, it, out);
		else
			emit_fenced(&g, f, fl, nfl, done, out);
	}
	free(fl);
	free(done);
	return fence_prove(out, kernel, err, errlen);
}

int jit_fence_all(const struct ptx_module *m, struct jit_buf *out, unsigned *nfenced, struct jit_buf *why, char *err,
		  size_t errlen)
{
	struct fence_gen g;
	bool *done, *entry;
	uint32_t **fls, *nfls;
	int rc;

	*nfenced = 0;
	if ((rc = fence_module_ok(m, err, errlen)) < 0 || (rc = fence_names_absent(m, err, errlen)) < 0)
		return rc;
	done = calloc(m->nfunc ? m->nfunc : 1, sizeof(*done));
	entry = calloc(m->nfunc ? m->nfunc : 1, sizeof(*entry));
	fls = calloc(m->nfunc ? m->nfunc : 1, sizeof(*fls));
	nfls = calloc(m->nfunc ? m->nfunc : 1, sizeof(*nfls));
	if (!done || !entry || !fls || !nfls) {
		rc = -ENOMEM;
		goto out;
	}
	/* which kernels can be fenced, each with the .funcs it reaches */
	for (size_t k = 0; k < ptx_kernel_count(m); k++) {
		const char *name = ptx_kernel_at(m, k)->name;
		const struct func *f = NULL;
		uint32_t *fl = NULL, nfl = 0;
		char e[200];

		rc = fence_plan(m, name, &f, &fl, &nfl, e, sizeof(e));
		if (rc == -ENOMEM)
			goto out;
		if (rc < 0) {
			if (why) {
				/* one line per kernel, starting with its name (the reasons mostly do already) */
				if (strncmp(e, name, strlen(name)) || e[strlen(name)] != ':') {
					buf_puts(why, name);
					buf_puts(why, ": ");
				}
				buf_puts(why, e);
				buf_puts(why, "\n");
			}
			continue;
		}
		entry[f - m->funcs] = true;
		fls[f - m->funcs] = fl;
		nfls[f - m->funcs] = nfl;
		(*nfenced)++;
	}
	rc = 0;
	memset(&g, 0, sizeof(g));
	g.m = m;
	/* the module as it was, each kernel that can be fenced replaced by its fenced copy */
	for (uint32_t i = 0; i < m->nitem; i++) {
		const struct item *it = &m->items[i];

		if (it->kind == IT_FUNC && entry[it->idx])
			emit_fenced(&g, &m->funcs[it->idx], fls[it->idx], nfls[it->idx], done, out);
		else
			print_item(m, it, out);
	}
	/* nothing fenced: the module as it was (its kernels cannot run in a fenced executor; why says so) */
	rc = *nfenced ? fence_prove(out, "the module", err, errlen) : out->err;
out:
	for (uint32_t i = 0; fls && i < m->nfunc; i++)
		free(fls[i]);
	free(fls);
	free(nfls);
	free(done);
	free(entry);
	return rc;
}

/* ---- the checker ------------------------------------------------------------------------ */

/* Statement i's text, normalised through the printer (one space between tokens as print_toks spaces them). */
static void stmt_text(const struct ptx_module *m, const struct stmt *s, struct jit_buf *b)
{
	b->len = 0;
	print_toks(m, s->first, s->n, NULL, NULL, b);
	buf_put(b, "", 0);
}

static bool text_is(struct jit_buf *b, const char *want)
{
	size_t n = strlen(want);

	return b->len == n && memcmp(b->data, want, n) == 0;
}

/* Are body statements i - 1 and i of f the violation report (test, then trap)? */
static bool report_at(const struct ptx_module *m, const struct func *f, uint32_t i, struct jit_buf *t)
{
	const struct stmt *a, *b;

	if (i < 1 || i >= f->body_n)
		return false;
	a = &m->stmts[f->body_first + i - 1];
	b = &m->stmts[f->body_first + i];
	if (a->kind != ST_INSN || b->kind != ST_INSN)
		return false;
	stmt_text(m, a, t);
	if (!text_is(t, FENCE_REPORT1))
		return false;
	stmt_text(m, b, t);
	return text_is(t, FENCE_REPORT2);
}

/* ---- the fused form (fuse.c) --------------------------------------------------------------- */

/*
 * Inside a fused kernel the violation flag is kept in a predicate instead:
 * `[@p] setp.ne.or.u32 %ooo_fp0, %ooo_fh, %ooo_fn, %ooo_fp0` per access
 * (true when the confinement changed the high half), %ooo_fp0 false after
 * the prologue, and the report is the trap alone. Same meaning, other code:
 * measured on the H200 with ooo-bench's tiled SGEMM (bench/results/
 * 2026-12-05-fence-fused-h200-92937e7.txt, jit_check bench), 32 fenced
 * members fused take 1.27x the GPU time of 32 unfenced ones with the 32-bit
 * flag (in the SASS of a one-off build, ptxas had sunk the flag's updates
 * to the end of the tile loop) and 1.04-1.05x with the predicate. The kernel alone costs 1.02x with the
 * 32-bit flag (bench/fencecost.sh) and cost 1.15x with the predicate (a
 * one-off timing harness, not kept). So a fenced module keeps the
 * 32-bit flag (what jit_fence_check proves) and the fuser prints the
 * predicate form of it, statement for statement.
 */
bool jit_fence_fused_func(const struct ptx_module *m, const struct func *f)
{
	struct jit_buf t = { 0 };
	bool ok = f->has_body && fenced_name(m, f->name) && f->body_n >= FENCE_PROLOGUE;

	for (unsigned i = 0; ok && i < FENCE_PROLOGUE; i++) {
		stmt_text(m, &m->stmts[f->body_first + i], &t);
		ok = !t.err && text_is(&t, fence_prologue[i]);
	}
	jit_buf_free(&t);
	return ok;
}

enum jit_fence_fz jit_fence_fused_stmt(const struct ptx_module *m, const struct stmt *s, struct jit_buf *scratch)
{
	uint32_t pred, op;
	bool neg;

	if (s->kind != ST_INSN)
		return JIT_FZ_KEEP;
	op = opcode_of(m, s, &pred, &neg);
	if (op >= stmt_end(s))
		return JIT_FZ_KEEP;
	scratch->len = 0;
	print_toks(m, op, stmt_end(s) - op, NULL, NULL, scratch);
	buf_put(scratch, "", 0);
	if (scratch->err)
		return JIT_FZ_KEEP;
	if (pred == UINT32_MAX && text_is(scratch, "mov.u32 %ooo_fv, 0"))
		return JIT_FZ_INIT;
	if (pred == UINT32_MAX && (text_is(scratch, "xor.b32 %ooo_fx, %ooo_fh, %ooo_fn") || text_is(scratch, FENCE_REPORT1)))
		return JIT_FZ_DROP;
	if (text_is(scratch, "or.b32 %ooo_fv, %ooo_fv, %ooo_fx"))
		return JIT_FZ_FLAG;
	return JIT_FZ_KEEP;
}

/* Parse the guard texts our rewriter writes, with the printer's spacing, into a reference to compare. */
static int check_entry(const struct ptx_module *m, const struct func *f, char *err, size_t errlen)
{
	struct jit_buf t = { 0 }, want = { 0 };
	const char *name = tok_s(m, f->name), *why;
	int nlen = (int)m->toks[f->name].len, rc = 0;
	uint32_t i = 0, guards = 0;
	/* the fence's own statements (prologue, guards, window stores before calls): only they may name %ooo_ */
	bool *own = calloc(f->body_n ? f->body_n : 1, sizeof(*own));

	if (!own)
		return -ENOMEM;
	if (!fenced_header_ok(m, f))
		rc = failf(err, errlen, "%.*s: the window is not its last two parameters (ooo_fence_base, ooo_fence_mask)",
			   nlen, name);

	/* the prologue: the declarations, the window's loads, ~mask, the flag; then nothing else writes them */
	if (!rc && f->body_n < FENCE_PROLOGUE)
		rc = failf(err, errlen, "%.*s: no fence prologue", nlen, name);
	for (; !rc && i < FENCE_PROLOGUE; i++) {
		stmt_text(m, &m->stmts[f->body_first + i], &t);
		if (!text_is(&t, fence_prologue[i]))
			rc = failf(err, errlen, "%.*s: statement %u is not the fence prologue", nlen, name, i + 1);
		own[i] = true;
	}
	for (; !rc && i < f->body_n; i++) {
		const struct stmt *s = &m->stmts[f->body_first + i];
		uint32_t pred, op, first, n;
		unsigned count;
		bool neg;
		enum fkind kind;

		if (s->kind != ST_INSN)
			continue;
		op = opcode_of(m, s, &pred, &neg);
		if (op >= stmt_end(s))
			continue;
		/* a guard's statements are checked with the access they guard; any other use of %ooo_ is refused below */
		if (op + 1 < stmt_end(s) && m->toks[op + 1].kind == T_REG && reserved_name(m, op + 1)) {
			if (tok_is(m, op + 1, "%ooo_fb") || tok_is(m, op + 1, "%ooo_fk") || tok_is(m, op + 1, "%ooo_fbh") ||
			    tok_is(m, op + 1, "%ooo_fo")) {
				rc = failf(err, errlen, "%.*s: line %u writes a window register", nlen, name, m->toks[op].line);
				break;
			}
			continue;
		}
		if (tok_is(m, op, "trap")) {
			/* the report of a violation (the only reader of the flag) is own with the test before it */
			if (report_at(m, f, i, &t)) {
				own[i - 1] = true;
				own[i] = true;
			}
			continue;
		}
		/* and is made before every return or exit (not for safety: so that a violation is reported) */
		if (starts(tok_s(m, op), m->toks[op].len, "ret") || starts(tok_s(m, op), m->toks[op].len, "exit")) {
			if (!report_at(m, f, i - 1, &t)) {
				rc = failf(err, errlen, "%.*s: line %u: a return or exit without the violation report before it",
					   nlen, name, m->toks[op].line);
				break;
			}
			continue;
		}
		if (starts(tok_s(m, op), m->toks[op].len, "call")) {
			/* a fenced callee, handed the window: the four statements before store it into its last arguments */
			uint32_t target, lp, rp;
			const struct func *callee;
			char expect[4][160];
			const char *x, *y;
			int xl, yl;

			if (!call_shape(m, s, op, &target, &lp, &rp) || lp == UINT32_MAX || rp < lp + 4 ||
			    m->toks[rp - 1].kind != T_IDENT || !tok_punct(m, rp - 2, ',') ||
			    m->toks[rp - 3].kind != T_IDENT || !(callee = func_named(m, target)) ||
			    !fenced_name(m, target) || i < FENCE_PROLOGUE + 4) {
				rc = failf(err, errlen, "%.*s: line %u: a call that is not to a fenced function with the window",
					   nlen, name, m->toks[op].line);
				break;
			}
			x = tok_s(m, rp - 3);
			xl = (int)m->toks[rp - 3].len;
			y = tok_s(m, rp - 1);
			yl = (int)m->toks[rp - 1].len;
			snprintf(expect[0], sizeof(expect[0]), ".param .b64 %.*s", xl, x);
			snprintf(expect[1], sizeof(expect[1]), ".param .b64 %.*s", yl, y);
			snprintf(expect[2], sizeof(expect[2]), "st.param.b64 [%.*s], %%ooo_fb", xl, x);
			snprintf(expect[3], sizeof(expect[3]), "st.param.b64 [%.*s], %%ooo_fk", yl, y);
			for (int e = 0; e < 4 && !rc; e++) {
				stmt_text(m, &m->stmts[f->body_first + i - 4 + (uint32_t)e], &t);
				if (!text_is(&t, expect[e]))
					rc = failf(err, errlen, "%.*s: line %u: a call without the window as its last arguments",
						   nlen, name, m->toks[op].line);
				own[i - 4 + (uint32_t)e] = true;
			}
			if (rc)
				break;
			/* the call may name the fence only as its last two arguments: not in its return list */
			for (uint32_t tk = s->first; tk < stmt_end(s) && !rc; tk++) {
				if (tk != rp - 3 && tk != rp - 1 &&
				    (m->toks[tk].kind == T_REG || m->toks[tk].kind == T_IDENT) && reserved_name(m, tk))
					rc = failf(err, errlen, "%.*s: line %u: a call that names '%.*s'", nlen, name,
						   m->toks[op].line, (int)m->toks[tk].len, tok_s(m, tk));
			}
			if (rc)
				break;
			own[i] = true;
			continue;
		}
		if (separated_modifier(m, s, op)) {
			rc = failf(err, errlen, "%.*s: line %u: a modifier written apart from its opcode", nlen, name,
				   m->toks[op].line);
			break;
		}
		kind = classify(tok_s(m, op), m->toks[op].len, &why);
		if (kind == FK_REFUSE) {
			rc = failf(err, errlen, "%.*s: line %u: '%.*s' (%s) in a fenced kernel", nlen, name,
				   m->toks[op].line, (int)m->toks[op].len, tok_s(m, op), why);
			break;
		}
		if (kind == FK_PARAM && !param_addr_ok(m, s, op)) {
			rc = failf(err, errlen, "%.*s: line %u: a parameter access through a computed address", nlen, name,
				   m->toks[op].line);
			break;
		}
		if (kind == FK_NONE || kind == FK_PARAM)
			continue;
		/* the access goes through %ooo_fm, and names the fence nowhere else */
		if (!addr_group(m, s, op + 1, kind == FK_ASYNC ? 1 : 0, &first, &n, &count) ||
		    count != (kind == FK_ASYNC ? 2u : 1u) || n != 1 || !tok_is(m, first, "%ooo_fm")) {
			rc = failf(err, errlen, "%.*s: line %u: an access whose address is not the fence's confined one",
				   nlen, name, m->toks[op].line);
			break;
		}
		for (uint32_t tk = s->first; tk < stmt_end(s) && !rc; tk++)
			if (tk != first && (m->toks[tk].kind == T_REG || m->toks[tk].kind == T_IDENT) && reserved_name(m, tk))
				rc = failf(err, errlen, "%.*s: line %u: an access that names '%.*s'", nlen, name,
					   m->toks[op].line, (int)m->toks[tk].len, tok_s(m, tk));
		if (rc)
			break;
		/*
		 * The guard, statement by statement, right before: no label, no
		 * other statement between. Its first statement puts some address
		 * into %ooo_fa (which one does not matter to the proof: whatever it
		 * is, %ooo_fm is confined to the window); the rest is exact text.
		 */
		want.len = 0;
		emit_guard_rest(m, kind == FK_GENERIC ? FK_GENERIC : FK_GLOBAL, pred, neg, &want);
		{
			uint32_t lines = 1, k;
			char *p, *save = NULL, *copy;
			const struct stmt *g1;
			uint32_t gpred, gop;
			bool gneg;

			for (size_t c = 0; c < want.len; c++)
				lines += want.data[c] == '\n';
			if (i < lines + FENCE_PROLOGUE) {
				rc = failf(err, errlen, "%.*s: line %u: access without its guard", nlen, name, m->toks[op].line);
				break;
			}
			k = i - lines;
			g1 = &m->stmts[f->body_first + k];
			gop = g1->kind == ST_INSN ? opcode_of(m, g1, &gpred, &gneg) : UINT32_MAX;
			if (gop == UINT32_MAX || gpred != UINT32_MAX || gop + 2 >= stmt_end(g1) ||
			    !(tok_is(m, gop, "add.s64") || tok_is(m, gop, "mov.u64")) || !tok_is(m, gop + 1, "%ooo_fa") ||
			    !tok_punct(m, gop + 2, ',')) {
				rc = failf(err, errlen, "%.*s: line %u: access without its exact guard", nlen, name,
					   m->toks[op].line);
				break;
			}
			for (uint32_t tk = gop + 2; tk < stmt_end(g1) && !rc; tk++)
				if ((m->toks[tk].kind == T_REG || m->toks[tk].kind == T_IDENT) && reserved_name(m, tk))
					rc = failf(err, errlen, "%.*s: line %u: a guard's address names '%.*s'", nlen, name,
						   m->toks[op].line, (int)m->toks[tk].len, tok_s(m, tk));
			if (rc)
				break;
			own[k++] = true;
			copy = strndup(want.data, want.len);
			if (!copy) {
				rc = -ENOMEM;
				break;
			}
			for (p = strtok_r(copy, "\n", &save); p; p = strtok_r(NULL, "\n", &save), k++) {
				const struct stmt *gs = &m->stmts[f->body_first + k];
				size_t pl;

				while (*p == '\t')
					p++;
				pl = strlen(p);
				if (pl && p[pl - 1] == ';')
					p[--pl] = '\0';
				/* the printer's spacing of the reference: parse it the same way */
				stmt_text(m, gs, &t);
				if (gs->kind != ST_INSN || t.len != pl || memcmp(t.data, p, pl) != 0) {
					rc = failf(err, errlen, "%.*s: line %u: access without its exact guard", nlen, name,
						   m->toks[op].line);
					break;
				}
				own[k] = true;
			}
			free(copy);
			if (rc)
				break;
			own[i] = true;
			guards++;
		}
	}
	if (!rc && !report_at(m, f, f->body_n - 1, &t))
		rc = failf(err, errlen, "%.*s: the body does not end with the violation report", nlen, name);
	/*
	 * Everything else must leave the fence's names alone: no declaration of
	 * them in an inner scope (a shadow %ooo_fb would make the guards compare
	 * against a register nobody set), no read or write of them, whatever the
	 * operand position.
	 */
	for (uint32_t j = 0; !rc && j < f->body_n; j++) {
		const struct stmt *s = &m->stmts[f->body_first + j];

		if (own[j])
			continue;
		for (uint32_t tk = s->first; tk < stmt_end(s); tk++) {
			if ((m->toks[tk].kind == T_REG || m->toks[tk].kind == T_IDENT) && reserved_name(m, tk)) {
				rc = failf(err, errlen, "%.*s: line %u names '%.*s' outside the fence's own statements", nlen,
					   name, m->toks[tk].line, (int)m->toks[tk].len, tok_s(m, tk));
				break;
			}
		}
	}
	free(own);
	jit_buf_free(&t);
	jit_buf_free(&want);
	return rc;
}

int jit_fence_check(const char *ptx, size_t len, unsigned *nguards_out, char *err, size_t errlen)
{
	struct ptx_module *m = NULL;
	unsigned fenced = 0;
	int rc = ptx_parse(ptx, len, &m, err, errlen);

	if (rc < 0)
		return rc;
	rc = check_line_directives(m, err, errlen);
	for (uint32_t i = 0; !rc && i < m->nfunc; i++) {
		const struct func *f = &m->funcs[i];
		if (!f->has_body || !fenced_name(m, f->name))
			continue;
		rc = check_entry(m, f, err, errlen);
		fenced += f->entry;
	}
	if (!rc && !fenced)
		rc = failf(err, errlen, "no fenced entry (*%s) in the module", FENCE_SUFFIX);
	if (nguards_out)
		*nguards_out = fenced;
	ptx_module_free(m);
	return rc;
}
