/* SPDX-License-Identifier: MIT */
/* oooctl status, tenants, sessions, devices: what oood holds now. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../json.h"
#include "oooctl.h"
#include "sched_calc.h"

/* Sessions of trust domain d, and how many uids they have. */
static void domain_sessions(const struct ooo_session_rec *ss, size_t nss, const char *d, uint32_t *n, uint32_t *uids)
{
	*n = *uids = 0;
	for (size_t i = 0; i < nss; i++) {
		bool seen = false;

		if (strncmp(ss[i].domain, d, sizeof(ss[i].domain)))
			continue;
		(*n)++;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strncmp(ss[j].domain, d, sizeof(ss[j].domain)) && ss[j].uid == ss[i].uid;
		*uids += !seen;
	}
}

int do_status(int argc, char **argv)
{
	struct ooo_msg_status st;
	struct ooo_device_rec *dv = NULL;
	struct ooo_session_rec *ss = NULL;
	size_t ndv = 0, nss = 0;
	char b1[64], b2[64], b3[64];
	ooo_session *s;
	int rc, r;

	if ((rc = no_args(argc, argv)))
		return rc;
	if (!(s = admin_open(&rc)))
		return rc;
	r = get_status(s, &st);
	/* the trust domains: the executors, and the sessions of each domain */
	if (r >= 0 && fetch_list(s, OOO_MSG_DEVICES, sizeof(*dv), (void **)&dv, &ndv) < 0)
		ndv = 0;
	if (r >= 0 && fetch_list(s, OOO_MSG_SESSIONS, sizeof(*ss), (void **)&ss, &nss) < 0)
		nss = 0;
	ooo_close(s);
	if (r < 0) {
		free(dv);
		free(ss);
		return report("status", r);
	}

	if (opt_json) {
		j_obj(NULL);
		j_str("version", st.version);
		j_u64("pid", st.pid);
		j_u64("uptime_ns", st.uptime_ns);
		j_str("policy_source", st.policy_source);
		j_u64("policy_generation", st.policy_generation);
		j_u64("policy_loaded_ns", st.policy_loaded_ns);
		j_str("policy_loaded", fmt_realtime(b1, sizeof(b1), st.policy_loaded_ns, true));
		j_u64("classes", st.classes);
		j_u64("tenants", st.tenants);
		j_u64("sessions", st.sessions);
		j_u64("max_sessions", st.max_sessions);
		j_u64("admin_sessions", st.admin_sessions);
		j_u64("max_admin_sessions", st.max_admin_sessions);
		j_u64("sessions_total", st.sessions_total);
		j_u64("sessions_refused", st.sessions_refused);
		j_u64("msgs_in", st.msgs_in);
		j_u64("msgs_out", st.msgs_out);
		j_u64("proto_errors", st.proto_errors);
		j_u64("reloads_failed", st.reloads_failed);
		j_u64("gpus", st.gpus);
		j_u64("gpus_ready", st.gpus_ready);
		j_str("gpu_reason", st.gpu_reason);
		j_arr("executors");
		for (size_t i = 0; i < ndv; i++) {
			uint32_t n, uids;

			domain_sessions(ss, nss, dv[i].domain, &n, &uids);
			j_obj(NULL);
			j_u64("gpu", dv[i].device);
			j_str("domain", dv[i].domain);
			j_str("state", dev_state(dv[i].state));
			j_u64("pid", dv[i].pid);
			j_u64("domain_sessions", dv[i].domain[0] ? n : 0);
			j_u64("domain_uids", dv[i].domain[0] ? uids : 0);
			j_obj_end();
		}
		j_arr_end();
		j_obj_end();
		free(dv);
		free(ss);
		return RC_OK;
	}
	{
		uint64_t now = realtime_ns();
		uint64_t ago = now > st.policy_loaded_ns ? now - st.policy_loaded_ns : 0;

		kv("oood", "%s, pid %" PRIu64 ", up %s", st.version, st.pid, fmt_dur(b1, sizeof(b1), st.uptime_ns));
		kv("policy", "%s", st.policy_source);
		kv("  generation", "%" PRIu64, st.policy_generation);
		kv("  loaded", "%s (%s ago)", fmt_realtime(b2, sizeof(b2), st.policy_loaded_ns, false),
		   fmt_dur(b3, sizeof(b3), ago));
		kv("  classes", "%" PRIu32, st.classes);
		kv("tenants", "%" PRIu32, st.tenants);
		kv("sessions", "%" PRIu32 " / %" PRIu32, st.sessions, st.max_sessions);
		kv("admin sessions", "%" PRIu32 " / %" PRIu32, st.admin_sessions, st.max_admin_sessions);
		kv("sessions admitted", "%" PRIu64, st.sessions_total);
		kv("sessions refused", "%" PRIu64, st.sessions_refused);
		kv("messages", "%" PRIu64 " in, %" PRIu64 " out", st.msgs_in, st.msgs_out);
		kv("protocol errors", "%" PRIu64, st.proto_errors);
		kv("failed reloads", "%" PRIu64, st.reloads_failed);
		if (st.gpu_reason[0])
			kv("gpus", "%" PRIu32 " ready of %" PRIu32 ": %s", st.gpus_ready, st.gpus, st.gpu_reason);
		else
			kv("gpus", "%" PRIu32 " ready of %" PRIu32, st.gpus_ready, st.gpus);
		if (ndv)
			kv("executors", "%zu (one per GPU and trust domain, and each GPU's spare)", ndv);
		for (size_t i = 0; i < ndv; i++) {
			char key[64];
			uint32_t n, uids;

			snprintf(key, sizeof(key), "  gpu%" PRIu32 " %s", dv[i].device,
				 DOMAIN_NAME(dv[i].domain));
			domain_sessions(ss, nss, dv[i].domain, &n, &uids);
			if (dv[i].domain[0])
				kv(key, "%s, pid %" PRIu32 "; domain: %" PRIu32 " session%s of %" PRIu32 " uid%s",
				   dev_state(dv[i].state), dv[i].pid, n, n == 1 ? "" : "s", uids, uids == 1 ? "" : "s");
			else
				kv(key, "%s, pid %" PRIu32, dev_state(dv[i].state), dv[i].pid);
		}
	}
	free(dv);
	free(ss);
	return RC_OK;
}

/* ---- tenants and sessions ------------------------------------------------------ */


static int cmp_tenant(const void *a, const void *b)
{
	const struct ooo_tenant_rec *x = a, *y = b;

	int r;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	r = strcmp(x->class_name, y->class_name);
	return r ? r : strcmp(x->key, y->key);
}

/* A tenant key's pod UID: the key unless it is "" or a cgroup path (tenant_by, ooo_tenant_rec.key). */
static const char *key_pod(const char *key)
{
	return key[0] == '/' ? "" : key;
}

static int cmp_session(const void *a, const void *b)
{
	const struct ooo_session_rec *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* "used/limit" for a tenant's resource. */
static const char *fmt_used(char *buf, size_t cap, uint64_t used, uint64_t limit, bool bytes)
{
	char u[32], l[32];

	if (bytes)
		fmt_size(u, sizeof(u), used);
	else
		snprintf(u, sizeof(u), "%" PRIu64, used);
	snprintf(buf, cap, "%s/%s", u, fmt_limit(l, sizeof(l), limit, bytes));
	return buf;
}

int do_tenants(int argc, char **argv)
{
	static const char *const cols[] = { ">UID", "USER", "CLASS", "POD", ">SESSIONS", ">QUEUES", ">BUFFERS",
					    ">MEMORY", ">MODULES", ">INFLIGHT" };
	struct ooo_tenant_rec *t;
	struct table tab;
	size_t n;
	int rc;

	rc = list_command(argc, argv, OOO_MSG_TENANTS, sizeof(*t), "tenants", (void **)&t, &n);
	if (rc != RC_OK)
		return rc;
	if (n)
		qsort(t, n, sizeof(*t), cmp_tenant);

	if (opt_json) {
		j_obj(NULL);
		j_arr("tenants");
		for (size_t i = 0; i < n; i++) {
			j_obj(NULL);
			j_u64("uid", t[i].uid);
			j_str("user", user_name(t[i].uid));
			j_u64("gid", t[i].gid);
			j_str("class", t[i].class_name);
			j_str("key", t[i].key);
			j_str("pod", key_pod(t[i].key));
			j_res("used", t[i].used);
			j_res("limit", t[i].limit);
			j_obj_end();
		}
		j_arr_end();
		j_obj_end();
		free(t);
		return RC_OK;
	}
	if (!n) {
		printf("no tenants\n");
		free(t);
		return RC_OK;
	}
	table_init(&tab, 10, cols);
	for (size_t i = 0; i < n; i++) {
		const uint64_t *u = t[i].used, *l = t[i].limit;
		char b[96];

		table_cell(&tab, "%" PRIu32, t[i].uid);
		table_cell(&tab, "%s", user_label(t[i].uid, b, sizeof(b)));
		table_cell(&tab, "%s", t[i].class_name);
		/* the pod UID, or the cgroup of a tenant_by = cgroup tenant outside pods */
		table_cell(&tab, "%s", t[i].key[0] ? t[i].key : "-");
		for (int k = 0; k < OOO_RES_COUNT; k++)
			table_cell(&tab, "%s", fmt_used(b, sizeof(b), u[k], l[k], k == OOO_RES_MEM_BYTES));
	}
	table_print(&tab);
	free(t);
	return RC_OK;
}

int do_sessions(int argc, char **argv)
{
	static const char *const cols[] = { ">ID", ">PID", ">UID", "USER", "CLASS", "POD", "DOMAIN", "NAME", ">AGE",
					    ">MESSAGES" };
	struct ooo_session_rec *ss;
	struct table tab;
	size_t n;
	int rc;

	rc = list_command(argc, argv, OOO_MSG_SESSIONS, sizeof(*ss), "sessions", (void **)&ss, &n);
	if (rc != RC_OK)
		return rc;
	if (n)
		qsort(ss, n, sizeof(*ss), cmp_session);

	if (opt_json) {
		j_obj(NULL);
		j_arr("sessions");
		for (size_t i = 0; i < n; i++) {
			j_obj(NULL);
			j_u64("id", ss[i].id);
			j_u64("pid", ss[i].pid);
			j_u64("uid", ss[i].uid);
			j_str("user", user_name(ss[i].uid));
			j_u64("gid", ss[i].gid);
			j_str("class", ss[i].class_name);
			j_str("key", ss[i].tenant_key);
			j_str("pod", key_pod(ss[i].tenant_key));
			j_str("domain", ss[i].domain);
			j_str("name", ss[i].name);
			j_u64("age_ns", ss[i].age_ns);
			j_u64("msgs_in", ss[i].msgs_in);
			j_res("used", ss[i].used);
			j_obj_end();
		}
		j_arr_end();
		j_obj_end();
		free(ss);
		return RC_OK;
	}
	if (!n) {
		printf("no sessions\n");
		free(ss);
		return RC_OK;
	}
	table_init(&tab, 10, cols);
	for (size_t i = 0; i < n; i++) {
		char b[64];

		table_cell(&tab, "%" PRIu64, ss[i].id);
		table_cell(&tab, "%" PRIu32, ss[i].pid);
		table_cell(&tab, "%" PRIu32, ss[i].uid);
		table_cell(&tab, "%s", user_label(ss[i].uid, b, sizeof(b)));
		table_cell(&tab, "%s", ss[i].class_name);
		table_cell(&tab, "%s", ss[i].tenant_key[0] ? ss[i].tenant_key : "-");
		table_cell(&tab, "%s", ss[i].domain);
		table_cell(&tab, "%s", ss[i].name[0] ? ss[i].name : "-");
		table_cell(&tab, "%s", fmt_dur(b, sizeof(b), ss[i].age_ns));
		table_cell(&tab, "%" PRIu64, ss[i].msgs_in);
	}
	table_print(&tab);
	free(ss);
	return RC_OK;
}

/* ---- devices ------------------------------------------------------------------- */


static const char *fmt_uuid(char *buf, size_t cap, const uint8_t u[16])
{
	static const int dash[] = { 4, 6, 8, 10 };
	size_t k = 0;

	for (int i = 0, d = 0; i < 16 && k + 3 < cap; i++) {
		if (d < 4 && i == dash[d]) {
			buf[k++] = '-';
			d++;
		}
		k += (size_t)snprintf(buf + k, cap - k, "%02x", u[i]);
	}
	buf[k < cap ? k : cap - 1] = '\0';
	return buf;
}

int do_devices(int argc, char **argv)
{
	static const char *const cols[] = { ">GPU", "DOMAIN", "STATE", "NAME", ">SMS", ">CC", ">MEMORY", ">PID", ">RESTARTS",
					    "NOTE" };
	struct ooo_device_rec *d;
	struct table tab;
	size_t n;
	int rc;

	rc = list_command(argc, argv, OOO_MSG_DEVICES, sizeof(*d), "devices", (void **)&d, &n);
	if (rc != RC_OK)
		return rc;
	if (opt_json) {
		char u[40];

		j_obj(NULL);
		j_arr("devices");
		for (size_t i = 0; i < n; i++) {
			j_obj(NULL);
			j_u64("index", d[i].index);
			j_u64("device", d[i].device);
			j_str("domain", d[i].domain);
			j_str("state", dev_state(d[i].state));
			j_str("name", d[i].name);
			j_str("uuid", fmt_uuid(u, sizeof(u), d[i].uuid));
			j_u64("sm_count", d[i].sm_count);
			j_u64("cc_major", d[i].cc_major);
			j_u64("cc_minor", d[i].cc_minor);
			j_u64("driver_version", (uint64_t)d[i].driver_version);
			j_u64("mem_total", d[i].mem_total);
			j_u64("mem_free", d[i].mem_free);
			j_u64("executor_pid", d[i].pid);
			j_u64("restarts", d[i].restarts);
			j_u64("up_ns", d[i].up_ns);
			j_str("reason", d[i].reason);
			j_obj_end();
		}
		j_arr_end();
		j_obj_end();
		free(d);
		return RC_OK;
	}
	if (!n) {
		printf("no GPU executors (executor = no in the configuration)\n");
		free(d);
		return RC_OK;
	}
	table_init(&tab, 10, cols);
	for (size_t i = 0; i < n; i++) {
		char b[64];

		table_cell(&tab, "%" PRIu32, d[i].device);
		table_cell(&tab, "%s", DOMAIN_NAME(d[i].domain));
		table_cell(&tab, "%s", dev_state(d[i].state));
		table_cell(&tab, "%s", d[i].name[0] ? d[i].name : "-");
		table_cell(&tab, "%" PRIu32, d[i].sm_count);
		table_cell(&tab, "%" PRIu32 ".%" PRIu32, d[i].cc_major, d[i].cc_minor);
		table_cell(&tab, "%s", d[i].mem_total ? fmt_size(b, sizeof(b), d[i].mem_total) : "-");
		table_cell(&tab, "%" PRIu32, d[i].pid);
		table_cell(&tab, "%" PRIu32, d[i].restarts);
		table_cell(&tab, "%s", d[i].reason[0] ? d[i].reason : "");
	}
	table_print(&tab);
	free(d);
	return RC_OK;
}

