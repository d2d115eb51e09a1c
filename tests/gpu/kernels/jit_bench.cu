// The kernel of `jit_check LIBCUDA bench`: 2 blocks of 128 threads, each
// thread a chain of 2000 dependent FMAs (a few microseconds, like the spin
// kernel of the round-trip benchmark), then one store. It reads its input
// and writes its output only, so repeated launches leave the same bytes.
//
// ooo-jit: kernel=jit_spin expect=fusible grid=2 block=128 smem=0 params=out:f32:256;in:f32:256;i32:2000
extern "C" __global__ void jit_spin(float *out, const float *in, int iters)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = in[i];
	float a = 0.999f + 1e-4f * v, b = 1e-3f * v;

	for (int k = 0; k < iters; k++)
		v = fmaf(v, a, b);
	out[i] = v;
}
