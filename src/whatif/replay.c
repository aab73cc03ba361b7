/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay.c: one replay of a what-if world in event time, and its figures.
 *
 * The loop takes the next instant that has something to do: a run's end
 * (start + its real run time), a victim's release (decision + grace), an
 * arrival (its recorded submit time), a quota, cap, pool or node change
 * of the record, or one of the core's timers while work waits. At that
 * instant ends and releases are told to the core first, then the record's
 * changes, then arrivals are submitted, then one pass runs, as the engine
 * does after a round of ends, rebuilds and submissions. Admitted work ends after its
 * run time; a victim keeps its GPUs until its grace is over (or its run
 * ends first) and, when it asked to be, is requeued in its original place
 * and later runs its whole run time again (a replay knows no checkpoints).
 *
 * Every interval a workload held GPUs is counted for its project, for the
 * series over the period, and rated by the metering core as a usage
 * record is (one unit per replica, the flavor's price and class
 * multiplier), so cost is what an invoice would say.
 */
#include "base/common.h"

#include "base/err.h"
#include "whatif/whatif-int.h"

enum ev_kind { EV_END = 0, EV_RELEASE = 1, EV_CANCEL = 2 };

struct event {
    int64_t at;
    int64_t seq; /* ties in the order they were made: deterministic */
    int32_t wl;
    int32_t kind;
    int64_t gen;
};

struct heap {
    struct event *v;
    size_t n, cap;
};

struct wl_state {
    int64_t run_start;    /* the current run's start, while running */
    int64_t first_start;  /* 0: none (times are ms since the epoch) */
    int64_t queued_since; /* its arrival, or its last requeue */
    int64_t waited;       /* time queued so far, every requeue's wait included */
    int64_t gen;          /* bumped when its pending end or release no longer applies */
    int32_t run_class;
    int32_t scope; /* index into the run's projects, -1 when out of scope */
    bool running;  /* holding GPUs (running or preempting) */
    bool done;
    bool skipped;   /* refused by the core */
    bool cancelled; /* cancelled while queued, as in the record */
};

struct replay {
    const struct whatif_world *w;
    const struct whatif_change *changes;
    size_t n_changes;
    struct whatif_core core;
    struct wl_state *st;
    struct id_ix {
        int64_t id;
        int32_t i;
    } * ids; /* workload id -> index, by id */
    struct heap h;
    int64_t seq;
    struct meter_rater *rater;
    int64_t rec_id;
    int64_t alloc_all_milli_ms; /* every project's, within the period */
    int64_t cap_now, cap_since; /* GPUs of ready nodes, since when */
    int64_t cap_at_end;         /* those when the period ended, -1 before */
    int64_t queued;             /* workloads the core holds queued */
    int64_t series_sum[WHATIF_SERIES_MAX];
    struct whatif_run *out;
};

static bool ev_before(const struct event *a, const struct event *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void heap_push(struct heap *h, struct event e)
{
    size_t i;
    ALLOC_GROW(h->v, h->n + 1, h->cap);
    i = h->n++;
    h->v[i] = e;
    while (i > 0 && ev_before(&h->v[i], &h->v[(i - 1) / 2])) {
        struct event t = h->v[i];
        h->v[i] = h->v[(i - 1) / 2];
        h->v[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static struct event heap_pop(struct heap *h)
{
    struct event top = h->v[0];
    size_t i = 0;
    h->v[0] = h->v[--h->n];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        struct event t;
        if (l < h->n && ev_before(&h->v[l], &h->v[m]))
            m = l;
        if (r < h->n && ev_before(&h->v[r], &h->v[m]))
            m = r;
        if (m == i)
            break;
        t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
    return top;
}

static int cmp_ix(const void *x, const void *y)
{
    const struct id_ix *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int32_t wl_index(const struct replay *rp, int64_t id)
{
    struct id_ix key = {id, 0};
    const struct id_ix *hit = bsearch(&key, rp->ids, rp->w->n_workloads, sizeof(key), cmp_ix);
    return hit ? hit->i : -1;
}

static int64_t held_milli(const struct whatif_workload *wl)
{
    return wl->spec.class_id ? (int64_t)wl->spec.replicas * wl->spec.gpu_milli : 0;
}

/* Counts [a, b) of a workload's run: its project, the series, the rater. */
static void account(struct replay *rp, int32_t i, int64_t a, int64_t b)
{
    const struct whatif_workload *wl = &rp->w->workloads[i];
    const struct wl_state *st = &rp->st[i];
    struct whatif_run *out = rp->out;
    int64_t milli = held_milli(wl), from = rp->w->from_ms, to = rp->w->to_ms;
    int64_t ca = a < from ? from : a, cb = b > to ? to : b;

    if (b <= a)
        return;
    if (cb > ca)
        rp->alloc_all_milli_ms += milli * (cb - ca);
    if (st->scope < 0)
        return;
    out->projects[st->scope].gpu_milli_ms += milli * (b - a);
    if (cb > ca && milli > 0) {
        out->allocated_milli_ms += milli * (cb - ca);
        for (int64_t k = (ca - from) / out->series_step_ms;
             k < (int64_t)out->n_series && from + k * out->series_step_ms < cb; k++) {
            int64_t s0 = from + k * out->series_step_ms, s1 = s0 + out->series_step_ms;
            int64_t lo = ca > s0 ? ca : s0, hi = cb < s1 ? cb : s1;
            if (hi > lo)
                rp->series_sum[k] += milli * (hi - lo);
        }
    }
    if (rp->rater) {
        struct meter_record rec = {.id = ++rp->rec_id,
                                   .org_id = wl->org_id,
                                   .project_id = wl->spec.project_id,
                                   .flavor_id = wl->flavor_id,
                                   .cls = st->run_class == SCHED_P1 ? METER_OWNED
                                                                    : METER_OPPORTUNISTIC,
                                   .replicas = wl->spec.replicas,
                                   .gpu_milli = 1000, /* one unit per replica, as rate.c */
                                   .started_ms = a,
                                   .ended_ms = b};
        if (rec.org_id <= 0 || rec.flavor_id <= 0 || meter_rate(rp->rater, &rec) < 0)
            out->unpriced++;
    }
}

/* A workload cancelled while queued in the record: still queued here, it leaves. */
static void cancel_at(struct replay *rp, const struct event *ev)
{
    struct wl_state *st = &rp->st[ev->wl];
    const struct whatif_workload *wl = &rp->w->workloads[ev->wl];

    if (st->done || st->running || st->first_start)
        return; /* started here (or gone): it runs its run time */
    if (sched_cancel(rp->core.s, wl->spec.id, ev->at) < 0)
        return;
    st->waited += ev->at - st->queued_since;
    st->done = st->cancelled = true;
    rp->queued--;
}

static void event_at(struct replay *rp, const struct event *ev)
{
    struct wl_state *st = &rp->st[ev->wl];
    const struct whatif_workload *wl = &rp->w->workloads[ev->wl];

    if (ev->kind == EV_CANCEL) {
        cancel_at(rp, ev);
        return;
    }
    if (ev->gen != st->gen || st->done || !st->running)
        return;
    account(rp, ev->wl, st->run_start, ev->at);
    if (ev->kind == EV_RELEASE && st->scope >= 0) /* no checkpoints: all it ran is lost */
        rp->out->projects[st->scope].lost_milli_ms += held_milli(wl) * (ev->at - st->run_start);
    st->running = false;
    st->gen++;
    sched_released(rp->core.s, wl->spec.id, ev->at);
    /* A victim that asked for it is back in its queue; anything else has left. */
    st->done = ev->kind == EV_END || !wl->spec.requeue;
    st->queued_since = ev->at;
    rp->queued += !st->done;
}

static void apply(struct replay *rp, const struct sched_decisions *d, int64_t now)
{
    for (size_t k = 0; k < d->n_admits; k++) {
        int32_t i = wl_index(rp, d->admits[k].workload_id);
        struct wl_state *st;
        if (i < 0)
            continue;
        st = &rp->st[i];
        st->run_start = now;
        st->running = true;
        rp->queued--;
        st->waited += now - st->queued_since;
        if (!st->first_start)
            st->first_start = now;
        st->run_class = d->admits[k].pclass;
        heap_push(&rp->h,
                  (struct event){now + rp->w->workloads[i].run_ms, rp->seq++, i, EV_END, st->gen});
    }
    for (size_t k = 0; k < d->n_preemptions; k++) {
        const struct sched_preemption *p = &d->preemptions[k];
        for (size_t v = p->first_victim; v < p->first_victim + p->n_victims; v++) {
            const struct sched_victim *vi = &d->victims[v];
            int32_t i = wl_index(rp, vi->workload_id);
            if (i < 0)
                continue;
            if (rp->st[i].scope >= 0)
                rp->out->projects[rp->st[i].scope].preemptions++;
            /* its end still applies if it comes first; the release is at the grace's end */
            heap_push(&rp->h, (struct event){p->decided_ms + p->grace_ms, rp->seq++, i, EV_RELEASE,
                                             rp->st[i].gen});
        }
    }
}

struct arrival {
    int64_t at, id;
    int32_t i;
};

static int cmp_arrival(const void *x, const void *y)
{
    const struct arrival *a = x, *b = y;
    if (a->at != b->at)
        return a->at < b->at ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/*
 * Counts the capacity there was from the last change to t, within the
 * period, and notes what it was when the period ended.
 */
static void capacity_until(struct replay *rp, int64_t t)
{
    int64_t lo = rp->cap_since > rp->w->from_ms ? rp->cap_since : rp->w->from_ms;
    int64_t hi = t < rp->w->to_ms ? t : rp->w->to_ms;
    if (hi > lo)
        rp->out->capacity_milli_ms += rp->cap_now * (hi - lo);
    if (t >= rp->w->to_ms && rp->cap_at_end < 0)
        rp->cap_at_end = rp->cap_now;
    rp->cap_since = t;
}

static int run_loop(struct replay *rp)
{
    const struct whatif_world *w = rp->w;
    struct arrival *order = xcalloc(w->n_workloads + 1, sizeof(*order));
    int64_t horizon = w->to_ms + WHATIF_DRAIN_MS, last_pass = INT64_MIN, now = w->from_ms;
    struct sched_decisions d;
    size_t next = 0, next_tc = 0;

    for (size_t i = 0; i < w->n_workloads; i++)
        order[i] =
            (struct arrival){w->workloads[i].spec.submit_ms, w->workloads[i].spec.id, (int32_t)i};
    qsort(order, w->n_workloads, sizeof(*order), cmp_arrival);
    sched_decisions_init(&d);
    for (;;) {
        int64_t t = INT64_MAX, timer = sched_next_timer_ms(rp->core.s);
        if (rp->h.n > 0)
            t = rp->h.v[0].at;
        if (next < w->n_workloads && order[next].at < t)
            t = order[next].at;
        if (next_tc < w->n_recorded && w->recorded[next_tc].at_ms < t)
            t = w->recorded[next_tc].at_ms;
        if (sched_pass_due(rp->core.s)) /* the daemon would pass again at its next tick */
            timer = timer > 0 && timer < last_pass + WHATIF_TICK_MS ? timer
                                                                    : last_pass + WHATIF_TICK_MS;
        if (timer > 0 && rp->queued > 0) { /* timers matter only to waiting work */
            if (timer <= last_pass)
                timer = last_pass + 1;
            if (timer < t)
                t = timer;
        }
        if (t == INT64_MAX || t > horizon)
            break;
        now = t;
        while (rp->h.n > 0 && rp->h.v[0].at <= t) {
            struct event ev = heap_pop(&rp->h);
            event_at(rp, &ev);
        }
        for (; next_tc < w->n_recorded && w->recorded[next_tc].at_ms <= t; next_tc++) {
            if (whatif__recorded_change(&rp->core, &w->recorded[next_tc], rp->changes,
                                        rp->n_changes) < 0)
                continue;
            rp->out->recorded_applied++;
            if (w->recorded[next_tc].kind == WHATIF_REC_NODE) {
                capacity_until(rp, t);
                rp->cap_now = whatif__capacity(&rp->core, w);
            }
        }
        while (next < w->n_workloads && order[next].at <= t) {
            int32_t i = order[next++].i;
            struct sched_workload_spec sp = w->workloads[i].spec;
            rp->st[i].queued_since = t;
            if (rp->core.grace_ms >= 0)
                sp.grace_ms = -1; /* the changed default applies to all */
            rp->queued++;
            if (w->workloads[i].cancel_ms > 0) /* never before its arrival: time runs forward */
                heap_push(&rp->h, (struct event){
                                      w->workloads[i].cancel_ms > t ? w->workloads[i].cancel_ms : t,
                                      rp->seq++, i, EV_CANCEL, 0});
            if (sched_submit(rp->core.s, &sp, t) < 0) {
                rp->queued--;
                rp->st[i].done = rp->st[i].skipped = true;
                rp->out->skipped++;
                if (rp->st[i].scope >= 0)
                    rp->out->projects[rp->st[i].scope].workloads--;
            }
        }
        sched_decisions_reset(&d);
        sched_pass(rp->core.s, t, &d);
        rp->out->passes++;
        last_pass = t;
        apply(rp, &d, t);
    }
    rp->out->end_ms = now;
    sched_decisions_release(&d);
    free(order);
    return 0;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static int cmp_stats(const void *x, const void *y)
{
    const struct whatif_stats *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Nearest rank of a sorted array. */
static int64_t pct(const int64_t *v, size_t n, int p)
{
    size_t k;
    if (n == 0)
        return 0;
    k = ((size_t)p * n + 99) / 100;
    return v[k > 0 ? k - 1 : 0];
}

static void wait_figures(struct whatif_stats *s, int64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_i64);
    s->wait_p50_ms = pct(v, n, 50);
    s->wait_p95_ms = pct(v, n, 95);
    s->wait_max_ms = n ? v[n - 1] : 0;
}

/* Waits, starts and cost per project and over the scope, once the loop is done. */
static int figures(struct replay *rp)
{
    const struct whatif_world *w = rp->w;
    struct whatif_run *out = rp->out;
    int64_t horizon = w->to_ms + WHATIF_DRAIN_MS;
    int64_t *all = xcalloc(w->n_workloads + 1, sizeof(*all));
    int64_t **per = xcalloc(out->n_projects + 1, sizeof(*per));
    size_t *n_per = xcalloc(out->n_projects + 1, sizeof(*n_per)), n_all = 0;
    struct meter_invoices inv;
    int rc = 0;

    for (size_t p = 0; p < out->n_projects; p++)
        per[p] = xcalloc((size_t)out->projects[p].workloads + 1, sizeof(**per));
    for (size_t i = 0; i < w->n_workloads; i++) {
        const struct whatif_workload *wl = &w->workloads[i];
        const struct wl_state *st = &rp->st[i];
        struct whatif_stats *ps;
        int64_t wait;
        out->start_ms[i] = st->first_start;
        if (st->scope < 0 || st->skipped)
            continue;
        if (wl->recorded_start_ms > 0) {
            int64_t diff = st->first_start - wl->recorded_start_ms;
            out->starts_compared++;
            out->starts_same +=
                st->first_start > 0 && diff < WHATIF_SAME_START_MS && diff > -WHATIF_SAME_START_MS;
        }
        ps = &out->projects[st->scope];
        wait = st->waited;
        if (!st->done && !st->running) /* still queued when the replay stopped */
            wait += horizon - st->queued_since;
        if (st->first_start)
            ps->started++;
        else
            ps->not_started++;
        ps->cancelled += st->cancelled;
        per[st->scope][n_per[st->scope]++] = wait;
        all[n_all++] = wait;
    }
    for (size_t p = 0; p < out->n_projects; p++) {
        wait_figures(&out->projects[p], per[p], n_per[p]);
        free(per[p]);
    }
    wait_figures(&out->overall, all, n_all);
    meter_invoices_init(&inv);
    if (rp->rater)
        rc = meter_invoices_build(rp->rater, &inv);
    for (size_t k = 0; rc >= 0 && k < inv.n_lines; k++) {
        struct whatif_stats key = {.id = inv.line_store[k].project_id}, *ps;
        ps = bsearch(&key, out->projects, out->n_projects, sizeof(key), cmp_stats);
        if (ps)
            ps->cost_micros += inv.line_store[k].amount_micro;
    }
    meter_invoices_release(&inv);
    for (size_t p = 0; p < out->n_projects; p++) {
        const struct whatif_stats *ps = &out->projects[p];
        out->overall.workloads += ps->workloads;
        out->overall.started += ps->started;
        out->overall.not_started += ps->not_started;
        out->overall.cancelled += ps->cancelled;
        out->overall.preemptions += ps->preemptions;
        out->overall.lost_milli_ms += ps->lost_milli_ms;
        out->overall.gpu_milli_ms += ps->gpu_milli_ms;
        out->overall.cost_micros += ps->cost_micros;
    }
    free(per);
    free(n_per);
    free(all);
    return rc < 0 ? ERR_TOO_LARGE : 0;
}

static bool in_scope(const struct whatif_options *opt, int64_t project_id)
{
    if (!opt || !opt->scope)
        return true;
    for (size_t i = 0; i < opt->n_scope; i++) {
        if (opt->scope[i] == project_id)
            return true;
    }
    return false;
}

/* The projects in scope with work to replay, by id; each workload's index among them. */
static void scope_projects(struct replay *rp, const struct whatif_options *opt)
{
    const struct whatif_world *w = rp->w;
    struct whatif_run *out = rp->out;
    int64_t *ids = xcalloc(w->n_workloads + 1, sizeof(*ids));
    size_t n = 0;

    for (size_t i = 0; i < w->n_workloads; i++) {
        if (in_scope(opt, w->workloads[i].spec.project_id))
            ids[n++] = w->workloads[i].spec.project_id;
    }
    qsort(ids, n, sizeof(*ids), cmp_i64);
    out->projects = xcalloc(n + 1, sizeof(*out->projects));
    for (size_t i = 0; i < n; i++) {
        if (out->n_projects == 0 || out->projects[out->n_projects - 1].id != ids[i])
            out->projects[out->n_projects++].id = ids[i];
    }
    free(ids);
    for (size_t i = 0; i < w->n_workloads; i++) {
        struct whatif_stats key = {.id = w->workloads[i].spec.project_id};
        const struct whatif_stats *hit =
            in_scope(opt, key.id)
                ? bsearch(&key, out->projects, out->n_projects, sizeof(key), cmp_stats)
                : NULL;
        rp->st[i].scope = hit ? (int32_t)(hit - out->projects) : -1;
        if (hit)
            out->projects[rp->st[i].scope].workloads++;
    }
}

static void series_setup(struct whatif_run *out, int64_t from, int64_t to)
{
    int64_t len = to > from ? to - from : 1;
    int64_t step = (len + WHATIF_SERIES_MAX - 1) / WHATIF_SERIES_MAX;
    step = (step + 59999) / 60000 * 60000; /* whole minutes */
    out->series_step_ms = step;
    out->n_series = (size_t)((len + step - 1) / step);
}

static void series_finish(struct replay *rp)
{
    struct whatif_run *out = rp->out;
    int64_t from = rp->w->from_ms, to = rp->w->to_ms;
    for (size_t k = 0; k < out->n_series; k++) {
        int64_t s0 = from + (int64_t)k * out->series_step_ms, s1 = s0 + out->series_step_ms;
        if (s1 > to)
            s1 = to;
        out->series_milli[k] = s1 > s0 ? rp->series_sum[k] / (s1 - s0) : 0;
    }
    capacity_until(rp, to);
    out->capacity_milli = rp->cap_at_end;
    out->idle_milli_ms = out->capacity_milli_ms - rp->alloc_all_milli_ms;
    if (out->idle_milli_ms < 0)
        out->idle_milli_ms = 0;
}

/* The price list's one currency, "" for none, "*" when several. */
static void currency_of(const struct whatif_world *w, char out[4])
{
    out[0] = 0;
    for (size_t i = 0; i < w->n_prices; i++) {
        if (!out[0])
            snprintf(out, 4, "%s", w->prices[i].currency);
        else if (strcmp(out, w->prices[i].currency) != 0)
            snprintf(out, 4, "*");
    }
}

int whatif_replay(const struct whatif_world *w, const struct whatif_change *changes, size_t n,
                  const struct whatif_options *opt, struct whatif_run *ret, struct error_info *ei)
{
    struct replay rp;
    int rc;

    memset(ret, 0, sizeof(*ret));
    if (w->to_ms <= w->from_ms || w->to_ms - w->from_ms > WHATIF_MAX_PERIOD_MS)
        return errinfo_set(ei, ERR_INVALID, "period", "the period must be 1 ms to 31 days long");
    rc = whatif_check_changes(w, changes, n, ei);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < w->n_workloads; i++) {
        if (w->workloads[i].run_ms < 1 || w->workloads[i].run_ms > WHATIF_MAX_RUN_MS ||
            w->workloads[i].spec.id <= 0 || w->workloads[i].cancel_ms < 0)
            return errinfo_set(ei, ERR_INVALID, "workloads",
                               "workload %" PRId64 ": run time must be 1 ms to 31 days",
                               w->workloads[i].spec.id);
    }
    for (size_t i = 0; i < w->n_recorded; i++) {
        int64_t at = w->recorded[i].at_ms;
        if (at < w->from_ms || (i > 0 && at < w->recorded[i - 1].at_ms))
            return errinfo_set(ei, ERR_INVALID, "recorded",
                               "recorded changes must be in time order, none before the period");
    }
    if (w->n_recorded > WHATIF_MAX_RECORDED)
        return errinfo_set(ei, ERR_TOO_LARGE, "period",
                           "the period holds more than %d quota, cap, pool and node changes",
                           WHATIF_MAX_RECORDED);
    memset(&rp, 0, sizeof(rp));
    rp.w = w;
    rp.changes = changes;
    rp.n_changes = n;
    rp.out = ret;
    rc = whatif__core_new(w, changes, n, &rp.core, ei);
    if (rc < 0)
        return rc;
    if (meter_rater_new(w->prices, w->n_prices, NULL, NULL, &rp.rater) < 0)
        rp.rater = NULL; /* a price list the meter refuses: everything unpriced */
    rp.st = xcalloc(w->n_workloads + 1, sizeof(*rp.st));
    rp.ids = xcalloc(w->n_workloads + 1, sizeof(*rp.ids));
    for (size_t i = 0; i < w->n_workloads; i++)
        rp.ids[i] = (struct id_ix){w->workloads[i].spec.id, (int32_t)i};
    qsort(rp.ids, w->n_workloads, sizeof(*rp.ids), cmp_ix);
    for (size_t i = 1; i < w->n_workloads; i++) {
        if (rp.ids[i].id == rp.ids[i - 1].id) {
            rc = errinfo_set(ei, ERR_INVALID, "workloads", "workload %" PRId64 " appears twice",
                             rp.ids[i].id);
            break;
        }
    }
    ret->start_ms = xcalloc(w->n_workloads + 1, sizeof(*ret->start_ms));
    rp.cap_now = rp.core.capacity_milli;
    rp.cap_since = w->from_ms;
    rp.cap_at_end = -1;
    currency_of(w, ret->currency);
    if (rc >= 0) {
        scope_projects(&rp, opt);
        series_setup(ret, w->from_ms, w->to_ms);
        rc = run_loop(&rp);
    }
    if (rc >= 0) {
        series_finish(&rp);
        rc = figures(&rp);
        if (rc < 0)
            errinfo_set(ei, rc, NULL, "the replay's cost does not fit in 64 bits");
    }
    meter_rater_free(rp.rater);
    whatif__core_release(&rp.core);
    free(rp.st);
    free(rp.ids);
    free(rp.h.v);
    if (rc < 0)
        whatif_run_release(ret);
    return rc;
}

void whatif_run_release(struct whatif_run *r)
{
    if (!r)
        return;
    free(r->projects);
    free(r->start_ms);
    r->projects = NULL;
    r->start_ms = NULL;
    r->n_projects = 0;
}
