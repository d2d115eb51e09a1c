/* SPDX-License-Identifier: MIT */
/*
 * MPS control text, pure (mps_text.c): command formatting and the parsing
 * of what nvidia-cuda-mps-control answers. The control program's exit
 * status is 0 whatever it thought of a command, so every reply is parsed
 * here; the unit tests and the fuzzer drive these functions.
 */
#ifndef OOO_MPS_TEXT_H
#define OOO_MPS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ooo/proto.h>

#define MPS_MAX_PIDS 256u /* pids in one list reply */

/* printf into why (when why and cap), control characters and non-ASCII made spaces. */
void mps_why(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A byte count as MPS writes limits: "2G", "1536M"; rounded up to MiB. */
void mps_format_size(uint64_t bytes, char *out, size_t cap);
/* Parse what MPS prints for a limit ("2G", "512M", "0"). Returns 0 or -EPROTO. */
int mps_parse_size(const char *s, uint64_t *bytes);

/*
 * A reply that must be a list of pids, one per line (get_server_list,
 * get_client_list). Returns 0 with *n pids stored (at most cap), -ESRCH for
 * "Server N not found", -E2BIG for more than cap, or -EPROTO for anything
 * else; why says what.
 */
int mps_parse_pids(const char *reply, pid_t *pids, size_t cap, size_t *n, char *why, size_t wcap);
/* set_/get_..._active_thread_percentage: the echoed value must be `want` (MPS ignores what it rejects). */
int mps_parse_pct(const char *reply, uint32_t want, char *why, size_t wcap);
/* terminate_client: "0" is done; "1" after a reason is -ESRCH. */
int mps_parse_terminate(const char *reply, char *why, size_t wcap);
/* Commands that print nothing when they worked (pinned memory limits, client priority, quit). */
int mps_parse_empty(const char *reply, char *why, size_t wcap);

/*
 * Check an operator's command line (oooctl mps run) against the supported
 * grammar and write it normalised into out. Returns the command's kind
 * (enum mps_cmd) or -EINVAL with why filled.
 */
enum mps_cmd {
	MPS_GET_SERVER_LIST = 1,
	MPS_GET_CLIENT_LIST,
	MPS_SET_DEFAULT_PCT,
	MPS_SET_PCT,
	MPS_SET_DEFAULT_MEM,
	MPS_SET_MEM,
	MPS_SET_DEFAULT_PRIORITY,
	MPS_TERMINATE_CLIENT,
	MPS_QUIT,
};
int mps_check_command(const char *line, char *out, size_t cap, char *why, size_t wcap);
/* Check a reply to a command of that kind. Returns 0, or a negative errno with why filled. */
int mps_check_reply(int kind, const char *cmd, const char *reply, char *why, size_t wcap);

#endif
