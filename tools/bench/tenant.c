/* SPDX-License-Identifier: MIT */
/*
 * A tenant process: `ooo-bench --tenant 3 4`, started by the parent
 * (driver.c) with its configuration on fd 3 and its messages to the parent
 * on fd 4. It sets up its GPU backend and workload, says READY (or FAIL
 * with the reason), waits on fd 3 for the common start time, runs requests
 * until the end of the measured window, and sends its counters and its
 * latency histogram back as one RESULT. EOF on fd 3 instead of a start
 * time means the point was called off.
 *
 * Timing. Closed loop: a request is timed from its issue; it counts if it
 * was issued inside the window (at or after the end of the warm-up, before
 * the end), even if it completes after the end. Open loop: arrivals are a
 * Poisson process of `rate` per second from the start; a request is timed
 * from its scheduled arrival (not from when the tenant got to it, so
 * queueing behind a slow request is counted: no coordinated omission), and
 * it counts if it arrived inside the window. Requests that arrived in the window are still served after
 * it for up to the drain time; those left then are `unfinished` and enter
 * the histogram with their latency so far, a lower bound, and never count
 * as within the SLO.
 *
 * A request whose output is checked (mlp, gemm) has that output poisoned
 * first, outside its timing, so that one that did not write it fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workloads.h"

#define PROGRESS_NS (BENCH_NS / 5)

static int send_msg(uint32_t type, const void *payload, uint32_t len)
{
	struct tmsg_hdr h = { .type = type, .len = len };
	int r = bench_write_full(TENANT_RES_FD, &h, sizeof(h));

	if (!r && len)
		r = bench_write_full(TENANT_RES_FD, payload, len);
	return r;
}

static void send_fail(const char *why)
{
	char msg[BENCH_ERR_MAX];

	snprintf(msg, sizeof(msg), "%s", why[0] ? why : "unknown failure");
	send_msg(TM_FAIL, msg, (uint32_t)strlen(msg) + 1);
}

static int64_t exp_gap(uint64_t *st, double rate)
{
	return (int64_t)(-log(bench_rand_unit(st)) / rate * (double)BENCH_NS);
}

static void note_error(struct tm_result *res, const char *why)
{
	if (!res->error[0])
		snprintf(res->error, sizeof(res->error), "%s", why[0] ? why : "unknown failure");
}

/* A request of the latency population; met: it counts as within the SLO if its latency is. */
static void record(struct tm_result *res, const struct tenant_cfg *c, int64_t lat, bool met)
{
	if (lat < 0)
		lat = 0;
	hist_add(&res->h, (uint64_t)lat);
	res->requests++;
	if (met && c->slo_ns && (uint64_t)lat <= c->slo_ns)
		res->slo_met++;
}

static void run(struct tstate *t, int64_t t_start, struct tm_result *res)
{
	const struct tenant_cfg *c = t->c;
	const int64_t t_warm = t_start + c->warmup_ns, t_end = t_warm + c->duration_ns;
	uint64_t st = c->seed * 0x9e3779b97f4a7c15ull + c->index + 1, seq = 0;
	int64_t next = t_start, next_progress = t_start + PROGRESS_NS;
	bool check = wl_has_check(t);

	bench_sleep_until(t_start);
	if (c->open)
		next += exp_gap(&st, c->rate);
	for (;;) {
		int64_t t_sched, t1;
		bool checked = check && wl_checked(t, seq);
		int r;

		if (c->open) {
			int64_t now = bench_now_ns();

			if (next >= t_end)
				break;
			if (now > t_end + c->drain_ns) {
				/* what arrived in the window and will not be served: latency so far */
				for (; next < t_end; next += exp_gap(&st, c->rate)) {
					if (next >= t_warm) {
						/* not served: a lower bound, and not within the SLO */
						record(res, c, now - next, false);
						res->unfinished++;
					}
				}
				break;
			}
			if (checked && (r = wl_prepare_check(t))) {
				res->errors++;
				note_error(res, t->g.why);
				break;
			}
			if (now < next)
				bench_sleep_until(next);
			t_sched = next;
			next += exp_gap(&st, c->rate);
		} else {
			if (checked && (r = wl_prepare_check(t))) {
				res->errors++;
				note_error(res, t->g.why);
				break;
			}
			t_sched = bench_now_ns();
			if (t_sched >= t_end)
				break;
		}
		r = wl_request(t, seq);
		t1 = bench_now_ns();
		if (r) {
			res->errors++;
			note_error(res, t->g.why);
			break;
		}
		if (t1 >= t_warm && t1 <= t_end)
			res->completed++;
		if (t_sched >= t_warm && t_sched < t_end)
			record(res, c, t1 - t_sched, true);
		seq++;
		if (checked) {
			res->checks++;
			r = wl_check(t, seq - 1);
			if (r > 0) {
				res->check_failures++;
				note_error(res, t->why);
			} else if (r < 0) {
				res->errors++;
				note_error(res, t->g.why);
				break;
			}
		}
		if (t1 >= next_progress) {
			struct tm_progress p = { .completed = res->completed };

			next_progress = t1 + PROGRESS_NS;
			if (send_msg(TM_PROGRESS, &p, sizeof(p)))
				break; /* the parent is gone */
		}
	}
}

int bench_tenant_main(int argc, char **argv)
{
	struct tenant_cfg *c = calloc(1, sizeof(*c));
	struct tstate *t = calloc(1, sizeof(*t));
	struct tm_result *res = calloc(1, sizeof(*res));
	int64_t t_start;
	int r;

	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	if (argc != 4 || fcntl(TENANT_CTL_FD, F_GETFD) < 0 || fcntl(TENANT_RES_FD, F_GETFD) < 0) {
		fprintf(stderr, "ooo-bench: --tenant is internal: the GPU workloads start their tenants with it\n");
		return BENCH_RC_USAGE;
	}
	if (!c || !t || !res) {
		send_fail("tenant: out of memory");
		return BENCH_RC_FAIL;
	}
	r = bench_read_full(TENANT_CTL_FD, c, sizeof(*c));
	if (r || c->magic != TENANT_MAGIC || c->size != sizeof(*c)) {
		send_fail(r ? "tenant: cannot read the configuration" : "tenant: configuration from another build");
		return BENCH_RC_FAIL;
	}
	t->c = c;
	hist_init(&res->h);
	r = gpu_open(&t->g, c);
	if (!r)
		r = wl_setup(t);
	if (r) {
		char why[BENCH_ERR_MAX];

		snprintf(why, sizeof(why), "%s", t->g.why);
		send_fail(why);
		wl_teardown(t);
		return BENCH_RC_FAIL;
	}
	if (send_msg(TM_READY, NULL, 0) || bench_read_full(TENANT_CTL_FD, &t_start, sizeof(t_start))) {
		/* called off */
		wl_teardown(t);
		return BENCH_RC_OK;
	}
	run(t, t_start, res);
	r = send_msg(TM_RESULT, res, sizeof(*res));
	wl_teardown(t);
	free(res);
	free(t);
	free(c);
	return r ? BENCH_RC_FAIL : BENCH_RC_OK;
}
