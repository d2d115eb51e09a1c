/* SPDX-License-Identifier: MIT */
/*
 * NVRTC, loaded at run time like libcuda: CUDA C source to PTX for the
 * executor. The compile runs in a short-lived helper process (the executor's
 * own binary, started again in NVRTC_HELPER_ARG mode), so that a crash, a
 * hang or a memory blow-up of the compiler fails that one load and never
 * the executor that serves every tenant of its domain.
 */
#ifndef OOO_EXEC_NVRTC_H
#define OOO_EXEC_NVRTC_H

#include <stddef.h>

/* argv[1] of the helper: main() hands such a process to nvrtc_helper_main */
#define NVRTC_HELPER_ARG "--nvrtc-helper"

/*
 * Wall clock for one compile, from the helper's start to its answer. The
 * executor's thread that answers oood waits for the compile and answers no
 * ping meanwhile: the limit stays well below oood's watchdog (GPU_HANG_NS,
 * 30 s; daemon/gpu.c checks), or a hung compiler would still cost the
 * executor. Longer compiles need the load answered off that thread.
 */
#define NVRTC_TIME_LIMIT_MS 20000u
#define NVRTC_AS_MAX (8ull << 30)   /* the helper's address space (RLIMIT_AS); NVRTC itself maps ~130 MiB */
#define NVRTC_LOG_MAX (64u << 10)   /* the most of NVRTC's log the helper sends back (the rest is cut) */
#define NVRTC_PTX_MAX (256u << 20)  /* the most PTX taken back: as large as a module image may be */

/* What one compile may take; nvrtc_compile uses the NVRTC_* defaults above. */
struct nvrtc_limits {
	unsigned time_ms;	    /* wall clock; past it the helper is killed and the load fails */
	size_t ptx_max;		    /* PTX longer than this (bytes) fails the load */
	size_t log_max;		    /* log bytes the helper sends (cut to the caller's cap as well) */
	unsigned long long as_max;  /* the helper's RLIMIT_AS; 0 for none */
};

/* The NVRTC_* limits above. */
extern const struct nvrtc_limits nvrtc_default_limits;

/*
 * Compile `src` (len bytes, need not be NUL-terminated) for compute
 * capability major.minor, in a helper process. On success returns 0 and a
 * malloc'd PTX string in *ptx. On failure returns -errno, *ptx is NULL, and
 * log says why: NVRTC's log (its first cap - 1 bytes) with -EINVAL, why
 * NVRTC is missing with -ENOSYS, "NVRTC crashed (signal N, SIGX) compiling
 * this module" with -EIO, the time limit with -ETIMEDOUT, PTX over the
 * limit with -EFBIG, or why the helper could not run. Blocks at most the
 * time limit and a moment more; safe to call from several threads at once.
 */
int nvrtc_compile(const char *src, size_t len, int major, int minor, char **ptx, char *log, size_t cap);

/* nvrtc_compile with other limits (the tests'). */
int nvrtc_compile_limits(const char *src, size_t len, int major, int minor, const struct nvrtc_limits *lim,
			 char **ptx, char *log, size_t cap);

/*
 * The helper process: main() calls it when argv[1] is NVRTC_HELPER_ARG.
 * It reads the source from fd 0, writes its answer to fd 1 and exits; it
 * is not a command for people (nvrtc.c describes its arguments).
 */
int nvrtc_helper_main(int argc, char **argv);

#endif
