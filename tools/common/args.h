/* SPDX-License-Identifier: MIT */
/*
 * The command-line number parsers of oooctl, ooo-run, ooo-bench and
 * ooo-jit, so that a number, a size or a time means the same to each.
 * Pure: no I/O, no allocation, errno left as it was.
 *
 * Each returns 0 with *out set, or, with *out untouched:
 *   -EINVAL  s is not a number of the kind asked (empty, a sign, blanks,
 *            anything after it, an unknown suffix);
 *   -ERANGE  it is one, but outside [min, max] or too large to hold.
 * args_why() words the two for "TOOL: --opt: ..." messages; the tools'
 * own messages also name the option and its range.
 *
 * Times are plain numbers in the unit their option names (--interval MS,
 * --seconds S): integers with args_u64(), fractions with args_double().
 */
#ifndef OOO_TOOLS_COMMON_ARGS_H
#define OOO_TOOLS_COMMON_ARGS_H

#include <stdint.h>

/*
 * An unsigned integer in [min, max]. base 10: decimal digits only. base 0:
 * also 0x hexadecimal and 0-prefixed octal (strtoull's rules), for values
 * that are bit patterns (ooo-bench's kernel parameters). It must start
 * with a digit: no sign, no blanks.
 */
int args_u64(const char *s, int base, uint64_t min, uint64_t max, uint64_t *out);

/* A finite real number in [min, max], in strtod()'s syntax, nothing before or after it. */
int args_double(const char *s, double min, double max, double *out);

/*
 * A size in bytes in [min, max]: decimal digits, then optionally K, M, G
 * or T (either case; powers of 1024), then optionally B or iB ("2G",
 * "512MiB", "64KB", "4096", "4096B").
 */
int args_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* "not a number" for -EINVAL, "out of range" for -ERANGE, "invalid" otherwise: static text. */
const char *args_why(int err);

#endif
