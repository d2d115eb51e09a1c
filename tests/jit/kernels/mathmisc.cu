/* Library math: tanf (the same __cudart_i2opi_f table as trig.cu), exp, log, pow, erf, rsqrt. */

// ooo-jit: kernel=mm_tan_exp expect=fusible grid=8 block=128 smem=0 params=in:f32:1024;out:f32:1024;i32:1024
extern "C" __global__ void mm_tan_exp(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float v = x[i];
	float r = tanf(v) + expf(v) + logf(1.5f + v) + rsqrtf(2.0f + v);
	r += __fdividef(v, 3.0f + v) + erff(v) + powf(1.5f + v, 1.3f);
	y[i] = r;
}

// ooo-jit: kernel=mm_f64 expect=fusible grid=4 block=128 smem=0 params=in:f64:512;out:f64:512;i32:512
extern "C" __global__ void mm_f64(const double *x, double *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		double v = x[i];
		y[i] = exp(v) + log1p(v + 1.0) + cbrt(v) + rsqrt(3.0 + v) + v / (2.0 - v);
	}
}
