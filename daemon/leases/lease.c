/* SPDX-License-Identifier: MIT */
/* Native leases: MPS shares for ooo-run (lease.h). */

#include "lease.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../executors/gpu.h"
#include "../log.h"
#include "../pidfd.h"
#include "../mps/mps.h"
#include "../server.h"
#include "../telemetry/telemetry.h"
#include "../../proto/wire.h"

static const char *prio_name(uint32_t p)
{
	return p == OOO_LEASE_PRIO_BELOW ? "below" : "normal";
}

/* ---- the table ------------------------------------------------------------------------------ */

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* A pidfd of the process that connected on sock (cred from SO_PEERCRED), alive now; or -errno with why. */
static int peer_pidfd(int sock, const struct peer_cred *cred, char *why, size_t cap)
{
	socklen_t len = sizeof(int);
	int fd = -1;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0) {
		/* a pidfd of the connector itself: a reused pid cannot be it */
		if (sys_pidfd_signal(fd, 0) < 0) {
			close(fd);
			snprintf(why, cap, "pid %u, which connected, has exited: a lease is for the process that asks",
				 cred->pid);
			return -ESRCH;
		}
		return fd;
	}
	/* kernels before 6.5: the pid, held only if it still belongs to the connector's uid */
	fd = sys_pidfd_open((pid_t)cred->pid);
	if (fd < 0) {
		snprintf(why, cap, "cannot watch pid %u: %s", cred->pid, strerror(errno));
		return -errno ? -errno : -ESRCH;
	}
	{
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%u", cred->pid);
		if (stat(path, &st) < 0 || st.st_uid != cred->uid || sys_pidfd_signal(fd, 0) < 0) {
			close(fd);
			snprintf(why, cap, "pid %u is not the connecting uid %u's process any more", cred->pid, cred->uid);
			return -ESRCH;
		}
	}
	return fd;
}

static void on_exit_cqe(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe);

static int lease_init(struct server *srv)
{
	struct leases *L;
	int op;

	L = srv->leases = calloc(1, sizeof(*L));
	if (!L)
		return -ENOMEM;
	L->slot = calloc(LEASE_MAX, sizeof(*L->slot));
	if (!L->slot)
		return -ENOMEM;
	L->next_id = 1;
	op = server_add_op(srv, on_exit_cqe);
	if (op < 0)
		return op;
	L->op = (uint32_t)op;
	/* the MPS control daemon waits for the leased clients at shutdown (mps is earlier in the table) */
	srv->mps->clients = lease_live;
	srv->mps->terminate_clients = lease_terminate_all;
	return 0;
}

static void lease_fini(struct server *srv)
{
	struct leases *L = srv->leases;

	if (!L)
		return;
	for (uint32_t i = 0; L->slot && i < LEASE_MAX; i++) {
		if (L->slot[i].used && L->slot[i].pidfd >= 0)
			close(L->slot[i].pidfd);
	}
	free(L->slot);
	free(L);
	srv->leases = NULL;
}

uint32_t lease_live(const struct server *srv)
{
	return srv->leases->live;
}

static void arm(struct server *srv, uint32_t i)
{
	struct lease *l = &srv->leases->slot[i];
	struct io_uring_sqe *sqe;

	if (!l->used || l->poll_armed)
		return;
	sqe = server_get_sqe(srv);
	if (!sqe)
		return; /* the tick arms it */
	io_uring_prep_poll_add(sqe, l->pidfd, POLLIN);
	io_uring_sqe_set_data64(sqe, ud_make((enum op)srv->leases->op, i, l->gen));
	l->poll_armed = true;
}

/* How many GPUs leases can name: [mps] devices, else what executor 0 reported, else /dev/nvidiaN. */
static uint32_t gpu_count(const struct server *srv)
{
	uint32_t n = srv->policy->mps.devices;
	DIR *d;
	struct dirent *e;

	if (n)
		return n;
	if (gpu_dev_info(srv, 0))
		n = gpu_dev_info(srv, 0)->info.device_count;
	if (!n && (d = opendir("/dev"))) {
		while ((e = readdir(d))) {
			const char *s = e->d_name;
			if (strncmp(s, "nvidia", 6) || !s[6])
				continue;
			s += 6;
			while (*s >= '0' && *s <= '9')
				s++;
			if (!*s)
				n++;
		}
		closedir(d);
	}
	return n > OOO_MPS_GPUS ? OOO_MPS_GPUS : n;
}

static void fill_view(const struct server *srv, struct lease_view *v, uint32_t uid, const char *cls)
{
	const struct leases *L = srv->leases;

	memset(v, 0, sizeof(*v));
	v->ngpus = gpu_count(srv);
	/* the executor's slot is kept while it restarts too: a lease must not take it meanwhile */
	v->exec_clients = mps_running(srv) && srv->mps->executor_client && srv->policy->executor ? 1 : 0;
	v->exec_reserve = srv->policy->mps.executor_reserve;
	v->max_clients = srv->policy->mps.max_clients;
	for (uint32_t i = 0; i < LEASE_MAX; i++) {
		const struct lease *l = &L->slot[i];

		if (!l->used)
			continue;
		if (l->g.device < OOO_MPS_GPUS) {
			v->reserved[l->g.device] += l->g.sm_pct;
			v->clients[l->g.device]++;
		}
		if (l->uid == uid && !strcmp(l->class_name, cls))
			v->tenant_leases++;
	}
	for (uint32_t i = 0; i < L->noffers; i++) {
		if (!strcmp(L->offers[i].class_name, cls))
			v->offer = L->offers[i].pct;
	}
	/* a GPU's executors beyond the first (more trust domains, the spare) are MPS clients too */
	for (uint32_t d = 0; v->exec_clients && d < OOO_MPS_GPUS; d++) {
		uint32_t n = gpu_dev_mps_clients(srv, d);

		if (n > 1)
			v->exec_extra[d] = n - 1;
	}
}

static void visible_name(const struct server *srv, uint32_t dev, char *out, size_t cap)
{
	const struct gpu *g = gpu_dev_info(srv, dev);
	static const int dash[] = { 4, 6, 8, 10 };
	size_t k;

	if (!g || !g->have_info || g->info.status != 0) {
		snprintf(out, cap, "%u", dev);
		return;
	}
	/* the UUID: stable whatever order CUDA enumerates the devices in */
	k = (size_t)snprintf(out, cap, "GPU-");
	for (int i = 0, d = 0; i < 16 && k + 3 < cap; i++) {
		if (d < 4 && i == dash[d]) {
			out[k++] = '-';
			d++;
		}
		k += (size_t)snprintf(out + k, cap - k, "%02x", g->info.uuid[i]);
	}
}

static void lease_request(struct server *srv, struct conn *c, uint32_t seq, const struct ooo_msg_lease_req *req)
{
	struct leases *L = srv->leases;
	const struct peer_cred *cred = server_conn_cred(c);
	struct session *s = server_conn_session(c);
	const struct ooo_class *cls;
	struct ooo_msg_lease rep;
	struct lease_view v;
	struct lease *l = NULL;
	char why[OOO_ERRMSG_MAX], visible[64];
	uint32_t slot = 0;
	int r, fd;

	if (!mps_running(srv)) {
		L->refused++;
		server_reply_error(srv, c, OOO_MSG_LEASE, seq, -OOO_ENODEV, "MPS is not running on this host: %s",
				   srv->mps->reason[0] ? srv->mps->reason : "off");
		return;
	}
	/* a class other than the session's must also match this peer */
	cls = policy_find_class(srv->policy, req->class_name[0] ? req->class_name : s->tenant->terms.name);
	if (!cls || !cls->admit ||
	    (req->class_name[0] &&
	     !policy_class_matches_cgroup(cls, cred->uid, cred->gid, cred->groups, cred->ngroups, cred->cgroup))) {
		L->refused++;
		server_reply_error(srv, c, OOO_MSG_LEASE, seq, -OOO_EDENIED, "class '%s' %s", req->class_name[0] ? req->class_name : s->tenant->terms.name,
				   !cls ? "does not exist" : !cls->admit ? "admits no one" : "does not match this uid, its groups or its cgroup");
		return;
	}
	for (uint32_t i = 0; i < LEASE_MAX; i++) {
		if (L->slot[i].used && L->slot[i].pid == (pid_t)cred->pid) {
			L->refused++;
			server_reply_error(srv, c, OOO_MSG_LEASE, seq, -EEXIST, "pid %u already holds lease %llu",
					   cred->pid, (unsigned long long)L->slot[i].id);
			return;
		}
		if (!L->slot[i].used && !l) {
			l = &L->slot[i];
			slot = i;
		}
	}
	if (!l) {
		L->refused++;
		server_reply_error(srv, c, OOO_MSG_LEASE, seq, -OOO_ELIMIT, "%u leases live, the most oood keeps", LEASE_MAX);
		return;
	}
	fill_view(srv, &v, cred->uid, cls->name);
	r = lease_decide(&v, cls, req, &l->g, why, sizeof(why));
	if (r < 0) {
		L->refused++;
		log_debug("lease refused: pid %u uid %u class '%s': %s", cred->pid, cred->uid, cls->name, why);
		server_reply_error(srv, c, OOO_MSG_LEASE, seq, r, "%s", why);
		return;
	}
	/*
	 * The process that connected, not whoever has its pid now: the socket can
	 * outlive its connector (fork, descriptor passing) and the pid be reused
	 * by another uid's process. SO_PEERPIDFD names the connector itself.
	 */
	fd = peer_pidfd(server_conn_fd(c), cred, why, sizeof(why));
	if (fd < 0) {
		L->refused++;
		server_reply_error(srv, c, OOO_MSG_LEASE, seq, fd, "%s", why);
		return;
	}
	memset(&rep, 0, sizeof(rep));
	visible_name(srv, l->g.device, visible, sizeof(visible));
	if (lease_env(&l->g, L->next_id, srv->mps->pipe_dir, srv->mps->log_dir, visible, rep.env, sizeof(rep.env)) < 0) {
		close(fd);
		L->refused++;
		server_reply_error(srv, c, OOO_MSG_LEASE, seq, -ENAMETOOLONG, "the lease's environment is too long");
		return;
	}
	l->used = true;
	l->gen++;
	l->poll_armed = false;
	l->id = L->next_id++;
	l->pid = (pid_t)cred->pid;
	l->pidfd = fd;
	l->uid = cred->uid;
	wire_strcpy(l->class_name, sizeof(l->class_name), cls->name);
	wire_strcpy(l->cmd, sizeof(l->cmd), req->cmd);
	wire_sanitize(l->cmd);
	l->started_ns = server_now_ns();
	l->flags = 0;
	l->sync_p99_ns = l->syncs = l->launches = 0;
	l->term_at_ns = l->kill_at_ns = 0;
	L->live++;
	L->total++;
	arm(srv, slot);
	{
		char tmsg[OOO_ERRMSG_MAX];
		l->tm_tracked = telemetry_track(srv, l->pid, OOO_TRACK_LEASE, false, tmsg, sizeof(tmsg)) == 0;
	}
	rep.id = l->id;
	rep.device = l->g.device;
	rep.sm_pct = l->g.sm_pct;
	rep.priority = l->g.priority;
	rep.mem_bytes = l->g.mem_bytes;
	wire_strcpy(rep.class_name, sizeof(rep.class_name), cls->name);
	wire_strcpy(rep.msg, sizeof(rep.msg), l->g.note);
	log_info("lease %llu: pid %u uid %u class '%s' GPU %u %u%% mem %llu MiB priority %s: '%s'",
		 (unsigned long long)l->id, cred->pid, cred->uid, cls->name, l->g.device, l->g.sm_pct,
		 (unsigned long long)(l->g.mem_bytes >> 20), prio_name(l->g.priority), l->cmd);
	server_reply(srv, c, OOO_MSG_LEASE, seq, &rep, sizeof(rep), -1);
}

static void release(struct server *srv, uint32_t i, const char *why)
{
	struct leases *L = srv->leases;
	struct lease *l = &L->slot[i];

	log_info("lease %llu (pid %d, GPU %u, %u%%) released: %s", (unsigned long long)l->id, (int)l->pid, l->g.device,
		 l->g.sm_pct, why);
	if (l->tm_tracked)
		telemetry_untrack(srv, l->pid, OOO_TRACK_LEASE, false);
	if (l->pidfd >= 0)
		close(l->pidfd);
	l->pidfd = -1;
	l->used = false;
	l->gen++; /* a poll still in flight on the closed fd completes under the old tag */
	L->live--;
}

static void lease_on_exit(struct server *srv, uint32_t slot, uint32_t gen, int res)
{
	struct lease *l;

	if (slot >= LEASE_MAX || !srv->leases->slot)
		return;
	l = &srv->leases->slot[slot];
	if (!l->used || l->gen != gen)
		return;
	l->poll_armed = false;
	if (res < 0 && res != -ECANCELED) {
		arm(srv, slot);
		return;
	}
	release(srv, slot, l->flags & OOO_LEASE_EVICTED ? "evicted process exited" : "process exited");
}

/* Raise the share a class offers to its next leases when one of its tenants misses the class SLO. */
static void feedback(struct server *srv, struct lease *l)
{
	struct leases *L = srv->leases;
	const struct ooo_class *cls = policy_find_class(srv->policy, l->class_name);
	struct lease_offer *o = NULL;
	uint32_t before;

	if (!cls || !srv->policy->mps.feedback)
		return;
	for (uint32_t i = 0; i < L->noffers; i++) {
		if (!strcmp(L->offers[i].class_name, l->class_name))
			o = &L->offers[i];
	}
	if (!o) {
		if (L->noffers == POLICY_MAX_CLASSES)
			return;
		o = &L->offers[L->noffers++];
		wire_strcpy(o->class_name, sizeof(o->class_name), l->class_name);
		o->pct = 0;
	}
	before = o->pct ? o->pct : cls->native_sm < cls->sm_share ? cls->native_sm : cls->sm_share;
	o->pct = lease_raise_offer(o->pct, cls, srv->policy->mps.feedback_step);
	snprintf(L->feedback, sizeof(L->feedback),
		 "class '%.60s': next leases offered %u%% (was %u%%): lease %llu pid %d sync p99 %llu us > slo %u us",
		 l->class_name, o->pct, before, (unsigned long long)l->id, (int)l->pid,
		 (unsigned long long)(l->sync_p99_ns / 1000), cls->slo_us);
	log_info("mps feedback: %s", L->feedback);
}

static void lease_tick(struct server *srv, uint64_t now)
{
	struct leases *L = srv->leases;
	bool read = now - L->read_ns >= LEASE_READ_NS; /* the timers below every tick, the maps less often */

	if (read)
		L->read_ns = now;

	for (uint32_t i = 0; L->slot && i < LEASE_MAX; i++) {
		struct lease *l = &L->slot[i];
		struct ooo_proc_rec pr;

		if (!l->used)
			continue;
		arm(srv, i);
		if (l->term_at_ns && now >= l->term_at_ns) {
			l->term_at_ns = 0;
			if (sys_pidfd_signal(l->pidfd, SIGTERM) == 0)
				log_info("lease %llu: pid %d still running, SIGTERM", (unsigned long long)l->id, (int)l->pid);
		}
		if (l->kill_at_ns && now >= l->kill_at_ns) {
			l->kill_at_ns = 0;
			if (sys_pidfd_signal(l->pidfd, SIGKILL) == 0)
				log_warn("lease %llu: pid %d still running, SIGKILL", (unsigned long long)l->id, (int)l->pid);
		}
		if (read && telemetry_proc(srv, l->pid, &pr) == 0) {
			const struct ooo_class *cls = policy_find_class(srv->policy, l->class_name);

			l->syncs = pr.syncs[0] + pr.syncs[1] + pr.syncs[2];
			l->launches = pr.launches;
			l->sync_p99_ns = lease_hist_quantile(pr.sync_hist, OOO_TM_BUCKETS, 0.99);
			if (cls && lease_is_slow(l->syncs, l->sync_p99_ns, cls->slo_us) && !(l->flags & OOO_LEASE_SLOW)) {
				l->flags |= OOO_LEASE_SLOW;
				feedback(srv, l);
			}
		}
	}
}

static void lease_reload(struct server *srv)
{
	struct leases *L = srv->leases;
	uint32_t k = 0;

	for (uint32_t i = 0; i < L->noffers; i++) {
		const struct ooo_class *cls = policy_find_class(srv->policy, L->offers[i].class_name);

		if (!cls)
			continue; /* the class is gone: so is its offer */
		L->offers[k] = L->offers[i];
		if (L->offers[k].pct > cls->sm_share)
			L->offers[k].pct = cls->sm_share;
		k++;
	}
	L->noffers = k;
}

static void evict_one(struct server *srv, struct lease *l, uint32_t grace_ms, struct ooo_msg_evict_reply *rep)
{
	char why[OOO_ERRMSG_MAX];
	uint64_t now = server_now_ns(), g = (uint64_t)grace_ms * 1000000ull;
	int r = mps_reachable(srv) ? mps_terminate_pid(srv, l->pid, why, sizeof(why)) : -ENOTCONN;

	if (!(l->flags & OOO_LEASE_EVICTED))
		srv->leases->evicted++; /* once per lease, however often it is asked to go */
	l->flags |= OOO_LEASE_EVICTED;
	if (r == 0) {
		rep->how = OOO_EVICT_MPS;
		l->term_at_ns = now + g;
		l->kill_at_ns = now + 2 * g;
		snprintf(rep->msg, sizeof(rep->msg),
			 "lease %llu: terminate_client sent to pid %d; SIGTERM in %u ms and SIGKILL in %u ms if it is still running",
			 (unsigned long long)l->id, (int)l->pid, grace_ms, 2 * grace_ms);
		return;
	}
	rep->how = OOO_EVICT_SIGNAL;
	sys_pidfd_signal(l->pidfd, SIGTERM);
	l->term_at_ns = 0;
	l->kill_at_ns = now + g;
	snprintf(rep->msg, sizeof(rep->msg), "lease %llu: pid %d is not an MPS client (%.100s): SIGTERM sent, SIGKILL in %u ms",
		 (unsigned long long)l->id, (int)l->pid, r == -ENOTCONN ? "MPS is not running" : why, grace_ms);
}

static int lease_admin_evict(struct server *srv, const struct ooo_msg_evict *req, struct ooo_msg_evict_reply *rep)
{
	struct leases *L = srv->leases;

	memset(rep, 0, sizeof(*rep));
	rep->pid = req->pid;
	for (uint32_t i = 0; i < LEASE_MAX; i++) {
		struct lease *l = &L->slot[i];

		if (!l->used || l->pid != (pid_t)req->pid)
			continue;
		evict_one(srv, l, req->grace_ms ? req->grace_ms : srv->policy->mps.evict_grace_ms, rep);
		return 0;
	}
	snprintf(rep->msg, sizeof(rep->msg), "pid %u holds no lease (oooctl leases lists them)", req->pid);
	return -ESRCH;
}

void lease_terminate_all(struct server *srv)
{
	struct leases *L = srv->leases;

	for (uint32_t i = 0; L->slot && i < LEASE_MAX; i++) {
		struct ooo_msg_evict_reply rep;

		if (!L->slot[i].used)
			continue;
		evict_one(srv, &L->slot[i], srv->policy->mps.evict_grace_ms ? srv->policy->mps.evict_grace_ms : 1, &rep);
		log_info("shutdown: %s", rep.msg);
	}
}

static ssize_t lease_admin_list(struct server *srv, const struct ooo_msg_list_req *req, void *buf, size_t cap)
{
	struct leases *L = srv->leases;
	struct ooo_msg_list hdr = { .rec_size = sizeof(struct ooo_lease_rec) };
	char *out = (char *)buf + sizeof(hdr);
	uint64_t now = server_now_ns();
	uint32_t seen = 0;

	if (cap < sizeof(hdr))
		return -EMSGSIZE;
	hdr.total = L->live;
	hdr.offset = req->offset > L->live ? L->live : req->offset;
	/* in id order: slots are reused, ids are not */
	for (uint64_t last = 0;;) {
		const struct lease *next = NULL;
		struct ooo_lease_rec r;

		for (uint32_t i = 0; i < LEASE_MAX; i++) {
			const struct lease *l = &L->slot[i];
			if (l->used && l->id > last && (!next || l->id < next->id))
				next = l;
		}
		if (!next)
			break;
		last = next->id;
		if (seen++ < hdr.offset)
			continue;
		if (sizeof(hdr) + (hdr.count + 1) * sizeof(r) > cap)
			break;
		memset(&r, 0, sizeof(r));
		r.id = next->id;
		r.pid = (uint32_t)next->pid;
		r.uid = next->uid;
		r.device = next->g.device;
		r.sm_pct = next->g.sm_pct;
		r.priority = next->g.priority;
		r.flags = next->flags;
		r.mem_bytes = next->g.mem_bytes;
		r.age_ns = now - next->started_ns;
		r.syncs = next->syncs;
		r.sync_p99_ns = next->sync_p99_ns;
		r.launches = next->launches;
		wire_strcpy(r.class_name, sizeof(r.class_name), next->class_name);
		wire_strcpy(r.cmd, sizeof(r.cmd), next->cmd);
		memcpy(out + hdr.count * sizeof(r), &r, sizeof(r));
		hdr.count++;
	}
	memcpy(buf, &hdr, sizeof(hdr));
	return (ssize_t)(sizeof(hdr) + hdr.count * sizeof(struct ooo_lease_rec));
}

static ssize_t lease_admin_mps(struct server *srv, void *buf, size_t cap)
{
	const struct mps *m = srv->mps;
	const struct leases *L = srv->leases;
	struct ooo_msg_mps r;
	struct lease_view v;

	if (cap < sizeof(r))
		return -EMSGSIZE;
	memset(&r, 0, sizeof(r));
	fill_view(srv, &v, UINT32_MAX, "");
	r.state = m->state;
	r.pid = (uint32_t)m->pid;
	r.restarts = m->restarts;
	r.multiuser = m->multiuser;
	r.executor_client = v.exec_clients;
	r.max_clients = v.max_clients;
	r.ngpus = v.ngpus;
	r.leases = L->live;
	r.leases_total = L->total;
	r.refused = L->refused;
	r.evicted = L->evicted;
	r.commands = m->commands;
	r.command_errors = m->command_errors;
	wire_strcpy(r.control, sizeof(r.control), m->control);
	wire_strcpy(r.pipe_dir, sizeof(r.pipe_dir), m->pipe_dir);
	wire_strcpy(r.reason, sizeof(r.reason), m->reason);
	wire_strcpy(r.feedback, sizeof(r.feedback), L->feedback);
	for (uint32_t d = 0; d < v.ngpus && d < OOO_MPS_GPUS; d++) {
		r.gpus[d].reserved_pct = v.reserved[d] + v.exec_reserve;
		r.gpus[d].leases = v.clients[d];
		r.gpus[d].clients = v.clients[d] + (v.exec_clients ? v.exec_clients + v.exec_extra[d] : 0);
	}
	memcpy(buf, &r, sizeof(r));
	return (ssize_t)sizeof(r);
}

/* ---- the module -------------------------------------------------------------- */

static void on_exit_cqe(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe)
{
	lease_on_exit(srv, slot, gen, cqe->res);
}

static void on_lease(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	if (srv->stopping) {
		srv->leases->refused++;
		server_reply_error(srv, c, OOO_MSG_LEASE, seq, -OOO_ESHUTDOWN, "oood is shutting down");
		return;
	}
	lease_request(srv, c, seq, payload);
}

static void on_evict(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	const struct peer_cred *cred = server_conn_cred(c);
	struct ooo_msg_evict_reply rep;
	int r = lease_admin_evict(srv, payload, &rep);

	if (r < 0) {
		server_reply_error(srv, c, OOO_MSG_EVICT, seq, r, "%s", rep.msg);
		return;
	}
	log_info("oooctl (pid %u uid %u): evict: %s", cred->pid, cred->uid, rep.msg);
	server_reply(srv, c, OOO_MSG_EVICT, seq, &rep, sizeof(rep), -1);
}

static ssize_t build_leases(struct server *srv, const void *payload, void *buf, size_t cap)
{
	return lease_admin_list(srv, payload, buf, cap);
}

static ssize_t build_mps(struct server *srv, const void *payload, void *buf, size_t cap)
{
	return lease_admin_mps(srv, buf, cap);
}

static const struct handler handlers[] = {
	{ .type = OOO_MSG_LEASE, .flags = H_TENANT, .refusal = "leases are asked for on the tenant socket",
	  .fn = on_lease },
	{ .type = OOO_MSG_EVICT, .flags = H_ADMIN, .fn = on_evict },
	{ .type = OOO_MSG_LEASES, .flags = H_ADMIN, .build = build_leases },
	{ .type = OOO_MSG_MPS, .flags = H_ADMIN, .build = build_mps },
};

const struct module lease_module = {
	.name = "leases",
	.init = lease_init,
	.tick = lease_tick,
	.reload = lease_reload,
	.fini = lease_fini,
	.handlers = handlers,
	.nhandlers = sizeof(handlers) / sizeof(handlers[0]),
};
