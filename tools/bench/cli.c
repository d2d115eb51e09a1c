/* SPDX-License-Identifier: MIT */
/* The command line of ooo-bench's GPU workloads: `ooo-bench WORKLOAD[,WORKLOAD...] [OPTIONS]`. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../common/args.h"
#include "bench.h"
#include "version.h"

#ifndef OOO_GIT_REV
#define OOO_GIT_REV "unknown"
#endif

void bench_gpu_usage(FILE *f)
{
	fprintf(f,
		"Usage: ooo-bench WORKLOAD[,WORKLOAD...] [OPTIONS]   (WORKLOAD: spin, mlp, gemm, custom, mix)\n"
		"GPU sharing, side by side: for each mode, workload and tenant count T, start T\n"
		"tenant processes together, run the workload in each for --duration seconds after\n"
		"--warmup, and report per tenant class: requests/s, p50/p99/p99.9 latency, SLO\n"
		"attainment and errors. Tenants are real processes (this binary run again), each\n"
		"set up before a common start time.\n"
		"\n"
		"Modes (--mode):\n"
		"  direct  each tenant has its own CUDA context (libcuda loaded at run time): the\n"
		"          driver's default time-slicing between processes\n"
		"  mps     the same tenants under NVIDIA MPS: the bench starts\n"
		"          'nvidia-cuda-mps-control -d' with private CUDA_MPS_PIPE_DIRECTORY and\n"
		"          CUDA_MPS_LOG_DIRECTORY, and stops it with 'quit' at the end. MPS takes at\n"
		"          most %d clients per GPU: larger T is recorded as skipped, with errors\n"
		"  ooo     tenants use only libooo (no CUDA): sessions, buffers, PTX modules, launches\n"
		"          and syncs through oood. Without --socket the bench starts a private oood\n"
		"          with a generated configuration in --rundir, and stops it at the end\n"
		"  lease   the direct tenants as ooo native tenants: the bench starts a private oood\n"
		"          that runs MPS (no executor), and execs each tenant through ooo-run with\n"
		"          --sm (--lease-sm, default 100/T; mix: --lease-critical-sm for the\n"
		"          critical tenant, default 50, the rest shared by the others; best-effort\n"
		"          tenants at MPS client priority below normal). Not in the\n"
		"          default modes; at most %d tenants, as MPS\n"
		"\n"
		"Workloads (a request, timed from issue, or from arrival in open loop, to completion):\n"
		"  spin    a chain of L launches of B blocks x 128 threads, each thread doing I\n"
		"          dependent FMA iterations, then a sync (--kernels L --blocks B --iters I;\n"
		"          defaults 10, 2, 2000)\n"
		"  mlp     batch-1 inference of an MLP: the input to the GPU, --layers (4) layers of\n"
		"          --dim x --dim (1024) random fp32 weights with bias and ReLU (none after the\n"
		"          last layer), one GEMV kernel each, the output back; every --check-every'th\n"
		"          request (100; 0 never) is compared with a CPU reference\n"
		"  gemm    one SGEMM C = A B of --gemm M,N,K (256,128,1152: the case of \"Dynamic\n"
		"          Space-Time Scheduling for GPU Inference\", 7.71x over time-only and 3.23x\n"
		"          over space-only multiplexing) with a tiled shared-memory kernel (64x64\n"
		"          tiles, 256 threads), then a sync; every --check-every'th checked on the\n"
		"          CPU. The report adds throughput ratios ooo/direct, mps/direct, ooo/mps\n"
		"  custom  L launches (--kernels, default 1) of --kernel NAME from --ptx FILE with\n"
		"          --grid, --block, --shmem and --params, then a sync\n"
		"  mix     one latency-critical tenant (class \"critical\", running --critical, default\n"
		"          mlp, open loop at --rate if given) and T-1 best-effort tenants (class\n"
		"          \"best-effort\", running --best-effort, default spin, closed loop or\n"
		"          --be-rate). Needs --slo-us. The critical tenant gets the highest stream\n"
		"          priority (direct, mps) or its class's priority and --slo-us as its queue's\n"
		"          SLO (ooo); best-effort tenants the lowest priority\n"
		"Other workloads have one class, \"default\". Several workloads in one run share\n"
		"each mode's MPS daemon or oood.\n"
		"\n"
		"Run:\n"
		"  --mode LIST          comma-separated modes (default direct,mps,ooo; also --modes)\n"
		"  --tenants LIST       comma-separated tenant counts T, 1..%d (default 1,8,32)\n"
		"  --duration S         measured seconds per point (default 5; also --seconds)\n"
		"  --warmup S           unmeasured seconds before (default 1)\n"
		"  --rate R             open loop: Poisson arrivals at R requests/s per tenant, latency\n"
		"                       from the scheduled arrival (no coordinated omission); absent:\n"
		"                       closed loop, each tenant issuing its next request on completion\n"
		"  --be-rate R          mix: the best-effort tenants' rate (absent: closed loop)\n"
		"  --drain S            open loop: how long requests that arrived in the window are\n"
		"                       still served after it (default 1); the rest are 'unfinished'\n"
		"  --slo-us N           latency SLO in microseconds: SLO attainment is the share of\n"
		"                       requests within it (every class); ooo: each queue's SLO, the\n"
		"                       scheduler's deadlines (default 10000, oood's default slo_us;\n"
		"                       with --socket, that oood's class's)\n"
		"  --seed N             random inputs and arrivals (default 1)\n"
		"Workload options:\n"
		"  --kernels L --blocks B --iters I      spin (and --kernels for custom)\n"
		"  --layers N --dim D --check-every N    mlp (--check-every also for gemm)\n"
		"  --gemm M,N,K                          gemm\n"
		"  --ptx FILE --kernel NAME              custom: the module (PTX text) and kernel\n"
		"  --grid X[,Y[,Z]] --block X[,Y[,Z]]    custom: launch shape (default 1 and 128)\n"
		"  --shmem BYTES                         custom: dynamic shared memory (default 0)\n"
		"  --params SPEC                         custom: the kernel's parameters in order,\n"
		"                       comma-separated: buf:BYTES (a zeroed device buffer of its own,\n"
		"                       K/M/G suffixes), i32:V, u32:V, i64:V, u64:V, f32:V, f64:V;\n"
		"                       e.g. buf:4096,i32:10,f32:1.5\n"
		"  --critical WL --best-effort WL        mix: spin, mlp, gemm or custom\n"
		"Output (a table on stdout always; a progress line on stderr while it runs):\n"
		"  --json FILE          the results as JSON (schema in bench/README.md; '-': stdout,\n"
		"                       and the table goes to stderr)\n"
		"  --csv FILE           one CSV row per result (columns in bench/README.md)\n"
		"  --plot FILE.png      throughput and p99 against T, per mode, per workload, drawn\n"
		"                       by gnuplot from FILE.gp (written too, data included); without\n"
		"                       gnuplot the plot is skipped: 'gnuplot FILE.gp' in its directory\n"
		"                       draws it later, on any machine\n"
		"  -q, --quiet          no progress line\n"
		"Environment:\n"
		"  --libcuda PATH       driver library for direct and mps tenants, the device probe\n"
		"                       and the private oood (default libcuda.so.1)\n"
		"  --socket PATH        ooo: use the oood already serving PATH\n"
		"  --rundir DIR         ooo: run directory of the private oood (default: a new\n"
		"                       %s/ooo-bench-XXXXXX, removed at the end unless it failed)\n"
		"  --oood PATH          ooo: the oood to start (default: next to this binary, else PATH)\n"
		"  --streams N          ooo: the private oood's executor runs bundles on N streams\n"
		"                       (oood.conf streams, 1..8; default oood's)\n"
		"  --threads N          ooo: the private oood's executor serves with N threads\n"
		"                       (oood.conf serving_threads, 1..8; default oood's)\n"
		"  --shard-sessions N   ooo: a serving thread takes N sessions before the next\n"
		"                       takes any (oood.conf shard_sessions, 0..4096; 0: spread)\n"
		"  --wait-spin-us N     ooo: the tenants of the private oood's class \"bench\" (all\n"
		"                       but mix's critical tenant with --critical-class or\n"
		"                       --critical-share) spin N us waiting for a completion\n"
		"                       before they sleep (oood.conf wait_spin_us, 0..100000;\n"
		"                       default oood's, 1000)\n"
		"  --fuse-copies yes|no ooo: the private oood's executor runs small copies as fused\n"
		"                       launches of its copy kernel (oood.conf fuse_copies;\n"
		"                       default oood's)\n"
		"  --spread-lanes yes|no ooo: the private oood's executor runs independent\n"
		"                       tenants' bundles on their own streams where that pays\n"
		"                       (oood.conf spread_lanes; default oood's, no)\n"
		"  --chain-launches yes|no ooo: the private oood's executor runs a queue's\n"
		"                       consecutive launches chained in one fused bundle\n"
		"                       (oood.conf chain_launches; default oood's, yes)\n"
		"  --urgent-reserve N   ooo: the private oood's executor keeps N more in-flight\n"
		"                       bundles for queues above the lowest priority tier\n"
		"                       (oood.conf urgent_reserve, 0..8; default oood's, 0)\n"
		"  --burst-wait-us N    ooo: the private oood's executor holds a lone head launch\n"
		"                       up to N us without a new command for the rest of its\n"
		"                       tenant's burst (oood.conf burst_wait_us, 0..50, 0 off;\n"
		"                       default oood's, 0)\n"
		"  --kernel-limit-ms N  ooo: the private oood's executor gives its context up when\n"
		"                       a kernel runs longer than N ms (oood.conf\n"
		"                       kernel_time_limit_ms, 0..3600000, 0 off; default oood's,\n"
		"                       10000)\n"
		"  --mps-control PATH   mps, lease: the control program (default nvidia-cuda-mps-control\n"
		"                       in PATH, else /usr/local/nvidia/bin)\n"
		"  --ooo-run PATH       lease: ooo-run (default: next to this binary, else PATH)\n"
		"  --lease-sm PCT       lease: every tenant's share (default 100/T, at least 1)\n"
		"  --lease-critical-sm PCT  lease, mix: the critical tenant's share (default 50)\n"
		"  --critical-share PCT ooo, mix: the critical tenant is its own class (it runs with\n"
		"                       the supplementary group %u, so root only), whose bundles get\n"
		"                       an SM partition of PCT percent (partition = yes, sm_share =\n"
		"                       PCT in the private oood); the best-effort tenants share the\n"
		"                       rest. Default: one class, no partition\n"
		"  --critical-class     ooo, mix: the critical tenant is its own class (as above, root\n"
		"                       only) without a partition: its commands get their own rows in\n"
		"                       oooctl sched (per-class stages), nothing else changes\n"
		"  --domains N          ooo: tenant i runs as uid %u + i %% N (root only), so the\n"
		"                       tenants form N trust domains, each with its own executor;\n"
		"                       the private oood then runs MPS (where it finds\n"
		"                       nvidia-cuda-mps-control) with the executors as its clients.\n"
		"                       Default: every tenant in the bench's own uid, one domain\n"
		"  --fence              ooo: the tenants' class has fence = yes: whatever their\n"
		"                       domains, they share the GPU's fenced executor, each in its\n"
		"                       own address window, every kernel fenced (and fused across\n"
		"                       domains). Default: unfenced\n"
		"  OOO_COMMIT           recorded as the commit (default: the build's, %s)\n"
		"  OOO_BENCH_MARK       a file created when each point's measured window opens\n"
		"  -h, --help           this help\n"
		"\n"
		"The JSON records the device, driver, SM clocks (nvidia-smi, when there is one),\n"
		"commit, command line, date, host and kernel. Before any point runs, each mode is\n"
		"checked (libcuda and cuInit for direct and mps, the MPS control program, oood and a\n"
		"queue on a GPU for ooo), and a failure ends the run at once.\n"
		"\n"
		"Exit status: 0 success; 1 a mode could not run, or a point had errors or wrong\n"
		"results (the outputs are still written); 2 usage error.\n",
		BENCH_MPS_MAX_CLIENTS, BENCH_MPS_MAX_CLIENTS, BENCH_MAX_TENANTS, "/tmp", BENCH_CRITICAL_GID, BENCH_DOMAIN_UID, OOO_GIT_REV);
}

bool bench_is_gpu_workload(const char *name)
{
	char copy[256], *save = NULL, *tok;
	bool any = false;

	if (strlen(name) >= sizeof(copy))
		return false;
	snprintf(copy, sizeof(copy), "%s", name);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int w;

		for (w = 0; w < WL_COUNT; w++)
			if (!strcmp(tok, bench_wl_names[w]))
				break;
		if (w == WL_COUNT)
			return false;
		any = true;
	}
	return any;
}

static int parse_wls(const char *arg, struct bench_opts *o)
{
	char copy[256], *save = NULL, *tok;

	snprintf(copy, sizeof(copy), "%s", arg);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int w;
		bool dup = false;

		for (w = 0; w < WL_COUNT; w++)
			if (!strcmp(tok, bench_wl_names[w]))
				break;
		if (w == WL_COUNT)
			return bench_usage_error("unknown workload '%s'", tok);
		for (unsigned i = 0; i < o->nwls; i++)
			dup |= o->wls[i] == (enum bench_wl)w;
		if (!dup)
			o->wls[o->nwls++] = (enum bench_wl)w;
	}
	return 0;
}

static int parse_modes(const char *arg, struct bench_opts *o)
{
	char copy[256], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(copy))
		return bench_usage_error("--mode: list too long");
	snprintf(copy, sizeof(copy), "%s", arg);
	o->nmodes = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int m;
		bool dup = false;

		for (m = 0; m < BM_COUNT; m++)
			if (!strcmp(tok, bench_mode_names[m]))
				break;
		if (m == BM_COUNT)
			return bench_usage_error("unknown mode '%s' (modes: direct, mps, ooo, lease)", tok);
		for (unsigned i = 0; i < o->nmodes; i++)
			dup |= o->modes[i] == (enum bench_mode)m;
		if (!dup)
			o->modes[o->nmodes++] = (enum bench_mode)m;
	}
	if (!o->nmodes)
		return bench_usage_error("--mode wants at least one mode");
	return 0;
}

static int parse_tenants(const char *arg, struct bench_opts *o)
{
	char copy[512], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(copy))
		return bench_usage_error("--tenants: list too long");
	snprintf(copy, sizeof(copy), "%s", arg);
	o->ntenants = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (args_u64(tok, 10, 1, BENCH_MAX_TENANTS, &v) < 0)
			return bench_usage_error("--tenants wants counts from 1 to %d, not '%s'", BENCH_MAX_TENANTS,
						 tok);
		for (unsigned i = 0; i < o->ntenants; i++)
			if (o->tenants[i] == v)
				return bench_usage_error("--tenants: %llu is given twice", (unsigned long long)v);
		if (o->ntenants == BENCH_MAX_COUNTS)
			return bench_usage_error("--tenants takes at most %d counts", BENCH_MAX_COUNTS);
		o->tenants[o->ntenants++] = (unsigned)v;
	}
	if (!o->ntenants)
		return bench_usage_error("--tenants wants at least one count");
	return 0;
}

/* "X[,Y[,Z]]" into out[3], missing ones 1; exact: all three must be there. */
static int parse_dims(const char *opt, const char *arg, uint32_t out[3], bool exact, uint64_t max)
{
	char copy[128], *save = NULL, *tok;
	unsigned got = 0;

	if (strlen(arg) >= sizeof(copy))
		return bench_usage_error("%s: value too long", opt);
	snprintf(copy, sizeof(copy), "%s", arg);
	out[0] = out[1] = out[2] = 1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (got == 3 || args_u64(tok, 10, 1, max, &v) < 0)
			got = 4;
		else
			out[got++] = (uint32_t)v;
	}
	if (!got || got > 3 || (exact && got != 3))
		return bench_usage_error("%s wants %s numbers from 1 to %llu separated by commas, not '%s'", opt,
					 exact ? "3" : "1 to 3", (unsigned long long)max, arg);
	return 0;
}

int bench_parse_params(const char *spec, struct wl_params *p, char *why, size_t cap)
{
	static const struct {
		const char *name;
		enum parg_kind kind;
	} kinds[] = { { "buf", PA_BUF }, { "i32", PA_I32 }, { "u32", PA_U32 }, { "i64", PA_I64 },
		      { "u64", PA_U64 }, { "f32", PA_F32 }, { "f64", PA_F64 } };
	char copy[1024], *next, *tok;

	p->nparams = 0;
	if (strlen(spec) >= sizeof(copy)) {
		snprintf(why, cap, "--params: at most %zu characters", sizeof(copy) - 1);
		return -EINVAL;
	}
	snprintf(copy, sizeof(copy), "%s", spec);
	snprintf(p->params_spec, sizeof(p->params_spec), "%s", spec);
	/* split by hand: strtok_r would pass over empty items */
	for (tok = copy, next = copy[0] ? copy : NULL; next; tok = next) {
		char *colon, *v, *end;
		struct parg *a;
		size_t k;

		if ((next = strchr(tok, ',')))
			*next++ = 0;
		if (!tok[0]) {
			snprintf(why, cap, "--params: an empty parameter (',,', or a comma at an end)");
			return -EINVAL;
		}
		colon = strchr(tok, ':');
		if (!colon) {
			snprintf(why, cap, "--params: '%s' is not KIND:VALUE (buf:BYTES, i32:V, f32:V, ...)", tok);
			return -EINVAL;
		}
		*colon = 0;
		v = colon + 1;
		for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (!strcmp(tok, kinds[k].name))
				break;
		if (k == sizeof(kinds) / sizeof(kinds[0])) {
			snprintf(why, cap, "--params: unknown kind '%s' (buf, i32, u32, i64, u64, f32, f64)", tok);
			return -EINVAL;
		}
		if (p->nparams == BENCH_MAX_PARAMS) {
			snprintf(why, cap, "--params: at most %d parameters", BENCH_MAX_PARAMS);
			return -EINVAL;
		}
		a = &p->params[p->nparams];
		memset(a, 0, sizeof(*a));
		a->kind = kinds[k].kind;
		if (!v[0] || isspace((unsigned char)v[0]))
			goto bad; /* strto* would skip the spaces */
		errno = 0;
		switch (a->kind) {
		case PA_BUF:
			if (args_size(v, 1, 1ull << 40, &a->u) < 0)
				goto bad;
			break;
		case PA_I32:
		case PA_I64: {
			long long x = strtoll(v, &end, 0);

			if (errno || end == v || *end ||
			    (a->kind == PA_I32 && (x < -2147483648ll || x > 2147483647ll)))
				goto bad;
			a->u = (uint64_t)x;
			break;
		}
		case PA_U32:
		case PA_U64: {
			uint64_t x;

			if (args_u64(v, 0, 0, a->kind == PA_U32 ? 0xffffffffull : UINT64_MAX, &x) < 0)
				goto bad;
			a->u = x;
			break;
		}
		case PA_F32:
		case PA_F64:
			a->f = strtod(v, &end);
			if (errno || end == v || *end)
				goto bad;
			/* (float) of a double beyond FLT_MAX is undefined */
			if (a->kind == PA_F32 && !(isfinite(a->f) && fabs(a->f) <= FLT_MAX))
				goto bad;
			break;
		}
		p->nparams++;
		continue;
bad:
		snprintf(why, cap, "--params: '%s' is not a valid %s value", v, kinds[k].name);
		return -EINVAL;
	}
	return 0;
}

static int parse_wl_name(const char *opt, const char *arg, enum bench_wl *out)
{
	for (int w = 0; w < WL_CUSTOM + 1; w++) {
		if (!strcmp(arg, bench_wl_names[w])) {
			*out = (enum bench_wl)w;
			return 0;
		}
	}
	return bench_usage_error("%s wants spin, mlp, gemm or custom, not '%s'", opt, arg);
}

/* An oood.conf value for the private oood, lo..hi: *out = the value + 1 (0 stays "oood's default"). */
static int parse_key_value(const char *opt, const char *arg, uint64_t lo, uint64_t hi, unsigned *out)
{
	uint64_t v;

	if (args_u64(arg, 10, lo, hi, &v) < 0)
		return bench_usage_error("%s wants %llu..%llu, not '%s'", opt, (unsigned long long)lo,
					 (unsigned long long)hi, arg);
	*out = (unsigned)v + 1;
	return 0;
}

/* yes or no, stored as 2 or 1 (0: not given, the private oood's default) */
static int parse_yes_no(const char *opt, const char *arg, unsigned *out)
{
	if (strcmp(arg, "yes") && strcmp(arg, "no"))
		return bench_usage_error("%s wants yes or no, not '%s'", opt, arg);
	*out = strcmp(arg, "yes") ? 1 : 2;
	return 0;
}

static int copy_path(const char *opt, const char *arg, char *out, size_t cap)
{
	if (!arg[0] || strlen(arg) >= cap)
		return bench_usage_error("%s wants a path of 1 to %zu bytes", opt, cap - 1);
	snprintf(out, cap, "%s", arg);
	return 0;
}

enum {
	O_MODE = 256, O_TENANTS, O_DURATION, O_WARMUP, O_DRAIN, O_RATE, O_BE_RATE, O_SLO, O_SEED, O_KERNELS,
	O_BLOCKS, O_ITERS, O_CHECK, O_LAYERS, O_DIM, O_GEMM, O_PTX, O_KERNEL, O_GRID, O_BLOCK, O_SHMEM, O_PARAMS,
	O_CRITICAL, O_BE, O_JSON, O_CSV, O_PLOT, O_LIBCUDA, O_SOCKET, O_RUNDIR, O_OOOD, O_STREAMS, O_THREADS, O_SHARD_SESSIONS, O_WAIT_SPIN, O_FUSE_COPIES, O_SPREAD_LANES, O_CHAIN_LAUNCHES, O_URGENT_RESERVE, O_BURST_WAIT, O_KERNEL_LIMIT, O_MPS, O_OOO_RUN,
	O_LEASE_SM,
	O_LEASE_CRIT, O_CRIT_SHARE, O_CRIT_CLASS, O_DOMAINS, O_FENCE,
};

static const struct option gpu_opts[] = {
	{ "mode", required_argument, NULL, O_MODE },	     { "modes", required_argument, NULL, O_MODE },
	{ "tenants", required_argument, NULL, O_TENANTS },   { "duration", required_argument, NULL, O_DURATION },
	{ "seconds", required_argument, NULL, O_DURATION },  { "warmup", required_argument, NULL, O_WARMUP },
	{ "drain", required_argument, NULL, O_DRAIN },	     { "rate", required_argument, NULL, O_RATE },
	{ "be-rate", required_argument, NULL, O_BE_RATE },   { "slo-us", required_argument, NULL, O_SLO },
	{ "seed", required_argument, NULL, O_SEED },	     { "kernels", required_argument, NULL, O_KERNELS },
	{ "blocks", required_argument, NULL, O_BLOCKS },     { "iters", required_argument, NULL, O_ITERS },
	{ "check-every", required_argument, NULL, O_CHECK }, { "layers", required_argument, NULL, O_LAYERS },
	{ "dim", required_argument, NULL, O_DIM },	     { "gemm", required_argument, NULL, O_GEMM },
	{ "ptx", required_argument, NULL, O_PTX },	     { "kernel", required_argument, NULL, O_KERNEL },
	{ "grid", required_argument, NULL, O_GRID },	     { "block", required_argument, NULL, O_BLOCK },
	{ "shmem", required_argument, NULL, O_SHMEM },	     { "params", required_argument, NULL, O_PARAMS },
	{ "critical", required_argument, NULL, O_CRITICAL }, { "best-effort", required_argument, NULL, O_BE },
	{ "json", required_argument, NULL, O_JSON },	     { "csv", required_argument, NULL, O_CSV },
	{ "plot", required_argument, NULL, O_PLOT },	     { "libcuda", required_argument, NULL, O_LIBCUDA },
	{ "socket", required_argument, NULL, O_SOCKET },     { "rundir", required_argument, NULL, O_RUNDIR },
	{ "oood", required_argument, NULL, O_OOOD },	     { "mps-control", required_argument, NULL, O_MPS },
	{ "streams", required_argument, NULL, O_STREAMS },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "shard-sessions", required_argument, NULL, O_SHARD_SESSIONS },
	{ "wait-spin-us", required_argument, NULL, O_WAIT_SPIN },
	{ "fuse-copies", required_argument, NULL, O_FUSE_COPIES },
	{ "spread-lanes", required_argument, NULL, O_SPREAD_LANES },
	{ "chain-launches", required_argument, NULL, O_CHAIN_LAUNCHES },
	{ "urgent-reserve", required_argument, NULL, O_URGENT_RESERVE },
	{ "burst-wait-us", required_argument, NULL, O_BURST_WAIT },
	{ "kernel-limit-ms", required_argument, NULL, O_KERNEL_LIMIT },
	{ "ooo-run", required_argument, NULL, O_OOO_RUN },  { "lease-sm", required_argument, NULL, O_LEASE_SM },
	{ "lease-critical-sm", required_argument, NULL, O_LEASE_CRIT },
	{ "critical-share", required_argument, NULL, O_CRIT_SHARE },
	{ "critical-class", no_argument, NULL, O_CRIT_CLASS },
	{ "domains", required_argument, NULL, O_DOMAINS },
	{ "fence", no_argument, NULL, O_FENCE },
	{ "quiet", no_argument, NULL, 'q' },		     { "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* What `ooo-bench WORKLOAD` does with no options. */
static void gpu_defaults(struct bench_opts *o)
{
	for (int m = 0; m < BM_COUNT; m++)
		if (m != BM_LEASE) /* opt-in: --mode ...,lease */
			o->modes[o->nmodes++] = (enum bench_mode)m;
	o->tenants[0] = 1;
	o->tenants[1] = 8;
	o->tenants[2] = 32;
	o->ntenants = 3;
	o->duration = 5;
	o->warmup = 1;
	o->drain = 1;
	o->seed = 1;
	o->p.blocks = 2;
	o->p.iters = 2000;
	o->p.check_every = 100;
	o->p.mlp_layers = 4;
	o->p.mlp_dim = 1024;
	o->p.gemm_m = 256;
	o->p.gemm_n = 128;
	o->p.gemm_k = 1152;
	o->p.grid[0] = o->p.grid[1] = o->p.grid[2] = 1;
	o->p.block[0] = 128;
	o->p.block[1] = o->p.block[2] = 1;
	o->critical_wl = WL_MLP;
	o->be_wl = WL_SPIN;
	snprintf(o->libcuda, sizeof(o->libcuda), "libcuda.so.1");
}

/*
 * One option of `ooo-bench WORKLOAD` (c from getopt_long over gpu_opts,
 * with its optarg) into o; --ptx and --kernel also set *have_ptx and
 * *have_kernel. Returns 0, BENCH_RC_USAGE (the error printed), or -1 for
 * an option this function does not take (-q, -h, errors of getopt).
 */
static int gpu_option(struct bench_opts *o, int c, const char *optarg, bool *have_ptx, bool *have_kernel)
{
	char why[256];
	uint64_t v;
	int rc = 0;

	switch (c) {
	case O_MODE:
		rc = parse_modes(optarg, o);
		return rc;
	case O_TENANTS:
		rc = parse_tenants(optarg, o);
		return rc;
	case O_DURATION:
		if (args_double(optarg, 0.1, 86400, &o->duration) < 0)
			rc = bench_usage_error("--duration wants seconds from 0.1 to 86400, not '%s'", optarg);
		return rc;
	case O_WARMUP:
		if (args_double(optarg, 0, 3600, &o->warmup) < 0)
			rc = bench_usage_error("--warmup wants seconds from 0 to 3600, not '%s'", optarg);
		return rc;
	case O_DRAIN:
		if (args_double(optarg, 0, 3600, &o->drain) < 0)
			rc = bench_usage_error("--drain wants seconds from 0 to 3600, not '%s'", optarg);
		return rc;
	case O_RATE:
		if (args_double(optarg, 0.001, 1e7, &o->rate) < 0)
			rc = bench_usage_error("--rate wants requests/s from 0.001 to 1e7, not '%s'", optarg);
		return rc;
	case O_BE_RATE:
		if (args_double(optarg, 0.001, 1e7, &o->be_rate) < 0)
			rc = bench_usage_error("--be-rate wants requests/s from 0.001 to 1e7, not '%s'", optarg);
		return rc;
	case O_SLO:
		if (args_u64(optarg, 10, 1, 60000000, &o->slo_us) < 0)
			rc = bench_usage_error("--slo-us wants microseconds from 1 to 60000000, not '%s'", optarg);
		return rc;
	case O_SEED:
		if (args_u64(optarg, 10, 0, UINT64_MAX, &o->seed) < 0)
			rc = bench_usage_error("--seed wants a number, not '%s'", optarg);
		return rc;
	case O_KERNELS:
		if (args_u64(optarg, 10, 1, 100000, &v) < 0)
			rc = bench_usage_error("--kernels wants 1 to 100000 launches, not '%s'", optarg);
		o->p.kernels = (uint32_t)v;
		return rc;
	case O_BLOCKS:
		if (args_u64(optarg, 10, 1, 1u << 20, &v) < 0)
			rc = bench_usage_error("--blocks wants 1 to %u blocks, not '%s'", 1u << 20, optarg);
		o->p.blocks = (uint32_t)v;
		return rc;
	case O_ITERS:
		if (args_u64(optarg, 10, 0, 1u << 30, &v) < 0)
			rc = bench_usage_error("--iters wants 0 to %u iterations, not '%s'", 1u << 30, optarg);
		o->p.iters = (uint32_t)v;
		return rc;
	case O_CHECK:
		if (args_u64(optarg, 10, 0, 1u << 30, &v) < 0)
			rc = bench_usage_error("--check-every wants 0 (never) to %u, not '%s'", 1u << 30, optarg);
		o->p.check_every = (uint32_t)v;
		return rc;
	case O_LAYERS:
		if (args_u64(optarg, 10, 1, 8, &v) < 0)
			rc = bench_usage_error("--layers wants 1 to 8 layers, not '%s'", optarg);
		o->p.mlp_layers = (uint32_t)v;
		return rc;
	case O_DIM:
		if (args_u64(optarg, 10, 4, 16384, &v) < 0 || v % 4)
			rc = bench_usage_error("--dim wants a multiple of 4 from 4 to 16384, not '%s'", optarg);
		o->p.mlp_dim = (uint32_t)v;
		return rc;
	case O_GEMM: {
		uint32_t d[3];

		if (!(rc = parse_dims("--gemm M,N,K", optarg, d, true, 16384))) {
			o->p.gemm_m = d[0];
			o->p.gemm_n = d[1];
			o->p.gemm_k = d[2];
		}
		return rc;
	}
	case O_PTX:
		if (!(rc = copy_path("--ptx", optarg, o->p.ptx, sizeof(o->p.ptx))) && access(optarg, R_OK) < 0)
			rc = bench_usage_error("--ptx: cannot read %s: %s", optarg, strerror(errno));
		*have_ptx = true;
		return rc;
	case O_KERNEL:
		rc = copy_path("--kernel", optarg, o->p.kernel, sizeof(o->p.kernel));
		*have_kernel = true;
		return rc;
	case O_GRID:
		rc = parse_dims("--grid", optarg, o->p.grid, false, 0x7fffffff);
		return rc;
	case O_BLOCK:
		rc = parse_dims("--block", optarg, o->p.block, false, 1024);
		return rc;
	case O_SHMEM:
		if (args_u64(optarg, 10, 0, 1u << 20, &v) < 0)
			rc = bench_usage_error("--shmem wants bytes from 0 to %u, not '%s'", 1u << 20, optarg);
		o->p.shmem = (uint32_t)v;
		return rc;
	case O_PARAMS:
		if (bench_parse_params(optarg, &o->p, why, sizeof(why)) < 0)
			rc = bench_usage_error("%s", why);
		return rc;
	case O_CRITICAL:
		rc = parse_wl_name("--critical", optarg, &o->critical_wl);
		return rc;
	case O_BE:
		rc = parse_wl_name("--best-effort", optarg, &o->be_wl);
		return rc;
	case O_JSON:
		o->json = optarg;
		return rc;
	case O_CSV:
		o->csv = optarg;
		return rc;
	case O_PLOT:
		o->plot = optarg;
		return rc;
	case O_LIBCUDA:
		rc = copy_path("--libcuda", optarg, o->libcuda, sizeof(o->libcuda));
		return rc;
	case O_SOCKET:
		rc = copy_path("--socket", optarg, o->socket, sizeof(o->socket));
		return rc;
	case O_RUNDIR:
		/* leave room for "/admin.sock" */
		rc = copy_path("--rundir", optarg, o->rundir, BENCH_SOCK_MAX - 12);
		return rc;
	case O_OOOD:
		rc = copy_path("--oood", optarg, o->oood, sizeof(o->oood));
		return rc;
	case O_STREAMS:
		rc = parse_key_value("--streams", optarg, 1, 8, &o->streams);
		return rc;
	case O_URGENT_RESERVE:
		rc = parse_key_value("--urgent-reserve", optarg, 0, 8, &o->urgent_reserve);
		return rc;
	case O_BURST_WAIT:
		rc = parse_key_value("--burst-wait-us", optarg, 0, 50, &o->burst_wait_us);
		return rc;
	case O_KERNEL_LIMIT:
		rc = parse_key_value("--kernel-limit-ms", optarg, 0, 3600000, &o->kernel_limit_ms);
		return rc;
	case O_THREADS:
		rc = parse_key_value("--threads", optarg, 1, 8, &o->threads);
		return rc;
	case O_SHARD_SESSIONS:
		rc = parse_key_value("--shard-sessions", optarg, 0, 4096, &o->shard_sessions);
		return rc;
	case O_WAIT_SPIN:
		rc = parse_key_value("--wait-spin-us", optarg, 0, 100000, &o->wait_spin_us);
		return rc;
	case O_FUSE_COPIES:
		rc = parse_yes_no("--fuse-copies", optarg, &o->fuse_copies);
		return rc;
	case O_CHAIN_LAUNCHES:
		rc = parse_yes_no("--chain-launches", optarg, &o->chain_launches);
		return rc;
	case O_SPREAD_LANES:
		rc = parse_yes_no("--spread-lanes", optarg, &o->spread_lanes);
		return rc;
	case O_MPS:
		rc = copy_path("--mps-control", optarg, o->mps_control, sizeof(o->mps_control));
		return rc;
	case O_OOO_RUN:
		rc = copy_path("--ooo-run", optarg, o->ooo_run, sizeof(o->ooo_run));
		return rc;
	case O_LEASE_SM:
	case O_LEASE_CRIT:
		if (args_u64(optarg, 10, 1, 100, &v) < 0)
			rc = bench_usage_error("%s wants a percentage 1..100, not '%s'",
					       c == O_LEASE_SM ? "--lease-sm" : "--lease-critical-sm", optarg);
		else if (c == O_LEASE_SM)
			o->lease_sm = (unsigned)v;
		else
			o->lease_critical_sm = (unsigned)v;
		return rc;
	case O_DOMAINS:
		if (args_u64(optarg, 10, 1, BENCH_DOMAINS_MAX, &v) < 0)
			rc = bench_usage_error("--domains wants 1..%u, not '%s'", BENCH_DOMAINS_MAX, optarg);
		else
			o->domains = (unsigned)v;
		return rc;
	case O_FENCE:
		o->fence = true;
		return rc;
	case O_CRIT_SHARE:
		if (args_u64(optarg, 10, 1, 99, &v) < 0)
			rc = bench_usage_error("--critical-share wants a percentage 1..99, not '%s'", optarg);
		else
			o->critical_share = (unsigned)v;
		o->critical_class = true;
		return rc;
	case O_CRIT_CLASS:
		o->critical_class = true;
		return rc;
	default:
		return -1;
	}
}

/* The options' consistency, after parsing: 0, or BENCH_RC_USAGE with the error printed. */
static int gpu_check(const struct bench_opts *o, bool have_ptx, bool have_kernel)
{
	bool uses_custom = false, have_mix = false;
	int rc = 0;

	for (unsigned i = 0; i < o->nwls; i++) {
		uses_custom |= o->wls[i] == WL_CUSTOM;
		have_mix |= o->wls[i] == WL_MIX;
	}
	if (have_mix)
		uses_custom |= o->critical_wl == WL_CUSTOM || o->be_wl == WL_CUSTOM;
	if (uses_custom && (!have_ptx || !have_kernel)) {
		rc = bench_usage_error("the custom workload needs --ptx FILE and --kernel NAME");
		return rc;
	}
	if (have_mix && !o->slo_us) {
		rc = bench_usage_error("mix needs --slo-us: the latency-critical tenant's SLO");
		return rc;
	}
	if (o->be_rate && !have_mix) {
		rc = bench_usage_error("--be-rate is for mix's best-effort tenants");
		return rc;
	}
	if (o->critical_class && (!have_mix || o->socket[0])) {
		rc = bench_usage_error("--critical-%s is for mix, with the private oood (not --socket)",
				       o->critical_share ? "share" : "class");
		return rc;
	}
	if (o->critical_class && geteuid() != 0) {
		rc = bench_usage_error("--critical-%s needs root: the critical tenant runs with group %u to be "
				       "its own class",
				       o->critical_share ? "share" : "class", BENCH_CRITICAL_GID);
		return rc;
	}
	if (o->domains > 1 && (o->socket[0] || geteuid() != 0)) {
		rc = bench_usage_error("--domains needs root and the private oood (not --socket): the tenants run as uids "
				       "%u..%u",
				       BENCH_DOMAIN_UID, BENCH_DOMAIN_UID + o->domains - 1);
		return rc;
	}
	if (o->fence && o->socket[0]) {
		rc = bench_usage_error("--fence sets the private oood's class: a running oood (--socket) has its own");
		return rc;
	}
	if (o->socket[0] && o->fuse_copies) {
		rc = bench_usage_error(
			"--fuse-copies sets the private oood's executor: a running oood (--socket) has its own");
		return rc;
	}
	if (o->socket[0] && o->chain_launches) {
		rc = bench_usage_error(
			"--chain-launches sets the private oood's executor: a running oood (--socket) has its own");
		return rc;
	}
	if (o->socket[0] && o->spread_lanes) {
		rc = bench_usage_error(
			"--spread-lanes sets the private oood's executor: a running oood (--socket) has its own");
		return rc;
	}
	if (o->socket[0] &&
	    (o->threads || o->streams || o->shard_sessions || o->wait_spin_us || o->urgent_reserve || o->burst_wait_us ||
	     o->kernel_limit_ms)) {
		rc = bench_usage_error("%s sets the private oood's policy: a running oood (--socket) has its own",
				       o->threads ? "--threads" : o->streams ? "--streams" :
				       o->shard_sessions ? "--shard-sessions" :
				       o->urgent_reserve ? "--urgent-reserve" :
				       o->burst_wait_us ? "--burst-wait-us" :
				       o->kernel_limit_ms ? "--kernel-limit-ms" : "--wait-spin-us");
		return rc;
	}
	if (o->socket[0] && o->rundir[0]) {
		rc = bench_usage_error("--socket names a running oood, --rundir the one the bench starts: give one");
		return rc;
	}
	{
		const char *outs[3] = { o->json, o->csv, o->plot };
		const char *names[3] = { "--json", "--csv", "--plot" };

		for (int i = 0; i < 3; i++) {
			if (outs[i] && !outs[i][0]) {
				rc = bench_usage_error("%s wants a file name", names[i]);
				return rc;
			}
		}
		if ((o->csv && !strcmp(o->csv, "-")) || (o->plot && !strcmp(o->plot, "-"))) {
			rc = bench_usage_error("only --json may be '-' (stdout)");
			return rc;
		}
	}
	return 0;
}

int bench_gpu_main(int argc, char **argv)
{
	struct bench_opts *o = calloc(1, sizeof(*o));
	bool have_ptx = false, have_kernel = false;
	int c, rc = 0;

	if (!o) {
		bench_err("out of memory");
		return BENCH_RC_FAIL;
	}
	bench_cur_workload = argv[0];
	o->argc = argc;
	o->argv = argv;
	if ((rc = parse_wls(argv[0], o)))
		goto out;
	gpu_defaults(o);
	optind = 0;
	opterr = 0;
	while (!rc && (c = getopt_long(argc, argv, ":qh", gpu_opts, NULL)) != -1) {
		rc = gpu_option(o, c, optarg, &have_ptx, &have_kernel);
		if (rc >= 0)
			continue;
		rc = 0;
		switch (c) {
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			bench_gpu_usage(stdout);
			goto out;
		case ':':
			rc = bench_usage_error("option '%s' needs an argument", argv[optind - 1]);
			break;
		default:
			if (optopt)
				rc = bench_usage_error("unknown option '-%c'", optopt);
			else
				rc = bench_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (rc)
		goto out;
	if (optind < argc) {
		rc = bench_usage_error("unexpected argument '%s'", argv[optind]);
		goto out;
	}
	rc = gpu_check(o, have_ptx, have_kernel);
	if (!rc)
		rc = bench_run(o);
out:
	free(o);
	return rc;
}
