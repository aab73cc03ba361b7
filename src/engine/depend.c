/* SPDX-License-Identifier: Apache-2.0 */
/*
 * depend.c: queued work the scheduler does not see yet (Slurm users'
 * --dependency and hold). Work that is held, or whose dependency has not
 * ended (or, for after-ok, not succeeded), waits here, set aside, with a
 * reason that says so; it goes to the scheduler, in its original place (its
 * submit time), once nothing holds it back, and it is cancelled, saying why,
 * when an after-ok dependency ended otherwise. The scheduler core stays as
 * it is: it only ever sees work that may run.
 */
#include "engine/engine-int.h"

#include "base/log.h"
#include "base/timeutil.h"

enum gate { GATE_GO, GATE_WAIT, GATE_NEVER };

static const char *held_why(struct arena *a, int64_t id)
{
    return arena_printf(a, "held: not scheduled until released (gpuaas release %" PRId64 ")", id);
}

/* Whether queued work w may go to the scheduler now, and if not why. */
static enum gate gate_of(struct engine *e, const struct row *w, struct arena *a,
                         const char **ret_why)
{
    const struct value *after = row_get(w, F_WORKLOADS_AFTER_ID);
    bool ok_only = row_int(w, F_WORKLOADS_AFTER_OK) != 0;
    struct row dep;
    const char *state;

    if (row_int(w, F_WORKLOADS_HELD)) {
        *ret_why = held_why(a, model_row_id(w));
        return GATE_WAIT;
    }
    if (after->null || store_get(e->db, &model_workloads, after->i, a, &dep, NULL) < 0)
        return GATE_GO; /* none, or gone */
    state = row_str(&dep, F_WORKLOADS_STATE);
    if (!model_workload_state_ended(state)) {
        *ret_why = arena_printf(a, "waiting for workload %" PRId64 " to %s (a dependency)",
                                after->i, ok_only ? "succeed" : "end");
        return GATE_WAIT;
    }
    if (ok_only && strcmp(state, "succeeded") != 0) {
        *ret_why = arena_printf(a,
                                "its dependency, workload %" PRId64
                                ", ended %s: it can only run after that one succeeded",
                                after->i, state);
        return GATE_NEVER;
    }
    return GATE_GO;
}

bool engine__blocked_find(const struct engine *e, int64_t id)
{
    for (size_t i = 0; i < e->n_blocked; i++) {
        if (e->blocked[i] == id)
            return true;
    }
    return false;
}

static void blocked_add(struct engine *e, int64_t id)
{
    if (!engine__blocked_find(e, id)) {
        ALLOC_GROW(e->blocked, e->n_blocked + 1, e->cap_blocked);
        e->blocked[e->n_blocked++] = id;
    }
}

static void blocked_remove(struct engine *e, int64_t id)
{
    for (size_t i = 0; i < e->n_blocked; i++) {
        if (e->blocked[i] == id) {
            e->blocked[i] = e->blocked[--e->n_blocked];
            return;
        }
    }
}

/* One change of a queued workload's row in its own transaction, with an event. */
static int write_row(struct engine *e, struct row *w, int64_t now, const char *type,
                     const char *msg, struct arena *a, struct error_info *ei)
{
    int rc = store_begin(e->db, ei);
    row_set_int(w, F_WORKLOADS_UPDATED_AT, now / 1000);
    if (rc >= 0)
        rc = store_update(e->db, &model_workloads, model_row_id(w), w, ei);
    if (rc >= 0 && type)
        rc = engine__add_event(e, a, model_row_id(w), row_int(w, F_WORKLOADS_PROJECT_ID), now, type,
                               msg, ei);
    if (rc >= 0)
        rc = store_commit(e->db, ei);
    if (rc < 0)
        store_rollback(e->db);
    return rc;
}

/* Work whose after-ok dependency failed: cancelled, and what depends on it is looked at. */
static void cancel_never(struct engine *e, struct row *w, const char *why, int64_t now,
                         struct arena *a)
{
    struct error_info ei = {0};
    row_set_str(w, a, F_WORKLOADS_STATE, "cancelled");
    row_set_str(w, a, F_WORKLOADS_REASON, why);
    row_set_int(w, F_WORKLOADS_FINISHED_AT, now / 1000);
    if (write_row(e, w, now, "cancelled", why, a, &ei) < 0)
        log_error("could not cancel work whose dependency failed", "error", ei.message);
    e->blocked_dirty = true;
}

void engine__submit_or_hold(struct engine *e, struct row *w, int64_t now, bool write_reason,
                            struct arena *a)
{
    struct sched_workload_spec sp;
    const char *why = NULL;
    struct error_info ei = {0};

    switch (gate_of(e, w, a, &why)) {
    case GATE_GO:
        if (engine__spec_of(e, w, &sp) == 0)
            sched_submit(e->sched, &sp, now);
        break;
    case GATE_WAIT:
        blocked_add(e, model_row_id(w));
        if (write_reason && strcmp(row_str(w, F_WORKLOADS_REASON), why) != 0) {
            row_set_str(w, a, F_WORKLOADS_REASON, why);
            if (write_row(e, w, now, NULL, NULL, a, &ei) < 0)
                log_warn("could not write why work waits", "error", ei.message);
        }
        break;
    case GATE_NEVER:
        cancel_never(e, w, why, now, a);
        break;
    }
}

void engine__recheck_blocked(struct engine *e, int64_t now)
{
    struct arena a;

    arena_init(&a);
    /* A cancel here can release or cancel what waits for the cancelled one: look again. */
    for (int round = 0; e->blocked_dirty && round < 64; round++) {
        e->blocked_dirty = false;
        for (size_t i = e->n_blocked; i-- > 0;) {
            int64_t id = e->blocked[i];
            struct row w;
            const char *why = NULL;
            struct error_info ei = {0};
            enum gate g;
            if (i >= e->n_blocked)
                continue; /* the list shrank under a cascade */
            if (store_get(e->db, &model_workloads, id, &a, &w, NULL) < 0 ||
                strcmp(row_str(&w, F_WORKLOADS_STATE), "queued") != 0) {
                blocked_remove(e, id);
                continue;
            }
            g = gate_of(e, &w, &a, &why);
            if (g == GATE_WAIT) {
                if (strcmp(row_str(&w, F_WORKLOADS_REASON), why) != 0) {
                    row_set_str(&w, &a, F_WORKLOADS_REASON, why);
                    if (write_row(e, &w, now, NULL, NULL, &a, &ei) < 0)
                        log_warn("could not write why work waits", "error", ei.message);
                }
                continue;
            }
            blocked_remove(e, id);
            if (g == GATE_NEVER) {
                cancel_never(e, &w, why, now, &a);
            } else {
                row_set_str(&w, &a, F_WORKLOADS_REASON, "waiting for the scheduler to look at it");
                if (write_row(e, &w, now, "eligible",
                              "nothing holds it back any more: queued in its original place", &a,
                              &ei) < 0)
                    log_warn("could not record work let into the queue", "error", ei.message);
                engine__submit_or_hold(e, &w, now, false, &a);
            }
        }
    }
    arena_release(&a);
}

int engine_hold(struct engine *e, int64_t workload_id, bool hold, const char *who,
                struct error_info *ei)
{
    int64_t now = time_now_ms();
    struct sched_workload_info info;
    struct arena a;
    struct row w;
    int rc;

    arena_init(&a);
    pthread_mutex_lock(&e->lock);
    engine__take_inbox(e, now); /* work submitted a moment ago */
    rc = store_get(e->db, &model_workloads, workload_id, &a, &w, ei);
    if (rc >= 0 && strcmp(row_str(&w, F_WORKLOADS_STATE), "queued") != 0)
        rc = errinfo_set(ei, ERR_CONFLICT, NULL,
                         "workload %" PRId64 " is %s: only queued work can be %s", workload_id,
                         row_str(&w, F_WORKLOADS_STATE), hold ? "held" : "released");
    else if (rc >= 0 && engine__held_aside(e, workload_id))
        rc = errinfo_set(ei, ERR_CONFLICT, NULL,
                         "workload %" PRId64 " is queued in its cluster's queue behind running "
                         "work, to start on its GPUs: cancel it to stop that",
                         workload_id);
    if (rc >= 0 && (row_int(&w, F_WORKLOADS_HELD) != 0) != hold) {
        row_set_int(&w, F_WORKLOADS_HELD, hold);
        row_set_str(&w, &a, F_WORKLOADS_REASON,
                    hold ? held_why(&a, workload_id)
                         : "released: waiting for the scheduler to look at it");
        rc = write_row(e, &w, now, hold ? "held" : "released",
                       arena_printf(&a, "%s by %s", hold ? "held" : "released", who), &a, ei);
        if (rc >= 0 && hold) {
            if (sched_workload_info(e->sched, workload_id, &info) == 0 &&
                info.state == SCHED_QUEUED)
                sched_cancel(e->sched, workload_id, now); /* out of the queue, its place kept */
            blocked_add(e, workload_id);
        }
        e->blocked_dirty = true;
    }
    pthread_mutex_unlock(&e->lock);
    engine__wake(e);
    arena_release(&a);
    return rc;
}
