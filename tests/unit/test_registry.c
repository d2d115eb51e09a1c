/* SPDX-License-Identifier: MIT */
/* Unit tests of tenant/session accounting, limits and policy reloads. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ooo/ooo.h>

#include "../../daemon/policy/registry.h"

static struct policy *parse(const char *text)
{
	struct policy_error err = { 0 };
	struct policy *p = NULL;
	int r = policy_parse(text, strlen(text), "test", &p, &err);

	if (r < 0)
		fail_msg("policy: line %d: %s", err.line, err.msg);
	return p;
}

static const char *two_classes = "[daemon]\n"
				 "max_sessions = 5\n"
				 "[class gpu]\n"
				 "match_uid = 1000 1001\n"
				 "max_sessions = 2\n"
				 "max_buffers = 10\n"
				 "mem_limit = 1K\n"
				 "[class rest]\n"
				 "match_gid = *\n"
				 "max_sessions = 3\n";

static struct peer_cred cred(uint32_t uid, uint32_t gid, uint32_t pid)
{
	struct peer_cred c = { .pid = pid, .uid = uid, .gid = gid };
	return c;
}

static void test_admit_and_close(void **state)
{
	struct policy *p = parse(two_classes);
	struct registry r;
	struct session *a, *b, *c;
	struct peer_cred u1000 = cred(1000, 1000, 1), u7 = cred(7, 7, 2);
	char why[256];

	registry_init(&r);
	assert_int_equal(registry_admit(&r, p, &u1000, "a", 10, &a, why, sizeof(why)), 0);
	assert_int_equal(registry_admit(&r, p, &u1000, "b", 11, &b, why, sizeof(why)), 0);
	assert_int_equal(registry_admit(&r, p, &u7, "c", 12, &c, why, sizeof(why)), 0);
	assert_int_equal(r.nsessions, 3);
	assert_int_equal(r.ntenants, 2);
	assert_ptr_equal(a->tenant, b->tenant);
	assert_string_equal(a->tenant->terms.name, "gpu");
	assert_string_equal(c->tenant->terms.name, "rest");
	assert_int_equal(a->tenant->used[OOO_RES_SESSIONS], 2);
	assert_true(a->id != b->id && b->id != c->id);
	assert_string_equal(b->name, "b");

	registry_close(&r, a);
	assert_int_equal(b->tenant->used[OOO_RES_SESSIONS], 1);
	registry_close(&r, b);
	assert_int_equal(r.ntenants, 1);
	registry_close(&r, c);
	registry_close(&r, NULL);
	assert_int_equal(r.ntenants, 0);
	assert_int_equal(r.nsessions, 0);
	assert_true(list_empty(&r.tenants));
	policy_free(p);
}

static void test_limits(void **state)
{
	struct policy *p = parse(two_classes);
	struct registry r;
	struct session *s[8];
	struct peer_cred u1000 = cred(1000, 1, 1);
	char why[256];
	int i;

	registry_init(&r);
	/* per tenant */
	assert_int_equal(registry_admit(&r, p, &u1000, "", 0, &s[0], why, sizeof(why)), 0);
	assert_int_equal(registry_admit(&r, p, &u1000, "", 0, &s[1], why, sizeof(why)), 0);
	assert_int_equal(registry_admit(&r, p, &u1000, "", 0, &s[2], why, sizeof(why)), -OOO_ELIMIT);
	assert_non_null(strstr(why, "maximum of 2 sessions"));
	/* a refused admit leaves nothing behind */
	assert_int_equal(r.nsessions, 2);
	assert_int_equal(r.ntenants, 1);
	/* daemon-wide: max_sessions = 5 */
	for (i = 2; i < 5; i++) {
		struct peer_cred other = cred(2000 + (uint32_t)i, 5, 9);
		assert_int_equal(registry_admit(&r, p, &other, "", 0, &s[i], why, sizeof(why)), 0);
	}
	{
		struct peer_cred other = cred(3000, 5, 9);
		assert_int_equal(registry_admit(&r, p, &other, "", 0, &s[5], why, sizeof(why)), -OOO_ELIMIT);
		assert_non_null(strstr(why, "max_sessions = 5"));
		assert_int_equal(r.ntenants, 4);
	}
	/* resource charges against the tenant's limit */
	assert_int_equal(session_charge(s[0], OOO_RES_BUFFERS, 6), 0);
	assert_int_equal(session_charge(s[1], OOO_RES_BUFFERS, 4), 0);
	assert_int_equal(session_charge(s[1], OOO_RES_BUFFERS, 1), -OOO_ELIMIT);
	assert_int_equal(session_charge(s[0], OOO_RES_MEM_BYTES, 1025), -OOO_ELIMIT);
	assert_int_equal(session_charge(s[0], OOO_RES_MEM_BYTES, UINT64_MAX), -OOO_ELIMIT);
	assert_int_equal(session_charge(s[0], OOO_RES_MEM_BYTES, 1024), 0);
	assert_int_equal(session_charge(s[0], OOO_RES_COUNT, 1), -EINVAL);
	assert_int_equal(s[0]->tenant->used[OOO_RES_BUFFERS], 10);
	session_uncharge(s[1], OOO_RES_BUFFERS, 100); /* clamps to what s[1] holds */
	assert_int_equal(s[1]->used[OOO_RES_BUFFERS], 0);
	assert_int_equal(s[0]->tenant->used[OOO_RES_BUFFERS], 6);
	/* closing returns exactly what the session held */
	registry_close(&r, s[0]);
	assert_int_equal(s[1]->tenant->used[OOO_RES_BUFFERS], 0);
	assert_int_equal(s[1]->tenant->used[OOO_RES_MEM_BYTES], 0);
	assert_int_equal(s[1]->tenant->used[OOO_RES_SESSIONS], 1);
	for (i = 1; i < 5; i++)
		registry_close(&r, s[i]);
	assert_int_equal(r.ntenants, 0);
	policy_free(p);
}

static void test_denied(void **state)
{
	struct policy *p = parse("[class root]\nmatch_uid = 0\n[class nope]\nmatch_gid = 50\nadmit = no\n"
				 "[class all]\nmatch_uid = *\n");
	struct policy *empty = parse("");
	struct registry r;
	struct session *s;
	struct peer_cred c50 = cred(1, 50, 1), c1 = cred(1, 1, 1);
	char why[256];

	registry_init(&r);
	assert_int_equal(registry_admit(&r, p, &c50, "", 0, &s, why, sizeof(why)), -OOO_EDENIED);
	assert_non_null(strstr(why, "uid 1 (gid 50) is not admitted"));
	/* a supplementary group also selects the refusing class */
	c1.ngroups = 2;
	c1.groups[0] = 3;
	c1.groups[1] = 50;
	assert_int_equal(registry_admit(&r, p, &c1, "", 0, &s, why, sizeof(why)), -OOO_EDENIED);
	c1.ngroups = 1;
	assert_int_equal(registry_admit(&r, p, &c1, "", 0, &s, why, sizeof(why)), 0);
	assert_string_equal(s->tenant->terms.name, "all");
	registry_close(&r, s);
	assert_int_equal(registry_admit(&r, empty, &c1, "", 0, &s, why, sizeof(why)), -OOO_EDENIED);
	assert_int_equal(r.ntenants, 0);
	policy_free(p);
	policy_free(empty);
}

static void test_apply_policy(void **state)
{
	struct policy *p1 = parse(two_classes);
	/* 1001 leaves gpu for its own class, 7 is no longer admitted, gpu's limits change */
	struct policy *p2 = parse("[class gpu]\nmatch_uid = 1000\nmax_buffers = 1\nmax_sessions = 9\n"
				  "[class solo]\nmatch_uid = 1001\n"
				  "[class rest]\nmatch_uid = 1002\n");
	struct registry r;
	struct session *a, *b, *c, *d;
	struct peer_cred u1000 = cred(1000, 1, 1), u1001 = cred(1001, 1, 2), u7 = cred(7, 7, 3),
			 u1002 = cred(1002, 1, 4);
	char why[256];

	registry_init(&r);
	assert_int_equal(registry_admit(&r, p1, &u1000, "", 0, &a, why, sizeof(why)), 0);
	assert_int_equal(registry_admit(&r, p1, &u1001, "", 0, &b, why, sizeof(why)), 0);
	assert_int_equal(registry_admit(&r, p1, &u7, "", 0, &c, why, sizeof(why)), 0);
	assert_int_equal(registry_admit(&r, p1, &u1002, "", 0, &d, why, sizeof(why)), 0);
	assert_int_equal(session_charge(a, OOO_RES_BUFFERS, 5), 0);
	assert_int_equal(session_charge(b, OOO_RES_BUFFERS, 3), 0);

	assert_int_equal(registry_apply_policy(&r, p2), 1);
	assert_true(c->revoked);
	assert_false(a->revoked || b->revoked || d->revoked);
	/* a revoked session is not counted again by the next reload */
	assert_int_equal(registry_apply_policy(&r, p2), 0);
	/* kept class: new terms, usage over the new limit is kept, new charges refused */
	assert_string_equal(a->tenant->terms.name, "gpu");
	assert_int_equal(a->tenant->terms.limit[OOO_RES_BUFFERS], 1);
	assert_int_equal(a->tenant->used[OOO_RES_BUFFERS], 5);
	assert_int_equal(session_charge(a, OOO_RES_BUFFERS, 1), -OOO_ELIMIT);
	/* moved: keeps what it holds, charged to the new tenant */
	assert_string_equal(b->tenant->terms.name, "solo");
	assert_int_equal(b->tenant->used[OOO_RES_BUFFERS], 3);
	assert_int_equal(b->tenant->used[OOO_RES_SESSIONS], 1);
	assert_ptr_not_equal(a->tenant, b->tenant);
	/* same class name kept for 1002 */
	assert_string_equal(d->tenant->terms.name, "rest");
	/* the revoked session stays accounted until the caller closes it */
	assert_int_equal(r.nsessions, 4);
	registry_close(&r, c);
	registry_close(&r, a);
	registry_close(&r, b);
	registry_close(&r, d);
	assert_int_equal(r.ntenants, 0);
	policy_free(p1);
	policy_free(p2);
}

/* a session's trust domain: its class's domain, else its uid's; kept across a reload that changes it */
static void test_domain(void **state)
{
	struct policy *p1 = parse("[class m]\nmatch_uid = 5, 6\ndomain = model\n[class f]\nmatch_uid = 8\ndomain = x\n"
				  "fence = yes\n[class rest]\nmatch_uid = *\n");
	struct policy *p2 = parse("[class m]\nmatch_uid = 5, 6\n[class rest]\nmatch_uid = *\n");
	struct registry r;
	struct session *a, *b, *c, *d, *e;
	struct peer_cred u5 = cred(5, 5, 1), u6 = cred(6, 6, 2), u7 = cred(7, 7, 3), u8 = cred(8, 8, 4);
	char why[256];

	(void)state;
	registry_init(&r);
	assert_int_equal(registry_admit(&r, p1, &u5, "", 0, &a, why, sizeof(why)), 0);
	assert_int_equal(registry_admit(&r, p1, &u6, "", 0, &b, why, sizeof(why)), 0);
	assert_int_equal(registry_admit(&r, p1, &u7, "", 0, &c, why, sizeof(why)), 0);
	assert_string_equal(a->domain, "model");
	assert_string_equal(b->domain, "model");
	assert_string_equal(c->domain, "uid:7");
	/* fence = yes: the fenced executor, whatever the class's domain */
	assert_int_equal(registry_admit(&r, p1, &u8, "", 0, &e, why, sizeof(why)), 0);
	assert_string_equal(e->domain, OOO_DOMAIN_FENCED);
	registry_close(&r, e);
	assert_int_equal(registry_apply_policy(&r, p2), 0);
	assert_string_equal(a->domain, "model"); /* its buffers live in that domain's executor */
	assert_int_equal(registry_admit(&r, p2, &u5, "", 0, &d, why, sizeof(why)), 0);
	assert_string_equal(d->domain, "uid:5");
	registry_close(&r, a);
	registry_close(&r, b);
	registry_close(&r, c);
	registry_close(&r, d);
	policy_free(p1);
	policy_free(p2);
}

static void test_admin_allowed(void **state)
{
	struct policy *none = parse("[class a]\nmatch_uid = *\n");
	struct policy *grp = parse("[daemon]\nadmin_group = 0\n[class a]\nmatch_uid = *\n");
	struct peer_cred root = cred(0, 0, 1), user = cred(1000, 1000, 1), member = cred(1000, 1000, 1);

	member.ngroups = 1;
	member.groups[0] = 0;
	assert_true(registry_admin_allowed(none, &root, 1234));
	assert_false(registry_admin_allowed(none, &user, 1234));
	assert_true(registry_admin_allowed(none, &user, 1000)); /* the daemon's own uid */
	assert_false(registry_admin_allowed(none, &member, 1234));
	assert_true(registry_admin_allowed(grp, &member, 1234));
	user.gid = 0;
	assert_true(registry_admin_allowed(grp, &user, 1234));
	policy_free(none);
	policy_free(grp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admit_and_close), cmocka_unit_test(test_limits),
		cmocka_unit_test(test_denied),          cmocka_unit_test(test_apply_policy),
		cmocka_unit_test(test_admin_allowed),   cmocka_unit_test(test_domain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
