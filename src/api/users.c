/* SPDX-License-Identifier: Apache-2.0 */
/*
 * users.c: the rules users and role bindings add to the generic resource
 * handling (their hooks, api-int.h). Who sees a user: admins everyone,
 * others themselves and the people bound where they are project-admin or
 * above. Everyone reads their own bindings, and nobody grants a role above
 * their own on that scope. And someone can always run the fleet: no change
 * may leave no enabled user with the admin role (counted from the store, in
 * the change's transaction).
 */
#include "base/common.h"

#include "api/api-int.h"

static int64_t ref_of(const struct resource_def *def, const struct row *row, const char *field)
{
    const struct value *v = model_get(def, row, field);
    return v->set && !v->null ? v->i : 0;
}

/* ---- who sees a user ---- */

/* Users the caller may see: admins all; others themselves and people bound where they manage. */
static bool user_visible(struct req *r, int64_t user_id)
{
    const struct resource_def *b = &model_role_bindings;
    struct store_filter f;
    struct row *rows;
    size_t n;

    if (r->who->admin || user_id == r->who->user_id)
        return true;
    store_filter_init(&f);
    store_filter_eq_int(&f, F_ROLE_BINDINGS_USER_ID, user_id);
    if (store_list_all(req_db(r), b, &f, &r->arena, &rows, &n, NULL) < 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        int64_t org = ref_of(b, &rows[i], "org_id");
        int64_t prj = ref_of(b, &rows[i], "project_id");
        if ((prj && rbac_role_on_project(r, prj) >= ROLE_PROJECT_ADMIN) ||
            (org && rbac_role_on_org(r, org) >= ROLE_PROJECT_ADMIN))
            return true;
    }
    return false;
}

static enum hook_verdict user_may_read(struct req *r, const struct row *row)
{
    return user_visible(r, model_row_id(row)) ? HOOK_ALLOW : HOOK_DEFAULT;
}

/* The list: themselves plus everyone bound where they are project-admin or above. */
static int user_list_filter(struct req *r, struct store_filter *f, struct error_info *ei)
{
    const struct resource_def *b = &model_role_bindings;
    struct store_filter bf;
    struct row *rows;
    int64_t *ids, *ids2;
    size_t n, n2, nb;
    int rc;

    rbac_projects_with(r, ROLE_PROJECT_ADMIN, &ids, &n);
    rbac_orgs_with(r, ROLE_PROJECT_ADMIN, &ids2, &n2);
    store_filter_init(&bf);
    store_filter_any(&bf, F_ROLE_BINDINGS_PROJECT_ID, ids, n);
    store_filter_any(&bf, F_ROLE_BINDINGS_ORG_ID, ids2, n2);
    rc = store_list_all(req_db(r), b, &bf, &r->arena, &rows, &nb, ei);
    if (rc < 0)
        return rc;
    ids = arena_calloc(&r->arena, nb + 1, sizeof(*ids));
    ids[0] = r->who->user_id;
    for (size_t i = 0; i < nb; i++)
        ids[i + 1] = row_int(&rows[i], F_ROLE_BINDINGS_USER_ID);
    store_filter_any(f, F_USERS_ID, ids, nb + 1);
    return 0;
}

/* ---- someone must be able to run the fleet ---- */

/* Whether user uid exists and is not disabled. */
static int user_enabled(struct req *r, int64_t uid, bool *ret_enabled, struct error_info *ei)
{
    struct row user;
    int rc = store_get(req_db(r), &model_users, uid, &r->arena, &user, ei);

    if (rc == ERR_NOT_FOUND) {
        ei->code = 0;
        *ret_enabled = false;
        return 0;
    }
    if (rc < 0)
        return rc;
    *ret_enabled = row_int(&user, F_USERS_DISABLED) == 0;
    return 0;
}

/*
 * Whether any enabled user other than `except` holds an admin binding
 * (*ret_found), and whether `except` holds one (*ret_except_is_admin).
 */
static int find_admins(struct req *r, int64_t except, bool *ret_found, bool *ret_except_is_admin,
                       struct error_info *ei)
{
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc;

    store_filter_init(&f);
    store_filter_eq_str(&f, F_ROLE_BINDINGS_ROLE, "admin");
    rc = store_list_all(req_db(r), &model_role_bindings, &f, &r->arena, &rows, &n, ei);
    *ret_found = *ret_except_is_admin = false;
    for (size_t i = 0; rc >= 0 && i < n && !*ret_found; i++) {
        int64_t uid = row_int(&rows[i], F_ROLE_BINDINGS_USER_ID);
        if (uid == except)
            *ret_except_is_admin = true;
        else
            rc = user_enabled(r, uid, ret_found, ei);
    }
    for (size_t i = 0; rc >= 0 && i < n && !*ret_except_is_admin; i++)
        *ret_except_is_admin = row_int(&rows[i], F_ROLE_BINDINGS_USER_ID) == except;
    return rc < 0 ? rc : 0;
}

/*
 * ERR_CONFLICT when user uid is an admin and no other enabled user is: for a
 * change that removes uid's admin power (removes).
 */
static int keep_an_admin(struct req *r, int64_t uid, bool removes, struct error_info *ei)
{
    bool others, is_admin;
    int rc;

    if (!removes)
        return 0;
    rc = find_admins(r, uid, &others, &is_admin, ei);
    if (rc < 0)
        return rc;
    if (is_admin && !others)
        return errinfo_set(ei, ERR_CONFLICT, NULL,
                           "this would leave no enabled admin; make another user admin (or "
                           "enable one) first");
    return 0;
}

/* Disabling an enabled user. */
static int user_check_update(struct req *r, const struct row *before, const struct row *patch,
                             const struct row *after, struct error_info *ei)
{
    (void)patch;
    return keep_an_admin(r, model_row_id(before),
                         !row_int(before, F_USERS_DISABLED) && row_int(after, F_USERS_DISABLED),
                         ei);
}

/* Deleting an enabled user. */
static int user_check_delete(struct req *r, const struct row *before, struct error_info *ei)
{
    return keep_an_admin(r, model_row_id(before), !row_int(before, F_USERS_DISABLED), ei);
}

/* Deleting the admin binding of an enabled user. */
static int binding_check_delete(struct req *r, const struct row *before, struct error_info *ei)
{
    int64_t uid = row_int(before, F_ROLE_BINDINGS_USER_ID);
    bool removes;
    int rc;

    if (strcmp(row_get(before, F_ROLE_BINDINGS_ROLE)->s, "admin") != 0)
        return 0;
    rc = user_enabled(r, uid, &removes, ei);
    return rc < 0 ? rc : keep_an_admin(r, uid, removes, ei);
}

/* ---- role bindings ---- */

/* Everyone may read their own role bindings. */
static enum hook_verdict binding_may_read(struct req *r, const struct row *row)
{
    return ref_of(&model_role_bindings, row, "user_id") == r->who->user_id ? HOOK_ALLOW
                                                                           : HOOK_DEFAULT;
}

/* A binding cannot grant more than one holds on its scope. */
static int binding_check_create(struct req *r, struct row *row, struct row *ret_same,
                                struct error_info *ei)
{
    const struct resource_def *d = &model_role_bindings;
    enum role granted = ROLE_NONE;

    (void)ret_same;
    role_parse(row_get(row, F_ROLE_BINDINGS_ROLE)->s, &granted);
    if (resource_role(r, d, row) < granted)
        return errinfo_set(ei, ERR_FORBIDDEN, "role",
                           "you cannot grant role '%s': it is above your own on that scope",
                           role_name(granted));
    return 0;
}

const struct resource_hooks rbac_user_hooks = {
    .identity = true,
    .may_read = user_may_read,
    .list_filter = user_list_filter,
    .check_update = user_check_update,
    .check_delete = user_check_delete,
};

const struct resource_hooks rbac_binding_hooks = {
    .identity = true,
    .may_read = binding_may_read,
    .check_create = binding_check_create,
    .check_delete = binding_check_delete,
    .why_fixed = "delete it and create a new one",
};
