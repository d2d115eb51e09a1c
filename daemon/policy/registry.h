/* SPDX-License-Identifier: MIT */
/*
 * Tenant registry: who is connected and what each tenant holds.
 *
 * A tenant is a (uid, class, key) triple: every session of one uid placed
 * in one class with one key shares the tenant's limits. The key is "" but
 * under a class's tenant_by = pod or cgroup, where it is the pod UID or
 * cgroup path of the peer's cgroup (cgroup_tenant_key), so that two pods
 * of one uid are two tenants. Each session records what it holds, so
 * closing it returns exactly that to its tenant; a tenant is freed with its
 * last session. Pure logic: no I/O, time is passed in.
 *
 * Owner: the server owns the registry; the registry owns tenants and
 * sessions. A connection points at its session until it calls
 * registry_close().
 */
#ifndef OOO_REGISTRY_H
#define OOO_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ooo/proto.h>

#include "cgroup.h"
#include "policy.h"

#define REG_MAX_GROUPS 64 /* supplementary groups kept per peer */
#define REG_EXEC_SLOTS 256 /* gpu.h's EXEC_MAX: the executor slots a session may have touched */

struct peer_cred {
	uint32_t pid, uid, gid;
	uint32_t ngroups;
	gid_t groups[REG_MAX_GROUPS];
	/*
	 * The connecting process's cgroup v2 path when oood accepted it, read
	 * through its pidfd (server.c); "" when unknown (no SO_PEERPIDFD, the
	 * process gone, an unreadable or ambiguous /proc/PID/cgroup).
	 */
	char cgroup[CGROUP_PATH_MAX];
};

/* A connection named by its server slot and generation, for answers that come later. */
struct conn_ref {
	uint32_t slot, gen;
};

struct list_node {
	struct list_node *prev, *next;
};

/* What a tenant gets from its class, copied so a reload cannot leave it dangling. */
struct class_terms {
	char name[OOO_NAME_MAX];
	int32_t priority;
	uint32_t slo_us;
	uint32_t sm_share;
	bool trace_launches; /* telemetry probes its sessions' cuLaunchKernel calls */
	bool binary_modules; /* may load CUBIN and FATBIN modules */
	uint32_t wait_spin_us; /* libooo's spin before it sleeps (struct ooo_class) */
	uint64_t limit[OOO_RES_COUNT];
};

struct tenant {
	struct list_node node; /* in registry.tenants */
	struct list_node sessions;
	uint32_t uid, gid;
	uint32_t nsessions;
	char key[CGROUP_PATH_MAX]; /* "" (by uid), a pod UID, or a cgroup path (cgroup_tenant_key) */
	struct class_terms terms;
	uint64_t used[OOO_RES_COUNT];
};

struct session {
	struct list_node node; /* in tenant.sessions */
	struct tenant *tenant;
	uint64_t id;
	struct peer_cred cred;
	char name[OOO_NAME_MAX];
	char domain[OOO_DOMAIN_MAX]; /* its trust domain (the class's domain, else "uid:UID"), fixed at admission */
	uint64_t opened_ns;
	uint64_t msgs_in;
	uint64_t used[OOO_RES_COUNT];
	bool moving;  /* registry_apply_policy's mark */
	bool revoked; /* no longer admitted: waiting for the caller to close it */
	struct list_node bufs; /* the server's buffers of this session (buffers.c); empty at close */
	struct sdpath *dp;     /* the session's data path (dpath.c), NULL until attached */
	bool tm_tracked, tm_launches; /* its pid is in the telemetry set, launch probes too (telemetry.c) */
	uint8_t exec_seen[REG_EXEC_SLOTS / 8]; /* executor slots it sent memory or an attach to: each is told at its end */
	void *owner; /* the connection, for the server */
};

struct registry {
	struct list_node tenants;
	uint32_t ntenants;
	uint32_t nsessions;
	uint64_t next_id;
};

void registry_init(struct registry *r);

/*
 * Admit a peer: find its class (first match in the policy), check the
 * daemon-wide session limit and the tenant's session limit, and create the
 * session with one session charged. Returns 0 and stores the session in
 * *out, or -OOO_EDENIED / -OOO_ELIMIT / -ENOMEM with a reason in why.
 */
int registry_admit(struct registry *r, const struct policy *p, const struct peer_cred *cred, const char *name,
		   uint64_t now_ns, struct session **out, char *why, size_t why_cap);

/* Release everything the session holds and free it; frees its tenant with its last session. Accepts NULL. */
void registry_close(struct registry *r, struct session *s);

/*
 * Charge n units of resource `res` to the session and its tenant. Returns 0
 * or -OOO_ELIMIT (nothing charged) if the tenant would exceed its limit.
 */
int session_charge(struct session *s, enum ooo_res res, uint64_t n);

/* Charge without checking the limit (rounding a charge already admitted). */
void session_charge_force(struct session *s, enum ooo_res res, uint64_t n);

/* Return n units (at most what the session holds). */
void session_uncharge(struct session *s, enum ooo_res res, uint64_t n);

/*
 * Apply a new policy: every session is matched again (with the cgroup it
 * had when admitted). A session whose peer
 * is no longer admitted gets `revoked` set (the caller tells its peer and
 * closes it with registry_close after this returns; a revoked session is not
 * matched again by later reloads). A session placed in another class moves
 * to that class's tenant (so does one whose tenant key changes: tenant_by),
 * keeping what it holds even if that exceeds the new
 * limits (new charges are refused until it is back under). Returns the
 * number of sessions newly revoked.
 */
unsigned registry_apply_policy(struct registry *r, const struct policy *p);

/*
 * May this peer use admin.sock? Root, the daemon's own uid (a private
 * instance run by a user), and members of the policy's admin group.
 */
bool registry_admin_allowed(const struct policy *p, const struct peer_cred *cred, uid_t daemon_uid);

#define list_entry(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#define list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
#define list_for_each_safe(pos, tmp, head)                                                                 \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); (pos) = (tmp), (tmp) = (pos)->next)

static inline void list_init(struct list_node *h)
{
	h->prev = h->next = h;
}

static inline bool list_empty(const struct list_node *h)
{
	return h->next == h;
}

static inline void list_add_tail(struct list_node *h, struct list_node *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

#endif
