/* Half and bfloat16 arithmetic (cuda_fp16.h, cuda_bf16.h). */
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// ooo-jit: kernel=hb_half_fma expect=fusible grid=8 block=128 smem=0 params=in:f16:1024;in:f16:1024;out:f16:1024;i32:1024
extern "C" __global__ void hb_half_fma(const __half *a, const __half *b, __half *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		__half p = __hfma(a[i], b[i], __float2half(0.25f));
		c[i] = __hmax(__hmul(p, a[i]), __hsub(b[i], p));
	}
}

/* half2 pairs: 1024 half2 = 2048 halves */
// ooo-jit: kernel=hb_half2_axpy expect=fusible grid=8 block=128 smem=0 params=in:f16:2048;inout:f16:2048;f32:0.75;i32:1024
extern "C" __global__ void hb_half2_axpy(const __half2 *x, __half2 *y, float a, int n2)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n2)
		y[i] = __hfma2(__float2half2_rn(a), x[i], y[i]);
}

// ooo-jit: kernel=hb_bf16_mix expect=fusible grid=8 block=128 smem=0 params=in:bf16:1024;in:bf16:1024;out:bf16:1024;out:f32:1024;i32:1024
extern "C" __global__ void hb_bf16_mix(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *c, float *d, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		__nv_bfloat16 x = a[i], y = b[i];
		c[i] = __hfma(x, y, x);
		d[i] = __bfloat162float(x) * 2.0f + __bfloat162float(__hmul(y, y));
	}
}
