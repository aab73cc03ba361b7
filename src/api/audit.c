/* SPDX-License-Identifier: Apache-2.0 */
/*
 * audit.c: the audit trail's entries. Every change the API makes appends one,
 * in the change's own transaction, with who asked (or "system"), the request
 * id, and the object before and after as JSON.
 */
#include "base/common.h"

#include "api/api-int.h"

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

    row_set_int(&e, F_AUDIT_TIME, r->now);
    if (r->who && r->who->user_id) {
        row_set_int(&e, F_AUDIT_ACTOR_ID, r->who->user_id);
        row_set_str(&e, &r->arena, F_AUDIT_ACTOR, r->who->name);
    } else {
        row_set_null(&e, F_AUDIT_ACTOR_ID);
        row_set_str(&e, &r->arena, F_AUDIT_ACTOR, "system");
    }
    row_set_str(&e, &r->arena, F_AUDIT_ACTION, action);
    row_set_str(&e, &r->arena, F_AUDIT_RESOURCE, def->name);
    row_set_int(&e, F_AUDIT_OBJECT_ID, object_id);
    row_set_str(&e, &r->arena, F_AUDIT_REQUEST_ID, r->id);
    if (b)
        row_set_str(&e, &r->arena, F_AUDIT_BEFORE, b);
    else
        row_set_null(&e, F_AUDIT_BEFORE);
    if (af)
        row_set_str(&e, &r->arena, F_AUDIT_AFTER, af);
    else
        row_set_null(&e, F_AUDIT_AFTER);
    return store_insert(db, a, &e, &id, ei);
}
