/* SPDX-License-Identifier: Apache-2.0 */
/*
 * place.c: where work can go. Free capacity is indexed so that best-fit is
 * a bucket lookup, not a scan of the fleet: per GPU class, each node's
 * devices of that class (a slot) sit in a list by their number of free whole
 * devices, and partially used devices sit in lists by free milli (in steps of
 * 50). A whole-GPU replica takes the first usable node of the smallest
 * bucket that fits; a share takes the fullest partially used device that
 * fits, else a free device on the fullest node. Gangs place replica by
 * replica and undo everything when one does not fit.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "sched/sched-int.h"

#define SHARE_STEP (WHOLE / SHARE_BUCKETS)

/* ---- the index ---- */

struct bin *place__bin(const struct sched *s, int32_t cls, int32_t pool)
{
    return &s->classes[cls].bins[pool + 1];
}

struct bin_room *place__room(const struct sched *s, int32_t cls, int32_t pool)
{
    return &s->classes[cls].rooms[pool + 1];
}

/*
 * Where a device and its slot sat in their lists (the one before each, NONE:
 * the head) before a trial placement took from the device: undoing the
 * trial puts them back there, so that a placement that failed leaves the
 * lists, and with them the next placement's choice among equals, as they were.
 */
struct spot {
    int32_t gpu_prev, slot_prev;
};

/* Where one assignment of a trial is (device NONE: none), and where its device sat before. */
struct placed {
    int32_t node, gpu;
    struct spot was;
};

/* Links slot sl into its list after slot prev (NONE: at the head). */
static void slot_link_after(struct sched *s, int32_t sl, int32_t prev)
{
    struct slot *st = &s->slots[sl];
    struct bin *bn = place__bin(s, st->cls, st->pool);
    int32_t b = st->free_whole;
    if (st->linked || s->nodes[st->node].state != SCHED_NODE_READY)
        return;
    st->prev = prev;
    st->next = prev != NONE ? s->slots[prev].next : bn->whole_head[b];
    if (st->next != NONE)
        s->slots[st->next].prev = sl;
    if (prev != NONE)
        s->slots[prev].next = sl;
    else
        bn->whole_head[b] = sl;
    st->linked = true;
    s->classes[st->cls].whole_count[b]++;
    place__room(s, st->cls, st->pool)->whole_count[b]++;
}

void place__slot_link(struct sched *s, int32_t sl)
{
    slot_link_after(s, sl, NONE);
}

void place__slot_unlink(struct sched *s, int32_t sl)
{
    struct slot *st = &s->slots[sl];
    struct bin *bn = place__bin(s, st->cls, st->pool);
    if (!st->linked)
        return;
    if (st->prev != NONE)
        s->slots[st->prev].next = st->next;
    else
        bn->whole_head[st->free_whole] = st->next;
    if (st->next != NONE)
        s->slots[st->next].prev = st->prev;
    st->prev = st->next = NONE;
    st->linked = false;
    s->classes[st->cls].whole_count[st->free_whole]--;
    place__room(s, st->cls, st->pool)->whole_count[st->free_whole]--;
}

/* Links device g into its share list after device prev (NONE: at the head). */
static void gpu_link_after(struct sched *s, int32_t g, int32_t prev)
{
    struct gpu *gp = &s->gpus[g];
    struct bin *c = place__bin(s, s->slots[gp->slot].cls, gp->pool);
    int32_t b;
    if (gp->sbucket != NONE || gp->free <= 0 || gp->free >= WHOLE ||
        s->nodes[gp->node].state != SCHED_NODE_READY)
        return;
    b = gp->free / SHARE_STEP;
    gp->sbucket = b;
    s->classes[s->slots[gp->slot].cls].share_count[b]++;
    gp->sprev = prev;
    gp->snext = prev != NONE ? s->gpus[prev].snext : c->share_head[b];
    if (gp->snext != NONE)
        s->gpus[gp->snext].sprev = g;
    if (prev != NONE)
        s->gpus[prev].snext = g;
    else
        c->share_head[b] = g;
}

void place__gpu_link(struct sched *s, int32_t g)
{
    gpu_link_after(s, g, NONE);
}

void place__gpu_unlink(struct sched *s, int32_t g)
{
    struct gpu *gp = &s->gpus[g];
    struct bin *c = place__bin(s, s->slots[gp->slot].cls, gp->pool);
    if (gp->sbucket == NONE)
        return;
    if (gp->sprev != NONE)
        s->gpus[gp->sprev].snext = gp->snext;
    else
        c->share_head[gp->sbucket] = gp->snext;
    if (gp->snext != NONE)
        s->gpus[gp->snext].sprev = gp->sprev;
    s->classes[s->slots[gp->slot].cls].share_count[gp->sbucket]--;
    gp->sbucket = gp->sprev = gp->snext = NONE;
}

/*
 * Moves milli between a device and its users, keeping every index right.
 * Where the device and its slot sat in their lists before is written to
 * *was (if given); they go back to the places *at gives (if given), else to
 * the heads of their lists.
 */
static void gpu_adjust(struct sched *s, int32_t g, int32_t delta, struct spot *was,
                       const struct spot *at)
{
    struct gpu *gp = &s->gpus[g];
    struct slot *st = &s->slots[gp->slot];
    bool ready = s->nodes[gp->node].state == SCHED_NODE_READY;
    bool was_whole = gp->free == WHOLE;

    if (was)
        *was = (struct spot){.gpu_prev = gp->sprev, .slot_prev = st->prev};
    place__gpu_unlink(s, g);
    gp->free += delta;
    assert(gp->free >= 0 && gp->free <= WHOLE);
    gpu_link_after(s, g, at ? at->gpu_prev : NONE);
    if (ready) {
        s->classes[st->cls].free += delta;
        place__room(s, st->cls, st->pool)->free += delta;
    }
    if (was_whole != (gp->free == WHOLE)) {
        struct cls *c = &s->classes[st->cls];
        place__slot_unlink(s, gp->slot);
        st->free_whole += was_whole ? -1 : 1;
        slot_link_after(s, gp->slot, at ? at->slot_prev : NONE);
        if (ready && c->blocks_gen == s->fleet_generation + 1 && st->block != NONE)
            c->block_free[st->block] += was_whole ? -1 : 1;
    }
}

void place__gpu_take(struct sched *s, int32_t g, int32_t milli)
{
    gpu_adjust(s, g, -milli, NULL, NULL);
}

void place__gpu_give(struct sched *s, int32_t g, int32_t milli)
{
    gpu_adjust(s, g, milli, NULL, NULL);
}

/* ---- eligibility ---- */

bool place__node_fits_labels(const struct node *n, const struct sched_workload_spec *spec)
{
    for (int i = 0; i < spec->n_selector; i++) {
        bool found = false;
        for (int k = 0; k < n->n_labels && !found; k++)
            found = n->labels[k] == spec->selector[i];
        if (!found)
            return false;
    }
    return true;
}

/* Whether node n holds devices of a pool project a owns and project b does not. */
static bool node_owned_by_not(const struct sched *s, int32_t n, int32_t a, int32_t b)
{
    const struct node *nd = &s->nodes[n];
    for (int32_t i = 0; i < nd->slots.n; i++) {
        int32_t pool = s->slots[nd->slots.v[i]].pool;
        if (pool != NONE && sched__owns_pool(s, &s->projects[a], pool) &&
            !sched__owns_pool(s, &s->projects[b], pool))
            return true;
    }
    return false;
}

bool place__node_usable(const struct sched *s, int32_t w, int32_t n)
{
    const struct node *nd = &s->nodes[n];
    const struct workload *wl = &s->wls[w];
    const struct workload *holder;
    if (nd->state != SCHED_NODE_READY || !place__node_fits_labels(nd, &wl->spec))
        return false;
    if (nd->reserved_for == NONE || nd->reserved_for == w)
        return true;
    /*
     * A node held for other work is off limits, except P2 holds for P1 work,
     * and a borrower's holds on its pool for the owner's P1 work (an owner
     * can always take its pool back).
     */
    holder = &s->wls[nd->reserved_for];
    return wl->runs_as == SCHED_P1 &&
           (holder->runs_as == SCHED_P2 || (holder->project != wl->project &&
                                            node_owned_by_not(s, n, wl->project, holder->project)));
}

void place__lend(struct sched *s, int32_t w, int32_t g, int32_t milli, int sign)
{
    int32_t pool = s->gpus[g].pool;
    if (pool != NONE && !sched__owns_pool(s, &s->projects[s->wls[w].project], pool))
        s->pools[pool].lent += sign * milli;
}

int64_t place__promised_to(const struct sched *s, int32_t w, int32_t pool)
{
    int64_t milli = 0;
    for (int32_t i = 0; s->pools[pool].promised > 0 && i + 2 < s->promises.n; i += 3) {
        if (s->promises.v[i] == w && s->promises.v[i + 1] == pool)
            milli += s->promises.v[i + 2];
    }
    return milli;
}

bool place__may_lend(const struct sched *s, int32_t w, int32_t pool, int64_t milli)
{
    const struct pool *pl;
    if (pool == NONE)
        return true;
    pl = &s->pools[pool];
    if (pl->lending_limit < 0 || sched__owns_pool(s, &s->projects[s->wls[w].project], pool))
        return true;
    /* Held for preemptors waiting on their victims: lent already, except to the one it is for. */
    return pl->lent + pl->promised - place__promised_to(s, w, pool) + milli <= pl->lending_limit;
}

/* One device of a replica of w: its whole share, or one whole device. */
static int32_t per_device(const struct workload *wl)
{
    return wl->spec.gpu_milli >= WHOLE ? WHOLE : wl->spec.gpu_milli;
}

bool place__gpu_usable(const struct sched *s, int32_t w, int32_t g)
{
    const struct workload *wl = &s->wls[w];
    int32_t pool = s->gpus[g].pool;
    if (!sched__project_may_use_pool(s, &s->projects[wl->project], pool) ||
        !place__may_lend(s, w, pool, per_device(wl)))
        return false;
    if (wl->spec.n_pools == 0)
        return true;
    for (int i = 0; i < wl->spec.n_pools; i++) {
        if (pool != NONE && s->pools[pool].id == wl->spec.pool_ids[i])
            return true;
    }
    return false;
}

static bool node_has_room(const struct node *nd, const struct sched_workload_spec *spec)
{
    return (nd->cpu_cap == 0 || nd->cpu_free >= spec->cpu_milli) &&
           (nd->mem_cap == 0 || nd->mem_free >= spec->mem_mib);
}

/* ---- one replica ---- */

struct gang {
    int32_t w;
    int64_t block; /* 0: any */
    int tier;      /* 0: pools its project owns; 1: those and no pool; 2: any it may use */
    int32_t *bins; /* pools (NONE: no pool) whose devices the gang may use */
    int32_t n_bins;
    struct sched_assign *as;
    struct placed *pl; /* per assignment in as: where it is, and where its device sat before */
    int32_t n_as;
    int32_t *replica_node;
};

/* Records an assignment and where it is, so that undoing it looks nothing up. */
static void record(struct sched *s, struct gang *gg, int32_t replica, int32_t n, int32_t g,
                   int32_t milli)
{
    gg->pl[gg->n_as].node = n;
    gg->pl[gg->n_as].gpu = g;
    gg->as[gg->n_as++] = (struct sched_assign){.replica = replica,
                                               .node_id = s->nodes[n].id,
                                               .gpu_id = g != NONE ? s->gpus[g].id : 0,
                                               .milli = milli};
}

static bool bin_usable(const struct gang *gg, int32_t pool);
static int32_t block_index(const struct cls *c, int64_t b);

/* A device this gang may take: one of its bins. */
static bool gpu_ok(const struct sched *s, const struct gang *gg, int32_t g)
{
    return bin_usable(gg, s->gpus[g].pool);
}

static bool node_ok(const struct sched *s, const struct gang *gg, int32_t n)
{
    const struct node *nd = &s->nodes[n];
    return (gg->block == 0 || nd->block_id == gg->block) && place__node_usable(s, gg->w, n) &&
           node_has_room(nd, &s->wls[gg->w].spec);
}

static void take_node_room(struct sched *s, struct gang *gg, int32_t replica, int32_t n)
{
    const struct sched_workload_spec *sp = &s->wls[gg->w].spec;
    s->nodes[n].cpu_free -= sp->cpu_milli;
    s->nodes[n].mem_free -= sp->mem_mib;
    gg->replica_node[replica] = n;
}

static void assign(struct sched *s, struct gang *gg, int32_t replica, int32_t g, int32_t milli)
{
    gpu_adjust(s, g, -milli, &gg->pl[gg->n_as].was, NULL);
    place__lend(s, gg->w, g, milli, +1);
    record(s, gg, replica, s->gpus[g].node, g, milli);
}

/* The pools (NONE: no pool) a project may use, cached per fleet generation. */
static const struct ivec *project_pools(struct sched *s, int32_t project)
{
    struct project *p = &s->projects[project];
    if (p->pools_gen != s->fleet_generation + 1) {
        p->pools.n = 0;
        for (int32_t pool = NONE; pool < s->n_pools; pool++) {
            if (sched__project_may_use_pool(s, p, pool))
                ivec_push(&p->pools, pool);
        }
        p->pools_gen = s->fleet_generation + 1;
    }
    return &p->pools;
}

/* Which bins a gang may use: pools its project may use, its filter allows, and its tier allows. */
static void gang_bins(struct sched *s, struct gang *gg)
{
    const struct workload *wl = &s->wls[gg->w];
    const struct ivec *pools = project_pools(s, wl->project);
    const struct project *pr = &s->projects[wl->project];
    gg->n_bins = 0;
    for (int32_t i = 0; i < pools->n; i++) {
        int32_t p = pools->v[i];
        bool ok = wl->spec.n_pools == 0;
        for (int k = 0; k < wl->spec.n_pools && !ok; k++)
            ok = p != NONE && s->pools[p].id == wl->spec.pool_ids[k];
        if (ok && gg->tier == 0)
            ok = p != NONE && sched__owns_pool(s, pr, p);
        else if (ok && gg->tier == 1)
            ok = p == NONE || sched__owns_pool(s, pr, p);
        if (ok)
            gg->bins[gg->n_bins++] = p;
    }
}

bool place__any_room(const struct sched *s, int32_t cls, int32_t milli)
{
    const struct cls *c = &s->classes[cls];
    int32_t k = milli >= WHOLE ? milli / WHOLE : 1;
    for (int32_t b = k; b <= s->classes[cls].max_gpus_per_node; b++) {
        if (c->whole_count[b] > 0)
            return true;
    }
    if (milli < WHOLE) {
        for (int32_t b = milli / SHARE_STEP; b < SHARE_BUCKETS; b++) {
            if (c->share_count[b] > 0)
                return true;
        }
    }
    return false;
}

static bool bin_usable(const struct gang *gg, int32_t pool)
{
    for (int32_t i = 0; i < gg->n_bins; i++) {
        if (gg->bins[i] == pool)
            return true;
    }
    return false;
}

static void take_whole(struct sched *s, struct gang *gg, int32_t replica, int32_t sl, int32_t k)
{
    const struct slot *st = &s->slots[sl];
    take_node_room(s, gg, replica, st->node);
    for (int32_t j = 0, got = 0; got < k; j++) {
        int32_t g = st->gpus.v[j];
        if (s->gpus[g].free == WHOLE) {
            assign(s, gg, replica, g, WHOLE);
            got++;
        }
    }
}

/* k whole devices on one node of the gang's block: best fit over that block's slots. */
static bool place_whole_in_block(struct sched *s, struct gang *gg, int32_t replica, int32_t k)
{
    const struct cls *c = &s->classes[s->wls[gg->w].cls];
    int32_t bi = block_index(c, gg->block), best = NONE;
    if (bi == NONE)
        return false;
    for (int32_t i = c->block_start[bi]; i < c->block_start[bi + 1]; i++) {
        const struct slot *st = &s->slots[c->block_slots[i]];
        if (st->free_whole < k || (best != NONE && st->free_whole >= s->slots[best].free_whole) ||
            !bin_usable(gg, st->pool) || !node_ok(s, gg, st->node) ||
            !place__may_lend(s, gg->w, st->pool, (int64_t)k * WHOLE))
            continue;
        best = c->block_slots[i];
    }
    if (best == NONE)
        return false;
    take_whole(s, gg, replica, best, k);
    return true;
}

/* k whole devices on one node, best fit through the buckets of the usable bins. */
static bool place_whole(struct sched *s, struct gang *gg, int32_t replica, int32_t k)
{
    int32_t cls = s->wls[gg->w].cls;
    if (gg->block != 0)
        return place_whole_in_block(s, gg, replica, k);
    for (int32_t b = k; b <= s->classes[cls].max_gpus_per_node; b++) {
        for (int32_t i = 0; i < gg->n_bins; i++) {
            const struct bin *bn = place__bin(s, cls, gg->bins[i]);
            if (!place__may_lend(s, gg->w, gg->bins[i], (int64_t)k * WHOLE))
                continue;
            for (int32_t sl = bn->whole_head[b]; sl != NONE; sl = s->slots[sl].next) {
                const struct slot *st = &s->slots[sl];
                if (!node_ok(s, gg, st->node))
                    continue;
                take_whole(s, gg, replica, sl, k);
                return true;
            }
        }
    }
    return false;
}

/* A share of one device: the fullest partially used device that fits, else a free one. */
static bool place_share(struct sched *s, struct gang *gg, int32_t replica, int32_t milli)
{
    int32_t cls = s->wls[gg->w].cls;
    for (int32_t b = milli / SHARE_STEP; b < SHARE_BUCKETS; b++) {
        int32_t best = NONE;
        for (int32_t i = 0; i < gg->n_bins; i++) {
            const struct bin *bn = place__bin(s, cls, gg->bins[i]);
            if (!place__may_lend(s, gg->w, gg->bins[i], milli))
                continue;
            for (int32_t g = bn->share_head[b]; g != NONE; g = s->gpus[g].snext) {
                const struct gpu *gp = &s->gpus[g];
                if (gp->free < milli || (best != NONE && gp->free >= s->gpus[best].free))
                    continue;
                if (node_ok(s, gg, gp->node))
                    best = g;
            }
        }
        if (best != NONE) {
            take_node_room(s, gg, replica, s->gpus[best].node);
            assign(s, gg, replica, best, milli);
            return true;
        }
    }
    for (int32_t b = 1; b <= s->classes[cls].max_gpus_per_node; b++) {
        for (int32_t i = 0; i < gg->n_bins; i++) {
            const struct bin *bn = place__bin(s, cls, gg->bins[i]);
            if (!place__may_lend(s, gg->w, gg->bins[i], milli))
                continue;
            for (int32_t sl = bn->whole_head[b]; sl != NONE; sl = s->slots[sl].next) {
                const struct slot *st = &s->slots[sl];
                if (!node_ok(s, gg, st->node))
                    continue;
                for (int32_t j = 0; j < st->gpus.n; j++) {
                    int32_t g = st->gpus.v[j];
                    if (s->gpus[g].free == WHOLE) {
                        take_node_room(s, gg, replica, st->node);
                        assign(s, gg, replica, g, milli);
                        return true;
                    }
                }
            }
        }
    }
    return false;
}

/* Any policy: score every usable node of the class, take the lowest. */
static bool place_by_policy(struct sched *s, struct gang *gg, int32_t replica)
{
    const struct sched_policy *pol = s->cfg.policy;
    const struct workload *wl = &s->wls[gg->w];
    const struct cls *c = &s->classes[wl->cls];
    struct sched_replica_req req = {c->id, wl->spec.gpu_milli, wl->spec.cpu_milli,
                                    wl->spec.mem_mib};
    int32_t best_slot = NONE, k = wl->spec.gpu_milli >= WHOLE ? wl->spec.gpu_milli / WHOLE : 1;
    int64_t best_score = INT64_MAX;
    int best_pick[SCHED_MAX_GPUS_PER_NODE];
    int32_t best_gpus[SCHED_MAX_GPUS_PER_NODE];

    if (!s->view_free) {
        s->view_free = xcalloc(SCHED_MAX_GPUS_PER_NODE, sizeof(int32_t));
        s->view_ids = xcalloc(SCHED_MAX_GPUS_PER_NODE, sizeof(int64_t));
        s->view_gpus = xcalloc(SCHED_MAX_GPUS_PER_NODE, sizeof(int32_t));
        s->view_pick = xcalloc(SCHED_MAX_GPUS_PER_NODE, sizeof(int));
    }
    for (int32_t i = 0; i < c->slots.n; i++) {
        const struct slot *st = &s->slots[c->slots.v[i]];
        const struct node *nd = &s->nodes[st->node];
        const struct bin_room *bn = place__room(s, wl->cls, st->pool);
        struct sched_room room = {st->pool == NONE ? 0 : s->pools[st->pool].id,
                                  bn->free,
                                  bn->capacity,
                                  c->free,
                                  c->capacity,
                                  c->whole_count,
                                  bn->whole_count};
        struct sched_node_view v = {nd->id, nd->cpu_free, nd->cpu_cap, nd->mem_free, nd->mem_cap,
                                    0,      s->view_free, s->view_ids, &room};
        int64_t score;
        if (!node_ok(s, gg, st->node) ||
            !place__may_lend(s, gg->w, st->pool, (int64_t)k * per_device(wl)))
            continue;
        for (int32_t k2 = 0; k2 < st->gpus.n; k2++) {
            int32_t g = st->gpus.v[k2];
            if (!gpu_ok(s, gg, g))
                continue;
            s->view_free[v.n_gpus] = s->gpus[g].free;
            s->view_ids[v.n_gpus] = s->gpus[g].id;
            s->view_gpus[v.n_gpus] = g;
            v.n_gpus++;
        }
        if (v.n_gpus == 0)
            continue;
        score = pol->score(pol, &v, &req, s->view_pick);
        if (score == INT64_MAX ||
            (best_slot != NONE && (score > best_score ||
                                   (score == best_score &&
                                    nd->id > s->nodes[s->slots[best_slot].node].id))))
            continue;
        /* Check the policy's choice: right count, in range, distinct, with room. */
        {
            bool valid = true;
            for (int32_t a = 0; a < k && valid; a++) {
                int pick = s->view_pick[a];
                valid = pick >= 0 && pick < v.n_gpus &&
                        s->view_free[pick] >= (wl->spec.gpu_milli >= WHOLE ? WHOLE
                                                                            : wl->spec.gpu_milli);
                for (int32_t b2 = 0; b2 < a && valid; b2++)
                    valid = s->view_pick[b2] != pick;
            }
            if (!valid)
                continue;
        }
        best_score = score;
        best_slot = c->slots.v[i];
        for (int32_t a = 0; a < k; a++) {
            best_pick[a] = s->view_pick[a];
            best_gpus[a] = s->view_gpus[best_pick[a]];
        }
    }
    if (best_slot == NONE)
        return false;
    take_node_room(s, gg, replica, s->slots[best_slot].node);
    for (int32_t a = 0; a < k; a++)
        assign(s, gg, replica, best_gpus[a], wl->spec.gpu_milli >= WHOLE ? WHOLE
                                                                       : wl->spec.gpu_milli);
    return true;
}

/*
 * CPU-only work under a policy: the policy scores every node with room,
 * seeing all the node's devices (a CPU-only pod beside free GPUs can strand
 * them, which fragmentation-aware policies weigh), and chooses no device.
 */
static bool place_cpu_by_policy(struct sched *s, struct gang *gg, int32_t replica)
{
    const struct sched_policy *pol = s->cfg.policy;
    const struct workload *wl = &s->wls[gg->w];
    struct sched_replica_req req = {0, 0, wl->spec.cpu_milli, wl->spec.mem_mib};
    int32_t best = NONE;
    int64_t best_score = INT64_MAX;

    if (!s->view_free) {
        s->view_free = xcalloc(SCHED_MAX_GPUS_PER_NODE, sizeof(int32_t));
        s->view_ids = xcalloc(SCHED_MAX_GPUS_PER_NODE, sizeof(int64_t));
        s->view_gpus = xcalloc(SCHED_MAX_GPUS_PER_NODE, sizeof(int32_t));
        s->view_pick = xcalloc(SCHED_MAX_GPUS_PER_NODE, sizeof(int));
    }
    for (int32_t n = 0; n < s->n_nodes; n++) {
        const struct node *nd = &s->nodes[n];
        struct sched_node_view v = {nd->id, nd->cpu_free, nd->cpu_cap, nd->mem_free, nd->mem_cap,
                                    0,      s->view_free, s->view_ids, NULL};
        int64_t score;
        if (!node_ok(s, gg, n))
            continue;
        for (int32_t i = 0; i < nd->slots.n; i++) {
            const struct slot *st = &s->slots[nd->slots.v[i]];
            for (int32_t k = 0; k < st->gpus.n && v.n_gpus < SCHED_MAX_GPUS_PER_NODE; k++) {
                s->view_free[v.n_gpus] = s->gpus[st->gpus.v[k]].free;
                s->view_ids[v.n_gpus] = s->gpus[st->gpus.v[k]].id;
                v.n_gpus++;
            }
        }
        score = pol->score(pol, &v, &req, s->view_pick);
        if (score == INT64_MAX ||
            (best != NONE && (score > best_score ||
                              (score == best_score && nd->id > s->nodes[best].id))))
            continue; /* ties: the lower node id */
        best = n;
        best_score = score;
    }
    if (best == NONE)
        return false;
    take_node_room(s, gg, replica, best);
    record(s, gg, replica, best, NONE, 0);
    return true;
}

/* CPU-only: the next node with room, round robin so such work spreads. */
static bool place_cpu(struct sched *s, struct gang *gg, int32_t replica)
{
    for (int32_t i = 0; i < s->n_nodes; i++) {
        int32_t n = (int32_t)((s->cpu_cursor + (uint32_t)i) % (uint32_t)s->n_nodes);
        if (!node_ok(s, gg, n))
            continue;
        s->cpu_cursor = (uint32_t)n + 1;
        take_node_room(s, gg, replica, n);
        record(s, gg, replica, n, NONE, 0);
        return true;
    }
    return false;
}

static bool place_replica(struct sched *s, struct gang *gg, int32_t replica)
{
    const struct workload *wl = &s->wls[gg->w];
    if (wl->cls == NONE)
        return s->cfg.policy ? place_cpu_by_policy(s, gg, replica) : place_cpu(s, gg, replica);
    if (s->cfg.policy)
        return place_by_policy(s, gg, replica);
    if (wl->spec.gpu_milli >= WHOLE)
        return place_whole(s, gg, replica, wl->spec.gpu_milli / WHOLE);
    return place_share(s, gg, replica, wl->spec.gpu_milli);
}

static void undo(struct sched *s, struct gang *gg, int32_t n_replicas)
{
    const struct sched_workload_spec *sp = &s->wls[gg->w].spec;
    /* Last taken first, each back in its place: the lists end as they began. */
    for (int32_t i = gg->n_as - 1; i >= 0; i--) {
        if (gg->as[i].gpu_id) {
            int32_t g = gg->pl[i].gpu;
            gpu_adjust(s, g, gg->as[i].milli, NULL, &gg->pl[i].was);
            place__lend(s, gg->w, g, gg->as[i].milli, -1);
        }
    }
    for (int32_t r = 0; r < n_replicas; r++) {
        s->nodes[gg->replica_node[r]].cpu_free += sp->cpu_milli;
        s->nodes[gg->replica_node[r]].mem_free += sp->mem_mib;
    }
    gg->n_as = 0;
}

static bool place_all(struct sched *s, struct gang *gg)
{
    int32_t replicas = s->wls[gg->w].spec.replicas;
    for (int32_t r = 0; r < replicas; r++) {
        if (!place_replica(s, gg, r)) {
            undo(s, gg, r);
            return false;
        }
    }
    return true;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Topology blocks that hold devices of a class, each once; cached per fleet generation. */
int32_t place__block_index(struct sched *s, int32_t cls, int64_t b)
{
    int32_t n;
    place__blocks(s, cls, &n); /* makes sure the block lists are current */
    return block_index(&s->classes[cls], b);
}

static int32_t block_index(const struct cls *c, int64_t b)
{
    int32_t lo = 0, hi = c->n_blocks;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (c->blocks[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n_blocks && c->blocks[lo] == b ? lo : NONE;
}

/*
 * Topology blocks that hold devices of a class, each once, with the free
 * whole devices of each (ready nodes); rebuilt when the fleet changes and
 * then kept current as devices are taken and given back.
 */
const int64_t *place__blocks(struct sched *s, int32_t cls, int32_t *ret_n)
{
    struct cls *c = &s->classes[cls];
    if (c->blocks_gen != s->fleet_generation + 1) {
        int32_t n = 0;
        free(c->blocks);
        free(c->block_free);
        c->blocks = xcalloc((size_t)c->slots.n + 1, sizeof(int64_t));
        for (int32_t i = 0; i < c->slots.n; i++) {
            int64_t b = s->nodes[s->slots[c->slots.v[i]].node].block_id;
            if (b != 0)
                c->blocks[n++] = b;
        }
        qsort(c->blocks, (size_t)n, sizeof(int64_t), cmp_i64);
        c->n_blocks = 0;
        for (int32_t i = 0; i < n; i++) {
            if (c->n_blocks == 0 || c->blocks[c->n_blocks - 1] != c->blocks[i])
                c->blocks[c->n_blocks++] = c->blocks[i];
        }
        free(c->block_start);
        free(c->block_slots);
        c->block_free = xcalloc((size_t)c->n_blocks + 1, sizeof(int32_t));
        c->block_start = xcalloc((size_t)c->n_blocks + 2, sizeof(int32_t));
        c->block_slots = xcalloc((size_t)c->slots.n + 1, sizeof(int32_t));
        for (int32_t i = 0; i < c->slots.n; i++) {
            struct slot *st = &s->slots[c->slots.v[i]];
            const struct node *nd = &s->nodes[st->node];
            st->block = nd->block_id ? block_index(c, nd->block_id) : NONE;
            if (st->block == NONE)
                continue;
            c->block_start[st->block + 1]++;
            if (nd->state == SCHED_NODE_READY)
                c->block_free[st->block] += st->free_whole;
        }
        for (int32_t b = 0; b < c->n_blocks; b++)
            c->block_start[b + 1] += c->block_start[b];
        {
            int32_t *fill = xcalloc((size_t)c->n_blocks + 1, sizeof(int32_t));
            for (int32_t i = 0; i < c->slots.n; i++) {
                const struct slot *st = &s->slots[c->slots.v[i]];
                if (st->block != NONE)
                    c->block_slots[c->block_start[st->block] + fill[st->block]++] = c->slots.v[i];
            }
            free(fill);
        }
        c->blocks_gen = s->fleet_generation + 1;
    }
    *ret_n = c->n_blocks;
    return c->blocks;
}

bool place__gang(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    s->stats.placements++;
    int32_t per_replica = wl->cls == NONE          ? 1
                          : wl->spec.gpu_milli >= WHOLE ? wl->spec.gpu_milli / WHOLE
                                                        : 1;
    struct gang gg = {.w = w};
    bool ok = false;
    size_t n_as = (size_t)wl->spec.replicas * (size_t)per_replica;

    if (wl->cls != NONE && !place__any_room(s, wl->cls, wl->spec.gpu_milli))
        return false;
    /* Scratch reused across attempts: most attempts fail, and they should cost no allocation. */
    ALLOC_GROW(s->gang_as, n_as, s->scratch_as);
    ALLOC_GROW(s->gang_placed, n_as, s->scratch_placed);
    ALLOC_GROW(s->gang_nodes, wl->spec.replicas, s->scratch_rn);
    ALLOC_GROW(s->gang_bins, s->n_pools + 1, s->scratch_bins);
    gg.as = s->gang_as;
    gg.pl = s->gang_placed;
    gg.replica_node = s->gang_nodes;
    gg.bins = s->gang_bins;
    /*
     * Work goes to its own project's pools first, then to devices in no
     * pool, and borrows others' pools only when those are full: owned
     * capacity is used where it is owned, and borrowed capacity stays free
     * for its owners as long as possible (work there is preemptible by them).
     */
    for (int tier = wl->cls != NONE ? 0 : 2, last_bins = -1; tier <= 2 && !ok; tier++) {
        gg.tier = tier;
        gang_bins(s, &gg);
        if (gg.n_bins == 0 || gg.n_bins == last_bins)
            continue; /* nothing of this tier, or nothing the last tier did not try */
        last_bins = gg.n_bins;
        if (wl->spec.same_block && wl->spec.replicas > 1 && wl->cls != NONE) {
            int32_t n_blocks;
            const int64_t *blocks = place__blocks(s, wl->cls, &n_blocks);
            const int32_t *room = s->classes[wl->cls].block_free;
            int64_t need = (int64_t)wl->spec.replicas * per_replica;
            for (int32_t i = 0; i < n_blocks && !ok; i++) {
                /* Too few free devices in the block: skip its scan (shares may use partial ones). */
                if (room[i] < need && wl->spec.gpu_milli >= WHOLE)
                    continue;
                gg.block = blocks[i];
                ok = place_all(s, &gg);
            }
        } else {
            ok = place_all(s, &gg);
        }
    }
    if (!ok)
        return false;
    free(wl->assigns);
    wl->assigns = xcalloc((size_t)gg.n_as, sizeof(*wl->assigns));
    memcpy(wl->assigns, gg.as, (size_t)gg.n_as * sizeof(*wl->assigns));
    wl->n_assigns = gg.n_as;
    free(wl->at);
    wl->at = xmalloc(((size_t)gg.n_as * 2 + 1) * sizeof(int32_t));
    for (int32_t i = 0; i < gg.n_as; i++) {
        wl->at[2 * i] = gg.pl[i].node;
        wl->at[2 * i + 1] = gg.pl[i].gpu;
    }
    for (int32_t r = 0; r < wl->spec.replicas; r++) {
        struct node *nd = &s->nodes[gg.replica_node[r]];
        ivec_remove_value(&nd->running, w);
        ivec_push(&nd->running, w);
        /*
         * A node held for other work that w may use all the same (a pool's
         * owner on its pool, P1 work where P2 work is held for): the room
         * the holder counted on there may be gone, and its info says who
         * took it (sched_workload_info).
         */
        if (nd->reserved_for != NONE && nd->reserved_for != w)
            s->wls[nd->reserved_for].hold_taken_by = wl->spec.id;
    }
    return true;
}

void place__index_assigns(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    free(wl->at);
    wl->at = xcalloc((size_t)wl->n_assigns * 2 + 1, sizeof(int32_t));
    for (int32_t i = 0; i < wl->n_assigns; i++) {
        wl->at[2 * i] = idmap_get(&s->node_ids, wl->assigns[i].node_id);
        wl->at[2 * i + 1] = wl->assigns[i].gpu_id ? idmap_get(&s->gpu_ids, wl->assigns[i].gpu_id)
                                                  : NONE;
    }
}

void place__release(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    int32_t last_replica = NONE;
    for (int32_t i = 0; i < wl->n_assigns; i++) {
        const struct sched_assign *a = &wl->assigns[i];
        int32_t n = wl->at[2 * i];
        if (a->gpu_id) {
            place__gpu_give(s, wl->at[2 * i + 1], a->milli);
            place__lend(s, w, wl->at[2 * i + 1], a->milli, -1);
        }
        /* A replica's devices are contiguous and on one node: give its CPU and memory once. */
        if (a->replica != last_replica) {
            s->nodes[n].cpu_free += wl->spec.cpu_milli;
            s->nodes[n].mem_free += wl->spec.mem_mib;
            ivec_remove_value(&s->nodes[n].running, w);
            last_replica = a->replica;
        }
    }
    free(wl->assigns);
    free(wl->at);
    wl->assigns = NULL;
    wl->at = NULL;
    wl->n_assigns = 0;
}

int64_t place__largest_free(const struct sched *s, int32_t w)
{
    const struct workload *wl = &s->wls[w];
    struct cls *c;
    int64_t most = 0;
    if (wl->cls == NONE)
        return 0;
    c = &((struct sched *)s)->classes[wl->cls];
    if (c->largest_pass == s->pass_no)
        return c->largest_free;
    for (int32_t b = c->max_gpus_per_node; b >= 1 && !most; b--) {
        if (c->whole_count[b] > 0)
            most = (int64_t)b * WHOLE;
    }
    /* The fullest partially used devices: only the top non-empty bucket is read. */
    for (int32_t b = SHARE_BUCKETS - 1; b >= 0 && !most; b--) {
        if (c->share_count[b] == 0)
            continue;
        for (int32_t i = 0; i < c->n_bins; i++) {
            for (int32_t g = c->bins[i].share_head[b]; g != NONE; g = s->gpus[g].snext)
                most = s->gpus[g].free > most ? s->gpus[g].free : most;
        }
    }
    c->largest_free = most;
    c->largest_pass = s->pass_no;
    return most;
}

size_t place__closed_room(const struct sched *s, int32_t w, bool now, int64_t *ret_pool_ids,
                          size_t max)
{
    const struct workload *wl = &s->wls[w];
    const struct project *p = &s->projects[wl->project];
    int32_t k = wl->spec.gpu_milli >= WHOLE ? wl->spec.gpu_milli / WHOLE : 1;
    int32_t want = wl->spec.gpu_milli >= WHOLE ? WHOLE : wl->spec.gpu_milli;
    size_t n = 0;

    if (wl->cls == NONE)
        return 0;
    for (int32_t i = 0; i < s->classes[wl->cls].slots.n && n < max; i++) {
        const struct slot *st = &s->slots[s->classes[wl->cls].slots.v[i]];
        const struct node *nd = &s->nodes[st->node];
        int32_t room = 0;
        bool seen = false;
        if (st->pool == NONE || sched__project_may_use_pool(s, p, st->pool) ||
            nd->state == SCHED_NODE_DOWN || (now && nd->state != SCHED_NODE_READY) ||
            !place__node_fits_labels(nd, &wl->spec) ||
            (nd->cpu_cap && (now ? nd->cpu_free : nd->cpu_cap) < wl->spec.cpu_milli) ||
            (nd->mem_cap && (now ? nd->mem_free : nd->mem_cap) < wl->spec.mem_mib))
            continue;
        for (size_t j = 0; j < n && !seen; j++)
            seen = ret_pool_ids[j] == s->pools[st->pool].id;
        for (int32_t j = 0; j < st->gpus.n && !seen; j++)
            room += !now || s->gpus[st->gpus.v[j]].free >= want;
        if (!seen && room >= k)
            ret_pool_ids[n++] = s->pools[st->pool].id;
    }
    return n;
}

/* Whether slot st could hold one replica of wl (k devices) were it empty. */
static bool slot_ever_fits(const struct sched *s, const struct slot *st, const struct workload *wl,
                           int32_t k)
{
    const struct node *nd = &s->nodes[st->node];
    return st->gpus.n >= k && place__node_fits_labels(nd, &wl->spec) &&
           (!nd->cpu_cap || nd->cpu_cap >= wl->spec.cpu_milli) &&
           (!nd->mem_cap || nd->mem_cap >= wl->spec.mem_mib);
}

bool place__ever_fits(const struct sched *s, int32_t w)
{
    const struct workload *wl = &s->wls[w];
    int32_t k = wl->spec.gpu_milli >= WHOLE ? wl->spec.gpu_milli / WHOLE : 1;
    const struct cls *c;

    if (wl->cls == NONE) {
        for (int32_t n = 0; n < s->n_nodes; n++) {
            const struct node *nd = &s->nodes[n];
            if (place__node_fits_labels(nd, &wl->spec) &&
                (nd->cpu_cap == 0 || nd->cpu_cap >= wl->spec.cpu_milli) &&
                (nd->mem_cap == 0 || nd->mem_cap >= wl->spec.mem_mib))
                return true;
        }
        return false;
    }
    c = &s->classes[wl->cls];
    if (c->max_gpus_per_node < k)
        return false;
    {
        /* A slot's devices share one pool: whether the workload may use them is one question. */
        struct gang gg = {
            .w = w, .tier = 2, .bins = xcalloc((size_t)s->n_pools + 1, sizeof(int32_t))};
        bool fits = false;
        gang_bins((struct sched *)s, &gg);
        /*
         * Ready nodes first, through the bins the project may use: most work
         * fits the first slot there, where walking the class's slots passes
         * every node of pools the project may not use (a cost that grew with
         * the fleet). Draining nodes are in no bin: the walk over every slot
         * settles what the bins did not.
         */
        for (int32_t i = 0; i < gg.n_bins && !fits; i++) {
            const struct bin *bn = place__bin(s, wl->cls, gg.bins[i]);
            for (int32_t b = 0; b <= c->max_gpus_per_node && !fits; b++) {
                for (int32_t sl = bn->whole_head[b]; sl != NONE && !fits; sl = s->slots[sl].next)
                    fits = slot_ever_fits(s, &s->slots[sl], wl, k);
            }
        }
        for (int32_t i = 0; i < c->slots.n && !fits; i++) {
            const struct slot *st = &s->slots[c->slots.v[i]];
            fits = s->nodes[st->node].state != SCHED_NODE_DOWN && bin_usable(&gg, st->pool) &&
                   slot_ever_fits(s, st, wl, k);
        }
        free(gg.bins);
        return fits;
    }
}
