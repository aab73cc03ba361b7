/* SPDX-License-Identifier: Apache-2.0 */
/* parse.h: checked number parsing (no atoi, no silent overflow). */
#ifndef GPUAAS_PARSE_H
#define GPUAAS_PARSE_H

#include <stdint.h>

/*
 * Parses a whole decimal string (optional sign, no spaces, no trailing bytes)
 * within [min, max]. Returns 0, or ERR_INVALID (not a number) or
 * ERR_TOO_LARGE (out of range); *ret untouched on failure.
 */
int parse_int64(const char *s, int64_t min, int64_t max, int64_t *ret);

/*
 * Parses a duration such as "90", "90s", "15m", "2h", "7d" into seconds.
 * Returns 0 or ERR_INVALID.
 */
int parse_duration_s(const char *s, int64_t *ret_seconds);

#endif
