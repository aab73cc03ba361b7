/* SPDX-License-Identifier: Apache-2.0 */
/* timeutil.c: clocks and RFC 3339 in UTC, without the non-reentrant gmtime. */
#include "base/common.h"
#include "base/err.h"
#include "base/timeutil.h"

int64_t time_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

int64_t time_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t time_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_add_ms(int64_t t, int64_t d)
{
    if (d <= 0)
        return t;
    return t > INT64_MAX - d ? INT64_MAX : t + d;
}

void time_format_rfc3339(int64_t epoch_s, char *out, size_t size)
{
    struct tm tm;
    time_t t = (time_t)epoch_s;
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void time_format_rfc3339_ms(int64_t epoch_ms, char *out, size_t size)
{
    struct tm tm;
    time_t t = (time_t)(epoch_ms / 1000);
    char base[32];
    gmtime_r(&t, &tm);
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, size, "%s.%03dZ", base, (int)(epoch_ms % 1000));
}

static int digits(const char **p, int n, int *ret)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9')
            return ERR_INVALID;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *ret = v;
    return 0;
}

static int expect(const char **p, char c)
{
    if (**p != c)
        return ERR_INVALID;
    (*p)++;
    return 0;
}

int time_parse_rfc3339(const char *s, int64_t *ret_epoch_s)
{
    int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
    struct tm tm;
    const char *p = s;
    int64_t t;

    if (digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) || expect(&p, '-') ||
        digits(&p, 2, &d))
        return ERR_INVALID;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return ERR_INVALID;
    p++;
    if (digits(&p, 2, &h) || expect(&p, ':') || digits(&p, 2, &mi) || expect(&p, ':') ||
        digits(&p, 2, &sec))
        return ERR_INVALID;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return ERR_INVALID;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p == '+' ? 1 : -1;
        p++;
        if (digits(&p, 2, &oh) || expect(&p, ':') || digits(&p, 2, &om))
            return ERR_INVALID;
    } else {
        return ERR_INVALID;
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || oh > 23 ||
        om > 59)
        return ERR_INVALID;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = (int64_t)timegm(&tm);
    /* timegm normalises 31 February into March; refuse such dates. */
    {
        struct tm check;
        time_t tt = (time_t)t;
        gmtime_r(&tt, &check);
        if (check.tm_mday != d)
            return ERR_INVALID;
    }
    *ret_epoch_s = t - sign * (oh * 3600 + om * 60);
    return 0;
}
