/* SPDX-License-Identifier: MIT */
/* MPS control text: command grammar and reply parsing (pure; mps.h). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mps_text.h"

/* ---- pure ----------------------------------------------------------------------------- */

void mps_why(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (!why || !cap)
		return;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	/* replies are the control program's text: keep them printable in logs and replies */
	for (char *c = why; *c; c++) {
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = ' ';
	}
}

/* The next line of s (without its newline), trimmed; returns the rest or NULL at the end. */
static const char *next_line(const char *s, char *line, size_t cap)
{
	const char *nl;
	size_t n;

	if (!*s)
		return NULL;
	nl = strchr(s, '\n');
	n = nl ? (size_t)(nl - s) : strlen(s);
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	{
		size_t m = n;
		while (m && isspace((unsigned char)s[m - 1]))
			m--;
		if (m >= cap)
			m = cap - 1;
		memcpy(line, s, m);
		line[m] = '\0';
	}
	return nl ? nl + 1 : s + n;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
	}
	return true;
}

/* "Server N not found" (what every per-server command says for an unknown server) */
static bool server_not_found(const char *line)
{
	return !strncmp(line, "Server ", 7) && strstr(line, " not found");
}

void mps_format_size(uint64_t bytes, char *out, size_t cap)
{
	uint64_t mib = (bytes >> 20) + ((bytes & ((1ull << 20) - 1)) != 0); /* rounds up without wrapping */

	if (mib && !(mib % 1024))
		snprintf(out, cap, "%lluG", (unsigned long long)(mib / 1024));
	else
		snprintf(out, cap, "%lluM", (unsigned long long)mib);
}

int mps_parse_size(const char *s, uint64_t *bytes)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!isdigit((unsigned char)*s))
		return -EPROTO;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EPROTO;
	switch (*end) {
	case '\0': break;
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	default: return -EPROTO;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EPROTO;
	*bytes = (uint64_t)v << shift;
	return 0;
}

int mps_parse_pids(const char *reply, pid_t *pids, size_t cap, size_t *n, char *why, size_t wcap)
{
	char line[128];
	const char *s = reply;

	*n = 0;
	while ((s = next_line(s, line, sizeof(line)))) {
		unsigned long v;

		if (!line[0])
			continue;
		if (server_not_found(line)) {
			mps_why(why, wcap, "%s", line);
			return -ESRCH;
		}
		if (!all_digits(line) || strlen(line) > 10 || (v = strtoul(line, NULL, 10)) == 0 || v > INT32_MAX) {
			mps_why(why, wcap, "unexpected reply line '%.80s'", line);
			return -EPROTO;
		}
		if (*n == cap) {
			mps_why(why, wcap, "more than %zu pids in the reply", cap);
			return -E2BIG;
		}
		pids[(*n)++] = (pid_t)v;
	}
	return 0;
}

/* "50.0" or "50": the value MPS now has */
/* DIGITS or DIGITS.DIGITS, as MPS prints it (strtod alone would take hex and exponents) */
static int parse_pct_line(const char *line, double *v)
{
	const char *s = line;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EPROTO;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s == '.') {
		s++;
		if (!isdigit((unsigned char)*s))
			return -EPROTO;
		while (isdigit((unsigned char)*s))
			s++;
	}
	if (*s || s - line > 12)
		return -EPROTO;
	errno = 0;
	*v = strtod(line, &end);
	if (errno || *end || *v < 0 || *v > 100)
		return -EPROTO;
	return 0;
}

int mps_parse_pct(const char *reply, uint32_t want, char *why, size_t wcap)
{
	char line[128], last[128] = "";
	const char *s = reply;
	unsigned lines = 0;
	double v;

	while ((s = next_line(s, line, sizeof(line)))) {
		if (!line[0])
			continue;
		memcpy(last, line, sizeof(last));
		lines++;
	}
	if (lines != 1) {
		mps_why(why, wcap, lines ? "unexpected reply '%.80s'" : "no reply%s", lines ? last : "");
		return -EPROTO;
	}
	if (server_not_found(last)) {
		mps_why(why, wcap, "%s", last);
		return -ESRCH;
	}
	if (parse_pct_line(last, &v) < 0) {
		mps_why(why, wcap, "unexpected reply '%.80s'", last);
		return -EPROTO;
	}
	if (v < (double)want - 0.05 || v > (double)want + 0.05) {
		/* it keeps the old value, silently, for what it does not accept */
		mps_why(why, wcap, "MPS kept %.1f%% instead of %u%%", v, want);
		return -EINVAL;
	}
	return 0;
}

int mps_parse_terminate(const char *reply, char *why, size_t wcap)
{
	char line[128], last[128] = "", first[128] = "";
	const char *s = reply;

	while ((s = next_line(s, line, sizeof(line)))) {
		if (!line[0])
			continue;
		if (!first[0])
			memcpy(first, line, sizeof(first));
		memcpy(last, line, sizeof(last));
	}
	if (!strcmp(last, "0") && !strcmp(first, "0"))
		return 0;
	if (!strcmp(last, "1") && strcmp(first, "1")) {
		mps_why(why, wcap, "%s", first);
		return -ESRCH;
	}
	mps_why(why, wcap, last[0] ? "unexpected reply '%.80s'" : "no reply%s", last);
	return -EPROTO;
}

int mps_parse_empty(const char *reply, char *why, size_t wcap)
{
	char line[128];
	const char *s = reply;

	while ((s = next_line(s, line, sizeof(line)))) {
		if (!line[0])
			continue;
		mps_why(why, wcap, "%s", line);
		return server_not_found(line) ? -ESRCH : -EINVAL;
	}
	return 0;
}

/* ---- the command grammar (oooctl mps run) ------------------------------------------------ */

enum arg { A_END, A_PID, A_PCT, A_DEV, A_SIZE, A_PRIO };

static const struct {
	const char *name;
	int kind;
	enum arg args[4];
} commands[] = {
	{ "get_server_list", MPS_GET_SERVER_LIST, { A_END } },
	{ "get_client_list", MPS_GET_CLIENT_LIST, { A_PID, A_END } },
	{ "set_default_active_thread_percentage", MPS_SET_DEFAULT_PCT, { A_PCT, A_END } },
	{ "set_active_thread_percentage", MPS_SET_PCT, { A_PID, A_PCT, A_END } },
	{ "set_default_device_pinned_mem_limit", MPS_SET_DEFAULT_MEM, { A_DEV, A_SIZE, A_END } },
	{ "set_device_pinned_mem_limit", MPS_SET_MEM, { A_PID, A_DEV, A_SIZE, A_END } },
	{ "set_default_client_priority", MPS_SET_DEFAULT_PRIORITY, { A_PRIO, A_END } },
	{ "terminate_client", MPS_TERMINATE_CLIENT, { A_PID, A_PID, A_END } },
	{ "quit", MPS_QUIT, { A_END } },
};

static bool check_arg(enum arg a, const char *w)
{
	uint64_t b;
	unsigned long v;

	if (!all_digits(w) && a != A_SIZE)
		return false;
	switch (a) {
	case A_PID:
		return strlen(w) <= 10 && (v = strtoul(w, NULL, 10)) > 0 && v <= INT32_MAX;
	case A_PCT:
		return strlen(w) <= 3 && (v = strtoul(w, NULL, 10)) >= 1 && v <= 100;
	case A_DEV:
		return strlen(w) <= 2 && strtoul(w, NULL, 10) < 64;
	case A_PRIO:
		return !strcmp(w, "0") || !strcmp(w, "1");
	case A_SIZE:
		return strlen(w) <= 16 && mps_parse_size(w, &b) == 0;
	case A_END:
		break;
	}
	return false;
}

int mps_check_command(const char *line, char *out, size_t cap, char *why, size_t wcap)
{
	char buf[OOO_MPS_LINE_MAX], *words[6], *save = NULL;
	size_t nw = 0, len = strnlen(line, sizeof(buf));

	if (len >= sizeof(buf)) {
		mps_why(why, wcap, "command longer than %u characters", OOO_MPS_LINE_MAX - 1);
		return -EINVAL;
	}
	memcpy(buf, line, len + 1);
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)buf[i] < 0x20 && buf[i] != '\t') {
			mps_why(why, wcap, "control characters in the command");
			return -EINVAL;
		}
		if ((unsigned char)buf[i] >= 0x7f) {
			mps_why(why, wcap, "non-ASCII characters in the command");
			return -EINVAL;
		}
	}
	for (char *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (nw == 6) {
			mps_why(why, wcap, "too many words");
			return -EINVAL;
		}
		words[nw++] = w;
	}
	if (!nw) {
		mps_why(why, wcap, "empty command");
		return -EINVAL;
	}
	for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++) {
		size_t na = 0, pos;

		if (strcmp(words[0], commands[c].name))
			continue;
		while (commands[c].args[na] != A_END)
			na++;
		if (nw - 1 != na) {
			mps_why(why, wcap, "%s takes %zu argument%s, got %zu", words[0], na, na == 1 ? "" : "s", nw - 1);
			return -EINVAL;
		}
		for (size_t a = 0; a < na; a++) {
			if (!check_arg(commands[c].args[a], words[a + 1])) {
				static const char *const what[] = { "", "a pid", "a percentage 1..100", "a device index 0..63",
								    "a size such as 2G or 512M", "0 or 1" };
				mps_why(why, wcap, "%s: argument %zu must be %s, got '%.32s'", words[0], a + 1,
					what[commands[c].args[a]], words[a + 1]);
				return -EINVAL;
			}
		}
		pos = (size_t)snprintf(out, cap, "%s", words[0]);
		for (size_t a = 1; a < nw && pos < cap; a++)
			pos += (size_t)snprintf(out + pos, cap - pos, " %s", words[a]);
		if (pos >= cap) {
			mps_why(why, wcap, "command too long");
			return -EINVAL;
		}
		return commands[c].kind;
	}
	mps_why(why, wcap, "unsupported command '%.40s' (supported: get_server_list, get_client_list, "
		"set_default_active_thread_percentage, set_active_thread_percentage, "
		"set_default_device_pinned_mem_limit, set_device_pinned_mem_limit, set_default_client_priority, "
		"terminate_client, quit)", words[0]);
	return -EINVAL;
}

int mps_check_reply(int kind, const char *cmd, const char *reply, char *why, size_t wcap)
{
	pid_t pids[MPS_MAX_PIDS];
	size_t n;
	const char *arg;

	switch (kind) {
	case MPS_GET_SERVER_LIST:
	case MPS_GET_CLIENT_LIST:
		return mps_parse_pids(reply, pids, MPS_MAX_PIDS, &n, why, wcap);
	case MPS_SET_DEFAULT_PCT:
	case MPS_SET_PCT:
		arg = strrchr(cmd, ' ');
		return mps_parse_pct(reply, arg ? (uint32_t)strtoul(arg + 1, NULL, 10) : 0, why, wcap);
	case MPS_TERMINATE_CLIENT:
		return mps_parse_terminate(reply, why, wcap);
	case MPS_SET_DEFAULT_MEM:
	case MPS_SET_MEM:
	case MPS_SET_DEFAULT_PRIORITY:
	case MPS_QUIT:
		return mps_parse_empty(reply, why, wcap);
	default:
		mps_why(why, wcap, "unknown command kind %d", kind);
		return -EINVAL;
	}
}

