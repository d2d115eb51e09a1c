/*
 * The address of a kernel parameter. Without __grid_constant__ nvcc copies
 * a parameter whose address is taken to local memory (see st_dynidx in
 * structs.cu, fusible); with it the PTX takes the address of the .param
 * symbol itself (mov.b64 %rd, NAME_param_N, then cvta.param or ld.param
 * through a register).
 */

struct Coef8 {
	float c[8];
};

__device__ __noinline__ float ra_pick(const Coef8 *p, int j)
{
	return p->c[j];
}

/* passes &p to a .func */
// ooo-jit: kernel=ra_param_to_func expect=reject reason=address of
extern "C" __global__ void ra_param_to_func(float *out, const int *idx, const __grid_constant__ Coef8 p)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = ra_pick(&p, idx[i] & 7);
}

/* indexes the parameter space through a register */
// ooo-jit: kernel=ra_param_index expect=reject reason=address of
extern "C" __global__ void ra_param_index(float *out, const int *idx, const __grid_constant__ Coef8 p)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = p.c[idx[i] & 7];
}
