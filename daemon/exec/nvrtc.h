/* SPDX-License-Identifier: MIT */
/* NVRTC, loaded at run time like libcuda: CUDA C source to PTX in the executor. */
#ifndef OOO_EXEC_NVRTC_H
#define OOO_EXEC_NVRTC_H

#include <stddef.h>

/*
 * Compile `src` (len bytes, need not be NUL-terminated) for compute
 * capability major.minor. On success returns 0 and a malloc'd PTX string in
 * *ptx. On failure returns -errno and the first part of NVRTC's log (or why
 * NVRTC is missing) in log.
 */
int nvrtc_compile(const char *src, size_t len, int major, int minor, char **ptx, char *log, size_t cap);

#endif
