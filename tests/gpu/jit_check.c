/* SPDX-License-Identifier: MIT */
/*
 * jit_check: the JIT coalescer (daemon/jit) on a real GPU, for tests/gpu.
 *
 *   jit_check LIBCUDA check SPEC_DIR PTX_DIR [--only NAME[,NAME...]]
 *       every kernel of the corpus (spec lines in SPEC_DIR/NAME.cu, PTX in
 *       PTX_DIR/NAME.ptx): fused launches must be bit-identical to separate
 *       launches of the original kernels, alone, x2, x16 and in
 *       heterogeneous sets; expect=reject kernels must be judged unfusible
 *   jit_check LIBCUDA triton PTX_FILE KERNEL SPEC
 *       the same cases (alone, x2, x16) for one PTX file (Triton's output);
 *       a kernel the JIT rejects prints "rejected: REASON" and passes
 *   jit_check LIBCUDA bench PTX_FILE KERNEL SPEC
 *       32 separate launches vs one fused launch of 32 members, a kernel
 *       alone vs fused with one member, and the JIT's own cost (with
 *       JIT_CHECK_FENCED=1 the fused launches run the fenced copy)
 *   jit_check LIBCUDA fencecost SPEC_DIR PTX_DIR [--only NAME[,NAME...]]
 *       kernel time of each kernel's fenced copy (jit_fence_all) against
 *       the original, same buffers and launch; a table and a summary
 *
 * SPEC is a file holding the kernel's "ooo-jit:" line, or the line itself.
 * The spec line:
 *   // ooo-jit: kernel=NAME expect=fusible grid=GX[,GY,GZ] block=BX[,BY,BZ] smem=BYTES params=P1;P2;...
 *   // ooo-jit: kernel=NAME expect=reject reason=SUBSTRING
 * with params, in the kernel's parameter order: in:T:N out:T:N inout:T:N
 * idx:T:N:MAX (device buffers), i32:V u32:V i64:V u64:V f32:V f64:V
 * (scalars), raw:HEX (a by-value struct's bytes); T one of f32 f64 i32
 * u32 i64 u64 f16 bf16 u8.
 *
 * Each case prints "ok CASE" or "FAIL CASE: reason"; the run ends with
 * "N passed, N failed" and exits 0 only when none failed.
 *
 * A kernel that faults leaves a sticky error, and on the drivers this was
 * tried on (580, CUDA 13.0) no cuDevicePrimaryCtxReset/Release/Retain order
 * gives the process a working context again. So after a lost context (or a
 * kernel that runs past JIT_CHECK_TIMEOUT_S) the program execs itself again
 * and resumes after the checks already done (JIT_CHECK_RESUME, set by the
 * program itself, carries the count and the totals).
 *
 * Environment: JIT_CHECK_TIMEOUT_S (seconds a kernel may run, default 20),
 * JIT_CHECK_DUMP=DIR (write the fused PTX of every failed case there),
 * JIT_CHECK_FENCED=1 (check: fuse the fenced copies, KERNEL_ooo_fenced
 * from jit_fence_all, with a window that admits every address (base 0,
 * mask 0), against separate launches of the original kernels: fencing and
 * fusing together must not change a result; a kernel the fence refuses is
 * an "ok ... not fenced" line).
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ooo/jit.h>

#include "../../daemon/exec/cuda.h"
#include "../../daemon/jit/jit.h"

/*
 * Driver functions this program needs beyond daemon/exec/cuda.h's
 * CUDA_FUNCS, resolved here the same way (cuGetProcAddress as of
 * CUDA_ABI_VERSION). Once CUDA_FUNCS has them, this table can go.
 */
#define JC_EXTRA_FUNCS(X)                                                                                  \
	X(cuMemAlloc)                                                                                      \
	X(cuMemFree)                                                                                       \
	X(cuFuncSetAttribute)                                                                              \
	X(cuEventElapsedTime)

static struct {
#define JC_MEMBER(name) __typeof__(&name) p_##name;
	JC_EXTRA_FUNCS(JC_MEMBER)
#undef JC_MEMBER
} xa;

static struct cuda_api api;
static CUdevice g_dev;
static CUcontext g_ctx;
static CUevent g_done;        /* recorded after each step, polled with a deadline */
static unsigned g_gen = 1;    /* context generation (modules loaded in it) */
static int g_passed, g_failed;
static unsigned long g_seq;   /* checks met so far, skipped or run */
static unsigned long g_skip;  /* checks done before the last restart */
static int g_execs;           /* restarts so far */
static bool g_resumed;        /* this process is a restart: say nothing twice */
static double g_t0;           /* when the run began (CLOCK_MONOTONIC holds across the exec) */
static bool g_fenced;         /* JIT_CHECK_FENCED=1 */
static char **g_argv;
#define MAX_RESTARTS 150
#define JC_HANG ((CUresult)99999) /* not a driver code: a kernel past the deadline */
static double g_timeout_s = 20;
static const char *g_dump_dir;
static int g_smem_optin = 48 << 10;

#define GUARD 256u            /* bytes after every buffer, checked for stray writes */
#define GUARD_BYTE(i) ((uint8_t)(0xa5u ^ (unsigned)(i)))

/* ---- small helpers --------------------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		fprintf(stderr, "jit_check: out of memory\n");
		exit(2);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = xcalloc(1, n);
	memcpy(p, s, n);
	return p;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = xcalloc(1, (size_t)n + 1);
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* float to IEEE half, round to nearest even (subnormals, overflow to inf) */
static uint16_t f32_to_f16(float f)
{
	uint32_t x, sign, exp, man, h, rem, half;
	int e, shift;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000u;
	exp = (x >> 23) & 0xffu;
	man = x & 0x7fffffu;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
	e = (int)exp - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		shift = 14 - e;
		h = man >> shift;
		rem = man & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	h = ((uint32_t)e << 10) | (man >> 13);
	rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++; /* a carry into the exponent is the correct rounding */
	return (uint16_t)(sign | h);
}

/* float to bfloat16, round to nearest even */
static uint16_t f32_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static void sanitize(char *dst, size_t cap, const char *src)
{
	size_t i = 0;
	for (; *src && i + 1 < cap; src++)
		dst[i++] = (isalnum((unsigned char)*src) || *src == '-' || *src == '.') ? *src : '_';
	dst[i] = '\0';
}

/* ---- the spec --------------------------------------------------------------------------------- */

enum ety { T_F32, T_F64, T_I32, T_U32, T_I64, T_U64, T_F16, T_BF16, T_U8, T_COUNT };
static const struct {
	const char *name;
	unsigned size;
} etypes[T_COUNT] = {
	[T_F32] = { "f32", 4 }, [T_F64] = { "f64", 8 }, [T_I32] = { "i32", 4 },  [T_U32] = { "u32", 4 },
	[T_I64] = { "i64", 8 }, [T_U64] = { "u64", 8 }, [T_F16] = { "f16", 2 }, [T_BF16] = { "bf16", 2 },
	[T_U8] = { "u8", 1 },
};

enum pkind { K_IN, K_OUT, K_INOUT, K_IDX, K_SCALAR, K_RAW };

struct pitem {
	enum pkind kind;
	enum ety type;        /* buffer element type, or the scalar's type */
	uint64_t count, max;  /* buffers: elements; idx: values in [0, max) */
	uint8_t *val;         /* scalars and raw: the bytes */
	uint32_t vsize;
	char text[64];        /* as written, for messages */
};

struct pfile {
	char base[256];       /* NAME of NAME.cu / NAME.ptx */
	char *ptx_path;
	char *text;           /* the PTX, NUL-terminated */
	size_t len;
	struct ptx_module *mod;
	char err[600];        /* why the PTX is unusable, or "" */
	struct ptx_module *fmod; /* JIT_CHECK_FENCED: the module from jit_fence_all */
	char *ftext;
	CUmodule cumod;       /* the original module, valid while cumod_gen == g_gen */
	unsigned cumod_gen;
	double parse_us;
};

struct kspec {
	char name[JIT_NAME_MAX];
	char disp[JIT_NAME_MAX + 260]; /* name in messages */
	struct pfile *file;
	int line;
	bool fusible;         /* expect=fusible */
	char reason[JIT_REASON_MAX];
	uint32_t grid[3], block[3], smem;
	size_t nitems;
	struct pitem *items;
	const struct ptx_kernel *pk;
	const struct ptx_kernel *fpk; /* JIT_CHECK_FENCED: its fenced copy */
	bool unfenced;        /* JIT_CHECK_FENCED: the fence refuses it (err says why): no case, no failure */
	char err[1024];       /* a spec or setup error: the kernel fails once and runs no case */
	bool ready;           /* passed setup: cases may run */
	CUfunction fn;        /* in file->cumod, valid while fn_gen == g_gen */
	unsigned fn_gen;
};

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool parse_dims(const char *s, uint32_t d[3])
{
	char tmp[128], *save = NULL, *tok;
	int n = 0;
	uint64_t v;

	if (strlen(s) >= sizeof(tmp))
		return false;
	strcpy(tmp, s);
	d[0] = d[1] = d[2] = 1;
	for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == 3 || !parse_u64(tok, &v) || v == 0 || v > 0x7fffffffu)
			return false;
		d[n++] = (uint32_t)v;
	}
	return n >= 1;
}

static int find_type(const char *s)
{
	for (int t = 0; t < T_COUNT; t++)
		if (!strcmp(s, etypes[t].name))
			return t;
	return -1;
}

/* One params item; on error writes why into err. */
static bool parse_item(const char *src, struct pitem *it, char *err, size_t cap)
{
	char tmp[4200], *f[5] = { 0 }, *save = NULL, *tok;
	int nf = 0, t;
	uint64_t v;

	memset(it, 0, sizeof(*it));
	snprintf(it->text, sizeof(it->text), "%s", src);
	if (strlen(src) >= sizeof(tmp))
		return snprintf(err, cap, "params item too long"), false;
	strcpy(tmp, src);
	for (tok = strtok_r(tmp, ":", &save); tok && nf < 5; tok = strtok_r(NULL, ":", &save))
		f[nf++] = tok;
	if (nf == 0)
		return snprintf(err, cap, "empty params item"), false;
	if (!strcmp(f[0], "in") || !strcmp(f[0], "out") || !strcmp(f[0], "inout") || !strcmp(f[0], "idx")) {
		bool idx = !strcmp(f[0], "idx");
		it->kind = idx ? K_IDX : !strcmp(f[0], "in") ? K_IN : !strcmp(f[0], "out") ? K_OUT : K_INOUT;
		if (nf != (idx ? 4 : 3))
			return snprintf(err, cap, "'%s': want %s:TYPE:COUNT%s", src, f[0], idx ? ":MAX" : ""), false;
		if ((t = find_type(f[1])) < 0)
			return snprintf(err, cap, "'%s': unknown type '%s'", src, f[1]), false;
		it->type = (enum ety)t;
		if (!parse_u64(f[2], &it->count) || it->count > (1ull << 30) / etypes[t].size)
			return snprintf(err, cap, "'%s': bad COUNT (at most 1 GiB)", src), false;
		if (idx && (!parse_u64(f[3], &it->max) || it->max == 0))
			return snprintf(err, cap, "'%s': bad MAX", src), false;
		return true;
	}
	if (!strcmp(f[0], "raw")) {
		const char *h = nf == 2 ? f[1] : "";
		size_t n = strlen(h);
		if (nf != 2 || n == 0 || n % 2 || n / 2 > 4096)
			return snprintf(err, cap, "'%s': want raw:HEX (an even number of hex digits, 1..4096 bytes)", src),
			       false;
		it->kind = K_RAW;
		it->vsize = (uint32_t)(n / 2);
		it->val = xcalloc(1, it->vsize);
		for (size_t i = 0; i < n / 2; i++) {
			char b[3] = { h[2 * i], h[2 * i + 1], 0 };
			if (!isxdigit((unsigned char)b[0]) || !isxdigit((unsigned char)b[1]))
				return snprintf(err, cap, "'%s': not hex", src), false;
			it->val[i] = (uint8_t)strtoul(b, NULL, 16);
		}
		return true;
	}
	if ((t = find_type(f[0])) < 0 || t == T_F16 || t == T_BF16 || t == T_U8 || nf != 2)
		return snprintf(err, cap, "'%s': unknown params item (in/out/inout/idx/raw or a scalar i32/u32/i64/u64/f32/f64:V)",
				src),
		       false;
	it->kind = K_SCALAR;
	it->type = (enum ety)t;
	it->vsize = etypes[t].size;
	it->val = xcalloc(1, 8);
	{
		char *end;
		errno = 0;
		switch (it->type) {
		case T_F32: {
			float x = strtof(f[1], &end);
			memcpy(it->val, &x, 4);
			break;
		}
		case T_F64: {
			double x = strtod(f[1], &end);
			memcpy(it->val, &x, 8);
			break;
		}
		case T_I32: {
			long long x = strtoll(f[1], &end, 0);
			int32_t y = (int32_t)x;
			if (x < INT32_MIN || x > INT32_MAX)
				errno = ERANGE;
			memcpy(it->val, &y, 4);
			break;
		}
		case T_I64: {
			long long x = strtoll(f[1], &end, 0);
			int64_t y = x;
			memcpy(it->val, &y, 8);
			break;
		}
		case T_U32:
		case T_U64:
		default: {
			if (!parse_u64(f[1], &v) || (it->type == T_U32 && v > UINT32_MAX))
				return snprintf(err, cap, "'%s': bad value", src), false;
			if (it->type == T_U32) {
				uint32_t y = (uint32_t)v;
				memcpy(it->val, &y, 4);
			} else {
				memcpy(it->val, &v, 8);
			}
			end = f[1] + strlen(f[1]);
			break;
		}
		}
		if (errno || *end || end == f[1])
			return snprintf(err, cap, "'%s': bad value", src), false;
	}
	return true;
}

/*
 * Parse the text after "ooo-jit:" into k (k->name set even on most errors,
 * k->err set on any). Returns false when there is no kernel= at all.
 */
static bool parse_spec(const char *line, struct kspec *k)
{
	char *buf = xstrdup(line), *save = NULL, *tok, *p;
	bool have_expect = false, have_grid = false, have_block = false, have_smem = false, have_params = false;
	const char *params = NULL;
	char *reason;

	k->err[0] = '\0';
	k->name[0] = '\0';
	/* reason= runs to the end of the line: the substring may hold spaces */
	if ((reason = strstr(buf, " reason=")) || (reason = strstr(buf, "\treason="))) {
		*reason = '\0';
		reason += 8;
		for (p = reason + strlen(reason); p > reason && isspace((unsigned char)p[-1]);)
			*--p = '\0';
		snprintf(k->reason, sizeof(k->reason), "%s", reason);
	}
	for (tok = strtok_r(buf, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			snprintf(k->err, sizeof(k->err), "spec: '%s' is not KEY=VALUE", tok);
			continue;
		}
		*eq++ = '\0';
		if (!strcmp(tok, "kernel")) {
			snprintf(k->name, sizeof(k->name), "%s", eq);
		} else if (!strcmp(tok, "expect")) {
			have_expect = true;
			if (!strcmp(eq, "fusible"))
				k->fusible = true;
			else if (!strcmp(eq, "reject"))
				k->fusible = false;
			else
				snprintf(k->err, sizeof(k->err), "spec: expect=%s (want fusible or reject)", eq);
		} else if (!strcmp(tok, "grid")) {
			have_grid = true;
			if (!parse_dims(eq, k->grid))
				snprintf(k->err, sizeof(k->err), "spec: bad grid=%s", eq);
		} else if (!strcmp(tok, "block")) {
			have_block = true;
			if (!parse_dims(eq, k->block))
				snprintf(k->err, sizeof(k->err), "spec: bad block=%s", eq);
		} else if (!strcmp(tok, "smem")) {
			uint64_t v;
			have_smem = true;
			if (!parse_u64(eq, &v) || v > (1u << 20))
				snprintf(k->err, sizeof(k->err), "spec: bad smem=%s", eq);
			else
				k->smem = (uint32_t)v;
		} else if (!strcmp(tok, "params")) {
			have_params = true;
			params = eq;
		} else {
			snprintf(k->err, sizeof(k->err), "spec: unknown key '%s'", tok);
		}
	}
	if (!k->name[0]) {
		free(buf);
		return false;
	}
	if (!k->err[0]) {
		if (!have_expect)
			snprintf(k->err, sizeof(k->err), "spec: no expect=");
		else if (k->fusible && !(have_grid && have_block && have_smem && have_params))
			snprintf(k->err, sizeof(k->err), "spec: expect=fusible needs grid=, block=, smem= and params=");
		else if (!k->fusible && !k->reason[0])
			snprintf(k->err, sizeof(k->err), "spec: expect=reject needs reason=");
	}
	if (!k->err[0] && params && *params) {
		char *pcopy = xstrdup(params), *s2 = NULL, *it;
		size_t cap = 1;
		for (p = pcopy; *p; p++)
			cap += *p == ';';
		k->items = xcalloc(cap, sizeof(*k->items));
		for (it = strtok_r(pcopy, ";", &s2); it; it = strtok_r(NULL, ";", &s2)) {
			char e[300];
			if (!parse_item(it, &k->items[k->nitems], e, sizeof(e))) {
				snprintf(k->err, sizeof(k->err), "spec: params item %zu: %s", k->nitems, e);
				break;
			}
			k->nitems++;
		}
		free(pcopy);
	}
	free(buf);
	return true;
}

static size_t item_bytes(const struct pitem *it)
{
	return it->kind <= K_IDX ? (size_t)it->count * etypes[it->type].size : it->vsize;
}

static bool is_buffer(const struct pitem *it)
{
	return it->kind <= K_IDX;
}

/* ---- CUDA set-up, errors and context recovery ------------------------------------------------- */

static const char *cuerr(CUresult r)
{
	static char buf[4][300];
	static int n;
	char *b = buf[n++ % 4];

	if (r == JC_HANG) {
		snprintf(b, sizeof(buf[0]), "did not finish within %.0f s (a hang?)", g_timeout_s);
		return b;
	}
	return cuda_strerror(&api, r, b, sizeof(buf[0]));
}

static bool is_sticky(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_LAUNCH_TIMEOUT:
	case CUDA_ERROR_ASSERT:
	case CUDA_ERROR_ECC_UNCORRECTABLE:
	case CUDA_ERROR_CONTEXT_IS_DESTROYED:
		return true;
	default:
		return r == JC_HANG;
	}
}

static int cuda_setup(const char *libcuda)
{
	char why[512];
	CUresult r;
	typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
	get_proc_fn get_proc;
	const char *missing = NULL;

	if (cuda_load(&api, libcuda, why, sizeof(why)) < 0) {
		printf("FAIL setup: %s\n", why);
		return -1;
	}
	get_proc = (get_proc_fn)dlsym(api.lib, "cuGetProcAddress_v2");
#define JC_RESOLVE(name)                                                                                   \
	do {                                                                                               \
		CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                  \
		void *fn = NULL;                                                                           \
		if (get_proc && get_proc(#name, &fn, CUDA_ABI_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) ==   \
					CUDA_SUCCESS &&                                                    \
		    st == CU_GET_PROC_ADDRESS_SUCCESS && fn)                                               \
			xa.p_##name = (__typeof__(xa.p_##name))fn;                                         \
		else if (!missing)                                                                         \
			missing = #name;                                                                   \
	} while (0);
	JC_EXTRA_FUNCS(JC_RESOLVE)
#undef JC_RESOLVE
	if (missing) {
		printf("FAIL setup: %s does not provide %s\n", libcuda, missing);
		return -1;
	}
	if ((r = api.p_cuInit(0)) != CUDA_SUCCESS || (r = api.p_cuDeviceGet(&g_dev, 0)) != CUDA_SUCCESS ||
	    (r = api.p_cuDevicePrimaryCtxRetain(&g_ctx, g_dev)) != CUDA_SUCCESS ||
	    (r = api.p_cuCtxSetCurrent(g_ctx)) != CUDA_SUCCESS ||
	    (r = api.p_cuEventCreate(&g_done, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) {
		printf("FAIL setup: %s\n", cuerr(r));
		return -1;
	}
	api.p_cuDeviceGetAttribute(&g_smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, g_dev);
	if (!g_resumed) {
		char name[256] = "?";
		int major = 0, minor = 0;
		api.p_cuDeviceGetName(name, sizeof(name), g_dev);
		api.p_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g_dev);
		api.p_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g_dev);
		printf("device: %s (sm_%d%d), driver %d.%d, %d KiB shared memory per block (opt-in)\n", name, major,
		       minor, api.driver_version / 1000, api.driver_version % 1000 / 10, g_smem_optin >> 10);
	}
	{
		const char *t = getenv("JIT_CHECK_TIMEOUT_S");
		if (t && atof(t) > 0)
			g_timeout_s = atof(t);
	}
	g_dump_dir = getenv("JIT_CHECK_DUMP");
	return 0;
}

static void finish(void)
{
	printf("%d passed, %d failed\n", g_passed, g_failed);
}

/*
 * A check is about to run: false when a previous process of this run did it
 * already (it was counted there).
 */
static bool check_begins(void)
{
	return g_seq++ >= g_skip;
}

/* The context is lost: exec this program again, to resume after the checks done. */
static void restart(const char *after)
{
	char env[128];

	if (g_execs >= MAX_RESTARTS) {
		printf("fatal: the CUDA context was lost %d times; stopping after %lu checks (after %s)\n", g_execs, g_seq,
		       after);
		finish();
		exit(1);
	}
	printf("note: the CUDA context is lost after %s: restarting the process to go on\n", after);
	snprintf(env, sizeof(env), "%lu,%d,%d,%d,%.6f", g_seq, g_passed, g_failed, g_execs + 1, g_t0);
	setenv("JIT_CHECK_RESUME", env, 1);
	fflush(stdout);
	fflush(stderr);
	execv("/proc/self/exe", g_argv);
	printf("fatal: cannot exec /proc/self/exe to go on: %s\n", strerror(errno));
	finish();
	exit(1);
}

/* After a failed case: is the context still usable? Start again if not. */
static void ctx_check(CUresult last, const char *after)
{
	if (is_sticky(last) || api.p_cuCtxSynchronize() != CUDA_SUCCESS)
		restart(after);
}

/* Wait for the work queued so far on the null stream, with a deadline. */
static CUresult wait_done(void)
{
	CUresult r = api.p_cuEventRecord(g_done, NULL);
	double t0 = now_s();
	unsigned spins = 0;

	if (r != CUDA_SUCCESS)
		return r;
	while ((r = api.p_cuEventQuery(g_done)) == CUDA_ERROR_NOT_READY) {
		if (now_s() - t0 > g_timeout_s)
			return JC_HANG; /* the process starts again: its context goes with it */
		if (++spins > 1000) {
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
		}
	}
	return r;
}

static CUresult load_module(CUmodule *mod, const char *text, char *log, size_t logcap)
{
	CUjit_option opt[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *val[2] = { log, (void *)(uintptr_t)logcap };

	log[0] = '\0';
	return api.p_cuModuleLoadDataEx(mod, text, 2, opt, val);
}

/* Shared memory set-up of f for a launch with `dyn` bytes of dynamic shared memory. */
static CUresult prepare_smem(CUfunction f, uint32_t dyn)
{
	int st = 0;
	CUresult r = api.p_cuFuncGetAttribute(&st, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);

	if (r != CUDA_SUCCESS)
		return r;
	if (dyn && (uint64_t)st + dyn > (48u << 10))
		return xa.p_cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dyn);
	return CUDA_SUCCESS;
}

/* ---- one case --------------------------------------------------------------------------------- */

struct cres {
	bool failed;
	char why[3072];
};

__attribute__((format(printf, 2, 3))) static void cfail(struct cres *c, const char *fmt, ...)
{
	va_list ap;

	if (c->failed)
		return;
	c->failed = true;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

struct minst {
	struct kspec *k;
	unsigned inst;        /* seeds its data */
	uint32_t body;        /* index in the fused kernel's bodies */
	CUdeviceptr *a, *b;   /* per item: the reference's and the fused launch's buffer, 0 if not a buffer */
	uint8_t *pb;          /* parameter buffer of the fused launch (B pointers), pk->param_bytes */
	void **args;          /* kernelParams of the reference launch (A pointers) */
};

static void fill_buffer(const struct pitem *it, uint8_t *h, size_t bytes, uint64_t seed)
{
	uint64_t s = seed;
	size_t n = (size_t)it->count, es = etypes[it->type].size;

	if (it->kind == K_OUT) {
		memset(h, 0xff, bytes);
	} else {
		for (size_t i = 0; i < n; i++) {
			uint64_t r = splitmix64(&s);
			uint8_t *e = h + i * es;
			bool ints = it->kind == K_IDX;
			uint64_t iv = ints ? r % it->max : r % 1000;
			float f = (float)(int64_t)((r >> 40) - (1u << 23)) / 8388608.0f; /* [-1,1), exact */
			double d = (double)(int64_t)((r >> 11) - (1ull << 52)) / 4503599627370496.0;

			switch (it->type) {
			case T_F32:
				if (ints)
					f = (float)iv;
				memcpy(e, &f, 4);
				break;
			case T_F64:
				if (ints)
					d = (double)iv;
				memcpy(e, &d, 8);
				break;
			case T_F16: {
				uint16_t x = f32_to_f16(ints ? (float)iv : f);
				memcpy(e, &x, 2);
				break;
			}
			case T_BF16: {
				uint16_t x = f32_to_bf16(ints ? (float)iv : f);
				memcpy(e, &x, 2);
				break;
			}
			case T_I32:
			case T_U32: {
				uint32_t x = (uint32_t)iv;
				memcpy(e, &x, 4);
				break;
			}
			case T_I64:
			case T_U64:
				memcpy(e, &iv, 8);
				break;
			case T_U8:
			default:
				*e = (uint8_t)(ints ? iv : r % 256);
				break;
			}
		}
	}
	for (unsigned g = 0; g < GUARD; g++)
		h[bytes + g] = GUARD_BYTE(g);
}

static void describe_elem(char *out, size_t cap, const struct pitem *it, const uint8_t *e)
{
	size_t es = etypes[it->type].size, o = 0;

	for (size_t i = 0; i < es && o + 3 < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%02x", e[es - 1 - i]); /* little-endian value, as a number */
	switch (it->type) {
	case T_F32: {
		float f;
		memcpy(&f, e, 4);
		snprintf(out + o, cap - o, " (%.9g)", (double)f);
		break;
	}
	case T_F64: {
		double d;
		memcpy(&d, e, 8);
		snprintf(out + o, cap - o, " (%.17g)", d);
		break;
	}
	case T_I32: {
		int32_t x;
		memcpy(&x, e, 4);
		snprintf(out + o, cap - o, " (%d)", x);
		break;
	}
	case T_I64: {
		int64_t x;
		memcpy(&x, e, 8);
		snprintf(out + o, cap - o, " (%lld)", (long long)x);
		break;
	}
	default:
		break;
	}
}

/* Compare the reference's (A) and the fused launch's (B) contents of one buffer. */
static void compare(struct cres *c, const struct minst *m, size_t item, const uint8_t *ha, const uint8_t *hb,
		    size_t bytes, int member)
{
	const struct pitem *it = &m->k->items[item];
	size_t es = etypes[it->type].size, first = SIZE_MAX, ndiff = 0;

	for (unsigned g = 0; g < GUARD; g++)
		if (ha[bytes + g] != GUARD_BYTE(g)) {
			cfail(c, "member %d (%s#%u) param %zu (%s): the reference kernel writes past the end of the buffer "
				 "(byte %zu): the spec's COUNT is too small",
			      member, m->k->disp, m->inst, item, it->text, bytes + g);
			return;
		}
	for (size_t i = 0; i < bytes + GUARD; i++)
		if (ha[i] != hb[i]) {
			if (first == SIZE_MAX)
				first = i;
			ndiff++;
		}
	if (first == SIZE_MAX)
		return;
	if (first >= bytes) {
		cfail(c, "member %d (%s#%u) param %zu (%s): the fused kernel writes past the end of the buffer (byte %zu "
			 "of a %zu-byte buffer)",
		      member, m->k->disp, m->inst, item, it->text, first, bytes);
		return;
	}
	{
		size_t el = first / es;
		char want[80], got[80];
		describe_elem(want, sizeof(want), it, ha + el * es);
		describe_elem(got, sizeof(got), it, hb + el * es);
		cfail(c, "member %d (%s#%u) param %zu (%s): first difference at element %zu (byte %zu): expected %s, got %s; "
			 "%zu of %zu bytes differ",
		      member, m->k->disp, m->inst, item, it->text, el, first, want, got, ndiff, bytes);
	}
}

static void dump_ptx(const char *casename, const struct jit_fused *f)
{
	char fn[600], san[300];
	FILE *o;

	if (!g_dump_dir || !f || !f->ptx)
		return;
	sanitize(san, sizeof(san), casename);
	snprintf(fn, sizeof(fn), "%s/%s.ptx", g_dump_dir, san);
	if ((o = fopen(fn, "w"))) {
		fwrite(f->ptx, 1, f->ptx_len ? f->ptx_len : strlen(f->ptx), o);
		fclose(o);
		printf("  fused PTX written to %s\n", fn);
	}
}

/* The original kernel's function, loading its module if needed. */
static CUresult ref_function(struct kspec *k, CUfunction *out, char *log, size_t logcap)
{
	struct pfile *pf = k->file;
	CUresult r;

	log[0] = '\0';
	if (pf->cumod_gen != g_gen) {
		if ((r = load_module(&pf->cumod, pf->text, log, logcap)) != CUDA_SUCCESS)
			return r;
		pf->cumod_gen = g_gen;
	}
	if (k->fn_gen != g_gen) {
		if ((r = api.p_cuModuleGetFunction(&k->fn, pf->cumod, k->name)) != CUDA_SUCCESS)
			return r;
		k->fn_gen = g_gen;
	}
	*out = k->fn;
	return CUDA_SUCCESS;
}

/* The driver's parameter layout must be the JIT's: checked on each kernel's first case. */
static bool check_layout(struct cres *c, struct kspec *k, CUfunction fn)
{
	const struct ptx_kernel *pk = k->pk;
	size_t off, size;
	CUresult r;

	for (uint32_t i = 0; i < pk->nparams; i++) {
		if ((r = api.p_cuFuncGetParamInfo(fn, i, &off, &size)) != CUDA_SUCCESS) {
			cfail(c, "cuFuncGetParamInfo(%s, %u): %s (the JIT says %u parameters)", k->disp, i, cuerr(r),
			      pk->nparams);
			return false;
		}
		if (off != pk->params[i].offset || size != pk->params[i].size) {
			cfail(c, "parameter layout of %s: param %u (%s) is at offset %zu, %zu bytes for the driver; the JIT says "
				 "offset %u, %u bytes",
			      k->disp, i, pk->params[i].name ? pk->params[i].name : "?", off, size, pk->params[i].offset,
			      pk->params[i].size);
			return false;
		}
		if (off + size > pk->param_bytes) {
			cfail(c, "parameter layout of %s: param %u ends at %zu, past param_bytes %u", k->disp, i, off + size,
			      pk->param_bytes);
			return false;
		}
	}
	if (api.p_cuFuncGetParamInfo(fn, pk->nparams, &off, &size) == CUDA_SUCCESS) {
		cfail(c, "parameter layout of %s: the driver has more than the JIT's %u parameters", k->disp, pk->nparams);
		return false;
	}
	return true;
}

/* Check the descriptor table jit_desc_build wrote against what it was given. */
static bool check_desc(struct cres *c, const uint8_t *tab, long size, const struct jit_desc_launch *l, size_t n,
		       uint32_t total)
{
	struct ooo_jit_desc_hdr h;
	bool *used = xcalloc(n, sizeof(bool));
	uint64_t next = 0;
	bool ok = false;

	if ((size_t)size < sizeof(h) + n * sizeof(struct ooo_jit_desc_member)) {
		cfail(c, "jit_desc_build: table of %ld bytes for %zu members", size, n);
		goto out;
	}
	memcpy(&h, tab, sizeof(h));
	if (h.n_members != n || h.total_blocks != total || h.version != OOO_JIT_DESC_VERSION) {
		cfail(c, "descriptor header: n_members %u (want %zu), total_blocks %u (returned %u), version %u",
		      h.n_members, n, h.total_blocks, total, h.version);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct ooo_jit_desc_member m;
		uint64_t blocks;
		size_t j;

		memcpy(&m, tab + sizeof(h) + i * sizeof(m), sizeof(m));
		blocks = (uint64_t)m.grid_x * m.grid_y * m.grid_z;
		if (m.block_start != next || m.param_off % OOO_JIT_DESC_ALIGN || m.reserved[0] || m.reserved[1] ||
		    m.signal != l[i].signal || m.wait != l[i].wait ||
		    (uint64_t)m.param_off + m.param_size > (uint64_t)size ||
		    m.param_off < sizeof(h) + n * sizeof(m)) {
			cfail(c, "descriptor member %zu: block_start %u (want %llu), param_off %u, param_size %u, reserved %u, "
				 "table %ld bytes",
			      i, m.block_start, (unsigned long long)next, m.param_off, m.param_size, m.reserved[0] | m.reserved[1],
			      size);
			goto out;
		}
		for (j = 0; j < n; j++)
			if (!used[j] && l[j].body == m.body && l[j].grid[0] == m.grid_x && l[j].grid[1] == m.grid_y &&
			    l[j].grid[2] == m.grid_z && l[j].param_size == m.param_size &&
			    !memcmp(tab + m.param_off, l[j].params, m.param_size))
				break;
		if (j == n) {
			cfail(c, "descriptor member %zu (body %u, grid %ux%ux%u, %u parameter bytes) matches no launch given",
			      i, m.body, m.grid_x, m.grid_y, m.grid_z, m.param_size);
			goto out;
		}
		used[j] = true;
		next += blocks;
	}
	if (next != total) {
		cfail(c, "descriptor: members cover %llu blocks, total_blocks is %u", (unsigned long long)next, total);
		goto out;
	}
	ok = true;
out:
	free(used);
	return ok;
}

#define CU(call, ...)                                                                                      \
	do {                                                                                               \
		if ((r = (call)) != CUDA_SUCCESS) {                                                        \
			last = r;                                                                          \
			cfail(&c, __VA_ARGS__);                                                            \
			goto out;                                                                          \
		}                                                                                          \
	} while (0)

/*
 * Run members (kernels ks[i], instance inst[i]) separately on A buffers and
 * fused on B buffers; compare. Prints the result line; returns 0 when ok.
 */
static int run_case(const char *casename, struct kspec **ks, const unsigned *inst, size_t n)
{
	struct cres c = { 0 };
	struct minst *m = xcalloc(n, sizeof(*m));
	struct jit_body bodies[JIT_MAX_BODIES];
	struct kspec *bk[JIT_MAX_BODIES];
	struct jit_desc_launch *dl = xcalloc(n, sizeof(*dl));
	struct jit_fused *f = NULL;
	char err[JIT_REASON_MAX + 256], log[16384];
	CUmodule fmod = NULL;
	CUfunction ffn;
	CUdeviceptr ddesc = 0;
	uint8_t *tab = NULL, *ha = NULL, *hb = NULL;
	uint32_t nb = 0, maxsmem = 0, total = 0;
	const uint32_t *block = ks[0]->block;
	CUresult r, last = CUDA_SUCCESS;
	size_t maxbytes = 0;
	long tsize;
	int rc;

	if (!check_begins()) {
		free(m);
		free(dl);
		return 0;
	}

	/* bodies: the distinct kernels, in order of first appearance */
	for (size_t i = 0; i < n; i++) {
		uint32_t b;
		for (b = 0; b < nb && bk[b] != ks[i]; b++)
			;
		if (b == nb) {
			if (nb == JIT_MAX_BODIES) {
				cfail(&c, "more than %u distinct kernels", JIT_MAX_BODIES);
				goto out;
			}
			bk[nb] = ks[i];
			bodies[nb].mod = g_fenced ? ks[i]->file->fmod : ks[i]->file->mod;
			bodies[nb].kernel = g_fenced ? ks[i]->fpk->name : ks[i]->name;
			nb++;
		}
		if (memcmp(ks[i]->block, block, sizeof(ks[i]->block))) {
			cfail(&c, "harness: members with different block shapes");
			goto out;
		}
		m[i].k = ks[i];
		m[i].inst = inst[i];
		m[i].body = b;
		if (ks[i]->smem > maxsmem)
			maxsmem = ks[i]->smem;
	}

	/* the JIT, and its fused module */
	if ((rc = jit_fuse(bodies, nb, &f, err, sizeof(err))) < 0 || !f) {
		cfail(&c, "jit_fuse: %s (%d)", rc < 0 ? err : "no result", rc);
		goto out;
	}
	if (f->nbodies != nb) {
		cfail(&c, "jit_fuse: %u bodies, given %u", f->nbodies, nb);
		goto out;
	}
	if ((f->reqntid[0] || f->reqntid[1] || f->reqntid[2]) &&
	    (f->reqntid[0] != block[0] || f->reqntid[1] != block[1] || f->reqntid[2] != block[2])) {
		cfail(&c, "the fused kernel requires block %ux%ux%u; the members launch %ux%ux%u", f->reqntid[0],
		      f->reqntid[1], f->reqntid[2], block[0], block[1], block[2]);
		goto out;
	}
	if ((r = load_module(&fmod, f->ptx, log, sizeof(log))) != CUDA_SUCCESS) {
		last = r;
		fmod = NULL;
		cfail(&c, "loading the fused PTX: %s; JIT log: %.2000s", cuerr(r), log[0] ? log : "(empty)");
		goto out;
	}
	CU(api.p_cuModuleGetFunction(&ffn, fmod, f->entry), "fused entry '%s': %s", f->entry, cuerr(r));
	{
		int maxt = 0, regs = 0, st = 0;
		api.p_cuFuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, ffn);
		api.p_cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, ffn);
		api.p_cuFuncGetAttribute(&st, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, ffn);
		if ((uint64_t)maxt < (uint64_t)block[0] * block[1] * block[2]) {
			cfail(&c, "the fused kernel allows at most %d threads per block (%d registers); members launch %u", maxt,
			      regs, block[0] * block[1] * block[2]);
			goto out;
		}
		if ((uint64_t)st + maxsmem > (uint64_t)g_smem_optin) {
			cfail(&c, "the fused kernel needs %d bytes of static shared memory + %u dynamic, more than the device's "
				  "%d",
			      st, maxsmem, g_smem_optin);
			goto out;
		}
	}

	/* buffers: identical contents in A and B */
	for (size_t i = 0; i < n; i++) {
		struct kspec *k = m[i].k;
		const struct ptx_kernel *pk = k->pk;
		uint64_t seed = fnv1a(k->name) ^ ((uint64_t)m[i].inst * 0xd1b54a32d192ed03ull);

		m[i].a = xcalloc(k->nitems, sizeof(CUdeviceptr));
		m[i].b = xcalloc(k->nitems, sizeof(CUdeviceptr));
		m[i].args = xcalloc(k->nitems, sizeof(void *));
		/* fenced: the window after the kernel's own parameters stays zero (base 0, mask 0: every address passes) */
		m[i].pb = xcalloc(1, g_fenced ? k->fpk->param_bytes : pk->param_bytes);
		for (size_t j = 0; j < k->nitems; j++) {
			struct pitem *it = &k->items[j];
			size_t bytes = item_bytes(it);
			uint64_t ps = seed ^ ((uint64_t)(j + 1) * 0x9e3779b97f4a7c15ull);

			if (is_buffer(it)) {
				uint8_t *h = xcalloc(1, bytes + GUARD);
				fill_buffer(it, h, bytes, splitmix64(&ps));
				r = xa.p_cuMemAlloc(&m[i].a[j], bytes + GUARD);
				if (r == CUDA_SUCCESS)
					r = xa.p_cuMemAlloc(&m[i].b[j], bytes + GUARD);
				if (r == CUDA_SUCCESS)
					r = api.p_cuMemcpyHtoD(m[i].a[j], h, bytes + GUARD);
				if (r == CUDA_SUCCESS)
					r = api.p_cuMemcpyHtoD(m[i].b[j], h, bytes + GUARD);
				free(h);
				CU(r, "buffers of member %zu (%s) param %zu (%s): %s", i, k->disp, j, it->text, cuerr(r));
				m[i].args[j] = &m[i].a[j];
				memcpy(m[i].pb + pk->params[j].offset, &m[i].b[j], 8);
				if (bytes > maxbytes)
					maxbytes = bytes;
			} else {
				m[i].args[j] = it->val;
				memcpy(m[i].pb + pk->params[j].offset, it->val, it->vsize);
			}
		}
		dl[i].body = m[i].body;
		memcpy(dl[i].grid, k->grid, sizeof(dl[i].grid));
		dl[i].params = m[i].pb;
		dl[i].param_size = g_fenced ? m[i].k->fpk->param_bytes : pk->param_bytes;
	}

	/* the reference: each member launched on its own, in order */
	for (size_t i = 0; i < n; i++) {
		struct kspec *k = m[i].k;
		CUfunction fn;

		if ((r = ref_function(k, &fn, log, sizeof(log))) != CUDA_SUCCESS) {
			last = r;
			cfail(&c, "loading the original %s: %s%s%.1500s", k->disp, cuerr(r), log[0] ? "; JIT log: " : "", log);
			goto out;
		}
		CU(prepare_smem(fn, k->smem), "shared memory of the original %s: %s", k->disp, cuerr(r));
		CU(api.p_cuLaunchKernel(fn, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2],
					k->smem, NULL, m[i].args, NULL),
		   "launching the original %s (member %zu): %s", k->disp, i, cuerr(r));
	}
	CU(wait_done(), "the original kernels: %s", cuerr(r));

	/* the JIT's parameter layout must be the driver's (cuFuncGetParamInfo) */
	for (size_t i = 0; i < n; i++)
		if (!check_layout(&c, m[i].k, m[i].k->fn))
			goto out;

	/* the descriptor and the fused launch */
	{
		size_t cap = sizeof(struct ooo_jit_desc_hdr) + n * sizeof(struct ooo_jit_desc_member) + 64, need = 0;
		for (size_t i = 0; i < n; i++)
			cap += (dl[i].param_size + 15u) & ~15u;
		tab = xcalloc(1, cap);
		tsize = jit_desc_build(dl, n, tab, cap, &total, &need);
		if (tsize == -ENOSPC && need > cap) {
			free(tab);
			cap = need;
			tab = xcalloc(1, cap);
			tsize = jit_desc_build(dl, n, tab, cap, &total, &need);
		}
		if (tsize <= 0) {
			cfail(&c, "jit_desc_build: %ld (%s)", tsize, strerror((int)-tsize));
			goto out;
		}
		if (!check_desc(&c, tab, tsize, dl, n, total))
			goto out;
	}
	CU(xa.p_cuMemAlloc(&ddesc, (size_t)tsize), "descriptor alloc: %s", cuerr(r));
	CU(api.p_cuMemcpyHtoD(ddesc, tab, (size_t)tsize), "descriptor upload: %s", cuerr(r));
	CU(prepare_smem(ffn, maxsmem), "shared memory of the fused kernel (%u bytes dynamic): %s", maxsmem, cuerr(r));
	{
		struct ooo_jit_args ja;
		void *fargs[3] = { &ja.desc, &ja.n_members, &ja.uniform_blocks };

		jit_desc_args(tab, (uint64_t)ddesc, &ja);
		CU(api.p_cuLaunchKernel(ffn, total, 1, 1, block[0], block[1], block[2], maxsmem, NULL, fargs, NULL),
		   "launching the fused kernel (%u blocks): %s", total, cuerr(r));
	}
	CU(wait_done(), "the fused kernel: %s", cuerr(r));

	/* compare every buffer */
	ha = xcalloc(1, maxbytes + GUARD);
	hb = xcalloc(1, maxbytes + GUARD);
	for (size_t i = 0; i < n && !c.failed; i++)
		for (size_t j = 0; j < m[i].k->nitems && !c.failed; j++) {
			struct pitem *it = &m[i].k->items[j];
			size_t bytes = item_bytes(it);
			if (!is_buffer(it))
				continue;
			CU(api.p_cuMemcpyDtoH(ha, m[i].a[j], bytes + GUARD), "reading back: %s", cuerr(r));
			CU(api.p_cuMemcpyDtoH(hb, m[i].b[j], bytes + GUARD), "reading back: %s", cuerr(r));
			compare(&c, &m[i], j, ha, hb, bytes, (int)i);
		}

out:
	if (c.failed) {
		printf("FAIL %s: %s\n", casename, c.why);
		dump_ptx(casename, f);
		g_failed++;
	} else {
		printf("ok %s\n", casename);
		g_passed++;
	}
	if (last == JC_HANG) /* freeing memory would wait for the kernel: leave it all to the exec */
		restart(casename);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; m[i].a && j < m[i].k->nitems; j++) {
			if (m[i].a[j])
				xa.p_cuMemFree(m[i].a[j]);
			if (m[i].b[j])
				xa.p_cuMemFree(m[i].b[j]);
		}
		free(m[i].a);
		free(m[i].b);
		free(m[i].args);
		free(m[i].pb);
	}
	if (ddesc)
		xa.p_cuMemFree(ddesc);
	if (fmod)
		api.p_cuModuleUnload(fmod);
	jit_fused_free(f);
	free(m);
	free(dl);
	free(tab);
	free(ha);
	free(hb);
	if (c.failed && last != CUDA_SUCCESS)
		ctx_check(last, casename);
	return c.failed;
}

/* ---- kernel set-up: the JIT's view against the spec ------------------------------------------- */

/* Fill k->pk and k->err; true when the kernel's cases may run. */
static bool setup_kernel(struct kspec *k)
{
	struct pfile *pf = k->file;
	const struct ptx_kernel *pk;
	uint64_t threads = (uint64_t)k->block[0] * k->block[1] * k->block[2];

	if (k->err[0])
		return false;
	if (!pf->mod) {
		snprintf(k->err, sizeof(k->err), "%s", pf->err);
		return false;
	}
	if (!(pk = ptx_kernel_find(pf->mod, k->name))) {
		size_t o = 0, nk = ptx_kernel_count(pf->mod);
		o = (size_t)snprintf(k->err, sizeof(k->err), "no kernel '%s' in %s (it has:", k->name, pf->ptx_path);
		for (size_t i = 0; i < nk && o < sizeof(k->err) - 40; i++)
			o += (size_t)snprintf(k->err + o, sizeof(k->err) - o, " %s", ptx_kernel_at(pf->mod, i)->name);
		snprintf(k->err + o, sizeof(k->err) - o, ")");
		return false;
	}
	k->pk = pk;
	if (!k->fusible)
		return false;
	if (!pk->fusible) {
		snprintf(k->err, sizeof(k->err), "expected fusible, the JIT says not fusible: %s", pk->reason);
		return false;
	}
	if (k->nitems != pk->nparams) {
		snprintf(k->err, sizeof(k->err), "spec error: %zu params items, the kernel has %u parameters", k->nitems,
			 pk->nparams);
		return false;
	}
	for (size_t i = 0; i < k->nitems; i++) {
		const struct pitem *it = &k->items[i];
		const struct ptx_param *pp = &pk->params[i];
		uint32_t want = is_buffer(it) ? 8 : it->vsize;

		if (pp->size != want || (is_buffer(it) && !pp->is_ptr)) {
			snprintf(k->err, sizeof(k->err),
				 "spec error: params item %zu (%s) is %u bytes%s; kernel parameter %zu (%s) is %u bytes%s", i,
				 it->text, want, is_buffer(it) ? ", a pointer" : "", i, pp->name ? pp->name : "?", pp->size,
				 pp->is_ptr ? ", may be a pointer" : ", not a pointer");
			return false;
		}
		if ((uint64_t)pp->offset + pp->size > pk->param_bytes) {
			snprintf(k->err, sizeof(k->err), "JIT: parameter %zu at offset %u (%u bytes) is past param_bytes %u", i,
				 pp->offset, pp->size, pk->param_bytes);
			return false;
		}
	}
	if (threads > 1024) {
		snprintf(k->err, sizeof(k->err), "spec error: block of %llu threads", (unsigned long long)threads);
		return false;
	}
	if ((pk->reqntid[0] || pk->reqntid[1] || pk->reqntid[2]) &&
	    ((pk->reqntid[0] ? pk->reqntid[0] : 1) != k->block[0] || (pk->reqntid[1] ? pk->reqntid[1] : 1) != k->block[1] ||
	     (pk->reqntid[2] ? pk->reqntid[2] : 1) != k->block[2])) {
		snprintf(k->err, sizeof(k->err), "spec error: block %ux%ux%u, the kernel requires .reqntid %u,%u,%u",
			 k->block[0], k->block[1], k->block[2], pk->reqntid[0], pk->reqntid[1], pk->reqntid[2]);
		return false;
	}
	if (pk->maxntid[0] && threads > (uint64_t)pk->maxntid[0] * (pk->maxntid[1] ? pk->maxntid[1] : 1) *
						   (pk->maxntid[2] ? pk->maxntid[2] : 1)) {
		snprintf(k->err, sizeof(k->err), "spec error: block %ux%ux%u exceeds the kernel's .maxntid %u,%u,%u",
			 k->block[0], k->block[1], k->block[2], pk->maxntid[0], pk->maxntid[1], pk->maxntid[2]);
		return false;
	}
	if ((uint64_t)k->smem + pk->static_smem > (uint64_t)g_smem_optin) {
		snprintf(k->err, sizeof(k->err), "spec error: smem=%u + %u static is more than the device's %d", k->smem,
			 pk->static_smem, g_smem_optin);
		return false;
	}
	if (g_fenced) {
		char fname[JIT_NAME_MAX + 16];

		snprintf(fname, sizeof(fname), "%s_ooo_fenced", k->name);
		if (!pf->fmod || !(k->fpk = ptx_kernel_find(pf->fmod, fname))) {
			snprintf(k->err, sizeof(k->err), "the fence refuses it (ooo-jit fence says why)");
			k->unfenced = true;
			return false;
		}
		if (!k->fpk->fusible) {
			snprintf(k->err, sizeof(k->err), "its fenced copy is not fusible: %s", k->fpk->reason);
			return false;
		}
	}
	if (k->smem && !pk->dynamic_smem && !g_resumed)
		printf("note: %s: smem=%u but the JIT sees no dynamic shared memory\n", k->disp, k->smem);
	if (!k->smem && pk->dynamic_smem && !g_resumed)
		printf("note: %s: reaches dynamic shared memory, and the spec gives smem=0\n", k->disp);
	k->ready = true;
	return true;
}

static void load_pfile(struct pfile *pf)
{
	char err[600];
	double t0;
	int rc;

	if (!(pf->text = slurp(pf->ptx_path, &pf->len))) {
		snprintf(pf->err, sizeof(pf->err), "cannot read %s: %s", pf->ptx_path, strerror(errno));
		return;
	}
	err[0] = '\0';
	t0 = now_s();
	rc = ptx_parse(pf->text, pf->len, &pf->mod, err, sizeof(err));
	pf->parse_us = (now_s() - t0) * 1e6;
	if (rc < 0) {
		pf->mod = NULL;
		snprintf(pf->err, sizeof(pf->err), "ptx_parse(%.200s): %.360s (%d)", pf->ptx_path, err, rc);
		return;
	}
	if (g_fenced) {
		struct jit_buf b = { 0 };
		unsigned n = 0;

		rc = jit_fence_all(pf->mod, &b, &n, NULL, err, sizeof(err));
		if (rc == 0)
			rc = ptx_parse(b.data, b.len, &pf->fmod, err, sizeof(err));
		if (rc < 0) {
			pf->fmod = NULL;
			snprintf(pf->err, sizeof(pf->err), "fencing %.200s: %.360s (%d)", pf->ptx_path, err, rc);
			jit_buf_free(&b);
			return;
		}
		pf->ftext = b.data; /* kept with the parsed module */
	}
}

/* A reject line: the JIT must say not fusible, with the reason. Returns 0 when ok. */
static int check_reject(struct kspec *k)
{
	char cn[JIT_NAME_MAX + 300];

	if (!check_begins())
		return 0;
	snprintf(cn, sizeof(cn), "%s/reject", k->disp);
	if (k->err[0] && !k->pk) {
		printf("FAIL %s: %s\n", cn, k->err);
		return g_failed++, 1;
	}
	if (k->pk->fusible) {
		printf("FAIL %s: the JIT says fusible; expected a rejection containing \"%s\"\n", cn, k->reason);
		return g_failed++, 1;
	}
	if (!strstr(k->pk->reason, k->reason)) {
		printf("FAIL %s: rejected with \"%s\", which does not contain \"%s\"\n", cn, k->pk->reason, k->reason);
		return g_failed++, 1;
	}
	printf("ok %s (%s)\n", cn, k->pk->reason);
	return g_passed++, 0;
}

/* alone, x2, x16 of one kernel */
static void single_cases(struct kspec *k)
{
	static const unsigned counts[] = { 1, 2, 16 };
	struct kspec *ks[16];
	unsigned inst[16];
	char cn[JIT_NAME_MAX + 300];

	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		for (unsigned i = 0; i < counts[c]; i++) {
			ks[i] = k;
			inst[i] = i;
		}
		if (counts[c] == 1)
			snprintf(cn, sizeof(cn), "%s/alone", k->disp);
		else
			snprintf(cn, sizeof(cn), "%s/x%u", k->disp, counts[c]);
		run_case(cn, ks, inst, counts[c]);
	}
}

/* ---- check: the corpus ------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_kgroup(const void *a, const void *b)
{
	const struct kspec *x = *(struct kspec *const *)a, *y = *(struct kspec *const *)b;

	if (x->block[2] != y->block[2])
		return x->block[2] < y->block[2] ? -1 : 1;
	if (x->block[1] != y->block[1])
		return x->block[1] < y->block[1] ? -1 : 1;
	if (x->block[0] != y->block[0])
		return x->block[0] < y->block[0] ? -1 : 1;
	return strcmp(x->disp, y->disp);
}

static bool only_match(const char *only, const struct kspec *k)
{
	char *list, *save = NULL, *tok;
	bool hit = false;

	if (!only)
		return true;
	list = xstrdup(only);
	for (tok = strtok_r(list, ",", &save); tok && !hit; tok = strtok_r(NULL, ",", &save))
		hit = !strcmp(tok, k->name) || !strcmp(tok, k->file->base) || !strcmp(tok, k->disp);
	free(list);
	return hit;
}

/* Read the spec lines of one file into *ks (grown). */
static void read_specs(const char *path, struct pfile *pf, struct kspec **ks, size_t *nk, size_t *cap)
{
	FILE *in = fopen(path, "r");
	char line[16384];
	int lineno = 0;

	if (!in) {
		if (check_begins()) {
			printf("FAIL %s: cannot read: %s\n", path, strerror(errno));
			g_failed++;
		}
		return;
	}
	while (fgets(line, sizeof(line), in)) {
		char *p = strstr(line, "ooo-jit:");
		struct kspec *k;

		lineno++;
		if (!p)
			continue;
		if (*nk == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			*ks = realloc(*ks, *cap * sizeof(**ks));
			if (!*ks)
				exit(2);
		}
		k = &(*ks)[*nk];
		memset(k, 0, sizeof(*k));
		k->file = pf;
		k->line = lineno;
		if (!parse_spec(p + 8, k)) {
			if (check_begins()) {
				printf("FAIL %s:%d: spec line without kernel=\n", path, lineno);
				g_failed++;
			}
			continue;
		}
		(*nk)++;
	}
	fclose(in);
}

static void set_display_names(struct kspec *ks, size_t nk)
{
	for (size_t i = 0; i < nk; i++) {
		bool dup = false;
		for (size_t j = 0; j < nk && !dup; j++)
			dup = j != i && !strcmp(ks[i].name, ks[j].name);
		if (dup)
			snprintf(ks[i].disp, sizeof(ks[i].disp), "%s:%s", ks[i].file->base, ks[i].name);
		else
			snprintf(ks[i].disp, sizeof(ks[i].disp), "%s", ks[i].name);
	}
}

struct corpus {
	char **names;         /* NAME.cu, sorted */
	size_t nn;
	struct pfile *files;  /* one per name */
	struct kspec *ks;     /* every spec line */
	size_t nk;
};

/* Read the spec lines of SPEC_DIR/NAME.cu and the PTX of each file that has one; false (and a FAIL line) when none. */
static bool read_corpus(const char *spec_dir, const char *ptx_dir, struct corpus *c)
{
	DIR *d = opendir(spec_dir);
	struct dirent *de;
	size_t ncap = 0, kcap = 0;

	memset(c, 0, sizeof(*c));
	if (!d) {
		printf("FAIL setup: cannot open %s: %s\n", spec_dir, strerror(errno));
		g_failed++;
		return false;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 4 || strcmp(de->d_name + l - 3, ".cu"))
			continue;
		if (c->nn == ncap) {
			ncap = ncap ? ncap * 2 : 64;
			c->names = realloc(c->names, ncap * sizeof(*c->names));
			if (!c->names)
				exit(2);
		}
		c->names[c->nn++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (c->nn)
		qsort(c->names, c->nn, sizeof(*c->names), cmp_str);
	c->files = xcalloc(c->nn ? c->nn : 1, sizeof(*c->files));
	for (size_t i = 0; i < c->nn; i++) {
		struct pfile *pf = &c->files[i];
		char path[4200];
		size_t before = c->nk;

		snprintf(pf->base, sizeof(pf->base), "%.*s", (int)(strlen(c->names[i]) - 3), c->names[i]);
		snprintf(path, sizeof(path), "%s/%s", spec_dir, c->names[i]);
		read_specs(path, pf, &c->ks, &c->nk, &kcap);
		if (c->nk == before)
			continue;
		snprintf(path, sizeof(path), "%s/%s.ptx", ptx_dir, pf->base);
		pf->ptx_path = xstrdup(path);
		load_pfile(pf);
	}
	if (!c->nk) {
		printf("FAIL setup: no ooo-jit spec lines in %s/*.cu\n", spec_dir);
		g_failed++;
		return false;
	}
	set_display_names(c->ks, c->nk);
	return true;
}

static void free_corpus(struct corpus *c)
{
	for (size_t i = 0; i < c->nn; i++) {
		ptx_module_free(c->files[i].mod);
		ptx_module_free(c->files[i].fmod);
		free(c->files[i].ftext);
		if (c->files[i].cumod_gen == g_gen)
			api.p_cuModuleUnload(c->files[i].cumod);
		free(c->files[i].text);
		free(c->files[i].ptx_path);
		free(c->names[i]);
	}
	for (size_t i = 0; i < c->nk; i++) {
		for (size_t j = 0; j < c->ks[i].nitems; j++)
			free(c->ks[i].items[j].val);
		free(c->ks[i].items);
	}
	free(c->ks);
	free(c->files);
	free(c->names);
}

static int cmd_check(const char *spec_dir, const char *ptx_dir, const char *only)
{
	struct corpus c;
	size_t nn, nk, nready = 0;
	struct pfile *files;
	struct kspec *ks, **ready;

	if (!read_corpus(spec_dir, ptx_dir, &c)) {
		finish();
		free_corpus(&c);
		return 1;
	}
	nn = c.nn;
	nk = c.nk;
	files = c.files;
	ks = c.ks;
	if (!g_resumed) {
		double parse = 0;
		size_t bytes = 0, nf = 0;
		for (size_t i = 0; i < nn; i++)
			if (files[i].mod) {
				parse += files[i].parse_us;
				bytes += files[i].len;
				nf++;
			}
		printf("corpus: %zu spec lines in %zu files; ptx_parse of %zu files (%zu KiB): %.0f us\n", nk, nn, nf,
		       bytes >> 10, parse);
	}

	ready = xcalloc(nk, sizeof(*ready));
	for (size_t i = 0; i < nk; i++) {
		struct kspec *k = &ks[i];
		if (!only_match(only, k))
			continue;
		if (!k->fusible && !k->err[0]) {
			setup_kernel(k);
			check_reject(k);
			continue;
		}
		if (!setup_kernel(k)) {
			if (k->unfenced && check_begins()) {
				printf("ok %s: not fenced: %s\n", k->disp, k->err);
				g_passed++;
			} else if (!k->fusible && k->pk)
				check_reject(k);
			else if (check_begins()) {
				printf("FAIL %s: %s (%s.cu:%d)\n", k->disp, k->err, k->file->base, k->line);
				g_failed++;
			}
			continue;
		}
		single_cases(k);
		ready[nready++] = k;
	}

	/* heterogeneous sets: same block shape, sliding windows of 2..8 over the sorted group */
	qsort(ready, nready, sizeof(*ready), cmp_kgroup);
	for (size_t g0 = 0; g0 < nready;) {
		size_t g1 = g0 + 1;
		while (g1 < nready && !memcmp(ready[g1]->block, ready[g0]->block, sizeof(ready[g0]->block)))
			g1++;
		for (size_t w = 2; w <= 8 && w <= g1 - g0; w++)
			for (size_t s = g0; s + w <= g1; s++) {
				struct kspec *mk[8];
				unsigned inst[8];
				char cn[4096];
				size_t o = (size_t)snprintf(cn, sizeof(cn), "set[%ux%ux%u](", ready[g0]->block[0],
							    ready[g0]->block[1], ready[g0]->block[2]);
				for (size_t i = 0; i < w; i++) {
					mk[i] = ready[s + i];
					inst[i] = (unsigned)i;
					if (o < sizeof(cn))
						o += (size_t)snprintf(cn + o, sizeof(cn) - o, "%s%s", i ? "+" : "",
								      mk[i]->disp);
				}
				if (o < sizeof(cn))
					snprintf(cn + o, sizeof(cn) - o, ")");
				run_case(cn, mk, inst, w);
			}
		g0 = g1;
	}
	printf("check took %.1f s%s\n", now_s() - g_t0, g_execs ? " (with the restarts)" : "");
	finish();
	free_corpus(&c);
	free(ready);
	return g_failed != 0;
}

/* ---- fencecost: kernel time, fenced against unfenced ------------------------------------------- */

struct fc_row {
	const struct kspec *k;
	double orig_us, fenced_us; /* medians, per launch */
	int regs_o, regs_f;
};

static int cmp_ratio(const void *a, const void *b)
{
	const struct fc_row *x = a, *y = b;
	double rx = x->fenced_us / x->orig_us, ry = y->fenced_us / y->orig_us;

	return rx < ry ? -1 : rx > ry;
}

/*
 * Every kernel of the corpus that the fence takes: its fenced copy (from
 * jit_fence_all, window base 0 and mask 0, which admits every address and
 * runs the same instructions as any window) against the original, same
 * buffers, same launch. Each measurement is LAUNCHES back-to-back launches
 * between two events, divided by LAUNCHES; original and fenced alternate,
 * REPS times, and each side's median is reported. Kernels the fence
 * refuses are listed with the reason.
 */
static int cmd_fencecost(const char *spec_dir, const char *ptx_dir, const char *only)
{
	enum { REPS = 21, LAUNCHES = 20, WARM = 3 };
	struct corpus c;
	struct fc_row *rows;
	size_t nrows = 0, refused = 0;
	CUstream st = NULL;
	CUevent e0 = NULL, e1 = NULL;
	CUresult r;
	char jlog[16384];

	g_fenced = true;
	if (!read_corpus(spec_dir, ptx_dir, &c)) {
		free_corpus(&c);
		return 1;
	}
	if ((r = api.p_cuStreamCreate(&st, CU_STREAM_NON_BLOCKING)) || (r = api.p_cuEventCreate(&e0, 0)) ||
	    (r = api.p_cuEventCreate(&e1, 0))) {
		printf("FAIL setup: %s\n", cuerr(r));
		return 1;
	}
	rows = xcalloc(c.nk ? c.nk : 1, sizeof(*rows));
	printf("fencecost: kernel time per launch (us), medians of %d x %d back-to-back launches, original and "
	       "fenced alternating\n",
	       REPS, LAUNCHES);
	printf("  %-44s %-12s %10s %10s %8s %9s\n", "kernel", "grid", "original", "fenced", "ratio", "regs o/f");
	for (size_t i = 0; i < c.nk; i++) {
		struct kspec *k = &c.ks[i];
		struct pfile *pf = k->file;
		CUmodule fm = NULL;
		CUfunction fo, ff;
		CUdeviceptr bufs[64] = { 0 };
		void *args[66];
		uint64_t zero = 0;
		double to[REPS], tf[REPS];
		char fname[JIT_NAME_MAX + 16], gridtxt[40];
		bool bad = false;

		if (!only_match(only, k) || !k->fusible)
			continue;
		if (!setup_kernel(k)) {
			if (k->unfenced) {
				printf("  %-44s not fenced: %s\n", k->disp, k->err);
				refused++;
			} else {
				printf("FAIL %s: %s\n", k->disp, k->err);
				g_failed++;
			}
			continue;
		}
		if (k->nitems > 64) {
			printf("FAIL %s: more than 64 parameters\n", k->disp);
			g_failed++;
			continue;
		}
		snprintf(fname, sizeof(fname), "%s_ooo_fenced", k->name);
		if ((r = ref_function(k, &fo, jlog, sizeof(jlog))) || (r = load_module(&fm, pf->ftext, jlog, sizeof(jlog))) ||
		    (r = api.p_cuModuleGetFunction(&ff, fm, fname)) || (r = prepare_smem(fo, k->smem)) ||
		    (r = prepare_smem(ff, k->smem))) {
			printf("FAIL %s: loading: %s %.500s\n", k->disp, cuerr(r), jlog);
			g_failed++;
			if (fm)
				api.p_cuModuleUnload(fm);
			if (is_sticky(r))
				break;
			continue;
		}
		for (size_t j = 0; j < k->nitems && !bad; j++) {
			struct pitem *it = &k->items[j];

			if (is_buffer(it)) {
				size_t bytes = item_bytes(it);
				uint8_t *h = xcalloc(1, bytes + GUARD);

				fill_buffer(it, h, bytes, fnv1a(k->name) ^ (uint64_t)(j + 1));
				if ((r = xa.p_cuMemAlloc(&bufs[j], bytes + GUARD)) ||
				    (r = api.p_cuMemcpyHtoD(bufs[j], h, bytes + GUARD)))
					bad = true;
				free(h);
				args[j] = &bufs[j];
			} else {
				args[j] = it->val;
			}
		}
		args[k->nitems] = &zero;     /* ooo_fence_base */
		args[k->nitems + 1] = &zero; /* ooo_fence_mask: every address is in the window */
		for (int rep = 0; rep < WARM + REPS && !bad; rep++) {
			for (int side = 0; side < 2 && !bad; side++) {
				CUfunction f = side ? ff : fo;
				float ms = 0;

				api.p_cuEventRecord(e0, st);
				for (int l = 0; l < LAUNCHES; l++)
					api.p_cuLaunchKernel(f, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
							     k->block[2], k->smem, st, args, NULL);
				api.p_cuEventRecord(e1, st);
				if ((r = api.p_cuStreamSynchronize(st)) || (r = xa.p_cuEventElapsedTime(&ms, e0, e1))) {
					bad = true;
					break;
				}
				if (rep >= WARM)
					(side ? tf : to)[rep - WARM] = (double)ms * 1e3 / LAUNCHES;
			}
		}
		if (bad) {
			printf("FAIL %s: %s\n", k->disp, cuerr(r));
			g_failed++;
			if (is_sticky(r))
				break;
		} else {
			struct fc_row *w = &rows[nrows++];

			w->k = k;
			w->orig_us = median(to, REPS);
			w->fenced_us = median(tf, REPS);
			api.p_cuFuncGetAttribute(&w->regs_o, CU_FUNC_ATTRIBUTE_NUM_REGS, fo);
			api.p_cuFuncGetAttribute(&w->regs_f, CU_FUNC_ATTRIBUTE_NUM_REGS, ff);
			snprintf(gridtxt, sizeof(gridtxt), "%ux%ux%u", k->grid[0], k->grid[1], k->grid[2]);
			printf("  %-44s %-12s %10.2f %10.2f %7.3fx %4d/%-4d\n", k->disp, gridtxt, w->orig_us, w->fenced_us,
			       w->fenced_us / w->orig_us, w->regs_o, w->regs_f);
			g_passed++;
		}
		for (size_t j = 0; j < k->nitems; j++)
			if (bufs[j])
				xa.p_cuMemFree(bufs[j]);
		api.p_cuModuleUnload(fm);
	}
	if (nrows) {
		double gsum = 0, tot_o = 0, tot_f = 0;
		size_t over3 = 0, over10 = 0;

		for (size_t i = 0; i < nrows; i++) {
			double q = rows[i].fenced_us / rows[i].orig_us;
			gsum += log(q);
			tot_o += rows[i].orig_us;
			tot_f += rows[i].fenced_us;
			over3 += q > 1.03;
			over10 += q > 1.10;
		}
		qsort(rows, nrows, sizeof(*rows), cmp_ratio);
		printf("fencecost: %zu kernels timed, %zu not fenced; fenced/original: geometric mean %.3fx, median %.3fx, "
		       "min %.3fx (%s), max %.3fx (%s); sum of times %.3fx; %zu over 1.03x, %zu over 1.10x\n",
		       nrows, refused, exp(gsum / (double)nrows), rows[nrows / 2].fenced_us / rows[nrows / 2].orig_us,
		       rows[0].fenced_us / rows[0].orig_us, rows[0].k->disp,
		       rows[nrows - 1].fenced_us / rows[nrows - 1].orig_us, rows[nrows - 1].k->disp, tot_f / tot_o, over3,
		       over10);
	}
	api.p_cuEventDestroy(e0);
	api.p_cuEventDestroy(e1);
	api.p_cuStreamDestroy(st);
	free(rows);
	free_corpus(&c);
	printf("%d passed, %d failed\n", g_passed, g_failed);
	return g_failed != 0;
}

/* ---- triton / bench: one PTX file ------------------------------------------------------------- */

/* SPEC: a file with the kernel's ooo-jit line, or the line itself. */
static bool load_one_spec(const char *spec, const char *kernel, struct pfile *pf, struct kspec *k)
{
	FILE *in = fopen(spec, "r");
	char line[16384];
	bool found = false;

	memset(k, 0, sizeof(*k));
	k->file = pf;
	if (!in) {
		const char *p = strstr(spec, "ooo-jit:");
		if (!parse_spec(p ? p + 8 : spec, k)) {
			printf("FAIL setup: '%s' is neither a readable file nor a spec line with kernel=\n", spec);
			return false;
		}
		found = !strcmp(k->name, kernel);
	} else {
		while (!found && fgets(line, sizeof(line), in)) {
			char *p = strstr(line, "ooo-jit:");
			if (!p)
				continue;
			for (size_t j = 0; j < k->nitems; j++)
				free(k->items[j].val);
			free(k->items);
			memset(k, 0, sizeof(*k));
			k->file = pf;
			found = parse_spec(p + 8, k) && !strcmp(k->name, kernel);
		}
		fclose(in);
	}
	if (!found) {
		printf("FAIL setup: no ooo-jit line for kernel=%s in %s\n", kernel, spec);
		return false;
	}
	snprintf(k->disp, sizeof(k->disp), "%s", k->name);
	return true;
}

static int cmd_triton(const char *ptx, const char *kernel, const char *spec)
{
	struct pfile pf = { 0 };
	struct kspec k;

	snprintf(pf.base, sizeof(pf.base), "%s", kernel);
	pf.ptx_path = xstrdup(ptx);
	if (!load_one_spec(spec, kernel, &pf, &k))
		return 1;
	load_pfile(&pf);
	if (pf.mod) {
		const struct ptx_kernel *pk = ptx_kernel_find(pf.mod, kernel);
		if (!g_resumed)
			printf("%s: %zu bytes of PTX, target %s, ISA %s, ptx_parse %.0f us\n", ptx, pf.len, ptx_target(pf.mod),
		       ptx_version(pf.mod), pf.parse_us);
		if (pk && !pk->fusible) {
			printf("rejected: %s\n", pk->reason);
			finish();
			return 0;
		}
	}
	if (!k.fusible) {
		/* the spec itself says reject: check it like the corpus does */
		setup_kernel(&k);
		check_reject(&k);
	} else if (!setup_kernel(&k)) {
		if (check_begins()) {
			printf("FAIL %s: %s\n", k.disp, k.err);
			g_failed++;
		}
	} else {
		single_cases(&k);
	}
	finish();
	return g_failed != 0;
}

struct bench_row {
	double wall_us, gpu_us;
};

static int cmd_bench(const char *ptx, const char *kernel, const char *spec)
{
	enum { N = 32, REPS = 200, WARM = 20 };
	struct pfile pf = { 0 };
	struct kspec k;
	struct jit_body body;
	struct jit_fused *f = NULL;
	char err[JIT_REASON_MAX + 256], log[16384];
	CUmodule fmod = NULL;
	CUfunction fn, ffn, ffnp = NULL;
	CUstream st = NULL;
	CUevent e0 = NULL, e1 = NULL;
	CUdeviceptr a[N][64], b[N][64], ddesc = 0, ddesc1 = 0;
	void *args[N][64];
	uint8_t *pb[N], *tab = NULL, *tab1 = NULL, *ptab = NULL;
	struct jit_desc_launch dl[N];
	double wall[REPS], gpu[REPS], t_parse[51], t_fuse[21], t_desc[REPS], t_load[5];
	struct bench_row ra = { 0 }, rb = { 0 }, rb2 = { 0 }, rb3 = { 0 }, rc1 = { 0 }, rc2 = { 0 };
	uint32_t total = 0, total1 = 0;
	long tsize = 0, tsize1 = 0;
	size_t cap = 0, need = 0;
	bool same = true;
	CUresult r = CUDA_SUCCESS;
	int rc, ok = 0;

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	memset(pb, 0, sizeof(pb));
	snprintf(pf.base, sizeof(pf.base), "%s", kernel);
	pf.ptx_path = xstrdup(ptx);
	if (!load_one_spec(spec, kernel, &pf, &k))
		return 1;
	load_pfile(&pf);
	if (!setup_kernel(&k)) {
		printf("FAIL bench %s: %s\n", kernel, k.err[0] ? k.err : "expect=reject");
		return 1;
	}
	if (k.nitems > 64) {
		printf("FAIL bench: more than 64 parameters\n");
		return 1;
	}
	/* the JIT's own cost */
	for (int i = 0; i < 51; i++) {
		struct ptx_module *m2 = NULL;
		double t0 = now_s();
		rc = ptx_parse(pf.text, pf.len, &m2, err, sizeof(err));
		t_parse[i] = (now_s() - t0) * 1e6;
		ptx_module_free(m2);
		if (rc < 0)
			return printf("FAIL bench: ptx_parse: %s\n", err), 1;
	}
	/* JIT_CHECK_FENCED=1: the fused launch runs the fenced copy (window base 0, mask 0: every address) */
	const struct ptx_kernel *bk = g_fenced ? k.fpk : k.pk;
	char bname[JIT_NAME_MAX + 16];

	snprintf(bname, sizeof(bname), g_fenced ? "%s_ooo_fenced" : "%s", k.name);
	body.mod = g_fenced ? pf.fmod : pf.mod;
	body.kernel = bname;
	for (int i = 0; i < 21; i++) {
		double t0;
		jit_fused_free(f);
		f = NULL;
		t0 = now_s();
		rc = jit_fuse(&body, 1, &f, err, sizeof(err));
		t_fuse[i] = (now_s() - t0) * 1e6;
		if (rc < 0 || !f)
			return printf("FAIL bench: jit_fuse: %s\n", err), 1;
	}
	for (int i = 0; i < 5; i++) {
		double t0 = now_s();
		if (fmod)
			api.p_cuModuleUnload(fmod);
		if ((r = load_module(&fmod, f->ptx, log, sizeof(log))) != CUDA_SUCCESS)
			return printf("FAIL bench: loading the fused PTX: %s; JIT log: %.2000s\n", cuerr(r), log), 1;
		t_load[i] = (now_s() - t0) * 1e3;
	}
	if ((r = api.p_cuModuleGetFunction(&ffn, fmod, f->entry)) != CUDA_SUCCESS ||
	    (r = api.p_cuModuleGetFunction(&ffnp, fmod, f->entry_param)) != CUDA_SUCCESS ||
	    (r = ref_function(&k, &fn, log, sizeof(log))) != CUDA_SUCCESS || (r = prepare_smem(fn, k.smem)) ||
	    (r = prepare_smem(ffn, k.smem)) || (r = api.p_cuStreamCreate(&st, CU_STREAM_NON_BLOCKING)) ||
	    (r = api.p_cuEventCreate(&e0, 0)) || (r = api.p_cuEventCreate(&e1, 0)))
		return printf("FAIL bench: set-up: %s %s\n", cuerr(r), log), 1;

	/* 32 instances, A for separate launches and B for the fused one, identical contents */
	for (int i = 0; i < N; i++) {
		uint64_t seed = fnv1a(k.name) ^ ((uint64_t)i * 0xd1b54a32d192ed03ull);
		pb[i] = xcalloc(1, bk->param_bytes); /* the window parameters stay 0 */
		for (size_t j = 0; j < k.nitems; j++) {
			struct pitem *it = &k.items[j];
			size_t bytes = item_bytes(it);
			uint64_t ps = seed ^ ((uint64_t)(j + 1) * 0x9e3779b97f4a7c15ull);
			if (is_buffer(it)) {
				uint8_t *h = xcalloc(1, bytes + GUARD);
				fill_buffer(it, h, bytes, splitmix64(&ps));
				if ((r = xa.p_cuMemAlloc(&a[i][j], bytes + GUARD)) ||
				    (r = xa.p_cuMemAlloc(&b[i][j], bytes + GUARD)) ||
				    (r = api.p_cuMemcpyHtoD(a[i][j], h, bytes + GUARD)) ||
				    (r = api.p_cuMemcpyHtoD(b[i][j], h, bytes + GUARD)))
					return printf("FAIL bench: buffers: %s\n", cuerr(r)), 1;
				free(h);
				args[i][j] = &a[i][j];
				memcpy(pb[i] + bk->params[j].offset, &b[i][j], 8);
			} else {
				args[i][j] = it->val;
				memcpy(pb[i] + bk->params[j].offset, it->val, it->vsize);
			}
		}
		dl[i].body = 0;
		memcpy(dl[i].grid, k.grid, sizeof(dl[i].grid));
		dl[i].params = pb[i];
		dl[i].param_size = bk->param_bytes;
	}
	cap = sizeof(struct ooo_jit_desc_hdr) + N * (sizeof(struct ooo_jit_desc_member) + ((bk->param_bytes + 15u) & ~15u)) + 64;
	tab = xcalloc(1, cap);
	tab1 = xcalloc(1, cap);
	for (int i = 0; i < REPS; i++) {
		double t0 = now_s();
		tsize = jit_desc_build(dl, N, tab, cap, &total, &need);
		t_desc[i] = (now_s() - t0) * 1e6;
		if (tsize <= 0)
			return printf("FAIL bench: jit_desc_build: %ld (need %zu of %zu)\n", tsize, need, cap), 1;
	}
	{
		struct cres c = { 0 };
		if (!check_desc(&c, tab, tsize, dl, N, total))
			return printf("FAIL bench: %s\n", c.why), 1;
	}
	ptab = xcalloc(1, OOO_JIT_PTABLE_BYTES);
	tsize1 = jit_desc_build(dl, 1, tab1, cap, &total1, &need);
	if (tsize1 <= 0)
		return printf("FAIL bench: jit_desc_build (1 member): %ld\n", tsize1), 1;
	if ((r = xa.p_cuMemAlloc(&ddesc, (size_t)tsize)) || (r = api.p_cuMemcpyHtoD(ddesc, tab, (size_t)tsize)) ||
	    (r = xa.p_cuMemAlloc(&ddesc1, (size_t)tsize1)) || (r = api.p_cuMemcpyHtoD(ddesc1, tab1, (size_t)tsize1)))
		return printf("FAIL bench: descriptor: %s\n", cuerr(r)), 1;

#define TIMED(row, body_)                                                                                  \
	do {                                                                                               \
		for (int rep = 0; rep < WARM + REPS; rep++) {                                              \
			double t0 = now_s();                                                               \
			float ms = 0;                                                                      \
			api.p_cuEventRecord(e0, st);                                                       \
			body_;                                                                             \
			api.p_cuEventRecord(e1, st);                                                       \
			if ((r = api.p_cuStreamSynchronize(st)) != CUDA_SUCCESS)                          \
				return printf("FAIL bench: %s: %s\n", #row, cuerr(r)), 1;                  \
			if (rep < WARM)                                                                    \
				continue;                                                                  \
			wall[rep - WARM] = (now_s() - t0) * 1e6;                                           \
			xa.p_cuEventElapsedTime(&ms, e0, e1);                                              \
			gpu[rep - WARM] = (double)ms * 1e3;                                                \
		}                                                                                          \
		row.wall_us = median(wall, REPS);                                                          \
		row.gpu_us = median(gpu, REPS);                                                            \
	} while (0)

	{
		struct ooo_jit_args ja, ja1;
		void *fa[3] = { &ja.desc, &ja.n_members, &ja.uniform_blocks };
		void *fa1[3] = { &ja1.desc, &ja1.n_members, &ja1.uniform_blocks };

		jit_desc_args(tab, (uint64_t)ddesc, &ja);
		jit_desc_args(tab1, (uint64_t)ddesc1, &ja1);
		TIMED(ra, for (int i = 0; i < N; i++) api.p_cuLaunchKernel(fn, k.grid[0], k.grid[1], k.grid[2], k.block[0],
									   k.block[1], k.block[2], k.smem, st, args[i], NULL));
		TIMED(rb, api.p_cuLaunchKernel(ffn, total, 1, 1, k.block[0], k.block[1], k.block[2], k.smem, st, fa, NULL));
		TIMED(rb2, {
			jit_desc_build(dl, N, tab, cap, &total, &need);
			api.p_cuMemcpyHtoDAsync(ddesc, tab, (size_t)tsize, st);
			api.p_cuLaunchKernel(ffn, total, 1, 1, k.block[0], k.block[1], k.block[2], k.smem, st, fa, NULL);
		});
		if (jit_desc_build(dl, N, ptab, OOO_JIT_PTABLE_BYTES, &total, &need) > 0) {
			void *pa[1] = { ptab };

			TIMED(rb3, {
				jit_desc_build(dl, N, ptab, OOO_JIT_PTABLE_BYTES, &total, &need);
				api.p_cuLaunchKernel(ffnp, total, 1, 1, k.block[0], k.block[1], k.block[2], k.smem, st, pa,
						     NULL);
			});
		}
		TIMED(rc1, api.p_cuLaunchKernel(fn, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
						k.smem, st, args[0], NULL));
		TIMED(rc2, api.p_cuLaunchKernel(ffn, total1, 1, 1, k.block[0], k.block[1], k.block[2], k.smem, st, fa1, NULL));
	}
#undef TIMED

	/* (a) and (b) must have computed the same bytes */
	for (int i = 0; i < N && same; i++)
		for (size_t j = 0; j < k.nitems && same; j++) {
			struct pitem *it = &k.items[j];
			size_t bytes = item_bytes(it);
			uint8_t *ha, *hb;
			struct minst mi = { .k = &k, .inst = (unsigned)i };
			struct cres c = { 0 };
			if (!is_buffer(it))
				continue;
			ha = xcalloc(1, bytes + GUARD);
			hb = xcalloc(1, bytes + GUARD);
			if ((r = api.p_cuMemcpyDtoH(ha, a[i][j], bytes + GUARD)) ||
			    (r = api.p_cuMemcpyDtoH(hb, b[i][j], bytes + GUARD)))
				return printf("FAIL bench: read back: %s\n", cuerr(r)), 1;
			compare(&c, &mi, j, ha, hb, bytes, i);
			if (c.failed) {
				printf("FAIL bench: (a) and (b) differ: %s\n", c.why);
				same = false;
			}
			free(ha);
			free(hb);
		}

	printf("\njit bench: %s%s, grid %ux%ux%u, block %ux%ux%u, %d members, medians of %d runs\n", k.name,
	       g_fenced ? " (fused: its fenced copy)" : "", k.grid[0],
	       k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2], N, REPS);
	printf("  %-44s %10s %10s\n", "", "wall us", "GPU us");
	printf("  %-44s %10.2f %10.2f\n", "(a) 32 separate launches + sync", ra.wall_us, ra.gpu_us);
	printf("  %-44s %10.2f %10.2f\n", "(b) 1 fused launch of 32 members + sync", rb.wall_us, rb.gpu_us);
	printf("  %-44s %10.2f %10.2f\n", "(b') build + upload descriptor, fused launch", rb2.wall_us, rb2.gpu_us);
	if (rb3.wall_us > 0)
		printf("  %-44s %10.2f %10.2f\n", "(b'') build descriptor, fused launch with it", rb3.wall_us, rb3.gpu_us);
	else
		printf("  %-44s %10s %10s   (the table exceeds %u bytes)\n", "(b'') build descriptor, fused launch with it",
		       "-", "-", OOO_JIT_PTABLE_BYTES);
	printf("  %-44s %10.2fx %9.2fx\n", "    (a) / (b)", ra.wall_us / rb.wall_us, ra.gpu_us / rb.gpu_us);
	printf("  %-44s %10.2fx %9.2fx\n", "    (a) / (b')", ra.wall_us / rb2.wall_us, ra.gpu_us / rb2.gpu_us);
	if (rb3.wall_us > 0)
		printf("  %-44s %10.2fx %9.2fx\n", "    (a) / (b'')", ra.wall_us / rb3.wall_us, ra.gpu_us / rb3.gpu_us);
	printf("  %-44s %10.2f %10.2f\n", "(c) K alone + sync", rc1.wall_us, rc1.gpu_us);
	printf("  %-44s %10.2f %10.2f\n", "(c) fused, 1 member + sync", rc2.wall_us, rc2.gpu_us);
	printf("  %-44s %10.3fx %9.3fx   (target <= 1.05x)\n", "    fused-1 / alone", rc2.wall_us / rc1.wall_us,
	       rc2.gpu_us / rc1.gpu_us);
	{
		double tp = median(t_parse, 51), tf = median(t_fuse, 21), td = median(t_desc, REPS),
		       tl0 = t_load[0], tl = median(t_load, 5);
		int regs_k = 0, regs_f = 0;
		api.p_cuFuncGetAttribute(&regs_k, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
		api.p_cuFuncGetAttribute(&regs_f, CU_FUNC_ATTRIBUTE_NUM_REGS, ffn);
		printf("JIT cost (wall clock medians):\n");
		printf("  ptx_parse          %10.1f us  (%zu bytes of PTX)\n", tp, pf.len);
		printf("  jit_fuse, 1 body   %10.1f us  (%.2f us per member of the 32-member bundle)\n", tf, tf / N);
		printf("  jit_desc_build     %10.2f us  for %d members (%.3f us per member, %ld-byte table)\n", td, N, td / N,
		       tsize);
		printf("  cuModuleLoadDataEx %10.2f ms  of the fused PTX (%zu bytes), once per distinct bundle: the first "
		       "load; %.2f ms the median of 5 (the driver's JIT cache; CUDA_CACHE_DISABLE=1 turns it off)\n",
		       tl0, f->ptx_len ? f->ptx_len : strlen(f->ptx), tl);
		printf("  registers          %10d     original, %d fused\n", regs_k, regs_f);
	}
	printf("results of (a) and (b): %s\n", same ? "bit-identical" : "DIFFERENT");
	ok = same;
	if (same)
		g_passed++;
	else
		g_failed++;
	for (int i = 0; i < N; i++) {
		for (size_t j = 0; j < k.nitems; j++) {
			if (a[i][j])
				xa.p_cuMemFree(a[i][j]);
			if (b[i][j])
				xa.p_cuMemFree(b[i][j]);
		}
		free(pb[i]);
	}
	xa.p_cuMemFree(ddesc);
	xa.p_cuMemFree(ddesc1);
	api.p_cuEventDestroy(e0);
	api.p_cuEventDestroy(e1);
	api.p_cuStreamDestroy(st);
	api.p_cuModuleUnload(fmod);
	jit_fused_free(f);
	free(tab);
	free(tab1);
	free(ptab);
	return ok ? 0 : 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: jit_check LIBCUDA check SPEC_DIR PTX_DIR [--only NAME[,NAME...]]\n"
			"       jit_check LIBCUDA triton PTX_FILE KERNEL SPEC\n"
			"       jit_check LIBCUDA bench PTX_FILE KERNEL SPEC\n"
			"       jit_check LIBCUDA fencecost SPEC_DIR PTX_DIR [--only NAME[,NAME...]]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *resume = getenv("JIT_CHECK_RESUME");

	setvbuf(stdout, NULL, _IOLBF, 0);
	g_argv = argv;
	g_t0 = now_s();
	g_fenced = getenv("JIT_CHECK_FENCED") && !strcmp(getenv("JIT_CHECK_FENCED"), "1");
	if (resume && sscanf(resume, "%lu,%d,%d,%d,%lf", &g_skip, &g_passed, &g_failed, &g_execs, &g_t0) == 5)
		g_resumed = true;
	if (argc < 3)
		return usage();
	if (!strcmp(argv[2], "check") || !strcmp(argv[2], "fencecost")) {
		const char *only = NULL;
		if (argc == 7 && !strcmp(argv[5], "--only"))
			only = argv[6];
		else if (argc != 5)
			return usage();
		if (cuda_setup(argv[1]) < 0)
			return 1;
		return (!strcmp(argv[2], "check") ? cmd_check : cmd_fencecost)(argv[3], argv[4], only);
	}
	if (!strcmp(argv[2], "triton") && argc == 6) {
		if (cuda_setup(argv[1]) < 0)
			return 1;
		return cmd_triton(argv[3], argv[4], argv[5]);
	}
	if (!strcmp(argv[2], "bench") && argc == 6) {
		if (cuda_setup(argv[1]) < 0)
			return 1;
		return cmd_bench(argv[3], argv[4], argv[5]);
	}
	return usage();
}
