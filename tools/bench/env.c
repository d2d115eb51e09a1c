/* SPDX-License-Identifier: MIT */
/*
 * What surrounds the tenants: the device probe and the run's context for
 * the JSON's meta, the MPS control daemon of the mps mode, and the private
 * oood of the ooo mode. The parent never loads libcuda itself: the probe
 * runs in a forked child, so nothing of CUDA's is in the process that forks
 * the tenants and talks to MPS.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../../daemon/exec/cuda.h"
#include "bench.h"
#include "version.h"

#ifndef OOO_GIT_REV
#define OOO_GIT_REV "unknown"
#endif

/* Where the NVIDIA tools are when they are not in PATH (the GPU machine). */
#define NVIDIA_BIN_DIRS "/usr/local/nvidia/bin:/usr/bin:/usr/sbin"

/* The directory of the driver library, when it is given as a path. */
static void lib_dir(const char *libcuda, char *out, size_t cap)
{
	char tmp[PATH_MAX];

	out[0] = 0;
	if (!strchr(libcuda, '/'))
		return;
	snprintf(tmp, sizeof(tmp), "%s", libcuda);
	snprintf(out, cap, "%s", dirname(tmp));
}

static const char *tmp_base(void)
{
	const char *t = getenv("TMPDIR");

	/* socket paths must fit in 108 bytes: a long TMPDIR does not */
	return t && t[0] && strlen(t) <= 60 ? t : "/tmp";
}

/* Wait for pid at most timeout_ms; returns its wait status, or -ETIMEDOUT (it still runs). */
static int wait_pid(pid_t pid, int timeout_ms)
{
	int64_t deadline = bench_now_ns() + (int64_t)timeout_ms * 1000000;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (bench_now_ns() > deadline)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

/* ---- device probe ------------------------------------------------------------------ */

static void probe_child(const char *libcuda, int fd)
{
	struct bench_device d = { 0 };
	struct cuda_api api;
	char b[256];
	CUdevice dev;
	CUuuid u;
	CUresult r;
	size_t mem = 0;

	if (cuda_load(&api, libcuda, d.probe_error, sizeof(d.probe_error)) < 0)
		goto out;
	d.cuda_driver = api.driver_version;
	if ((r = api.p_cuInit(0)) != CUDA_SUCCESS) {
		snprintf(d.probe_error, sizeof(d.probe_error), "cuInit: %s", cuda_strerror(&api, r, b, sizeof(b)));
		goto out;
	}
	if ((r = api.p_cuDeviceGet(&dev, 0)) != CUDA_SUCCESS) {
		snprintf(d.probe_error, sizeof(d.probe_error), "cuDeviceGet(0): %s",
			 cuda_strerror(&api, r, b, sizeof(b)));
		goto out;
	}
	api.p_cuDeviceGetName(d.name, sizeof(d.name), dev);
	api.p_cuDeviceGetAttribute(&d.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
	api.p_cuDeviceGetAttribute(&d.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	api.p_cuDeviceGetAttribute(&d.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	api.p_cuDeviceGetAttribute(&d.clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev);
	api.p_cuDeviceGetAttribute(&d.mem_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev);
	api.p_cuDeviceGetAttribute(&d.mem_bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev);
	api.p_cuDeviceTotalMem(&mem, dev);
	d.mem_total = mem;
	if (api.p_cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS) {
		const unsigned char *x = (const unsigned char *)u.bytes;

		snprintf(d.uuid, sizeof(d.uuid),
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", x[0], x[1], x[2],
			 x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], x[11], x[12], x[13], x[14], x[15]);
	}
	d.probed = true;
out:
	(void)!bench_write_full(fd, &d, sizeof(d));
	_exit(0);
}

void bench_probe_device(const char *libcuda, struct bench_device *d)
{
	struct pollfd pf;
	int p[2], st;
	pid_t pid;

	memset(d, 0, sizeof(*d));
	d->clock_sm = d->clock_max_sm = d->clock_sm_end = -1;
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(d->probe_error, sizeof(d->probe_error), "pipe: %s", strerror(errno));
		return;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(d->probe_error, sizeof(d->probe_error), "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		close(p[0]);
		probe_child(libcuda, p[1]);
	}
	close(p[1]);
	pf = (struct pollfd){ .fd = p[0], .events = POLLIN };
	if (poll(&pf, 1, 60000) <= 0 || bench_read_full(p[0], d, sizeof(*d))) {
		memset(d, 0, sizeof(*d));
		snprintf(d->probe_error, sizeof(d->probe_error), "the device probe (cuInit in a child) did not answer");
		kill(pid, SIGKILL);
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	d->clock_sm = d->clock_max_sm = d->clock_sm_end = -1;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static int to_int(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return end != s && v >= 0 && v < 1000000 ? (int)v : -1;
}

void bench_smi_clocks(struct bench_device *d, bool end, const char *libcuda)
{
	char smi[PATH_MAX], out[8192], ld[PATH_MAX], *line, *save = NULL;
	char *argv[] = { smi, "--query-gpu=uuid,name,driver_version,clocks.sm,clocks.max.sm",
			 "--format=csv,noheader,nounits", NULL };
	bool first = true;

	if (bench_find_exe("nvidia-smi", NVIDIA_BIN_DIRS, smi, sizeof(smi)) < 0)
		return;
	lib_dir(libcuda, ld, sizeof(ld));
	if (bench_capture(argv, ld, out, sizeof(out), 20000) != 0)
		return;
	/* the line of the device the tenants use (CUDA's device 0, by UUID), else the first */
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[5], *s2 = NULL;
		int n = 0;

		for (char *tok = strtok_r(line, ",", &s2); tok && n < 5; tok = strtok_r(NULL, ",", &s2))
			f[n++] = trim(tok);
		if (n < 5)
			continue;
		if (!first && !(d->uuid[0] && !strcmp(f[0], d->uuid)))
			continue;
		if (end) {
			d->clock_sm_end = to_int(f[3]);
		} else {
			if (!d->name[0])
				snprintf(d->name, sizeof(d->name), "%s", f[1]);
			snprintf(d->driver, sizeof(d->driver), "%s", f[2]);
			d->clock_sm = to_int(f[3]);
			d->clock_max_sm = to_int(f[4]);
		}
		if (d->uuid[0] && !strcmp(f[0], d->uuid))
			break;
		first = false;
	}
}

void bench_meta_init(struct bench_meta *m, const struct bench_opts *o)
{
	const char *c = getenv("OOO_COMMIT");
	struct utsname un;
	cpu_set_t set;

	memset(m, 0, sizeof(*m));
	snprintf(m->commit, sizeof(m->commit), "%s", c && c[0] ? c : OOO_GIT_REV);
	snprintf(m->build_commit, sizeof(m->build_commit), "%s", OOO_GIT_REV);
	bench_iso_date(m->date, sizeof(m->date));
	if (gethostname(m->hostname, sizeof(m->hostname)) < 0)
		snprintf(m->hostname, sizeof(m->hostname), "unknown");
	m->hostname[sizeof(m->hostname) - 1] = 0;
	snprintf(m->kernel, sizeof(m->kernel), "%s", uname(&un) == 0 ? un.release : "unknown");
	m->cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
	(void)o;
}

/* ---- MPS --------------------------------------------------------------------------- */

/* Processes of the MPS control daemon or server that run with our pipe directory. */
static int mps_pids(const char *pipe_dir, pid_t *pids, int cap)
{
	char want[PATH_MAX + 32];
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	snprintf(want, sizeof(want), "CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
	while ((e = readdir(d)) && n < cap) {
		char path[64], comm[32] = "", *env;
		long pid = strtol(e->d_name, NULL, 10);
		size_t len = 0;
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		if (!(f = fopen(path, "r")))
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, "nvidia-cuda-mps", 15))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
		if (!(f = fopen(path, "r")))
			continue;
		env = malloc(1 << 16);
		if (env)
			len = fread(env, 1, (1 << 16) - 1, f);
		fclose(f);
		if (env) {
			env[len] = 0;
			for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
				if (!strcmp(env + i, want)) {
					pids[n++] = (pid_t)pid;
					break;
				}
			}
			free(env);
		}
	}
	closedir(d);
	return n;
}

/*
 * Run the control program with `arg` (or none) and `input` on its stdin
 * (NULL: /dev/null); what it prints goes to a file in our directory, not a
 * pipe, because with -d the daemon it forks may keep its stdout open.
 * Returns its exit status (127: could not be run) or -errno.
 */
static int mps_control(const struct bench_mps *m, const char *control, const char *libcuda, const char *arg,
		       const char *input, char *out, size_t cap)
{
	char ld[PATH_MAX], path[PATH_MAX], outp[PATH_MAX + 16];
	int in[2] = { -1, -1 }, outfd, st;
	pid_t pid;

	out[0] = 0;
	lib_dir(libcuda, ld, sizeof(ld));
	snprintf(path, sizeof(path), "%s", control);
	snprintf(outp, sizeof(outp), "%s/control.out", m->dir);
	outfd = open(outp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (outfd < 0)
		return -errno;
	if (input && pipe2(in, O_CLOEXEC) < 0) {
		st = -errno;
		close(outfd);
		return st;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		st = -errno;
		close(outfd);
		if (input) {
			close(in[0]);
			close(in[1]);
		}
		return st;
	}
	if (pid == 0) {
		char *argv[] = { path, (char *)arg, NULL };
		int devnull = open("/dev/null", O_RDONLY);

		dup2(input ? in[0] : devnull, 0);
		dup2(outfd, 1);
		dup2(outfd, 2);
		bench_ld_prepend(ld);
		execv(path, argv);
		_exit(127);
	}
	close(outfd);
	if (input) {
		close(in[0]);
		(void)!bench_write_full(in[1], input, strlen(input));
		close(in[1]);
	}
	st = wait_pid(pid, 30000);
	if (st == -ETIMEDOUT) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	{
		FILE *f = fopen(outp, "r");

		if (f) {
			size_t n = fread(out, 1, cap - 1, f);

			out[n] = 0;
			fclose(f);
		}
		unlink(outp);
	}
	if (st < 0)
		return st;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int bench_mps_start(struct bench_mps *m, const char *control, const char *libcuda, char *why, size_t cap)
{
	char out[2048], sock[PATH_MAX + 16];
	struct stat st;
	int r;

	memset(m, 0, sizeof(*m));
	snprintf(m->dir, sizeof(m->dir), "%s/ooo-bench-mps-XXXXXX", tmp_base());
	if (!mkdtemp(m->dir)) {
		snprintf(why, cap, "cannot create a directory for MPS in %s: %s", tmp_base(), strerror(errno));
		m->dir[0] = 0;
		return -EIO;
	}
	chmod(m->dir, 0755);
	snprintf(m->pipe_dir, sizeof(m->pipe_dir), "%s/pipe", m->dir);
	snprintf(m->log_dir, sizeof(m->log_dir), "%s/log", m->dir);
	if (mkdir(m->pipe_dir, 0755) < 0 || mkdir(m->log_dir, 0755) < 0) {
		snprintf(why, cap, "cannot create %s/{pipe,log}: %s", m->dir, strerror(errno));
		bench_rmtree(m->dir);
		return -EIO;
	}
	/* the tenants inherit these */
	setenv("CUDA_MPS_PIPE_DIRECTORY", m->pipe_dir, 1);
	setenv("CUDA_MPS_LOG_DIRECTORY", m->log_dir, 1);
	r = mps_control(m, control, libcuda, "-d", NULL, out, sizeof(out));
	if (r != 0) {
		snprintf(why, cap, "%s -d %s%s%s", control,
			 r < 0 ? strerror(-r) : r == 127 ? "could not be run" : "failed", out[0] ? ": " : "",
			 trim(out));
		if (r > 0 && r != 127)
			snprintf(why + strlen(why), cap - strlen(why), " (exit status %d)", r);
		unsetenv("CUDA_MPS_PIPE_DIRECTORY");
		unsetenv("CUDA_MPS_LOG_DIRECTORY");
		m->running = false;
		m->keep = true;
		return -EIO;
	}
	m->running = true;
	/* the daemon is up when its control socket is there */
	snprintf(sock, sizeof(sock), "%s/control", m->pipe_dir);
	for (int i = 0; i < 1000 && stat(sock, &st) < 0; i++)
		usleep(10000);
	if (stat(sock, &st) < 0) {
		snprintf(why, cap, "the MPS control daemon did not create %s within 10 s (its log: %s/control.log)",
			 sock, m->log_dir);
		m->keep = true;
		return -ETIMEDOUT;
	}
	return 0;
}

void bench_mps_stop(struct bench_mps *m, const char *control, const char *libcuda)
{
	char out[2048];
	pid_t pids[16];
	int r, n = 0;

	if (!m->dir[0])
		return;
	if (m->running) {
		r = mps_control(m, control, libcuda, NULL, "quit\n", out, sizeof(out));
		if (r != 0)
			bench_err("mps mode: 'echo quit | %s' failed%s%s", control, out[0] ? ": " : "", trim(out));
		/* the control daemon and its server go away after the quit */
		for (int i = 0; i < 3000 && (n = mps_pids(m->pipe_dir, pids, 16)) > 0; i++)
			usleep(10000);
		if (n > 0) {
			static const int sigs[] = { SIGTERM, SIGKILL };

			bench_err("mps mode: the MPS daemon is still running 30 s after 'quit' (pid %d%s); "
				  "its pipe directory is %s",
				  (int)pids[0], n > 1 ? " and others" : "", m->pipe_dir);
			m->keep = true;
			/* not our children (the daemon detaches): signal what mps_pids finds, and poll it */
			for (unsigned k = 0; k < 2 && n > 0; k++) {
				bench_err("mps mode: sending %s to %d MPS process%s",
					  sigs[k] == SIGTERM ? "SIGTERM" : "SIGKILL", n, n == 1 ? "" : "es");
				for (int i = 0; i < n; i++)
					kill(pids[i], sigs[k]);
				for (int i = 0; i < 500 && (n = mps_pids(m->pipe_dir, pids, 16)) > 0; i++)
					usleep(10000);
			}
			if (n > 0)
				bench_err("mps mode: MPS process %d%s still there after SIGKILL", (int)pids[0],
					  n > 1 ? " and others" : "");
		}
	}
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	unsetenv("CUDA_MPS_LOG_DIRECTORY");
	if (m->keep)
		bench_err("mps mode: MPS logs kept in %s", m->log_dir);
	else
		bench_rmtree(m->dir);
	m->running = false;
	m->dir[0] = 0;
}

/* ---- oood -------------------------------------------------------------------------- */

static void log_tail(const char *path, char *out, size_t cap)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n = 0;
	long len;

	out[0] = 0;
	if (!f)
		return;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > (long)sizeof(buf) - 1)
		fseek(f, len - (long)sizeof(buf) + 1, SEEK_SET);
	else
		fseek(f, 0, SEEK_SET);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* the last two lines */
	{
		char *s = trim(buf), *p = s + strlen(s);
		int lines = 0;

		while (p > s && lines < 2)
			if (*--p == '\n')
				lines++;
		snprintf(out, cap, "%s", p > s ? p + 1 : s);
		for (char *q = out; *q; q++)
			if (*q == '\n')
				*q = ' ';
	}
}

static int find_oood(const struct bench_opts *o, char *out, size_t cap)
{
	char self[PATH_MAX];
	ssize_t n;

	if (o->oood[0])
		return bench_find_exe(o->oood, NULL, out, cap);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		if ((size_t)snprintf(out, cap, "%s/oood", dirname(self)) < cap && access(out, X_OK) == 0)
			return 0;
	}
	return bench_find_exe("oood", "/usr/local/sbin:/usr/sbin", out, cap);
}

/* 1 starting (or not answering yet), 0 MPS runs, negative: it cannot (why set). */
static int mps_state(const char *admin, char *why, size_t cap)
{
	struct ooo_msg_mps m;
	ooo_session *s = ooo_admin_open(admin, 2000);
	int n;

	if (!s)
		return 1;
	n = ooo_admin_call(s, OOO_MSG_MPS, NULL, 0, &m, sizeof(m));
	ooo_close(s);
	if (n != (int)sizeof(m))
		return 1;
	if (m.state == OOO_MPS_RUNNING)
		return 0;
	if (m.state == OOO_MPS_FAILED || m.state == OOO_MPS_OFF) {
		snprintf(why, cap, "MPS: %s", m.reason);
		return -1;
	}
	return 1;
}

/* 1 starting (or not answering yet), 0 a GPU is ready, negative: every GPU failed (why set). */
static int devices_state(const char *admin, char *why, size_t cap)
{
	struct ooo_msg_list_req req = { 0 };
	static unsigned char buf[1 << 16];
	const struct ooo_msg_list *l = (const void *)buf;
	ooo_session *s = ooo_admin_open(admin, 2000);
	int n, failed = 0;

	if (!s)
		return 1;
	n = ooo_admin_call(s, OOO_MSG_DEVICES, &req, sizeof(req), buf, sizeof(buf));
	ooo_close(s);
	if (n < (int)sizeof(*l) || l->rec_size < sizeof(struct ooo_device_rec) ||
	    (size_t)n < sizeof(*l) + (size_t)l->count * l->rec_size)
		return 1;
	for (uint32_t i = 0; i < l->count; i++) {
		const struct ooo_device_rec *d = (const void *)(buf + sizeof(*l) + (size_t)i * l->rec_size);

		if (d->state == OOO_DEV_READY)
			return 0;
		if (d->state == OOO_DEV_FAILED) {
			if (!failed)
				snprintf(why, cap, "GPU %u: %s", d->index, d->reason[0] ? d->reason : "failed");
			failed++;
		}
	}
	return l->count && failed == (int)l->count ? -OOO_ENODEV : 1;
}

int bench_oood_start(struct bench_oood *d, const struct bench_opts *o, bool lease, const char *control, char *why,
		     size_t cap)
{
	char bin[PATH_MAX], conf[PATH_MAX + 16], logp[PATH_MAX + 16], tail[1024], state[512] = "";
	int64_t deadline;
	FILE *f;
	int logfd;

	memset(d, 0, sizeof(*d));
	d->pid = -1;
	d->lease = lease;
	if (find_oood(o, bin, sizeof(bin)) < 0) {
		snprintf(why, cap, "cannot find oood%s%s (give --oood PATH, or --socket for a running one)",
			 o->oood[0] ? " at " : "", o->oood);
		return -ENOENT;
	}
	if (o->rundir[0]) {
		snprintf(d->dir, sizeof(d->dir), "%s", o->rundir);
		if (mkdir(d->dir, 0755) == 0)
			d->made_dir = true;
		else if (errno != EEXIST) {
			snprintf(why, cap, "cannot create the run directory %s: %s", d->dir, strerror(errno));
			return -EIO;
		}
	} else {
		snprintf(d->dir, sizeof(d->dir), "%s/ooo-bench-XXXXXX", tmp_base());
		if (!mkdtemp(d->dir)) {
			snprintf(why, cap, "cannot create a run directory in %s: %s", tmp_base(), strerror(errno));
			d->dir[0] = 0;
			return -EIO;
		}
		d->made_dir = true;
	}
	chmod(d->dir, 0755);
	if ((size_t)snprintf(d->sock, sizeof(d->sock), "%s/%s", d->dir, OOO_SOCKET_NAME) >= sizeof(d->sock) ||
	    (size_t)snprintf(d->admin, sizeof(d->admin), "%s/%s", d->dir, OOO_ADMIN_SOCKET_NAME) >= sizeof(d->admin)) {
		snprintf(why, cap, "run directory %s is too long for a socket path", d->dir);
		goto fail;
	}
	snprintf(conf, sizeof(conf), "%s/oood.conf", d->dir);
	snprintf(logp, sizeof(logp), "%s/oood.log", d->dir);
	if (!(f = fopen(conf, "w"))) {
		snprintf(why, cap, "cannot write %s: %s", conf, strerror(errno));
		goto fail;
	}
	/* one class for every tenant, with room for every point; the queues ask for less */
	fprintf(f,
		"# written by ooo-bench for its private oood\n"
		"[daemon]\n"
		"max_sessions = 8192\n"
		"libcuda = %s\n"
		"executor = %s\n"
		"%s%s%s"
		"max_domains = %u\n",
		o->libcuda, lease ? "no" : "yes",
		o->fuse_copies == 2 ? "fuse_copies = yes\n" : o->fuse_copies == 1 ? "fuse_copies = no\n" : "",
		o->spread_lanes == 2 ? "spread_lanes = yes\n" : o->spread_lanes == 1 ? "spread_lanes = no\n" : "",
		o->chain_launches == 2 ? "chain_launches = yes\n" : o->chain_launches == 1 ? "chain_launches = no\n" : "",
		o->domains > 16 ? o->domains : 16);
	/* the executor's keys the command line set (stored as value + 1) */
	if (o->streams)
		fprintf(f, "streams = %u\n", o->streams - 1);
	if (o->urgent_reserve)
		fprintf(f, "urgent_reserve = %u\n", o->urgent_reserve - 1);
	if (o->burst_wait_us)
		fprintf(f, "burst_wait_us = %u\n", o->burst_wait_us - 1);
	if (o->kernel_limit_ms)
		fprintf(f, "kernel_time_limit_ms = %u\n", o->kernel_limit_ms - 1);
	if (o->threads)
		fprintf(f, "serving_threads = %u\n", o->threads - 1);
	if (o->shard_sessions)
		fprintf(f, "shard_sessions = %u\n", o->shard_sessions - 1);
	if (o->critical_class) {
		/* mix: the critical tenant (group BENCH_CRITICAL_GID) is a class of its own, with SMs reserved
		 * if --critical-share (first: classes are tried in order) */
		fprintf(f,
			"[class critical]\n"
			"match_gid = %u\n"
			"priority = 99\n"
			"slo_us = 1\n"
			"mem_limit = 1T\n"
			"max_queues = 65536\n"
			"max_buffers = 1048576\n"
			"max_modules = 65536\n",
			BENCH_CRITICAL_GID);
		if (o->critical_share)
			fprintf(f, "sm_share = %u\npartition = yes\n", o->critical_share);
	}
	fprintf(f,
		"[class bench]\n"
		"match_uid = *\n"
		"priority = 99\n"
		"slo_us = 1\n"
		"sm_share = 100\n"
		"mem_limit = 1T\n"
		"max_sessions = 4096\n"
		"max_queues = 65536\n"
		"max_buffers = 1048576\n"
		"max_modules = 65536\n"
		"max_inflight = 1048576\n"
		"max_leases = 4096\n"
		"%s",
		o->fence ? "fence = yes\n" : "");
	if (o->wait_spin_us)
		fprintf(f, "wait_spin_us = %u\n", o->wait_spin_us - 1);
	if (lease)
		/* native tenants only: MPS with oood's leases, no executor to share the GPU with */
		fprintf(f,
			"[mps]\n"
			"enabled = yes\n"
			"control = %s\n"
			"executor_client = no\n"
			"stop_grace_ms = 2000\n",
			control);
	else if (o->domains > 1)
		/* one executor per domain: they share the GPU as MPS clients, where oood finds MPS */
		fprintf(f, "[mps]\nenabled = auto\nexecutor_client = yes\nstop_grace_ms = 2000\n");
	else
		/* the executor as the GPU's only context, as ooo mode measures it */
		fprintf(f, "[mps]\nenabled = no\n");
	if (fclose(f) != 0) {
		snprintf(why, cap, "cannot write %s: %s", conf, strerror(errno));
		goto fail;
	}
	logfd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (logfd < 0) {
		snprintf(why, cap, "cannot create %s: %s", logp, strerror(errno));
		goto fail;
	}
	fflush(NULL);
	d->pid = fork();
	if (d->pid < 0) {
		snprintf(why, cap, "fork: %s", strerror(errno));
		close(logfd);
		goto fail;
	}
	if (d->pid == 0) {
		char *argv[] = { bin, "-f", "-c", conf, "--rundir", d->dir, NULL };
		int devnull = open("/dev/null", O_RDONLY);

		dup2(devnull, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execv(bin, argv);
		_exit(127);
	}
	close(logfd);
	deadline = bench_now_ns() + 90 * BENCH_NS;
	for (;;) {
		int st, r;

		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = -1;
			log_tail(logp, tail, sizeof(tail));
			snprintf(why, cap, "%s exited (%s %d) at start: %s", bin,
				 WIFEXITED(st) ? "status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
				 tail[0] ? tail : "(no log)");
			d->keep = true;
			goto fail;
		}
		r = lease ? mps_state(d->admin, state, sizeof(state)) : devices_state(d->admin, state, sizeof(state));
		if (r == 0)
			return 0;
		if (r < 0) {
			snprintf(why, cap, "oood has %s: %s (log: %s)", lease ? "no MPS" : "no usable GPU", state, logp);
			d->keep = true;
			goto fail;
		}
		if (bench_now_ns() > deadline) {
			snprintf(why, cap, "oood's executor was not ready within 90 s (log: %s)", logp);
			d->keep = true;
			goto fail;
		}
		usleep(50000);
	}
fail:
	bench_oood_stop(d);
	return -EIO;
}

void bench_oood_stop(struct bench_oood *d)
{
	if (d->pid > 0) {
		int st;

		kill(d->pid, SIGTERM);
		st = wait_pid(d->pid, 20000);
		if (st == -ETIMEDOUT) {
			bench_err("ooo mode: oood (pid %d) did not stop within 20 s of SIGTERM; killing it", (int)d->pid);
			kill(d->pid, SIGKILL);
			waitpid(d->pid, NULL, 0);
			d->keep = true;
		} else if (st >= 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			bench_err("ooo mode: oood exited with %s %d", WIFEXITED(st) ? "status" : "signal",
				  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			d->keep = true;
		}
		d->pid = -1;
	}
	if (d->dir[0]) {
		if (d->keep)
			bench_err("ooo mode: oood's log is %s/oood.log", d->dir);
		else if (d->made_dir)
			bench_rmtree(d->dir);
	}
	d->dir[0] = 0;
}

int bench_ooo_check(const char *sock, char *why, size_t cap)
{
	struct ooo_open_opts oo = { .sz = sizeof(oo), .path = sock, .name = "ooo-bench", .timeout_ms = 10000 };
	ooo_session *s = ooo_open_opts(&oo);
	ooo_queue *q;
	int r;

	if (!s) {
		r = -errno;
		snprintf(why, cap, "cannot open a session on %s: %s%s%s%s", sock, ooo_strerror(r),
			 ooo_last_error()[0] ? ": " : "", ooo_last_error(),
			 r == -ENOENT || r == -ECONNREFUSED ? " (is oood running? or leave out --socket)" : "");
		return r;
	}
	r = ooo_queue_create(s, NULL, &q);
	if (r < 0) {
		snprintf(why, cap, "cannot create a queue on %s: %s%s%s", sock, ooo_strerror(r),
			 ooo_last_error()[0] ? ": " : "", ooo_last_error());
		ooo_close(s);
		return r;
	}
	ooo_queue_destroy(q);
	ooo_close(s);
	return 0;
}
