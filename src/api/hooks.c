/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hooks.c: which resource has which hooks (api-int.h, struct
 * resource_hooks). Each table is defined in the file that holds that
 * resource's rules; the fleet and catalog have no rule but one: their
 * changes reach the scheduler (and a Kubernetes cluster's kubeconfig must
 * read as one). A resource listed nowhere gets the empty
 * table: the generic handling alone.
 */
#include "base/common.h"

#include "api/api-int.h"
#include "backend/kube.h"

/* Clusters, nodes, GPUs, classes, pools, flavors, organizations' quotas. */
static const struct resource_hooks scheduling_hooks = {.shapes_scheduling = true};
static const struct resource_hooks no_hooks = {0};

/*
 * A Kubernetes cluster's endpoint is its kubeconfig: it must read as one
 * now, so a typo is a 400 at once rather than a line in the daemon's log.
 * Reaching the apiserver is the backend's start (it may be down for a while).
 */
static int check_cluster(const struct row *row, struct error_info *ei)
{
    struct kube_config *kc;
    int rc;

    if (strcmp(row_str(row, F_CLUSTERS_BACKEND), "kubernetes") != 0)
        return 0;
    rc = kube_config_load(row_str(row, F_CLUSTERS_ENDPOINT), &kc, ei);
    kube_config_free(kc);
    return rc;
}

static int cluster_check_create(struct req *r, struct row *row, struct row *ret_same,
                                struct error_info *ei)
{
    (void)r;
    (void)ret_same;
    return check_cluster(row, ei);
}

static int cluster_check_update(struct req *r, const struct row *before, const struct row *patch,
                                const struct row *after, struct error_info *ei)
{
    (void)r;
    (void)before;
    (void)patch;
    return check_cluster(after, ei);
}

static const struct resource_hooks cluster_hooks = {.shapes_scheduling = true,
                                                    .check_create = cluster_check_create,
                                                    .check_update = cluster_check_update};

static const struct {
    const struct resource_def *def;
    const struct resource_hooks *hooks;
} table[] = {
    {&model_organizations, &rbac_org_hooks},
    {&model_projects, &rbac_project_hooks},
    {&model_users, &rbac_user_hooks},
    {&model_role_bindings, &rbac_binding_hooks},
    {&model_tokens, &auth_token_hooks},
    {&model_clusters, &cluster_hooks},
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
