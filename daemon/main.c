/* SPDX-License-Identifier: MIT */
/* oood: the ooo GPU arbitration daemon. main() parses and calls run(). */
#include <errno.h>
#include <pwd.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "version.h"

#include "../proto/exec_proto.h"
#include "admin/admin.h"
#include "admin/metrics.h"
#include "buffers/buffers.h"
#include "exec/nvrtc.h"
#include "executors/gpu.h"
#include "leases/lease.h"
#include "log.h"
#include "mps/mps.h"
#include "parts/parts.h"
#include "policy/policy.h"
#include "server.h"
#include "sessions/dpath.h"
#include "telemetry/telemetry.h"
#include "watchdog.h"

/*
 * The control plane's modules, in order (server.h): init, start and tick
 * run top-down, fini bottom-up. mps comes before the executors (they are to
 * be its clients) and before leases (which tell it who its clients are);
 * the executors before the modules that listen to them; buffers before data
 * paths (a new executor maps a session's buffers before it attaches it);
 * metrics serves the others' admin views over HTTP; the watchdog last: its
 * STATUS= line reads what the others set up.
 */
static const struct module *const modules[] = {
	&telemetry_module, &mps_module, &gpu_module, &buffers_module, &dpath_module,
	&lease_module, &parts_module, &admin_module, &metrics_module, &watchdog_module, NULL,
};

struct args {
	bool foreground;
	bool check;
	bool verbose;
	const char *config;
	const char *rundir;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: oood [OPTIONS]\n"
		"The ooo GPU arbitration daemon: shares GPUs among tenant processes.\n"
		"\n"
		"Options:\n"
		"  -f, --foreground     log to stderr (default: syslog); oood never forks\n"
		"  -c, --config FILE    read the policy from FILE (default: %s/ooo/oood.conf\n"
		"                       if it exists, else the embedded defaults)\n"
		"  -n, --check          check the configuration, print the result, and exit\n"
		"      --rundir DIR     run directory for oood.sock, admin.sock, oood.pid\n"
		"                       (default: $OOO_RUNDIR, else %s)\n"
		"  -v, --verbose        log at debug level (overrides log_level)\n"
		"  -V, --version        print the version and exit\n"
		"  -h, --help           print this help and exit\n"
		"\n"
		"Signals: SIGTERM/SIGINT shut down gracefully (sessions get a notice);\n"
		"SIGHUP reloads the configuration (a bad file keeps the current policy).\n"
		"\n"
		"Exit status: 0 clean exit or valid configuration; 1 invalid configuration\n"
		"or runtime error; 2 usage error.\n",
		OOO_SYSCONFDIR, OOO_DEFAULT_RUNDIR);
}

static int parse_args(int argc, char **argv, struct args *a)
{
	enum { OPT_RUNDIR = 256 };
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' }, { "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'n' },      { "rundir", required_argument, NULL, OPT_RUNDIR },
		{ "verbose", no_argument, NULL, 'v' },    { "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },       { 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "fc:nvVh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': a->foreground = true; break;
		case 'c': a->config = optarg; break;
		case 'n': a->check = true; break;
		case 'v': a->verbose = true; break;
		case OPT_RUNDIR: a->rundir = optarg; break;
		case 'V': printf("oood %s (%s)\n", OOO_VERSION_STRING, OOO_GIT_REV); exit(0);
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "oood: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	if (!a->rundir) {
		a->rundir = getenv("OOO_RUNDIR");
		if (!a->rundir || !*a->rundir)
			a->rundir = OOO_DEFAULT_RUNDIR;
	}
	if (a->rundir[0] != '/') {
		fprintf(stderr, "oood: --rundir must be an absolute path, got '%s'\n", a->rundir);
		return -EINVAL;
	}
	return 0;
}

/* -c FILE, else the system file if it exists, else the embedded text. */
static int load_policy(const struct args *a, struct policy **out, const char **source)
{
	static char sys_path[OOO_PATH_MAX];
	struct policy_error err = { 0 };
	struct stat st;
	int r;

	snprintf(sys_path, sizeof(sys_path), "%s/ooo/oood.conf", OOO_SYSCONFDIR);
	*source = a->config ? a->config : (stat(sys_path, &st) == 0 || errno != ENOENT) ? sys_path : NULL;
	if (!*source)
		return policy_load_default(out);
	r = policy_load_file(*source, out, &err);
	if (r < 0) {
		if (err.line)
			fprintf(stderr, "%s:%d: %s\n", *source, err.line, err.msg);
		else if (err.msg[0]) /* errors not tied to a line already name the file */
			fprintf(stderr, "%s\n", err.msg);
		else
			fprintf(stderr, "%s: %s\n", *source, wire_strerror(r));
	}
	return r;
}

/*
 * The executors' uids must belong to nobody else: a user of one could signal
 * or ptrace executors. Returns 0, or -EEXIST (logged) when the user database
 * names one of them.
 */
static int exec_uids_free(const struct policy *p)
{
	for (uint32_t i = 0; i < p->exec_uid_n; i++) {
		struct passwd pw, *res = NULL;
		char buf[4096];
		uid_t uid = p->exec_uid_lo + i;

		if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res) {
			log_err("executor_uids %u-%u: uid %u is the user '%s', who could signal or ptrace executors: "
				"choose a range of unused uids",
				p->exec_uid_lo, p->exec_uid_lo + p->exec_uid_n - 1, (unsigned)uid, pw.pw_name);
			return -EEXIST;
		}
	}
	return 0;
}

static int run(const struct args *a)
{
	struct server_opts so = { .modules = modules, .rundir = a->rundir,
				  .config_explicit = a->config != NULL,
				  .log_level_override = a->verbose ? LOG_DEBUG : -1 };
	struct policy *policy = NULL;
	struct server *srv;
	const char *source;
	int r;

	r = load_policy(a, &policy, &source);
	if (a->check) {
		if (r == 0 && policy->warning[0])
			printf("%s: warning: %s\n", source ? source : "(embedded defaults)", policy->warning);
		if (r == 0)
			printf("%s: OK (%zu class%s)\n", source ? source : "(embedded defaults)", policy->nclasses,
			       policy->nclasses == 1 ? "" : "es");
		policy_free(policy);
		return r < 0 ? 1 : 0;
	}
	if (r < 0)
		return 1;
	so.config_path = source;
	log_open(a->foreground, a->verbose ? LOG_DEBUG : policy->log_level);
	if (policy->warning[0])
		log_warn("%s: %s", source ? source : "(embedded defaults)", policy->warning);
	if (geteuid() == 0 && (r = exec_uids_free(policy)) < 0) {
		policy_free(policy);
		return 1;
	}
	{
		/* every session is a descriptor: use all the hard limit allows */
		struct rlimit rl;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
				log_warn("cannot raise RLIMIT_NOFILE: %s, ignoring", strerror(errno));
		}
	}
	/* on the heap: with its executor slots (EXEC_MAX) the server is a few MiB, too much for a stack */
	srv = calloc(1, sizeof(*srv));
	if (!srv) {
		log_err("out of memory");
		policy_free(policy);
		return 1;
	}
	r = server_init(srv, &so, policy); /* the server owns policy from here on */
	if (r == 0)
		r = server_run(srv);
	server_fini(srv);
	free(srv);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };

	/* oood re-executes itself as the per-GPU executor, and the executor itself as its NVRTC helper */
	if (argc > 1 && !strcmp(argv[1], "--executor"))
		return executor_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], NVRTC_HELPER_ARG))
		return nvrtc_helper_main(argc, argv);

	if (parse_args(argc, argv, &a) < 0)
		return 2;
	return run(&a);
}
