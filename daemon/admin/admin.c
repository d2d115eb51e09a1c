/* SPDX-License-Identifier: MIT */
/* Replies to admin requests: a read-only view of the server and registry. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "version.h"

#include "../../proto/wire.h"
#include "admin.h"
#include "../executors/gpu.h"
#include "../server.h"

static ssize_t admin_status(struct server *srv, const void *payload, void *buf, size_t cap)
{
	struct ooo_msg_status st;

	if (cap < sizeof(st))
		return -EMSGSIZE;
	memset(&st, 0, sizeof(st));
	wire_strcpy(st.version, sizeof(st.version), OOO_VERSION_STRING " (" OOO_GIT_REV ")");
	st.pid = (uint64_t)getpid();
	st.uptime_ns = server_now_ns() - srv->start_ns;
	st.policy_generation = srv->policy_generation;
	st.policy_loaded_ns = srv->policy_loaded_ns;
	wire_strcpy(st.policy_source, sizeof(st.policy_source), srv->policy->source);
	st.classes = (uint32_t)srv->policy->nclasses;
	st.tenants = srv->reg.ntenants;
	st.sessions = srv->reg.nsessions;
	st.max_sessions = srv->policy->max_sessions;
	st.admin_sessions = srv->nadmin;
	st.max_admin_sessions = srv->policy->max_admin_sessions;
	st.sessions_total = srv->stats.sessions_total;
	st.sessions_refused = srv->stats.sessions_refused;
	st.msgs_in = srv->stats.msgs_in;
	st.msgs_out = srv->stats.msgs_out;
	st.proto_errors = srv->stats.proto_errors;
	st.reloads_failed = srv->stats.reloads_failed;
	gpu_counts(srv, &st.gpus, &st.gpus_ready);
	wire_strcpy(st.gpu_reason, sizeof(st.gpu_reason), gpu_reason(srv));
	memcpy(buf, &st, sizeof(st));
	return sizeof(st);
}

static void fill_tenant(struct ooo_tenant_rec *r, const struct tenant *t)
{
	memset(r, 0, sizeof(*r));
	r->uid = t->uid;
	r->gid = t->gid;
	wire_strcpy(r->class_name, sizeof(r->class_name), t->terms.name);
	memcpy(r->used, t->used, sizeof(r->used));
	memcpy(r->limit, t->terms.limit, sizeof(r->limit));
	cgroup_key_display(r->key, sizeof(r->key), t->key);
}

static void fill_session(struct ooo_session_rec *r, const struct session *s, uint64_t now)
{
	memset(r, 0, sizeof(*r));
	r->id = s->id;
	r->uid = s->cred.uid;
	r->gid = s->cred.gid;
	r->pid = s->cred.pid;
	r->age_ns = now - s->opened_ns;
	r->msgs_in = s->msgs_in;
	wire_strcpy(r->name, sizeof(r->name), s->name);
	wire_strcpy(r->class_name, sizeof(r->class_name), s->tenant->terms.name);
	memcpy(r->used, s->used, sizeof(r->used));
	wire_strcpy(r->domain, sizeof(r->domain), s->domain);
	cgroup_key_display(r->tenant_key, sizeof(r->tenant_key), s->tenant->key);
}

static void device_rec(struct server *srv, const struct gpu *g, void *rec, uint64_t now)
{
	const struct gpu *d = g->have_info && g->info.status == 0 ? g : gpu_dev_info(srv, g->dev);
	struct ooo_device_rec *r = rec;

	r->index = g->idx;
	r->device = g->dev;
	wire_strcpy(r->domain, sizeof(r->domain), g->domain);
	r->state = g->state;
	r->pid = (uint32_t)g->pid;
	r->restarts = g->restarts;
	if (d) {
		r->sm_count = d->info.sm_count;
		r->cc_major = d->info.cc_major;
		r->cc_minor = d->info.cc_minor;
		r->driver_version = d->info.driver_version;
		r->mem_total = d->info.mem_total;
		r->mem_free = d->info.mem_free;
		memcpy(r->uuid, d->info.uuid, sizeof(r->uuid));
		wire_strcpy(r->name, sizeof(r->name), d->info.name);
	}
	r->up_ns = g->state == OOO_DEV_READY ? now - g->ready_ns : 0;
	wire_strcpy(r->reason, sizeof(r->reason), g->reason);
}

/* One record per executor: the counters it last sent, if any. */
static void sched_rec(struct server *srv, const struct gpu *g, void *rec, uint64_t now)
{
	struct ooo_sched_rec *r = rec;

	r->index = g->idx;
	r->device = g->dev;
	wire_strcpy(r->domain, sizeof(r->domain), g->domain);
	r->state = g->state;
	/* have = 0 leaves age_ns and the counters zero */
	r->have = gpu_sched_counters(srv, g->idx, now, &r->c, &r->age_ns) ? 1 : 0;
}

static ssize_t admin_list(struct server *srv, uint16_t type, const struct ooo_msg_list_req *req, void *buf, size_t cap)
{
	struct ooo_msg_list hdr = { .offset = req->offset };
	bool tenants = type == OOO_MSG_TENANTS;
	size_t rec = tenants ? sizeof(struct ooo_tenant_rec) : sizeof(struct ooo_session_rec);
	uint32_t room, total = tenants ? srv->reg.ntenants : srv->reg.nsessions;
	uint64_t now = server_now_ns();
	char *out = (char *)buf + sizeof(hdr);
	struct list_node *tn, *sn;
	uint32_t idx = 0;

	if (type == OOO_MSG_DEVICES)
		return gpu_list_slots(srv, req, buf, cap, sizeof(struct ooo_device_rec), device_rec);
	if (type == OOO_MSG_SCHED)
		return gpu_list_slots(srv, req, buf, cap, sizeof(struct ooo_sched_rec), sched_rec);
	if (type != OOO_MSG_TENANTS && type != OOO_MSG_SESSIONS)
		return -EINVAL;
	if (cap < sizeof(hdr))
		return -EMSGSIZE;
	room = (uint32_t)((cap - sizeof(hdr)) / rec);
	hdr.total = total;
	hdr.rec_size = (uint32_t)rec;
	if (hdr.offset > total)
		hdr.offset = total;
	/* One walk in registry order; entries before the offset are skipped. */
	list_for_each(tn, &srv->reg.tenants) {
		struct tenant *t = list_entry(tn, struct tenant, node);

		if (hdr.count >= room)
			break;
		if (tenants) {
			if (idx++ < hdr.offset)
				continue;
			fill_tenant((struct ooo_tenant_rec *)(void *)(out + hdr.count * rec), t);
			hdr.count++;
			continue;
		}
		if (idx + t->nsessions <= hdr.offset) {
			idx += t->nsessions;
			continue;
		}
		list_for_each(sn, &t->sessions) {
			if (idx++ < hdr.offset)
				continue;
			if (hdr.count >= room)
				break;
			fill_session((struct ooo_session_rec *)(void *)(out + hdr.count * rec),
				     list_entry(sn, struct session, node), now);
			hdr.count++;
		}
	}
	memcpy(buf, &hdr, sizeof(hdr));
	return (ssize_t)(sizeof(hdr) + hdr.count * rec);
}

static ssize_t build_tenants(struct server *srv, const void *payload, void *buf, size_t cap)
{
	return admin_list(srv, OOO_MSG_TENANTS, payload, buf, cap);
}

static ssize_t build_sessions(struct server *srv, const void *payload, void *buf, size_t cap)
{
	return admin_list(srv, OOO_MSG_SESSIONS, payload, buf, cap);
}

static ssize_t build_devices(struct server *srv, const void *payload, void *buf, size_t cap)
{
	return admin_list(srv, OOO_MSG_DEVICES, payload, buf, cap);
}

static ssize_t build_sched(struct server *srv, const void *payload, void *buf, size_t cap)
{
	return admin_list(srv, OOO_MSG_SCHED, payload, buf, cap);
}

static const struct handler handlers[] = {
	{ .type = OOO_MSG_STATUS, .flags = H_ADMIN, .build = admin_status },
	{ .type = OOO_MSG_TENANTS, .flags = H_ADMIN, .build = build_tenants },
	{ .type = OOO_MSG_SESSIONS, .flags = H_ADMIN, .build = build_sessions },
	{ .type = OOO_MSG_DEVICES, .flags = H_ADMIN, .build = build_devices },
	{ .type = OOO_MSG_SCHED, .flags = H_ADMIN, .build = build_sched },
};

const struct module admin_module = {
	.name = "admin views",
	.handlers = handlers,
	.nhandlers = sizeof(handlers) / sizeof(handlers[0]),
};
