/* SPDX-License-Identifier: MIT */
/* The policy's scalar values: numbers, sizes, booleans, log levels, listen addresses (see values.h). */
#include "values.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "policy.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Decimal digits only: strtoull alone would take signs, spaces and "0x". */
enum num_rc policy_parse_num(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return NUM_NAN;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return NUM_JUNK;
	if (errno == ERANGE)
		return NUM_RANGE;
	*out = v;
	return NUM_OK;
}

int policy_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || !out || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	default: break;
	}
	if (shift && end[0] == 'i' && end[1] == 'B')
		end += 2;
	else if (end[0] == 'B')
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

int policy_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "yes", "true", "1", "on" };
	static const char *const no[] = { "no", "false", "0", "off" };
	size_t i;

	for (i = 0; i < NELEM(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

int policy_parse_log_level(const char *s, int *out)
{
	static const struct {
		const char *name;
		int level;
	} levels[] = {
		{ "err", POLICY_LOG_ERR },
		{ "warn", POLICY_LOG_WARN },
		{ "info", POLICY_LOG_INFO },
		{ "debug", POLICY_LOG_DEBUG },
	};
	size_t i;

	for (i = 0; i < NELEM(levels); i++) {
		if (!strcasecmp(s, levels[i].name)) {
			*out = levels[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- [metrics] listen ---------------------------------------------------- */

int policy_parse_listen(const char *s, struct policy_metrics *m, char *why, size_t cap)
{
	char host[INET6_ADDRSTRLEN];
	const char *port = s, *h = "127.0.0.1";
	size_t hlen = strlen(h);
	uint64_t n = 0;

	memset(m, 0, sizeof(*m));
	if (s[0] == '[') {
		const char *e = strchr(s, ']');

		if (!e || e[1] != ':') {
			snprintf(why, cap, "an IPv6 address goes in brackets before ':PORT', as [::1]:9400");
			return -EINVAL;
		}
		h = s + 1;
		hlen = (size_t)(e - h);
		port = e + 2;
		m->family = AF_INET6;
	} else if (strchr(s, ':')) {
		const char *e = strrchr(s, ':');

		if (e != s) {
			h = s;
			hlen = (size_t)(e - s);
		}
		port = e + 1;
		m->family = AF_INET;
	} else {
		m->family = AF_INET;
	}
	if (hlen && hlen < sizeof(host)) {
		memcpy(host, h, hlen);
		host[hlen] = '\0';
	}
	if (!hlen || hlen >= sizeof(host) || inet_pton(m->family, host, m->addr) != 1) {
		if (m->family == AF_INET6)
			snprintf(why, cap, "the host in brackets must be an IPv6 address");
		else
			snprintf(why, cap, "the host must be an IPv4 address (IPv6 in brackets, no host names), "
					   "or none for 127.0.0.1");
		return -EINVAL;
	}
	if (policy_parse_num(port, &n) != NUM_OK || n < 1 || n > 65535) {
		snprintf(why, cap, "the port must be 1..65535");
		return -EINVAL;
	}
	m->port = (uint16_t)n;
	if (!inet_ntop(m->family, m->addr, host, sizeof(host)))
		return -EINVAL; /* cannot happen: the address just parsed */
	snprintf(m->listen, sizeof(m->listen), m->family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, (unsigned)m->port);
	m->enabled = true;
	return 0;
}
