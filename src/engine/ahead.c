/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ahead.c: queue-ahead, for backends that can start work the moment other
 * work ends (ops->launch_after, used where b->queue_ahead). The why and the
 * rules are below; the lists (struct engine: staged, unstaging, no_stage)
 * are small and walked linearly.
 */
#include "engine/engine-int.h"

#include "base/buf.h"
#include "base/log.h"

struct staged *engine__staged_find(struct engine *e, int64_t id)
{
    for (size_t i = 0; i < e->n_staged; i++) {
        if (e->staged[i].id == id)
            return &e->staged[i];
    }
    return NULL;
}

struct staged *engine__staged_behind(struct engine *e, int64_t after_id)
{
    for (size_t i = 0; i < e->n_staged; i++) {
        if (e->staged[i].after_id == after_id)
            return &e->staged[i];
    }
    return NULL;
}

void engine__staged_remove(struct engine *e, int64_t id)
{
    struct staged *st = engine__staged_find(e, id);
    if (st)
        *st = e->staged[--e->n_staged];
}

struct unstaging *engine__unstaging_find(struct engine *e, int64_t id)
{
    for (size_t i = 0; i < e->n_unstaging; i++) {
        if (e->unstaging[i].id == id)
            return &e->unstaging[i];
    }
    return NULL;
}

/*
 * The running workload at the head of a chain of staged work (id itself
 * when not staged); *ret_depth (may be NULL): how many staged links lead there.
 */
int64_t engine__staged_root(struct engine *e, int64_t id, size_t *ret_depth)
{
    const struct staged *st;
    size_t depth = 0;
    for (; (st = engine__staged_find(e, id)) && depth <= e->n_staged; depth++)
        id = st->after_id;
    if (ret_depth)
        *ret_depth = depth;
    return id;
}

/* Whether the engine holds id out of the scheduler: queued ahead, or being taken back. */
bool engine__held_aside(struct engine *e, int64_t id)
{
    return engine__staged_find(e, id) || engine__unstaging_find(e, id);
}

static bool no_stage(const struct engine *e, int64_t id)
{
    for (size_t i = 0; i < e->n_no_stage; i++) {
        if (e->no_stage[i] == id)
            return true;
    }
    return false;
}

/*
 * How many workloads deep work is queued ahead behind one running workload.
 * One is not enough for short work: the next must be in its backend before
 * the running one ends, and gpuaas learns of that end (and so of who runs
 * now) only at its next poll (Slurm: squeue); two cover that. Each one deeper is a job that a
 * newly submitted, more urgent workload of the same project waits behind.
 */
#define QUEUE_AHEAD_DEPTH 2

/*
 * Why (Slurm, the backend that has it): Slurm starts a batch job at the controller's next
 * scheduling pass, which an idle cluster runs once a second but a job's end triggers at once.
 * gpuaas, the one scheduler, submits work only to free GPUs, i.e. after the
 * end that triggered the pass: each GPU then runs at most one job per
 * second. Where the scheduler's next choice for a running workload's GPUs is
 * certain (sched_successor), that workload is submitted ahead, pinned to the
 * same node and GPU count and waiting for the running one's job
 * (ops->launch_after): the end's own pass starts it. It stays
 * queued here (queued_after names the one it waits for), out of the
 * scheduler's queue; the end hands it the same GPUs (hand_over). A
 * preemption of the one it waits for, a cancel, or an end of its own first
 * takes it back (unstage): its pending job is cancelled and, once the
 * backend reports that, it is queued here again in its original place.
 */

/* Whether work may be queued ahead in b: it can, and its settings say so. */
static bool can_queue_ahead(const struct backend *b)
{
    return b->queue_ahead && b->ops->launch_after && b->ops->followable && b->ops->holds;
}

/* The store's record of a taking back: queued_after cleared, an "unstaged" event. */
static int record_unstage(struct engine *e, int64_t id, const char *why, int64_t now,
                          struct error_info *ei)
{
    const struct resource_def *d = &model_workloads;
    struct arena a;
    struct row w;
    int rc;

    arena_init(&a);
    rc = store_begin(e->db, ei);
    if (rc >= 0)
        rc = store_get(e->db, d, id, &a, &w, ei);
    if (rc >= 0 && !row_is_null(&w, F_WORKLOADS_QUEUED_AFTER)) {
        row_set_null(&w, F_WORKLOADS_QUEUED_AFTER);
        row_set_str(&w, &a, F_WORKLOADS_REASON, "queued");
        row_set_int(&w, F_WORKLOADS_UPDATED_AT, now / 1000);
        rc = store_update(e->db, d, id, &w, ei);
        if (rc >= 0)
            rc = engine__add_event(e, &a, id, row_int(&w, F_WORKLOADS_PROJECT_ID), now, "unstaged",
                                   arena_printf(&a, "taken back from its cluster's queue: %s", why),
                                   ei);
    }
    if (rc >= 0)
        rc = store_commit(e->db, ei);
    if (rc < 0)
        store_rollback(e->db);
    arena_release(&a);
    return rc;
}

/* Takes staged work back from its backend; it is queued here again once the backend says so. */
void engine__unstage(struct engine *e, int64_t id, const char *why, int64_t now)
{
    struct staged *st = engine__staged_find(e, id);
    struct error_info ei = {0};
    struct backend *b;
    char wid[24];

    if (!st)
        return;
    b = st->b;
    engine__staged_remove(e, id);
    /* What waits behind it would start in its place once its job is cancelled: back too. */
    while ((st = engine__staged_behind(e, id)))
        engine__unstage(e, st->id, why, now);
    snprintf(wid, sizeof(wid), "%" PRId64, id);
    if (record_unstage(e, id, why, now, &ei) < 0)
        log_error("could not record work taken back from its cluster's queue", "workload", wid,
                  "error", ei.message);
    b->ops->stop(b, id, 0, now);
    ALLOC_GROW(e->unstaging, e->n_unstaging + 1, e->cap_unstaging);
    e->unstaging[e->n_unstaging++] = (struct unstaging){id, true};
    log_info("work taken back from its cluster's queue", "workload", wid, "why", why);
}

/* The backend reports the end of staged work, or of work being taken back. */
void engine__side_end(struct engine *e, const struct backend_event *ev)
{
    struct unstaging *u = engine__unstaging_find(e, ev->workload_id);
    struct arena a;
    struct row w;
    struct error_info ei = {0};
    bool requeue;

    if (!u && engine__staged_find(e, ev->workload_id)) {
        /* Its job ended before the one it waited for: its backend refused it, or someone cancelled
         * it. */
        const char *why = ev->how == BACKEND_NOT_STARTED ? "its cluster refused it"
                                                         : "its job there ended before it ran";
        if (ev->how == BACKEND_NOT_STARTED) { /* launched normally from now on */
            ALLOC_GROW(e->no_stage, e->n_no_stage + 1, e->cap_no_stage);
            e->no_stage[e->n_no_stage++] = ev->workload_id;
        }
        engine__unstage(e, ev->workload_id, ev->message[0] ? ev->message : why, ev->at_ms);
        u = engine__unstaging_find(e, ev->workload_id);
    }
    if (!u)
        return;
    requeue = u->requeue;
    *u = e->unstaging[--e->n_unstaging];
    if (!requeue)
        return;
    arena_init(&a);
    if (store_get(e->db, &model_workloads, ev->workload_id, &a, &w, &ei) >= 0 &&
        strcmp(row_str(&w, F_WORKLOADS_STATE), "queued") == 0) {
        struct sched_workload_spec sp;
        if (engine__spec_of(e, &w, &sp) == 0)
            sched_submit(e->sched, &sp, ev->at_ms); /* its original place: submitted_ms */
    }
    arena_release(&a);
}

/* Hands backend b queued work `id` to start on the GPUs of running work `after_id` when it ends. */
static void stage(struct engine *e, struct backend *b, int64_t after_id, int64_t id, int64_t now)
{
    const struct resource_def *d = &model_workloads;
    struct sched_assign as[SCHED_MAX_GPUS_PER_NODE];
    struct backend_launch l;
    struct error_info ei = {0};
    const struct node_info *ni;
    struct row w, *held;
    size_t n_held = 0;
    struct arena a;
    struct sched_workload_spec sp;
    char wid[24];
    int rc;

    snprintf(wid, sizeof(wid), "%" PRId64, id);
    arena_init(&a);
    rc = store_get(e->db, d, id, &a, &w, &ei);
    if (rc >= 0)
        rc = engine__spec_of(e, &w, &sp);
    /* The GPUs of the running work at the head of the chain: where it all runs. */
    if (rc >= 0)
        rc = engine__open_allocations(e, engine__staged_root(e, after_id, NULL), &a, &held, &n_held,
                                      &ei);
    if (rc < 0 || n_held == 0 || n_held > ARRAY_SIZE(as)) {
        arena_release(&a);
        return;
    }
    for (size_t i = 0; i < n_held; i++)
        as[i] = engine__assign_of(&held[i]);
    ni = FIND_BY_ID(e->nodes, e->n_nodes, as[0].node_id);
    if (!ni || !ni->ready) {
        arena_release(&a);
        return; /* its backend would hold it until the node is back */
    }
    engine__launch_of(e, &w, as, n_held, &a, &l);
    /*
     * Recorded before its job is submitted: after a crash in between, the
     * restart adopts it, finds no job by its name and queues it again; the
     * other way round its job would run unrecorded.
     */
    row_set_int(&w, F_WORKLOADS_QUEUED_AFTER, after_id);
    row_set_str(&w, &a, F_WORKLOADS_REASON,
                arena_printf(&a,
                             "queued in %s behind workload %" PRId64 " on %s: starts on its GPUs"
                             " when it ends",
                             engine__title(b), after_id, ni->name));
    row_set_int(&w, F_WORKLOADS_CLUSTER_ID, ni->cluster_id);
    row_set_int(&w, F_WORKLOADS_UPDATED_AT, now / 1000);
    rc = store_begin(e->db, &ei);
    if (rc >= 0)
        rc = store_update(e->db, d, id, &w, &ei);
    if (rc >= 0)
        rc = engine__add_event(e, &a, id, row_int(&w, F_WORKLOADS_PROJECT_ID), now, "staged",
                               row_str(&w, F_WORKLOADS_REASON), &ei);
    if (rc >= 0)
        rc = store_commit(e->db, &ei);
    if (rc < 0) {
        store_rollback(e->db);
        log_error("could not record work queued ahead; it waits here", "workload", wid, "error",
                  ei.message);
    } else if (b->ops->launch_after(b, &l, after_id, now, &ei) < 0) {
        struct error_info undo = {0};
        log_warn("could not queue work ahead in its cluster; it waits here", "workload", wid,
                 "error", ei.message);
        ALLOC_GROW(e->no_stage, e->n_no_stage + 1, e->cap_no_stage);
        e->no_stage[e->n_no_stage++] = id;
        if (record_unstage(e, id, "its cluster did not take it", now, &undo) < 0)
            log_error("could not record work taken back from its cluster's queue", "workload", wid,
                      "error", undo.message);
    } else {
        /* Out of the scheduler's queue from now; the store says where it waits. */
        sched_cancel(e->sched, id, now);
        ALLOC_GROW(e->staged, e->n_staged + 1, e->cap_staged);
        e->staged[e->n_staged++] = (struct staged){id, after_id, b, sp};
    }
    arena_release(&a);
}

/* After a pass: queues ahead in backends the next work for running work's GPUs, where certain. */
void engine__stage_successors(struct engine *e, int64_t now)
{
    bool on = false;

    for (size_t b = 0; b < e->n_backends; b++)
        on |= can_queue_ahead(e->backends[b].b);
    if (!on)
        return;
    /*
     * Another project now waits for that class, or work of its own project
     * that comes first: the scheduler, not the backend's queue, decides.
     */
    for (size_t i = 0; i < e->n_staged;) {
        const struct staged *st = &e->staged[i];
        if (sched_others_wait(e->sched, st->spec.project_id, st->spec.class_id))
            engine__unstage(e, st->id, "other work now waits for this GPU class", now);
        else if (sched_ranked_before(e->sched, &st->spec))
            engine__unstage(e, st->id, "work of its project that comes first now waits", now);
        else
            i++;
    }
    for (size_t b = 0; b < e->n_backends; b++) {
        size_t n;
        if (!can_queue_ahead(e->backends[b].b))
            continue;
        /* Running work, and work already queued ahead (whose job the backend has too): all. */
        while ((n = e->backends[b].b->ops->followable(e->backends[b].b, e->follow, e->cap_follow)) >
               e->cap_follow)
            ALLOC_GROW(e->follow, n, e->cap_follow);
        for (size_t i = 0; i < n; i++) {
            int64_t id = e->follow[i], next;
            const struct staged *st = engine__staged_find(e, id);
            size_t depth;
            if (engine__staged_behind(e, id))
                continue; /* it has its follower */
            engine__staged_root(e, id, &depth);
            if (depth >= QUEUE_AHEAD_DEPTH)
                continue;
            if ((st ? sched_successor_like(e->sched, &st->spec, &next)
                    : sched_successor(e->sched, id, &next)) < 0 ||
                no_stage(e, next))
                continue;
            stage(e, e->backends[b].b, id, next, now);
        }
    }
}

/*
 * Queue-ahead: the workload queued in its backend behind a running one has
 * started there on that one's GPUs as it ended (at): in the caller's
 * transaction it is admitted and running on the same devices from `at`
 * (held: the ended one's allocations, read before they were closed), and
 * act says what to tell the scheduler once committed.
 */
int engine__hand_over(struct engine *e, const struct staged *st, const struct row *held,
                      size_t n_held, int64_t at, struct arena *a, struct end_action *act,
                      struct error_info *ei)
{
    const struct resource_def *d = &model_workloads, *ald = &model_allocations;
    const struct node_info *ni;
    struct row w;
    struct buf where;
    bool borrowed = false;
    const char *pclass;
    int rc;

    if (n_held == 0 || n_held > ARRAY_SIZE(act->gpus))
        return errinfo_set(ei, ERR_INTERNAL, NULL, "workload %" PRId64 " held %zu devices",
                           st->after_id, n_held);
    rc = store_get(e->db, d, st->id, a, &w, ei);
    if (rc < 0)
        return rc;
    act->successor = st->spec;
    /* It runs as the class of the work it follows (sched_successor made sure they agree). */
    pclass = row_str(&held[0], F_ALLOCATIONS_PRIORITY_CLASS);
    act->successor_runs_as = engine__class_of(pclass);
    buf_init(&where, 4096);
    for (size_t i = 0; rc >= 0 && i < n_held; i++) {
        struct row al = model_row_new(ald, a);
        const struct gpu_info *g =
            FIND_BY_ID(e->gpus, e->n_gpus, row_int(&held[i], F_ALLOCATIONS_GPU_ID));
        const struct node_info *n =
            FIND_BY_ID(e->nodes, e->n_nodes, row_int(&held[i], F_ALLOCATIONS_NODE_ID));
        int64_t id;
        row_set_int(&al, F_ALLOCATIONS_WORKLOAD_ID, st->id);
        row_set_int(&al, F_ALLOCATIONS_PROJECT_ID, row_int(&w, F_WORKLOADS_PROJECT_ID));
        row_set_int(&al, F_ALLOCATIONS_REPLICA, row_int(&held[i], F_ALLOCATIONS_REPLICA));
        row_set_int(&al, F_ALLOCATIONS_NODE_ID, row_int(&held[i], F_ALLOCATIONS_NODE_ID));
        row_set_int(&al, F_ALLOCATIONS_GPU_ID, row_int(&held[i], F_ALLOCATIONS_GPU_ID));
        row_set_int(&al, F_ALLOCATIONS_GPU_CLASS_ID, row_int(&held[i], F_ALLOCATIONS_GPU_CLASS_ID));
        row_set_int(&al, F_ALLOCATIONS_MILLI, row_int(&held[i], F_ALLOCATIONS_MILLI));
        row_set_str(&al, a, F_ALLOCATIONS_PRIORITY_CLASS, pclass);
        borrowed |= row_int(&held[i], F_ALLOCATIONS_BORROWED) != 0;
        row_set_int(&al, F_ALLOCATIONS_BORROWED, row_int(&held[i], F_ALLOCATIONS_BORROWED));
        row_set_int(&al, F_ALLOCATIONS_STARTED_MS, at);
        row_set_null(&al, F_ALLOCATIONS_ENDED_MS);
        row_set_str(&al, a, F_ALLOCATIONS_END_REASON, "");
        rc = store_insert(e->db, ald, &al, &id, ei);
        act->gpus[i] = row_int(&held[i], F_ALLOCATIONS_GPU_ID);
        act->milli[i] = (int32_t)row_int(&held[i], F_ALLOCATIONS_MILLI);
        act->replica[i] = (int32_t)row_int(&held[i], F_ALLOCATIONS_REPLICA);
        if (where.len < 3000)
            buf_printf(&where, "%s%s/%d", i ? ", " : "", n ? n->name : "?", g ? g->index : -1);
    }
    ni = FIND_BY_ID(e->nodes, e->n_nodes, row_int(&held[0], F_ALLOCATIONS_NODE_ID));
    row_set_str(&w, a, F_WORKLOADS_STATE, "running");
    row_set_str(&w, a, F_WORKLOADS_REASON, borrowed ? "running on borrowed capacity" : "running");
    row_set_int(&w, F_WORKLOADS_STARTED_AT, at / 1000);
    row_set_null(&w, F_WORKLOADS_FINISHED_AT);
    row_set_null(&w, F_WORKLOADS_EXIT_CODE);
    row_set_null(&w, F_WORKLOADS_QUEUED_AFTER);
    if (ni)
        row_set_int(&w, F_WORKLOADS_CLUSTER_ID, ni->cluster_id);
    row_set_int(&w, F_WORKLOADS_UPDATED_AT, at / 1000);
    if (rc >= 0)
        rc = store_update(e->db, d, st->id, &w, ei);
    if (rc >= 0)
        rc =
            engine__add_event(e, a, st->id, row_int(&w, F_WORKLOADS_PROJECT_ID), at, "admitted",
                              arena_printf(a,
                                           "admitted as %s%s on %s: the GPUs of workload %" PRId64
                                           ", which it waited behind in its cluster's queue",
                                           strcmp(pclass, "owned") == 0 ? "owned (P1) work"
                                                                        : "opportunistic (P2) work",
                                           borrowed ? ", on borrowed capacity" : "",
                                           where.data ? where.data : "?", st->after_id),
                              ei);
    if (rc >= 0)
        rc = engine__add_event(
            e, a, st->id, row_int(&w, F_WORKLOADS_PROJECT_ID), at, "running",
            arena_printf(a, "started by its backend as workload %" PRId64 " ended", st->after_id),
            ei);
    buf_release(&where);
    act->successor_id = st->id;
    act->n_held = n_held;
    return rc;
}

/*
 * Restore of work its backend holds queued behind running work (w's
 * queued_after): staged again behind it, its job adopted after a restart.
 * Should the work it waits for hold nothing any more (its end is recorded
 * together with the hand-over, so only after a failed write or a crash
 * between the two), it is queued here again, with a warning; a job its
 * backend still follows is taken back first (queued again when it ends),
 * one not adopted after a restart is cancelled by the backend's sweep of
 * jobs no workload claims.
 */
const char *engine__restore_staged(struct engine *e, bool adopt, const struct row *w,
                                   const struct row *allocs, size_t n_allocs, int64_t now,
                                   struct arena *a)
{
    int64_t id = model_row_id(w), after = row_int(w, F_WORKLOADS_QUEUED_AFTER);
    int64_t root = engine__staged_root(e, after, NULL); /* restored first: see restore_workloads */
    struct sched_assign as[SCHED_MAX_GPUS_PER_NODE];
    const struct node_info *ni = NULL;
    struct backend *b = NULL;
    struct sched_workload_spec sp;
    size_t k = 0;

    for (size_t j = 0; j < n_allocs && k < ARRAY_SIZE(as); j++) {
        if (row_int(&allocs[j], F_ALLOCATIONS_WORKLOAD_ID) != root)
            continue;
        as[k++] = engine__assign_of(&allocs[j]);
    }
    if (k > 0)
        ni = FIND_BY_ID(e->nodes, e->n_nodes, as[0].node_id);
    if (ni)
        b = engine__backend_of(e, ni->cluster_id);
    if (!b || !b->ops->launch_after) {
        struct backend *own = engine__backend_of(e, row_int(w, F_WORKLOADS_CLUSTER_ID));
        char wid[24];
        snprintf(wid, sizeof(wid), "%" PRId64, id);
        log_warn("work queued ahead behind work that holds nothing: queued here again", "workload",
                 wid);
        record_unstage(e, id, "the workload it waited for holds no GPUs", now,
                       &(struct error_info){0});
        if (!adopt && own && own->ops->holds && own->ops->holds(own, id)) {
            own->ops->stop(own, id, 0, now);
            ALLOC_GROW(e->unstaging, e->n_unstaging + 1, e->cap_unstaging);
            e->unstaging[e->n_unstaging++] = (struct unstaging){id, true};
        } else if (engine__spec_of(e, w, &sp) == 0) {
            sched_submit(e->sched, &sp, now);
        }
        return NULL;
    }
    if (adopt) {
        struct backend_launch l;
        struct error_info ei = {0};
        engine__launch_of(e, w, as, k, a, &l);
        b->ops->adopt(b, &l, now, now, &ei);
    }
    if (engine__spec_of(e, w, &sp) < 0)
        memset(&sp, 0, sizeof(sp));
    ALLOC_GROW(e->staged, e->n_staged + 1, e->cap_staged);
    e->staged[e->n_staged++] = (struct staged){id, after, b, sp};
    /*
     * Its backend would never start it on a node drained or down, nor could it be
     * recorded running: taken back by the caller once every chain is back,
     * so that what waits behind it goes too.
     */
    if (!ni->ready || sp.id == 0)
        return !ni->ready ? "its node is not ready" : "its flavor is gone";
    return NULL;
}
