/* SPDX-License-Identifier: MIT */
#include "dpath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../../proto/ring.h"
#include "../../proto/wire.h"
#include "../../proto/exec_proto.h"
#include "../policy/hangs.h"
#include "../log.h"
#include "../server.h"

static uint64_t next_req = 1ull << 62; /* apart from buffers' request ids */
#define DETACH_REQ (1ull << 63)          /* a detach's request id: this bit and the session id */

static void restore_done(struct server *srv, struct xreq *x);

void dpath_detach(struct server *srv, uint32_t gpu, uint64_t session)
{
	struct exec_attach a = { .req = DETACH_REQ | session, .session = session };

	gpu_send(srv, gpu, EXEC_MSG_DETACH, &a, sizeof(a), -1);
}


/* A session's restore on its GPU's executor begins (restore_pump sends it) or ends. */
static void restore_begin(struct server *srv, struct sdpath *d)
{
	if (!d->restoring)
		list_add_tail(&srv->dp->restoring[d->gpu], &d->rs_node);
	d->restoring = true;
	d->rs_mod = d->rs_kern = d->rs_out = 0;
}

static void restore_end(struct sdpath *d)
{
	if (d->restoring)
		list_del(&d->rs_node);
	d->restoring = false;
}


/* A forwarded request: a tenant's (c), or oood's own restore of session s's module or kernel (c NULL). */
static struct xreq *xreq_new(struct server *srv, struct conn *c, uint32_t seq, uint16_t type, uint32_t gpu)
{
	struct xreq *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->req = next_req++;
	x->gpu = gpu;
	x->type = type;
	x->fd = -1;
	if (c) {
		x->waiter = server_conn_ref(c);
		x->seq = seq;
		x->sess = server_conn_session(c);
	}
	list_add_tail(&srv->dp->xreqs, &x->node);
	return x;
}

static void xreq_free(struct server *srv, struct xreq *x)
{
	if (x->restore) {
		if (srv->dp->restore_out[x->gpu])
			srv->dp->restore_out[x->gpu]--;
		else
			log_warn("gpu%u: restore requests miscounted (none out, one freed)", x->gpu);
	}
	list_del(&x->node);
	if (x->fd >= 0)
		close(x->fd);
	free(x->name);
	free(x);
}

/* The tenant's connection waiting for x, or NULL (gone, or oood's own restore). */
static struct conn *xreq_waiter(struct server *srv, const struct xreq *x)
{
	return x->sess && !x->restore ? server_conn_get(srv, x->waiter) : NULL;
}

/* Module m stays the tenant's, but without its image: lost (see struct sdpath). */
static void module_lose(struct sdpath *d, uint32_t m)
{
	if (d->module_fd[m] >= 0)
		close(d->module_fd[m]);
	d->module_fd[m] = -1;
	d->module_lost[m] = 1;
}

/* Forget what oood kept of module m for restores (it is unloaded): its image and its kernels' names. */
static void module_forget(struct sdpath *d, uint32_t m)
{
	if (d->module_fd[m] >= 0)
		close(d->module_fd[m]);
	d->module_fd[m] = -1;
	d->module_lost[m] = 0;
	for (uint32_t k = 0; d->kname && k < DPATH_MAX_KERNELS; k++) {
		if (d->kname[k] && d->kmod[k] == m) {
			free(d->kname[k]);
			d->kname[k] = NULL;
		}
	}
}

/* Remember kernel k of module m by name, to look it up again on a new executor; false: out of memory. */
static bool kernel_record(struct sdpath *d, uint32_t k, uint32_t m, const char *name)
{
	if (k >= DPATH_MAX_KERNELS || m >= DPATH_MAX_MODULES || !d->module_live[m])
		return true; /* a reply for a module unloaded meanwhile: nothing to restore */
	if (!d->kname) {
		d->kname = calloc(DPATH_MAX_KERNELS, sizeof(*d->kname));
		d->kmod = calloc(DPATH_MAX_KERNELS, sizeof(*d->kmod));
		if (!d->kname || !d->kmod) {
			free(d->kname);
			free(d->kmod);
			d->kname = NULL;
			d->kmod = NULL;
			return false;
		}
	}
	free(d->kname[k]);
	d->kname[k] = strdup(name);
	d->kmod[k] = (uint16_t)m;
	return d->kname[k] != NULL;
}

/* The session's attached data path, or NULL after answering the tenant why not. */
static struct sdpath *attached(struct server *srv, struct conn *c, uint16_t type, uint32_t seq)
{
	struct sdpath *d = server_conn_session(c)->dp;

	if (!d || !d->attached || d->restoring) {
		/* (while restoring, a new module or kernel could take a slot or index not restored yet) */
		server_reply_error(srv, c, type, seq, d ? -OOO_EDEVRESET : -EINVAL,
				   d ? "the GPU executor is being restarted" : "attach the session first");
		return NULL;
	}
	return d;
}

static void dpath_module_load(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_module_load *req, int fd)
{
	struct session *s = server_conn_session(c);
	struct exec_module m = { .session = s->id, .kind = req->kind, .len = req->len };
	struct sdpath *d;
	struct xreq *x;
	int r;

	/* the class's word first: it holds whatever the GPU's state */
	if ((req->kind == OOO_MODULE_CUBIN || req->kind == OOO_MODULE_FATBIN) && !s->tenant->terms.binary_modules) {
		server_reply_error(srv, c, OOO_MSG_MODULE_LOAD, seq, -EPERM,
				   "class '%s' may not load CUBIN or FATBIN modules (binary_modules = no): load PTX or "
				   "CUDA C, which ooo can analyse",
				   s->tenant->terms.name);
		goto out;
	}
	d = attached(srv, c, OOO_MSG_MODULE_LOAD, seq);
	if (!d)
		goto out;
	if (session_charge(s, OOO_RES_MODULES, 1) < 0) {
		server_reply_error(srv, c, OOO_MSG_MODULE_LOAD, seq, -OOO_ELIMIT,
				   "tenant has its maximum of %llu modules (max_modules)",
				   (unsigned long long)s->tenant->terms.limit[OOO_RES_MODULES]);
		goto out;
	}
	x = xreq_new(srv, c, seq, OOO_MSG_MODULE_LOAD, d->gpu);
	if (!x) {
		session_uncharge(s, OOO_RES_MODULES, 1);
		server_reply_error(srv, c, OOO_MSG_MODULE_LOAD, seq, -ENOMEM, "out of memory");
		goto out;
	}
	/* kept for a restore after an executor restart (the memfd is sealed against writes: libooo's image_fd) */
	x->fd = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
	x->kind = req->kind;
	x->len = req->len;
	if (x->fd < 0) {
		int e = fd < 0 || errno != EMFILE ? -EBADF : -EMFILE;
		xreq_free(srv, x);
		session_uncharge(s, OOO_RES_MODULES, 1);
		server_reply_error(srv, c, OOO_MSG_MODULE_LOAD, seq, e,
				   e == -EMFILE ? "oood is out of descriptors to keep the module's image"
						: "the module load came without its image");
		goto out;
	}
	m.req = x->req;
	r = gpu_send_fds(srv, d->gpu, EXEC_MSG_MODULE_LOAD, &m, sizeof(m), &fd, 1);
	if (r < 0) {
		xreq_free(srv, x);
		session_uncharge(s, OOO_RES_MODULES, 1);
		server_reply_error(srv, c, OOO_MSG_MODULE_LOAD, seq, -OOO_EDEVRESET, "cannot reach the executor: %s",
				   wire_strerror(r));
	}
out:
	close(fd); /* the executor has its own copy */
}

static void dpath_module_unload(struct server *srv, struct conn *c, uint32_t seq, uint32_t module)
{
	struct session *s = server_conn_session(c);
	struct sdpath *d = s->dp;
	struct exec_module m = { .session = s->id, .module = module };

	if (!d || module >= DPATH_MAX_MODULES || !d->module_live[module]) {
		server_reply_error(srv, c, OOO_MSG_MODULE_UNLOAD, seq, -ENOENT, "no module %u in this session", module);
		return;
	}
	d->module_live[module] = 0;
	module_forget(d, module);
	session_uncharge(s, OOO_RES_MODULES, 1);
	if (d->attached)
		gpu_send(srv, d->gpu, EXEC_MSG_MODULE_UNLOAD, &m, sizeof(m), -1);
	server_reply(srv, c, OOO_MSG_MODULE_UNLOAD, seq, NULL, 0, -1);
}

static void dpath_kernel_get(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_kernel_get *req)
{
	struct session *s = server_conn_session(c);
	struct sdpath *d = attached(srv, c, OOO_MSG_KERNEL_GET, seq);
	struct exec_kernel_get k = { .session = s->id, .module = req->module };
	struct xreq *x;
	int r;

	if (!d)
		return;
	memcpy(k.name, req->name, sizeof(k.name));
	x = xreq_new(srv, c, seq, OOO_MSG_KERNEL_GET, d->gpu);
	if (!x) {
		server_reply_error(srv, c, OOO_MSG_KERNEL_GET, seq, -ENOMEM, "out of memory");
		return;
	}
	x->module = req->module;
	x->name = strdup(k.name); /* k.name is terminated: wire_decode checked it */
	if (!x->name) {
		xreq_free(srv, x);
		server_reply_error(srv, c, OOO_MSG_KERNEL_GET, seq, -ENOMEM, "out of memory");
		return;
	}
	k.req = x->req;
	r = gpu_send(srv, d->gpu, EXEC_MSG_KERNEL_GET, &k, sizeof(k), -1);
	if (r < 0) {
		xreq_free(srv, x);
		server_reply_error(srv, c, OOO_MSG_KERNEL_GET, seq, -OOO_EDEVRESET, "cannot reach the executor: %s",
				   wire_strerror(r));
	}
}

static int send_host_map(struct server *srv, struct sdpath *d, uint32_t region, uint64_t req)
{
	struct exec_host h = { .req = req, .session = d->session, .region = region, .size = d->host_size[region] };

	return gpu_send_fds(srv, d->gpu, EXEC_MSG_HOST_MAP, &h, sizeof(h), &d->host_fd[region], 1);
}

static void dpath_host_alloc(struct server *srv, struct conn *c, uint32_t seq, uint64_t size)
{
	struct session *s = server_conn_session(c);
	struct sdpath *d = attached(srv, c, OOO_MSG_HOST_ALLOC, seq);
	uint64_t sz = (size + (2ull << 20) - 1) & ~((2ull << 20) - 1);
	struct xreq *x;
	uint32_t r;
	int fd, e;

	if (!d)
		return;
	if (!size || size > OOO_HOST_MAX_BYTES) {
		server_reply_error(srv, c, OOO_MSG_HOST_ALLOC, seq, -EINVAL, "host regions are 1 byte .. 16 GiB");
		return;
	}
	for (r = 0; r < OOO_HOST_REGIONS && d->host_fd[r] >= 0; r++)
		;
	if (r == OOO_HOST_REGIONS) {
		server_reply_error(srv, c, OOO_MSG_HOST_ALLOC, seq, -OOO_ELIMIT, "the session has %u host regions",
				   OOO_HOST_REGIONS);
		return;
	}
	/* pinned host memory is charged to mem_limit like device memory */
	if (session_charge(s, OOO_RES_MEM_BYTES, sz) < 0) {
		server_reply_error(srv, c, OOO_MSG_HOST_ALLOC, seq, -OOO_ELIMIT,
				   "%llu more bytes would exceed the tenant's mem_limit of %llu", (unsigned long long)sz,
				   (unsigned long long)s->tenant->terms.limit[OOO_RES_MEM_BYTES]);
		return;
	}
	fd = memfd_create("ooo-host", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)sz) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		e = -errno;
		if (fd >= 0)
			close(fd);
		session_uncharge(s, OOO_RES_MEM_BYTES, sz);
		server_reply_error(srv, c, OOO_MSG_HOST_ALLOC, seq, e, "cannot create the host region: %s", strerror(-e));
		return;
	}
	d->host_fd[r] = fd;
	d->host_size[r] = sz;
	x = xreq_new(srv, c, seq, OOO_MSG_HOST_ALLOC, d->gpu);
	if (!x || send_host_map(srv, d, r, x->req) < 0) {
		if (x)
			xreq_free(srv, x);
		close(fd);
		d->host_fd[r] = -1;
		session_uncharge(s, OOO_RES_MEM_BYTES, sz);
		server_reply_error(srv, c, OOO_MSG_HOST_ALLOC, seq, -OOO_EDEVRESET, "cannot reach the executor");
		return;
	}
	x->region = r;
}

static void dpath_host_free(struct server *srv, struct conn *c, uint32_t seq, uint32_t region)
{
	struct session *s = server_conn_session(c);
	struct sdpath *d = s->dp;
	struct exec_host h = { .session = s->id, .region = region };

	if (!d || region >= OOO_HOST_REGIONS || d->host_fd[region] < 0) {
		server_reply_error(srv, c, OOO_MSG_HOST_FREE, seq, -ENOENT, "no host region %u in this session", region);
		return;
	}
	if (d->attached)
		gpu_send(srv, d->gpu, EXEC_MSG_HOST_UNMAP, &h, sizeof(h), -1);
	close(d->host_fd[region]);
	d->host_fd[region] = -1;
	d->host_mapped[region] = false;
	session_uncharge(s, OOO_RES_MEM_BYTES, d->host_size[region]);
	server_reply(srv, c, OOO_MSG_HOST_FREE, seq, NULL, 0, -1);
}

/* An executor's answer to a forwarded request (module load/unload, kernel get, host map/unmap). */
static void dpath_on_xreply(struct server *srv, uint32_t gpu, uint16_t type, const void *payload)
{
	uint64_t req;
	struct list_node *n;

	memcpy(&req, payload, sizeof(req));
	list_for_each(n, &srv->dp->xreqs) {
		struct xreq *x = list_entry(n, struct xreq, node);
		struct conn *c;

		if (x->req != req || x->gpu != gpu)
			continue;
		c = xreq_waiter(srv, x);
		if (type == (EXEC_MSG_HOST_MAP | OOO_MSG_REPLY)) {
			struct exec_mem_reply r;
			struct sdpath *d = x->sess ? x->sess->dp : NULL;

			memcpy(&r, payload, sizeof(r));
			if (d && r.status == 0 && d->host_fd[x->region] >= 0) {
				struct ooo_msg_host rep = { .region = x->region, .size = d->host_size[x->region] };
				int fd = fcntl(d->host_fd[x->region], F_DUPFD_CLOEXEC, 3);

				d->host_mapped[x->region] = true;
				if (c && fd >= 0)
					server_reply(srv, c, OOO_MSG_HOST_ALLOC, x->seq, &rep, sizeof(rep), fd);
				else if (fd >= 0)
					close(fd);
			} else if (d && d->host_fd[x->region] >= 0) {
				close(d->host_fd[x->region]);
				d->host_fd[x->region] = -1;
				session_uncharge(x->sess, OOO_RES_MEM_BYTES, d->host_size[x->region]);
				if (c)
					server_reply_error(srv, c, OOO_MSG_HOST_ALLOC, x->seq, r.status, "gpu%u: %s", gpu_dev(srv, gpu),
							   r.reason);
			}
		} else if (type == (EXEC_MSG_KERNEL_GET | OOO_MSG_REPLY)) {
			struct exec_kernel_reply k;

			memcpy(&k, payload, sizeof(k));
			if (k.status == 0 && x->sess && x->sess->dp && x->name &&
			    !kernel_record(x->sess->dp, k.k.kernel, x->module, x->name))
				log_warn("session %llu: out of memory: kernel '%s' will not be looked up again after an "
					 "executor restart",
					 (unsigned long long)x->sess->id, x->name);
			if (x->restore) {
				struct sdpath *d = x->sess ? x->sess->dp : NULL;

				/* the executor keeps a kernel that failed taken (its launches refused) until its module goes */
				if (k.status < 0 && d && !d->module_lost[x->module])
					log_warn("gpu%u: session %llu: kernel %u of module %u not found again on the new "
						 "executor: %s",
						 gpu_dev(srv, gpu), (unsigned long long)d->session, x->region, x->module,
						 k.reason);
				restore_done(srv, x);
				return;
			}
			if (c && k.status < 0)
				server_reply_error(srv, c, x->type, x->seq, k.status, "%s", k.reason);
			else if (c)
				server_reply(srv, c, x->type, x->seq, &k.k, sizeof(k.k), -1);
		} else {
			struct exec_mem_reply r;

			memcpy(&r, payload, sizeof(r));
			if (x->restore) {
				struct sdpath *d = x->sess ? x->sess->dp : NULL;
				/* a module that does not load again is lost: its slot stays the tenant's until it unloads it */
				if (r.status < 0 && d && d->module_live[x->module] && !d->module_lost[x->module]) {
					log_warn("gpu%u: session %llu: module %u could not be loaded again on the new "
						 "executor, it is lost (its kernels' launches fail): %s",
						 gpu_dev(srv, gpu), (unsigned long long)d->session, x->module, r.reason);
					module_lose(d, x->module);
				}
				restore_done(srv, x);
				return;
			}
			if (r.status < 0 && x->sess)
				session_uncharge(x->sess, OOO_RES_MODULES, 1);
			if (r.status == 0 && x->sess && x->sess->dp && r.addr < DPATH_MAX_MODULES) {
				struct sdpath *d = x->sess->dp;
				d->module_live[r.addr] = 1;
				if (d->module_fd[r.addr] >= 0)
					close(d->module_fd[r.addr]);
				d->module_fd[r.addr] = x->fd;
				d->module_kind[r.addr] = x->kind;
				d->module_len[r.addr] = x->len;
				x->fd = -1;
			}
			if (c && r.status < 0) {
				server_reply_error(srv, c, x->type, x->seq, r.status, "%s", r.reason);
			} else if (c) {
				struct ooo_msg_module rep = { .module = (uint32_t)r.addr };
				server_reply(srv, c, x->type, x->seq, &rep, sizeof(rep), -1);
			}
		}
		xreq_free(srv, x);
		return;
	}
}

/* Wake a tenant sleeping on its completions, so it sees the epoch change. */
static void poke(struct sdpath *d)
{
	if (d->bell[1] >= 0)
		(void)doorbell_ring(d->bell[1]); /* never blocks: a full socket has a ring unread already */
}

static void dp_free(struct sdpath *d)
{
	restore_end(d);
	list_del(&d->node);
	if (d->sess) /* every data path's area was charged (dpath_attach) */
		session_uncharge(d->sess, OOO_RES_MEM_BYTES, DPATH_AREA_SIZE);
	if (d->hdr)
		munmap(d->hdr, 4096);
	for (uint32_t i = 0; i < OOO_HOST_REGIONS; i++) {
		if (d->host_fd[i] >= 0)
			close(d->host_fd[i]);
	}
	for (uint32_t m = 0; m < DPATH_MAX_MODULES; m++) {
		if (d->module_fd[m] >= 0)
			close(d->module_fd[m]);
	}
	for (uint32_t k = 0; d->kname && k < DPATH_MAX_KERNELS; k++)
		free(d->kname[k]);
	free(d->kname);
	free(d->kmod);
	if (d->memfd >= 0)
		close(d->memfd);
	for (int i = 0; i < 2; i++)
		if (d->bell[i] >= 0)
			close(d->bell[i]);
	free(d);
}

/* A sealed memfd laid out for the rings: neither peer can resize it under the other. */
static int make_area(uint64_t size)
{
	void *p;
	int fd = memfd_create("ooo-session", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto err;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto err;
	if (ring_layout(p, size, DPATH_SQ_ENTRIES, DPATH_CQ_ENTRIES, NULL) < 0) {
		munmap(p, size);
		errno = EINVAL;
		goto err;
	}
	munmap(p, size);
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto err;
	return fd;
err: {
	int e = -errno;
	close(fd);
	return e;
}
}

static int send_attach(struct server *srv, struct sdpath *d, uint32_t flags)
{
	struct exec_attach a = {
		.req = d->req = next_req++,
		.session = d->session,
		.area_size = DPATH_AREA_SIZE,
		.sq_entries = DPATH_SQ_ENTRIES,
		.cq_entries = DPATH_CQ_ENTRIES,
		.max_queues = DPATH_MAX_QUEUES,
		.flags = flags,
	};
	int fds[2] = { d->memfd, d->bell[1] };
	int r = gpu_send_fds(srv, d->gpu, EXEC_MSG_ATTACH, &a, sizeof(a), fds, 2);

	if (r < 0)
		d->req = 0;
	return r;
}

static int send_queue(struct server *srv, struct sdpath *d, uint32_t queue, bool create, uint64_t req)
{
	struct exec_queue q = { .req = req,
				.session = d->session,
				.queue = queue,
				.create = create,
				.priority = d->queue_prio[queue],
				.slo_us = d->queue_slo[queue] };

	if (d->sess && d->sess->tenant)
		wire_strcpy(q.klass, sizeof(q.klass), d->sess->tenant->terms.name);
	return gpu_send(srv, d->gpu, EXEC_MSG_QUEUE, &q, sizeof(q), -1);
}

/*
 * Whether tenant uid is barred from data paths now (oood.conf hang_strikes,
 * hang_window_s): why gets the reason for it.
 */
static bool hang_barred(struct server *srv, uint32_t uid, char *why, size_t cap)
{
	const struct policy *p = srv->policy;
	uint64_t now = server_now_ns(), until;
	uint32_t n;

	if (!srv->dp->hangs ||
	    !hangs_barred(srv->dp->hangs, uid, now, p->hang_strikes, (uint64_t)p->hang_window_s * 1000000000u, &until, &n))
		return false;
	snprintf(why, cap,
		 "uid %u's kernels hung (past kernel_time_limit_ms) or faulted %u times within hang_window_s %u s "
		 "(hang_strikes %u): no data path for another %llu s",
		 uid, n, p->hang_window_s, p->hang_strikes, (unsigned long long)((until - now + 999999999u) / 1000000000u));
	return true;
}

/*
 * Count a hang or a fault (what) of uid's GPU work: hang_strikes of them
 * within hang_window_s bar it from data paths (hang_barred).
 */
static void strike(struct server *srv, uint32_t gpu, uint32_t uid, const char *what)
{
	const struct policy *p = srv->policy;
	uint32_t n;

	if (!srv->dp->hangs && !(srv->dp->hangs = calloc(1, sizeof(*srv->dp->hangs)))) {
		log_err("gpu%u: out of memory: the %s of uid %u is not counted", gpu_dev(srv, gpu), what, uid);
		return;
	}
	n = hangs_record(srv->dp->hangs, uid, server_now_ns(), (uint64_t)p->hang_window_s * 1000000000u);
	if (p->hang_strikes && n >= p->hang_strikes)
		log_warn("uid %u: %u hangs or faults within hang_window_s %u s (hang_strikes %u), the last a %s: its "
			 "sessions may not attach a data path until %u s after this one",
			 uid, n, p->hang_window_s, p->hang_strikes, what, p->hang_window_s);
	else
		log_warn("uid %u: %s %u within hang_window_s %u s (hang_strikes %u%s)", uid, what, n, p->hang_window_s,
			 p->hang_strikes, p->hang_strikes ? "" : ": never barred");
}

/*
 * Whose were sessions h->session[0..n) of executor slot gpu (a hang or a
 * fault report)? Returns the number of distinct uids found, 0, 1 or 2
 * (two: several), the one in *uid; *unknown is set when a session is not
 * known any more (closed, and gone from srv->dp->gone) or h->more names
 * sessions beyond those listed. who gets the ids, comma-separated.
 */
static uint32_t report_uids(struct server *srv, uint32_t gpu, const struct exec_hung *h, uint32_t *uid, bool *unknown,
			    char *who, size_t cap)
{
	uint32_t nuid = 0, u;
	size_t w = 0;

	*unknown = h->more > 0;
	*uid = 0;
	who[0] = 0;
	for (uint32_t i = 0; i < h->n && i < EXEC_HUNG_MAX; i++) {
		const struct sdpath *d = NULL;
		struct list_node *ln;

		list_for_each(ln, &srv->dp->dpaths) {
			const struct sdpath *x = list_entry(ln, struct sdpath, node);

			if (x->gpu == gpu && x->session == h->session[i]) {
				d = x;
				break;
			}
		}
		if (w < cap) {
			int k = snprintf(who + w, cap - w, "%s%llu", i ? ", " : "", (unsigned long long)h->session[i]);

			w += k > 0 ? (size_t)k : 0;
		}
		if (d && d->sess && d->sess->tenant) {
			u = d->sess->tenant->uid;
		} else {
			/* closed while its kernel ran (its tenant gone at once): whose it was, if still remembered */
			uint32_t j = 0;

			while (j < DPATH_GONE && (!h->session[i] || srv->dp->gone[j].session != h->session[i] ||
						   srv->dp->gone[j].gpu != gpu))
				j++;
			if (j == DPATH_GONE) {
				*unknown = true;
				continue;
			}
			u = srv->dp->gone[j].uid;
		}
		if (!nuid) {
			*uid = u;
			nuid = 1;
		} else if (u != *uid) {
			nuid = 2; /* several: enough to know */
		}
	}
	return nuid;
}

/*
 * The executor of slot gpu found work past kernel_time_limit_ms (EXEC_MSG_HUNG,
 * checked) and is exiting: the hang is counted against the tenant whose
 * sessions the work was (oood.conf hang_strikes), unless they were several
 * tenants' (a fused bundle: the kernel that did not end is one member's).
 */
static void dpath_on_hung(struct server *srv, uint32_t gpu, const struct exec_hung *h)
{
	char who[96];
	uint32_t uid;
	bool unknown;
	uint32_t nuid = report_uids(srv, gpu, h, &uid, &unknown, who, sizeof(who));

	log_warn("gpu%u: work of session(s) %s%s ran %llu ms, past kernel_time_limit_ms %llu: the executor is being replaced",
		 gpu_dev(srv, gpu), who, h->more ? " and more" : "", (unsigned long long)h->ran_ms,
		 (unsigned long long)h->limit_ms);
	if (nuid != 1 || unknown) {
		log_warn("gpu%u: the hung work was not one known tenant's (%s): the hang counts against none",
			 gpu_dev(srv, gpu),
			 nuid > 1 ? "sessions of several tenants: a fused bundle, or work the hang may have starved"
				 : "its sessions are gone or not named, or a serving thread's work is not known");
		return;
	}
	strike(srv, gpu, uid, "hang");
}

/*
 * Executor slot gpu of `domain` exited for a fault of its GPU work: a
 * strike against the tenant whose it was, if that is known. rep: the
 * sessions with work on the GPU when the context was lost (EXEC_MSG_FAULT),
 * or NULL.
 */
static void dpath_on_fault(struct server *srv, uint32_t gpu, const char *domain, const struct exec_hung *rep)
{
	unsigned uid;
	uint32_t ruid, nuid;
	bool unknown;
	char who[96];
	int end = 0;

	/*
	 * A domain of one uid (a class without `domain`): every session of the
	 * executor was that tenant's, so the fault was its own.
	 */
	if (sscanf(domain, "uid:%u%n", &uid, &end) == 1 && !domain[end]) {
		strike(srv, gpu, uid, "fault");
		return;
	}
	/*
	 * A shared or fenced domain: a fused bundle holds several tenants'
	 * members and a sticky error is the whole context's, so the fault is
	 * one tenant's only when every session with work on the GPU then was
	 * that tenant's. Otherwise it counts against none (a tenant whose work
	 * merely ran beside the faulting kernel is never the one blamed).
	 */
	if (!rep) {
		log_warn("gpu%u: GPU work of domain %s faulted; the executor did not say whose work was on the GPU: "
			 "the fault counts against none", gpu_dev(srv, gpu), domain[0] ? domain : "(spare)");
		return;
	}
	nuid = report_uids(srv, gpu, rep, &ruid, &unknown, who, sizeof(who));
	if (nuid == 1 && !unknown) {
		log_warn("gpu%u: GPU work of domain %s faulted; only uid %u's work was on the GPU (session(s) %s)",
			 gpu_dev(srv, gpu), domain, ruid, who);
		strike(srv, gpu, ruid, "fault");
		return;
	}
	log_warn("gpu%u: GPU work of domain %s faulted; the work on the GPU was %s (session(s) %s%s): the fault counts "
		 "against none", gpu_dev(srv, gpu), domain[0] ? domain : "(spare)",
		 nuid > 1 ? "several tenants'" : "not one known tenant's", who[0] ? who : "none named",
		 rep->more ? " and more" : "");
}

/* oooctl pardon: forgets the hangs of req->uid (checked by wire_decode); *rep says what was forgotten. */
static void dpath_admin_pardon(struct server *srv, const struct ooo_msg_pardon *req, struct ooo_msg_pardon_reply *rep)
{
	const struct policy *p = srv->policy;
	uint64_t window = (uint64_t)p->hang_window_s * 1000000000u;

	memset(rep, 0, sizeof(*rep));
	rep->uid = req->uid;
	if (srv->dp->hangs) {
		rep->barred = hangs_barred(srv->dp->hangs, req->uid, server_now_ns(), p->hang_strikes, window, NULL, &rep->hangs);
		if (!hangs_forget(srv->dp->hangs, req->uid))
			rep->hangs = 0;
	}
	if (rep->barred)
		snprintf(rep->msg, sizeof(rep->msg), "uid %u: %u hangs forgotten; it was barred and may attach data paths again",
			 req->uid, rep->hangs);
	else if (rep->hangs)
		snprintf(rep->msg, sizeof(rep->msg), "uid %u: %u hangs forgotten (it was not barred)", req->uid, rep->hangs);
	else
		snprintf(rep->msg, sizeof(rep->msg), "uid %u: no hangs within hang_window_s (%u s): nothing to forget",
			 req->uid, p->hang_window_s);
}

static void dpath_attach(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_attach *req)
{
	struct session *s = server_conn_session(c);
	struct sdpath *d;
	int gpu, r;

	if (s->dp) {
		server_reply_error(srv, c, OOO_MSG_ATTACH, seq, -EEXIST, "the session is attached to gpu%u already",
				   gpu_dev(srv, s->dp->gpu));
		return;
	}
	{
		char why[OOO_ERRMSG_MAX - 32];

		if (hang_barred(srv, s->tenant->uid, why, sizeof(why))) {
			server_reply_error(srv, c, OOO_MSG_ATTACH, seq, -OOO_EHUNG, "%s", why);
			return;
		}
	}
	/*
	 * The executor pins the session's area (cuMemHostRegister): it is the
	 * tenant's pinned host memory, charged to mem_limit like its host
	 * regions and device buffers, so sessions cannot pin the host's memory
	 * away. Charged before a GPU is picked: a refused attach claims no
	 * executor for its domain.
	 */
	if (session_charge(s, OOO_RES_MEM_BYTES, DPATH_AREA_SIZE) < 0) {
		server_reply_error(srv, c, OOO_MSG_ATTACH, seq, -OOO_ELIMIT,
				   "the session's shared area (%llu MiB of pinned host memory) would exceed the tenant's "
				   "mem_limit of %llu (%llu in use)",
				   (unsigned long long)(DPATH_AREA_SIZE >> 20),
				   (unsigned long long)s->tenant->terms.limit[OOO_RES_MEM_BYTES],
				   (unsigned long long)s->tenant->used[OOO_RES_MEM_BYTES]);
		return;
	}
	{
		char why[OOO_ERRMSG_MAX - 32];

		gpu = gpu_pick(srv, s, req->device, why, sizeof(why));
		if (gpu < 0)
			session_uncharge(s, OOO_RES_MEM_BYTES, DPATH_AREA_SIZE); /* a parked attach comes back here */
		if (gpu == -EINPROGRESS) {
			gpu_park(srv, c, seq, OOO_MSG_ATTACH, req, sizeof(*req)); /* answers if it cannot */
			return;
		}
		if (gpu < 0) {
			server_reply_error(srv, c, OOO_MSG_ATTACH, seq, gpu, "no usable GPU: %s", why);
			return;
		}
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		session_uncharge(s, OOO_RES_MEM_BYTES, DPATH_AREA_SIZE);
		server_reply_error(srv, c, OOO_MSG_ATTACH, seq, -ENOMEM, "out of memory");
		return;
	}
	list_add_tail(&srv->dp->dpaths, &d->node);
	d->sess = s;
	d->session = s->id;
	d->gpu = (uint32_t)gpu;
	for (uint32_t i = 0; i < OOO_HOST_REGIONS; i++)
		d->host_fd[i] = -1;
	for (uint32_t m = 0; m < DPATH_MAX_MODULES; m++)
		d->module_fd[m] = -1;
	d->bell[0] = d->bell[1] = -1;
	r = doorbell_pair(d->bell);
	d->memfd = make_area(DPATH_AREA_SIZE);
	if (d->memfd < 0 || r < 0) {
		if (d->memfd < 0)
			r = d->memfd;
		if (d->memfd < 0)
			d->memfd = -1;
		dp_free(d);
		server_reply_error(srv, c, OOO_MSG_ATTACH, seq, r, "cannot create the session's shared area: %s",
				   wire_strerror(r));
		return;
	}
	d->hdr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, d->memfd, 0);
	if (d->hdr == MAP_FAILED) {
		d->hdr = NULL;
		dp_free(d);
		server_reply_error(srv, c, OOO_MSG_ATTACH, seq, -ENOMEM, "cannot map the session's area");
		return;
	}
	d->waiter = server_conn_ref(c);
	d->seq = seq;
	d->wait_type = OOO_MSG_ATTACH;
	r = send_attach(srv, d, 0);
	if (r < 0) {
		dp_free(d);
		server_reply_error(srv, c, OOO_MSG_ATTACH, seq, -OOO_EDEVRESET, "cannot reach the executor of gpu%u: %s",
				   gpu_dev(srv, gpu), wire_strerror(r));
		return;
	}
	s->dp = d;
}

static void dpath_queue_create(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_queue_create *req)
{
	struct session *s = server_conn_session(c);
	struct sdpath *d = s->dp;
	uint32_t q;
	int r;

	if (!d || !d->attached) {
		server_reply_error(srv, c, OOO_MSG_QUEUE_CREATE, seq, -EINVAL, "attach the session first");
		return;
	}
	if (d->req) {
		server_reply_error(srv, c, OOO_MSG_QUEUE_CREATE, seq, -EBUSY, "a queue operation is in progress");
		return;
	}
	for (q = 0; q < DPATH_MAX_QUEUES && d->queue_live[q]; q++)
		;
	if (q == DPATH_MAX_QUEUES || session_charge(s, OOO_RES_QUEUES, 1) < 0) {
		server_reply_error(srv, c, OOO_MSG_QUEUE_CREATE, seq, -OOO_ELIMIT,
				   "queue limit reached (max_queues = %llu per tenant, %u per session)",
				   (unsigned long long)s->tenant->terms.limit[OOO_RES_QUEUES], DPATH_MAX_QUEUES);
		return;
	}
	/* a queue may ask for less than its class gives, never more */
	{
		const struct class_terms *t = &s->tenant->terms;
		d->queue_prio[q] = (uint8_t)(req->priority < 0 || req->priority > t->priority ? t->priority : req->priority);
		d->queue_slo[q] = req->slo_us && req->slo_us > t->slo_us ? req->slo_us : t->slo_us;
	}
	d->req = next_req++;
	r = send_queue(srv, d, q, true, d->req);
	if (r < 0) {
		d->req = 0;
		session_uncharge(s, OOO_RES_QUEUES, 1);
		server_reply_error(srv, c, OOO_MSG_QUEUE_CREATE, seq, -OOO_EDEVRESET,
				   "cannot reach the executor of gpu%u: %s", gpu_dev(srv, d->gpu), wire_strerror(r));
		return;
	}
	d->waiter = server_conn_ref(c);
	d->seq = seq;
	d->wait_type = OOO_MSG_QUEUE_CREATE;
	d->wait_queue = q;
}

static void dpath_queue_destroy(struct server *srv, struct conn *c, uint32_t seq, uint32_t queue)
{
	struct session *s = server_conn_session(c);
	struct sdpath *d = s->dp;

	if (!d || queue >= DPATH_MAX_QUEUES || !d->queue_live[queue]) {
		server_reply_error(srv, c, OOO_MSG_QUEUE_DESTROY, seq, -ENOENT, "no queue %u in this session", queue);
		return;
	}
	d->queue_live[queue] = 0;
	session_uncharge(s, OOO_RES_QUEUES, 1);
	if (d->attached)
		send_queue(srv, d, queue, false, 0); /* its reply needs no answer */
	server_reply(srv, c, OOO_MSG_QUEUE_DESTROY, seq, NULL, 0, -1);
}

static void dpath_release_session(struct server *srv, struct session *s)
{
	struct sdpath *d = s->dp;
	struct list_node *n;

	/* answers still to come find no session */
	list_for_each(n, &srv->dp->xreqs) {
		struct xreq *x = list_entry(n, struct xreq, node);
		if (x->sess == s)
			x->sess = NULL;
	}
	if (!d)
		return;
	for (uint32_t q = 0; q < DPATH_MAX_QUEUES; q++) {
		if (d->queue_live[q])
			session_uncharge(s, OOO_RES_QUEUES, 1);
		if (d->module_live[q])
			session_uncharge(s, OOO_RES_MODULES, 1);
	}
	for (uint32_t r = 0; r < OOO_HOST_REGIONS; r++) {
		if (d->host_fd[r] >= 0)
			session_uncharge(s, OOO_RES_MEM_BYTES, d->host_size[r]);
	}
	/*
	 * Detach always: an attach still in flight is in the executor's queue
	 * ahead of this, and an executor that refused a re-attach (dp_lost) may
	 * still hold the session (made for its buffers' imports), with a
	 * fenced window. One that does not know it answers -ENOENT, unlogged.
	 */
	if (!srv->stopping)
		dpath_detach(srv, d->gpu, d->session);
	/* until the executor answers the detach, a hang it reports may name the session */
	if (d->attached && s->tenant && d->session)
		srv->dp->gone[srv->dp->gone_next++ % DPATH_GONE] =
			(struct dpath_gone){ .session = d->session, .gpu = d->gpu, .uid = s->tenant->uid };
	s->dp = NULL;
	dp_free(d);
}

/* oood's own restore requests outstanding on one GPU at most: the executor's control socket never fills. */
#define RESTORE_WINDOW 16u

/*
 * Send session d's next restore: a module in its slot (its image, or the
 * lost marker when it has none or its class no longer allows its kind),
 * then a kernel at its index. false: none left.
 */
static bool restore_next(struct server *srv, struct sdpath *d)
{
	while (d->rs_mod < DPATH_MAX_MODULES) {
		uint32_t m = d->rs_mod++;
		struct exec_module em = { .session = d->session, .module = m + 1 };
		struct xreq *x;
		int r;

		if (!d->module_live[m])
			continue;
		if (!d->module_lost[m] && (d->module_kind[m] == OOO_MODULE_CUBIN || d->module_kind[m] == OOO_MODULE_FATBIN) &&
		    d->sess->tenant && !d->sess->tenant->terms.binary_modules) {
			log_warn("gpu%u: session %llu: module %u is a CUBIN or FATBIN, which its class no longer allows "
				 "(binary_modules = no): not loaded again, lost",
				 gpu_dev(srv, d->gpu), (unsigned long long)d->session, m);
			module_lose(d, m);
		}
		if (!(x = xreq_new(srv, NULL, 0, OOO_MSG_MODULE_LOAD, d->gpu))) {
			module_lose(d, m); /* the new executor may give its slot to another module: it is logged */
			log_warn("gpu%u: session %llu: out of memory: module %u is not loaded again",
				 gpu_dev(srv, d->gpu), (unsigned long long)d->session, m);
			continue;
		}
		x->restore = true;
		srv->dp->restore_out[d->gpu]++; /* until xreq_free */
		x->sess = d->sess;
		x->module = m;
		em.req = x->req;
		if (d->module_lost[m]) {
			em.kind = EXEC_MODULE_LOST;
			r = gpu_send(srv, d->gpu, EXEC_MSG_MODULE_LOAD, &em, sizeof(em), -1);
		} else {
			em.kind = d->module_kind[m];
			em.len = d->module_len[m];
			r = gpu_send_fds(srv, d->gpu, EXEC_MSG_MODULE_LOAD, &em, sizeof(em), &d->module_fd[m], 1);
		}
		if (r < 0) {
			xreq_free(srv, x);
			log_warn("gpu%u: session %llu: module %u is not loaded again (cannot reach the executor: %s)",
				 gpu_dev(srv, d->gpu), (unsigned long long)d->session, m, wire_strerror(r));
			module_lose(d, m);
			continue;
		}
		d->rs_out++;
		return true;
	}
	while (d->kname && d->rs_kern < DPATH_MAX_KERNELS) {
		uint32_t k = d->rs_kern++;
		struct exec_kernel_get kg = { .session = d->session, .kernel = k + 1 };
		struct xreq *x;

		if (!d->kname[k] || !d->module_live[d->kmod[k]])
			continue;
		kg.module = d->kmod[k];
		wire_strcpy(kg.name, sizeof(kg.name), d->kname[k]);
		if (!(x = xreq_new(srv, NULL, 0, OOO_MSG_KERNEL_GET, d->gpu)))
			continue;
		x->restore = true;
		srv->dp->restore_out[d->gpu]++; /* until xreq_free */
		x->sess = d->sess;
		x->module = d->kmod[k];
		x->region = k;
		kg.req = x->req;
		if (gpu_send(srv, d->gpu, EXEC_MSG_KERNEL_GET, &kg, sizeof(kg), -1) < 0) {
			xreq_free(srv, x);
			continue;
		}
		d->rs_out++;
		return true;
	}
	return false;
}

/*
 * Move the restores of GPU gpu's sessions on: at most RESTORE_WINDOW
 * outstanding; a session with nothing left to send or to hear gets the ping
 * that makes its epoch even once the executor answers (dpath_on_barrier).
 */
static void restore_pump(struct server *srv, uint32_t gpu)
{
	struct list_node *n, *tmp;

	/*
	 * The restoring sessions in the order they began: each sends while the
	 * window has room. One left with more to send when the window is full
	 * ends the walk (those after it could not send either); the ones passed
	 * have all sent and wait for answers, at least one each, so a walk
	 * visits RESTORE_WINDOW + 1 sessions at most before it stops, whatever
	 * the number of sessions.
	 */
	list_for_each_safe(n, tmp, &srv->dp->restoring[gpu]) {
		struct sdpath *d = list_entry(n, struct sdpath, rs_node);
		uint64_t sid = d->session;
		bool more;

		while (srv->dp->restore_out[gpu] < RESTORE_WINDOW && restore_next(srv, d))
			;
		more = d->rs_mod < DPATH_MAX_MODULES || (d->kname && d->rs_kern < DPATH_MAX_KERNELS);
		if (more && srv->dp->restore_out[gpu] >= RESTORE_WINDOW)
			break;
		if (d->rs_out || more)
			continue;
		restore_end(d);
		if (gpu_send(srv, d->gpu, EXEC_MSG_PING, &sid, sizeof(sid), -1) < 0)
			log_warn("gpu%u: cannot finish re-attaching session %llu", gpu_dev(srv, gpu),
				 (unsigned long long)d->session);
	}
}

/* A restore request was answered: the next ones go. */
static void restore_done(struct server *srv, struct xreq *x)
{
	uint32_t gpu = x->gpu;
	struct sdpath *d = x->sess ? x->sess->dp : NULL;

	if (d && d->rs_out)
		d->rs_out--;
	xreq_free(srv, x);
	restore_pump(srv, gpu);
}

static struct sdpath *by_req(struct server *srv, uint32_t gpu, uint64_t req)
{
	struct list_node *n;

	list_for_each(n, &srv->dp->dpaths) {
		struct sdpath *d = list_entry(n, struct sdpath, node);
		if (d->gpu == gpu && d->req && d->req == req)
			return d;
	}
	return NULL;
}

/* The executor of slot gpu ended: forget the closed sessions it served. */
static void gone_drop(struct server *srv, uint32_t gpu)
{
	for (uint32_t j = 0; j < DPATH_GONE; j++)
		if (srv->dp->gone[j].session && srv->dp->gone[j].gpu == gpu)
			srv->dp->gone[j].session = 0;
}

/*
 * A replacement executor refused to take the session back (or could not be
 * asked): its data path cannot be served on this GPU again, and at an odd
 * epoch its tenant would be told to submit again for ever. The session ends
 * instead, with the reason (OOO_NOTICE_LOST: libooo answers OOO_ECLOSED).
 * d may be freed on return.
 */
static void dp_lost(struct server *srv, struct sdpath *d, const char *reason)
{
	struct conn *o = d->sess ? d->sess->owner : NULL;
	char msg[OOO_ERRMSG_MAX];

	log_warn("gpu%u: session %llu cannot be attached again (%s): closing it", gpu_dev(srv, d->gpu),
		 (unsigned long long)d->session, reason);
	if (!o || srv->stopping)
		return;
	snprintf(msg, sizeof(msg), "gpu%u's new executor could not take this session back (%s): open a new session",
		 gpu_dev(srv, d->gpu), reason);
	server_notice_close(srv, o, OOO_NOTICE_LOST, msg, "its data path could not be restored");
}

static void dpath_on_reply(struct server *srv, uint32_t gpu, uint16_t type, int32_t status, uint64_t req, const char *reason)
{
	struct sdpath *d = req && !(req & DETACH_REQ) ? by_req(srv, gpu, req) : NULL;
	struct conn *c;

	if (!d) {
		if (status < 0 && type != (EXEC_MSG_DETACH | OOO_MSG_REPLY))
			log_warn("gpu%u: executor: %s", gpu_dev(srv, gpu), reason);
		return;
	}
	d->req = 0;
	c = server_conn_get(srv, d->waiter);
	if (type == (EXEC_MSG_ATTACH | OOO_MSG_REPLY)) {
		if (status < 0) {
			log_warn("gpu%u: attaching session %llu failed: %s", gpu_dev(srv, gpu), (unsigned long long)d->session, reason);
			if (c && d->wait_type == OOO_MSG_ATTACH) {
				server_reply_error(srv, c, OOO_MSG_ATTACH, d->seq, status, "gpu%u: %s", gpu_dev(srv, gpu), reason);
				d->sess->dp = NULL;
				dp_free(d);
			} else if (d->wait_type != OOO_MSG_ATTACH) {
				dp_lost(srv, d, reason); /* a re-attach after a restart */
			}
			return;
		}
		d->attached = true;
		if (d->wait_type == OOO_MSG_ATTACH && c) {
			struct ooo_msg_attach_reply rep = { .area_size = DPATH_AREA_SIZE,
							    .sq_entries = DPATH_SQ_ENTRIES,
							    .cq_entries = DPATH_CQ_ENTRIES,
							    .device = gpu_dev(srv, d->gpu),
							    .max_queues = DPATH_MAX_QUEUES };
			int fds[2] = { fcntl(d->memfd, F_DUPFD_CLOEXEC, 3), fcntl(d->bell[0], F_DUPFD_CLOEXEC, 3) };

			d->wait_type = 0;
			if (fds[0] < 0 || fds[1] < 0) {
				for (int i = 0; i < 2; i++)
					if (fds[i] >= 0)
						close(fds[i]);
				server_reply_error(srv, c, OOO_MSG_ATTACH, d->seq, -EMFILE, "out of descriptors");
				return;
			}
			server_reply_fds(srv, c, OOO_MSG_ATTACH, d->seq, &rep, sizeof(rep), fds, 2);
			return;
		}
		/* a re-attach after an executor restart: queues and host regions come back too */
		for (uint32_t q = 0; q < DPATH_MAX_QUEUES; q++) {
			if (d->queue_live[q])
				send_queue(srv, d, q, true, 0);
		}
		for (uint32_t r = 0; r < OOO_HOST_REGIONS; r++) {
			if (d->host_fd[r] >= 0)
				send_host_map(srv, d, r, 0);
		}
		/*
		 * Then its modules and kernels, a few at a time (restore_pump). The
		 * tenant may submit again once the executor has all of them: a ping
		 * behind them on the control socket comes back after them, and its
		 * answer makes the epoch even (dpath_on_barrier).
		 */
		{
			unsigned nm = 0, nk = 0;
			uint64_t sid = d->session;

			for (uint32_t m = 0; m < DPATH_MAX_MODULES; m++)
				nm += d->module_live[m];
			for (uint32_t k = 0; d->kname && k < DPATH_MAX_KERNELS; k++)
				nk += d->kname[k] != NULL;
			if (!nm) {
				/* nothing to load again (kernels go with their modules): the ping at once, not behind others' restores */
				if (gpu_send(srv, gpu, EXEC_MSG_PING, &sid, sizeof(sid), -1) < 0)
					log_warn("gpu%u: cannot finish re-attaching session %llu", gpu_dev(srv, gpu),
						 (unsigned long long)sid);
				return;
			}
			log_info("gpu%u: session %llu: loading %u modules (%u kernels) again", gpu_dev(srv, gpu),
				 (unsigned long long)sid, nm, nk);
		}
		restore_begin(srv, d);
		restore_pump(srv, gpu);
		return;
	}
	if (type == (EXEC_MSG_QUEUE | OOO_MSG_REPLY) && d->wait_type == OOO_MSG_QUEUE_CREATE) {
		d->wait_type = 0;
		if (status < 0) {
			session_uncharge(d->sess, OOO_RES_QUEUES, 1);
			if (c)
				server_reply_error(srv, c, OOO_MSG_QUEUE_CREATE, d->seq, status, "gpu%u: %s", gpu_dev(srv, gpu), reason);
			return;
		}
		d->queue_live[d->wait_queue] = 1;
		if (c) {
			struct ooo_msg_queue_info rep = { .queue = d->wait_queue,
							  .priority = d->queue_prio[d->wait_queue],
							  .slo_us = d->queue_slo[d->wait_queue] };
			server_reply(srv, c, OOO_MSG_QUEUE_CREATE, d->seq, &rep, sizeof(rep), -1);
		} else {
			send_queue(srv, d, d->wait_queue, false, 0);
		}
	}
}

static void dpath_gpu_lost(struct server *srv, uint32_t gpu)
{
	struct list_node *n, *tmp, *dn, *dtmp;

	gone_drop(srv, gpu); /* its messages are all read: no report can name them any more */

	/* forwarded requests die with the executor */
	list_for_each_safe(n, tmp, &srv->dp->xreqs) {
		struct xreq *x = list_entry(n, struct xreq, node);
		struct conn *c = xreq_waiter(srv, x);

		if (x->gpu != gpu)
			continue;
		/* a restore that died with this executor is tried again on the next (the module stays) */
		if (x->type == OOO_MSG_MODULE_LOAD && x->sess && !x->restore)
			session_uncharge(x->sess, OOO_RES_MODULES, 1);
		if (x->type == OOO_MSG_HOST_ALLOC && x->sess && x->sess->dp && x->sess->dp->host_fd[x->region] >= 0) {
			struct sdpath *hd = x->sess->dp;
			close(hd->host_fd[x->region]);
			hd->host_fd[x->region] = -1;
			session_uncharge(x->sess, OOO_RES_MEM_BYTES, hd->host_size[x->region]);
		}
		if (c)
			server_reply_error(srv, c, x->type, x->seq, -OOO_EDEVRESET,
					   "the executor of gpu%u died during the request", gpu_dev(srv, gpu));
		xreq_free(srv, x);
	}

	list_for_each_safe(dn, dtmp, &srv->dp->dpaths) {
		struct sdpath *d = list_entry(dn, struct sdpath, node);
		struct conn *c;

		if (d->gpu != gpu)
			continue;
		if (d->wait_type == OOO_MSG_ATTACH && !d->attached) {
			/*
			 * The first attach died with the executor (one that was about to
			 * exit, after a fault): nothing of it is left, so it waits for the
			 * domain's next executor like any attach (gpu_park); only when
			 * oood stops is the tenant told to attach again.
			 */
			struct ooo_msg_attach again = { .device = gpu_dev(srv, gpu) };
			uint32_t seq = d->seq;

			c = server_conn_get(srv, d->waiter);
			if (d->sess)
				d->sess->dp = NULL;
			dp_free(d);
			if (c && !srv->stopping)
				gpu_park(srv, c, seq, OOO_MSG_ATTACH, &again, sizeof(again)); /* answers if it cannot */
			else if (c)
				server_reply_error(srv, c, OOO_MSG_ATTACH, seq, -OOO_EDEVRESET,
						   "the executor of gpu%u died during the attach", gpu_dev(srv, gpu));
			continue;
		}
		d->attached = false;
		/*
		 * Modules and kernels stay: the next executor loads them again
		 * (restore_pump). But an executor that died while loading them
		 * again may have died of them (or of the time they took, past the
		 * watchdog): they are lost then, not tried on every next executor.
		 */
		if (d->restoring) {
			unsigned lost = 0;
			for (uint32_t m = 0; m < DPATH_MAX_MODULES; m++)
				if (d->module_live[m] && !d->module_lost[m]) {
					module_lose(d, m);
					lost++;
				}
			if (lost)
				log_warn("gpu%u: session %llu: the executor died while loading its modules again: %u "
					 "modules lost (their kernels' launches fail until the tenant loads them again)",
					 gpu_dev(srv, gpu), (unsigned long long)d->session, lost);
			restore_end(d);
			d->rs_out = 0;
		}
		/* odd epoch: the tenant fails what it has in flight and holds new submissions */
		if (d->hdr && !(__atomic_load_n(&d->hdr->epoch, __ATOMIC_RELAXED) & 1)) {
			__atomic_add_fetch(&d->hdr->epoch, 1, __ATOMIC_RELEASE);
			poke(d);
		}
		c = server_conn_get(srv, d->waiter);
		if (d->req && c && d->wait_type) {
			server_reply_error(srv, c, d->wait_type, d->seq, -OOO_EDEVRESET,
					   "the executor of gpu%u died during the request", gpu_dev(srv, gpu));
			if (d->wait_type == OOO_MSG_QUEUE_CREATE)
				session_uncharge(d->sess, OOO_RES_QUEUES, 1);
		}
		d->req = 0;
		d->wait_type = 0;
		/* every tenant with a data path there hears that its commands in flight are gone */
		if (d->sess && d->sess->owner)
			server_notice(srv, d->sess->owner, OOO_NOTICE_DEVRESET,
				      "the GPU executor was restarted: commands in flight failed");
	}
}

/* The executor answered the ping sent behind a re-attach: the session may submit again. */
static void dpath_on_barrier(struct server *srv, uint32_t gpu, uint64_t session)
{
	struct list_node *n;

	list_for_each(n, &srv->dp->dpaths) {
		struct sdpath *d = list_entry(n, struct sdpath, node);

		if (d->gpu != gpu || d->session != session || !d->attached || !d->hdr)
			continue;
		if (__atomic_load_n(&d->hdr->epoch, __ATOMIC_RELAXED) & 1) {
			__atomic_add_fetch(&d->hdr->epoch, 1, __ATOMIC_RELEASE);
			poke(d);
		}
		return;
	}
}

static void dpath_gpu_ready(struct server *srv, uint32_t gpu)
{
	struct list_node *n, *tmp;
	unsigned k = 0;

	list_for_each_safe(n, tmp, &srv->dp->dpaths) {
		struct sdpath *d = list_entry(n, struct sdpath, node);

		char why[OOO_ERRMSG_MAX - 96];

		if (d->gpu != gpu || d->attached || d->req)
			continue;
		if (d->sess && d->sess->tenant && hang_barred(srv, d->sess->tenant->uid, why, sizeof(why))) {
			dp_lost(srv, d, why); /* frees only d's session */
			continue;
		}
		/* EXEC_ATTACH_RESET: what the dead executor never took is dropped, not run late */
		if (send_attach(srv, d, EXEC_ATTACH_RESET) == 0)
			k++;
		else
			dp_lost(srv, d, "it could not be sent the attach"); /* frees only d's session */
	}
	if (k)
		log_info("gpu%u: attaching %u sessions again", gpu_dev(srv, gpu), k);
}

static void dpath_fini(struct server *srv)
{
	if (!srv->dp)
		return;
	free(srv->dp->hangs);
	srv->dp->hangs = NULL;
	while (!list_empty(&srv->dp->xreqs))
		xreq_free(srv, list_entry(srv->dp->xreqs.next, struct xreq, node));
	while (!list_empty(&srv->dp->dpaths)) {
		struct sdpath *d = list_entry(srv->dp->dpaths.next, struct sdpath, node);
		if (d->sess)
			d->sess->dp = NULL;
		dp_free(d);
	}
}

/* ---- the module -------------------------------------------------------------- */

static void on_xreply(struct server *srv, uint32_t idx, uint16_t type, const void *payload, size_t plen, int *fd)
{
	dpath_on_xreply(srv, idx, type, payload);
}

static void on_reply(struct server *srv, uint32_t idx, uint16_t type, const void *payload, size_t plen, int *fd)
{
	struct exec_mem_reply r;

	if ((type & ~OOO_MSG_REPLY) != EXEC_MSG_ATTACH && (type & ~OOO_MSG_REPLY) != EXEC_MSG_DETACH &&
	    (type & ~OOO_MSG_REPLY) != EXEC_MSG_QUEUE) {
		on_xreply(srv, idx, type, payload, plen, fd);
		return;
	}
	memcpy(&r, payload, sizeof(r));
	dpath_on_reply(srv, idx, type, r.status, r.req, r.reason);
}

static void on_ready(struct server *srv, struct gpu *g)
{
	dpath_gpu_ready(srv, g->idx);
}

static void on_load(const struct server *srv, struct exec_load *load)
{
	const struct list_node *n;

	list_for_each(n, &srv->dp->dpaths) {
		const struct sdpath *d = list_entry(n, struct sdpath, node);

		if (d->gpu < EXEC_MAX)
			load[d->gpu].paths++;
	}
}

static int on_affinity(const struct server *srv, const struct session *s)
{
	return s->dp ? (int)s->dp->gpu : -1;
}

static const uint16_t replies[] = {
	EXEC_MSG_ATTACH, EXEC_MSG_DETACH, EXEC_MSG_QUEUE, EXEC_MSG_MODULE_LOAD, EXEC_MSG_MODULE_UNLOAD,
	EXEC_MSG_KERNEL_GET, EXEC_MSG_HOST_MAP, EXEC_MSG_HOST_UNMAP,
};

static const struct exec_listener listener = {
	.ready = on_ready,
	.lost = dpath_gpu_lost,
	.fault = dpath_on_fault,
	.hung = dpath_on_hung,
	.barrier = dpath_on_barrier,
	.reply = on_reply,
	.replies = replies,
	.nreplies = sizeof(replies) / sizeof(replies[0]),
	.load = on_load,
	.affinity = on_affinity,
};

static int dpath_init(struct server *srv)
{
	struct dpaths *dp = calloc(1, sizeof(*dp));

	if (!dp)
		return -ENOMEM;
	srv->dp = dp;
	list_init(&dp->dpaths);
	list_init(&dp->xreqs);
	for (uint32_t g = 0; g < EXEC_MAX; g++)
		list_init(&dp->restoring[g]);
	return gpu_listen(srv, &listener);
}

static void dpath_module_fini(struct server *srv)
{
	dpath_fini(srv);
	free(srv->dp);
	srv->dp = NULL;
}

static void on_attach(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	dpath_attach(srv, c, seq, payload);
}

static void on_queue_create(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	dpath_queue_create(srv, c, seq, payload);
}

static void on_queue_destroy(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	dpath_queue_destroy(srv, c, seq, ((const struct ooo_msg_queue *)payload)->queue);
}

static void on_module_load(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	dpath_module_load(srv, c, seq, payload, server_take_fd(c));
}

static void on_module_unload(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	dpath_module_unload(srv, c, seq, ((const struct ooo_msg_module *)payload)->module);
}

static void on_kernel_get(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	dpath_kernel_get(srv, c, seq, payload);
}

static void on_host_alloc(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	dpath_host_alloc(srv, c, seq, ((const struct ooo_msg_host *)payload)->size);
}

static void on_host_free(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	dpath_host_free(srv, c, seq, ((const struct ooo_msg_host *)payload)->region);
}

static void on_pardon(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	const struct peer_cred *cred = server_conn_cred(c);
	struct ooo_msg_pardon_reply rep;

	dpath_admin_pardon(srv, payload, &rep);
	log_info("oooctl (pid %u uid %u): pardon: %s", cred->pid, cred->uid, rep.msg);
	server_reply(srv, c, OOO_MSG_PARDON, seq, &rep, sizeof(rep), -1);
}

#define QUEUES_ONLY "queues belong to tenant sessions"
#define MODULES_ONLY "modules belong to tenant sessions"
#define HOST_ONLY "host regions belong to tenant sessions"
static const struct handler handlers[] = {
	{ .type = OOO_MSG_ATTACH, .flags = H_TENANT, .refusal = QUEUES_ONLY, .fn = on_attach },
	{ .type = OOO_MSG_QUEUE_CREATE, .flags = H_TENANT, .refusal = QUEUES_ONLY, .fn = on_queue_create },
	{ .type = OOO_MSG_QUEUE_DESTROY, .flags = H_TENANT, .refusal = QUEUES_ONLY, .fn = on_queue_destroy },
	{ .type = OOO_MSG_MODULE_LOAD, .flags = H_TENANT, .refusal = MODULES_ONLY, .fn = on_module_load },
	{ .type = OOO_MSG_MODULE_UNLOAD, .flags = H_TENANT, .refusal = MODULES_ONLY, .fn = on_module_unload },
	{ .type = OOO_MSG_KERNEL_GET, .flags = H_TENANT, .refusal = MODULES_ONLY, .fn = on_kernel_get },
	{ .type = OOO_MSG_HOST_ALLOC, .flags = H_TENANT, .refusal = HOST_ONLY, .fn = on_host_alloc },
	{ .type = OOO_MSG_HOST_FREE, .flags = H_TENANT, .refusal = HOST_ONLY, .fn = on_host_free },
	{ .type = OOO_MSG_PARDON, .flags = H_ADMIN, .fn = on_pardon },
};

const struct module dpath_module = {
	.name = "data paths",
	.init = dpath_init,
	.session_close = dpath_release_session,
	.fini = dpath_module_fini,
	.handlers = handlers,
	.nhandlers = sizeof(handlers) / sizeof(handlers[0]),
};
