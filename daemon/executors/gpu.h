/* SPDX-License-Identifier: MIT */
/*
 * Executor supervision: oood starts one executor process per GPU and trust
 * domain (itself, re-executed with --executor), watches it through a pidfd
 * on the io_uring loop, and restarts it with backoff when it dies. An
 * executor that finds no driver, no device or the toolkit's stub library
 * exits with EXEC_EXIT_NODEV and is not restarted; its reason is what
 * `oooctl status` shows.
 *
 * Slots: struct gpu is one executor slot, for one device (dev) and one trust
 * domain (domain; "" for the device's spare, an executor started ahead that
 * no domain has claimed yet). A session's buffers and data path name the
 * slot of its domain on their device; the device index is what tenants see.
 * The first domain to need a device claims its ready spare (no wait) and a
 * new spare starts behind it; a domain without sessions for domain_idle_ms
 * has its executor stopped and its slot freed. Requests that need a slot
 * still starting are parked and retried when it is ready (GPU_PARK_NS).
 *
 * Owner: the server owns struct gpus; each struct gpu owns its pidfd and
 * control socket, and is reset only when neither has an operation in flight.
 */
#ifndef OOO_GPU_H
#define OOO_GPU_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "../../proto/exec_proto.h"
#include "../policy/registry.h"

#define GPU_MAX 64   /* devices */
#define GPU_LISTENERS 8 /* modules that listen to the executors (gpu_listen) */
#define EXEC_MAX 256 /* executor slots: devices x (trust domains + spare) */
_Static_assert(EXEC_MAX == REG_EXEC_SLOTS, "the sessions' exec_seen bitmaps cover every slot");
#define GPU_PARK_NS (30ull * 1000000000ull) /* a request waits this long for its domain's executor */
#define GPU_PARK_MAX 1024u                  /* requests waiting at once, all sessions together */
#define GPU_PARK_SESSION_MAX 4u             /* and of one session */
#define GPU_RETIRE_KILL_NS (10ull * 1000000000ull) /* an idle domain's executor told to stop is killed after */
#define GPU_BACKOFF_MIN_MS 1000u
#define GPU_BACKOFF_MAX_MS 30000u
#define GPU_STABLE_NS (60ull * 1000000000ull) /* up this long: next restart starts from the minimum backoff */
#define GPU_PING_NS (2ull * 1000000000ull)    /* the watchdog pings a ready executor this often */
#define GPU_HANG_NS (30ull * 1000000000ull)   /* and kills one that has not answered for this long */
#define GPU_HUNG_EXIT_NS (5ull * 1000000000ull) /* an executor still there this long after its hang report is killed */
#define GPU_STATS_WARN_NS (60ull * 1000000000ull) /* at most one warning this often about unusable EXEC_MSG_STATS */

struct server;
struct module;
struct session;
struct exec_listener;

struct gpu {
	uint32_t idx; /* slot */
	uint32_t dev; /* device index: what tenants and operators call the GPU */
	bool used;    /* the slot is taken (its executor may be starting, running, restarting or failed) */
	bool retire;  /* stopping for good (idle domain): freed, not restarted, when the executor has gone */
	char domain[OOO_DOMAIN_MAX]; /* trust domain served; "" for the device's spare */
	uint64_t idle_ns;            /* claimed and without sessions since then (0: in use) */
	uint32_t state; /* enum ooo_device_state */
	pid_t pid;      /* 0 when no executor runs */
	bool tm_tracked; /* pid is in the telemetry set */
	bool mps_client; /* started with oood's MPS environment (counts against [mps] max_clients) */
	int pidfd, ctl;
	unsigned inflight; /* io_uring operations on pidfd/ctl */
	bool exited;
	uint64_t hung_ns; /* when the running executor reported a hang (EXEC_MSG_HUNG; one taken per executor), 0: none */
	bool have_fault;  /* the running executor named the sessions of its fault (EXEC_MSG_FAULT; one taken per executor) */
	struct exec_hung fault;
	int wstatus;
	uint32_t restarts;
	uint32_t backoff_ms;
	uint64_t started_ns, ready_ns, restart_at_ns;
	uint64_t ping_ns, pong_ns; /* the watchdog's last ping sent and answer seen */
	bool have_info;
	struct exec_ready info;
	/* the scheduler's counters, as the running executor last sent them (EXEC_MSG_STATS) */
	bool have_stats;
	uint64_t stats_ns;      /* server_now_ns() when they arrived */
	uint64_t stats_warn_ns; /* last warning about an unusable one; kept across restarts */
	uint32_t stats_dropped; /* unusable ones since that warning */
	struct ooo_sched_counters stats;
	char reason[OOO_ERRMSG_MAX];
	unsigned char rbuf[EXEC_MSG_MAX];
	struct msghdr rmsg;
	struct iovec riov;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} rcmsg;
};

struct gpus {
	struct gpu g[EXEC_MAX];
	uint32_t n;    /* slots to look at: highest used + 1 */
	uint32_t ndev; /* devices: 1 until the first executor reports the count */
	struct list_node parked; /* struct gpu_parked: requests waiting for a slot to be ready */
	uint32_t nparked;
	bool enabled;
	char exe[PATH_MAX];
	char reason[OOO_ERRMSG_MAX]; /* why there are no executors at all */
	uint32_t op_exit, op_recv; /* of the pidfd polls and control socket reads (server_add_op) */
	const struct exec_listener *listener[GPU_LISTENERS];
	uint32_t nlisteners;
};

/*
 * The module (server.h): owns srv->gpus. Its start launches the first
 * executor if the policy enables executors; the tick restarts the due ones,
 * keeps a spare per device, retires idle domains and SIGKILLs executors that
 * outlive the shutdown grace; stop SIGTERMs every executor; fini kills and
 * reaps what is left.
 */
extern const struct module gpu_module;

/* What one executor slot serves, as the listeners count it (exec_listener.load). */
struct exec_load {
	uint32_t paths;     /* attached data paths: sessions placed on it */
	uint32_t buffers;   /* device buffers, those in flight included */
	uint64_t mem_bytes; /* their bytes */
};

/*
 * What a module does with the executors' events and replies (gpu_listen).
 * Every hook may be NULL; hooks run in the order the listeners registered.
 */
struct exec_listener {
	/* Slot g was taken for a new domain (its executor is about to start): reset what the module keeps of it. */
	void (*claimed)(struct server *srv, struct gpu *g);
	/* g's executor (a new one after a restart too) reported a usable device. */
	void (*ready)(struct server *srv, struct gpu *g);
	/* Slot idx's executor is gone: what it held is lost. */
	void (*lost)(struct server *srv, uint32_t idx);
	/*
	 * ...and it exited for a kernel fault of the domain's tenants (before
	 * lost); rep: the sessions that had work on the GPU then, as the
	 * executor named them (EXEC_MSG_FAULT), or NULL if it did not.
	 */
	void (*fault)(struct server *srv, uint32_t idx, const char *domain, const struct exec_hung *rep);
	/* It reported a hang past kernel_time_limit_ms (checked against the policy). */
	void (*hung)(struct server *srv, uint32_t idx, const struct exec_hung *h);
	/* It answered a ping that carried a session id: everything before it for that session is done. */
	void (*barrier)(struct server *srv, uint32_t idx, uint64_t session);
	/*
	 * A reply (type with OOO_MSG_REPLY, plen checked by exec_msg_check) to
	 * one of the request types in replies[]; *fd is a descriptor that came
	 * with it, or -1: set it to -1 to keep it.
	 */
	void (*reply)(struct server *srv, uint32_t idx, uint16_t type, const void *payload, size_t plen, int *fd);
	const uint16_t *replies;
	size_t nreplies;
	/* Add what the module has on each slot to load[EXEC_MAX] (zeroed by the caller). */
	void (*load)(const struct server *srv, struct exec_load *load);
	/*
	 * The slot the session's work already runs on, or -1: new work goes to
	 * that device. Asked from the last listener registered to the first.
	 */
	int (*affinity)(const struct server *srv, const struct session *s);
};
/* Register l (static storage) from a module's init after the executors module. 0 or -ENOSPC. */
int gpu_listen(struct server *srv, const struct exec_listener *l);

/* Send a message (and a descriptor if fd >= 0) to executor idx without blocking. Returns 0 or -errno. */
int gpu_send(struct server *srv, uint32_t idx, uint16_t type, const void *p, size_t n, int fd);
/* The same with up to 4 descriptors (they stay the caller's). */
int gpu_send_fds(struct server *srv, uint32_t idx, uint16_t type, const void *p, size_t n, const int *fds, int nfds);
/*
 * The ready executor slot of session s's trust domain for a new buffer or
 * data path on device `want`, or for OOO_DEVICE_ANY on the session's own GPU
 * (attached, else its buffers'), else the least loaded usable one
 * (daemon/place.h). Claims the device's spare, or starts an executor, for a
 * domain that has none there: then, and while the domain's executor
 * (re)starts, returns -EINPROGRESS (park the request with gpu_park).
 * -OOO_ENODEV if no GPU can serve; -OOO_ELIMIT when the device serves
 * max_domains domains. why gets the reason of a failure.
 */
struct session;
struct conn;
int gpu_pick(struct server *srv, const struct session *s, uint32_t want, char *why, size_t cap);
/*
 * Park a request (OOO_MSG_BUF_ALLOC or OOO_MSG_ATTACH, its payload req) of
 * connection c until an executor becomes ready or fails, then hand it to its
 * handler again; answered with an error after GPU_PARK_NS. Returns 0, or
 * -EAGAIN (with the answer sent) when GPU_PARK_MAX requests wait already.
 */
int gpu_park(struct server *srv, struct conn *c, uint32_t seq, uint16_t type, const void *req, size_t len);
/*
 * An admin list of one record per executor slot in use, in slot order,
 * paged by req->offset (which counts those slots): fill writes slot g's
 * record at rec (zeroed, rec_size bytes) at time now. Returns the reply's
 * length, or -EMSGSIZE.
 */
struct ooo_msg_list_req;
typedef void (*gpu_rec_fn)(struct server *srv, const struct gpu *g, void *rec, uint64_t now);
ssize_t gpu_list_slots(struct server *srv, const struct ooo_msg_list_req *req, void *buf, size_t cap, size_t rec_size,
		       gpu_rec_fn fill);
/* The device of slot idx (what a tenant is told). */
uint32_t gpu_dev(const struct server *srv, uint32_t idx);
/* A slot of device dev that has reported the device (READY info), or NULL. */
const struct gpu *gpu_dev_info(const struct server *srv, uint32_t dev);
/* Executor slots of device dev that are MPS clients now. */
uint32_t gpu_dev_mps_clients(const struct server *srv, uint32_t dev);

/* Counts for status: devices known, devices ready (an executor of the device is ready). */
void gpu_counts(const struct server *srv, uint32_t *known, uint32_t *ready);
/* Why no device is ready ("" when one is). */
const char *gpu_reason(const struct server *srv);
/* The last counters of GPU idx's executor and their age at now_ns; false if it has sent none. */
bool gpu_sched_counters(const struct server *srv, uint32_t idx, uint64_t now_ns, struct ooo_sched_counters *c,
			uint64_t *age_ns);

#endif
