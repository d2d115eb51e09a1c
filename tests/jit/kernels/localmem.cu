/* Per-thread arrays indexed at run time: they live in .local memory. */

// ooo-jit: kernel=lm_lookup32 expect=fusible grid=8 block=128 smem=0 params=idx:i32:1024:32;in:f32:1024;out:f32:1024
extern "C" __global__ void lm_lookup32(const int *idx, const float *x, float *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float buf[32];
	float v = x[i];
	for (int j = 0; j < 32; j++)
		buf[j] = v * j + (float)(j * j);
	int k = idx[i];
	out[i] = buf[k] + buf[(k * 7) & 31];
}

/* insertion sort of 8 values per thread */
// ooo-jit: kernel=lm_sort8 expect=fusible grid=4 block=128 smem=0 params=in:i32:4096;out:i32:4096
extern "C" __global__ void lm_sort8(const int *in, int *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int a[8];
	for (int k = 0; k < 8; k++)
		a[k] = in[8 * i + k];
	for (int k = 1; k < 8; k++) {
		int v = a[k], j = k - 1;
		while (j >= 0 && a[j] > v) {
			a[j + 1] = a[j];
			j--;
		}
		a[j + 1] = v;
	}
	for (int k = 0; k < 8; k++)
		out[8 * i + k] = a[k];
}
