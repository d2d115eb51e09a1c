/* SPDX-License-Identifier: MIT */
#include "datapath.h"

#include <linux/types.h>

#include "../../proto/hist.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../../proto/wire.h"
#include "../jit/jit.h"
#include "../jit/internal.h"
#include "coalesce.h"
#include "../../proto/exec_proto.h"
#include "memory.h"
#include "nvrtc.h"

void dp_hist(uint64_t *h, uint64_t ns)
{
	h[ooo_tm_bucket(ns)]++;
}

void dp_stage(struct datapath *dp, enum ooo_cmd_stage st, int cls, uint64_t ns, uint64_t n)
{
	uint64_t *const h[OOO_CMD_STAGES] = { dp->submit_hist, dp->queue_hist, dp->run_hist, dp->notify_hist };

	if (st >= OOO_CMD_STAGES)
		return;
	h[st][ooo_tm_bucket(ns)] += n;
	if (cls >= 0)
		co_class_stage(dp, (uint8_t)cls, st, ns, n);
}

/* The row of s's class in the per-class counters, -1 before it has a queue. */
static int session_cls(const struct dp_session *s)
{
	return s->has_cls ? s->cls : -1;
}

uint64_t dp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Start the coalescer once, on the first session or partition plan (the context is current then). */
void dp_co_ensure(struct datapath *dp)
{
	char why[160];

	if (!dp->fuse || dp->co || dp->co_failed)
		return;
	if (co_start(dp, why, sizeof(why)) < 0) {
		dp->co_failed = true;
		fprintf(stderr, "oood[executor]: launches are not coalesced: %s\n", why);
	}
}

void dp_init(struct datapath *dp, struct cuda_api *api)
{
	memset(dp, 0, sizeof(*dp));
	dp->api = api;
}

static int ev_get(struct datapath *dp, CUevent *ev)
{
	if (dp->nev) {
		*ev = dp->evpool[--dp->nev];
		return 0;
	}
	return dp->api->p_cuEventCreate(ev, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS ? 0 : -ENOMEM;
}

static void ev_put(struct datapath *dp, CUevent ev);
static bool take_submissions(struct datapath *dp, struct dp_session *s, uint64_t now);
static bool reap(struct datapath *dp, struct dp_session *s, uint64_t seen);
static struct dp_pending *overdue_pending(struct datapath *dp, uint64_t now, uint64_t *since, struct dp_session **who);

#define DP_HUNG_EVERY_NS 2000000u /* the kernel time limit is looked at this often (check_hung visits every queue) */

/*
 * While a control request waits for queue q's stream: the work on it that
 * runs now, as its pieces end in order (a pending without a bundle: the
 * commands since the pending before it, p->steps; then the commands issued
 * since the last pending, q->direct_n, with no pending behind them: a
 * launch has no completion of its own, and launches the scheduler still
 * held are issued there when their session goes). Each piece is timed from
 * the later of the wait's start and the end of the piece before it as
 * first seen (and of the bundle the stream waits for first): never longer
 * than it ran. Not timed: a piece behind another queue's event (that
 * queue's work is timed). The queue is not reaped meanwhile (dp_sync holds
 * the serving thread's lock; quiesce_unlocked pauses its session, which
 * overdue_pending and dp_long_sessions then leave to this), so its fifo
 * stands still.
 */
struct own_watch {
	struct dp_queue *q;
	uint32_t at;    /* pendings of q->fifo seen ended (or completing with a bundle) */
	uint64_t since; /* the piece at `at` runs from here at the latest */
	uint64_t bw_ns; /* when the bundle that piece waits for was first seen ended here (0: not yet) */
};

/* Has the piece of w->q's own stream that runs now passed the limit (with when its time started, *since)? */
static bool own_overdue(struct datapath *dp, struct own_watch *w, uint64_t now, uint64_t *since)
{
	struct dp_queue *q = w->q;
	uint64_t t, e = 0;
	uint32_t steps;
	bool untimed, bwait;
	uint16_t key;
	uint64_t seq;

	while (w->at < q->len) {
		struct dp_pending *p = &q->fifo[(q->head + w->at) % DP_QUEUE_DEPTH];
		CUresult r;

		if (p->b) { /* completes with a bundle (co_overdue times it), not on this stream */
			w->at++;
			continue;
		}
		if ((r = dp->api->p_cuEventQuery(p->ev)) == CUDA_ERROR_NOT_READY)
			break;
		if (r != CUDA_SUCCESS)
			return false; /* a fault: the wait ends with it */
		w->at++;
		w->since = now;
		w->bw_ns = 0;
	}
	if (w->at < q->len) {
		const struct dp_pending *p = &q->fifo[(q->head + w->at) % DP_QUEUE_DEPTH];

		steps = p->steps;
		untimed = p->untimed || p->hung;
		bwait = p->bwait;
		key = p->bw_key;
		seq = p->bw_seq;
	} else {
		steps = q->direct_n;
		untimed = q->direct_untimed;
		bwait = q->bwait;
		key = q->bw_key;
		seq = q->bw_seq;
	}
	if (!steps || untimed)
		return false;
	t = w->since;
	if (bwait && !co_seq_ended(dp, key, seq, &e)) {
		/* no pass reaps during the wait: ask the bundle itself, and keep when it was first seen ended */
		if (!w->bw_ns && co_seq_query(dp, key, seq))
			w->bw_ns = now;
		if (!w->bw_ns)
			return false; /* the bundle first: it is timed (co_overdue) */
		e = w->bw_ns;
	}
	if (bwait && e > t)
		t = e;
	if (w->at == 0 && q->head_since > t)
		t = q->head_since; /* the head's start as the passes saw it (the end of what came before) */
	*since = t;
	return now > t && now - t > dp->kernel_limit_ns * steps;
}

/*
 * Wait for event ev, or with ev NULL for what queue q's stream holds now,
 * as cuEventSynchronize / cuStreamSynchronize would, but with the kernel
 * time limit on (kernel_limit_ns) by polling: what a control request waits
 * for (a buffer freed, a session detached, a module unloaded) cannot hold
 * the executor behind a kernel that never ends. It looks every ~10 ms
 * whether work on the GPU is overdue as check_hung would see it
 * (co_overdue, overdue_pending: the wait's own length is no proof, a legit
 * backlog can be long), or q's own stream's work as own_overdue times it;
 * then the executor gives its context up at
 * once: it says why and exits without another CUDA call (freeing what the
 * request frees would wait for the kernel too); oood starts a new one, and
 * every tenant of this executor sees OOO_EDEVRESET. (What this pass did not
 * reap is still in the lists: a stream whose ended head was not reaped
 * hides what is behind it from overdue_pending, and unless own_overdue
 * sees it the 30 s watchdog acts.)
 */
/*
 * The overdue work whose time started first (a bundle first on a tie), as
 * check_hung sees it (co_overdue; overdue_pending, which also gives
 * untimed tails a pending: watch_tail) and of the watched queues' own
 * streams (own_overdue, each no earlier than the wait's start): not only
 * the waited queues' own work, which may be starved by another's. Called
 * with the serving thread's lock (check_hung does not run meanwhile; its
 * looks every DP_HUNG_EVERY_NS of a wait's time).
 */
static bool overdue_first(struct datapath *dp, struct own_watch *w, uint32_t nw, uint64_t now, uint64_t *since,
			  struct dp_bundle **ob, struct dp_session **who)
{
	uint64_t to = 0, tb = 0, tq = 0;
	struct dp_session *hs = NULL, *ws = NULL;
	bool mine = false;
	struct dp_bundle *b;
	struct dp_pending *hp;

	for (uint32_t i = 0; i < nw; i++) {
		uint64_t t = 0;

		if (w[i].q && own_overdue(dp, &w[i], now, &t) && (!mine || t < to)) {
			mine = true;
			to = t;
			ws = w[i].q->s;
		}
	}
	b = co_overdue(dp, now, &tb);
	hp = overdue_pending(dp, now, &tq, &hs);
	*ob = NULL;
	*who = NULL;
	if (b && (!mine || tb <= to) && (!hp || tb <= tq)) {
		*ob = b;
		*since = tb;
	} else if (hp && (!mine || tq <= to)) {
		*who = hs;
		*since = tq;
	} else if (mine) {
		*who = ws;
		*since = to;
	}
	return *ob || *who;
}

/* A control request's wait found work past the limit: report it (dp_report_hung) and exit, no CUDA call more. */
static void __attribute__((noreturn)) give_up(struct datapath *dp, struct dp_bundle *ob, struct dp_session *who,
					      uint64_t since, uint64_t now, uint64_t t0)
{
	uint64_t ids[EXEC_HUNG_MAX];
	uint32_t more = 0, nid = 0;

	if (ob)
		nid = co_bundle_sessions(ob, ids, EXEC_HUNG_MAX, &more);
	else if (who)
		ids[nid++] = who->id;
	dp_report_hung(dp, ids, nid, more, now - since);
	fprintf(stderr,
		"oood[executor]: a control request waited %llu ms for GPU work, and work has run past "
		"kernel_time_limit_ms %llu; giving the context up, exiting\n",
		(unsigned long long)((now - t0) / 1000000u), (unsigned long long)(dp->kernel_limit_ns / 1000000u));
	fflush(NULL);
	_exit(1);
}

/* Between a control request's looks at its events: yield the first 1000 times, then sleep 100 us. */
static void wait_pause(unsigned n)
{
	if (n < 1000)
		sched_yield();
	else
		usleep(100);
}

/* Another serving thread gave the context up or lost it while a control request waited: out. */
static void fatal_elsewhere(const struct datapath *dp)
{
	if (!dp->fatal_all || !atomic_load_explicit(dp->fatal_all, memory_order_acquire))
		return;
	/* the executor ends, and this wait would not: a moment for that thread to post what it can */
	usleep(50000);
	fprintf(stderr, "oood[executor]: a control request waited for GPU work while another serving "
			"thread gave the context up; exiting\n");
	fflush(NULL);
	_exit(1);
}

void dp_sync(struct datapath *dp, struct dp_queue *q, CUevent ev)
{
	CUevent own = NULL;
	uint64_t t0, looked = 0;
	struct own_watch w = { .q = ev ? NULL : q };

	if (!dp->kernel_limit_ns) {
		if (ev)
			dp->api->p_cuEventSynchronize(ev);
		else if (q)
			dp->api->p_cuStreamSynchronize(q->stream);
		return;
	}
	if (!ev) {
		if (!q)
			return;
		if (ev_get(dp, &own) < 0 || dp->api->p_cuEventRecord(own, q->stream) != CUDA_SUCCESS) {
			if (own)
				ev_put(dp, own);
			dp->api->p_cuStreamSynchronize(q->stream); /* no event to poll: as before the limit */
			return;
		}
		ev = own;
	}
	t0 = dp_now_ns();
	w.since = t0;
	for (unsigned n = 0; dp->api->p_cuEventQuery(ev) == CUDA_ERROR_NOT_READY; n++) {
		uint64_t now = dp_now_ns(), since = 0;
		struct dp_session *who = NULL;
		struct dp_bundle *ob = NULL;

		fatal_elsewhere(dp);
		if (now - looked >= DP_HUNG_EVERY_NS) {
			looked = now;
			if (overdue_first(dp, &w, w.q ? 1 : 0, now, &since, &ob, &who))
				give_up(dp, ob, who, since, now, t0);
		}
		wait_pause(n);
	}
	if (own)
		ev_put(dp, own);
}

/*
 * Wait until s's queues (or only queue `only`) have run what they hold now
 * (their streams and the bundles they last joined), with the serving
 * thread's lock released between looks (u), so that the other sessions of
 * the thread are served meanwhile: s is paused (its submissions are not
 * taken, its completions not reaped: its queues stay as they are), the
 * looks at the time limit (every DP_HUNG_EVERY_NS) take the lock. False if
 * an event could not be recorded (nothing done: the caller waits the
 * locked way). Called with the lock.
 */
static bool quiesce_unlocked(struct datapath *dp, struct dp_session *s, const struct dp_queue *only,
			     const struct dp_unlock *u)
{
	struct own_watch *w = calloc(s->nq ? s->nq : 1, sizeof(*w));
	CUevent *own = calloc(s->nq ? s->nq : 1, sizeof(*own)), *last = calloc(s->nq ? s->nq : 1, sizeof(*last));
	uint32_t nw = 0;
	uint64_t t0, looked = 0;
	bool ok = w && own && last;

	for (uint32_t j = 0; ok && j < s->nq; j++) {
		struct dp_queue *q = s->queues[s->qlist[j]];

		if (only && q != only)
			continue;
		if (ev_get(dp, &own[nw]) < 0 || dp->api->p_cuEventRecord(own[nw], q->stream) != CUDA_SUCCESS) {
			if (own[nw])
				ev_put(dp, own[nw]);
			ok = false;
			break;
		}
		w[nw] = (struct own_watch){ .q = q };
		last[nw++] = co_queue_last_end(q);
	}
	if (!ok)
		goto out;
	s->paused = true;
	t0 = dp_now_ns();
	for (uint32_t i = 0; i < nw; i++)
		w[i].since = t0;
	u->unlock(u->arg);
	for (unsigned n = 0;; n++) {
		uint64_t now, since = 0;
		struct dp_session *who = NULL;
		struct dp_bundle *ob = NULL;
		bool done = true;

		for (uint32_t i = 0; i < nw; i++) {
			/* (a fault ends the wait as well: the executor ends with it) */
			if (last[i] && dp->api->p_cuEventQuery(last[i]) != CUDA_ERROR_NOT_READY)
				last[i] = NULL;
			if (last[i] || (w[i].q && dp->api->p_cuEventQuery(own[i]) == CUDA_ERROR_NOT_READY))
				done = false;
			else
				w[i].q = NULL; /* this queue has run it all */
		}
		if (done)
			break;
		fatal_elsewhere(dp);
		if (dp->kernel_limit_ns && dp_now_ns() - looked >= DP_HUNG_EVERY_NS) {
			u->lock(u->arg);
			looked = now = dp_now_ns();
			if (overdue_first(dp, w, nw, now, &since, &ob, &who))
				give_up(dp, ob, who, since, now, t0);
			u->unlock(u->arg);
		}
		wait_pause(n);
	}
	u->lock(u->arg);
	s->paused = false;
out:
	for (uint32_t i = 0; i < nw; i++)
		ev_put(dp, own[i]);
	free(w);
	free(own);
	free(last);
	return ok;
}

/*
 * What s's tenant submitted before its request (it writes its ring before
 * it asks oood) is taken first, as cuMemFree waits for work launched
 * before it: else a free could pass a launch still in the ring, and the
 * launch run after it on memory given to someone else.
 */
static void take_all(struct datapath *dp, struct dp_session *s)
{
	bool moved = false;

	if (!s->base || s->paused)
		return;
	dp->now_ns = dp_now_ns();
	/* what ended is reaped first: a fifo full of ended pendings would stop the taking */
	if (s->inflight)
		moved = reap(dp, s, dp->now_ns);
	for (unsigned i = 0; !s->broken && i < 64; i++) { /* (64 x DP_BATCH: more than a ring holds) */
		if (!take_submissions(dp, s, dp->now_ns))
			break;
		moved = true;
		if (s->blocked)
			break; /* a queue full: the rest waits, as it would for the serving thread */
	}
	if (moved || s->cq_dirty) {
		ring_publish(&s->cq);
		s->cq_dirty = false;
	}
}

/*
 * s's held commands issued, then what its queues (or only queue `only`)
 * hold run: unlocked when u is given (quiesce_unlocked). take: what the
 * tenant submitted before is taken first (take_all); not for a session
 * whose tenant has gone (its detach), whose unread submissions are dropped.
 */
static void session_drain(struct datapath *dp, struct dp_session *s, struct dp_queue *only, bool take,
			  const struct dp_unlock *u)
{
	if (take)
		take_all(dp, s);
	if (u) {
		co_flush_issue(dp, s);
		if (quiesce_unlocked(dp, s, only, u))
			return;
	}
	co_flush_session(dp, s); /* held launches may name the memory that goes next */
	for (int i = 0; i < DP_MAX_QUEUES; i++) {
		if (s->queues[i] && (!only || s->queues[i] == only))
			dp_sync(dp, s->queues[i], NULL);
	}
}

static void ev_put(struct datapath *dp, CUevent ev)
{
	if (dp->nev == dp->evcap) {
		uint32_t cap = dp->evcap ? dp->evcap * 2 : 256;
		CUevent *p = realloc(dp->evpool, cap * sizeof(*p));
		if (!p) {
			dp->api->p_cuEventDestroy(ev);
			return;
		}
		dp->evpool = p;
		dp->evcap = cap;
	}
	dp->evpool[dp->nev++] = ev;
}

struct dp_session *dp_session_get(struct datapath *dp, uint64_t id, bool create)
{
	struct dp_session *s;

	for (s = dp->sessions; s; s = s->next) {
		if (s->id == id)
			return s;
	}
	if (!create)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->id = id;
	s->memfd = s->bell = -1;
	s->next = dp->sessions;
	dp->sessions = s;
	atomic_fetch_add_explicit(&dp->nsessions, 1, memory_order_release);
	return s;
}

static bool sealed(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) == (F_SEAL_SHRINK | F_SEAL_GROW);
}

int dp_attach(struct datapath *dp, uint64_t id, int memfd, int bell, uint64_t size, uint32_t sq_n,
	      uint32_t cq_n, bool reset, char *why, size_t cap)
{
	dp_co_ensure(dp);
	struct dp_session *s = dp_session_get(dp, id, true);
	struct stat st;
	CUresult cr;
	char e[160];

	if (!s) {
		snprintf(why, cap, "out of memory");
		goto err;
	}
	if (s->base) {
		snprintf(why, cap, "session %llu is already attached", (unsigned long long)id);
		goto err;
	}
	/* a tenant must not be able to shrink the area under us: it would fault the executor */
	if (fstat(memfd, &st) < 0 || (uint64_t)st.st_size != size || !sealed(memfd)) {
		snprintf(why, cap, "the session area is not a sealed memfd of %llu bytes", (unsigned long long)size);
		goto err;
	}
	if (ring_compute(size, sq_n, cq_n, &s->h) < 0) {
		snprintf(why, cap, "bad ring shape");
		goto err;
	}
	s->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (s->base == MAP_FAILED) {
		s->base = NULL;
		snprintf(why, cap, "mmap: %s", strerror(errno));
		goto err;
	}
	s->size = size;
	cr = dp->api->p_cuMemHostRegister(s->base, size, CU_MEMHOSTREGISTER_DEVICEMAP);
	if (cr != CUDA_SUCCESS) {
		snprintf(why, cap, "cuMemHostRegister: %s", cuda_strerror(dp->api, cr, e, sizeof(e)));
		munmap(s->base, size);
		s->base = NULL;
		goto err;
	}
	s->registered = true;
	ring_init(&s->sq, s->base, size, s->h.sq_ctl_off, s->h.sq_off, sq_n, sizeof(struct ooo_sqe), bell, false);
	ring_init(&s->cq, s->base, size, s->h.cq_ctl_off, s->h.cq_off, cq_n, sizeof(struct ooo_cqe), bell, true);
	if (reset) {
		/* skip what was submitted to the executor that died: the tenant was told it failed */
		s->sq.mine = s->sq.theirs = __atomic_load_n(&s->sq.ctl->tail, __ATOMIC_ACQUIRE);
		ring_release(&s->sq);
	}
	s->memfd = memfd;
	s->bell = bell;
	return 0;
err:
	close(memfd);
	close(bell);
	return -EINVAL;
}

static void queue_destroy(struct datapath *dp, struct dp_queue *q)
{
	co_queue_destroy(dp, q); /* its held commands are issued first */
	dp_sync(dp, q, NULL);
	while (q->len) {
		struct dp_pending *p = &q->fifo[q->head];

		if (p->b)
			co_bundle_put(dp, p->b);
		else
			ev_put(dp, p->ev);
		q->head = (q->head + 1) % DP_QUEUE_DEPTH;
		q->len--;
		dp->inflight--;
		if (q->s)
			q->s->inflight--;
	}
	if (q->direct_n)
		dp->tails--;
	dp->api->p_cuStreamDestroy(q->stream);
	free(q);
}

int dp_cuda_priority(int least, int greatest, int priority)
{
	return least + (greatest - least) * priority / 99;
}

int dp_queue(struct datapath *dp, uint64_t id, uint32_t queue, bool create, int priority, uint32_t slo_us,
	     const char *klass, const struct dp_unlock *u, char *why, size_t cap)
{
	struct dp_session *s = dp_session_get(dp, id, false);
	struct dp_queue *q;
	CUresult cr;
	char e[160];

	if (!s || !s->base || queue >= DP_MAX_QUEUES) {
		snprintf(why, cap, "no such session or queue");
		return -ENOENT;
	}
	if (!create) {
		if (!s->queues[queue])
			return -ENOENT;
		if (u) /* its work runs out first, the serving thread's other sessions served meanwhile */
			session_drain(dp, s, s->queues[queue], true, u);
		queue_destroy(dp, s->queues[queue]);
		s->queues[queue] = NULL;
		s->queue_live[queue] = 0;
		for (uint32_t j = 0; j < s->nq; j++)
			if (s->qlist[j] == queue) {
				s->qlist[j] = s->qlist[--s->nq];
				break;
			}
		return 0;
	}
	if (s->queues[queue]) {
		snprintf(why, cap, "queue %u exists", queue);
		return -EEXIST;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	priority = priority < 0 ? 0 : priority > 99 ? 99 : priority;
	{
		int least = 0, greatest = 0, p = 0;

		if (dp->api->p_cuCtxGetStreamPriorityRange(&least, &greatest) == CUDA_SUCCESS)
			p = dp_cuda_priority(least, greatest, priority);
		cr = dp->api->p_cuStreamCreateWithPriority(&q->stream, CU_STREAM_NON_BLOCKING, p);
	}
	if (cr != CUDA_SUCCESS) {
		snprintf(why, cap, "cuStreamCreate: %s", cuda_strerror(dp->api, cr, e, sizeof(e)));
		free(q);
		return -ENOMEM;
	}
	q->live = true;
	q->s = s;
	q->idx = (uint16_t)queue;
	q->slo_us = slo_us;
	q->prio = (uint8_t)priority;
	co_queue_created(dp, q, klass);
	s->cls = q->cls;
	s->has_cls = true;
	s->queues[queue] = q;
	s->queue_live[queue] = 1;
	s->qlist[s->nq++] = (uint16_t)queue;
	return 0;
}

static void session_free(struct datapath *dp, struct dp_session *s)
{
	/* first stop the work: copies may still DMA into the regions and area freed below */
	co_flush_session(dp, s);
	for (int i = 0; i < DP_MAX_QUEUES; i++) {
		if (s->queues[i]) {
			queue_destroy(dp, s->queues[i]);
			s->queues[i] = NULL;
		}
	}
	s->nq = 0;
	for (int i = 0; i < DP_MAX_MODULES; i++) {
		co_module_unload(dp, s, (uint32_t)i);
		if (s->modules[i])
			dp->api->p_cuModuleUnload(s->modules[i]);
	}
	for (int i = 0; i < DP_MAX_EVENTS; i++) {
		if (s->events[i])
			dp->api->p_cuEventDestroy(s->events[i]);
	}
	for (uint32_t i = 0; i < OOO_HOST_REGIONS; i++) {
		if (s->host[i]) {
			dp->api->p_cuMemHostUnregister(s->host[i]);
			munmap(s->host[i], s->host_size[i]);
		}
	}
	for (int i = 0; i < DP_MAX_QUEUES; i++) {
		if (s->queues[i])
			queue_destroy(dp, s->queues[i]);
	}
	if (s->registered)
		dp->api->p_cuMemHostUnregister(s->base);
	if (s->base)
		munmap(s->base, s->size);
	if (s->memfd >= 0)
		close(s->memfd);
	if (s->bell >= 0)
		close(s->bell);
	vbufs_free(&s->bufs);
	free(s->fparams);
	for (int i = 0; i < DP_MAX_MODULES; i++)
		free(s->fence_why[i]);
	free(s);
}

int dp_detach(struct datapath *dp, uint64_t id, const struct dp_unlock *u)
{
	struct dp_session **pp, *gone = dp_session_get(dp, id, false);

	/* its work runs out first, the serving thread's other sessions served meanwhile */
	if (gone && u)
		session_drain(dp, gone, NULL, false, u);
	/* a fenced session's window goes back (once nothing of it is mapped there) for the next session */
	for (pp = &dp->sessions; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id) {
			struct dp_session *s = *pp;
			*pp = s->next;
			atomic_fetch_sub_explicit(&dp->nsessions, 1, memory_order_release);
			session_free(dp, s);
			if (dp->fence && dp->mem)
				memory_window_release(dp->mem, id);
			return 0;
		}
	}
	if (dp->fence && dp->mem)
		memory_window_release(dp->mem, id);
	return -ENOENT;
}

void dp_session_quiesce(struct datapath *dp, uint64_t id, const struct dp_unlock *u)
{
	struct dp_session *s = dp_session_get(dp, id, false);

	if (s)
		session_drain(dp, s, NULL, true, u);
}

void dp_fini(struct datapath *dp)
{
	while (dp->sessions) {
		struct dp_session *s = dp->sessions;
		dp->sessions = s->next;
		atomic_fetch_sub_explicit(&dp->nsessions, 1, memory_order_release);
		session_free(dp, s);
	}
	co_stop(dp);
	while (dp->nev)
		dp->api->p_cuEventDestroy(dp->evpool[--dp->nev]);
	free(dp->evpool);
	dp->evpool = NULL;
}

/*
 * A fenced executor loads a module only with its kernels fenced
 * (jit_fence_all: each kernel replaced by KERNEL_ooo_fenced, the whole
 * output proven by the checker). *out: the text to load (malloc'd); *whyk:
 * "KERNEL: reason" lines of the kernels that could not be fenced, or NULL.
 */
static int fence_module(const char *ptx, char **out, char **whyk, char *why, size_t cap)
{
	struct ptx_module *pm = NULL;
	struct jit_buf b = { 0 }, w = { 0 };
	unsigned n = 0;
	char err[256];
	int rc;

	*out = NULL;
	*whyk = NULL;
	rc = ptx_parse(ptx, strlen(ptx), &pm, err, sizeof(err));
	if (rc < 0) {
		snprintf(why, cap, "this session is fenced, and its PTX cannot be read to fence it: %s",
			 rc == -ENOMEM ? "out of memory" : err);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	rc = jit_fence_all(pm, &b, &n, &w, err, sizeof(err));
	ptx_module_free(pm);
	if (rc < 0 || !(*out = malloc(b.len + 1))) {
		snprintf(why, cap, "this session is fenced, and its module cannot be fenced: %s",
			 rc == -EINVAL ? err : "out of memory");
		jit_buf_free(&b);
		jit_buf_free(&w);
		return rc < 0 ? rc : -ENOMEM;
	}
	memcpy(*out, b.data, b.len);
	(*out)[b.len] = '\0';
	if (w.len && (*whyk = malloc(w.len + 1))) {
		memcpy(*whyk, w.data, w.len);
		(*whyk)[w.len] = '\0';
	}
	jit_buf_free(&b);
	jit_buf_free(&w);
	return 0;
}

int dp_module_slot(struct datapath *dp, uint64_t id, uint32_t want, char *why, size_t cap)
{
	struct dp_session *s = dp_session_get(dp, id, true);
	int m;

	if (!s) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	if (want) {
		m = (int)want - 1;
		if (want > DP_MAX_MODULES || s->modules[m] || s->mlost[m]) {
			snprintf(why, cap, "module slot %u is taken or out of range", want - 1);
			return -EEXIST;
		}
		return m;
	}
	for (m = 0; m < DP_MAX_MODULES && (s->modules[m] || s->mlost[m]); m++)
		;
	if (m == DP_MAX_MODULES) {
		snprintf(why, cap, "the session has %d modules loaded", DP_MAX_MODULES);
		return -EMFILE;
	}
	return m;
}

int dp_module_build(struct datapath *dp, uint32_t kind, int fd, uint64_t len, bool parse, struct dp_module_img *img,
		    char *why, size_t cap)
{
	char jitlog[4096] = "";
	CUjit_option opt[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *val[2] = { jitlog, (void *)(uintptr_t)sizeof(jitlog) };
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS), rc = 0;
	char *image = NULL, *ptx = NULL;
	void *map;
	CUresult r;

	*img = (struct dp_module_img){ 0 };
	/* the image must not change while we read it, nor shrink under our mapping */
	if (seals < 0 || (seals & (F_SEAL_WRITE | F_SEAL_SHRINK)) != (F_SEAL_WRITE | F_SEAL_SHRINK) || fstat(fd, &st) < 0 ||
	    (uint64_t)st.st_size < len || !len) {
		snprintf(why, cap, "the module image is not a sealed memfd of %llu bytes", (unsigned long long)len);
		return -EINVAL;
	}
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		snprintf(why, cap, "cannot map the module image: %s", strerror(errno));
		return -ENOMEM;
	}
	image = malloc(len + 1);
	if (image) {
		memcpy(image, map, len);
		image[len] = '\0'; /* PTX is text: cuModuleLoadData wants it terminated */
	}
	munmap(map, len);
	if (!image) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	if (kind == OOO_MODULE_CUDA_C) {
		rc = nvrtc_compile(image, len, dp->cc_major, dp->cc_minor, &ptx, why, cap);
		free(image);
		if (rc < 0)
			return rc;
		image = ptx;
	} else if (kind == OOO_MODULE_PTX && memchr(image, '\0', len)) {
		free(image);
		snprintf(why, cap, "PTX text contains a NUL byte");
		return -EINVAL;
	}
	if (dp->fence) {
		char *fenced = NULL;

		if (kind != OOO_MODULE_PTX && kind != OOO_MODULE_CUDA_C) {
			free(image);
			snprintf(why, cap, "this session is fenced (its class has fence = yes): it loads PTX or CUDA C, "
					   "whose kernels ooo can fence, not CUBIN or FATBIN");
			return -EPERM;
		}
		rc = fence_module(image, &fenced, &img->fence_why, why, cap);
		free(image);
		if (rc < 0)
			return rc;
		image = fenced;
	}
	r = dp->api->p_cuModuleLoadDataEx(&img->mod, image, 2, opt, val);
	if (r == CUDA_SUCCESS && parse && kind != OOO_MODULE_CUBIN && kind != OOO_MODULE_FATBIN)
		img->pm = co_module_parse(image, strlen(image));
	free(image);
	if (r != CUDA_SUCCESS) {
		char e[128];

		free(img->fence_why);
		*img = (struct dp_module_img){ 0 };
		if (jitlog[0])
			snprintf(why, cap, "%s", jitlog);
		else
			snprintf(why, cap, "cuModuleLoadData: %s", cuda_strerror(dp->api, r, e, sizeof(e)));
		return r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EINVAL;
	}
	return 0;
}

void dp_module_img_free(struct datapath *dp, struct dp_module_img *img)
{
	if (!img)
		return;
	if (img->mod)
		dp->api->p_cuModuleUnload(img->mod);
	co_pmod_free(img->pm);
	free(img->fence_why);
	*img = (struct dp_module_img){ 0 };
}

int dp_module_install(struct datapath *dp, uint64_t id, uint32_t slot, struct dp_module_img *img, char *why,
		      size_t cap)
{
	struct dp_session *s = dp_session_get(dp, id, false);

	if (!s || slot >= DP_MAX_MODULES || s->modules[slot] || s->mlost[slot]) {
		snprintf(why, cap, "module slot %u was taken while the module loaded", slot);
		dp_module_img_free(dp, img);
		return -EEXIST;
	}
	s->modules[slot] = img->mod;
	free(s->fence_why[slot]);
	s->fence_why[slot] = img->fence_why;
	co_module_install(dp, s, slot, img->pm);
	*img = (struct dp_module_img){ 0 };
	return 0;
}

int dp_host_map(struct datapath *dp, uint64_t id, uint32_t region, int fd, uint64_t size, char *why, size_t cap)
{
	struct dp_session *s = dp_session_get(dp, id, true);
	struct stat st;
	CUresult r;
	void *p;

	if (!s || region >= OOO_HOST_REGIONS || s->host[region]) {
		snprintf(why, cap, "bad or busy host region %u", region);
		return -EINVAL;
	}
	if (dp->fence) {
		/* its kernels could reach the region through its device mapping, outside the session's window */
		snprintf(why, cap, "this session is fenced (its class has fence = yes): its kernels reach only its "
				   "device buffers, so zero-copy host memory is not available to it");
		return -EPERM;
	}
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != size || !sealed(fd)) {
		snprintf(why, cap, "the host region is not a sealed memfd of %llu bytes", (unsigned long long)size);
		return -EINVAL;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		snprintf(why, cap, "mmap: %s", strerror(errno));
		return -ENOMEM;
	}
	r = dp->api->p_cuMemHostRegister(p, size, CU_MEMHOSTREGISTER_DEVICEMAP);
	if (r != CUDA_SUCCESS) {
		char e[128];
		snprintf(why, cap, "cuMemHostRegister: %s", cuda_strerror(dp->api, r, e, sizeof(e)));
		munmap(p, size);
		return -ENOMEM;
	}
	s->host[region] = p;
	s->host_size[region] = size;
	return 0;
}

int dp_host_unmap(struct datapath *dp, uint64_t id, uint32_t region, const struct dp_unlock *u)
{
	struct dp_session *s = dp_session_get(dp, id, false);

	if (!s || region >= OOO_HOST_REGIONS || !s->host[region])
		return -ENOENT;
	/* copies in flight may still read or write it */
	session_drain(dp, s, NULL, true, u);
	dp->api->p_cuMemHostUnregister(s->host[region]);
	munmap(s->host[region], s->host_size[region]);
	s->host[region] = NULL;
	s->host_size[region] = 0;
	return 0;
}

int dp_module_lost(struct datapath *dp, uint64_t id, uint32_t module)
{
	struct dp_session *s = dp_session_get(dp, id, true);

	if (!s)
		return -ENOMEM;
	if (module >= DP_MAX_MODULES || s->modules[module])
		return -EEXIST;
	s->mlost[module] = true;
	return 0;
}

int dp_kernel_lost(struct datapath *dp, uint64_t id, uint32_t module, uint32_t kernel)
{
	struct dp_session *s = dp_session_get(dp, id, false);

	if (!s || module >= DP_MAX_MODULES || kernel >= DP_MAX_KERNELS || s->kmodule[kernel])
		return -EEXIST;
	s->kmodule[kernel] = (uint16_t)(module + 1); /* freed with its module (unload), never launched */
	s->kernels[kernel].live = false;
	return 0;
}

int dp_module_unload(struct datapath *dp, uint64_t id, uint32_t module, const struct dp_unlock *u)
{
	struct dp_session *s = dp_session_get(dp, id, false);

	if (s && module < DP_MAX_MODULES && s->mlost[module]) {
		/* a lost slot: nothing ran from it, only its reserved kernel indices go */
		s->mlost[module] = false;
		for (int k = 0; k < DP_MAX_KERNELS; k++)
			if (s->kmodule[k] == module + 1)
				s->kmodule[k] = 0;
		return 0;
	}
	if (!s || module >= DP_MAX_MODULES || !s->modules[module])
		return -ENOENT;
	/* what the session submitted and holds runs first (without the lock, with u): then nothing of it waits */
	session_drain(dp, s, NULL, true, u);
	co_module_unload(dp, s, module);
	/* its kernels go with it: later launches of them are refused */
	for (int k = 0; k < DP_MAX_KERNELS; k++) {
		if (s->kmodule[k] == module + 1) {
			s->kmodule[k] = 0;
			s->kernels[k].live = false;
		}
	}
	dp->api->p_cuModuleUnload(s->modules[module]);
	s->modules[module] = NULL;
	free(s->fence_why[module]);
	s->fence_why[module] = NULL;
	return 0;
}

int dp_kernel_get(struct datapath *dp, uint64_t id, uint32_t module, const char *name, uint32_t want,
		  struct ooo_msg_kernel *out, char *why, size_t cap)
{
	struct dp_session *s = dp_session_get(dp, id, false);
	const struct cuda_api *api = dp->api;
	char fname[OOO_KERNEL_NAME_MAX + 16];
	const char *fn = name;
	uint32_t fence_off = 0;
	CUfunction f;
	CUresult r;
	int k, v;

	memset(out, 0, sizeof(*out));
	if (s && module < DP_MAX_MODULES && s->mlost[module]) {
		snprintf(why, cap, "module %u was lost when the GPU executor restarted: unload it and load it again", module);
		return -ENOENT;
	}
	if (!s || module >= DP_MAX_MODULES || !s->modules[module]) {
		snprintf(why, cap, "no module %u in this session", module);
		return -ENOENT;
	}
	if (dp->fence) {
		/* only the fenced copy runs here (the module holds no other: jit_fence_all replaced it) */
		const char *w = s->fence_why[module], *l;
		size_t nl = strlen(name);

		snprintf(fname, sizeof(fname), "%s_ooo_fenced", name);
		fn = fname;
		if (api->p_cuModuleGetFunction(&f, s->modules[module], fn) != CUDA_SUCCESS) {
			for (l = w; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
				if (!strncmp(l, name, nl) && l[nl] == ':')
					break;
			if (l && *l) {
				snprintf(why, cap, "this session is fenced and %.*s", (int)(strcspn(l, "\n")), l);
				return -EPERM;
			}
			snprintf(why, cap, "module %u has no kernel '%.120s'", module, name);
			return -ENOENT;
		}
	}
	r = api->p_cuModuleGetFunction(&f, s->modules[module], fn);
	if (r != CUDA_SUCCESS) {
		snprintf(why, cap, "module %u has no kernel '%.120s'", module, name);
		return -ENOENT;
	}
	if (want) {
		k = (int)want - 1;
		if (want > DP_MAX_KERNELS || s->kmodule[k]) {
			snprintf(why, cap, "kernel index %u is taken or out of range", want - 1);
			return -EEXIST;
		}
	} else {
		for (k = 0; k < DP_MAX_KERNELS && s->kmodule[k]; k++)
			;
		if (k == DP_MAX_KERNELS) {
			snprintf(why, cap, "the session has %d kernels", DP_MAX_KERNELS);
			return -EMFILE;
		}
	}
	for (uint32_t i = 0;; i++) {
		size_t off = 0, sz = 0;

		if (api->p_cuFuncGetParamInfo(f, i, &off, &sz) != CUDA_SUCCESS)
			break;
		if (i >= OOO_MAX_PARAMS) {
			snprintf(why, cap, "kernel '%.120s' has more than %u parameters", name, OOO_MAX_PARAMS);
			return -E2BIG;
		}
		out->param_offset[i] = (uint32_t)off;
		out->param_bytes[i] = (uint32_t)sz;
		out->nparams = i + 1;
		if (off + sz > out->param_size)
			out->param_size = (uint32_t)(off + sz);
	}
	if (dp->fence) {
		/* the window is the last two parameters: the tenant sees, and passes, the others */
		uint32_t n = out->nparams;

		if (n < 2 || out->param_bytes[n - 2] != 8 || out->param_bytes[n - 1] != 8 ||
		    out->param_offset[n - 1] != out->param_offset[n - 2] + 8) {
			snprintf(why, cap, "fenced kernel '%.120s' lacks its window parameters", name);
			return -EINVAL;
		}
		fence_off = out->param_offset[n - 2];
		out->param_offset[n - 2] = out->param_offset[n - 1] = 0;
		out->param_bytes[n - 2] = out->param_bytes[n - 1] = 0;
		out->nparams = n - 2;
		out->param_size = 0;
		for (uint32_t i = 0; i < out->nparams; i++)
			if (out->param_offset[i] + out->param_bytes[i] > out->param_size)
				out->param_size = out->param_offset[i] + out->param_bytes[i];
	}
	if (api->p_cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) == CUDA_SUCCESS)
		out->max_threads = (uint32_t)v;
	if (api->p_cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS)
		out->static_shmem = (uint32_t)v;
	if (api->p_cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS)
		out->max_dyn_shmem = (uint32_t)v;
	if (api->p_cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_SUCCESS)
		out->regs = (uint32_t)v;
	s->funcs[k] = f;
	s->kmodule[k] = (uint16_t)(module + 1);
	s->kfence[k] = fence_off;
	/* the coalescer fuses what runs: the fenced copy, its window included in each member's parameters */
	co_kernel_got(dp, s, module, (uint32_t)k, fn, dp->fence ? fence_off + 16 : out->param_size);
	s->kernels[k] = (struct vkernel){ .live = true,
					  .param_size = out->param_size,
					  .max_threads = out->max_threads,
					  .max_dyn_shmem = out->max_dyn_shmem };
	out->kernel = (uint32_t)k;
	return 0;
}

/* Post a completion; false if the tenant's completion ring is full. */
bool dp_post(struct dp_session *s, uint64_t user_data, uint16_t queue, uint8_t op, int32_t status)
{
	struct ooo_cqe *c = ring_reserve(&s->cq);

	if (!c)
		return false;
	memset(c, 0, sizeof(*c));
	c->user_data = user_data;
	c->queue = queue;
	c->opcode = op;
	c->status = status;
	return true;
}

bool dp_sticky(CUresult r)
{
	return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED || r == CUDA_ERROR_ILLEGAL_INSTRUCTION ||
	       r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_INVALID_ADDRESS_SPACE ||
	       r == CUDA_ERROR_INVALID_PC || r == CUDA_ERROR_HARDWARE_STACK_ERROR || r == CUDA_ERROR_ECC_UNCORRECTABLE ||
	       r == CUDA_ERROR_CONTEXT_IS_DESTROYED || r == CUDA_ERROR_LAUNCH_TIMEOUT || r == CUDA_ERROR_UNKNOWN ||
	       r == CUDA_ERROR_ASSERT;
}

/*
 * Whether r is what a kernel's own fault leaves (an illegal access or
 * instruction, a trap): the tenants' doing, unlike a lost device or an
 * allocation that failed.
 */
static bool dp_kernel_fault(CUresult r)
{
	return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_FAILED || r == CUDA_ERROR_ILLEGAL_INSTRUCTION ||
	       r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_INVALID_ADDRESS_SPACE ||
	       r == CUDA_ERROR_INVALID_PC || r == CUDA_ERROR_HARDWARE_STACK_ERROR || r == CUDA_ERROR_ASSERT;
}

/*
 * The context was just found gone: note the sessions whose work was on the
 * GPU then (commands issued and not reaped, the bundles running), one of
 * which faulted. A sticky error is the whole context's: the command whose
 * query saw it first need not be the one that faulted, so every session
 * with work in flight is named, never fewer (a session left out could be
 * the culprit, and the fault be counted against another).
 */
static void dp_note_inflight(struct datapath *dp)
{
	dp->inflight_n = dp->inflight_more = 0;
	co_inflight_sessions(dp, dp->inflight_ids, EXEC_HUNG_MAX, &dp->inflight_n, &dp->inflight_more);
	for (struct dp_session *s = dp->sessions; s; s = s->next)
		for (uint32_t j = 0; s->base && j < s->nq; j++) {
			const struct dp_queue *q = s->queues[s->qlist[j]];

			/* commands waiting for their completion, or issued on the queue's stream with none behind them */
			if (q && (q->len || q->direct_n)) {
				dp_ids_add(s->id, dp->inflight_ids, EXEC_HUNG_MAX, &dp->inflight_n, &dp->inflight_more);
				break;
			}
		}
}

/* Send oood report type (EXEC_MSG_HUNG or _FAULT), never blocking; `what` words a failure for the log. */
static void send_report(uint16_t type, const struct exec_hung *h, const char *what)
{
	unsigned char buf[sizeof(struct ooo_msg_hdr) + sizeof(*h)];
	ssize_t len = wire_encode(buf, sizeof(buf), type, 0, 0, h, sizeof(*h));

	if (len > 0 && send(EXEC_CTL_FD, buf, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL) != len)
		fprintf(stderr, "oood[executor]: could not tell oood %s: %s\n", what, strerror(errno));
}

/*
 * The status for a command of session s that ended with the context's loss
 * (st): OOO_EFAULT says "your kernel faulted", so it goes to s only when s
 * was certainly the culprit: the only session with work on the GPU when
 * this thread found the context gone, and no other serving thread holding
 * sessions (their work is not known here). Otherwise the fault may have
 * been another tenant's: OOO_EDEVRESET, as every tenant of the context
 * gets. Other statuses pass unchanged.
 */
static int32_t dp_blame(const struct datapath *dp, const struct dp_session *s, int32_t st)
{
	if (st != -OOO_EFAULT)
		return st;
	if (dp->inflight_n != 1 || dp->inflight_more || dp->inflight_ids[0] != s->id)
		return -OOO_EDEVRESET;
	for (uint32_t i = 0; i < dp->npeers; i++)
		if (dp->peers[i] != dp && atomic_load_explicit(&dp->peers[i]->nsessions, memory_order_acquire))
			return -OOO_EDEVRESET;
	return st;
}

void dp_report_fault(struct datapath *const *dps, uint32_t n)
{
	struct exec_hung h = { 0 };

	for (uint32_t i = 0; i < n; i++) {
		h.more += dps[i]->inflight_more;
		for (uint32_t k = 0; k < dps[i]->inflight_n; k++)
			dp_ids_add(dps[i]->inflight_ids[k], h.session, EXEC_HUNG_MAX, &h.n, &h.more);
	}
	send_report(EXEC_MSG_FAULT, &h, "which sessions had work at the fault");
}

void dp_set_fatal(struct datapath *dp, CUresult r, const char *what)
{
	char e[128];

	if (dp->fatal)
		return;
	dp->fatal = true;
	dp_note_inflight(dp);
	dp->fault = dp_kernel_fault(r);
	snprintf(dp->fatal_why, sizeof(dp->fatal_why), "%s: %s", what, cuda_strerror(dp->api, r, e, sizeof(e)));
	if (dp->fatal_all)
		atomic_store_explicit(dp->fatal_all, true, memory_order_release); /* the other shards stop issuing */
}

/* Has this shard, or another serving thread of the executor, found the context gone? */
static bool dp_dead(struct datapath *dp)
{
	if (dp->fatal)
		return true;
	if (!dp->fatal_all || !atomic_load_explicit(dp->fatal_all, memory_order_acquire))
		return false;
	dp->fatal = true;
	dp_note_inflight(dp);
	snprintf(dp->fatal_why, sizeof(dp->fatal_why), "another serving thread found the context lost");
	return true;
}

/* The host side of a validated copy: staging, or a host region. */
void *dp_host_ptr(struct dp_session *s, uint64_t addr)
{
	uint64_t tag = addr >> OOO_HOST_TAG_SHIFT, off = addr & ((1ull << OOO_HOST_TAG_SHIFT) - 1);

	if (!tag)
		return (unsigned char *)s->base + s->h.staging_off + off;
	return (unsigned char *)s->host[tag - 1] + off;
}

/*
 * Record p's event on q's stream, behind the commands issued there since
 * the last pending: p (at the fifo's tail, issued_ns set) completes them,
 * for the kernel time limit (overdue_pending). Counts it in flight.
 */
static int pending_push(struct datapath *dp, struct dp_queue *q, struct dp_pending *p)
{
	p->hung = false;
	p->status = 0;
	p->notify = false;
	p->steps = (uint16_t)(q->direct_n > UINT16_MAX ? UINT16_MAX : q->direct_n ? q->direct_n : 1);
	p->untimed = q->direct_untimed;
	p->bwait = q->bwait;
	p->bw_key = q->bw_key;
	p->bw_seq = q->bw_seq;
	if (ev_get(dp, &p->ev) < 0)
		return -ENOMEM;
	if (dp->api->p_cuEventRecord(p->ev, q->stream) != CUDA_SUCCESS) {
		ev_put(dp, p->ev);
		return -EIO;
	}
	if (q->direct_n)
		dp->tails--;
	q->direct_n = 0;
	q->direct_untimed = q->bwait = false;
	q->len++;
	q->s->inflight++;
	dp->inflight++;
	return 0;
}

/*
 * Commands on q's own stream with no pending behind them (launches have no
 * completion of their own) get a silent one (no completion for the tenant)
 * once they have gone untimed for a quarter of the limit, so a kernel that
 * never ends there, with no sync behind it, is timed all the same: from the
 * first of them's issue (never before it could run; timed_pending takes
 * the later of that, the pending before it and the bundle the stream waits
 * for), as a sync behind them would have been. Not where the fifo is half
 * full (the tenant's own syncs need the room; theirs time it). The serving
 * loop wakes for it while such commands wait (dp_wake_ns).
 */
static void watch_tail(struct datapath *dp, struct dp_queue *q, uint64_t now)
{
	struct dp_pending *p;

	if (!q->direct_n || q->len >= DP_QUEUE_DEPTH / 2 || now < q->direct_since ||
	    now - q->direct_since < dp->kernel_limit_ns / 4)
		return;
	p = &q->fifo[(q->head + q->len) % DP_QUEUE_DEPTH];
	p->b = NULL;
	p->taken_ns = now;
	p->issued_ns = q->direct_since;
	p->user_data = 0;
	p->opcode = OOO_OP_NOP;
	if (pending_push(dp, q, p) < 0)
		q->direct_since = now; /* no event now: not again before another quarter */
}

/*
 * Issue one validated submission on its queue's own stream (a launch's
 * parameters at params, or in staging when NULL). Returns a status to post
 * at once (< 0), 0 if issued, 1 if issued with a completion to come.
 */
int dp_issue(struct datapath *dp, struct dp_session *s, const struct ooo_sqe *e, const void *params)
{
	const struct cuda_api *api = dp->api;
	struct dp_queue *q = s->queues[e->queue];
	unsigned char *stage = (unsigned char *)s->base + s->h.staging_off;
	struct dp_pending *p;
	CUresult r = CUDA_SUCCESS;
	int n;

	if ((e->flags & OOO_SQE_NOTIFY) && q->len == DP_QUEUE_DEPTH)
		return -EBUSY; /* the tenant changed the entry after we looked: refuse, never overflow */
	if (e->opcode == OOO_OP_NOP && (e->flags & OOO_SQE_NOTIFY)) {
		/* a barrier behind a bundle completes with it: no work on our stream */
		struct dp_bundle *b = co_follow(dp, q);

		if (b) {
			q->fifo[(q->head + q->len) % DP_QUEUE_DEPTH] =
				(struct dp_pending){ .b = b, .member = UINT16_MAX, .user_data = e->user_data,
						     .opcode = e->opcode, .notify = true, .taken_ns = dp->now_ns,
						     .issued_ns = dp->now_ns };
			dp_stage(dp, OOO_STAGE_QUEUE, q->cls, 0, 1);
			q->len++;
			s->inflight++;
			dp->inflight++;
			return 1;
		}
	}
	if (e->opcode != OOO_OP_NOP && (r = co_before_direct(dp, q)) != CUDA_SUCCESS)
		goto failed;
	if (e->opcode != OOO_OP_NOP) {
		q->own_dirty = true;
		if (!q->direct_n++) {
			q->direct_since = dp_now_ns();
			dp->tails++;
		}
	}
	switch (e->opcode) {
	case OOO_OP_NOP:
		break;
	case OOO_OP_HTOD:
		r = api->p_cuMemcpyHtoDAsync(e->copy.dst, dp_host_ptr(s, e->copy.src), e->copy.len, q->stream);
		break;
	case OOO_OP_DTOH:
		r = api->p_cuMemcpyDtoHAsync(dp_host_ptr(s, e->copy.dst), e->copy.src, e->copy.len, q->stream);
		break;
	case OOO_OP_DTOD:
		r = api->p_cuMemcpyDtoDAsync(e->copy.dst, e->copy.src, e->copy.len, q->stream);
		break;
	case OOO_OP_MEMSET:
		if (e->set.elsize == 1)
			r = api->p_cuMemsetD8Async(e->set.dst, (unsigned char)e->set.value, e->set.count, q->stream);
		else if (e->set.elsize == 2)
			r = api->p_cuMemsetD16Async(e->set.dst, (unsigned short)e->set.value, e->set.count, q->stream);
		else
			r = api->p_cuMemsetD32Async(e->set.dst, e->set.value, e->set.count, q->stream);
		break;
	case OOO_OP_LAUNCH: {
		size_t psize = e->launch.param_len;
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER,
				  params ? (void *)(uintptr_t)params : stage + e->launch.param_off,
				  CU_LAUNCH_PARAM_BUFFER_SIZE, &psize, CU_LAUNCH_PARAM_END };

		/* the driver copies the parameter block now: staging may be reused once we move on */
		r = api->p_cuLaunchKernel(co_kernel_fn(dp, s, e->launch.kernel), e->launch.grid[0], e->launch.grid[1],
					  e->launch.grid[2], e->launch.block[0], e->launch.block[1], e->launch.block[2],
					  e->launch.shmem, q->stream, NULL, psize ? extra : NULL);
		break;
	}
	case OOO_OP_EVENT_RECORD: {
		CUevent *ev = &s->events[e->event.event];

		if (!*ev && api->p_cuEventCreate(ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
			*ev = NULL;
			return -ENOMEM;
		}
		r = api->p_cuEventRecord(*ev, q->stream);
		break;
	}
	case OOO_OP_EVENT_WAIT:
		/* an event never recorded has nothing to wait for, as in CUDA */
		if (s->events[e->event.event]) {
			r = api->p_cuStreamWaitEvent(q->stream, s->events[e->event.event], 0);
			q->direct_untimed = true; /* another queue's work comes first: not timed here */
		}
		break;
	default:
		return -EOPNOTSUPP;
	}
failed:
	if (r != CUDA_SUCCESS) {
		if (dp_sticky(r)) {
			dp_set_fatal(dp, r, "enqueue");
			return -OOO_EFAULT;
		}
		return -EIO;
	}
	if (!(e->flags & OOO_SQE_NOTIFY)) {
		if (dp->now_ns)
			dp_stage(dp, OOO_STAGE_QUEUE, q->cls, dp_now_ns() - dp->now_ns, 1);
		return 0;
	}
	p = &q->fifo[(q->head + q->len) % DP_QUEUE_DEPTH];
	p->b = NULL;
	p->taken_ns = dp->now_ns;
	p->issued_ns = dp_now_ns();
	dp_stage(dp, OOO_STAGE_QUEUE, q->cls, p->issued_ns - p->taken_ns, 1);
	if (co_before_direct(dp, q) != CUDA_SUCCESS) /* a NOP behind a bundle that is done: nothing to wait for */
		return -EIO;
	if ((n = pending_push(dp, q, p)) < 0)
		return n;
	p->user_data = e->user_data;
	p->opcode = e->opcode;
	p->notify = true;
	return 1;
}

/*
 * A fenced session's launch: its parameters (validated: the tenant's
 * block) copied out of staging, with the session's window appended where
 * the fenced kernel takes it. The copy is ours, so the tenant cannot change
 * the window after we wrote it. Returns 0 with *params and e's length set,
 * or -ENOSPC / -ENOMEM.
 */
static int fence_params(struct datapath *dp, struct dp_session *s, struct ooo_sqe *e, const void **params)
{
	uint32_t off = s->kfence[e->launch.kernel], need = off + 16;
	uint64_t mask = ~(MEMORY_WINDOW_SIZE - 1);

	if (!s->fence_base && memory_window(dp->mem, s->id, &s->fence_base) < 0)
		return -ENOSPC;
	if (off < e->launch.param_len)
		return -EINVAL; /* cannot happen: validated against the kernel's size */
	if (need > s->fparams_cap) {
		unsigned char *p = realloc(s->fparams, need);

		if (!p)
			return -ENOMEM;
		s->fparams = p;
		s->fparams_cap = need;
	}
	if (e->launch.param_len)
		memcpy(s->fparams, (const unsigned char *)s->base + s->h.staging_off + e->launch.param_off,
		       e->launch.param_len);
	memset(s->fparams + e->launch.param_len, 0, off - e->launch.param_len);
	memcpy(s->fparams + off, &s->fence_base, 8);
	memcpy(s->fparams + off + 8, &mask, 8);
	e->launch.param_len = need;
	*params = s->fparams;
	return 0;
}

/* Event handles are the tenant's to number: any index in range is valid. */
static const uint8_t all_live[DP_MAX_EVENTS] = { [0 ... DP_MAX_EVENTS - 1] = 1 };

static bool take_submissions(struct datapath *dp, struct dp_session *s, uint64_t now)
{
	struct vsession vs = {
		.bufs = &s->bufs,
		.kernels = s->kernels,
		.nkernels = DP_MAX_KERNELS,
		.event_live = all_live,
		.nevents = DP_MAX_EVENTS,
		.host_size = s->host_size,
		.queue_live = s->queue_live,
		.nqueues = DP_MAX_QUEUES,
		.staging_size = s->h.staging_size,
	};
	bool moved = false;

	s->blocked = false;
	for (int n = 0; n < DP_BATCH; n++) {
		struct ooo_sqe e;
		const char *why;
		int r;

		{
			/* peek: pop copies the entry out; a corrupt tail ends this session's ring */
			struct ring probe = s->sq;
			r = ring_pop(&probe, &e);
			if (r < 0) {
				s->broken = true;
				break;
			}
			if (r == 0)
				break;
			/* a full queue (or backlog) stops this session until it drains */
			/* (a fenced launch's block grows by its window: 16 bytes after the kernel's own, 8-aligned) */
			uint32_t plen = e.opcode == OOO_OP_LAUNCH && dp->fence && e.launch.kernel < DP_MAX_KERNELS
						? s->kfence[e.launch.kernel] + 16
						: e.launch.param_len;

			if (e.queue < DP_MAX_QUEUES && s->queues[e.queue] &&
			    (s->queues[e.queue]->len == DP_QUEUE_DEPTH || s->queues[e.queue]->bl_len == DP_BACKLOG ||
			     (s->queues[e.queue]->bl_len && e.opcode == OOO_OP_LAUNCH && plen > DP_HOLD_PARAMS))) {
				s->blocked = true;
				break;
			}
		}
		r = ring_pop(&s->sq, &e);
		if (r < 0) {
			s->broken = true;
			break;
		}
		if (r == 0)
			break;
		moved = true;
		dp->commands++;
		if (dp_dead(dp)) {
			/*
			 * The context is gone: nothing more is issued. But a sync that
			 * came behind a bundle that faulted learns that fault, so the
			 * tenant whose kernel faulted gets OOO_EFAULT, not only the
			 * restart that every tenant of the GPU gets.
			 */
			struct dp_queue *q = e.queue < DP_MAX_QUEUES ? s->queues[e.queue] : NULL;
			int32_t st = 0;

			if (e.opcode == OOO_OP_NOP && (e.flags & OOO_SQE_NOTIFY) && q && q->last &&
			    co_bundle_done(q->last, UINT32_MAX, &st) && st < 0 &&
			    dp_post(s, e.user_data, e.queue, e.opcode, dp_blame(dp, s, st)))
				s->cq_dirty = true;
			continue;
		}
		if (e.submit_us) {
			/*
			 * Modulo 2^32 us: a stamp up to 10 s before the pass's clock
			 * read counts as it is; one up to 1 s after it is a command
			 * that came while this pass ran (now is read once per pass,
			 * before the reaping), taken within the pass: 0. Anything
			 * else is noise (another time namespace, a tenant that lies).
			 */
			uint32_t d = (uint32_t)(now / 1000u) - e.submit_us;

			if (d <= 10000000u)
				dp_stage(dp, OOO_STAGE_SUBMIT, session_cls(s), (uint64_t)d * 1000u, 1);
			else if (0u - d <= 1000000u)
				dp_stage(dp, OOO_STAGE_SUBMIT, session_cls(s), 0, 1);
			else
				dp->submit_bad++;
		}
		r = validate_sqe(&e, &vs, &why);
		if (r == 0) {
			const void *params = NULL;
			bool full;

			if (dp->fence && e.opcode == OOO_OP_LAUNCH)
				r = fence_params(dp, s, &e, &params);
			if (r == 0) {
				if (co_take(dp, s, s->queues[e.queue], &e, params, now, &full))
					continue;
				r = full ? -EBUSY : dp_issue(dp, s, &e, params);
			}
		}
		if (r < 0 && !dp_post(s, e.user_data, e.queue, e.opcode, dp_blame(dp, s, r))) {
			s->blocked = true; /* completion ring full: the tenant loses this error only if it never reads */
			break;
		}
	}
	ring_release(&s->sq);
	return moved;
}

static bool reap(struct datapath *dp, struct dp_session *s, uint64_t seen)
{
	bool moved = false;

	for (uint32_t j = 0; j < s->nq; j++) {
		uint16_t i = s->qlist[j];
		struct dp_queue *q = s->queues[i];

		while (q && q->len) {
			struct dp_pending *p = &q->fifo[q->head];
			CUresult r;

			if (p->b) {
				int32_t st = 0;

				if (!co_bundle_done(p->b, p->member, &st))
					break;
				if (st)
					p->status = st;
			} else if (p->hung) {
				p->status = -OOO_EHUNG; /* dp->fatal is set: nothing behind it is looked at */
			} else {
				r = dp->api->p_cuEventQuery(p->ev);
				if (r == CUDA_ERROR_NOT_READY)
					break;
				if (r != CUDA_SUCCESS) {
					dp_set_fatal(dp, r, "a command on the GPU");
					p->status = -OOO_EFAULT;
				}
			}
			/* a silent pending (watch_tail) posts nothing; a fault ends the executor anyway */
			if (p->b || p->notify) {
				/* a barrier behind a bundle runs from the later of its own taking and the bundle's issue */
				uint64_t issued = p->b ? co_bundle_issued(p->b) : p->issued_ns;

				if (!dp_post(s, p->user_data, (uint16_t)i, p->opcode, dp_blame(dp, s, p->status))) {
					s->blocked = true; /* ring full: try again later */
					return moved;
				}
				if (p->b && p->taken_ns > issued)
					issued = p->taken_ns;
				dp_stage(dp, OOO_STAGE_RUN, q->cls, seen > issued ? seen - issued : 0, 1);
				if (!s->posted++)
					s->seen_ns = seen;
			}
			if (p->b)
				co_bundle_put(dp, p->b);
			else
				ev_put(dp, p->ev);
			p->b = NULL;
			q->head = (q->head + 1) % DP_QUEUE_DEPTH;
			q->head_since = seen; /* the next one runs from here at the earliest */
			q->len--;
			s->inflight--;
			dp->inflight--;
			moved = true;
		}
	}
	return moved;
}

/*
 * The queue head that has run past the limit first, of the commands on
 * queues' own streams that a pending (a barrier's event) completes: it runs
 * from the later of its barrier's issue, the pending before it (the fifo's
 * head since), and the end of the bundle the stream waits for first (as
 * first seen), and gets the limit once for each command issued on the
 * stream since the pending before it. Not timed: one behind another
 * queue's event (that queue's work is timed). Its end asked once more.
 */
/* q's head pending if the time limit times it now, with when its time started (*t); else NULL. */
static struct dp_pending *timed_pending(struct datapath *dp, struct dp_queue *q, uint64_t *t)
{
	struct dp_pending *p = q && q->len ? &q->fifo[q->head] : NULL;

	if (!p || p->b || p->untimed || p->hung)
		return NULL;
	if (p->bwait) {
		uint64_t e = 0;

		if (!co_seq_ended(dp, p->bw_key, p->bw_seq, &e))
			return NULL; /* the bundle first: it is timed */
		/* the stream runs on from that end (as first seen): the head's time starts there at the latest */
		if (e > q->head_since)
			q->head_since = e;
		p->bwait = false;
	}
	*t = p->issued_ns > q->head_since ? p->issued_ns : q->head_since;
	return p;
}

static struct dp_pending *overdue_pending(struct datapath *dp, uint64_t now, uint64_t *since, struct dp_session **who)
{
	struct dp_pending *hp = NULL;

	/* (a paused session's queues are timed by the request that paused it: quiesce_unlocked) */
	for (struct dp_session *s = dp->sessions; s; s = s->next)
		for (uint32_t j = 0; s->base && !s->paused && j < s->nq; j++) {
			uint64_t t = 0;
			struct dp_queue *q = s->queues[s->qlist[j]];
			struct dp_pending *p;

			watch_tail(dp, q, now);
			p = timed_pending(dp, q, &t);
			if (p && now > t && now - t > dp->kernel_limit_ns * p->steps && (!hp || t < *since)) {
				hp = p;
				*who = s;
				*since = t;
			}
		}
	if (hp && dp->api->p_cuEventQuery(hp->ev) != CUDA_ERROR_NOT_READY)
		return NULL; /* it ended since the pass looked */
	return hp;
}

void dp_ids_add(uint64_t id, uint64_t *ids, uint32_t cap, uint32_t *n, uint32_t *more)
{
	for (uint32_t j = 0; j < *n; j++)
		if (ids[j] == id)
			return;
	if (*n < cap)
		ids[(*n)++] = id;
	else
		(*more)++; /* past cap one may count twice: only a count of those not named */
}

/*
 * A paused session's queue head as it stands, when it is timed (not behind
 * a bundle not yet seen ended): its start in *t. Only looked at, never
 * changed: the request that paused the session times its queues
 * (own_overdue), and timed_pending's changes would mislead that.
 */
static bool paused_head_since(const struct dp_queue *q, uint64_t *t)
{
	const struct dp_pending *p = q->len ? &q->fifo[q->head] : NULL;

	if (!p || p->b || p->untimed || p->hung || p->bwait)
		return false;
	*t = p->issued_ns > q->head_since ? p->issued_ns : q->head_since;
	return true;
}

/*
 * Adds to ids[] the sessions whose work on this serving thread has run past
 * min_ns: the bundles running on its streams, and the commands its queues'
 * own streams run (as the time limit times them).
 */
static void dp_long_sessions(struct datapath *dp, uint64_t now, uint64_t min_ns, uint64_t *ids, uint32_t cap,
			     uint32_t *n, uint32_t *more)
{
	co_running_past(dp, now, min_ns, ids, cap, n, more);
	for (struct dp_session *s = dp->sessions; s; s = s->next)
		for (uint32_t j = 0; s->base && j < s->nq; j++) {
			struct dp_queue *q = s->queues[s->qlist[j]];
			uint64_t t = 0;
			/* (a paused session's work may be what starves the hung one: it is named too) */
			bool timed = s->paused ? paused_head_since(q, &t) : timed_pending(dp, q, &t) != NULL;

			if (timed && now > t && now - t > min_ns)
				dp_ids_add(s->id, ids, cap, n, more);
		}
}

/*
 * With several serving threads: publish this one's work past half the limit
 * (DP_HUNG_EVERY_NS, from check_hung), for another thread's hang report.
 */
static void publish_long(struct datapath *dp, uint64_t now)
{
	uint64_t ids[EXEC_HUNG_MAX];
	uint32_t n = 0, more = 0;

	if (dp->npeers < 2)
		return;
	dp_long_sessions(dp, now, dp->kernel_limit_ns / 2, ids, EXEC_HUNG_MAX, &n, &more);
	if (!n && !more && longwork_empty(&dp->longwork))
		return; /* nothing then, nothing now */
	longwork_publish(&dp->longwork, ids, n, more);
}

/*
 * Tell oood which sessions' work hung (ids[0..n), more not named), before
 * the executor exits: once per executor. The report also names every
 * session whose work has run past half the limit, this thread's (now) and
 * the other serving threads' (as each last published it: every
 * DP_HUNG_EVERY_NS while it serves): a kernel that never ends can starve
 * other work, and work that started before the hang's own may pass the
 * limit first. A report naming several tenants counts against none
 * (dpath.c dpath_on_hung), so a starved tenant is never the one blamed.
 */
void dp_report_hung(struct datapath *dp, const uint64_t *ids, uint32_t n, uint32_t more, uint64_t ran_ns)
{
	static atomic_bool sent; /* one report per executor process */
	struct exec_hung h = { .ran_ms = ran_ns / 1000000u, .limit_ms = dp->kernel_limit_ns / 1000000u };
	uint64_t now = dp_now_ns();

	if (atomic_exchange(&sent, true))
		return;
	h.more = more;
	for (uint32_t i = 0; i < n; i++)
		dp_ids_add(ids[i], h.session, EXEC_HUNG_MAX, &h.n, &h.more);
	dp_long_sessions(dp, now, dp->kernel_limit_ns / 2, h.session, EXEC_HUNG_MAX, &h.n, &h.more);
	for (uint32_t i = 0; i < dp->npeers; i++) {
		uint64_t pid[LONGWORK_IDS];
		uint32_t pn = 0, pmore = 0;

		if (dp->peers[i] == dp)
			continue;
		if (!longwork_read(&dp->peers[i]->longwork, pid, &pn, &pmore)) {
			h.more++; /* its work is not known: the hang counts against none */
			continue;
		}
		h.more += pmore;
		for (uint32_t k = 0; k < pn; k++)
			dp_ids_add(pid[k], h.session, EXEC_HUNG_MAX, &h.n, &h.more);
	}
	send_report(EXEC_MSG_HUNG, &h, "which sessions hung");
}

/*
 * A silent pending (watch_tail) is not the tenant's: its OOO_EHUNG goes to
 * the first sync behind it on its queue's own stream (the one that waits
 * for the hung work), as if that had been timed.
 */
static void hung_to_sync(struct dp_session *s, const struct dp_pending *hp)
{
	for (uint32_t j = 0; j < s->nq; j++) {
		struct dp_queue *q = s->queues[s->qlist[j]];

		if (!q->len || hp != &q->fifo[q->head])
			continue; /* (overdue_pending's is a queue's head) */
		for (uint32_t k = 1; k < q->len; k++) {
			struct dp_pending *p = &q->fifo[(q->head + k) % DP_QUEUE_DEPTH];

			if (!p->b && p->notify) {
				p->hung = true;
				return;
			}
		}
		return;
	}
}

/*
 * The kernel time limit (oood.conf kernel_time_limit_ms): work that has
 * run longer is taken as hung. Nothing ends a running kernel but the end of
 * its process, so the context is given up: the overdue work that started
 * first, a bundle (co_overdue) or the commands a barrier waits for on a
 * queue's own stream (overdue_pending), ends with OOO_EHUNG for its
 * tenants, every serving thread stops (dp->fatal, fatal_all), and the
 * executor exits without another CUDA call (a synchronizing one would wait
 * for the kernel); oood starts a new one and the other tenants see
 * OOO_EDEVRESET, as after a fault. Called after a pass has reaped what
 * ended.
 */
static void check_hung(struct datapath *dp, uint64_t now)
{
	uint64_t tb = 0, tq = 0;
	struct dp_bundle *b = co_overdue(dp, now, &tb);
	struct dp_session *hs = NULL;
	struct dp_pending *hp = overdue_pending(dp, now, &tq, &hs);

	publish_long(dp, now);

	if (hp && b && tq >= tb)
		hp = NULL; /* the bundle started first */
	if (!b && !hp)
		return;
	dp->hung = true;
	dp->fatal = true;
	if (dp->fatal_all)
		atomic_store_explicit(dp->fatal_all, true, memory_order_release);
	if (hp) {
		uint64_t id = hs->id;

		dp_report_hung(dp, &id, 1, 0, now - tq);
		hp->hung = true; /* the next pass's reap posts it */
		if (!hp->notify)
			hung_to_sync(hs, hp);
		snprintf(dp->fatal_why, sizeof(dp->fatal_why),
			 "a queue's own stream ran %llu ms, past kernel_time_limit_ms %llu a command (session %llu)",
			 (unsigned long long)((now - tq) / 1000000u),
			 (unsigned long long)(dp->kernel_limit_ns / 1000000u), (unsigned long long)hs->id);
		return;
	}
	co_end_hung(dp, b, now, tb);
}

bool dp_progress(struct datapath *dp)
{
	bool moved = false;
	uint64_t now, seen;

	dp->pass_dispatch_ns = 0; /* pass_take_ns is set after the sessions' pass */
	dp->blocked = 0;
	if (!dp->sessions) {
		dp->pass_take_ns = 0; /* a pass over no session took nothing (serve adds both when a control message came) */
		if (!longwork_empty(&dp->longwork))
			longwork_publish(&dp->longwork, NULL, 0, 0); /* its sessions left: none of their work runs here */
		/*
		 * Compiles queued by sessions that are gone still finish: take
		 * them in (the classes stay for the next session, and the
		 * counters say so) rather than when a session next comes.
		 */
		co_idle(dp);
		return false;
	}
	now = dp_now_ns();
	dp->now_ns = now;
	(void)dp_dead(dp); /* another serving thread's sticky error: nothing more is issued here either */
	moved = co_reap(dp, now);
	/* one clock read for the sessions' pass: completions seen now, and the pass's length (vDSO reads add up) */
	seen = dp_now_ns();
	for (struct dp_session *s = dp->sessions; s; s = s->next) {
		bool m;

		if (!s->base || (s->paused && !dp->fatal))
			continue; /* (once fatal, what can be posted is, a paused session's too) */
		m = s->inflight ? reap(dp, s, seen) : false;
		if (!s->broken && !s->paused)
			m |= take_submissions(dp, s, now);
		if (m) {
			ring_publish(&s->cq);
			s->cq_dirty = false;
			moved = true;
			if (s->posted) {
				uint64_t t = dp_now_ns();

				dp_stage(dp, OOO_STAGE_NOTIFY, session_cls(s), t - s->seen_ns, s->posted);
				s->posted = 0;
			}
		}
		dp->blocked += s->blocked;
	}
	dp->pass_take_ns = dp_now_ns() - seen;
	/* the kernel time limit: looked at every DP_HUNG_EVERY_NS, not on every pass (it visits every queue) */
	if (dp->kernel_limit_ns && seen - dp->hung_checked_ns >= DP_HUNG_EVERY_NS && !dp_dead(dp)) {
		dp->hung_checked_ns = seen;
		check_hung(dp, dp_now_ns());
	}
	if (dp->co) {
		uint64_t t = dp_now_ns();

		moved |= co_progress(dp, now);
		dp->pass_dispatch_ns = dp_now_ns() - t;
		for (struct dp_session *s = dp->sessions; s; s = s->next)
			if (s->cq_dirty && s->base) {
				ring_publish(&s->cq);
				s->cq_dirty = false;
			}
	}
	return moved;
}

int dp_prepare_sleep(struct datapath *dp, struct pollfd *pfd, int max)
{
	int n = 0;

	for (struct dp_session *s = dp->sessions; s; s = s->next) {
		if (!s->base || s->broken || s->blocked || s->paused)
			continue; /* a blocked session is looked at again after a nap, a paused one when it goes on */
		if (!ring_sleep_prepare(&s->sq))
			return -1;
		if (s->bell < 0)
			continue; /* its tenant shut its doorbell: it is looked at when something else wakes us */
		if (n < max)
			pfd[n] = (struct pollfd){ .fd = s->bell, .events = POLLIN };
		n++;
	}
	return n;
}

void dp_awake(struct datapath *dp)
{
	for (struct dp_session *s = dp->sessions; s; s = s->next) {
		if (!s->base)
			continue;
		ring_awake(&s->sq);
		if (s->bell >= 0 && doorbell_drain(s->bell) <= 0) {
			/*
			 * The tenant shut its end down: the socket would stay readable
			 * and every sleep end at once. Stop waiting on it (the ring is
			 * still served; completions are no longer rung).
			 */
			close(s->bell);
			s->bell = s->sq.doorbell = s->cq.doorbell = -1;
		}
	}
}

uint64_t dp_wake_ns(const struct datapath *dp)
{
	uint64_t ns = dp->kernel_limit_ns / 8;

	if (!dp->kernel_limit_ns || !dp->tails)
		return 0;
	return ns < 1000000u ? 1000000u : ns;
}
