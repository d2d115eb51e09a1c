/* SPDX-License-Identifier: MIT */
#include "nvrtc.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h>

struct nvrtc_api {
	void *lib;
	__typeof__(&nvrtcCreateProgram) create;
	__typeof__(&nvrtcCompileProgram) compile;
	__typeof__(&nvrtcGetPTXSize) ptx_size;
	__typeof__(&nvrtcGetPTX) get_ptx;
	__typeof__(&nvrtcGetProgramLogSize) log_size;
	__typeof__(&nvrtcGetProgramLog) get_log;
	__typeof__(&nvrtcDestroyProgram) destroy;
	__typeof__(&nvrtcGetErrorString) errstr;
};

static struct nvrtc_api api;

static int load(char *log, size_t cap)
{
	static const char *const names[] = { "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
					     "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so" };

	if (api.lib)
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !api.lib; i++)
		api.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!api.lib) {
		snprintf(log, cap, "CUDA C needs NVRTC (libnvrtc.so), which this host lacks");
		return -ENOSYS;
	}
	api.create = (__typeof__(api.create))dlsym(api.lib, "nvrtcCreateProgram");
	api.compile = (__typeof__(api.compile))dlsym(api.lib, "nvrtcCompileProgram");
	api.ptx_size = (__typeof__(api.ptx_size))dlsym(api.lib, "nvrtcGetPTXSize");
	api.get_ptx = (__typeof__(api.get_ptx))dlsym(api.lib, "nvrtcGetPTX");
	api.log_size = (__typeof__(api.log_size))dlsym(api.lib, "nvrtcGetProgramLogSize");
	api.get_log = (__typeof__(api.get_log))dlsym(api.lib, "nvrtcGetProgramLog");
	api.destroy = (__typeof__(api.destroy))dlsym(api.lib, "nvrtcDestroyProgram");
	api.errstr = (__typeof__(api.errstr))dlsym(api.lib, "nvrtcGetErrorString");
	if (!api.create || !api.compile || !api.ptx_size || !api.get_ptx || !api.log_size || !api.get_log ||
	    !api.destroy || !api.errstr) {
		dlclose(api.lib);
		memset(&api, 0, sizeof(api));
		snprintf(log, cap, "libnvrtc.so lacks functions ooo needs");
		return -ENOSYS;
	}
	return 0;
}

int nvrtc_compile(const char *src, size_t len, int major, int minor, char **ptx, char *log, size_t cap)
{
	char arch[48], *text;
	const char *opts[2];
	nvrtcProgram prog;
	nvrtcResult r;
	size_t n = 0;
	int rc;

	*ptx = NULL;
	rc = load(log, cap);
	if (rc < 0)
		return rc;
	text = malloc(len + 1);
	if (!text)
		return -ENOMEM;
	memcpy(text, src, len);
	text[len] = '\0';
	r = api.create(&prog, text, "tenant.cu", 0, NULL, NULL);
	free(text);
	if (r != NVRTC_SUCCESS) {
		snprintf(log, cap, "nvrtcCreateProgram: %s", api.errstr(r));
		return -EINVAL;
	}
	snprintf(arch, sizeof(arch), "--gpu-architecture=compute_%d%d", major, minor);
	opts[0] = arch;
	opts[1] = "--std=c++17";
	r = api.compile(prog, 2, opts);
	if (r != NVRTC_SUCCESS) {
		size_t ls = 0;
		char *full;

		api.log_size(prog, &ls);
		full = malloc(ls + 1);
		if (full && api.get_log(prog, full) == NVRTC_SUCCESS) {
			full[ls] = '\0';
			snprintf(log, cap, "%s", full);
		} else {
			snprintf(log, cap, "compilation failed: %s", api.errstr(r));
		}
		free(full);
		api.destroy(&prog);
		return -EINVAL;
	}
	if (api.ptx_size(prog, &n) != NVRTC_SUCCESS || !(*ptx = malloc(n + 1)) || api.get_ptx(prog, *ptx) != NVRTC_SUCCESS) {
		free(*ptx);
		*ptx = NULL;
		api.destroy(&prog);
		snprintf(log, cap, "cannot get the PTX from NVRTC");
		return -EIO;
	}
	(*ptx)[n] = '\0';
	api.destroy(&prog);
	return 0;
}
