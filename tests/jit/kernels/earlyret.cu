/* Threads past n return early; the rest run a tail without __syncthreads. */

// ooo-jit: kernel=er_guard expect=fusible grid=8 block=128 smem=0 params=in:f32:1024;out:f32:1024;i32:1000
extern "C" __global__ void er_guard(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float v = x[i];
	y[i] = v * v - 1.0f;
}

// ooo-jit: kernel=er_two_exits expect=fusible grid=8 block=128 smem=0 params=in:i32:1024;out:i32:1024;i32:900
extern "C" __global__ void er_two_exits(const int *a, int *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	int v = a[i];
	if (v < 100) {
		b[i] = -v;
		return;
	}
	b[i] = v * 2 + (int)blockIdx.x;
}
