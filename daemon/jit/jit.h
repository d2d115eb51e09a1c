/* SPDX-License-Identifier: MIT */
/*
 * The JIT coalescer: a PTX parser, a fusibility analysis, and a generator
 * of fused kernels (one .entry running many member kernels, see
 * <ooo/jit.h> for the descriptor the fused kernel reads).
 *
 * Pure C: no CUDA, no I/O except what the caller passes in. Every function
 * returns 0 or a negative errno and, where it takes `err`, writes a one-line
 * reason there on failure. Nothing here keeps global state; a module is
 * immutable once parsed and may be read from several threads.
 */
#ifndef OOO_JIT_JIT_H
#define OOO_JIT_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ooo/jit.h>

/* Limits on what the parser accepts (bad input is refused, never truncated). */
#define JIT_MAX_PTX_BYTES (64u << 20)
#define JIT_MAX_TOKENS (16u << 20)
#define JIT_MAX_PARAMS 1024u
#define JIT_MAX_BODIES 64u       /* distinct kernels in one fused kernel */
#define JIT_NAME_MAX 1024u       /* identifier length */
#define JIT_REASON_MAX 256u
#define JIT_PTABLE_BYTES OOO_JIT_PTABLE_BYTES

struct jit_buf { /* a growable output buffer; free with jit_buf_free */
	char *data;
	size_t len, cap;
	int err; /* sticky: -ENOMEM after a failed growth */
};
void jit_buf_free(struct jit_buf *b);

struct ptx_module;

struct ptx_param {
	const char *name;
	uint32_t offset; /* in the cuLaunchKernel parameter buffer */
	uint32_t size;
	uint32_t align;
	bool is_ptr;     /* declared .ptr, or a .u64/.b64/.s64 scalar (may hold an address) */
};

struct ptx_kernel {
	const char *name;
	uint32_t nparams;
	const struct ptx_param *params;
	uint32_t param_bytes;   /* size of the parameter buffer */
	uint32_t static_smem;   /* bytes of static .shared the kernel reaches */
	bool dynamic_smem;      /* reaches an .extern .shared array */
	uint32_t maxntid[3];    /* 0 when not declared */
	uint32_t reqntid[3];    /* 0 when not declared */
	uint32_t minnctapersm;  /* 0 when not declared */
	uint32_t maxnreg;       /* 0 when not declared */
	bool fusible;
	char reason[JIT_REASON_MAX]; /* why not, when !fusible */
	uint8_t hash[32];       /* SHA-256 of the kernel's canonical text and all it reaches */
};

/*
 * Parse PTX text (need not be NUL-terminated). On success *out owns a copy
 * of everything it needs. Errors: -EINVAL (syntax, with "line N: reason"),
 * -E2BIG (a limit above), -ENOMEM.
 */
int ptx_parse(const char *text, size_t len, struct ptx_module **out, char *err, size_t errlen);
void ptx_module_free(struct ptx_module *m); /* accepts NULL */

/* Target from .target (e.g. "sm_90"), PTX ISA version from .version ("8.5"). */
const char *ptx_target(const struct ptx_module *m);
const char *ptx_version(const struct ptx_module *m);

size_t ptx_kernel_count(const struct ptx_module *m);
const struct ptx_kernel *ptx_kernel_at(const struct ptx_module *m, size_t i);
const struct ptx_kernel *ptx_kernel_find(const struct ptx_module *m, const char *name);

/* Print the module back as PTX (comments and debug sections dropped). */
int ptx_print(const struct ptx_module *m, struct jit_buf *out);

/*
 * Fencing (fence.c): print the module with a copy of `kernel`, named
 * KERNEL_ooo_fenced and taking two more parameters (ooo_fence_base,
 * ooo_fence_mask = ~(window size - 1); the window at least 4 GiB and
 * aligned to its size: only the high 32 bits of base and mask are read),
 * whose every global and generic memory access goes to its address
 * confined to the window (the address itself when it is in the window;
 * generic addresses in shared or local space pass unchanged); an address
 * outside also makes the kernel trap before it returns. Returns 0, or
 * -EINVAL with the reason when the kernel cannot be fenced completely
 * (calls, textures, bulk copies, module .global variables, ...): such a
 * kernel is never fenced in part.
 */
int jit_fence(const struct ptx_module *m, const char *kernel, struct jit_buf *out, char *err, size_t errlen);
/*
 * The same for every kernel of the module at once (a fenced executor
 * loads only fenced kernels): each kernel that can be fenced is replaced by
 * KERNEL_ooo_fenced (a .func reached by several gets one fenced copy), the
 * others are printed as they are and named in why, one "KERNEL: reason"
 * line each (why may be NULL). *nfenced: the kernels fenced. The whole
 * output passes jit_fence_check. Returns 0, or -EINVAL (a module-wide
 * refusal, or the checker's), -ENOMEM.
 */
int jit_fence_all(const struct ptx_module *m, struct jit_buf *out, unsigned *nfenced, struct jit_buf *why, char *err,
		  size_t errlen);
/*
 * The static proof: every *_ooo_fenced entry of the PTX accesses memory
 * only through the address its guard, right before the access, confined
 * to the window; writes the window registers only in its prologue; and
 * reports a violation before it returns. Returns 0 (with the number of
 * fenced entries), or -EINVAL naming the first offence.
 */
int jit_fence_check(const char *ptx, size_t len, unsigned *nfenced, char *err, size_t errlen);

/* One body of a fused kernel: a kernel of a parsed module. */
struct jit_body {
	const struct ptx_module *mod;
	const char *kernel;
};

struct jit_fused {
	char *ptx;             /* NUL-terminated fused module */
	size_t ptx_len;
	char entry[64];        /* name of the fused .entry (ABI: struct ooo_jit_args, the table in device memory) */
	char entry_param[64];  /* the same kernel taking the table itself as its parameter (JIT_PTABLE_BYTES) */
	uint32_t nbodies;
	uint32_t static_smem;  /* pooled: the largest body's, not the sum */
	bool dynamic_smem;     /* some body uses dynamic shared memory */
	uint32_t reqntid[3];   /* block shape every launch must have, or 0 */
	uint8_t key[32];       /* jit_fuse_key of the bodies */
	/*
	 * Its members may be chained (<ooo/jit.h>: tickets, done counters,
	 * waits): every body's .target is sm_70 or later and .version 6.2 or
	 * later, no .func a body reaches ends its thread with `exit` (a thread
	 * that ended there would never count itself), and no body reaches
	 * global memory where a GPU-scope release and acquire do not order it
	 * (ld.global.nc, ldu, texture and surface instructions, the async
	 * proxy's bulk copies and stores: a member could miss what the member
	 * before it wrote), and no body uses dynamic shared memory (the ticket's
	 * static shared word would move where that starts). Otherwise the
	 * kernel has no chain code and ignores the header's chain.
	 */
	bool chain;
};

/* Static shared memory a chain-capable fused kernel has besides its bodies' (the block's ticket), at most. */
#define JIT_CHAIN_SMEM 16u
void jit_fused_free(struct jit_fused *f); /* accepts NULL */

/*
 * Generate one fused kernel running any of `bodies` (distinct kernels; a
 * homogeneous bundle of N launches of one kernel passes one body). Fails
 * with -EINVAL and "body I (NAME): reason" when a body is not fusible or the
 * bodies cannot share a kernel (different .target, conflicting .reqntid).
 */
int jit_fuse(const struct jit_body *bodies, size_t nbodies, struct jit_fused **out, char *err, size_t errlen);

/* The cache key of a set of bodies: SHA-256 over the body hashes in order, the fused target and `salt` (driver version, ...). */
void jit_fuse_key(const struct jit_body *bodies, size_t nbodies, const char *salt, uint8_t key[32]);

/* One launch of a body inside a bundle, for jit_desc_build. */
struct jit_desc_launch {
	uint32_t body;
	uint32_t grid[3];
	const void *params;
	uint32_t param_size;
	uint32_t wait;        /* chain: 0, or 1 + the index of the earlier launch it runs after */
	uint32_t wait_target; /* chain: that launch's done counter value to wait for */
	bool signal;          /* chain: a later launch waits for this one */
};

/*
 * Lay out the descriptor table of <ooo/jit.h> for `n` launches into buf
 * (cap bytes). Returns the table size, or -EINVAL (empty grid, n == 0,
 * more than 2^31 - 1 blocks, a wait naming no earlier launch) or -ENOSPC
 * (cap too small; *need set when need != NULL). *total_blocks gets the
 * fused grid size. The header's chain is 0 (see jit_desc_chain).
 */
long jit_desc_build(const struct jit_desc_launch *l, size_t n, void *buf, size_t cap, uint32_t *total_blocks,
		    size_t *need);

/* Set a built table's chain counters (device address, 0: none) and ticket base. */
void jit_desc_chain(void *table, uint64_t chain, uint32_t ticket_base);

/*
 * The size jit_desc_build gives a table of n launches whose parameter
 * blocks, each rounded up to OOO_JIT_DESC_ALIGN, add up to `params`.
 */
static inline size_t jit_desc_size(size_t n, size_t params)
{
	size_t head = sizeof(struct ooo_jit_desc_hdr) + n * sizeof(struct ooo_jit_desc_member);

	return ((head + OOO_JIT_DESC_ALIGN - 1) & ~(size_t)(OOO_JIT_DESC_ALIGN - 1)) + params;
}

/* The fused kernel's arguments for a table built by jit_desc_build and copied to device address `dev`. */
void jit_desc_args(const void *table, uint64_t dev, struct ooo_jit_args *out);

#endif
