/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meter.h: the metering core (DESIGN.md section 4), a pure library: no I/O,
 * no clock, no globals, no floating point. Usage records, price lists and
 * period rules come in as data; rated invoices, budget crossings and
 * showback figures come back as data for the caller to store, export and
 * act on. docs/metering.md states every rule (splitting, rounding, ordering)
 * with worked examples.
 *
 * Vocabulary:
 * - Time is milliseconds since the Unix epoch (UTC), intervals half-open
 *   [started_ms, ended_ms).
 * - GPU amounts are milli-GPU (1000 = one whole device), as in sched.h.
 * - Money is int64 micro-units of a currency (1,000,000 = one unit).
 *   Nothing is rounded before the invoice line: each line keeps the exact
 *   rational amount (128-bit integers) and is rounded once, half-even, to
 *   the currency's minor unit.
 * - A price is per GPU-hour of a flavor: a record holding 2,500 milli-GPU
 *   for one hour pays 2.5 x the hourly price x its class multiplier.
 *
 * Errors are negative enum err_code values (base/err.h): ERR_INVALID for a
 * malformed input (zero-length or reversed interval, unknown class, bad
 * price), ERR_NOT_FOUND when no price version covers a record's start,
 * ERR_TOO_LARGE when a figure would not fit in 64 bits.
 */
#ifndef GPUAAS_METER_H
#define GPUAAS_METER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define METER_MS_PER_HOUR INT64_C(3600000)
#define METER_MICRO INT64_C(1000000)
/* Bounds that keep every intermediate within 128 bits (see rate.c). */
#define METER_MAX_PRICE_MICRO INT64_C(1000000000000) /* 1,000,000 units per GPU-hour */
#define METER_MAX_MULT_PPM INT64_C(10000000)         /* 10x */
#define METER_MAX_GPU_MILLI INT64_C(100000000)       /* 100,000 GPUs in one record */

/* ---- calendar and periods ---- */

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1..12, day 1..31). */
int64_t meter_days_from_civil(int64_t year, int month, int day);
/* The date of a day number; the inverse of meter_days_from_civil. */
void meter_civil_from_days(int64_t days, int64_t *ret_year, int *ret_month, int *ret_day);

enum meter_period_kind {
    METER_PERIOD_MONTH = 0, /* calendar months in UTC (the default: a zeroed rule) */
    METER_PERIOD_FIXED = 1, /* [anchor + k*length, anchor + (k+1)*length) */
};

struct meter_period_rule {
    enum meter_period_kind kind;
    int64_t length_ms; /* FIXED only, > 0 */
    int64_t anchor_ms; /* FIXED only */
};

/*
 * The period holding instant t: [*ret_start, *ret_end). Returns 0, or
 * ERR_INVALID for a bad rule or an instant outside years 1..9999.
 */
int meter_period_of(const struct meter_period_rule *rule, int64_t t_ms, int64_t *ret_start,
                    int64_t *ret_end);

/* ---- inputs ---- */

enum meter_class {
    METER_OWNED = 0,         /* P1: within the project's guarantee */
    METER_OPPORTUNISTIC = 1, /* P2: on idle capacity, preemptible */
    METER_N_CLASSES
};

/* "owned" / "opportunistic"; NULL for anything else. */
const char *meter_class_name(int cls);

/* One allocation interval of one workload. Ids are the caller's, > 0. */
struct meter_record {
    int64_t id;
    int64_t org_id;
    int64_t project_id;
    int64_t flavor_id;
    int32_t cls;       /* enum meter_class */
    int32_t replicas;  /* >= 1 */
    int32_t gpu_milli; /* per replica: a share 1..999 or whole GPUs (n * 1000) */
    int64_t started_ms;
    int64_t ended_ms; /* > started_ms */
};

/*
 * One version of a flavor's price. A version applies from effective_from_ms
 * until the next version of the same flavor takes effect. The multipliers
 * belong to the version, so a rated line names everything it was priced
 * with by naming the version. currency is an ISO 4217 code ("EUR");
 * minor_digits its decimals (0..6; 2 for EUR), the same for every version
 * in that currency.
 */
struct meter_price {
    int64_t id; /* > 0, unique */
    int64_t flavor_id;
    char currency[4];
    int32_t minor_digits;
    int64_t price_per_hour_micro;      /* per GPU-hour, 0..METER_MAX_PRICE_MICRO */
    int64_t mult_ppm[METER_N_CLASSES]; /* 1,000,000 = 1.0; 0..METER_MAX_MULT_PPM */
    int64_t effective_from_ms;
};

/* ---- rating ---- */

struct meter_rater;

/*
 * A rater holds a private copy of the price list and accumulates rated usage
 * exactly; the order in which records arrive never changes the result.
 * Returns 0 with *ret_rater set (free with meter_rater_free), or
 * ERR_INVALID with ei (may be NULL) saying which price is wrong: duplicate
 * ids, two versions of a flavor from the same instant, bad currency or
 * digits, prices or multipliers out of range. rule NULL means months.
 */
struct error_info;
int meter_rater_new(const struct meter_price *prices, size_t n_prices,
                    const struct meter_period_rule *rule, struct error_info *ei,
                    struct meter_rater **ret_rater);
void meter_rater_free(struct meter_rater *r);

/*
 * Rates one record: splits it at period boundaries and price-version
 * changes (the pieces add up to the interval exactly) and adds each piece
 * to its invoice line. Atomic: on error nothing is added. Returns 0,
 * ERR_INVALID (ended <= started, replicas or gpu_milli out of range,
 * unknown class, an id <= 0) or ERR_NOT_FOUND (no price version of the
 * flavor at started_ms).
 */
int meter_rate(struct meter_rater *r, const struct meter_record *rec);

/*
 * Rates n records; stops at the first error and returns it with
 * *ret_failed (may be NULL) set to its index. Records before it stay rated.
 */
int meter_rate_many(struct meter_rater *r, const struct meter_record *recs, size_t n,
                    size_t *ret_failed);

/*
 * One invoice line: one (project, flavor, class, price version) in one
 * organization's period. usage_ms is wall time summed over records; the
 * GPU figures weight it by replicas x gpu_milli. amount_micro is the only
 * rounded money: the exact sum rounded half-even to the minor unit.
 */
struct meter_line {
    int64_t project_id;
    int64_t flavor_id;
    int32_t cls;
    int64_t price_id;
    int64_t usage_ms;
    int64_t seconds;          /* usage_ms / 1000, rounded half-even */
    int64_t gpu_milli_hours;  /* milli-GPU-hours, rounded half-even */
    int64_t unit_price_micro; /* list price per GPU-hour */
    int64_t mult_ppm;         /* the class multiplier applied */
    int64_t amount_micro;     /* a multiple of the minor unit */
};

/* One organization's invoice for one period in one currency. */
struct meter_invoice {
    int64_t org_id;
    int64_t period_start_ms, period_end_ms;
    char currency[4];
    int32_t minor_digits;
    const struct meter_line *lines; /* owned by the meter_invoices */
    size_t n_lines;
    int64_t total_micro;           /* sum of line amounts */
    int64_t total_gpu_milli_hours; /* sum of line figures */
    int64_t total_seconds;         /* sum of line figures */
};

/* Invoices sorted by (org, period start, currency); lines by (project, flavor, class, price). */
struct meter_invoices {
    struct meter_invoice *items;
    size_t n;
    struct meter_line *line_store;
    size_t n_lines;
};

void meter_invoices_init(struct meter_invoices *inv);
void meter_invoices_release(struct meter_invoices *inv);

/*
 * Builds the invoices of everything rated so far into ret (initialised;
 * its previous content is released). The rater is unchanged and may go on
 * rating. Returns 0 or ERR_TOO_LARGE (an amount or total beyond int64), in
 * which case ret is left empty.
 */
int meter_invoices_build(const struct meter_rater *r, struct meter_invoices *ret);

/*
 * The price of an hour of a line: the list price (micro-units per hour) times
 * the class multiplier (ppm), half-even to the micro-unit, as rated. 0, or
 * ERR_INVALID for a negative input, ERR_TOO_LARGE past int64.
 */
int meter_effective_price(int64_t price_per_hour_micro, int64_t mult_ppm, int64_t *ret);

/*
 * Rounds micro-units to the minor unit (minor_digits 0..6), half-even, the
 * same rule as invoice lines: the one rounding of every money figure shown
 * (showback's used and idle; a total shown beside its parts is the sum of
 * the rounded parts). Negative amounts round symmetrically. Saturates at the
 * int64 range; minor_digits out of range returns micro unchanged.
 */
int64_t meter_round_money(int64_t micro, int minor_digits);

/*
 * Formats micro-units as a decimal with minor_digits decimals ("-12.34"),
 * rounded by meter_round_money (line amounts have nothing finer). Returns the
 * length, or ERR_TOO_LARGE if cap is too small (out gets "" when cap > 0).
 */
int meter_format_money(int64_t micro, int minor_digits, char *out, size_t cap);

/*
 * The canonical text of an invoice, appended to b: the same invoice always
 * gives the same bytes (this is what re-rating is compared on). Returns 0
 * or ERR_TOO_LARGE (the buffer's maximum).
 */
struct buf;
int meter_invoice_write(const struct meter_invoice *inv, struct buf *b);

/* ---- the usage ledger ---- */

#define METER_RECORD_BYTES 61

/*
 * The canonical bytes of a record for the tamper-evident ledger: the four
 * bytes "GUR1", then id, org, project, flavor (int64), class (one byte),
 * replicas, gpu_milli (int32), started, ended (int64), all big-endian two's
 * complement: 61 bytes. The caller chains them: h[0] = BLAKE2b-256(32 zero bytes ||
 * bytes[0]), h[i] = BLAKE2b-256(h[i-1] || bytes[i]); this library does no
 * hashing so that it stays dependency-free.
 */
void meter_record_encode(const struct meter_record *rec, uint8_t out[METER_RECORD_BYTES]);
/* The inverse; ERR_INVALID when the bytes are not an encoded record. */
int meter_record_decode(const uint8_t in[METER_RECORD_BYTES], struct meter_record *ret);

/* ---- budgets ---- */

enum meter_scope { METER_SCOPE_PROJECT = 0, METER_SCOPE_ORG = 1 };
enum meter_budget_kind { METER_BUDGET_GPU_HOURS = 0, METER_BUDGET_MONEY = 1 };

/* A budget for one project or organization in one period; a limit <= 0 is none. */
struct meter_budget {
    int64_t id;
    int32_t scope;    /* enum meter_scope */
    int64_t scope_id; /* project or organization id */
    int64_t period_start_ms;
    int64_t gpu_milli_hours_limit;
    int64_t money_limit_micro;
    char currency[4]; /* of money_limit_micro */
};

/* Rated usage of a budget's scope in its period. */
struct meter_usage {
    int64_t gpu_milli_hours;
    int64_t money_micro;
};

/*
 * Sums the lines of the invoices in a budget's scope, period and currency
 * (GPU-hours over every currency). Returns 0.
 */
int meter_usage_of(const struct meter_invoices *inv, const struct meter_budget *b,
                   struct meter_usage *ret_usage);

struct meter_budget_event {
    int64_t budget_id;
    int32_t kind;    /* enum meter_budget_kind */
    int32_t percent; /* 50, 80 or 100 */
};

#define METER_MAX_BUDGET_EVENTS 6

/*
 * The thresholds (50, 80, 100 % of each limit) that usage crossed going
 * from before to after: before < threshold <= after. Events are written in
 * order (GPU-hours first, then money; lower percent first) to ret_events,
 * which has room for METER_MAX_BUDGET_EVENTS. Returns how many.
 */
int meter_budget_crossings(const struct meter_budget *b, const struct meter_usage *before,
                           const struct meter_usage *after,
                           struct meter_budget_event ret_events[METER_MAX_BUDGET_EVENTS]);

/* True when a limit is reached (usage >= limit): new P2 work may be refused. */
bool meter_budget_exhausted(const struct meter_budget *b, const struct meter_usage *usage);

/* ---- showback ---- */

/* A pool of GPUs and what one GPU-hour of it costs its owner. */
struct meter_pool {
    int64_t id;
    int64_t owner_project_id; /* 0 when an organization owns it */
    int64_t owner_org_id;
    int64_t cost_per_gpu_hour_micro; /* 0..METER_MAX_PRICE_MICRO */
    int32_t n_gpus;
};

/* An allocation on a pool's GPUs; busy_milli_ms < 0 when not measured. */
struct meter_pool_alloc {
    int64_t pool_id;
    int64_t project_id;
    int64_t org_id;
    int32_t gpu_milli; /* total over replicas */
    int64_t started_ms, ended_ms;
    int64_t busy_milli_ms; /* GPU-busy time measured, milli-GPU x ms */
};

/* A project's share of one pool over the period. */
struct meter_showback_row {
    int64_t pool_id;
    int64_t project_id;
    int64_t org_id;
    int64_t allocated_milli_ms;
    int64_t busy_milli_ms;  /* -1 when no allocation of the row was measured */
    int64_t cost_micro;     /* allocated x cost, rounded half-even to micro */
    int64_t efficiency_ppm; /* busy / allocated, -1 when unknown */
};

struct meter_showback_pool {
    int64_t pool_id;
    int64_t capacity_milli_ms;
    int64_t allocated_milli_ms;
    int64_t used_micro;     /* sum of the pool's rows */
    int64_t idle_micro;     /* unallocated capacity x cost, rounded half-even */
    int64_t total_micro;    /* used + idle */
    int64_t efficiency_ppm; /* over the measured rows; -1 when none */
};

struct meter_showback {
    struct meter_showback_pool *pools; /* in the order given */
    size_t n_pools;
    struct meter_showback_row *rows; /* sorted by (pool, project) */
    size_t n_rows;
};

void meter_showback_init(struct meter_showback *s);
void meter_showback_release(struct meter_showback *s);

/*
 * Showback of pools over [from_ms, to_ms): allocations are clipped to it.
 * ret is initialised; its previous content is released. Returns 0, or
 * ERR_INVALID (a bad interval or pool, an allocation on an unknown pool,
 * more allocated than a pool holds) or ERR_TOO_LARGE; ret is empty then.
 */
int meter_showback_compute(const struct meter_pool *pools, size_t n_pools,
                           const struct meter_pool_alloc *allocs, size_t n_allocs, int64_t from_ms,
                           int64_t to_ms, struct meter_showback *ret);

#endif
