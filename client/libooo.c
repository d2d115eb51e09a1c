/* SPDX-License-Identifier: MIT */
/*
 * libooo: sessions with oood over its SOCK_SEQPACKET socket.
 *
 * Requests on a session are serialised by a mutex: one request is on the
 * wire at a time, so a reply is matched by its sequence number and replies
 * to requests that timed out earlier are discarded.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "wire.h"

#define DEFAULT_TIMEOUT_MS 10000

struct ooo_session {
	int fd;
	int timeout_ms;
	int dead; /* 0, or the negative error every later call returns */
	bool admin;
	uint32_t seq;
	uint64_t id;
	char class_name[OOO_NAME_MAX];
	int rfd; /* descriptor passed with the last reply, -1 if none; the caller takes it */
	pthread_mutex_t lock;
	unsigned char rbuf[OOO_MSG_MAX];
	unsigned char sbuf[OOO_MSG_MAX];
};

static __thread char last_error[OOO_ERRMSG_MAX];

static void set_last_error(const char *msg)
{
	wire_strcpy(last_error, sizeof(last_error), msg);
}

const char *ooo_last_error(void)
{
	return last_error;
}

static const char *const ooo_errors[] = {
	[OOO_EPROTO - OOO_EPROTO] = "Protocol error between libooo and oood",
	[OOO_EVERSION - OOO_EPROTO] = "libooo and oood speak different protocol versions",
	[OOO_EDENIED - OOO_EPROTO] = "The ooo policy does not admit this user",
	[OOO_ELIMIT - OOO_EPROTO] = "An ooo resource limit was reached",
	[OOO_ESHUTDOWN - OOO_EPROTO] = "oood is shutting down",
	[OOO_EREVOKED - OOO_EPROTO] = "A policy reload revoked this session",
	[OOO_ENODEV - OOO_EPROTO] = "No usable GPU",
	[OOO_EDEVRESET - OOO_EPROTO] = "The GPU executor was restarted",
	[OOO_EFAULT - OOO_EPROTO] = "A kernel faulted on the GPU",
	[OOO_ECLOSED - OOO_EPROTO] = "oood closed the session",
	[OOO_ENOTADMIN - OOO_EPROTO] = "Not an ooo administrator",
};

const char *ooo_strerror(int err)
{
	const char *s;

	if (err < 0)
		err = -err;
	if (err == 0)
		return "Success";
	if (err >= OOO_EPROTO && err < OOO_EMAX)
		return ooo_errors[err - OOO_EPROTO];
	s = strerrordesc_np(err);
	return s ? s : "Unknown error";
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int notice_error(const struct ooo_msg_notice *n)
{
	set_last_error(n->msg);
	return n->kind == OOO_NOTICE_REVOKED ? -OOO_EREVOKED : -OOO_ESHUTDOWN;
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
			s->dead = notice_error(m.payload);
		} else if (m.hdr.seq == 0 && m.hdr.status < 0) {
			/* a refusal of the connection itself (limits, shutdown, hello timeout) */
			set_last_error(((const struct ooo_msg_error *)m.payload)->msg);
			s->dead = m.hdr.status;
		}
	}
	if (!s->dead)
		s->dead = -OOO_ECLOSED;
	return s->dead;
}

/* Keep the first descriptor that came with a datagram in s->rfd; close any others. */
static void keep_fd(struct ooo_session *s, struct msghdr *mh)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int f;
			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (s->rfd < 0)
				s->rfd = f;
			else
				close(f);
		}
	}
}

static void drop_fd(struct ooo_session *s)
{
	if (s->rfd >= 0)
		close(s->rfd);
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
		return s->dead;
	drop_fd(s);
	seq = ++s->seq;
	if (seq == 0)
		seq = s->seq = 1; /* 0 is reserved for notices */
	n = wire_encode(s->sbuf, sizeof(s->sbuf), type, seq, 0, req, req_len);
	if (n < 0)
		return (int)n;
	if (send(s->fd, s->sbuf, (size_t)n, MSG_NOSIGNAL) != n) {
		if (errno == EPIPE || errno == ECONNRESET)
			return closed_error(s);
		return -errno;
	}
	deadline = now_ms() + s->timeout_ms;
	for (;;) {
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		struct iovec iov = { .iov_base = s->rbuf, .iov_len = sizeof(s->rbuf) };
		union {
			struct cmsghdr align;
			char b[CMSG_SPACE(sizeof(int) * 4)];
		} u;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b) };
		const char *why;
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		n = recvmsg(s->fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == ECONNRESET ? closed_error(s) : -errno;
		if (n == 0)
			return closed_error(s);
		keep_fd(s, &mh);
		if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
			set_last_error("oversized message from oood");
			return s->dead = -OOO_EPROTO;
		}
		r = wire_decode(s->rbuf, (size_t)n, WIRE_TO_PEER, &m, &why);
		if (r == -OOO_EVERSION && wire_hdr_valid(&m) && m.hdr.status == -OOO_EVERSION) {
			/* The daemon refused our version; its reason is readable. */
			const struct ooo_msg_error *e = (const void *)(s->rbuf + sizeof(m.hdr));
			if ((size_t)n == sizeof(m.hdr) + sizeof(*e) && memchr(e->msg, 0, sizeof(e->msg)))
				set_last_error(e->msg);
			return s->dead = -OOO_EVERSION;
		}
		if (r < 0) {
			set_last_error(why);
			return s->dead = r;
		}
		if (m.hdr.type == OOO_MSG_NOTICE) {
			/* The daemon closes after a notice; remember why. */
			s->dead = notice_error(m.payload);
			continue;
		}
		if (m.hdr.seq == 0 && m.hdr.status < 0) {
			/* the daemon refused the connection itself and closes it */
			set_last_error(((const struct ooo_msg_error *)m.payload)->msg);
			return s->dead = m.hdr.status;
		}
		if (m.hdr.seq != seq)
			continue; /* reply to a request that timed out */
		if ((m.hdr.type & ~OOO_MSG_REPLY) != type) {
			set_last_error("reply of another type");
			return s->dead = -OOO_EPROTO;
		}
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

	set_last_error("");
	r = resolve_path(sa.sun_path, sizeof(sa.sun_path), path, sockname);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->admin = admin;
	s->rfd = -1;
	s->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
	pthread_mutex_init(&s->lock, NULL);
	s->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		r = -errno;
		goto err;
	}
	/* connect() on AF_UNIX waits for backlog room at most SO_SNDTIMEO */
	tv.tv_sec = s->timeout_ms / 1000;
	tv.tv_usec = (s->timeout_ms % 1000) * 1000;
	(void)setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(s->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
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
	}
	return s;
err:
	if (s->fd >= 0)
		close(s->fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
	errno = -r;
	return NULL;
}

ooo_session *ooo_open_opts(const struct ooo_open_opts *opts)
{
	struct ooo_open_opts o = { 0 };

	if (opts) {
		if (opts->sz < sizeof(size_t)) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	return session_connect(o.path, OOO_SOCKET_NAME, o.name, o.timeout_ms, false);
}

ooo_session *ooo_open(const char *path)
{
	return session_connect(path, OOO_SOCKET_NAME, NULL, 0, false);
}

ooo_session *ooo_admin_open(const char *path, int timeout_ms)
{
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

	if (!s)
		return -EINVAL;
	set_last_error("");
	pthread_mutex_lock(&s->lock);
	token = ((uint64_t)s->seq << 32) ^ (uint64_t)(uintptr_t)s;
	r = transact(s, OOO_MSG_PING, &token, sizeof(token), &rp, &rlen);
	if (r == 0 && (rlen != sizeof(token) || memcmp(rp, &token, sizeof(token)))) {
		set_last_error("ping reply does not echo the request");
		r = s->dead = -OOO_EPROTO;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int ooo_admin_call(ooo_session *s, uint16_t type, const void *req, size_t req_len, void *reply, size_t cap)
{
	const void *rp;
	size_t rlen;
	int r;

	if (!s || (req_len && !req) || (cap && !reply) || (type & OOO_MSG_REPLY))
		return -EINVAL;
	set_last_error("");
	pthread_mutex_lock(&s->lock);
	r = transact(s, type, req, req_len, &rp, &rlen);
	if (r == 0) {
		if (rlen > cap || rlen > INT32_MAX) {
			r = -EMSGSIZE;
		} else {
			if (rlen)
				memcpy(reply, rp, rlen);
			r = (int)rlen;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return r;
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
	const void *rp;
	size_t rlen;
	ooo_buf *b;
	int r;

	if (!s || !out || !bytes || s->admin || (flags & ~OOO_BUF_DEVICE_MASK))
		return -EINVAL;
	if (flags & OOO_BUF_DEVICE_SET)
		req.device = (flags & OOO_BUF_DEVICE_INDEX) >> 8;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	set_last_error("");
	pthread_mutex_lock(&s->lock);
	r = transact(s, OOO_MSG_BUF_ALLOC, &req, sizeof(req), &rp, &rlen);
	if (r == 0)
		memcpy(&rep, rp, sizeof(rep));
	pthread_mutex_unlock(&s->lock);
	if (r < 0) {
		free(b);
		return r;
	}
	b->s = s;
	b->id = rep.id;
	b->addr = rep.addr;
	b->size = rep.size;
	b->device = rep.device;
	*out = b;
	return 0;
}

int ooo_buf_free(ooo_buf *b)
{
	struct ooo_msg_buf_ref req;
	const void *rp;
	size_t rlen;
	int r;

	if (!b)
		return 0;
	req.id = b->id;
	set_last_error("");
	pthread_mutex_lock(&b->s->lock);
	r = transact(b->s, OOO_MSG_BUF_FREE, &req, sizeof(req), &rp, &rlen);
	pthread_mutex_unlock(&b->s->lock);
	free(b);
	return r;
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

	if (!b)
		return -EINVAL;
	req.id = b->id;
	set_last_error("");
	pthread_mutex_lock(&b->s->lock);
	r = transact(b->s, OOO_MSG_BUF_EXPORT, &req, sizeof(req), &rp, &rlen);
	if (r == 0) {
		r = b->s->rfd >= 0 ? b->s->rfd : -OOO_EPROTO;
		b->s->rfd = -1; /* the caller's now */
	}
	pthread_mutex_unlock(&b->s->lock);
	return r;
}

uint64_t ooo_session_id(const ooo_session *s)
{
	return s ? s->id : 0;
}

const char *ooo_session_class(const ooo_session *s)
{
	return s ? s->class_name : "";
}
