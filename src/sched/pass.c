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
 * P1 work within its guarantee that finds no room reclaims it: the fewest,
 * cheapest running P2 victims (of projects borrowing in that class, or of
 * its own project) are told to stop, and the nodes they free are held for
 * the preemptor until they have released. P2 work never preempts and P1
 * work is never a victim, so no two workloads can preempt each other.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "sched/sched-int.h"

/* ---- decisions ---- */

static int64_t need_of(const struct workload *wl)
{
    return (int64_t)wl->spec.replicas * wl->spec.gpu_milli;
}

static int64_t guaranteed_of(const struct sched *s, int32_t project, int32_t cls)
{
    struct project *p = &((struct sched *)s)->projects[project];
    struct quota *q = sched__quota(p, cls, false);
    return q ? sched__guaranteed(s, p, q) : 0;
}

static int64_t held_of(struct sched *s, int32_t project, int32_t cls)
{
    struct quota *q = sched__quota(&s->projects[project], cls, false);
    return q ? q->p1 + q->p2 : 0;
}

/* ---- reservations ---- */

void sched__unreserve(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    for (int32_t i = 0; i < wl->reserved.n; i++) {
        struct node *nd = &s->nodes[wl->reserved.v[i]];
        if (nd->reserved_for == w)
            nd->reserved_for = NONE;
    }
    if (wl->reserved.n > 0 && wl->cls != NONE)
        sched__class_freed(s, wl->cls);
    wl->reserved.n = 0;
    if (wl->cls != NONE && s->classes[wl->cls].hol_reserver == w)
        s->classes[wl->cls].hol_reserver = NONE;
}

void pass__reserve_node(struct sched *s, int32_t w, int32_t n)
{
    struct node *nd = &s->nodes[n];
    if (nd->reserved_for == w)
        return;
    if (nd->reserved_for != NONE)
        ivec_remove_value(&s->wls[nd->reserved_for].reserved, n);
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

/* ---- preemption ---- */

static void scratch_fit(struct sched *s)
{
#define FIT(arr, stamp, n, have)                                                               \
    if ((size_t)(n) > (have)) {                                                                \
        free(arr);                                                                             \
        free(stamp);                                                                           \
        (have) = (size_t)(n) * 2 + 16;                                                          \
        (arr) = xcalloc((have), sizeof(*(arr)));                                               \
        (stamp) = xcalloc((have), sizeof(uint32_t));                                           \
    }
    FIT(s->vfree, s->gpu_stamp, s->n_gpus, s->scratch_gpus);
    if ((size_t)s->n_nodes > s->scratch_nodes) {
        free(s->vcpu);
        free(s->vmem);
        free(s->node_stamp);
        s->scratch_nodes = (size_t)s->n_nodes * 2 + 16;
        s->vcpu = xcalloc(s->scratch_nodes, sizeof(int64_t));
        s->vmem = xcalloc(s->scratch_nodes, sizeof(int64_t));
        s->node_stamp = xcalloc(s->scratch_nodes, sizeof(uint32_t));
    }
    if ((size_t)s->n_wls > s->scratch_wls) {
        free(s->wl_stamp);
        s->scratch_wls = (size_t)s->n_wls * 2 + 16;
        s->wl_stamp = xcalloc(s->scratch_wls, sizeof(uint32_t));
    }
    if ((size_t)s->n_projects > s->scratch_projects) {
        free(s->vguar);
        s->vguar = xcalloc((size_t)s->n_projects * 2 + 16, sizeof(int64_t));
    }
    FIT(s->vused, s->proj_stamp, s->n_projects, s->scratch_projects);
#undef FIT
    if (++s->epoch == 0) { /* wrapped: clear every stamp */
        memset(s->gpu_stamp, 0, s->scratch_gpus * sizeof(uint32_t));
        memset(s->node_stamp, 0, s->scratch_nodes * sizeof(uint32_t));
        memset(s->wl_stamp, 0, s->scratch_wls * sizeof(uint32_t));
        memset(s->proj_stamp, 0, s->scratch_projects * sizeof(uint32_t));
        s->epoch = 1;
    }
}

void pass__release(struct sched *s)
{
    free(s->vfree);
    free(s->gpu_stamp);
    free(s->vcpu);
    free(s->vmem);
    free(s->node_stamp);
    free(s->wl_stamp);
    free(s->vused);
    free(s->vguar);
    free(s->proj_stamp);
}

/* Virtual (what-if) views of free capacity and usage during a victim search. */
static int32_t *vfree_of(struct sched *s, int32_t g)
{
    if (s->gpu_stamp[g] != s->epoch) {
        s->gpu_stamp[g] = s->epoch;
        s->vfree[g] = s->gpus[g].free;
    }
    return &s->vfree[g];
}

static void vnode_touch(struct sched *s, int32_t n)
{
    if (s->node_stamp[n] != s->epoch) {
        s->node_stamp[n] = s->epoch;
        s->vcpu[n] = s->nodes[n].cpu_free;
        s->vmem[n] = s->nodes[n].mem_free;
    }
}

/* A project's usage in the class during a victim search, and (cached with it) its guarantee. */
static int64_t *vused_of(struct sched *s, int32_t p, int32_t cls)
{
    if (s->proj_stamp[p] != s->epoch) {
        s->proj_stamp[p] = s->epoch;
        s->vused[p] = held_of(s, p, cls);
        s->vguar[p] = guaranteed_of(s, p, cls);
    }
    return &s->vused[p];
}

static int64_t vguaranteed_of(struct sched *s, int32_t p, int32_t cls)
{
    vused_of(s, p, cls);
    return s->vguar[p];
}

static bool chosen(const struct sched *s, int32_t v)
{
    return s->wl_stamp[v] == s->epoch;
}

static int64_t lost_ms(const struct workload *v, int64_t now)
{
    int64_t since = v->checkpoint_ms > v->started_ms ? v->checkpoint_ms : v->started_ms;
    return now > since ? now - since : 0;
}

/* Within one project: lowest priority, then least work lost, then newest. */
static bool cheaper(const struct workload *a, const struct workload *b, int64_t now)
{
    if (a->spec.priority != b->spec.priority)
        return a->spec.priority < b->spec.priority;
    if (lost_ms(a, now) != lost_ms(b, now))
        return lost_ms(a, now) < lost_ms(b, now);
    return a->started_ms > b->started_ms;
}

/* Whether v holds a device of a pool that project owns and v's project does not. */
static bool on_pool_of(const struct sched *s, int32_t v, int32_t project)
{
    const struct workload *vl = &s->wls[v];
    const struct project *owner = &s->projects[project], *user = &s->projects[vl->project];
    for (int32_t i = 0; i < vl->n_assigns; i++) {
        int32_t g = vl->at[2 * i + 1];
        int32_t pool = g == NONE ? NONE : s->gpus[g].pool;
        if (pool != NONE && sched__owns_pool(s, owner, pool) && !sched__owns_pool(s, user, pool))
            return true;
    }
    return false;
}

/* Whether w holds a device of a pool its project owns (want) or does not own (!want). */
static bool on_pool_owned(const struct sched *s, int32_t w, bool want)
{
    const struct workload *wl = &s->wls[w];
    for (int32_t i = 0; i < wl->n_assigns; i++) {
        int32_t g = wl->at[2 * i + 1];
        int32_t pool = g == NONE ? NONE : s->gpus[g].pool;
        if (pool != NONE && sched__owns_pool(s, &s->projects[wl->project], pool) == want)
            return true;
    }
    return false;
}

/*
 * Who may be a victim of the P1 workload w, and why. An owner takes back
 * whatever runs on its pools for others (P1 work there is borrowing too);
 * elsewhere only P2 work of projects borrowing beyond their guarantee goes,
 * never work on its own project's pools; and w's own project's P2 work,
 * except, for automatic work, automatic work of the same or a higher
 * priority: the project did not ask for the one to give way to the other.
 */
enum victim_kind { VK_NONE, VK_OWNER, VK_BORROWER, VK_OWN };

static enum victim_kind victim_kind(const struct sched *s, int32_t w, int32_t v)
{
    const struct workload *wl = &s->wls[w], *vl = &s->wls[v];
    if (vl->state != SCHED_RUNNING || vl->cls != wl->cls || chosen(s, v))
        return VK_NONE;
    if (vl->project == wl->project)
        return vl->runs_as == SCHED_P2 &&
                       !(wl->spec.pclass == SCHED_AUTO && vl->spec.pclass == SCHED_AUTO &&
                         vl->spec.priority >= wl->spec.priority)
                   ? VK_OWN
                   : VK_NONE;
    if (on_pool_of(s, v, wl->project))
        return VK_OWNER;
    if (vl->runs_as == SCHED_P2 && !on_pool_owned(s, v, true))
        return VK_BORROWER;
    return VK_NONE;
}

static int64_t add_sat(int64_t a, int64_t b)
{
    return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Whether v's minimum runtime still protects it; if so, w is looked at again when it ends. */
static bool protected_now(struct sched *s, int32_t w, int32_t v, int64_t now)
{
    const struct workload *vl = &s->wls[v];
    int64_t until = add_sat(vl->started_ms, vl->spec.min_runtime_ms);
    if (now >= until)
        return false;
    sched__wake_at(s, until, s->wls[w].project);
    if (s->protected_until == 0 || until < s->protected_until)
        s->protected_until = until;
    return true;
}

/*
 * The rules that depend on usage, which the victims already taken change: a
 * borrower's work goes only while its project is still borrowing, and only
 * for a preemptor whose project, once admitted, is within its guarantee.
 */
static bool borrower_allowed(struct sched *s, int32_t w, int32_t v)
{
    const struct workload *wl = &s->wls[w], *vl = &s->wls[v];
    return *vused_of(s, vl->project, vl->cls) > vguaranteed_of(s, vl->project, vl->cls) &&
           *vused_of(s, wl->project, wl->cls) + need_of(wl) <=
               vguaranteed_of(s, wl->project, wl->cls);
}

/*
 * How willingly a victim is taken (DESIGN 3, "priorities are per project"):
 * others' work before the preemptor's own, P2 before P1; among others, the
 * project borrowing most above its guarantee first; then lowest priority,
 * least work lost, newest.
 */
struct vkey {
    int rank;
    int64_t excess, lost, started, id, need;
    int32_t priority;
};

static struct vkey vkey_of(struct sched *s, int32_t v, enum victim_kind kind, int64_t now)
{
    const struct workload *vl = &s->wls[v];
    struct vkey k = {.rank = kind == VK_OWN            ? 2
                             : vl->runs_as == SCHED_P1 ? 1
                                                       : 0,
                     .lost = lost_ms(vl, now),
                     .started = vl->started_ms,
                     .id = vl->spec.id,
                     .need = need_of(vl),
                     .priority = vl->spec.priority};
    k.excess = *vused_of(s, vl->project, vl->cls) - vguaranteed_of(s, vl->project, vl->cls);
    return k;
}

/* Which is taken first by who and how much: kind, borrowing, then priority. */
static int tier_cmp(const struct vkey *a, const struct vkey *b)
{
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->excess != b->excess)
        return a->excess > b->excess ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    return 0;
}

/* The order of taking: by tier, then least work lost, then newest. */
static bool key_before(const struct vkey *a, const struct vkey *b)
{
    int c = tier_cmp(a, b);
    if (c != 0)
        return c < 0;
    if (a->lost != b->lost)
        return a->lost < b->lost;
    if (a->started != b->started)
        return a->started > b->started;
    return a->id > b->id;
}

static bool victim_first(const struct vkey *a, const struct vkey *b, bool by_size)
{
    int c = tier_cmp(a, b);
    if (by_size && c == 0 && a->need != b->need)
        return a->need > b->need;
    return key_before(a, b);
}

/* Virtually frees (sign -1: takes back) everything v holds. */
static void virtual_free(struct sched *s, int32_t v, int sign)
{
    const struct workload *vl = &s->wls[v];
    int32_t last = NONE;
    for (int32_t i = 0; i < vl->n_assigns; i++) {
        const struct sched_assign *a = &vl->assigns[i];
        int32_t n = vl->at[2 * i];
        if (a->gpu_id)
            *vfree_of(s, vl->at[2 * i + 1]) += sign * a->milli;
        if (a->replica != last) {
            vnode_touch(s, n);
            s->vcpu[n] += sign * vl->spec.cpu_milli;
            s->vmem[n] += sign * vl->spec.mem_mib;
            last = a->replica;
        }
    }
    *vused_of(s, vl->project, vl->cls) -= sign * need_of(vl);
    s->wl_stamp[v] = sign > 0 ? s->epoch : 0;
}

/* Whether one replica of w fits on node n in the virtual view; picks its devices. */
static bool vfits(struct sched *s, int32_t w, int32_t n, int32_t cls, int32_t *ret_gpus)
{
    const struct workload *wl = &s->wls[w];
    int32_t k = wl->spec.gpu_milli >= WHOLE ? wl->spec.gpu_milli / WHOLE : 1;
    int32_t want = wl->spec.gpu_milli >= WHOLE ? WHOLE : wl->spec.gpu_milli, got = 0;
    const struct node *nd = &s->nodes[n];

    vnode_touch(s, n);
    if ((nd->cpu_cap && s->vcpu[n] < wl->spec.cpu_milli) ||
        (nd->mem_cap && s->vmem[n] < wl->spec.mem_mib))
        return false;
    for (int32_t i = 0; i < nd->slots.n && got < k; i++) {
        const struct slot *st = &s->slots[nd->slots.v[i]];
        int32_t from_slot = 0;
        if (st->cls != cls)
            continue;
        for (int32_t j = 0; j < st->gpus.n && got < k; j++) {
            int32_t g = st->gpus.v[j];
            /* Within the pool's lending limit as it is now (victims' lending is not counted off).
             */
            if (*vfree_of(s, g) >= want && place__gpu_usable(s, w, g) &&
                place__may_lend(s, w, st->pool, (int64_t)(from_slot + 1) * want)) {
                ret_gpus[got++] = g;
                from_slot++;
            }
        }
    }
    return got == k;
}

static bool node_in_own_pool(const struct sched *s, int32_t w, int32_t n)
{
    const struct node *nd = &s->nodes[n];
    for (int32_t i = 0; i < nd->slots.n; i++) {
        int32_t pool = s->slots[nd->slots.v[i]].pool;
        if (pool != NONE && sched__owns_pool(s, &s->projects[s->wls[w].project], pool))
            return true;
    }
    return false;
}

#define PICK_MAX 64

struct pick {
    int32_t node;
    int32_t n_victims;
    bool own;          /* the node holds devices of the preemptor's own pools */
    int64_t lost;      /* work lost, milli-GPU x ms */
    int64_t freed;     /* milli-GPU the victims hold */
    struct vkey worst; /* the most protected victim */
    int32_t victims[PICK_MAX];
    int8_t kinds[PICK_MAX];
};

/* Whether the borrower rule holds for every borrower's work among the victims. */
static bool borrowers_ok(struct sched *s, int32_t w, const int8_t *kinds, int32_t n)
{
    const struct workload *wl = &s->wls[w];
    for (int32_t i = 0; i < n; i++) {
        if (kinds[i] == VK_BORROWER)
            return *vused_of(s, wl->project, wl->cls) + need_of(wl) <=
                   vguaranteed_of(s, wl->project, wl->cls);
    }
    return true;
}

/* Drops from pk the victims the replica can do without, most protected first. */
static void prune_pick(struct sched *s, int32_t w, struct pick *pk)
{
    int32_t gpus[SCHED_MAX_GPUS_PER_NODE];
    for (int32_t i = pk->n_victims - 1; i >= 0 && pk->n_victims > 1; i--) {
        int32_t v = pk->victims[i];
        int8_t kind = pk->kinds[i];
        virtual_free(s, v, -1);
        memmove(pk->victims + i, pk->victims + i + 1,
                (size_t)(pk->n_victims - i - 1) * sizeof(pk->victims[0]));
        memmove(pk->kinds + i, pk->kinds + i + 1, (size_t)(pk->n_victims - i - 1));
        pk->n_victims--;
        if (vfits(s, w, pk->node, s->wls[w].cls, gpus) &&
            borrowers_ok(s, w, pk->kinds, pk->n_victims))
            continue;
        /* needed after all: put it back where it was */
        memmove(pk->victims + i + 1, pk->victims + i,
                (size_t)(pk->n_victims - i) * sizeof(pk->victims[0]));
        memmove(pk->kinds + i + 1, pk->kinds + i, (size_t)(pk->n_victims - i));
        pk->victims[i] = v;
        pk->kinds[i] = kind;
        pk->n_victims++;
        virtual_free(s, v, +1);
    }
}

/*
 * Tries to make one replica of w fit on node n by taking victims in the
 * order they are to be taken (by_size: the bigger first within a tier, for
 * fewer victims), then drops those it turned out not to need;
 * on success fills pk (victims are left virtually freed: the caller undoes
 * them).
 */
static bool try_node(struct sched *s, int32_t w, int32_t n, bool by_size, int64_t now,
                     struct pick *pk)
{
    struct node *nd = &s->nodes[n];
    struct {
        int32_t v;
        int8_t kind;
        bool taken;
        struct vkey key;
    } cand[PICK_MAX];
    int32_t n_cand = 0, gpus[SCHED_MAX_GPUS_PER_NODE];
    bool fits, progress = true;

    for (int32_t i = 0; i < nd->running.n && n_cand < PICK_MAX; i++) {
        int32_t v = nd->running.v[i];
        enum victim_kind kind = victim_kind(s, w, v);
        if (kind == VK_NONE || protected_now(s, w, v, now))
            continue;
        cand[n_cand].v = v;
        cand[n_cand].kind = (int8_t)kind;
        cand[n_cand].taken = false;
        cand[n_cand].key = vkey_of(s, v, kind, now);
        n_cand++;
    }
    /* insertion sort: nodes hold few workloads */
    for (int32_t i = 1; i < n_cand; i++) {
        __typeof__(cand[0]) x = cand[i];
        int32_t j = i - 1;
        while (j >= 0 && victim_first(&x.key, &cand[j].key, by_size)) {
            cand[j + 1] = cand[j];
            j--;
        }
        cand[j + 1] = x;
    }
    pk->node = n;
    pk->n_victims = 0;
    pk->own = node_in_own_pool(s, w, n);
    fits = vfits(s, w, n, s->wls[w].cls, gpus);
    /* A borrower's work may become allowed once the preemptor's own work is taken: sweep again. */
    while (!fits && progress) {
        progress = false;
        for (int32_t i = 0; i < n_cand && !fits; i++) {
            if (cand[i].taken ||
                (cand[i].kind == VK_BORROWER && !borrower_allowed(s, w, cand[i].v)))
                continue;
            virtual_free(s, cand[i].v, +1);
            cand[i].taken = progress = true;
            pk->kinds[pk->n_victims] = cand[i].kind;
            pk->victims[pk->n_victims++] = cand[i].v;
            fits = vfits(s, w, n, s->wls[w].cls, gpus);
        }
    }
    if (!fits)
        return false;
    prune_pick(s, w, pk);
    pk->lost = pk->freed = 0;
    for (int32_t i = 0; i < pk->n_victims; i++) {
        const struct workload *vl = &s->wls[pk->victims[i]];
        struct vkey key = {0};
        for (int32_t k = 0; k < n_cand; k++) {
            if (cand[k].v == pk->victims[i])
                key = cand[k].key;
        }
        pk->lost += lost_ms(vl, now) * need_of(vl);
        pk->freed += need_of(vl);
        if (i == 0 || key_before(&pk->worst, &key))
            pk->worst = key;
    }
    return true;
}

static void undo_pick(struct sched *s, const struct pick *pk)
{
    for (int32_t i = pk->n_victims - 1; i >= 0; i--)
        virtual_free(s, pk->victims[i], -1);
}

/*
 * The better way to make room: the one whose most protected victim is of
 * the lower tier (so priority and borrowing count across nodes), then fewer
 * victims, then fewer GPUs freed beyond the need, then the preemptor's own
 * pools, then the least work lost.
 */
static bool better(const struct pick *a, const struct pick *b)
{
    if ((a->n_victims == 0) != (b->n_victims == 0))
        return a->n_victims == 0;
    if (a->n_victims > 0 && tier_cmp(&a->worst, &b->worst) != 0)
        return tier_cmp(&a->worst, &b->worst) < 0;
    if (a->n_victims != b->n_victims)
        return a->n_victims < b->n_victims;
    if (a->freed != b->freed)
        return a->freed < b->freed;
    if (a->own != b->own)
        return a->own;
    return a->lost < b->lost;
}


/* Takes the replica's capacity in the virtual view on the chosen node. */
static void vtake_replica(struct sched *s, int32_t w, int32_t n)
{
    const struct workload *wl = &s->wls[w];
    int32_t gpus[SCHED_MAX_GPUS_PER_NODE];
    int32_t k = wl->spec.gpu_milli >= WHOLE ? wl->spec.gpu_milli / WHOLE : 1;
    bool fits = vfits(s, w, n, wl->cls, gpus);
    assert(fits);
    (void)fits;
    for (int32_t i = 0; i < k; i++)
        *vfree_of(s, gpus[i]) -= wl->spec.gpu_milli >= WHOLE ? WHOLE : wl->spec.gpu_milli;
    s->vcpu[n] -= wl->spec.cpu_milli;
    s->vmem[n] -= wl->spec.mem_mib;
}

/* Own P2 work that must go so that the project stays within its limit. */
static bool pick_for_limit(struct sched *s, int32_t w, int64_t over, int64_t now,
                           struct ivec *victims)
{
    const struct workload *wl = &s->wls[w];
    const struct cls *c = &s->classes[wl->cls];
    while (over > 0) {
        int32_t best = NONE;
        for (int32_t i = 0; i < c->slots.n; i++) {
            const struct node *nd = &s->nodes[s->slots[c->slots.v[i]].node];
            for (int32_t k = 0; k < nd->running.n; k++) {
                int32_t v = nd->running.v[k];
                if (victim_kind(s, w, v) == VK_OWN && !protected_now(s, w, v, now) &&
                    (best == NONE || cheaper(&s->wls[v], &s->wls[best], now)))
                    best = v;
            }
        }
        if (best == NONE)
            return false;
        virtual_free(s, best, +1);
        ivec_push(victims, best);
        over -= need_of(&s->wls[best]);
    }
    return true;
}

static void record_preemption(struct sched *s, int32_t w, const struct ivec *victims,
                              int64_t now, struct sched_decisions *d)
{
    struct workload *wl = &s->wls[w];
    struct sched_preemption *pe;
    int64_t grace = 0, freed = 0;
    int32_t projects[64], n_projects = 0;

    ALLOC_GROW(d->preemptions, d->n_preemptions + 1, d->cap_preemptions);
    pe = &d->preemptions[d->n_preemptions++];
    memset(pe, 0, sizeof(*pe));
    pe->preemptor_id = wl->spec.id;
    pe->rule = SCHED_RULE_RECLAIM;
    pe->decided_ms = now;
    pe->first_victim = d->n_victims;
    pe->n_victims = (size_t)victims->n;
    projects[n_projects++] = wl->project;
    for (int32_t i = 0; i < victims->n; i++) {
        struct workload *v = &s->wls[victims->v[i]];
        struct sched_victim *sv;
        int64_t g = v->spec.grace_ms >= 0 ? v->spec.grace_ms : s->cfg.default_grace_ms;
        bool seen = false;
        ALLOC_GROW(d->victims, d->n_victims + 1, d->cap_victims);
        sv = &d->victims[d->n_victims++];
        sv->workload_id = v->spec.id;
        sv->project_id = v->spec.project_id;
        sv->gpu_milli = need_of(v);
        sv->lost_ms = lost_ms(v, now);
        grace = g > grace ? g : grace;
        freed += need_of(v);
        for (int32_t k = 0; k < n_projects && !seen; k++)
            seen = projects[k] == v->project;
        if (!seen && n_projects < 64)
            projects[n_projects++] = v->project;
    }
    pe->grace_ms = grace;
    pe->gpu_milli_reclaimed = freed;
    pe->first_quota = d->n_quotas;
    for (int32_t k = 0; k < n_projects; k++) {
        struct sched_quota_snapshot *qs;
        struct quota *q = sched__quota(&s->projects[projects[k]], wl->cls, false);
        ALLOC_GROW(d->quotas, d->n_quotas + 1, d->cap_quotas);
        qs = &d->quotas[d->n_quotas++];
        qs->project_id = s->projects[projects[k]].id;
        qs->class_id = wl->spec.class_id;
        qs->used = q ? q->p1 + q->p2 : 0;
        qs->guaranteed = guaranteed_of(s, projects[k], wl->cls);
        qs->limit = q ? q->limit : -1;
    }
    pe->n_quotas = (size_t)n_projects;
}

/* The best way to make room for one replica of w on node n, if any (virtual state untouched). */
static bool best_pick_on(struct sched *s, int32_t w, int32_t n, int64_t now, struct pick *ret)
{
    struct pick cur;
    bool found = false;
    for (int by_size = 0; by_size < 2; by_size++) {
        bool fit = try_node(s, w, n, by_size, now, &cur);
        undo_pick(s, &cur);
        if (fit && (!found || better(&cur, ret))) {
            *ret = cur;
            found = true;
        }
        /* Biggest-first can only do better when preference order needed several. */
        if (!fit || cur.n_victims <= 1)
            break;
    }
    return found;
}

static int cmp_pick(const void *a, const void *b)
{
    const struct pick *x = a, *y = b;
    if (better(x, y))
        return -1;
    if (better(y, x))
        return 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/*
 * Whether the plan still works without victim skip: every replica on its
 * planned node, with the others freed (and the borrower rule kept). Leaves
 * the virtual view as that check built it.
 */
static bool plan_holds(struct sched *s, int32_t w, const struct ivec *victims,
                       const struct ivec *kinds, int32_t skip, const struct ivec *nodes)
{
    int32_t gpus[SCHED_MAX_GPUS_PER_NODE];
    bool any_borrower = false;
    scratch_fit(s); /* a fresh virtual view */
    for (int32_t i = 0; i < victims->n; i++) {
        if (i == skip)
            continue;
        virtual_free(s, victims->v[i], +1);
        any_borrower |= kinds->v[i] == VK_BORROWER;
    }
    if (any_borrower) {
        int8_t k = VK_BORROWER;
        if (!borrowers_ok(s, w, &k, 1))
            return false;
    }
    for (int32_t r = 0; r < nodes->n; r++) {
        if (!vfits(s, w, nodes->v[r], s->wls[w].cls, gpus))
            return false;
        vtake_replica(s, w, nodes->v[r]);
    }
    return true;
}

/*
 * Drops the victims a gang's plan does not need (a victim taken for one
 * replica may have made room for a later one as well), most protected
 * first; victims before `first` (those the limit needs) stay.
 */
static void prune_plan(struct sched *s, int32_t w, int32_t first, struct ivec *victims,
                       struct ivec *kinds, const struct ivec *nodes)
{
    for (int32_t i = victims->n - 1; i >= first && victims->n > 1; i--) {
        if (!plan_holds(s, w, victims, kinds, i, nodes))
            continue;
        memmove(victims->v + i, victims->v + i + 1, (size_t)(victims->n - i - 1) * sizeof(int32_t));
        memmove(kinds->v + i, kinds->v + i + 1, (size_t)(kinds->n - i - 1) * sizeof(int32_t));
        victims->n--;
        kinds->n--;
    }
}

/*
 * Plans victims for every replica of w, optionally within one topology block:
 * first its own P2 work that must make way for its limit, then per replica
 * the node where the least protected victims make room, then drops the
 * victims the whole plan turns out not to need. Returns false when no plan
 * exists; the plan is in victims and nodes, and its cost in *ret_lost.
 */
static bool plan_reclaim(struct sched *s, int32_t w, int64_t over_limit, int64_t block,
                         int64_t now, struct ivec *victims, struct ivec *nodes, int64_t *ret_lost)
{
    struct workload *wl = &s->wls[w];
    const struct cls *c = &s->classes[wl->cls];
    struct ivec kinds = {0};
    int32_t n_limit;

    scratch_fit(s);
    victims->n = nodes->n = 0;
    *ret_lost = 0;
    /* Own P2 work that the limit needs gone. */
    if (over_limit > 0 && !pick_for_limit(s, w, over_limit, now, victims))
        return false;
    n_limit = victims->n;
    for (int32_t i = 0; i < n_limit; i++)
        ivec_push(&kinds, VK_OWN);
    /* Within one block, only that block's slots; else every slot of the class. */
    const int32_t *slots = c->slots.v;
    int32_t n_slots = c->slots.n;
    if (block) {
        int32_t bi = place__block_index(s, wl->cls, block);
        if (bi == NONE) {
            ivec_release(&kinds);
            return false;
        }
        slots = c->block_slots + c->block_start[bi];
        n_slots = c->block_start[bi + 1] - c->block_start[bi];
    }
    struct pick *ranked = NULL; /* replica 0's fitting nodes, best first (gangs only) */
    int32_t n_ranked = 0;
    bool gang = wl->spec.replicas > 1;
    if (gang)
        ranked = xcalloc((size_t)n_slots + 1, sizeof(*ranked));
    for (int32_t r = 0; r < wl->spec.replicas; r++) {
        struct pick best = {.node = NONE}, cur;
        if (r == 0) {
            for (int32_t i = 0; i < n_slots; i++) {
                int32_t n = s->slots[slots[i]].node;
                if (!place__node_usable(s, w, n))
                    continue;
                if (best_pick_on(s, w, n, now, &cur)) {
                    if (best.node == NONE || better(&cur, &best))
                        best = cur;
                    if (gang)
                        ranked[n_ranked++] = cur;
                }
            }
            if (gang)
                qsort(ranked, (size_t)n_ranked, sizeof(*ranked), cmp_pick);
        } else {
            /*
             * Later replicas: a node can only have got better if it hosts a
             * victim chosen since (its devices were freed); every other node is
             * at best as good as in replica 0's ranking. So re-check those
             * nodes, then walk the ranking until nothing left can win.
             */
            for (int32_t v = 0; v < victims->n; v++) {
                const struct workload *vl = &s->wls[victims->v[v]];
                for (int32_t k = 0; k < vl->n_assigns; k++) {
                    int32_t n = vl->at[2 * k];
                    if (place__node_usable(s, w, n) &&
                        (!block || s->nodes[n].block_id == block) &&
                        best_pick_on(s, w, n, now, &cur) &&
                        (best.node == NONE || better(&cur, &best)))
                        best = cur;
                }
            }
            for (int32_t i = 0; i < n_ranked; i++) {
                if (best.node != NONE && better(&best, &ranked[i]))
                    break;
                if (best_pick_on(s, w, ranked[i].node, now, &cur) &&
                    (best.node == NONE || better(&cur, &best)))
                    best = cur;
            }
        }
        if (best.node == NONE) {
            free(ranked);
            ivec_release(&kinds);
            return false;
        }
        for (int32_t i = 0; i < best.n_victims; i++) {
            virtual_free(s, best.victims[i], +1);
            ivec_push(victims, best.victims[i]);
            ivec_push(&kinds, best.kinds[i]);
        }
        vtake_replica(s, w, best.node);
        ivec_push(nodes, best.node);
    }
    free(ranked);
    if (gang || n_limit > 0)
        prune_plan(s, w, n_limit, victims, &kinds, nodes);
    ivec_release(&kinds);
    for (int32_t i = 0; i < victims->n; i++)
        *ret_lost += lost_ms(&s->wls[victims->v[i]], now) * need_of(&s->wls[victims->v[i]]);
    return victims->n > 0; /* no victim: it fits as it is, placement will take it */
}

/*
 * Finds the fewest, cheapest victims that make room for every replica of the
 * P1 workload w (and bring its project under its limit); on success marks
 * them preempting, holds the freed nodes for w and records the decision.
 * A gang that must stay in one topology block gets the block whose plan
 * costs least.
 */
static bool reclaim(struct sched *s, int32_t w, int64_t over_limit, int64_t now,
                    struct sched_decisions *d)
{
    struct workload *wl = &s->wls[w];
    struct ivec victims = {0}, nodes = {0}, best_victims = {0}, best_nodes = {0};
    bool found = false;
    int64_t best_lost = 0;

    if (wl->spec.same_block && wl->spec.replicas > 1) {
        int32_t n_blocks;
        const int64_t *blocks = place__blocks(s, wl->cls, &n_blocks);
        for (int32_t k = 0; k < n_blocks; k++) {
            int64_t lost;
            if (!plan_reclaim(s, w, over_limit, blocks[k], now, &victims, &nodes, &lost))
                continue;
            if (!found || victims.n < best_victims.n ||
                (victims.n == best_victims.n && lost < best_lost)) {
                struct ivec t = best_victims;
                best_victims = victims;
                victims = t;
                t = best_nodes;
                best_nodes = nodes;
                nodes = t;
                best_lost = lost;
                found = true;
            }
        }
    } else {
        found = plan_reclaim(s, w, over_limit, 0, now, &best_victims, &best_nodes, &best_lost);
    }
    if (found) {
        record_preemption(s, w, &best_victims, now, d);
        for (int32_t i = 0; i < best_victims.n; i++) {
            struct workload *v = &s->wls[best_victims.v[i]];
            v->state = SCHED_PREEMPTING;
            v->preemptor_id = wl->spec.id;
        }
        for (int32_t i = 0; i < best_nodes.n; i++)
            pass__reserve_node(s, w, best_nodes.v[i]);
        wl->victims_pending = best_victims.n;
        wl->reclaim_ready = false;
        wl->reason = (struct sched_reason){.code = SCHED_WAIT_RECLAIM,
                                           .class_id = wl->spec.class_id,
                                           .need = need_of(wl),
                                           .per_replica = wl->spec.gpu_milli,
                                           .count = best_victims.n};
    }
    ivec_release(&victims);
    ivec_release(&nodes);
    ivec_release(&best_victims);
    ivec_release(&best_nodes);
    return found;
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
    wl->reason = (struct sched_reason){0};
    sched__charge(s, w, +1);
    sched__unreserve(s, w);
    ALLOC_GROW(d->admits, d->n_admits + 1, d->cap_admits);
    ad = &d->admits[d->n_admits++];
    ad->workload_id = wl->spec.id;
    ad->first_assign = d->n_assigns;
    ad->n_assigns = (size_t)wl->n_assigns;
    ad->borrowed = wl->cls != NONE &&
                   (held_of(s, wl->project, wl->cls) > guaranteed_of(s, wl->project, wl->cls) ||
                    on_pool_owned(s, w, false));
    ad->pclass = wl->runs_as;
    ad->automatic = wl->spec.pclass == SCHED_AUTO;
    ad->owned_held = owned_before;
    ad->guaranteed = wl->cls != NONE ? guaranteed_of(s, wl->project, wl->cls) : 0;
    ALLOC_GROW(d->assigns, d->n_assigns + (size_t)wl->n_assigns, d->cap_assigns);
    for (int32_t i = 0; i < wl->n_assigns; i++)
        d->assigns[d->n_assigns++] = wl->assigns[i];
}

static void wait_for(struct workload *wl, enum sched_reason_code code, int64_t used, int64_t cap)
{
    wl->reason = (struct sched_reason){.code = code,
                                       .class_id = wl->spec.class_id,
                                       .need = need_of(wl),
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
    if (reclaim(s, w, over_limit, now, d))
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
    int64_t need = need_of(wl), over_limit = 0;

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
        wl->reason.auto_guaranteed = guaranteed_of(s, wl->project, wl->cls);
    }
    return false;
}

/* ---- the pass ---- */

/* First queue index of automatic or P2 work (the queue holds P1 work first). */
static int32_t first_p2(const struct sched *s, const struct project *p)
{
    int32_t lo = 0, hi = p->queue.n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (s->wls[p->queue.v[mid]].spec.pclass == SCHED_P1)
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

/* Queued work a phase looks at: P1 and automatic work first, then automatic and P2 work. */
static int32_t in_phase(enum sched_class phase, const int32_t queued[3])
{
    return queued[RANK_AUTO] + (phase == SCHED_P1 ? queued[RANK_P1] : queued[RANK_P2]);
}

/* Starts a phase: no class of p has blocked work yet; counts the classes it has such work in. */
static void scan_start(struct project *p, enum sched_class pclass, int32_t cursor)
{
    p->cursor = cursor;
    /* A class this pass does not look at counts as blocked from the start. */
    p->blocked = p->examine_cpu ? 0 : INT32_MAX;
    p->open_classes = p->examine_cpu && in_phase(pclass, p->queued_cpu) > 0;
    for (int32_t k = 0; k < p->n_quotas; k++) {
        struct quota *q = &p->quotas[k];
        q->blocked = q->examine ? 0 : INT32_MAX;
        p->open_classes += q->examine && in_phase(pclass, q->queued_in) > 0;
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
    while (p->cursor < p->queue.n && p->open_classes > 0) {
        int32_t key = p->queue_key.v[p->cursor], *blocked, w = p->queue.v[p->cursor];
        bool passed;
        if (pclass == SCHED_P1 && (key & 3) == RANK_P2)
            break;
        blocked = blocked_count(p, (key >> 2) - 1);
        if (*blocked > s->cfg.lookahead) {
            /* left unexamined behind its class's lookahead (not for a class not looked at) */
            p->stopped_early |= *blocked != INT32_MAX;
            p->cursor++;
            continue;
        }
        passed =
            pclass == SCHED_P1 && (key & 3) == RANK_AUTO && sched__auto_class(s, w) != SCHED_P1;
        if (!passed && try_admit(s, w, now, d)) {
            any = true; /* the queue moved up: the cursor now points at the next one */
            if (one_only)
                break;
        } else {
            if (++*blocked > s->cfg.lookahead)
                p->open_classes--;
            p->cursor++;
        }
    }
    if (p->open_classes <= 0 && p->cursor < p->queue.n &&
        (pclass == SCHED_P2 || (p->queue_key.v[p->cursor] & 3) != RANK_P2))
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

int sched_pass(struct sched *s, int64_t now_ms, struct sched_decisions *d)
{
    size_t before = d->n_admits + d->n_preemptions;
    struct ivec todo = s->dirty;
    struct heap h;

    s->pass_no++;
    share__tick(s, now_ms);
    /* Due timers (a reservation, a victim's minimum runtime) make their projects dirty. */
    sched__fire_timers(s, now_ms);
    todo = s->dirty;
    memset(&s->dirty, 0, sizeof(s->dirty));
    for (int32_t i = 0; i < todo.n; i++) {
        struct project *p = &s->projects[todo.v[i]];
        p->examine_cpu = p->dirty_all;
        for (int32_t k = 0; k < p->n_quotas; k++) {
            p->quotas[k].examine = p->dirty_all || p->quotas[k].dirty;
            p->quotas[k].dirty = false;
        }
        p->dirty = p->dirty_all = false;
    }

    /* Preemptors whose victims have all released go first: the capacity is theirs. */
    for (int32_t i = 0; i < s->ready.n; i++) {
        int32_t w = s->ready.v[i];
        struct workload *wl = &s->wls[w];
        if (!wl->in_use || !wl->reclaim_ready || wl->state != SCHED_QUEUED)
            continue;
        wl->reclaim_ready = false;
        try_admit(s, w, now_ms, d);
    }
    s->ready.n = 0;

    /* What each project waits for is found out afresh by looking at it. */
    for (int32_t i = 0; i < todo.n; i++) {
        struct project *p = &s->projects[todo.v[i]];
        p->stopped_early = false;
        for (int32_t k = 0; k < p->n_quotas; k++) {
            if (p->quotas[k].examine)
                p->quotas[k].wants_capacity = false;
        }
    }
    /* Owned work first, project by project. */
    for (int32_t i = 0; i < todo.n; i++) {
        scan_start(&s->projects[todo.v[i]], SCHED_P1, 0);
        scan_project(s, todo.v[i], SCHED_P1, false, now_ms, d);
    }
    /* Then borrowed capacity, by weighted fair share, one workload per turn. */
    h.v = xcalloc((size_t)todo.n + 1, sizeof(int32_t));
    h.n = 0;
    for (int32_t i = 0; i < todo.n; i++) {
        struct project *p = &s->projects[todo.v[i]];
        scan_start(p, SCHED_P2, first_p2(s, p));
        if (p->cursor < p->queue.n) {
            p->share_key = share__key(s, p, now_ms);
            heap_push(s, &h, todo.v[i]);
        }
    }
    while (h.n > 0) {
        int32_t pi = heap_pop(s, &h);
        if (scan_project(s, pi, SCHED_P2, true, now_ms, d)) {
            if (s->cfg.fair_share == SCHED_SHARE_DECAYED) /* its turn took what it admitted */
                share__took(s, d->admits[d->n_admits - 1].workload_id);
            s->projects[pi].share_key = share__key(s, &s->projects[pi], now_ms);
            heap_push(s, &h, pi);
        }
    }
    free(h.v);
    /* Work left unexamined behind the lookahead may be waiting for room: assume it is. */
    for (int32_t i = 0; i < todo.n; i++) {
        struct project *p = &s->projects[todo.v[i]];
        for (int32_t k = 0; p->stopped_early && k < p->n_quotas; k++) {
            if (p->quotas[k].queued > 0)
                p->quotas[k].wants_capacity = true;
        }
    }
    ivec_release(&todo);
    return (int)(d->n_admits + d->n_preemptions - before);
}
