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
