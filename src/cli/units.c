/* SPDX-License-Identifier: Apache-2.0 */
/*
 * units.c: human quantities to exact integers. One decimal reader serves
 * every unit: it keeps the digits as an integer scaled by 10^decimals and
 * refuses what it cannot hold exactly (too many decimals, overflow), so a
 * price is never rounded on its way to the server.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "cli/units.h"

static const struct {
    const char *suffix;
    enum units_kind kind;
} suffixes[] = {
    {"_milli", UNITS_MILLI},
    {"_mib", UNITS_MIB},
    {"_micros", UNITS_MICROS},
};

enum units_kind units_of_field(const char *field_name)
{
    size_t n = strlen(field_name);

    for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
        size_t k = strlen(suffixes[i].suffix);
        if (n > k && strcmp(field_name + n - k, suffixes[i].suffix) == 0)
            return suffixes[i].kind;
    }
    return UNITS_NONE;
}

size_t units_stem_len(const char *field_name)
{
    size_t n = strlen(field_name);

    for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
        size_t k = strlen(suffixes[i].suffix);
        if (n > k && strcmp(field_name + n - k, suffixes[i].suffix) == 0)
            return n - k;
    }
    return 0;
}

/*
 * Reads "D+[.D+]" of exactly len bytes as an integer scaled by 10^decimals.
 * Returns 0; -1 for a malformed number, -2 for too many decimals, -3 when
 * the value exceeds max.
 */
static int read_decimal(const char *s, size_t len, int decimals, int64_t max, int64_t *ret)
{
    int64_t v = 0;
    size_t i = 0;
    int frac = -1, digits = 0;

    for (; i < len; i++) {
        if (s[i] == '.' && frac < 0 && digits > 0) {
            frac = 0;
            continue;
        }
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (frac >= 0 && ++frac > decimals) {
            if (s[i] != '0')
                return -2; /* trailing zeros beyond the precision change nothing */
            continue;
        }
        if (v > (max - (s[i] - '0')) / 10)
            return -3;
        v = v * 10 + (s[i] - '0');
        digits++;
    }
    if (digits == 0 || frac == 0)
        return -1; /* "", ".", "5." */
    for (int k = frac < 0 ? 0 : (frac > decimals ? decimals : frac); k < decimals; k++) {
        if (v > max / 10)
            return -3;
        v *= 10;
    }
    if (v > max)
        return -3;
    *ret = v;
    return 0;
}

/* A size: the number, then an optional unit; MiB-exact. */
static int parse_mib(const char *s, int64_t max, int64_t *ret, char *err, size_t err_size)
{
    static const struct {
        const char *unit;
        int64_t mib;
    } units[] = {{"MiB", 1}, {"GiB", 1024}, {"TiB", 1024 * 1024}};
    size_t len = strlen(s);
    int64_t mult = 1, v;
    int rc;

    for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
        size_t k = strlen(units[i].unit);
        if (len > k && strcasecmp(s + len - k, units[i].unit) == 0) {
            mult = units[i].mib;
            len -= k;
            break;
        }
    }
    /* 3 decimals are enough for any whole number of MiB in GiB or TiB (1/1024 > 0.0009) */
    rc = read_decimal(s, len, 3, INT64_MAX / (1024 * 1024), &v);
    if (rc == 0 && (v * mult) % 1000 != 0)
        rc = -4;
    if (rc == 0) {
        v = v * mult / 1000;
        if (v > max)
            rc = -3;
    }
    if (rc == -1 || rc == -2) {
        snprintf(err, err_size,
                 "'%s' is not a size; write it as 512MiB, 128GiB or 1TiB (a plain "
                 "number is MiB)",
                 s);
        return -1;
    }
    if (rc == -4) {
        snprintf(err, err_size, "'%s' is not a whole number of MiB", s);
        return -1;
    }
    if (rc == -3) {
        snprintf(err, err_size, "'%s' is more than %" PRId64 " MiB", s, max);
        return -1;
    }
    *ret = v;
    return 0;
}

int units_parse(enum units_kind kind, const char *s, int64_t max, int64_t *ret, char *err,
                size_t err_size)
{
    int decimals = kind == UNITS_MILLI ? 3 : kind == UNITS_MICROS ? 6 : 0;
    const char *what = kind == UNITS_MILLI    ? "a number such as 16 or 0.5"
                       : kind == UNITS_MICROS ? "an amount such as 1.80"
                                              : "a whole number";
    int rc;

    if (kind == UNITS_MIB)
        return parse_mib(s, max, ret, err, err_size);
    rc = read_decimal(s, strlen(s), decimals, max, ret);
    if (rc == -1)
        snprintf(err, err_size, "'%s' is not %s", s, what);
    else if (rc == -2)
        snprintf(err, err_size, "'%s' has more than %d decimals", s, decimals);
    else if (rc == -3)
        snprintf(err, err_size, "'%s' is too large", s);
    return rc < 0 ? -1 : 0;
}

char *units_format_mib(int64_t mib)
{
    if (mib != 0 && mib % (1024 * 1024) == 0)
        return xasprintf("%" PRId64 " TiB", mib / (1024 * 1024));
    if (mib != 0 && mib % 1024 == 0)
        return xasprintf("%" PRId64 " GiB", mib / 1024);
    return xasprintf("%" PRId64 " MiB", mib);
}
