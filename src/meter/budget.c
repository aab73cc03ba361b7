/* SPDX-License-Identifier: Apache-2.0 */
/*
 * budget.c: budgets over rated usage: the usage of a budget's scope taken
 * from built invoices, the 50/80/100 % thresholds crossed between two
 * states (each crossing reported once, by whoever moves usage over it) and
 * exhaustion for enforcement.
 */
#include "base/common.h"

#include "meter/meter.h"

static const int32_t PERCENTS[] = {50, 80, 100};

int meter_usage_of(const struct meter_invoices *inv, const struct meter_budget *b,
                   struct meter_usage *ret_usage)
{
    struct meter_usage u = {0, 0};
    for (size_t i = 0; i < inv->n; i++) {
        const struct meter_invoice *v = &inv->items[i];
        if (v->period_start_ms != b->period_start_ms)
            continue;
        if (b->scope == METER_SCOPE_ORG && v->org_id != b->scope_id)
            continue;
        bool same_currency = memcmp(v->currency, b->currency, 3) == 0;
        for (size_t j = 0; j < v->n_lines; j++) {
            const struct meter_line *l = &v->lines[j];
            if (b->scope == METER_SCOPE_PROJECT && l->project_id != b->scope_id)
                continue;
            u.gpu_milli_hours += l->gpu_milli_hours;
            if (same_currency)
                u.money_micro += l->amount_micro;
        }
    }
    *ret_usage = u;
    return 0;
}

/* used * 100 >= limit * percent, without overflow. */
static bool reached(int64_t used, int64_t limit, int32_t percent)
{
    return (__int128)used * 100 >= (__int128)limit * percent;
}

int meter_budget_crossings(const struct meter_budget *b, const struct meter_usage *before,
                           const struct meter_usage *after,
                           struct meter_budget_event ret_events[METER_MAX_BUDGET_EVENTS])
{
    int n = 0;
    const int64_t limits[2] = {b->gpu_milli_hours_limit, b->money_limit_micro};
    const int64_t was[2] = {before->gpu_milli_hours, before->money_micro};
    const int64_t now[2] = {after->gpu_milli_hours, after->money_micro};
    for (int k = 0; k < 2; k++) {
        if (limits[k] <= 0)
            continue;
        for (size_t i = 0; i < ARRAY_SIZE(PERCENTS); i++)
            if (!reached(was[k], limits[k], PERCENTS[i]) && reached(now[k], limits[k], PERCENTS[i]))
                ret_events[n++] = (struct meter_budget_event){b->id, k, PERCENTS[i]};
    }
    return n;
}

bool meter_budget_exhausted(const struct meter_budget *b, const struct meter_usage *usage)
{
    return (b->gpu_milli_hours_limit > 0 && usage->gpu_milli_hours >= b->gpu_milli_hours_limit) ||
           (b->money_limit_micro > 0 && usage->money_micro >= b->money_limit_micro);
}
