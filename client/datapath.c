/* SPDX-License-Identifier: MIT */
/*
 * libooo: a session's data path (docs/datapath.md): the shared area and its
 * rings, the entries in flight, reaping completions, waiting for them
 * (spin, then sleep on the doorbell), submission and staging. The public
 * calls over it are in queues.c and modules.c.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>
#include <ooo/shm.h>

#include "../proto/ring.h"
#include "../proto/wire.h"
#include "libooo_int.h"
#include "staging.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void lo_dp_destroy(struct dpath *d)
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
int lo_dp_attach_locked(ooo_session *s)
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
	r = lo_transact(s, OOO_MSG_ATTACH, &req, sizeof(req), &rp, &rlen);
	if (r < 0)
		return r;
	memcpy(&rep, rp, sizeof(rep));
	if (s->nrfds != 2)
		return lo_fail(-OOO_EPROTO, "attach reply without its two descriptors");
	d = calloc(1, sizeof(*d));
	if (!d)
		return lo_fail(-ENOMEM, "out of memory for the data path");
	pthread_mutex_init(&d->lock, NULL);
	d->memfd = s->rfds[0];
	d->bell = s->rfds[1];
	s->nrfds = 0;
	s->rfd = -1;
	d->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->wake < 0) {
		r = lo_fail(-errno, "cannot create the data path's wake-up eventfd: %s", strerror(errno));
		goto err;
	}
	d->size = rep.area_size;
	d->device = rep.device;
	d->base = mmap(NULL, d->size, PROT_READ | PROT_WRITE, MAP_SHARED, d->memfd, 0);
	if (d->base == MAP_FAILED) {
		d->base = NULL;
		r = lo_fail(-errno, "cannot map the session's area: %s", strerror(errno));
		goto err;
	}
	memcpy(&h, d->base, sizeof(h));
	if (ring_check_hdr(&h, d->size) < 0 || h.sq_entries != rep.sq_entries || h.cq_entries != rep.cq_entries) {
		r = lo_fail(-OOO_EPROTO, "the session area's layout is not what oood said");
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
		lo_fail(r, "cannot set up the staging area: %s", strerror(-r));
		goto err;
	}
	s->dp = d;
	s->dp_destroy = lo_dp_destroy;
	return 0;
err:
	lo_dp_destroy(d);
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

/* Wake the threads asleep in lo_dp_wait, so that they look again (see sleepers). Caller holds d->lock. */
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
		lo_set_last_error("the GPU executor was restarted: commands in flight failed");
		/*
		 * Other threads may sleep on commands that just ended; this thread
		 * may have drained the doorbell and notice that oood sent for them.
		 */
		dp_wake_sleepers(d);
	}
	return e & 1;
}

/* Take every completion posted. Caller holds d->lock. Returns how many entries ended (completions and consumed launches), or -OOO_EPROTO. */
int lo_dp_reap(ooo_session *s, struct dpath *d)
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
	 * Other threads sleep on the doorbell (lo_dp_wait), and what this one just
	 * reaped may be what they wait for: the executor will not ring for it
	 * again (and a failed ring_sleep_prepare clears the flag they set), so
	 * wake them; they look and sleep again.
	 */
	if (n > 0)
		dp_wake_sleepers(d);
	if (r < 0)
		return lo_fail(-OOO_EPROTO, "the completion ring's indices are inconsistent");
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
				lo_session_end(s, -OOO_ECLOSED, "oood closed the connection");
			break;
		}
		if (wire_decode(s->rbuf, (size_t)n, WIRE_TO_PEER, &m, NULL) == 0 && m.hdr.type == OOO_MSG_NOTICE) {
			const struct ooo_msg_notice *no = m.payload;
			if (no->kind != OOO_NOTICE_DEVRESET)
				lo_notice_error(s, no);
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (s->dead && !was && s->dp) {
		/* the others asleep in lo_dp_wait hear of it too: this thread took the notice they polled for */
		uint64_t one = 1;

		(void)!write(s->dp->wake, &one, sizeof(one));
	}
}

/*
 * Wait until done(d, arg) holds, reaping completions. Caller holds d->lock
 * (released while sleeping). Returns 0, -ETIMEDOUT, or a session error.
 */
int lo_dp_wait(ooo_session *s, struct dpath *d, bool (*done)(struct dpath *, const void *), const void *arg,
		      int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : lo_now_ms() + timeout_ms;
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
		int r = lo_dp_reap(s, d);

		if (r < 0)
			return r;
		if (done(d, arg))
			return 0;
		if (s->dead)
			return lo_dead_error(s);
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
		left = deadline < 0 ? -1 : deadline - lo_now_ms();
		if (deadline >= 0 && left <= 0) {
			if (!d->sleepers)
				ring_awake(&d->cq);
			return lo_fail(-ETIMEDOUT, "commands still running after %d ms", timeout_ms);
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
int lo_dp_submit(ooo_session *s, struct dpath *d, uint32_t queue, struct ooo_sqe *e, uint64_t stage_off,
			void *dtoh_dst, size_t len)
{
	struct ooo_sqe *slot;
	uint32_t i = 0;
	int r;

	if (dp_epoch(d)) {
		/* a replacement that could not take the session back closes it: say so, not "again" for ever */
		dp_read_notices(s);
		if (s->dead)
			return lo_dead_error(s);
		return lo_fail(-OOO_EDEVRESET, "the GPU executor is being restarted; submit again when it is back");
	}
	if (!entry_free(d, NULL)) {
		r = lo_dp_wait(s, d, entry_free, NULL, -1);
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
		r = lo_dp_reap(s, d);
		if (r < 0)
			return r;
		if (s->dead)
			return lo_dead_error(s);
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

int lo_dp_stage(ooo_session *s, struct dpath *d, uint64_t len, uint64_t *off)
{
	struct stage_want w = { .len = len, .off = off };
	int r;

	if (stage_got(d, &w))
		return w.r;
	r = lo_dp_wait(s, d, stage_got, &w, -1);
	return r < 0 ? r : w.r;
}

/* Public call fn on queue q: its data path, or NULL with the reason for -EINVAL. */
struct dpath *lo_queue_dp(const char *fn, ooo_queue *q)
{
	if (!q)
		return lo_fail(-EINVAL, "%s: the queue is NULL", fn), NULL;
	if (!q->s || !q->s->dp)
		return lo_fail(-EINVAL, "%s: not a queue of a session's data path", fn), NULL;
	return q->s->dp;
}
