/* SPDX-License-Identifier: MIT */
/*
 * ooo wire protocol: the messages exchanged over the Unix SOCK_SEQPACKET
 * sockets of oood (oood.sock for tenants, admin.sock for operators).
 *
 * Every message is one datagram: a fixed header followed by a payload whose
 * size and layout are fixed by the message type. Integers are in host byte
 * order (both ends are on the same host). Strings are NUL-terminated inside
 * fixed-size fields; a field without its NUL is malformed.
 *
 * Requests carry a sequence number chosen by the sender; the reply carries
 * the same sequence number, the request's type with OOO_MSG_REPLY set, and a
 * status: 0, or a negative errno / OOO_E* code. A reply with a negative
 * status carries a struct ooo_msg_error payload (a readable reason) instead
 * of the type's normal reply payload.
 *
 * The daemon may send unsolicited OOO_MSG_NOTICE messages (sequence 0).
 */
#ifndef OOO_PROTO_H
#define OOO_PROTO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OOO_PROTO_MAGIC 0x314f4f4fu /* "OOO1" in memory on little endian */
#define OOO_PROTO_VERSION 1u

/* Largest datagram either side sends or accepts, header included. */
#define OOO_MSG_MAX 65536u
#define OOO_NAME_MAX 64u  /* class and session names, NUL included */
#define OOO_DOMAIN_MAX 32u /* trust domain names ("uid:UID" or a class's domain), NUL included */
/* a tenant's key as the admin lists show it: a pod UID, or a cgroup path ("..." and its end when longer), NUL included */
#define OOO_TENANT_KEY_MAX 128u
#define OOO_DOMAIN_FENCED "*fenced" /* the executor of the classes with fence = yes (no class domain has a '*') */
#define OOO_PING_MAX 4096u /* largest ping payload */
#define OOO_ERRMSG_MAX 256u
#define OOO_PATH_MAX 256u

/* Message types. Admin types are only accepted on admin.sock. */
enum ooo_msg_type {
	OOO_MSG_HELLO = 1,  /* tenant: struct ooo_msg_hello -> ooo_msg_hello_reply */
	OOO_MSG_PING = 2,   /* tenant or admin: 0..OOO_PING_MAX opaque bytes, echoed */
	OOO_MSG_BYE = 3,    /* tenant or admin: no payload; empty reply, then close */
	OOO_MSG_NOTICE = 4, /* daemon -> peer, unsolicited: struct ooo_msg_notice */
	OOO_MSG_BUF_ALLOC = 5,  /* tenant: ooo_msg_buf_alloc -> ooo_msg_buf */
	OOO_MSG_BUF_FREE = 6,   /* tenant: ooo_msg_buf_ref -> empty */
	OOO_MSG_BUF_EXPORT = 7, /* tenant: ooo_msg_buf_ref -> ooo_msg_buf, with the fd (SCM_RIGHTS) */
	OOO_MSG_ATTACH = 8,     /* tenant: ooo_msg_attach -> ooo_msg_attach_reply + 2 fds: area, doorbell (shm.h) */
	OOO_MSG_QUEUE_CREATE = 9,  /* tenant: ooo_msg_queue_create -> ooo_msg_queue_info */
	OOO_MSG_QUEUE_DESTROY = 10, /* tenant: ooo_msg_queue -> empty */
	OOO_MSG_MODULE_LOAD = 11,   /* tenant: ooo_msg_module_load + the image as a sealed memfd -> ooo_msg_module */
	OOO_MSG_MODULE_UNLOAD = 12, /* tenant: ooo_msg_module -> empty */
	OOO_MSG_KERNEL_GET = 13,    /* tenant: ooo_msg_kernel_get -> ooo_msg_kernel */
	OOO_MSG_HOST_ALLOC = 14,    /* tenant: ooo_msg_host -> ooo_msg_host + the region's memfd */
	OOO_MSG_HOST_FREE = 15,     /* tenant: ooo_msg_host (region) -> empty */
	OOO_MSG_LEASE = 16,         /* tenant (ooo-run): ooo_msg_lease_req -> ooo_msg_lease; binds the peer's pid */

	OOO_MSG_STATUS = 32,   /* admin: no payload -> struct ooo_msg_status */
	OOO_MSG_TENANTS = 33,  /* admin: ooo_msg_list_req -> ooo_msg_list + tenant recs */
	OOO_MSG_SESSIONS = 34, /* admin: ooo_msg_list_req -> ooo_msg_list + session recs */
	OOO_MSG_RELOAD = 35,   /* admin: no payload -> struct ooo_msg_reload_reply */
	OOO_MSG_DEVICES = 36,  /* admin: ooo_msg_list_req -> ooo_msg_list + device recs */
	OOO_MSG_SCHED = 37,    /* admin: ooo_msg_list_req -> ooo_msg_list + ooo_sched_rec, one per executor */
	OOO_MSG_TELEMETRY = 38, /* admin: no payload -> struct ooo_msg_telemetry */
	OOO_MSG_PROCS = 39,     /* admin: ooo_msg_list_req -> ooo_msg_list + ooo_proc_rec, by pid */
	OOO_MSG_TRACE = 40,     /* admin: struct ooo_msg_trace -> struct ooo_msg_trace_reply */
	OOO_MSG_LEASES = 41,    /* admin: ooo_msg_list_req -> ooo_msg_list + ooo_lease_rec, by lease id */
	OOO_MSG_EVICT = 42,     /* admin: ooo_msg_evict -> ooo_msg_evict_reply */
	OOO_MSG_MPS = 43,       /* admin: no payload -> struct ooo_msg_mps */
	OOO_MSG_MPS_RUN = 44,   /* admin: ooo_msg_mps_run -> ooo_msg_mps_run_reply (one checked control command) */
	OOO_MSG_PARTITIONS = 45, /* admin: ooo_msg_list_req -> ooo_msg_list + ooo_part_gpu_rec, one per executor */
	OOO_MSG_PARTITION_SET = 46, /* admin: ooo_msg_partition_set -> ooo_msg_partition_set_reply */
	OOO_MSG_PARDON = 47,        /* admin: ooo_msg_pardon -> ooo_msg_pardon_reply */
};

#define OOO_MSG_REPLY 0x8000u /* set in the type of every reply */

struct ooo_msg_hdr {
	uint32_t magic;   /* OOO_PROTO_MAGIC */
	uint16_t version; /* OOO_PROTO_VERSION of the sender */
	uint16_t type;    /* enum ooo_msg_type, | OOO_MSG_REPLY for replies */
	uint32_t len;     /* whole datagram, header included */
	uint32_t seq;     /* request: sender's choice; reply: the request's */
	int32_t status;   /* request: 0; reply: 0 or negative error code */
	uint32_t flags;   /* must be 0 */
};

/* Payload of any reply with a negative status. */
struct ooo_msg_error {
	char msg[OOO_ERRMSG_MAX];
};

/* First message on oood.sock. Anything else first is refused. */
struct ooo_msg_hello {
	uint32_t flags; /* must be 0 */
	uint32_t reserved;
	char name[OOO_NAME_MAX]; /* free-form label shown by oooctl; may be "" */
};

/* Resource kinds charged to a tenant, in the order of the limit arrays. */
enum ooo_res {
	OOO_RES_SESSIONS = 0,
	OOO_RES_QUEUES,
	OOO_RES_BUFFERS,
	OOO_RES_MEM_BYTES,
	OOO_RES_MODULES,
	OOO_RES_INFLIGHT,
	OOO_RES_COUNT
};

#define OOO_DEVICE_ANY 0xffffffffu /* let the daemon place the buffer */

struct ooo_msg_buf_alloc {
	uint64_t size;   /* bytes, > 0; rounded up to the device's granularity */
	uint32_t flags;  /* must be 0 */
	uint32_t device; /* GPU index, or OOO_DEVICE_ANY */
};

struct ooo_msg_buf_ref {
	uint64_t id;
};

struct ooo_msg_buf {
	uint64_t id;
	uint64_t addr; /* device address, valid in the executor (and in kernels) */
	uint64_t size; /* after rounding: what is charged to mem_limit */
	uint32_t device;
	uint32_t reserved;
};

/* Set up the session's data path (shared rings) on a GPU; once per session. */
struct ooo_msg_attach {
	uint32_t device; /* GPU index, or OOO_DEVICE_ANY */
	uint32_t flags;  /* must be 0 */
};

struct ooo_msg_attach_reply {
	uint64_t area_size; /* the memfd's size; layout in <ooo/shm.h> */
	uint32_t sq_entries;
	uint32_t cq_entries;
	uint32_t device;
	uint32_t max_queues;
};

struct ooo_msg_queue {
	uint32_t queue; /* index used in struct ooo_sqe */
	uint32_t reserved;
};

struct ooo_msg_queue_create {
	int32_t priority; /* 0..99, or -1: the class's; never above the class's */
	uint32_t slo_us;  /* 0: the class's; never tighter than the class's */
	uint32_t flags;   /* must be 0 */
	uint32_t reserved;
};

struct ooo_msg_queue_info {
	uint32_t queue;
	int32_t priority; /* as applied */
	uint32_t slo_us;  /* as applied */
	uint32_t reserved;
};

enum ooo_module_kind {
	OOO_MODULE_PTX = 1,
	OOO_MODULE_CUBIN = 2,
	OOO_MODULE_FATBIN = 3,
	OOO_MODULE_CUDA_C = 4, /* compiled by NVRTC for the device */
};

#define OOO_MODULE_MAX_BYTES (256u << 20)
#define OOO_KERNEL_NAME_MAX 256u
#define OOO_MAX_PARAMS 64u

struct ooo_msg_module_load {
	uint32_t kind; /* enum ooo_module_kind */
	uint32_t flags; /* must be 0 */
	uint64_t len;   /* image bytes in the memfd */
};

struct ooo_msg_module {
	uint32_t module;
	uint32_t reserved;
};

struct ooo_msg_kernel_get {
	uint32_t module;
	uint32_t reserved;
	char name[OOO_KERNEL_NAME_MAX];
};

struct ooo_msg_kernel {
	uint32_t kernel; /* handle for launches */
	uint32_t nparams;
	uint32_t param_size; /* bytes of the parameter block */
	uint32_t max_threads;
	uint32_t static_shmem;
	uint32_t max_dyn_shmem;
	uint32_t regs;
	uint32_t reserved;
	uint32_t param_offset[OOO_MAX_PARAMS];
	uint32_t param_bytes[OOO_MAX_PARAMS];
};

/* Zero-copy host memory: a region shared with the executor and registered for DMA. */
#define OOO_HOST_REGIONS 64u
#define OOO_HOST_MAX_BYTES (16ull << 30)

struct ooo_msg_host {
	uint32_t region; /* reply, FREE: the region's index */
	uint32_t reserved;
	uint64_t size;   /* ALLOC: bytes wanted; reply: after rounding */
};

struct ooo_msg_hello_reply {
	uint64_t session_id;
	uint32_t daemon_version; /* OOO_VERSION_NUM of the daemon */
	uint32_t max_msg;        /* largest request datagram the daemon accepts */
	char class_name[OOO_NAME_MAX];
	int32_t priority;
	uint32_t slo_us;
	uint32_t sm_share; /* percent */
	/*
	 * The class's wait_spin_us (oood.conf): how long the client library may
	 * spin waiting for a completion before it sleeps (0..100000), with OOO_HELLO_SPIN_SET
	 * (a daemon that predates it sends 0: the library keeps its own 1 ms).
	 */
	uint32_t wait_spin_us;
	uint64_t limit[OOO_RES_COUNT]; /* per tenant, indexed by enum ooo_res */
};
#define OOO_HELLO_SPIN_SET 0x80000000u

enum ooo_notice_kind {
	OOO_NOTICE_SHUTDOWN = 1, /* daemon is stopping; the session will close */
	OOO_NOTICE_REVOKED = 2,  /* policy reload no longer admits this peer */
	OOO_NOTICE_DEVRESET = 3, /* the session's GPU executor was replaced: commands in flight failed */
	OOO_NOTICE_LOST = 4,     /* the replacement executor could not take the session's data path back: the session closes */
};

struct ooo_msg_notice {
	uint32_t kind; /* enum ooo_notice_kind */
	uint32_t reserved;
	char msg[OOO_ERRMSG_MAX];
};

struct ooo_msg_status {
	char version[32]; /* daemon version string */
	uint64_t pid;
	uint64_t uptime_ns;
	uint64_t policy_generation; /* 1 at start, +1 per successful reload */
	uint64_t policy_loaded_ns;  /* CLOCK_REALTIME of the last load */
	char policy_source[OOO_PATH_MAX]; /* file path or "(embedded defaults)" */
	uint32_t classes;
	uint32_t tenants;
	uint32_t sessions;
	uint32_t max_sessions;
	uint32_t admin_sessions;
	uint32_t max_admin_sessions;
	uint64_t sessions_total;   /* sessions admitted since start */
	uint64_t sessions_refused; /* hello refused: policy, limits, bad hello */
	uint64_t msgs_in;
	uint64_t msgs_out;
	uint64_t proto_errors; /* malformed messages received */
	uint64_t reloads_failed;
	uint32_t gpus;       /* devices an executor has opened */
	uint32_t gpus_ready; /* of those, executors serving now */
	char gpu_reason[OOO_ERRMSG_MAX]; /* why no GPU is ready; "" when one is */
};

/* Paged list request: entries [offset, offset + count) of a snapshot. */
struct ooo_msg_list_req {
	uint32_t offset;
	uint32_t reserved;
};

/* List reply header, followed by `count` records of the list's type. */
struct ooo_msg_list {
	uint32_t total; /* entries in the whole list */
	uint32_t offset;
	uint32_t count; /* records in this message */
	uint32_t rec_size;
};

struct ooo_tenant_rec {
	uint32_t uid;
	uint32_t gid; /* gid of the tenant's first session */
	char class_name[OOO_NAME_MAX];
	uint64_t used[OOO_RES_COUNT];
	uint64_t limit[OOO_RES_COUNT];
	/* "" (the class splits tenants by uid), a pod UID, or a cgroup path (starts with '/'): oood.conf tenant_by */
	char key[OOO_TENANT_KEY_MAX];
};

struct ooo_session_rec {
	uint64_t id;
	uint32_t uid;
	uint32_t gid;
	uint32_t pid;
	uint32_t reserved;
	uint64_t age_ns;
	uint64_t msgs_in;
	char name[OOO_NAME_MAX];
	char class_name[OOO_NAME_MAX];
	uint64_t used[OOO_RES_COUNT];
	char domain[OOO_DOMAIN_MAX]; /* its trust domain: its executors are that domain's */
	char tenant_key[OOO_TENANT_KEY_MAX]; /* its tenant's key (ooo_tenant_rec.key) */
};

enum ooo_device_state {
	OOO_DEV_STARTING = 1, /* executor starting */
	OOO_DEV_READY,        /* executor serving */
	OOO_DEV_RESTARTING,   /* executor died; restarting after a backoff */
	OOO_DEV_FAILED,       /* no driver / no device: not restarted */
	OOO_DEV_STOPPED,      /* daemon shutting down */
};

/* One executor: of one GPU (device) and one trust domain (domain; "" for the GPU's spare, not yet claimed). */
struct ooo_device_rec {
	uint32_t index;  /* executor slot */
	uint32_t device; /* the GPU */
	char domain[OOO_DOMAIN_MAX];
	uint32_t state; /* enum ooo_device_state */
	uint32_t pid;   /* executor, 0 if none */
	uint32_t restarts;
	uint32_t sm_count;
	uint32_t cc_major, cc_minor;
	int32_t driver_version; /* e.g. 13000 */
	uint64_t mem_total;
	uint64_t mem_free; /* when the executor opened the device */
	uint64_t up_ns;    /* since the executor became ready, 0 if not ready */
	uint8_t uuid[16];
	char name[96];
	char reason[OOO_ERRMSG_MAX]; /* last failure, "" if none */
};

/*
 * The scheduler's counters of one executor, as it last reported them
 * (about once a second while it runs). All counts are cumulative since the
 * executor started; rates come from two snapshots (snapshot_ns apart).
 */
#define OOO_SCHED_CLASSES 16u   /* per-class rows; further classes are summed into the last, named "" */
/* log2 microsecond histograms (scheduler and telemetry): bucket 0 < 1 us, b in [2^(b-1), 2^b) us, the last open */
#define OOO_TM_BUCKETS 32
#define OOO_SCHED_PARTITIONS 8u
/* A tenant class's priority (oood.conf priority, 0..99, higher first) when the policy names none */
#define OOO_PRIORITY_DEFAULT 50u
/* Stream tiers of the coalescer's bundles: below OOO_PRIORITY_DEFAULT, at it, above it */
#define OOO_PRIO_TIERS 3u
/* Streams of a partition at one priority tier (oood.conf streams) at most */
#define OOO_SCHED_STREAMS 8u
/* A command's stages in the executor (docs/telemetry.md), as the per-class histograms index them */
enum ooo_cmd_stage { OOO_STAGE_SUBMIT, OOO_STAGE_QUEUE, OOO_STAGE_RUN, OOO_STAGE_NOTIFY, OOO_CMD_STAGES };

struct ooo_sched_class_stats {
	char name[32];           /* tenant class, "" for the overflow row */
	uint32_t slo_us;         /* the largest SLO seen on its queues */
	uint32_t reserved;
	uint64_t launches;       /* launches completed */
	uint64_t deadline_misses; /* completed after their deadline (as the executor saw the completion) */
	uint64_t lat_sum_ns;     /* submission taken -> completion seen, summed */
	uint64_t lat_max_ns;
	/*
	 * The per-command stages of struct ooo_sched_counters (cmd_*_hist), for
	 * the commands of this class's queues only: where one class's time goes
	 * when the executor-wide figures are another class's (a latency-critical
	 * tenant among many best-effort ones).
	 */
	uint64_t cmd_stage_hist[OOO_CMD_STAGES][OOO_TM_BUCKETS]; /* indexed by enum ooo_cmd_stage */
};

struct ooo_sched_part_stats {
	char name[32];           /* the tenant class it is reserved for; "" for the shared partition (index 0) */
	uint32_t sms;            /* SMs of the partition */
	uint32_t max_inflight;   /* bundles in flight at most */
	uint32_t reserve_inflight; /* more for bundles above the lowest priority tier (oood.conf urgent_reserve) */
	uint32_t reserved_;      /* zero */
	uint64_t bundles;        /* dispatched on it */
	uint64_t busy_ns;        /* GPU time of its bundles (CUDA event timings), summed */
};

struct ooo_sched_counters {
	uint64_t snapshot_ns;    /* the executor's CLOCK_MONOTONIC when taken */
	uint64_t up_ns;          /* since the executor's scheduler started */
	uint64_t bundles;        /* dispatches: fused launches plus launches that went alone */
	uint64_t fused_bundles;
	uint64_t launches;       /* tenant launches through the scheduler */
	uint64_t fused_launches; /* of those, run inside a fused launch */
	uint64_t direct_launches; /* launches not fusible (CUBIN, rejected PTX, ...): issued as they came */
	uint64_t dispatch_full, dispatch_slack, dispatch_idle, dispatch_alone;
	uint64_t retried;        /* fused launches that failed to start and ran unfused instead */
	uint64_t jit_hits;       /* fusion classes found compiled (memory or disk cache) */
	uint64_t jit_misses;
	uint64_t jit_compiles;   /* fused kernels compiled (background thread) */
	uint64_t jit_failures;   /* classes the JIT or the driver refused: they run unfused */
	uint64_t jit_compile_ns; /* summed */
	uint64_t jit_compile_max_ns;
	uint64_t cpu_ns;         /* the executor's CPU time (all threads) */
	uint32_t max_members;    /* of one bundle */
	uint32_t nclasses, npartitions;
	uint32_t streams;        /* of the partition: its bundles run on that many streams, concurrently */
	uint64_t loops;          /* passes of the executor's serving loop */
	uint64_t work_ns;        /* time in passes that moved something (the rest is polling) */
	uint64_t commands;       /* commands taken from the tenants' submission rings */
	uint64_t param_bundles;  /* fused bundles whose table went as the launch's parameter (no copy first) */
	uint64_t take_ns;        /* of work_ns: the sessions' pass (reaping completions, taking and validating
	                            submissions, issuing what goes at once, publishing) */
	uint64_t dispatch_ns;    /* of work_ns: moving backlogs, the scheduler, forming and launching bundles */
	struct ooo_sched_class_stats classes[OOO_SCHED_CLASSES];
	struct ooo_sched_part_stats parts[OOO_SCHED_PARTITIONS];
	/* launches through the coalescer, as their bundle's completion is seen */
	uint64_t hold_hist[OOO_TM_BUCKETS]; /* submission taken -> its bundle dispatched */
	uint64_t lat_hist[OOO_TM_BUCKETS];  /* submission taken -> completion seen */
	/* every command, from the executor's timestamps (docs/telemetry.md, "The executor's own data path") */
	uint64_t cmd_submit_hist[OOO_TM_BUCKETS]; /* the tenant's stamp (sqe.submit_us, libooo) -> taken from the ring */
	uint64_t cmd_queue_hist[OOO_TM_BUCKETS];  /* taken -> issued to CUDA, alone or in its bundle */
	uint64_t cmd_run_hist[OOO_TM_BUCKETS];    /* issued -> completion seen (notified commands) */
	uint64_t cmd_notify_hist[OOO_TM_BUCKETS]; /* completion seen -> published on the tenant's completion ring */
	uint64_t bundle_gpu_hist[OOO_TM_BUCKETS]; /* GPU time between a bundle's start and end events (timed ones) */
	uint64_t submit_stamp_bad; /* stamps more than 10 s from the executor's clock: not in cmd_submit_hist */
	uint64_t unfused_nopay;  /* bundles of 2+ sent unfused: the fused kernel was predicted slower than its members alone */
	uint64_t stream_waits;   /* waits a stream made for another stream's bundle (a queue's order across streams) */
	uint64_t launch_ns;      /* the launcher thread's busy time: issuing bundles to CUDA (driver calls) */
	uint64_t tier_bundles[OOO_PRIO_TIERS]; /* dispatches by their members' highest queue priority: below 50, 50, above */
	uint64_t stream_bundles[OOO_SCHED_STREAMS]; /* dispatches by the stream they went on within their tier (0 .. streams - 1) */
	uint64_t chained_launches; /* launches that ran chained behind their queue's previous launch in one fused bundle */
	uint64_t burst_holds;      /* head launches held for the rest of their tenant's burst (oood.conf burst_wait_us) */
};

struct ooo_sched_rec {
	uint32_t index;          /* executor slot */
	uint32_t state;          /* enum ooo_device_state */
	uint32_t have;           /* 1 when the executor has reported counters */
	uint32_t device;         /* its GPU */
	char domain[OOO_DOMAIN_MAX]; /* its trust domain, "" for a spare */
	uint64_t age_ns;         /* since oood received them */
	struct ooo_sched_counters c;
};

struct ooo_msg_reload_reply {
	uint64_t policy_generation;
	char msg[OOO_ERRMSG_MAX]; /* what changed, for the operator */
};

/* ---- telemetry (eBPF probes in oood, see docs/telemetry.md) ---- */

#define OOO_TM_LIBS 8     /* libcuda files (distinct inodes) probed at once */
#define OOO_TM_RECENT 16  /* slow syncs kept for oooctl telemetry */
#define OOO_TM_COMM 16

enum ooo_tm_state {
	OOO_TM_DISABLED = 1, /* [telemetry] enabled = no */
	OOO_TM_UNAVAILABLE,  /* no privilege, no BTF, load failed: reason says */
	OOO_TM_RUNNING,
};

/* Why a pid is in the filter set (bits of ooo_proc_rec.track). */
#define OOO_TRACK_SESSION 1u  /* it has a tenant session */
#define OOO_TRACK_EXECUTOR 2u /* an executor of oood */
#define OOO_TRACK_OPERATOR 4u /* oooctl trace add */
#define OOO_TRACK_LAUNCHES 8u /* its cuLaunchKernel calls are probed */
#define OOO_TRACK_LEASE 16u    /* a native tenant with an MPS lease (ooo-run) */

struct ooo_tm_lib_rec {
	char path[OOO_PATH_MAX]; /* as opened (may be under /proc/PID/root) */
	uint64_t dev;
	uint64_t ino;
	uint32_t probes;  /* uprobes attached for every process */
	uint32_t missing; /* probed symbols the library does not export */
};

struct ooo_tm_slow_rec {
	uint32_t pid;
	uint32_t tid;
	uint32_t fn; /* 0 cuStreamSynchronize, 1 cuCtxSynchronize, 2 cuEventSynchronize */
	uint32_t reserved;
	uint64_t dur_ns;
	uint64_t age_ns; /* since it returned */
	char comm[OOO_TM_COMM];
};

struct ooo_msg_telemetry {
	uint32_t state;         /* enum ooo_tm_state */
	uint32_t cuda;          /* 1: the libcuda programs are loaded */
	uint32_t sched;         /* 1: the run-queue programs are loaded and attached */
	uint32_t all_processes; /* 1: not filtered by pid */
	uint32_t launch_probes; /* 0 tracked, 1 all, 2 off (the [telemetry] key) */
	uint32_t nlibs;
	uint32_t tracked;       /* pids in the filter set */
	uint32_t max_tracked;
	uint32_t procs;         /* processes with cuda records */
	uint32_t rq_procs;      /* processes with run-queue records */
	uint32_t max_procs;
	uint32_t nrecent;
	uint64_t slow_sync_ns;
	uint64_t events;        /* slow-sync events read from the ring buffer */
	uint64_t ring_full;     /* ... lost because it was full */
	uint64_t procs_full;    /* records not made because a map was full */
	uint64_t inflight_lost; /* returns without their entry */
	uint64_t aged_out;      /* records of exited processes removed */
	uint64_t launch_links;  /* per-process launch uprobes attached now */
	char reason[OOO_ERRMSG_MAX]; /* why it is not running, or what is missing */
	struct ooo_tm_lib_rec libs[OOO_TM_LIBS];
	struct ooo_tm_slow_rec recent[OOO_TM_RECENT]; /* newest first */
};

struct ooo_proc_rec {
	uint32_t pid;
	uint32_t uid;   /* owner of /proc/PID; UINT32_MAX if gone */
	uint32_t track; /* OOO_TRACK_* (0: seen through all_processes only) */
	uint32_t have;  /* 1: cuda record, 2: run-queue record (bits) */
	char comm[OOO_TM_COMM];
	uint64_t launches;
	uint64_t graph_launches;
	uint64_t syncs[3]; /* by ooo_tm_slow_rec.fn */
	uint64_t sync_ns;
	uint64_t slow_syncs;
	uint64_t allocs;
	uint64_t alloc_failed;
	uint64_t alloc_bytes;
	uint64_t frees;
	uint64_t copies;
	uint64_t copy_bytes;
	uint64_t age_ns;  /* since its first probed call */
	uint64_t idle_ns; /* since its last probed call */
	uint64_t gap_hist[OOO_TM_BUCKETS];  /* launch inter-arrival */
	uint64_t sync_hist[OOO_TM_BUCKETS]; /* time in sync calls */
	uint64_t rq_samples;
	uint64_t rq_total_ns;
	uint64_t rq_max_ns;
	uint64_t rq_hist[OOO_TM_BUCKETS];   /* run-queue delay */
};

enum ooo_trace_op {
	OOO_TRACE_ADD = 1,    /* count its libcuda calls (launches too) and its run-queue delay */
	OOO_TRACE_REMOVE = 2,
};

struct ooo_msg_trace {
	uint32_t pid;
	uint32_t op; /* enum ooo_trace_op */
};

struct ooo_msg_trace_reply {
	uint32_t pid;
	uint32_t track; /* OOO_TRACK_* now */
	uint32_t libs;  /* libcuda files its launches are probed in */
	uint32_t reserved;
	char msg[OOO_ERRMSG_MAX];
};

/* ---- native tenants: MPS leases (ooo-run, docs/native.md) ---- */

#define OOO_LEASE_ENV_MAX 1024u /* "KEY=VALUE\n" lines of the environment a lease gives */
#define OOO_MPS_GPUS 16u        /* GPUs described in ooo_msg_mps */

enum ooo_lease_priority {
	OOO_LEASE_PRIO_CLASS = 0,  /* request: the class's native_priority */
	OOO_LEASE_PRIO_NORMAL = 1, /* CUDA_MPS_CLIENT_PRIORITY=0 */
	OOO_LEASE_PRIO_BELOW = 2,  /* CUDA_MPS_CLIENT_PRIORITY=1 */
};

struct ooo_msg_lease_req {
	uint32_t flags;     /* must be 0 */
	uint32_t device;    /* GPU index, or OOO_DEVICE_ANY: the one with the most unreserved share */
	uint32_t sm_pct;    /* 1..100, or 0: the class's native_sm */
	uint32_t priority;  /* enum ooo_lease_priority */
	uint64_t mem_bytes; /* pinned device memory limit, or 0: the class's native_mem */
	char class_name[OOO_NAME_MAX]; /* "" = the class the policy matches; else one that matches the peer */
	char cmd[OOO_NAME_MAX];        /* label for oooctl leases (the command) */
};

struct ooo_msg_lease {
	uint64_t id;
	uint32_t device;
	uint32_t sm_pct;    /* as granted */
	uint32_t priority;  /* OOO_LEASE_PRIO_NORMAL or _BELOW */
	uint32_t reserved;
	uint64_t mem_bytes; /* the pinned device memory limit given (native_mem, else mem_limit, or asked for) */
	char class_name[OOO_NAME_MAX];
	char env[OOO_LEASE_ENV_MAX]; /* what to set before exec, "KEY=VALUE\n" each */
	char msg[OOO_ERRMSG_MAX];    /* how the grant differs from the request, or "" */
};

#define OOO_LEASE_SLOW 1u    /* its sync p99 (telemetry) exceeded its class's slo_us */
#define OOO_LEASE_EVICTED 2u /* oooctl evict asked it to go */

struct ooo_lease_rec {
	uint64_t id;
	uint32_t pid;
	uint32_t uid;
	uint32_t device;
	uint32_t sm_pct;
	uint32_t priority;
	uint32_t flags;        /* OOO_LEASE_* */
	uint64_t mem_bytes;
	uint64_t age_ns;
	uint64_t syncs;        /* from telemetry; 0 without it */
	uint64_t sync_p99_ns;  /* from telemetry; 0 without it */
	uint64_t launches;     /* from telemetry */
	char class_name[OOO_NAME_MAX];
	char cmd[OOO_NAME_MAX];
};

struct ooo_msg_evict {
	uint32_t pid;      /* a leased process */
	uint32_t grace_ms; /* after terminate_client, SIGTERM then SIGKILL this far apart; 0: [mps] evict_grace_ms */
};

enum ooo_evict_how {
	OOO_EVICT_MPS = 1,    /* terminate_client accepted it */
	OOO_EVICT_SIGNAL = 2, /* not an MPS client (yet): SIGTERM sent */
};

/* ---- SM partitions of the executors (docs/architecture.md, "Partitions") ---- */

#define OOO_PART_MAX 7u /* reserved partitions per GPU; the shared one besides */

enum ooo_part_source {
	OOO_PART_POLICY = 0, /* partition = yes: sm_share percent of the GPU */
	OOO_PART_OOOCTL = 1, /* oooctl partition set */
};

struct ooo_msg_partition_set {
	char class_name[OOO_NAME_MAX]; /* a class of the current policy */
	uint32_t sms;   /* SMs reserved for its bundles on every GPU; 0: none (it shares the rest) */
	uint32_t reset; /* 1: forget what was set for the class: back to its policy (sms must be 0) */
};

struct ooo_msg_partition_set_reply {
	uint64_t generation; /* the plans it caused: an executor has answered when its answered >= this */
	uint32_t gpus;       /* executors the plan went to now (the others get it when they are ready) */
	uint32_t reserved;
	char msg[OOO_ERRMSG_MAX];
};

struct ooo_part_rec {
	char class_name[32];
	uint32_t asked;  /* SMs asked of the executor */
	uint32_t sms;    /* SMs its partition has (rounded up to the granule), when the plan was applied; else 0 */
	uint32_t source; /* enum ooo_part_source */
	uint32_t reserved;
};

struct ooo_part_gpu_rec {
	uint32_t index;      /* executor slot */
	uint32_t state;      /* enum ooo_device_state */
	uint64_t generation; /* of the plan last sent to its executor (0: none yet) */
	uint64_t answered;   /* of the plan its executor last answered */
	int32_t status;      /* that answer: 0 applied, or negative: refused (reason), the partitions as they were */
	uint32_t n;          /* reserved partitions of the plan last sent */
	uint32_t sm_count;   /* the GPU's SMs */
	uint32_t granule;    /* SMs of the smallest split (0: no green contexts in use) */
	uint32_t shared_sms; /* the shared partition's, when applied */
	uint32_t device;     /* its GPU */
	char domain[OOO_DOMAIN_MAX]; /* its executor's trust domain, "" for a spare */
	struct ooo_part_rec p[OOO_PART_MAX];
	char reason[OOO_ERRMSG_MAX]; /* why the last plan was refused, or could not be made for this GPU */
};

/* Forget a tenant's hangs (oood.conf hang_strikes): it may attach data paths again at once. */
struct ooo_msg_pardon {
	uint32_t uid;
	uint32_t reserved; /* 0 */
};

struct ooo_msg_pardon_reply {
	uint32_t uid;
	uint32_t hangs;  /* hangs forgotten (within hang_window_s of its last) */
	uint32_t barred; /* 1: it was barred */
	uint32_t reserved;
	char msg[OOO_ERRMSG_MAX];
};

struct ooo_msg_evict_reply {
	uint32_t pid;
	uint32_t how; /* enum ooo_evict_how */
	char msg[OOO_ERRMSG_MAX];
};

enum ooo_mps_state {
	OOO_MPS_OFF = 1,    /* [mps] enabled = no, or auto without the control program */
	OOO_MPS_STARTING,   /* control daemon started, not answering yet */
	OOO_MPS_RUNNING,
	OOO_MPS_RESTARTING, /* it exited; restarting after a backoff */
	OOO_MPS_FAILED,     /* cannot be started: reason says */
	OOO_MPS_STOPPING,
};

struct ooo_mps_gpu_rec {
	uint32_t reserved_pct; /* sum of the leases' shares, executor_reserve included */
	uint32_t leases;
	uint32_t clients;      /* counted against max_clients: leases, plus the executor when it is a client */
	uint32_t reserved;
};

struct ooo_msg_mps {
	uint32_t state; /* enum ooo_mps_state */
	uint32_t pid;   /* the control daemon, 0 if none */
	uint32_t restarts;
	uint32_t multiuser;
	uint32_t executor_client; /* executors run as MPS clients at 100% */
	uint32_t max_clients;     /* per GPU */
	uint32_t ngpus;
	uint32_t leases;
	uint64_t leases_total;
	uint64_t refused;
	uint64_t evicted;
	uint64_t commands;        /* control commands run */
	uint64_t command_errors;  /* replies that said no, or that did not parse */
	char control[OOO_PATH_MAX];
	char pipe_dir[OOO_PATH_MAX];
	char reason[OOO_ERRMSG_MAX];   /* why it is not running */
	char feedback[OOO_ERRMSG_MAX]; /* the last change the telemetry feedback made, or "" */
	struct ooo_mps_gpu_rec gpus[OOO_MPS_GPUS];
};

#define OOO_MPS_LINE_MAX 128u
#define OOO_MPS_REPLY_MAX 2048u

struct ooo_msg_mps_run {
	char line[OOO_MPS_LINE_MAX]; /* e.g. "get_server_list", "set_default_active_thread_percentage 50" */
};

struct ooo_msg_mps_run_reply {
	char reply[OOO_MPS_REPLY_MAX]; /* what the control program printed */
};

#ifdef __cplusplus
}
#endif

#endif /* OOO_PROTO_H */
