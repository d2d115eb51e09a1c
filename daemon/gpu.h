/* SPDX-License-Identifier: MIT */
/*
 * Executor supervision: oood starts one executor process per GPU (itself,
 * re-executed with --executor), watches it through a pidfd on the io_uring
 * loop, and restarts it with backoff when it dies. An executor that finds no
 * driver, no device or the toolkit's stub library exits with
 * EXEC_EXIT_NODEV and is not restarted; its reason is what `oooctl status`
 * shows.
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

#include "exec/exec_proto.h"
#include "parts.h"

#define GPU_MAX 64
#define GPU_BACKOFF_MIN_MS 1000u
#define GPU_BACKOFF_MAX_MS 30000u
#define GPU_STABLE_NS (60ull * 1000000000ull) /* up this long: next restart starts from the minimum backoff */
#define GPU_PING_NS (2ull * 1000000000ull)    /* the watchdog pings a ready executor this often */
#define GPU_HANG_NS (30ull * 1000000000ull)   /* and kills one that has not answered for this long */
#define GPU_STATS_WARN_NS (60ull * 1000000000ull) /* at most one warning this often about unusable EXEC_MSG_STATS */

struct server;

struct gpu {
	uint32_t idx;
	uint32_t state; /* enum ooo_device_state */
	pid_t pid;      /* 0 when no executor runs */
	bool tm_tracked; /* pid is in the telemetry set */
	bool mps_client; /* started with oood's MPS environment (counts against [mps] max_clients) */
	int pidfd, ctl;
	unsigned inflight; /* io_uring operations on pidfd/ctl */
	bool exited;
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
	struct gpu_parts parts; /* the SM partition plan sent to the running executor, and its answer */
	char reason[OOO_ERRMSG_MAX];
	unsigned char rbuf[4096];
	struct msghdr rmsg;
	struct iovec riov;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} rcmsg;
};

struct gpus {
	struct gpu g[GPU_MAX];
	uint32_t n; /* slots in use: 1 until executor 0 reports the device count */
	bool enabled;
	char exe[PATH_MAX];
	char reason[OOO_ERRMSG_MAX]; /* why there are no executors at all */
};

/* Start executor 0 if the policy enables executors. Returns 0 or -errno (logged). */
int gpu_start(struct server *srv);
void gpu_on_exit(struct server *srv, uint32_t idx, int res);
void gpu_on_recv(struct server *srv, uint32_t idx, int res);
/* Restarts that are due; SIGKILL executors that outlive the shutdown grace. */
void gpu_tick(struct server *srv, uint64_t now_ns);
/* Shutdown: SIGTERM every executor. */
void gpu_stop_all(struct server *srv);
/* No executor left and no operation in flight. */
bool gpu_all_stopped(const struct server *srv);
/* Kill and reap every executor now (daemon exit paths). */
void gpu_fini(struct server *srv);

/* Send a message (and a descriptor if fd >= 0) to executor idx without blocking. Returns 0 or -errno. */
int gpu_send(struct server *srv, uint32_t idx, uint16_t type, const void *p, size_t n, int fd);
/* The same with up to 4 descriptors (they stay the caller's). */
int gpu_send_fds(struct server *srv, uint32_t idx, uint16_t type, const void *p, size_t n, const int *fds, int nfds);
/*
 * Index of a ready GPU for session s's new buffer or data path: `want`, or
 * for OOO_DEVICE_ANY the session's own GPU (attached, else its buffers'),
 * else the least loaded ready one (daemon/place.h); -OOO_ENODEV if none.
 */
struct session;
int gpu_pick(const struct server *srv, const struct session *s, uint32_t want);

/* Counts for status: devices known, devices ready. */
void gpu_counts(const struct server *srv, uint32_t *known, uint32_t *ready);
/* Why no device is ready ("" when one is). */
const char *gpu_reason(const struct server *srv);
/* The last counters of GPU idx's executor and their age at now_ns; false if it has sent none. */
bool gpu_sched_counters(const struct server *srv, uint32_t idx, uint64_t now_ns, struct ooo_sched_counters *c,
			uint64_t *age_ns);

#endif
