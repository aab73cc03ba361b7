/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readings.c: the per-GPU reading every collector produces, and a set of
 * them with a hash index on (uuid, MIG instance), so that mapping 200,000
 * samples of a 10,000-GPU scrape costs one hash lookup each.
 */
#include "base/common.h"
#include "base/alloc.h"
#include "base/err.h"
#include "inventory/inventory-int.h"

#include <math.h>

#define READINGS_DEFAULT_MAX 100000

bool inv_has(double v)
{
    return !isnan(v);
}

void inv_reading_clear(struct inv_reading *r)
{
    memset(r, 0, sizeof(*r));
    r->mig_instance = -1;
    r->index = -1;
    r->mig_mode = -1;
    r->n_procs = -1;
    r->util_pct = r->gr_active = NAN;
    r->fb_used_mib = r->fb_free_mib = r->fb_total_mib = r->fb_reserved_mib = NAN;
    r->power_w = r->temp_c = NAN;
}

double inv_reading_activity(const struct inv_reading *r)
{
    if (inv_has(r->gr_active))
        return r->gr_active;
    if (inv_has(r->util_pct))
        return r->util_pct / 100.0;
    return NAN;
}

void inv_reading_key(const struct inv_reading *r, char *out, size_t size)
{
    if (r->mig_instance >= 0)
        snprintf(out, size, "%s/%" PRId32, r->uuid, r->mig_instance);
    else
        snprintf(out, size, "%s", r->uuid);
}

void inv_copy_str(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size) {
        n = size - 1;
        /* do not cut a UTF-8 sequence in half */
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static uint32_t hash_key(const char *uuid, int32_t inst)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)uuid; *p; p++)
        h = (h ^ *p) * 16777619u;
    h = (h ^ (uint32_t)inst) * 16777619u;
    return h;
}

void inv_readings_init(struct inv_readings *rs, size_t max)
{
    memset(rs, 0, sizeof(*rs));
    rs->max = max ? max : READINGS_DEFAULT_MAX;
}

void inv_readings_release(struct inv_readings *rs)
{
    size_t max = rs->max;
    free(rs->v);
    free(rs->index);
    inv_readings_init(rs, max);
}

void inv_readings_reset(struct inv_readings *rs)
{
    rs->n = 0;
    if (rs->index)
        memset(rs->index, 0, rs->index_cap * sizeof(*rs->index));
}

static void index_insert(struct inv_readings *rs, size_t pos)
{
    size_t mask = rs->index_cap - 1;
    size_t i = hash_key(rs->v[pos].uuid, rs->v[pos].mig_instance) & mask;
    while (rs->index[i])
        i = (i + 1) & mask;
    rs->index[i] = (uint32_t)(pos + 1);
}

static void index_grow(struct inv_readings *rs)
{
    free(rs->index);
    rs->index_cap = rs->index_cap ? rs->index_cap * 2 : 64;
    rs->index = xcalloc(rs->index_cap, sizeof(*rs->index));
    for (size_t i = 0; i < rs->n; i++)
        index_insert(rs, i);
}

struct inv_reading *inv_readings_find(const struct inv_readings *rs, const char *uuid,
                                      int32_t mig_instance)
{
    size_t mask, i;
    if (!rs->index_cap)
        return NULL;
    mask = rs->index_cap - 1;
    i = hash_key(uuid, mig_instance) & mask;
    while (rs->index[i]) {
        struct inv_reading *r = &rs->v[rs->index[i] - 1];
        if (r->mig_instance == mig_instance && strcmp(r->uuid, uuid) == 0)
            return r;
        i = (i + 1) & mask;
    }
    return NULL;
}

int inv_readings_get(struct inv_readings *rs, const char *uuid, int32_t mig_instance,
                     struct inv_reading **ret)
{
    struct inv_reading *r;
    size_t n = strlen(uuid);

    if (n == 0 || n >= INV_UUID_MAX)
        return ERR_INVALID;
    r = inv_readings_find(rs, uuid, mig_instance);
    if (r) {
        *ret = r;
        return 0;
    }
    if (rs->n >= rs->max)
        return ERR_TOO_LARGE;
    ALLOC_GROW(rs->v, rs->n + 1, rs->cap);
    r = &rs->v[rs->n];
    inv_reading_clear(r);
    memcpy(r->uuid, uuid, n + 1);
    r->mig_instance = mig_instance;
    rs->n++;
    if (rs->n * 2 > rs->index_cap)
        index_grow(rs);
    else
        index_insert(rs, rs->n - 1);
    *ret = r;
    return 0;
}

int inv_parse_double(const char *s, size_t n, double *ret)
{
    char tmp[64];
    char *end;
    double v;

    if (n == 0 || n >= sizeof(tmp))
        return ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
            return ERR_INVALID;
    }
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    v = strtod(tmp, &end);
    if (end != tmp + n || !isfinite(v))
        return ERR_INVALID;
    *ret = v;
    return 0;
}
