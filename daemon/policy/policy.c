/* SPDX-License-Identifier: MIT */
/*
 * Policy parser on top of libinih.
 *
 * inih does the splitting of "key = value" lines, but it is lenient in ways a
 * security policy cannot be: it truncates section names to 49 bytes, splits
 * over-long lines, stops at NUL bytes, ignores text after "]" and keeps going
 * after errors. So our reader feeds it one line at a time, checks each raw
 * line first, and mirrors inih's classification of the line (comment,
 * continuation, section, key) so that section headers are parsed here, in
 * full, and the handler knows which line and which kind of line it is called
 * for. Parsing stops at the first error.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <ini.h>
#include <sys/socket.h>

#include "cgroup.h"
#include "hangs.h"
#include "policy.h"
#include "values.h"

#define DEFAULT_SOURCE "(embedded defaults)"
#define MAX_SIZE_LIMIT (1ull << 50) /* 1 PiB */
#define MAX_ID 4294967294ull        /* (uid_t)-1 means "no id" to the kernel */
#define VAL_MAX 80                  /* longest value quoted in a message */
#define NSS_BUF_MAX (1u << 20)

enum line_kind { L_NONE, L_BLANK, L_CONT, L_SECTION, L_PAIR };
enum sec_kind { SEC_NONE, SEC_DAEMON, SEC_CLASS, SEC_TELEMETRY, SEC_MPS, SEC_METRICS };

enum key_type {
	T_U32,      /* number in [lo, hi] */
	T_SIZE,     /* policy_parse_size in [lo, hi] */
	T_BOOL,
	T_LOGLEVEL,
	T_GROUP,    /* one group name or gid */
	T_UIDS,     /* list of uids or '*' */
	T_GIDS,     /* list of gids or '*' */
	T_USERS,    /* list of user names */
	T_GROUPS,   /* list of group names */
	T_CGROUPS,  /* list of cgroup path patterns (fnmatch), each starting with '/' */
	T_TENANTBY, /* uid, pod or cgroup */
	T_STR,      /* one word: no spaces or control characters */
	T_PATH,     /* an absolute path: no spaces or control characters */
	T_LAUNCH,   /* all, tracked or off */
	T_MPSMODE,  /* auto, yes or no */
	T_LPRIO,    /* normal or below */
	T_DOMAIN,   /* a trust domain name: uid, or letters, digits, '_', '-', '.' */
	T_UIDRANGE, /* FIRST-LAST: a range of uids, [lo, hi] uids long */
	T_LISTEN,   /* HOST:PORT, [IPv6]:PORT or PORT (policy_parse_listen) */
	T_OBSOLETE, /* a key no longer used: accepted, ignored, and said (policy->warning) */
};

enum key_field {
	F_ADMIN_GROUP, F_MAX_SESSIONS, F_MAX_ADMIN_SESSIONS, F_HELLO_TIMEOUT, F_SHUTDOWN_GRACE,
	F_LOG_LEVEL, F_EXECUTOR, F_EXECUTOR_USER, F_EXECUTOR_UIDS, F_LIBCUDA, F_FUSE, F_FUSE_COPIES, F_SPREAD_LANES, F_CHAIN_LAUNCHES, F_URGENT_RESERVE, F_BURST_WAIT, F_KERNEL_TIME_LIMIT, F_HANG_STRIKES, F_HANG_WINDOW, F_STREAMS, F_SERVING_THREADS, F_SHARD_SESSIONS, F_MAX_DOMAINS,
	F_DOMAIN_IDLE, F_DOMAIN,
	F_MATCH_UID, F_MATCH_GID, F_MATCH_USER, F_MATCH_GROUP, F_MATCH_CGROUP, F_TENANT_BY, F_ADMIT, F_PRIORITY, F_SLO_US,
	F_SM_SHARE, F_MEM_LIMIT, F_CLASS_SESSIONS, F_QUEUES, F_BUFFERS, F_MODULES, F_INFLIGHT,
	F_TRACE_LAUNCHES, F_BINARY_MODULES, F_PARTITION, F_FENCE, F_NATIVE_SM, F_NATIVE_MEM, F_NATIVE_PRIO, F_MAX_LEASES, F_WAIT_SPIN_US,
	F_MPS_ENABLED, F_MPS_CONTROL, F_MPS_MULTIUSER, F_MPS_EXEC_CLIENT, F_MPS_MAX_CLIENTS, F_MPS_EXEC_RESERVE,
	F_MPS_EVICT_GRACE, F_MPS_STOP_GRACE, F_MPS_DEVICES, F_MPS_FEEDBACK, F_MPS_FEEDBACK_STEP,
	F_TM_ENABLED, F_TM_ALL, F_TM_LAUNCH, F_TM_LIBCUDA, F_TM_SLOW, F_TM_MAXPROCS, F_TM_MAXTRACKED, F_TM_RINGBUF,
	F_METRICS_LISTEN,
};

struct key_def {
	const char *name;
	enum key_field field;
	enum key_type type;
	uint64_t lo, hi;
};

static const struct key_def daemon_keys[] = {
	{ "admin_group", F_ADMIN_GROUP, T_GROUP, 0, 0 },
	{ "max_sessions", F_MAX_SESSIONS, T_U32, 1, 65536 },
	{ "max_admin_sessions", F_MAX_ADMIN_SESSIONS, T_U32, 1, 1024 },
	{ "hello_timeout_ms", F_HELLO_TIMEOUT, T_U32, 100, 600000 },
	{ "shutdown_grace_ms", F_SHUTDOWN_GRACE, T_U32, 0, 600000 },
	{ "log_level", F_LOG_LEVEL, T_LOGLEVEL, 0, 0 },
	{ "executor", F_EXECUTOR, T_BOOL, 0, 0 },
	{ "executor_user", F_EXECUTOR_USER, T_OBSOLETE, 0, 0 },
	{ "executor_uids", F_EXECUTOR_UIDS, T_UIDRANGE, 1, POLICY_EXEC_UIDS_MAX },
	{ "libcuda", F_LIBCUDA, T_STR, 1, OOO_PATH_MAX - 1 },
	{ "fuse", F_FUSE, T_BOOL, 0, 0 },
	{ "fuse_copies", F_FUSE_COPIES, T_BOOL, 0, 0 },
	{ "spread_lanes", F_SPREAD_LANES, T_BOOL, 0, 0 },
	{ "chain_launches", F_CHAIN_LAUNCHES, T_BOOL, 0, 0 },
	{ "streams", F_STREAMS, T_U32, 1, 8 },
	{ "urgent_reserve", F_URGENT_RESERVE, T_U32, 0, 8 },
	{ "burst_wait_us", F_BURST_WAIT, T_U32, 0, 50 },
	{ "kernel_time_limit_ms", F_KERNEL_TIME_LIMIT, T_U32, 0, 3600000 },
	{ "hang_strikes", F_HANG_STRIKES, T_U32, 0, HANGS_STRIKES_MAX },
	{ "hang_window_s", F_HANG_WINDOW, T_U32, 1, 86400 },
	{ "serving_threads", F_SERVING_THREADS, T_U32, 1, 8 },
	{ "shard_sessions", F_SHARD_SESSIONS, T_U32, 0, 4096 },
	{ "max_domains", F_MAX_DOMAINS, T_U32, 1, POLICY_MAX_DOMAINS },
	{ "domain_idle_ms", F_DOMAIN_IDLE, T_U32, 0, 86400000 },
};

static const struct key_def class_keys[] = {
	{ "match_uid", F_MATCH_UID, T_UIDS, 0, MAX_ID },
	{ "match_gid", F_MATCH_GID, T_GIDS, 0, MAX_ID },
	{ "match_user", F_MATCH_USER, T_USERS, 0, 0 },
	{ "match_group", F_MATCH_GROUP, T_GROUPS, 0, 0 },
	{ "match_cgroup", F_MATCH_CGROUP, T_CGROUPS, 0, 0 },
	{ "tenant_by", F_TENANT_BY, T_TENANTBY, 0, 0 },
	{ "admit", F_ADMIT, T_BOOL, 0, 0 },
	{ "priority", F_PRIORITY, T_U32, 0, 99 },
	{ "slo_us", F_SLO_US, T_U32, 1, 60000000 },
	{ "sm_share", F_SM_SHARE, T_U32, 1, 100 },
	{ "mem_limit", F_MEM_LIMIT, T_SIZE, 1, MAX_SIZE_LIMIT },
	{ "max_sessions", F_CLASS_SESSIONS, T_U32, 1, 65536 },
	{ "max_queues", F_QUEUES, T_U32, 0, 65536 },
	{ "max_buffers", F_BUFFERS, T_U32, 0, 1048576 },
	{ "max_modules", F_MODULES, T_U32, 0, 65536 },
	{ "max_inflight", F_INFLIGHT, T_U32, 0, 1048576 },
	{ "trace_launches", F_TRACE_LAUNCHES, T_BOOL, 0, 0 },
	{ "binary_modules", F_BINARY_MODULES, T_BOOL, 0, 0 },
	{ "partition", F_PARTITION, T_BOOL, 0, 0 },
	{ "domain", F_DOMAIN, T_DOMAIN, 1, OOO_DOMAIN_MAX - 1 },
	{ "fence", F_FENCE, T_BOOL, 0, 0 },
	{ "native_sm", F_NATIVE_SM, T_U32, 1, 100 },
	{ "native_mem", F_NATIVE_MEM, T_SIZE, 1, MAX_SIZE_LIMIT },
	{ "native_priority", F_NATIVE_PRIO, T_LPRIO, 0, 0 },
	{ "max_leases", F_MAX_LEASES, T_U32, 0, 4096 },
	{ "wait_spin_us", F_WAIT_SPIN_US, T_U32, 0, 100000 },
};

static const struct key_def mps_keys[] = {
	{ "enabled", F_MPS_ENABLED, T_MPSMODE, 0, 0 },
	{ "control", F_MPS_CONTROL, T_PATH, 2, OOO_PATH_MAX - 1 },
	{ "multiuser", F_MPS_MULTIUSER, T_BOOL, 0, 0 },
	{ "executor_client", F_MPS_EXEC_CLIENT, T_BOOL, 0, 0 },
	{ "max_clients", F_MPS_MAX_CLIENTS, T_U32, 1, 1024 },
	{ "executor_reserve", F_MPS_EXEC_RESERVE, T_U32, 0, 100 },
	{ "evict_grace_ms", F_MPS_EVICT_GRACE, T_U32, 0, 600000 },
	{ "stop_grace_ms", F_MPS_STOP_GRACE, T_U32, 0, 600000 },
	{ "devices", F_MPS_DEVICES, T_U32, 0, OOO_MPS_GPUS },
	{ "feedback", F_MPS_FEEDBACK, T_BOOL, 0, 0 },
	{ "feedback_step", F_MPS_FEEDBACK_STEP, T_U32, 1, 100 },
};

static const struct key_def telemetry_keys[] = {
	{ "enabled", F_TM_ENABLED, T_BOOL, 0, 0 },
	{ "all_processes", F_TM_ALL, T_BOOL, 0, 0 },
	{ "launch_probes", F_TM_LAUNCH, T_LAUNCH, 0, 0 },
	{ "libcuda", F_TM_LIBCUDA, T_PATH, 2, OOO_PATH_MAX - 1 },
	{ "slow_sync_us", F_TM_SLOW, T_U32, 1, 60000000 },
	{ "max_processes", F_TM_MAXPROCS, T_U32, 16, 1048576 },
	{ "max_tracked", F_TM_MAXTRACKED, T_U32, 1, 65536 },
	{ "ringbuf_kb", F_TM_RINGBUF, T_U32, 4, 65536 },
};

static const struct key_def metrics_keys[] = {
	{ "listen", F_METRICS_LISTEN, T_LISTEN, 0, 0 },
};

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

struct parse_ctx {
	const char *text;
	size_t len;
	size_t pos;

	/* the line last handed to inih */
	const char *buf; /* inih's line buffer */
	size_t bufsize;
	int lineno;
	enum line_kind kind;
	bool handled;    /* the handler ran for it */
	bool after_pair; /* mirrors inih's prev_name: an indented line continues */

	enum sec_kind sec;
	int sec_line;
	uint32_t seen;                /* bit i: key i of the section's table given */
	const struct key_def *last;   /* key an indented line continues */
	size_t list_items;            /* items given so far for `last` */
	bool list_star;               /* `last` was '*' */
	int daemon_line;
	int telemetry_line;
	int mps_line;
	int metrics_line;
	int *class_lines;             /* header line of each class */
	int tenant_by_line;           /* the current class's tenant_by, 0 if not given */

	struct policy *p;
	size_t cap_classes;

	char *nss_buf;
	size_t nss_len;

	bool failed;
	int err_rc;
	struct policy_error *err;
};

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* strerror() may use a static buffer; we must stay reentrant */
static const char *errstr(int e, char *buf, size_t size)
{
	return strerror_r(e, buf, size); /* GNU variant: returns the string */
}

/* Quoted values come from the file: keep control characters (escapes, CR)
 * out of a message that ends up on a terminal, in a log and on the wire. */
static void sanitize(char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	}
}

static void set_error(struct policy_error *err, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(struct policy_error *err, int line, const char *fmt, ...)
{
	va_list ap;

	err->line = line;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	sanitize(err->msg);
}

/* Records the first error only; returns 0 so handlers can `return fail(...)`. */
static int fail(struct parse_ctx *c, int line, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct parse_ctx *c, int line, int rc, const char *fmt, ...)
{
	va_list ap;

	if (c->failed)
		return 0;
	c->failed = true;
	c->err_rc = rc;
	c->err->line = line;
	va_start(ap, fmt);
	vsnprintf(c->err->msg, sizeof(c->err->msg), fmt, ap);
	va_end(ap);
	sanitize(c->err->msg);
	return 0;
}

static int fail_nomem(struct parse_ctx *c)
{
	return fail(c, c->lineno, -ENOMEM, "out of memory");
}

static struct ooo_class *cur_class(struct parse_ctx *c)
{
	return &c->p->classes[c->p->nclasses - 1];
}

static const char *sec_desc(struct parse_ctx *c, char *buf, size_t size)
{
	if (c->sec == SEC_DAEMON)
		snprintf(buf, size, "[daemon]");
	else if (c->sec == SEC_TELEMETRY)
		snprintf(buf, size, "[telemetry]");
	else if (c->sec == SEC_MPS)
		snprintf(buf, size, "[mps]");
	else if (c->sec == SEC_METRICS)
		snprintf(buf, size, "[metrics]");
	else
		snprintf(buf, size, "[class %s]", cur_class(c)->name);
	return buf;
}

/* A number for `k` in [k->lo, k->hi], or an error naming the key. */
static int get_num(struct parse_ctx *c, const struct key_def *k, const char *v, uint64_t *out)
{
	switch (policy_parse_num(v, out)) {
	case NUM_OK:
		if (*out >= k->lo && *out <= k->hi)
			return 1;
		/* fallthrough */
	case NUM_RANGE:
		return fail(c, c->lineno, -EINVAL, "%s must be %llu..%llu, got '%.*s'", k->name,
			    (unsigned long long)k->lo, (unsigned long long)k->hi, VAL_MAX, v);
	case NUM_JUNK:
		return fail(c, c->lineno, -EINVAL, "%s: trailing junk after the number in '%.*s'%s",
			    k->name, VAL_MAX, v,
			    strchr(v, '#') ? " (inline comments start with ';')" : "");
	case NUM_NAN:
	default:
		return fail(c, c->lineno, -EINVAL, "%s must be a number, got '%.*s'", k->name, VAL_MAX,
			    v);
	}
}

/* ---- user and group names ----------------------------------------------- */

/* rc of get*nam_r that man 3 getpwnam_r says may also mean "no such entry". */
static bool nss_not_found(int rc)
{
	return rc == 0 || rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM;
}

static bool nss_grow(struct parse_ctx *c)
{
	size_t n = c->nss_len ? c->nss_len * 2 : 1024;
	char *b;

	if (n > NSS_BUF_MAX)
		return false;
	b = realloc(c->nss_buf, n);
	if (!b)
		return false;
	c->nss_buf = b;
	c->nss_len = n;
	return true;
}

/* 1 and *id on success, 0 after recording an error. */
static int lookup_name(struct parse_ctx *c, bool group, const char *name, uint32_t *id)
{
	const char *what = group ? "group" : "user", *hint = "";
	char eb[128];
	struct passwd pw, *pwr = NULL;
	struct group gr, *grr = NULL;
	int rc;

	for (;;) {
		if (!c->nss_buf && !nss_grow(c))
			return fail_nomem(c);
		if (group)
			rc = getgrnam_r(name, &gr, c->nss_buf, c->nss_len, &grr);
		else
			rc = getpwnam_r(name, &pw, c->nss_buf, c->nss_len, &pwr);
		if (rc != ERANGE)
			break;
		if (!nss_grow(c))
			return fail_nomem(c);
	}
	if (group && grr) {
		*id = grr->gr_gid;
		return 1;
	}
	if (!group && pwr) {
		*id = pwr->pw_uid;
		return 1;
	}
	if (rc == ENOMEM)
		return fail_nomem(c);
	if (nss_not_found(rc)) {
		if (strspn(name, "0123456789") == strlen(name))
			hint = group ? " (numeric gids go in match_gid)" : " (numeric uids go in match_uid)";
		return fail(c, c->lineno, -EINVAL, "unknown %s '%.*s'%s", what, VAL_MAX, name, hint);
	}
	return fail(c, c->lineno, -EINVAL, "cannot look up %s '%.*s': %s", what, VAL_MAX, name,
		    errstr(rc, eb, sizeof(eb)));
}

/* ---- [daemon] ----------------------------------------------------------- */

static int set_admin_group(struct parse_ctx *c, const char *v)
{
	struct policy *p = c->p;
	uint64_t n;
	uint32_t gid;

	if (strlen(v) >= sizeof(p->admin_group))
		return fail(c, c->lineno, -EINVAL, "admin_group '%.*s' is too long (max %zu characters)",
			    VAL_MAX, v, sizeof(p->admin_group) - 1);
	switch (policy_parse_num(v, &n)) {
	case NUM_OK:
		if (n > MAX_ID)
			return fail(c, c->lineno, -EINVAL, "admin_group gid must be 0..%llu, got '%s'",
				    MAX_ID, v);
		gid = (uint32_t)n;
		break;
	case NUM_RANGE:
		return fail(c, c->lineno, -EINVAL, "admin_group gid must be 0..%llu, got '%s'", MAX_ID,
			    v);
	default:
		if (!lookup_name(c, true, v, &gid))
			return 0;
		break;
	}
	p->has_admin_group = true;
	p->admin_gid = gid;
	copy_str(p->admin_group, sizeof(p->admin_group), v);
	return 1;
}

/* ---- [class NAME] match lists ------------------------------------------- */

static int add_id(struct parse_ctx *c, bool gid, uint32_t id)
{
	struct ooo_class *cls = cur_class(c);
	uint32_t **arr = gid ? &cls->gids : &cls->uids;
	size_t *n = gid ? &cls->ngids : &cls->nuids;
	uint32_t *a;

	if (*n >= POLICY_MAX_MATCH)
		return fail(c, c->lineno, -EINVAL, "too many %s in [class %s] (max %u)",
			    gid ? "gids" : "uids", cls->name, POLICY_MAX_MATCH);
	/* the capacity is implied: 8, then doubled each time it fills up */
	if (*n == 0 || (*n >= 8 && !(*n & (*n - 1)))) {
		a = realloc(*arr, (*n ? *n * 2 : 8) * sizeof(**arr));
		if (!a)
			return fail_nomem(c);
		*arr = a;
	}
	(*arr)[(*n)++] = id;
	return 1;
}

/* A match_cgroup pattern: an absolute cgroup v2 path, wildcards allowed. */
static int add_cgroup(struct parse_ctx *c, const char *tok)
{
	struct ooo_class *cls = cur_class(c);
	char **a;

	if (tok[0] != '/')
		return fail(c, c->lineno, -EINVAL,
			    "match_cgroup: '%.*s' must start with '/': a cgroup v2 path from the root, as in "
			    "/proc/PID/cgroup ('/*' matches every cgroup)",
			    VAL_MAX, tok);
	for (const char *t = tok; *t; t++) {
		if ((unsigned char)*t < 0x20 || *t == 0x7f)
			return fail(c, c->lineno, -EINVAL, "match_cgroup: control character in '%.*s'", VAL_MAX, tok);
	}
	if (cls->ncgroups >= POLICY_MAX_CGROUPS)
		return fail(c, c->lineno, -EINVAL, "too many match_cgroup patterns in [class %s] (max %u)", cls->name,
			    POLICY_MAX_CGROUPS);
	a = realloc(cls->cgroups, (cls->ncgroups + 1) * sizeof(*a));
	if (!a)
		return fail_nomem(c);
	cls->cgroups = a;
	if (!(a[cls->ncgroups] = strdup(tok)))
		return fail_nomem(c);
	cls->ncgroups++;
	return 1;
}

static int add_list_item(struct parse_ctx *c, const struct key_def *k, const char *tok)
{
	bool numeric = k->type == T_UIDS || k->type == T_GIDS;
	bool gid = k->type == T_GIDS || k->type == T_GROUPS;
	uint64_t n;
	uint32_t id;

	if (k->type == T_CGROUPS)
		return add_cgroup(c, tok);
	if (numeric && !strcmp(tok, "*")) {
		if (c->list_items)
			goto star;
		c->list_star = true;
		c->list_items++;
		cur_class(c)->match_all = true;
		return 1;
	}
	if (c->list_star)
		goto star;
	c->list_items++;
	if (!numeric) {
		if (!lookup_name(c, gid, tok, &id))
			return 0;
		return add_id(c, gid, id);
	}
	switch (policy_parse_num(tok, &n)) {
	case NUM_OK:
		if (n <= MAX_ID)
			return add_id(c, gid, (uint32_t)n);
		/* fallthrough */
	case NUM_RANGE:
		return fail(c, c->lineno, -EINVAL, "%s ids must be 0..%llu, got '%.*s'", k->name, MAX_ID,
			    VAL_MAX, tok);
	default:
		return fail(c, c->lineno, -EINVAL, "%s: '%.*s' is not a number (names go in %s)", k->name,
			    VAL_MAX, tok, gid ? "match_group" : "match_user");
	}
star:
	return fail(c, c->lineno, -EINVAL, "%s: '*' cannot be combined with other ids", k->name);
}

static bool is_list_sep(char ch)
{
	return ch == ',' || isspace((unsigned char)ch);
}

static int add_list(struct parse_ctx *c, const struct key_def *k, const char *v)
{
	char tok[POLICY_MAX_LINE + 1];
	bool any = false;
	size_t n;

	for (;;) {
		while (*v && is_list_sep(*v))
			v++;
		if (!*v)
			break;
		for (n = 0; v[n] && !is_list_sep(v[n]); n++)
			;
		/* cannot happen: a token is shorter than its line */
		if (n >= sizeof(tok))
			return fail(c, c->lineno, -EINVAL, "%s: item too long", k->name);
		memcpy(tok, v, n);
		tok[n] = '\0';
		v += n;
		any = true;
		if (!add_list_item(c, k, tok))
			return 0;
	}
	if (!any)
		return fail(c, c->lineno, -EINVAL, "missing value for %s", k->name);
	return 1;
}

/* ---- keys --------------------------------------------------------------- */

static int set_key(struct parse_ctx *c, const struct key_def *k, const char *v)
{
	struct policy *p = c->p;
	struct ooo_class *cls = c->sec == SEC_CLASS ? cur_class(c) : NULL;
	uint64_t n = 0;
	int lvl, rc;
	bool b;

	switch (k->type) {
	case T_UIDS:
	case T_GIDS:
	case T_USERS:
	case T_GROUPS:
	case T_CGROUPS:
		return add_list(c, k, v);
	case T_TENANTBY:
		if (!strcmp(v, "uid"))
			cls->tenant_by = CGROUP_BY_UID;
		else if (!strcmp(v, "pod"))
			cls->tenant_by = CGROUP_BY_POD;
		else if (!strcmp(v, "cgroup"))
			cls->tenant_by = CGROUP_BY_CGROUP;
		else
			return fail(c, c->lineno, -EINVAL, "%s must be uid, pod or cgroup, got '%.*s'", k->name,
				    VAL_MAX, v);
		c->tenant_by_line = c->lineno;
		return 1;
	case T_GROUP:
		return set_admin_group(c, v);
	case T_BOOL:
		if (policy_parse_bool(v, &b))
			return fail(c, c->lineno, -EINVAL, "%s must be yes or no, got '%.*s'", k->name,
				    VAL_MAX, v);
		if (k->field == F_EXECUTOR)
			p->executor = b;
		else if (k->field == F_FUSE)
			p->fuse = b;
		else if (k->field == F_FUSE_COPIES)
			p->fuse_copies = b;
		else if (k->field == F_SPREAD_LANES)
			p->spread_lanes = b;
		else if (k->field == F_CHAIN_LAUNCHES)
			p->chain_launches = b;
		else if (k->field == F_TM_ENABLED)
			p->telemetry.enabled = b;
		else if (k->field == F_TM_ALL)
			p->telemetry.all_processes = b;
		else if (k->field == F_TRACE_LAUNCHES)
			cls->trace_launches = b;
		else if (k->field == F_BINARY_MODULES)
			cls->binary_modules = b;
		else if (k->field == F_PARTITION)
			cls->partition = b;
		else if (k->field == F_FENCE)
			cls->fence = b;
		else if (k->field == F_MPS_MULTIUSER)
			p->mps.multiuser = b;
		else if (k->field == F_MPS_EXEC_CLIENT)
			p->mps.executor_client = b;
		else if (k->field == F_MPS_FEEDBACK)
			p->mps.feedback = b;
		else
			cls->admit = b;
		return 1;
	case T_LAUNCH:
		if (!strcmp(v, "tracked"))
			p->telemetry.launch_probes = POLICY_LAUNCH_TRACKED;
		else if (!strcmp(v, "all"))
			p->telemetry.launch_probes = POLICY_LAUNCH_ALL;
		else if (!strcmp(v, "off"))
			p->telemetry.launch_probes = POLICY_LAUNCH_OFF;
		else
			return fail(c, c->lineno, -EINVAL, "%s must be tracked, all or off, got '%.*s'", k->name,
				    VAL_MAX, v);
		return 1;
	case T_MPSMODE:
		if (!strcmp(v, "auto"))
			p->mps.enabled = POLICY_MPS_AUTO;
		else if (!strcmp(v, "yes"))
			p->mps.enabled = POLICY_MPS_YES;
		else if (!strcmp(v, "no"))
			p->mps.enabled = POLICY_MPS_NO;
		else
			return fail(c, c->lineno, -EINVAL, "%s must be auto, yes or no, got '%.*s'", k->name,
				    VAL_MAX, v);
		return 1;
	case T_LPRIO:
		if (!strcmp(v, "normal"))
			cls->native_priority = OOO_LEASE_PRIO_NORMAL;
		else if (!strcmp(v, "below"))
			cls->native_priority = OOO_LEASE_PRIO_BELOW;
		else
			return fail(c, c->lineno, -EINVAL, "%s must be normal or below, got '%.*s'", k->name,
				    VAL_MAX, v);
		return 1;
	case T_DOMAIN: {
		size_t len = strlen(v);

		if (len < k->lo || len > k->hi)
			return fail(c, c->lineno, -EINVAL, "domain must be 1..%llu characters, got '%.*s'",
				    (unsigned long long)k->hi, VAL_MAX, v);
		for (size_t i = 0; i < len; i++) {
			if (!isalnum((unsigned char)v[i]) && v[i] != '_' && v[i] != '-' && v[i] != '.')
				return fail(c, c->lineno, -EINVAL,
					    "domain must be 'uid' or a name of letters, digits, '_', '-' and '.', got '%.*s'",
					    VAL_MAX, v);
		}
		/* "uid" is the default: one domain per uid */
		copy_str(cls->domain, sizeof(cls->domain), strcmp(v, "uid") ? v : "");
		return 1;
	}
	case T_PATH: {
		size_t len = strlen(v);

		if (v[0] != '/' || len < k->lo || len > k->hi)
			return fail(c, c->lineno, -EINVAL, "%s must be an absolute path of at most %llu characters, got '%.*s'",
				    k->name, (unsigned long long)k->hi, VAL_MAX, v);
		for (size_t i = 0; i < len; i++) {
			if ((unsigned char)v[i] <= ' ' || v[i] == 0x7f)
				return fail(c, c->lineno, -EINVAL,
					    "%s must not contain spaces or control characters", k->name);
		}
		if (k->field == F_MPS_CONTROL)
			copy_str(p->mps.control, sizeof(p->mps.control), v);
		else
			copy_str(p->telemetry.libcuda, sizeof(p->telemetry.libcuda), v);
		return 1;
	}
	case T_STR: {
		size_t len = strlen(v);

		if (len < k->lo || len > k->hi)
			return fail(c, c->lineno, -EINVAL, "%s must be 1..%llu characters", k->name,
				    (unsigned long long)k->hi);
		for (size_t i = 0; i < len; i++) {
			if ((unsigned char)v[i] <= ' ' || v[i] == 0x7f)
				return fail(c, c->lineno, -EINVAL,
					    "%s must not contain spaces or control characters", k->name);
		}
		if (k->field == F_LIBCUDA && strchr(v, '/') && v[0] != '/')
			return fail(c, c->lineno, -EINVAL,
				    "libcuda must be a library name or an absolute path, got '%.*s'",
				    VAL_MAX, v);
		copy_str(p->libcuda, sizeof(p->libcuda), v);
		return 1;
	}
	case T_LISTEN: {
		char why[160];

		if (policy_parse_listen(v, &p->metrics, why, sizeof(why)) < 0)
			return fail(c, c->lineno, -EINVAL, "%s: %s, got '%.*s'", k->name, why, VAL_MAX, v);
		return 1;
	}
	case T_OBSOLETE:
		if (!p->warning[0])
			snprintf(p->warning, sizeof(p->warning),
				 "line %d: %s is no longer used and is ignored: executors run as uids of executor_uids",
				 c->lineno, k->name);
		return 1;
	case T_UIDRANGE: {
		uint64_t lo = 0, hi = 0;
		const char *dash = strchr(v, '-');
		char first[24];

		if (!dash || (size_t)(dash - v) >= sizeof(first))
			return fail(c, c->lineno, -EINVAL, "%s must be FIRST-LAST (uids), got '%.*s'", k->name,
				    VAL_MAX, v);
		memcpy(first, v, (size_t)(dash - v));
		first[dash - v] = '\0';
		if (policy_parse_num(first, &lo) != NUM_OK || policy_parse_num(dash + 1, &hi) != NUM_OK)
			return fail(c, c->lineno, -EINVAL, "%s must be FIRST-LAST (uids), got '%.*s'", k->name,
				    VAL_MAX, v);
		if (lo == 0 || hi < lo || hi >= 0xffffffffull || hi - lo + 1 < k->lo || hi - lo + 1 > k->hi)
			return fail(c, c->lineno, -EINVAL,
				    "%s must be 1..%llu uids above 0 and below 4294967295, got '%.*s'", k->name,
				    (unsigned long long)k->hi, VAL_MAX, v);
		if (lo <= 65534 && hi >= 65534)
			return fail(c, c->lineno, -EINVAL, "%s must not take in 65534 (nobody), got '%.*s'",
				    k->name, VAL_MAX, v);
		p->exec_uid_lo = (uint32_t)lo;
		p->exec_uid_n = (uint32_t)(hi - lo + 1);
		return 1;
	}
	case T_LOGLEVEL:
		if (policy_parse_log_level(v, &lvl))
			return fail(c, c->lineno, -EINVAL,
				    "%s must be err, warn, info or debug, got '%.*s'", k->name, VAL_MAX,
				    v);
		p->log_level = lvl;
		return 1;
	case T_SIZE:
		rc = policy_parse_size(v, &n);
		if (rc == -EINVAL)
			return fail(c, c->lineno, -EINVAL,
				    "%s must be a size such as 512M or 16G, got '%.*s'", k->name, VAL_MAX,
				    v);
		if (rc || n < k->lo || n > k->hi)
			return fail(c, c->lineno, -EINVAL, "%s must be 1 byte..1 PiB, got '%.*s'",
				    k->name, VAL_MAX, v);
		break;
	case T_U32:
		if (!get_num(c, k, v, &n))
			return 0;
		break;
	}

	switch (k->field) {
	case F_MAX_SESSIONS: p->max_sessions = (uint32_t)n; break;
	case F_STREAMS: p->streams = (uint32_t)n; break;
	case F_URGENT_RESERVE: p->urgent_reserve = (uint32_t)n; break;
	case F_BURST_WAIT: p->burst_wait_us = (uint32_t)n; break;
	case F_KERNEL_TIME_LIMIT: p->kernel_time_limit_ms = (uint32_t)n; break;
	case F_HANG_STRIKES: p->hang_strikes = (uint32_t)n; break;
	case F_HANG_WINDOW: p->hang_window_s = (uint32_t)n; break;
	case F_SERVING_THREADS: p->serving_threads = (uint32_t)n; break;
	case F_SHARD_SESSIONS: p->shard_sessions = (uint32_t)n; break;
	case F_MAX_DOMAINS: p->max_domains = (uint32_t)n; break;
	case F_DOMAIN_IDLE: p->domain_idle_ms = (uint32_t)n; break;
	case F_MAX_ADMIN_SESSIONS: p->max_admin_sessions = (uint32_t)n; break;
	case F_HELLO_TIMEOUT: p->hello_timeout_ms = (uint32_t)n; break;
	case F_SHUTDOWN_GRACE: p->shutdown_grace_ms = (uint32_t)n; break;
	case F_PRIORITY: cls->priority = (int32_t)n; break;
	case F_SLO_US: cls->slo_us = (uint32_t)n; break;
	case F_SM_SHARE: cls->sm_share = (uint32_t)n; break;
	case F_MEM_LIMIT: cls->limit[OOO_RES_MEM_BYTES] = n; break;
	case F_CLASS_SESSIONS: cls->limit[OOO_RES_SESSIONS] = n; break;
	case F_QUEUES: cls->limit[OOO_RES_QUEUES] = n; break;
	case F_BUFFERS: cls->limit[OOO_RES_BUFFERS] = n; break;
	case F_MODULES: cls->limit[OOO_RES_MODULES] = n; break;
	case F_INFLIGHT: cls->limit[OOO_RES_INFLIGHT] = n; break;
	case F_TM_SLOW: p->telemetry.slow_sync_us = (uint32_t)n; break;
	case F_TM_MAXPROCS: p->telemetry.max_processes = (uint32_t)n; break;
	case F_TM_MAXTRACKED: p->telemetry.max_tracked = (uint32_t)n; break;
	case F_TM_RINGBUF: p->telemetry.ringbuf_kb = (uint32_t)n; break;
	case F_NATIVE_SM: cls->native_sm = (uint32_t)n; break;
	case F_NATIVE_MEM: cls->native_mem = n; break;
	case F_MAX_LEASES: cls->max_leases = (uint32_t)n; break;
	case F_WAIT_SPIN_US: cls->wait_spin_us = (uint32_t)n; break;
	case F_MPS_MAX_CLIENTS: p->mps.max_clients = (uint32_t)n; break;
	case F_MPS_EXEC_RESERVE: p->mps.executor_reserve = (uint32_t)n; break;
	case F_MPS_EVICT_GRACE: p->mps.evict_grace_ms = (uint32_t)n; break;
	case F_MPS_STOP_GRACE: p->mps.stop_grace_ms = (uint32_t)n; break;
	case F_MPS_DEVICES: p->mps.devices = (uint32_t)n; break;
	case F_MPS_FEEDBACK_STEP: p->mps.feedback_step = (uint32_t)n; break;
	default: break; /* handled above */
	}
	return 1;
}

static bool is_list_type(enum key_type t)
{
	return t == T_UIDS || t == T_GIDS || t == T_USERS || t == T_GROUPS || t == T_CGROUPS;
}

/* Same scan as inih's: stops at one of `chars` or at a ';' after whitespace. */
static const char *find_chars_or_comment(const char *s, const char *chars)
{
	bool was_space = false;

	while (*s && (!chars || !strchr(chars, *s)) && !(was_space && *s == ';')) {
		was_space = isspace((unsigned char)*s);
		s++;
	}
	return s;
}

/* An indented line: inih passes it as more value for the previous key. */
static int continue_key(struct parse_ctx *c, const char *value)
{
	const struct key_def *k = c->last;
	char v[POLICY_MAX_LINE + 2];
	const char *e;
	size_t n;

	if (!k)
		return fail(c, c->lineno, -EINVAL, "syntax error: unexpected indented line");
	/* inih 55 leaves inline comments in continuation lines (later versions
	 * strip them): strip them here, as on key lines */
	e = find_chars_or_comment(value, NULL);
	n = (size_t)(e - value);
	while (n && isspace((unsigned char)value[n - 1]))
		n--;
	if (n >= sizeof(v))
		n = sizeof(v) - 1;
	memcpy(v, value, n);
	v[n] = '\0';
	if (!n)
		return 1; /* cannot happen: inih skips lines that start with a comment */
	if (!is_list_type(k->type))
		return fail(c, c->lineno, -EINVAL,
			    "indented line continues %s, which takes one value (remove the indentation)",
			    k->name);
	/* '=', ':' and '[' are never part of an id or a name, but they are what a
	 * key or section indented by mistake looks like */
	if (v[0] == '[' || strpbrk(v, "=:"))
		return fail(c, c->lineno, -EINVAL,
			    "indented line continues the %s list but looks like a key or section "
			    "(remove the indentation)", k->name);
	return add_list(c, k, v);
}

static bool in_buf(const struct parse_ctx *c, const char *s)
{
	uintptr_t b = (uintptr_t)c->buf, p = (uintptr_t)s;

	return p >= b && p < b + c->bufsize;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *c = user;
	const struct key_def *keys, *k = NULL;
	size_t nkeys, i;
	char sd[OOO_NAME_MAX + 16];

	(void)section; /* inih truncates it; we track sections ourselves */
	if (c->failed)
		return 0;
	/* inih passes the key of a continuation from its own copy, that of a key
	 * line from the line: if that disagrees with our mirror of its rules
	 * (another inih version?), stop rather than misread the value */
	if (c->handled || (c->kind != L_PAIR && c->kind != L_CONT) ||
	    in_buf(c, name) != (c->kind == L_PAIR))
		return fail(c, c->lineno, -EINVAL, "syntax error: expected 'key = value' or '[section]'");
	c->handled = true;
	if (c->kind == L_CONT)
		return continue_key(c, value);
	c->after_pair = name[0] != '\0';

	if (!name[0])
		return fail(c, c->lineno, -EINVAL, "missing key name before '='");
	if (c->sec == SEC_NONE)
		return fail(c, c->lineno, -EINVAL,
			    "key '%.*s' before any [daemon], [telemetry], [mps], [metrics] or [class NAME] section",
			    VAL_MAX, name);
	if (c->sec == SEC_DAEMON) {
		keys = daemon_keys;
		nkeys = NKEYS(daemon_keys);
	} else if (c->sec == SEC_TELEMETRY) {
		keys = telemetry_keys;
		nkeys = NKEYS(telemetry_keys);
	} else if (c->sec == SEC_MPS) {
		keys = mps_keys;
		nkeys = NKEYS(mps_keys);
	} else if (c->sec == SEC_METRICS) {
		keys = metrics_keys;
		nkeys = NKEYS(metrics_keys);
	} else {
		keys = class_keys;
		nkeys = NKEYS(class_keys);
	}
	for (i = 0; i < nkeys; i++) {
		if (!strcmp(keys[i].name, name)) {
			k = &keys[i];
			break;
		}
	}
	if (!k)
		return fail(c, c->lineno, -EINVAL, "unknown key '%.*s' in %s", VAL_MAX, name,
			    sec_desc(c, sd, sizeof(sd)));
	if (c->seen & (1u << i))
		return fail(c, c->lineno, -EINVAL, "duplicate key '%s' in %s", name,
			    sec_desc(c, sd, sizeof(sd)));
	c->seen |= 1u << i;
	c->last = k;
	c->list_items = 0;
	c->list_star = false;
	if (!value[0])
		return fail(c, c->lineno, -EINVAL, "missing value for %s", k->name);
	return set_key(c, k, value);
}

/* ---- sections ----------------------------------------------------------- */

static void class_defaults(struct ooo_class *cls)
{
	memset(cls, 0, sizeof(*cls));
	cls->admit = true;
	cls->binary_modules = true;
	cls->priority = (int32_t)OOO_PRIORITY_DEFAULT;
	cls->slo_us = 10000;
	cls->sm_share = 100;
	cls->limit[OOO_RES_SESSIONS] = 64;
	cls->limit[OOO_RES_QUEUES] = 256;
	cls->limit[OOO_RES_BUFFERS] = 4096;
	cls->limit[OOO_RES_MEM_BYTES] = 16ull << 30;
	cls->limit[OOO_RES_MODULES] = 256;
	cls->limit[OOO_RES_INFLIGHT] = 4096;
	cls->native_sm = 25;
	cls->native_priority = OOO_LEASE_PRIO_NORMAL;
	cls->max_leases = 16;
	cls->wait_spin_us = POLICY_WAIT_SPIN_US_DEFAULT;
}

/* Checks that need the whole section: run when the next one starts or at EOF. */
static int end_section(struct parse_ctx *c)
{
	struct ooo_class *cls;

	if (c->sec == SEC_CLASS) {
		cls = cur_class(c);
		if (!cls->match_all && !cls->nuids && !cls->ngids && !cls->ncgroups)
			return fail(c, c->sec_line, -EINVAL,
				    "class '%s' has no match_uid, match_gid, match_user, match_group or match_cgroup",
				    cls->name);
		/* a key per cgroup: whoever may create cgroups there would get a tenant's limits per cgroup */
		if (cls->tenant_by != CGROUP_BY_UID && !cls->ncgroups)
			return fail(c, c->tenant_by_line, -EINVAL,
				    "tenant_by = %s in class '%s' needs match_cgroup: name the cgroups (such as "
				    "/kubepods.slice/*) whose peers may each be a tenant",
				    cgroup_tenant_by_name(cls->tenant_by), cls->name);
	}
	c->tenant_by_line = 0;
	c->sec = SEC_NONE;
	c->seen = 0;
	c->last = NULL;
	return 1;
}

/* ASCII only, whatever the locale: names end up in messages and logs */
static bool valid_class_name(const char *s, size_t n)
{
	size_t i;
	char ch;

	if (n == 0 || n >= OOO_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		ch = s[i];
		if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') && !(ch >= '0' && ch <= '9') &&
		    ch != '_' && ch != '.' && ch != '-')
			return false;
	}
	return true;
}

static int start_class(struct parse_ctx *c, const char *name, size_t n)
{
	struct policy *p = c->p;
	struct ooo_class *cls;
	size_t i, cap;
	int *lines;

	if (!valid_class_name(name, n))
		return fail(c, c->lineno, -EINVAL,
			    "bad class name '%.*s': use 1..%u of A-Z a-z 0-9 _ . -",
			    (int)(n > VAL_MAX ? VAL_MAX : n), name, OOO_NAME_MAX - 1);
	for (i = 0; i < p->nclasses; i++) {
		if (strlen(p->classes[i].name) == n && !memcmp(p->classes[i].name, name, n))
			return fail(c, c->lineno, -EINVAL, "duplicate class '%s' (first on line %d)",
				    p->classes[i].name, c->class_lines[i]);
	}
	if (p->nclasses >= POLICY_MAX_CLASSES)
		return fail(c, c->lineno, -EINVAL, "too many classes (max %u)", POLICY_MAX_CLASSES);
	if (p->nclasses == c->cap_classes) {
		cap = c->cap_classes ? c->cap_classes * 2 : 8;
		cls = realloc(p->classes, cap * sizeof(*cls));
		if (!cls)
			return fail_nomem(c);
		p->classes = cls;
		lines = realloc(c->class_lines, cap * sizeof(*lines));
		if (!lines)
			return fail_nomem(c);
		c->class_lines = lines;
		c->cap_classes = cap;
	}
	cls = &p->classes[p->nclasses];
	class_defaults(cls);
	memcpy(cls->name, name, n);
	cls->name[n] = '\0';
	c->class_lines[p->nclasses] = c->lineno;
	p->nclasses++;
	c->sec = SEC_CLASS;
	return 1;
}

/* `s`: the line from '[' on, whitespace stripped at both ends. */
static int parse_section(struct parse_ctx *c, const char *s)
{
	const char *end = find_chars_or_comment(s + 1, "]");
	const char *name = s + 1, *rest;
	size_t n;

	if (*end != ']')
		return fail(c, c->lineno, -EINVAL, "missing ']' in section header");
	for (rest = end + 1; isspace((unsigned char)*rest); rest++)
		;
	while (isspace((unsigned char)*name))
		name++;
	n = (size_t)(end - name);
	while (n && isspace((unsigned char)name[n - 1]))
		n--;
	if (*rest && *rest != ';' && *rest != '#')
		return fail(c, c->lineno, -EINVAL, "unexpected text after [%.*s]",
			    (int)(n > VAL_MAX ? VAL_MAX : n), name);
	if (!end_section(c))
		return 0;
	c->sec_line = c->lineno;

	if (n == 6 && !memcmp(name, "daemon", 6)) {
		if (c->daemon_line)
			return fail(c, c->lineno, -EINVAL, "duplicate section [daemon] (first on line %d)",
				    c->daemon_line);
		c->daemon_line = c->lineno;
		c->sec = SEC_DAEMON;
		return 1;
	}
	if (n == 9 && !memcmp(name, "telemetry", 9)) {
		if (c->telemetry_line)
			return fail(c, c->lineno, -EINVAL, "duplicate section [telemetry] (first on line %d)",
				    c->telemetry_line);
		c->telemetry_line = c->lineno;
		c->sec = SEC_TELEMETRY;
		return 1;
	}
	if (n == 3 && !memcmp(name, "mps", 3)) {
		if (c->mps_line)
			return fail(c, c->lineno, -EINVAL, "duplicate section [mps] (first on line %d)", c->mps_line);
		c->mps_line = c->lineno;
		c->sec = SEC_MPS;
		return 1;
	}
	if (n == 7 && !memcmp(name, "metrics", 7)) {
		if (c->metrics_line)
			return fail(c, c->lineno, -EINVAL, "duplicate section [metrics] (first on line %d)",
				    c->metrics_line);
		c->metrics_line = c->lineno;
		c->sec = SEC_METRICS;
		return 1;
	}
	if (n >= 5 && !memcmp(name, "class", 5) && (n == 5 || isspace((unsigned char)name[5]))) {
		name += 5;
		n -= 5;
		while (n && isspace((unsigned char)*name)) {
			name++;
			n--;
		}
		if (!n)
			return fail(c, c->lineno, -EINVAL, "missing class name in [class NAME]");
		return start_class(c, name, n);
	}
	return fail(c, c->lineno, -EINVAL, "unknown section [%.*s]",
		    (int)(n > VAL_MAX ? VAL_MAX : n), name);
}

/* ---- the reader --------------------------------------------------------- */

/* Checks the line inih just finished with: a key line it did not pass to the
 * handler had no '=' (inih flags it but cannot say why). */
static void finish_line(struct parse_ctx *c)
{
	if (c->kind == L_PAIR && !c->handled)
		fail(c, c->lineno, -EINVAL, "syntax error: expected 'key = value' or '[section]'");
}

static void classify_line(struct parse_ctx *c, char *line)
{
	char copy[POLICY_MAX_LINE + 2];
	char *s = line, *e;

	if (c->lineno == 1 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
	    (unsigned char)s[2] == 0xBF)
		s += 3;
	while (*s && isspace((unsigned char)*s))
		s++;
	/* inih tests comments first, then continuation, then sections */
	if (!*s || *s == ';' || *s == '#') {
		c->kind = L_BLANK;
		return;
	}
	if (c->after_pair && s > line) {
		c->kind = L_CONT;
		return;
	}
	if (*s != '[') {
		c->kind = L_PAIR;
		return;
	}
	c->kind = L_SECTION;
	c->after_pair = false;
	/* parse a copy: inih needs the line as it is */
	copy_str(copy, sizeof(copy), s);
	e = copy + strlen(copy);
	while (e > copy && isspace((unsigned char)e[-1]))
		*--e = '\0';
	parse_section(c, copy);
}

static char *reader(char *str, int num, void *stream)
{
	struct parse_ctx *c = stream;
	const char *line, *nl;
	size_t n, take;

	finish_line(c);
	if (c->failed || c->pos >= c->len)
		return NULL;
	line = c->text + c->pos;
	nl = memchr(line, '\n', c->len - c->pos);
	n = nl ? (size_t)(nl - line) : c->len - c->pos;
	take = nl ? n + 1 : n;
	c->lineno++;
	c->kind = L_NONE;
	c->handled = false;
	if (n > POLICY_MAX_LINE || take + 1 > (size_t)num) {
		fail(c, c->lineno, -EINVAL, "line too long (max %d characters)", POLICY_MAX_LINE);
		return NULL;
	}
	if (memchr(line, '\0', n)) {
		fail(c, c->lineno, -EINVAL, "line contains a NUL byte");
		return NULL;
	}
	memcpy(str, line, take);
	str[take] = '\0';
	c->buf = str;
	c->bufsize = (size_t)num;
	c->pos += take;
	classify_line(c, str);
	return c->failed ? NULL : str;
}

/* ---- public API --------------------------------------------------------- */

static void policy_defaults(struct policy *p)
{
	p->max_sessions = 4096;
	p->max_admin_sessions = 16;
	p->hello_timeout_ms = 5000;
	p->shutdown_grace_ms = 2000;
	p->log_level = POLICY_LOG_INFO;
	p->executor = true;
	p->fuse = true;
	p->fuse_copies = true;
	p->spread_lanes = false;
	p->chain_launches = true;
	p->urgent_reserve = 0;
	p->burst_wait_us = 0;
	p->kernel_time_limit_ms = POLICY_KERNEL_TIME_LIMIT_MS_DEFAULT;
	p->hang_strikes = POLICY_HANG_STRIKES_DEFAULT;
	p->hang_window_s = POLICY_HANG_WINDOW_S_DEFAULT;
	p->streams = POLICY_STREAMS_DEFAULT;
	p->serving_threads = POLICY_SERVING_THREADS_DEFAULT;
	p->shard_sessions = POLICY_SHARD_SESSIONS_DEFAULT;
	p->max_domains = 16;
	p->domain_idle_ms = 60000;
	p->telemetry.enabled = true;
	p->telemetry.launch_probes = POLICY_LAUNCH_TRACKED;
	p->telemetry.slow_sync_us = 10000;
	p->telemetry.max_processes = 4096;
	p->telemetry.max_tracked = 1024;
	p->telemetry.ringbuf_kb = 256;
	p->mps.enabled = POLICY_MPS_AUTO;
	p->mps.multiuser = true;
	p->mps.executor_client = true;
	p->mps.max_clients = 48;
	p->mps.evict_grace_ms = 5000;
	p->mps.stop_grace_ms = 10000;
	p->mps.feedback = true;
	p->mps.feedback_step = 10;
	p->exec_uid_lo = POLICY_EXEC_UID_LO;
	p->exec_uid_n = POLICY_EXEC_UIDS_MAX;
	copy_str(p->libcuda, sizeof(p->libcuda), "libcuda.so.1");
}

int policy_parse(const char *text, size_t len, const char *source, struct policy **out,
		 struct policy_error *err)
{
	struct policy_error dummy;
	struct parse_ctx c;
	int rc;

	if (!err)
		err = &dummy;
	err->line = 0;
	err->msg[0] = '\0';
	if (!out || (!text && len)) {
		set_error(err, 0, "invalid arguments");
		return -EINVAL;
	}
	if (len > POLICY_MAX_FILE) {
		set_error(err, 0, "text is too big: %zu bytes (max %u)", len, POLICY_MAX_FILE);
		return -E2BIG;
	}

	memset(&c, 0, sizeof(c));
	c.text = text;
	c.len = len;
	c.err = err;
	c.p = calloc(1, sizeof(*c.p));
	if (!c.p) {
		set_error(err, 0, "out of memory");
		return -ENOMEM;
	}
	copy_str(c.p->source, sizeof(c.p->source), source ? source : "");
	policy_defaults(c.p);

	rc = ini_parse_stream(reader, &c, handler, &c);
	finish_line(&c);
	end_section(&c);
	if (!c.failed && rc == 0) {
		/* reserved partitions: the executor has POLICY_MAX_PARTITIONS, and the shared one must keep SMs */
		uint32_t np = 0, share = 0;

		for (size_t i = 0; i < c.p->nclasses; i++)
			if (c.p->classes[i].partition) {
				np++;
				share += c.p->classes[i].sm_share;
			}
		if (np > POLICY_MAX_PARTITIONS)
			fail(&c, 0, -EINVAL, "%u classes have partition = yes: at most %u may", np, POLICY_MAX_PARTITIONS);
		else if (np && share >= 100)
			fail(&c, 0, -EINVAL,
			     "the classes with partition = yes reserve %u%% of each GPU's SMs (sm_share): the other "
			     "classes need some",
			     share);
	}
	/* inih saw an error we did not record: fall back to a generic reason */
	if (rc > 0 && (!c.failed || rc < err->line)) {
		c.failed = false;
		fail(&c, rc, -EINVAL, "syntax error: expected 'key = value' or '[section]'");
	} else if (rc < 0) {
		fail(&c, 0, -ENOMEM, "out of memory");
	}

	free(c.nss_buf);
	free(c.class_lines);
	if (c.failed) {
		policy_free(c.p);
		return c.err_rc;
	}
	*out = c.p;
	return 0;
}

int policy_load_file(const char *path, struct policy **out, struct policy_error *err)
{
	struct policy_error dummy;
	size_t cap, n = 0;
	char eb[128];
	struct stat st;
	char *buf, *nb;
	ssize_t r;
	int fd, rc;

	if (!err)
		err = &dummy;
	err->line = 0;
	err->msg[0] = '\0';
	if (!path || !out) {
		set_error(err, 0, "invalid arguments");
		return -EINVAL;
	}
	/* O_NONBLOCK: a FIFO put there must not hang the daemon in open() */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		set_error(err, 0, "cannot open %s: %s", path, errstr(-rc, eb, sizeof(eb)));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		set_error(err, 0, "cannot stat %s: %s", path, errstr(-rc, eb, sizeof(eb)));
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		set_error(err, 0, "%s is a directory, not a file", path);
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		set_error(err, 0, "%s is not a regular file", path);
		goto out_close;
	}
	if (st.st_size > (off_t)POLICY_MAX_FILE) {
		rc = -E2BIG;
		set_error(err, 0, "%s is too big: %lld bytes (max %u)", path, (long long)st.st_size,
			  POLICY_MAX_FILE);
		goto out_close;
	}
	/* st_size is a hint only: the file may change while we read it */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap);
	if (!buf) {
		rc = -ENOMEM;
		set_error(err, 0, "out of memory");
		goto out_close;
	}
	for (;;) {
		if (n == cap) {
			if (cap > POLICY_MAX_FILE) {
				rc = -E2BIG;
				set_error(err, 0, "%s is too big (max %u bytes)", path, POLICY_MAX_FILE);
				goto out_free;
			}
			cap = cap * 2 > POLICY_MAX_FILE + 1 ? POLICY_MAX_FILE + 1 : cap * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				rc = -ENOMEM;
				set_error(err, 0, "out of memory");
				goto out_free;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			set_error(err, 0, "cannot read %s: %s", path, errstr(-rc, eb, sizeof(eb)));
			goto out_free;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	rc = policy_parse(buf, n, path, out, err);
out_free:
	free(buf);
out_close:
	close(fd);
	return rc;
}

int policy_load_default(struct policy **out)
{
	struct policy_error err;

	return policy_parse(policy_default_text, strlen(policy_default_text), DEFAULT_SOURCE, out,
			    &err);
}

struct policy *policy_free(struct policy *p)
{
	size_t i;

	if (!p)
		return NULL;
	for (i = 0; i < p->nclasses; i++) {
		free(p->classes[i].uids);
		free(p->classes[i].gids);
		for (size_t j = 0; j < p->classes[i].ncgroups; j++)
			free(p->classes[i].cgroups[j]);
		free(p->classes[i].cgroups);
	}
	free(p->classes);
	free(p);
	return NULL;
}

static bool has_id(const uint32_t *ids, size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (ids[i] == id)
			return true;
	}
	return false;
}

static bool ids_match(const struct ooo_class *cls, uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups)
{
	if (cls->match_all || has_id(cls->uids, cls->nuids, uid) || has_id(cls->gids, cls->ngids, gid))
		return true;
	for (size_t j = 0; groups && j < ngroups; j++) {
		if (has_id(cls->gids, cls->ngids, groups[j]))
			return true;
	}
	return false;
}

bool policy_class_matches_cgroup(const struct ooo_class *cls, uid_t uid, gid_t gid, const gid_t *groups,
				 size_t ngroups, const char *cgroup)
{
	bool in = false;

	if (!cls->ncgroups)
		return ids_match(cls, uid, gid, groups, ngroups);
	if (!cgroup || !cgroup[0])
		return false;
	for (size_t i = 0; i < cls->ncgroups && !in; i++)
		in = fnmatch(cls->cgroups[i], cgroup, 0) == 0;
	if (!in)
		return false;
	/* the id keys, if any, narrow the cgroups' peers */
	return (!cls->match_all && !cls->nuids && !cls->ngids) || ids_match(cls, uid, gid, groups, ngroups);
}

bool policy_class_matches(const struct ooo_class *cls, uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups)
{
	return policy_class_matches_cgroup(cls, uid, gid, groups, ngroups, NULL);
}

bool policy_uses_cgroups(const struct policy *p)
{
	for (size_t i = 0; p && i < p->nclasses; i++) {
		if (p->classes[i].ncgroups || p->classes[i].tenant_by != CGROUP_BY_UID)
			return true;
	}
	return false;
}

bool policy_exec_uid(const struct policy *p, uid_t uid)
{
	return (uint64_t)uid >= p->exec_uid_lo && (uint64_t)uid - p->exec_uid_lo < p->exec_uid_n;
}

const struct ooo_class *policy_match_cgroup(const struct policy *p, uid_t uid, gid_t gid, const gid_t *groups,
					    size_t ngroups, const char *cgroup)
{
	const struct ooo_class *cls;
	size_t i;

	if (!p)
		return NULL;
	for (i = 0; i < p->nclasses; i++) {
		cls = &p->classes[i];
		if (policy_class_matches_cgroup(cls, uid, gid, groups, ngroups, cgroup))
			return cls->admit ? cls : NULL;
	}
	return NULL;
}

const struct ooo_class *policy_match(const struct policy *p, uid_t uid, gid_t gid, const gid_t *groups,
				     size_t ngroups)
{
	return policy_match_cgroup(p, uid, gid, groups, ngroups, NULL);
}

const struct ooo_class *policy_find_class(const struct policy *p, const char *name)
{
	size_t i;

	if (!p || !name)
		return NULL;
	for (i = 0; i < p->nclasses; i++) {
		if (!strcmp(p->classes[i].name, name))
			return &p->classes[i];
	}
	return NULL;
}
