/* SPDX-License-Identifier: MIT */
/*
 * oooctl: the operator's view of oood over its admin socket, and an offline
 * checker for oood.conf.
 *
 * Every command prints either aligned human-readable text or, with --json,
 * one JSON document on stdout (top: one per line). Errors go to stderr; the exit code says what
 * kind of failure it was so scripts need not parse messages (see usage()).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/args.h"
#include "oooctl.h"
#include "version.h"
#ifndef OOO_GIT_REV
#define OOO_GIT_REV "unknown"
#endif

const struct cmd *cur_cmd;
bool opt_json;
int opt_timeout_ms = DEFAULT_TIMEOUT_MS;
char admin_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
char reason[OOO_ERRMSG_MAX];

/* ---- option parsing for commands ----------------------------------------- */

void cmd_usage(FILE *f, const struct cmd *c)
{
	fprintf(f, "Usage: oooctl [OPTIONS] %s%s%s\n", c->name, c->usage[0] ? " " : "", c->usage);
	fprintf(f, "%s.\n", c->help);
	if (c->more && c->more[0])
		fprintf(f, "\n%s", c->more);
	fputs("\nCommand options:\n"
	      "  --json      JSON on stdout (also accepted before the command)\n"
	      "  -h, --help  this help\n",
	      f);
}

int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("oooctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cur_cmd)
		fprintf(stderr, "Try 'oooctl %s --help'.\n", cur_cmd->name);
	else
		fprintf(stderr, "Try 'oooctl --help'.\n");
	return RC_USAGE;
}

/*
 * getopt_long for a command: handles --help and --json itself and returns
 * the command's own options; exits on --help and on usage errors.
 */
int cmd_getopt(int argc, char **argv, const char *shortopts)
{
	static const struct option common[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'J' },
		{ "count", required_argument, NULL, 'c' },
		{ "device", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "metric", required_argument, NULL, 'm' },
		{ "grace", required_argument, NULL, 'g' },
		{ "wait", required_argument, NULL, 'w' },
		{ "output", required_argument, NULL, 'o' },
		{ "socket", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	char so[32];
	int c;

	snprintf(so, sizeof(so), ":h%s", shortopts);
	for (;;) {
		c = getopt_long(argc, argv, so, common, NULL);
		switch (c) {
		case 'h':
			cmd_usage(stdout, cur_cmd);
			exit(RC_OK);
		case 'J':
			opt_json = true;
			continue;
		case ':':
			exit(usage_error("option '%s' needs an argument", argv[optind - 1]));
		case '?':
			if (optopt)
				exit(usage_error("unknown option '-%c'", optopt));
			exit(usage_error("unknown option '%s'", argv[optind - 1]));
		default:
			/*
			 * --count belongs to ping and top, --device to sched, --interval to sched and top,
			 * --metric to hist, --grace to evict, --wait to partition, --output and --socket to cdi
			 */
			if ((c == 'c' || c == 'd' || c == 'i' || c == 'm' || c == 'g' || c == 'w' || c == 'o' || c == 's') &&
			    !strchr(shortopts, c))
				exit(usage_error("unknown option '--%s'",
						 c == 'c' ? "count" : c == 'd' ? "device" : c == 'i' ? "interval" :
						 c == 'g' ? "grace" : c == 'w' ? "wait" : c == 'o' ? "output" :
						 c == 's' ? "socket" : "metric"));
			return c;
		}
	}
}

/* Commands that take no arguments beyond the common options. */
int no_args(int argc, char **argv)
{
	optind = 0;
	if (cmd_getopt(argc, argv, "") != -1)
		return RC_USAGE;
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return 0;
}



/* ---- help and main -------------------------------------------------------------- */

static int do_help(int argc, char **argv);

static const struct cmd cmds[] = {
	{ "status", do_status, "Show the daemon's state, policy and counters", "", NULL },
	{ "tenants", do_tenants, "List tenants (uid and class) with their resource use and limits", "", NULL },
	{ "sessions", do_sessions, "List open tenant sessions", "", NULL },
	{ "devices", do_devices, "List GPUs and the state of their executors", "", NULL },
	{ "sched", do_sched, "Show the executors' scheduler counters: rates, fusion, JIT, deadlines",
	  "[-d|--device N] [-i|--interval MS]",
	  "  -d, --device N     only GPU N\n"
	  "  -i, --interval MS  rates over two snapshots MS apart (default 1000); 0: one\n"
	  "                     snapshot, figures since each executor started\n"
	  "\n"
	  "Rates come from the executors' own timestamps: the interval is at least the\n"
	  "time between two of their reports (about a second). When an executor restarted\n"
	  "between the snapshots, only its new run's cumulative figures are shown.\n" },
	{ "telemetry", do_telemetry, "Show the state of the eBPF probes: libraries, tracked pids, losses, slow syncs",
	  "", NULL },
	{ "top", do_top, "Live view of GPU processes: launches/s, sync p50/p99, run-queue p99",
	  "[-i|--interval MS] [-c|--count N]",
	  "  -i, --interval MS  refresh every MS milliseconds (default 1000, at least 100)\n"
	  "  -c, --count N      N refreshes, then exit (default: until interrupted on a\n"
	  "                     terminal, 1 otherwise)\n"
	  "  --json             JSON Lines: one compact object per refresh, on its own line\n"
	  "\n"
	  "Percentiles are the upper bounds of log2 buckets of microseconds, over the\n"
	  "refresh interval. TRACK says why oood watches the pid: s session, x executor,\n"
	  "n native tenant with an MPS lease, o operator (oooctl trace), L its launches\n"
	  "are probed.\n" },
	{ "hist", do_hist, "Histograms of one process or one uid: sync time, launch gaps, run-queue delay",
	  "[-m|--metric sync|gap|rq] PID|uid:N",
	  "  -m, --metric M  only M: sync (time in cuStreamSynchronize, cuCtxSynchronize,\n"
	  "                  cuEventSynchronize), gap (time between launches), rq (run-queue\n"
	  "                  delay); default all three\n"
	  "  uid:N           the sum over every process of uid N\n" },
	{ "trace", do_trace, "Add a process to the telemetry pid set (launches included), or remove it",
	  "add|remove PID",
	  "The libraries the process has mapped are probed at once. A traced pid leaves the\n"
	  "set when it exits.\n" },
	{ "leases", do_leases, "List native tenants' MPS leases (ooo-run) and the state of MPS", "",
	  "SM is the lease's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, MEM its pinned device memory\n"
	  "limit. LAUNCHES and SYNC-P99 come from telemetry when it runs. FLAGS: slow (its\n"
	  "sync p99 exceeded its class's slo_us: the class's next leases are offered more),\n"
	  "evicted (oooctl evict asked it to go).\n" },
	{ "evict", do_evict, "End a native tenant's lease: terminate_client, then SIGTERM, then SIGKILL",
	  "[-g|--grace MS] PID",
	  "  -g, --grace MS  time between the steps (default [mps] evict_grace_ms)\n"
	  "\n"
	  "Only processes that hold a lease can be evicted. A process that is not (yet) an\n"
	  "MPS client gets SIGTERM at once. The lease ends when the process exits.\n" },
	{ "pardon", do_pardon, "Forget a tenant's hangs and faults, so that it may attach data paths again", "UID|USER",
	  "oood bars a tenant (uid) whose kernels ran past kernel_time_limit_ms or faulted in\n"
	  "its own domain's executor hang_strikes times within hang_window_s from attaching\n"
	  "data paths until hang_window_s after its last (oood.conf(5)). pardon forgets\n"
	  "them: the bar ends at once, and the next count from zero. Sessions closed by the\n"
	  "bar stay closed.\n" },
	{ "partition", do_partition, "Show the executors' SM partitions, or resize a class's at run time",
	  "[list] | set CLASS SMS | reset CLASS [-w|--wait MS]",
	  "  list             each GPU's reserved partitions (class, SMs asked, SMs it has,\n"
	  "                   whether the policy or oooctl asked) and the shared one\n"
	  "  set CLASS SMS    reserve SMS SMs of every GPU for CLASS's bundles (0: none, the\n"
	  "                   class shares the rest), whatever its policy says, until reset\n"
	  "  reset CLASS      back to the policy: sm_share percent if partition = yes, else none\n"
	  "  -w, --wait MS    how long set and reset wait for every executor's answer\n"
	  "                   (default 10000; 0: do not wait)\n"
	  "\n"
	  "A partition is made of CUDA green contexts: sizes are rounded up to the GPU's\n"
	  "split granule (8 SMs on an H200), and the shared partition must keep some SMs.\n"
	  "An executor waits for the bundles in flight before it changes its partitions;\n"
	  "launches held meanwhile stay in order. A plan an executor cannot make is\n"
	  "refused (the reason is shown, exit status 1) and its partitions stay as they were.\n"
	  "What set asks outlives reloads; it is dropped if the policy loses the class.\n" },
	{ "mps", do_mps, "Show the MPS control daemon oood runs, or run one control command", "[run COMMAND...]",
	  "  run COMMAND  one of get_server_list, get_client_list SERVER,\n"
	  "               set_default_active_thread_percentage PCT, set_active_thread_percentage SERVER PCT,\n"
	  "               set_default_device_pinned_mem_limit DEV SIZE,\n"
	  "               set_device_pinned_mem_limit SERVER DEV SIZE, set_default_client_priority 0|1,\n"
	  "               terminate_client SERVER CLIENT; its reply is checked (MPS exits 0\n"
	  "               even for commands it rejects) and printed\n"
	  "\n"
	  "Limits set this way reach only clients that connect afterwards; leases set\n"
	  "theirs through the client's environment.\n" },
	{ "metrics", do_metrics, "Print every counter and histogram in the Prometheus text format", "",
	  "Per-process series carry pid and comm labels, per-tenant ones a tenant label\n"
	  "(the uid). Histogram buckets are in seconds (log2 of microseconds).\n" },
	{ "reload", do_reload, "Ask oood to reload its configuration file", "",
	  "oood keeps its current policy if the new file does not parse; the\n"
	  "reason (FILE:LINE: MESSAGE) is printed and the exit status is 1.\n" },
	{ "config", do_config, "Check a configuration file, or print the built-in default", "check [FILE] | default",
	  "  config check [FILE]  parse FILE as oood would, without contacting it; prints\n"
	  "                       'FILE: OK (N classes)', or 'FILE:LINE: MESSAGE' on stderr\n"
	  "                       and exits 1. Without FILE: what oood loads when it is\n"
	  "                       given no -c, as 'oood -n' checks it: " DEFAULT_CONF "\n"
	  "                       if it exists, else the embedded default, named\n"
	  "                       '(embedded defaults)'\n"
	  "  config default       print the configuration built into oood; with --json,\n"
	  "                       the policy it gives, as 'config check --json' shows one\n" },
	{ "ping", do_ping, "Measure round trips to oood over the admin socket", "[-c COUNT]",
	  "  -c, --count COUNT  round trips to make (default 10)\n" },
	{ "cdi", do_cdi, "Write a CDI spec that gives containers oood's tenant socket", "[-o|--output FILE] [-s|--socket PATH]",
	  "  -o, --output FILE  write the spec to FILE (through FILE.tmp and a rename, mode\n"
	  "                     0644), e.g. /etc/cdi/ooo.json; default stdout\n"
	  "  -s, --socket PATH  the tenants' socket to mount (default RUNDIR/" OOO_SOCKET_NAME ")\n"
	  "\n"
	  "The spec (cdiVersion 0.6.0, kind ooo.dev/gpu) has a device per GPU oood lists\n"
	  "(gpu0, gpu1, ...) and 'all'. Whichever a container is given, the spec's\n"
	  "containerEdits bind-mount the socket at the same path and set OOO_SOCKET; each\n"
	  "device adds OOO_CDI_DEVICE=NAME. oood places tenants itself: the device names a\n"
	  "request, not a GPU the tenant is held to. See docs/kubernetes.md.\n" },
	{ "version", do_version, "Show oooctl's version and, if it is reachable, oood's", "", NULL },
	{ "help", do_help, "Show help for oooctl or for one command", "[COMMAND]", NULL },
};

static const struct cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

static void usage(FILE *f)
{
	fputs("Usage: oooctl [OPTIONS] COMMAND [ARGS]\n"
	      "Query and control oood, the ooo GPU arbitration daemon, over its admin\n"
	      "socket DIR/admin.sock (root and members of the admin group only).\n"
	      "\n"
	      "Options (before COMMAND):\n"
	      "  --rundir DIR   oood's run directory (default: $OOO_RUNDIR, else " OOO_DEFAULT_RUNDIR ")\n"
	      "  --json         print JSON on stdout instead of text\n"
	      "  --timeout MS   connect and request timeout in milliseconds (default 5000)\n"
	      "  -h, --help     this help\n"
	      "  --version      print oooctl's version\n"
	      "\n"
	      "Commands:\n",
	      f);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].help);
	fputs("\n"
	      "Exit status:\n"
	      "  0  success\n"
	      "  1  failure reported by oood, or an invalid configuration file\n"
	      "  2  usage error\n"
	      "  3  oood is not running or not reachable\n"
	      "  4  permission denied (admin.sock is for root and the admin group)\n"
	      "  5  timeout or protocol error\n"
	      "\n"
	      "'oooctl help COMMAND' or 'oooctl COMMAND --help' describes a command.\n",
	      f);
}

static int do_help(int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return RC_OK;
	}
	cur_cmd = NULL; /* errors here point at the top-level help */
	if (argc > 2)
		return usage_error("help takes one COMMAND");
	c = find_cmd(argv[1]);
	if (!c)
		return usage_error("unknown command '%s'", argv[1]);
	cmd_usage(stdout, c);
	return RC_OK;
}

static int set_admin_path(const char *rundir)
{
	size_t n;
	int r;

	if (!rundir) {
		rundir = getenv("OOO_RUNDIR");
		if (!rundir || !*rundir)
			rundir = OOO_DEFAULT_RUNDIR;
	}
	if (!*rundir)
		return usage_error("--rundir wants a directory");
	n = strlen(rundir);
	while (n > 1 && rundir[n - 1] == '/')
		n--;
	r = snprintf(admin_path, sizeof(admin_path), "%.*s/%s", (int)n, rundir, OOO_ADMIN_SOCKET_NAME);
	if (r < 0 || (size_t)r >= sizeof(admin_path))
		return usage_error("run directory too long for a socket path (%zu bytes at most): %s",
				   sizeof(admin_path) - 1 - strlen("/" OOO_ADMIN_SOCKET_NAME), rundir);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rundir", required_argument, NULL, 'r' }, { "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },      { NULL, 0, NULL, 0 },
	};
	const char *rundir = NULL;
	uint64_t v;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			rundir = optarg;
			break;
		case 'j':
			opt_json = true;
			break;
		case 't':
			if (args_u64(optarg, 10, 1, 3600000, &v) < 0)
				return usage_error("--timeout wants milliseconds from 1 to 3600000, not '%s'", optarg);
			opt_timeout_ms = (int)v;
			break;
		case 'h':
			usage(stdout);
			return RC_OK;
		case 'V':
			printf("oooctl %s (git %s)\n", OOO_VERSION_STRING, OOO_GIT_REV);
			return RC_OK;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			if (optopt)
				return usage_error("unknown option '-%c'", optopt);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("no command given");
	cur_cmd = find_cmd(argv[optind]);
	if (!cur_cmd)
		return usage_error("unknown command '%s'", argv[optind]);
	if ((rc = set_admin_path(rundir)))
		return rc;
	rc = cur_cmd->fn(argc - optind, argv + optind);
	if (fflush(stdout) || ferror(stdout)) {
		err_msg("cannot write output: %s", strerror(errno));
		if (!rc)
			rc = RC_FAIL;
	}
	return rc;
}


