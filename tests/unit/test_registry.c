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

static struct peer_cred in_cgroup(uint32_t uid, uint32_t pid, const char *cg)
{
	struct peer_cred c = cred(uid, uid, pid);

	snprintf(c.cgroup, sizeof(c.cgroup), "%s", cg);
	return c;
}

#define POD_A "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1111_2222.slice/cri-containerd-a.scope"
#define POD_A2 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1111_2222.slice/cri-containerd-b.scope"
#define POD_B "/kubepods/besteffort/pod3333-4444/c"

/* tenant_by = pod: two pods of one uid are two tenants, each with the class's limits; reloads re-key */
static void test_pods(void **state)
{
	struct policy *p = parse("[class pods]\nmatch_cgroup = /kubepods.slice/* /kubepods/* /svc/*\n"
				 "tenant_by = pod\nmax_sessions = 1\nmem_limit = 1K\n"
				 "[class rest]\nmatch_uid = *\n");
	struct policy *by_uid = parse("[class pods]\nmatch_cgroup = /kubepods.slice/* /kubepods/* /svc/*\n"
				      "max_sessions = 5\n[class rest]\nmatch_uid = *\n");
	struct policy *by_cg = parse("[class pods]\nmatch_cgroup = /kubepods.slice/* /kubepods/* /svc/*\n"
				     "tenant_by = cgroup\nmax_sessions = 5\n[class rest]\nmatch_uid = *\n");
	struct peer_cred a = in_cgroup(0, 1, POD_A), a2 = in_cgroup(0, 2, POD_A2), b = in_cgroup(0, 3, POD_B),
			 s1 = in_cgroup(0, 4, "/svc/one"), s2 = in_cgroup(0, 5, "/svc/two"), out = in_cgroup(0, 6, "/user.slice/x"),
			 none = in_cgroup(0, 7, "");
	struct session *sa, *sa2, *sb, *ss1, *ss2, *so, *sn;
	struct registry r;
	char why[256];

	(void)state;
	registry_init(&r);
	assert_int_equal(registry_admit(&r, p, &a, "a", 0, &sa, why, sizeof(why)), 0);
	assert_int_equal(registry_admit(&r, p, &b, "b", 0, &sb, why, sizeof(why)), 0);
	assert_ptr_not_equal(sa->tenant, sb->tenant);
	assert_string_equal(sa->tenant->terms.name, "pods");
	assert_string_equal(sa->tenant->key, "1111-2222");
	assert_string_equal(sb->tenant->key, "3333-4444");
	/* each pod has its own limits: a's 1 KiB does not count against b's */
	assert_int_equal(session_charge(sa, OOO_RES_MEM_BYTES, 1024), 0);
	assert_int_equal(session_charge(sb, OOO_RES_MEM_BYTES, 1024), 0);
	/* another container of pod a is pod a's tenant: its max_sessions = 1 is taken */
	assert_int_equal(registry_admit(&r, p, &a2, "a2", 0, &sa2, why, sizeof(why)), -OOO_ELIMIT);
	assert_non_null(strstr(why, "tenant uid 0 pod 1111-2222 in class 'pods' has its maximum of 1 sessions"));
	/* outside a pod under tenant_by = pod: one tenant of the uid in the class */
	assert_int_equal(registry_admit(&r, p, &s1, "s1", 0, &ss1, why, sizeof(why)), 0);
	assert_string_equal(ss1->tenant->key, "");
	assert_int_equal(registry_admit(&r, p, &s2, "s2", 0, &ss2, why, sizeof(why)), -OOO_ELIMIT);
	assert_non_null(strstr(why, "tenant uid 0 in class 'pods' has its maximum"));
	/* outside the patterns, or unknown: the next class */
	assert_int_equal(registry_admit(&r, p, &out, "o", 0, &so, why, sizeof(why)), 0);
	assert_string_equal(so->tenant->terms.name, "rest");
	assert_int_equal(registry_admit(&r, p, &none, "n", 0, &sn, why, sizeof(why)), 0);
	assert_ptr_equal(sn->tenant, so->tenant);
	assert_int_equal(r.ntenants, 4);

	/* tenant_by = uid: the pods' sessions join one tenant, with what they hold */
	assert_int_equal(registry_apply_policy(&r, by_uid), 0);
	assert_ptr_equal(sa->tenant, sb->tenant);
	assert_ptr_equal(sa->tenant, ss1->tenant);
	assert_string_equal(sa->tenant->key, "");
	assert_int_equal(sa->tenant->used[OOO_RES_MEM_BYTES], 2048);
	assert_int_equal(sa->tenant->used[OOO_RES_SESSIONS], 3);
	assert_int_equal(r.ntenants, 2);
	/* tenant_by = cgroup: pods by their UID, other cgroups by their path */
	assert_int_equal(registry_apply_policy(&r, by_cg), 0);
	assert_string_equal(sa->tenant->key, "1111-2222");
	assert_string_equal(sb->tenant->key, "3333-4444");
	assert_string_equal(ss1->tenant->key, "/svc/one");
	assert_int_equal(sa->tenant->used[OOO_RES_MEM_BYTES], 1024);
	assert_int_equal(registry_admit(&r, by_cg, &s2, "s2", 0, &ss2, why, sizeof(why)), 0);
	assert_string_equal(ss2->tenant->key, "/svc/two");
	assert_int_equal(r.ntenants, 5);
	/* refused: the cgroup is said */
	{
		struct policy *only = parse("[class pods]\nmatch_cgroup = /kubepods.slice/*\n");

		assert_int_equal(registry_admit(&r, only, &out, "o", 0, &so, why, sizeof(why)), -OOO_EDENIED);
		assert_non_null(strstr(why, "uid 0 (gid 0, cgroup /user.slice/x) is not admitted"));
		assert_int_equal(registry_admit(&r, only, &none, "o", 0, &so, why, sizeof(why)), -OOO_EDENIED);
		assert_non_null(strstr(why, "cgroup unknown"));
		policy_free(only);
	}
	while (!list_empty(&r.tenants)) {
		struct tenant *t = list_entry(r.tenants.next, struct tenant, node);

		registry_close(&r, list_entry(t->sessions.next, struct session, node));
	}
	assert_int_equal(r.nsessions, 0);
	policy_free(p);
	policy_free(by_uid);
	policy_free(by_cg);
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
		cmocka_unit_test(test_admit_and_close), cmocka_unit_test(test_limits), cmocka_unit_test(test_pods),
		cmocka_unit_test(test_denied),          cmocka_unit_test(test_apply_policy),
		cmocka_unit_test(test_admin_allowed),   cmocka_unit_test(test_domain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
