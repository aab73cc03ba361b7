/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resource.c: list, create, read, update and delete for every resource of
 * the model, with one set of rules: decode and validate through the model,
 * check references (a reference to something the caller cannot see reads as
 * "does not exist"), check the caller's role on the row's scope (another
 * tenant's object is 404, a visible one without the role is 403), and write
 * the change and its audit entry in one transaction. What a resource adds
 * to these rules comes from its hooks (resource_hooks_of): this file names
 * no resource.
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

/* The reference in field f of row (an F_* index from the resource's table), or 0. */
static int64_t ref_or_zero(const struct row *row, int f)
{
    const struct value *v = row_get(row, f);
    return value_present(v) ? v->i : 0;
}

/*
 * Commits the request's transaction and then brings in-memory state up to
 * date: the resource's own (after_commit: the tenancy snapshot, the
 * engine's inbox), cached principals when the change can alter what a token
 * stands for, and the scheduler's configuration. A resource whose
 * after_commit must see commits in their order commits under one lock. act
 * says what happened to row (for a delete, row is the old one).
 */
static int commit_change(struct req *r, const struct resource_def *def, enum action act,
                         const struct row *row, struct error_info *ei)
{
    const struct resource_hooks *h = resource_hooks_of(def);
    int rc;

    if (h->ordered_commit)
        pthread_mutex_lock(&r->api->tenancy_commit_lock);
    rc = store_commit(req_db(r), ei);
    if (rc >= 0) {
        if (h->after_commit)
            h->after_commit(r, act, row);
        if (h->identity)
            atomic_fetch_add(&r->api->generation, 1);
        if (r->api->opt.engine && h->shapes_scheduling)
            engine_config_changed(r->api->opt.engine, def, row, act == ACT_DELETE);
    }
    if (h->ordered_commit)
        pthread_mutex_unlock(&r->api->tenancy_commit_lock);
    return rc;
}

/* ---- who may see and change what ---- */

enum role resource_role(struct req *r, const struct resource_def *def, const struct row *row)
{
    int field = def->scope_field;

    switch (def->scope) {
    case SCOPE_GLOBAL:
        return r->who->admin ? ROLE_ADMIN : ROLE_NONE;
    case SCOPE_ORG: {
        int64_t org = ref_or_zero(row, field);
        if (org == 0)
            return r->who->admin ? ROLE_ADMIN : ROLE_NONE;
        return rbac_role_on_org(r, org);
    }
    case SCOPE_PROJECT:
        return rbac_role_on_project(r, ref_or_zero(row, field));
    case SCOPE_USER: {
        int64_t uid = ref_or_zero(row, field);
        if (r->who->admin)
            return ROLE_ADMIN;
        if (uid == r->who->user_id)
            return ROLE_VIEWER;
        return ROLE_NONE;
    }
    case SCOPE_OWNER: {
        int64_t prj = ref_or_zero(row, def->scope_field);
        return prj ? rbac_role_on_project(r, prj)
                   : rbac_role_on_org(r, ref_or_zero(row, def->scope_org_field));
    }
    case SCOPE_BINDING: {
        int64_t prj = ref_or_zero(row, def->scope_field);
        int64_t org = ref_or_zero(row, def->scope_org_field);
        if (prj)
            return rbac_role_on_project(r, prj);
        if (org)
            return rbac_role_on_org(r, org);
        return r->who->admin ? ROLE_ADMIN : ROLE_NONE;
    }
    case SCOPE_PROJECT_OR_ORG: {
        int64_t prj = ref_or_zero(row, def->scope_field);
        return prj ? rbac_role_on_project(r, prj)
                   : rbac_role_on_org(r, ref_or_zero(row, def->scope_org_field));
    }
    }
    return ROLE_NONE;
}

bool resource_may(struct req *r, const struct resource_def *def, const struct row *row,
                  enum action act)
{
    const struct resource_hooks *h = resource_hooks_of(def);

    if (def->need[act] == ROLE_NOBODY)
        return false;
    if (act == ACT_CREATE && def->create_scope_field) {
        /* Organizations and projects are made inside an organization (none: a root, admins only). */
        int64_t org = ref_or_zero(row, def->create_scope_field);
        enum role role = org ? rbac_role_on_org(r, org) : r->who->admin ? ROLE_ADMIN : ROLE_NONE;
        return role >= def->need[act];
    }
    if (act == ACT_READ && h->may_read) {
        enum hook_verdict v = h->may_read(r, row);
        if (v != HOOK_DEFAULT)
            return v == HOOK_ALLOW;
    }
    return resource_role(r, def, row) >= def->need[act];
}

/* ---- references ---- */

static bool ref_exists(struct req *r, const struct resource_def *target, int64_t id)
{
    const struct resource_hooks *h = resource_hooks_of(target);
    struct row row;
    if (h->ref_visible)
        return h->ref_visible(r, id);
    if (store_get(req_db(r), target, id, &r->arena, &row, NULL) < 0)
        return false;
    /*
     * Users too: a binding that could name any user would make them visible
     * (name, email) to whoever made it, and tell which ids exist.
     */
    return resource_may(r, target, &row, ACT_READ);
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

/* ---- output ---- */

json_t *resource_encode(struct req *r, const struct resource_def *def, const struct row *row)
{
    const struct resource_hooks *h = resource_hooks_of(def);
    json_t *j = model_encode(def, row);
    if (h->decorate)
        h->decorate(r, row, j);
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

/* Restricts a list to what the caller may see; ERR_FORBIDDEN when nothing is. */
static int restrict_to_visible(struct req *r, const struct resource_def *def,
                               struct store_filter *f, struct error_info *ei)
{
    const struct resource_hooks *h = resource_hooks_of(def);
    int64_t *ids, *ids2;
    size_t n, n2;

    if (r->who->admin)
        return 0;
    if (def->need[ACT_READ] >= ROLE_ADMIN)
        return errinfo_set(ei, ERR_FORBIDDEN, NULL, "only admins may list %s", def->name);
    if (h->list_filter)
        return h->list_filter(r, f, ei);
    switch (def->scope) {
    case SCOPE_GLOBAL:
        return 0;
    case SCOPE_ORG:
        rbac_orgs_with(r, def->need[ACT_READ], &ids, &n);
        store_filter_any(f, def->scope_field, ids, n);
        return 0;
    case SCOPE_PROJECT:
        rbac_visible_projects(r, &ids, &n);
        store_filter_any(f, def->scope_field, ids, n);
        return 0;
    case SCOPE_USER:
        store_filter_any(f, def->scope_field, &r->who->user_id, 1);
        return 0;
    case SCOPE_OWNER:
        rbac_visible_projects(r, &ids, &n);
        store_filter_any(f, def->scope_field, ids, n);
        rbac_orgs_with(r, ROLE_VIEWER, &ids2, &n2);
        store_filter_any(f, def->scope_org_field, ids2, n2);
        return 0;
    case SCOPE_BINDING:
        store_filter_any(f, def->scope_user_field, &r->who->user_id, 1);
        rbac_projects_with(r, ROLE_PROJECT_ADMIN, &ids, &n);
        store_filter_any(f, def->scope_field, ids, n);
        rbac_orgs_with(r, ROLE_PROJECT_ADMIN, &ids2, &n2);
        store_filter_any(f, def->scope_org_field, ids2, n2);
        return 0;
    case SCOPE_PROJECT_OR_ORG:
        rbac_projects_with(r, def->need[ACT_READ], &ids, &n);
        store_filter_any(f, def->scope_field, ids, n);
        rbac_orgs_with(r, def->need[ACT_READ], &ids2, &n2);
        store_filter_any(f, def->scope_org_field, ids2, n2);
        return 0;
    }
    return 0;
}

void resource_list(struct req *r, const struct resource_def *def)
{
    const struct resource_hooks *h = resource_hooks_of(def);
    struct error_info ei = {0};
    struct store_filter f;
    struct list_args la = {r, def, &f, &ei};
    struct row *rows;
    size_t n;
    json_t *items;
    int rc;

    if (h->stream && stream_wanted(r)) {
        h->stream(r);
        return;
    }
    store_filter_init(&f);
    f.limit = LIST_DEFAULT_LIMIT;
    rc = req_each_arg(r, list_arg, &la);
    if (rc >= 0 && h->list) {
        rc = h->list(r, &f, &rows, &n, &ei);
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
    if (rc == ERR_NOT_FOUND || (rc >= 0 && !resource_may(r, def, ret_row, ACT_READ))) {
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
        row_set_int(row, c, now);
    if (u >= 0)
        row_set_int(row, u, now);
}

static int forbid(struct error_info *ei, const struct resource_def *def, enum action act)
{
    static const char *const verbs[] = {"read", "create", "change", "delete"};
    const char *why = resource_hooks_of(def)->why_fixed;
    if (def->need[act] == ROLE_NOBODY)
        return errinfo_set(ei, ERR_METHOD, NULL, "%s objects cannot be %s through the API; %s",
                           def->singular,
                           act == ACT_UPDATE   ? "changed"
                           : act == ACT_DELETE ? "deleted"
                                               : "created",
                           why ? why : "they are written by the server");
    return errinfo_set(ei, ERR_FORBIDDEN, NULL, "your role does not allow you to %s this %s",
                       verbs[act], def->singular);
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

/*
 * Decodes and checks a new row: 0 to write it, 1 with *ret_same when the
 * same create was made before (answer with that one), or an error.
 * *ret_reveal: what only the create's answer shows (caller frees).
 */
static int check_new(struct req *r, const struct resource_def *def, struct row *row,
                     struct row *ret_same, json_t **ret_reveal, struct error_info *ei)
{
    const struct resource_hooks *h = resource_hooks_of(def);
    json_t *body = NULL;
    int rc = req_json_body(r, &body, ei);

    if (rc >= 0)
        rc = model_decode(def, body, DECODE_CREATE, &r->arena, row, ei);
    json_decref(body);
    if (rc >= 0 && h->fill)
        rc = h->fill(r, row, ret_reveal, ei);
    if (rc < 0)
        return rc;
    set_times(def, row, r->now, true);
    rc = model_check_row(def, row, ei);
    if (rc >= 0)
        rc = check_refs(r, def, row, ei);
    if (rc >= 0 && !resource_may(r, def, row, ACT_CREATE))
        rc = forbid(ei, def, ACT_CREATE);
    if (rc >= 0 && h->check_create)
        rc = h->check_create(r, row, ret_same, ei);
    return rc;
}

void resource_create(struct req *r, const struct resource_def *def)
{
    const struct resource_hooks *h = resource_hooks_of(def);
    struct error_info ei = {0};
    json_t *reveal = NULL, *out;
    struct row row, same;
    int64_t id;
    int rc;

    if (!offered(r, def, ACT_CREATE))
        return;
    rc = check_new(r, def, &row, &same, &reveal, &ei);
    if (rc > 0) { /* the same create again: answer with the first */
        json_decref(reveal);
        req_reply_json(r, 200, resource_encode(r, def, &same));
        return;
    }
    if (rc < 0)
        goto fail;

    rc = store_begin(req_db(r), &ei);
    if (rc >= 0)
        rc = store_insert(req_db(r), def, &row, &id, &ei);
    if (rc >= 0) {
        row_set_int(&row, 0, id);
        rc = resource_audit(r, req_db(r), "create", def, id, NULL, &row, &ei);
    }
    if (rc >= 0 && h->in_tx)
        rc = h->in_tx(r, ACT_CREATE, &row, &ei);
    if (rc >= 0)
        rc = commit_change(r, def, ACT_CREATE, &row, &ei);
    if (rc < 0) {
        store_rollback(req_db(r));
        if (rc == ERR_CONFLICT && h->create_conflict) {
            /* A racing twin won the unique index, and so is committed: answer with it. */
            struct error_info ei2 = {0};
            if (h->create_conflict(r, &row, &same, &ei2) > 0) {
                json_decref(reveal);
                req_reply_json(r, 200, resource_encode(r, def, &same));
                return;
            }
        }
        goto fail;
    }
    /*
     * The row as written, undecorated: what decorate adds comes from state
     * the new row has not reached yet (a workload is in the engine's inbox,
     * not the scheduler: its stored reason "submitted" is the answer).
     */
    out = model_encode(def, &row);
    if (reveal)
        json_object_update(out, reveal);
    json_decref(reveal);
    req_reply_json(r, 201, out);
    return;
fail:
    json_decref(reveal);
    req_reply_error(r, rc, &ei);
}

/* ---- update ---- */

void resource_update(struct req *r, const struct resource_def *def, int64_t id)
{
    const struct resource_hooks *h = resource_hooks_of(def);
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
    if (rc >= 0 && !resource_may(r, def, &before, ACT_UPDATE))
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
    if (rc >= 0 && h->check_update)
        rc = h->check_update(r, &before, &patch, &after, &ei);
    if (rc >= 0)
        rc = store_update(req_db(r), def, id, &after, &ei);
    if (rc >= 0)
        rc = resource_audit(r, req_db(r), "update", def, id, &before, &after, &ei);
    if (rc >= 0 && h->in_tx)
        rc = h->in_tx(r, ACT_UPDATE, &after, &ei);
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

/* A delete that keeps the row (retire): written as an update, audited as the hook's verb. */
static int retire(struct req *r, const struct resource_def *def, int64_t id,
                  const struct row *before, struct row *ret_after, struct error_info *ei)
{
    const struct resource_hooks *h = resource_hooks_of(def);
    int rc;

    *ret_after = model_row_new(def, &r->arena);
    memcpy(ret_after->v, before->v, def->n_fields * sizeof(struct value));
    rc = h->retire(r, before, ret_after, ei);
    if (rc >= 0)
        rc = store_update(req_db(r), def, id, ret_after, ei);
    if (rc >= 0)
        rc = resource_audit(r, req_db(r), h->retire_verb, def, id, before, ret_after, ei);
    return rc;
}

void resource_delete(struct req *r, const struct resource_def *def, int64_t id)
{
    const struct resource_hooks *h = resource_hooks_of(def);
    struct error_info ei = {0};
    struct row before, after;
    const struct row *gone = &before;
    enum action act = ACT_DELETE;
    int rc;

    if (!offered(r, def, ACT_DELETE))
        return;
    rc = store_begin(req_db(r), &ei);
    if (rc < 0)
        goto fail;
    rc = resource_load_visible(r, def, id, &before, &ei);
    if (rc >= 0 && !resource_may(r, def, &before, ACT_DELETE))
        rc = forbid(&ei, def, ACT_DELETE);
    if (rc >= 0 && h->check_delete)
        rc = h->check_delete(r, &before, &ei);
    if (rc < 0)
        goto rollback;
    if (h->retire) {
        rc = retire(r, def, id, &before, &after, &ei);
        gone = &after;
        act = ACT_UPDATE;
    } else {
        rc = store_delete(req_db(r), def, id, &ei);
        if (rc >= 0)
            rc = resource_audit(r, req_db(r), "delete", def, id, &before, NULL, &ei);
    }
    if (rc >= 0 && h->in_tx)
        rc = h->in_tx(r, act, gone, &ei);
    if (rc >= 0)
        rc = commit_change(r, def, act, gone, &ei);
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
