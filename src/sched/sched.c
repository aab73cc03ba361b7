/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sched.c: the scheduler core's state: the fleet, tenants and quotas, the
 * workloads and their queues, the events that change them, and queries.
 * Placement lives in place.c and the scheduling pass in pass.c.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "sched/sched-int.h"

/* ---- small containers ---- */

static size_t hash64(int64_t key, size_t cap)
{
    uint64_t x = (uint64_t)key;
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

void idmap_release(struct idmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

int32_t idmap_get(const struct idmap *m, int64_t key)
{
    if (m->cap == 0 || key == 0)
        return NONE;
    for (size_t i = hash64(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return m->vals[i];
        if (m->keys[i] == 0)
            return NONE;
    }
}

static void idmap_grow(struct idmap *m)
{
    struct idmap bigger = {0};
    bigger.cap = m->cap ? m->cap * 2 : 64;
    bigger.keys = xcalloc(bigger.cap, sizeof(int64_t));
    bigger.vals = xcalloc(bigger.cap, sizeof(int32_t));
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i])
            idmap_put(&bigger, m->keys[i], m->vals[i]);
    }
    idmap_release(m);
    *m = bigger;
}

void idmap_put(struct idmap *m, int64_t key, int32_t val)
{
    size_t i;
    assert(key != 0);
    if ((m->n + 1) * 2 > m->cap)
        idmap_grow(m);
    for (i = hash64(key, m->cap); m->keys[i] && m->keys[i] != key; i = (i + 1) & (m->cap - 1))
        ;
    if (!m->keys[i])
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
}

void idmap_del(struct idmap *m, int64_t key)
{
    size_t i, j;
    if (m->cap == 0)
        return;
    for (i = hash64(key, m->cap); m->keys[i] != key; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == 0)
            return;
    }
    /* Backward-shift deletion keeps probe chains intact without tombstones. */
    m->keys[i] = 0;
    m->n--;
    for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        size_t home = hash64(m->keys[j], m->cap);
        bool between = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (!between) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            m->keys[j] = 0;
            i = j;
        }
    }
}

void ivec_push(struct ivec *a, int32_t x)
{
    ALLOC_GROW(a->v, a->n + 1, a->cap);
    a->v[a->n++] = x;
}

void ivec_remove_value(struct ivec *a, int32_t x)
{
    for (int32_t i = 0; i < a->n; i++) {
        if (a->v[i] == x) {
            memmove(a->v + i, a->v + i + 1, (size_t)(a->n - i - 1) * sizeof(int32_t));
            a->n--;
            return;
        }
    }
}

void ivec_release(struct ivec *a)
{
    free(a->v);
    memset(a, 0, sizeof(*a));
}

static int32_t *queue_block(const struct queue *q, int32_t *array);

/* ---- lifecycle ---- */

void sched_config_init(struct sched_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg)); /* every field a later one adds starts off */
    cfg->reserve_after_ms = 10 * 60 * 1000;
    cfg->default_grace_ms = 30 * 1000;
    cfg->lookahead = 8;
    cfg->policy = NULL;
    cfg->fair_share = SCHED_SHARE_CURRENT;
    cfg->half_life_ms = INT64_C(7) * 24 * 3600 * 1000;
}

struct sched *sched_new(const struct sched_config *cfg)
{
    struct sched *s;
    if (cfg->reserve_after_ms < 0 || cfg->default_grace_ms < 0 || cfg->lookahead < 0 ||
        (cfg->fair_share != SCHED_SHARE_CURRENT && cfg->fair_share != SCHED_SHARE_DECAYED) ||
        (cfg->fair_share == SCHED_SHARE_DECAYED && cfg->half_life_ms <= 0))
        return NULL;
    s = xcalloc(1, sizeof(*s));
    s->cfg = *cfg;
    s->dirty_for = 1;
    return s;
}

void sched_free(struct sched *s)
{
    if (!s)
        return;
    for (int32_t i = 0; i < s->n_classes; i++) {
        ivec_release(&s->classes[i].slots);
        ivec_release(&s->classes[i].unready);
        ivec_release(&s->classes[i].waiting);
        free(s->classes[i].room_idx);
        ivec_release(&s->classes[i].room_full);
        ivec_release(&s->classes[i].grown);
        ivec_release(&s->classes[i].grown_pass);
        free(s->classes[i].bins);
        free(s->classes[i].rooms);
        free(s->classes[i].blocks);
        free(s->classes[i].block_free);
        free(s->classes[i].block_start);
        free(s->classes[i].block_slots);
    }
    for (int32_t i = 0; i < s->n_nodes; i++) {
        ivec_release(&s->nodes[i].slots);
        ivec_release(&s->nodes[i].running);
    }
    for (int32_t i = 0; i < s->n_slots; i++)
        ivec_release(&s->slots[i].gpus);
    for (int32_t i = 0; i < s->n_pools; i++) {
        free(s->pools[i].access_projects);
        free(s->pools[i].access_orgs);
    }
    for (int32_t i = 0; i < s->n_projects; i++) {
        for (int32_t k = 0; k < s->projects[i].n_quotas; k++)
            ivec_release(&s->projects[i].quotas[k].p2_run);
        free(s->projects[i].quotas);
        free(queue_block(&s->projects[i].queue, s->projects[i].queue.v));
        free(queue_block(&s->projects[i].queue, s->projects[i].queue.key));
        ivec_release(&s->projects[i].pools);
    }
    for (int32_t i = 0; i < s->n_orgs; i++) {
        free(s->orgs[i].caps);
        ivec_release(&s->orgs[i].members);
    }
    for (int32_t i = 0; i < s->n_wls; i++) {
        free(s->wls[i].assigns);
        free(s->wls[i].at);
        ivec_release(&s->wls[i].reserved);
    }
    free(s->classes);
    free(s->nodes);
    free(s->slots);
    free(s->gpus);
    free(s->pools);
    free(s->projects);
    free(s->orgs);
    alloc_table_free(s->wls, (size_t)s->cap_wls * sizeof(*s->wls));
    ivec_release(&s->free_wls);
    ivec_release(&s->dirty);
    ivec_release(&s->ready);
    ivec_release(&s->promises);
    free(s->timers);
    free(s->gang_as);
    free(s->gang_placed);
    free(s->gang_nodes);
    free(s->gang_bins);
    free(s->view_free);
    free(s->view_ids);
    free(s->view_gpus);
    free(s->view_pick);
    reclaim__release(s);
    idmap_release(&s->class_ids);
    idmap_release(&s->node_ids);
    idmap_release(&s->gpu_ids);
    idmap_release(&s->pool_ids);
    idmap_release(&s->project_ids);
    idmap_release(&s->org_ids);
    idmap_release(&s->workload_ids);
    free(s);
}

/* ---- fleet ---- */

/* Gives a class one bin per pool (and one for no pool), new ones empty. */
static void grow_bins(struct cls *c, int32_t n)
{
    if (n <= c->n_bins)
        return;
    ALLOC_GROW(c->bins, n, c->cap_bins);
    ALLOC_GROW(c->rooms, n, c->cap_rooms);
    for (int32_t b = c->n_bins; b < n; b++) {
        for (int i = 0; i <= SCHED_MAX_GPUS_PER_NODE; i++)
            c->bins[b].whole_head[i] = NONE;
        for (int i = 0; i < SHARE_BUCKETS; i++)
            c->bins[b].share_head[i] = NONE;
        memset(&c->rooms[b], 0, sizeof(c->rooms[b]));
    }
    c->n_bins = n;
}

int sched_add_class(struct sched *s, int64_t class_id)
{
    int32_t c;
    if (class_id <= 0)
        return SCHED_EINVAL;
    if (idmap_get(&s->class_ids, class_id) != NONE)
        return SCHED_EEXIST;
    ALLOC_GROW(s->classes, s->n_classes + 1, s->cap_classes);
    c = s->n_classes++;
    memset(&s->classes[c], 0, sizeof(s->classes[c]));
    s->classes[c].id = class_id;
    s->classes[c].hol_reserver = NONE;
    grow_bins(&s->classes[c], s->n_pools + 1);
    idmap_put(&s->class_ids, class_id, c);
    return 0;
}

int sched_add_node(struct sched *s, const struct sched_node_spec *spec)
{
    int32_t n;
    struct node *nd;
    if (spec->id <= 0 || spec->n_labels < 0 || spec->n_labels > SCHED_MAX_LABELS ||
        spec->cpu_milli < 0 || spec->mem_mib < 0)
        return SCHED_EINVAL;
    if (idmap_get(&s->node_ids, spec->id) != NONE)
        return SCHED_EEXIST;
    ALLOC_GROW(s->nodes, s->n_nodes + 1, s->cap_nodes);
    n = s->n_nodes++;
    memset(&s->nodes[n], 0, sizeof(s->nodes[n]));
    nd = &s->nodes[n];
    nd->id = spec->id;
    nd->cluster_id = spec->cluster_id;
    nd->cpu_cap = nd->cpu_free = spec->cpu_milli;
    nd->mem_cap = nd->mem_free = spec->mem_mib;
    memcpy(nd->labels, spec->labels, sizeof(uint32_t) * (size_t)spec->n_labels);
    nd->n_labels = spec->n_labels;
    nd->block_id = spec->block_id;
    nd->state = SCHED_NODE_READY;
    nd->reserved_for = NONE;
    idmap_put(&s->node_ids, spec->id, n);
    s->fleet_generation++;
    return 0;
}

static int32_t node_slot(struct sched *s, int32_t n, int32_t c, int32_t pool)
{
    struct node *nd = &s->nodes[n];
    int32_t sl;
    for (int32_t i = 0; i < nd->slots.n; i++) {
        if (s->slots[nd->slots.v[i]].cls == c && s->slots[nd->slots.v[i]].pool == pool)
            return nd->slots.v[i];
    }
    ALLOC_GROW(s->slots, s->n_slots + 1, s->cap_slots);
    sl = s->n_slots++;
    memset(&s->slots[sl], 0, sizeof(s->slots[sl]));
    s->slots[sl].node = n;
    s->slots[sl].cls = c;
    s->slots[sl].pool = pool;
    s->slots[sl].block = NONE;
    s->slots[sl].prev = s->slots[sl].next = NONE;
    ivec_push(&s->nodes[n].slots, sl);
    ivec_push(&s->classes[c].slots, sl);
    if (nd->state != SCHED_NODE_READY)
        ivec_push(&s->classes[c].unready, sl);
    return sl;
}

int sched_add_gpu(struct sched *s, int64_t node_id, int64_t gpu_id, int64_t class_id,
                  int64_t pool_id)
{
    int32_t n = idmap_get(&s->node_ids, node_id), c = idmap_get(&s->class_ids, class_id);
    int32_t p = pool_id ? idmap_get(&s->pool_ids, pool_id) : NONE, g, sl;
    struct cls *cl;

    if (n == NONE || c == NONE || (pool_id && p == NONE) || gpu_id <= 0)
        return SCHED_ENOENT;
    if (idmap_get(&s->gpu_ids, gpu_id) != NONE)
        return SCHED_EEXIST;
    sl = node_slot(s, n, c, p);
    if (s->slots[sl].gpus.n >= SCHED_MAX_GPUS_PER_NODE)
        return SCHED_EINVAL;
    ALLOC_GROW(s->gpus, s->n_gpus + 1, s->cap_gpus);
    g = s->n_gpus++;
    s->gpus[g] = (struct gpu){.id = gpu_id, .node = n, .slot = sl, .pool = p, .free = WHOLE,
                              .sbucket = NONE, .sprev = NONE, .snext = NONE};
    idmap_put(&s->gpu_ids, gpu_id, g);
    cl = &s->classes[c];
    if (s->nodes[n].state == SCHED_NODE_READY)
        place__slot_unlink(s, sl);
    ivec_push(&s->slots[sl].gpus, g);
    s->slots[sl].free_whole++;
    if (s->slots[sl].gpus.n > cl->max_gpus_per_node)
        cl->max_gpus_per_node = s->slots[sl].gpus.n;
    if (s->nodes[n].state == SCHED_NODE_READY) {
        place__slot_link(s, sl);
        cl->capacity += WHOLE;
        cl->free += WHOLE;
        place__room(s, c, p)->capacity += WHOLE;
        place__room(s, c, p)->free += WHOLE;
    }
    sched__class_freed(s, c);
    s->fleet_generation++;
    return 0;
}

int sched_set_node_state(struct sched *s, int64_t node_id, enum sched_node_state state)
{
    int32_t n = idmap_get(&s->node_ids, node_id);
    struct node *nd;
    bool was_ready, ready = state == SCHED_NODE_READY;

    if (n == NONE)
        return SCHED_ENOENT;
    nd = &s->nodes[n];
    was_ready = nd->state == SCHED_NODE_READY;
    nd->state = state;
    s->fleet_generation++;
    if (was_ready == ready)
        return 0;
    /* Unready nodes leave the index: no placement ever looks at them. */
    for (int32_t i = 0; i < nd->slots.n; i++) {
        struct slot *sl = &s->slots[nd->slots.v[i]];
        struct cls *cl = &s->classes[sl->cls];
        struct bin_room *bn = place__room(s, sl->cls, sl->pool);
        int64_t cap = 0, free_milli = 0;
        for (int32_t k = 0; k < sl->gpus.n; k++) {
            cap += WHOLE;
            free_milli += s->gpus[sl->gpus.v[k]].free;
            if (ready)
                place__gpu_link(s, sl->gpus.v[k]);
            else
                place__gpu_unlink(s, sl->gpus.v[k]);
        }
        if (ready) {
            ivec_remove_value(&cl->unready, nd->slots.v[i]);
            place__slot_link(s, nd->slots.v[i]);
            cl->capacity += cap;
            cl->free += free_milli;
            bn->capacity += cap;
            bn->free += free_milli;
            sched__class_freed(s, sl->cls);
        } else {
            ivec_push(&cl->unready, nd->slots.v[i]);
            place__slot_unlink(s, nd->slots.v[i]);
            cl->capacity -= cap;
            cl->free -= free_milli;
            bn->capacity -= cap;
            bn->free -= free_milli;
        }
    }
    return 0;
}

/* ---- tenants ---- */

static int32_t org_index(struct sched *s, int64_t org_id)
{
    int32_t o = idmap_get(&s->org_ids, org_id);
    if (o == NONE) {
        ALLOC_GROW(s->orgs, s->n_orgs + 1, s->cap_orgs);
        o = s->n_orgs++;
        memset(&s->orgs[o], 0, sizeof(s->orgs[o]));
        s->orgs[o].id = org_id;
        idmap_put(&s->org_ids, org_id, o);
    }
    return o;
}

int sched_set_project(struct sched *s, int64_t project_id, int64_t org_id, int weight)
{
    int32_t p = idmap_get(&s->project_ids, project_id);
    if (project_id <= 0 || org_id <= 0 || weight < 1)
        return SCHED_EINVAL;
    if (p == NONE) {
        ALLOC_GROW(s->projects, s->n_projects + 1, s->cap_projects);
        p = s->n_projects++;
        memset(&s->projects[p], 0, sizeof(s->projects[p]));
        s->projects[p].id = project_id;
        idmap_put(&s->project_ids, project_id, p);
    } else if (s->projects[p].org_id != org_id && s->projects[p].queue.n > 0) {
        return SCHED_ESTATE; /* moving a project with work would break org caps */
    }
    if (s->projects[p].org_id != org_id) {
        if (s->projects[p].org_id != 0)
            ivec_remove_value(&s->orgs[s->projects[p].org].members, p);
        s->projects[p].org_id = org_id;
        s->projects[p].org = org_index(s, org_id);
        ivec_push(&s->orgs[s->projects[p].org].members, p);
    }
    s->projects[p].weight = weight;
    sched__mark_dirty(s, p);
    return 0;
}

/* What each pool lends, counted afresh (its owner changed: who borrows it changed too). */
static void recount_lent(struct sched *s)
{
    for (int32_t p = 0; p < s->n_pools; p++)
        s->pools[p].lent = 0;
    for (int32_t w = 0; w < s->n_wls; w++) {
        const struct workload *wl = &s->wls[w];
        if (!wl->in_use || wl->state == SCHED_QUEUED)
            continue;
        for (int32_t i = 0; i < wl->n_assigns; i++) {
            if (wl->assigns[i].gpu_id)
                place__lend(s, w, wl->at[2 * i + 1], wl->assigns[i].milli, +1);
        }
    }
}

int sched_set_pool(struct sched *s, const struct sched_pool_spec *spec)
{
    bool new_owner;
    int32_t p = idmap_get(&s->pool_ids, spec->id);
    struct pool *pl;
    if (spec->id <= 0 || (spec->owner_project_id == 0) == (spec->owner_org_id == 0))
        return SCHED_EINVAL;
    if (p == NONE) {
        ALLOC_GROW(s->pools, s->n_pools + 1, s->cap_pools);
        p = s->n_pools++;
        memset(&s->pools[p], 0, sizeof(s->pools[p]));
        idmap_put(&s->pool_ids, spec->id, p);
        for (int32_t c = 0; c < s->n_classes; c++)
            grow_bins(&s->classes[c], s->n_pools + 1);
    }
    pl = &s->pools[p];
    new_owner =
        pl->owner_project_id != spec->owner_project_id || pl->owner_org_id != spec->owner_org_id;
    free(pl->access_projects);
    free(pl->access_orgs);
    pl->id = spec->id;
    pl->owner_project_id = spec->owner_project_id;
    pl->owner_org_id = spec->owner_org_id;
    pl->n_access_projects = spec->n_access_projects;
    pl->n_access_orgs = spec->n_access_orgs;
    pl->lend_to_all = spec->lend_to_all;
    pl->lending_limit = spec->lending_limit > 0 ? spec->lending_limit : -1;
    if (new_owner)
        recount_lent(s);
    pl->access_projects = xcalloc(spec->n_access_projects, sizeof(int64_t));
    pl->access_orgs = xcalloc(spec->n_access_orgs, sizeof(int64_t));
    if (spec->n_access_projects)
        memcpy(pl->access_projects, spec->access_project_ids,
               spec->n_access_projects * sizeof(int64_t));
    if (spec->n_access_orgs)
        memcpy(pl->access_orgs, spec->access_org_ids, spec->n_access_orgs * sizeof(int64_t));
    s->fleet_generation++;
    /* Access and derived guarantees may change for anyone. */
    for (int32_t i = 0; i < s->n_projects; i++)
        sched__mark_dirty(s, i);
    return 0;
}

bool sched__owns_pool(const struct sched *s, const struct project *p, int32_t pool)
{
    const struct pool *pl = &s->pools[pool];
    return pl->owner_project_id == p->id ||
           (pl->owner_org_id != 0 && pl->owner_org_id == p->org_id);
}

bool sched__project_may_use_pool(const struct sched *s, const struct project *p, int32_t pool)
{
    const struct pool *pl;
    if (pool == NONE)
        return true;
    pl = &s->pools[pool];
    if (pl->owner_project_id == p->id || pl->owner_org_id == p->org_id || pl->lend_to_all)
        return true;
    for (size_t i = 0; i < pl->n_access_projects; i++) {
        if (pl->access_projects[i] == p->id)
            return true;
    }
    for (size_t i = 0; i < pl->n_access_orgs; i++) {
        if (pl->access_orgs[i] == p->org_id)
            return true;
    }
    return false;
}

struct quota *sched__quota(struct project *p, int32_t cls, bool create)
{
    for (int32_t i = 0; i < p->n_quotas; i++) {
        if (p->quotas[i].cls == cls)
            return &p->quotas[i];
    }
    if (!create)
        return NULL;
    ALLOC_GROW(p->quotas, p->n_quotas + 1, p->cap_quotas);
    memset(&p->quotas[p->n_quotas], 0, sizeof(p->quotas[p->n_quotas]));
    p->n_quotas++;
    p->quotas[p->n_quotas - 1].cls = cls;
    p->quotas[p->n_quotas - 1].guaranteed = 0;
    p->quotas[p->n_quotas - 1].limit = -1;
    return &p->quotas[p->n_quotas - 1];
}

/* Recomputes every derived guarantee: the devices of the pools each project owns. */
static void refresh_derived(struct sched *s)
{
    uint32_t gen = s->fleet_generation + 1;
    for (int32_t p = 0; p < s->n_projects; p++) {
        for (int32_t i = 0; i < s->projects[p].n_quotas; i++) {
            s->projects[p].quotas[i].derived = 0;
            s->projects[p].quotas[i].derived_gen = gen;
        }
    }
    for (int32_t g = 0; g < s->n_gpus; g++) {
        const struct gpu *gp = &s->gpus[g];
        int32_t owner;
        struct quota *q;
        if (gp->pool == NONE || s->nodes[gp->node].state == SCHED_NODE_DOWN)
            continue;
        owner = idmap_get(&s->project_ids, s->pools[gp->pool].owner_project_id);
        if (owner == NONE)
            continue;
        q = sched__quota(&s->projects[owner], s->slots[gp->slot].cls, false);
        if (q)
            q->derived += WHOLE;
    }
}

int64_t sched__guaranteed(const struct sched *s, const struct project *p, const struct quota *q)
{
    int64_t g;
    if (q->guaranteed >= 0)
        return q->guaranteed;
    /* Derived guarantees change only with the fleet and pools: cached per fleet generation. */
    if (q->derived_gen != s->fleet_generation + 1)
        refresh_derived((struct sched *)s);
    g = q->derived;
    (void)p;
    return q->limit >= 0 && g > q->limit ? q->limit : g;
}

int sched_set_quota(struct sched *s, int64_t project_id, int64_t class_id, int64_t guaranteed,
                    int64_t limit)
{
    int32_t p = idmap_get(&s->project_ids, project_id), c = idmap_get(&s->class_ids, class_id);
    struct quota *q;
    if (p == NONE || c == NONE)
        return SCHED_ENOENT;
    if (guaranteed >= 0 && limit >= 0 && guaranteed > limit)
        return SCHED_EINVAL;
    q = sched__quota(&s->projects[p], c, true);
    q->guaranteed = guaranteed;
    q->limit = limit;
    q->derived_gen = 0;
    sched__mark_dirty(s, p);
    return 0;
}

struct org_cap *sched__org_cap(struct sched *s, int32_t org, int32_t cls, bool create)
{
    struct org *o = &s->orgs[org];
    for (int32_t i = 0; i < o->n_caps; i++) {
        if (o->caps[i].cls == cls)
            return &o->caps[i];
    }
    if (!create)
        return NULL;
    ALLOC_GROW(o->caps, o->n_caps + 1, o->cap_caps);
    memset(&o->caps[o->n_caps], 0, sizeof(o->caps[o->n_caps]));
    o->n_caps++;
    o->caps[o->n_caps - 1].cls = cls;
    o->caps[o->n_caps - 1].limit = -1;
    return &o->caps[o->n_caps - 1];
}

int sched_set_org_cap(struct sched *s, int64_t org_id, int64_t class_id, int64_t limit)
{
    int32_t c = idmap_get(&s->class_ids, class_id);
    if (org_id <= 0 || c == NONE)
        return c == NONE ? SCHED_ENOENT : SCHED_EINVAL;
    sched__org_cap(s, org_index(s, org_id), c, true)->limit = limit < 0 ? -1 : limit;
    for (int32_t i = 0; i < s->n_projects; i++) {
        if (s->projects[i].org_id == org_id)
            sched__mark_dirty(s, i);
    }
    return 0;
}

/* ---- dirtiness: which queues the next pass looks at ---- */

void sched__mark_dirty(struct sched *s, int32_t project)
{
    s->projects[project].dirty_all = true;
    if (!s->projects[project].dirty) {
        s->projects[project].dirty = true;
        ivec_push(&s->dirty, project);
    }
}

void sched__mark_class_dirty(struct sched *s, int32_t project, int32_t cls)
{
    sched__quota(&s->projects[project], cls, true)->dirty = true;
    if (!s->projects[project].dirty) {
        s->projects[project].dirty = true;
        ivec_push(&s->dirty, project);
    }
}

enum wakeup { WAKE_FULL, WAKE_ROOM, WAKE_HOL };

static void class_wakeup(struct sched *s, int32_t cls, enum wakeup how)
{
    struct ivec *waiting = &s->classes[cls].waiting;
    int32_t k = 0;
    /* Drop projects that no longer wait for this class while marking the rest. */
    for (int32_t i = 0; i < waiting->n; i++) {
        struct project *p = &s->projects[waiting->v[i]];
        struct quota *q = sched__quota(p, cls, false);
        if (!q || q->queued == 0) {
            if (q)
                q->listed_waiting = false;
            continue;
        }
        waiting->v[k++] = waiting->v[i];
        /* Work that waits for its quota, not for room, has nothing to gain. */
        if (!q->wants_capacity)
            continue;
        if (how == WAKE_FULL || (how == WAKE_HOL && s->cfg.exhaustive)) {
            sched__mark_class_dirty(s, waiting->v[i], cls);
        } else {
            /*
             * The pass that takes these marks (the one beginning, when a
             * preemptor admitted first ended the reservation): room_decide
             * looks for the room and the reservation there.
             */
            if (how == WAKE_HOL)
                q->hol_pass = s->dirty_for;
            q->room_dirty = true;
            if (!p->dirty) {
                p->dirty = true;
                ivec_push(&s->dirty, waiting->v[i]);
            }
        }
    }
    waiting->n = k;
}

void sched__class_freed(struct sched *s, int32_t cls)
{
    class_wakeup(s, cls, WAKE_FULL);
}

/*
 * Every project waiting for room in the class is looked at in the next pass,
 * as a full wake-up does (the exhaustive core's way), so that the projects
 * whose turn comes first are the ones that may take the reservation; but
 * where its work waits only for room (its needs known) a project is looked
 * at in full only if it is due the reservation while that is free (the
 * first such takes it), else only if the room freed could serve it: a look
 * in full would find nothing else changed. Looking at every waiting project
 * in full cost 1-3 ms at 500 projects (issue 17). Where the classes keep
 * room indexes, the entries are no longer marked one by one (each then took
 * a turn in that pass's heap to be told "no room": 0.2-0.7 ms at 500-1,000
 * projects): that pass walks the index for them (room__hol_wake).
 */
void sched__hol_freed(struct sched *s, int32_t cls)
{
    if (room__indexing(s))
        room__hol_wake(s, cls);
    else
        class_wakeup(s, cls, WAKE_HOL);
}

void sched__nodes_freed(struct sched *s, int32_t cls, const int32_t *nodes, int32_t n)
{
    struct ivec *grown = &s->classes[cls].grown;
    for (int32_t i = 0; i < n; i++) {
        if (grown->n == 0 || grown->v[grown->n - 1] != nodes[i])
            ivec_push(grown, nodes[i]);
    }
    /*
     * The room index finds who could use the room: for the next pass
     * between passes, and for the pass beginning while it begins (a
     * preemptor admitted first, before anything was looked at). Within a
     * pass it did so only by marking every waiting project for the next,
     * whose heap then gave each a turn (the p99 of the pass after a
     * completion, issue 17): now the next pass walks the index for those
     * this one did not look at (room__wake_within).
     */
    if (!room__indexing(s))
        class_wakeup(s, cls, WAKE_ROOM);
    else if (!s->passing || s->dirty_for == s->pass_no)
        room__wake(s, cls, nodes, n);
    else
        room__wake_within(s, cls, nodes, n);
}

static bool timer_before(const struct timer *a, const struct timer *b)
{
    return a->at < b->at;
}

void sched__wake_at(struct sched *s, int64_t when_ms, int32_t project)
{
    struct project *p = &s->projects[project];
    int32_t i;
    /* One pending timer per project, its earliest: a later one is set again when it matters. */
    if (p->wake_at != 0 && p->wake_at <= when_ms)
        return;
    p->wake_at = when_ms;
    ALLOC_GROW(s->timers, s->n_timers + 1, s->cap_timers);
    i = s->n_timers++;
    s->timers[i] = (struct timer){when_ms, project};
    while (i > 0 && timer_before(&s->timers[i], &s->timers[(i - 1) / 2])) {
        struct timer t = s->timers[i];
        s->timers[i] = s->timers[(i - 1) / 2];
        s->timers[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

void sched__fire_timers(struct sched *s, int64_t now_ms)
{
    while (s->n_timers > 0 && s->timers[0].at <= now_ms) {
        struct timer top = s->timers[0];
        int32_t i = 0;
        s->timers[0] = s->timers[--s->n_timers];
        for (;;) {
            int32_t l = 2 * i + 1, r = l + 1, m = i;
            struct timer t;
            if (l < s->n_timers && timer_before(&s->timers[l], &s->timers[m]))
                m = l;
            if (r < s->n_timers && timer_before(&s->timers[r], &s->timers[m]))
                m = r;
            if (m == i)
                break;
            t = s->timers[i];
            s->timers[i] = s->timers[m];
            s->timers[m] = t;
            i = m;
        }
        /* A stale entry (the project's timer moved earlier and fired) does nothing. */
        if (s->projects[top.project].wake_at == top.at) {
            s->projects[top.project].wake_at = 0;
            sched__mark_dirty(s, top.project);
        }
    }
}

int64_t sched_next_timer_ms(const struct sched *s)
{
    return s->n_timers > 0 ? s->timers[0].at : 0;
}

void sched_get_stats(const struct sched *s, struct sched_stats *out)
{
    *out = s->stats;
}

bool sched_pass_due(const struct sched *s)
{
    return s->dirty.n > 0 || s->ready.n > 0;
}

/* ---- queues ---- */

/* Queue order: P1, automatic, P2, then higher priority, then earlier submit, then id. */
static bool queue_before(const struct workload *a, const struct workload *b)
{
    if (a->spec.pclass != b->spec.pclass)
        return sched__rank(a->spec.pclass) < sched__rank(b->spec.pclass);
    if (a->spec.priority != b->spec.priority)
        return a->spec.priority > b->spec.priority;
    if (a->spec.submit_ms != b->spec.submit_ms)
        return a->spec.submit_ms < b->spec.submit_ms;
    return a->spec.id < b->spec.id;
}

/* The block an array of q starts `front` entries into (NULL before the first entry). */
static int32_t *queue_block(const struct queue *q, int32_t *array)
{
    return array ? array - q->front : NULL;
}

/* Makes room for one entry more at the back of q's blocks. */
static void queue_grow(struct queue *q)
{
    int32_t *v = queue_block(q, q->v), *key = queue_block(q, q->key);
    size_t cap_v = (size_t)q->cap, cap_key = (size_t)q->cap;

    if (q->front + q->n < q->cap)
        return;
    if (q->front > q->n / 2) {
        /* A third or more of the blocks is front: close it up rather than grow. */
        memmove(v, q->v, (size_t)q->n * sizeof(int32_t));
        memmove(key, q->key, (size_t)q->n * sizeof(int32_t));
        q->front = 0;
    } else {
        ALLOC_GROW(v, q->front + q->n + 1, cap_v);
        ALLOC_GROW(key, q->front + q->n + 1, cap_key);
        assert(cap_v == cap_key);
        q->cap = (int32_t)cap_v;
    }
    q->v = v + q->front;
    q->key = key + q->front;
}

/* Puts w (queue key `key`) at index pos of q, moving the shorter side of it. */
static void queue_insert_at(struct queue *q, int32_t pos, int32_t w, int32_t key)
{
    if (q->front > 0 && pos < q->n / 2) {
        q->v--;
        q->key--;
        q->front--;
        memmove(q->v, q->v + 1, (size_t)pos * sizeof(int32_t));
        memmove(q->key, q->key + 1, (size_t)pos * sizeof(int32_t));
    } else {
        queue_grow(q);
        memmove(q->v + pos + 1, q->v + pos, (size_t)(q->n - pos) * sizeof(int32_t));
        memmove(q->key + pos + 1, q->key + pos, (size_t)(q->n - pos) * sizeof(int32_t));
    }
    q->v[pos] = w;
    q->key[pos] = key;
    q->n++;
}

/* Takes the entry at index pos out of q, moving the shorter side of it. */
static void queue_remove_at(struct queue *q, int32_t pos)
{
    if (pos < q->n / 2) {
        memmove(q->v + 1, q->v, (size_t)pos * sizeof(int32_t));
        memmove(q->key + 1, q->key, (size_t)pos * sizeof(int32_t));
        q->v++;
        q->key++;
        q->front++;
    } else {
        memmove(q->v + pos, q->v + pos + 1, (size_t)(q->n - pos - 1) * sizeof(int32_t));
        memmove(q->key + pos, q->key + pos + 1, (size_t)(q->n - pos - 1) * sizeof(int32_t));
    }
    q->n--;
}

static int32_t queue_lower_bound(const struct sched *s, const struct project *p,
                                 const struct workload *w)
{
    int32_t lo = 0, hi = p->queue.n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (queue_before(&s->wls[p->queue.v[mid]], w))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void sched__queue_insert(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    struct project *p = &s->projects[wl->project];
    int32_t pos = queue_lower_bound(s, p, wl);

    queue_insert_at(&p->queue, pos, w, sched__queue_key(wl));
    wl->state = SCHED_QUEUED;
    if (wl->cls != NONE) {
        struct quota *q = sched__quota(p, wl->cls, true);
        if (q->queued++ == 0 && !q->listed_waiting) {
            ivec_push(&s->classes[wl->cls].waiting, wl->project);
            q->listed_waiting = true;
        }
        q->queued_in[sched__rank(wl->spec.pclass)]++;
        q->wants_capacity = true;
    } else {
        p->queued_cpu[sched__rank(wl->spec.pclass)]++;
    }
    sched__mark_dirty(s, wl->project);
}

void sched__queue_remove(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    struct project *p = &s->projects[wl->project];
    /* A pass admits the work at its scan's cursor: no search for it. */
    int32_t pos = p->cursor >= 0 && p->cursor < p->queue.n && p->queue.v[p->cursor] == w
                      ? p->cursor
                      : queue_lower_bound(s, p, wl);

    assert(pos < p->queue.n && p->queue.v[pos] == w);
    queue_remove_at(&p->queue, pos);
    if (wl->cls != NONE) {
        struct quota *q = sched__quota(p, wl->cls, true);
        q->queued--;
        q->queued_in[sched__rank(wl->spec.pclass)]--;
    } else {
        p->queued_cpu[sched__rank(wl->spec.pclass)]--;
    }
}

/* ---- usage ---- */

void sched__charge(struct sched *s, int32_t w, int sign)
{
    sched__charge_at(s, w, sign, s->clock_ms);
}

void sched__charge_at(struct sched *s, int32_t w, int sign, int64_t at_ms)
{
    struct workload *wl = &s->wls[w];
    struct project *p = &s->projects[wl->project];
    int64_t held = (int64_t)wl->spec.replicas * wl->spec.gpu_milli * sign;
    struct quota *q;
    struct org_cap *oc;

    if (wl->cls == NONE)
        return;
    q = sched__quota(p, wl->cls, true);
    if (wl->runs_as == SCHED_P1) {
        q->p1 += held;
    } else {
        share__charge(s, q, held, at_ms);
        q->p2 += held;
        if (sign > 0) {
            wl->p2_pos = q->p2_run.n;
            ivec_push(&q->p2_run, w);
        } else {
            int32_t last = q->p2_run.v[--q->p2_run.n];
            assert(q->p2_run.v[wl->p2_pos] == w);
            q->p2_run.v[wl->p2_pos] = last;
            s->wls[last].p2_pos = wl->p2_pos;
        }
    }
    oc = sched__org_cap(s, p->org, wl->cls, true);
    oc->used += held;
}

enum sched_class sched__auto_class(const struct sched *s, int32_t w)
{
    const struct workload *wl = &s->wls[w];
    struct project *p = &((struct sched *)s)->projects[wl->project];
    struct quota *q;
    /*
     * Work that asks for no GPU has no guarantee to be within: it runs as P2,
     * which holds no claim over nodes held for others (a P1 hold would).
     */
    if (wl->cls == NONE)
        return SCHED_P2;
    q = sched__quota(p, wl->cls, false);
    return q && q->p1 + (int64_t)wl->spec.replicas * wl->spec.gpu_milli <=
                       sched__guaranteed(s, p, q)
               ? SCHED_P1
               : SCHED_P2;
}

/* ---- workloads ---- */

static int check_spec(const struct sched *s, const struct sched_workload_spec *sp)
{
    if (sp->id <= 0 ||
        (sp->pclass != SCHED_P1 && sp->pclass != SCHED_P2 && sp->pclass != SCHED_AUTO) ||
        sp->replicas < 1 || sp->replicas > SCHED_MAX_REPLICAS || sp->gpu_milli < 0 ||
        sp->cpu_milli < 0 || sp->mem_mib < 0 || sp->n_selector < 0 ||
        sp->n_selector > SCHED_MAX_SELECTOR || sp->n_pools < 0 || sp->n_pools > SCHED_MAX_POOLS ||
        sp->min_runtime_ms < 0)
        return SCHED_EINVAL;
    if (sp->gpu_milli > WHOLE && sp->gpu_milli % WHOLE != 0)
        return SCHED_EINVAL;
    if (sp->gpu_milli / WHOLE > SCHED_MAX_GPUS_PER_NODE)
        return SCHED_EINVAL;
    if ((sp->class_id == 0) != (sp->gpu_milli == 0))
        return SCHED_EINVAL;
    if (idmap_get(&s->project_ids, sp->project_id) == NONE)
        return SCHED_ENOENT;
    if (sp->class_id && idmap_get(&s->class_ids, sp->class_id) == NONE)
        return SCHED_ENOENT;
    for (int i = 0; i < sp->n_pools; i++) {
        if (idmap_get(&s->pool_ids, sp->pool_ids[i]) == NONE)
            return SCHED_ENOENT;
    }
    if (idmap_get(&s->workload_ids, sp->id) != NONE)
        return SCHED_EEXIST;
    return 0;
}

static int32_t workload_new(struct sched *s, const struct sched_workload_spec *spec)
{
    int32_t w;
    if (s->free_wls.n > 0) {
        w = s->free_wls.v[--s->free_wls.n];
        memset(&s->wls[w], 0, sizeof(s->wls[w]));
    } else {
        /* The table is read at random by every pass: pages of its own (alloc.h). */
        size_t cap = alloc_grow_nr(s->n_wls + 1, s->cap_wls);
        if (cap > 0) {
            s->wls = alloc_table_grow(s->wls, (size_t)s->cap_wls * sizeof(*s->wls),
                                      cap * sizeof(*s->wls));
            s->cap_wls = (int32_t)cap;
        }
        w = s->n_wls++;
        memset(&s->wls[w], 0, sizeof(s->wls[w]));
    }
    s->wls[w].spec = *spec;
    /* Clamped so that start + minimum runtime and decision + grace never overflow. */
    if (s->wls[w].spec.min_runtime_ms > SCHED_MAX_DURATION_MS)
        s->wls[w].spec.min_runtime_ms = SCHED_MAX_DURATION_MS;
    if (s->wls[w].spec.grace_ms > SCHED_MAX_DURATION_MS)
        s->wls[w].spec.grace_ms = SCHED_MAX_DURATION_MS;
    s->wls[w].project = idmap_get(&s->project_ids, spec->project_id);
    s->wls[w].cls = spec->class_id ? idmap_get(&s->class_ids, spec->class_id) : NONE;
    s->wls[w].runs_as = spec->pclass == SCHED_AUTO ? sched__auto_class(s, w) : spec->pclass;
    s->wls[w].in_use = true;
    idmap_put(&s->workload_ids, spec->id, w);
    return w;
}

static void workload_drop(struct sched *s, int32_t w)
{
    struct workload *wl = &s->wls[w];
    sched__unreserve(s, w);
    idmap_del(&s->workload_ids, wl->spec.id);
    free(wl->assigns);
    free(wl->at);
    ivec_release(&wl->reserved);
    memset(wl, 0, sizeof(*wl));
    ivec_push(&s->free_wls, w);
}

int sched_submit(struct sched *s, const struct sched_workload_spec *spec, int64_t now_ms)
{
    int rc = check_spec(s, spec);
    int32_t w;
    share__tick(s, now_ms);
    if (rc < 0)
        return rc;
    w = workload_new(s, spec);
    s->wls[w].reason.code = SCHED_WAIT_NEW;
    sched__queue_insert(s, w);
    return 0;
}

/* Whether w holds devices lent from a pool with a lending limit. */
static bool holds_limited_loan(const struct sched *s, int32_t w)
{
    const struct workload *wl = &s->wls[w];
    for (int32_t i = 0; i < wl->n_assigns; i++) {
        int32_t g = wl->at[2 * i + 1], pool = g == NONE ? NONE : s->gpus[g].pool;
        if (pool != NONE && s->pools[pool].lending_limit >= 0 &&
            !sched__owns_pool(s, &s->projects[wl->project], pool))
            return true;
    }
    return false;
}

/*
 * The nodes w holds devices on (into nodes, at most max); false when it
 * holds more nodes than that.
 */
static bool freed_where(const struct sched *s, int32_t w, int32_t *nodes, int32_t *ret_n,
                        int32_t max)
{
    const struct workload *wl = &s->wls[w];
    int32_t n = 0;
    for (int32_t i = 0; i < wl->n_assigns; i++) {
        if (n > 0 && nodes[n - 1] == wl->at[2 * i])
            continue;
        if (n == max)
            return false;
        nodes[n++] = wl->at[2 * i];
    }
    *ret_n = n;
    return true;
}

/* Ends holding: frees the GPUs and the usage, and tells a waiting preemptor. */
static void stop_holding(struct sched *s, int32_t w, int64_t now_ms)
{
    struct workload *wl = &s->wls[w];
    int32_t nodes[16], n_nodes = 0;
    bool only_there = wl->cls != NONE && freed_where(s, w, nodes, &n_nodes, 16);
    /* What a pool lends is counted over its classes: a loan given back may let any of them borrow.
     */
    bool loan = holds_limited_loan(s, w);
    if (wl->preemptor_id) {
        int32_t pre = idmap_get(&s->workload_ids, wl->preemptor_id);
        if (pre != NONE && s->wls[pre].victims_pending > 0 &&
            --s->wls[pre].victims_pending == 0 && !s->wls[pre].reclaim_ready) {
            s->wls[pre].reclaim_ready = true;
            ivec_push(&s->ready, pre);
        }
        wl->preemptor_id = 0;
    }
    place__release(s, w);
    sched__charge_at(s, w, -1, now_ms);
    if (wl->cls != NONE) {
        /*
         * Its project (and organization, where capped) now hold less:
         * quota-bound work may go too. Only work of this class is looked at
         * again: what it frees is its class's devices (the CPU and memory
         * freed beside them are found by other classes' work at their next
         * event or timer, as before).
         */
        const struct org *o = &s->orgs[s->projects[wl->project].org];
        const struct org_cap *oc = sched__org_cap(s, s->projects[wl->project].org, wl->cls, false);
        sched__mark_class_dirty(s, wl->project, wl->cls);
        for (int32_t i = 0; oc && oc->limit >= 0 && i < o->members.n; i++) {
            const struct quota *q = sched__quota(&s->projects[o->members.v[i]], wl->cls, false);
            if (q && q->queued > 0)
                sched__mark_class_dirty(s, o->members.v[i], wl->cls);
        }
        if (loan) {
            for (int32_t c = 0; c < s->n_classes; c++)
                sched__class_freed(s, c);
        } else if (only_there) {
            sched__nodes_freed(s, wl->cls, nodes, n_nodes);
        } else {
            sched__class_freed(s, wl->cls);
        }
    } else {
        for (int32_t i = 0; i < s->n_projects; i++)
            sched__mark_dirty(s, i);
    }
}

int sched_cancel(struct sched *s, int64_t workload_id, int64_t now_ms)
{
    int32_t w = idmap_get(&s->workload_ids, workload_id);
    share__tick(s, now_ms);
    if (w == NONE)
        return SCHED_ENOENT;
    if (s->wls[w].state == SCHED_QUEUED) {
        /*
         * Work behind it in the queue may come into view: the room record no
         * longer holds, and the next pass looks at its class (owned work
         * behind it may run now; property seed 15131 waited for a later wake).
         */
        if (s->wls[w].cls != NONE) {
            sched__quota(&s->projects[s->wls[w].project], s->wls[w].cls, true)->room.known = false;
            sched__mark_class_dirty(s, s->wls[w].project, s->wls[w].cls);
        } else {
            sched__mark_dirty(s, s->wls[w].project);
        }
        sched__queue_remove(s, w);
        room__refile(s, s->wls[w].project);
    } else
        stop_holding(s, w, now_ms);
    workload_drop(s, w);
    return 0;
}

int sched_released(struct sched *s, int64_t workload_id, int64_t now_ms)
{
    int32_t w = idmap_get(&s->workload_ids, workload_id);
    struct workload *wl;
    bool requeue;
    share__tick(s, now_ms);
    if (w == NONE)
        return SCHED_ENOENT;
    wl = &s->wls[w];
    if (wl->state == SCHED_QUEUED)
        return SCHED_ESTATE;
    requeue = wl->state == SCHED_PREEMPTING && wl->spec.requeue;
    stop_holding(s, w, now_ms);
    if (requeue) {
        /* Back in line at its original place: submit_ms is unchanged. */
        wl->started_ms = wl->checkpoint_ms = 0;
        wl->reason = (struct sched_reason){.code = SCHED_WAIT_NEW};
        sched__queue_insert(s, w);
    } else {
        workload_drop(s, w);
    }
    return 0;
}

int sched_checkpoint(struct sched *s, int64_t workload_id, int64_t now_ms)
{
    int32_t w = idmap_get(&s->workload_ids, workload_id);
    if (w == NONE)
        return SCHED_ENOENT;
    if (s->wls[w].state == SCHED_QUEUED)
        return SCHED_ESTATE;
    s->wls[w].checkpoint_ms = now_ms;
    return 0;
}

int sched_restore_running(struct sched *s, const struct sched_workload_spec *spec,
                          enum sched_class runs_as, const int64_t *gpus, const int32_t *milli,
                          const int32_t *replica_of, size_t n, int64_t started_ms, bool preempting)
{
    int rc = check_spec(s, spec);
    struct workload *wl;
    int32_t w;

    if (rc < 0)
        return rc;
    if (runs_as != 0 && runs_as != SCHED_P1 && runs_as != SCHED_P2)
        return SCHED_EINVAL;
    if (runs_as != 0 && spec->pclass != SCHED_AUTO && runs_as != spec->pclass)
        return SCHED_EINVAL;
    for (size_t i = 0; i < n; i++) {
        int32_t g = idmap_get(&s->gpu_ids, gpus[i]);
        if (g == NONE)
            return SCHED_ENOENT;
        if (milli[i] <= 0 || milli[i] > s->gpus[g].free || replica_of[i] < 0 ||
            replica_of[i] >= spec->replicas)
            return SCHED_EINVAL;
    }
    w = workload_new(s, spec);
    wl = &s->wls[w];
    wl->assigns = xcalloc(n ? n : 1, sizeof(*wl->assigns));
    for (size_t i = 0; i < n; i++) {
        int32_t g = idmap_get(&s->gpu_ids, gpus[i]);
        place__gpu_take(s, g, milli[i]);
        place__lend(s, w, g, milli[i], +1);
        if (i == 0 || replica_of[i] != replica_of[i - 1]) {
            s->nodes[s->gpus[g].node].cpu_free -= spec->cpu_milli;
            s->nodes[s->gpus[g].node].mem_free -= spec->mem_mib;
        }
        wl->assigns[i] = (struct sched_assign){.replica = replica_of[i],
                                               .node_id = s->nodes[s->gpus[g].node].id,
                                               .gpu_id = gpus[i],
                                               .milli = milli[i]};
        ivec_remove_value(&s->nodes[s->gpus[g].node].running, w);
        ivec_push(&s->nodes[s->gpus[g].node].running, w);
    }
    wl->n_assigns = (int32_t)n;
    place__index_assigns(s, w);
    if (runs_as != 0)
        wl->runs_as = runs_as;
    wl->state = preempting ? SCHED_PREEMPTING : SCHED_RUNNING;
    wl->started_ms = wl->checkpoint_ms = started_ms;
    sched__charge(s, w, +1);
    return 0;
}

int sched_restore_preemption(struct sched *s, int64_t preemptor_id, const int64_t *victim_ids,
                             size_t n)
{
    int32_t p = idmap_get(&s->workload_ids, preemptor_id), *linked, n_linked = 0;
    if (p == NONE)
        return SCHED_ENOENT;
    linked = xcalloc(n + 1, sizeof(*linked));
    for (size_t i = 0; i < n; i++) {
        int32_t v = idmap_get(&s->workload_ids, victim_ids[i]);
        if (v == NONE || s->wls[v].state != SCHED_PREEMPTING || s->wls[v].preemptor_id)
            continue;
        s->wls[v].preemptor_id = preemptor_id;
        s->wls[p].victims_pending++;
        linked[n_linked++] = v;
    }
    /*
     * Its victims stop for it as owned work, which it stays until they
     * have (try_admit), whatever the automatic rule would say now.
     */
    if (s->wls[p].victims_pending > 0 && s->wls[p].state == SCHED_QUEUED &&
        s->wls[p].spec.pclass == SCHED_AUTO)
        s->wls[p].runs_as = SCHED_P1;
    /* Hold for the preemptor again the nodes it will go to, as the decision did. */
    reclaim__hold_restored(s, p, linked, n_linked);
    free(linked);
    if (s->wls[p].victims_pending > 0)
        s->wls[p].reason = (struct sched_reason){.code = SCHED_WAIT_RECLAIM,
                                                 .class_id = s->wls[p].spec.class_id,
                                                 .need = (int64_t)s->wls[p].spec.replicas *
                                                         s->wls[p].spec.gpu_milli,
                                                 .count = s->wls[p].victims_pending};
    return 0;
}

int sched_restore_reclaim_ready(struct sched *s, int64_t preemptor_id, const int64_t *node_ids,
                                size_t n_nodes)
{
    int32_t p = idmap_get(&s->workload_ids, preemptor_id), *nodes, n = 0;
    struct workload *wl;
    if (p == NONE)
        return SCHED_ENOENT;
    wl = &s->wls[p];
    if (wl->state != SCHED_QUEUED || wl->victims_pending > 0)
        return SCHED_ESTATE;
    if (wl->reclaim_ready)
        return 0;
    nodes = xcalloc(n_nodes + 1, sizeof(*nodes));
    for (size_t i = 0; i < n_nodes; i++) {
        int32_t nd = idmap_get(&s->node_ids, node_ids[i]);
        if (nd != NONE)
            nodes[n++] = nd;
    }
    /*
     * Until that try it is what its victims stopped for, owned work, as in
     * the core that decided (try_admit judges automatic work afresh then).
     */
    if (wl->spec.pclass == SCHED_AUTO)
        wl->runs_as = SCHED_P1;
    /*
     * Its nodes held as the decision held them: going first, it needs no
     * hold to find its room, but a try that fails (a node drained
     * meanwhile) leaves it holding them in the core that decided, and so
     * here.
     */
    reclaim__hold_ready(s, p, nodes, n);
    free(nodes);
    wl->reclaim_ready = true;
    ivec_push(&s->ready, p);
    return 0;
}

/* ---- decisions ---- */

void sched_decisions_init(struct sched_decisions *d)
{
    memset(d, 0, sizeof(*d));
}

void sched_decisions_reset(struct sched_decisions *d)
{
    d->n_admits = d->n_assigns = d->n_preemptions = d->n_victims = d->n_quotas = 0;
}

void sched_decisions_release(struct sched_decisions *d)
{
    free(d->admits);
    free(d->assigns);
    free(d->preemptions);
    free(d->victims);
    free(d->quotas);
    sched_decisions_init(d);
}

/* ---- queries ---- */

void sched_count_states(const struct sched *s, int64_t ret[SCHED_PREEMPTING + 1])
{
    memset(ret, 0, sizeof(int64_t) * (SCHED_PREEMPTING + 1));
    for (int32_t w = 0; w < s->n_wls; w++) {
        const struct workload *wl = &s->wls[w];
        if (wl->state >= SCHED_QUEUED && wl->state <= SCHED_PREEMPTING &&
            idmap_get(&s->workload_ids, wl->spec.id) == w)
            ret[wl->state]++;
    }
}

int sched_workload_info(const struct sched *s, int64_t workload_id,
                        struct sched_workload_info *ret)
{
    int32_t w = idmap_get(&s->workload_ids, workload_id);
    const struct workload *wl;
    if (w == NONE)
        return SCHED_ENOENT;
    wl = &s->wls[w];
    memset(ret, 0, sizeof(*ret));
    ret->state = wl->state;
    ret->started_ms = wl->started_ms;
    ret->runs_as = wl->runs_as;
    if (wl->state == SCHED_QUEUED) {
        ret->hold_taken_by = wl->hold_taken_by;
        ret->reason = wl->reason;
        /*
         * A reservation's end has only the work due for it looked at again
         * (sched__hol_freed): the rest still names the old holder, so the
         * holder named is the class's current one.
         */
        if (ret->reason.code == SCHED_WAIT_RESERVED && wl->cls != NONE) {
            int32_t r = s->classes[wl->cls].hol_reserver;
            if (r != NONE && r != w) {
                ret->reason.other_id = s->wls[r].spec.id;
            } else {
                ret->reason.code = SCHED_WAIT_CAPACITY;
                ret->reason.other_id = 0;
                ret->reason.cap = place__largest_free(s, w);
            }
        }
        ret->queue_position = queue_lower_bound(s, &s->projects[wl->project], wl) + 1;
        /* Not looked at yet because earlier work of its project blocks the way. */
        if (ret->reason.code == SCHED_WAIT_NEW && ret->queue_position > 1)
            ret->reason = (struct sched_reason){.code = SCHED_WAIT_BEHIND,
                                                .class_id = wl->spec.class_id,
                                                .count = ret->queue_position - 1};
    }
    return 0;
}

size_t sched_closed_pools_with_room(const struct sched *s, int64_t workload_id, bool now,
                                    int64_t *ret_pool_ids, size_t max)
{
    int32_t w = idmap_get(&s->workload_ids, workload_id);
    if (w == NONE || s->wls[w].state != SCHED_QUEUED)
        return 0;
    return place__closed_room(s, w, now, ret_pool_ids, max);
}

/* Whether two workloads ask for the same resources in the same way. */
static bool same_shape(const struct sched_workload_spec *a, const struct sched_workload_spec *b)
{
    return a->pclass == b->pclass && a->replicas == b->replicas && a->class_id == b->class_id &&
           a->gpu_milli == b->gpu_milli && a->cpu_milli == b->cpu_milli &&
           a->mem_mib == b->mem_mib && a->n_selector == b->n_selector &&
           memcmp(a->selector, b->selector, sizeof(a->selector[0]) * (size_t)a->n_selector) == 0 &&
           a->n_pools == b->n_pools &&
           memcmp(a->pool_ids, b->pool_ids, sizeof(a->pool_ids[0]) * (size_t)a->n_pools) == 0 &&
           a->same_block == b->same_block;
}

/* Whether queued work of another project than proj waits for class cls, or a reservation. */
static bool others_wait(const struct sched *s, int32_t proj, int32_t cls)
{
    if (s->classes[cls].hol_reserver != NONE)
        return true;
    for (int32_t i = 0; i < s->n_projects; i++) {
        const struct project *q = &s->projects[i];
        if (i == proj)
            continue;
        for (int32_t k = 0; k < q->n_quotas; k++) {
            if (q->quotas[k].cls == cls && q->quotas[k].queued > 0)
                return true;
        }
    }
    return false;
}

bool sched_others_wait(const struct sched *s, int64_t project_id, int64_t class_id)
{
    int32_t cls = idmap_get(&s->class_ids, class_id);
    int32_t proj = idmap_get(&s->project_ids, project_id);
    return cls != NONE && proj != NONE && others_wait(s, proj, cls);
}

bool sched_ranked_before(const struct sched *s, const struct sched_workload_spec *spec)
{
    int32_t cls = idmap_get(&s->class_ids, spec->class_id);
    int32_t proj = idmap_get(&s->project_ids, spec->project_id);
    const struct project *p;
    struct workload probe = {.spec = *spec};

    if (cls == NONE || proj == NONE)
        return false;
    p = &s->projects[proj];
    /* The queue is sorted: only its part before spec's place is looked at. */
    for (int32_t i = 0; i < p->queue.n && queue_before(&s->wls[p->queue.v[i]], &probe); i++) {
        const struct workload *q = &s->wls[p->queue.v[i]];
        if (q->cls == cls && q->spec.id != spec->id)
            return true;
    }
    return false;
}

int sched_successor_like(const struct sched *s, const struct sched_workload_spec *like,
                         int64_t *ret_id)
{
    int32_t cls = idmap_get(&s->class_ids, like->class_id);
    int32_t proj = idmap_get(&s->project_ids, like->project_id);
    const struct project *p;

    /* Another project waiting for the class, or a reservation in it: a pass decides. */
    if (cls == NONE || proj == NONE || like->replicas != 1 || like->gpu_milli < WHOLE ||
        like->gpu_milli % WHOLE != 0 || others_wait(s, proj, cls))
        return SCHED_ENOENT;
    p = &s->projects[proj];
    for (int32_t i = 0; i < p->queue.n; i++) {
        const struct workload *q = &s->wls[p->queue.v[i]];
        if (q->cls != cls)
            continue;
        if (q->state != SCHED_QUEUED || !same_shape(&q->spec, like) || q->victims_pending > 0 ||
            q->reclaim_ready || q->reserved.n > 0)
            return SCHED_ENOENT;
        *ret_id = q->spec.id;
        return 0;
    }
    return SCHED_ENOENT;
}

int sched_successor(const struct sched *s, int64_t running_id, int64_t *ret_id)
{
    int32_t w = idmap_get(&s->workload_ids, running_id);
    const struct workload *r;

    if (w == NONE)
        return SCHED_ENOENT;
    r = &s->wls[w];
    if (r->state != SCHED_RUNNING || r->cls == NONE || r->n_assigns < 1 || r->at[0] == NONE ||
        s->nodes[r->at[0]].reserved_for != NONE)
        return SCHED_ENOENT;
    /*
     * Automatic work takes over the class of the work it follows. Owned work
     * hands owned work its own share of the guarantee; opportunistic work
     * only while the same request would still be beyond the guarantee.
     */
    if (r->spec.pclass == SCHED_AUTO && r->runs_as == SCHED_P2 &&
        sched__auto_class(s, w) == SCHED_P1)
        return SCHED_ENOENT;
    return sched_successor_like(s, &r->spec, ret_id);
}

int sched_project_usage(const struct sched *s, int64_t project_id, int64_t class_id,
                        struct sched_usage *ret)
{
    int32_t p = idmap_get(&s->project_ids, project_id), c = idmap_get(&s->class_ids, class_id);
    const struct project *pr;
    memset(ret, 0, sizeof(*ret));
    ret->limit = -1;
    if (p == NONE || c == NONE)
        return SCHED_ENOENT;
    pr = &s->projects[p];
    for (int32_t i = 0; i < pr->n_quotas; i++) {
        const struct quota *q = &pr->quotas[i];
        if (q->cls != c)
            continue;
        ret->p1 = q->p1;
        ret->p2 = q->p2;
        ret->guaranteed = sched__guaranteed(s, pr, q);
        ret->limit = q->limit;
    }
    return 0;
}

int sched_class_capacity(const struct sched *s, int64_t class_id, int64_t *ret_capacity,
                         int64_t *ret_free)
{
    int32_t c = idmap_get(&s->class_ids, class_id);
    if (c == NONE)
        return SCHED_ENOENT;
    *ret_capacity = s->classes[c].capacity;
    *ret_free = s->classes[c].free;
    return 0;
}

int64_t sched_class_guaranteed(const struct sched *s, int64_t class_id)
{
    int32_t c = idmap_get(&s->class_ids, class_id);
    int64_t sum = 0;
    if (c == NONE)
        return 0;
    for (int32_t p = 0; p < s->n_projects; p++) {
        const struct project *pr = &s->projects[p];
        for (int32_t i = 0; i < pr->n_quotas; i++) {
            if (pr->quotas[i].cls == c)
                sum += sched__guaranteed(s, pr, &pr->quotas[i]);
        }
    }
    return sum;
}
