/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the executor's NVRTC helper (daemon/exec/nvrtc.c) with the
 * stand-in NVRTC (tests/fakecuda/fakenvrtc.c, found through
 * LD_LIBRARY_PATH): a compile's PTX and log come back; a compiler that
 * crashes, hangs, eats memory or talks too much fails that compile alone
 * with the reason; the helper has only fds 0-2, is not dumpable, dies with
 * its parent and runs under its limits; several threads compile at once;
 * nothing is left behind (no child, no descriptor). This program is its
 * own helper: nvrtc.c starts /proc/self/exe, whose main() hands it over.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../daemon/exec/nvrtc.h"

static const char ptx_text[] = ".version 7.8\n.target sm_90\n.address_size 64\n"
			       ".visible .entry k(.param .u64 p)\n{\n ret;\n}\n";

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

/* No child of ours is left, reaped or not. */
static void no_children(void)
{
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* Compile s with limits lim (NULL: the defaults) into *ptx, the log into log (cap bytes). */
static int cc(const char *s, const struct nvrtc_limits *lim, char **ptx, char *log, size_t cap)
{
	return lim ? nvrtc_compile_limits(s, strlen(s), 9, 0, lim, ptx, log, cap)
		   : nvrtc_compile(s, strlen(s), 9, 0, ptx, log, cap);
}

static void test_compiles(void **state)
{
	char log[256] = "stale", *ptx = NULL;

	(void)state;
	assert_int_equal(cc(ptx_text, NULL, &ptx, log, sizeof(log)), 0);
	assert_string_equal(ptx, ptx_text); /* the stand-in's PTX is its source */
	assert_string_equal(log, "");
	free(ptx);
	/* len, not a NUL, ends the source */
	assert_int_equal(nvrtc_compile("abcdef", 3, 9, 0, &ptx, log, sizeof(log)), 0);
	assert_string_equal(ptx, "abc");
	free(ptx);
	no_children();
}

static void test_compile_error(void **state)
{
	char log[256], *ptx = (char *)1;

	(void)state;
	assert_int_equal(cc("int x; // fakenvrtc_error", NULL, &ptx, log, sizeof(log)), -EINVAL);
	assert_null(ptx);
	assert_string_equal(log, "tenant.cu(1): error: fakenvrtc_error found in the source");
	no_children();
}

static void test_crash(void **state)
{
	char log[256], *ptx = (char *)1;

	(void)state;
	assert_int_equal(cc("// fakenvrtc_crash", NULL, &ptx, log, sizeof(log)), -EIO);
	assert_null(ptx);
	assert_string_equal(log, "NVRTC crashed (signal 11, SIGSEGV) compiling this module");
	no_children();
	/* and the next compile is fine */
	assert_int_equal(cc(ptx_text, NULL, &ptx, log, sizeof(log)), 0);
	free(ptx);
}

static void test_hang(void **state)
{
	struct nvrtc_limits lim = nvrtc_default_limits;
	char log[256], *ptx = (char *)1;
	uint64_t t0 = now_ms(), ms;

	(void)state;
	lim.time_ms = 700;
	assert_int_equal(cc("// fakenvrtc_hang", &lim, &ptx, log, sizeof(log)), -ETIMEDOUT);
	ms = now_ms() - t0;
	assert_null(ptx);
	assert_string_equal(log, "NVRTC ran past its 1 s limit compiling this module: stopped");
	assert_true(ms >= 700 && ms < 3000);
	no_children(); /* killed and reaped */
}

static void test_ptx_cap(void **state)
{
	struct nvrtc_limits lim = nvrtc_default_limits;
	char log[256], *ptx = (char *)1;

	(void)state;
	lim.ptx_max = 16;
	assert_int_equal(cc(ptx_text, &lim, &ptx, log, sizeof(log)), -EFBIG);
	assert_null(ptx);
	assert_non_null(strstr(log, "over the 16 a module may have"));
	lim.ptx_max = strlen(ptx_text);
	assert_int_equal(cc(ptx_text, &lim, &ptx, log, sizeof(log)), 0);
	free(ptx);
	no_children();
}

static void test_log_cap(void **state)
{
	static char big[1u << 20];
	char log[100], *ptx = NULL;

	(void)state;
	/* cut to the caller's buffer */
	assert_int_equal(cc("// fakenvrtc_biglog", NULL, &ptx, log, sizeof(log)), -EINVAL);
	assert_int_equal(strlen(log), sizeof(log) - 1);
	assert_int_equal(strspn(log, "x"), sizeof(log) - 1);
	/* and to NVRTC_LOG_MAX whatever the buffer */
	assert_int_equal(cc("// fakenvrtc_biglog", NULL, &ptx, big, sizeof(big)), -EINVAL);
	assert_int_equal(strlen(big), NVRTC_LOG_MAX);
	no_children();
}

/* The helper's process, as the stand-in NVRTC sees it from inside. */
static void test_helper_process(void **state)
{
	char log[1024], want[128], *ptx = NULL;
	int leak = dup(1); /* not close-on-exec: the helper must not get it all the same */

	(void)state;
	assert_true(leak > 2);
	assert_int_equal(cc("// fakenvrtc_report", NULL, &ptx, log, sizeof(log)), -EINVAL);
	close(leak);
	assert_non_null(strstr(log, "fds: 0 1 2\n"));
	assert_non_null(strstr(log, "\ndumpable: 0\n"));
	assert_non_null(strstr(log, "\npdeathsig: 9\n"));
	snprintf(want, sizeof(want), "\nrlimit_cpu: %u\n", NVRTC_TIME_LIMIT_MS / 1000 + 1);
	assert_non_null(strstr(log, want));
#ifndef __SANITIZE_ADDRESS__
	snprintf(want, sizeof(want), "\nrlimit_as: %llu\n", NVRTC_AS_MAX);
	assert_non_null(strstr(log, want));
#endif
	assert_non_null(strstr(log, "\noptions: --gpu-architecture=compute_90 --std=c++17\n"));
	no_children();
}

/* A compiler that eats memory meets the helper's RLIMIT_AS (not under ASan: no limit there). */
static void test_memory_limit(void **state)
{
#ifdef __SANITIZE_ADDRESS__
	(void)state;
	skip();
#else
	struct nvrtc_limits lim = nvrtc_default_limits;
	char log[256], *ptx = (char *)1;

	(void)state;
	lim.as_max = 512ull << 20;
	assert_int_equal(cc("// fakenvrtc_hog", &lim, &ptx, log, sizeof(log)), -EINVAL);
	assert_null(ptx);
	assert_non_null(strstr(log, "fakenvrtc: out of memory after "));
	no_children();
#endif
}

struct job {
	int idx, rc;
	char log[128];
	char *ptx;
	char src[64];
};

static void *job_run(void *arg)
{
	struct job *j = arg;

	j->rc = nvrtc_compile(j->src, strlen(j->src), 8, 6, &j->ptx, j->log, sizeof(j->log));
	return NULL;
}

/* Several threads at once (the executor's serving threads): each gets its own answer. */
static void test_threads(void **state)
{
	struct job jobs[6];
	pthread_t th[6];

	(void)state;
	for (int i = 0; i < 6; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		snprintf(jobs[i].src, sizeof(jobs[i].src), "// job %d%s", i, i == 2 ? " fakenvrtc_crash" : "");
		assert_int_equal(pthread_create(&th[i], NULL, job_run, &jobs[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		if (i == 2) {
			assert_int_equal(jobs[i].rc, -EIO);
			continue;
		}
		assert_int_equal(jobs[i].rc, 0);
		assert_string_equal(jobs[i].ptx, jobs[i].src);
		free(jobs[i].ptx);
	}
	no_children();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compiles),     cmocka_unit_test(test_compile_error),
		cmocka_unit_test(test_crash),	     cmocka_unit_test(test_hang),
		cmocka_unit_test(test_ptx_cap),	     cmocka_unit_test(test_log_cap),
		cmocka_unit_test(test_helper_process), cmocka_unit_test(test_memory_limit),
		cmocka_unit_test(test_threads),
	};
	const char *build = getenv("OOO_BUILD");
	char lib[4096], dir[4096];
	int fds, rc;

	if (argc > 1 && !strcmp(argv[1], NVRTC_HELPER_ARG))
		return nvrtc_helper_main(argc, argv);
	snprintf(lib, sizeof(lib), "%s/tests/fakecuda/libnvrtc.so.13", build ? build : "build");
	if (!realpath(lib, dir)) {
		printf("test_nvrtc: skipped: %s is not built\n", lib);
		return 77;
	}
	*strrchr(dir, '/') = '\0';
	/* the helper's dlopen finds the stand-in first, not a real NVRTC of this host */
	setenv("LD_LIBRARY_PATH", dir, 1);
	fds = open_fds();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	if (open_fds() != fds) {
		printf("test_nvrtc: FAIL: %d descriptors open after the tests, %d before\n", open_fds(), fds);
		return 1;
	}
	return rc;
}
