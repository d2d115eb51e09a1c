// Kernels for tests/gpu: compiled on the GPU machine by nvcc (PTX, cubin)
// and, as source, by the executor's NVRTC.
extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

// a 2-block, 128-thread kernel of a few microseconds' work: the round-trip benchmark
extern "C" __global__ void tiny(float *x, int iters)
{
	float v = x[threadIdx.x];
	for (int i = 0; i < iters; i++)
		v = v * 0.999f + 0.001f;
	x[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// writes through whatever pointer it is given: the fault test hands it a bad one
extern "C" __global__ void poke(int *p)
{
	*p = 42;
}
