/* SPDX-License-Identifier: MIT */
/*
 * pingpong ROUNDS: two threads pass a byte back and forth through two pipes
 * ROUNDS times: every round wakes each thread once, so the run-queue probes
 * of a traced process must see samples. Same stdio protocol as cuda_calls.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int ab[2], ba[2];
static unsigned long rounds;

static void *echo(void *arg)
{
	char c;

	(void)arg;
	for (unsigned long i = 0; i < rounds; i++) {
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	char line[64], c = 'x';
	pthread_t t;

	if (argc != 2 || (rounds = strtoul(argv[1], NULL, 10)) == 0) {
		fprintf(stderr, "usage: pingpong ROUNDS\n");
		return 2;
	}
	if (pipe(ab) || pipe(ba))
		return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (pthread_create(&t, NULL, echo, NULL))
		return 1;
	for (unsigned long i = 0; i < rounds; i++) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			break;
	}
	pthread_join(t, NULL);
	printf("done\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 0; /* EOF: the test is done with us */
	return 0;
}
