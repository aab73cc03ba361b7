/* SPDX-License-Identifier: Apache-2.0 */
/*
 * whatif.c: the world a what-if replays, read from the store: the fleet,
 * tenants and price list as they are now (built through build.c, as the
 * engine's own core is), quotas, caps, pools, nodes' states and projects'
 * weights as they were when the period began and every change to them since
 * (from the audit trail), and the workloads that arrived in the period with
 * their recorded first start and real run time (from their allocations).
 * Reads only, on the caller's connection; the live engine is asked for
 * nothing but its (unchanging) settings.
 */
#include "engine/engine-int.h"

#include <jansson.h>

#include "base/parse.h"
#include "base/timeutil.h"
#include "billing/billing.h"
#include "inventory/inventory.h"
#include "whatif/whatif.h"

#define PAGE 10000

/* What the allocations say of one workload: its first start, its last run. */
struct runs {
    int64_t first_start, last_start, last_end;
    bool open; /* its last run has not ended */
};

/* Every row of a resource. */
static int read_all(struct store_conn *c, const struct resource_def *def, struct arena *a,
                    struct row **ret, size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;
    store_filter_init(&f);
    return store_list_all(c, def, &f, a, ret, ret_n, ei);
}

/*
 * Calls fn with every row of def that f selects, a page of PAGE rows at a
 * time (rows may be big: a workload's command; a row's strings last only as
 * long as its call); stops at fn's first error and returns it.
 */
typedef int row_fn(void *ctx, const struct row *r, struct error_info *ei);

static int each_row(struct store_conn *c, const struct resource_def *def, struct store_filter *f,
                    row_fn *fn, void *ctx, struct error_info *ei)
{
    int rc = 0;

    f->limit = PAGE;
    for (;;) {
        struct arena page;
        struct row *rows;
        size_t got = 0;
        arena_init(&page);
        rc = store_list(c, def, f, &page, &rows, &got, ei);
        for (size_t i = 0; rc >= 0 && i < got; i++)
            rc = fn(ctx, &rows[i], ei);
        if (got)
            f->after_id = model_row_id(&rows[got - 1]);
        arena_release(&page);
        if (rc < 0 || got < (size_t)f->limit)
            return rc;
    }
}

static int cmp_node_id(const void *x, const void *y)
{
    const struct whatif_node *a = x, *b = y;
    return a->spec.id < b->spec.id ? -1 : a->spec.id > b->spec.id;
}

/* Nodes come in id order, so GPUs find theirs by bsearch. */
static int read_fleet(struct store_conn *c, struct engine_world *ew, struct arena *a,
                      struct error_info *ei)
{
    struct whatif_world *w = &ew->w;
    struct row *rows, *pools, *nodes;
    size_t n, n_pools, n_nodes;
    int rc;

    rc = read_all(c, &model_gpu_classes, a, &rows, &n, ei);
    if (rc < 0)
        return rc;
    int64_t *classes = arena_calloc(a, n + 1, sizeof(*classes));
    ew->classes = arena_calloc(a, n + 1, sizeof(*ew->classes));
    for (size_t i = 0; i < n; i++) {
        classes[i] = model_row_id(&rows[i]);
        ew->classes[i] = (struct engine_name){classes[i], row_str(&rows[i], F_GPU_CLASSES_NAME)};
    }
    w->classes = classes;
    w->n_classes = ew->n_classes = n;

    rc = read_all(c, &model_pools, a, &pools, &n_pools, ei);
    if (rc < 0)
        return rc;
    struct sched_pool_spec *ps = arena_calloc(a, n_pools + 1, sizeof(*ps));
    ew->pools = arena_calloc(a, n_pools + 1, sizeof(*ew->pools));
    for (size_t i = 0; i < n_pools; i++) {
        engine__pool_spec(&pools[i], a, &ps[i]);
        ew->pools[i] = (struct engine_name){ps[i].id, row_str(&pools[i], F_POOLS_NAME)};
    }
    w->pools = ps;
    w->n_pools = ew->n_pools = n_pools;

    rc = read_all(c, &model_nodes, a, &nodes, &n_nodes, ei);
    if (rc < 0)
        return rc;
    struct whatif_node *wn = arena_calloc(a, n_nodes + 1, sizeof(*wn));
    for (size_t i = 0; i < n_nodes; i++)
        engine__node_spec(&ew->labels, &nodes[i], &wn[i].spec, &wn[i].state);
    w->nodes = wn;
    w->n_nodes = n_nodes;

    rc = read_all(c, &model_gpus, a, &rows, &n, ei);
    if (rc < 0)
        return rc;
    struct whatif_gpu *wg = arena_calloc(a, n + 1, sizeof(*wg));
    for (size_t i = 0; i < n; i++) {
        int64_t node_id = row_int(&rows[i], F_GPUS_NODE_ID), cluster = 0;
        struct whatif_node key = {.spec.id = node_id};
        const struct whatif_node *nd = bsearch(&key, wn, n_nodes, sizeof(key), cmp_node_id);
        if (!nd || !gpu_schedulable(row_str(&rows[i], F_GPUS_HEALTH)))
            continue;
        cluster = nd->spec.cluster_id;
        wg[w->n_gpus++] = (struct whatif_gpu){
            model_row_id(&rows[i]), node_id, row_int(&rows[i], F_GPUS_GPU_CLASS_ID),
            engine__gpu_pool(pools, n_pools, nodes, n_nodes, &rows[i], cluster)};
    }
    w->gpus = wg;
    return 0;
}

/* ---- quotas and caps through the period, from the audit trail ---- */

/* A quota's or cap's audited change: the object before (unless new), after (unless removed). */
struct audited {
    int64_t at_ms, seq, object;
    enum whatif_recorded_kind kind;
    bool had, has; /* had: before is set; has: after is */
    struct whatif_recorded_change before, after;
};

struct audit_log {
    struct audited *v;
    size_t n, cap;
};

static int64_t json_int_or(json_t *o, const struct resource_def *def, int field, int64_t none)
{
    json_t *v = json_object_get(o, def->fields[field].name);
    return json_is_integer(v) ? json_integer_value(v) : none;
}

/* A list of ids of a pool as the audit trail wrote it, in a. */
static const int64_t *json_ids(json_t *o, int field, struct arena *a, size_t *ret_n)
{
    json_t *l = json_object_get(o, model_pools.fields[field].name), *v;
    int64_t *ids = arena_calloc(a, json_array_size(l) + 1, sizeof(*ids));
    size_t k;
    *ret_n = 0;
    json_array_foreach(l, k, v)
    {
        if (json_is_integer(v))
            ids[(*ret_n)++] = json_integer_value(v);
    }
    return ids;
}

/* A quota, cap or pool as the audit trail wrote it (model_encode); false when it is not one. */
static bool decode_audited(const char *text, enum whatif_recorded_kind kind, struct arena *a,
                           struct whatif_recorded_change *ret)
{
    json_t *o = json_loads(text, 0, NULL), *lend;
    bool ok = json_is_object(o);

    memset(ret, 0, sizeof(*ret));
    ret->kind = kind;
    if (ok && kind == WHATIF_REC_CAP) {
        ret->cap = (struct whatif_org_cap){
            json_int_or(o, &model_org_quotas, F_ORG_QUOTAS_ORG_ID, 0),
            json_int_or(o, &model_org_quotas, F_ORG_QUOTAS_GPU_CLASS_ID, 0),
            json_int_or(o, &model_org_quotas, F_ORG_QUOTAS_LIMIT_MILLI, -1)};
        ok = ret->cap.org_id > 0 && ret->cap.class_id > 0;
    } else if (ok && kind == WHATIF_REC_QUOTA) {
        ret->quota =
            (struct whatif_quota){json_int_or(o, &model_quotas, F_QUOTAS_PROJECT_ID, 0),
                                  json_int_or(o, &model_quotas, F_QUOTAS_GPU_CLASS_ID, 0),
                                  json_int_or(o, &model_quotas, F_QUOTAS_GUARANTEED_MILLI, -1),
                                  json_int_or(o, &model_quotas, F_QUOTAS_LIMIT_MILLI, -1)};
        ok = ret->quota.project_id > 0 && ret->quota.class_id > 0;
    } else if (ok && kind == WHATIF_REC_PROJECT) {
        ret->project.id = json_int_or(o, &model_projects, F_PROJECTS_ID, 0);
        ret->project.weight = (int)json_int_or(o, &model_projects, F_PROJECTS_WEIGHT, 0);
        ok = ret->project.id > 0 && ret->project.weight >= 1;
    } else if (ok && kind == WHATIF_REC_NODE) { /* as engine__node_spec reads a node's state */
        json_t *st = json_object_get(o, model_nodes.fields[F_NODES_STATE].name);
        const char *state = json_is_string(st) ? json_string_value(st) : "";
        ret->node.id = json_int_or(o, &model_nodes, F_NODES_ID, 0);
        ret->node.state = strcmp(state, "ready") == 0   ? SCHED_NODE_READY
                          : strcmp(state, "drain") == 0 ? SCHED_NODE_DRAIN
                                                        : SCHED_NODE_DOWN;
        ok = ret->node.id > 0;
    } else if (ok) { /* as engine__pool_spec reads a pool's row */
        struct sched_pool_spec *ps = &ret->pool;
        lend = json_object_get(o, model_pools.fields[F_POOLS_LEND_TO_ALL].name);
        ps->id = json_int_or(o, &model_pools, F_POOLS_ID, 0);
        ps->owner_project_id = json_int_or(o, &model_pools, F_POOLS_OWNER_PROJECT_ID, 0);
        ps->owner_org_id = json_int_or(o, &model_pools, F_POOLS_OWNER_ORG_ID, 0);
        ps->access_project_ids = json_ids(o, F_POOLS_ACCESS_PROJECT_IDS, a, &ps->n_access_projects);
        ps->access_org_ids = json_ids(o, F_POOLS_ACCESS_ORG_IDS, a, &ps->n_access_orgs);
        ps->lend_to_all = json_is_true(lend) || (json_is_integer(lend) && json_integer_value(lend));
        ps->lending_limit = json_int_or(o, &model_pools, F_POOLS_LENDING_LIMIT_MILLI, 0);
        ok = ps->id > 0;
    }
    json_decref(o);
    return ok;
}

/*
 * The audit entries of def's objects written at or after from_ms, a page at
 * a time; of pools, updates only (which GPUs a pool holds is as it is now,
 * so one made or removed since is replayed as it is now); of nodes, those
 * made and those whose state changed; of projects, updates of their weight.
 */
struct audit_read {
    enum whatif_recorded_kind kind;
    struct arena *a;
    struct audit_log *log;
};

static int audited_row(void *ctx, const struct row *r, struct error_info *ei)
{
    struct audit_read *ar = ctx;
    struct audited e = {.at_ms = row_int(r, F_AUDIT_TIME) * 1000,
                        .seq = model_row_id(r),
                        .object = row_int(r, F_AUDIT_OBJECT_ID),
                        .kind = ar->kind};

    if (ar->log->n >= WHATIF_MAX_RECORDED)
        return errinfo_set(
            ei, ERR_TOO_LARGE, "period",
            "quotas, caps, pools, nodes and weights changed more than %d times since the "
            "period began: pick a later one",
            WHATIF_MAX_RECORDED);
    e.had = !row_is_null(r, F_AUDIT_BEFORE) &&
            decode_audited(row_str(r, F_AUDIT_BEFORE), ar->kind, ar->a, &e.before);
    e.has = !row_is_null(r, F_AUDIT_AFTER) &&
            decode_audited(row_str(r, F_AUDIT_AFTER), ar->kind, ar->a, &e.after);
    if (ar->kind == WHATIF_REC_POOL || ar->kind == WHATIF_REC_PROJECT ? !e.had || !e.has
                                                                      : !e.had && !e.has)
        return 0;
    /* of a project: its weight changed (one made since had no work before it was made) */
    if (ar->kind == WHATIF_REC_PROJECT && e.before.project.weight == e.after.project.weight)
        return 0;
    /* of a node: made, or its state changed (not removed: the world has it not) */
    if (ar->kind == WHATIF_REC_NODE &&
        (!e.has || (e.had && e.before.node.state == e.after.node.state)))
        return 0;
    ALLOC_GROW(ar->log->v, ar->log->n + 1, ar->log->cap);
    ar->log->v[ar->log->n++] = e;
    return 0;
}

static int read_audited(struct store_conn *c, const struct resource_def *def,
                        enum whatif_recorded_kind kind, int64_t from_ms, struct arena *a,
                        struct audit_log *log, struct error_info *ei)
{
    struct audit_read ar = {kind, a, log};
    struct store_filter f;

    store_filter_init(&f);
    store_filter_eq_str(&f, F_AUDIT_RESOURCE, def->name);
    store_filter_range(&f, F_AUDIT_TIME, (from_ms + 999) / 1000, INT64_MAX);
    return each_row(c, &model_audit, &f, audited_row, &ar, ei);
}

static int cmp_audited_time(const void *x, const void *y)
{
    const struct audited *a = x, *b = y;
    if (a->at_ms != b->at_ms)
        return a->at_ms < b->at_ms ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Each object's first entry in the log (which is in time order), by object. */
struct first_of {
    int64_t object;
    enum whatif_recorded_kind kind;
    size_t at; /* index into the log */
};

static int cmp_object(const void *x, const void *y)
{
    const struct first_of *a = x, *b = y;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return a->object < b->object ? -1 : a->object > b->object;
}

/* By object, then the earliest first. */
static int cmp_first_of(const void *x, const void *y)
{
    const struct first_of *a = x, *b = y;
    int c = cmp_object(x, y);
    return c ? c : (a->at > b->at) - (a->at < b->at);
}

static struct first_of *first_entries(const struct audit_log *log, size_t *ret_n)
{
    struct first_of *v = xcalloc(log->n + 1, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; i < log->n; i++)
        v[i] = (struct first_of){log->v[i].object, log->v[i].kind, i};
    qsort(v, log->n, sizeof(*v), cmp_first_of);
    for (size_t i = 0; i < log->n; i++) {
        if (n == 0 || v[n - 1].object != v[i].object || v[n - 1].kind != v[i].kind)
            v[n++] = v[i];
    }
    *ret_n = n;
    return v;
}

/* The log index of an object's first entry; SIZE_MAX when it has none. */
static size_t first_audited(const struct first_of *v, size_t n, enum whatif_recorded_kind kind,
                            int64_t object)
{
    struct first_of key = {object, kind, 0};
    const struct first_of *hit = n > 0 ? bsearch(&key, v, n, sizeof(*v), cmp_object) : NULL;
    return hit ? hit->at : SIZE_MAX;
}

/* The world's project of this id; NULL when it has none. */
static struct whatif_project *project_in(struct whatif_project *v, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i].id == id)
            return &v[i];
    }
    return NULL;
}

/* Whether the world holds a pool of this id. */
static struct sched_pool_spec *pool_in(struct sched_pool_spec *v, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i].id == id)
            return &v[i];
    }
    return NULL;
}

/*
 * Quotas, caps, pools, nodes' states and projects' weights as they stood
 * when the period began, and their changes since, in time order: an
 * object's first change since then says what it was (before; absent: it did
 * not exist yet, and a node was down), an object not changed since is as it
 * is now. Changes are
 * at the second the audit trail gives. Pools and nodes that do not exist
 * now are left out (which GPUs they held is not known). Reads after
 * read_fleet, whose pools and nodes it adjusts.
 */
static int read_recorded(struct store_conn *c, struct whatif_world *w, bool as_recorded,
                         struct arena *a, struct error_info *ei)
{
    struct audit_log log = {0};
    struct row *qrows = NULL, *crows = NULL;
    struct first_of *first;
    size_t n_q = 0, n_c = 0, n_first = 0;
    int rc;

    rc = read_all(c, &model_quotas, a, &qrows, &n_q, ei);
    if (rc >= 0)
        rc = read_all(c, &model_org_quotas, a, &crows, &n_c, ei);
    if (rc >= 0 && as_recorded)
        rc = read_audited(c, &model_quotas, WHATIF_REC_QUOTA, w->from_ms, a, &log, ei);
    if (rc >= 0 && as_recorded)
        rc = read_audited(c, &model_org_quotas, WHATIF_REC_CAP, w->from_ms, a, &log, ei);
    if (rc >= 0 && as_recorded)
        rc = read_audited(c, &model_pools, WHATIF_REC_POOL, w->from_ms, a, &log, ei);
    if (rc >= 0 && as_recorded)
        rc = read_audited(c, &model_nodes, WHATIF_REC_NODE, w->from_ms, a, &log, ei);
    if (rc >= 0 && as_recorded)
        rc = read_audited(c, &model_projects, WHATIF_REC_PROJECT, w->from_ms, a, &log, ei);
    if (rc < 0) {
        free(log.v);
        return rc;
    }
    if (log.n > 0)
        qsort(log.v, log.n, sizeof(*log.v), cmp_audited_time);
    first = first_entries(&log, &n_first);

    struct whatif_quota *wq = arena_calloc(a, n_q + log.n + 1, sizeof(*wq));
    struct whatif_org_cap *wc = arena_calloc(a, n_c + log.n + 1, sizeof(*wc));
    struct sched_pool_spec *wp = arena_calloc(a, w->n_pools + 1, sizeof(*wp));
    struct whatif_node *wn = arena_calloc(a, w->n_nodes + 1, sizeof(*wn));
    struct whatif_project *wpr = arena_calloc(a, w->n_projects + 1, sizeof(*wpr));
    struct whatif_recorded_change *tc = arena_calloc(a, log.n + 1, sizeof(*tc));
    if (w->n_pools)
        memcpy(wp, w->pools, w->n_pools * sizeof(*wp));
    if (w->n_nodes)
        memcpy(wn, w->nodes, w->n_nodes * sizeof(*wn));
    if (w->n_projects)
        memcpy(wpr, w->projects, w->n_projects * sizeof(*wpr));
    w->n_quotas = w->n_org_caps = w->n_recorded = 0;
    for (size_t i = 0; i < n_q; i++) {
        if (first_audited(first, n_first, WHATIF_REC_QUOTA, model_row_id(&qrows[i])) != SIZE_MAX)
            continue; /* as its first change says */
        wq[w->n_quotas].project_id = row_int(&qrows[i], F_QUOTAS_PROJECT_ID);
        wq[w->n_quotas].class_id = row_int(&qrows[i], F_QUOTAS_GPU_CLASS_ID);
        engine__quota_of(&qrows[i], &wq[w->n_quotas].guaranteed, &wq[w->n_quotas].limit);
        w->n_quotas++;
    }
    for (size_t i = 0; i < n_c; i++) {
        if (first_audited(first, n_first, WHATIF_REC_CAP, model_row_id(&crows[i])) != SIZE_MAX)
            continue;
        wc[w->n_org_caps++] = (struct whatif_org_cap){row_int(&crows[i], F_ORG_QUOTAS_ORG_ID),
                                                      row_int(&crows[i], F_ORG_QUOTAS_GPU_CLASS_ID),
                                                      row_int(&crows[i], F_ORG_QUOTAS_LIMIT_MILLI)};
    }
    for (size_t i = 0; i < log.n; i++) {
        const struct audited *e = &log.v[i];
        struct whatif_recorded_change *t = &tc[w->n_recorded];
        bool first_of_it = first_audited(first, n_first, e->kind, e->object) == i;
        int64_t org = 0; /* of a project's change: its organization as the world says */
        if (e->kind == WHATIF_REC_POOL) {
            struct sched_pool_spec *now = pool_in(wp, w->n_pools, e->object);
            if (!now)
                continue;
            if (first_of_it)
                *now = e->before.pool;
        } else if (e->kind == WHATIF_REC_PROJECT) {
            struct whatif_project *now = project_in(wpr, w->n_projects, e->object);
            if (!now)
                continue;
            org = now->org_id;
            if (first_of_it)
                now->weight = e->before.project.weight;
        } else if (e->kind == WHATIF_REC_NODE) {
            struct whatif_node key = {.spec.id = e->object}, *now;
            now = bsearch(&key, wn, w->n_nodes, sizeof(key), cmp_node_id);
            if (!now)
                continue;
            if (first_of_it) /* down until it was made */
                now->state = e->had ? e->before.node.state : SCHED_NODE_DOWN;
        } else if (e->had && first_of_it) {
            if (e->kind == WHATIF_REC_CAP)
                wc[w->n_org_caps++] = e->before.cap;
            else
                wq[w->n_quotas++] = e->before.quota;
        }
        if (e->has) {
            *t = e->after;
        } else { /* removed: what having none means */
            *t = e->before;
            t->quota.guaranteed = 0;
            t->quota.limit = -1;
            t->cap.limit = -1;
        }
        if (e->kind == WHATIF_REC_PROJECT)
            t->project.org_id = org;
        t->at_ms = e->at_ms;
        w->n_recorded++;
    }
    w->quotas = wq;
    w->org_caps = wc;
    w->pools = wp;
    w->nodes = wn;
    w->projects = wpr;
    w->recorded = tc;
    free(first);
    free(log.v);
    return 0;
}

static int read_tenants(struct store_conn *c, struct engine_world *ew, struct arena *a,
                        bool as_recorded, struct error_info *ei)
{
    struct whatif_world *w = &ew->w;
    struct row *rows;
    size_t n;
    int rc;

    rc = read_all(c, &model_projects, a, &rows, &n, ei);
    if (rc < 0)
        return rc;
    struct whatif_project *wp = arena_calloc(a, n + 1, sizeof(*wp));
    ew->projects = arena_calloc(a, n + 1, sizeof(*ew->projects));
    for (size_t i = 0; i < n; i++) {
        wp[i] =
            (struct whatif_project){model_row_id(&rows[i]), row_int(&rows[i], F_PROJECTS_ORG_ID),
                                    (int)row_int(&rows[i], F_PROJECTS_WEIGHT)};
        ew->projects[i] = (struct engine_name){wp[i].id, row_str(&rows[i], F_PROJECTS_NAME)};
    }
    w->projects = wp;
    w->n_projects = ew->n_projects = n;

    rc = read_recorded(c, w, as_recorded, a, ei);
    if (rc < 0)
        return rc;

    rc = read_all(c, &model_flavors, a, &rows, &n, ei);
    if (rc < 0)
        return rc;
    ew->flavors = arena_calloc(a, n + 1, sizeof(*ew->flavors));
    ew->flavor_names = arena_calloc(a, n + 1, sizeof(*ew->flavor_names));
    for (size_t i = 0; i < n; i++) {
        engine__flavor_of(&ew->labels, &rows[i], &ew->flavors[i]);
        ew->flavor_names[i] = row_str(&rows[i], F_FLAVORS_NAME);
    }
    ew->n_flavors = n;
    {
        struct meter_price *prices;
        rc = billing_load_prices(c, a, &prices, &n, ei);
        w->prices = prices;
        w->n_prices = n;
    }
    return rc;
}

static int64_t org_of(const struct whatif_world *w, int64_t project_id)
{
    for (size_t i = 0; i < w->n_projects; i++) {
        if (w->projects[i].id == project_id)
            return w->projects[i].org_id;
    }
    return 0;
}

struct workload_read {
    struct engine_world *ew;
    size_t max;
    struct whatif_workload *wls;
    size_t n, cap;
};

static int workload_row(void *ctx, const struct row *r, struct error_info *ei)
{
    struct workload_read *wr = ctx;
    struct engine_world *ew = wr->ew;
    const struct flavor_info *fl =
        FIND_BY_ID(ew->flavors, ew->n_flavors, row_int(r, F_WORKLOADS_FLAVOR_ID));
    struct whatif_workload *wl;

    if (wr->n >= wr->max)
        return errinfo_set(ei, ERR_TOO_LARGE, "period",
                           "the period holds more than %zu workloads: pick a shorter one", wr->max);
    ALLOC_GROW(wr->wls, wr->n + 1, wr->cap);
    wl = &wr->wls[wr->n];
    memset(wl, 0, sizeof(*wl));
    if (engine__spec_from(fl, r, &wl->spec) < 0) {
        ew->not_replayed++; /* its flavor is gone */
        return 0;
    }
    wl->flavor_id = fl->id;
    wl->org_id = org_of(&ew->w, wl->spec.project_id);
    /* for work that never started: how long it meant to run, when it left the queue */
    wl->run_ms =
        1000 * (row_int(r, F_WORKLOADS_DURATION_S) > 0 ? row_int(r, F_WORKLOADS_DURATION_S)
                                                       : row_int(r, F_WORKLOADS_MAX_RUNTIME_S));
    if (strcmp(row_str(r, F_WORKLOADS_STATE), "cancelled") == 0 &&
        !row_is_null(r, F_WORKLOADS_FINISHED_AT))
        wl->cancel_ms = row_int(r, F_WORKLOADS_FINISHED_AT) * 1000;
    wr->n++;
    return 0;
}

/* The workloads that arrived in the period. */
static int read_workloads(struct store_conn *c, struct engine_world *ew, size_t max,
                          struct arena *a, struct whatif_workload **ret_wls, size_t *ret_n,
                          struct error_info *ei)
{
    struct workload_read wr = {.ew = ew, .max = max};
    struct store_filter f;
    int rc;

    store_filter_init(&f);
    store_filter_range(&f, F_WORKLOADS_SUBMITTED_MS, ew->w.from_ms, ew->w.to_ms);
    rc = each_row(c, &model_workloads, &f, workload_row, &wr, ei);
    if (rc < 0) {
        free(wr.wls);
        return rc;
    }
    /* into the arena, so that the world is one piece */
    *ret_wls = arena_calloc(a, wr.n + 1, sizeof(**ret_wls));
    if (wr.n)
        memcpy(*ret_wls, wr.wls, wr.n * sizeof(*wr.wls));
    free(wr.wls);
    *ret_n = wr.n;
    return 0;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static int cmp_wl_id(const void *x, const void *y)
{
    const struct whatif_workload *a = x, *b = y;
    return a->spec.id < b->spec.id ? -1 : a->spec.id > b->spec.id;
}

struct runs_read {
    const struct whatif_workload *wls;
    size_t n;
    struct runs *runs;
    int64_t now_ms;
};

static int run_row(void *ctx, const struct row *row, struct error_info *ei)
{
    struct runs_read *rr = ctx;
    struct whatif_workload key = {0};
    const struct whatif_workload *hit;
    struct runs *r;
    int64_t start = row_int(row, F_ALLOCATIONS_STARTED_MS);
    bool open = row_is_null(row, F_ALLOCATIONS_ENDED_MS);
    int64_t end = open ? rr->now_ms : row_int(row, F_ALLOCATIONS_ENDED_MS);

    (void)ei;
    key.spec.id = row_int(row, F_ALLOCATIONS_WORKLOAD_ID);
    hit = bsearch(&key, rr->wls, rr->n, sizeof(key), cmp_wl_id);
    if (!hit)
        return 0;
    r = &rr->runs[hit - rr->wls];
    if (!r->first_start || start < r->first_start)
        r->first_start = start;
    if (start > r->last_start) { /* a later run */
        r->last_start = start;
        r->last_end = end;
        r->open = open;
    } else if (start == r->last_start && end > r->last_end) {
        r->last_end = end;
        r->open |= open;
    }
    return 0;
}

/* First start and last run of each workload, from allocations that started since from_ms. */
static int read_runs(struct store_conn *c, const struct whatif_workload *wls, size_t n,
                     struct runs *runs, int64_t from_ms, int64_t until_ms, int64_t now_ms,
                     struct error_info *ei)
{
    struct runs_read rr = {wls, n, runs, now_ms};
    struct store_filter f;

    store_filter_init(&f);
    store_filter_range(&f, F_ALLOCATIONS_STARTED_MS, from_ms, until_ms);
    return each_row(c, &model_allocations, &f, run_row, &rr, ei);
}

void engine_world_settings(const struct engine *e, struct sched_config *ret_cfg,
                           const char **ret_policy)
{
    sched_config_init(ret_cfg);
    ret_cfg->reserve_after_ms = e ? e->opt.reserve_after_ms : 10 * 60 * 1000;
    ret_cfg->default_grace_ms = e ? e->opt.default_grace_ms : 30 * 1000;
    *ret_policy = e && e->opt.policy ? e->opt.policy->name : NULL;
}

int engine_world_read(const struct engine *e, struct store_conn *c, int64_t from_ms, int64_t to_ms,
                      bool as_recorded, size_t max_workloads, int64_t now_ms, struct arena *a,
                      struct engine_world *ret, struct error_info *ei)
{
    struct whatif_world *w = &ret->w;
    struct whatif_workload *wls = NULL;
    struct runs *runs = NULL;
    size_t n = 0;
    int rc;

    memset(ret, 0, sizeof(*ret));
    engine_world_settings(e, &w->cfg, &w->policy);
    w->from_ms = from_ms;
    w->to_ms = to_ms;
    rc = read_fleet(c, ret, a, ei);
    if (rc >= 0)
        rc = read_tenants(c, ret, a, as_recorded, ei);
    if (rc >= 0)
        rc = read_workloads(c, ret, max_workloads, a, &wls, &n, ei);
    if (rc >= 0) {
        runs = xcalloc(n + 1, sizeof(*runs));
        if (n > 0)
            rc = read_runs(c, wls, n, runs, from_ms, to_ms + WHATIF_DRAIN_MS, now_ms, ei);
    }
    /*
     * Work that never started is replayed too (it held its place in the queue): for as long as
     * it asked (duration_s, else max_runtime_s), else the median run of the period's started
     * work; cancelled while queued, it leaves the queue when it did.
     */
    if (rc >= 0) {
        int64_t *run_of = xcalloc(n + 1, sizeof(*run_of)), median = 3600000;
        size_t n_run = 0;
        for (size_t i = 0; i < n; i++) {
            if (runs[i].first_start)
                run_of[n_run++] = runs[i].last_end - runs[i].last_start;
        }
        if (n_run > 0) {
            qsort(run_of, n_run, sizeof(*run_of), cmp_i64);
            median = run_of[n_run / 2];
        }
        free(run_of);
        for (size_t i = 0; i < n; i++) {
            int64_t run = runs[i].last_end - runs[i].last_start;
            if (runs[i].first_start) {
                wls[i].recorded_start_ms = runs[i].first_start;
                wls[i].cancel_ms = 0; /* it ran: its run time is on record */
                ret->still_running += runs[i].open;
            } else {
                run = wls[i].run_ms > 0 ? wls[i].run_ms : median;
                ret->never_started++;
            }
            wls[i].run_ms = run < 1 ? 1 : run > WHATIF_MAX_RUN_MS ? WHATIF_MAX_RUN_MS : run;
        }
    }
    free(runs);
    w->workloads = wls;
    w->n_workloads = rc >= 0 ? n : 0;
    if (rc < 0)
        engine_world_release(ret);
    return rc;
}

void engine_world_release(struct engine_world *w)
{
    if (w)
        engine__label_table_release(&w->labels);
}

/* ---- a trace file instead of the store's workloads ---- */

enum trace_col {
    TC_SUBMITTED,
    TC_PROJECT,
    TC_FLAVOR,
    TC_RUN,
    TC_CLASS,
    TC_REPLICAS,
    TC_PRIO,
    TC_STARTED,
    TC_N
};

static const char *const trace_cols[TC_N] = {"submitted_at", "project",        "flavor",
                                             "run_s",        "priority_class", "replicas",
                                             "priority",     "started_at"};

struct trace {
    struct engine_world *ew;
    struct arena *a;
    struct error_info *ei;
    int col[TC_N]; /* field index of each column, -1 when absent */
    size_t max;
    struct whatif_workload *wls;
    size_t n, cap;
};

/* A project or flavor by name or id, among the world's names; 0 when none. */
static int64_t name_or_id(const struct engine_name *v, size_t n, const char *s)
{
    int64_t id = 0;
    bool numeric = parse_int64(s, 1, INT64_MAX, &id) == 0;
    for (size_t i = 0; i < n; i++) {
        if (numeric ? v[i].id == id : strcmp(v[i].name, s) == 0)
            return v[i].id;
    }
    return 0;
}

static int trace_header(struct trace *t, char *const *fields, size_t n)
{
    for (int k = 0; k < TC_N; k++)
        t->col[k] = -1;
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < TC_N; k++) {
            if (strcmp(fields[i], trace_cols[k]) == 0)
                t->col[k] = (int)i;
        }
    }
    for (int k = TC_SUBMITTED; k <= TC_RUN; k++) {
        if (t->col[k] < 0)
            return errinfo_set(t->ei, ERR_INVALID, "trace",
                               "trace: the header must name submitted_at, project, flavor and "
                               "run_s (and may name priority_class, replicas, priority and "
                               "started_at); '%s' is missing",
                               trace_cols[k]);
    }
    return 0;
}

static const char *field_of(const struct trace *t, char *const *fields, size_t n, int k)
{
    return t->col[k] >= 0 && (size_t)t->col[k] < n ? fields[t->col[k]] : "";
}

static int trace_bad(struct trace *t, size_t line, int k, const char *v, const char *why)
{
    return errinfo_set(t->ei, ERR_INVALID, "trace", "trace line %zu: %s '%.64s' %s", line,
                       trace_cols[k], v, why);
}

/* One line: a workload row made as the API makes one, read by the one reading of rows. */
static int trace_record(void *ctx, char *const *fields, size_t n, size_t row, size_t line)
{
    struct trace *t = ctx;
    struct engine_world *ew = t->ew;
    const char *v;
    int64_t submit = 0, run_s = 0, replicas = 1, prio = 0, started = 0, project, flavor;
    const struct flavor_info *fl;
    struct row w;
    struct whatif_workload *wl;

    if (row == 1)
        return trace_header(t, fields, n);
    if (t->n >= t->max)
        return errinfo_set(t->ei, ERR_TOO_LARGE, "trace", "trace: more than %zu workloads", t->max);
    v = field_of(t, fields, n, TC_SUBMITTED);
    if (time_parse_rfc3339(v, &submit) < 0)
        return trace_bad(t, line, TC_SUBMITTED, v, "is not an RFC 3339 time");
    v = field_of(t, fields, n, TC_STARTED);
    if (*v && time_parse_rfc3339(v, &started) < 0)
        return trace_bad(t, line, TC_STARTED, v, "is not an RFC 3339 time");
    v = field_of(t, fields, n, TC_PROJECT);
    project = name_or_id(ew->projects, ew->n_projects, v);
    if (!project)
        return trace_bad(t, line, TC_PROJECT, v, "names no project");
    v = field_of(t, fields, n, TC_FLAVOR);
    flavor = 0;
    for (size_t i = 0; i < ew->n_flavors && !flavor; i++) {
        int64_t id = 0;
        if ((parse_int64(v, 1, INT64_MAX, &id) == 0 && id == ew->flavors[i].id) ||
            strcmp(v, ew->flavor_names[i]) == 0)
            flavor = ew->flavors[i].id;
    }
    fl = flavor ? FIND_BY_ID(ew->flavors, ew->n_flavors, flavor) : NULL;
    if (!fl)
        return trace_bad(t, line, TC_FLAVOR, v, "names no flavor");
    v = field_of(t, fields, n, TC_RUN);
    if (parse_int64(v, 1, WHATIF_MAX_RUN_MS / 1000, &run_s) < 0)
        return trace_bad(t, line, TC_RUN, v, "must be 1 to 2678400 seconds");
    v = field_of(t, fields, n, TC_REPLICAS);
    if (*v && parse_int64(v, 1, SCHED_MAX_REPLICAS, &replicas) < 0)
        return trace_bad(t, line, TC_REPLICAS, v, "must be 1 to 256");
    v = field_of(t, fields, n, TC_PRIO);
    if (*v && parse_int64(v, -1000, 1000, &prio) < 0)
        return trace_bad(t, line, TC_PRIO, v, "must be -1000 to 1000");
    v = field_of(t, fields, n, TC_CLASS);
    if (!*v)
        v = "auto";
    if (strcmp(v, "owned") != 0 && strcmp(v, "opportunistic") != 0 && strcmp(v, "auto") != 0)
        return trace_bad(t, line, TC_CLASS, v, "must be owned, opportunistic or auto");
    w = model_row_new(&model_workloads, t->a);
    row_set_int(&w, F_WORKLOADS_ID, (int64_t)t->n + 1);
    row_set_int(&w, F_WORKLOADS_PROJECT_ID, project);
    row_set_int(&w, F_WORKLOADS_FLAVOR_ID, flavor);
    row_set_str(&w, t->a, F_WORKLOADS_PRIORITY_CLASS, v);
    row_set_int(&w, F_WORKLOADS_PRIORITY, prio);
    row_set_int(&w, F_WORKLOADS_SUBMITTED_MS, submit * 1000);
    row_set_int(&w, F_WORKLOADS_REPLICAS, replicas);
    row_set_int(&w, F_WORKLOADS_MIN_RUNTIME_S, 0);
    row_set_null(&w, F_WORKLOADS_GRACE_S);
    row_set_int(&w, F_WORKLOADS_REQUEUE, 1);
    ALLOC_GROW(t->wls, t->n + 1, t->cap);
    wl = &t->wls[t->n];
    memset(wl, 0, sizeof(*wl));
    engine__spec_from(fl, &w, &wl->spec);
    wl->flavor_id = flavor;
    wl->org_id = org_of(&ew->w, project);
    wl->run_ms = run_s * 1000;
    wl->recorded_start_ms = started * 1000;
    t->n++;
    return 0;
}

int engine_world_trace(struct engine_world *ew, const char *csv, size_t len, size_t max,
                       struct arena *a, struct error_info *ei)
{
    struct trace t = {.ew = ew, .a = a, .ei = ei, .max = max};
    struct whatif_workload *wls;
    int rc = inv_csv_parse(csv, len, trace_record, &t, ei);

    if (rc >= 0 && t.n == 0)
        rc = errinfo_set(ei, ERR_INVALID, "trace", "trace: no workloads after the header");
    if (rc < 0) {
        free(t.wls);
        return rc;
    }
    wls = arena_calloc(a, t.n + 1, sizeof(*wls));
    memcpy(wls, t.wls, t.n * sizeof(*wls));
    free(t.wls);
    ew->w.workloads = wls;
    ew->w.n_workloads = t.n;
    ew->not_replayed = ew->never_started = ew->still_running = 0;
    return 0;
}
