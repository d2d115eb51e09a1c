/*
 * Mutable module globals: every launch of a kernel shares them, so a
 * fused kernel (its own module) would give the kernel another copy.
 */

__device__ int rm_counter;

// ooo-jit: kernel=rm_count_calls expect=reject reason=mutable
extern "C" __global__ void rm_count_calls(int *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	atomicAdd(&rm_counter, 1);
	out[i] = rm_counter;
}

__device__ int rm_seed = 42;

/* initialized, but written by the kernel */
// ooo-jit: kernel=rm_bump_seed expect=reject reason=written
extern "C" __global__ void rm_bump_seed(int *out)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		rm_seed = rm_seed * 3 + 1;
	out[threadIdx.x] = threadIdx.x;
}
