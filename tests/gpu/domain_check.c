/* SPDX-License-Identifier: MIT */
/*
 * domain_check: a tenant's buffer and a hostile neighbour, for the trust
 * domain tests (tests/gpu/test_domains.sh, tests/integration/test_domains.sh).
 *
 *   domain_check SOCK victim
 *       allocates 1 MiB on GPU 0, fills it with a pattern, prints
 *       "ready ADDR" and waits for one line on stdin: "intact" or "changed",
 *       what the caller expects of the buffer now. Then it reads the buffer
 *       back (a read that fails with OOO_EDEVRESET is counted: its executor
 *       was replaced meanwhile) and prints "intact", or "changed N" (words
 *       that differ), and "resets N"; exits 0 when the buffer is as expected
 *       and every read worked, 1 otherwise.
 *   domain_check SOCK poke ADDR HOW
 *       launches a kernel that writes 0xbadbad00 to the 256 words at ADDR
 *       (an address it computes: nothing of its own is there) through
 *       st.global (HOW = global), a generic st (generic) or atom.global.exch
 *       (atom), syncs, and prints "poke: STATUS (TEXT)"; exits 0 whatever
 *       the launch did (the caller judges), 1 if it could not be made.
 *   domain_check SOCK fenced
 *       for a session of a class with fence = yes: allocates 1 MiB and prints
 *       "window BASE" (its address rounded down to 64 GiB) and "buffer ADDR";
 *       pokes its own buffer and prints "own: STATUS" and "own-changed N"
 *       (the words the kernel wrote, read back); then the refusals:
 *       "host: STATUS TEXT" (zero-copy host memory), "cubin: STATUS TEXT" (a
 *       binary module), "unfenceable: STATUS TEXT" (the look-up of a kernel
 *       that reads a module .global variable). Exits 0 when it could run
 *       them all (the caller judges the lines).
 *   domain_check SOCK many N ROUNDS [noresults]
 *       N sessions of this process, each with its own buffer, each launch
 *       poke3 on its own buffer ROUNDS times without a sync between (so the
 *       coalescer may bundle them across sessions), then sync; unless
 *       noresults (tests/fakecuda runs no kernel), every session's 256
 *       words must hold what its kernel wrote. Prints "ok" or FAIL lines.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ooo/ooo.h>

#define WORDS (256u * 1024u) /* 1 MiB */
#define POKE_WORDS 256u

static const char poke_ptx[] =
	".version 7.8\n"
	".target sm_90\n"
	".address_size 64\n"
	".visible .entry poke3(.param .u64 p, .param .u32 n, .param .u32 how)\n"
	"{\n"
	" .reg .b64 %a, %ga, %off, %g, %gg;\n"
	" .reg .b32 %v, %i, %cnt, %h, %t;\n"
	" .reg .pred %done, %p0, %p1, %p2;\n"
	" ld.param.u64 %a, [p];\n"
	" ld.param.u32 %cnt, [n];\n"
	" ld.param.u32 %h, [how];\n"
	" cvta.to.global.u64 %ga, %a;\n"
	" mov.u32 %i, %tid.x;\n"
	" mov.u32 %v, -1160008448;\n" /* 0xbadbad00 */
	" setp.eq.u32 %p0, %h, 0;\n"
	" setp.eq.u32 %p1, %h, 1;\n"
	" setp.eq.u32 %p2, %h, 2;\n"
	"LOOP:\n"
	" setp.ge.u32 %done, %i, %cnt;\n"
	" @%done bra END;\n"
	" mul.wide.u32 %off, %i, 4;\n"
	" add.u64 %g, %a, %off;\n"
	" add.u64 %gg, %ga, %off;\n"
	" @%p0 st.global.u32 [%gg], %v;\n"
	" @%p1 st.u32 [%g], %v;\n"
	" @%p2 atom.global.exch.b32 %t, [%gg], %v;\n"
	" add.u32 %i, %i, 32;\n"
	" bra LOOP;\n"
	"END:\n"
	" ret;\n"
	"}\n";

static int victim(const char *sock)
{
	ooo_session *s = ooo_open(sock);
	ooo_queue *q = NULL;
	ooo_buf *b = NULL;
	uint32_t *pat = malloc(WORDS * 4), *back = malloc(WORDS * 4);
	char line[64] = "";
	unsigned changed = 0, resets = 0;
	bool want_intact;
	int r;

	if (!s || !pat || !back || ooo_queue_create(s, NULL, &q) || ooo_buf_alloc(s, WORDS * 4, 0, &b)) {
		printf("FAIL setup: %s\n", ooo_last_error());
		return 1;
	}
	for (uint32_t i = 0; i < WORDS; i++)
		pat[i] = 0x5eed0000u ^ i;
	r = ooo_memcpy_htod(q, ooo_buf_addr(b), pat, WORDS * 4);
	if (!r)
		r = ooo_queue_sync(q, 10000);
	if (r) {
		printf("FAIL fill: %d (%s)\n", r, ooo_strerror(r));
		return 1;
	}
	printf("ready 0x%" PRIx64 "\n", ooo_buf_addr(b));
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin)) {
		printf("FAIL no instruction on stdin\n");
		return 1;
	}
	want_intact = !strncmp(line, "intact", 6);
	for (int i = 0; i < 1000; i++) {
		r = ooo_memcpy_dtoh(q, back, ooo_buf_addr(b), WORDS * 4);
		if (!r)
			r = ooo_queue_sync(q, 10000);
		if (r != -OOO_EDEVRESET)
			break;
		resets++;
		usleep(10000);
	}
	if (r) {
		printf("FAIL read back: %d (%s)\n", r, ooo_strerror(r));
		return 1;
	}
	for (uint32_t i = 0; i < WORDS; i++)
		changed += back[i] != pat[i];
	if (changed)
		printf("changed %u\n", changed);
	else
		printf("intact\n");
	printf("resets %u\n", resets);
	ooo_buf_free(b);
	ooo_queue_destroy(q);
	ooo_close(s);
	free(pat);
	free(back);
	return want_intact == !changed ? 0 : 1;
}

static int poke(const char *sock, const char *addr_s, const char *how_s)
{
	struct {
		uint64_t p;
		uint32_t n, how;
	} args;
	uint32_t grid[3] = { 1, 1, 1 }, block[3] = { 32, 1, 1 };
	ooo_session *s = ooo_open(sock);
	ooo_queue *q = NULL;
	ooo_module *m = NULL;
	ooo_kernel *k = NULL;
	char *end;
	int r;

	args.p = strtoull(addr_s, &end, 0);
	args.n = POKE_WORDS;
	if (*end || !*addr_s) {
		fprintf(stderr, "poke: bad address '%s'\n", addr_s);
		return 2;
	}
	if (!strcmp(how_s, "global"))
		args.how = 0;
	else if (!strcmp(how_s, "generic"))
		args.how = 1;
	else if (!strcmp(how_s, "atom"))
		args.how = 2;
	else {
		fprintf(stderr, "poke: HOW is global, generic or atom, not '%s'\n", how_s);
		return 2;
	}
	if (!s || ooo_queue_create(s, NULL, &q) || ooo_module_load(s, OOO_PTX, poke_ptx, sizeof(poke_ptx) - 1, &m) ||
	    ooo_kernel_get(m, "poke3", &k)) {
		printf("FAIL setup: %s\n", ooo_last_error());
		return 1;
	}
	r = ooo_launch(q, k, grid, block, 0, &args, sizeof(args));
	if (!r)
		r = ooo_queue_sync(q, 30000);
	printf("poke: %d (%s)\n", r, r ? ooo_strerror(r) : "completed");
	ooo_kernel_free(k);
	ooo_module_unload(m);
	ooo_queue_destroy(q);
	ooo_close(s);
	return 0;
}

static const char global_ptx[] =
	".version 7.8\n"
	".target sm_90\n"
	".address_size 64\n"
	".global .align 4 .u32 counter;\n"
	".visible .entry bump(.param .u64 p)\n"
	"{\n"
	" .reg .b32 %v;\n"
	" ld.global.u32 %v, [counter];\n"
	" add.u32 %v, %v, 1;\n"
	" st.global.u32 [counter], %v;\n"
	" ret;\n"
	"}\n";

static int fenced(const char *sock)
{
	struct {
		uint64_t p;
		uint32_t n, how;
	} args;
	uint32_t grid[3] = { 1, 1, 1 }, block[3] = { 32, 1, 1 }, back[POKE_WORDS];
	ooo_session *s = ooo_open(sock);
	ooo_queue *q = NULL;
	ooo_buf *b = NULL;
	ooo_module *m = NULL, *g = NULL, *c = NULL;
	ooo_kernel *k = NULL, *gk = NULL;
	static const unsigned char junk[64] = { 0x7f, 'E', 'L', 'F' };
	unsigned changed = 0;
	void *h = NULL;
	int r;

	if (!s || ooo_queue_create(s, NULL, &q) || ooo_buf_alloc(s, WORDS * 4, 0, &b)) {
		printf("FAIL setup: %s\n", ooo_last_error());
		return 1;
	}
	printf("buffer 0x%" PRIx64 "\n", ooo_buf_addr(b));
	printf("window 0x%" PRIx64 "\n", ooo_buf_addr(b) & ~(((uint64_t)1 << 36) - 1));
	r = ooo_memset(q, ooo_buf_addr(b), 0, WORDS, 4);
	if (!r)
		r = ooo_queue_sync(q, 10000);
	if (r || ooo_module_load(s, OOO_PTX, poke_ptx, sizeof(poke_ptx) - 1, &m) || ooo_kernel_get(m, "poke3", &k)) {
		printf("FAIL poke setup: %d %s\n", r, ooo_last_error());
		return 1;
	}
	args.p = ooo_buf_addr(b);
	args.n = POKE_WORDS;
	args.how = 0;
	r = ooo_launch(q, k, grid, block, 0, &args, sizeof(args));
	if (!r)
		r = ooo_queue_sync(q, 30000);
	printf("own: %d\n", r);
	if (!r) {
		memset(back, 0x55, sizeof(back));
		r = ooo_memcpy_dtoh(q, back, ooo_buf_addr(b), sizeof(back));
		for (uint32_t i = 0; !r && i < POKE_WORDS; i++)
			changed += back[i] == 0xbadbad00u;
		if (r)
			printf("read back: %d (%s)\n", r, ooo_strerror(r));
		else if (changed != POKE_WORDS)
			printf("read back: word 0 is %#x, word 255 %#x\n", back[0], back[POKE_WORDS - 1]);
	}
	printf("own-changed %u\n", changed);
	r = ooo_host_alloc(s, 2u << 20, &h);
	printf("host: %d %s\n", r, r ? ooo_last_error() : "allocated");
	if (!r)
		ooo_host_free(s, h);
	r = ooo_module_load(s, OOO_CUBIN, junk, sizeof(junk), &c);
	printf("cubin: %d %s\n", r, r ? ooo_last_error() : "loaded");
	if (!r)
		ooo_module_unload(c);
	r = ooo_module_load(s, OOO_PTX, global_ptx, sizeof(global_ptx) - 1, &g);
	if (!r) {
		r = ooo_kernel_get(g, "bump", &gk);
		if (!r)
			ooo_kernel_free(gk);
	}
	printf("unfenceable: %d %s\n", r, r ? ooo_last_error() : "got it");
	if (g)
		ooo_module_unload(g);
	ooo_kernel_free(k);
	ooo_module_unload(m);
	ooo_buf_free(b);
	ooo_queue_destroy(q);
	ooo_close(s);
	return 0;
}

static int many(const char *sock, int n, int rounds, bool results)
{
	enum { MAXS = 64 };
	struct {
		uint64_t p;
		uint32_t n, how;
	} args;
	uint32_t grid[3] = { 1, 1, 1 }, block[3] = { 32, 1, 1 }, back[POKE_WORDS];
	ooo_session *s[MAXS] = { 0 };
	ooo_queue *q[MAXS] = { 0 };
	ooo_buf *b[MAXS] = { 0 };
	ooo_module *m[MAXS] = { 0 };
	ooo_kernel *k[MAXS] = { 0 };
	int fails = 0, r;

	if (n < 1 || n > MAXS || rounds < 1) {
		fprintf(stderr, "many: N is 1..%d, ROUNDS at least 1\n", MAXS);
		return 2;
	}
	for (int i = 0; i < n; i++) {
		if (!(s[i] = ooo_open(sock)) || ooo_queue_create(s[i], NULL, &q[i]) ||
		    ooo_buf_alloc(s[i], WORDS * 4, 0, &b[i]) ||
		    ooo_module_load(s[i], OOO_PTX, poke_ptx, sizeof(poke_ptx) - 1, &m[i]) ||
		    ooo_kernel_get(m[i], "poke3", &k[i]) || ooo_memset(q[i], ooo_buf_addr(b[i]), 0, WORDS, 4)) {
			printf("FAIL setup of session %d: %s\n", i, ooo_last_error());
			return 1;
		}
	}
	for (int j = 0; j < rounds; j++) {
		for (int i = 0; i < n; i++) {
			args.p = ooo_buf_addr(b[i]);
			args.n = POKE_WORDS;
			args.how = (uint32_t)(j % 3);
			r = ooo_launch(q[i], k[i], grid, block, 0, &args, sizeof(args));
			if (r) {
				printf("FAIL launch %d of session %d: %d %s\n", j, i, r, ooo_last_error());
				return 1;
			}
		}
	}
	for (int i = 0; i < n; i++) {
		r = ooo_queue_sync(q[i], 30000);
		if (r) {
			printf("FAIL sync of session %d: %d (%s)\n", i, r, ooo_strerror(r));
			fails++;
			continue;
		}
		if (!results)
			continue;
		r = ooo_memcpy_dtoh(q[i], back, ooo_buf_addr(b[i]), sizeof(back));
		for (uint32_t w = 0; !r && w < POKE_WORDS; w++)
			if (back[w] != 0xbadbad00u) {
				printf("FAIL session %d: word %u is %#x\n", i, w, back[w]);
				fails++;
				break;
			}
	}
	for (int i = 0; i < n; i++) {
		ooo_kernel_free(k[i]);
		ooo_module_unload(m[i]);
		ooo_buf_free(b[i]);
		ooo_queue_destroy(q[i]);
		ooo_close(s[i]);
	}
	if (!fails)
		printf("ok: %d sessions x %d launches%s\n", n, rounds, results ? ", every result right" : "");
	return fails != 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[2], "victim"))
		return victim(argv[1]);
	if (argc == 5 && !strcmp(argv[2], "poke"))
		return poke(argv[1], argv[3], argv[4]);
	if (argc == 3 && !strcmp(argv[2], "fenced"))
		return fenced(argv[1]);
	if ((argc == 5 || (argc == 6 && !strcmp(argv[5], "noresults"))) && !strcmp(argv[2], "many"))
		return many(argv[1], atoi(argv[3]), atoi(argv[4]), argc == 5);
	fprintf(stderr, "usage: domain_check SOCK victim | poke ADDR global|generic|atom | fenced | many N ROUNDS "
			"[noresults]\n");
	return 2;
}
