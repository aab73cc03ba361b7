/* SPDX-License-Identifier: Apache-2.0 */
/*
 * share.c: the order in which projects take turns at borrowed capacity
 * (sched.h, enum sched_fair_share), and the decayed usage the decayed rule
 * adds to what a project borrows now.
 *
 * Decayed usage is kept per project and class as one number, the P2 usage
 * decayed to a time (quota.used at quota.used_at), and brought forward only
 * when the project's P2 holding in the class changes (sched__charge) or
 * when a key is wanted. Between two such times the holding r is constant, so
 * the exact value is
 *
 *   used(t) = used(t0) * 2^(-(t - t0)/H) + r * H/ln 2 * (1 - 2^(-(t - t0)/H))
 *
 * No pass walks the running work, and with the current rule none of this
 * runs. A project that held r for ever tends to r * H/ln 2, so
 * used * ln 2/H reads as the GPUs held on average over about the last H:
 * that is what the key adds to the borrowed amount, in the same units.
 */
#include "base/common.h"

#include <math.h>

#include "sched/sched-int.h"

static double half_life(const struct sched *s)
{
    return (double)s->cfg.half_life_ms;
}

/* 1 - 2^(-dt/H) without the cancellation of small steps (expm1). */
static double decay_gone(const struct sched *s, int64_t dt)
{
    return -expm1(-(double)dt * M_LN2 / half_life(s));
}

/* q's usage at t >= q->used_at, counting its current P2 holding up to t. */
static double used_at(const struct sched *s, const struct quota *q, int64_t t)
{
    double gone;
    if (q->used_at == 0 || t <= q->used_at)
        return q->used;
    gone = decay_gone(s, t - q->used_at);
    return q->used * (1 - gone) + (double)q->p2 * half_life(s) / M_LN2 * gone;
}

void share__advance(const struct sched *s, struct quota *q, int64_t t)
{
    if (s->cfg.fair_share != SCHED_SHARE_DECAYED || t <= 0)
        return;
    /*
     * Before the core knew any time, nothing is counted: what restored work
     * used until now is the caller's to add (sched_add_usage).
     */
    if (q->used_at != 0 && t > q->used_at)
        q->used = used_at(s, q, t);
    if (t > q->used_at)
        q->used_at = t;
}

void share__charge(const struct sched *s, struct quota *q, int64_t delta, int64_t at_ms)
{
    share__advance(s, q, s->clock_ms);
    if (s->cfg.fair_share != SCHED_SHARE_DECAYED || q->used_at == 0 || at_ms >= q->used_at)
        return;
    /* delta held over [at_ms, used_at), seen at used_at (sched_add_usage's formula) */
    q->used += (double)delta * half_life(s) / M_LN2 * decay_gone(s, q->used_at - at_ms);
    if (q->used < 0)
        q->used = 0; /* rounding only: never less than nothing */
}

double share__key(const struct sched *s, const struct project *p, int64_t now)
{
    double most = 0;
    if (s->cfg.fair_share != SCHED_SHARE_DECAYED) {
        /* The current rule: borrowed now only (a loop of its own, as cheap as it was). */
        for (int32_t i = 0; i < p->n_quotas; i++) {
            const struct quota *q = &p->quotas[i];
            int64_t cap = s->classes[q->cls].capacity;
            int64_t borrowed = q->p1 + q->p2 - sched__guaranteed(s, p, q);
            if (cap > 0 && borrowed > 0 && (double)borrowed / (double)cap > most)
                most = (double)borrowed / (double)cap;
        }
        return most / p->weight;
    }
    for (int32_t i = 0; i < p->n_quotas; i++) {
        const struct quota *q = &p->quotas[i];
        int64_t cap = s->classes[q->cls].capacity;
        int64_t borrowed = q->p1 + q->p2 - sched__guaranteed(s, p, q);
        double amount =
            (borrowed > 0 ? (double)borrowed : 0) + used_at(s, q, now) * M_LN2 / half_life(s);
        if (cap > 0 && amount / (double)cap > most)
            most = amount / (double)cap;
    }
    return most / p->weight;
}

void share__took(struct sched *s, int64_t workload_id)
{
    int32_t w = idmap_get(&s->workload_ids, workload_id);
    const struct workload *wl;
    struct cls *c;
    if (w == NONE)
        return;
    wl = &s->wls[w];
    /* Automatic work its turn admitted as owned took no borrowed capacity. */
    if (wl->cls == NONE || wl->runs_as != SCHED_P2)
        return;
    c = &s->classes[wl->cls];
    c->took_project = wl->project;
    c->took_key = s->projects[wl->project].share_key;
    c->took_pass = s->pass_no;
}

void share__waits(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    const struct cls *c;
    if (wl->cls == NONE || wl->runs_as != SCHED_P2 || wl->reason.code != SCHED_WAIT_CAPACITY)
        return;
    c = &s->classes[wl->cls];
    /*
     * Only in the opportunistic phase (took_pass is this pass's from its
     * first turn on; owned work and preemptors went before), and only where
     * the key, not the tie on project ids, put the other project first.
     */
    if (c->took_pass != s->pass_no || c->took_project == wl->project ||
        !(c->took_key < s->projects[wl->project].share_key))
        return;
    wl->reason.ahead_project_id = s->projects[c->took_project].id;
    wl->reason.ahead_period_ms = s->cfg.half_life_ms;
}

/* ---- past usage, from the caller ---- */

/* The quota usage is kept in (made with the decayed rule only); SCHED_ENOENT for unknown ids. */
static int usage_quota(struct sched *s, int64_t project_id, int64_t class_id, struct quota **ret)
{
    int32_t p = idmap_get(&s->project_ids, project_id);
    int32_t c = idmap_get(&s->class_ids, class_id);
    if (p == NONE || c == NONE)
        return SCHED_ENOENT;
    *ret = s->cfg.fair_share == SCHED_SHARE_DECAYED ? sched__quota(&s->projects[p], c, true) : NULL;
    return 0;
}

int sched_add_usage(struct sched *s, int64_t project_id, int64_t class_id, int64_t milli,
                    int64_t from_ms, int64_t to_ms)
{
    struct quota *q;
    int rc;
    if (milli < 0 || from_ms > to_ms || from_ms < 0)
        return SCHED_EINVAL;
    if ((rc = usage_quota(s, project_id, class_id, &q)) < 0 || !q)
        return rc;
    share__tick(s, to_ms);
    share__advance(s, q, s->clock_ms);
    /*
     * Held from a to b, seen at T = used_at >= b:
     * r * H/ln 2 * (2^(-(T-b)/H) - 2^(-(T-a)/H)) = r * H/ln 2 * 2^(-(T-b)/H) * (1 - 2^(-(b-a)/H)).
     */
    q->used += (double)milli * half_life(s) / M_LN2 * (1 - decay_gone(s, q->used_at - to_ms)) *
               decay_gone(s, to_ms - from_ms);
    return 0;
}

int sched_add_decayed_usage(struct sched *s, int64_t project_id, int64_t class_id, double amount,
                            int64_t at_ms)
{
    struct quota *q;
    int rc;
    if (!(amount >= 0) || at_ms < 0)
        return SCHED_EINVAL;
    if ((rc = usage_quota(s, project_id, class_id, &q)) < 0 || !q)
        return rc;
    share__tick(s, at_ms);
    share__advance(s, q, s->clock_ms);
    q->used += amount * (1 - decay_gone(s, q->used_at - at_ms));
    return 0;
}

int sched_past_usage(const struct sched *s, int64_t project_id, int64_t class_id, int64_t now_ms,
                     double *ret)
{
    int32_t p = idmap_get(&s->project_ids, project_id);
    int32_t c = idmap_get(&s->class_ids, class_id);
    const struct quota *q;
    if (p == NONE || c == NONE)
        return SCHED_ENOENT;
    q = sched__quota(&((struct sched *)s)->projects[p], c, false);
    *ret = q && s->cfg.fair_share == SCHED_SHARE_DECAYED
               ? used_at(s, q, now_ms > s->clock_ms ? now_ms : s->clock_ms)
               : 0;
    return 0;
}
