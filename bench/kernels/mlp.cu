// ooo-bench `mlp`: one fully connected layer of a batch-1 MLP,
// y = act(W x + b), W rows x cols in row-major order. One warp per output
// row: the lanes stride over the row (float4 loads when cols is a multiple
// of 4 and W, x are 16-byte aligned, as the bench lays them out), then
// reduce with shuffles. relu != 0 applies ReLU.
// (bench/fencecost.sh times it fenced and unfenced at ooo-bench's default layer, 1024 x 1024:)
// ooo-jit: kernel=gemv_bias_act expect=fusible grid=128 block=256 smem=0 params=in:f32:1048576;in:f32:1024;in:f32:1024;out:f32:1024;i32:1024;i32:1024;i32:1
extern "C" __global__ void gemv_bias_act(const float *__restrict__ W, const float *__restrict__ x,
					 const float *__restrict__ b, float *__restrict__ y, int rows, int cols,
					 int relu)
{
	int row = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
	int lane = (int)(threadIdx.x & 31);
	float s = 0.0f;

	if (row >= rows) // the same for the whole warp
		return;
	const float *w = W + (size_t)row * (size_t)cols;
	if ((cols & 3) == 0) {
		const float4 *w4 = reinterpret_cast<const float4 *>(w);
		const float4 *x4 = reinterpret_cast<const float4 *>(x);

		for (int j = lane; j < cols / 4; j += 32) {
			float4 a = w4[j], v = x4[j];

			s = fmaf(a.x, v.x, s);
			s = fmaf(a.y, v.y, s);
			s = fmaf(a.z, v.z, s);
			s = fmaf(a.w, v.w, s);
		}
	} else {
		for (int j = lane; j < cols; j += 32)
			s = fmaf(w[j], x[j], s);
	}
	for (int o = 16; o; o >>= 1)
		s += __shfl_down_sync(0xffffffffu, s, o);
	if (lane == 0) {
		s += b[row];
		y[row] = relu && s < 0.0f ? 0.0f : s;
	}
}
