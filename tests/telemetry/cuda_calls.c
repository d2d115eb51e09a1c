/* SPDX-License-Identifier: MIT */
/*
 * cuda_calls LAUNCHES SYNCS ALLOCS: a process that makes exactly that many
 * cuLaunchKernel, cuStreamSynchronize and cuMemAlloc_v2 calls, for the
 * telemetry tests. Linked against whatever libcuda.so.1 it finds: in CI the
 * CUDA toolkit's stub, whose functions only return errors (the uprobes fire
 * all the same); on the GPU machine the driver, where it makes a context and
 * launches nothing real (null function: the call fails after the probe).
 *
 * Protocol on stdio, so the test can trace it first: prints "ready PID",
 * waits for a line on stdin, makes the calls, prints "done NS" (the mean
 * time of one cuLaunchKernel call in ns, for the probe overhead benchmark),
 * waits for another line (or EOF), exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

static unsigned long arg(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*end || v > 100000000ul) {
		fprintf(stderr, "cuda_calls: bad count '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	unsigned long nl, ns, na;
	char line[64];
	CUdeviceptr p;
	struct timespec t0, t1;
	double per;

	if (argc != 4) {
		fprintf(stderr, "usage: cuda_calls LAUNCHES SYNCS ALLOCS\n");
		return 2;
	}
	nl = arg(argv[1]);
	ns = arg(argv[2]);
	na = arg(argv[3]);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; i < nl; i++)
		(void)cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	per = nl ? ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)nl : 0;
	for (unsigned long i = 0; i < ns; i++)
		(void)cuStreamSynchronize(NULL);
	for (unsigned long i = 0; i < na; i++)
		(void)cuMemAlloc(&p, 4096);
	printf("done %.1f\n", per);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 0; /* EOF: the test is done with us */
	return 0;
}
