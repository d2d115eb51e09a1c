/* SPDX-License-Identifier: MIT */
/* Logging for oood: stderr in the foreground, syslog otherwise. */
#ifndef OOO_LOG_H
#define OOO_LOG_H

#include <stdbool.h>
#include <syslog.h>

#include "../proto/wire.h" /* wire_strerror */

void log_open(bool foreground, int level);
void log_set_level(int level); /* LOG_ERR .. LOG_DEBUG */
int log_get_level(void);
void log_msg(int level, const char *func, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * For messages a peer can cause at will (one per connection, refusal or
 * protocol error): at most LOG_BURST a second, then a count of what was
 * dropped, so a hostile tenant cannot flood the journal or stall the loop.
 */
#define LOG_BURST 50
void log_msg_limited(int level, const char *func, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define log_peer(...) log_msg_limited(LOG_INFO, __func__, __VA_ARGS__)

#define log_err(...) log_msg(LOG_ERR, __func__, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __func__, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __func__, __VA_ARGS__)
#define log_debug(...)                                                                                     \
	do {                                                                                               \
		if (log_get_level() >= LOG_DEBUG)                                                          \
			log_msg(LOG_DEBUG, __func__, __VA_ARGS__);                                         \
	} while (0)

/*
 * Log at `level` and return r (a negative errno or OOO_E code), so callers
 * log once and return in one step. A status from oood's own functions may
 * be an OOO_E code, which strerror() prints as "Unknown error 1006": format
 * such statuses with wire_strerror(r), never strerror(-r).
 */
#define log_errno(level, r, fmt, ...) (log_msg(level, __func__, fmt ": %s", ##__VA_ARGS__, wire_strerror(r)), (r))

#endif
