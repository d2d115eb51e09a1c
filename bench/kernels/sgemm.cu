// ooo-bench `gemm`: C = A B in fp32, row-major, A M x K, B K x N, C M x N.
// A classic shared-memory tiled SGEMM: each block of 256 threads computes a
// 64 x 64 tile of C, stepping through K 16 at a time; each thread keeps a
// 4 x 4 block of C in registers, its rows ty + 16 i and columns tx + 16 j, so
// that a warp's loads from Bs and its stores to C are consecutive. Bounds
// are checked, so any M, N, K work; launch with grid (ceil(N/64),
// ceil(M/64)) and block 256.
// (bench/fencecost.sh times it fenced and unfenced at ooo-bench's default, M=256 N=128 K=1152:)
// ooo-jit: kernel=sgemm expect=fusible grid=2,4 block=256 smem=0 params=in:f32:294912;in:f32:147456;out:f32:32768;i32:256;i32:128;i32:1152
#define BM 64
#define BN 64
#define BK 16

extern "C" __global__ void __launch_bounds__(256)
	sgemm(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M, int N, int K)
{
	__shared__ float As[BK][BM + 4]; // A's tile transposed: As[k][m]
	__shared__ float Bs[BK][BN];
	const int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16;
	const int m0 = (int)blockIdx.y * BM, n0 = (int)blockIdx.x * BN;
	float acc[4][4] = { { 0.0f } };

	for (int k0 = 0; k0 < K; k0 += BK) {
		for (int r = 0; r < 4; r++) {
			int e = tid + 256 * r;
			int am = e / BK, ak = e % BK; // A: 64 rows of 16
			int bk = e / BN, bn = e % BN; // B: 16 rows of 64
			int gm = m0 + am, gk = k0 + ak, hk = k0 + bk, gn = n0 + bn;

			As[ak][am] = gm < M && gk < K ? A[(size_t)gm * K + gk] : 0.0f;
			Bs[bk][bn] = hk < K && gn < N ? B[(size_t)hk * N + gn] : 0.0f;
		}
		__syncthreads();
#pragma unroll
		for (int kk = 0; kk < BK; kk++) {
			float a[4], b[4];

#pragma unroll
			for (int i = 0; i < 4; i++)
				a[i] = As[kk][ty + 16 * i];
#pragma unroll
			for (int j = 0; j < 4; j++)
				b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 4; j++)
					acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
		}
		__syncthreads();
	}
#pragma unroll
	for (int i = 0; i < 4; i++) {
		int m = m0 + ty + 16 * i;

#pragma unroll
		for (int j = 0; j < 4; j++) {
			int n = n0 + tx + 16 * j;

			if (m < M && n < N)
				C[(size_t)m * N + n] = acc[i][j];
		}
	}
}
