/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resource.c: list, create, read, update and delete for every resource of
 * the model, with one set of rules: decode and validate through the model,
 * check references (a reference to something the caller cannot see reads as
 * "does not exist"), check the caller's role on the row's scope (another
 * tenant's object is 404, a visible one without the role is 403), and write
 * the change and its audit entry in one transaction.
 */
#include "base/common.h"

#include "api/api-int.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "engine/engine.h"

#define LIST_DEFAULT_LIMIT 100
#define LIST_MAX_LIMIT 1000

static bool value_present(const struct value *v)
{
    return v->set && !v->null;
}

static int64_t ref_or_zero(const struct resource_def *def, const struct row *row, const char *f)
{
    const struct value *v = model_get(def, row, f);
    return value_present(v) ? v->i : 0;
}

/* Whether changes to def change what the scheduler works with (fleet, tenants, quotas, catalog). */
static bool shapes_scheduling(const struct resource_def *def)
{
    return def == &model_clusters || def == &model_nodes || def == &model_gpus ||
           def == &model_gpu_classes || def == &model_pools || def == &model_projects ||
           def == &model_quotas || def == &model_org_quotas || def == &model_flavors;
}

/*
 * Commits the request's transaction and then brings in-memory state up to
 * date: the tenancy snapshot, and cached principals when the change can
 * alter what a token stands for (deleting an organization or project
 * removes the bindings on it). Changes to organizations and projects commit
 * and reach the snapshot under one lock, so the snapshot sees them in commit
 * order. act says what happened to row (for a delete, row is the old one).
 */
static int commit_change(struct req *r, const struct resource_def *def, enum action act,
                         const struct row *row, struct error_info *ei)
{
    bool tenancy = def == &model_organizations || def == &model_projects;
    int rc;

    if (tenancy)
        pthread_mutex_lock(&r->api->tenancy_commit_lock);
    rc = store_commit(req_db(r), ei);
    if (rc >= 0) {
        rbac_apply(r->api, def, act, row);
        if (def == &model_users || def == &model_tokens || def == &model_role_bindings ||
            (tenancy && act == ACT_DELETE))
            atomic_fetch_add(&r->api->generation, 1);
        if (r->api->opt.engine && shapes_scheduling(def))
            engine_config_changed(r->api->opt.engine, def, row, act == ACT_DELETE);
    }
    if (tenancy)
        pthread_mutex_unlock(&r->api->tenancy_commit_lock);
    return rc;
}

/* ---- who may see and change what ---- */

/* Users the caller may see: admins all; others themselves and people bound where they manage. */
static bool user_visible(struct req *r, int64_t user_id)
{
    struct store_filter f;
    struct row *rows;
    size_t n;

    if (r->who->admin || user_id == r->who->user_id)
        return true;
    store_filter_init(&f);
    store_filter_eq_int(&f, model_field_index(&model_role_bindings, "user_id"), user_id);
    f.limit = 1000;
    if (store_list(req_db(r), &model_role_bindings, &f, &r->arena, &rows, &n, NULL) < 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        int64_t org = ref_or_zero(&model_role_bindings, &rows[i], "org_id");
        int64_t prj = ref_or_zero(&model_role_bindings, &rows[i], "project_id");
        if ((prj && rbac_role_on_project(r, prj) >= ROLE_PROJECT_ADMIN) ||
            (org && rbac_role_on_org(r, org) >= ROLE_PROJECT_ADMIN))
            return true;
    }
    return false;
}

/* The caller's role on the scope a row lives in, reading `field` for its id. */
static enum role role_on_row(struct req *r, const struct resource_def *def, const struct row *row,
                             const char *field)
{
    switch (def->scope) {
    case SCOPE_GLOBAL:
        return r->who->admin ? ROLE_ADMIN : ROLE_NONE;
    case SCOPE_ORG: {
        int64_t org = ref_or_zero(def, row, field);
        enum role role;
        if (org == 0)
            return r->who->admin ? ROLE_ADMIN : ROLE_NONE;
        role = rbac_role_on_org(r, org);
        if (role < ROLE_VIEWER && def == &model_organizations && strcmp(field, "id") == 0 &&
            rbac_sees_org(r, org))
            role = ROLE_VIEWER;
        return role;
    }
    case SCOPE_PROJECT:
        return rbac_role_on_project(r, ref_or_zero(def, row, field));
    case SCOPE_USER: {
        int64_t uid = ref_or_zero(def, row, field);
        if (r->who->admin)
            return ROLE_ADMIN;
        if (uid == r->who->user_id || (def == &model_users && user_visible(r, uid)))
            return ROLE_VIEWER;
        return ROLE_NONE;
    }
    case SCOPE_OWNER: {
        int64_t prj = ref_or_zero(def, row, "owner_project_id");
        return prj ? rbac_role_on_project(r, prj)
                   : rbac_role_on_org(r, ref_or_zero(def, row, "owner_org_id"));
    }
    case SCOPE_BINDING: {
        int64_t prj = ref_or_zero(def, row, "project_id");
        int64_t org = ref_or_zero(def, row, "org_id");
        if (prj)
            return rbac_role_on_project(r, prj);
        if (org)
            return rbac_role_on_org(r, org);
        return r->who->admin ? ROLE_ADMIN : ROLE_NONE;
    }
    case SCOPE_PROJECT_OR_ORG: {
        int64_t prj = ref_or_zero(def, row, "project_id");
        return prj ? rbac_role_on_project(r, prj)
                   : rbac_role_on_org(r, ref_or_zero(def, row, "org_id"));
    }
    }
    return ROLE_NONE;
}

static bool may(struct req *r, const struct resource_def *def, const struct row *row,
                enum action act)
{
    if (def->need[act] == ROLE_NOBODY)
        return false;
    if (act == ACT_CREATE && def->create_scope_field) {
        /* Organizations and projects are made inside an organization (none: a root, admins only). */
        int64_t org = ref_or_zero(def, row, def->create_scope_field);
        enum role role = org ? rbac_role_on_org(r, org) : r->who->admin ? ROLE_ADMIN : ROLE_NONE;
        return role >= def->need[act];
    }
    /* The ledger: the victims' tenants read the entries too (redacted when encoded). */
    if (def == &model_preemptions && act == ACT_READ)
        return preemptions_visible(r, row);
    /* Everyone may read their own role bindings. */
    if (def == &model_role_bindings && act == ACT_READ &&
        ref_or_zero(def, row, "user_id") == r->who->user_id)
        return true;
    return role_on_row(r, def, row, def->scope_field) >= def->need[act];
}

/* ---- references ---- */

static bool ref_exists(struct req *r, const struct resource_def *target, int64_t id)
{
    struct row row;
    if (target == &model_organizations)
        return rbac_sees_org(r, id);
    if (target == &model_projects)
        return rbac_sees_project(r, id);
    if (store_get(req_db(r), target, id, &r->arena, &row, NULL) < 0)
        return false;
    /*
     * Users too: a binding that could name any user would make them visible
     * (name, email) to whoever made it, and tell which ids exist.
     */
    return may(r, target, &row, ACT_READ);
}

static int check_refs(struct req *r, const struct resource_def *def, const struct row *row,
                      struct error_info *ei)
{
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        const struct value *v = &row->v[i];
        const struct resource_def *target;

        if ((f->type != FT_REF && f->type != FT_REFLIST) || !value_present(v) ||
            (f->flags & FF_READONLY))
            continue;
        target = model_find(f->ref);
        assert(target);
        if (f->type == FT_REF) {
            if (!ref_exists(r, target, v->i))
                return errinfo_set(ei, ERR_INVALID, f->name, "field '%s': no %s with id %" PRId64,
                                   f->name, target->singular, v->i);
        } else {
            json_t *list = json_loads(v->s, 0, NULL), *item;
            size_t k;
            int rc = 0;
            json_array_foreach(list, k, item)
            {
                int64_t id = json_integer_value(item);
                if (!ref_exists(r, target, id)) {
                    rc = errinfo_set(ei, ERR_INVALID, f->name,
                                     "field '%s': no %s with id %" PRId64, f->name,
                                     target->singular, id);
                    break;
                }
            }
            json_decref(list);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

/* ---- audit ---- */

static const char *row_json(struct req *r, const struct resource_def *def, const struct row *row)
{
    json_t *j;
    char *text;
    const char *copy;
    if (!row)
        return NULL;
    j = model_encode(def, row);
    text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    copy = arena_strdup(&r->arena, text);
    free(text);
    json_decref(j);
    return copy;
}

int resource_audit(struct req *r, struct store_conn *db, const char *action,
                   const struct resource_def *def, int64_t object_id, const struct row *before,
                   const struct row *after, struct error_info *ei)
{
    const struct resource_def *a = &model_audit;
    struct row e = model_row_new(a, &r->arena);
    const char *b = row_json(r, def, before), *af = row_json(r, def, after);
    int64_t id;

    model_set_int(&e, model_field_index(a, "time"), r->now);
    if (r->who && r->who->user_id) {
        model_set_int(&e, model_field_index(a, "actor_id"), r->who->user_id);
        model_set_str(&e, &r->arena, model_field_index(a, "actor"), r->who->name);
    } else {
        model_set_null(&e, model_field_index(a, "actor_id"));
        model_set_str(&e, &r->arena, model_field_index(a, "actor"), "system");
    }
    model_set_str(&e, &r->arena, model_field_index(a, "action"), action);
    model_set_str(&e, &r->arena, model_field_index(a, "resource"), def->name);
    model_set_int(&e, model_field_index(a, "object_id"), object_id);
    model_set_str(&e, &r->arena, model_field_index(a, "request_id"), r->id);
    if (b)
        model_set_str(&e, &r->arena, model_field_index(a, "before"), b);
    else
        model_set_null(&e, model_field_index(a, "before"));
    if (af)
        model_set_str(&e, &r->arena, model_field_index(a, "after"), af);
    else
        model_set_null(&e, model_field_index(a, "after"));
    return store_insert(db, a, &e, &id, ei);
}

/* ---- output ---- */

const struct row *rows_find(const struct row *rows, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t x = model_row_id(&rows[mid]);
        if (x == id)
            return &rows[mid];
        if (x < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int64_t alloc_gpu(const struct row *al)
{
    const struct value *v = model_get(&model_allocations, al, "gpu_id");
    return v->null ? 0 : v->i;
}

static int cmp_alloc_gpu(const void *a, const void *b)
{
    const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;
    int64_t gx = alloc_gpu(x), gy = alloc_gpu(y), ix = model_row_id(x), iy = model_row_id(y);
    if (gx != gy)
        return (gx > gy) - (gx < gy);
    return (ix > iy) - (ix < iy);
}

void alloc_index_build(struct req *r, const struct row *allocs, size_t n, struct alloc_index *ret)
{
    ret->by_gpu = arena_calloc(&r->arena, n + 1, sizeof(*ret->by_gpu));
    ret->n = 0;
    for (size_t i = 0; i < n; i++) {
        if (alloc_gpu(&allocs[i]))
            ret->by_gpu[ret->n++] = &allocs[i];
    }
    if (ret->n)
        qsort(ret->by_gpu, ret->n, sizeof(*ret->by_gpu), cmp_alloc_gpu);
}

const struct row *alloc_index_find(const struct alloc_index *ix, int64_t gpu_id)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) { /* the first with gpu_id */
        size_t mid = lo + (hi - lo) / 2;
        if (alloc_gpu(ix->by_gpu[mid]) < gpu_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ix->n && alloc_gpu(ix->by_gpu[lo]) == gpu_id ? ix->by_gpu[lo] : NULL;
}

int req_list_all(struct req *r, const struct resource_def *def, bool open_only,
                 struct row **ret, size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;

    store_filter_init(&f);
    if (open_only)
        store_filter_eq_null(&f, model_field_index(def, "ended_ms"));
    return store_list_all(req_db(r), def, &f, &r->arena, ret, ret_n, ei);
}

json_t *resource_encode(struct req *r, const struct resource_def *def, const struct row *row)
{
    json_t *j = model_encode(def, row);
    if (def == &model_workloads)
        workloads_decorate(r, row, j);
    if (def == &model_preemptions)
        preemptions_redact(r, row, j);
    return j;
}

/* ---- list ---- */

struct list_args {
    struct req *r;
    const struct resource_def *def;
    struct store_filter *f;
    struct error_info *ei;
};

static int parse_filter_value(struct req *r, const struct field_def *f, const char *val,
                              struct value *out, struct error_info *ei)
{
    *out = (struct value){.set = true};
    if (strcmp(val, "null") == 0 && (f->flags & FF_NULLABLE)) {
        out->null = true;
        return 0;
    }
    switch (f->type) {
    case FT_INT:
    case FT_REF:
        if (parse_int64(val, INT64_MIN, INT64_MAX, &out->i) < 0)
            return errinfo_set(ei, ERR_INVALID, f->name, "filter '%s' must be an integer",
                               f->name);
        return 0;
    case FT_BOOL:
        if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0)
            out->i = 1;
        else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0)
            out->i = 0;
        else
            return errinfo_set(ei, ERR_INVALID, f->name, "filter '%s' must be true or false",
                               f->name);
        return 0;
    case FT_TIME:
        /* stored as epoch seconds, like the field itself */
        if (time_parse_rfc3339(val, &out->i) < 0)
            return errinfo_set(ei, ERR_INVALID, f->name,
                               "filter '%s' must be an RFC 3339 time such as 2026-01-31T12:00:00Z",
                               f->name);
        return 0;
    case FT_ENUM:
        /* a misspelt value would match nothing and look like an empty answer */
        for (const char *const *e = f->enum_values; *e; e++)
            if (strcmp(*e, val) == 0) {
                out->s = arena_strdup(&r->arena, val);
                return 0;
            }
        return errinfo_set(ei, ERR_INVALID, f->name, "filter '%s' has unknown value '%.40s'",
                           f->name, val);
    default:
        out->s = arena_strdup(&r->arena, val);
        return 0;
    }
}

static int list_arg(void *ctx, const char *key, const char *val)
{
    struct list_args *la = ctx;
    int idx;
    const struct field_def *f;

    if (strcmp(key, "limit") == 0) {
        int64_t n;
        if (parse_int64(val, 1, LIST_MAX_LIMIT, &n) < 0)
            return errinfo_set(la->ei, ERR_INVALID, "limit", "limit must be 1 to %d",
                               LIST_MAX_LIMIT);
        la->f->limit = (int)n;
        return 0;
    }
    if (strcmp(key, "after") == 0) {
        if (parse_int64(val, 0, INT64_MAX, &la->f->after_id) < 0)
            return errinfo_set(la->ei, ERR_INVALID, "after", "after must be an id");
        return 0;
    }
    idx = model_field_index(la->def, key);
    f = idx >= 0 ? &la->def->fields[idx] : NULL;
    if (!f || !(f->flags & FF_FILTER) || (f->flags & FF_SECRET))
        return errinfo_set(la->ei, ERR_INVALID, key, "unknown query parameter '%.60s' for %s",
                           key, la->def->name);
    if (la->f->n_eq >= STORE_MAX_EQ)
        return errinfo_set(la->ei, ERR_INVALID, key, "too many filters");
    la->f->eq[la->f->n_eq].field = idx;
    la->f->n_eq++;
    return parse_filter_value(la->r, f, val, &la->f->eq[la->f->n_eq - 1].val, la->ei);
}

static void any_of(struct store_filter *f, const struct resource_def *def, const char *field,
                   const int64_t *ids, size_t n)
{
    store_filter_any(f, model_field_index(def, field), ids, n);
}

/* Restricts a list to what the caller may see; ERR_FORBIDDEN when nothing is. */
static int restrict_to_visible(struct req *r, const struct resource_def *def,
                               struct store_filter *f, struct error_info *ei)
{
    int64_t *ids, *ids2;
    size_t n, n2;

    if (r->who->admin)
        return 0;
    if (def->need[ACT_READ] >= ROLE_ADMIN)
        return errinfo_set(ei, ERR_FORBIDDEN, NULL, "only admins may list %s", def->name);
    switch (def->scope) {
    case SCOPE_GLOBAL:
        return 0;
    case SCOPE_ORG:
        /* Organizations show the path above one's projects; what hangs off them needs a role. */
        if (def == &model_organizations)
            rbac_visible_orgs(r, &ids, &n);
        else
            rbac_orgs_with(r, def->need[ACT_READ], &ids, &n);
        any_of(f, def, def->scope_field, ids, n);
        return 0;
    case SCOPE_PROJECT:
        rbac_visible_projects(r, &ids, &n);
        any_of(f, def, def->scope_field, ids, n);
        return 0;
    case SCOPE_USER:
        if (def == &model_users) {
            /* themselves plus everyone bound where they are project-admin or above */
            struct store_filter bf;
            struct row *rows;
            size_t nb;
            int rc;
            rbac_projects_with(r, ROLE_PROJECT_ADMIN, &ids, &n);
            rbac_orgs_with(r, ROLE_PROJECT_ADMIN, &ids2, &n2);
            store_filter_init(&bf);
            bf.limit = 10000;
            any_of(&bf, &model_role_bindings, "project_id", ids, n);
            any_of(&bf, &model_role_bindings, "org_id", ids2, n2);
            rc = store_list(req_db(r), &model_role_bindings, &bf, &r->arena, &rows, &nb, ei);
            if (rc < 0)
                return rc;
            ids = arena_calloc(&r->arena, nb + 1, sizeof(*ids));
            ids[0] = r->who->user_id;
            for (size_t i = 0; i < nb; i++)
                ids[i + 1] = model_get_int(&model_role_bindings, &rows[i], "user_id");
            any_of(f, def, "id", ids, nb + 1);
        } else {
            any_of(f, def, def->scope_field, &r->who->user_id, 1);
        }
        return 0;
    case SCOPE_OWNER:
        rbac_visible_projects(r, &ids, &n);
        any_of(f, def, "owner_project_id", ids, n);
        rbac_orgs_with(r, ROLE_VIEWER, &ids2, &n2);
        any_of(f, def, "owner_org_id", ids2, n2);
        return 0;
    case SCOPE_BINDING:
        any_of(f, def, "user_id", &r->who->user_id, 1);
        rbac_projects_with(r, ROLE_PROJECT_ADMIN, &ids, &n);
        any_of(f, def, "project_id", ids, n);
        rbac_orgs_with(r, ROLE_PROJECT_ADMIN, &ids2, &n2);
        any_of(f, def, "org_id", ids2, n2);
        return 0;
    case SCOPE_PROJECT_OR_ORG:
        rbac_projects_with(r, def->need[ACT_READ], &ids, &n);
        any_of(f, def, "project_id", ids, n);
        rbac_orgs_with(r, def->need[ACT_READ], &ids2, &n2);
        any_of(f, def, "org_id", ids2, n2);
        return 0;
    }
    return 0;
}

void resource_list(struct req *r, const struct resource_def *def)
{
    struct error_info ei = {0};
    struct store_filter f;
    struct list_args la = {r, def, &f, &ei};
    struct row *rows;
    size_t n;
    json_t *items;
    int rc;

    store_filter_init(&f);
    f.limit = LIST_DEFAULT_LIMIT;
    rc = req_each_arg(r, list_arg, &la);
    if (rc >= 0 && def == &model_preemptions && !r->who->admin) {
        /* Who may read an entry depends on its victims, which no filter can say. */
        rc = preemptions_list_visible(r, &f, &rows, &n, &ei);
    } else if (rc >= 0) {
        rc = restrict_to_visible(r, def, &f, &ei);
        if (rc >= 0)
            rc = store_list(req_db(r), def, &f, &r->arena, &rows, &n, &ei);
    }
    if (rc < 0) {
        req_reply_error(r, rc, &ei);
        return;
    }
    items = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, resource_encode(r, def, &rows[i]));
    req_reply_json(r, 200,
                   json_pack("{s:o,s:o}", "items", items, "next_after",
                             (int)n == f.limit && n > 0 ? json_integer(model_row_id(&rows[n - 1]))
                                                        : json_null()));
}

/* ---- read ---- */

/* Loads a row the caller may see; anything else is 404 so other tenants' objects stay hidden.
 * ei may be NULL (as for store_get) when the caller only needs yes or no. */
int resource_load_visible(struct req *r, const struct resource_def *def, int64_t id,
                          struct row *ret_row, struct error_info *ei)
{
    int rc = store_get(req_db(r), def, id, &r->arena, ret_row, ei);
    if (rc == ERR_NOT_FOUND || (rc >= 0 && !may(r, def, ret_row, ACT_READ))) {
        if (ei)
            ei->code = 0;
        return errinfo_set(ei, ERR_NOT_FOUND, NULL, "no %s with id %" PRId64, def->singular, id);
    }
    return rc;
}

void resource_get(struct req *r, const struct resource_def *def, int64_t id)
{
    struct error_info ei = {0};
    struct row row;
    int rc = resource_load_visible(r, def, id, &row, &ei);
    if (rc < 0) {
        req_reply_error(r, rc, &ei);
        return;
    }
    req_reply_json(r, 200, resource_encode(r, def, &row));
}

/* ---- create ---- */

static void set_times(const struct resource_def *def, struct row *row, int64_t now, bool create)
{
    int c = model_field_index(def, "created_at"), u = model_field_index(def, "updated_at");
    if (create && c >= 0)
        model_set_int(row, c, now);
    if (u >= 0)
        model_set_int(row, u, now);
}

static int forbid(struct error_info *ei, const struct resource_def *def, enum action act)
{
    static const char *const verbs[] = {"read", "create", "change", "delete"};
    if (def->need[act] == ROLE_NOBODY)
        return errinfo_set(ei, ERR_METHOD, NULL, "%s objects cannot be %s through the API; %s",
                           def->singular,
                           act == ACT_UPDATE   ? "changed"
                           : act == ACT_DELETE ? "deleted"
                                               : "created",
                           def == &model_role_bindings ? "delete it and create a new one"
                                                       : "they are written by the server");
    return errinfo_set(ei, ERR_FORBIDDEN, NULL, "your role does not allow you to %s this %s",
                       verbs[act], def->singular);
}

/* Extra rules for creating: bindings cannot grant more than one holds; tokens are one's own. */
static int check_create_rules(struct req *r, const struct resource_def *def, struct row *row,
                              struct error_info *ei)
{
    if (def == &model_role_bindings) {
        enum role granted = ROLE_NONE;
        role_parse(model_get(def, row, "role")->s, &granted);
        if (role_on_row(r, def, row, NULL) < granted)
            return errinfo_set(ei, ERR_FORBIDDEN, "role",
                               "you cannot grant role '%s': it is above your own on that scope",
                               role_name(granted));
    }
    if (def == &model_organizations)
        return rbac_org_check_parent(r, 0, ref_or_zero(def, row, "parent_id"), ei);
    if (def == &model_prices)
        return billing_check_price(r, row, ei);
    if (def == &model_quotas)
        return quota_check_backing(r, row, ei);
    return 0;
}

/* Actions a resource does not offer are 405 whatever the caller or the body. */
static bool offered(struct req *r, const struct resource_def *def, enum action act)
{
    /* The Allow header RFC 9110 requires of a 405: what the same path does offer. */
    static const char *const allow_list[] = {"Allow", "GET, POST", NULL};
    static const char *const allow_get[] = {"Allow", "GET", NULL};
    static const char *const allow_patch[] = {"Allow", "GET, PATCH", NULL};
    static const char *const allow_delete[] = {"Allow", "GET, DELETE", NULL};
    struct error_info ei = {0};
    bool can_update = def->need[ACT_UPDATE] != ROLE_NOBODY;
    bool can_delete = def->need[ACT_DELETE] != ROLE_NOBODY;

    if (def->need[act] != ROLE_NOBODY)
        return true;
    req_reply_error(r, forbid(&ei, def, act), &ei);
    if (act == ACT_CREATE)
        r->headers = def->need[ACT_CREATE] != ROLE_NOBODY ? allow_list : allow_get;
    else
        r->headers = can_update ? allow_patch : can_delete ? allow_delete : allow_get;
    return false;
}

void resource_create(struct req *r, const struct resource_def *def)
{
    struct error_info ei = {0};
    json_t *body = NULL, *out;
    struct row row;
    char *token = NULL;
    int64_t id;
    int rc;

    if (!offered(r, def, ACT_CREATE))
        return;
    rc = req_json_body(r, &body, &ei);
    if (rc >= 0)
        rc = model_decode(def, body, DECODE_CREATE, &r->arena, &row, &ei);
    json_decref(body);
    if (rc < 0)
        goto fail;
    if (def == &model_tokens) {
        char hash[TOKEN_HASH_HEX + 1], prefix[16];
        int uid = model_field_index(def, "user_id");
        if (!value_present(&row.v[uid]))
            model_set_int(&row, uid, r->who->user_id);
        auth_token_new(&token, hash, prefix);
        model_set_str(&row, &r->arena, model_field_index(def, "hash"), hash);
        model_set_str(&row, &r->arena, model_field_index(def, "prefix"), prefix);
        model_set_null(&row, model_field_index(def, "revoked_at"));
        if (value_present(model_get(def, &row, "expires_at")) &&
            model_get_int(def, &row, "expires_at") <= r->now) {
            rc = errinfo_set(&ei, ERR_INVALID, "expires_at", "expires_at is in the past");
            goto fail;
        }
    }
    set_times(def, &row, r->now, true);
    rc = model_check_row(def, &row, &ei);
    if (rc >= 0)
        rc = check_refs(r, def, &row, &ei);
    if (rc >= 0 && !may(r, def, &row, ACT_CREATE))
        rc = forbid(&ei, def, ACT_CREATE);
    if (rc >= 0)
        rc = check_create_rules(r, def, &row, &ei);
    if (rc >= 0 && def == &model_workloads) {
        struct row earlier;
        rc = workloads_prepare_submit(r, &row, &earlier, &ei);
        if (rc > 0) { /* the same submit again: answer with the first */
            req_reply_json(r, 200, resource_encode(r, def, &earlier));
            return;
        }
    }
    if (rc < 0)
        goto fail;

    rc = store_begin(req_db(r), &ei);
    if (rc >= 0)
        rc = store_insert(req_db(r), def, &row, &id, &ei);
    if (rc >= 0) {
        model_set_int(&row, 0, id);
        rc = resource_audit(r, req_db(r), "create", def, id, NULL, &row, &ei);
    }
    if (rc >= 0 && def == &model_workloads)
        rc = workloads_submitted_event(r, &row, &ei);
    if (rc >= 0)
        rc = commit_change(r, def, ACT_CREATE, &row, &ei);
    if (rc < 0) {
        store_rollback(req_db(r));
        if (rc == ERR_CONFLICT && def == &model_workloads) {
            /*
             * A racing submit with the same key won the unique index, and so is
             * committed: the same submit again, answered with that one.
             */
            struct row earlier;
            struct error_info ei2 = {0};
            int found = workloads_find_earlier(r, &row, &earlier, &ei2);
            if (found > 0) {
                req_reply_json(r, 200, resource_encode(r, def, &earlier));
                return;
            }
        }
        goto fail;
    }
    if (def == &model_workloads && r->api->opt.engine)
        engine_submitted(r->api->opt.engine, id);
    /*
     * A new workload is not yet in the scheduler (it is in the engine's inbox):
     * its stored reason ("submitted") is the answer, without waiting for a pass.
     */
    out = def == &model_workloads ? model_encode(def, &row) : resource_encode(r, def, &row);
    if (token)
        json_object_set_new(out, "token", json_string(token));
    req_reply_json(r, 201, out);
    free(token);
    return;
fail:
    free(token);
    req_reply_error(r, rc, &ei);
}

/* ---- update ---- */

void resource_update(struct req *r, const struct resource_def *def, int64_t id)
{
    struct error_info ei = {0};
    json_t *body = NULL;
    struct row before, patch, after;
    bool any = false;
    int rc;

    if (!offered(r, def, ACT_UPDATE))
        return;
    rc = req_json_body(r, &body, &ei);
    if (rc >= 0)
        rc = model_decode(def, body, DECODE_UPDATE, &r->arena, &patch, &ei);
    json_decref(body);
    if (rc < 0)
        goto fail;
    for (size_t i = 0; i < def->n_fields; i++)
        any |= patch.v[i].set;

    rc = store_begin(req_db(r), &ei);
    if (rc < 0)
        goto fail;
    rc = resource_load_visible(r, def, id, &before, &ei);
    if (rc >= 0 && !may(r, def, &before, ACT_UPDATE))
        rc = forbid(&ei, def, ACT_UPDATE);
    if (rc >= 0 && !any)
        rc = errinfo_set(&ei, ERR_INVALID, NULL, "the request names no field to change");
    if (rc < 0)
        goto rollback;
    after = model_row_new(def, &r->arena);
    memcpy(after.v, before.v, def->n_fields * sizeof(struct value));
    model_merge(def, &after, &patch);
    set_times(def, &after, r->now, false);
    rc = model_check_row(def, &after, &ei);
    if (rc >= 0)
        rc = check_refs(r, def, &patch, &ei);
    if (rc >= 0 && def == &model_organizations && patch.v[model_field_index(def, "parent_id")].set) {
        int64_t parent = ref_or_zero(def, &after, "parent_id");
        /* Moving an organization needs the right to create under its new parent. */
        if (!may(r, def, &after, ACT_CREATE))
            rc = forbid(&ei, def, ACT_UPDATE);
        else
            rc = rbac_org_check_parent(r, id, parent, &ei);
    }
    if (rc >= 0)
        rc = rbac_keep_an_admin(r, def, &before, &after, &ei);
    if (rc >= 0 && def == &model_quotas && patch.v[model_field_index(def, "guaranteed_milli")].set)
        rc = quota_check_backing(r, &after, &ei);
    if (rc >= 0)
        rc = store_update(req_db(r), def, id, &after, &ei);
    if (rc >= 0)
        rc = resource_audit(r, req_db(r), "update", def, id, &before, &after, &ei);
    if (rc >= 0)
        rc = commit_change(r, def, ACT_UPDATE, &after, &ei);
    if (rc < 0)
        goto rollback;
    req_reply_json(r, 200, resource_encode(r, def, &after));
    return;
rollback:
    store_rollback(req_db(r));
fail:
    req_reply_error(r, rc, &ei);
}

/* ---- delete ---- */

void resource_delete(struct req *r, const struct resource_def *def, int64_t id)
{
    struct error_info ei = {0};
    struct row before, after;
    bool revoke = def == &model_tokens;
    int rc;

    if (!offered(r, def, ACT_DELETE))
        return;
    rc = store_begin(req_db(r), &ei);
    if (rc < 0)
        goto fail;
    rc = resource_load_visible(r, def, id, &before, &ei);
    if (rc >= 0 && !may(r, def, &before, ACT_DELETE))
        rc = forbid(&ei, def, ACT_DELETE);
    if (rc >= 0)
        rc = rbac_keep_an_admin(r, def, &before, NULL, &ei);
    if (rc < 0)
        goto rollback;
    if (revoke) {
        /* Tokens are revoked, not erased, so the audit trail keeps what they were. */
        after = model_row_new(def, &r->arena);
        memcpy(after.v, before.v, def->n_fields * sizeof(struct value));
        if (value_present(model_get(def, &before, "revoked_at"))) {
            rc = errinfo_set(&ei, ERR_CONFLICT, NULL, "token %" PRId64 " is already revoked", id);
            goto rollback;
        }
        model_set_int(&after, model_field_index(def, "revoked_at"), r->now);
        rc = store_update(req_db(r), def, id, &after, &ei);
        if (rc >= 0)
            rc = resource_audit(r, req_db(r), "revoke", def, id, &before, &after, &ei);
    } else {
        rc = store_delete(req_db(r), def, id, &ei);
        if (rc >= 0)
            rc = resource_audit(r, req_db(r), "delete", def, id, &before, NULL, &ei);
    }
    if (rc >= 0)
        rc = commit_change(r, def, revoke ? ACT_UPDATE : ACT_DELETE, revoke ? &after : &before,
                           &ei);
    if (rc < 0)
        goto rollback;
    req_reply_json(r, 204, NULL);
    r->raw = "";
    r->raw_len = 0;
    return;
rollback:
    store_rollback(req_db(r));
fail:
    req_reply_error(r, rc, &ei);
}
