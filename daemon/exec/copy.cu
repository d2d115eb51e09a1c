// The executor's copy kernel (daemon/exec/coalesce.c, "copies as launches"):
// a small copy (HtoD, DtoH, DtoD) of a tenant runs as a launch of this kernel,
// so that the copies of many tenants fuse into one launch like their kernels.
// Host memory is the session's registered staging or host regions, which the
// device reaches at the same address (CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM).
// One block of 256 threads moves 4 KiB: each thread 16 bytes, as one 16-byte
// access when dst and src are 16-byte aligned and all 16 are in the copy,
// else byte by byte (the tail, or unaligned ends).
// Launch with grid ceil(n / 4096), block 256; the executor checked both ranges.
// copy.ptx is committed (the build needs no nvcc); regenerate it here with
//   nvcc -ptx -arch=compute_75 -O3 -o copy.ptx copy.cu
// (tests/jit/test_copy_kernel.sh checks that it parses, fuses and passes ptxas).
extern "C" __global__ void __launch_bounds__(256) oood_copy(unsigned char *dst, const unsigned char *src,
							    unsigned long long n)
{
	unsigned long long i = ((unsigned long long)blockIdx.x * 256u + threadIdx.x) * 16u;

	if (i >= n)
		return;
	if ((((unsigned long long)dst | (unsigned long long)src) & 15u) == 0 && i + 16u <= n) {
		*(uint4 *)(dst + i) = *(const uint4 *)(src + i);
		return;
	}
	unsigned long long end = i + 16u < n ? i + 16u : n;
	for (; i < end; i++)
		dst[i] = src[i];
}
