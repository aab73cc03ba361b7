/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ends.c: ends reported by backends. Each batch is recorded in one
 * transaction (the workload's state, its allocations closed and metered,
 * an event, a preemption closed by its last victim; queue-ahead: the work
 * waiting behind it handed its GPUs), then the scheduler is told.
 */
#include "engine/engine-int.h"

#include "base/log.h"
#include "base/timeutil.h"
#include "billing/billing.h"

static bool take_cancelling(struct engine *e, int64_t id)
{
    for (size_t i = 0; i < e->n_cancelling; i++) {
        if (e->cancelling[i] == id) {
            e->cancelling[i] = e->cancelling[--e->n_cancelling];
            return true;
        }
    }
    return false;
}

/*
 * Ends a workload's open allocations at `at` and meters the run. at < 0:
 * the work never ran (its backend could not start it, maybe after it was
 * recorded running): each allocation ends where it started, so nothing is
 * used and nothing billed.
 */
static int close_allocations(struct engine *e, int64_t wid, int64_t at, const char *why,
                             struct arena *a, struct error_info *ei)
{
    struct row *rows;
    size_t n;
    int64_t run_started = 0;
    int replicas = 0;
    int rc = engine__open_allocations(e, wid, a, &rows, &n, ei);

    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t started = row_int(&rows[i], F_ALLOCATIONS_STARTED_MS);
        int64_t rep = row_int(&rows[i], F_ALLOCATIONS_REPLICA);
        bool seen = false;
        for (size_t k = 0; k < i; k++)
            seen |= row_int(&rows[k], F_ALLOCATIONS_REPLICA) == rep;
        replicas += !seen;
        if (i == 0 || started < run_started)
            run_started = started;
        row_set_int(&rows[i], F_ALLOCATIONS_ENDED_MS, at < 0 ? started : at);
        row_set_str(&rows[i], a, F_ALLOCATIONS_END_REASON, why);
        rc = store_update(e->db, &model_allocations, model_row_id(&rows[i]), &rows[i], ei);
    }
    /* The run's usage goes to the ledger in the same transaction: never lost, never twice. */
    if (rc >= 0 && n > 0 && at >= 0)
        rc = billing_meter_run(e->db, wid, run_started, replicas,
                               row_str(&rows[0], F_ALLOCATIONS_PRIORITY_CLASS), at, time_now_ms(),
                               a, ei);
    return rc;
}

/* A victim has released: when it was the last of its ledger entry, close the entry. */
static int victim_released(struct engine *e, int64_t vid, int64_t at, struct arena *a,
                           int64_t *ret_reclaim_ms, int64_t *ret_ledger, struct error_info *ei)
{
    int64_t ledger = 0;
    bool others = false;
    for (size_t i = 0; i < e->n_victims; i++) {
        if (e->victims[i].victim_id == vid) {
            ledger = e->victims[i].ledger_id;
            e->victims[i] = e->victims[--e->n_victims];
            break;
        }
    }
    if (!ledger)
        return 0;
    for (size_t i = 0; i < e->n_victims; i++)
        others |= e->victims[i].ledger_id == ledger;
    if (!others) {
        struct row led;
        int rc = store_get(e->db, &model_preemptions, ledger, a, &led, ei);
        if (rc < 0)
            return rc;
        row_set_int(&led, F_PREEMPTIONS_RELEASED_MS, at);
        *ret_reclaim_ms = at - row_int(&led, F_PREEMPTIONS_DECIDED_MS);
        row_set_int(&led, F_PREEMPTIONS_RECLAIM_MS, *ret_reclaim_ms);
        *ret_ledger = ledger;
        return store_update(e->db, &model_preemptions, ledger, &led, ei);
    }
    return 0;
}

/*
 * Writes the end of a workload (state, allocations closed, event, ledger) in
 * the caller's transaction, and says what the scheduler must then be told.
 */
static int record_end(struct engine *e, const struct backend_event *ev, struct arena *a,
                      struct end_action *act, struct error_info *ei)
{
    const struct resource_def *d = &model_workloads;
    struct sched_workload_info info;
    struct row w, *held = NULL;
    size_t n_held = 0;
    const struct staged *next;
    const char *state, *reason, *alloc_reason;
    bool cancel, preempted, requeue;
    int rc;

    memset(act, 0, sizeof(*act));
    act->workload_id = ev->workload_id;
    act->at_ms = ev->at_ms;
    act->skip = true;
    act->reclaim_ms = -1;
    if (sched_workload_info(e->sched, ev->workload_id, &info) < 0 || info.state == SCHED_QUEUED)
        return 0; /* not ours, or already dealt with */
    rc = store_get(e->db, d, ev->workload_id, a, &w, ei);
    if (rc < 0)
        return rc;
    cancel = take_cancelling(e, ev->workload_id);
    preempted = info.state == SCHED_PREEMPTING && !cancel;
    requeue = preempted && row_int(&w, F_WORKLOADS_REQUEUE);
    if (cancel) {
        state = "cancelled";
        reason = "cancelled while running";
    } else if (preempted) {
        state = requeue ? "queued" : "preempted";
        reason = requeue ? "preempted; queued again in its original place" : "preempted";
    } else if (ev->how == BACKEND_TIMEOUT) {
        state = "failed";
        reason = "killed at its maximum runtime";
    } else if (ev->how == BACKEND_LOST) {
        state = "failed";
        reason = ev->message[0] ? arena_printf(a, "lost: %s", ev->message)
                                : "lost: its backend no longer knows it";
    } else if (ev->how == BACKEND_NOT_STARTED) {
        state = "failed";
        reason = ev->message[0] ? arena_printf(a, "its backend could not start it: %s", ev->message)
                                : "its backend could not start it";
    } else if (ev->how == BACKEND_EXITED && ev->exit_code == 0) {
        state = "succeeded";
        reason = "exited 0";
    } else {
        state = "failed";
        reason = ev->message[0]
                     ? arena_printf(a, "exited with status %d: %s", ev->exit_code, ev->message)
                     : arena_printf(a, "exited with status %d", ev->exit_code);
    }
    alloc_reason = preempted ? "preempted" : state;
    row_set_str(&w, a, F_WORKLOADS_STATE, state);
    row_set_str(&w, a, F_WORKLOADS_REASON, reason);
    row_set_int(&w, F_WORKLOADS_EXIT_CODE, ev->exit_code);
    if (requeue) {
        row_set_null(&w, F_WORKLOADS_FINISHED_AT);
        row_set_null(&w, F_WORKLOADS_EXIT_CODE);
    } else {
        row_set_int(&w, F_WORKLOADS_FINISHED_AT, ev->at_ms / 1000);
    }
    if (preempted)
        row_set_int(&w, F_WORKLOADS_PREEMPTIONS, row_int(&w, F_WORKLOADS_PREEMPTIONS) + 1);
    row_set_int(&w, F_WORKLOADS_UPDATED_AT, ev->at_ms / 1000);
    rc = store_update(e->db, d, ev->workload_id, &w, ei);
    /*
     * Work queued behind it in its backend starts there now, on its GPUs:
     * unless it ended in a way the backend's own queue does not follow (preempted:
     * taken back before the stop; lost or never started).
     */
    next = engine__staged_behind(e, ev->workload_id);
    if (next && (preempted || ev->how == BACKEND_LOST || ev->how == BACKEND_NOT_STARTED ||
                 next->spec.id == 0)) {
        act->unstage_id = next->id;
        next = NULL;
    }
    if (rc >= 0 && next)
        rc = engine__open_allocations(e, ev->workload_id, a, &held, &n_held, ei);
    if (rc >= 0)
        rc = close_allocations(e, ev->workload_id, ev->how == BACKEND_NOT_STARTED ? -1 : ev->at_ms,
                               alloc_reason, a, ei);
    if (rc >= 0)
        rc =
            engine__add_event(e, a, ev->workload_id, row_int(&w, F_WORKLOADS_PROJECT_ID), ev->at_ms,
                              requeue     ? "requeued"
                              : preempted ? "preempted"
                                          : state,
                              reason, ei);
    if (rc >= 0 && next)
        rc = engine__hand_over(e, next, held, n_held, ev->at_ms, a, act, ei);
    if (rc >= 0 && info.state == SCHED_PREEMPTING)
        rc = victim_released(e, ev->workload_id, ev->at_ms, a, &act->reclaim_ms, &act->ready_ledger,
                             ei);
    act->outcome = preempted                         ? OUTCOME_PREEMPTED
                   : cancel                          ? OUTCOME_CANCELLED
                   : strcmp(state, "succeeded") == 0 ? OUTCOME_SUCCEEDED
                                                     : OUTCOME_FAILED;
    act->cancel = cancel;
    act->skip = false;
    return rc;
}

static void apply_end(struct engine *e, const struct end_action *act)
{
    if (act->skip)
        return;
    e->metrics.outcomes[act->outcome]++;
    if (act->reclaim_ms >= 0)
        metrics_histogram_observe(&e->metrics.reclaim, act->reclaim_ms * 1000);
    /* Its preemptor's first try is the next pass's: recorded by that pass's transaction. */
    if (act->ready_ledger) {
        ALLOC_GROW(e->reclaims_ready, e->n_reclaims_ready + 1, e->cap_reclaims_ready);
        e->reclaims_ready[e->n_reclaims_ready++] = act->ready_ledger;
    }
    if (act->cancel)
        sched_cancel(e->sched, act->workload_id, act->at_ms);
    else
        sched_released(e->sched, act->workload_id, act->at_ms);
    if (act->successor_id) {
        engine__staged_remove(e, act->successor_id);
        metrics_histogram_observe(&e->metrics.queue_wait,
                                  (act->at_ms - act->successor.submit_ms) * 1000);
        if (sched_restore_running(e->sched, &act->successor, act->successor_runs_as, act->gpus,
                                  act->milli, act->replica, act->n_held, act->at_ms, false) < 0) {
            log_error("the scheduler refused work its backend started in another's place; "
                      "rebuilding from the store");
            e->reload = true;
        }
    }
    if (act->unstage_id)
        engine__unstage(e, act->unstage_id, "the workload it waited for did not end normally",
                        act->at_ms);
}

/*
 * Records a batch of ends in one transaction (one commit, not one per end:
 * the store has one writer), then tells the scheduler. If the batch fails,
 * the engine's own lists are put back and each end is tried on its own, so
 * one bad record cannot hold back the others.
 */
static void handle_batch(struct engine *e, const struct backend_event *evs, size_t n)
{
    struct end_action *acts;
    int64_t *cancelling = xcalloc(e->n_cancelling + 1, sizeof(int64_t));
    struct pending_victim *victims = xcalloc(e->n_victims + 1, sizeof(*victims));
    size_t n_cancelling = e->n_cancelling, n_victims = e->n_victims;
    struct error_info ei = {0};
    struct arena a;
    int rc;

    if (n == 0) {
        free(cancelling);
        free(victims);
        return;
    }
    acts = xcalloc(n + 1, sizeof(*acts));
    if (n_cancelling)
        memcpy(cancelling, e->cancelling, n_cancelling * sizeof(int64_t));
    if (n_victims)
        memcpy(victims, e->victims, n_victims * sizeof(*victims));
    arena_init(&a);
    rc = store_begin(e->db, &ei);
    for (size_t i = 0; rc >= 0 && i < n; i++)
        rc = record_end(e, &evs[i], &a, &acts[i], &ei);
    if (rc >= 0)
        rc = store_commit(e->db, &ei);
    if (rc >= 0) {
        for (size_t i = 0; i < n; i++)
            apply_end(e, &acts[i]);
    } else {
        store_rollback(e->db);
        memcpy(e->cancelling, cancelling, n_cancelling * sizeof(int64_t));
        e->n_cancelling = n_cancelling;
        memcpy(e->victims, victims, n_victims * sizeof(*victims));
        e->n_victims = n_victims;
        for (size_t i = 0; i < n; i++) {
            struct end_action act;
            ei.code = 0;
            rc = store_begin(e->db, &ei);
            if (rc >= 0)
                rc = record_end(e, &evs[i], &a, &act, &ei);
            if (rc >= 0)
                rc = store_commit(e->db, &ei);
            if (rc >= 0) {
                apply_end(e, &act);
            } else {
                store_rollback(e->db);
                log_error("could not record the end of a workload", "error", ei.message);
            }
        }
    }
    arena_release(&a);
    free(acts);
    free(cancelling);
    free(victims);
}

/*
 * Records ends. Those of work out of the scheduler because its backend holds
 * it queued behind other work (or is giving it back) take another path, in
 * order: what comes before them is recorded first, since the end of the
 * work such a one waits for hands it its GPUs; and its own end always comes
 * after that one's, whatever a backend's whole-second times say.
 */
void engine__handle_ends(struct engine *e, const struct backend_event *evs, size_t n)
{
    struct backend_event *order;
    size_t start = 0;

    if (e->n_staged == 0 && e->n_unstaging == 0) {
        handle_batch(e, evs, n);
        return;
    }
    order = xcalloc(n + 1, sizeof(*order));
    memcpy(order, evs, n * sizeof(*order));
    for (size_t i = 0; i < n; i++) {
        const struct staged *st = engine__staged_find(e, order[i].workload_id);
        for (size_t j = n; st && j-- > i + 1;) {
            if (order[j].workload_id == st->after_id) {
                struct backend_event ev = order[i];
                memmove(&order[i], &order[i + 1], (j - i) * sizeof(*order));
                order[j] = ev;
                i--; /* look at what moved into place i */
                break;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!engine__held_aside(e, order[i].workload_id))
            continue;
        handle_batch(e, order + start, i - start);
        start = i;
        if (engine__held_aside(e, order[i].workload_id)) {
            engine__side_end(e, &order[i]);
            start = i + 1;
        }
    }
    handle_batch(e, order + start, n - start);
    free(order);
}

/*
 * Start reports (ops->take_started): a backend that only asked for the work
 * to start (Kubernetes' pod creates) says when every replica really runs;
 * each is a "started" event beside the "running" one written at launch. The
 * workload's state and its metering stay as they are: its GPUs are held, and
 * billed, from the launch (a pod bound to its node holds them while it
 * starts). Reports of work no longer running (ended, requeued) are dropped.
 */
void engine__take_started(struct engine *e, struct backend *b)
{
    struct backend_started st[32];
    size_t n;

    if (!b->ops->take_started)
        return;
    while ((n = b->ops->take_started(b, st, ARRAY_SIZE(st))) > 0) {
        struct error_info ei = {0};
        struct arena a;
        int rc;
        arena_init(&a);
        rc = store_begin(e->db, &ei);
        for (size_t i = 0; rc >= 0 && i < n; i++) {
            struct sched_workload_info info;
            struct row w;
            if (sched_workload_info(e->sched, st[i].workload_id, &info) < 0 ||
                info.state == SCHED_QUEUED)
                continue;
            rc = store_get(e->db, &model_workloads, st[i].workload_id, &a, &w, &ei);
            if (rc >= 0)
                rc = engine__add_event(
                    e, &a, st[i].workload_id, row_int(&w, F_WORKLOADS_PROJECT_ID), st[i].at_ms,
                    "started", arena_printf(&a, "every replica is running on %s", engine__title(b)),
                    &ei);
        }
        if (rc >= 0)
            rc = store_commit(e->db, &ei); /* a failed commit has rolled back */
        else
            store_rollback(e->db);
        if (rc < 0)
            log_error("could not record that work started", "error", ei.message);
        arena_release(&a);
        if (n < ARRAY_SIZE(st))
            break;
    }
}
