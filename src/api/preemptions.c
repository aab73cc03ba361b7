/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preemptions.c: who sees the preemption ledger, and what of it. An entry
 * concerns two kinds of tenant: the preemptor's project (its scope) and the
 * victims' projects. Viewers of either may read it, since the victims' own
 * events name it; each sees the other tenants' parts redacted: a victim of a
 * project the caller cannot see keeps its GPU share and work lost but not its
 * workload or project, quota rows of such projects are left out, and a
 * preemptor the caller cannot see is null.
 */
#include "base/common.h"

#include "api/api-int.h"

/* Rows read per store page while looking for entries a caller may see. */
#define SCAN_PAGE 500

/* The projects of an entry's victims (memory of a); *ret_n of them. */
static int64_t *victim_projects(struct arena *a, const struct row *row, size_t *ret_n)
{
    json_t *victims = json_loads(row_get(row, F_PREEMPTIONS_VICTIMS)->s, 0, NULL);
    size_t n = json_array_size(victims), i;
    int64_t *ids = arena_calloc(a, n + 1, sizeof(*ids));
    json_t *v;

    json_array_foreach(victims, i, v)
    {
        ids[i] = json_integer_value(json_object_get(v, "project_id"));
    }
    json_decref(victims);
    *ret_n = n;
    return ids;
}

/* preemptions_visible with the victims' projects read into a. */
static bool visible_in(struct req *r, struct arena *a, const struct row *row)
{
    size_t n;
    int64_t *ids;

    if (r->who->admin || rbac_sees_project(r, row_int(row, F_PREEMPTIONS_PROJECT_ID)))
        return true;
    ids = victim_projects(a, row, &n);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] && rbac_sees_project(r, ids[i]))
            return true;
    }
    return false;
}

/* Whether the caller may read a ledger entry: admin, or viewer of its or a victim's project. */
static enum hook_verdict may_read(struct req *r, const struct row *row)
{
    return visible_in(r, &r->arena, row) ? HOOK_ALLOW : HOOK_DENY;
}

/* A copy of a ledger row in the request's arena. */
static struct row copy_row(struct req *r, const struct row *src)
{
    struct row dst = model_row_new(&model_preemptions, &r->arena);
    for (size_t k = 0; k < model_preemptions.n_fields; k++) {
        dst.v[k] = src->v[k];
        if (src->v[k].s)
            dst.v[k].s = arena_strdup(&r->arena, src->v[k].s);
    }
    return dst;
}

/* Whether a JSON project id names a project the caller sees. */
static bool sees_json_project(struct req *r, json_t *project_id)
{
    return json_is_integer(project_id) && rbac_sees_project(r, json_integer_value(project_id));
}

static void redact_victims(struct req *r, json_t *victims)
{
    size_t i;
    json_t *v;
    json_array_foreach(victims, i, v)
    {
        if (sees_json_project(r, json_object_get(v, "project_id")))
            continue;
        json_object_set_new(v, "workload_id", json_null());
        json_object_set_new(v, "project_id", json_null());
        json_object_set_new(v, "redacted", json_true());
    }
}

static void keep_visible_quotas(struct req *r, json_t *quotas)
{
    for (size_t i = json_array_size(quotas); i-- > 0;) {
        if (!sees_json_project(r, json_object_get(json_array_get(quotas, i), "project_id")))
            json_array_remove(quotas, i);
    }
}

/* Redacts from an entry's JSON what belongs to projects the caller cannot see. */
static void redact(struct req *r, const struct row *row, json_t *j)
{
    (void)row;
    if (r->who->admin)
        return;
    if (!sees_json_project(r, json_object_get(j, "project_id"))) {
        json_object_set_new(j, "preemptor_id", json_null());
        json_object_set_new(j, "project_id", json_null());
    }
    redact_victims(r, json_object_get(j, "victims"));
    keep_visible_quotas(r, json_object_get(j, "quota_before"));
    keep_visible_quotas(r, json_object_get(j, "quota_after"));
}

/*
 * The first f->limit entries matching f (its equality filters and after_id)
 * that the caller may read, in id order, in the request's arena: who may
 * read an entry depends on its victims, which no filter can say.
 */
static int list_visible(struct req *r, struct store_filter *f, struct row **ret, size_t *ret_n,
                        struct error_info *ei)
{
    size_t want = (size_t)f->limit, n = 0;
    struct store_filter page = *f;
    struct row *out;
    int rc = 0;

    if (r->who->admin)
        return store_list(req_db(r), &model_preemptions, f, &r->arena, ret, ret_n, ei);
    out = arena_calloc(&r->arena, want + 1, sizeof(*out));
    /* Pages are read into a scratch arena: only what is kept is copied out. */
    page.limit = SCAN_PAGE;
    for (;;) {
        struct row *rows;
        size_t got;
        bool last;
        struct arena a;
        arena_init(&a);
        rc = store_list(req_db(r), &model_preemptions, &page, &a, &rows, &got, ei);
        for (size_t i = 0; rc >= 0 && i < got && n < want; i++) {
            if (visible_in(r, &a, &rows[i]))
                out[n++] = copy_row(r, &rows[i]);
        }
        last = rc < 0 || n == want || got < (size_t)page.limit;
        if (!last)
            page.after_id = model_row_id(&rows[got - 1]);
        arena_release(&a);
        if (last)
            break;
    }
    if (rc < 0)
        return rc;
    *ret = out;
    *ret_n = n;
    return 0;
}

const struct resource_hooks preemptions_hooks = {
    .may_read = may_read,
    .list = list_visible,
    .decorate = redact,
};
