/* Grid-stride loops: each thread handles several elements. */

/* n = 10000 over 1024 threads: up to 10 iterations per thread */
// ooo-jit: kernel=gs_scale_f32 expect=fusible grid=8 block=128 smem=0 params=in:f32:10000;out:f32:10000;f32:-0.75;i32:10000
extern "C" __global__ void gs_scale_f32(const float *x, float *y, float s, int n)
{
#pragma unroll 1
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
		y[i] = x[i] * s + 0.125f;
}

/* 64-bit trip count and stride */
// ooo-jit: kernel=gs_pairs_i64 expect=fusible grid=4 block=128 smem=0 params=in:i64:3000;out:i64:3000;i64:3000
extern "C" __global__ void gs_pairs_i64(const long long *a, long long *out, long long n)
{
	long long stride = (long long)blockDim.x * gridDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		out[i] = a[i] * a[(i + 1) % n] + i;
}

// ooo-jit: kernel=gs_bytes_u8 expect=fusible grid=16 block=128 smem=0 params=in:u8:5000;out:u8:5000;u32:5000
extern "C" __global__ void gs_bytes_u8(const unsigned char *a, unsigned char *b, unsigned n)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
		unsigned v = a[i];
		b[i] = (unsigned char)((v * 7u + (v >> 3)) ^ 0x5au);
	}
}
