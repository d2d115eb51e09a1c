/* SPDX-License-Identifier: MIT */
/*
 * A streaming JSON writer shared by oooctl and ooo-bench: just enough state
 * to place commas and indentation. Strings are escaped and made valid UTF-8
 * (invalid bytes become U+FFFD), numbers that are not finite become null.
 */
#ifndef OOO_TOOLS_JSON_H
#define OOO_TOOLS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Length of the valid UTF-8 sequence at p (2..4), or 0 if none starts there. */
size_t utf8_len(const unsigned char *p);

/* Write to f from now on (NULL: stdout, the default), starting a new document. */
void j_set_output(FILE *f);
/*
 * Compact output from now on: no blanks between tokens, so that each
 * top-level value is one line (JSON Lines). Off by default: indented.
 */
void j_set_compact(bool compact);

void j_putstr(const char *s);
void j_key(const char *key);     /* key NULL: an array element */
void j_open(const char *key, char c);
void j_close(char c);
void j_str(const char *key, const char *v); /* v NULL: null */
void j_u64(const char *key, uint64_t v);
void j_i64(const char *key, int64_t v);
void j_bool(const char *key, bool v);
void j_null(const char *key);
void j_num(const char *key, double v, int prec);

#define j_obj(key) j_open(key, '{')
#define j_obj_end() j_close('}')
#define j_arr(key) j_open(key, '[')
#define j_arr_end() j_close(']')

#endif
