/* SPDX-License-Identifier: MIT */
/*
 * oooctl: the operator's view of oood over its admin socket, and an offline
 * checker for oood.conf.
 *
 * Every command prints either aligned human-readable text or, with --json,
 * one JSON document on stdout. Errors go to stderr; the exit code says what
 * kind of failure it was so scripts need not parse messages (see usage()).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../daemon/policy.h"

#include "json.h"
#include "version.h"
#ifndef OOO_GIT_REV
#define OOO_GIT_REV "unknown"
#endif
#ifndef OOO_SYSCONFDIR
#define OOO_SYSCONFDIR "/etc"
#endif
#define DEFAULT_CONF OOO_SYSCONFDIR "/ooo/oood.conf"

/* Exit codes: part of the interface, documented in usage() and oooctl(8). */
enum {
	RC_OK = 0,
	RC_FAIL = 1,  /* oood reported a failure, or the config file is invalid */
	RC_USAGE = 2,
	RC_DOWN = 3,  /* oood not running or unreachable */
	RC_PERM = 4,  /* permission denied on admin.sock */
	RC_PROTO = 5, /* timeout or protocol error */
};

#define DEFAULT_TIMEOUT_MS 5000
#define NS_PER_S 1000000000ull

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;  /* one line for the command list */
	const char *usage; /* arguments, after "oooctl [OPTIONS] NAME" */
	const char *more;  /* option lines and details for `oooctl help NAME` */
};

static const struct cmd *cur_cmd;
static bool opt_json;
static int opt_timeout_ms = DEFAULT_TIMEOUT_MS;
static char admin_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

/*
 * The reason that goes with the last failed call: the daemon's text from
 * ooo_last_error(), or ours for a malformed reply. Copied at once because
 * libooo overwrites its copy on the next call.
 */
static char reason[OOO_ERRMSG_MAX];

static const char *const res_names[OOO_RES_COUNT] = {
	[OOO_RES_SESSIONS] = "sessions", [OOO_RES_QUEUES] = "queues",   [OOO_RES_BUFFERS] = "buffers",
	[OOO_RES_MEM_BYTES] = "mem_bytes", [OOO_RES_MODULES] = "modules", [OOO_RES_INFLIGHT] = "inflight",
};

/* ---- small helpers ------------------------------------------------------ */

__attribute__((format(printf, 1, 2))) static void err_msg(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("oooctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void __attribute__((noreturn)) oom(void)
{
	err_msg("out of memory");
	exit(RC_FAIL);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		oom();
	return d;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * (int64_t)NS_PER_S + ts.tv_nsec;
}

/* Length of a valid UTF-8 sequence of 2..4 bytes at p, or 0. */

/*
 * Names and labels come from tenants: keep their bytes off the terminal's
 * control path. Control characters (C0, DEL, C1) and bytes that are not
 * valid UTF-8 become '?', in place.
 */
static void sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;

	while (*p) {
		size_t n;

		if (*p < 0x20 || *p == 0x7f) {
			*p++ = '?';
		} else if (*p < 0x80) {
			p++;
		} else if ((n = utf8_len(p)) && !(p[0] == 0xc2 && p[1] < 0xa0)) {
			p += n;
		} else {
			/* C1 controls are U+0080..U+009F, that is 0xc2 0x80..0x9f */
			*p++ = '?';
		}
	}
}

static const char *fmt_dur(char *buf, size_t cap, uint64_t ns)
{
	uint64_t s = ns / NS_PER_S;

	if (ns < 1000000)
		snprintf(buf, cap, "%" PRIu64 "us", ns / 1000);
	else if (ns < NS_PER_S)
		snprintf(buf, cap, "%" PRIu64 "ms", ns / 1000000);
	else if (s < 60)
		snprintf(buf, cap, "%" PRIu64 ".%" PRIu64 "s", s, ns / 100000000 % 10);
	else if (s < 3600)
		snprintf(buf, cap, "%" PRIu64 "m %" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, cap, "%" PRIu64 "h %" PRIu64 "m", s / 3600, s / 60 % 60);
	else
		snprintf(buf, cap, "%" PRIu64 "d %" PRIu64 "h", s / 86400, s / 3600 % 24);
	return buf;
}

static const char *fmt_size(char *buf, size_t cap, uint64_t b)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)b;
	int u = -1;

	if (b < 1024) {
		snprintf(buf, cap, "%" PRIu64 " B", b);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, cap, "%.1f %s", v, unit[u]);
	return buf;
}

/* A limit nobody can reach reads better as a word than as 18446744073709551615. */
static const char *fmt_limit(char *buf, size_t cap, uint64_t v, bool bytes)
{
	if (v == UINT64_MAX)
		snprintf(buf, cap, "unlimited");
	else if (bytes)
		fmt_size(buf, cap, v);
	else
		snprintf(buf, cap, "%" PRIu64, v);
	return buf;
}

static const char *fmt_realtime(char *buf, size_t cap, uint64_t ns, bool utc)
{
	time_t t = (time_t)(ns / NS_PER_S);
	struct tm tm;

	if (!ns || !(utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)) ||
	    !strftime(buf, cap, utc ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M:%S %z", &tm))
		snprintf(buf, cap, "%s", "-");
	return buf;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Local user names, cached: a session list repeats the same few uids, and NSS may be remote. */
static const char *user_name(uint32_t uid)
{
	static struct {
		uint32_t uid;
		char *name; /* NULL: no such user */
	} *cache;
	static size_t ncache;
	struct passwd pw, *res = NULL;
	char buf[16384];
	size_t i;

	for (i = 0; i < ncache; i++)
		if (cache[i].uid == uid)
			return cache[i].name;
	cache = xrealloc(cache, (ncache + 1) * sizeof(*cache));
	cache[ncache].uid = uid;
	cache[ncache].name = NULL;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res) {
		cache[ncache].name = xstrdup(pw.pw_name);
		sanitize(cache[ncache].name);
	}
	return cache[ncache++].name;
}

/* For tables: the name, or the number when the uid has no local account. */
static const char *user_label(uint32_t uid, char *buf, size_t cap)
{
	const char *n = user_name(uid);

	if (n)
		return n;
	snprintf(buf, cap, "%" PRIu32, uid);
	return buf;
}

/* ---- tables --------------------------------------------------------------- */

#define TABLE_MAX_COLS 16

struct table {
	int ncols;
	const char *hdr[TABLE_MAX_COLS];
	bool right[TABLE_MAX_COLS]; /* numbers line up on the right */
	char **cells;               /* row-major, ncols per row */
	size_t n, cap;
};

/* Columns: "NAME" left-aligned, ">NAME" right-aligned. */
static void table_init(struct table *t, int ncols, const char *const *cols)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	for (int i = 0; i < ncols; i++) {
		t->right[i] = cols[i][0] == '>';
		t->hdr[i] = cols[i] + t->right[i];
	}
}

__attribute__((format(printf, 2, 3))) static void table_cell(struct table *t, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->cells = xrealloc(t->cells, t->cap * sizeof(*t->cells));
	}
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		oom();
	sanitize(s);
	t->cells[t->n++] = s;
}

/* Display width, near enough: UTF-8 continuation bytes take no column. */
static size_t text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void table_print(struct table *t)
{
	size_t width[TABLE_MAX_COLS];
	int nc = t->ncols;

	for (int c = 0; c < nc; c++)
		width[c] = text_width(t->hdr[c]);
	for (size_t i = 0; i < t->n; i++) {
		size_t w = text_width(t->cells[i]);
		if (w > width[i % nc])
			width[i % nc] = w;
	}
	for (size_t row = 0; row <= t->n / nc; row++) {
		for (int c = 0; c < nc; c++) {
			const char *s = row ? t->cells[(row - 1) * nc + c] : t->hdr[c];
			size_t pad = width[c] - text_width(s);

			if (c)
				fputs("  ", stdout);
			if (t->right[c])
				printf("%*s", (int)pad, "");
			fputs(s, stdout);
			/* no trailing blanks after the last column */
			if (!t->right[c] && c < nc - 1)
				printf("%*s", (int)pad, "");
		}
		putchar('\n');
	}
	for (size_t i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->n = t->cap = 0;
}

/* ---- JSON (tools/json.c) ---------------------------------------------- */

static void j_res(const char *key, const uint64_t *v)
{
	j_obj(key);
	for (int i = 0; i < OOO_RES_COUNT; i++)
		j_u64(res_names[i], v[i]);
	j_obj_end();
}

/* ---- errors and the admin connection ------------------------------------- */

/*
 * Describe a failed libooo call (err negative: -errno or -OOO_E*) in buf and
 * return the exit code for it. The daemon's reason, if any, is in `reason`.
 */
static int describe(int err, char *buf, size_t cap)
{
	int e = err < 0 ? -err : err;
	const char *sep = reason[0] ? ": " : "";

	switch (e) {
	case ENOENT:
	case ENOTDIR:
		snprintf(buf, cap, "oood is not running (no socket at %s)", admin_path);
		return RC_DOWN;
	case ECONNREFUSED:
		snprintf(buf, cap, "oood is not running (nothing listens on %s)", admin_path);
		return RC_DOWN;
	case EACCES:
	case EPERM:
	case OOO_ENOTADMIN:
		snprintf(buf, cap, "permission denied: %s is for root and the admin group%s%s", admin_path, sep,
			 reason);
		return RC_PERM;
	case ETIMEDOUT:
	case EAGAIN:
		snprintf(buf, cap, "timed out: oood did not answer on %s within %d ms (see --timeout)", admin_path,
			 opt_timeout_ms);
		return RC_PROTO;
	case OOO_EPROTO:
	case OOO_EVERSION:
	case EMSGSIZE:
	case EPROTO:
		snprintf(buf, cap, "protocol error talking to oood on %s: %s%s%s", admin_path, ooo_strerror(e), sep,
			 reason);
		return RC_PROTO;
	case OOO_ECLOSED:
	case OOO_ESHUTDOWN:
	case ECONNRESET:
	case EPIPE:
		snprintf(buf, cap, "oood is unreachable on %s: %s%s%s", admin_path, ooo_strerror(e), sep, reason);
		return RC_DOWN;
	case ENAMETOOLONG:
		snprintf(buf, cap, "socket path too long: %s", admin_path);
		return RC_USAGE;
	default:
		/* What the daemon refused: its own words are the useful part. */
		if (reason[0])
			snprintf(buf, cap, "%s", reason);
		else
			snprintf(buf, cap, "%s", ooo_strerror(e));
		return RC_FAIL;
	}
}

/* Print a failure of `what` on stderr; returns the exit code. */
static int report(const char *what, int err)
{
	char buf[1024];
	int rc = describe(err, buf, sizeof(buf));

	if (rc == RC_FAIL && what)
		err_msg("%s failed: %s", what, buf);
	else
		err_msg("%s", buf);
	if (rc == RC_DOWN && (-err == ENOENT || -err == ECONNREFUSED || -err == ENOTDIR))
		fprintf(stderr, "oooctl: if oood runs with another run directory, pass --rundir DIR or set OOO_RUNDIR\n");
	return rc;
}

static void take_reason(void)
{
	snprintf(reason, sizeof(reason), "%s", ooo_last_error());
}

static ooo_session *admin_open_quiet(int *err)
{
	ooo_session *s;

	reason[0] = 0;
	s = ooo_admin_open(admin_path, opt_timeout_ms);
	if (!s) {
		*err = -errno;
		take_reason();
	}
	return s;
}

/* Open the admin session or report why not; *rc gets the exit code. */
static ooo_session *admin_open(int *rc)
{
	ooo_session *s;
	int err;

	s = admin_open_quiet(&err);
	if (!s)
		*rc = report(NULL, err);
	return s;
}

static int call(ooo_session *s, uint16_t type, const void *req, size_t req_len, void *reply, size_t cap)
{
	int r;

	reason[0] = 0;
	r = ooo_admin_call(s, type, req, req_len, reply, cap);
	if (r < 0)
		take_reason();
	return r;
}

static int get_status(ooo_session *s, struct ooo_msg_status *st)
{
	int r = call(s, OOO_MSG_STATUS, NULL, 0, st, sizeof(*st));

	if (r >= 0 && (size_t)r != sizeof(*st)) {
		snprintf(reason, sizeof(reason), "status reply of %d bytes, expected %zu", r, sizeof(*st));
		return -OOO_EPROTO;
	}
	return r < 0 ? r : 0;
}

/*
 * Fetch a whole paged list into a malloc'd array of records. Each request
 * is answered from a fresh snapshot, so a list that changes while we page
 * may show an entry twice or miss one: fine for a report.
 */
static int fetch_list(ooo_session *s, uint16_t type, size_t rec_size, void **out, size_t *nout)
{
	struct ooo_msg_list_req req = { 0 };
	unsigned char *buf = xrealloc(NULL, OOO_MSG_MAX);
	char *recs = NULL;
	size_t n = 0;
	int r;

	for (;;) {
		struct ooo_msg_list l;

		r = call(s, type, &req, sizeof(req), buf, OOO_MSG_MAX);
		if (r < 0)
			goto fail;
		if ((size_t)r < sizeof(l)) {
			snprintf(reason, sizeof(reason), "list reply shorter than its header");
			r = -OOO_EPROTO;
			goto fail;
		}
		memcpy(&l, buf, sizeof(l));
		if (l.rec_size != rec_size || (size_t)r - sizeof(l) != (size_t)l.count * rec_size) {
			snprintf(reason, sizeof(reason), "list records of %" PRIu32 " bytes, expected %zu", l.rec_size,
				 rec_size);
			r = -OOO_EPROTO;
			goto fail;
		}
		if (!l.count)
			break; /* the list shrank under us, or is empty */
		recs = xrealloc(recs, (n + l.count) * rec_size);
		memcpy(recs + n * rec_size, buf + sizeof(l), (size_t)l.count * rec_size);
		n += l.count;
		req.offset += l.count;
		if (req.offset >= l.total)
			break;
	}
	free(buf);
	*out = recs;
	*nout = n;
	return 0;
fail:
	free(buf);
	free(recs);
	return r;
}

/* ---- option parsing for commands ----------------------------------------- */

static void cmd_usage(FILE *f, const struct cmd *c)
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

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
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
static int cmd_getopt(int argc, char **argv, const char *shortopts)
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
			 * --metric to hist, --grace to evict, --wait to partition
			 */
			if ((c == 'c' || c == 'd' || c == 'i' || c == 'm' || c == 'g' || c == 'w') && !strchr(shortopts, c))
				exit(usage_error("unknown option '--%s'",
						 c == 'c' ? "count" : c == 'd' ? "device" : c == 'i' ? "interval" :
						 c == 'g' ? "grace" : c == 'w' ? "wait" : "metric"));
			return c;
		}
	}
}

/* Commands that take no arguments beyond the common options. */
static int no_args(int argc, char **argv)
{
	optind = 0;
	if (cmd_getopt(argc, argv, "") != -1)
		return RC_USAGE;
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return 0;
}

static bool parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* ---- status ------------------------------------------------------------------ */

static void kv(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kv(const char *key, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		oom();
	sanitize(s);
	printf("%-18s %s\n", key, s);
	free(s);
}

static const char *dev_state(uint32_t s);

/* An executor's trust domain as oooctl shows it: a GPU's spare has none */
#define DOMAIN_NAME(d) ((d)[0] ? (d) : "(spare)")

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

static int do_status(int argc, char **argv)
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

/*
 * The common part of the list commands: no arguments, one admin session,
 * every page of the list. Returns RC_OK with a malloc'd array, or an exit code.
 */
static int list_command(int argc, char **argv, uint16_t type, size_t rec_size, const char *what, void **out,
			size_t *n)
{
	ooo_session *s;
	int rc, r;

	if ((rc = no_args(argc, argv)))
		return rc;
	if (!(s = admin_open(&rc)))
		return rc;
	r = fetch_list(s, type, rec_size, out, n);
	ooo_close(s);
	return r < 0 ? report(what, r) : RC_OK;
}

static int cmp_tenant(const void *a, const void *b)
{
	const struct ooo_tenant_rec *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return strcmp(x->class_name, y->class_name);
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

static int do_tenants(int argc, char **argv)
{
	static const char *const cols[] = { ">UID", "USER", "CLASS", ">SESSIONS", ">QUEUES", ">BUFFERS",
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
	table_init(&tab, 9, cols);
	for (size_t i = 0; i < n; i++) {
		const uint64_t *u = t[i].used, *l = t[i].limit;
		char b[96];

		table_cell(&tab, "%" PRIu32, t[i].uid);
		table_cell(&tab, "%s", user_label(t[i].uid, b, sizeof(b)));
		table_cell(&tab, "%s", t[i].class_name);
		for (int k = 0; k < OOO_RES_COUNT; k++)
			table_cell(&tab, "%s", fmt_used(b, sizeof(b), u[k], l[k], k == OOO_RES_MEM_BYTES));
	}
	table_print(&tab);
	free(t);
	return RC_OK;
}

static int do_sessions(int argc, char **argv)
{
	static const char *const cols[] = { ">ID", ">PID", ">UID", "USER", "CLASS", "DOMAIN", "NAME", ">AGE", ">MESSAGES" };
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
	table_init(&tab, 9, cols);
	for (size_t i = 0; i < n; i++) {
		char b[64];

		table_cell(&tab, "%" PRIu64, ss[i].id);
		table_cell(&tab, "%" PRIu32, ss[i].pid);
		table_cell(&tab, "%" PRIu32, ss[i].uid);
		table_cell(&tab, "%s", user_label(ss[i].uid, b, sizeof(b)));
		table_cell(&tab, "%s", ss[i].class_name);
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

static const char *dev_state(uint32_t s)
{
	switch (s) {
	case OOO_DEV_STARTING: return "starting";
	case OOO_DEV_READY: return "ready";
	case OOO_DEV_RESTARTING: return "restarting";
	case OOO_DEV_FAILED: return "failed";
	case OOO_DEV_STOPPED: return "stopped";
	default: return "unknown";
	}
}

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

static int do_devices(int argc, char **argv)
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

/* ---- sched --------------------------------------------------------------------- */

/* Upper bound in ns of the bucket holding quantile q of a log2 us histogram; NAN when empty. */
static double hist_quantile(const uint64_t *h, double q)
{
	uint64_t total = 0, acc = 0;

	for (int b = 0; b < OOO_TM_BUCKETS; b++)
		total += h[b];
	if (!total)
		return NAN;
	for (int b = 0; b < OOO_TM_BUCKETS; b++) {
		acc += h[b];
		if ((double)acc >= q * (double)total)
			return 1000.0 * (double)(1ull << b);
	}
	return 1000.0 * (double)(1ull << (OOO_TM_BUCKETS - 1));
}

/*
 * The arithmetic of `oooctl sched`: pure functions of the counters, unit
 * tested by tests/unit/test_oooctl_sched.c. A rate or a share without a
 * denominator (no interval, no launches) is NAN, which prints as "-" and
 * as JSON null: never a division by zero.
 */

/* Two snapshots of one executor run agree on when it started (snapshot_ns - up_ns) to within this. */
#define SCHED_START_SLOP_NS (500ull * 1000000ull)

/* later - earlier, or 0 if the counter went back. */
/*
 * The executor's per-command stages (struct ooo_sched_counters), for sched,
 * --json and metrics; the first OOO_CMD_STAGES are also each class's
 * (enum ooo_cmd_stage order).
 */
#define STAGES 5
_Static_assert(OOO_STAGE_SUBMIT == 0 && OOO_STAGE_NOTIFY == 3 && OOO_CMD_STAGES < STAGES, "stage tables");
static const char *const stage_rows[STAGES] = { "command submit", "command queue", "command run", "command notify",
						"bundle gpu time" };
static const char *const stage_keys[STAGES] = { "command_submit", "command_queue", "command_run", "command_notify",
						"bundle_gpu" };
static const char *const stage_prom[STAGES] = { "ooo_exec_command_submit_seconds", "ooo_exec_command_queue_seconds",
						"ooo_exec_command_run_seconds", "ooo_exec_command_notify_seconds",
						"ooo_exec_bundle_gpu_seconds" };
static const char *const stage_help[STAGES] = {
	"Every command: the tenant's submit stamp to taken from the submission ring (libooo stamps; the tenant's word)",
	"Every command: taken to issued to CUDA, alone or in its bundle",
	"Commands with a completion: issued to completion seen",
	"Commands with a completion: completion seen to published on the tenant's completion ring",
	"Bundles timed with events: GPU time from their start to their end event",
};

static const uint64_t *stage_hist(const struct ooo_sched_counters *c, int h)
{
	switch (h) {
	case 0: return c->cmd_submit_hist;
	case 1: return c->cmd_queue_hist;
	case 2: return c->cmd_run_hist;
	case 3: return c->cmd_notify_hist;
	default: return c->bundle_gpu_hist;
	}
}

static uint64_t sched_sub(uint64_t later, uint64_t earlier)
{
	return later > earlier ? later - earlier : 0;
}

/* n events in ns nanoseconds, per second; NAN when ns is 0. */
static double sched_per_s(uint64_t n, uint64_t ns)
{
	return ns ? (double)n * 1e9 / (double)ns : NAN;
}

/* part / whole; NAN when whole is 0. */
static double sched_share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : NAN;
}

/* A utilisation estimate as displayed: percent, at most 100 (event timings of overlapping bundles add up). */
static double sched_util_pct(double share)
{
	if (!isfinite(share))
		return share;
	return share > 1.0 ? 100.0 : share * 100.0;
}

static uint32_t sched_nclasses(const struct ooo_sched_counters *c)
{
	return c->nclasses < OOO_SCHED_CLASSES ? c->nclasses : OOO_SCHED_CLASSES;
}

static uint32_t sched_nparts(const struct ooo_sched_counters *c)
{
	return c->npartitions < OOO_SCHED_PARTITIONS ? c->npartitions : OOO_SCHED_PARTITIONS;
}

/* Whether b, taken after a, comes from the same executor run (else: the executor restarted in between). */
static bool sched_same_run(const struct ooo_sched_counters *a, const struct ooo_sched_counters *b)
{
	if (b->up_ns < a->up_ns || b->snapshot_ns < a->snapshot_ns)
		return false;
	if (a->up_ns && b->up_ns && a->up_ns <= a->snapshot_ns && b->up_ns <= b->snapshot_ns) {
		uint64_t sa = a->snapshot_ns - a->up_ns, sb = b->snapshot_ns - b->up_ns;

		if ((sa > sb ? sa - sb : sb - sa) > SCHED_START_SLOP_NS)
			return false;
	}
	/* cumulative counters never go back within one run */
	return b->bundles >= a->bundles && b->launches >= a->launches && b->cpu_ns >= a->cpu_ns &&
	       b->jit_compiles >= a->jit_compiles;
}

/* The class row of a that is b's row i: the same name, at the same index if it is there. */
static const struct ooo_sched_class_stats *sched_class_in(const struct ooo_sched_counters *a,
							  const struct ooo_sched_class_stats *cb, uint32_t i)
{
	uint32_t n = sched_nclasses(a);

	if (i < n && !strncmp(a->classes[i].name, cb->name, sizeof(cb->name)))
		return &a->classes[i];
	for (uint32_t k = 0; k < n; k++)
		if (!strncmp(a->classes[k].name, cb->name, sizeof(cb->name)))
			return &a->classes[k];
	return NULL;
}

/*
 * d = what happened between snapshots a and b of one run: every count is
 * b's minus a's, snapshot_ns is the interval, up_ns, the maxima and the
 * table shapes are b's. Classes are matched by name (one that appeared in
 * between counts from zero), partitions by index.
 */
static void sched_delta(const struct ooo_sched_counters *a, const struct ooo_sched_counters *b,
			struct ooo_sched_counters *d)
{
	memset(d, 0, sizeof(*d));
	d->snapshot_ns = sched_sub(b->snapshot_ns, a->snapshot_ns);
	d->up_ns = b->up_ns;
#define SCHED_D(f) d->f = sched_sub(b->f, a->f)
	SCHED_D(bundles);
	SCHED_D(fused_bundles);
	SCHED_D(launches);
	SCHED_D(fused_launches);
	SCHED_D(direct_launches);
	SCHED_D(dispatch_full);
	SCHED_D(dispatch_slack);
	SCHED_D(dispatch_idle);
	SCHED_D(dispatch_alone);
	SCHED_D(retried);
	SCHED_D(unfused_nopay);
	SCHED_D(stream_waits);
	SCHED_D(chained_launches);
	SCHED_D(burst_holds);
	SCHED_D(jit_hits);
	SCHED_D(jit_misses);
	SCHED_D(jit_compiles);
	SCHED_D(jit_failures);
	SCHED_D(jit_compile_ns);
	SCHED_D(cpu_ns);
	SCHED_D(loops);
	SCHED_D(work_ns);
	SCHED_D(launch_ns);
	for (unsigned i = 0; i < OOO_PRIO_TIERS; i++)
		SCHED_D(tier_bundles[i]);
	for (unsigned i = 0; i < OOO_SCHED_STREAMS; i++)
		SCHED_D(stream_bundles[i]);
	SCHED_D(commands);
	SCHED_D(param_bundles);
	SCHED_D(take_ns);
	SCHED_D(dispatch_ns);
#undef SCHED_D
	for (int k = 0; k < OOO_TM_BUCKETS; k++) {
		d->hold_hist[k] = sched_sub(b->hold_hist[k], a->hold_hist[k]);
		d->lat_hist[k] = sched_sub(b->lat_hist[k], a->lat_hist[k]);
		d->cmd_submit_hist[k] = sched_sub(b->cmd_submit_hist[k], a->cmd_submit_hist[k]);
		d->cmd_queue_hist[k] = sched_sub(b->cmd_queue_hist[k], a->cmd_queue_hist[k]);
		d->cmd_run_hist[k] = sched_sub(b->cmd_run_hist[k], a->cmd_run_hist[k]);
		d->cmd_notify_hist[k] = sched_sub(b->cmd_notify_hist[k], a->cmd_notify_hist[k]);
		d->bundle_gpu_hist[k] = sched_sub(b->bundle_gpu_hist[k], a->bundle_gpu_hist[k]);
	}
	d->submit_stamp_bad = sched_sub(b->submit_stamp_bad, a->submit_stamp_bad);
	d->jit_compile_max_ns = b->jit_compile_max_ns;
	d->max_members = b->max_members;
	d->nclasses = sched_nclasses(b);
	d->npartitions = sched_nparts(b);
	d->streams = b->streams;
	for (uint32_t i = 0; i < d->nclasses; i++) {
		const struct ooo_sched_class_stats *cb = &b->classes[i], *ca = sched_class_in(a, cb, i);
		struct ooo_sched_class_stats *cd = &d->classes[i];

		memcpy(cd->name, cb->name, sizeof(cd->name));
		cd->name[sizeof(cd->name) - 1] = '\0';
		cd->slo_us = cb->slo_us;
		cd->launches = sched_sub(cb->launches, ca ? ca->launches : 0);
		cd->deadline_misses = sched_sub(cb->deadline_misses, ca ? ca->deadline_misses : 0);
		cd->lat_sum_ns = sched_sub(cb->lat_sum_ns, ca ? ca->lat_sum_ns : 0);
		cd->lat_max_ns = cb->lat_max_ns;
		for (int h = 0; h < OOO_CMD_STAGES; h++)
			for (int k = 0; k < OOO_TM_BUCKETS; k++)
				cd->cmd_stage_hist[h][k] = sched_sub(cb->cmd_stage_hist[h][k], ca ? ca->cmd_stage_hist[h][k] : 0);
	}
	for (uint32_t i = 0; i < d->npartitions; i++) {
		const struct ooo_sched_part_stats *pb = &b->parts[i];
		/* a partition of another class now (a new plan) counts from zero */
		const struct ooo_sched_part_stats *pa =
			i < sched_nparts(a) && !strcmp(a->parts[i].name, pb->name) ? &a->parts[i] : NULL;

		memcpy(d->parts[i].name, pb->name, sizeof(d->parts[i].name));
		d->parts[i].sms = pb->sms;
		d->parts[i].max_inflight = pb->max_inflight;
		d->parts[i].reserve_inflight = pb->reserve_inflight;
		d->parts[i].bundles = sched_sub(pb->bundles, pa ? pa->bundles : 0);
		d->parts[i].busy_ns = sched_sub(pb->busy_ns, pa ? pa->busy_ns : 0);
	}
}

struct sched_class_fig {
	double launches_s;
	double miss_share;  /* deadline misses / launches */
	double lat_mean_us;
	double lat_max_us;  /* the run's maximum */
};

struct sched_part_fig {
	double bundles_s;
	double util;        /* busy_ns / span: a share, not capped */
};

/* Figures of counters c over span_ns: a delta over its interval, or a run's totals over its up_ns. */
struct sched_fig {
	uint64_t span_ns;
	double bundles_s, fused_bundles_s, launches_s, fused_launches_s, direct_launches_s;
	double members;      /* launches per bundle */
	double fused_share;  /* fused_launches / launches */
	double dispatch_share[4]; /* full, slack, idle, alone: of their sum */
	double jit_hit_share; /* hits / (hits + misses) */
	double jit_compile_mean_ns;
	double cpu_pct;      /* of one core */
	double loops_s;      /* serving loop passes */
	double work_pct;     /* of one core: passes that moved something */
	double launch_pct;   /* of one core: the launcher thread issuing bundles */
	double commands_s;
	double ns_per_command; /* work_ns / commands: the executor's CPU cost of one command */
	double take_share, disp_share; /* of work_ns */
	uint32_t nclasses, nparts;
	struct sched_class_fig classes[OOO_SCHED_CLASSES];
	struct sched_part_fig parts[OOO_SCHED_PARTITIONS];
};

static void sched_figures(const struct ooo_sched_counters *c, uint64_t span_ns, struct sched_fig *f)
{
	uint64_t reasons = c->dispatch_full + c->dispatch_slack + c->dispatch_idle + c->dispatch_alone;
	const uint64_t why[4] = { c->dispatch_full, c->dispatch_slack, c->dispatch_idle, c->dispatch_alone };

	memset(f, 0, sizeof(*f));
	f->span_ns = span_ns;
	f->bundles_s = sched_per_s(c->bundles, span_ns);
	f->fused_bundles_s = sched_per_s(c->fused_bundles, span_ns);
	f->launches_s = sched_per_s(c->launches, span_ns);
	f->fused_launches_s = sched_per_s(c->fused_launches, span_ns);
	f->direct_launches_s = sched_per_s(c->direct_launches, span_ns);
	f->members = sched_share(c->launches, c->bundles);
	f->fused_share = sched_share(c->fused_launches, c->launches);
	for (int i = 0; i < 4; i++)
		f->dispatch_share[i] = sched_share(why[i], reasons);
	f->jit_hit_share = sched_share(c->jit_hits, c->jit_hits + c->jit_misses);
	f->jit_compile_mean_ns = sched_share(c->jit_compile_ns, c->jit_compiles);
	f->cpu_pct = sched_share(c->cpu_ns, span_ns) * 100.0;
	f->loops_s = sched_per_s(c->loops, span_ns);
	f->work_pct = sched_share(c->work_ns, span_ns) * 100.0;
	f->launch_pct = sched_share(c->launch_ns, span_ns) * 100.0;
	f->commands_s = sched_per_s(c->commands, span_ns);
	f->ns_per_command = sched_share(c->work_ns, c->commands);
	f->take_share = sched_share(c->take_ns, c->work_ns);
	f->disp_share = sched_share(c->dispatch_ns, c->work_ns);
	f->nclasses = sched_nclasses(c);
	f->nparts = sched_nparts(c);
	for (uint32_t i = 0; i < f->nclasses; i++) {
		const struct ooo_sched_class_stats *k = &c->classes[i];

		f->classes[i].launches_s = sched_per_s(k->launches, span_ns);
		f->classes[i].miss_share = sched_share(k->deadline_misses, k->launches);
		f->classes[i].lat_mean_us = sched_share(k->lat_sum_ns, k->launches) / 1e3;
		f->classes[i].lat_max_us = (double)k->lat_max_ns / 1e3;
	}
	for (uint32_t i = 0; i < f->nparts; i++) {
		f->parts[i].bundles_s = sched_per_s(c->parts[i].bundles, span_ns);
		f->parts[i].util = sched_share(c->parts[i].busy_ns, span_ns);
	}
}

/* How the two snapshots of one GPU compare. */
enum sched_cmp {
	SCHED_NONE,       /* no counters in the last snapshot */
	SCHED_CUMULATIVE, /* one snapshot asked for (--interval 0) */
	SCHED_FIRST,      /* the first snapshot had none: the executor's first report came in between */
	SCHED_RESTARTED,  /* different executor runs */
	SCHED_STALE,      /* the executor sent nothing new in between */
	SCHED_INTERVAL,   /* a delta over a positive interval */
};

/* a: the first snapshot's record of the GPU, NULL if only one was taken; b: the last one's. */
static enum sched_cmp sched_compare(const struct ooo_sched_rec *a, const struct ooo_sched_rec *b)
{
	if (!b->have)
		return SCHED_NONE;
	if (!a)
		return SCHED_CUMULATIVE;
	if (!a->have)
		return SCHED_FIRST;
	if (!sched_same_run(&a->c, &b->c))
		return SCHED_RESTARTED;
	if (b->c.snapshot_ns == a->c.snapshot_ns)
		return SCHED_STALE;
	return SCHED_INTERVAL;
}

/* Why a GPU has no counters, from its state (and the device's last failure, if known). */
static const char *sched_why_none(char *buf, size_t cap, uint32_t state, const char *dev_reason)
{
	const char *sep = dev_reason && dev_reason[0] ? ": " : "";

	if (!dev_reason)
		dev_reason = "";
	switch (state) {
	case OOO_DEV_READY:
		snprintf(buf, cap, "the executor has not reported counters yet (ready)");
		break;
	case OOO_DEV_STARTING:
		snprintf(buf, cap, "the executor has not reported counters yet (starting)");
		break;
	default:
		snprintf(buf, cap, "no executor runs (%s%s%s)", dev_state(state), sep, dev_reason);
		break;
	}
	return buf;
}

static const char *sched_note(enum sched_cmp k)
{
	switch (k) {
	case SCHED_FIRST: return "the executor reported its first counters during the interval";
	case SCHED_RESTARTED: return "the executor restarted between the snapshots";
	case SCHED_STALE: return "the executor reported nothing new during the interval";
	default: return NULL;
	}
}

/* ---- sched: fetching and printing ---- */

static const char *const sched_reason_names[4] = { "full", "slack", "idle", "alone" };
static const char *const sched_tier_names[OOO_PRIO_TIERS] = { "low", "default", "high" };

/* "-" for a figure without a value */
static const char *fmt_fig(char *buf, size_t cap, double v, int prec)
{
	if (!isfinite(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.*f", prec, v);
	return buf;
}

static const char *fmt_share(char *buf, size_t cap, double v)
{
	if (!isfinite(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.1f%%", v * 100.0);
	return buf;
}

static const char *fmt_dur_fig(char *buf, size_t cap, double ns)
{
	if (!isfinite(ns))
		snprintf(buf, cap, "-");
	else
		fmt_dur(buf, cap, (uint64_t)ns);
	return buf;
}

static const char *class_label(const char *name)
{
	return name[0] ? name : "(other classes)";
}

/* KEY_p50_ns and KEY_p99_ns of histogram h (null when it is empty). */
static void j_stage_quantiles(const char *key, const uint64_t *h)
{
	char sk[48];

	snprintf(sk, sizeof(sk), "%s_p50_ns", key);
	j_num(sk, hist_quantile(h, 0.5), 0);
	snprintf(sk, sizeof(sk), "%s_p99_ns", key);
	j_num(sk, hist_quantile(h, 0.99), 0);
}

static void j_sched(const char *key, const struct ooo_sched_counters *c, const struct sched_fig *f)
{
	const uint64_t why[4] = { c->dispatch_full, c->dispatch_slack, c->dispatch_idle, c->dispatch_alone };

	j_obj(key);
	j_u64("span_ns", f->span_ns);
	j_u64("bundles", c->bundles);
	j_u64("fused_bundles", c->fused_bundles);
	j_u64("launches", c->launches);
	j_u64("fused_launches", c->fused_launches);
	j_u64("direct_launches", c->direct_launches);
	j_num("bundles_per_s", f->bundles_s, 3);
	j_num("fused_bundles_per_s", f->fused_bundles_s, 3);
	j_num("launches_per_s", f->launches_s, 3);
	j_num("fused_launches_per_s", f->fused_launches_s, 3);
	j_num("direct_launches_per_s", f->direct_launches_s, 3);
	j_num("members_per_bundle", f->members, 3);
	j_u64("max_members", c->max_members);
	j_num("fused_share", f->fused_share, 4);
	j_obj("dispatch");
	for (int i = 0; i < 4; i++)
		j_u64(sched_reason_names[i], why[i]);
	j_obj_end();
	j_u64("retried", c->retried);
	j_u64("unfused_nopay", c->unfused_nopay);
	j_u64("stream_waits", c->stream_waits);
	j_u64("chained_launches", c->chained_launches);
	j_u64("burst_holds", c->burst_holds);
	j_obj("bundles_by_priority");
	for (unsigned i = 0; i < OOO_PRIO_TIERS; i++)
		j_u64(sched_tier_names[i], c->tier_bundles[i]);
	j_obj_end();
	j_obj("bundles_by_stream"); /* within their tier: "0" .. streams - 1 */
	for (unsigned i = 0; i < OOO_SCHED_STREAMS && i < (c->streams ? c->streams : 1); i++) {
		char k[4];

		snprintf(k, sizeof(k), "%u", i);
		j_u64(k, c->stream_bundles[i]);
	}
	j_obj_end();
	j_u64("param_bundles", c->param_bundles);
	j_obj("jit");
	j_u64("hits", c->jit_hits);
	j_u64("misses", c->jit_misses);
	j_u64("compiles", c->jit_compiles);
	j_u64("failures", c->jit_failures);
	j_num("hit_share", f->jit_hit_share, 4);
	j_num("compile_mean_ns", f->jit_compile_mean_ns, 0);
	j_u64("compile_max_ns", c->jit_compile_max_ns);
	j_obj_end();
	j_u64("cpu_ns", c->cpu_ns);
	j_num("cpu_pct", f->cpu_pct, 2);
	j_u64("loops", c->loops);
	j_num("loops_per_s", f->loops_s, 1);
	j_u64("work_ns", c->work_ns);
	j_num("work_pct", f->work_pct, 2);
	j_u64("launch_ns", c->launch_ns);
	j_num("launch_pct", f->launch_pct, 2);
	j_u64("commands", c->commands);
	j_num("commands_per_s", f->commands_s, 1);
	j_num("ns_per_command", f->ns_per_command, 1);
	j_u64("take_ns", c->take_ns);
	j_num("take_share", f->take_share, 4);
	j_u64("dispatch_ns", c->dispatch_ns);
	j_num("dispatch_share", f->disp_share, 4);
	j_num("hold_p50_ns", hist_quantile(c->hold_hist, 0.5), 0);
	j_num("hold_p99_ns", hist_quantile(c->hold_hist, 0.99), 0);
	j_num("latency_p50_ns", hist_quantile(c->lat_hist, 0.5), 0);
	j_num("latency_p99_ns", hist_quantile(c->lat_hist, 0.99), 0);
	for (int h = 0; h < STAGES; h++)
		j_stage_quantiles(stage_keys[h], stage_hist(c, h));
	j_u64("submit_stamps_bad", c->submit_stamp_bad);
	j_arr("classes");
	for (uint32_t i = 0; i < f->nclasses; i++) {
		const struct ooo_sched_class_stats *k = &c->classes[i];

		j_obj(NULL);
		j_str("name", k->name);
		j_u64("slo_us", k->slo_us);
		j_u64("launches", k->launches);
		j_num("launches_per_s", f->classes[i].launches_s, 3);
		j_u64("deadline_misses", k->deadline_misses);
		j_num("miss_share", f->classes[i].miss_share, 4);
		j_num("lat_mean_us", f->classes[i].lat_mean_us, 3);
		j_num("lat_max_us", f->classes[i].lat_max_us, 3);
		for (int h = 0; h < OOO_CMD_STAGES; h++)
			j_stage_quantiles(stage_keys[h], k->cmd_stage_hist[h]);
		j_obj_end();
	}
	j_arr_end();
	j_arr("partitions");
	for (uint32_t i = 0; i < f->nparts; i++) {
		j_obj(NULL);
		j_u64("index", i);
		j_str("class", c->parts[i].name[0] ? c->parts[i].name : NULL);
		j_u64("sms", c->parts[i].sms);
		j_u64("max_inflight", c->parts[i].max_inflight);
		j_u64("streams", c->streams ? c->streams : 1);
		j_u64("bundles", c->parts[i].bundles);
		j_num("bundles_per_s", f->parts[i].bundles_s, 3);
		j_u64("busy_ns", c->parts[i].busy_ns);
		j_num("util_pct", sched_util_pct(f->parts[i].util), 2);
		j_u64("reserve_inflight", c->parts[i].reserve_inflight);
		j_obj_end();
	}
	j_arr_end();
	j_obj_end();
}

/* One metric row: its interval figure (if there is an interval column) and its cumulative one. */
static void sched_row(struct table *t, bool iv, const char *name, const char *vi, const char *vc)
{
	table_cell(t, "%s", name);
	if (iv)
		table_cell(t, "%s", vi);
	table_cell(t, "%s", vc);
}

/* "N (S%)" for a dispatch reason */
static const char *fmt_count_share(char *buf, size_t cap, uint64_t n, double share)
{
	char s[32];

	if (!isfinite(share))
		snprintf(buf, cap, "%" PRIu64, n);
	else
		snprintf(buf, cap, "%" PRIu64 " (%s)", n, fmt_share(s, sizeof(s), share));
	return buf;
}

/* The text of one GPU: d/fd the interval (NULL without one), c/fc the run's totals. */
static void sched_print(const struct ooo_sched_counters *d, const struct sched_fig *fd,
			const struct ooo_sched_counters *c, const struct sched_fig *fc)
{
	static const char *const cols3[] = { "METRIC", ">INTERVAL", ">CUMULATIVE" };
	static const char *const cols2[] = { "METRIC", ">CUMULATIVE" };
	static const char *const ccols[] = { "CLASS", ">SLO_US", ">LAUNCHES/S", ">LAUNCHES", ">MISSES", ">MISS%",
					     ">MEAN_US", ">MAX_US" };
	static const char *const stcols[] = { "CLASS", ">SUBMIT", ">QUEUE", ">RUN", ">NOTIFY" };
	static const char *const pcols[] = { ">PART", "CLASS", ">SMS", ">STREAMS", ">INFLIGHT", ">BUNDLES/S", ">BUNDLES",
					     ">UTIL" };
	const uint64_t wc[4] = { c->dispatch_full, c->dispatch_slack, c->dispatch_idle, c->dispatch_alone };
	const struct ooo_sched_counters *k = d ? d : c; /* what the class and partition rows show */
	const struct sched_fig *fk = d ? fd : fc;
	bool iv = d != NULL;
	char a[64], b[64];
	struct table t;

	table_init(&t, iv ? 3 : 2, iv ? cols3 : cols2);
#define ROW_RATE(name, field)                                                                              \
	sched_row(&t, iv, name, iv ? fmt_fig(a, sizeof(a), fd->field, 1) : "", fmt_fig(b, sizeof(b), fc->field, 1))
#define ROW_COUNT(name, field)                                                                             \
	do {                                                                                               \
		if (iv)                                                                                    \
			snprintf(a, sizeof(a), "%" PRIu64, d->field);                                      \
		snprintf(b, sizeof(b), "%" PRIu64, c->field);                                              \
		sched_row(&t, iv, name, a, b);                                                             \
	} while (0)
	ROW_RATE("bundles/s", bundles_s);
	ROW_RATE("fused bundles/s", fused_bundles_s);
	ROW_RATE("launches/s", launches_s);
	ROW_RATE("fused launches/s", fused_launches_s);
	ROW_RATE("direct launches/s", direct_launches_s);
	sched_row(&t, iv, "members/bundle", iv ? fmt_fig(a, sizeof(a), fd->members, 2) : "",
		  fmt_fig(b, sizeof(b), fc->members, 2));
	snprintf(b, sizeof(b), "%" PRIu32, c->max_members);
	sched_row(&t, iv, "max members", "-", b);
	sched_row(&t, iv, "fused share", iv ? fmt_share(a, sizeof(a), fd->fused_share) : "",
		  fmt_share(b, sizeof(b), fc->fused_share));
	ROW_COUNT("direct launches", direct_launches);
	for (int i = 0; i < 4; i++) {
		const uint64_t wd[4] = { iv ? d->dispatch_full : 0, iv ? d->dispatch_slack : 0,
					 iv ? d->dispatch_idle : 0, iv ? d->dispatch_alone : 0 };
		char name[32];

		snprintf(name, sizeof(name), "dispatch %s", sched_reason_names[i]);
		sched_row(&t, iv, name, iv ? fmt_count_share(a, sizeof(a), wd[i], fd->dispatch_share[i]) : "",
			  fmt_count_share(b, sizeof(b), wc[i], fc->dispatch_share[i]));
	}
	ROW_COUNT("retried", retried);
	ROW_COUNT("unfused, no gain", unfused_nopay);
	ROW_COUNT("stream waits", stream_waits);
	ROW_COUNT("chained launches", chained_launches);
	ROW_COUNT("burst holds", burst_holds);
	ROW_COUNT("bundles, low priority", tier_bundles[0]);
	ROW_COUNT("bundles, default priority", tier_bundles[1]);
	ROW_COUNT("bundles, high priority", tier_bundles[2]);
	{
		/* bundles by the stream they went on within their tier, "s0/s1/...": how the streams share them */
		unsigned ns = c->streams ? c->streams : 1;
		size_t la = 0, lb = 0;

		a[0] = b[0] = '\0';
		for (unsigned i = 0; i < ns && i < OOO_SCHED_STREAMS; i++) {
			if (iv && la < sizeof(a))
				la += (size_t)snprintf(a + la, sizeof(a) - la, "%s%" PRIu64, i ? "/" : "", d->stream_bundles[i]);
			if (lb < sizeof(b))
				lb += (size_t)snprintf(b + lb, sizeof(b) - lb, "%s%" PRIu64, i ? "/" : "", c->stream_bundles[i]);
		}
		sched_row(&t, iv, "bundles by stream", a, b);
	}
	ROW_COUNT("table as parameter", param_bundles);
	{
		static const char *const nm[4] = { "launch hold p50", "launch hold p99", "launch latency p50",
						   "launch latency p99" };
		for (int r = 0; r < 4; r++) {
			const uint64_t *hd = r < 2 ? k->hold_hist : k->lat_hist, *hc = r < 2 ? c->hold_hist : c->lat_hist;
			double q = r % 2 ? 0.99 : 0.5, vd = iv ? hist_quantile(hd, q) : NAN, vc = hist_quantile(hc, q);

			sched_row(&t, iv, nm[r], iv ? (isnan(vd) ? "-" : fmt_dur(a, sizeof(a), (uint64_t)vd)) : "",
				  isnan(vc) ? "-" : fmt_dur(b, sizeof(b), (uint64_t)vc));
		}
	}
	for (int h = 0; h < STAGES; h++) {
		for (int r = 0; r < 2; r++) {
			const uint64_t *hd = stage_hist(k, h), *hc = stage_hist(c, h);
			double q = r ? 0.99 : 0.5, vd = iv ? hist_quantile(hd, q) : NAN, vc = hist_quantile(hc, q);
			char nm[48];

			snprintf(nm, sizeof(nm), "%s %s", stage_rows[h], r ? "p99" : "p50");
			sched_row(&t, iv, nm, iv ? (isnan(vd) ? "-" : fmt_dur(a, sizeof(a), (uint64_t)vd)) : "",
				  isnan(vc) ? "-" : fmt_dur(b, sizeof(b), (uint64_t)vc));
		}
	}
	ROW_COUNT("jit hits", jit_hits);
	ROW_COUNT("jit misses", jit_misses);
	ROW_COUNT("jit compiles", jit_compiles);
	ROW_COUNT("jit failures", jit_failures);
	sched_row(&t, iv, "jit compile mean", iv ? fmt_dur_fig(a, sizeof(a), fd->jit_compile_mean_ns) : "",
		  fmt_dur_fig(b, sizeof(b), fc->jit_compile_mean_ns));
	sched_row(&t, iv, "jit compile max", "-",
		  c->jit_compiles ? fmt_dur(b, sizeof(b), c->jit_compile_max_ns) : "-");
	sched_row(&t, iv, "executor cpu", iv ? fmt_share(a, sizeof(a), fd->cpu_pct / 100.0) : "",
		  fmt_share(b, sizeof(b), fc->cpu_pct / 100.0));
	sched_row(&t, iv, "executor busy", iv ? fmt_share(a, sizeof(a), fd->work_pct / 100.0) : "",
		  fmt_share(b, sizeof(b), fc->work_pct / 100.0));
	sched_row(&t, iv, "launcher busy", iv ? fmt_share(a, sizeof(a), fd->launch_pct / 100.0) : "",
		  fmt_share(b, sizeof(b), fc->launch_pct / 100.0));
	ROW_RATE("loop passes/s", loops_s);
	ROW_RATE("commands/s", commands_s);
	sched_row(&t, iv, "busy ns/command", iv ? fmt_fig(a, sizeof(a), fd->ns_per_command, 0) : "",
		  fmt_fig(b, sizeof(b), fc->ns_per_command, 0));
	sched_row(&t, iv, "busy: sessions", iv ? fmt_share(a, sizeof(a), fd->take_share) : "",
		  fmt_share(b, sizeof(b), fc->take_share));
	sched_row(&t, iv, "busy: dispatching", iv ? fmt_share(a, sizeof(a), fd->disp_share) : "",
		  fmt_share(b, sizeof(b), fc->disp_share));
#undef ROW_RATE
#undef ROW_COUNT
	table_print(&t);
	if (fk->nclasses) {
		printf("\nper class, %s (MAX_US: since the executor started):\n",
		       iv ? "over the interval" : "since the executor started");
		table_init(&t, 8, ccols);
		for (uint32_t i = 0; i < fk->nclasses; i++) {
			const struct ooo_sched_class_stats *cl = &k->classes[i];
			const struct sched_class_fig *f = &fk->classes[i];

			table_cell(&t, "%s", class_label(cl->name));
			table_cell(&t, "%" PRIu32, cl->slo_us);
			table_cell(&t, "%s", fmt_fig(a, sizeof(a), f->launches_s, 1));
			table_cell(&t, "%" PRIu64, cl->launches);
			table_cell(&t, "%" PRIu64, cl->deadline_misses);
			table_cell(&t, "%s", fmt_share(a, sizeof(a), f->miss_share));
			table_cell(&t, "%s", fmt_fig(a, sizeof(a), f->lat_mean_us, 1));
			table_cell(&t, "%s", fmt_fig(a, sizeof(a), f->lat_max_us, 1));
		}
		table_print(&t);
		printf("\nper class, the command stages as above, p50 / p99, %s:\n",
		       iv ? "over the interval" : "since the executor started");
		table_init(&t, 1 + OOO_CMD_STAGES, stcols);
		for (uint32_t i = 0; i < fk->nclasses; i++) {
			const struct ooo_sched_class_stats *cl = &k->classes[i];

			table_cell(&t, "%s", class_label(cl->name));
			for (int h = 0; h < OOO_CMD_STAGES; h++) {
				double p50 = hist_quantile(cl->cmd_stage_hist[h], 0.5);
				double p99 = hist_quantile(cl->cmd_stage_hist[h], 0.99);
				char x[32], y[32];

				table_cell(&t, "%s / %s", isnan(p50) ? "-" : fmt_dur(x, sizeof(x), (uint64_t)p50),
					   isnan(p99) ? "-" : fmt_dur(y, sizeof(y), (uint64_t)p99));
			}
		}
		table_print(&t);
	}
	if (fk->nparts) {
		printf("\nper partition, %s (UTIL: GPU time of its bundles / elapsed time):\n",
		       iv ? "over the interval" : "since the executor started");
		table_init(&t, 8, pcols);
		for (uint32_t i = 0; i < fk->nparts; i++) {
			table_cell(&t, "%" PRIu32, i);
			table_cell(&t, "%s", k->parts[i].name[0] ? k->parts[i].name : "(shared)");
			table_cell(&t, "%" PRIu32, k->parts[i].sms);
			table_cell(&t, "%" PRIu32, k->streams ? k->streams : 1);
			table_cell(&t, "%" PRIu32, k->parts[i].max_inflight);
			table_cell(&t, "%s", fmt_fig(a, sizeof(a), fk->parts[i].bundles_s, 1));
			table_cell(&t, "%" PRIu64, k->parts[i].bundles);
			table_cell(&t, "%s", fmt_share(a, sizeof(a), sched_util_pct(fk->parts[i].util) / 100.0));
		}
		table_print(&t);
	}
}

/* The record of GPU idx in a snapshot, or NULL. */
static const struct ooo_sched_rec *sched_find(const struct ooo_sched_rec *r, size_t n, uint32_t idx)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].index == idx)
			return &r[i];
	return NULL;
}

/* One snapshot of every GPU (and, with dev, the devices' failure reasons); 0 or an exit code (reported). */
static int sched_snapshot(struct ooo_sched_rec **r, size_t *n, struct ooo_device_rec **dev, size_t *ndev)
{
	ooo_session *s;
	int rc, err;

	if (!(s = admin_open(&rc)))
		return rc;
	err = fetch_list(s, OOO_MSG_SCHED, sizeof(**r), (void **)r, n);
	/* the devices only explain missing counters: their absence is no failure */
	if (err == 0 && dev && fetch_list(s, OOO_MSG_DEVICES, sizeof(**dev), (void **)dev, ndev) < 0) {
		*dev = NULL;
		*ndev = 0;
	}
	ooo_close(s);
	return err < 0 ? report("sched", err) : 0;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Whether a selected GPU has counters in the snapshot (else an interval would measure nothing). */
static bool sched_any(const struct ooo_sched_rec *r, size_t n, long want)
{
	for (size_t i = 0; i < n; i++)
		if ((want < 0 || r[i].device == (uint32_t)want) && r[i].have)
			return true;
	return false;
}

/* True while a GPU with counters in both snapshots shows the same one twice. */
static bool sched_waiting(const struct ooo_sched_rec *r1, size_t n1, const struct ooo_sched_rec *r2, size_t n2,
			  long want)
{
	for (size_t i = 0; i < n2; i++) {
		const struct ooo_sched_rec *a = sched_find(r1, n1, r2[i].index);

		if (want >= 0 && r2[i].device != (uint32_t)want)
			continue;
		if (a && sched_compare(a, &r2[i]) == SCHED_STALE)
			return true;
	}
	return false;
}

#define SCHED_WAIT_MORE_NS (2500ull * 1000000ull) /* the executors report about once a second */
#define SCHED_POLL_NS (100ull * 1000000ull)

static int do_sched(int argc, char **argv)
{
	struct ooo_sched_rec *r1 = NULL, *r2 = NULL;
	struct ooo_device_rec *dev = NULL;
	size_t n1 = 0, n2 = 0, ndev = 0, shown = 0;
	unsigned long interval = 1000, v;
	bool interval_used = true;
	long want = -1;
	int c, rc;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "d:i:")) != -1) {
		if (c == 'd') {
			if (!parse_uint(optarg, 0, UINT32_MAX - 1, &v))
				return usage_error("--device wants a GPU index, not '%s'", optarg);
			want = (long)v;
		} else if (c == 'i') {
			if (!parse_uint(optarg, 0, 3600000, &interval))
				return usage_error("--interval wants milliseconds from 0 to 3600000, not '%s'", optarg);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if ((rc = sched_snapshot(&r1, &n1, &dev, &ndev)))
		return rc;
	if (interval && sched_any(r1, n1, want)) {
		uint64_t deadline;

		free(dev);
		dev = NULL;
		ndev = 0;
		sleep_ns((uint64_t)interval * 1000000ull);
		deadline = (uint64_t)mono_ns() + SCHED_WAIT_MORE_NS;
		for (;;) {
			if ((rc = sched_snapshot(&r2, &n2, &dev, &ndev))) {
				free(r1);
				return rc;
			}
			if (!sched_waiting(r1, n1, r2, n2, want) || (uint64_t)mono_ns() >= deadline)
				break;
			free(r2);
			free(dev);
			r2 = NULL;
			dev = NULL;
			sleep_ns(SCHED_POLL_NS);
		}
	} else {
		/* one snapshot: asked for, or no counters to take a difference of */
		r2 = r1;
		n2 = n1;
		r1 = NULL;
		n1 = 0;
		interval_used = false;
	}
	uint32_t ngpus = 0;
	bool found = false;

	for (size_t i = 0; i < n2; i++) {
		if (r2[i].device + 1 > ngpus)
			ngpus = r2[i].device + 1;
		found |= want >= 0 && r2[i].device == (uint32_t)want;
	}
	if (want >= 0 && !found) {
		if (n2)
			err_msg("no GPU %ld: oood has %" PRIu32 " (0 to %" PRIu32 ")", want, ngpus, ngpus - 1);
		else
			err_msg("no GPU %ld: oood runs no GPU executors", want);
		free(r1);
		free(r2);
		free(dev);
		return RC_FAIL;
	}

	if (opt_json) {
		j_obj(NULL);
		j_u64("interval_ms", interval);
		j_arr("gpus");
	} else if (!n2) {
		printf("no GPU executors (executor = no in the configuration)\n");
	}
	for (size_t i = 0; i < n2; i++) {
		const struct ooo_sched_rec *b = &r2[i], *a = interval_used ? sched_find(r1, n1, b->index) : NULL;
		const struct ooo_device_rec *dv = NULL;
		enum sched_cmp k;
		struct ooo_sched_counters d;
		struct sched_fig fd, fc;
		char why[OOO_ERRMSG_MAX + 64], b1[64], b2[64];
		static struct ooo_sched_rec none; /* the first snapshot lacked the GPU: as if it had no counters */

		if (want >= 0 && b->device != (uint32_t)want)
			continue;
		if (interval_used && !a)
			a = &none;
		for (size_t j = 0; j < ndev; j++)
			if (dev[j].index == b->index)
				dv = &dev[j];
		k = sched_compare(a, b);
		if (k == SCHED_INTERVAL) {
			sched_delta(&a->c, &b->c, &d);
			sched_figures(&d, d.snapshot_ns, &fd);
		}
		if (k != SCHED_NONE)
			sched_figures(&b->c, b->c.up_ns, &fc);
		else
			sched_why_none(why, sizeof(why), b->state, dv ? dv->reason : NULL);
		if (opt_json) {
			j_obj(NULL);
			j_u64("index", b->index);
			j_u64("device", b->device);
			j_str("domain", b->domain);
			j_str("state", dev_state(b->state));
			j_bool("have_counters", k != SCHED_NONE);
			j_str("reason", k == SCHED_NONE ? why : NULL);
			j_bool("restarted", k == SCHED_RESTARTED);
			j_str("note", sched_note(k));
			if (k == SCHED_NONE) {
				j_null("age_ns");
				j_null("up_ns");
				j_null("snapshot_ns");
			} else {
				j_u64("age_ns", b->age_ns);
				j_u64("up_ns", b->c.up_ns);
				j_u64("snapshot_ns", b->c.snapshot_ns);
			}
			if (k == SCHED_INTERVAL) {
				j_u64("interval_ns", d.snapshot_ns);
				j_sched("interval", &d, &fd);
			} else {
				j_null("interval_ns");
				j_null("interval");
			}
			if (k != SCHED_NONE)
				j_sched("cumulative", &b->c, &fc);
			else
				j_null("cumulative");
			j_obj_end();
			shown++;
			continue;
		}
		if (shown++)
			putchar('\n');
		if (k == SCHED_NONE) {
			printf("gpu %" PRIu32 " %s: no scheduler counters: %s\n", b->device,
			       DOMAIN_NAME(b->domain), why);
			continue;
		}
		printf("gpu %" PRIu32 " %s (%s): executor up %s, counters %s old", b->device,
		       DOMAIN_NAME(b->domain), dev_state(b->state),
		       fmt_dur(b1, sizeof(b1), b->c.up_ns), fmt_dur(b2, sizeof(b2), b->age_ns));
		if (k == SCHED_INTERVAL)
			printf(", interval %s\n", fmt_dur(b1, sizeof(b1), d.snapshot_ns));
		else
			putchar('\n');
		if (sched_note(k))
			printf("note: %s: cumulative figures only\n", sched_note(k));
		sched_print(k == SCHED_INTERVAL ? &d : NULL, &fd, &b->c, &fc);
	}
	if (opt_json) {
		j_arr_end();
		j_obj_end();
	}
	free(r1);
	free(r2);
	free(dev);
	return RC_OK;
}

/* ---- reload -------------------------------------------------------------------- */

static int do_reload(int argc, char **argv)
{
	struct ooo_msg_reload_reply rr;
	ooo_session *s;
	int rc, r;

	if ((rc = no_args(argc, argv)))
		return rc;
	if (!(s = admin_open(&rc)))
		return rc;
	r = call(s, OOO_MSG_RELOAD, NULL, 0, &rr, sizeof(rr));
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

/* ---- config ------------------------------------------------------------------- */

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

static void json_policy(const char *file, const struct policy *p)
{
	j_obj(NULL);
	j_str("file", file);
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
	file = optind < argc ? argv[optind] : DEFAULT_CONF;
	r = policy_load_file(file, &p, &perr);
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
			fprintf(stderr, "%s:%d: %s\n", file, perr.line, perr.msg);
		else /* errors not tied to a line already name the file */
			fprintf(stderr, "%s\n", perr.msg);
		return RC_FAIL;
	}
	if (p->warning[0]) /* valid, but worth saying (an obsolete key): stderr, so that --json stays JSON */
		fprintf(stderr, "%s: warning: %s\n", file, p->warning);
	if (opt_json)
		json_policy(file, p);
	else
		printf("%s: OK (%zu class%s)\n", file, p->nclasses, p->nclasses == 1 ? "" : "es");
	policy_free(p);
	return RC_OK;
}

static int config_default(int argc, char **argv)
{
	optind = 0;
	if (cmd_getopt(argc, argv, "") != -1)
		return RC_USAGE;
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	fputs(policy_default_text, stdout);
	return RC_OK;
}

static int do_config(int argc, char **argv)
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

/* ---- ping ---------------------------------------------------------------------- */

static int do_ping(int argc, char **argv)
{
	unsigned long count = 10;
	int64_t min = INT64_MAX, max = 0, sum = 0;
	ooo_session *s;
	int c, rc;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "c:")) != -1) {
		if (c == 'c' && !parse_uint(optarg, 1, 1000000, &count))
			return usage_error("-c wants a count from 1 to 1000000, not '%s'", optarg);
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!(s = admin_open(&rc)))
		return rc;
	for (unsigned long i = 0; i < count; i++) {
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
	printf("%s: %lu round trip%s, min/avg/max = %.1f/%.1f/%.1f us\n", admin_path, count, count == 1 ? "" : "s",
	       (double)min / 1e3, (double)sum / (double)count / 1e3, (double)max / 1e3);
	return RC_OK;
}

/* ---- version -------------------------------------------------------------------- */

static int do_version(int argc, char **argv)
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

/* ---- telemetry: telemetry, top, hist, trace, metrics ------------------------------ */

static const char *const tm_fn_names[3] = { "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize" };

static const char *tm_state_name(uint32_t s)
{
	switch (s) {
	case OOO_TM_DISABLED: return "disabled";
	case OOO_TM_UNAVAILABLE: return "unavailable";
	case OOO_TM_RUNNING: return "running";
	default: return "unknown";
	}
}

static const char *tm_launch_mode(uint32_t m)
{
	return m == 1 ? "all" : m == 2 ? "off" : "tracked";
}

static int get_telemetry(ooo_session *s, struct ooo_msg_telemetry *t)
{
	int r = call(s, OOO_MSG_TELEMETRY, NULL, 0, t, sizeof(*t));

	if (r >= 0 && (size_t)r != sizeof(*t)) {
		snprintf(reason, sizeof(reason), "telemetry reply of %d bytes, expected %zu", r, sizeof(*t));
		return -OOO_EPROTO;
	}
	return r < 0 ? r : 0;
}

static const char *fmt_track(char *buf, size_t cap, uint32_t t)
{
	snprintf(buf, cap, "%s%s%s%s%s%s", t & OOO_TRACK_SESSION ? "s" : "", t & OOO_TRACK_EXECUTOR ? "x" : "",
		 t & OOO_TRACK_LEASE ? "n" : "", t & OOO_TRACK_OPERATOR ? "o" : "", t & OOO_TRACK_LAUNCHES ? "L" : "",
		 t ? "" : "-");
	return buf;
}

static void j_track(const char *key, uint32_t t)
{
	j_arr(key);
	if (t & OOO_TRACK_SESSION)
		j_str(NULL, "session");
	if (t & OOO_TRACK_EXECUTOR)
		j_str(NULL, "executor");
	if (t & OOO_TRACK_LEASE)
		j_str(NULL, "lease");
	if (t & OOO_TRACK_OPERATOR)
		j_str(NULL, "operator");
	if (t & OOO_TRACK_LAUNCHES)
		j_str(NULL, "launches");
	j_arr_end();
}

static int do_telemetry(int argc, char **argv)
{
	struct ooo_msg_telemetry t;
	ooo_session *s;
	char b1[64], b2[64];
	int rc, r;

	if ((rc = no_args(argc, argv)))
		return rc;
	if (!(s = admin_open(&rc)))
		return rc;
	r = get_telemetry(s, &t);
	ooo_close(s);
	if (r < 0)
		return report("telemetry", r);
	if (opt_json) {
		j_obj(NULL);
		j_str("state", tm_state_name(t.state));
		j_str("reason", t.reason[0] ? t.reason : NULL);
		j_bool("cuda_probes", t.cuda);
		j_bool("runqueue_probes", t.sched);
		j_bool("all_processes", t.all_processes);
		j_str("launch_probes", tm_launch_mode(t.launch_probes));
		j_u64("slow_sync_ns", t.slow_sync_ns);
		j_u64("tracked", t.tracked);
		j_u64("max_tracked", t.max_tracked);
		j_u64("procs", t.procs);
		j_u64("runqueue_procs", t.rq_procs);
		j_u64("max_procs", t.max_procs);
		j_u64("events", t.events);
		j_u64("ring_full", t.ring_full);
		j_u64("procs_full", t.procs_full);
		j_u64("inflight_lost", t.inflight_lost);
		j_u64("aged_out", t.aged_out);
		j_u64("launch_links", t.launch_links);
		j_arr("libraries");
		for (uint32_t i = 0; i < t.nlibs; i++) {
			j_obj(NULL);
			j_str("path", t.libs[i].path);
			j_u64("dev", t.libs[i].dev);
			j_u64("ino", t.libs[i].ino);
			j_u64("probes", t.libs[i].probes);
			j_u64("missing_symbols", t.libs[i].missing);
			j_obj_end();
		}
		j_arr_end();
		j_arr("slow_syncs");
		for (uint32_t i = 0; i < t.nrecent; i++) {
			j_obj(NULL);
			j_u64("pid", t.recent[i].pid);
			j_u64("tid", t.recent[i].tid);
			j_str("comm", t.recent[i].comm);
			j_str("function", t.recent[i].fn < 3 ? tm_fn_names[t.recent[i].fn] : "?");
			j_u64("dur_ns", t.recent[i].dur_ns);
			j_u64("age_ns", t.recent[i].age_ns);
			j_obj_end();
		}
		j_arr_end();
		j_obj_end();
		return RC_OK;
	}
	kv("telemetry", "%s%s%s", tm_state_name(t.state), t.reason[0] ? ": " : "", t.reason);
	if (t.state != OOO_TM_RUNNING)
		return RC_OK;
	kv("probes", "libcuda %s, run queue %s; %s; launch probes %s", t.cuda ? "on" : "off", t.sched ? "on" : "off",
	   t.all_processes ? "all processes" : "tracked processes only", tm_launch_mode(t.launch_probes));
	kv("slow sync", "over %s", fmt_dur(b1, sizeof(b1), t.slow_sync_ns));
	kv("tracked", "%" PRIu32 " / %" PRIu32 " pids (%" PRIu64 " per-process launch probes)", t.tracked, t.max_tracked,
	   t.launch_links);
	kv("records", "%" PRIu32 " libcuda, %" PRIu32 " run queue, of %" PRIu32 " each", t.procs, t.rq_procs, t.max_procs);
	kv("events", "%" PRIu64 " slow syncs read, %" PRIu64 " lost (ring full)", t.events, t.ring_full);
	kv("not recorded", "%" PRIu64 " (maps full), %" PRIu64 " returns without entry", t.procs_full, t.inflight_lost);
	kv("aged out", "%" PRIu64 " records of exited processes", t.aged_out);
	if (!t.nlibs)
		kv("libcuda", "none found yet");
	for (uint32_t i = 0; i < t.nlibs; i++)
		kv(i ? "" : "libcuda", "%s (%" PRIu32 " uprobes, %" PRIu32 " symbols absent)", t.libs[i].path,
		   t.libs[i].probes, t.libs[i].missing);
	for (uint32_t i = 0; i < t.nrecent; i++)
		kv(i ? "" : "recent slow syncs", "pid %" PRIu32 " (%s) tid %" PRIu32 ": %s %s, %s ago", t.recent[i].pid,
		   t.recent[i].comm, t.recent[i].tid, t.recent[i].fn < 3 ? tm_fn_names[t.recent[i].fn] : "?",
		   fmt_dur(b1, sizeof(b1), t.recent[i].dur_ns), fmt_dur(b2, sizeof(b2), t.recent[i].age_ns));
	return RC_OK;
}

static double tm_quantile(const uint64_t *h, double q)
{
	return hist_quantile(h, q);
}

static uint64_t tm_sum(const uint64_t *h)
{
	uint64_t t = 0;

	for (int b = 0; b < OOO_TM_BUCKETS; b++)
		t += h[b];
	return t;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct ooo_proc_rec *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Sort by pid and keep one record per pid: pages are separate snapshots, so a pid can come twice. */
static void procs_unique(struct ooo_proc_rec *v, size_t *n)
{
	size_t u = 0;

	if (!*n)
		return;
	qsort(v, *n, sizeof(*v), cmp_proc);
	for (size_t i = 0; i < *n; i++) {
		if (u && v[u - 1].pid == v[i].pid)
			continue;
		v[u++] = v[i];
	}
	*n = u;
}

static int procs_snapshot(struct ooo_proc_rec **out, size_t *n)
{
	ooo_session *s;
	int rc, r;

	if (!(s = admin_open(&rc)))
		return rc;
	r = fetch_list(s, OOO_MSG_PROCS, sizeof(**out), (void **)out, n);
	ooo_close(s);
	if (r < 0)
		return report("procs", r);
	procs_unique(*out, n);
	return RC_OK;
}

static const struct ooo_proc_rec *proc_find(const struct ooo_proc_rec *v, size_t n, uint32_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid)
			return &v[i];
	return NULL;
}

static uint64_t proc_syncs(const struct ooo_proc_rec *p)
{
	return p->syncs[0] + p->syncs[1] + p->syncs[2];
}

static void print_top(const struct ooo_proc_rec *a, size_t na, const struct ooo_proc_rec *b, size_t nb, double secs)
{
	static const char *const cols[] = { ">PID", "COMM", ">UID", "TRACK", ">LAUNCH/S", ">SYNC/S", ">SYNC_P50",
					    ">SYNC_P99", ">RQ_P99", ">RQ_MAX", ">ALLOCATED", ">LAUNCHES" };
	struct table tab;

	if (opt_json) {
		j_obj(NULL);
		j_num("interval_s", secs, 3);
		j_arr("procs");
	} else {
		table_init(&tab, 12, cols);
	}
	for (size_t i = 0; i < nb; i++) {
		const struct ooo_proc_rec *p = &b[i], *o = a ? proc_find(a, na, p->pid) : NULL;
		double lps = NAN, sps = NAN;
		uint64_t dh[OOO_TM_BUCKETS], rh[OOO_TM_BUCKETS];
		char c1[32], c2[32], c3[32], c4[32], c5[32], tr[8];

		/* the interval's histograms where there is an earlier snapshot, else since the start */
		for (int k = 0; k < OOO_TM_BUCKETS; k++) {
			dh[k] = p->sync_hist[k] - (o && o->sync_hist[k] <= p->sync_hist[k] ? o->sync_hist[k] : 0);
			rh[k] = p->rq_hist[k] - (o && o->rq_hist[k] <= p->rq_hist[k] ? o->rq_hist[k] : 0);
		}
		if (o && secs > 0) {
			lps = (double)(p->launches - (o->launches <= p->launches ? o->launches : p->launches)) / secs;
			sps = (double)(proc_syncs(p) - (proc_syncs(o) <= proc_syncs(p) ? proc_syncs(o) : proc_syncs(p))) /
			      secs;
		}
		if (opt_json) {
			j_obj(NULL);
			j_u64("pid", p->pid);
			j_str("comm", p->comm);
			if (p->uid == UINT32_MAX)
				j_null("uid");
			else
				j_u64("uid", p->uid);
			j_track("track", p->track);
			j_num("launches_per_s", lps, 1);
			j_num("syncs_per_s", sps, 1);
			j_num("sync_p50_ns", tm_quantile(dh, 0.5), 0);
			j_num("sync_p99_ns", tm_quantile(dh, 0.99), 0);
			j_num("runqueue_p99_ns", tm_quantile(rh, 0.99), 0);
			j_u64("runqueue_max_ns", p->rq_max_ns);
			j_u64("launches", p->launches);
			j_u64("graph_launches", p->graph_launches);
			j_u64("syncs", proc_syncs(p));
			j_u64("alloc_bytes", p->alloc_bytes);
			j_obj_end();
			continue;
		}
		table_cell(&tab, "%" PRIu32, p->pid);
		table_cell(&tab, "%s", p->comm[0] ? p->comm : "-");
		if (p->uid == UINT32_MAX)
			table_cell(&tab, "-");
		else
			table_cell(&tab, "%" PRIu32, p->uid);
		table_cell(&tab, "%s", fmt_track(tr, sizeof(tr), p->track));
		table_cell(&tab, "%s", isnan(lps) ? "-" : (snprintf(c1, sizeof(c1), "%.0f", lps), c1));
		table_cell(&tab, "%s", isnan(sps) ? "-" : (snprintf(c2, sizeof(c2), "%.0f", sps), c2));
		table_cell(&tab, "%s", tm_sum(dh) ? fmt_dur(c3, sizeof(c3), (uint64_t)tm_quantile(dh, 0.5)) : "-");
		table_cell(&tab, "%s", tm_sum(dh) ? fmt_dur(c4, sizeof(c4), (uint64_t)tm_quantile(dh, 0.99)) : "-");
		table_cell(&tab, "%s", tm_sum(rh) ? fmt_dur(c5, sizeof(c5), (uint64_t)tm_quantile(rh, 0.99)) : "-");
		table_cell(&tab, "%s", p->rq_samples ? fmt_dur(c1, sizeof(c1), p->rq_max_ns) : "-");
		table_cell(&tab, "%s", fmt_size(c2, sizeof(c2), p->alloc_bytes));
		table_cell(&tab, "%" PRIu64, p->launches);
	}
	if (opt_json) {
		j_arr_end();
		j_obj_end();
		putchar('\n');
	} else if (!nb) {
		printf("no processes tracked or seen (see oooctl telemetry)\n");
	} else {
		table_print(&tab);
	}
	fflush(stdout);
}

static int do_top(int argc, char **argv)
{
	unsigned long interval = 1000, count = 0;
	struct ooo_proc_rec *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	bool tty = isatty(STDOUT_FILENO);
	int c, rc;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "c:i:")) != -1) {
		if (c == 'c' && !parse_uint(optarg, 1, 1000000, &count))
			return usage_error("--count wants 1 to 1000000 refreshes, not '%s'", optarg);
		if (c == 'i' && !parse_uint(optarg, 100, 3600000, &interval))
			return usage_error("--interval wants milliseconds from 100 to 3600000, not '%s'", optarg);
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!count && !tty)
		count = 1; /* not a terminal: one refresh unless asked for more */
	if ((rc = procs_snapshot(&a, &na)))
		return rc;
	for (unsigned long k = 0; !count || k < count; k++) {
		int64_t t0 = mono_ns(), t1;

		sleep_ns((uint64_t)interval * 1000000ull);
		if ((rc = procs_snapshot(&b, &nb))) {
			free(a);
			return rc;
		}
		t1 = mono_ns();
		if (tty && !opt_json)
			fputs("\033[H\033[2J", stdout);
		if (!opt_json)
			printf("oooctl top: every %.1f s (TRACK: s session, x executor, n native lease, o operator, L launches probed)\n",
			       (double)interval / 1000.0);
		print_top(a, na, b, nb, (double)(t1 - t0) / 1e9);
		free(a);
		a = b;
		na = nb;
		b = NULL;
	}
	free(a);
	return RC_OK;
}

static void print_hist(const char *title, const uint64_t *h)
{
	uint64_t max = 0, total = tm_sum(h);
	int last = -1;

	for (int b = 0; b < OOO_TM_BUCKETS; b++) {
		if (h[b] > max)
			max = h[b];
		if (h[b])
			last = b;
	}
	printf("%s: %" PRIu64 " samples\n", title, total);
	if (!total)
		return;
	printf("%20s : %-10s |%-40s|\n", "usecs", "count", "distribution");
	for (int b = 0; b <= last; b++) {
		char range[48];
		int stars = max ? (int)((h[b] * 40 + max - 1) / max) : 0;

		if (b == 0)
			snprintf(range, sizeof(range), "0 -> 1");
		else
			snprintf(range, sizeof(range), "%llu -> %llu", 1ull << (b - 1), b == OOO_TM_BUCKETS - 1 ? 0ull : 1ull << b);
		if (b == OOO_TM_BUCKETS - 1)
			snprintf(range, sizeof(range), "%llu -> inf", 1ull << (b - 1));
		printf("%20s : %-10" PRIu64 " |%-*.*s%*s|\n", range, h[b], stars, stars,
		       "****************************************", 40 - stars, "");
	}
}

static int do_hist(int argc, char **argv)
{
	static const char *const metrics[] = { "sync", "gap", "rq" };
	static const char *const titles[] = { "time in sync calls", "launch inter-arrival time", "run-queue delay" };
	struct ooo_proc_rec *v = NULL;
	uint64_t h[3][OOO_TM_BUCKETS];
	unsigned long id;
	bool by_uid = false;
	int metric = -1, c, rc;
	size_t n = 0, matched = 0;
	const char *who;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "m:")) != -1) {
		if (c != 'm')
			continue;
		for (int k = 0; k < 3; k++)
			if (!strcmp(optarg, metrics[k]))
				metric = k;
		if (metric < 0)
			return usage_error("--metric wants sync, gap or rq, not '%s'", optarg);
	}
	if (optind + 1 != argc)
		return usage_error(optind < argc ? "one PID or uid:N, not more" : "which process? PID or uid:N");
	who = argv[optind];
	if (!strncmp(who, "uid:", 4)) {
		by_uid = true;
		if (!parse_uint(who + 4, 0, UINT32_MAX - 1, &id))
			return usage_error("bad uid in '%s'", who);
	} else if (!parse_uint(who, 1, 0x7fffffff, &id)) {
		return usage_error("'%s' is not a PID or uid:N", who);
	}
	if ((rc = procs_snapshot(&v, &n)))
		return rc;
	memset(h, 0, sizeof(h));
	for (size_t i = 0; i < n; i++) {
		if (by_uid ? v[i].uid != id : v[i].pid != id)
			continue;
		matched++;
		for (int k = 0; k < OOO_TM_BUCKETS; k++) {
			h[0][k] += v[i].sync_hist[k];
			h[1][k] += v[i].gap_hist[k];
			h[2][k] += v[i].rq_hist[k];
		}
	}
	free(v);
	if (!matched) {
		err_msg("no telemetry for %s %lu (oooctl top lists what oood sees)", by_uid ? "uid" : "pid", id);
		return RC_FAIL;
	}
	if (opt_json) {
		j_obj(NULL);
		j_str("scope", by_uid ? "uid" : "pid");
		j_u64("id", id);
		j_u64("processes", matched);
		for (int m = 0; m < 3; m++) {
			if (metric >= 0 && m != metric)
				continue;
			j_arr(metrics[m]);
			for (int k = 0; k < OOO_TM_BUCKETS; k++) {
				if (!h[m][k])
					continue;
				j_obj(NULL);
				j_u64("lo_us", k ? 1ull << (k - 1) : 0);
				if (k == OOO_TM_BUCKETS - 1)
					j_null("hi_us");
				else
					j_u64("hi_us", 1ull << k);
				j_u64("count", h[m][k]);
				j_obj_end();
			}
			j_arr_end();
		}
		j_obj_end();
		return RC_OK;
	}
	printf("%s %lu (%zu process%s)\n", by_uid ? "uid" : "pid", id, matched, matched == 1 ? "" : "es");
	for (int m = 0; m < 3; m++) {
		if (metric >= 0 && m != metric)
			continue;
		putchar('\n');
		print_hist(titles[m], h[m]);
	}
	return RC_OK;
}

static int do_trace(int argc, char **argv)
{
	struct ooo_msg_trace req = { 0 };
	struct ooo_msg_trace_reply rep;
	unsigned long pid;
	ooo_session *s;
	int rc, r;

	optind = 0;
	if (cmd_getopt(argc, argv, "") != -1)
		return RC_USAGE;
	if (argc - optind != 2)
		return usage_error("usage: oooctl trace add|remove PID");
	if (!strcmp(argv[optind], "add"))
		req.op = OOO_TRACE_ADD;
	else if (!strcmp(argv[optind], "remove"))
		req.op = OOO_TRACE_REMOVE;
	else
		return usage_error("'%s': add or remove", argv[optind]);
	if (!parse_uint(argv[optind + 1], 1, 0x7fffffff, &pid))
		return usage_error("'%s' is not a PID", argv[optind + 1]);
	req.pid = (uint32_t)pid;
	if (!(s = admin_open(&rc)))
		return rc;
	r = call(s, OOO_MSG_TRACE, &req, sizeof(req), &rep, sizeof(rep));
	ooo_close(s);
	if (r >= 0 && (size_t)r != sizeof(rep)) {
		snprintf(reason, sizeof(reason), "trace reply of %d bytes, expected %zu", r, sizeof(rep));
		r = -OOO_EPROTO;
	}
	if (r < 0)
		return report("trace", r);
	if (opt_json) {
		j_obj(NULL);
		j_u64("pid", rep.pid);
		j_track("track", rep.track);
		j_u64("libraries", rep.libs);
		j_str("message", rep.msg);
		j_obj_end();
		return RC_OK;
	}
	sanitize(rep.msg);
	printf("%s\n", rep.msg);
	return RC_OK;
}

/* ---- native leases and MPS ------------------------------------------------------------ */

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
	int r = call(s, OOO_MSG_MPS, NULL, 0, m, sizeof(*m));

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

static int do_leases(int argc, char **argv)
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

static int do_evict(int argc, char **argv)
{
	struct ooo_msg_evict req = { 0 };
	struct ooo_msg_evict_reply rep;
	unsigned long v;
	ooo_session *s;
	int rc, r, c;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "g:")) != -1) {
		if (c == 'g') {
			if (!parse_uint(optarg, 1, 600000, &v))
				return usage_error("--grace wants milliseconds from 1 to 600000, not '%s'", optarg);
			req.grace_ms = (uint32_t)v;
		} else {
			return RC_USAGE;
		}
	}
	if (argc - optind != 1)
		return usage_error(optind < argc ? "one PID, not more" : "which process? oooctl evict PID");
	if (!parse_uint(argv[optind], 1, 0x7fffffff, &v))
		return usage_error("'%s' is not a PID", argv[optind]);
	req.pid = (uint32_t)v;
	if (!(s = admin_open(&rc)))
		return rc;
	r = call(s, OOO_MSG_EVICT, &req, sizeof(req), &rep, sizeof(rep));
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

/* ---- pardon -------------------------------------------------------------------- */

static int do_pardon(int argc, char **argv)
{
	struct ooo_msg_pardon req = { 0 };
	struct ooo_msg_pardon_reply rep;
	unsigned long v;
	ooo_session *s;
	int rc, r, c;

	optind = 0;
	if ((c = cmd_getopt(argc, argv, "")) != -1)
		return RC_USAGE; /* no options of its own */
	if (argc - optind != 1)
		return usage_error(optind < argc ? "one tenant, not more" : "which tenant? oooctl pardon UID|USER");
	if (parse_uint(argv[optind], 0, 0xfffffffeu, &v)) {
		req.uid = (uint32_t)v;
	} else {
		struct passwd *pw = getpwnam(argv[optind]);

		if (!pw)
			return usage_error("'%s' is neither a uid nor a user", argv[optind]);
		req.uid = (uint32_t)pw->pw_uid;
	}
	if (!(s = admin_open(&rc)))
		return rc;
	r = call(s, OOO_MSG_PARDON, &req, sizeof(req), &rep, sizeof(rep));
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

static int do_partition(int argc, char **argv)
{
	struct ooo_msg_partition_set req;
	struct ooo_msg_partition_set_reply rep;
	struct ooo_part_gpu_rec *g = NULL;
	unsigned long v, wait_ms = 10000;
	const char *verb;
	size_t n = 0;
	ooo_session *s;
	int rc, r, c;

	optind = 0;
	while ((c = cmd_getopt(argc, argv, "w:")) != -1) {
		if (c == 'w') {
			if (!parse_uint(optarg, 0, 600000, &v))
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
		if (!parse_uint(argv[optind + 2], 0, 65536, &v))
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
		r = call(s, OOO_MSG_PARTITION_SET, &req, sizeof(req), &rep, sizeof(rep));
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
				err_msg("gpu%" PRIu32 " %s: no answer to plan %" PRIu64 " within %lu ms", g[i].device,
					DOMAIN_NAME(g[i].domain),
					rep.generation, wait_ms);
	}
	free(g);
	return rc;
}

static int do_mps(int argc, char **argv)
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
		r = call(s, OOO_MSG_MPS_RUN, &req, sizeof(req), rep, sizeof(*rep));
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

/* ---- metrics: Prometheus text exposition format 0.0.4 ------------------------------ */

static void prom_family(const char *name, const char *type, const char *help)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one sample without labels. */
static void prom_scalar(const char *name, const char *type, const char *help, uint64_t v)
{
	prom_family(name, type, help);
	printf("%s %" PRIu64 "\n", name, v);
}

/* A label value with \, " and newline escaped; non-ASCII bytes become '?' so it is always valid UTF-8. */
static void prom_escape(char *out, size_t cap, const char *s)
{
	size_t k = 0;

	for (; *s && k + 3 < cap; s++) {
		if ((unsigned char)*s >= 0x80 || (unsigned char)*s < 0x20 || *s == 0x7f) {
			out[k++] = *s == '\n' ? '\\' : '?';
			if (*s == '\n')
				out[k++] = 'n';
		} else if (*s == '\\' || *s == '"') {
			out[k++] = '\\';
			out[k++] = *s;
		} else {
			out[k++] = *s;
		}
	}
	out[k] = '\0';
}

static void prom_hist(const char *name, const char *labels, const uint64_t *h, bool have_sum, double sum_s)
{
	uint64_t acc = 0;

	for (int b = 0; b < OOO_TM_BUCKETS - 1; b++) {
		acc += h[b];
		printf("%s_bucket{%s,le=\"%.6g\"} %" PRIu64 "\n", name, labels, (double)(1ull << b) * 1e-6, acc);
	}
	acc += h[OOO_TM_BUCKETS - 1];
	printf("%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", name, labels, acc);
	if (have_sum)
		printf("%s_sum{%s} %.9f\n", name, labels, sum_s);
	printf("%s_count{%s} %" PRIu64 "\n", name, labels, acc);
}

static int do_metrics(int argc, char **argv)
{
	struct ooo_msg_status st;
	struct ooo_msg_telemetry t;
	struct ooo_tenant_rec *tn = NULL;
	struct ooo_sched_rec *sr = NULL;
	struct ooo_proc_rec *pr = NULL;
	size_t ntn = 0, nsr = 0, npr = 0;
	bool have_tm;
	ooo_session *s;
	int rc, r;

	if ((rc = no_args(argc, argv)))
		return rc;
	if (opt_json)
		return usage_error("metrics prints the Prometheus text format only");
	if (!(s = admin_open(&rc)))
		return rc;
	r = get_status(s, &st);
	if (r >= 0)
		r = fetch_list(s, OOO_MSG_TENANTS, sizeof(*tn), (void **)&tn, &ntn);
	if (r >= 0)
		r = fetch_list(s, OOO_MSG_SCHED, sizeof(*sr), (void **)&sr, &nsr);
	have_tm = r >= 0 && get_telemetry(s, &t) == 0;
	if (r >= 0 && have_tm && t.state == OOO_TM_RUNNING)
		r = fetch_list(s, OOO_MSG_PROCS, sizeof(*pr), (void **)&pr, &npr);
	ooo_close(s);
	if (r >= 0)
		procs_unique(pr, &npr);
	if (r < 0) {
		free(tn);
		free(sr);
		free(pr);
		return report("metrics", r);
	}
	prom_family("ooo_up", "gauge", "1 while oood answers");
	printf("ooo_up 1\n");
	prom_family("ooo_uptime_seconds", "gauge", "Time since oood started");
	printf("ooo_uptime_seconds %.3f\n", (double)st.uptime_ns / 1e9);
	prom_scalar("ooo_policy_generation", "gauge", "Policies loaded so far (1 at start)", st.policy_generation);
	prom_scalar("ooo_sessions", "gauge", "Open tenant sessions", st.sessions);
	prom_scalar("ooo_sessions_max", "gauge", "Tenant sessions allowed at once", st.max_sessions);
	prom_scalar("ooo_tenants", "gauge", "Tenants with at least one session", st.tenants);
	prom_scalar("ooo_sessions_admitted_total", "counter", "Tenant sessions admitted", st.sessions_total);
	prom_scalar("ooo_sessions_refused_total", "counter", "Tenant connections refused", st.sessions_refused);
	prom_family("ooo_messages_total", "counter", "Control messages");
	printf("ooo_messages_total{direction=\"in\"} %" PRIu64 "\n", st.msgs_in);
	printf("ooo_messages_total{direction=\"out\"} %" PRIu64 "\n", st.msgs_out);
	prom_scalar("ooo_protocol_errors_total", "counter", "Malformed messages from peers", st.proto_errors);
	prom_scalar("ooo_reloads_failed_total", "counter", "Configuration reloads refused", st.reloads_failed);
	prom_family("ooo_gpus", "gauge", "GPUs by executor state");
	printf("ooo_gpus{state=\"ready\"} %" PRIu32 "\n", st.gpus_ready);
	printf("ooo_gpus{state=\"other\"} %" PRIu32 "\n", st.gpus - st.gpus_ready);

	prom_family("ooo_tenant_used", "gauge", "A tenant's use of a resource");
	for (size_t i = 0; i < ntn; i++) {
		char cls[2 * OOO_NAME_MAX];

		prom_escape(cls, sizeof(cls), tn[i].class_name);
		for (int k = 0; k < OOO_RES_COUNT; k++)
			printf("ooo_tenant_used{tenant=\"%" PRIu32 "\",class=\"%s\",resource=\"%s\"} %" PRIu64 "\n", tn[i].uid,
			       cls, res_names[k], tn[i].used[k]);
	}
	prom_family("ooo_tenant_limit", "gauge", "A tenant's limit on a resource (0: none)");
	for (size_t i = 0; i < ntn; i++) {
		char cls[2 * OOO_NAME_MAX];

		prom_escape(cls, sizeof(cls), tn[i].class_name);
		for (int k = 0; k < OOO_RES_COUNT; k++)
			printf("ooo_tenant_limit{tenant=\"%" PRIu32 "\",class=\"%s\",resource=\"%s\"} %" PRIu64 "\n", tn[i].uid,
			       cls, res_names[k], tn[i].limit[k]);
	}

	{
		static const struct { const char *name, *help; size_t off; } sc[] = {
#define SC(f, h) { "ooo_sched_" #f "_total", h, offsetof(struct ooo_sched_counters, f) }
			SC(bundles, "Dispatches: fused launches plus launches that went alone"),
			SC(fused_bundles, "Fused launches"),
			SC(launches, "Tenant launches through the scheduler"),
			SC(fused_launches, "Tenant launches run inside a fused launch"),
			SC(direct_launches, "Tenant launches that could not be fused"),
			SC(retried, "Fused launches that failed to start and ran unfused"),
			SC(unfused_nopay, "Bundles sent unfused: the fused kernel was predicted slower than its members alone"),
			SC(stream_waits, "Waits of one of a partition's streams for another stream's bundle"),
			SC(chained_launches, "Tenant launches run chained behind their queue's previous launch in one fused launch"),
			SC(burst_holds, "Head launches held for the rest of their tenant's burst (burst_wait_us)"),
			SC(jit_hits, "Fusion classes found compiled"),
			SC(jit_misses, "Fusion classes not found compiled"),
			SC(jit_compiles, "Fused kernels compiled"),
			SC(jit_failures, "Fusion classes the JIT or the driver refused"),
			SC(loops, "Passes of the executor's serving loop"),
			SC(commands, "Commands taken from the tenants' submission rings"),
			SC(param_bundles, "Fused bundles whose table went as the launch's parameter"),
#undef SC
		};
		static const char *const why[4] = { "full", "slack", "idle", "alone" };

		for (size_t k = 0; k < sizeof(sc) / sizeof(sc[0]); k++) {
			prom_family(sc[k].name, "counter", sc[k].help);
			for (size_t i = 0; i < nsr; i++) {
				uint64_t v;

				if (!sr[i].have)
					continue;
				memcpy(&v, (const char *)&sr[i].c + sc[k].off, sizeof(v));
				printf("%s{gpu=\"%" PRIu32 "\",domain=\"%s\"} %" PRIu64 "\n", sc[k].name, sr[i].device, sr[i].domain, v);
			}
		}
		prom_family("ooo_sched_dispatches_total", "counter", "Dispatch decisions by reason");
		for (size_t i = 0; i < nsr; i++) {
			const uint64_t v[4] = { sr[i].c.dispatch_full, sr[i].c.dispatch_slack, sr[i].c.dispatch_idle,
						sr[i].c.dispatch_alone };

			if (!sr[i].have)
				continue;
			for (int k = 0; k < 4; k++)
				printf("ooo_sched_dispatches_total{gpu=\"%" PRIu32 "\",domain=\"%s\",reason=\"%s\"} %" PRIu64 "\n",
				       sr[i].device, sr[i].domain, why[k], v[k]);
		}
		prom_family("ooo_sched_bundles_by_priority_total", "counter",
			    "Dispatches by the highest priority of their members' queues: below, at or above the default 50");
		for (size_t i = 0; i < nsr; i++) {
			if (!sr[i].have)
				continue;
			for (unsigned k = 0; k < OOO_PRIO_TIERS; k++)
				printf("ooo_sched_bundles_by_priority_total{gpu=\"%" PRIu32 "\",domain=\"%s\",tier=\"%s\"} %" PRIu64 "\n",
				       sr[i].device, sr[i].domain, sched_tier_names[k], sr[i].c.tier_bundles[k]);
		}
		prom_family("ooo_sched_bundles_by_stream_total", "counter",
			    "Dispatches by the stream they went on within their priority tier (0 .. streams - 1)");
		for (size_t i = 0; i < nsr; i++) {
			if (!sr[i].have)
				continue;
			for (unsigned k = 0; k < OOO_SCHED_STREAMS && k < (sr[i].c.streams ? sr[i].c.streams : 1); k++)
				printf("ooo_sched_bundles_by_stream_total{gpu=\"%" PRIu32 "\",domain=\"%s\",stream=\"%u\"} %" PRIu64 "\n",
				       sr[i].device, sr[i].domain, k, sr[i].c.stream_bundles[k]);
		}
		prom_family("ooo_sched_executor_cpu_seconds_total", "counter", "CPU time of the executor (all threads)");
		for (size_t i = 0; i < nsr; i++)
			if (sr[i].have)
				printf("ooo_sched_executor_cpu_seconds_total{gpu=\"%" PRIu32 "\",domain=\"%s\"} %.6f\n", sr[i].device, sr[i].domain,
				       (double)sr[i].c.cpu_ns / 1e9);
		prom_family("ooo_sched_launcher_busy_seconds_total", "counter",
			    "Time the executor's launcher thread spent issuing bundles to CUDA");
		for (size_t i = 0; i < nsr; i++)
			if (sr[i].have)
				printf("ooo_sched_launcher_busy_seconds_total{gpu=\"%" PRIu32 "\",domain=\"%s\"} %.6f\n", sr[i].device, sr[i].domain,
				       (double)sr[i].c.launch_ns / 1e9);
		for (int h = 0; h < 2; h++) {
			static const char *const hn[2] = { "ooo_sched_launch_hold_seconds", "ooo_sched_launch_latency_seconds" };
			static const char *const hh[2] = {
				"Launches through the coalescer: submission taken to its bundle dispatched",
				"Launches through the coalescer: submission taken to completion seen",
			};

			prom_family(hn[h], "histogram", hh[h]);
			for (size_t i = 0; i < nsr; i++) {
				char lab[96];

				snprintf(lab, sizeof(lab), "gpu=\"%" PRIu32 "\",domain=\"%s\"", sr[i].device, sr[i].domain);
				if (sr[i].have)
					prom_hist(hn[h], lab, h ? sr[i].c.lat_hist : sr[i].c.hold_hist, false, 0);
			}
		}
		for (int h = 0; h < STAGES; h++) {
			prom_family(stage_prom[h], "histogram", stage_help[h]);
			for (size_t i = 0; i < nsr; i++) {
				char lab[96];

				snprintf(lab, sizeof(lab), "gpu=\"%" PRIu32 "\",domain=\"%s\"", sr[i].device, sr[i].domain);
				if (sr[i].have)
					prom_hist(stage_prom[h], lab, stage_hist(&sr[i].c, h), false, 0);
			}
		}
		for (int h = 0; h < OOO_CMD_STAGES; h++) {
			char name[80], help[192];

			/* ooo_exec_command_X_seconds -> ooo_exec_class_command_X_seconds */
			snprintf(name, sizeof(name), "ooo_exec_class_%s", stage_prom[h] + strlen("ooo_exec_"));
			snprintf(help, sizeof(help), "%s; per tenant class (the rows of oooctl sched)", stage_help[h]);
			prom_family(name, "histogram", help);
			for (size_t i = 0; i < nsr; i++) {
				if (!sr[i].have)
					continue;
				for (uint32_t k = 0; k < sched_nclasses(&sr[i].c); k++) {
					const struct ooo_sched_class_stats *cl = &sr[i].c.classes[k];
					char cls[2 * sizeof(cl->name)], lab[192];

					prom_escape(cls, sizeof(cls), class_label(cl->name));
					snprintf(lab, sizeof(lab), "gpu=\"%" PRIu32 "\",domain=\"%s\",class=\"%s\"", sr[i].device,
						 sr[i].domain, cls);
					prom_hist(name, lab, cl->cmd_stage_hist[h], false, 0);
				}
			}
		}
		prom_family("ooo_exec_submit_stamps_bad_total", "counter",
			    "Tenant submit stamps more than 10 s before or 1 s after the executor's clock (not in the submit histogram)");
		for (size_t i = 0; i < nsr; i++)
			if (sr[i].have)
				printf("ooo_exec_submit_stamps_bad_total{gpu=\"%" PRIu32 "\",domain=\"%s\"} %" PRIu64 "\n", sr[i].device, sr[i].domain,
				       sr[i].c.submit_stamp_bad);
		prom_family("ooo_sched_jit_compile_seconds_total", "counter", "Time the JIT spent compiling");
		for (size_t i = 0; i < nsr; i++)
			if (sr[i].have)
				printf("ooo_sched_jit_compile_seconds_total{gpu=\"%" PRIu32 "\",domain=\"%s\"} %.6f\n", sr[i].device, sr[i].domain,
				       (double)sr[i].c.jit_compile_ns / 1e9);
	}

	prom_family("ooo_telemetry_running", "gauge", "1 when the eBPF probes run");
	printf("ooo_telemetry_running %d\n", have_tm && t.state == OOO_TM_RUNNING);
	if (have_tm && t.state == OOO_TM_RUNNING) {
		prom_scalar("ooo_telemetry_tracked_processes", "gauge", "Pids in the probes' filter set", t.tracked);
		prom_scalar("ooo_telemetry_libraries", "gauge", "libcuda files probed", t.nlibs);
		prom_scalar("ooo_telemetry_slow_syncs_total", "counter", "Slow-sync events read from the ring buffer", t.events);
		prom_family("ooo_telemetry_lost_total", "counter", "What the probes could not record, by cause");
		printf("ooo_telemetry_lost_total{cause=\"ring_full\"} %" PRIu64 "\n", t.ring_full);
		printf("ooo_telemetry_lost_total{cause=\"maps_full\"} %" PRIu64 "\n", t.procs_full);
		printf("ooo_telemetry_lost_total{cause=\"no_entry\"} %" PRIu64 "\n", t.inflight_lost);
	}
	{
		static const struct { const char *name, *help; size_t off; } pc[] = {
#define PC(f, n, h) { "ooo_process_cuda_" n "_total", h, offsetof(struct ooo_proc_rec, f) }
			PC(launches, "launches", "cuLaunchKernel and cuLaunchKernelEx calls"),
			PC(graph_launches, "graph_launches", "cuGraphLaunch calls"),
			PC(allocs, "allocs", "cuMemAlloc_v2 calls that succeeded"),
			PC(alloc_failed, "alloc_failures", "cuMemAlloc_v2 calls that failed"),
			PC(alloc_bytes, "alloc_bytes", "Bytes of the successful cuMemAlloc_v2 calls"),
			PC(frees, "frees", "cuMemFree_v2 calls"),
			PC(copies, "copies", "cuMemcpy calls (all probed forms)"),
			PC(copy_bytes, "copy_bytes", "Bytes of the probed cuMemcpy calls"),
			PC(slow_syncs, "slow_syncs", "Sync calls slower than slow_sync_us"),
#undef PC
		};
		char (*lab)[96] = npr ? xrealloc(NULL, npr * sizeof(*lab)) : NULL;

		for (size_t i = 0; i < npr; i++) {
			char comm[2 * OOO_TM_COMM + 1];

			prom_escape(comm, sizeof(comm), pr[i].comm);
			snprintf(lab[i], sizeof(lab[i]), "pid=\"%" PRIu32 "\",comm=\"%s\"", pr[i].pid, comm);
		}
		for (size_t k = 0; k < sizeof(pc) / sizeof(pc[0]); k++) {
			prom_family(pc[k].name, "counter", pc[k].help);
			for (size_t i = 0; i < npr; i++) {
				uint64_t v;

				if (!(pr[i].have & 1))
					continue;
				memcpy(&v, (const char *)&pr[i] + pc[k].off, sizeof(v));
				printf("%s{%s} %" PRIu64 "\n", pc[k].name, lab[i], v);
			}
		}
		prom_family("ooo_process_cuda_syncs_total", "counter", "Sync calls that returned, by function");
		for (size_t i = 0; i < npr; i++)
			for (int f = 0; f < 3 && (pr[i].have & 1); f++)
				printf("ooo_process_cuda_syncs_total{%s,function=\"%s\"} %" PRIu64 "\n", lab[i], tm_fn_names[f],
				       pr[i].syncs[f]);
		prom_family("ooo_process_cuda_sync_seconds", "histogram", "Time in sync calls");
		for (size_t i = 0; i < npr; i++)
			if (pr[i].have & 1)
				prom_hist("ooo_process_cuda_sync_seconds", lab[i], pr[i].sync_hist, true,
					  (double)pr[i].sync_ns / 1e9);
		prom_family("ooo_process_cuda_launch_interval_seconds", "histogram", "Time between a process's launches");
		for (size_t i = 0; i < npr; i++)
			if (pr[i].have & 1)
				prom_hist("ooo_process_cuda_launch_interval_seconds", lab[i], pr[i].gap_hist, false, 0);
		prom_family("ooo_process_runqueue_delay_seconds", "histogram",
			    "Time from wakeup or preemption to running, for tracked processes");
		for (size_t i = 0; i < npr; i++)
			if (pr[i].have & 2)
				prom_hist("ooo_process_runqueue_delay_seconds", lab[i], pr[i].rq_hist, true,
					  (double)pr[i].rq_total_ns / 1e9);
		free(lab);
	}
	free(tn);
	free(sr);
	free(pr);
	return RC_OK;
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
	  "                     terminal, 1 otherwise); --json prints one object per refresh\n"
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
	  "  config check [FILE]  parse FILE (default " DEFAULT_CONF ") as oood\n"
	  "                       would, without contacting it; prints 'FILE: OK (N classes)'\n"
	  "                       or 'FILE:LINE: MESSAGE' on stderr and exits 1\n"
	  "  config default       print the configuration built into oood\n" },
	{ "ping", do_ping, "Measure round trips to oood over the admin socket", "[-c COUNT]",
	  "  -c, --count COUNT  round trips to make (default 10)\n" },
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
	unsigned long v;
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
			if (!parse_uint(optarg, 1, 3600000, &v))
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
	if (optind >= argc) {
		usage(stderr);
		return RC_USAGE;
	}
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
