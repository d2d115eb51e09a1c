/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
