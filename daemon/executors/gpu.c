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

#include "../../proto/fdpass.h"
#include "../../proto/wire.h"
#include "../exec/nvrtc.h"
#include "../log.h"
#include "../mps/mps.h"
#include "../pidfd.h"
#include "../sched/place.h"
#include "../server.h"
#include "../telemetry/telemetry.h"

/* Bounded copy that tolerates overlap (message text moves between buffers of one gpu). */
static void copy_text(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memmove(dst, src, n);
	dst[n] = '\0';
}

static const char *slot_name(const struct gpu *g)
{
	return g->domain[0] ? g->domain : "spare";
}

/* Call hook `fn` of every listener that has one, with the arguments after it. */
#define TELL(gs, fn, ...)                                                   \
	do {                                                                \
		for (uint32_t l_ = 0; l_ < (gs)->nlisteners; l_++) {        \
			if ((gs)->listener[l_]->fn)                         \
				(gs)->listener[l_]->fn(__VA_ARGS__);        \
		}                                                           \
	} while (0)

static void parked_retry(struct server *srv);
static void parked_expire(struct server *srv, uint64_t now);
static int slot_start(struct server *srv, uint32_t dev, const char *domain);

static void arm_exit(struct server *srv, struct gpu *g)
{
	struct io_uring_sqe *sqe = server_get_sqe(srv);

	if (!sqe)
		return;
	io_uring_prep_poll_add(sqe, g->pidfd, POLLIN);
	io_uring_sqe_set_data64(sqe, ud_make((enum op)srv->gpus->op_exit, g->idx, 0));
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
	io_uring_sqe_set_data64(sqe, ud_make((enum op)srv->gpus->op_recv, g->idx, 0));
	g->inflight++;
}

/*
 * The slot's executor died (or could not be started): restart it after a
 * backoff that starts at GPU_BACKOFF_MIN_MS and doubles up to
 * GPU_BACKOFF_MAX_MS, from the minimum again after GPU_STABLE_NS ready.
 * `fault`: it exited for a kernel fault of its tenants' work (the driver
 * and the executor are sound): the first such death after a stable run
 * (or ever) restarts at once, since every tenant of the domain waits for
 * it; one more within GPU_STABLE_NS backs off as any death does.
 */
static void set_backoff(struct server *srv, struct gpu *g, const char *cause, bool fault)
{
	uint64_t now = server_now_ns();
	char why[OOO_ERRMSG_MAX - 48];
	bool stable = g->ready_ns && now - g->ready_ns >= GPU_STABLE_NS;

	copy_text(why, sizeof(why), cause); /* cause may be g->reason itself */
	if (fault && (stable || (!g->backoff_ms && !g->restarts)))
		g->backoff_ms = 0;
	else if (stable || !g->backoff_ms)
		g->backoff_ms = GPU_BACKOFF_MIN_MS;
	else if (g->backoff_ms < GPU_BACKOFF_MAX_MS)
		g->backoff_ms = g->backoff_ms * 2 > GPU_BACKOFF_MAX_MS ? GPU_BACKOFF_MAX_MS : g->backoff_ms * 2;
	g->state = OOO_DEV_RESTARTING;
	g->restart_at_ns = now + (uint64_t)g->backoff_ms * 1000000ull;
	snprintf(g->reason, sizeof(g->reason), "%s; restart %u in %u ms", why, g->restarts + 1, g->backoff_ms);
	log_warn("gpu%u (%s): %s", g->dev, slot_name(g), g->reason);
}

_Static_assert(POLICY_EXEC_UIDS_MAX == EXEC_MAX, "executor_uids can give every slot a uid of its own");

/* The uid slot g's executor runs as (when oood is root): executor_uids' g->idx-th. */
static uint32_t exec_uid(const struct server *srv, const struct gpu *g)
{
	return srv->policy->exec_uid_lo + g->idx;
}

/*
 * The executor answers no ping while it waits for an NVRTC compile (its
 * helper's time limit, a second to reap it): the watchdog must not take that
 * for a hung executor, even with a ping sent just before the compile began.
 */
_Static_assert((unsigned long long)NVRTC_TIME_LIMIT_MS * 1000000ull + 1000000000ull + GPU_PING_NS < GPU_HANG_NS,
	       "an NVRTC compile at its time limit would trip the executor watchdog");

static void spawn(struct server *srv, struct gpu *g)
{
	char dev[16];
	int sv[2];
	pid_t pid;

	g->exited = false;
	g->hung_ns = 0;
	g->have_fault = false;
	g->have_info = false;
	g->have_stats = false; /* a new executor's counters start from zero */
	g->ready_ns = 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		set_backoff(srv, g, "cannot create the executor's socket", false);
		return;
	}
	snprintf(dev, sizeof(dev), "%u", g->dev);
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		set_backoff(srv, g, "cannot fork an executor", false);
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
		char streams[16], threads[16], fill[16], reserve[16], klimit[16], burst[16], uid[16];

		snprintf(streams, sizeof(streams), "%u", srv->policy->streams);
		snprintf(threads, sizeof(threads), "%u", srv->policy->serving_threads);
		snprintf(fill, sizeof(fill), "%u", srv->policy->shard_sessions);
		snprintf(reserve, sizeof(reserve), "%u", srv->policy->urgent_reserve);
		snprintf(klimit, sizeof(klimit), "%u", srv->policy->kernel_time_limit_ms);
		snprintf(burst, sizeof(burst), "%u", srv->policy->burst_wait_us);
		snprintf(uid, sizeof(uid), "%u", exec_uid(srv, g));
		execl(srv->gpus->exe, "oood", "--executor", "--device", dev, "--uid", uid,
		      "--libcuda", srv->policy->libcuda, "--fuse", srv->policy->fuse ? "yes" : "no", "--fuse-copies",
		      srv->policy->fuse_copies ? "yes" : "no", "--spread-lanes", srv->policy->spread_lanes ? "yes" : "no",
		      "--chain-launches", srv->policy->chain_launches ? "yes" : "no",
		      "--streams", streams, "--urgent-reserve", reserve, "--burst-wait-us", burst, "--kernel-limit-ms", klimit,
		      "--threads", threads, "--shard-sessions", fill, "--fence", strcmp(g->domain, OOO_DOMAIN_FENCED) ? "no" : "yes", (char *)NULL);
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
		log_err("gpu%u (%s): pidfd_open: %s", g->dev, slot_name(g), strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(g->ctl);
		g->ctl = -1;
		g->pid = 0;
		set_backoff(srv, g, "cannot watch the executor (pidfd_open failed)", false);
		return;
	}
	g->mps_client = mps_running(srv) && srv->mps->executor_client; /* what mps_executor_env gave it */
	log_info("gpu%u: executor pid %d started for %s%s", g->dev, (int)pid, g->domain[0] ? g->domain : "the spare",
		 g->mps_client ? " as an MPS client" : "");
	{
		char tmsg[OOO_ERRMSG_MAX];

		g->tm_tracked = telemetry_track(srv, pid, OOO_TRACK_EXECUTOR, false, tmsg, sizeof(tmsg)) == 0;
	}
	arm_exit(srv, g);
	arm_recv(srv, g);
}

/* Take a free slot for (dev, domain) and start its executor. Returns the slot, or -OOO_ELIMIT when none is free. */
static int slot_start(struct server *srv, uint32_t dev, const char *domain)
{
	struct gpus *gs = srv->gpus;

	/* slot i runs as executor_uids' i-th uid: no more slots than uids */
	for (uint32_t i = 0; i < EXEC_MAX && i < srv->policy->exec_uid_n; i++) {
		struct gpu *g = &gs->g[i];

		if (g->used || g->pid || g->inflight)
			continue;
		g->used = true;
		g->retire = false;
		g->dev = dev;
		snprintf(g->domain, sizeof(g->domain), "%s", domain);
		g->idle_ns = 0;
		g->restarts = 0;
		g->backoff_ms = 0;
		g->stats_warn_ns = 0;
		g->stats_dropped = 0;
		g->reason[0] = '\0';
		memset(&g->info, 0, sizeof(g->info));
		TELL(gs, claimed, srv, g);
		if (i >= gs->n)
			gs->n = i + 1;
		spawn(srv, g);
		return (int)i;
	}
	log_warn("gpu%u: no executor slot left for %s (%u in use; executor_uids gives %u)", dev,
		 domain[0] ? domain : "a spare", EXEC_MAX < srv->policy->exec_uid_n ? EXEC_MAX : srv->policy->exec_uid_n,
		 srv->policy->exec_uid_n);
	return -OOO_ELIMIT;
}

/* A slot no longer used: free for another device or domain. */
static void slot_free(struct server *srv, struct gpu *g)
{
	struct gpus *gs = srv->gpus;

	g->used = false;
	g->retire = false;
	g->domain[0] = '\0';
	g->state = OOO_DEV_STOPPED;
	g->have_info = false;
	g->have_stats = false;
	while (gs->n && !gs->g[gs->n - 1].used && !gs->g[gs->n - 1].pid && !gs->g[gs->n - 1].inflight)
		gs->n--;
}

static void on_exit_cqe(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe);
static void on_recv_cqe(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe);

static int gpu_init(struct server *srv)
{
	struct gpus *gs = calloc(1, sizeof(*gs));
	int r;

	if (!gs)
		return -ENOMEM;
	srv->gpus = gs;
	for (unsigned i = 0; i < EXEC_MAX; i++) {
		gs->g[i].idx = i;
		gs->g[i].pidfd = gs->g[i].ctl = -1;
	}
	list_init(&gs->parked);
	r = server_add_op(srv, on_exit_cqe);
	if (r < 0)
		return r;
	gs->op_exit = (uint32_t)r;
	r = server_add_op(srv, on_recv_cqe);
	if (r < 0)
		return r;
	gs->op_recv = (uint32_t)r;
	return 0;
}

int gpu_listen(struct server *srv, const struct exec_listener *l)
{
	struct gpus *gs = srv->gpus;

	if (gs->nlisteners >= GPU_LISTENERS)
		return -ENOSPC;
	gs->listener[gs->nlisteners++] = l;
	return 0;
}


static int gpu_start(struct server *srv)
{
	struct gpus *gs = srv->gpus;
	ssize_t n;

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
	gs->ndev = 1; /* the first executor reports how many devices there are */
	slot_start(srv, 0, "");
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
	/* before lost: the sessions a fault report names are still known then (closed ones too, dpath.c gone) */
	if (WIFEXITED(st) && WEXITSTATUS(st) == EXEC_EXIT_FAULT)
		TELL(srv->gpus, fault, srv, g->idx, g->domain, g->have_fault ? &g->fault : NULL);
	TELL(srv->gpus, lost, srv, g->idx);
	if (srv->stopping) {
		g->state = OOO_DEV_STOPPED;
		return;
	}
	if (g->retire) {
		log_info("gpu%u: executor of %s stopped (idle for %u ms)", g->dev, g->domain, srv->policy->domain_idle_ms);
		slot_free(srv, g);
		parked_retry(srv);
		return;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == EXEC_EXIT_NODEV) {
		g->state = OOO_DEV_FAILED;
		if (!g->have_info || !g->info.reason[0])
			snprintf(g->reason, sizeof(g->reason), "executor found no usable device");
		else
			copy_text(g->reason, sizeof(g->reason), g->info.reason);
		log_warn("gpu%u: %s; not restarting", g->dev, g->reason);
		parked_retry(srv);
		return;
	}
	if (WIFSIGNALED(st))
		snprintf(why, sizeof(why), "executor killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else if (g->have_info && g->info.status < 0)
		snprintf(why, sizeof(why), "executor failed: %.120s", g->info.reason);
	else
		snprintf(why, sizeof(why), "executor exited with status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	set_backoff(srv, g, why, WIFEXITED(st) && WEXITSTATUS(st) == EXEC_EXIT_FAULT);
	g->restarts++;
	if (!g->backoff_ms && !g->inflight)
		spawn(srv, g); /* at once: the tick would add up to SERVER_TICK_NS */
}

static struct gpu *gpu_at(struct server *srv, uint32_t idx)
{
	return idx < EXEC_MAX ? &srv->gpus->g[idx] : NULL;
}

static void gpu_on_exit(struct server *srv, uint32_t idx, int res)
{
	struct gpu *g = gpu_at(srv, idx);

	if (!g || !g->inflight)
		return;
	g->inflight--;
	if (res < 0 && res != -ECANCELED) {
		log_warn("gpu%u (%s): watching the executor failed: %s", g->dev, slot_name(g), strerror(-res));
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
	TELL(srv->gpus, ready, srv, g);
	log_info("gpu%u: %s, %u SMs, compute %u.%u, %.1f GiB, driver %d.%d, executor pid %d (%s)", g->dev,
		 g->info.name, g->info.sm_count, g->info.cc_major, g->info.cc_minor, (double)g->info.mem_total / (1 << 30),
		 g->info.driver_version / 1000, g->info.driver_version % 1000 / 10, (int)g->pid,
		 g->domain[0] ? g->domain : "spare");
	/* the first executor tells how many devices there are: a spare for each of the others */
	if (g->idx == 0 && srv->gpus->ndev == 1 && r->device_count > 1) {
		uint32_t want = r->device_count > GPU_MAX ? GPU_MAX : r->device_count;

		if (r->device_count > GPU_MAX)
			log_warn("the driver reports %u devices; oood serves the first %u", r->device_count, GPU_MAX);
		srv->gpus->ndev = want;
		for (uint32_t i = 1; i < want && !srv->stopping; i++)
			slot_start(srv, i, "");
	}
	parked_retry(srv);
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
		log_warn("gpu%u (%s): ignoring the executor's scheduler counters: %s (%u ignored since the last warning)",
			 g->dev, slot_name(g), why, g->stats_dropped);
	else
		log_warn("gpu%u (%s): ignoring the executor's scheduler counters: %s", g->dev, slot_name(g), why);
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
	int fd;

	fdpass_take(&g->rmsg, &fd, 1);
	return fd;
}

/* The listener that takes the replies to request type `req` (EXEC_MSG_*), or NULL. */
static const struct exec_listener *listener_of(const struct gpus *gs, uint16_t req)
{
	for (uint32_t i = 0; i < gs->nlisteners; i++) {
		const struct exec_listener *l = gs->listener[i];

		for (size_t k = 0; l->reply && k < l->nreplies; k++) {
			if (l->replies[k] == req)
				return l;
		}
	}
	return NULL;
}

static void gpu_on_recv(struct server *srv, uint32_t idx, int res)
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
		} else if (type == EXEC_MSG_HUNG) {
			struct exec_hung h;

			memcpy(&h, payload, sizeof(h));
			/*
			 * One per executor, and only as the executor's own limit allows: a
			 * report is a claim of an executor that handles tenants' input, and
			 * it pays for it with its exit (killed if it does not go, gpu_tick).
			 */
			if (g->hung_ns)
				log_warn("gpu%u (%s): a second hang report from executor pid %d ignored", g->dev,
					 slot_name(g), (int)g->pid);
			else if (!srv->policy->kernel_time_limit_ms || !h.limit_ms || h.ran_ms < h.limit_ms)
				log_warn("gpu%u (%s): a hang report with no limit passed (ran %llu ms, limit %llu ms) ignored",
					 g->dev, slot_name(g), (unsigned long long)h.ran_ms, (unsigned long long)h.limit_ms);
			else
				TELL(srv->gpus, hung, srv, idx, &h);
			if (!g->hung_ns)
				g->hung_ns = server_now_ns();
		} else if (type == EXEC_MSG_FAULT) {
			/* a claim like a hang report's, paid for by the exit that follows (or the watchdog's kill) */
			if (g->have_fault)
				log_warn("gpu%u (%s): a second fault report from executor pid %d ignored", g->dev,
					 slot_name(g), (int)g->pid);
			else
				memcpy(&g->fault, payload, sizeof(g->fault));
			g->have_fault = true;
		} else if (type == (EXEC_MSG_PING | OOO_MSG_REPLY)) {
			g->pong_ns = server_now_ns();
			if (plen == sizeof(uint64_t)) {
				uint64_t sid;
				memcpy(&sid, payload, sizeof(sid));
				TELL(srv->gpus, barrier, srv, idx, sid);
			}
		} else if (type & OOO_MSG_REPLY) {
			const struct exec_listener *l = listener_of(srv->gpus, (uint16_t)(type & ~OOO_MSG_REPLY));

			if (l)
				l->reply(srv, idx, type, payload, plen, &fd);
			else
				log_warn("gpu%u (%s): a reply no module asked for (%#x), ignored", g->dev, slot_name(g),
					 type);
		}
	} else if (res > 0) {
		log_err("gpu%u (%s): malformed message from the executor, killing it", g->dev, slot_name(g));
		kill(g->pid, SIGKILL);
	}
	if (fd >= 0)
		close(fd);
	/*
	 * After the exit too, until the socket is drained: what the executor
	 * sent last (a hang report before its exit) is read before
	 * finalize_exit closes the socket. An executor that exits with our
	 * requests unread in its socket makes the next recv fail with
	 * ECONNRESET once (the socket's error, cleared by that read), before
	 * the messages it sent: read on (seen losing a hang report in
	 * test_fakecuda, where the executor gave up in a control request).
	 */
	if (res > 0 || res == -ECONNRESET) {
		unsigned armed = g->inflight;

		arm_recv(srv, g);
		if (!g->exited || g->inflight > armed)
			return; /* (after the exit, a recv that could not be armed does not hold the end up) */
	}
	if (!g->inflight)
		finalize_exit(srv, g);
}

/* What each slot serves, as the listeners count it (data paths, buffers, including those in flight). */
static void slot_load(const struct server *srv, struct exec_load load[EXEC_MAX])
{
	memset(load, 0, sizeof(struct exec_load) * EXEC_MAX);
	TELL(srv->gpus, load, srv, load);
}

/*
 * Each device keeps one spare executor (unless it serves max_domains domains
 * or has failed), and a domain's executor that has served nothing for
 * domain_idle_ms is stopped.
 */
static void tend_slots(struct server *srv, uint64_t now)
{
	struct gpus *gs = srv->gpus;
	static struct exec_load load[EXEC_MAX]; /* 6 KiB: off the stack; oood has one thread */
	uint64_t idle = (uint64_t)srv->policy->domain_idle_ms * 1000000ull;

	slot_load(srv, load);
	for (uint32_t i = 0; i < gs->n; i++) {
		uint32_t users = load[i].paths + load[i].buffers;

		struct gpu *g = &gs->g[i];

		if (!g->used || !g->domain[0])
			continue;
		if (g->state == OOO_DEV_FAILED && !g->pid && !g->inflight && !users) {
			/* a domain's executor that found no device: its slot goes, the domain may try again */
			log_info("gpu%u: slot of %s freed after its executor failed: %s", g->dev, g->domain, g->reason);
			slot_free(srv, g);
			continue;
		}
		if (g->retire) {
			if (g->pid && !g->exited && now - g->idle_ns > GPU_RETIRE_KILL_NS)
				kill(g->pid, SIGKILL);
			continue;
		}
		if (g->state != OOO_DEV_READY || users) {
			g->idle_ns = 0;
			continue;
		}
		if (!g->idle_ns)
			g->idle_ns = now;
		else if (idle && now - g->idle_ns >= idle && g->pid && !g->exited) {
			g->retire = true;
			g->idle_ns = now; /* now: when it was told to stop */
			kill(g->pid, SIGTERM);
		}
	}
	for (uint32_t dev = 0; dev < gs->ndev; dev++) {
		uint32_t claimed = 0;
		bool spare = false, failed = false;

		for (uint32_t i = 0; i < gs->n; i++) {
			const struct gpu *g = &gs->g[i];

			if (!g->used || g->dev != dev || g->retire)
				continue;
			if (g->state == OOO_DEV_FAILED && !g->domain[0])
				failed = true; /* the GPU's spare found no device: no other spare either */
			if (!g->domain[0])
				spare = true;
			else
				claimed++;
		}
		if (!spare && !failed && claimed < srv->policy->max_domains)
			slot_start(srv, dev, "");
	}
}

static void gpu_tick(struct server *srv, uint64_t now)
{
	struct gpus *gs = srv->gpus;

	if (!srv->stopping && gs->enabled) {
		tend_slots(srv, now);
		parked_expire(srv, now);
	}
	for (uint32_t i = 0; i < gs->n; i++) {
		struct gpu *g = &gs->g[i];

		if (srv->stopping) {
			if (g->pid && !g->exited && now >= srv->stop_deadline_ns)
				kill(g->pid, SIGKILL);
			continue;
		}
		if (g->state == OOO_DEV_RESTARTING && g->used && !g->retire && !g->pid && !g->inflight &&
		    now >= g->restart_at_ns)
			spawn(srv, g);
		if (g->hung_ns && g->pid && !g->exited && now - g->hung_ns > GPU_HUNG_EXIT_NS) {
			log_err("gpu%u (%s): executor pid %d reported a hang %llu s ago and has not exited, killing it",
				g->dev, slot_name(g), (int)g->pid, (unsigned long long)((now - g->hung_ns) / 1000000000ull));
			kill(g->pid, SIGKILL);
			g->hung_ns = now; /* once more after as long, if SIGKILL did not end it yet */
		}
		if (g->state != OOO_DEV_READY || !g->pid || g->exited || g->retire)
			continue;
		/* watchdog: an executor stuck (a kernel that never ends under a blocking call) is replaced */
		if (g->ping_ns > g->pong_ns && now - g->ping_ns > GPU_HANG_NS) {
			log_err("gpu%u (%s): executor pid %d has not answered for %llu s, killing it", g->dev, slot_name(g),
				(int)g->pid,
				(unsigned long long)((now - g->ping_ns) / 1000000000ull));
			kill(g->pid, SIGKILL);
			g->ping_ns = g->pong_ns = 0;
		} else if (g->ping_ns <= g->pong_ns && now - g->ping_ns >= GPU_PING_NS) {
			if (gpu_send(srv, g->idx, EXEC_MSG_PING, NULL, 0, -1) == 0)
				g->ping_ns = now;
		}
	}
}

static void gpu_stop_all(struct server *srv)
{
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		struct gpu *g = &srv->gpus->g[i];

		if (g->pid && !g->exited)
			kill(g->pid, SIGTERM);
		else if (!g->pid)
			g->state = OOO_DEV_STOPPED;
	}
}

static bool gpu_all_stopped(const struct server *srv)
{
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		if (srv->gpus->g[i].pid || srv->gpus->g[i].inflight)
			return false;
	}
	return true;
}

static void gpu_fini(struct server *srv)
{
	if (!srv->gpus)
		return;
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		struct gpu *g = &srv->gpus->g[i];

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
		char b[FDPASS_SPACE(FDPASS_MAX)];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t len;

	if (!g || g->state != OOO_DEV_READY || g->ctl < 0)
		return -OOO_ENODEV;
	len = wire_encode(buf, sizeof(buf), type, 0, 0, p, n);
	if (len < 0)
		return (int)len;
	iov.iov_len = (size_t)len;
	if (fdpass_pack(&mh, u.b, sizeof(u.b), fds, nfds) < 0)
		return -EINVAL;
	/* never block the loop on an executor: a full socket means it is stuck */
	if (sendmsg(g->ctl, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != len)
		return -errno;
	return 0;
}

ssize_t gpu_list_slots(struct server *srv, const struct ooo_msg_list_req *req, void *buf, size_t cap, size_t rec_size,
		       gpu_rec_fn fill)
{
	struct ooo_msg_list hdr = { .rec_size = (uint32_t)rec_size };
	char *out = (char *)buf + sizeof(hdr);
	uint64_t now = server_now_ns();
	uint32_t idx[EXEC_MAX], n = 0;

	if (cap < sizeof(hdr))
		return -EMSGSIZE;
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		if (srv->gpus->g[i].used)
			idx[n++] = i;
	}
	hdr.total = n;
	hdr.offset = req->offset > n ? n : req->offset;
	for (uint32_t k = hdr.offset; k < n && (hdr.count + 1) * rec_size <= cap - sizeof(hdr); k++) {
		void *rec = out + hdr.count * rec_size;

		memset(rec, 0, rec_size);
		fill(srv, &srv->gpus->g[idx[k]], rec, now);
		hdr.count++;
	}
	memcpy(buf, &hdr, sizeof(hdr));
	return (ssize_t)(sizeof(hdr) + hdr.count * rec_size);
}

uint32_t gpu_dev(const struct server *srv, uint32_t idx)
{
	return idx < EXEC_MAX ? srv->gpus->g[idx].dev : idx;
}

const struct gpu *gpu_dev_info(const struct server *srv, uint32_t dev)
{
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		const struct gpu *g = &srv->gpus->g[i];

		if (g->used && g->dev == dev && g->have_info && g->info.status == 0)
			return g;
	}
	return NULL;
}

uint32_t gpu_dev_mps_clients(const struct server *srv, uint32_t dev)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		const struct gpu *g = &srv->gpus->g[i];

		if (g->used && g->dev == dev && g->pid && g->mps_client)
			n++;
	}
	return n;
}

static bool dev_ready(const struct server *srv, uint32_t dev)
{
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		const struct gpu *g = &srv->gpus->g[i];

		if (g->used && g->dev == dev && g->state == OOO_DEV_READY)
			return true;
	}
	return false;
}

/* Whether an executor of device dev (any device for OOO_DEVICE_ANY) is starting or restarting. */
static bool dev_coming(const struct server *srv, uint32_t dev)
{
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		const struct gpu *g = &srv->gpus->g[i];

		if (g->used && !g->retire && (dev == OOO_DEVICE_ANY || g->dev == dev) &&
		    (g->state == OOO_DEV_STARTING || g->state == OOO_DEV_RESTARTING))
			return true;
	}
	return false;
}

/* The slot of `domain` on device dev: see gpu_pick. */
static int slot_for(struct server *srv, uint32_t dev, const char *domain, char *why, size_t cap)
{
	struct gpus *gs = srv->gpus;
	struct gpu *mine = NULL, *spare = NULL;
	uint32_t claimed = 0;

	for (uint32_t i = 0; i < gs->n; i++) {
		struct gpu *g = &gs->g[i];

		if (!g->used || g->dev != dev || g->retire)
			continue;
		if (!g->domain[0]) {
			if (!spare || g->state == OOO_DEV_READY)
				spare = g;
			continue;
		}
		claimed++;
		if (!strcmp(g->domain, domain))
			mine = g;
	}
	if (mine) {
		if (mine->state == OOO_DEV_READY)
			return (int)mine->idx;
		if (mine->state == OOO_DEV_FAILED) {
			snprintf(why, cap, "gpu%u: the executor of trust domain %s failed: %s", dev, domain, mine->reason);
			return -OOO_ENODEV;
		}
		return -EINPROGRESS;
	}
	if (claimed >= srv->policy->max_domains) {
		snprintf(why, cap, "gpu%u serves %u trust domains already (max_domains); %s is not one of them", dev,
			 claimed, domain);
		return -OOO_ELIMIT;
	}
	if (!strcmp(domain, OOO_DOMAIN_FENCED))
		spare = NULL; /* the fenced executor is started as such (--fence): never a spare */
	if (spare && spare->state == OOO_DEV_READY) {
		snprintf(spare->domain, sizeof(spare->domain), "%s", domain);
		spare->idle_ns = 0;
		log_info("gpu%u: trust domain %s claims executor pid %d", dev, domain, (int)spare->pid);
		if (claimed + 1 < srv->policy->max_domains && !srv->stopping)
			slot_start(srv, dev, ""); /* the next domain finds one ready too */
		return (int)spare->idx;
	}
	if (spare && spare->state == OOO_DEV_FAILED) {
		snprintf(why, cap, "gpu%u: %s", dev, spare->reason);
		return -OOO_ENODEV;
	}
	if (spare && spare->state == OOO_DEV_STARTING)
		return -EINPROGRESS; /* claimed when it is ready: parked requests are retried then */
	if (srv->stopping) {
		snprintf(why, cap, "oood is stopping");
		return -OOO_ENODEV;
	}
	if (slot_start(srv, dev, domain) < 0) {
		snprintf(why, cap, "no executor slot left (%u in use)", EXEC_MAX);
		return -OOO_ELIMIT;
	}
	return -EINPROGRESS;
}

int gpu_pick(struct server *srv, const struct session *s, uint32_t want, char *why, size_t cap)
{
	struct gpus *gs = srv->gpus;
	struct place_gpu pg[GPU_MAX];
	static struct exec_load load[EXEC_MAX]; /* off the stack; oood has one thread */
	int affinity = -1, r;

	why[0] = '\0';
	if (!gs->enabled || !gs->n) {
		snprintf(why, cap, "%s", gs->reason);
		return -OOO_ENODEV;
	}
	if (want != OOO_DEVICE_ANY) {
		if (want < gs->ndev && !dev_ready(srv, want) && dev_coming(srv, want))
			return -EINPROGRESS; /* its executors are starting: wait for them */
		if (want >= gs->ndev || !dev_ready(srv, want)) {
			snprintf(why, cap, "gpu%u is not ready (%u devices): %s", want, gs->ndev, gpu_reason(srv));
			return -OOO_ENODEV;
		}
		return slot_for(srv, want, s->domain, why, cap);
	}
	memset(pg, 0, sizeof(pg));
	for (uint32_t d = 0; d < gs->ndev && d < GPU_MAX; d++)
		pg[d].ready = dev_ready(srv, d);
	slot_load(srv, load);
	for (uint32_t i = 0; i < EXEC_MAX; i++) {
		uint32_t dev = gpu_dev(srv, i);

		if (dev < GPU_MAX) {
			pg[dev].sessions += load[i].paths;
			pg[dev].mem_bytes += load[i].mem_bytes;
		}
	}
	/* the last listener that places the session decides (data paths register after buffers) */
	for (uint32_t l = gs->nlisteners; s && affinity < 0 && l-- > 0;) {
		int slot = gs->listener[l]->affinity ? gs->listener[l]->affinity(srv, s) : -1;

		if (slot >= 0)
			affinity = (int)gpu_dev(srv, (uint32_t)slot);
	}
	r = place_pick(pg, gs->ndev < GPU_MAX ? gs->ndev : GPU_MAX, affinity);
	if (r < 0 && (affinity >= 0 ? dev_coming(srv, (uint32_t)affinity) : dev_coming(srv, OOO_DEVICE_ANY)))
		return -EINPROGRESS; /* no GPU ready yet, but executors are starting: wait for them */
	if (r < 0) {
		if (affinity >= 0)
			snprintf(why, cap, "the session's gpu%d is not ready: %s", affinity, gpu_reason(srv));
		else
			snprintf(why, cap, "%s", gpu_reason(srv));
		return -OOO_ENODEV;
	}
	return slot_for(srv, (uint32_t)r, s->domain, why, cap);
}

/* ---- requests waiting for an executor ------------------------------------ */

struct gpu_parked {
	struct list_node node; /* srv->gpus->parked */
	struct conn_ref conn;
	uint64_t session;
	uint64_t deadline_ns;
	uint32_t seq;
	uint16_t type;
	uint32_t len;
	union {
		struct ooo_msg_buf_alloc alloc;
		struct ooo_msg_attach attach;
	} req;
};

static uint64_t redispatch_deadline; /* while parked_retry hands a request back: its original deadline */

int gpu_park(struct server *srv, struct conn *c, uint32_t seq, uint16_t type, const void *req, size_t len)
{
	struct gpus *gs = srv->gpus;
	struct session *s = server_conn_session(c);
	struct gpu_parked *p;
	uint32_t mine = 0;
	struct list_node *n;

	list_for_each(n, &gs->parked) {
		if (list_entry(n, struct gpu_parked, node)->session == s->id)
			mine++;
	}
	if (gs->nparked >= GPU_PARK_MAX || mine >= GPU_PARK_SESSION_MAX || len > sizeof(p->req) ||
	    !(p = calloc(1, sizeof(*p)))) {
		server_reply_error(srv, c, type, seq, -EAGAIN,
				   "%u requests wait for executors to start (%u of this session): try again later",
				   gs->nparked, mine);
		return -EAGAIN;
	}
	p->conn = server_conn_ref(c);
	p->session = s->id;
	p->seq = seq;
	p->type = type;
	p->deadline_ns = redispatch_deadline ? redispatch_deadline : server_now_ns() + GPU_PARK_NS;
	memcpy(&p->req, req, len);
	p->len = (uint32_t)len;
	list_add_tail(&gs->parked, &p->node);
	gs->nparked++;
	if (!redispatch_deadline)
		log_info("session %llu (trust domain %s) waits for its executor to be ready", (unsigned long long)s->id,
			 s->domain);
	return 0;
}

/* The connection of a parked request, if it and its session are still there. */
static struct conn *parked_conn(struct server *srv, const struct gpu_parked *p)
{
	struct conn *c = server_conn_get(srv, p->conn);
	struct session *s = c ? server_conn_session(c) : NULL;

	return s && s->id == p->session ? c : NULL;
}

/* Hand every parked request to its handler again (an executor became ready or failed). */
static void parked_retry(struct server *srv)
{
	struct gpus *gs = srv->gpus;
	struct list_node todo, *n;

	if (list_empty(&gs->parked))
		return;
	/* move the list: handlers that park again append to the (now empty) srv list */
	todo = gs->parked;
	todo.next->prev = &todo;
	todo.prev->next = &todo;
	list_init(&gs->parked);
	gs->nparked = 0;
	while ((n = todo.next) != &todo) {
		struct gpu_parked *p = list_entry(n, struct gpu_parked, node);
		struct conn *c = parked_conn(srv, p);

		list_del(n);
		if (c && !srv->stopping) {
			redispatch_deadline = p->deadline_ns;
			server_redispatch(srv, c, p->seq, p->type, &p->req, p->len);
			redispatch_deadline = 0;
		}
		free(p);
	}
}

static void parked_expire(struct server *srv, uint64_t now)
{
	struct gpus *gs = srv->gpus;
	struct list_node *n, *tmp;

	list_for_each_safe(n, tmp, &gs->parked) {
		struct gpu_parked *p = list_entry(n, struct gpu_parked, node);
		struct conn *c = parked_conn(srv, p);

		if (c && now < p->deadline_ns)
			continue;
		list_del(n);
		gs->nparked--;
		if (c)
			server_reply_error(srv, c, p->type, p->seq, -OOO_ENODEV,
					   "the session's executor (trust domain %s) was not ready within %llu s",
					   server_conn_session(c)->domain, (unsigned long long)(GPU_PARK_NS / 1000000000ull));
		free(p);
	}
}

static void gpu_park_fini(struct server *srv)
{
	struct list_node *n, *tmp;

	if (!srv->gpus->parked.next)
		return;
	list_for_each_safe(n, tmp, &srv->gpus->parked) {
		list_del(n);
		free(list_entry(n, struct gpu_parked, node));
	}
	srv->gpus->nparked = 0;
}

void gpu_counts(const struct server *srv, uint32_t *known, uint32_t *ready)
{
	*known = *ready = 0;
	for (uint32_t d = 0; d < srv->gpus->ndev; d++) {
		if (gpu_dev_info(srv, d))
			(*known)++;
		if (dev_ready(srv, d))
			(*ready)++;
	}
}

const char *gpu_reason(const struct server *srv)
{
	uint32_t known, ready;

	gpu_counts(srv, &known, &ready);
	if (ready)
		return "";
	if (!srv->gpus->enabled || !srv->gpus->n)
		return srv->gpus->reason;
	for (uint32_t i = 0; i < srv->gpus->n; i++) {
		const struct gpu *g = &srv->gpus->g[i];

		if (g->used && g->dev == 0 && g->reason[0])
			return g->reason;
	}
	return "executor starting";
}

bool gpu_sched_counters(const struct server *srv, uint32_t idx, uint64_t now_ns, struct ooo_sched_counters *c,
			uint64_t *age_ns)
{
	const struct gpu *g = idx < srv->gpus->n ? &srv->gpus->g[idx] : NULL;

	if (!g || !g->used || !g->have_stats)
		return false;
	memcpy(c, &g->stats, sizeof(*c));
	*age_ns = now_ns > g->stats_ns ? now_ns - g->stats_ns : 0;
	return true;
}

/* ---- the module -------------------------------------------------------------- */

static void on_exit_cqe(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe)
{
	gpu_on_exit(srv, slot, cqe->res);
}

static void on_recv_cqe(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe)
{
	gpu_on_recv(srv, slot, cqe->res);
}

static void gpu_module_fini(struct server *srv)
{
	if (!srv->gpus)
		return;
	gpu_fini(srv);
	gpu_park_fini(srv);
	free(srv->gpus);
	srv->gpus = NULL;
}

const struct module gpu_module = {
	.name = "executors",
	.init = gpu_init,
	.start = gpu_start,
	.tick = gpu_tick,
	.stop = gpu_stop_all,
	.stopped = gpu_all_stopped,
	.fini = gpu_module_fini,
};
