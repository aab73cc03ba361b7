/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pass.c: one scheduling pass. Only projects whose situation changed are
 * looked at (new work, freed capacity in a class they wait for, quota
 * changes, timers). Owned (P1) work goes first; then borrowed capacity is
 * shared among opportunistic (P2) work by weighted fair share: the project
 * with the lowest key (share.c: its dominant borrowed share for its weight,
 * with or without its decayed past usage) goes next, one workload at a
 * time. Within a project, work goes in queue order, but up to `lookahead`
 * blocked workloads may be passed by smaller ones behind them; a head
 * blocked longer than reserve_after gets nodes held for it.
 *
 * P1 work within its guarantee that finds no room reclaims it (reclaim.c).
 * P2 work never preempts and P1 work is never a victim, so no two workloads
 * can preempt each other.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "sched/sched-int.h"

/* ---- reservations ---- */

void sched__unpromise(struct sched *s, int32_t w)
{
    int32_t k = 0;
    bool any = false;
    for (int32_t i = 0; i + 2 < s->promises.n; i += 3) {
        if (s->promises.v[i] == w) {
            s->pools[s->promises.v[i + 1]].promised -= s->promises.v[i + 2];
            any = true;
            continue;
        }
        memmove(&s->promises.v[k], &s->promises.v[i], 3 * sizeof(int32_t));
        k += 3;
    }
    s->promises.n = k;
    /* What a pool lends is counted over its classes: any of them may borrow now. */
    for (int32_t c = 0; any && c < s->n_classes; c++)
        sched__class_freed(s, c);
}

void sched__unreserve(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    sched__unpromise(s, w);
    /*
     * A node is held whole: work of every class on it may use it now, in a
     * pass under way too (its class's grown_pass, room_decide).
     */
    for (int32_t i = 0; i < wl->reserved.n; i++) {
        int32_t n = wl->reserved.v[i];
        struct node *nd = &s->nodes[n];
        if (nd->reserved_for != w)
            continue;
        nd->reserved_for = NONE;
        for (int32_t k = 0; k < nd->slots.n; k++) {
            int32_t c = s->slots[nd->slots.v[k]].cls;
            ivec_push(&s->classes[c].grown_pass, n);
            sched__nodes_freed(s, c, &n, 1);
        }
    }
    wl->reserved.n = 0;
    /*
     * The class's reservation is free again: a head due for it takes it when
     * looked at, so its waiting work that is due is looked at in full, from
     * here on in a pass under way (room_everywhere), and in the next; the
     * rest only where the room freed could serve it (sched__hol_look).
     */
    if (wl->cls != NONE && s->classes[wl->cls].hol_reserver == w) {
        s->classes[wl->cls].hol_reserver = NONE;
        s->classes[wl->cls].room_everywhere = true;
        sched__hol_freed(s, wl->cls);
    }
}

void pass__reserve_node(struct sched *s, int32_t w, int32_t n)
{
    struct node *nd = &s->nodes[n];
    if (nd->reserved_for == w)
        return;
    if (nd->reserved_for != NONE) {
        ivec_remove_value(&s->wls[nd->reserved_for].reserved, n);
        s->wls[nd->reserved_for].hold_taken_by = s->wls[w].spec.id;
    }
    nd->reserved_for = w;
    ivec_push(&s->wls[w].reserved, n);
}

/*
 * Holds, for a head blocked too long, the nodes with the most free devices of
 * its class (one per replica), so that smaller work stops taking them.
 */
static void reserve_for_head(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    struct cls *c = &s->classes[wl->cls];

    for (int32_t r = 0; r < wl->spec.replicas; r++) {
        int32_t best = NONE;
        int64_t best_free = -1;
        for (int32_t i = 0; i < c->slots.n; i++) {
            const struct slot *st = &s->slots[c->slots.v[i]];
            int64_t free_milli = 0;
            if (!place__node_usable(s, w, st->node) || s->nodes[st->node].reserved_for == w)
                continue;
            if (s->nodes[st->node].reserved_for != NONE)
                continue;
            for (int32_t k = 0; k < st->gpus.n; k++) {
                if (place__gpu_usable(s, w, st->gpus.v[k]))
                    free_milli += s->gpus[st->gpus.v[k]].free;
            }
            if (free_milli > best_free) {
                best_free = free_milli;
                best = st->node;
            }
        }
        if (best == NONE)
            break;
        pass__reserve_node(s, w, best);
    }
    c->hol_reserver = w;
}

/* ---- admission ---- */

static void admit(struct sched *s, int32_t w, int64_t now, struct sched_decisions *d)
{
    struct workload *wl = &s->wls[w];
    struct sched_admit *ad;
    struct quota *q =
        wl->cls != NONE ? sched__quota(&s->projects[wl->project], wl->cls, false) : NULL;
    int64_t owned_before = q ? q->p1 : 0;

    sched__queue_remove(s, w);
    wl->state = SCHED_RUNNING;
    wl->started_ms = wl->checkpoint_ms = now;
    wl->blocked_since_ms = 0;
    wl->hold_taken_by = 0;
    wl->reason = (struct sched_reason){0};
    sched__charge(s, w, +1);
    sched__unreserve(s, w);
    ALLOC_GROW(d->admits, d->n_admits + 1, d->cap_admits);
    ad = &d->admits[d->n_admits++];
    ad->workload_id = wl->spec.id;
    ad->first_assign = d->n_assigns;
    ad->n_assigns = (size_t)wl->n_assigns;
    ad->borrowed = wl->cls != NONE && (sched__held_in(s, wl->project, wl->cls) >
                                           sched__guaranteed_in(s, wl->project, wl->cls) ||
                                       reclaim__on_pool_owned(s, w, false));
    ad->pclass = wl->runs_as;
    ad->automatic = wl->spec.pclass == SCHED_AUTO;
    ad->owned_held = owned_before;
    ad->guaranteed = wl->cls != NONE ? sched__guaranteed_in(s, wl->project, wl->cls) : 0;
    ALLOC_GROW(d->assigns, d->n_assigns + (size_t)wl->n_assigns, d->cap_assigns);
    for (int32_t i = 0; i < wl->n_assigns; i++)
        d->assigns[d->n_assigns++] = wl->assigns[i];
}

static void wait_for(struct workload *wl, enum sched_reason_code code, int64_t used, int64_t cap)
{
    wl->reason = (struct sched_reason){.code = code,
                                       .class_id = wl->spec.class_id,
                                       .need = sched__need(wl),
                                       .per_replica = wl->spec.gpu_milli,
                                       .used = used,
                                       .cap = cap};
}

/* Whether some node could ever hold one replica of w; cached per fleet generation. */
static bool ever_fits(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    if (wl->fits_generation != s->fleet_generation + 1) {
        wl->ever_fits = place__ever_fits(s, w);
        wl->fits_generation = s->fleet_generation + 1;
    }
    return wl->ever_fits;
}

/* Records why w found no room, and holds capacity for it once it has waited long enough. */
static void blocked_on_capacity(struct sched *s, int32_t w, int64_t now)
{
    struct workload *wl = &s->wls[w];
    struct cls *c = wl->cls != NONE ? &s->classes[wl->cls] : NULL;

    if (!ever_fits(s, w)) {
        wait_for(wl, SCHED_WAIT_NO_NODES, 0, 0);
        return;
    }
    if (c && c->hol_reserver != NONE && c->hol_reserver != w) {
        wait_for(wl, SCHED_WAIT_RESERVED, 0, 0);
        wl->reason.other_id = s->wls[c->hol_reserver].spec.id;
    } else {
        wait_for(wl, SCHED_WAIT_CAPACITY, 0, place__largest_free(s, w));
        if (s->cfg.fair_share == SCHED_SHARE_DECAYED)
            share__waits(s, w);
    }
    if (!c)
        return;
    if (wl->blocked_since_ms == 0)
        wl->blocked_since_ms = now;
    if (now - wl->blocked_since_ms >= s->cfg.reserve_after_ms) {
        if (c->hol_reserver == NONE)
            reserve_for_head(s, w);
        /* Due, behind another's reservation: its end has this project looked at in full. */
        if (c->hol_reserver != w)
            sched__quota(&s->projects[wl->project], wl->cls, true)->hol_due = true;
    } else {
        sched__wake_at(s, wl->blocked_since_ms + s->cfg.reserve_after_ms, wl->project);
    }
}

/*
 * A plain request: no pool filter and no nodes held for it, so its shape and
 * labels alone decide whether it fits (nodes held for it are room nobody
 * else has).
 */
static bool plain(const struct workload *wl)
{
    return wl->cls != NONE && wl->spec.n_pools == 0 && wl->reserved.n == 0;
}

/* An order-independent fingerprint of the labels a workload asks for; 0 for none. */
static uint64_t selector_key(const struct workload *wl)
{
    uint64_t key = 0;
    for (int i = 0; i < wl->spec.n_selector; i++) {
        uint64_t x = wl->spec.selector[i] * UINT64_C(0x9e3779b97f4a7c15);
        key += x ^ (x >> 29);
    }
    return key;
}

static struct quota *plain_memo(struct sched *s, const struct workload *wl)
{
    struct quota *q;
    if (!plain(wl))
        return NULL;
    q = sched__quota(&s->projects[wl->project], wl->cls, true);
    if (q->fail_pass != s->pass_no) {
        q->fail_pass = s->pass_no;
        memset(q->fail, 0, sizeof(q->fail));
        q->reclaim_fail_milli = INT32_MAX;
        q->reclaim_protected_until = 0;
    }
    return q;
}

/*
 * Whether a request of this project already found no room in this pass that
 * this one cannot beat. Within a pass capacity only shrinks, and for single
 * replicas needs are monotone: no device with m milli free means none with
 * more, whole ones included. Gangs are matched by their exact shape only.
 */
static bool known_not_to_fit(struct sched *s, int32_t w)
{
    const struct workload *wl = &s->wls[w];
    struct quota *q = plain_memo(s, wl);
    if (!q)
        return false;
    for (int i = 0; i < 4; i++) {
        const __typeof__(q->fail[0][0]) *f = &q->fail[wl->runs_as - 1][i];
        bool single = f->replicas == 1 && wl->spec.replicas == 1 && !wl->spec.same_block;
        /* Singles: anything at least as big; gangs: only the very same shape again. */
        if (f->milli && f->selector == selector_key(wl) && f->same_block == wl->spec.same_block &&
            (single ? wl->spec.gpu_milli >= f->milli && wl->spec.cpu_milli >= f->cpu &&
                          wl->spec.mem_mib >= f->mem
                    : f->replicas == wl->spec.replicas && f->milli == wl->spec.gpu_milli &&
                          f->cpu == wl->spec.cpu_milli && f->mem == wl->spec.mem_mib))
            return true;
    }
    return false;
}

/* Remembers a request that found no room. */
static void remember_no_fit(struct sched *s, int32_t w)
{
    const struct workload *wl = &s->wls[w];
    struct quota *q = plain_memo(s, wl);
    int slot = 0;
    if (!q)
        return;
    /* Keep the smallest requests: replace an empty entry or the largest. */
    for (int i = 0; i < 4; i++) {
        const __typeof__(q->fail[0][0]) *f = &q->fail[wl->runs_as - 1][i];
        if (f->milli == 0) {
            slot = i;
            break;
        }
        if (f->milli > q->fail[wl->runs_as - 1][slot].milli)
            slot = i;
    }
    q->fail[wl->runs_as - 1][slot].milli = wl->spec.gpu_milli;
    q->fail[wl->runs_as - 1][slot].cpu = wl->spec.cpu_milli;
    q->fail[wl->runs_as - 1][slot].mem = wl->spec.mem_mib;
    q->fail[wl->runs_as - 1][slot].selector = selector_key(wl);
    q->fail[wl->runs_as - 1][slot].replicas = wl->spec.replicas;
    q->fail[wl->runs_as - 1][slot].same_block = wl->spec.same_block;
}

/*
 * reclaim(), unless a single replica of the same or a smaller size of this
 * project already found no victims in this pass: victims only get fewer and
 * room only scarcer within a pass, so it would fail again.
 */
static bool try_reclaim(struct sched *s, int32_t w, int64_t over_limit, int64_t now,
                        struct sched_decisions *d)
{
    const struct workload *wl = &s->wls[w];
    struct quota *q = over_limit == 0 ? plain_memo(s, wl) : NULL;
    bool single = wl->spec.replicas == 1 && !wl->spec.same_block;
    if (q && single && wl->spec.gpu_milli >= q->reclaim_fail_milli) {
        s->protected_until = q->reclaim_protected_until;
        return false;
    }
    s->protected_until = 0;
    if (reclaim__plan(s, w, over_limit, now, d))
        return true;
    if (q && single && wl->spec.gpu_milli < q->reclaim_fail_milli) {
        q->reclaim_fail_milli = wl->spec.gpu_milli;
        q->reclaim_protected_until = s->protected_until;
    }
    return false;
}

/* Tries to admit w now as w->runs_as; false (with its reason set) when it must wait. */
static bool try_admit_as(struct sched *s, int32_t w, int64_t now, struct sched_decisions *d)
{
    struct workload *wl = &s->wls[w];
    struct project *p = &s->projects[wl->project];
    int64_t need = sched__need(wl), over_limit = 0;

    /* A replica bigger than any node of its class says so first, whatever the quotas. */
    if (wl->cls != NONE && wl->spec.gpu_milli / WHOLE > s->classes[wl->cls].max_gpus_per_node) {
        wait_for(wl, SCHED_WAIT_NO_NODES, 0, 0);
        return false;
    }
    if (wl->cls != NONE) {
        struct quota *q = sched__quota(p, wl->cls, false);
        struct org_cap *oc = sched__org_cap(s, p->org, wl->cls, false);
        int64_t p1 = q ? q->p1 : 0, p2 = q ? q->p2 : 0, limit = q ? q->limit : -1;
        int64_t g = q ? sched__guaranteed(s, p, q) : 0;

        if (wl->runs_as == SCHED_P1 && p1 + need > g) {
            wait_for(wl, SCHED_WAIT_GUARANTEE, p1, g);
            return false;
        }
        if (limit >= 0 && p1 + p2 + need > limit) {
            if (wl->runs_as == SCHED_P2) {
                wait_for(wl, SCHED_WAIT_LIMIT, p1 + p2, limit);
                return false;
            }
            over_limit = p1 + p2 + need - limit; /* own P2 work makes way */
        }
        if (oc && oc->limit >= 0 && oc->used + need > oc->limit) {
            wait_for(wl, SCHED_WAIT_ORG_CAP, oc->used, oc->limit);
            return false;
        }
    }
    if (wl->cls != NONE)
        sched__quota(p, wl->cls, true)->wants_capacity = true; /* from here on, room decides */
    if (wl->victims_pending > 0)
        return false; /* still SCHED_WAIT_RECLAIM */
    if (over_limit == 0 && !known_not_to_fit(s, w)) {
        if (place__gang(s, w)) {
            admit(s, w, now, d);
            return true;
        }
        remember_no_fit(s, w);
    }
    s->protected_until = 0;
    if (wl->runs_as == SCHED_P1 && wl->cls != NONE && try_reclaim(s, w, over_limit, now, d))
        return false;
    if (over_limit > 0) {
        struct quota *q = sched__quota(p, wl->cls, false);
        wait_for(wl, SCHED_WAIT_LIMIT, q->p1 + q->p2, q->limit);
        return false;
    }
    blocked_on_capacity(s, w, now);
    /* Say when the work in its way stops being protected by its minimum runtime. */
    if (wl->reason.code == SCHED_WAIT_CAPACITY)
        wl->reason.preemptible_at_ms = s->protected_until;
    return false;
}

/*
 * Tries to admit w now; false (with its reason set) when it must wait.
 * Automatic work is judged as the class the rule gives it now, and its
 * reason says which and why.
 */
static bool try_admit(struct sched *s, int32_t w, int64_t now, struct sched_decisions *d)
{
    s->stats.examined++;
    struct workload *wl = &s->wls[w];
    if (wl->spec.pclass != SCHED_AUTO)
        return try_admit_as(s, w, now, d);
    /*
     * Not while its victims stop: the nodes they free are held for it as
     * owned work, which others' owned work may not take (place__node_usable).
     */
    if (wl->victims_pending == 0)
        wl->runs_as = sched__auto_class(s, w);
    if (try_admit_as(s, w, now, d))
        return true;
    wl->reason.auto_as = wl->runs_as;
    if (wl->cls != NONE) {
        struct quota *q = sched__quota(&s->projects[wl->project], wl->cls, false);
        wl->reason.auto_held = q ? q->p1 : 0;
        wl->reason.auto_guaranteed = sched__guaranteed_in(s, wl->project, wl->cls);
    }
    return false;
}

/* ---- the pass ---- */

/*
 * First queue index of automatic or P2 work (the queue holds P1 work first);
 * read from the keys, which sit together, not from the workloads.
 */
static int32_t first_p2(const struct project *p)
{
    int32_t lo = 0, hi = p->queue.n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if ((p->queue.key[mid] & 3) == RANK_P1)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Blocked workloads seen in a class of p (NONE: CPU-only work, a class of its own). */
static int32_t *blocked_count(struct project *p, int32_t cls)
{
    return cls == NONE ? &p->blocked : &sched__quota(p, cls, true)->blocked;
}

/*
 * Starts a phase: no class of p has blocked work yet; counts the classes it
 * has such work in. A class looked at only for room has nothing owned to
 * gain from it (its room record is known), so the owned phase passes it.
 */
static void scan_start(struct project *p, enum sched_class pclass, int32_t cursor)
{
    p->cursor = cursor;
    /* A class this pass does not look at counts as blocked from the start. */
    p->blocked = p->examine_cpu ? 0 : INT32_MAX;
    p->open_classes = p->examine_cpu && sched__in_phase(pclass, p->queued_cpu) > 0;
    for (int32_t k = 0; k < p->n_quotas; k++) {
        struct quota *q = &p->quotas[k];
        bool look = q->examine && !(pclass == SCHED_P1 && q->room_only);
        q->blocked = look ? 0 : INT32_MAX;
        p->open_classes += look && sched__in_phase(pclass, q->queued_in) > 0;
    }
}

/*
 * Looks at p's queue from p->cursor for work of phase pclass, admitting what
 * fits, until (one_only) one was admitted, or `lookahead` workloads were
 * found blocked in every GPU class it waits for: a class whose work is
 * blocked (a capped quota, no room) does not hold up the project's work in
 * other classes. Returns whether anything was admitted.
 *
 * Automatic work is looked at in both phases: in the first only where the
 * rule makes it owned (else it is passed, counted as blocked so that the
 * lookahead bounds the scan), in the second as whatever the rule gives,
 * which also reaches owned work the first phase's lookahead left behind.
 */
static bool scan_project(struct sched *s, int32_t pi, enum sched_class pclass, bool one_only,
                         int64_t now, struct sched_decisions *d)
{
    struct project *p = &s->projects[pi];
    bool any = false;
    s->stats.turns++;
    while (p->cursor < p->queue.n && p->open_classes > 0) {
        int32_t key = p->queue.key[p->cursor], *blocked, w = p->queue.v[p->cursor];
        bool passed;
        if (pclass == SCHED_P1 && (key & 3) == RANK_P2)
            break;
        blocked = blocked_count(p, (key >> 2) - 1);
        if (*blocked > s->cfg.lookahead) {
            /* left unexamined behind its class's lookahead (not for a class not looked at) */
            p->stopped_early |= *blocked != INT32_MAX;
            if (*blocked == INT32_MAX && (key >> 2) > 0)
                room__went_by(s, p, (key >> 2) - 1);
            p->cursor++;
            continue;
        }
        /*
         * The next entry's workload is most likely looked at next: ask for its
         * two cache lines a pass reads (struct workload) now, so that their
         * misses (the table is far larger than the cache) overlap this one's
         * placement.
         */
        if (p->cursor + 1 < p->queue.n) {
            const struct workload *next = &s->wls[p->queue.v[p->cursor + 1]];
            __builtin_prefetch(next);
            __builtin_prefetch(&next->spec);
        }
        passed =
            pclass == SCHED_P1 && (key & 3) == RANK_AUTO && sched__auto_class(s, w) != SCHED_P1;
        if (!passed && try_admit(s, w, now, d)) {
            any = true; /* the queue moved up: the cursor now points at the next one */
            if (one_only)
                break;
        } else {
            if (!passed)
                room__note(s, w);
            if (++*blocked > s->cfg.lookahead)
                p->open_classes--;
            p->cursor++;
        }
    }
    if (p->open_classes <= 0 && p->cursor < p->queue.n &&
        (pclass == SCHED_P2 || (p->queue.key[p->cursor] & 3) != RANK_P2))
        p->stopped_early = true;
    return any;
}

/* A small binary min-heap of project indices by share_key (ties: lower project id). */
struct heap {
    int32_t *v;
    int32_t n;
};

static bool heap_less(const struct sched *s, int32_t a, int32_t b)
{
    const struct project *pa = &s->projects[a], *pb = &s->projects[b];
    if (pa->share_key != pb->share_key)
        return pa->share_key < pb->share_key;
    return pa->id < pb->id;
}

static void heap_push(const struct sched *s, struct heap *h, int32_t p)
{
    int32_t i = h->n++;
    h->v[i] = p;
    while (i > 0 && heap_less(s, h->v[i], h->v[(i - 1) / 2])) {
        int32_t t = h->v[i];
        h->v[i] = h->v[(i - 1) / 2];
        h->v[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static int32_t heap_pop(const struct sched *s, struct heap *h)
{
    int32_t top = h->v[0], i = 0;
    h->v[0] = h->v[--h->n];
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i, t;
        if (l < h->n && heap_less(s, h->v[l], h->v[m]))
            m = l;
        if (r < h->n && heap_less(s, h->v[r], h->v[m]))
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

/*
 * Project pi, taken from a room index in this pass, joins it as if it had
 * been in its list from the start with only its room index classes marked:
 * only those are looked at, and only where a freed node could hold its work.
 */
static void room_join(struct sched *s, int32_t pi, struct heap *h, struct ivec *todo, int64_t now,
                      struct sched_decisions *d)
{
    struct project *p = &s->projects[pi];
    p->in_pass = s->pass_no;
    ivec_push(todo, pi);
    p->examine_cpu = false;
    p->stopped_early = false;
    for (int32_t k = 0; k < p->n_quotas; k++) {
        struct quota *q = &p->quotas[k];
        bool room = q->indexed && room__due(s, q);
        /* Marked, as the rest, by its class's reservation's end for this pass. */
        if (room && s->classes[q->cls].hol_end == s->pass_no)
            q->hol_pass = s->pass_no;
        q->examine = q->room_only = room;
        q->room_closed = false;
        if (room)
            q->wants_capacity = false;
    }
    /* The owned phase passes classes looked at only for room, as it did for it. */
    scan_start(p, SCHED_P1, 0);
    scan_project(s, pi, SCHED_P1, false, now, d);
    scan_start(p, SCHED_P2, first_p2(p));
    if (p->cursor < p->queue.n) {
        p->share_key = share__key(s, p, now);
        heap_push(s, h, pi);
    }
}

static int cmp_index(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/*
 * Preemptors whose victims have all released go first: the capacity is
 * theirs. One admitted leaves its queue: the work behind it comes into
 * view, so its class is looked at in this pass (what was learnt of it was
 * learnt with the preemptor at its head). They are tried in rounds until
 * a round admits none: victims release in their own order, and a
 * preemptor behind another of its project's that is ready too (its owned
 * work, queued first) waits for that one, not for the next pass's turns.
 */
static void admit_ready(struct sched *s, int64_t now_ms, struct sched_decisions *d)
{
    struct ivec *r = &s->ready;
    int32_t n = 0;
    bool admitted = true, first = true;

    for (int32_t i = 0; i < r->n; i++) {
        int32_t w = r->v[i];
        struct workload *wl = &s->wls[w];
        if (!wl->in_use || !wl->reclaim_ready || wl->state != SCHED_QUEUED)
            continue;
        wl->reclaim_ready = false;
        r->v[n++] = w;
    }
    r->n = n;
    for (; admitted && r->n > 0; first = false) {
        admitted = false;
        n = 0;
        for (int32_t i = 0; i < r->n; i++) {
            int32_t w = r->v[i];
            struct workload *wl = &s->wls[w];
            /*
             * The lending held for it was for this first chance: admitted,
             * it lends for real; else whatever it plans next holds its own.
             */
            if (first)
                sched__unpromise(s, w);
            if (!try_admit(s, w, now_ms, d)) {
                r->v[n++] = w;
                continue;
            }
            admitted = true;
            if (wl->cls != NONE)
                sched__mark_class_dirty(s, wl->project, wl->cls);
        }
        r->n = n;
    }
    r->n = 0;
}

/*
 * Starts a pass: preemptors whose victims have all released first, then the
 * list of projects it looks at (those marked since the last), each class
 * marked to be looked at in full or only where room was freed. Returns the
 * list.
 */
static struct ivec pass_begin(struct sched *s, int64_t now_ms, struct sched_decisions *d)
{
    struct ivec todo;

    s->pass_no++;
    s->stats.passes++;
    s->passing = true;
    share__tick(s, now_ms);
    /* Due timers (a reservation, a victim's minimum runtime) make their projects dirty. */
    sched__fire_timers(s, now_ms);
    admit_ready(s, now_ms, d);
    todo = s->dirty;
    memset(&s->dirty, 0, sizeof(s->dirty));
    s->dirty_for = s->pass_no + 1; /* marks from here on are for the next pass */
    /*
     * Projects in the order they were made (their owned work meets in that
     * order where room is short), not in the order something marked them:
     * how often a project was looked at before must not decide.
     */
    if (todo.n > 1)
        qsort(todo.v, (size_t)todo.n, sizeof(int32_t), cmp_index);
    for (int32_t c = 0; c < s->n_classes; c++) {
        struct ivec t = s->classes[c].grown_pass;
        s->classes[c].grown_pass = s->classes[c].grown;
        s->classes[c].grown = t;
        s->classes[c].grown.n = 0;
        s->classes[c].room_everywhere = false;
    }
    room__rebuild(s);
    room__pass_start(s);
    for (int32_t i = 0; i < todo.n; i++) {
        struct project *p = &s->projects[todo.v[i]];
        p->examine_cpu = p->dirty_all;
        p->in_pass = s->pass_no;
        for (int32_t k = 0; k < p->n_quotas; k++) {
            struct quota *q = &p->quotas[k];
            /* The room index's wake-up of its entries, for those this pass looks at anyway. */
            if (q->indexed && room__due(s, q)) {
                q->room_dirty = true;
                if (s->classes[q->cls].hol_end == s->pass_no)
                    q->hol_pass = s->pass_no;
            }
            q->examine = p->dirty_all || q->dirty || q->room_dirty;
            q->room_only = !p->dirty_all && !q->dirty && q->room_dirty && q->room.known;
            q->room_closed = false;
            q->dirty = q->room_dirty = false;
        }
        p->dirty = p->dirty_all = false;
    }

    /* What each project waits for is found out afresh by looking at it. */
    for (int32_t i = 0; i < todo.n; i++) {
        struct project *p = &s->projects[todo.v[i]];
        p->stopped_early = false;
        /* What each class waits for is found out afresh by looking (or kept, room_decide). */
        for (int32_t k = 0; k < p->n_quotas; k++) {
            if (!p->quotas[k].examine)
                continue;
            p->quotas[k].wants_capacity = false;
            if (!p->quotas[k].room_only)
                room__begin(s, &p->quotas[k]);
        }
    }
    return todo;
}

int sched_pass(struct sched *s, int64_t now_ms, struct sched_decisions *d)
{
    size_t before = d->n_admits + d->n_preemptions;
    /* The sched's: a wake within the pass marks those it looks at (room.c). */
    struct ivec *todo = &s->pass_todo;
    struct heap h;

    *todo = pass_begin(s, now_ms, d);

    /* Owned work first, project by project. */
    for (int32_t i = 0; i < todo->n; i++) {
        scan_start(&s->projects[todo->v[i]], SCHED_P1, 0);
        scan_project(s, todo->v[i], SCHED_P1, false, now_ms, d);
    }
    /* Then borrowed capacity, by weighted fair share, one workload per turn. */
    h.v = xmalloc(((size_t)s->n_projects + 1) * sizeof(int32_t));
    h.n = 0;
    for (int32_t i = 0; i < todo->n; i++) {
        struct project *p = &s->projects[todo->v[i]];
        scan_start(p, SCHED_P2, first_p2(p));
        if (p->cursor < p->queue.n) {
            p->share_key = share__key(s, p, now_ms);
            heap_push(s, &h, todo->v[i]);
        }
    }
    for (;;) {
        int32_t pi;
        /* Projects of the room indexes whose turn comes first join as they would have. */
        while ((pi = room__next(s, h.n > 0 ? h.v[0] : NONE)) != NONE)
            room_join(s, pi, &h, todo, now_ms, d);
        if (h.n == 0)
            break;
        pi = heap_pop(s, &h);
        if (room__decide(s, &s->projects[pi]) && scan_project(s, pi, SCHED_P2, true, now_ms, d)) {
            if (s->cfg.fair_share == SCHED_SHARE_DECAYED) /* its turn took what it admitted */
                share__took(s, d->admits[d->n_admits - 1].workload_id);
            s->projects[pi].share_key = share__key(s, &s->projects[pi], now_ms);
            heap_push(s, &h, pi);
        }
    }
    free(h.v);
    /* Work left unexamined behind the lookahead may be waiting for room: assume it is. */
    for (int32_t i = 0; i < todo->n; i++) {
        struct project *p = &s->projects[todo->v[i]];
        for (int32_t k = 0; p->stopped_early && k < p->n_quotas; k++) {
            if (p->quotas[k].queued > 0)
                p->quotas[k].wants_capacity = true;
        }
    }
    /* What each looked at waits for now decides where its room index files it. */
    for (int32_t i = 0; i < todo->n; i++)
        room__refile(s, todo->v[i]);
    ivec_release(todo);
    s->passing = false;
    return (int)(d->n_admits + d->n_preemptions - before);
}
