/* C++ kernels: templates instantiated explicitly, a namespace, mangled names. */

template <typename T>
__global__ void tp_axpy(const T *x, T *y, T a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

// ooo-jit: kernel=_Z7tp_axpyIfEvPKT_PS0_S0_i expect=fusible grid=8 block=128 smem=0 params=in:f32:1024;inout:f32:1024;f32:0.5;i32:1024
template __global__ void tp_axpy<float>(const float *, float *, float, int);
// ooo-jit: kernel=_Z7tp_axpyIdEvPKT_PS0_S0_i expect=fusible grid=4 block=128 smem=0 params=in:f64:512;inout:f64:512;f64:-3;i32:512
template __global__ void tp_axpy<double>(const double *, double *, double, int);
// ooo-jit: kernel=_Z7tp_axpyIiEvPKT_PS0_S0_i expect=fusible grid=8 block=128 smem=0 params=in:i32:1024;inout:i32:1024;i32:7;i32:1000
template __global__ void tp_axpy<int>(const int *, int *, int, int);

template <int B>
__global__ void tp_blocksum(const float *in, float *out)
{
	__shared__ float s[B];
	unsigned t = threadIdx.x;
	s[t] = in[blockIdx.x * B + t];
	__syncthreads();
#pragma unroll
	for (int k = B / 2; k > 0; k >>= 1) {
		if (t < (unsigned)k)
			s[t] += s[t + k];
		__syncthreads();
	}
	if (t == 0)
		out[blockIdx.x] = s[0];
}

// ooo-jit: kernel=_Z11tp_blocksumILi128EEvPKfPf expect=fusible grid=16 block=128 smem=0 params=in:f32:2048;out:f32:16
template __global__ void tp_blocksum<128>(const float *, float *);

/* the same mangled name as noinline.cu's mix, another body */
__device__ __noinline__ int mix(int a, int b)
{
	return a * 5 - b;
}

namespace ooo_test {
struct Scale {
	int mul;
	int add;
};

/* {3, -11} */
// ooo-jit: kernel=_ZN8ooo_test8tp_mixedEPKiPiNS_5ScaleE expect=fusible grid=8 block=128 smem=0 params=in:i32:1024;out:i32:1024;raw:03000000f5ffffff
__global__ void tp_mixed(const int *x, int *y, Scale s)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	y[i] = mix(x[i] * s.mul, i) + s.add;
}
} // namespace ooo_test
