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

#include "policy/admit.h"
#include "policy/policy.h"
#include "policy/registry.h"

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
#define SERVER_TICK_NS 250000000ull /* the period of the modules' tick hook */

struct conn;
struct server;
struct session;
struct io_uring_cqe;

/* ---- what modules register ------------------------------------------------ */

/*
 * A completion of an operation a module submitted with user_data
 * ud_make(op, slot, gen), op from server_add_op.
 */
typedef void (*server_op_fn)(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe);

/* handler flags: the checks the loop makes before calling a handler */
enum {
	H_TENANT = 1u << 0, /* a tenant session's request: refused (EINVAL, `refusal`) on admin.sock */
	H_ADMIN = 1u << 1,  /* an operator's request: refused (OOO_ENOTADMIN) on oood.sock */
};

/*
 * A module's handler of one request type. Exactly one of fn and build:
 * - fn answers the request itself (server_reply*), now or later; payload
 *   is valid only during the call (wire_decode checked its length);
 * - build writes an admin reply's payload into buf (cap bytes) and returns
 *   its length or -errno; the loop sends it, or the error.
 */
struct handler {
	uint16_t type;  /* OOO_MSG_* below SERVER_TYPES */
	uint16_t flags; /* H_* */
	const char *refusal; /* H_TENANT: what the error says, e.g. "buffers belong to tenant sessions" */
	void (*fn)(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len);
	ssize_t (*build)(struct server *srv, const void *payload, void *buf, size_t cap);
};
#define SERVER_TYPES 64u

/*
 * A control-plane module: its lifecycle and its handlers. The daemon's
 * modules are one ordered table (modules.c): init, start and tick run in
 * table order, fini in reverse. Every hook may be NULL.
 */
struct module {
	const char *name;
	/* Allocate the module's state; before the sockets exist. 0 or -errno (logged). */
	int (*init)(struct server *srv);
	/* Sockets and ring are up. 0 or -errno (logged): oood does not start. */
	int (*start)(struct server *srv);
	/* Every SERVER_TICK_NS (250 ms) after the last tick's hooks ran, with server_now_ns(). */
	void (*tick)(struct server *srv, uint64_t now_ns);
	/* The policy was replaced (srv->policy is the new one). */
	void (*reload)(struct server *srv);
	/* A tenant session opened (hello accepted) / is closing: release what it holds. */
	void (*session_open)(struct server *srv, struct session *s);
	void (*session_close)(struct server *srv, struct session *s);
	/* Shutdown began: stop what runs. */
	void (*stop)(struct server *srv);
	/* Shutdown: nothing of the module is left running (NULL: true). */
	bool (*stopped)(const struct server *srv);
	/*
	 * Shutdown: the loop waits for stopped() past the connections' grace
	 * until this time (server_now_ns); NULL or 0: it does not wait.
	 */
	uint64_t (*linger_until)(const struct server *srv);
	/* Free the state; after the ring is gone. Accepts a module whose init failed or never ran. */
	void (*fini)(struct server *srv);
	const struct handler *handlers;
	size_t nhandlers;
};

/*
 * io_uring user_data: a packed tag {slot, generation, op}, never a pointer.
 * The loop's own operations have the fixed numbers below; a module gets
 * numbers for its own from server_add_op.
 */
enum op {
	OP_ACCEPT = 1,
	OP_RECV,
	OP_SEND,
	OP_SIGNAL,
	OP_TICK,
	OP_CANCEL,
	OP_MODULE_FIRST = 16, /* the first number server_add_op hands out */
	OP_MAX = 64,
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
	const struct module *const *modules; /* in order, NULL-terminated; they outlive the server */
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

	const struct module *const *modules;
	const struct handler *handler[SERVER_TYPES]; /* by request type */
	server_op_fn op[OP_MAX];
	uint32_t nops;

	uint64_t start_ns;
	bool stopping;
	uint64_t stop_deadline_ns;
	/*
	 * The modules' state, each allocated by its module's init and freed by
	 * its fini (NULL before and after): the loop never looks inside.
	 */
	struct gpus *gpus;        /* executor slots (gpu.c) */
	struct buffers *bufs;     /* device buffers (buffers.c) */
	struct dpaths *dp;        /* tenants' data paths, hangs and faults (dpath.c) */
	struct telemetry *tm;     /* eBPF probes (telemetry.c) */
	struct mps *mps;          /* the MPS control daemon (mps.c) */
	struct leases *leases;    /* native tenants' MPS leases (lease.c) */
	struct parts *parts;      /* SM partitions: what oooctl set, the plans' numbering (parts.c) */
	struct notifier *notifier; /* the service manager's watchdog and status lines (notify.c) */
	struct metrics *metrics;  /* the Prometheus listener and its connections (metrics.c) */
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

/*
 * A new operation number for a module's completions (call from init):
 * OP_MODULE_FIRST.., or -ENOSPC past OP_MAX.
 */
int server_add_op(struct server *srv, server_op_fn fn);
/*
 * Hand a request to its handler again (a request parked until an executor
 * was ready, gpu.c): as if it had just arrived on c. payload is the copy
 * the caller kept.
 */
void server_redispatch(struct server *srv, struct conn *c, uint32_t seq, uint16_t type, const void *payload,
		       size_t len);
/*
 * Call the admin build handler of type (struct handler.build) as if an
 * operator had asked on admin.sock, with req its request payload (a
 * struct ooo_msg_list_req for the paged lists; NULL for types that take
 * none): the reply's payload into buf (cap bytes; OOO_MSG_MAX minus a
 * header gives the pages admin.sock gives). Returns its length or -errno;
 * -EOPNOTSUPP when no module builds type. For modules that serve the admin
 * views another way (metrics.c); the caller owns buf.
 */
ssize_t server_build(struct server *srv, uint16_t type, const void *req, void *buf, size_t cap);
/* An SQE, submitting what is queued if the ring is full; NULL if still none. */
struct io_uring_sqe *server_get_sqe(struct server *srv);

/* Set up sockets, ring and signals. Returns 0 or -errno (logged). */
int server_init(struct server *srv, const struct server_opts *opts, struct policy *policy);

/*
 * server_setup.c, for server_init: create the run directory (srv->rundir)
 * and take its lock, then the signalfd, the ring and both listening
 * sockets. Returns 0 or -errno (logged); what was made is srv's, released
 * by server_fini.
 */
int server_setup(struct server *srv);

/* Run until SIGTERM/SIGINT and every session is closed. Returns 0 or -errno. */
int server_run(struct server *srv);

/* Release everything. Safe on a partly initialised server. */
void server_fini(struct server *srv);

uint64_t server_now_ns(void);

/* Reload the policy from its source. Fills msg with what happened. Returns 0 or -errno. */
int server_reload(struct server *srv, char *msg, size_t cap);

#endif
