/* SPDX-License-Identifier: Apache-2.0 */
/*
 * build.c: what the scheduler core is told of a store row: a pool, a node
 * (its labels interned), a GPU's pool, a quota, a flavor, a workload. The
 * one reading of these rows, shared by the engine's rebuild (load.c) and
 * the what-if's world (whatif.c), so a replay's core is built exactly as
 * the live one is.
 */
#include "engine/engine-int.h"

#include <jansson.h>

static uint32_t intern_label(struct label_table *t, const char *key, const char *val)
{
    char buf[600];
    snprintf(buf, sizeof(buf), "%s=%s", key, val);
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->v[i], buf) == 0)
            return (uint32_t)i + 1;
    }
    ALLOC_GROW(t->v, t->n + 1, t->cap);
    t->v[t->n++] = xstrdup(buf);
    return (uint32_t)t->n;
}

int engine__intern_labels(struct label_table *t, const char *json, uint32_t *out, int max)
{
    json_t *obj = json_loads(json && *json ? json : "{}", 0, NULL), *v;
    const char *k;
    int n = 0;
    json_object_foreach(obj, k, v)
    {
        if (n < max && json_is_string(v))
            out[n++] = intern_label(t, k, json_string_value(v));
    }
    json_decref(obj);
    return n;
}

void engine__label_table_release(struct label_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

void engine__pool_spec(const struct row *p, struct arena *a, struct sched_pool_spec *ret)
{
    json_t *ap = json_loads(row_str(p, F_POOLS_ACCESS_PROJECT_IDS), 0, NULL);
    json_t *ao = json_loads(row_str(p, F_POOLS_ACCESS_ORG_IDS), 0, NULL);
    /* every id of the lists, however long (sched_set_pool copies them) */
    int64_t *aps = arena_calloc(a, json_array_size(ap) + 1, sizeof(*aps));
    int64_t *aos = arena_calloc(a, json_array_size(ao) + 1, sizeof(*aos));
    size_t nap = 0, nao = 0, k;
    json_t *v;
    json_array_foreach(ap, k, v) aps[nap++] = json_integer_value(v);
    json_array_foreach(ao, k, v) aos[nao++] = json_integer_value(v);
    *ret = (struct sched_pool_spec){.id = model_row_id(p),
                                    .owner_project_id = row_int(p, F_POOLS_OWNER_PROJECT_ID),
                                    .owner_org_id = row_int(p, F_POOLS_OWNER_ORG_ID),
                                    .access_project_ids = aps,
                                    .n_access_projects = nap,
                                    .access_org_ids = aos,
                                    .n_access_orgs = nao,
                                    .lend_to_all = row_int(p, F_POOLS_LEND_TO_ALL) != 0,
                                    .lending_limit = row_get(p, F_POOLS_LENDING_LIMIT_MILLI)->null
                                                         ? 0
                                                         : row_int(p, F_POOLS_LENDING_LIMIT_MILLI)};
    json_decref(ap);
    json_decref(ao);
}

void engine__node_spec(struct label_table *t, const struct row *r, struct sched_node_spec *ret,
                       enum sched_node_state *ret_state)
{
    const char *state = row_str(r, F_NODES_STATE);
    memset(ret, 0, sizeof(*ret));
    ret->id = model_row_id(r);
    ret->cluster_id = row_int(r, F_NODES_CLUSTER_ID);
    ret->cpu_milli = row_int(r, F_NODES_CPU_MILLI);
    ret->mem_mib = row_int(r, F_NODES_MEMORY_MIB);
    ret->n_labels =
        engine__intern_labels(t, row_str(r, F_NODES_LABELS), ret->labels, SCHED_MAX_LABELS);
    *ret_state = strcmp(state, "ready") == 0   ? SCHED_NODE_READY
                 : strcmp(state, "drain") == 0 ? SCHED_NODE_DRAIN
                                               : SCHED_NODE_DOWN;
}

/* The labels (JSON text) of a node among rows listed in id order. */
static const char *node_labels(const struct row *rows, size_t n, int64_t node_id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t id = model_row_id(&rows[mid]);
        if (id == node_id)
            return row_str(&rows[mid], F_NODES_LABELS);
        if (id < node_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return "{}";
}

int64_t engine__gpu_pool(const struct row *pools, size_t n_pools, const struct row *node_rows,
                         size_t n_node_rows, const struct row *gpu, int64_t cluster_id)
{
    return model_pool_of_gpu(pools, n_pools, model_row_id(gpu), cluster_id,
                             node_labels(node_rows, n_node_rows, row_int(gpu, F_GPUS_NODE_ID)));
}

void engine__quota_of(const struct row *q, int64_t *ret_guaranteed, int64_t *ret_limit)
{
    const struct value *g = row_get(q, F_QUOTAS_GUARANTEED_MILLI);
    const struct value *l = row_get(q, F_QUOTAS_LIMIT_MILLI);
    *ret_guaranteed = g->null ? -1 : g->i;
    *ret_limit = l->null ? -1 : l->i;
}

void engine__flavor_of(struct label_table *t, const struct row *r, struct flavor_info *f)
{
    json_t *pl, *v;
    size_t k;
    memset(f, 0, sizeof(*f));
    f->id = model_row_id(r);
    f->class_id = row_int(r, F_FLAVORS_GPU_CLASS_ID);
    f->gpu_milli = (int32_t)row_int(r, F_FLAVORS_GPU_MILLI);
    f->cpu_milli = row_int(r, F_FLAVORS_VCPUS) * 1000;
    f->mem_mib = row_int(r, F_FLAVORS_MEMORY_MIB);
    f->active = row_int(r, F_FLAVORS_ACTIVE);
    pl = json_loads(row_str(r, F_FLAVORS_POOL_IDS), 0, NULL);
    json_array_foreach(pl, k, v)
    {
        if (f->n_pools < SCHED_MAX_POOLS)
            f->pools[f->n_pools++] = json_integer_value(v);
    }
    json_decref(pl);
    f->n_selector = engine__intern_labels(t, row_str(r, F_FLAVORS_NODE_SELECTOR), f->selector,
                                          SCHED_MAX_SELECTOR);
}

enum sched_class engine__class_of(const char *priority_class)
{
    if (strcmp(priority_class, "owned") == 0)
        return SCHED_P1;
    return strcmp(priority_class, "auto") == 0 ? SCHED_AUTO : SCHED_P2;
}

const char *engine__class_text(enum sched_class c)
{
    return c == SCHED_P1 ? "owned" : "opportunistic";
}

int engine__spec_from(const struct flavor_info *f, const struct row *w,
                      struct sched_workload_spec *sp)
{
    const struct value *grace = row_get(w, F_WORKLOADS_GRACE_S);

    if (!f)
        return ERR_INVALID;
    memset(sp, 0, sizeof(*sp));
    sp->id = model_row_id(w);
    sp->project_id = row_int(w, F_WORKLOADS_PROJECT_ID);
    sp->pclass = engine__class_of(row_str(w, F_WORKLOADS_PRIORITY_CLASS));
    sp->priority = (int32_t)row_int(w, F_WORKLOADS_PRIORITY);
    sp->submit_ms = row_int(w, F_WORKLOADS_SUBMITTED_MS);
    sp->replicas = (int32_t)row_int(w, F_WORKLOADS_REPLICAS);
    sp->class_id = f->class_id;
    sp->gpu_milli = f->gpu_milli;
    sp->cpu_milli = f->cpu_milli;
    sp->mem_mib = f->mem_mib;
    memcpy(sp->selector, f->selector, sizeof(f->selector));
    sp->n_selector = f->n_selector;
    memcpy(sp->pool_ids, f->pools, sizeof(f->pools));
    sp->n_pools = f->n_pools;
    sp->min_runtime_ms = row_int(w, F_WORKLOADS_MIN_RUNTIME_S) * 1000;
    sp->grace_ms = grace->null ? -1 : grace->i * 1000;
    sp->requeue = row_int(w, F_WORKLOADS_REQUEUE) != 0;
    return 0;
}
