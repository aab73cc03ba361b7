/* SPDX-License-Identifier: Apache-2.0 */
/* work.c: the table of a backend's workloads (work.h). */
#include "base/common.h"

#include "backend/work.h"
#include "base/alloc.h"

/* A record's workload id: its first member (work.h). */
static int64_t item_id(const void *item)
{
    return *(const int64_t *)item;
}

void *backend_work_find(const struct backend_work *t, int64_t id, size_t *ret_pos)
{
    for (size_t i = 0; i < t->n; i++) {
        if (item_id(t->items[i]) == id) {
            if (ret_pos)
                *ret_pos = i;
            return t->items[i];
        }
    }
    return NULL;
}

bool backend_work_known(const struct backend_work *t, int64_t id)
{
    return backend_work_find(t, id, NULL) || backend_ends_has(&t->done, id);
}

int backend_work_check_free(const struct backend_work *t, int64_t id, const char *where,
                            struct error_info *ei)
{
    if (backend_work_known(t, id))
        return errinfo_set(ei, ERR_CONFLICT, NULL, "workload %" PRId64 " is already running %s", id,
                           where);
    return 0;
}

int backend_work_check_adopt(const struct backend_work *t, const struct backend_launch *l,
                             int64_t started_ms, int64_t now_ms, const char *where,
                             struct error_info *ei)
{
    int rc = backend_check_launch(l, ei);

    if (rc < 0)
        return rc;
    if (started_ms > now_ms)
        return errinfo_set(ei, ERR_INVALID, NULL,
                           "workload %" PRId64 " cannot have started after now", l->workload_id);
    return backend_work_check_free(t, l->workload_id, where, ei);
}

void backend_work_add(struct backend_work *t, void *item)
{
    ALLOC_GROW(t->items, t->n + 1, t->cap);
    t->items[t->n++] = item;
}

void *backend_work_take(struct backend_work *t, size_t pos)
{
    void *item;

    assert(pos < t->n);
    item = t->items[pos];
    memmove(&t->items[pos], &t->items[pos + 1], (t->n - pos - 1) * sizeof(*t->items));
    t->n--;
    return item;
}

void backend_work_release(struct backend_work *t)
{
    free(t->items);
    backend_ends_release(&t->done);
    *t = (struct backend_work){0};
}
