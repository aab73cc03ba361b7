/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Property tests of rating (src/meter/meter.h) over randomized records,
 * 300 seeds of a PRNG of this file (splitmix64). Each seed draws a price
 * list (1-4 flavors, 1-4 versions each at random instants, EUR or JPY,
 * random prices and class multipliers) and 50-400 records of random shapes
 * and lengths (1 ms to 70 days) between November 2023 and April 2024, so
 * that records cross Dec -> Jan, the leap February and price changes. It
 * checks, against a reference model that splits records its own way (a
 * table of month starts built from days-per-month, and a walk over the
 * sorted versions) and rounds with its own 128-bit arithmetic:
 *   - every line equals the reference line: same key, same usage ms, same
 *     GPU figures, same amount; hence no millisecond lost or added;
 *   - the usage of all lines sums to the sum of the record intervals;
 *   - each invoice total is the sum of its lines; lines are strictly ordered;
 *   - rating the records again in a shuffled order gives byte-identical
 *     canonical text;
 *   - every record survives the ledger encoding.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "base/buf.h"
#include "meter/meter.h"

#define DAY INT64_C(86400000)
#define N_SEEDS 300
#define MAX_PRICES 16
#define MAX_RECORDS 400
#define MAX_REF 8192

typedef unsigned __int128 u128;

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t rng_range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next() % (uint64_t)(hi - lo + 1));
}

/* Month starts from 2023-01 to 2025-01, from day counts alone: 2023-01-01 is day 19358. */
static int64_t month_start[25];

static void build_months(void)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t d = 19358;
    for (int i = 0; i < 25; i++) {
        month_start[i] = d * DAY;
        int y = 2023 + i / 12, m = i % 12;
        bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        d += dim[m] + (m == 1 && leap);
    }
}

struct ref_line {
    int64_t org, period, project, price_id;
    int cls;
    int64_t usage_ms;
    u128 milli_ms;
};

struct ref {
    struct ref_line l[MAX_REF];
    size_t n;
};

static void ref_add(struct ref *r, const struct meter_record *rec, int64_t period, int64_t price_id,
                    int64_t ms)
{
    size_t i = 0;
    while (i < r->n && !(r->l[i].org == rec->org_id && r->l[i].period == period &&
                         r->l[i].project == rec->project_id && r->l[i].price_id == price_id &&
                         r->l[i].cls == rec->cls))
        i++;
    if (i == r->n) {
        assert_true(r->n < MAX_REF);
        r->l[r->n++] =
            (struct ref_line){rec->org_id, period, rec->project_id, price_id, rec->cls, 0, 0};
    }
    r->l[i].usage_ms += ms;
    r->l[i].milli_ms += (u128)ms * (uint64_t)((int64_t)rec->replicas * rec->gpu_milli);
}

/* The version of the flavor in force at t, or NULL. */
static const struct meter_price *ref_price(const struct meter_price *p, size_t np, int64_t flavor,
                                           int64_t t)
{
    const struct meter_price *best = NULL;
    for (size_t i = 0; i < np; i++)
        if (p[i].flavor_id == flavor && p[i].effective_from_ms <= t &&
            (!best || p[i].effective_from_ms > best->effective_from_ms))
            best = &p[i];
    return best;
}

static void ref_rate(struct ref *r, const struct meter_price *p, size_t np,
                     const struct meter_record *rec)
{
    /* Cut points: month starts and version starts inside the interval, one ms at a time apart. */
    int64_t t = rec->started_ms;
    while (t < rec->ended_ms) {
        int m = 0;
        while (month_start[m + 1] <= t)
            m++;
        int64_t end = rec->ended_ms < month_start[m + 1] ? rec->ended_ms : month_start[m + 1];
        for (size_t i = 0; i < np; i++)
            if (p[i].flavor_id == rec->flavor_id && p[i].effective_from_ms > t &&
                p[i].effective_from_ms < end)
                end = p[i].effective_from_ms;
        const struct meter_price *v = ref_price(p, np, rec->flavor_id, t);
        assert_non_null(v);
        ref_add(r, rec, month_start[m], v->id, end - t);
        t = end;
    }
}

/* Half-even rounding of num / den to an integer, plainly. */
static int64_t ref_round(u128 num, u128 den)
{
    u128 q = num / den, rem = num % den;
    if (2 * rem > den || (2 * rem == den && (q & 1)))
        q++;
    return (int64_t)q;
}

static void check_seed(uint64_t seed, struct ref *ref)
{
    rng_state = seed;
    int64_t t0 = month_start[10], t1 = month_start[16]; /* 2023-11-01 .. 2024-05-01 */
    struct meter_price prices[MAX_PRICES];
    size_t np = 0;
    int n_flavors = (int)rng_range(1, 4);
    for (int f = 1; f <= n_flavors; f++) {
        bool jpy = rng_range(0, 3) == 0;
        int nv = (int)rng_range(1, 4);
        for (int v = 0; v < nv; v++) {
            struct meter_price *p = &prices[np];
            *p = (struct meter_price){
                .id = (int64_t)np + 1000,
                .flavor_id = f,
                .minor_digits = jpy ? 0 : 2,
                .price_per_hour_micro = rng_range(0, 100000000),
                .mult_ppm = {rng_range(0, 2000000), rng_range(0, 1000000)},
                /* The first version covers everything; later ones at random ms. */
                .effective_from_ms = v == 0 ? 0 : rng_range(t0, t1),
            };
            memcpy(p->currency, jpy ? "JPY" : "EUR", 4);
            bool dup = false;
            for (size_t i = 0; i < np; i++)
                dup |=
                    prices[i].flavor_id == f && prices[i].effective_from_ms == p->effective_from_ms;
            if (!dup)
                np++;
        }
    }
    static struct meter_record recs[MAX_RECORDS];
    size_t nr = (size_t)rng_range(50, MAX_RECORDS);
    int64_t sum_ms = 0;
    static const int32_t shapes[] = {1, 125, 500, 999, 1000, 2000, 8000};
    for (size_t i = 0; i < nr; i++) {
        int64_t len = rng_range(0, 3) == 0 ? rng_range(1, 1000) : rng_range(1, 70 * DAY);
        int64_t start = rng_range(t0, t1 - len);
        recs[i] = (struct meter_record){
            .id = (int64_t)i + 1,
            .org_id = rng_range(1, 3),
            .project_id = rng_range(1, 4),
            .flavor_id = rng_range(1, n_flavors),
            .cls = (int32_t)rng_range(0, 1),
            .replicas = (int32_t)rng_range(1, 8),
            .gpu_milli = shapes[rng_next() % ARRAY_SIZE(shapes)],
            .started_ms = start,
            .ended_ms = start + len,
        };
        sum_ms += len;
        uint8_t bytes[METER_RECORD_BYTES];
        struct meter_record back;
        meter_record_encode(&recs[i], bytes);
        assert_int_equal(meter_record_decode(bytes, &back), 0);
        assert_int_equal(back.ended_ms, recs[i].ended_ms);
        assert_int_equal(back.gpu_milli, recs[i].gpu_milli);
    }

    /* Rate in order, build, serialize. */
    struct meter_rater *m = NULL;
    assert_int_equal(meter_rater_new(prices, np, NULL, NULL, &m), 0);
    assert_int_equal(meter_rate_many(m, recs, nr, NULL), 0);
    struct meter_invoices inv;
    meter_invoices_init(&inv);
    assert_int_equal(meter_invoices_build(m, &inv), 0);
    meter_rater_free(m);
    struct buf text1, text2;
    buf_init(&text1, 1 << 24);
    buf_init(&text2, 1 << 24);
    for (size_t i = 0; i < inv.n; i++)
        assert_int_equal(meter_invoice_write(&inv.items[i], &text1), 0);

    /* The reference. */
    ref->n = 0;
    for (size_t i = 0; i < nr; i++)
        ref_rate(ref, prices, np, &recs[i]);
    assert_int_equal(inv.n_lines, ref->n);
    int64_t lines_ms = 0;
    for (size_t i = 0; i < inv.n; i++) {
        const struct meter_invoice *v = &inv.items[i];
        int64_t total = 0, secs = 0, gmh = 0;
        assert_true(v->n_lines > 0);
        for (size_t j = 0; j < v->n_lines; j++) {
            const struct meter_line *l = &v->lines[j];
            total += l->amount_micro;
            secs += l->seconds;
            gmh += l->gpu_milli_hours;
            lines_ms += l->usage_ms;
            if (j > 0) {
                const struct meter_line *k = &v->lines[j - 1];
                assert_true(
                    k->project_id < l->project_id ||
                    (k->project_id == l->project_id &&
                     (k->flavor_id < l->flavor_id ||
                      (k->flavor_id == l->flavor_id &&
                       (k->cls < l->cls || (k->cls == l->cls && k->price_id < l->price_id))))));
            }
            /* The same line in the reference. */
            const struct ref_line *rl = NULL;
            for (size_t x = 0; x < ref->n && !rl; x++)
                if (ref->l[x].org == v->org_id && ref->l[x].period == v->period_start_ms &&
                    ref->l[x].project == l->project_id && ref->l[x].price_id == l->price_id &&
                    ref->l[x].cls == l->cls)
                    rl = &ref->l[x];
            assert_non_null(rl);
            const struct meter_price *p = NULL;
            for (size_t x = 0; x < np; x++)
                if (prices[x].id == l->price_id)
                    p = &prices[x];
            assert_non_null(p);
            assert_memory_equal(p->currency, v->currency, 4);
            assert_int_equal(l->usage_ms, rl->usage_ms);
            assert_int_equal(l->gpu_milli_hours, ref_round(rl->milli_ms, 3600000));
            assert_int_equal(l->seconds, ref_round((u128)rl->usage_ms, 1000));
            uint64_t step = p->minor_digits == 2 ? 10000 : 1000000;
            u128 num =
                rl->milli_ms * (uint64_t)p->price_per_hour_micro * (uint64_t)p->mult_ppm[l->cls];
            u128 den = (u128)3600000 * 1000 * 1000000 * step;
            assert_int_equal(l->amount_micro, ref_round(num, den) * (int64_t)step);
            /* The line lies in one month: the invoice's. */
            int64_t ps, pe;
            assert_int_equal(meter_period_of(NULL, v->period_start_ms, &ps, &pe), 0);
            assert_int_equal(pe, v->period_end_ms);
        }
        assert_int_equal(total, v->total_micro);
        assert_int_equal(secs, v->total_seconds);
        assert_int_equal(gmh, v->total_gpu_milli_hours);
        if (i > 0) {
            const struct meter_invoice *u = &inv.items[i - 1];
            assert_true(u->org_id < v->org_id ||
                        (u->org_id == v->org_id && (u->period_start_ms < v->period_start_ms ||
                                                    (u->period_start_ms == v->period_start_ms &&
                                                     memcmp(u->currency, v->currency, 4) < 0))));
        }
    }
    assert_int_equal(lines_ms, sum_ms);

    /* Re-rate in a shuffled order: byte-identical text. */
    for (size_t i = nr - 1; i > 0; i--) {
        size_t j = (size_t)(rng_next() % (i + 1));
        struct meter_record t = recs[i];
        recs[i] = recs[j];
        recs[j] = t;
    }
    assert_int_equal(meter_rater_new(prices, np, NULL, NULL, &m), 0);
    for (size_t i = 0; i < nr; i++)
        assert_int_equal(meter_rate(m, &recs[i]), 0);
    struct meter_invoices inv2;
    meter_invoices_init(&inv2);
    assert_int_equal(meter_invoices_build(m, &inv2), 0);
    meter_rater_free(m);
    for (size_t i = 0; i < inv2.n; i++)
        assert_int_equal(meter_invoice_write(&inv2.items[i], &text2), 0);
    assert_int_equal(text1.len, text2.len);
    assert_memory_equal(text1.data, text2.data, text1.len);
    buf_release(&text1);
    buf_release(&text2);
    meter_invoices_release(&inv);
    meter_invoices_release(&inv2);
}

static void test_random_records(void **st)
{
    (void)st;
    build_months();
    assert_int_equal(month_start[13], meter_days_from_civil(2024, 2, 1) * DAY);
    assert_int_equal(month_start[14] - month_start[13], 29 * DAY);
    struct ref *ref = calloc(1, sizeof(*ref));
    assert_non_null(ref);
    for (uint64_t seed = 1; seed <= N_SEEDS; seed++)
        check_seed(seed, ref);
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
