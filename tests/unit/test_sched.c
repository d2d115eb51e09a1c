/* SPDX-License-Identifier: MIT */
/* Unit tests of the scheduler core (daemon/sched) with a virtual clock. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <linux/types.h>

#include "../../bpf/telemetry.h"
#include "../../daemon/sched/fairq.h"
#include "../../daemon/sched/sched.h"

#define US 1000ull
#define K 0x1234u /* a fusion class */

static struct sched_cfg cfg_of(uint32_t queues, uint32_t inflight, uint32_t partitions)
{
	struct sched_cfg c = { .max_queues = queues,
			       .max_items = 4096,
			       .partitions = partitions,
			       .max_inflight = inflight,
			       .slack_margin_ns = 20 * US,
			       .default_cost_ns = 10 * US,
			       .ewma_shift = 2,
			       .idle_margin_ns = 0 };

	return c;
}

static struct sched *mk_cfg(const struct sched_cfg *c)
{
	struct sched *s = NULL;

	assert_int_equal(sched_new(c, &s), 0);
	return s;
}

static struct sched *mk(uint32_t queues, uint32_t inflight, uint32_t partitions)
{
	struct sched_cfg c = cfg_of(queues, inflight, partitions);

	return mk_cfg(&c);
}

static void sub_full(struct sched *s, uint64_t id, uint32_t q, uint32_t part, uint64_t klass, uint32_t blocks,
		     uint64_t cost_key, uint64_t deadline)
{
	struct sched_launch l = { .id = id,
				  .queue = q,
				  .partition = part,
				  .klass = klass,
				  .blocks = blocks,
				  .capacity = 8,
				  .cost_key = cost_key,
				  .deadline_ns = deadline };

	assert_int_equal(sched_submit(s, &l), 0);
}

static void sub(struct sched *s, uint64_t id, uint32_t q, uint64_t klass, uint32_t blocks, uint64_t deadline)
{
	sub_full(s, id, q, 0, klass, blocks, klass ? klass : 99, deadline);
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
	assert_int_equal(sched_complete(s, 77, 1, 0), -ENOENT);
	assert_int_equal(sched_pending(s), 4);
	sched_free(s);
	sched_free(NULL);
}

/*
 * The urgent reserve: with max_inflight bundles of ordinary launches in
 * flight, only urgent launches lead more, up to max_inflight +
 * reserve_inflight in all, in deadline order among themselves; urgent
 * bundles do not count in the ordinary launches' max_inflight, but every
 * bundle takes one of the partition's slots. A bad reserve is refused.
 */
/* Launches of queues q0 .. q0 + 2 (ids id0 + q), deadlines deadline + q * step, urgent or not. */
static void sub_three(struct sched *s, bool urgent, uint32_t q0, uint64_t id0, uint64_t deadline, uint64_t step)
{
	for (uint32_t q = q0; q < q0 + 3; q++) {
		struct sched_launch l = { .id = id0 + q,
					  .queue = q,
					  .blocks = 1,
					  .capacity = 1,
					  .cost_key = 99,
					  .deadline_ns = deadline + q * step,
					  .urgent = urgent };

		assert_int_equal(sched_submit(s, &l), 0);
	}
}

static void test_urgent_reserve(void **state)
{
	struct sched_cfg c = cfg_of(8, 2, 1);
	struct sched_launch l = { .blocks = 1, .capacity = 1, .cost_key = 99 };
	struct sched *s;

	(void)state;
	c.reserve_inflight = 63;
	assert_int_equal(sched_new(&c, &s), -EINVAL); /* 2 + 63 > 64 */
	c.reserve_inflight = 2;
	s = mk_cfg(&c);
	/* best effort fills the two ordinary slots, and one more waits */
	sub_three(s, false, 0, 10, 1000 * US, 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 2);
	assert_int_equal(sched_poll(s, 1 * US, out, 16, NULL), 0);
	/* urgent launches of three queues, later deadlines than the waiting one: two go (the reserve), one waits */
	sub_three(s, true, 3, 20, 2000 * US, 1);
	assert_int_equal(sched_poll(s, 2 * US, out, 16, NULL), 2);
	assert_int_equal(out[0].ids[0], 23);
	assert_int_equal(out[1].ids[0], 24);
	assert_int_equal(sched_poll(s, 3 * US, out, 16, NULL), 0); /* 4 in flight: every slot */
	sched_free(s);

	/* the same, with completions: which slot a freed one is depends on the count in flight */
	s = mk_cfg(&c);
	sub_three(s, false, 0, 10, 1000 * US, 0);
	struct sched_bundle be[2];
	assert_int_equal(sched_poll(s, 0, be, 2, NULL), 2);
	sub_three(s, true, 3, 20, 2000 * US, 1);
	struct sched_bundle ur[2];
	assert_int_equal(sched_poll(s, 2 * US, ur, 2, NULL), 2);
	assert_int_equal(sched_complete(s, ur[0].token, 5 * US, 7 * US), 0);
	/* 3 in flight (2 ordinary + 1 urgent): id 12 (ordinary, earlier deadline) may not take the reserve */
	assert_int_equal(sched_poll(s, 8 * US, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 25);
	struct sched_bundle u2 = out[0];
	assert_int_equal(sched_complete(s, be[0].token, 10 * US, 9 * US), 0);
	/* 1 ordinary + 2 urgent in flight: id 12 takes the free ordinary slot */
	assert_int_equal(sched_poll(s, 10 * US, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 12);
	/* every slot taken (2 ordinary, 2 urgent): an urgent launch waits too */
	l.urgent = true;
	l.id = 30;
	l.queue = 7;
	l.deadline_ns = 5 * US;
	assert_int_equal(sched_submit(s, &l), 0);
	assert_int_equal(sched_poll(s, 11 * US, out, 16, NULL), 0);
	assert_int_equal(sched_complete(s, u2.token, 10 * US, 12 * US), 0);
	assert_int_equal(sched_poll(s, 13 * US, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 30);
	/* an ordinary one does not take a slot freed by an urgent bundle while 2 ordinary ones run */
	l.urgent = false;
	l.id = 31;
	l.queue = 6;
	assert_int_equal(sched_submit(s, &l), 0);
	assert_int_equal(sched_complete(s, ur[1].token, 10 * US, 14 * US), 0);
	assert_int_equal(sched_poll(s, 15 * US, out, 16, NULL), 0);
	assert_int_equal(sched_complete(s, be[1].token, 10 * US, 16 * US), 0);
	assert_int_equal(sched_poll(s, 17 * US, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 31);
	sched_free(s);
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
	assert_int_equal(sched_complete(s, out[0].token, 5 * US, 0), 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 3);
	sched_free(s);
}

/*
 * share_window_ns: a launch of a class that only its own queue launches is
 * not held for company (it goes at once, counted alone, even while the
 * partition is busy and it has slack); once two queues launched the class
 * within the window, a lone launch of it is held as before, and goes alone
 * again when the window since the last sign of sharing has passed (the wake
 * time says when). Without the window (0), the same launch is held.
 */
static void test_share_window(void **state)
{
	struct sched_cfg c = cfg_of(16, 8, 2);
	struct sched_stats st;
	struct sched *s;
	uint64_t wake = 0, far = 1000000 * US;

	c.default_cost_ns = 100 * US;
	c.share_window_ns = 50 * US;
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	/* queue 9's unfusible launch keeps the partition busy until 100 us */
	sub(s, 1, 9, 0, 1, far);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	/* queue 0 alone uses K: each of its launches goes at once */
	sub(s, 10, 0, K, 1, far);
	assert_int_equal(sched_poll(s, 1 * US, out, 16, &wake), 1);
	assert_int_equal(out[0].n, 1);
	assert_false(out[0].fused);
	assert_int_equal(out[0].ids[0], 10);
	sub(s, 11, 0, K, 1, far);
	assert_int_equal(sched_poll(s, 2 * US, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 11);
	sched_get_stats(s, &st);
	assert_int_equal(st.dispatch_alone, 3);
	assert_int_equal(st.dispatch_idle + st.dispatch_slack + st.dispatch_full, 0);
	/*
	 * queue 1 launches K: queue 0 did 1 us ago, so company may come: held
	 * while the partition is busy, until the window since queue 0's launch
	 * (not its own) has passed
	 */
	sub(s, 20, 1, K, 1, far);
	assert_int_equal(sched_poll(s, 3 * US, out, 16, &wake), 0);
	assert_int_equal(wake, 2 * US + 50 * US + 1);
	/* company comes: one bundle of two, held while the partition is predicted busy (idle margin 0) */
	sub(s, 12, 0, K, 1, far);
	assert_int_equal(sched_poll(s, 4 * US, out, 16, &wake), 0);
	/* the partition's predicted end: the pair goes, fused */
	assert_int_equal(sched_poll(s, wake, out, 16, NULL), 1);
	assert_int_equal(out[0].n, 2);
	assert_true(out[0].fused);
	{
		uint64_t t = wake;

		/* a bundle of several queues counts as another queue for everyone */
		sub(s, 13, 0, K, 1, far);
		assert_int_equal(sched_poll(s, t + 1 * US, out, 16, &wake), 0);
		assert_true(wake <= t + 50 * US + 1);
		/* nobody else launches: past the window, queue 0's launch goes alone, busy partition or not */
		assert_int_equal(sched_poll(s, t + 50 * US + 1, out, 16, NULL), 1);
		assert_int_equal(out[0].ids[0], 13);
		/* queue 0's own launches never make the class shared for queue 0 */
		sub(s, 14, 0, K, 1, far);
		assert_int_equal(sched_poll(s, t + 50 * US + 2, out, 16, NULL), 1);
		assert_int_equal(out[0].ids[0], 14);

		/*
		 * Partition 1 (busy with queue 8's unfusible launch): queue 5's K
		 * finds no company there, whatever partition 0 does (bundles pack
		 * one partition's launches), so it goes at once; queue 6's K on
		 * partition 1 then waits for company (queue 5 launched it there).
		 */
		t += 60 * US;
		sub_full(s, 2, 8, 1, 0, 1, 99, far);
		assert_int_equal(sched_poll(s, t, out, 16, NULL), 1);
		sub(s, 15, 1, K, 1, far); /* partition 0: held, queue 0 launched K there 8 us ago */
		sub_full(s, 50, 5, 1, K, 1, K, far);
		assert_int_equal(sched_poll(s, t + 1 * US, out, 16, NULL), 1);
		assert_int_equal(out[0].partition, 1);
		assert_int_equal(out[0].ids[0], 50);
		sub_full(s, 60, 6, 1, K, 1, K, far);
		assert_int_equal(sched_poll(s, t + 2 * US, out, 16, &wake), 0);
		assert_true(wake <= t + 1 * US + 50 * US + 1);
	}
	sched_free(s);

	/* the same start without the window: queue 0's launch is held while the partition is busy */
	c.share_window_ns = 0;
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	sub(s, 1, 9, 0, 1, far);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	sub(s, 10, 0, K, 1, far);
	assert_int_equal(sched_poll(s, 1 * US, out, 16, NULL), 0);
	sched_free(s);
	(void)state;
}

/*
 * Bundles pack one class in deadline order up to the capacity; a partial
 * bundle is held while the partition is predicted busy, and goes when the
 * partition is predicted idle, before the bundle in flight has completed.
 */
static void test_capacity_and_slack(void **state)
{
	struct sched_cfg c = cfg_of(16, 2, 1);
	struct sched *s;
	uint64_t wake = 0;

	c.default_cost_ns = 100 * US;
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	for (uint32_t q = 0; q < 10; q++)
		sub(s, 100 + q, q, K, 2, (1000 + 10 * (10 - q)) * US); /* later queues: earlier deadlines */
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 2);
	assert_int_equal(wake, UINT64_MAX); /* nothing held: the partition is full */
	assert_int_equal(out[0].n, 4); /* 4 x 2 blocks = capacity 8 */
	assert_true(out[0].fused);
	assert_int_equal(out[0].ids[0], 109);
	assert_int_equal(out[0].ids[3], 106);
	assert_int_equal(out[1].n, 4);
	assert_int_equal(out[1].ids[0], 105);
	/* predicted busy until 2 x 100 us; the first completes at 100 us */
	assert_int_equal(sched_complete(s, out[0].token, 100 * US, 100 * US), 0);
	assert_int_equal(sched_predict(s, K), 100 * US);
	/* two left, the partition is busy until 200 us, plenty of slack: held */
	assert_int_equal(sched_poll(s, 150 * US, out, 16, &wake), 0);
	assert_int_equal(wake, 200 * US); /* min(1090 - 100 - 20 us, busy until 200 us) */
	assert_int_equal(sched_poll(s, 199 * US, out, 16, NULL), 0);
	/* at the predicted end of the work in flight: dispatched, partly full, while one is in flight */
	assert_int_equal(sched_poll(s, wake, out, 16, NULL), 1);
	assert_int_equal(out[0].n, 2);
	assert_int_equal(out[0].ids[0], 101);
	assert_int_equal(out[0].ids[1], 100);
	{
		struct sched_stats st;

		sched_get_stats(s, &st);
		assert_int_equal(st.dispatch_full, 2);
		assert_int_equal(st.dispatch_idle, 1);
		assert_int_equal(st.dispatch_slack, 0);
		assert_int_equal(st.fused_launches, 10);
		assert_int_equal(st.max_members, 4);
		assert_int_equal(st.part_bundles[0], 3);
		assert_int_equal(st.part_bundles[1], 0);
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
	uint64_t tok[4];

	for (uint32_t q = 0; q < 4; q++)
		sub(s, q, q, K, 2, 1000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 4);
	for (int i = 0; i < 4; i++) {
		assert_false(out[i].fused);
		tok[i] = out[i].token;
	}
	assert_int_equal(sched_class_ready(s, K, true), 0);
	for (uint32_t q = 0; q < 3; q++)
		sub(s, 10 + q, q, K, 2, 1000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 0); /* 4 in flight, 6 of 8 blocks, slack left: held */
	assert_int_equal(sched_complete(s, tok[0] ^ 1u << 16, 10 * US, 0), -ENOENT); /* not a token it gave */
	for (int i = 0; i < 4; i++)
		assert_int_equal(sched_complete(s, tok[i], 10 * US, 0), 0);
	assert_int_equal(sched_complete(s, tok[0], 10 * US, 0), -ENOENT); /* completed already */
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
	uint64_t p0 = sched_predict(s, K), wake = 0;
	struct sched_stats st;

	assert_int_equal(p0, 10 * US);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	for (int i = 0; i < 40; i++) {
		sub(s, (uint64_t)i, 0, K, 2, 100000 * US);
		assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
		assert_int_equal(sched_complete(s, out[0].token, 200 * US, 0), 0);
	}
	assert_int_equal(sched_predict(s, K), 200 * US);
	/* an untimed bundle (elapsed 0) frees its slot and teaches nothing */
	for (int i = 0; i < 8; i++) {
		sub(s, (uint64_t)(100 + i), 3, K, 2, 100000 * US);
		assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
		assert_int_equal(sched_complete(s, out[0].token, 0, 0), 0);
	}
	assert_int_equal(sched_predict(s, K), 200 * US);
	/* busy until 200 us; one member: held while now + 200 us + margin < deadline */
	sub(s, 900, 1, K, 2, 100000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	sub(s, 901, 2, K, 2, 300 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 0);
	assert_int_equal(wake, 80 * US); /* the slack runs out before the partition idles */
	assert_int_equal(sched_poll(s, 79 * US, out, 16, NULL), 0);
	assert_int_equal(sched_poll(s, 80 * US, out, 16, NULL), 1); /* 80 + 200 + 20 = 300 */
	assert_int_equal(out[0].ids[0], 901);
	sched_get_stats(s, &st);
	assert_int_equal(st.dispatch_slack, 1);
	assert_int_equal(st.dispatch_idle, 49);
	assert_int_equal(st.deadline_misses, 0);
	sched_free(s);
}

/* One bundle of n launches of klass on queues 0..n-1 (the window empty, nothing in flight): returns it. */
static struct sched_bundle *bundle_of(struct sched *s, uint64_t klass, uint32_t n, uint64_t *id)
{
	for (uint32_t q = 0; q < n; q++)
		sub(s, (*id)++, q, klass, 2, 100000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].n, n);
	return &out[0];
}

/*
 * Fusing that does not pay: once a fused bundle was timed slower than its
 * members one after another (launches alone timed too), bundles of the
 * class go unfused, one in SCHED_NOPAY_PROBE fused to measure it again;
 * a class whose fused kernel is faster stays fused, and so does one whose
 * time alone is unknown.
 */
static void test_fusing_pays(void **state)
{
	const uint64_t slow = K, fast = K + 1, unknown = K + 2;
	struct sched *s = mk(8, 8, 1);
	struct sched_bundle *b;
	struct sched_stats st;
	uint64_t id = 1;
	uint32_t fused = 0;

	for (uint64_t k = slow; k <= unknown; k++)
		assert_int_equal(sched_class_ready(s, k, true), 0);
	/* slow: 10 us alone, 100 us for a fused bundle of 4 (40 us one after another) */
	for (int i = 0; i < 4; i++) {
		b = bundle_of(s, slow, 1, &id);
		assert_false(b->fused);
		assert_int_equal(sched_complete(s, b->token, 10 * US, 0), 0);
	}
	b = bundle_of(s, slow, 4, &id);
	assert_true(b->fused); /* nothing known of its fused time yet */
	assert_int_equal(sched_complete(s, b->token, 100 * US, 0), 0);
	b = bundle_of(s, slow, 4, &id);
	assert_false(b->fused);
	assert_int_equal(b->predicted_ns, 40 * US); /* 4 x 10 us, one after another */
	assert_int_equal(sched_complete(s, b->token, 40 * US, 0), 0); /* each member learns 10 us alone */
	assert_int_equal(sched_predict(s, slow) > 9 * US && sched_predict(s, slow) < 100 * US, 1);
	for (uint32_t i = 1; i < SCHED_NOPAY_PROBE; i++) {
		b = bundle_of(s, slow, 4, &id);
		fused += b->fused;
		/* the probe is as slow as before: it stays unfused */
		assert_int_equal(sched_complete(s, b->token, b->fused ? 100 * US : 40 * US, 0), 0);
	}
	assert_int_equal(fused, 1); /* the probe */
	sched_get_stats(s, &st);
	assert_int_equal(st.dispatch_nopay, SCHED_NOPAY_PROBE - 1);
	/* a bundle of 2: the 4-member time scaled down (50 us) is still above 2 x 10 us */
	b = bundle_of(s, slow, 2, &id);
	assert_false(b->fused);
	assert_int_equal(sched_complete(s, b->token, 20 * US, 0), 0);

	/* fast: 10 us alone, 12 us fused for 4: stays fused, at 2 members (6 us <= 20) and at 4 */
	for (int i = 0; i < 4; i++) {
		b = bundle_of(s, fast, 1, &id);
		assert_int_equal(sched_complete(s, b->token, 10 * US, 0), 0);
	}
	for (int i = 0; i < 8; i++) {
		b = bundle_of(s, fast, i % 2 ? 2 : 4, &id);
		assert_true(b->fused);
		assert_int_equal(sched_complete(s, b->token, 12 * US, 0), 0);
	}
	/* unknown: never timed alone, only fused (slowly): fused */
	for (int i = 0; i < 4; i++) {
		b = bundle_of(s, unknown, 4, &id);
		assert_true(b->fused);
		assert_int_equal(sched_complete(s, b->token, 500 * US, 0), 0);
	}
	sched_get_stats(s, &st);
	assert_int_equal(st.dispatch_nopay, SCHED_NOPAY_PROBE);
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
	assert_int_equal(sched_complete(s, tok, 5 * US, 0), 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 2);
	assert_int_equal(out[0].partition, 1);
	assert_int_equal(sched_move_queue(s, 0, 2), -EINVAL);
	/* moving an idle queue takes effect at once */
	assert_int_equal(sched_complete(s, out[0].token, 5 * US, 0), 0);
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
			assert_int_equal(sched_complete(s, out[0].token, 10 * US, now), 0);
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

/* A partial bundle goes once now >= busy_until - idle_margin, before the bundle in flight completes. */
static void test_pipelining(void **state)
{
	struct sched_cfg c = cfg_of(8, 2, 1);
	struct sched *s;
	struct sched_stats st;
	uint64_t wake = 0, tok1, tok2;

	c.idle_margin_ns = 5 * US;
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	sub(s, 1, 0, K, 2, 100000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 1); /* idle: goes; busy until 10 us */
	assert_int_equal(wake, UINT64_MAX);
	tok1 = out[0].token;
	assert_int_equal(out[0].predicted_ns, 10 * US);
	sub(s, 2, 1, K, 2, 100000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 0); /* busy, slack: held */
	assert_int_equal(wake, 5 * US);                         /* busy_until - idle_margin */
	assert_int_equal(sched_poll(s, 4 * US, out, 16, NULL), 0);
	assert_int_equal(sched_poll(s, 5 * US, out, 16, &wake), 1); /* 1 still in flight: pipelined */
	assert_int_equal(out[0].ids[0], 2);
	assert_int_equal(wake, UINT64_MAX);
	tok2 = out[0].token; /* busy until 20 us */
	/* both slots taken: nothing held, nothing to wake for (the completion is the caller's event) */
	sub(s, 3, 2, K, 2, 100000 * US);
	assert_int_equal(sched_poll(s, 6 * US, out, 16, &wake), 0);
	assert_int_equal(wake, UINT64_MAX);
	/* one completes: busy_until stays (one still in flight) */
	assert_int_equal(sched_complete(s, tok1, 10 * US, 12 * US), 0);
	assert_int_equal(sched_poll(s, 12 * US, out, 16, &wake), 0);
	assert_int_equal(wake, 15 * US);
	/* the last completes early: busy_until = its completion time, the partition is idle */
	assert_int_equal(sched_complete(s, tok2, 10 * US, 13 * US), 0);
	assert_int_equal(sched_poll(s, 13 * US, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 3);
	sub(s, 4, 3, K, 2, 100000 * US);
	assert_int_equal(sched_poll(s, 14 * US, out, 16, &wake), 0);
	assert_int_equal(wake, 18 * US); /* 13 + 10 - 5, not max(20, 13) + 10 - 5 */
	/* a full bundle goes at once, busy or not */
	for (uint32_t q = 4; q < 7; q++)
		sub(s, 5 + q, q, K, 2, 100000 * US);
	assert_int_equal(sched_poll(s, 14 * US, out, 16, &wake), 1);
	assert_int_equal(out[0].n, 4);
	assert_true(out[0].fused);
	sched_get_stats(s, &st);
	assert_int_equal(st.dispatch_idle, 3);
	assert_int_equal(st.dispatch_full, 1);
	assert_int_equal(st.dispatch_slack, 0);
	sched_free(s);
}

/* A held class does not stop the partition: the other classes behind it in deadline order still go. */
static void test_held_class_not_blocking(void **state)
{
	struct sched *s = mk(16, 8, 1);
	struct sched_stats st;
	uint64_t wake = 0;

	assert_int_equal(sched_class_ready(s, K, true), 0);
	assert_int_equal(sched_class_ready(s, K + 1, true), 0);
	assert_int_equal(sched_class_ready(s, K + 2, true), 0);
	/* teach cost key 77: 600 us */
	sub_full(s, 1, 7, 0, 0, 2, 77, 100000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(sched_complete(s, out[0].token, 600 * US, 0), 0);
	assert_int_equal(sched_predict(s, 77), 600 * US);
	sub(s, 2, 0, 0, 2, 10000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1); /* busy until 10 us */
	sub(s, 10, 1, K, 2, 500 * US);              /* earliest; partial, slack left: held */
	sub_full(s, 30, 4, 0, K + 2, 2, 77, 550 * US); /* partial, 1 + 600 + 20 > 550: out of slack */
	sub(s, 20, 2, K + 1, 4, 600 * US);          /* with 21: full */
	sub(s, 21, 3, K + 1, 4, 700 * US);
	sub(s, 40, 5, 0, 2, 800 * US);              /* not fusible: alone */
	sub(s, 11, 6, K, 2, 900 * US);              /* joins the held bundle of K */
	assert_int_equal(sched_poll(s, 1 * US, out, 16, &wake), 3);
	assert_int_equal(out[0].n, 1);
	assert_int_equal(out[0].ids[0], 30);
	assert_int_equal(out[1].n, 2);
	assert_true(out[1].fused);
	assert_int_equal(out[1].ids[0], 20);
	assert_int_equal(out[1].ids[1], 21);
	assert_int_equal(out[2].n, 1);
	assert_int_equal(out[2].ids[0], 40);
	assert_int_equal(sched_queue_waiting(s, 1), 1);
	assert_int_equal(sched_queue_waiting(s, 6), 1);
	/* wake: the slack of K's bundle (500 - 10 - 20 us) comes before the partition idles (630 us) */
	assert_int_equal(wake, 470 * US);
	assert_int_equal(sched_poll(s, 469 * US, out, 16, NULL), 0);
	assert_int_equal(sched_poll(s, 470 * US, out, 16, NULL), 1);
	assert_int_equal(out[0].n, 2);
	assert_int_equal(out[0].ids[0], 10);
	assert_int_equal(out[0].ids[1], 11);
	sched_get_stats(s, &st);
	assert_int_equal(st.dispatch_slack, 2);
	assert_int_equal(st.dispatch_full, 1);
	assert_int_equal(st.dispatch_alone, 3);
	sched_free(s);
}

/* The in-flight slots still bound what passes a held class. */
static void test_held_class_slots(void **state)
{
	struct sched *s = mk(16, 2, 1);

	assert_int_equal(sched_class_ready(s, K, true), 0);
	sub(s, 1, 0, 0, 2, 10000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	sub(s, 10, 1, K, 2, 500 * US); /* held */
	sub(s, 20, 2, 0, 2, 600 * US);
	sub(s, 30, 3, 0, 2, 700 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1); /* one slot left */
	assert_int_equal(out[0].ids[0], 20);
	assert_int_equal(sched_pending(s), 2);
	sched_free(s);
}

static void test_drop_queue(void **state)
{
	struct sched *s = mk(8, 2, 2);
	uint64_t ids[8], tok;

	sub(s, 1, 0, 0, 2, 100 * US);
	sub(s, 2, 0, 0, 2, 200 * US);
	sub(s, 3, 0, 0, 2, 300 * US);
	sub(s, 4, 1, 0, 2, 50 * US);
	assert_int_equal(sched_queue_waiting(s, 0), 3);
	assert_int_equal(sched_queue_waiting(s, 1), 1);
	assert_int_equal(sched_queue_waiting(s, 99), 0);
	assert_int_equal(sched_drop_queue(s, 0, ids, 2), -ENOSPC); /* removes nothing */
	assert_int_equal(sched_queue_waiting(s, 0), 3);
	assert_int_equal(sched_pending(s), 4);
	assert_int_equal(sched_drop_queue(s, 0, ids, 8), 3);
	assert_int_equal(ids[0], 1);
	assert_int_equal(ids[1], 2);
	assert_int_equal(ids[2], 3);
	assert_int_equal(sched_queue_waiting(s, 0), 0);
	assert_int_equal(sched_pending(s), 1);
	assert_int_equal(sched_drop_queue(s, 0, NULL, 0), 0);
	assert_int_equal(sched_drop_queue(s, 8, ids, 8), -EINVAL);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].n, 1);
	assert_int_equal(out[0].ids[0], 4);
	assert_int_equal(sched_complete(s, out[0].token, 5 * US, 0), 0);
	/* the queue id is used again */
	sub(s, 5, 0, 0, 2, 10 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 5);
	assert_int_equal(sched_complete(s, out[0].token, 5 * US, 0), 0);
	/* a blocked queue: dropped, and unblocked */
	sub(s, 6, 2, 0, 2, 10 * US);
	sub(s, 7, 2, 0, 2, 10 * US);
	assert_int_equal(sched_block(s, 2, true), 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 0);
	assert_int_equal(sched_drop_queue(s, 2, ids, 1), -ENOSPC);
	assert_int_equal(sched_drop_queue(s, 2, ids, 2), 2);
	assert_int_equal(ids[0], 6);
	assert_int_equal(ids[1], 7);
	sub(s, 8, 2, 0, 2, 10 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 8);
	assert_int_equal(sched_complete(s, out[0].token, 5 * US, 0), 0);
	/* launches in flight are not affected */
	sub(s, 9, 3, 0, 2, 10 * US);
	sub(s, 10, 3, 0, 2, 10 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 9);
	tok = out[0].token;
	assert_int_equal(sched_drop_queue(s, 3, ids, 8), 1);
	assert_int_equal(ids[0], 10);
	assert_int_equal(sched_pending(s), 0);
	assert_int_equal(sched_complete(s, tok, 5 * US, 0), 0);
	assert_int_equal(sched_complete(s, tok, 5 * US, 0), -ENOENT);
	/* dropped while moved: the queue's next launch still waits for the one in flight on the old partition */
	sub_full(s, 11, 4, 0, 0, 2, 99, 10 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	tok = out[0].token;
	sub_full(s, 12, 4, 1, 0, 2, 99, 10 * US); /* moves the queue to partition 1 */
	assert_int_equal(sched_drop_queue(s, 4, ids, 8), 1);
	assert_int_equal(ids[0], 12);
	sub_full(s, 13, 4, 1, 0, 2, 99, 10 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 0); /* partition 1 is idle, but 11 is in flight */
	assert_int_equal(sched_complete(s, tok, 5 * US, 0), 0);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 13);
	assert_int_equal(out[0].partition, 1);
	assert_int_equal(sched_complete(s, out[0].token, 5 * US, 0), 0);
	sched_free(s);
}

/* Dropping queues in any position of the active list leaves the others in the window. */
static void test_drop_active_list(void **state)
{
	struct sched *s = mk(64, 16, 1);
	uint64_t ids[4];

	for (uint32_t q = 0; q < 8; q++)
		sub(s, 100 + q, q * 9, 0, 2, (1000 - q) * US);
	assert_int_equal(sched_drop_queue(s, 0, ids, 4), 1);  /* first added */
	assert_int_equal(sched_drop_queue(s, 63, ids, 4), 1); /* last added */
	assert_int_equal(sched_drop_queue(s, 27, ids, 4), 1); /* in the middle */
	assert_int_equal(ids[0], 103);
	assert_int_equal(sched_drop_queue(s, 27, ids, 4), 0);
	sub(s, 200, 27, 0, 2, 1 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 6);
	assert_int_equal(out[0].ids[0], 200);
	assert_int_equal(out[1].ids[0], 106);
	assert_int_equal(out[2].ids[0], 105);
	assert_int_equal(out[3].ids[0], 104);
	assert_int_equal(out[4].ids[0], 102);
	assert_int_equal(out[5].ids[0], 101);
	assert_int_equal(sched_pending(s), 0);
	sched_free(s);
}

/* A poll that dispatched nothing is not repeated until its wake time, unless something changed. */
static void test_quiet_poll(void **state)
{
	struct sched *s = mk(8, 4, 2);
	uint64_t wake = 0, ids[4];

	assert_int_equal(sched_class_ready(s, K, true), 0);
	sub(s, 1, 0, 0, 2, 10000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, NULL), 1); /* busy until 10 us */
	sub(s, 2, 1, K, 2, 10000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 0);
	assert_int_equal(wake, 10 * US);
	wake = 0;
	assert_int_equal(sched_poll(s, 1 * US, out, 16, &wake), 0);
	assert_int_equal(wake, 10 * US);
	/* the class is not compiled any more: its launch goes alone, at once */
	assert_int_equal(sched_class_ready(s, K, false), 0);
	assert_int_equal(sched_poll(s, 1 * US, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 2);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	/* held again; moved to the idle partition: goes */
	sub(s, 3, 2, K, 2, 10000 * US);
	assert_int_equal(sched_poll(s, 2 * US, out, 16, &wake), 0);
	assert_int_equal(sched_move_queue(s, 2, 1), 0);
	assert_int_equal(sched_poll(s, 2 * US, out, 16, NULL), 1);
	assert_int_equal(out[0].ids[0], 3);
	assert_int_equal(out[0].partition, 1);
	/* held on partition 1; dropped, nothing left to wake for */
	sub_full(s, 4, 3, 1, K, 2, K, 10000 * US);
	assert_int_equal(sched_poll(s, 2 * US, out, 16, &wake), 0);
	assert_true(wake != UINT64_MAX);
	assert_int_equal(sched_drop_queue(s, 3, ids, 4), 1);
	assert_int_equal(sched_poll(s, 2 * US, out, 16, &wake), 0);
	assert_int_equal(wake, UINT64_MAX);
	/* max 0: nothing written, poll again at once */
	sub(s, 5, 4, 0, 2, 10000 * US);
	assert_int_equal(sched_poll(s, 3 * US, out, 0, &wake), 0);
	assert_int_equal(wake, 3 * US);
	assert_int_equal(sched_poll(s, 3 * US, out, 16, NULL), 1);
	sched_free(s);
}

static struct sched_bundle big[256];

struct ref {
	uint64_t deadline;
	uint32_t queue;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	if (x->deadline != y->deadline)
		return x->deadline < y->deadline ? -1 : 1;
	return x->queue < y->queue ? -1 : x->queue > y->queue;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Thousands of candidates, many equal deadlines: dispatched in (deadline, queue) order, per partition. */
static void test_sort_many(void **state)
{
	enum { NQ = 8192, N = 6000 };
	struct sched_cfg c = cfg_of(NQ, 64, 2);
	struct sched *s;
	static struct ref want[2][N];
	static uint8_t used[NQ];
	uint32_t nw[2] = { 0 }, got[2] = { 0 };

	c.max_items = NQ;
	s = mk_cfg(&c);
	memset(used, 0, sizeof(used));
	for (uint32_t i = 0; i < N; i++) {
		uint32_t q, p;
		uint64_t d = (rnd() % 50) * US;

		do
			q = (uint32_t)(rnd() % NQ);
		while (used[q]);
		used[q] = 1;
		p = q & 1;
		sub_full(s, ((uint64_t)q << 32) | (uint32_t)d, q, p, 0, 1, 99, d);
		want[p][nw[p]].deadline = d;
		want[p][nw[p]++].queue = q;
	}
	qsort(want[0], nw[0], sizeof(want[0][0]), ref_cmp);
	qsort(want[1], nw[1], sizeof(want[1][0]), ref_cmp);
	while (sched_pending(s)) {
		size_t n = sched_poll(s, 0, big, 256, NULL);
		uint32_t l0 = nw[0] - got[0], l1 = nw[1] - got[1];

		assert_int_equal(n, (l0 < 64 ? l0 : 64) + (l1 < 64 ? l1 : 64));
		for (size_t b = 0; b < n; b++) {
			uint32_t p = big[b].partition, q = (uint32_t)(big[b].ids[0] >> 32);

			assert_int_equal(big[b].n, 1);
			assert_true(got[p] < nw[p]);
			assert_int_equal(q, want[p][got[p]].queue);
			assert_int_equal((uint32_t)big[b].ids[0], want[p][got[p]].deadline);
			got[p]++;
			assert_int_equal(sched_complete(s, big[b].token, 1 * US, 0), 0);
		}
	}
	assert_int_equal(got[0], nw[0]);
	assert_int_equal(got[1], nw[1]);
	sched_free(s);
}

/*
 * A randomized model run with 50000 queues configured and a few dozen in
 * use: submits (some moving the queue), blocks, moves, drops, class
 * changes, and a model device completing each partition's bundles in
 * order. Checked on every poll: a launch leaves only as its queue's head
 * (order), from an unblocked, unfenced queue on the bundle's partition, at
 * most once; bundles are one class within the capacity; in-flight bundles
 * never exceed max_inflight (max_inflight + reserve_inflight for bundles
 * that an urgent launch leads); an idle partition with a launch that may go
 * gets a bundle. At the end, draining by the wake times alone (no poll
 * between events) dispatches everything: each id is dispatched once or
 * dropped.
 */
#define MQ 50000u
#define POOL 64u
#define MAXID 40000u
#define NPART 3u
#define NINF 3u
#define NRES 2u             /* the urgent reserve (every fifth pool queue's launches are urgent) */
#define NCAP (NINF + NRES)
#define NLANES 3u           /* sched_cfg.streams and lanes */

struct mq {
	uint32_t id;        /* queue id */
	uint32_t partition;
	bool blocked, fenced;
	uint32_t inflight;
	uint32_t lane;      /* while inflight: of its last bundle */
	uint32_t fifo[4096];
	uint32_t head, n;
};

struct mflight {
	uint64_t token, start, end;
	uint32_t n, lane;
	uint32_t ids[SCHED_MAX_BUNDLE];
};

struct model {
	struct sched *s;
	struct mq q[POOL];
	uint32_t qidx_of_id[MAXID]; /* pool index of each launch's queue */
	uint8_t state[MAXID];       /* 0 unused, 1 waiting, 2 in flight, 3 done, 4 dropped */
	uint32_t blocks[MAXID];
	uint64_t klass[MAXID];
	uint64_t deadline[MAXID];
	uint64_t cost_key[MAXID];
	struct mflight dev[NPART][NCAP];
	bool urgent[MAXID];
	uint32_t reserve_used; /* bundles dispatched into the reserve */
	uint32_t lane_n[NPART][NLANES]; /* bundles in flight on each lane */
	uint32_t lanes_used;            /* bundles dispatched on a lane other than 0 */
	uint64_t issue_ns;              /* told to the scheduler (sched_set_issue_ns) */
	uint32_t spread_bundles;        /* dispatched where side by side paid */
	uint32_t bundles;
	uint32_t lanes;                 /* sched_cfg.streams and lanes of the run */
	uint32_t dhead[NPART], dn[NPART];
	uint64_t last_end[NPART];
	uint64_t busy_until[NPART]; /* the scheduler's prediction, as sched.h defines it */
	uint32_t nid, pending, dispatched, dropped, done;
	bool k3_ready;
};

static struct model M;

#define K1 0x1001u
#define K2 0x1002u
#define K3 0x1003u

static void m_complete_until(uint64_t now)
{
	for (uint32_t p = 0; p < NPART; p++)
		while (M.dn[p] && M.dev[p][M.dhead[p]].end <= now) {
			struct mflight *f = &M.dev[p][M.dhead[p]];

			assert_int_equal(sched_complete(M.s, f->token, f->end - f->start, now), 0);
			for (uint32_t k = 0; k < f->n; k++) {
				struct mq *q = &M.q[M.qidx_of_id[f->ids[k]]];

				assert_int_equal(M.state[f->ids[k]], 2);
				M.state[f->ids[k]] = 3;
				M.done++;
				if (--q->inflight == 0)
					q->fenced = false;
			}
			M.lane_n[p][f->lane]--;
			M.dhead[p] = (M.dhead[p] + 1) % NCAP;
			if (--M.dn[p] == 0)
				M.busy_until[p] = now;
		}
}

static uint64_t m_next_end(void)
{
	uint64_t t = UINT64_MAX;

	for (uint32_t p = 0; p < NPART; p++)
		if (M.dn[p] && M.dev[p][M.dhead[p]].end < t)
			t = M.dev[p][M.dhead[p]].end;
	return t;
}

static void m_move(struct mq *q, uint32_t p)
{
	if (q->partition == p)
		return;
	q->partition = p;
	q->fenced = q->inflight > 0;
}

static void m_submit(uint64_t now, uint32_t qi, uint32_t p)
{
	static const uint64_t classes[4] = { 0, K1, K2, K3 };
	struct mq *q = &M.q[qi];
	uint64_t k = classes[rnd() % 4];
	struct sched_launch l = { .id = M.nid,
				  .queue = q->id,
				  .partition = p,
				  .klass = k,
				  .blocks = 1 + (uint32_t)(rnd() % 4),
				  .capacity = 8,
				  .cost_key = k ? k : 5,
				  .deadline_ns = now + (rnd() % 200) * US,
				  .urgent = qi % 5 == 0 };
	int rc;

	if (M.nid >= MAXID)
		return;
	rc = sched_submit(M.s, &l);
	if (M.pending == 2048) {
		assert_int_equal(rc, -ENOSPC);
		return;
	}
	assert_int_equal(rc, 0);
	if (q->n == 0 && q->inflight == 0)
		q->partition = p;
	else
		m_move(q, p);
	M.qidx_of_id[M.nid] = qi;
	M.state[M.nid] = 1;
	M.blocks[M.nid] = l.blocks;
	M.klass[M.nid] = k;
	M.deadline[M.nid] = l.deadline_ns;
	M.cost_key[M.nid] = l.cost_key;
	M.urgent[M.nid] = l.urgent;
	q->fifo[(q->head + q->n++) % 4096] = M.nid;
	M.nid++;
	M.pending++;
}

static void m_drop(uint32_t qi)
{
	struct mq *q = &M.q[qi];
	uint64_t ids[4096];

	if (q->n > 0)
		assert_int_equal(sched_drop_queue(M.s, q->id, ids, q->n - 1), -ENOSPC);
	assert_int_equal(sched_drop_queue(M.s, q->id, ids, 4096), (int)q->n);
	for (uint32_t k = 0; k < q->n; k++) {
		uint32_t id = q->fifo[(q->head + k) % 4096];

		assert_int_equal(ids[k], id);
		assert_int_equal(M.state[id], 1);
		M.state[id] = 4;
		M.dropped++;
		M.pending--;
	}
	q->n = 0;
	q->blocked = false;
}

/* Bundles in flight on p that an ordinary (not urgent) launch led. */
static uint32_t m_ordinary(uint32_t p)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < M.dn[p]; i++)
		n += !M.urgent[M.dev[p][(M.dhead[p] + i) % NCAP].ids[0]];
	return n;
}

static bool m_ready(uint64_t k) { return k == K1 || k == K2 || (k == K3 && M.k3_ready); }

/* Poll at now and check the bundles against the model; returns how many. */
static size_t m_poll(uint64_t now, uint64_t *wake)
{
	bool want[NPART] = { false }, got[NPART] = { false }, moved[POOL] = { false };
	size_t n;

	for (uint32_t p = 0; p < NPART; p++)
		if (M.dn[p] == 0)
			for (uint32_t qi = 0; qi < POOL; qi++)
				if (M.q[qi].partition == p && M.q[qi].n && !M.q[qi].blocked && !M.q[qi].fenced)
					want[p] = true;
	n = sched_poll(M.s, now, big, 256, wake);
	assert_true(*wake > now || *wake == UINT64_MAX);
	for (size_t b = 0; b < n; b++) {
		struct sched_bundle *bu = &big[b];
		uint32_t p = bu->partition, sum = 0, least, most;
		bool spread;
		struct mflight *f;

		assert_true(p < NPART);
		assert_true(bu->n >= 1);
		assert_int_equal(bu->fused, bu->n > 1);
		/* never more than max_inflight + the reserve, and max_inflight of bundles ordinary launches lead */
		assert_true(bu->ids[0] < M.nid);
		assert_true(M.dn[p] < NCAP);
		assert_true(M.urgent[bu->ids[0]] || m_ordinary(p) < NINF);
		M.reserve_used += M.dn[p] >= NINF;
		f = &M.dev[p][(M.dhead[p] + M.dn[p]) % NCAP];
		M.dn[p]++;
		got[p] = true;
		f->token = bu->token;
		f->n = bu->n;
		/*
		 * Lanes: a queue with launches in flight stays on its lane. Where
		 * side by side pays, one with nothing in flight is in a bundle only
		 * on one of the emptiest lanes; where it does not, a leader with
		 * nothing in flight takes the busiest lane.
		 */
		assert_true(bu->lane < (M.lanes > 1 ? M.lanes : 1));
		least = UINT32_MAX;
		most = 0;
		for (uint32_t l = 0; l < NLANES; l++) {
			least = M.lane_n[p][l] < least ? M.lane_n[p][l] : least;
			most = M.lane_n[p][l] > most ? M.lane_n[p][l] : most;
		}
		spread = M.lanes > 1 && M.issue_ns &&
			 sched_predict(M.s, M.cost_key[bu->ids[0]]) / SCHED_LANE_RATIO >= M.issue_ns;
		M.bundles++;
		M.spread_bundles += spread;
		for (uint32_t k = 0; k < bu->n; k++) {
			const struct mq *q = &M.q[M.qidx_of_id[(uint32_t)bu->ids[k]]];

			if (q->inflight)
				assert_int_equal(bu->lane, q->lane);
			else if (spread)
				assert_true(M.lane_n[p][bu->lane] <= least);
			else if (k == 0)
				assert_int_equal(M.lane_n[p][bu->lane], most);
		}
		f->lane = bu->lane;
		M.lane_n[p][bu->lane]++;
		M.lanes_used += bu->lane != 0;
		f->start = M.last_end[p] > now ? M.last_end[p] : now;
		f->end = f->start + (5 + rnd() % 11) * US;
		M.last_end[p] = f->end;
		M.busy_until[p] = (M.busy_until[p] > now ? M.busy_until[p] : now) + bu->predicted_ns;
		for (uint32_t k = 0; k < bu->n; k++) {
			uint32_t id = (uint32_t)bu->ids[k];
			struct mq *q;

			assert_true(bu->ids[k] < M.nid);
			q = &M.q[M.qidx_of_id[id]];
			assert_int_equal(M.state[id], 1);
			assert_int_equal(q->fifo[q->head], id); /* its queue's head: order kept */
			assert_int_equal(q->partition, p);
			assert_false(q->blocked);
			assert_false(q->fenced);
			assert_false(moved[M.qidx_of_id[id]]); /* one launch of a queue per poll */
			moved[M.qidx_of_id[id]] = true;
			if (bu->n > 1) {
				assert_true(M.klass[id] == M.klass[bu->ids[0]]);
				assert_true(m_ready(M.klass[id]));
			}
			sum += M.blocks[id];
			q->head = (q->head + 1) % 4096;
			q->n--;
			q->inflight++;
			q->lane = bu->lane;
			M.state[id] = 2;
			f->ids[k] = id;
			M.pending--;
			M.dispatched++;
		}
		if (bu->n > 1)
			assert_true(sum <= 8);
	}
	for (uint32_t p = 0; p < NPART; p++)
		if (want[p])
			assert_true(got[p]); /* work-conserving */
	/*
	 * A head left waiting on a partition with a free slot must be held: a
	 * compiled class, the partition busy beyond the idle margin, and slack
	 * left (a held bundle's leader has no later deadline and no shorter
	 * prediction than any of its members).
	 */
	for (uint32_t qi = 0; qi < POOL; qi++) {
		const struct mq *q = &M.q[qi];
		uint32_t p = q->partition, id;

		if (!q->n || q->blocked || q->fenced || moved[qi])
			continue;
		id = q->fifo[q->head];
		if (M.dn[p] >= NCAP || (!M.urgent[id] && m_ordinary(p) >= NINF))
			continue;
		assert_true(m_ready(M.klass[id]));
		assert_true(M.dn[p] > 0);
		assert_true(M.busy_until[p] > now && M.busy_until[p] - now > 3 * US);
		assert_true(M.deadline[id] > now && M.deadline[id] - now > sched_predict(M.s, M.cost_key[id]) + 20 * US);
		assert_true(*wake <= M.deadline[id] - sched_predict(M.s, M.cost_key[id]) - 20 * US);
		assert_true(*wake <= M.busy_until[p] - 3 * US);
	}
	return n;
}

static void m_check(void)
{
	struct sched_stats st;
	uint64_t sum = 0;

	assert_int_equal(sched_pending(M.s), M.pending);
	for (uint32_t qi = 0; qi < POOL; qi++)
		assert_int_equal(sched_queue_waiting(M.s, M.q[qi].id), M.q[qi].n);
	sched_get_stats(M.s, &st);
	for (uint32_t p = 0; p < SCHED_MAX_PARTITIONS; p++)
		sum += st.part_bundles[p];
	assert_int_equal(sum, st.bundles);
	assert_int_equal(st.launches, M.dispatched);
}

/* lanes 0: one stream, no lanes (as before lanes existed); NLANES: that many streams and lanes */
static void model_run(uint32_t lanes)
{
	struct sched_cfg c = cfg_of(MQ, NINF, NPART);
	uint64_t now = 0, wake = 0;
	uint32_t steps = 0;

	memset(&M, 0, sizeof(M));
	M.lanes = lanes;
	c.max_items = 2048;
	c.idle_margin_ns = 3 * US;
	c.reserve_inflight = NRES;
	c.streams = lanes;
	c.lanes = lanes;
	M.s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(M.s, K1, true), 0);
	assert_int_equal(sched_class_ready(M.s, K2, true), 0);
	for (uint32_t i = 0; i < POOL; i++) {
		M.q[i].id = i == POOL - 1 ? MQ - 1 : i * 773; /* spread over 0 .. MQ - 1 */
		M.q[i].partition = 0;
	}
	for (uint32_t step = 0; step < 30000; step++) {
		uint32_t r = (uint32_t)(rnd() % 100), qi = (uint32_t)(rnd() % 12);

		/* a few busy queues, the others now and then */
		if (rnd() % 4 == 0)
			qi = (uint32_t)(rnd() % POOL);
		now += (rnd() % 4) * US;
		m_complete_until(now);
		if (r < 45) {
			uint32_t p = rnd() % 10 ? M.q[qi].partition : (uint32_t)(rnd() % NPART);

			m_submit(now, qi, p);
		} else if (r < 50) {
			M.q[qi].blocked = !M.q[qi].blocked;
			assert_int_equal(sched_block(M.s, M.q[qi].id, M.q[qi].blocked), 0);
		} else if (r < 53) {
			uint32_t p = (uint32_t)(rnd() % NPART);

			assert_int_equal(sched_move_queue(M.s, M.q[qi].id, p), 0);
			m_move(&M.q[qi], p);
		} else if (r < 55) {
			m_drop(qi);
		} else if (r < 56) {
			static const uint64_t issue[4] = { 0, 1 * US, 4 * US, 100 * US };

			M.issue_ns = issue[rnd() % 4];
			sched_set_issue_ns(M.s, M.issue_ns);
		} else if (r < 57) {
			M.k3_ready = !M.k3_ready;
			assert_int_equal(sched_class_ready(M.s, K3, M.k3_ready), 0);
		}
		m_poll(now, &wake);
		if (step % 500 == 0)
			m_check();
	}
	m_check();
	/* drain, polling only at the wake time or a completion */
	for (uint32_t qi = 0; qi < POOL; qi++) {
		M.q[qi].blocked = false;
		assert_int_equal(sched_block(M.s, M.q[qi].id, false), 0);
	}
	m_poll(now, &wake);
	while (M.pending || M.done < M.dispatched) {
		uint64_t t = m_next_end();

		if (wake < t)
			t = wake;
		assert_true(t != UINT64_MAX); /* something waits: there must be a next event */
		assert_true(t >= now);
		now = t;
		m_complete_until(now);
		m_poll(now, &wake);
		assert_true(++steps < 1000000);
	}
	m_check();
	assert_int_equal(M.dispatched + M.dropped, M.nid);
	for (uint32_t id = 0; id < M.nid; id++)
		assert_true(M.state[id] == 3 || M.state[id] == 4);
	assert_true(M.reserve_used > 0); /* the reserve was exercised */
	if (M.lanes > 1) {
		assert_true(M.lanes_used > 0); /* and the lanes, */
		assert_true(M.spread_bundles > 0 && M.spread_bundles < M.bundles); /* spread and not */
	} else {
		assert_int_equal(M.lanes_used, 0);
		assert_int_equal(M.spread_bundles, 0);
	}
	print_message("model: %u launches, %u dispatched, %u dropped, %u bundles in the urgent reserve, %u on lanes 1..%u, "
		      "%u where side by side paid\n",
		      M.nid, M.dispatched, M.dropped, M.reserve_used, M.lanes_used, NLANES - 1, M.spread_bundles);
	sched_free(M.s);
}

static void test_model_many_queues(void **state)
{
	model_run(0);
	(void)state;
}

static void test_model_lanes(void **state)
{
	model_run(NLANES);
	(void)state;
}

/*
 * A long run with fusion and pipelining: latency-critical queues of one
 * class (SLO 200 us) saturate the partition; one best-effort queue of
 * another class (SLO 5 ms) beside them. Its launch goes by its deadline
 * every time, the critical queues keep their order, and the device never
 * idles between bundles (the next one is queued before it would). With 6
 * critical queues their bundles are full (4 x 2 blocks); with 3 they are
 * not, and go when the partition is predicted idle.
 */
static void run_no_starvation_fused(uint32_t ncrit, struct sched_stats *st)
{
	struct sched_cfg c = cfg_of(8, 2, 1);
	struct sched *s;
	uint64_t now, last[8] = { 0 }, id = 1, be_done = 0, be_submit = 0, be_wait_max = 0, gap = 0;
	uint64_t end[2] = { 0 }, tok[2] = { 0 }, last_end = 0;
	uint32_t inq[8] = { 0 }, nf = 0, h = 0, be = 7;

	c.idle_margin_ns = 2 * US;
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	assert_int_equal(sched_class_ready(s, K + 1, true), 0);
	for (now = 0; now < 100000 * US; now += US) {
		uint64_t wake;
		size_t n;

		while (nf && end[h] <= now) {
			assert_int_equal(sched_complete(s, tok[h], 10 * US, now), 0);
			h ^= 1;
			nf--;
		}
		for (uint32_t q = 0; q < 8; q++)
			if ((q < ncrit && inq[q] < 3) || (q == be && inq[q] < 1)) {
				sub(s, (id++ << 3) | q, q, q == be ? K + 1 : K, 2, now + (q == be ? 5000 * US : 200 * US));
				if (q == be)
					be_submit = now;
				inq[q]++;
			}
		n = sched_poll(s, now, out, 16, &wake);
		for (size_t b = 0; b < n; b++) {
			uint32_t slot = (h + nf) & 1;

			assert_true(nf < 2);
			for (uint32_t k = 0; k < out[b].n; k++) {
				uint32_t q = (uint32_t)(out[b].ids[k] & 7);

				assert_true(out[b].ids[k] > last[q]);
				last[q] = out[b].ids[k];
				inq[q]--;
				if (q == be) {
					be_done++;
					if (now - be_submit > be_wait_max)
						be_wait_max = now - be_submit;
				}
			}
			if (last_end && now > last_end)
				gap += now - last_end;
			tok[slot] = out[b].token;
			end[slot] = (last_end > now ? last_end : now) + 10 * US;
			last_end = end[slot];
			nf++;
		}
	}
	sched_get_stats(s, st);
	print_message("%u critical queues: %llu bundles (%llu full, %llu idle, %llu slack), best-effort %llu, "
		      "longest wait %llu us\n",
		      ncrit, (unsigned long long)st->bundles, (unsigned long long)st->dispatch_full,
		      (unsigned long long)st->dispatch_idle, (unsigned long long)st->dispatch_slack,
		      (unsigned long long)be_done, (unsigned long long)(be_wait_max / US));
	assert_int_equal(gap, 0);
	assert_true(be_done >= 100000 / 5000 - 1);
	assert_true(be_wait_max <= 5000 * US);
	assert_true(st->fused_launches > st->launches / 2);
	sched_free(s);
}

static void test_no_starvation_fused(void **state)
{
	struct sched_stats st;

	run_no_starvation_fused(6, &st);
	assert_true(st.dispatch_full > st.bundles * 9 / 10);
	run_no_starvation_fused(3, &st);
	assert_true(st.dispatch_idle > st.bundles * 9 / 10); /* pipelined */
}

/* sched_poll visits the active queues only: many polls of a large, nearly empty window are cheap. */
static void test_large_window_cost(void **state)
{
	struct sched_cfg c = cfg_of(65536, 4, 4);
	struct sched *s;
	struct timespec t0, t1;
	double ms;

	s = mk_cfg(&c);
	for (uint32_t q = 0; q < 8; q++)
		sub_full(s, q, q * 8191, q % 4, 0, 1, 99, 1000 * US);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 100000; i++) {
		size_t n = sched_poll(s, (uint64_t)i, out, 16, NULL);

		for (size_t b = 0; b < n; b++) {
			uint32_t q = (uint32_t)out[b].ids[0];

			assert_int_equal(sched_complete(s, out[b].token, 1 * US, (uint64_t)i), 0);
			sub_full(s, out[b].ids[0], q * 8191, q % 4, 0, 1, 99, (uint64_t)i + 1000 * US);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	print_message("100000 polls, 65536 queues, 8 active: %.1f ms\n", ms);
	assert_int_equal(sched_pending(s), 8);
	sched_free(s);
}

/* The executor's histogram bucket (count leading zeros) is the probes' loop, bucket for bucket. */
static uint32_t bucket_loop(uint64_t ns)
{
	uint64_t us = ns / 1000;
	uint32_t b = 0;

	for (int i = 0; i < OOO_TM_HIST - 1; i++)
		if (us) {
			b++;
			us >>= 1;
		}
	return b;
}

static void test_tm_bucket(void **state)
{
	(void)state;
	for (uint64_t ns = 0; ns < 3000000; ns += 7)
		assert_int_equal(ooo_tm_bucket(ns), bucket_loop(ns));
	for (int sh = 0; sh < 64; sh++)
		for (uint64_t d = 0; d < 5; d++) {
			uint64_t v = (1ull << sh) + d - 2;

			assert_int_equal(ooo_tm_bucket(v), bucket_loop(v));
		}
	assert_int_equal(ooo_tm_bucket(0), 0);
	assert_int_equal(ooo_tm_bucket(999), 0);
	assert_int_equal(ooo_tm_bucket(1000), 1);
	assert_int_equal(ooo_tm_bucket(UINT64_MAX), OOO_TM_HIST - 1);
}

/*
 * Several streams per partition: a bundle filling part of its capacity
 * keeps the partition busy for that share of its time (at least 1 /
 * streams), so the next bundle is not held behind it as long as on one
 * stream; a full bundle and a launch alone count whole.
 */
static void test_streams(void **state)
{
	struct sched_cfg c = cfg_of(16, 8, 1);
	struct sched *s;
	uint64_t wake = 0;
	uint64_t tok;

	c.streams = 65;
	assert_int_equal(sched_new(&c, &s), -EINVAL);
	c.streams = 4;
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	sub(s, 1, 0, K, 1, 100000 * US); /* 1 of 8 blocks: counted as 2 of 8 (1 / streams), 10 us predicted */
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 1);
	tok = out[0].token;
	assert_int_equal(out[0].predicted_ns, 10 * US);
	sub(s, 2, 1, K, 4, 100000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 0); /* held: busy until 2.5 us */
	assert_int_equal(wake, 2500);
	assert_int_equal(sched_poll(s, 2500, out, 16, &wake), 1); /* predicted idle: goes (4 of 8: busy 5 us more) */
	assert_int_equal(out[0].ids[0], 2);
	sub(s, 3, 2, K, 2, 100000 * US);
	assert_int_equal(sched_poll(s, 2500, out, 16, &wake), 0);
	assert_int_equal(wake, 7500);
	assert_int_equal(sched_complete(s, tok, 10 * US, 3 * US), 0); /* others still in flight: busy_until stays */
	/* a full bundle (8 of 8) counts its whole predicted time */
	for (uint32_t q = 3; q < 6; q++)
		sub(s, 4 + q, q, K, 2, 100000 * US);
	assert_int_equal(sched_poll(s, 3 * US, out, 16, &wake), 1);
	assert_int_equal(out[0].n, 4);
	sub(s, 20, 8, K, 1, 100000 * US);
	assert_int_equal(sched_poll(s, 3 * US, out, 16, &wake), 0);
	assert_int_equal(wake, 17500); /* 7.5 + 10 */
	/* a launch alone (not fusible) counts whole too */
	sub(s, 21, 9, 0, 1, 100000 * US);
	assert_int_equal(sched_poll(s, 3 * US, out, 16, &wake), 1);
	assert_int_equal(out[0].ids[0], 21);
	assert_int_equal(sched_poll(s, 3 * US, out, 16, &wake), 0);
	assert_int_equal(wake, 27500);
	sched_free(s);

	/* issuing a bundle takes the caller 5 us: a 10 us bundle has at most one other beside it */
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	sched_set_issue_ns(s, 5 * US);
	sub(s, 1, 0, K, 1, 100000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 1);
	sub(s, 2, 1, K, 1, 100000 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 0);
	assert_int_equal(wake, 5 * US); /* 10 us / 2, not / 4 */
	sched_set_issue_ns(s, 20 * US); /* longer than the bundle: it counts whole, as on one stream */
	assert_int_equal(sched_poll(s, 5 * US, out, 16, &wake), 1);
	sub(s, 3, 2, K, 1, 100000 * US);
	assert_int_equal(sched_poll(s, 5 * US, out, 16, &wake), 0);
	assert_int_equal(wake, 15 * US);
	sched_free(s);
	(void)state;
}

/* A bundle of lanes' test: its lane and its n (1 or 2) members' ids, in order (id1 unused for 1). */
static void lane_bundle(const struct sched_bundle *b, uint32_t lane, uint32_t n, uint64_t id0, uint64_t id1)
{
	assert_int_equal(b->lane, lane);
	assert_int_equal(b->n, n);
	assert_int_equal(b->ids[0], id0);
	if (n > 1)
		assert_int_equal(b->ids[1], id1);
}

/*
 * Lanes (streams > 1): a queue with launches in flight stays on its lane,
 * and a candidate left out for its lane leads its own bundle there. Where
 * side by side pays (predicted time >= SCHED_LANE_RATIO issue times), a
 * leader with nothing in flight takes the emptiest lane (ties in turn) and
 * queues with nothing in flight join a bundle only on one of the emptiest
 * lanes; where it does not, such a leader takes the busiest lane and they
 * always join.
 */
static void test_lanes(void **state)
{
	struct sched_cfg c = cfg_of(16, 16, 1);
	struct sched *s;
	uint64_t wake = 0, tok[8];

	c.streams = 4;
	c.lanes = SCHED_MAX_LANES + 1;
	assert_int_equal(sched_new(&c, &s), -EINVAL);
	c.lanes = 5; /* more lanes than streams */
	assert_int_equal(sched_new(&c, &s), -EINVAL);
	c.lanes = 4;
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	sched_set_issue_ns(s, 1 * US); /* 10 us predicted: side by side pays */
	/* deadlines within the slack margin: every bundle goes at once, nothing is held */
	sub(s, 1, 0, K, 1, 1 * US);
	sub(s, 2, 1, K, 1, 1 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 1);
	assert_int_equal(out[0].n, 2);
	assert_int_equal(out[0].lane, 0);
	tok[0] = out[0].token;
	/* free queues 2 and 3 lead (earlier deadlines) on the emptiest lane, 1, without queues 0 and 1 (lane 0) */
	sub(s, 3, 0, K, 1, 2 * US);
	sub(s, 4, 1, K, 1, 2 * US);
	sub(s, 5, 2, K, 1, 1 * US);
	sub(s, 6, 3, K, 1, 1 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 2);
	lane_bundle(&out[0], 1, 2, 5, 6);
	lane_bundle(&out[1], 0, 2, 3, 4);
	tok[1] = out[0].token;
	tok[2] = out[1].token;
	/* lanes 0: 2, 1: 1, 2 and 3: 0. Free queues 4 and 5 share lane 2; queue 1 stays on lane 0 */
	sub(s, 7, 4, K, 1, 1 * US);
	sub(s, 8, 1, K, 1, 2 * US);
	sub(s, 9, 5, K, 1, 3 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 2);
	lane_bundle(&out[0], 2, 2, 7, 9);
	lane_bundle(&out[1], 0, 1, 8, 0);
	tok[3] = out[0].token;
	tok[4] = out[1].token;
	/* lanes 0: 3, 1: 1, 2: 1, 3: 0. Free queue 6 does not join queue 0's bundle on busy lane 0: lane 3 */
	sub(s, 10, 0, K, 1, 1 * US);
	sub(s, 11, 6, K, 1, 2 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 2);
	lane_bundle(&out[0], 0, 1, 10, 0);
	lane_bundle(&out[1], 3, 1, 11, 0);
	tok[5] = out[0].token;
	tok[6] = out[1].token;
	/* everything of queue 0 completes: it is free again and goes to the emptiest lane */
	assert_int_equal(sched_complete(s, tok[0], 5 * US, 1 * US), 0);
	assert_int_equal(sched_complete(s, tok[2], 5 * US, 1 * US), 0);
	assert_int_equal(sched_complete(s, tok[5], 5 * US, 1 * US), 0);
	assert_int_equal(sched_complete(s, tok[1], 5 * US, 1 * US), 0); /* lanes 0: 1 (queue 1), 1: 0, 2: 1, 3: 1 */
	sub(s, 12, 0, K, 1, 1 * US);
	assert_int_equal(sched_poll(s, 1 * US, out, 16, &wake), 1);
	assert_int_equal(out[0].lane, 1);
	assert_int_equal(sched_complete(s, out[0].token, 5 * US, 2 * US), 0);
	assert_int_equal(sched_complete(s, tok[3], 5 * US, 2 * US), 0);
	assert_int_equal(sched_complete(s, tok[4], 5 * US, 2 * US), 0);
	assert_int_equal(sched_complete(s, tok[6], 5 * US, 2 * US), 0);
	/* all lanes empty: ties go in turn, from the lane after the last one a free leader took (2) */
	sub(s, 13, 7, 0, 1, 1 * US);
	sub(s, 14, 8, 0, 1, 1 * US);
	sub(s, 15, 9, 0, 1, 1 * US);
	assert_int_equal(sched_poll(s, 2 * US, out, 16, &wake), 3);
	assert_int_equal(out[0].lane, 2);
	assert_int_equal(out[1].lane, 3);
	assert_int_equal(out[2].lane, 0);
	sched_free(s);

	/*
	 * A candidate left out for its lane does not make the bundle full: with
	 * slack and the partition busy, the bundle is held (and so is the class).
	 */
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	sched_set_issue_ns(s, 1 * US);
	sub(s, 1, 0, K, 1, 1 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 1); /* queue 0 on lane 0: busy until 2.5 us */
	assert_int_equal(out[0].lane, 0);
	sub(s, 2, 1, K, 1, 1000 * US); /* free: leads on lane 1 */
	sub(s, 3, 0, K, 1, 1001 * US); /* bound to lane 0: left out */
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 0);
	assert_int_equal(wake, 2500);
	sched_free(s);

	/* short kernels (issue time unknown, then 6 us against 10 us predicted): few, large bundles */
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	sub(s, 1, 0, K, 1, 1 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 1);
	assert_int_equal(out[0].lane, 0); /* the busiest of equals: the lowest */
	sub(s, 2, 1, K, 1, 1 * US);
	sub(s, 3, 0, K, 1, 2 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 1);
	assert_int_equal(out[0].lane, 0); /* free queue 1 leads on the busiest lane, and queue 0 (lane 0) joins */
	assert_int_equal(out[0].n, 2);
	sched_set_issue_ns(s, 1 * US); /* side by side pays: free queue 2 takes an empty lane, queue 0 stays */
	sub(s, 4, 2, K, 1, 1 * US);
	sub(s, 5, 0, K, 1, 2 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 2);
	assert_int_equal(out[0].lane, 1);
	assert_int_equal(out[0].n, 1);
	assert_int_equal(out[1].lane, 0);
	assert_int_equal(out[1].ids[0], 5);
	sched_set_issue_ns(s, 6 * US); /* 10 / 2 < 6: it does not pay. Lanes 0: 3, 1: 1 */
	sub(s, 6, 3, K, 1, 1 * US);
	sub(s, 7, 2, K, 1, 2 * US);
	sub(s, 8, 4, K, 1, 3 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 2);
	assert_int_equal(out[0].lane, 0); /* free queue 3 on the busiest lane, free queue 4 joins */
	assert_int_equal(out[0].n, 2);
	assert_int_equal(out[0].ids[0], 6);
	assert_int_equal(out[0].ids[1], 8);
	assert_int_equal(out[1].lane, 1); /* queue 2 is bound to lane 1 */
	assert_int_equal(out[1].ids[0], 7);
	sched_free(s);

	/* no lanes (4 streams): everything on lane 0, packed together as before */
	c.lanes = 1;
	s = mk_cfg(&c);
	assert_int_equal(sched_class_ready(s, K, true), 0);
	sched_set_issue_ns(s, 1 * US); /* side by side would pay */
	sub(s, 1, 0, K, 1, 1 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 1);
	sub(s, 2, 0, K, 1, 1 * US);
	sub(s, 3, 1, K, 1, 1 * US);
	assert_int_equal(sched_poll(s, 0, out, 16, &wake), 1);
	assert_int_equal(out[0].n, 2);
	assert_int_equal(out[0].lane, 0);
	sched_free(s);
	(void)state;
}

/* The compiler's queue: round-robin over owners, an owner's newest job first; a flood does not starve. */
static void test_fairq(void **state)
{
	struct fairq q = { 0 };
	struct fairq_node n[300];
	uint64_t got[8];

	assert_null(fairq_take(&q));
	/* owner 7 queues 256 jobs, then owners 3 and 9 one each */
	for (int i = 0; i < 256; i++) {
		n[i].owner = 7;
		fairq_push(&q, &n[i]);
	}
	n[256].owner = 3;
	fairq_push(&q, &n[256]);
	n[257].owner = 9;
	fairq_push(&q, &n[257]);
	assert_int_equal(q.n, 258);
	for (int i = 0; i < 4; i++)
		got[i] = fairq_take(&q)->owner;
	/* from last = 0: 3, then 7, then 9, then (wrapping) 7 again */
	assert_int_equal(got[0], 3);
	assert_int_equal(got[1], 7);
	assert_int_equal(got[2], 9);
	assert_int_equal(got[3], 7);
	/* 7's newest first: what remains of 7 comes out newest to oldest */
	{
		struct fairq_node *j = fairq_take(&q);

		assert_ptr_equal(j, &n[253]); /* 255 and 254 went above */
	}
	/* a newcomer is served next time round, not after the flood */
	n[258].owner = 5;
	fairq_push(&q, &n[258]);
	assert_int_equal(fairq_take(&q)->owner, 5); /* last 7, nobody above it: round again, from the least */
	assert_int_equal(fairq_take(&q)->owner, 7);
	for (uint32_t left = q.n; left; left--)
		assert_int_equal(fairq_take(&q)->owner, 7);
	assert_null(fairq_take(&q));
	assert_int_equal(q.n, 0);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),		  cmocka_unit_test(test_queue_order),
		cmocka_unit_test(test_edf),		  cmocka_unit_test(test_capacity_and_slack),
		cmocka_unit_test(test_share_window),
		cmocka_unit_test(test_work_conserving),   cmocka_unit_test(test_compile_fallback),
		cmocka_unit_test(test_cost_model),	  cmocka_unit_test(test_blocked_queue),
		cmocka_unit_test(test_partitions),	  cmocka_unit_test(test_oversize_and_classes),
		cmocka_unit_test(test_no_starvation),	  cmocka_unit_test(test_move_queue),
		cmocka_unit_test(test_pipelining),	  cmocka_unit_test(test_held_class_not_blocking),
		cmocka_unit_test(test_held_class_slots),  cmocka_unit_test(test_drop_queue),
		cmocka_unit_test(test_drop_active_list),  cmocka_unit_test(test_sort_many),
		cmocka_unit_test(test_model_many_queues), cmocka_unit_test(test_model_lanes), cmocka_unit_test(test_no_starvation_fused),
		cmocka_unit_test(test_large_window_cost), cmocka_unit_test(test_quiet_poll),
		cmocka_unit_test(test_tm_bucket),	  cmocka_unit_test(test_fusing_pays),
		cmocka_unit_test(test_streams),		  cmocka_unit_test(test_urgent_reserve),
		cmocka_unit_test(test_fairq),		  cmocka_unit_test(test_lanes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
