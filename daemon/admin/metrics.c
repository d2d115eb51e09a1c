/* SPDX-License-Identifier: MIT */
/* The [metrics] listener: Prometheus scrapes over HTTP from the loop. See metrics.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ooo/proto.h>

#include "../../proto/wire.h"
#include "../../proto/list_fetch.h"
#include "../../proto/prom.h"
#include "http.h"
#include "../log.h"
#include "metrics.h"
#include "../server.h"

#define ERR_TYPE "text/plain; charset=utf-8"

/* One rendering of the exposition, shared by the connections that send it. */
struct text {
	uint32_t refs; /* m->cur and every connection sending it */
	uint64_t made_ns;
	struct prom_buf b;
};

struct mconn {
	bool used;
	bool busy;    /* an operation (op) is in flight */
	bool closing; /* shut down: closed once nothing is in flight */
	bool sent;    /* the response is out: read until the peer closes */
	uint32_t gen; /* of the slot, in the operations' tags */
	uint32_t op;  /* the operation in flight */
	int fd;
	uint64_t deadline_ns;
	size_t rlen, scan; /* request bytes in req; http_parse's state */
	size_t hlen, blen, off; /* response head, body, bytes of both sent */
	const char *body;  /* text->b.data or errbody */
	struct text *text; /* a reference, while a 200 is sent */
	char head[256];
	char errbody[64];
	char req[HTTP_HEAD_MAX];
};

struct metrics {
	int fd; /* listening; -1 without [metrics] listen */
	bool accept_armed;
	bool stopping;
	bool accept_warned; /* an accept failure was logged: once until one succeeds */
	uint32_t op_accept, op_recv, op_send;
	struct policy_metrics bound; /* what fd listens on (enabled false: nothing) */
	struct text *cur;            /* the newest text, for requests within METRICS_REUSE_NS */
	void *page;                  /* OOO_MSG_MAX: one page of an admin view */
	uint32_t nconns;
	struct mconn conn[METRICS_CONNS];
};

/* ---- texts ------------------------------------------------------------------ */

static void text_put(struct text *t)
{
	if (!t || --t->refs)
		return;
	prom_buf_free(&t->b);
	free(t);
}

static ssize_t build_page(void *ctx, uint16_t type, const struct ooo_msg_list_req *req, void *buf, size_t cap)
{
	return server_build(ctx, type, req, buf, cap);
}

/*
 * Every page of an admin list through its build handler, as oooctl pages
 * it over admin.sock: 0 with *out (malloc'd, NULL when empty) and *n, or
 * a negative error (errno or OOO_E*) with nothing allocated.
 */
static int fetch_list(struct server *srv, uint16_t type, size_t rec_size, void **out, size_t *n)
{
	char why[96];

	return list_fetch(build_page, srv, type, rec_size, srv->metrics->page, OOO_MSG_MAX - sizeof(struct ooo_msg_hdr),
			  out, n, why, sizeof(why));
}

/* The exposition into b, from the same replies oooctl metrics fetches: 0 or -errno. */
static int render(struct server *srv, struct prom_buf *b)
{
	const size_t cap = OOO_MSG_MAX - sizeof(struct ooo_msg_hdr);
	struct ooo_msg_status st;
	struct ooo_msg_telemetry tm;
	struct prom_input in = { .st = &st };
	struct ooo_tenant_rec *tn = NULL;
	struct ooo_sched_rec *sr = NULL;
	struct ooo_proc_rec *pr = NULL;
	ssize_t n;
	int r;

	n = server_build(srv, OOO_MSG_STATUS, NULL, srv->metrics->page, cap);
	if (n >= 0 && (size_t)n != sizeof(st))
		n = -EPROTO;
	if (n < 0)
		return (int)n;
	memcpy(&st, srv->metrics->page, sizeof(st));
	r = fetch_list(srv, OOO_MSG_TENANTS, sizeof(*tn), (void **)&tn, &in.ntn);
	if (r == 0)
		r = fetch_list(srv, OOO_MSG_SCHED, sizeof(*sr), (void **)&sr, &in.nsr);
	n = r == 0 ? server_build(srv, OOO_MSG_TELEMETRY, NULL, srv->metrics->page, cap) : -1;
	if (n == (ssize_t)sizeof(tm)) {
		memcpy(&tm, srv->metrics->page, sizeof(tm));
		in.tm = &tm;
		if (tm.state == OOO_TM_RUNNING)
			r = fetch_list(srv, OOO_MSG_PROCS, sizeof(*pr), (void **)&pr, &in.npr);
	}
	if (r == 0) {
		in.tn = tn;
		in.sr = sr;
		in.pr = pr;
		prom_procs_unique(pr, &in.npr);
		r = prom_write(b, &in);
	}
	free(tn);
	free(sr);
	free(pr);
	return r;
}

/* A reference to the text to send now: the newest if it is recent enough, else a new one. NULL: -errno in *err. */
static struct text *text_get(struct server *srv, uint64_t now, int *err)
{
	struct metrics *m = srv->metrics;
	struct text *t;

	if (m->cur && now - m->cur->made_ns < METRICS_REUSE_NS) {
		m->cur->refs++;
		return m->cur;
	}
	text_put(m->cur);
	m->cur = NULL;
	t = calloc(1, sizeof(*t));
	if (!t) {
		*err = -ENOMEM;
		return NULL;
	}
	prom_buf_init(&t->b, METRICS_TEXT_MAX);
	*err = render(srv, &t->b);
	if (*err < 0) {
		prom_buf_free(&t->b);
		free(t);
		return NULL;
	}
	t->made_ns = now;
	t->refs = 2;
	m->cur = t;
	return t;
}

/* ---- connections ------------------------------------------------------------ */

static void conn_free(struct metrics *m, struct mconn *c)
{
	close(c->fd);
	text_put(c->text);
	c->text = NULL;
	c->used = false;
	c->gen++;
	m->nconns--;
}

/*
 * Close c: at once if nothing is in flight, else shut the socket down and
 * cancel the operation; its completion frees the slot.
 */
static void conn_close(struct server *srv, struct mconn *c)
{
	struct metrics *m = srv->metrics;
	struct io_uring_sqe *sqe;

	if (!c->busy) {
		conn_free(m, c);
		return;
	}
	if (c->closing)
		return;
	c->closing = true;
	shutdown(c->fd, SHUT_RDWR);
	sqe = server_get_sqe(srv);
	if (sqe) {
		io_uring_prep_cancel64(sqe, ud_make((enum op)c->op, (uint32_t)(c - m->conn), c->gen), 0);
		io_uring_sqe_set_data64(sqe, ud_make(OP_CANCEL, 0, 0));
	}
}

static void arm_recv(struct server *srv, struct mconn *c)
{
	struct metrics *m = srv->metrics;
	struct io_uring_sqe *sqe = server_get_sqe(srv);

	if (!sqe) {
		conn_close(srv, c);
		return;
	}
	if (c->sent) /* draining: what comes is dropped */
		c->rlen = 0;
	io_uring_prep_recv(sqe, c->fd, c->req + c->rlen, sizeof(c->req) - c->rlen, 0);
	io_uring_sqe_set_data64(sqe, ud_make((enum op)m->op_recv, (uint32_t)(c - m->conn), c->gen));
	c->busy = true;
	c->op = m->op_recv;
}

/* Send the rest of the head, else the rest of the body. */
static void arm_send(struct server *srv, struct mconn *c)
{
	struct metrics *m = srv->metrics;
	struct io_uring_sqe *sqe = server_get_sqe(srv);

	if (!sqe) {
		conn_close(srv, c);
		return;
	}
	if (c->off < c->hlen)
		io_uring_prep_send(sqe, c->fd, c->head + c->off, c->hlen - c->off, MSG_NOSIGNAL);
	else
		io_uring_prep_send(sqe, c->fd, c->body + (c->off - c->hlen), c->blen - (c->off - c->hlen), MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, ud_make((enum op)m->op_send, (uint32_t)(c - m->conn), c->gen));
	c->busy = true;
	c->op = m->op_send;
}

/* An error response's head and body into head and body (sized as struct mconn's); the head's length. */
static size_t error_response(int status, char *head, size_t hcap, char *body, size_t bcap, size_t *blen)
{
	int n = snprintf(body, bcap, "%d %s\n", status, http_reason(status));

	*blen = n > 0 && (size_t)n < bcap ? (size_t)n : 0;
	n = http_response_head(head, hcap, status, ERR_TYPE, *blen);
	return n > 0 ? (size_t)n : 0; /* cannot fail: the head buffers hold the longest */
}

/* The request head is complete (status HTTP_OK) or refused (status): start the response. */
static void respond(struct server *srv, struct mconn *c, int status, const struct http_req *req)
{
	int n, err = 0;

	if (status == HTTP_OK)
		status = http_route(c->req, req, METRICS_PATH);
	if (status == HTTP_OK && !(c->text = text_get(srv, server_now_ns(), &err))) {
		log_msg_limited(LOG_WARNING, __func__, "metrics: cannot build the exposition: %s", wire_strerror(err));
		status = 500;
	}
	log_debug("metrics: %s %.*s: %d", req->method[0] ? req->method : "-",
		  (int)(req->path_len > 64 ? 64 : req->path_len), c->req + req->path_off, status);
	if (status == HTTP_OK) {
		c->body = c->text->b.data;
		c->blen = c->text->b.len;
		n = http_response_head(c->head, sizeof(c->head), HTTP_OK, PROM_CONTENT_TYPE, c->blen);
		c->hlen = n > 0 ? (size_t)n : 0;
	} else {
		c->hlen = error_response(status, c->head, sizeof(c->head), c->errbody, sizeof(c->errbody), &c->blen);
		c->body = c->errbody;
	}
	c->off = 0;
	arm_send(srv, c);
}

static void on_recv(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe)
{
	struct metrics *m = srv->metrics;
	struct mconn *c = slot < METRICS_CONNS ? &m->conn[slot] : NULL;
	struct http_req req;
	int r;

	if (!c || !c->used || c->gen != gen)
		return;
	c->busy = false;
	if (c->closing || cqe->res <= 0) {
		conn_close(srv, c);
		return;
	}
	if (c->sent) {
		arm_recv(srv, c);
		return;
	}
	c->rlen += (size_t)cqe->res;
	memset(&req, 0, sizeof(req));
	r = http_parse(c->req, c->rlen, &c->scan, &req);
	if (r == HTTP_MORE)
		arm_recv(srv, c);
	else
		respond(srv, c, r, &req);
}

static void on_send(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe)
{
	struct metrics *m = srv->metrics;
	struct mconn *c = slot < METRICS_CONNS ? &m->conn[slot] : NULL;

	if (!c || !c->used || c->gen != gen)
		return;
	c->busy = false;
	if (c->closing || cqe->res <= 0) {
		conn_close(srv, c);
		return;
	}
	c->off += (size_t)cqe->res;
	if (c->off < c->hlen + c->blen) {
		arm_send(srv, c);
		return;
	}
	/* all sent: say so with a FIN, then read until the peer closes (or the deadline) */
	text_put(c->text);
	c->text = NULL;
	c->sent = true;
	shutdown(c->fd, SHUT_WR);
	arm_recv(srv, c);
}

/* ---- the listener ----------------------------------------------------------- */

static void arm_accept(struct server *srv)
{
	struct metrics *m = srv->metrics;
	struct io_uring_sqe *sqe;

	if (m->fd < 0 || m->accept_armed || m->stopping)
		return;
	sqe = server_get_sqe(srv);
	if (!sqe)
		return; /* the tick tries again */
	io_uring_prep_accept(sqe, m->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	io_uring_sqe_set_data64(sqe, ud_make((enum op)m->op_accept, 0, 0));
	m->accept_armed = true;
}

/* All connections taken: 503 with one non-blocking send, and close. */
static void refuse(int fd)
{
	char head[256], body[64];
	size_t blen, hlen = error_response(HTTP_UNAVAILABLE, head, sizeof(head), body, sizeof(body), &blen);
	struct iovec iov[2] = { { head, hlen }, { body, blen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("metrics: 503: %s", strerror(errno));
	shutdown(fd, SHUT_WR);
	close(fd);
}

static void on_accept(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe)
{
	struct metrics *m = srv->metrics;
	struct mconn *c = NULL;
	int fd = cqe->res;

	m->accept_armed = false;
	if (fd < 0) {
		/* EMFILE and the like: tried again at the next tick, said once */
		if (fd != -ECANCELED && !m->stopping && !m->accept_warned) {
			log_warn("metrics: accept on %s failed: %s", m->bound.listen, strerror(-fd));
			m->accept_warned = true;
		}
		return;
	}
	m->accept_warned = false;
	if (m->stopping) {
		close(fd);
		return;
	}
	for (uint32_t i = 0; i < METRICS_CONNS && !c; i++) {
		if (!m->conn[i].used)
			c = &m->conn[i];
	}
	if (!c) {
		refuse(fd);
	} else {
		uint32_t g = c->gen;

		memset(c, 0, offsetof(struct mconn, req));
		c->gen = g;
		c->used = true;
		c->fd = fd;
		c->deadline_ns = server_now_ns() + METRICS_DEADLINE_NS;
		m->nconns++;
		arm_recv(srv, c);
	}
	arm_accept(srv);
}

/* ---- the module ------------------------------------------------------------- */

static int metrics_init(struct server *srv)
{
	struct metrics *m;
	int op;

	m = srv->metrics = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->fd = -1;
	m->page = malloc(OOO_MSG_MAX);
	if (!m->page)
		return -ENOMEM;
	if ((op = server_add_op(srv, on_accept)) < 0)
		return op;
	m->op_accept = (uint32_t)op;
	if ((op = server_add_op(srv, on_recv)) < 0)
		return op;
	m->op_recv = (uint32_t)op;
	if ((op = server_add_op(srv, on_send)) < 0)
		return op;
	m->op_send = (uint32_t)op;
	return 0;
}

/* Bind and listen on [metrics] listen, if given: 0 or -errno (logged: oood does not start). */
static int metrics_start(struct server *srv)
{
	const struct policy_metrics *pm = &srv->policy->metrics;
	struct metrics *m = srv->metrics;
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int one = 1, fd;

	if (!pm->enabled)
		return 0;
	if (pm->family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(pm->port);
		memcpy(&a->sin6_addr, pm->addr, 16);
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(pm->port);
		memcpy(&a->sin_addr, pm->addr, 4);
		len = sizeof(*a);
	}
	fd = socket(pm->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return log_errno(LOG_ERR, -errno, "metrics: socket");
	/* a restart binds again at once; [::] serves IPv6 only, as written */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (pm->family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, METRICS_BACKLOG) < 0) {
		int e = errno;

		close(fd);
		log_err("[metrics] listen = %s: %s", pm->listen, strerror(e));
		return -e;
	}
	m->fd = fd;
	m->bound = *pm;
	log_info("metrics: serving http://%s%s", pm->listen, METRICS_PATH);
	arm_accept(srv);
	return 0;
}

static void metrics_tick(struct server *srv, uint64_t now)
{
	struct metrics *m = srv->metrics;

	for (uint32_t i = 0; i < METRICS_CONNS; i++) {
		struct mconn *c = &m->conn[i];

		if (c->used && !c->closing && now >= c->deadline_ns) {
			log_debug("metrics: closing a connection at its deadline (%s)",
				  c->sent ? "peer kept it open" : c->hlen ? "peer not reading" : "no request");
			conn_close(srv, c);
		}
	}
	/* the newest text, once too old to be reused and sent by nobody, goes */
	if (m->cur && m->cur->refs == 1 && now - m->cur->made_ns >= METRICS_REUSE_NS) {
		text_put(m->cur);
		m->cur = NULL;
	}
	arm_accept(srv);
}

static void metrics_reload(struct server *srv)
{
	const struct policy_metrics *n = &srv->policy->metrics, *b = &srv->metrics->bound;

	if (n->enabled == b->enabled && (!n->enabled || !strcmp(n->listen, b->listen)))
		return;
	log_warn("[metrics] listen = %s applies when oood next starts; %s%s", n->enabled ? n->listen : "(none)",
		 b->enabled ? "still serving " : "no listener until then", b->enabled ? b->listen : "");
}

static void metrics_stop(struct server *srv)
{
	struct metrics *m = srv->metrics;
	struct io_uring_sqe *sqe;

	m->stopping = true;
	if (m->accept_armed && (sqe = server_get_sqe(srv))) {
		io_uring_prep_cancel64(sqe, ud_make((enum op)m->op_accept, 0, 0), 0);
		io_uring_sqe_set_data64(sqe, ud_make(OP_CANCEL, 0, 0));
	}
	for (uint32_t i = 0; i < METRICS_CONNS; i++) {
		if (m->conn[i].used)
			conn_close(srv, &m->conn[i]);
	}
}

static bool metrics_stopped(const struct server *srv)
{
	const struct metrics *m = srv->metrics;

	return !m->nconns && !m->accept_armed;
}

static void metrics_fini(struct server *srv)
{
	struct metrics *m = srv->metrics;

	if (!m)
		return;
	for (uint32_t i = 0; i < METRICS_CONNS; i++) {
		if (m->conn[i].used)
			conn_free(m, &m->conn[i]);
	}
	if (m->fd >= 0)
		close(m->fd);
	text_put(m->cur);
	free(m->page);
	free(m);
	srv->metrics = NULL;
}

const struct module metrics_module = {
	.name = "metrics",
	.init = metrics_init,
	.start = metrics_start,
	.tick = metrics_tick,
	.reload = metrics_reload,
	.stop = metrics_stop,
	.stopped = metrics_stopped,
	.fini = metrics_fini,
};
