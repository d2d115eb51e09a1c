/*
 * A grid-wide barrier (cooperative launch). Plain -ptx compiles it: the
 * grid workspace address is read from %envreg1/%envreg2 by inline PTX.
 */
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// ooo-jit: kernel=rg_grid_sync expect=reject reason=grid
extern "C" __global__ void rg_grid_sync(float *a, int n)
{
	cg::grid_group g = cg::this_grid();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		a[i] += 1.0f;
	g.sync();
	if (i < n)
		a[i] = a[i] * 2.0f + a[(i + 1) % n];
}
