/* SPDX-License-Identifier: MIT */
/*
 * libooo: sessions with oood over its SOCK_SEQPACKET socket: connecting,
 * requests and their replies, notices, the calling thread's last error;
 * ping, admin calls and native leases. The other public calls are in
 * datapath.c, queues.c, buffers.c and modules.c (libooo_int.h).
 *
 * Requests on a session are serialised by a mutex: one request is on the
 * wire at a time, so a reply is matched by its sequence number and replies
 * to requests that timed out earlier are discarded.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../proto/fdpass.h"
#include "../proto/wire.h"
#include "libooo_int.h"

#define DEFAULT_TIMEOUT_MS 10000

__thread char lo_last_error[OOO_ERRMSG_MAX];

void lo_set_last_error(const char *msg)
{
	wire_strcpy(lo_last_error, sizeof(lo_last_error), msg);
}

__attribute__((format(printf, 2, 3))) int lo_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(lo_last_error, sizeof(lo_last_error), fmt, ap);
	va_end(ap);
	return err;
}

int lo_tenant_args(const char *fn, const ooo_session *s, bool out_given)
{
	if (!s)
		return lo_fail(-EINVAL, "%s: the session is NULL", fn);
	if (!out_given)
		return lo_fail(-EINVAL, "%s: out is NULL", fn);
	if (s->admin)
		return lo_fail(-EINVAL, "%s: not available on an admin session", fn);
	return 0;
}

int lo_finish(const char *fn, int r)
{
	if (r >= 0)
		lo_last_error[0] = 0;
	else if (!lo_last_error[0])
		lo_fail(r, "%s: %s", fn, ooo_strerror(r));
	return r;
}

const char *ooo_last_error(void)
{
	return lo_last_error;
}

const char *ooo_strerror(int err)
{
	return wire_strerror(err);
}

/*
 * How long a wait spins: the class's wait_spin_us when the daemon says it
 * (hello), else 1 ms; OOO_WAIT_SPIN_US (decimal microseconds) may lower it,
 * never raise it. A value that does not parse is ignored.
 */
#define WAIT_SPIN_US_DEFAULT 1000u
static int64_t wait_spin_ns(uint32_t from_daemon)
{
	uint64_t us = from_daemon & OOO_HELLO_SPIN_SET ? from_daemon & ~OOO_HELLO_SPIN_SET : WAIT_SPIN_US_DEFAULT;
	const char *env = getenv("OOO_WAIT_SPIN_US");

	if (us > 100000)
		us = 100000; /* the policy's bound: a daemon never says more */
	if (env && *env) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(env, &end, 10);
		if (!errno && !*end && *env >= '0' && *env <= '9' && v < us)
			us = v;
	}
	return (int64_t)us * 1000;
}

int64_t lo_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The session is over: this call and every later one on it fail with err,
 * and `why` (NULL: this thread's reason as it stands, set in this call) is
 * the reason each of them gives. The first end wins. Caller holds s->lock.
 * Returns s->dead.
 */
int lo_session_end(struct ooo_session *s, int err, const char *why)
{
	if (!s->dead) {
		if (why)
			lo_set_last_error(why);
		if (!lo_last_error[0])
			lo_set_last_error(ooo_strerror(err));
		memcpy(s->dead_why, lo_last_error, sizeof(s->dead_why));
		__atomic_store_n(&s->dead, err, __ATOMIC_RELEASE); /* after dead_why: readers need not lock */
	} else {
		lo_set_last_error(s->dead_why);
	}
	return s->dead;
}

/* A call on a session that has ended: its error, with its reason again. */
int lo_dead_error(struct ooo_session *s)
{
	int err = __atomic_load_n(&s->dead, __ATOMIC_ACQUIRE);

	lo_set_last_error(s->dead_why);
	return err;
}

/* A notice other than DEVRESET: the daemon closes the session after it. */
int lo_notice_error(struct ooo_session *s, const struct ooo_msg_notice *n)
{
	switch (n->kind) {
	case OOO_NOTICE_REVOKED: return lo_session_end(s, -OOO_EREVOKED, n->msg);
	case OOO_NOTICE_LOST: return lo_session_end(s, -OOO_ECLOSED, n->msg); /* gone for good: open a new one */
	default: return lo_session_end(s, -OOO_ESHUTDOWN, n->msg);
	}
}

/*
 * The daemon closed the connection: a notice it sent before closing may
 * still be queued, and says why. Returns the error every later call gets.
 */
static int closed_error(struct ooo_session *s)
{
	struct wire_msg m;
	ssize_t n;

	while (!s->dead) {
		n = recv(s->fd, s->rbuf, sizeof(s->rbuf), MSG_DONTWAIT);
		if (n <= 0)
			break;
		if (wire_decode(s->rbuf, (size_t)n, WIRE_TO_PEER, &m, NULL) != 0)
			continue;
		if (m.hdr.type == OOO_MSG_NOTICE) {
			if (((const struct ooo_msg_notice *)m.payload)->kind != OOO_NOTICE_DEVRESET)
				lo_notice_error(s, m.payload);
		} else if (m.hdr.seq == 0 && m.hdr.status < 0) {
			/* a refusal of the connection itself (limits, shutdown, hello timeout) */
			lo_session_end(s, m.hdr.status, ((const struct ooo_msg_error *)m.payload)->msg);
		}
	}
	return lo_session_end(s, -OOO_ECLOSED, "oood closed the connection");
}

/* Keep the descriptors that came with a datagram (up to 3) in s->rfds; close any others. */
static void keep_fd(struct ooo_session *s, struct msghdr *mh)
{
	unsigned n = fdpass_take(mh, s->rfds, 3);

	s->nrfds = n < 3 ? (int)n : 3;
	s->rfd = s->nrfds ? s->rfds[0] : -1;
}

/* Send the request in s->sbuf, with s->pass_fd if set. */
static ssize_t send_request(struct ooo_session *s, size_t n)
{
	struct iovec iov = { s->sbuf, n };
	union {
		struct cmsghdr align;
		char b[FDPASS_SPACE(1)];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	fdpass_pack(&mh, u.b, sizeof(u.b), &s->pass_fd, s->pass_fd >= 0 ? 1 : 0);
	return sendmsg(s->fd, &mh, MSG_NOSIGNAL);
}

void lo_drop_fd(struct ooo_session *s)
{
	for (int i = 0; i < s->nrfds; i++) {
		if (s->rfds[i] >= 0)
			close(s->rfds[i]);
	}
	s->nrfds = 0;
	s->rfd = -1;
}

/*
 * Send one request and wait for its reply. On success returns the reply's
 * status (0 or negative) and points *reply at its payload in s->rbuf.
 * Caller holds s->lock.
 */
int lo_transact(struct ooo_session *s, uint16_t type, const void *req, size_t req_len, const void **reply,
		       size_t *reply_len)
{
	struct wire_msg m;
	int64_t deadline;
	ssize_t n;
	uint32_t seq;

	if (s->dead)
		return lo_dead_error(s);
	lo_drop_fd(s);
	seq = ++s->seq;
	if (seq == 0)
		seq = s->seq = 1; /* 0 is reserved for notices */
	n = wire_encode(s->sbuf, sizeof(s->sbuf), type, seq, 0, req, req_len);
	if (n < 0)
		return lo_fail((int)n, "a %s request of %zu bytes does not fit in a message", wire_type_name(type), req_len);
	if (send_request(s, (size_t)n) != n) {
		int e = errno;

		if (e == EPIPE || e == ECONNRESET)
			return closed_error(s);
		return lo_fail(-e, "cannot send to oood: %s", strerror(e));
	}
	deadline = lo_now_ms() + s->timeout_ms;
	for (;;) {
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		struct iovec iov = { .iov_base = s->rbuf, .iov_len = sizeof(s->rbuf) };
		union {
			struct cmsghdr align;
			char b[FDPASS_SPACE(FDPASS_MAX)];
		} u;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b) };
		const char *why;
		int64_t left = deadline - lo_now_ms();
		int r;

		if (left <= 0)
			return lo_fail(-ETIMEDOUT, "no reply from oood within %d ms", s->timeout_ms);
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return lo_fail(-errno, "poll: %s", strerror(errno));
		if (r == 0)
			return lo_fail(-ETIMEDOUT, "no reply from oood within %d ms", s->timeout_ms);
		n = recvmsg(s->fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ECONNRESET ? closed_error(s)
						   : lo_fail(-errno, "cannot receive from oood: %s", strerror(errno));
		if (n == 0)
			return closed_error(s);
		keep_fd(s, &mh);
		if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
			return lo_session_end(s, -OOO_EPROTO, "oversized message from oood");
		r = wire_decode(s->rbuf, (size_t)n, WIRE_TO_PEER, &m, &why);
		if (r == -OOO_EVERSION && wire_hdr_valid(&m) && m.hdr.status == -OOO_EVERSION) {
			/* The daemon refused our version; its reason is readable. */
			const struct ooo_msg_error *e = (const void *)(s->rbuf + sizeof(m.hdr));
			if ((size_t)n == sizeof(m.hdr) + sizeof(*e) && memchr(e->msg, 0, sizeof(e->msg)))
				why = e->msg;
			return lo_session_end(s, -OOO_EVERSION, why);
		}
		if (r < 0)
			return lo_session_end(s, r, why);
		if (m.hdr.type == OOO_MSG_NOTICE) {
			const struct ooo_msg_notice *no = m.payload;

			/* the session goes on; the area's epoch tells the data path what failed */
			if (no->kind == OOO_NOTICE_DEVRESET)
				continue;
			/* The daemon closes after any other notice; remember why. */
			lo_notice_error(s, no);
			continue;
		}
		if (m.hdr.seq == 0 && m.hdr.status < 0) {
			/* the daemon refused the connection itself and closes it */
			return lo_session_end(s, m.hdr.status, ((const struct ooo_msg_error *)m.payload)->msg);
		}
		if (m.hdr.seq != seq)
			continue; /* reply to a request that timed out */
		if ((m.hdr.type & ~OOO_MSG_REPLY) != type)
			return lo_session_end(s, -OOO_EPROTO, "reply of another type");
		if (m.hdr.status < 0) {
			const struct ooo_msg_error *e = m.payload;
			lo_set_last_error(e->msg);
			*reply = NULL;
			*reply_len = 0;
			return m.hdr.status;
		}
		*reply = m.payload;
		*reply_len = m.plen;
		return 0;
	}
}

/* Where a session's socket path came from, for the reason when it cannot be reached. */
enum path_from { PATH_CALLER, PATH_ENV_SOCKET, PATH_ENV_RUNDIR, PATH_DEFAULT };

/*
 * The path of socket `name` (OOO_SOCKET_NAME or OOO_ADMIN_SOCKET_NAME) into
 * out (capacity cap): the caller's path if not NULL, else $OOO_SOCKET (the
 * tenant socket only), else $OOO_RUNDIR/name, else OOO_DEFAULT_RUNDIR/name.
 * *from says which. Returns 0, or -ENAMETOOLONG if it does not fit.
 */
static int resolve_path(char *out, size_t cap, const char *path, const char *name, enum path_from *from)
{
	const char *env, *dir;
	int n;

	if (path) {
		*from = PATH_CALLER;
		n = snprintf(out, cap, "%s", path);
	} else if (!strcmp(name, OOO_SOCKET_NAME) && (env = getenv("OOO_SOCKET")) && *env) {
		*from = PATH_ENV_SOCKET;
		n = snprintf(out, cap, "%s", env);
	} else {
		dir = getenv("OOO_RUNDIR");
		*from = dir && *dir ? PATH_ENV_RUNDIR : PATH_DEFAULT;
		if (!dir || !*dir)
			dir = OOO_DEFAULT_RUNDIR;
		n = snprintf(out, cap, "%s/%s", dir, name);
	}
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* What the reason adds to say where a path from `from` for socket `name` came from, and how to change it. */
static const char *path_hint(enum path_from from, const char *name)
{
	switch (from) {
	case PATH_CALLER: return "the path was given by the caller";
	case PATH_ENV_SOCKET: return "the path is $OOO_SOCKET";
	case PATH_ENV_RUNDIR: return "the directory is $OOO_RUNDIR";
	default:
		return !strcmp(name, OOO_SOCKET_NAME) ? "OOO_SOCKET or OOO_RUNDIR overrides the path"
						     : "OOO_RUNDIR overrides the directory";
	}
}

static struct ooo_session *session_connect(const char *path, const char *sockname, const char *label,
					   int timeout_ms, bool admin)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ooo_msg_hello hello = { 0 };
	struct ooo_session *s;
	enum path_from from;
	struct timeval tv;
	const void *rp;
	size_t rlen;
	int r;

	r = resolve_path(sa.sun_path, sizeof(sa.sun_path), path, sockname, &from);
	if (r < 0) {
		errno = -lo_fail(r, "the socket path is longer than %zu bytes (%s)", sizeof(sa.sun_path) - 1,
				 path_hint(from, sockname));
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = -lo_fail(-ENOMEM, "out of memory for a session");
		return NULL;
	}
	s->admin = admin;
	s->rfd = -1;
	s->pass_fd = -1;
	s->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
	pthread_mutex_init(&s->lock, NULL);
	s->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		r = lo_fail(-errno, "socket: %s", strerror(errno));
		goto err;
	}
	/* connect() on AF_UNIX waits for backlog room at most SO_SNDTIMEO */
	tv.tv_sec = s->timeout_ms / 1000;
	tv.tv_usec = (s->timeout_ms % 1000) * 1000;
	(void)setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(s->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		if (r == -ETIMEDOUT)
			lo_fail(r, "cannot connect to %s: its backlog stayed full", sa.sun_path);
		else if (r == -ENOENT || r == -ECONNREFUSED || r == -ENOTDIR)
			lo_fail(r, "cannot connect to %s: %s (is oood running? %s)", sa.sun_path, strerror(-r),
				path_hint(from, sockname));
		else
			lo_fail(r, "cannot connect to %s: %s (%s)", sa.sun_path, strerror(-r), path_hint(from, sockname));
		goto err;
	}
	wire_strcpy(hello.name, sizeof(hello.name), label ? label : program_invocation_short_name);
	r = lo_transact(s, OOO_MSG_HELLO, &hello, sizeof(hello), &rp, &rlen);
	if (r < 0)
		goto err;
	{
		const struct ooo_msg_hello_reply *hr = rp;
		s->id = hr->session_id;
		wire_strcpy(s->class_name, sizeof(s->class_name), hr->class_name);
		s->wait_spin_ns = wait_spin_ns(hr->wait_spin_us);
	}
	return s;
err:
	if (s->fd >= 0)
		close(s->fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
	errno = -lo_finish(admin ? "ooo_admin_open" : "ooo_open", r);
	return NULL;
}

ooo_session *ooo_open_opts(const struct ooo_open_opts *opts)
{
	struct ooo_open_opts o = { 0 };

	lo_begin();
	if (opts) {
		if (opts->sz < sizeof(size_t)) {
			errno = -lo_fail(-EINVAL, "%s: opts->sz is %zu, not sizeof(struct ooo_open_opts)", __func__, opts->sz);
			return NULL;
		}
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	return session_connect(o.path, OOO_SOCKET_NAME, o.name, o.timeout_ms, false);
}

ooo_session *ooo_open(const char *path)
{
	lo_begin();
	return session_connect(path, OOO_SOCKET_NAME, NULL, 0, false);
}

ooo_session *ooo_admin_open(const char *path, int timeout_ms)
{
	lo_begin();
	return session_connect(path, OOO_ADMIN_SOCKET_NAME, NULL, timeout_ms, true);
}

ooo_session *ooo_close(ooo_session *s)
{
	ssize_t n;

	if (!s)
		return NULL;
	if (!s->dead) {
		/* Tell the daemon this is a clean close; no need to wait for its reply. */
		n = wire_encode(s->sbuf, sizeof(s->sbuf), OOO_MSG_BYE, ++s->seq, 0, NULL, 0);
		if (n > 0)
			(void)send(s->fd, s->sbuf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	close(s->fd);
	lo_drop_fd(s);
	if (s->dp_destroy)
		s->dp_destroy(s->dp);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

int ooo_ping(ooo_session *s)
{
	uint64_t token;
	const void *rp;
	size_t rlen;
	int r;

	lo_begin();
	if (!s)
		return lo_fail(-EINVAL, "%s: the session is NULL", __func__);
	pthread_mutex_lock(&s->lock);
	token = ((uint64_t)s->seq << 32) ^ (uint64_t)(uintptr_t)s;
	r = lo_transact(s, OOO_MSG_PING, &token, sizeof(token), &rp, &rlen);
	if (r == 0 && (rlen != sizeof(token) || memcmp(rp, &token, sizeof(token))))
		r = lo_session_end(s, -OOO_EPROTO, "ping reply does not echo the request");
	pthread_mutex_unlock(&s->lock);
	return lo_finish(__func__, r);
}

/*
 * One request and its reply, copied into reply (capacity cap), under the
 * session lock. Returns the reply length or a negative error (its reason
 * set).
 */
int lo_call(ooo_session *s, uint16_t type, const void *req, size_t req_len, void *reply, size_t cap)
{
	const void *rp;
	size_t rlen;
	int r;

	pthread_mutex_lock(&s->lock);
	r = lo_transact(s, type, req, req_len, &rp, &rlen);
	if (r == 0) {
		if (rlen > cap || rlen > INT32_MAX) {
			r = lo_fail(-EMSGSIZE, "the %s reply of %zu bytes does not fit in %zu", wire_type_name(type), rlen,
				    cap);
		} else {
			if (rlen)
				memcpy(reply, rp, rlen);
			r = (int)rlen;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int ooo_admin_call(ooo_session *s, uint16_t type, const void *req, size_t req_len, void *reply, size_t cap)
{
	lo_begin();
	if (!s)
		return lo_fail(-EINVAL, "%s: the session is NULL", __func__);
	if (req_len && !req)
		return lo_fail(-EINVAL, "%s: req is NULL with req_len %zu", __func__, req_len);
	if (cap && !reply)
		return lo_fail(-EINVAL, "%s: reply is NULL with cap %zu", __func__, cap);
	if (type & OOO_MSG_REPLY)
		return lo_fail(-EINVAL, "%s: type %#x has the reply bit (OOO_MSG_REPLY) set", __func__, type);
	return lo_finish(__func__, lo_call(s, type, req, req_len, reply, cap));
}

/* The reply to a request of `type` has `got` bytes, not the `want` the type has. */
int lo_bad_reply_size(uint16_t type, int got, size_t want)
{
	return lo_fail(-OOO_EPROTO, "%s reply of %d bytes, expected %zu", wire_type_name(type), got, want);
}

int ooo_native_lease(ooo_session *s, const struct ooo_lease_opts *opts, struct ooo_lease_info *info)
{
	struct ooo_msg_lease_req req;
	struct ooo_msg_lease rep;
	int r;

	_Static_assert(OOO_LEASE_ENV_BYTES == OOO_LEASE_ENV_MAX, "lease environment sizes differ");
	lo_begin();
	if (!s)
		return lo_fail(-EINVAL, "%s: the session is NULL", __func__);
	if (!opts)
		return lo_fail(-EINVAL, "%s: opts is NULL", __func__);
	if (!info)
		return lo_fail(-EINVAL, "%s: info is NULL", __func__);
	if (opts->sz < sizeof(*opts))
		return lo_fail(-EINVAL, "%s: opts->sz is %zu, not sizeof(struct ooo_lease_opts) (%zu)", __func__, opts->sz,
			       sizeof(*opts));
	if (opts->sm_pct > 100)
		return lo_fail(-EINVAL, "%s: sm_pct %u is over 100", __func__, opts->sm_pct);
	if (opts->priority < 0 || opts->priority > OOO_LEASE_PRIO_BELOW)
		return lo_fail(-EINVAL, "%s: priority %d is not 0 (the class's), 1 or 2", __func__, opts->priority);
	memset(&req, 0, sizeof(req));
	req.device = opts->device;
	req.sm_pct = opts->sm_pct;
	req.priority = (uint32_t)opts->priority;
	req.mem_bytes = opts->mem_bytes;
	if (opts->class_name && strlen(opts->class_name) >= sizeof(req.class_name))
		return lo_fail(-ENAMETOOLONG, "%s: the class name is longer than %zu bytes", __func__,
			       sizeof(req.class_name) - 1);
	wire_strcpy(req.class_name, sizeof(req.class_name), opts->class_name ? opts->class_name : "");
	wire_strcpy(req.cmd, sizeof(req.cmd), opts->label ? opts->label : "");
	r = lo_call(s, OOO_MSG_LEASE, &req, sizeof(req), &rep, sizeof(rep));
	if (r < 0)
		return lo_finish(__func__, r);
	if ((size_t)r != sizeof(rep))
		return lo_bad_reply_size(OOO_MSG_LEASE, r, sizeof(rep));
	memset(info, 0, sizeof(*info));
	info->id = rep.id;
	info->device = rep.device;
	info->sm_pct = rep.sm_pct;
	info->priority = (int)rep.priority;
	info->mem_bytes = rep.mem_bytes;
	wire_strcpy(info->class_name, sizeof(info->class_name), rep.class_name);
	memcpy(info->env, rep.env, sizeof(info->env));
	wire_strcpy(info->note, sizeof(info->note), rep.msg);
	return lo_finish(__func__, 0);
}

uint64_t ooo_session_id(const ooo_session *s)
{
	return s ? s->id : 0;
}

const char *ooo_session_class(const ooo_session *s)
{
	return s ? s->class_name : "";
}
