/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.c: the scheduler, run for real. One thread loops: take new work
 * from the inbox, collect what backends report, run a scheduling pass,
 * write its decisions to the store in one transaction, then act on them
 * (iterate() is the outline; each step is a file, engine-int.h). Everything
 * the engine knows is rebuilt from the store on start (and after
 * configuration changes), since the store holds every transition.
 */
#include "engine/engine-int.h"

#include "base/log.h"
#include "base/timeutil.h"

/* Bounds of the queue wait and reclaim latency histograms on /metrics, in microseconds. */
static const int64_t queue_wait_bounds[] = {
    1000000,    5000000,    15000000,    30000000,    60000000,    300000000,  900000000,
    1800000000, 3600000000, 10800000000, 21600000000, 43200000000, 86400000000};
static const int64_t reclaim_bounds[] = {1000000,  2000000,   5000000,   10000000, 30000000,
                                         60000000, 120000000, 300000000, 600000000};

/* Wakes the engine thread (it may be asleep or busy: either way it goes round again). */
void engine__wake(struct engine *e)
{
    pthread_mutex_lock(&e->wake_lock);
    e->woken = true;
    pthread_cond_signal(&e->wake_cond);
    pthread_mutex_unlock(&e->wake_lock);
}

/* The submissions so far, taken out of the inbox (caller frees); *ret_n of them. */
static int64_t *drain_inbox(struct engine *e, size_t *ret_n)
{
    int64_t *ids;
    pthread_mutex_lock(&e->wake_lock);
    ids = e->inbox;
    *ret_n = e->n_inbox;
    e->inbox = NULL;
    e->n_inbox = e->cap_inbox = 0;
    pthread_mutex_unlock(&e->wake_lock);
    return ids;
}

void engine__take_inbox(struct engine *e, int64_t now)
{
    struct arena a;
    size_t n;
    int64_t *ids = drain_inbox(e, &n);

    arena_init(&a);
    for (size_t i = 0; i < n; i++) {
        struct row w;
        struct error_info ei = {0};
        if (store_get(e->db, &model_workloads, ids[i], &a, &w, &ei) < 0 ||
            strcmp(row_str(&w, F_WORKLOADS_STATE), "queued") != 0)
            continue;
        engine__submit_or_hold(e, &w, now, true, &a);
    }
    free(ids);
    arena_release(&a);
}

void engine__rebuild(struct engine *e, const char *why)
{
    struct error_info ei = {0};
    if (engine__load(e, false, &ei) < 0)
        log_error("could not reload the scheduler from the store", "why", why, "error", ei.message);
}

/* ---- the loop ---- */

/* ---- changes applied in place ---- */

static void apply_project(struct engine *e, const struct row *r)
{
    struct named *n = FIND_BY_ID(e->projects, e->n_projects, model_row_id(r));
    sched_set_project(e->sched, model_row_id(r), row_int(r, F_PROJECTS_ORG_ID),
                      (int)row_int(r, F_PROJECTS_WEIGHT));
    if (n) {
        free(n->name);
        n->name = xstrdup(row_str(r, F_PROJECTS_NAME));
    } else {
        ALLOC_GROW(e->projects, e->n_projects + 1, e->cap_projects);
        e->projects[e->n_projects++] =
            (struct named){model_row_id(r), xstrdup(row_str(r, F_PROJECTS_NAME))};
    }
}

static void apply_quota(struct engine *e, const struct row *r)
{
    const struct value *g = row_get(r, F_QUOTAS_GUARANTEED_MILLI);
    const struct value *l = row_get(r, F_QUOTAS_LIMIT_MILLI);
    sched_set_quota(e->sched, row_int(r, F_QUOTAS_PROJECT_ID), row_int(r, F_QUOTAS_GPU_CLASS_ID),
                    g->null ? -1 : g->i, l->null ? -1 : l->i);
}

static void apply_org_cap(struct engine *e, const struct row *r)
{
    sched_set_org_cap(e->sched, row_int(r, F_ORG_QUOTAS_ORG_ID),
                      row_int(r, F_ORG_QUOTAS_GPU_CLASS_ID), row_int(r, F_ORG_QUOTAS_LIMIT_MILLI));
}

/*
 * The resources whose changes the core takes as they are, each with how; a change to any
 * other (the fleet, pools, ...) rebuilds the core from the store. One table, asked by
 * engine_config_changed and apply_changes alike.
 */
static const struct in_place {
    const struct resource_def *def;
    void (*apply)(struct engine *e, const struct row *r);
} in_place[] = {
    {&model_projects, apply_project},
    {&model_quotas, apply_quota},
    {&model_org_quotas, apply_org_cap},
    {&model_flavors, engine__set_flavor},
};

static const struct in_place *in_place_of(const struct resource_def *def)
{
    for (size_t i = 0; i < ARRAY_SIZE(in_place); i++) {
        if (in_place[i].def == def)
            return &in_place[i];
    }
    return NULL;
}

/*
 * Applies queued changes in place. Deleting a project, quota or flavor can
 * strand what the scheduler holds: those rebuild from the store instead.
 */
static void apply_changes(struct engine *e)
{
    struct change *changes;
    struct arena a;
    size_t n;

    pthread_mutex_lock(&e->wake_lock); /* taken out, as the inbox is: the API never waits */
    changes = e->changes;
    n = e->n_changes;
    a = e->change_arena;
    e->reload |= e->rebuild_asked;
    e->changes = NULL;
    e->n_changes = e->cap_changes = 0;
    e->rebuild_asked = false;
    arena_init(&e->change_arena);
    pthread_mutex_unlock(&e->wake_lock);
    for (size_t i = 0; i < n && !e->reload; i++) {
        if (changes[i].deleted)
            e->reload = true;
        else
            in_place_of(changes[i].def)->apply(e, &changes[i].row);
    }
    free(changes);
    arena_release(&a);
}

/* One round: new work, backend ends, a pass, its decisions. Called with the lock held. */
static void iterate(struct engine *e)
{
    int64_t now = time_now_ms();
    struct backend_event evs[512];
    struct error_info ei = {0};

    apply_changes(e);
    if (e->reload) {
        e->reload = false;
        size_t n;
        free(drain_inbox(e, &n)); /* the reload reads queued work from the store */
        engine__rebuild(e, "configuration changed");
    }
    engine__take_inbox(e, now);
    for (size_t b = 0; b < e->n_backends; b++) {
        size_t n;
        while ((n = e->backends[b].b->ops->poll(e->backends[b].b, now, evs, ARRAY_SIZE(evs))) > 0) {
            for (size_t i = 0; i < n; i++) {
                char id[24];
                if (evs[i].how != BACKEND_NOT_STARTED)
                    continue;
                snprintf(id, sizeof(id), "%" PRId64, evs[i].workload_id);
                log_error("could not launch workload", "workload", id, "error",
                          evs[i].message[0] ? evs[i].message : "its backend could not start it");
            }
            /* starts learnt by this poll come before its ends: the work is still running */
            engine__take_started(e, e->backends[b].b);
            engine__handle_ends(e, evs, n);
            e->blocked_dirty = true; /* what depends on those may go now */
            if (n < ARRAY_SIZE(evs))
                break;
        }
        engine__take_started(e, e->backends[b].b); /* a poll with starts and no ends */
    }
    engine__take_devices(e, now);
    if (e->n_blocked > 0)
        engine__recheck_blocked(e, now);
    e->blocked_dirty = false;
    sched_decisions_reset(&e->dec);
    sched_pass(e->sched, now, &e->dec);
    if (engine__apply_decisions(e, now, &ei) < 0) {
        log_error("could not write scheduling decisions; rebuilding from the store", "error",
                  ei.message);
        engine__rebuild(e, "decisions not written");
    }
    engine__stage_successors(e, now);
    engine__meter_chores(e, now);
    engine__idle_chores(e, now);
    engine__discover(e, now);
    e->iterations++;
    pthread_cond_broadcast(&e->cond);
}

static void *engine_main(void *arg)
{
    struct engine *e = arg;
    pthread_mutex_lock(&e->lock);
    while (!e->stopping) {
        int64_t now = time_now_ms(), due = now + e->opt.tick_ms;
        struct timespec ts;
        bool idle;
        for (size_t b = 0; b < e->n_backends; b++) {
            int64_t t = e->backends[b].b->ops->next_event_ms(e->backends[b].b);
            int64_t look = e->backends[b].b->ops->look_ms;
            /* A backend that learns of ends only by looking is looked at that often. */
            if (look > 0 && now + look < t)
                t = now + look;
            if (t < due)
                due = t;
        }
        idle = !e->reload && due > now; /* a change wakes it (engine_config_changed) */
        pthread_mutex_unlock(&e->lock);
        /* Sleep until due or woken, holding only the wake lock. */
        ts.tv_sec = (time_t)(due / 1000);
        ts.tv_nsec = (long)(due % 1000) * 1000000;
        pthread_mutex_lock(&e->wake_lock);
        while (idle && !e->woken && pthread_cond_timedwait(&e->wake_cond, &e->wake_lock, &ts) == 0)
            ;
        e->woken = false;
        pthread_mutex_unlock(&e->wake_lock);
        pthread_mutex_lock(&e->lock);
        if (!e->stopping)
            iterate(e);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- the public side ---- */

void engine_options_init(struct engine_options *opt)
{
    memset(opt, 0, sizeof(*opt)); /* what is not set below is off */
    opt->reserve_after_ms = 10 * 60 * 1000;
    opt->default_grace_ms = 30 * 1000;
    opt->tick_ms = 1000;
    opt->collector = NULL;
    opt->idle_notify_ms = opt->idle_stop_p2_ms = 0;
    opt->policy = NULL;
    opt->fair_share = 0;
    opt->fair_share_half_life_ms = INT64_C(7) * 24 * 3600 * 1000;
    backend_settings_init(&opt->backends);
}

int engine_start(struct store *store, const struct engine_options *opt, struct engine **ret,
                 struct error_info *ei)
{
    struct engine *e = xcalloc(1, sizeof(*e));
    int rc;

    e->store = store;
    e->opt = *opt;
    metrics_histogram_init(&e->metrics.queue_wait, queue_wait_bounds,
                           ARRAY_SIZE(queue_wait_bounds));
    metrics_histogram_init(&e->metrics.reclaim, reclaim_bounds, ARRAY_SIZE(reclaim_bounds));
    e->db = store_conn_get(store);
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    pthread_mutex_init(&e->wake_lock, NULL);
    pthread_cond_init(&e->wake_cond, NULL);
    arena_init(&e->change_arena);
    sched_decisions_init(&e->dec);
    rc = engine__load(e, true, ei);
    if (rc < 0) {
        engine_stop(e);
        return rc;
    }
    engine__sweep(e);
    if (pthread_create(&e->thread, NULL, engine_main, e) != 0) {
        engine_stop(e);
        return errinfo_set(ei, ERR_INTERNAL, NULL, "could not start the scheduler thread");
    }
    e->started = true;
    *ret = e;
    return 0;
}

void engine_stop(struct engine *e)
{
    if (!e)
        return;
    if (e->started) {
        pthread_mutex_lock(&e->lock);
        e->stopping = true;
        pthread_cond_broadcast(&e->cond);
        pthread_mutex_unlock(&e->lock);
        engine__wake(e);
        pthread_join(e->thread, NULL);
    }
    engine__forget_fleet(e);
    for (size_t i = 0; i < e->n_backends; i++)
        e->backends[i].b->ops->free(e->backends[i].b);
    engine__label_table_release(&e->labels);
    free(e->idle);
    free(e->backends);
    free(e->inbox);
    free(e->cancelling);
    free(e->victims);
    free(e->reclaims_ready);
    free(e->staged);
    free(e->blocked);
    free(e->unstaging);
    free(e->no_stage);
    free(e->follow);
    free(e->changes);
    arena_release(&e->change_arena);
    sched_decisions_release(&e->dec);
    if (e->db)
        store_conn_put(e->db);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->wake_cond);
    pthread_mutex_destroy(&e->wake_lock);
    free(e);
}

void engine_submitted(struct engine *e, int64_t workload_id)
{
    pthread_mutex_lock(&e->wake_lock);
    ALLOC_GROW(e->inbox, e->n_inbox + 1, e->cap_inbox);
    e->inbox[e->n_inbox++] = workload_id;
    e->woken = true;
    pthread_cond_signal(&e->wake_cond);
    pthread_mutex_unlock(&e->wake_lock);
}

void engine_config_changed(struct engine *e, const struct resource_def *def, const struct row *row,
                           bool deleted)
{
    pthread_mutex_lock(&e->wake_lock);
    if (in_place_of(def)) {
        struct change *c;
        ALLOC_GROW(e->changes, e->n_changes + 1, e->cap_changes);
        c = &e->changes[e->n_changes++];
        c->def = def;
        c->deleted = deleted;
        c->row = model_row_new(def, &e->change_arena);
        for (size_t i = 0; i < def->n_fields; i++) {
            c->row.v[i] = row->v[i];
            if (row->v[i].s)
                c->row.v[i].s = arena_strdup(&e->change_arena, row->v[i].s);
        }
    } else {
        e->rebuild_asked = true;
    }
    e->woken = true;
    pthread_cond_signal(&e->wake_cond);
    pthread_mutex_unlock(&e->wake_lock);
}

bool engine_log_path(const struct engine *e, int64_t workload_id, char *out, size_t size)
{
    return backend_log_path(&e->opt.backends, workload_id, out, size);
}

int engine_log_reader(struct engine *e, int64_t workload_id, struct backend_log **ret,
                      struct error_info *ei)
{
    int rc = ERR_NOT_FOUND;

    pthread_mutex_lock(&e->lock); /* the backends are the engine thread's: not while it runs */
    for (size_t i = 0; i < e->n_backends && rc == ERR_NOT_FOUND; i++) {
        struct backend *b = e->backends[i].b;
        if (b->ops->log_reader)
            rc = b->ops->log_reader(b, workload_id, ret, ei);
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

void engine_sync(struct engine *e)
{
    uint64_t target;
    pthread_mutex_lock(&e->lock);
    target = e->iterations + 2;
    engine__wake(e); /* lock order: the engine's, then the wake lock; never the other way */
    while (e->iterations < target && !e->stopping)
        pthread_cond_wait(&e->cond, &e->lock);
    pthread_mutex_unlock(&e->lock);
}
