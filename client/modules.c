/* SPDX-License-Identifier: MIT */
/*
 * libooo: modules (the image passed to the executor in a sealed memfd),
 * their kernels, and launches on a queue's data path.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>
#include <ooo/shm.h>

#include "libooo_int.h"
#include "staging.h"

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

/* lo_transact, passing one descriptor with the request. Caller holds s->lock. */
static int transact_fd(struct ooo_session *s, uint16_t type, const void *req, size_t req_len, int fd,
		       const void **reply, size_t *reply_len)
{
	s->pass_fd = fd;
	int r = lo_transact(s, type, req, req_len, reply, reply_len);
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

	lo_begin();
	if (!s)
		return lo_fail(-EINVAL, "%s: the session is NULL", __func__);
	if (s->admin)
		return lo_fail(-EINVAL, "%s: not available on an admin session", __func__);
	if (!image)
		return lo_fail(-EINVAL, "%s: image is NULL", __func__);
	if (!len)
		return lo_fail(-EINVAL, "%s: the image is empty", __func__);
	if (len > OOO_MODULE_MAX_BYTES)
		return lo_fail(-EINVAL, "%s: the image of %zu bytes is over the limit of %u", __func__, len,
			       OOO_MODULE_MAX_BYTES);
	if (!out)
		return lo_fail(-EINVAL, "%s: out is NULL", __func__);
	if (kind < OOO_MODULE_PTX || kind > OOO_MODULE_CUDA_C)
		return lo_fail(-EINVAL, "%s: unknown module kind %d", __func__, kind);
	m = calloc(1, sizeof(*m));
	if (!m)
		return lo_fail(-ENOMEM, "%s: out of memory", __func__);
	fd = image_fd(image, len);
	if (fd < 0) {
		free(m);
		return lo_fail(fd, "%s: cannot copy the image into a sealed memfd: %s", __func__, strerror(-fd));
	}
	pthread_mutex_lock(&s->lock);
	r = lo_dp_attach_locked(s); /* the module lives on the session's GPU */
	if (r == 0)
		r = transact_fd(s, OOO_MSG_MODULE_LOAD, &req, sizeof(req), fd, &rp, &rlen);
	if (r == 0)
		memcpy(&rep, rp, sizeof(rep));
	pthread_mutex_unlock(&s->lock);
	close(fd);
	if (r < 0) {
		free(m);
		return lo_finish(__func__, r);
	}
	m->s = s;
	m->id = rep.module;
	*out = m;
	return lo_finish(__func__, 0);
}

int ooo_module_unload(ooo_module *m)
{
	struct ooo_msg_module req;
	int r;

	lo_begin();
	if (!m)
		return 0;
	req = (struct ooo_msg_module){ .module = m->id };
	r = lo_call(m->s, OOO_MSG_MODULE_UNLOAD, &req, sizeof(req), NULL, 0);
	free(m);
	return lo_finish(__func__, r < 0 ? r : 0);
}

int ooo_kernel_get(ooo_module *m, const char *name, ooo_kernel **out)
{
	struct ooo_msg_kernel_get req = { 0 };
	ooo_kernel *k;
	int r;

	lo_begin();
	if (!m)
		return lo_fail(-EINVAL, "%s: the module is NULL", __func__);
	if (!name || !*name)
		return lo_fail(-EINVAL, "%s: the kernel name is %s", __func__, name ? "empty" : "NULL");
	if (!out)
		return lo_fail(-EINVAL, "%s: out is NULL", __func__);
	if (strlen(name) >= sizeof(req.name))
		return lo_fail(-EINVAL, "%s: the kernel name is longer than %zu bytes", __func__, sizeof(req.name) - 1);
	req.module = m->id;
	memcpy(req.name, name, strlen(name) + 1);
	k = calloc(1, sizeof(*k));
	if (!k)
		return lo_fail(-ENOMEM, "%s: out of memory", __func__);
	r = lo_call(m->s, OOO_MSG_KERNEL_GET, &req, sizeof(req), &k->k, sizeof(k->k));
	if (r != sizeof(k->k)) {
		free(k);
		return lo_finish(__func__, r < 0 ? r : lo_bad_reply_size(OOO_MSG_KERNEL_GET, r, sizeof(k->k)));
	}
	k->m = m;
	*out = k;
	return lo_finish(__func__, 0);
}

ooo_kernel *ooo_kernel_free(ooo_kernel *k)
{
	free(k);
	return NULL;
}

int ooo_kernel_info(const ooo_kernel *k, struct ooo_kernel_info *info)
{
	struct ooo_kernel_info i = { .sz = sizeof(i) };

	lo_begin();
	if (!k)
		return lo_fail(-EINVAL, "%s: the kernel is NULL", __func__);
	if (!info)
		return lo_fail(-EINVAL, "%s: info is NULL", __func__);
	if (info->sz < sizeof(size_t))
		return lo_fail(-EINVAL, "%s: info->sz is %zu, not sizeof(struct ooo_kernel_info)", __func__, info->sz);
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

	lo_begin();
	if (!(d = lo_queue_dp(__func__, q)))
		return -EINVAL;
	if (!k)
		return lo_fail(-EINVAL, "%s: the kernel is NULL", __func__);
	if (!grid || !block)
		return lo_fail(-EINVAL, "%s: %s is NULL", __func__, grid ? "block" : "grid");
	if (len && !params)
		return lo_fail(-EINVAL, "%s: params is NULL with len %zu", __func__, len);
	if (k->m->s != q->s)
		return lo_fail(-EINVAL, "%s: the kernel and the queue belong to different sessions", __func__);
	if (opts && opts->sz < sizeof(size_t))
		return lo_fail(-EINVAL, "%s: opts->sz is %zu, not sizeof(struct ooo_launch_opts)", __func__, opts->sz);
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (o.flags)
		return lo_fail(-EINVAL, "%s: unknown launch option flags %#x", __func__, o.flags);
	e.launch.deadline_us = o.deadline_us;
	/* checked here for a clear error at once; the executor checks it again */
	if (len != k->k.param_size)
		return lo_fail(-EINVAL, "%s: parameter bytes do not match the kernel's parameter layout (%zu, not %u)",
			       __func__, len, k->k.param_size);
	e.launch.kernel = k->k.kernel;
	e.launch.shmem = shmem;
	memcpy(e.launch.grid, grid, sizeof(e.launch.grid));
	memcpy(e.launch.block, block, sizeof(e.launch.block));
	e.launch.param_len = (uint32_t)len;
	pthread_mutex_lock(&d->lock);
	if (len) {
		r = lo_dp_stage(q->s, d, len, &off);
		if (r == 0) {
			memcpy(d->stage + off, params, len);
			e.launch.param_off = off;
		}
	}
	if (r == 0)
		r = lo_dp_submit(q->s, d, q->idx, &e, off, NULL, 0);
	if (r < 0 && off != UINT64_MAX)
		staging_free(&d->st, off);
	pthread_mutex_unlock(&d->lock);
	return lo_finish(__func__, r);
}
