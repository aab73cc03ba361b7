/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bootstrap.c: the first start on an empty store makes the first admin, so
 * that someone can log in at all. The marker in the store's meta table makes
 * it happen exactly once, even if that admin is later renamed or removed.
 */
#include "base/common.h"

#include "api/api-int.h"
#include "base/timeutil.h"

#define BOOTSTRAP_KEY "bootstrapped_at"

static int insert_row(struct req *r, const struct resource_def *def, struct row *row,
                      int64_t *ret_id, struct error_info *ei)
{
    int rc = store_insert(r->db, def, row, ret_id, ei);
    if (rc < 0)
        return rc;
    model_set_int(row, 0, *ret_id);
    return resource_audit(r, r->db, "bootstrap", def, *ret_id, NULL, row, ei);
}

static void set(struct req *r, const struct resource_def *def, struct row *row, const char *f,
                const char *s)
{
    model_set_str(row, &r->arena, model_field_index(def, f), s);
}

static void set_i(const struct resource_def *def, struct row *row, const char *f, int64_t i)
{
    model_set_int(row, model_field_index(def, f), i);
}

static void set_null(const struct resource_def *def, struct row *row, const char *f)
{
    model_set_null(row, model_field_index(def, f));
}

static int create_admin(struct req *r, char **ret_token, struct error_info *ei)
{
    struct row user = model_row_new(&model_users, &r->arena);
    struct row bind = model_row_new(&model_role_bindings, &r->arena);
    struct row tok = model_row_new(&model_tokens, &r->arena);
    char hash[TOKEN_HASH_HEX + 1], prefix[16], when[32];
    int64_t uid, id;
    int rc;

    set(r, &model_users, &user, "name", "admin");
    set(r, &model_users, &user, "email", "");
    set(r, &model_users, &user, "display_name", "Administrator");
    set_i(&model_users, &user, "disabled", 0);
    set_i(&model_users, &user, "created_at", r->now);
    set_i(&model_users, &user, "updated_at", r->now);
    rc = insert_row(r, &model_users, &user, &uid, ei);
    if (rc < 0)
        return rc;

    set_i(&model_role_bindings, &bind, "user_id", uid);
    set(r, &model_role_bindings, &bind, "role", "admin");
    set_null(&model_role_bindings, &bind, "org_id");
    set_null(&model_role_bindings, &bind, "project_id");
    set_i(&model_role_bindings, &bind, "created_at", r->now);
    rc = insert_row(r, &model_role_bindings, &bind, &id, ei);
    if (rc < 0)
        return rc;

    auth_token_new(ret_token, hash, prefix);
    set_i(&model_tokens, &tok, "user_id", uid);
    set(r, &model_tokens, &tok, "name", "bootstrap");
    set(r, &model_tokens, &tok, "prefix", prefix);
    set(r, &model_tokens, &tok, "hash", hash);
    set_null(&model_tokens, &tok, "expires_at");
    set_null(&model_tokens, &tok, "revoked_at");
    set_i(&model_tokens, &tok, "created_at", r->now);
    rc = insert_row(r, &model_tokens, &tok, &id, ei);
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
