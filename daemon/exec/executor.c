/* SPDX-License-Identifier: MIT */
/*
 * The executor: one process per GPU, spawned and supervised by oood. It
 * drops root, loads libcuda, opens its device's primary context, reports
 * what it found, and then serves oood on its control socket until oood
 * closes it. A CUDA fault kills only this process; oood starts another.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdarg.h>
#include <poll.h>
#include <time.h>
#include <pwd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../sched/place.h"
#include "../../proto/fdpass.h"
#include "../../proto/wire.h"
#include "cuda.h"
#include "coalesce.h"
#include "datapath.h"
#include "../../proto/exec_proto.h"
#include "memory.h"

static void exec_log(unsigned dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void exec_log(unsigned dev, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* stderr is oood's: the foreground terminal or the journal */
	fprintf(stderr, "oood[executor gpu%u]: %s\n", dev, line);
}

/* Send one message, with a descriptor if pass_fd >= 0. */
static int send_msg_flags(int fd, uint16_t type, const void *p, size_t n, int pass_fd, int flags)
{
	unsigned char buf[EXEC_MSG_MAX];
	ssize_t len = wire_encode(buf, sizeof(buf), type, 0, 0, p, n);
	struct iovec iov = { buf, 0 };
	union {
		struct cmsghdr align;
		char b[FDPASS_SPACE(1)];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (len < 0)
		return (int)len;
	iov.iov_len = (size_t)len;
	fdpass_pack(&mh, u.b, sizeof(u.b), &pass_fd, pass_fd >= 0 ? 1 : 0);
	return sendmsg(fd, &mh, MSG_NOSIGNAL | flags) == len ? 0 : -errno;
}

static int send_msg_fd(int fd, uint16_t type, const void *p, size_t n, int pass_fd)
{
	return send_msg_flags(fd, type, p, n, pass_fd, 0);
}

static int send_msg(int fd, uint16_t type, const void *p, size_t n)
{
	return send_msg_fd(fd, type, p, n, -1);
}

/*
 * The counters (about 20 KiB, once a second) never block the serving loop:
 * while oood does not read, the socket fills, and a snapshot that does not
 * fit is dropped (the next one is whole again).
 */
static void send_stats(int fd, const struct ooo_sched_counters *c)
{
	(void)send_msg_flags(fd, EXEC_MSG_STATS, c, sizeof(*c), -1, MSG_DONTWAIT);
}

/*
 * Become uid (and gid) of this executor's slot, from oood.conf's
 * executor_uids: no tenant and no other executor has it, so none can signal
 * or ptrace this one. Returns 0 (also when not root: a private instance runs
 * as its caller) or -EPERM with why (uid 0: none was given).
 */
static int drop_root(uint32_t uid, char *why, size_t cap)
{
	if (geteuid() != 0)
		return 0;
	if (!uid) {
		snprintf(why, cap, "started as root without --uid: refusing to run as root");
		return -EPERM;
	}
	if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0) {
		snprintf(why, cap, "cannot become uid %u (executor_uids): %s", uid, strerror(errno));
		return -EPERM;
	}
	if (setuid(0) == 0) {
		snprintf(why, cap, "still able to regain root after dropping to uid %u", uid);
		return -EPERM;
	}
	return 0;
}

/* Open the device; fill r. Returns 0, or an exit code for the executor. */
static int open_device(struct cuda_api *api, const char *libcuda, unsigned dev, struct exec_ready *r,
		       CUcontext *ctx)
{
	char e[256];
	CUdevice d;
	CUresult cr;
	int count = 0, v;
	size_t mfree = 0, mtotal = 0;
	CUuuid uuid;

	if (cuda_load(api, libcuda, r->reason, sizeof(r->reason)) < 0) {
		r->status = -OOO_ENODEV;
		return EXEC_EXIT_NODEV;
	}
	r->driver_version = api->driver_version;
	cr = api->p_cuInit(0);
	if (cr != CUDA_SUCCESS) {
		snprintf(r->reason, sizeof(r->reason), "cuInit: %s", cuda_strerror(api, cr, e, sizeof(e)));
		r->status = -OOO_ENODEV;
		return cuda_error_is_nodev(cr) ? EXEC_EXIT_NODEV : 1;
	}
	if (api->p_cuDeviceGetCount(&count) != CUDA_SUCCESS)
		count = 0;
	r->device_count = (uint32_t)count;
	if ((int)dev >= count) {
		snprintf(r->reason, sizeof(r->reason), "device %u does not exist (the driver reports %d)", dev, count);
		r->status = -OOO_ENODEV;
		return EXEC_EXIT_NODEV;
	}
	cr = api->p_cuDeviceGet(&d, (int)dev);
	if (cr == CUDA_SUCCESS)
		cr = api->p_cuDeviceGetName(r->name, sizeof(r->name) - 1, d);
	if (cr == CUDA_SUCCESS)
		cr = api->p_cuDeviceTotalMem(&mtotal, d);
	if (cr == CUDA_SUCCESS && api->p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) ==
					  CUDA_SUCCESS)
		r->sm_count = (uint32_t)v;
	if (cr == CUDA_SUCCESS &&
	    api->p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) == CUDA_SUCCESS)
		r->cc_major = (uint32_t)v;
	if (cr == CUDA_SUCCESS &&
	    api->p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) == CUDA_SUCCESS)
		r->cc_minor = (uint32_t)v;
	if (cr == CUDA_SUCCESS && api->p_cuDeviceGetUuid(&uuid, d) == CUDA_SUCCESS)
		memcpy(r->uuid, uuid.bytes, sizeof(r->uuid));
	if (cr == CUDA_SUCCESS)
		cr = api->p_cuDevicePrimaryCtxRetain(ctx, d);
	if (cr == CUDA_SUCCESS)
		cr = api->p_cuCtxSetCurrent(*ctx);
	if (cr == CUDA_SUCCESS)
		cr = api->p_cuMemGetInfo(&mfree, &mtotal);
	if (cr != CUDA_SUCCESS) {
		snprintf(r->reason, sizeof(r->reason), "device %u: %s", dev, cuda_strerror(api, cr, e, sizeof(e)));
		r->status = -OOO_ENODEV;
		return 1; /* the device exists: a restart may succeed */
	}
	r->mem_total = mtotal;
	r->mem_free = mfree;
	return 0;
}

/*
 * The serving threads (oood.conf serving_threads, executor --threads): the
 * sessions are split into shards, each a struct datapath with its own
 * coalescer (scheduler, launcher and compile threads) served by its own
 * thread, all in the one CUDA context. Launches coalesce within a shard.
 * With one shard the main thread serves it and oood's socket (serve());
 * with more, the main thread only answers oood (serve_threaded()) and takes
 * a shard's lock for each message about one of its sessions: a shard thread
 * holds its lock during a pass and steps aside between passes when the
 * main thread wants it. A session stays in the shard that first saw it:
 * the first shard holding fewer than shard_sessions (oood.conf, executor
 * --shard-sessions) sessions, else the one with the fewest. Filling one
 * shard before the next keeps a few tenants in one shard, where their
 * launches can share bundles (spread over two shards, 8 spin tenants ran
 * 9-18% slower on the H200).
 */
#define EXEC_THREADS_MAX 8

struct shards;

struct shard {
	struct datapath dp;
	pthread_mutex_t mu;
	atomic_bool want;     /* the main thread is waiting for mu */
	int wake;             /* eventfd: the main thread rings it after it changed the shard */
	pthread_t th;
	bool started;
	struct pollfd *pfd;   /* what it sleeps on: [0] its wake fd (oood's socket for serve()), then doorbells */
	size_t pcap;          /* entries of pfd; it grows with the sessions (wait_set) */
	struct shards *all;
};

struct shards {
	struct shard sh[EXEC_THREADS_MAX];
	struct datapath *dps[EXEC_THREADS_MAX]; /* each shard's datapath: the peers of each (dp->peers) */
	unsigned n;
	uint32_t fill;        /* a new session joins the first shard with fewer sessions (0: the fewest) */
	bool threaded;        /* n > 1 */
	CUcontext ctx;
	atomic_bool stop;     /* oood is gone: the shard threads end */
	atomic_bool fatal_all; /* a shard found the context gone: every shard stops issuing (datapath.c dp_dead) */
	int fatal_efd;        /* eventfd: a shard's context error (the context is gone for all) */
};

static struct datapath *shard_lock(struct shards *S, struct shard *h)
{
	if (S->threaded) {
		atomic_store(&h->want, true);
		pthread_mutex_lock(&h->mu);
	}
	return &h->dp;
}

static void shard_unlock(struct shards *S, struct shard *h)
{
	uint64_t one = 1;

	if (!S->threaded)
		return;
	pthread_mutex_unlock(&h->mu);
	atomic_store(&h->want, false);
	(void)!write(h->wake, &one, sizeof(one)); /* it may sleep on doorbells that changed */
}

/*
 * The shard that has session id, else the one a new session goes to
 * (place_shard: the first with fewer than S->fill sessions, else the one
 * with the fewest); returned locked.
 */
static struct shard *shard_of(struct shards *S, uint64_t id)
{
	uint32_t count[EXEC_THREADS_MAX];

	if (S->n == 1) {
		shard_lock(S, &S->sh[0]);
		return &S->sh[0];
	}
	for (unsigned i = 0; i < S->n; i++) {
		struct shard *h = &S->sh[i];
		struct datapath *dp = shard_lock(S, h);
		uint32_t k = 0;

		if (dp_session_get(dp, id, false))
			return h;
		for (struct dp_session *s = dp->sessions; s; s = s->next)
			k++;
		shard_unlock(S, h);
		count[i] = k;
	}
	struct shard *h = &S->sh[place_shard(count, S->n, S->fill)];

	shard_lock(S, h);
	return h;
}

/* A long wait's way to let shard h's lock go (dp_unlock), or NULL with one serving thread (it is this one). */
struct shard_ref {
	struct shards *S;
	struct shard *h;
};

static void shard_ref_lock(void *arg)
{
	struct shard_ref *r = arg;

	shard_lock(r->S, r->h);
}

static void shard_ref_unlock(void *arg)
{
	struct shard_ref *r = arg;

	shard_unlock(r->S, r->h);
}

static const struct dp_unlock *shard_unlocker(struct shards *S, struct shard *h, struct shard_ref *r,
					      struct dp_unlock *u)
{
	if (!S->threaded)
		return NULL;
	*r = (struct shard_ref){ S, h };
	*u = (struct dp_unlock){ .lock = shard_ref_lock, .unlock = shard_ref_unlock, .arg = r };
	return u;
}

static int handle_mem(int fd, struct memory *mem, struct shards *S, uint16_t type, const struct exec_mem_req *q,
		      int in_fd)
{
	struct exec_mem_reply rep = { .req = q->req, .addr = q->addr, .size = q->size };
	struct shard *h = shard_of(S, q->session);
	struct datapath *dp = &h->dp;
	struct dp_session *s = dp_session_get(dp, q->session, type != EXEC_MSG_FREE);
	struct shard_ref ref;
	struct dp_unlock unl;
	int out_fd = -1, r;

	switch (type) {
	case EXEC_MSG_ALLOC:
		rep.status = memory_alloc(mem, q->session, q->size, &rep.addr, &rep.size, &out_fd, rep.reason,
					  sizeof(rep.reason));
		/* only the owning session's submissions may name this memory */
		if (rep.status == 0 && (!s || vbufs_add(&s->bufs, rep.addr, rep.size) < 0)) {
			memory_free(mem, rep.addr);
			close(out_fd);
			out_fd = -1;
			rep.status = -ENOMEM;
			snprintf(rep.reason, sizeof(rep.reason), "out of memory in the executor");
		}
		break;
	case EXEC_MSG_FREE:
		/* a copy or kernel of the session may still use it; its address may go to another tenant next */
		dp_session_quiesce(dp, q->session, shard_unlocker(S, h, &ref, &unl));
		rep.status = memory_free(mem, q->addr);
		if (rep.status)
			snprintf(rep.reason, sizeof(rep.reason), "no buffer at %#llx", (unsigned long long)q->addr);
		if (s)
			vbufs_del(&s->bufs, q->addr);
		else if (dp->fence)
			memory_window_release(mem, q->session); /* an orphan freed after its session went: its window too */
		break;
	case EXEC_MSG_IMPORT:
		if (in_fd < 0) {
			rep.status = -EBADF;
			snprintf(rep.reason, sizeof(rep.reason), "import without a descriptor");
			break;
		}
		rep.status = memory_import(mem, q->session, in_fd, q->addr, q->size, rep.reason, sizeof(rep.reason));
		if (rep.status == 0 && (!s || vbufs_add(&s->bufs, q->addr, q->size) < 0)) {
			memory_free(mem, q->addr);
			rep.status = -ENOMEM;
			snprintf(rep.reason, sizeof(rep.reason), "out of memory in the executor");
		}
		break;
	}
	shard_unlock(S, h);
	r = send_msg_fd(fd, (uint16_t)(type | OOO_MSG_REPLY), &rep, sizeof(rep), out_fd);
	if (out_fd >= 0)
		close(out_fd); /* oood has its own reference now (or the send failed) */
	return r;
}

static int handle_attach(int fd, struct shards *S, uint16_t type, const void *payload, int *fds, int nfd)
{
	struct exec_mem_reply rep = { 0 };
	struct shard *h;
	struct datapath *dp;
	struct shard_ref ref;
	struct dp_unlock unl;

	if (type == EXEC_MSG_QUEUE) {
		struct exec_queue q;

		memcpy(&q, payload, sizeof(q));
		rep.req = q.req;
		q.klass[sizeof(q.klass) - 1] = '\0';
		h = shard_of(S, q.session);
		rep.status = dp_queue(&h->dp, q.session, q.queue, q.create != 0, q.priority, q.slo_us, q.klass,
				      shard_unlocker(S, h, &ref, &unl), rep.reason, sizeof(rep.reason));
	} else {
		struct exec_attach a;

		memcpy(&a, payload, sizeof(a));
		rep.req = a.req;
		h = shard_of(S, a.session);
		dp = &h->dp;
		if (type == EXEC_MSG_DETACH) {
			rep.status = dp_detach(dp, a.session, shard_unlocker(S, h, &ref, &unl));
		} else if (nfd != 2) {
			rep.status = -EBADF;
			snprintf(rep.reason, sizeof(rep.reason), "attach needs 2 descriptors, got %d", nfd);
		} else {
			rep.status = dp_attach(dp, a.session, fds[0], fds[1], a.area_size, a.sq_entries, a.cq_entries,
					       a.flags & EXEC_ATTACH_RESET, rep.reason, sizeof(rep.reason));
			fds[0] = fds[1] = -1; /* dp_attach took them */
		}
	}
	shard_unlock(S, h);
	return send_msg(fd, (uint16_t)(type | OOO_MSG_REPLY), &rep, sizeof(rep));
}

/*
 * A partition plan from oood (checked by exec_msg_check): apply it, answer
 * what each partition got. Every shard's coalescer gets the plan (their
 * partitions of a class are green contexts on the same SMs); the answer is
 * the first refusal, else the first shard's.
 */
static int handle_partitions(int fd, struct shards *S, const void *payload)
{
	struct exec_partitions q;
	struct exec_partitions_reply rep = { 0 };
	struct co_plan_part plan[EXEC_PART_MAX];

	memcpy(&q, payload, sizeof(q));
	rep.req = q.req;
	rep.generation = q.generation;
	rep.n = q.n;
	for (uint32_t i = 0; i < q.n; i++) {
		snprintf(plan[i].klass, sizeof(plan[i].klass), "%s", q.p[i].klass);
		plan[i].sms = q.p[i].sms;
	}
	for (unsigned i = 0; i < S->n; i++) {
		struct datapath *dp = shard_lock(S, &S->sh[i]);
		struct exec_partitions_reply r = rep;

		dp_co_ensure(dp);
		r.status = co_partitions(dp, plan, q.n, r.sms, &r.granule, r.reason, sizeof(r.reason));
		shard_unlock(S, &S->sh[i]);
		if (i == 0 || (r.status < 0 && rep.status >= 0))
			rep = r;
	}
	if (rep.status < 0)
		fprintf(stderr, "oood[executor]: partition plan %llu refused: %s\n", (unsigned long long)q.generation,
			rep.reason);
	return send_msg(fd, EXEC_MSG_PARTITIONS | OOO_MSG_REPLY, &rep, sizeof(rep));
}

/* One message from oood, if one is waiting. Returns 1 handled, 0 none, -1 to exit (oood gone or bad). */
static int ctl_message(int fd, struct memory *mem, struct shards *S)
{
	unsigned char buf[512];
	struct iovec iov = { buf, sizeof(buf) };
	union {
		struct cmsghdr align;
		char b[FDPASS_SPACE(FDPASS_MAX)];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	const void *payload;
	int fds[FDPASS_MAX], nfd, rc = 0;
	size_t plen;
	uint16_t type;
	ssize_t n;

	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (n == 0)
		return -1; /* oood closed: we are done */
	nfd = (int)fdpass_take(&mh, fds, FDPASS_MAX);
	if (nfd > FDPASS_MAX)
		nfd = FDPASS_MAX;
	if (exec_msg_check(buf, (size_t)n, &type, &payload, &plen) < 0) {
		rc = -1; /* oood never sends garbage: something is badly wrong */
	} else if (type == EXEC_MSG_PING) {
		rc = send_msg(fd, EXEC_MSG_PING | OOO_MSG_REPLY, payload, plen);
	} else if (type == EXEC_MSG_ALLOC || type == EXEC_MSG_FREE || type == EXEC_MSG_IMPORT) {
		struct exec_mem_req q;
		memcpy(&q, payload, sizeof(q));
		rc = handle_mem(fd, mem, S, type, &q, fds[0]);
	} else if (type == EXEC_MSG_ATTACH || type == EXEC_MSG_DETACH || type == EXEC_MSG_QUEUE) {
		rc = handle_attach(fd, S, type, payload, fds, nfd);
	} else if (type == EXEC_MSG_MODULE_LOAD || type == EXEC_MSG_MODULE_UNLOAD) {
		struct exec_module m;
		struct exec_mem_reply rep = { 0 };
		struct shard *h;

		memcpy(&m, payload, sizeof(m));
		rep.req = m.req;
		h = shard_of(S, m.session);
		if (type == EXEC_MSG_MODULE_UNLOAD) {
			struct shard_ref ref;
			struct dp_unlock unl;

			rep.status = dp_module_unload(&h->dp, m.session, m.module, shard_unlocker(S, h, &ref, &unl));
		} else if (m.kind == EXEC_MODULE_LOST) {
			rep.status = m.module ? dp_module_lost(&h->dp, m.session, m.module - 1) : -EINVAL;
			rep.addr = m.module ? m.module - 1 : 0;
			snprintf(rep.reason, sizeof(rep.reason), "%s", rep.status < 0 ? "cannot keep the lost slot" : "");
		} else if (nfd < 1) {
			rep.status = -EBADF;
			snprintf(rep.reason, sizeof(rep.reason), "module load without its image");
		} else {
			int slot = dp_module_slot(&h->dp, m.session, m.module, rep.reason, sizeof(rep.reason));
			bool parse = h->dp.co != NULL;
			struct dp_module_img img;

			rep.status = slot < 0 ? slot : 0;
			if (slot >= 0) {
				/*
				 * Compiling, fencing and the driver's PTX JIT take
				 * milliseconds to seconds: the serving thread goes on
				 * meanwhile (only this thread changes a session's
				 * modules, and the session cannot go before it answers)
				 */
				shard_unlock(S, h);
				rep.status = dp_module_build(&h->dp, m.kind, fds[0], m.len, parse, &img, rep.reason,
							     sizeof(rep.reason));
				h = shard_of(S, m.session);
				if (rep.status == 0)
					rep.status = dp_module_install(&h->dp, m.session, (uint32_t)slot, &img, rep.reason,
								       sizeof(rep.reason));
			}
			rep.addr = rep.status == 0 ? (uint64_t)slot : 0;
			/* a restore that failed keeps its slot taken: the tenant's handle names no other module */
			if (rep.status < 0 && m.module)
				(void)dp_module_lost(&h->dp, m.session, m.module - 1);
		}
		shard_unlock(S, h);
		rc = send_msg(fd, (uint16_t)(type | OOO_MSG_REPLY), &rep, sizeof(rep));
	} else if (type == EXEC_MSG_HOST_MAP || type == EXEC_MSG_HOST_UNMAP) {
		struct exec_host h;
		struct exec_mem_reply rep = { 0 };
		struct shard *sh;

		memcpy(&h, payload, sizeof(h));
		rep.req = h.req;
		rep.addr = h.region;
		sh = shard_of(S, h.session);
		if (type == EXEC_MSG_HOST_UNMAP) {
			struct shard_ref ref;
			struct dp_unlock unl;

			rep.status = dp_host_unmap(&sh->dp, h.session, h.region, shard_unlocker(S, sh, &ref, &unl));
		} else if (nfd < 1) {
			rep.status = -EBADF;
		} else {
			rep.status = dp_host_map(&sh->dp, h.session, h.region, fds[0], h.size, rep.reason,
						 sizeof(rep.reason));
		}
		shard_unlock(S, sh);
		rc = send_msg(fd, (uint16_t)(type | OOO_MSG_REPLY), &rep, sizeof(rep));
	} else if (type == EXEC_MSG_PARTITIONS) {
		rc = handle_partitions(fd, S, payload);
	} else if (type == EXEC_MSG_KERNEL_GET) {
		struct exec_kernel_get k;
		struct exec_kernel_reply rep = { 0 };
		struct shard *h;

		memcpy(&k, payload, sizeof(k));
		rep.req = k.req;
		h = shard_of(S, k.session);
		rep.status = dp_kernel_get(&h->dp, k.session, k.module, k.name, k.kernel, &rep.k, rep.reason,
					   sizeof(rep.reason));
		if (rep.status < 0 && k.kernel)
			(void)dp_kernel_lost(&h->dp, k.session, k.module, k.kernel - 1);
		shard_unlock(S, h);
		rc = send_msg(fd, EXEC_MSG_KERNEL_GET | OOO_MSG_REPLY, &rep, sizeof(rep));
	}
	for (int i = 0; i < nfd; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return rc < 0 ? -1 : 1;
}

#define SPIN_BUSY_NS 2000000ull /* spin this long on commands in flight before napping */
#define SPIN_IDLE_NS 200000ull  /* and this long after the last activity before sleeping */
#define NAP_NS 50000            /* nap length while commands are in flight */
#define WAIT_FDS_MIN 64u      /* the first wait set's doorbells; it grows with the sessions */
#define EXEC_NICE (-10)        /* the executor's nice value when started by root */
#define STATS_NS 1000000000ull  /* the scheduler's counters go to oood this often */
#define CTL_EVERY 8u            /* passes between looks at oood's socket while the data path moves */
#define FATAL_GRACE_NS 20000000ull /* after a sticky error, passes for this long before exiting (see below) */

/*
 * How long an idle serving loop sleeps: the counters' period with a
 * coalescer, sooner where the datapath wants a pass (dp_wake_ns); tv_sec
 * -1: until a doorbell.
 */
static struct timespec idle_timeout(const struct datapath *dp)
{
	uint64_t ns = dp->co ? STATS_NS : 0, w = dp_wake_ns(dp);

	if (w && (!ns || w < ns))
		ns = w;
	if (!ns)
		return (struct timespec){ -1, 0 };
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Before a sleep: announce it on every session's ring and gather their
 * doorbells into h->pfd[1..], growing it to fit every session (a session
 * whose doorbell were left out could wait for a reply until something else
 * woke the executor). Returns how many doorbells, or -1: a ring filled
 * meanwhile, do not sleep. *partial: the set could not grow (no memory) and
 * holds only the first doorbells, so sleep only in naps.
 */
static int wait_set(struct shard *h, bool *partial)
{
	*partial = false;
	for (;;) {
		int n = h->pcap ? dp_prepare_sleep(&h->dp, h->pfd + 1, (int)(h->pcap - 1)) : 0;
		size_t want = n < 0 ? 0 : (size_t)n + 1 + WAIT_FDS_MIN;
		struct pollfd *g;

		if (n < 0 || (h->pcap && (size_t)n < h->pcap))
			return n;
		if (!(g = realloc(h->pfd, want * sizeof(*g)))) {
			if (!h->pcap)
				return -1; /* not even one entry: spin, as if work came */
			*partial = true;
			return (int)h->pcap - 1;
		}
		h->pfd = g;
		h->pcap = want;
	}
}

/*
 * Serve oood and the attached sessions until oood closes the control socket.
 * While commands are in flight the loop spins on their events for a while
 * (completion latency is what tenants feel), then naps in short sleeps that
 * a doorbell or oood ends early; with nothing in flight it sleeps until one.
 */
static int serve(int fd, struct memory *mem, struct shards *S)
{
	struct shard *h = &S->sh[0];
	struct datapath *dp = &h->dp;
	uint64_t last = 0, stats_at = 0;
	unsigned ctl_skip = 0;

	for (;;) {
		uint64_t t0 = mono_ns();
		bool moved = dp_progress(dp);
		int r = 0, n;
		bool partial;

		/*
		 * oood's socket: every pass while the data path is quiet or a message
		 * just came, else every CTL_EVERY passes (a receive is a system call,
		 * ~0.3 us on the GPU machine, against ~35 us passes at full load).
		 */
		if (dp->hung) {
			r = 0; /* a control request could wait on the hung work: none is taken before the exit */
		} else if (!moved || !ctl_skip) {
			r = ctl_message(fd, mem, S);
			ctl_skip = r > 0 ? 0 : CTL_EVERY - 1;
		} else {
			ctl_skip--;
		}
		bool busy = dp->inflight || co_busy(dp);

		dp->loops++;
		if (moved || r > 0) {
			dp->work_ns += mono_ns() - t0;
			dp->take_ns += dp->pass_take_ns;
			dp->dispatch_ns += dp->pass_dispatch_ns;
		}

		if (dp->co) {
			uint64_t now = mono_ns();

			if (now - stats_at >= STATS_NS) {
				struct ooo_sched_counters c;

				co_counters(dp, now, &c);
				send_stats(fd, &c);
				stats_at = now;
			}
		}

		if (r < 0)
			return 0;
		if (dp->fatal) {
			/*
			 * Post what can still be posted, for a short while: a tenant's
			 * sync that comes behind the bundle that faulted then gets the
			 * fault (OOO_EFAULT), not only the restart. Nothing more is
			 * issued; the restart waits its backoff anyway.
			 */
			uint64_t until = mono_ns() + FATAL_GRACE_NS;

			do {
				if (!dp_progress(dp))
					usleep(200);
			} while (mono_ns() < until);
			fprintf(stderr, "oood[executor]: %s; the context is lost, exiting\n", dp->fatal_why);
			return 1;
		}
		if (moved || r > 0) {
			last = mono_ns();
			continue;
		}
		/*
		 * A tenant waiting on a short kernel feels every microsecond of a
		 * wake-up: keep polling a while after activity (one core of the
		 * host per GPU), then nap, then sleep.
		 */
		{
			uint64_t idle = mono_ns() - last;
			if (idle < (busy ? SPIN_BUSY_NS : SPIN_IDLE_NS))
				continue;
		}
		n = wait_set(h, &partial);
		if (n < 0)
			continue;
		h->pfd[0] = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (busy || dp->blocked || partial) {
			struct timespec ts = { 0, NAP_NS };
			r = ppoll(h->pfd, (nfds_t)n + 1, &ts, NULL);
		} else {
			/* wake to report the counters, and for the kernel time limit's untimed tails (dp_wake_ns) */
			struct timespec ts = idle_timeout(dp);
			r = ppoll(h->pfd, (nfds_t)n + 1, ts.tv_sec >= 0 ? &ts : NULL, NULL);
		}
		dp_awake(dp);
		if (r < 0 && errno != EINTR)
			return 1;
	}
}

/* Add the counters of another shard's coalescer (b) to a: counts summed, classes matched by name. */
static void counters_add(struct ooo_sched_counters *a, const struct ooo_sched_counters *b)
{
	uint64_t *const sum[] = { &a->bundles,	    &a->fused_bundles,	 &a->launches,	       &a->fused_launches,
				  &a->direct_launches, &a->dispatch_full, &a->dispatch_slack, &a->dispatch_idle,
				  &a->dispatch_alone,  &a->retried,	 &a->jit_hits,	       &a->jit_misses,
				  &a->jit_compiles,    &a->jit_failures,	 &a->jit_compile_ns,   &a->loops,
				  &a->work_ns,	       &a->commands,	 &a->param_bundles,    &a->take_ns,
				  &a->dispatch_ns,     &a->submit_stamp_bad, &a->unfused_nopay,    &a->stream_waits,
				  &a->launch_ns,       &a->chained_launches, &a->burst_holds };
	const uint64_t *const add[] = { &b->bundles,	     &b->fused_bundles,	  &b->launches,
					&b->fused_launches,   &b->direct_launches,   &b->dispatch_full,
					&b->dispatch_slack,   &b->dispatch_idle,	  &b->dispatch_alone,
					&b->retried,	     &b->jit_hits,	  &b->jit_misses,
					&b->jit_compiles,     &b->jit_failures,	  &b->jit_compile_ns,
					&b->loops,	     &b->work_ns,	  &b->commands,
					&b->param_bundles,    &b->take_ns,	  &b->dispatch_ns,
					&b->submit_stamp_bad, &b->unfused_nopay,	  &b->stream_waits,
					&b->launch_ns,	     &b->chained_launches, &b->burst_holds };

	_Static_assert(sizeof(sum) / sizeof(sum[0]) == sizeof(add) / sizeof(add[0]), "counters_add: one list");
	for (size_t i = 0; i < sizeof(sum) / sizeof(sum[0]); i++)
		*sum[i] += *add[i];
	if (b->jit_compile_max_ns > a->jit_compile_max_ns)
		a->jit_compile_max_ns = b->jit_compile_max_ns;
	if (b->max_members > a->max_members)
		a->max_members = b->max_members;
	if (b->up_ns > a->up_ns)
		a->up_ns = b->up_ns;
	for (unsigned i = 0; i < OOO_TM_BUCKETS; i++) {
		a->hold_hist[i] += b->hold_hist[i];
		a->lat_hist[i] += b->lat_hist[i];
		a->cmd_submit_hist[i] += b->cmd_submit_hist[i];
		a->cmd_queue_hist[i] += b->cmd_queue_hist[i];
		a->cmd_run_hist[i] += b->cmd_run_hist[i];
		a->cmd_notify_hist[i] += b->cmd_notify_hist[i];
		a->bundle_gpu_hist[i] += b->bundle_gpu_hist[i];
	}
	/* partitions: every shard has the same plan, by index */
	uint32_t npa = a->npartitions;

	if (b->npartitions > a->npartitions) {
		for (uint32_t i = a->npartitions; i < b->npartitions && i < OOO_SCHED_PARTITIONS; i++)
			a->parts[i] = (struct ooo_sched_part_stats){ .sms = b->parts[i].sms,
								     .max_inflight = b->parts[i].max_inflight,
								     .reserve_inflight = b->parts[i].reserve_inflight };
		for (uint32_t i = a->npartitions; i < b->npartitions && i < OOO_SCHED_PARTITIONS; i++)
			memcpy(a->parts[i].name, b->parts[i].name, sizeof(a->parts[i].name));
		a->npartitions = b->npartitions;
	}
	for (uint32_t i = 0; i < b->npartitions && i < OOO_SCHED_PARTITIONS; i++) {
		if (i < npa) { /* each shard has its own bundles in flight on the partition */
			a->parts[i].max_inflight += b->parts[i].max_inflight;
			a->parts[i].reserve_inflight += b->parts[i].reserve_inflight;
		}
		a->parts[i].bundles += b->parts[i].bundles;
		a->parts[i].busy_ns += b->parts[i].busy_ns;
	}
	if (b->streams > a->streams)
		a->streams = b->streams;
	for (unsigned i = 0; i < OOO_PRIO_TIERS; i++)
		a->tier_bundles[i] += b->tier_bundles[i];
	for (unsigned i = 0; i < OOO_SCHED_STREAMS; i++)
		a->stream_bundles[i] += b->stream_bundles[i];
	/* classes: by name; the last row ("") takes what does not fit, as in one coalescer */
	for (uint32_t j = 0; j < b->nclasses && j < OOO_SCHED_CLASSES; j++) {
		const struct ooo_sched_class_stats *c = &b->classes[j];
		bool over = j == OOO_SCHED_CLASSES - 1;
		uint32_t i = 0;

		if (!over && !c->name[0] && !c->launches)
			continue; /* an unused row (co_counters lists all 16 once its overflow row counts) */
		if (!over)
			for (i = 0; i < a->nclasses && i < OOO_SCHED_CLASSES - 1; i++)
				if (!strncmp(a->classes[i].name, c->name, sizeof(c->name)))
					break;
		if (over || i == OOO_SCHED_CLASSES - 1) {
			i = OOO_SCHED_CLASSES - 1;
			a->nclasses = OOO_SCHED_CLASSES;
		} else if (i == a->nclasses) {
			a->classes[i] = (struct ooo_sched_class_stats){ 0 };
			memcpy(a->classes[i].name, c->name, sizeof(c->name));
			a->nclasses++;
		}
		if (c->slo_us > a->classes[i].slo_us)
			a->classes[i].slo_us = c->slo_us;
		a->classes[i].launches += c->launches;
		a->classes[i].deadline_misses += c->deadline_misses;
		a->classes[i].lat_sum_ns += c->lat_sum_ns;
		if (c->lat_max_ns > a->classes[i].lat_max_ns)
			a->classes[i].lat_max_ns = c->lat_max_ns;
		for (unsigned h = 0; h < OOO_CMD_STAGES; h++)
			for (unsigned k = 0; k < OOO_TM_BUCKETS; k++)
				a->classes[i].cmd_stage_hist[h][k] += c->cmd_stage_hist[h][k];
	}
}

/* Leave the shard's lock to the main thread while it wants it. */
static void step_aside(struct shard *h)
{
	for (unsigned i = 0; atomic_load_explicit(&h->want, memory_order_acquire); i++) {
#if defined(__x86_64__) || defined(__i386__)
		if (i < 256) {
			__builtin_ia32_pause();
			continue;
		}
#endif
		sched_yield();
	}
}

/* The context is gone (a shard saw a sticky error): every shard stops issuing, posts what it can, and ends. */
static void shard_grace(struct shard *h)
{
	uint64_t until = mono_ns() + FATAL_GRACE_NS;

	do {
		bool moved;

		pthread_mutex_lock(&h->mu);
		moved = dp_progress(&h->dp);
		pthread_mutex_unlock(&h->mu);
		step_aside(h);
		if (!moved)
			usleep(200);
	} while (mono_ns() < until);
}

/* A shard's serving thread: serve()'s loop without oood's socket. */
static void *shard_main(void *arg)
{
	struct shard *h = arg;
	struct shards *S = h->all;
	struct datapath *dp = &h->dp;
	uint64_t last = 0;
	char name[16];

	snprintf(name, sizeof(name), "ooo-serve%u", (unsigned)(h - S->sh));
	prctl(PR_SET_NAME, name); /* ps -L, /proc/PID/task/TID/comm */
	dp->api->p_cuCtxSetCurrent(S->ctx);
	while (!atomic_load(&S->stop)) {
		uint64_t t0 = mono_ns(), v;
		bool moved, busy, blocked, fatal, partial;
		int n;

		pthread_mutex_lock(&h->mu);
		moved = dp_progress(dp);
		busy = dp->inflight || co_busy(dp);
		blocked = dp->blocked != 0;
		fatal = dp->fatal;
		dp->loops++;
		if (moved) {
			dp->work_ns += mono_ns() - t0;
			dp->take_ns += dp->pass_take_ns;
			dp->dispatch_ns += dp->pass_dispatch_ns;
		}
		pthread_mutex_unlock(&h->mu);
		if (fatal) {
			uint64_t one = 1;

			(void)!write(S->fatal_efd, &one, sizeof(one));
			shard_grace(h);
			return NULL;
		}
		step_aside(h);
		if (moved) {
			last = mono_ns();
			continue;
		}
		if (mono_ns() - last < (busy ? SPIN_BUSY_NS : SPIN_IDLE_NS))
			continue;
		pthread_mutex_lock(&h->mu);
		n = wait_set(h, &partial);
		pthread_mutex_unlock(&h->mu);
		if (n < 0)
			continue;
		h->pfd[0] = (struct pollfd){ .fd = h->wake, .events = POLLIN };
		if (busy || blocked || partial) {
			struct timespec ts = { 0, NAP_NS };
			(void)ppoll(h->pfd, (nfds_t)n + 1, &ts, NULL);
		} else {
			/*
			 * Wake about once a second, as serve() does: compiles that
			 * finished meanwhile are taken in (drain_compiles) and counted
			 * in the next report instead of when work next comes; sooner
			 * for the kernel time limit's untimed tails (dp_wake_ns).
			 */
			struct timespec ts;

			pthread_mutex_lock(&h->mu);
			ts = idle_timeout(dp);
			pthread_mutex_unlock(&h->mu);
			(void)ppoll(h->pfd, (nfds_t)n + 1, ts.tv_sec >= 0 ? &ts : NULL, NULL);
		}
		(void)!read(h->wake, &v, sizeof(v)); /* nonblocking: drain */
		pthread_mutex_lock(&h->mu);
		dp_awake(dp);
		pthread_mutex_unlock(&h->mu);
	}
	return NULL;
}

/*
 * With several shards: start their threads, then answer oood until it
 * closes the socket (0) or a shard finds the context gone (1), and send
 * the shards' summed counters about once a second.
 */
static int serve_threaded(int fd, struct memory *mem, struct shards *S)
{
	uint64_t stats_at = 0;
	int rc = 0, err;

	for (unsigned i = 0; i < S->n; i++) {
		struct shard *h = &S->sh[i];

		h->all = S;
		if ((err = pthread_create(&h->th, NULL, shard_main, h)) != 0) {
			fprintf(stderr, "oood[executor]: cannot start serving thread %u: %s\n", i, strerror(err));
			rc = 2;
			break;
		}
		h->started = true;
	}
	while (rc == 0) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = S->fatal_efd, .events = POLLIN } };
		uint64_t now = mono_ns();
		int r;

		if (now - stats_at >= STATS_NS) {
			struct ooo_sched_counters c, x;
			bool any = false;

			for (unsigned i = 0; i < S->n; i++) {
				struct datapath *dp = shard_lock(S, &S->sh[i]);

				if (dp->co) {
					co_counters(dp, now, any ? &x : &c);
					if (any)
						counters_add(&c, &x);
					any = true;
				}
				pthread_mutex_unlock(&S->sh[i].mu); /* no wake-up: nothing changed */
				atomic_store(&S->sh[i].want, false);
			}
			if (any)
				send_stats(fd, &c);
			stats_at = now;
		}
		{
			uint64_t el = mono_ns() - stats_at; /* the next report is due STATS_NS after the last */

			r = poll(p, 2, el >= STATS_NS ? 0 : (int)((STATS_NS - el) / 1000000u) + 1);
		}
		if (r < 0 && errno != EINTR) {
			fprintf(stderr, "oood[executor]: poll: %s\n", strerror(errno));
			rc = 2;
			break;
		}
		if (p[1].revents) {
			rc = 1; /* a shard saw the context go: the others stop issuing and post what they can */
			break;
		}
		if (p[0].revents) {
			/*
			 * every waiting message: each is handled in full before the next
			 * (none once a shard has found the context gone or given it up:
			 * a request could wait on a kernel that never ends)
			 */
			while (!atomic_load(&S->fatal_all) && (r = ctl_message(fd, mem, S)) > 0)
				;
			if (r < 0)
				break; /* oood closed the socket: done */
		}
	}
	bool lost = rc == 1; /* else (2) a thread or poll failed: not the context, but the shards stop alike */

	if (rc == 2) {
		atomic_store(&S->fatal_all, true);
		rc = 1;
	}
	if (rc == 1) {
		char why[sizeof(S->sh[0].dp.fatal_why)] = "";

		for (unsigned i = 0; i < S->n; i++) {
			struct datapath *dp = shard_lock(S, &S->sh[i]);

			/* the reason of the shard that met the error, not of those that learnt it from dp_dead */
			if (dp->fatal && (!why[0] || !strncmp(why, "another serving thread", 22)))
				snprintf(why, sizeof(why), "%s", dp->fatal_why);
			shard_unlock(S, &S->sh[i]);
		}
		for (unsigned i = 0; i < S->n; i++) {
			struct datapath *dp = shard_lock(S, &S->sh[i]);

			if (!dp->fatal) {
				dp->fatal = true;
				snprintf(dp->fatal_why, sizeof(dp->fatal_why), "%s", why[0] ? why : "a serving thread failed");
			}
			shard_unlock(S, &S->sh[i]);
		}
		/* each shard sees its fatal mark on its next pass (the unlock rang it), posts for a while and ends */
		for (unsigned i = 0; i < S->n; i++)
			if (S->sh[i].started)
				pthread_join(S->sh[i].th, NULL);
		if (lost)
			fprintf(stderr, "oood[executor]: %s; the context is lost, exiting\n",
				why[0] ? why : "a serving thread failed");
		else
			fprintf(stderr, "oood[executor]: the serving threads cannot run; exiting\n");
		return 1;
	}
	atomic_store(&S->stop, true);
	for (unsigned i = 0; i < S->n; i++) {
		uint64_t one = 1;

		(void)!write(S->sh[i].wake, &one, sizeof(one));
	}
	for (unsigned i = 0; i < S->n; i++)
		if (S->sh[i].started)
			pthread_join(S->sh[i].th, NULL);
	return rc;
}

/* An option's yes or no; false for anything else. */
static bool opt_yes_no(const char *arg, bool *out)
{
	if (strcmp(arg, "yes") && strcmp(arg, "no"))
		return false;
	*out = !strcmp(arg, "yes");
	return true;
}

/* An option's decimal number in lo .. hi; false for anything else (empty, trailing junk, out of range). */
static bool opt_num(const char *arg, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(arg, &end, 10);
	return !errno && end != arg && !*end && *out >= lo && *out <= hi;
}

int executor_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "executor", no_argument, NULL, 'x' },	      { "device", required_argument, NULL, 'd' },
		{ "uid", required_argument, NULL, 'u' },      { "libcuda", required_argument, NULL, 'l' },
		{ "fuse", required_argument, NULL, 'F' },      { "streams", required_argument, NULL, 'S' },
		{ "fence", required_argument, NULL, 'f' },     { "fuse-copies", required_argument, NULL, 'C' },
		{ "threads", required_argument, NULL, 'T' },   { "shard-sessions", required_argument, NULL, 'P' },
		{ "spread-lanes", required_argument, NULL, 'L' }, { "urgent-reserve", required_argument, NULL, 'R' },
		{ "chain-launches", required_argument, NULL, 'K' }, { "kernel-limit-ms", required_argument, NULL, 'H' },
		{ "burst-wait-us", required_argument, NULL, 'B' }, { 0 },
	};
	const char *libcuda = "libcuda.so.1";
	struct exec_ready r = { 0 };
	struct cuda_api api = { 0 };
	struct memory mem = { 0 };
	static struct shards S; /* large: the shards' datapaths */
	CUcontext ctx = NULL;
	unsigned long uid = 0, dev = 0, streams = 1, threads = 1, fill = 16, reserve = 0, klimit = 0, burst = 0;
	char *end;
	bool fuse = true, fence = false, fuse_copies = true, spread_lanes = false, chain_launches = true;
	int c, rc;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'x': break;
		case 'd':
			errno = 0;
			dev = strtoul(optarg, &end, 10);
			if (errno || *end || dev > 1024)
				return EXEC_EXIT_USAGE;
			break;
		case 'u':
			if (!opt_num(optarg, 1, 0xfffffffeul, &uid))
				return EXEC_EXIT_USAGE;
			break;
		case 'l': libcuda = optarg; break;
		case 'F':
			if (!opt_yes_no(optarg, &fuse))
				return EXEC_EXIT_USAGE;
			break;
		case 'f':
			if (!opt_yes_no(optarg, &fence))
				return EXEC_EXIT_USAGE;
			break;
		case 'C':
			if (!opt_yes_no(optarg, &fuse_copies))
				return EXEC_EXIT_USAGE;
			break;
		case 'L':
			if (!opt_yes_no(optarg, &spread_lanes))
				return EXEC_EXIT_USAGE;
			break;
		case 'K':
			if (!opt_yes_no(optarg, &chain_launches))
				return EXEC_EXIT_USAGE;
			break;
		case 'S':
			if (!opt_num(optarg, 1, 8, &streams))
				return EXEC_EXIT_USAGE;
			break;
		case 'T':
			if (!opt_num(optarg, 1, EXEC_THREADS_MAX, &threads))
				return EXEC_EXIT_USAGE;
			break;
		case 'P':
			if (!opt_num(optarg, 0, 4096, &fill))
				return EXEC_EXIT_USAGE;
			break;
		case 'R':
			if (!opt_num(optarg, 0, 8, &reserve))
				return EXEC_EXIT_USAGE;
			break;
		case 'H':
			if (!opt_num(optarg, 0, 3600000, &klimit))
				return EXEC_EXIT_USAGE;
			break;
		case 'B':
			if (!opt_num(optarg, 0, 50, &burst))
				return EXEC_EXIT_USAGE;
			break;
		default: return EXEC_EXIT_USAGE;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	/* nvrtc.c reaps its helpers with waitpid and needs their status: children are not auto-reaped */
	signal(SIGCHLD, SIG_DFL);
	r.device = (uint32_t)dev;
	/*
	 * The serving thread is on every tenant's latency path and shares the
	 * CPUs with tenants that spin while they wait: run it ahead of them.
	 * Only root may raise it; before the drop.
	 */
	if (geteuid() == 0 && setpriority(PRIO_PROCESS, 0, EXEC_NICE) < 0)
		exec_log((unsigned)dev, "cannot raise the executor's priority: %s", strerror(errno));
	if (drop_root((uint32_t)uid, r.reason, sizeof(r.reason)) < 0) {
		r.status = -OOO_ENODEV;
		rc = EXEC_EXIT_NODEV;
	} else {
		/* die with oood rather than outlive it; set after setuid, which clears it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/*
		 * Not dumpable either: no core with tenants' data in it, and no
		 * ptrace or /proc/PID/mem even by a process of its own uid (the
		 * NVRTC helper).
		 */
		prctl(PR_SET_DUMPABLE, 0);
		if (getppid() == 1)
			return 1;
		rc = open_device(&api, libcuda, (unsigned)dev, &r, &ctx);
	}
	if (rc == 0) {
		CUdevice d;

		if (api.p_cuDeviceGet(&d, (int)dev) != CUDA_SUCCESS ||
		    memory_init(&mem, &api, d, (unsigned)dev, fence, r.reason, sizeof(r.reason)) < 0) {
			r.status = -OOO_ENODEV;
			rc = 1;
		}
	}
	if (rc)
		exec_log((unsigned)dev, "%s", r.reason);
	if (send_msg(EXEC_CTL_FD, EXEC_MSG_READY, &r, sizeof(r)) < 0)
		rc = rc ? rc : 1;
	/*
	 * A fenced executor keeps one serving thread: its sessions' windows are
	 * handed out from the shared memory state as launches come.
	 */
	if (fence && threads > 1) {
		exec_log((unsigned)dev, "serving_threads = %lu: a fenced executor serves with one thread", threads);
		threads = 1;
	}
	S.n = (unsigned)threads;
	S.fill = (uint32_t)fill;
	S.threaded = S.n > 1;
	S.ctx = ctx;
	S.fatal_efd = -1;
	if (S.threaded && (S.fatal_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 && rc == 0) {
		exec_log((unsigned)dev, "eventfd: %s", strerror(errno));
		rc = 1;
	}
	for (unsigned i = 0; i < S.n; i++) {
		struct shard *h = &S.sh[i];

		dp_init(&h->dp, &api);
		h->dp.cc_major = (int)r.cc_major;
		h->dp.cc_minor = (int)r.cc_minor;
		h->dp.fuse = fuse;
		h->dp.fuse_copies = fuse_copies;
		h->dp.spread_lanes = spread_lanes;
		h->dp.chain_launches = chain_launches;
		h->dp.urgent_reserve = (uint32_t)reserve;
		h->dp.burst_wait_ns = (uint32_t)burst * 1000u;
		h->dp.kernel_limit_ns = (uint64_t)klimit * 1000000u;
		h->dp.fence = fence;
		h->dp.mem = &mem;
		h->dp.streams = (uint32_t)streams;
		h->dp.fatal_all = S.threaded ? &S.fatal_all : NULL;
		if (S.threaded) {
			S.dps[i] = &h->dp;
			h->dp.peers = S.dps;
			h->dp.npeers = S.n;
		}
		pthread_mutex_init(&h->mu, NULL);
		h->wake = -1;
		if (!S.threaded)
			continue;
		if ((h->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
			if (rc == 0)
				exec_log((unsigned)dev, "serving thread %u: %s", i, strerror(errno ? errno : ENOMEM));
			rc = rc ? rc : 1;
		}
	}
	if (rc == 0)
		rc = S.threaded ? serve_threaded(EXEC_CTL_FD, &mem, &S) : serve(EXEC_CTL_FD, &mem, &S);
	for (unsigned i = 0; i < S.n; i++) {
		if (S.sh[i].dp.hung) {
			/*
			 * A kernel still runs and never ends: freeing memory or
			 * releasing the context would wait for it. The process's
			 * end is what stops it (the driver tears the context down).
			 */
			fflush(NULL);
			_exit(1);
		}
	}
	for (unsigned i = 0; i < S.n; i++)
		if (rc == 1 && S.sh[i].dp.fault)
			rc = EXEC_EXIT_FAULT; /* oood counts it against the tenant whose work it was (dpath_on_fault) */
	if (rc == EXEC_EXIT_FAULT) {
		struct datapath *dps[EXEC_THREADS_MAX];

		for (unsigned i = 0; i < S.n; i++)
			dps[i] = &S.sh[i].dp;
		dp_report_fault(dps, S.n);
	}
	for (unsigned i = 0; i < S.n; i++) {
		struct shard *h = &S.sh[i];

		dp_fini(&h->dp);
		pthread_mutex_destroy(&h->mu);
		if (h->wake >= 0)
			close(h->wake);
		free(h->pfd);
	}
	if (S.fatal_efd >= 0)
		close(S.fatal_efd);
	memory_fini(&mem);
	if (ctx) {
		CUdevice d;
		if (api.p_cuDeviceGet(&d, (int)dev) == CUDA_SUCCESS)
			api.p_cuDevicePrimaryCtxRelease(d);
	}
	cuda_unload(&api);
	return rc;
}
