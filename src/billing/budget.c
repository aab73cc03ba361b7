/* SPDX-License-Identifier: Apache-2.0 */
/*
 * budget.c: monthly budgets against rated usage. Usage counts the ledger
 * and, provisionally, runs still open up to now, so a budget is spent when
 * the money is, not when the work ends. The thresholds themselves are
 * src/meter's (meter_budget_crossings, meter_budget_exhausted).
 */
#include "base/common.h"

#include "billing/billing-int.h"

static struct meter_budget budget_of(const struct row *b, int64_t period_start)
{
    const struct value *prj = row_get(b, F_BUDGETS_PROJECT_ID);
    const struct value *hours = row_get(b, F_BUDGETS_GPU_HOURS);
    const struct value *money = row_get(b, F_BUDGETS_MONEY_MICROS);
    struct meter_budget mb = {
        .id = model_row_id(b),
        .scope = prj->null ? METER_SCOPE_ORG : METER_SCOPE_PROJECT,
        .scope_id = prj->null ? row_int(b, F_BUDGETS_ORG_ID) : prj->i,
        .period_start_ms = period_start,
        .gpu_milli_hours_limit = hours->null ? 0 : hours->i * 1000,
        .money_limit_micro = money->null ? 0 : money->i,
    };
    snprintf(mb.currency, sizeof(mb.currency), "%s", row_str(b, F_BUDGETS_CURRENCY));
    return mb;
}

/* Usage of a budget's scope from an organization's rated month (lines in replica units). */
static struct meter_usage usage_of(const struct meter_invoices *inv, const struct meter_budget *b,
                                   const struct billing__flavor *fl, size_t n_fl)
{
    struct meter_usage u = {0};
    for (size_t i = 0; i < inv->n; i++) {
        const struct meter_invoice *m = &inv->items[i];
        if (b->scope == METER_SCOPE_ORG && m->org_id != b->scope_id)
            continue;
        for (size_t k = 0; k < m->n_lines; k++) {
            const struct meter_line *l = &m->lines[k];
            const struct billing__flavor *f = billing__flavor(fl, n_fl, l->flavor_id);
            if (b->scope == METER_SCOPE_PROJECT && l->project_id != b->scope_id)
                continue;
            if (f)
                u.gpu_milli_hours += l->gpu_milli_hours * f->gpu_milli / 1000;
            if (strcmp(m->currency, b->currency) == 0)
                u.money_micro += l->amount_micro;
        }
    }
    return u;
}

/* The organization a budget's usage is rated in. */
static int org_of(struct store_conn *c, const struct row *b, struct arena *a, int64_t *ret,
                  struct error_info *ei)
{
    const struct value *prj = row_get(b, F_BUDGETS_PROJECT_ID);
    struct row p;
    int rc;
    if (prj->null) {
        *ret = row_int(b, F_BUDGETS_ORG_ID);
        return 0;
    }
    rc = store_get(c, &model_projects, prj->i, a, &p, ei);
    *ret = rc < 0 ? 0 : row_int(&p, F_PROJECTS_ORG_ID);
    return rc;
}

/* Rates the month for one budget's organization and measures the budget. */
static int measure(struct store_conn *c, const struct row *b, int64_t now_ms, struct arena *a,
                   struct meter_budget *ret_b, struct meter_usage *ret_u, struct error_info *ei)
{
    struct meter_period_rule months = {0};
    struct meter_invoices inv;
    struct billing__flavor *fl;
    int64_t start, end, org;
    size_t n_fl;
    int rc;

    meter_period_of(&months, now_ms, &start, &end);
    *ret_b = budget_of(b, start);
    if ((rc = org_of(c, b, a, &org, ei)) < 0 ||
        (rc = billing__load_flavors(c, a, &fl, &n_fl, ei)) < 0)
        return rc;
    meter_invoices_init(&inv);
    rc = billing_rate_period(c, org, start, end, now_ms, a, &inv, ei);
    if (rc >= 0)
        *ret_u = usage_of(&inv, ret_b, fl, n_fl);
    meter_invoices_release(&inv);
    return rc;
}

static int add_alert(struct store_conn *c, const struct row *b, const char *period,
                     const struct meter_budget_event *ev, const struct meter_usage *u,
                     const struct meter_budget *mb, int64_t now_ms, struct arena *a,
                     struct error_info *ei)
{
    const struct resource_def *d = &model_budget_alerts;
    const char *kind = ev->kind == METER_BUDGET_GPU_HOURS ? "gpu-hours" : "money";
    struct store_filter f;
    struct row *rows, r;
    size_t n;
    int64_t id;
    int rc;

    store_filter_init(&f);
    store_filter_eq_int(&f, F_BUDGET_ALERTS_BUDGET_ID, model_row_id(b));
    store_filter_eq_str(&f, F_BUDGET_ALERTS_PERIOD, period);
    rc = store_list_all(c, d, &f, a, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        if (strcmp(row_str(&rows[i], F_BUDGET_ALERTS_KIND), kind) == 0 &&
            row_int(&rows[i], F_BUDGET_ALERTS_PERCENT) == ev->percent)
            return 0; /* raised before */
    }
    if (rc < 0)
        return rc;
    r = model_row_new(d, a);
    row_set_int(&r, F_BUDGET_ALERTS_BUDGET_ID, model_row_id(b));
    for (int k = 0; k < 2; k++) { /* the budget's scope: org_id, project_id */
        static const int from[] = {F_BUDGETS_ORG_ID, F_BUDGETS_PROJECT_ID};
        static const int to[] = {F_BUDGET_ALERTS_ORG_ID, F_BUDGET_ALERTS_PROJECT_ID};
        const struct value *v = row_get(b, from[k]);
        if (v->null)
            row_set_null(&r, to[k]);
        else
            row_set_int(&r, to[k], v->i);
    }
    row_set_str(&r, a, F_BUDGET_ALERTS_PERIOD, period);
    row_set_str(&r, a, F_BUDGET_ALERTS_KIND, kind);
    row_set_int(&r, F_BUDGET_ALERTS_PERCENT, ev->percent);
    row_set_int(&r, F_BUDGET_ALERTS_USED,
                ev->kind == METER_BUDGET_GPU_HOURS ? u->gpu_milli_hours : u->money_micro);
    row_set_int(&r, F_BUDGET_ALERTS_LIMIT,
                ev->kind == METER_BUDGET_GPU_HOURS ? mb->gpu_milli_hours_limit
                                                   : mb->money_limit_micro);
    row_set_int(&r, F_BUDGET_ALERTS_AT_MS, now_ms);
    rc = store_insert(c, d, &r, &id, ei);
    return rc < 0 ? rc : 1;
}

int billing_check_budgets(struct store_conn *c, int64_t now_ms, struct arena *a,
                          struct error_info *ei)
{
    struct store_filter f;
    struct row *rows;
    size_t n;
    char period[16];
    int added = 0, rc;

    billing_format_period(now_ms, period);
    store_filter_init(&f);
    rc = store_list_all(c, &model_budgets, &f, a, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        struct meter_budget mb;
        struct meter_usage zero = {0}, u = {0};
        struct meter_budget_event evs[METER_MAX_BUDGET_EVENTS];
        int n_ev;
        if ((rc = measure(c, &rows[i], now_ms, a, &mb, &u, ei)) < 0)
            break;
        n_ev = meter_budget_crossings(&mb, &zero, &u, evs);
        for (int k = 0; rc >= 0 && k < n_ev; k++) {
            rc = add_alert(c, &rows[i], period, &evs[k], &u, &mb, now_ms, a, ei);
            added += rc > 0;
        }
    }
    return rc < 0 ? rc : added;
}

int billing_admit_opportunistic(struct store_conn *c, int64_t project_id, int64_t now_ms,
                                struct arena *a, struct error_info *ei)
{
    const struct resource_def *d = &model_budgets;
    struct store_filter f;
    struct row prj, *rows;
    size_t n;
    int rc = store_get(c, &model_projects, project_id, a, &prj, ei);

    if (rc < 0)
        return rc;
    for (int pass = 0; pass < 2; pass++) {
        store_filter_init(&f);
        store_filter_eq_int(&f, pass == 0 ? F_BUDGETS_PROJECT_ID : F_BUDGETS_ORG_ID,
                            pass == 0 ? project_id : row_int(&prj, F_PROJECTS_ORG_ID));
        store_filter_eq_int(&f, F_BUDGETS_ENFORCE, 1);
        if ((rc = store_list_all(c, d, &f, a, &rows, &n, ei)) < 0)
            return rc;
        for (size_t i = 0; i < n; i++) {
            struct meter_budget mb;
            struct meter_usage u = {0};
            char used[48], limit[48];
            if ((rc = measure(c, &rows[i], now_ms, a, &mb, &u, ei)) < 0)
                return rc;
            if (!meter_budget_exhausted(&mb, &u))
                continue;
            if (mb.gpu_milli_hours_limit > 0 && u.gpu_milli_hours >= mb.gpu_milli_hours_limit) {
                snprintf(used, sizeof(used), "%" PRId64 ".%03" PRId64 " GPU-hours",
                         u.gpu_milli_hours / 1000, u.gpu_milli_hours % 1000);
                snprintf(limit, sizeof(limit), "%" PRId64 " GPU-hours",
                         mb.gpu_milli_hours_limit / 1000);
            } else {
                char u_s[40], l_s[40];
                meter_format_money(u.money_micro, 2, u_s, sizeof(u_s));
                meter_format_money(mb.money_limit_micro, 2, l_s, sizeof(l_s));
                snprintf(used, sizeof(used), "%s %s", u_s, mb.currency);
                snprintf(limit, sizeof(limit), "%s %s", l_s, mb.currency);
            }
            return errinfo_set(ei, ERR_FORBIDDEN, "priority_class",
                               "budget %" PRId64 " of this %s is spent for the month (%s of %s): "
                               "new opportunistic work is refused; owned work may still run",
                               mb.id, pass == 0 ? "project" : "organization", used, limit);
        }
    }
    return 0;
}
