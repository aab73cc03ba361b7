/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rbac.c: what role the caller holds where. Roles come from bindings on an
 * organization (covering its whole subtree and every project in it) or on a
 * project; `admin` is global. The organization tree and the project -> org
 * map are loaded from the store once and then kept current in place as
 * organizations and projects change (new ids are appended, so a create costs
 * O(1)), so checks never query the store.
 *
 * Also the hooks of organizations and projects (api-int.h, struct
 * resource_hooks): they keep the tenancy current, decide who sees them, and
 * keep the organization tree acyclic and within its depth.
 */
#include "base/common.h"

#include "api/api-int.h"

/* Levels in the organization tree; deeper trees are refused when made or moved. */
#define MAX_ORG_DEPTH 32
#define LOAD_PAGE 10000

/* ---- a sorted map id -> ref, as two parallel arrays ---- */

struct pairs {
    int64_t *ids;
    int64_t *refs;
    size_t n, cap, cap_refs; /* both arrays grow together: cap_refs == cap */
};

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

/* Sets id -> ref, or removes id; ids only ever grow, so a new one is an append. */
static void pairs_set(struct pairs *p, int64_t id, int64_t ref, bool remove)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < p->n && p->ids[lo] == id) {
        if (!remove) {
            p->refs[lo] = ref;
            return;
        }
        memmove(p->ids + lo, p->ids + lo + 1, (p->n - lo - 1) * sizeof(int64_t));
        memmove(p->refs + lo, p->refs + lo + 1, (p->n - lo - 1) * sizeof(int64_t));
        p->n--;
        return;
    }
    if (remove)
        return;
    ALLOC_GROW(p->ids, p->n + 1, p->cap);
    ALLOC_GROW(p->refs, p->n + 1, p->cap_refs);
    memmove(p->ids + lo + 1, p->ids + lo, (p->n - lo) * sizeof(int64_t));
    memmove(p->refs + lo + 1, p->refs + lo, (p->n - lo) * sizeof(int64_t));
    p->ids[lo] = id;
    p->refs[lo] = ref;
    p->n++;
}

static struct pairs orgs_of(const struct tenancy *t)
{
    return (struct pairs){t->org_ids, t->org_parent, t->n_orgs, t->cap_orgs, t->cap_orgs};
}

static struct pairs projects_of(const struct tenancy *t)
{
    return (struct pairs){t->project_ids, t->project_org, t->n_projects, t->cap_projects,
                          t->cap_projects};
}

static void set_orgs(struct tenancy *t, struct pairs p)
{
    t->org_ids = p.ids;
    t->org_parent = p.refs;
    t->n_orgs = p.n;
    t->cap_orgs = p.cap;
}

static void set_projects(struct tenancy *t, struct pairs p)
{
    t->project_ids = p.ids;
    t->project_org = p.refs;
    t->n_projects = p.n;
    t->cap_projects = p.cap;
}

/* ---- lifecycle, loading and changes ---- */

void tenancy_init(struct tenancy *t)
{
    memset(t, 0, sizeof(*t));
    pthread_rwlock_init(&t->lock, NULL);
}

void tenancy_release(struct tenancy *t)
{
    free(t->org_ids);
    free(t->org_parent);
    free(t->project_ids);
    free(t->project_org);
    pthread_rwlock_destroy(&t->lock);
    memset(t, 0, sizeof(*t));
}

/* Loads every (id, ref) pair of a resource in id order, pages of LOAD_PAGE. */
static int load_pairs(struct req *r, const struct resource_def *def, const char *ref_field,
                      struct pairs *ret, struct error_info *ei)
{
    int ref_idx = model_field_index(def, ref_field);
    struct pairs p = {0};
    struct store_filter f;
    int rc = 0;

    store_filter_init(&f);
    f.limit = LOAD_PAGE;
    for (;;) {
        struct row *rows;
        size_t got;
        struct arena a;
        arena_init(&a);
        rc = store_list(req_db(r), def, &f, &a, &rows, &got, ei);
        for (size_t i = 0; rc >= 0 && i < got; i++) {
            const struct value *v = &rows[i].v[ref_idx];
            pairs_set(&p, model_row_id(&rows[i]), v->null ? 0 : v->i, false);
        }
        if (rc >= 0 && got > 0)
            f.after_id = model_row_id(&rows[got - 1]);
        arena_release(&a);
        if (rc < 0 || got < LOAD_PAGE)
            break;
    }
    if (rc < 0) {
        free(p.ids);
        free(p.refs);
        return rc;
    }
    *ret = p;
    return 0;
}

int rbac_refresh(struct req *r, struct error_info *ei)
{
    struct tenancy *t = &r->api->tenancy;

    for (;;) {
        struct pairs orgs, projects;
        uint64_t version;
        bool loaded;
        int rc;

        pthread_rwlock_rdlock(&t->lock);
        loaded = t->loaded;
        version = t->version;
        pthread_rwlock_unlock(&t->lock);
        if (loaded)
            return 0;
        rc = load_pairs(r, &model_organizations, "parent_id", &orgs, ei);
        if (rc < 0)
            return rc;
        rc = load_pairs(r, &model_projects, "org_id", &projects, ei);
        if (rc < 0) {
            free(orgs.ids);
            free(orgs.refs);
            return rc;
        }
        pthread_rwlock_wrlock(&t->lock);
        /* Keep the load only if no change landed while it was read; else read again. */
        if (!t->loaded && t->version == version) {
            set_orgs(t, orgs);
            set_projects(t, projects);
            t->loaded = true;
            orgs = projects = (struct pairs){0};
        }
        pthread_rwlock_unlock(&t->lock);
        free(orgs.ids);
        free(orgs.refs);
        free(projects.ids);
        free(projects.refs);
    }
}

/*
 * Records a committed change to an organization (org) or project in the
 * tenancy: row is the object after the change (before it, for a delete).
 */
static void tenancy_apply(struct api *api, bool org, enum action act, const struct row *row)
{
    struct tenancy *t = &api->tenancy;
    const struct resource_def *def = org ? &model_organizations : &model_projects;
    const struct value *v = model_get(def, row, org ? "parent_id" : "org_id");

    pthread_rwlock_wrlock(&t->lock);
    t->version++;
    if (t->loaded) {
        struct pairs p = org ? orgs_of(t) : projects_of(t);
        pairs_set(&p, model_row_id(row), v->null ? 0 : v->i, act == ACT_DELETE);
        if (org)
            set_orgs(t, p);
        else
            set_projects(t, p);
    }
    pthread_rwlock_unlock(&t->lock);
}

/* ---- questions, answered with the read lock held by the public wrappers ---- */

static int64_t org_parent(const struct tenancy *t, int64_t org)
{
    ssize_t i = find_sorted(t->org_ids, t->n_orgs, org);
    return i < 0 ? 0 : t->org_parent[i];
}

static bool org_exists(const struct tenancy *t, int64_t org)
{
    return find_sorted(t->org_ids, t->n_orgs, org) >= 0;
}

static int64_t project_org(const struct tenancy *t, int64_t project)
{
    ssize_t i = find_sorted(t->project_ids, t->n_projects, project);
    return i < 0 ? 0 : t->project_org[i];
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

static enum role max_role(enum role a, enum role b)
{
    return a > b ? a : b;
}

static enum role role_on_org(const struct tenancy *t, const struct principal *who, int64_t org)
{
    enum role best = ROLE_NONE;
    if (!org_exists(t, org))
        return ROLE_NONE;
    if (who->admin)
        return ROLE_ADMIN;
    for (size_t i = 0; i < who->n_bindings; i++) {
        const struct binding *b = &who->bindings[i];
        if (b->org_id && org_within(t, org, b->org_id))
            best = max_role(best, b->role);
    }
    return best;
}

static enum role role_on_project(const struct tenancy *t, const struct principal *who,
                                 int64_t project)
{
    enum role best = ROLE_NONE;
    int64_t org = project_org(t, project);
    if (org == 0)
        return ROLE_NONE; /* no such project */
    if (who->admin)
        return ROLE_ADMIN;
    for (size_t i = 0; i < who->n_bindings; i++) {
        const struct binding *b = &who->bindings[i];
        if (b->project_id == project || (b->org_id && org_within(t, org, b->org_id)))
            best = max_role(best, b->role);
    }
    return best;
}

static bool sees_org(const struct tenancy *t, const struct principal *who, int64_t org)
{
    if (role_on_org(t, who, org) >= ROLE_VIEWER)
        return true;
    if (!org_exists(t, org))
        return false;
    /* A project's people see the organizations on the path above it. */
    for (size_t i = 0; i < who->n_bindings; i++) {
        const struct binding *b = &who->bindings[i];
        if (b->project_id && org_within(t, project_org(t, b->project_id), org))
            return true;
    }
    return false;
}

/* ---- the public questions ---- */

#define WITH_TENANCY(r, expr)                                                                  \
    do {                                                                                       \
        pthread_rwlock_rdlock(&(r)->api->tenancy.lock);                                        \
        expr;                                                                                  \
        pthread_rwlock_unlock(&(r)->api->tenancy.lock);                                        \
    } while (0)

enum role rbac_role_on_org(struct req *r, int64_t org_id)
{
    enum role role;
    WITH_TENANCY(r, role = role_on_org(&r->api->tenancy, r->who, org_id));
    return role;
}

enum role rbac_role_on_project(struct req *r, int64_t project_id)
{
    enum role role;
    WITH_TENANCY(r, role = role_on_project(&r->api->tenancy, r->who, project_id));
    return role;
}

bool rbac_sees_project(struct req *r, int64_t project_id)
{
    return rbac_role_on_project(r, project_id) >= ROLE_VIEWER;
}

bool rbac_sees_org(struct req *r, int64_t org_id)
{
    bool seen;
    WITH_TENANCY(r, seen = sees_org(&r->api->tenancy, r->who, org_id));
    return seen;
}

int64_t rbac_project_org(struct req *r, int64_t project_id)
{
    int64_t org;
    WITH_TENANCY(r, org = project_org(&r->api->tenancy, project_id));
    return org;
}

/*
 * Checks that org_id (0 for a new one) may hang under new_parent (0 for a
 * root): no cycle, and the tree stays within its depth limit. ERR_INVALID.
 */
static int org_check_parent(struct req *r, int64_t org_id, int64_t new_parent,
                            struct error_info *ei)
{
    const struct tenancy *t = &r->api->tenancy;
    bool cycle = false;
    int levels = 0;

    if (new_parent == 0)
        return 0;
    WITH_TENANCY(r, {
        cycle = org_id && org_within(t, new_parent, org_id);
        levels = org_depth(t, new_parent) + (org_id ? subtree_height(t, org_id) : 1);
    });
    if (cycle)
        return errinfo_set(ei, ERR_INVALID, "parent_id",
                           "organization %" PRId64 " cannot be placed under its own subtree",
                           org_id);
    if (levels > MAX_ORG_DEPTH)
        return errinfo_set(ei, ERR_INVALID, "parent_id",
                           "the organization tree would be deeper than %d levels", MAX_ORG_DEPTH);
    return 0;
}

enum which { ORGS_WITH, PROJECTS_WITH, ORGS_SEEN };

/* The ids of organizations or projects passing a test, in arena memory. */
static void collect(struct req *r, enum which which, enum role least, int64_t **ret_ids,
                    size_t *ret_n)
{
    const struct tenancy *t = &r->api->tenancy;
    size_t n = 0;
    int64_t *ids;

    pthread_rwlock_rdlock(&r->api->tenancy.lock);
    {
        bool projects = which == PROJECTS_WITH;
        const int64_t *all = projects ? t->project_ids : t->org_ids;
        size_t n_all = projects ? t->n_projects : t->n_orgs;
        ids = arena_calloc(&r->arena, n_all, sizeof(*ids));
        for (size_t i = 0; i < n_all; i++) {
            bool keep = which == ORGS_SEEN      ? sees_org(t, r->who, all[i])
                        : which == ORGS_WITH    ? role_on_org(t, r->who, all[i]) >= least
                                                : role_on_project(t, r->who, all[i]) >= least;
            if (keep)
                ids[n++] = all[i];
        }
    }
    pthread_rwlock_unlock(&r->api->tenancy.lock);
    *ret_ids = ids;
    *ret_n = n;
}

void rbac_orgs_with(struct req *r, enum role least, int64_t **ret_ids, size_t *ret_n)
{
    collect(r, ORGS_WITH, least, ret_ids, ret_n);
}

void rbac_projects_with(struct req *r, enum role least, int64_t **ret_ids, size_t *ret_n)
{
    collect(r, PROJECTS_WITH, least, ret_ids, ret_n);
}

void rbac_visible_orgs(struct req *r, int64_t **ret_ids, size_t *ret_n)
{
    collect(r, ORGS_SEEN, ROLE_VIEWER, ret_ids, ret_n);
}

void rbac_visible_projects(struct req *r, int64_t **ret_ids, size_t *ret_n)
{
    collect(r, PROJECTS_WITH, ROLE_VIEWER, ret_ids, ret_n);
}

/* ---- the hooks of organizations and projects ---- */

static int64_t ref_of(const struct resource_def *def, const struct row *row, const char *field)
{
    const struct value *v = model_get(def, row, field);
    return v->set && !v->null ? v->i : 0;
}

/*
 * Deleting an organization or project removes the bindings on it, which can
 * change what a token stands for: cached principals are reloaded.
 */
static void org_after_commit(struct req *r, enum action act, const struct row *row)
{
    tenancy_apply(r->api, true, act, row);
    if (act == ACT_DELETE)
        atomic_fetch_add(&r->api->generation, 1);
}

static void project_after_commit(struct req *r, enum action act, const struct row *row)
{
    tenancy_apply(r->api, false, act, row);
    if (act == ACT_DELETE)
        atomic_fetch_add(&r->api->generation, 1);
}

/* Organizations show the path above one's projects, without a role on them. */
static enum hook_verdict org_may_read(struct req *r, const struct row *row)
{
    return rbac_sees_org(r, model_row_id(row)) ? HOOK_ALLOW : HOOK_DEFAULT;
}

static int org_list_filter(struct req *r, struct store_filter *f, struct error_info *ei)
{
    int64_t *ids;
    size_t n;
    (void)ei;
    rbac_visible_orgs(r, &ids, &n);
    store_filter_any(f, F_ORGANIZATIONS_ID, ids, n);
    return 0;
}

static int org_check_create(struct req *r, struct row *row, struct row *ret_same,
                            struct error_info *ei)
{
    (void)ret_same;
    return org_check_parent(r, 0, ref_of(&model_organizations, row, "parent_id"), ei);
}

/* Moving an organization needs the right to create under its new parent. */
static int org_check_update(struct req *r, const struct row *before, const struct row *patch,
                            const struct row *after, struct error_info *ei)
{
    const struct resource_def *d = &model_organizations;

    if (!row_get(patch, F_ORGANIZATIONS_PARENT_ID)->set)
        return 0;
    if (!resource_may(r, d, after, ACT_CREATE))
        return errinfo_set(ei, ERR_FORBIDDEN, NULL,
                           "your role does not allow you to change this %s", d->singular);
    return org_check_parent(r, model_row_id(before), ref_of(d, after, "parent_id"), ei);
}

const struct resource_hooks rbac_org_hooks = {
    .ordered_commit = true,
    .after_commit = org_after_commit,
    .may_read = org_may_read,
    .ref_visible = rbac_sees_org,
    .list_filter = org_list_filter,
    .check_create = org_check_create,
    .check_update = org_check_update,
};

const struct resource_hooks rbac_project_hooks = {
    .shapes_scheduling = true,
    .ordered_commit = true,
    .after_commit = project_after_commit,
    .ref_visible = rbac_sees_project,
};
