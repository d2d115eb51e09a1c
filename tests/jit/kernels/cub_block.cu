/*
 * cub block primitives and <cuda/std/...>: the headers leave many
 * unreferenced 1-byte .global objects in the module (customization-point
 * objects of cuda::std, thrust's seq) that no kernel touches.
 */
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/std/array>
#include <cuda/std/limits>

// ooo-jit: kernel=cb_reduce_f32 expect=fusible grid=16 block=128 smem=0 params=in:f32:2048;out:f32:16
extern "C" __global__ void cb_reduce_f32(const float *in, float *out)
{
	using Reduce = cub::BlockReduce<float, 128>;
	__shared__ typename Reduce::TempStorage tmp;
	float s = Reduce(tmp).Sum(in[blockIdx.x * 128 + threadIdx.x]);
	if (threadIdx.x == 0)
		out[blockIdx.x] = s;
}

// ooo-jit: kernel=cb_scan_i32 expect=fusible grid=8 block=128 smem=0 params=in:i32:1024;out:i32:1024
extern "C" __global__ void cb_scan_i32(const int *in, int *out)
{
	using Scan = cub::BlockScan<int, 128>;
	__shared__ typename Scan::TempStorage tmp;
	unsigned i = blockIdx.x * 128 + threadIdx.x;
	int v;
	Scan(tmp).ExclusiveSum(in[i], v);
	out[i] = v;
}

/* four values per thread in a cuda::std::array, block minimum through cub */
// ooo-jit: kernel=cb_array_min expect=fusible grid=4 block=128 smem=0 params=in:i32:2048;out:i32:4
extern "C" __global__ void cb_array_min(const int *in, int *out)
{
	using Reduce = cub::BlockReduce<int, 128>;
	__shared__ typename Reduce::TempStorage tmp;
	cuda::std::array<int, 4> v;
	int m = cuda::std::numeric_limits<int>::max();
	for (int k = 0; k < 4; k++) {
		v[k] = in[(blockIdx.x * 128 + threadIdx.x) * 4 + k];
		m = v[k] < m ? v[k] : m;
	}
	int r = Reduce(tmp).Reduce(m, [](int a, int b) { return a < b ? a : b; });
	if (threadIdx.x == 0)
		out[blockIdx.x] = r;
}
