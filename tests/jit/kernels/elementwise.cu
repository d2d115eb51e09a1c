/*
 * Elementwise kernels over float, int, double, unsigned and vector types,
 * one thread per element, with a bounds guard.
 */

// ooo-jit: kernel=ew_saxpy_f32 expect=fusible grid=16 block=128 smem=0 params=in:f32:2048;inout:f32:2048;f32:1.5;i32:2048
extern "C" __global__ void ew_saxpy_f32(const float *x, float *y, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = fmaf(a, x[i], y[i]);
}

/* n < grid * block: the last 24 elements of c stay as they were */
// ooo-jit: kernel=ew_iadd_i32 expect=fusible grid=8 block=128 smem=0 params=in:i32:1024;in:i32:1024;out:i32:1024;i32:1000
extern "C" __global__ void ew_iadd_i32(const int *a, const int *b, int *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		int x = a[i], y = b[i];
		c[i] = (x + 3 * y - (x >> 2)) ^ (y << 1);
	}
}

// ooo-jit: kernel=ew_dmul_f64 expect=fusible grid=4 block=128 smem=0 params=in:f64:512;in:f64:512;out:f64:512;i32:512
extern "C" __global__ void ew_dmul_f64(const double *a, const double *b, double *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		double x = a[i], y = b[i];
		c[i] = x * y + sqrt(fabs(x)) - y / (1.0 + fabs(x));
	}
}

/* bit intrinsics: popc, brev, clz, prmt, shf, mul.hi */
// ooo-jit: kernel=ew_u32_bits expect=fusible grid=4 block=128 smem=0 params=in:u32:512;out:u32:1024;u32:512
extern "C" __global__ void ew_u32_bits(const unsigned *a, unsigned *b, unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	unsigned v = a[i];
	unsigned h = v * 2654435761u;
	b[2 * i] = __popc(h) + (__brev(h) >> 7) + __clz(v | 1u);
	b[2 * i + 1] = __byte_perm(h, v, 0x7140) ^ __funnelshift_l(h, v, 5) ^ __umulhi(h, v + 17u);
}

/* integer division and remainder, 32- and 64-bit */
// ooo-jit: kernel=ew_idiv expect=fusible grid=2 block=128 smem=0 params=in:i32:256;in:i32:256;out:i32:256;out:i32:256;out:i64:256;i32:256
extern "C" __global__ void ew_idiv(const int *a, const int *b, int *q, int *r, long long *w, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		int d = b[i] + 1;
		q[i] = a[i] / d;
		r[i] = a[i] % d;
		w[i] = ((long long)a[i] * 1000003LL + 12345LL) / (long long)(b[i] + 7);
	}
}

/* float4 loads through the read-only path and streaming stores */
// ooo-jit: kernel=ew_vec4_ldg expect=fusible grid=4 block=128 smem=0 params=in:f32:2048;out:f32:2048;i32:512
extern "C" __global__ void ew_vec4_ldg(const float4 *__restrict__ x, float4 *__restrict__ y, int n4)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n4) {
		float4 v = __ldg(&x[i]);
		float4 o = make_float4(v.x * 2.0f, v.y - v.x, v.z * v.w, v.w + 1.0f);
		__stcs(&y[i], o);
	}
}

/* inline PTX with its own scope, a local .reg and a carry chain */
// ooo-jit: kernel=ew_inline_asm expect=fusible grid=8 block=128 smem=0 params=in:u32:1024;in:u32:1024;out:u32:2048;i32:1024
extern "C" __global__ void ew_inline_asm(const unsigned *a, const unsigned *b, unsigned *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	unsigned lo, hi;
	asm("{\n\t"
	    ".reg .u32 t;\n\t"
	    "mul.lo.u32 t, %2, -1640531535;\n\t"
	    "add.cc.u32 %0, t, %3;\n\t"
	    "addc.u32 %1, 0, 0;\n\t"
	    "}"
	    : "=r"(lo), "=r"(hi)
	    : "r"(a[i]), "r"(b[i]));
	out[2 * i] = lo;
	out[2 * i + 1] = hi;
}
