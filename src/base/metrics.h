/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h: the few pieces of the Prometheus text exposition format
 * (version 0.0.4) that gpuaasd's /metrics needs: HELP/TYPE headers, samples
 * with escaped label values, and histograms with fixed buckets that threads
 * observe into without a lock. Durations are observed in microseconds and
 * exposed in seconds, as Prometheus names them (_seconds).
 */
#ifndef GPUAAS_METRICS_H
#define GPUAAS_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct buf;

#define METRICS_MAX_BUCKETS 16

struct metrics_histogram {
    const int64_t *bounds_us; /* upper bounds, ascending, in microseconds */
    size_t n_bounds;          /* <= METRICS_MAX_BUCKETS */
    atomic_uint_fast64_t
        counts[METRICS_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last: +Inf */
    atomic_uint_fast64_t sum_us;
};

/* Sets the buckets of a zeroed histogram (bounds must outlive it). */
void metrics_histogram_init(struct metrics_histogram *h, const int64_t *bounds_us, size_t n);
/* Records one observation; negative values count as 0. Thread-safe. */
void metrics_histogram_observe(struct metrics_histogram *h, int64_t us);

/* "# HELP name help\n# TYPE name type\n". */
int metrics_header(struct buf *b, const char *name, const char *type, const char *help);
/*
 * One sample: name{labels} value. labels is NULL or pairs of name, value
 * strings ending with NULL; values are escaped (\\, \", \n).
 */
int metrics_sample(struct buf *b, const char *name, const char *const *labels, int64_t value);
/* As metrics_sample, for a value in thousandths: 1500 -> "1.5" (milli-GPU as GPUs). */
int metrics_sample_milli(struct buf *b, const char *name, const char *const *labels,
                         int64_t thousandths);
/* The _bucket (cumulative, le in seconds), _sum and _count lines of a histogram. */
int metrics_histogram_write(struct buf *b, const char *name, const char *const *labels,
                            const struct metrics_histogram *h);

#endif
