/* SPDX-License-Identifier: MIT */
/* Small helpers of oooctl: errors, clocks, formatting, user names, text tables. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../json.h"
#include "oooctl.h"

/* ---- small helpers ------------------------------------------------------ */

void err_msg(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("oooctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void __attribute__((noreturn)) oom(void)
{
	err_msg("out of memory");
	exit(RC_FAIL);
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		oom();
	return d;
}

int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * (int64_t)NS_PER_S + ts.tv_nsec;
}

void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Names and labels come from tenants: keep their bytes off the terminal's
 * control path. Control characters (C0, DEL, C1) and bytes that are not
 * valid UTF-8 become '?', in place.
 */
void sanitize(char *s)
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

const char *fmt_dur(char *buf, size_t cap, uint64_t ns)
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

const char *fmt_size(char *buf, size_t cap, uint64_t b)
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
const char *fmt_limit(char *buf, size_t cap, uint64_t v, bool bytes)
{
	if (v == UINT64_MAX)
		snprintf(buf, cap, "unlimited");
	else if (bytes)
		fmt_size(buf, cap, v);
	else
		snprintf(buf, cap, "%" PRIu64, v);
	return buf;
}

const char *fmt_realtime(char *buf, size_t cap, uint64_t ns, bool utc)
{
	time_t t = (time_t)(ns / NS_PER_S);
	struct tm tm;

	if (!ns || !(utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)) ||
	    !strftime(buf, cap, utc ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M:%S %z", &tm))
		snprintf(buf, cap, "%s", "-");
	return buf;
}

uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Local user names, cached: a session list repeats the same few uids, and NSS may be remote. */
const char *user_name(uint32_t uid)
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
const char *user_label(uint32_t uid, char *buf, size_t cap)
{
	const char *n = user_name(uid);

	if (n)
		return n;
	snprintf(buf, cap, "%" PRIu32, uid);
	return buf;
}

/* ---- tables --------------------------------------------------------------- */

/* Columns: "NAME" left-aligned, ">NAME" right-aligned. */
void table_init(struct table *t, int ncols, const char *const *cols)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	for (int i = 0; i < ncols; i++) {
		t->right[i] = cols[i][0] == '>';
		t->hdr[i] = cols[i] + t->right[i];
	}
}

void table_cell(struct table *t, const char *fmt, ...)
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

void table_print(struct table *t)
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

void j_res(const char *key, const uint64_t *v)
{
	j_obj(key);
	for (int i = 0; i < OOO_RES_COUNT; i++)
		j_u64(res_names[i], v[i]);
	j_obj_end();
}

/* ---- status ------------------------------------------------------------------ */

void kv(const char *key, const char *fmt, ...)
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
