/* SPDX-License-Identifier: Apache-2.0 */
/* test_base_metrics.c: the Prometheus text helpers: escaping, histograms, units. */
#include "base/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/metrics.h"

static void test_samples_escape_label_values(void **state)
{
    struct buf b;
    (void)state;
    buf_init(&b, 4096);
    assert_int_equal(metrics_header(&b, "x_total", "counter", "things."), 0);
    assert_int_equal(
        metrics_sample(&b, "x_total", (const char *[]){"a", "q\"b\\c\nd", "b", "", NULL}, 42), 0);
    assert_int_equal(metrics_sample(&b, "y", NULL, -3), 0);
    assert_int_equal(metrics_sample_milli(&b, "z", NULL, 1500), 0);
    assert_int_equal(metrics_sample_milli(&b, "z", NULL, -1000), 0);
    assert_string_equal(b.data, "# HELP x_total things.\n# TYPE x_total counter\n"
                                "x_total{a=\"q\\\"b\\\\c\\nd\",b=\"\"} 42\n"
                                "y -3\n"
                                "z 1.500\n"
                                "z -1.000\n");
    buf_release(&b);
}

static void test_histogram_is_cumulative_in_seconds(void **state)
{
    static const int64_t bounds[] = {1000, 250000, 2000000};
    struct metrics_histogram h = {0};
    struct buf b;
    (void)state;
    metrics_histogram_init(&h, bounds, 3);
    metrics_histogram_observe(&h, 1000);    /* on the bound: counts in it */
    metrics_histogram_observe(&h, 1001);    /* next bucket */
    metrics_histogram_observe(&h, 3000000); /* +Inf */
    metrics_histogram_observe(&h, -5);      /* as 0 */
    buf_init(&b, 4096);
    assert_int_equal(
        metrics_histogram_write(&b, "lat_seconds", (const char *[]){"m", "GET", NULL}, &h), 0);
    assert_string_equal(b.data, "lat_seconds_bucket{m=\"GET\",le=\"0.001\"} 2\n"
                                "lat_seconds_bucket{m=\"GET\",le=\"0.25\"} 3\n"
                                "lat_seconds_bucket{m=\"GET\",le=\"2.0\"} 3\n"
                                "lat_seconds_bucket{m=\"GET\",le=\"+Inf\"} 4\n"
                                "lat_seconds_sum{m=\"GET\"} 3.002001\n"
                                "lat_seconds_count{m=\"GET\"} 4\n");
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_escape_label_values),
        cmocka_unit_test(test_histogram_is_cumulative_in_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
