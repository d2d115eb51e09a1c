/* SPDX-License-Identifier: MIT */
/*
 * Fencing (daemon/jit/fence.c): which accesses get which guard, what is
 * refused, and that the checker rejects every way a guard can be missing,
 * wrong or bypassed. The corpus-wide checks (ptxas, every kernel) are in
 * tests/jit/test_corpus.sh.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../daemon/jit/jit.h"

#define HDR ".version 8.0\n.target sm_90\n.address_size 64\n"

/* Fence kernel k of src; returns 0 with the text in *out (malloc'd), or the error with err filled. */
static int fence(const char *src, const char *k, char **out, char *err, size_t cap)
{
	struct ptx_module *m = NULL;
	struct jit_buf b = { 0 };
	int rc = ptx_parse(src, strlen(src), &m, err, cap);

	*out = NULL;
	if (rc < 0)
		return rc;
	rc = jit_fence(m, k, &b, err, cap);
	ptx_module_free(m);
	if (rc < 0) {
		jit_buf_free(&b);
		return rc;
	}
	*out = strndup(b.data, b.len);
	jit_buf_free(&b);
	return 0;
}

/* jit_fence_all of src: 0 or the error (the output is dropped). */
static int fence_all(const char *src, char *err, size_t cap)
{
	struct ptx_module *m = NULL;
	struct jit_buf b = { 0 };
	unsigned n = 0;
	int rc = ptx_parse(src, strlen(src), &m, err, cap);

	if (rc < 0)
		return rc;
	rc = jit_fence_all(m, &b, &n, NULL, err, cap);
	ptx_module_free(m);
	jit_buf_free(&b);
	return rc;
}

static int check(const char *ptx, char *err, size_t cap)
{
	unsigned n = 0;

	return jit_fence_check(ptx, strlen(ptx), &n, err, cap);
}

/* Replace the first occurrence of a with b (in a new string). */
static char *replace(const char *s, const char *a, const char *b)
{
	const char *p = strstr(s, a);
	size_t n;
	char *r;

	assert_non_null(p);
	n = strlen(s) - strlen(a) + strlen(b) + 1;
	r = malloc(n);
	assert_non_null(r);
	snprintf(r, n, "%.*s%s%s", (int)(p - s), s, b, p + strlen(a));
	return r;
}

static const char k_all[] = HDR
	".visible .entry k(.param .u64 p, .param .u32 n)\n"
	"{\n"
	"\t.reg .pred %p<3>;\n"
	"\t.reg .b32 %r<8>;\n"
	"\t.reg .b64 %rd<8>;\n"
	"\t.shared .align 16 .b8 sm[64];\n"
	"\tld.param.u64 %rd1, [p];\n"
	"\tld.param.u32 %r1, [n];\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n"
	"\tld.global.u32 %r2, [%rd2+4];\n"
	"\tst.global.v2.u32 [%rd2+-8], {%r2, %r2};\n"
	"\tatom.global.add.u32 %r3, [%rd2], 1;\n"
	"\tred.global.add.u32 [%rd2+12], %r3;\n"
	"\tld.u32 %r4, [%rd1];\n"
	"\tsetp.ne.u32 %p1, %r1, 0;\n"
	"\t@%p1 st.u32 [%rd1+16], %r4;\n"
	"\t@!%p1 ld.global.nc.u32 %r5, [%rd2];\n"
	"\tmov.u32 %r6, sm;\n"
	"\tcp.async.ca.shared.global [%r6], [%rd2+32], 16;\n"
	"\tcp.async.commit_group;\n"
	"\tcp.async.wait_group 0;\n"
	"\tld.shared.u32 %r7, [%r6];\n"
	"\tst.shared.u32 [%r6+4], %r7;\n"
	"\tret;\n"
	"}\n";

static void test_guards(void **state)
{
	char err[256], *out;

	(void)state;
	assert_int_equal(fence(k_all, "k", &out, err, sizeof(err)), 0);
	/* the window as two more parameters, loaded first */
	assert_non_null(strstr(out, ".entry k_ooo_fenced("));
	assert_non_null(strstr(out, ".param .u32 n, .param .u64 ooo_fence_base, .param .u64 ooo_fence_mask)"));
	assert_non_null(strstr(out, "ld.param.u64 %ooo_fb, [ooo_fence_base];"));
	/* the prologue: the window's high halves, base and ~mask, and the violation flag */
	assert_non_null(strstr(out, "mov.b64 {%ooo_fx, %ooo_fbh}, %ooo_fb;\n\tmov.b64 {%ooo_fx, %ooo_fo}, %ooo_fk;\n"
				    "\tnot.b32 %ooo_fo, %ooo_fo;\n\tmov.u32 %ooo_fv, 0;\n"));
	/* global: the address confined to the window (its high half (h & ~mask) | base) and used; outside, the flag */
	assert_non_null(strstr(out, "add.s64 %ooo_fa, %rd2, 4;\n\tmov.b64 {%ooo_fl, %ooo_fh}, %ooo_fa;\n"
				    "\tlop3.b32 %ooo_fn, %ooo_fh, %ooo_fo, %ooo_fbh, 0xea;\n\tmov.b64 %ooo_fm, {%ooo_fl, %ooo_fn};\n"
				    "\txor.b32 %ooo_fx, %ooo_fh, %ooo_fn;\n\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n"
				    "\tld.global.u32 %r2, [%ooo_fm];"));
	assert_non_null(strstr(out, "add.s64 %ooo_fa, %rd2, -8;"));
	assert_non_null(strstr(out, "st.global.v2.u32 [%ooo_fm], {%r2, %r2};"));
	assert_non_null(strstr(out, "atom.global.add.u32 %r3, [%ooo_fm], 1;"));
	assert_non_null(strstr(out, "add.s64 %ooo_fa, %rd2, 12;"));
	/* generic: shared and local pass unchanged */
	assert_non_null(strstr(out, "add.s64 %ooo_fa, %rd1, 0;\n\tmov.b64 {%ooo_fl, %ooo_fh}, %ooo_fa;\n"
				    "\tlop3.b32 %ooo_fn, %ooo_fh, %ooo_fo, %ooo_fbh, 0xea;\n\tisspacep.shared %ooo_fp1, %ooo_fa;\n"
				    "\tisspacep.local %ooo_fp2, %ooo_fa;\n\tor.pred %ooo_fp1, %ooo_fp1, %ooo_fp2;\n"
				    "\tselp.b32 %ooo_fn, %ooo_fh, %ooo_fn, %ooo_fp1;\n\tmov.b64 %ooo_fm, {%ooo_fl, %ooo_fn};\n"));
	/* predicated: the flag only where the access runs */
	assert_non_null(strstr(out, "\t@%p1 or.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\t@%p1 st.u32 [%ooo_fm], %r4;"));
	assert_non_null(
		strstr(out, "\t@!%p1 or.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\t@!%p1 ld.global.nc.u32 %r5, [%ooo_fm];"));
	/* no trap between accesses: one before the function returns, one where its body ends */
	assert_non_null(strstr(out, "\tsetp.ne.u32 %ooo_fp0, %ooo_fv, 0;\n\t@%ooo_fp0 trap;\n\tret;\n"
				    "\tsetp.ne.u32 %ooo_fp0, %ooo_fv, 0;\n\t@%ooo_fp0 trap;\n}"));
	{
		unsigned traps = 0;
		for (const char *q = out; (q = strstr(q, "trap;")); q++)
			traps++;
		assert_int_equal(traps, 2);
	}
	assert_null(strstr(out, "[%rd"));
	/* cp.async: the global source */
	assert_non_null(strstr(out, "add.s64 %ooo_fa, %rd2, 32;"));
	assert_non_null(strstr(out, "cp.async.ca.shared.global [%r6], [%ooo_fm], 16;"));
	/* shared accesses and cp.async bookkeeping are left alone */
	assert_null(strstr(out, "%ooo_fa, %r6"));
	assert_int_equal(check(out, err, sizeof(err)), 0);
	free(out);
}

static void test_refused(void **state)
{
	static const struct {
		const char *body, *why;
	} cases[] = {
		{ "\tcall.uni ext, ();\n", "no body here to fence" },
		{ "\tcall.uni %rd1, (), proto;\n", "indirect call" },
		{ "\ttex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1}];\n", "texture" },
		{ "\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];\n",
		  "bulk" },
		{ "\tld.shared::cluster.u32 %r1, [%r2];\n", "cluster" },
		{ "\tld.global.u32 %r1, [g];\n", "module .global variable" },
		{ "\tmov.u64 %rd1, g;\n", "module .global variable" },
		{ "\tld.global.u32 %r1, [%rd1+%rd2];\n", "not REG[+IMM]" },
		{ "\tmov.u64 %ooo_fb, 0;\n", "reserved name" },
		{ "\tcp.async.ca.shared.shared [%r1], [%r2], 4;\n", "cp.async form" },
		{ "\tst.bulk.weak [%rd1], %rd2, 0;\n", "st.bulk" },
		{ "\tcvta.const.u64 %rd1, %rd2;\n", "constant or parameter space" },
		{ "\tcvta.param.u64 %rd1, %rd2;\n", "constant or parameter space" },
	};
	char src[2048], err[256], *out;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(src, sizeof(src),
			 HDR ".global .u32 g;\n.func f()\n{\n\tret;\n}\n.extern .func ext();\n.global .texref t;\n"
			     ".visible .entry k()\n{\n\t.reg .b32 %%r<4>;\n\t.reg .b64 %%rd<4>;\n\t.reg .f32 %%f<5>;\n%s\tret;\n}\n",
			 cases[i].body);
		err[0] = '\0';
		assert_int_equal(fence(src, "k", &out, err, sizeof(err)), -EINVAL);
		if (!strstr(err, cases[i].why))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].why);
		assert_null(out);
	}
	/* 32-bit addressing */
	assert_int_equal(fence(".version 8.0\n.target sm_90\n.address_size 32\n.visible .entry k()\n{\n\tret;\n}\n", "k",
			       &out, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "address_size 64")); /* the parser already refuses it */
	assert_int_equal(fence(k_all, "nosuch", &out, err, sizeof(err)), -EINVAL);
	/* jit_fence_all: the fence's names anywhere in the module, even in a kernel it would not fence, refuse it whole */
	assert_int_equal(fence_all(HDR ".visible .entry x_ooo_fenced()\n{\n\tret;\n}\n.visible .entry k()\n{\n\tret;\n}\n",
				   err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "reserved name"));
	assert_int_equal(fence_all(HDR ".visible .entry x()\n{\n\t.reg .b32 %ooo_fv;\n\tret;\n}\n.visible .entry k()\n{\n\tret;\n}\n",
				   err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "reserved name"));
	assert_int_equal(fence_all(HDR ".visible .entry x()\n{\n\tret;\n}\n.visible .entry k()\n{\n\tret;\n}\n", err, sizeof(err)),
			 0);
	/* anything after .address_size's value (the line is printed back, and compiled, unparsed) */
	assert_int_equal(fence(".version 8.0\n.target sm_90\n.address_size 64 .visible .entry e() { ret; }\n"
			       ".visible .entry k()\n{\n\tret;\n}\n",
			       "k", &out, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "nothing after it"));
	/* a label, then a .loc that swallows the rest of the line */
	assert_int_equal(fence(HDR ".file 1 \"x.cu\"\n.visible .entry k(.param .u64 p)\n{\n\t.reg .b64 %rd<2>;\n"
				   "\tld.param.u64 %rd1, [p];\nL1: .loc 1 1 0 st.global.u32 [%rd1], 1;\n\tret;\n}\n",
			       "k", &out, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ".loc"));
}

/* Every way of breaking a fenced kernel is caught. */
static void test_checker(void **state)
{
	static const struct {
		const char *from, *to, *why;
	} breaks[] = {
		/* a guard gone: the access through its own address */
		{ "\tld.global.u32 %r2, [%ooo_fm];", "\tld.global.u32 %r2, [%rd2+4];", "confined" },
		/* the guard statements gone, the access still through %ooo_fm (of an earlier guard) */
		{ "\tadd.s64 %ooo_fa, %rd2, -8;\n\tmov.b64 {%ooo_fl, %ooo_fh}, %ooo_fa;\n"
		  "\tlop3.b32 %ooo_fn, %ooo_fh, %ooo_fo, %ooo_fbh, 0xea;\n\tmov.b64 %ooo_fm, {%ooo_fl, %ooo_fn};\n"
		  "\txor.b32 %ooo_fx, %ooo_fh, %ooo_fn;\n\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n",
		  "", "guard" },
		/* the confinement dropped: %ooo_fm is the raw address */
		{ "\tmov.b64 %ooo_fm, {%ooo_fl, %ooo_fn};\n\txor.b32 %ooo_fx, %ooo_fh, %ooo_fn;\n\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n"
		  "\tld.global.u32",
		  "\tmov.b64 %ooo_fm, {%ooo_fl, %ooo_fh};\n\txor.b32 %ooo_fx, %ooo_fh, %ooo_fn;\n\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n"
		  "\tld.global.u32",
		  "exact guard" },
		/* another truth table: (h | ~mask) | base lets the high half through */
		{ "lop3.b32 %ooo_fn, %ooo_fh, %ooo_fo, %ooo_fbh, 0xea;", "lop3.b32 %ooo_fn, %ooo_fh, %ooo_fo, %ooo_fbh, 0xfe;",
		  "exact guard" },
		/* confined with another register than ~mask */
		{ "lop3.b32 %ooo_fn, %ooo_fh, %ooo_fo, %ooo_fbh, 0xea;", "lop3.b32 %ooo_fn, %ooo_fh, %ooo_fx, %ooo_fbh, 0xea;",
		  "exact guard" },
		/* the flag computed so that it never shows a violation */
		{ "xor.b32 %ooo_fx, %ooo_fh, %ooo_fn;", "xor.b32 %ooo_fx, %ooo_fh, %ooo_fh;", "exact guard" },
		/* the guard's address computed from a fence register */
		{ "add.s64 %ooo_fa, %rd2, 4;", "add.s64 %ooo_fa, %ooo_fm, 4;", "names '%ooo_fm'" },
		/* a label between guard and access: a branch could reach the access with any %ooo_fm */
		{ "\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\tld.global.u32",
		  "\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\nL_sneak:\n\tld.global.u32", "guard" },
		/* a second access after the guarded one, reusing its %ooo_fm */
		{ "\tld.global.u32 %r2, [%ooo_fm];\n", "\tld.global.u32 %r2, [%ooo_fm];\n\tst.global.u32 [%ooo_fm], %r2;\n",
		  "guard" },
		/* %ooo_fm changed between guard and access */
		{ "\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\tld.global.u32",
		  "\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\tmov.b64 %ooo_fm, %rd1;\n\tld.global.u32", "guard" },
		/* ~mask or the base overwritten */
		{ "\tcvta.to.global.u64 %rd2, %rd1;\n", "\tcvta.to.global.u64 %rd2, %rd1;\n\tmov.b32 %ooo_fo, -1;\n",
		  "window register" },
		{ "\tcvta.to.global.u64 %rd2, %rd1;\n", "\tcvta.to.global.u64 %rd2, %rd1;\n\tmov.b32 %ooo_fbh, 0;\n",
		  "window register" },
		/* ... through a vector destination */
		{ "\tcvta.to.global.u64 %rd2, %rd1;\n", "\tcvta.to.global.u64 %rd2, %rd1;\n\tmov.b64 {%r1, %ooo_fo}, %rd1;\n",
		  "outside the fence's own statements" },
		/* the violation flag cleared by the kernel */
		{ "\tmov.u32 %r6, sm;\n", "\tmov.u32 %r6, sm;\n\tmov.u32 %ooo_fv, 0;\n", "outside the fence's own statements" },
		/* the window register overwritten */
		{ "\tcvta.to.global.u64 %rd2, %rd1;\n", "\tcvta.to.global.u64 %rd2, %rd1;\n\tmov.u64 %ooo_fb, 0;\n",
		  "window register" },
		/* a shadow of the window register in an inner scope (nobody sets it: the guards would compare with junk) */
		{ "\tcvta.to.global.u64 %rd2, %rd1;\n", "\tcvta.to.global.u64 %rd2, %rd1;\n\t{\n\t.reg .b64 %ooo_fb;\n\t}\n",
		  "outside the fence's own statements" },
		/* the window register read (or written through a vector operand) by the kernel */
		{ "\tcvta.to.global.u64 %rd2, %rd1;\n", "\tcvta.to.global.u64 %rd2, %rd1;\n\tmov.b64 %rd3, %ooo_fk;\n",
		  "outside the fence's own statements" },
		{ "\tcvta.to.global.u64 %rd2, %rd1;\n",
		  "\tcvta.to.global.u64 %rd2, %rd1;\n\tld.param.v2.u64 {%rd3, %ooo_fb}, [p];\n", "outside the fence's own statements" },
		/* the prologue changed */
		{ "ld.param.u64 %ooo_fk, [ooo_fence_mask];", "mov.u64 %ooo_fk, 0;", "prologue" },
		/* a generic access given a global guard (shared/local test dropped: their addresses would be remapped) */
		{ "\tisspacep.shared %ooo_fp1, %ooo_fa;\n\tisspacep.local %ooo_fp2, %ooo_fa;\n\tor.pred %ooo_fp1, %ooo_fp1, %ooo_fp2;\n"
		  "\tselp.b32 %ooo_fn, %ooo_fh, %ooo_fn, %ooo_fp1;\n\tmov.b64 %ooo_fm, {%ooo_fl, %ooo_fn};\n"
		  "\txor.b32 %ooo_fx, %ooo_fh, %ooo_fn;\n\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\tld.u32",
		  "\tmov.b64 %ooo_fm, {%ooo_fl, %ooo_fn};\n\txor.b32 %ooo_fx, %ooo_fh, %ooo_fn;\n\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\tld.u32", "guard" },
		/* a generic access letting every address through the shared/local test */
		{ "\tselp.b32 %ooo_fn, %ooo_fh, %ooo_fn, %ooo_fp1;\n\tmov.b64 %ooo_fm, {%ooo_fl, %ooo_fn};\n"
		  "\txor.b32 %ooo_fx, %ooo_fh, %ooo_fn;\n\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\tld.u32",
		  "\tselp.b32 %ooo_fn, %ooo_fh, %ooo_fn, %ooo_fp0;\n\tmov.b64 %ooo_fm, {%ooo_fl, %ooo_fn};\n"
		  "\txor.b32 %ooo_fx, %ooo_fh, %ooo_fn;\n\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\tld.u32", "exact guard" },
		/* the flag set under another predicate than the access's */
		{ "\t@%p1 or.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\t@%p1 st.u32",
		  "\t@%p2 or.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\t@%p1 st.u32", "exact guard" },
		/* a trap that reads the flag another way */
		{ "\tmov.u32 %r6, sm;\n", "\tmov.u32 %r6, sm;\n\tsetp.eq.u32 %ooo_fp0, %ooo_fv, 0;\n\t@%ooo_fp0 trap;\n",
		  "outside the fence's own statements" },
		/* no report before a return, or where the body ends */
		{ "\tsetp.ne.u32 %ooo_fp0, %ooo_fv, 0;\n\t@%ooo_fp0 trap;\n\tret;", "\tret;", "without the violation report" },
		{ "\tret;\n\tsetp.ne.u32 %ooo_fp0, %ooo_fv, 0;\n\t@%ooo_fp0 trap;\n}", "\tret;\n}",
		  "does not end with the violation report" },
	};
	char err[256], *out;

	(void)state;
	assert_int_equal(fence(k_all, "k", &out, err, sizeof(err)), 0);
	assert_int_equal(check(out, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++) {
		char *bad = replace(out, breaks[i].from, breaks[i].to);

		err[0] = '\0';
		if (check(bad, err, sizeof(err)) != -EINVAL)
			fail_msg("break %zu accepted", i);
		if (!strstr(err, breaks[i].why))
			fail_msg("break %zu: '%s' lacks '%s'", i, err, breaks[i].why);
		free(bad);
	}
	/* an unfenced module has nothing to prove */
	assert_int_equal(check(k_all, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no fenced entry"));
	/* a refused instruction smuggled into a fenced entry */
	{
		char *bad = replace(out, "\tmov.u32 %r6, sm;\n",
				    "\tmov.u32 %r6, sm;\n\ttex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1}];\n");

		assert_int_equal(check(bad, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "texture"));
		free(bad);
	}
	free(out);
}

/* A kernel that calls .funcs: they get fenced copies, and every call hands them the window. */
static const char k_calls[] = HDR
	".func (.param .b32 r) leaf(.param .b64 a)\n"
	"{\n"
	"\t.reg .b64 %rd<2>;\n"
	"\t.reg .b32 %r<2>;\n"
	"\tld.param.u64 %rd1, [a];\n"
	"\tld.global.u32 %r1, [%rd1+8];\n"
	"\tst.param.b32 [r], %r1;\n"
	"\tret;\n"
	"}\n"
	".func mid(.param .b64 a)\n"
	"{\n"
	"\t.reg .b64 %rd<2>;\n"
	"\t.reg .b32 %r<2>;\n"
	"\tld.param.u64 %rd1, [a];\n"
	"\t{\n"
	"\t.param .b64 p0;\n"
	"\tst.param.b64 [p0], %rd1;\n"
	"\t.param .b32 r0;\n"
	"\tcall.uni (r0), leaf, (p0);\n"
	"\tld.param.b32 %r1, [r0];\n"
	"\t}\n"
	"\tst.u32 [%rd1], %r1;\n"
	"\tret;\n"
	"}\n"
	".func nop()\n"
	"{\n"
	"\tret;\n"
	"}\n"
	".visible .entry k(.param .u64 p)\n"
	"{\n"
	"\t.reg .b64 %rd<2>;\n"
	"\tld.param.u64 %rd1, [p];\n"
	"\t{\n"
	"\t.param .b64 q0;\n"
	"\tst.param.b64 [q0], %rd1;\n"
	"\tcall.uni mid, (q0);\n"
	"\t}\n"
	"\tcall.uni nop, ();\n"
	"\tcall.uni nop;\n"
	"\tret;\n"
	"}\n";

static void test_calls(void **state)
{
	char err[256], *out, *bad;

	(void)state;
	assert_int_equal(fence(k_calls, "k", &out, err, sizeof(err)), 0);
	assert_non_null(strstr(out, "leaf_ooo_fenced(.param .b64 a, .param .u64 ooo_fence_base, .param .u64 ooo_fence_mask)"));
	assert_non_null(strstr(out, "nop_ooo_fenced(.param .u64 ooo_fence_base, .param .u64 ooo_fence_mask)"));
	assert_non_null(strstr(out, "call.uni (r0), leaf_ooo_fenced, (p0, ooo_fpb1, ooo_fpk1)"));
	assert_non_null(strstr(out, "call.uni mid_ooo_fenced, (q0, ooo_fpb1, ooo_fpk1)"));
	assert_non_null(strstr(out, "call.uni nop_ooo_fenced, (ooo_fpb2, ooo_fpk2)"));
	assert_non_null(strstr(out, "call.uni nop_ooo_fenced, (ooo_fpb3, ooo_fpk3)"));
	assert_non_null(strstr(out, "add.s64 %ooo_fa, %rd1, 8;")); /* the guard in leaf */
	assert_int_equal(check(out, err, sizeof(err)), 0);
	/* a call to the unfenced original */
	bad = replace(out, "call.uni (r0), leaf_ooo_fenced,", "call.uni (r0), leaf,");
	assert_int_equal(check(bad, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not to a fenced function"));
	free(bad);
	/* the window not passed */
	bad = replace(out, "st.param.b64 [ooo_fpk1], %ooo_fk;", "st.param.b64 [ooo_fpk1], 0;");
	assert_int_equal(check(bad, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "without the window"));
	free(bad);
	/* a guard removed in a fenced .func is found too */
	bad = replace(out, "ld.global.u32 %r1, [%ooo_fm];", "ld.global.u32 %r1, [%rd1+8];");
	assert_int_equal(check(bad, err, sizeof(err)), -EINVAL);
	free(bad);
	free(out);
}

/* Fuse kernel k of the PTX text src (one body); the fused PTX, malloc'd. */
static char *fuse1(const char *src, const char *k)
{
	struct ptx_module *m = NULL;
	struct jit_fused *f = NULL;
	char err[256], *out;

	assert_int_equal(ptx_parse(src, strlen(src), &m, err, sizeof(err)), 0);
	{
		struct jit_body b = { m, k };

		if (jit_fuse(&b, 1, &f, err, sizeof(err)) < 0)
			fail_msg("jit_fuse %s: %s", k, err);
	}
	out = strndup(f->ptx, f->ptx_len);
	jit_fused_free(f);
	ptx_module_free(m);
	return out;
}

static unsigned count(const char *s, const char *what)
{
	unsigned n = 0;

	for (const char *q = s; (q = strstr(q, what)); q++)
		n++;
	return n;
}

/* In a fused kernel a fenced function's flag is a predicate (fence.c, "the fused form"); the confinement stays. */
static void test_fused_form(void **state)
{
	char err[256], *fenced, *out;
	unsigned ors;

	(void)state;
	assert_int_equal(fence(k_all, "k", &fenced, err, sizeof(err)), 0);
	ors = count(fenced, "or.b32 %ooo_fv, %ooo_fv, %ooo_fx;");
	assert_true(ors >= 6);
	out = fuse1(fenced, "k_ooo_fenced");
	/* the body is printed twice: the entry reading the table in memory, the one taking it as its parameter */
	assert_int_equal(count(out, "or.b32 %m0_ooo_fv"), 0);
	assert_int_equal(count(out, "xor.b32 %m0_ooo_fx"), 0);
	assert_int_equal(count(out, "setp.ne.u32 %m0_ooo_fp0, %m0_ooo_fv, 0;"), 2); /* once, after the zeroing */
	assert_non_null(strstr(out, "\tmov.u32 %m0_ooo_fv, 0;\n\tsetp.ne.u32 %m0_ooo_fp0, %m0_ooo_fv, 0;\n"));
	assert_int_equal(count(out, "setp.ne.or.u32 %m0_ooo_fp0, %m0_ooo_fh, %m0_ooo_fn, %m0_ooo_fp0;"), 2 * ors);
	/* predicated accesses keep their predicate on the flag */
	assert_non_null(strstr(out, "\t@%m0_p1 setp.ne.or.u32 %m0_ooo_fp0, %m0_ooo_fh, %m0_ooo_fn, %m0_ooo_fp0;\n"
				    "\t@%m0_p1 st.u32 [%m0_ooo_fm], %m0_r4;"));
	assert_non_null(strstr(out, "\t@!%m0_p1 setp.ne.or.u32 %m0_ooo_fp0, %m0_ooo_fh, %m0_ooo_fn, %m0_ooo_fp0;\n"
				    "\t@!%m0_p1 ld.global.nc.u32 %m0_r5, [%m0_ooo_fm];"));
	/* the confinement is untouched, and every report is the trap on the predicate */
	assert_int_equal(count(out, "lop3.b32 %m0_ooo_fn, %m0_ooo_fh, %m0_ooo_fo, %m0_ooo_fbh, 0xea;"),
			 2 * count(fenced, "lop3.b32 %ooo_fn, %ooo_fh, %ooo_fo, %ooo_fbh, 0xea;"));
	assert_int_equal(count(out, "@%m0_ooo_fp0 trap;"), 2 * count(fenced, "@%ooo_fp0 trap;"));
	free(out);
	free(fenced);

	/* a fenced .func: its own flag, not renamed */
	assert_int_equal(fence(k_calls, "k", &fenced, err, sizeof(err)), 0);
	out = fuse1(fenced, "k_ooo_fenced");
	assert_non_null(strstr(out, "\tsetp.ne.or.u32 %ooo_fp0, %ooo_fh, %ooo_fn, %ooo_fp0;\n\tld.global.u32 %r1, [%ooo_fm];"));
	assert_int_equal(count(out, "or.b32 %ooo_fv"), 0);
	free(out);
	free(fenced);

	/* a kernel that only looks like the fence's statements (no fence prologue) is printed as it is */
	out = fuse1(HDR ".visible .entry j(.param .u64 p)\n{\n\t.reg .b32 %ooo_fv, %ooo_fx;\n\tmov.u32 %ooo_fv, 0;\n"
		    "\tmov.u32 %ooo_fx, 1;\n\tor.b32 %ooo_fv, %ooo_fv, %ooo_fx;\n\tret;\n}\n",
		    "j");
	assert_non_null(strstr(out, "\tor.b32 %m0_ooo_fv, %m0_ooo_fv, %m0_ooo_fx;\n"));
	assert_null(strstr(out, "ooo_fp0")); /* no flag test of the fence's (the fused kernel's own setp.ne are not one) */
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guards),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_checker),
		cmocka_unit_test(test_calls),
		cmocka_unit_test(test_fused_form),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
