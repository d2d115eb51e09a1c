/* SPDX-License-Identifier: MIT */
#include "registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ooo/ooo.h>

#include "../../proto/wire.h"

void registry_init(struct registry *r)
{
	list_init(&r->tenants);
	r->ntenants = 0;
	r->nsessions = 0;
	r->next_id = 1;
}

static void terms_from_class(struct class_terms *t, const struct ooo_class *c)
{
	wire_strcpy(t->name, sizeof(t->name), c->name);
	t->priority = c->priority;
	t->slo_us = c->slo_us;
	t->sm_share = c->sm_share;
	t->trace_launches = c->trace_launches;
	t->binary_modules = c->binary_modules;
	t->wait_spin_us = c->wait_spin_us;
	memcpy(t->limit, c->limit, sizeof(t->limit));
}

static struct tenant *tenant_find(struct registry *r, uint32_t uid, const char *cls, const char *key)
{
	struct list_node *n;

	list_for_each(n, &r->tenants) {
		struct tenant *t = list_entry(n, struct tenant, node);
		if (t->uid == uid && !strcmp(t->terms.name, cls) && !strcmp(t->key, key))
			return t;
	}
	return NULL;
}

/* The tenant key of a peer in class c: "" unless the class has tenant_by = pod or cgroup. */
static void peer_key(const struct peer_cred *cred, const struct ooo_class *c, char key[CGROUP_PATH_MAX])
{
	/* cannot fail: the path fits in as many bytes as the key has */
	if (cgroup_tenant_key(c->tenant_by, cred->cgroup, key, CGROUP_PATH_MAX) < 0)
		key[0] = '\0';
}

static struct tenant *tenant_get(struct registry *r, const struct peer_cred *cred, const struct ooo_class *c)
{
	char key[CGROUP_PATH_MAX];
	struct tenant *t;

	peer_key(cred, c, key);
	t = tenant_find(r, cred->uid, c->name, key);
	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->uid = cred->uid;
	t->gid = cred->gid;
	memcpy(t->key, key, sizeof(t->key));
	list_init(&t->sessions);
	terms_from_class(&t->terms, c);
	list_add_tail(&r->tenants, &t->node);
	r->ntenants++;
	return t;
}

static void tenant_put(struct registry *r, struct tenant *t)
{
	if (t->nsessions)
		return;
	list_del(&t->node);
	r->ntenants--;
	free(t);
}

static const struct ooo_class *match(const struct policy *p, const struct peer_cred *cred)
{
	return policy_match_cgroup(p, cred->uid, cred->gid, cred->groups, cred->ngroups, cred->cgroup);
}

int registry_admit(struct registry *r, const struct policy *p, const struct peer_cred *cred, const char *name,
		   uint64_t now_ns, struct session **out, char *why, size_t why_cap)
{
	const struct ooo_class *c = match(p, cred);
	struct session *s;
	struct tenant *t;

	if (!c) {
		char cg[112] = "";

		/* the cgroup, where a class looks at it */
		if (policy_uses_cgroups(p)) {
			memcpy(cg, ", cgroup ", 10);
			cgroup_key_display(cg + 9, sizeof(cg) - 9, cred->cgroup[0] ? cred->cgroup : "unknown");
		}
		snprintf(why, why_cap, "uid %u (gid %u%s) is not admitted by any tenant class of the policy", cred->uid,
			 cred->gid, cg);
		return -OOO_EDENIED;
	}
	if (r->nsessions >= p->max_sessions) {
		snprintf(why, why_cap, "daemon session limit reached (max_sessions = %u)", p->max_sessions);
		return -OOO_ELIMIT;
	}
	t = tenant_get(r, cred, c);
	if (!t) {
		snprintf(why, why_cap, "out of memory");
		return -ENOMEM;
	}
	if (t->used[OOO_RES_SESSIONS] + 1 > t->terms.limit[OOO_RES_SESSIONS]) {
		char k[96] = "";

		if (t->key[0]) {
			size_t l = (size_t)snprintf(k, sizeof(k), " %s ", t->key[0] == '/' ? "cgroup" : "pod");

			cgroup_key_display(k + l, sizeof(k) - l, t->key);
		}
		snprintf(why, why_cap, "tenant uid %u%s in class '%s' has its maximum of %llu sessions", cred->uid, k,
			 c->name, (unsigned long long)t->terms.limit[OOO_RES_SESSIONS]);
		tenant_put(r, t);
		return -OOO_ELIMIT;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(why, why_cap, "out of memory");
		tenant_put(r, t);
		return -ENOMEM;
	}
	s->id = r->next_id++;
	s->cred = *cred;
	s->opened_ns = now_ns;
	wire_strcpy(s->name, sizeof(s->name), name);
	wire_sanitize(s->name);
	/* the trust domain is fixed for the session's life: its buffers and data path live in that domain's executor */
	if (c->fence)
		wire_strcpy(s->domain, sizeof(s->domain), OOO_DOMAIN_FENCED); /* isolated by its window, not a process */
	else if (c->domain[0])
		wire_strcpy(s->domain, sizeof(s->domain), c->domain);
	else
		snprintf(s->domain, sizeof(s->domain), "uid:%u", cred->uid);
	s->tenant = t;
	list_init(&s->bufs);
	list_add_tail(&t->sessions, &s->node);
	t->nsessions++;
	r->nsessions++;
	s->used[OOO_RES_SESSIONS] = 1;
	t->used[OOO_RES_SESSIONS]++;
	*out = s;
	return 0;
}

static void detach(struct session *s)
{
	struct tenant *t = s->tenant;

	for (int i = 0; i < OOO_RES_COUNT; i++)
		t->used[i] -= s->used[i];
	list_del(&s->node);
	t->nsessions--;
	s->tenant = NULL;
}

static void attach(struct session *s, struct tenant *t)
{
	for (int i = 0; i < OOO_RES_COUNT; i++)
		t->used[i] += s->used[i];
	list_add_tail(&t->sessions, &s->node);
	t->nsessions++;
	s->tenant = t;
}

void registry_close(struct registry *r, struct session *s)
{
	struct tenant *t;

	if (!s)
		return;
	t = s->tenant;
	detach(s);
	r->nsessions--;
	tenant_put(r, t);
	free(s);
}

int session_charge(struct session *s, enum ooo_res res, uint64_t n)
{
	struct tenant *t = s->tenant;

	if ((unsigned)res >= OOO_RES_COUNT)
		return -EINVAL;
	if (n > t->terms.limit[res] || t->used[res] > t->terms.limit[res] - n)
		return -OOO_ELIMIT;
	t->used[res] += n;
	s->used[res] += n;
	return 0;
}

void session_charge_force(struct session *s, enum ooo_res res, uint64_t n)
{
	if ((unsigned)res >= OOO_RES_COUNT)
		return;
	s->tenant->used[res] += n;
	s->used[res] += n;
}

void session_uncharge(struct session *s, enum ooo_res res, uint64_t n)
{
	if ((unsigned)res >= OOO_RES_COUNT)
		return;
	if (n > s->used[res])
		n = s->used[res];
	s->used[res] -= n;
	s->tenant->used[res] -= n;
}

unsigned registry_apply_policy(struct registry *r, const struct policy *p)
{
	struct list_node *tn, *ttmp, *sn, *stmp;
	unsigned revoked = 0;

	/* Pass 1: new terms for kept classes; mark sessions that change class. */
	list_for_each(tn, &r->tenants) {
		struct tenant *t = list_entry(tn, struct tenant, node);
		const struct ooo_class *keep = policy_find_class(p, t->terms.name);

		if (keep)
			terms_from_class(&t->terms, keep);
		list_for_each(sn, &t->sessions) {
			struct session *s = list_entry(sn, struct session, node);
			const struct ooo_class *c;
			char key[CGROUP_PATH_MAX];

			if (s->revoked)
				continue;
			c = match(p, &s->cred);
			if (c)
				peer_key(&s->cred, c, key);
			/* another class, or the same class with another tenant_by */
			s->moving = c && (c != keep || strcmp(key, t->key));
			if (!c) {
				s->revoked = true;
				revoked++;
			}
		}
	}
	/*
	 * Pass 2: move marked sessions. A session lands at the tail of another
	 * tenant's list with its mark cleared, so it is never moved twice. If
	 * the new tenant cannot be allocated the session is revoked instead,
	 * staying where it is until the caller closes it.
	 */
	list_for_each(tn, &r->tenants) {
		struct tenant *t = list_entry(tn, struct tenant, node);

		list_for_each_safe(sn, stmp, &t->sessions) {
			struct session *s = list_entry(sn, struct session, node);
			struct tenant *to;

			if (!s->moving)
				continue;
			s->moving = false;
			to = tenant_get(r, &s->cred, match(p, &s->cred));
			if (!to) {
				s->revoked = true;
				revoked++;
				continue;
			}
			detach(s);
			attach(s, to);
		}
	}
	/* Pass 3: tenants left without sessions. */
	list_for_each_safe(tn, ttmp, &r->tenants)
		tenant_put(r, list_entry(tn, struct tenant, node));
	return revoked;
}

bool registry_admin_allowed(const struct policy *p, const struct peer_cred *cred, uid_t daemon_uid)
{
	if (cred->uid == 0 || cred->uid == daemon_uid)
		return true;
	if (!p->has_admin_group)
		return false;
	if (cred->gid == p->admin_gid)
		return true;
	for (uint32_t i = 0; i < cred->ngroups; i++) {
		if (cred->groups[i] == p->admin_gid)
			return true;
	}
	return false;
}
