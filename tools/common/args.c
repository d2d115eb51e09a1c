/* SPDX-License-Identifier: MIT */
/* The tools' command-line number parsers: see args.h. */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int args_u64(const char *s, int base, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int saved = errno, e;

	if (!s || *s < '0' || *s > '9' || (base != 10 && base != 0))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	e = errno;
	errno = saved;
	if (*end)
		return -EINVAL;
	if (e == ERANGE || v < min || v > max)
		return -ERANGE;
	if (e)
		return -EINVAL;
	*out = v;
	return 0;
}

int args_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;
	int saved = errno, e;

	/* strtod skips leading blanks: a number must start where the argument does */
	if (!s || !*s || *s == ' ' || (*s >= '\t' && *s <= '\r'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	e = errno;
	errno = saved;
	if (end == s || *end || isnan(v))
		return -EINVAL;
	if (e == ERANGE || !isfinite(v) || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int args_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;
	int saved = errno, e;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	e = errno;
	errno = saved;
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
	if (e == ERANGE || v > (UINT64_MAX >> shift))
		return -ERANGE;
	v <<= shift;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

const char *args_why(int err)
{
	switch (err) {
	case -EINVAL: return "not a number";
	case -ERANGE: return "out of range";
	default: return "invalid";
	}
}
