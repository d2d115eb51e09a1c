/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver API, loaded at run time: dlopen("libcuda.so.1") and a
 * table of typed function pointers filled by cuGetProcAddress, so versioned
 * entry points (cuMemAlloc_v2, ...) resolve to what this build was written
 * against. Nothing here links libcuda, so oood runs on hosts without it.
 * Only the executor process loads it.
 */
#ifndef OOO_EXEC_CUDA_H
#define OOO_EXEC_CUDA_H

#include <stddef.h>

#include "cuda_api.h"

/*
 * The driver ABI the table is typed for: every entry point is resolved as of
 * this CUDA version. Check a function's variant at 12.0 before adding it.
 */
#define CUDA_ABI_VERSION 12000

/* Every driver function the executor calls. Add new ones here, with their prototypes in cuda_api.h. */
#define CUDA_FUNCS(X)                                                                                      \
	X(cuInit)                                                                                          \
	X(cuDriverGetVersion)                                                                              \
	X(cuGetErrorName)                                                                                  \
	X(cuGetErrorString)                                                                                \
	X(cuDeviceGetCount)                                                                                \
	X(cuDeviceGet)                                                                                     \
	X(cuDeviceGetName)                                                                                 \
	X(cuDeviceGetAttribute)                                                                            \
	X(cuDeviceTotalMem)                                                                                \
	X(cuDeviceGetUuid)                                                                                 \
	X(cuDevicePrimaryCtxRetain)                                                                        \
	X(cuDevicePrimaryCtxRelease)                                                                       \
	X(cuCtxSetCurrent)                                                                                 \
	X(cuCtxGetCurrent)                                                                                 \
	X(cuCtxGetDevice)                                                                                  \
	X(cuMemGetInfo)                                                                                    \
	X(cuMemGetAllocationGranularity)                                                                   \
	X(cuMemCreate)                                                                                     \
	X(cuMemRelease)                                                                                    \
	X(cuMemExportToShareableHandle)                                                                    \
	X(cuMemImportFromShareableHandle)                                                                  \
	X(cuMemAddressReserve)                                                                             \
	X(cuMemAddressFree)                                                                                \
	X(cuMemMap)                                                                                        \
	X(cuMemUnmap)                                                                                      \
	X(cuMemSetAccess)                                                                                  \
	X(cuMemcpyHtoD)                                                                                    \
	X(cuMemcpyDtoH)                                                                                    \
	X(cuMemsetD32)                                                                                     \
	X(cuCtxSynchronize)                                                                                \
	X(cuStreamCreate)                                                                                  \
	X(cuStreamDestroy)                                                                                 \
	X(cuStreamSynchronize)                                                                             \
	X(cuEventCreate)                                                                                   \
	X(cuEventDestroy)                                                                                  \
	X(cuEventRecord)                                                                                   \
	X(cuEventQuery)                                                                                    \
	X(cuEventSynchronize)                                                                              \
	X(cuMemHostRegister)                                                                               \
	X(cuMemHostUnregister)                                                                             \
	X(cuMemcpyHtoDAsync)                                                                               \
	X(cuMemcpyDtoHAsync)                                                                               \
	X(cuMemcpyDtoDAsync)                                                                               \
	X(cuMemsetD8Async)                                                                                 \
	X(cuMemsetD16Async)                                                                                \
	X(cuMemsetD32Async)                                                                                \
	X(cuModuleLoadDataEx)                                                                              \
	X(cuModuleUnload)                                                                                  \
	X(cuModuleGetFunction)                                                                             \
	X(cuFuncGetAttribute)                                                                              \
	X(cuLaunchKernel)                                                                                  \
	X(cuStreamWaitEvent)                                                                               \
	X(cuStreamCreateWithPriority)                                                                      \
	X(cuCtxGetStreamPriorityRange)                                                                     \
	X(cuMemAlloc)                                                                                      \
	X(cuMemFree)                                                                                       \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                     \
	X(cuEventElapsedTime)                                                                              \
	X(cuMemHostAlloc)                                                                                  \
	X(cuMemFreeHost)

/* Functions newer than CUDA_ABI_VERSION, each resolved at the version it appeared in. */
#define CUDA_FUNCS_NEWER(X)                                                                                \
	X(cuFuncGetParamInfo, 12040)                                                                       \
	X(cuDeviceGetDevResource, 12040)                                                                   \
	X(cuDevSmResourceSplitByCount, 12040)                                                              \
	X(cuDevResourceGenerateDesc, 12040)                                                                \
	X(cuGreenCtxCreate, 12040)                                                                         \
	X(cuGreenCtxDestroy, 12040)                                                                        \
	X(cuGreenCtxGetDevResource, 12040)                                                                 \
	X(cuCtxFromGreenCtx, 12040)                                                                        \
	X(cuGreenCtxStreamCreate, 12050)

struct cuda_api {
	void *lib;
	int driver_version; /* e.g. 13000 */
#define CUDA_MEMBER(name) __typeof__(&name) p_##name;
#define CUDA_MEMBER_V(name, ver) __typeof__(&name) p_##name;
	CUDA_FUNCS(CUDA_MEMBER)
	CUDA_FUNCS_NEWER(CUDA_MEMBER_V)
#undef CUDA_MEMBER
#undef CUDA_MEMBER_V
};

/*
 * Load the driver library `path` (a name for dlopen or an absolute path) and
 * resolve every function. Returns 0, or -ENOENT (library not found),
 * -ENOSYS (not a CUDA driver, or too old: no cuGetProcAddress), -ENOEXEC
 * (a function is missing); `why` says which, for the operator. On error the
 * api is unloaded.
 */
int cuda_load(struct cuda_api *api, const char *path, char *why, size_t cap);

/* dlclose the library. Accepts a zeroed or unloaded api. */
void cuda_unload(struct cuda_api *api);

/* "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected" into buf; returns buf. */
const char *cuda_strerror(const struct cuda_api *api, CUresult r, char *buf, size_t cap);

/* Is this cuInit result permanent (no driver, no device, stub library)? */
int cuda_error_is_nodev(CUresult r);

#endif
