/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decide.c: a pass's decisions, persisted then acted on. Admissions
 * (allocations, events) and preemptions (the ledger entry, the victims'
 * states) are written in one transaction; only once it is committed are
 * workloads launched and victims stopped, and what the backends did with
 * the launches is recorded in a second one (running, or ended not started).
 */
#include "engine/engine-int.h"

#include <jansson.h>

#include "base/buf.h"
#include "base/log.h"

void engine__launch_of(struct engine *e, const struct row *w, const struct sched_assign *as,
                       size_t n_as, struct arena *a, struct backend_launch *l)
{
    const struct flavor_info *f =
        FIND_BY_ID(e->flavors, e->n_flavors, row_int(w, F_WORKLOADS_FLAVOR_ID));
    int32_t replicas = (int32_t)row_int(w, F_WORKLOADS_REPLICAS);
    struct backend_replica *reps = arena_calloc(a, (size_t)replicas, sizeof(*reps));
    const struct value *dur = row_get(w, F_WORKLOADS_DURATION_S),
                       *maxrt = row_get(w, F_WORKLOADS_MAX_RUNTIME_S);

    memset(l, 0, sizeof(*l));
    l->workload_id = model_row_id(w);
    l->project_id = row_int(w, F_WORKLOADS_PROJECT_ID);
    l->command = arena_strdup(a, row_str(w, F_WORKLOADS_COMMAND));
    l->image = arena_strdup(a, row_str(w, F_WORKLOADS_IMAGE));
    l->cpu_milli = f ? f->cpu_milli : 0;
    l->mem_mib = f ? f->mem_mib : 0;
    l->duration_ms = dur->null ? -1 : dur->i * 1000;
    l->max_runtime_ms = maxrt->null ? -1 : maxrt->i * 1000;
    for (int32_t r = 0; r < replicas; r++) {
        struct backend_device *devs = arena_calloc(a, n_as, sizeof(*devs));
        size_t nd = 0;
        reps[r].replica = r;
        for (size_t i = 0; i < n_as; i++) {
            const struct gpu_info *g;
            if (as[i].replica != r)
                continue;
            reps[r].node_id = as[i].node_id;
            g = as[i].gpu_id ? FIND_BY_ID(e->gpus, e->n_gpus, as[i].gpu_id) : NULL;
            if (g)
                devs[nd++] = (struct backend_device){g->id, g->uuid, g->index, as[i].milli,
                                                     engine__class_name(e, g->class_id)};
        }
        {
            const struct node_info *ni = FIND_BY_ID(e->nodes, e->n_nodes, reps[r].node_id);
            reps[r].node_name = ni ? ni->name : "";
        }
        reps[r].devices = devs;
        reps[r].n_devices = nd;
    }
    l->replicas = reps;
    l->n_replicas = (size_t)replicas;
}

int engine__add_event(struct engine *e, struct arena *a, int64_t wid, int64_t project, int64_t at,
                      const char *type, const char *msg, struct error_info *ei)
{
    struct row ev = model_row_new(&model_events, a);
    int64_t id;
    row_set_int(&ev, F_EVENTS_WORKLOAD_ID, wid);
    row_set_int(&ev, F_EVENTS_PROJECT_ID, project);
    row_set_int(&ev, F_EVENTS_AT_MS, at);
    row_set_str(&ev, a, F_EVENTS_TYPE, type);
    row_set_str(&ev, a, F_EVENTS_MESSAGE, msg);
    return store_insert(e->db, &model_events, &ev, &id, ei);
}

static char *gpus_text(struct arena *a, int64_t milli)
{
    if (milli % 1000 == 0)
        return arena_printf(a, "%" PRId64, milli / 1000);
    return arena_printf(a, "%" PRId64 ".%03" PRId64, milli / 1000, milli % 1000);
}

/* Why the automatic rule gave admitted work its class; "" for work of a fixed class. */
static const char *auto_why(const struct engine *e, const struct sched_admit *ad, struct arena *a)
{
    int64_t need = 0;
    if (!ad->automatic)
        return "";
    for (size_t i = 0; i < ad->n_assigns; i++)
        need += e->dec.assigns[ad->first_assign + i].milli;
    return arena_printf(a, " (automatic: %s the project's guarantee, %s owned in use + %s %s %s)",
                        ad->pclass == SCHED_P1 ? "within" : "beyond", gpus_text(a, ad->owned_held),
                        gpus_text(a, need), ad->pclass == SCHED_P1 ? "<=" : ">",
                        gpus_text(a, ad->guaranteed));
}

/* A running (or starting) workload's reason: its class when the rule chose it, and borrowing. */
static const char *running_text(const struct sched_admit *ad, const char *verb, struct arena *a)
{
    if (!ad->automatic)
        return arena_printf(a, "%s%s", verb, ad->borrowed ? " on borrowed capacity" : "");
    return arena_printf(a, "%s as %s work (automatic class)%s", verb,
                        ad->pclass == SCHED_P1 ? "owned" : "opportunistic",
                        ad->borrowed ? " on borrowed capacity" : "");
}

static int persist_admit(struct engine *e, const struct sched_admit *ad, int64_t now,
                         struct arena *a, struct row *ret_row, struct error_info *ei)
{
    const struct resource_def *d = &model_workloads;
    const struct sched_assign *as = &e->dec.assigns[ad->first_assign];
    struct row w;
    struct buf where;
    const struct node_info *ni = FIND_BY_ID(e->nodes, e->n_nodes, as[0].node_id);
    int rc = store_get(e->db, d, ad->workload_id, a, &w, ei);

    if (rc < 0)
        return rc;
    row_set_str(&w, a, F_WORKLOADS_STATE, "admitted");
    row_set_str(&w, a, F_WORKLOADS_REASON, running_text(ad, "starting", a));
    row_set_int(&w, F_WORKLOADS_STARTED_AT, now / 1000);
    row_set_null(&w, F_WORKLOADS_FINISHED_AT);
    row_set_null(&w, F_WORKLOADS_EXIT_CODE);
    if (ni)
        row_set_int(&w, F_WORKLOADS_CLUSTER_ID, ni->cluster_id);
    row_set_int(&w, F_WORKLOADS_UPDATED_AT, now / 1000);
    rc = store_update(e->db, d, ad->workload_id, &w, ei);
    buf_init(&where, 4096);
    for (size_t i = 0; rc >= 0 && i < ad->n_assigns; i++) {
        const struct resource_def *ald = &model_allocations;
        struct row al = model_row_new(ald, a);
        const struct gpu_info *g =
            as[i].gpu_id ? FIND_BY_ID(e->gpus, e->n_gpus, as[i].gpu_id) : NULL;
        const struct node_info *n = FIND_BY_ID(e->nodes, e->n_nodes, as[i].node_id);
        int64_t id;
        row_set_int(&al, F_ALLOCATIONS_WORKLOAD_ID, ad->workload_id);
        row_set_int(&al, F_ALLOCATIONS_PROJECT_ID, row_int(&w, F_WORKLOADS_PROJECT_ID));
        row_set_int(&al, F_ALLOCATIONS_REPLICA, as[i].replica);
        row_set_int(&al, F_ALLOCATIONS_NODE_ID, as[i].node_id);
        if (g) {
            row_set_int(&al, F_ALLOCATIONS_GPU_ID, g->id);
            row_set_int(&al, F_ALLOCATIONS_GPU_CLASS_ID, g->class_id);
        } else {
            row_set_null(&al, F_ALLOCATIONS_GPU_ID);
            row_set_null(&al, F_ALLOCATIONS_GPU_CLASS_ID);
        }
        row_set_int(&al, F_ALLOCATIONS_MILLI, as[i].milli);
        row_set_str(&al, a, F_ALLOCATIONS_PRIORITY_CLASS, engine__class_text(ad->pclass));
        row_set_int(&al, F_ALLOCATIONS_BORROWED, ad->borrowed);
        row_set_int(&al, F_ALLOCATIONS_STARTED_MS, now);
        row_set_null(&al, F_ALLOCATIONS_ENDED_MS);
        row_set_str(&al, a, F_ALLOCATIONS_END_REASON, "");
        rc = store_insert(e->db, ald, &al, &id, ei);
        if (where.len < 3000)
            buf_printf(&where, "%s%s/%d", i ? ", " : "", n ? n->name : "?", g ? g->index : -1);
    }
    if (rc >= 0)
        rc = engine__add_event(
            e, a, ad->workload_id, row_int(&w, F_WORKLOADS_PROJECT_ID), now, "admitted",
            arena_printf(a, "admitted as %s%s%s on %s",
                         ad->pclass == SCHED_P1 ? "owned (P1) work" : "opportunistic (P2) work",
                         auto_why(e, ad, a), ad->borrowed ? ", on borrowed capacity" : "",
                         where.data ? where.data : "cpu"),
            ei);
    buf_release(&where);
    *ret_row = w;
    return rc;
}

static int persist_preemption(struct engine *e, const struct sched_preemption *pe, struct arena *a,
                              struct error_info *ei)
{
    const struct sched_victim *vs = &e->dec.victims[pe->first_victim];
    const struct sched_quota_snapshot *qs = &e->dec.quotas[pe->first_quota];
    json_t *victims = json_array(), *before = json_array(), *after = json_array();
    struct row pre, led = model_row_new(&model_preemptions, a);
    int64_t lost = 0, ledger_id, pre_project;
    char *text;
    int rc = store_get(e->db, &model_workloads, pe->preemptor_id, a, &pre, ei);

    if (rc < 0)
        goto out;
    pre_project = row_int(&pre, F_WORKLOADS_PROJECT_ID);
    for (size_t i = 0; i < pe->n_victims; i++) {
        json_array_append_new(
            victims, json_pack("{s:I,s:I,s:I,s:I}", "workload_id", (json_int_t)vs[i].workload_id,
                               "project_id", (json_int_t)vs[i].project_id, "gpu_milli",
                               (json_int_t)vs[i].gpu_milli, "lost_ms", (json_int_t)vs[i].lost_ms));
        lost += vs[i].gpu_milli * vs[i].lost_ms / 1000;
    }
    for (size_t i = 0; i < pe->n_quotas; i++) {
        int64_t freed = 0;
        for (size_t k = 0; k < pe->n_victims; k++) {
            if (vs[k].project_id == qs[i].project_id)
                freed += vs[k].gpu_milli;
        }
        json_array_append_new(
            before, json_pack("{s:I,s:I,s:I,s:I}", "project_id", (json_int_t)qs[i].project_id,
                              "used", (json_int_t)qs[i].used, "guaranteed",
                              (json_int_t)qs[i].guaranteed, "limit", (json_int_t)qs[i].limit));
        json_array_append_new(
            after, json_pack("{s:I,s:I,s:I,s:I}", "project_id", (json_int_t)qs[i].project_id,
                             "used", (json_int_t)(qs[i].used - freed), "guaranteed",
                             (json_int_t)qs[i].guaranteed, "limit", (json_int_t)qs[i].limit));
    }
    row_set_int(&led, F_PREEMPTIONS_PREEMPTOR_ID, pe->preemptor_id);
    row_set_int(&led, F_PREEMPTIONS_PROJECT_ID, pre_project);
    row_set_str(&led, a, F_PREEMPTIONS_RULE, "reclaim");
    row_set_int(&led, F_PREEMPTIONS_GPU_CLASS_ID, qs[0].class_id);
    text = json_dumps(victims, JSON_COMPACT);
    row_set_str(&led, a, F_PREEMPTIONS_VICTIMS, text);
    free(text);
    text = json_dumps(before, JSON_COMPACT);
    row_set_str(&led, a, F_PREEMPTIONS_QUOTA_BEFORE, text);
    free(text);
    text = json_dumps(after, JSON_COMPACT);
    row_set_str(&led, a, F_PREEMPTIONS_QUOTA_AFTER, text);
    free(text);
    row_set_int(&led, F_PREEMPTIONS_GPU_MILLI, pe->gpu_milli_reclaimed);
    row_set_int(&led, F_PREEMPTIONS_GRACE_MS, pe->grace_ms);
    row_set_int(&led, F_PREEMPTIONS_DECIDED_MS, pe->decided_ms);
    row_set_null(&led, F_PREEMPTIONS_RELEASED_MS);
    row_set_null(&led, F_PREEMPTIONS_RECLAIM_MS);
    row_set_null(&led, F_PREEMPTIONS_FIRST_TRY_MS);
    row_set_int(&led, F_PREEMPTIONS_GPU_MS_LOST, lost);
    rc = store_insert(e->db, &model_preemptions, &led, &ledger_id, ei);
    if (rc >= 0)
        rc = engine__add_event(
            e, a, pe->preemptor_id, pre_project, pe->decided_ms, "reclaiming",
            arena_printf(a,
                         "reclaiming %s %s GPU(s) of its guarantee: preempting %zu "
                         "workload(s) (ledger entry %" PRId64 ")",
                         gpus_text(a, pe->gpu_milli_reclaimed),
                         engine__class_name(e, qs[0].class_id), pe->n_victims, ledger_id),
            ei);
    for (size_t i = 0; rc >= 0 && i < pe->n_victims; i++) {
        /* The victim's readers may not see the preemptor's tenant (the reason and the event
         * are stored once, for all of them): only work of its own project is named. */
        const char *taker =
            vs[i].project_id == pre_project
                ? arena_printf(a, "project %s (workload %" PRId64 ")",
                               engine__project_name(e, pre_project), pe->preemptor_id)
                : "the owner of the GPUs it borrowed";
        struct row v;
        rc = store_get(e->db, &model_workloads, vs[i].workload_id, a, &v, ei);
        if (rc < 0)
            break;
        row_set_str(&v, a, F_WORKLOADS_STATE, "preempting");
        row_set_str(&v, a, F_WORKLOADS_REASON,
                    arena_printf(a, "preempted for owned work of %s (ledger entry %" PRId64 ")",
                                 taker, ledger_id));
        row_set_int(&v, F_WORKLOADS_UPDATED_AT, pe->decided_ms / 1000);
        rc = store_update(e->db, &model_workloads, vs[i].workload_id, &v, ei);
        if (rc >= 0)
            rc = engine__add_event(e, a, vs[i].workload_id, vs[i].project_id, pe->decided_ms,
                                   "preempting",
                                   arena_printf(a,
                                                "preempted (rule reclaim, ledger entry %" PRId64
                                                "): %s takes back its guarantee; stopping within "
                                                "%" PRId64 " s",
                                                ledger_id, taker, pe->grace_ms / 1000),
                                   ei);
        ALLOC_GROW(e->victims, e->n_victims + 1, e->cap_victims);
        e->victims[e->n_victims++] =
            (struct pending_victim){vs[i].workload_id, ledger_id, pe->preemptor_id};
    }
out:
    json_decref(victims);
    json_decref(before);
    json_decref(after);
    return rc;
}

/* Admitted work its backend has started is running: one transaction for the round. */
static int mark_running(struct engine *e, struct row *rows, const bool *started, int64_t now,
                        struct arena *a, struct error_info *ei)
{
    const struct resource_def *d = &model_workloads;
    bool any = false;
    int rc;
    for (size_t i = 0; i < e->dec.n_admits && !any; i++)
        any = started[i];
    if (!any)
        return 0;
    rc = store_begin(e->db, ei);
    for (size_t i = 0; rc >= 0 && i < e->dec.n_admits; i++) {
        struct row *w = &rows[i];
        if (!started[i])
            continue;
        row_set_str(w, a, F_WORKLOADS_STATE, "running");
        row_set_str(w, a, F_WORKLOADS_REASON, running_text(&e->dec.admits[i], "running", a));
        rc = store_update(e->db, d, model_row_id(w), w, ei);
        if (rc >= 0)
            rc = engine__add_event(e, a, model_row_id(w), row_int(w, F_WORKLOADS_PROJECT_ID), now,
                                   "running", "started by its backend", ei);
    }
    if (rc >= 0)
        rc = store_commit(e->db, ei);
    if (rc < 0)
        store_rollback(e->db);
    return rc;
}

/* Launches the committed admissions (rows: their workload rows), then records what started. */
static void launch_admitted(struct engine *e, struct row *rows, int64_t now, struct arena *a,
                            struct error_info *ei)
{
    struct backend_event *failed = arena_calloc(a, e->dec.n_admits + 1, sizeof(*failed));
    bool *started = arena_calloc(a, e->dec.n_admits + 1, sizeof(bool));
    size_t n_failed = 0;
    int rc;

    for (size_t i = 0; i < e->dec.n_admits; i++) {
        const struct sched_admit *ad = &e->dec.admits[i];
        const struct node_info *ni =
            FIND_BY_ID(e->nodes, e->n_nodes, e->dec.assigns[ad->first_assign].node_id);
        struct backend *b = ni ? engine__backend_of(e, ni->cluster_id) : NULL;
        struct backend_launch l;
        struct error_info lei = {0};
        engine__launch_of(e, &rows[i], &e->dec.assigns[ad->first_assign], ad->n_assigns, a, &l);
        if (!b || b->ops->launch(b, &l, now, &lei) < 0) {
            char id[24];
            snprintf(id, sizeof(id), "%" PRId64, ad->workload_id);
            log_error("could not launch workload", "workload", id, "error",
                      lei.code ? lei.message : "no backend for its cluster");
            failed[n_failed++] = (struct backend_event){.workload_id = ad->workload_id,
                                                        .at_ms = now,
                                                        .how = BACKEND_NOT_STARTED,
                                                        .exit_code = -1};
        } else {
            started[i] = true;
        }
    }
    rc = mark_running(e, rows, started, now, a, ei);
    if (n_failed)
        engine__handle_ends(e, failed, n_failed);
    if (rc < 0)
        log_error("could not record started workloads as running", "error", ei->message);
}

/*
 * The pass just run was the first try of a reclaim whose victims had all
 * released (the scheduler gave its preemptor that try first): recorded in
 * its ledger entry, so that a restart from here on restores it as plain
 * queued work, as the scheduler now holds it.
 */
static int record_first_try(struct engine *e, int64_t ledger, int64_t now, struct arena *a,
                            struct error_info *ei)
{
    struct row led;
    int rc = store_get(e->db, &model_preemptions, ledger, a, &led, ei);
    if (rc < 0 || !row_is_null(&led, F_PREEMPTIONS_FIRST_TRY_MS))
        return rc;
    row_set_int(&led, F_PREEMPTIONS_FIRST_TRY_MS, now);
    return store_update(e->db, &model_preemptions, ledger, &led, ei);
}

/* Writes one pass's decisions in one transaction, then acts on them. */
int engine__apply_decisions(struct engine *e, int64_t now, struct error_info *ei)
{
    struct arena a;
    struct row *rows;
    size_t n_victims_before = e->n_victims;
    /*
     * Every reclaim made ready before the pass had its first try in it
     * (ends recorded from here on, after the commit, wait for the next).
     */
    size_t n_tried = e->n_reclaims_ready;
    int rc;

    if (e->dec.n_admits == 0 && e->dec.n_preemptions == 0 && n_tried == 0)
        return 0;
    arena_init(&a);
    rows = arena_calloc(&a, e->dec.n_admits + 1, sizeof(*rows));
    rc = store_begin(e->db, ei);
    for (size_t i = 0; rc >= 0 && i < e->dec.n_admits; i++)
        rc = persist_admit(e, &e->dec.admits[i], now, &a, &rows[i], ei);
    for (size_t i = 0; rc >= 0 && i < e->dec.n_preemptions; i++)
        rc = persist_preemption(e, &e->dec.preemptions[i], &a, ei);
    for (size_t i = 0; rc >= 0 && i < n_tried; i++)
        rc = record_first_try(e, e->reclaims_ready[i], now, &a, ei);
    if (rc >= 0)
        rc = store_commit(e->db, ei);
    if (rc < 0) {
        store_rollback(e->db);
        e->n_victims = n_victims_before;
        arena_release(&a);
        return rc;
    }
    if (n_tried > 0) {
        e->n_reclaims_ready -= n_tried;
        memmove(e->reclaims_ready, e->reclaims_ready + n_tried,
                e->n_reclaims_ready * sizeof(*e->reclaims_ready));
    }
    /* Committed: count it, then act, then record what the backends did with it. */
    for (size_t i = 0; i < e->dec.n_admits; i++) {
        if (row_int(&rows[i], F_WORKLOADS_PREEMPTIONS) == 0)
            metrics_histogram_observe(&e->metrics.queue_wait,
                                      (now - row_int(&rows[i], F_WORKLOADS_SUBMITTED_MS)) * 1000);
    }
    e->metrics.preemptions_reclaim += e->dec.n_preemptions; /* reclaim is the only rule */
    launch_admitted(e, rows, now, &a, ei);
    for (size_t i = 0; i < e->dec.n_preemptions; i++) {
        const struct sched_preemption *pe = &e->dec.preemptions[i];
        for (size_t k = 0; k < pe->n_victims; k++) {
            int64_t vid = e->dec.victims[pe->first_victim + k].workload_id;
            const struct staged *st = engine__staged_behind(e, vid);
            /* Its GPUs go to the preemptor: what its backend queued behind it comes back first. */
            if (st)
                engine__unstage(e, st->id, "the workload it waited for is being preempted", now);
            for (size_t b = 0; b < e->n_backends; b++)
                e->backends[b].b->ops->stop(e->backends[b].b, vid, pe->grace_ms, now);
        }
    }
    arena_release(&a);
    return 0;
}

/* A workload's allocations not yet ended. */
int engine__open_allocations(struct engine *e, int64_t wid, struct arena *a, struct row **ret,
                             size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;
    store_filter_init(&f);
    store_filter_eq_int(&f, F_ALLOCATIONS_WORKLOAD_ID, wid);
    store_filter_eq_null(&f, F_ALLOCATIONS_ENDED_MS);
    return store_list_all(e->db, &model_allocations, &f, a, ret, ret_n, ei);
}
