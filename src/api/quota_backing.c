/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quota_backing.c: what backs a guarantee (DESIGN.md section 3, "owned means
 * owned there"). A project's guarantee in a GPU class may be set up to what
 * the pools it or its organization owns hold in that class; above that only
 * a global admin may set it, since it then stands for capacity nobody owns.
 * Pool membership is the engine's (model_pool_of_gpu), read from the store
 * so that the answer does not depend on when the scheduler last reloaded.
 * These are the quotas' hooks (api-int.h).
 */
#include "base/common.h"

#include "api/api-int.h"
#include "engine/engine.h"

static const char *str_of(const struct resource_def *def, const struct row *r, const char *f)
{
    const struct value *v = model_get(def, r, f);
    return v->null || !v->s ? "{}" : v->s;
}

static int64_t int_of(const struct resource_def *def, const struct row *r, const char *f)
{
    const struct value *v = model_get(def, r, f);
    return v->set && !v->null ? v->i : 0;
}

/* Whether a GPU row counts as capacity (as the engine loads it). */
static bool gpu_counts(const struct row *g)
{
    const char *health = str_of(&model_gpus, g, "health");
    return strcmp(health, "failed") != 0 && strcmp(health, "down") != 0 &&
           strcmp(health, "mig") != 0;
}

/* Milli-GPU of class cls in pools that project (of organization org) or org owns. */
static int owned_milli(struct req *r, int64_t project, int64_t org, int64_t cls, int64_t *ret,
                       struct error_info *ei)
{
    struct store_filter f;
    struct row *pools, *gpus, node;
    size_t n_pools, n_gpus;
    int rc;

    *ret = 0;
    store_filter_init(&f);
    rc = store_list_all(req_db(r), &model_pools, &f, &r->arena, &pools, &n_pools, ei);
    if (rc < 0)
        return rc;
    store_filter_init(&f);
    store_filter_eq_int(&f, F_GPUS_GPU_CLASS_ID, cls);
    rc = store_list_all(req_db(r), &model_gpus, &f, &r->arena, &gpus, &n_gpus, ei);
    for (size_t i = 0; rc >= 0 && i < n_gpus; i++) {
        int64_t pool_id;
        if (!gpu_counts(&gpus[i]))
            continue;
        rc = store_get(req_db(r), &model_nodes, int_of(&model_gpus, &gpus[i], "node_id"), &r->arena,
                       &node, ei);
        if (rc < 0)
            break;
        pool_id = model_pool_of_gpu(pools, n_pools, model_row_id(&gpus[i]),
                                    int_of(&model_nodes, &node, "cluster_id"),
                                    str_of(&model_nodes, &node, "labels"));
        for (size_t k = 0; pool_id && k < n_pools; k++) {
            if (model_row_id(&pools[k]) != pool_id)
                continue;
            if (int_of(&model_pools, &pools[k], "owner_project_id") == project ||
                (org && int_of(&model_pools, &pools[k], "owner_org_id") == org))
                *ret += 1000;
        }
    }
    return rc;
}

/*
 * A guarantee above what the project's (or its organization's) pools own in
 * that class: ERR_FORBIDDEN unless the caller is a global admin.
 */
static int check_backing(struct req *r, const struct row *row, struct error_info *ei)
{
    const struct value *g = row_get(row, F_QUOTAS_GUARANTEED_MILLI);
    int64_t project = int_of(&model_quotas, row, "project_id");
    int64_t cls = int_of(&model_quotas, row, "gpu_class_id"), owned;
    struct row prj;
    int rc;

    if (r->who->admin || !g->set || g->null)
        return 0;
    rc = store_get(req_db(r), &model_projects, project, &r->arena, &prj, ei);
    if (rc >= 0)
        rc = owned_milli(r, project, int_of(&model_projects, &prj, "org_id"), cls, &owned, ei);
    if (rc < 0)
        return rc;
    if (g->i > owned)
        return errinfo_set(ei, ERR_FORBIDDEN, "guaranteed_milli",
                           "a guarantee of %" PRId64 " milli-GPU is more than the %" PRId64
                           " the project's and its organization's pools own in that class; only "
                           "a global admin may set it (leave it null to derive it from the pools)",
                           g->i, owned);
    return 0;
}

static int check_create(struct req *r, struct row *row, struct row *ret_same, struct error_info *ei)
{
    (void)ret_same;
    return check_backing(r, row, ei);
}

/* A change of the guarantee is checked again; other changes keep it as it was. */
static int check_update(struct req *r, const struct row *before, const struct row *patch,
                        const struct row *after, struct error_info *ei)
{
    (void)before;
    if (!row_get(patch, F_QUOTAS_GUARANTEED_MILLI)->set)
        return 0;
    return check_backing(r, after, ei);
}

/* The guarantee the scheduler applies: the explicit one, or what the pools own (null: neither). */
static void decorate(struct req *r, const struct row *row, json_t *j)
{
    struct engine_quota_usage u;
    if (r->api->opt.engine &&
        engine_quota_usage(r->api->opt.engine, row_int(row, F_QUOTAS_PROJECT_ID),
                           row_int(row, F_QUOTAS_GPU_CLASS_ID), &u) == 0) {
        json_object_set_new(j, "effective_guaranteed_milli", json_integer(u.guaranteed));
        if (u.decayed) {
            json_object_set_new(j, "decayed_usage_milli_hours",
                                json_integer(u.decayed_milli_hours));
            json_object_set_new(j, "decayed_average_milli", json_integer(u.decayed_average_milli));
        }
    }
}

const struct resource_hooks quota_hooks = {
    .shapes_scheduling = true,
    .check_create = check_create,
    .check_update = check_update,
    .decorate = decorate,
    .computed = {"effective_guaranteed_milli", "integer",
                 "the guarantee the scheduler applies now (milli-GPU): guaranteed_milli, or, when "
                 "that is null, what the project's pools own in the class"},
    .computed_also =
        {{"decayed_usage_milli_hours", "integer",
          "with the decayed fair share (fair-share = decayed) only: the project's opportunistic "
          "usage of the class, in milli-GPU hours, each hour counted half as much per half-life "
          "since"},
         {"decayed_average_milli", "integer",
          "with the decayed fair share only: that usage as the milli-GPU held on average over "
          "about the last half-life (usage x ln 2 / half-life); the scheduler adds it to what "
          "the project borrows now when it orders projects for idle GPUs"}},
};
