/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cancel.c: cancels asked for through the API and stops the idle policy
 * asks for. Queued work is cancelled at once in the store; work queued
 * ahead in its backend is taken back; running work is stopped (signal,
 * grace, kill) and ends cancelled when its backend reports the end.
 */
#include "engine/engine-int.h"

#include "base/timeutil.h"

static int cancel_queued(struct engine *e, int64_t id, struct error_info *ei)
{
    struct arena a;
    struct row w;
    int64_t now = time_now_ms();
    int rc;

    arena_init(&a);
    rc = store_begin(e->db, ei);
    if (rc >= 0)
        rc = store_get(e->db, &model_workloads, id, &a, &w, ei);
    if (rc >= 0) {
        row_set_str(&w, &a, F_WORKLOADS_STATE, "cancelled");
        row_set_str(&w, &a, F_WORKLOADS_REASON, "cancelled while queued");
        row_set_null(&w, F_WORKLOADS_QUEUED_AFTER);
        row_set_int(&w, F_WORKLOADS_FINISHED_AT, now / 1000);
        row_set_int(&w, F_WORKLOADS_UPDATED_AT, now / 1000);
        rc = store_update(e->db, &model_workloads, id, &w, ei);
    }
    if (rc >= 0)
        rc = engine__add_event(e, &a, id, row_int(&w, F_WORKLOADS_PROJECT_ID), now, "cancelled",
                               "cancelled while queued", ei);
    if (rc >= 0)
        rc = store_commit(e->db, ei);
    if (rc < 0) {
        store_rollback(e->db);
    } else {
        sched_cancel(e->sched, id, now);
        e->blocked_dirty = true; /* work that waits for it may go, or never will */
    }
    arena_release(&a);
    return rc;
}

/*
 * Cancels queued work the scheduler does not hold: queued ahead in its
 * backend (its pending job is cancelled there) or being taken back from it.
 */
static int cancel_aside(struct engine *e, int64_t id, struct error_info *ei)
{
    struct staged *st = engine__staged_find(e, id);
    struct unstaging *u;
    int rc = cancel_queued(e, id, ei); /* the store's record; the scheduler does not know it */

    if (rc < 0)
        return rc;
    if (st) {
        struct backend *b = st->b;
        struct staged *next;
        engine__staged_remove(e, id);
        /* What waits behind it would start once its job is cancelled: taken back first. */
        while ((next = engine__staged_behind(e, id)))
            engine__unstage(e, next->id, "the workload it waited for was cancelled", time_now_ms());
        b->ops->stop(b, id, 0, time_now_ms());
        ALLOC_GROW(e->unstaging, e->n_unstaging + 1, e->cap_unstaging);
        e->unstaging[e->n_unstaging++] = (struct unstaging){id, false};
    } else if ((u = engine__unstaging_find(e, id))) {
        u->requeue = false;
    }
    return 0;
}

/*
 * Stops running work for good (signal, its grace, kill): it ends cancelled,
 * with a "cancelling" event saying why. Called with the lock held.
 */
int engine__stop_running(struct engine *e, int64_t workload_id, const char *why,
                         struct error_info *ei)
{
    int64_t now = time_now_ms(), grace = e->opt.default_grace_ms;
    struct arena a;
    struct row w;
    bool already = false;
    int rc;

    for (size_t i = 0; i < e->n_cancelling; i++)
        already |= e->cancelling[i] == workload_id;
    if (!already) {
        ALLOC_GROW(e->cancelling, e->n_cancelling + 1, e->cap_cancelling);
        e->cancelling[e->n_cancelling++] = workload_id;
    }
    arena_init(&a);
    rc = store_get(e->db, &model_workloads, workload_id, &a, &w, ei);
    if (rc >= 0) {
        const struct value *g = row_get(&w, F_WORKLOADS_GRACE_S);
        if (!g->null)
            grace = g->i * 1000; /* the workload's own grace, as for a preemption */
        rc = engine__add_event(e, &a, workload_id, row_int(&w, F_WORKLOADS_PROJECT_ID), now,
                               "cancelling", why, ei);
    }
    for (size_t b = 0; b < e->n_backends; b++)
        e->backends[b].b->ops->stop(e->backends[b].b, workload_id, grace, now);
    arena_release(&a);
    return rc;
}

int engine_cancel(struct engine *e, int64_t workload_id, struct error_info *ei)
{
    struct sched_workload_info info;
    int rc = 0;

    pthread_mutex_lock(&e->lock);
    /* Work submitted a moment ago may still be in the inbox. */
    engine__take_inbox(e, time_now_ms());
    if (engine__staged_find(e, workload_id) || engine__unstaging_find(e, workload_id)) {
        rc = cancel_aside(e, workload_id, ei);
    } else if (engine__blocked_find(e, workload_id)) {
        rc = cancel_queued(e, workload_id, ei); /* held, or waiting for its dependency */
    } else if (sched_workload_info(e->sched, workload_id, &info) < 0) {
        rc = errinfo_set(ei, ERR_CONFLICT, NULL, "workload %" PRId64 " has already ended",
                         workload_id);
    } else if (info.state == SCHED_QUEUED) {
        rc = cancel_queued(e, workload_id, ei);
    } else {
        rc = engine__stop_running(e, workload_id, "cancel requested: stopping", ei);
    }
    pthread_mutex_unlock(&e->lock);
    engine__wake(e);
    return rc;
}
