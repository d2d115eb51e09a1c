/* SPDX-License-Identifier: MIT */
/*
 * ooo-run: run an unmodified CUDA program as an ooo native tenant. Asks oood
 * for an MPS lease (share of SMs, pinned memory limit, priority, GPU), sets
 * the environment the lease gives, and execs the command in this process,
 * so the lease follows the program and ends when it exits.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ooo/ooo.h>

#include "common/args.h"
#include "version.h" /* build/gen: OOO_GIT_REV */

#define EX_USAGE_ 64
#define EX_UNAVAILABLE_ 69

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ooo-run [OPTIONS] -- COMMAND [ARG...]\n"
		"Run COMMAND (an unmodified CUDA program) under an MPS lease from oood.\n"
		"\n"
		"  --class NAME        tenant class to lease in (default: the one the policy gives you);\n"
		"                      it must match your uid or one of your groups\n"
		"  --sm PCT            percent of the GPU's SMs, 1..100 (default: the class's native_sm)\n"
		"  --mem SIZE          pinned device memory limit, e.g. 2G, 512M (default: the class's native_mem)\n"
		"  --priority P        normal or below (default: the class's native_priority)\n"
		"  --device N          GPU index (default: the least reserved GPU)\n"
		"  --socket PATH       oood's tenant socket (default: $OOO_SOCKET, $OOO_RUNDIR/oood.sock,\n"
		"                      /run/ooo/oood.sock)\n"
		"  -v, --verbose       print the lease to stderr before running COMMAND\n"
		"  -h, --help          this text\n"
		"      --version       print the version\n"
		"\n"
		"The lease ends when COMMAND exits. Exit status: COMMAND's; 64 for a usage error;\n"
		"69 when oood refuses the lease or cannot be reached; 126/127 when COMMAND cannot be run.\n"
		"Leases are listed by `oooctl leases` and ended early by `oooctl evict PID`.\n");
}

/* "ooo-run: MESSAGE" and "Try 'ooo-run --help'." on stderr; returns EX_USAGE_ (64: the command's own codes stay its own). */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("ooo-run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'ooo-run --help'.\n", stderr);
	return EX_USAGE_;
}

/* Set each "KEY=VALUE" line of env: only the variables a lease gives, and those it must give. */
static int apply_env(char *env)
{
	bool pipe = false, pct = false;

	for (char *line = env, *nl; *line; line = nl + 1) {
		char *eq;

		nl = strchr(line, '\n');
		if (!nl)
			return -EINVAL;
		*nl = '\0';
		eq = strchr(line, '=');
		if (!eq || eq == line)
			return -EINVAL;
		*eq = '\0';
		if (strncmp(line, "CUDA_MPS_", 9) && strcmp(line, "CUDA_VISIBLE_DEVICES") && strcmp(line, "OOO_LEASE"))
			return -EINVAL; /* never LD_PRELOAD and the like, whoever answers on the socket */
		pipe |= !strcmp(line, "CUDA_MPS_PIPE_DIRECTORY");
		pct |= !strcmp(line, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
		if (setenv(line, eq + 1, 1) < 0)
			return -errno;
		*eq = '=';
		*nl = '\n';
	}
	return pipe && pct ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	enum { O_CLASS = 256, O_SM, O_MEM, O_PRIO, O_DEVICE, O_SOCKET, O_VERSION };
	static const struct option opts[] = {
		{ "class", required_argument, NULL, O_CLASS },	{ "sm", required_argument, NULL, O_SM },
		{ "mem", required_argument, NULL, O_MEM },	{ "priority", required_argument, NULL, O_PRIO },
		{ "device", required_argument, NULL, O_DEVICE }, { "socket", required_argument, NULL, O_SOCKET },
		{ "verbose", no_argument, NULL, 'v' },		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },	{ NULL, 0, NULL, 0 },
	};
	struct ooo_lease_opts lo = { .sz = sizeof(lo), .device = 0xffffffffu };
	struct ooo_open_opts oo = { .sz = sizeof(oo), .name = "ooo-run" };
	struct ooo_lease_info info;
	char label[64];
	bool verbose = false;
	ooo_session *s;
	uint64_t v;
	int c, r;

	/* '+': options end at the first non-option, so COMMAND's own options are its own */
	opterr = 0; /* usage_error() says what was wrong */
	while ((c = getopt_long(argc, argv, "+:vh", opts, NULL)) != -1) {
		switch (c) {
		case O_CLASS:
			if (!optarg[0] || strlen(optarg) >= 64)
				return usage_error("--class must be 1..63 characters");
			lo.class_name = optarg;
			break;
		case O_SM:
			if (args_u64(optarg, 10, 1, 100, &v) < 0)
				return usage_error("--sm must be a percentage 1..100, got '%s'", optarg);
			lo.sm_pct = (unsigned)v;
			break;
		case O_MEM:
			if (args_size(optarg, 1u << 20, UINT64_MAX, &lo.mem_bytes) < 0)
				return usage_error("--mem must be a size of at least 1M such as 2G or 512M, got '%s'", optarg);
			break;
		case O_PRIO:
			if (!strcmp(optarg, "normal"))
				lo.priority = 1;
			else if (!strcmp(optarg, "below"))
				lo.priority = 2;
			else
				return usage_error("--priority must be normal or below, got '%s'", optarg);
			break;
		case O_DEVICE:
			if (args_u64(optarg, 10, 0, 1023, &v) < 0)
				return usage_error("--device must be a GPU index, got '%s'", optarg);
			lo.device = (uint32_t)v;
			break;
		case O_SOCKET:
			oo.path = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case O_VERSION:
			printf("ooo-run %s (git %s)\n", OOO_VERSION_STRING, OOO_GIT_REV);
			return 0;
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
	snprintf(label, sizeof(label), "%s", argv[optind]);
	lo.label = label;
	s = ooo_open_opts(&oo);
	if (!s) {
		fprintf(stderr, "ooo-run: cannot reach oood: %s%s%s\n", ooo_strerror(-errno),
			ooo_last_error()[0] ? ": " : "", ooo_last_error());
		return EX_UNAVAILABLE_;
	}
	r = ooo_native_lease(s, &lo, &info);
	if (r < 0) {
		fprintf(stderr, "ooo-run: lease refused: %s%s%s\n", ooo_strerror(r), ooo_last_error()[0] ? ": " : "",
			ooo_last_error());
		ooo_close(s);
		return EX_UNAVAILABLE_;
	}
	ooo_close(s);
	if (apply_env(info.env) < 0) {
		fprintf(stderr, "ooo-run: oood sent a malformed environment\n");
		return EX_UNAVAILABLE_;
	}
	if (verbose)
		fprintf(stderr, "ooo-run: lease %llu: class '%s', GPU %u, %u%% of its SMs, %llu MiB pinned limit, priority %s%s%s\n",
			(unsigned long long)info.id, info.class_name, info.device, info.sm_pct,
			(unsigned long long)(info.mem_bytes >> 20), info.priority == 2 ? "below" : "normal",
			info.note[0] ? "; " : "", info.note);
	else if (info.note[0])
		fprintf(stderr, "ooo-run: %s\n", info.note);
	execvp(argv[optind], argv + optind);
	r = errno;
	fprintf(stderr, "ooo-run: cannot run %s: %s\n", argv[optind], strerror(r));
	return r == ENOENT ? 127 : 126;
}
