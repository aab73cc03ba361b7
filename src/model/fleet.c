/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet.c: which pool a GPU belongs to. One rule, used by the engine (to
 * build the scheduler's pools) and by showback (to charge a pool's owner),
 * so the two can never disagree about who owns a GPU.
 */
#include "base/common.h"

#include <jansson.h>

#include "model/model.h"

static bool labels_match(const char *node_labels, const char *selector)
{
    json_t *nl = json_loads(node_labels && *node_labels ? node_labels : "{}", 0, NULL);
    json_t *sel = json_loads(selector && *selector ? selector : "{}", 0, NULL), *v;
    const char *k;
    bool ok = true;
    json_object_foreach(sel, k, v)
    {
        json_t *have = json_object_get(nl, k);
        if (!have || !json_equal(have, v))
            ok = false;
    }
    json_decref(nl);
    json_decref(sel);
    return ok;
}

static bool id_in_json_list(const char *json, int64_t id)
{
    json_t *list = json_loads(json && *json ? json : "[]", 0, NULL), *v;
    size_t i;
    bool found = false;
    json_array_foreach(list, i, v)
    {
        if (json_integer_value(v) == id)
            found = true;
    }
    json_decref(list);
    return found;
}

int64_t model_pool_of_gpu(const struct row *pools, size_t n_pools, int64_t gpu_id,
                          int64_t cluster_id, const char *node_labels)
{
    for (size_t k = 0; k < n_pools; k++) {
        if (id_in_json_list(row_get(&pools[k], F_POOLS_GPU_IDS)->s, gpu_id))
            return model_row_id(&pools[k]);
    }
    for (size_t k = 0; k < n_pools; k++) {
        const struct value *cl = row_get(&pools[k], F_POOLS_CLUSTER_ID);
        const char *sel = row_get(&pools[k], F_POOLS_NODE_SELECTOR)->s;
        int64_t want = cl->null ? 0 : cl->i;
        bool any_criterion = want || (sel && strcmp(sel, "{}") != 0);
        if (!any_criterion || (want && want != cluster_id))
            continue;
        if (sel && strcmp(sel, "{}") != 0 && !labels_match(node_labels, sel))
            continue;
        return model_row_id(&pools[k]);
    }
    return 0;
}
