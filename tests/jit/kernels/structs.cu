/* Structs passed by value, read field by field (ld.param at offsets). */

struct Affine {
	float scale;
	float bias;
	int n;
	int pad;
};

/* {2.0f, 0.5f, 1000, 0} */
// ooo-jit: kernel=st_affine expect=fusible grid=8 block=128 smem=0 params=in:f32:1024;out:f32:1024;raw:000000400000003fe803000000000000
extern "C" __global__ void st_affine(const float *x, float *y, Affine a)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < a.n)
		y[i] = x[i] * a.scale + a.bias;
}

/* 8-byte aligned, with padding after tag and after n: 24 bytes */
struct Mixed {
	char tag;
	double k;
	int n;
};

/* {3, 0.25, 512} */
// ooo-jit: kernel=st_mixed expect=fusible grid=4 block=128 smem=0 params=in:f64:512;out:f64:512;raw:0300000000000000000000000000d03f0002000000000000
extern "C" __global__ void st_mixed(const double *x, double *y, Mixed m)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < m.n)
		y[i] = x[i] * m.k + m.tag;
}

/* a 16-byte aligned parameter: {1, 2, -1, 0.5} */
// ooo-jit: kernel=st_vec4 expect=fusible grid=4 block=128 smem=0 params=in:f32:2048;out:f32:2048;raw:0000803f00000040000080bf0000003f
extern "C" __global__ void st_vec4(const float4 *x, float4 *y, float4 m)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float4 v = x[i];
	y[i] = make_float4(v.x * m.x, v.y * m.y, v.z * m.z + v.x, v.w * m.w);
}

struct Coef8 {
	float c[8];
};

/* indexed dynamically: nvcc copies the parameter to local memory first */
/* {1, 2, 3, 4, 5, 6, 7, 8} */
// ooo-jit: kernel=st_dynidx expect=fusible grid=8 block=128 smem=0 params=idx:i32:1024:8;out:f32:1024;raw:0000803f0000004000004040000080400000a0400000c0400000e04000000041
extern "C" __global__ void st_dynidx(const int *idx, float *out, Coef8 p)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	out[i] = p.c[idx[i]] * 0.5f + p.c[7 - idx[i]];
}

struct Inner {
	unsigned short id;
	unsigned char flags;
	signed char delta;
};
struct Outer {
	Inner in;
	float w[3];
	long long base;
};

/* sub-word fields: {{7, 0x81, -3}, {0.5, -2, 1}, 100000}, 24 bytes */
// ooo-jit: kernel=st_nested expect=fusible grid=4 block=128 smem=0 params=in:i32:512;out:i64:512;raw:070081fd0000003f000000c00000803fa086010000000000
extern "C" __global__ void st_nested(const int *x, long long *y, Outer o)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int d = (o.in.flags & 1) ? o.in.delta : 0;
	float f = x[i] * o.w[0] + o.w[1] * (float)(i & 7) + o.w[2];
	y[i] = o.base + (long long)x[i] * o.in.id + d + (long long)f;
}
