/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meter-int.h: what the files of src/meter share and nobody else sees: the
 * one exact rounding routine every money figure goes through.
 */
#ifndef GPUAAS_METER_INT_H
#define GPUAAS_METER_INT_H

#include <stdint.h>

typedef unsigned __int128 meter_u128;

/*
 * Rounds q * p / d to a multiple of step, half-even (ties go to the even
 * multiple), exactly: q is split as a * d + b so that no product exceeds
 * 128 bits. Needs d >= 1, step >= 1, d * p < 2^128 and step * d < 2^126
 * (rating: d = 3.6e15, p <= 1e19, step <= 1e6).
 * Returns 0 with *ret set, or ERR_TOO_LARGE when the result exceeds INT64_MAX.
 */
int meter_round_mul_div(meter_u128 q, uint64_t p, uint64_t d, uint64_t step, int64_t *ret);

#endif
