/* Thread block clusters: a fused grid has no clusters to give a member. */
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

/* .explicitcluster and .reqnctapercluster 2, 1, 1 */
// ooo-jit: kernel=rc_cluster_dims expect=reject reason=cluster
extern "C" __global__ void __cluster_dims__(2, 1, 1) rc_cluster_dims(float *a)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	a[i] = a[i] * 0.5f;
}

/* %cluster_ctarank and barrier.cluster, no cluster directive */
// ooo-jit: kernel=rc_cluster_sync expect=reject reason=cluster
extern "C" __global__ void rc_cluster_sync(float *a)
{
	cg::cluster_group c = cg::this_cluster();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	a[i] = (float)c.block_rank();
	c.sync();
}
