/* SPDX-License-Identifier: MIT */
/*
 * CUDA C to PTX with NVRTC, in a helper process.
 *
 * NVRTC is a large C++ compiler fed with tenants' source: it can crash,
 * loop or allocate without end on some input. In the executor that would
 * end the process that holds the CUDA context, and every tenant of the
 * domain would get OOO_EDEVRESET. So each compile runs in a helper of its
 * own, which the executor starts, feeds, reads with a time limit, and
 * kills and reaps whatever happens; a failed helper fails that one load.
 *
 * Why posix_spawn of /proc/self/exe and not fork() alone: a fork of the
 * executor would be cheaper to write but inherits what the compiler must
 * not have or cannot live with: every descriptor (the control socket, the
 * tenants' memfds, /dev/nvidia*: O_CLOEXEC closes nothing without exec),
 * the executor's memory (tenants' data, the driver's state) for a
 * compiler bug to read, the address space of the CUDA context (RLIMIT_AS
 * would then be meaningless), and a copy of a multithreaded process in
 * which only async-signal-safe calls are safe while NVRTC needs dlopen,
 * malloc and a C++ runtime (a lock another thread held at the fork, the
 * loader's or the driver's, would hang the child). The fork itself also
 * costs: the parent's page tables are copied and its memory becomes
 * copy-on-write under the serving threads, and under strict overcommit a
 * fork of a large process can fail. posix_spawn (clone with CLONE_VM and
 * CLONE_VFORK in glibc) copies nothing, and the exec gives a process with
 * only the descriptors it is given (fd 0: the source in a sealed memfd,
 * fd 1: a pipe for the answer, fd 2: the executor's stderr; closefrom
 * closes the rest), a fresh address space that RLIMIT_AS can bound, and
 * one thread. /proc/self/exe is this very binary (even if the file was
 * replaced on disk since), which main() sends to nvrtc_helper_main. The
 * cost is an exec (a millisecond) per compile, small next to NVRTC's own
 * start (it maps ~130 MiB) and its compile (a few hundred ms).
 *
 * The price of the exec, and fork's one advantage: a process that execs
 * stops being non-dumpable, which the executor is (so that executors of
 * other trust domains, which run as the same user, cannot ptrace it or
 * read its memory), while a fork stays so. The helper makes itself
 * non-dumpable first thing, before it reads its source, and refuses to
 * compile if a tracer attached in between (TracerPid). What remains open:
 * a /proc/PID/mem that another process of the user (an executor already
 * taken over) opened in those microseconds keeps working, so that process
 * could read the source or change the answer, which is then the PTX of a
 * tenant of the helper's domain (fenced there if the domain fences).
 *
 * The helper runs as the executor's user (already unprivileged; nothing
 * changes credentials), dies with the thread that spawned it
 * (PR_SET_PDEATHSIG; that is the executor's thread that answers oood, which
 * lives as long as the executor),
 * runs at nice 0 rather than ahead of tenants as the executor does, is
 * the OOM killer's first choice (oom_score_adj 1000), and has RLIMIT_AS
 * (NVRTC_AS_MAX), RLIMIT_CPU (the time limit, a backstop) and no core
 * dumps. Its answer on fd 1 is a struct nvrtc_reply and then the PTX and
 * the log it announces; the executor caps both.
 */
#include "nvrtc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nvrtc_api.h"

#define NVRTC_REPLY_MAGIC 0x6e767263u /* "nvrc" */
#define NVRTC_SRC_MAX (1ull << 30)    /* the most source the helper reads (the executor sends at most 256 MiB) */
#define NVRTC_NICE 0		      /* the helper's nice value: not ahead of the tenants, as the executor is */

/* The helper's answer on its fd 1; ptx_len bytes of PTX and then log_len bytes of log follow. */
struct nvrtc_reply {
	uint32_t magic;	  /* NVRTC_REPLY_MAGIC */
	int32_t status;	  /* 0, or -errno as nvrtc_compile returns it */
	uint64_t ptx_len; /* without a NUL; > 0 if status is 0, else 0 */
	uint64_t log_len; /* without a NUL; at most the log_max the helper was given */
};

const struct nvrtc_limits nvrtc_default_limits = {
	.time_ms = NVRTC_TIME_LIMIT_MS,
	.ptx_max = NVRTC_PTX_MAX,
	.log_max = NVRTC_LOG_MAX,
	.as_max = NVRTC_AS_MAX,
};

/* ---- the helper ---------------------------------------------------------------- */

struct nvrtc_api {
	void *lib;
	__typeof__(&nvrtcCreateProgram) create;
	__typeof__(&nvrtcCompileProgram) compile;
	__typeof__(&nvrtcGetPTXSize) ptx_size;
	__typeof__(&nvrtcGetPTX) get_ptx;
	__typeof__(&nvrtcGetProgramLogSize) log_size;
	__typeof__(&nvrtcGetProgramLog) get_log;
	__typeof__(&nvrtcDestroyProgram) destroy;
	__typeof__(&nvrtcGetErrorString) errstr;
};

/* Load NVRTC into api (the helper's only compile: nothing to share, nothing to unload). */
static int load(struct nvrtc_api *api, char *log, size_t cap)
{
	static const char *const names[] = { "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
					     "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !api->lib; i++)
		api->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!api->lib) {
		snprintf(log, cap, "CUDA C needs NVRTC (libnvrtc.so), which this host lacks");
		return -ENOSYS;
	}
	api->create = (__typeof__(api->create))dlsym(api->lib, "nvrtcCreateProgram");
	api->compile = (__typeof__(api->compile))dlsym(api->lib, "nvrtcCompileProgram");
	api->ptx_size = (__typeof__(api->ptx_size))dlsym(api->lib, "nvrtcGetPTXSize");
	api->get_ptx = (__typeof__(api->get_ptx))dlsym(api->lib, "nvrtcGetPTX");
	api->log_size = (__typeof__(api->log_size))dlsym(api->lib, "nvrtcGetProgramLogSize");
	api->get_log = (__typeof__(api->get_log))dlsym(api->lib, "nvrtcGetProgramLog");
	api->destroy = (__typeof__(api->destroy))dlsym(api->lib, "nvrtcDestroyProgram");
	api->errstr = (__typeof__(api->errstr))dlsym(api->lib, "nvrtcGetErrorString");
	if (!api->create || !api->compile || !api->ptx_size || !api->get_ptx || !api->log_size || !api->get_log ||
	    !api->destroy || !api->errstr) {
		snprintf(log, cap, "libnvrtc.so lacks functions ooo needs");
		return -ENOSYS;
	}
	return 0;
}

/*
 * Compile the NUL-terminated text: 0 and a malloc'd PTX of *n bytes (its
 * NUL not counted) in *ptx, or -errno and why in log (cap bytes).
 */
static int compile(const char *text, int major, int minor, char **ptx, size_t *n, char *log, size_t cap)
{
	struct nvrtc_api api = { 0 };
	char arch[48];
	const char *opts[2];
	nvrtcProgram prog;
	nvrtcResult r;
	int rc;

	*ptx = NULL;
	*n = 0;
	rc = load(&api, log, cap);
	if (rc < 0)
		return rc;
	r = api.create(&prog, text, "tenant.cu", 0, NULL, NULL);
	if (r != NVRTC_SUCCESS) {
		snprintf(log, cap, "nvrtcCreateProgram: %s", api.errstr(r));
		return -EINVAL;
	}
	snprintf(arch, sizeof(arch), "--gpu-architecture=compute_%d%d", major, minor);
	opts[0] = arch;
	opts[1] = "--std=c++17";
	r = api.compile(prog, 2, opts);
	if (r != NVRTC_SUCCESS) {
		size_t ls = 0;
		char *full = NULL;

		if (api.log_size(prog, &ls) == NVRTC_SUCCESS && ls)
			full = malloc(ls + 1);
		if (full && api.get_log(prog, full) == NVRTC_SUCCESS) {
			full[ls] = '\0';
			snprintf(log, cap, "%s", full);
		} else {
			snprintf(log, cap, "compilation failed: %s", api.errstr(r));
		}
		free(full);
		api.destroy(&prog);
		return -EINVAL;
	}
	if (api.ptx_size(prog, n) != NVRTC_SUCCESS || !*n || !(*ptx = malloc(*n + 1)) ||
	    api.get_ptx(prog, *ptx) != NVRTC_SUCCESS) {
		free(*ptx);
		*ptx = NULL;
		*n = 0;
		api.destroy(&prog);
		snprintf(log, cap, "cannot get the PTX from NVRTC");
		return -EIO;
	}
	(*ptx)[*n] = '\0';
	*n = strlen(*ptx); /* NVRTC's size counts the NUL */
	api.destroy(&prog);
	if (!*n) {
		free(*ptx);
		*ptx = NULL;
		snprintf(log, cap, "NVRTC gave no PTX");
		return -EIO;
	}
	return 0;
}

/* Write all of buf to fd (a blocking pipe); 0 or -errno. */
static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Whether a tracer is attached to this process (/proc/self/status TracerPid); unreadable counts as traced. */
static bool traced(void)
{
	char buf[4096];
	const char *t;
	ssize_t n;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	t = strstr(buf, "\nTracerPid:");
	return !t || strtol(t + 11, NULL, 10) != 0;
}

/* The source from fd 0 (a sealed memfd), NUL-terminated and malloc'd; NULL with why in log. */
static char *read_source(char *log, size_t cap)
{
	struct stat st;
	char *text;
	size_t off = 0;

	if (fstat(0, &st) < 0) {
		snprintf(log, cap, "the NVRTC helper cannot read its source: %s", strerror(errno));
		return NULL;
	}
	if (st.st_size < 0 || (unsigned long long)st.st_size > NVRTC_SRC_MAX) {
		snprintf(log, cap, "the NVRTC helper's source is %lld bytes, over %llu", (long long)st.st_size,
			 NVRTC_SRC_MAX);
		return NULL;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		snprintf(log, cap, "the NVRTC helper has no memory for %lld bytes of source", (long long)st.st_size);
		return NULL;
	}
	while (off < (size_t)st.st_size) {
		ssize_t r = pread(0, text + off, (size_t)st.st_size - off, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(log, cap, "the NVRTC helper cannot read its source: %s",
				 r < 0 ? strerror(errno) : "short");
			free(text);
			return NULL;
		}
		off += (size_t)r;
	}
	text[off] = '\0';
	return text;
}

static bool parse_ull(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && end != s && !*end && *out <= max;
}

/*
 * argv: NAME NVRTC_HELPER_ARG MAJOR MINOR LOG_MAX AS_MAX CPU_S PPID. The
 * source is on fd 0, the answer goes to fd 1; exits 0 once it is written
 * (whatever NVRTC said), 2 on bad arguments or a parent already gone.
 */
int nvrtc_helper_main(int argc, char **argv)
{
	static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP };
	struct nvrtc_reply rep = { .magic = NVRTC_REPLY_MAGIC };
	unsigned long long major, minor, log_max, as_max, cpu_s, ppid;
	char *text = NULL, *ptx = NULL, *log;
	size_t n = 0;
	int fd;

	/* first, while /proc/self is still this user's: the one to go when memory runs out */
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)write_all(fd, "1000", 4);
		close(fd);
	}
	/* then out of reach of the user's other processes (executors of other domains), before any input */
	prctl(PR_SET_DUMPABLE, 0);
	if (argc != 8 || !parse_ull(argv[2], 99, &major) || !parse_ull(argv[3], 99, &minor) ||
	    !parse_ull(argv[4], 64u << 20, &log_max) || !parse_ull(argv[5], ~0ull, &as_max) ||
	    !parse_ull(argv[6], 86400, &cpu_s) || !parse_ull(argv[7], INT32_MAX, &ppid) || log_max < 1) {
		fprintf(stderr, "%s: for the executor's use only\n", argv[0]);
		return 2;
	}
	/* die with the executor's thread that waits for us; it may have gone already */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if ((unsigned long long)getppid() != ppid)
		return 2;
	log = calloc(1, (size_t)log_max + 1);
	if (!log)
		return 2;
	setpriority(PRIO_PROCESS, 0, NVRTC_NICE);
	setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
	if (cpu_s)
		setrlimit(RLIMIT_CPU, &(struct rlimit){ cpu_s, cpu_s + 1 });
#ifndef __SANITIZE_ADDRESS__ /* AddressSanitizer's shadow memory alone is terabytes of address space */
	if (as_max)
		setrlimit(RLIMIT_AS, &(struct rlimit){ as_max, as_max });
#endif
	/*
	 * A crash in NVRTC ends the helper by its signal, which the executor
	 * reports: no handler in between (AddressSanitizer's, in make asan,
	 * would exit 1 with a report of a bug that is not ours instead).
	 */
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		signal(crash_signals[i], SIG_DFL);
	if (traced()) {
		snprintf(log, (size_t)log_max + 1, "the NVRTC helper is being traced: it does not compile then");
		rep.status = -EPERM;
	} else if (!(text = read_source(log, (size_t)log_max + 1))) {
		rep.status = -EIO;
	} else {
		rep.status = compile(text, (int)major, (int)minor, &ptx, &n, log, (size_t)log_max + 1);
		free(text);
	}
	rep.ptx_len = rep.status == 0 ? n : 0;
	rep.log_len = strlen(log);
	if (write_all(1, &rep, sizeof(rep)) == 0 && write_all(1, ptx ? ptx : "", (size_t)rep.ptx_len) == 0)
		(void)write_all(1, log, (size_t)rep.log_len);
	/* not exit(): NVRTC's destructors have nothing to do for us, and a crash in them would only confuse */
	_exit(0);
}

/* ---- the executor's side ----------------------------------------------------- */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * Read exactly n bytes from fd (non-blocking) by the deadline: 0,
 * -ETIMEDOUT, -EPIPE (end of file first: the helper ended), or -errno.
 */
static int read_by(int fd, void *buf, size_t n, uint64_t deadline)
{
	char *p = buf;

	while (n) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t now = mono_ms();
		ssize_t r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&pf, 1, (int)(deadline - now));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue; /* EINTR, or the deadline: checked above */
		r = read(fd, p, n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EPIPE;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * Reap the helper: wait for it to end by itself until the deadline (or not
 * at all, if !wait), then SIGKILL it. Its pid cannot have been reused: it
 * is our child and not reaped yet. Returns its wait status; *own says
 * whether it ended by itself.
 */
static int reap(pid_t pid, uint64_t deadline, bool wait, bool *own)
{
	int st = 0;

	*own = false;
	for (unsigned us = 100; wait; us = us < 20000 ? us * 2 : us) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid || (r < 0 && errno == ECHILD)) { /* ECHILD: reaped already, SIGCHLD ignored */
			*own = true;
			return r == pid ? st : 0;
		}
		if (mono_ms() >= deadline)
			break;
		usleep(us);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

/* fd moved above stdin, stdout and stderr (the helper's 0 and 1 are dup2'd from it), close-on-exec; -errno. */
static int above_stdio(int fd)
{
	int nfd;

	if (fd < 0 || fd > 2)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return nfd < 0 ? -errno : nfd;
}

/* The source in a memfd sealed against any change; the fd or -errno. */
static int source_memfd(const char *src, size_t len)
{
	int fd = above_stdio(memfd_create("ooo-nvrtc-src", MFD_CLOEXEC | MFD_ALLOW_SEALING));
	size_t off = 0;

	if (fd < 0)
		return fd < -1 ? fd : -errno;
	while (off < len) {
		ssize_t w = write(fd, src + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;

			close(fd);
			return -e;
		}
		off += (size_t)w;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* Start the helper with src_fd as its fd 0 and out_fd as its fd 1, nothing else; 0 or -errno. */
static int spawn_helper(int src_fd, int out_fd, char *const argv[], pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int rc;

	rc = posix_spawn_file_actions_init(&fa);
	if (rc)
		return -rc;
	rc = posix_spawnattr_init(&at);
	if (rc) {
		posix_spawn_file_actions_destroy(&fa);
		return -rc;
	}
	sigemptyset(&none);
	sigfillset(&all);
	/* dup2 clears close-on-exec on the copies; everything above stderr is closed */
	if (!(rc = posix_spawn_file_actions_adddup2(&fa, src_fd, 0)) &&
	    !(rc = posix_spawn_file_actions_adddup2(&fa, out_fd, 1)) &&
	    !(rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3)) &&
	    /* no blocked signals, every disposition default (the executor ignores SIGPIPE) */
	    !(rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) &&
	    !(rc = posix_spawnattr_setsigmask(&at, &none)) && !(rc = posix_spawnattr_setsigdefault(&at, &all)))
		rc = posix_spawn(pid, "/proc/self/exe", &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return -rc;
}

/* Say in log how the helper ended without a whole answer; the error for the load. */
static int ended_why(int st, bool own, char *log, size_t cap)
{
	if (WIFSIGNALED(st)) {
		int sig = WTERMSIG(st);
		const char *abbrev = sigabbrev_np(sig);

		snprintf(log, cap, "NVRTC crashed (signal %d, SIG%s) compiling this module%s", sig,
			 abbrev ? abbrev : "?", sig == SIGXCPU ? ": it ran past its CPU time limit"
					   : sig == SIGKILL && own ? ": killed, perhaps out of memory"
								   : "");
		return -EIO;
	}
	snprintf(log, cap, "the NVRTC helper exited with status %d without an answer",
		 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return -EIO;
}

int nvrtc_compile_limits(const char *src, size_t len, int major, int minor, const struct nvrtc_limits *lim,
			 char **ptx, char *log, size_t cap)
{
	char a_major[24], a_minor[24], a_log[24], a_as[24], a_cpu[24], a_ppid[24];
	char *argv[] = { "ooo-nvrtc", NVRTC_HELPER_ARG, a_major, a_minor, a_log, a_as, a_cpu, a_ppid, NULL };
	size_t log_max = lim->log_max < cap ? lim->log_max : cap ? cap - 1 : 0;
	uint64_t deadline = mono_ms() + lim->time_ms;
	struct nvrtc_reply rep;
	char *text = NULL, *hlog = NULL;
	int src_fd, pfd[2], rc, st;
	bool whole = false, own;
	pid_t pid;

	*ptx = NULL;
	if (cap)
		log[0] = '\0';
	src_fd = source_memfd(src, len);
	if (src_fd < 0) {
		snprintf(log, cap, "cannot pass the source to the NVRTC helper: %s", strerror(-src_fd));
		return src_fd;
	}
	if (pipe2(pfd, O_CLOEXEC) < 0 || (pfd[0] = above_stdio(pfd[0])) < 0 || (pfd[1] = above_stdio(pfd[1])) < 0 ||
	    fcntl(pfd[0], F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		close(src_fd);
		snprintf(log, cap, "cannot make the NVRTC helper's pipe: %s", strerror(-rc));
		return rc;
	}
	snprintf(a_major, sizeof(a_major), "%d", major);
	snprintf(a_minor, sizeof(a_minor), "%d", minor);
	snprintf(a_log, sizeof(a_log), "%zu", log_max ? log_max : 1);
	snprintf(a_as, sizeof(a_as), "%llu", lim->as_max);
	/* CPU time: a backstop, the wall clock comes first */
	snprintf(a_cpu, sizeof(a_cpu), "%u", (lim->time_ms + 999) / 1000 + 1);
	snprintf(a_ppid, sizeof(a_ppid), "%d", (int)getpid());
	rc = spawn_helper(src_fd, pfd[1], argv, &pid);
	close(src_fd);
	close(pfd[1]);
	if (rc < 0) {
		close(pfd[0]);
		snprintf(log, cap, "cannot start the NVRTC helper (/proc/self/exe): %s", strerror(-rc));
		return rc;
	}
	rc = read_by(pfd[0], &rep, sizeof(rep), deadline);
	if (rc == 0 && (rep.magic != NVRTC_REPLY_MAGIC || rep.status > 0 || rep.status < -4095 ||
			(rep.status == 0) != (rep.ptx_len > 0) || rep.log_len > (log_max ? log_max : 1))) {
		rc = -EPROTO;
	} else if (rc == 0 && rep.ptx_len > lim->ptx_max) {
		rc = -EFBIG;
	} else if (rc == 0 &&
		   (!(text = malloc((size_t)rep.ptx_len + 1)) || !(hlog = malloc((size_t)rep.log_len + 1)))) {
		rc = -ENOMEM;
	} else if (rc == 0 && (rc = read_by(pfd[0], text, (size_t)rep.ptx_len, deadline)) == 0 &&
		   (rc = read_by(pfd[0], hlog, (size_t)rep.log_len, deadline)) == 0) {
		whole = true;
	}
	close(pfd[0]);
	/*
	 * A whole answer, or one we refuse: the helper has nothing more to say
	 * (it may still be on its way out). An early end of file: it is ending,
	 * let it, to learn how (its descriptors close a moment before it is a
	 * zombie: a second more even at the deadline).
	 */
	{
		uint64_t grace = mono_ms() + 1000;

		st = reap(pid, grace > deadline ? grace : deadline, !whole && rc == -EPIPE, &own);
	}
	if (whole) {
		text[rep.ptx_len] = '\0';
		hlog[rep.log_len] = '\0';
		snprintf(log, cap, "%s", hlog);
		free(hlog);
		if (rep.status < 0) {
			free(text);
			return rep.status;
		}
		*ptx = text;
		return 0;
	}
	free(text);
	free(hlog);
	switch (rc) {
	case -ETIMEDOUT:
		snprintf(log, cap, "NVRTC ran past its %u s limit compiling this module: stopped",
			 (lim->time_ms + 999) / 1000);
		return rc;
	case -EFBIG:
		snprintf(log, cap, "NVRTC's PTX is %llu bytes, over the %zu a module may have",
			 (unsigned long long)rep.ptx_len, lim->ptx_max);
		return rc;
	case -ENOMEM:
		snprintf(log, cap, "out of memory for NVRTC's answer");
		return rc;
	case -EPIPE:
		return ended_why(st, own, log, cap);
	case -EPROTO:
		snprintf(log, cap, "the NVRTC helper's answer is malformed");
		return rc;
	default:
		snprintf(log, cap, "reading the NVRTC helper's answer: %s", strerror(-rc));
		return rc;
	}
}

int nvrtc_compile(const char *src, size_t len, int major, int minor, char **ptx, char *log, size_t cap)
{
	return nvrtc_compile_limits(src, len, major, minor, &nvrtc_default_limits, ptx, log, cap);
}
