/* SPDX-License-Identifier: MIT */
/*
 * ooo-bench's GPU workloads (spin, mlp, gemm, custom, mix): declarations
 * shared by the files of tools/bench/. The parent process (cli.c, driver.c,
 * env.c, report.c) runs the points of a benchmark; each tenant is a process
 * of its own (tenant.c) that the parent starts by executing /proc/self/exe
 * with the hidden argument --tenant, and that drives the GPU through one
 * backend (gpu.c: its own CUDA context, or libooo) and one workload
 * (workloads.c).
 */
#ifndef OOO_BENCH_BENCH_H
#define OOO_BENCH_BENCH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "hist.h"

#define BENCH_RC_OK 0
#define BENCH_RC_FAIL 1
#define BENCH_RC_USAGE 2

#define BENCH_NS 1000000000ll
#define BENCH_MAX_TENANTS 256
#define BENCH_CRITICAL_GID 64999u /* mix --critical-share: the critical tenant's group, which its class matches */
#define BENCH_DOMAIN_UID 64000u   /* --domains N: tenant i runs as uid BENCH_DOMAIN_UID + i % N */
#define BENCH_DOMAINS_MAX 64u
#define BENCH_MAX_COUNTS 32
#define BENCH_MAX_PARAMS 64
#define BENCH_MPS_MAX_CLIENTS 48 /* MPS clients per GPU on the H200 */
#define BENCH_SOCK_MAX 108       /* sizeof(sockaddr_un.sun_path) */
#define BENCH_ERR_MAX 512

enum bench_mode { BM_DIRECT, BM_MPS, BM_OOO, BM_LEASE, BM_COUNT };
enum bench_wl { WL_SPIN, WL_MLP, WL_GEMM, WL_CUSTOM, WL_MIX, WL_COUNT };
enum bench_class { TC_DEFAULT, TC_CRITICAL, TC_BEST_EFFORT, TC_COUNT };

extern const char *const bench_mode_names[BM_COUNT];
extern const char *const bench_wl_names[WL_COUNT];
extern const char *const bench_class_names[TC_COUNT];

/* One kernel parameter of --params. */
enum parg_kind { PA_BUF, PA_I32, PA_U32, PA_I64, PA_U64, PA_F32, PA_F64 };

struct parg {
	uint32_t kind; /* enum parg_kind */
	uint32_t reserved;
	uint64_t u; /* buf: bytes; integers: the value's bits */
	double f;   /* f32, f64 */
};

/* What a request does: the options of every workload. */
struct wl_params {
	uint32_t kernels; /* spin: L (default 10); custom: launches per request (default 1); 0: default */
	uint32_t blocks;  /* spin: B */
	uint32_t iters;   /* spin: I */
	uint32_t check_every; /* mlp, gemm: check every Nth request (0: never) */
	uint32_t mlp_layers, mlp_dim;
	uint32_t gemm_m, gemm_n, gemm_k;
	/* custom */
	char ptx[PATH_MAX];
	char kernel[256];
	uint32_t grid[3], block[3], shmem;
	uint32_t nparams;
	struct parg params[BENCH_MAX_PARAMS];
	char params_spec[1024];
};

/* The options of a GPU benchmark run (cli.c). */
struct bench_opts {
	enum bench_wl wls[WL_COUNT];
	unsigned nwls;
	enum bench_mode modes[BM_COUNT];
	unsigned nmodes;
	unsigned tenants[BENCH_MAX_COUNTS];
	unsigned ntenants;
	double duration, warmup, drain; /* s */
	double rate, be_rate;           /* requests/s per tenant; 0: closed loop */
	uint64_t slo_us;                /* 0: none */
	uint64_t seed;
	struct wl_params p;
	enum bench_wl critical_wl, be_wl; /* mix */
	const char *json, *csv, *plot;
	char libcuda[PATH_MAX];
	char socket[BENCH_SOCK_MAX]; /* ooo: an oood already running; "" to start one */
	char rundir[PATH_MAX];       /* ooo: the private oood's run directory; "": a new one */
	char oood[PATH_MAX];
	unsigned streams;           /* ooo: the private oood's [daemon] streams + 1; 0: its default */
	unsigned urgent_reserve;    /* ooo: the private oood's [daemon] urgent_reserve + 1; 0: its default */
	unsigned burst_wait_us;     /* ooo: the private oood's [daemon] burst_wait_us + 1; 0: its default */
	unsigned kernel_limit_ms;   /* ooo: the private oood's [daemon] kernel_time_limit_ms + 1; 0: its default */
	unsigned threads;           /* ooo: the private oood's [daemon] serving_threads + 1; 0: its default */
	unsigned shard_sessions;    /* ooo: the private oood's [daemon] shard_sessions + 1; 0: its default */
	unsigned wait_spin_us;      /* ooo: the private oood's class bench's wait_spin_us + 1; 0: its default */
	unsigned fuse_copies;       /* ooo: the private oood's [daemon] fuse_copies: 0 its default, 1 no, 2 yes */
	unsigned chain_launches;    /* ooo: the private oood's [daemon] chain_launches: 0 its default, 1 no, 2 yes */
	unsigned spread_lanes;      /* ooo: the private oood's [daemon] spread_lanes: 0 its default, 1 no, 2 yes */
	char mps_control[PATH_MAX];
	char ooo_run[PATH_MAX];     /* lease: the ooo-run to exec tenants through */
	unsigned lease_sm;          /* lease: each tenant's --sm; 0: 100/T (at least 1) */
	unsigned lease_critical_sm; /* lease, mix: the critical tenant's --sm; 0: 50 */
	unsigned critical_share;    /* ooo, mix: the critical tenant's class gets a partition of this percent; 0: none */
	bool critical_class;        /* ooo, mix: the critical tenant is a class of its own (--critical-class, --critical-share) */
	unsigned domains;           /* ooo: tenants spread over this many uids, so trust domains (executors); 0: one */
	bool fence;                 /* ooo: the bench class has fence = yes (the GPU's fenced executor, windows) */
	bool quiet;
	int argc;
	char **argv;
};

/* ---- parent <-> tenant -------------------------------------------------------- */

#define TENANT_MAGIC 0x626f6f6fu /* "ooob" */
#define TENANT_CTL_FD 3          /* parent -> tenant: tenant_cfg, then the start time */
#define TENANT_RES_FD 4          /* tenant -> parent: messages */

struct tenant_cfg {
	uint32_t magic, size;
	uint32_t index, tenants;
	uint32_t mode;     /* enum bench_mode */
	uint32_t workload; /* the request: WL_SPIN, WL_MLP, WL_GEMM or WL_CUSTOM */
	uint32_t klass;    /* enum bench_class */
	uint32_t open;     /* open loop at `rate` */
	double rate;
	int64_t warmup_ns, duration_ns, drain_ns;
	uint64_t slo_ns; /* 0: none */
	uint64_t seed;
	int32_t ooo_priority;  /* ooo queue: -1 the class's, else 0..99 */
	uint32_t ooo_slo_us;   /* ooo queue: 0 the class's */
#define BENCH_OOO_DEFAULT_SLO_US 10000u /* without --slo-us: oood's default slo_us (oood.conf(5)) */
	int32_t stream_prio;   /* direct, mps: 1 the greatest stream priority, 0 the default */
	uint32_t reserved;
	struct wl_params p;
	char libcuda[PATH_MAX];
	char socket[BENCH_SOCK_MAX];
};

enum tmsg_type { TM_READY = 1, TM_FAIL, TM_PROGRESS, TM_RESULT };

struct tmsg_hdr {
	uint32_t type, len; /* len: payload bytes */
};

struct tm_progress {
	uint64_t completed; /* requests completed inside the measured window so far */
};

struct tm_result {
	uint64_t requests;   /* in the latency population (see bench/README.md) */
	uint64_t completed;  /* completed inside the measured window: the throughput count */
	uint64_t slo_met;    /* of `requests`, those within the SLO */
	uint64_t unfinished; /* open loop: arrived in the window, not done by the end of the drain */
	uint64_t errors;     /* failed requests (the tenant stops at the first) */
	uint64_t checks, check_failures;
	char error[BENCH_ERR_MAX]; /* the first failure, "" if none */
	struct hist h;
};

/* ---- results -------------------------------------------------------------------- */

/* One (workload, mode, tenants, class) row. */
struct bench_row {
	enum bench_wl wl;
	enum bench_mode mode;
	unsigned tenants;
	enum bench_class klass;
	unsigned class_tenants;
	enum bench_wl request; /* what this class's tenants run */
	bool open;
	double rate; /* per tenant, open loop */
	double duration, warmup;
	uint64_t requests, completed, slo_met, unfinished, errors, checks, check_failures;
	uint64_t slo_us;
	double tenant_min_rps, tenant_max_rps;
	bool skipped;
	char error[BENCH_ERR_MAX];
	struct hist h;
};

struct bench_device {
	bool probed; /* the probe ran and found device 0 */
	char probe_error[BENCH_ERR_MAX];
	char name[256];
	char uuid[48];
	int sm_count, cc_major, cc_minor, clock_khz, cuda_driver;
	int mem_clock_khz, mem_bus_bits; /* peak memory clock and bus width: the peak bandwidth (0: unknown) */
	uint64_t mem_total;
	/* from nvidia-smi, when it exists: "" or -1 otherwise */
	char driver[64];
	int clock_sm, clock_max_sm, clock_sm_end;
};

struct bench_meta {
	char commit[64], build_commit[64];
	char date[32], end_date[32];
	char hostname[256], kernel[128];
	int cpus;
	struct bench_device dev;
	char oood_socket[BENCH_SOCK_MAX];
	bool oood_private;
	char oood_binary[PATH_MAX];
	char mps_control[PATH_MAX];
	double wall_s;
};

struct bench_report {
	const struct bench_opts *o;
	struct bench_meta meta;
	struct bench_row *rows;
	size_t nrows, cap;
};

/* ---- util.c --------------------------------------------------------------------- */

__attribute__((format(printf, 1, 2))) void bench_err(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) int bench_usage_error(const char *fmt, ...);
int64_t bench_now_ns(void);
void bench_sleep_until(int64_t t_ns);
int bench_read_full(int fd, void *buf, size_t len);        /* 0, -EPIPE at EOF, or -errno */
int bench_write_full(int fd, const void *buf, size_t len); /* 0 or -errno */
/* PATH lookup, then extra dirs (":"-separated, may be NULL); 0 with out filled, or -ENOENT. */
int bench_find_exe(const char *name, const char *extra, char *out, size_t cap);
/* Run argv (PATH searched), stdout into out (NUL-terminated), within timeout_ms. Exit status or -errno. */
int bench_capture(char *const argv[], const char *ld_dir, char *out, size_t cap, int timeout_ms);
/* Remove a directory tree we made (files and subdirectories, no symlinks followed). */
void bench_rmtree(const char *dir);
/* SplitMix64: the bench's random numbers, reproducible from --seed. */
uint64_t bench_rand(uint64_t *state);
double bench_rand_unit(uint64_t *state); /* (0, 1] */
void bench_iso_date(char *buf, size_t cap);
/* Put dir in front of LD_LIBRARY_PATH (in a child, for tools next to the driver library). */
void bench_ld_prepend(const char *dir);
extern const char *bench_cur_workload; /* for "Try 'ooo-bench WORKLOAD --help'" */
extern const char *bench_argv0;        /* how ooo-bench was run, for the recorded command line */

/* ---- cli.c ---------------------------------------------------------------------- */

bool bench_is_gpu_workload(const char *name);
int bench_gpu_main(int argc, char **argv);
void bench_gpu_usage(FILE *f);
int bench_parse_params(const char *spec, struct wl_params *p, char *why, size_t cap);

/* ---- driver.c ------------------------------------------------------------------- */

int bench_run(const struct bench_opts *o);
extern volatile int bench_stop; /* set by SIGINT, SIGTERM, SIGHUP, SIGQUIT */

/* ---- env.c: what surrounds the tenants ------------------------------------------- */

struct bench_mps {
	char dir[256];
	char pipe_dir[PATH_MAX], log_dir[PATH_MAX];
	bool running, keep;
};

struct bench_oood {
	char dir[PATH_MAX];
	char sock[BENCH_SOCK_MAX];
	char admin[BENCH_SOCK_MAX];
	bool made_dir, keep;
	bool lease; /* started for lease mode: MPS on, no executor */
	pid_t pid;
};

void bench_probe_device(const char *libcuda, struct bench_device *d);
void bench_smi_clocks(struct bench_device *d, bool end, const char *libcuda);
void bench_meta_init(struct bench_meta *m, const struct bench_opts *o);
int bench_mps_start(struct bench_mps *m, const char *control, const char *libcuda, char *why, size_t cap);
void bench_mps_stop(struct bench_mps *m, const char *control, const char *libcuda);
/* lease: oood runs MPS (control) and no executor; ready when MPS is. */
int bench_oood_start(struct bench_oood *d, const struct bench_opts *o, bool lease, const char *control, char *why,
		     size_t cap);
void bench_oood_stop(struct bench_oood *d);
/* A session and a queue on sock work: 0, or negative with why. */
int bench_ooo_check(const char *sock, char *why, size_t cap);

/* ---- report.c ------------------------------------------------------------------- */

void bench_print_table(FILE *f, const struct bench_report *r);
int bench_write_json(const char *path, const struct bench_report *r);
int bench_write_csv(const char *path, const struct bench_report *r);
int bench_write_plot(const char *path, const struct bench_report *r);
const struct bench_row *bench_find_row(const struct bench_report *r, enum bench_wl wl, enum bench_mode m,
				       unsigned tenants, enum bench_class c);
double bench_row_rps(const struct bench_row *row);

/* ---- workloads.c: were the kernels embedded (nvcc at build time)? ----------------- */

bool bench_have_kernels(void);

/* ---- tenant.c ------------------------------------------------------------------- */

int bench_tenant_main(int argc, char **argv);

#endif
