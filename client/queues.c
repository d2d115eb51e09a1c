/* SPDX-License-Identifier: MIT */
/*
 * libooo: queues, copies, memsets and events: the public calls that submit
 * to a session's data path (datapath.c) and wait for it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>
#include <ooo/shm.h>

#include "libooo_int.h"
#include "staging.h"

#define DP_CHUNK (8u << 20) /* copies are staged in pieces of at most this */

int ooo_queue_create(ooo_session *s, const struct ooo_queue_opts *opts, ooo_queue **out)
{
	struct ooo_queue_opts o = { .sz = sizeof(o), .priority = -1 };
	struct ooo_msg_queue_create req;
	struct ooo_msg_queue_info rep;
	const void *rp;
	size_t rlen;
	ooo_queue *q;
	int r;

	lo_begin();
	if ((r = lo_tenant_args(__func__, s, out != NULL)) < 0)
		return r;
	if (opts && opts->sz < sizeof(size_t))
		return lo_fail(-EINVAL, "%s: opts->sz is %zu, not sizeof(struct ooo_queue_opts)", __func__, opts->sz);
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (o.priority < -1 || o.priority > 99)
		return lo_fail(-EINVAL, "%s: priority %d is not -1 (the class's) or 0..99", __func__, o.priority);
	req = (struct ooo_msg_queue_create){ .priority = o.priority, .slo_us = o.slo_us };
	q = calloc(1, sizeof(*q));
	if (!q)
		return lo_fail(-ENOMEM, "%s: out of memory", __func__);
	pthread_mutex_lock(&s->lock);
	r = lo_dp_attach_locked(s);
	if (r == 0)
		r = lo_transact(s, OOO_MSG_QUEUE_CREATE, &req, sizeof(req), &rp, &rlen);
	if (r == 0)
		memcpy(&rep, rp, sizeof(rep));
	pthread_mutex_unlock(&s->lock);
	if (r < 0 || rep.queue >= 256) {
		free(q);
		return lo_finish(__func__,
				 r < 0 ? r : lo_fail(-OOO_EPROTO, "queue create reply with queue %u (of 256)", rep.queue));
	}
	q->s = s;
	q->idx = rep.queue;
	q->priority = rep.priority;
	q->slo_us = rep.slo_us;
	pthread_mutex_lock(&s->dp->lock);
	s->dp->q[q->idx] = (struct dp_queue_state){ .live = true };
	pthread_mutex_unlock(&s->dp->lock);
	*out = q;
	return lo_finish(__func__, 0);
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
	char why[sizeof(lo_last_error)];
	int r;

	lo_begin();
	if (!q)
		return 0;
	r = ooo_queue_sync(q, -1);
	memcpy(why, lo_last_error, sizeof(why)); /* the sync's failure is the one returned */
	req = (struct ooo_msg_queue){ .queue = q->idx };
	pthread_mutex_lock(&q->s->lock);
	{
		int t = lo_transact(q->s, OOO_MSG_QUEUE_DESTROY, &req, sizeof(req), &rp, &rlen);
		if (!r)
			r = t;
		else
			memcpy(lo_last_error, why, sizeof(why));
	}
	pthread_mutex_unlock(&q->s->lock);
	pthread_mutex_lock(&q->s->dp->lock);
	q->s->dp->q[q->idx].live = false;
	pthread_mutex_unlock(&q->s->dp->lock);
	free(q);
	return lo_finish(__func__, r);
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
		if (!lo_last_error[0])
			lo_fail(r, "a command on queue %u failed: %s", idx, ooo_strerror(r));
	}
	return r;
}

int ooo_queue_sync(ooo_queue *q, int timeout_ms)
{
	struct dpath *d;
	int r;

	lo_begin();
	if (!(d = lo_queue_dp(__func__, q)))
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	{
		/* a marker behind everything submitted: launches post no completion of their own */
		struct ooo_sqe nop = { .opcode = OOO_OP_NOP };
		r = lo_dp_submit(q->s, d, q->idx, &nop, UINT64_MAX, NULL, 0);
	}
	if (r == 0)
		r = lo_dp_wait(q->s, d, queue_idle, &q->idx, timeout_ms);
	if (r == 0)
		r = take_queue_error(d, q->idx);
	pthread_mutex_unlock(&d->lock);
	return lo_finish(__func__, r);
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

	lo_begin();
	if (!(d = lo_queue_dp(__func__, q)))
		return -EINVAL;
	if (len && !src)
		return lo_fail(-EINVAL, "%s: src is NULL with len %zu", __func__, len);
	pthread_mutex_lock(&d->lock);
	if (len && host_addr(d, src, len, &h)) {
		/* zero copy: the executor DMAs straight from the caller's registered memory */
		struct ooo_sqe e = { .opcode = OOO_OP_HTOD, .copy = { .dst = dst, .src = h, .len = len } };
		r = lo_dp_submit(q->s, d, q->idx, &e, UINT64_MAX, NULL, 0);
		pthread_mutex_unlock(&d->lock);
		return lo_finish(__func__, r);
	}
	for (size_t done = 0; done < len && r == 0;) {
		size_t n = len - done < DP_CHUNK ? len - done : DP_CHUNK;
		struct ooo_sqe e = { .opcode = OOO_OP_HTOD };
		uint64_t off;

		r = lo_dp_stage(q->s, d, n, &off);
		if (r < 0)
			break;
		memcpy(d->stage + off, (const char *)src + done, n);
		e.copy.dst = dst + done;
		e.copy.src = off;
		e.copy.len = n;
		r = lo_dp_submit(q->s, d, q->idx, &e, off, NULL, 0);
		if (r < 0)
			staging_free(&d->st, off);
		done += n;
	}
	pthread_mutex_unlock(&d->lock);
	return lo_finish(__func__, r);
}

int ooo_memcpy_dtoh(ooo_queue *q, void *dst, uint64_t src, size_t len)
{
	struct dpath *d;
	int r = 0;

	lo_begin();
	if (!(d = lo_queue_dp(__func__, q)))
		return -EINVAL;
	if (len && !dst)
		return lo_fail(-EINVAL, "%s: dst is NULL with len %zu", __func__, len);
	pthread_mutex_lock(&d->lock);
	{
		uint64_t h;

		if (len && host_addr(d, dst, len, &h)) {
			struct ooo_sqe e = { .opcode = OOO_OP_DTOH, .copy = { .dst = h, .src = src, .len = len } };
			r = lo_dp_submit(q->s, d, q->idx, &e, UINT64_MAX, NULL, 0);
			len = 0; /* nothing to stage: wait for it below */
		}
	}
	for (size_t done = 0; done < len && r == 0;) {
		size_t n = len - done < DP_CHUNK ? len - done : DP_CHUNK;
		struct ooo_sqe e = { .opcode = OOO_OP_DTOH };
		uint64_t off;

		r = lo_dp_stage(q->s, d, n, &off);
		if (r < 0)
			break;
		e.copy.dst = off;
		e.copy.src = src + done;
		e.copy.len = n;
		r = lo_dp_submit(q->s, d, q->idx, &e, off, (char *)dst + done, n);
		if (r < 0)
			staging_free(&d->st, off);
		done += n;
	}
	/* the data is the caller's only once it has arrived */
	if (r == 0)
		r = lo_dp_wait(q->s, d, queue_idle, &q->idx, -1);
	if (r == 0)
		r = take_queue_error(d, q->idx);
	pthread_mutex_unlock(&d->lock);
	return lo_finish(__func__, r);
}

/* Public call fn: submit e to q. */
static int simple(const char *fn, ooo_queue *q, struct ooo_sqe *e)
{
	struct dpath *d;
	int r;

	lo_begin();
	if (!(d = lo_queue_dp(fn, q)))
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	r = lo_dp_submit(q->s, d, q->idx, e, UINT64_MAX, NULL, 0);
	pthread_mutex_unlock(&d->lock);
	return lo_finish(fn, r);
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

/* ---- events ----------------------------------------------------------------------- */

int ooo_event_create(ooo_session *s, ooo_event **out)
{
	struct dpath *d;
	ooo_event *ev;
	int r = 0;

	lo_begin();
	if ((r = lo_tenant_args(__func__, s, out != NULL)) < 0)
		return r;
	pthread_mutex_lock(&s->lock);
	r = lo_dp_attach_locked(s);
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		return lo_finish(__func__, r);
	d = s->dp;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return lo_fail(-ENOMEM, "%s: out of memory", __func__);
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
		return lo_fail(r, "%s: the session has 1024 events", __func__);
	}
	ev->s = s;
	*out = ev;
	return lo_finish(__func__, 0);
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

	lo_begin();
	if (!ev)
		return 0;
	d = ev->s->dp;
	pthread_mutex_lock(&d->lock);
	/* entries point at it until their records complete */
	(void)lo_dp_wait(ev->s, d, event_done, ev, -1);
	d->event_used[ev->idx] = 0;
	pthread_mutex_unlock(&d->lock);
	free(ev);
	return lo_finish(__func__, 0);
}

/* Public call fn: may q take a command about ev? q's data path, or NULL with the reason for -EINVAL. */
static struct dpath *event_dp(const char *fn, ooo_queue *q, ooo_event *ev)
{
	struct dpath *d = lo_queue_dp(fn, q);

	if (!d)
		return NULL;
	if (!ev)
		return lo_fail(-EINVAL, "%s: the event is NULL", fn), NULL;
	if (ev->s != q->s)
		return lo_fail(-EINVAL, "%s: the event and the queue belong to different sessions", fn), NULL;
	return d;
}

int ooo_event_record(ooo_queue *q, ooo_event *ev)
{
	struct ooo_sqe e = { .opcode = OOO_OP_EVENT_RECORD };
	struct dpath *d;
	int r;

	lo_begin();
	if (!(d = event_dp(__func__, q, ev)))
		return -EINVAL;
	e.event.event = ev->idx;
	pthread_mutex_lock(&d->lock);
	d->next_ev = ev;
	r = lo_dp_submit(q->s, d, q->idx, &e, UINT64_MAX, NULL, 0);
	d->next_ev = NULL;
	if (r == 0)
		ev->recorded++;
	pthread_mutex_unlock(&d->lock);
	return lo_finish(__func__, r);
}

int ooo_queue_wait_event(ooo_queue *q, ooo_event *ev)
{
	struct ooo_sqe e = { .opcode = OOO_OP_EVENT_WAIT };
	struct dpath *d;
	int r;

	lo_begin();
	if (!(d = event_dp(__func__, q, ev)))
		return -EINVAL;
	e.event.event = ev->idx;
	pthread_mutex_lock(&d->lock);
	r = lo_dp_submit(q->s, d, q->idx, &e, UINT64_MAX, NULL, 0);
	pthread_mutex_unlock(&d->lock);
	return lo_finish(__func__, r);
}

int ooo_event_query(ooo_event *ev)
{
	struct dpath *d;
	int r;

	lo_begin();
	if (!ev)
		return lo_fail(-EINVAL, "%s: the event is NULL", __func__);
	d = ev->s->dp;
	pthread_mutex_lock(&d->lock);
	r = lo_dp_reap(ev->s, d);
	if (r >= 0)
		r = ev->done == ev->recorded ? (ev->error ? ev->error : 0)
					     : lo_fail(-EAGAIN, "%s: not every record of the event has completed", __func__);
	pthread_mutex_unlock(&d->lock);
	return lo_finish(__func__, r);
}

int ooo_event_wait(ooo_event *ev, int timeout_ms)
{
	struct dpath *d;
	int r;

	lo_begin();
	if (!ev)
		return lo_fail(-EINVAL, "%s: the event is NULL", __func__);
	d = ev->s->dp;
	pthread_mutex_lock(&d->lock);
	r = lo_dp_wait(ev->s, d, event_done, ev, timeout_ms);
	if (r == 0 && ev->error) {
		r = ev->error;
		ev->error = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return lo_finish(__func__, r);
}
