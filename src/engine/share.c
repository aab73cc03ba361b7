/* SPDX-License-Identifier: Apache-2.0 */
/*
 * share.c: past usage for the decayed fair share (sched.h, enum
 * sched_fair_share). The core keeps it as time passes; the engine gives it
 * to each new core before running work is restored. On start it is rebuilt
 * from the store: the usage ledger's opportunistic records (closed
 * intervals, to the millisecond) and, for runs still open, the part the
 * ledger does not hold yet (since the run's start or its last month cut) up
 * to now. On a rebuild (a configuration change) the old core's figures are
 * carried over instead of reading the whole ledger again.
 */
#include "engine/engine-int.h"

static bool decayed(const struct engine *e)
{
    return e->opt.fair_share == SCHED_SHARE_DECAYED;
}

void engine__past_usage_take(struct engine *e, int64_t now, struct engine_past_usage *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!decayed(e) || !e->sched)
        return;
    ret->taken = true;
    ret->v = xcalloc(e->n_projects * e->n_classes + 1, sizeof(*ret->v));
    for (size_t p = 0; p < e->n_projects; p++) {
        for (size_t c = 0; c < e->n_classes; c++) {
            double u = 0;
            if (sched_past_usage(e->sched, e->projects[p].id, e->classes[c].id, now, &u) == 0)
                ret->v[ret->n++] =
                    (struct past_usage_entry){e->projects[p].id, e->classes[c].id, u};
        }
    }
}

/* An open run of opportunistic work: held since started, in the ledger up to metered. */
struct open_run {
    int64_t workload_id, project_id, class_id, milli;
    int64_t started, metered;
};

static int by_workload(const void *a, const void *b)
{
    const struct open_run *x = a, *y = b;
    return (x->workload_id > y->workload_id) - (x->workload_id < y->workload_id);
}

/* runs sorted by workload id (the first member, as FIND_BY_ID wants) */
static struct open_run *run_of(struct open_run *runs, size_t n, int64_t workload_id)
{
    return FIND_BY_ID(runs, n, workload_id);
}

/* The open allocations of opportunistic work, one entry per workload. */
static int open_runs(struct engine *e, struct open_run **ret, size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;
    struct arena a;
    struct row *rows;
    size_t n = 0, cap = 0;
    int rc;

    *ret = NULL;
    *ret_n = 0;
    arena_init(&a);
    store_filter_init(&f);
    store_filter_eq_null(&f, F_ALLOCATIONS_ENDED_MS);
    store_filter_eq_str(&f, F_ALLOCATIONS_PRIORITY_CLASS, "opportunistic");
    rc = store_list_all(e->db, &model_allocations, &f, &a, &rows, &n, ei);
    /* One entry per allocation, then one per workload: sorted, its rows merged. */
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t started = row_int(&rows[i], F_ALLOCATIONS_STARTED_MS);
        ALLOC_GROW(*ret, *ret_n + 1, cap);
        (*ret)[(*ret_n)++] = (struct open_run){row_int(&rows[i], F_ALLOCATIONS_WORKLOAD_ID),
                                               row_int(&rows[i], F_ALLOCATIONS_PROJECT_ID),
                                               row_int(&rows[i], F_ALLOCATIONS_GPU_CLASS_ID),
                                               row_int(&rows[i], F_ALLOCATIONS_MILLI),
                                               started,
                                               started};
    }
    if (*ret_n > 1)
        qsort(*ret, *ret_n, sizeof(**ret), by_workload);
    n = 0;
    for (size_t i = 0; i < *ret_n; i++) {
        struct open_run *r = &(*ret)[i];
        if (n > 0 && (*ret)[n - 1].workload_id == r->workload_id) {
            (*ret)[n - 1].milli += r->milli;
            /* A run starts with its earliest allocation, as the ledger's run key says. */
            if (r->started < (*ret)[n - 1].started)
                (*ret)[n - 1].started = (*ret)[n - 1].metered = r->started;
        } else {
            (*ret)[n++] = *r;
        }
    }
    *ret_n = n;
    arena_release(&a);
    return rc;
}

/* Every opportunistic record of the ledger, a page at a time; open runs learn how far it goes. */
static int from_ledger(struct engine *e, struct open_run *runs, size_t n_runs,
                       struct error_info *ei)
{
    struct store_filter f;
    int rc = 0;

    store_filter_init(&f);
    store_filter_eq_str(&f, F_USAGE_PRIORITY_CLASS, "opportunistic");
    f.limit = 10000;
    for (;;) {
        struct arena a;
        struct row *rows;
        size_t n = 0;
        arena_init(&a);
        rc = store_list(e->db, &model_usage, &f, &a, &rows, &n, ei);
        for (size_t i = 0; rc >= 0 && i < n; i++) {
            const struct row *u = &rows[i];
            const struct flavor_info *fl =
                FIND_BY_ID(e->flavors, e->n_flavors, row_int(u, F_USAGE_FLAVOR_ID));
            struct open_run *r = run_of(runs, n_runs, row_int(u, F_USAGE_WORKLOAD_ID));
            int64_t ended = row_int(u, F_USAGE_ENDED_MS);
            if (r && row_int(u, F_USAGE_RUN_STARTED_MS) == r->started && ended > r->metered)
                r->metered = ended;
            /* A project or class gone since is nobody's to weigh any more. */
            if (fl && fl->class_id)
                sched_add_usage(e->sched, row_int(u, F_USAGE_PROJECT_ID), fl->class_id,
                                row_int(u, F_USAGE_REPLICAS) * row_int(u, F_USAGE_GPU_MILLI),
                                row_int(u, F_USAGE_STARTED_MS), ended);
        }
        if (n > 0)
            f.after_id = model_row_id(&rows[n - 1]);
        arena_release(&a);
        if (rc < 0 || n < (size_t)f.limit)
            return rc;
    }
}

int engine__past_usage_give(struct engine *e, struct engine_past_usage *past, int64_t now,
                            struct error_info *ei)
{
    struct open_run *runs = NULL;
    size_t n_runs = 0;
    int rc = 0;

    if (!decayed(e))
        return 0;
    if (past->taken) {
        for (size_t i = 0; i < past->n; i++)
            sched_add_decayed_usage(e->sched, past->v[i].project_id, past->v[i].class_id,
                                    past->v[i].amount, now);
        free(past->v);
        memset(past, 0, sizeof(*past));
    } else {
        rc = open_runs(e, &runs, &n_runs, ei);
        if (rc >= 0)
            rc = from_ledger(e, runs, n_runs, ei);
        for (size_t i = 0; rc >= 0 && i < n_runs; i++) {
            if (runs[i].metered < now)
                sched_add_usage(e->sched, runs[i].project_id, runs[i].class_id, runs[i].milli,
                                runs[i].metered, now);
        }
        free(runs);
    }
    /* Restored work counts from now on: the core's clock is now, whatever was added. */
    if (rc >= 0 && e->n_projects > 0 && e->n_classes > 0)
        sched_add_decayed_usage(e->sched, e->projects[0].id, e->classes[0].id, 0, now);
    return rc;
}
