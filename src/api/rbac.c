/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rbac.c: what role the caller holds where. Roles come from bindings on an
 * organization (covering its whole subtree and every project in it) or on a
 * project; `admin` is global. The organization tree and the project -> org
 * map are held as an immutable, reference-counted snapshot rebuilt from the
 * store once and then changed copy-on-write as organizations and projects
 * change, so checks never query the store.
 */
#include "base/common.h"

#include "api/api-int.h"

/* Levels in the organization tree; deeper trees are refused when made or moved. */
#define MAX_ORG_DEPTH 32
#define LOAD_PAGE 10000

void tenancy_unref(struct tenancy *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    free(t->org_ids);
    free(t->org_parent);
    free(t->project_ids);
    free(t->project_org);
    free(t);
}

/* Loads every (id, ref) pair of a resource in id order, pages of LOAD_PAGE. */
static int load_pairs(struct req *r, const struct resource_def *def, const char *ref_field,
                      int64_t **ret_ids, int64_t **ret_refs, size_t *ret_n, struct error_info *ei)
{
    size_t n = 0, cap = 0;
    int64_t *ids = NULL, *refs = NULL;
    int ref_idx = model_field_index(def, ref_field);
    struct store_filter f;
    struct arena a;
    int rc = 0;

    store_filter_init(&f);
    f.limit = LOAD_PAGE;
    for (;;) {
        struct row *rows;
        size_t got;
        arena_init(&a);
        rc = store_list(req_db(r), def, &f, &a, &rows, &got, ei);
        if (rc < 0) {
            arena_release(&a);
            break;
        }
        if (n + got > cap) {
            cap = (n + got) * 2;
            ids = xreallocarray(ids, cap, sizeof(*ids));
            refs = xreallocarray(refs, cap, sizeof(*refs));
        }
        for (size_t i = 0; i < got; i++) {
            ids[n] = model_row_id(&rows[i]);
            refs[n] = rows[i].v[ref_idx].null ? 0 : rows[i].v[ref_idx].i;
            n++;
        }
        if (got > 0)
            f.after_id = model_row_id(&rows[got - 1]);
        arena_release(&a);
        if (got < LOAD_PAGE)
            break;
    }
    if (rc < 0) {
        free(ids);
        free(refs);
        return rc;
    }
    *ret_ids = ids;
    *ret_refs = refs;
    *ret_n = n;
    return 0;
}

static struct tenancy *tenancy_load(struct req *r, struct error_info *ei)
{
    struct tenancy *t = xcalloc(1, sizeof(*t));
    int rc;

    atomic_init(&t->refs, 1);
    rc = load_pairs(r, &model_organizations, "parent_id", &t->org_ids, &t->org_parent, &t->n_orgs,
                    ei);
    if (rc >= 0)
        rc = load_pairs(r, &model_projects, "org_id", &t->project_ids, &t->project_org,
                        &t->n_projects, ei);
    if (rc < 0) {
        tenancy_unref(t);
        return NULL;
    }
    return t;
}

int rbac_refresh(struct req *r, struct error_info *ei)
{
    struct api *api = r->api;

    while (!r->ten) {
        struct tenancy *t;
        uint64_t version;

        pthread_mutex_lock(&api->tenancy_lock);
        t = api->tenancy;
        version = api->tenancy_version;
        if (t)
            atomic_fetch_add(&t->refs, 1);
        pthread_mutex_unlock(&api->tenancy_lock);
        if (t) {
            r->ten = t;
            break;
        }
        t = tenancy_load(r, ei);
        if (!t)
            return ei->code;
        pthread_mutex_lock(&api->tenancy_lock);
        /* Keep it only if no change landed while it was read; else read again. */
        if (!api->tenancy && api->tenancy_version == version) {
            atomic_fetch_add(&t->refs, 1);
            api->tenancy = t;
            r->ten = t;
            t = NULL;
        }
        pthread_mutex_unlock(&api->tenancy_lock);
        tenancy_unref(t);
    }
    return 0;
}

/* memcpy of n int64s; n may be 0 with NULL pointers (an empty snapshot). */
static void copy_i64(int64_t *dst, const int64_t *src, size_t n)
{
    if (n)
        memcpy(dst, src, n * sizeof(*src));
}

/* Inserts, replaces or (remove) drops id -> ref in a pair of sorted arrays, copying them. */
static void pairs_copy_with(const int64_t *ids, const int64_t *refs, size_t n, int64_t id,
                            int64_t ref, bool remove, int64_t **ret_ids, int64_t **ret_refs,
                            size_t *ret_n)
{
    int64_t *nid = xcalloc(n + 1, sizeof(*nid)), *nref = xcalloc(n + 1, sizeof(*nref));
    size_t lo = 0, hi = n, k = 0;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    copy_i64(nid, ids, lo);
    copy_i64(nref, refs, lo);
    k = lo;
    if (!remove) {
        nid[k] = id;
        nref[k] = ref;
        k++;
    }
    if (lo < n && ids[lo] == id)
        lo++; /* the old entry is replaced or removed */
    copy_i64(nid + k, ids + lo, n - lo);
    copy_i64(nref + k, refs + lo, n - lo);
    *ret_ids = nid;
    *ret_refs = nref;
    *ret_n = k + (n - lo);
}

void rbac_apply(struct api *api, const struct resource_def *def, enum action act,
                const struct row *row)
{
    bool org = def == &model_organizations;
    struct tenancy *old, *t;
    int64_t id = model_row_id(row), ref;
    const struct value *v;

    if (!org && def != &model_projects)
        return;
    v = model_get(def, row, org ? "parent_id" : "org_id");
    ref = v->null ? 0 : v->i;
    pthread_mutex_lock(&api->tenancy_lock);
    api->tenancy_version++;
    old = api->tenancy;
    if (old) {
        t = xcalloc(1, sizeof(*t));
        atomic_init(&t->refs, 1);
        if (org) {
            pairs_copy_with(old->org_ids, old->org_parent, old->n_orgs, id, ref,
                            act == ACT_DELETE, &t->org_ids, &t->org_parent, &t->n_orgs);
            t->project_ids = xcalloc(old->n_projects + 1, sizeof(int64_t));
            t->project_org = xcalloc(old->n_projects + 1, sizeof(int64_t));
            copy_i64(t->project_ids, old->project_ids, old->n_projects);
            copy_i64(t->project_org, old->project_org, old->n_projects);
            t->n_projects = old->n_projects;
        } else {
            pairs_copy_with(old->project_ids, old->project_org, old->n_projects, id, ref,
                            act == ACT_DELETE, &t->project_ids, &t->project_org,
                            &t->n_projects);
            t->org_ids = xcalloc(old->n_orgs + 1, sizeof(int64_t));
            t->org_parent = xcalloc(old->n_orgs + 1, sizeof(int64_t));
            copy_i64(t->org_ids, old->org_ids, old->n_orgs);
            copy_i64(t->org_parent, old->org_parent, old->n_orgs);
            t->n_orgs = old->n_orgs;
        }
        api->tenancy = t;
    }
    pthread_mutex_unlock(&api->tenancy_lock);
    tenancy_unref(old);
}

static ssize_t find_sorted(const int64_t *ids, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] == id)
            return (ssize_t)mid;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int64_t org_parent(const struct tenancy *t, int64_t org)
{
    ssize_t i = find_sorted(t->org_ids, t->n_orgs, org);
    return i < 0 ? 0 : t->org_parent[i];
}

/* Whether org is `ancestor` or lies below it. */
static bool org_within(const struct tenancy *t, int64_t org, int64_t ancestor)
{
    for (int depth = 0; org != 0 && depth < MAX_ORG_DEPTH; depth++) {
        if (org == ancestor)
            return true;
        org = org_parent(t, org);
    }
    return false;
}

int64_t rbac_project_org(struct req *r, int64_t project_id)
{
    ssize_t i = find_sorted(r->ten->project_ids, r->ten->n_projects, project_id);
    return i < 0 ? 0 : r->ten->project_org[i];
}

/* Levels from org up to its root, the org itself included (1 for a root). */
static int org_depth(const struct tenancy *t, int64_t org)
{
    int depth = 0;
    for (; org != 0 && depth <= MAX_ORG_DEPTH; org = org_parent(t, org))
        depth++;
    return depth;
}

/* Levels of the subtree under org, org included. */
static int subtree_height(const struct tenancy *t, int64_t org)
{
    int height = 1;
    for (size_t i = 0; i < t->n_orgs; i++) {
        int64_t o = t->org_ids[i];
        int dist = 1;
        for (; o != 0 && o != org && dist <= MAX_ORG_DEPTH; o = org_parent(t, o))
            dist++;
        if (o == org && dist > height)
            height = dist;
    }
    return height;
}

int rbac_org_check_parent(struct req *r, int64_t org_id, int64_t new_parent,
                          struct error_info *ei)
{
    if (new_parent == 0)
        return 0;
    if (org_id && org_within(r->ten, new_parent, org_id))
        return errinfo_set(ei, ERR_INVALID, "parent_id",
                           "organization %" PRId64 " cannot be placed under its own subtree",
                           org_id);
    if (org_depth(r->ten, new_parent) + (org_id ? subtree_height(r->ten, org_id) : 1) >
        MAX_ORG_DEPTH)
        return errinfo_set(ei, ERR_INVALID, "parent_id",
                           "the organization tree would be deeper than %d levels", MAX_ORG_DEPTH);
    return 0;
}

static enum role max_role(enum role a, enum role b)
{
    return a > b ? a : b;
}

enum role rbac_role_on_org(struct req *r, int64_t org_id)
{
    enum role best = ROLE_NONE;
    if (find_sorted(r->ten->org_ids, r->ten->n_orgs, org_id) < 0)
        return ROLE_NONE; /* no such organization */
    if (r->who->admin)
        return ROLE_ADMIN;
    for (size_t i = 0; i < r->who->n_bindings; i++) {
        const struct binding *b = &r->who->bindings[i];
        if (b->org_id && org_within(r->ten, org_id, b->org_id))
            best = max_role(best, b->role);
    }
    return best;
}

enum role rbac_role_on_project(struct req *r, int64_t project_id)
{
    enum role best = ROLE_NONE;
    int64_t org = rbac_project_org(r, project_id);
    if (org == 0)
        return ROLE_NONE; /* no such project */
    if (r->who->admin)
        return ROLE_ADMIN;
    for (size_t i = 0; i < r->who->n_bindings; i++) {
        const struct binding *b = &r->who->bindings[i];
        if (b->project_id == project_id || (b->org_id && org_within(r->ten, org, b->org_id)))
            best = max_role(best, b->role);
    }
    return best;
}

bool rbac_sees_project(struct req *r, int64_t project_id)
{
    return rbac_role_on_project(r, project_id) >= ROLE_VIEWER;
}

bool rbac_sees_org(struct req *r, int64_t org_id)
{
    if (rbac_role_on_org(r, org_id) >= ROLE_VIEWER)
        return true;
    if (find_sorted(r->ten->org_ids, r->ten->n_orgs, org_id) < 0)
        return false;
    /* A project's people see the organizations on the path above it. */
    for (size_t i = 0; i < r->who->n_bindings; i++) {
        const struct binding *b = &r->who->bindings[i];
        if (b->project_id && org_within(r->ten, rbac_project_org(r, b->project_id), org_id))
            return true;
    }
    return false;
}

static void collect(struct req *r, const int64_t *all, size_t n_all,
                    bool (*keep)(struct req *, int64_t, enum role), enum role least,
                    int64_t **ret_ids, size_t *ret_n)
{
    int64_t *ids = arena_calloc(&r->arena, n_all, sizeof(*ids));
    size_t n = 0;
    for (size_t i = 0; i < n_all; i++) {
        if (keep(r, all[i], least))
            ids[n++] = all[i];
    }
    *ret_ids = ids;
    *ret_n = n;
}

static bool org_has(struct req *r, int64_t id, enum role least)
{
    return rbac_role_on_org(r, id) >= least;
}

static bool project_has(struct req *r, int64_t id, enum role least)
{
    return rbac_role_on_project(r, id) >= least;
}

static bool org_seen(struct req *r, int64_t id, enum role least)
{
    (void)least;
    return rbac_sees_org(r, id);
}

void rbac_orgs_with(struct req *r, enum role least, int64_t **ret_ids, size_t *ret_n)
{
    collect(r, r->ten->org_ids, r->ten->n_orgs, org_has, least, ret_ids, ret_n);
}

void rbac_projects_with(struct req *r, enum role least, int64_t **ret_ids, size_t *ret_n)
{
    collect(r, r->ten->project_ids, r->ten->n_projects, project_has, least, ret_ids, ret_n);
}

void rbac_visible_orgs(struct req *r, int64_t **ret_ids, size_t *ret_n)
{
    collect(r, r->ten->org_ids, r->ten->n_orgs, org_seen, ROLE_VIEWER, ret_ids, ret_n);
}

void rbac_visible_projects(struct req *r, int64_t **ret_ids, size_t *ret_n)
{
    rbac_projects_with(r, ROLE_VIEWER, ret_ids, ret_n);
}
