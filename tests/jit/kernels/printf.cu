/*
 * printf and assert that never fire for inputs in [-1, 1): the module
 * declares .extern .func vprintf and __assertfail and has $str strings.
 */
#include <cassert>
#include <cstdio>

// ooo-jit: kernel=pf_guarded expect=fusible grid=8 block=128 smem=0 params=in:f32:1024;out:f32:1024;i32:1024
extern "C" __global__ void pf_guarded(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float v = x[i];
	if (v > 2.0f)
		printf("pf_guarded: x[%d] = %f out of range\n", i, v);
	assert(v < 4.0f);
	y[i] = v + 1.0f;
}
