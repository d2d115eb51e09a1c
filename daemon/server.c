/* SPDX-License-Identifier: MIT */
/*
 * The control-plane event loop. Everything is a completion on one io_uring:
 * multishot accepts on both sockets, one recvmsg and at most one send in
 * flight per connection, a periodic tick, and reads of a signalfd.
 *
 * user_data is a packed tag {slot, generation, op}, never a pointer: a
 * completion for a connection is looked up by slot and ignored if the
 * generation does not match. A connection counts its operations in flight
 * and is freed only when that count drops to zero after it was closed.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../proto/fdpass.h"
#include "../proto/wire.h"
#include "log.h"
#include "notify.h"
#include "peer_cgroup.h"

#define SLOT_NONE UINT32_MAX
#define MAX_SLOTS (65536u + 1024u + SERVER_PENDING_MAX + SERVER_PENDING_ADMIN_MAX)
#define MAX_RECV_FDS 16
#define SENDQ_CAP (SERVER_SENDQ_MAX + 4) /* room for notices past the read limit */

_Static_assert(SERVER_PENDING_MAX <= ADMIT_UIDS_MAX && SERVER_PENDING_ADMIN_MAX <= ADMIT_UIDS_MAX,
	       "a pending table must have an entry for each uid its connections can have");

enum conn_state { CONN_HELLO, CONN_OPEN, CONN_CLOSING };

struct outmsg {
	void *buf;
	size_t len;
	int fds[SERVER_MAX_FDS]; /* passed with the message (SCM_RIGHTS), closed once sent */
	int nfds;
};

struct conn {
	struct list_node node;  /* srv->conns */
	struct list_node pnode; /* srv->pending while in CONN_HELLO, srv->reap once freed */
	uint32_t slot, gen;
	int fd;
	bool admin;
	enum conn_state state;
	bool recv_armed, send_armed, close_after_send, admitted_admin, reaping;
	const char *close_reason; /* static text, for the log once closed */
	int rx_fd; /* descriptor passed with the message being handled, -1 if none */
	unsigned inflight;
	struct peer_cred cred;
	struct session *sess;
	uint64_t accepted_ns;
	uint64_t finish_by_ns; /* close_after_send: closed then even if the peer does not read */
	char label[OOO_NAME_MAX];

	struct msghdr rmsg;
	struct iovec riov;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * MAX_RECV_FDS)];
	} rcmsg;
	unsigned char rbuf[SERVER_REQ_MAX + 1];

	struct outmsg q[SENDQ_CAP];
	unsigned qhead, qlen;
	struct msghdr smsg; /* the send in flight, when it passes a descriptor */
	struct iovec siov;
	union {
		struct cmsghdr align;
		char buf[FDPASS_SPACE(SERVER_MAX_FDS)];
	} scmsg;
};

uint64_t server_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct io_uring_sqe *server_get_sqe(struct server *srv)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&srv->ring);

	if (!sqe) {
		io_uring_submit(&srv->ring);
		sqe = io_uring_get_sqe(&srv->ring);
	}
	return sqe;
}

/* ---- slots ---------------------------------------------------------------- */

static uint32_t *slot_gens;
static uint32_t *slot_free;
static uint32_t slot_nfree;

static int slot_alloc(struct server *srv, struct conn *c)
{
	if (!slot_nfree) {
		uint32_t n = srv->nslots ? srv->nslots * 2 : 64, old = srv->nslots;
		struct conn **ns;
		uint32_t *ng, *nf;

		if (old >= MAX_SLOTS)
			return -ENFILE;
		if (n > MAX_SLOTS)
			n = MAX_SLOTS;
		ns = realloc(srv->slots, n * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		srv->slots = ns;
		ng = realloc(slot_gens, n * sizeof(*ng));
		if (!ng)
			return -ENOMEM;
		slot_gens = ng;
		nf = realloc(slot_free, n * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		slot_free = nf;
		for (uint32_t i = old; i < n; i++) {
			ns[i] = NULL;
			ng[i] = 0;
		}
		/* hand out low slots first */
		for (uint32_t i = n; i > old; i--)
			slot_free[slot_nfree++] = i - 1;
		srv->nslots = n;
	}
	c->slot = slot_free[--slot_nfree];
	c->gen = ++slot_gens[c->slot] & 0xffffffu;
	srv->slots[c->slot] = c;
	return 0;
}

static void slot_release(struct server *srv, struct conn *c)
{
	srv->slots[c->slot] = NULL;
	slot_free[slot_nfree++] = c->slot;
}

/* ---- connections ------------------------------------------------------------ */

static void conn_close(struct server *srv, struct conn *c, const char *why);
static void conn_finish(struct server *srv, struct conn *c, const char *why);

/*
 * A connection is on the pending list, and counted in its socket's table
 * of who holds the pending slots, from its accept until it says hello, is
 * told to go without one, or closes: the two change together here.
 */
static void pending_leave(struct server *srv, struct conn *c)
{
	list_del(&c->pnode);
	admit_del(&srv->pend[c->admin], c->cred.uid);
}

/*
 * A closed connection with nothing in flight is put on the reap list and
 * freed between completion batches, so no caller up the stack is left
 * holding a freed pointer.
 */
static void conn_maybe_free(struct server *srv, struct conn *c)
{
	if (c->state != CONN_CLOSING || c->inflight || c->reaping)
		return;
	c->reaping = true;
	list_add_tail(&srv->reap, &c->pnode);
}

static void conn_free(struct server *srv, struct conn *c)
{
	while (c->qlen) {
		for (int i = 0; i < c->q[c->qhead].nfds; i++)
			close(c->q[c->qhead].fds[i]);
		free(c->q[c->qhead].buf);
		c->qhead = (c->qhead + 1) % SENDQ_CAP;
		c->qlen--;
	}
	close(c->fd);
	list_del(&c->node);
	slot_release(srv, c);
	srv->nconns--;
	free(c);
}

static void reap(struct server *srv)
{
	while (!list_empty(&srv->reap)) {
		struct conn *c = list_entry(srv->reap.next, struct conn, pnode);

		list_del(&c->pnode);
		conn_free(srv, c);
	}
}

static void conn_arm_recv(struct server *srv, struct conn *c)
{
	struct io_uring_sqe *sqe;

	if (c->recv_armed || c->state == CONN_CLOSING || c->close_after_send || c->qlen >= SERVER_SENDQ_MAX)
		return;
	sqe = server_get_sqe(srv);
	if (!sqe) {
		conn_close(srv, c, "submission queue full");
		return;
	}
	c->riov.iov_base = c->rbuf;
	c->riov.iov_len = sizeof(c->rbuf);
	memset(&c->rmsg, 0, sizeof(c->rmsg));
	memset(&c->rcmsg, 0, sizeof(c->rcmsg));
	c->rmsg.msg_iov = &c->riov;
	c->rmsg.msg_iovlen = 1;
	c->rmsg.msg_control = c->rcmsg.buf;
	c->rmsg.msg_controllen = sizeof(c->rcmsg.buf);
	io_uring_prep_recvmsg(sqe, c->fd, &c->rmsg, MSG_CMSG_CLOEXEC);
	io_uring_sqe_set_data64(sqe, ud_make(OP_RECV, c->slot, c->gen));
	c->recv_armed = true;
	c->inflight++;
}

static void conn_flush(struct server *srv, struct conn *c)
{
	struct io_uring_sqe *sqe;
	struct outmsg *m;

	if (c->send_armed || !c->qlen || c->state == CONN_CLOSING)
		return;
	sqe = server_get_sqe(srv);
	if (!sqe) {
		conn_close(srv, c, "submission queue full");
		return;
	}
	m = &c->q[c->qhead];
	if (!m->nfds) {
		io_uring_prep_send(sqe, c->fd, m->buf, m->len, MSG_NOSIGNAL);
	} else {
		c->siov = (struct iovec){ m->buf, m->len };
		memset(&c->smsg, 0, sizeof(c->smsg));
		c->smsg.msg_iov = &c->siov;
		c->smsg.msg_iovlen = 1;
		fdpass_pack(&c->smsg, c->scmsg.buf, sizeof(c->scmsg.buf), m->fds, m->nfds); /* nfds <= SERVER_MAX_FDS */
		io_uring_prep_sendmsg(sqe, c->fd, &c->smsg, MSG_NOSIGNAL);
	}
	io_uring_sqe_set_data64(sqe, ud_make(OP_SEND, c->slot, c->gen));
	c->send_armed = true;
	c->inflight++;
}

/* Queue a ready-made datagram (takes ownership of buf and of the nfds descriptors). */
static void conn_queue_fds(struct server *srv, struct conn *c, void *buf, size_t len, const int *fds, int nfds)
{
	struct outmsg *m;

	if (c->state == CONN_CLOSING || c->qlen >= SENDQ_CAP) {
		free(buf);
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		if (c->state != CONN_CLOSING)
			conn_close(srv, c, "reply queue overflow");
		return;
	}
	m = &c->q[(c->qhead + c->qlen) % SENDQ_CAP];
	m->buf = buf;
	m->len = len;
	m->nfds = nfds;
	for (int i = 0; i < nfds; i++)
		m->fds[i] = fds[i];
	c->qlen++;
	srv->stats.msgs_out++;
	conn_flush(srv, c);
}

static void conn_queue(struct server *srv, struct conn *c, void *buf, size_t len)
{
	conn_queue_fds(srv, c, buf, len, NULL, 0);
}

static void conn_reply_fds(struct server *srv, struct conn *c, uint16_t type, uint32_t seq, const void *payload,
			   size_t plen, const int *fds, int nfds)
{
	size_t cap = sizeof(struct ooo_msg_hdr) + plen;
	void *buf = malloc(cap);
	ssize_t n;

	if (!buf) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		conn_close(srv, c, "out of memory");
		return;
	}
	n = wire_encode(buf, cap, (uint16_t)(type | OOO_MSG_REPLY), seq, 0, payload, plen);
	conn_queue_fds(srv, c, buf, (size_t)n, fds, nfds);
}

static void conn_reply(struct server *srv, struct conn *c, uint16_t type, uint32_t seq, const void *payload,
		       size_t plen)
{
	size_t cap = sizeof(struct ooo_msg_hdr) + plen;
	void *buf = malloc(cap);
	ssize_t n;

	if (!buf) {
		conn_close(srv, c, "out of memory");
		return;
	}
	n = wire_encode(buf, cap, (uint16_t)(type | OOO_MSG_REPLY), seq, 0, payload, plen);
	if (n < 0) {
		free(buf);
		conn_close(srv, c, "reply too large");
		return;
	}
	conn_queue(srv, c, buf, (size_t)n);
}

static void __attribute__((format(printf, 6, 7)))
conn_reply_error(struct server *srv, struct conn *c, uint16_t type, uint32_t seq, int status, const char *fmt, ...)
{
	size_t cap = sizeof(struct ooo_msg_hdr) + sizeof(struct ooo_msg_error);
	char msg[OOO_ERRMSG_MAX];
	void *buf = malloc(cap);
	va_list ap;
	ssize_t n;

	if (!buf) {
		conn_close(srv, c, "out of memory");
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = wire_encode_error(buf, cap, type, seq, status, "%s", msg);
	if (n < 0) {
		free(buf);
		conn_close(srv, c, "reply too large");
		return;
	}
	conn_queue(srv, c, buf, (size_t)n);
}

static void conn_notice(struct server *srv, struct conn *c, uint32_t kind, const char *msg)
{
	struct ooo_msg_notice no = { .kind = kind };
	size_t cap = sizeof(struct ooo_msg_hdr) + sizeof(no);
	void *buf;
	ssize_t n;

	if (c->state == CONN_CLOSING)
		return;
	buf = malloc(cap);
	if (!buf) {
		conn_close(srv, c, "out of memory");
		return;
	}
	wire_strcpy(no.msg, sizeof(no.msg), msg);
	n = wire_encode(buf, cap, OOO_MSG_NOTICE, 0, 0, &no, sizeof(no));
	if (n < 0) {
		free(buf);
		conn_close(srv, c, "notice too large");
		return;
	}
	conn_queue(srv, c, buf, (size_t)n);
}

/* ---- for the modules that answer tenants later (buffers) ---- */

struct conn_ref server_conn_ref(const struct conn *c)
{
	return (struct conn_ref){ c->slot, c->gen };
}

struct conn *server_conn_get(struct server *srv, struct conn_ref ref)
{
	struct conn *c = ref.slot < srv->nslots ? srv->slots[ref.slot] : NULL;

	if (!c || c->gen != ref.gen || c->state != CONN_OPEN || c->close_after_send)
		return NULL;
	return c;
}

const struct peer_cred *server_conn_cred(const struct conn *c)
{
	return &c->cred;
}

int server_conn_fd(const struct conn *c)
{
	return c->fd;
}

struct session *server_conn_session(const struct conn *c)
{
	return c->sess;
}

void server_reply(struct server *srv, struct conn *c, uint16_t type, uint32_t seq, const void *p, size_t n, int fd)
{
	conn_reply_fds(srv, c, type, seq, p, n, &fd, fd >= 0 ? 1 : 0);
}

void server_reply_fds(struct server *srv, struct conn *c, uint16_t type, uint32_t seq, const void *p, size_t n,
		      const int *fds, int nfds)
{
	conn_reply_fds(srv, c, type, seq, p, n, fds, nfds);
}

void server_notice(struct server *srv, struct conn *c, uint32_t kind, const char *msg)
{
	conn_notice(srv, c, kind, msg);
}

void server_notice_close(struct server *srv, struct conn *c, uint32_t kind, const char *msg, const char *why)
{
	conn_notice(srv, c, kind, msg);
	if (c->state != CONN_CLOSING && !c->close_after_send)
		conn_finish(srv, c, why);
}

void server_reply_error(struct server *srv, struct conn *c, uint16_t type, uint32_t seq, int status, const char *fmt,
			...)
{
	char msg[OOO_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	conn_reply_error(srv, c, type, seq, status, "%s", msg);
}

/* Send what is queued, then close; `why` is logged then. */
static void conn_finish(struct server *srv, struct conn *c, const char *why)
{
	if (!c->close_after_send)
		c->finish_by_ns = server_now_ns() + SERVER_FINISH_MS * 1000000ull;
	c->close_after_send = true;
	c->close_reason = why;
	if (!c->qlen && !c->send_armed)
		conn_close(srv, c, why);
}

static void conn_close(struct server *srv, struct conn *c, const char *why)
{
	if (c->state == CONN_CLOSING)
		return;
	if (c->sess) {
		for (const struct module *const *m = srv->modules; *m; m++) {
			if ((*m)->session_close)
				(*m)->session_close(srv, c->sess);
		}
		log_peer("session %llu (uid %u pid %u) closed: %s", (unsigned long long)c->sess->id, c->cred.uid,
			 c->cred.pid, why);
		registry_close(&srv->reg, c->sess);
		c->sess = NULL;
	} else {
		log_debug("%s connection of pid %u closed: %s", c->admin ? "admin" : "tenant", c->cred.pid, why);
	}
	if (c->state == CONN_HELLO)
		pending_leave(srv, c);
	if (c->admitted_admin)
		srv->nadmin--;
	c->state = CONN_CLOSING;
	/* Wakes the recv in flight (it completes with 0) and fails a blocked send. */
	shutdown(c->fd, SHUT_RDWR);
	conn_maybe_free(srv, c);
}

static int read_cred(int fd, struct peer_cred *cred)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	memset(cred, 0, sizeof(*cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		return -errno;
	cred->pid = (uint32_t)uc.pid;
	cred->uid = uc.uid;
	cred->gid = uc.gid;
	len = sizeof(cred->groups);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, cred->groups, &len) == 0) {
		cred->ngroups = len / sizeof(gid_t);
	} else if (errno == ERANGE && len / sizeof(gid_t) <= 65536) {
		/* The kernel says how many there are: fetch all, keep REG_MAX_GROUPS. */
		gid_t *all = malloc(len);

		if (all && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, all, &len) == 0) {
			memcpy(cred->groups, all, sizeof(cred->groups));
			cred->ngroups = REG_MAX_GROUPS;
			log_warn("pid %u uid %u is in %zu groups; only the first %u count for the policy", cred->pid,
				 cred->uid, len / sizeof(gid_t), REG_MAX_GROUPS);
		}
		free(all);
	}
	return 0;
}

/*
 * A tenant's cgroup, for match_cgroup and tenant_by: read at accept through
 * the connector's pidfd (peer_cgroup.c says why that names no other
 * process); "" when it cannot be known, which no match_cgroup matches.
 * A kernel without SO_PEERPIDFD is said once, where the policy looks at
 * cgroups (else at debug level).
 */
static void read_peer_cgroup(struct server *srv, struct conn *c)
{
	static bool said;
	int r = peer_cgroup_read(c->fd, c->cred.cgroup, sizeof(c->cred.cgroup));

	if (r >= 0)
		return;
	if (r == -ENOPROTOOPT && !said && policy_uses_cgroups(srv->policy)) {
		said = true;
		log_warn("this kernel has no SO_PEERPIDFD (Linux 6.5 has it): tenants' cgroups are unknown, so "
			 "classes with match_cgroup match no one and tenant_by = pod or cgroup keys no tenant");
		return;
	}
	log_debug("pid %u uid %u: cgroup unknown: %s", c->cred.pid, c->cred.uid, wire_strerror(r));
}

/* Refuse a connection we cannot even track; best effort, never blocks. */
static void refuse_now(struct server *srv, int fd, int status, const char *why)
{
	unsigned char buf[sizeof(struct ooo_msg_hdr) + sizeof(struct ooo_msg_error)];
	ssize_t n = wire_encode_error(buf, sizeof(buf), OOO_MSG_HELLO, 0, status, "%s", why);

	if (n > 0)
		(void)send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	srv->stats.sessions_refused++;
	close(fd);
}

/*
 * The oldest connection of uid on one socket that is still waiting for
 * hello and has not been told to go (a protocol error keeps it pending
 * until it closes), or NULL. O(pending): the list is in accept order.
 */
static struct conn *pending_oldest(struct server *srv, uint32_t uid, bool admin)
{
	struct list_node *n;

	list_for_each(n, &srv->pending) {
		struct conn *c = list_entry(n, struct conn, pnode);

		if (c->cred.uid == uid && c->admin == admin && !c->close_after_send)
			return c;
	}
	return NULL;
}

/*
 * Send a connection that has not said hello away: an error reply with
 * sequence 0 (libooo takes it as the answer to the hello it is waiting
 * for), then close once it is sent. Its pending slot is free at once, even
 * if the peer never reads.
 */
static void pending_refuse(struct server *srv, struct conn *c, int status, const char *msg, const char *why)
{
	srv->stats.sessions_refused++;
	pending_leave(srv, c);
	c->state = CONN_OPEN;
	conn_reply_error(srv, c, OOO_MSG_HELLO, 0, status, "%s", msg);
	conn_finish(srv, c, why);
}

static void conn_new(struct server *srv, int fd, bool admin)
{
	struct conn *c, *victim = NULL;
	struct admit_decision d;
	int r;

	if (srv->stopping) {
		refuse_now(srv, fd, -OOO_ESHUTDOWN, "oood is shutting down");
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		refuse_now(srv, fd, -ENOMEM, "out of memory");
		return;
	}
	c->fd = fd;
	c->rx_fd = -1;
	c->admin = admin;
	r = read_cred(fd, &c->cred);
	if (r < 0) {
		log_warn("cannot read peer credentials: %s, closing", wire_strerror(r));
		free(c);
		refuse_now(srv, fd, r, "cannot read peer credentials");
		return;
	}
	/* only where the policy looks at cgroups: it costs five system calls per connection */
	if (!admin && policy_uses_cgroups(srv->policy))
		read_peer_cgroup(srv, c);
	/*
	 * Connections that have not said hello cost memory and a slot: each
	 * socket has its own table of them (so tenants cannot lock operators
	 * out), shared out among uids by admit_decide (so no uid, nor a group
	 * of uids, can lock another out: when the table is full, a uid holding
	 * fewer than the biggest holder takes that holder's oldest slot).
	 */
	d = admit_decide(&srv->pend[admin], c->cred.uid, admin ? SERVER_PENDING_ADMIN_MAX : SERVER_PENDING_MAX,
			 admin ? SERVER_PENDING_ADMIN_UID_MIN : SERVER_PENDING_UID_MIN);
	if (d.verdict == ADMIT_EVICT && !(victim = pending_oldest(srv, d.victim, admin)))
		d.verdict = ADMIT_FULL; /* the victim's are all going already: wait for them */
	if (d.verdict == ADMIT_SHARE || d.verdict == ADMIT_FULL) {
		char why[OOO_ERRMSG_MAX];

		if (d.verdict == ADMIT_SHARE)
			snprintf(why, sizeof(why),
				 "too many connections waiting for hello from uid %u (its share is %u)", c->cred.uid,
				 d.share);
		else
			snprintf(why, sizeof(why), "too many connections waiting for hello");
		log_peer("%s, refusing pid %u uid %u", why, c->cred.pid, c->cred.uid);
		free(c);
		refuse_now(srv, fd, -OOO_ELIMIT, why);
		return;
	}
	r = slot_alloc(srv, c);
	if (r < 0) {
		free(c);
		refuse_now(srv, fd, -OOO_ELIMIT, "too many connections");
		return;
	}
	if (victim) {
		char msg[OOO_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "evicted: too many connections waiting for hello from uid %u", d.victim);
		log_peer("pid %u uid %u %s, to admit pid %u uid %u", victim->cred.pid, d.victim, msg, c->cred.pid,
			 c->cred.uid);
		pending_refuse(srv, victim, -OOO_ELIMIT, msg, "evicted while waiting for hello");
	}
	/* cannot fail: a table counts no more uids than connections, here fewer than its ADMIT_UIDS_MAX entries */
	if (admit_add(&srv->pend[admin], c->cred.uid) < 0) {
		slot_release(srv, c);
		free(c);
		refuse_now(srv, fd, -OOO_ELIMIT, "too many connections waiting for hello");
		return;
	}
	list_add_tail(&srv->conns, &c->node);
	list_add_tail(&srv->pending, &c->pnode);
	srv->nconns++;
	c->state = CONN_HELLO;
	c->accepted_ns = server_now_ns();
	conn_arm_recv(srv, c);
}

/* ---- requests --------------------------------------------------------------- */

static void hello_tenant(struct server *srv, struct conn *c, const struct wire_msg *m)
{
	const struct ooo_msg_hello *h = m->payload;
	struct ooo_msg_hello_reply rep = { 0 };
	char why[OOO_ERRMSG_MAX];
	struct session *s;
	int r;

	if (policy_exec_uid(srv->policy, c->cred.uid)) {
		/* it could signal, ptrace or read the executors of every domain */
		srv->stats.sessions_refused++;
		log_peer("refused tenant pid %u uid %u: an executor's uid", c->cred.pid, c->cred.uid);
		conn_reply_error(srv, c, OOO_MSG_HELLO, m->hdr.seq, -EACCES,
				 "uid %u is reserved for oood's executors (executor_uids %u-%u)", c->cred.uid,
				 srv->policy->exec_uid_lo, srv->policy->exec_uid_lo + srv->policy->exec_uid_n - 1);
		conn_finish(srv, c, "an executor's uid");
		return;
	}
	r = registry_admit(&srv->reg, srv->policy, &c->cred, h->name, server_now_ns(), &s, why, sizeof(why));
	if (r < 0) {
		srv->stats.sessions_refused++;
		log_peer("refused tenant pid %u uid %u: %s", c->cred.pid, c->cred.uid, why);
		conn_reply_error(srv, c, OOO_MSG_HELLO, m->hdr.seq, r, "%s", why);
		conn_finish(srv, c, "refused by the policy");
		return;
	}
	c->sess = s;
	s->owner = c;
	srv->stats.sessions_total++;
	rep.session_id = s->id;
	rep.daemon_version = OOO_VERSION_NUM;
	rep.max_msg = SERVER_REQ_MAX;
	wire_strcpy(rep.class_name, sizeof(rep.class_name), s->tenant->terms.name);
	rep.priority = s->tenant->terms.priority;
	rep.slo_us = s->tenant->terms.slo_us;
	rep.sm_share = s->tenant->terms.sm_share;
	rep.wait_spin_us = OOO_HELLO_SPIN_SET | s->tenant->terms.wait_spin_us;
	memcpy(rep.limit, s->tenant->terms.limit, sizeof(rep.limit));
	{
		char key[112] = "";

		if (s->tenant->key[0]) {
			size_t l = (size_t)snprintf(key, sizeof(key), " %s ", s->tenant->key[0] == '/' ? "cgroup" : "pod");

			cgroup_key_display(key + l, sizeof(key) - l, s->tenant->key);
		}
		log_peer("session %llu: pid %u uid %u gid %u class '%s'%s name '%s'", (unsigned long long)s->id,
			 c->cred.pid, c->cred.uid, c->cred.gid, rep.class_name, key, s->name);
	}
	for (const struct module *const *mod = srv->modules; *mod; mod++) {
		if ((*mod)->session_open)
			(*mod)->session_open(srv, s);
	}
	conn_reply(srv, c, OOO_MSG_HELLO, m->hdr.seq, &rep, sizeof(rep));
}

static void hello_admin(struct server *srv, struct conn *c, const struct wire_msg *m)
{
	const struct ooo_msg_hello *h = m->payload;
	struct ooo_msg_hello_reply rep = { 0 };

	if (!registry_admin_allowed(srv->policy, &c->cred, geteuid())) {
		srv->stats.sessions_refused++;
		log_peer("refused admin pid %u uid %u: not an administrator", c->cred.pid, c->cred.uid);
		if (srv->policy->has_admin_group)
			conn_reply_error(srv, c, OOO_MSG_HELLO, m->hdr.seq, -OOO_ENOTADMIN,
					 "uid %u is neither root nor in the admin group '%s'", c->cred.uid,
					 srv->policy->admin_group);
		else
			conn_reply_error(srv, c, OOO_MSG_HELLO, m->hdr.seq, -OOO_ENOTADMIN,
					 "uid %u is not root and no admin_group is configured", c->cred.uid);
		conn_finish(srv, c, "not an administrator");
		return;
	}
	if (srv->nadmin >= srv->policy->max_admin_sessions) {
		srv->stats.sessions_refused++;
		conn_reply_error(srv, c, OOO_MSG_HELLO, m->hdr.seq, -OOO_ELIMIT,
				 "admin session limit reached (max_admin_sessions = %u)",
				 srv->policy->max_admin_sessions);
		conn_finish(srv, c, "admin session limit");
		return;
	}
	c->admitted_admin = true;
	srv->nadmin++;
	wire_strcpy(c->label, sizeof(c->label), h->name);
	wire_sanitize(c->label);
	rep.daemon_version = OOO_VERSION_NUM;
	rep.max_msg = SERVER_REQ_MAX;
	log_debug("admin connection: pid %u uid %u name '%s'", c->cred.pid, c->cred.uid, c->label);
	conn_reply(srv, c, OOO_MSG_HELLO, m->hdr.seq, &rep, sizeof(rep));
}

/* The loop's own request: reload the policy (an admin request). */
static void on_reload(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	struct ooo_msg_reload_reply rep = { 0 };
	char msg[OOO_ERRMSG_MAX];
	int r = server_reload(srv, msg, sizeof(msg));

	if (r < 0) {
		conn_reply_error(srv, c, OOO_MSG_RELOAD, seq, r, "%s", msg);
		return;
	}
	rep.policy_generation = srv->policy_generation;
	wire_strcpy(rep.msg, sizeof(rep.msg), msg);
	conn_reply(srv, c, OOO_MSG_RELOAD, seq, &rep, sizeof(rep));
}

static const struct handler loop_handlers[] = {
	{ .type = OOO_MSG_RELOAD, .flags = H_ADMIN, .fn = on_reload },
};

/* An admin listing: the module writes the payload right after the header, so the reply needs no copy. */
static void build_reply(struct server *srv, struct conn *c, const struct handler *h, uint32_t seq,
			const void *payload)
{
	size_t cap = OOO_MSG_MAX - sizeof(struct ooo_msg_hdr);
	void *buf = malloc(OOO_MSG_MAX);
	ssize_t n;

	if (!buf) {
		conn_reply_error(srv, c, h->type, seq, -ENOMEM, "out of memory");
		return;
	}
	n = h->build(srv, payload, (char *)buf + sizeof(struct ooo_msg_hdr), cap);
	if (n < 0) {
		free(buf);
		conn_reply_error(srv, c, h->type, seq, (int)n, "%s", wire_strerror((int)n));
		return;
	}
	n = wire_encode(buf, OOO_MSG_MAX, (uint16_t)(h->type | OOO_MSG_REPLY), seq, 0,
			(char *)buf + sizeof(struct ooo_msg_hdr), (size_t)n);
	if (n < 0) {
		free(buf);
		conn_close(srv, c, "admin reply too large");
		return;
	}
	conn_queue(srv, c, buf, (size_t)n);
}

/* A request past hello: the table's checks, then its module's handler. */
static void route(struct server *srv, struct conn *c, uint16_t type, uint32_t seq, const void *payload, size_t len)
{
	const struct handler *h = type < SERVER_TYPES ? srv->handler[type] : NULL;

	if (!h) {
		/* wire_decode only passes known types: this one no module handles */
		conn_reply_error(srv, c, type, seq, -OOO_EPROTO, "unexpected %s", wire_type_name(type));
		conn_finish(srv, c, "protocol error");
		return;
	}
	if (h->flags & H_TENANT && !c->sess) {
		conn_reply_error(srv, c, type, seq, -EINVAL, "%s (%s)", h->refusal ? h->refusal : "a tenant request",
				 srv->sock_path[0]);
		return;
	}
	if (h->flags & H_ADMIN && !c->admin) {
		conn_reply_error(srv, c, type, seq, -OOO_ENOTADMIN, "%s is an admin request: use %s",
				 wire_type_name(type), srv->sock_path[1]);
		return;
	}
	if (h->build)
		build_reply(srv, c, h, seq, payload);
	else
		h->fn(srv, c, seq, payload, len);
}

ssize_t server_build(struct server *srv, uint16_t type, const void *req, void *buf, size_t cap)
{
	const struct handler *h = type < SERVER_TYPES ? srv->handler[type] : NULL;

	if (!h || !h->build)
		return -EOPNOTSUPP;
	return h->build(srv, req, buf, cap);
}

void server_redispatch(struct server *srv, struct conn *c, uint32_t seq, uint16_t type, const void *payload,
		       size_t len)
{
	route(srv, c, type, seq, payload, len);
}

static void dispatch(struct server *srv, struct conn *c, const struct wire_msg *m)
{
	uint16_t type = m->hdr.type;
	uint32_t seq = m->hdr.seq;

	if (c->sess)
		c->sess->msgs_in++;
	if (c->state == CONN_HELLO) {
		if (type != OOO_MSG_HELLO) {
			srv->stats.proto_errors++;
			conn_reply_error(srv, c, type, seq, -OOO_EPROTO, "the first message must be hello, got %s",
					 wire_type_name(type));
			conn_finish(srv, c, "protocol error: no hello");
			return;
		}
		pending_leave(srv, c);
		c->state = CONN_OPEN;
		if (c->admin)
			hello_admin(srv, c, m);
		else
			hello_tenant(srv, c, m);
		return;
	}
	switch (type) {
	case OOO_MSG_HELLO:
		srv->stats.proto_errors++;
		conn_reply_error(srv, c, type, seq, -OOO_EPROTO, "duplicate hello");
		conn_finish(srv, c, "protocol error: duplicate hello");
		return;
	case OOO_MSG_PING:
		conn_reply(srv, c, type, seq, m->payload, m->plen);
		return;
	case OOO_MSG_BYE:
		conn_reply(srv, c, type, seq, NULL, 0);
		conn_finish(srv, c, "said bye");
		return;
	default:
		route(srv, c, type, seq, m->payload, m->plen);
	}
}

/* Keep the first descriptor passed with a message in *keep, close the others; returns how many there were. */
static unsigned take_fds(struct conn *c, int *keep)
{
	return fdpass_take(&c->rmsg, keep, 1);
}

static void on_recv(struct server *srv, struct conn *c, int res)
{
	struct wire_msg m;
	const char *why = NULL;
	unsigned nfds;
	int r, fd = -1;

	c->recv_armed = false;
	/* even when closing, and with an empty datagram: never keep what a peer passed */
	nfds = res >= 0 ? take_fds(c, &fd) : 0;
	if (fd >= 0 && (nfds != 1 || c->state == CONN_CLOSING || res <= 0 || c->close_after_send)) {
		close(fd);
		fd = -1;
	}
	if (c->state == CONN_CLOSING)
		return;
	if (res == 0) {
		/* an empty datagram reads like end of file; either way this peer is done */
		conn_close(srv, c, nfds ? "empty message with file descriptors" : "peer closed the connection");
		return;
	}
	if (res < 0) {
		conn_close(srv, c, strerror(-res));
		return;
	}
	if (c->close_after_send)
		return; /* closing: whatever it sends now is not read */
	srv->stats.msgs_in++;
	r = wire_decode(c->rbuf, (size_t)res > SERVER_REQ_MAX ? SERVER_REQ_MAX : (size_t)res, WIRE_TO_DAEMON, &m,
			&why);
	if ((size_t)res > SERVER_REQ_MAX || (c->rmsg.msg_flags & MSG_TRUNC)) {
		r = -OOO_EPROTO;
		why = "message larger than the daemon accepts (8192 bytes)";
	} else if (r == 0 && (c->rmsg.msg_flags & MSG_CTRUNC)) {
		r = -OOO_EPROTO;
		why = "too many file descriptors passed with a message";
	} else if (r == 0 && m.hdr.type == OOO_MSG_MODULE_LOAD && nfds != 1) {
		r = -OOO_EPROTO;
		why = "module load takes exactly one file descriptor (the image)";
	} else if (r == 0 && nfds && m.hdr.type != OOO_MSG_MODULE_LOAD) {
		r = -OOO_EPROTO;
		why = "file descriptors passed with a message that takes none";
	}
	if (r < 0 && fd >= 0) {
		close(fd);
		fd = -1;
	}
	if (r < 0) {
		srv->stats.proto_errors++;
		log_peer("protocol error from pid %u uid %u: %s, closing", c->cred.pid, c->cred.uid, why);
		if (r == -OOO_EVERSION)
			conn_reply_error(srv, c, m.hdr.type, m.hdr.seq, r,
					 "protocol version %u is not supported; oood speaks version %u",
					 m.hdr.version, OOO_PROTO_VERSION);
		else
			conn_reply_error(srv, c, wire_hdr_valid(&m) ? m.hdr.type : 0, m.hdr.seq, r, "%s", why);
		conn_finish(srv, c, "protocol error");
		return;
	}
	c->rx_fd = fd; /* a handler that keeps it sets it to -1 */
	dispatch(srv, c, &m);
	if (c->rx_fd >= 0)
		close(c->rx_fd);
	c->rx_fd = -1;
	conn_arm_recv(srv, c);
}

int server_take_fd(struct conn *c)
{
	int fd = c->rx_fd;

	c->rx_fd = -1;
	return fd;
}

static void on_send(struct server *srv, struct conn *c, int res)
{
	struct outmsg *m = &c->q[c->qhead];
	size_t len = m->len;

	c->send_armed = false;
	free(m->buf);
	m->buf = NULL;
	for (int i = 0; i < m->nfds; i++)
		close(m->fds[i]);
	m->nfds = 0;
	c->qhead = (c->qhead + 1) % SENDQ_CAP;
	c->qlen--;
	if (c->state == CONN_CLOSING)
		return;
	if (res < 0 || (size_t)res != len) {
		/* EPIPE after bye or an error reply: the peer left first, as it may */
		conn_close(srv, c,
			   res == -EPIPE || res == -ECONNRESET ? "peer closed the connection"
			   : res < 0			      ? strerror(-res)
							      : "short send");
		return;
	}
	if (c->qlen) {
		conn_flush(srv, c);
		return;
	}
	if (c->close_after_send) {
		conn_close(srv, c, c->close_reason);
		return;
	}
	conn_arm_recv(srv, c); /* reading may have paused on a full queue */
}

/* ---- listeners, signals, ticks ----------------------------------------------- */

static void arm_accept(struct server *srv, int i)
{
	struct io_uring_sqe *sqe = server_get_sqe(srv);

	if (!sqe) {
		log_err("submission queue full, cannot accept on %s", srv->sock_path[i]);
		return;
	}
	io_uring_prep_multishot_accept(sqe, srv->listen_fd[i], NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, ud_make(OP_ACCEPT, (uint32_t)i, 0));
	srv->accept_armed[i] = true;
}

static void arm_signal(struct server *srv)
{
	struct io_uring_sqe *sqe = server_get_sqe(srv);

	if (!sqe)
		return;
	io_uring_prep_read(sqe, srv->sig_fd, &srv->siginfo, sizeof(srv->siginfo), 0);
	io_uring_sqe_set_data64(sqe, ud_make(OP_SIGNAL, 0, 0));
}

static void arm_tick(struct server *srv)
{
	struct io_uring_sqe *sqe = server_get_sqe(srv);

	if (!sqe)
		return;
	srv->tick.tv_sec = 0;
	srv->tick.tv_nsec = (long long)SERVER_TICK_NS;
	io_uring_prep_timeout(sqe, &srv->tick, 0, 0);
	io_uring_sqe_set_data64(sqe, ud_make(OP_TICK, 0, 0));
}

static void begin_shutdown(struct server *srv, const char *why)
{
	struct list_node *n, *tmp;

	if (srv->stopping)
		return;
	srv->stopping = true;
	srv->stop_deadline_ns = server_now_ns() + (uint64_t)srv->policy->shutdown_grace_ms * 1000000ull;
	log_info("shutting down (%s): closing %u sessions", why, srv->reg.nsessions);
	notify_send("STOPPING=1");
	for (int i = 0; i < 2; i++) {
		struct io_uring_sqe *sqe;

		/* New clients get ENOENT at once instead of waiting on a backlog. */
		unlink(srv->sock_path[i]);
		if (!srv->accept_armed[i])
			continue;
		sqe = server_get_sqe(srv);
		if (sqe) {
			io_uring_prep_cancel64(sqe, ud_make(OP_ACCEPT, (uint32_t)i, 0), 0);
			io_uring_sqe_set_data64(sqe, ud_make(OP_CANCEL, 0, 0));
		}
	}
	for (const struct module *const *m = srv->modules; *m; m++) {
		if ((*m)->stop)
			(*m)->stop(srv);
	}
	list_for_each_safe(n, tmp, &srv->conns) {
		struct conn *c = list_entry(n, struct conn, node);

		conn_notice(srv, c, OOO_NOTICE_SHUTDOWN, "oood is shutting down");
		if (c->state != CONN_CLOSING)
			conn_finish(srv, c, "daemon shutdown");
	}
}

static void on_tick(struct server *srv)
{
	uint64_t now = server_now_ns();
	uint64_t timeout = (uint64_t)srv->policy->hello_timeout_ms * 1000000ull;
	struct list_node *n, *tmp;

	/* the whole list: a reload may have shortened the timeout under older entries */
	list_for_each_safe(n, tmp, &srv->pending) {
		struct conn *c = list_entry(n, struct conn, pnode);
		char msg[OOO_ERRMSG_MAX];

		if (now < c->accepted_ns + timeout)
			continue;
		log_peer("pid %u uid %u sent no hello within %u ms, closing", c->cred.pid, c->cred.uid,
			 srv->policy->hello_timeout_ms);
		snprintf(msg, sizeof(msg), "no hello within %u ms", srv->policy->hello_timeout_ms);
		/* it leaves the pending list now, and the walk has its next already */
		pending_refuse(srv, c, -ETIMEDOUT, msg, "hello timeout");
	}
	list_for_each_safe(n, tmp, &srv->conns) {
		struct conn *c = list_entry(n, struct conn, node);

		if (c->close_after_send && c->state != CONN_CLOSING && now >= c->finish_by_ns)
			conn_close(srv, c, "peer does not read what it was sent");
	}
	for (int i = 0; i < 2; i++) {
		if (!srv->stopping && !srv->accept_armed[i] && srv->listen_fd[i] >= 0)
			arm_accept(srv, i);
	}
	for (const struct module *const *m = srv->modules; *m; m++) {
		if ((*m)->tick)
			(*m)->tick(srv, now);
	}
	if (srv->stopping && now >= srv->stop_deadline_ns) {
		list_for_each_safe(n, tmp, &srv->conns) {
			struct conn *c = list_entry(n, struct conn, node);
			conn_close(srv, c, "shutdown grace period over");
		}
	}
	arm_tick(srv);
}

static void on_signal(struct server *srv, int res)
{
	char msg[OOO_ERRMSG_MAX];

	if (res != (int)sizeof(srv->siginfo)) {
		if (res < 0 && res != -EAGAIN && res != -EINTR)
			log_warn("signalfd read failed: %s", strerror(-res));
		arm_signal(srv);
		return;
	}
	switch (srv->siginfo.ssi_signo) {
	case SIGHUP:
		server_reload(srv, msg, sizeof(msg));
		break;
	case SIGTERM:
	case SIGINT:
		begin_shutdown(srv, srv->siginfo.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
		break;
	default:
		break;
	}
	arm_signal(srv);
}

static void on_accept(struct server *srv, int i, struct io_uring_cqe *cqe)
{
	bool failed = cqe->res < 0 && cqe->res != -ECANCELED;

	if (!(cqe->flags & IORING_CQE_F_MORE)) {
		srv->accept_armed[i] = false;
		/* after a failure (EMFILE...) retry on the next tick, not in a tight loop */
		if (!srv->stopping && cqe->res != -ECANCELED && !failed)
			arm_accept(srv, i);
	}
	if (cqe->res >= 0) {
		conn_new(srv, cqe->res, i == 1);
		return;
	}
	if (failed)
		log_warn("accept on %s failed: %s", srv->sock_path[i], strerror(-cqe->res));
}

static void handle_cqe(struct server *srv, struct io_uring_cqe *cqe)
{
	uint64_t ud = io_uring_cqe_get_data64(cqe);
	uint32_t slot = ud_slot(ud);
	struct conn *c;

	switch (ud_op(ud)) {
	case OP_ACCEPT:
		on_accept(srv, (int)slot, cqe);
		return;
	case OP_SIGNAL:
		on_signal(srv, cqe->res);
		return;
	case OP_TICK:
		on_tick(srv);
		return;
	case OP_CANCEL:
		return;
	case OP_RECV:
	case OP_SEND:
		break;
	default:
		if (ud_op(ud) < OP_MAX && srv->op[ud_op(ud)]) {
			srv->op[ud_op(ud)](srv, slot, ud_gen(ud), cqe);
			return;
		}
		log_warn("completion with unknown tag %#llx, ignoring", (unsigned long long)ud);
		return;
	}
	c = slot < srv->nslots ? srv->slots[slot] : NULL;
	if (!c || c->gen != ud_gen(ud)) {
		log_warn("completion for a freed connection (slot %u), ignoring", slot);
		return;
	}
	c->inflight--;
	if (ud_op(ud) == OP_RECV)
		on_recv(srv, c, cqe->res);
	else
		on_send(srv, c, cqe->res);
	conn_maybe_free(srv, c);
}

/* ---- policy ------------------------------------------------------------------ */

/* Tell and close sessions a reload revoked; runs after the registry walk, so closing is safe. */
static void close_revoked(struct server *srv)
{
	struct list_node *n, *tmp;

	list_for_each_safe(n, tmp, &srv->conns) {
		struct conn *c = list_entry(n, struct conn, node);

		if (!c->sess || !c->sess->revoked || c->close_after_send || c->state == CONN_CLOSING)
			continue;
		log_info("session %llu (uid %u) is no longer admitted by the policy, closing",
			 (unsigned long long)c->sess->id, c->cred.uid);
		server_notice_close(srv, c, OOO_NOTICE_REVOKED, "the reloaded policy no longer admits this uid",
				    "revoked by a policy reload");
	}
}

static int sync_admin_socket(struct server *srv)
{
	gid_t g = srv->policy->has_admin_group ? srv->policy->admin_gid : getegid();

	if (!srv->sock_path[1][0])
		return 0;
	if (geteuid() == 0 && chown(srv->sock_path[1], 0, g) < 0)
		return log_errno(LOG_WARNING, -errno, "cannot give %s to gid %u", srv->sock_path[1], g);
	return 0;
}

static void resolve_config(struct server *srv, char *path, size_t cap)
{
	struct stat st;

	if (srv->config_explicit) {
		wire_strcpy(path, cap, srv->config_path);
		return;
	}
	snprintf(path, cap, "%s/ooo/oood.conf", OOO_SYSCONFDIR);
	if (stat(path, &st) < 0 && errno == ENOENT)
		path[0] = '\0';
}

int server_reload(struct server *srv, char *msg, size_t cap)
{
	struct policy_error err = { 0 };
	struct policy *np = NULL, *old;
	char path[OOO_PATH_MAX];
	unsigned revoked;
	int r;

	notify_send("RELOADING=1");
	resolve_config(srv, path, sizeof(path));
	r = path[0] ? policy_load_file(path, &np, &err) : policy_load_default(&np);
	if (r < 0) {
		srv->stats.reloads_failed++;
		if (err.line)
			snprintf(msg, cap, "%s:%d: %s; keeping the current policy", path, err.line, err.msg);
		else if (err.msg[0]) /* errors not tied to a line already name the file */
			snprintf(msg, cap, "%s; keeping the current policy", err.msg);
		else
			snprintf(msg, cap, "%s: %s; keeping the current policy", path[0] ? path : "(embedded defaults)",
				 wire_strerror(r));
		log_err("reload failed: %s", msg);
		notify_send("READY=1");
		return r == -ENOMEM ? r : -EINVAL;
	}
	old = srv->policy;
	if (np->warning[0])
		log_warn("reload: %s: %s", path[0] ? path : "(embedded defaults)", np->warning);
	if (np->exec_uid_lo != old->exec_uid_lo || np->exec_uid_n != old->exec_uid_n) {
		/* running executors have the old uids: tenants must stay refused from them */
		log_warn("reload: executor_uids applies when oood next starts; keeping %u-%u", old->exec_uid_lo,
			 old->exec_uid_lo + old->exec_uid_n - 1);
		np->exec_uid_lo = old->exec_uid_lo;
		np->exec_uid_n = old->exec_uid_n;
	}
	srv->policy = np;
	revoked = registry_apply_policy(&srv->reg, np);
	close_revoked(srv);
	for (const struct module *const *m = srv->modules; *m; m++) {
		if ((*m)->reload)
			(*m)->reload(srv);
	}
	if (old->mps.enabled != np->mps.enabled || strcmp(old->mps.control, np->mps.control) ||
	    old->mps.multiuser != np->mps.multiuser || old->mps.executor_client != np->mps.executor_client)
		log_warn("reload: [mps] enabled, control, multiuser and executor_client apply when oood next starts "
			 "(the MPS control daemon is not restarted under live clients)");
	policy_free(old);
	srv->policy_generation++;
	srv->policy_loaded_ns = realtime_ns();
	if (srv->log_level_override < 0)
		log_set_level(np->log_level);
	sync_admin_socket(srv);
	snprintf(msg, cap, "policy generation %llu from %s: %zu class%s, %u session%s revoked",
		 (unsigned long long)srv->policy_generation, np->source, np->nclasses, np->nclasses == 1 ? "" : "es",
		 revoked, revoked == 1 ? "" : "s");
	log_info("reloaded: %s", msg);
	notify_send("READY=1");
	return 0;
}

/* Index a module's handlers by type; -EEXIST (logged) if two modules claim one type. */
static int add_handlers(struct server *srv, const struct handler *h, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (h[i].type >= SERVER_TYPES || srv->handler[h[i].type] || !h[i].fn == !h[i].build) {
			log_err("module %s: handler of %s is invalid or taken", name, wire_type_name(h[i].type));
			return -EEXIST;
		}
		srv->handler[h[i].type] = &h[i];
	}
	return 0;
}

int server_add_op(struct server *srv, server_op_fn fn)
{
	if (srv->nops >= OP_MAX)
		return -ENOSPC;
	srv->op[srv->nops] = fn;
	return (int)srv->nops++;
}

/*
 * Shutdown: with now == 0, whether every module has stopped; with now > 0
 * (past the connections' grace), whether none still running asks the loop
 * to wait (linger_until) beyond now.
 */
static bool modules_stopped(const struct server *srv, uint64_t now)
{
	for (const struct module *const *m = srv->modules; *m; m++) {
		if (!(*m)->stopped || (*m)->stopped(srv))
			continue;
		if (!now || ((*m)->linger_until && now <= (*m)->linger_until(srv)))
			return false;
	}
	return true;
}

int server_init(struct server *srv, const struct server_opts *opts, struct policy *policy)
{
	int r, n;

	memset(srv, 0, sizeof(*srv));
	srv->listen_fd[0] = srv->listen_fd[1] = srv->sig_fd = srv->lock_fd = -1;
	list_init(&srv->conns);
	list_init(&srv->pending);
	list_init(&srv->reap);
	srv->modules = opts->modules;
	srv->nops = OP_MODULE_FIRST;
	r = add_handlers(srv, loop_handlers, sizeof(loop_handlers) / sizeof(loop_handlers[0]), "loop");
	for (const struct module *const *m = srv->modules; r == 0 && *m; m++) {
		r = add_handlers(srv, (*m)->handlers, (*m)->nhandlers, (*m)->name);
		if (r == 0 && (*m)->init)
			r = (*m)->init(srv);
	}
	if (r < 0)
		return r;
	registry_init(&srv->reg);
	srv->policy = policy;
	srv->policy_generation = 1;
	srv->policy_loaded_ns = realtime_ns();
	srv->start_ns = server_now_ns();
	srv->config_explicit = opts->config_explicit;
	srv->log_level_override = opts->log_level_override;
	if (opts->config_path)
		wire_strcpy(srv->config_path, sizeof(srv->config_path), opts->config_path);
	n = snprintf(srv->rundir, sizeof(srv->rundir), "%s", opts->rundir);
	if (n < 0 || (size_t)n >= sizeof(srv->rundir)) {
		log_err("run directory path is too long: %s", opts->rundir);
		return -ENAMETOOLONG;
	}
	r = server_setup(srv);
	if (r < 0)
		return r;
	sync_admin_socket(srv);
	for (const struct module *const *m = srv->modules; *m; m++) {
		r = (*m)->start ? (*m)->start(srv) : 0;
		if (r < 0)
			return r;
	}
	return 0;
}

int server_run(struct server *srv)
{
	arm_accept(srv, 0);
	arm_accept(srv, 1);
	arm_signal(srv);
	arm_tick(srv);
	log_info("oood %s ready: %s, %s (policy: %s, %zu class%s)", OOO_VERSION_STRING, srv->sock_path[0],
		 srv->sock_path[1], srv->policy->source, srv->policy->nclasses, srv->policy->nclasses == 1 ? "" : "es");
	notify_send("READY=1");

	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, count = 0;
		int r;

		if (srv->stopping && !srv->nconns && !srv->accept_armed[0] && !srv->accept_armed[1] &&
		    modules_stopped(srv, 0))
			break;
		if (srv->stopping && server_now_ns() > srv->stop_deadline_ns + 5000000000ull &&
		    modules_stopped(srv, server_now_ns())) {
			log_warn("%u connections still busy after the grace period, exiting anyway", srv->nconns);
			break;
		}
		r = io_uring_submit_and_wait(&srv->ring, 1);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			return log_errno(LOG_ERR, r, "io_uring_submit_and_wait");
		io_uring_for_each_cqe(&srv->ring, head, cqe) {
			handle_cqe(srv, cqe);
			count++;
		}
		io_uring_cq_advance(&srv->ring, count);
		reap(srv);
	}
	log_info("stopped");
	return 0;
}

void server_fini(struct server *srv)
{
	struct list_node *n, *tmp;

	list_for_each_safe(n, tmp, &srv->conns)
		conn_close(srv, list_entry(n, struct conn, node), "daemon exit");
	/*
	 * Let the kernel finish every operation that points into a connection
	 * before its memory goes: closing shut the sockets, so they complete.
	 */
	for (int i = 0; srv->ring_ok && srv->nconns && i < 200; i++) {
		struct __kernel_timespec ts = { .tv_nsec = 10000000 };
		struct io_uring_cqe *cqe;
		unsigned head, count = 0;

		io_uring_submit(&srv->ring);
		if (io_uring_wait_cqe_timeout(&srv->ring, &cqe, &ts) < 0)
			continue;
		io_uring_for_each_cqe(&srv->ring, head, cqe) {
			handle_cqe(srv, cqe);
			count++;
		}
		io_uring_cq_advance(&srv->ring, count);
		reap(srv);
	}
	if (srv->ring_ok)
		io_uring_queue_exit(&srv->ring);
	/* after the ring: no operation refers to a module's memory any more */
	if (srv->modules) {
		size_t n_mod = 0;

		while (srv->modules[n_mod])
			n_mod++;
		while (n_mod--) {
			if (srv->modules[n_mod]->fini)
				srv->modules[n_mod]->fini(srv);
		}
	}
	/* Whatever is left could not be drained; the ring is gone, so free it now. */
	reap(srv);
	list_for_each_safe(n, tmp, &srv->conns)
		conn_free(srv, list_entry(n, struct conn, node));
	srv->ring_ok = false;
	for (int i = 0; i < 2; i++) {
		if (srv->listen_fd[i] >= 0) {
			close(srv->listen_fd[i]);
			if (!srv->stopping && srv->sock_path[i][0])
				unlink(srv->sock_path[i]);
		}
		srv->listen_fd[i] = -1;
	}
	if (srv->sig_fd >= 0)
		close(srv->sig_fd);
	srv->sig_fd = -1;
	if (srv->lock_fd >= 0) {
		char path[OOO_PATH_MAX + 16];
		snprintf(path, sizeof(path), "%s/oood.pid", srv->rundir);
		unlink(path);
		close(srv->lock_fd);
	}
	srv->lock_fd = -1;
	srv->policy = policy_free(srv->policy);
	free(srv->slots);
	srv->slots = NULL;
	free(slot_gens);
	slot_gens = NULL;
	free(slot_free);
	slot_free = NULL;
	slot_nfree = 0;
	srv->nslots = 0;
}
