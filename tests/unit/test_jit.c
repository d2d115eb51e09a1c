/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the JIT (daemon/jit): parser limits and errors, parameter
 * layout, fusibility verdicts with their reasons, the fused text, and the
 * descriptor layout. ptxas acceptance of real nvcc output is
 * tests/jit/test_corpus.sh; bit-identical results are tests/gpu/test_jit.sh.
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

#define HDR ".version 8.5\n.target sm_90\n.address_size 64\n"

static struct ptx_module *parse_ok(const char *text)
{
	struct ptx_module *m = NULL;
	char err[256];
	int rc = ptx_parse(text, strlen(text), &m, err, sizeof(err));

	if (rc)
		print_error("parse failed: %s\n", err);
	assert_int_equal(rc, 0);
	assert_non_null(m);
	return m;
}

static void parse_fails(const char *text, int want, const char *substr)
{
	struct ptx_module *m = (struct ptx_module *)1;
	char err[256];
	int rc = ptx_parse(text, strlen(text), &m, err, sizeof(err));

	assert_int_equal(rc, want);
	assert_null(m);
	if (substr && !strstr(err, substr)) {
		print_error("error '%s' lacks '%s'\n", err, substr);
		fail();
	}
}

/* The verdict for kernel `k` of `text`: NULL when fusible, else the reason. */
static char reason_buf[JIT_REASON_MAX];
static const char *verdict(const char *text, const char *k)
{
	struct ptx_module *m = parse_ok(text);
	const struct ptx_kernel *pk = ptx_kernel_find(m, k);

	assert_non_null(pk);
	if (pk->fusible) {
		ptx_module_free(m);
		return NULL;
	}
	snprintf(reason_buf, sizeof(reason_buf), "%s", pk->reason);
	ptx_module_free(m);
	return reason_buf;
}

static void expect_reject(const char *text, const char *k, const char *substr)
{
	const char *r = verdict(text, k);

	if (!r) {
		print_error("kernel %s accepted, wanted a reason with '%s'\n", k, substr);
		fail();
	}
	if (!strstr(r, substr)) {
		print_error("reason '%s' lacks '%s'\n", r, substr);
		fail();
	}
}

static const char vadd[] = HDR
	".visible .entry vadd(\n"
	"  .param .u64 .ptr .global .align 1 vadd_param_0,\n"
	"  .param .u64 vadd_param_1,\n"
	"  .param .u32 vadd_param_2\n"
	")\n"
	".maxntid 256, 1, 1\n"
	"{\n"
	"  .reg .pred %p<2>;\n  .reg .b32 %r<6>;\n  .reg .f32 %f<3>;\n  .reg .b64 %rd<8>;\n"
	"  ld.param.u64 %rd1, [vadd_param_0];\n"
	"  ld.param.u64 %rd2, [vadd_param_1];\n"
	"  ld.param.u32 %r2, [vadd_param_2];\n"
	"  mov.u32 %r3, %ctaid.x;\n  mov.u32 %r4, %ntid.x;\n  mov.u32 %r5, %tid.x;\n"
	"  mad.lo.s32 %r1, %r3, %r4, %r5;\n"
	"  setp.ge.s32 %p1, %r1, %r2;\n"
	"  @%p1 bra $L__BB0_2;\n"
	"  cvta.to.global.u64 %rd3, %rd1;\n  mul.wide.s32 %rd4, %r1, 4;\n  add.s64 %rd5, %rd3, %rd4;\n"
	"  ld.global.f32 %f1, [%rd5];\n  add.f32 %f2, %f1, 0f3F800000;\n"
	"  cvta.to.global.u64 %rd6, %rd2;\n  add.s64 %rd7, %rd6, %rd4;\n  st.global.f32 [%rd7], %f2;\n"
	"$L__BB0_2:\n  ret;\n"
	"}\n";

static void test_parse_layout(void **state)
{
	struct ptx_module *m = parse_ok(HDR ".visible .entry k(\n"
					     " .param .u8 k_param_0,\n"
					     " .param .align 8 .b8 k_param_1[12],\n"
					     " .param .f64 k_param_2,\n"
					     " .param .u16 k_param_3,\n"
					     " .param .align 16 .b8 k_param_4[32]\n"
					     ")\n{\n ret;\n}\n");
	const struct ptx_kernel *k = ptx_kernel_find(m, "k");

	assert_non_null(k);
	assert_int_equal(k->nparams, 5);
	assert_int_equal(k->params[0].offset, 0);
	assert_int_equal(k->params[0].size, 1);
	assert_int_equal(k->params[1].offset, 8);
	assert_int_equal(k->params[1].size, 12);
	assert_int_equal(k->params[1].align, 8);
	assert_int_equal(k->params[2].offset, 24);
	assert_false(k->params[2].is_ptr);
	assert_int_equal(k->params[3].offset, 32);
	assert_int_equal(k->params[4].offset, 48);
	assert_int_equal(k->param_bytes, 80);
	assert_true(k->fusible);
	assert_string_equal(ptx_target(m), "sm_90");
	assert_string_equal(ptx_version(m), "8.5");
	ptx_module_free(m);

	m = parse_ok(vadd);
	k = ptx_kernel_find(m, "vadd");
	assert_true(k->fusible);
	assert_true(k->params[0].is_ptr);
	assert_true(k->params[1].is_ptr);
	assert_int_equal(k->param_bytes, 20);
	assert_int_equal(k->maxntid[0], 256);
	assert_int_equal(k->maxntid[1], 1);
	assert_null(ptx_kernel_find(m, "nope"));
	assert_int_equal(ptx_kernel_count(m), 1);
	ptx_module_free(m);
}

static void test_parse_errors(void **state)
{
	char *big;

	parse_fails("", -EINVAL, "missing .version");
	parse_fails(HDR ".visible .entry k(\n.param .u32 a\n)\n{\n ret;\n", -EINVAL, "without '}'");
	parse_fails(HDR ".visible .entry k()\n{\n mov.u32 %r1, 1\n}\n", -EINVAL, "line");
	parse_fails(HDR "/* never closed", -EINVAL, "unterminated comment");
	parse_fails(HDR ".global .u32 \"x", -EINVAL, "unterminated string");
	parse_fails(HDR ".visible .entry k()\n{\n\x01\n}\n", -EINVAL, "unexpected character");
	parse_fails(HDR "mov.u32 %r1, 2;\n", -EINVAL, "module scope");
	parse_fails(HDR ".address_size 32\n", -EINVAL, "address_size");
	parse_fails(HDR ".global .u32 x;\n.global .u32 x;\n", -EINVAL, "declared twice");
	parse_fails(HDR ".visible .entry k(.param .u32 a[0x7fffffffff])\n{\nret;\n}\n", -EINVAL, NULL);
	/* nesting limit */
	{
		char buf[4096];
		size_t n = (size_t)snprintf(buf, sizeof(buf), HDR ".visible .entry k()\n{\n");

		for (int i = 0; i < 70; i++)
			buf[n++] = '{';
		for (int i = 0; i < 71; i++)
			buf[n++] = '}';
		buf[n] = '\0';
		parse_fails(buf, -EINVAL, "nested");
	}
	/* token length limit */
	big = malloc(8192);
	assert_non_null(big);
	memset(big, 'a', 8191);
	memcpy(big, HDR, strlen(HDR));
	big[8191] = '\0';
	parse_fails(big, -EINVAL, "longer than");
	free(big);
	/* the size limit is checked before anything is read */
	{
		struct ptx_module *m = NULL;

		assert_int_equal(ptx_parse("", (size_t)JIT_MAX_PTX_BYTES + 1, &m, NULL, 0), -E2BIG);
		assert_null(m);
	}
	ptx_module_free(NULL);
}

static void test_debug_dropped(void **state)
{
	struct ptx_module *m = parse_ok(HDR ".file 1 \"a.cu\"\n@@DWARF .section junk\n"
					     ".visible .entry k()\n{\n.loc 1 2 3\n ret;\n}\n"
					     ".section .debug_info\n{\n.b32 1\n.b8 2\n}\n");
	struct jit_buf b = { 0 };

	assert_int_equal(ptx_print(m, &b), 0);
	assert_null(strstr(b.data, ".loc"));
	assert_null(strstr(b.data, ".section"));
	assert_null(strstr(b.data, ".file"));
	assert_non_null(strstr(b.data, ".entry k"));
	jit_buf_free(&b);
	ptx_module_free(m);

	/* nvcc -G: the target says debug, which must go with the debug sections */
	m = parse_ok(".version 8.5\n.target sm_90, debug\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n"
		     ".section .debug_abbrev\n{\n.b8 1\n}\n");
	assert_int_equal(ptx_print(m, &b), 0);
	assert_non_null(strstr(b.data, ".target sm_90\n"));
	assert_null(strstr(b.data, "debug"));
	assert_string_equal(ptx_target(m), "sm_90");
	jit_buf_free(&b);
	ptx_module_free(m);
}

/* A label and an instruction of the same text must not hash alike. */
static void test_hash_kinds(void **state)
{
	struct ptx_module *a = parse_ok(HDR ".visible .entry k()\n{\n ret;\n ret;\n}\n");
	struct ptx_module *b = parse_ok(HDR ".visible .entry k()\n{\nret:\n ret;\n}\n");

	assert_memory_not_equal(ptx_kernel_find(a, "k")->hash, ptx_kernel_find(b, "k")->hash, 32);
	ptx_module_free(a);
	ptx_module_free(b);
}

static void test_round_trip_hash(void **state)
{
	struct ptx_module *m = parse_ok(vadd), *m2;
	struct jit_buf b = { 0 };

	assert_int_equal(ptx_print(m, &b), 0);
	m2 = parse_ok(b.data);
	assert_memory_equal(ptx_kernel_find(m, "vadd")->hash, ptx_kernel_find(m2, "vadd")->hash, 32);
	jit_buf_free(&b);
	ptx_module_free(m2);
	ptx_module_free(m);
}

#define ENTRY(body) HDR ".visible .entry k(.param .u64 k_param_0)\n{\n .reg .b32 %r<9>;\n .reg .b64 %rd<9>;\n" body "\n ret;\n}\n"

static void test_reject_reasons(void **state)
{
	expect_reject(HDR ".global .align 4 .u32 counter;\n" ".visible .entry k()\n{\n .reg .b32 %r<3>;\n"
			  " ld.global.u32 %r1, [counter];\n ret;\n}\n",
		      "k", "mutable");
	expect_reject(HDR ".const .align 4 .b8 coef[64];\n" ".visible .entry k()\n{\n .reg .f32 %f<3>;\n"
			  " ld.const.f32 %f1, [coef+4];\n ret;\n}\n",
		      "k", "host-written");
	expect_reject(ENTRY(" mov.u32 %r1, %envreg2;"), "k", "grid");
	expect_reject(ENTRY(" mov.u32 %r1, %cluster_ctarank;"), "k", "cluster");
	expect_reject(HDR ".visible .entry k() .reqnctapercluster 2, 1, 1\n{\n ret;\n}\n", "k", "cluster");
	expect_reject(ENTRY(" barrier.cluster.arrive;"), "k", "cluster");
	expect_reject(ENTRY(" mov.u64 %rd1, k_param_0;"), "k", "address of kernel parameter");
	expect_reject(ENTRY(" ld.param.u64 %rd1, [%rd2];"), "k", "address of kernel parameter");
	expect_reject(ENTRY(" cvta.param.u64 %rd1, %rd2;"), "k", "address of kernel parameter");
	expect_reject(ENTRY(" mov.u32 %r1, %q9;"), "k", "undeclared register");
	expect_reject(ENTRY(" mov.u32 %r1, nothing;"), "k", "unknown symbol");
	expect_reject(ENTRY(" mov.u32 %r1, %dynamic_smem_size;"), "k", "dynamic_smem_size");
	expect_reject(ENTRY(" griddepcontrol.wait;"), "k", "dependent launch");
	expect_reject(ENTRY(" .weird 1;"), "k", "unsupported directive");
	expect_reject(HDR ".func f()\n{\n .reg .b32 %r<2>;\n mov.u32 %r1, %ctaid.x;\n ret;\n}\n"
			  ".visible .entry k()\n{\n call.uni f, ();\n ret;\n}\n",
		      "k", "%ctaid");
	expect_reject(HDR ".visible .entry k()\n{\n .reg .b64 %rd<2>;\n"
			  " prototype_0 : .callprototype ()_ ();\n call %rd1, (), prototype_0;\n ret;\n}\n",
		      "k", "indirect call");
	expect_reject(HDR ".extern .func cudaLaunchDeviceV2(.param .b64 a, .param .b64 b);\n"
			  ".visible .entry k()\n{\n call.uni cudaLaunchDeviceV2, (0, 0);\n ret;\n}\n",
		      "k", "dynamic parallelism");
	expect_reject(HDR ".extern .func secret();\n.visible .entry k()\n{\n call.uni secret, ();\n ret;\n}\n", "k",
		      "external function");
	/* a kernel that writes its own initialized table */
	expect_reject(HDR ".global .align 4 .b8 tbl[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
			  ".visible .entry k()\n{\n .reg .b32 %r<3>;\n .reg .b64 %rd<4>;\n"
			  " mov.u64 %rd1, tbl;\n add.s64 %rd2, %rd1, 4;\n st.global.u32 [%rd2], %r1;\n ret;\n}\n",
		      "k", "may be written");
	/* ... or leaks its address through memory */
	expect_reject(HDR ".global .align 4 .b8 tbl[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
			  ".visible .entry k(.param .u64 k_param_0)\n{\n .reg .b64 %rd<4>;\n"
			  " ld.param.u64 %rd3, [k_param_0];\n mov.u64 %rd1, tbl;\n st.global.u64 [%rd3], %rd1;\n ret;\n}\n",
		      "k", "escapes");
	expect_reject(HDR ".visible .entry k() .maxntid 128, 1, 1 .reqntid 128, 1, 1\n{\n ret;\n}\n", "k",
		      "both .reqntid and .maxntid");
	/* names the generator adds, and declarations that hide other names */
	expect_reject(HDR ".visible .entry k(.param .u64 ooo_desc)\n{\n .reg .b64 %rd<3>;\n"
			  " ld.param.u64 %rd1, [ooo_desc];\n ret;\n}\n",
		      "k", "reserved name");
	expect_reject(HDR ".global .u32 cnt;\n.visible .entry k()\n{\n atom.global.add.u32 _, [cnt], 1;\n"
			  " { .reg .b32 cnt; }\n ret;\n}\n",
		      "k", "hides another name");
	expect_reject(ENTRY(" ld.param.u64 %rd1, [k_param_0];\n { .param .b64 k_param_0; }"), "k", "hides another name");
	/* parameter reads stay inside the parameter */
	expect_reject(ENTRY(" ld.param.u64 %rd1, [k_param_0+8];"), "k", "reads outside kernel parameter");
	expect_reject(ENTRY(" ld.param.v2.u64 {%rd1, %rd2}, [k_param_0];"), "k", "reads outside kernel parameter");
	assert_null(verdict(ENTRY(" ld.param.u32 %r1, [k_param_0+4];"), "k"));
	/* nested or unsized .shared in a kernel body */
	expect_reject(ENTRY(" { .shared .align 4 .b8 b[16];\n st.shared.u32 [b], 7; }"), "k", ".shared");
	/* an address compared bit by bit would launder the taint through predicates */
	expect_reject(HDR ".global .align 4 .b8 tbl[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
			  ".visible .entry k()\n{\n .reg .pred %p<2>;\n .reg .b64 %rd<5>;\n"
			  " mov.u64 %rd2, tbl;\n and.b64 %rd4, %rd2, 4;\n setp.ne.u64 %p1, %rd4, 0;\n"
			  " @%p1 or.b64 %rd3, %rd3, 4;\n st.global.u32 [%rd3], 7;\n ret;\n}\n",
		      "k", "compares the address");
}

static void test_accepts(void **state)
{
	/* reads of an initialized table through derived pointers, as sinf does */
	assert_null(verdict(HDR ".global .align 4 .b8 tbl[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
			       ".visible .entry k(.param .u64 k_param_0)\n{\n .reg .b32 %r<3>;\n .reg .b64 %rd<4>;\n"
			       " mov.u64 %rd1, tbl;\n add.s64 %rd2, %rd1, 4;\n ld.global.nc.u32 %r1, [%rd2];\n"
			       " ld.param.u64 %rd3, [k_param_0];\n st.global.u32 [%rd3], %r1;\n ret;\n}\n",
			   "k"));
	/* an initialized __constant__ table, and unreferenced module objects */
	assert_null(verdict(HDR ".const .align 4 .b8 c[8] = {1, 0, 0, 0, 2, 0, 0, 0};\n"
			       ".global .align 1 .b8 _ZN4cuda3std6ignoreE[1];\n"
			       ".visible .entry k()\n{\n .reg .b32 %r<3>;\n ld.const.u32 %r1, [c+4];\n ret;\n}\n",
			   "k"));
	/* a string handed to vprintf (only read there), but not to another function */
	assert_null(verdict(HDR ".extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);\n"
			       ".global .align 1 .b8 $str[3] = {104, 105, 0};\n"
			       ".visible .entry k()\n{\n .reg .b32 %r<2>;\n .reg .b64 %rd<4>;\n"
			       " mov.u64 %rd1, $str;\n cvta.global.u64 %rd2, %rd1;\n"
			       " { .param .b64 param0;\n st.param.b64 [param0+0], %rd2;\n .param .b64 param1;\n"
			       " st.param.b64 [param1+0], 0;\n .param .b32 retval0;\n"
			       " call.uni (retval0), vprintf, (param0, param1);\n }\n ret;\n}\n",
			   "k"));
	expect_reject(HDR ".extern .func (.param .b64 r) malloc(.param .b64 a);\n"
			  ".global .align 1 .b8 $str[3] = {104, 105, 0};\n"
			  ".visible .entry k()\n{\n .reg .b64 %rd<4>;\n mov.u64 %rd1, $str;\n"
			  " { .param .b64 param0;\n st.param.b64 [param0+0], %rd1;\n .param .b64 retval0;\n"
			  " call.uni (retval0), malloc, (param0);\n }\n ret;\n}\n",
		      "k", "escapes");
	/* shuffles, votes, barriers, predicated exits, a noinline helper */
	assert_null(verdict(HDR ".func (.param .b32 r) h(.param .b32 a)\n{\n .reg .b32 %r<3>;\n"
			       " ld.param.u32 %r1, [a];\n add.s32 %r2, %r1, 1;\n st.param.b32 [r+0], %r2;\n ret;\n}\n"
			       ".visible .entry k()\n{\n .reg .pred %p<3>;\n .reg .b32 %r<9>;\n"
			       " mov.u32 %r1, %tid.x;\n shfl.sync.down.b32 %r2|%p1, %r1, 1, 31, -1;\n"
			       " vote.sync.ballot.b32 %r3, %p1, -1;\n bar.sync 0;\n"
			       " { .reg .b32 tmp;\n .param .b32 param0;\n st.param.b32 [param0+0], %r1;\n"
			       " .param .b32 retval0;\n call.uni (retval0), h, (param0);\n ld.param.b32 %r4, [retval0+0];\n }\n"
			       " @%p1 exit;\n ret;\n}\n",
			   "k"));
}

static struct jit_fused *fuse_ok(const struct jit_body *b, size_t n)
{
	struct jit_fused *f = NULL;
	char err[256];
	int rc = jit_fuse(b, n, &f, err, sizeof(err));

	if (rc)
		print_error("fuse failed: %s\n", err);
	assert_int_equal(rc, 0);
	return f;
}

static void test_fuse_homogeneous(void **state)
{
	struct ptx_module *m = parse_ok(vadd);
	struct jit_body b = { m, "vadd" };
	struct jit_fused *f = fuse_ok(&b, 1);

	assert_int_equal(f->nbodies, 1);
	assert_int_equal(strncmp(f->entry, "ooo_fused_", 10), 0);
	/* parameters come from the descriptor, block indices are virtual */
	assert_non_null(strstr(f->ptx, "ld.global.nc.u64 %m0_rd1, [%ooo_pbase];"));
	assert_non_null(strstr(f->ptx, "ld.global.nc.u32 %m0_r2, [%ooo_pbase+16];"));
	assert_non_null(strstr(f->ptx, "mov.u32 %m0_r3, %ooo_vx;"));
	assert_non_null(strstr(f->ptx, "bra m0_$L__BB0_2;"));
	assert_non_null(strstr(f->ptx, ".maxntid 256, 1, 1"));
	assert_null(strstr(f->ptx, "vadd_param_"));
	/* the same bodies give the same kernel and key */
	{
		struct jit_fused *g = fuse_ok(&b, 1);

		assert_string_equal(f->ptx, g->ptx);
		assert_memory_equal(f->key, g->key, 32);
		jit_fused_free(g);
	}
	jit_fused_free(f);
	jit_fused_free(NULL);
	ptx_module_free(m);
}

static const char redmod[] = HDR
	".shared .align 4 .b8 s_a[512];\n"
	".extern .shared .align 16 .b8 dyn[];\n"
	".visible .entry red(.param .u64 red_param_0)\n{\n"
	" .reg .b32 %r<9>;\n .reg .b64 %rd<3>;\n"
	" .shared .align 8 .b8 s_b[64];\n"
	" mov.u32 %r1, s_a;\n ld.shared.u32 %r2, [s_b+8];\n ld.shared.u32 %r3, [dyn+4];\n"
	" mov.u32 %r4, %nctaid.y;\n"
	"$L__BB0_1:\n ret;\n}\n"
	".visible .entry other()\n{\n .reg .b32 %r<3>;\n .shared .align 4 .b8 s_c[2048];\n"
	" mov.u32 %r1, s_c;\n ret;\n}\n";

static void test_fuse_heterogeneous(void **state)
{
	struct ptx_module *a = parse_ok(vadd), *r = parse_ok(redmod);
	struct jit_body b[3] = { { a, "vadd" }, { r, "red" }, { r, "other" } };
	struct jit_fused *f = fuse_ok(b, 3);
	const struct ptx_kernel *kr = ptx_kernel_find(r, "red");

	assert_int_equal(kr->static_smem, 576); /* 512 + 64, s_b 8-aligned */
	assert_true(kr->dynamic_smem);
	assert_int_equal(f->nbodies, 3);
	assert_int_equal(f->static_smem, 2048); /* the largest body, not the sum */
	assert_true(f->dynamic_smem);
	assert_false(f->chain); /* a ticket in static shared memory would move where red's dynamic one starts */
	assert_null(strstr(f->ptx, "ooo_ticket"));
	assert_non_null(strstr(f->ptx, ".shared .align 16 .b8 ooo_smem[2048];"));
	assert_non_null(strstr(f->ptx, "mov.u32 %m1_r1, ooo_smem;"));
	assert_non_null(strstr(f->ptx, "ld.shared.u32 %m1_r2, [ooo_smem+520];"));
	assert_non_null(strstr(f->ptx, "ld.shared.u32 %m1_r3, [ooo_dsmem+4];"));
	assert_non_null(strstr(f->ptx, "mov.u32 %m1_r4, %ooo_gy;"));
	assert_non_null(strstr(f->ptx, "mov.u32 %m2_r1, ooo_smem;"));
	assert_non_null(strstr(f->ptx, "m1_$L__BB0_1:"));
	assert_non_null(strstr(f->ptx, "@%ooo_p0 bra $ooo_body2;"));
	assert_null(strstr(f->ptx, "s_b"));
	/* the demoted declaration is gone */
	assert_null(strstr(f->ptx, ".shared .align 8"));
	jit_fused_free(f);

	/* repeated body, unknown kernel, empty set, too many */
	{
		struct jit_body d[2] = { { a, "vadd" }, { a, "vadd" } };
		struct jit_body u = { a, "missing" };
		struct jit_fused *x = NULL;
		char err[256];

		assert_int_equal(jit_fuse(d, 2, &x, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "repeats"));
		assert_int_equal(jit_fuse(&u, 1, &x, err, sizeof(err)), -ENOENT);
		assert_int_equal(jit_fuse(d, 0, &x, err, sizeof(err)), -EINVAL);
		assert_int_equal(jit_fuse(d, JIT_MAX_BODIES + 1, &x, err, sizeof(err)), -EINVAL);
		assert_null(x);
	}
	ptx_module_free(a);
	ptx_module_free(r);
}

static void test_fuse_refusals(void **state)
{
	struct ptx_module *bad = parse_ok(HDR ".global .u32 g;\n.visible .entry k()\n{\n .reg .b32 %r<2>;\n"
					       " ld.global.u32 %r1, [g];\n ret;\n}\n");
	struct ptx_module *a = parse_ok(vadd);
	struct ptx_module *q1 = parse_ok(HDR ".visible .entry q() .reqntid 128, 1, 1\n{\n ret;\n}\n");
	struct ptx_module *q2 = parse_ok(HDR ".visible .entry q() .reqntid 64, 1, 1\n{\n ret;\n}\n");
	struct ptx_module *t80 = parse_ok(".version 8.0\n.target sm_80\n.address_size 64\n"
					  ".visible .entry t()\n{\n ret;\n}\n");
	struct ptx_module *t90a = parse_ok(".version 8.0\n.target sm_90a\n.address_size 64\n"
					   ".visible .entry u()\n{\n ret;\n}\n");
	struct jit_fused *f = NULL;
	char err[256];

	{
		struct jit_body b[2] = { { a, "vadd" }, { bad, "k" } };

		assert_int_equal(jit_fuse(b, 2, &f, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "body 1 (k)"));
		assert_non_null(strstr(err, "mutable"));
	}
	{
		struct jit_body b[2] = { { q1, "q" }, { q2, "q" } };

		assert_int_equal(jit_fuse(b, 2, &f, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "conflicts"));
	}
	{
		/* sm_80 code joins sm_90a: the fused module targets sm_90a */
		struct jit_body b[2] = { { t80, "t" }, { t90a, "u" } };

		f = fuse_ok(b, 2);
		assert_non_null(strstr(f->ptx, ".target sm_90a\n"));
		jit_fused_free(f);
		f = NULL;
	}
	{
		/* .reqntid wins over .maxntid when it fits */
		struct jit_body b[2] = { { q1, "q" }, { a, "vadd" } };

		f = fuse_ok(b, 2);
		assert_non_null(strstr(f->ptx, ".reqntid 128, 1, 1"));
		assert_null(strstr(f->ptx, ".maxntid"));
		assert_int_equal(f->reqntid[0], 128);
		jit_fused_free(f);
	}
	ptx_module_free(bad);
	ptx_module_free(a);
	ptx_module_free(q1);
	ptx_module_free(q2);
	ptx_module_free(t80);
	ptx_module_free(t90a);
}

/*
 * Chains: a kernel at sm_70+ and PTX 6.2+ gets the chain code (tickets,
 * the wait, every return through the body's exit block, which counts the
 * threads); an older target, or a .func that ends its thread with exit,
 * gets none.
 */
static void test_fuse_chain(void **state)
{
	static const char early_exit[] = HDR
		".func quit(.param .u32 v)\n{\n .reg .pred %p<2>;\n .reg .b32 %r<2>;\n"
		" ld.param.u32 %r1, [v];\n setp.eq.u32 %p1, %r1, 0;\n @%p1 exit;\n ret;\n}\n"
		".visible .entry k(.param .u32 k_p)\n{\n .reg .b32 %r<2>;\n"
		" ld.param.u32 %r1, [k_p];\n { .param .u32 a;\n st.param.b32 [a], %r1;\n call.uni quit, (a);\n }\n"
		" @%r1 bra $L1;\n exit;\n$L1:\n ret.uni;\n}\n";
	struct ptx_module *m = parse_ok(vadd), *x = parse_ok(early_exit), *old;
	struct jit_body b = { m, "vadd" }, bx = { x, "k" };
	struct jit_fused *f = fuse_ok(&b, 1), *g;
	char *text = strdup(vadd), *t;
	const char *body, *end;

	(void)state;
	assert_true(f->chain);
	assert_non_null(strstr(f->ptx, ".shared .align 4 .b32 ooo_ticket;"));
	assert_null(strstr(f->ptx, "ooo_dsmem")); /* vadd has no dynamic shared memory */
	assert_non_null(strstr(f->ptx, "@%ooo_p1 atom.global.add.u32 %ooo_r0, [%ooo_ch], 1;"));
	assert_non_null(strstr(f->ptx, "ld.acquire.gpu.global.u32 %ooo_r6, [%ooo_rd2];"));
	assert_non_null(strstr(f->ptx, "red.release.gpu.global.add.u32 [%ooo_sa], %ooo_ac;"));
	/* in the body, the return goes to the exit block; the exit block ends the thread */
	body = strstr(f->ptx, "$ooo_body0:");
	end = body ? strstr(body, "$ooo_x0:") : NULL;
	assert_non_null(end);
	assert_non_null(strstr(body, "\tbra $ooo_x0;"));
	for (const char *r = strstr(body, "ret;"); r && r < end; r = strstr(r + 1, "ret;"))
		fail_msg("a ret left in the body at offset %td", r - f->ptx);
	/* the table's layout: members 48 bytes from offset 32 */
	assert_non_null(strstr(f->ptx, "mul.wide.u32 %ooo_rd1, %ooo_r3, 48;"));
	assert_non_null(strstr(f->ptx, "[%ooo_rd1+32];"));

	/* exit in a .func: the thread would end without counting itself */
	g = fuse_ok(&bx, 1);
	assert_false(g->chain);
	assert_null(strstr(g->ptx, "ooo_ticket"));
	assert_null(strstr(g->ptx, "$ooo_x0"));
	jit_fused_free(g);

	/* a non-coherent load (const __restrict__, __ldg) might miss what the member before it wrote */
	{
		char *nc = strdup(vadd), *at = strstr(nc, "ld.global.f32");
		struct ptx_module *mn;
		struct jit_body bn;

		assert_non_null(at);
		nc = realloc(nc, strlen(nc) + 4);
		at = strstr(nc, "ld.global.f32");
		memmove(at + 12, at + 9, strlen(at + 9) + 1);
		memcpy(at + 9, ".nc", 3);
		assert_non_null(strstr(nc, "ld.global.nc.f32 %f1"));
		mn = parse_ok(nc);
		bn = (struct jit_body){ mn, "vadd" };
		g = fuse_ok(&bn, 1);
		assert_false(g->chain);
		jit_fused_free(g);
		ptx_module_free(mn);
		free(nc);
	}

	/* sm_60: no acquire/release at GPU scope */
	t = strstr(text, "sm_90");
	assert_non_null(t);
	memcpy(t, "sm_60", 5);
	old = parse_ok(text);
	b.mod = old;
	g = fuse_ok(&b, 1);
	assert_false(g->chain);
	assert_null(strstr(g->ptx, "ld.acquire"));
	assert_non_null(strstr(g->ptx, "}\n\tret;\n"));
	jit_fused_free(g);
	ptx_module_free(old);
	free(text);
	jit_fused_free(f);
	ptx_module_free(x);
	ptx_module_free(m);
}

static void test_desc_build(void **state)
{
	uint8_t p0[20], p1[3] = { 7, 8, 9 }, buf[512];
	struct jit_desc_launch l[3] = {
		{ .body = 0, .grid = { 4, 1, 1 }, .params = p0, .param_size = sizeof(p0) },
		{ .body = 1, .grid = { 2, 3, 2 }, .params = p1, .param_size = sizeof(p1) },
		{ .body = 0, .grid = { 1, 1, 1 }, .params = p0, .param_size = sizeof(p0) },
	};
	struct ooo_jit_desc_hdr h;
	struct ooo_jit_desc_member d;
	uint32_t total = 0;
	size_t need = 0;
	long n;

	memset(p0, 0xab, sizeof(p0));
	assert_int_equal(jit_desc_build(l, 3, buf, 8, &total, &need), -ENOSPC);
	assert_int_equal(need, 32 + 144 + 32 + 16 + 32);
	n = jit_desc_build(l, 3, buf, sizeof(buf), &total, NULL);
	assert_int_equal(n, (long)need);
	/* the executor's estimate (parameters each rounded to 16) is the same size */
	assert_int_equal(jit_desc_size(3, 32 + 16 + 32), need);
	assert_int_equal(jit_desc_size(1, 0), 32 + 48);
	assert_int_equal(total, 4 + 12 + 1);
	memcpy(&h, buf, sizeof(h));
	assert_int_equal(h.n_members, 3);
	assert_int_equal(h.total_blocks, 17);
	assert_int_equal(h.version, OOO_JIT_DESC_VERSION);
	assert_int_equal(h.uniform_blocks, 0); /* grids differ: the kernel searches */
	{
		struct ooo_jit_args a;

		jit_desc_args(buf, 0x7000, &a);
		assert_int_equal(a.desc, 0x7000);
		assert_int_equal(a.n_members, 3);
		assert_int_equal(a.uniform_blocks, 0);
	}
	memcpy(&d, buf + 32 + 48, sizeof(d));
	assert_int_equal(d.block_start, 4);
	assert_int_equal(d.body, 1);
	assert_int_equal(d.grid_y, 3);
	assert_int_equal(d.grid_z, 2);
	assert_int_equal(d.param_off, 208);
	assert_int_equal(d.param_off % OOO_JIT_DESC_ALIGN, 0);
	assert_memory_equal(buf + d.param_off, p1, sizeof(p1));
	memcpy(&d, buf + 32 + 96, sizeof(d));
	assert_int_equal(d.block_start, 16);
	assert_int_equal(d.param_off, 224);
	assert_memory_equal(buf + d.param_off, p0, sizeof(p0));

	/* equal grid sizes (not shapes): one division finds the member */
	{
		struct jit_desc_launch u[2] = { { .body = 0, .grid = { 6, 1, 1 }, .params = p0, .param_size = 4 },
						{ .body = 0, .grid = { 3, 2, 1 }, .params = p0, .param_size = 4 } };
		struct ooo_jit_args a;

		assert_true(jit_desc_build(u, 2, buf, sizeof(buf), &total, NULL) > 0);
		jit_desc_args(buf, 1, &a);
		assert_int_equal(a.uniform_blocks, 6);
		assert_int_equal(total, 12);
	}
	assert_int_equal(h.chain, 0); /* no chain unless jit_desc_chain sets one */
	assert_int_equal(d.signal, 0);
	assert_int_equal(d.wait, 0);

	/* a chain: launch 2 runs after launch 0, which signals; the header gets the counters */
	l[0].signal = true;
	l[2].wait = 1;
	l[2].wait_target = 0xfffffff0u;
	assert_int_equal(jit_desc_build(l, 3, buf, sizeof(buf), &total, NULL), (long)need);
	jit_desc_chain(buf, 0xdead0000u, 77);
	memcpy(&h, buf, sizeof(h));
	assert_int_equal(h.chain, 0xdead0000u);
	assert_int_equal(h.ticket_base, 77);
	memcpy(&d, buf + 32, sizeof(d));
	assert_int_equal(d.signal, 1);
	assert_int_equal(d.wait, 0);
	memcpy(&d, buf + 32 + 96, sizeof(d));
	assert_int_equal(d.signal, 0);
	assert_int_equal(d.wait, 1);
	assert_int_equal(d.wait_target, 0xfffffff0u);
	/* a wait must name an earlier launch: itself or a later one is refused */
	l[2].wait = 3;
	assert_int_equal(jit_desc_build(l, 3, buf, sizeof(buf), &total, NULL), -EINVAL);
	l[2].wait = 4;
	assert_int_equal(jit_desc_build(l, 3, buf, sizeof(buf), &total, NULL), -EINVAL);
	l[0].wait = 1;
	assert_int_equal(jit_desc_build(l, 3, buf, sizeof(buf), &total, NULL), -EINVAL);
	l[0].wait = 0;
	l[2].wait = 2;
	assert_true(jit_desc_build(l, 3, buf, sizeof(buf), &total, NULL) > 0);
	l[2].wait = 0;
	l[0].signal = false;

	l[1].grid[2] = 0;
	assert_int_equal(jit_desc_build(l, 3, buf, sizeof(buf), &total, NULL), -EINVAL);
	l[1].grid[2] = 2;
	assert_int_equal(jit_desc_build(l, 0, buf, sizeof(buf), &total, NULL), -EINVAL);
	l[0].grid[0] = 0x40000000u;
	l[0].grid[1] = 4;
	assert_int_equal(jit_desc_build(l, 3, buf, sizeof(buf), &total, NULL), -EINVAL);
	l[0].grid[0] = 4;
	l[0].grid[1] = 1;
	l[0].params = NULL;
	assert_int_equal(jit_desc_build(l, 3, buf, sizeof(buf), &total, NULL), -EINVAL);
}

static void test_key(void **state)
{
	struct ptx_module *a = parse_ok(vadd), *r = parse_ok(redmod);
	struct jit_body ab[2] = { { a, "vadd" }, { r, "red" } }, ba[2] = { { r, "red" }, { a, "vadd" } };
	uint8_t k1[32], k2[32], k3[32];

	jit_fuse_key(ab, 2, "580.00", k1);
	jit_fuse_key(ba, 2, "580.00", k2);
	jit_fuse_key(ab, 2, "575.00", k3);
	assert_memory_not_equal(k1, k2, 32);
	assert_memory_not_equal(k1, k3, 32);
	jit_fuse_key(ab, 2, "580.00", k2);
	assert_memory_equal(k1, k2, 32);
	ptx_module_free(a);
	ptx_module_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_layout),     cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_debug_dropped),    cmocka_unit_test(test_round_trip_hash),
		cmocka_unit_test(test_hash_kinds),
		cmocka_unit_test(test_reject_reasons),   cmocka_unit_test(test_accepts),
		cmocka_unit_test(test_fuse_homogeneous), cmocka_unit_test(test_fuse_chain), cmocka_unit_test(test_fuse_heterogeneous),
		cmocka_unit_test(test_fuse_refusals),    cmocka_unit_test(test_desc_build),
		cmocka_unit_test(test_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
