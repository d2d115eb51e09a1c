/* SPDX-License-Identifier: MIT */
/*
 * oooctl's internal interface: what main.c (options, the command table,
 * dispatch) and the command files (one per group of commands) share.
 *
 * oooctl is a short-lived, single-threaded process: helpers that cannot get
 * memory print "out of memory" and exit 1 rather than return, and state
 * that lives for the whole run (the options, the last failure's reason) is
 * global. Everything printed goes to stdout; every error to stderr.
 */
#ifndef OOO_TOOLS_OOOCTL_H
#define OOO_TOOLS_OOOCTL_H

#include <getopt.h> /* cmd_getopt() sets optind and optarg */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/un.h>

#include <ooo/ooo.h>
#include <ooo/proto.h>

#include "../../proto/names.h" /* res_names, tm_fn_names, the stages */

#ifndef OOO_SYSCONFDIR
#define OOO_SYSCONFDIR "/etc"
#endif
/* The file oood reads when it is given no -c and the file exists. */
#define DEFAULT_CONF OOO_SYSCONFDIR "/ooo/oood.conf"

/* Exit codes: part of the interface, documented in usage() and oooctl(8). */
enum {
	RC_OK = 0,
	RC_FAIL = 1,  /* oood reported a failure, or the config file is invalid */
	RC_USAGE = 2, /* bad command line */
	RC_DOWN = 3,  /* oood not running or unreachable */
	RC_PERM = 4,  /* permission denied on admin.sock */
	RC_PROTO = 5, /* timeout or protocol error */
};

#define DEFAULT_TIMEOUT_MS 5000
#define NS_PER_S 1000000000ull

/* An executor's trust domain as oooctl shows it: a GPU's spare has none. */
#define DOMAIN_NAME(d) ((d)[0] ? (d) : "(spare)")

/* ---- main.c: options, the command table, dispatch ---------------------------- */

/* One command of the table in main.c. */
struct cmd {
	const char *name;
	/* argv[0] is the command's name; returns the exit code (RC_*) */
	int (*fn)(int argc, char **argv);
	const char *help;  /* one line for the command list */
	const char *usage; /* arguments, after "oooctl [OPTIONS] NAME" */
	const char *more;  /* option lines and details for `oooctl help NAME`, or NULL */
};

extern const struct cmd *cur_cmd; /* the command running; NULL while the global options are parsed */
extern bool opt_json;              /* --json, before or after the command */
extern int opt_timeout_ms;         /* --timeout: connect and request timeout */
/* DIR/admin.sock, set before any command runs */
extern char admin_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
/*
 * The reason that goes with the last failed call: the daemon's text from
 * ooo_last_error(), or ours for a malformed reply. Copied at once because
 * libooo overwrites its copy on the next call. describe() reads it.
 */
extern char reason[OOO_ERRMSG_MAX];

/* Print c's usage, help line and options to f. */
void cmd_usage(FILE *f, const struct cmd *c);

/*
 * Print "oooctl: MESSAGE" and "Try 'oooctl [COMMAND] --help'." on stderr;
 * returns RC_USAGE, for `return usage_error(...)`.
 */
__attribute__((format(printf, 1, 2))) int usage_error(const char *fmt, ...);

/*
 * getopt_long for the command cur_cmd, after optind = 0: handles --help
 * (prints, exits 0) and --json itself, exits RC_USAGE on an unknown option
 * or one of the shared long options (--count, --device, --interval,
 * --metric, --grace, --wait) whose letter is not in shortopts. Returns the
 * next option letter of shortopts (optarg set), or -1 at the end.
 */
int cmd_getopt(int argc, char **argv, const char *shortopts);

/* For commands without arguments: 0, or RC_USAGE (reported) for any argument. */
int no_args(int argc, char **argv);

/* ---- util.c: text, tables, names --------------------------------------------- */

/* "oooctl: MESSAGE" on stderr, after flushing stdout so the two keep their order. */
__attribute__((format(printf, 1, 2))) void err_msg(const char *fmt, ...);
/* "out of memory", exit RC_FAIL. */
__attribute__((noreturn)) void oom(void);
/* realloc that never fails (oom() instead); n 0 still returns a block. */
void *xrealloc(void *p, size_t n);
/* strdup that never fails; free the result. */
char *xstrdup(const char *s);

int64_t mono_ns(void);     /* CLOCK_MONOTONIC in ns */
uint64_t realtime_ns(void); /* CLOCK_REALTIME in ns */
/* Sleep ns, resumed after signals. */
void sleep_ns(uint64_t ns);

/*
 * Names and labels come from tenants: keep their bytes off the terminal's
 * control path. Control characters (C0, DEL, C1) and bytes that are not
 * valid UTF-8 become '?', in place.
 */
void sanitize(char *s);

/*
 * Formatters: each writes into buf (cap bytes, truncated if short) and
 * returns buf, so calls nest inside printf arguments.
 */
const char *fmt_dur(char *buf, size_t cap, uint64_t ns);     /* "850us", "1.2s", "3m 4s", "2d 1h" */
const char *fmt_size(char *buf, size_t cap, uint64_t b);     /* "512 B", "1.5 GiB" */
const char *fmt_limit(char *buf, size_t cap, uint64_t v, bool bytes); /* UINT64_MAX: "unlimited" */
/* ns since the epoch as local time or ISO 8601 UTC; 0: "-" */
const char *fmt_realtime(char *buf, size_t cap, uint64_t ns, bool utc);

/* The local user name of uid, sanitized, cached for the run (do not free); NULL if it has none. */
const char *user_name(uint32_t uid);
/* user_name(uid), or the number written into buf when it has none. */
const char *user_label(uint32_t uid, char *buf, size_t cap);

/* "KEY  VALUE" with the key padded to a column; the value sanitized. */
__attribute__((format(printf, 2, 3))) void kv(const char *key, const char *fmt, ...);

/* An aligned text table, filled cell by cell, row-major. */
#define TABLE_MAX_COLS 16
struct table {
	int ncols;
	const char *hdr[TABLE_MAX_COLS];
	bool right[TABLE_MAX_COLS]; /* numbers line up on the right */
	char **cells;               /* row-major, ncols per row */
	size_t n, cap;
};

/* ncols (<= TABLE_MAX_COLS) columns named cols: "NAME" left-aligned, ">NAME" right-aligned; cols must outlive t. */
void table_init(struct table *t, int ncols, const char *const *cols);
/* Append the next cell (sanitized). */
__attribute__((format(printf, 2, 3))) void table_cell(struct table *t, const char *fmt, ...);
/* Print the header and the rows to stdout and free the cells: t may be filled again. */
void table_print(struct table *t);

/* JSON: an object KEY with one number per resource. */
void j_res(const char *key, const uint64_t *v);

/* ---- conn.c: the admin connection and its errors --------------------------------- */

/*
 * Describe a failed libooo call (err negative: -errno or -OOO_E*) in buf,
 * using `reason`, and return the exit code it maps to.
 */
int describe(int err, char *buf, size_t cap);
/* Print the failure of `what` (NULL: a connection failure) on stderr; returns its exit code. */
int report(const char *what, int err);
/* Copy libooo's last error text into `reason`. */
void take_reason(void);
/* Open the admin session; NULL with *err = -errno (and `reason` set) on failure, nothing printed. */
ooo_session *admin_open_quiet(int *err);
/* Open the admin session, or report why not (NULL, *rc the exit code). Close with ooo_close(). */
ooo_session *admin_open(int *rc);
/* ooo_admin_call that fills `reason` on failure: the reply's length, or negative errno / -OOO_E*. */
int admin_call(ooo_session *s, uint16_t type, const void *req, size_t req_len, void *reply, size_t cap);
/* OOO_MSG_STATUS into *st: 0, or a negative error (a reply of another size is -OOO_EPROTO). */
int get_status(ooo_session *s, struct ooo_msg_status *st);
/*
 * Fetch a whole paged list of rec_size records: 0 with *out a malloc'd
 * array the caller frees (NULL when empty) and *nout its length, or a
 * negative error with nothing allocated. Each page is a fresh snapshot:
 * an entry may show twice or be missed if the list changes meanwhile.
 */
int fetch_list(ooo_session *s, uint16_t type, size_t rec_size, void **out, size_t *nout);
/*
 * The list commands' common part: no arguments, one admin session, every
 * page of the list. RC_OK with *out and *n as fetch_list() gives them, or
 * an exit code (reported, nothing allocated).
 */
int list_command(int argc, char **argv, uint16_t type, size_t rec_size, const char *what, void **out, size_t *n);

/* ---- the commands: argv[0] is the command's name; each returns its exit code ---- */

int do_status(int argc, char **argv);    /* state.c */
int do_tenants(int argc, char **argv);   /* state.c */
int do_sessions(int argc, char **argv);  /* state.c */
int do_devices(int argc, char **argv);   /* state.c */
int do_sched(int argc, char **argv);     /* sched.c */
int do_telemetry(int argc, char **argv); /* telemetry.c */
int do_top(int argc, char **argv);       /* telemetry.c */
int do_hist(int argc, char **argv);      /* telemetry.c */
int do_trace(int argc, char **argv);     /* telemetry.c */
int do_leases(int argc, char **argv);    /* leases.c */
int do_evict(int argc, char **argv);     /* leases.c */
int do_mps(int argc, char **argv);       /* leases.c */
int do_pardon(int argc, char **argv);    /* actions.c */
int do_partition(int argc, char **argv); /* actions.c */
int do_reload(int argc, char **argv);    /* actions.c */
int do_ping(int argc, char **argv);      /* actions.c */
int do_version(int argc, char **argv);   /* actions.c */
int do_config(int argc, char **argv);    /* config.c */
int do_metrics(int argc, char **argv);   /* metrics.c */
int do_cdi(int argc, char **argv);       /* cdi.c */

/* ---- telemetry.c, for metrics.c ---------------------------------------------------- */

/* OOO_MSG_TELEMETRY into *t: 0, or a negative error (a reply of another size is -OOO_EPROTO). */
int get_telemetry(ooo_session *s, struct ooo_msg_telemetry *t);

#endif
