/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reclaim.c: the victim search. P1 work within its guarantee that finds no
 * room reclaims it: the fewest, cheapest running P2 victims (of projects
 * borrowing in that class, or of its own project), and whatever runs for
 * others on the pools its project owns, are told to stop; the nodes they
 * free are held for the preemptor until they have released. The search
 * works on a virtual copy of free capacity and usage, so a plan can be
 * tried and undone without touching the real state.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "sched/sched-int.h"

static void scratch_fit(struct sched *s)
{
#define FIT(arr, stamp, n, have)                                                                   \
    if ((size_t)(n) > (have)) {                                                                    \
        free(arr);                                                                                 \
        free(stamp);                                                                               \
        (have) = (size_t)(n)*2 + 16;                                                               \
        (arr) = xcalloc((have), sizeof(*(arr)));                                                   \
        (stamp) = xcalloc((have), sizeof(uint32_t));                                               \
    }
    FIT(s->vfree, s->gpu_stamp, s->n_gpus, s->scratch_gpus);
    if ((size_t)s->n_nodes > s->scratch_nodes) {
        free(s->vcpu);
        free(s->vmem);
        free(s->node_stamp);
        free(s->node_seen);
        s->scratch_nodes = (size_t)s->n_nodes * 2 + 16;
        s->vcpu = xcalloc(s->scratch_nodes, sizeof(int64_t));
        s->vmem = xcalloc(s->scratch_nodes, sizeof(int64_t));
        s->node_stamp = xcalloc(s->scratch_nodes, sizeof(uint32_t));
        s->node_seen = xcalloc(s->scratch_nodes, sizeof(uint32_t));
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
    FIT(s->vlent, s->pool_stamp, s->n_pools, s->scratch_pools);
#undef FIT
    if (++s->epoch == 0) { /* wrapped: clear every stamp */
        memset(s->gpu_stamp, 0, s->scratch_gpus * sizeof(uint32_t));
        memset(s->node_stamp, 0, s->scratch_nodes * sizeof(uint32_t));
        memset(s->wl_stamp, 0, s->scratch_wls * sizeof(uint32_t));
        memset(s->proj_stamp, 0, s->scratch_projects * sizeof(uint32_t));
        if (s->pool_stamp) /* none without pools */
            memset(s->pool_stamp, 0, s->scratch_pools * sizeof(uint32_t));
        s->epoch = 1;
    }
}

void reclaim__release(struct sched *s)
{
    free(s->vfree);
    free(s->gpu_stamp);
    free(s->vcpu);
    free(s->vmem);
    free(s->node_stamp);
    free(s->node_seen);
    free(s->wl_stamp);
    free(s->vused);
    free(s->vguar);
    free(s->proj_stamp);
    free(s->vlent);
    free(s->pool_stamp);
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
        s->vused[p] = sched__held_in(s, p, cls);
        s->vguar[p] = sched__guaranteed_in(s, p, cls);
    }
    return &s->vused[p];
}

static int64_t vguaranteed_of(struct sched *s, int32_t p, int32_t cls)
{
    vused_of(s, p, cls);
    return s->vguar[p];
}

/*
 * What a pool lends in the plan for w: what it lends now (the victims' loans
 * are not counted off: conservative) and holds for other preemptors, as
 * place__may_lend counts, plus what the plan's replicas already placed take
 * of it (vtake_replica), so that a gang's replicas together stay within the
 * lending limit, as placement will hold them to.
 */
static int64_t vlent_base(const struct sched *s, int32_t w, int32_t pool)
{
    return s->pools[pool].lent + s->pools[pool].promised - place__promised_to(s, w, pool);
}

static int64_t *vlent_of(struct sched *s, int32_t w, int32_t pool)
{
    if (s->pool_stamp[pool] != s->epoch) {
        s->pool_stamp[pool] = s->epoch;
        s->vlent[pool] = vlent_base(s, w, pool);
    }
    return &s->vlent[pool];
}

/* place__may_lend in the plan's view. */
static bool vmay_lend(struct sched *s, int32_t w, int32_t pool, int64_t milli)
{
    const struct pool *pl;
    if (pool == NONE)
        return true;
    pl = &s->pools[pool];
    return pl->lending_limit < 0 || sched__owns_pool(s, &s->projects[s->wls[w].project], pool) ||
           *vlent_of(s, w, pool) + milli <= pl->lending_limit;
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
bool reclaim__on_pool_owned(const struct sched *s, int32_t w, bool want)
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
    if (vl->runs_as == SCHED_P2 && !reclaim__on_pool_owned(s, v, true))
        return VK_BORROWER;
    return VK_NONE;
}

static int64_t add_sat(int64_t a, int64_t b)
{
    return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

/*
 * Whether v's minimum runtime still protects it; the earliest such end is
 * kept, so that w is looked at again then if no plan is found (reclaim__plan).
 */
static bool protected_now(struct sched *s, int32_t w, int32_t v, int64_t now)
{
    const struct workload *vl = &s->wls[v];
    int64_t until = add_sat(vl->started_ms, vl->spec.min_runtime_ms);
    (void)w;
    if (now >= until)
        return false;
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
           *vused_of(s, wl->project, wl->cls) + sched__need(wl) <=
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
                     .need = sched__need(vl),
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
    *vused_of(s, vl->project, vl->cls) -= sign * sched__need(vl);
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
            /* Within the pool's lending limit, the plan's earlier replicas counted (vlent_of). */
            if (*vfree_of(s, g) >= want && place__gpu_usable(s, w, g) &&
                vmay_lend(s, w, st->pool, (int64_t)(from_slot + 1) * want)) {
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
            return *vused_of(s, wl->project, wl->cls) + sched__need(wl) <=
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
    bool fits, progress = true, borrowers;
    int64_t own = 0;
    const struct workload *wl = &s->wls[w];

    /*
     * Borrowers' work can go only if taking the project's own work here
     * first brings it within its guarantee (borrowers_ok): else none of it
     * is a victim here, nor protected from w by its minimum runtime.
     */
    for (int32_t i = 0; i < nd->running.n; i++) {
        if (victim_kind(s, w, nd->running.v[i]) == VK_OWN)
            own += sched__need(&s->wls[nd->running.v[i]]);
    }
    borrowers = *vused_of(s, wl->project, wl->cls) - own + sched__need(wl) <=
                vguaranteed_of(s, wl->project, wl->cls);
    for (int32_t i = 0; i < nd->running.n && n_cand < PICK_MAX; i++) {
        int32_t v = nd->running.v[i];
        enum victim_kind kind = victim_kind(s, w, v);
        const struct workload *vl = &s->wls[v];
        /* A project that does not borrow now will not while this node is judged. */
        if (kind == VK_NONE ||
            (kind == VK_BORROWER && (!borrowers || *vused_of(s, vl->project, vl->cls) <=
                                                       vguaranteed_of(s, vl->project, vl->cls))) ||
            protected_now(s, w, v, now))
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
        pk->lost += lost_ms(vl, now) * sched__need(vl);
        pk->freed += sched__need(vl);
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
/* What orders picks, without their victims: what a ranking of nodes keeps. */
struct rank {
    int32_t node, n_victims;
    bool own;
    int64_t lost, freed;
    struct vkey worst;
};

static struct rank rank_of(const struct pick *p)
{
    return (struct rank){.node = p->node,
                         .n_victims = p->n_victims,
                         .own = p->own,
                         .lost = p->lost,
                         .freed = p->freed,
                         .worst = p->worst};
}

static bool rank_better(const struct rank *a, const struct rank *b)
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

static bool better(const struct pick *a, const struct pick *b)
{
    struct rank x = rank_of(a), y = rank_of(b);
    return rank_better(&x, &y);
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
    for (int32_t i = 0; i < k; i++) {
        int32_t milli = wl->spec.gpu_milli >= WHOLE ? WHOLE : wl->spec.gpu_milli;
        int32_t pool = s->gpus[gpus[i]].pool;
        *vfree_of(s, gpus[i]) -= milli;
        /* Lent by the pool as placement will count it (place__lend). */
        if (pool != NONE && !sched__owns_pool(s, &s->projects[wl->project], pool))
            *vlent_of(s, w, pool) += milli;
    }
    s->vcpu[n] -= wl->spec.cpu_milli;
    s->vmem[n] -= wl->spec.mem_mib;
}

/*
 * Holds for w what its plan borrows of pools with a lending limit: the
 * victims freed and each replica taken on its node in a fresh virtual
 * view, what the pools lend beyond what they did is w's (sched.promises),
 * as its nodes are, until its victims have gone (sched__unpromise).
 */
static void promise_plan(struct sched *s, int32_t w, const int32_t *victims, int32_t n_victims,
                         const struct ivec *nodes)
{
    scratch_fit(s);
    for (int32_t i = 0; i < n_victims; i++)
        virtual_free(s, victims[i], +1);
    for (int32_t r = 0; r < nodes->n; r++)
        vtake_replica(s, w, nodes->v[r]);
    for (int32_t pool = 0; pool < s->n_pools; pool++) {
        int64_t milli;
        if (s->pool_stamp[pool] != s->epoch || s->pools[pool].lending_limit < 0)
            continue;
        milli = s->vlent[pool] - vlent_base(s, w, pool);
        if (milli <= 0)
            continue;
        ivec_push(&s->promises, w);
        ivec_push(&s->promises, pool);
        ivec_push(&s->promises, (int32_t)milli);
        s->pools[pool].promised += milli;
    }
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
        over -= sched__need(&s->wls[best]);
    }
    return true;
}

static void record_preemption(struct sched *s, int32_t w, const struct ivec *victims, int64_t now,
                              struct sched_decisions *d)
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
        sv->gpu_milli = sched__need(v);
        sv->lost_ms = lost_ms(v, now);
        grace = g > grace ? g : grace;
        freed += sched__need(v);
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
        qs->guaranteed = sched__guaranteed_in(s, projects[k], wl->cls);
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

static int cmp_rank(const void *a, const void *b)
{
    const struct rank *x = a, *y = b;
    if (rank_better(x, y))
        return -1;
    if (rank_better(y, x))
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

/* The better pick, ties going to the lower node: the same choice whatever order nodes are seen in.
 */
static bool rank_before(const struct rank *a, const struct rank *b)
{
    return b->node == NONE || rank_better(a, b) || (!rank_better(b, a) && a->node < b->node);
}

static bool pick_before(const struct pick *a, const struct pick *b)
{
    struct rank x = rank_of(a), y = rank_of(b);
    return rank_before(&x, &y);
}

/* ---- where the search looks ---- */

/*
 * Victims are taken in tier order (tier_cmp), and a node's pick is at best
 * as good as its most protected victim. So the search need not judge every
 * node of the class: it visits nodes by their least protected victim, in
 * tier order (a stream of victims: others' opportunistic work, the project
 * borrowing most first, by priority; then its own project's), and stops once
 * the best pick found comes before the next victim's tier, for every node
 * not yet visited holds victims of that tier or later only. Excess only
 * falls while a plan takes victims, so the order stays a lower bound for the
 * later replicas of a gang. What no tier order reaches is visited first: the
 * nodes of pools the preemptor's project owns (anyone's work there may go),
 * nodes with room as they are, and nodes of the work its limit makes go.
 * Where the search must fail it visits everything, as a scan would.
 */
struct stream {
    struct sched *s;
    int32_t w;
    struct borrower {
        int64_t excess;
        int32_t project;
    } * order; /* projects borrowing in the class, most first */
    int32_t n_order, next_order;
    bool own_done;
    int64_t now;
    /*
     * The victims of one excess, by priority, then by what taking one alone
     * would cost (freed, work lost, its lowest node: the order picks of one
     * victim are ranked in), so that a tier can be left early (visit_stream).
     */
    struct victim {
        int32_t priority, v, node;
        int64_t need, lost;
    } * group;
    int32_t n_group, cap_group, next;
    int rank;       /* of the group: 0 others' opportunistic work, 2 its own */
    int64_t excess; /* of the group */
};

static int cmp_borrower(const void *a, const void *b)
{
    const struct borrower *x = a, *y = b;
    if (x->excess != y->excess)
        return x->excess > y->excess ? -1 : 1;
    return x->project < y->project ? -1 : x->project > y->project;
}

static int cmp_victim(const void *a, const void *b)
{
    const struct victim *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority < y->priority ? -1 : 1;
    if (x->need != y->need)
        return x->need < y->need ? -1 : 1;
    if (x->lost != y->lost)
        return x->lost < y->lost ? -1 : 1;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->v < y->v ? -1 : x->v > y->v;
}

static void stream_init(struct stream *st, struct sched *s, int32_t w, int64_t now)
{
    const struct workload *wl = &s->wls[w];
    memset(st, 0, sizeof(*st));
    st->s = s;
    st->w = w;
    st->now = now;
    st->order = xcalloc((size_t)s->n_projects + 1, sizeof(*st->order));
    for (int32_t p = 0; p < s->n_projects; p++) {
        const struct quota *q = sched__quota(&s->projects[p], wl->cls, false);
        int64_t excess;
        if (p == wl->project || !q || q->p2_run.n == 0)
            continue;
        /* A borrower's work goes only while its project borrows (borrower_allowed). */
        excess = *vused_of(s, p, wl->cls) - vguaranteed_of(s, p, wl->cls);
        if (excess > 0)
            st->order[st->n_order++] = (struct borrower){excess, p};
    }
    qsort(st->order, (size_t)st->n_order, sizeof(*st->order), cmp_borrower);
}

static void group_add(struct stream *st, const struct quota *q)
{
    ALLOC_GROW(st->group, st->n_group + q->p2_run.n, st->cap_group);
    for (int32_t i = 0; i < q->p2_run.n; i++) {
        const struct workload *vl = &st->s->wls[q->p2_run.v[i]];
        int32_t node = INT32_MAX;
        for (int32_t k = 0; k < vl->n_assigns; k++)
            node = vl->at[2 * k] < node ? vl->at[2 * k] : node;
        st->group[st->n_group++] = (struct victim){.priority = vl->spec.priority,
                                                   .v = q->p2_run.v[i],
                                                   .node = node,
                                                   .need = sched__need(vl),
                                                   .lost = lost_ms(vl, st->now) * sched__need(vl)};
    }
}

/* The next tier's victims are group[next ..]; false when the stream is done. */
static bool stream_peek(struct stream *st, struct vkey *ret_tier)
{
    struct sched *s = st->s;
    const struct workload *wl = &s->wls[st->w];
    while (st->next >= st->n_group) {
        st->n_group = st->next = 0;
        if (st->next_order < st->n_order) {
            int64_t excess = st->order[st->next_order].excess;
            st->rank = 0;
            st->excess = excess;
            while (st->next_order < st->n_order && st->order[st->next_order].excess == excess)
                group_add(st, sched__quota(&s->projects[st->order[st->next_order++].project],
                                           wl->cls, false));
        } else if (!st->own_done) {
            const struct quota *q = sched__quota(&s->projects[wl->project], wl->cls, false);
            st->own_done = true;
            st->rank = 2;
            st->excess =
                *vused_of(s, wl->project, wl->cls) - vguaranteed_of(s, wl->project, wl->cls);
            if (q)
                group_add(st, q);
        } else {
            return false;
        }
        if (st->n_group > 1)
            qsort(st->group, (size_t)st->n_group, sizeof(*st->group), cmp_victim);
    }
    *ret_tier = (struct vkey){
        .rank = st->rank, .excess = st->excess, .priority = st->group[st->next].priority};
    return true;
}

static void stream_release(struct stream *st)
{
    free(st->order);
    free(st->group);
}

/* One victim search for one plan: the nodes seen, the best pick so far, and the ranking. */
struct search {
    struct sched *s;
    int32_t w;
    int64_t block, now;
    struct pick best;
    struct rank *ranked; /* nodes seen that fit, best first once sorted (gangs only) */
    int32_t n_ranked, cap_ranked;
    bool gang;
    bool scan;      /* every node of the class or block (visit_all), no stream */
    bool streaming; /* stream initialised */
    struct stream stream;
};

/* Judges node n for one replica, once per plan. */
static void visit(struct search *sr, int32_t n)
{
    struct sched *s = sr->s;
    struct pick cur;
    if (s->node_seen[n] == s->seen_epoch)
        return;
    s->node_seen[n] = s->seen_epoch;
    s->stats.victim_nodes++;
    if ((sr->block && s->nodes[n].block_id != sr->block) || !place__node_usable(s, sr->w, n) ||
        !best_pick_on(s, sr->w, n, sr->now, &cur))
        return;
    if (pick_before(&cur, &sr->best))
        sr->best = cur;
    if (sr->gang) {
        ALLOC_GROW(sr->ranked, sr->n_ranked + 1, sr->cap_ranked);
        sr->ranked[sr->n_ranked++] = rank_of(&cur);
    }
}

static void visit_holder(struct search *sr, int32_t v)
{
    const struct workload *vl = &sr->s->wls[v];
    for (int32_t k = 0; k < vl->n_assigns; k++)
        visit(sr, vl->at[2 * k]);
}

/*
 * The nodes no tier order reaches: those of pools w's project owns and every
 * node of the work running there (taking it frees its other nodes too, and
 * so does taking its work on such nodes not ready), nodes with room as they
 * are, and the nodes of the limit's victims.
 */
static void visit_first(struct search *sr, const struct ivec *limit_victims)
{
    struct sched *s = sr->s;
    const struct workload *wl = &s->wls[sr->w];
    const struct cls *c = &s->classes[wl->cls];
    const struct project *pr = &s->projects[wl->project];
    /* A replica may take whole devices from several slots (pools) of one node: any free one counts.
     */
    bool room =
        place__any_room(s, wl->cls, wl->spec.gpu_milli < WHOLE ? wl->spec.gpu_milli : WHOLE);

    for (int32_t i = 0; i < limit_victims->n; i++)
        visit_holder(sr, limit_victims->v[i]);
    for (int32_t pool = NONE; pool < s->n_pools; pool++) {
        const struct bin *bn = place__bin(s, wl->cls, pool);
        bool own = pool != NONE && sched__owns_pool(s, pr, pool);
        if (!own && !room)
            continue;
        for (int32_t b = own ? 0 : 1; b <= c->max_gpus_per_node; b++) {
            for (int32_t sl = bn->whole_head[b]; sl != NONE; sl = s->slots[sl].next) {
                const struct ivec *running = &s->nodes[s->slots[sl].node].running;
                visit(sr, s->slots[sl].node);
                for (int32_t i = 0; own && i < running->n; i++) {
                    if (s->wls[running->v[i]].cls == wl->cls)
                        visit_holder(sr, running->v[i]);
                }
            }
        }
        for (int32_t b = wl->spec.gpu_milli / (WHOLE / SHARE_BUCKETS);
             room && wl->spec.gpu_milli < WHOLE && b < SHARE_BUCKETS; b++) {
            for (int32_t g = bn->share_head[b]; g != NONE; g = s->gpus[g].snext)
                visit(sr, s->gpus[g].node);
        }
    }
    /*
     * Work on its pools' devices of nodes not ready (in no bin) is the
     * owner's to take too, and taking it frees its replicas on ready nodes.
     */
    for (int32_t i = 0; i < c->unready.n; i++) {
        const struct slot *st = &s->slots[c->unready.v[i]];
        const struct ivec *running = &s->nodes[st->node].running;
        if (st->pool == NONE || !sched__owns_pool(s, pr, st->pool))
            continue;
        for (int32_t k = 0; k < running->n; k++) {
            if (s->wls[running->v[k]].cls == wl->cls)
                visit_holder(sr, running->v[k]);
        }
    }
}

/* Visits victims' nodes in tier order until the best pick comes before the next tier. */
/*
 * Whether w's project, admitted now, would be beyond its guarantee: then a
 * borrower's work is a victim only on a node where taking the project's own
 * opportunistic work first brings it within (borrowers_ok), so every pick
 * lies on a node of its own work, its pools, or room as it is.
 */
static bool beyond_guarantee(struct sched *s, int32_t w)
{
    const struct workload *wl = &s->wls[w];
    return *vused_of(s, wl->project, wl->cls) + sched__need(wl) >
           vguaranteed_of(s, wl->project, wl->cls);
}

/* Every node of w's project's own opportunistic work in the class. */
static void visit_own(struct search *sr)
{
    const struct workload *wl = &sr->s->wls[sr->w];
    const struct quota *q = sched__quota(&sr->s->projects[wl->project], wl->cls, false);
    for (int32_t i = 0; q && i < q->p2_run.n; i++)
        visit_holder(sr, q->p2_run.v[i]);
}

/*
 * Whether taking v alone, on a node not of w's own pools, could come before
 * the best pick of one victim of the same tier (see better()).
 */
static bool alone_could_win(const struct pick *best, const struct victim *v)
{
    if (v->need != best->freed)
        return v->need < best->freed;
    if (best->own)
        return false;
    if (v->lost != best->lost)
        return v->lost < best->lost;
    return v->node < best->node;
}

/*
 * Whether taking v alone could make room for one replica of w on one of v's
 * nodes: what v holds there and what is free there (class devices, in
 * milli) add up to what the replica asks.
 */
static bool alone_could_fit(const struct sched *s, int32_t w, int32_t v)
{
    const struct workload *wl = &s->wls[w], *vl = &s->wls[v];
    for (int32_t i = 0; i < vl->n_assigns; i++) {
        int32_t n = vl->at[2 * i];
        int64_t room = 0;
        if (i > 0 && vl->at[2 * (i - 1)] == n)
            continue;
        for (int32_t k = i; k < vl->n_assigns && vl->at[2 * k] == n; k++)
            room += vl->assigns[k].milli;
        for (int32_t k = 0; k < s->nodes[n].slots.n; k++) {
            const struct slot *st = &s->slots[s->nodes[n].slots.v[k]];
            for (int32_t g = 0; st->cls == wl->cls && g < st->gpus.n; g++)
                room += s->gpus[st->gpus.v[g]].free;
        }
        if (room >= wl->spec.gpu_milli)
            return true;
    }
    return false;
}

/*
 * Visits victims' nodes in tier order until the best pick comes before the
 * next tier. Within a tier, a pick of one victim beats any of several, so
 * the victims that could make room alone are visited first, in the order
 * such picks are ranked: once the best is one of them, the first that
 * cannot beat it ends the search; the others are visited only when no
 * victim of the tier made room alone.
 */
static void visit_stream(struct search *sr)
{
    struct vkey tier;
    while (stream_peek(&sr->stream, &tier)) {
        struct stream *st = &sr->stream;
        int32_t end = st->next;
        if (sr->best.node != NONE &&
            (sr->best.n_victims == 0 || tier_cmp(&sr->best.worst, &tier) < 0))
            return;
        while (end < st->n_group && st->group[end].priority == tier.priority)
            end++;
        for (int32_t i = st->next; i < end; i++) {
            if (sr->best.node != NONE && sr->best.n_victims == 1 &&
                tier_cmp(&sr->best.worst, &tier) == 0 && !alone_could_win(&sr->best, &st->group[i]))
                return;
            if (alone_could_fit(sr->s, sr->w, st->group[i].v))
                visit_holder(sr, st->group[i].v);
        }
        if (sr->best.node != NONE && sr->best.n_victims == 1 &&
            tier_cmp(&sr->best.worst, &tier) == 0)
            return;
        for (; st->next < end; st->next++)
            visit_holder(sr, st->group[st->next].v);
    }
}

/*
 * Every node of the class, or of the block: the search as a scan (for
 * cfg.exhaustive, and for a block, whose few nodes a scan judges sooner
 * than a stream over the whole class would find them).
 */
static void visit_all(struct search *sr)
{
    struct sched *s = sr->s;
    const struct workload *wl = &s->wls[sr->w];
    const struct cls *c = &s->classes[wl->cls];
    const int32_t *slots = c->slots.v;
    int32_t n_slots = c->slots.n;
    if (sr->block) {
        int32_t bi = place__block_index(s, wl->cls, sr->block);
        slots = c->block_slots + c->block_start[bi];
        n_slots = c->block_start[bi + 1] - c->block_start[bi];
    }
    for (int32_t i = 0; i < n_slots; i++)
        visit(sr, s->slots[slots[i]].node);
}

/*
 * Goes on looking beyond the nodes visited first: only at the nodes of the
 * project's own work while it would be beyond its guarantee, else down the
 * stream of victims in tier order.
 */
static void search_on(struct search *sr)
{
    if (beyond_guarantee(sr->s, sr->w)) {
        visit_own(sr);
        return;
    }
    if (!sr->streaming) {
        stream_init(&sr->stream, sr->s, sr->w, sr->now);
        sr->streaming = true;
    }
    visit_stream(sr);
}

/*
 * The best node for replica r > 0 of a gang. A node can only have got better
 * if it hosts a victim chosen since (its devices were freed); every other
 * node seen is at best as good as in the ranking. So re-check those nodes,
 * walk the ranking until nothing left can win, then go on down the stream.
 */
static void search_next_replica(struct search *sr, const struct ivec *victims)
{
    struct sched *s = sr->s;
    struct pick cur;
    int32_t seen = sr->n_ranked;
    sr->best = (struct pick){.node = NONE};
    for (int32_t v = 0; v < victims->n; v++) {
        const struct workload *vl = &s->wls[victims->v[v]];
        for (int32_t k = 0; k < vl->n_assigns; k++) {
            int32_t n = vl->at[2 * k];
            if (place__node_usable(s, sr->w, n) &&
                (!sr->block || s->nodes[n].block_id == sr->block) &&
                best_pick_on(s, sr->w, n, sr->now, &cur) && pick_before(&cur, &sr->best))
                sr->best = cur;
        }
    }
    for (int32_t i = 0; i < seen; i++) {
        struct rank best = rank_of(&sr->best);
        if (sr->best.node != NONE && rank_before(&best, &sr->ranked[i]))
            break;
        if (best_pick_on(s, sr->w, sr->ranked[i].node, sr->now, &cur) &&
            pick_before(&cur, &sr->best))
            sr->best = cur;
    }
    if (!sr->scan)
        search_on(sr);
}

/* Searches as for a first replica: nothing seen, nothing ranked. */
static void search_afresh(struct search *sr, const struct ivec *victims)
{
    struct sched *s = sr->s;
    if (++s->seen_epoch == 0) {
        memset(s->node_seen, 0, s->scratch_nodes * sizeof(uint32_t));
        s->seen_epoch = 1;
    }
    if (sr->streaming)
        stream_release(&sr->stream);
    sr->streaming = false;
    sr->n_ranked = 0;
    sr->best = (struct pick){.node = NONE};
    if (sr->scan) {
        visit_all(sr);
    } else {
        visit_first(sr, victims);
        search_on(sr);
    }
}

/*
 * Plans victims for every replica of w, optionally within one topology block:
 * first its own P2 work that must make way for its limit, then per replica
 * the node where the least protected victims make room, then drops the
 * victims the whole plan turns out not to need. Returns false when no plan
 * exists; the plan is in victims and nodes, and its cost in *ret_lost.
 */
static bool plan_reclaim(struct sched *s, int32_t w, int64_t over_limit, int64_t block, int64_t now,
                         struct ivec *victims, struct ivec *nodes, int64_t *ret_lost)
{
    struct workload *wl = &s->wls[w];
    struct ivec kinds = {0};
    struct search sr = {.s = s, .w = w, .block = block, .now = now, .gang = wl->spec.replicas > 1};
    int32_t n_limit;
    bool ok = true, beyond = false;

    scratch_fit(s);
    victims->n = nodes->n = 0;
    *ret_lost = 0;
    /* Own P2 work that the limit needs gone. */
    if (over_limit > 0 && !pick_for_limit(s, w, over_limit, now, victims))
        return false;
    n_limit = victims->n;
    for (int32_t i = 0; i < n_limit; i++)
        ivec_push(&kinds, VK_OWN);
    if (block && place__block_index(s, wl->cls, block) == NONE) {
        ivec_release(&kinds);
        return false;
    }
    /* A block is scanned: its stream would be the whole class's. */
    sr.scan = s->cfg.exhaustive || block;
    for (int32_t r = 0; r < wl->spec.replicas && ok; r++) {
        /*
         * The first replica searches afresh, and so does a later one once
         * the own work taken for earlier ones brought the project within its
         * guarantee: borrowers' work became victims everywhere, so any node
         * may have got better.
         */
        if (r == 0 || (beyond && !beyond_guarantee(s, w))) {
            search_afresh(&sr, victims);
            beyond = beyond_guarantee(s, w);
        } else {
            search_next_replica(&sr, victims);
        }
        if (sr.gang && sr.n_ranked > 1)
            qsort(sr.ranked, (size_t)sr.n_ranked, sizeof(*sr.ranked), cmp_rank);
        ok = sr.best.node != NONE;
        for (int32_t i = 0; ok && i < sr.best.n_victims; i++) {
            virtual_free(s, sr.best.victims[i], +1);
            ivec_push(victims, sr.best.victims[i]);
            ivec_push(&kinds, sr.best.kinds[i]);
        }
        if (ok) {
            vtake_replica(s, w, sr.best.node);
            ivec_push(nodes, sr.best.node);
        }
    }
    free(sr.ranked);
    if (sr.streaming)
        stream_release(&sr.stream);
    if (!ok) {
        ivec_release(&kinds);
        return false;
    }
    if (sr.gang || n_limit > 0)
        prune_plan(s, w, n_limit, victims, &kinds, nodes);
    ivec_release(&kinds);
    for (int32_t i = 0; i < victims->n; i++)
        *ret_lost += lost_ms(&s->wls[victims->v[i]], now) * sched__need(&s->wls[victims->v[i]]);
    return victims->n > 0; /* no victim: it fits as it is, placement will take it */
}

/*
 * Finds the fewest, cheapest victims that make room for every replica of the
 * P1 workload w (and bring its project under its limit); on success marks
 * them preempting, holds the freed nodes for w and records the decision.
 * A gang that must stay in one topology block gets the block whose plan
 * costs least.
 */
bool reclaim__plan(struct sched *s, int32_t w, int64_t over_limit, int64_t now,
                   struct sched_decisions *d)
{
    struct workload *wl = &s->wls[w];
    struct ivec victims = {0}, nodes = {0}, best_victims = {0}, best_nodes = {0};
    bool found = false;
    int64_t best_lost = 0;

    s->stats.victim_searches++;

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
        promise_plan(s, w, best_victims.v, best_victims.n, &best_nodes);
        wl->victims_pending = best_victims.n;
        wl->reclaim_ready = false;
        wl->reason = (struct sched_reason){.code = SCHED_WAIT_RECLAIM,
                                           .class_id = wl->spec.class_id,
                                           .need = sched__need(wl),
                                           .per_replica = wl->spec.gpu_milli,
                                           .count = best_victims.n};
    } else if (s->protected_until) {
        /* Work in its way stops being protected then: w is looked at again. */
        sched__wake_at(s, s->protected_until, wl->project);
    }
    ivec_release(&victims);
    ivec_release(&nodes);
    ivec_release(&best_victims);
    ivec_release(&best_nodes);
    return found;
}

/*
 * One replica after another, the first node (in first[], the nodes where
 * the decision made room, then the class's or block's nodes) that w may use
 * and its replica fits on with the victims (n of them, still stopping)
 * gone. False when some replica finds none.
 */
static bool restored_plan(struct sched *s, int32_t w, const int32_t *victims, int32_t n,
                          const int32_t *first, int32_t n_first, int64_t block, struct ivec *nodes)
{
    const struct workload *wl = &s->wls[w];
    const struct cls *c = &s->classes[wl->cls];
    int32_t gpus[SCHED_MAX_GPUS_PER_NODE];

    scratch_fit(s); /* a fresh virtual view */
    for (int32_t i = 0; i < n; i++)
        virtual_free(s, victims[i], +1);
    nodes->n = 0;
    for (int32_t r = 0; r < wl->spec.replicas; r++) {
        int32_t pick = NONE;
        for (int32_t i = 0; i < n_first && pick == NONE; i++) {
            int32_t nd = first[i];
            if ((!block || s->nodes[nd].block_id == block) && place__node_usable(s, w, nd) &&
                vfits(s, w, nd, wl->cls, gpus))
                pick = nd;
        }
        for (int32_t i = 0; i < c->slots.n && pick == NONE; i++) {
            int32_t nd = s->slots[c->slots.v[i]].node;
            if ((!block || s->nodes[nd].block_id == block) && place__node_usable(s, w, nd) &&
                vfits(s, w, nd, wl->cls, gpus))
                pick = nd;
        }
        if (pick == NONE)
            return false;
        vtake_replica(s, w, pick);
        ivec_push(nodes, pick);
    }
    return true;
}

/*
 * Holds for w the nodes restored_plan finds (and what that plan borrows of
 * pools with a lending limit), else the nodes first[].
 */
static void hold_restored_plan(struct sched *s, int32_t w, const int32_t *victims, int32_t n,
                               const int32_t *first, int32_t n_first)
{
    const struct workload *wl = &s->wls[w];
    struct ivec nodes = {0};
    bool found = false;

    /*
     * The decision held the nodes its replicas were planned on, which need
     * not be the victims' (victims its limit made go run elsewhere, a
     * victim's node may lack the CPU or memory); holding only the victims'
     * would let other work take the room it counts on in the meantime.
     */
    if (wl->spec.same_block && wl->spec.replicas > 1) {
        int32_t n_blocks;
        const int64_t *blocks = place__blocks(s, wl->cls, &n_blocks);
        for (int32_t k = 0; k < n_blocks && !found; k++)
            found = restored_plan(s, w, victims, n, first, n_first, blocks[k], &nodes);
    } else {
        found = restored_plan(s, w, victims, n, first, n_first, 0, &nodes);
    }
    if (found) {
        promise_plan(s, w, victims, n, &nodes);
    } else {
        /* The fleet changed under it: the victims' nodes, as before. */
        nodes.n = 0;
        for (int32_t i = 0; i < n_first; i++)
            ivec_push(&nodes, first[i]);
    }
    for (int32_t i = 0; i < nodes.n; i++)
        pass__reserve_node(s, w, nodes.v[i]);
    ivec_release(&nodes);
}

void reclaim__hold_restored(struct sched *s, int32_t w, const int32_t *victims, int32_t n)
{
    struct ivec first = {0};

    if (s->wls[w].cls == NONE || n == 0)
        return;
    /* Where the decision made room: the victims' nodes. */
    for (int32_t i = 0; i < n; i++) {
        const struct workload *vl = &s->wls[victims[i]];
        for (int32_t k = 0; k < vl->n_assigns; k++)
            ivec_push(&first, vl->at[2 * k]);
    }
    hold_restored_plan(s, w, victims, n, first.v, first.n);
    ivec_release(&first);
}

void reclaim__hold_ready(struct sched *s, int32_t w, const int32_t *nodes, int32_t n)
{
    if (s->wls[w].cls == NONE)
        return;
    /* Its victims have gone: the room they left is free as it stands. */
    hold_restored_plan(s, w, NULL, 0, nodes, n);
}
