/* SPDX-License-Identifier: MIT */
/*
 * libooo: device buffers (allocated by oood, exported as descriptors) and
 * zero-copy host regions (sealed memfds mapped here and registered by the
 * executor: docs/datapath.md §2a).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "libooo_int.h"

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

	lo_begin();
	if ((r = lo_tenant_args(__func__, s, out != NULL)) < 0)
		return r;
	if (!bytes)
		return lo_fail(-EINVAL, "%s: size is 0", __func__);
	if (flags & ~OOO_BUF_DEVICE_MASK)
		return lo_fail(-EINVAL, "%s: unknown flags %#x", __func__, flags & ~OOO_BUF_DEVICE_MASK);
	if (flags & OOO_BUF_DEVICE_SET)
		req.device = (flags & OOO_BUF_DEVICE_INDEX) >> 8;
	b = calloc(1, sizeof(*b));
	if (!b)
		return lo_fail(-ENOMEM, "%s: out of memory", __func__);
	r = lo_call(s, OOO_MSG_BUF_ALLOC, &req, sizeof(req), &rep, sizeof(rep));
	if (r != sizeof(rep)) {
		free(b);
		return lo_finish(__func__, r < 0 ? r : lo_bad_reply_size(OOO_MSG_BUF_ALLOC, r, sizeof(rep)));
	}
	b->s = s;
	b->id = rep.id;
	b->addr = rep.addr;
	b->size = rep.size;
	b->device = rep.device;
	*out = b;
	return lo_finish(__func__, 0);
}

int ooo_buf_free(ooo_buf *b)
{
	struct ooo_msg_buf_ref req;
	int r;

	lo_begin();
	if (!b)
		return 0;
	req.id = b->id;
	r = lo_call(b->s, OOO_MSG_BUF_FREE, &req, sizeof(req), NULL, 0);
	free(b);
	return lo_finish(__func__, r < 0 ? r : 0);
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

	lo_begin();
	if (!b)
		return lo_fail(-EINVAL, "%s: the buffer is NULL", __func__);
	req.id = b->id;
	pthread_mutex_lock(&b->s->lock);
	r = lo_transact(b->s, OOO_MSG_BUF_EXPORT, &req, sizeof(req), &rp, &rlen);
	if (r == 0) {
		r = b->s->rfd >= 0 ? b->s->rfd : lo_fail(-OOO_EPROTO, "buffer export reply without its descriptor");
		if (r >= 0)
			b->s->rfds[0] = -1; /* the caller's now */
		b->s->rfd = -1;
	}
	pthread_mutex_unlock(&b->s->lock);
	return lo_finish(__func__, r);
}

/* ---- zero-copy host memory --------------------------------------------------------- */

int ooo_host_alloc(ooo_session *s, size_t bytes, void **out)
{
	struct ooo_msg_host req = { .size = bytes }, rep;
	const void *rp;
	size_t rlen;
	void *p;
	int r, fd = -1;

	lo_begin();
	if ((r = lo_tenant_args(__func__, s, out != NULL)) < 0)
		return r;
	if (!bytes)
		return lo_fail(-EINVAL, "%s: size is 0", __func__);
	pthread_mutex_lock(&s->lock);
	r = lo_dp_attach_locked(s);
	if (r == 0)
		r = lo_transact(s, OOO_MSG_HOST_ALLOC, &req, sizeof(req), &rp, &rlen);
	if (r == 0) {
		memcpy(&rep, rp, sizeof(rep));
		fd = s->rfd;
		if (fd < 0 || rep.region >= OOO_HOST_REGIONS)
			r = lo_fail(-OOO_EPROTO, "host alloc reply %s", fd < 0 ? "without its descriptor" : "with a bad region");
	}
	if (r < 0) {
		pthread_mutex_unlock(&s->lock);
		return lo_finish(__func__, r);
	}
	p = mmap(NULL, rep.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	lo_drop_fd(s); /* the mapping keeps the memory */
	pthread_mutex_unlock(&s->lock);
	if (p == MAP_FAILED)
		return lo_fail(-errno, "%s: cannot map the region: %s", __func__, strerror(errno));
	pthread_mutex_lock(&s->dp->lock);
	s->dp->host[rep.region].base = p;
	s->dp->host[rep.region].size = rep.size;
	pthread_mutex_unlock(&s->dp->lock);
	*out = p;
	return lo_finish(__func__, 0);
}

int ooo_host_free(ooo_session *s, void *p)
{
	struct ooo_msg_host req = { 0 };
	const void *rp;
	size_t rlen;
	uint32_t reg;
	uint64_t size = 0;
	int r;

	lo_begin();
	if (!s)
		return lo_fail(-EINVAL, "%s: the session is NULL", __func__);
	if (!p)
		return lo_fail(-EINVAL, "%s: p is NULL", __func__);
	if (!s->dp)
		return lo_fail(-EINVAL, "%s: the session has no data path, so no host memory", __func__);
	pthread_mutex_lock(&s->dp->lock);
	for (reg = 0; reg < OOO_HOST_REGIONS && s->dp->host[reg].base != p; reg++)
		;
	if (reg < OOO_HOST_REGIONS) {
		size = s->dp->host[reg].size;
		s->dp->host[reg].base = NULL;
	}
	pthread_mutex_unlock(&s->dp->lock);
	if (reg == OOO_HOST_REGIONS)
		return lo_fail(-ENOENT, "%s: %p is not a region from ooo_host_alloc", __func__, p);
	req.region = reg;
	pthread_mutex_lock(&s->lock);
	r = lo_transact(s, OOO_MSG_HOST_FREE, &req, sizeof(req), &rp, &rlen);
	pthread_mutex_unlock(&s->lock);
	munmap(p, size);
	return lo_finish(__func__, r);
}
