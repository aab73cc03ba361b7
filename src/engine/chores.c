/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chores.c: what the loop does besides scheduling: metering (open runs cut
 * at month boundaries, budgets checked) and the idle policies.
 */
#include "engine/engine-int.h"

#include "base/log.h"
#include "billing/billing.h"
#include "collect/collector.h"

/*
 * Metering chores: at a month boundary, runs still open are cut there so
 * the month is complete in the ledger; every minute, budgets are checked
 * and alerts raised. Each is one transaction; a failure is retried later.
 */
#define BUDGET_CHECK_MS 60000

void engine__meter_chores(struct engine *e, int64_t now)
{
    struct meter_period_rule months = {0};
    struct error_info ei = {0};
    int64_t month, end;
    struct arena a;
    int rc;

    meter_period_of(&months, now, &month, &end);
    if (month <= e->metered_through && now - e->budgets_checked < BUDGET_CHECK_MS)
        return;
    arena_init(&a);
    rc = store_begin(e->db, &ei);
    if (rc >= 0 && month > e->metered_through)
        rc = billing_cut_open_runs(e->db, month, now, &a, &ei);
    if (rc >= 0 && now - e->budgets_checked >= BUDGET_CHECK_MS) {
        rc = billing_check_budgets(e->db, now, &a, &ei);
        if (rc > 0)
            log_info("budget alerts raised", "count", arena_printf(&a, "%d", rc));
    }
    if (rc >= 0)
        rc = store_commit(e->db, &ei);
    if (rc >= 0) {
        e->metered_through = month;
        e->budgets_checked = now;
    } else {
        store_rollback(e->db);
        e->budgets_checked = now; /* retry in a minute, not every tick */
        log_error("could not meter open work or check budgets", "error", ei.message);
    }
    arena_release(&a);
}

/*
 * Idle policies (DESIGN.md section 5): work whose GPUs have all been
 * idle-allocated (allocated, activity under the threshold over the window)
 * gets one "idle" event after idle_notify_ms, and opportunistic work is
 * stopped after idle_stop_p2_ms. Owned work is never stopped. Checked every
 * few seconds from the collector's view of each GPU.
 */
#define IDLE_CHECK_MS 5000

static struct idle_track *idle_of(struct engine *e, int64_t wid)
{
    for (size_t i = 0; i < e->n_idle; i++) {
        if (e->idle[i].workload_id == wid)
            return &e->idle[i];
    }
    return NULL;
}

/* Tracks runs (rows: open allocations) whose every GPU is idle-allocated now. */
static void track_idle(struct engine *e, const struct row *rows, size_t n, int64_t now,
                       struct arena *a)
{
    struct run_idle {
        int64_t wid;
        bool idle, p2;
    } *runs = arena_calloc(a, n + 1, sizeof(*runs));
    size_t n_runs = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t wid = row_int(&rows[i], F_ALLOCATIONS_WORKLOAD_ID);
        const struct gpu_info *g =
            FIND_BY_ID(e->gpus, e->n_gpus, row_int(&rows[i], F_ALLOCATIONS_GPU_ID));
        struct collector_gpu cg;
        bool idle = g && g->uuid && collector_gpu(e->opt.collector, g->uuid, true, now, &cg) &&
                    cg.state == INV_STATE_IDLE_ALLOCATED;
        size_t k = 0;
        while (k < n_runs && runs[k].wid != wid)
            k++;
        if (k == n_runs)
            runs[n_runs++] = (struct run_idle){
                wid, true,
                strcmp(row_str(&rows[i], F_ALLOCATIONS_PRIORITY_CLASS), "opportunistic") == 0};
        runs[k].idle &= idle;
    }
    for (size_t k = 0; k < n_runs; k++) {
        struct idle_track *t = idle_of(e, runs[k].wid);
        if (!runs[k].idle)
            continue;
        if (!t) {
            ALLOC_GROW(e->idle, e->n_idle + 1, e->cap_idle);
            t = &e->idle[e->n_idle++];
            *t = (struct idle_track){runs[k].wid, now, runs[k].p2, false, false, false};
        }
        t->seen = true;
    }
}

/* Notifies and stops tracked idle runs as the policy says; forgets runs not idle any more. */
static void act_on_idle(struct engine *e, int64_t now, struct arena *a, struct error_info *ei)
{
    for (size_t i = 0; i < e->n_idle;) {
        struct idle_track *t = &e->idle[i];
        if (!t->seen) { /* ended, or busy again */
            *t = e->idle[--e->n_idle];
            continue;
        }
        {
            struct inv_idle_policy pol = {e->opt.idle_notify_ms, e->opt.idle_stop_p2_ms};
            struct inv_idle_alloc al = {t->workload_id, t->opportunistic, now - t->since_ms,
                                        t->notified};
            int act = 0;
            char why[160], idle_for[32];
            int64_t idle_s = (now - t->since_ms) / 1000;
            if (idle_s < 120)
                snprintf(idle_for, sizeof(idle_for), "%" PRId64 " s", idle_s);
            else
                snprintf(idle_for, sizeof(idle_for), "%" PRId64 " min", idle_s / 60);
            inv_idle_apply(&pol, &al, 1, &act);
            if ((act & INV_IDLE_NOTIFY) && !t->notified) {
                struct row w;
                snprintf(why, sizeof(why),
                         "idle for %s: its GPUs are allocated but unused (reclaimable)", idle_for);
                if (store_get(e->db, &model_workloads, t->workload_id, a, &w, ei) >= 0)
                    engine__add_event(e, a, t->workload_id, row_int(&w, F_WORKLOADS_PROJECT_ID),
                                      now, "idle", why, ei);
                t->notified = true;
            }
            if ((act & INV_IDLE_STOP) && !t->stopped) {
                snprintf(why, sizeof(why),
                         "stopping: opportunistic work idle for %s (the idle-stop setting)",
                         idle_for);
                engine__stop_running(e, t->workload_id, why, ei);
                t->stopped = true;
            }
        }
        i++;
    }
}

void engine__idle_chores(struct engine *e, int64_t now)
{
    struct store_filter f;
    struct error_info ei = {0};
    struct row *rows;
    struct arena a;
    size_t n;

    if (!e->opt.collector || now - e->idle_checked < IDLE_CHECK_MS)
        return;
    e->idle_checked = now;
    arena_init(&a);
    store_filter_init(&f);
    store_filter_eq_null(&f, F_ALLOCATIONS_ENDED_MS);
    if (store_list_all(e->db, &model_allocations, &f, &a, &rows, &n, &ei) < 0) {
        arena_release(&a);
        return;
    }
    /* The telemetry counts these GPUs' samples as allocated time (efficiency). */
    {
        const char **uuids = arena_calloc(&a, n + 1, sizeof(char *));
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            const struct gpu_info *g =
                FIND_BY_ID(e->gpus, e->n_gpus, row_int(&rows[i], F_ALLOCATIONS_GPU_ID));
            if (g && g->uuid && *g->uuid)
                uuids[k++] = g->uuid;
        }
        collector_set_allocated(e->opt.collector, uuids, k);
    }
    if (e->opt.idle_notify_ms <= 0 && e->opt.idle_stop_p2_ms <= 0) {
        arena_release(&a);
        return;
    }
    for (size_t i = 0; i < e->n_idle; i++)
        e->idle[i].seen = false;
    track_idle(e, rows, n, now, &a);
    act_on_idle(e, now, &a, &ei);
    arena_release(&a);
}
