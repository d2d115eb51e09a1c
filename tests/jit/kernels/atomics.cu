/*
 * Integer atomics only: the results must be bit-reproducible whatever
 * order the threads run in, so every update here is commutative and no
 * kernel stores the value an atomic returned.
 */

/* 64-bin histogram, privatised in shared memory, then merged */
// ooo-jit: kernel=at_hist expect=fusible grid=16 block=128 smem=0 params=in:i32:2048;inout:u32:64;i32:2048
extern "C" __global__ void at_hist(const int *in, unsigned *hist, int n)
{
	__shared__ unsigned sh[64];
	for (unsigned j = threadIdx.x; j < 64; j += blockDim.x)
		sh[j] = 0;
	__syncthreads();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		atomicAdd(&sh[in[i] & 63], 1u);
	__syncthreads();
	for (unsigned j = threadIdx.x; j < 64; j += blockDim.x)
		if (sh[j])
			atomicAdd(&hist[j], sh[j]);
}

// ooo-jit: kernel=at_max_min expect=fusible grid=16 block=128 smem=0 params=in:i32:2048;inout:i32:8;inout:i32:8
extern "C" __global__ void at_max_min(const int *in, int *mx, int *mn)
{
	int v = in[blockIdx.x * blockDim.x + threadIdx.x] * 3 - 1500;
	atomicMax(&mx[blockIdx.x & 7], v);
	__threadfence();
	atomicMin(&mn[(blockIdx.x + threadIdx.x) & 7], v);
}

/* saturating add by an atomicCAS loop: min(x + v, cap) commutes for v >= 0 */
// ooo-jit: kernel=at_cas_satadd expect=fusible grid=8 block=128 smem=0 params=in:u32:1024;inout:u32:4;u32:200000
extern "C" __global__ void at_cas_satadd(const unsigned *in, unsigned *acc, unsigned cap)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned *p = &acc[i & 3];
	unsigned v = in[i];
	unsigned old = *p, assumed;
	do {
		assumed = old;
		unsigned nv = assumed + v;
		if (nv > cap)
			nv = cap;
		old = atomicCAS(p, assumed, nv);
	} while (old != assumed);
}

/* or, and, xor, min on unsigned, add and sub on int, add on 64-bit */
// ooo-jit: kernel=at_bits expect=fusible grid=8 block=128 smem=0 params=in:u32:1024;inout:u32:4;inout:i32:2;inout:u64:1
extern "C" __global__ void at_bits(const unsigned *in, unsigned *acc, int *s, unsigned long long *acc64)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned v = in[i];
	atomicOr(&acc[0], 1u << (v & 31));
	atomicAnd(&acc[1], ~(1u << (v % 29)));
	atomicXor(&acc[2], v * 2654435761u);
	atomicMin(&acc[3], v + 7u);
	atomicAdd(&s[0], (int)v - 500);
	atomicSub(&s[1], (int)(v & 15));
	atomicAdd(acc64, (unsigned long long)v << 24);
}
