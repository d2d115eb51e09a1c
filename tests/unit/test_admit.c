/* SPDX-License-Identifier: MIT */
/* Admission of connections waiting for hello (daemon/admit.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../daemon/policy/admit.h"

enum { MAX = 1024, FLOOR = 32 }; /* as oood.sock has them (SERVER_PENDING_MAX, SERVER_PENDING_UID_MIN) */

static struct admit_table *table(void)
{
	struct admit_table *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	return t;
}

/* Admit one connection of uid the way the server does; returns the verdict. */
static enum admit_verdict arrive(struct admit_table *t, uint32_t uid, uint32_t max, uint32_t floor)
{
	struct admit_decision d = admit_decide(t, uid, max, floor);

	if (d.verdict == ADMIT_EVICT) {
		assert_int_not_equal(d.victim, uid);
		admit_del(t, d.victim);
	}
	if (d.verdict == ADMIT_YES || d.verdict == ADMIT_EVICT)
		assert_int_equal(admit_add(t, uid), 0);
	return d.verdict;
}

static void test_alone_fills_the_table(void **state)
{
	struct admit_table *t = table();
	struct admit_decision d;

	(void)state;
	/* a uid alone may burst up to the whole table */
	for (int i = 0; i < MAX; i++)
		assert_int_equal(arrive(t, 7, MAX, FLOOR), ADMIT_YES);
	assert_int_equal(t->total, MAX);
	assert_int_equal(t->n, 1);
	d = admit_decide(t, 7, MAX, FLOOR);
	assert_int_equal(d.verdict, ADMIT_SHARE);
	assert_int_equal(d.share, MAX);
	assert_int_equal(d.held, MAX);
	/* a second uid takes the first one's slots, up to half of them */
	for (int i = 0; i < MAX / 2; i++) {
		assert_int_equal(arrive(t, 8, MAX, FLOOR), ADMIT_EVICT);
		/* and the first, over its share now, is refused even after losing slots */
		assert_int_equal(admit_decide(t, 7, MAX, FLOOR).verdict, ADMIT_SHARE);
	}
	assert_int_equal(admit_held(t, 7), MAX / 2);
	assert_int_equal(admit_held(t, 8), MAX / 2);
	d = admit_decide(t, 8, MAX, FLOOR);
	assert_int_equal(d.verdict, ADMIT_SHARE);
	assert_int_equal(d.share, MAX / 2);
	assert_int_equal(t->total, MAX);
	free(t);
}

/* Issue 38: four uids fill the table with silent connections; a fifth still gets in. */
static void test_four_uids_do_not_lock_out_a_fifth(void **state)
{
	struct admit_table *t = table();
	struct admit_decision d;

	(void)state;
	for (uint32_t u = 1; u <= 4; u++)
		for (int i = 0; i < MAX / 4; i++)
			assert_int_equal(arrive(t, u, MAX, FLOOR), ADMIT_YES);
	assert_int_equal(t->total, MAX);
	/* each holds its share (1024 / 4) */
	for (uint32_t u = 1; u <= 4; u++) {
		d = admit_decide(t, u, MAX, FLOOR);
		assert_int_equal(d.verdict, ADMIT_SHARE);
		assert_int_equal(d.share, MAX / 4);
	}
	/* the fifth evicts from the biggest holders, the first of them (uid 1, there the longest) first */
	d = admit_decide(t, 5, MAX, FLOOR);
	assert_int_equal(d.verdict, ADMIT_EVICT);
	assert_int_equal(d.victim, 1);
	assert_int_equal(d.share, MAX / 5);
	assert_int_equal(arrive(t, 5, MAX, FLOOR), ADMIT_EVICT);
	/* then from the next biggest: uid 1 holds one fewer now */
	d = admit_decide(t, 5, MAX, FLOOR);
	assert_int_equal(d.verdict, ADMIT_EVICT);
	assert_int_equal(d.victim, 2);
	/* evictions spread over the four, one each in turn, until the fifth holds its share */
	for (uint32_t i = 1; i < MAX / 5; i++) {
		d = admit_decide(t, 5, MAX, FLOOR);
		assert_int_equal(d.verdict, ADMIT_EVICT);
		assert_int_equal(d.victim, 1 + i % 4);
		assert_int_equal(arrive(t, 5, MAX, FLOOR), ADMIT_EVICT);
	}
	assert_int_equal(admit_held(t, 5), MAX / 5);
	assert_int_equal(arrive(t, 5, MAX, FLOOR), ADMIT_SHARE);
	for (uint32_t u = 1; u <= 4; u++) {
		uint32_t h = admit_held(t, u);

		assert_true(h == MAX / 4 - MAX / 5 / 4 || h == MAX / 4 - MAX / 5 / 4 - 1);
	}
	assert_int_equal(t->total, MAX);
	free(t);
}

static void test_biggest_holder_is_refused(void **state)
{
	struct admit_table *t = table();
	struct admit_decision d;

	(void)state;
	/* a small table: 8 slots, shares of at least 4 */
	for (int i = 0; i < 4; i++)
		assert_int_equal(arrive(t, 1, 8, 4), ADMIT_YES);
	for (int i = 0; i < 4; i++)
		assert_int_equal(arrive(t, 2, 8, 4), ADMIT_YES);
	/* full, and uid 1 holds as many as uid 2: refused (its share is 4 too) */
	assert_int_equal(admit_decide(t, 1, 8, 4).verdict, ADMIT_SHARE);
	/* with a floor above the even share, the full table decides: one of the biggest is refused */
	d = admit_decide(t, 1, 8, 6);
	assert_int_equal(d.verdict, ADMIT_FULL);
	assert_int_equal(d.share, 6);
	/* one fewer than the biggest: it takes the biggest's slot */
	admit_del(t, 1);
	admit_add(t, 3);
	d = admit_decide(t, 1, 8, 6);
	assert_int_equal(d.verdict, ADMIT_EVICT);
	assert_int_equal(d.victim, 2);
	/* a floor above max counts as max; no slots at all: refused */
	assert_int_equal(admit_decide(t, 9, 8, 100).share, 8);
	assert_int_equal(admit_decide(t, 9, 0, 4).verdict, ADMIT_FULL);
	free(t);
}

static void test_floor(void **state)
{
	struct admit_table *t = table();
	struct admit_decision d;

	(void)state;
	/* 100 uids with one connection each: the even share (10) is below the floor, which holds */
	for (uint32_t u = 0; u < 100; u++)
		assert_int_equal(arrive(t, 1000 + u, MAX, FLOOR), ADMIT_YES);
	d = admit_decide(t, 1000, MAX, FLOOR);
	assert_int_equal(d.verdict, ADMIT_YES);
	assert_int_equal(d.share, FLOOR);
	for (int i = 1; i < FLOOR; i++)
		assert_int_equal(arrive(t, 1000, MAX, FLOOR), ADMIT_YES);
	assert_int_equal(arrive(t, 1000, MAX, FLOOR), ADMIT_SHARE);
	free(t);
}

static void test_table(void **state)
{
	struct admit_table *t = table();

	(void)state;
	/* entries keep their order when one goes; a uid not counted is ignored */
	for (uint32_t u = 1; u <= 3; u++)
		assert_int_equal(admit_add(t, u), 0);
	admit_add(t, 2);
	admit_del(t, 1);
	admit_del(t, 42);
	assert_int_equal(t->n, 2);
	assert_int_equal(t->total, 3);
	assert_int_equal(t->e[0].uid, 2);
	assert_int_equal(t->e[0].held, 2);
	assert_int_equal(t->e[1].uid, 3);
	assert_int_equal(admit_held(t, 1), 0);
	/* a uid that comes back goes last */
	admit_add(t, 1);
	assert_int_equal(t->e[2].uid, 1);
	/* never more uids than entries */
	memset(t, 0, sizeof(*t));
	for (uint32_t u = 0; u < ADMIT_UIDS_MAX; u++)
		assert_int_equal(admit_add(t, u), 0);
	assert_int_equal(admit_add(t, ADMIT_UIDS_MAX), -ENOSPC);
	assert_int_equal(admit_add(t, 0), 0);
	assert_int_equal(t->total, ADMIT_UIDS_MAX + 1);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alone_fills_the_table),
		cmocka_unit_test(test_four_uids_do_not_lock_out_a_fifth),
		cmocka_unit_test(test_biggest_holder_is_refused),
		cmocka_unit_test(test_floor),
		cmocka_unit_test(test_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
