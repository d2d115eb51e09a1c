/* SPDX-License-Identifier: MIT */
/* oooctl leases, evict, mps: native tenants' MPS leases and the MPS control daemon. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/args.h"
#include "../json.h"
#include "oooctl.h"

static const char *mps_state_name(uint32_t s)
{
	switch (s) {
	case OOO_MPS_OFF: return "off";
	case OOO_MPS_STARTING: return "starting";
	case OOO_MPS_RUNNING: return "running";
	case OOO_MPS_RESTARTING: return "restarting";
	case OOO_MPS_FAILED: return "failed";
	case OOO_MPS_STOPPING: return "stopping";
	default: return "unknown";
	}
}

static int get_mps(ooo_session *s, struct ooo_msg_mps *m)
{
	int r = admin_call(s, OOO_MSG_MPS, NULL, 0, m, sizeof(*m));

	if (r >= 0 && (size_t)r != sizeof(*m)) {
		snprintf(reason, sizeof(reason), "mps reply of %d bytes, expected %zu", r, sizeof(*m));
		return -OOO_EPROTO;
	}
	return r < 0 ? r : 0;
}

static void print_mps(const struct ooo_msg_mps *m, bool gpus)
{
	char b[64];

	sanitize((char *)m->reason);
	kv("mps", "%s%s%s", mps_state_name(m->state), m->reason[0] ? ": " : "", m->reason);
	if (m->pid)
		kv("control daemon", "pid %" PRIu32 " (%s -f%s), %" PRIu32 " restarts", m->pid, m->control,
		   m->multiuser ? " -M" : "", m->restarts);
	if (m->pipe_dir[0])
		kv("pipe directory", "%s", m->pipe_dir);
	kv("leases", "%" PRIu32 " live, %" PRIu64 " granted, %" PRIu64 " refused, %" PRIu64 " evicted", m->leases,
	   m->leases_total, m->refused, m->evicted);
	kv("executor", "%s", m->executor_client ? "an MPS client at 100% on each GPU" : "not an MPS client");
	kv("commands", "%" PRIu64 " run, %" PRIu64 " failed or refused", m->commands, m->command_errors);
	if (m->feedback[0]) {
		sanitize((char *)m->feedback);
		kv("feedback", "%s", m->feedback);
	}
	for (uint32_t d = 0; gpus && d < m->ngpus && d < OOO_MPS_GPUS; d++) {
		snprintf(b, sizeof(b), "gpu%" PRIu32, d);
		kv(b, "%" PRIu32 "%% reserved, %" PRIu32 " leases, %" PRIu32 " of %" PRIu32 " MPS clients",
		   m->gpus[d].reserved_pct, m->gpus[d].leases, m->gpus[d].clients, m->max_clients);
	}
}

static void j_mps(const struct ooo_msg_mps *m)
{
	j_str("state", mps_state_name(m->state));
	j_str("reason", m->reason[0] ? m->reason : NULL);
	j_u64("pid", m->pid);
	j_u64("restarts", m->restarts);
	j_str("control", m->control[0] ? m->control : NULL);
	j_str("pipe_dir", m->pipe_dir[0] ? m->pipe_dir : NULL);
	j_bool("multiuser", m->multiuser);
	j_bool("executor_client", m->executor_client);
	j_u64("max_clients", m->max_clients);
	j_u64("leases", m->leases);
	j_u64("leases_total", m->leases_total);
	j_u64("refused", m->refused);
	j_u64("evicted", m->evicted);
	j_u64("commands", m->commands);
	j_u64("command_errors", m->command_errors);
	j_str("feedback", m->feedback[0] ? m->feedback : NULL);
	j_arr("gpus");
	for (uint32_t d = 0; d < m->ngpus && d < OOO_MPS_GPUS; d++) {
		j_obj(NULL);
		j_u64("index", d);
		j_u64("reserved_pct", m->gpus[d].reserved_pct);
		j_u64("leases", m->gpus[d].leases);
		j_u64("clients", m->gpus[d].clients);
		j_obj_end();
	}
	j_arr_end();
}

static int cmp_lease(const void *a, const void *b)
{
	const struct ooo_lease_rec *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int do_leases(int argc, char **argv)
{
	static const char *const cols[] = { ">LEASE", ">PID", "USER", "CLASS", ">GPU", ">SM", ">MEM", "PRIO",
					    ">AGE", ">LAUNCHES", ">SYNC-P99", "FLAGS", "COMMAND" };
	struct ooo_lease_rec *ls = NULL;
	struct ooo_msg_mps m;
	struct table tab;
	ooo_session *s;
	size_t n = 0;
	int rc, r;

	if ((rc = no_args(argc, argv)))
		return rc;
	if (!(s = admin_open(&rc)))
		return rc;
	r = get_mps(s, &m);
	if (r == 0)
		r = fetch_list(s, OOO_MSG_LEASES, sizeof(*ls), (void **)&ls, &n);
	ooo_close(s);
	if (r < 0)
		return report("leases", r);
	if (n)
		qsort(ls, n, sizeof(*ls), cmp_lease);
	if (opt_json) {
		j_obj(NULL);
		j_obj("mps");
		j_mps(&m);
		j_obj_end();
		j_arr("leases");
		for (size_t i = 0; i < n; i++) {
			j_obj(NULL);
			j_u64("id", ls[i].id);
			j_u64("pid", ls[i].pid);
			j_u64("uid", ls[i].uid);
			j_str("user", user_name(ls[i].uid));
			j_str("class", ls[i].class_name);
			j_u64("device", ls[i].device);
			j_u64("sm_pct", ls[i].sm_pct);
			j_u64("mem_bytes", ls[i].mem_bytes);
			j_str("priority", ls[i].priority == OOO_LEASE_PRIO_BELOW ? "below" : "normal");
			j_u64("age_ns", ls[i].age_ns);
			j_u64("launches", ls[i].launches);
			j_u64("syncs", ls[i].syncs);
			j_u64("sync_p99_ns", ls[i].sync_p99_ns);
			j_bool("slow", ls[i].flags & OOO_LEASE_SLOW);
			j_bool("evicted", ls[i].flags & OOO_LEASE_EVICTED);
			j_str("command", ls[i].cmd);
			j_obj_end();
		}
		j_arr_end();
		j_obj_end();
		free(ls);
		return RC_OK;
	}
	print_mps(&m, true);
	if (!n) {
		printf("no leases\n");
		free(ls);
		return RC_OK;
	}
	printf("\n");
	table_init(&tab, 13, cols);
	for (size_t i = 0; i < n; i++) {
		char b[64];

		sanitize(ls[i].cmd);
		table_cell(&tab, "%" PRIu64, ls[i].id);
		table_cell(&tab, "%" PRIu32, ls[i].pid);
		table_cell(&tab, "%s", user_label(ls[i].uid, b, sizeof(b)));
		table_cell(&tab, "%s", ls[i].class_name);
		table_cell(&tab, "%" PRIu32, ls[i].device);
		table_cell(&tab, "%" PRIu32 "%%", ls[i].sm_pct);
		table_cell(&tab, "%s", fmt_size(b, sizeof(b), ls[i].mem_bytes));
		table_cell(&tab, "%s", ls[i].priority == OOO_LEASE_PRIO_BELOW ? "below" : "normal");
		table_cell(&tab, "%s", fmt_dur(b, sizeof(b), ls[i].age_ns));
		table_cell(&tab, "%" PRIu64, ls[i].launches);
		table_cell(&tab, "%s", ls[i].syncs ? fmt_dur(b, sizeof(b), ls[i].sync_p99_ns) : "-");
		table_cell(&tab, "%s%s%s", ls[i].flags & OOO_LEASE_SLOW ? "slow" : "",
			   (ls[i].flags & OOO_LEASE_SLOW) && (ls[i].flags & OOO_LEASE_EVICTED) ? "," : "",
			   ls[i].flags & OOO_LEASE_EVICTED ? "evicted" : ls[i].flags ? "" : "-");
		table_cell(&tab, "%s", ls[i].cmd[0] ? ls[i].cmd : "-");
	}
	table_print(&tab);
	free(ls);
	return RC_OK;
}

int do_evict(int argc, char **argv)
{
	struct ooo_msg_evict req = { 0 };
	struct ooo_msg_evict_reply rep;
	uint64_t v;
	ooo_session *s;
	int rc, r, c;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "g:")) != -1) {
		if (c == 'g') {
			if (args_u64(optarg, 10, 1, 600000, &v) < 0)
				return usage_error("--grace wants milliseconds from 1 to 600000, not '%s'", optarg);
			req.grace_ms = (uint32_t)v;
		} else {
			return RC_USAGE;
		}
	}
	if (argc - optind != 1)
		return usage_error(optind < argc ? "one PID, not more" : "which process? oooctl evict PID");
	if (args_u64(argv[optind], 10, 1, 0x7fffffff, &v) < 0)
		return usage_error("'%s' is not a PID", argv[optind]);
	req.pid = (uint32_t)v;
	if (!(s = admin_open(&rc)))
		return rc;
	r = admin_call(s, OOO_MSG_EVICT, &req, sizeof(req), &rep, sizeof(rep));
	ooo_close(s);
	if (r >= 0 && (size_t)r != sizeof(rep)) {
		snprintf(reason, sizeof(reason), "evict reply of %d bytes, expected %zu", r, sizeof(rep));
		r = -OOO_EPROTO;
	}
	if (r < 0)
		return report("evict", r);
	sanitize(rep.msg);
	if (opt_json) {
		j_obj(NULL);
		j_u64("pid", rep.pid);
		j_str("how", rep.how == OOO_EVICT_MPS ? "terminate_client" : "signal");
		j_str("message", rep.msg);
		j_obj_end();
		return RC_OK;
	}
	printf("%s\n", rep.msg);
	return RC_OK;
}


int do_mps(int argc, char **argv)
{
	struct ooo_msg_mps m;
	ooo_session *s;
	int rc, r;

	optind = 0;
	if (cmd_getopt(argc, argv, "") != -1)
		return RC_USAGE;
	if (optind < argc && !strcmp(argv[optind], "run")) {
		struct ooo_msg_mps_run req;
		struct ooo_msg_mps_run_reply *rep;
		size_t k = 0;

		if (optind + 1 >= argc)
			return usage_error("mps run wants a control command, e.g. oooctl mps run get_server_list");
		memset(&req, 0, sizeof(req));
		for (int i = optind + 1; i < argc; i++) {
			int w = snprintf(req.line + k, sizeof(req.line) - k, "%s%s", k ? " " : "", argv[i]);
			if (w < 0 || (size_t)w >= sizeof(req.line) - k)
				return usage_error("command longer than %u characters", OOO_MPS_LINE_MAX - 1);
			k += (size_t)w;
		}
		if (!(rep = calloc(1, sizeof(*rep))))
			return report("mps run", -ENOMEM);
		if (!(s = admin_open(&rc))) {
			free(rep);
			return rc;
		}
		r = admin_call(s, OOO_MSG_MPS_RUN, &req, sizeof(req), rep, sizeof(*rep));
		ooo_close(s);
		if (r >= 0 && (size_t)r != sizeof(*rep)) {
			snprintf(reason, sizeof(reason), "mps run reply of %d bytes, expected %zu", r, sizeof(*rep));
			r = -OOO_EPROTO;
		}
		if (r < 0) {
			free(rep);
			return report("mps run", r);
		}
		for (char *c = rep->reply; *c; c++) {
			if (((unsigned char)*c < 0x20 && *c != '\n') || (unsigned char)*c >= 0x7f)
				*c = '?';
		}
		if (opt_json) {
			j_obj(NULL);
			j_str("command", req.line);
			j_str("reply", rep->reply);
			j_obj_end();
		} else {
			fputs(rep->reply, stdout);
		}
		free(rep);
		return RC_OK;
	}
	if (optind < argc)
		return usage_error("unknown mps subcommand '%s' (run, or none for the state)", argv[optind]);
	if (!(s = admin_open(&rc)))
		return rc;
	r = get_mps(s, &m);
	ooo_close(s);
	if (r < 0)
		return report("mps", r);
	if (opt_json) {
		j_obj(NULL);
		j_mps(&m);
		j_obj_end();
		return RC_OK;
	}
	print_mps(&m, true);
	return RC_OK;
}


