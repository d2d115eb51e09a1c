/* SPDX-License-Identifier: MIT */
/* The SM partition plan oood sends each executor (daemon/partplan.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../daemon/parts/partplan.h"

static struct policy *parse(const char *text)
{
	struct policy_error err = { 0 };
	struct policy *p = NULL;
	int rc = policy_parse(text, strlen(text), "test", &p, &err);

	if (rc)
		print_message("policy: %d line %d: %s\n", rc, err.line, err.msg);
	assert_int_equal(rc, 0);
	return p;
}

static const char three[] = "[class crit]\nmatch_uid = 1\nsm_share = 25\npartition = yes\n"
			    "[class batch]\nmatch_uid = 2\nsm_share = 10\n"
			    "[class web]\nmatch_uid = 3\nsm_share = 30\npartition = yes\n";

/* partition = yes: sm_share percent of the SMs, rounded up, in policy order; the others share */
static void test_policy_plan(void **state)
{
	struct policy *p = parse(three);
	struct part_plan plan;
	char why[256];

	(void)state;
	assert_int_equal(part_plan(p, NULL, 0, 132, &plan, why, sizeof(why)), 0);
	assert_int_equal(plan.n, 2);
	assert_string_equal(plan.p[0].klass, "crit");
	assert_int_equal(plan.p[0].sms, 33);
	assert_int_equal(plan.p[0].source, PART_SRC_POLICY);
	assert_string_equal(plan.p[1].klass, "web");
	assert_int_equal(plan.p[1].sms, 40); /* 39.6 rounded up */
	assert_int_equal(part_plan(p, NULL, 0, 10, &plan, why, sizeof(why)), 0);
	assert_int_equal(plan.p[0].sms, 3); /* 2.5 */
	assert_int_equal(plan.p[1].sms, 3);
	policy_free(p);
	/* no class with partition = yes: an empty plan */
	p = parse("[class a]\nmatch_uid = *\n");
	assert_int_equal(part_plan(p, NULL, 0, 132, &plan, why, sizeof(why)), 0);
	assert_int_equal(plan.n, 0);
	policy_free(p);
}

/* oooctl's sizes win over the policy, 0 removes a class's partition, unknown classes are left out */
static void test_overrides(void **state)
{
	struct policy *p = parse(three);
	struct part_override ovr[PART_OVERRIDES];
	size_t n = 0;
	struct part_plan plan;
	char why[256];

	(void)state;
	assert_int_equal(part_override_set(ovr, &n, "batch", 16, false), 0);
	assert_int_equal(part_override_set(ovr, &n, "web", 0, false), 0);
	assert_int_equal(part_override_set(ovr, &n, "gone", 8, false), 0);
	assert_int_equal(n, 3);
	assert_int_equal(part_plan(p, ovr, n, 132, &plan, why, sizeof(why)), 0);
	assert_int_equal(plan.n, 2);
	assert_string_equal(plan.p[0].klass, "crit");
	assert_int_equal(plan.p[0].source, PART_SRC_POLICY);
	assert_string_equal(plan.p[1].klass, "batch");
	assert_int_equal(plan.p[1].sms, 16);
	assert_int_equal(plan.p[1].source, PART_SRC_OOOCTL);
	/* set again: replaced, not added */
	assert_int_equal(part_override_set(ovr, &n, "batch", 24, false), 0);
	assert_int_equal(n, 3);
	assert_int_equal(part_plan(p, ovr, n, 132, &plan, why, sizeof(why)), 0);
	assert_int_equal(plan.p[1].sms, 24);
	/* reset: back to the policy (web's 40 again), and a reset of a class never set is no error */
	assert_int_equal(part_override_set(ovr, &n, "web", 0, true), 0);
	assert_int_equal(part_override_set(ovr, &n, "nosuch", 0, true), 0);
	assert_int_equal(n, 2);
	assert_int_equal(part_plan(p, ovr, n, 132, &plan, why, sizeof(why)), 0);
	assert_int_equal(plan.n, 3);
	assert_string_equal(plan.p[2].klass, "web");
	assert_int_equal(plan.p[2].sms, 40);
	/* bad names; a full table */
	assert_int_equal(part_override_set(ovr, &n, "", 8, false), -EINVAL);
	for (int i = 0; n < PART_OVERRIDES; i++) {
		char name[16];

		snprintf(name, sizeof(name), "x%d", i);
		assert_int_equal(part_override_set(ovr, &n, name, 1, false), 0);
	}
	assert_int_equal(part_override_set(ovr, &n, "one-more", 1, false), -ENOSPC);
	assert_int_equal(part_override_set(ovr, &n, "batch", 8, false), 0); /* an existing one can change */
	policy_free(p);
}

/* plans the executor could never make are refused here, with the reason */
static void test_refusals(void **state)
{
	struct policy *p = parse(three);
	struct part_override ovr[PART_OVERRIDES];
	size_t n = 0;
	struct part_plan plan;
	char why[256], text[2048];
	size_t at = 0;

	(void)state;
	/* together they leave the other classes nothing */
	assert_int_equal(part_override_set(ovr, &n, "batch", 60, false), 0);
	assert_int_equal(part_plan(p, ovr, n, 132, &plan, why, sizeof(why)), -ENOSPC);
	assert_non_null(strstr(why, "133 of the GPU's 132 SMs"));
	policy_free(p);
	/* more than EXEC_PART_MAX classes */
	for (int i = 0; i <= (int)EXEC_PART_MAX; i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, "[class c%d]\nmatch_uid = %d\nsm_share = 1\n", i,
				       i + 1);
	p = parse(text);
	n = 0;
	for (int i = 0; i <= (int)EXEC_PART_MAX; i++) {
		char name[16];

		snprintf(name, sizeof(name), "c%d", i);
		assert_int_equal(part_override_set(ovr, &n, name, 8, false), 0);
	}
	assert_int_equal(part_plan(p, ovr, n, 132, &plan, why, sizeof(why)), -ENOSPC);
	assert_non_null(strstr(why, "more than 7 classes"));
	policy_free(p);
	/* a name the executor would cut */
	p = parse("[class a-class-name-of-forty-characters-xx]\nmatch_uid = 1\nsm_share = 10\npartition = yes\n");
	assert_int_equal(part_plan(p, NULL, 0, 132, &plan, why, sizeof(why)), -ENAMETOOLONG);
	policy_free(p);
	assert_int_equal(part_plan(NULL, NULL, 0, 132, &plan, why, sizeof(why)), -EINVAL);
}

static void test_equal(void **state)
{
	struct part_plan a = { 0 }, b = { 0 };

	(void)state;
	assert_true(part_plan_equal(&a, &b));
	a.n = b.n = 1;
	snprintf(a.p[0].klass, sizeof(a.p[0].klass), "x");
	snprintf(b.p[0].klass, sizeof(b.p[0].klass), "x");
	a.p[0].sms = b.p[0].sms = 8;
	a.p[0].source = PART_SRC_POLICY;
	b.p[0].source = PART_SRC_OOOCTL; /* who asked does not change what the executor makes */
	assert_true(part_plan_equal(&a, &b));
	b.p[0].sms = 16;
	assert_false(part_plan_equal(&a, &b));
	b.p[0].sms = 8;
	b.p[0].klass[0] = 'y';
	assert_false(part_plan_equal(&a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_plan),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_equal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
