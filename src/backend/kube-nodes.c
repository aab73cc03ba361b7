/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-nodes.c: discovery from Node objects. A node's GPUs are its
 * allocatable nvidia.com/gpu (whole GPUs) and nvidia.com/mig-<profile>
 * (MIG slices, the device plugin's "mixed" strategy); their class comes
 * from NVIDIA GPU feature discovery's labels (nvidia.com/gpu.product,
 * nvidia.com/gpu.memory) through the inventory's normaliser, as the other
 * collectors' model strings do. Kubernetes does not say which physical GPU
 * is which, so GPUs are reported by index: whole GPUs 0..n-1, the slices
 * of the k-th MIG profile (in name order) from 100 x (k + 1). GPUs held by
 * pods gpuaas did not create are left out of the report (they turn
 * health "down" until those pods end), from the highest index down.
 */
#include "base/common.h"

#include "backend/kube-int.h"
#include "base/parse.h"
#include "inventory/inventory.h"
#include "model/model.h"

#define MIG_INDEX_BASE 100
#define MAX_GPUS_PER_RESOURCE 64

/*
 * A resource quantity ("8", "16000m", "128Gi", "1.5") in units of `unit`
 * (1 for counts, 1/1000 for milli-CPUs: scale 1000), rounded down; -1 when
 * it cannot be read.
 */
static int64_t quantity(const char *q, int64_t scale, int64_t unit)
{
    static const struct {
        const char *suffix;
        double factor;
    } units[] = {{"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
                 {"k", 1e3},     {"M", 1e6},        {"G", 1e9},           {"T", 1e12},
                 {"m", 1e-3}};
    char *end;
    double v;

    if (!q || !*q)
        return -1;
    errno = 0;
    v = strtod(q, &end);
    if (errno || v < 0 || end == q)
        return -1;
    if (*end) {
        size_t i;
        for (i = 0; i < ARRAY_SIZE(units); i++)
            if (strcmp(end, units[i].suffix) == 0)
                break;
        if (i == ARRAY_SIZE(units))
            return -1;
        v *= units[i].factor;
    }
    v = v * (double)scale / (double)unit;
    return v > 9e15 ? -1 : (int64_t)(v + 1e-9);
}

static bool tolerated(const char *key, const char *const *tolerate, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(key, tolerate[i]) == 0)
            return true;
    return false;
}

/* state and reason of a node: Ready condition, cordon, taints gpuaas's pods do not tolerate. */
static void node_state(json_t *node, const char *const *tolerate, size_t n_tolerate,
                       struct arena *a, struct backend_node_report *r)
{
    json_t *conds = json_object_get(json_object_get(node, "status"), "conditions"), *c, *t;
    json_t *spec = json_object_get(node, "spec");
    bool ready = false;
    const char *ready_msg = "no Ready condition";
    size_t i;

    json_array_foreach(conds, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && strcmp(type, "Ready") == 0) {
            const char *st = json_string_value(json_object_get(c, "status"));
            const char *msg = json_string_value(json_object_get(c, "message"));
            ready = st && strcmp(st, "True") == 0;
            ready_msg = msg && *msg ? msg : "Ready is not True";
        }
    }
    r->state = "ready";
    r->reason = "";
    if (!ready) {
        r->state = "down";
        r->reason = arena_printf(a, "kubernetes: node not ready: %.100s", ready_msg);
        return;
    }
    json_array_foreach(json_object_get(spec, "taints"), i, t)
    {
        const char *key = json_string_value(json_object_get(t, "key"));
        const char *effect = json_string_value(json_object_get(t, "effect"));
        if (!key || !effect || tolerated(key, tolerate, n_tolerate) ||
            strcmp(effect, "PreferNoSchedule") == 0)
            continue;
        if (strcmp(effect, "NoExecute") == 0) {
            r->state = "down";
            r->reason = arena_printf(a, "kubernetes: taint %.60s:NoExecute", key);
            return;
        }
        if (strcmp(r->state, "ready") == 0) {
            r->state = "drain";
            r->reason = arena_printf(a, "kubernetes: taint %.60s:%.20s", key, effect);
        }
    }
    if (json_is_true(json_object_get(spec, "unschedulable"))) {
        r->state = "drain";
        r->reason = "kubernetes: cordoned (unschedulable)";
    }
}

/* GPUs of resource res on node name that other pods request. */
static int64_t held_by_others(json_t *foreign_pods, const char *node, const char *res)
{
    json_t *p, *c;
    size_t i, k;
    int64_t held = 0;

    json_array_foreach(foreign_pods, i, p)
    {
        json_t *spec = json_object_get(p, "spec");
        const char *on = json_string_value(json_object_get(spec, "nodeName"));
        if (!on || strcmp(on, node) != 0)
            continue;
        json_array_foreach(json_object_get(spec, "containers"), k, c)
        {
            json_t *resources = json_object_get(c, "resources");
            json_t *q = json_object_get(json_object_get(resources, "limits"), res);
            if (!q)
                q = json_object_get(json_object_get(resources, "requests"), res);
            int64_t n = quantity(json_string_value(q), 1, 1);
            held += n > 0 ? n : 0;
        }
    }
    return held;
}

/* Appends resource res's count GPUs from first_index, the last `held` left out. */
static void add_gpus(struct backend_gpu_report *g, size_t *n, const char *cls, const char *model,
                     int64_t memory_mib, int64_t count, int64_t held, int32_t first_index)
{
    for (int64_t i = 0; i < count - held && i < MAX_GPUS_PER_RESOURCE; i++) {
        struct backend_gpu_report *r = &g[(*n)++];
        memset(r, 0, sizeof(*r));
        r->index = first_index + (int32_t)i;
        r->min_index = r->index;
        snprintf(r->cls, sizeof(r->cls), "%s", cls);
        r->uuid = "";
        r->model = model;
        r->memory_mib = memory_mib;
        r->mig_mode = -1;
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static size_t node_gpus(json_t *node, json_t *foreign_pods, const char *name, struct arena *a,
                        const struct backend_gpu_report **ret)
{
    json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");
    const char *product = json_string_value(json_object_get(labels, "nvidia.com/gpu.product"));
    int64_t mem =
        quantity(json_string_value(json_object_get(labels, "nvidia.com/gpu.memory")), 1, 1);
    const char *model = arena_strdup(a, product ? product : "");
    char cls[64] = "unknown";
    const char *res;
    json_t *v;
    size_t n = 0, cap = 0, k = 0;
    struct backend_gpu_report *g;

    json_object_foreach(alloc, res, v)
    {
        if (strcmp(res, KUBE_RESOURCE_GPU) == 0 ||
            strncmp(res, KUBE_RESOURCE_MIG_PREFIX, strlen(KUBE_RESOURCE_MIG_PREFIX)) == 0)
            cap += MAX_GPUS_PER_RESOURCE;
    }
    if (cap == 0)
        return 0;
    g = arena_calloc(a, cap, sizeof(*g));
    if (product && inv_model_class(product, NULL, cls, sizeof(cls)) < 0)
        snprintf(cls, sizeof(cls), "unknown");
    {
        /* MIG profiles numbered in name order, whatever order the object lists them in */
        const char *names[64];
        size_t n_names = 0;
        json_object_foreach(alloc, res, v)
        {
            if (n_names < ARRAY_SIZE(names))
                names[n_names++] = res;
        }
        qsort(names, n_names, sizeof(names[0]), by_name);
        for (size_t i = 0; i < n_names; i++) {
            int64_t count = quantity(json_string_value(json_object_get(alloc, names[i])), 1, 1);
            int64_t held = held_by_others(foreign_pods, name, names[i]);
            if (strcmp(names[i], KUBE_RESOURCE_GPU) == 0) {
                if (count > 0)
                    add_gpus(g, &n, cls, model, mem > 0 ? mem : 0, count, held, 0);
            } else if (strncmp(names[i], KUBE_RESOURCE_MIG_PREFIX,
                               strlen(KUBE_RESOURCE_MIG_PREFIX)) == 0) {
                const char *profile = names[i] + strlen(KUBE_RESOURCE_MIG_PREFIX);
                char mcls[64];
                k++;
                if (count <= 0 ||
                    inv_model_class(product ? product : "unknown", profile, mcls, sizeof(mcls)) <
                        0 ||
                    !model_valid_ident(mcls, 63))
                    continue; /* none, or a profile name the store would refuse */
                add_gpus(g, &n, mcls, model, 0, count, held, MIG_INDEX_BASE * (int32_t)k);
            }
        }
    }
    *ret = g;
    return n;
}

int kube_nodes_report(json_t *node_items, json_t *foreign_pods, const char *const *tolerate,
                      size_t n_tolerate, struct arena *a, struct backend_fleet_report *ret)
{
    size_t n = 0, i;
    json_t *node;
    struct backend_node_report *out =
        arena_calloc(a, json_array_size(node_items) + 1, sizeof(*out));

    json_array_foreach(node_items, i, node)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
        json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");
        struct backend_node_report *r = &out[n];
        const struct backend_gpu_report *gpus = NULL;
        size_t ng;

        if (!name || !model_valid_ident(name, 127))
            continue;
        ng = node_gpus(node, foreign_pods, name, a, &gpus);
        if (!gpus) /* no GPU resource at all: not a node of ours to offer */
            continue;
        memset(r, 0, sizeof(*r));
        r->name = arena_strdup(a, name);
        node_state(node, tolerate, n_tolerate, a, r);
        r->cpu_milli = quantity(json_string_value(json_object_get(alloc, "cpu")), 1000, 1);
        r->mem_mib = quantity(json_string_value(json_object_get(alloc, "memory")), 1, 1048576);
        r->counted_class = "";
        r->gpus = gpus;
        r->n_gpus = ng;
        n++;
    }
    *ret = (struct backend_fleet_report){.nodes = out, .n_nodes = n, .complete = true};
    return 0;
}
