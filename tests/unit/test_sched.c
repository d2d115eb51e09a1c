/* SPDX-License-Identifier: MIT */
/* Unit tests of the scheduler core (daemon/sched) with a virtual clock. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../daemon/sched/sched.h"

#define US 1000ull
#define K 0x1234u /* a fusion class */

static struct sched *mk(uint32_t queues, uint32_t inflight, uint32_t partitions)
{
	struct sched_cfg c = { .max_queues = queues,
			       .max_items = 4096,
			       .partitions = partitions,
			       .max_inflight = inflight,
			       .slack_margin_ns = 20 * US,
			       .default_cost_ns = 10 * US,
			       .ewma_shift = 2 };
	struct sched *s = NULL;

	assert_int_equal(sched_new(&c, &s), 0);
	return s;
}

static void sub(struct sched *s, uint64_t id, uint32_t q, uint64_t klass, uint32_t blocks, uint64_t deadline)
{
	struct sched_launch l = { .id = id,
				  .queue = q,
				  .partition = 0,
				  .klass = klass,
				  .blocks = blocks,
				  .capacity = 8,
				  .cost_key = klass ? klass : 99,
				  .deadline_ns = deadline };

	assert_int_equal(sched_submit(s, &l), 0);
}

static struct sched_bundle out[16];

static void test_config(void **state)
{
	struct sched_cfg c = { .max_queues = 4, .max_items = 4, .partitions = 1, .max_inflight = 1 };
	struct sched *s = NULL;
	struct sched_launch l = { .queue = 0, .blocks = 1, .capacity = 1 };

	c.partitions = 0;
	assert_int_equal(sched_new(&c, &s), -EINVAL);
	c.partitions = SCHED_MAX_PARTITIONS + 1;
	assert_int_equal(sched_new(&c, &s), -EINVAL);
	c.partitions = 1;
	c.max_inflight = 0;
	assert_int_equal(sched_new(&c, &s), -EINVAL);
	c.max_inflight = 1;
	assert_int_equal(sched_new(&c, &s), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(sched_submit(s, &l), 0);
	assert_int_equal(sched_submit(s, &l), -ENOSPC);
	l.queue = 4;
	assert_int_equal(sched_submit(s, &l), -EINVAL);
	l.queue = 0;
	l.blocks = 0;
	assert_int_equal(sched_submit(s, &l), -EINVAL);
	assert_int_equal(sched_complete(s, 77, 1), -ENOENT);
	assert_int_equal(sched_pending(s), 4);
	sched_free(s);
	sched_free(NULL);
}

/* A queue's launches leave in order, one bundle position at a time. */
static void test_queue_order(void **state)
{
	struct sched *s = mk(4, 4, 1);

	sub(s, 1, 0, 0, 2, 500 * US);
	sub(s, 2, 0, 0, 2, 100 * US); /* earlier deadline, but behind 1 in its queue */
	sub(s, 3, 0, 0, 2, 50 * US);
	for (uint64_t want = 1; want <= 3; want++) {
		assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
		assert_int_equal(out[0].n, 1);
		assert_int_equal(out[0].ids[0], want);
	}
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 0);
	sched_free(s);
}

/* Across queues the earliest deadline goes first (out of order). */
static void test_edf(void **state)
{
	struct sched *s = mk(4, 1, 1);

	sub(s, 1, 0, 0, 2, 900 * US);
	sub(s, 2, 1, 0, 2, 100 * US);
	sub(s, 3, 2, 0, 2, 300 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 2);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 0); /* one in flight at most */
	assert_int_equal(sched_complete(s, out[0].token, 5 * US), 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 3);
	sched_free(s);
}

/* Bundles pack one class in deadline order up to the capacity, then hold until slack runs out. */
static void test_capacity_and_slack(void **state)
{
	struct sched *s = mk(16, 2, 1);
	uint64_t wake = 0;

	assert_int_equal(sched_class_ready(s, K, true), 0);
	for (uint32_t q = 0; q < 10; q++)
		sub(s, 100 + q, q, K, 2, (1000 + 10 * (10 - q)) * US); /* later queues: earlier deadlines */
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 2);
	assert_int_equal(out[0].n, 4); /* 4 x 2 blocks = capacity 8 */
	assert_true(out[0].fused);
	assert_int_equal(out[0].ids[0], 109);
	assert_int_equal(out[0].ids[3], 106);
	assert_int_equal(out[1].n, 4);
	assert_int_equal(out[1].ids[0], 105);
	/* two left, the partition is busy, plenty of slack: held */
	assert_int_equal(sched_complete(s, out[0].token, 10 * US), 0);
	assert_int_equal(sched_poll(s, 100 * US, out, 16, &wake), 0);
	assert_int_equal(wake, (1090 - 10 - 20) * US); /* earliest left: 1090 us, learned cost 10 us, margin 20 us */
	/* at the wake-up time the slack is gone: dispatched, partly full */
	assert_int_equal(sched_poll(s, wake, out, 16, NULL), 1);
	assert_int_equal(out[0].n, 2);
	{
		struct sched_stats st;

		sched_get_stats(s, &st);
		assert_int_equal(st.dispatch_full, 2);
		assert_int_equal(st.dispatch_slack, 1);
		assert_int_equal(st.fused_launches, 10);
		assert_int_equal(st.max_members, 4);
	}
	sched_free(s);
}

/* Holding work back never leaves a partition idle. */
static void test_work_conserving(void **state)
{
	struct sched *s = mk(4, 2, 1);

	assert_int_equal(sched_class_ready(s, K, true), 0);
	sub(s, 1, 0, K, 2, 10000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1); /* idle: goes at once, alone */
	assert_false(out[0].fused);
	sched_free(s);
}

/* While a class is compiling its launches go unfused; once ready they are bundled. */
static void test_compile_fallback(void **state)
{
	struct sched *s = mk(8, 8, 1);

	for (uint32_t q = 0; q < 4; q++)
		sub(s, q, q, K, 2, 1000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 4);
	for (int i = 0; i < 4; i++)
		assert_false(out[i].fused);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	for (uint32_t q = 0; q < 3; q++)
		sub(s, 10 + q, q, K, 2, 1000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 0); /* 4 in flight, 6 of 8 blocks, slack left: held */
	for (uint64_t t = 1; t <= 4; t++)
		assert_int_equal(sched_complete(s, t, 10 * US), 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1); /* idle: goes */
	assert_int_equal(out[0].n, 3);
	assert_true(out[0].fused);
	assert_int_equal(sched_class_ready(s, K, false), 0);
	sched_free(s);
}

/* The cost model learns from completions, and the slack it predicts triggers dispatch. */
static void test_cost_model(void **state)
{
	struct sched *s = mk(4, 4, 1);
	uint64_t p0 = sched_predict(s, K);

	assert_int_equal(p0, 10 * US);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	for (int i = 0; i < 40; i++) {
		sub(s, (uint64_t)i, 0, K, 2, 100000 * US);
		assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
		assert_int_equal(sched_complete(s, out[0].token, 200 * US), 0);
	}
	assert_true(sched_predict(s, K) > 190 * US && sched_predict(s, K) <= 200 * US);
	/* busy partition, one member: held while now + 200 us + margin < deadline */
	sub(s, 900, 1, K, 2, 100000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	sub(s, 901, 2, K, 2, 500 * US);
	assert_int_equal(sched_poll(s, 200 * US, out, 16, NULL), 0);
	assert_int_equal(sched_poll(s, 300 * US, out, 16, NULL), 1); /* 300 + 200 + 20 > 500 */
	assert_int_equal(out[0].ids[0], 901);
	sched_free(s);
}

static void test_blocked_queue(void **state)
{
	struct sched *s = mk(4, 4, 1);

	sub(s, 1, 0, 0, 2, 10 * US);
	sub(s, 2, 1, 0, 2, 20 * US);
	assert_int_equal(sched_block(s, 0, true), 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 2);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 0);
	assert_int_equal(sched_block(s, 0, false), 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 1);
	assert_int_equal(sched_block(s, 9, true), -EINVAL);
	sched_free(s);
}

static void test_partitions(void **state)
{
	struct sched *s = mk(4, 1, 2);
	struct sched_launch l = { .id = 7, .queue = 2, .partition = 1, .blocks = 1, .capacity = 4, .deadline_ns = 5 };

	sub(s, 1, 0, 0, 2, 10 * US);
	sub(s, 2, 1, 0, 2, 10 * US);
	assert_int_equal(sched_submit(s, &l), 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 2); /* one per partition */
	assert_int_equal(out[0].partition, 0);
	assert_int_equal(out[1].partition, 1);
	assert_int_equal(out[1].ids[0], 7);
	l.partition = 2;
	assert_int_equal(sched_submit(s, &l), -EINVAL);
	sched_free(s);
}

/* Moving a queue to another partition keeps its order: the next launch waits for the one in flight. */
static void test_move_queue(void **state)
{
	struct sched *s = mk(4, 2, 2);
	uint64_t tok;

	sub(s, 1, 0, 0, 2, 10 * US);
	sub(s, 2, 0, 0, 2, 20 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 1);
	tok = out[0].token;
	assert_int_equal(sched_move_queue(s, 0, 1), 0);
	/* partition 1 is idle, but launch 2 must not overtake launch 1 */
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 0);
	assert_int_equal(sched_complete(s, tok, 5 * US), 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 2);
	assert_int_equal(out[0].partition, 1);
	assert_int_equal(sched_move_queue(s, 0, 2), -EINVAL);
	/* moving an idle queue takes effect at once */
	assert_int_equal(sched_complete(s, out[0].token, 5 * US), 0);
	assert_int_equal(sched_move_queue(s, 0, 0), 0);
	sub(s, 3, 0, 0, 2, 30 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].partition, 0);
	sched_free(s);
}

/* A launch larger than the capacity goes alone; classes never mix in a bundle. */
static void test_oversize_and_classes(void **state)
{
	struct sched *s = mk(4, 4, 1);

	assert_int_equal(sched_class_ready(s, K, true), 0);
	assert_int_equal(sched_class_ready(s, K + 1, true), 0);
	sub(s, 1, 0, K, 20, 10 * US);
	sub(s, 2, 1, K + 1, 2, 20 * US);
	sub(s, 3, 2, K, 2, 30 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 3);
	assert_int_equal(out[0].n, 1);
	assert_int_equal(out[0].ids[0], 1);
	assert_int_equal(out[1].ids[0], 2);
	assert_int_equal(out[2].ids[0], 3);
	sched_free(s);
}

/*
 * A long run: one best-effort queue (far deadlines) beside three busy
 * latency-critical queues. Deadlines are submit time + SLO, so the
 * best-effort launch's deadline is eventually the earliest: it must not
 * starve, and the critical queues keep their order.
 */
static void test_no_starvation(void **state)
{
	struct sched *s = mk(4, 1, 1);
	uint64_t now = 0, last[4] = { 0 }, id = 1, be_done = 0, be_submit = 0, be_wait_max = 0;
	uint32_t inq[4] = { 0 };

	for (int step = 0; step < 20000; step++) {
		for (uint32_t q = 0; q < 4; q++)
			if (inq[q] < (q == 3 ? 1u : 4u)) {
				sub(s, (id++ << 2) | q, q, 0, 2, now + (q == 3 ? 5000 * US : 100 * US));
				if (q == 3)
					be_submit = now;
				inq[q]++;
			}
		if (sched_poll(s, now, out, 16, NULL) == 1) {
			uint32_t q = (uint32_t)(out[0].ids[0] & 3);

			assert_true(out[0].ids[0] > last[q]);
			last[q] = out[0].ids[0];
			inq[q]--;
			if (q == 3) {
				be_done++;
				if (now - be_submit > be_wait_max)
					be_wait_max = now - be_submit;
			}
			now += 10 * US;
			assert_int_equal(sched_complete(s, out[0].token, 10 * US), 0);
		}
	}
	/* the best-effort launch goes by about its deadline, every time */
	assert_true(be_done >= 20000 / 502);
	print_message("best-effort: %llu dispatched, longest wait %llu us\n", (unsigned long long)be_done,
		      (unsigned long long)(be_wait_max / US));
	/* at its deadline at most the 12 critical launches queued with earlier deadlines are ahead of it */
	assert_true(be_wait_max <= 5000 * US + 13 * 10 * US);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),		  cmocka_unit_test(test_queue_order),
		cmocka_unit_test(test_edf),		  cmocka_unit_test(test_capacity_and_slack),
		cmocka_unit_test(test_work_conserving),   cmocka_unit_test(test_compile_fallback),
		cmocka_unit_test(test_cost_model),	  cmocka_unit_test(test_blocked_queue),
		cmocka_unit_test(test_partitions),	  cmocka_unit_test(test_oversize_and_classes),
		cmocka_unit_test(test_no_starvation),	  cmocka_unit_test(test_move_queue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
