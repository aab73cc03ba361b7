/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rate.c: rating. A rater keeps the price list sorted by (flavor, effective
 * from) and an open-addressing table of invoice lines keyed by (org, period,
 * project, class, price version); each line accumulates its usage exactly
 * as integers (wall ms, and milli-GPU x ms in 128 bits). Money is computed
 * only when invoices are built, once per line, so the order of records
 * never matters and re-rating gives the same invoices bit for bit.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/err.h"
#include "meter/meter-int.h"
#include "meter/meter.h"

/* ms per hour x milli per GPU x ppm per 1.0: the denominator of every amount. */
#define AMOUNT_DEN ((uint64_t)METER_MS_PER_HOUR * 1000u * (uint64_t)METER_MICRO)

struct flavor_range {
    int64_t flavor_id;
    uint32_t first, count; /* into rater.prices */
};

struct acc {
    meter_u128 milli_ms; /* sum of replicas x gpu_milli x ms */
    int64_t org_id;      /* 0: empty slot */
    int64_t period_start;
    int64_t period_end;
    int64_t project_id;
    int64_t usage_ms;
    uint32_t price_idx;
    int32_t cls;
};

struct meter_rater {
    struct meter_price *prices; /* sorted by (flavor, effective_from) */
    size_t n_prices;
    struct flavor_range *flavors; /* sorted by flavor id */
    size_t n_flavors;
    struct meter_period_rule rule;
    struct acc *slots;
    size_t cap, used; /* cap is a power of two */
};

int meter_round_mul_div(meter_u128 q, uint64_t p, uint64_t d, uint64_t step, int64_t *ret)
{
    meter_u128 a = q / d, b = q % d;
    if (p != 0 && a > ~(meter_u128)0 / p)
        return ERR_TOO_LARGE;
    meter_u128 bp = b * p; /* b < d and d * p < 2^128: no overflow */
    meter_u128 whole = a * p + bp / d, rem = bp % d;
    meter_u128 quot = whole / step, m = whole % step;
    meter_u128 twice = 2 * (m * d + rem), unit = (meter_u128)step * d;
    if (twice > unit || (twice == unit && (quot & 1)))
        quot++;
    meter_u128 result = quot * step;
    if (quot > (meter_u128)INT64_MAX || result > (meter_u128)INT64_MAX)
        return ERR_TOO_LARGE;
    *ret = (int64_t)result;
    return 0;
}

int meter_effective_price(int64_t price_per_hour_micro, int64_t mult_ppm, int64_t *ret)
{
    if (price_per_hour_micro < 0 || mult_ppm < 0)
        return ERR_INVALID;
    return meter_round_mul_div((meter_u128)(uint64_t)price_per_hour_micro, (uint64_t)mult_ppm,
                               (uint64_t)METER_MICRO, 1, ret);
}

const char *meter_class_name(int cls)
{
    switch (cls) {
    case METER_OWNED:
        return "owned";
    case METER_OPPORTUNISTIC:
        return "opportunistic";
    default:
        return NULL;
    }
}

static int cmp_price(const void *a, const void *b)
{
    const struct meter_price *x = a, *y = b;
    if (x->flavor_id != y->flavor_id)
        return x->flavor_id < y->flavor_id ? -1 : 1;
    if (x->effective_from_ms != y->effective_from_ms)
        return x->effective_from_ms < y->effective_from_ms ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int cmp_price_id(const void *a, const void *b)
{
    int64_t x = (*(const struct meter_price *const *)a)->id;
    int64_t y = (*(const struct meter_price *const *)b)->id;
    return (x > y) - (x < y);
}

static bool currency_ok(const char c[4])
{
    for (int i = 0; i < 3; i++)
        if (c[i] < 'A' || c[i] > 'Z')
            return false;
    return c[3] == '\0';
}

static int check_prices(struct meter_price *p, size_t n, struct error_info *ei)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i].id <= 0)
            return errinfo_set(ei, ERR_INVALID, "id", "price id %" PRId64 " is not positive",
                               p[i].id);
        if (!currency_ok(p[i].currency))
            return errinfo_set(ei, ERR_INVALID, "currency",
                               "price %" PRId64 ": currency is not three capital letters", p[i].id);
        if (p[i].minor_digits < 0 || p[i].minor_digits > 6)
            return errinfo_set(ei, ERR_INVALID, "minor_digits",
                               "price %" PRId64 ": minor digits must be 0..6", p[i].id);
        if (p[i].price_per_hour_micro < 0 || p[i].price_per_hour_micro > METER_MAX_PRICE_MICRO)
            return errinfo_set(ei, ERR_INVALID, "price_per_hour_micro",
                               "price %" PRId64 ": price out of range", p[i].id);
        for (int c = 0; c < METER_N_CLASSES; c++)
            if (p[i].mult_ppm[c] < 0 || p[i].mult_ppm[c] > METER_MAX_MULT_PPM)
                return errinfo_set(ei, ERR_INVALID, "mult_ppm",
                                   "price %" PRId64 ": multiplier out of range", p[i].id);
        if (i > 0 && p[i].flavor_id == p[i - 1].flavor_id &&
            p[i].effective_from_ms == p[i - 1].effective_from_ms)
            return errinfo_set(ei, ERR_INVALID, "effective_from_ms",
                               "prices %" PRId64 " and %" PRId64 " take effect at the same instant",
                               p[i - 1].id, p[i].id);
    }
    /* Unique ids; one number of digits per currency. */
    const struct meter_price **by_id = xcalloc(n ? n : 1, sizeof(*by_id));
    for (size_t i = 0; i < n; i++)
        by_id[i] = &p[i];
    qsort(by_id, n, sizeof(*by_id), cmp_price_id);
    int rc = 0;
    for (size_t i = 1; i < n && rc == 0; i++)
        if (by_id[i]->id == by_id[i - 1]->id)
            rc = errinfo_set(ei, ERR_INVALID, "id", "price id %" PRId64 " is used twice",
                             by_id[i]->id);
    free(by_id);
    for (size_t i = 0; i < n && rc == 0; i++)
        for (size_t j = i + 1; j < n && rc == 0; j++)
            if (memcmp(p[i].currency, p[j].currency, 4) == 0 &&
                p[i].minor_digits != p[j].minor_digits)
                rc = errinfo_set(ei, ERR_INVALID, "minor_digits",
                                 "currency '%s' has two numbers of minor digits", p[i].currency);
    return rc;
}

int meter_rater_new(const struct meter_price *prices, size_t n_prices,
                    const struct meter_period_rule *rule, struct error_info *ei,
                    struct meter_rater **ret_rater)
{
    if (n_prices > UINT32_MAX / 2)
        return errinfo_set(ei, ERR_TOO_LARGE, NULL, "too many prices");
    struct meter_period_rule r = {0};
    if (rule)
        r = *rule;
    int64_t s, e;
    if (meter_period_of(&r, 0, &s, &e) < 0)
        return errinfo_set(ei, ERR_INVALID, "period", "invalid period rule");
    struct meter_price *p = xcalloc(n_prices ? n_prices : 1, sizeof(*p));
    if (n_prices)
        memcpy(p, prices, n_prices * sizeof(*p));
    qsort(p, n_prices, sizeof(*p), cmp_price);
    int rc = check_prices(p, n_prices, ei);
    if (rc < 0) {
        free(p);
        return rc;
    }
    struct meter_rater *m = xcalloc(1, sizeof(*m));
    m->prices = p;
    m->n_prices = n_prices;
    m->rule = r;
    m->flavors = xcalloc(n_prices ? n_prices : 1, sizeof(*m->flavors));
    for (size_t i = 0; i < n_prices; i++) {
        if (m->n_flavors == 0 || m->flavors[m->n_flavors - 1].flavor_id != p[i].flavor_id)
            m->flavors[m->n_flavors++] = (struct flavor_range){p[i].flavor_id, (uint32_t)i, 0};
        m->flavors[m->n_flavors - 1].count++;
    }
    m->cap = 1024;
    m->slots = xcalloc(m->cap, sizeof(*m->slots));
    *ret_rater = m;
    return 0;
}

void meter_rater_free(struct meter_rater *r)
{
    if (!r)
        return;
    free(r->prices);
    free(r->flavors);
    free(r->slots);
    free(r);
}

static const struct flavor_range *find_flavor(const struct meter_rater *r, int64_t flavor_id)
{
    size_t lo = 0, hi = r->n_flavors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->flavors[mid].flavor_id < flavor_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n_flavors && r->flavors[lo].flavor_id == flavor_id ? &r->flavors[lo] : NULL;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 32);
}

static uint64_t acc_hash(int64_t org, int64_t period, int64_t project, uint32_t price, int32_t cls)
{
    uint64_t h = mix(0, (uint64_t)org);
    h = mix(h, (uint64_t)period);
    h = mix(h, (uint64_t)project);
    return mix(h, ((uint64_t)price << 8) | (uint32_t)cls);
}

static void grow(struct meter_rater *r)
{
    size_t ncap = r->cap * 2;
    struct acc *ns = xcalloc(ncap, sizeof(*ns));
    for (size_t i = 0; i < r->cap; i++) {
        struct acc *a = &r->slots[i];
        if (!a->org_id)
            continue;
        size_t j =
            acc_hash(a->org_id, a->period_start, a->project_id, a->price_idx, a->cls) & (ncap - 1);
        while (ns[j].org_id)
            j = (j + 1) & (ncap - 1);
        ns[j] = *a;
    }
    free(r->slots);
    r->slots = ns;
    r->cap = ncap;
}

static void add_piece(struct meter_rater *r, const struct meter_record *rec, int64_t ps, int64_t pe,
                      uint32_t price_idx, int64_t ms, int64_t milli)
{
    if ((r->used + 1) * 2 > r->cap)
        grow(r);
    size_t mask = r->cap - 1;
    size_t j = acc_hash(rec->org_id, ps, rec->project_id, price_idx, rec->cls) & mask;
    for (;; j = (j + 1) & mask) {
        struct acc *a = &r->slots[j];
        if (!a->org_id) {
            *a = (struct acc){0, rec->org_id, ps, pe, rec->project_id, 0, price_idx, rec->cls};
            r->used++;
        } else if (a->org_id != rec->org_id || a->period_start != ps ||
                   a->project_id != rec->project_id || a->price_idx != price_idx ||
                   a->cls != rec->cls) {
            continue;
        }
        a->usage_ms += ms;
        a->milli_ms += (meter_u128)(uint64_t)ms * (uint64_t)milli;
        return;
    }
}

int meter_rate(struct meter_rater *r, const struct meter_record *rec)
{
    if (rec->id <= 0 || rec->org_id <= 0 || rec->project_id <= 0 || rec->cls < 0 ||
        rec->cls >= METER_N_CLASSES || rec->replicas < 1 || rec->gpu_milli < 1 ||
        (rec->gpu_milli >= 1000 && rec->gpu_milli % 1000 != 0) || rec->ended_ms <= rec->started_ms)
        return ERR_INVALID;
    int64_t milli = (int64_t)rec->replicas * rec->gpu_milli;
    if (milli > METER_MAX_GPU_MILLI)
        return ERR_INVALID;
    int64_t ps, pe, ps2, pe2;
    /* Both ends in range means every instant between is (periods are monotone). */
    if (meter_period_of(&r->rule, rec->started_ms, &ps, &pe) < 0 ||
        meter_period_of(&r->rule, rec->ended_ms - 1, &ps2, &pe2) < 0)
        return ERR_INVALID;
    const struct flavor_range *f = find_flavor(r, rec->flavor_id);
    if (!f || r->prices[f->first].effective_from_ms > rec->started_ms)
        return ERR_NOT_FOUND;
    /* The version in force at the start: the last one effective at or before it. */
    uint32_t lo = f->first, hi = f->first + f->count; /* invariant: prices[lo] in force */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->prices[mid].effective_from_ms <= rec->started_ms)
            lo = mid;
        else
            hi = mid;
    }
    uint32_t pi = lo, pend = f->first + f->count;
    int64_t t = rec->started_ms;
    while (t < rec->ended_ms) {
        if (t >= pe && meter_period_of(&r->rule, t, &ps, &pe) < 0)
            return ERR_INTERNAL; /* cannot happen: both ends were checked */
        int64_t end = rec->ended_ms < pe ? rec->ended_ms : pe;
        if (pi + 1 < pend && r->prices[pi + 1].effective_from_ms < end)
            end = r->prices[pi + 1].effective_from_ms;
        add_piece(r, rec, ps, pe, pi, end - t, milli);
        t = end;
        while (pi + 1 < pend && r->prices[pi + 1].effective_from_ms <= t)
            pi++;
    }
    return 0;
}

int meter_rate_many(struct meter_rater *r, const struct meter_record *recs, size_t n,
                    size_t *ret_failed)
{
    for (size_t i = 0; i < n; i++) {
        int rc = meter_rate(r, &recs[i]);
        if (rc < 0) {
            if (ret_failed)
                *ret_failed = i;
            return rc;
        }
    }
    return 0;
}

/* ---- invoices ---- */

void meter_invoices_init(struct meter_invoices *inv)
{
    memset(inv, 0, sizeof(*inv));
}

void meter_invoices_release(struct meter_invoices *inv)
{
    if (!inv)
        return;
    free(inv->items);
    free(inv->line_store);
    meter_invoices_init(inv);
}

struct sort_ctx_entry {
    const struct acc *a;
    const struct meter_price *p;
};

static int cmp_entry(const void *x, const void *y)
{
    const struct sort_ctx_entry *e = x, *f = y;
#define CMP_(u, v)                                                                                 \
    do {                                                                                           \
        if ((u) != (v))                                                                            \
            return (u) < (v) ? -1 : 1;                                                             \
    } while (0)
    CMP_(e->a->org_id, f->a->org_id);
    CMP_(e->a->period_start, f->a->period_start);
    int c = memcmp(e->p->currency, f->p->currency, 4);
    if (c)
        return c < 0 ? -1 : 1;
    CMP_(e->a->project_id, f->a->project_id);
    CMP_(e->p->flavor_id, f->p->flavor_id);
    CMP_(e->a->cls, f->a->cls);
    CMP_(e->p->id, f->p->id);
#undef CMP_
    return 0;
}

static uint64_t pow10_u64(int n)
{
    uint64_t v = 1;
    while (n-- > 0)
        v *= 10;
    return v;
}

static int line_of(const struct acc *a, const struct meter_price *p, struct meter_line *ret)
{
    struct meter_line l = {
        .project_id = a->project_id,
        .flavor_id = p->flavor_id,
        .cls = a->cls,
        .price_id = p->id,
        .usage_ms = a->usage_ms,
        .unit_price_micro = p->price_per_hour_micro,
        .mult_ppm = p->mult_ppm[a->cls],
    };
    uint64_t pm = (uint64_t)p->price_per_hour_micro * (uint64_t)p->mult_ppm[a->cls]; /* <= 1e19 */
    int rc = meter_round_mul_div(a->milli_ms, pm, AMOUNT_DEN, pow10_u64(6 - p->minor_digits),
                                 &l.amount_micro);
    if (rc == 0)
        rc =
            meter_round_mul_div(a->milli_ms, 1, (uint64_t)METER_MS_PER_HOUR, 1, &l.gpu_milli_hours);
    if (rc == 0)
        rc = meter_round_mul_div((meter_u128)(uint64_t)a->usage_ms, 1, 1000, 1, &l.seconds);
    if (rc == 0)
        *ret = l;
    return rc;
}

static int add_checked(int64_t *sum, int64_t v)
{
    if (__builtin_add_overflow(*sum, v, sum))
        return ERR_TOO_LARGE;
    return 0;
}

int meter_invoices_build(const struct meter_rater *r, struct meter_invoices *ret)
{
    meter_invoices_release(ret);
    size_t n = r->used;
    struct sort_ctx_entry *es = xcalloc(n ? n : 1, sizeof(*es));
    size_t k = 0;
    for (size_t i = 0; i < r->cap; i++)
        if (r->slots[i].org_id)
            es[k++] = (struct sort_ctx_entry){&r->slots[i], &r->prices[r->slots[i].price_idx]};
    qsort(es, n, sizeof(*es), cmp_entry);
    struct meter_invoices out = {0};
    out.line_store = xcalloc(n ? n : 1, sizeof(*out.line_store));
    out.n_lines = n;
    size_t n_inv = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || es[i].a->org_id != es[i - 1].a->org_id ||
            es[i].a->period_start != es[i - 1].a->period_start ||
            memcmp(es[i].p->currency, es[i - 1].p->currency, 4) != 0)
            n_inv++;
    out.items = xcalloc(n_inv ? n_inv : 1, sizeof(*out.items));
    int rc = 0;
    struct meter_invoice *cur = NULL;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct acc *a = es[i].a;
        const struct meter_price *p = es[i].p;
        if (!cur || a->org_id != cur->org_id || a->period_start != cur->period_start_ms ||
            memcmp(p->currency, cur->currency, 4) != 0) {
            cur = &out.items[out.n++];
            cur->org_id = a->org_id;
            cur->period_start_ms = a->period_start;
            cur->period_end_ms = a->period_end;
            memcpy(cur->currency, p->currency, 4);
            cur->minor_digits = p->minor_digits;
            cur->lines = &out.line_store[i];
        }
        struct meter_line *l = &out.line_store[i];
        rc = line_of(a, p, l);
        if (rc == 0)
            rc = add_checked(&cur->total_micro, l->amount_micro);
        if (rc == 0)
            rc = add_checked(&cur->total_gpu_milli_hours, l->gpu_milli_hours);
        if (rc == 0)
            rc = add_checked(&cur->total_seconds, l->seconds);
        cur->n_lines++;
    }
    free(es);
    if (rc < 0) {
        meter_invoices_release(&out);
        return rc;
    }
    *ret = out;
    return 0;
}
