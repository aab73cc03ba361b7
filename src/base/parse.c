/* SPDX-License-Identifier: Apache-2.0 */
/* parse.c: strict number parsing on top of strtoll. */
#include "base/common.h"
#include "base/err.h"
#include "base/parse.h"

int parse_int64(const char *s, int64_t min, int64_t max, int64_t *ret)
{
    char *end;
    long long v;

    if (!s || !*s || (*s != '-' && *s != '+' && (*s < '0' || *s > '9')))
        return ERR_INVALID;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (*end != '\0')
        return ERR_INVALID;
    if (errno == ERANGE || v < min || v > max)
        return ERR_TOO_LARGE;
    *ret = (int64_t)v;
    return 0;
}

int parse_duration_s(const char *s, int64_t *ret_seconds)
{
    char num[32];
    size_t n = s ? strlen(s) : 0;
    int64_t mult = 1, v;

    if (n == 0 || n >= sizeof(num))
        return ERR_INVALID;
    memcpy(num, s, n + 1);
    switch (num[n - 1]) {
    case 's':
        mult = 1;
        break;
    case 'm':
        mult = 60;
        break;
    case 'h':
        mult = 3600;
        break;
    case 'd':
        mult = 86400;
        break;
    default:
        if (num[n - 1] < '0' || num[n - 1] > '9')
            return ERR_INVALID;
        n++;
    }
    num[n - 1] = '\0';
    if (parse_int64(num, 0, INT64_MAX / 86400, &v) < 0)
        return ERR_INVALID;
    *ret_seconds = v * mult;
    return 0;
}
