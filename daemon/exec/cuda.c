/* SPDX-License-Identifier: MIT */
#include "cuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef __typeof__(&cuGetProcAddress_v2) get_proc_fn;
typedef __typeof__(&cuDriverGetVersion) version_fn;

static bool resolve(get_proc_fn get_proc, const char *name, int version, void **out)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	void *fn = NULL;

	if (get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS ||
	    st != CU_GET_PROC_ADDRESS_SUCCESS || !fn)
		return false;
	*out = fn;
	return true;
}

/*
 * The CUDA_FUNCS_NEWER functions the executor cannot do without: the
 * datapath reads every kernel's parameter layout with cuFuncGetParamInfo
 * (CUDA 12.4). The others (green contexts: daemon/exec/partition.c) are
 * optional, NULL on an older driver.
 */
static bool newer_required(const char *name)
{
	return strcmp(name, "cuFuncGetParamInfo") == 0;
}

int cuda_load(struct cuda_api *api, const char *path, char *why, size_t cap)
{
	get_proc_fn get_proc;
	version_fn get_version;
	const char *missing = NULL;
	CUresult r;
	int want;

	memset(api, 0, sizeof(*api));
	api->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!api->lib) {
		const char *e = dlerror();
		snprintf(why, cap, "no NVIDIA driver: cannot load %s: %s", path, e ? e : "unknown error");
		return -ENOENT;
	}
	/* cuGetProcAddress_v2 is CUDA 12.0's, the one version of it cuda_api.h declares */
	get_proc = (get_proc_fn)dlsym(api->lib, "cuGetProcAddress_v2");
	get_version = (version_fn)dlsym(api->lib, "cuDriverGetVersion");
	if (!get_proc || !get_version) {
		snprintf(why, cap, "%s is not a CUDA 12+ driver library (no cuGetProcAddress_v2)", path);
		cuda_unload(api);
		return -ENOSYS;
	}
	r = get_version(&api->driver_version);
	if (r == CUDA_ERROR_STUB_LIBRARY) {
		/* linking against the toolkit's stub is fine; running on it is not */
		snprintf(why, cap, "no NVIDIA driver: %s is the CUDA toolkit's stub library", path);
		cuda_unload(api);
		return -ENOENT;
	}
	if (r != CUDA_SUCCESS)
		api->driver_version = 0;
	/*
	 * Ask for every symbol as of CUDA 12.0. cuGetProcAddress returns the
	 * newest variant for the version asked, and a newer toolkit's header may
	 * still declare an older one under the plain name (CUDA 13 declares
	 * cuCtxSynchronize(void) but returns cuCtxSynchronize_v2(ctx) for
	 * 13000): the table's types are the 12.0 ABI, so that is what we ask.
	 */
	if (api->driver_version && api->driver_version < CUDA_ABI_VERSION) {
		snprintf(why, cap, "%s is CUDA %d.%d; ooo needs a CUDA %d.%d driver or newer", path,
			 api->driver_version / 1000, api->driver_version % 1000 / 10, CUDA_ABI_VERSION / 1000,
			 CUDA_ABI_VERSION % 1000 / 10);
		cuda_unload(api);
		return -ENOSYS;
	}
	want = CUDA_ABI_VERSION;
#define CUDA_RESOLVE(name)                                                                                 \
	if (!missing && !resolve(get_proc, #name, want, (void **)&api->p_##name))                          \
		missing = #name;
	CUDA_FUNCS(CUDA_RESOLVE)
#undef CUDA_RESOLVE
	/*
	 * Newer functions, each asked for at the version it appeared in: a
	 * driver older than that (or one without it) leaves the pointer NULL,
	 * and its callers check before calling. Only the ones newer_required()
	 * names are refused as missing (-ENOEXEC), as before.
	 */
#define CUDA_RESOLVE_V(name, ver)                                                                          \
	if (!missing && !resolve(get_proc, #name, ver, (void **)&api->p_##name)) {                         \
		api->p_##name = NULL;                                                                      \
		if (newer_required(#name))                                                                 \
			missing = #name;                                                                   \
	}
	CUDA_FUNCS_NEWER(CUDA_RESOLVE_V)
#undef CUDA_RESOLVE_V
	if (missing) {
		snprintf(why, cap, "%s (driver %d.%d) does not provide %s", path, api->driver_version / 1000,
			 api->driver_version % 1000 / 10, missing);
		cuda_unload(api);
		return -ENOEXEC;
	}
	return 0;
}

void cuda_unload(struct cuda_api *api)
{
	if (api->lib)
		dlclose(api->lib);
	memset(api, 0, sizeof(*api));
}

const char *cuda_strerror(const struct cuda_api *api, CUresult r, char *buf, size_t cap)
{
	const char *name = NULL, *text = NULL;

	if (api->p_cuGetErrorName)
		api->p_cuGetErrorName(r, &name);
	if (api->p_cuGetErrorString)
		api->p_cuGetErrorString(r, &text);
	snprintf(buf, cap, "%s (%d): %s", name ? name : "CUDA error", (int)r, text ? text : "unknown");
	return buf;
}

int cuda_error_is_nodev(CUresult r)
{
	return r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_STUB_LIBRARY ||
	       r == CUDA_ERROR_NOT_FOUND || r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH ||
	       r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE || r == CUDA_ERROR_NOT_SUPPORTED;
}
