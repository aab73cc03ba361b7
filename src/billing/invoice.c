/* SPDX-License-Identifier: Apache-2.0 */
/*
 * invoice.c: the life of an invoice. Drafts are computed from the ledger on
 * demand and never stored; issuing rates the month once more, numbers the
 * result and stores it with its canonical text; from then on the row only
 * moves from issued to paid, and corrections are credit notes, numbered in
 * their own series. Re-rating a month must give back the stored canonical
 * text byte for byte, which billing_rerate_matches checks.
 */
#include "base/common.h"

#include <jansson.h>

#include "base/timeutil.h"
#include "billing/billing-int.h"

#define CANONICAL_MAX (64u << 20)

static const char *money(struct arena *a, int64_t micro, int digits)
{
    char s[48];
    meter_format_money(micro, digits, s, sizeof(s));
    return arena_strdup(a, s);
}

/* A milli figure as a decimal with three places: 12345 -> "12.345". */
static const char *milli(struct arena *a, int64_t m)
{
    return arena_printf(a, "%s%" PRId64 ".%03" PRId64, m < 0 ? "-" : "", (m < 0 ? -m : m) / 1000,
                        (m < 0 ? -m : m) % 1000);
}

static const char *project_name(struct store_conn *c, struct arena *a, int64_t id)
{
    struct row p;
    if (store_get(c, &model_projects, id, a, &p, NULL) < 0)
        return "?";
    return row_str(&p, F_PROJECTS_NAME);
}

static json_t *lines_json(struct store_conn *c, const struct meter_invoice *inv,
                          const struct billing__flavor *fl, size_t n_fl, struct arena *a)
{
    json_t *lines = json_array();
    for (size_t i = 0; i < inv->n_lines; i++) {
        const struct meter_line *l = &inv->lines[i];
        const struct billing__flavor *f = billing__flavor(fl, n_fl, l->flavor_id);
        int64_t gpu_mh = f ? l->gpu_milli_hours * f->gpu_milli / 1000 : 0;
        int64_t eff = 0;
        json_t *line;
        /* what an hour of the line cost: the list price times the class's multiplier */
        if (meter_effective_price(l->unit_price_micro, l->mult_ppm, &eff) < 0)
            eff = 0;
        line = json_pack(
            "{s:I,s:s,s:I,s:s,s:s,s:I,s:I,s:s,s:s,s:I,s:s,s:I,s:I,s:s}", "project_id",
            (json_int_t)l->project_id, "project", project_name(c, a, l->project_id), "flavor_id",
            (json_int_t)l->flavor_id, "flavor", f ? f->name : "?", "class",
            meter_class_name(l->cls), "price_id", (json_int_t)l->price_id, "seconds",
            (json_int_t)l->seconds, "hours", milli(a, l->gpu_milli_hours), "gpu_hours",
            milli(a, gpu_mh), "unit_price_micros", (json_int_t)l->unit_price_micro, "unit_price",
            money(a, l->unit_price_micro, 6), "mult_ppm", (json_int_t)l->mult_ppm, "amount_micros",
            (json_int_t)l->amount_micro, "amount", money(a, l->amount_micro, inv->minor_digits));
        json_object_set_new(line, "effective_unit_price_micros", json_integer(eff));
        json_object_set_new(line, "effective_unit_price", json_string(money(a, eff, 6)));
        json_array_append_new(lines, line);
    }
    return lines;
}

/* Stores a JSON value (reference stolen) as a row's JSON text. */
static void set_json(struct arena *a, struct row *r, int field, json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    row_set_str(r, a, field, text ? text : "null");
    free(text);
    json_decref(j);
}

static int canonical_text(const struct meter_invoice *inv, struct buf *b, struct error_info *ei)
{
    buf_init(b, CANONICAL_MAX);
    if (meter_invoice_write(inv, b) < 0) {
        buf_release(b);
        return errinfo_set(ei, ERR_TOO_LARGE, NULL, "the invoice is larger than %u bytes",
                           CANONICAL_MAX);
    }
    return 0;
}

/* The next number of a series: "INV-2026-000001". Moves the counter in the transaction. */
static int next_number(struct store_conn *c, const char *prefix, int64_t now_ms, struct arena *a,
                       const char **ret, struct error_info *ei)
{
    char period[16], *v, key[48];
    int64_t n = 0;
    int rc;

    billing_format_period(now_ms, period);
    period[4] = '\0'; /* the year */
    snprintf(key, sizeof(key), "invoice_seq_%s_%s", prefix, period);
    rc = store_meta_get(c, key, a, &v, ei);
    if (rc == ERR_NOT_FOUND) {
        if (ei)
            *ei = (struct error_info){0}; /* the first number of the series */
        rc = 0;
    } else if (rc >= 0)
        n = strtoll(v, NULL, 10);
    if (rc < 0)
        return rc;
    rc = store_meta_set(c, key, arena_printf(a, "%" PRId64, n + 1), ei);
    *ret = arena_printf(a, "%s-%s-%06" PRId64, prefix, period, n + 1);
    return rc;
}

static int org_row(struct store_conn *c, int64_t org_id, struct arena *a, struct row *ret,
                   struct error_info *ei)
{
    int rc = store_get(c, &model_organizations, org_id, a, ret, ei);
    if (rc == ERR_NOT_FOUND)
        errinfo_set(ei, rc, "org_id", "no organization %" PRId64, org_id);
    return rc;
}

static struct row invoice_row(struct arena *a, const char *kind, const char *number,
                              const struct row *org, const char *period,
                              const struct meter_invoice *inv, int64_t now_ms)
{
    const struct resource_def *d = &model_invoices;
    const char *display = row_str(org, F_ORGANIZATIONS_DISPLAY_NAME);
    struct row r = model_row_new(d, a);

    row_set_str(&r, a, F_INVOICES_KIND, kind);
    row_set_str(&r, a, F_INVOICES_NUMBER, number);
    row_set_int(&r, F_INVOICES_ORG_ID, model_row_id(org));
    row_set_str(&r, a, F_INVOICES_CUSTOMER,
                *display ? display : row_str(org, F_ORGANIZATIONS_NAME));
    row_set_str(&r, a, F_INVOICES_COST_CENTER, row_str(org, F_ORGANIZATIONS_COST_CENTER));
    row_set_str(&r, a, F_INVOICES_PERIOD, period);
    row_set_int(&r, F_INVOICES_PERIOD_START_MS, inv->period_start_ms);
    row_set_int(&r, F_INVOICES_PERIOD_END_MS, inv->period_end_ms);
    row_set_str(&r, a, F_INVOICES_CURRENCY, inv->currency);
    row_set_int(&r, F_INVOICES_MINOR_DIGITS, inv->minor_digits);
    row_set_str(&r, a, F_INVOICES_STATE, "issued");
    row_set_int(&r, F_INVOICES_TOTAL_MICROS, inv->total_micro);
    row_set_int(&r, F_INVOICES_TOTAL_SECONDS, inv->total_seconds);
    row_set_null(&r, F_INVOICES_CREDITS_INVOICE_ID);
    row_set_str(&r, a, F_INVOICES_REASON, "");
    row_set_int(&r, F_INVOICES_ISSUED_AT, now_ms / 1000);
    row_set_null(&r, F_INVOICES_PAID_AT);
    return r;
}

int billing_issue(struct store_conn *c, int64_t org_id, const char *period, int64_t now_ms,
                  struct arena *a, int64_t **ret_ids, size_t *ret_n, struct error_info *ei)
{
    const struct resource_def *d = &model_invoices;
    struct meter_invoices inv;
    struct billing__flavor *fl;
    size_t n_fl;
    int64_t start, end, *ids;
    struct row org, *existing;
    struct store_filter f;
    size_t n_existing;
    char end_s[40];
    int rc;

    *ret_n = 0;
    if ((rc = billing_parse_period(period, &start, &end, ei)) < 0 ||
        (rc = org_row(c, org_id, a, &org, ei)) < 0)
        return rc;
    if (end > now_ms) {
        time_format_rfc3339(end / 1000, end_s, sizeof(end_s));
        return errinfo_set(ei, ERR_CONFLICT, "period",
                           "period %s has not ended: it can be issued from %s", period, end_s);
    }
    store_filter_init(&f);
    store_filter_eq_int(&f, F_INVOICES_ORG_ID, org_id);
    store_filter_eq_str(&f, F_INVOICES_PERIOD, period);
    store_filter_eq_str(&f, F_INVOICES_KIND, "invoice");
    if ((rc = store_list_all(c, d, &f, a, &existing, &n_existing, ei)) < 0)
        return rc;
    if (n_existing)
        return errinfo_set(ei, ERR_CONFLICT, "period",
                           "period %s of organization %" PRId64
                           " is already invoiced (%s); correct it with a credit note",
                           period, org_id, row_str(&existing[0], F_INVOICES_NUMBER));
    /* Runs still open at the end of the month are cut there, so the month is complete. */
    if ((rc = billing_cut_open_runs(c, end, now_ms, a, ei)) < 0 ||
        (rc = billing__load_flavors(c, a, &fl, &n_fl, ei)) < 0)
        return rc;
    meter_invoices_init(&inv);
    rc = billing_rate_period(c, org_id, start, end, 0, a, &inv, ei);
    if (rc >= 0 && inv.n == 0)
        rc = errinfo_set(ei, ERR_CONFLICT, "period",
                         "organization %" PRId64 " has no usage in %s: nothing to invoice", org_id,
                         period);
    ids = arena_calloc(a, inv.n + 1, sizeof(*ids));
    for (size_t i = 0; rc >= 0 && i < inv.n; i++) {
        const char *number;
        struct buf text;
        struct row r;
        if ((rc = next_number(c, "INV", now_ms, a, &number, ei)) < 0 ||
            (rc = canonical_text(&inv.items[i], &text, ei)) < 0)
            break;
        r = invoice_row(a, "invoice", number, &org, period, &inv.items[i], now_ms);
        set_json(a, &r, F_INVOICES_LINES, lines_json(c, &inv.items[i], fl, n_fl, a));
        row_set_str(&r, a, F_INVOICES_CANONICAL, text.data);
        buf_release(&text);
        rc = store_insert(c, d, &r, &ids[i], ei);
    }
    if (rc >= 0)
        *ret_n = inv.n;
    *ret_ids = ids;
    meter_invoices_release(&inv);
    return rc;
}

static int load_invoice(struct store_conn *c, int64_t id, struct arena *a, struct row *ret,
                        struct error_info *ei)
{
    int rc = store_get(c, &model_invoices, id, a, ret, ei);
    if (rc == ERR_NOT_FOUND)
        errinfo_set(ei, rc, NULL, "no invoice %" PRId64, id);
    return rc;
}

int billing_pay(struct store_conn *c, int64_t invoice_id, int64_t now_ms, struct arena *a,
                struct error_info *ei)
{
    const struct resource_def *d = &model_invoices;
    struct row r;
    int rc = load_invoice(c, invoice_id, a, &r, ei);

    if (rc < 0)
        return rc;
    if (strcmp(row_str(&r, F_INVOICES_KIND), "invoice") != 0)
        return errinfo_set(ei, ERR_CONFLICT, NULL, "%s is a credit note: there is nothing to pay",
                           row_str(&r, F_INVOICES_NUMBER));
    if (strcmp(row_str(&r, F_INVOICES_STATE), "issued") != 0)
        return errinfo_set(ei, ERR_CONFLICT, NULL, "%s is already %s",
                           row_str(&r, F_INVOICES_NUMBER), row_str(&r, F_INVOICES_STATE));
    row_set_str(&r, a, F_INVOICES_STATE, "paid");
    row_set_int(&r, F_INVOICES_PAID_AT, now_ms / 1000);
    return store_update(c, d, invoice_id, &r, ei);
}

int billing_credit(struct store_conn *c, int64_t invoice_id, int64_t amount_micros,
                   const char *reason, int64_t now_ms, struct arena *a, int64_t *ret_id,
                   struct error_info *ei)
{
    const struct resource_def *d = &model_invoices;
    struct row inv, note, org, *credits;
    struct store_filter f;
    struct meter_invoice m = {0};
    size_t n;
    int64_t left, unit = 1;
    const char *number, *invno;
    int digits, rc = load_invoice(c, invoice_id, a, &inv, ei);

    if (rc < 0)
        return rc;
    invno = row_str(&inv, F_INVOICES_NUMBER);
    if (strcmp(row_str(&inv, F_INVOICES_KIND), "invoice") != 0)
        return errinfo_set(ei, ERR_CONFLICT, NULL, "%s is a credit note; credit its invoice",
                           invno);
    if (!reason || !*reason)
        return errinfo_set(ei, ERR_INVALID, "reason", "a credit note needs a reason");
    store_filter_init(&f);
    store_filter_eq_int(&f, F_INVOICES_CREDITS_INVOICE_ID, invoice_id);
    if ((rc = store_list_all(c, d, &f, a, &credits, &n, ei)) < 0 ||
        (rc = org_row(c, row_int(&inv, F_INVOICES_ORG_ID), a, &org, ei)) < 0)
        return rc;
    left = row_int(&inv, F_INVOICES_TOTAL_MICROS);
    for (size_t i = 0; i < n; i++)
        left += row_int(&credits[i], F_INVOICES_TOTAL_MICROS); /* notes are negative */
    digits = (int)row_int(&inv, F_INVOICES_MINOR_DIGITS);
    for (int i = digits; i < 6; i++)
        unit *= 10;
    if (amount_micros == 0)
        amount_micros = left;
    if (amount_micros <= 0 || amount_micros > left)
        return errinfo_set(ei, left <= 0 ? ERR_CONFLICT : ERR_INVALID, "amount_micros",
                           "%s has %s %s left to credit; asked for %s", invno,
                           money(a, left, digits), row_str(&inv, F_INVOICES_CURRENCY),
                           money(a, amount_micros, 6));
    if (amount_micros % unit != 0)
        return errinfo_set(ei, ERR_INVALID, "amount_micros",
                           "amount %" PRId64 " is not a whole number of the currency's minor unit "
                           "(%" PRId64 " micro-units)",
                           amount_micros, unit);
    if ((rc = next_number(c, "CN", now_ms, a, &number, ei)) < 0)
        return rc;
    m.period_start_ms = row_int(&inv, F_INVOICES_PERIOD_START_MS);
    m.period_end_ms = row_int(&inv, F_INVOICES_PERIOD_END_MS);
    snprintf(m.currency, sizeof(m.currency), "%s", row_str(&inv, F_INVOICES_CURRENCY));
    m.minor_digits = digits;
    m.total_micro = -amount_micros;
    note =
        invoice_row(a, "credit-note", number, &org, row_str(&inv, F_INVOICES_PERIOD), &m, now_ms);
    row_set_int(&note, F_INVOICES_CREDITS_INVOICE_ID, invoice_id);
    row_set_str(&note, a, F_INVOICES_REASON, reason);
    set_json(a, &note, F_INVOICES_LINES,
             json_pack("[{s:s,s:I,s:s}]", "description",
                       arena_printf(a, "Credit against %s: %s", invno, reason), "amount_micros",
                       (json_int_t)-amount_micros, "amount", money(a, -amount_micros, digits)));
    row_set_str(&note, a, F_INVOICES_CANONICAL,
                arena_printf(a, "credit-note number=%s invoice=%s currency=%s amount=%s\n", number,
                             invno, m.currency, money(a, -amount_micros, digits)));
    return store_insert(c, d, &note, ret_id, ei);
}

int billing_rerate_matches(struct store_conn *c, int64_t invoice_id, struct arena *a,
                           bool *ret_same, struct error_info *ei)
{
    struct meter_invoices inv;
    struct row r;
    int rc = load_invoice(c, invoice_id, a, &r, ei);

    *ret_same = false;
    if (rc < 0)
        return rc;
    if (strcmp(row_str(&r, F_INVOICES_KIND), "invoice") != 0) {
        *ret_same = true;
        return 0;
    }
    meter_invoices_init(&inv);
    rc = billing_rate_period(c, row_int(&r, F_INVOICES_ORG_ID),
                             row_int(&r, F_INVOICES_PERIOD_START_MS),
                             row_int(&r, F_INVOICES_PERIOD_END_MS), 0, a, &inv, ei);
    for (size_t i = 0; rc >= 0 && i < inv.n; i++) {
        struct buf text;
        if (strcmp(inv.items[i].currency, row_str(&r, F_INVOICES_CURRENCY)) != 0)
            continue;
        if ((rc = canonical_text(&inv.items[i], &text, ei)) < 0)
            break;
        *ret_same = strcmp(text.data, row_str(&r, F_INVOICES_CANONICAL)) == 0;
        buf_release(&text);
    }
    meter_invoices_release(&inv);
    return rc;
}

int billing_draft_json(struct store_conn *c, int64_t org_id, const char *period, int64_t now_ms,
                       struct arena *a, json_t **ret, struct error_info *ei)
{
    struct meter_invoices inv;
    struct billing__flavor *fl;
    size_t n_fl;
    int64_t start, end;
    struct row org;
    int rc;

    *ret = NULL;
    if ((rc = billing_parse_period(period, &start, &end, ei)) < 0 ||
        (rc = org_row(c, org_id, a, &org, ei)) < 0 ||
        (rc = billing__load_flavors(c, a, &fl, &n_fl, ei)) < 0)
        return rc;
    meter_invoices_init(&inv);
    rc = billing_rate_period(c, org_id, start, end, now_ms < end ? now_ms : end, a, &inv, ei);
    if (rc >= 0) {
        *ret = json_array();
        for (size_t i = 0; i < inv.n; i++) {
            const struct meter_invoice *m = &inv.items[i];
            struct row r = invoice_row(a, "invoice", "", &org, period, m, now_ms);
            json_t *j = model_encode(&model_invoices, &r);
            json_object_set_new(j, "state", json_string("draft"));
            json_object_set_new(j, "number", json_null());
            json_object_set_new(j, "issued_at", json_null());
            json_object_set_new(j, "lines", lines_json(c, m, fl, n_fl, a));
            json_object_del(j, "canonical");
            json_array_append_new(*ret, j);
        }
    }
    meter_invoices_release(&inv);
    return rc;
}

int billing_lines_json(struct store_conn *c, const struct meter_invoice *inv, struct arena *a,
                       json_t **ret, struct error_info *ei)
{
    struct billing__flavor *fl;
    size_t n_fl;
    int rc = billing__load_flavors(c, a, &fl, &n_fl, ei);
    *ret = rc < 0 ? NULL : lines_json(c, inv, fl, n_fl, a);
    return rc;
}
