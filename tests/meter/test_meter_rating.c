/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hand-checked cases of the metering core (src/meter/meter.h): the UTC
 * calendar (leap years, Dec -> Jan), splitting at month boundaries and at a
 * price change, half-even rounding on constructed ties (x.5 of the minor
 * unit goes to the even neighbour, anything above or below a tie goes to the
 * nearest, even below one micro-unit), rejected records, money formatting,
 * the ledger bytes, budget thresholds and showback. Numbers are worked out
 * in the comments.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "meter/meter.h"

#define HOUR INT64_C(3600000)
#define DAY INT64_C(86400000)

static int64_t at(int64_t y, int m, int d)
{
    return meter_days_from_civil(y, m, d) * DAY;
}

static struct meter_price price(int64_t id, int64_t flavor, const char *cur, int digits,
                                int64_t per_hour, int64_t from)
{
    struct meter_price p = {.id = id,
                            .flavor_id = flavor,
                            .minor_digits = digits,
                            .price_per_hour_micro = per_hour,
                            .mult_ppm = {1000000, 600000},
                            .effective_from_ms = from};
    memcpy(p.currency, cur, 4);
    return p;
}

static struct meter_record rec(int64_t id, int cls, int32_t milli, int64_t from, int64_t to)
{
    return (struct meter_record){.id = id,
                                 .org_id = 7,
                                 .project_id = 70,
                                 .flavor_id = 1,
                                 .cls = cls,
                                 .replicas = 1,
                                 .gpu_milli = milli,
                                 .started_ms = from,
                                 .ended_ms = to};
}

/* Rates the records with one price list and builds the invoices. */
static void rate_all(const struct meter_price *p, size_t np, const struct meter_record *r,
                     size_t nr, struct meter_invoices *inv)
{
    struct meter_rater *m = NULL;
    assert_int_equal(meter_rater_new(p, np, NULL, NULL, &m), 0);
    assert_int_equal(meter_rate_many(m, r, nr, NULL), 0);
    meter_invoices_init(inv);
    assert_int_equal(meter_invoices_build(m, inv), 0);
    meter_rater_free(m);
}

static void test_calendar(void **st)
{
    (void)st;
    assert_int_equal(meter_days_from_civil(1970, 1, 1), 0);
    assert_int_equal(meter_days_from_civil(2023, 1, 1), 19358);
    assert_int_equal(meter_days_from_civil(1969, 12, 31), -1);
    /* 2024 and 2000 are leap years, 2023 and 1900 are not. */
    assert_int_equal(meter_days_from_civil(2024, 3, 1) - meter_days_from_civil(2024, 2, 28), 2);
    assert_int_equal(meter_days_from_civil(2023, 3, 1) - meter_days_from_civil(2023, 2, 28), 1);
    assert_int_equal(meter_days_from_civil(2000, 3, 1) - meter_days_from_civil(2000, 2, 28), 2);
    assert_int_equal(meter_days_from_civil(1900, 3, 1) - meter_days_from_civil(1900, 2, 28), 1);
    for (int64_t d = -800000; d < 3000000; d += 7) {
        int64_t y;
        int m, dd;
        meter_civil_from_days(d, &y, &m, &dd);
        assert_int_equal(meter_days_from_civil(y, m, dd), d);
    }
    int64_t s, e;
    assert_int_equal(meter_period_of(NULL, at(2024, 2, 15) + 5, &s, &e), 0);
    assert_int_equal(s, at(2024, 2, 1));
    assert_int_equal(e - s, 29 * DAY);
    assert_int_equal(meter_period_of(NULL, at(2023, 2, 15), &s, &e), 0);
    assert_int_equal(e - s, 28 * DAY);
    /* The last millisecond of a year belongs to December, the next one to January. */
    assert_int_equal(meter_period_of(NULL, at(2026, 1, 1) - 1, &s, &e), 0);
    assert_int_equal(s, at(2025, 12, 1));
    assert_int_equal(e, at(2026, 1, 1));
    assert_int_equal(meter_period_of(NULL, at(2026, 1, 1), &s, &e), 0);
    assert_int_equal(s, at(2026, 1, 1));
    assert_int_equal(e, at(2026, 2, 1));
    /* Before 1970 too. */
    assert_int_equal(meter_period_of(NULL, -1, &s, &e), 0);
    assert_int_equal(s, at(1969, 12, 1));
    assert_int_equal(e, 0);
    /* Weeks anchored on a Monday (2026-01-05). */
    struct meter_period_rule week = {METER_PERIOD_FIXED, 7 * DAY, at(2026, 1, 5)};
    assert_int_equal(meter_period_of(&week, at(2026, 1, 4), &s, &e), 0);
    assert_int_equal(s, at(2025, 12, 29));
    assert_int_equal(e, at(2026, 1, 5));
    struct meter_period_rule bad = {METER_PERIOD_FIXED, 0, 0};
    assert_int_equal(meter_period_of(&bad, 0, &s, &e), ERR_INVALID);
}

static void test_split_dec_jan(void **st)
{
    (void)st;
    /* 3.60 EUR per GPU-hour; one GPU from 1,234,567 ms before New Year to 7,654,321 ms after. */
    struct meter_price p = price(1, 1, "EUR", 2, 3600000, 0);
    int64_t ny = at(2026, 1, 1);
    struct meter_record r = rec(1, METER_OWNED, 1000, ny - 1234567, ny + 7654321);
    struct meter_invoices inv;
    rate_all(&p, 1, &r, 1, &inv);
    assert_int_equal(inv.n, 2);
    assert_int_equal(inv.items[0].period_start_ms, at(2025, 12, 1));
    assert_int_equal(inv.items[1].period_start_ms, ny);
    assert_int_equal(inv.items[0].lines[0].usage_ms, 1234567);
    assert_int_equal(inv.items[1].lines[0].usage_ms, 7654321);
    /* 1234.567 s x 0.001 EUR/s = 1.234567 -> 1.23; 7654.321 s -> 7.654321 -> 7.65. */
    assert_int_equal(inv.items[0].lines[0].amount_micro, 1230000);
    assert_int_equal(inv.items[1].lines[0].amount_micro, 7650000);
    assert_int_equal(inv.items[0].lines[0].seconds, 1235); /* 1234.567 -> 1235 */
    assert_int_equal(inv.items[1].lines[0].seconds, 7654);
    /* milli-GPU-hours: 1234567 / 3600 = 342.935 -> 343. */
    assert_int_equal(inv.items[0].lines[0].gpu_milli_hours, 343);
    meter_invoices_release(&inv);
}

static void test_split_leap_february(void **st)
{
    (void)st;
    struct meter_price p = price(1, 1, "EUR", 2, 1000000, 0);
    /* 2024-02-28 .. 2024-03-02: 2 days in February (leap), 1 in March; 2023: 1 and 1. */
    struct meter_record r[2] = {rec(1, METER_OWNED, 1000, at(2024, 2, 28), at(2024, 3, 2)),
                                rec(2, METER_OWNED, 1000, at(2023, 2, 28), at(2023, 3, 2))};
    struct meter_invoices inv;
    rate_all(&p, 1, r, 2, &inv);
    assert_int_equal(inv.n, 4);
    assert_int_equal(inv.items[0].period_start_ms, at(2023, 2, 1));
    assert_int_equal(inv.items[0].total_seconds, 86400);
    assert_int_equal(inv.items[1].total_seconds, 86400);
    assert_int_equal(inv.items[2].period_start_ms, at(2024, 2, 1));
    assert_int_equal(inv.items[2].total_seconds, 2 * 86400);
    assert_int_equal(inv.items[2].total_micro, 48000000);
    assert_int_equal(inv.items[3].total_seconds, 86400);
    meter_invoices_release(&inv);
}

static void test_split_price_change(void **st)
{
    (void)st;
    int64_t t0 = at(2026, 3, 1);
    /* 1.00 until t0+10h, then 2.00; a record over [t0+8h, t0+12h) on 2 GPUs, P2 (0.6). */
    struct meter_price p[2] = {price(11, 1, "EUR", 2, 1000000, 0),
                               price(12, 1, "EUR", 2, 2000000, t0 + 10 * HOUR)};
    struct meter_record r = rec(1, METER_OPPORTUNISTIC, 2000, t0 + 8 * HOUR, t0 + 12 * HOUR);
    struct meter_invoices inv;
    rate_all(p, 2, &r, 1, &inv);
    assert_int_equal(inv.n, 1);
    assert_int_equal(inv.items[0].n_lines, 2);
    const struct meter_line *l = inv.items[0].lines;
    assert_int_equal(l[0].price_id, 11);
    assert_int_equal(l[0].usage_ms, 2 * HOUR);
    assert_int_equal(l[0].gpu_milli_hours, 4000);
    assert_int_equal(l[0].amount_micro, 2400000); /* 4 GPU-h x 1.00 x 0.6 */
    assert_int_equal(l[0].mult_ppm, 600000);
    assert_int_equal(l[1].price_id, 12);
    assert_int_equal(l[1].usage_ms, 2 * HOUR);
    assert_int_equal(l[1].amount_micro, 4800000); /* 4 GPU-h x 2.00 x 0.6 */
    assert_int_equal(inv.items[0].total_micro, 7200000);
    meter_invoices_release(&inv);
}

/* The amount of one GPU for half an hour at a price, in EUR (2 digits) or JPY (0). */
static int64_t half_hour_amount(int64_t per_hour, const char *cur, int digits)
{
    struct meter_price p = price(1, 1, cur, digits, per_hour, 0);
    struct meter_record r = rec(1, METER_OWNED, 1000, at(2026, 5, 1), at(2026, 5, 1) + HOUR / 2);
    struct meter_invoices inv;
    rate_all(&p, 1, &r, 1, &inv);
    int64_t a = inv.items[0].lines[0].amount_micro;
    assert_int_equal(inv.items[0].total_micro, a);
    meter_invoices_release(&inv);
    return a;
}

static void test_rounding_half_even(void **st)
{
    (void)st;
    /* Exact amounts are per_hour / 2 micro; one cent is 10,000 micro. */
    assert_int_equal(half_hour_amount(10000, "EUR", 2), 0);     /* 0.5 cent -> 0 (even) */
    assert_int_equal(half_hour_amount(30000, "EUR", 2), 20000); /* 1.5 -> 2 */
    assert_int_equal(half_hour_amount(50000, "EUR", 2), 20000); /* 2.5 -> 2 */
    assert_int_equal(half_hour_amount(70000, "EUR", 2), 40000); /* 3.5 -> 4 */
    assert_int_equal(half_hour_amount(50002, "EUR", 2), 30000); /* 2.5001 -> 3 */
    assert_int_equal(half_hour_amount(49998, "EUR", 2), 20000); /* 2.4999 -> 2 */
    /* Below one micro-unit still counts: 5000.5 micro is above half a cent. */
    assert_int_equal(half_hour_amount(10001, "EUR", 2), 10000);
    assert_int_equal(half_hour_amount(9999, "EUR", 2), 0); /* 4999.5 micro */
    /* JPY has no minor unit: 0.5 yen -> 0, 1.5 -> 2, 2.5 -> 2. */
    assert_int_equal(half_hour_amount(1000000, "JPY", 0), 0);
    assert_int_equal(half_hour_amount(3000000, "JPY", 0), 2000000);
    assert_int_equal(half_hour_amount(5000000, "JPY", 0), 2000000);
    /* Rounded once per line, not per record: 3 records of 0.5 cent make one 1.5 -> 2. */
    struct meter_price p = price(1, 1, "EUR", 2, 10000, 0);
    struct meter_record r[3];
    for (int i = 0; i < 3; i++)
        r[i] = rec(i + 1, METER_OWNED, 1000, at(2026, 5, 1) + i * HOUR,
                   at(2026, 5, 1) + i * HOUR + HOUR / 2);
    struct meter_invoices inv;
    rate_all(&p, 1, r, 3, &inv);
    assert_int_equal(inv.items[0].n_lines, 1);
    assert_int_equal(inv.items[0].total_micro, 20000);
    meter_invoices_release(&inv);
}

static void test_rejected(void **st)
{
    (void)st;
    struct meter_price p = price(1, 1, "EUR", 2, 1000000, at(2026, 1, 1));
    struct meter_rater *m = NULL;
    assert_int_equal(meter_rater_new(&p, 1, NULL, NULL, &m), 0);
    int64_t t = at(2026, 2, 1);
    struct meter_record zero = rec(1, METER_OWNED, 1000, t, t);
    struct meter_record neg = rec(2, METER_OWNED, 1000, t, t - 1);
    struct meter_record early = rec(3, METER_OWNED, 1000, at(2025, 12, 31), t);
    struct meter_record cls = rec(4, 7, 1000, t, t + 1);
    struct meter_record milli = rec(5, METER_OWNED, 1500, t, t + 1);
    struct meter_record flavor = rec(6, METER_OWNED, 1000, t, t + 1);
    flavor.flavor_id = 99;
    assert_int_equal(meter_rate(m, &zero), ERR_INVALID);
    assert_int_equal(meter_rate(m, &neg), ERR_INVALID);
    assert_int_equal(meter_rate(m, &early), ERR_NOT_FOUND);
    assert_int_equal(meter_rate(m, &cls), ERR_INVALID);
    assert_int_equal(meter_rate(m, &milli), ERR_INVALID);
    assert_int_equal(meter_rate(m, &flavor), ERR_NOT_FOUND);
    struct meter_record ok[2] = {rec(7, METER_OWNED, 1000, t, t + HOUR), zero};
    size_t failed = 99;
    assert_int_equal(meter_rate_many(m, ok, 2, &failed), ERR_INVALID);
    assert_int_equal(failed, 1);
    struct meter_invoices inv;
    meter_invoices_init(&inv);
    assert_int_equal(meter_invoices_build(m, &inv), 0);
    assert_int_equal(inv.n, 1); /* only the good record; failures added nothing */
    assert_int_equal(inv.items[0].total_micro, 1000000);
    meter_invoices_release(&inv);
    meter_rater_free(m);

    /* Bad price lists. */
    struct meter_price two[2] = {price(1, 1, "EUR", 2, 1, 0), price(1, 2, "EUR", 2, 1, 0)};
    struct error_info ei = {0};
    assert_int_equal(meter_rater_new(two, 2, NULL, &ei, &m), ERR_INVALID);
    assert_string_equal(ei.field, "id");
    two[1] = price(2, 1, "EUR", 2, 1, 0);
    assert_int_equal(meter_rater_new(two, 2, NULL, NULL, &m), ERR_INVALID); /* same instant */
    two[1] = price(2, 2, "EUR", 3, 1, 0);
    assert_int_equal(meter_rater_new(two, 2, NULL, NULL, &m), ERR_INVALID); /* digits */
    two[1] = price(2, 2, "eur", 2, 1, 0);
    assert_int_equal(meter_rater_new(two, 2, NULL, NULL, &m), ERR_INVALID);
    two[1] = price(2, 2, "EUR", 2, -1, 0);
    assert_int_equal(meter_rater_new(two, 2, NULL, NULL, &m), ERR_INVALID);
}

static void test_format_and_text(void **st)
{
    (void)st;
    char out[32];
    assert_int_equal(meter_format_money(-1234567, 2, out, sizeof(out)), 5);
    assert_string_equal(out, "-1.23");
    meter_format_money(0, 2, out, sizeof(out));
    assert_string_equal(out, "0.00");
    meter_format_money(INT64_MIN, 6, out, sizeof(out));
    assert_string_equal(out, "-9223372036854.775808");
    meter_format_money(2000000, 0, out, sizeof(out));
    assert_string_equal(out, "2");
    assert_int_equal(meter_format_money(123456789, 2, out, 4), ERR_TOO_LARGE);
    assert_string_equal(out, "");
    /* Rounded once, half-even, never truncated: 0.695 shows as 0.70 (as a sum of
     * such parts does), 0.685 as 0.68; the figures that disagreed on the Usage page. */
    meter_format_money(695000, 2, out, sizeof(out));
    assert_string_equal(out, "0.70");
    meter_format_money(694999, 2, out, sizeof(out));
    assert_string_equal(out, "0.69");
    meter_format_money(685000, 2, out, sizeof(out));
    assert_string_equal(out, "0.68");
    meter_format_money(-1675000, 2, out, sizeof(out));
    assert_string_equal(out, "-1.68");
    meter_format_money(999995000, 2, out, sizeof(out));
    assert_string_equal(out, "1000.00");
    assert_int_equal(meter_round_money(695000, 2), 700000);
    assert_int_equal(meter_round_money(-685001, 2), -690000);
    assert_int_equal(meter_round_money(1499999, 0), 1000000);
    assert_int_equal(meter_round_money(2500000, 0), 2000000);
    assert_int_equal(meter_round_money(123, 6), 123);
    assert_int_equal(meter_round_money(INT64_MAX, 2), INT64_MAX / 10000 * 10000);

    struct meter_price p = price(1, 1, "EUR", 2, 3600000, 0);
    struct meter_record r = rec(1, METER_OWNED, 500, at(2026, 1, 31), at(2026, 1, 31) + HOUR);
    struct meter_invoices inv;
    rate_all(&p, 1, &r, 1, &inv);
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(meter_invoice_write(&inv.items[0], &b), 0);
    assert_string_equal(
        b.data, "invoice org=7 period=2026-01-01T00:00:00.000Z/2026-02-01T00:00:00.000Z "
                "currency=EUR digits=2 lines=1\n"
                "line project=70 flavor=1 class=owned price=1 usage_ms=3600000 seconds=3600 "
                "gpu_milli_hours=500 unit_price=3.600000 mult_ppm=1000000 amount=1.80\n"
                "total seconds=3600 gpu_milli_hours=500 amount=1.80\n");
    buf_release(&b);
    meter_invoices_release(&inv);
}

static void test_ledger_bytes(void **st)
{
    (void)st;
    struct meter_record r = {0x0102030405060708, 2, 3, 4, METER_OPPORTUNISTIC, 2, 500, -5, 6};
    uint8_t b[METER_RECORD_BYTES], c[METER_RECORD_BYTES];
    meter_record_encode(&r, b);
    assert_memory_equal(b, "GUR1\x01\x02\x03\x04\x05\x06\x07\x08", 12);
    assert_int_equal(b[36], METER_OPPORTUNISTIC); /* after the magic and four int64 */
    struct meter_record d;
    assert_int_equal(meter_record_decode(b, &d), 0);
    assert_true(d.id == r.id && d.org_id == r.org_id && d.project_id == r.project_id &&
                d.flavor_id == r.flavor_id && d.cls == r.cls && d.replicas == r.replicas &&
                d.gpu_milli == r.gpu_milli && d.started_ms == r.started_ms &&
                d.ended_ms == r.ended_ms);
    r.ended_ms++;
    meter_record_encode(&r, c);
    assert_memory_not_equal(b, c, sizeof(b));
    b[0] = 'X';
    assert_int_equal(meter_record_decode(b, &d), ERR_INVALID);
}

static void test_budgets(void **st)
{
    (void)st;
    struct meter_budget b = {.id = 5,
                             .scope = METER_SCOPE_PROJECT,
                             .scope_id = 70,
                             .gpu_milli_hours_limit = 1000,
                             .money_limit_micro = 10000000,
                             .currency = "EUR"};
    struct meter_budget_event ev[METER_MAX_BUDGET_EVENTS];
    struct meter_usage u0 = {400, 0}, u1 = {850, 5000000}, u2 = {1000, 12000000};
    assert_int_equal(meter_budget_crossings(&b, &u0, &u1, ev), 3);
    assert_int_equal(ev[0].kind, METER_BUDGET_GPU_HOURS);
    assert_int_equal(ev[0].percent, 50);
    assert_int_equal(ev[1].percent, 80);
    assert_int_equal(ev[2].kind, METER_BUDGET_MONEY);
    assert_int_equal(ev[2].percent, 50);
    assert_false(meter_budget_exhausted(&b, &u1));
    assert_int_equal(meter_budget_crossings(&b, &u1, &u2, ev), 3);
    assert_int_equal(ev[0].percent, 100);
    assert_int_equal(ev[1].percent, 80);
    assert_int_equal(ev[2].percent, 100);
    assert_true(meter_budget_exhausted(&b, &u2));
    assert_int_equal(meter_budget_crossings(&b, &u2, &u2, ev), 0);

    /* Usage from invoices: project 70 in March 2026, 2 GPU-hours at 1.00 + one other project. */
    struct meter_price p = price(1, 1, "EUR", 2, 1000000, 0);
    struct meter_record r[2] = {rec(1, METER_OWNED, 2000, at(2026, 3, 2), at(2026, 3, 2) + HOUR),
                                rec(2, METER_OWNED, 1000, at(2026, 3, 2), at(2026, 3, 2) + HOUR)};
    r[1].project_id = 71;
    struct meter_invoices inv;
    rate_all(&p, 1, r, 2, &inv);
    b.period_start_ms = at(2026, 3, 1);
    struct meter_usage u;
    assert_int_equal(meter_usage_of(&inv, &b, &u), 0);
    assert_int_equal(u.gpu_milli_hours, 2000);
    assert_int_equal(u.money_micro, 2000000);
    b.scope = METER_SCOPE_ORG;
    b.scope_id = 7;
    assert_int_equal(meter_usage_of(&inv, &b, &u), 0);
    assert_int_equal(u.gpu_milli_hours, 3000);
    assert_int_equal(u.money_micro, 3000000);
    meter_invoices_release(&inv);
}

static void test_showback(void **st)
{
    (void)st;
    int64_t t0 = at(2026, 4, 1), t1 = t0 + 10 * HOUR;
    /* Pool 1: 2 GPUs at 1.00/GPU-h for 10 h = 20.00. Project 70 holds one GPU 6 h
     * (busy half of it); project 71 half a GPU from before t0 to 2 h in (clipped). */
    struct meter_pool pools[2] = {{1, 70, 7, 1000000, 2}, {2, 0, 8, 500000, 1}};
    struct meter_pool_alloc a[3] = {
        {1, 70, 7, 1000, t0, t0 + 6 * HOUR, 3000 * HOUR},
        {1, 71, 7, 500, t0 - HOUR, t0 + 2 * HOUR, -1},
        {2, 80, 8, 1000, t1, t1 + HOUR, -1}, /* outside the period */
    };
    struct meter_showback s;
    meter_showback_init(&s);
    assert_int_equal(meter_showback_compute(pools, 2, a, 3, t0, t1, &s), 0);
    assert_int_equal(s.n_rows, 2);
    assert_int_equal(s.rows[0].project_id, 70);
    assert_int_equal(s.rows[0].cost_micro, 6000000);
    assert_int_equal(s.rows[0].efficiency_ppm, 500000);
    assert_int_equal(s.rows[1].project_id, 71);
    assert_int_equal(s.rows[1].allocated_milli_ms, 500 * 2 * HOUR);
    assert_int_equal(s.rows[1].cost_micro, 1000000);
    assert_int_equal(s.rows[1].efficiency_ppm, -1);
    assert_int_equal(s.pools[0].used_micro, 7000000);
    assert_int_equal(s.pools[0].idle_micro, 13000000);
    assert_int_equal(s.pools[0].total_micro, 20000000);
    assert_int_equal(s.pools[0].efficiency_ppm, 500000);
    assert_int_equal(s.pools[1].used_micro, 0);
    assert_int_equal(s.pools[1].idle_micro, 5000000);
    /* Over-allocation and unknown pools are refused. */
    struct meter_pool_alloc over = {2, 80, 8, 2000, t0, t1, -1};
    assert_int_equal(meter_showback_compute(pools, 2, &over, 1, t0, t1, &s), ERR_INVALID);
    assert_int_equal(s.n_pools, 0);
    over.pool_id = 3;
    assert_int_equal(meter_showback_compute(pools, 2, &over, 1, t0, t1, &s), ERR_INVALID);
    meter_showback_release(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calendar),
        cmocka_unit_test(test_split_dec_jan),
        cmocka_unit_test(test_split_leap_february),
        cmocka_unit_test(test_split_price_change),
        cmocka_unit_test(test_rounding_half_even),
        cmocka_unit_test(test_rejected),
        cmocka_unit_test(test_format_and_text),
        cmocka_unit_test(test_ledger_bytes),
        cmocka_unit_test(test_budgets),
        cmocka_unit_test(test_showback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
