// SPDX-License-Identifier: MIT
/*
 * libooo-sampler.so: a CPU sampling profiler for the executor, for machines
 * without perf (the GPU machine has none). Preload it into oood (it is
 * inherited by the executors it starts):
 *
 *   OOO_SAMPLER_OUT=DIR LD_PRELOAD=build/libooo-sampler.so oood ...
 *
 * Only a process whose command line holds "--executor" samples itself; it
 * writes DIR/exec-PID.txt (rewritten every second and at exit): its
 * executable mappings, then one line per sample, "tid leaf caller1 caller2
 * ... caller6" in hex, and for a leaf outside oood a line "y ADDR SYMBOL+OFF"
 * (dladdr: the nearest exported symbol). The leaf is where the CPU was (ITIMER_PROF, so process CPU
 * time, 1 kHz asked); the callers come from the main thread's frame-pointer
 * chain: build the oood to profile with -fno-omit-frame-pointer (see
 * bench/README.md). A leaf in a library without frame pointers (libcuda) is
 * charged to the first frame record of ours found above the stack pointer;
 * with no frame record at all, the callers are the first words on the stack
 * that point into oood's text (stale words appear: hints only). bench/sampler-report.py turns
 * the file into a flat and a caller profile with addr2line.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_SAMPLES (1u << 20)
#define NCALLERS 6

struct sample {
	uint32_t tid;
	uint64_t pc[1 + NCALLERS];
};

static struct sample *samples;
static volatile uint32_t nsamples;
static volatile uint32_t start_idx = UINT32_MAX; /* the sample when OOO_SAMPLER_START appeared */
static int out_fd = -1;
static uintptr_t text_lo, text_hi, stack_lo, stack_hi;
static pid_t main_tid;

static int in_text(uintptr_t x) { return x >= text_lo && x < text_hi; }

/*
 * Not instrumented by AddressSanitizer: the walk reads raw stack words of
 * whatever the signal interrupted, redzones of instrumented frames among
 * them (make asan runs tests/unit/test_sampler.c).
 */
__attribute__((no_sanitize_address)) static void on_prof(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uint32_t i = nsamples;
	struct sample *s;
	int saved = errno;

	(void)sig;
	(void)si;
	if (i >= MAX_SAMPLES)
		return;
	s = &samples[i];
	memset(s, 0, sizeof(*s));
	s->tid = (uint32_t)syscall(SYS_gettid);
	s->pc[0] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	if ((pid_t)s->tid == main_tid) {
		uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP], top = stack_hi - 16;
		uintptr_t *a = NULL;
		int n = 1;

		if (sp >= stack_lo && sp < stack_hi) {
			/* in oood (built with frame pointers) the chain starts at rbp */
			uintptr_t bp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];

			if (in_text(s->pc[0]) && bp >= sp && bp < top && !(bp & 7))
				a = (uintptr_t *)bp;
			/* elsewhere (libcuda keeps none), the first frame record of ours above sp: (saved rbp, return address) */
			for (uintptr_t *w = (uintptr_t *)sp; !a && (uintptr_t)w < top && w < (uintptr_t *)sp + 4096; w++)
				if (in_text(w[1]) && w[0] > (uintptr_t)w && w[0] < top && !(w[0] & 7) &&
				    in_text(((uintptr_t *)w[0])[1])) {
					a = w;
					/*
					 * That record is the frame of our function that called the library;
					 * the return address into it is the nearest word below the record
					 * that points into our text (its locals lie between: a hint)
					 */
					for (uintptr_t *r = w - 1; r >= (uintptr_t *)sp; r--)
						if (in_text(*r)) {
							s->pc[n++] = *r;
							break;
						}
				}
			for (; a && n <= NCALLERS && in_text(a[1]); n++) {
				s->pc[n] = a[1];
				if (a[0] <= (uintptr_t)a || a[0] >= top)
					break;
				a = (uintptr_t *)a[0];
			}
			if (n == 1) /* no frame record: the first words that point into oood's text (hints) */
				for (uintptr_t *w = (uintptr_t *)sp; (uintptr_t)(w + 1) <= stack_hi && w < (uintptr_t *)sp + 4096 &&
								      n <= NCALLERS;
				     w++)
					if (in_text(*w))
						s->pc[n++] = *w;
		}
	}
	nsamples = i + 1;
	errno = saved;
}

static void dump(void)
{
	char line[512];
	FILE *m;
	uint32_t n = nsamples;
	off_t off = 0;
	int len;

	if (out_fd < 0 || ftruncate(out_fd, 0) < 0)
		return;
	m = fopen("/proc/self/maps", "re");
	if (m) {
		while (fgets(line, sizeof(line), m))
			if (strstr(line, " r-xp ")) {
				char buf[560];

				len = snprintf(buf, sizeof(buf), "map %s", line);
				if (pwrite(out_fd, buf, (size_t)len, off) == len)
					off += len;
			}
		fclose(m);
	}
	if (start_idx != UINT32_MAX) {
		len = snprintf(line, sizeof(line), "start %u\n", start_idx);
		if (pwrite(out_fd, line, (size_t)len, off) == len)
			off += len;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct sample *s = &samples[i];

		Dl_info di;

		if ((s->pc[0] < text_lo || s->pc[0] >= text_hi) && dladdr((void *)(uintptr_t)s->pc[0], &di) && di.dli_sname) {
			/* outside oood: the nearest exported symbol (right for libc, a hint for libcuda) */
			len = snprintf(line, sizeof(line), "y %llx %s+%llx\n", (unsigned long long)s->pc[0], di.dli_sname,
				       (unsigned long long)(s->pc[0] - (uintptr_t)di.dli_saddr));
			if (len > 0 && len < (int)sizeof(line) && pwrite(out_fd, line, (size_t)len, off) == len)
				off += len;
		}
		len = snprintf(line, sizeof(line), "s %u", s->tid);
		for (int k = 0; k <= NCALLERS; k++)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " %llx", (unsigned long long)s->pc[k]);
		line[len++] = '\n';
		if (pwrite(out_fd, line, (size_t)len, off) != len)
			return;
		off += len;
	}
}

static void *dumper(void *arg)
{
	const char *start = getenv("OOO_SAMPLER_START");

	(void)arg;
	for (unsigned t = 0;; t++) {
		struct timespec ts = { 0, 100000000 };

		nanosleep(&ts, NULL);
		if (start && *start && start_idx == UINT32_MAX && access(start, F_OK) == 0)
			start_idx = nsamples;
		if (t % 10 == 9)
			dump();
	}
	return NULL;
}

static void find_ranges(void)
{
	char line[512], self[256];
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	FILE *m = fopen("/proc/self/maps", "re");

	if (k <= 0 || !m) {
		if (m)
			fclose(m);
		return;
	}
	self[k] = 0;
	while (fgets(line, sizeof(line), m)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		if (strstr(line, " r-xp ") && strstr(line, self)) {
			if (!text_lo || lo < text_lo)
				text_lo = lo;
			if (hi > text_hi)
				text_hi = hi;
		}
		if (strstr(line, "[stack]")) {
			stack_lo = lo;
			stack_hi = hi;
		}
	}
	fclose(m);
}

__attribute__((constructor)) static void sampler_init(void)
{
	char cmd[4096], path[4200];
	const char *dir = getenv("OOO_SAMPLER_OUT");
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n;
	int is_exec = 0;
	struct sigaction sa;
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	pthread_t th;

	if (!dir || fd < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	for (ssize_t i = 0; i + 10 <= n; i++)
		if (!memcmp(cmd + i, "--executor", 10))
			is_exec = 1;
	if (!is_exec)
		return;
	samples = calloc(MAX_SAMPLES, sizeof(*samples));
	if (!samples)
		return;
	snprintf(path, sizeof(path), "%s/exec-%d.txt", dir, (int)getpid());
	out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out_fd < 0)
		return;
	main_tid = getpid();
	find_ranges();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	pthread_create(&th, NULL, dumper, NULL);
	atexit(dump);
}
