/* SPDX-License-Identifier: Apache-2.0 */
/* util.c: store helpers shared by the billing files, and the calendar month as text. */
#include "base/common.h"

#include "billing/billing-int.h"

int billing__class_of(const char *priority_class)
{
    return strcmp(priority_class, "owned") == 0 ? METER_OWNED : METER_OPPORTUNISTIC;
}

static int cmp_flavor(const void *x, const void *y)
{
    const struct billing__flavor *a = x, *b = y;
    return (a->id > b->id) - (a->id < b->id);
}

int billing__load_flavors(struct store_conn *c, struct arena *a, struct billing__flavor **ret,
                          size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;
    struct row *rows;
    size_t n;
    struct billing__flavor *out;
    int rc;

    store_filter_init(&f);
    rc = store_list_all(c, &model_flavors, &f, a, &rows, &n, ei);
    if (rc < 0)
        return rc;
    out = arena_calloc(a, n + 1, sizeof(*out));
    for (size_t i = 0; i < n; i++)
        out[i] =
            (struct billing__flavor){model_row_id(&rows[i]), row_int(&rows[i], F_FLAVORS_GPU_MILLI),
                                     row_str(&rows[i], F_FLAVORS_NAME)};
    qsort(out, n, sizeof(*out), cmp_flavor);
    *ret = out;
    *ret_n = n;
    return 0;
}

const struct billing__flavor *billing__flavor(const struct billing__flavor *fl, size_t n,
                                              int64_t id)
{
    struct billing__flavor key = {.id = id};
    return n ? bsearch(&key, fl, n, sizeof(*fl), cmp_flavor) : NULL;
}

int billing_parse_period(const char *s, int64_t *ret_start_ms, int64_t *ret_end_ms,
                         struct error_info *ei)
{
    int year, month, used = 0;
    struct meter_period_rule months = {0};

    if (!s || sscanf(s, "%4d-%2d%n", &year, &month, &used) != 2 || used != 7 || s[used] ||
        year < 1970 || month < 1 || month > 12)
        return errinfo_set(ei, ERR_INVALID, "period",
                           "period '%.20s' is not a month such as 2026-11", s ? s : "");
    return meter_period_of(&months, meter_days_from_civil(year, month, 1) * 86400000, ret_start_ms,
                           ret_end_ms);
}

void billing_format_period(int64_t t_ms, char out[16])
{
    int64_t year;
    int month, day;
    int64_t days = t_ms >= 0 ? t_ms / 86400000 : -((-t_ms + 86399999) / 86400000);
    meter_civil_from_days(days, &year, &month, &day);
    snprintf(out, 16, "%04" PRId64 "-%02d", year, month);
}
