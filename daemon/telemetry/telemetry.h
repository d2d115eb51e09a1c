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
struct module;

/*
 * The module (server.h): owns srv->tm. Its start loads and attaches the
 * probes per the policy's [telemetry], never fatally: when they cannot run
 * it logs one line and the state says why. A reload that changes
 * [telemetry] restarts them; the tick ages out exited processes and looks
 * for libraries; every tenant session's pid is tracked while it is open.
 * Handles OOO_MSG_TELEMETRY, OOO_MSG_PROCS and OOO_MSG_TRACE.
 */
extern const struct module telemetry_module;

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


#endif
