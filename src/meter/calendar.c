/* SPDX-License-Identifier: Apache-2.0 */
/*
 * calendar.c: UTC calendar arithmetic for billing periods without gmtime:
 * Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian,
 * eras of 400 years, exact for every int64 day in range), and the period
 * that holds an instant.
 */
#include "base/common.h"

#include "base/err.h"
#include "meter/meter.h"

#define MS_PER_DAY INT64_C(86400000)
/* 0001-01-01 and 10000-01-01 as day numbers: the instants meter_period_of accepts. */
#define MIN_DAY INT64_C(-719162)
#define MAX_DAY INT64_C(2932897)

int64_t meter_days_from_civil(int64_t year, int month, int day)
{
    int64_t y = year - (month <= 2);
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                         /* [0, 399] */
    int64_t mp = month > 2 ? month - 3 : month + 9;      /* March = 0 */
    int64_t doy = (153 * mp + 2) / 5 + day - 1;          /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

void meter_civil_from_days(int64_t days, int64_t *ret_year, int *ret_month, int *ret_day)
{
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;                                      /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                    /* [0, 11] */
    int d = (int)(doy - (153 * mp + 2) / 5 + 1);
    int m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *ret_year = yoe + era * 400 + (m <= 2);
    *ret_month = m;
    *ret_day = d;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int meter_period_of(const struct meter_period_rule *rule, int64_t t_ms, int64_t *ret_start,
                    int64_t *ret_end)
{
    int64_t day = floor_div(t_ms, MS_PER_DAY);
    if (day < MIN_DAY || day >= MAX_DAY)
        return ERR_INVALID;
    if (!rule || rule->kind == METER_PERIOD_MONTH) {
        int64_t y;
        int m, d;
        meter_civil_from_days(day, &y, &m, &d);
        int64_t start = meter_days_from_civil(y, m, 1);
        int64_t end =
            m == 12 ? meter_days_from_civil(y + 1, 1, 1) : meter_days_from_civil(y, m + 1, 1);
        *ret_start = start * MS_PER_DAY;
        *ret_end = end * MS_PER_DAY;
        return 0;
    }
    if (rule->kind != METER_PERIOD_FIXED || rule->length_ms <= 0 ||
        rule->anchor_ms < MIN_DAY * MS_PER_DAY || rule->anchor_ms > MAX_DAY * MS_PER_DAY)
        return ERR_INVALID;
    /* Both |t| and |anchor| are below 2^59, so the difference cannot overflow. */
    int64_t k = floor_div(t_ms - rule->anchor_ms, rule->length_ms);
    __int128 start = (__int128)rule->anchor_ms + (__int128)k * rule->length_ms;
    __int128 end = start + rule->length_ms;
    if (end > INT64_MAX || start < INT64_MIN)
        return ERR_TOO_LARGE;
    *ret_start = (int64_t)start;
    *ret_end = (int64_t)end;
    return 0;
}
