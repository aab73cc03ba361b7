/* SPDX-License-Identifier: Apache-2.0 */
/*
 * format.c: the canonical text of an invoice, the form re-rating is
 * compared on byte for byte, and the decimal formatting of money. Only
 * integers are printed; no locale, no floating point.
 */
#include "base/common.h"

#include "base/buf.h"
#include "base/err.h"
#include "meter/meter.h"

/* |micro| rounded half-even to a multiple of step (a power of ten up to 10^6). */
static uint64_t round_magnitude(uint64_t mag, uint64_t step)
{
    uint64_t q = mag / step, rem = mag % step;
    if (rem > step - rem || (rem == step - rem && (q & 1)))
        q++;
    return q;
}

int64_t meter_round_money(int64_t micro, int minor_digits)
{
    uint64_t step = 1, mag, q;
    if (minor_digits < 0 || minor_digits > 6)
        return micro;
    for (int i = minor_digits; i < 6; i++)
        step *= 10;
    mag = micro < 0 ? (uint64_t)0 - (uint64_t)micro : (uint64_t)micro;
    q = round_magnitude(mag, step);
    if (q > (uint64_t)INT64_MAX / step) /* beyond the range: the nearest step inside it */
        q = (uint64_t)INT64_MAX / step;
    return micro < 0 ? -(int64_t)(q * step) : (int64_t)(q * step);
}

int meter_format_money(int64_t micro, int minor_digits, char *out, size_t cap)
{
    if (minor_digits < 0 || minor_digits > 6)
        return ERR_INVALID;
    uint64_t step = 1;
    for (int i = minor_digits; i < 6; i++)
        step *= 10;
    uint64_t mag = micro < 0 ? (uint64_t)0 - (uint64_t)micro : (uint64_t)micro;
    uint64_t units = round_magnitude(mag, step); /* in minor units: no overflow, step >= 1 */
    uint64_t per = 1000000u / step;
    uint64_t whole = units / per, frac = units % per;
    int n = minor_digits > 0 ? snprintf(out, cap, "%s%" PRIu64 ".%0*" PRIu64, micro < 0 ? "-" : "",
                                        whole, minor_digits, frac)
                             : snprintf(out, cap, "%s%" PRIu64, micro < 0 ? "-" : "", whole);
    if (n < 0 || (size_t)n >= cap) {
        if (cap > 0)
            out[0] = '\0';
        return ERR_TOO_LARGE;
    }
    return n;
}

/* ISO 8601 UTC with milliseconds: 2026-01-31T23:59:59.999Z. */
static void format_instant(int64_t ms, char out[40])
{
    int64_t day = ms / 86400000, rem = ms % 86400000;
    if (rem < 0) {
        rem += 86400000;
        day--;
    }
    int64_t y;
    int m, d;
    meter_civil_from_days(day, &y, &m, &d);
    snprintf(out, 40, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d.%03dZ", y, m, d, (int)(rem / 3600000),
             (int)(rem / 60000 % 60), (int)(rem / 1000 % 60), (int)(rem % 1000));
}

int meter_invoice_write(const struct meter_invoice *inv, struct buf *b)
{
    char from[40], to[40], amount[48], unit[48];
    format_instant(inv->period_start_ms, from);
    format_instant(inv->period_end_ms, to);
    int rc = buf_printf(b, "invoice org=%" PRId64 " period=%s/%s currency=%s digits=%d lines=%zu\n",
                        inv->org_id, from, to, inv->currency, (int)inv->minor_digits, inv->n_lines);
    for (size_t i = 0; i < inv->n_lines && rc >= 0; i++) {
        const struct meter_line *l = &inv->lines[i];
        const char *cls = meter_class_name(l->cls);
        meter_format_money(l->amount_micro, inv->minor_digits, amount, sizeof(amount));
        meter_format_money(l->unit_price_micro, 6, unit, sizeof(unit));
        rc = buf_printf(b,
                        "line project=%" PRId64 " flavor=%" PRId64 " class=%s price=%" PRId64
                        " usage_ms=%" PRId64 " seconds=%" PRId64 " gpu_milli_hours=%" PRId64
                        " unit_price=%s mult_ppm=%" PRId64 " amount=%s\n",
                        l->project_id, l->flavor_id, cls ? cls : "?", l->price_id, l->usage_ms,
                        l->seconds, l->gpu_milli_hours, unit, l->mult_ppm, amount);
    }
    if (rc >= 0) {
        meter_format_money(inv->total_micro, inv->minor_digits, amount, sizeof(amount));
        rc = buf_printf(b, "total seconds=%" PRId64 " gpu_milli_hours=%" PRId64 " amount=%s\n",
                        inv->total_seconds, inv->total_gpu_milli_hours, amount);
    }
    return rc < 0 ? rc : 0;
}
