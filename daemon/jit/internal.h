/* SPDX-License-Identifier: MIT */
/*
 * Internals of the JIT shared by its files. Not an API: see jit.h.
 *
 *   ptx_util.c     output buffers, the string map, token tests, numbers
 *   ptx.c          lexer, parser, symbols and kernels; ptx_parse and the
 *                  module's accessors
 *   ptx_analyse.c  fusibility analysis of one kernel
 *   ptx_print.c    printers, per-function name scopes
 *   fuse.c         fused-kernel generator, descriptor layout
 *   fence.c        fenced kernels and their checker
 *
 * All of it is pure: no I/O, no global state; failures are returned
 * (-ENOMEM, -EINVAL, -E2BIG), never printed.
 *
 * A module is its source text, a token array indexing into it, and
 * statements (token ranges) grouped into module items: line directives,
 * variable declarations and functions. Nothing is rewritten in place:
 * printers walk the tokens and substitute as they go.
 */
#ifndef OOO_JIT_INTERNAL_H
#define OOO_JIT_INTERNAL_H

#include "jit.h"

enum tok_kind { T_IDENT = 1, T_DIR, T_REG, T_NUM, T_STR, T_PUNCT };

struct tok {
	uint32_t off, len, line;
	uint8_t kind;
};

enum stmt_kind { ST_INSN = 1, ST_LABEL, ST_DIR, ST_OPEN, ST_CLOSE };

struct stmt {
	uint32_t first, n; /* tokens, without the ';' or ':' */
	int32_t var;       /* the struct var this declaration made, or -1 */
	uint8_t kind;
};

enum space { SP_NONE, SP_GLOBAL, SP_CONST, SP_SHARED, SP_LOCAL, SP_TEX, SP_PARAM, SP_OTHER };

struct var {
	uint32_t first, n; /* the declaration's tokens, without ';' */
	uint32_t name;     /* token index */
	uint64_t size;     /* 0 when unsized (extern arrays) */
	uint32_t align;
	uint8_t space;
	bool ext, init, unsized, opaque; /* opaque: .texref/.samplerref/.surfref */
	int32_t func;      /* declared in this function's body (demoted .shared), else -1 */
};

struct fparam {
	uint32_t first, n; /* tokens of the declaration */
	uint32_t name;
	uint32_t size, align, offset;
	bool ptr;
};

struct func {
	uint32_t name;             /* token index */
	uint32_t hdr_first, hdr_n; /* linkage .. end of the parameter list */
	uint32_t link_n;           /* leading linkage tokens (.visible, .weak, .extern) */
	uint32_t ret_first, ret_n; /* tokens inside the return list (0 n: none) */
	uint32_t par_first, par_n; /* tokens inside the parameter list */
	uint32_t perf_first, perf_n;
	uint32_t body_first, body_n; /* statements */
	struct fparam *params;
	uint32_t nparams;
	bool entry, ext, has_body;
};

enum item_kind { IT_LINE = 1, IT_VAR, IT_FUNC };

struct item {
	uint8_t kind;
	uint32_t idx; /* statement (IT_LINE), var, or func */
};

/* What a kernel reaches, computed once at parse time for every entry. */
struct kinfo {
	uint32_t func;       /* the entry */
	uint32_t *funcs;     /* reached .func definitions (not the entry), call order */
	uint32_t nfuncs;
	uint32_t *efuncs;    /* reached .extern .func declarations */
	uint32_t nefuncs;
	uint32_t *data;      /* reached initialized .global/.const vars, copied */
	uint32_t ndata;
	uint32_t *smem;      /* reached static .shared vars */
	uint32_t *smem_off;  /* their offsets in the kernel's pooled layout */
	uint32_t nsmem;
	uint32_t smem_align; /* of the static layout */
	uint32_t dsmem_align;
};

struct ptx_module {
	char *src;
	size_t len;
	struct tok *toks;
	uint32_t ntok;
	struct stmt *stmts;
	uint32_t nstmt;
	struct var *vars;
	uint32_t nvar;
	struct func *funcs;
	uint32_t nfunc;
	struct item *items;
	uint32_t nitem;
	char version[16];
	char target[32];
	struct ptx_kernel *kernels;
	struct kinfo *kinfo;
	uint32_t nkern;
	struct strmap *syms; /* module scope: name -> (kind << 28) | index */
};

#define SYM_VAR 1u
#define SYM_FUNC 2u
#define SYM_KIND(v) ((uint32_t)(v) >> 28)
#define SYM_IDX(v) ((uint32_t)(v) & 0x0fffffffu)

/* ---- ptx_util.c ---------------------------------------------------------- */

/*
 * A string -> int64 map over (pointer, length) keys: the map keeps the
 * pointers, not copies, so the caller keeps the keys alive and unchanged
 * while the map lives (module text, mostly).
 */
struct strmap;
struct strmap *strmap_new(void);                     /* NULL when out of memory */
void strmap_free(struct strmap *m);                  /* accepts NULL */
int strmap_put(struct strmap *m, const char *k, size_t n, int64_t v); /* adds or replaces: 0 or -ENOMEM */
bool strmap_get(const struct strmap *m, const char *k, size_t n, int64_t *v); /* found? *v (if v) its value */

/* Token t's text (m->toks[t].len bytes, not NUL-terminated). t < m->ntok. */
static inline const char *tok_s(const struct ptx_module *m, uint32_t t) { return m->src + m->toks[t].off; }
/* Is token t exactly s? Is it the punctuation c? Does it start with p? False for t >= m->ntok. */
bool tok_is(const struct ptx_module *m, uint32_t t, const char *s);
bool tok_punct(const struct ptx_module *m, uint32_t t, char c);
bool tok_prefix(const struct ptx_module *m, uint32_t t, const char *p);

/*
 * Output (struct jit_buf, jit.h): append, keeping b->data NUL-terminated.
 * The first failure sets b->err (-ENOMEM; -EINVAL for a bad format) and
 * every later append does nothing, so a caller checks b->err once at the end.
 */
void buf_put(struct jit_buf *b, const char *s, size_t n);
void buf_puts(struct jit_buf *b, const char *s);
__attribute__((format(printf, 2, 3))) void buf_printf(struct jit_buf *b, const char *fmt, ...);

/* The index of the token after statement s. */
uint32_t stmt_end(const struct stmt *s);

/*
 * A PTX integer literal of n bytes at s (decimal, 0x hex, 0b binary,
 * leading-0 octal, an optional U suffix) into *v. False, *v untouched, for
 * float bit patterns (0f, 0d), anything else, over 64 bits, or over 31
 * bytes; a hex, binary or octal literal above INT64_MAX comes out negative.
 */
bool parse_num(const char *s, size_t n, int64_t *v);

/* The bytes of the PTX type named by n bytes at s (".b32": 4, ".pred": 1, ".f16x2": 4), 0 if not a type. */
int ptx_type_size(const char *s, size_t n);

/* ---- ptx_analyse.c --------------------------------------------------------- */

/*
 * Analyse entry function fi as kernel ki_idx of m: fill the analysis part
 * of m->kernels[ki_idx] (fusible and the reason if not, the performance
 * directives, static_smem, dynamic_smem, hash) and m->kinfo[ki_idx] (what
 * it reaches, the static shared layout). Assumes a parsed module with m->syms
 * built, and the kernel's name and parameters filled in, with ki_idx <
 * m->nkern so that ptx_module_free frees what this allocates. Returns 0,
 * fusible or not (a construct it cannot follow, or reaching too much, is a
 * reason, not an error), or -ENOMEM.
 */
int ptx_analyse_kernel(struct ptx_module *m, uint32_t ki_idx, uint32_t fi);

/* ---- ptx_print.c ----------------------------------------------------------- */

/*
 * Print tokens [first, first+n) of m with PTX spacing. `sub`, when not
 * NULL, may print token t itself and return how many tokens it consumed
 * (>= 1), or 0 to let the token print as is.
 */
typedef uint32_t (*tok_sub_fn)(void *ctx, const struct ptx_module *m, uint32_t t, uint32_t end, struct jit_buf *b);
void print_toks(const struct ptx_module *m, uint32_t first, uint32_t n, tok_sub_fn sub, void *ctx, struct jit_buf *b);

/*
 * Print a function body, one statement per line. `before`, when not NULL,
 * sees each statement first and returns false to leave it out.
 */
typedef bool (*stmt_fn)(void *ctx, const struct ptx_module *m, const struct stmt *s);
void print_body(const struct ptx_module *m, const struct func *f, tok_sub_fn sub, stmt_fn before, void *ctx,
		struct jit_buf *b);

/*
 * Per-function scope of names, for renaming. Keys point into
 * the module's text: a scope lives no longer than its module.
 */
struct fscope {
	struct strmap *labels; /* label -> 1 */
	struct strmap *names;  /* non-% names declared in the body (.param/.reg/.local/.shared) -> var index or -1 */
	struct strmap *regs;   /* plain %names -> 1, parameterized bases -> -(count) - 1 */
};
/*
 * Build the scope of function f of m into *s (the caller's, overwritten).
 * Returns 0 (the caller frees it with fscope_free), -ENOMEM, or -EINVAL
 * (a register declaration it cannot read); on failure *s holds nothing.
 */
int fscope_build(const struct ptx_module *m, uint32_t f, struct fscope *s);
void fscope_free(struct fscope *s); /* frees the maps and zeroes *s; a zeroed scope is fine */
/* Is the register name (len bytes, with its %) declared in s: plainly, or within a %name<N> range? */
bool fscope_has_reg(const struct fscope *s, const char *name, size_t len);

/* ---- fence.c ---------------------------------------------------------------- */

/*
 * fence.c, for fuse.c: the fused form of a fenced function's violation flag
 * (a predicate, see fence.c). jit_fence_fused_func: f is the rewriter's
 * (a *_ooo_fenced name and the exact fence prologue). jit_fence_fused_stmt:
 * what to print for statement s of such a function: as is (KEEP), nothing
 * (DROP: the flag's xor, the report's test), s then `setp.ne.u32 %ooo_fp0,
 * %ooo_fv, 0` (INIT: after the flag's zeroing), or s's predicate then
 * `setp.ne.or.u32 %ooo_fp0, %ooo_fh, %ooo_fn, %ooo_fp0` (FLAG: the flag's or).
 */
enum jit_fence_fz { JIT_FZ_KEEP, JIT_FZ_DROP, JIT_FZ_INIT, JIT_FZ_FLAG };
bool jit_fence_fused_func(const struct ptx_module *m, const struct func *f);
enum jit_fence_fz jit_fence_fused_stmt(const struct ptx_module *m, const struct stmt *s, struct jit_buf *scratch);

#endif
