/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static bool log_foreground = true;
static int log_level = LOG_INFO;

void log_open(bool foreground, int level)
{
	log_foreground = foreground;
	log_level = level;
	if (!foreground)
		openlog("oood", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

void log_msg_limited(int level, const char *func, const char *fmt, ...)
{
	static time_t window;
	static unsigned used, dropped;
	struct timespec ts;
	char line[1024];
	va_list ap;

	if (level > log_level)
		return;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	if (ts.tv_sec != window) {
		if (dropped)
			log_msg(LOG_WARNING, "log", "%u messages about peers suppressed in the last second(s)",
				dropped);
		window = ts.tv_sec;
		used = dropped = 0;
	}
	if (used >= LOG_BURST) {
		dropped++;
		return;
	}
	used++;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_msg(level, func, "%s", line);
}

void log_msg(int level, const char *func, const char *fmt, ...)
{
	static const char *const names[] = { [LOG_ERR] = "error", [LOG_WARNING] = "warning",
					     [LOG_NOTICE] = "notice", [LOG_INFO] = "info",
					     [LOG_DEBUG] = "debug" };
	char line[1024];
	va_list ap;
	int saved = errno;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_foreground)
		fprintf(stderr, "oood: %s: %s: %s\n",
			level >= 0 && level <= LOG_DEBUG && names[level] ? names[level] : "log", func, line);
	else
		syslog(level, "%s: %s", func, line);
	errno = saved;
}
