/* SPDX-License-Identifier: MIT */
/* A small streaming JSON writer for the tools' --json output. */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

size_t utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	uint32_t cp;
	size_t n;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0; /* also stops at the NUL */
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * A streaming writer: enough state to place commas and indentation. Output
 * is indented for people; every value is valid JSON for machines.
 */
static struct {
	int depth;
	bool need_comma;
} J;

/* Strings from the daemon are arbitrary bytes; JSON must be valid UTF-8. */
void j_putstr(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	while (*p) {
		size_t n;

		if (*p == '"' || *p == '\\') {
			putchar('\\');
			putchar(*p++);
		} else if (*p < 0x20 || *p == 0x7f) {
			printf("\\u%04x", *p++);
		} else if (*p < 0x80) {
			putchar(*p++);
		} else if ((n = utf8_len(p))) {
			fwrite(p, 1, n, stdout);
			p += n;
		} else {
			fputs("\\ufffd", stdout);
			p++;
		}
	}
	putchar('"');
}

void j_key(const char *key)
{
	if (J.need_comma)
		putchar(',');
	if (J.depth) {
		putchar('\n');
		printf("%*s", 2 * J.depth, "");
	}
	if (key) {
		j_putstr(key);
		fputs(": ", stdout);
	}
	J.need_comma = true;
}

void j_open(const char *key, char c)
{
	j_key(key);
	putchar(c);
	J.depth++;
	J.need_comma = false;
}

void j_close(char c)
{
	J.depth--;
	if (J.need_comma) { /* not empty */
		putchar('\n');
		printf("%*s", 2 * J.depth, "");
	}
	putchar(c);
	J.need_comma = true;
	if (!J.depth) {
		putchar('\n');
		J.need_comma = false;
	}
}


void j_str(const char *key, const char *v)
{
	j_key(key);
	if (v)
		j_putstr(v);
	else
		fputs("null", stdout);
}

void j_u64(const char *key, uint64_t v)
{
	j_key(key);
	printf("%" PRIu64, v);
}

void j_i64(const char *key, int64_t v)
{
	j_key(key);
	printf("%" PRId64, v);
}

void j_bool(const char *key, bool v)
{
	j_key(key);
	fputs(v ? "true" : "false", stdout);
}

void j_null(const char *key)
{
	j_key(key);
	fputs("null", stdout);
}

void j_num(const char *key, double v, int prec)
{
	j_key(key);
	if (isfinite(v))
		printf("%.*f", prec, v);
	else
		fputs("null", stdout);
}

