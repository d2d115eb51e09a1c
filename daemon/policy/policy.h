/* SPDX-License-Identifier: MIT */
/*
 * Policy: the daemon settings and tenant classes of oood, parsed from INI text
 * (libinih). Pure: no I/O besides policy_load_file() reading the file, and
 * user/group name lookups (getpwnam_r/getgrnam_r) while parsing.
 *
 * Owner: the server holds the current policy; a reload builds a new one and
 * swaps it in only if it parsed without error.
 */
#ifndef OOO_POLICY_H
#define OOO_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ooo/proto.h>

#define POLICY_MAX_CLASSES 256
#define POLICY_MAX_MATCH 1024 /* ids per match list */
#define POLICY_MAX_CGROUPS 64 /* match_cgroup patterns per class */
#define POLICY_MAX_FILE (1u << 20)
#define POLICY_MAX_LINE 190 /* below libinih's INI_MAX_LINE */
#define POLICY_KERNEL_TIME_LIMIT_MS_DEFAULT 10000 /* [daemon] kernel_time_limit_ms */
#define POLICY_HANG_STRIKES_DEFAULT 3             /* [daemon] hang_strikes */
#define POLICY_HANG_WINDOW_S_DEFAULT 600          /* [daemon] hang_window_s */
#define POLICY_STREAMS_DEFAULT 4 /* [daemon] streams: an executor's bundles run on that many streams */
#define POLICY_WAIT_SPIN_US_DEFAULT 1000 /* [class] wait_spin_us: libooo's spin before it sleeps, as it always did */
#define POLICY_SERVING_THREADS_DEFAULT 2 /* [daemon] serving_threads (measured on the H200: bench/results/2026-12-05-serving-threads-*) */
#define POLICY_SHARD_SESSIONS_DEFAULT 16 /* [daemon] shard_sessions: a serving thread takes that many before the next one takes any */
/* classes with partition = yes: the executor's reserved partitions (the shared one besides) */
#define POLICY_MAX_PARTITIONS 7
#define POLICY_MAX_DOMAINS 64 /* [daemon] max_domains: executors per GPU besides the spare */

enum policy_log_level { POLICY_LOG_ERR = 3, POLICY_LOG_WARN = 4, POLICY_LOG_INFO = 6, POLICY_LOG_DEBUG = 7 };

struct ooo_class {
	char name[OOO_NAME_MAX];
	bool match_all;   /* match_uid = * (or match_gid = *) */
	uint32_t *uids;   /* from match_uid and match_user */
	size_t nuids;
	uint32_t *gids;   /* from match_gid and match_group */
	size_t ngids;
	/*
	 * match_cgroup: fnmatch(3) patterns (flags 0: '*' also matches '/'),
	 * each starting with '/', matched against the peer's whole cgroup v2
	 * path. With patterns, a peer must be in a matching cgroup, and match
	 * the id lists too when the class has any (policy_class_matches_cgroup).
	 */
	char **cgroups;
	size_t ncgroups;
	int tenant_by; /* enum cgroup_tenant_by (cgroup.h): what splits the class's peers into tenants */
	bool admit;       /* admit = no refuses matching peers outright */
	int32_t priority; /* 0..99, higher first; default 50 */
	uint32_t slo_us;  /* 1..60000000; default 10000 */
	uint32_t sm_share; /* 1..100 percent; default 100 */
	uint64_t limit[OOO_RES_COUNT]; /* per tenant, indexed by enum ooo_res */
	bool trace_launches; /* telemetry: uprobe its sessions' cuLaunchKernel calls (default no) */
	bool binary_modules; /* may load CUBIN and FATBIN modules (default yes): the JIT cannot analyse or fence them */
	bool partition;      /* its bundles run on SMs reserved for it: sm_share percent of each GPU (default no) */
	char domain[OOO_DOMAIN_MAX]; /* its trust domain; "" (default, or "uid"): one domain per uid */
	bool fence; /* its tenants run fenced in the GPU's fenced executor, whatever their domain (default no) */
	/* native tenants (ooo-run leases, daemon/lease.c) */
	uint32_t native_sm;       /* share of a lease that asks for none; default 25; never above sm_share */
	uint64_t native_mem;      /* pinned device memory limit of a lease that asks for none; 0: mem_limit */
	uint32_t native_priority; /* enum ooo_lease_priority: NORMAL (default) or BELOW */
	uint32_t max_leases;      /* live leases per tenant; default 16 */
	/*
	 * The longest libooo spins (yielding its CPU) waiting for a completion
	 * before it sleeps on the completion doorbell; 0..100000, default 1000.
	 * Spinning tenants share the host's CPUs with the executor and with each
	 * other: a best-effort class can give them up.
	 */
	uint32_t wait_spin_us;
};

enum policy_mps_mode { POLICY_MPS_AUTO = 0, POLICY_MPS_YES, POLICY_MPS_NO };

/* [mps]: the MPS control daemon of daemon/mps.c and the leases of daemon/lease.c */
struct policy_mps {
	int enabled;               /* enum policy_mps_mode; auto: where the control program is found */
	char control[OOO_PATH_MAX]; /* absolute path of nvidia-cuda-mps-control; "" = search */
	bool multiuser;            /* -M: clients of every uid share one server (default yes) */
	bool executor_client;      /* executors are MPS clients at 100% (default yes) */
	uint32_t max_clients;      /* MPS clients per GPU (48 on the H200) */
	uint32_t executor_reserve; /* percent of each GPU no lease may reserve (default 0) */
	uint32_t evict_grace_ms;   /* oooctl evict: terminate_client, then SIGTERM, then SIGKILL this far apart */
	uint32_t stop_grace_ms;    /* shutdown: leased clients get this long, then terminate_client */
	uint32_t devices;          /* GPUs to lease on; 0: as the executor reports, else /dev/nvidiaN */
	bool feedback;             /* telemetry feedback on the share offered to a class (default yes) */
	uint32_t feedback_step;    /* percent added to a class's offer per slow lease */
};

enum policy_launch_probes {
	POLICY_LAUNCH_TRACKED = 0, /* per process, for tracked pids that ask for it (default) */
	POLICY_LAUNCH_ALL,         /* every process that maps libcuda */
	POLICY_LAUNCH_OFF,
};

/* [telemetry]: the eBPF probes of daemon/telemetry.c */
struct policy_telemetry {
	bool enabled;              /* load the probes when privileged (default yes) */
	bool all_processes;        /* every process on the host, not only tracked ones */
	int launch_probes;         /* enum policy_launch_probes */
	char libcuda[OOO_PATH_MAX]; /* absolute path; "" = search */
	uint32_t slow_sync_us;     /* a sync slower than this is an event */
	uint32_t max_processes;    /* per-process records in the maps */
	uint32_t max_tracked;      /* pids in the filter set */
	uint32_t ringbuf_kb;       /* ring buffer of slow-sync events */
};

/*
 * [metrics] listen: oood's Prometheus listener (daemon/metrics.c), off
 * unless given. "HOST:PORT" with an IPv4 address or "[IPv6]:PORT"; a port
 * alone (or ":PORT") means 127.0.0.1. No host names: the parser resolves
 * nothing.
 */
#define POLICY_LISTEN_MAX 64 /* "[IPv6]:PORT" as written back, with its NUL */
struct policy_metrics {
	bool enabled;        /* listen was given */
	int family;          /* AF_INET or AF_INET6 */
	uint8_t addr[16];    /* network byte order; the first 4 bytes for AF_INET */
	uint16_t port;       /* host byte order, 1..65535 */
	char listen[POLICY_LISTEN_MAX]; /* the address written back: "127.0.0.1:9400", "[::1]:9400" */
};

/*
 * executor_uids: by default 60928-61183, between the ranges systemd gives
 * systemd-homed (60001-60513) and DynamicUser (61184-65519), and below
 * 65536, so that it maps into a user namespace's usual 64Ki. One uid per
 * executor slot (gpu.h's EXEC_MAX).
 */
#define POLICY_EXEC_UID_LO 60928u
#define POLICY_EXEC_UIDS_MAX 256u

struct policy {
	char source[OOO_PATH_MAX]; /* file path or "(embedded defaults)" */
	/* [daemon] */
	bool has_admin_group;
	gid_t admin_gid;
	char admin_group[OOO_NAME_MAX];
	uint32_t max_sessions;       /* all tenant sessions together */
	uint32_t max_admin_sessions;
	uint32_t hello_timeout_ms;   /* a connection must say hello within this */
	uint32_t shutdown_grace_ms;  /* SIGTERM: wait this long for peers */
	int log_level;               /* enum policy_log_level */
	bool executor;               /* run GPU executors (default yes) */
	bool fuse;                   /* executors coalesce launches into fused kernels (default yes) */
	bool fuse_copies;            /* and small copies, as launches of their copy kernel (default yes) */
	bool chain_launches;         /* a queue's consecutive launches may run chained in one fused bundle (default yes) */
	bool spread_lanes;           /* bundles of independent queues on their own streams where that pays (default no) */
	uint32_t urgent_reserve;     /* in-flight bundles per partition kept for queues above the lowest priority tier (0 .. 8, default 0) */
	uint32_t burst_wait_us;      /* a lone head launch of a chaining class waits this long without a new command for the rest of its burst (0 .. 50, default 0: off) */
	uint32_t kernel_time_limit_ms; /* a bundle running longer is taken as hung and its executor replaced (0: never) */
	uint32_t hang_strikes;  /* a tenant (uid) whose work hung this many times within hang_window_s is barred (0: never) */
	uint32_t hang_window_s; /* ... from attaching data paths until hang_window_s after its last hang */
	uint32_t streams;            /* streams an executor runs its bundles on, concurrently (1 .. 8) */
	uint32_t serving_threads;    /* threads an executor serves its sessions with, each a shard of them (1 .. 8) */
	uint32_t shard_sessions;     /* a new session joins the first shard with fewer sessions (0: the fewest) */
	uint32_t max_domains;        /* executors (trust domains) per GPU, besides the spare (1 .. POLICY_MAX_DOMAINS) */
	uint32_t domain_idle_ms;     /* a domain's executor without sessions this long is stopped (0: never) */
	/*
	 * Executors drop root to uids of their own: executor slot i runs as
	 * exec_uid_lo + i (and gid), i < exec_uid_n, so that no tenant and no
	 * other domain's executor shares its uid (they could signal or ptrace
	 * it). A peer whose uid is in the range is refused (policy_exec_uid).
	 */
	uint32_t exec_uid_lo, exec_uid_n;
	char warning[256]; /* the first thing worth saying about a valid file ("" if none), e.g. an obsolete key */
	char libcuda[OOO_PATH_MAX];  /* name or absolute path given to dlopen */
	struct policy_telemetry telemetry;
	struct policy_mps mps;
	struct policy_metrics metrics;
	/* [class NAME] sections, in file order: first match wins */
	struct ooo_class *classes;
	size_t nclasses;
};

struct policy_error {
	int line;      /* 1-based line of the first error; 0 if not tied to a line */
	char msg[256]; /* the reason, e.g. "unknown key 'slo' in [class gpu]" */
};

/* The embedded default configuration text (generated from daemon/oood.conf). */
extern const char policy_default_text[];

/*
 * Parse INI text of `len` bytes (need not be NUL-terminated); `source` is
 * recorded in the result. On success stores a new policy in *out (free with
 * policy_free) and returns 0. On error returns -EINVAL (or -ENOMEM, -E2BIG
 * for text over POLICY_MAX_FILE) and fills *err; *out is untouched.
 */
int policy_parse(const char *text, size_t len, const char *source, struct policy **out,
		 struct policy_error *err);

/*
 * Read and parse a file. Returns 0, -errno of open/read (err->msg says
 * which), or what policy_parse returns.
 */
int policy_load_file(const char *path, struct policy **out, struct policy_error *err);

/* Parse the embedded defaults. Returns 0 or -ENOMEM. */
int policy_load_default(struct policy **out);

/* Frees a policy. Accepts NULL. Returns NULL. */
struct policy *policy_free(struct policy *p);

/*
 * The first class that matches a peer with this uid, primary gid,
 * supplementary groups and cgroup v2 path (NULL or "": unknown, and then
 * no class with match_cgroup matches), or NULL if none does. A matching
 * class with admit = no also yields NULL (the peer is refused).
 */
const struct ooo_class *policy_match_cgroup(const struct policy *p, uid_t uid, gid_t gid, const gid_t *groups,
					    size_t ngroups, const char *cgroup);

/* policy_match_cgroup of a peer whose cgroup is unknown. */
const struct ooo_class *policy_match(const struct policy *p, uid_t uid, gid_t gid, const gid_t *groups,
				     size_t ngroups);

/* Whether uid is one of the executors' (executor_uids): such a peer is refused. */
bool policy_exec_uid(const struct policy *p, uid_t uid);

/*
 * Whether the class's match keys take this peer (admit is not looked at):
 * with match_cgroup, the cgroup (NULL or "": unknown, never matched) must
 * match one of its patterns, and when the class also has match_uid,
 * match_gid, match_user or match_group, one of those must match too;
 * without match_cgroup, one of the id keys must match.
 */
bool policy_class_matches_cgroup(const struct ooo_class *cls, uid_t uid, gid_t gid, const gid_t *groups,
				 size_t ngroups, const char *cgroup);

/* policy_class_matches_cgroup of a peer whose cgroup is unknown. */
bool policy_class_matches(const struct ooo_class *cls, uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups);

/* Whether a class has match_cgroup or a tenant_by other than uid: then peers' cgroups matter. */
bool policy_uses_cgroups(const struct policy *p);

/* The class called `name`, or NULL. */
const struct ooo_class *policy_find_class(const struct policy *p, const char *name);

/*
 * Parse a [metrics] listen value into *m (enabled set). Returns 0, or
 * -EINVAL with why (cap bytes) saying what is wrong.
 */
int policy_parse_listen(const char *s, struct policy_metrics *m, char *why, size_t cap);

/* Parse "123", "64K", "16M", "2G", "1T" (powers of 1024). Returns 0 or -EINVAL/-ERANGE. */
int policy_parse_size(const char *s, uint64_t *out);

#endif /* OOO_POLICY_H */
