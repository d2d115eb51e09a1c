// ooo-bench `spin`: a request is a chain of L launches of this kernel
// (B blocks x 128 threads), then one sync. Each thread runs `iters`
// dependent FMAs on a value it reads from and writes back to x, so the
// compiler cannot drop the loop and a launch's time grows with iters.
// (bench/fencecost.sh times it fenced and unfenced at ooo-bench's default launch:)
// ooo-jit: kernel=spin expect=fusible grid=2 block=128 smem=0 params=inout:f32:256;i32:2000
extern "C" __global__ void spin(float *x, int iters)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = x[i];

	for (int k = 0; k < iters; k++)
		v = fmaf(v, 0.999f, 0.001f);
	x[i] = v;
}
