/* SPDX-License-Identifier: MIT */
#include "buffers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../sessions/dpath.h"
#include "../executors/gpu.h"
#include "../log.h"
#include "../server.h"

/* What a buffer is charged before the executor says how it rounded. */
#define CHARGE_ROUND (2ull << 20)

static uint64_t next_id = 1;
static uint64_t next_req = 1;


static void buf_destroy(struct server *srv, struct buffer *b)
{
	if (b->sess) {
		session_uncharge(b->sess, OOO_RES_BUFFERS, 1);
		session_uncharge(b->sess, OOO_RES_MEM_BYTES, b->charged);
		list_del(&b->snode);
	}
	list_del(&b->anode);
	if (b->fd >= 0)
		close(b->fd);
	free(b);
}

/* Unmap it in the executor (if it is mapped there) and forget it. */
static void buf_release(struct server *srv, struct buffer *b)
{
	/* even while an import is in flight: a FREE of an address it does not know is harmless */
	if (b->live && !srv->stopping) { /* at shutdown the executors go anyway */
		struct exec_mem_req q = { .req = 0, .session = b->session, .addr = b->addr, .size = b->size };
		int r = gpu_send(srv, b->gpu, EXEC_MSG_FREE, &q, sizeof(q), -1);

		if (r < 0)
			log_warn("gpu%u: cannot tell the executor to free %#llx: %s", gpu_dev(srv, b->gpu),
				 (unsigned long long)b->addr, wire_strerror(r));
	}
	buf_destroy(srv, b);
}

static struct buffer *find(struct session *s, uint64_t id)
{
	struct list_node *n;

	list_for_each(n, &s->bufs) {
		struct buffer *b = list_entry(n, struct buffer, snode);
		if (b->id == id && b->live)
			return b;
	}
	return NULL;
}

static void buffers_alloc(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_buf_alloc *req)
{
	struct session *s = server_conn_session(c);
	uint64_t charge;
	struct buffer *b;
	int gpu, r;

	if (!req->size || req->size > (1ull << 50)) {
		server_reply_error(srv, c, OOO_MSG_BUF_ALLOC, seq, -EINVAL, "buffer size must be 1 byte .. 1 PiB");
		return;
	}
	{
		char why[OOO_ERRMSG_MAX - 32];

		gpu = gpu_pick(srv, s, req->device, why, sizeof(why));
		if (gpu == -EINPROGRESS) {
			gpu_park(srv, c, seq, OOO_MSG_BUF_ALLOC, req, sizeof(*req)); /* answers if it cannot */
			return;
		}
		if (gpu < 0) {
			server_reply_error(srv, c, OOO_MSG_BUF_ALLOC, seq, gpu, "no usable GPU: %s", why);
			return;
		}
	}
	charge = (req->size + CHARGE_ROUND - 1) / CHARGE_ROUND * CHARGE_ROUND;
	if (session_charge(s, OOO_RES_BUFFERS, 1) < 0) {
		server_reply_error(srv, c, OOO_MSG_BUF_ALLOC, seq, -OOO_ELIMIT,
				   "tenant has its maximum of %llu buffers (max_buffers)",
				   (unsigned long long)s->tenant->terms.limit[OOO_RES_BUFFERS]);
		return;
	}
	if (session_charge(s, OOO_RES_MEM_BYTES, charge) < 0) {
		session_uncharge(s, OOO_RES_BUFFERS, 1);
		server_reply_error(srv, c, OOO_MSG_BUF_ALLOC, seq, -OOO_ELIMIT,
				   "%llu more bytes would exceed the tenant's mem_limit of %llu (%llu in use)",
				   (unsigned long long)charge,
				   (unsigned long long)s->tenant->terms.limit[OOO_RES_MEM_BYTES],
				   (unsigned long long)s->tenant->used[OOO_RES_MEM_BYTES]);
		return;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		session_uncharge(s, OOO_RES_BUFFERS, 1);
		session_uncharge(s, OOO_RES_MEM_BYTES, charge);
		server_reply_error(srv, c, OOO_MSG_BUF_ALLOC, seq, -ENOMEM, "out of memory");
		return;
	}
	b->sess = s;
	b->session = s->id;
	b->id = next_id++;
	b->req = next_req++;
	b->gpu = (uint32_t)gpu;
	s->exec_seen[b->gpu / 8] |= (uint8_t)(1u << (b->gpu % 8));
	b->fd = -1;
	b->charged = charge;
	b->size = req->size;
	b->waiter = server_conn_ref(c);
	b->seq = seq;
	list_add_tail(&s->bufs, &b->snode);
	list_add_tail(&srv->bufs->all, &b->anode);
	{
		struct exec_mem_req q = { .req = b->req, .session = b->session, .size = req->size };
		r = gpu_send(srv, b->gpu, EXEC_MSG_ALLOC, &q, sizeof(q), -1);
	}
	if (r < 0) {
		buf_destroy(srv, b);
		server_reply_error(srv, c, OOO_MSG_BUF_ALLOC, seq, r == -EAGAIN ? -EAGAIN : -OOO_EDEVRESET,
				   "cannot reach the executor of gpu%u: %s", gpu_dev(srv, gpu), wire_strerror(r));
	}
}

static void alloc_done(struct server *srv, struct buffer *b, const struct exec_mem_reply *r, int fd)
{
	struct conn *c = b->orphan ? NULL : server_conn_get(srv, b->waiter);
	struct ooo_msg_buf rep = { 0 };

	b->req = 0;
	if (r->status < 0) {
		if (fd >= 0)
			close(fd);
		if (c)
			server_reply_error(srv, c, OOO_MSG_BUF_ALLOC, b->seq, r->status == -ENOMEM ? -ENOMEM : r->status,
					   "gpu%u: %s", gpu_dev(srv, b->gpu), r->reason);
		buf_destroy(srv, b);
		return;
	}
	if (fd < 0) {
		log_err("gpu%u: allocation reply without its descriptor", gpu_dev(srv, b->gpu));
		if (c)
			server_reply_error(srv, c, OOO_MSG_BUF_ALLOC, b->seq, -EIO, "executor sent no descriptor");
		b->live = b->mapped = true;
		b->addr = r->addr;
		buf_release(srv, b);
		return;
	}
	b->fd = fd;
	b->addr = r->addr;
	b->live = b->mapped = true;
	if (b->sess && r->size > b->charged) {
		/* the device's granularity is coarser than our estimate: charge what it really takes */
		session_charge_force(b->sess, OOO_RES_MEM_BYTES, r->size - b->charged);
	} else if (b->sess && r->size < b->charged) {
		session_uncharge(b->sess, OOO_RES_MEM_BYTES, b->charged - r->size);
	}
	b->charged = r->size;
	b->size = r->size;
	if (!c) {
		/* the tenant left meanwhile */
		buf_release(srv, b);
		return;
	}
	rep.id = b->id;
	rep.addr = b->addr;
	rep.size = b->size;
	rep.device = gpu_dev(srv, b->gpu);
	server_reply(srv, c, OOO_MSG_BUF_ALLOC, b->seq, &rep, sizeof(rep), -1);
}

static void buffers_on_reply(struct server *srv, uint32_t gpu, uint16_t type, const struct exec_mem_reply *r, int fd)
{
	struct list_node *n;

	if (type == (EXEC_MSG_FREE | OOO_MSG_REPLY)) {
		if (r->status < 0)
			log_warn("gpu%u: executor could not free a buffer: %s", gpu_dev(srv, gpu), r->reason);
		return;
	}
	list_for_each(n, &srv->bufs->all) {
		struct buffer *b = list_entry(n, struct buffer, anode);

		if (b->gpu != gpu || !b->req || b->req != r->req)
			continue;
		if (type == (EXEC_MSG_ALLOC | OOO_MSG_REPLY)) {
			alloc_done(srv, b, r, fd);
			return;
		}
		/* IMPORT reply */
		b->req = 0;
		if (fd >= 0)
			close(fd);
		if (r->status < 0) {
			log_err("gpu%u: buffer %llu at %#llx could not be mapped again: %s; it is lost to its tenant",
				gpu_dev(srv, b->gpu), (unsigned long long)b->id, (unsigned long long)b->addr, r->reason);
			return;
		}
		b->mapped = true;
		return;
	}
	if (fd >= 0)
		close(fd);
	log_warn("gpu%u: memory reply for no request (%llu), ignoring", gpu_dev(srv, gpu), (unsigned long long)r->req);
}

static void buffers_free(struct server *srv, struct conn *c, uint32_t seq, uint64_t id)
{
	struct buffer *b = find(server_conn_session(c), id);

	if (!b) {
		server_reply_error(srv, c, OOO_MSG_BUF_FREE, seq, -ENOENT, "no buffer %llu in this session",
				   (unsigned long long)id);
		return;
	}
	buf_release(srv, b);
	server_reply(srv, c, OOO_MSG_BUF_FREE, seq, NULL, 0, -1);
}

static void buffers_export(struct server *srv, struct conn *c, uint32_t seq, uint64_t id)
{
	struct buffer *b = find(server_conn_session(c), id);
	struct ooo_msg_buf rep = { 0 };
	int fd;

	if (!b) {
		server_reply_error(srv, c, OOO_MSG_BUF_EXPORT, seq, -ENOENT, "no buffer %llu in this session",
				   (unsigned long long)id);
		return;
	}
	fd = fcntl(b->fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		server_reply_error(srv, c, OOO_MSG_BUF_EXPORT, seq, -errno, "cannot duplicate the buffer's descriptor");
		return;
	}
	rep.id = b->id;
	rep.addr = b->addr;
	rep.size = b->size;
	rep.device = gpu_dev(srv, b->gpu);
	server_reply(srv, c, OOO_MSG_BUF_EXPORT, seq, &rep, sizeof(rep), fd);
}

static void buffers_release_session(struct server *srv, struct session *s)
{
	struct list_node *n, *tmp;

	list_for_each_safe(n, tmp, &s->bufs) {
		struct buffer *b = list_entry(n, struct buffer, snode);

		if (b->req && !b->live) {
			/* allocation in flight: keep the record to free the memory when it arrives */
			session_uncharge(s, OOO_RES_BUFFERS, 1);
			session_uncharge(s, OOO_RES_MEM_BYTES, b->charged);
			list_del(&b->snode);
			b->sess = NULL;
			b->orphan = true;
			continue;
		}
		buf_release(srv, b);
	}
	/*
	 * Every executor the session ever sent memory to keeps a record of it
	 * (in a fenced one, its window), even with no buffer left: tell each.
	 * dpath_release_session tells the data path's own.
	 */
	for (uint32_t g = 0; g < EXEC_MAX && !srv->stopping; g++) {
		if ((s->exec_seen[g / 8] >> (g % 8) & 1) && !(s->dp && s->dp->gpu == g))
			dpath_detach(srv, g, s->id);
	}
}

static void buffers_gpu_lost(struct server *srv, uint32_t gpu)
{
	struct list_node *n, *tmp;

	list_for_each_safe(n, tmp, &srv->bufs->all) {
		struct buffer *b = list_entry(n, struct buffer, anode);

		if (b->gpu != gpu)
			continue;
		if (!b->live) {
			/* the memory went with the executor (oood never got its fd): the request waits for the next one */
			struct conn *c = b->orphan ? NULL : server_conn_get(srv, b->waiter);
			struct ooo_msg_buf_alloc again = { .size = b->size, .device = gpu_dev(srv, gpu) };
			uint32_t seq = b->seq;

			buf_destroy(srv, b);
			if (c && !srv->stopping)
				gpu_park(srv, c, seq, OOO_MSG_BUF_ALLOC, &again, sizeof(again)); /* answers if it cannot */
			else if (c)
				server_reply_error(srv, c, OOO_MSG_BUF_ALLOC, seq, -OOO_EDEVRESET,
						   "the executor of gpu%u died during the allocation", gpu_dev(srv, gpu));
			continue;
		}
		/* the memory lives on through our fd; the next executor maps it again */
		b->mapped = false;
		b->req = 0;
	}
}

static void buffers_gpu_ready(struct server *srv, uint32_t gpu)
{
	struct list_node *n;
	unsigned sent = 0, failed = 0;

	list_for_each(n, &srv->bufs->all) {
		struct buffer *b = list_entry(n, struct buffer, anode);
		struct exec_mem_req q;

		if (b->gpu != gpu || !b->live || b->mapped)
			continue;
		b->req = next_req++;
		q = (struct exec_mem_req){ .req = b->req, .session = b->session, .addr = b->addr, .size = b->size };
		if (gpu_send(srv, gpu, EXEC_MSG_IMPORT, &q, sizeof(q), b->fd) < 0) {
			b->req = 0;
			failed++;
		} else {
			sent++;
		}
	}
	if (sent || failed)
		log_info("gpu%u: mapping %u buffers again in the new executor%s", gpu_dev(srv, gpu), sent,
			 failed ? " (some could not be sent)" : "");
}

static void buffers_fini(struct server *srv)
{
	if (!srv->bufs)
		return;
	while (!list_empty(&srv->bufs->all))
		buf_destroy(srv, list_entry(srv->bufs->all.next, struct buffer, anode));
}

/* ---- the module -------------------------------------------------------------- */

static void on_reply(struct server *srv, uint32_t idx, uint16_t type, const void *payload, size_t plen, int *fd)
{
	struct exec_mem_reply r;

	memcpy(&r, payload, sizeof(r));
	buffers_on_reply(srv, idx, type, &r, *fd);
	*fd = -1; /* buffers_on_reply took it */
}

static void on_ready(struct server *srv, struct gpu *g)
{
	buffers_gpu_ready(srv, g->idx);
}

static void on_load(const struct server *srv, struct exec_load *load)
{
	const struct list_node *n;

	list_for_each(n, &srv->bufs->all) {
		const struct buffer *b = list_entry(n, struct buffer, anode);

		if (b->gpu < EXEC_MAX) {
			load[b->gpu].buffers++;
			load[b->gpu].mem_bytes += b->size;
		}
	}
}

static int on_affinity(const struct server *srv, const struct session *s)
{
	return s->bufs.next != &s->bufs ? (int)list_entry(s->bufs.next, struct buffer, snode)->gpu : -1;
}

static const uint16_t replies[] = { EXEC_MSG_ALLOC, EXEC_MSG_FREE, EXEC_MSG_IMPORT };

static const struct exec_listener listener = {
	.ready = on_ready,
	.lost = buffers_gpu_lost,
	.reply = on_reply,
	.replies = replies,
	.nreplies = sizeof(replies) / sizeof(replies[0]),
	.load = on_load,
	.affinity = on_affinity,
};

static int buffers_init(struct server *srv)
{
	srv->bufs = calloc(1, sizeof(*srv->bufs));
	if (!srv->bufs)
		return -ENOMEM;
	list_init(&srv->bufs->all);
	return gpu_listen(srv, &listener);
}

static void buffers_module_fini(struct server *srv)
{
	buffers_fini(srv);
	free(srv->bufs);
	srv->bufs = NULL;
}

static void on_alloc(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	buffers_alloc(srv, c, seq, payload);
}

static void on_free(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	buffers_free(srv, c, seq, ((const struct ooo_msg_buf_ref *)payload)->id);
}

static void on_export(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	buffers_export(srv, c, seq, ((const struct ooo_msg_buf_ref *)payload)->id);
}

#define BUFFERS_ONLY "buffers belong to tenant sessions"
static const struct handler handlers[] = {
	{ .type = OOO_MSG_BUF_ALLOC, .flags = H_TENANT, .refusal = BUFFERS_ONLY, .fn = on_alloc },
	{ .type = OOO_MSG_BUF_FREE, .flags = H_TENANT, .refusal = BUFFERS_ONLY, .fn = on_free },
	{ .type = OOO_MSG_BUF_EXPORT, .flags = H_TENANT, .refusal = BUFFERS_ONLY, .fn = on_export },
};

const struct module buffers_module = {
	.name = "buffers",
	.init = buffers_init,
	.session_close = buffers_release_session,
	.fini = buffers_module_fini,
	.handlers = handlers,
	.nhandlers = sizeof(handlers) / sizeof(handlers[0]),
};
