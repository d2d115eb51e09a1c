/* 64-bit index arithmetic: size_t and long long indices, 64-bit mul/rem. */
#include <stddef.h>

// ooo-jit: kernel=i64_gather expect=fusible grid=8 block=128 smem=0 params=in:f32:4096;idx:i64:1024:4096;out:f32:1024;u64:1024
extern "C" __global__ void i64_gather(const float *src, const long long *idx, float *dst, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = src[idx[i]] + src[(size_t)idx[i] ^ 1u];
}

// ooo-jit: kernel=i64_strided expect=fusible grid=16 block=128 smem=0 params=in:f64:2048;out:f64:2048;u64:7919;i64:2048
extern "C" __global__ void i64_strided(const double *src, double *dst, unsigned long long stride, long long n)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = src[(long long)(((unsigned long long)i * stride) % (unsigned long long)n)] * 2.0 - (double)i;
}

/* a scatter through a bijection (odd multiplier mod 2^k): no two threads write one element */
// ooo-jit: kernel=i64_scatter expect=fusible grid=8 block=128 smem=0 params=in:i32:1024;out:i32:1024;i64:1024
extern "C" __global__ void i64_scatter(const int *src, int *dst, long long n)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		long long j = (i * 40503LL + 977LL) & (n - 1);
		dst[j] = src[i] * 2 + (int)(j >> 3);
	}
}
