/* Kernels over 2-D and 3-D grids and blocks. */

/* tiled transpose of an h x w matrix (w = 64, h = 32), 16x16 blocks */
// ooo-jit: kernel=g2_transpose expect=fusible grid=4,2 block=16,16 smem=0 params=in:f32:2048;out:f32:2048;i32:64;i32:32
extern "C" __global__ void g2_transpose(const float *in, float *out, int w, int h)
{
	__shared__ float tile[16][17];
	int x = blockIdx.x * 16 + threadIdx.x;
	int y = blockIdx.y * 16 + threadIdx.y;
	if (x < w && y < h)
		tile[threadIdx.y][threadIdx.x] = in[y * w + x];
	__syncthreads();
	x = blockIdx.y * 16 + threadIdx.x; /* a row of in */
	y = blockIdx.x * 16 + threadIdx.y; /* a column of in */
	if (x < h && y < w)
		out[y * h + x] = tile[threadIdx.x][threadIdx.y];
}

/* one block row per matrix row: the row width comes from gridDim.x */
// ooo-jit: kernel=g2_rowscale expect=fusible grid=2,8 block=128 smem=0 params=in:f32:2048;in:f32:8;out:f32:2048
extern "C" __global__ void g2_rowscale(const float *m, const float *s, float *o)
{
	unsigned col = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned row = blockIdx.y;
	unsigned w = gridDim.x * blockDim.x;
	unsigned idx = row * w + col;
	o[idx] = m[idx] * s[row] + (float)(gridDim.y - row);
}

/* 7-point stencil on a 16^3 volume, clamped at the borders */
// ooo-jit: kernel=g3_stencil expect=fusible grid=2,2,4 block=8,8,4 smem=0 params=in:f32:4096;out:f32:4096;i32:16;i32:16;i32:16
extern "C" __global__ void g3_stencil(const float *in, float *out, int nx, int ny, int nz)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	int z = blockIdx.z * blockDim.z + threadIdx.z;
	if (x >= nx || y >= ny || z >= nz)
		return;
	auto at = [&](int xx, int yy, int zz) {
		xx = min(max(xx, 0), nx - 1);
		yy = min(max(yy, 0), ny - 1);
		zz = min(max(zz, 0), nz - 1);
		return in[(zz * ny + yy) * nx + xx];
	};
	float c = at(x, y, z);
	float s = at(x - 1, y, z) + at(x + 1, y, z);
	s += at(x, y - 1, z) + at(x, y + 1, z);
	s += at(x, y, z - 1) + at(x, y, z + 1);
	out[(z * ny + y) * nx + x] = 0.4f * c + 0.1f * s;
}

/* every thread writes its linear index mixed with its block coordinates */
// ooo-jit: kernel=g3_lin_index expect=fusible grid=3,2,2 block=128 smem=0 params=out:u32:1536
extern "C" __global__ void g3_lin_index(unsigned *out)
{
	unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
	unsigned lin = b * blockDim.x + threadIdx.x;
	out[lin] = lin ^ (blockIdx.z << 20 | blockIdx.y << 10 | blockIdx.x);
}

/* records gridDim and blockIdx: checks the virtual %nctaid and %ctaid */
// ooo-jit: kernel=g3_dims expect=fusible grid=2,3,4 block=128 smem=0 params=out:i32:3072;out:u32:96
extern "C" __global__ void g3_dims(int *out, unsigned *info)
{
	unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
	unsigned lin = b * blockDim.x + threadIdx.x;
	out[lin] = gridDim.x * 10000 + gridDim.y * 100 + gridDim.z + (int)(blockDim.x * threadIdx.x);
	if (threadIdx.x == 0) {
		info[4 * b + 0] = blockIdx.x;
		info[4 * b + 1] = blockIdx.y;
		info[4 * b + 2] = blockIdx.z;
		info[4 * b + 3] = gridDim.x * gridDim.y * gridDim.z;
	}
}
