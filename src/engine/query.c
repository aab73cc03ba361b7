/* SPDX-License-Identifier: Apache-2.0 */
/*
 * query.c: the engine's read side, for API threads (under the engine's
 * lock): why queued work waits and where it stands, capacity against
 * guarantees, and the engine's part of /metrics.
 */
#include "engine/engine-int.h"

#include <math.h>

#include "base/buf.h"
#include "base/timeutil.h"

const char *const engine__outcomes[N_OUTCOMES] = {"succeeded", "failed", "cancelled", "preempted"};

int engine_pending(struct engine *e, int64_t workload_id, struct engine_pending *ret)
{
    struct sched_workload_info info;
    int rc;
    const struct staged *st;
    char ahead[160];
    memset(ret, 0, sizeof(*ret));
    pthread_mutex_lock(&e->lock);
    if ((st = engine__staged_find(e, workload_id))) {
        size_t depth;
        engine__staged_root(e, workload_id, &depth);
        ret->queued = true;
        /* next on those GPUs (or after the ones before it), ahead of the scheduler's queue */
        ret->position = (int)depth;
        snprintf(ret->reason, sizeof(ret->reason),
                 "queued in %s behind workload %" PRId64 ": starts on its GPUs when it ends",
                 engine__title(st->b), st->after_id);
        pthread_mutex_unlock(&e->lock);
        return 0;
    }
    if (engine__unstaging_find(e, workload_id)) {
        ret->queued = true; /* no place yet: it has none until its backend gives it back */
        snprintf(ret->reason, sizeof(ret->reason),
                 "being taken back from its cluster's queue: queued here again once it is");
        pthread_mutex_unlock(&e->lock);
        return 0;
    }
    rc = sched_workload_info(e->sched, workload_id, &info);
    if (rc == 0 && info.state == SCHED_QUEUED) {
        ret->queued = true;
        ret->position = info.queue_position;
        snprintf(ahead, sizeof(ahead), "project %s",
                 engine__project_name(e, info.reason.ahead_project_id));
        sched_reason_format_named(&info.reason, engine__class_name(e, info.reason.class_id), ahead,
                                  time_now_ms(), ret->reason, sizeof(ret->reason));
        /* The same without the other project's name, for callers who may not see it. */
        if (info.reason.code == SCHED_WAIT_CAPACITY)
            ret->ahead_project_id = info.reason.ahead_project_id; /* other_id means other things */
        if (ret->ahead_project_id)
            sched_reason_format_named(&info.reason, engine__class_name(e, info.reason.class_id),
                                      "a project of another tenant", time_now_ms(),
                                      ret->reason_anon, sizeof(ret->reason_anon));
        ret->never = info.reason.code == SCHED_WAIT_NO_NODES;
        if (ret->never || info.reason.code == SCHED_WAIT_CAPACITY)
            ret->n_closed_pools =
                sched_closed_pools_with_room(e->sched, workload_id, !ret->never, ret->closed_pools,
                                             ARRAY_SIZE(ret->closed_pools));
    }
    pthread_mutex_unlock(&e->lock);
    return rc < 0 ? ERR_NOT_FOUND : 0;
}

size_t engine_capacity(struct engine *e, struct arena *a, struct engine_capacity **ret)
{
    struct engine_capacity *out;
    size_t n = 0;
    pthread_mutex_lock(&e->lock);
    out = arena_calloc(a, e->n_classes + 1, sizeof(*out));
    for (size_t i = 0; i < e->n_classes; i++) {
        struct engine_capacity *c = &out[n++];
        c->class_id = e->classes[i].id;
        sched_class_capacity(e->sched, c->class_id, &c->capacity, &c->free);
        c->guaranteed = sched_class_guaranteed(e->sched, c->class_id);
    }
    pthread_mutex_unlock(&e->lock);
    *ret = out;
    return n;
}

int engine_quota_usage(struct engine *e, int64_t project_id, int64_t class_id,
                       struct engine_quota_usage *ret)
{
    struct sched_usage u;
    double past = 0;
    int rc;
    pthread_mutex_lock(&e->lock);
    rc = sched_project_usage(e->sched, project_id, class_id, &u);
    if (rc >= 0)
        rc = sched_past_usage(e->sched, project_id, class_id, time_now_ms(), &past);
    pthread_mutex_unlock(&e->lock);
    if (rc < 0)
        return ERR_NOT_FOUND;
    *ret = (struct engine_quota_usage){u.guaranteed, u.p1, u.p2, false, 0, 0};
    if (e->opt.fair_share == SCHED_SHARE_DECAYED) {
        /* milli-GPU ms to milli-GPU hours; ln 2 / H makes it the average held (share.c) */
        ret->decayed = true;
        ret->decayed_milli_hours = llround(past / 3.6e6);
        ret->decayed_average_milli = llround(past * M_LN2 / (double)e->opt.fair_share_half_life_ms);
    }
    return 0;
}

int engine_metrics_write(struct engine *e, struct buf *b)
{
    static const char *const states[] = {NULL, "queued", "running", "preempting"};
    int64_t counts[SCHED_PREEMPTING + 1];
    int rc = 0;

    pthread_mutex_lock(&e->lock);
    sched_count_states(e->sched, counts);
    counts[SCHED_QUEUED] += (int64_t)e->n_staged;
    rc |= metrics_header(b, "gpuaas_workloads", "gauge",
                         "Workloads the scheduler holds, by state (admitted work counts as "
                         "running; queued, work queued ahead in a cluster's own queue).");
    for (int st = SCHED_QUEUED; st <= SCHED_PREEMPTING; st++)
        rc |= metrics_sample(b, "gpuaas_workloads", (const char *[]){"state", states[st], NULL},
                             counts[st]);
    rc |= metrics_header(b, "gpuaas_workload_outcomes_total", "counter",
                         "Runs that ended since the daemon started, by outcome.");
    for (size_t i = 0; i < N_OUTCOMES; i++)
        rc |= metrics_sample(b, "gpuaas_workload_outcomes_total",
                             (const char *[]){"outcome", engine__outcomes[i], NULL},
                             (int64_t)e->metrics.outcomes[i]);
    rc |= metrics_header(b, "gpuaas_queue_wait_seconds", "histogram",
                         "Time from submit to first admission.");
    rc |= metrics_histogram_write(b, "gpuaas_queue_wait_seconds", NULL, &e->metrics.queue_wait);
    rc |= metrics_header(b, "gpuaas_preemptions_total", "counter",
                         "Preemption decisions since the daemon started, by rule.");
    rc |= metrics_sample(b, "gpuaas_preemptions_total", (const char *[]){"rule", "reclaim", NULL},
                         (int64_t)e->metrics.preemptions_reclaim);
    rc |= metrics_header(b, "gpuaas_reclaim_latency_seconds", "histogram",
                         "Time from a reclaim decision until its last victim released the GPUs.");
    rc |= metrics_histogram_write(b, "gpuaas_reclaim_latency_seconds", NULL, &e->metrics.reclaim);

    /* Quotas: what each project holds of each class against its guarantee and limit. */
    rc |= metrics_header(b, "gpuaas_quota_gpus", "gauge",
                         "Per project and GPU class, in GPUs: guaranteed (owned capacity), "
                         "limit (-1: none), used (P1 + P2) and borrowed (used beyond the "
                         "guarantee).");
    for (size_t p = 0; p < e->n_projects; p++) {
        for (size_t c = 0; c < e->n_classes; c++) {
            struct sched_usage u;
            char prj[24];
            int64_t used;
            if (sched_project_usage(e->sched, e->projects[p].id, e->classes[c].id, &u) < 0 ||
                (u.guaranteed == 0 && u.p1 + u.p2 == 0 && u.limit < 0))
                continue;
            snprintf(prj, sizeof(prj), "%" PRId64, e->projects[p].id);
            used = u.p1 + u.p2;
            const char *l_g[] = {"project", e->projects[p].name, "project_id",
                                 prj,       "gpu_class",         e->classes[c].name,
                                 "kind",    "guaranteed",        NULL};
            rc |= metrics_sample_milli(b, "gpuaas_quota_gpus", l_g, u.guaranteed);
            l_g[7] = "limit";
            rc |= metrics_sample_milli(b, "gpuaas_quota_gpus", l_g, u.limit < 0 ? -1000 : u.limit);
            l_g[7] = "used";
            rc |= metrics_sample_milli(b, "gpuaas_quota_gpus", l_g, used);
            l_g[7] = "borrowed";
            rc |= metrics_sample_milli(b, "gpuaas_quota_gpus", l_g,
                                       used > u.guaranteed ? used - u.guaranteed : 0);
        }
    }
    pthread_mutex_unlock(&e->lock);
    return rc ? ERR_TOO_LARGE : 0;
}
