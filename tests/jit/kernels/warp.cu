/* Warp-level primitives: shuffles, votes, match, __syncwarp. */

#define FULL 0xffffffffu

/* warp sums with __shfl_down_sync, then one warp sums the warp sums */
// ooo-jit: kernel=wp_shfl_down_sum expect=fusible grid=16 block=128 smem=0 params=in:f32:2048;out:f32:16
extern "C" __global__ void wp_shfl_down_sum(const float *in, float *out)
{
	__shared__ float wsum[32];
	unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	float v = in[blockIdx.x * blockDim.x + threadIdx.x];
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(FULL, v, o);
	if (lane == 0)
		wsum[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = lane < blockDim.x / 32 ? wsum[lane] : 0.0f;
		for (int o = 16; o > 0; o >>= 1)
			v += __shfl_down_sync(FULL, v, o);
		if (lane == 0)
			out[blockIdx.x] = v;
	}
}

/* same name as reduce_static.cu's, another type and size */
__shared__ int scratch[32];

/* butterfly all-reduce with __shfl_xor_sync, plus __shfl_sync/__shfl_up_sync */
// ooo-jit: kernel=wp_xor_allreduce expect=fusible grid=8 block=128 smem=0 params=in:i32:1024;out:i32:1024
extern "C" __global__ void wp_xor_allreduce(const int *in, int *out)
{
	unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	int v = in[i];
	int s = v;
	for (int m = 1; m < 32; m <<= 1)
		s += __shfl_xor_sync(FULL, s, m);
	int first = __shfl_sync(FULL, v, 0);
	int prev = __shfl_up_sync(FULL, v, 1);
	if (lane == 0)
		scratch[warp] = s;
	__syncthreads();
	out[i] = s + first - prev + scratch[(warp + 1) % nwarps];
}

/* __ballot_sync and __popc: two words per warp */
// ooo-jit: kernel=wp_ballot expect=fusible grid=8 block=128 smem=0 params=in:f32:1024;out:u32:64
extern "C" __global__ void wp_ballot(const float *in, unsigned *out)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned b = __ballot_sync(FULL, in[i] > 0.0f);
	if ((threadIdx.x & 31) == 0) {
		out[2 * (i >> 5)] = b;
		out[2 * (i >> 5) + 1] = __popc(b);
	}
}

/* __any_sync, __all_sync, __match_any_sync, __syncwarp */
// ooo-jit: kernel=wp_vote expect=fusible grid=8 block=128 smem=0 params=in:i32:1024;out:i32:1024
extern "C" __global__ void wp_vote(const int *in, int *out)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	int v = in[i];
	int any = __any_sync(FULL, v > 990);
	int all = __all_sync(FULL, v >= 5);
	unsigned peers = __match_any_sync(FULL, v & 7);
	__syncwarp();
	out[i] = any + 2 * all + 4 * __popc(peers);
}

/* block inclusive scan: __shfl_up_sync in warps, warp totals in dynamic smem */
extern __shared__ int sdata[];

// ooo-jit: kernel=wp_scan_dyn expect=fusible grid=8 block=128 smem=16 params=in:i32:1024;out:i32:1024
extern "C" __global__ void wp_scan_dyn(const int *in, int *out)
{
	unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	int v = in[i];
	for (int o = 1; o < 32; o <<= 1) {
		int u = __shfl_up_sync(FULL, v, o);
		if (lane >= (unsigned)o)
			v += u;
	}
	if (lane == 31)
		sdata[warp] = v;
	__syncthreads();
	int base = 0;
	for (unsigned w = 0; w < warp; w++)
		base += sdata[w];
	out[i] = v + base;
}
