/* SPDX-License-Identifier: Apache-2.0 */
/*
 * audit.c: one entry of the audit trail, written through the caller's
 * connection so that it lands in the change's own transaction. The API's
 * changes, the daemon's own (nodes a backend finds or loses) and imports of
 * a simulated fleet all write their entries here, in one shape: the object
 * before and after as the model encodes it (compact, keys sorted; secret
 * fields such as token hashes are left out), which is what the what-if reads
 * back.
 */
#include "base/common.h"

#include <jansson.h>

#include "store/store.h"

/* The row as compact JSON in a; NULL for no row. */
static int row_text(const struct resource_def *def, const struct row *row, struct arena *a,
                    const char **ret, struct error_info *ei)
{
    json_t *j;
    char *text;

    *ret = NULL;
    if (!row)
        return 0;
    j = model_encode(def, row);
    text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    if (!text)
        return errinfo_set(ei, ERR_INTERNAL, NULL, "could not encode %s %" PRId64 " for the audit",
                           def->singular, model_row_id(row));
    *ret = arena_strdup(a, text);
    free(text);
    return 0;
}

int store_audit(struct store_conn *c, const struct store_audit_entry *in, struct arena *a,
                struct error_info *ei)
{
    const struct resource_def *ad = &model_audit;
    struct row e = model_row_new(ad, a);
    const char *before, *after;
    int64_t id;
    int rc;

    if ((rc = row_text(in->def, in->before, a, &before, ei)) < 0 ||
        (rc = row_text(in->def, in->after, a, &after, ei)) < 0)
        return rc;
    row_set_int(&e, F_AUDIT_TIME, in->time_s);
    if (in->actor_id > 0)
        row_set_int(&e, F_AUDIT_ACTOR_ID, in->actor_id);
    else
        row_set_null(&e, F_AUDIT_ACTOR_ID);
    row_set_str(&e, a, F_AUDIT_ACTOR, in->actor ? in->actor : "system");
    row_set_str(&e, a, F_AUDIT_ACTION, in->action);
    row_set_str(&e, a, F_AUDIT_RESOURCE, in->def->name);
    row_set_int(&e, F_AUDIT_OBJECT_ID, in->object_id);
    row_set_str(&e, a, F_AUDIT_REQUEST_ID, in->request_id);
    if (before)
        row_set_str(&e, a, F_AUDIT_BEFORE, before);
    else
        row_set_null(&e, F_AUDIT_BEFORE);
    if (after)
        row_set_str(&e, a, F_AUDIT_AFTER, after);
    else
        row_set_null(&e, F_AUDIT_AFTER);
    rc = store_insert(c, ad, &e, &id, ei);
    return rc < 0 ? rc : 0;
}
