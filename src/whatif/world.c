/* SPDX-License-Identifier: Apache-2.0 */
/*
 * world.c: a scheduler core made from a what-if world, with the changes
 * applied: the only place a replay's core is built. The world is read
 * only; the core, its policy and every added node belong to the replay.
 */
#include "base/common.h"

#include "base/err.h"
#include "sched/policies.h"
#include "whatif/whatif-int.h"

#define MAX_QUOTA_DELTA_MILLI (INT64_C(100000) * 1000) /* 100,000 GPUs */

static bool has_id(const int64_t *ids, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (ids[i] == id)
            return true;
    }
    return false;
}

static bool has_project(const struct whatif_world *w, int64_t id)
{
    for (size_t i = 0; i < w->n_projects; i++) {
        if (w->projects[i].id == id)
            return true;
    }
    return false;
}

static bool has_pool(const struct whatif_world *w, int64_t id)
{
    for (size_t i = 0; i < w->n_pools; i++) {
        if (w->pools[i].id == id)
            return true;
    }
    return false;
}

/* A policy by name, made afresh (NULL for the built-in best-fit); *ret_ok false when unknown. */
static struct sched_policy *policy_new(const char *name, bool *ret_ok)
{
    struct fgd_workload typical;
    struct sched_policy *p;

    *ret_ok = true;
    if (!name || !*name || strcmp(name, "default") == 0)
        return NULL;
    if (fgd_workload_parse(SCHED_POLICY_DEFAULT_PODS, &typical) < 0) {
        *ret_ok = false;
        return NULL;
    }
    p = sched_policy_by_name(name, 1, &typical);
    fgd_workload_release(&typical);
    *ret_ok = p != NULL;
    return p;
}

int whatif_check_changes(const struct whatif_world *w, const struct whatif_change *changes,
                         size_t n, struct error_info *ei)
{
    if (n > WHATIF_MAX_CHANGES)
        return errinfo_set(ei, ERR_INVALID, "changes", "at most %d changes in one what-if",
                           WHATIF_MAX_CHANGES);
    for (size_t i = 0; i < n; i++) {
        const struct whatif_change *c = &changes[i];
        char f[32];
        bool ok = true;
        struct sched_policy *p;
        snprintf(f, sizeof(f), "changes[%zu]", i);
        switch (c->kind) {
        case WHATIF_QUOTA:
            if (!has_project(w, c->project_id))
                return errinfo_set(ei, ERR_INVALID, f, "%s: no project with id %" PRId64, f,
                                   c->project_id);
            if (!has_id(w->classes, w->n_classes, c->class_id))
                return errinfo_set(ei, ERR_INVALID, f, "%s: no GPU class with id %" PRId64, f,
                                   c->class_id);
            if (c->milli == 0 || c->milli > MAX_QUOTA_DELTA_MILLI ||
                c->milli < -MAX_QUOTA_DELTA_MILLI)
                return errinfo_set(ei, ERR_INVALID, f,
                                   "%s: the guarantee's change must be non-zero and at most "
                                   "100000 GPUs either way",
                                   f);
            break;
        case WHATIF_ADD_NODES:
        case WHATIF_REMOVE_NODES:
            if (!has_id(w->classes, w->n_classes, c->class_id))
                return errinfo_set(ei, ERR_INVALID, f, "%s: no GPU class with id %" PRId64, f,
                                   c->class_id);
            if (c->count < 1 || c->count > WHATIF_MAX_ADD_NODES)
                return errinfo_set(ei, ERR_INVALID, f, "%s: count must be 1 to %d nodes", f,
                                   WHATIF_MAX_ADD_NODES);
            if (c->kind == WHATIF_ADD_NODES &&
                (c->gpus_per_node < 0 || c->gpus_per_node > SCHED_MAX_GPUS_PER_NODE))
                return errinfo_set(ei, ERR_INVALID, f, "%s: gpus_per_node must be 0 to %d", f,
                                   SCHED_MAX_GPUS_PER_NODE);
            if (c->kind == WHATIF_ADD_NODES && c->pool_id != 0 && !has_pool(w, c->pool_id))
                return errinfo_set(ei, ERR_INVALID, f, "%s: no pool with id %" PRId64, f,
                                   c->pool_id);
            break;
        case WHATIF_LEND_TO_ALL:
            if (!has_pool(w, c->pool_id))
                return errinfo_set(ei, ERR_INVALID, f, "%s: no pool with id %" PRId64, f,
                                   c->pool_id);
            break;
        case WHATIF_POLICY:
            p = policy_new(c->policy, &ok);
            sched_policy_free(p);
            if (!ok)
                return errinfo_set(
                    ei, ERR_INVALID, f,
                    "%s: unknown placement policy '%s' (one of: default, " SCHED_POLICY_NAMES ")",
                    f, c->policy);
            break;
        case WHATIF_GRACE:
            if (c->grace_ms < 0 || c->grace_ms > WHATIF_MAX_RUN_MS)
                return errinfo_set(ei, ERR_INVALID, f, "%s: grace must be 0 to 31 days", f);
            break;
        default:
            return errinfo_set(ei, ERR_INVALID, f, "%s: unknown kind of change", f);
        }
    }
    return 0;
}

/* Each node's class (its first GPU's; nodes hold one class in practice) and GPUs of it. */
struct node_class {
    int64_t cls;
    int n;
};

struct id_index {
    int64_t id;
    size_t i;
};

static int cmp_id(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static int cmp_id_index(const void *x, const void *y)
{
    const struct id_index *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

static struct node_class *node_classes(const struct whatif_world *w)
{
    struct node_class *nc = xcalloc(w->n_nodes + 1, sizeof(*nc));
    struct id_index *ix = xcalloc(w->n_nodes + 1, sizeof(*ix));
    for (size_t i = 0; i < w->n_nodes; i++)
        ix[i] = (struct id_index){w->nodes[i].spec.id, i};
    qsort(ix, w->n_nodes, sizeof(*ix), cmp_id_index);
    for (size_t i = 0; i < w->n_gpus; i++) {
        struct id_index key = {w->gpus[i].node_id, 0};
        const struct id_index *hit = bsearch(&key, ix, w->n_nodes, sizeof(*ix), cmp_id_index);
        struct node_class *c = hit ? &nc[hit->i] : NULL;
        if (!c)
            continue;
        if (!c->cls)
            c->cls = w->gpus[i].class_id;
        c->n += w->gpus[i].class_id == c->cls;
    }
    free(ix);
    return nc;
}

static int add_nodes(struct whatif_core *core, const struct whatif_world *w,
                     const struct node_class *nc, const struct whatif_change *c, int64_t *next_node,
                     int64_t *next_gpu)
{
    struct sched_node_spec spec;
    int per_node = 8;

    memset(&spec, 0, sizeof(spec));
    for (size_t i = 0; i < w->n_nodes; i++) { /* the class's first node is the template */
        if (nc[i].cls == c->class_id) {
            spec = w->nodes[i].spec;
            per_node = nc[i].n;
            break;
        }
    }
    if (c->gpus_per_node > 0)
        per_node = c->gpus_per_node;
    spec.block_id = 0;
    for (int64_t k = 0; k < c->count; k++) {
        spec.id = (*next_node)++;
        if (sched_add_node(core->s, &spec) < 0)
            return ERR_INVALID;
        for (int g = 0; g < per_node; g++) {
            if (sched_add_gpu(core->s, spec.id, (*next_gpu)++, c->class_id, c->pool_id) < 0)
                return ERR_INVALID;
        }
    }
    return 0;
}

/* Takes count ready nodes of the class out, the highest ids first. */
static void remove_nodes(struct whatif_core *core, const struct whatif_world *w,
                         const struct node_class *nc, const struct whatif_change *c, bool *down)
{
    int64_t left = c->count;
    for (size_t i = w->n_nodes; i-- > 0 && left > 0;) {
        if (down[i] || w->nodes[i].state != SCHED_NODE_READY || nc[i].cls != c->class_id)
            continue;
        sched_set_node_state(core->s, w->nodes[i].spec.id, SCHED_NODE_DOWN);
        down[i] = true;
        left--;
    }
}

static int apply_quota(struct whatif_core *core, const struct whatif_change *c)
{
    struct sched_usage u;
    int64_t g, l;
    if (sched_project_usage(core->s, c->project_id, c->class_id, &u) < 0)
        return ERR_INVALID;
    g = u.guaranteed + c->milli;
    if (g < 0)
        g = 0;
    l = u.limit;
    if (l >= 0) {
        l += c->milli;
        if (l < g)
            l = g;
    }
    return sched_set_quota(core->s, c->project_id, c->class_id, g, l) < 0 ? ERR_INVALID : 0;
}

int whatif__recorded_change(struct whatif_core *core, const struct whatif_recorded_change *tc,
                            const struct whatif_change *changes, size_t n)
{
    const struct whatif_quota *q = &tc->quota;

    if (tc->kind == WHATIF_REC_PROJECT)
        return sched_set_project(core->s, tc->project.id, tc->project.org_id, tc->project.weight) <
                       0
                   ? ERR_INVALID
                   : 0;
    if (tc->kind == WHATIF_REC_CAP)
        return sched_set_org_cap(core->s, tc->cap.org_id, tc->cap.class_id, tc->cap.limit) < 0
                   ? ERR_INVALID
                   : 0;
    if (tc->kind == WHATIF_REC_NODE) {
        if (core->n_removed > 0 &&
            bsearch(&tc->node.id, core->removed, core->n_removed, sizeof(int64_t), cmp_id))
            return 0; /* taken out by the what-if: stays down */
        return sched_set_node_state(core->s, tc->node.id, tc->node.state) < 0 ? ERR_INVALID : 0;
    }
    if (tc->kind == WHATIF_REC_POOL) {
        struct sched_pool_spec ps = tc->pool;
        for (size_t k = 0; k < n; k++) /* a pool lent to all stays lent to all */
            ps.lend_to_all |= changes[k].kind == WHATIF_LEND_TO_ALL && changes[k].pool_id == ps.id;
        return sched_set_pool(core->s, &ps) < 0 ? ERR_INVALID : 0;
    }
    if (sched_set_quota(core->s, q->project_id, q->class_id, q->guaranteed, q->limit) < 0)
        return ERR_INVALID;
    for (size_t k = 0; k < n; k++) { /* a changed guarantee stays changed by as much */
        if (changes[k].kind == WHATIF_QUOTA && changes[k].project_id == q->project_id &&
            changes[k].class_id == q->class_id && apply_quota(core, &changes[k]) < 0)
            return ERR_INVALID;
    }
    return 0;
}

static int build_fleet(struct whatif_core *core, const struct whatif_world *w,
                       const struct whatif_change *changes, size_t n)
{
    int64_t next_node = 1, next_gpu = 1;
    struct node_class *nc = NULL;
    bool *down = NULL;
    int rc = 0;

    for (size_t i = 0; i < w->n_classes; i++) {
        if (sched_add_class(core->s, w->classes[i]) < 0)
            return ERR_INVALID;
    }
    for (size_t i = 0; i < w->n_projects; i++) {
        if (sched_set_project(core->s, w->projects[i].id, w->projects[i].org_id,
                              w->projects[i].weight) < 0)
            return ERR_INVALID;
    }
    for (size_t i = 0; i < w->n_pools; i++) {
        struct sched_pool_spec ps = w->pools[i];
        for (size_t k = 0; k < n; k++)
            ps.lend_to_all |= changes[k].kind == WHATIF_LEND_TO_ALL && changes[k].pool_id == ps.id;
        if (sched_set_pool(core->s, &ps) < 0)
            return ERR_INVALID;
    }
    for (size_t i = 0; i < w->n_nodes; i++) {
        if (sched_add_node(core->s, &w->nodes[i].spec) < 0)
            return ERR_INVALID;
        if (w->nodes[i].state != SCHED_NODE_READY)
            sched_set_node_state(core->s, w->nodes[i].spec.id, w->nodes[i].state);
        if (w->nodes[i].spec.id >= next_node)
            next_node = w->nodes[i].spec.id + 1;
    }
    for (size_t i = 0; i < w->n_gpus; i++) {
        const struct whatif_gpu *g = &w->gpus[i];
        if (sched_add_gpu(core->s, g->node_id, g->id, g->class_id, g->pool_id) < 0)
            return ERR_INVALID;
        if (g->id >= next_gpu)
            next_gpu = g->id + 1;
    }
    if (n > 0) {
        nc = node_classes(w);
        down = xcalloc(w->n_nodes + 1, sizeof(*down));
    }
    for (size_t k = 0; rc >= 0 && k < n; k++) {
        if (changes[k].kind == WHATIF_ADD_NODES)
            rc = add_nodes(core, w, nc, &changes[k], &next_node, &next_gpu);
        if (changes[k].kind == WHATIF_REMOVE_NODES)
            remove_nodes(core, w, nc, &changes[k], down);
    }
    for (size_t i = 0; down && i < w->n_nodes; i++) {
        if (down[i]) {
            ALLOC_GROW(core->removed, core->n_removed + 1, core->cap_removed);
            core->removed[core->n_removed++] = w->nodes[i].spec.id;
        }
    }
    if (core->n_removed > 1)
        qsort(core->removed, core->n_removed, sizeof(int64_t), cmp_id);
    free(nc);
    free(down);
    return rc;
}

static int build_tenants(struct whatif_core *core, const struct whatif_world *w,
                         const struct whatif_change *changes, size_t n)
{
    for (size_t i = 0; i < w->n_quotas; i++) {
        const struct whatif_quota *q = &w->quotas[i];
        if (sched_set_quota(core->s, q->project_id, q->class_id, q->guaranteed, q->limit) < 0)
            return ERR_INVALID;
    }
    for (size_t i = 0; i < w->n_org_caps; i++) {
        const struct whatif_org_cap *q = &w->org_caps[i];
        if (sched_set_org_cap(core->s, q->org_id, q->class_id, q->limit) < 0)
            return ERR_INVALID;
    }
    for (size_t k = 0; k < n; k++) { /* after the fleet: derived guarantees count added GPUs */
        if (changes[k].kind == WHATIF_QUOTA && apply_quota(core, &changes[k]) < 0)
            return ERR_INVALID;
    }
    return 0;
}

int whatif__core_new(const struct whatif_world *w, const struct whatif_change *changes, size_t n,
                     struct whatif_core *ret, struct error_info *ei)
{
    struct sched_config cfg = w->cfg;
    const char *policy = w->policy;
    bool ok = true;
    int rc;

    memset(ret, 0, sizeof(*ret));
    ret->grace_ms = -1;
    for (size_t k = 0; k < n; k++) {
        if (changes[k].kind == WHATIF_POLICY)
            policy = changes[k].policy;
        if (changes[k].kind == WHATIF_GRACE)
            ret->grace_ms = changes[k].grace_ms;
    }
    ret->policy = policy_new(policy, &ok);
    if (!ok)
        return errinfo_set(ei, ERR_INVALID, "policy", "unknown placement policy '%s'", policy);
    cfg.policy = ret->policy;
    if (ret->grace_ms >= 0)
        cfg.default_grace_ms = ret->grace_ms;
    ret->s = sched_new(&cfg);
    if (!ret->s) {
        whatif__core_release(ret);
        return errinfo_set(ei, ERR_INVALID, NULL, "the scheduler's configuration is invalid");
    }
    rc = build_fleet(ret, w, changes, n);
    if (rc >= 0)
        rc = build_tenants(ret, w, changes, n);
    if (rc < 0) {
        whatif__core_release(ret);
        return errinfo_set(ei, ERR_INVALID, NULL,
                           "the fleet or its tenants cannot be replayed (an id twice, or a "
                           "GPU on an unknown node)");
    }
    ret->capacity_milli = whatif__capacity(ret, w);
    return 0;
}

int64_t whatif__capacity(const struct whatif_core *core, const struct whatif_world *w)
{
    int64_t total = 0;
    for (size_t i = 0; i < w->n_classes; i++) {
        int64_t cap = 0, fr = 0;
        if (sched_class_capacity(core->s, w->classes[i], &cap, &fr) == 0)
            total += cap;
    }
    return total;
}

void whatif__core_release(struct whatif_core *c)
{
    sched_free(c->s);
    sched_policy_free(c->policy);
    free(c->removed);
    c->s = NULL;
    c->policy = NULL;
    c->removed = NULL;
    c->n_removed = c->cap_removed = 0;
}
