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
 * is indented for people, or compact (one line per document); every value
 * is valid JSON for machines.
 */
static struct {
	int depth;
	bool need_comma;
	bool compact;
	FILE *out; /* NULL: stdout */
} J;

#define OUT (J.out ? J.out : stdout)

void j_set_output(FILE *f)
{
	J.out = f;
	J.depth = 0;
	J.need_comma = false;
}

void j_set_compact(bool compact)
{
	J.compact = compact;
}

/* Strings from the daemon are arbitrary bytes; JSON must be valid UTF-8. */
void j_putstr(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', OUT);
	while (*p) {
		size_t n;

		if (*p == '"' || *p == '\\') {
			fputc('\\', OUT);
			fputc(*p++, OUT);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(OUT, "\\u%04x", *p++);
		} else if (*p < 0x80) {
			fputc(*p++, OUT);
		} else if ((n = utf8_len(p))) {
			fwrite(p, 1, n, OUT);
			p += n;
		} else {
			fputs("\\ufffd", OUT);
			p++;
		}
	}
	fputc('"', OUT);
}

void j_key(const char *key)
{
	if (J.need_comma)
		fputc(',', OUT);
	if (J.depth && !J.compact) {
		fputc('\n', OUT);
		fprintf(OUT, "%*s", 2 * J.depth, "");
	}
	if (key) {
		j_putstr(key);
		fputs(J.compact ? ":" : ": ", OUT);
	}
	J.need_comma = true;
}

void j_open(const char *key, char c)
{
	j_key(key);
	fputc(c, OUT);
	J.depth++;
	J.need_comma = false;
}

void j_close(char c)
{
	J.depth--;
	if (J.need_comma && !J.compact) { /* not empty */
		fputc('\n', OUT);
		fprintf(OUT, "%*s", 2 * J.depth, "");
	}
	fputc(c, OUT);
	J.need_comma = true;
	if (!J.depth) {
		fputc('\n', OUT);
		J.need_comma = false;
	}
}


void j_str(const char *key, const char *v)
{
	j_key(key);
	if (v)
		j_putstr(v);
	else
		fputs("null", OUT);
}

void j_u64(const char *key, uint64_t v)
{
	j_key(key);
	fprintf(OUT, "%" PRIu64, v);
}

void j_i64(const char *key, int64_t v)
{
	j_key(key);
	fprintf(OUT, "%" PRId64, v);
}

void j_bool(const char *key, bool v)
{
	j_key(key);
	fputs(v ? "true" : "false", OUT);
}

void j_null(const char *key)
{
	j_key(key);
	fputs("null", OUT);
}

void j_num(const char *key, double v, int prec)
{
	j_key(key);
	if (isfinite(v))
		fprintf(OUT, "%.*f", prec, v);
	else
		fputs("null", OUT);
}

