/* SPDX-License-Identifier: MIT */
/*
 * The requests of ooo-bench's GPU workloads, written once against the
 * backend of gpu.c. The kernels are the .cu files of bench/kernels/, compiled to PTX by
 * nvcc at build time and embedded (tools/embed.sh) as bench_ptx_*.
 *   spin    L launches of spin (B blocks x 128 threads, I FMA iterations), then a sync
 *   mlp     input to the device, `layers` GEMV + bias (+ ReLU but for the last
 *           layer) of dim x dim fp32 weights, output back to the host
 *   gemm    one SGEMM C = A B (M x K by K x N), then a sync
 *   custom  L launches of a user's kernel, then a sync
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"

extern const char bench_ptx_spin[];
extern const char bench_ptx_mlp[];
extern const char bench_ptx_sgemm[];

bool bench_have_kernels(void)
{
	return bench_ptx_spin[0] && bench_ptx_mlp[0] && bench_ptx_sgemm[0];
}

__attribute__((format(printf, 2, 3))) static int tfail(struct tstate *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->g.why, sizeof(t->g.why), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int builtin(struct tstate *t, const char *ptx, const char *name)
{
	if (!ptx[0])
		return tfail(t, "this ooo-bench was built without nvcc, so it has no GPU kernels: rebuild with "
				"CUDA_HOME pointing at a CUDA toolkit");
	return gpu_kernel(&t->g, ptx, strlen(ptx), name, &t->k);
}

static float rand_sym(uint64_t *st, float a)
{
	return (float)((bench_rand_unit(st) * 2.0 - 1.0) * a);
}

/* ---- spin ------------------------------------------------------------------------ */

static int spin_setup(struct tstate *t)
{
	const struct wl_params *p = &t->c->p;
	size_t n = (size_t)p->blocks * 128;
	float *init;
	uint64_t x;
	int r;

	if ((r = builtin(t, bench_ptx_spin, "spin")))
		return r;
	if ((r = gpu_arena(&t->g, n * sizeof(float))))
		return r;
	if (!(x = gpu_sub(&t->g, n * sizeof(float))))
		return -ENOMEM;
	init = malloc(n * sizeof(float));
	if (!init)
		return tfail(t, "out of memory");
	for (size_t i = 0; i < n; i++)
		init[i] = 1.0f;
	r = gpu_htod(&t->g, x, init, n * sizeof(float));
	if (!r)
		r = gpu_sync(&t->g);
	free(init);
	if (r)
		return r;
	{
		struct karg a[] = { karg_u64(x), karg_i32((int32_t)p->iters) };

		if ((r = gpu_pack(&t->g, &t->k, a, 2, t->pb[0], sizeof(t->pb[0]))))
			return r;
	}
	t->grid[0] = p->blocks;
	t->grid[1] = t->grid[2] = 1;
	t->block[0] = 128;
	t->block[1] = t->block[2] = 1;
	t->launches = p->kernels;
	return 0;
}

static int chain_request(struct tstate *t)
{
	int r;

	for (uint32_t i = 0; i < t->launches; i++)
		if ((r = gpu_launch(&t->g, &t->k, t->grid, t->block, t->shmem, t->pb[0])))
			return r;
	return gpu_sync(&t->g);
}

/* ---- mlp ------------------------------------------------------------------------- */

static int mlp_setup(struct tstate *t)
{
	const struct wl_params *p = &t->c->p;
	const uint32_t n = p->mlp_layers, d = p->mlp_dim;
	const size_t wbytes = (size_t)d * d * sizeof(float), vbytes = (size_t)d * sizeof(float);
	uint64_t w[8], b[8], act[2], st = t->c->seed ^ 0x6d6c70ull;
	float *hw = NULL, *hb = NULL;
	double *x = NULL, *y = NULL;
	int r;

	if (n < 1 || n > 8)
		return tfail(t, "mlp: 1 to 8 layers, not %u", n);
	t->layers = n;
	t->dim = d;
	if ((r = builtin(t, bench_ptx_mlp, "gemv_bias_act")))
		return r;
	if ((r = gpu_arena(&t->g, n * (wbytes + vbytes + 512) + 4 * (vbytes + 256))))
		return r;
	t->h_in = gpu_host(&t->g, MLP_INPUTS * vbytes);
	t->h_out = gpu_host(&t->g, vbytes);
	t->ref = calloc((size_t)MLP_INPUTS * d, sizeof(float));
	hw = malloc((size_t)n * wbytes);
	hb = malloc((size_t)n * vbytes);
	x = calloc(d, sizeof(double));
	y = calloc(d, sizeof(double));
	if (!t->h_in || !t->h_out) {
		r = -ENOMEM;
		goto out;
	}
	if (!t->ref || !hw || !hb || !x || !y) {
		r = tfail(t, "mlp: out of memory");
		goto out;
	}
	/* weights uniform with variance 2/dim (He), so ReLU layers keep the scale */
	for (size_t i = 0; i < (size_t)n * d * d; i++)
		hw[i] = rand_sym(&st, sqrtf(6.0f / (float)d));
	for (size_t i = 0; i < (size_t)n * d; i++)
		hb[i] = rand_sym(&st, 0.1f);
	for (size_t i = 0; i < (size_t)MLP_INPUTS * d; i++)
		t->h_in[i] = rand_sym(&st, 1.0f);
	for (uint32_t l = 0; l < n; l++) {
		if (!(w[l] = gpu_sub(&t->g, wbytes)) || !(b[l] = gpu_sub(&t->g, vbytes))) {
			r = -ENOMEM;
			goto out;
		}
		if ((r = gpu_htod(&t->g, w[l], hw + (size_t)l * d * d, wbytes)) ||
		    (r = gpu_htod(&t->g, b[l], hb + (size_t)l * d, vbytes)))
			goto out;
	}
	if (!(act[0] = gpu_sub(&t->g, vbytes)) || !(act[1] = gpu_sub(&t->g, vbytes)) ||
	    !(t->in_d = gpu_sub(&t->g, vbytes)) || !(t->out_d = gpu_sub(&t->g, vbytes))) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = gpu_sync(&t->g)))
		goto out;
	for (uint32_t l = 0; l < n; l++) {
		uint64_t in = l == 0 ? t->in_d : act[(l - 1) % 2], outp = l == n - 1 ? t->out_d : act[l % 2];
		struct karg a[] = { karg_u64(w[l]),	    karg_u64(in),	  karg_u64(b[l]),
				    karg_u64(outp),	    karg_i32((int32_t)d), karg_i32((int32_t)d),
				    karg_i32(l < n - 1) };

		if ((r = gpu_pack(&t->g, &t->k, a, 7, t->pb[l], sizeof(t->pb[l]))))
			goto out;
	}
	/* the CPU reference of each input, in double */
	for (unsigned k = 0; k < MLP_INPUTS; k++) {
		for (uint32_t j = 0; j < d; j++)
			x[j] = t->h_in[(size_t)k * d + j];
		for (uint32_t l = 0; l < n; l++) {
			const float *wl = hw + (size_t)l * d * d;

			for (uint32_t i = 0; i < d; i++) {
				double s = hb[(size_t)l * d + i];

				for (uint32_t j = 0; j < d; j++)
					s += (double)wl[(size_t)i * d + j] * x[j];
				y[i] = l < n - 1 && s < 0 ? 0 : s;
			}
			memcpy(x, y, d * sizeof(double));
		}
		for (uint32_t i = 0; i < d; i++)
			t->ref[(size_t)k * d + i] = (float)x[i];
	}
	t->grid[0] = (d * 32 + 255) / 256;
	t->grid[1] = t->grid[2] = 1;
	t->block[0] = 256;
	t->block[1] = t->block[2] = 1;
	r = 0;
out:
	free(hw);
	free(hb);
	free(x);
	free(y);
	return r;
}

static int mlp_request(struct tstate *t, uint64_t seq)
{
	const size_t vbytes = (size_t)t->dim * sizeof(float);
	unsigned k = (unsigned)(seq % MLP_INPUTS);
	int r;

	if ((r = gpu_htod(&t->g, t->in_d, t->h_in + (size_t)k * t->dim, vbytes)))
		return r;
	for (uint32_t l = 0; l < t->layers; l++)
		if ((r = gpu_launch(&t->g, &t->k, t->grid, t->block, 0, t->pb[l])))
			return r;
	return gpu_dtoh(&t->g, t->h_out, t->out_d, vbytes);
}

static int mlp_check(struct tstate *t, uint64_t seq)
{
	const float *ref = t->ref + (size_t)(seq % MLP_INPUTS) * t->dim;
	double top = 0;

	for (uint32_t i = 0; i < t->dim; i++)
		top = fmax(top, fabs((double)ref[i]));
	for (uint32_t i = 0; i < t->dim; i++) {
		double diff = fabs((double)t->h_out[i] - (double)ref[i]);

		if (!(diff <= 1e-3 * top + 1e-5)) {
			snprintf(t->why, sizeof(t->why),
				 "mlp: request %llu: output[%u] = %.7g, the CPU reference says %.7g",
				 (unsigned long long)seq, i, (double)t->h_out[i], (double)ref[i]);
			return 1;
		}
	}
	return 0;
}

/* ---- gemm ------------------------------------------------------------------------ */

static int gemm_setup(struct tstate *t)
{
	const struct wl_params *p = &t->c->p;
	const size_t m = p->gemm_m, n = p->gemm_n, k = p->gemm_k;
	uint64_t st = t->c->seed ^ 0x67656d6dull, a_d, b_d;
	float *a = malloc(m * k * sizeof(float)), *b = malloc(k * n * sizeof(float));
	double *acc = calloc(n, sizeof(double)), *abs_acc = calloc(n, sizeof(double));
	int r;

	t->ref_c = malloc(m * n * sizeof(float));
	t->tol_c = malloc(m * n * sizeof(float));
	if (!a || !b || !acc || !abs_acc || !t->ref_c || !t->tol_c) {
		r = tfail(t, "gemm: out of memory");
		goto out;
	}
	if ((r = builtin(t, bench_ptx_sgemm, "sgemm")))
		goto out;
	if ((r = gpu_arena(&t->g, (m * k + k * n + m * n) * sizeof(float) + 1024)))
		goto out;
	if (!(a_d = gpu_sub(&t->g, m * k * sizeof(float))) || !(b_d = gpu_sub(&t->g, k * n * sizeof(float))) ||
	    !(t->c_d = gpu_sub(&t->g, m * n * sizeof(float))) || !(t->h_c = gpu_host(&t->g, m * n * sizeof(float)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m * k; i++)
		a[i] = rand_sym(&st, 1.0f);
	for (size_t i = 0; i < k * n; i++)
		b[i] = rand_sym(&st, 1.0f);
	if ((r = gpu_htod(&t->g, a_d, a, m * k * sizeof(float))) ||
	    (r = gpu_htod(&t->g, b_d, b, k * n * sizeof(float))) || (r = gpu_sync(&t->g)))
		goto out;
	{
		struct karg ka[] = { karg_u64(a_d),	     karg_u64(b_d),	   karg_u64(t->c_d),
				     karg_i32((int32_t)m), karg_i32((int32_t)n), karg_i32((int32_t)k) };

		if ((r = gpu_pack(&t->g, &t->k, ka, 6, t->pb[0], sizeof(t->pb[0]))))
			goto out;
	}
	/* the reference in double, and a tolerance from the sum of |a b| */
	for (size_t i = 0; i < m; i++) {
		memset(acc, 0, n * sizeof(double));
		memset(abs_acc, 0, n * sizeof(double));
		for (size_t kk = 0; kk < k; kk++) {
			double av = a[i * k + kk];
			const float *brow = b + kk * n;

			for (size_t j = 0; j < n; j++) {
				acc[j] += av * brow[j];
				abs_acc[j] += fabs(av * brow[j]);
			}
		}
		for (size_t j = 0; j < n; j++) {
			t->ref_c[i * n + j] = (float)acc[j];
			t->tol_c[i * n + j] = (float)(2e-4 * abs_acc[j] + 1e-6);
		}
	}
	t->grid[0] = (uint32_t)((n + 63) / 64);
	t->grid[1] = (uint32_t)((m + 63) / 64);
	t->grid[2] = 1;
	t->block[0] = 256;
	t->block[1] = t->block[2] = 1;
	t->launches = 1;
	r = 0;
out:
	free(a);
	free(b);
	free(acc);
	free(abs_acc);
	return r;
}

static int gemm_check(struct tstate *t, uint64_t seq)
{
	const size_t mn = (size_t)t->c->p.gemm_m * t->c->p.gemm_n;
	int r = gpu_dtoh(&t->g, t->h_c, t->c_d, mn * sizeof(float));

	if (r)
		return r;
	for (size_t i = 0; i < mn; i++) {
		if (!(fabsf(t->h_c[i] - t->ref_c[i]) <= t->tol_c[i])) {
			snprintf(t->why, sizeof(t->why), "gemm: request %llu: C[%zu][%zu] = %.7g, the CPU reference says %.7g",
				 (unsigned long long)seq, i / t->c->p.gemm_n, i % t->c->p.gemm_n, (double)t->h_c[i],
				 (double)t->ref_c[i]);
			return 1;
		}
	}
	return 0;
}

/* ---- custom ---------------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len, char *why, size_t cap)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f) {
		snprintf(why, cap, "cannot open %.300s: %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		snprintf(why, cap, "cannot read %.300s: %s", path, strerror(errno));
		fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		snprintf(why, cap, "cannot read %.300s: %s", path, buf ? "short read" : "out of memory");
		free(buf);
		buf = NULL;
	} else {
		buf[n] = 0;
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static int custom_setup(struct tstate *t)
{
	const struct wl_params *p = &t->c->p;
	struct karg a[BENCH_MAX_PARAMS];
	size_t len, total = 0, biggest = 0;
	char *ptx = slurp(p->ptx, &len, t->g.why, sizeof(t->g.why));
	void *zeros = NULL;
	int r;

	if (!ptx)
		return -EIO;
	r = gpu_kernel(&t->g, ptx, len, p->kernel, &t->k);
	free(ptx);
	if (r)
		return r;
	for (uint32_t i = 0; i < p->nparams; i++) {
		if (p->params[i].kind == PA_BUF) {
			total += (p->params[i].u + 255) & ~(uint64_t)255;
			if (p->params[i].u > biggest)
				biggest = p->params[i].u;
		}
	}
	if (total && (r = gpu_arena(&t->g, total)))
		return r;
	if (biggest && !(zeros = calloc(1, biggest)))
		return tfail(t, "out of memory");
	for (uint32_t i = 0; i < p->nparams && !r; i++) {
		const struct parg *pa = &p->params[i];
		float f32 = (float)pa->f;
		uint32_t bits32;

		switch (pa->kind) {
		case PA_BUF: {
			uint64_t d = gpu_sub(&t->g, pa->u);

			if (!d)
				r = -ENOMEM;
			else
				r = gpu_htod(&t->g, d, zeros, pa->u); /* buffers start zeroed */
			a[i] = karg_u64(d);
			break;
		}
		case PA_I32:
		case PA_U32:
			a[i] = (struct karg){ 4, (uint32_t)pa->u };
			break;
		case PA_I64:
		case PA_U64:
			a[i] = karg_u64(pa->u);
			break;
		case PA_F32:
			memcpy(&bits32, &f32, 4);
			a[i] = (struct karg){ 4, bits32 };
			break;
		case PA_F64: {
			uint64_t bits64;

			memcpy(&bits64, &pa->f, 8);
			a[i] = karg_u64(bits64);
			break;
		}
		default:
			r = tfail(t, "parameter %u: unknown kind", i + 1);
		}
	}
	if (!r)
		r = gpu_sync(&t->g);
	free(zeros);
	if (r)
		return r;
	if ((r = gpu_pack(&t->g, &t->k, a, p->nparams, t->pb[0], sizeof(t->pb[0]))))
		return r;
	memcpy(t->grid, p->grid, sizeof(t->grid));
	memcpy(t->block, p->block, sizeof(t->block));
	t->shmem = p->shmem;
	t->launches = p->kernels;
	return 0;
}

/* ---- dispatch ------------------------------------------------------------------- */

int wl_setup(struct tstate *t)
{
	switch (t->c->workload) {
	case WL_SPIN:
		return spin_setup(t);
	case WL_MLP:
		return mlp_setup(t);
	case WL_GEMM:
		return gemm_setup(t);
	case WL_CUSTOM:
		return custom_setup(t);
	default:
		return tfail(t, "workload %u has no requests of its own", t->c->workload);
	}
}

int wl_request(struct tstate *t, uint64_t seq)
{
	if (t->c->workload == WL_MLP)
		return mlp_request(t, seq);
	return chain_request(t);
}

bool wl_has_check(const struct tstate *t)
{
	return t->c->p.check_every && (t->c->workload == WL_MLP || t->c->workload == WL_GEMM);
}

/*
 * In the b-th block of check_every requests, the one at offset off(b) is
 * checked; mlp's request seq runs input seq % MLP_INPUTS. With g =
 * gcd(check_every, MLP_INPUTS), b * check_every runs through the multiples
 * of g (mod MLP_INPUTS) every MLP_INPUTS / g blocks, and off(b) =
 * (b / (MLP_INPUTS / g)) % g < g <= check_every adds every residue of g to
 * them in turn: the checked requests cover every input (off(b) = b % 4 when
 * check_every is a multiple of 4).
 */
bool wl_checked(const struct tstate *t, uint64_t seq)
{
	const uint64_t n = t->c->p.check_every;
	uint64_t g = MLP_INPUTS, x = n, b;

	if (!n)
		return false;
	while (x) { /* gcd */
		uint64_t y = g % x;

		g = x;
		x = y;
	}
	b = seq / n;
	return seq % n == (b / (MLP_INPUTS / g)) % g;
}

int wl_prepare_check(struct tstate *t)
{
	if (t->c->workload == WL_GEMM) {
		int r = gpu_memset32(&t->g, t->c_d, 0x7fc00000u, (size_t)t->c->p.gemm_m * t->c->p.gemm_n);

		return r ? r : gpu_sync(&t->g);
	}
	if (t->c->workload == WL_MLP) {
		/* the request copies its output here: what a request that did not leaves is NaN */
		for (uint32_t i = 0; i < t->dim; i++)
			t->h_out[i] = NAN;
	}
	return 0;
}

int wl_check(struct tstate *t, uint64_t seq)
{
	if (t->c->workload == WL_MLP)
		return mlp_check(t, seq);
	if (t->c->workload == WL_GEMM)
		return gemm_check(t, seq);
	return 0;
}

void wl_teardown(struct tstate *t)
{
	gpu_close(&t->g);
	free(t->ref);
	free(t->ref_c);
	free(t->tol_c);
	t->ref = t->ref_c = t->tol_c = NULL;
}
