/* Block reductions through extern __shared__ (dynamic) shared memory. */
#include <climits>

/* warp.cu declares an extern __shared__ array of the same name */
extern __shared__ float sdata[];

// ooo-jit: kernel=rd_sum_f32 expect=fusible grid=16 block=128 smem=512 params=in:f32:2048;out:f32:16;i32:2000
extern "C" __global__ void rd_sum_f32(const float *in, float *out, int n)
{
	unsigned t = threadIdx.x;
	int i = blockIdx.x * blockDim.x + t;
	sdata[t] = i < n ? in[i] : 0.0f;
	__syncthreads();
	for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
		if (t < k)
			sdata[t] += sdata[t + k];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = sdata[0];
}

/* two arrays carved out of one dynamic allocation (2 * blockDim ints) */
// ooo-jit: kernel=rd_minmax_i32 expect=fusible grid=8 block=128 smem=1024 params=in:i32:1024;out:i32:16
extern "C" __global__ void rd_minmax_i32(const int *in, int *out)
{
	extern __shared__ int ibuf[];
	int *mn = ibuf, *mx = ibuf + blockDim.x;
	unsigned t = threadIdx.x;
	int v = in[blockIdx.x * blockDim.x + t];
	mn[t] = v;
	mx[t] = v;
	__syncthreads();
	for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
		if (t < k) {
			mn[t] = min(mn[t], mn[t + k]);
			mx[t] = max(mx[t], mx[t + k]);
		}
		__syncthreads();
	}
	if (t == 0) {
		out[2 * blockIdx.x] = mn[0];
		out[2 * blockIdx.x + 1] = mx[0];
	}
}

// ooo-jit: kernel=rd_sum_f64 expect=fusible grid=16 block=64 smem=512 params=in:f64:1024;out:f64:16
extern "C" __global__ void rd_sum_f64(const double *in, double *out)
{
	extern __shared__ double dbuf[];
	unsigned t = threadIdx.x;
	dbuf[t] = in[blockIdx.x * blockDim.x + t];
	__syncthreads();
	for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
		if (t < k)
			dbuf[t] += dbuf[t + k];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = dbuf[0];
}
