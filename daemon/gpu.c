/* SPDX-License-Identifier: MIT */
#include "gpu.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "../client/wire.h"
#include "buffers.h"
#include "dpath.h"
#include "log.h"
#include "pidfd.h"
#include "place.h"
#include "server.h"
#include "telemetry.h"

/* Bounded copy that tolerates overlap (message text moves between buffers of one gpu). */
static void copy_text(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memmove(dst, src, n);
	dst[n] = '\0';
}

static void arm_exit(struct server *srv, struct gpu *g)
{
	struct io_uring_sqe *sqe = server_get_sqe(srv);

	if (!sqe)
		return;
	io_uring_prep_poll_add(sqe, g->pidfd, POLLIN);
	io_uring_sqe_set_data64(sqe, ud_make(OP_GPU_EXIT, g->idx, 0));
	g->inflight++;
}

static void arm_recv(struct server *srv, struct gpu *g)
{
	struct io_uring_sqe *sqe = server_get_sqe(srv);

	if (!sqe)
		return;
	g->riov = (struct iovec){ g->rbuf, sizeof(g->rbuf) };
	memset(&g->rmsg, 0, sizeof(g->rmsg));
	memset(&g->rcmsg, 0, sizeof(g->rcmsg));
	g->rmsg.msg_iov = &g->riov;
	g->rmsg.msg_iovlen = 1;
	g->rmsg.msg_control = g->rcmsg.buf;
	g->rmsg.msg_controllen = sizeof(g->rcmsg.buf);
	io_uring_prep_recvmsg(sqe, g->ctl, &g->rmsg, MSG_CMSG_CLOEXEC);
	io_uring_sqe_set_data64(sqe, ud_make(OP_GPU_RECV, g->idx, 0));
	g->inflight++;
}

static void set_backoff(struct server *srv, struct gpu *g, const char *cause)
{
	uint64_t now = server_now_ns();
	char why[OOO_ERRMSG_MAX - 48];

	copy_text(why, sizeof(why), cause); /* cause may be g->reason itself */
	if (g->ready_ns && now - g->ready_ns >= GPU_STABLE_NS)
		g->backoff_ms = GPU_BACKOFF_MIN_MS;
	else if (!g->backoff_ms)
		g->backoff_ms = GPU_BACKOFF_MIN_MS;
	else if (g->backoff_ms < GPU_BACKOFF_MAX_MS)
		g->backoff_ms = g->backoff_ms * 2 > GPU_BACKOFF_MAX_MS ? GPU_BACKOFF_MAX_MS : g->backoff_ms * 2;
	g->state = OOO_DEV_RESTARTING;
	g->restart_at_ns = now + (uint64_t)g->backoff_ms * 1000000ull;
	snprintf(g->reason, sizeof(g->reason), "%s; restart %u in %u ms", why, g->restarts + 1, g->backoff_ms);
	log_warn("gpu%u: %s", g->idx, g->reason);
}

static void spawn(struct server *srv, struct gpu *g)
{
	char dev[16];
	int sv[2];
	pid_t pid;

	g->exited = false;
	g->have_info = false;
	g->have_stats = false; /* a new executor's counters start from zero */
	g->ready_ns = 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		set_backoff(srv, g, "cannot create the executor's socket");
		return;
	}
	snprintf(dev, sizeof(dev), "%u", g->idx);
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		set_backoff(srv, g, "cannot fork an executor");
		return;
	}
	if (pid == 0) {
		sigset_t none;

		/* oood blocks the signals its signalfd reads; the executor must not */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		mps_executor_env(srv);
		if (sv[1] == EXEC_CTL_FD)
			fcntl(sv[1], F_SETFD, 0);
		else if (dup2(sv[1], EXEC_CTL_FD) < 0)
			_exit(127);
		char streams[16];

		snprintf(streams, sizeof(streams), "%u", srv->policy->streams);
		execl(srv->gpus.exe, "oood", "--executor", "--device", dev, "--user", srv->policy->executor_user,
		      "--libcuda", srv->policy->libcuda, "--fuse", srv->policy->fuse ? "yes" : "no", "--streams", streams,
		      (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	{
		/* bursts (re-imports, re-attaches) must not meet a full socket: sends never block */
		int big = 16 << 20;
		if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)) < 0)
			(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	}
	g->pid = pid;
	g->ctl = sv[0];
	g->pidfd = sys_pidfd_open(pid);
	g->started_ns = server_now_ns();
	g->state = OOO_DEV_STARTING;
	if (g->pidfd < 0) {
		/* without a pidfd we cannot watch it from the loop: do not run it blind */
		log_err("gpu%u: pidfd_open: %s", g->idx, strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(g->ctl);
		g->ctl = -1;
		g->pid = 0;
		set_backoff(srv, g, "cannot watch the executor (pidfd_open failed)");
		return;
	}
	g->mps_client = mps_running(srv) && srv->mps.executor_client; /* what mps_executor_env gave it */
	log_info("gpu%u: executor pid %d started%s", g->idx, (int)pid, g->mps_client ? " as an MPS client" : "");
	{
		char tmsg[OOO_ERRMSG_MAX];

		g->tm_tracked = telemetry_track(srv, pid, OOO_TRACK_EXECUTOR, false, tmsg, sizeof(tmsg)) == 0;
	}
	arm_exit(srv, g);
	arm_recv(srv, g);
}

int gpu_start(struct server *srv)
{
	struct gpus *gs = &srv->gpus;
	ssize_t n;

	for (unsigned i = 0; i < GPU_MAX; i++) {
		gs->g[i].idx = i;
		gs->g[i].pidfd = gs->g[i].ctl = -1;
	}
	gs->n = 0;
	gs->enabled = srv->policy->executor;
	if (!gs->enabled) {
		snprintf(gs->reason, sizeof(gs->reason), "executors are disabled by the configuration (executor = no)");
		log_info("%s", gs->reason);
		return 0;
	}
	n = readlink("/proc/self/exe", gs->exe, sizeof(gs->exe) - 1);
	if (n < 0) {
		snprintf(gs->reason, sizeof(gs->reason), "cannot find the oood binary: %s", strerror(errno));
		return log_errno(LOG_ERR, -errno, "readlink /proc/self/exe");
	}
	gs->exe[n] = '\0';
	gs->n = 1; /* executor 0 reports how many devices there are */
	spawn(srv, &gs->g[0]);
	return 0;
}

static void finalize_exit(struct server *srv, struct gpu *g)
{
	char why[160];
	int st = g->wstatus;

	close(g->pidfd);
	close(g->ctl);
	g->pidfd = g->ctl = -1;
	if (g->tm_tracked)
		telemetry_untrack(srv, g->pid, OOO_TRACK_EXECUTOR, false);
	g->tm_tracked = false;
	g->pid = 0;
	g->have_stats = false;
	buffers_gpu_lost(srv, g->idx);
	dpath_gpu_lost(srv, g->idx);
	if (srv->stopping) {
		g->state = OOO_DEV_STOPPED;
		return;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == EXEC_EXIT_NODEV) {
		g->state = OOO_DEV_FAILED;
		if (!g->have_info || !g->info.reason[0])
			snprintf(g->reason, sizeof(g->reason), "executor found no usable device");
		else
			copy_text(g->reason, sizeof(g->reason), g->info.reason);
		log_warn("gpu%u: %s; not restarting", g->idx, g->reason);
		return;
	}
	if (WIFSIGNALED(st))
		snprintf(why, sizeof(why), "executor killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else if (g->have_info && g->info.status < 0)
		snprintf(why, sizeof(why), "executor failed: %.120s", g->info.reason);
	else
		snprintf(why, sizeof(why), "executor exited with status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	set_backoff(srv, g, why);
	g->restarts++;
}

static struct gpu *gpu_at(struct server *srv, uint32_t idx)
{
	return idx < GPU_MAX ? &srv->gpus.g[idx] : NULL;
}

void gpu_on_exit(struct server *srv, uint32_t idx, int res)
{
	struct gpu *g = gpu_at(srv, idx);

	if (!g || !g->inflight)
		return;
	g->inflight--;
	if (res < 0 && res != -ECANCELED) {
		log_warn("gpu%u: watching the executor failed: %s", idx, strerror(-res));
		kill(g->pid, SIGKILL);
	}
	if (!g->exited) {
		/* the pidfd is readable once the process is a zombie: reap it now */
		if (waitpid(g->pid, &g->wstatus, 0) == g->pid)
			g->exited = true;
		/* its socket end is closed; wake our recv in case the kernel has not yet */
		shutdown(g->ctl, SHUT_RDWR);
	}
	g->have_stats = false; /* the counters of a dead executor describe nothing that runs */
	if (!g->inflight)
		finalize_exit(srv, g);
}

static void on_ready(struct server *srv, struct gpu *g, const struct exec_ready *r)
{
	memmove(&g->info, r, sizeof(g->info)); /* r points into g->rbuf */
	r = &g->info;
	g->have_info = true;
	g->info.name[sizeof(g->info.name) - 1] = '\0';
	g->info.reason[sizeof(g->info.reason) - 1] = '\0';
	if (r->status < 0) {
		/* the executor exits next; finalize_exit reports the reason */
		copy_text(g->reason, sizeof(g->reason), g->info.reason);
		return;
	}
	g->state = OOO_DEV_READY;
	g->ready_ns = server_now_ns();
	g->ping_ns = g->pong_ns = 0;
	g->reason[0] = '\0';
	buffers_gpu_ready(srv, g->idx);
	dpath_gpu_ready(srv, g->idx);
	parts_gpu_ready(srv, g);
	log_info("gpu%u: %s, %u SMs, compute %u.%u, %.1f GiB, driver %d.%d, executor pid %d", g->idx, g->info.name,
		 g->info.sm_count, g->info.cc_major, g->info.cc_minor, (double)g->info.mem_total / (1 << 30),
		 g->info.driver_version / 1000, g->info.driver_version % 1000 / 10, (int)g->pid);
	/* executor 0 tells how many devices there are: start one executor for each */
	if (g->idx == 0 && srv->gpus.n == 1 && r->device_count > 1) {
		uint32_t want = r->device_count > GPU_MAX ? GPU_MAX : r->device_count;

		if (r->device_count > GPU_MAX)
			log_warn("the driver reports %u devices; oood serves the first %u", r->device_count, GPU_MAX);
		srv->gpus.n = want;
		for (uint32_t i = 1; i < want && !srv->stopping; i++)
			spawn(srv, &srv->gpus.g[i]);
	}
}

/*
 * EXEC_MSG_STATS is recognised here, before exec_msg_check: it is unsolicited
 * (never a reply to a pending request), and a payload of another size (an
 * executor of another build) is logged and ignored, never a reason to kill the
 * executor. A header that is itself malformed still goes to exec_msg_check.
 */
static bool is_stats(const void *buf, size_t len)
{
	struct ooo_msg_hdr h;

	if (len < sizeof(h))
		return false;
	memcpy(&h, buf, sizeof(h));
	return h.magic == OOO_PROTO_MAGIC && h.version == OOO_PROTO_VERSION && h.len == len && !h.flags &&
	       h.type == EXEC_MSG_STATS;
}

/* At most one warning per GPU_STATS_WARN_NS, with the number ignored since the last one. */
static void stats_ignore(struct gpu *g, const char *why)
{
	uint64_t now = server_now_ns();

	g->stats_dropped++;
	if (g->stats_warn_ns && now - g->stats_warn_ns < GPU_STATS_WARN_NS)
		return;
	if (g->stats_dropped > 1)
		log_warn("gpu%u: ignoring the executor's scheduler counters: %s (%u ignored since the last warning)",
			 g->idx, why, g->stats_dropped);
	else
		log_warn("gpu%u: ignoring the executor's scheduler counters: %s", g->idx, why);
	g->stats_warn_ns = now;
	g->stats_dropped = 0;
}

static void on_stats(struct gpu *g, const void *payload, size_t plen)
{
	struct ooo_sched_counters *c = &g->stats;
	char why[96];

	if (g->exited)
		return; /* read after the executor died: nothing runs that they describe */
	if (g->state != OOO_DEV_READY) {
		stats_ignore(g, "sent before the executor reported ready");
		return;
	}
	if (plen != sizeof(*c)) {
		snprintf(why, sizeof(why), "payload of %zu bytes, expected %zu", plen, sizeof(*c));
		stats_ignore(g, why);
		return;
	}
	memcpy(c, payload, sizeof(*c));
	/* what admin clients get must be well formed: bounded counts, terminated printable names, unused rows zero */
	if (c->nclasses > OOO_SCHED_CLASSES)
		c->nclasses = OOO_SCHED_CLASSES;
	if (c->npartitions > OOO_SCHED_PARTITIONS)
		c->npartitions = OOO_SCHED_PARTITIONS;
	for (uint32_t i = 0; i < OOO_SCHED_CLASSES; i++) {
		if (i >= c->nclasses) {
			memset(&c->classes[i], 0, sizeof(c->classes[i]));
			continue;
		}
		c->classes[i].name[sizeof(c->classes[i].name) - 1] = '\0';
		wire_sanitize(c->classes[i].name);
	}
	for (uint32_t i = 0; i < OOO_SCHED_PARTITIONS; i++) {
		if (i >= c->npartitions) {
			memset(&c->parts[i], 0, sizeof(c->parts[i]));
			continue;
		}
		c->parts[i].name[sizeof(c->parts[i].name) - 1] = '\0';
		wire_sanitize(c->parts[i].name);
	}
	g->have_stats = true;
	g->stats_ns = server_now_ns();
}

/* The descriptor passed with the last message (at most one is kept), or -1. */
static int take_fd(struct gpu *g)
{
	int fd = -1;

	if (g->rmsg.msg_controllen < sizeof(struct cmsghdr))
		return -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&g->rmsg); cm; cm = CMSG_NXTHDR(&g->rmsg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int f;
			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (fd < 0)
				fd = f;
			else
				close(f);
		}
	}
	return fd;
}

void gpu_on_recv(struct server *srv, uint32_t idx, int res)
{
	struct gpu *g = gpu_at(srv, idx);
	const void *payload;
	uint16_t type;
	size_t plen;
	int fd;

	if (!g || !g->inflight)
		return;
	g->inflight--;
	fd = res >= 0 ? take_fd(g) : -1;
	if (res > 0 && is_stats(g->rbuf, (size_t)res)) {
		on_stats(g, g->rbuf + sizeof(struct ooo_msg_hdr), (size_t)res - sizeof(struct ooo_msg_hdr));
	} else if (res > 0 && exec_msg_check(g->rbuf, (size_t)res, &type, &payload, &plen) == 0) {
		if (type == EXEC_MSG_READY) {
			on_ready(srv, g, payload);
		} else if (type == (EXEC_MSG_PING | OOO_MSG_REPLY)) {
			g->pong_ns = server_now_ns();
			if (plen == sizeof(uint64_t)) {
				uint64_t sid;
				memcpy(&sid, payload, sizeof(sid));
				dpath_on_barrier(srv, idx, sid);
			}
		} else if (type == (EXEC_MSG_MODULE_LOAD | OOO_MSG_REPLY) || type == (EXEC_MSG_HOST_MAP | OOO_MSG_REPLY) ||
			   type == (EXEC_MSG_HOST_UNMAP | OOO_MSG_REPLY) ||
			   type == (EXEC_MSG_MODULE_UNLOAD | OOO_MSG_REPLY) ||
			   type == (EXEC_MSG_KERNEL_GET | OOO_MSG_REPLY)) {
			dpath_on_xreply(srv, idx, type, payload);
		} else if (type == (EXEC_MSG_PARTITIONS | OOO_MSG_REPLY)) {
			parts_on_reply(srv, g, payload);
		} else if (type == (EXEC_MSG_ATTACH | OOO_MSG_REPLY) || type == (EXEC_MSG_DETACH | OOO_MSG_REPLY) ||
			   type == (EXEC_MSG_QUEUE | OOO_MSG_REPLY)) {
			struct exec_mem_reply r;
			memcpy(&r, payload, sizeof(r));
			dpath_on_reply(srv, idx, type, r.status, r.req, r.reason);
		} else if (type & OOO_MSG_REPLY && type != (EXEC_MSG_PING | OOO_MSG_REPLY)) {
			struct exec_mem_reply r;
			memcpy(&r, payload, sizeof(r));
			buffers_on_reply(srv, idx, type, &r, fd);
			fd = -1; /* buffers took it */
		}
	} else if (res > 0) {
		log_err("gpu%u: malformed message from the executor, killing it", idx);
		kill(g->pid, SIGKILL);
	}
	if (fd >= 0)
		close(fd);
	if (res > 0 && !g->exited) {
		arm_recv(srv, g);
		return;
	}
	if (!g->inflight)
		finalize_exit(srv, g);
}

void gpu_tick(struct server *srv, uint64_t now)
{
	struct gpus *gs = &srv->gpus;

	for (uint32_t i = 0; i < gs->n; i++) {
		struct gpu *g = &gs->g[i];

		if (srv->stopping) {
			if (g->pid && !g->exited && now >= srv->stop_deadline_ns)
				kill(g->pid, SIGKILL);
			continue;
		}
		if (g->state == OOO_DEV_RESTARTING && !g->pid && !g->inflight && now >= g->restart_at_ns)
			spawn(srv, g);
		if (g->state != OOO_DEV_READY || !g->pid || g->exited)
			continue;
		/* watchdog: an executor stuck (a kernel that never ends under a blocking call) is replaced */
		if (g->ping_ns > g->pong_ns && now - g->ping_ns > GPU_HANG_NS) {
			log_err("gpu%u: executor pid %d has not answered for %llu s, killing it", g->idx, (int)g->pid,
				(unsigned long long)((now - g->ping_ns) / 1000000000ull));
			kill(g->pid, SIGKILL);
			g->ping_ns = g->pong_ns = 0;
		} else if (g->ping_ns <= g->pong_ns && now - g->ping_ns >= GPU_PING_NS) {
			if (gpu_send(srv, g->idx, EXEC_MSG_PING, NULL, 0, -1) == 0)
				g->ping_ns = now;
		}
	}
}

void gpu_stop_all(struct server *srv)
{
	for (uint32_t i = 0; i < srv->gpus.n; i++) {
		struct gpu *g = &srv->gpus.g[i];

		if (g->pid && !g->exited)
			kill(g->pid, SIGTERM);
		else if (!g->pid)
			g->state = OOO_DEV_STOPPED;
	}
}

bool gpu_all_stopped(const struct server *srv)
{
	for (uint32_t i = 0; i < srv->gpus.n; i++) {
		if (srv->gpus.g[i].pid || srv->gpus.g[i].inflight)
			return false;
	}
	return true;
}

void gpu_fini(struct server *srv)
{
	for (uint32_t i = 0; i < srv->gpus.n; i++) {
		struct gpu *g = &srv->gpus.g[i];

		if (g->pid && !g->exited) {
			kill(g->pid, SIGKILL);
			waitpid(g->pid, NULL, 0);
		}
		if (g->pidfd >= 0)
			close(g->pidfd);
		if (g->ctl >= 0)
			close(g->ctl);
		g->pidfd = g->ctl = -1;
		g->pid = 0;
		g->inflight = 0;
	}
}

int gpu_send(struct server *srv, uint32_t idx, uint16_t type, const void *p, size_t n, int fd)
{
	return gpu_send_fds(srv, idx, type, p, n, &fd, fd >= 0 ? 1 : 0);
}

int gpu_send_fds(struct server *srv, uint32_t idx, uint16_t type, const void *p, size_t n, const int *fds, int nfds)
{
	struct gpu *g = gpu_at(srv, idx);
	unsigned char buf[512];
	struct iovec iov = { buf, 0 };
	union {
		struct cmsghdr align;
		char b[CMSG_SPACE(sizeof(int) * 4)];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t len;

	if (!g || g->state != OOO_DEV_READY || g->ctl < 0)
		return -OOO_ENODEV;
	len = wire_encode(buf, sizeof(buf), type, 0, 0, p, n);
	if (len < 0)
		return (int)len;
	iov.iov_len = (size_t)len;
	if (nfds > 4)
		return -EINVAL;
	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	/* never block the loop on an executor: a full socket means it is stuck */
	if (sendmsg(g->ctl, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != len)
		return -errno;
	return 0;
}

int gpu_pick(const struct server *srv, const struct session *s, uint32_t want)
{
	struct place_gpu pg[GPU_MAX];
	const struct list_node *n;
	int affinity = -1, r;

	if (want != OOO_DEVICE_ANY)
		return want < srv->gpus.n && srv->gpus.g[want].state == OOO_DEV_READY ? (int)want : -OOO_ENODEV;
	memset(pg, 0, sizeof(pg));
	for (uint32_t i = 0; i < srv->gpus.n; i++)
		pg[i].ready = srv->gpus.g[i].state == OOO_DEV_READY;
	list_for_each(n, &srv->dpaths) {
		const struct sdpath *d = list_entry(n, struct sdpath, node);

		if (d->gpu < GPU_MAX)
			pg[d->gpu].sessions++;
	}
	list_for_each(n, &srv->buffers) {
		const struct buffer *b = list_entry(n, struct buffer, anode);

		if (b->gpu < GPU_MAX)
			pg[b->gpu].mem_bytes += b->size;
	}
	if (s && s->dp)
		affinity = (int)s->dp->gpu;
	else if (s && s->bufs.next != &s->bufs)
		affinity = (int)list_entry(s->bufs.next, struct buffer, snode)->gpu;
	r = place_pick(pg, srv->gpus.n, affinity);
	return r < 0 ? -OOO_ENODEV : r;
}

void gpu_counts(const struct server *srv, uint32_t *known, uint32_t *ready)
{
	*known = *ready = 0;
	for (uint32_t i = 0; i < srv->gpus.n; i++) {
		const struct gpu *g = &srv->gpus.g[i];

		if (g->have_info && g->info.status == 0)
			(*known)++;
		if (g->state == OOO_DEV_READY)
			(*ready)++;
	}
}

const char *gpu_reason(const struct server *srv)
{
	uint32_t known, ready;

	gpu_counts(srv, &known, &ready);
	if (ready)
		return "";
	if (!srv->gpus.enabled || !srv->gpus.n)
		return srv->gpus.reason;
	return srv->gpus.g[0].reason[0] ? srv->gpus.g[0].reason : "executor starting";
}

bool gpu_sched_counters(const struct server *srv, uint32_t idx, uint64_t now_ns, struct ooo_sched_counters *c,
			uint64_t *age_ns)
{
	const struct gpu *g = idx < srv->gpus.n ? &srv->gpus.g[idx] : NULL;

	if (!g || !g->have_stats)
		return false;
	memcpy(c, &g->stats, sizeof(*c));
	*age_ns = now_ns > g->stats_ns ? now_ns - g->stats_ns : 0;
	return true;
}
