/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c: Prometheus text exposition helpers (metrics.h). */
#include "base/common.h"

#include "base/buf.h"
#include "base/err.h"
#include "base/metrics.h"

void metrics_histogram_init(struct metrics_histogram *h, const int64_t *bounds_us, size_t n)
{
    assert(n <= METRICS_MAX_BUCKETS);
    h->bounds_us = bounds_us;
    h->n_bounds = n;
}

void metrics_histogram_observe(struct metrics_histogram *h, int64_t us)
{
    size_t i = 0;
    if (us < 0)
        us = 0;
    while (i < h->n_bounds && us > h->bounds_us[i])
        i++;
    atomic_fetch_add_explicit(&h->counts[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, (uint_fast64_t)us, memory_order_relaxed);
}

int metrics_header(struct buf *b, const char *name, const char *type, const char *help)
{
    return buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int put_labels(struct buf *b, const char *const *labels, const char *extra_name,
                      const char *extra_value)
{
    bool any = false;
    int rc = 0;
    for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2) {
        rc |= buf_printf(b, "%s%s=\"", any ? "," : "{", labels[i]);
        for (const char *p = labels[i + 1]; *p; p++) {
            if (*p == '\\' || *p == '"')
                rc |= buf_printf(b, "\\%c", *p);
            else if (*p == '\n')
                rc |= buf_puts(b, "\\n");
            else
                rc |= buf_append(b, p, 1);
        }
        rc |= buf_puts(b, "\"");
        any = true;
    }
    if (extra_name) {
        rc |= buf_printf(b, "%s%s=\"%s\"", any ? "," : "{", extra_name, extra_value);
        any = true;
    }
    if (any)
        rc |= buf_puts(b, "}");
    return rc ? ERR_TOO_LARGE : 0;
}

int metrics_sample(struct buf *b, const char *name, const char *const *labels, int64_t value)
{
    int rc = buf_puts(b, name);
    rc |= put_labels(b, labels, NULL, NULL);
    rc |= buf_printf(b, " %" PRId64 "\n", value);
    return rc ? ERR_TOO_LARGE : 0;
}

int metrics_sample_milli(struct buf *b, const char *name, const char *const *labels,
                         int64_t thousandths)
{
    int64_t a = thousandths < 0 ? -thousandths : thousandths;
    int rc = buf_puts(b, name);
    rc |= put_labels(b, labels, NULL, NULL);
    rc |= buf_printf(b, " %s%" PRId64 ".%03" PRId64 "\n", thousandths < 0 ? "-" : "", a / 1000,
                     a % 1000);
    return rc ? ERR_TOO_LARGE : 0;
}

/* Microseconds as seconds, exactly: 2500 -> "0.0025". */
static void seconds(int64_t us, char out[32])
{
    int n = snprintf(out, 32, "%" PRId64 ".%06" PRId64, us / 1000000, us % 1000000);
    while (n > 2 && out[n - 1] == '0' && out[n - 2] != '.')
        out[--n] = '\0';
}

int metrics_histogram_write(struct buf *b, const char *name, const char *const *labels,
                            const struct metrics_histogram *h)
{
    uint64_t cum = 0;
    char le[32];
    int rc = 0;

    for (size_t i = 0; i <= h->n_bounds; i++) {
        cum += atomic_load_explicit(&h->counts[i], memory_order_relaxed);
        if (i < h->n_bounds)
            seconds(h->bounds_us[i], le);
        else
            snprintf(le, sizeof(le), "+Inf");
        rc |= buf_printf(b, "%s_bucket", name);
        rc |= put_labels(b, labels, "le", le);
        rc |= buf_printf(b, " %" PRIu64 "\n", cum);
    }
    seconds((int64_t)atomic_load_explicit(&h->sum_us, memory_order_relaxed), le);
    rc |= buf_printf(b, "%s_sum", name);
    rc |= put_labels(b, labels, NULL, NULL);
    rc |= buf_printf(b, " %s\n%s_count", le, name);
    rc |= put_labels(b, labels, NULL, NULL);
    rc |= buf_printf(b, " %" PRIu64 "\n", cum);
    return rc ? ERR_TOO_LARGE : 0;
}
