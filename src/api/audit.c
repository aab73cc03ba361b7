/* SPDX-License-Identifier: Apache-2.0 */
/*
 * audit.c: the audit trail's entries for the API's changes. Every change the
 * API makes appends one (store_audit), in the change's own transaction, with
 * who asked (or "system"), the request id, and the object before and after.
 */
#include "base/common.h"

#include "api/api-int.h"

int resource_audit(struct req *r, struct store_conn *db, const char *action,
                   const struct resource_def *def, int64_t object_id, const struct row *before,
                   const struct row *after, struct error_info *ei)
{
    bool user = r->who && r->who->user_id;
    struct store_audit_entry e = {.time_s = r->now,
                                  .actor_id = user ? r->who->user_id : 0,
                                  .actor = user ? r->who->name : NULL,
                                  .action = action,
                                  .request_id = r->id,
                                  .def = def,
                                  .object_id = object_id,
                                  .before = before,
                                  .after = after};

    return store_audit(db, &e, &r->arena, ei);
}
