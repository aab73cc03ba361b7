/* SPDX-License-Identifier: Apache-2.0 */
/*
 * showback.c: what pools cost their owners over a period and who used it.
 * Each (pool, project) row is priced once from its exact allocated
 * milli-GPU x ms; a pool's used cost is the sum of its rows, its idle cost
 * the unallocated capacity priced the same way, and its total the sum of
 * the two, so that every roll-up (project, organization, manager) adds up
 * exactly. Efficiency is measured busy time over allocated time.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/err.h"
#include "meter/meter-int.h"
#include "meter/meter.h"

#define COST_DEN ((uint64_t)METER_MS_PER_HOUR * 1000u) /* ms per hour x milli per GPU */

void meter_showback_init(struct meter_showback *s)
{
    memset(s, 0, sizeof(*s));
}

void meter_showback_release(struct meter_showback *s)
{
    if (!s)
        return;
    free(s->pools);
    free(s->rows);
    meter_showback_init(s);
}

struct piece {
    size_t pool; /* index into pools */
    int64_t pool_id, project_id, org_id;
    int64_t milli_ms; /* clipped */
    int64_t busy;     /* -1: not measured */
};

static int cmp_piece(const void *a, const void *b)
{
    const struct piece *x = a, *y = b;
    if (x->pool_id != y->pool_id)
        return x->pool_id < y->pool_id ? -1 : 1;
    return (x->project_id > y->project_id) - (x->project_id < y->project_id);
}

static int efficiency(int64_t busy, int64_t measured, int64_t *ret)
{
    if (measured <= 0) {
        *ret = -1;
        return 0;
    }
    return meter_round_mul_div((meter_u128)(uint64_t)busy, (uint64_t)METER_MICRO,
                               (uint64_t)measured, 1, ret);
}

static int compute(const struct meter_pool *pools, size_t n_pools,
                   const struct meter_pool_alloc *allocs, size_t n_allocs, int64_t from_ms,
                   int64_t to_ms, struct meter_showback *out, struct piece *ps, int64_t *measured)
{
    if (to_ms <= from_ms)
        return ERR_INVALID;
    for (size_t i = 0; i < n_pools; i++) {
        if (pools[i].id <= 0 || pools[i].n_gpus < 0 || pools[i].cost_per_gpu_hour_micro < 0 ||
            pools[i].cost_per_gpu_hour_micro > METER_MAX_PRICE_MICRO)
            return ERR_INVALID;
        for (size_t j = 0; j < i; j++)
            if (pools[j].id == pools[i].id)
                return ERR_INVALID;
        __int128 cap = (__int128)pools[i].n_gpus * 1000 * ((__int128)to_ms - from_ms);
        if (cap > INT64_MAX)
            return ERR_TOO_LARGE;
        out->pools[i] = (struct meter_showback_pool){
            .pool_id = pools[i].id, .capacity_milli_ms = (int64_t)cap, .efficiency_ppm = -1};
    }
    size_t n = 0;
    for (size_t i = 0; i < n_allocs; i++) {
        const struct meter_pool_alloc *a = &allocs[i];
        if (a->ended_ms <= a->started_ms || a->gpu_milli < 1 || a->project_id <= 0)
            return ERR_INVALID;
        size_t p = 0;
        while (p < n_pools && pools[p].id != a->pool_id)
            p++;
        if (p == n_pools)
            return ERR_INVALID;
        int64_t s = a->started_ms > from_ms ? a->started_ms : from_ms;
        int64_t e = a->ended_ms < to_ms ? a->ended_ms : to_ms;
        if (e <= s)
            continue;
        __int128 mm = (__int128)a->gpu_milli * ((__int128)e - s);
        if (mm > INT64_MAX)
            return ERR_TOO_LARGE;
        if (a->busy_milli_ms > mm)
            return ERR_INVALID;
        ps[n++] =
            (struct piece){p,         a->pool_id,  a->project_id,
                           a->org_id, (int64_t)mm, a->busy_milli_ms < 0 ? -1 : a->busy_milli_ms};
    }
    qsort(ps, n, sizeof(*ps), cmp_piece);
    for (size_t i = 0; i < n;) {
        struct meter_showback_row row = {
            ps[i].pool_id, ps[i].project_id, ps[i].org_id, 0, -1, 0, -1};
        int64_t row_measured = 0;
        size_t p = ps[i].pool;
        for (; i < n && ps[i].pool_id == row.pool_id && ps[i].project_id == row.project_id; i++) {
            if (ps[i].org_id != row.org_id)
                return ERR_INVALID; /* one project, two organizations */
            if (__builtin_add_overflow(row.allocated_milli_ms, ps[i].milli_ms,
                                       &row.allocated_milli_ms))
                return ERR_TOO_LARGE;
            if (ps[i].busy >= 0) {
                row.busy_milli_ms = (row.busy_milli_ms < 0 ? 0 : row.busy_milli_ms) + ps[i].busy;
                row_measured += ps[i].milli_ms;
            }
        }
        int rc = meter_round_mul_div((meter_u128)(uint64_t)row.allocated_milli_ms,
                                     (uint64_t)pools[p].cost_per_gpu_hour_micro, COST_DEN, 1,
                                     &row.cost_micro);
        if (rc == 0)
            rc = efficiency(row.busy_milli_ms, row_measured, &row.efficiency_ppm);
        if (rc < 0)
            return rc;
        struct meter_showback_pool *sp = &out->pools[p];
        sp->allocated_milli_ms += row.allocated_milli_ms;
        if (sp->allocated_milli_ms > sp->capacity_milli_ms)
            return ERR_INVALID; /* more allocated than the pool holds */
        sp->used_micro += row.cost_micro;
        if (row.busy_milli_ms >= 0) {
            measured[2 * p] += row.busy_milli_ms;
            measured[2 * p + 1] += row_measured;
        }
        out->rows[out->n_rows++] = row;
    }
    for (size_t p = 0; p < n_pools; p++) {
        struct meter_showback_pool *sp = &out->pools[p];
        int rc = meter_round_mul_div(
            (meter_u128)(uint64_t)(sp->capacity_milli_ms - sp->allocated_milli_ms),
            (uint64_t)pools[p].cost_per_gpu_hour_micro, COST_DEN, 1, &sp->idle_micro);
        if (rc == 0 && __builtin_add_overflow(sp->used_micro, sp->idle_micro, &sp->total_micro))
            rc = ERR_TOO_LARGE;
        if (rc == 0)
            rc = efficiency(measured[2 * p], measured[2 * p + 1], &sp->efficiency_ppm);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int meter_showback_compute(const struct meter_pool *pools, size_t n_pools,
                           const struct meter_pool_alloc *allocs, size_t n_allocs, int64_t from_ms,
                           int64_t to_ms, struct meter_showback *ret)
{
    meter_showback_release(ret);
    struct meter_showback out = {0};
    out.pools = xcalloc(n_pools ? n_pools : 1, sizeof(*out.pools));
    out.n_pools = n_pools;
    out.rows = xcalloc(n_allocs ? n_allocs : 1, sizeof(*out.rows));
    struct piece *ps = xcalloc(n_allocs ? n_allocs : 1, sizeof(*ps));
    int64_t *measured = xcalloc(n_pools ? 2 * n_pools : 1, sizeof(*measured));
    int rc = compute(pools, n_pools, allocs, n_allocs, from_ms, to_ms, &out, ps, measured);
    free(ps);
    free(measured);
    if (rc < 0) {
        meter_showback_release(&out);
        return rc;
    }
    *ret = out;
    return 0;
}
