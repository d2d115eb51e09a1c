/* SPDX-License-Identifier: MIT */
/*
 * The policy's scalar values, pure: what oood.conf's numbers, sizes,
 * booleans, log levels and [metrics] listen addresses may be. Used by the
 * policy parser and the tools that take the same values.
 */
#ifndef OOO_POLICY_VALUES_H
#define OOO_POLICY_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct policy_metrics;

enum num_rc { NUM_OK, NUM_NAN, NUM_JUNK, NUM_RANGE };

/* Decimal digits only into *out: NUM_NAN (no digit first), NUM_JUNK (trailing text), NUM_RANGE (overflow). */
enum num_rc policy_parse_num(const char *s, uint64_t *out);
/* yes/true/1/on or no/false/0/off, any case: 0, or -EINVAL. */
int policy_parse_bool(const char *s, bool *out);
/* err, warn, info, debug (any case) into a POLICY_LOG_* level: 0, or -EINVAL. */
int policy_parse_log_level(const char *s, int *out);

#endif
