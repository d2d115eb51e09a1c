/* SPDX-License-Identifier: MIT */
/* Placement of sessions and buffers on GPUs (daemon/place.c), with a model of two and more devices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../daemon/place.h"

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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
