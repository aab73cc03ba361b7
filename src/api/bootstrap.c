/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bootstrap.c: the first start on an empty store makes the first admin, so
 * that someone can log in at all. The marker in the store's meta table makes
 * it happen exactly once, even if that admin is later renamed or removed.
 *
 * The break-glass (gpuaasd recover-admin) is here too: when no admin can
 * sign in any more, the machine's root makes one user an enabled admin with
 * a fresh token, straight in the store, audited as action "break-glass".
 */
#include "base/common.h"

#include "api/api-int.h"
#include "base/timeutil.h"

#define BOOTSTRAP_KEY "bootstrapped_at"

/* The audit action of what this request writes: "bootstrap" or "break-glass". */
static const char *action_of(const struct req *r)
{
    return r->id;
}

static int insert_row(struct req *r, const struct resource_def *def, struct row *row,
                      int64_t *ret_id, struct error_info *ei)
{
    int rc = store_insert(r->db, def, row, ret_id, ei);
    if (rc < 0)
        return rc;
    row_set_int(row, 0, *ret_id);
    return resource_audit(r, r->db, action_of(r), def, *ret_id, NULL, row, ei);
}

static int insert_user(struct req *r, const char *name, const char *display_name, int64_t *ret_id,
                       struct error_info *ei)
{
    struct row user = model_row_new(&model_users, &r->arena);
    int rc;

    row_set_str(&user, &r->arena, F_USERS_NAME, name);
    row_set_str(&user, &r->arena, F_USERS_EMAIL, "");
    row_set_str(&user, &r->arena, F_USERS_DISPLAY_NAME, display_name);
    row_set_int(&user, F_USERS_DISABLED, 0);
    row_set_int(&user, F_USERS_CREATED_AT, r->now);
    row_set_int(&user, F_USERS_UPDATED_AT, r->now);
    rc = model_check_row(&model_users, &user, ei);
    return rc < 0 ? rc : insert_row(r, &model_users, &user, ret_id, ei);
}

static int insert_admin_binding(struct req *r, int64_t uid, struct error_info *ei)
{
    struct row bind = model_row_new(&model_role_bindings, &r->arena);
    int64_t id;

    row_set_int(&bind, F_ROLE_BINDINGS_USER_ID, uid);
    row_set_str(&bind, &r->arena, F_ROLE_BINDINGS_ROLE, "admin");
    row_set_null(&bind, F_ROLE_BINDINGS_ORG_ID);
    row_set_null(&bind, F_ROLE_BINDINGS_PROJECT_ID);
    row_set_int(&bind, F_ROLE_BINDINGS_CREATED_AT, r->now);
    return insert_row(r, &model_role_bindings, &bind, &id, ei);
}

/* A token for uid named name; *ret_token is its secret (caller frees), stored only as a hash. */
static int insert_token(struct req *r, int64_t uid, const char *name, char **ret_token,
                        struct error_info *ei)
{
    struct row tok = model_row_new(&model_tokens, &r->arena);
    char hash[TOKEN_HASH_HEX + 1], prefix[16];
    int64_t id;

    auth_token_new(ret_token, hash, prefix);
    row_set_int(&tok, F_TOKENS_USER_ID, uid);
    row_set_str(&tok, &r->arena, F_TOKENS_NAME, name);
    row_set_str(&tok, &r->arena, F_TOKENS_PREFIX, prefix);
    row_set_str(&tok, &r->arena, F_TOKENS_HASH, hash);
    row_set_null(&tok, F_TOKENS_EXPIRES_AT);
    row_set_null(&tok, F_TOKENS_REVOKED_AT);
    row_set_int(&tok, F_TOKENS_CREATED_AT, r->now);
    return insert_row(r, &model_tokens, &tok, &id, ei);
}

static int create_admin(struct req *r, char **ret_token, struct error_info *ei)
{
    char when[32];
    int64_t uid;
    int rc = insert_user(r, "admin", "Administrator", &uid, ei);

    if (rc >= 0)
        rc = insert_admin_binding(r, uid, ei);
    if (rc >= 0)
        rc = insert_token(r, uid, "bootstrap", ret_token, ei);
    if (rc < 0)
        return rc;
    time_format_rfc3339(r->now, when, sizeof(when));
    return store_meta_set(r->db, BOOTSTRAP_KEY, when, ei);
}

int api_bootstrap(struct store *store, char **ret_token, struct error_info *ei)
{
    struct req r;
    char *marker, *token = NULL;
    int rc;

    memset(&r, 0, sizeof(r));
    arena_init(&r.arena);
    r.now = time_now_s();
    snprintf(r.id, sizeof(r.id), "bootstrap");
    r.db = store_conn_get(store);
    *ret_token = NULL;

    rc = store_begin(r.db, ei);
    if (rc >= 0) {
        rc = store_meta_get(r.db, BOOTSTRAP_KEY, &r.arena, &marker, ei);
        if (rc == ERR_NOT_FOUND) {
            if (ei)
                ei->code = 0;
            rc = create_admin(&r, &token, ei);
            if (rc >= 0)
                rc = store_commit(r.db, ei);
        } else {
            store_rollback(r.db);
        }
    }
    if (rc < 0) {
        store_rollback(r.db);
        free(token);
        token = NULL;
    }
    store_conn_put(r.db);
    arena_release(&r.arena);
    *ret_token = token;
    return rc < 0 ? rc : 0;
}

/* The user named name (made when missing, enabled when disabled), in *ret_uid. */
static int recover_user(struct req *r, const char *name, int64_t *ret_uid, bool *ret_made,
                        struct error_info *ei)
{
    const struct resource_def *def = &model_users;
    struct store_filter f;
    int name_field = F_USERS_NAME;
    struct row *rows, after;
    size_t n;
    int rc;

    if (!model_valid_name(name, (size_t)def->fields[name_field].max))
        return errinfo_set(ei, ERR_INVALID, "name",
                           "'%.64s' is not a user name (lower-case letters, digits, '.', '_' and "
                           "'-', starting with a letter or digit)",
                           name);
    store_filter_init(&f);
    store_filter_eq_str(&f, name_field, name);
    f.limit = 1;
    rc = store_list(r->db, def, &f, &r->arena, &rows, &n, ei);
    *ret_made = rc >= 0 && n == 0;
    if (rc < 0 || n == 0)
        return rc < 0 ? rc : insert_user(r, name, name, ret_uid, ei);
    *ret_uid = model_row_id(&rows[0]);
    if (!row_int(&rows[0], F_USERS_DISABLED))
        return 0;
    after = model_row_new(def, &r->arena);
    memcpy(after.v, rows[0].v, def->n_fields * sizeof(struct value));
    row_set_int(&after, F_USERS_DISABLED, 0);
    row_set_int(&after, F_USERS_UPDATED_AT, r->now);
    rc = store_update(r->db, def, *ret_uid, &after, ei);
    return rc < 0 ? rc
                  : resource_audit(r, r->db, action_of(r), def, *ret_uid, &rows[0], &after, ei);
}

/* Gives uid the global admin role unless it has it. */
static int recover_binding(struct req *r, int64_t uid, struct error_info *ei)
{
    const struct resource_def *def = &model_role_bindings;
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc;

    store_filter_init(&f);
    store_filter_eq_int(&f, F_ROLE_BINDINGS_USER_ID, uid);
    store_filter_eq_str(&f, F_ROLE_BINDINGS_ROLE, "admin");
    f.limit = 1;
    rc = store_list(r->db, def, &f, &r->arena, &rows, &n, ei);
    if (rc < 0 || n > 0)
        return rc;
    return insert_admin_binding(r, uid, ei);
}

int api_recover_admin(struct store *store, const char *user, struct api_recovery *ret,
                      struct error_info *ei)
{
    struct req r;
    char *token = NULL;
    int rc;

    memset(&r, 0, sizeof(r));
    memset(ret, 0, sizeof(*ret));
    arena_init(&r.arena);
    r.now = time_now_s();
    snprintf(r.id, sizeof(r.id), "break-glass");
    r.db = store_conn_get(store);
    rc = store_begin(r.db, ei);
    if (rc >= 0)
        rc = recover_user(&r, user, &ret->user_id, &ret->created, ei);
    if (rc >= 0)
        rc = recover_binding(&r, ret->user_id, ei);
    if (rc >= 0)
        rc = insert_token(&r, ret->user_id, "break-glass", &token, ei);
    if (rc >= 0)
        rc = store_commit(r.db, ei);
    if (rc < 0) {
        store_rollback(r.db);
        free(token);
        token = NULL;
    }
    store_conn_put(r.db);
    arena_release(&r.arena);
    ret->token = token;
    return rc < 0 ? rc : 0;
}
