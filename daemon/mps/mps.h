/* SPDX-License-Identifier: MIT */
/*
 * NVIDIA MPS control (docs/native.md): oood runs `nvidia-cuda-mps-control -f`
 * as its child with private pipe and log directories under the run
 * directory, watches it through a pidfd on the io_uring loop, restarts it
 * with backoff, and stops it at shutdown once the leased clients are gone
 * (terminate_client after [mps] stop_grace_ms).
 *
 * Commands are text on the stdin of a second `nvidia-cuda-mps-control`
 * process. Its exit status is 0 whatever it thought of the command, so every
 * reply is parsed: the mps_parse_* functions below are pure and are what the
 * unit tests and the fuzzer drive.
 *
 * Ownership: the server owns one struct mps (srv->mps) for its whole life;
 * it owns the control daemon's pid, pidfd and log descriptor.
 */
#ifndef OOO_MPS_H
#define OOO_MPS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ooo/proto.h>

#include "mps_text.h"

#define MPS_CMD_TIMEOUT_MS 3000u    /* one control command, spawn to exit */
#define MPS_READY_TIMEOUT_MS 10000u /* the control daemon must answer by then */
#define MPS_REPLY_MAX 4096u         /* reply bytes read; more is an error */
#define MPS_LOG_MAX (64ull << 20)   /* control.log is truncated beyond this */
#define MPS_BACKOFF_MIN_MS 1000u
#define MPS_BACKOFF_MAX_MS 30000u
#define MPS_CMD_MAX 128u            /* longest command line (oooctl mps run) */
#define MPS_STALL_NS (10ull * 1000000000ull) /* a control program that did not answer is not asked again for this long */

struct server;
struct module;

struct mps {
	uint32_t state; /* enum ooo_mps_state */
	pid_t pid;      /* the control daemon; 0 if none */
	bool child;     /* ours to reap (false: adopted from an earlier oood) */
	int pidfd;
	bool poll_armed;
	uint32_t gen; /* of the pidfd poll */
	bool multiuser, executor_client;
	uint32_t restarts, backoff_ms;
	uint64_t started_ns, restart_at_ns, ready_by_ns, stop_by_ns, quit_sent_ns;
	bool terminated; /* shutdown: terminate_client sent to the leased clients */
	uint64_t stall_until_ns; /* after a command timed out: others fail at once until then */
	int log_fd;
	char control[PATH_MAX];
	char dir[PATH_MAX], pipe_dir[PATH_MAX], log_dir[PATH_MAX];
	char ld_path[PATH_MAX]; /* LD_LIBRARY_PATH for the control daemon and its servers */
	char reason[OOO_ERRMSG_MAX];
	uint64_t commands, command_errors;
	uint32_t op; /* of the pidfd poll (server_add_op) */
	/*
	 * The clients it must wait for at shutdown, and how to end them: the
	 * leases module sets these (NULL: none).
	 */
	uint32_t (*clients)(const struct server *srv);
	void (*terminate_clients)(struct server *srv);
};

/* ---- the control daemon ------------------------------------------------------------------ */

/*
 * The module (server.h): owns srv->mps. Its start runs the control daemon
 * per the policy's [mps] (before the executors, which are to be its
 * clients), never fatally; the tick restarts it, watches readiness and
 * steps the shutdown: stop once the clients (mps->clients) are gone or
 * stop_grace_ms passed, then terminate them; fini kills what is left.
 * Handles OOO_MSG_MPS_RUN.
 */
extern const struct module mps_module;
bool mps_running(const struct server *srv);
/* Running, or stopping with the control daemon still up: commands can be sent. */
bool mps_reachable(const struct server *srv);

/*
 * Run one command line (already checked) and return the reply text. Blocks
 * the loop for at most MPS_CMD_TIMEOUT_MS. Returns 0 or -errno.
 */
int mps_run(struct server *srv, const char *cmd, char *reply, size_t cap);
/* terminate_client for pid on whichever server has it: 0, -ESRCH (not a client), or -errno; why says. */
int mps_terminate_pid(struct server *srv, pid_t pid, char *why, size_t wcap);

/* Environment of an executor that is to be an MPS client (set in its child before exec). */
void mps_executor_env(const struct server *srv);

#endif
