/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export.c: an issued invoice or credit note as JSON, CSV (RFC 4180, one
 * row per line plus a total row) or a printable HTML page a customer can
 * file: issuer, customer and cost center, number, period, dates, lines and
 * totals. Everything comes from the stored invoice, so an export is as
 * immutable as the invoice: the same invoice always gives the same bytes.
 */
#include "base/common.h"

#include <jansson.h>

#include "base/timeutil.h"
#include "billing/billing-int.h"

int billing_format_parse(const char *s, enum billing_format *ret)
{
    if (s && strcmp(s, "json") == 0)
        *ret = BILLING_JSON;
    else if (s && strcmp(s, "csv") == 0)
        *ret = BILLING_CSV;
    else if (s && strcmp(s, "html") == 0)
        *ret = BILLING_HTML;
    else
        return ERR_INVALID;
    return 0;
}

const char *billing_format_type(enum billing_format f)
{
    switch (f) {
    case BILLING_CSV:
        return "text/csv; charset=utf-8";
    case BILLING_HTML:
        return "text/html; charset=utf-8";
    case BILLING_JSON:
        break;
    }
    return "application/json";
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int64_t num(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static void date_of(const json_t *inv, const char *k, char out[16])
{
    /* RFC 3339 from the API ("2026-12-01T10:00:00Z"): the date part. */
    snprintf(out, 16, "%.10s", str(inv, k));
}

static void day_of_ms(int64_t ms, char out[16])
{
    char full[40];
    time_format_rfc3339(ms / 1000, full, sizeof(full));
    snprintf(out, 16, "%.10s", full);
}

/* ---- CSV ---- */

static int csv_field(struct buf *b, const char *s, bool last)
{
    int rc = 0;
    if (strpbrk(s, ",\"\r\n")) {
        rc |= buf_puts(b, "\"");
        for (const char *p = s; *p; p++)
            rc |= *p == '"' ? buf_puts(b, "\"\"") : buf_append(b, p, 1);
        rc |= buf_puts(b, "\"");
    } else {
        rc |= buf_puts(b, s);
    }
    rc |= buf_puts(b, last ? "\r\n" : ",");
    return rc;
}

static int export_csv(const json_t *inv, struct buf *b)
{
    static const char *const header[] = {
        "number",    "kind",       "period",   "customer",    "cost_center", "currency",
        "project",   "flavor",     "class",    "price_id",    "seconds",     "hours",
        "gpu_hours", "unit_price", "mult_ppm", "description", "amount"};
    const json_t *lines = json_object_get(inv, "lines"), *l;
    char total[48];
    size_t i;
    int rc = 0;

    for (i = 0; i < ARRAY_SIZE(header); i++)
        rc |= csv_field(b, header[i], i + 1 == ARRAY_SIZE(header));
    json_array_foreach(lines, i, l)
    {
        char price_id[24] = "", seconds[24] = "", mult[24] = "";
        if (json_object_get(l, "price_id")) {
            snprintf(price_id, sizeof(price_id), "%" PRId64, num(l, "price_id"));
            snprintf(seconds, sizeof(seconds), "%" PRId64, num(l, "seconds"));
            snprintf(mult, sizeof(mult), "%" PRId64, num(l, "mult_ppm"));
        }
        const char *row[] = {str(inv, "number"),
                             str(inv, "kind"),
                             str(inv, "period"),
                             str(inv, "customer"),
                             str(inv, "cost_center"),
                             str(inv, "currency"),
                             str(l, "project"),
                             str(l, "flavor"),
                             str(l, "class"),
                             price_id,
                             seconds,
                             str(l, "hours"),
                             str(l, "gpu_hours"),
                             str(l, "unit_price"),
                             mult,
                             str(l, "description"),
                             str(l, "amount")};
        for (size_t k = 0; k < ARRAY_SIZE(row); k++)
            rc |= csv_field(b, row[k], k + 1 == ARRAY_SIZE(row));
    }
    meter_format_money(num(inv, "total_micros"), (int)num(inv, "minor_digits"), total,
                       sizeof(total));
    for (i = 0; i + 1 < ARRAY_SIZE(header); i++)
        rc |= csv_field(b, i == 0 ? str(inv, "number") : i == 1 ? "total" : "", false);
    rc |= csv_field(b, total, true);
    return rc ? ERR_TOO_LARGE : 0;
}

/* ---- HTML ---- */

static int html_text(struct buf *b, const char *s)
{
    int rc = 0;
    for (const char *p = s; *p; p++) {
        switch (*p) {
        case '&':
            rc |= buf_puts(b, "&amp;");
            break;
        case '<':
            rc |= buf_puts(b, "&lt;");
            break;
        case '>':
            rc |= buf_puts(b, "&gt;");
            break;
        case '"':
            rc |= buf_puts(b, "&quot;");
            break;
        case '\'':
            rc |= buf_puts(b, "&#39;");
            break;
        default:
            rc |= buf_append(b, p, 1);
        }
    }
    return rc;
}

/* Appends fmt with every %s argument HTML-escaped; only %s is supported. */
static int html(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc = 0;
    va_start(ap, fmt);
    for (const char *p = fmt; *p; p++) {
        if (p[0] == '%' && p[1] == 's') {
            rc |= html_text(b, va_arg(ap, const char *));
            p++;
        } else {
            rc |= buf_append(b, p, 1);
        }
    }
    va_end(ap);
    return rc;
}

static const char STYLE[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#111;margin:2rem auto;"
    "max-width:60rem;padding:0 1rem;line-height:1.4}"
    "header{display:flex;justify-content:space-between;gap:2rem;flex-wrap:wrap}"
    "h1{font-size:1.6rem;margin:0 0 .5rem}table{border-collapse:collapse;width:100%;"
    "margin:1.5rem 0}th,td{padding:.35rem .5rem;border-bottom:1px solid #ccc;text-align:left}"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    "tfoot td{font-weight:bold;border-top:2px solid #111}dl{display:grid;"
    "grid-template-columns:auto 1fr;gap:.2rem 1rem;margin:0}dt{color:#444}dd{margin:0}"
    ".note{color:#444;font-size:.9rem}@media print{body{margin:0}}";

const char *billing_export_html_style(void)
{
    return STYLE;
}

static int export_html(const json_t *inv, const char *issuer, struct buf *b)
{
    bool credit = strcmp(str(inv, "kind"), "credit-note") == 0;
    const json_t *lines = json_object_get(inv, "lines"), *l;
    char from[16], to[16], issued[16], paid[16] = "", total[48];
    size_t i;
    int rc = 0;

    day_of_ms(num(inv, "period_start_ms"), from);
    day_of_ms(num(inv, "period_end_ms") - 1, to);
    date_of(inv, "issued_at", issued);
    if (json_is_string(json_object_get(inv, "paid_at")))
        date_of(inv, "paid_at", paid);
    meter_format_money(num(inv, "total_micros"), (int)num(inv, "minor_digits"), total,
                       sizeof(total));

    rc |= html(b,
               "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
               "<title>%s %s</title><style>",
               credit ? "Credit note" : "Invoice", str(inv, "number"));
    rc |= buf_puts(b, STYLE);
    rc |= html(b, "</style></head><body>\n<header><div><h1>%s %s</h1><p>%s</p></div>\n<dl>",
               credit ? "Credit note" : "Invoice", str(inv, "number"), issuer);
    rc |= html(b, "<dt>Number</dt><dd>%s</dd><dt>Issue date</dt><dd>%s</dd>", str(inv, "number"),
               issued);
    rc |= html(b, "<dt>Period</dt><dd>%s to %s (%s)</dd>", from, to, str(inv, "period"));
    rc |= html(b, "<dt>Status</dt><dd>%s%s%s</dd>", str(inv, "state"), *paid ? " on " : "", paid);
    rc |= html(b, "</dl></header>\n<section><h2>Bill to</h2><p>%s", str(inv, "customer"));
    if (*str(inv, "cost_center"))
        rc |= html(b, "<br>Cost center: %s", str(inv, "cost_center"));
    rc |= html(b, "</p></section>\n");
    if (credit) {
        rc |= html(b, "<p>%s</p>\n", str(inv, "reason"));
        rc |= html(b,
                   "<table><thead><tr><th>Description</th><th class=\"n\">Amount (%s)</th>"
                   "</tr></thead><tbody>\n",
                   str(inv, "currency"));
        json_array_foreach(lines, i, l)
        {
            rc |= html(b, "<tr><td>%s</td><td class=\"n\">%s</td></tr>\n", str(l, "description"),
                       str(l, "amount"));
        }
        rc |= html(b, "</tbody><tfoot><tr><td>Total</td><td class=\"n\">%s %s</td></tr>", total,
                   str(inv, "currency"));
    } else {
        rc |= html(b,
                   "<table><thead><tr><th>Project</th><th>Flavor</th><th>Class</th>"
                   "<th class=\"n\">Hours</th><th class=\"n\">GPU-hours</th>"
                   "<th class=\"n\">Unit price / h</th><th class=\"n\">Multiplier</th>"
                   "<th class=\"n\">Amount (%s)</th></tr></thead><tbody>\n",
                   str(inv, "currency"));
        json_array_foreach(lines, i, l)
        {
            char mult[24];
            int64_t ppm = num(l, "mult_ppm");
            snprintf(mult, sizeof(mult), "%" PRId64 ".%06" PRId64, ppm / 1000000, ppm % 1000000);
            rc |= html(b,
                       "<tr><td>%s</td><td>%s</td><td>%s</td><td class=\"n\">%s</td>"
                       "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                       "<td class=\"n\">%s</td></tr>\n",
                       str(l, "project"), str(l, "flavor"), str(l, "class"), str(l, "hours"),
                       str(l, "gpu_hours"), str(l, "unit_price"), mult, str(l, "amount"));
        }
        rc |= html(b,
                   "</tbody><tfoot><tr><td colspan=\"7\">Total</td><td class=\"n\">%s %s</td>"
                   "</tr>",
                   total, str(inv, "currency"));
    }
    rc |= html(b,
               "</tfoot></table>\n<p class=\"note\">Usage is metered per second from "
               "allocations; each line is rounded once, half-even, to the currency's minor "
               "unit, and the total is the sum of the lines. Opportunistic (P2) capacity is "
               "billed at the multiplier shown. %s</p>\n</body></html>\n",
               credit ? "This credit note corrects the invoice named above."
                      : "Corrections are made by credit note.");
    return rc ? ERR_TOO_LARGE : 0;
}

int billing_export(const json_t *invoice, enum billing_format f, const char *issuer,
                   struct buf *out)
{
    if (!json_is_object(invoice) || !json_is_array(json_object_get(invoice, "lines")))
        return ERR_INVALID;
    switch (f) {
    case BILLING_CSV:
        return export_csv(invoice, out);
    case BILLING_HTML:
        return export_html(invoice, issuer ? issuer : "", out);
    case BILLING_JSON: {
        json_t *copy = json_deep_copy(invoice);
        char *text;
        int rc;
        json_object_del(copy, "canonical");
        text = json_dumps(copy, JSON_INDENT(2) | JSON_SORT_KEYS);
        json_decref(copy);
        rc = text ? buf_puts(out, text) : ERR_TOO_LARGE;
        if (rc >= 0)
            rc = buf_puts(out, "\n");
        free(text);
        return rc < 0 ? rc : 0;
    }
    }
    return ERR_INVALID;
}
