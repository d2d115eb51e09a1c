/* SPDX-License-Identifier: MIT */
/*
 * The fused-kernel generator and the descriptor layout (<ooo/jit.h>).
 *
 * For bodies B0..Bn-1 it emits one module:
 *   - .extern .func declarations the bodies call (vprintf, ...), once;
 *   - one pooled static .shared array `ooo_smem` (the largest body's layout)
 *     and one dynamic `ooo_dsmem` when any body uses dynamic shared memory;
 *   - per body k: copies of its read-only initialized data and of the
 *     .funcs it reaches, renamed m<k>_NAME;
 *   - the entry ooo_fused_<key> (and ooo_fusedp_<key>, the same reading the
 *     table from its parameter): a prologue that finds the block's member
 *     by binary search over the descriptor, computes its virtual %ctaid,
 *     %nctaid and parameter base, and branches to the member's body. Each
 *     body is the member kernel's own statements in a { } scope with its
 *     registers and labels renamed m<k>_..., `ld.param` of kernel
 *     parameters turned into loads from the descriptor, %ctaid/%nctaid
 *     replaced by the virtual values, and shared variables replaced by
 *     offsets into the pool.
 * The text depends only on the bodies, never on how many launches of each
 * a bundle holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

#include "internal.h"

struct gen {
	const struct ptx_module *m;
	const struct kinfo *ki;
	const struct func *f;
	uint32_t k;
	bool entry;
	bool ldparam; /* the statement being printed is `ld.param` of a kernel parameter */
	bool volatile_ld;
	bool ptab;   /* the entry that takes the table as its parameter: parameters stay in .param space */
	uint32_t op; /* opcode token of that statement */
	bool fenced;  /* the function is the fence's: its flag is printed in the fused form (fence.c) */
	bool chain;   /* a chain-capable kernel's entry body: its returns and exits go to $ooo_x<k> */
	struct jit_buf *out, scratch;
	struct fscope sc;
};

static const struct kinfo *kinfo_of(const struct ptx_module *m, const struct ptx_kernel *k)
{
	return &m->kinfo[k - m->kernels];
}

/* Offset of static shared var v in body layout ki, or -1. */
static int64_t smem_offset(const struct kinfo *ki, uint32_t v)
{
	for (uint32_t i = 0; i < ki->nsmem; i++)
		if (ki->smem[i] == v)
			return ki->smem_off[i];
	return -1;
}

/* Print NAME+off, folding a following `+imm`, `+-imm` or `-imm`; returns tokens consumed. */
static uint32_t print_folded(const struct ptx_module *m, uint32_t t, uint32_t end, const char *base, int64_t off,
			     struct jit_buf *b)
{
	uint32_t used = 1;
	int64_t imm;

	if (t + 2 < end && tok_punct(m, t + 1, '+') && m->toks[t + 2].kind == T_NUM &&
	    parse_num(tok_s(m, t + 2), m->toks[t + 2].len, &imm) && imm > -(1ll << 40) && imm < (1ll << 40)) {
		off += imm;
		used = 3;
	} else if (t + 3 < end && tok_punct(m, t + 1, '+') && tok_punct(m, t + 2, '-') &&
		   m->toks[t + 3].kind == T_NUM && parse_num(tok_s(m, t + 3), m->toks[t + 3].len, &imm) &&
		   imm > -(1ll << 40) && imm < (1ll << 40)) {
		off -= imm;
		used = 4;
	} else if (t + 2 < end && tok_punct(m, t + 1, '-') && m->toks[t + 2].kind == T_NUM &&
		   parse_num(tok_s(m, t + 2), m->toks[t + 2].len, &imm) && imm > -(1ll << 40) && imm < (1ll << 40)) {
		off -= imm;
		used = 3;
	}
	if (off > 0)
		buf_printf(b, "%s+%" PRId64, base, off);
	else if (off < 0)
		buf_printf(b, "%s+%" PRId64, base, off); /* base+-N, as PTX writes it */
	else
		buf_puts(b, base);
	return used;
}

static void put_name(struct jit_buf *b, uint32_t k, const struct ptx_module *m, uint32_t t)
{
	buf_printf(b, "m%" PRIu32 "_", k);
	buf_put(b, tok_s(m, t), m->toks[t].len);
}

static uint32_t sub_tok(void *ctx, const struct ptx_module *m, uint32_t t, uint32_t end, struct jit_buf *b)
{
	struct gen *g = ctx;
	const struct tok *k = &m->toks[t];
	const char *s = tok_s(m, t);
	int64_t v;

	if (k->kind == T_REG) {
		if (!g->entry)
			return 0;
		if (fscope_has_reg(&g->sc, s, k->len) || strmap_get(g->sc.regs, s, k->len, NULL)) {
			buf_printf(b, "%%m%" PRIu32 "_", g->k);
			buf_put(b, s + 1, k->len - 1);
			return 1;
		}
		if (k->len == 8 && memcmp(s, "%ctaid.", 7) == 0) {
			buf_printf(b, "%%ooo_v%c", s[7]);
			return 1;
		}
		if (k->len == 9 && memcmp(s, "%nctaid.", 8) == 0) {
			buf_printf(b, "%%ooo_g%c", s[8]);
			return 1;
		}
		return 0;
	}
	if (k->kind == T_IDENT && g->ldparam && t == g->op) {
		/*
		 * The opcode of a rewritten ld.param: .param[::entry] -> .global[.nc]
		 * (the table in device memory), or .param (the table as the entry's
		 * parameter, read through an address in a register).
		 */
		const char *p = memmem(s, k->len, ".param", 6);

		if (p) {
			size_t pre = (size_t)(p - s), plen = 6;

			if (pre + 13 <= k->len && memcmp(p + 6, "::entry", 7) == 0)
				plen += 7;
			if (g->ptab) {
				const char *vol = memmem(s, pre, ".volatile", 9); /* no volatile .param loads */

				if (vol) {
					buf_put(b, s, (size_t)(vol - s));
					buf_put(b, vol + 9, pre - (size_t)(vol - s) - 9);
				} else {
					buf_put(b, s, pre);
				}
				buf_puts(b, ".param");
				buf_put(b, p + plen, k->len - pre - plen);
				return 1;
			}
			buf_put(b, s, pre);
			buf_puts(b, g->volatile_ld ? ".global" : ".global.nc");
			buf_put(b, p + plen, k->len - pre - plen);
			return 1;
		}
		return 0;
	}
	if (k->kind == T_IDENT && g->ldparam && strmap_get(g->sc.names, s, k->len, &v) && v == -2) {
		/* a kernel parameter inside [ ] of ld.param */
		for (uint32_t i = 0; i < g->f->nparams; i++) {
			const struct fparam *p = &g->f->params[i];

			if (m->toks[p->name].len == k->len && memcmp(tok_s(m, p->name), s, k->len) == 0)
				return print_folded(m, t, end, "%ooo_pbase", p->offset, b);
		}
		return 0;
	}
	if (k->kind != T_IDENT)
		return 0;
	if (g->entry && strmap_get(g->sc.labels, s, k->len, NULL)) {
		put_name(b, g->k, m, t);
		return 1;
	}
	if (strmap_get(g->sc.names, s, k->len, &v)) {
		if (v >= 0) {
			const struct var *dv = &m->vars[v];

			if (dv->space == SP_SHARED) {
				int64_t off = smem_offset(g->ki, (uint32_t)v);

				if (dv->unsized)
					return print_folded(m, t, end, "ooo_dsmem", 0, b);
				if (off >= 0)
					return print_folded(m, t, end, "ooo_smem", off, b);
			}
			if (g->entry) {
				put_name(b, g->k, m, t);
				return 1;
			}
		}
		return 0;
	}
	if (strmap_get(m->syms, s, k->len, &v)) {
		if (SYM_KIND(v) == SYM_FUNC) {
			if (!m->funcs[SYM_IDX(v)].has_body)
				return 0; /* extern: keeps its name */
			put_name(b, g->k, m, t);
			return 1;
		}
		{
			const struct var *mv = &m->vars[SYM_IDX(v)];

			if (mv->space == SP_SHARED) {
				int64_t off = smem_offset(g->ki, SYM_IDX(v));

				if (mv->unsized || (mv->ext && !mv->size))
					return print_folded(m, t, end, "ooo_dsmem", 0, b);
				if (off >= 0)
					return print_folded(m, t, end, "ooo_smem", off, b);
				return 0;
			}
			put_name(b, g->k, m, t);
			return 1;
		}
	}
	return 0;
}

/* Is this statement `ld.param ... [KERNELPARAM...]`? */
static bool is_ldparam(struct gen *g, const struct stmt *s)
{
	const struct ptx_module *m = g->m;
	uint32_t op = s->first, end = stmt_end(s);
	int64_t v;

	if (tok_punct(m, op, '@'))
		op += tok_punct(m, op + 1, '!') ? 3 : 2;
	if (op >= end || m->toks[op].len < 3 || memcmp(tok_s(m, op), "ld.", 3) != 0 ||
	    !memmem(tok_s(m, op), m->toks[op].len, ".param", 6))
		return false;
	for (uint32_t t = op + 1; t + 1 < end; t++)
		if (tok_punct(m, t, '[') && m->toks[t + 1].kind == T_IDENT &&
		    strmap_get(g->sc.names, tok_s(m, t + 1), m->toks[t + 1].len, &v) && v == -2) {
			const char *o = tok_s(m, op);

			g->volatile_ld = memmem(o, m->toks[op].len, ".volatile", 9) != NULL;
			g->op = op;
			return true;
		}
	return false;
}

/* A fence register of the function being printed, renamed as sub_tok renames it. */
static void put_freg(struct gen *g, const char *name)
{
	if (g->entry)
		buf_printf(g->out, "%%m%" PRIu32 "_%s", g->k, name);
	else
		buf_printf(g->out, "%%%s", name);
}

/* A fenced function's flag statements, in the fused form; false: the statement is printed here (or dropped). */
static bool gen_fenced(struct gen *g, const struct ptx_module *m, const struct stmt *s)
{
	switch (jit_fence_fused_stmt(m, s, &g->scratch)) {
	case JIT_FZ_KEEP:
		return true;
	case JIT_FZ_DROP:
		return false;
	case JIT_FZ_INIT:
		buf_put(g->out, "\t", 1);
		print_toks(m, s->first, s->n, sub_tok, g, g->out);
		buf_puts(g->out, ";\n\tsetp.ne.u32 ");
		put_freg(g, "ooo_fp0");
		buf_puts(g->out, ", ");
		put_freg(g, "ooo_fv");
		buf_puts(g->out, ", 0;\n");
		return false;
	case JIT_FZ_FLAG:
		buf_put(g->out, "\t", 1);
		if (tok_punct(m, s->first, '@')) {
			uint32_t n = tok_punct(m, s->first + 1, '!') ? 3 : 2;

			print_toks(m, s->first, n, sub_tok, g, g->out);
			buf_put(g->out, " ", 1);
		}
		buf_puts(g->out, "setp.ne.or.u32 ");
		put_freg(g, "ooo_fp0");
		buf_puts(g->out, ", ");
		put_freg(g, "ooo_fh");
		buf_puts(g->out, ", ");
		put_freg(g, "ooo_fn");
		buf_puts(g->out, ", ");
		put_freg(g, "ooo_fp0");
		buf_puts(g->out, ";\n");
		return false;
	}
	return true;
}

/* The opcode token of an instruction (after its @p / @!p guard). */
static uint32_t opcode_tok(const struct ptx_module *m, const struct stmt *s)
{
	uint32_t op = s->first;

	if (tok_punct(m, op, '@'))
		op += tok_punct(m, op + 1, '!') ? 3 : 2;
	return op;
}

/* Is the instruction a return or exit (ret, ret.uni, exit)? *uni: ret.uni. */
static bool ends_thread(const struct ptx_module *m, const struct stmt *s, bool *uni)
{
	uint32_t op = opcode_tok(m, s);

	if (s->kind != ST_INSN || op >= stmt_end(s))
		return false;
	*uni = tok_is(m, op, "ret.uni");
	return *uni || tok_is(m, op, "ret") || tok_is(m, op, "exit");
}

/* Before each statement of a body: pooled .shared declarations go, ld.param of parameters is marked. */
static bool gen_stmt(void *ctx, const struct ptx_module *m, const struct stmt *s)
{
	struct gen *g = ctx;
	bool uni;

	g->ldparam = g->entry && s->kind == ST_INSN && is_ldparam(g, s);
	if (g->fenced && !gen_fenced(g, m, s))
		return false;
	if (g->chain && ends_thread(m, s, &uni)) {
		/* the thread ends through the body's exit block, which counts it for the members waiting on it */
		uint32_t op = opcode_tok(m, s);

		buf_put(g->out, "\t", 1);
		if (op > s->first) {
			print_toks(m, s->first, op - s->first, sub_tok, g, g->out);
			buf_put(g->out, " ", 1);
		}
		buf_printf(g->out, "bra%s $ooo_x%" PRIu32 ";\n", uni ? ".uni" : "", g->k);
		return false;
	}
	return !(s->kind == ST_DIR && tok_is(m, s->first, ".shared"));
}

/*
 * Does an instruction reach global memory outside what a release and an
 * acquire at GPU scope order? Non-coherent and uniform loads (ld.global.nc,
 * ldu: the data must stay unchanged for the whole kernel, and the compiler
 * may move them), texture and surface instructions, and the asynchronous
 * proxy's bulk and tensor copies, asynchronous and bulk stores and
 * reductions. A member reading what the member before it wrote in the same
 * launch would not be sure to see it.
 */
static bool unordered_access(const struct ptx_module *m, const struct stmt *s)
{
	static const char *const pre[] = { "ldu", "tex", "tld4", "suld", "sust", "sured", "cp.async.bulk",
					   "cp.reduce.async", "st.async", "red.async", "st.bulk", "multimem" };
	uint32_t op = opcode_tok(m, s);
	const char *o;
	size_t n;

	if (s->kind != ST_INSN || op >= stmt_end(s))
		return false;
	o = tok_s(m, op);
	n = m->toks[op].len;
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		if (n >= strlen(pre[i]) && !memcmp(o, pre[i], strlen(pre[i])))
			return true;
	return n > 3 && !memcmp(o, "ld.", 3) && memmem(o, n, ".nc", 3);
}

/*
 * Can a kernel run chained? Not when a .func it reaches ends its thread
 * with `exit` (that thread could not count itself), nor when it or a .func
 * it reaches accesses memory in a way the chain's ordering does not cover
 * (unordered_access).
 */
static bool chainable(const struct ptx_module *m, const struct kinfo *ki)
{
	bool uni;

	for (uint32_t j = 0; j <= ki->nfuncs; j++) {
		const struct func *f = &m->funcs[j < ki->nfuncs ? ki->funcs[j] : ki->func];

		for (uint32_t i = 0; i < f->body_n; i++) {
			const struct stmt *s = &m->stmts[f->body_first + i];

			if ((j < ki->nfuncs && ends_thread(m, s, &uni) && tok_is(m, opcode_tok(m, s), "exit")) ||
			    unordered_access(m, s))
				return false;
		}
	}
	return true;
}

static void emit_stmts(struct gen *g, struct jit_buf *b)
{
	g->out = b;
	g->fenced = jit_fence_fused_func(g->m, g->f);
	print_body(g->m, g->f, sub_tok, gen_stmt, g, b);
	g->ldparam = false;
	g->fenced = false;
	if (g->scratch.err)
		b->err = g->scratch.err;
	jit_buf_free(&g->scratch);
	g->scratch = (struct jit_buf){ 0 };
}

/* Header of a .func copy: `.func (rets) m<k>_NAME(params)` without linkage. */
static void emit_func_header(struct gen *g, uint32_t fi, struct jit_buf *b)
{
	const struct ptx_module *m = g->m;
	const struct func *f = &m->funcs[fi];
	uint32_t first = f->hdr_first + f->link_n;

	print_toks(m, first, f->hdr_n - f->link_n, sub_tok, g, b);
	if (f->perf_n) {
		buf_put(b, " ", 1);
		print_toks(m, f->perf_first, f->perf_n, NULL, NULL, b);
	}
}

static int version_cmp(const char *a, const char *b)
{
	unsigned am = 0, an = 0, bm = 0, bn = 0;

	sscanf(a, "%u.%u", &am, &an);
	sscanf(b, "%u.%u", &bm, &bn);
	return am != bm ? (am < bm ? -1 : 1) : an != bn ? (an < bn ? -1 : 1) : 0;
}

/* sm_NN[a|f] -> NN and suffix */
static int target_num(const char *t, char *suffix)
{
	unsigned n = 0;
	char s = 0;

	if (sscanf(t, "sm_%u%c", &n, &s) < 1)
		return -1;
	*suffix = s;
	return (int)n;
}

static int failf(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int failf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

void jit_fuse_key(const struct jit_body *bodies, size_t n, const char *salt, uint8_t key[32])
{
	struct sha256_ctx h;

	sha256_init(&h);
	sha256_update(&h, 11, (const uint8_t *)"ooo-jit-v1");
	for (size_t i = 0; i < n; i++) {
		const struct ptx_kernel *k = ptx_kernel_find(bodies[i].mod, bodies[i].kernel);

		if (k)
			sha256_update(&h, sizeof(k->hash), k->hash);
		else
			sha256_update(&h, 1, (const uint8_t *)"?");
	}
	if (salt)
		sha256_update(&h, strlen(salt) + 1, (const uint8_t *)salt);
	sha256_digest(&h, 32, key);
}

void jit_fused_free(struct jit_fused *f)
{
	if (!f)
		return;
	free(f->ptx);
	free(f);
}

static const char prologue_regs[] =
	"\t.reg .pred %ooo_p0;\n"
	"\t.reg .b32 %ooo_r<11>;\n"
	"\t.reg .b64 %ooo_rd<3>;\n"
	"\t.reg .b32 %ooo_vx, %ooo_vy, %ooo_vz, %ooo_gx, %ooo_gy, %ooo_gz;\n"
	"\t.reg .b64 %ooo_pbase;\n";

/* a chain-capable kernel's too */
static const char prologue_chain_regs[] =
	"\t.reg .pred %ooo_pc, %ooo_ps, %ooo_p1;\n"
	"\t.reg .b32 %ooo_tb, %ooo_am, %ooo_ac, %ooo_al;\n"
	"\t.reg .b64 %ooo_ch, %ooo_sa;\n";

/* the table in device memory, at the address of the first parameter */
static const char prologue_global[] =
	"\tld.param.u64 %ooo_rd0, [ooo_desc];\n"
	"\tld.param.u32 %ooo_r1, [ooo_n];\n"
	"\tld.param.u32 %ooo_r2, [ooo_uniform];\n"
	"\tcvta.to.global.u64 %ooo_rd0, %ooo_rd0;\n";

/* the table is the parameter: its .param address in a register, read with ld.param [reg] */
static const char prologue_param[] =
	"\tmov.u64 %ooo_rd0, ooo_table;\n"
	"\tld.param.u32 %ooo_r1, [%ooo_rd0];\n"
	"\tld.param.u32 %ooo_r2, [%ooo_rd0+12];\n";

/*
 * The block's number: %ctaid.x, or with a chain (the header's chain not 0)
 * its ticket, the order in which it started: a block then waits only for
 * blocks that are running already. "@LD" is the table's load (ld.global.nc
 * or ld.param).
 */
static const char prologue_block[] = "\tmov.u32 %ooo_r0, %ctaid.x;\n";
static const char prologue_ticket[] =
	"\t@LD.u64 %ooo_ch, [%ooo_rd0+16];\n"
	"\tsetp.ne.u32 %ooo_ps, %ooo_r1, %ooo_r1;\n"
	"\tsetp.eq.u64 %ooo_pc, %ooo_ch, 0;\n"
	"\tmov.u32 %ooo_r0, %ctaid.x;\n"
	"\t@%ooo_pc bra $ooo_numbered;\n"
	"\tcvta.to.global.u64 %ooo_ch, %ooo_ch;\n"
	"\t@LD.u32 %ooo_tb, [%ooo_rd0+24];\n"
	"\tmov.u32 %ooo_r3, %tid.x;\n"
	"\tmov.u32 %ooo_r4, %tid.y;\n"
	"\tor.b32 %ooo_r3, %ooo_r3, %ooo_r4;\n"
	"\tmov.u32 %ooo_r4, %tid.z;\n"
	"\tor.b32 %ooo_r3, %ooo_r3, %ooo_r4;\n"
	"\tsetp.eq.u32 %ooo_p1, %ooo_r3, 0;\n"
	"\t@%ooo_p1 atom.global.add.u32 %ooo_r0, [%ooo_ch], 1;\n"
	"\t@%ooo_p1 st.shared.u32 [ooo_ticket], %ooo_r0;\n"
	"\tbar.sync 0;\n"
	"\tld.shared.u32 %ooo_r0, [ooo_ticket];\n"
	"\tsub.u32 %ooo_r0, %ooo_r0, %ooo_tb;\n"
	"$ooo_numbered:\n";

/* finding the member of block %ooo_r0 */
static const char prologue[] =
	/* every member the same size: one division finds it */
	"\tsetp.eq.u32 %ooo_p0, %ooo_r2, 0;\n"
	"\t@%ooo_p0 bra $ooo_bsearch;\n"
	"\tdiv.u32 %ooo_r3, %ooo_r0, %ooo_r2;\n"
	"\tsetp.ge.u32 %ooo_p0, %ooo_r3, %ooo_r1;\n"
	"\t@%ooo_p0 bra $ooo_out;\n"
	"\tbra.uni $ooo_found;\n"
	/* else a binary search: the last member with block_start <= block */
	"$ooo_bsearch:\n"
	"\tmov.u32 %ooo_r3, 0;\n"
	"\tmov.u32 %ooo_r4, %ooo_r1;\n"
	"$ooo_search:\n"
	"\tsub.u32 %ooo_r5, %ooo_r4, %ooo_r3;\n"
	"\tsetp.le.u32 %ooo_p0, %ooo_r5, 1;\n"
	"\t@%ooo_p0 bra $ooo_found;\n"
	"\tadd.u32 %ooo_r5, %ooo_r3, %ooo_r4;\n"
	"\tshr.u32 %ooo_r5, %ooo_r5, 1;\n"
	"\tmul.wide.u32 %ooo_rd1, %ooo_r5, 48;\n"
	"\tadd.u64 %ooo_rd1, %ooo_rd0, %ooo_rd1;\n"
	"\t@LD.u32 %ooo_r6, [%ooo_rd1+32];\n"
	"\tsetp.le.u32 %ooo_p0, %ooo_r6, %ooo_r0;\n"
	"\tselp.b32 %ooo_r3, %ooo_r5, %ooo_r3, %ooo_p0;\n"
	"\tselp.b32 %ooo_r4, %ooo_r4, %ooo_r5, %ooo_p0;\n"
	"\tbra.uni $ooo_search;\n"
	"$ooo_found:\n"
	"\tmul.wide.u32 %ooo_rd1, %ooo_r3, 48;\n"
	"\tadd.u64 %ooo_rd1, %ooo_rd0, %ooo_rd1;\n"
	"\t@LD.v4.u32 {%ooo_r6, %ooo_r7, %ooo_gx, %ooo_gy}, [%ooo_rd1+32];\n"
	"\t@LD.v2.u32 {%ooo_gz, %ooo_r8}, [%ooo_rd1+48];\n"
	"\tsub.u32 %ooo_r9, %ooo_r0, %ooo_r6;\n"
	/* a block past the member's grid (a table that does not match the launch) does nothing */
	"\tmul.lo.u32 %ooo_r10, %ooo_gx, %ooo_gy;\n"
	"\tmul.lo.u32 %ooo_r10, %ooo_r10, %ooo_gz;\n"
	"\tsetp.ge.u32 %ooo_p0, %ooo_r9, %ooo_r10;\n"
	"\t@%ooo_p0 bra $ooo_out;\n"
	"\trem.u32 %ooo_vx, %ooo_r9, %ooo_gx;\n"
	"\tdiv.u32 %ooo_r9, %ooo_r9, %ooo_gx;\n"
	"\trem.u32 %ooo_vy, %ooo_r9, %ooo_gy;\n"
	"\tdiv.u32 %ooo_vz, %ooo_r9, %ooo_gy;\n"
	"\tcvt.u64.u32 %ooo_rd2, %ooo_r8;\n"
	"\tadd.u64 %ooo_pbase, %ooo_rd0, %ooo_rd2;\n";

/*
 * A chained member: where its threads count themselves at exit (done
 * counter 1 + its index, when it signals), and the wait for the member it
 * runs after: the block's first thread polls that member's done counter
 * (acquire, GPU scope) until it reaches the target, then the block's
 * barrier lets the others on.
 */
static const char prologue_wait[] =
	"\t@%ooo_pc bra $ooo_go;\n"
	"\t@LD.u32 %ooo_r5, [%ooo_rd1+60];\n"
	"\tsetp.ne.u32 %ooo_ps, %ooo_r5, 0;\n"
	"\tadd.u32 %ooo_r5, %ooo_r3, 1;\n"
	"\tmul.wide.u32 %ooo_rd2, %ooo_r5, 4;\n"
	"\tadd.u64 %ooo_sa, %ooo_ch, %ooo_rd2;\n"
	"\t@LD.v2.u32 {%ooo_r4, %ooo_r5}, [%ooo_rd1+64];\n"
	"\tsetp.eq.u32 %ooo_p0, %ooo_r4, 0;\n"
	"\t@%ooo_p0 bra $ooo_go;\n"
	"\t@!%ooo_p1 bra $ooo_waited;\n"
	"\tmul.wide.u32 %ooo_rd2, %ooo_r4, 4;\n"
	"\tadd.u64 %ooo_rd2, %ooo_ch, %ooo_rd2;\n"
	"$ooo_spin:\n"
	"\tld.acquire.gpu.global.u32 %ooo_r6, [%ooo_rd2];\n"
	"\tsub.u32 %ooo_r6, %ooo_r6, %ooo_r5;\n"
	"\tsetp.lt.s32 %ooo_p0, %ooo_r6, 0;\n"
	"\t@%ooo_p0 bra $ooo_spin;\n"
	"$ooo_waited:\n"
	"\tbar.sync 0;\n"
	"$ooo_go:\n";

/*
 * A chain-capable body's exit block: its returns and exits come here. A
 * member that signals counts its threads in its done counter, one atomic
 * per group of lanes that ends together: the warp barrier orders the
 * lanes' memory operations before the leader's release add.
 */
static const char body_exit[] =
	"\t@!%ooo_ps bra $ooo_out;\n"
	"\tactivemask.b32 %ooo_am;\n"
	"\tpopc.b32 %ooo_ac, %ooo_am;\n"
	"\tmov.u32 %ooo_al, %lanemask_lt;\n"
	"\tand.b32 %ooo_al, %ooo_al, %ooo_am;\n"
	"\tsetp.ne.u32 %ooo_p0, %ooo_al, 0;\n"
	"\tbar.warp.sync %ooo_am;\n"
	"\t@%ooo_p0 bra $ooo_out;\n"
	"\tred.release.gpu.global.add.u32 [%ooo_sa], %ooo_ac;\n"
	"\tret;\n";

/* s with every "@LD" as the table's load */
static void put_ld(struct jit_buf *b, const char *s, bool pt)
{
	for (const char *q = s, *at; *q; q = at + 3) {
		if (!(at = strstr(q, "@LD"))) {
			buf_puts(b, q);
			break;
		}
		buf_put(b, q, (size_t)(at - q));
		buf_puts(b, pt ? "ld.param" : "ld.global.nc");
	}
}

/*
 * The .extern declarations of the bodies' external functions, once each,
 * into b. Returns 0, -ENOMEM, or -EINVAL (err says) when two bodies
 * declare one function differently.
 */
static int print_externs(const struct jit_body *bodies, size_t nbodies, const struct ptx_kernel *const *ks,
			 struct jit_buf *b, char *err, size_t errlen)
{
	struct strmap *seen = strmap_new();
	int rc = 0;

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < nbodies && !rc; i++) {
		const struct ptx_module *m = bodies[i].mod;
		const struct kinfo *ki = kinfo_of(m, ks[i]);

		for (uint32_t j = 0; j < ki->nefuncs; j++) {
			const struct func *f = &m->funcs[ki->efuncs[j]];
			int64_t prev;

			if (strmap_get(seen, tok_s(m, f->name), m->toks[f->name].len, &prev)) {
				const struct ptx_module *pm = bodies[prev >> 32].mod;
				const struct func *pf = &pm->funcs[(uint32_t)prev];
				bool same = pf->hdr_n - pf->link_n == f->hdr_n - f->link_n;

				for (uint32_t t = 0; same && t < f->hdr_n - f->link_n; t++) {
					uint32_t a = pf->hdr_first + pf->link_n + t, c = f->hdr_first + f->link_n + t;

					same = pm->toks[a].len == m->toks[c].len &&
					       memcmp(tok_s(pm, a), tok_s(m, c), m->toks[c].len) == 0;
				}
				if (!same) {
					rc = failf(err, errlen, -EINVAL, "body %zu (%s) declares %.*s unlike body %lld", i,
						   ks[i]->name, (int)m->toks[f->name].len, tok_s(m, f->name),
						   (long long)(prev >> 32));
					break;
				}
				continue;
			}
			if (strmap_put(seen, tok_s(m, f->name), m->toks[f->name].len,
				       ((int64_t)i << 32) | ki->efuncs[j]) < 0) {
				rc = -ENOMEM;
				break;
			}
			buf_puts(b, ".extern ");
			print_toks(m, f->hdr_first + f->link_n, f->hdr_n - f->link_n, NULL, NULL, b);
			buf_puts(b, ";\n");
		}
	}
	strmap_free(seen);
	return rc;
}

/* What the fused kernel takes from all its bodies: the newest PTX, one target, the largest demands. */
struct fuse_head {
	char version[16], target[32], tsuf;
	int tnum;
	uint32_t smem, smem_align, dsmem_align;
	uint32_t reqntid[3], maxntid[3], minncta, maxnreg;
	bool dyn;
};

/*
 * Check that the bodies can be one kernel (each found and fusible, none
 * repeated, targets that join, launch bounds that agree) and merge their
 * heads into *h; ks[i] gets body i's kernel. Returns 0, or -ENOENT or
 * -EINVAL with err saying which body and why.
 */
static int merge_bodies(const struct jit_body *bodies, size_t nbodies, const struct ptx_kernel **ks,
			struct fuse_head *h, char *err, size_t errlen)
{
	*h = (struct fuse_head){ .tnum = -1, .smem_align = 16, .dsmem_align = 16 };
	for (size_t i = 0; i < nbodies; i++) {
		const struct ptx_module *m = bodies[i].mod;
		const struct ptx_kernel *k = m && bodies[i].kernel ? ptx_kernel_find(m, bodies[i].kernel) : NULL;
		char suf;
		int num;

		if (!k)
			return failf(err, errlen, -ENOENT, "body %zu: no kernel %s", i,
				     bodies[i].kernel ? bodies[i].kernel : "(null)");
		if (!k->fusible)
			return failf(err, errlen, -EINVAL, "body %zu (%s): not fusible: %s", i, k->name, k->reason);
		for (size_t j = 0; j < i; j++)
			if (memcmp(ks[j]->hash, k->hash, sizeof(k->hash)) == 0)
				return failf(err, errlen, -EINVAL, "body %zu (%s) repeats body %zu", i, k->name, j);
		ks[i] = k;
		num = target_num(m->target, &suf);
		if (num < 0)
			return failf(err, errlen, -EINVAL, "body %zu (%s): unsupported .target %s", i, k->name, m->target);
		if (h->tnum < 0 || num > h->tnum) {
			if (h->tsuf && num != h->tnum)
				return failf(err, errlen, -EINVAL, "body %zu (%s): .target %s cannot join %s", i, k->name,
					     m->target, h->target);
			h->tnum = num;
			if (!h->tsuf)
				h->tsuf = suf;
			snprintf(h->target, sizeof(h->target), "%s", m->target);
		}
		if (suf && suf != h->tsuf) {
			if (h->tsuf || num != h->tnum)
				return failf(err, errlen, -EINVAL, "body %zu (%s): .target %s cannot join %s", i, k->name,
					     m->target, h->target);
			h->tsuf = suf;
			snprintf(h->target, sizeof(h->target), "%s", m->target);
		}
		if (!h->version[0] || version_cmp(m->version, h->version) > 0)
			snprintf(h->version, sizeof(h->version), "%s", m->version);
		if (k->static_smem > h->smem)
			h->smem = k->static_smem;
		if (kinfo_of(m, k)->smem_align > h->smem_align)
			h->smem_align = kinfo_of(m, k)->smem_align;
		if (k->dynamic_smem) {
			h->dyn = true;
			if (kinfo_of(m, k)->dsmem_align > h->dsmem_align)
				h->dsmem_align = kinfo_of(m, k)->dsmem_align;
		}
		if (k->reqntid[0]) {
			if (h->reqntid[0] && memcmp(h->reqntid, k->reqntid, sizeof(h->reqntid)) != 0)
				return failf(err, errlen, -EINVAL, "body %zu (%s): .reqntid %u,%u,%u conflicts with %u,%u,%u", i,
					     k->name, k->reqntid[0], k->reqntid[1], k->reqntid[2], h->reqntid[0], h->reqntid[1],
					     h->reqntid[2]);
			memcpy(h->reqntid, k->reqntid, sizeof(h->reqntid));
		}
		if (k->maxntid[0] &&
		    (!h->maxntid[0] || (uint64_t)k->maxntid[0] * k->maxntid[1] * k->maxntid[2] <
					    (uint64_t)h->maxntid[0] * h->maxntid[1] * h->maxntid[2]))
			memcpy(h->maxntid, k->maxntid, sizeof(h->maxntid));
		if (k->minnctapersm > h->minncta)
			h->minncta = k->minnctapersm;
		if (k->maxnreg && (!h->maxnreg || k->maxnreg < h->maxnreg))
			h->maxnreg = k->maxnreg;
	}
	if (h->reqntid[0] && h->maxntid[0] &&
	    (uint64_t)h->reqntid[0] * h->reqntid[1] * h->reqntid[2] >
		    (uint64_t)h->maxntid[0] * h->maxntid[1] * h->maxntid[2])
		return failf(err, errlen, -EINVAL, ".reqntid %u,%u,%u of one body exceeds .maxntid %u,%u,%u of another",
			     h->reqntid[0], h->reqntid[1], h->reqntid[2], h->maxntid[0], h->maxntid[1], h->maxntid[2]);
	return 0;
}

int jit_fuse(const struct jit_body *bodies, size_t nbodies, struct jit_fused **out, char *err, size_t errlen)
{
	const struct ptx_kernel *ks[JIT_MAX_BODIES];
	struct jit_fused *fz;
	struct jit_buf b = { 0 };
	struct fuse_head h;
	bool chain = false;
	int rc = 0;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (nbodies == 0 || nbodies > JIT_MAX_BODIES)
		return failf(err, errlen, -EINVAL, "a fused kernel takes 1 to %u bodies, not %zu", JIT_MAX_BODIES, nbodies);
	rc = merge_bodies(bodies, nbodies, ks, &h, err, errlen);
	if (rc)
		return rc;
	if (!(fz = calloc(1, sizeof(*fz))))
		return -ENOMEM;
	jit_fuse_key(bodies, nbodies, NULL, fz->key);
	snprintf(fz->entry, sizeof(fz->entry), "ooo_fused_");
	for (int i = 0; i < 8; i++)
		snprintf(fz->entry + 10 + 2 * i, 3, "%02x", fz->key[i]);
	snprintf(fz->entry_param, sizeof(fz->entry_param), "ooo_fusedp_%s", fz->entry + 10);

	buf_printf(&b, "//\n// ooo fused kernel %s: %zu bod%s\n//\n", fz->entry, nbodies, nbodies == 1 ? "y" : "ies");
	for (size_t i = 0; i < nbodies; i++)
		buf_printf(&b, "// body %zu: %s\n", i, ks[i]->name);
	buf_printf(&b, "\n.version %s\n.target %s\n.address_size 64\n\n", h.version, h.target);
	/* extern functions, once each */
	rc = print_externs(bodies, nbodies, ks, &b, err, errlen);
	if (rc) {
		jit_buf_free(&b);
		free(fz);
		return rc;
	}
	/* chains need acquire/release at GPU scope and activemask (sm_70, PTX 6.2), and every thread to end in the body */
	chain = h.tnum >= 70 && version_cmp(h.version, "6.2") >= 0;
	for (size_t i = 0; i < nbodies && chain; i++)
		chain = chainable(bodies[i].mod, kinfo_of(bodies[i].mod, ks[i]));
	/*
	 * The block's ticket is a static shared word, which would move where the
	 * dynamic shared memory starts: kernels that swizzle theirs (Triton's
	 * matmul on an H100) need its alignment. Bodies with dynamic shared
	 * memory are not chained.
	 */
	if (h.dyn)
		chain = false;
	if (h.smem)
		buf_printf(&b, ".shared .align %" PRIu32 " .b8 ooo_smem[%" PRIu32 "];\n", h.smem_align, h.smem);

	if (h.dyn)
		buf_printf(&b, ".extern .shared .align %" PRIu32 " .b8 ooo_dsmem[];\n", h.dsmem_align);
	if (chain)
		buf_puts(&b, ".shared .align 4 .b32 ooo_ticket;\n");
	/* per body: data copies, function prototypes, function definitions */
	for (size_t i = 0; i < nbodies && !rc; i++) {
		const struct ptx_module *m = bodies[i].mod;
		const struct kinfo *ki = kinfo_of(m, ks[i]);
		struct gen g = { .m = m, .ki = ki, .k = (uint32_t)i };

		buf_printf(&b, "\n// body %zu data and functions\n", i);
		for (uint32_t j = 0; j < ki->ndata; j++) {
			const struct var *v = &m->vars[ki->data[j]];
			uint32_t t = v->first;

			while (tok_is(m, t, ".visible") || tok_is(m, t, ".weak") || tok_is(m, t, ".common"))
				t++;
			g.f = &m->funcs[ki->func];
			for (uint32_t u = t; u < v->first + v->n; u++) {
				if (u == v->name) {
					put_name(&b, (uint32_t)i, m, u);
					if (u + 1 < v->first + v->n && m->toks[u + 1].kind != T_PUNCT)
						buf_put(&b, " ", 1);
					continue;
				}
				print_toks(m, u, 1, NULL, NULL, &b);
				if (u + 1 < v->first + v->n && m->toks[u + 1].kind != T_PUNCT && m->toks[u].kind != T_PUNCT)
					buf_put(&b, " ", 1);
				else if (tok_punct(m, u, ','))
					buf_put(&b, " ", 1);
			}
			buf_puts(&b, ";\n");
		}
		for (uint32_t j = 0; j < ki->nfuncs && !rc; j++) {
			g.f = &m->funcs[ki->funcs[j]];
			g.entry = false;
			if ((rc = fscope_build(m, ki->funcs[j], &g.sc)) < 0)
				break;
			emit_func_header(&g, ki->funcs[j], &b);
			buf_puts(&b, ";\n");
			fscope_free(&g.sc);
		}
		for (uint32_t j = 0; j < ki->nfuncs && !rc; j++) {
			g.f = &m->funcs[ki->funcs[j]];
			g.entry = false;
			if ((rc = fscope_build(m, ki->funcs[j], &g.sc)) < 0)
				break;
			emit_func_header(&g, ki->funcs[j], &b);
			buf_puts(&b, "\n{\n");
			emit_stmts(&g, &b);
			buf_puts(&b, "}\n");
			fscope_free(&g.sc);
		}
	}
	if (rc)
		goto out;
	/* the entries: the same code, reading the table from device memory or from the parameter */
	for (int pt = 0; pt < 2 && !rc; pt++) {
	if (pt)
		buf_printf(&b, "\n.visible .entry %s(\n\t.param .align 16 .b8 ooo_table[%u]\n)\n", fz->entry_param,
			   JIT_PTABLE_BYTES);
	else
		buf_printf(&b, "\n.visible .entry %s(\n\t.param .u64 ooo_desc,\n\t.param .u32 ooo_n,\n\t.param .u32 ooo_uniform\n)\n",
			   fz->entry);
	if (h.reqntid[0])
		buf_printf(&b, ".reqntid %u, %u, %u\n", h.reqntid[0], h.reqntid[1], h.reqntid[2]);
	else if (h.maxntid[0])
		buf_printf(&b, ".maxntid %u, %u, %u\n", h.maxntid[0], h.maxntid[1], h.maxntid[2]);
	if (h.minncta && (h.reqntid[0] || h.maxntid[0]))
		buf_printf(&b, ".minnctapersm %u\n", h.minncta);
	if (h.maxnreg)
		buf_printf(&b, ".maxnreg %u\n", h.maxnreg);
	buf_puts(&b, "{\n");
	buf_puts(&b, prologue_regs);
	if (chain)
		buf_puts(&b, prologue_chain_regs);
	buf_puts(&b, pt ? prologue_param : prologue_global);
	put_ld(&b, chain ? prologue_ticket : prologue_block, pt);
	put_ld(&b, prologue, pt);
	if (chain)
		put_ld(&b, prologue_wait, pt);
	if (nbodies > 1) {
		for (size_t i = 0; i < nbodies; i++)
			buf_printf(&b, "\tsetp.eq.u32 %%ooo_p0, %%ooo_r7, %zu;\n\t@%%ooo_p0 bra $ooo_body%zu;\n", i, i);
		buf_puts(&b, "\ttrap;\n");
	}
	for (size_t i = 0; i < nbodies && !rc; i++) {
		const struct ptx_module *m = bodies[i].mod;
		const struct kinfo *ki = kinfo_of(m, ks[i]);
		struct gen g = { .m = m, .ki = ki, .k = (uint32_t)i, .f = &m->funcs[ki->func], .entry = true,
				 .ptab = pt == 1, .chain = chain };

		if ((rc = fscope_build(m, ki->func, &g.sc)) < 0)
			break;
		buf_printf(&b, "$ooo_body%zu:\n// %s\n{\n", i, ks[i]->name);
		emit_stmts(&g, &b);
		if (chain)
			buf_printf(&b, "}\n$ooo_x%zu:\n%s", i, body_exit);
		else
			buf_puts(&b, "}\n\tret;\n");
		fscope_free(&g.sc);
	}
	buf_puts(&b, "$ooo_out:\n\tret;\n}\n");
	}
	if (!rc)
		rc = b.err;
out:
	if (rc) {
		jit_buf_free(&b);
		free(fz);
		return rc == -ENOMEM ? failf(err, errlen, rc, "out of memory") : rc;
	}
	fz->ptx = b.data;
	fz->ptx_len = b.len;
	fz->nbodies = (uint32_t)nbodies;
	fz->static_smem = h.smem;
	fz->dynamic_smem = h.dyn;
	fz->chain = chain;
	memcpy(fz->reqntid, h.reqntid, sizeof(h.reqntid));
	*out = fz;
	return 0;
}

long jit_desc_build(const struct jit_desc_launch *l, size_t n, void *buf, size_t cap, uint32_t *total_blocks,
		    size_t *need)
{
	uint64_t size, blocks = 0;
	uint8_t *p = buf;

	if (n == 0 || n > (1u << 20))
		return -EINVAL;
	size = sizeof(struct ooo_jit_desc_hdr) + n * sizeof(struct ooo_jit_desc_member);
	for (size_t i = 0; i < n; i++) {
		uint64_t g = (uint64_t)l[i].grid[0] * l[i].grid[1] * l[i].grid[2];

		if (!g || l[i].body >= JIT_MAX_BODIES || (l[i].param_size && !l[i].params) || l[i].param_size > 32768 ||
		    l[i].wait > i)
			return -EINVAL;
		blocks += g;
		if (blocks > 0x7fffffffu)
			return -EINVAL;
		size = (size + OOO_JIT_DESC_ALIGN - 1) & ~(uint64_t)(OOO_JIT_DESC_ALIGN - 1);
		size += l[i].param_size;
	}
	size = (size + OOO_JIT_DESC_ALIGN - 1) & ~(uint64_t)(OOO_JIT_DESC_ALIGN - 1);
	if (need)
		*need = (size_t)size;
	if (size > cap || !buf)
		return -ENOSPC;
	memset(p, 0, (size_t)size);
	{
		struct ooo_jit_desc_hdr h = { .n_members = (uint32_t)n, .total_blocks = (uint32_t)blocks,
					      .version = OOO_JIT_DESC_VERSION };
		uint64_t off = sizeof(h) + n * sizeof(struct ooo_jit_desc_member), start = 0;
		uint64_t g0 = (uint64_t)l[0].grid[0] * l[0].grid[1] * l[0].grid[2];

		h.uniform_blocks = (uint32_t)g0;
		for (size_t i = 1; i < n; i++)
			if ((uint64_t)l[i].grid[0] * l[i].grid[1] * l[i].grid[2] != g0)
				h.uniform_blocks = 0;
		memcpy(p, &h, sizeof(h));
		for (size_t i = 0; i < n; i++) {
			struct ooo_jit_desc_member d = { 0 };

			off = (off + OOO_JIT_DESC_ALIGN - 1) & ~(uint64_t)(OOO_JIT_DESC_ALIGN - 1);
			d.block_start = (uint32_t)start;
			d.body = l[i].body;
			d.grid_x = l[i].grid[0];
			d.grid_y = l[i].grid[1];
			d.grid_z = l[i].grid[2];
			d.param_off = (uint32_t)off;
			d.param_size = l[i].param_size;
			d.signal = l[i].signal;
			d.wait = l[i].wait;
			d.wait_target = l[i].wait ? l[i].wait_target : 0;
			memcpy(p + sizeof(h) + i * sizeof(d), &d, sizeof(d));
			if (l[i].param_size)
				memcpy(p + off, l[i].params, l[i].param_size);
			off += l[i].param_size;
			start += (uint64_t)l[i].grid[0] * l[i].grid[1] * l[i].grid[2];
		}
	}
	if (total_blocks)
		*total_blocks = (uint32_t)blocks;
	return (long)size;
}

void jit_desc_chain(void *table, uint64_t chain, uint32_t ticket_base)
{
	struct ooo_jit_desc_hdr h;

	memcpy(&h, table, sizeof(h));
	h.chain = chain;
	h.ticket_base = ticket_base;
	memcpy(table, &h, sizeof(h));
}

void jit_desc_args(const void *table, uint64_t dev, struct ooo_jit_args *out)
{
	struct ooo_jit_desc_hdr h;

	memcpy(&h, table, sizeof(h));
	out->desc = dev;
	out->n_members = h.n_members;
	out->uniform_blocks = h.uniform_blocks;
}
