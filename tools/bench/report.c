/* SPDX-License-Identifier: MIT */
/*
 * The outputs of a GPU benchmark: the table on the terminal, the JSON file
 * (schema "ooo-bench/1", documented in bench/README.md: change a field's
 * meaning only with a new schema name), the CSV and the gnuplot plot.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../json.h"
#include "bench.h"

#define SCHEMA "ooo-bench/1"

/* The ratios the report makes: numerator mode / denominator mode. */
static const enum bench_mode ratio_pairs[][2] = { { BM_OOO, BM_DIRECT }, { BM_MPS, BM_DIRECT }, { BM_OOO, BM_MPS },
						      { BM_LEASE, BM_MPS } };
#define NPAIRS (sizeof(ratio_pairs) / sizeof(ratio_pairs[0]))

double bench_row_rps(const struct bench_row *row)
{
	if (row->skipped || (!row->requests && !row->completed && row->errors))
		return NAN;
	return (double)row->completed / row->duration;
}

static bool row_ran(const struct bench_row *row)
{
	return isfinite(bench_row_rps(row));
}

static double row_q_us(const struct bench_row *row, double q)
{
	return hist_quantile(&row->h, q) / 1e3;
}

static double slo_att(const struct bench_row *row)
{
	return row->slo_us && row->requests ? (double)row->slo_met / (double)row->requests : NAN;
}

const struct bench_row *bench_find_row(const struct bench_report *r, enum bench_wl wl, enum bench_mode m,
				       unsigned tenants, enum bench_class c)
{
	for (size_t i = 0; i < r->nrows; i++) {
		const struct bench_row *row = &r->rows[i];

		if (row->wl == wl && row->mode == m && row->tenants == tenants && row->klass == c)
			return row;
	}
	return NULL;
}

static double ratio(double a, double b)
{
	return isfinite(a) && isfinite(b) && b > 0 ? a / b : NAN;
}

static uint32_t kernels_of(const struct bench_opts *o, enum bench_wl w)
{
	return o->p.kernels ? o->p.kernels : w == WL_SPIN ? 10 : 1;
}

static void describe(char *buf, size_t cap, const struct bench_opts *o, enum bench_wl w)
{
	const struct wl_params *p = &o->p;

	switch (w) {
	case WL_SPIN:
		snprintf(buf, cap, "a chain of %u kernels of %u blocks x 128 threads, %u FMA iterations each, then a sync",
			 kernels_of(o, w), p->blocks, p->iters);
		break;
	case WL_MLP:
		snprintf(buf, cap, "batch-1 MLP, %u layers of %ux%u fp32 (GEMV + bias + ReLU), input and output copied%s",
			 p->mlp_layers, p->mlp_dim, p->mlp_dim, p->check_every ? ", checked on the CPU" : "");
		break;
	case WL_GEMM:
		snprintf(buf, cap, "SGEMM M=%u N=%u K=%u (64x64 tiles, 256 threads), then a sync", p->gemm_m, p->gemm_n,
			 p->gemm_k);
		break;
	case WL_CUSTOM:
		snprintf(buf, cap, "%u launch%s of %.100s from %.150s, grid %u,%u,%u block %u,%u,%u, params '%.150s', then a sync",
			 kernels_of(o, w), kernels_of(o, w) == 1 ? "" : "es", p->kernel, p->ptx, p->grid[0],
			 p->grid[1], p->grid[2], p->block[0], p->block[1], p->block[2], p->params_spec);
		break;
	case WL_MIX:
		snprintf(buf, cap, "1 critical tenant running %s (SLO %llu us) with T-1 best-effort tenants running %s",
			 bench_wl_names[o->critical_wl], (unsigned long long)o->slo_us, bench_wl_names[o->be_wl]);
		break;
	default:
		snprintf(buf, cap, "?");
	}
}

static const char *fmt_num(char *buf, size_t cap, double v, int prec)
{
	if (isfinite(v))
		snprintf(buf, cap, "%.*f", prec, v);
	else
		snprintf(buf, cap, "-");
	return buf;
}

static void print_ratios(FILE *f, const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	bool header = false;

	for (unsigned wi = 0; wi < o->nwls; wi++) {
		enum bench_wl w = o->wls[wi];

		for (int c = 0; c < TC_COUNT; c++) {
			for (unsigned ti = 0; ti < o->ntenants; ti++) {
				char line[256];
				int n = 0;
				bool any = false;

				n += snprintf(line + n, sizeof(line) - (size_t)n, "%-8s  %-11s  %7u", bench_wl_names[w],
					      bench_class_names[c], o->tenants[ti]);
				for (size_t k = 0; k < NPAIRS; k++) {
					const struct bench_row *a = bench_find_row(r, w, ratio_pairs[k][0], o->tenants[ti],
										   (enum bench_class)c);
					const struct bench_row *b = bench_find_row(r, w, ratio_pairs[k][1], o->tenants[ti],
										   (enum bench_class)c);
					double x = a && b ? ratio(bench_row_rps(a), bench_row_rps(b)) : NAN;
					char v[32];

					any |= isfinite(x);
					if (isfinite(x))
						snprintf(v, sizeof(v), "%.2fx", x);
					else
						snprintf(v, sizeof(v), "-");
					n += snprintf(line + n, sizeof(line) - (size_t)n, "  %10s", v);
				}
				if (!any)
					continue;
				if (!header) {
					fprintf(f, "\nthroughput ratios (req/s of one mode over another's; higher is better "
						   "for the first)\n");
					fprintf(f, "%-8s  %-11s  %7s", "workload", "class", "tenants");
					for (size_t k = 0; k < NPAIRS; k++) {
						char h[32];

						snprintf(h, sizeof(h), "%s/%s", bench_mode_names[ratio_pairs[k][0]],
							 bench_mode_names[ratio_pairs[k][1]]);
						fprintf(f, "  %10s", h);
					}
					fputc('\n', f);
					header = true;
				}
				fprintf(f, "%s\n", line);
			}
		}
		if (w == WL_GEMM && header)
			fprintf(f, "(the paper reports 7.71x over time-only multiplexing, direct here, and 3.23x over "
				   "space-only, mps here, for M=256 N=128 K=1152)\n");
	}
}

/* The device's peak memory bandwidth in bytes/s (double data rate: 2 transfers per clock), 0 if unknown. */
static double peak_mem_bw(const struct bench_device *d)
{
	return d->probed && d->mem_clock_khz > 0 && d->mem_bus_bits > 0
		       ? 2.0 * (double)d->mem_clock_khz * 1e3 * (double)d->mem_bus_bits / 8.0
		       : 0.0;
}

void bench_print_table(FILE *f, const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	const struct bench_device *d = &r->meta.dev;
	char b[7][32], desc[512];

	fflush(stdout);
	for (unsigned i = 0; i < o->nwls; i++) {
		describe(desc, sizeof(desc), o, o->wls[i]);
		fprintf(f, "ooo-bench %s: %s\n", bench_wl_names[o->wls[i]], desc);
	}
	if (o->rate)
		fprintf(f, "open loop, Poisson arrivals at %g req/s per tenant", o->rate);
	else
		fprintf(f, "closed loop");
	for (unsigned i = 0; i < o->nwls; i++) {
		if (o->wls[i] != WL_MIX)
			continue;
		fprintf(f, " (mix: the critical tenant %s, best-effort tenants ", o->rate ? "so" : "too");
		if (o->be_rate)
			fprintf(f, "open loop at %g req/s)", o->be_rate);
		else
			fprintf(f, "closed loop)");
	}
	fprintf(f, "; %.1f s per point after %.1f s warm-up\n", o->duration, o->warmup);
	if (d->probed)
		fprintf(f, "device %s, %d SMs, CC %d.%d, driver %s (CUDA %d.%d)", d->name, d->sm_count, d->cc_major,
			d->cc_minor, d->driver[0] ? d->driver : "?", d->cuda_driver / 1000, d->cuda_driver % 1000 / 10);
	else
		fprintf(f, "device: not probed (%s)", d->probe_error);
	if (d->clock_sm >= 0)
		fprintf(f, ", SM clock %d of %d MHz", d->clock_sm, d->clock_max_sm);
	fprintf(f, "\ncommit %s, host %s, kernel %s, %d cpus, %s\n", r->meta.commit, r->meta.hostname,
		r->meta.kernel, r->meta.cpus, r->meta.date);
	for (unsigned i = 0; i < o->nwls; i++) {
		/* every tenant has its own weights, read once per request: more tenants than fit in L2 are bound by DRAM */
		double bytes = (double)o->p.mlp_layers * o->p.mlp_dim * o->p.mlp_dim * 4.0, bw = peak_mem_bw(d);

		if (o->wls[i] != WL_MLP || !bw)
			continue;
		fprintf(f,
			"mlp reads %.1f MiB of weights per request, each tenant its own: once the tenants' weights no "
			"longer fit in the L2 cache, the device's peak memory bandwidth, %.2f TB/s (memory clock x bus "
			"width), bounds all of them together at %.0f req/s\n",
			bytes / (1 << 20), bw / 1e12, bw / bytes);
		break;
	}
	fputc('\n', f);
	fprintf(f, "%-8s  %-6s  %7s  %-11s  %10s  %10s  %9s  %9s  %9s  %7s  %6s\n", "workload", "mode", "tenants",
		"class", "requests", "req/s", "p50_us", "p99_us", "p99.9_us", "slo_att", "errors");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct bench_row *row = &r->rows[i];
		double att = slo_att(row);

		if (isfinite(att))
			snprintf(b[5], sizeof(b[5]), "%.1f%%", 100 * att);
		else
			snprintf(b[5], sizeof(b[5]), "-");
		fprintf(f, "%-8s  %-6s  %7u  %-11s  %10llu  %10s  %9s  %9s  %9s  %7s  %6llu%s\n",
			bench_wl_names[row->wl], bench_mode_names[row->mode], row->tenants,
			bench_class_names[row->klass], (unsigned long long)row->requests,
			fmt_num(b[0], sizeof(b[0]), bench_row_rps(row), 1), fmt_num(b[1], sizeof(b[1]), row_q_us(row, 0.5), 2),
			fmt_num(b[2], sizeof(b[2]), row_q_us(row, 0.99), 2),
			fmt_num(b[3], sizeof(b[3]), row_q_us(row, 0.999), 2), b[5], (unsigned long long)row->errors,
			row->skipped ? "  (skipped)" : "");
	}
	print_ratios(f, r);
	{
		bool head = false;

		for (size_t i = 0; i < r->nrows; i++) {
			const struct bench_row *row = &r->rows[i];

			if (!row->error[0])
				continue;
			if (!head)
				fprintf(f, "\nerrors:\n");
			head = true;
			fprintf(f, "  %s %s T=%u %s: %s\n", bench_wl_names[row->wl], bench_mode_names[row->mode],
				row->tenants, bench_class_names[row->klass], row->error);
		}
	}
	fflush(f);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void j_int_or_null(const char *key, int v)
{
	if (v >= 0)
		j_u64(key, (uint64_t)v);
	else
		j_null(key);
}

static void j_str_or_null(const char *key, const char *v)
{
	j_str(key, v && v[0] ? v : NULL);
}

static void json_meta(const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	const struct bench_meta *m = &r->meta;
	const struct bench_device *d = &m->dev;
	char line[8192], driver[64] = "";
	bool own_ctx = false;
	size_t n = 0;

	/* the command line, quoted where a shell would need it */
	line[0] = 0;
	for (int i = -1; i < o->argc && n < sizeof(line) - 4; i++) {
		const char *a = i < 0 ? bench_argv0 : o->argv[i];
		bool plain = a[0] != 0;

		for (const char *p = a; *p; p++)
			plain &= strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=,.:/+@%", *p) != NULL;
		if (n)
			line[n++] = ' ';
		if (plain) {
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%s", a);
		} else {
			line[n++] = '\'';
			for (const char *p = a; *p && n < sizeof(line) - 6; p++) {
				if (*p == '\'')
					n += (size_t)snprintf(line + n, sizeof(line) - n, "'\\''");
				else
					line[n++] = *p;
			}
			line[n++] = '\'';
		}
		if (n >= sizeof(line) - 4)
			n = sizeof(line) - 4;
		line[n] = 0;
	}
	j_obj("meta");
	j_str("schema", SCHEMA);
	j_str("tool", "ooo-bench");
	j_str("version", OOO_VERSION_STRING);
	j_str("commit", m->commit);
	j_str("build_commit", m->build_commit);
	j_str("command_line", line);
	j_arr("argv");
	j_str(NULL, bench_argv0);
	for (int i = 0; i < o->argc; i++)
		j_str(NULL, o->argv[i]);
	j_arr_end();
	j_str("date", m->date);
	j_str("end_date", m->end_date);
	j_num("wall_s", m->wall_s, 1);
	j_str("hostname", m->hostname);
	j_str("kernel", m->kernel);
	j_u64("cpus", (uint64_t)m->cpus);
	/* nvidia-smi's driver version, else the CUDA version the driver library reports */
	if (d->driver[0])
		snprintf(driver, sizeof(driver), "%s", d->driver);
	else if (d->cuda_driver)
		snprintf(driver, sizeof(driver), "CUDA %d.%d", d->cuda_driver / 1000, d->cuda_driver % 1000 / 10);
	j_str_or_null("driver", driver);
	/* direct and mps tenants: device 0's primary context, its flags never set (CU_CTX_SCHED_AUTO) */
	for (unsigned i = 0; i < o->nmodes; i++)
		own_ctx |= o->modes[i] != BM_OOO;
	j_str_or_null("cuda_ctx_sched", own_ctx ? "default (spin/yield auto)" : NULL);
	j_obj("device");
	j_u64("index", 0);
	j_str_or_null("name", d->name);
	j_str_or_null("uuid", d->uuid);
	if (d->probed) {
		char cc[16];

		snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
		j_u64("sm_count", (uint64_t)d->sm_count);
		j_str("compute_capability", cc);
		j_u64("memory_bytes", d->mem_total);
		j_u64("max_clock_mhz", (uint64_t)(d->clock_khz / 1000));
		if (peak_mem_bw(d) > 0)
			j_u64("peak_mem_bytes_per_s", (uint64_t)peak_mem_bw(d));
		else
			j_null("peak_mem_bytes_per_s");
	} else {
		j_null("sm_count");
		j_null("compute_capability");
		j_null("memory_bytes");
		j_null("max_clock_mhz");
		j_null("peak_mem_bytes_per_s");
	}
	j_str_or_null("driver_version", d->driver);
	if (d->cuda_driver)
		j_u64("cuda_driver_version", (uint64_t)d->cuda_driver);
	else
		j_null("cuda_driver_version");
	j_int_or_null("clocks_sm_mhz", d->clock_sm);
	j_int_or_null("clocks_max_sm_mhz", d->clock_max_sm);
	j_int_or_null("clocks_sm_mhz_end", d->clock_sm_end);
	j_str_or_null("probe_error", d->probed ? NULL : d->probe_error);
	j_obj_end();
	j_obj("options");
	j_arr("workloads");
	for (unsigned i = 0; i < o->nwls; i++)
		j_str(NULL, bench_wl_names[o->wls[i]]);
	j_arr_end();
	j_arr("modes");
	for (unsigned i = 0; i < o->nmodes; i++)
		j_str(NULL, bench_mode_names[o->modes[i]]);
	j_arr_end();
	j_arr("tenants");
	for (unsigned i = 0; i < o->ntenants; i++)
		j_u64(NULL, o->tenants[i]);
	j_arr_end();
	j_num("duration_s", o->duration, 3);
	j_num("warmup_s", o->warmup, 3);
	j_num("drain_s", o->drain, 3);
	j_str("arrival", o->rate ? "open" : "closed");
	j_num("rate_per_tenant", o->rate ? o->rate : NAN, 3);
	j_num("be_rate_per_tenant", o->be_rate ? o->be_rate : NAN, 3);
	if (o->slo_us)
		j_u64("slo_us", o->slo_us);
	else
		j_null("slo_us");
	j_u64("seed", o->seed);
	j_obj("spin");
	j_u64("kernels", kernels_of(o, WL_SPIN));
	j_u64("blocks", o->p.blocks);
	j_u64("threads", 128);
	j_u64("iters", o->p.iters);
	j_obj_end();
	j_obj("mlp");
	j_u64("layers", o->p.mlp_layers);
	j_u64("dim", o->p.mlp_dim);
	j_u64("check_every", o->p.check_every);
	j_obj_end();
	j_obj("gemm");
	j_u64("m", o->p.gemm_m);
	j_u64("n", o->p.gemm_n);
	j_u64("k", o->p.gemm_k);
	j_u64("check_every", o->p.check_every);
	j_obj_end();
	j_obj("custom");
	j_str_or_null("ptx", o->p.ptx);
	j_str_or_null("kernel", o->p.kernel);
	j_arr("grid");
	for (int i = 0; i < 3; i++)
		j_u64(NULL, o->p.grid[i]);
	j_arr_end();
	j_arr("block");
	for (int i = 0; i < 3; i++)
		j_u64(NULL, o->p.block[i]);
	j_arr_end();
	j_u64("shmem", o->p.shmem);
	j_str("params", o->p.params_spec);
	j_u64("kernels", kernels_of(o, WL_CUSTOM));
	j_obj_end();
	j_obj("mix");
	j_str("critical", bench_wl_names[o->critical_wl]);
	j_str("best_effort", bench_wl_names[o->be_wl]);
	j_obj_end();
	j_str("libcuda", o->libcuda);
	j_obj_end();
	j_obj("oood");
	j_str_or_null("socket", m->oood_socket);
	j_bool("private", m->oood_private);
	j_obj_end();
	j_obj("mps");
	j_str_or_null("control", m->mps_control);
	j_u64("max_clients", BENCH_MPS_MAX_CLIENTS);
	j_obj_end();
	j_obj_end();
}

static void json_row(const struct bench_row *row)
{
	double att = slo_att(row);

	j_obj(NULL);
	j_str("workload", bench_wl_names[row->wl]);
	j_str("mode", bench_mode_names[row->mode]);
	j_u64("tenants", row->tenants);
	j_str("class", bench_class_names[row->klass]);
	j_u64("class_tenants", row->class_tenants);
	j_str("request", bench_wl_names[row->request]);
	j_str("arrival", row->open ? "open" : "closed");
	j_num("rate_per_tenant", row->open ? row->rate : NAN, 3);
	j_num("duration_s", row->duration, 3);
	j_num("warmup_s", row->warmup, 3);
	j_u64("requests", row->requests);
	j_u64("completed", row->completed);
	j_num("req_per_s", bench_row_rps(row), 1);
	j_num("req_per_s_per_tenant", bench_row_rps(row) / row->class_tenants, 1);
	j_num("tenant_req_per_s_min", row->tenant_min_rps, 1);
	j_num("tenant_req_per_s_max", row->tenant_max_rps, 1);
	j_num("p50_us", row_q_us(row, 0.5), 2);
	j_num("p90_us", row_q_us(row, 0.9), 2);
	j_num("p99_us", row_q_us(row, 0.99), 2);
	j_num("p999_us", row_q_us(row, 0.999), 2);
	j_num("mean_us", hist_mean(&row->h) / 1e3, 2);
	j_num("min_us", row->h.count ? (double)row->h.min / 1e3 : NAN, 2);
	j_num("max_us", row->h.count ? (double)row->h.max / 1e3 : NAN, 2);
	if (row->slo_us)
		j_u64("slo_us", row->slo_us);
	else
		j_null("slo_us");
	j_num("slo_attainment", att, 5);
	j_u64("unfinished", row->unfinished);
	j_u64("checks", row->checks);
	j_u64("check_failures", row->check_failures);
	j_u64("errors", row->errors);
	j_bool("skipped", row->skipped);
	j_str_or_null("error", row->error);
	j_obj_end();
}

int bench_write_json(const char *path, const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	bool out = !strcmp(path, "-");
	FILE *f = out ? stdout : fopen(path, "w");

	if (!f) {
		bench_err("cannot write the JSON to %s: %s", path, strerror(errno));
		return -errno;
	}
	j_set_output(f);
	j_obj(NULL);
	json_meta(r);
	j_arr("results");
	for (size_t i = 0; i < r->nrows; i++)
		json_row(&r->rows[i]);
	j_arr_end();
	j_arr("ratios");
	for (unsigned wi = 0; wi < o->nwls; wi++) {
		for (int c = 0; c < TC_COUNT; c++) {
			for (unsigned ti = 0; ti < o->ntenants; ti++) {
				for (size_t k = 0; k < NPAIRS; k++) {
					const struct bench_row *a = bench_find_row(r, o->wls[wi], ratio_pairs[k][0],
										   o->tenants[ti], (enum bench_class)c);
					const struct bench_row *b = bench_find_row(r, o->wls[wi], ratio_pairs[k][1],
										   o->tenants[ti], (enum bench_class)c);

					if (!a || !b)
						continue;
					j_obj(NULL);
					j_str("workload", bench_wl_names[o->wls[wi]]);
					j_str("class", bench_class_names[c]);
					j_u64("tenants", o->tenants[ti]);
					j_str("numerator", bench_mode_names[ratio_pairs[k][0]]);
					j_str("denominator", bench_mode_names[ratio_pairs[k][1]]);
					j_num("req_per_s_ratio", ratio(bench_row_rps(a), bench_row_rps(b)), 4);
					j_num("p99_ratio", row_ran(a) && row_ran(b) ? ratio(row_q_us(a, 0.99), row_q_us(b, 0.99)) : NAN, 4);
					j_obj_end();
				}
			}
		}
	}
	j_arr_end();
	j_obj_end();
	j_set_output(NULL);
	if (out) {
		fflush(stdout);
		return 0;
	}
	if (fclose(f) != 0) {
		bench_err("cannot write the JSON to %s: %s", path, strerror(errno));
		return -EIO;
	}
	return 0;
}

/* ---- CSV ------------------------------------------------------------------------------- */

static void csv_num(FILE *f, double v, int prec)
{
	if (isfinite(v))
		fprintf(f, ",%.*f", prec, v);
	else
		fputc(',', f);
}

int bench_write_csv(const char *path, const struct bench_report *r)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		bench_err("cannot write the CSV to %s: %s", path, strerror(errno));
		return -errno;
	}
	fputs("workload,mode,tenants,class,class_tenants,request,arrival,rate_per_tenant,duration_s,requests,"
	      "req_per_s,req_per_s_per_tenant,p50_us,p90_us,p99_us,p999_us,mean_us,max_us,slo_us,slo_attainment,"
	      "unfinished,check_failures,errors,skipped,error\n",
	      f);
	for (size_t i = 0; i < r->nrows; i++) {
		const struct bench_row *row = &r->rows[i];

		fprintf(f, "%s,%s,%u,%s,%u,%s,%s", bench_wl_names[row->wl], bench_mode_names[row->mode], row->tenants,
			bench_class_names[row->klass], row->class_tenants, bench_wl_names[row->request],
			row->open ? "open" : "closed");
		csv_num(f, row->open ? row->rate : NAN, 3);
		csv_num(f, row->duration, 3);
		fprintf(f, ",%llu", (unsigned long long)row->requests);
		csv_num(f, bench_row_rps(row), 1);
		csv_num(f, bench_row_rps(row) / row->class_tenants, 1);
		csv_num(f, row_q_us(row, 0.5), 2);
		csv_num(f, row_q_us(row, 0.9), 2);
		csv_num(f, row_q_us(row, 0.99), 2);
		csv_num(f, row_q_us(row, 0.999), 2);
		csv_num(f, hist_mean(&row->h) / 1e3, 2);
		csv_num(f, row->h.count ? (double)row->h.max / 1e3 : NAN, 2);
		if (row->slo_us)
			fprintf(f, ",%llu", (unsigned long long)row->slo_us);
		else
			fputc(',', f);
		csv_num(f, slo_att(row), 5);
		fprintf(f, ",%llu,%llu,%llu,%s,\"", (unsigned long long)row->unfinished,
			(unsigned long long)row->check_failures, (unsigned long long)row->errors,
			row->skipped ? "true" : "false");
		for (const char *p = row->error; *p; p++) {
			if (*p == '"')
				fputc('"', f);
			fputc(*p == '\n' ? ' ' : *p, f);
		}
		fputs("\"\n", f);
	}
	if (fclose(f) != 0) {
		bench_err("cannot write the CSV to %s: %s", path, strerror(errno));
		return -EIO;
	}
	return 0;
}

/* ---- plot ------------------------------------------------------------------------------ */

/* A string for a gnuplot double-quoted literal: no quotes, backslashes or control characters. */
static void gp_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		fputc(*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 ? '\'' : *s, f);
	fputc('"', f);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

static void plot_panel(FILE *f, const struct bench_report *r, enum bench_wl w, bool latency, const int *blocks,
		       unsigned nblocks)
{
	const struct bench_opts *o = r->o;
	bool first = true;

	fprintf(f, "set title \"%s: %s\"\n", bench_wl_names[w],
		latency ? "p99 latency" : "throughput (all tenants of the class)");
	fprintf(f, "set ylabel \"%s\"\n", latency ? "p99 latency (us)" : "requests/s");
	fprintf(f, latency ? "set logscale y\n" : "unset logscale y\n");
	fprintf(f, "plot ");
	for (unsigned bi = 0; bi < nblocks; bi++) {
		int id = blocks[bi];
		enum bench_mode m = (enum bench_mode)(id / TC_COUNT);
		enum bench_class c = (enum bench_class)(id % TC_COUNT);

		if (!first)
			fputs(", \\\n     ", f);
		first = false;
		fprintf(f, "$%s_%s_%d using 1:%d with linespoints lw 2 pt %d title \"%s%s%s\"", bench_wl_names[w],
			bench_mode_names[m], (int)c, latency ? 3 : 2, 5 + 2 * (int)m, bench_mode_names[m],
			w == WL_MIX ? " " : "", w == WL_MIX ? bench_class_names[c] : "");
	}
	if (first)
		fputs("NaN notitle", f);
	fputc('\n', f);
	(void)o;
}

int bench_write_plot(const char *path, const struct bench_report *r)
{
	const struct bench_opts *o = r->o;
	char gp[PATH_MAX + 8], gnuplot[PATH_MAX], dir[PATH_MAX + 8], *slash;
	unsigned ts[BENCH_MAX_COUNTS];
	size_t len = strlen(path);
	FILE *f;
	int st;

	if (len > 4 && !strcmp(path + len - 4, ".png"))
		snprintf(gp, sizeof(gp), "%.*s.gp", (int)(len - 4), path);
	else
		snprintf(gp, sizeof(gp), "%s.gp", path);
	memcpy(ts, o->tenants, o->ntenants * sizeof(ts[0]));
	qsort(ts, o->ntenants, sizeof(ts[0]), cmp_uint);
	f = fopen(gp, "w");
	if (!f) {
		bench_err("cannot write the plot script %s: %s", gp, strerror(errno));
		return -errno;
	}
	/* the PNG is named relative to the script, so the pair can be moved and drawn elsewhere */
	fprintf(f, "# written by ooo-bench: 'gnuplot %s', in this directory, draws %s\n", base_name(gp),
		base_name(path));
	fprintf(f, "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
		   "    set terminal pngcairo size 1400,%u font \",10\"\n"
		   "} else {\n"
		   "    set terminal png size 1400,%u\n"
		   "}\n",
		420 * o->nwls + 60, 420 * o->nwls + 60);
	fputs("set output ", f);
	gp_str(f, base_name(path));
	fputc('\n', f);
	/* one data block per (workload, mode, class): T, req/s, p99 us */
	for (unsigned wi = 0; wi < o->nwls; wi++) {
		for (int m = 0; m < BM_COUNT; m++) {
			for (int c = 0; c < TC_COUNT; c++) {
				bool any = false;

				for (unsigned ti = 0; ti < o->ntenants; ti++)
					any |= bench_find_row(r, o->wls[wi], (enum bench_mode)m, ts[ti],
							      (enum bench_class)c) != NULL;
				if (!any)
					continue;
				fprintf(f, "$%s_%s_%d << EOD\n", bench_wl_names[o->wls[wi]], bench_mode_names[m], c);
				for (unsigned ti = 0; ti < o->ntenants; ti++) {
					const struct bench_row *row = bench_find_row(r, o->wls[wi], (enum bench_mode)m,
										     ts[ti], (enum bench_class)c);
					double rps = row ? bench_row_rps(row) : NAN, p99 = row ? row_q_us(row, 0.99) : NAN;

					if (row && !row_ran(row))
						p99 = NAN;
					fprintf(f, "%u ", ts[ti]);
					if (isfinite(rps))
						fprintf(f, "%.1f ", rps);
					else
						fputs("NaN ", f);
					if (isfinite(p99))
						fprintf(f, "%.2f\n", p99);
					else
						fputs("NaN\n", f);
				}
				fputs("EOD\n", f);
			}
		}
	}
	fputs("set multiplot layout ", f);
	fprintf(f, "%u,2 title ", o->nwls);
	{
		char title[512];

		snprintf(title, sizeof(title), "ooo-bench on %s, commit %s, %.1f s per point, %s loop",
			 r->meta.dev.name[0] ? r->meta.dev.name : "unknown device", r->meta.commit, o->duration,
			 o->rate ? "open" : "closed");
		gp_str(f, title);
	}
	fputc('\n', f);
	fputs("set grid\nset key top left\nset xlabel \"tenants (T)\"\nset datafile missing \"NaN\"\n", f);
	if (ts[o->ntenants - 1] > ts[0])
		fputs("set logscale x 2\n", f);
	fprintf(f, "set xrange [%g:%g]\n", ts[0] / 1.4, ts[o->ntenants - 1] * 1.4);
	fputs("set xtics (", f);
	for (unsigned ti = 0; ti < o->ntenants; ti++)
		fprintf(f, "%s\"%u\" %u", ti ? ", " : "", ts[ti], ts[ti]);
	fputs(")\nset yrange [0:*]\n", f);
	for (unsigned wi = 0; wi < o->nwls; wi++) {
		int blocks[BM_COUNT * TC_COUNT];
		unsigned nb = 0;

		for (int m = 0; m < BM_COUNT; m++)
			for (int c = 0; c < TC_COUNT; c++)
				for (unsigned ti = 0; ti < o->ntenants; ti++)
					if (bench_find_row(r, o->wls[wi], (enum bench_mode)m, ts[ti], (enum bench_class)c)) {
						blocks[nb++] = m * TC_COUNT + c;
						break;
					}
		fputs("set yrange [0:*]\n", f);
		plot_panel(f, r, o->wls[wi], false, blocks, nb);
		fputs("set yrange [*:*]\n", f);
		plot_panel(f, r, o->wls[wi], true, blocks, nb);
	}
	fputs("unset multiplot\n", f);
	if (fclose(f) != 0) {
		bench_err("cannot write the plot script %s: %s", gp, strerror(errno));
		return -EIO;
	}
	snprintf(dir, sizeof(dir), "%s", gp);
	if ((slash = strrchr(dir, '/')))
		*(slash == dir ? slash + 1 : slash) = 0;
	else
		snprintf(dir, sizeof(dir), ".");
	if (bench_find_exe("gnuplot", NULL, gnuplot, sizeof(gnuplot)) < 0) {
		bench_err("gnuplot is not installed: skipped the plot %s; 'cd %s && gnuplot %s' draws it "
			  "(Debian: apt-get install gnuplot-nox)",
			  path, dir, base_name(gp));
		return 0;
	}
	{
		char out[4096], cd[PATH_MAX + 16], script[PATH_MAX + 16];
		/* gnuplot reads the script after the cd: name it from there ("./": not an option) */
		char *argv[] = { gnuplot, "-e", cd, script, NULL };

		snprintf(script, sizeof(script), "./%s", base_name(gp));

		/* gnuplot quotes: '' is a quote inside '...' */
		{
			size_t n = (size_t)snprintf(cd, sizeof(cd), "cd '");

			for (const char *p = dir; *p && n < sizeof(cd) - 4; p++) {
				if (*p == '\'')
					cd[n++] = '\'';
				cd[n++] = *p;
			}
			snprintf(cd + n, sizeof(cd) - n, "'");
		}

		st = bench_capture(argv, NULL, out, sizeof(out), 60000);
		if (st != 0) {
			bench_err("gnuplot %s failed (status %d): plot %s not drawn (run it by hand to see why)", gp,
				  st, path);
			return -EIO;
		}
	}
	return 0;
}
