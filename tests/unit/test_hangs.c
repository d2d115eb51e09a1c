/* SPDX-License-Identifier: MIT */
/* Hang strikes (daemon/hangs.c): counting within the window, the bar and its end, eviction, pardon. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../daemon/policy/hangs.h"

#define S 1000000000ull

static struct hangs *mk(void)
{
	struct hangs *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	return h;
}

static void test_window(void **state)
{
	struct hangs *h = mk();
	uint64_t until = 1;
	uint32_t n = 99;

	assert_false(hangs_barred(h, 1000, 0, 3, 600 * S, &until, &n));
	assert_int_equal(n, 0);
	assert_int_equal(until, 0);
	assert_int_equal(hangs_record(h, 1000, 10 * S, 600 * S), 1);
	assert_int_equal(hangs_record(h, 1000, 20 * S, 600 * S), 2);
	assert_false(hangs_barred(h, 1000, 21 * S, 3, 600 * S, &until, &n));
	assert_int_equal(n, 2);
	assert_true(hangs_barred(h, 1000, 21 * S, 2, 600 * S, &until, &n)); /* two strikes bar already */
	assert_int_equal(until, 620 * S);
	assert_false(hangs_barred(h, 1000, 21 * S, 0, 600 * S, NULL, NULL)); /* 0: never */
	assert_int_equal(hangs_record(h, 1000, 30 * S, 600 * S), 3);
	assert_true(hangs_barred(h, 1000, 31 * S, 3, 600 * S, &until, &n));
	assert_int_equal(n, 3);
	assert_int_equal(until, 630 * S); /* the window after the last hang */
	assert_true(hangs_barred(h, 1000, 630 * S - 1, 3, 600 * S, NULL, NULL));
	assert_false(hangs_barred(h, 1000, 630 * S, 3, 600 * S, NULL, NULL)); /* over */
	/* another uid is not touched */
	assert_false(hangs_barred(h, 1001, 31 * S, 1, 600 * S, NULL, NULL));
	/* hangs further apart than the window do not add up */
	assert_int_equal(hangs_record(h, 1001, 0, 100 * S), 1);
	assert_int_equal(hangs_record(h, 1001, 100 * S, 100 * S), 1);
	assert_int_equal(hangs_record(h, 1001, 150 * S, 100 * S), 2);
	assert_false(hangs_barred(h, 1001, 151 * S, 3, 100 * S, NULL, &n));
	assert_int_equal(n, 2);
	/* a time before the last counts as the last */
	assert_int_equal(hangs_record(h, 1001, 140 * S, 100 * S), 3);
	assert_true(hangs_barred(h, 1001, 151 * S, 3, 100 * S, &until, NULL));
	assert_int_equal(until, 250 * S);
	free(h);
	(void)state;
}

static void test_many(void **state)
{
	struct hangs *h = mk();
	uint32_t n = 0;

	/* more hangs than kept: the latest HANGS_STRIKES_MAX count */
	for (uint32_t i = 0; i < 3 * HANGS_STRIKES_MAX; i++)
		n = hangs_record(h, 7, (uint64_t)i * S, 3600 * S);
	assert_int_equal(n, HANGS_STRIKES_MAX);
	assert_true(hangs_barred(h, 7, 50 * S, HANGS_STRIKES_MAX, 3600 * S, NULL, NULL));
	/* more tenants than kept: the one whose last hang is oldest is forgotten first */
	for (uint32_t u = 100; u < 100 + HANGS_UIDS - 1; u++)
		hangs_record(h, u, 1000 * S + u, 3600 * S);
	assert_int_equal(h->nu, HANGS_UIDS);
	hangs_record(h, 9999, 5000 * S, 3600 * S); /* uid 7's last hang (47 s) is the oldest */
	assert_int_equal(h->nu, HANGS_UIDS);
	assert_false(hangs_barred(h, 7, 50 * S, 1, 3600 * S, NULL, &n));
	assert_int_equal(n, 0);
	assert_true(hangs_barred(h, 100, 1001 * S, 1, 3600 * S, NULL, NULL));
	assert_true(hangs_barred(h, 9999, 5001 * S, 1, 3600 * S, NULL, NULL));
	/* a pardon */
	assert_true(hangs_forget(h, 100));
	assert_false(hangs_forget(h, 100));
	assert_false(hangs_barred(h, 100, 1001 * S, 1, 3600 * S, NULL, NULL));
	assert_true(hangs_barred(h, 9999, 5001 * S, 1, 3600 * S, NULL, NULL));
	assert_int_equal(h->nu, HANGS_UIDS - 1);
	free(h);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
