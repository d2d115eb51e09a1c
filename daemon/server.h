/* SPDX-License-Identifier: MIT */
/*
 * The oood control plane: one io_uring loop serving oood.sock (tenants) and
 * admin.sock (operators), signals and timers.
 *
 * Ownership: the server owns the ring, the listening sockets, every
 * connection, the registry and the current policy. A connection owns its
 * socket and buffers and is freed only once no io_uring operation that
 * refers to it is in flight.
 */
#ifndef OOO_SERVER_H
#define OOO_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/signalfd.h>

#include <liburing.h>

#include "admit.h"
#include "gpu.h"
#include "lease.h"
#include "mps.h"
#include "policy.h"
#include "registry.h"

#define SERVER_PENDING_MAX 1024  /* tenant connections that have not said hello yet */
#define SERVER_PENDING_ADMIN_MAX 32 /* the same on admin.sock */
/*
 * A uid's share of a socket's pending slots is the socket's cap over the
 * uids holding some, its own counted (admit.h), but never less than this,
 * so that a program's burst of opens fits however many uids are waiting
 * (past 32 uids on oood.sock, 8 on admin.sock, the share is this floor).
 */
#define SERVER_PENDING_UID_MIN 32
#define SERVER_PENDING_ADMIN_UID_MIN 4
#define SERVER_REQ_MAX 8192u     /* largest request datagram accepted */
#define SERVER_SENDQ_MAX 16      /* queued replies before reading pauses */
#define SERVER_FINISH_MS 5000ull /* a connection told to close is closed by then */
#define SERVER_MAX_FDS 3          /* descriptors passed with one reply */

struct conn;

/* io_uring user_data: a packed tag {slot, generation, op}, never a pointer. */
enum op {
	OP_ACCEPT = 1,
	OP_RECV,
	OP_SEND,
	OP_SIGNAL,
	OP_TICK,
	OP_CANCEL,
	OP_GPU_EXIT, /* pidfd of an executor became readable; slot = GPU index */
	OP_GPU_RECV, /* datagram from an executor; slot = GPU index */
	OP_TELEM,    /* the telemetry ring buffer is readable; gen = its poll generation */
	OP_MPS_EXIT,   /* pidfd of the MPS control daemon; gen = its poll generation */
	OP_LEASE_EXIT, /* pidfd of a leased native tenant; slot = lease slot, gen = its generation */
};

static inline uint64_t ud_make(enum op op, uint32_t slot, uint32_t gen)
{
	return ((uint64_t)slot << 32) | ((uint64_t)(gen & 0xffffffu) << 8) | (uint64_t)op;
}

static inline enum op ud_op(uint64_t ud)
{
	return (enum op)(ud & 0xff);
}

static inline uint32_t ud_slot(uint64_t ud)
{
	return (uint32_t)(ud >> 32);
}

static inline uint32_t ud_gen(uint64_t ud)
{
	return (uint32_t)(ud >> 8) & 0xffffffu;
}

struct server_opts {
	const char *rundir;
	const char *config_path; /* NULL: embedded defaults */
	bool config_explicit;    /* given with -c: must exist at reload too */
	int log_level_override;  /* -v: kept across reloads; -1 if none */
};

struct server_stats {
	uint64_t sessions_total;
	uint64_t sessions_refused;
	uint64_t msgs_in;
	uint64_t msgs_out;
	uint64_t proto_errors;
	uint64_t reloads_failed;
};

#define SERVER_GONE 4096u

struct server {
	struct io_uring ring;
	bool ring_ok;
	int listen_fd[2]; /* 0: tenants, 1: admin */
	bool accept_armed[2];
	int sig_fd;
	int lock_fd;
	struct signalfd_siginfo siginfo;
	struct __kernel_timespec tick;

	char rundir[OOO_PATH_MAX - 16];
	char sock_path[2][OOO_PATH_MAX];
	char config_path[OOO_PATH_MAX];
	bool config_explicit;
	int log_level_override;

	struct policy *policy;
	uint64_t policy_generation;
	uint64_t policy_loaded_ns; /* CLOCK_REALTIME */
	struct registry reg;
	struct server_stats stats;

	struct conn **slots;
	uint32_t nslots;
	uint32_t free_head; /* UINT32_MAX when none */
	struct list_node conns;   /* every connection */
	struct list_node pending; /* not yet said hello, oldest first */
	struct list_node reap;    /* closed, nothing in flight: free after this batch */
	struct admit_table pend[2]; /* per listener (tenants, admin): who holds its pending slots */
	uint32_t nadmin;
	uint32_t nconns;

	uint64_t start_ns;
	bool stopping;
	uint64_t stop_deadline_ns;
	struct gpus gpus;
	struct list_node buffers; /* every struct buffer (buffers.c) */
	struct list_node dpaths;  /* every struct sdpath (dpath.c) */
	struct list_node xreqs;   /* requests forwarded to executors (dpath.c) */
	/* per executor slot (dpath.c): sessions whose modules are being restored, oldest first, and their requests out */
	struct list_node restoring[EXEC_MAX];
	uint32_t restore_out[EXEC_MAX];
	struct telemetry *tm;     /* eBPF probes (telemetry.c) */
	struct mps mps;           /* the MPS control daemon (mps.c) */
	struct leases leases;     /* native tenants' MPS leases (lease.c) */
	struct parts parts;       /* SM partitions: what oooctl set, the plans' numbering (parts.c) */
	struct hangs *hangs;      /* tenants whose work ran past kernel_time_limit_ms (dpath.c; NULL until the first) */
	/*
	 * Attached data paths released whose executor has not yet answered
	 * their detach (dpath.c): an executor's report of a hang
	 * (EXEC_MSG_HUNG) can name a session that closed while its kernel ran
	 * (its detach waits on that kernel), and the hang still counts against
	 * its tenant. Freed by the detach's answer or the executor's end; past
	 * SERVER_GONE at once, the oldest is forgotten.
	 */
	struct server_gone {
		uint64_t session; /* 0: unused */
		uint32_t gpu, uid;
	} gone[SERVER_GONE];
	uint32_t gone_next;
};

struct conn_ref server_conn_ref(const struct conn *c);
/* The connection if it is still open and not closing, else NULL. */
struct conn *server_conn_get(struct server *srv, struct conn_ref ref);
struct session *server_conn_session(const struct conn *c);
const struct peer_cred *server_conn_cred(const struct conn *c);
int server_conn_fd(const struct conn *c);
/* Queue a reply (type without OOO_MSG_REPLY); takes ownership of fd if >= 0. */
void server_reply(struct server *srv, struct conn *c, uint16_t type, uint32_t seq, const void *p, size_t n, int fd);
void server_reply_error(struct server *srv, struct conn *c, uint16_t type, uint32_t seq, int status, const char *fmt,
			...) __attribute__((format(printf, 6, 7)));
/* Like server_reply with up to SERVER_MAX_FDS descriptors (taken over). */
void server_reply_fds(struct server *srv, struct conn *c, uint16_t type, uint32_t seq, const void *p, size_t n,
		      const int *fds, int nfds);
/* The descriptor that came with the request being handled (the caller owns it now), or -1. */
int server_take_fd(struct conn *c);
/* An unsolicited notice (OOO_NOTICE_*) to the connection's peer. */
void server_notice(struct server *srv, struct conn *c, uint32_t kind, const char *msg);
/*
 * Send the notice, then close the connection once it is sent (its session
 * and everything the session owns are released then, possibly at once:
 * the caller must not use them afterwards).
 */
void server_notice_close(struct server *srv, struct conn *c, uint32_t kind, const char *msg, const char *why);

/* An SQE, submitting what is queued if the ring is full; NULL if still none. */
struct io_uring_sqe *server_get_sqe(struct server *srv);

/* Set up sockets, ring and signals. Returns 0 or -errno (logged). */
int server_init(struct server *srv, const struct server_opts *opts, struct policy *policy);

/* Run until SIGTERM/SIGINT and every session is closed. Returns 0 or -errno. */
int server_run(struct server *srv);

/* Release everything. Safe on a partly initialised server. */
void server_fini(struct server *srv);

uint64_t server_now_ns(void);

/* admin.c: build reply payloads for admin requests into buf; return the length or -errno. */
ssize_t admin_status(struct server *srv, void *buf, size_t cap);
ssize_t admin_list(struct server *srv, uint16_t type, const struct ooo_msg_list_req *req, void *buf, size_t cap);

/* Reload the policy from its source. Fills msg with what happened. Returns 0 or -errno. */
int server_reload(struct server *srv, char *msg, size_t cap);

#endif
