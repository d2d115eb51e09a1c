/* SPDX-License-Identifier: MIT */
/* Unit tests of the staging allocator, including a randomized check against a model. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../client/staging.h"

static void test_basic(void **state)
{
	struct staging s;
	uint64_t a, b, c;

	assert_int_equal(staging_init(&s, 1000, 8), 0);
	assert_int_equal(staging_alloc(&s, 0, 8, &a), -EINVAL);
	assert_int_equal(staging_alloc(&s, 10, 3, &a), -EINVAL);
	assert_int_equal(staging_alloc(&s, 1001, 8, &a), -E2BIG);
	assert_int_equal(staging_alloc(&s, 100, 8, &a), 0);
	assert_int_equal(a, 0);
	assert_int_equal(staging_alloc(&s, 10, 64, &b), 0);
	assert_int_equal(b, 128);
	assert_int_equal(staging_alloc(&s, 862, 1, &c), 0); /* 138..1000: exactly the rest */
	assert_int_equal(c, 138);
	assert_int_equal(staging_alloc(&s, 1, 1, &c), -ENOSPC);
	/* freeing out of order reclaims only the freed prefix */
	assert_int_equal(staging_free(&s, 128), 0);
	assert_int_equal(staging_alloc(&s, 1, 1, &c), -ENOSPC);
	assert_int_equal(staging_free(&s, 128), -ENOENT); /* double free */
	assert_int_equal(staging_free(&s, 5), -ENOENT);
	assert_int_equal(staging_free(&s, 0), 0);
	assert_int_equal(staging_used(&s), 862);
	/* wraps to the start when the tail has no room */
	assert_int_equal(staging_alloc(&s, 100, 8, &c), 0);
	assert_int_equal(c, 0);
	staging_fini(&s);
}

static void test_block_limit(void **state)
{
	struct staging s;
	uint64_t off;

	assert_int_equal(staging_init(&s, 1 << 20, 4), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(staging_alloc(&s, 16, 8, &off), 0);
	assert_int_equal(staging_alloc(&s, 16, 8, &off), -ENOSPC);
	assert_int_equal(staging_free(&s, 0), 0);
	assert_int_equal(staging_alloc(&s, 16, 8, &off), 0);
	staging_fini(&s);
}

/* Random allocs and out-of-order frees: live blocks never overlap and stay in bounds. */
static void test_random_against_model(void **state)
{
	enum { SIZE = 65536, MAXLIVE = 64 };
	struct staging s;
	struct { uint64_t off, len; } live[MAXLIVE];
	int nlive = 0;
	unsigned seed = 7;
	unsigned long allocs = 0, fulls = 0;

	assert_int_equal(staging_init(&s, SIZE, MAXLIVE), 0);
	for (int step = 0; step < 200000; step++) {
		if (nlive < MAXLIVE && (rand_r(&seed) % 3 || nlive == 0)) {
			uint64_t len = 1 + rand_r(&seed) % 4096, align = 1ull << (rand_r(&seed) % 7), off;
			int r = staging_alloc(&s, len, align, &off);

			if (r == -ENOSPC) {
				fulls++;
				continue;
			}
			assert_int_equal(r, 0);
			assert_int_equal(off % align, 0);
			assert_true(off + len <= SIZE);
			for (int i = 0; i < nlive; i++)
				assert_true(off + len <= live[i].off || live[i].off + live[i].len <= off);
			live[nlive].off = off;
			live[nlive].len = len;
			nlive++;
			allocs++;
		} else {
			int k = (int)(rand_r(&seed) % (unsigned)nlive);
			assert_int_equal(staging_free(&s, live[k].off), 0);
			live[k] = live[--nlive];
		}
		assert_true(staging_used(&s) <= SIZE);
	}
	while (nlive)
		assert_int_equal(staging_free(&s, live[--nlive].off), 0);
	assert_int_equal(staging_used(&s), 0);
	print_message("%lu allocations, %lu times full\n", allocs, fulls);
	assert_true(allocs > 50000); /* the model test must exercise the allocator, not just "full" */
	staging_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_block_limit),
		cmocka_unit_test(test_random_against_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
