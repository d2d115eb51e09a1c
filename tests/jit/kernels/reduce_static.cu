/* Block reductions through static __shared__ arrays and __syncthreads. */
#include <climits>

// ooo-jit: kernel=rs_sum_f32 expect=fusible grid=32 block=128 smem=0 params=in:f32:4096;out:f32:32
extern "C" __global__ void rs_sum_f32(const float *in, float *out)
{
	__shared__ float s[128];
	unsigned t = threadIdx.x;
	s[t] = in[blockIdx.x * 128 + t];
	__syncthreads();
	for (unsigned k = 64; k > 0; k >>= 1) {
		if (t < k)
			s[t] += s[t + k];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = s[0];
}

/* n = 2000 < 2048: the tail of the last block is padded with INT_MIN */
// ooo-jit: kernel=rs_max_i32 expect=fusible grid=8 block=256 smem=0 params=in:i32:2048;out:i32:8;i32:2000
extern "C" __global__ void rs_max_i32(const int *in, int *out, int n)
{
	__shared__ int s[256];
	unsigned t = threadIdx.x;
	int i = blockIdx.x * blockDim.x + t;
	s[t] = i < n ? in[i] * 7 - 3000 : INT_MIN;
	__syncthreads();
	for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
		if (t < k)
			s[t] = max(s[t], s[t + k]);
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = s[0];
}

/* a namespace-scope __shared__ array (nvcc demotes it into the kernel);
   warp.cu has one of the same name and another size */
__shared__ double scratch[128];

// ooo-jit: kernel=rs_dot_f64 expect=fusible grid=16 block=128 smem=0 params=in:f64:2048;in:f64:2048;out:f64:16
extern "C" __global__ void rs_dot_f64(const double *a, const double *b, double *out)
{
	unsigned t = threadIdx.x;
	unsigned i = blockIdx.x * blockDim.x + t;
	scratch[t] = a[i] * b[i];
	__syncthreads();
	for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
		if (t < k)
			scratch[t] += scratch[t + k];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = scratch[0];
}
