/* SPDX-License-Identifier: MIT */
/*
 * buf_check: a tenant with a CUDA context of its own, for tests/gpu.
 *   buf_check SOCK keep LIBCUDA  allocate 64 MiB through oood, import it here, fill it,
 *                                print "ready ADDR", wait for a line on stdin, then
 *                                check the contents and free it; prints "ok"
 *   buf_check SOCK hold SIZE     allocate SIZE bytes, print "held", sleep until killed
 *   buf_check SOCK alloc SIZE    allocate SIZE bytes; print the result code and reason
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../../daemon/exec/cuda.h"

#define PATTERN 0x5eed1234u

static int die(const char *what, int r)
{
	printf("error %s: %d %s: %s\n", what, r, ooo_strerror(r), ooo_last_error());
	return 1;
}

static int keep(ooo_session *s, const char *libcuda)
{
	struct cuda_api api;
	char why[256], e[256], line[64];
	CUmemGenericAllocationHandle h;
	CUmemAccessDesc acc = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
				.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUdeviceptr p = 0;
	CUcontext ctx;
	CUdevice dev;
	ooo_buf *b;
	uint32_t *host;
	size_t size, words;
	int fd, r;
	CUresult cr;

	r = ooo_buf_alloc(s, 64u << 20, 0, &b);
	if (r < 0)
		return die("alloc", r);
	size = ooo_buf_size(b);
	fd = ooo_buf_export_fd(b);
	if (fd < 0)
		return die("export", fd);
	if (cuda_load(&api, libcuda, why, sizeof(why)) < 0) {
		printf("error cuda: %s\n", why);
		return 1;
	}
#define CK(call)                                                                                           \
	do {                                                                                               \
		cr = (call);                                                                               \
		if (cr != CUDA_SUCCESS) {                                                                  \
			printf("error %s: %s\n", #call, cuda_strerror(&api, cr, e, sizeof(e)));            \
			return 1;                                                                          \
		}                                                                                          \
	} while (0)
	CK(api.p_cuInit(0));
	CK(api.p_cuDeviceGet(&dev, 0));
	CK(api.p_cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(api.p_cuCtxSetCurrent(ctx));
	CK(api.p_cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
	close(fd);
	CK(api.p_cuMemAddressReserve(&p, size, 0, 0, 0));
	CK(api.p_cuMemMap(p, size, 0, h, 0));
	CK(api.p_cuMemSetAccess(p, size, &acc, 1));
	words = size / 4;
	CK(api.p_cuMemsetD32(p, PATTERN, words));
	CK(api.p_cuCtxSynchronize());
	printf("ready %#llx %zu\n", (unsigned long long)ooo_buf_addr(b), size);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	host = malloc(size);
	if (!host)
		return 1;
	CK(api.p_cuMemcpyDtoH(host, p, size));
	for (size_t i = 0; i < words; i++) {
		if (host[i] != PATTERN) {
			printf("error contents: word %zu is %#x\n", i, host[i]);
			return 1;
		}
	}
	free(host);
	CK(api.p_cuMemUnmap(p, size));
	CK(api.p_cuMemAddressFree(p, size));
	CK(api.p_cuMemRelease(h));
	r = ooo_buf_free(b);
	if (r < 0)
		return die("free", r);
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	ooo_session *s;
	ooo_buf *b;
	int r;

	if (argc != 4) {
		fprintf(stderr, "usage: buf_check SOCK keep LIBCUDA | hold SIZE | alloc SIZE\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	s = ooo_open(argv[1]);
	if (!s)
		return die("open", -errno);
	if (!strcmp(argv[2], "keep"))
		return keep(s, argv[3]);
	r = ooo_buf_alloc(s, strtoull(argv[3], NULL, 0), 0, &b);
	if (!strcmp(argv[2], "alloc")) {
		printf("result %d %s\n", r, r < 0 ? ooo_last_error() : "");
		if (r == 0)
			ooo_buf_free(b);
		ooo_close(s);
		return 0;
	}
	if (r < 0)
		return die("alloc", r);
	printf("held %zu\n", ooo_buf_size(b));
	fflush(stdout);
	for (;;)
		pause();
}
