/* SPDX-License-Identifier: MIT */
/*
 * libooo: the client library of the ooo GPU arbitration service.
 *
 * A tenant opens a session with oood over its Unix socket. Every call that
 * returns int returns 0 on success or a negative error code: either a
 * negative errno value (-ECONNREFUSED, -ETIMEDOUT, ...) or one of the
 * negative OOO_E* codes below. ooo_strerror() turns either kind into text.
 * Constructors return NULL and set errno (to a positive errno or OOO_E*
 * value) on failure.
 *
 * A session may be used from several threads of one process at once: calls
 * on one session are serialised internally. Do not use a session in a child
 * after fork(); open a new one there.
 *
 * libooo has no CUDA dependency.
 */
#ifndef OOO_OOO_H
#define OOO_OOO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OOO_VERSION_MAJOR 0
#define OOO_VERSION_MINOR 1
#define OOO_VERSION_PATCH 0
#define OOO_VERSION_NUM (OOO_VERSION_MAJOR * 10000 + OOO_VERSION_MINOR * 100 + OOO_VERSION_PATCH)
#define OOO_VERSION_STRING "0.1.0"

/* Default paths; OOO_SOCKET and OOO_RUNDIR in the environment override. */
#define OOO_DEFAULT_RUNDIR "/run/ooo"
#define OOO_SOCKET_NAME "oood.sock"
#define OOO_ADMIN_SOCKET_NAME "admin.sock"

/*
 * ooo-specific error codes, returned negated. They lie above the errno range
 * so they never collide with -errno values.
 */
enum ooo_error {
	OOO_EPROTO = 1000, /* malformed message, on either side */
	OOO_EVERSION,      /* peer speaks another protocol version */
	OOO_EDENIED,       /* policy does not admit this uid/gid */
	OOO_ELIMIT,        /* a per-tenant or daemon-wide limit was reached */
	OOO_ESHUTDOWN,     /* the daemon is shutting down */
	OOO_EREVOKED,      /* a policy reload no longer admits this peer */
	OOO_ENODEV,        /* no usable GPU */
	OOO_EDEVRESET,     /* the GPU executor was restarted under the command */
	OOO_EFAULT,        /* a kernel faulted on the GPU */
	OOO_ECLOSED,       /* the daemon closed the session */
	OOO_ENOTADMIN,     /* admin request from a peer that is not an admin */
	OOO_EHUNG,         /* a kernel ran past oood.conf kernel_time_limit_ms: the GPU executor is being replaced;
			    * from an attach: the tenant's kernels did so hang_strikes times (no data path for a while) */
	OOO_EMAX
};

typedef struct ooo_session ooo_session;

struct ooo_open_opts {
	size_t sz;        /* sizeof(struct ooo_open_opts), for growth */
	const char *path; /* socket path; NULL: $OOO_SOCKET, $OOO_RUNDIR/oood.sock, default */
	const char *name; /* label shown by `oooctl sessions`; NULL: program name */
	int timeout_ms;   /* for connect and each request; <= 0: 10000 */
};

/*
 * Open a session with oood. `path` is the socket path; NULL uses $OOO_SOCKET,
 * else $OOO_RUNDIR/oood.sock, else /run/ooo/oood.sock.
 * Returns a session the caller frees with ooo_close(), or NULL with errno
 * set: ENOENT/ECONNREFUSED (daemon not running), EACCES, ETIMEDOUT,
 * OOO_EDENIED (policy refused this uid/gid), OOO_ELIMIT (session limit),
 * OOO_EVERSION, OOO_EPROTO, OOO_ESHUTDOWN. The daemon's reason for a refusal
 * is available from ooo_last_error() in the calling thread.
 */
ooo_session *ooo_open(const char *path);

/* Like ooo_open with options; opts may be NULL. Same returns as ooo_open. */
ooo_session *ooo_open_opts(const struct ooo_open_opts *opts);

/*
 * Open a session on the admin socket (path NULL: $OOO_RUNDIR/admin.sock or
 * /run/ooo/admin.sock). Admin sessions may use ooo_admin_call() and
 * ooo_ping(). Same returns as ooo_open; EACCES when the caller may not
 * connect to the admin socket.
 */
ooo_session *ooo_admin_open(const char *path, int timeout_ms);

/*
 * Close a session: says goodbye to the daemon (best effort) and frees it.
 * Accepts NULL. Returns NULL.
 */
ooo_session *ooo_close(ooo_session *s);

/*
 * One round trip to the daemon. Returns 0, or -ETIMEDOUT, -OOO_ECLOSED,
 * -OOO_ESHUTDOWN, -OOO_EREVOKED, -OOO_EPROTO, or another negative errno.
 */
int ooo_ping(ooo_session *s);

/*
 * Send an admin request (enum ooo_msg_type in <ooo/proto.h>) with `req` of
 * `req_len` bytes and copy the reply payload into `reply` (capacity `cap`).
 * Returns the reply payload length (>= 0), or a negative error: the
 * daemon's status (with its reason in ooo_last_error()), -EMSGSIZE if the
 * reply does not fit, or a transport error as for ooo_ping.
 */
int ooo_admin_call(ooo_session *s, uint16_t type, const void *req, size_t req_len, void *reply,
		   size_t cap);

/* ---- native leases (ooo-run; docs/native.md) ---- */

#define OOO_LEASE_ENV_BYTES 1024 /* = OOO_LEASE_ENV_MAX of <ooo/proto.h> */

struct ooo_lease_opts {
	size_t sz;              /* sizeof(struct ooo_lease_opts), for growth */
	const char *class_name; /* NULL or "": the session's class; else one that matches the caller */
	unsigned sm_pct;        /* 1..100 percent of the GPU's SMs, 0: the class's native_sm */
	uint64_t mem_bytes;     /* pinned device memory limit, 0: the class's native_mem */
	int priority;           /* 0: the class's, 1: normal, 2: below normal */
	uint32_t device;        /* GPU index, or OOO_DEVICE_ANY (0xffffffff): the least reserved one */
	const char *label;      /* shown by `oooctl leases` (the command); may be NULL */
};

struct ooo_lease_info {
	uint64_t id;
	uint32_t device;
	unsigned sm_pct;
	int priority; /* 1 normal, 2 below */
	uint64_t mem_bytes;
	char class_name[64];
	char env[OOO_LEASE_ENV_BYTES]; /* "KEY=VALUE\n" lines to set before exec */
	char note[256];                /* how the grant differs from the request, or "" */
};

/*
 * Ask for an MPS lease for the calling process (its pid, as the daemon sees
 * it on the socket): the process is to exec the native program with the
 * environment in info->env, and the lease ends when that process exits.
 * Returns 0, or -OOO_ENODEV (no MPS, no such GPU), -OOO_ELIMIT (the GPU is
 * fully reserved, or its MPS client limit reached), -EPERM (more than the
 * class allows), -OOO_EDENIED (class does not match), -EEXIST, or a
 * transport error; the reason is in ooo_last_error().
 */
int ooo_native_lease(ooo_session *s, const struct ooo_lease_opts *opts, struct ooo_lease_info *info);

/* ---- device buffers ------------------------------------------------------------ */

typedef struct ooo_buf ooo_buf;

/* ooo_buf_alloc flags: place the buffer on GPU n with OOO_BUF_DEVICE(n); default: the daemon picks. */
#define OOO_BUF_DEVICE_SET 0x1u
#define OOO_BUF_DEVICE_INDEX 0xff00u
#define OOO_BUF_DEVICE(n) (OOO_BUF_DEVICE_SET | (((unsigned)(n) & 0xffu) << 8))
#define OOO_BUF_DEVICE_MASK (OOO_BUF_DEVICE_SET | OOO_BUF_DEVICE_INDEX)

/*
 * Allocate `bytes` of device memory (rounded up to the device's allocation
 * granularity, and charged to the tenant's mem_limit and max_buffers until
 * freed). On success stores a handle the caller frees with ooo_buf_free and
 * returns 0. Errors: -EINVAL, -OOO_ELIMIT (quota), -OOO_ENODEV (no usable
 * GPU; ooo_last_error() says why), -OOO_EDEVRESET (the executor died during
 * the allocation), -ENOMEM (the device is full), transport errors as for
 * ooo_ping. Not available on admin sessions.
 */
int ooo_buf_alloc(ooo_session *s, size_t bytes, unsigned flags, ooo_buf **out);

/*
 * Free a buffer and its handle (the handle is gone even on error). Accepts
 * NULL. Returns 0, -ENOENT (the daemon no longer knows it, e.g. after a
 * session reset) or a transport error. Memory exported with
 * ooo_buf_export_fd stays allocated until every exported descriptor is
 * closed too.
 */
int ooo_buf_free(ooo_buf *b);

/* The buffer's device address, for kernel parameters (0 for NULL). */
uint64_t ooo_buf_addr(const ooo_buf *b);

/* The buffer's size after rounding (0 for NULL). */
size_t ooo_buf_size(const ooo_buf *b);

/*
 * A new descriptor (CLOEXEC, the caller closes it) for the buffer's memory,
 * to import into the tenant's own CUDA context with
 * cuMemImportFromShareableHandle(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR).
 * Returns the descriptor (>= 0) or a negative error.
 */
int ooo_buf_export_fd(ooo_buf *b);

/* ---- queues and commands ---------------------------------------------------------- */

/*
 * Commands go through shared-memory rings straight to the GPU's executor;
 * the daemon is not on this path. A queue runs its commands in order, like a
 * CUDA stream; different queues run independently. The first queue of a
 * session sets up its data path (a 32 MiB staging area and the rings) on a
 * GPU the daemon picks.
 */
typedef struct ooo_queue ooo_queue;

struct ooo_queue_opts {
	size_t sz;        /* sizeof(struct ooo_queue_opts) */
	int priority;     /* 0..99, higher first; -1: the class's. Never above the class's */
	uint32_t slo_us;  /* latency target; 0: the class's. Never tighter than the class's */
};

/*
 * Create a queue; opts may be NULL (the class's priority and SLO). Returns 0
 * and stores it in *out (destroy with ooo_queue_destroy), or -EINVAL,
 * -OOO_ELIMIT (max_queues), -OOO_ENODEV, -OOO_EDEVRESET, or a transport
 * error. ooo_queue_priority/ooo_queue_slo_us tell what was applied.
 */
int ooo_queue_create(ooo_session *s, const struct ooo_queue_opts *opts, ooo_queue **out);
int ooo_queue_priority(const ooo_queue *q);
uint32_t ooo_queue_slo_us(const ooo_queue *q);

/* Wait for the queue's commands, then destroy it. Accepts NULL. Returns what ooo_queue_sync would. */
int ooo_queue_destroy(ooo_queue *q);

/*
 * Wait until every command submitted to the queue has completed, at most
 * timeout_ms (< 0: no limit). Returns 0; the first failure of a command
 * since the last sync (-EFAULT for memory outside the session's buffers,
 * -EINVAL, -OOO_EFAULT for a fault on the GPU, -OOO_EHUNG for a kernel
 * that ran past oood.conf kernel_time_limit_ms, -OOO_EDEVRESET when the
 * executor was replaced under the commands); -ETIMEDOUT; or a session
 * error. It spins (yielding the CPU) for the class's wait_spin_us (oood.conf,
 * default 1 ms; OOO_WAIT_SPIN_US in the environment may lower it), then
 * sleeps until the completion's doorbell rings.
 */
int ooo_queue_sync(ooo_queue *q, int timeout_ms);

/*
 * Copy len bytes from host memory to device address dst. Returns once src
 * has been copied into the staging area (src may be reused at once); the
 * copy itself completes in queue order. Errors of the copy on the GPU are
 * reported by ooo_queue_sync. Exception: when src lies in memory from
 * ooo_host_alloc nothing is staged, the GPU reads src directly, and src must
 * stay unchanged until the queue is synced.
 */
int ooo_memcpy_htod(ooo_queue *q, uint64_t dst, const void *src, size_t len);

/*
 * Copy len bytes from device address src to host memory dst; returns when
 * they are there (it waits for everything before it on q). Returns 0, or
 * the first failure on q since the last sync (as ooo_queue_sync reports
 * it: this copy's, or an earlier command's), -EINVAL for a NULL dst or a
 * queue that is not usable, or a session error. dst stays the caller's.
 */
int ooo_memcpy_dtoh(ooo_queue *q, void *dst, uint64_t src, size_t len);

/*
 * Copy between device addresses (both in the session's buffers), in queue
 * order. Returns 0 once submitted (errors on the GPU come from
 * ooo_queue_sync), -EINVAL for a queue that is not usable, or a session
 * error.
 */
int ooo_memcpy_dtod(ooo_queue *q, uint64_t dst, uint64_t src, size_t len);

/*
 * Set count elements of elsize bytes (1, 2 or 4) at dst to value, in queue
 * order. Returns 0 once submitted (errors on the GPU, a bad elsize among
 * them, come from ooo_queue_sync), -EINVAL for a queue that is not usable,
 * or a session error.
 */
int ooo_memset(ooo_queue *q, uint64_t dst, uint32_t value, size_t count, unsigned elsize);

/* ---- modules, kernels and launches ------------------------------------------------ */

typedef struct ooo_module ooo_module;
typedef struct ooo_kernel ooo_kernel;

/* Kinds of module image (enum ooo_module_kind in <ooo/proto.h>). */
#define OOO_PTX 1    /* PTX text */
#define OOO_CUBIN 2  /* a cubin for the device's architecture */
#define OOO_FATBIN 3 /* a fatbin */
#define OOO_CUDA_C 4 /* CUDA C source, compiled by NVRTC for the device */

/*
 * Load a module of `kind` from len bytes at image (at most 256 MiB) into the
 * session's GPU. On success stores a handle (free with ooo_module_unload)
 * and returns 0. Errors: -EINVAL (with the JIT or NVRTC log's beginning in
 * ooo_last_error()), -OOO_ELIMIT (max_modules), -OOO_ENODEV, -OOO_EDEVRESET,
 * -ENOSYS (CUDA C without NVRTC on the GPU host), -EIO, -ETIMEDOUT or
 * -EFBIG (CUDA C that crashed NVRTC, ran past its 20 s, or gave more than
 * 256 MiB of PTX; the reason says which), -EMFILE (oood cannot keep
 * the image). The module and its kernels survive an executor restart: oood
 * loads it again on the new executor, and the handles stay valid.
 */
int ooo_module_load(ooo_session *s, int kind, const void *image, size_t len, ooo_module **out);

/*
 * Unload a module (its kernels become invalid) and free the handle, which
 * is gone whatever the result. Accepts NULL (returns 0). Returns 0, or
 * oood's refusal (-ENOENT for a module it does not know) or a session
 * error; the handle is freed in every case.
 */
int ooo_module_unload(ooo_module *m);

/* Look up a kernel by its (mangled) name. Returns 0 and a handle (ooo_kernel_free), or -ENOENT. */
int ooo_kernel_get(ooo_module *m, const char *name, ooo_kernel **out);

/* Free a kernel handle (client side only). Accepts NULL. Returns NULL. */
ooo_kernel *ooo_kernel_free(ooo_kernel *k);

struct ooo_kernel_info {
	size_t sz; /* sizeof(struct ooo_kernel_info) */
	uint32_t nparams;
	uint32_t param_size; /* bytes ooo_launch expects */
	uint32_t max_threads;
	uint32_t static_shmem;
	uint32_t max_dyn_shmem;
	uint32_t regs;
	uint32_t param_offset[64];
	uint32_t param_bytes[64];
};

/* Describe a kernel: its parameter layout (from cuFuncGetParamInfo) and limits. Returns 0 or -EINVAL. */
int ooo_kernel_info(const ooo_kernel *k, struct ooo_kernel_info *info);

/*
 * Launch k on queue q. params is the raw parameter block (len bytes, laid
 * out as ooo_kernel_info describes, exactly as cuLaunchKernel's
 * CU_LAUNCH_PARAM_BUFFER_POINTER takes it). Returns once the launch is
 * submitted; a launch that the executor refuses (shape out of range, memory
 * outside the session's buffers, ...) fails the next ooo_queue_sync.
 * Errors here: -EINVAL (size mismatch, kernel of another session).
 */
int ooo_launch(ooo_queue *q, const ooo_kernel *k, const uint32_t grid[3], const uint32_t block[3], uint32_t shmem,
	       const void *params, size_t len);

struct ooo_launch_opts {
	size_t sz;            /* sizeof(struct ooo_launch_opts) */
	/*
	 * The launch should complete within this many microseconds of the call:
	 * the scheduler orders the window by deadline (earliest first) and holds
	 * a launch for a fuller bundle only while its slack lasts. 0: the
	 * queue's SLO (ooo_queue_slo_us). A deadline tighter than the queue's
	 * SLO is raised to it: the class's SLO bounds what a tenant may ask for.
	 */
	uint32_t deadline_us;
	uint32_t flags;       /* must be 0 */
};

/* ooo_launch with options (NULL: the defaults). Errors as ooo_launch, and -EINVAL for unknown flags. */
int ooo_launch_ex(ooo_queue *q, const ooo_kernel *k, const uint32_t grid[3], const uint32_t block[3], uint32_t shmem,
		  const void *params, size_t len, const struct ooo_launch_opts *opts);

/* ---- zero-copy host memory ---------------------------------------------------------- */

/*
 * Allocate bytes (rounded up to 2 MiB, at most 16 GiB, 64 regions per
 * session) of host memory shared with the GPU's executor and registered for
 * DMA: copies from or to it (ooo_memcpy_htod/dtoh with a pointer inside it)
 * skip the staging copy. Charged to the tenant's mem_limit. Returns 0 and
 * the address in *out, or a negative error.
 */
int ooo_host_alloc(ooo_session *s, size_t bytes, void **out);

/* Free a region from ooo_host_alloc (after the copies that use it completed). Returns 0 or -ENOENT. */
int ooo_host_free(ooo_session *s, void *p);

/* ---- events: order across queues, completion points ------------------------------- */

typedef struct ooo_event ooo_event;

/* Create an event of the session (at most 1024). Returns 0 or -OOO_ELIMIT, -OOO_ENODEV, ... */
int ooo_event_create(ooo_session *s, ooo_event **out);
/*
 * Wait for its records to complete, then free it (the handle is gone
 * afterwards). Accepts NULL. Returns 0.
 */
int ooo_event_destroy(ooo_event *ev);
/*
 * Record the event on q: it completes when everything before it on q has.
 * Returns 0 once submitted, -EINVAL for a NULL or foreign event or a queue
 * that is not usable, or a session error. The event stays the caller's.
 */
int ooo_event_record(ooo_queue *q, ooo_event *ev);
/*
 * Make q wait, on the GPU, for the event's last record (no wait if never
 * recorded): later commands on q start after it. Returns 0 once submitted,
 * -EINVAL for a NULL or foreign event or a queue that is not usable, or a
 * session error.
 */
int ooo_queue_wait_event(ooo_queue *q, ooo_event *ev);
/* 0 if every record of the event completed, -EAGAIN if not yet, or the first failure. */
int ooo_event_query(ooo_event *ev);
/* Wait until every record completed (timeout_ms < 0: no limit). Returns 0, -ETIMEDOUT or a failure. */
int ooo_event_wait(ooo_event *ev, int timeout_ms);

/* The session id the daemon assigned (0 for admin sessions). */
uint64_t ooo_session_id(const ooo_session *s);

/* The tenant class the daemon placed this session in ("" for admin). */
const char *ooo_session_class(const ooo_session *s);

/*
 * Text for an error code, negative or positive, errno or OOO_E*. Never NULL;
 * the string is static.
 */
const char *ooo_strerror(int err);

/*
 * Why the last call in this thread failed, or "" if it succeeded. Every call
 * that fails (a negative return, or NULL with errno) sets it to the reason
 * for that failure, never an earlier call's: the daemon's when oood refused
 * the request (for example "uid 65534 is not admitted by any tenant
 * class"); the session's reason for ending when the session has ended (the
 * notice's text, again on every later call); else libooo's own, naming the
 * call for bad arguments ("ooo_buf_alloc: size is 0"). A call that succeeds
 * sets "". ooo_strerror, ooo_last_error, ooo_close, ooo_kernel_free and the
 * accessors that cannot fail (ooo_session_id, ooo_session_class,
 * ooo_buf_addr, ooo_buf_size, ooo_queue_priority, ooo_queue_slo_us) leave
 * it as it is. Valid until the next libooo call in this thread.
 */
const char *ooo_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* OOO_OOO_H */
