/* SPDX-License-Identifier: MIT */
/* Small helpers of ooo-bench's GPU workloads. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

const char *const bench_mode_names[BM_COUNT] = { "direct", "mps", "ooo", "lease" };
const char *const bench_wl_names[WL_COUNT] = { "spin", "mlp", "gemm", "custom", "mix" };
const char *const bench_class_names[TC_COUNT] = { "default", "critical", "best-effort" };

const char *bench_cur_workload;
const char *bench_argv0 = "ooo-bench";

void bench_err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("ooo-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int bench_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("ooo-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fprintf(stderr, "Try 'ooo-bench %s --help'.\n", bench_cur_workload ? bench_cur_workload : "spin");
	return BENCH_RC_USAGE;
}

int64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * BENCH_NS + ts.tv_nsec;
}

void bench_sleep_until(int64_t t_ns)
{
	/* the last few microseconds spun: a timer wake-up is later than that */
	int64_t now = bench_now_ns();

	if (t_ns - now > 60000) {
		struct timespec ts = { .tv_sec = (t_ns - 50000) / BENCH_NS, .tv_nsec = (t_ns - 50000) % BENCH_NS };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	while (bench_now_ns() < t_ns)
		;
}

int bench_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		got += (size_t)n;
	}
	return 0;
}

int bench_write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

static bool try_dir(const char *dir, size_t dlen, const char *name, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%.*s/%s", (int)dlen, dlen ? dir : ".", name);

	return n > 0 && (size_t)n < cap && access(out, X_OK) == 0;
}

int bench_find_exe(const char *name, const char *extra, char *out, size_t cap)
{
	const char *lists[2] = { getenv("PATH"), extra };

	if (strchr(name, '/')) {
		if (access(name, X_OK) != 0)
			return -errno;
		snprintf(out, cap, "%s", name);
		return 0;
	}
	for (int l = 0; l < 2; l++) {
		const char *p = lists[l];

		while (p && *p) {
			const char *e = strchr(p, ':');
			size_t dlen = e ? (size_t)(e - p) : strlen(p);

			if (try_dir(p, dlen, name, out, cap))
				return 0;
			p = e ? e + 1 : NULL;
		}
	}
	return -ENOENT;
}

void bench_ld_prepend(const char *dir)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	char buf[8192];

	if (!dir || !dir[0])
		return;
	snprintf(buf, sizeof(buf), "%s%s%s", dir, old && old[0] ? ":" : "", old && old[0] ? old : "");
	setenv("LD_LIBRARY_PATH", buf, 1);
}

int bench_capture(char *const argv[], const char *ld_dir, char *out, size_t cap, int timeout_ms)
{
	int p[2], st;
	size_t got = 0;
	int64_t deadline = bench_now_ns() + (int64_t)timeout_ms * 1000000;
	pid_t pid;

	if (cap)
		out[0] = 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = -errno;

		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		dup2(p[1], 1);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 2);
		}
		bench_ld_prepend(ld_dir);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		int64_t left = (deadline - bench_now_ns()) / 1000000;
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, (int)left) <= 0) {
			if (left <= 0 || errno != EINTR) {
				kill(pid, SIGKILL);
				break;
			}
			continue;
		}
		n = read(p[0], out + got, got + 1 < cap ? cap - got - 1 : 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n == 0 && got + 1 >= cap && cap) {
				char sink[256];

				/* full: drain the rest so the child can finish */
				while (read(p[0], sink, sizeof(sink)) > 0)
					;
			}
			break;
		}
		got += (size_t)n;
		out[got] = 0;
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void bench_rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			bench_rmtree(path);
		else
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

uint64_t bench_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double bench_rand_unit(uint64_t *state)
{
	return (double)((bench_rand(state) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

void bench_iso_date(char *buf, size_t cap)
{
	time_t t = time(NULL);
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
	else
		snprintf(buf, cap, "unknown");
}
