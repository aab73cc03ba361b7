/* SPDX-License-Identifier: Apache-2.0 */
/*
 * billing.c: the billing routes. Invoices are read through the generic
 * resource routes (viewers of the organization); everything that changes
 * them is here and admin-only (the route table's least role, checked before
 * these handlers run): issue, pay, credit. Drafts, exports and the
 * re-rating check are for the organization's viewers; usage is shown per
 * project to whoever may see the project; the ledger check is for admins.
 * Prices and budgets are generic resources; prices have the extra rules
 * below (their hooks).
 */
#include "base/common.h"

#include "api/api-int.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "billing/billing.h"

static void reply_err(struct req *r, int rc, struct error_info *ei)
{
    req_reply_error(r, rc, ei);
}

static int64_t now_ms(void)
{
    return time_now_ms();
}

/* ?period=YYYY-MM, defaulting to the current month. */
static const char *period_arg(struct req *r)
{
    const char *p = req_arg(r, "period");
    char *cur;
    if (p)
        return p;
    cur = arena_alloc(&r->arena, 16);
    billing_format_period(now_ms(), cur);
    return cur;
}

static int org_arg(struct req *r, const char *name, bool required, int64_t *ret,
                   struct error_info *ei)
{
    const char *s = req_arg(r, name);
    *ret = 0;
    if (!s)
        return required ? errinfo_set(ei, ERR_INVALID, name, "parameter '%s' is required", name)
                        : 0;
    if (parse_int64(s, 1, INT64_MAX, ret) < 0)
        return errinfo_set(ei, ERR_INVALID, name, "parameter '%s' must be an id", name);
    return 0;
}

/* An organization the caller may read billing of; others' are 404, as everywhere. */
static int check_org_viewer(struct req *r, int64_t org, struct error_info *ei)
{
    if (rbac_role_on_org(r, org) >= ROLE_VIEWER)
        return 0;
    return errinfo_set(ei, ERR_NOT_FOUND, "org_id", "no organization %" PRId64, org);
}

/* POST /v1/invoices/issue {"org_id", "period"}: issues a finished month. */
void billing_route_issue(struct req *r)
{
    struct error_info ei = {0};
    json_t *body = NULL, *items = json_array();
    int64_t org = 0, *ids = NULL;
    const char *period = NULL;
    size_t n = 0;
    int rc = 0;

    if (rc >= 0)
        rc = req_json_body(r, &body, &ei);
    if (rc >= 0) {
        json_t *o = json_object_get(body, "org_id"), *p = json_object_get(body, "period");
        if (!json_is_integer(o) || json_integer_value(o) < 1)
            rc = errinfo_set(&ei, ERR_INVALID, "org_id", "field 'org_id' must be an id");
        else if (!json_is_string(p))
            rc = errinfo_set(&ei, ERR_INVALID, "period",
                             "field 'period' must be a month such as \"2026-11\"");
        org = json_integer_value(o);
        period = arena_strdup(&r->arena, json_string_value(p) ? json_string_value(p) : "");
    }
    json_decref(body);
    if (rc >= 0)
        rc = store_begin(req_db(r), &ei);
    if (rc >= 0)
        rc = billing_issue(req_db(r), org, period, now_ms(), &r->arena, &ids, &n, &ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        struct row inv;
        rc = store_get(req_db(r), &model_invoices, ids[i], &r->arena, &inv, &ei);
        if (rc >= 0)
            rc = resource_audit(r, req_db(r), "issue", &model_invoices, ids[i], NULL, &inv, &ei);
        if (rc >= 0)
            json_array_append_new(items, resource_encode(r, &model_invoices, &inv));
    }
    if (rc >= 0)
        rc = store_commit(req_db(r), &ei);
    if (rc < 0) {
        store_rollback(req_db(r));
        json_decref(items);
        reply_err(r, rc, &ei);
        return;
    }
    req_reply_json(r, 201, json_pack("{s:o}", "items", items));
}

/* GET /v1/invoices/draft?org_id=N[&period=YYYY-MM]: what the month would bill now. */
void billing_route_draft(struct req *r)
{
    struct error_info ei = {0};
    const char *period = period_arg(r);
    json_t *items = NULL;
    int64_t org;
    int rc = org_arg(r, "org_id", true, &org, &ei);

    if (rc >= 0)
        rc = check_org_viewer(r, org, &ei);
    if (rc >= 0)
        rc = billing_draft_json(req_db(r), org, period, now_ms(), &r->arena, &items, &ei);
    if (rc < 0) {
        reply_err(r, rc, &ei);
        return;
    }
    req_reply_json(r, 200, json_pack("{s:s,s:o}", "period", period, "items", items));
}

/* Loads an invoice the caller may see, with its JSON. */
static int visible_invoice(struct req *r, int64_t id, struct row *row, json_t **ret,
                           struct error_info *ei)
{
    int rc = resource_load_visible(r, &model_invoices, id, row, ei);
    *ret = rc < 0 ? NULL : resource_encode(r, &model_invoices, row);
    return rc;
}

static void reply_invoice(struct req *r, int64_t id, int status)
{
    struct error_info ei = {0};
    struct row row;
    json_t *j;
    int rc = visible_invoice(r, id, &row, &j, &ei);
    if (rc < 0)
        reply_err(r, rc, &ei);
    else
        req_reply_json(r, status, j);
}

void billing_route_pay(struct req *r)
{
    int64_t id = r->path_id;
    struct error_info ei = {0};
    struct row before, after;
    int rc = 0;

    if (rc >= 0)
        rc = store_begin(req_db(r), &ei);
    if (rc >= 0)
        rc = store_get(req_db(r), &model_invoices, id, &r->arena, &before, &ei);
    if (rc >= 0)
        rc = billing_pay(req_db(r), id, now_ms(), &r->arena, &ei);
    if (rc >= 0)
        rc = store_get(req_db(r), &model_invoices, id, &r->arena, &after, &ei);
    if (rc >= 0)
        rc = resource_audit(r, req_db(r), "pay", &model_invoices, id, &before, &after, &ei);
    if (rc >= 0)
        rc = store_commit(req_db(r), &ei);
    if (rc < 0) {
        store_rollback(req_db(r));
        if (rc == ERR_NOT_FOUND)
            errinfo_set(&ei, rc, NULL, "no invoice %" PRId64, id);
        reply_err(r, rc, &ei);
        return;
    }
    reply_invoice(r, id, 200);
}

void billing_route_credit(struct req *r)
{
    int64_t id = r->path_id;
    struct error_info ei = {0};
    json_t *body = NULL;
    int64_t amount = 0, note = 0;
    const char *reason = NULL;
    struct row row;
    int rc = 0;

    if (rc >= 0)
        rc = req_json_body(r, &body, &ei);
    if (rc >= 0) {
        json_t *a = json_object_get(body, "amount_micros"), *why = json_object_get(body, "reason");
        if (a && !json_is_integer(a))
            rc = errinfo_set(&ei, ERR_INVALID, "amount_micros",
                             "field 'amount_micros' must be an integer (0 or absent: all)");
        else if (!json_is_string(why))
            rc = errinfo_set(&ei, ERR_INVALID, "reason", "field 'reason' must be a string");
        else if (strlen(json_string_value(why)) > 1000)
            rc = errinfo_set(&ei, ERR_INVALID, "reason", "field 'reason' is too long");
        amount = json_integer_value(a);
        reason = arena_strdup(&r->arena, json_is_string(why) ? json_string_value(why) : "");
        if (rc >= 0 && amount < 0)
            rc = errinfo_set(&ei, ERR_INVALID, "amount_micros",
                             "field 'amount_micros' must be positive: a credit note's sign is "
                             "implied");
    }
    json_decref(body);
    if (rc >= 0)
        rc = store_begin(req_db(r), &ei);
    if (rc >= 0)
        rc = billing_credit(req_db(r), id, amount, reason, now_ms(), &r->arena, &note, &ei);
    if (rc >= 0)
        rc = store_get(req_db(r), &model_invoices, note, &r->arena, &row, &ei);
    if (rc >= 0)
        rc = resource_audit(r, req_db(r), "credit", &model_invoices, note, NULL, &row, &ei);
    if (rc >= 0)
        rc = store_commit(req_db(r), &ei);
    if (rc < 0) {
        store_rollback(req_db(r));
        reply_err(r, rc, &ei);
        return;
    }
    reply_invoice(r, note, 201);
}

void billing_route_export(struct req *r)
{
    int64_t id = r->path_id;
    struct error_info ei = {0};
    enum billing_format fmt = BILLING_JSON;
    const char *f = req_arg(r, "format");
    struct row row;
    struct buf out;
    json_t *j = NULL;
    int rc = 0;

    if (f && billing_format_parse(f, &fmt) < 0)
        rc = errinfo_set(&ei, ERR_INVALID, "format", "format '%.20s' is not json, csv or html", f);
    if (rc >= 0)
        rc = visible_invoice(r, id, &row, &j, &ei);
    if (rc < 0) {
        reply_err(r, rc, &ei);
        return;
    }
    buf_init(&out, 64u << 20);
    rc = billing_export(j, fmt, r->api->opt.issuer, &out);
    json_decref(j);
    if (rc < 0) {
        buf_release(&out);
        errinfo_set(&ei, rc, NULL, "the invoice could not be exported");
        reply_err(r, rc, &ei);
        return;
    }
    r->status = 200;
    r->raw_len = out.len;
    r->raw = arena_strndup(&r->arena, out.data ? out.data : "", out.len);
    r->content_type = billing_format_type(fmt);
    buf_release(&out);
}

void billing_route_verify(struct req *r)
{
    int64_t id = r->path_id;
    struct error_info ei = {0};
    struct row row;
    json_t *j = NULL;
    bool same = false;
    int rc = visible_invoice(r, id, &row, &j, &ei);

    json_decref(j);
    if (rc >= 0)
        rc = billing_rerate_matches(req_db(r), id, &r->arena, &same, &ei);
    if (rc < 0) {
        reply_err(r, rc, &ei);
        return;
    }
    req_reply_json(r, 200,
                   json_pack("{s:I,s:s,s:b}", "invoice_id", (json_int_t)id, "number",
                             row_get(&row, F_INVOICES_NUMBER)->s, "reproduced", same));
}

/* GET /v1/ledger/verify: recomputes the usage ledger's hash chain (admins). */
void billing_route_ledger_verify(struct req *r)
{
    struct error_info ei = {0};
    struct billing_verify v;
    int rc = billing_ledger_verify(req_db(r), &v, &ei);
    if (rc < 0) {
        reply_err(r, rc, &ei);
        return;
    }
    req_reply_json(r, 200,
                   json_pack("{s:b,s:I,s:s,s:I,s:s}", "ok", v.ok, "records", (json_int_t)v.records,
                             "head", v.head, "bad_seq", (json_int_t)v.bad_seq, "problem",
                             v.problem));
}

/*
 * GET /v1/usage[?period=YYYY-MM][&org_id=N][&project_id=N]: rated usage of
 * the month per project x flavor x class, with runs still open counted up to
 * now (provisional), limited to the projects the caller may see.
 */
void billing_route_usage(struct req *r)
{
    struct error_info ei = {0};
    const char *period = period_arg(r);
    struct meter_invoices inv;
    int64_t org = 0, prj = 0, start = 0, end = 0, now = now_ms();
    json_t *items = json_array(), *totals = json_array();
    int rc = org_arg(r, "org_id", false, &org, &ei);

    if (rc >= 0)
        rc = org_arg(r, "project_id", false, &prj, &ei);
    if (rc >= 0)
        rc = billing_parse_period(period, &start, &end, &ei);
    if (rc >= 0 && prj && rbac_role_on_project(r, prj) < ROLE_VIEWER)
        rc = errinfo_set(&ei, ERR_NOT_FOUND, "project_id", "no project %" PRId64, prj);
    if (rc >= 0 && prj)
        org = rbac_project_org(r, prj);
    if (rc >= 0 && org && !rbac_sees_org(r, org))
        rc = errinfo_set(&ei, ERR_NOT_FOUND, "org_id", "no organization %" PRId64, org);
    meter_invoices_init(&inv);
    if (rc >= 0)
        rc = billing_rate_period(req_db(r), org, start, end, now < end ? now : end, &r->arena, &inv,
                                 &ei);
    for (size_t i = 0; rc >= 0 && i < inv.n; i++) {
        const struct meter_invoice *m = &inv.items[i];
        int64_t total = 0, seconds = 0;
        bool any = false;
        json_t *lines, *l;
        size_t k;
        char s[48];
        rc = billing_lines_json(req_db(r), m, &r->arena, &lines, &ei);
        json_array_foreach(lines, k, l)
        {
            const struct meter_line *ml = &m->lines[k];
            if ((prj && ml->project_id != prj) ||
                rbac_role_on_project(r, ml->project_id) < ROLE_VIEWER)
                continue;
            json_object_set_new(l, "org_id", json_integer(m->org_id));
            json_object_set_new(l, "currency", json_string(m->currency));
            json_array_append(items, l);
            total += ml->amount_micro;
            seconds += ml->seconds;
            any = true;
        }
        json_decref(lines);
        if (!any)
            continue;
        meter_format_money(total, m->minor_digits, s, sizeof(s));
        json_array_append_new(totals,
                              json_pack("{s:I,s:s,s:I,s:I,s:s}", "org_id", (json_int_t)m->org_id,
                                        "currency", m->currency, "seconds", (json_int_t)seconds,
                                        "amount_micros", (json_int_t)total, "amount", s));
    }
    meter_invoices_release(&inv);
    if (rc < 0) {
        json_decref(items);
        json_decref(totals);
        reply_err(r, rc, &ei);
        return;
    }
    req_reply_json(r, 200,
                   json_pack("{s:s,s:b,s:o,s:o}", "period", period, "provisional", now < end,
                             "items", items, "totals", totals));
}

/*
 * A price version starts now or later: one starting earlier would re-rate
 * usage already metered at the price then in force. "Now" allows for the
 * admin's clock being a little behind the server's.
 */
#define PRICE_CLOCK_SKEW_S 5

static int check_price_not_past(struct req *r, int64_t from_s, struct error_info *ei)
{
    char from[40], now[40];
    if (from_s >= r->now - PRICE_CLOCK_SKEW_S)
        return 0;
    time_format_rfc3339(from_s, from, sizeof(from));
    time_format_rfc3339(r->now, now, sizeof(now));
    return errinfo_set(ei, ERR_INVALID, "effective_from",
                       "effective_from %s is in the past (now is %s): a price may start now or "
                       "later, never re-rate usage already metered; correct an issued invoice "
                       "with a credit note",
                       from, now);
}

/* Price versions: not in the past, consistent digits per currency, issued months reproducible. */
int billing_check_price(struct req *r, const struct row *row, struct error_info *ei)
{
    int rc = check_price_not_past(r, row_int(row, F_PRICES_EFFECTIVE_FROM), ei);
    return rc < 0 ? rc : billing_check_price_list(r, row, ei);
}

int billing_check_price_list(struct req *r, const struct row *row, struct error_info *ei)
{
    const struct resource_def *d = &model_prices;
    const char *cur = row_get(row, F_PRICES_CURRENCY)->s;
    int64_t digits = row_int(row, F_PRICES_MINOR_DIGITS);
    int64_t from_ms = row_int(row, F_PRICES_EFFECTIVE_FROM) * 1000;
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc = 0;

    store_filter_init(&f);
    f.limit = 1;
    store_filter_eq_str(&f, F_PRICES_CURRENCY, cur);
    rc = store_list(req_db(r), d, &f, &r->arena, &rows, &n, ei);
    if (rc >= 0 && n && row_int(&rows[0], F_PRICES_MINOR_DIGITS) != digits)
        return errinfo_set(ei, ERR_INVALID, "minor_digits",
                           "currency %s has %" PRId64
                           " minor digits in the price list, not %" PRId64,
                           cur, row_int(&rows[0], F_PRICES_MINOR_DIGITS), digits);
    /* The latest issued period end; invoices only ever grow, so a scan is fine at this size. */
    store_filter_init(&f);
    store_filter_eq_str(&f, F_INVOICES_KIND, "invoice");
    f.limit = 10000;
    for (;;) {
        if (rc < 0 ||
            (rc = store_list(req_db(r), &model_invoices, &f, &r->arena, &rows, &n, ei)) < 0)
            return rc;
        for (size_t i = 0; i < n; i++) {
            int64_t end = row_int(&rows[i], F_INVOICES_PERIOD_END_MS);
            if (from_ms < end)
                return errinfo_set(ei, ERR_CONFLICT, "effective_from",
                                   "effective_from is inside period %s, already invoiced (%s): "
                                   "prices may only change after the last issued period",
                                   row_get(&rows[i], F_INVOICES_PERIOD)->s,
                                   row_get(&rows[i], F_INVOICES_NUMBER)->s);
        }
        if (n < (size_t)f.limit)
            return 0;
        f.after_id = model_row_id(&rows[n - 1]);
    }
}

static int check_price(struct req *r, struct row *row, struct row *ret_same, struct error_info *ei)
{
    (void)ret_same;
    return billing_check_price(r, row, ei);
}

const struct resource_hooks billing_price_hooks = {.check_create = check_price};

/* Before a submit: opportunistic work is refused once an enforced budget is spent. */
int billing_check_submit(struct req *r, const struct row *row, struct error_info *ei)
{
    if (strcmp(row_get(row, F_WORKLOADS_PRIORITY_CLASS)->s, "opportunistic") != 0)
        return 0;
    return billing_admit_opportunistic(req_db(r), row_int(row, F_WORKLOADS_PROJECT_ID), now_ms(),
                                       &r->arena, ei);
}

/* Whether the caller may see a showback group. */
static bool sees_cost(struct req *r, enum billing_cost_by by, int64_t id)
{
    struct row pool;
    if (r->who->admin)
        return true;
    switch (by) {
    case BILLING_BY_PROJECT:
        return id && rbac_role_on_project(r, id) >= ROLE_VIEWER;
    case BILLING_BY_ORG:
        return id && rbac_role_on_org(r, id) >= ROLE_VIEWER;
    case BILLING_BY_MANAGER:
        return id && id == r->who->user_id;
    case BILLING_BY_POOL:
        return resource_load_visible(r, &model_pools, id, &pool, NULL) >= 0;
    }
    return false;
}

static const char *cost_name(struct req *r, enum billing_cost_by by, int64_t id)
{
    static const struct resource_def *const defs[] = {&model_pools, &model_projects,
                                                      &model_organizations, &model_users};
    struct row row;
    if (!id || store_get(req_db(r), defs[by], id, &r->arena, &row, NULL) < 0)
        return by == BILLING_BY_MANAGER ? "(no manager)" : "(none)";
    return model_get(defs[by], &row, "name")->s;
}

static json_t *milli_hours(struct req *r, int64_t milli_ms)
{
    int64_t mh = milli_ms / 3600000; /* milli-GPU-hours */
    return json_string(arena_printf(&r->arena, "%" PRId64 ".%03" PRId64, mh / 1000, mh % 1000));
}

/* Showback is shown in cents: pools carry a currency but no minor digits of their own. */
#define COST_DIGITS 2

/*
 * GET /v1/cost?by=pool|project|org|manager[&period=YYYY-MM]: showback of the
 * pools' cost, used and idle, for the groups the caller may see (a manager
 * sees their own row; admins all). Each group's used and idle cost is rounded
 * once (meter_round_money) from its exact sum; total = used + idle as shown.
 */
void billing_route_cost(struct req *r)
{
    static const char *const names[] = {"pool", "project", "org", "manager"};
    struct error_info ei = {0};
    const char *by_s = req_arg(r, "by"), *period = period_arg(r);
    enum billing_cost_by by = BILLING_BY_POOL;
    struct billing_cost *rows = NULL;
    int64_t start = 0, end = 0;
    json_t *items = json_array();
    size_t n = 0;
    bool known = !by_s;
    int rc;

    for (size_t i = 0; by_s && i < ARRAY_SIZE(names); i++) {
        if (strcmp(by_s, names[i]) == 0) {
            by = (enum billing_cost_by)i;
            known = true;
        }
    }
    rc = known ? 0
               : errinfo_set(&ei, ERR_INVALID, "by",
                             "parameter 'by' must be pool, project, org or manager");
    if (rc >= 0)
        rc = billing_parse_period(period, &start, &end, &ei);
    if (rc >= 0)
        rc = billing_cost(req_db(r), by, start, end, now_ms(), &r->arena, &rows, &n, &ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        const struct billing_cost *x = &rows[i];
        /* rounded once from the exact sums; the total is the sum of the parts shown */
        int64_t used_m = meter_round_money(x->used_micros, COST_DIGITS);
        int64_t idle_m = meter_round_money(x->idle_micros, COST_DIGITS);
        char used[48], idle[48], total[48];
        if (!sees_cost(r, by, x->id))
            continue;
        meter_format_money(used_m, COST_DIGITS, used, sizeof(used));
        meter_format_money(idle_m, COST_DIGITS, idle, sizeof(idle));
        meter_format_money(used_m + idle_m, COST_DIGITS, total, sizeof(total));
        json_array_append_new(
            items,
            json_pack("{s:s,s:I,s:s,s:s,s:o,s:o,s:I,s:I,s:I,s:s,s:s,s:s,s:o}", "by", names[by],
                      "id", (json_int_t)x->id, "name", cost_name(r, by, x->id), "currency",
                      x->currency, "capacity_gpu_hours", milli_hours(r, x->capacity_milli_ms),
                      "allocated_gpu_hours", milli_hours(r, x->allocated_milli_ms), "used_micros",
                      (json_int_t)used_m, "idle_micros", (json_int_t)idle_m, "total_micros",
                      (json_int_t)(used_m + idle_m), "used", used, "idle", idle, "total", total,
                      "efficiency_ppm",
                      x->efficiency_ppm < 0 ? json_null() : json_integer(x->efficiency_ppm)));
    }
    free(rows);
    if (rc < 0) {
        json_decref(items);
        reply_err(r, rc, &ei);
        return;
    }
    req_reply_json(r, 200,
                   json_pack("{s:s,s:s,s:o}", "by", names[by], "period", period, "items", items));
}
