/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The telemetry store (src/inventory/telemetry.c): exact memory per GPU,
 * raw / minute / hour resolution chosen by the range, roll-up values worked
 * out by hand, efficiency, bounded history (old buckets fall off, gaps
 * clear), group queries, missed scrapes leading to "down" while the data
 * stays, and the limits (out of order, max GPUs).
 */
#include "base/common.h"

#include <math.h>
#include <setjmp.h>
#include <cmocka.h>

#include "base/err.h"
#include "inventory/inventory.h"

#define SEC INT64_C(1000)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define T0 (INT64_C(1764460800000)) /* 2025-11-30 00:00 UTC, a whole hour */

static struct inv_reading reading(const char *uuid, double act, double mem, double power)
{
    struct inv_reading r;
    inv_reading_clear(&r);
    snprintf(r.uuid, sizeof(r.uuid), "%s", uuid);
    r.gr_active = act;
    r.fb_used_mib = mem;
    r.power_w = power;
    r.temp_c = 50;
    return r;
}

static void test_sizes(void **state)
{
    struct inv_tstore_config cfg;
    struct inv_tstore *ts;
    size_t empty, per;
    (void)state;

    assert_int_equal(sizeof(struct inv_raw), 24);
    assert_int_equal(sizeof(struct inv_rollup), 28);
    inv_tstore_config_default(&cfg);
    per = inv_tstore_bytes_per_gpu(&cfg);
    /* the rings dominate: 360 x 24 + (1440 + 2160) x 28 plus a small header */
    assert_true(per >= 360 * 24 + 3600 * 28 && per < 360 * 24 + 3600 * 28 + 512);
    assert_int_equal(per, inv_tstore_bytes_per_gpu(NULL));

    cfg.max_gpus = 100;
    ts = inv_tstore_new(&cfg);
    empty = inv_tstore_bytes(ts);
    assert_int_equal(empty, inv_tstore_bytes(ts));
    for (int i = 0; i < 10; i++) {
        char key[32];
        struct inv_reading r = reading("GPU-x", 0.5, 1, 1);
        snprintf(key, sizeof(key), "GPU-%d", i);
        assert_int_equal(inv_tstore_ingest(ts, key, T0, &r, true), 0);
    }
    /* exactly: every series costs per, nothing else grows */
    assert_int_equal(inv_tstore_bytes(ts) - empty, 10 * per);
    for (int k = 1; k < 50; k++) {
        struct inv_reading r = reading("GPU-x", 0.5, 1, 1);
        assert_int_equal(inv_tstore_ingest(ts, "GPU-3", T0 + k * 10 * SEC, &r, true), 0);
    }
    assert_int_equal(inv_tstore_bytes(ts) - empty, 10 * per);
    assert_int_equal(inv_tstore_count(ts), 10);
    inv_tstore_free(ts);
}

/* Two hours of one GPU at 10 s: busy (0.9) the first hour, idle (0.0) the second. */
static struct inv_tstore *two_hours(void)
{
    struct inv_tstore *ts = inv_tstore_new(NULL);
    for (int64_t t = T0; t < T0 + 2 * HOUR; t += 10 * SEC) {
        bool first = t < T0 + HOUR;
        struct inv_reading r = reading("GPU-a", first ? 0.9 : 0.0, first ? 1000 : 500, 300);
        assert_int_equal(inv_tstore_ingest(ts, "GPU-a", t, &r, true), 0);
    }
    return ts;
}

static void test_resolutions(void **state)
{
    struct inv_tstore *ts = two_hours();
    struct inv_series_query q;
    const char *keys[] = {"GPU-a"};
    int64_t newest = T0 + 2 * HOUR - 10 * SEC;
    (void)state;

    /* the last 30 minutes: raw, one point per sample, all idle */
    assert_int_equal(inv_tstore_query(ts, keys, 1, newest - 30 * MIN + 1, newest + 1, &q), 180);
    assert_int_equal(q.resolution, INV_RES_RAW);
    assert_true(q.points[0].act_avg == 0.0);
    assert_true(q.points[0].mem_mib == 500);
    assert_int_equal(q.alloc_ms, 180 * 10 * SEC);
    assert_int_equal(q.busy_ms, 0);
    assert_true(inv_efficiency(&q) == 0.0);
    free(q.points);

    /* the whole two hours: beyond the raw hour, so minutes */
    assert_int_equal(inv_tstore_query(ts, keys, 1, T0, T0 + 2 * HOUR, &q), 120);
    assert_int_equal(q.resolution, INV_RES_MINUTE);
    assert_int_equal(q.points[0].t_ms, T0);
    assert_int_equal(q.points[0].n, 6);
    assert_true(fabs(q.points[0].act_avg - 0.9) < 1e-9);
    assert_true(q.points[0].act_min == 0.9 && q.points[0].act_max == 0.9);
    assert_true(q.points[0].mem_mib == 1000);
    assert_true(q.points[0].power_w == 300);
    assert_int_equal(q.points[0].busy_ms, 60 * SEC);
    assert_int_equal(q.points[119].busy_ms, 0);
    assert_int_equal(q.busy_ms, HOUR);
    assert_int_equal(q.alloc_ms, 2 * HOUR);
    assert_true(inv_efficiency(&q) == 0.5);
    free(q.points);

    /* hour roll-ups hold the same */
    struct inv_tstore_config cfg;
    inv_tstore_config_default(&cfg);
    assert_true(T0 + 2 * HOUR - (int64_t)cfg.minute_cap * MIN < T0);
    inv_tstore_free(ts);
}

static void test_hours_and_bounds(void **state)
{
    struct inv_tstore_config cfg;
    struct inv_tstore *ts;
    struct inv_series_query q;
    const char *keys[] = {"GPU-a"};
    (void)state;

    inv_tstore_config_default(&cfg);
    cfg.raw_cap = 6;
    cfg.minute_cap = 10;
    cfg.hour_cap = 5;
    ts = inv_tstore_new(&cfg);
    /* 8 hours at 10 s, allocated throughout, busy in odd hours */
    for (int64_t t = T0; t < T0 + 8 * HOUR; t += 10 * SEC) {
        int64_t h = (t - T0) / HOUR;
        struct inv_reading r = reading("GPU-a", h % 2 ? 0.5 : 0.01, 10, 100);
        assert_int_equal(inv_tstore_ingest(ts, "GPU-a", t, &r, true), 0);
    }
    /* from the start: only the 5 newest hours remain */
    assert_int_equal(inv_tstore_query(ts, keys, 1, T0, T0 + 8 * HOUR, &q), 5);
    assert_int_equal(q.resolution, INV_RES_HOUR);
    assert_int_equal(q.points[0].t_ms, T0 + 3 * HOUR);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(q.points[i].n, 360);
        assert_int_equal(q.points[i].alloc_ms, HOUR);
        assert_int_equal(q.points[i].busy_ms, (3 + i) % 2 ? HOUR : 0);
    }
    assert_true(fabs(inv_efficiency(&q) - 3.0 / 5.0) < 1e-12);
    free(q.points);
    /* the last 5 minutes: minutes (raw holds one minute only) */
    assert_int_equal(inv_tstore_query(ts, keys, 1, T0 + 8 * HOUR - 5 * MIN, T0 + 8 * HOUR, &q), 5);
    assert_int_equal(q.resolution, INV_RES_MINUTE);
    free(q.points);
    /* a gap of a day: the minute ring is cleared, no stale bucket shows */
    struct inv_reading r = reading("GPU-a", 0.2, 10, 100);
    assert_int_equal(inv_tstore_ingest(ts, "GPU-a", T0 + 32 * HOUR, &r, true), 0);
    assert_int_equal(inv_tstore_query(ts, keys, 1, T0 + 32 * HOUR - 9 * MIN, T0 + 33 * HOUR, &q),
                     1);
    assert_int_equal(q.points[0].t_ms, T0 + 32 * HOUR);
    free(q.points);
    /* out of order and duplicates are refused; bad ranges too */
    assert_int_equal(inv_tstore_ingest(ts, "GPU-a", T0 + 32 * HOUR, &r, true), ERR_CONFLICT);
    assert_int_equal(inv_tstore_ingest(ts, "GPU-a", T0, &r, true), ERR_CONFLICT);
    assert_int_equal(inv_tstore_query(ts, keys, 1, T0, T0, &q), ERR_INVALID);
    assert_int_equal(inv_tstore_ingest(ts, "", T0 + 40 * HOUR, &r, true), ERR_INVALID);
    inv_tstore_free(ts);
}

static void test_group_missed_and_limits(void **state)
{
    struct inv_tstore_config cfg;
    struct inv_tstore *ts;
    struct inv_series_query q;
    struct inv_class_input in;
    struct inv_class_config ccfg;
    struct inv_class_result res;
    const char *keys[] = {"GPU-a", "GPU-b/2", "GPU-unknown"};
    int64_t t = T0;
    (void)state;

    inv_tstore_config_default(&cfg);
    cfg.max_gpus = 2;
    ts = inv_tstore_new(&cfg);
    inv_class_config_default(&ccfg);
    /* 40 minutes of both; a allocated and busy, b allocated and idle */
    for (; t < T0 + 40 * MIN; t += 10 * SEC) {
        struct inv_reading a = reading("GPU-a", 0.8, 2000, 400);
        struct inv_reading b = reading("GPU-b", 0.0, 300, 100);
        assert_int_equal(inv_tstore_ingest(ts, "GPU-a", t, &a, true), 0);
        assert_int_equal(inv_tstore_ingest(ts, "GPU-b/2", t, &b, true), 0);
        inv_tstore_end_scrape(ts);
    }
    struct inv_reading c = reading("GPU-c", 0, 0, 0);
    assert_int_equal(inv_tstore_ingest(ts, "GPU-c", t, &c, false), ERR_TOO_LARGE);

    assert_int_equal(inv_tstore_query(ts, keys, 3, t - MIN, t, &q), 6);
    assert_int_equal(q.resolution, INV_RES_RAW);
    assert_int_equal(q.points[0].n, 2);
    assert_true(q.points[0].mem_mib == 2300);
    assert_true(q.points[0].power_w == 500);
    assert_true(fabs(q.points[0].act_avg - 0.4) < 1e-12);
    assert_true(q.points[0].act_min == 0.0 && q.points[0].act_max == 0.8);
    assert_true(inv_efficiency(&q) == 0.5);
    free(q.points);

    assert_int_equal(inv_tstore_class_input(ts, "GPU-b/2", t, ccfg.window_ms, true, &in), 0);
    /* (t - 30 min, t]: the sample at t - 30 min is out, none at t yet */
    assert_int_equal(in.n_samples, 179);
    assert_int_equal(in.covered_ms, ccfg.window_ms);
    assert_int_equal(
        inv_tstore_class_input(ts, "GPU-b/2", T0 + 20 * MIN, ccfg.window_ms, true, &in), 0);
    assert_int_equal(in.covered_ms, 20 * MIN + 10 * SEC);
    assert_int_equal(inv_tstore_class_input(ts, "GPU-b/2", t, ccfg.window_ms, true, &in), 0);
    inv_classify(&ccfg, &in, &res);
    assert_int_equal(res.state, INV_STATE_IDLE_ALLOCATED);
    assert_int_equal(inv_tstore_class_input(ts, "GPU-a", t, ccfg.window_ms, true, &in), 0);
    inv_classify(&ccfg, &in, &res);
    assert_int_equal(res.state, INV_STATE_BUSY);
    assert_int_equal(inv_tstore_class_input(ts, "GPU-x", t, ccfg.window_ms, true, &in),
                     ERR_NOT_FOUND);

    /* b disappears from the scrapes: down after 3, never deleted, history kept */
    for (int k = 1; k <= 3; k++, t += 10 * SEC) {
        struct inv_reading a = reading("GPU-a", 0.8, 2000, 400);
        assert_int_equal(inv_tstore_ingest(ts, "GPU-a", t, &a, true), 0);
        inv_tstore_end_scrape(ts);
        assert_int_equal(inv_tstore_class_input(ts, "GPU-b/2", t, ccfg.window_ms, true, &in), 0);
        assert_int_equal(in.missed_scrapes, k);
        inv_classify(&ccfg, &in, &res);
        assert_int_equal(res.state, k < 3 ? INV_STATE_IDLE_ALLOCATED : INV_STATE_DOWN);
    }
    assert_int_equal(inv_tstore_count(ts), 2);
    assert_int_equal(inv_tstore_query(ts, keys + 1, 1, T0, t, &q), 240); /* raw, 40 min */
    free(q.points);
    /* it comes back */
    struct inv_reading b = reading("GPU-b", 0.0, 300, 100);
    assert_int_equal(inv_tstore_ingest(ts, "GPU-b/2", t, &b, true), 0);
    inv_tstore_end_scrape(ts);
    assert_int_equal(inv_tstore_class_input(ts, "GPU-b/2", t, ccfg.window_ms, true, &in), 0);
    assert_int_equal(in.missed_scrapes, 0);
    inv_tstore_free(ts);
}

static void test_unknown_metrics(void **state)
{
    struct inv_tstore *ts = inv_tstore_new(NULL);
    struct inv_series_query q;
    struct inv_reading r;
    const char *keys[] = {"GPU-n"};
    (void)state;
    inv_reading_clear(&r); /* nothing known */
    assert_int_equal(inv_tstore_ingest(ts, "GPU-n", T0, &r, false), 0);
    assert_int_equal(inv_tstore_query(ts, keys, 1, T0, T0 + 1, &q), 1);
    assert_true(isnan(q.points[0].act_avg));
    assert_true(q.points[0].mem_mib == 0 && q.points[0].power_w == 0);
    assert_true(isnan(inv_efficiency(&q)));
    free(q.points);
    inv_tstore_free(ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_resolutions),
        cmocka_unit_test(test_hours_and_bounds),
        cmocka_unit_test(test_group_missed_and_limits),
        cmocka_unit_test(test_unknown_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
