/* SPDX-License-Identifier: MIT */
/*
 * bundle_check: the executor's coalescer (daemon/exec/coalesce.c) on a real
 * GPU, for tests/gpu: launches that oood may bundle into fused launches give
 * the same bytes as launches that it cannot bundle, for every fusible kernel
 * of the JIT corpus (tests/jit/kernels).
 *
 *   bundle_check [OPTIONS] PTXFILE... | @LISTFILE...
 *
 * Each PTXFILE (NAME.ptx, from nvcc -ptx) has its spec lines in NAME.cu
 * (in the --specs directory, else next to the PTX); a LISTFILE names one
 * PTX file a line, optionally followed by its spec file ('#' comments).
 * The spec line, as tests/jit/README.md and tests/gpu/jit_check.c read it:
 *   // ooo-jit: kernel=NAME expect=fusible grid=GX[,GY,GZ] block=BX[,BY,BZ] smem=BYTES params=P1;P2;...
 *   // ooo-jit: kernel=NAME expect=reject reason=SUBSTRING   (not run here)
 * params: in:T:N out:T:N inout:T:N idx:T:N:MAX (device buffers), i32:V u32:V
 * i64:V u64:V f32:V f64:V (scalars), raw:HEX (a by-value struct's bytes).
 *
 * For each expect=fusible kernel: K sessions (ooo_open; each its own queue,
 * buffers, load of the same PTX, kernel handle), each session's buffers
 * filled differently (seeded by the session's index, like jit_check's
 * instances) with a guard area after each buffer;
 *  1. reference: session by session, one launch and ooo_queue_sync, so that
 *     no launch has a partner to be bundled with; read every buffer back;
 *  2. bundled: every buffer reset to its first contents, then the K
 *     launches submitted back to back (one thread, K queues), then all
 *     queues synced and every buffer read back; R rounds, with a pause
 *     before the second one (oood compiles a fused kernel in the background
 *     when a kernel is first seen: the first rounds may run unfused);
 * every buffer of every session, guard bytes included, must equal the
 * reference bit for bit in every round. To give the scheduler something to
 * bundle, each bundled round starts with a short spinning kernel ("gate")
 * on a session of its own: while it runs on the GPU the K launches are held
 * and go as one bundle (--gate-iters 0: no gate).
 *
 * The corpus holds deterministic kernels only (tests/jit/README.md: no float
 * atomics, no races, no stored atomic return values; jit_check has no flag
 * for others and compares every buffer bit for bit). This program does the
 * same; when a bundled result differs it launches that session alone once
 * more and says whether the kernel differs from itself without bundling.
 *
 * Prints "ok: FILE:KERNEL K=8" or "FAIL: FILE:KERNEL K=8: ..." per kernel,
 * ends with "N passed, N failed"; exits 0 only when none failed and at least
 * one kernel ran (1 otherwise, 2 for a usage error).
 *
 * Options:
 *   -s, --socket PATH     oood's socket (default $OOO_SOCKET, else
 *                         $OOO_RUNDIR/oood.sock, else /run/ooo/oood.sock)
 *   -S, --specs DIR       where NAME.cu of NAME.ptx lies (default: beside it)
 *   -k, --sessions K      sessions per kernel (default 8, 2..64)
 *   -r, --rounds R        bundled rounds (default 5)
 *   -p, --pause-ms MS     pause before the second bundled round (default 50)
 *   -t, --timeout-ms MS   for each ooo_queue_sync (default 20000)
 *   -g, --gate-iters N    loop iterations of the gate kernel (default 200000, 0: none)
 *   -l, --launches L      launches of the kernel per session and round, back to
 *                         back on its queue (default 1, 1..64): with L > 1 oood
 *                         may chain a queue's launches in one fused bundle, so a
 *                         kernel whose output feeds its next launch (inout
 *                         buffers) checks that they ran in order
 *   -o, --only LIST       only kernels (or FILE or FILE:KERNEL) in the comma-separated LIST
 *   -n, --dry-run         parse the specs and list the kernels; no daemon
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>

#define NAME_CAP 256
#define MAX_ITEMS 64  /* struct ooo_kernel_info describes 64 parameters */
#define MAX_K 64
#define GUARD 256u    /* bytes after every buffer, compared like the rest */
#define GUARD_BYTE(i) ((uint8_t)(0xa5u ^ (unsigned)(i)))
#define SETUP_RETRY_S 15.0 /* waiting for a GPU (an executor that restarts) */

static const char *g_sock;
static const char *g_spec_dir;
static unsigned g_k = 8, g_rounds = 5, g_pause_ms = 50, g_launches = 1;
static int g_timeout_ms = 20000;
static uint32_t g_gate_iters = 200000;
static const char *g_only;
static int g_passed, g_failed;

/* ---- small helpers --------------------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		fprintf(stderr, "bundle_check: out of memory\n");
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

/* float to IEEE half, round to nearest even (subnormals, overflow to inf); as jit_check */
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

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* ---- results --------------------------------------------------------------------------------- */

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

/* Append to a failure already recorded. */
__attribute__((format(printf, 2, 3))) static void cmore(struct cres *c, const char *fmt, ...)
{
	size_t n = strlen(c->why);
	va_list ap;

	if (n + 1 >= sizeof(c->why))
		return;
	va_start(ap, fmt);
	vsnprintf(c->why + n, sizeof(c->why) - n, fmt, ap);
	va_end(ap);
}

/*
 * rc < 0: record "WHAT: error (the daemon's reason)" and return false. Call
 * it right after the failing libooo call: ooo_last_error() is the calling
 * thread's and lasts until its next libooo call.
 */
__attribute__((format(printf, 3, 4))) static bool rc_ok(struct cres *c, int rc, const char *fmt, ...)
{
	char what[512], last[512];
	va_list ap;

	if (rc >= 0)
		return true;
	snprintf(last, sizeof(last), "%s", ooo_last_error());
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	cfail(c, "%s: %s (%d)%s%s%s", what, ooo_strerror(rc), rc, last[0] ? " (" : "", last, last[0] ? ")" : "");
	return false;
}

/* ---- the spec (as jit_check reads it) -------------------------------------------------------- */

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
	char *ptx_path, *spec_path;
	char label[NAME_CAP]; /* the spec file's name, for messages */
	char *text;           /* the PTX, NUL-terminated */
	size_t len;
};

struct kspec {
	char name[NAME_CAP];
	char disp[2 * NAME_CAP + 8]; /* FILE:KERNEL */
	struct pfile *file;
	int line;
	bool fusible;         /* expect=fusible */
	char reason[NAME_CAP];
	uint32_t grid[3], block[3], smem;
	size_t nitems;
	struct pitem *items;
	char err[1024];       /* a spec error: the kernel fails without running */
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
		if (!k->err[0] && k->nitems > MAX_ITEMS)
			snprintf(k->err, sizeof(k->err), "spec: %zu parameters, more than %d", k->nitems, MAX_ITEMS);
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

/* A buffer's first contents (as jit_check fills them), then the guard bytes. */
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

/* Read the spec lines of one file into *ks (grown). false: the file is unreadable. */
static bool read_specs(struct pfile *pf, struct kspec **ks, size_t *nk, size_t *cap)
{
	FILE *in = fopen(pf->spec_path, "r");
	char line[16384];
	int lineno = 0;

	if (!in)
		return false;
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
			snprintf(k->name, sizeof(k->name), "?");
			snprintf(k->err, sizeof(k->err), "spec line %d without kernel=", lineno);
			k->fusible = true; /* reported as a failure */
		}
		snprintf(k->disp, sizeof(k->disp), "%s:%s", pf->label, k->name);
		(*nk)++;
	}
	fclose(in);
	return true;
}

/* ---- sessions ------------------------------------------------------------------------------- */

struct tsess {
	ooo_session *s;
	ooo_queue *q;
	ooo_module *m;
	ooo_kernel *k;
	ooo_buf *buf[MAX_ITEMS];   /* NULL for scalars */
	uint8_t *init[MAX_ITEMS];  /* first contents, bytes + GUARD */
	uint8_t *ref[MAX_ITEMS];   /* after the reference launch */
	uint8_t *params;
	uint32_t plen;
};

/* Open a session, retrying while oood has no usable GPU (an executor restarting). */
static ooo_session *open_session(const char *label, struct cres *c)
{
	struct ooo_open_opts o = { .sz = sizeof(o), .path = g_sock, .name = label, .timeout_ms = 10000 };
	ooo_session *s = ooo_open_opts(&o);

	if (!s) {
		int e = errno;
		char last[512];
		snprintf(last, sizeof(last), "%s", ooo_last_error());
		cfail(c, "ooo_open(%s): %s%s%s%s", g_sock ? g_sock : "(default socket)", ooo_strerror(e),
		      last[0] ? " (" : "", last, last[0] ? ")" : "");
	}
	return s;
}

static int queue_create_retry(ooo_session *s, ooo_queue **q)
{
	double t0 = now_s();
	int r;

	while ((r = ooo_queue_create(s, NULL, q)) == -OOO_ENODEV || r == -OOO_EDEVRESET) {
		if (now_s() - t0 > SETUP_RETRY_S)
			break;
		sleep_ms(100);
	}
	return r;
}

static void sess_close(struct tsess *t)
{
	for (size_t j = 0; j < MAX_ITEMS; j++) {
		if (t->buf[j])
			ooo_buf_free(t->buf[j]);
		free(t->init[j]);
		free(t->ref[j]);
	}
	ooo_kernel_free(t->k);
	if (t->m)
		ooo_module_unload(t->m);
	if (t->q)
		ooo_queue_destroy(t->q);
	ooo_close(t->s);
	free(t->params);
	memset(t, 0, sizeof(*t));
}

/*
 * Session idx of kernel k: queue, module, kernel, its parameter layout
 * checked against the spec, buffers and their first contents, the
 * parameter block.
 */
static bool sess_open(struct tsess *t, const struct kspec *k, unsigned idx, struct cres *c)
{
	struct ooo_kernel_info info = { .sz = sizeof(info) };
	uint64_t seed = fnv1a(k->name) ^ ((uint64_t)idx * 0xd1b54a32d192ed03ull);
	char label[64];

	memset(t, 0, sizeof(*t));
	snprintf(label, sizeof(label), "bundle_check#%u", idx);
	if (!(t->s = open_session(label, c)))
		return false;
	if (!rc_ok(c, queue_create_retry(t->s, &t->q), "session %u: ooo_queue_create", idx))
		return false;
	if (!rc_ok(c, ooo_module_load(t->s, OOO_PTX, k->file->text, k->file->len, &t->m),
		   "session %u: ooo_module_load(%s)", idx, k->file->ptx_path))
		return false;
	if (!rc_ok(c, ooo_kernel_get(t->m, k->name, &t->k), "session %u: ooo_kernel_get(%s)", idx, k->name))
		return false;
	if (!rc_ok(c, ooo_kernel_info(t->k, &info), "session %u: ooo_kernel_info", idx))
		return false;
	if (info.nparams != k->nitems) {
		cfail(c, "spec error: %zu params items, the kernel has %u parameters", k->nitems, info.nparams);
		return false;
	}
	t->plen = info.param_size;
	t->params = xcalloc(1, t->plen);
	for (size_t j = 0; j < k->nitems; j++) {
		const struct pitem *it = &k->items[j];
		uint32_t want = is_buffer(it) ? 8 : it->vsize;
		size_t bytes = item_bytes(it);
		uint64_t ps = seed ^ ((uint64_t)(j + 1) * 0x9e3779b97f4a7c15ull);

		if (info.param_bytes[j] != want || (uint64_t)info.param_offset[j] + want > t->plen) {
			cfail(c, "spec error: params item %zu (%s) is %u bytes; kernel parameter %zu is %u bytes at offset %u "
				 "(of %u)",
			      j, it->text, want, j, info.param_bytes[j], info.param_offset[j], t->plen);
			return false;
		}
		if (!is_buffer(it)) {
			memcpy(t->params + info.param_offset[j], it->val, it->vsize);
			continue;
		}
		if (!rc_ok(c, ooo_buf_alloc(t->s, bytes + GUARD, 0, &t->buf[j]), "session %u: ooo_buf_alloc(%zu) for param %zu",
			   idx, bytes + GUARD, j))
			return false;
		{
			uint64_t a = ooo_buf_addr(t->buf[j]);
			memcpy(t->params + info.param_offset[j], &a, 8);
		}
		t->init[j] = xcalloc(1, bytes + GUARD);
		t->ref[j] = xcalloc(1, bytes + GUARD);
		fill_buffer(it, t->init[j], bytes, splitmix64(&ps));
	}
	return true;
}

/* Every buffer of session t back to its first contents, and the queue synced. */
static bool sess_reset(struct tsess *t, const struct kspec *k, unsigned idx, struct cres *c)
{
	for (size_t j = 0; j < k->nitems; j++) {
		if (!t->buf[j])
			continue;
		if (!rc_ok(c, ooo_memcpy_htod(t->q, ooo_buf_addr(t->buf[j]), t->init[j], item_bytes(&k->items[j]) + GUARD),
			   "session %u: ooo_memcpy_htod (param %zu)", idx, j))
			return false;
	}
	return rc_ok(c, ooo_queue_sync(t->q, g_timeout_ms), "session %u: sync after filling the buffers", idx);
}

/* The session's launches of a round: --launches of the kernel, back to back on its queue. */
static int sess_launch(struct tsess *t, const struct kspec *k)
{
	int rc = 0;

	for (unsigned l = 0; l < g_launches && rc == 0; l++)
		rc = ooo_launch(t->q, t->k, k->grid, k->block, k->smem, t->params, t->plen);
	return rc;
}

/* Buffer j of session t into dst (bytes + GUARD). */
static bool sess_read(struct tsess *t, const struct kspec *k, unsigned idx, size_t j, uint8_t *dst, struct cres *c)
{
	if (!rc_ok(c, ooo_memcpy_dtoh(t->q, dst, ooo_buf_addr(t->buf[j]), item_bytes(&k->items[j]) + GUARD),
		   "session %u: ooo_memcpy_dtoh (param %zu)", idx, j))
		return false;
	return rc_ok(c, ooo_queue_sync(t->q, g_timeout_ms), "session %u: sync after reading param %zu", idx, j);
}

/* First differing byte of a and b (n bytes), or SIZE_MAX; *ndiff: how many differ. */
static size_t first_diff(const uint8_t *a, const uint8_t *b, size_t n, size_t *ndiff)
{
	size_t first = SIZE_MAX;

	*ndiff = 0;
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i]) {
			if (first == SIZE_MAX)
				first = i;
			(*ndiff)++;
		}
	return first;
}

/* ---- the gate: a spinning kernel on a session of its own, holding the GPU while the K launches come ---- */

static const char gate_ptx[] =
	".version 7.8\n"
	".target sm_90\n"
	".address_size 64\n"
	"\n"
	".visible .entry bc_gate(\n"
	"\t.param .u64 bc_gate_out,\n"
	"\t.param .u32 bc_gate_iters\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<3>;\n"
	"\t.reg .b32 %r<6>;\n"
	"\t.reg .b64 %rd<3>;\n"
	"\n"
	"\tld.param.u64 %rd1, [bc_gate_out];\n"
	"\tld.param.u32 %r1, [bc_gate_iters];\n"
	"\tmov.u32 %r2, 0;\n"
	"\tmov.u32 %r3, 1;\n"
	"\tsetp.eq.u32 %p1, %r1, 0;\n"
	"\t@%p1 bra $L_done;\n"
	"$L_loop:\n"
	"\tmad.lo.u32 %r3, %r3, 1664525, 1013904223;\n"
	"\tadd.u32 %r2, %r2, 1;\n"
	"\tsetp.lt.u32 %p2, %r2, %r1;\n"
	"\t@%p2 bra $L_loop;\n"
	"$L_done:\n"
	"\tmov.u32 %r4, %tid.x;\n"
	"\tsetp.ne.u32 %p1, %r4, 0;\n"
	"\t@%p1 bra $L_end;\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n"
	"\tst.global.u32 [%rd2], %r3;\n"
	"$L_end:\n"
	"\tret;\n"
	"}\n";

static struct {
	ooo_session *s;
	ooo_queue *q;
	ooo_module *m;
	ooo_kernel *k;
	ooo_buf *b;
	uint8_t params[64];
	uint32_t plen;
	int failures;   /* in a row */
	bool off;
	bool launched;  /* this round */
} gate;

static void gate_close(void)
{
	ooo_kernel_free(gate.k);
	if (gate.m)
		ooo_module_unload(gate.m);
	if (gate.b)
		ooo_buf_free(gate.b);
	if (gate.q)
		ooo_queue_destroy(gate.q);
	ooo_close(gate.s);
	gate.s = NULL;
	gate.q = NULL;
	gate.m = NULL;
	gate.k = NULL;
	gate.b = NULL;
	gate.launched = false;
}

static void gate_trouble(const struct cres *c)
{
	gate_close();
	if (++gate.failures >= 2 && !gate.off) {
		gate.off = true;
		printf("note: no gate kernel from now on (%s): bundling is left to the timing of the submissions\n",
		       c->why);
	} else {
		printf("note: gate kernel: %s\n", c->why);
	}
}

/* Kept open across kernels, so that the scheduler's cost model knows how long the gate runs. */
static bool gate_open(void)
{
	struct ooo_kernel_info info = { .sz = sizeof(info) };
	struct cres c = { 0 };
	uint64_t a;

	if (gate.off || !g_gate_iters)
		return false;
	if (gate.s)
		return true;
	if (!(gate.s = open_session("bundle_check-gate", &c)) ||
	    !rc_ok(&c, queue_create_retry(gate.s, &gate.q), "ooo_queue_create") ||
	    !rc_ok(&c, ooo_module_load(gate.s, OOO_PTX, gate_ptx, sizeof(gate_ptx) - 1, &gate.m), "ooo_module_load") ||
	    !rc_ok(&c, ooo_kernel_get(gate.m, "bc_gate", &gate.k), "ooo_kernel_get") ||
	    !rc_ok(&c, ooo_kernel_info(gate.k, &info), "ooo_kernel_info") ||
	    !rc_ok(&c, ooo_buf_alloc(gate.s, 4096, 0, &gate.b), "ooo_buf_alloc")) {
		gate_trouble(&c);
		return false;
	}
	if (info.nparams != 2 || info.param_size > sizeof(gate.params) || info.param_bytes[0] != 8 ||
	    info.param_bytes[1] != 4) {
		cfail(&c, "unexpected parameter layout (%u parameters, %u bytes)", info.nparams, info.param_size);
		gate_trouble(&c);
		return false;
	}
	memset(gate.params, 0, sizeof(gate.params));
	a = ooo_buf_addr(gate.b);
	memcpy(gate.params + info.param_offset[0], &a, 8);
	memcpy(gate.params + info.param_offset[1], &g_gate_iters, 4);
	gate.plen = info.param_size;
	return true;
}

static void gate_launch(void)
{
	static const uint32_t one[3] = { 1, 1, 1 }, warp[3] = { 32, 1, 1 };
	struct cres c = { 0 };

	gate.launched = false;
	if (!gate_open())
		return;
	if (!rc_ok(&c, ooo_launch(gate.q, gate.k, one, warp, 0, gate.params, gate.plen), "ooo_launch")) {
		gate_trouble(&c);
		return;
	}
	gate.launched = true;
}

static void gate_sync(void)
{
	struct cres c = { 0 };

	if (!gate.launched)
		return;
	gate.launched = false;
	if (!rc_ok(&c, ooo_queue_sync(gate.q, g_timeout_ms), "sync"))
		gate_trouble(&c);
	else
		gate.failures = 0;
}

/* ---- one kernel ----------------------------------------------------------------------------- */

/*
 * Compare buffer j of session i (just read into got) with its reference;
 * on a difference, record it and find out whether the kernel differs from
 * itself without bundling (session i launched alone once more).
 */
static bool check_buffer(struct tsess *ts, const struct kspec *k, unsigned i, size_t j, const uint8_t *got,
			 unsigned round, uint8_t *scratch, struct cres *c)
{
	const struct pitem *it = &k->items[j];
	size_t bytes = item_bytes(it), es = etypes[it->type].size, ndiff, first, nb = 0;
	struct cres c2 = { 0 };

	first = first_diff(ts[i].ref[j], got, bytes + GUARD, &ndiff);
	if (first == SIZE_MAX)
		return true;
	for (size_t jj = 0; jj < j; jj++)
		nb += is_buffer(&k->items[jj]);
	if (first >= bytes) {
		cfail(c, "bundled round %u of %u: session %u, buffer %zu (param %zu, %s), first differing byte offset %zu: "
			 "past the end of the %zu-byte buffer (a write out of bounds); %zu bytes differ",
		      round + 1, g_rounds, i, nb, j, it->text, first, bytes, ndiff);
	} else {
		char want[80], gotd[80];
		size_t el = first / es;
		describe_elem(want, sizeof(want), it, ts[i].ref[j] + el * es);
		describe_elem(gotd, sizeof(gotd), it, got + el * es);
		cfail(c, "bundled round %u of %u: session %u, buffer %zu (param %zu, %s), first differing byte offset %zu "
			 "(element %zu: expected %s, got %s); %zu of %zu bytes differ",
		      round + 1, g_rounds, i, nb, j, it->text, first, el, want, gotd, ndiff, bytes + GUARD);
	}
	/* the kernel alone, unbundled, once more */
	if (sess_reset(&ts[i], k, i, &c2) && rc_ok(&c2, sess_launch(&ts[i], k), "ooo_launch") &&
	    rc_ok(&c2, ooo_queue_sync(ts[i].q, g_timeout_ms), "sync") && sess_read(&ts[i], k, i, j, scratch, &c2)) {
		if (first_diff(ts[i].ref[j], scratch, bytes + GUARD, &ndiff) == SIZE_MAX)
			cmore(c, "; launched alone again, session %u matches its reference: bundling changed the result", i);
		else
			cmore(c, "; launched alone again, session %u differs from its reference too (%zu bytes): the kernel is "
				 "not deterministic by itself, which the corpus does not allow",
			      i, ndiff);
	} else {
		cmore(c, "; launching session %u alone again failed: %s", i, c2.why);
	}
	return false;
}

/* Returns true when the kernel's sessions could be set up (for the give-up count). */
static bool check_kernel(const struct kspec *k)
{
	struct tsess *ts = xcalloc(g_k, sizeof(*ts));
	struct cres c = { 0 };
	uint8_t *got = NULL, *scratch = NULL;
	size_t maxbytes = 0;
	bool setup = false;

	if (k->err[0]) {
		cfail(&c, "%s (%s:%d)", k->err, k->file->spec_path, k->line);
		setup = true;
		goto out;
	}
	for (size_t j = 0; j < k->nitems; j++)
		if (is_buffer(&k->items[j]) && item_bytes(&k->items[j]) > maxbytes)
			maxbytes = item_bytes(&k->items[j]);
	got = xcalloc(1, maxbytes + GUARD);
	scratch = xcalloc(1, maxbytes + GUARD);
	for (unsigned i = 0; i < g_k; i++)
		if (!sess_open(&ts[i], k, i, &c)) {
			setup = ts[0].q != NULL; /* reached a GPU: the failure is this kernel's */
			goto out;
		}
	setup = true;

	/* 1. the reference: one launch at a time, nothing to bundle it with */
	for (unsigned i = 0; i < g_k; i++)
		if (!sess_reset(&ts[i], k, i, &c))
			goto out;
	for (unsigned i = 0; i < g_k; i++) {
		if (!rc_ok(&c, sess_launch(&ts[i], k), "reference: session %u: ooo_launch", i) ||
		    !rc_ok(&c, ooo_queue_sync(ts[i].q, g_timeout_ms), "reference: session %u: sync after the launch", i))
			goto out;
	}
	for (unsigned i = 0; i < g_k; i++)
		for (size_t j = 0; j < k->nitems; j++) {
			size_t bytes = item_bytes(&k->items[j]);
			if (!ts[i].buf[j])
				continue;
			if (!sess_read(&ts[i], k, i, j, ts[i].ref[j], &c))
				goto out;
			for (unsigned g = 0; g < GUARD; g++)
				if (ts[i].ref[j][bytes + g] != GUARD_BYTE(g)) {
					cfail(&c, "reference: session %u, param %zu (%s): the kernel writes past the end of the "
						  "buffer (byte %zu): the spec's COUNT is too small",
					      i, j, k->items[j].text, bytes + g);
					goto out;
				}
		}

	/* 2. bundled: all K launches submitted back to back, then all synced */
	for (unsigned r = 0; r < g_rounds; r++) {
		if (r == 1 && g_pause_ms)
			sleep_ms(g_pause_ms); /* the fused kernel is compiled in the background meanwhile */
		for (unsigned i = 0; i < g_k; i++)
			if (!sess_reset(&ts[i], k, i, &c))
				goto out;
		gate_launch();
		for (unsigned i = 0; i < g_k; i++)
			if (!rc_ok(&c, sess_launch(&ts[i], k), "bundled round %u: session %u: ooo_launch", r + 1, i))
				break;
		for (unsigned i = 0; i < g_k; i++) {
			int rc = ooo_queue_sync(ts[i].q, g_timeout_ms);
			rc_ok(&c, rc, "bundled round %u: session %u: sync after the launch", r + 1, i);
		}
		gate_sync();
		if (c.failed)
			goto out;
		for (unsigned i = 0; i < g_k; i++)
			for (size_t j = 0; j < k->nitems; j++) {
				if (!ts[i].buf[j])
					continue;
				if (!sess_read(&ts[i], k, i, j, got, &c) || !check_buffer(ts, k, i, j, got, r, scratch, &c))
					goto out;
			}
	}

out:
	if (c.failed) {
		printf("FAIL: %s K=%u: %s\n", k->disp, g_k, c.why);
		g_failed++;
	} else {
		printf("ok: %s K=%u\n", k->disp, g_k);
		g_passed++;
	}
	for (unsigned i = 0; i < g_k; i++)
		sess_close(&ts[i]);
	free(ts);
	free(got);
	free(scratch);
	return setup;
}

/* ---- main ----------------------------------------------------------------------------------- */

static bool only_match(const struct kspec *k)
{
	char *list, *save = NULL, *tok;
	char fbase[NAME_CAP];
	bool hit = false;
	const char *dot;

	if (!g_only)
		return true;
	snprintf(fbase, sizeof(fbase), "%s", k->file->label);
	if ((dot = strrchr(fbase, '.')))
		fbase[dot - fbase] = '\0';
	list = xstrdup(g_only);
	for (tok = strtok_r(list, ",", &save); tok && !hit; tok = strtok_r(NULL, ",", &save)) {
		const char *colon = strrchr(tok, ':');
		hit = !strcmp(tok, k->name) || !strcmp(tok, k->file->label) || !strcmp(tok, fbase) || !strcmp(tok, k->disp) ||
		      (colon && (size_t)(colon - tok) == strlen(fbase) && !strncmp(tok, fbase, strlen(fbase)) &&
		       !strcmp(colon + 1, k->name));
	}
	free(list);
	return hit;
}

static void add_file(struct pfile **files, size_t *n, size_t *cap, const char *ptx, const char *spec)
{
	struct pfile *pf;

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*files = realloc(*files, *cap * sizeof(**files));
		if (!*files)
			exit(2);
	}
	pf = &(*files)[(*n)++];
	memset(pf, 0, sizeof(*pf));
	pf->ptx_path = xstrdup(ptx);
	if (spec) {
		pf->spec_path = xstrdup(spec);
	} else {
		/* NAME.ptx: NAME.cu in the spec directory, else beside the PTX */
		const char *b = base_name(ptx);
		size_t bl = strlen(b), dl;
		char *path;

		if (bl > 4 && !strcmp(b + bl - 4, ".ptx"))
			bl -= 4;
		if (g_spec_dir) {
			dl = strlen(g_spec_dir);
			path = xcalloc(1, dl + bl + 8);
			snprintf(path, dl + bl + 8, "%s/%.*s.cu", g_spec_dir, (int)bl, b);
		} else {
			dl = (size_t)(b - ptx);
			path = xcalloc(1, dl + bl + 8);
			snprintf(path, dl + bl + 8, "%.*s%.*s.cu", (int)dl, ptx, (int)bl, b);
		}
		pf->spec_path = path;
	}
	snprintf(pf->label, sizeof(pf->label), "%s", base_name(pf->spec_path));
}

/* A list file: one PTX path a line, optionally its spec file after it. false: unreadable. */
static bool add_list(struct pfile **files, size_t *n, size_t *cap, const char *list)
{
	FILE *in = fopen(list, "r");
	char line[8192];

	if (!in)
		return false;
	while (fgets(line, sizeof(line), in)) {
		char *save = NULL, *ptx, *spec;
		char *hash = strchr(line, '#');

		if (hash)
			*hash = '\0';
		if (!(ptx = strtok_r(line, " \t\r\n", &save)))
			continue;
		spec = strtok_r(NULL, " \t\r\n", &save);
		add_file(files, n, cap, ptx, spec);
	}
	fclose(in);
	return true;
}

static bool parse_uint_opt(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	uint64_t v;

	if (!parse_u64(s, &v) || v < lo || v > hi)
		return false;
	*out = (unsigned long)v;
	return true;
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: bundle_check [-s SOCKET] [-S SPEC_DIR] [-k SESSIONS] [-r ROUNDS] [-p PAUSE_MS] [-t TIMEOUT_MS]\n"
		   "                    [-g GATE_ITERS] [-l LAUNCHES] [-o NAME[,NAME...]] [-n] PTXFILE... | @LISTFILE...\n"
		   "  each NAME.ptx has its ooo-jit spec lines in SPEC_DIR/NAME.cu (default: beside it);\n"
		   "  a LISTFILE has one 'PTXFILE [SPECFILE]' a line. See the comment at the top of bundle_check.c.\n");
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },     { "specs", required_argument, NULL, 'S' },
		{ "sessions", required_argument, NULL, 'k' },   { "rounds", required_argument, NULL, 'r' },
		{ "pause-ms", required_argument, NULL, 'p' },   { "timeout-ms", required_argument, NULL, 't' },
		{ "gate-iters", required_argument, NULL, 'g' }, { "only", required_argument, NULL, 'o' },
		{ "dry-run", no_argument, NULL, 'n' },          { "help", no_argument, NULL, 'h' },
		{ "launches", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	struct pfile *files = NULL;
	struct kspec *ks = NULL;
	size_t nfiles = 0, fcap = 0, nk = 0, kcap = 0, nfusible = 0, nreject = 0;
	bool dry = false;
	int c, bad_setups = 0;
	unsigned long v;
	double t0 = now_s();

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "s:S:k:r:p:t:g:o:l:nh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			g_sock = optarg;
			break;
		case 'S':
			g_spec_dir = optarg;
			break;
		case 'k':
			if (!parse_uint_opt(optarg, 2, MAX_K, &v))
				return fprintf(stderr, "bundle_check: --sessions wants 2..%d\n", MAX_K), 2;
			g_k = (unsigned)v;
			break;
		case 'r':
			if (!parse_uint_opt(optarg, 1, 1000, &v))
				return fprintf(stderr, "bundle_check: --rounds wants 1..1000\n"), 2;
			g_rounds = (unsigned)v;
			break;
		case 'p':
			if (!parse_uint_opt(optarg, 0, 60000, &v))
				return fprintf(stderr, "bundle_check: --pause-ms wants 0..60000\n"), 2;
			g_pause_ms = (unsigned)v;
			break;
		case 't':
			if (!parse_uint_opt(optarg, 1, 3600000, &v))
				return fprintf(stderr, "bundle_check: --timeout-ms wants 1..3600000\n"), 2;
			g_timeout_ms = (int)v;
			break;
		case 'g':
			if (!parse_uint_opt(optarg, 0, UINT32_MAX, &v))
				return fprintf(stderr, "bundle_check: --gate-iters wants 0..%u\n", UINT32_MAX), 2;
			g_gate_iters = (uint32_t)v;
			break;
		case 'o':
			g_only = optarg;
			break;
		case 'l':
			if (!parse_uint_opt(optarg, 1, 64, &v))
				return fprintf(stderr, "bundle_check: --launches wants 1..64\n"), 2;
			g_launches = (unsigned)v;
			break;
		case 'n':
			dry = true;
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			return usage(stderr, 2);
		}
	}
	if (optind >= argc)
		return usage(stderr, 2);
	for (int i = optind; i < argc; i++) {
		if (argv[i][0] == '@') {
			if (!add_list(&files, &nfiles, &fcap, argv[i] + 1)) {
				printf("FAIL: cannot read the list file %s: %s\n", argv[i] + 1, strerror(errno));
				g_failed++;
			}
		} else {
			add_file(&files, &nfiles, &fcap, argv[i], NULL);
		}
	}

	/* the spec lines and the PTX */
	for (size_t i = 0; i < nfiles; i++) {
		struct pfile *pf = &files[i];
		size_t before = nk;

		if (!read_specs(pf, &ks, &nk, &kcap)) {
			printf("FAIL: %s: cannot read its spec file %s: %s\n", pf->ptx_path, pf->spec_path, strerror(errno));
			g_failed++;
			continue;
		}
		if (nk == before) {
			printf("note: no ooo-jit spec lines in %s\n", pf->spec_path);
			continue;
		}
		if (!(pf->text = slurp(pf->ptx_path, &pf->len))) {
			/* its kernels fail one by one below */
			for (size_t j = before; j < nk; j++)
				if (ks[j].fusible && !ks[j].err[0])
					snprintf(ks[j].err, sizeof(ks[j].err), "cannot read %s: %s", pf->ptx_path,
						 strerror(errno));
		}
	}
	for (size_t i = 0; i < nk; i++) {
		if (!only_match(&ks[i]))
			continue;
		if (ks[i].fusible || ks[i].err[0])
			nfusible++;
		else
			nreject++;
	}
	printf("bundle_check: %zu kernels to run (%zu expect=reject not run) from %zu files; K=%u sessions, %u launch%s "
	       "each, %u bundled rounds, %u ms pause, gate %s; socket %s\n",
	       nfusible, nreject, nfiles, g_k, g_launches, g_launches == 1 ? "" : "es", g_rounds, g_pause_ms,
	       g_gate_iters ? "on" : "off",
	       g_sock ? g_sock : "(default: $OOO_SOCKET, $OOO_RUNDIR/oood.sock, /run/ooo/oood.sock)");

	for (size_t i = 0; i < nk; i++) {
		const struct kspec *k = &ks[i];

		if (!only_match(k) || (!k->fusible && !k->err[0]))
			continue;
		if (dry) {
			printf("would run: %s grid=%u,%u,%u block=%u,%u,%u smem=%u, %zu params%s%s\n", k->disp, k->grid[0],
			       k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2], k->smem, k->nitems,
			       k->err[0] ? ": spec error: " : "", k->err);
			continue;
		}
		if (bad_setups >= 3) {
			printf("FAIL: %s K=%u: not run: the last %d kernels could not be set up\n", k->disp, g_k, bad_setups);
			g_failed++;
			continue;
		}
		if (check_kernel(k))
			bad_setups = 0;
		else
			bad_setups++;
	}
	gate_close();
	if (!dry && !g_passed && !g_failed) {
		printf("FAIL: no expect=fusible kernel to run\n");
		g_failed++;
	}
	printf("bundle_check took %.1f s\n", now_s() - t0);
	printf("%d passed, %d failed\n", g_passed, g_failed);

	for (size_t i = 0; i < nk; i++) {
		for (size_t j = 0; j < ks[i].nitems; j++)
			free(ks[i].items[j].val);
		free(ks[i].items);
	}
	for (size_t i = 0; i < nfiles; i++) {
		free(files[i].ptx_path);
		free(files[i].spec_path);
		free(files[i].text);
	}
	free(ks);
	free(files);
	return g_failed || (dry ? 0 : !g_passed);
}
