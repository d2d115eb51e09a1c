/* SPDX-License-Identifier: MIT */
/* A serving thread's published long-running work (daemon/exec/longwork.c): what is read is one publication, whole. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../daemon/exec/longwork.h"

static void test_empty_and_one(void **state)
{
	struct longwork lw = { 0 };
	uint64_t ids[LONGWORK_IDS] = { 0 }, in[3] = { 7, 9, 11 };
	uint32_t n = 99, more = 99;

	(void)state;
	assert_true(longwork_read(&lw, ids, &n, &more)); /* nothing published yet: nothing */
	assert_int_equal(n, 0);
	assert_int_equal(more, 0);
	assert_true(longwork_empty(&lw));
	longwork_publish(&lw, in, 3, 0);
	assert_false(longwork_empty(&lw));
	assert_true(longwork_read(&lw, ids, &n, &more));
	assert_int_equal(n, 3);
	assert_int_equal(more, 0);
	assert_int_equal(ids[0], 7);
	assert_int_equal(ids[2], 11);
	longwork_publish(&lw, NULL, 0, 0); /* the work ended */
	assert_true(longwork_empty(&lw));
	assert_true(longwork_read(&lw, ids, &n, &more));
	assert_int_equal(n, 0);
	assert_int_equal(atomic_load(&lw.seq) & 1, 0);
}

static void test_overflow_counted(void **state)
{
	struct longwork lw = { 0 };
	uint64_t in[LONGWORK_IDS + 5], ids[LONGWORK_IDS];
	uint32_t n, more;

	(void)state;
	for (uint32_t i = 0; i < LONGWORK_IDS + 5; i++)
		in[i] = 100 + i;
	longwork_publish(&lw, in, LONGWORK_IDS + 5, 2); /* 5 past the names, 2 the caller could not name either */
	assert_true(longwork_read(&lw, ids, &n, &more));
	assert_int_equal(n, LONGWORK_IDS);
	assert_int_equal(more, 7);
	assert_false(longwork_empty(&lw));
	longwork_publish(&lw, NULL, 0, 1); /* only a count: not empty either */
	assert_false(longwork_empty(&lw));
	assert_int_equal(ids[LONGWORK_IDS - 1], 100 + LONGWORK_IDS - 1);
}

static void test_writer_mid_write(void **state)
{
	struct longwork lw = { 0 };
	uint64_t ids[LONGWORK_IDS];
	uint32_t n, more;

	(void)state;
	atomic_store(&lw.seq, 1); /* a writer stopped half-way: no copy is consistent */
	assert_false(longwork_read(&lw, ids, &n, &more));
}

/* One writer publishing generation g as ids g*16+i (n = g % 9, more = g), readers checking every copy is one generation. */
struct race {
	struct longwork lw;
	atomic_bool stop;
	atomic_ulong reads, torn, fails;
};

static void *writer(void *arg)
{
	struct race *r = arg;
	uint64_t in[LONGWORK_IDS];

	for (uint32_t g = 1; !atomic_load(&r->stop); g++) {
		uint32_t n = g % (LONGWORK_IDS + 1);

		for (uint32_t i = 0; i < n; i++)
			in[i] = (uint64_t)g * 16 + i;
		longwork_publish(&r->lw, in, n, g);
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct race *r = arg;

	for (unsigned k = 0; k < 200000; k++) {
		uint64_t ids[LONGWORK_IDS];
		uint32_t n, more;

		if (!longwork_read(&r->lw, ids, &n, &more)) {
			atomic_fetch_add(&r->fails, 1);
			continue;
		}
		atomic_fetch_add(&r->reads, 1);
		if (!more)
			continue; /* before the first publication */
		if (n != more % (LONGWORK_IDS + 1))
			atomic_fetch_add(&r->torn, 1);
		for (uint32_t i = 0; i < n; i++)
			if (ids[i] != (uint64_t)more * 16 + i)
				atomic_fetch_add(&r->torn, 1);
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	struct race *r = calloc(1, sizeof(*r));
	pthread_t w, rd[2];

	(void)state;
	assert_non_null(r);
	assert_int_equal(pthread_create(&w, NULL, writer, r), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&rd[i], NULL, reader, r), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(rd[i], NULL);
	atomic_store(&r->stop, true);
	pthread_join(w, NULL);
	assert_int_equal(atomic_load(&r->torn), 0);
	assert_true(atomic_load(&r->reads) > 0);
	print_message("%lu consistent reads, %lu gave up (the writer kept writing), 0 torn\n",
		      (unsigned long)atomic_load(&r->reads), (unsigned long)atomic_load(&r->fails));
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_and_one),
		cmocka_unit_test(test_overflow_counted),
		cmocka_unit_test(test_writer_mid_write),
		cmocka_unit_test(test_concurrent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
