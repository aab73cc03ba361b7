/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load.c: rebuilding the scheduler from the store: the fleet (classes,
 * clusters and their backends, pools, nodes, schedulable GPUs), the
 * tenants (projects, quotas, caps, flavors), then the workloads: queued
 * work queued again, running work restored (and, at start, adopted by its
 * backend), work queued ahead followed again, victims linked to their
 * preemption, and a preemptor whose victims all released since the last
 * pass first in the next one again.
 */
#include "engine/engine-int.h"

#include <jansson.h>

#include "base/log.h"
#include "base/timeutil.h"

const char *engine__class_name(const struct engine *e, int64_t id)
{
    const struct named *n = FIND_BY_ID(e->classes, e->n_classes, id);
    return n ? n->name : "?";
}

const char *engine__project_name(const struct engine *e, int64_t id)
{
    const struct named *n = FIND_BY_ID(e->projects, e->n_projects, id);
    return n ? n->name : "?";
}

/* Every row of a resource, or those in one state. */
static int load_all(struct engine *e, const struct resource_def *def, const char *state,
                    struct arena *a, struct row **ret, size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;
    store_filter_init(&f);
    if (state)
        store_filter_eq_str(&f, model_field_index(def, "state"), state);
    return store_list_all(e->db, def, &f, a, ret, ret_n, ei);
}

/* Rows whose field is null (open allocations, unreleased preemptions). */
static int load_open(struct engine *e, const struct resource_def *def, const char *null_field,
                     struct arena *a, struct row **ret, size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;
    store_filter_init(&f);
    store_filter_eq_null(&f, model_field_index(def, null_field));
    return store_list_all(e->db, def, &f, a, ret, ret_n, ei);
}

/* ---- the fleet ---- */

void engine__forget_fleet(struct engine *e)
{
    for (size_t i = 0; i < e->n_nodes; i++)
        free(e->nodes[i].name);
    for (size_t i = 0; i < e->n_gpus; i++)
        free(e->gpus[i].uuid);
    for (size_t i = 0; i < e->n_classes; i++)
        free(e->classes[i].name);
    for (size_t i = 0; i < e->n_projects; i++)
        free(e->projects[i].name);
    free(e->nodes);
    free(e->gpus);
    free(e->classes);
    free(e->projects);
    free(e->flavors);
    e->nodes = NULL;
    e->gpus = NULL;
    e->classes = e->projects = NULL;
    e->flavors = NULL;
    e->n_nodes = e->n_gpus = e->n_classes = e->n_projects = e->n_flavors = 0;
    e->cap_classes = e->cap_projects = e->cap_flavors = 0;
    e->n_victims = 0;
    e->n_reclaims_ready = 0; /* read again with the rest */
    sched_free(e->sched);
    e->sched = NULL;
}

struct backend *engine__backend_of(struct engine *e, int64_t cluster_id)
{
    for (size_t i = 0; i < e->n_backends; i++) {
        if (e->backends[i].cluster_id == cluster_id)
            return e->backends[i].b;
    }
    return NULL;
}

static int load_classes(struct engine *e, struct arena *a, struct error_info *ei)
{
    struct row *rows;
    size_t n;
    int rc = load_all(e, &model_gpu_classes, NULL, a, &rows, &n, ei);

    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t id = model_row_id(&rows[i]);
        sched_add_class(e->sched, id);
        ALLOC_GROW(e->classes, e->n_classes + 1, e->cap_classes);
        e->classes[e->n_classes++] =
            (struct named){id, xstrdup(row_str(&rows[i], F_GPU_CLASSES_NAME))};
    }
    return rc;
}

/* A backend for each cluster that has none yet (backends live as long as the engine). */
static int open_backends(struct engine *e, struct arena *a, struct error_info *ei)
{
    struct row *rows;
    size_t n;
    int rc = load_all(e, &model_clusters, NULL, a, &rows, &n, ei);

    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t id = model_row_id(&rows[i]);
        const char *kind = row_str(&rows[i], F_CLUSTERS_BACKEND);
        struct backend_cluster c = {id, row_str(&rows[i], F_CLUSTERS_NAME),
                                    row_str(&rows[i], F_CLUSTERS_ENDPOINT)};
        struct error_info bei = {0};
        struct backend *b;
        if (engine__backend_of(e, id))
            continue;
        b = backend_open(kind, &c, &e->opt.backends, &bei);
        if (!b && bei.code) {
            char what[64];
            snprintf(what, sizeof(what), "could not start the %.32s backend", kind);
            log_error(what, "cluster", c.name, "error", bei.message);
        }
        if (b) { /* none (a kind not built here): its nodes take no work */
            struct cluster_backend *cb;
            ALLOC_GROW(e->backends, e->n_backends + 1, e->cap_backends);
            cb = &e->backends[e->n_backends++];
            cb->cluster_id = id;
            cb->b = b;
            cb->discovered_ms = 0;
        }
    }
    return rc;
}

static int load_pools(struct engine *e, struct arena *a, struct row **ret, size_t *ret_n,
                      struct error_info *ei)
{
    struct row *pools;
    size_t n_pools;
    int rc = 0;

    rc = load_all(e, &model_pools, NULL, a, &pools, &n_pools, ei);
    for (size_t i = 0; rc >= 0 && i < n_pools; i++) {
        struct sched_pool_spec ps;
        engine__pool_spec(&pools[i], a, &ps);
        sched_set_pool(e->sched, &ps);
    }
    *ret = pools;
    *ret_n = n_pools;
    return rc;
}

static int load_nodes(struct engine *e, struct arena *a, struct row **ret, size_t *ret_n,
                      struct error_info *ei)
{
    struct row *node_rows = NULL;
    size_t n_node_rows = 0;
    int rc = 0;

    rc = load_all(e, &model_nodes, NULL, a, &node_rows, &n_node_rows, ei);
    e->nodes = xcalloc(n_node_rows + 1, sizeof(*e->nodes));
    for (size_t i = 0; rc >= 0 && i < n_node_rows; i++) {
        const struct row *r = &node_rows[i];
        struct sched_node_spec ns;
        enum sched_node_state state;
        engine__node_spec(&e->labels, r, &ns, &state);
        if (!engine__backend_of(e, ns.cluster_id))
            continue;
        sched_add_node(e->sched, &ns);
        if (state != SCHED_NODE_READY)
            sched_set_node_state(e->sched, ns.id, state);
        e->nodes[e->n_nodes++] = (struct node_info){
            ns.id, ns.cluster_id, xstrdup(row_str(r, F_NODES_NAME)), state == SCHED_NODE_READY};
    }
    *ret = node_rows;
    *ret_n = n_node_rows;
    return rc;
}

/* The GPUs of loaded nodes whose health lets them take work, each in its pool. */
static int load_gpus(struct engine *e, const struct row *pools, size_t n_pools,
                     const struct row *node_rows, size_t n_node_rows, struct arena *a,
                     struct error_info *ei)
{
    struct row *rows = NULL;
    size_t n = 0;
    int rc = 0;

    rc = load_all(e, &model_gpus, NULL, a, &rows, &n, ei);
    e->gpus = xcalloc(n + 1, sizeof(*e->gpus));
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        const struct row *r = &rows[i];
        int64_t node_id = row_int(r, F_GPUS_NODE_ID), pool = 0;
        const struct node_info *ni = FIND_BY_ID(e->nodes, e->n_nodes, node_id);
        struct gpu_info *gi;
        if (!ni || !gpu_schedulable(row_str(r, F_GPUS_HEALTH)))
            continue;
        pool = engine__gpu_pool(pools, n_pools, node_rows, n_node_rows, r, ni->cluster_id);
        sched_add_gpu(e->sched, node_id, model_row_id(r), row_int(r, F_GPUS_GPU_CLASS_ID), pool);
        gi = &e->gpus[e->n_gpus++];
        gi->id = model_row_id(r);
        gi->node_id = node_id;
        gi->class_id = row_int(r, F_GPUS_GPU_CLASS_ID);
        gi->index = (int32_t)row_int(r, F_GPUS_INDEX);
        gi->uuid = xstrdup(row_str(r, F_GPUS_UUID));
    }
    return rc;
}

static int load_fleet(struct engine *e, struct arena *a, struct error_info *ei)
{
    struct row *pools = NULL, *node_rows = NULL;
    size_t n_pools = 0, n_node_rows = 0;
    int rc = load_classes(e, a, ei);

    if (rc >= 0)
        rc = open_backends(e, a, ei);
    if (rc >= 0)
        rc = load_pools(e, a, &pools, &n_pools, ei);
    if (rc >= 0)
        rc = load_nodes(e, a, &node_rows, &n_node_rows, ei);
    else
        e->nodes = xcalloc(1, sizeof(*e->nodes));
    if (rc >= 0)
        rc = load_gpus(e, pools, n_pools, node_rows, n_node_rows, a, ei);
    else
        e->gpus = xcalloc(1, sizeof(*e->gpus));
    e->fleet_loaded = true; /* a cluster may be new: discovery runs on the next round */
    return rc;
}

/* ---- tenants ---- */

void engine__set_flavor(struct engine *e, const struct row *r)
{
    struct flavor_info *f = FIND_BY_ID(e->flavors, e->n_flavors, model_row_id(r));
    if (!f) { /* new flavors get higher ids: append keeps the array sorted */
        ALLOC_GROW(e->flavors, e->n_flavors + 1, e->cap_flavors);
        f = &e->flavors[e->n_flavors++];
    }
    engine__flavor_of(&e->labels, r, f);
}

static int load_tenants(struct engine *e, struct arena *a, struct error_info *ei)
{
    struct row *rows;
    size_t n;
    int rc = load_all(e, &model_projects, NULL, a, &rows, &n, ei);

    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t id = model_row_id(&rows[i]);
        sched_set_project(e->sched, id, row_int(&rows[i], F_PROJECTS_ORG_ID),
                          (int)row_int(&rows[i], F_PROJECTS_WEIGHT));
        ALLOC_GROW(e->projects, e->n_projects + 1, e->cap_projects);
        e->projects[e->n_projects++] =
            (struct named){id, xstrdup(row_str(&rows[i], F_PROJECTS_NAME))};
    }
    if (rc >= 0)
        rc = load_all(e, &model_quotas, NULL, a, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t g, l;
        engine__quota_of(&rows[i], &g, &l);
        sched_set_quota(e->sched, row_int(&rows[i], F_QUOTAS_PROJECT_ID),
                        row_int(&rows[i], F_QUOTAS_GPU_CLASS_ID), g, l);
    }
    if (rc >= 0)
        rc = load_all(e, &model_org_quotas, NULL, a, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++)
        sched_set_org_cap(e->sched, row_int(&rows[i], F_ORG_QUOTAS_ORG_ID),
                          row_int(&rows[i], F_ORG_QUOTAS_GPU_CLASS_ID),
                          row_int(&rows[i], F_ORG_QUOTAS_LIMIT_MILLI));
    if (rc >= 0)
        rc = load_all(e, &model_flavors, NULL, a, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++)
        engine__set_flavor(e, &rows[i]);
    return rc;
}

/* The scheduler's view of a workload row. */
int engine__spec_of(struct engine *e, const struct row *w, struct sched_workload_spec *sp)
{
    return engine__spec_from(
        FIND_BY_ID(e->flavors, e->n_flavors, row_int(w, F_WORKLOADS_FLAVOR_ID)), w, sp);
}

/* What an allocation row says a replica holds, as the scheduler's assign. */
struct sched_assign engine__assign_of(const struct row *al)
{
    return (struct sched_assign){
        (int32_t)row_int(al, F_ALLOCATIONS_REPLICA), row_int(al, F_ALLOCATIONS_NODE_ID),
        row_int(al, F_ALLOCATIONS_GPU_ID), (int32_t)row_int(al, F_ALLOCATIONS_MILLI)};
}

/* ---- workloads ---- */

/* Running, admitted and preempting work: restored in the scheduler, adopted at start. */
static int restore_running(struct engine *e, bool adopt, int64_t now, const struct row *allocs,
                           size_t n_allocs, struct arena *a, struct error_info *ei)
{
    struct row *rows;
    size_t n;
    int rc = 0;

    for (int pass = 0; rc >= 0 && pass < 3; pass++) {
        /* Admitted work was launched or is about to be: its backend says which on adopt. */
        const char *state = pass == 0 ? "running" : pass == 1 ? "admitted" : "preempting";
        rc = load_all(e, &model_workloads, state, a, &rows, &n, ei);
        for (size_t i = 0; rc >= 0 && i < n; i++) {
            int64_t wid = model_row_id(&rows[i]);
            struct sched_workload_spec sp;
            int64_t gpus[SCHED_MAX_REPLICAS * 8];
            int32_t milli[SCHED_MAX_REPLICAS * 8], rep[SCHED_MAX_REPLICAS * 8];
            struct sched_assign as[SCHED_MAX_REPLICAS * 8];
            enum sched_class runs_as = 0;
            size_t k = 0;
            int64_t started = row_int(&rows[i], F_WORKLOADS_STARTED_AT) * 1000;
            for (size_t j = 0; j < n_allocs && k < ARRAY_SIZE(gpus); j++) {
                const struct row *al = &allocs[j];
                if (row_int(al, F_ALLOCATIONS_WORKLOAD_ID) != wid)
                    continue;
                as[k] = engine__assign_of(al);
                gpus[k] = as[k].gpu_id;
                milli[k] = as[k].milli;
                rep[k] = as[k].replica;
                started = row_int(al, F_ALLOCATIONS_STARTED_MS);
                runs_as = engine__class_of(row_str(al, F_ALLOCATIONS_PRIORITY_CLASS));
                k++;
            }
            if (engine__spec_of(e, &rows[i], &sp) < 0 ||
                sched_restore_running(e->sched, &sp, runs_as, gpus, milli, rep, k, started,
                                      pass == 2) < 0)
                continue;
            if (adopt && k > 0) {
                const struct node_info *ni = FIND_BY_ID(e->nodes, e->n_nodes, as[0].node_id);
                struct backend *b = ni ? engine__backend_of(e, ni->cluster_id) : NULL;
                struct backend_launch l;
                if (b) {
                    engine__launch_of(e, &rows[i], as, k, a, &l);
                    b->ops->adopt(b, &l, started, now, ei);
                }
            }
        }
    }
    return rc;
}

/*
 * Work queued ahead in its backend: followed again, each after the one it
 * waits for (a chain's head first), so that a chain finds its GPUs.
 */
static void restore_chains(struct engine *e, bool adopt, const struct row *staged_rows,
                           size_t n_staged_rows, const struct row *allocs, size_t n_allocs,
                           int64_t now, struct arena *a)
{
    bool *done = xcalloc(n_staged_rows + 1, sizeof(*done));
    const char **take_back = xcalloc(n_staged_rows + 1, sizeof(*take_back));

    for (size_t round = 0; round < n_staged_rows; round++) {
        for (size_t i = 0; i < n_staged_rows; i++) {
            int64_t after = row_int(&staged_rows[i], F_WORKLOADS_QUEUED_AFTER);
            bool head_waits = false;
            for (size_t k = 0; k < n_staged_rows; k++)
                head_waits |= !done[k] && model_row_id(&staged_rows[k]) == after;
            if (done[i] || (head_waits && round + 1 < n_staged_rows))
                continue;
            take_back[i] =
                engine__restore_staged(e, adopt, &staged_rows[i], allocs, n_allocs, now, a);
            done[i] = true;
        }
    }
    for (size_t i = 0; i < n_staged_rows; i++) {
        if (take_back[i])
            engine__unstage(e, model_row_id(&staged_rows[i]), take_back[i], now);
    }
    free(take_back);
    free(done);
}

/* A reclaim whose victims are still releasing: linked to their preemptor and ledger entry again. */
static void restore_pending(struct engine *e, const struct row *led, struct arena *a)
{
    json_t *vs = json_loads(row_str(led, F_PREEMPTIONS_VICTIMS), 0, NULL), *v;
    int64_t pre = row_int(led, F_PREEMPTIONS_PREEMPTOR_ID);
    int64_t *ids = arena_calloc(a, json_array_size(vs) + 1, sizeof(*ids)); /* every one */
    size_t k, n_ids = 0;
    json_array_foreach(vs, k, v)
    {
        struct sched_workload_info info;
        int64_t vid = json_integer_value(json_object_get(v, "workload_id"));
        if (sched_workload_info(e->sched, vid, &info) < 0 || info.state != SCHED_PREEMPTING)
            continue;
        ids[n_ids++] = vid;
        ALLOC_GROW(e->victims, e->n_victims + 1, e->cap_victims);
        e->victims[e->n_victims++] = (struct pending_victim){vid, model_row_id(led), pre};
    }
    json_decref(vs);
    sched_restore_preemption(e->sched, pre, ids, n_ids);
}

/*
 * A reclaim whose victims have all released, with no pass since: its
 * preemptor goes first in the next one, as it would have in the scheduler
 * that saw the release, with the nodes its replicas fit on held (where its
 * victims ran first: the nodes of the runs the preemption ended).
 */
static int restore_ready(struct engine *e, const struct row *led, struct arena *a,
                         struct error_info *ei)
{
    json_t *vs = json_loads(row_str(led, F_PREEMPTIONS_VICTIMS), 0, NULL), *v;
    size_t n_vs = json_array_size(vs), k, n_allocs = 0, n_nodes = 0;
    int64_t *ids = arena_calloc(a, n_vs + 1, sizeof(*ids)), *nodes;
    int64_t decided = row_int(led, F_PREEMPTIONS_DECIDED_MS);
    struct row *allocs = NULL;
    struct store_filter f;
    int rc;

    json_array_foreach(vs, k, v)
    {
        ids[k] = json_integer_value(json_object_get(v, "workload_id"));
    }
    json_decref(vs);
    store_filter_init(&f);
    store_filter_any(&f, F_ALLOCATIONS_WORKLOAD_ID, ids, n_vs);
    store_filter_range(&f, F_ALLOCATIONS_ENDED_MS, decided, INT64_MAX);
    rc = store_list_all(e->db, &model_allocations, &f, a, &allocs, &n_allocs, ei);
    if (rc < 0)
        return rc;
    nodes = arena_calloc(a, n_allocs + 1, sizeof(*nodes));
    /* In the decision's order of victims, then of their devices, each node once. */
    for (size_t i = 0; i < n_vs; i++) {
        for (size_t j = 0; j < n_allocs; j++) {
            int64_t node = row_int(&allocs[j], F_ALLOCATIONS_NODE_ID);
            bool seen = false;
            if (row_int(&allocs[j], F_ALLOCATIONS_WORKLOAD_ID) != ids[i] ||
                row_int(&allocs[j], F_ALLOCATIONS_STARTED_MS) > decided)
                continue;
            for (size_t m = 0; m < n_nodes && !seen; m++)
                seen = nodes[m] == node;
            if (!seen)
                nodes[n_nodes++] = node;
        }
    }
    /*
     * Refused where the preemptor is no longer queued here (cancelled, held,
     * set aside): the entry is ready all the same, so that the next pass
     * records its try and no later start reads it again.
     */
    sched_restore_reclaim_ready(e->sched, row_int(led, F_PREEMPTIONS_PREEMPTOR_ID), nodes, n_nodes);
    ALLOC_GROW(e->reclaims_ready, e->n_reclaims_ready + 1, e->cap_reclaims_ready);
    e->reclaims_ready[e->n_reclaims_ready++] = model_row_id(led);
    return 0;
}

/*
 * Reclaims the scheduler has not seen through (their first try after the
 * release not recorded), in the order they were decided: victims still
 * releasing are linked to their preemptor and ledger entry again; where
 * all have released, the preemptor goes first in the next pass.
 */
static int restore_preemptions(struct engine *e, struct arena *a, struct error_info *ei)
{
    struct row *ledger;
    size_t n_ledger;
    int rc = load_open(e, &model_preemptions, "first_try_ms", a, &ledger, &n_ledger, ei);

    for (size_t i = 0; rc >= 0 && i < n_ledger; i++) {
        if (row_is_null(&ledger[i], F_PREEMPTIONS_RELEASED_MS))
            restore_pending(e, &ledger[i], a);
        else
            rc = restore_ready(e, &ledger[i], a, ei);
    }
    return rc;
}

static int restore_workloads(struct engine *e, bool adopt, int64_t now, struct arena *a,
                             struct error_info *ei)
{
    struct row *rows, *allocs = NULL, *staged_rows = NULL;
    size_t n, n_allocs = 0, n_staged_rows = 0, cap_staged_rows = 0;
    int rc;

    rc = load_all(e, &model_workloads, "queued", a, &rows, &n, ei);
    e->n_staged = 0; /* from the store again, below */
    e->n_blocked = 0;
    e->blocked_dirty = true; /* dependencies may have ended while the daemon was down */
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        if (engine__unstaging_find(e, model_row_id(&rows[i])))
            continue; /* queued again once its backend has given it back */
        if (!row_is_null(&rows[i], F_WORKLOADS_QUEUED_AFTER)) {
            ALLOC_GROW(staged_rows, n_staged_rows + 1, cap_staged_rows);
            staged_rows[n_staged_rows++] = rows[i];
            continue;
        }
        engine__submit_or_hold(e, &rows[i], now, false, a);
    }
    if (rc < 0) {
        free(staged_rows);
        return rc;
    }
    rc = load_open(e, &model_allocations, "ended_ms", a, &allocs, &n_allocs, ei);
    if (rc >= 0)
        rc = restore_running(e, adopt, now, allocs, n_allocs, a, ei);
    if (rc >= 0)
        restore_chains(e, adopt, staged_rows, n_staged_rows, allocs, n_allocs, now, a);
    free(staged_rows);
    if (rc >= 0)
        rc = restore_preemptions(e, a, ei);
    return rc;
}

/* (Re)builds the scheduler from the store. adopt: also re-attach running work to backends. */
int engine__load(struct engine *e, bool adopt, struct error_info *ei)
{
    struct sched_config cfg;
    struct arena a;
    int rc;

    int64_t now = time_now_ms();
    struct engine_past_usage past;

    /* Past usage goes from the old core to the new one; the first is built from the ledger. */
    engine__past_usage_take(e, now, &past);
    engine__forget_fleet(e);
    sched_config_init(&cfg);
    cfg.reserve_after_ms = e->opt.reserve_after_ms;
    cfg.default_grace_ms = e->opt.default_grace_ms;
    cfg.policy = e->opt.policy;
    cfg.fair_share = (enum sched_fair_share)e->opt.fair_share;
    cfg.half_life_ms = e->opt.fair_share_half_life_ms;
    e->sched = sched_new(&cfg);
    arena_init(&a);
    rc = load_fleet(e, &a, ei);
    if (rc >= 0)
        rc = load_tenants(e, &a, ei);
    if (rc >= 0)
        rc = engine__past_usage_give(e, &past, now, ei);
    if (rc >= 0)
        rc = restore_workloads(e, adopt, now, &a, ei);
    free(past.v); /* what a failed load left untaken */
    arena_release(&a);
    return rc;
}
