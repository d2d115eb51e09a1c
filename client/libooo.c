/* SPDX-License-Identifier: MIT */
/*
 * libooo: sessions with oood over its SOCK_SEQPACKET socket.
 *
 * Requests on a session are serialised by a mutex: one request is on the
 * wire at a time, so a reply is matched by its sequence number and replies
 * to requests that timed out earlier are discarded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../proto/ring.h"
#include "staging.h"
#include "../proto/fdpass.h"
#include "../proto/wire.h"

#define DEFAULT_TIMEOUT_MS 10000

struct ooo_session {
	int fd;
	int timeout_ms;
	int dead; /* 0, or the negative error every later call returns (session_end) */
	char dead_why[OOO_ERRMSG_MAX]; /* the reason that goes with it; written once, before dead */
	bool admin;
	uint32_t seq;
	uint64_t id;
	char class_name[OOO_NAME_MAX];
	int rfd; /* descriptor passed with the last reply, -1 if none; the caller takes it */
	int rfds[3]; /* all descriptors of the last reply (attach passes three) */
	int pass_fd; /* passed with the next request, -1 if none */
	int nrfds;
	struct dpath *dp;   /* the data path, once a queue exists */
	int64_t wait_spin_ns; /* a wait spins this long before it sleeps (the class's wait_spin_us, OOO_WAIT_SPIN_US) */
	pthread_mutex_t lock;
	unsigned char rbuf[OOO_MSG_MAX];
	unsigned char sbuf[OOO_MSG_MAX];
};

/*
 * The reason for the calling thread's last failed call (ooo_last_error).
 * Every public call that can fail starts with begin(), so no earlier call's
 * reason survives it, and each failure sets its own: the daemon's text, or
 * libooo's with fail(); finish() clears it on success and gives a failure
 * that set none (an error code from below that says all there is) its code.
 */
static __thread char last_error[OOO_ERRMSG_MAX];

static void set_last_error(const char *msg)
{
	wire_strcpy(last_error, sizeof(last_error), msg);
}

static void begin(void)
{
	last_error[0] = 0;
}

/* A failure libooo finds itself: set the reason (printf-style) and return err. */
__attribute__((format(printf, 2, 3))) static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

/*
 * The arguments every tenant call checks first: a session, the out pointer
 * (out_given), a tenant's session, not an operator's. Returns 0, or -EINVAL
 * with the reason naming fn.
 */
static int tenant_args(const char *fn, const ooo_session *s, bool out_given)
{
	if (!s)
		return fail(-EINVAL, "%s: the session is NULL", fn);
	if (!out_given)
		return fail(-EINVAL, "%s: out is NULL", fn);
	if (s->admin)
		return fail(-EINVAL, "%s: not available on an admin session", fn);
	return 0;
}

/* The end of public call fn with result r: see last_error. Returns r. */
static int finish(const char *fn, int r)
{
	if (r >= 0)
		last_error[0] = 0;
	else if (!last_error[0])
		fail(r, "%s: %s", fn, ooo_strerror(r));
	return r;
}

const char *ooo_last_error(void)
{
	return last_error;
}

const char *ooo_strerror(int err)
{
	return wire_strerror(err);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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

static int64_t now_ms(void)
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
static int session_end(struct ooo_session *s, int err, const char *why)
{
	if (!s->dead) {
		if (why)
			set_last_error(why);
		if (!last_error[0])
			set_last_error(ooo_strerror(err));
		memcpy(s->dead_why, last_error, sizeof(s->dead_why));
		__atomic_store_n(&s->dead, err, __ATOMIC_RELEASE); /* after dead_why: readers need not lock */
	} else {
		set_last_error(s->dead_why);
	}
	return s->dead;
}

/* A call on a session that has ended: its error, with its reason again. */
static int dead_error(struct ooo_session *s)
{
	int err = __atomic_load_n(&s->dead, __ATOMIC_ACQUIRE);

	set_last_error(s->dead_why);
	return err;
}

/* A notice other than DEVRESET: the daemon closes the session after it. */
static int notice_error(struct ooo_session *s, const struct ooo_msg_notice *n)
{
	switch (n->kind) {
	case OOO_NOTICE_REVOKED: return session_end(s, -OOO_EREVOKED, n->msg);
	case OOO_NOTICE_LOST: return session_end(s, -OOO_ECLOSED, n->msg); /* gone for good: open a new one */
	default: return session_end(s, -OOO_ESHUTDOWN, n->msg);
	}
}

struct dpath;
static void dp_destroy(struct dpath *d);

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
				notice_error(s, m.payload);
		} else if (m.hdr.seq == 0 && m.hdr.status < 0) {
			/* a refusal of the connection itself (limits, shutdown, hello timeout) */
			session_end(s, m.hdr.status, ((const struct ooo_msg_error *)m.payload)->msg);
		}
	}
	return session_end(s, -OOO_ECLOSED, "oood closed the connection");
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

static void drop_fd(struct ooo_session *s)
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
static int transact(struct ooo_session *s, uint16_t type, const void *req, size_t req_len, const void **reply,
		    size_t *reply_len)
{
	struct wire_msg m;
	int64_t deadline;
	ssize_t n;
	uint32_t seq;

	if (s->dead)
		return dead_error(s);
	drop_fd(s);
	seq = ++s->seq;
	if (seq == 0)
		seq = s->seq = 1; /* 0 is reserved for notices */
	n = wire_encode(s->sbuf, sizeof(s->sbuf), type, seq, 0, req, req_len);
	if (n < 0)
		return fail((int)n, "a %s request of %zu bytes does not fit in a message", wire_type_name(type), req_len);
	if (send_request(s, (size_t)n) != n) {
		int e = errno;

		if (e == EPIPE || e == ECONNRESET)
			return closed_error(s);
		return fail(-e, "cannot send to oood: %s", strerror(e));
	}
	deadline = now_ms() + s->timeout_ms;
	for (;;) {
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		struct iovec iov = { .iov_base = s->rbuf, .iov_len = sizeof(s->rbuf) };
		union {
			struct cmsghdr align;
			char b[FDPASS_SPACE(FDPASS_MAX)];
		} u;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b) };
		const char *why;
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			return fail(-ETIMEDOUT, "no reply from oood within %d ms", s->timeout_ms);
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail(-errno, "poll: %s", strerror(errno));
		if (r == 0)
			return fail(-ETIMEDOUT, "no reply from oood within %d ms", s->timeout_ms);
		n = recvmsg(s->fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ECONNRESET ? closed_error(s)
						   : fail(-errno, "cannot receive from oood: %s", strerror(errno));
		if (n == 0)
			return closed_error(s);
		keep_fd(s, &mh);
		if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
			return session_end(s, -OOO_EPROTO, "oversized message from oood");
		r = wire_decode(s->rbuf, (size_t)n, WIRE_TO_PEER, &m, &why);
		if (r == -OOO_EVERSION && wire_hdr_valid(&m) && m.hdr.status == -OOO_EVERSION) {
			/* The daemon refused our version; its reason is readable. */
			const struct ooo_msg_error *e = (const void *)(s->rbuf + sizeof(m.hdr));
			if ((size_t)n == sizeof(m.hdr) + sizeof(*e) && memchr(e->msg, 0, sizeof(e->msg)))
				why = e->msg;
			return session_end(s, -OOO_EVERSION, why);
		}
		if (r < 0)
			return session_end(s, r, why);
		if (m.hdr.type == OOO_MSG_NOTICE) {
			const struct ooo_msg_notice *no = m.payload;

			/* the session goes on; the area's epoch tells the data path what failed */
			if (no->kind == OOO_NOTICE_DEVRESET)
				continue;
			/* The daemon closes after any other notice; remember why. */
			notice_error(s, no);
			continue;
		}
		if (m.hdr.seq == 0 && m.hdr.status < 0) {
			/* the daemon refused the connection itself and closes it */
			return session_end(s, m.hdr.status, ((const struct ooo_msg_error *)m.payload)->msg);
		}
		if (m.hdr.seq != seq)
			continue; /* reply to a request that timed out */
		if ((m.hdr.type & ~OOO_MSG_REPLY) != type)
			return session_end(s, -OOO_EPROTO, "reply of another type");
		if (m.hdr.status < 0) {
			const struct ooo_msg_error *e = m.payload;
			set_last_error(e->msg);
			*reply = NULL;
			*reply_len = 0;
			return m.hdr.status;
		}
		*reply = m.payload;
		*reply_len = m.plen;
		return 0;
	}
}

static int resolve_path(char *out, size_t cap, const char *path, const char *name)
{
	const char *env, *dir;
	int n;

	if (path) {
		n = snprintf(out, cap, "%s", path);
	} else if (!strcmp(name, OOO_SOCKET_NAME) && (env = getenv("OOO_SOCKET")) && *env) {
		n = snprintf(out, cap, "%s", env);
	} else {
		dir = getenv("OOO_RUNDIR");
		if (!dir || !*dir)
			dir = OOO_DEFAULT_RUNDIR;
		n = snprintf(out, cap, "%s/%s", dir, name);
	}
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static struct ooo_session *session_connect(const char *path, const char *sockname, const char *label,
					   int timeout_ms, bool admin)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ooo_msg_hello hello = { 0 };
	struct ooo_session *s;
	struct timeval tv;
	const void *rp;
	size_t rlen;
	int r;

	r = resolve_path(sa.sun_path, sizeof(sa.sun_path), path, sockname);
	if (r < 0) {
		errno = -fail(r, "the socket path is longer than %zu bytes", sizeof(sa.sun_path) - 1);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = -fail(-ENOMEM, "out of memory for a session");
		return NULL;
	}
	s->admin = admin;
	s->rfd = -1;
	s->pass_fd = -1;
	s->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
	pthread_mutex_init(&s->lock, NULL);
	s->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		r = fail(-errno, "socket: %s", strerror(errno));
		goto err;
	}
	/* connect() on AF_UNIX waits for backlog room at most SO_SNDTIMEO */
	tv.tv_sec = s->timeout_ms / 1000;
	tv.tv_usec = (s->timeout_ms % 1000) * 1000;
	(void)setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(s->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		fail(r, "cannot connect to %s: %s", sa.sun_path,
		     r == -ETIMEDOUT ? "its backlog stayed full" : strerror(-r));
		goto err;
	}
	wire_strcpy(hello.name, sizeof(hello.name), label ? label : program_invocation_short_name);
	r = transact(s, OOO_MSG_HELLO, &hello, sizeof(hello), &rp, &rlen);
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
	errno = -finish(admin ? "ooo_admin_open" : "ooo_open", r);
	return NULL;
}

ooo_session *ooo_open_opts(const struct ooo_open_opts *opts)
{
	struct ooo_open_opts o = { 0 };

	begin();
	if (opts) {
		if (opts->sz < sizeof(size_t)) {
			errno = -fail(-EINVAL, "%s: opts->sz is %zu, not sizeof(struct ooo_open_opts)", __func__, opts->sz);
			return NULL;
		}
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	return session_connect(o.path, OOO_SOCKET_NAME, o.name, o.timeout_ms, false);
}

ooo_session *ooo_open(const char *path)
{
	begin();
	return session_connect(path, OOO_SOCKET_NAME, NULL, 0, false);
}

ooo_session *ooo_admin_open(const char *path, int timeout_ms)
{
	begin();
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
	drop_fd(s);
	dp_destroy(s->dp);
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

	begin();
	if (!s)
		return fail(-EINVAL, "%s: the session is NULL", __func__);
	pthread_mutex_lock(&s->lock);
	token = ((uint64_t)s->seq << 32) ^ (uint64_t)(uintptr_t)s;
	r = transact(s, OOO_MSG_PING, &token, sizeof(token), &rp, &rlen);
	if (r == 0 && (rlen != sizeof(token) || memcmp(rp, &token, sizeof(token))))
		r = session_end(s, -OOO_EPROTO, "ping reply does not echo the request");
	pthread_mutex_unlock(&s->lock);
	return finish(__func__, r);
}

/*
 * One request and its reply, copied into reply (capacity cap), under the
 * session lock. Returns the reply length or a negative error (its reason
 * set).
 */
static int call(ooo_session *s, uint16_t type, const void *req, size_t req_len, void *reply, size_t cap)
{
	const void *rp;
	size_t rlen;
	int r;

	pthread_mutex_lock(&s->lock);
	r = transact(s, type, req, req_len, &rp, &rlen);
	if (r == 0) {
		if (rlen > cap || rlen > INT32_MAX) {
			r = fail(-EMSGSIZE, "the %s reply of %zu bytes does not fit in %zu", wire_type_name(type), rlen,
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
	begin();
	if (!s)
		return fail(-EINVAL, "%s: the session is NULL", __func__);
	if (req_len && !req)
		return fail(-EINVAL, "%s: req is NULL with req_len %zu", __func__, req_len);
	if (cap && !reply)
		return fail(-EINVAL, "%s: reply is NULL with cap %zu", __func__, cap);
	if (type & OOO_MSG_REPLY)
		return fail(-EINVAL, "%s: type %#x has the reply bit (OOO_MSG_REPLY) set", __func__, type);
	return finish(__func__, call(s, type, req, req_len, reply, cap));
}

/* The reply to a request of `type` has `got` bytes, not the `want` the type has. */
static int bad_reply_size(uint16_t type, int got, size_t want)
{
	return fail(-OOO_EPROTO, "%s reply of %d bytes, expected %zu", wire_type_name(type), got, want);
}

/* ---- buffers ---------------------------------------------------------------------- */

struct ooo_buf {
	ooo_session *s;
	uint64_t id, addr, size;
	uint32_t device;
};

int ooo_buf_alloc(ooo_session *s, size_t bytes, unsigned flags, ooo_buf **out)
{
	struct ooo_msg_buf_alloc req = { .size = bytes, .device = OOO_DEVICE_ANY };
	struct ooo_msg_buf rep;
	ooo_buf *b;
	int r;

	begin();
	if ((r = tenant_args(__func__, s, out != NULL)) < 0)
		return r;
	if (!bytes)
		return fail(-EINVAL, "%s: size is 0", __func__);
	if (flags & ~OOO_BUF_DEVICE_MASK)
		return fail(-EINVAL, "%s: unknown flags %#x", __func__, flags & ~OOO_BUF_DEVICE_MASK);
	if (flags & OOO_BUF_DEVICE_SET)
		req.device = (flags & OOO_BUF_DEVICE_INDEX) >> 8;
	b = calloc(1, sizeof(*b));
	if (!b)
		return fail(-ENOMEM, "%s: out of memory", __func__);
	r = call(s, OOO_MSG_BUF_ALLOC, &req, sizeof(req), &rep, sizeof(rep));
	if (r != sizeof(rep)) {
		free(b);
		return finish(__func__, r < 0 ? r : bad_reply_size(OOO_MSG_BUF_ALLOC, r, sizeof(rep)));
	}
	b->s = s;
	b->id = rep.id;
	b->addr = rep.addr;
	b->size = rep.size;
	b->device = rep.device;
	*out = b;
	return finish(__func__, 0);
}

int ooo_buf_free(ooo_buf *b)
{
	struct ooo_msg_buf_ref req;
	int r;

	begin();
	if (!b)
		return 0;
	req.id = b->id;
	r = call(b->s, OOO_MSG_BUF_FREE, &req, sizeof(req), NULL, 0);
	free(b);
	return finish(__func__, r < 0 ? r : 0);
}

uint64_t ooo_buf_addr(const ooo_buf *b)
{
	return b ? b->addr : 0;
}

size_t ooo_buf_size(const ooo_buf *b)
{
	return b ? (size_t)b->size : 0;
}

int ooo_buf_export_fd(ooo_buf *b)
{
	struct ooo_msg_buf_ref req;
	const void *rp;
	size_t rlen;
	int r;

	begin();
	if (!b)
		return fail(-EINVAL, "%s: the buffer is NULL", __func__);
	req.id = b->id;
	pthread_mutex_lock(&b->s->lock);
	r = transact(b->s, OOO_MSG_BUF_EXPORT, &req, sizeof(req), &rp, &rlen);
	if (r == 0) {
		r = b->s->rfd >= 0 ? b->s->rfd : fail(-OOO_EPROTO, "buffer export reply without its descriptor");
		if (r >= 0)
			b->s->rfds[0] = -1; /* the caller's now */
		b->s->rfd = -1;
	}
	pthread_mutex_unlock(&b->s->lock);
	return finish(__func__, r);
}

int ooo_native_lease(ooo_session *s, const struct ooo_lease_opts *opts, struct ooo_lease_info *info)
{
	struct ooo_msg_lease_req req;
	struct ooo_msg_lease rep;
	int r;

	_Static_assert(OOO_LEASE_ENV_BYTES == OOO_LEASE_ENV_MAX, "lease environment sizes differ");
	begin();
	if (!s)
		return fail(-EINVAL, "%s: the session is NULL", __func__);
	if (!opts)
		return fail(-EINVAL, "%s: opts is NULL", __func__);
	if (!info)
		return fail(-EINVAL, "%s: info is NULL", __func__);
	if (opts->sz < sizeof(*opts))
		return fail(-EINVAL, "%s: opts->sz is %zu, not sizeof(struct ooo_lease_opts) (%zu)", __func__, opts->sz,
			    sizeof(*opts));
	if (opts->sm_pct > 100)
		return fail(-EINVAL, "%s: sm_pct %u is over 100", __func__, opts->sm_pct);
	if (opts->priority < 0 || opts->priority > OOO_LEASE_PRIO_BELOW)
		return fail(-EINVAL, "%s: priority %d is not 0 (the class's), 1 or 2", __func__, opts->priority);
	memset(&req, 0, sizeof(req));
	req.device = opts->device;
	req.sm_pct = opts->sm_pct;
	req.priority = (uint32_t)opts->priority;
	req.mem_bytes = opts->mem_bytes;
	if (opts->class_name && strlen(opts->class_name) >= sizeof(req.class_name))
		return fail(-ENAMETOOLONG, "%s: the class name is longer than %zu bytes", __func__,
			    sizeof(req.class_name) - 1);
	wire_strcpy(req.class_name, sizeof(req.class_name), opts->class_name ? opts->class_name : "");
	wire_strcpy(req.cmd, sizeof(req.cmd), opts->label ? opts->label : "");
	r = call(s, OOO_MSG_LEASE, &req, sizeof(req), &rep, sizeof(rep));
	if (r < 0)
		return finish(__func__, r);
	if ((size_t)r != sizeof(rep))
		return bad_reply_size(OOO_MSG_LEASE, r, sizeof(rep));
	memset(info, 0, sizeof(*info));
	info->id = rep.id;
	info->device = rep.device;
	info->sm_pct = rep.sm_pct;
	info->priority = (int)rep.priority;
	info->mem_bytes = rep.mem_bytes;
	wire_strcpy(info->class_name, sizeof(info->class_name), rep.class_name);
	memcpy(info->env, rep.env, sizeof(info->env));
	wire_strcpy(info->note, sizeof(info->note), rep.msg);
	return finish(__func__, 0);
}

uint64_t ooo_session_id(const ooo_session *s)
{
	return s ? s->id : 0;
}

const char *ooo_session_class(const ooo_session *s)
{
	return s ? s->class_name : "";
}

/* ---- the data path: queues, copies, memsets --------------------------------------- */

#define DP_INFLIGHT 1024   /* commands in flight per session (the SQ's size) */
#define DP_CHUNK (8u << 20) /* copies are staged in pieces of at most this */

struct dp_entry {
	uint32_t gen;
	bool used;
	bool on_consume; /* freed once the executor has taken it (launches: no completion is posted) */
	uint32_t sq_pos; /* its submission ring index */
	uint32_t queue;
	uint64_t stage_off; /* UINT64_MAX: none */
	void *dtoh_dst;     /* copy out of staging on completion */
	size_t len;
	struct ooo_event *ev; /* an event record: bump its completed count */
};

struct dp_queue_state {
	bool live;
	uint64_t submitted, completed;
	int error; /* first failure since the last sync */
};

struct dpath {
	pthread_mutex_t lock;
	int memfd;
	int bell; /* the doorbell's tenant end (<ooo/shm.h>): rung for submissions, polled for completions */
	int wake; /* an eventfd of this process: a thread that reaped rings it for the others asleep */
	void *base;
	uint64_t size;
	struct ooo_shm_hdr h;
	struct ring sq, cq;
	struct staging st;
	unsigned char *stage;
	uint32_t device;
	uint32_t epoch;     /* the area's epoch last handled */
	volatile uint32_t *epoch_p;
	struct dp_entry ent[DP_INFLIGHT];
	uint32_t free_hint;
	struct dp_queue_state q[256];
	uint32_t consume[DP_INFLIGHT]; /* on_consume entries, oldest first */
	uint32_t chead, clen;
	uint8_t event_used[1024]; /* event handles in use (the executor's DP_MAX_EVENTS) */
	struct {
		unsigned char *base; /* NULL if the region is free */
		uint64_t size;
	} host[OOO_HOST_REGIONS];
	struct ooo_event *next_ev; /* dp_submit: the event the next entry records */
	/*
	 * Threads asleep in dp_wait. A thread that ends entries (dp_reap, dp_epoch) writes `wake` while
	 * there are any: the doorbell or notice that told it may be one it drained for them. The last
	 * sleeper to leave its poll clears `wake` (and the ring's wake-up flag): a sleeper that took it
	 * earlier would leave the others asleep.
	 */
	unsigned sleepers;
};

struct ooo_event {
	ooo_session *s;
	uint32_t idx;
	uint64_t recorded, done; /* records submitted and completed */
	int error;
};

struct ooo_queue {
	ooo_session *s;
	uint32_t idx;
	int priority;
	uint32_t slo_us;
};

static void dp_destroy(struct dpath *d)
{
	if (!d)
		return;
	if (d->base)
		munmap(d->base, d->size);
	if (d->memfd >= 0)
		close(d->memfd);
	if (d->bell >= 0)
		close(d->bell);
	if (d->wake >= 0)
		close(d->wake);
	staging_fini(&d->st);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* Attach the session's data path (once). Caller holds s->lock. */
static int dp_attach_locked(ooo_session *s)
{
	struct ooo_msg_attach req = { .device = OOO_DEVICE_ANY };
	struct ooo_msg_attach_reply rep;
	struct ooo_shm_hdr h;
	struct dpath *d;
	const void *rp;
	size_t rlen;
	int r;

	if (s->dp)
		return 0;
	r = transact(s, OOO_MSG_ATTACH, &req, sizeof(req), &rp, &rlen);
	if (r < 0)
		return r;
	memcpy(&rep, rp, sizeof(rep));
	if (s->nrfds != 2)
		return fail(-OOO_EPROTO, "attach reply without its two descriptors");
	d = calloc(1, sizeof(*d));
	if (!d)
		return fail(-ENOMEM, "out of memory for the data path");
	pthread_mutex_init(&d->lock, NULL);
	d->memfd = s->rfds[0];
	d->bell = s->rfds[1];
	s->nrfds = 0;
	s->rfd = -1;
	d->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->wake < 0) {
		r = fail(-errno, "cannot create the data path's wake-up eventfd: %s", strerror(errno));
		goto err;
	}
	d->size = rep.area_size;
	d->device = rep.device;
	d->base = mmap(NULL, d->size, PROT_READ | PROT_WRITE, MAP_SHARED, d->memfd, 0);
	if (d->base == MAP_FAILED) {
		d->base = NULL;
		r = fail(-errno, "cannot map the session's area: %s", strerror(errno));
		goto err;
	}
	memcpy(&h, d->base, sizeof(h));
	if (ring_check_hdr(&h, d->size) < 0 || h.sq_entries != rep.sq_entries || h.cq_entries != rep.cq_entries) {
		r = fail(-OOO_EPROTO, "the session area's layout is not what oood said");
		goto err;
	}
	d->h = h;
	d->epoch_p = (volatile uint32_t *)((char *)d->base + offsetof(struct ooo_shm_hdr, epoch));
	d->epoch = h.epoch;
	ring_init(&d->sq, d->base, d->size, h.sq_ctl_off, h.sq_off, h.sq_entries, sizeof(struct ooo_sqe), d->bell,
		  true);
	ring_init(&d->cq, d->base, d->size, h.cq_ctl_off, h.cq_off, h.cq_entries, sizeof(struct ooo_cqe), d->bell,
		  false);
	d->stage = (unsigned char *)d->base + h.staging_off;
	r = staging_init(&d->st, h.staging_size, DP_INFLIGHT);
	if (r < 0) {
		fail(r, "cannot set up the staging area: %s", strerror(-r));
		goto err;
	}
	s->dp = d;
	return 0;
err:
	dp_destroy(d);
	return r;
}

static void entry_done(struct dpath *d, struct dp_entry *e, int status)
{
	struct dp_queue_state *q = &d->q[e->queue];

	if (status == 0 && e->dtoh_dst)
		memcpy(e->dtoh_dst, d->stage + e->stage_off, e->len);
	if (e->stage_off != UINT64_MAX)
		staging_free(&d->st, e->stage_off);
	if (status < 0 && !q->error)
		q->error = status;
	if (!e->on_consume)
		q->completed++;
	if (e->ev) {
		e->ev->done++;
		if (status < 0 && !e->ev->error)
			e->ev->error = status;
	}
	e->used = false;
	e->gen++;
}

/* Wake the threads asleep in dp_wait, so that they look again (see sleepers). Caller holds d->lock. */
static void dp_wake_sleepers(struct dpath *d)
{
	uint64_t one = 1;

	if (d->sleepers)
		(void)!write(d->wake, &one, sizeof(one));
}

/* The executor was replaced: everything in flight failed. Caller holds d->lock. */
static void dp_fail_all(struct dpath *d, int status)
{
	d->clen = 0;
	for (uint32_t i = 0; i < DP_INFLIGHT; i++) {
		if (d->ent[i].used)
			entry_done(d, &d->ent[i], status);
	}
}

/* One completion from the ring: its entry ends with its status (one already freed keeps an error for its queue). */
static void cqe_done(struct dpath *d, const struct ooo_cqe *c)
{
	uint32_t i = (uint32_t)(c->user_data & 0xffffffffu);
	struct dp_entry *e = i < DP_INFLIGHT ? &d->ent[i] : NULL;

	if (!e || !e->used || e->gen != (uint32_t)(c->user_data >> 32)) {
		/* an error of a launch already freed, or a completion from before a reset */
		if (c->status < 0 && c->queue < 256 && d->q[c->queue].live && !d->q[c->queue].error)
			d->q[c->queue].error = c->status;
		return;
	}
	entry_done(d, e, c->status);
}

/*
 * Has the executor been replaced since we last looked? Then what it posted
 * before it died ends with its status, and the rest in flight failed.
 * Returns true while a replacement is under way (odd epoch).
 */
static bool dp_epoch(struct dpath *d)
{
	uint32_t e = __atomic_load_n(d->epoch_p, __ATOMIC_ACQUIRE);

	if (e != d->epoch) {
		struct ooo_cqe c;

		d->epoch = e;
		/*
		 * What the completion ring still holds came from the executor that
		 * died, posted before it died (the new one has nothing of ours
		 * before we submit again): those commands end with their own
		 * status (a faulting kernel's OOO_EFAULT among them), the rest of
		 * what was in flight with OOO_EDEVRESET.
		 */
		while (ring_pop(&d->cq, &c) == 1)
			cqe_done(d, &c);
		ring_release(&d->cq);
		dp_fail_all(d, -OOO_EDEVRESET);
		set_last_error("the GPU executor was restarted: commands in flight failed");
		/*
		 * Other threads may sleep on commands that just ended; this thread
		 * may have drained the doorbell and notice that oood sent for them.
		 */
		dp_wake_sleepers(d);
	}
	return e & 1;
}

/* Take every completion posted. Caller holds d->lock. Returns how many entries ended (completions and consumed launches), or -OOO_EPROTO. */
static int dp_reap(ooo_session *s, struct dpath *d)
{
	struct ooo_cqe c;
	int r, n = 0;

	dp_epoch(d);
	/* launches the executor has taken: their parameters are copied, their staging is free */
	if (d->clen) {
		uint32_t head = __atomic_load_n(&d->sq.ctl->head, __ATOMIC_ACQUIRE);

		while (d->clen) {
			struct dp_entry *e = &d->ent[d->consume[d->chead]];

			if (e->used && (int32_t)(head - e->sq_pos) <= 0)
				break;
			if (e->used && e->on_consume)
				entry_done(d, e, 0);
			d->chead = (d->chead + 1) % DP_INFLIGHT;
			d->clen--;
			n++;
		}
	}
	while ((r = ring_pop(&d->cq, &c)) == 1) {
		n++;
		cqe_done(d, &c);
	}
	ring_release(&d->cq);
	/*
	 * Other threads sleep on the doorbell (dp_wait), and what this one just
	 * reaped may be what they wait for: the executor will not ring for it
	 * again (and a failed ring_sleep_prepare clears the flag they set), so
	 * wake them; they look and sleep again.
	 */
	if (n > 0)
		dp_wake_sleepers(d);
	if (r < 0)
		return fail(-OOO_EPROTO, "the completion ring's indices are inconsistent");
	return n;
}

/* Notices (DEVRESET) arrive on the socket; read them if no call is reading it now. */
static void dp_read_notices(ooo_session *s)
{
	int was;

	if (pthread_mutex_trylock(&s->lock))
		return; /* another thread is in a call: it reads them */
	was = s->dead;
	for (;;) {
		struct iovec iov = { s->rbuf, sizeof(s->rbuf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		struct wire_msg m;
		ssize_t n = recvmsg(s->fd, &mh, MSG_DONTWAIT);

		if (n <= 0) {
			if (n == 0)
				session_end(s, -OOO_ECLOSED, "oood closed the connection");
			break;
		}
		if (wire_decode(s->rbuf, (size_t)n, WIRE_TO_PEER, &m, NULL) == 0 && m.hdr.type == OOO_MSG_NOTICE) {
			const struct ooo_msg_notice *no = m.payload;
			if (no->kind != OOO_NOTICE_DEVRESET)
				notice_error(s, no);
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (s->dead && !was && s->dp) {
		/* the others asleep in dp_wait hear of it too: this thread took the notice they polled for */
		uint64_t one = 1;

		(void)!write(s->dp->wake, &one, sizeof(one));
	}
}

/*
 * Wait until done(d, arg) holds, reaping completions. Caller holds d->lock
 * (released while sleeping). Returns 0, -ETIMEDOUT, or a session error.
 */
static int dp_wait(ooo_session *s, struct dpath *d, bool (*done)(struct dpath *, const void *), const void *arg,
		   int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	/*
	 * Completions of short commands come within microseconds: spin a while
	 * (the class's wait_spin_us, 0: not at all), never past the caller's
	 * timeout.
	 */
	int64_t t0 = now_ns(), spin_until = t0 + s->wait_spin_ns;

	if (timeout_ms >= 0 && spin_until > t0 + (int64_t)timeout_ms * 1000000)
		spin_until = t0 + (int64_t)timeout_ms * 1000000;

	for (;;) {
		struct pollfd p[3] = { { .fd = d->bell, .events = POLLIN },
				       { .fd = s->fd, .events = POLLIN },
				       { .fd = d->wake, .events = POLLIN } };
		int64_t left;
		int r = dp_reap(s, d);

		if (r < 0)
			return r;
		if (done(d, arg))
			return 0;
		if (s->dead)
			return dead_error(s);
		if (now_ns() < spin_until) {
			/*
			 * A tenant waiting must not keep the executor or another
			 * tenant off a CPU, nor its own other threads off the
			 * data path: the lock goes while it yields.
			 */
			pthread_mutex_unlock(&d->lock);
			sched_yield();
			pthread_mutex_lock(&d->lock);
			continue;
		}
		if (!ring_sleep_prepare(&d->cq)) {
			if (!d->sleepers)
				ring_awake(&d->cq);
			continue;
		}
		left = deadline < 0 ? -1 : deadline - now_ms();
		if (deadline >= 0 && left <= 0) {
			if (!d->sleepers)
				ring_awake(&d->cq);
			return fail(-ETIMEDOUT, "commands still running after %d ms", timeout_ms);
		}
		/*
		 * The wake-up flag and `wake` are shared: the last sleeper to wake
		 * clears them. It reads `wake` only if its poll saw it set: no one
		 * else reads it meanwhile, so the read cannot block (should the
		 * descriptor have been made blocking); if it was set after the
		 * poll, the next poll sees it.
		 */
		d->sleepers++;
		pthread_mutex_unlock(&d->lock);
		r = poll(p, 3, deadline < 0 ? -1 : (int)left);
		pthread_mutex_lock(&d->lock);
		if (--d->sleepers == 0) {
			ring_awake(&d->cq);
			if (r > 0 && (p[2].revents & POLLIN)) {
				uint64_t v;

				(void)!read(d->wake, &v, sizeof(v));
			}
		}
		if (r > 0 && (p[0].revents & POLLIN))
			(void)doorbell_drain(d->bell);
		if (r > 0 && (p[1].revents & (POLLIN | POLLHUP))) {
			pthread_mutex_unlock(&d->lock);
			dp_read_notices(s);
			pthread_mutex_lock(&d->lock);
		}
	}
}

static bool entry_free(struct dpath *d, const void *arg)
{
	(void)arg;
	for (uint32_t k = 0; k < DP_INFLIGHT; k++) {
		if (!d->ent[(d->free_hint + k) % DP_INFLIGHT].used)
			return true;
	}
	return false;
}

/* Submit one entry (caller holds d->lock). stage_off/dtoh as in struct dp_entry. */
static int dp_submit(ooo_session *s, struct dpath *d, uint32_t queue, struct ooo_sqe *e, uint64_t stage_off,
		     void *dtoh_dst, size_t len)
{
	struct ooo_sqe *slot;
	uint32_t i = 0;
	int r;

	if (dp_epoch(d)) {
		/* a replacement that could not take the session back closes it: say so, not "again" for ever */
		dp_read_notices(s);
		if (s->dead)
			return dead_error(s);
		return fail(-OOO_EDEVRESET, "the GPU executor is being restarted; submit again when it is back");
	}
	if (!entry_free(d, NULL)) {
		r = dp_wait(s, d, entry_free, NULL, -1);
		if (r < 0)
			return r;
	}
	for (uint32_t k = 0; k < DP_INFLIGHT; k++) {
		i = (d->free_hint + k) % DP_INFLIGHT;
		if (!d->ent[i].used)
			break;
	}
	d->free_hint = i + 1;
	while (!(slot = ring_reserve(&d->sq))) {
		r = dp_reap(s, d);
		if (r < 0)
			return r;
		if (s->dead)
			return dead_error(s);
		sched_yield(); /* the executor takes submissions within microseconds */
	}
	d->ent[i] = (struct dp_entry){ .gen = d->ent[i].gen, .used = true, .queue = queue, .stage_off = stage_off,
				       .dtoh_dst = dtoh_dst, .len = len, .ev = d->next_ev };
	d->next_ev = NULL;
	e->queue = (uint16_t)queue;
	e->user_data = ((uint64_t)d->ent[i].gen << 32) | i;
	if (e->opcode == OOO_OP_LAUNCH) {
		/* no completion: queue order and the next synced command say when it ran */
		d->ent[i].on_consume = true;
		d->ent[i].sq_pos = d->sq.mine - 1;
		d->consume[(d->chead + d->clen) % DP_INFLIGHT] = i;
		d->clen++;
	} else {
		e->flags |= OOO_SQE_NOTIFY;
		d->q[queue].submitted++;
	}
	{
		/* for the executor's submit-to-taken histogram (vDSO clock: some 20 ns) */
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		e->submit_us = (uint32_t)((uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
		if (!e->submit_us)
			e->submit_us = 1;
	}
	memcpy(slot, e, sizeof(*e));
	ring_publish(&d->sq);
	return 0;
}

struct stage_want {
	uint64_t len;
	uint64_t *off;
	int r;
};

static bool stage_got(struct dpath *d, const void *arg)
{
	struct stage_want *w = (struct stage_want *)(uintptr_t)arg;

	w->r = staging_alloc(&d->st, w->len, 256, w->off);
	return w->r != -ENOSPC;
}

static int dp_stage(ooo_session *s, struct dpath *d, uint64_t len, uint64_t *off)
{
	struct stage_want w = { .len = len, .off = off };
	int r;

	if (stage_got(d, &w))
		return w.r;
	r = dp_wait(s, d, stage_got, &w, -1);
	return r < 0 ? r : w.r;
}

/* Public call fn on queue q: its data path, or NULL with the reason for -EINVAL. */
static struct dpath *queue_dp(const char *fn, ooo_queue *q)
{
	if (!q)
		return fail(-EINVAL, "%s: the queue is NULL", fn), NULL;
	if (!q->s || !q->s->dp)
		return fail(-EINVAL, "%s: not a queue of a session's data path", fn), NULL;
	return q->s->dp;
}

int ooo_queue_create(ooo_session *s, const struct ooo_queue_opts *opts, ooo_queue **out)
{
	struct ooo_queue_opts o = { .sz = sizeof(o), .priority = -1 };
	struct ooo_msg_queue_create req;
	struct ooo_msg_queue_info rep;
	const void *rp;
	size_t rlen;
	ooo_queue *q;
	int r;

	begin();
	if ((r = tenant_args(__func__, s, out != NULL)) < 0)
		return r;
	if (opts && opts->sz < sizeof(size_t))
		return fail(-EINVAL, "%s: opts->sz is %zu, not sizeof(struct ooo_queue_opts)", __func__, opts->sz);
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (o.priority < -1 || o.priority > 99)
		return fail(-EINVAL, "%s: priority %d is not -1 (the class's) or 0..99", __func__, o.priority);
	req = (struct ooo_msg_queue_create){ .priority = o.priority, .slo_us = o.slo_us };
	q = calloc(1, sizeof(*q));
	if (!q)
		return fail(-ENOMEM, "%s: out of memory", __func__);
	pthread_mutex_lock(&s->lock);
	r = dp_attach_locked(s);
	if (r == 0)
		r = transact(s, OOO_MSG_QUEUE_CREATE, &req, sizeof(req), &rp, &rlen);
	if (r == 0)
		memcpy(&rep, rp, sizeof(rep));
	pthread_mutex_unlock(&s->lock);
	if (r < 0 || rep.queue >= 256) {
		free(q);
		return finish(__func__,
			      r < 0 ? r : fail(-OOO_EPROTO, "queue create reply with queue %u (of 256)", rep.queue));
	}
	q->s = s;
	q->idx = rep.queue;
	q->priority = rep.priority;
	q->slo_us = rep.slo_us;
	pthread_mutex_lock(&s->dp->lock);
	s->dp->q[q->idx] = (struct dp_queue_state){ .live = true };
	pthread_mutex_unlock(&s->dp->lock);
	*out = q;
	return finish(__func__, 0);
}

int ooo_queue_priority(const ooo_queue *q)
{
	return q ? q->priority : -1;
}

uint32_t ooo_queue_slo_us(const ooo_queue *q)
{
	return q ? q->slo_us : 0;
}

int ooo_queue_destroy(ooo_queue *q)
{
	struct ooo_msg_queue req;
	const void *rp;
	size_t rlen;
	char why[sizeof(last_error)];
	int r;

	begin();
	if (!q)
		return 0;
	r = ooo_queue_sync(q, -1);
	memcpy(why, last_error, sizeof(why)); /* the sync's failure is the one returned */
	req = (struct ooo_msg_queue){ .queue = q->idx };
	pthread_mutex_lock(&q->s->lock);
	{
		int t = transact(q->s, OOO_MSG_QUEUE_DESTROY, &req, sizeof(req), &rp, &rlen);
		if (!r)
			r = t;
		else
			memcpy(last_error, why, sizeof(why));
	}
	pthread_mutex_unlock(&q->s->lock);
	pthread_mutex_lock(&q->s->dp->lock);
	q->s->dp->q[q->idx].live = false;
	pthread_mutex_unlock(&q->s->dp->lock);
	free(q);
	return finish(__func__, r);
}

static bool queue_idle(struct dpath *d, const void *arg)
{
	const struct dp_queue_state *q = &d->q[*(const uint32_t *)arg];
	return q->completed == q->submitted;
}

/*
 * The first failure of a command on queue idx since the last sync, taken (0
 * if none); its reason unless this call set one already (an executor
 * restart it noticed). Caller holds d->lock.
 */
static int take_queue_error(struct dpath *d, uint32_t idx)
{
	int r = d->q[idx].error;

	if (r) {
		d->q[idx].error = 0;
		if (!last_error[0])
			fail(r, "a command on queue %u failed: %s", idx, ooo_strerror(r));
	}
	return r;
}

int ooo_queue_sync(ooo_queue *q, int timeout_ms)
{
	struct dpath *d;
	int r;

	begin();
	if (!(d = queue_dp(__func__, q)))
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	{
		/* a marker behind everything submitted: launches post no completion of their own */
		struct ooo_sqe nop = { .opcode = OOO_OP_NOP };
		r = dp_submit(q->s, d, q->idx, &nop, UINT64_MAX, NULL, 0);
	}
	if (r == 0)
		r = dp_wait(q->s, d, queue_idle, &q->idx, timeout_ms);
	if (r == 0)
		r = take_queue_error(d, q->idx);
	pthread_mutex_unlock(&d->lock);
	return finish(__func__, r);
}

/* Is [p, p+len) inside one of the session's host regions? Then its tagged address. Caller holds d->lock. */
static bool host_addr(struct dpath *d, const void *p, size_t len, uint64_t *addr)
{
	const unsigned char *c = p;

	for (uint32_t r = 0; r < OOO_HOST_REGIONS; r++) {
		if (d->host[r].base && c >= d->host[r].base && len <= d->host[r].size &&
		    (uint64_t)(c - d->host[r].base) <= d->host[r].size - len) {
			*addr = OOO_HOST_ADDR(r, c - d->host[r].base);
			return true;
		}
	}
	return false;
}

int ooo_memcpy_htod(ooo_queue *q, uint64_t dst, const void *src, size_t len)
{
	struct dpath *d;
	uint64_t h;
	int r = 0;

	begin();
	if (!(d = queue_dp(__func__, q)))
		return -EINVAL;
	if (len && !src)
		return fail(-EINVAL, "%s: src is NULL with len %zu", __func__, len);
	pthread_mutex_lock(&d->lock);
	if (len && host_addr(d, src, len, &h)) {
		/* zero copy: the executor DMAs straight from the caller's registered memory */
		struct ooo_sqe e = { .opcode = OOO_OP_HTOD, .copy = { .dst = dst, .src = h, .len = len } };
		r = dp_submit(q->s, d, q->idx, &e, UINT64_MAX, NULL, 0);
		pthread_mutex_unlock(&d->lock);
		return finish(__func__, r);
	}
	for (size_t done = 0; done < len && r == 0;) {
		size_t n = len - done < DP_CHUNK ? len - done : DP_CHUNK;
		struct ooo_sqe e = { .opcode = OOO_OP_HTOD };
		uint64_t off;

		r = dp_stage(q->s, d, n, &off);
		if (r < 0)
			break;
		memcpy(d->stage + off, (const char *)src + done, n);
		e.copy.dst = dst + done;
		e.copy.src = off;
		e.copy.len = n;
		r = dp_submit(q->s, d, q->idx, &e, off, NULL, 0);
		if (r < 0)
			staging_free(&d->st, off);
		done += n;
	}
	pthread_mutex_unlock(&d->lock);
	return finish(__func__, r);
}

int ooo_memcpy_dtoh(ooo_queue *q, void *dst, uint64_t src, size_t len)
{
	struct dpath *d;
	int r = 0;

	begin();
	if (!(d = queue_dp(__func__, q)))
		return -EINVAL;
	if (len && !dst)
		return fail(-EINVAL, "%s: dst is NULL with len %zu", __func__, len);
	pthread_mutex_lock(&d->lock);
	{
		uint64_t h;

		if (len && host_addr(d, dst, len, &h)) {
			struct ooo_sqe e = { .opcode = OOO_OP_DTOH, .copy = { .dst = h, .src = src, .len = len } };
			r = dp_submit(q->s, d, q->idx, &e, UINT64_MAX, NULL, 0);
			len = 0; /* nothing to stage: wait for it below */
		}
	}
	for (size_t done = 0; done < len && r == 0;) {
		size_t n = len - done < DP_CHUNK ? len - done : DP_CHUNK;
		struct ooo_sqe e = { .opcode = OOO_OP_DTOH };
		uint64_t off;

		r = dp_stage(q->s, d, n, &off);
		if (r < 0)
			break;
		e.copy.dst = off;
		e.copy.src = src + done;
		e.copy.len = n;
		r = dp_submit(q->s, d, q->idx, &e, off, (char *)dst + done, n);
		if (r < 0)
			staging_free(&d->st, off);
		done += n;
	}
	/* the data is the caller's only once it has arrived */
	if (r == 0)
		r = dp_wait(q->s, d, queue_idle, &q->idx, -1);
	if (r == 0)
		r = take_queue_error(d, q->idx);
	pthread_mutex_unlock(&d->lock);
	return finish(__func__, r);
}

/* Public call fn: submit e to q. */
static int simple(const char *fn, ooo_queue *q, struct ooo_sqe *e)
{
	struct dpath *d;
	int r;

	begin();
	if (!(d = queue_dp(fn, q)))
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	r = dp_submit(q->s, d, q->idx, e, UINT64_MAX, NULL, 0);
	pthread_mutex_unlock(&d->lock);
	return finish(fn, r);
}

int ooo_memcpy_dtod(ooo_queue *q, uint64_t dst, uint64_t src, size_t len)
{
	struct ooo_sqe e = { .opcode = OOO_OP_DTOD, .copy = { .dst = dst, .src = src, .len = len } };

	return simple(__func__, q, &e);
}

int ooo_memset(ooo_queue *q, uint64_t dst, uint32_t value, size_t count, unsigned elsize)
{
	struct ooo_sqe e = { .opcode = OOO_OP_MEMSET, .set = { .dst = dst, .count = count, .value = value, .elsize = elsize } };

	return simple(__func__, q, &e);
}

/* ---- modules, kernels, launches --------------------------------------------------- */

struct ooo_module {
	ooo_session *s;
	uint32_t id;
};

struct ooo_kernel {
	ooo_module *m;
	struct ooo_msg_kernel k;
};

/* A sealed memfd holding the image, so the executor reads exactly what we wrote. */
static int image_fd(const void *image, size_t len)
{
	int fd = memfd_create("ooo-module", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t done = 0;

	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n = write(fd, (const char *)image + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? -errno : -EIO;
			close(fd);
			return e;
		}
		done += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* transact, passing one descriptor with the request. Caller holds s->lock. */
static int transact_fd(struct ooo_session *s, uint16_t type, const void *req, size_t req_len, int fd,
		       const void **reply, size_t *reply_len)
{
	s->pass_fd = fd;
	int r = transact(s, type, req, req_len, reply, reply_len);
	s->pass_fd = -1;
	return r;
}

int ooo_module_load(ooo_session *s, int kind, const void *image, size_t len, ooo_module **out)
{
	struct ooo_msg_module_load req = { .kind = (uint32_t)kind, .len = len };
	struct ooo_msg_module rep;
	const void *rp;
	size_t rlen;
	ooo_module *m;
	int fd, r;

	begin();
	if (!s)
		return fail(-EINVAL, "%s: the session is NULL", __func__);
	if (s->admin)
		return fail(-EINVAL, "%s: not available on an admin session", __func__);
	if (!image)
		return fail(-EINVAL, "%s: image is NULL", __func__);
	if (!len)
		return fail(-EINVAL, "%s: the image is empty", __func__);
	if (len > OOO_MODULE_MAX_BYTES)
		return fail(-EINVAL, "%s: the image of %zu bytes is over the limit of %u", __func__, len,
			    OOO_MODULE_MAX_BYTES);
	if (!out)
		return fail(-EINVAL, "%s: out is NULL", __func__);
	if (kind < OOO_MODULE_PTX || kind > OOO_MODULE_CUDA_C)
		return fail(-EINVAL, "%s: unknown module kind %d", __func__, kind);
	m = calloc(1, sizeof(*m));
	if (!m)
		return fail(-ENOMEM, "%s: out of memory", __func__);
	fd = image_fd(image, len);
	if (fd < 0) {
		free(m);
		return fail(fd, "%s: cannot copy the image into a sealed memfd: %s", __func__, strerror(-fd));
	}
	pthread_mutex_lock(&s->lock);
	r = dp_attach_locked(s); /* the module lives on the session's GPU */
	if (r == 0)
		r = transact_fd(s, OOO_MSG_MODULE_LOAD, &req, sizeof(req), fd, &rp, &rlen);
	if (r == 0)
		memcpy(&rep, rp, sizeof(rep));
	pthread_mutex_unlock(&s->lock);
	close(fd);
	if (r < 0) {
		free(m);
		return finish(__func__, r);
	}
	m->s = s;
	m->id = rep.module;
	*out = m;
	return finish(__func__, 0);
}

int ooo_module_unload(ooo_module *m)
{
	struct ooo_msg_module req;
	int r;

	begin();
	if (!m)
		return 0;
	req = (struct ooo_msg_module){ .module = m->id };
	r = call(m->s, OOO_MSG_MODULE_UNLOAD, &req, sizeof(req), NULL, 0);
	free(m);
	return finish(__func__, r < 0 ? r : 0);
}

int ooo_kernel_get(ooo_module *m, const char *name, ooo_kernel **out)
{
	struct ooo_msg_kernel_get req = { 0 };
	ooo_kernel *k;
	int r;

	begin();
	if (!m)
		return fail(-EINVAL, "%s: the module is NULL", __func__);
	if (!name || !*name)
		return fail(-EINVAL, "%s: the kernel name is %s", __func__, name ? "empty" : "NULL");
	if (!out)
		return fail(-EINVAL, "%s: out is NULL", __func__);
	if (strlen(name) >= sizeof(req.name))
		return fail(-EINVAL, "%s: the kernel name is longer than %zu bytes", __func__, sizeof(req.name) - 1);
	req.module = m->id;
	memcpy(req.name, name, strlen(name) + 1);
	k = calloc(1, sizeof(*k));
	if (!k)
		return fail(-ENOMEM, "%s: out of memory", __func__);
	r = call(m->s, OOO_MSG_KERNEL_GET, &req, sizeof(req), &k->k, sizeof(k->k));
	if (r != sizeof(k->k)) {
		free(k);
		return finish(__func__, r < 0 ? r : bad_reply_size(OOO_MSG_KERNEL_GET, r, sizeof(k->k)));
	}
	k->m = m;
	*out = k;
	return finish(__func__, 0);
}

ooo_kernel *ooo_kernel_free(ooo_kernel *k)
{
	free(k);
	return NULL;
}

int ooo_kernel_info(const ooo_kernel *k, struct ooo_kernel_info *info)
{
	struct ooo_kernel_info i = { .sz = sizeof(i) };

	begin();
	if (!k)
		return fail(-EINVAL, "%s: the kernel is NULL", __func__);
	if (!info)
		return fail(-EINVAL, "%s: info is NULL", __func__);
	if (info->sz < sizeof(size_t))
		return fail(-EINVAL, "%s: info->sz is %zu, not sizeof(struct ooo_kernel_info)", __func__, info->sz);
	i.nparams = k->k.nparams;
	i.param_size = k->k.param_size;
	i.max_threads = k->k.max_threads;
	i.static_shmem = k->k.static_shmem;
	i.max_dyn_shmem = k->k.max_dyn_shmem;
	i.regs = k->k.regs;
	memcpy(i.param_offset, k->k.param_offset, sizeof(i.param_offset));
	memcpy(i.param_bytes, k->k.param_bytes, sizeof(i.param_bytes));
	memcpy(info, &i, info->sz < sizeof(i) ? info->sz : sizeof(i));
	return 0;
}

int ooo_launch(ooo_queue *q, const ooo_kernel *k, const uint32_t grid[3], const uint32_t block[3], uint32_t shmem,
	       const void *params, size_t len)
{
	return ooo_launch_ex(q, k, grid, block, shmem, params, len, NULL);
}

int ooo_launch_ex(ooo_queue *q, const ooo_kernel *k, const uint32_t grid[3], const uint32_t block[3], uint32_t shmem,
		  const void *params, size_t len, const struct ooo_launch_opts *opts)
{
	struct ooo_launch_opts o = { .sz = sizeof(o) };
	struct ooo_sqe e = { .opcode = OOO_OP_LAUNCH };
	struct dpath *d;
	uint64_t off = UINT64_MAX;
	int r;

	begin();
	if (!(d = queue_dp(__func__, q)))
		return -EINVAL;
	if (!k)
		return fail(-EINVAL, "%s: the kernel is NULL", __func__);
	if (!grid || !block)
		return fail(-EINVAL, "%s: %s is NULL", __func__, grid ? "block" : "grid");
	if (len && !params)
		return fail(-EINVAL, "%s: params is NULL with len %zu", __func__, len);
	if (k->m->s != q->s)
		return fail(-EINVAL, "%s: the kernel and the queue belong to different sessions", __func__);
	if (opts && opts->sz < sizeof(size_t))
		return fail(-EINVAL, "%s: opts->sz is %zu, not sizeof(struct ooo_launch_opts)", __func__, opts->sz);
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (o.flags)
		return fail(-EINVAL, "%s: unknown launch option flags %#x", __func__, o.flags);
	e.launch.deadline_us = o.deadline_us;
	/* checked here for a clear error at once; the executor checks it again */
	if (len != k->k.param_size)
		return fail(-EINVAL, "%s: parameter bytes do not match the kernel's parameter layout (%zu, not %u)",
			    __func__, len, k->k.param_size);
	e.launch.kernel = k->k.kernel;
	e.launch.shmem = shmem;
	memcpy(e.launch.grid, grid, sizeof(e.launch.grid));
	memcpy(e.launch.block, block, sizeof(e.launch.block));
	e.launch.param_len = (uint32_t)len;
	pthread_mutex_lock(&d->lock);
	if (len) {
		r = dp_stage(q->s, d, len, &off);
		if (r == 0) {
			memcpy(d->stage + off, params, len);
			e.launch.param_off = off;
		}
	}
	if (r == 0)
		r = dp_submit(q->s, d, q->idx, &e, off, NULL, 0);
	if (r < 0 && off != UINT64_MAX)
		staging_free(&d->st, off);
	pthread_mutex_unlock(&d->lock);
	return finish(__func__, r);
}

/* ---- events ----------------------------------------------------------------------- */

int ooo_event_create(ooo_session *s, ooo_event **out)
{
	struct dpath *d;
	ooo_event *ev;
	int r = 0;

	begin();
	if ((r = tenant_args(__func__, s, out != NULL)) < 0)
		return r;
	pthread_mutex_lock(&s->lock);
	r = dp_attach_locked(s);
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		return finish(__func__, r);
	d = s->dp;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return fail(-ENOMEM, "%s: out of memory", __func__);
	pthread_mutex_lock(&d->lock);
	for (ev->idx = 0; ev->idx < 1024 && d->event_used[ev->idx]; ev->idx++)
		;
	if (ev->idx == 1024)
		r = -OOO_ELIMIT;
	else
		d->event_used[ev->idx] = 1;
	pthread_mutex_unlock(&d->lock);
	if (r < 0) {
		free(ev);
		return fail(r, "%s: the session has 1024 events", __func__);
	}
	ev->s = s;
	*out = ev;
	return finish(__func__, 0);
}

static bool event_done(struct dpath *d, const void *arg)
{
	const ooo_event *ev = arg;
	(void)d;
	return ev->done == ev->recorded;
}

int ooo_event_destroy(ooo_event *ev)
{
	struct dpath *d;

	begin();
	if (!ev)
		return 0;
	d = ev->s->dp;
	pthread_mutex_lock(&d->lock);
	/* entries point at it until their records complete */
	(void)dp_wait(ev->s, d, event_done, ev, -1);
	d->event_used[ev->idx] = 0;
	pthread_mutex_unlock(&d->lock);
	free(ev);
	return finish(__func__, 0);
}

/* Public call fn: may q take a command about ev? q's data path, or NULL with the reason for -EINVAL. */
static struct dpath *event_dp(const char *fn, ooo_queue *q, ooo_event *ev)
{
	struct dpath *d = queue_dp(fn, q);

	if (!d)
		return NULL;
	if (!ev)
		return fail(-EINVAL, "%s: the event is NULL", fn), NULL;
	if (ev->s != q->s)
		return fail(-EINVAL, "%s: the event and the queue belong to different sessions", fn), NULL;
	return d;
}

int ooo_event_record(ooo_queue *q, ooo_event *ev)
{
	struct ooo_sqe e = { .opcode = OOO_OP_EVENT_RECORD };
	struct dpath *d;
	int r;

	begin();
	if (!(d = event_dp(__func__, q, ev)))
		return -EINVAL;
	e.event.event = ev->idx;
	pthread_mutex_lock(&d->lock);
	d->next_ev = ev;
	r = dp_submit(q->s, d, q->idx, &e, UINT64_MAX, NULL, 0);
	d->next_ev = NULL;
	if (r == 0)
		ev->recorded++;
	pthread_mutex_unlock(&d->lock);
	return finish(__func__, r);
}

int ooo_queue_wait_event(ooo_queue *q, ooo_event *ev)
{
	struct ooo_sqe e = { .opcode = OOO_OP_EVENT_WAIT };
	struct dpath *d;
	int r;

	begin();
	if (!(d = event_dp(__func__, q, ev)))
		return -EINVAL;
	e.event.event = ev->idx;
	pthread_mutex_lock(&d->lock);
	r = dp_submit(q->s, d, q->idx, &e, UINT64_MAX, NULL, 0);
	pthread_mutex_unlock(&d->lock);
	return finish(__func__, r);
}

int ooo_event_query(ooo_event *ev)
{
	struct dpath *d;
	int r;

	begin();
	if (!ev)
		return fail(-EINVAL, "%s: the event is NULL", __func__);
	d = ev->s->dp;
	pthread_mutex_lock(&d->lock);
	r = dp_reap(ev->s, d);
	if (r >= 0)
		r = ev->done == ev->recorded ? (ev->error ? ev->error : 0)
					     : fail(-EAGAIN, "%s: not every record of the event has completed", __func__);
	pthread_mutex_unlock(&d->lock);
	return finish(__func__, r);
}

int ooo_event_wait(ooo_event *ev, int timeout_ms)
{
	struct dpath *d;
	int r;

	begin();
	if (!ev)
		return fail(-EINVAL, "%s: the event is NULL", __func__);
	d = ev->s->dp;
	pthread_mutex_lock(&d->lock);
	r = dp_wait(ev->s, d, event_done, ev, timeout_ms);
	if (r == 0 && ev->error) {
		r = ev->error;
		ev->error = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return finish(__func__, r);
}

/* ---- zero-copy host memory --------------------------------------------------------- */

int ooo_host_alloc(ooo_session *s, size_t bytes, void **out)
{
	struct ooo_msg_host req = { .size = bytes }, rep;
	const void *rp;
	size_t rlen;
	void *p;
	int r, fd = -1;

	begin();
	if ((r = tenant_args(__func__, s, out != NULL)) < 0)
		return r;
	if (!bytes)
		return fail(-EINVAL, "%s: size is 0", __func__);
	pthread_mutex_lock(&s->lock);
	r = dp_attach_locked(s);
	if (r == 0)
		r = transact(s, OOO_MSG_HOST_ALLOC, &req, sizeof(req), &rp, &rlen);
	if (r == 0) {
		memcpy(&rep, rp, sizeof(rep));
		fd = s->rfd;
		if (fd < 0 || rep.region >= OOO_HOST_REGIONS)
			r = fail(-OOO_EPROTO, "host alloc reply %s", fd < 0 ? "without its descriptor" : "with a bad region");
	}
	if (r < 0) {
		pthread_mutex_unlock(&s->lock);
		return finish(__func__, r);
	}
	p = mmap(NULL, rep.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	drop_fd(s); /* the mapping keeps the memory */
	pthread_mutex_unlock(&s->lock);
	if (p == MAP_FAILED)
		return fail(-errno, "%s: cannot map the region: %s", __func__, strerror(errno));
	pthread_mutex_lock(&s->dp->lock);
	s->dp->host[rep.region].base = p;
	s->dp->host[rep.region].size = rep.size;
	pthread_mutex_unlock(&s->dp->lock);
	*out = p;
	return finish(__func__, 0);
}

int ooo_host_free(ooo_session *s, void *p)
{
	struct ooo_msg_host req = { 0 };
	const void *rp;
	size_t rlen;
	uint32_t reg;
	uint64_t size = 0;
	int r;

	begin();
	if (!s)
		return fail(-EINVAL, "%s: the session is NULL", __func__);
	if (!p)
		return fail(-EINVAL, "%s: p is NULL", __func__);
	if (!s->dp)
		return fail(-EINVAL, "%s: the session has no data path, so no host memory", __func__);
	pthread_mutex_lock(&s->dp->lock);
	for (reg = 0; reg < OOO_HOST_REGIONS && s->dp->host[reg].base != p; reg++)
		;
	if (reg < OOO_HOST_REGIONS) {
		size = s->dp->host[reg].size;
		s->dp->host[reg].base = NULL;
	}
	pthread_mutex_unlock(&s->dp->lock);
	if (reg == OOO_HOST_REGIONS)
		return fail(-ENOENT, "%s: %p is not a region from ooo_host_alloc", __func__, p);
	req.region = reg;
	pthread_mutex_lock(&s->lock);
	r = transact(s, OOO_MSG_HOST_FREE, &req, sizeof(req), &rp, &rlen);
	pthread_mutex_unlock(&s->lock);
	munmap(p, size);
	return finish(__func__, r);
}
