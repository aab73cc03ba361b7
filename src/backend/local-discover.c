/* SPDX-License-Identifier: Apache-2.0 */
/*
 * local-discover.c: the local backend's discovery. This machine's GPUs
 * come from the NVML or nvidia-smi collector when one reports any, else
 * from the declared list (local-gpus). The report is one node named after
 * this host (an admin's drain or down of it stays) with its complete GPU
 * list, by UUID (without one, by index); the engine applies it (a GPU no
 * longer reported turns health "down", never deleted). A GPU with MIG
 * instances reported is scheduled as its instances: each is a GPU of its
 * own (its MIG-... UUID, class "<parent class>/<profile>"), and the parent
 * is reported split (health "mig", left out like "down"), so the same
 * memory is never offered twice.
 */
#include "base/common.h"

#include "backend/local-int.h"
#include "base/log.h"
#include "collect/collector.h"
#include "inventory/inventory.h"
#include "model/model.h"

/* Where MIG instances' rows are numbered: GPU p's instance i at 100 x (p + 1) + i. */
#define LOCAL_MIG_INDEX_BASE 100

/* One reading as a GPU report (strings copied to a); false when the store would refuse it. */
static bool gpu_of_reading(const struct inv_reading *r, struct arena *a,
                           struct backend_gpu_report *f, const char **ret_parent)
{
    const bool inst = r->mig_instance >= 0;

    if (inst && !r->mig_uuid[0])
        return false;
    if (inv_model_class(r->model, inst ? r->mig_profile : NULL, f->cls, sizeof(f->cls)) < 0)
        snprintf(f->cls, sizeof(f->cls), "unknown%s%.32s", inst ? "/" : "",
                 inst ? r->mig_profile : "");
    if (inst ? !model_valid_ident(f->cls, 63) || !strchr(f->cls, '/')
             : !model_valid_name(f->cls, 63))
        return false;
    if (!model_valid_ident(inst ? r->mig_uuid : r->uuid, 128))
        return false;
    f->index = r->index;
    f->uuid = arena_strdup(a, inst ? r->mig_uuid : r->uuid);
    f->model = arena_strdup(a, r->model);
    f->memory_mib = inv_has(r->fb_total_mib) ? (int64_t)r->fb_total_mib : 0;
    f->mig_mode = r->mig_mode;
    *ret_parent = NULL;
    if (inst) {
        /* an index no physical GPU has: GPU 0's instance 3 is 103 */
        f->min_index = LOCAL_MIG_INDEX_BASE;
        f->index = r->index >= 0 && r->mig_instance < LOCAL_MIG_INDEX_BASE
                       ? LOCAL_MIG_INDEX_BASE * (r->index + 1) + r->mig_instance
                       : -1;
        f->mig_mode = 1;
        *ret_parent = arena_strdup(a, r->uuid);
    }
    return true;
}

/*
 * The GPUs to report: the collector's readings (whole GPUs, and MIG
 * instances with their own UUID, which make their parent split), else the
 * declared list; false: none known.
 */
static bool found_gpus(const struct local_discovery *d, const struct inv_readings *rs,
                       uint64_t runs, struct arena *a, struct backend_gpu_report **ret,
                       size_t *ret_n)
{
    struct backend_gpu_report *found = arena_calloc(a, rs->n + d->n_gpus + 1, sizeof(*found));
    const char **parent = arena_calloc(a, rs->n + 1, sizeof(*parent));
    size_t n = 0;

    for (size_t i = 0; i < rs->n; i++) {
        if (gpu_of_reading(&rs->v[i], a, &found[n], &parent[n]))
            n++;
        else
            memset(&found[n], 0, sizeof(found[n]));
    }
    /* parents of the instances kept: split */
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; parent[i] && k < n; k++)
            found[k].split |= !parent[k] && strcmp(found[k].uuid, parent[i]) == 0;
    }
    for (size_t i = 0; rs->n == 0 && i < d->n_gpus; i++) {
        const struct inv_declared_gpu *dg = &d->gpus[i];
        struct backend_gpu_report *f = &found[n++];
        f->index = dg->index;
        snprintf(f->cls, sizeof(f->cls), "%s", dg->cls);
        f->uuid = arena_strdup(a, dg->uuid);
        f->model = "";
        f->mig_mode = -1;
    }
    *ret = found;
    *ret_n = n;
    /* sources that ran and found nothing, with nothing declared: every GPU is gone */
    return n > 0 || runs > 0;
}

int local_discover(struct local_discovery *d, bool fleet_loaded, struct arena *a,
                   struct backend_fleet_report *ret)
{
    struct backend_node_report *node;
    struct backend_gpu_report *found;
    struct inv_readings rs;
    size_t n_found;
    uint64_t runs = 0;
    char host[256];
    bool any;

    if (!d->collector && d->n_gpus == 0)
        return 0;
    inv_readings_init(&rs, 0);
    collector_local_gpus(d->collector, &rs, &runs);
    if (runs == d->runs && !fleet_loaded) {
        inv_readings_release(&rs);
        return 0;
    }
    d->runs = runs;
    if (gethostname(host, sizeof(host)) != 0)
        host[0] = '\0';
    host[sizeof(host) - 1] = '\0';
    if (!model_valid_ident(host, 128)) {
        if (!d->host_warned)
            log_error("this host's name cannot name a node; local GPUs are not discovered", "host",
                      host);
        d->host_warned = true;
        inv_readings_release(&rs);
        return 0;
    }
    any = found_gpus(d, &rs, runs, a, &found, &n_found);
    inv_readings_release(&rs);
    if (!any)
        return 0;
    node = arena_calloc(a, 1, sizeof(*node));
    *node = (struct backend_node_report){.name = arena_strdup(a, host),
                                         .state = "ready",
                                         .reason = "",
                                         .cpu_milli = -1,
                                         .mem_mib = -1,
                                         .keep_state = true,
                                         .counted_class = "",
                                         .gpus = found,
                                         .n_gpus = n_found};
    *ret = (struct backend_fleet_report){.nodes = node, .n_nodes = 1, .complete = false};
    return 1;
}
