/*
 * Module data: an initialized __constant__ table and an initialized
 * __device__ const table are read-only and fusible; a __constant__ array
 * without an initializer is written by the host (cudaMemcpyToSymbol), so
 * a fused copy of the module would not see the tenant's values.
 */

__constant__ float ct_tbl[4] = {0.5f, -1.25f, 2.0f, 3.75f};

// ooo-jit: kernel=ct_lookup expect=fusible grid=8 block=128 smem=0 params=idx:i32:1024:4;in:f32:1024;out:f32:1024
extern "C" __global__ void ct_lookup(const int *idx, const float *x, float *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = x[i] * ct_tbl[idx[i]] + ct_tbl[3 - idx[i]];
}

/* nvcc puts this in .global, with an initializer */
__device__ const int ct_lut[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};

// ooo-jit: kernel=ct_devconst expect=fusible grid=8 block=128 smem=0 params=idx:i32:1024:16;out:i32:1024
extern "C" __global__ void ct_devconst(const int *idx, int *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = ct_lut[idx[i]] * 10 + ct_lut[(idx[i] + 5) & 15];
}

__constant__ float ct_coef[16];

// ooo-jit: kernel=ct_hostcoef expect=reject reason=host-written
extern "C" __global__ void ct_hostcoef(const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	y[i] = x[i] * ct_coef[i & 15];
}
