/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rate.c: rates a month of the usage ledger with the price versions in the
 * store, through the pure meter (src/meter), and describes the result as
 * invoice lines in JSON.
 *
 * Billing is by flavor x time: a price version is per replica-hour of its
 * flavor, so the meter is given one unit (1000 "milli") per replica and the
 * line's hours are replica-hours; GPU-hours are shown beside them from the
 * flavor's GPUs per replica.
 */
#include "base/common.h"

#include <jansson.h>

#include "base/timeutil.h"
#include "billing/billing-int.h"

#define REPLICA_UNIT 1000
#define PAGE 10000

int billing_load_prices(struct store_conn *c, struct arena *a, struct meter_price **ret,
                        size_t *ret_n, struct error_info *ei)
{
    const struct resource_def *d = &model_prices;
    struct store_filter f;
    struct row *rows;
    size_t n;
    struct meter_price *p;
    int rc;

    store_filter_init(&f);
    rc = store_list_all(c, d, &f, a, &rows, &n, ei);
    if (rc < 0)
        return rc;
    p = arena_calloc(a, n + 1, sizeof(*p));
    for (size_t i = 0; i < n; i++) {
        p[i].id = model_row_id(&rows[i]);
        p[i].flavor_id = row_int(&rows[i], F_PRICES_FLAVOR_ID);
        snprintf(p[i].currency, sizeof(p[i].currency), "%s", row_str(&rows[i], F_PRICES_CURRENCY));
        p[i].minor_digits = (int32_t)row_int(&rows[i], F_PRICES_MINOR_DIGITS);
        p[i].price_per_hour_micro = row_int(&rows[i], F_PRICES_PRICE_PER_HOUR_MICROS);
        p[i].mult_ppm[METER_OWNED] = row_int(&rows[i], F_PRICES_OWNED_MULT_PPM);
        p[i].mult_ppm[METER_OPPORTUNISTIC] = row_int(&rows[i], F_PRICES_OPPORTUNISTIC_MULT_PPM);
        p[i].effective_from_ms = row_int(&rows[i], F_PRICES_EFFECTIVE_FROM) * 1000;
    }
    *ret = p;
    *ret_n = n;
    return 0;
}

/* Rates rec clipped to [start, end); explains a missing price in ei. */
static int rate_clipped(struct store_conn *c, struct meter_rater *r, struct meter_record rec,
                        int64_t start, int64_t end, struct arena *a, struct error_info *ei)
{
    char when[40];
    struct row flv;
    int rc;

    if (rec.started_ms < start)
        rec.started_ms = start;
    if (rec.ended_ms > end)
        rec.ended_ms = end;
    if (rec.ended_ms <= rec.started_ms)
        return 0;
    rec.gpu_milli = REPLICA_UNIT;
    rc = meter_rate(r, &rec);
    if (rc == ERR_NOT_FOUND) {
        const char *name = "?";
        if (store_get(c, &model_flavors, rec.flavor_id, a, &flv, NULL) >= 0)
            name = row_str(&flv, F_FLAVORS_NAME);
        time_format_rfc3339(rec.started_ms / 1000, when, sizeof(when));
        return errinfo_set(ei, ERR_NOT_FOUND, "flavor_id",
                           "flavor '%s' has no price in force at %s: add a price version "
                           "(POST /v1/prices) effective from then or earlier",
                           name, when);
    }
    if (rc < 0)
        return errinfo_set(ei, rc, NULL, "usage record %" PRId64 " cannot be rated", rec.id);
    return 0;
}

static int rate_open_runs(struct store_conn *c, struct meter_rater *r, int64_t org_id,
                          int64_t start, int64_t end, int64_t until, struct arena *a,
                          struct error_info *ei)
{
    struct billing__run *runs;
    size_t n;
    int rc = billing__open_runs(c, a, &runs, &n, ei);

    for (size_t i = 0; rc >= 0 && i < n; i++) {
        struct row w, prj;
        struct meter_record rec = {.id = 1, .replicas = runs[i].replicas, .ended_ms = until};
        rc = billing__metered_until(c, runs[i].workload_id, runs[i].started_ms, a, &rec.started_ms,
                                    ei);
        if (rc < 0 || rec.started_ms >= until || rec.replicas < 1)
            continue;
        if ((rc = store_get(c, &model_workloads, runs[i].workload_id, a, &w, ei)) < 0 ||
            (rc = store_get(c, &model_projects, row_int(&w, F_WORKLOADS_PROJECT_ID), a, &prj, ei)) <
                0)
            break;
        rec.org_id = row_int(&prj, F_PROJECTS_ORG_ID);
        if (org_id && rec.org_id != org_id)
            continue;
        rec.project_id = model_row_id(&prj);
        rec.flavor_id = row_int(&w, F_WORKLOADS_FLAVOR_ID);
        rec.cls = billing__class_of(runs[i].priority_class);
        rc = rate_clipped(c, r, rec, start, end, a, ei);
    }
    return rc;
}

int billing_rate_period(struct store_conn *c, int64_t org_id, int64_t start_ms, int64_t end_ms,
                        int64_t open_until_ms, struct arena *a, struct meter_invoices *ret,
                        struct error_info *ei)
{
    const struct resource_def *d = &model_usage;
    struct meter_price *prices;
    struct meter_rater *r = NULL;
    struct store_filter f;
    struct row *rows;
    size_t n_prices, n;
    int rc;

    rc = billing_load_prices(c, a, &prices, &n_prices, ei);
    if (rc >= 0)
        rc = meter_rater_new(prices, n_prices, NULL, ei, &r);
    /* The ledger is read a page at a time, so memory stays bounded by the invoice lines. */
    store_filter_init(&f);
    f.limit = PAGE;
    if (org_id)
        store_filter_eq_int(&f, F_USAGE_ORG_ID, org_id);
    while (rc >= 0) {
        struct arena page;
        arena_init(&page);
        rc = store_list(c, d, &f, &page, &rows, &n, ei);
        for (size_t i = 0; rc >= 0 && i < n; i++) {
            struct meter_record rec = {
                .id = row_int(&rows[i], F_USAGE_SEQ),
                .org_id = row_int(&rows[i], F_USAGE_ORG_ID),
                .project_id = row_int(&rows[i], F_USAGE_PROJECT_ID),
                .flavor_id = row_int(&rows[i], F_USAGE_FLAVOR_ID),
                .cls = billing__class_of(row_str(&rows[i], F_USAGE_PRIORITY_CLASS)),
                .replicas = (int32_t)row_int(&rows[i], F_USAGE_REPLICAS),
                .started_ms = row_int(&rows[i], F_USAGE_STARTED_MS),
                .ended_ms = row_int(&rows[i], F_USAGE_ENDED_MS),
            };
            rc = rate_clipped(c, r, rec, start_ms, end_ms, a, ei);
        }
        if (rc >= 0 && n > 0)
            f.after_id = model_row_id(&rows[n - 1]);
        arena_release(&page);
        if (n < PAGE)
            break;
    }
    if (rc >= 0 && open_until_ms > start_ms)
        rc = rate_open_runs(c, r, org_id, start_ms, end_ms, open_until_ms, a, ei);
    if (rc >= 0 && (rc = meter_invoices_build(r, ret)) < 0)
        errinfo_set(ei, rc, NULL, "an amount does not fit in 64 bits");
    meter_rater_free(r);
    return rc;
}
