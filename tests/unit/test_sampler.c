/* SPDX-License-Identifier: MIT */
/*
 * The executor's sampling profiler (bench/sampler.c, build/libooo-sampler.so)
 * on a child of this program that calls itself "--executor": the file it
 * writes has its mappings, samples whose leaves are in the child's hot loop,
 * a frame-pointer caller chain through this file's functions, and the start
 * mark; a process without "--executor" writes nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static char self[PATH_MAX], lib[PATH_MAX], dir[] = "/tmp/ooo-sampler-test-XXXXXX";

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the hot loop: its own function, not inlined, so the leaves fall inside it */
__attribute__((noinline)) static uint64_t hot(uint64_t n)
{
	volatile uint64_t x = 1;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

__attribute__((noinline)) static uint64_t outer(uint64_t n) { return hot(n) + 1; }

static int child(const char *mark)
{
	double t0 = cpu_s();
	uint64_t s = 0;
	FILE *f;

	/* print where hot() is, for the parent */
	printf("%lx %lx\n", (unsigned long)(uintptr_t)&hot, (unsigned long)(uintptr_t)&outer);
	fflush(stdout);
	while (cpu_s() - t0 < 0.6)
		s += outer(100000);
	f = fopen(mark, "we");
	if (f)
		fclose(f);
	t0 = cpu_s();
	while (cpu_s() - t0 < 0.6)
		s += outer(100000);
	return (int)(s & 1) * 0; /* exit: the sampler writes its file at exit */
}

static pid_t spawn(const char *arg, const char *mark, int *out)
{
	int p[2];
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		setenv("LD_PRELOAD", lib, 1);
		setenv("OOO_SAMPLER_OUT", dir, 1);
		setenv("OOO_SAMPLER_START", mark, 1);
		/* under ASan the preloaded library comes before the runtime: allowed here */
		setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
		execl(self, self, arg, mark, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	return pid;
}

static void test_samples_the_executor(void **state)
{
	char mark[PATH_MAX + 16], path[PATH_MAX + 32], line[512];
	unsigned long hot_a = 0, outer_a = 0;
	unsigned long lo = 0, hi = 0;
	unsigned n = 0, in_hot = 0, chained = 0, start = 0, maps = 0;
	int fd, st;
	pid_t pid;
	FILE *f;

	(void)state;
	snprintf(mark, sizeof(mark), "%s/go", dir);
	pid = spawn("--executor", mark, &fd);
	{
		FILE *o = fdopen(fd, "r");

		assert_non_null(o);
		assert_int_equal(fscanf(o, "%lx %lx", &hot_a, &outer_a), 2);
		fclose(o);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(path, sizeof(path), "%s/exec-%d.txt", dir, (int)pid);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long pc[7] = { 0 };
		unsigned tid;

		if (!strncmp(line, "map ", 4)) {
			unsigned long a, b;

			if (strstr(line, self) && sscanf(line + 4, "%lx-%lx", &a, &b) == 2) {
				lo = lo && lo < a ? lo : a;
				hi = hi > b ? hi : b;
			}
			maps++;
		} else if (!strncmp(line, "start ", 6)) {
			start = (unsigned)strtoul(line + 6, NULL, 10);
		} else if (sscanf(line, "s %u %lx %lx %lx %lx %lx %lx %lx", &tid, &pc[0], &pc[1], &pc[2], &pc[3],
				  &pc[4], &pc[5], &pc[6]) >= 2) {
			n++;
			/* hot() is small: a leaf within 256 bytes of its entry is in it */
			in_hot += pc[0] >= hot_a && pc[0] < hot_a + 256;
			for (int k = 1; k < 7; k++)
				chained += pc[k] > outer_a && pc[k] < outer_a + 256;
		}
	}
	fclose(f);
	print_message("sampler: %u samples, %u in hot(), %u with outer() as a caller, start at %u, %u maps\n", n,
		      in_hot, chained, start, maps);
	assert_true(maps > 0);
	assert_true(lo && hi > lo && hot_a >= lo && hot_a < hi);
	assert_true(n >= 50); /* 1.2 s of CPU at 100 Hz or more */
	assert_true(in_hot * 10 >= n * 8);
	assert_true(chained * 10 >= in_hot * 8); /* the frame-pointer chain names the caller */
	assert_true(start > 0 && start < n);
	unlink(path);
	unlink(mark);
}

static void test_other_processes_write_nothing(void **state)
{
	char mark[PATH_MAX + 16], path[PATH_MAX + 32];
	int fd, st;
	pid_t pid;

	(void)state;
	snprintf(mark, sizeof(mark), "%s/go2", dir);
	pid = spawn("--not-the-executor", mark, &fd);
	{
		char drain[256];

		while (read(fd, drain, sizeof(drain)) > 0)
			; /* its address line: a closed pipe would kill it */
		close(fd);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(path, sizeof(path), "%s/exec-%d.txt", dir, (int)pid);
	assert_int_equal(access(path, F_OK), -1);
	unlink(mark);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples_the_executor),
		cmocka_unit_test(test_other_processes_write_nothing),
	};
	const char *b = getenv("OOO_BUILD");
	ssize_t k;
	int rc;

	if (argc == 3)
		return child(argv[2]);
	k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k <= 0)
		return 1;
	self[k] = 0;
	snprintf(lib, sizeof(lib), "%s/libooo-sampler.so", b ? b : "build");
	if (lib[0] != '/') {
		char cwd[PATH_MAX], rel[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return 1;
		snprintf(rel, sizeof(rel), "%s", lib);
		snprintf(lib, sizeof(lib), "%.2000s/%.2000s", cwd, rel);
	}
	if (access(lib, R_OK)) {
		printf("test_sampler: SKIP: %s not built\n", lib);
		return 77;
	}
	if (!mkdtemp(dir))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return rc;
}
