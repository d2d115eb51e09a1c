/* 24 parameters of mixed sizes: pointers, 32/64-bit scalars, char, short, bool. */

// ooo-jit: kernel=mp_sum24 expect=fusible grid=8 block=128 smem=0 params=in:f32:1024;in:f32:1024;in:f32:1024;in:f32:1024;in:f32:1024;in:f32:1024;in:f32:1024;in:f32:1024;out:f32:1024;i32:1024;f32:1;f32:-1;f32:0.5;f32:-0.5;f32:0.25;f32:-0.25;f32:2;f32:-2;f64:0.125;i64:-4096;u32:255;raw:05;raw:fdff;raw:01
extern "C" __global__ void mp_sum24(const float *a0, const float *a1, const float *a2, const float *a3,
				    const float *a4, const float *a5, const float *a6, const float *a7,
				    float *out, int n,
				    float w0, float w1, float w2, float w3, float w4, float w5, float w6, float w7,
				    double dscale, long long offset, unsigned mask, char c, short s, bool flag)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float acc = w0 * a0[i];
	acc += w1 * a1[i];
	acc += w2 * a2[i];
	acc += w3 * a3[i];
	acc += w4 * a4[i];
	acc += w5 * a5[i];
	acc += w6 * a6[i];
	acc += w7 * a7[i];
	double r = acc * dscale + (double)(offset + (long long)((unsigned)i & mask));
	out[i] = (float)r + c + s + (flag ? 1.0f : 0.0f);
}
