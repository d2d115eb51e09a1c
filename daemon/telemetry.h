/* SPDX-License-Identifier: MIT */
/*
 * eBPF telemetry in oood (docs/telemetry.md): uprobes on libcuda.so.1 and
 * run-queue tracepoints, loaded at start when oood is privileged enough,
 * consumed from the server's io_uring loop.
 *
 * Ownership: the server owns one struct telemetry (srv->tm) for its whole
 * life. It owns the BPF skeletons, every link, the ring buffer, the
 * libraries it opened and the table of tracked pids with their pidfds. The
 * table survives a restart of the probes (a reload that changes
 * [telemetry]); the counters in the maps do not.
 */
#ifndef OOO_TELEMETRY_H
#define OOO_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ooo/proto.h>

struct server;
struct telemetry;

/* Allocate the (stopped) state; -ENOMEM. */
int telemetry_new(struct telemetry **out);
/* Stop the probes and free everything; accepts NULL. */
void telemetry_free(struct telemetry *tm);

/* Load and attach per the policy's [telemetry]. Never fatal: when the probes
 * cannot run it logs one line and the state says why. */
void telemetry_start(struct server *srv);
void telemetry_stop(struct server *srv);
/* After a reload: restart the probes if [telemetry] changed. */
void telemetry_reload(struct server *srv);

/* A completion of the ring buffer's poll (OP_TELEM). */
void telemetry_on_poll(struct server *srv, uint32_t gen, int res, uint32_t flags);
/* From the server's tick: ages out exited processes, looks for libraries. */
void telemetry_tick(struct server *srv, uint64_t now);

/*
 * Add `why` (one OOO_TRACK_* reason) to pid; `launches` asks for its
 * cuLaunchKernel calls to be probed too. References count per reason except
 * OOO_TRACK_OPERATOR, which is set or cleared. Returns 0, -ESRCH (no such
 * process), -ENOSPC (max_tracked pids already) with msg filled.
 */
int telemetry_track(struct server *srv, pid_t pid, uint32_t why, bool launches, char *msg, size_t cap);
/* Drop one reference of `why` (and of launches if given); the pid leaves the set with its last one. */
void telemetry_untrack(struct server *srv, pid_t pid, uint32_t why, bool launches);

/* The counters of one process (a native tenant's, for lease feedback); 0, or -ENOENT when there are none. */
int telemetry_proc(struct server *srv, pid_t pid, struct ooo_proc_rec *r);

/* Admin replies; return the payload length or -errno. */
ssize_t telemetry_admin_status(struct server *srv, void *buf, size_t cap);
ssize_t telemetry_admin_procs(struct server *srv, const struct ooo_msg_list_req *req, void *buf, size_t cap);
/* OOO_MSG_TRACE: fills *rep; returns 0 or -errno (rep->msg says why). */
int telemetry_admin_trace(struct server *srv, const struct ooo_msg_trace *req, struct ooo_msg_trace_reply *rep);

#endif
