/* SPDX-License-Identifier: Apache-2.0 */
/*
 * showback.c: what each pool costs its owner over a month (cost per
 * GPU-hour x capacity), split into what was used (allocations, charged to
 * the project that held the GPUs) and what sat idle (charged to the pool's
 * owner), then rolled up by pool, project, organization or manager. The
 * arithmetic is src/meter's (meter_showback_compute); pool membership is
 * the engine's own rule (model_pool_of_gpu).
 */
#include "base/common.h"

#include "billing/billing-int.h"

struct id_pair {
    int64_t key, val;
};

static int cmp_pair(const void *x, const void *y)
{
    const struct id_pair *a = x, *b = y;
    return (a->key > b->key) - (a->key < b->key);
}

static int64_t lookup(const struct id_pair *m, size_t n, int64_t key)
{
    struct id_pair k = {key, 0};
    const struct id_pair *hit = n ? bsearch(&k, m, n, sizeof(*m), cmp_pair) : NULL;
    return hit ? hit->val : 0;
}

static const char *labels_of(const struct row *nodes, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (model_row_id(&nodes[i]) == id)
            return row_str(&nodes[i], F_NODES_LABELS);
    }
    return "{}";
}

/* Adds into the (id, currency) entry of out, creating it. */
static struct billing_cost *entry(struct billing_cost **out, size_t *n, size_t *cap, int64_t id,
                                  const char *currency)
{
    for (size_t i = 0; i < *n; i++) {
        if ((*out)[i].id == id && strcmp((*out)[i].currency, currency) == 0)
            return &(*out)[i];
    }
    ALLOC_GROW(*out, *n + 1, *cap);
    (*out)[*n] = (struct billing_cost){.id = id, .efficiency_ppm = -1};
    snprintf((*out)[*n].currency, sizeof((*out)[*n].currency), "%s", currency);
    return &(*out)[(*n)++];
}

/* The manager of an organization: its own, else the nearest ancestor's; 0 when none. */
static int64_t manager_of(const struct row *orgs, size_t n, int64_t org)
{
    for (int depth = 0; org && depth < 64; depth++) {
        const struct row *o = NULL;
        for (size_t i = 0; i < n && !o; i++)
            o = model_row_id(&orgs[i]) == org ? &orgs[i] : NULL;
        if (!o)
            return 0;
        if (!row_is_null(o, F_ORGANIZATIONS_MANAGER_ID))
            return row_int(o, F_ORGANIZATIONS_MANAGER_ID);
        org = row_is_null(o, F_ORGANIZATIONS_PARENT_ID) ? 0 : row_int(o, F_ORGANIZATIONS_PARENT_ID);
    }
    return 0;
}

int billing_cost(struct store_conn *c, enum billing_cost_by by, int64_t start_ms, int64_t end_ms,
                 int64_t now_ms, struct arena *a, struct billing_cost **ret, size_t *ret_n,
                 struct error_info *ei)
{
    struct row *pools, *nodes, *gpus, *allocs, *projects, *orgs;
    size_t n_pools, n_nodes, n_gpus, n_allocs, n_projects, n_orgs, n_ma = 0, n = 0, cap = 0;
    struct id_pair *gpu_pool, *node_cluster, *project_org;
    struct meter_pool *mp;
    struct meter_pool_alloc *ma, *mine;
    struct meter_showback sb;
    struct billing_cost *out = NULL;
    struct store_filter f;
    int64_t until = now_ms < end_ms ? now_ms : end_ms;
    int rc;

    *ret = NULL;
    *ret_n = 0;
    store_filter_init(&f);
    if ((rc = store_list_all(c, &model_pools, &f, a, &pools, &n_pools, ei)) < 0 ||
        (rc = store_list_all(c, &model_nodes, &f, a, &nodes, &n_nodes, ei)) < 0 ||
        (rc = store_list_all(c, &model_gpus, &f, a, &gpus, &n_gpus, ei)) < 0 ||
        (rc = store_list_all(c, &model_projects, &f, a, &projects, &n_projects, ei)) < 0 ||
        (rc = store_list_all(c, &model_organizations, &f, a, &orgs, &n_orgs, ei)) < 0 ||
        (rc = store_list_all(c, &model_allocations, &f, a, &allocs, &n_allocs, ei)) < 0)
        return rc;

    node_cluster = arena_calloc(a, n_nodes + 1, sizeof(*node_cluster));
    for (size_t i = 0; i < n_nodes; i++)
        node_cluster[i] =
            (struct id_pair){model_row_id(&nodes[i]), row_int(&nodes[i], F_NODES_CLUSTER_ID)};
    qsort(node_cluster, n_nodes, sizeof(*node_cluster), cmp_pair);
    project_org = arena_calloc(a, n_projects + 1, sizeof(*project_org));
    for (size_t i = 0; i < n_projects; i++)
        project_org[i] =
            (struct id_pair){model_row_id(&projects[i]), row_int(&projects[i], F_PROJECTS_ORG_ID)};
    qsort(project_org, n_projects, sizeof(*project_org), cmp_pair);

    mp = arena_calloc(a, n_pools + 1, sizeof(*mp));
    for (size_t k = 0; k < n_pools; k++) {
        const struct value *op = row_get(&pools[k], F_POOLS_OWNER_PROJECT_ID);
        const struct value *oo = row_get(&pools[k], F_POOLS_OWNER_ORG_ID);
        mp[k].id = model_row_id(&pools[k]);
        mp[k].owner_project_id = op->null ? 0 : op->i;
        mp[k].owner_org_id =
            oo->null ? lookup(project_org, n_projects, mp[k].owner_project_id) : oo->i;
        mp[k].cost_per_gpu_hour_micro = row_int(&pools[k], F_POOLS_COST_PER_GPU_HOUR_MICROS);
    }
    gpu_pool = arena_calloc(a, n_gpus + 1, sizeof(*gpu_pool));
    for (size_t i = 0; i < n_gpus; i++) {
        int64_t node = row_int(&gpus[i], F_GPUS_NODE_ID);
        int64_t pool =
            model_pool_of_gpu(pools, n_pools, model_row_id(&gpus[i]),
                              lookup(node_cluster, n_nodes, node), labels_of(nodes, n_nodes, node));
        gpu_pool[i] = (struct id_pair){model_row_id(&gpus[i]), pool};
        for (size_t k = 0; k < n_pools && pool; k++)
            mp[k].n_gpus += mp[k].id == pool;
    }
    qsort(gpu_pool, n_gpus, sizeof(*gpu_pool), cmp_pair);

    ma = arena_calloc(a, n_allocs + 1, sizeof(*ma));
    mine = arena_calloc(a, n_allocs + 1, sizeof(*mine));
    for (size_t i = 0; i < n_allocs; i++) {
        const struct value *gpu = row_get(&allocs[i], F_ALLOCATIONS_GPU_ID);
        const struct value *ended = row_get(&allocs[i], F_ALLOCATIONS_ENDED_MS);
        int64_t pool = gpu->null ? 0 : lookup(gpu_pool, n_gpus, gpu->i);
        int64_t s = row_int(&allocs[i], F_ALLOCATIONS_STARTED_MS);
        int64_t e = ended->null ? until : ended->i;
        int64_t prj = row_int(&allocs[i], F_ALLOCATIONS_PROJECT_ID);
        if (!pool || e <= start_ms || s >= end_ms || e <= s)
            continue;
        ma[n_ma++] = (struct meter_pool_alloc){pool,
                                               prj,
                                               lookup(project_org, n_projects, prj),
                                               (int32_t)row_int(&allocs[i], F_ALLOCATIONS_MILLI),
                                               s,
                                               e,
                                               -1};
    }
    /*
     * Pool by pool: a pool's capacity counts from when it was created (or the
     * period's start) up to now (or the period's end), not before it existed
     * nor in the future.
     */
    for (size_t k = 0; k < n_pools; k++) {
        int64_t from = row_int(&pools[k], F_POOLS_CREATED_AT) * 1000;
        const char *cur = row_str(&pools[k], F_POOLS_CURRENCY);
        size_t n_mine = 0;
        int64_t owner;
        struct billing_cost *x;

        if (from < start_ms)
            from = start_ms;
        if (from >= until)
            continue;
        for (size_t i = 0; i < n_ma; i++) {
            if (ma[i].pool_id != mp[k].id)
                continue;
            mine[n_mine] = ma[i];
            if (mine[n_mine].started_ms < from)
                mine[n_mine].started_ms = from;
            if (mine[n_mine].ended_ms > mine[n_mine].started_ms)
                n_mine++;
        }
        meter_showback_init(&sb);
        rc = meter_showback_compute(&mp[k], 1, mine, n_mine, from, until, &sb);
        if (rc < 0) {
            meter_showback_release(&sb);
            free(out);
            return errinfo_set(ei, rc, NULL,
                               "the allocations of pool %" PRId64 " do not add up (%s)", mp[k].id,
                               rc == ERR_INVALID ? "more allocated than it holds" : "overflow");
        }
        /* Used cost goes to who held the GPUs; idle cost to the pool's owner. */
        for (size_t r = 0; r < sb.n_rows; r++) {
            const struct meter_showback_row *row = &sb.rows[r];
            int64_t id = by == BILLING_BY_POOL      ? row->pool_id
                         : by == BILLING_BY_PROJECT ? row->project_id
                         : by == BILLING_BY_ORG     ? row->org_id
                                                    : manager_of(orgs, n_orgs, row->org_id);
            x = entry(&out, &n, &cap, id, cur);
            x->allocated_milli_ms += row->allocated_milli_ms;
            x->used_micros += row->cost_micro;
        }
        owner = by == BILLING_BY_POOL      ? mp[k].id
                : by == BILLING_BY_PROJECT ? mp[k].owner_project_id
                : by == BILLING_BY_ORG     ? mp[k].owner_org_id
                                           : manager_of(orgs, n_orgs, mp[k].owner_org_id);
        /* an organization's pool: no project owns its idle time */
        if (sb.n_pools == 1 && !(by == BILLING_BY_PROJECT && !owner)) {
            x = entry(&out, &n, &cap, owner, cur);
            x->capacity_milli_ms += sb.pools[0].capacity_milli_ms;
            x->idle_micros += sb.pools[0].idle_micro;
            if (by == BILLING_BY_POOL)
                x->efficiency_ppm = sb.pools[0].efficiency_ppm;
        }
        meter_showback_release(&sb);
    }
    *ret = out;
    *ret_n = n;
    return 0;
}
