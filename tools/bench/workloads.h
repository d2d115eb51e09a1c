/* SPDX-License-Identifier: MIT */
/*
 * ooo-bench's GPU workloads (workloads.c: spin, mlp, gemm, custom), written
 * once against the backend of backend.h (gpu.c); a tenant process (tenant.c) runs one.
 */
#ifndef OOO_BENCH_WORKLOADS_H
#define OOO_BENCH_WORKLOADS_H

#include "backend.h"

#define MLP_INPUTS 4 /* inputs cycled through, each with its CPU reference */

struct tstate {
	const struct tenant_cfg *c;
	struct gpu g;
	struct gpu_kernel k;
	uint64_t pb[8][GPU_PARAM_MAX / 8]; /* parameter blocks, 8-byte aligned */
	uint32_t grid[3], block[3], shmem, launches;
	/* mlp */
	uint32_t layers, dim;
	uint64_t in_d, out_d;
	float *h_in, *h_out; /* MLP_INPUTS inputs; one output */
	float *ref;          /* MLP_INPUTS reference outputs */
	/* gemm */
	uint64_t c_d;
	float *h_c, *ref_c, *tol_c;
	char why[BENCH_ERR_MAX];
};

int wl_setup(struct tstate *t);
/* One request, waited for. 0 or a negative error (why in t->g.why). */
int wl_request(struct tstate *t, uint64_t seq);
bool wl_has_check(const struct tstate *t);
/* Is request seq's output checked? One in every check_every, chosen so that the checked ones cover every input. */
bool wl_checked(const struct tstate *t, uint64_t seq);
/*
 * Before a checked request, outside its timing: poison its output (NaN) and
 * wait for that, so that a request that does not write it fails the check.
 */
int wl_prepare_check(struct tstate *t);
/* Check request seq's output: 0 right, 1 wrong (why in t->why), negative: the check failed to run. */
int wl_check(struct tstate *t, uint64_t seq);
void wl_teardown(struct tstate *t);

#endif
