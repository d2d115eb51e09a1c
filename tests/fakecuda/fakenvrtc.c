/* SPDX-License-Identifier: MIT */
/*
 * A stand-in libnvrtc.so.13 for the tests (never installed, never in the
 * product): the NVRTC entry points daemon/exec/nvrtc.c resolves. Tests put
 * its directory (BUILD/tests/fakecuda) first in LD_LIBRARY_PATH so that the
 * executor's NVRTC helper opens it instead of a real NVRTC.
 *
 * It "compiles" by passing the source through: the PTX is the source as it
 * is, so a test loads PTX text as CUDA C and gets a module the stand-in
 * driver (fakecuda.c) can read. A marker anywhere in the source changes
 * what nvrtcCompileProgram does:
 *   fakenvrtc_crash   raises SIGSEGV (the compiler crashing)
 *   fakenvrtc_hang    never returns (sleeps)
 *   fakenvrtc_hog     allocates and touches memory 16 MiB at a time, up to
 *                     2 GiB, and fails with NVRTC_ERROR_OUT_OF_MEMORY when
 *                     malloc fails first (the limit on the helper's address
 *                     space); with 2 GiB touched it succeeds
 *   fakenvrtc_error   fails (NVRTC_ERROR_COMPILATION) with a one-line log
 *   fakenvrtc_biglog  fails with a log of 1 MiB of 'x'
 *   fakenvrtc_report  fails with a log that says what the process it runs
 *                     in looks like: its open descriptors, dumpable,
 *                     parent-death signal, RLIMIT_AS and RLIMIT_CPU, and
 *                     the options it was given
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../../daemon/exec/nvrtc_api.h"

struct _nvrtcProgram {
	char *src;
	char *log; /* "" until a compile fails */
};

const char *nvrtcGetErrorString(nvrtcResult r)
{
	switch (r) {
	case NVRTC_SUCCESS: return "NVRTC_SUCCESS";
	case NVRTC_ERROR_OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
	case NVRTC_ERROR_INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
	case NVRTC_ERROR_INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
	case NVRTC_ERROR_COMPILATION: return "NVRTC_ERROR_COMPILATION";
	default: return "NVRTC_ERROR (fakenvrtc)";
	}
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int nh, const char *const *h,
			       const char *const *hn)
{
	struct _nvrtcProgram *p;

	if (!prog || !src)
		return NVRTC_ERROR_INVALID_INPUT;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->src = strdup(src)) || !(p->log = strdup(""))) {
		if (p)
			free(p->src);
		free(p);
		return NVRTC_ERROR_OUT_OF_MEMORY;
	}
	*prog = p;
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog)
{
	if (!prog || !*prog)
		return NVRTC_ERROR_INVALID_PROGRAM;
	free((*prog)->src);
	free((*prog)->log);
	free(*prog);
	*prog = NULL;
	return NVRTC_SUCCESS;
}

static nvrtcResult fail_with(nvrtcProgram p, char *log)
{
	if (!log)
		return NVRTC_ERROR_OUT_OF_MEMORY;
	free(p->log);
	p->log = log;
	return NVRTC_ERROR_COMPILATION;
}

/* The report of fakenvrtc_report, malloc'd. */
static char *report(int nopt, const char *const *opts)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	struct rlimit as = { 0 }, cpu = { 0 };
	struct dirent *e;
	DIR *d;
	int sig = -1;

	if (!f)
		return NULL;
	fprintf(f, "fds:");
	d = opendir("/proc/self/fd");
	while (d && (e = readdir(d))) {
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			fprintf(f, " %s", e->d_name);
	}
	if (d)
		closedir(d);
	prctl(PR_GET_PDEATHSIG, &sig);
	getrlimit(RLIMIT_AS, &as);
	getrlimit(RLIMIT_CPU, &cpu);
	fprintf(f, "\ndumpable: %d\npdeathsig: %d\nrlimit_as: %llu\nrlimit_cpu: %llu\noptions:", prctl(PR_GET_DUMPABLE),
		sig, (unsigned long long)as.rlim_cur, (unsigned long long)cpu.rlim_cur);
	for (int i = 0; i < nopt; i++)
		fprintf(f, " %s", opts[i]);
	fprintf(f, "\n");
	fclose(f);
	return out;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int nopt, const char *const *opts)
{
	if (!p)
		return NVRTC_ERROR_INVALID_PROGRAM;
	if (strstr(p->src, "fakenvrtc_crash")) {
		raise(SIGSEGV);
		abort();
	}
	if (strstr(p->src, "fakenvrtc_hang")) {
		for (;;)
			pause();
	}
	if (strstr(p->src, "fakenvrtc_hog")) {
		for (size_t mib = 0; mib < 2048; mib += 16) {
			char *m = malloc(16u << 20);

			if (!m) {
				char *log = NULL;

				if (asprintf(&log, "fakenvrtc: out of memory after %zu MiB", mib) < 0)
					log = NULL;
				fail_with(p, log);
				return NVRTC_ERROR_OUT_OF_MEMORY;
			}
			memset(m, 1, 16u << 20); /* leaked on purpose: the hog keeps what it took */
		}
	}
	if (strstr(p->src, "fakenvrtc_error"))
		return fail_with(p, strdup("tenant.cu(1): error: fakenvrtc_error found in the source"));
	if (strstr(p->src, "fakenvrtc_biglog")) {
		char *log = malloc((1u << 20) + 1);

		if (log) {
			memset(log, 'x', 1u << 20);
			log[1u << 20] = '\0';
		}
		return fail_with(p, log);
	}
	if (strstr(p->src, "fakenvrtc_report"))
		return fail_with(p, report(nopt, opts));
	return NVRTC_SUCCESS;
}

/* Sizes count the terminating NUL, as NVRTC's do. */
nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t *n)
{
	if (!p || !n)
		return NVRTC_ERROR_INVALID_INPUT;
	*n = strlen(p->src) + 1;
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetPTX(nvrtcProgram p, char *ptx)
{
	if (!p || !ptx)
		return NVRTC_ERROR_INVALID_INPUT;
	memcpy(ptx, p->src, strlen(p->src) + 1);
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t *n)
{
	if (!p || !n)
		return NVRTC_ERROR_INVALID_INPUT;
	*n = strlen(p->log) + 1;
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char *log)
{
	if (!p || !log)
		return NVRTC_ERROR_INVALID_INPUT;
	memcpy(log, p->log, strlen(p->log) + 1);
	return NVRTC_SUCCESS;
}
