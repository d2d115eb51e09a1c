/* SPDX-License-Identifier: MIT */
/*
 * libooo's internal interface: what its files share. Not an API: the
 * library's interface is <ooo/ooo.h>, and client/libooo.map exports ooo_*
 * only, so no name here may start with ooo_ (they start with lo_).
 *
 *   libooo.c    sessions: connect, transact, notices, the last error; ping,
 *               admin calls, native leases
 *   datapath.c  a session's data path: the area, rings, entries, reaping,
 *               waiting, submission, staging
 *   queues.c    queues, copies, memsets, events (public calls over the data path)
 *   buffers.c   device buffers, zero-copy host regions
 *   modules.c   modules, kernels, launches
 *
 * Locks: s->lock serialises requests on a session's socket (one on the wire
 * at a time); d->lock guards a data path's entries, queues, events and host
 * regions. A thread that holds d->lock never waits for s->lock: it only
 * try-locks it (reading notices); the other order is not nested either.
 *
 * Errors: every public call that can fail starts with lo_begin() and ends
 * with lo_finish(); what fails in between sets the calling thread's reason
 * (lo_last_error) and returns a negative errno or -OOO_E* code.
 */
#ifndef OOO_CLIENT_LIBOOO_INT_H
#define OOO_CLIENT_LIBOOO_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>
#include <ooo/shm.h>

#include "../proto/ring.h"
#include "staging.h"

#pragma GCC visibility push(hidden)

/* ---- sessions (libooo.c) ------------------------------------------------------ */

struct ooo_session {
	int fd;
	int timeout_ms;
	int dead; /* 0, or the negative error every later call returns (lo_session_end) */
	char dead_why[OOO_ERRMSG_MAX]; /* the reason that goes with it; written once, before dead */
	bool admin;
	uint32_t seq;
	uint64_t id;
	char class_name[OOO_NAME_MAX];
	int rfd; /* descriptor passed with the last reply, -1 if none; the caller takes it */
	int rfds[3]; /* all descriptors of the last reply (attach passes three) */
	int pass_fd; /* passed with the next request, -1 if none */
	int nrfds;
	struct dpath *dp;   /* the data path, once a queue exists (lo_dp_attach_locked) */
	/* its destructor, set with dp by lo_dp_attach_locked (datapath.c): ooo_close calls it */
	void (*dp_destroy)(struct dpath *d);
	int64_t wait_spin_ns; /* a wait spins this long before it sleeps (the class's wait_spin_us, OOO_WAIT_SPIN_US) */
	pthread_mutex_t lock;
	unsigned char rbuf[OOO_MSG_MAX];
	unsigned char sbuf[OOO_MSG_MAX];
};

/*
 * The reason for the calling thread's last failed call (ooo_last_error).
 * Every public call that can fail starts with lo_begin(), so no earlier
 * call's reason survives it, and each failure sets its own: the daemon's
 * text, or libooo's with lo_fail(); lo_finish() clears it on success and
 * gives a failure that set none (an error code from below that says all
 * there is) its code. Always NUL-terminated.
 */
extern __thread char lo_last_error[OOO_ERRMSG_MAX];

/* Start a public call: clear this thread's reason. */
static inline void lo_begin(void)
{
	lo_last_error[0] = 0;
}

/* Set this thread's reason to msg (truncated to fit). */
void lo_set_last_error(const char *msg);

/* A failure libooo finds itself: set the reason (printf-style). Returns err. */
__attribute__((format(printf, 2, 3))) int lo_fail(int err, const char *fmt, ...);

/*
 * The end of public call fn with result r: on success (r >= 0) the reason
 * is cleared; on failure it is kept, or set to "fn: strerror" when the
 * failure set none. Returns r.
 */
int lo_finish(const char *fn, int r);

/*
 * The arguments every tenant call checks first: a session s, the out
 * pointer (out_given), a tenant's session, not an operator's. Returns 0, or
 * -EINVAL with the reason naming fn.
 */
int lo_tenant_args(const char *fn, const ooo_session *s, bool out_given);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t lo_now_ms(void);

/*
 * The session is over: this call and every later one on it fail with err,
 * and `why` (NULL: this thread's reason as it stands, set in this call) is
 * the reason each of them gives. The first end wins: a later one only sets
 * this thread's reason to the first's. Caller holds s->lock. Returns
 * s->dead (the first err).
 */
int lo_session_end(struct ooo_session *s, int err, const char *why);

/* A call on a session that has ended: sets its reason again. Returns its error. No lock needed. */
int lo_dead_error(struct ooo_session *s);

/*
 * A notice n other than OOO_NOTICE_DEVRESET: the daemon closes the session
 * after it. Ends the session with the error that fits n's kind and n's
 * text. Caller holds s->lock. Returns the session's error.
 */
int lo_notice_error(struct ooo_session *s, const struct ooo_msg_notice *n);

/* Close the descriptors that came with the last reply that the caller did not take. Caller holds s->lock. */
void lo_drop_fd(struct ooo_session *s);

/*
 * Send one request (type, req_len bytes at req, and s->pass_fd if it is
 * not -1) and wait up to s->timeout_ms for its reply; notices that arrive
 * meanwhile are handled. Caller holds s->lock. Returns 0 with *reply
 * pointing at the reply's payload in s->rbuf (valid until the next request
 * or s->lock is released) and the descriptors it carried in s->rfds/s->rfd
 * (the session's until the caller takes one and puts -1 in its place), or
 * the daemon's negative status with its reason set, or a transport error
 * (the session may have ended: lo_session_end).
 */
int lo_transact(struct ooo_session *s, uint16_t type, const void *req, size_t req_len, const void **reply,
		size_t *reply_len);

/*
 * One request and its reply, copied into reply (capacity cap), under
 * s->lock (the caller must not hold it). Returns the reply length or a
 * negative error (its reason set); a reply longer than cap is -EMSGSIZE.
 */
int lo_call(ooo_session *s, uint16_t type, const void *req, size_t req_len, void *reply, size_t cap);

/*
 * The reply to a request of `type` has `got` bytes, not the `want` the type
 * has: sets the reason. Returns -OOO_EPROTO.
 */
int lo_bad_reply_size(uint16_t type, int got, size_t want);

/* ---- the data path (datapath.c) ---------------------------------------------------- */

#define DP_INFLIGHT 1024 /* commands in flight per session (the SQ's size) */

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
	struct ooo_event *next_ev; /* lo_dp_submit: the event the next entry records */
	/*
	 * Threads asleep in lo_dp_wait. A thread that ends entries (lo_dp_reap, dp_epoch) writes `wake` while
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

/* Unmap and close everything of d and free it. d may be NULL. No thread may use d any more. */
void lo_dp_destroy(struct dpath *d);

/*
 * Attach the session's data path once (an ATTACH request: the area's memfd
 * and the doorbell, mapped into s->dp); a no-op when s->dp exists. Caller
 * holds s->lock. Returns 0 or a negative error (its reason set); s->dp,
 * once set, lives until ooo_close.
 */
int lo_dp_attach_locked(ooo_session *s);

/*
 * Take every completion posted (and launches the executor has taken),
 * ending their entries: statuses go to their queues and events, copies out
 * of staging to their destinations. Caller holds d->lock. Returns how many
 * entries ended, or -OOO_EPROTO (reason set) if the ring is inconsistent.
 */
int lo_dp_reap(ooo_session *s, struct dpath *d);

/*
 * Wait until done(d, arg) holds (checked with d->lock held, after each
 * reap), up to timeout_ms (-1: no limit). Spins s->wait_spin_ns first,
 * then sleeps on the doorbell, the session's socket (notices) and d->wake.
 * Caller holds d->lock; it is released while spinning and sleeping, so
 * anything read from d before the call must be read again. Returns 0,
 * -ETIMEDOUT, or the session's error once it has ended (reasons set).
 */
int lo_dp_wait(ooo_session *s, struct dpath *d, bool (*done)(struct dpath *, const void *), const void *arg,
	       int timeout_ms);

/*
 * Submit e on queue `queue` (e->queue, user_data, submit_us and flags are
 * filled in): waits for a free entry and ring slot. stage_off (UINT64_MAX:
 * none) is the staging the entry frees when it ends; dtoh_dst (NULL: none)
 * gets len bytes copied out of staging at stage_off on success. An event
 * record passes its event in d->next_ev, which this clears. Caller holds
 * d->lock (released while it waits). Returns 0, or a negative error with
 * its reason (-OOO_EDEVRESET while the executor is being replaced); on
 * failure the caller still owns stage_off.
 */
int lo_dp_submit(ooo_session *s, struct dpath *d, uint32_t queue, struct ooo_sqe *e, uint64_t stage_off,
		 void *dtoh_dst, size_t len);

/*
 * Allocate len bytes of staging (256-byte aligned) at *off, waiting for
 * commands in flight to free some while there is no room. Caller holds
 * d->lock (released while it waits). Returns 0 (the caller owns the block
 * until it passes it to lo_dp_submit), staging_alloc's -E2BIG when len can
 * never fit, or lo_dp_wait's error.
 */
int lo_dp_stage(ooo_session *s, struct dpath *d, uint64_t len, uint64_t *off);

/*
 * Public call fn on queue q: q's data path, or NULL with the reason set
 * (the caller returns -EINVAL).
 */
struct dpath *lo_queue_dp(const char *fn, ooo_queue *q);

#pragma GCC visibility pop

#endif
