/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hooks.c: which resource has which hooks (api-int.h, struct
 * resource_hooks). Each table is defined in the file that holds that
 * resource's rules; the fleet and catalog have no rule but one: their
 * changes reach the scheduler. A resource listed nowhere gets the empty
 * table: the generic handling alone.
 */
#include "base/common.h"

#include "api/api-int.h"

/* Clusters, nodes, GPUs, classes, pools, flavors, organizations' quotas. */
static const struct resource_hooks scheduling_hooks = {.shapes_scheduling = true};
static const struct resource_hooks no_hooks = {0};

static const struct {
    const struct resource_def *def;
    const struct resource_hooks *hooks;
} table[] = {
    {&model_organizations, &rbac_org_hooks},
    {&model_projects, &rbac_project_hooks},
    {&model_users, &rbac_user_hooks},
    {&model_role_bindings, &rbac_binding_hooks},
    {&model_tokens, &auth_token_hooks},
    {&model_clusters, &scheduling_hooks},
    {&model_nodes, &scheduling_hooks},
    {&model_gpus, &scheduling_hooks},
    {&model_gpu_classes, &scheduling_hooks},
    {&model_pools, &scheduling_hooks},
    {&model_flavors, &scheduling_hooks},
    {&model_org_quotas, &scheduling_hooks},
    {&model_quotas, &quota_hooks},
    {&model_prices, &billing_price_hooks},
    {&model_workloads, &workloads_hooks},
    {&model_events, &stream_event_hooks},
    {&model_preemptions, &preemptions_hooks},
};

const struct resource_hooks *resource_hooks_of(const struct resource_def *def)
{
    for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
        if (table[i].def == def)
            return table[i].hooks;
    }
    return &no_hooks;
}
