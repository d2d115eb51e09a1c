/* SPDX-License-Identifier: MIT */
/* Placement of sessions and buffers on GPUs, and of sessions on an executor's serving threads (daemon/place.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../daemon/sched/place.h"

static void test_balance(void **state)
{
	struct place_gpu g[2] = { { true, 0, 0 }, { true, 0, 0 } };
	unsigned on[2] = { 0, 0 };

	(void)state;
	/* 64 new sessions over two idle GPUs: each takes the least loaded, so they alternate */
	for (int i = 0; i < 64; i++) {
		int p = place_pick(g, 2, -1);

		assert_true(p == 0 || p == 1);
		assert_int_equal(p, i % 2);
		g[p].sessions++;
		on[p]++;
	}
	assert_int_equal(on[0], 32);
	assert_int_equal(on[1], 32);
	/* ties on sessions go to less memory handed out, then to the lower index */
	g[0].mem_bytes = 10;
	assert_int_equal(place_pick(g, 2, -1), 1);
	g[1].mem_bytes = 10;
	assert_int_equal(place_pick(g, 2, -1), 0);
	/* sessions count before memory */
	g[0].sessions = 40;
	g[1].mem_bytes = 1ull << 40;
	assert_int_equal(place_pick(g, 2, -1), 1);
}

static void test_shard(void **state)
{
	uint32_t sh[4] = { 0 };

	(void)state;
	/* fill 16, 2 shards: the first 16 sessions stay in shard 0, the next 16 go to shard 1, then they alternate */
	for (int i = 0; i < 48; i++) {
		uint32_t p = place_shard(sh, 2, 16);

		assert_int_equal(p, i < 16 ? 0 : i < 32 ? 1 : (uint32_t)(i % 2));
		sh[p]++;
	}
	assert_int_equal(sh[0], 24);
	assert_int_equal(sh[1], 24);
	/* a session gone from a full shard: that shard takes the next, though a later shard has fewer */
	memset(sh, 0, sizeof(sh));
	sh[0] = 16;
	sh[1] = 16;
	sh[2] = 3;
	sh[0] = 15;
	assert_int_equal(place_shard(sh, 3, 16), 0);
	sh[0] = 16;
	assert_int_equal(place_shard(sh, 3, 16), 2);
	/* fill 0 spreads from the first: fewest, lowest index on a tie */
	memset(sh, 0, sizeof(sh));
	for (int i = 0; i < 12; i++) {
		uint32_t p = place_shard(sh, 4, 0);

		assert_int_equal(p, (uint32_t)(i % 4));
		sh[p]++;
	}
	sh[2] = 1;
	assert_int_equal(place_shard(sh, 4, 0), 2);
	/* one shard: always 0 */
	sh[0] = 1000;
	assert_int_equal(place_shard(sh, 1, 16), 0);
	assert_int_equal(place_shard(sh, 1, 0), 0);
}

static void test_ready(void **state)
{
	struct place_gpu g[3] = { { false, 0, 0 }, { true, 9, 0 }, { true, 10, 0 } };

	(void)state;
	/* a GPU whose executor is down takes nothing */
	assert_int_equal(place_pick(g, 3, -1), 1);
	g[1].ready = false;
	assert_int_equal(place_pick(g, 3, -1), 2);
	g[2].ready = false;
	assert_int_equal(place_pick(g, 3, -1), -1);
	assert_int_equal(place_pick(g, 0, -1), -1);
}

static void test_affinity(void **state)
{
	struct place_gpu g[2] = { { true, 100, 0 }, { true, 0, 0 } };

	(void)state;
	/* a session keeps to its GPU however loaded: its buffers and queues must be together */
	assert_int_equal(place_pick(g, 2, 0), 0);
	assert_int_equal(place_pick(g, 2, 1), 1);
	/* and gets none when that GPU is not ready (no silent move) */
	g[0].ready = false;
	assert_int_equal(place_pick(g, 2, 0), -1);
	assert_int_equal(place_pick(g, 2, 5), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_balance),
		cmocka_unit_test(test_ready),
		cmocka_unit_test(test_affinity),
		cmocka_unit_test(test_shard),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
