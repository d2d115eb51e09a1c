/*
 * __device__ __noinline__ helpers, called with .param arguments. The
 * helpers take block coordinates as arguments; only ni_where reads
 * blockIdx itself, which a fused kernel cannot rewrite inside a .func.
 */

__device__ __noinline__ float ni_poly3(float x, float a, float b, float c)
{
	return fmaf(fmaf(a, x, b), x, c);
}

/* templates.cu has a mix(int, int) too: the same mangled name, another body */
__device__ __noinline__ int mix(int a, int b)
{
	return (a * 31) ^ (b + 7);
}

// ooo-jit: kernel=ni_poly expect=fusible grid=8 block=128 smem=0 params=in:f32:1024;out:f32:1024;i32:1024
extern "C" __global__ void ni_poly(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = ni_poly3(x[i], 0.5f, -1.0f, 2.0f) + (float)mix(i, n);
}

__device__ __noinline__ unsigned ni_block_tag(unsigned bx, unsigned by, unsigned nbx, unsigned tx)
{
	return ((by * nbx + bx) << 16) | (tx * 3u);
}

/* 2-D grid: the helper gets blockIdx and gridDim as arguments */
// ooo-jit: kernel=ni_tagged expect=fusible grid=4,2 block=128 smem=0 params=out:u32:1024
extern "C" __global__ void ni_tagged(unsigned *out)
{
	unsigned b = blockIdx.y * gridDim.x + blockIdx.x;
	out[b * blockDim.x + threadIdx.x] = ni_block_tag(blockIdx.x, blockIdx.y, gridDim.x, threadIdx.x);
}

struct Pair {
	float sum;
	int positive;
};

/* returns a struct (an aligned .b8 func_retval0) and reads global memory */
__device__ __noinline__ Pair ni_scan4(const float *p)
{
	Pair r = {0.0f, 0};
	for (int k = 0; k < 4; k++) {
		r.sum += p[k];
		r.positive += p[k] > 0.0f;
	}
	return r;
}

// ooo-jit: kernel=ni_structret expect=fusible grid=4 block=128 smem=0 params=in:f32:2048;out:f32:512;out:i32:512
extern "C" __global__ void ni_structret(const float *x, float *s, int *c)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	Pair r = ni_scan4(x + 4 * i);
	s[i] = r.sum;
	c[i] = r.positive;
}

/* reads %ctaid.x inside a .func */
__device__ __noinline__ int ni_where(int x)
{
	return x + (int)blockIdx.x * 1000;
}

// ooo-jit: kernel=ni_ctaid_in_helper expect=reject reason=%ctaid
extern "C" __global__ void ni_ctaid_in_helper(int *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = ni_where(threadIdx.x);
}
