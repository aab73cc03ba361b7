/* SPDX-License-Identifier: Apache-2.0 */
/*
 * room.c: looking again only where room was freed. When a completion frees
 * devices on a few nodes, most of the projects waiting in their class wait
 * for the same room as before, for the same reasons: what each quota's
 * opportunistic work needs at the least is kept (its room record, learnt
 * when the pass last looked at it), and a pass looks at a project again only
 * if a node freed since could hold that much.
 *
 * Which projects those are is found without visiting each one (the cost
 * grew with the number of waiting projects: issue 17). Per class, the
 * projects whose work there waits only for room are kept in an index by
 * their fair-share key (the order a pass gives them turns), and a pass after
 * a completion walks it lazily, in step with its heap of turns: an entry is
 * taken when its turn comes and one of the freed nodes could hold what it
 * needs, and the walk stops where the room left could hold what none of the
 * rest needs. Freed devices of pools not open to everyone go to the projects
 * that may use those pools, found from the pool (its owner, its access
 * lists, their organizations), when they are freed. Projects whose needs are
 * not known are looked at in full, as before.
 *
 * The index keeps keys that change only when a project's holdings, weight
 * or quotas change (each of which has the pass look at the project, and the
 * index takes its new key after that pass) or when the fleet changes (the
 * index is built again). The decayed fair-share rule moves every key with
 * time: there, and in the exhaustive core that the differential test
 * compares with, every waiting project is woken as before.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "sched/sched-int.h"

/* This pass looks at q's work: its room record is learnt afresh. */
void room__begin(struct sched *s, struct quota *q)
{
    q->room_only = false;
    if (q->room_pass == s->pass_no)
        return;
    q->room_pass = s->pass_no;
    q->hol_due = false; /* found again if its overdue work is still blocked */
    q->room.known = true;
    q->room.whole = q->room.share = INT32_MAX;
    q->room.cpu = q->room.mem = INT64_MAX;
}

/* Adds what w, just found blocked, waits for to its quota's room record. */
void room__note(struct sched *s, int32_t w)
{
    const struct workload *wl = &s->wls[w];
    struct quota *q;
    if (wl->cls == NONE)
        return;
    q = sched__quota(&s->projects[wl->project], wl->cls, true);
    switch (wl->reason.code) {
    case SCHED_WAIT_LIMIT:
        /* Owned work at its limit makes the project's own P2 work go, if room is found. */
        if (wl->runs_as != SCHED_P2)
            break;
        return;
    case SCHED_WAIT_NO_NODES:
        /*
         * Owned work tried to reclaim before it was found to fit no node, and
         * a victim's minimum runtime it met sets a timer (reclaim.c): a look
         * in full is not the same as none, so it is not summed up.
         */
        if (wl->runs_as != SCHED_P2)
            break;
        return;
    case SCHED_WAIT_GUARANTEE:
    case SCHED_WAIT_ORG_CAP:
        return; /* freed room changes none of these */
    case SCHED_WAIT_CAPACITY:
    case SCHED_WAIT_RESERVED:
        /* Owned work may reclaim, and held nodes are room of its own: those are not summed up. */
        if (wl->runs_as != SCHED_P2 || wl->reserved.n > 0)
            break;
        if (wl->spec.gpu_milli >= WHOLE && wl->spec.gpu_milli / WHOLE < q->room.whole)
            q->room.whole = wl->spec.gpu_milli / WHOLE;
        if (wl->spec.gpu_milli < WHOLE && wl->spec.gpu_milli < q->room.share)
            q->room.share = wl->spec.gpu_milli;
        if (wl->spec.cpu_milli < q->room.cpu)
            q->room.cpu = wl->spec.cpu_milli;
        if (wl->spec.mem_mib < q->room.mem)
            q->room.mem = wl->spec.mem_mib;
        return;
    default:
        break;
    }
    q->room.known = false;
}

/*
 * Whether node n could now hold one replica of the least that the room record
 * of p's quota q asks: a node held for other work is not for opportunistic
 * work (and none of p's work in the record holds one), and only devices of
 * pools p may use, within their lending limit, count.
 */
static bool room_on(const struct sched *s, const struct project *p, const struct quota *q,
                    int32_t n)
{
    const struct node *nd = &s->nodes[n];
    int64_t least = q->room.share < WHOLE ? q->room.share : (int64_t)q->room.whole * WHOLE;
    int32_t whole = 0;
    if (nd->state != SCHED_NODE_READY || nd->reserved_for != NONE ||
        (nd->cpu_cap && nd->cpu_free < q->room.cpu) || (nd->mem_cap && nd->mem_free < q->room.mem))
        return false;
    for (int32_t i = 0; i < nd->slots.n; i++) {
        const struct slot *st = &s->slots[nd->slots.v[i]];
        const struct pool *pl = st->pool != NONE ? &s->pools[st->pool] : NULL;
        if (st->cls != q->cls || !sched__project_may_use_pool(s, p, st->pool) ||
            (pl && pl->lending_limit >= 0 && pl->lent + least > pl->lending_limit &&
             !sched__owns_pool(s, p, st->pool)))
            continue;
        whole += st->free_whole;
        for (int32_t k = 0; q->room.share < WHOLE && k < st->gpus.n; k++) {
            if (s->gpus[st->gpus.v[k]].free >= q->room.share)
                return true;
        }
    }
    return whole >= q->room.whole;
}

/*
 * Whether q's work is looked at in full because its class's head-of-line
 * reservation ended, in this pass or for it (hol_pass), and is free: a
 * look in full would have its overdue work take it. Where its work is not
 * due (or the reservation was taken again), the end changed nothing for it
 * but the room freed (the holder's nodes, in its class's grown list).
 */
bool sched__hol_look(const struct sched *s, const struct quota *q)
{
    const struct cls *c = &s->classes[q->cls];
    return q->hol_due && c->hol_reserver == NONE &&
           (c->room_everywhere || q->hol_pass == s->pass_no);
}

/*
 * The scan went by a workload of a class room_decide passed: counted as it
 * would have been found blocked, past the lookahead as left unexamined.
 */
void room__went_by(struct sched *s, struct project *p, int32_t cls)
{
    struct quota *q = sched__quota(p, cls, false);
    if (q && q->room_closed && ++q->room_passed > s->cfg.lookahead + 1)
        p->stopped_early = true;
}

/*
 * Decides, when p's turn comes, for each class looked at only for room:
 * if a node freed since the last pass could hold some of its work, it is
 * looked at in full; else it is passed and stays as it was (its work waits
 * for the same room as before, for the same reasons). False when nothing
 * of p is left to look at.
 */
bool room__decide(struct sched *s, struct project *p)
{
    for (int32_t k = 0; k < p->n_quotas; k++) {
        struct quota *q = &p->quotas[k];
        const struct cls *c = &s->classes[q->cls];
        bool room = s->cfg.exhaustive || sched__hol_look(s, q);
        /* Only classes the opportunistic phase opened (scan_start) are decided. */
        if (!q->room_only || sched__in_phase(SCHED_P2, q->queued_in) == 0 ||
            (q->blocked == INT32_MAX && !q->room_closed))
            continue;
        /* Passed before in this pass: only nodes freed since (a hold that ended) are new. */
        for (int32_t i = q->room_closed ? q->room_seen : 0; i < c->grown_pass.n && !room; i++)
            room = room_on(s, p, q, c->grown_pass.v[i]);
        q->room_seen = c->grown_pass.n;
        if (room && q->room_closed) {
            /*
             * Looked at from here on, as if the work the scan went by had
             * been found blocked (and still due, if it was).
             */
            bool due = q->hol_due;
            q->room_closed = false;
            room__begin(s, q);
            q->hol_due |= due;
            q->blocked = q->room_passed;
            p->open_classes += q->blocked <= s->cfg.lookahead;
        } else if (room) {
            room__begin(s, q);
        } else if (!q->room_closed) {
            q->room_closed = true;
            q->room_passed = 0;
            q->blocked = INT32_MAX;
            q->wants_capacity = true; /* as it was: its work still waits for room */
            p->open_classes--;
        }
    }
    return p->open_classes > 0;
}

/* ---- the index of projects waiting only for room ---- */

bool room__indexing(const struct sched *s)
{
    return s->cfg.fair_share != SCHED_SHARE_DECAYED && !s->cfg.exhaustive;
}

/* Whether entry (ka, a) comes before (kb, b): the order of turns (heap_less in pass.c). */
static bool entry_before(const struct sched *s, double ka, int32_t a, double kb, int32_t b)
{
    if (ka != kb)
        return ka < kb;
    return s->projects[a].id < s->projects[b].id;
}

/* The first entry of c's index that does not come before (key, p). */
static int32_t lower_bound(const struct sched *s, const struct cls *c, double key, int32_t p)
{
    int32_t lo = 0, hi = c->n_room_idx;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (entry_before(s, c->room_idx[mid].key, c->room_idx[mid].project, key, p))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Lowers *m to what q's record asks where that is less. */
static void need_min(struct room_need *m, const struct quota *q)
{
    if (q->room.whole < m->whole)
        m->whole = q->room.whole;
    if (q->room.share < m->share)
        m->share = q->room.share;
    if (q->room.cpu < m->cpu)
        m->cpu = q->room.cpu;
    if (q->room.mem < m->mem)
        m->mem = q->room.mem;
}

static const struct room_need NEED_NONE = {INT32_MAX, INT32_MAX, INT64_MAX, INT64_MAX};

/* The least any entry asks, counted afresh (removals never raise it). */
static void recount_min(struct sched *s, struct cls *c, int32_t cls)
{
    c->room_min = NEED_NONE;
    c->room_removed = 0;
    for (int32_t i = 0; i < c->n_room_idx; i++)
        need_min(&c->room_min, sched__quota(&s->projects[c->room_idx[i].project], cls, false));
}

static void idx_insert(struct sched *s, int32_t cls, int32_t p, struct quota *q, double key)
{
    struct cls *c = &s->classes[cls];
    int32_t i = lower_bound(s, c, key, p);
    ALLOC_GROW(c->room_idx, c->n_room_idx + 1, c->cap_room_idx);
    memmove(&c->room_idx[i + 1], &c->room_idx[i],
            (size_t)(c->n_room_idx - i) * sizeof(*c->room_idx));
    c->room_idx[i] = (struct room_entry){.key = key, .project = p};
    c->n_room_idx++;
    q->indexed = true;
    q->idx_key = key;
    need_min(&c->room_min, q);
}

static void idx_remove(struct sched *s, int32_t cls, int32_t p, struct quota *q)
{
    struct cls *c = &s->classes[cls];
    int32_t i = lower_bound(s, c, q->idx_key, p);
    assert(i < c->n_room_idx && c->room_idx[i].project == p);
    memmove(&c->room_idx[i], &c->room_idx[i + 1],
            (size_t)(c->n_room_idx - i - 1) * sizeof(*c->room_idx));
    c->n_room_idx--;
    q->indexed = false;
    if (++c->room_removed > c->n_room_idx / 2 + 16)
        recount_min(s, c, cls);
}

/* Whether q's work waits only for room, with its needs known: an entry of the index. */
static bool waits_for_room(const struct quota *q)
{
    return q->queued > 0 && q->wants_capacity && q->room.known &&
           sched__in_phase(SCHED_P2, q->queued_in) > 0;
}

/* Whether q's work may wait for room, with its needs not known: looked at in full. */
static bool waits_unknown(const struct quota *q)
{
    return q->queued > 0 && q->wants_capacity && !q->room.known;
}

/* Room-only work of p in q's class is looked at in the next pass (as class_wakeup did). */
static void wake(struct sched *s, int32_t pi, struct quota *q)
{
    struct project *p = &s->projects[pi];
    q->room_dirty = true;
    if (!p->dirty) {
        p->dirty = true;
        ivec_push(&s->dirty, pi);
    }
}

void room__refile(struct sched *s, int32_t pi)
{
    struct project *p = &s->projects[pi];
    double key = 0;
    bool have_key = false;
    if (!room__indexing(s))
        return;
    for (int32_t k = 0; k < p->n_quotas; k++) {
        struct quota *q = &p->quotas[k];
        bool idx = waits_for_room(q);
        if (idx && !have_key) {
            key = share__key(s, p, s->clock_ms);
            have_key = true;
        }
        /*
         * Leaving the index after devices of its class were freed (a cancel
         * between passes): the next pass would have woken it from the index,
         * so it is woken now, as class_wakeup did.
         */
        if (q->indexed && !idx &&
            (s->classes[q->cls].room_woke ||
             (s->classes[q->cls].room_defer == s->pass_no + 1 && p->in_pass != s->pass_no)))
            wake(s, pi, q);
        if (q->indexed && (!idx || q->idx_key != key))
            idx_remove(s, q->cls, pi, q);
        if (idx && !q->indexed)
            idx_insert(s, q->cls, pi, q, key);
        else if (idx) /* its record was learnt afresh */
            need_min(&s->classes[q->cls].room_min, q);
        q->full_wanted = waits_unknown(q);
        if (q->full_wanted && !q->full_listed) {
            ivec_push(&s->classes[q->cls].room_full, pi);
            q->full_listed = true;
        }
    }
}

static int cmp_entry(const void *a, const void *b, void *arg)
{
    const struct room_entry *x = a, *y = b;
    const struct sched *s = arg;
    if (entry_before(s, x->key, x->project, y->key, y->project))
        return -1;
    return entry_before(s, y->key, y->project, x->key, x->project);
}

void room__rebuild(struct sched *s)
{
    if (!room__indexing(s) || s->room_gen == s->fleet_generation + 1)
        return;
    s->room_gen = s->fleet_generation + 1;
    for (int32_t c = 0; c < s->n_classes; c++) {
        s->classes[c].n_room_idx = 0;
        s->classes[c].room_full.n = 0;
    }
    /* Keys moved with the fleet (capacity, guarantees from pools): each entry anew, then sorted. */
    for (int32_t pi = 0; pi < s->n_projects; pi++) {
        struct project *p = &s->projects[pi];
        double key = share__key(s, p, s->clock_ms);
        for (int32_t k = 0; k < p->n_quotas; k++) {
            struct quota *q = &p->quotas[k];
            struct cls *c = &s->classes[q->cls];
            q->indexed = waits_for_room(q);
            q->idx_key = key;
            if (q->indexed) {
                ALLOC_GROW(c->room_idx, c->n_room_idx + 1, c->cap_room_idx);
                c->room_idx[c->n_room_idx++] = (struct room_entry){.key = key, .project = pi};
            }
            q->full_wanted = q->full_listed = waits_unknown(q);
            if (q->full_listed)
                ivec_push(&c->room_full, pi);
        }
    }
    for (int32_t c = 0; c < s->n_classes; c++) {
        struct cls *cl = &s->classes[c];
        if (cl->n_room_idx > 1) /* an empty index has no array: qsort_r wants one */
            qsort_r(cl->room_idx, (size_t)cl->n_room_idx, sizeof(*cl->room_idx), cmp_entry, s);
        recount_min(s, cl, c);
    }
}

static void wake_waiting(struct sched *s, int32_t pi, int32_t cls)
{
    struct quota *q = pi != NONE ? sched__quota(&s->projects[pi], cls, false) : NULL;
    if (q && q->queued > 0 && q->wants_capacity)
        wake(s, pi, q);
}

static void wake_org(struct sched *s, int64_t org_id, int32_t cls)
{
    int32_t o = idmap_get(&s->org_ids, org_id);
    for (int32_t i = 0; o != NONE && i < s->orgs[o].members.n; i++)
        wake_waiting(s, s->orgs[o].members.v[i], cls);
}

/* Wakes the projects waiting in cls that may use pool (one not open to everyone). */
static void wake_pool(struct sched *s, int32_t pool, int32_t cls)
{
    const struct pool *pl = &s->pools[pool];
    wake_waiting(s, idmap_get(&s->project_ids, pl->owner_project_id), cls);
    if (pl->owner_org_id != 0)
        wake_org(s, pl->owner_org_id, cls);
    for (size_t i = 0; i < pl->n_access_projects; i++)
        wake_waiting(s, idmap_get(&s->project_ids, pl->access_projects[i]), cls);
    for (size_t i = 0; i < pl->n_access_orgs; i++)
        wake_org(s, pl->access_orgs[i], cls);
}

static bool pool_open(const struct sched *s, int32_t pool)
{
    return pool == NONE || s->pools[pool].lend_to_all;
}

/*
 * Wakes the projects of cls that the index does not cover: those whose
 * needs are not known, and those who may use the pools not open to everyone
 * where the devices were freed (the walk's bound counts open pools only).
 * Within a pass, projects it looks at are left to wake_in_pass: what they
 * wait for now decides, not how they were filed after their last pass.
 */
static void wake_unindexed(struct sched *s, int32_t cls, const int32_t *nodes, int32_t n)
{
    struct ivec *full = &s->classes[cls].room_full;
    int32_t k = 0;
    /* Needs not known: looked at in full, as before (stale entries leave the list). */
    for (int32_t i = 0; i < full->n; i++) {
        struct quota *q = sched__quota(&s->projects[full->v[i]], cls, false);
        if (!q || !q->full_wanted) {
            if (q)
                q->full_listed = false;
            continue;
        }
        full->v[k++] = full->v[i];
        if (!s->passing || s->projects[full->v[i]].in_pass != s->pass_no)
            wake(s, full->v[i], q);
    }
    full->n = k;
    /* Devices of pools not open to everyone: those who may use them, as before. */
    for (int32_t i = 0; i < n; i++) {
        const struct node *nd = &s->nodes[nodes[i]];
        for (int32_t j = 0; j < nd->slots.n; j++) {
            const struct slot *st = &s->slots[nd->slots.v[j]];
            if (st->cls == cls && !pool_open(s, st->pool))
                wake_pool(s, st->pool, cls);
        }
    }
}

void room__wake(struct sched *s, int32_t cls, const int32_t *nodes, int32_t n)
{
    s->classes[cls].room_woke = true; /* its entries, at the next pass */
    wake_unindexed(s, cls, nodes, n);
}

/*
 * Marks, of the projects the pass under way looks at, those whose work
 * waits for room in cls now (for the next pass: as class_wakeup did), each
 * for the reservation's end too where hol.
 */
static void wake_in_pass(struct sched *s, int32_t cls, bool hol)
{
    const struct ivec *todo = &s->pass_todo;
    assert(s->passing);
    for (int32_t i = 0; i < todo->n; i++) {
        struct quota *q = sched__quota(&s->projects[todo->v[i]], cls, false);
        if (!q || q->queued == 0 || !q->wants_capacity)
            continue;
        if (hol)
            q->hol_pass = s->dirty_for;
        wake(s, todo->v[i], q);
    }
}

/*
 * A wake within a pass used to mark every project waiting in the class for
 * the next pass, which then gave each a turn in its heap to be told "no
 * room" (1,000 turns at 20k nodes: the p99 of issue 17). It marks the same
 * projects now, but those of the index through it: the next pass walks the
 * index as after a wake between passes, taking the entries whose class this
 * pass did not look at (their filing is what it was when the wake marked
 * them); projects this pass looks at are marked here by what they wait for
 * now, as before. Entries whose class this pass's walk looks at after the
 * wake are not due in the next: the core without shortcuts has them in this
 * pass from its start, not yet looked at when the wake came, so it marked
 * none of them (the differential test parts where they are taken again).
 * A project taken for another class is due for this one (room__due).
 */
void room__wake_within(struct sched *s, int32_t cls, const int32_t *nodes, int32_t n)
{
    wake_in_pass(s, cls, false);
    s->classes[cls].room_defer = s->dirty_for;
    s->classes[cls].wake_seq++;
    wake_unindexed(s, cls, nodes, n);
}

/*
 * The class's head-of-line reservation ended: every project waiting in it
 * is due a look in the pass that takes the marks (hol_end), in full where
 * its overdue work may take the reservation (sched__hol_look). It used to
 * mark each of them (500 to 1,000 turns in that pass's heap); now the
 * index's entries are walked there, the walk taking those due while the
 * reservation is free, then those a freed node could serve.
 */
void room__hol_wake(struct sched *s, int32_t cls)
{
    struct cls *c = &s->classes[cls];
    c->hol_end = s->dirty_for;
    if (!s->passing || s->dirty_for == s->pass_no) {
        c->room_woke = true;
    } else {
        wake_in_pass(s, cls, true);
        c->room_defer = s->dirty_for;
        c->wake_seq++;
    }
    wake_unindexed(s, cls, NULL, 0);
}

bool room__due(const struct sched *s, const struct quota *q)
{
    const struct cls *c = &s->classes[q->cls];
    /*
     * The core without shortcuts had an entry the walk went by in its pass
     * from its start: a wake before its turn found it not yet waiting for
     * room again (wants_capacity), so only a later one marked it.
     */
    return c->room_active &&
           (c->room_skip == 0 || (q->room_pass != c->room_skip &&
                                  (q->went_pass != c->room_skip || q->went_seq != c->skip_seq)));
}

/* ---- a pass's walk of the index ---- */

void room__pass_start(struct sched *s)
{
    for (int32_t c = 0; c < s->n_classes; c++) {
        struct cls *cl = &s->classes[c];
        /*
         * Woken between passes: every entry is due; only within the last
         * pass: those it did not look at (room__wake_within).
         */
        bool within = cl->room_defer == s->pass_no;
        cl->room_active = room__indexing(s) && (cl->room_woke || within);
        cl->room_skip = cl->room_woke || !within ? 0 : s->pass_no - 1;
        cl->room_woke = false;
        cl->room_cursor = 0;
        cl->room_grown_seen = cl->grown_pass.n;
        cl->room_open_ended = false;
        cl->skip_seq = cl->wake_seq;
    }
}

/*
 * Whether some freed node could hold, on devices of pools open to everyone,
 * the least that any entry of the class's index asks (each part of it the
 * least of some entry: a bound, never an answer for one entry).
 */
static bool could_open(const struct sched *s, int32_t cls)
{
    const struct cls *c = &s->classes[cls];
    const struct room_need *m = &c->room_min;
    for (int32_t i = 0; i < c->grown_pass.n; i++) {
        const struct node *nd = &s->nodes[c->grown_pass.v[i]];
        int64_t whole = 0;
        if (nd->state != SCHED_NODE_READY || nd->reserved_for != NONE ||
            (nd->cpu_cap && nd->cpu_free < m->cpu) || (nd->mem_cap && nd->mem_free < m->mem))
            continue;
        for (int32_t j = 0; j < nd->slots.n; j++) {
            const struct slot *st = &s->slots[nd->slots.v[j]];
            if (st->cls != cls || !pool_open(s, st->pool))
                continue;
            whole += st->free_whole;
            for (int32_t k = 0; m->share < WHOLE && k < st->gpus.n; k++) {
                if (s->gpus[st->gpus.v[k]].free >= m->share)
                    return true;
            }
        }
        if (whole >= m->whole)
            return true;
    }
    return false;
}

/*
 * Whether this pass is the one a reservation's end of the class marked
 * its waiting projects for, and the reservation is still free: due work
 * of an entry (q, when given) would take it.
 */
static bool hol_open(const struct sched *s, const struct cls *c, const struct quota *q)
{
    return c->hol_end == s->pass_no && c->hol_reserver == NONE && (!q || q->hol_due);
}

/*
 * Whether the entry's project, not yet in this pass, could use a freed node
 * of the class; one due that could not is gone by (went_pass), as the core
 * without shortcuts would have looked at it.
 */
static bool entry_opens(struct sched *s, int32_t cls, const struct room_entry *e)
{
    const struct cls *c = &s->classes[cls];
    struct project *p = &s->projects[e->project];
    struct quota *q;
    if (p->in_pass == s->pass_no)
        return false;
    q = sched__quota(p, cls, false);
    if (!q || !room__due(s, q) || !q->indexed || q->idx_key != e->key)
        return false;
    if (sched__hol_look(s, q) || hol_open(s, c, q))
        return true;
    for (int32_t i = 0; i < c->grown_pass.n; i++) {
        if (room_on(s, p, q, c->grown_pass.v[i]))
            return true;
    }
    q->went_pass = s->pass_no;
    q->went_seq = c->wake_seq;
    return false;
}

int32_t room__next(struct sched *s, int32_t top)
{
    for (int32_t ci = 0; ci < s->n_classes; ci++) {
        struct cls *c = &s->classes[ci];
        while (c->room_active && c->room_cursor < c->n_room_idx) {
            const struct room_entry *e = &c->room_idx[c->room_cursor];
            if (top != NONE &&
                !entry_before(s, e->key, e->project, s->projects[top].share_key, top))
                break; /* its turn has not come */
            /* Room grown in this pass (a hold ended): every entry is judged on its own. */
            if (c->grown_pass.n != c->room_grown_seen || c->room_everywhere)
                c->room_open_ended = true;
            /* While a reservation that ended is free, the first due entry takes it. */
            if (!c->room_open_ended && !hol_open(s, c, NULL) && !could_open(s, ci)) {
                /* None could use what is left: those whose turn came are passed, as looked at. */
                c->room_cursor = top == NONE ? c->n_room_idx
                                             : lower_bound(s, c, s->projects[top].share_key, top);
                break;
            }
            c->room_cursor++;
            if (entry_opens(s, ci, e))
                return e->project;
        }
    }
    return NONE;
}
