/* SPDX-License-Identifier: MIT */
/* MPS control: the control daemon as oood's child, and its text commands (mps.h). */

#include "mps.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../log.h"
#include "../pidfd.h"
#include "../server.h"

/* ---- running the control program ----------------------------------------------------------- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The control program's environment: only what MPS reads, plus PATH and the driver's directory. */
static void build_env(const struct mps *m, char bufs[4][PATH_MAX + 32], char **envp)
{
	int n = 0;

	snprintf(bufs[0], sizeof(bufs[0]), "CUDA_MPS_PIPE_DIRECTORY=%s", m->pipe_dir);
	snprintf(bufs[1], sizeof(bufs[1]), "CUDA_MPS_LOG_DIRECTORY=%s", m->log_dir);
	snprintf(bufs[2], sizeof(bufs[2]), "PATH=/usr/local/nvidia/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	envp[n++] = bufs[0];
	envp[n++] = bufs[1];
	envp[n++] = bufs[2];
	if (m->ld_path[0]) {
		snprintf(bufs[3], sizeof(bufs[3]), "LD_LIBRARY_PATH=%s", m->ld_path);
		envp[n++] = bufs[3];
	}
	envp[n] = NULL;
}

static int spawn(const struct mps *m, char *const argv[], int in, int out, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char bufs[4][PATH_MAX + 32], *envp[5];
	sigset_t none, all;
	int r;

	build_env(m, bufs, envp);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	/* oood blocks the signals its signalfd reads: the child must start with none blocked */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	posix_spawn_file_actions_adddup2(&fa, out, 2);
	r = posix_spawn(pid, m->control, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return -r;
}

static int run_control(struct mps *m, const char *input, char *reply, size_t cap)
{
	int in[2], out[2], r, st = 0;
	size_t got = 0;
	bool over = false;
	uint64_t deadline = now_ms() + MPS_CMD_TIMEOUT_MS;
	char *argv[] = { m->control, NULL };
	pid_t pid;

	reply[0] = '\0';
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(out, O_CLOEXEC) < 0) {
		r = -errno;
		close(in[0]);
		close(in[1]);
		return r;
	}
	r = spawn(m, argv, in[0], out[1], &pid);
	close(in[0]);
	close(out[1]);
	if (r < 0) {
		close(in[1]);
		close(out[0]);
		return r;
	}
	m->commands++;
	{
		size_t len = strlen(input);
		/* a few bytes into an empty pipe: never blocks */
		if (write(in[1], input, len) != (ssize_t)len || write(in[1], "\n", 1) != 1)
			r = -EIO;
	}
	close(in[1]);
	for (;;) {
		struct pollfd pfd = { .fd = out[0], .events = POLLIN };
		uint64_t now = now_ms();
		char tmp[512];
		ssize_t k;

		if (now >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
			continue;
		k = read(out[0], tmp, sizeof(tmp));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (got + (size_t)k >= cap) {
			over = true;
			k = (ssize_t)(cap - 1 - got);
		}
		memcpy(reply + got, tmp, (size_t)k);
		got += (size_t)k;
		reply[got] = '\0';
		if (over) {
			r = -E2BIG;
			break;
		}
	}
	close(out[0]);
	if (r < 0)
		kill(pid, SIGKILL);
	/* its output closed: it must still exit within the limit */
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid || (w < 0 && errno != EINTR))
			break;
		if (w == 0 && now_ms() >= deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			if (!r)
				r = -ETIMEDOUT;
			break;
		}
		if (w == 0)
			usleep(1000);
	}
	if (!r && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		r = WIFEXITED(st) && WEXITSTATUS(st) == 127 ? -ENOEXEC : -EIO;
	return r;
}

/*
 * run_control, unless one hung within MPS_STALL_NS: a hung control program
 * must not block the loop again and again (evict, shutdown, readiness
 * probes). -ETIME for both, not -ETIMEDOUT: oooctl reads that as its own
 * request timing out.
 */
static int run_guarded(struct mps *m, const char *cmd, char *reply, size_t cap, bool *ran)
{
	int r;

	*ran = false;
	if (server_now_ns() < m->stall_until_ns) {
		reply[0] = '\0';
		return -ETIME;
	}
	*ran = true;
	r = run_control(m, cmd, reply, cap);
	if (r == -ETIMEDOUT) {
		r = -ETIME;
		m->stall_until_ns = server_now_ns() + MPS_STALL_NS;
	}
	return r;
}

int mps_run(struct server *srv, const char *cmd, char *reply, size_t cap)
{
	struct mps *m = srv->mps;
	bool ran;
	int r;

	if (m->state != OOO_MPS_RUNNING && m->state != OOO_MPS_STARTING && m->state != OOO_MPS_STOPPING)
		return -ENOTCONN;
	r = run_guarded(m, cmd, reply, cap, &ran);
	if (!ran) {
		m->command_errors++; /* refused during a stall: counted, not logged each time */
		return r;
	}
	if (r < 0) {
		m->command_errors++;
		log_warn("mps: '%s': %s", cmd, r == -ETIME ? "no answer within 3 s (or within 10 s of one that had none)" : wire_strerror(r));
	} else {
		log_debug("mps: '%s' -> '%.200s'", cmd, reply);
	}
	return r;
}

static int run_checked(struct server *srv, int kind, const char *cmd, char *reply, size_t cap, char *why, size_t wcap)
{
	int r = mps_run(srv, cmd, reply, cap);

	if (r < 0) {
		mps_why(why, wcap, "%s: %s", cmd,
			r == -ETIME ? "the control program gave no answer within 3 s (commands are refused for 10 s after that)"
				    : wire_strerror(r));
		return r;
	}
	r = mps_check_reply(kind, cmd, reply, why, wcap);
	if (r < 0)
		srv->mps->command_errors++;
	/* a reply that does not parse is the control program's, not a protocol error with oood's peer */
	return r == -EPROTO ? -EBADMSG : r;
}

/* oooctl mps run LINE: check, run, check the reply. */
static int mps_admin_command(struct server *srv, const char *line, char *reply, size_t cap, char *why, size_t wcap)
{
	char cmd[OOO_MPS_LINE_MAX];
	int kind = mps_check_command(line, cmd, sizeof(cmd), why, wcap);

	reply[0] = '\0';
	if (kind < 0)
		return kind;
	if (!mps_running(srv)) {
		mps_why(why, wcap, "MPS is not running: %s", srv->mps->reason[0] ? srv->mps->reason : "off");
		return -ENOTCONN;
	}
	if (kind == MPS_QUIT) {
		mps_why(why, wcap, "quit stops MPS under oood's leases: stop oood instead (it quits MPS last)");
		return -EBUSY;
	}
	return run_checked(srv, kind, cmd, reply, cap, why, wcap);
}

int mps_terminate_pid(struct server *srv, pid_t pid, char *why, size_t wcap)
{
	char reply[MPS_REPLY_MAX], cmd[64];
	pid_t servers[MPS_MAX_PIDS], clients[MPS_MAX_PIDS];
	size_t ns, nc;
	int r;

	r = run_checked(srv, MPS_GET_SERVER_LIST, "get_server_list", reply, sizeof(reply), why, wcap);
	if (r < 0)
		return r;
	r = mps_parse_pids(reply, servers, MPS_MAX_PIDS, &ns, why, wcap);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ns; i++) {
		snprintf(cmd, sizeof(cmd), "get_client_list %d", (int)servers[i]);
		if (run_checked(srv, MPS_GET_CLIENT_LIST, cmd, reply, sizeof(reply), why, wcap) < 0)
			continue;
		if (mps_parse_pids(reply, clients, MPS_MAX_PIDS, &nc, why, wcap) < 0)
			continue;
		for (size_t j = 0; j < nc; j++) {
			if (clients[j] != pid)
				continue;
			snprintf(cmd, sizeof(cmd), "terminate_client %d %d", (int)servers[i], (int)pid);
			return run_checked(srv, MPS_TERMINATE_CLIENT, cmd, reply, sizeof(reply), why, wcap);
		}
	}
	mps_why(why, wcap, "pid %d is not a client of any MPS server (%zu running)", (int)pid, ns);
	return -ESRCH;
}

/* ---- the control daemon -------------------------------------------------------------------- */

bool mps_running(const struct server *srv)
{
	return srv->mps->state == OOO_MPS_RUNNING;
}

bool mps_reachable(const struct server *srv)
{
	return srv->mps->pid && (srv->mps->state == OOO_MPS_RUNNING || srv->mps->state == OOO_MPS_STOPPING);
}

static bool find_control(const char *want, char *out, size_t cap)
{
	static const char *const dirs[] = { "/usr/local/nvidia/bin", "/usr/bin", "/usr/sbin", "/usr/local/bin",
					    "/usr/local/cuda/bin" };

	if (want[0]) {
		snprintf(out, cap, "%s", want);
		return access(out, X_OK) == 0;
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(out, cap, "%s/nvidia-cuda-mps-control", dirs[i]);
		if (access(out, X_OK) == 0)
			return true;
	}
	out[0] = '\0';
	return false;
}

static void arm_poll(struct server *srv)
{
	struct mps *m = srv->mps;
	struct io_uring_sqe *sqe;

	if (m->pidfd < 0 || m->poll_armed)
		return;
	sqe = server_get_sqe(srv);
	if (!sqe)
		return; /* the tick tries again */
	io_uring_prep_poll_add(sqe, m->pidfd, POLLIN);
	io_uring_sqe_set_data64(sqe, ud_make((enum op)m->op, 0, m->gen));
	m->poll_armed = true;
}

static void close_pidfd(struct mps *m)
{
	if (m->pidfd >= 0)
		close(m->pidfd);
	m->pidfd = -1;
	m->gen++;
}

static void set_failed(struct mps *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_failed(struct mps *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->reason, sizeof(m->reason), fmt, ap);
	va_end(ap);
	m->state = OOO_MPS_FAILED;
	log_err("mps: %s; native leases are refused", m->reason);
}

static void schedule_restart(struct server *srv, const char *why)
{
	struct mps *m = srv->mps;
	uint64_t now = server_now_ns();

	if (m->started_ns && now - m->started_ns >= 60ull * 1000000000ull)
		m->backoff_ms = MPS_BACKOFF_MIN_MS;
	else if (!m->backoff_ms)
		m->backoff_ms = MPS_BACKOFF_MIN_MS;
	else
		m->backoff_ms = m->backoff_ms * 2 > MPS_BACKOFF_MAX_MS ? MPS_BACKOFF_MAX_MS : m->backoff_ms * 2;
	m->state = OOO_MPS_RESTARTING;
	m->restart_at_ns = now + (uint64_t)m->backoff_ms * 1000000ull;
	snprintf(m->reason, sizeof(m->reason), "%.180s; restart %u in %u ms", why, m->restarts + 1, m->backoff_ms);
	log_warn("mps: %s", m->reason);
}

/* The control daemon answers get_server_list with a list (maybe empty). */
static bool answers(struct server *srv)
{
	char reply[MPS_REPLY_MAX], why[OOO_ERRMSG_MAX];
	pid_t pids[MPS_MAX_PIDS];
	size_t n;
	bool ran;

	if (run_guarded(srv->mps, "get_server_list", reply, sizeof(reply), &ran) < 0)
		return false;
	return mps_parse_pids(reply, pids, MPS_MAX_PIDS, &n, why, sizeof(why)) == 0;
}

static void launch(struct server *srv)
{
	struct mps *m = srv->mps;
	char logp[PATH_MAX + 16];
	char *argv[4];
	int devnull, r, n = 0;
	pid_t pid;

	snprintf(logp, sizeof(logp), "%s/control.log", m->log_dir);
	if (m->log_fd < 0)
		m->log_fd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (m->log_fd < 0) {
		set_failed(m, "cannot open %s: %s", logp, strerror(errno));
		return;
	}
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0) {
		set_failed(m, "cannot open /dev/null: %s", strerror(errno));
		return;
	}
	argv[n++] = m->control;
	argv[n++] = "-f";
	if (m->multiuser)
		argv[n++] = "-M";
	argv[n] = NULL;
	r = spawn(m, argv, devnull, m->log_fd, &pid);
	close(devnull);
	if (r < 0) {
		schedule_restart(srv, r == -ENOENT ? "the control program is gone" : "cannot start the control program");
		return;
	}
	m->pidfd = sys_pidfd_open(pid);
	if (m->pidfd < 0) {
		log_err("mps: pidfd_open: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		schedule_restart(srv, "cannot watch the control daemon (pidfd_open failed)");
		return;
	}
	m->pid = pid;
	m->child = true;
	m->started_ns = server_now_ns();
	m->ready_by_ns = m->started_ns + (uint64_t)MPS_READY_TIMEOUT_MS * 1000000ull;
	m->state = OOO_MPS_STARTING;
	m->reason[0] = '\0';
	arm_poll(srv);
	log_info("mps: %s -f%s started (pid %d), pipe directory %s", m->control, m->multiuser ? " -M" : "", (int)pid,
		 m->pipe_dir);
}

/* Wait (at start only: before the executors, which are to be its clients) until it answers. */
static void wait_ready(struct server *srv)
{
	struct mps *m = srv->mps;

	while (m->state == OOO_MPS_STARTING) {
		int st;

		if (answers(srv)) {
			m->state = OOO_MPS_RUNNING;
			log_info("mps: control daemon pid %d ready", (int)m->pid);
			return;
		}
		if (waitpid(m->pid, &st, WNOHANG) == m->pid) {
			m->pid = 0;
			close_pidfd(m);
			m->poll_armed = false; /* the poll completes with the closed fd's generation */
			schedule_restart(srv, "the control daemon exited at start (see its control.log)");
			return;
		}
		if (server_now_ns() >= m->ready_by_ns)
			return; /* the tick keeps looking */
		usleep(20000);
	}
}

static int mkdir_if(const char *p, mode_t mode)
{
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -errno;
	/* clients of every uid reach the control socket through the pipe directory */
	return chmod(p, mode) < 0 ? -errno : 0;
}

/* A control daemon left by an earlier oood on our pipe directory: adopt it rather than start a second. */
static bool adopt(struct server *srv)
{
	struct mps *m = srv->mps;
	char path[PATH_MAX + 40];
	FILE *f;
	int pid = 0;

	snprintf(path, sizeof(path), "%s/nvidia-cuda-mps-control.pid", m->pipe_dir);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fscanf(f, "%d", &pid) != 1)
		pid = 0;
	fclose(f);
	if (pid <= 0 || kill(pid, 0) < 0 || !answers(srv))
		return false;
	m->pidfd = sys_pidfd_open(pid);
	if (m->pidfd < 0)
		return false;
	m->pid = pid;
	m->child = false;
	m->state = OOO_MPS_RUNNING;
	m->started_ns = server_now_ns();
	snprintf(m->reason, sizeof(m->reason),
		 "adopted control daemon pid %d left by an earlier oood; clients it had are not counted", pid);
	log_warn("mps: %s", m->reason);
	arm_poll(srv);
	return true;
}

static void mps_start(struct server *srv)
{
	struct mps *m = srv->mps;
	const struct policy_mps *pm = &srv->policy->mps;
	int r;

	m->pidfd = -1;
	m->log_fd = -1;
	m->state = OOO_MPS_OFF;
	m->multiuser = pm->multiuser;
	m->executor_client = pm->executor_client;
	if (pm->enabled == POLICY_MPS_NO) {
		snprintf(m->reason, sizeof(m->reason), "[mps] enabled = no");
		log_info("mps: off ([mps] enabled = no); native leases are refused");
		return;
	}
	if (!find_control(pm->control, m->control, sizeof(m->control))) {
		if (pm->enabled == POLICY_MPS_AUTO && !pm->control[0]) {
			snprintf(m->reason, sizeof(m->reason), "nvidia-cuda-mps-control not found%s%.100s",
				 pm->control[0] ? " at " : " in /usr/local/nvidia/bin, /usr/bin, /usr/sbin, /usr/local/bin, /usr/local/cuda/bin",
				 pm->control);
			log_info("mps: off (%s); native leases are refused", m->reason);
			return;
		}
		if (pm->control[0])
			set_failed(m, "[mps] control = %s is not an executable", pm->control);
		else
			set_failed(m, "[mps] enabled = yes but nvidia-cuda-mps-control is not in /usr/local/nvidia/bin, "
				      "/usr/bin, /usr/sbin, /usr/local/bin or /usr/local/cuda/bin");
		return;
	}
	if ((size_t)snprintf(m->dir, sizeof(m->dir), "%s/mps", srv->rundir) >= sizeof(m->dir) - 8 ||
	    (size_t)snprintf(m->pipe_dir, sizeof(m->pipe_dir), "%s/pipe", m->dir) >= sizeof(m->pipe_dir) ||
	    (size_t)snprintf(m->log_dir, sizeof(m->log_dir), "%s/log", m->dir) >= sizeof(m->log_dir)) {
		set_failed(m, "run directory path too long for the MPS directories");
		return;
	}
	if ((r = mkdir_if(m->dir, 0755)) < 0 || (r = mkdir_if(m->pipe_dir, 0755)) < 0 ||
	    (r = mkdir_if(m->log_dir, 0755)) < 0) {
		set_failed(m, "cannot create %s/{pipe,log}: %s", m->dir, wire_strerror(r));
		return;
	}
	/* the servers it spawns load the driver: give them the directory oood loads it from */
	if (srv->policy->libcuda[0] == '/') {
		const char *slash = strrchr(srv->policy->libcuda, '/');
		snprintf(m->ld_path, sizeof(m->ld_path), "%.*s", (int)(slash - srv->policy->libcuda), srv->policy->libcuda);
	} else if (getenv("LD_LIBRARY_PATH")) {
		snprintf(m->ld_path, sizeof(m->ld_path), "%s", getenv("LD_LIBRARY_PATH"));
	}
	if (adopt(srv))
		return;
	launch(srv);
	wait_ready(srv);
}

static void mps_on_exit(struct server *srv, uint32_t gen, int res)
{
	struct mps *m = srv->mps;
	int st = 0;
	char why[160];

	if (gen != m->gen)
		return; /* a poll of a pidfd closed since */
	m->poll_armed = false;
	if (res < 0 && res != -ECANCELED) {
		arm_poll(srv);
		return;
	}
	if (m->child) {
		while (waitpid(m->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	if (!m->child)
		snprintf(why, sizeof(why), "the adopted control daemon (pid %d) exited", (int)m->pid);
	else if (WIFSIGNALED(st))
		snprintf(why, sizeof(why), "the control daemon (pid %d) was killed by signal %d", (int)m->pid,
			 WTERMSIG(st));
	else
		snprintf(why, sizeof(why), "the control daemon (pid %d) exited with status %d", (int)m->pid,
			 WEXITSTATUS(st));
	m->pid = 0;
	close_pidfd(m);
	if (m->state == OOO_MPS_STOPPING) {
		m->state = OOO_MPS_OFF;
		snprintf(m->reason, sizeof(m->reason), "stopped");
		log_info("mps: %s", why);
		return;
	}
	schedule_restart(srv, why);
}

static void truncate_log(struct mps *m)
{
	struct stat st;

	if (m->log_fd >= 0 && fstat(m->log_fd, &st) == 0 && (uint64_t)st.st_size > MPS_LOG_MAX) {
		if (ftruncate(m->log_fd, 0) == 0)
			log_info("mps: control.log passed %llu MiB and was truncated", MPS_LOG_MAX >> 20);
	}
}

static void mps_tick(struct server *srv, uint64_t now)
{
	struct mps *m = srv->mps;

	truncate_log(m);
	arm_poll(srv);
	switch (m->state) {
	case OOO_MPS_RESTARTING:
		if (!srv->stopping && now >= m->restart_at_ns) {
			m->restarts++;
			launch(srv);
		}
		break;
	case OOO_MPS_STARTING:
		if (answers(srv)) {
			m->state = OOO_MPS_RUNNING;
			m->reason[0] = '\0';
			log_info("mps: control daemon pid %d ready", (int)m->pid);
		} else if (now >= m->ready_by_ns) {
			log_warn("mps: the control daemon (pid %d) did not answer within %u ms, killing it", (int)m->pid,
				 MPS_READY_TIMEOUT_MS);
			(void)sys_pidfd_signal(m->pidfd, SIGKILL); /* the pidfd poll reaps it and schedules the restart */
			m->ready_by_ns = UINT64_MAX;
		}
		break;
	case OOO_MPS_STOPPING: {
		char reply[MPS_REPLY_MAX], why[OOO_ERRMSG_MAX];
		bool clients = m->clients && m->clients(srv) > 0;

		if (!m->pid)
			break;
		if (clients && now >= m->stop_by_ns && !m->terminated) {
			if (m->terminate_clients)
				m->terminate_clients(srv);
			m->terminated = true;
		}
		/* after terminate_client, the clients get evict_grace_ms (and the SIGTERM of evict) to go */
		if ((!clients || (m->terminated && now >= m->stop_by_ns +
							 2ull * srv->policy->mps.evict_grace_ms * 1000000ull)) &&
		    !m->quit_sent_ns) {
			if (run_checked(srv, MPS_QUIT, "quit", reply, sizeof(reply), why, sizeof(why)) < 0)
				log_warn("mps: quit: %s", why);
			m->quit_sent_ns = now;
		}
		if (m->quit_sent_ns && now >= m->quit_sent_ns + 5000000000ull) {
			log_warn("mps: the control daemon (pid %d) is still running 5 s after quit, killing it", (int)m->pid);
			(void)sys_pidfd_signal(m->pidfd, SIGKILL);
			m->quit_sent_ns = UINT64_MAX - 10000000000ull; /* once */
		}
		break;
	}
	default:
		break;
	}
}

static void mps_stop(struct server *srv)
{
	struct mps *m = srv->mps;

	if (m->state == OOO_MPS_RESTARTING || m->state == OOO_MPS_OFF || m->state == OOO_MPS_FAILED) {
		if (m->state == OOO_MPS_RESTARTING)
			m->state = OOO_MPS_OFF;
		return;
	}
	if (m->state == OOO_MPS_STOPPING)
		return;
	m->state = OOO_MPS_STOPPING;
	m->stop_by_ns = server_now_ns() + (uint64_t)srv->policy->mps.stop_grace_ms * 1000000ull;
	if (m->clients && m->clients(srv))
		log_info("mps: waiting up to %u ms for %u leased clients before terminate_client",
			 srv->policy->mps.stop_grace_ms, m->clients(srv));
}

static bool mps_stopped(const struct server *srv)
{
	return !srv->mps->pid && !srv->mps->poll_armed;
}

static void mps_fini(struct server *srv)
{
	struct mps *m = srv->mps;

	if (m->pid && m->child) {
		bool reaped = false;

		/* through the pidfd: once reaped, a raw pid could be someone else's */
		if (m->pidfd >= 0)
			(void)sys_pidfd_signal(m->pidfd, SIGTERM);
		for (int i = 0; i < 100 && !(reaped = waitpid(m->pid, NULL, WNOHANG) == m->pid); i++)
			usleep(20000);
		if (!reaped && m->pidfd >= 0) {
			(void)sys_pidfd_signal(m->pidfd, SIGKILL);
			waitpid(m->pid, NULL, 0);
		}
	}
	m->pid = 0;
	if (m->pidfd >= 0)
		close(m->pidfd);
	m->pidfd = -1;
	if (m->log_fd >= 0)
		close(m->log_fd);
	m->log_fd = -1;
}

void mps_executor_env(const struct server *srv)
{
	const struct mps *m = srv->mps;

	if (m->state == OOO_MPS_RUNNING && m->executor_client) {
		/* green contexts need 100% inside an MPS client (915 below it) */
		setenv("CUDA_MPS_PIPE_DIRECTORY", m->pipe_dir, 1);
		setenv("CUDA_MPS_LOG_DIRECTORY", m->log_dir, 1);
		setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100", 1);
		unsetenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	}
}

/* ---- the module -------------------------------------------------------------- */

static void on_exit_cqe(struct server *srv, uint32_t slot, uint32_t gen, const struct io_uring_cqe *cqe)
{
	mps_on_exit(srv, gen, cqe->res);
}

static int module_init(struct server *srv)
{
	int op;

	srv->mps = calloc(1, sizeof(*srv->mps));
	if (!srv->mps)
		return -ENOMEM;
	srv->mps->pidfd = srv->mps->log_fd = -1;
	op = server_add_op(srv, on_exit_cqe);
	if (op < 0)
		return op;
	srv->mps->op = (uint32_t)op;
	return 0;
}

static int module_start(struct server *srv)
{
	mps_start(srv);
	return 0;
}

/* Past the connections' grace, shutdown waits this long for the control daemon's quit. */
static uint64_t module_linger_until(const struct server *srv)
{
	return srv->mps->stop_by_ns + 10000000000ull + 2ull * srv->policy->mps.evict_grace_ms * 1000000ull;
}

static void module_fini(struct server *srv)
{
	if (!srv->mps)
		return;
	mps_fini(srv);
	free(srv->mps);
	srv->mps = NULL;
}

static void on_run(struct server *srv, struct conn *c, uint32_t seq, const void *payload, size_t len)
{
	const struct ooo_msg_mps_run *req = payload;
	const struct peer_cred *cred = server_conn_cred(c);
	struct ooo_msg_mps_run_reply *rep = calloc(1, sizeof(*rep));
	char why[OOO_ERRMSG_MAX];
	int r;

	if (!rep) {
		server_reply_error(srv, c, OOO_MSG_MPS_RUN, seq, -ENOMEM, "out of memory");
		return;
	}
	r = mps_admin_command(srv, req->line, rep->reply, sizeof(rep->reply), why, sizeof(why));
	log_info("oooctl (pid %u uid %u): mps run '%.100s': %s", cred->pid, cred->uid, req->line, r < 0 ? why : "ok");
	if (r < 0)
		server_reply_error(srv, c, OOO_MSG_MPS_RUN, seq, r, "%s", why);
	else
		server_reply(srv, c, OOO_MSG_MPS_RUN, seq, rep, sizeof(*rep), -1);
	free(rep);
}

static const struct handler handlers[] = {
	{ .type = OOO_MSG_MPS_RUN, .flags = H_ADMIN, .fn = on_run },
};

const struct module mps_module = {
	.name = "mps",
	.init = module_init,
	.start = module_start,
	.tick = mps_tick,
	.stop = mps_stop,
	.stopped = mps_stopped,
	.linger_until = module_linger_until,
	.fini = module_fini,
	.handlers = handlers,
	.nhandlers = sizeof(handlers) / sizeof(handlers[0]),
};
