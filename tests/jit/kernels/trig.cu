/*
 * sinf, cosf, sin: the slow-path argument reduction brings in read-only
 * initialized .global tables (__cudart_i2opi_f, __cudart_i2opi_d, ...)
 * and a local-memory array. mathmisc.cu has the float table too.
 */

// ooo-jit: kernel=tr_sincos expect=fusible grid=8 block=128 smem=0 params=in:f32:1024;out:f32:1024;out:f32:1024;i32:1024
extern "C" __global__ void tr_sincos(const float *x, float *s, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float v = x[i];
		s[i] = sinf(3.0f * v);
		c[i] = cosf(v) * v;
	}
}

// ooo-jit: kernel=tr_sin_f64 expect=fusible grid=4 block=128 smem=0 params=in:f64:512;out:f64:512;i32:512
extern "C" __global__ void tr_sin_f64(const double *x, double *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = sin(x[i] * 2.5) + cos(x[i]);
}
