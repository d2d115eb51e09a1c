/* SPDX-License-Identifier: MIT */
/* oooctl reload, pardon, partition, ping, version: requests that act on oood or probe it. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/args.h"
#include "../json.h"
#include "oooctl.h"
#include "sched_calc.h"
#include "version.h"
#ifndef OOO_GIT_REV
#define OOO_GIT_REV "unknown"
#endif

/* ---- reload -------------------------------------------------------------------- */

int do_reload(int argc, char **argv)
{
	struct ooo_msg_reload_reply rr;
	ooo_session *s;
	int rc, r;

	if ((rc = no_args(argc, argv)))
		return rc;
	if (!(s = admin_open(&rc)))
		return rc;
	r = admin_call(s, OOO_MSG_RELOAD, NULL, 0, &rr, sizeof(rr));
	ooo_close(s);
	if (r >= 0 && (size_t)r != sizeof(rr)) {
		snprintf(reason, sizeof(reason), "reload reply of %d bytes, expected %zu", r, sizeof(rr));
		r = -OOO_EPROTO;
	}
	if (r < 0) {
		char buf[1024];

		rc = describe(r, buf, sizeof(buf));
		/* Only a refusal by the daemon is a reload result; transport errors are not. */
		if (opt_json && rc == RC_FAIL) {
			j_obj(NULL);
			j_bool("ok", false);
			j_str("error", buf);
			j_obj_end();
		}
		return report("reload", r);
	}
	if (opt_json) {
		j_obj(NULL);
		j_bool("ok", true);
		j_u64("policy_generation", rr.policy_generation);
		j_str("message", rr.msg);
		j_obj_end();
		return RC_OK;
	}
	sanitize(rr.msg);
	/* the daemon's message already says what changed, generation included */
	if (rr.msg[0])
		printf("reloaded: %s\n", rr.msg);
	else
		printf("reloaded: policy generation %" PRIu64 "\n", rr.policy_generation);
	return RC_OK;
}


/* ---- ping ---------------------------------------------------------------------- */

int do_ping(int argc, char **argv)
{
	uint64_t count = 10;
	int64_t min = INT64_MAX, max = 0, sum = 0;
	ooo_session *s;
	int c, rc;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "c:")) != -1) {
		if (c == 'c' && args_u64(optarg, 10, 1, 1000000, &count) < 0)
			return usage_error("-c wants a count from 1 to 1000000, not '%s'", optarg);
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!(s = admin_open(&rc)))
		return rc;
	for (uint64_t i = 0; i < count; i++) {
		int64_t t0 = mono_ns(), dt;
		int r;

		reason[0] = 0;
		r = ooo_ping(s);
		dt = mono_ns() - t0;
		if (r < 0) {
			take_reason();
			ooo_close(s);
			return report("ping", r);
		}
		min = dt < min ? dt : min;
		max = dt > max ? dt : max;
		sum += dt;
	}
	ooo_close(s);
	if (opt_json) {
		j_obj(NULL);
		j_str("socket", admin_path);
		j_u64("count", count);
		j_num("min_us", (double)min / 1e3, 3);
		j_num("avg_us", (double)sum / (double)count / 1e3, 3);
		j_num("max_us", (double)max / 1e3, 3);
		j_obj_end();
		return RC_OK;
	}
	printf("%s: %" PRIu64 " round trip%s, min/avg/max = %.1f/%.1f/%.1f us\n", admin_path, count, count == 1 ? "" : "s",
	       (double)min / 1e3, (double)sum / (double)count / 1e3, (double)max / 1e3);
	return RC_OK;
}

/* ---- version -------------------------------------------------------------------- */

int do_version(int argc, char **argv)
{
	struct ooo_msg_status st;
	char why[1024] = "";
	bool have = false;
	ooo_session *s;
	int rc, err;

	if ((rc = no_args(argc, argv)))
		return rc;
	/* The daemon's version is a bonus: its absence is reported, not an error. */
	s = admin_open_quiet(&err);
	if (s) {
		err = get_status(s, &st);
		ooo_close(s);
		have = err == 0;
	}
	if (!have)
		describe(err, why, sizeof(why));

	if (opt_json) {
		j_obj(NULL);
		j_str("oooctl_version", OOO_VERSION_STRING);
		j_str("git_rev", OOO_GIT_REV);
		j_str("socket", admin_path);
		if (have) {
			j_str("oood_version", st.version);
			j_u64("oood_pid", st.pid);
			j_null("oood_error");
		} else {
			j_null("oood_version");
			j_null("oood_pid");
			j_str("oood_error", why);
		}
		j_obj_end();
		return RC_OK;
	}
	printf("oooctl %s (git %s)\n", OOO_VERSION_STRING, OOO_GIT_REV);
	if (have) {
		sanitize(st.version);
		printf("oood %s (pid %" PRIu64 ", %s)\n", st.version, st.pid, admin_path);
	} else {
		printf("oood: version unknown: %s\n", why);
	}
	return RC_OK;
}


/* ---- pardon -------------------------------------------------------------------- */

int do_pardon(int argc, char **argv)
{
	struct ooo_msg_pardon req = { 0 };
	struct ooo_msg_pardon_reply rep;
	uint64_t v;
	ooo_session *s;
	int rc, r, c;

	optind = 0;
	if ((c = cmd_getopt(argc, argv, "")) != -1)
		return RC_USAGE; /* no options of its own */
	if (argc - optind != 1)
		return usage_error(optind < argc ? "one tenant, not more" : "which tenant? oooctl pardon UID|USER");
	if (args_u64(argv[optind], 10, 0, 0xfffffffeu, &v) == 0) {
		req.uid = (uint32_t)v;
	} else {
		struct passwd *pw = getpwnam(argv[optind]);

		if (!pw)
			return usage_error("'%s' is neither a uid nor a user", argv[optind]);
		req.uid = (uint32_t)pw->pw_uid;
	}
	if (!(s = admin_open(&rc)))
		return rc;
	r = admin_call(s, OOO_MSG_PARDON, &req, sizeof(req), &rep, sizeof(rep));
	ooo_close(s);
	if (r >= 0 && (size_t)r != sizeof(rep)) {
		snprintf(reason, sizeof(reason), "pardon reply of %d bytes, expected %zu", r, sizeof(rep));
		r = -OOO_EPROTO;
	}
	if (r < 0)
		return report("pardon", r);
	sanitize(rep.msg);
	if (opt_json) {
		j_obj(NULL);
		j_u64("uid", rep.uid);
		j_u64("hangs", rep.hangs);
		j_bool("barred", rep.barred != 0);
		j_str("message", rep.msg);
		j_obj_end();
		return RC_OK;
	}
	printf("%s\n", rep.msg);
	return RC_OK;
}

/* ---- partition ---------------------------------------------------------------- */


/* Whether GPU r has answered plan `gen` (or a later one), or never will (not ready, or it got no plan). */
static bool part_settled(const struct ooo_part_gpu_rec *r, uint64_t gen)
{
	return r->state != OOO_DEV_READY || r->answered >= gen || r->generation < gen;
}

static void part_print(const struct ooo_part_gpu_rec *g, size_t n)
{
	static const char *const cols[] = { ">GPU", "DOMAIN", "PARTITION", "CLASS", ">ASKED", ">SMS", "SOURCE" };
	struct table tab;

	table_init(&tab, 7, cols);
	for (size_t i = 0; i < n; i++) {
		bool applied = g[i].generation && g[i].answered == g[i].generation && g[i].status == 0;

		for (uint32_t k = 0; k < g[i].n; k++) {
			table_cell(&tab, "%" PRIu32, g[i].device);
			table_cell(&tab, "%s", DOMAIN_NAME(g[i].domain));
			table_cell(&tab, "%" PRIu32, k + 1);
			table_cell(&tab, "%s", g[i].p[k].class_name);
			table_cell(&tab, "%" PRIu32, g[i].p[k].asked);
			table_cell(&tab, applied ? "%" PRIu32 : "-", g[i].p[k].sms);
			table_cell(&tab, "%s", g[i].p[k].source == OOO_PART_OOOCTL ? "oooctl" : "policy");
		}
		table_cell(&tab, "%" PRIu32, g[i].device);
		table_cell(&tab, "%s", DOMAIN_NAME(g[i].domain));
		table_cell(&tab, "shared");
		table_cell(&tab, "(the others)");
		table_cell(&tab, "-");
		if (applied && g[i].n)
			table_cell(&tab, "%" PRIu32, g[i].shared_sms);
		else if (g[i].sm_count && (applied || !g[i].n))
			table_cell(&tab, "%" PRIu32, g[i].sm_count);
		else
			table_cell(&tab, "-");
		table_cell(&tab, "-");
	}
	table_print(&tab);
	for (size_t i = 0; i < n; i++) {
		if (g[i].state != OOO_DEV_READY)
			printf("gpu%" PRIu32 " %s: %s: its executor gets the plan when it is ready\n", g[i].device, DOMAIN_NAME(g[i].domain),
			       dev_state(g[i].state));
		else if (!g[i].generation)
			printf("gpu%" PRIu32 " %s: no plan: %s\n", g[i].device, DOMAIN_NAME(g[i].domain), g[i].reason[0] ? g[i].reason : "-");
		else if (g[i].answered < g[i].generation)
			printf("gpu%" PRIu32 " %s: plan %" PRIu64 " sent, not answered yet\n", g[i].device, DOMAIN_NAME(g[i].domain), g[i].generation);
		else if (g[i].status < 0)
			printf("gpu%" PRIu32 " %s: plan %" PRIu64 " refused, the partitions are as they were: %s\n", g[i].device, DOMAIN_NAME(g[i].domain),
			       g[i].generation, g[i].reason);
		else if (g[i].n)
			printf("gpu%" PRIu32 " %s: plan %" PRIu64 " applied (green contexts, split granule %" PRIu32 " SMs)\n",
			       g[i].device, DOMAIN_NAME(g[i].domain), g[i].generation, g[i].granule);
		else
			printf("gpu%" PRIu32 " %s: plan %" PRIu64 " applied: no reserved partitions, every class shares the GPU\n",
			       g[i].device, DOMAIN_NAME(g[i].domain), g[i].generation);
	}
}

static void part_json(const struct ooo_part_gpu_rec *g, size_t n)
{
	j_arr("gpus");
	for (size_t i = 0; i < n; i++) {
		bool applied = g[i].generation && g[i].answered == g[i].generation && g[i].status == 0;

		j_obj(NULL);
		j_u64("index", g[i].index);
		j_u64("device", g[i].device);
		j_str("domain", g[i].domain);
		j_str("state", dev_state(g[i].state));
		j_u64("sm_count", g[i].sm_count);
		j_u64("plan", g[i].generation);
		j_u64("answered", g[i].answered);
		j_bool("applied", applied);
		j_i64("status", g[i].status);
		j_str("reason", g[i].reason);
		j_u64("granule", g[i].granule);
		j_arr("partitions");
		for (uint32_t k = 0; k < g[i].n; k++) {
			j_obj(NULL);
			j_str("class", g[i].p[k].class_name);
			j_u64("asked", g[i].p[k].asked);
			j_u64("sms", applied ? g[i].p[k].sms : 0);
			j_str("source", g[i].p[k].source == OOO_PART_OOOCTL ? "oooctl" : "policy");
			j_obj_end();
		}
		j_arr_end();
		j_u64("shared_sms", applied && g[i].n ? g[i].shared_sms : applied ? g[i].sm_count : 0);
		j_obj_end();
	}
	j_arr_end();
}

int do_partition(int argc, char **argv)
{
	struct ooo_msg_partition_set req;
	struct ooo_msg_partition_set_reply rep;
	struct ooo_part_gpu_rec *g = NULL;
	uint64_t v, wait_ms = 10000;
	const char *verb;
	size_t n = 0;
	ooo_session *s;
	int rc, r, c;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "w:")) != -1) {
		if (c == 'w') {
			if (args_u64(optarg, 10, 0, 600000, &v) < 0)
				return usage_error("--wait wants milliseconds from 0 to 600000, not '%s'", optarg);
			wait_ms = v;
		} else {
			return RC_USAGE;
		}
	}
	verb = optind < argc ? argv[optind] : "list";
	memset(&req, 0, sizeof(req));
	if (!strcmp(verb, "set")) {
		if (argc - optind != 3)
			return usage_error("oooctl partition set CLASS SMS");
		if (args_u64(argv[optind + 2], 10, 0, 65536, &v) < 0)
			return usage_error("SMS wants a number of SMs (0: no partition), not '%s'", argv[optind + 2]);
		req.sms = (uint32_t)v;
	} else if (!strcmp(verb, "reset")) {
		if (argc - optind != 2)
			return usage_error("oooctl partition reset CLASS");
		req.reset = 1;
	} else if (!strcmp(verb, "list")) {
		if (argc - optind > 1)
			return usage_error("oooctl partition [list] takes no arguments");
	} else {
		return usage_error("unknown partition command '%s': list, set or reset", verb);
	}
	if (strcmp(verb, "list")) {
		if (strlen(argv[optind + 1]) >= sizeof(req.class_name))
			return usage_error("class name too long (at most %zu characters)", sizeof(req.class_name) - 1);
		snprintf(req.class_name, sizeof(req.class_name), "%s", argv[optind + 1]);
	}
	if (!(s = admin_open(&rc)))
		return rc;
	rep.generation = 0;
	if (strcmp(verb, "list")) {
		r = admin_call(s, OOO_MSG_PARTITION_SET, &req, sizeof(req), &rep, sizeof(rep));
		if (r >= 0 && (size_t)r != sizeof(rep)) {
			snprintf(reason, sizeof(reason), "partition set reply of %d bytes, expected %zu", r, sizeof(rep));
			r = -OOO_EPROTO;
		}
		if (r < 0) {
			ooo_close(s);
			return report("partition", r);
		}
		sanitize(rep.msg);
		if (!opt_json)
			printf("%s\n", rep.msg);
	}
	/* after a change, until every ready executor has answered it (or --wait runs out) */
	for (uint64_t waited = 0;; waited += 50) {
		bool settled = true;

		free(g);
		g = NULL;
		r = fetch_list(s, OOO_MSG_PARTITIONS, sizeof(*g), (void **)&g, &n);
		if (r < 0)
			break;
		for (size_t i = 0; i < n && rep.generation; i++)
			settled = settled && part_settled(&g[i], rep.generation);
		if (settled || waited >= wait_ms)
			break;
		usleep(50000);
	}
	ooo_close(s);
	if (r < 0) {
		free(g);
		return report("partition", r);
	}
	for (size_t i = 0; i < n; i++) {
		sanitize(g[i].reason);
		for (uint32_t k = 0; k < OOO_PART_MAX; k++)
			sanitize(g[i].p[k].class_name);
	}
	rc = RC_OK;
	for (size_t i = 0; i < n && rep.generation; i++)
		if (!part_settled(&g[i], rep.generation) || (g[i].answered == rep.generation && g[i].status < 0))
			rc = RC_FAIL; /* not answered in time, or refused */
	if (opt_json) {
		j_obj(NULL);
		if (rep.generation) {
			j_u64("plan", rep.generation);
			j_str("message", rep.msg);
		}
		part_json(g, n);
		j_obj_end();
	} else if (!n) {
		printf("no GPU executors (executor = no in the configuration)\n");
	} else {
		part_print(g, n);
		for (size_t i = 0; i < n && rep.generation; i++)
			if (!part_settled(&g[i], rep.generation))
				err_msg("gpu%" PRIu32 " %s: no answer to plan %" PRIu64 " within %" PRIu64 " ms", g[i].device,
					DOMAIN_NAME(g[i].domain),
					rep.generation, wait_ms);
	}
	free(g);
	return rc;
}


