/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-util.h: what the benchmark programs share: a seeded pseudo-random
 * stream (splitmix64; each program seeds rng_state itself, so runs repeat)
 * and a monotonic clock in nanoseconds. Each benchmark is one program of one
 * file, so the state is one per program.
 */
#ifndef GPUAAS_BENCH_UTIL_H
#define GPUAAS_BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

static uint64_t rng_state;

static inline uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static inline int64_t rng_range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next() % (uint64_t)(hi - lo + 1));
}

static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
