/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inventory.c: the GPU inventory, one view over what the fleet knows (GPUs,
 * nodes, clusters, classes), who owns each GPU (its pool's owner, the
 * owner's organization and manager, cost, who may borrow it), who uses it now
 * (open allocations) and what the imported spreadsheet adds (site, intended
 * use, environment), plus GPUs only the spreadsheet knows.
 *
 *   GET  /v1/inventory[?org=&manager=&cluster=&class=&state=&owner=]
 *   GET  /v1/inventory/export            the same rows as the spreadsheet's CSV
 *   POST /v1/inventory/import            a CSV body (admins), all or nothing
 *
 * Who sees what: admins every GPU; others the GPUs of pools whose owner or
 * access list names a project or organization they can see, and the GPUs of
 * organizations they manage (transitively). Who uses a GPU is named only to
 * callers who can see that project.
 *
 * State, until the collectors report activity: down (failed or node down),
 * draining (node drain, free), allocated, free; GPUs only the spreadsheet
 * knows are unknown.
 */
#include "base/common.h"

#include "api/api-int.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "collect/collector.h"
#include "inventory/inventory.h"

struct tables {
    struct row *gpus, *nodes, *clusters, *classes, *pools, *orgs, *projects, *allocs, *items;
    size_t n_gpus, n_nodes, n_clusters, n_classes, n_pools, n_orgs, n_projects, n_allocs, n_items;
    struct alloc_index held; /* open allocations by GPU */
};

static int cmp_item_uuid(const void *a, const void *b);

static int load_tables(struct req *r, struct tables *t, struct error_info *ei)
{
    int rc;
    if ((rc = req_list_all(r, &model_gpus, false, &t->gpus, &t->n_gpus, ei)) < 0 ||
        (rc = req_list_all(r, &model_nodes, false, &t->nodes, &t->n_nodes, ei)) < 0 ||
        (rc = req_list_all(r, &model_clusters, false, &t->clusters, &t->n_clusters, ei)) < 0 ||
        (rc = req_list_all(r, &model_gpu_classes, false, &t->classes, &t->n_classes, ei)) < 0 ||
        (rc = req_list_all(r, &model_pools, false, &t->pools, &t->n_pools, ei)) < 0 ||
        (rc = req_list_all(r, &model_organizations, false, &t->orgs, &t->n_orgs, ei)) < 0 ||
        (rc = req_list_all(r, &model_projects, false, &t->projects, &t->n_projects, ei)) < 0 ||
        (rc = req_list_all(r, &model_allocations, true, &t->allocs, &t->n_allocs, ei)) < 0 ||
        (rc = req_list_all(r, &model_inventory_items, false, &t->items, &t->n_items, ei)) < 0)
        return rc;
    if (t->n_items)
        qsort(t->items, t->n_items, sizeof(struct row), cmp_item_uuid);
    alloc_index_build(r, t->allocs, t->n_allocs, &t->held);
    return 0;
}

static const char *s_of(const struct resource_def *d, const struct row *r, const char *f)
{
    const struct value *v = r ? model_get(d, r, f) : NULL;
    return v && !v->null && v->s ? v->s : "";
}

static int64_t i_of(const struct resource_def *d, const struct row *r, const char *f)
{
    const struct value *v = r ? model_get(d, r, f) : NULL;
    return v && !v->null ? v->i : 0;
}

/* The manager of an organization: its own, else the nearest ancestor's; 0 when none. */
static int64_t manager_of(const struct tables *t, int64_t org)
{
    for (int depth = 0; org && depth < 64; depth++) {
        const struct row *o = rows_find(t->orgs, t->n_orgs, org);
        if (!o)
            return 0;
        if (i_of(&model_organizations, o, "manager_id"))
            return i_of(&model_organizations, o, "manager_id");
        org = i_of(&model_organizations, o, "parent_id");
    }
    return 0;
}

/* Whether org is `top` or lies under it. */
static bool org_under(const struct tables *t, int64_t org, int64_t top)
{
    for (int depth = 0; org && depth < 64; depth++) {
        if (org == top)
            return true;
        org = i_of(&model_organizations, rows_find(t->orgs, t->n_orgs, org), "parent_id");
    }
    return false;
}

/* Whether the user manages org or one of its ancestors. */
static bool managed_by(const struct tables *t, int64_t org, int64_t user)
{
    for (int depth = 0; org && depth < 64; depth++) {
        const struct row *o = rows_find(t->orgs, t->n_orgs, org);
        if (i_of(&model_organizations, o, "manager_id") == user)
            return true;
        org = i_of(&model_organizations, o, "parent_id");
    }
    return false;
}

static bool list_has_visible(struct req *r, const char *json, bool projects)
{
    json_t *list = json_loads(json && *json ? json : "[]", 0, NULL), *v;
    size_t i;
    bool any = false;
    json_array_foreach(list, i, v)
    {
        int64_t id = json_integer_value(v);
        if (projects ? rbac_sees_project(r, id) : rbac_sees_org(r, id))
            any = true;
    }
    json_decref(list);
    return any;
}

static json_t *names_of(const struct tables *t, const char *json, bool projects)
{
    json_t *list = json_loads(json && *json ? json : "[]", 0, NULL), *v, *out = json_array();
    size_t i;
    json_array_foreach(list, i, v)
    {
        int64_t id = json_integer_value(v);
        const struct row *row = projects ? rows_find(t->projects, t->n_projects, id)
                                         : rows_find(t->orgs, t->n_orgs, id);
        json_array_append_new(
            out, json_string(s_of(projects ? &model_projects : &model_organizations, row, "name")));
    }
    json_decref(list);
    return out;
}

static int cmp_item_uuid(const void *a, const void *b)
{
    return strcmp(s_of(&model_inventory_items, a, "uuid"), s_of(&model_inventory_items, b, "uuid"));
}

/* The spreadsheet row of a UUID (t->items sorted by uuid), or NULL. */
static const struct row *item_for(const struct tables *t, const char *uuid)
{
    struct row key;
    struct value v[2] = {{0}, {.set = true, .s = uuid}};
    if (!uuid || !*uuid || !t->n_items)
        return NULL;
    key.v = v; /* field 1 is uuid */
    return bsearch(&key, t->items, t->n_items, sizeof(struct row), cmp_item_uuid);
}

struct filters {
    int64_t org, manager;
    const char *cluster, *cls, *state, *owner;
};

static const char *user_name(struct req *r, int64_t id)
{
    struct row u;
    if (!id || store_get(req_db(r), &model_users, id, &r->arena, &u, NULL) < 0)
        return NULL;
    return row_get(&u, F_USERS_NAME)->s;
}

/* What the collectors said of a GPU: activity (0..1), memory in use, last seen, why. */
static void telemetry_fields(json_t *j, const struct collector_gpu *cg)
{
    if (!cg) {
        json_object_set_new(j, "telemetry", json_null());
        return;
    }
    json_object_set_new(
        j, "telemetry",
        json_pack("{s:o,s:o,s:I,s:s}", "activity",
                  inv_has(cg->activity) ? json_real(cg->activity) : json_null(), "mem_used_mib",
                  inv_has(cg->mem_used_mib) ? json_real(cg->mem_used_mib) : json_null(),
                  "last_seen_ms", (json_int_t)cg->last_seen_ms, "reason", cg->reason));
}

const char *inventory_gpu_state(struct req *r, const struct row *gpu, const struct row *node,
                                bool allocated, struct collector_gpu *ret_telemetry, bool *ret_seen)
{
    const char *health = s_of(&model_gpus, gpu, "health");
    const char *node_state = s_of(&model_nodes, node, "state");
    const char *state = allocated ? "allocated" : "free";
    struct collector_gpu cg;
    bool seen = collector_gpu(r->api->opt.collector, s_of(&model_gpus, gpu, "uuid"), allocated,
                              time_now_ms(), &cg);

    if (ret_telemetry)
        *ret_telemetry = cg;
    *ret_seen = seen;
    /* With telemetry, what the GPU is doing decides: busy, idle-allocated, free, down. */
    if (seen)
        state = inv_state_name(cg.state);
    if (strcmp(health, "failed") == 0 || strcmp(health, "down") == 0 ||
        strcmp(node_state, "down") == 0)
        return "down";
    if (strcmp(health, "mig") == 0)
        return "mig"; /* split: its MIG instances are scheduled, not it */
    if (!allocated && strcmp(node_state, "drain") == 0 && strcmp(state, "down") != 0)
        return "draining";
    return state;
}

/* One fleet GPU as a view row; NULL when the caller may not see it or a filter drops it. */
static json_t *gpu_row(struct req *r, const struct tables *t, const struct row *g,
                       const struct filters *flt, bool *used_items)
{
    const struct resource_def *gd = &model_gpus;
    const struct row *node = rows_find(t->nodes, t->n_nodes, i_of(gd, g, "node_id"));
    const struct row *cluster =
        rows_find(t->clusters, t->n_clusters, i_of(&model_nodes, node, "cluster_id"));
    const struct row *cls = rows_find(t->classes, t->n_classes, i_of(gd, g, "gpu_class_id"));
    const char *uuid = s_of(gd, g, "uuid");
    int64_t pool_id = model_pool_of_gpu(t->pools, t->n_pools, model_row_id(g),
                                        i_of(&model_nodes, node, "cluster_id"),
                                        s_of(&model_nodes, node, "labels"));
    const struct row *pool = pool_id ? rows_find(t->pools, t->n_pools, pool_id) : NULL;
    int64_t owner_prj = i_of(&model_pools, pool, "owner_project_id");
    int64_t owner_org = i_of(&model_pools, pool, "owner_org_id");
    const struct row *item = item_for(t, uuid), *alloc = NULL;
    const char *owner_name, *state;
    struct collector_gpu cg;
    bool seen;
    int64_t manager;
    json_t *j, *used = json_null();

    if (item) /* the fleet knows this GPU: its spreadsheet row is not a row of its own */
        used_items[item - t->items] = true;
    if (owner_prj)
        owner_org =
            i_of(&model_projects, rows_find(t->projects, t->n_projects, owner_prj), "org_id");
    manager = manager_of(t, owner_org);
    owner_name =
        owner_prj ? s_of(&model_projects, rows_find(t->projects, t->n_projects, owner_prj), "name")
        : owner_org ? s_of(&model_organizations, rows_find(t->orgs, t->n_orgs, owner_org), "name")
                    : "";
    if (!r->who->admin) {
        bool sees =
            (owner_prj && rbac_sees_project(r, owner_prj)) ||
            (owner_org && rbac_role_on_org(r, owner_org) >= ROLE_VIEWER) ||
            (owner_org && managed_by(t, owner_org, r->who->user_id)) ||
            (pool && (list_has_visible(r, s_of(&model_pools, pool, "access_project_ids"), true) ||
                      list_has_visible(r, s_of(&model_pools, pool, "access_org_ids"), false)));
        if (!sees)
            return NULL;
    }
    alloc = alloc_index_find(&t->held, model_row_id(g));
    state = inventory_gpu_state(r, g, node, alloc != NULL, &cg, &seen);

    if ((flt->org && !(owner_org && org_under(t, owner_org, flt->org))) ||
        (flt->manager && !(owner_org && managed_by(t, owner_org, flt->manager))) ||
        (flt->cluster && strcmp(flt->cluster, s_of(&model_clusters, cluster, "name")) != 0) ||
        (flt->cls && strcmp(flt->cls, s_of(&model_gpu_classes, cls, "name")) != 0) ||
        (flt->state && strcmp(flt->state, state) != 0) ||
        (flt->owner && strcmp(flt->owner, owner_name) != 0))
        return NULL;

    if (alloc) {
        int64_t prj = i_of(&model_allocations, alloc, "project_id");
        bool named = rbac_sees_project(r, prj);
        used = json_pack(
            "{s:o,s:o,s:s,s:I,s:I}", "workload_id",
            named ? json_integer(i_of(&model_allocations, alloc, "workload_id")) : json_null(),
            "project",
            named ? json_string(
                        s_of(&model_projects, rows_find(t->projects, t->n_projects, prj), "name"))
                  : json_string("another tenant"),
            "priority_class", s_of(&model_allocations, alloc, "priority_class"), "milli",
            (json_int_t)i_of(&model_allocations, alloc, "milli"), "since_ms",
            (json_int_t)i_of(&model_allocations, alloc, "started_ms"));
        /* lent: work of a project other than the pool's owner holds it (named or not) */
        json_object_set_new(used, "borrowed",
                            json_boolean(i_of(&model_allocations, alloc, "borrowed") != 0));
    }
    j = json_pack(
        "{s:s,s:I,s:I,s:s,s:s,s:s,s:s,s:I,s:s,s:s}", "uuid", uuid, "gpu_id",
        (json_int_t)model_row_id(g), "index", (json_int_t)i_of(gd, g, "index"), "node",
        s_of(&model_nodes, node, "name"), "cluster", s_of(&model_clusters, cluster, "name"),
        "gpu_class", s_of(&model_gpu_classes, cls, "name"), "model",
        s_of(&model_inventory_items, item, "model"), "memory_mib",
        (json_int_t)i_of(gd, g, "memory_mib"), "health", s_of(gd, g, "health"), "state", state);
    json_object_set_new(j, "source", json_string(item ? "fleet+import" : "fleet"));
    json_object_set_new(j, "pool",
                        pool ? json_string(s_of(&model_pools, pool, "name")) : json_null());
    json_object_set_new(j, "owner",
                        !pool ? json_null()
                              : json_pack("{s:s,s:I,s:s}", "kind", owner_prj ? "project" : "org",
                                          "id", (json_int_t)(owner_prj ? owner_prj : owner_org),
                                          "name", owner_name));
    json_object_set_new(j, "org",
                        owner_org
                            ? json_string(s_of(&model_organizations,
                                               rows_find(t->orgs, t->n_orgs, owner_org), "name"))
                            : json_null());
    json_object_set_new(j, "manager",
                        manager ? json_string(user_name(r, manager) ? user_name(r, manager) : "")
                                : json_null());
    json_object_set_new(j, "cost_per_gpu_hour_micros",
                        pool ? json_integer(i_of(&model_pools, pool, "cost_per_gpu_hour_micros"))
                             : json_null());
    json_object_set_new(j, "currency",
                        pool ? json_string(s_of(&model_pools, pool, "currency")) : json_null());
    json_object_set_new(j, "access",
                        json_pack("{s:o,s:o}", "projects",
                                  names_of(t, s_of(&model_pools, pool, "access_project_ids"), true),
                                  "orgs",
                                  names_of(t, s_of(&model_pools, pool, "access_org_ids"), false)));
    json_object_set_new(j, "used_by", used);
    telemetry_fields(j, seen ? &cg : NULL);
    json_object_set_new(j, "site", json_string(s_of(&model_inventory_items, item, "site")));
    json_object_set_new(j, "intended_use",
                        json_string(s_of(&model_inventory_items, item, "intended_use")));
    json_object_set_new(j, "environment",
                        json_string(s_of(&model_inventory_items, item, "environment")));
    return j;
}

/* A GPU only the spreadsheet knows (admins only: nothing ties it to a tenant yet). */
static json_t *item_row(struct req *r, const struct row *it, const struct filters *flt)
{
    const struct resource_def *d = &model_inventory_items;
    char cls[64] = "";
    struct collector_gpu cg;
    bool seen =
        collector_gpu(r->api->opt.collector, s_of(d, it, "uuid"), false, time_now_ms(), &cg);
    const char *state = seen ? inv_state_name(cg.state) : "unknown";
    json_t *j;

    inv_model_class(s_of(d, it, "model"), NULL, cls, sizeof(cls));
    if (flt->org || flt->manager || (flt->state && strcmp(flt->state, state) != 0) ||
        (flt->cluster && strcmp(flt->cluster, s_of(d, it, "cluster")) != 0) ||
        (flt->cls && strcmp(flt->cls, cls) != 0) ||
        (flt->owner && strcmp(flt->owner, s_of(d, it, "owner")) != 0))
        return NULL;
    j = json_pack("{s:s,s:n,s:n,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "uuid", s_of(d, it, "uuid"),
                  "gpu_id", "index", "node", s_of(d, it, "node"), "cluster", s_of(d, it, "cluster"),
                  "gpu_class", cls, "model", s_of(d, it, "model"), "state", state, "source",
                  "import", "site", s_of(d, it, "site"));
    telemetry_fields(j, seen ? &cg : NULL);
    json_object_set_new(j, "owner",
                        json_pack("{s:s,s:s}", "kind", "team", "name", s_of(d, it, "owner")));
    json_object_set_new(j, "manager", json_string(s_of(d, it, "manager")));
    json_object_set_new(j, "intended_use", json_string(s_of(d, it, "intended_use")));
    json_object_set_new(j, "environment", json_string(s_of(d, it, "environment")));
    return j;
}

static int id_or_name(struct req *r, const char *arg, const struct resource_def *def, int64_t *ret,
                      struct error_info *ei)
{
    const char *v = req_arg(r, arg);
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc;

    *ret = 0;
    if (!v)
        return 0;
    if (parse_int64(v, 1, INT64_MAX, ret) == 0)
        return 0;
    store_filter_init(&f);
    store_filter_eq_str(&f, model_field_index(def, "name"), v);
    rc = store_list(req_db(r), def, &f, &r->arena, &rows, &n, ei);
    if (rc >= 0 && n != 1)
        rc = errinfo_set(ei, ERR_NOT_FOUND, arg, "no %s '%.60s'", def->singular, v);
    if (rc >= 0)
        *ret = model_row_id(&rows[0]);
    return rc;
}

/* The view's rows for the caller and the query's filters. */
static int view_rows(struct req *r, json_t **ret, struct error_info *ei)
{
    struct filters flt = {.cluster = req_arg(r, "cluster"),
                          .cls = req_arg(r, "class"),
                          .state = req_arg(r, "state"),
                          .owner = req_arg(r, "owner")};
    struct tables t = {0};
    bool *used;
    json_t *items = json_array();
    int rc;

    if ((rc = id_or_name(r, "org", &model_organizations, &flt.org, ei)) < 0 ||
        (rc = id_or_name(r, "manager", &model_users, &flt.manager, ei)) < 0 ||
        (rc = load_tables(r, &t, ei)) < 0) {
        json_decref(items);
        return rc;
    }
    if (flt.org && !rbac_sees_org(r, flt.org) && !managed_by(&t, flt.org, r->who->user_id)) {
        json_decref(items);
        return errinfo_set(ei, ERR_NOT_FOUND, "org", "no organization '%.60s'", req_arg(r, "org"));
    }
    used = arena_calloc(&r->arena, t.n_items + 1, sizeof(bool));
    for (size_t i = 0; i < t.n_gpus; i++) {
        json_t *j = gpu_row(r, &t, &t.gpus[i], &flt, used);
        if (j)
            json_array_append_new(items, j);
    }
    for (size_t i = 0; r->who->admin && i < t.n_items; i++) {
        json_t *j = used[i] ? NULL : item_row(r, &t.items[i], &flt);
        if (j)
            json_array_append_new(items, j);
    }
    *ret = items;
    return 0;
}

/* The telemetry sources and their health (admins: they name hosts and URLs). */
static json_t *sources_json(struct req *r)
{
    struct collector_source src[16];
    size_t n = r->who->admin ? collector_sources(r->api->opt.collector, src, 16) : 0;
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(
            out, json_pack("{s:s,s:b,s:I,s:i,s:s,s:I}", "name", src[i].name, "stale", src[i].stale,
                           "last_ok_ms", (json_int_t)src[i].last_ok_ms, "failures", src[i].failures,
                           "error", src[i].error, "gpus", (json_int_t)src[i].gpus));
    return out;
}

void inventory_route_list(struct req *r)
{
    struct error_info ei = {0};
    json_t *items = NULL, *counts = json_object(), *it;
    size_t i;
    int rc = view_rows(r, &items, &ei);

    if (rc < 0) {
        json_decref(counts);
        req_reply_error(r, rc, &ei);
        return;
    }
    json_array_foreach(items, i, it)
    {
        const char *st = json_string_value(json_object_get(it, "state"));
        json_object_set_new(counts, st,
                            json_integer(json_integer_value(json_object_get(counts, st)) + 1));
    }
    req_reply_json(
        r, 200,
        json_pack("{s:o,s:o,s:o}", "items", items, "states", counts, "sources", sources_json(r)));
}

void inventory_route_export(struct req *r)
{
    struct error_info ei = {0};
    struct inv_table tab;
    struct buf out;
    json_t *items = NULL, *it;
    size_t i;
    int rc = view_rows(r, &items, &ei);

    if (rc < 0) {
        req_reply_error(r, rc, &ei);
        return;
    }
    inv_table_init(&tab);
    json_array_foreach(items, i, it)
    {
        struct inv_item row;
        const char *owner =
            json_string_value(json_object_get(json_object_get(it, "owner"), "name"));
        const char *model = json_string_value(json_object_get(it, "model"));
        row.f[INV_COL_GPU] = (char *)json_string_value(json_object_get(it, "uuid"));
        row.f[INV_COL_MODEL] =
            (char *)(model && *model ? model : json_string_value(json_object_get(it, "gpu_class")));
        row.f[INV_COL_NODE] = (char *)json_string_value(json_object_get(it, "node"));
        row.f[INV_COL_CLUSTER] = (char *)json_string_value(json_object_get(it, "cluster"));
        row.f[INV_COL_SITE] = (char *)json_string_value(json_object_get(it, "site"));
        row.f[INV_COL_OWNER] = (char *)owner;
        row.f[INV_COL_MANAGER] = (char *)json_string_value(json_object_get(it, "manager"));
        row.f[INV_COL_INTENDED_USE] =
            (char *)json_string_value(json_object_get(it, "intended_use"));
        row.f[INV_COL_ENVIRONMENT] = (char *)json_string_value(json_object_get(it, "environment"));
        if (row.f[INV_COL_GPU] && *row.f[INV_COL_GPU]) /* a GPU without a UUID has no key */
            inv_table_add(&tab, &row);
    }
    buf_init(&out, 256u << 20);
    rc = inv_csv_export(&tab, &out);
    inv_table_release(&tab);
    json_decref(items);
    if (rc < 0) {
        buf_release(&out);
        errinfo_set(&ei, rc, NULL, "the inventory could not be exported");
        req_reply_error(r, rc, &ei);
        return;
    }
    r->status = 200;
    r->raw_len = out.len;
    r->raw = arena_strndup(&r->arena, out.data ? out.data : "", out.len);
    r->content_type = "text/csv; charset=utf-8";
    buf_release(&out);
}

/* Writes one spreadsheet row: a new item, or the changed fields of the one with its UUID. */
static int upsert(struct req *r, const struct inv_item *it, int *ret_added, struct error_info *ei)
{
    static const char *const cols[INV_N_COLS] = {[INV_COL_MODEL] = "model",
                                                 [INV_COL_NODE] = "node",
                                                 [INV_COL_CLUSTER] = "cluster",
                                                 [INV_COL_SITE] = "site",
                                                 [INV_COL_OWNER] = "owner",
                                                 [INV_COL_MANAGER] = "manager",
                                                 [INV_COL_INTENDED_USE] = "intended_use",
                                                 [INV_COL_ENVIRONMENT] = "environment"};
    const struct resource_def *d = &model_inventory_items;
    struct store_filter f;
    struct row *rows, row;
    size_t n;
    int64_t id;
    int rc;

    store_filter_init(&f);
    store_filter_eq_str(&f, F_INVENTORY_ITEMS_UUID, it->f[INV_COL_GPU]);
    if ((rc = store_list(req_db(r), d, &f, &r->arena, &rows, &n, ei)) < 0)
        return rc;
    row = n ? rows[0] : model_row_new(d, &r->arena);
    row_set_str(&row, &r->arena, F_INVENTORY_ITEMS_UUID, it->f[INV_COL_GPU]);
    for (int c = 0; c < INV_N_COLS; c++) {
        if (cols[c])
            row_set_str(&row, &r->arena, model_field_index(d, cols[c]), it->f[c]);
    }
    row_set_int(&row, F_INVENTORY_ITEMS_IMPORTED_AT, r->now);
    if (n)
        return store_update(req_db(r), d, model_row_id(&row), &row, ei);
    rc = store_insert(req_db(r), d, &row, &id, ei);
    *ret_added += rc >= 0;
    return rc;
}

void inventory_route_import(struct req *r)
{
    struct error_info ei = {0};
    struct inv_table tab;
    struct buf report;
    int added = 0, rc, n;

    /* admins only (the route table): nothing ties a new GPU to a tenant yet */
    inv_table_init(&tab);
    buf_init(&report, 64 * 1024);
    n = inv_csv_import(r->body.data ? r->body.data : "", r->body.len, false, &tab, &report, &ei);
    if (n < 0) {
        json_t *err;
        req_reply_error(r, n, &ei);
        /* every bad row, not just the first */
        err = json_object_get(json_object_get(r->json, "error"), "detail");
        if (err && report.len)
            json_object_set_new(err, "rows", json_string(report.data));
        buf_release(&report);
        return;
    }
    rc = store_begin(req_db(r), &ei);
    for (size_t i = 0; rc >= 0 && i < tab.n; i++)
        rc = upsert(r, &tab.items[i], &added, &ei);
    if (rc >= 0)
        rc = resource_audit(r, req_db(r), "import", &model_inventory_items, 0, NULL, NULL, &ei);
    if (rc >= 0)
        rc = store_commit(req_db(r), &ei);
    if (rc < 0) {
        store_rollback(req_db(r));
        req_reply_error(r, rc, &ei);
    } else {
        json_t *unknown = json_array();
        for (size_t i = 0; i < tab.n_unknown; i++)
            json_array_append_new(unknown, json_string(tab.unknown_cols[i]));
        req_reply_json(r, 200,
                       json_pack("{s:i,s:i,s:i,s:o}", "rows", n, "added", added, "updated",
                                 n - added, "unknown_columns", unknown));
    }
    inv_table_release(&tab);
    buf_release(&report);
}

/* Adds a UUID once (the caller keeps u alive: an arena copy); ERR_INVALID past max. */
static int add_uuid(const char **uuids, size_t max, size_t *n, const char *u, struct error_info *ei)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(uuids[i], u) == 0)
            return 0;
    }
    if (*n == max)
        return errinfo_set(ei, ERR_INVALID, "gpu", "at most %zu GPUs at once", max);
    uuids[(*n)++] = u;
    return 0;
}

/*
 * The GPUs a workload's or a project's allocations held in [from, to); with
 * no range given, a workload's range is its runs.
 */
static int held_by(struct req *r, const char *field, int64_t id, bool range_given, int64_t *from,
                   int64_t *to, const char **uuids, size_t max, size_t *n, struct error_info *ei)
{
    const struct resource_def *d = &model_allocations;
    struct store_filter f;
    struct row *rows;
    size_t n_rows;
    int64_t now = time_now_ms(), lo = INT64_MAX, hi = 0;
    int rc;

    store_filter_init(&f);
    store_filter_eq_int(&f, model_field_index(d, field), id);
    if ((rc = store_list_all(req_db(r), d, &f, &r->arena, &rows, &n_rows, ei)) < 0)
        return rc;
    for (size_t i = 0; i < n_rows; i++) {
        int64_t s = i_of(d, &rows[i], "started_ms");
        int64_t e =
            row_is_null(&rows[i], F_ALLOCATIONS_ENDED_MS) ? now : i_of(d, &rows[i], "ended_ms");
        lo = s < lo ? s : lo;
        hi = e > hi ? e : hi;
    }
    if (!range_given && strcmp(field, "workload_id") == 0 && n_rows) {
        *from = lo;
        *to = hi > lo ? hi : lo + 1;
    }
    for (size_t i = 0; rc >= 0 && i < n_rows; i++) {
        int64_t s = i_of(d, &rows[i], "started_ms");
        int64_t e =
            row_is_null(&rows[i], F_ALLOCATIONS_ENDED_MS) ? now : i_of(d, &rows[i], "ended_ms");
        struct row g;
        if (e <= *from || s >= *to || row_is_null(&rows[i], F_ALLOCATIONS_GPU_ID) ||
            store_get(req_db(r), &model_gpus, i_of(d, &rows[i], "gpu_id"), &r->arena, &g, NULL) <
                0 ||
            !*s_of(&model_gpus, &g, "uuid"))
            continue;
        rc = add_uuid(uuids, max, n, s_of(&model_gpus, &g, "uuid"), ei);
    }
    return rc;
}

/* The GPUs of the caller's inventory view whose `member` is `value`. */
static int from_view(json_t *view, const char *member, const char *value, struct arena *a,
                     const char **uuids, size_t max, size_t *n, struct error_info *ei)
{
    size_t i;
    json_t *it;
    int rc = 0;
    json_array_foreach(view, i, it)
    {
        const char *v = json_string_value(json_object_get(it, member));
        const char *u = json_string_value(json_object_get(it, "uuid"));
        if (rc >= 0 && v && u && *u && strcmp(v, value) == 0)
            rc = add_uuid(uuids, max, n, arena_strdup(a, u), ei);
    }
    return rc;
}

/*
 * GET /v1/inventory/history?gpu=UUID[,...] | node=NAME | pool=NAME |
 * workload=ID | project=ID [&from=RFC3339&to=RFC3339]: activity, memory and
 * power over time, merged over the GPUs, at the finest resolution the range
 * allows (default: the last hour; a workload's own runs), and efficiency =
 * busy / allocated time. GPUs, nodes and pools must be in the caller's
 * inventory view; a workload or project needs a role on the project.
 */
void inventory_route_history(struct req *r)
{
    static const char *const resolutions[] = {"raw", "minute", "hour"};
    struct error_info ei = {0};
    const char *gpus = req_arg(r, "gpu"), *node = req_arg(r, "node"), *pool = req_arg(r, "pool");
    const char *wl = req_arg(r, "workload"), *prj = req_arg(r, "project");
    const char *from_s = req_arg(r, "from"), *to_s = req_arg(r, "to");
    int64_t now = time_now_ms(), from = now - 3600 * 1000, to = now, t, id = 0;
    const char *uuids[256];
    size_t n = 0;
    json_t *view = NULL, *points = json_array();
    struct inv_series_query q = {0};
    int given = !!gpus + !!node + !!pool + !!wl + !!prj, rc = 0;
    double eff;

    if (given != 1)
        rc = errinfo_set(&ei, ERR_INVALID, "gpu",
                         "name exactly one of gpu (UUIDs, comma-separated), node, pool, workload "
                         "or project");
    if (rc >= 0 && from_s) {
        if (time_parse_rfc3339(from_s, &t) < 0)
            rc = errinfo_set(&ei, ERR_INVALID, "from", "parameter 'from' must be an RFC 3339 time");
        else
            from = t * 1000;
    }
    if (rc >= 0 && to_s) {
        if (time_parse_rfc3339(to_s, &t) < 0)
            rc = errinfo_set(&ei, ERR_INVALID, "to", "parameter 'to' must be an RFC 3339 time");
        else
            to = t * 1000;
    }
    if (rc >= 0 && (wl || prj)) {
        struct row w;
        if (parse_int64(wl ? wl : prj, 1, INT64_MAX, &id) < 0)
            rc = errinfo_set(&ei, ERR_INVALID, wl ? "workload" : "project", "'%.40s' is not an id",
                             wl ? wl : prj);
        else if (wl)
            rc = resource_load_visible(r, &model_workloads, id, &w, &ei);
        else if (rbac_role_on_project(r, id) < ROLE_VIEWER)
            rc = errinfo_set(&ei, ERR_NOT_FOUND, "project", "no project %" PRId64, id);
        if (rc >= 0)
            rc = held_by(r, wl ? "workload_id" : "project_id", id, from_s || to_s, &from, &to,
                         uuids, ARRAY_SIZE(uuids), &n, &ei);
    } else if (rc >= 0) {
        rc = view_rows(r, &view, &ei);
        if (rc >= 0 && node)
            rc = from_view(view, "node", node, &r->arena, uuids, ARRAY_SIZE(uuids), &n, &ei);
        else if (rc >= 0 && pool)
            rc = from_view(view, "pool", pool, &r->arena, uuids, ARRAY_SIZE(uuids), &n, &ei);
        if (rc >= 0 && gpus) {
            char *list = arena_strdup(&r->arena, gpus), *save = NULL;
            for (char *u = strtok_r(list, ",", &save); rc >= 0 && u;
                 u = strtok_r(NULL, ",", &save)) {
                size_t before = n;
                rc = from_view(view, "uuid", u, &r->arena, uuids, ARRAY_SIZE(uuids), &n, &ei);
                if (rc >= 0 && n == before)
                    rc = errinfo_set(&ei, ERR_NOT_FOUND, "gpu", "no GPU '%.100s'", u);
            }
        }
        if (rc >= 0 && n == 0)
            rc = errinfo_set(&ei, ERR_NOT_FOUND, node ? "node" : "pool", "no GPUs there");
    }
    json_decref(view);
    if (rc >= 0 && to <= from)
        rc = errinfo_set(&ei, ERR_INVALID, "to", "'to' must be after 'from'");
    if (rc >= 0 && (rc = collector_history(r->api->opt.collector, uuids, n, from, to, &q)) < 0)
        errinfo_set(&ei, rc, NULL, "no history for that range");
    if (rc < 0) {
        json_decref(points);
        req_reply_error(r, rc, &ei);
        return;
    }
    for (size_t i = 0; i < q.n_points; i++) {
        const struct inv_point *p = &q.points[i];
        json_array_append_new(
            points,
            json_pack("{s:I,s:I,s:o,s:o,s:o,s:f,s:f}", "t_ms", (json_int_t)p->t_ms, "n",
                      (json_int_t)p->n, "activity_min",
                      inv_has(p->act_min) ? json_real(p->act_min) : json_null(), "activity_avg",
                      inv_has(p->act_avg) ? json_real(p->act_avg) : json_null(), "activity_max",
                      inv_has(p->act_max) ? json_real(p->act_max) : json_null(), "mem_mib",
                      p->mem_mib, "power_w", p->power_w));
    }
    eff = inv_efficiency(&q);
    req_reply_json(
        r, 200,
        json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:o,s:o}", "resolution",
                  q.resolution >= 0 && q.resolution < 3 ? resolutions[q.resolution] : "raw",
                  "from_ms", (json_int_t)from, "to_ms", (json_int_t)to, "gpus", (json_int_t)n,
                  "busy_ms", (json_int_t)q.busy_ms, "allocated_ms", (json_int_t)q.alloc_ms,
                  "efficiency", inv_has(eff) ? json_real(eff) : json_null(), "points", points));
    free(q.points);
}
