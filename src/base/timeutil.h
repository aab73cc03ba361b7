/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timeutil.h: wall-clock and monotonic reads, saturating millisecond sums,
 * and RFC 3339 formatting/parsing in UTC. Pure modules (scheduler, meter)
 * never call time_now_*: time is their input.
 */
#ifndef GPUAAS_TIMEUTIL_H
#define GPUAAS_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

int64_t time_now_ms(void);  /* CLOCK_REALTIME, milliseconds since the epoch */
int64_t time_now_s(void);   /* CLOCK_REALTIME, seconds since the epoch */
int64_t time_mono_ns(void); /* CLOCK_MONOTONIC, for durations */
int64_t time_mono_ms(void); /* CLOCK_MONOTONIC in milliseconds, for deadlines */

/*
 * t + d in milliseconds, saturating at INT64_MAX (which callers use for
 * "never"): a deadline that does not fit is never reached, rather than
 * wrapping into the past. A d of 0 or less adds nothing.
 */
int64_t time_add_ms(int64_t t, int64_t d);

/* "2026-11-30T15:49:47Z"; out needs 21 bytes or more. */
void time_format_rfc3339(int64_t epoch_s, char *out, size_t size);
/* "2026-11-30T15:49:47.123Z"; out needs 25 bytes or more. */
void time_format_rfc3339_ms(int64_t epoch_ms, char *out, size_t size);
/*
 * Parses "YYYY-MM-DDTHH:MM:SS[.fff](Z|+HH:MM|-HH:MM)" into epoch seconds
 * (fractions are dropped). Returns 0 or ERR_INVALID.
 */
int time_parse_rfc3339(const char *s, int64_t *ret_epoch_s);

#endif
