/* SPDX-License-Identifier: MIT */
/* oooctl config: check a configuration file as oood would, or print the embedded default. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../daemon/policy/policy.h"
#include "../json.h"
#include "oooctl.h"

static const char *log_level_name(int l)
{
	switch (l) {
	case POLICY_LOG_ERR: return "err";
	case POLICY_LOG_WARN: return "warn";
	case POLICY_LOG_INFO: return "info";
	case POLICY_LOG_DEBUG: return "debug";
	default: return "unknown";
	}
}

/* A valid policy as JSON; file NULL: the embedded default. */
static void json_policy(const char *file, const struct policy *p)
{
	j_obj(NULL);
	j_str("file", file);
	j_bool("embedded_default", !file);
	j_bool("ok", true);
	j_obj("daemon");
	if (p->has_admin_group) {
		j_str("admin_group", p->admin_group);
		j_u64("admin_gid", p->admin_gid);
	} else {
		j_null("admin_group");
		j_null("admin_gid");
	}
	j_u64("max_sessions", p->max_sessions);
	j_u64("max_admin_sessions", p->max_admin_sessions);
	j_u64("hello_timeout_ms", p->hello_timeout_ms);
	j_u64("shutdown_grace_ms", p->shutdown_grace_ms);
	j_str("log_level", log_level_name(p->log_level));
	j_obj_end();
	j_arr("classes");
	for (size_t i = 0; i < p->nclasses; i++) {
		const struct ooo_class *c = &p->classes[i];

		j_obj(NULL);
		j_str("name", c->name);
		j_bool("match_all", c->match_all);
		j_arr("uids");
		for (size_t k = 0; k < c->nuids; k++)
			j_u64(NULL, c->uids[k]);
		j_arr_end();
		j_arr("gids");
		for (size_t k = 0; k < c->ngids; k++)
			j_u64(NULL, c->gids[k]);
		j_arr_end();
		j_bool("admit", c->admit);
		j_i64("priority", c->priority);
		j_u64("slo_us", c->slo_us);
		j_u64("sm_share", c->sm_share);
		j_u64("wait_spin_us", c->wait_spin_us);
		j_res("limit", c->limit);
		j_obj_end();
	}
	j_arr_end();
	j_obj_end();
}

/*
 * The file oood loads when it is given no -c: DEFAULT_CONF if it exists
 * (or cannot be looked at: then loading it reports why), else NULL for the
 * embedded default. The same rule as daemon/main.c's load_policy().
 */
static const char *default_source(void)
{
	struct stat st;

	return stat(DEFAULT_CONF, &st) == 0 || errno != ENOENT ? DEFAULT_CONF : NULL;
}

/* How oood -n names a policy source: the file, or the embedded default. */
#define SOURCE_LABEL(file) ((file) ? (file) : "(embedded defaults)")

static int config_check(int argc, char **argv)
{
	struct policy_error perr = { 0 };
	struct policy *p = NULL;
	const char *file;
	int r;

	optind = 0;
	if (cmd_getopt(argc, argv, "") != -1)
		return RC_USAGE;
	if (argc - optind > 1)
		return usage_error("config check takes one FILE");
	/* no FILE: what oood would load, as `oood -n` checks it */
	file = optind < argc ? argv[optind] : default_source();
	r = file ? policy_load_file(file, &p, &perr) : policy_load_default(&p);
	if (r < 0) {
		perr.msg[sizeof(perr.msg) - 1] = 0;
		if (!perr.msg[0])
			snprintf(perr.msg, sizeof(perr.msg), "%s", ooo_strerror(r));
		if (opt_json) {
			j_obj(NULL);
			j_str("file", file);
			j_bool("ok", false);
			if (perr.line > 0)
				j_u64("line", (uint64_t)perr.line);
			else
				j_null("line");
			j_str("error", perr.msg);
			j_obj_end();
		}
		/* compiler-style, so editors can jump to the line */
		fflush(stdout);
		if (perr.line > 0)
			fprintf(stderr, "%s:%d: %s\n", SOURCE_LABEL(file), perr.line, perr.msg);
		else /* errors not tied to a line already name the file */
			fprintf(stderr, "%s\n", perr.msg);
		return RC_FAIL;
	}
	if (p->warning[0]) /* valid, but worth saying (an obsolete key): stderr, so that --json stays JSON */
		fprintf(stderr, "%s: warning: %s\n", SOURCE_LABEL(file), p->warning);
	if (opt_json)
		json_policy(file, p);
	else
		printf("%s: OK (%zu class%s)\n", SOURCE_LABEL(file), p->nclasses, p->nclasses == 1 ? "" : "es");
	policy_free(p);
	return RC_OK;
}

/* The embedded default: its text, or with --json the policy it gives, as config check --json shows one. */
static int config_default(int argc, char **argv)
{
	struct policy *p = NULL;
	int r;

	optind = 0;
	if (cmd_getopt(argc, argv, "") != -1)
		return RC_USAGE;
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!opt_json) {
		fputs(policy_default_text, stdout);
		return RC_OK;
	}
	r = policy_load_default(&p);
	if (r < 0) { /* the build embeds a file that does not load: nothing to show */
		err_msg("the embedded default does not load: %s", ooo_strerror(r));
		return RC_FAIL;
	}
	json_policy(NULL, p);
	policy_free(p);
	return RC_OK;
}

int do_config(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("config needs a subcommand: check or default");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cmd_usage(stdout, cur_cmd);
		return RC_OK;
	}
	if (!strcmp(argv[1], "check"))
		return config_check(argc - 1, argv + 1);
	if (!strcmp(argv[1], "default"))
		return config_default(argc - 1, argv + 1);
	return usage_error("unknown config subcommand '%s'", argv[1]);
}


