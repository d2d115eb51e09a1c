/* SPDX-License-Identifier: MIT */
/*
 * launch_check: modules and launches through ooo on a real GPU, for tests/gpu.
 *   launch_check SOCK vadd SRC.cu PTX CUBIN   vector add from CUDA C, PTX and CUBIN, results checked
 *   launch_check SOCK fault PTX [noresults]   a kernel that faults: OOO_EFAULT, and another
 *                                             session's buffer is intact after the executor restart;
 *                                             both sessions' module and kernel handles, taken before
 *                                             the fault, still launch on the new executor (oood
 *                                             loads them again), and poke's store lands (42: not
 *                                             read with noresults, tests/fakecuda runs no kernel)
 *   launch_check SOCK hang PTX LIMIT_MS       a kernel that never ends (PTX's hang(p, tag) with tag
 *                                             0x676e6168, which spins for ever on the GPU and marks a
 *                                             hang for tests/fakecuda): its sync gets OOO_EHUNG (or
 *                                             OOO_EDEVRESET) after LIMIT_MS (oood.conf
 *                                             kernel_time_limit_ms) and well before LIMIT_MS + 15 s;
 *                                             another session's buffer is intact after the executor
 *                                             restart, and both sessions' kernels run again (tag 0)
 *   launch_check SOCK hang PTX LIMIT_MS exit  the same kernel, but its tenant closes its session at
 *                                             once (its detach waits on the hung work): the executor
 *                                             is replaced after LIMIT_MS all the same (the other
 *                                             session sees OOO_EDEVRESET), the other's buffer intact
 *   launch_check SOCK hang PTX LIMIT_MS stay  the same kernel with no sync behind it, its tenant still
 *                                             there (a launch has no completion of its own): the
 *                                             executor is replaced after LIMIT_MS all the same, before
 *                                             LIMIT_MS + 15 s; the other's buffer intact
 *   launch_check SOCK hang PTX LIMIT_MS late  the same, its sync issued LIMIT_MS / 2 after the launch
 *                                             (the executor timed the launch by then): OOO_EHUNG or
 *                                             OOO_EDEVRESET all the same
 *   launch_check SOCK hang PTX LIMIT_MS barred  the hang that reaches the uid's hang_strikes: after
 *                                             the restart its session is closed (OOO_ECLOSED) and a
 *                                             new session's data path is refused (OOO_EHUNG)
 *   launch_check SOCK freestall PTX SLOW_MS free|queue|close  one session frees its buffer,
 *                                             destroys its queue or closes behind its "slow" kernel
 *                                             (tests/fakecuda: FAKECUDA_SLOW_MS = SLOW_MS) while another
 *                                             launches and syncs: no sync waits for the executor's wait
 *   launch_check SOCK loadstall SLOW_PTX PTX  one session loads SLOW_PTX (tests/fakecuda: slow when
 *                                             it holds "fakecuda_slow_load", FAKECUDA_SLOW_LOAD_MS)
 *                                             while another launches and syncs PTX's hang(p, 0) again
 *                                             and again: no sync waits for the load
 *   launch_check SOCK badcc BAD_CU WANT PTX   tests/fakecuda only (its stand-in NVRTC passes PTX
 *                                             through as CUDA C): one session loads BAD_CU as CUDA C
 *                                             (a source that crashes or hangs the stand-in NVRTC)
 *                                             while another launches and syncs PTX's hang(p, 0):
 *                                             the load fails with a reason holding WANT, not
 *                                             OOO_EDEVRESET, no sync waits for it, and then PTX
 *                                             loads as CUDA C and its kernel runs
 *   launch_check SOCK stall PTX hang|slow     one session's kernel, hang(p, tag) with tag "hang" (it
 *                                             never ends) or "slow" (tests/fakecuda only: it runs
 *                                             FAKECUDA_SLOW_MS; on a GPU it ends at once): prints
 *                                             "launched" once it is launched, then waits for its sync,
 *                                             which must fail with OOO_EHUNG or OOO_EDEVRESET (the
 *                                             executor replaced for a hang); test_fakecuda.sh runs
 *                                             two of them as two uids to see whom a hang counts against
 *   launch_check SOCK bench PTX LIBCUDA       round trip of a 2-block kernel + sync and the async
 *                                             launch rate, through ooo and directly in this process
 *   launch_check SOCK classes N               one session loads N distinct fusible kernels and runs
 *                                             each (all must give their result, fused or not), then
 *                                             two other sessions load one more kernel and run it,
 *                                             then, the first session closed, a fourth loads all
 *                                             N + 1 (the classes exist: it finds them) and runs
 *                                             them; prints "ok"; test_launch.sh counts the classes
 *   launch_check SOCK classes N noresults     the same without reading the kernels' results
 *                                             (tests/fakecuda runs no kernel)
 *   launch_check SOCK smid MAX                a kernel of 1056 blocks, each spinning ~20 us, writes
 *                                             the SM each block ran on (%smid), 5 times; prints the
 *                                             number of distinct SMs and fails if it is above MAX
 *                                             (the SMs of the session's class's partition)
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../../daemon/exec/cuda.h"

static int fails;

#define CHECK(cond, ...)                                                                                   \
	do {                                                                                               \
		if (!(cond)) {                                                                             \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                                        \
			printf(__VA_ARGS__);                                                               \
			printf(" (%s)\n", ooo_last_error());                                               \
			fails++;                                                                           \
		}                                                                                          \
	} while (0)

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = (size_t)n;
	}
	return buf;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int vadd_one(ooo_session *s, ooo_queue *q, int kind, const char *what, const char *image, size_t len)
{
	const int n = 1000003; /* not a multiple of the block */
	const size_t bytes = (size_t)n * sizeof(float);
	float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
	struct ooo_kernel_info info = { .sz = sizeof(info) };
	ooo_buf *da, *db, *dc;
	ooo_module *m;
	ooo_kernel *k;
	int r, before = fails;

	r = ooo_module_load(s, kind, image, len, &m);
	CHECK(r == 0, "%s: module load %d", what, r);
	if (r)
		return 1;
	CHECK(ooo_kernel_get(m, "vadd", &k) == 0, "%s: kernel get", what);
	CHECK(ooo_kernel_get(m, "nosuch", &(ooo_kernel *){ 0 }) == -ENOENT, "%s: unknown kernel", what);
	CHECK(ooo_kernel_info(k, &info) == 0 && info.nparams == 4 && info.param_size == 28 &&
		      info.param_offset[3] == 24 && info.param_bytes[3] == 4,
	      "%s: parameter layout: %u params, %u bytes", what, info.nparams, info.param_size);
	CHECK(ooo_buf_alloc(s, bytes, 0, &da) == 0 && ooo_buf_alloc(s, bytes, 0, &db) == 0 &&
		      ooo_buf_alloc(s, bytes, 0, &dc) == 0,
	      "alloc");
	for (int i = 0; i < n; i++) {
		a[i] = (float)i * 0.5f;
		b[i] = (float)(n - i);
	}
	ooo_memcpy_htod(q, ooo_buf_addr(da), a, bytes);
	ooo_memcpy_htod(q, ooo_buf_addr(db), b, bytes);
	ooo_memset(q, ooo_buf_addr(dc), 0xffffffffu, (size_t)n, 4); /* poison: an unwritten element fails */
	{
		struct {
			uint64_t a, b, c;
			int32_t n;
		} __attribute__((packed)) p = { ooo_buf_addr(da), ooo_buf_addr(db), ooo_buf_addr(dc), n };
		uint32_t grid[3] = { (uint32_t)(n + 255) / 256, 1, 1 }, block[3] = { 256, 1, 1 };

		CHECK(ooo_launch(q, k, grid, block, 0, &p, 20) == -EINVAL, "%s: short parameters refused", what);
		CHECK((r = ooo_launch(q, k, grid, block, 0, &p, sizeof(p))) == 0, "%s: launch %d", what, r);
		CHECK((r = ooo_queue_sync(q, 10000)) == 0, "%s: sync %d", what, r);
		{
			/* a launch's own deadline: tighter (raised to the queue's SLO), looser, and a bad option */
			struct ooo_launch_opts lo = { .sz = sizeof(lo), .deadline_us = 1 };

			CHECK((r = ooo_launch_ex(q, k, grid, block, 0, &p, sizeof(p), &lo)) == 0, "%s: launch_ex %d", what, r);
			lo.deadline_us = 60000000;
			CHECK((r = ooo_launch_ex(q, k, grid, block, 0, &p, sizeof(p), &lo)) == 0, "%s: launch_ex %d", what, r);
			CHECK((r = ooo_queue_sync(q, 10000)) == 0, "%s: sync after launch_ex %d", what, r);
			lo.flags = 1;
			CHECK(ooo_launch_ex(q, k, grid, block, 0, &p, sizeof(p), &lo) == -EINVAL, "%s: unknown launch flags",
			      what);
			lo = (struct ooo_launch_opts){ .sz = 1 };
			CHECK(ooo_launch_ex(q, k, grid, block, 0, &p, sizeof(p), &lo) == -EINVAL, "%s: opts.sz too small",
			      what);
		}
		block[0] = 2048;
		CHECK(ooo_launch(q, k, grid, block, 0, &p, sizeof(p)) == 0, "submit");
		CHECK((r = ooo_queue_sync(q, 10000)) == -E2BIG, "%s: 2048 threads: %d", what, r);
	}
	CHECK(ooo_memcpy_dtoh(q, c, ooo_buf_addr(dc), bytes) == 0, "dtoh");
	for (int i = 0; i < n && fails == before; i++)
		CHECK(c[i] == a[i] + b[i], "%s: c[%d] = %g, want %g", what, i, (double)c[i], (double)(a[i] + b[i]));
	ooo_buf_free(da);
	ooo_buf_free(db);
	ooo_buf_free(dc);
	ooo_kernel_free(k);
	CHECK(ooo_module_unload(m) == 0, "unload");
	free(a);
	free(b);
	free(c);
	if (fails == before)
		printf("%s: vector add of %d floats correct\n", what, n);
	return fails != before;
}

static int vadd(const char *sock, const char *src, const char *ptx, const char *cubin)
{
	ooo_session *s = ooo_open(sock);
	ooo_queue *q;
	char *img;
	size_t len;
	ooo_module *m;

	if (!s || ooo_queue_create(s, NULL, &q))
		return printf("FAIL setup: %s\n", ooo_last_error()), 1;
	if ((img = slurp(src, &len))) {
		vadd_one(s, q, OOO_CUDA_C, "CUDA C", img, len);
		free(img);
	}
	if ((img = slurp(ptx, &len))) {
		vadd_one(s, q, OOO_PTX, "PTX", img, len);
		free(img);
	}
	if ((img = slurp(cubin, &len))) {
		vadd_one(s, q, OOO_CUBIN, "CUBIN", img, len);
		free(img);
	}
	/* a compile error comes back with the compiler's words */
	CHECK(ooo_module_load(s, OOO_CUDA_C, "__global__ void f( { }", 22, &m) == -EINVAL, "bad CUDA C refused");
	CHECK(strstr(ooo_last_error(), "error") != NULL, "NVRTC log in the error: '%s'", ooo_last_error());
	CHECK(ooo_module_load(s, OOO_PTX, "not ptx", 7, &m) == -EINVAL, "bad PTX refused");
	ooo_queue_destroy(q);
	ooo_close(s);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}

/* Each block's thread 0 spins ~20 us (so that blocks spread over every SM they may use), then writes %smid. */
static const char smid_ptx[] = ".version 7.8\n.target sm_90\n.address_size 64\n"
			       ".visible .entry smid(.param .u64 out)\n{\n .reg .b32 s, b, t;\n .reg .b64 a, o, c0, c1, d;\n"
			       " .reg .pred p, q;\n mov.u32 t, %tid.x;\n setp.ne.u32 p, t, 0;\n @p bra DONE;\n"
			       " mov.u64 c0, %clock64;\nSPIN:\n mov.u64 c1, %clock64;\n sub.s64 d, c1, c0;\n"
			       " setp.lt.s64 q, d, 40000;\n @q bra SPIN;\n ld.param.u64 a, [out];\n"
			       " cvta.to.global.u64 a, a;\n mov.u32 b, %ctaid.x;\n mul.wide.u32 o, b, 4;\n"
			       " add.s64 a, a, o;\n mov.u32 s, %smid;\n st.global.u32 [a], s;\nDONE:\n ret;\n}\n";

static int smid(const char *sock, unsigned max)
{
	enum { BLOCKS = 1056, ROUNDS = 5, SM_IDS = 1024 };
	ooo_session *s = ooo_open(sock);
	ooo_queue *q = NULL;
	ooo_module *m = NULL;
	ooo_kernel *k = NULL;
	ooo_buf *b = NULL;
	static uint32_t back[BLOCKS];
	bool seen[SM_IDS] = { false };
	const uint32_t grid[3] = { BLOCKS, 1, 1 }, block[3] = { 128, 1, 1 };
	unsigned distinct = 0;
	uint64_t out;

	if (!s || ooo_queue_create(s, NULL, &q))
		return printf("FAIL setup: %s\n", ooo_last_error()), 1;
	CHECK(ooo_module_load(s, OOO_PTX, smid_ptx, sizeof(smid_ptx) - 1, &m) == 0 && ooo_kernel_get(m, "smid", &k) == 0,
	      "load smid");
	CHECK(ooo_buf_alloc(s, sizeof(back), 0, &b) == 0, "alloc");
	for (int r = 0; r < ROUNDS && !fails; r++) {
		out = ooo_buf_addr(b);
		CHECK(ooo_memset(q, out, 0xffffffffu, BLOCKS, 4) == 0, "memset");
		CHECK(ooo_launch(q, k, grid, block, 0, &out, sizeof(out)) == 0, "launch");
		CHECK(ooo_memcpy_dtoh(q, back, out, sizeof(back)) == 0, "read back");
		for (int i = 0; i < BLOCKS && !fails; i++) {
			CHECK(back[i] < SM_IDS, "block %d: SM %u (not written?)", i, back[i]);
			if (!fails && !seen[back[i]]) {
				seen[back[i]] = true;
				distinct++;
			}
		}
	}
	ooo_close(s);
	if (fails)
		return 1;
	printf("smids: %u distinct SMs ran %d blocks x %d rounds\n", distinct, BLOCKS, ROUNDS);
	if (distinct > max) {
		printf("FAIL: more than the %u SMs of the partition\n", max);
		return 1;
	}
	printf("ok\n");
	return 0;
}

/* Read back a buffer, retrying while the executor comes back from a restart (OOO_EDEVRESET, 10 s at most). */
static uint64_t mono_ms(void);

static int dtoh_after_reset(ooo_queue *q, void *dst, uint64_t src, size_t len)
{
	int r = -OOO_EDEVRESET;

	for (int i = 0; i < 1000 && r == -OOO_EDEVRESET; i++) {
		if (i)
			usleep(10000);
		r = ooo_memcpy_dtoh(q, dst, src, len);
	}
	return r;
}

#define NBY 5    /* fault's bystander sessions */
#define NBYMOD 6 /* and their modules each: 30 in all */

static int fault(const char *sock, const char *ptx, bool results)
{
	struct {
		ooo_session *s;
		ooo_queue *q;
		ooo_buf *b;
		ooo_module *m[NBYMOD];
		ooo_kernel *k[2];
	} by[NBY] = { 0 };
	ooo_session *s = ooo_open(sock), *other = ooo_open(sock);
	ooo_queue *q = NULL, *oq = NULL;
	ooo_buf *ob = NULL, *sb = NULL;
	ooo_module *m = NULL, *om = NULL, *oa = NULL;
	ooo_kernel *k = NULL, *ok = NULL, *ok0 = NULL;
	uint32_t pat[1024], back[1024];
	uint32_t one[3] = { 1, 1, 1 };
	uint64_t bad = 0x10, t_fault;
	size_t len;
	char *img = slurp(ptx, &len);
	int r;

	if (!s || !other || !img || ooo_queue_create(s, NULL, &q) || ooo_queue_create(other, NULL, &oq))
		return printf("FAIL setup: %s\n", ooo_last_error()), 1;
	for (int i = 0; i < 1024; i++)
		pat[i] = 0xc0ffee00u + (uint32_t)i;
	CHECK(ooo_buf_alloc(other, sizeof(pat), 0, &ob) == 0, "alloc other");
	CHECK(ooo_memcpy_htod(oq, ooo_buf_addr(ob), pat, sizeof(pat)) == 0 && ooo_queue_sync(oq, 10000) == 0,
	      "fill other");
	CHECK(ooo_module_load(s, OOO_PTX, img, len, &m) == 0 && ooo_kernel_get(m, "poke", &k) == 0, "load poke");
	/*
	 * The other tenant's handles, taken before the fault, in a slot and at an
	 * index that a first-free reload would not give them: module A in slot 0,
	 * B in slot 1, A unloaded; B's kernel looked up twice (indices 0 and 1),
	 * the second used after the restart.
	 */
	CHECK(ooo_module_load(other, OOO_PTX, img, len, &oa) == 0 && ooo_module_load(other, OOO_PTX, img, len, &om) == 0 &&
		      ooo_module_unload(oa) == 0 && ooo_kernel_get(om, "poke", &ok0) == 0 &&
		      ooo_kernel_get(om, "poke", &ok) == 0,
	      "other: load poke");
	/*
	 * Bystanders: more modules than oood restores at once (16 per GPU), in
	 * several sessions, each with a kernel of its first and of its last
	 * module; all of them launch after the restart.
	 */
	for (int i = 0; i < NBY; i++) {
		CHECK((by[i].s = ooo_open(sock)) && ooo_queue_create(by[i].s, NULL, &by[i].q) == 0 &&
			      ooo_buf_alloc(by[i].s, 4096, 0, &by[i].b) == 0,
		      "bystander %d: session", i);
		for (int j = 0; j < NBYMOD && by[i].s; j++)
			CHECK(ooo_module_load(by[i].s, OOO_PTX, img, len, &by[i].m[j]) == 0, "bystander %d: module %d", i, j);
		CHECK(by[i].m[0] && by[i].m[NBYMOD - 1] && ooo_kernel_get(by[i].m[0], "poke", &by[i].k[0]) == 0 &&
			      ooo_kernel_get(by[i].m[NBYMOD - 1], "poke", &by[i].k[1]) == 0,
		      "bystander %d: kernels", i);
	}
	CHECK(ooo_launch(q, k, one, one, 0, &bad, sizeof(bad)) == 0, "launch poke");
	r = ooo_queue_sync(q, 30000);
	CHECK(r == -OOO_EFAULT || r == -OOO_EDEVRESET, "sync after the fault: %d (%s)", r, ooo_strerror(r));
	printf("faulting kernel: %d (%s)\n", r, ooo_strerror(r));
	/* the other tenant: its next sync says its commands may have failed, then its data is intact */
	t_fault = mono_ms();
	r = dtoh_after_reset(oq, back, ooo_buf_addr(ob), sizeof(back));
	CHECK(r == 0, "read the other session's buffer after the restart: %d", r);
	/* what a tenant waits: from the fault's status to its first command served again (not asserted) */
	printf("serving again: the other tenant's first copy done %llu ms after the fault was reported\n",
	       (unsigned long long)(mono_ms() - t_fault));
	CHECK(!memcmp(pat, back, sizeof(pat)), "the other session's buffer changed");
	/* the handles of both sessions work on the new executor: oood loaded the modules again */
	{
		uint64_t at = ooo_buf_addr(ob) + 4;
		r = ooo_launch(oq, ok, one, one, 0, &at, sizeof(at));
		CHECK(r == 0, "other: launch its kernel after the restart: %d", r);
		r = ooo_queue_sync(oq, 30000);
		CHECK(r == 0, "other: its kernel after the restart: %d (%s)", r, ooo_strerror(r));
		CHECK(ooo_memcpy_dtoh(oq, back, ooo_buf_addr(ob), sizeof(back)) == 0, "other: read back");
		if (results)
			CHECK(back[1] == 42, "other: poke after the restart wrote %#x, not 42", back[1]);
		CHECK(back[0] == pat[0] && !memcmp(back + 2, pat + 2, sizeof(pat) - 8), "other: poke wrote outside its word");
		CHECK(ooo_buf_alloc(s, 4096, 0, &sb) == 0, "alloc faulting tenant's buffer");
		at = sb ? ooo_buf_addr(sb) : 0;
		for (int i = 0; sb && i < 1000; i++) {
			r = ooo_launch(q, k, one, one, 0, &at, sizeof(at));
			if (r != -OOO_EDEVRESET)
				break;
			usleep(10000);
		}
		CHECK(sb && r == 0, "faulting tenant: launch its kernel after the restart: %d", r);
		r = sb ? ooo_queue_sync(q, 30000) : -1;
		CHECK(r == 0, "faulting tenant: its kernel after the restart: %d (%s)", r, ooo_strerror(r));
		if (results && sb) {
			uint32_t v = 0;
			CHECK(ooo_memcpy_dtoh(q, &v, ooo_buf_addr(sb), 4) == 0 && v == 42,
			      "faulting tenant: poke after the restart wrote %#x, not 42", v);
		}
		for (int i = 0; i < NBY; i++) {
			for (int j = 0; j < 2 && by[i].k[j]; j++) {
				uint64_t bat = ooo_buf_addr(by[i].b) + 4 * (uint64_t)j;

				for (int t = 0; t < 1000; t++) {
					r = ooo_launch(by[i].q, by[i].k[j], one, one, 0, &bat, sizeof(bat));
					if (r != -OOO_EDEVRESET)
						break;
					usleep(10000);
				}
				CHECK(r == 0, "bystander %d: kernel of module %d after the restart: %d", i,
				      j ? NBYMOD - 1 : 0, r);
			}
			r = ooo_queue_sync(by[i].q, 30000);
			CHECK(r == 0, "bystander %d: its kernels after the restart: %d (%s)", i, r, ooo_strerror(r));
			if (results) {
				uint32_t v[2] = { 0, 0 };
				CHECK(ooo_memcpy_dtoh(by[i].q, v, ooo_buf_addr(by[i].b), sizeof(v)) == 0 && v[0] == 42 &&
					      v[1] == 42,
				      "bystander %d: poke after the restart wrote %#x %#x, not 42", i, v[0], v[1]);
			}
		}
		printf("module handles after the restart: both sessions' kernels launched%s; %d bystanders' %d modules "
		       "each too\n",
		       results ? " and wrote their results" : "", NBY, NBYMOD);
	}
	/* a module loaded now takes the free slot 0, and the restored one in slot 1 still runs */
	{
		ooo_module *oc = NULL;
		ooo_kernel *kc = NULL;
		uint64_t at = ooo_buf_addr(ob) + 8;

		CHECK(ooo_module_load(other, OOO_PTX, img, len, &oc) == 0 && ooo_kernel_get(oc, "poke", &kc) == 0,
		      "other: load after the restart");
		CHECK(kc && ooo_launch(oq, kc, one, one, 0, &at, sizeof(at)) == 0, "other: launch the new module");
		at -= 4;
		CHECK(ooo_launch(oq, ok0, one, one, 0, &at, sizeof(at)) == 0, "other: launch the restored index 0");
		r = ooo_queue_sync(oq, 30000);
		CHECK(r == 0, "other: new and restored kernels after the restart: %d (%s)", r, ooo_strerror(r));
		ooo_kernel_free(kc);
		CHECK(ooo_module_unload(oc) == 0, "other: unload the new module");
	}
	CHECK(ooo_module_unload(om) == 0, "other: unload after the restart");
	for (int i = 0; i < NBY; i++) {
		ooo_kernel_free(by[i].k[0]);
		ooo_kernel_free(by[i].k[1]);
		for (int j = 0; j < NBYMOD; j++)
			if (by[i].m[j])
				CHECK(ooo_module_unload(by[i].m[j]) == 0, "bystander %d: unload module %d", i, j);
		ooo_buf_free(by[i].b);
		ooo_queue_destroy(by[i].q);
		ooo_close(by[i].s);
	}
	ooo_kernel_free(ok);
	ooo_kernel_free(ok0);
	ooo_buf_free(sb);
	ooo_kernel_free(k);
	ooo_module_unload(m);
	ooo_queue_destroy(q);
	ooo_queue_destroy(oq);
	ooo_buf_free(ob);
	ooo_close(s);
	ooo_close(other);
	free(img);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int bench(const char *sock, const char *ptx, const char *libcuda)
{
	enum { RT = 20000, ASYNC = 200000 };
	ooo_session *s = ooo_open(sock);
	ooo_queue *q;
	ooo_module *m;
	ooo_kernel *k;
	ooo_buf *b;
	uint32_t grid[3] = { 2, 1, 1 }, block[3] = { 128, 1, 1 };
	size_t len;
	char *img = slurp(ptx, &len);
	double *lat = malloc(RT * sizeof(double)), t;
	struct {
		uint64_t x;
		int32_t iters;
	} __attribute__((packed)) p;

	if (!s || !img || !lat || ooo_queue_create(s, NULL, &q) || ooo_module_load(s, OOO_PTX, img, len, &m) ||
	    ooo_kernel_get(m, "tiny", &k) || ooo_buf_alloc(s, 4096, 0, &b))
		return printf("FAIL setup: %s\n", ooo_last_error()), 1;
	p.x = ooo_buf_addr(b);
	p.iters = 1000;
	for (int i = 0; i < 1000; i++) {
		ooo_launch(q, k, grid, block, 0, &p, sizeof(p));
		ooo_queue_sync(q, -1);
	}
	for (int i = 0; i < RT; i++) {
		t = now_s();
		ooo_launch(q, k, grid, block, 0, &p, sizeof(p));
		ooo_queue_sync(q, -1);
		lat[i] = (now_s() - t) * 1e6;
	}
	qsort(lat, RT, sizeof(double), cmp_d);
	printf("ooo round trip (2x128 kernel + sync): p50 %.2f us, p99 %.2f us\n", lat[RT / 2], lat[RT * 99 / 100]);
	t = now_s();
	for (int i = 0; i < ASYNC; i++)
		ooo_launch(q, k, grid, block, 0, &p, sizeof(p));
	ooo_queue_sync(q, -1);
	printf("ooo async launches: %.0f /s\n", ASYNC / (now_s() - t));
	{
		struct cuda_api api;
		char why[256];
		CUcontext ctx;
		CUdevice dev;
		CUmodule mod;
		CUfunction f;
		CUstream st;
		CUdeviceptr x;
		void *args[2] = { &x, &p.iters };

		if (cuda_load(&api, libcuda, why, sizeof(why)) < 0)
			return printf("direct: %s\n", why), 0;
		api.p_cuInit(0);
		api.p_cuDeviceGet(&dev, 0);
		api.p_cuDevicePrimaryCtxRetain(&ctx, dev);
		api.p_cuCtxSetCurrent(ctx);
		api.p_cuModuleLoadDataEx(&mod, img, 0, NULL, NULL);
		api.p_cuModuleGetFunction(&f, mod, "tiny");
		api.p_cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
		{
			CUmemGenericAllocationHandle hh;
			CUmemAllocationProp pr = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
						   .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
			CUmemAccessDesc acc = { .location = pr.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
			api.p_cuMemCreate(&hh, 2 << 20, &pr, 0);
			api.p_cuMemAddressReserve(&x, 2 << 20, 0, 0, 0);
			api.p_cuMemMap(x, 2 << 20, 0, hh, 0);
			api.p_cuMemSetAccess(x, 2 << 20, &acc, 1);
		}
		for (int i = 0; i < 1000; i++) {
			api.p_cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, st, args, NULL);
			api.p_cuStreamSynchronize(st);
		}
		for (int i = 0; i < RT; i++) {
			t = now_s();
			api.p_cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, st, args, NULL);
			api.p_cuStreamSynchronize(st);
			lat[i] = (now_s() - t) * 1e6;
		}
		qsort(lat, RT, sizeof(double), cmp_d);
		printf("direct round trip (2x128 kernel + sync): p50 %.2f us, p99 %.2f us\n", lat[RT / 2],
		       lat[RT * 99 / 100]);
		t = now_s();
		for (int i = 0; i < ASYNC; i++)
			api.p_cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, st, args, NULL);
		api.p_cuStreamSynchronize(st);
		printf("direct async launches: %.0f /s\n", ASYNC / (now_s() - t));
	}
	return 0;
}

/* PTX of n entries k0 .. k(n-1): entry i adds i + 1 to each of its block's 256 words (distinct bodies: distinct classes) */
static char *classes_ptx(unsigned n, size_t *len)
{
	size_t cap = 512 + (size_t)n * 400, off;
	char *p = malloc(cap);

	if (!p)
		return NULL;
	off = (size_t)snprintf(p, cap, ".version 7.8\n.target sm_90\n.address_size 64\n");
	for (unsigned i = 0; i < n && off < cap; i++)
		off += (size_t)snprintf(p + off, cap - off,
					".visible .entry k%u(.param .u64 x)\n{\n .reg .b32 t, v;\n .reg .b64 a, o;\n"
					" ld.param.u64 a, [x];\n mov.u32 t, %%tid.x;\n mul.wide.u32 o, t, 4;\n"
					" cvta.to.global.u64 a, a;\n add.s64 a, a, o;\n ld.global.u32 v, [a];\n"
					" add.s32 v, v, %u;\n st.global.u32 [a], v;\n ret;\n}\n",
					i, i + 1);
	if (off >= cap) {
		free(p);
		return NULL;
	}
	*len = off;
	return p;
}

/* Load the n kernels k0 .. k(n-1) of img in session s and run each twice on its slice of a buffer: 0 or 1 */
static bool g_results = true; /* classes: check what the kernels computed */

static int classes_run(ooo_session *s, const char *img, size_t len, unsigned n)
{
	enum { WORDS = 256 };
	const uint32_t grid[3] = { 1, 1, 1 }, block[3] = { WORDS, 1, 1 };
	uint32_t back[WORDS];
	ooo_module *m;
	ooo_buf *b;
	ooo_queue *q;
	char name[32];
	int r, before = fails;

	CHECK((r = ooo_module_load(s, OOO_PTX, img, len, &m)) == 0, "load %u kernels: %d", n, r);
	CHECK(fails == before && ooo_buf_alloc(s, (size_t)n * WORDS * 4, 0, &b) == 0 && ooo_queue_create(s, NULL, &q) == 0,
	      "setup");
	if (fails != before)
		return 1;
	CHECK(ooo_memset(q, ooo_buf_addr(b), 0, (size_t)n * WORDS, 4) == 0, "clear");
	for (unsigned i = 0; i < n && fails == before; i++) {
		ooo_kernel *k;
		uint64_t a = ooo_buf_addr(b) + (uint64_t)i * WORDS * 4;

		snprintf(name, sizeof(name), "k%u", i);
		CHECK((r = ooo_kernel_get(m, name, &k)) == 0, "kernel %s: %d", name, r);
		if (fails != before)
			break;
		/* twice: the second launch may find the kernel's fused form compiled */
		CHECK(ooo_launch(q, k, grid, block, 0, &a, sizeof(a)) == 0 && ooo_launch(q, k, grid, block, 0, &a, sizeof(a)) == 0,
		      "launch %s", name);
		ooo_kernel_free(k);
	}
	CHECK((r = ooo_queue_sync(q, 20000)) == 0, "sync: %d", r);
	for (unsigned i = 0; i < n && fails == before && g_results; i++) {
		CHECK(ooo_memcpy_dtoh(q, back, ooo_buf_addr(b) + (uint64_t)i * WORDS * 4, sizeof(back)) == 0, "read %u", i);
		for (unsigned w = 0; w < WORDS && fails == before; w++)
			CHECK(back[w] == 2 * (i + 1), "kernel k%u word %u: %u, not %u", i, w, back[w], 2 * (i + 1));
	}
	ooo_queue_destroy(q);
	ooo_buf_free(b);
	ooo_module_unload(m);
	return fails != before;
}

static int classes(const char *sock, unsigned n)
{
	enum { WORDS = 256 };
	ooo_session *s = ooo_open(sock), *o[2] = { ooo_open(sock), ooo_open(sock) }, *d;
	size_t len = 0;
	char *img = classes_ptx(n + 1, &len);
	const uint32_t grid[3] = { 1, 1, 1 }, block[3] = { WORDS, 1, 1 };
	uint32_t back[WORDS];
	ooo_module *om[2] = { NULL, NULL };
	ooo_kernel *ok[2] = { NULL, NULL };
	ooo_buf *ob[2] = { NULL, NULL };
	ooo_queue *oq[2] = { NULL, NULL };
	char name[32];

	if (!s || !o[0] || !o[1] || !img)
		return printf("FAIL open: %s\n", ooo_last_error()), 1;
	if (classes_run(s, img, len, n))
		return 1;
	/* two more sessions bring one kernel more (k<n>): the table must still take it */
	snprintf(name, sizeof(name), "k%u", n);
	for (int j = 0; j < 2 && !fails; j++) {
		CHECK(ooo_module_load(o[j], OOO_PTX, img, len, &om[j]) == 0 && ooo_kernel_get(om[j], name, &ok[j]) == 0 &&
			      ooo_buf_alloc(o[j], WORDS * 4, 0, &ob[j]) == 0 && ooo_queue_create(o[j], NULL, &oq[j]) == 0 &&
			      ooo_memset(oq[j], ooo_buf_addr(ob[j]), 0, WORDS, 4) == 0,
		      "session %d setup", j);
	}
	for (int round = 0; round < 50 && !fails; round++) {
		for (int j = 0; j < 2; j++) {
			uint64_t a = ooo_buf_addr(ob[j]);

			CHECK(ooo_launch(oq[j], ok[j], grid, block, 0, &a, sizeof(a)) == 0, "launch %s in session %d", name, j);
		}
		for (int j = 0; j < 2; j++)
			CHECK(ooo_queue_sync(oq[j], 20000) == 0, "sync session %d", j);
	}
	for (int j = 0; j < 2 && !fails && g_results; j++) {
		CHECK(ooo_memcpy_dtoh(oq[j], back, ooo_buf_addr(ob[j]), sizeof(back)) == 0, "read session %d", j);
		CHECK(back[0] == 50u * (n + 1) && back[WORDS - 1] == 50u * (n + 1), "session %d: %u, not %u", j, back[0],
		      50u * (n + 1));
	}
	/* the first session gone, its classes stay (nobody holds them): a fourth session finding them is held to 128 too */
	ooo_close(s);
	d = ooo_open(sock);
	CHECK(d != NULL, "open the fourth session");
	if (d && !fails)
		classes_run(d, img, len, n + 1);
	free(img);
	for (int j = 0; j < 2; j++) {
		ooo_kernel_free(ok[j]);
		ooo_queue_destroy(oq[j]);
		ooo_buf_free(ob[j]);
		ooo_module_unload(om[j]);
		ooo_close(o[j]);
	}
	ooo_close(d);
	if (!fails)
		printf("ok: %u kernels of one session, one of two others, and all %u of a fourth %s\n", n, n + 1,
		       g_results ? "give their results" : "ran (results not read)");
	return fails != 0;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Launch hang(p, tag) on q, retrying while the executor comes back (OOO_EDEVRESET). */
static int launch_hang(ooo_queue *q, ooo_kernel *k, uint64_t p, uint32_t tag)
{
	struct {
		uint64_t p;
		uint32_t tag;
	} __attribute__((packed)) a = { p, tag };
	uint32_t one[3] = { 1, 1, 1 };
	int r = -1;

	for (int i = 0; i < 1000; i++) {
		r = ooo_launch(q, k, one, one, 0, &a, sizeof(a));
		if (r != -OOO_EDEVRESET)
			break;
		usleep(10000);
	}
	return r;
}

enum hang_mode { HANG_SYNC, HANG_LATE, HANG_EXIT, HANG_STAY };

static int hang(const char *sock, const char *ptx, unsigned limit_ms, enum hang_mode mode)
{
	ooo_session *s = ooo_open(sock), *other = ooo_open(sock);
	ooo_queue *q = NULL, *oq = NULL;
	ooo_module *m = NULL, *om = NULL;
	ooo_kernel *k = NULL, *ok = NULL;
	ooo_buf *ob = NULL, *sb = NULL;
	uint32_t pat[1024], back[1024];
	size_t len;
	char *img = slurp(ptx, &len);
	uint64_t t0, ms;
	int r;

	if (!s || !other || !img || ooo_queue_create(s, NULL, &q) || ooo_queue_create(other, NULL, &oq))
		return printf("FAIL setup: %s\n", ooo_last_error()), 1;
	for (int i = 0; i < 1024; i++)
		pat[i] = 0x4a4e4700u + (uint32_t)i;
	CHECK(ooo_buf_alloc(other, sizeof(pat), 0, &ob) == 0, "alloc other");
	CHECK(ob && ooo_memcpy_htod(oq, ooo_buf_addr(ob), pat, sizeof(pat)) == 0 && ooo_queue_sync(oq, 10000) == 0,
	      "fill other");
	CHECK(ooo_buf_alloc(s, 4096, 0, &sb) == 0, "alloc the hanging tenant's buffer");
	CHECK(ooo_module_load(s, OOO_PTX, img, len, &m) == 0 && ooo_kernel_get(m, "hang", &k) == 0, "load hang");
	CHECK(ooo_module_load(other, OOO_PTX, img, len, &om) == 0 && ooo_kernel_get(om, "hang", &ok) == 0,
	      "other: load hang");
	if (fails || !ob || !sb)
		return 1;
	/* the other tenant's kernel, done before the hang (tag 0: it ends at once) */
	CHECK(launch_hang(oq, ok, ooo_buf_addr(ob) + 4096 - 4, 0) == 0 && ooo_queue_sync(oq, 30000) == 0,
	      "other: its kernel before the hang");
	t0 = mono_ms();
	CHECK(launch_hang(q, k, ooo_buf_addr(sb), 0x676e6168u) == 0, "launch the kernel that never ends");
	if (mode == HANG_EXIT || mode == HANG_STAY) {
		if (mode == HANG_EXIT) {
			/* the tenant goes (its buffer freed, then its session closed): those wait on the hung work */
			ooo_kernel_free(k);
			ooo_buf_free(sb);
			ooo_module_unload(m);
			ooo_queue_destroy(q);
			ooo_close(s);
			s = NULL;
		}
		/* (HANG_STAY: nothing behind the launch, its tenant idle; the other tenant's copies go on) */
		do
			r = ooo_memcpy_dtoh(oq, back, ooo_buf_addr(ob), sizeof(back));
		while (r == 0 && mono_ms() - t0 < limit_ms + 60000u);
		ms = mono_ms() - t0;
		CHECK(r == -OOO_EDEVRESET, "the other tenant beside the hung one (%s): %d (%s), after %llu ms",
		      mode == HANG_EXIT ? "gone" : "no sync", r, ooo_strerror(r), (unsigned long long)ms);
		CHECK(ms + 50 >= limit_ms && ms < limit_ms + 15000u,
		      "the executor was replaced after %llu ms, with a limit of %u ms", (unsigned long long)ms, limit_ms);
		printf("hung kernel, %s: the executor replaced after %llu ms, limit %u ms\n",
		       mode == HANG_EXIT ? "its tenant gone" : "no sync behind it", (unsigned long long)ms, limit_ms);
		if (mode == HANG_STAY) {
			r = ooo_queue_sync(q, 30000);
			CHECK(r == -OOO_EDEVRESET || r == -OOO_EHUNG, "the hung tenant's sync after the restart: %d (%s)", r,
			      ooo_strerror(r));
			ooo_kernel_free(k);
			ooo_buf_free(sb);
			ooo_module_unload(m);
			ooo_queue_destroy(q);
			ooo_close(s);
			s = NULL;
		}
		r = dtoh_after_reset(oq, back, ooo_buf_addr(ob), sizeof(back));
		CHECK(r == 0 && !memcmp(pat, back, sizeof(pat) - 4), "the other session's buffer after the restart: %d", r);
		CHECK(launch_hang(oq, ok, ooo_buf_addr(ob) + 4096 - 4, 0) == 0 && ooo_queue_sync(oq, 30000) == 0,
		      "other: its kernel after the restart");
		ooo_kernel_free(ok);
		ooo_buf_free(ob);
		ooo_module_unload(om);
		ooo_queue_destroy(oq);
		ooo_close(other);
		free(img);
		if (!fails)
			printf("ok\n");
		return fails != 0;
	}
	if (mode == HANG_LATE)
		usleep(limit_ms * 500u); /* past a quarter of the limit: the executor timed it by then (watch_tail) */
	r = ooo_queue_sync(q, (int)limit_ms + 60000);
	ms = mono_ms() - t0;
	CHECK(r == -OOO_EHUNG || r == -OOO_EDEVRESET, "sync after the hang: %d (%s), after %llu ms", r, ooo_strerror(r),
	      (unsigned long long)ms);
	CHECK(ms + 50 >= limit_ms && ms < limit_ms + 15000u, "the hang was ended after %llu ms, with a limit of %u ms",
	      (unsigned long long)ms, limit_ms);
	printf("hung kernel: %d (%s) after %llu ms, limit %u ms\n", r, ooo_strerror(r), (unsigned long long)ms, limit_ms);
	/* the other tenant: its data intact on the new executor, its kernel runs */
	r = dtoh_after_reset(oq, back, ooo_buf_addr(ob), sizeof(back));
	CHECK(r == 0, "read the other session's buffer after the restart: %d (%s)", r, ooo_strerror(r));
	CHECK(r != 0 || !memcmp(pat, back, sizeof(pat) - 4), "the other session's buffer changed");
	CHECK(launch_hang(oq, ok, ooo_buf_addr(ob) + 4096 - 4, 0) == 0, "other: launch after the restart");
	r = ooo_queue_sync(oq, 30000);
	CHECK(r == 0, "other: its kernel after the restart: %d (%s)", r, ooo_strerror(r));
	/* and the tenant whose kernel hung: its handles work on the new executor */
	CHECK(launch_hang(q, k, ooo_buf_addr(sb), 0) == 0, "hung tenant: launch after the restart");
	r = ooo_queue_sync(q, 30000);
	CHECK(r == 0, "hung tenant: its kernel after the restart: %d (%s)", r, ooo_strerror(r));
	ooo_kernel_free(k);
	ooo_kernel_free(ok);
	ooo_buf_free(sb);
	ooo_buf_free(ob);
	ooo_module_unload(m);
	ooo_module_unload(om);
	ooo_queue_destroy(q);
	ooo_queue_destroy(oq);
	ooo_close(s);
	ooo_close(other);
	free(img);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}

/* One tenant of hang.ptx: a session, a queue, a 4 KiB buffer and the hang kernel (hang_barred, stall). */
struct hang_tenant {
	ooo_session *s;
	ooo_queue *q;
	ooo_module *m;
	ooo_kernel *k;
	ooo_buf *b;
	char *img;
};

static void hang_tenant_close(struct hang_tenant *t)
{
	ooo_kernel_free(t->k);
	ooo_buf_free(t->b);
	ooo_module_unload(t->m);
	ooo_queue_destroy(t->q);
	ooo_close(t->s);
	free(t->img);
	memset(t, 0, sizeof(*t)); /* closing again is harmless */
}

/* Set t up from sock and the PTX file; 0, or 1 after saying what failed (what was made is freed then). */
static int hang_tenant_open(struct hang_tenant *t, const char *sock, const char *ptx)
{
	size_t len;

	memset(t, 0, sizeof(*t));
	t->s = ooo_open(sock);
	t->img = slurp(ptx, &len);
	if (!t->s || !t->img || ooo_queue_create(t->s, NULL, &t->q)) {
		printf("FAIL setup: %s\n", ooo_last_error());
		hang_tenant_close(t);
		return 1;
	}
	CHECK(ooo_buf_alloc(t->s, 4096, 0, &t->b) == 0, "alloc");
	CHECK(ooo_module_load(t->s, OOO_PTX, t->img, len, &t->m) == 0 && ooo_kernel_get(t->m, "hang", &t->k) == 0,
	      "load hang");
	if (fails || !t->b || !t->k) {
		hang_tenant_close(t);
		return 1;
	}
	return 0;
}

/*
 * The tenant's kernel hangs once more when its uid has one hang short of
 * hang_strikes: after the restart its session is closed (OOO_ECLOSED, the
 * re-attach refused), and a new session's data path is refused with
 * OOO_EHUNG, naming hang_strikes.
 */
static int hang_barred(const char *sock, const char *ptx, unsigned limit_ms)
{
	struct hang_tenant t;
	ooo_session *s2 = NULL;
	ooo_queue *q2 = NULL;
	uint64_t t0;
	int r;

	if (hang_tenant_open(&t, sock, ptx))
		return 1;
	t0 = mono_ms();
	CHECK(launch_hang(t.q, t.k, ooo_buf_addr(t.b), 0x676e6168u) == 0, "launch the kernel that never ends");
	r = ooo_queue_sync(t.q, (int)limit_ms + 60000);
	CHECK(r == -OOO_EHUNG || r == -OOO_EDEVRESET, "sync after the hang: %d (%s)", r, ooo_strerror(r));
	/* the new executor does not take the session back: it is closed */
	do {
		r = launch_hang(t.q, t.k, ooo_buf_addr(t.b), 0);
		if (r == 0)
			r = ooo_queue_sync(t.q, 30000);
		if (r == -OOO_EDEVRESET || r == -OOO_EHUNG || r == -EAGAIN)
			usleep(20000);
	} while ((r == -OOO_EDEVRESET || r == -OOO_EHUNG || r == -EAGAIN || r == 0) && mono_ms() - t0 < limit_ms + 30000u);
	CHECK(r == -OOO_ECLOSED, "the barred tenant's session after the restart: %d (%s): %s", r, ooo_strerror(r),
	      ooo_last_error());
	printf("barred tenant's session: %d (%s)\n", r, ooo_strerror(r));
	/* and a new one gets no data path */
	s2 = ooo_open(sock);
	CHECK(s2 != NULL, "a new session: %s", ooo_last_error());
	r = s2 ? ooo_queue_create(s2, NULL, &q2) : -1;
	CHECK(r == -OOO_EHUNG && strstr(ooo_last_error(), "hang_strikes"), "a new session's data path: %d (%s): %s", r,
	      ooo_strerror(r), ooo_last_error());
	printf("barred tenant's new session: %d (%s): %s\n", r, ooo_strerror(r), ooo_last_error());
	hang_tenant_close(&t);
	ooo_queue_destroy(q2);
	ooo_close(s2);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}

/* One session's kernel that stalls (see the top), launched, then its sync: ended by a hang's restart. */
static int stall(const char *sock, const char *ptx, const char *how)
{
	struct hang_tenant t;
	uint32_t tag = !strcmp(how, "hang") ? 0x676e6168u : 0x776f6c73u;
	uint64_t t0;
	int r;

	if (hang_tenant_open(&t, sock, ptx))
		return 1;
	t0 = mono_ms();
	CHECK(launch_hang(t.q, t.k, ooo_buf_addr(t.b), tag) == 0, "launch the %s kernel", how);
	printf("launched\n");
	r = ooo_queue_sync(t.q, 120000);
	CHECK(r == -OOO_EHUNG || r == -OOO_EDEVRESET, "sync after the %s kernel: %d (%s)", how, r, ooo_strerror(r));
	printf("%s kernel: %d (%s) after %llu ms\n", how, r, ooo_strerror(r), (unsigned long long)(mono_ms() - t0));
	hang_tenant_close(&t);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}

struct slow_load {
	const char *sock, *ptx;
	int kind;	/* OOO_PTX if 0 */
	int timeout_ms; /* the session's, for each request; 0: the default (10 s) */
	int status;
	uint64_t ms;
	char why[256]; /* ooo_last_error() after a failed load */
	bool done;     /* set last (atomic): status, ms and why are final */
};

static void *slow_load_run(void *arg)
{
	struct slow_load *l = arg;
	struct ooo_open_opts o = { .sz = sizeof(o), .path = l->sock, .timeout_ms = l->timeout_ms };
	ooo_session *s = ooo_open_opts(&o);
	ooo_module *m = NULL;
	size_t len;
	char *img = slurp(l->ptx, &len);
	uint64_t t0 = mono_ms();

	l->status = s && img ? ooo_module_load(s, l->kind ? l->kind : OOO_PTX, img, len, &m) : -1;
	l->ms = mono_ms() - t0;
	snprintf(l->why, sizeof(l->why), "%s", l->status < 0 ? ooo_last_error() : "");
	__atomic_store_n(&l->done, true, __ATOMIC_RELEASE);
	ooo_module_unload(m);
	ooo_close(s);
	free(img);
	return NULL;
}

/* The other session's round (freestall, loadstall): hang(p, 0) launched and synced, timed into *worst; *n counts. */
static void timed_round(struct hang_tenant *t, uint64_t *worst, uint64_t *n)
{
	uint64_t t1 = mono_ms(), d;

	CHECK(launch_hang(t->q, t->k, ooo_buf_addr(t->b), 0) == 0 && ooo_queue_sync(t->q, 30000) == 0,
	      "launch and sync %llu", (unsigned long long)*n);
	d = mono_ms() - t1;
	*worst = d > *worst ? d : *worst;
	(*n)++;
	usleep(1000);
}

/* What the slow session does behind its slow kernel (freestall), on a thread of its own: it may block. */
struct slow_after {
	struct hang_tenant *a;
	const char *how; /* free, close or queue */
	int status;
	bool done; /* set last (atomic) */
};

static void *slow_after_run(void *arg)
{
	struct slow_after *f = arg;
	struct hang_tenant *a = f->a;

	if (!strcmp(f->how, "free")) {
		f->status = ooo_buf_free(a->b); /* oood answers at once; the executor's free waits (a quiesce) */
		a->b = NULL;
	} else if (!strcmp(f->how, "queue")) {
		f->status = ooo_queue_destroy(a->q); /* waits for the executor: its drain of the queue */
		a->q = NULL;
	} else {
		f->status = -EINVAL; /* (close: a child process, see freestall) */
	}
	__atomic_store_n(&f->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * One session launches PTX's hang(p, "slow") (tests/fakecuda: it runs
 * SLOW_MS, FAKECUDA_SLOW_MS), then frees its buffer, destroys the queue or
 * closes the session (HOW: free, queue, close), each of which makes the
 * executor wait for the kernel. Meanwhile another session of the same
 * serving thread launches hang(p, 0) and syncs again and again, for
 * SLOW_MS + 500 ms: its slowest sync must stay far below SLOW_MS (the
 * serving thread does not wait with the request).
 */
/*
 * "close": a child process is the slow tenant. With no buffer left (oood's
 * frees at its end would wait for the kernel first; the stand-in runs no
 * kernel, so the freed address does not matter), it launches the slow
 * kernel, says so on fd and exits: its connection's end makes oood detach
 * the session, and the executor's detach waits for the kernel.
 */
static void slow_child(int fd, const char *sock, const char *ptx)
{
	struct hang_tenant c;
	uint64_t addr;

	if (hang_tenant_open(&c, sock, ptx))
		_exit(2);
	addr = ooo_buf_addr(c.b);
	if (ooo_buf_free(c.b) || launch_hang(c.q, c.k, addr, 0x776f6c73u))
		_exit(3);
	_exit(write(fd, "l", 1) == 1 ? 0 : 4);
}

static int freestall(const char *sock, const char *ptx, unsigned slow_ms, const char *how)
{
	struct hang_tenant a = { 0 }, t = { 0 };
	struct slow_after f = { .a = &a, .how = how, .status = -1 };
	bool child = !strcmp(how, "close");
	uint64_t worst = 0, n = 0, t0;
	pthread_t th;
	pid_t pid = -1;
	int pfd[2] = { -1, -1 }, st = 0;
	char c;

	if ((!child && hang_tenant_open(&a, sock, ptx)) || hang_tenant_open(&t, sock, ptx)) {
		hang_tenant_close(&a);
		return 1;
	}
	CHECK(launch_hang(t.q, t.k, ooo_buf_addr(t.b), 0) == 0 && ooo_queue_sync(t.q, 30000) == 0, "first launch");
	if (child) {
		if (fails || pipe(pfd) < 0 || (pid = fork()) < 0) {
			printf("FAIL: setup\n");
			hang_tenant_close(&t);
			return 1;
		}
		if (pid == 0) {
			close(pfd[0]);
			slow_child(pfd[1], sock, ptx);
		}
		close(pfd[1]);
		CHECK(read(pfd[0], &c, 1) == 1, "the slow child did not launch its kernel");
		close(pfd[0]);
		t0 = mono_ms();
	} else {
		t0 = mono_ms();
		CHECK(launch_hang(a.q, a.k, ooo_buf_addr(a.b), 0x776f6c73u) == 0, "launch the slow kernel");
		if (fails || pthread_create(&th, NULL, slow_after_run, &f) != 0) {
			printf("FAIL: setup\n");
			hang_tenant_close(&a);
			hang_tenant_close(&t);
			return 1;
		}
	}
	while (!fails && mono_ms() - t0 < slow_ms + 500u)
		timed_round(&t, &worst, &n);
	if (child) {
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the slow child: status %#x",
		      st);
		f.status = 0;
	} else {
		pthread_join(th, NULL);
	}
	printf("a %s behind a %u ms kernel: the other session's slowest of %llu syncs meanwhile: %llu ms\n", how,
	       slow_ms, (unsigned long long)n, (unsigned long long)worst);
	CHECK(f.status == 0, "the %s: %d", how, f.status);
	CHECK(worst < slow_ms / 4, "a sync took %llu ms while the %s waited for a %u ms kernel",
	      (unsigned long long)worst, how, slow_ms);
	hang_tenant_close(&a);
	hang_tenant_close(&t);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}

/*
 * One session loads SLOW_PTX (tests/fakecuda: its load takes
 * FAKECUDA_SLOW_LOAD_MS when it holds "fakecuda_slow_load") while another
 * session of the same serving thread launches PTX's hang(p, 0) and syncs,
 * again and again: its slowest sync meanwhile must stay far below the
 * load's time (the serving thread does not wait for the load).
 */
static int loadstall(const char *sock, const char *slow_ptx, const char *ptx)
{
	struct hang_tenant t;
	struct slow_load l = { .sock = sock, .ptx = slow_ptx, .status = -1 };
	pthread_t th;
	uint64_t worst = 0, n = 0;
	bool done = false;

	if (hang_tenant_open(&t, sock, ptx))
		return 1;
	/* warm: the kernel's first launch and sync */
	CHECK(launch_hang(t.q, t.k, ooo_buf_addr(t.b), 0) == 0 && ooo_queue_sync(t.q, 30000) == 0, "first launch");
	if (pthread_create(&th, NULL, slow_load_run, &l) != 0) {
		printf("FAIL: pthread_create\n");
		hang_tenant_close(&t);
		return 1;
	}
	while (!done && !fails) {
		done = __atomic_load_n(&l.done, __ATOMIC_ACQUIRE);
		timed_round(&t, &worst, &n);
	}
	pthread_join(th, NULL);
	printf("module load: %d after %llu ms; the other session's slowest of %llu syncs meanwhile: %llu ms\n", l.status,
	       (unsigned long long)l.ms, (unsigned long long)n, (unsigned long long)worst);
	CHECK(l.status == 0, "the slow module load: %d", l.status);
	CHECK(l.ms >= 1000, "the module load took %llu ms: not slow (is FAKECUDA_SLOW_LOAD_MS set?)",
	      (unsigned long long)l.ms);
	CHECK(worst < l.ms / 4, "a sync took %llu ms while the module loaded for %llu ms", (unsigned long long)worst,
	      (unsigned long long)l.ms);
	hang_tenant_close(&t);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}

/*
 * tests/fakecuda only: its stand-in NVRTC (tests/fakecuda/fakenvrtc.c)
 * passes PTX through as CUDA C, and crashes or hangs on a marker. One
 * session loads BAD_CU as CUDA C while another launches and syncs PTX's
 * hang(p, 0) again and again: the load must fail with a reason that holds
 * WANT (not OOO_EDEVRESET: the executor lives on), the other session's
 * syncs never wait for the compile, and afterwards the other session loads
 * PTX as CUDA C and runs its kernel.
 */
static int badcc(const char *sock, const char *bad, const char *want, const char *ptx)
{
	struct hang_tenant t;
	/* a compile may take NVRTC's 20 s (NVRTC_TIME_LIMIT_MS) before it fails: the load waits longer */
	struct slow_load l = { .sock = sock, .ptx = bad, .kind = OOO_CUDA_C, .timeout_ms = 60000, .status = -1 };
	ooo_module *m = NULL;
	ooo_kernel *k = NULL;
	pthread_t th;
	uint64_t worst = 0, n = 0;
	bool done = false;
	int r;

	if (hang_tenant_open(&t, sock, ptx))
		return 1;
	CHECK(launch_hang(t.q, t.k, ooo_buf_addr(t.b), 0) == 0 && ooo_queue_sync(t.q, 30000) == 0, "first launch");
	if (pthread_create(&th, NULL, slow_load_run, &l) != 0) {
		printf("FAIL: pthread_create\n");
		hang_tenant_close(&t);
		return 1;
	}
	while (!done && !fails) {
		done = __atomic_load_n(&l.done, __ATOMIC_ACQUIRE);
		timed_round(&t, &worst, &n);
	}
	pthread_join(th, NULL);
	printf("CUDA C load: %d (%s) after %llu ms: %s; the other session's slowest of %llu syncs meanwhile: %llu ms\n",
	       l.status, ooo_strerror(l.status), (unsigned long long)l.ms, l.why, (unsigned long long)n,
	       (unsigned long long)worst);
	CHECK(l.status < 0 && l.status != -OOO_EDEVRESET, "the CUDA C load: %d", l.status);
	CHECK(strstr(l.why, want) != NULL, "the CUDA C load's reason does not say '%s': %s", want, l.why);
	CHECK(worst < 5000, "a sync took %llu ms while NVRTC compiled", (unsigned long long)worst);
	/* the other session goes on, and CUDA C still compiles */
	CHECK(launch_hang(t.q, t.k, ooo_buf_addr(t.b), 0) == 0 && ooo_queue_sync(t.q, 30000) == 0, "launch after");
	r = ooo_module_load(t.s, OOO_CUDA_C, t.img, strlen(t.img), &m);
	CHECK(r == 0, "a good CUDA C load after: %d", r);
	CHECK(r || ooo_kernel_get(m, "hang", &k) == 0, "the kernel of the good CUDA C load");
	CHECK(!k || (launch_hang(t.q, k, ooo_buf_addr(t.b), 0) == 0 && ooo_queue_sync(t.q, 30000) == 0),
	      "launch the kernel compiled from CUDA C");
	ooo_kernel_free(k);
	ooo_module_unload(m);
	hang_tenant_close(&t);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 6 && !strcmp(argv[2], "vadd"))
		return vadd(argv[1], argv[3], argv[4], argv[5]);
	if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "noresults"))) && !strcmp(argv[2], "classes")) {
		g_results = argc == 4;
		return classes(argv[1], (unsigned)strtoul(argv[3], NULL, 10));
	}
	if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "noresults"))) && !strcmp(argv[2], "fault"))
		return fault(argv[1], argv[3], argc == 4);
	if (argc == 4 && !strcmp(argv[2], "smid"))
		return smid(argv[1], (unsigned)strtoul(argv[3], NULL, 10));
	if (argc == 5 && !strcmp(argv[2], "stall") && (!strcmp(argv[4], "hang") || !strcmp(argv[4], "slow")))
		return stall(argv[1], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[2], "bench"))
		return bench(argv[1], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[2], "loadstall"))
		return loadstall(argv[1], argv[3], argv[4]);
	if (argc == 6 && !strcmp(argv[2], "badcc"))
		return badcc(argv[1], argv[3], argv[4], argv[5]);
	if (argc == 6 && !strcmp(argv[2], "freestall") &&
	    (!strcmp(argv[5], "free") || !strcmp(argv[5], "queue") || !strcmp(argv[5], "close")))
		return freestall(argv[1], argv[3], (unsigned)strtoul(argv[4], NULL, 10), argv[5]);
	if (argc == 6 && !strcmp(argv[5], "barred") && !strcmp(argv[2], "hang"))
		return hang_barred(argv[1], argv[3], (unsigned)strtoul(argv[4], NULL, 10));
	if ((argc == 5 ||
	     (argc == 6 && (!strcmp(argv[5], "exit") || !strcmp(argv[5], "stay") || !strcmp(argv[5], "late")))) &&
	    !strcmp(argv[2], "hang"))
		return hang(argv[1], argv[3], (unsigned)strtoul(argv[4], NULL, 10),
			    argc == 5			   ? HANG_SYNC
			    : !strcmp(argv[5], "exit") ? HANG_EXIT
			    : !strcmp(argv[5], "stay") ? HANG_STAY
						   : HANG_LATE);
	fprintf(stderr, "usage: launch_check SOCK vadd SRC PTX CUBIN | classes N [noresults] | fault PTX [noresults] | smid MAX | "
			"hang PTX LIMIT_MS [exit|stay|late|barred] | stall PTX hang|slow | loadstall SLOW_PTX PTX | badcc BAD_CU WANT PTX | freestall PTX SLOW_MS free|queue|close | "
			"bench PTX LIBCUDA\n");
	return 2;
}
