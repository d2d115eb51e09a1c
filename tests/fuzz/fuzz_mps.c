/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for daemon/mps_text.c, which parses what
 * nvidia-cuda-mps-control prints and checks the command lines of
 * oooctl mps run. The whole input is a reply for every mps_parse_* function
 * and mps_parse_size; its first line is also a command line for
 * mps_check_command, and what follows that line the reply to it for
 * mps_check_reply (of the command's kind, and of every other kind).
 *
 * Aborts when
 *   - a result is not one the function documents;
 *   - an error leaves why empty, unterminated, or with a byte that is not
 *     printable ASCII;
 *   - mps_parse_pids succeeds with more pids than cap, a pid <= 0, a pid
 *     whose digits are not in the reply, or disagrees with itself at
 *     another cap;
 *   - mps_parse_pct accepts two percentages, or refuses the others for
 *     different reasons;
 *   - mps_parse_empty accepts a reply with anything but whitespace, or
 *     refuses one of whitespace only;
 *   - a size that parses does not format and parse back to itself rounded
 *     up to MiB;
 *   - mps_check_command succeeds with an unterminated line, one that does
 *     not fit, one that is not normal (single spaces, no tabs), or one
 *     that does not check again to the same kind and text.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/mps/mps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MIB (1ull << 20)

static char text[MPS_REPLY_MAX * 4 + 1];

/* An error must say why, printably, inside wcap. */
static void check_why(const char *why, size_t wcap)
{
	size_t l = strnlen(why, wcap);

	if (!l || l == wcap)
		abort();
	for (size_t i = 0; i < l; i++) {
		if ((unsigned char)why[i] < 0x20 || (unsigned char)why[i] >= 0x7f)
			abort();
	}
}

static void check_pids(const char *reply)
{
	static pid_t pids[MPS_MAX_PIDS], small[MPS_MAX_PIDS];
	char why[256], num[16];
	size_t n, ns;
	int r, rs;

	why[0] = '\0';
	r = mps_parse_pids(reply, pids, MPS_MAX_PIDS, &n, why, sizeof(why));
	if (r && r != -ESRCH && r != -E2BIG && r != -EPROTO)
		abort();
	if (r) {
		check_why(why, sizeof(why));
	} else {
		if (n > MPS_MAX_PIDS)
			abort();
		for (size_t i = 0; i < n; i++) {
			if (pids[i] <= 0)
				abort();
			snprintf(num, sizeof(num), "%d", (int)pids[i]);
			if (!strstr(reply, num))
				abort();
		}
	}
	/* the same reply with room for fewer pids */
	for (size_t cap = 0; cap < 4; cap++) {
		why[0] = '\0';
		rs = mps_parse_pids(reply, small, cap, &ns, why, sizeof(why));
		if (rs)
			check_why(why, sizeof(why));
		if (r == 0) {
			if (n <= cap) {
				if (rs || ns != n || memcmp(small, pids, n * sizeof(pid_t)))
					abort();
			} else if (rs != -E2BIG || ns != cap) {
				abort();
			}
		} else if (r == -E2BIG) {
			if (rs != -E2BIG)
				abort();
		} else if (rs == 0) {
			abort();
		}
	}
}

static void check_pct(const char *reply)
{
	char why[256];
	int first_err = 0, accepted = -1;

	for (uint32_t want = 0; want <= 101; want++) {
		int r;

		why[0] = '\0';
		r = mps_parse_pct(reply, want, why, sizeof(why));
		if (r && r != -ESRCH && r != -EINVAL && r != -EPROTO)
			abort();
		if (!r) {
			if (accepted >= 0)
				abort(); /* two percentages cannot both be what MPS has */
			accepted = (int)want;
			continue;
		}
		check_why(why, sizeof(why));
		/* refused for another percentage: kept; otherwise the same reason whatever was wanted */
		if (r == -EINVAL)
			continue;
		if (!first_err)
			first_err = r;
		else if (r != first_err)
			abort();
	}
	if (accepted >= 0 && first_err)
		abort(); /* a reply that is a percentage is one for every want */
	why[0] = '\0';
	if (mps_parse_pct(reply, 200, why, sizeof(why)) == 0)
		abort(); /* MPS has no such percentage */
	check_why(why, sizeof(why));
}

static void check_terminate(const char *reply)
{
	char why[256];
	int r;

	why[0] = '\0';
	r = mps_parse_terminate(reply, why, sizeof(why));
	if (r && r != -ESRCH && r != -EPROTO)
		abort();
	if (r)
		check_why(why, sizeof(why));
}

static void check_empty(const char *reply)
{
	char why[256];
	bool blank = true;
	int r;

	for (const char *c = reply; *c; c++)
		blank &= isspace((unsigned char)*c) != 0;
	why[0] = '\0';
	r = mps_parse_empty(reply, why, sizeof(why));
	if (r && r != -ESRCH && r != -EINVAL)
		abort();
	if (!r != blank)
		abort();
	if (r)
		check_why(why, sizeof(why));
	/* a why of one byte stays terminated */
	why[0] = 'z';
	if (mps_parse_empty(reply, why, 1) != r || (r && why[0]))
		abort();
}

static void check_size(const char *s)
{
	uint64_t b = 0x5a5a5a5a5a5a5a5aull, again;
	char out[32];
	int r = mps_parse_size(s, &b);

	if (r && r != -EPROTO)
		abort();
	if (r) {
		if (b != 0x5a5a5a5a5a5a5a5aull)
			abort();
		return;
	}
	/* mps_format_size rounds up in 64 bits: sizes within a MiB of 2^64 wrap (unreachable: mem_limit <= 1 PiB) */
	if (b > UINT64_MAX - (MIB - 1))
		return;
	mps_format_size(b, out, sizeof(out));
	if (strnlen(out, sizeof(out)) == sizeof(out) || mps_parse_size(out, &again))
		abort();
	if (again < b || again - b >= MIB || again % MIB)
		abort();
}

static bool normal(const char *s)
{
	if (!*s || *s == ' ' || s[strlen(s) - 1] == ' ' || strstr(s, "  ") || strchr(s, '\t'))
		return false;
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	}
	return true;
}

static void check_reply(int kind, const char *cmd, const char *reply)
{
	char why[256];
	int r;

	why[0] = '\0';
	r = mps_check_reply(kind, cmd, reply, why, sizeof(why));
	if (r > 0)
		abort();
	if (kind < MPS_GET_SERVER_LIST || kind > MPS_QUIT) {
		if (r != -EINVAL)
			abort();
	} else if (r && r != -ESRCH && r != -EINVAL && r != -EPROTO && r != -E2BIG) {
		abort();
	}
	if (r)
		check_why(why, sizeof(why));
}

/* A line of each kind, for the replies to a command that did not check. */
static const char *const sample[] = {
	[MPS_GET_SERVER_LIST] = "get_server_list",
	[MPS_GET_CLIENT_LIST] = "get_client_list 1016",
	[MPS_SET_DEFAULT_PCT] = "set_default_active_thread_percentage 50",
	[MPS_SET_PCT] = "set_active_thread_percentage 1016 50",
	[MPS_SET_DEFAULT_MEM] = "set_default_device_pinned_mem_limit 0 2G",
	[MPS_SET_MEM] = "set_device_pinned_mem_limit 1016 0 2G",
	[MPS_SET_DEFAULT_PRIORITY] = "set_default_client_priority 1",
	[MPS_TERMINATE_CLIENT] = "terminate_client 1016 4242",
	[MPS_QUIT] = "quit",
};

static void check_command(const char *line, size_t cap, const char *reply)
{
	char out[OOO_MPS_LINE_MAX + 8], again[OOO_MPS_LINE_MAX], why[256];
	int kind, k2;

	memset(out, 0x5a, sizeof(out));
	why[0] = '\0';
	kind = mps_check_command(line, out, cap, why, sizeof(why));
	if (kind < 0) {
		if (kind != -EINVAL)
			abort();
		check_why(why, sizeof(why));
		return;
	}
	if (kind < MPS_GET_SERVER_LIST || kind > MPS_QUIT)
		abort();
	if (strnlen(out, cap) >= cap || !normal(out) || strlen(out) > strlen(line))
		abort();
	if (strncmp(out, sample[kind], strcspn(sample[kind], " ")) || out[strcspn(sample[kind], " ")] > ' ')
		abort(); /* the kind is the command's name */
	k2 = mps_check_command(out, again, sizeof(again), why, sizeof(why));
	if (k2 != kind || strcmp(again, out))
		abort();
	check_reply(kind, out, reply);
	if (kind == MPS_SET_DEFAULT_PCT || kind == MPS_SET_PCT) {
		/* the percentage is the last word */
		uint32_t want = (uint32_t)strtoul(strrchr(out, ' ') + 1, NULL, 10);

		if (mps_check_reply(kind, out, reply, why, sizeof(why)) != mps_parse_pct(reply, want, why, sizeof(why)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[OOO_MPS_LINE_MAX + 1];
	const char *nl, *reply;
	size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1, l;

	memcpy(text, data, n);
	text[n] = '\0';

	check_pids(text);
	check_pct(text);
	check_terminate(text);
	check_empty(text);
	check_size(text);

	/* the first line (at most OOO_MPS_LINE_MAX bytes, so sometimes too long) is a command */
	nl = strchr(text, '\n');
	l = nl ? (size_t)(nl - text) : strlen(text);
	if (l > OOO_MPS_LINE_MAX)
		l = OOO_MPS_LINE_MAX;
	memcpy(line, text, l);
	line[l] = '\0';
	reply = nl ? nl + 1 : "";
	check_size(line);
	check_command(line, OOO_MPS_LINE_MAX, reply);
	/* into a smaller buffer: the last byte of the input says how small */
	if (size)
		check_command(line, 1 + data[size - 1] % OOO_MPS_LINE_MAX, reply);

	for (int kind = -1; kind <= MPS_QUIT + 1; kind++) {
		const char *cmd = kind >= MPS_GET_SERVER_LIST && kind <= MPS_QUIT ? sample[kind] : "quit";

		check_reply(kind, cmd, reply);
		check_reply(kind, cmd, text);
	}
	return 0;
}
