/* __launch_bounds__ and __maxnreg__: .maxntid, .minnctapersm, .maxnreg */

// ooo-jit: kernel=lb_128x4 expect=fusible grid=16 block=128 smem=0 params=in:f32:2048;out:f32:2048
extern "C" __global__ void __launch_bounds__(128, 4) lb_128x4(const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = x[i];
	y[i] = v * v * v - 0.5f * v;
}

// ooo-jit: kernel=lb_256 expect=fusible grid=8 block=256 smem=0 params=in:i32:2048;out:i32:2048
extern "C" __global__ void __launch_bounds__(256) lb_256(const int *x, int *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	y[i] = x[i] * x[i] - (x[i] >> 1);
}

// ooo-jit: kernel=lb_maxnreg expect=fusible grid=8 block=128 smem=0 params=in:f32:1024;in:f32:1024;out:f32:1024
extern "C" __global__ void __maxnreg__(40) lb_maxnreg(const float *x, const float *w, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float acc = 0.0f;
#pragma unroll
	for (int k = 0; k < 8; k++)
		acc = fmaf(x[(i + k) & 1023], w[(i * 3 + k) & 1023], acc);
	y[i] = acc;
}
