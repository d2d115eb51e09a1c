/* SPDX-License-Identifier: MIT */
/*
 * The part of the NVRTC API that ooo uses, declared by ooo itself so that
 * building needs no CUDA toolkit: libnvrtc is dlopen()ed at run time by the
 * compile helper (daemon/exec/nvrtc.c). These are the ABI of NVRTC 12.4+ as
 * NVIDIA documents it, written here from that documentation, not a copy of
 * NVIDIA's nvrtc.h. The rules of daemon/exec/cuda_api.h apply: only what
 * ooo's code names; whoever adds a call adds its prototype and values and
 * runs tests/unit/test_cuda_abi.sh against a toolkit's nvrtc.h; keep the
 * one-item-per-line layout that test reads.
 */
#ifndef OOO_NVRTC_API_H
#define OOO_NVRTC_API_H

#include <stddef.h>

typedef struct _nvrtcProgram *nvrtcProgram;

typedef enum {
	NVRTC_SUCCESS = 0,
	NVRTC_ERROR_OUT_OF_MEMORY = 1,
	NVRTC_ERROR_INVALID_INPUT = 3,
	NVRTC_ERROR_INVALID_PROGRAM = 4,
	NVRTC_ERROR_COMPILATION = 6,
} nvrtcResult;

#endif /* OOO_NVRTC_API_H: the types */

/* The prototypes' own guard: see daemon/exec/cuda_api.h. */
#ifndef OOO_NVRTC_API_FUNCS
#define OOO_NVRTC_API_FUNCS

const char *nvrtcGetErrorString(nvrtcResult result);
nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int numHeaders,
			       const char *const *headers, const char *const *includeNames);
nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog);
nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char *const *options);
nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *ptxSizeRet);
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx);
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *logSizeRet);
nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log);

#endif /* OOO_NVRTC_API_FUNCS */
